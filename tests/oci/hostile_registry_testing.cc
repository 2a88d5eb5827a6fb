#include "oci/hostile_registry_testing.h"

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

namespace carton::testing {
namespace {

constexpr char kScript[] = R"PY(
import http.server, json, os, socket, sys, threading, time

address, logdir, realm, require_auth = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == '1'
lock = threading.Lock()
CAP = 512 << 20
DRIP_RATE = 2048
DRIP_SECONDS = 12
DRIP_SIZE = 1 << 20
SLOW_SECONDS = 1.5
MANIFEST = 'application/vnd.oci.image.manifest.v1+json'

def note(name, line):
    with lock:
        with open(os.path.join(logdir, name), 'a') as f:
            f.write(line + '\n')

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def reply(self, code, body=b'', headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    # A body with no length that ends only at CAP or when the client leaves.
    def endless(self, name, code, start=b'', headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Type', MANIFEST if name == 'endless' else 'application/json')
        self.send_header('Connection', 'close')
        self.end_headers()
        self.close_connection = True
        chunk = b'x' * 65536
        sent = 0
        try:
            self.wfile.write(start)
            sent += len(start)
            while sent < CAP:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        note(name, str(sent))

    def drip(self):
        self.send_response(200)
        self.send_header('Content-Type', MANIFEST)
        self.send_header('Content-Length', str(DRIP_SIZE))
        self.end_headers()
        self.close_connection = True
        sent = 0
        start = time.monotonic()
        try:
            while time.monotonic() - start < DRIP_SECONDS and sent < DRIP_SIZE:
                self.wfile.write(b' ')
                sent += 1
                ahead = sent / DRIP_RATE - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        except OSError:
            pass
        note('drip', str(sent))

    def tokened(self):
        if self.headers.get('Authorization', '') == 'Bearer good':
            return self.reply(200, b'{"schemaVersion": 2}', [('Content-Type', MANIFEST)])
        challenge = ('Bearer realm="%s",service="hostile",scope="repository:tokened:pull"'
                     % realm)
        body = b'{"errors": [{"code": "UNAUTHORIZED", "message": "token required"}]}'
        self.reply(401, body, [('WWW-Authenticate', challenge)])

    def token(self):
        auth = self.headers.get('Authorization', '')
        note('token-auth', auth)
        if require_auth and not auth:
            body = b'{"errors": [{"code": "UNAUTHORIZED", "message": "credentials required"}]}'
            return self.reply(401, body)
        self.reply(200, json.dumps({'token': 'good', 'expires_in': 300}).encode())

    def do_GET(self):
        path = self.path.split('?')[0]
        if path.startswith('/v2/endless/manifests/'):
            return self.endless('endless', 200)
        if path.startswith('/v2/drip/manifests/'):
            return self.drip()
        if path.startswith('/v2/redirect/manifests/'):
            return self.endless('redirect', 302, b'', [('Location', '/v2/tokened/manifests/v1')])
        if path.startswith('/v2/tokened/manifests/'):
            return self.tokened()
        if path == '/token':
            return self.token()
        if path == '/endless-token':
            return self.endless('endless-token', 200)
        self.reply(404, b'{"errors": [{"code": "NAME_UNKNOWN", "message": "no such route"}]}')

    def do_HEAD(self):
        self.reply(404)

    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', '0')))
        if self.path.startswith('/v2/errbody/blobs/uploads/'):
            return self.endless('errbody', 400, b'{"errors": [{"code": "DENIED", "message": "')
        self.reply(404)

    def do_PUT(self):
        self.rfile.read(int(self.headers.get('Content-Length', '0')))
        if self.path.startswith('/v2/slow/manifests/'):
            time.sleep(SLOW_SECONDS)
            return self.reply(201)
        self.reply(404)

server = http.server.ThreadingHTTPServer((address, 0), Handler)
server.daemon_threads = True
realm = realm.replace('{self}', 'http://%s:%d' % (address, server.server_address[1]))
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(path)) return out;
  std::istringstream in(ReadText(path));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

HostileRegistry::HostileRegistry(const std::string& address, const std::string& realm,
                                 bool require_auth)
    : address_(address) {
  WriteBytes(dir_.file("server.py"), AsBytes(kScript));
  std::filesystem::create_directories(dir_.file("log"));
  port_ = std::stoi(process_.Start({"/usr/bin/python3", dir_.file("server.py"), address,
                                    dir_.file("log"), realm, require_auth ? "1" : "0"},
                                   dir_.file("server.err"), /*first_line=*/true));
}

std::string HostileRegistry::host() const { return address_ + ":" + std::to_string(port_); }

std::string HostileRegistry::Url(std::string_view path) const {
  return "http://" + host() + std::string(path);
}

std::int64_t HostileRegistry::BytesSent(const std::string& name) const {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<std::string> lines;
  while ((lines = Lines(dir_.file("log/" + name))).empty() &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (lines.empty()) return -1;
  std::int64_t sum = 0;
  for (const std::string& line : lines) sum += std::stoll(line);
  return sum;
}

std::vector<std::string> HostileRegistry::TokenAuthorizations() const {
  return Lines(dir_.file("log/token-auth"));
}

}  // namespace carton::testing
