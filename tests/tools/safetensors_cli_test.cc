// Runs the built `carton` binary and checks exit codes, stdout and stderr;
// files by URL come from a real nginx on 127.0.0.1, whose access log counts
// the requests and bytes each command costs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/safetensors/file.h"
#include "carton/safetensors/writer.h"
#include "nginx_testing.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;
using testing::Run;

namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string WriteValid(const testing::TempDir& dir, const std::string& name) {
  std::vector<std::byte> a(8), b(3);
  std::vector<TensorSource> ts = {{"a", Dtype::kF32, {2}, a, {}}, {"b", Dtype::kI8, {3}, b, {}}};
  std::string path = dir.file(name);
  REQUIRE(WriteFile(path, ts, {{"k", "v"}}).ok());
  return path;
}

}  // namespace

TEST_CASE("cli: safetensors inspect lists tensors and metadata", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string path = WriteValid(dir, "m.safetensors");
  auto r = Run(testing::CartonBin() + " safetensors inspect " + Quote(path));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("2 tensors") != std::string::npos);
  CHECK(r.out.find("k = v") != std::string::npos);
  CHECK(r.out.find("a     F32    [2]    8      0") != std::string::npos);
  CHECK(r.out.find("b     I8     [3]    3      8") != std::string::npos);
}

TEST_CASE("cli: safetensors inspect shows control characters in names escaped",
          "[cli][safetensors]") {
  // A valid file whose tensor name and metadata carry terminal escape
  // sequences: the listing shows them as \xNN, --json as JSON escapes.
  testing::TempDir dir;
  std::vector<std::byte> a(4);
  std::vector<TensorSource> ts = {{"w\x1b[2J", Dtype::kF32, {1}, a, {}}};
  const std::string path = dir.file("esc.safetensors");
  REQUIRE(WriteFile(path, ts,
                    {{"k\x1b]0;t\a",
                      "v\xc2\x9b"
                      "31m"}})
              .ok());
  auto r = Run(testing::CartonBin() + " safetensors inspect " + Quote(path));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\a') == std::string::npos);
  CHECK(r.out.find("\xc2\x9b") == std::string::npos);
  CHECK(r.out.find("k\\x1b]0;t\\x07 = v\\xc2\\x9b31m") != std::string::npos);
  CHECK(r.out.find("w\\x1b[2J  F32") != std::string::npos);
  auto j = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(path));
  REQUIRE(j.exit_code == 0);
  CHECK(nlohmann::json::parse(j.out)["tensors"][0]["name"] == "w\x1b[2J");
}

TEST_CASE("cli: safetensors inspect --json is machine-readable", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string path = WriteValid(dir, "m.safetensors");
  auto r = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(path));
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["header_size"] == 136);
  CHECK(j["metadata"]["k"] == "v");
  REQUIRE(j["tensors"].size() == 2);
  CHECK(j["tensors"][1]["name"] == "b");
  CHECK(j["tensors"][1]["shape"] == nlohmann::json::array({3}));
  CHECK(j["tensors"][1]["data_offsets"] == nlohmann::json::array({8, 11}));
}

TEST_CASE("cli: safetensors verify exits 0 for valid files", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string a = WriteValid(dir, "a.safetensors"), b = WriteValid(dir, "b.safetensors");
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(a) + " " + Quote(b));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("a.safetensors: ok (2 tensors)") != std::string::npos);
  CHECK(r.out.find("b.safetensors: ok (2 tensors)") != std::string::npos);
}

TEST_CASE("cli: safetensors verify exits 1 and names every bad file", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string good = WriteValid(dir, "good.safetensors");
  std::string bad1 = WriteValid(dir, "bad1.safetensors");
  std::string bad2 = dir.file("bad2.safetensors");
  {
    // Trailing bytes: the polyglot defence.
    auto bytes = testing::ReadText(bad1) + "junk";
    testing::WriteBytes(bad1, AsBytes(bytes));
  }
  testing::WriteBytes(
      bad2,
      testing::RawSafetensors(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12));
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(good) + " " + Quote(bad1) +
               " " + Quote(bad2));
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("good.safetensors: ok") != std::string::npos);
  CHECK(r.err.find("carton safetensors verify: " + bad1 + ": tensor data ends at 11") !=
        std::string::npos);
  CHECK(r.err.find("carton safetensors verify: " + bad2 +
                   ": tensor \"w\": data_offsets [0, 12] but F32 [2, 2] needs 16 bytes") !=
        std::string::npos);
}

TEST_CASE("cli: safetensors verify --json reports each file", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string good = WriteValid(dir, "good.safetensors");
  std::string bad = dir.file("bad.safetensors");
  testing::WriteBytes(bad, AsBytes("short"));
  auto r =
      Run(testing::CartonBin() + " safetensors verify --json " + Quote(good) + " " + Quote(bad));
  CHECK(r.exit_code == 1);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == 1);
  CHECK(j["ok"] == false);
  REQUIRE(j["results"].size() == 2);
  CHECK(j["results"][0]["ok"] == true);
  CHECK(j["results"][1]["ok"] == false);
  CHECK(j["results"][1]["error"]["code"] == "corrupt");
}

TEST_CASE("cli: a missing file or bad usage exits 2", "[cli]") {
  testing::TempDir dir;
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(dir.file("none")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("carton safetensors verify: ") == 0);
  CHECK(Run(testing::CartonBin() + " safetensors inspect").exit_code == 2);
  CHECK(Run(testing::CartonBin() + " no-such-command").exit_code == 2);
  CHECK(Run(testing::CartonBin() + " --version").out.find("carton 0.1.0") != std::string::npos);
}

namespace {

// `n` F32 tensors of 512 x 512 (1 MiB each) named like a checkpoint's, the
// data section left as a hole: a 1 GiB file for n = 1024 that costs no disk.
// Returns the header size N.
std::uint64_t WriteSparse(const std::string& path, int n) {
  std::vector<TensorSource> ts;
  for (int i = 0; i < n; ++i) {
    TensorSource t{"model.layers." + std::to_string(i) + ".mlp.down_proj.weight",
                   Dtype::kF32,
                   {512, 512},
                   {},
                   {}};
    t.stream = [](const ByteSink&) { return Status::Ok(); };  // never called
    ts.push_back(std::move(t));
  }
  auto plan = PlanHeader(ts, {{"format", "pt"}});
  REQUIRE(plan.ok());
  testing::WriteBytes(path, plan->header);
  std::filesystem::resize_file(path, plan->header.size() + plan->data_size);
  return plan->header.size() - 8;
}

// Three tensors with distinct bytes: "a" (I32 [100000]), "b" (U8 [7]),
// "c" (F64 [3, 5]).
std::vector<std::byte> Patterned() {
  static std::vector<std::byte> a(400000), b(7), c(120);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::byte(i * 7 + 1);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::byte(200 + i);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = std::byte(i * 3);
  std::vector<TensorSource> ts = {{"a", Dtype::kI32, {100000}, a, {}},
                                  {"b", Dtype::kU8, {7}, b, {}},
                                  {"c", Dtype::kF64, {3, 5}, c, {}}};
  auto bytes = Serialize(ts, {{"format", "pt"}});
  REQUIRE(bytes.ok());
  return *bytes;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

// Requests and body bytes nginx served for `prefix` while `run` ran.
struct Cost {
  int requests;
  std::uint64_t bytes;
};
template <typename F>
Cost Measure(const testing::NginxServer& nginx, const std::string& prefix, F run) {
  const int requests = nginx.Requests(prefix);
  const std::uint64_t bytes = nginx.BytesServed(prefix);
  run();
  return {nginx.Requests(prefix) - requests, nginx.BytesServed(prefix) - bytes};
}

}  // namespace

TEST_CASE("cli: safetensors inspect and verify of a 1 GiB URL read only the header",
          "[cli][safetensors][http]") {
  testing::NginxServer nginx;
  const std::string path = nginx.www() + "/big.safetensors";
  const std::uint64_t n = WriteSparse(path, 1024);
  REQUIRE(std::filesystem::file_size(path) == 8 + n + (std::uint64_t{1} << 30));
  REQUIRE(8 + n > kHeaderProbeSize);  // the header takes a second request
  const std::string url = nginx.Url("/big.safetensors");

  testing::CommandResult r;
  Cost cost = Measure(
      nginx, "/big", [&] { r = Run(testing::CartonBin() + " safetensors inspect " + Quote(url)); });
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(url + ": 1024 tensors, header " + std::to_string(n) + " bytes, data " +
                   std::to_string(std::uint64_t{1} << 30) + " bytes") == 0);
  CHECK(r.out.find("model.layers.1023.mlp.down_proj.weight  F32") != std::string::npos);
  CHECK(cost.requests <= 3);
  CHECK(cost.requests == 2);
  CHECK(cost.bytes >= 8 + n);
  CHECK(cost.bytes <= 2 * (8 + n));

  // The same listing as for the local file, in JSON.
  auto local = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(path));
  auto remote = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(url));
  REQUIRE(remote.exit_code == 0);
  auto lj = nlohmann::json::parse(local.out), rj = nlohmann::json::parse(remote.out);
  CHECK(rj["file"] == url);
  lj.erase("file");
  rj.erase("file");
  CHECK(lj == rj);

  cost = Measure(nginx, "/big",
                 [&] { r = Run(testing::CartonBin() + " safetensors verify " + Quote(url)); });
  CHECK(r.exit_code == 0);
  CHECK(r.out == url + ": ok (1024 tensors)\n");
  CHECK(cost.requests == 2);
  CHECK(cost.bytes <= 2 * (8 + n));
}

TEST_CASE("cli: safetensors over HTTP takes a small header in one request",
          "[cli][safetensors][http]") {
  testing::NginxServer nginx;
  testing::WriteBytes(nginx.www() + "/p.safetensors", Patterned());
  testing::CommandResult r;
  Cost cost = Measure(nginx, "/p.", [&] {
    r = Run(testing::CartonBin() + " safetensors verify " + Quote(nginx.Url("/p.safetensors")));
  });
  CHECK(r.exit_code == 0);
  CHECK(cost.requests == 1);
  CHECK(cost.bytes == kHeaderProbeSize);
}

TEST_CASE("cli: safetensors get reads one tensor's bytes from a URL or a file",
          "[cli][safetensors][http]") {
  testing::NginxServer nginx;
  testing::TempDir dir;
  const auto bytes = Patterned();
  const std::string path = nginx.www() + "/p.safetensors";
  testing::WriteBytes(path, bytes);
  const std::string url = nginx.Url("/p.safetensors");
  auto source = File::FromBuffer(bytes);
  REQUIRE(source.ok());

  // From the local file.
  const std::string local_out = dir.file("local.safetensors");
  auto r =
      Run(testing::CartonBin() + " safetensors get " + Quote(path) + " c a -o " + Quote(local_out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.empty());
  auto got = File::Open(local_out);
  REQUIRE(got.ok());
  CHECK(got->size() == 2);
  CHECK(got->metadata().at("format") == "pt");
  for (const char* name : {"a", "c"}) {
    CHECK(std::ranges::equal(got->Find(name)->data, source->Find(name)->data));
    CHECK(std::ranges::equal(got->Find(name)->shape, source->Find(name)->shape));
  }

  // From the URL: the same bytes; the header, then only the tensors' bytes.
  const std::string remote_out = dir.file("remote.safetensors");
  Cost cost = Measure(nginx, "/p.", [&] {
    r = Run(testing::CartonBin() + " safetensors get " + Quote(url) + " c a -o " +
            Quote(remote_out));
  });
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(testing::ReadText(remote_out) == testing::ReadText(local_out));
  // The first request took the header and "c" (the first 120 bytes of the
  // data); "a" takes one more.
  CHECK(cost.requests == 2);
  const std::uint64_t tensors = source->Find("a")->data.size() + source->Find("c")->data.size();
  CHECK(cost.bytes <= kHeaderProbeSize + tensors + 4 * 4096);

  // An unknown tensor: exit 2, nothing written.
  const std::string none = dir.file("none.safetensors");
  r = Run(testing::CartonBin() + " safetensors get " + Quote(url) + " a zz -o " + Quote(none));
  CHECK(r.exit_code == 2);
  // The names it has, in the file's order.
  std::string names;
  for (const auto& t : source->tensors())
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  CHECK(names.size() == 7);
  CHECK(r.err ==
        "carton safetensors get: " + url + ": no tensor named \"zz\" (it has: " + names + ")\n");
  CHECK_FALSE(std::filesystem::exists(none));
}

TEST_CASE("cli: a hostile header over HTTP is rejected with the same message as locally",
          "[cli][safetensors][http][corrupt]") {
  testing::NginxServer nginx;
  struct Case {
    const char* name;
    std::vector<std::byte> bytes;
  };
  std::vector<std::byte> huge(64);
  StoreLE64(huge.data(), std::uint64_t{1} << 62);
  std::vector<std::byte> past_end(64);
  StoreLE64(past_end.data(), 1000);
  std::vector<Case> cases = {
      {"size",
       testing::RawSafetensors(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12)},
      {"dup", testing::RawSafetensors(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                      R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                                      2)},
      {"polyglot",
       testing::RawSafetensors(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 9)},
      {"deep", testing::RawSafetensors(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],)"
                                       R"("x":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}})",
                                       1)},
      {"huge", huge},
      {"past_end", past_end}};
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string path = nginx.www() + "/" + c.name + ".safetensors";
    testing::WriteBytes(path, c.bytes);
    const std::string url = nginx.Url(std::string("/") + c.name + ".safetensors");
    auto local = Run(testing::CartonBin() + " safetensors verify " + Quote(path));
    testing::CommandResult remote;
    Cost cost = Measure(nginx, std::string("/") + c.name, [&] {
      remote = Run(testing::CartonBin() + " safetensors verify " + Quote(url));
    });
    CHECK(local.exit_code == 1);
    CHECK(remote.exit_code == 1);
    CHECK(remote.err == Replace(local.err, path, url));
    CHECK(remote.err.find("carton safetensors verify: " + url + ": ") == 0);
    CHECK(cost.requests == 1);
  }
}

TEST_CASE("cli: a server that ignores Range is refused clearly", "[cli][safetensors][http]") {
  testing::NginxServer nginx;
  WriteSparse(nginx.www() + "/big.safetensors", 64);
  for (const char* command : {"inspect", "verify"}) {
    const std::string url = nginx.Url("/norange/big.safetensors");
    testing::CommandResult r;
    Cost cost = Measure(nginx, "/norange/", [&] {
      r = Run(testing::CartonBin() + " safetensors " + command + " " + Quote(url));
    });
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("carton safetensors " + std::string(command) + ": " + url +
                     ": the server ignores range requests") == 0);
    CHECK(cost.requests == 1);
  }
  auto r = Run(testing::CartonBin() + " safetensors inspect " +
               Quote(nginx.Url("/missing.safetensors")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("http status 404") != std::string::npos);
}

namespace {

// A checkpoint of three shards under www()/ck/, tensors "s<shard>.<k>";
// the second shard's file name has a space (sent as %20).
const std::vector<std::string> kShards = {"model-00001-of-00003.safetensors",
                                          "model 00002-of-00003.safetensors",
                                          "model-00003-of-00003.safetensors"};

std::string WriteCheckpoint(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::string weight_map;
  static std::vector<std::byte> data(64);
  for (std::size_t s = 0; s < kShards.size(); ++s) {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(s * 16 + i);
    std::vector<TensorSource> ts;
    for (int k = 0; k < 4; ++k) {
      std::string name = "s" + std::to_string(s) + "." + std::to_string(k);
      ts.push_back({name, Dtype::kF32, {4}, std::span(data).subspan(16 * k, 16), {}});
      weight_map += (weight_map.empty() ? "\"" : ", \"") + name + "\": \"" + kShards[s] + "\"";
    }
    REQUIRE(WriteFile(dir + "/" + kShards[s], ts, {{"format", "pt"}}).ok());
  }
  const std::string index = dir + "/model.safetensors.index.json";
  testing::WriteBytes(
      index, AsBytes(R"({"metadata": {"total_size": 192}, "weight_map": {)" + weight_map + "}}"));
  return index;
}

}  // namespace

TEST_CASE("cli: a sharded checkpoint by URL lists, verifies and extracts every shard",
          "[cli][safetensors][http][sharded]") {
  testing::NginxServer nginx;
  testing::TempDir dir;
  const std::string index = WriteCheckpoint(nginx.www() + "/ck");
  const std::string url = nginx.Url("/ck/model.safetensors.index.json");

  testing::CommandResult r;
  Cost cost = Measure(
      nginx, "/ck/", [&] { r = Run(testing::CartonBin() + " safetensors inspect " + Quote(url)); });
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(url + ": 12 tensors in 3 shards, data 192 bytes") == 0);
  CHECK(r.out.find("shard 0: " + nginx.Url("/ck/model%2000002-of-00003.safetensors")) !=
        std::string::npos);
  CHECK(r.out.find("s2.3  F32    [4]    16     48      2") != std::string::npos);
  CHECK(cost.requests == 4);  // the index, then one per shard
  CHECK(nginx.Requests("/ck/model-00001") == 1);
  CHECK(nginx.Requests("/ck/model%2000002") == 1);

  auto local = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(index));
  auto remote = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(url));
  REQUIRE(local.exit_code == 0);
  REQUIRE(remote.exit_code == 0);
  auto lj = nlohmann::json::parse(local.out), rj = nlohmann::json::parse(remote.out);
  CHECK(rj["tensors"] == lj["tensors"]);
  CHECK(rj["metadata"] == nlohmann::json({{"total_size", 192}}));
  CHECK(rj["shards"].size() == 3);

  r = Run(testing::CartonBin() + " safetensors verify " + Quote(url) + " " + Quote(index));
  CHECK(r.exit_code == 0);
  CHECK(r.out ==
        url + ": ok (12 tensors in 3 shards)\n" + index + ": ok (12 tensors in 3 shards)\n");

  const std::string out = dir.file("out.safetensors"), local_out = dir.file("local.safetensors");
  r = Run(testing::CartonBin() + " safetensors get " + Quote(url) + " s1.2 s2.0 -o " + Quote(out));
  REQUIRE(r.exit_code == 0);
  r = Run(testing::CartonBin() + " safetensors get " + Quote(index) + " s1.2 s2.0 -o " +
          Quote(local_out));
  REQUIRE(r.exit_code == 0);
  CHECK(testing::ReadText(out) == testing::ReadText(local_out));
  auto got = File::Open(out);
  REQUIRE(got.ok());
  const TensorView* s12 = got->Find("s1.2");
  REQUIRE(s12 != nullptr);
  REQUIRE(s12->data.size() == 16);
  for (std::size_t i = 0; i < 16; ++i) CHECK(s12->data[i] == std::byte(16 + 32 + i));
}

TEST_CASE("cli: a sharded checkpoint by URL names the shard that is missing or bad",
          "[cli][safetensors][http][sharded][corrupt]") {
  testing::NginxServer nginx;
  WriteCheckpoint(nginx.www() + "/ck");
  const std::string url = nginx.Url("/ck/model.safetensors.index.json");
  const std::string third = nginx.www() + "/ck/" + kShards[2];
  auto bytes = testing::ReadText(third);
  testing::WriteBytes(third, AsBytes(bytes + "x"));  // trailing bytes
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(url));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("carton safetensors verify: " + url + ": " +
                   nginx.Url("/ck/model-00003-of-00003.safetensors") + ": tensor data ends at") ==
        0);

  std::filesystem::remove(third);
  r = Run(testing::CartonBin() + " safetensors inspect " + Quote(url));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(nginx.Url("/ck/model-00003-of-00003.safetensors")) != std::string::npos);
  CHECK(r.err.find("http status 404") != std::string::npos);
}
