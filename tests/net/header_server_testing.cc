#include "net/header_server_testing.h"

#include <sstream>

#include "http_server_testing.h"

namespace carton::testing {
namespace {

// Each request is logged as a line "> PATH", then one line per header.
constexpr char kScript[] = R"PY(
import http.server, sys, threading, urllib.parse

address, payload_path, log = sys.argv[1], sys.argv[2], sys.argv[3]
payload = open(payload_path, 'rb').read()
lock = threading.Lock()

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
        with lock:
            with open(log, 'a') as f:
                f.write('> ' + self.path + '\n')
                for k, v in self.headers.items():
                    f.write(k + ': ' + v + '\n')
        url = urllib.parse.urlparse(self.path)
        if url.path == '/file':
            return self.reply(200, payload)
        if url.path == '/redirect':
            target = urllib.parse.parse_qs(url.query)['to'][0]
            return self.reply(302, b'', [('Location', target)])
        return self.reply(404, b'no such route')

server = http.server.ThreadingHTTPServer((address, 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

}  // namespace

HeaderServer::HeaderServer(const std::string& address) : address_(address) {
  carton::testing::WriteBytes(dir_.file("server.py"), AsBytes(kScript));
  carton::testing::WriteBytes(dir_.file("payload"), AsBytes(Payload()));
  carton::testing::WriteBytes(dir_.file("requests.log"), {});
  port_ = std::stoi(process_.Start({"/usr/bin/python3", dir_.file("server.py"), address,
                                    dir_.file("payload"), dir_.file("requests.log")},
                                   dir_.file("server.err"), /*first_line=*/true));
}

std::string HeaderServer::host() const { return address_ + ":" + std::to_string(port_); }

std::string HeaderServer::Url(std::string_view path) const {
  return "http://" + host() + std::string(path);
}

std::vector<HeaderServer::Request> HeaderServer::Requests() const {
  std::vector<Request> out;
  std::istringstream log(carton::testing::ReadText(dir_.file("requests.log")));
  for (std::string line; std::getline(log, line);) {
    if (line.rfind("> ", 0) == 0) {
      out.push_back({line.substr(2), {}});
    } else if (!out.empty()) {
      out.back().headers.push_back(line);
    }
  }
  return out;
}

bool HeaderServer::SawHeader(std::string_view prefix) const {
  for (const Request& r : Requests()) {
    for (const std::string& h : r.headers) {
      if (h.size() >= prefix.size()) {
        bool same = true;
        for (std::size_t i = 0; i < prefix.size(); ++i) {
          same = same && std::tolower(static_cast<unsigned char>(h[i])) ==
                             std::tolower(static_cast<unsigned char>(prefix[i]));
        }
        if (same) return true;
      }
    }
  }
  return false;
}

}  // namespace carton::testing
