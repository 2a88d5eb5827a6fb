// Load into host memory: the bytes equal the mapped reader's for every
// dtype, subsets, slices and shards, read straight into the destination and
// through staging buffers; bad requests, bad files, short reads, files
// changed while loading and injected I/O errors give clear errors.
#include "carton/safetensors/load.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "safetensors/load_testing.h"

using namespace carton;
using namespace carton::safetensors;
using namespace carton::safetensors::testing;

namespace {

using Names = std::vector<std::pair<std::string, std::string>>;

// Small pieces and few buffers, so that tensors are split and buffers reused.
LoadOptions Tight(bool staged) {
  LoadOptions o;
  o.threads = 3;
  o.staging_buffer_size = 4096;
  o.staging_buffers = 2;
  o.host_staged = staged;
  return o;
}

Names SliceCases() {
  return {{"matrix", ":, 8:24"},   // columns: one run per row, read together
          {"cube", "1:5, :, 3"},   // an integer index last
          {"BF16", "2"},           // an integer index first: one row
          {"I32", "::2, 1:4"},     // steps
          {"F8_E4M3", "1:, ::3"},  // a step in the last dimension
          {"U8", ":, :"},          // whole
          {"F64", "5:"},           // empty
          {"F4", ""}};             // a sub-byte dtype, whole
}

void RequireError(const Result<LoadedTensors>& r, StatusCode code, std::string_view text) {
  REQUIRE(!r.ok());
  INFO(r.status().ToString());
  CHECK(r.status().code() == code);
  CHECK(r.status().message().find(text) != std::string::npos);
}

}  // namespace

TEST_CASE("load: every dtype reads the bytes the mapped reader reads", "[safetensors][load]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 1);
  for (bool staged : {false, true}) {
    INFO("staged " << staged);
    LoadRequest request;
    request.paths = {path};
    auto loaded = Load(request, Target::Host(), Tight(staged));
    REQUIRE(loaded.ok());
    CHECK(loaded->tensors().size() == AllDtypes().size() + 4);
    CHECK(loaded->target().ToString() == "cpu");
    CheckAgainstMapped(*loaded, path);
    // Default options too (one piece per tensor).
    auto plain = Load(request, Target::Host());
    REQUIRE(plain.ok());
    CheckAgainstMapped(*plain, path);
  }
}

TEST_CASE("load: a chosen subset comes in the order asked", "[safetensors][load]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 2);
  auto loaded = Load(RequestOf(path, {{"matrix", ""}, {"BOOL", ""}, {"scalar", ""}}),
                     Target::Host(), Tight(false));
  INFO(loaded.status().ToString());
  REQUIRE(loaded.ok());
  REQUIRE(loaded->tensors().size() == 3);
  CHECK(loaded->tensors()[0].name == "matrix");
  CHECK(loaded->tensors()[1].name == "BOOL");
  CHECK(loaded->tensors()[2].name == "scalar");
  CHECK(loaded->tensors()[2].shape.empty());
  CHECK(loaded->Find("F32") == nullptr);
  CheckAgainstMapped(*loaded, path);
}

TEST_CASE("load: slices (rows, columns, steps, indices) equal ReadSlice", "[safetensors][load]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 3);
  const Names cases = SliceCases();
  for (bool staged : {false, true}) {
    for (std::size_t buffer : {std::size_t{4096}, std::size_t{32} << 20}) {
      INFO("staged " << staged << " buffer " << buffer);
      LoadOptions options = Tight(staged);
      options.staging_buffer_size = buffer;
      auto loaded = Load(RequestOf(path, cases), Target::Host(), options);
      REQUIRE(loaded.ok());
      CheckAgainstMapped(*loaded, path, cases);
      CHECK(loaded->Find("matrix")->shape == std::vector<std::uint64_t>{64, 16});
      CHECK(loaded->Find("cube")->shape == std::vector<std::uint64_t>{4, 10});
    }
  }
}

TEST_CASE("load: a tensor-parallel rank's rows and columns", "[safetensors][load]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 4);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string rows = std::to_string(16 * rank) + ":" + std::to_string(16 * rank + 16);
    const std::string cols =
        ":, " + std::to_string(12 * rank) + ":" + std::to_string(12 * rank + 12);
    for (const std::string& slice : {rows, cols}) {
      auto loaded = Load(RequestOf(path, {{"matrix", slice}}), Target::Host(), Tight(true));
      REQUIRE(loaded.ok());
      CheckAgainstMapped(*loaded, path, {{"matrix", slice}});
    }
  }
}

TEST_CASE("load: a sharded checkpoint by its index", "[safetensors][load]") {
  TempDir dir;
  const std::string index = WriteShards(dir);
  LoadRequest request;
  request.paths = {index};
  auto loaded = Load(request, Target::Host(), Tight(false));
  REQUIRE(loaded.ok());
  CHECK(loaded->tensors().size() == AllDtypes().size() + 4);
  CHECK(loaded->Find("BOOL")->file == dir.file("model-00001-of-00002.safetensors"));
  CHECK(loaded->Find("U8")->file == dir.file("model-00002-of-00002.safetensors"));
  CheckAgainstMapped(*loaded, index);
  // A subset, sliced, from both shards.
  const Names some = {{"C64", "1:"}, {"matrix", ":, 40:"}};
  auto subset = Load(RequestOf(index, some), Target::Host(), Tight(true));
  REQUIRE(subset.ok());
  CheckAgainstMapped(*subset, index, some);
}

TEST_CASE("load: bad requests are refused", "[safetensors][load][errors]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 5);
  RequireError(Load(RequestOf(path, {{"nope", ""}}), Target::Host()), StatusCode::kNotFound,
               "no tensor named \"nope\" in " + path);
  RequireError(Load(RequestOf(path, {{"U8", ""}, {"U8", "1"}}), Target::Host()),
               StatusCode::kInvalidArgument, "tensor \"U8\" is requested twice");
  RequireError(Load(RequestOf(path, {{"matrix", "::-1"}}), Target::Host()),
               StatusCode::kUnsupported, "negative step");
  RequireError(Load(RequestOf(path, {{"matrix", "70"}}), Target::Host()),
               StatusCode::kInvalidArgument, "matrix");
  RequireError(Load(RequestOf(path, {{"F4", "1"}}), Target::Host()), StatusCode::kUnsupported,
               "F4");
  RequireError(Load(LoadRequest{}, Target::Host()), StatusCode::kInvalidArgument, "no files");
  LoadRequest twice;
  twice.paths = {path, path};
  RequireError(Load(twice, Target::Host()), StatusCode::kInvalidArgument,
               "is in both " + path + " and " + path);
  LoadOptions bad;
  bad.staging_buffer_size = 100;
  RequireError(Load(RequestOf(path, {{"U8", ""}}), Target::Host(), bad),
               StatusCode::kInvalidArgument, "staging_buffer_size");
  LoadRequest missing;
  missing.paths = {dir.file("missing.safetensors")};
  RequireError(Load(missing, Target::Host()), StatusCode::kNotFound, "missing.safetensors");
}

TEST_CASE("load: a sharded checkpoint whose shard is missing is refused",
          "[safetensors][load][errors]") {
  TempDir dir;
  const std::string index = WriteShards(dir);
  std::filesystem::remove(dir.file("model-00002-of-00002.safetensors"));
  LoadRequest request;
  request.paths = {index};
  RequireError(Load(request, Target::Host()), StatusCode::kNotFound,
               "model-00002-of-00002.safetensors");
}

TEST_CASE("load: a corrupt header is refused before any tensor is read",
          "[safetensors][load][errors]") {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  // F32 [2, 2] needs 16 bytes; the offsets give 12.
  carton::testing::WriteBytes(
      path, carton::testing::RawSafetensors(
                R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12));
  LoadRequest request;
  request.paths = {path};
  auto r = Load(request, Target::Host());
  RequireError(r, StatusCode::kCorrupt, path);
  CHECK(KindOf(r.status()) == ErrorKind::kSizeMismatch);
}

TEST_CASE("load: an injected read error fails the load with its message",
          "[safetensors][load][errors]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 6);
  // Read 1 is the header; later ones are tensor pieces.
  for (int fail_at : {1, 2, 5, 20}) {
    for (bool staged : {false, true}) {
      INFO("read " << fail_at << " staged " << staged);
      LoadOptions options = Tight(staged);
      options.open = FailingOpener(fail_at);
      LoadRequest request;
      request.paths = {path};
      RequireError(Load(request, Target::Host(), options), StatusCode::kIoError,
                   path + ": read failed: Input/output error");
    }
  }
}

namespace {

// Opens `path` with the default opener; opening `trigger` (a later file of
// the same request, after `path`'s header was validated) runs `change`.
SourceOpener ChangeBeforeReads(const std::string& trigger, std::function<void()> change) {
  return [=](const std::string& p) {
    if (p == trigger) change();
    return OpenPreadFile(p);
  };
}

void SetOldTime(const std::string& path) {
  struct timespec times[2] = {{1600000000, 0}, {1600000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("load: a file truncated after its header was read is a short read",
          "[safetensors][load][errors]") {
  TempDir dir;
  const std::string a = dir.file("a.safetensors");
  const std::string b = dir.file("b.safetensors");
  WriteEveryDtype(a, 8);
  carton::testing::WriteBytes(
      b, carton::testing::RawSafetensors(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                                         1));
  const auto size = std::filesystem::file_size(a);
  for (bool staged : {false, true}) {
    WriteEveryDtype(a, 8);
    LoadOptions options = Tight(staged);
    options.open = ChangeBeforeReads(b, [&] { REQUIRE(::truncate(a.c_str(), size - 100) == 0); });
    LoadRequest request;
    request.paths = {a, b};
    RequireError(Load(request, Target::Host(), options), StatusCode::kIoError,
                 a + ": short read: the file ends at");
  }
}

TEST_CASE("load: a file rewritten while loading is reported", "[safetensors][load][errors]") {
  TempDir dir;
  const std::string a = dir.file("a.safetensors");
  const std::string b = dir.file("b.safetensors");
  WriteEveryDtype(a, 9);
  SetOldTime(a);
  carton::testing::WriteBytes(
      b, carton::testing::RawSafetensors(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                                         1));
  LoadOptions options;
  options.open = ChangeBeforeReads(b, [&] {
    // Same size, other bytes at the end (tensor data).
    std::fstream f(a, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    f.write("XXXX", 4);
  });
  LoadRequest request;
  request.paths = {a, b};
  RequireError(Load(request, Target::Host(), options), StatusCode::kIoError,
               a + ": changed while loading");
  // Unchanged, the same request loads.
  options.open = nullptr;
  CHECK(Load(request, Target::Host(), options).ok());
}
