#include "registry_testing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace carton::testing {
namespace {

constexpr char kRegistry[] = "/usr/bin/docker-registry";
constexpr char kPython[] = "/usr/bin/python3";
constexpr auto kStartupTimeout = std::chrono::seconds(15);
constexpr char kService[] = "carton-test-registry";
constexpr char kIssuer[] = "carton-test-issuer";

// A token server for the bearer flow (the distribution token spec): GET
// /token?service=...&scope=... with optional basic auth answers a JWT
// (RS256, signed by `openssl dgst -sign` with the test key, the
// certificate in its x5c header) granting the scopes asked for: every
// action to the user, pull only to anonymous callers. Wrong credentials
// get 401. Each answer is logged as "token" or "refused".
constexpr char kTokenServer[] = R"PY(
import base64, http.server, json, os, subprocess, sys, threading, time, urllib.parse

key, cert, log, user, password, lifetime = sys.argv[1:7]
lifetime = int(lifetime)
# The registry allows its tokens a minute of clock skew past their expiry.
honoured = int(sys.argv[8])
leeway = 60
der = ''.join(l for l in open(cert).read().splitlines() if not l.startswith('-----'))
lock = threading.Lock()

def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b'=').decode()

def note(line):
    with lock:
        with open(log, 'a') as f:
            f.write(line + '\n')

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, code, body):
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        auth = self.headers.get('Authorization', '')
        who = ''
        if auth.startswith('Basic '):
            name, _, pw = base64.b64decode(auth[6:]).decode().partition(':')
            if name != user or pw != password:
                note('refused ' + url.query)
                return self.reply(401, b'{"details":"incorrect username or password"}')
            who = name
        access = []
        for scope in query.get('scope', []):
            for one in scope.split(' '):
                kind, name, actions = one.split(':')
                access.append({'type': kind, 'name': name,
                               'actions': actions.split(',') if who else ['pull']})
        now = int(time.time())
        exp = now + (honoured - leeway if honoured else lifetime)
        claims = {'iss': sys.argv[7], 'sub': who, 'aud': query.get('service', [''])[0],
                  'exp': exp, 'nbf': min(now - 10, exp - 1), 'iat': now,
                  'jti': os.urandom(8).hex(), 'access': access}
        header = {'typ': 'JWT', 'alg': 'RS256', 'x5c': [der]}
        signing = b64(json.dumps(header).encode()) + '.' + b64(json.dumps(claims).encode())
        signature = subprocess.run(['openssl', 'dgst', '-sha256', '-sign', key],
                                   input=signing.encode(), stdout=subprocess.PIPE,
                                   check=True).stdout
        note('token ' + url.query)
        body = json.dumps({'token': signing + '.' + b64(signature), 'expires_in': lifetime})
        self.reply(200, body.encode())

server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

// A proxy that cuts blob downloads off half-way and drops an upload chunk
// (DroppingProxy).
constexpr char kProxy[] = R"PY(
import http.client, http.server, re, sys, threading

upstream, drops, min_size, log, drop_patch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
lock = threading.Lock()
state = {'dropped': 0, 'patches': 0}
blob = re.compile(r'^/v2/.+/blobs/sha256:[0-9a-f]{64}$')

def note(line):
    with lock:
        with open(log, 'a') as f:
            f.write(line + '\n')

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def forward(self, method):
        length = int(self.headers.get('Content-Length', '0') or '0')
        body = self.rfile.read(length) if length else None
        drop_answer = False
        if method == 'PATCH':
            with lock:
                state['patches'] += 1
                drop_answer = state['patches'] == drop_patch
                refuse = state['patches'] == -drop_patch
            if refuse:
                # Not forwarded: the registry's upload stays where it was.
                note('patch-drop ' + self.path)
                self.send_response(503)
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
        conn = http.client.HTTPConnection(upstream)
        headers = {k: v for k, v in self.headers.items() if k.lower() != 'host'}
        conn.request(method, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read() if method != 'HEAD' else b''
        if drop_answer:
            # The registry has the chunk; the client never hears of it.
            note('patch-drop ' + self.path)
            self.close_connection = True
            return
        # 206: the rest of a blob whose download was cut off before.
        is_blob = method == 'GET' and blob.match(self.path) and resp.status in (200, 206)
        if is_blob:
            note('get ' + self.path)
        cut = False
        if is_blob and len(data) > min_size:
            with lock:
                if drops < 0 or state['dropped'] < drops:
                    state['dropped'] += 1
                    cut = True
        if cut:
            note('drop ' + self.path)
        self.send_response(resp.status)
        me = 'http://' + self.headers.get('Host', '')
        for k, v in resp.getheaders():
            if k.lower() in ('connection', 'transfer-encoding'):
                continue
            if k.lower() == 'location':
                v = v.replace('http://' + upstream, me)
            self.send_header(k, v)
        self.end_headers()
        if cut:
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    def do_GET(self):
        self.forward('GET')

    def do_HEAD(self):
        self.forward('HEAD')

    def do_POST(self):
        self.forward('POST')

    def do_PUT(self):
        self.forward('PUT')

    def do_PATCH(self):
        self.forward('PATCH')

server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Sends a GET to 127.0.0.1:port and reads the answer to its end.
bool Get(int port, const std::string& uri) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return false;
  }
  const std::string request =
      "GET " + uri + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, request.data(), request.size());
  char buf[4096];
  while (::read(fd, buf, sizeof(buf)) > 0) {
  }
  ::close(fd);
  return true;
}

int CountLines(const std::string& text, std::string_view prefix) {
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

std::string RunOrThrow(const std::string& command) {
  auto r = Run(command);
  if (r.exit_code != 0) throw std::runtime_error(command + " failed: " + r.err);
  return r.out;
}

}  // namespace

ChildProcess::~ChildProcess() { Stop(); }

void ChildProcess::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

std::string ChildProcess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                                bool first_line) {
  Stop();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // The child must not outlive the test binary, even if it crashes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ::dup2(first_line ? fds[1] : log, 1);
    ::dup2(log, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string line;
  if (first_line) {
    pollfd pfd{fds[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos) {
      if (::poll(&pfd, 1, 10'000) <= 0) break;
      char buf[64];
      const ssize_t n = ::read(fds[0], buf, sizeof(buf));
      if (n <= 0) break;
      line.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fds[0]);
  if (first_line && line.find('\n') == std::string::npos) {
    throw std::runtime_error(argv[0] + " did not start: " + ReadText(log_path));
  }
  return line.substr(0, line.find('\n'));
}

RegistryServer::RegistryServer(RegistryOptions options) : options_(std::move(options)) {
  if (::access(kRegistry, X_OK) != 0) {
    throw std::runtime_error(
        "docker-registry is not installed (bash scripts/install-deps.sh --test)");
  }
  const std::string dir = dir_.path().string();
  std::string auth;
  if (options_.auth == RegistryOptions::Auth::kBasic) {
    const std::string entry =
        RunOrThrow("htpasswd -Bbn '" + options_.user + "' '" + options_.password + "'");
    WriteBytes(dir + "/htpasswd", AsBytes(entry));
    auth = "auth:\n  htpasswd:\n    realm: carton-test\n    path: " + dir + "/htpasswd\n";
  } else if (options_.auth == RegistryOptions::Auth::kToken) {
    RunOrThrow("openssl req -x509 -newkey rsa:2048 -nodes -keyout '" + dir + "/key.pem' -out '" +
               dir + "/cert.pem' -days 2 -subj /CN=carton-test 2>&1");
    WriteBytes(dir + "/token_server.py", AsBytes(kTokenServer));
    WriteBytes(dir + "/tokens.log", {});
    const std::string port =
        token_server_.Start({kPython, dir + "/token_server.py", dir + "/key.pem", dir + "/cert.pem",
                             dir + "/tokens.log", options_.user, options_.password,
                             std::to_string(options_.token_seconds), kIssuer,
                             std::to_string(options_.token_honoured_seconds)},
                            dir + "/token_server.err", /*first_line=*/true);
    auth = "auth:\n  token:\n    realm: http://127.0.0.1:" + port +
           "/token\n    service: " + kService + "\n    issuer: " + kIssuer +
           "\n    rootcertbundle: " + dir + "/cert.pem\n";
  }
  std::filesystem::create_directories(dir + "/storage");
  // A port can be taken between FreePort() and the registry's bind: try a
  // few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreePort();
    const std::string config = dir + "/config.yml";
    WriteBytes(config, AsBytes("version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: "
                               "false\nstorage:\n  filesystem:\n    rootdirectory: " +
                               dir +
                               "/storage\n  delete:\n    enabled: true\nhttp:\n  addr: "
                               "127.0.0.1:" +
                               std::to_string(port_) + "\n" + auth));
    registry_.Start({kRegistry, "serve", config}, dir + "/registry.log");
    const auto deadline = std::chrono::steady_clock::now() + kStartupTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      // A request the log counts never see (Requests skips them).
      if (Get(port_, "/v2/carton-log-sync-0/tags/list")) return;
      if (ReadText(dir + "/registry.log").find("address already in use") != std::string::npos) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  throw std::runtime_error("docker-registry did not start: " + ReadText(dir + "/registry.log"));
}

std::string RegistryServer::host() const { return "127.0.0.1:" + std::to_string(port_); }

std::string RegistryServer::Ref(std::string_view rest) const {
  return "oci://" + host() + "/" + std::string(rest);
}

std::string RegistryServer::WriteDockerConfig(const std::string& password) const {
  const std::string path = dir_.file("docker-config-" + std::to_string(::getpid()) + "-" +
                                     (password.empty() ? "right" : "given") + ".json");
  const std::string user_pass =
      options_.user + ":" + (password.empty() ? options_.password : password);
  const std::string auth = RunOrThrow("printf %s '" + user_pass + "' | base64 -w0");
  WriteBytes(path, AsBytes("{\"auths\": {\"" + host() + "\": {\"auth\": \"" + auth + "\"}}}"));
  return path;
}

std::string RegistryServer::BlobDataPath(const std::string& hex) const {
  return dir_.file("storage/docker/registry/v2/blobs/sha256/" + hex.substr(0, 2) + "/" + hex +
                   "/data");
}

int RegistryServer::Requests(std::string_view method, std::string_view uri_part) const {
  // The registry logs a request once it has answered it: a request of our
  // own, answered and logged, comes after every earlier one.
  static int syncs = 0;
  const std::string sync = "/v2/carton-log-sync-" + std::to_string(++syncs) + "/tags/list";
  Get(port_, sync);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = ReadText(dir_.file("registry.log"));
    if (log.find(sync + " ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::istringstream lines(log);
  int n = 0;
  const std::string opening = "\"" + std::string(method) + " ";
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(opening);
    if (at == std::string::npos || line.find("carton-log-sync-") != std::string::npos) continue;
    const auto end = line.find(" HTTP/", at);
    const std::string uri = line.substr(at + opening.size(), end - at - opening.size());
    if (uri.find(uri_part) != std::string::npos) ++n;
  }
  return n;
}

int RegistryServer::TotalRequests() const {
  return Requests("GET", "") + Requests("HEAD", "") + Requests("PUT", "") + Requests("POST", "") +
         Requests("PATCH", "") + Requests("DELETE", "");
}

int RegistryServer::TokensIssued() const {
  return CountLines(ReadText(dir_.file("tokens.log")), "token ");
}

int RegistryServer::TokensRefused() const {
  return CountLines(ReadText(dir_.file("tokens.log")), "refused ");
}

DroppingProxy::DroppingProxy(const std::string& upstream_host, int drops, std::uint64_t min_size,
                             int drop_patch) {
  WriteBytes(dir_.file("proxy.py"), AsBytes(kProxy));
  WriteBytes(dir_.file("proxy.log"), {});
  port_ = std::stoi(
      process_.Start({kPython, dir_.file("proxy.py"), upstream_host, std::to_string(drops),
                      std::to_string(min_size), dir_.file("proxy.log"), std::to_string(drop_patch)},
                     dir_.file("proxy.err"), /*first_line=*/true));
}

std::string DroppingProxy::host() const { return "127.0.0.1:" + std::to_string(port_); }

int DroppingProxy::Drops() const { return CountLines(ReadText(dir_.file("proxy.log")), "drop "); }

int DroppingProxy::PatchDrops() const {
  return CountLines(ReadText(dir_.file("proxy.log")), "patch-drop ");
}

int DroppingProxy::BlobGets() const { return CountLines(ReadText(dir_.file("proxy.log")), "get "); }

}  // namespace carton::testing
