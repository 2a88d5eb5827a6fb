// Progress lines, -q, and SIGINT/SIGTERM cleanup through the built binary:
// progress under a pseudo-terminal (util-linux `script`), none when stderr
// is a pipe or with -q; interrupted pack, unpack and downloads leave no
// temporary behind and exit 130 (SIGINT) or 143 (SIGTERM).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "testing.h"
#include "tools/process_testing.h"

using carton::testing::BackgroundCommand;
using carton::testing::EntriesContaining;
using carton::testing::ReadText;
using carton::testing::Run;
using carton::testing::SlowServer;
using carton::testing::TempDir;
using carton::testing::WaitUntil;

namespace {

namespace fs = std::filesystem;

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Bin() { return carton::testing::CartonBin(); }

// `command` under a pseudo-terminal: what it wrote to the terminal (stdout
// and stderr together) is the result's out; its exit code is kept (-e).
carton::testing::CommandResult UnderTerminal(const std::string& command) {
  std::string quoted;
  for (char c : command) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') quoted += '\\';
    quoted += c;
  }
  return Run("script -q -e -c \"" + quoted + "\" /dev/null < /dev/null");
}

void WriteRandom(const std::string& path, std::size_t size, unsigned seed) {
  fs::create_directories(fs::path(path).parent_path());
  std::mt19937_64 rng(seed);
  std::string data(size, '\0');
  for (std::size_t i = 0; i + 8 <= size; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(&data[i], &v, 8);
  }
  std::ofstream(path, std::ios::binary) << data;
}

// A model folder with one file of `size` random bytes.
std::string RandomModel(const TempDir& tmp, std::size_t size) {
  const std::string dir = tmp.file("model");
  WriteRandom(dir + "/model/weights.bin", size, 7);
  return dir;
}

const char kFlags[] = " --runner noop --framework-version '>=1'";

}  // namespace

TEST_CASE("progress: pack, verify and unpack draw a line under a terminal", "[cli][progress]") {
  TempDir tmp;
  const std::string dir = RandomModel(tmp, 8 << 20);
  const std::string out = tmp.file("m.carton");
  auto pack = UnderTerminal(Bin() + " pack " + Q(dir) + " -o " + Q(out) + kFlags);
  INFO(pack.out);
  REQUIRE(pack.exit_code == 0);
  CHECK(pack.out.find("\rcarton: packing") != std::string::npos);
  CHECK(pack.out.find("% ") != std::string::npos);
  CHECK(pack.out.find("of 8.0 MiB") != std::string::npos);
  // The line is cleared at the end (clear to end of line after a \r).
  CHECK(pack.out.find("\r\x1b[K") != std::string::npos);

  auto verify = UnderTerminal(Bin() + " verify " + Q(out));
  INFO(verify.out);
  REQUIRE(verify.exit_code == 0);
  CHECK(verify.out.find("\rcarton: verifying") != std::string::npos);
  CHECK(verify.out.find("%") != std::string::npos);
  CHECK(verify.out.find(": ok (") != std::string::npos);

  auto unpack = UnderTerminal(Bin() + " unpack " + Q(out) + " " + Q(tmp.file("u")));
  INFO(unpack.out);
  REQUIRE(unpack.exit_code == 0);
  CHECK(unpack.out.find("\rcarton: unpacking") != std::string::npos);
  CHECK(unpack.out.find("%") != std::string::npos);

  auto shrink =
      UnderTerminal(Bin() + " shrink " + Q(out) + " -o " + Q(tmp.file("s.carton")) +
                    " --url-prefix https://models.example.com/b --blobs " + Q(tmp.file("blobs")));
  INFO(shrink.out);
  REQUIRE(shrink.exit_code == 0);
  CHECK(shrink.out.find("\rcarton: shrinking") != std::string::npos);
  CHECK(shrink.out.find("%") != std::string::npos);
}

TEST_CASE("progress: nothing is drawn when stderr is not a terminal", "[cli][progress]") {
  TempDir tmp;
  const std::string dir = RandomModel(tmp, 8 << 20);
  const std::string out = tmp.file("m.carton");
  auto pack = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out) + kFlags);
  REQUIRE(pack.exit_code == 0);
  CHECK(pack.err.find('\r') == std::string::npos);
  CHECK(pack.err.find('%') == std::string::npos);
  auto verify = Run(Bin() + " verify " + Q(out));
  REQUIRE(verify.exit_code == 0);
  CHECK(verify.err.find('\r') == std::string::npos);
  CHECK(verify.err.empty());
  const std::string cache = "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " ";
  for (const std::string& cmd : std::vector<std::string>{
           " unpack " + Q(out) + " " + Q(tmp.file("u")), " load " + Q(out),
           " shrink " + Q(out) + " -o " + Q(tmp.file("s.carton")) + " --url-prefix file://" +
               tmp.file("blobs") + " --blobs " + Q(tmp.file("blobs")),
           " fetch --allow-file-links " + Q(tmp.file("s.carton")) + " -o " +
               Q(tmp.file("f.carton")),
           " cache verify"}) {
    auto r = Run(cache + Bin() + cmd);
    INFO(cmd << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find('\r') == std::string::npos);
    CHECK(r.err.find('%') == std::string::npos);
  }
}

TEST_CASE("progress: -q draws nothing under a terminal", "[cli][progress]") {
  TempDir tmp;
  const std::string dir = RandomModel(tmp, 8 << 20);
  const std::string out = tmp.file("m.carton");
  auto pack = UnderTerminal(Bin() + " pack -q " + Q(dir) + " -o " + Q(out) + kFlags);
  INFO(pack.out);
  REQUIRE(pack.exit_code == 0);
  CHECK(pack.out.find('\r' + std::string("carton:")) == std::string::npos);
  CHECK(pack.out.find('%') == std::string::npos);
  const std::string cache = "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " ";
  for (const std::string& cmd : std::vector<std::string>{
           " verify -q " + Q(out), " unpack --quiet " + Q(out) + " " + Q(tmp.file("u")),
           " shrink -q " + Q(out) + " -o " + Q(tmp.file("s.carton")) + " --url-prefix file://" +
               tmp.file("blobs") + " --blobs " + Q(tmp.file("blobs")),
           " fetch -q --allow-file-links " + Q(tmp.file("s.carton")) + " -o " +
               Q(tmp.file("f.carton"))}) {
    auto r = UnderTerminal(cache + Bin() + cmd);
    INFO(cmd << "\n" << r.out);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("\rcarton:") == std::string::npos);
    CHECK(r.out.find('%') == std::string::npos);
  }
}

TEST_CASE("interrupt: SIGINT during pack removes its temporary file and exits 130",
          "[cli][interrupt]") {
  TempDir tmp;
  // zstd at level 19 takes seconds for this much random data: time to
  // interrupt it.
  const std::string dir = RandomModel(tmp, 48 << 20);
  const std::string out_dir = tmp.file("out");
  fs::create_directories(out_dir);
  BackgroundCommand pack(Bin() + " pack " + Q(dir) + " -o " + Q(out_dir + "/m.carton") + kFlags +
                             " --compression zstd --level 19",
                         tmp.file("out.txt"), tmp.file("err.txt"));
  REQUIRE(WaitUntil([&] { return !EntriesContaining(out_dir, ".tmp-").empty(); }));
  pack.Signal(SIGINT);
  INFO(ReadText(tmp.file("err.txt")));
  CHECK(pack.Wait() == 130);
  CHECK(fs::is_empty(out_dir));
  CHECK(ReadText(tmp.file("err.txt")).find("carton: interrupted") != std::string::npos);
}

TEST_CASE("interrupt: SIGTERM during unpack removes the unfinished tree and exits 143",
          "[cli][interrupt]") {
  TempDir tmp;
  const std::string dir = tmp.file("model");
  fs::create_directories(dir + "/model");
  // A large file of zeros (sparse on disk), stored: unpack writes it all.
  fs::resize_file((std::ofstream(dir + "/model/zeros.bin").close(), dir + "/model/zeros.bin"),
                  std::uintmax_t{768} << 20);
  const std::string carton = tmp.file("z.carton");
  REQUIRE(Run(Bin() + " pack -q --compression stored " + Q(dir) + " -o " + Q(carton) + kFlags)
              .exit_code == 0);
  const std::string out_dir = tmp.file("out");
  fs::create_directories(out_dir);
  BackgroundCommand unpack(Bin() + " unpack " + Q(carton) + " " + Q(out_dir + "/z"),
                           tmp.file("out.txt"), tmp.file("err.txt"));
  REQUIRE(WaitUntil([&] { return !EntriesContaining(out_dir, ".unpack-").empty(); }));
  unpack.Signal(SIGTERM);
  INFO(ReadText(tmp.file("err.txt")));
  CHECK(unpack.Wait() == 143);
  CHECK(fs::is_empty(out_dir));
}

namespace {

// A carton whose 16 MiB weight file is linked (LINKS) to a SlowServer, and
// that file's sha256 (its name on the server).
struct LinkedCarton {
  std::string carton;
  std::string hex;
};

LinkedCarton ShrinkToServer(const TempDir& tmp, const SlowServer& server) {
  const std::string dir = RandomModel(tmp, 16 << 20);
  const std::string whole = tmp.file("whole.carton");
  REQUIRE(Run(Bin() + " pack -q " + Q(dir) + " -o " + Q(whole) + kFlags).exit_code == 0);
  LinkedCarton out;
  out.carton = tmp.file("small.carton");
  auto r = Run(Bin() + " shrink -q " + Q(whole) + " -o " + Q(out.carton) + " --url-prefix " +
               Q(server.Url("b")) + " --blobs " + Q(tmp.file("srv/b")));
  REQUIRE(r.exit_code == 0);
  const auto blobs = EntriesContaining(tmp.file("srv/b"), "");
  REQUIRE(blobs.size() == 1);
  out.hex = blobs[0];
  return out;
}

std::string WithCache(const TempDir& tmp) {
  return "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " " + Bin();
}

// Starts `carton fetch` of `c` at 2 MiB/s and interrupts it with SIGINT
// once at least 4 MiB of the linked file are in its partial file. Returns
// the partial file's size after the process exited.
std::uintmax_t InterruptedFetch(const TempDir& tmp, const SlowServer& server,
                                const LinkedCarton& c) {
  server.SetRate(2 << 20);
  const std::string out_dir = tmp.file("out");
  fs::create_directories(out_dir);
  const std::string partial = tmp.file("cache/blobs/sha256/" + c.hex + ".partial");
  BackgroundCommand fetch(
      WithCache(tmp) + " fetch " + Q(c.carton) + " -o " + Q(out_dir + "/fetched.carton"),
      tmp.file("out.txt"), tmp.file("err.txt"));
  REQUIRE(WaitUntil([&] {
    std::error_code ec;
    return fs::file_size(partial, ec) >= (std::uintmax_t{4} << 20) && !ec;
  }));
  fetch.Signal(SIGINT);
  INFO(ReadText(tmp.file("err.txt")));
  REQUIRE(fetch.Wait() == 130);
  // No temporary anywhere: the output directory is empty, and the blob
  // cache holds only the partial download (and its validator).
  CHECK(fs::is_empty(out_dir));
  CHECK(EntriesContaining(tmp.file("cache/blobs/sha256"), ".tmp-").empty());
  CHECK(EntriesContaining(tmp.file("cache/blobs/sha256"), "").size() <= 2);
  REQUIRE(fs::exists(partial));
  return fs::file_size(partial);
}

}  // namespace

TEST_CASE("interrupt: a download resumes with a Range request from its partial file",
          "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/true);
  const LinkedCarton c = ShrinkToServer(tmp, server);
  const std::uintmax_t kept = InterruptedFetch(tmp, server, c);

  // cache list shows it, in text and JSON, with its size.
  auto list = Run(WithCache(tmp) + " cache list");
  REQUIRE(list.exit_code == 0);
  CHECK(list.out.find("partial  blob  " + c.hex) != std::string::npos);
  auto json = Run(WithCache(tmp) + " cache list --json");
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  REQUIRE(doc["partial_downloads"].size() == 1);
  CHECK(doc["partial_downloads"][0]["sha256"] == c.hex);
  CHECK(doc["partial_downloads"][0]["size"] == kept);
  CHECK(doc["partial_downloads"][0]["in_use"] == false);

  server.SetRate(0);
  const std::string out = tmp.file("out/fetched.carton");
  auto again = Run(WithCache(tmp) + " fetch " + Q(c.carton) + " -o " + Q(out));
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  const auto ranges = server.Ranges("b/" + c.hex);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0] == "-");
  CHECK(ranges[1] == "bytes=" + std::to_string(kept) + "-");
  CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);
  CHECK(fs::exists(tmp.file("cache/blobs/sha256/" + c.hex)));
  CHECK_FALSE(fs::exists(tmp.file("cache/blobs/sha256/" + c.hex + ".partial")));
  CHECK(Run(WithCache(tmp) + " cache list").out.find("partial") == std::string::npos);
}

TEST_CASE("interrupt: a server that ignores Range restarts the download from zero",
          "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/false);
  const LinkedCarton c = ShrinkToServer(tmp, server);
  const std::uintmax_t kept = InterruptedFetch(tmp, server, c);
  server.SetRate(0);
  const std::string out = tmp.file("out/fetched.carton");
  auto again = Run(WithCache(tmp) + " fetch " + Q(c.carton) + " -o " + Q(out));
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  const auto ranges = server.Ranges("b/" + c.hex);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[1] == "bytes=" + std::to_string(kept) + "-");  // asked, answered 200
  CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);
}

TEST_CASE("interrupt: cache gc removes partial downloads no fetch is writing",
          "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/true);
  const LinkedCarton c = ShrinkToServer(tmp, server);
  InterruptedFetch(tmp, server, c);
  auto gc = Run(WithCache(tmp) + " cache gc --max-size 100G");
  INFO(gc.err);
  REQUIRE(gc.exit_code == 0);
  CHECK(gc.out.find("removed partial download " + c.hex) != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("cache/blobs/sha256/" + c.hex + ".partial")));
  CHECK(EntriesContaining(tmp.file("cache/blobs/sha256"), "partial").empty());
}

namespace {

// Python's own http.server (it answers every Range request with 200 and
// the whole file), serving `dir` on 127.0.0.1.
class StockHttpServer {
 public:
  StockHttpServer(const TempDir& tmp, const std::string& dir)
      : log_(tmp.file("http.server.log")),
        process_("/usr/bin/python3 -u -m http.server 0 --bind 127.0.0.1 --directory " + Q(dir),
                 tmp.file("http.server.out"), log_) {
    const std::string out = tmp.file("http.server.out");
    REQUIRE(WaitUntil([&] { return ReadText(out).find(" port ") != std::string::npos; }));
    const std::string text = ReadText(out);
    port_ = std::atoi(text.c_str() + text.find(" port ") + 6);
    REQUIRE(port_ > 0);
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }
  // GET requests logged for `path`.
  int Gets(const std::string& path) const {
    const std::string text = ReadText(log_);
    const std::string needle = "\"GET /" + path + " ";
    int n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

 private:
  std::string log_;
  BackgroundCommand process_;
  int port_ = 0;
};

}  // namespace

TEST_CASE("range fallback: info and hash of a server that ignores Range download it whole",
          "[cli][range]") {
  TempDir tmp;
  const std::string dir = RandomModel(tmp, 1 << 20);
  fs::create_directories(tmp.file("srv"));
  REQUIRE(
      Run(Bin() + " pack -q " + Q(dir) + " -o " + Q(tmp.file("srv/m.carton")) + kFlags).exit_code ==
      0);
  const std::string local_hash = Run(Bin() + " hash " + Q(tmp.file("srv/m.carton"))).out;
  StockHttpServer server(tmp, tmp.file("srv"));

  auto info = Run(Bin() + " info " + Q(server.Url("m.carton")));
  INFO(info.err);
  REQUIRE(info.exit_code == 0);
  CHECK(info.out.find("manifest hash: " + local_hash.substr(0, 64)) != std::string::npos);
  CHECK(info.err.find("ignores range requests; downloading it whole") != std::string::npos);

  auto hash = Run(Bin() + " hash " + Q(server.Url("m.carton")));
  INFO(hash.err);
  REQUIRE(hash.exit_code == 0);
  CHECK(hash.out == local_hash);
}

TEST_CASE("range fallback: load of a server that ignores Range downloads the carton once",
          "[cli][range]") {
  TempDir tmp;
  const std::string dir = RandomModel(tmp, 1 << 20);
  fs::create_directories(tmp.file("srv"));
  REQUIRE(
      Run(Bin() + " pack -q " + Q(dir) + " -o " + Q(tmp.file("srv/m.carton")) + kFlags).exit_code ==
      0);
  StockHttpServer server(tmp, tmp.file("srv"));
  auto load = Run(WithCache(tmp) + " load " + Q(server.Url("m.carton")));
  INFO(load.err);
  REQUIRE(load.exit_code == 0);
  CHECK(load.err.find("ignores range requests") != std::string::npos);
  const std::string model_dir = load.out.substr(0, load.out.find('\n'));
  CHECK(fs::exists(model_dir + "/weights.bin"));
  // The refused range request, then one whole download.
  CHECK(server.Gets("m.carton") == 2);
  // Nothing left in the temporary directory or the cache's downloads.
  CHECK(EntriesContaining(tmp.file("cache/downloads"), ".carton").empty());
}

TEST_CASE("progress: fetch, load and cache verify draw under a terminal, not with -q",
          "[cli][progress]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/true);
  const LinkedCarton c = ShrinkToServer(tmp, server);
  const std::string out = tmp.file("fetched.carton");
  auto fetch = UnderTerminal(WithCache(tmp) + " fetch " + Q(c.carton) + " -o " + Q(out));
  INFO(fetch.out);
  REQUIRE(fetch.exit_code == 0);
  CHECK(fetch.out.find("\rcarton: fetching") != std::string::npos);
  CHECK(fetch.out.find("\rcarton: writing") != std::string::npos);
  CHECK(fetch.out.find("%") != std::string::npos);

  auto load = UnderTerminal(WithCache(tmp) + " load " + Q(out));
  INFO(load.out);
  REQUIRE(load.exit_code == 0);
  CHECK(load.out.find("\rcarton: loading") != std::string::npos);

  auto verify = UnderTerminal(WithCache(tmp) + " cache verify");
  INFO(verify.out);
  REQUIRE(verify.exit_code == 0);
  CHECK(verify.out.find("\rcarton: verifying") != std::string::npos);

  auto quiet = UnderTerminal(WithCache(tmp) + " cache verify -q");
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.out.find("\rcarton:") == std::string::npos);
  fs::remove_all(tmp.file("cache"));
  auto quiet_load = UnderTerminal(WithCache(tmp) + " load -q " + Q(c.carton));
  INFO(quiet_load.out);
  REQUIRE(quiet_load.exit_code == 0);
  CHECK(quiet_load.out.find("\rcarton:") == std::string::npos);
}

namespace {

// A 16 MiB stored carton served as "m.carton" by `server`, and the hex of
// its manifest hash.
std::string ServeCarton(const TempDir& tmp) {
  const std::string dir = RandomModel(tmp, 16 << 20);
  REQUIRE(Run(Bin() + " pack -q --compression stored " + Q(dir) + " -o " +
              Q(tmp.file("srv/m.carton")) + kFlags)
              .exit_code == 0);
  return Run(Bin() + " hash " + Q(tmp.file("srv/m.carton"))).out.substr(0, 64);
}

// Runs `command` (which downloads m.carton whole into the cache) at 2 MiB/s
// and interrupts it with SIGINT once at least 4 MiB are in the cache's
// partial download. Returns that file's size after the process exited.
std::uintmax_t InterruptedCartonDownload(const TempDir& tmp, const SlowServer& server,
                                         const std::string& hex, const std::string& command) {
  const std::string partial = tmp.file("cache/downloads/" + hex + ".carton.partial");
  server.SetRate(2 << 20);
  BackgroundCommand run(command, tmp.file("out.txt"), tmp.file("err.txt"));
  REQUIRE(WaitUntil([&] {
    std::error_code ec;
    return fs::file_size(partial, ec) >= (std::uintmax_t{4} << 20) && !ec;
  }));
  run.Signal(SIGINT);
  INFO(ReadText(tmp.file("err.txt")));
  REQUIRE(run.Wait() == 130);
  // The partial download is listed, and is all that is left in downloads/.
  auto list = Run(WithCache(tmp) + " cache list");
  CHECK(list.out.find("partial  carton  " + hex) != std::string::npos);
  CHECK(EntriesContaining(tmp.file("cache/downloads"), "").size() <= 2);
  REQUIRE(fs::exists(partial));
  return fs::file_size(partial);
}

bool AskedForRange(const SlowServer& server, std::uintmax_t from) {
  const auto ranges = server.Ranges("m.carton");
  return std::find(ranges.begin(), ranges.end(), "bytes=" + std::to_string(from) + "-") !=
         ranges.end();
}

}  // namespace

TEST_CASE("interrupt: load of a carton by URL resumes its download", "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/true);
  const std::string hex = ServeCarton(tmp);
  const std::string partial = tmp.file("cache/downloads/" + hex + ".carton.partial");
  const std::uintmax_t kept = InterruptedCartonDownload(
      tmp, server, hex, WithCache(tmp) + " load " + Q(server.Url("m.carton")));
  // No temporary entry directory is left.
  CHECK(EntriesContaining(tmp.file("cache/cartons"), ".tmp-").empty());

  server.SetRate(0);
  auto again = Run(WithCache(tmp) + " load " + Q(server.Url("m.carton")));
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(AskedForRange(server, kept));
  CHECK_FALSE(fs::exists(partial));
  CHECK(fs::exists(again.out.substr(0, again.out.find('\n')) + "/weights.bin"));
  CHECK(Run(WithCache(tmp) + " cache verify").exit_code == 0);
}

TEST_CASE("interrupt: verify, unpack, fetch and shrink of a carton by URL resume its download",
          "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/true);
  const std::string hex = ServeCarton(tmp);
  const std::string url = server.Url("m.carton");
  const std::string downloads = tmp.file("cache/downloads");
  fs::create_directories(tmp.file("out"));
  // Each command is interrupted, then run again: it asks for the rest
  // only, succeeds, and leaves nothing in downloads/.
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"verify", " verify " + Q(url)},
      {"unpack", " unpack " + Q(url) + " " + Q(tmp.file("out/unpacked"))},
      {"fetch", " fetch " + Q(url) + " -o " + Q(tmp.file("out/fetched.carton"))},
      {"shrink", " shrink " + Q(url) + " -o " + Q(tmp.file("out/shrunk.carton")) +
                     " --url-prefix http://127.0.0.1:1/b/ --blobs " + Q(tmp.file("blobs"))},
  };
  for (const auto& [name, args] : commands) {
    SECTION(name) {
      const std::uintmax_t kept =
          InterruptedCartonDownload(tmp, server, hex, WithCache(tmp) + args);
      CHECK(fs::is_empty(tmp.file("out")));
      server.SetRate(0);
      auto again = Run(WithCache(tmp) + args);
      INFO(again.err);
      REQUIRE(again.exit_code == 0);
      CHECK(AskedForRange(server, kept));
      CHECK(fs::is_empty(downloads));
    }
  }
}

TEST_CASE("interrupt: a wrong answer to the resuming Range request starts the download over",
          "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), std::string("badrange"));
  const LinkedCarton c = ShrinkToServer(tmp, server);
  const std::uintmax_t kept = InterruptedFetch(tmp, server, c);
  server.SetRate(0);
  const std::string out = tmp.file("out/fetched.carton");
  auto again = Run(WithCache(tmp) + " fetch " + Q(c.carton) + " -o " + Q(out));
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  // The 206 for bytes 0- is refused; the retry asks for the whole file.
  const auto ranges = server.Ranges("b/" + c.hex);
  REQUIRE(ranges.size() == 3);
  CHECK(ranges[1] == "bytes=" + std::to_string(kept) + "-");
  CHECK(ranges[2] == "-");
  CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);
  CHECK_FALSE(fs::exists(tmp.file("cache/blobs/sha256/" + c.hex + ".partial")));
}

TEST_CASE("range fallback: unpack without DIR of a server that ignores Range downloads it once",
          "[cli][range][unpack]") {
  TempDir tmp;
  const std::string dir = RandomModel(tmp, 1 << 20);
  fs::create_directories(tmp.file("srv"));
  fs::create_directories(tmp.file("work"));
  REQUIRE(Run(Bin() + " pack -q " + Q(dir) + " -o " + Q(tmp.file("srv/m.carton")) + kFlags +
              " --name unpacked-name")
              .exit_code == 0);
  StockHttpServer server(tmp, tmp.file("srv"));
  auto unpack = Run("cd " + Q(tmp.file("work")) + " && " + WithCache(tmp) + " unpack " +
                    Q(server.Url("m.carton")));
  INFO(unpack.err);
  REQUIRE(unpack.exit_code == 0);
  CHECK(fs::exists(tmp.file("work/unpacked-name/model/weights.bin")));
  // The refused range request, then one whole download for both the name
  // and the files.
  CHECK(server.Gets("m.carton") == 2);
}

TEST_CASE("range: a wrong answer to a range request is an error, not a reason to download",
          "[cli][range]") {
  TempDir tmp;
  struct Case {
    const char* mode;
    const char* message;
  } cases[] = {
      // Every Range answered with the whole file, labelled "bytes
      // 0-LAST/SIZE": the first answer (for the tail) is already wrong.
      {"badrange", ": the server sent more than the 8192 bytes asked for"},
      // Right ranges, but a new ETag on every answer: the tail reads well,
      // the read of the central directory before it (the carton has 400
      // files, so its directory and MANIFEST are past the tail's 8 KiB)
      // finds the file changed.
      {"changing", "changed on the server while it was read"},
  };
  for (const auto& c : cases) {
    SECTION(c.mode) {
      SlowServer server(tmp.file("srv"), std::string(c.mode));
      const std::string dir = RandomModel(tmp, 1 << 20);
      for (int i = 0; i < 400; ++i) {
        std::ofstream(dir + "/model/file-with-a-longish-name-" + std::to_string(i) + ".txt") << i;
      }
      REQUIRE(Run(Bin() + " pack -q " + Q(dir) + " -o " + Q(tmp.file("srv/m.carton")) + kFlags)
                  .exit_code == 0);
      const std::string url = Q(server.Url("m.carton"));
      for (const std::string& args :
           std::vector<std::string>{" info " + url, " verify " + url, " load " + url,
                                    " unpack " + url + " " + Q(tmp.file("out")),
                                    " fetch " + url + " -o " + Q(tmp.file("f.carton"))}) {
        INFO(args);
        auto r = Run(WithCache(tmp) + args);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Catch::Contains(c.message));
        CHECK_FALSE(fs::exists(tmp.file("out")));
        CHECK_FALSE(fs::exists(tmp.file("f.carton")));
      }
      // Only range requests were made: nothing was downloaded whole.
      const auto ranges = server.Ranges("m.carton");
      CHECK_FALSE(ranges.empty());
      for (const auto& range : ranges) CHECK(range != "-");
    }
  }
}

TEST_CASE("interrupt: cache gc removes a carton's partial download and says so",
          "[cli][interrupt][resume]") {
  TempDir tmp;
  SlowServer server(tmp.file("srv"), /*honour_range=*/true);
  const std::string hex = ServeCarton(tmp);
  const std::string partial = tmp.file("cache/downloads/" + hex + ".carton.partial");
  const std::uintmax_t kept = InterruptedCartonDownload(
      tmp, server, hex, WithCache(tmp) + " verify " + Q(server.Url("m.carton")));
  // cache list names a carton's partial download by its manifest hash.
  auto before = nlohmann::json::parse(Run(WithCache(tmp) + " cache list --json").out);
  REQUIRE(before.at("partial_downloads").size() == 1);
  CHECK(before["partial_downloads"][0].at("kind") == "carton");
  CHECK(before["partial_downloads"][0].at("manifest_hash") == hex);
  CHECK(before["partial_downloads"][0].at("size") == kept);
  auto gc = Run(WithCache(tmp) + " cache gc --json --max-size 100G");
  INFO(gc.err);
  REQUIRE(gc.exit_code == 0);
  const auto doc = nlohmann::json::parse(gc.out);
  CHECK(doc.at("removed_partials") == nlohmann::json::array({hex}));
  CHECK(doc["freed_bytes"].get<std::uint64_t>() >= kept);
  CHECK_FALSE(fs::exists(partial));
  auto list = Run(WithCache(tmp) + " cache list --json");
  CHECK(nlohmann::json::parse(list.out).at("partial_downloads") == nlohmann::json::array());
}

TEST_CASE("interrupt: cache gc removes a whole download left by a process that is gone",
          "[cli][interrupt]") {
  TempDir tmp;
  const std::string downloads = tmp.file("cache/downloads");
  fs::create_directories(downloads);
  // A process that has exited, and this one, which still runs.
  const long dead = std::atol(Run("sh -c 'echo $$'").out.c_str());
  REQUIRE(dead > 0);
  const std::string left = downloads + "/.carton-download-" + std::to_string(dead) + "-7.carton";
  const std::string live =
      downloads + "/.carton-download-" + std::to_string(::getpid()) + "-7.carton";
  std::ofstream(left) << "partial";
  std::ofstream(live) << "partial";
  auto gc = Run(WithCache(tmp) + " cache gc --max-size 100G");
  INFO(gc.err);
  REQUIRE(gc.exit_code == 0);
  CHECK_FALSE(fs::exists(left));
  CHECK(fs::exists(live));
}
