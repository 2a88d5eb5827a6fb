// Loading cartons by URL from a real nginx on 127.0.0.1: a miss downloads
// and materializes, a hit reads only MANIFEST with range requests, the same
// model by local path finds the same entry, and a carton with LINKS loads
// its linked files through the blob cache. Library and CLI.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/loader/cache.h"
#include "carton/loader/loader.h"
#include "loader/loader_testing.h"
#include "nginx_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// A carton of about 2.5 MB served by nginx at /m.carton.
struct Served {
  TempDir tmp;
  NginxServer nginx;
  std::string hash;
  std::uint64_t size = 0;
  Served() {
    hash = PackDir(MakeModelDir(tmp.file("m"), 300'000), nginx.www() + "/m.carton");
    size = fs::file_size(nginx.www() + "/m.carton");
  }
  std::string Url(const std::string& name = "/m.carton") const { return nginx.Url(name); }
  // The CLI with this test's cache and the noop runner.
  CommandResult Cli(const std::string& args) const {
    return Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) +
               " CARTON_RUNNER_PATH=" + Q(NoopRunnerDir()) + " " + CartonBin() + " " + args);
  }
};

std::size_t CountFiles(const std::string& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) ++n;
  return n;
}

}  // namespace

TEST_CASE("loader: a URL miss downloads once, hits read only MANIFEST by range requests",
          "[loader][url]") {
  Served s;
  ScopedEnv cache("CARTON_CACHE_DIR", s.tmp.file("cache"));

  auto miss = testing::LoadAt(s.Url());
  REQUIRE(miss.ok());
  CHECK_FALSE(miss->stats().cache_hit);
  CHECK(manifest::ToHex(*miss->manifest_hash()) == s.hash);
  CHECK(miss->root_dir() == s.tmp.file("cache") + "/cartons/" + s.hash);
  CHECK(ReadText(miss->model_dir() + "/notes.txt") == "notes\n");
  REQUIRE(miss->FindTensor("big") != nullptr);
  CHECK(miss->FindTensor("big")->data.size() == 1'200'000);
  // The download is gone; its inode lives on as the entry's source.
  CHECK(CountFiles(s.tmp.file("cache") + "/downloads") == 0);
  CHECK(miss->stats().mapped_from_carton);
  const std::uint64_t after_miss = s.nginx.BytesServed("/m.carton");
  CHECK(after_miss >= s.size);
  CHECK(after_miss < 2 * s.size + 64 * 1024);  // range reads of MANIFEST + one download

  const int requests = s.nginx.Requests("/m.carton");
  auto hit = testing::LoadAt(s.Url());
  REQUIRE(hit.ok());
  CHECK(hit->stats().cache_hit);
  CHECK(hit->root_dir() == miss->root_dir());
  CHECK(hit->FindTensor("big")->data.size() == 1'200'000);
  INFO("hit: " << s.nginx.Requests("/m.carton") - requests << " requests, "
               << s.nginx.BytesServed("/m.carton") - after_miss << " bytes");
  // The zip's tail (one 8 KiB range) holds the central directory and
  // MANIFEST.
  CHECK(s.nginx.Requests("/m.carton") - requests <= 2);
  CHECK(s.nginx.BytesServed("/m.carton") - after_miss <= 32 * 1024);

  // The same model by local path: the same entry.
  fs::copy_file(s.nginx.www() + "/m.carton", s.tmp.file("local.carton"));
  auto local = testing::LoadAt(s.tmp.file("local.carton"));
  REQUIRE(local.ok());
  CHECK(local->stats().cache_hit);
  CHECK(*local->manifest_hash() == *miss->manifest_hash());
  CHECK(local->root_dir() == miss->root_dir());
  loader::CartonCache cc(s.tmp.file("cache"));
  REQUIRE(cc.List()->size() == 1);
  CHECK(cc.Verify(*manifest::ParseHex(s.hash))->ok());

  // A damaged entry is a miss: the URL is downloaded again and the entry
  // rebuilt.
  fs::resize_file(miss->model_dir() + "/notes.txt", 1);
  const std::uint64_t before = s.nginx.BytesServed("/m.carton");
  auto rebuilt = testing::LoadAt(s.Url());
  REQUIRE(rebuilt.ok());
  CHECK_FALSE(rebuilt->stats().cache_hit);
  CHECK(ReadText(rebuilt->model_dir() + "/notes.txt") == "notes\n");
  CHECK(s.nginx.BytesServed("/m.carton") - before >= s.size);
  CHECK(cc.Verify(*manifest::ParseHex(s.hash))->ok());
}

TEST_CASE("loader: carton load and self-test of a URL through the CLI", "[loader][url][cli]") {
  Served s;
  auto miss = s.Cli("load " + s.Url());
  INFO(miss.err);
  REQUIRE(miss.exit_code == 0);
  CHECK(miss.out == s.tmp.file("cache") + "/cartons/" + s.hash + "/model\n");
  const std::uint64_t after_miss = s.nginx.BytesServed("/m.carton");
  CHECK(after_miss >= s.size);

  auto hit = s.Cli("load --json " + s.Url());
  REQUIRE(hit.exit_code == 0);
  auto j = nlohmann::json::parse(hit.out);
  CHECK(j["cache_hit"] == true);
  CHECK(j["manifest_hash"] == s.hash);
  CHECK(j["bytes_hashed"] == 0);
  CHECK(s.nginx.BytesServed("/m.carton") - after_miss <= 64 * 1024);

  // self-test by URL: a hit, the runner gets the cache entry.
  auto st = s.Cli("self-test " + s.Url());
  INFO(st.out << st.err);
  CHECK(st.exit_code == 0);
  CHECK_THAT(st.out, Catch::Contains("PASS echo"));
  CHECK_THAT(st.out, Catch::Contains("1 of 1 self-tests passed"));
  CHECK(s.nginx.BytesServed("/m.carton") - after_miss <= 2 * 64 * 1024);

  // By local path afterwards: the same entry, a hit.
  fs::copy_file(s.nginx.www() + "/m.carton", s.tmp.file("local.carton"));
  auto local = s.Cli("load --json " + Q(s.tmp.file("local.carton")));
  REQUIRE(local.exit_code == 0);
  auto lj = nlohmann::json::parse(local.out);
  CHECK(lj["cache_hit"] == true);
  CHECK(lj["manifest_hash"] == s.hash);
  CHECK(lj["root_dir"] == j["root_dir"]);

  // A fresh cache: self-test of the URL is a miss that downloads it.
  auto fresh = Run("CARTON_CACHE_DIR=" + Q(s.tmp.file("cache2")) + " CARTON_RUNNER_PATH=" +
                   Q(NoopRunnerDir()) + " " + CartonBin() + " self-test " + s.Url());
  CHECK(fresh.exit_code == 0);
  CHECK(fs::exists(s.tmp.file("cache2") + "/cartons/" + s.hash + "/carton.toml"));
  // A URL that is not there.
  auto missing = s.Cli("load " + s.Url("/none.carton"));
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::StartsWith("carton load: "));
  CHECK_THAT(missing.err, Catch::Contains("http status 404"));
}

TEST_CASE("loader: a shrunk carton (LINKS) loads by URL, its blobs fetched once",
          "[loader][url][links]") {
  Served s;
  const std::string blobs = s.nginx.www() + "/blobs";
  auto sh = Run(CartonBin() + " shrink " + Q(s.nginx.www() + "/m.carton") + " -o " +
                Q(s.nginx.www() + "/s.carton") + " --url-prefix " + s.nginx.Url("/blobs") +
                " --blobs " + Q(blobs) + " --min-size 100000");
  REQUIRE(sh.exit_code == 0);
  const std::uint64_t shrunk_size = fs::file_size(s.nginx.www() + "/s.carton");
  CHECK(shrunk_size < 100'000);

  ScopedEnv cache("CARTON_CACHE_DIR", s.tmp.file("cache"));
  auto miss = testing::LoadAt(s.Url("/s.carton"));
  REQUIRE(miss.ok());
  CHECK_FALSE(miss->stats().cache_hit);
  CHECK(manifest::ToHex(*miss->manifest_hash()) == s.hash);
  CHECK(miss->stats().bytes_fetched >= 2'400'000);
  const int blob_requests = s.nginx.Requests("/blobs/");
  CHECK(blob_requests == 2);  // weights and the big tensor
  // Linked files are files of the entry (hard links to the blobs), and
  // their views read them.
  REQUIRE(miss->model_safetensors().size() == 1);
  auto w = miss->model_safetensors()[0].file->Get("w");
  REQUIRE(w.ok());
  CHECK(w->data.size() == 1'200'000);
  REQUIRE(miss->FindTensor("big") != nullptr);
  CHECK(miss->FindTensor("big")->data.size() == 1'200'000);
  CHECK(fs::exists(miss->model_dir() + "/weights.safetensors"));

  auto hit = testing::LoadAt(s.Url("/s.carton"));
  REQUIRE(hit.ok());
  CHECK(hit->stats().cache_hit);
  CHECK(s.nginx.Requests("/blobs/") == blob_requests);
  // The full carton, by URL or by path, is the same model.
  auto full = testing::LoadAt(s.Url());
  REQUIRE(full.ok());
  CHECK(full->stats().cache_hit);
  CHECK(full->root_dir() == miss->root_dir());
  loader::CartonCache cc(s.tmp.file("cache"));
  CHECK(cc.Verify(*manifest::ParseHex(s.hash))->ok());

  // The CLI, from a fresh cache: load and self-test.
  auto cli = Run("CARTON_CACHE_DIR=" + Q(s.tmp.file("cache2")) + " CARTON_RUNNER_PATH=" +
                 Q(NoopRunnerDir()) + " " + CartonBin() + " self-test " + s.Url("/s.carton"));
  INFO(cli.out << cli.err);
  CHECK(cli.exit_code == 0);
  CHECK_THAT(cli.out, Catch::Contains("1 of 1 self-tests passed"));
  CHECK(s.nginx.Requests("/blobs/") == blob_requests + 2);
}

TEST_CASE("loader: processes loading one URL at once download it once",
          "[loader][url][concurrency]") {
  Served s;
  std::string cmd;
  for (int i = 0; i < 4; ++i) {
    std::string n = std::to_string(i);
    cmd += "( CARTON_CACHE_DIR=" + Q(s.tmp.file("cache")) + " " + CartonBin() + " load --json " +
           s.Url() + " > " + Q(s.tmp.file("out" + n)) + "; echo $? > " + Q(s.tmp.file("rc" + n)) +
           " ) & ";
  }
  cmd += "wait";
  REQUIRE(Run(cmd).exit_code == 0);
  int misses = 0;
  for (int i = 0; i < 4; ++i) {
    std::string n = std::to_string(i);
    REQUIRE(ReadText(s.tmp.file("rc" + n)) == "0\n");
    auto j = nlohmann::json::parse(ReadText(s.tmp.file("out" + n)));
    CHECK(j["manifest_hash"] == s.hash);
    if (!j["cache_hit"].get<bool>()) ++misses;
  }
  CHECK(misses == 1);
  // One download, plus the range reads of MANIFEST by each.
  INFO("bytes served " << s.nginx.BytesServed("/m.carton") << " of a " << s.size << "-byte carton");
  CHECK(s.nginx.BytesServed("/m.carton") < 2 * s.size);
  CHECK(CountFiles(s.tmp.file("cache") + "/downloads") == 0);

  // What a load killed while downloading leaves: gc removes it.
  WriteBytes(s.tmp.file("cache") + "/downloads/" + s.hash + "-7.carton", AsBytes("partial"));
  WriteBytes(s.tmp.file("cache") + "/downloads/." + s.hash + "-8.carton.tmp-x", AsBytes("partial"));
  loader::CartonCache cc(s.tmp.file("cache"));
  REQUIRE(cc.Gc(1ull << 40).ok());
  CHECK(CountFiles(s.tmp.file("cache") + "/downloads") == 0);
  CHECK(cc.List()->size() == 1);
}
