#include "safetensors/load_testing.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>

#include "carton/safetensors/file.h"
#include "carton/safetensors/sharded.h"
#include "carton/safetensors/writer.h"

namespace carton::safetensors::testing {
namespace {

// Shapes with whole bytes for every dtype: F4 16 elements (8 bytes), F6 16
// (12 bytes).
std::vector<std::uint64_t> ShapeFor(Dtype d) {
  if (DtypeBits(d) < 8) return {2, 8};
  return {3, 5};
}

struct Built {
  std::vector<std::string> storage;
  std::vector<TensorSource> tensors;
};

Built EveryDtype(std::uint64_t seed) {
  Built b;
  b.storage.reserve(AllDtypes().size() + 4);
  auto add = [&](std::string name, Dtype d, std::vector<std::uint64_t> shape) {
    const std::uint64_t bytes = *ByteSize(d, *CheckedNumel(shape));
    b.storage.push_back(carton::testing::Noise(bytes, seed++));
    b.tensors.push_back({std::move(name), d, std::move(shape), AsBytes(b.storage.back()), {}});
  };
  for (Dtype d : AllDtypes()) add(std::string(DtypeName(d)), d, ShapeFor(d));
  add("scalar", Dtype::kF64, {});
  add("empty", Dtype::kF32, {0, 3});
  add("matrix", Dtype::kF32, {64, 48});
  add("cube", Dtype::kBF16, {6, 10, 12});
  return b;
}

void Write(const std::string& path, const std::vector<TensorSource>& tensors) {
  Status s = WriteFile(path, tensors);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

class FailingSource : public RandomAccessSource {
 public:
  FailingSource(std::shared_ptr<const RandomAccessSource> inner, int fail_at)
      : inner_(std::move(inner)), fail_at_(fail_at) {}
  std::uint64_t size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    if (++reads_ == fail_at_) return IoError(name() + ": read failed: Input/output error");
    return inner_->ReadAt(offset, out);
  }

 private:
  std::shared_ptr<const RandomAccessSource> inner_;
  int fail_at_;
  mutable std::atomic<int> reads_{0};
};

}  // namespace

SourceOpener FailingOpener(int fail_at) {
  return [fail_at](const std::string& p) -> Result<std::shared_ptr<const RandomAccessSource>> {
    CARTON_ASSIGN_OR_RETURN(auto inner, OpenPreadFile(p));
    return std::shared_ptr<const RandomAccessSource>(
        std::make_shared<FailingSource>(std::move(inner), fail_at));
  };
}

void WriteEveryDtype(const std::string& path, std::uint64_t seed) {
  Built b = EveryDtype(seed);
  Write(path, b.tensors);
}

std::string WriteShards(const TempDir& dir) {
  Built b = EveryDtype(7);
  std::vector<TensorSource> one, two;
  std::string weight_map;
  for (const TensorSource& t : b.tensors) {
    const bool first = t.name < "F";
    (first ? one : two).push_back(t);
    const char* shard =
        first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    weight_map += (weight_map.empty() ? "\"" : ", \"") + t.name + "\": \"" + shard + "\"";
  }
  Write(dir.file("model-00001-of-00002.safetensors"), one);
  Write(dir.file("model-00002-of-00002.safetensors"), two);
  const std::string index = dir.file("model.safetensors.index.json");
  carton::testing::WriteBytes(index,
                              AsBytes("{\"metadata\": {}, \"weight_map\": {" + weight_map + "}}"));
  return index;
}

std::vector<std::byte> MappedBytes(const std::string& path, const std::string& name,
                                   const std::string& slice) {
  TensorView view;
  std::optional<File> file;
  std::optional<ShardedFile> sharded;
  if (path.size() > 5 && path.substr(path.size() - 5) == ".json") {
    auto s = ShardedFile::Open(path);
    REQUIRE(s.ok());
    sharded.emplace(std::move(*s));
    view = sharded->Get(name).value();
  } else {
    auto f = File::Open(path);
    REQUIRE(f.ok());
    file.emplace(std::move(*f));
    view = file->Get(name).value();
  }
  if (slice.empty()) return {view.data.begin(), view.data.end()};
  auto indices = ParseSlice(slice);
  REQUIRE(indices.ok());
  auto t = ReadSlice(view, *indices);
  REQUIRE(t.ok());
  return t->data;
}

void CheckAgainstMapped(const LoadedTensors& loaded, const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& slices) {
  std::map<std::string, std::string> slice_of(slices.begin(), slices.end());
  REQUIRE(!loaded.tensors().empty());
  const std::uint64_t base = loaded.tensors()[0].address - loaded.tensors()[0].offset;
  CHECK(base % kLoadAlignment == 0);
  for (const LoadedTensor& t : loaded.tensors()) {
    INFO("tensor " << t.name << " [" << slice_of[t.name] << "] from " << t.file);
    CHECK(t.offset % kLoadAlignment == 0);
    CHECK(t.address == base + t.offset);
    CHECK(t.offset + t.byte_size <= loaded.allocation_size());
    auto bytes = loaded.CopyToHost(t);
    REQUIRE(bytes.ok());
    const std::vector<std::byte> expected = MappedBytes(path, t.name, slice_of[t.name]);
    CHECK(bytes->size() == t.byte_size);
    CHECK(*bytes == expected);
  }
}

LoadRequest RequestOf(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& names) {
  LoadRequest r;
  r.paths = {path};
  r.tensors.emplace();
  for (const auto& [name, slice] : names) {
    auto indices = ParseSlice(slice);
    REQUIRE(indices.ok());
    r.tensors->push_back({name, *indices});
  }
  return r;
}

std::string UseFakeCuda(const TempDir& dir) {
  ::setenv("CARTON_LIBCUDA", CARTON_FAKE_CUDA, 1);
  const std::string log = dir.file("driver.log");
  ::setenv("FAKE_CUDA_LOG", log.c_str(), 1);
  return log;
}

DriverLog ReadDriverLog(const std::string& path) {
  DriverLog log;
  std::ifstream in(path);
  std::string what;
  std::size_t size = 0;
  while (in >> what >> size) {
    if (what == "alloc") ++log.alloc;
    if (what == "free") ++log.free;
    if (what == "hostalloc") ++log.hostalloc;
    if (what == "hostfree") ++log.hostfree;
  }
  return log;
}

}  // namespace carton::safetensors::testing
