// The LINKS commands through the built binary against a real nginx on
// 127.0.0.1: shrink -> verify (with and without --fetch) -> fetch -> unpack,
// every Content-Encoding, cartons read by URL, and faults.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "nginx_testing.h"
#include "testing.h"

using carton::testing::NginxServer;
using carton::testing::ReadText;
using carton::testing::Run;
using carton::testing::TempDir;

using carton::testing::WriteText;

namespace {

namespace fs = std::filesystem;

const char kConfig[] =
    "spec_version = 1\nmodel_name = \"linked\"\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

// Compressible, but not trivially: numbered lines.
std::string Weights(std::size_t size, int seed) {
  std::string s;
  for (int i = 0; s.size() < size; ++i) {
    s += "w" + std::to_string(seed) + " " + std::to_string(i * 7919 % 100003) + "\n";
  }
  s.resize(size);
  return s;
}

std::string Q(const std::string& s) { return "'" + s + "'"; }

// The carton binary with its own blob cache.
std::string Carton(const TempDir& tmp, const std::string& cache = "cache") {
  return "CARTON_CACHE_DIR=" + Q(tmp.file(cache)) + " " + carton::testing::CartonBin();
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// Packs a model with two large files (one a duplicate) and a small one.
std::string PackModel(const TempDir& tmp, const std::string& compression = "auto") {
  const std::string dir = tmp.file("model");
  WriteText(dir + "/carton.toml", kConfig);
  WriteText(dir + "/model/weights.bin", Weights(600'000, 1));
  WriteText(dir + "/model/copy.bin", Weights(600'000, 1));
  WriteText(dir + "/model/other.bin", Weights(300'000, 2));
  WriteText(dir + "/model/small.txt", "small\n");
  const std::string out = tmp.file("m.carton");
  auto r = Run(carton::testing::CartonBin() + " pack --compression " + compression + " " + Q(dir) +
               " -o " + Q(out));
  REQUIRE(r.exit_code == 0);
  return out;
}

std::string Unzipped(const std::string& carton, const std::string& entry) {
  return Run("unzip -p " + Q(carton) + " " + Q(entry)).out;
}

}  // namespace

TEST_CASE("cli links: shrink, verify, fetch and unpack through nginx", "[cli][links]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string in = PackModel(tmp);
  const std::string hash = FirstLine(Run(Carton(tmp) + " hash " + Q(in)).out);
  const std::string shrunk = tmp.file("s.carton");

  auto sh =
      Run(Carton(tmp) + " shrink " + Q(in) + " -o " + Q(shrunk) + " --url-prefix " +
          nginx.Url("/blobs") + " --blobs " + Q(nginx.www() + "/blobs") + " --min-size 100000");
  REQUIRE(sh.exit_code == 0);
  CHECK(FirstLine(sh.out) == hash);
  CHECK(sh.err.find("moved 3 files") != std::string::npos);
  CHECK(sh.err.find("2 new blobs") != std::string::npos);
  // MANIFEST is byte-identical; the large files left the zip.
  CHECK(Unzipped(shrunk, "MANIFEST") == Unzipped(in, "MANIFEST"));
  CHECK(fs::file_size(shrunk) < 10'000);
  const std::string links = Unzipped(shrunk, "LINKS");
  CHECK(links.find("version = 1") == 0);
  CHECK(links.find(nginx.Url("/blobs/")) != std::string::npos);
  CHECK(FirstLine(Run(Carton(tmp) + " hash " + Q(shrunk)).out) == hash);

  auto info = Run(Carton(tmp) + " info " + Q(shrunk));
  CHECK(info.exit_code == 0);
  CHECK(std::regex_search(info.out, std::regex("model/weights\\.bin +0 bytes +linked")));

  auto v = Run(Carton(tmp) + " verify " + Q(shrunk));
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("3 linked files not fetched (--fetch)") != std::string::npos);
  CHECK(nginx.Requests("/blobs/") == 0);

  auto vf = Run(Carton(tmp) + " verify --fetch " + Q(shrunk));
  CHECK(vf.exit_code == 0);
  CHECK(vf.out.find("ok (6 files") != std::string::npos);
  CHECK(nginx.Requests("/blobs/") == 2);  // one download per distinct blob

  const std::string fetched = tmp.file("f.carton");
  auto f = Run(Carton(tmp) + " fetch " + Q(shrunk) + " -o " + Q(fetched));
  REQUIRE(f.exit_code == 0);
  CHECK(FirstLine(f.out) == hash);
  CHECK(nginx.Requests("/blobs/") == 2);  // served from the cache
  CHECK(Unzipped(fetched, "MANIFEST") == Unzipped(in, "MANIFEST"));
  CHECK(Unzipped(fetched, "model/weights.bin") == Weights(600'000, 1));
  CHECK(Run("unzip -l " + Q(fetched)).out.find("LINKS") == std::string::npos);
  CHECK(Run(Carton(tmp) + " verify " + Q(fetched)).exit_code == 0);
  CHECK(FirstLine(Run(Carton(tmp) + " hash " + Q(fetched)).out) == hash);

  // A fresh cache: unpack fetches the linked files itself.
  auto u = Run(Carton(tmp, "cache2") + " unpack " + Q(shrunk) + " " + Q(tmp.file("out")));
  REQUIRE(u.exit_code == 0);
  CHECK(ReadText(tmp.file("out/model/copy.bin")) == Weights(600'000, 1));
  CHECK(ReadText(tmp.file("out/model/other.bin")) == Weights(300'000, 2));
  CHECK_FALSE(fs::exists(tmp.file("out/LINKS")));
}

TEST_CASE("cli links: linked files arrive in every content encoding", "[cli][links]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string in = PackModel(tmp);
  const std::string blobs = nginx.www() + "/blobs";
  for (const char* encoding : {"zstd", "br", "gzip", "deflate"}) {
    DYNAMIC_SECTION(encoding) {
      const std::string shrunk = tmp.file(std::string(encoding) + ".carton");
      auto sh = Run(Carton(tmp) + " shrink " + Q(in) + " -o " + Q(shrunk) + " --url-prefix " +
                    nginx.Url(std::string("/enc/") + encoding) + " --blobs " + Q(blobs) +
                    " --min-size 100000 --encodings zstd,br,gzip");
      REQUIRE(sh.exit_code == 0);
      // deflate (zlib format) copies are not something shrink writes.
      for (const auto& e : fs::directory_iterator(blobs)) {
        const std::string p = e.path().string();
        if (p.size() > 64 && p.find('.') == std::string::npos) {
          REQUIRE(Run("python3 -c 'import sys, zlib; open(sys.argv[2], \"wb\").write("
                      "zlib.compress(open(sys.argv[1], \"rb\").read()))' " +
                      Q(p) + " " + Q(p + ".zz"))
                      .exit_code == 0);
        }
      }
      auto v = Run(Carton(tmp, std::string("cache-") + encoding) + " verify --fetch " + Q(shrunk));
      CHECK(v.exit_code == 0);
      CHECK(v.err.empty());
      const std::string prefix = std::string("/enc/") + encoding + "/";
      CHECK(nginx.Requests(prefix) == 2);
      // The compressed copies were sent, not the 900 KB of plain blobs.
      CHECK(nginx.BytesServed(prefix) < 600'000);
    }
  }
}

TEST_CASE("cli links: info and hash of a carton URL read only its metadata", "[cli][links]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string dir = tmp.file("model");
  WriteText(dir + "/carton.toml", kConfig);
  WriteText(dir + "/model/small.txt", "small\n");
  // A 64 MiB stored file of zeros (sparse on disk).
  fs::create_directories(dir + "/model");
  fs::resize_file((std::ofstream(dir + "/model/big.bin"), dir + "/model/big.bin"), 64 << 20);
  const std::string carton = nginx.www() + "/big.carton";
  REQUIRE(Run(carton::testing::CartonBin() + " pack --compression stored " + Q(dir) + " -o " +
              Q(carton))
              .exit_code == 0);
  const std::string hash = FirstLine(Run(Carton(tmp) + " hash " + Q(carton)).out);

  auto h = Run(Carton(tmp) + " hash " + nginx.Url("/big.carton"));
  CHECK(h.exit_code == 0);
  CHECK(FirstLine(h.out) == hash);
  // The tail (8 KiB) holds the central directory and MANIFEST: one request.
  CHECK(nginx.Requests("/big.carton") == 1);
  CHECK(nginx.BytesServed("/big.carton") <= 8192);
  auto i = Run(Carton(tmp) + " info " + nginx.Url("/big.carton"));
  CHECK(i.exit_code == 0);
  CHECK(std::regex_search(i.out, std::regex("model/big\\.bin +67108864 bytes +stored")));
  CHECK(i.out.find("manifest hash: " + hash) != std::string::npos);
  // info adds carton.toml and index.toml at the start: a few KiB more.
  INFO("requests " << nginx.Requests("/big.carton") << ", bytes "
                   << nginx.BytesServed("/big.carton"));
  CHECK(nginx.Requests("/big.carton") <= 4);
  CHECK(nginx.BytesServed("/big.carton") <= 24 * 1024);

  // verify and unpack download the whole carton.
  auto v = Run(Carton(tmp) + " verify " + nginx.Url("/big.carton"));
  CHECK(v.exit_code == 0);
  auto u = Run(Carton(tmp) + " unpack " + nginx.Url("/big.carton") + " " + Q(tmp.file("out")));
  CHECK(u.exit_code == 0);
  CHECK(fs::file_size(tmp.file("out/model/big.bin")) == 64u << 20);

  // A server that ignores Range answers 200 with the whole body: the
  // carton is downloaded whole once (the refused range request is cut off
  // at its first bytes), with a note.
  const std::uint64_t before = nginx.BytesServed("/norange/");
  auto n = Run(Carton(tmp) + " info " + nginx.Url("/norange/big.carton"));
  INFO(n.err);
  CHECK(n.exit_code == 0);
  CHECK(n.err.find("carton: " + nginx.Url("/norange/big.carton") +
                   ": the server ignores range requests; downloading it whole") == 0);
  CHECK(n.out.find("manifest hash: ") != std::string::npos);
  CHECK(nginx.BytesServed("/norange/") - before < (2 * (64u << 20)));
  // A missing carton.
  auto m = Run(Carton(tmp) + " hash " + nginx.Url("/none.carton"));
  CHECK(m.exit_code == 2);
  CHECK(m.err.find("http status 404") != std::string::npos);
}

TEST_CASE("cli links: faults give clear errors and never a bad cache entry", "[cli][links]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string in = PackModel(tmp);
  const std::string shrunk = tmp.file("s.carton");
  const std::string blobs = nginx.www() + "/blobs";
  REQUIRE(Run(Carton(tmp) + " shrink " + Q(in) + " -o " + Q(shrunk) + " --url-prefix " +
              nginx.Url("/blobs") + " --blobs " + Q(blobs) + " --min-size 500000")
              .exit_code == 0);
  std::string hex;
  for (const auto& e : fs::directory_iterator(blobs)) hex = e.path().filename().string();
  REQUIRE(hex.size() == 64);

  SECTION("a blob with the wrong bytes") {
    WriteText(blobs + "/" + hex, Weights(600'000, 9));
    auto v = Run(Carton(tmp) + " verify --fetch " + Q(shrunk));
    CHECK(v.exit_code == 1);
    CHECK(v.err.find("model/copy.bin: linked file: sha256 " + hex) != std::string::npos);
    CHECK(v.err.find(nginx.Url("/blobs/" + hex) + ": sha256 is ") != std::string::npos);
    auto u = Run(Carton(tmp) + " unpack " + Q(shrunk) + " " + Q(tmp.file("out")));
    CHECK(u.exit_code == 1);
    CHECK_FALSE(fs::exists(tmp.file("out")));
    auto f = Run(Carton(tmp) + " fetch " + Q(shrunk) + " -o " + Q(tmp.file("f.carton")));
    CHECK(f.exit_code == 1);
    CHECK_FALSE(fs::exists(tmp.file("f.carton")));
  }
  SECTION("a missing blob") {
    fs::remove(blobs + "/" + hex);
    auto v = Run(Carton(tmp) + " verify --fetch " + Q(shrunk));
    CHECK(v.exit_code == 1);
    CHECK(v.err.find(nginx.Url("/blobs/" + hex) + ": http status 404") != std::string::npos);
    auto u = Run(Carton(tmp) + " unpack " + Q(shrunk) + " " + Q(tmp.file("out")));
    CHECK(u.exit_code == 2);
    CHECK(u.err.find("carton unpack: " + shrunk + ": model/copy.bin: sha256 " + hex) == 0);
    CHECK_FALSE(fs::exists(tmp.file("out")));
  }
  // Nothing unverified ever entered the cache.
  if (fs::exists(tmp.file("cache/blobs/sha256"))) {
    CHECK(carton::testing::Run("ls -A " + Q(tmp.file("cache/blobs/sha256"))).out.empty());
  }
}

TEST_CASE("cli links: verify reports LINKS problems and gates file links", "[cli][links]") {
  TempDir tmp;
  // Stored, so that unzip can take it apart below.
  const std::string in = PackModel(tmp, "stored");
  const std::string shrunk = tmp.file("s.carton");
  const std::string blobs = tmp.file("blobs");
  REQUIRE(Run(Carton(tmp) + " shrink " + Q(in) + " -o " + Q(shrunk) + " --url-prefix file://" +
              blobs + " --blobs " + Q(blobs) + " --min-size 500000")
              .exit_code == 0);
  auto refused = Run(Carton(tmp) + " verify --fetch " + Q(shrunk));
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("file links are not allowed") != std::string::npos);
  CHECK(Run(Carton(tmp) + " verify --fetch --allow-file-links " + Q(shrunk)).exit_code == 0);
  // A fresh cache: the one above already holds the verified blob.
  CHECK(Run(Carton(tmp, "cache2") + " unpack " + Q(shrunk) + " " + Q(tmp.file("o1"))).exit_code ==
        2);
  CHECK(Run(Carton(tmp) + " unpack --allow-file-links " + Q(shrunk) + " " + Q(tmp.file("o2")))
            .exit_code == 0);

  // Rewrite LINKS: a hash MANIFEST does not list, and then one that no
  // longer covers the linked file; both are problems.
  const std::string work = tmp.file("work");
  fs::create_directories(work);
  REQUIRE(Run("cd " + Q(work) + " && unzip -q " + Q(shrunk)).exit_code == 0);
  std::string links = ReadText(work + "/LINKS");
  const std::string extra = std::string(64, 'a');
  WriteText(work + "/LINKS", links + extra + " = [\"https://example.com/x\"]\n");
  const std::string z1 = tmp.file("extra.carton");
  REQUIRE(Run("cd " + Q(work) + " && zip -q -r " + Q(z1) + " .").exit_code == 0);
  const std::string stray = ": LINKS: sha256 " + extra + " names no file in MANIFEST";
  auto w = Run(Carton(tmp) + " verify " + Q(z1));
  CHECK(w.exit_code == 1);
  CHECK(w.err.find("carton verify: " + z1 + stray) != std::string::npos);
  CHECK(w.out.empty());
  // Every reader refuses it, and nothing carries the stray hash on.
  auto wi = Run(Carton(tmp) + " info " + Q(z1));
  CHECK(wi.exit_code == 1);
  CHECK(wi.err.find("carton info: " + z1 + stray) == 0);
  auto wu = Run(Carton(tmp) + " unpack --allow-file-links " + Q(z1) + " " + Q(tmp.file("o3")));
  CHECK(wu.exit_code == 1);
  CHECK(wu.err.find("carton unpack: " + z1 + stray) == 0);
  CHECK_FALSE(fs::exists(tmp.file("o3")));
  auto wf =
      Run(Carton(tmp) + " fetch --allow-file-links " + Q(z1) + " -o " + Q(tmp.file("f.carton")));
  CHECK(wf.exit_code == 1);
  CHECK(wf.err.find("carton fetch: " + z1 + stray) == 0);
  CHECK_FALSE(fs::exists(tmp.file("f.carton")));
  auto ws = Run(Carton(tmp) + " shrink " + Q(z1) + " -o " + Q(tmp.file("s2.carton")) +
                " --url-prefix https://example.com/b --blobs " + Q(tmp.file("blobs2")));
  CHECK(ws.exit_code == 1);
  CHECK(ws.err.find("carton shrink: " + z1 + stray) == 0);
  CHECK_FALSE(fs::exists(tmp.file("s2.carton")));

  WriteText(work + "/LINKS", "version = 1\n[urls]\n");
  const std::string z2 = tmp.file("uncovered.carton");
  REQUIRE(Run("cd " + Q(work) + " && zip -q -r " + Q(z2) + " .").exit_code == 0);
  auto u = Run(Carton(tmp) + " verify " + Q(z2));
  CHECK(u.exit_code == 1);
  CHECK(u.err.find("model/copy.bin: listed in MANIFEST but missing from the archive, and LINKS "
                   "has no url for its sha256") != std::string::npos);

  WriteText(work + "/LINKS", "version = 2\n[urls]\n");
  const std::string z3 = tmp.file("badlinks.carton");
  REQUIRE(Run("cd " + Q(work) + " && zip -q -r " + Q(z3) + " .").exit_code == 0);
  auto b = Run(Carton(tmp) + " verify " + Q(z3));
  CHECK(b.exit_code == 1);
  // The entry named once, with its line and column.
  CHECK(b.err.find(z3 + ": LINKS:1:11: version 2 is not supported") != std::string::npos);
}
