#include "nginx_testing.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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

namespace carton::testing {
namespace {

constexpr char kNginx[] = "/usr/sbin/nginx";
constexpr auto kStartupTimeout = std::chrono::seconds(10);

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool Accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

std::string Config(const std::string& dir, int port) {
  std::string enc;
  for (auto [name, suffix] : {std::pair{"zstd", ".zst"}, std::pair{"br", ".br"},
                              std::pair{"gzip", ".gz"}, std::pair{"deflate", ".zz"}}) {
    enc += std::string("    location ~ ^/enc/") + name + "/(?<blob>[^/]+)$ {\n" +
           "      add_header Content-Encoding " + name + ";\n" + "      try_files /blobs/$blob" +
           suffix + " =404;\n    }\n";
  }
  return "daemon off;\nmaster_process off;\nworker_processes 1;\n"
         "pid " +
         dir + "/nginx.pid;\nerror_log " + dir +
         "/error.log warn;\n"
         "events { worker_connections 64; }\n"
         "http {\n"
         "  default_type application/octet-stream;\n"
         "  log_format carton '$request_uri $status $body_bytes_sent';\n"
         "  access_log " +
         dir +
         "/access.log carton;\n"
         "  client_body_temp_path " +
         dir +
         "/tmp/body;\n"
         "  proxy_temp_path " +
         dir +
         "/tmp/proxy;\n"
         "  fastcgi_temp_path " +
         dir +
         "/tmp/fastcgi;\n"
         "  uwsgi_temp_path " +
         dir +
         "/tmp/uwsgi;\n"
         "  scgi_temp_path " +
         dir +
         "/tmp/scgi;\n"
         "  server {\n"
         "    listen 127.0.0.1:" +
         std::to_string(port) +
         ";\n"
         "    root " +
         dir + "/www;\n" + enc +
         "    location /norange/ {\n"
         "      alias " +
         dir +
         "/www/;\n"
         "      max_ranges 0;\n"
         "    }\n"
         "  }\n"
         "}\n";
}

}  // namespace

NginxServer::NginxServer() {
  if (::access(kNginx, X_OK) != 0) {
    throw std::runtime_error("nginx is not installed (bash scripts/install-deps.sh --test)");
  }
  const std::string dir = dir_.path().string();
  std::filesystem::create_directories(dir + "/www/blobs");
  std::filesystem::create_directories(dir + "/tmp");
  // A port can be taken between FreePort() and nginx's bind: try a few.
  for (int attempt = 0; attempt < 5 && pid_ < 0; ++attempt) {
    port_ = FreePort();
    const std::string conf = dir + "/nginx.conf";
    WriteBytes(conf, AsBytes(Config(dir, port_)));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      // nginx must not outlive the test binary, even if it crashes.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      const std::string err = dir + "/error.log";
      ::execl(kNginx, "nginx", "-p", dir.c_str(), "-c", conf.c_str(), "-e", err.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + kStartupTimeout;
    bool up = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) break;  // exited: port taken?
      if (Accepts(port_)) {
        up = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (up) {
      pid_ = pid;
    } else {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  if (pid_ < 0) {
    throw std::runtime_error("nginx did not start: " + ReadText(dir + "/error.log"));
  }
}

NginxServer::~NginxServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string NginxServer::Url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

std::string NginxServer::SyncedLog() const {
  constexpr std::string_view kSync = "/.carton-log-sync-";
  const std::string uri = std::string(kSync) + std::to_string(++syncs_);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port_));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to nginx");
  }
  const std::string request =
      "GET " + uri + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, request.data(), request.size());
  char buf[4096];
  while (::read(fd, buf, sizeof(buf)) > 0) {
  }
  ::close(fd);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::string log = ReadText(dir_.file("access.log"));
    if (log.find(uri + " ") != std::string::npos) {
      std::string kept;
      std::istringstream lines(log);
      for (std::string line; std::getline(lines, line);) {
        if (line.compare(0, kSync.size(), kSync) != 0) kept += line + "\n";
      }
      return kept;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("nginx did not log " + uri);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::uint64_t NginxServer::BytesServed(std::string_view prefix) const {
  std::istringstream log(SyncedLog());
  std::uint64_t total = 0;
  std::string uri;
  int status = 0;
  std::uint64_t bytes = 0;
  while (log >> uri >> status >> bytes) {
    if (uri.compare(0, prefix.size(), prefix) == 0) total += bytes;
  }
  return total;
}

int NginxServer::Requests(std::string_view prefix) const {
  std::istringstream log(SyncedLog());
  int n = 0;
  std::string uri;
  int status = 0;
  std::uint64_t bytes = 0;
  while (log >> uri >> status >> bytes) {
    if (uri.compare(0, prefix.size(), prefix) == 0) ++n;
  }
  return n;
}

}  // namespace carton::testing
