// File::OpenSource: the same validation over a RandomAccessSource (here an
// in-memory one that counts and can fail its reads) as over a buffer, with
// at most two reads for the header, and tensor bytes read by range.
#include <catch2/catch.hpp>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "carton/common/random_access.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/writer.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;
using carton::testing::RawSafetensors;

namespace {

constexpr char kName[] = "mem://model.safetensors";

class MemorySource final : public RandomAccessSource {
 public:
  explicit MemorySource(std::vector<std::byte> bytes) : bytes_(std::move(bytes)), name_(kName) {}

  std::uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    reads_.emplace_back(offset, out.size());
    if (fail_from_ != 0 && reads_.size() >= fail_from_) {
      return IoError(name_ + ": read failed (injected)");
    }
    if (!InBounds(offset, out.size(), bytes_.size())) {
      return InvalidArgument(name_ + ": read past the end");
    }
    std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
    return Status::Ok();
  }

  // Reads made so far: (offset, size).
  std::vector<std::pair<std::uint64_t, std::size_t>> reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }
  // Read number `n` (1-based) and every later one fail.
  void FailFrom(std::size_t n) { fail_from_ = n; }

 private:
  std::vector<std::byte> bytes_;
  std::string name_;
  std::size_t fail_from_ = 0;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<std::uint64_t, std::size_t>> reads_;
};

Result<File> OpenMemory(std::vector<std::byte> bytes, std::shared_ptr<MemorySource>* keep = nullptr,
                        const ReaderOptions& options = {}) {
  auto source = std::make_shared<MemorySource>(std::move(bytes));
  if (keep) *keep = source;
  return File::OpenSource(source, options);
}

// A file of `n` U8 tensors "t0", "t1", ... of 3 bytes each, byte i of
// tensor k being k + i.
std::vector<std::byte> ManyTensors(int n) {
  std::vector<std::vector<std::byte>> data(n);
  std::vector<TensorSource> ts;
  for (int k = 0; k < n; ++k) {
    data[k] = {std::byte(k), std::byte(k + 1), std::byte(k + 2)};
    ts.push_back({"t" + std::to_string(k), Dtype::kU8, {3}, data[k], {}});
  }
  auto bytes = Serialize(ts, {{"format", "pt"}});
  REQUIRE(bytes.ok());
  return *bytes;
}

// The same message, but for the name of the input it names first.
std::string WithoutSource(const Status& s, std::string_view source) {
  std::string m = s.message();
  if (m.rfind(std::string(source) + ": ", 0) == 0) m.erase(0, source.size() + 2);
  return m;
}

// OpenSource and FromBuffer agree on `bytes`: both accept it with the same
// tensors, or both reject it with the same code, kind and message.
void RequireSameAsBuffer(const std::vector<std::byte>& bytes) {
  auto from_buffer = File::FromBuffer(bytes);
  auto from_source = OpenMemory(bytes);
  INFO(from_buffer.status().ToString());
  INFO(from_source.status().ToString());
  REQUIRE(from_buffer.ok() == from_source.ok());
  if (!from_buffer.ok()) {
    CHECK(from_buffer.status().code() == from_source.status().code());
    CHECK(from_buffer.status().detail() == from_source.status().detail());
    CHECK(WithoutSource(from_buffer.status(), "<buffer>") ==
          WithoutSource(from_source.status(), kName));
    return;
  }
  REQUIRE(from_buffer->size() == from_source->size());
  for (std::size_t i = 0; i < from_buffer->size(); ++i) {
    const TensorView& a = from_buffer->tensors()[i];
    const TensorView& b = from_source->tensors()[i];
    CHECK(a.name == b.name);
    CHECK(a.dtype == b.dtype);
    CHECK(std::vector<std::uint64_t>(a.shape.begin(), a.shape.end()) ==
          std::vector<std::uint64_t>(b.shape.begin(), b.shape.end()));
    CHECK(a.data_offset == b.data_offset);
    CHECK(a.data.size() == b.byte_size());
  }
  CHECK(from_buffer->metadata() == from_source->metadata());
}

}  // namespace

TEST_CASE("safetensors source: opens a file with one read and reads tensors by range",
          "[safetensors][source]") {
  std::shared_ptr<MemorySource> source;
  auto opened = OpenMemory(ManyTensors(4), &source);
  INFO(opened.status().ToString());
  REQUIRE(opened.ok());
  File f = std::move(opened).value();  // views survive the move
  REQUIRE(source->reads().size() == 1);
  CHECK(source->reads()[0] == std::pair<std::uint64_t, std::size_t>{0, source->size()});

  CHECK(f.source() == kName);
  CHECK_FALSE(f.data_in_memory());
  CHECK(f.bytes().empty());
  CHECK(f.file_size() == source->size());
  CHECK(f.size() == 4);
  CHECK(f.metadata().at("format") == "pt");
  const TensorView* t2 = f.Find("t2");
  REQUIRE(t2 != nullptr);
  CHECK(t2->data.empty());
  CHECK(t2->byte_size() == 3);
  CHECK(t2->data_offset == 6);

  std::vector<std::byte> out(3);
  REQUIRE(f.ReadInto(*t2, out).ok());
  CHECK(out == std::vector<std::byte>{std::byte{2}, std::byte{3}, std::byte{4}});
  REQUIRE(source->reads().size() == 2);
  CHECK(source->reads()[1] == std::pair<std::uint64_t, std::size_t>{f.data_start() + 6, 3});

  std::vector<std::byte> tail(2);
  REQUIRE(f.ReadRange(*t2, 1, tail).ok());
  CHECK(tail == std::vector<std::byte>{std::byte{3}, std::byte{4}});

  auto t3 = f.ReadTensor("t3");
  REQUIRE(t3.ok());
  CHECK(t3->name == "t3");
  CHECK(t3->shape == std::vector<std::uint64_t>{3});
  CHECK(t3->data == std::vector<std::byte>{std::byte{3}, std::byte{4}, std::byte{5}});
  CHECK(f.ReadTensor("nope").status().code() == StatusCode::kNotFound);
}

TEST_CASE("safetensors source: a header longer than the first read takes exactly two reads",
          "[safetensors][source]") {
  std::shared_ptr<MemorySource> source;
  auto bytes = ManyTensors(3000);
  const std::uint64_t header_end = 8 + LoadLE64(bytes.data());
  REQUIRE(header_end > kHeaderProbeSize);
  auto f = OpenMemory(bytes, &source);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  CHECK(f->size() == 3000);
  auto reads = source->reads();
  REQUIRE(reads.size() == 2);
  CHECK(reads[0] == std::pair<std::uint64_t, std::size_t>{0, kHeaderProbeSize});
  CHECK(reads[1] ==
        std::pair<std::uint64_t, std::size_t>{kHeaderProbeSize, header_end - kHeaderProbeSize});
  RequireSameAsBuffer(bytes);
}

TEST_CASE("safetensors source: every reader rule rejects as it does for a buffer",
          "[safetensors][source][corrupt]") {
  struct Case {
    const char* header;
    std::size_t data;
    ErrorKind kind;
  };
  auto c = GENERATE(
      Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, ErrorKind::kNone},
      Case{R"( {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8,
           ErrorKind::kHeaderNoBrace},
      Case{"{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
           ErrorKind::kHeaderNotUtf8},
      Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8, ErrorKind::kInvalidJson},
      Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}x)", 8,
           ErrorKind::kTrailingBytes},
      Case{
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
          16, ErrorKind::kDuplicateKey},
      Case{R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8,
           ErrorKind::kDuplicateKey},
      Case{
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}})",
          8, ErrorKind::kTooDeep},
      Case{R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8, ErrorKind::kMissingField},
      Case{R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", 8,
           ErrorKind::kUnknownDtype},
      Case{R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
           ErrorKind::kInvalidShape},
      Case{R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8,
           ErrorKind::kInvalidShape},
      Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}})", 8,
           ErrorKind::kInvalidOffsets},
      Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8,
           ErrorKind::kInvalidOffsets},
      Case{R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
           ErrorKind::kNumelOverflow},
      Case{R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", 1, ErrorKind::kPartialByte},
      Case{R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", 12,
           ErrorKind::kSizeMismatch},
      Case{R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", 3, ErrorKind::kDataGap},
      Case{
          R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
          3, ErrorKind::kDataOverlap},
      Case{R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 5,
           ErrorKind::kDataEndMismatch},
      Case{R"({"__metadata__":{"k":1},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 2,
           ErrorKind::kInvalidMetadata});
  INFO(c.header);
  auto bytes = RawSafetensors(c.header, c.data);
  auto f = OpenMemory(bytes);
  if (c.kind == ErrorKind::kNone) {
    CHECK(f.ok());
  } else {
    REQUIRE_FALSE(f.ok());
    CHECK(KindOf(f.status()) == c.kind);
    CHECK(f.status().message().rfind(std::string(kName) + ": ", 0) == 0);
  }
  RequireSameAsBuffer(bytes);
}

TEST_CASE("safetensors source: damage anywhere in the header is judged as for a buffer",
          "[safetensors][source][corrupt]") {
  auto valid = ManyTensors(3);
  const std::size_t header_end = 8 + static_cast<std::size_t>(LoadLE64(valid.data()));
  for (std::size_t i = 0; i < header_end; ++i) {
    for (std::byte value : {std::byte{0}, std::byte{'"'}, std::byte{'9'}, std::byte{0xc3}}) {
      auto damaged = valid;
      if (damaged[i] == value) continue;
      damaged[i] = value;
      INFO("byte " << i << " set to " << std::to_integer<int>(value));
      RequireSameAsBuffer(damaged);
    }
  }
  // Truncated anywhere.
  for (std::size_t n = 0; n < valid.size(); ++n) {
    INFO("truncated to " << n);
    RequireSameAsBuffer(std::vector<std::byte>(valid.begin(), valid.begin() + n));
  }
}

TEST_CASE("safetensors source: a hostile length is refused after the first read",
          "[safetensors][source][corrupt]") {
  std::vector<std::byte> bytes(64);
  StoreLE64(bytes.data(), 1ull << 62);
  std::shared_ptr<MemorySource> source;
  auto f = OpenMemory(bytes, &source);
  REQUIRE_FALSE(f.ok());
  CHECK(KindOf(f.status()) == ErrorKind::kHeaderTooLarge);
  CHECK(source->reads().size() == 1);

  StoreLE64(bytes.data(), 1000);  // under the limit, past the end
  f = OpenMemory(bytes, &source);
  REQUIRE_FALSE(f.ok());
  CHECK(KindOf(f.status()) == ErrorKind::kHeaderPastEnd);
  CHECK(f.status().message() ==
        std::string(kName) + ": header length 1000 runs past the end of the 64-byte file");
  CHECK(source->reads().size() == 1);

  f = OpenMemory({std::byte{1}, std::byte{2}}, &source);
  REQUIRE_FALSE(f.ok());
  CHECK(KindOf(f.status()) == ErrorKind::kFileTooSmall);
}

TEST_CASE("safetensors source: a failing source is reported with its error",
          "[safetensors][source]") {
  auto bytes = ManyTensors(3000);  // a header that needs two reads
  for (std::size_t fail_from : {1, 2}) {
    auto source = std::make_shared<MemorySource>(bytes);
    source->FailFrom(fail_from);
    auto f = File::OpenSource(source);
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == StatusCode::kIoError);
    CHECK(f.status().message().find("read failed (injected)") != std::string::npos);
  }
  auto source = std::make_shared<MemorySource>(ManyTensors(2));
  auto f = File::OpenSource(source);
  REQUIRE(f.ok());
  source->FailFrom(2);
  std::vector<std::byte> out(3);
  Status s = f->ReadInto(*f->Find("t1"), out);
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(File::OpenSource(nullptr).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("safetensors source: ReadRange refuses another file's views and out-of-range reads",
          "[safetensors][source]") {
  auto a = OpenMemory(ManyTensors(2));
  auto b = OpenMemory(ManyTensors(2));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<std::byte> out(3), big(4);
  CHECK(a->ReadInto(*b->Find("t1"), out).code() == StatusCode::kInvalidArgument);
  TensorView copy = *a->Find("t1");  // a copy of a's own view is fine
  CHECK(a->ReadInto(copy, out).ok());
  CHECK(a->ReadInto(copy, big).code() == StatusCode::kInvalidArgument);
  Status s = a->ReadRange(copy, 2, std::span(big).first(2));
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("2 bytes at 2 are outside its 3 bytes") != std::string::npos);
  CHECK(a->ReadRange(copy, 3, std::span(big).first(0)).ok());
}

TEST_CASE("safetensors source: a local file source gives the same File as a mapping",
          "[safetensors][source]") {
  testing::TempDir dir;
  std::string path = dir.file("m.safetensors");
  auto bytes = ManyTensors(5);
  testing::WriteBytes(path, bytes);
  auto source = OpenFileSource(path);
  REQUIRE(source.ok());
  auto f = File::OpenSource(std::move(source).value());
  REQUIRE(f.ok());
  CHECK(f->source() == path);
  auto mapped = File::Open(path);
  REQUIRE(mapped.ok());
  for (const TensorView& t : mapped->tensors()) {
    auto copy = f->ReadTensor(t.name);
    REQUIRE(copy.ok());
    CHECK(std::equal(copy->data.begin(), copy->data.end(), t.data.begin(), t.data.end()));
  }
}

TEST_CASE("safetensors: the fast path and the complete validator agree", "[safetensors][reader]") {
  // Valid headers of unusual shape (taken by the complete validator) and of
  // the usual one, and invalid ones: each judged the same both ways.
  auto header = GENERATE(
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
      std::string(R"({"a":{"shape":[2],"data_offsets":[0,8],"dtype":"F32"}})"),
      std::string(R"({ "a" : { "dtype" : "F32" , "shape" : [ 2 ] , "data_offsets" : [0, 8] } })"),
      std::string("{\n\"a\":\t{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}\r\n}"),
      std::string(R"({"a\"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
      std::string(R"({"\u0061":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
      std::string(R"({"a":{"dtype":"F\u0033\u0032","shape":[2],"data_offsets":[0,8]}})"),
      std::string(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":{"x":[1,null]}}})"),
      std::string(
          R"({"__metadata__":{"k\n":"v\"","k2":""},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-0,8]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8e0]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} {})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2] "data_offsets":[0,8]}})"),
      std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{}})"),
      std::string(R"({"__metadata__":{},"__metadata__":{}})"),
      std::string(R"({"__metadata__":{"a":"1","a":"2"}})"), std::string(R"({})"),
      std::string("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}\n"),
      std::string(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[],"data_offsets":[8,9]}})"));
  INFO(header);
  for (std::size_t data : {std::size_t{0}, std::size_t{8}, std::size_t{9}}) {
    auto bytes = RawSafetensors(header, data);
    ReaderOptions complete;
    complete.skip_fast_path = true;
    auto fast = File::FromBuffer(bytes);
    auto slow = File::FromBuffer(bytes, complete);
    INFO(fast.status().ToString());
    INFO(slow.status().ToString());
    REQUIRE(fast.ok() == slow.ok());
    if (!fast.ok()) {
      CHECK(fast.status().message() == slow.status().message());
      continue;
    }
    REQUIRE(fast->size() == slow->size());
    for (std::size_t i = 0; i < fast->size(); ++i) {
      CHECK(fast->tensors()[i].name == slow->tensors()[i].name);
      CHECK(fast->tensors()[i].data.data() == slow->tensors()[i].data.data());
      CHECK(fast->tensors()[i].data.size() == slow->tensors()[i].data.size());
    }
    CHECK(fast->metadata() == slow->metadata());
    RequireSameAsBuffer(bytes);
  }
}
