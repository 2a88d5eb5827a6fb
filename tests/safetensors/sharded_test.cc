// ShardedFile: a valid two-shard checkpoint is exposed as one set of
// tensors; each rule of the index is broken once and must be rejected with
// its code and a message naming the tensor, shard or key.
#include "carton/safetensors/sharded.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "carton/safetensors/writer.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;
using carton::testing::TempDir;

namespace {

constexpr char kShard1[] = "model-00001-of-00002.safetensors";
constexpr char kShard2[] = "model-00002-of-00002.safetensors";

// Writes a shard holding 4-byte U8 tensors named `names`; each tensor's
// bytes are its name's first letter repeated.
void WriteShard(const std::string& path, const std::vector<std::string>& names) {
  // Reserved up front: the sources borrow from these strings.
  std::vector<std::string> storage;
  storage.reserve(names.size());
  std::vector<TensorSource> tensors;
  for (const auto& n : names) {
    storage.push_back(std::string(4, n[0]));
    tensors.push_back({n, Dtype::kU8, {4}, AsBytes(storage.back()), {}});
  }
  Status s = WriteFile(path, tensors);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// The valid set: shard 1 holds "a" and "b", shard 2 holds "c".
void WriteValidShards(const TempDir& dir) {
  WriteShard(dir.file(kShard1), {"a", "b"});
  WriteShard(dir.file(kShard2), {"c"});
}

std::string IndexWith(const std::string& weight_map) {
  return R"({"metadata": {"total_size": 12, "format": "pt"}, "weight_map": )" + weight_map + "}";
}

const std::string kValidWeightMap = std::string(R"({"a": ")") + kShard1 + R"(", "b": ")" + kShard1 +
                                    R"(", "c": ")" + kShard2 + R"("})";

Status OpenIndex(const TempDir& dir, const std::string& index_text) {
  std::string path = dir.file("model.safetensors.index.json");
  testing::WriteBytes(path, AsBytes(index_text));
  auto f = ShardedFile::Open(path);
  return f.ok() ? Status::Ok() : f.status();
}

void RequireError(const Status& s, StatusCode code, std::string_view substring) {
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == code);
  CHECK(s.message().find(substring) != std::string::npos);
}

}  // namespace

TEST_CASE("safetensors sharded: opens a valid two-shard checkpoint", "[safetensors][sharded]") {
  TempDir dir;
  WriteValidShards(dir);
  std::string index = dir.file("model.safetensors.index.json");
  testing::WriteBytes(index, AsBytes(IndexWith(kValidWeightMap)));

  auto opened = ShardedFile::Open(index);
  INFO(opened.status().ToString());
  REQUIRE(opened.ok());
  ShardedFile f = std::move(opened).value();  // views must survive the move

  CHECK(f.size() == 3);
  CHECK(f.Names() == std::vector<std::string_view>{"a", "b", "c"});
  REQUIRE(f.shards().size() == 2);
  CHECK(f.shards()[0] == dir.file(kShard1));
  CHECK(f.shards()[1] == dir.file(kShard2));
  CHECK(f.shard(1).source() == dir.file(kShard2));
  CHECK(f.ShardOf("a") == 0u);
  CHECK(f.ShardOf("c") == 1u);
  CHECK_FALSE(f.ShardOf("d").has_value());

  const TensorView* c = f.Find("c");
  REQUIRE(c != nullptr);
  CHECK(c->dtype == Dtype::kU8);
  CHECK(AsChars(c->data) == "cccc");
  auto b = f.Get("b");
  REQUIRE(b.ok());
  CHECK(AsChars(b->data) == "bbbb");
  CHECK(f.Find("d") == nullptr);
  RequireError(f.Get("d").status(), StatusCode::kNotFound, "no tensor named \"d\"");

  CHECK(f.metadata_json() == R"({"format":"pt","total_size":12})");
  CHECK(f.total_size() == 12u);
  CHECK(f.index_path() == index);
}

TEST_CASE("safetensors sharded: accepts shards in a subdirectory and no metadata",
          "[safetensors][sharded]") {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "sub");
  WriteShard(dir.file("sub/x.safetensors"), {"x"});
  std::string index = dir.file("index.json");
  testing::WriteBytes(index, AsBytes(R"({"weight_map": {"x": "sub/x.safetensors"}})"));
  auto f = ShardedFile::Open(index);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  CHECK(f->size() == 1);
  CHECK(f->metadata_json() == "{}");
  CHECK_FALSE(f->total_size().has_value());
}

TEST_CASE("safetensors sharded: an empty weight_map is an empty set", "[safetensors][sharded]") {
  TempDir dir;
  std::string index = dir.file("index.json");
  testing::WriteBytes(index, AsBytes(R"({"metadata": {}, "weight_map": {}})"));
  auto f = ShardedFile::Open(index);
  REQUIRE(f.ok());
  CHECK(f->size() == 0);
  CHECK(f->shards().empty());
}

TEST_CASE("safetensors sharded: rejects a tensor missing from its shard",
          "[safetensors][sharded][corrupt]") {
  TempDir dir;
  WriteValidShards(dir);
  std::string wm = std::string(R"({"a": ")") + kShard1 + R"(", "b": ")" + kShard1 + R"(", "c": ")" +
                   kShard2 + R"(", "d": ")" + kShard2 + R"("})";
  RequireError(OpenIndex(dir, IndexWith(wm)), StatusCode::kCorrupt,
               std::string("tensor \"d\" mapped to shard \"") + kShard2 + "\" is not in it");
}

TEST_CASE("safetensors sharded: rejects a tensor mapped to the wrong shard",
          "[safetensors][sharded][corrupt]") {
  TempDir dir;
  WriteValidShards(dir);
  std::string wm = std::string(R"({"a": ")") + kShard1 + R"(", "b": ")" + kShard2 + R"(", "c": ")" +
                   kShard2 + R"("})";
  RequireError(OpenIndex(dir, IndexWith(wm)), StatusCode::kCorrupt,
               std::string("tensor \"b\" mapped to shard \"") + kShard2 +
                   "\" is not in it (it is in \"" + kShard1 + "\")");
}

TEST_CASE("safetensors sharded: rejects a tensor present in two shards",
          "[safetensors][sharded][corrupt]") {
  TempDir dir;
  WriteShard(dir.file(kShard1), {"a", "b"});
  WriteShard(dir.file(kShard2), {"b", "c"});
  RequireError(OpenIndex(dir, IndexWith(kValidWeightMap)), StatusCode::kCorrupt,
               std::string("tensor \"b\" appears in two shards: \"") + kShard1 + "\" and \"" +
                   kShard2 + "\"");
}

TEST_CASE("safetensors sharded: rejects a shard tensor absent from weight_map",
          "[safetensors][sharded][corrupt]") {
  TempDir dir;
  WriteShard(dir.file(kShard1), {"a", "b"});
  WriteShard(dir.file(kShard2), {"c", "extra"});
  RequireError(OpenIndex(dir, IndexWith(kValidWeightMap)), StatusCode::kCorrupt,
               std::string("tensor \"extra\" in shard \"") + kShard2 + "\" is not in weight_map");
}

TEST_CASE("safetensors sharded: rejects a duplicate key in weight_map",
          "[safetensors][sharded][corrupt]") {
  TempDir dir;
  WriteValidShards(dir);
  std::string wm = std::string(R"({"a": ")") + kShard1 + R"(", "b": ")" + kShard1 + R"(", "c": ")" +
                   kShard2 + R"(", "a": ")" + kShard2 + R"("})";
  RequireError(OpenIndex(dir, IndexWith(wm)), StatusCode::kCorrupt,
               "duplicate key \"a\" in \"weight_map\"");
}

TEST_CASE("safetensors sharded: rejects a malformed index", "[safetensors][sharded][corrupt]") {
  struct Case {
    const char* text;
    const char* message;
  };
  auto c = GENERATE(
      Case{R"({"metadata": {}})", "missing \"weight_map\""},
      Case{R"({"weight_map": ["a"]})", "\"weight_map\" is an array, not an object"},
      Case{R"({"weight_map": {"a": 1}})", "tensor \"a\" maps to a number, not a shard file name"},
      Case{R"({"weight_map": {"a": null}})", "tensor \"a\" maps to a null"},
      Case{R"({"metadata": "x", "weight_map": {}})", "\"metadata\" is a string, not an object"},
      Case{R"(["weight_map"])", "index is an array, not an object"},
      Case{R"({"weight_map": {"a": "s.safetensors",}})", "invalid JSON at byte"},
      Case{R"({"weight_map": {}} x)", "invalid JSON at byte"},
      Case{R"({"metadata": {"k": 1, "k": 2}, "weight_map": {}})",
           "duplicate key \"k\" in \"metadata\""},
      Case{R"({"metadata": {"a":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}, "weight_map": {}})",
           "JSON nested deeper than 16 levels"});
  TempDir dir;
  INFO(c.text);
  RequireError(OpenIndex(dir, c.text), StatusCode::kCorrupt, c.message);
}

TEST_CASE("safetensors sharded: rejects shard names that leave the index directory",
          "[safetensors][sharded][corrupt]") {
  struct Case {
    const char* shard;
    const char* why;
  };
  auto c = GENERATE(Case{"", "is empty"}, Case{"/etc/passwd", "is an absolute path"},
                    Case{"../x.safetensors", "has a \"..\" path component"},
                    Case{"sub/../../x.safetensors", "has a \"..\" path component"},
                    Case{"sub\\\\x.safetensors", "contains a backslash"},
                    Case{"./x.safetensors", "has a \".\" path component"},
                    Case{"sub//x.safetensors", "has an empty path component"},
                    Case{"sub/", "has an empty path component"});
  TempDir dir;
  INFO(c.shard);
  std::string index = R"({"weight_map": {"w": ")" + std::string(c.shard) + R"("}})";
  RequireError(OpenIndex(dir, index), StatusCode::kCorrupt,
               "weight_map: tensor \"w\": shard name \"");
  RequireError(OpenIndex(dir, index), StatusCode::kCorrupt, c.why);
}

TEST_CASE("safetensors sharded: reports a missing or corrupt shard with its path",
          "[safetensors][sharded]") {
  TempDir dir;
  WriteShard(dir.file(kShard1), {"a", "b"});
  RequireError(OpenIndex(dir, IndexWith(kValidWeightMap)), StatusCode::kNotFound,
               dir.file(kShard2));

  testing::WriteBytes(dir.file(kShard2), AsBytes("not a safetensors file"));
  RequireError(OpenIndex(dir, IndexWith(kValidWeightMap)), StatusCode::kCorrupt, dir.file(kShard2));
}

TEST_CASE("safetensors sharded: reports a missing index as not found", "[safetensors][sharded]") {
  TempDir dir;
  auto f = ShardedFile::Open(dir.file("model.safetensors.index.json"));
  RequireError(f.status(), StatusCode::kNotFound, "model.safetensors.index.json");
}
