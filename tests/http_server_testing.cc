#include "http_server_testing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <stdexcept>

namespace carton::testing {
namespace {

constexpr int kStartupTimeoutMs = 10'000;

// Routes:
//   /plain              the payload
//   /enc/<e>            the payload with Content-Encoding e (gzip, deflate,
//                       br, zstd); 406 unless the request's Accept-Encoding
//                       names e
//   /missing            404
//   /flaky              500 on the first request, then the payload
//   /broken             always 503
//   /busy               429 with Retry-After: 1 on the first request, then
//                       the payload
//   /wrong              the payload with its first byte changed
//   /close              half the payload, then the connection closes
//   /truncated/<e>      the first half of the e-encoded payload, sent as a
//                       complete response
//   /slow               one byte of the payload every 100 ms
//   /bomb               64 MiB of zeros as a few KiB of zstd
//   /redirect/file      302 to file://<the payload file>
//   /redirect/plain     302 to /plain
//   /redirect/loop      302 to itself
constexpr char kServerScript[] = R"PY(
import gzip, http.server, subprocess, sys, threading, time, zlib

payload = open(sys.argv[1], 'rb').read()
payload_path = sys.argv[1]
log_path = sys.argv[2]
lock = threading.Lock()
counts = {}
encoded = {}

def encode(name):
    with lock:
        if name in encoded:
            return encoded[name]
    if name == 'gzip':
        data = gzip.compress(payload)
    elif name == 'deflate':
        data = zlib.compress(payload)
    elif name == 'br':
        data = subprocess.run(['brotli', '-c'], input=payload, stdout=subprocess.PIPE, check=True).stdout
    elif name == 'zstd':
        data = subprocess.run(['zstd', '-q', '-c'], input=payload, stdout=subprocess.PIPE, check=True).stdout
    elif name == 'bomb':
        data = subprocess.run(['zstd', '-q', '-c'], input=bytes(64 << 20), stdout=subprocess.PIPE, check=True).stdout
    else:
        raise ValueError(name)
    with lock:
        encoded[name] = data
    return data

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, code, body=b'', headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path
        with lock:
            n = counts[path] = counts.get(path, 0) + 1
            with open(log_path, 'a') as f:
                f.write(path + '\n')
        if path == '/plain':
            return self.reply(200, payload)
        if path.startswith('/enc/'):
            name = path[len('/enc/'):]
            if name not in self.headers.get('Accept-Encoding', ''):
                return self.reply(406, b'encoding not accepted')
            return self.reply(200, encode(name), [('Content-Encoding', name)])
        if path == '/missing':
            return self.reply(404, b'not here')
        if path == '/flaky':
            return self.reply(500, b'oops') if n == 1 else self.reply(200, payload)
        if path == '/broken':
            return self.reply(503, b'down')
        if path == '/busy':
            if n == 1:
                return self.reply(429, b'slow down', [('Retry-After', '1')])
            return self.reply(200, payload)
        if path == '/wrong':
            return self.reply(200, bytes([payload[0] ^ 1]) + payload[1:])
        if path == '/close':
            self.send_response(200)
            self.send_header('Content-Length', str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[:len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if path.startswith('/truncated/'):
            name = path[len('/truncated/'):]
            data = encode(name)
            return self.reply(200, data[:len(data) // 2], [('Content-Encoding', name)])
        if path == '/slow':
            self.send_response(200)
            self.send_header('Content-Length', str(len(payload)))
            self.end_headers()
            try:
                for i in range(100):
                    self.wfile.write(payload[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            self.close_connection = True
            return
        if path == '/bomb':
            return self.reply(200, encode('bomb'), [('Content-Encoding', 'zstd')])
        if path == '/redirect/file':
            return self.reply(302, b'', [('Location', 'file://' + payload_path)])
        if path == '/redirect/plain':
            return self.reply(302, b'', [('Location', '/plain')])
        if path == '/redirect/loop':
            return self.reply(302, b'', [('Location', '/redirect/loop')])
        return self.reply(404, b'no such route')

server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

std::string BuildPayload() {
  std::string s;
  for (int i = 0; s.size() < (256u << 10); ++i) {
    s += "line " + std::to_string(i) + ": carton fetch test payload, compressible text\n";
  }
  return s;
}

}  // namespace

const std::string& Payload() {
  static const std::string payload = BuildPayload();
  return payload;
}

const manifest::Digest& PayloadDigest() {
  static const manifest::Digest digest = manifest::Sha256Of(AsBytes(Payload()));
  return digest;
}

TestServer::TestServer() {
  const std::string script = dir_.file("server.py");
  const std::string log = dir_.file("requests.log");
  carton::testing::WriteBytes(script, AsBytes(kServerScript));
  carton::testing::WriteBytes(payload_path(), AsBytes(Payload()));
  carton::testing::WriteBytes(log, {});

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // The server must not outlive the test binary, even if it crashes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::dup2(fds[1], 1);
    const std::string payload = payload_path();
    // The system Python first: it starts faster than a version-manager shim.
    ::execl("/usr/bin/python3", "python3", script.c_str(), payload.c_str(), log.c_str(),
            static_cast<char*>(nullptr));
    ::execlp("python3", "python3", script.c_str(), payload.c_str(), log.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string line;
  pollfd pfd{fds[0], POLLIN, 0};
  while (line.find('\n') == std::string::npos) {
    if (::poll(&pfd, 1, kStartupTimeoutMs) <= 0) break;
    char buf[64];
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  port_ = std::atoi(line.c_str());
  if (port_ <= 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    throw std::runtime_error("test http server did not start");
  }
}

TestServer::~TestServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string TestServer::Url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

int TestServer::Requests(std::string_view path) const {
  std::istringstream log(carton::testing::ReadText(dir_.file("requests.log")));
  int n = 0;
  for (std::string line; std::getline(log, line);) n += line == path ? 1 : 0;
  return n;
}

int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // never listened on; now nothing is bound there
  return ntohs(addr.sin_port);
}

}  // namespace carton::testing
