// One test per reader rule (safetensors/FORMAT.md §Reading): a valid file is
// accepted; the same file damaged in one way is rejected with the expected
// ErrorKind and a message naming the tensor and values.
#include <catch2/catch.hpp>
#include <string>

#include "carton/safetensors/file.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;
using carton::testing::RawSafetensors;

namespace {

// Returns the error kind of parsing `header` followed by `data_size` bytes.
Status Parse(std::string_view header, std::size_t data_size) {
  auto f = File::FromOwnedBuffer(RawSafetensors(header, data_size));
  return f.ok() ? Status::Ok() : f.status();
}

void RequireKind(const Status& s, ErrorKind kind, std::string_view substring) {
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(KindOf(s) == kind);
  CHECK(s.message().find(substring) != std::string::npos);
}

const char kValid[] = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"I8","shape":[3],"data_offsets":[8,11]}})";

}  // namespace

TEST_CASE("safetensors: accepts a valid file and exposes views", "[safetensors][reader]") {
  auto bytes = RawSafetensors(kValid, 11);
  auto f = File::FromBuffer(bytes);
  REQUIRE(f.ok());
  REQUIRE(f->size() == 2);
  CHECK(f->tensors()[0].name == "a");
  CHECK(f->tensors()[1].name == "b");
  auto b = f->Get("b");
  REQUIRE(b.ok());
  CHECK(b->dtype == Dtype::kI8);
  CHECK(b->shape.size() == 1);
  CHECK(b->shape[0] == 3);
  CHECK(b->data.size() == 3);
  CHECK(b->data.data() == bytes.data() + f->data_start() + 8);
  CHECK(f->Find("zzz") == nullptr);
  auto missing = f->Get("zzz");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_FALSE(f->has_metadata());
}

TEST_CASE("safetensors: tensors come in data order, names sorted", "[safetensors][reader]") {
  auto f = File::FromOwnedBuffer(
      RawSafetensors(R"({"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                     R"("a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                     3));
  REQUIRE(f.ok());
  CHECK(f->tensors()[0].name == "z");
  CHECK(f->tensors()[1].name == "a");
  auto names = f->Names();
  CHECK(names == std::vector<std::string_view>{"a", "z"});
}

TEST_CASE("safetensors: rejects a file shorter than 8 bytes", "[safetensors][reader][corrupt]") {
  std::vector<std::byte> tiny(7);
  auto f = File::FromBuffer(tiny);
  RequireKind(f.status(), ErrorKind::kFileTooSmall, "7 bytes");
}

TEST_CASE("safetensors: rejects a header length over the limit before allocating",
          "[safetensors][reader][corrupt]") {
  std::vector<std::byte> b(16);
  StoreLE64(b.data(), 1ull << 63);
  RequireKind(File::FromBuffer(b).status(), ErrorKind::kHeaderTooLarge, "9223372036854775808");
  StoreLE64(b.data(), kMaxHeaderSize + 1);
  RequireKind(File::FromBuffer(b).status(), ErrorKind::kHeaderTooLarge, "100000001");
  ReaderOptions small;
  small.max_header_size = 4;
  auto ok = RawSafetensors("{}", 0);
  CHECK(File::FromBuffer(ok, small).ok());
  auto big = RawSafetensors("{}   ", 0);
  RequireKind(File::FromBuffer(big, small).status(), ErrorKind::kHeaderTooLarge, "limit of 4");
}

TEST_CASE("safetensors: rejects a header running past the end", "[safetensors][reader][corrupt]") {
  auto b = RawSafetensors("{}", 0);
  StoreLE64(b.data(), 3);
  RequireKind(File::FromBuffer(b).status(), ErrorKind::kHeaderPastEnd, "header length 3");
}

TEST_CASE("safetensors: accepts an empty object header", "[safetensors][reader]") {
  CHECK(Parse("{}", 0).ok());
  CHECK(Parse("{}      ", 0).ok());
}

TEST_CASE("safetensors: header must start with a brace", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(" {}", 0), ErrorKind::kHeaderNoBrace, "'{'");
  RequireKind(Parse("", 0), ErrorKind::kHeaderNoBrace, "'{'");
  RequireKind(Parse("[]", 0), ErrorKind::kHeaderNoBrace, "'{'");
}

TEST_CASE("safetensors: header must be UTF-8", "[safetensors][reader][corrupt]") {
  CHECK(Parse("{\"__metadata__\":{\"k\":\"\xc3\xa9\"}}", 0).ok());
  RequireKind(Parse("{\"__metadata__\":{\"k\":\"\xc3\x28\"}}", 0), ErrorKind::kHeaderNotUtf8,
              "UTF-8");
}

TEST_CASE("safetensors: rejects invalid JSON with a byte offset",
          "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"F32",}})", 0), ErrorKind::kInvalidJson, "at byte");
  RequireKind(Parse(R"({"a")", 0), ErrorKind::kInvalidJson, "invalid");
}

TEST_CASE("safetensors: only spaces may follow the object", "[safetensors][reader][corrupt]") {
  CHECK(Parse("{}  ", 0).ok());
  RequireKind(Parse("{}\n", 0), ErrorKind::kTrailingBytes, "space padding");
  RequireKind(Parse("{} x", 0), ErrorKind::kTrailingBytes, "");
  RequireKind(Parse("{}{}", 0), ErrorKind::kTrailingBytes, "");
}

TEST_CASE("safetensors: rejects duplicate tensor names", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                    R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                    2),
              ErrorKind::kDuplicateKey, "\"a\"");
}

TEST_CASE("safetensors: rejects duplicate fields in an entry", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", 1),
              ErrorKind::kDuplicateKey, "tensor \"a\": duplicate key \"dtype\"");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"x":1,"x":2,"data_offsets":[0,1]}})", 1),
              ErrorKind::kDuplicateKey, "\"x\"");
  RequireKind(
      Parse(R"({"a":{"dtype":"U8","shape":[1],"x":{"y":1,"y":2},"data_offsets":[0,1]}})", 1),
      ErrorKind::kDuplicateKey, "\"y\"");
}

TEST_CASE("safetensors: ignores unknown fields in an entry", "[safetensors][reader]") {
  CHECK(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":[1,{"z":2}]}})", 1)
            .ok());
}

TEST_CASE("safetensors: rejects duplicate metadata keys", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"__metadata__":{"k":"v","k":"w"}})", 0), ErrorKind::kDuplicateKey,
              "__metadata__: duplicate key \"k\"");
  RequireKind(Parse(R"({"__metadata__":{},"__metadata__":{}})", 0), ErrorKind::kDuplicateKey,
              "__metadata__");
}

TEST_CASE("safetensors: metadata must be an object of strings", "[safetensors][reader][corrupt]") {
  auto f = File::FromOwnedBuffer(RawSafetensors(R"({"__metadata__":{"format":"pt","x":""}})", 0));
  REQUIRE(f.ok());
  CHECK(f->has_metadata());
  CHECK(f->metadata().at("format") == "pt");
  RequireKind(Parse(R"({"__metadata__":{"n":1}})", 0), ErrorKind::kInvalidMetadata,
              "key \"n\": value must be a string, got 1");
  RequireKind(Parse(R"({"__metadata__":["a"]})", 0), ErrorKind::kInvalidMetadata, "object");
  RequireKind(Parse(R"({"__metadata__":{"n":{"a":"b"}}})", 0), ErrorKind::kInvalidMetadata, "");
}

TEST_CASE("safetensors: rejects missing fields", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", 1), ErrorKind::kMissingField,
              "tensor \"a\": missing field \"dtype\"");
  RequireKind(Parse(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", 1), ErrorKind::kMissingField,
              "\"shape\"");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1]}})", 1), ErrorKind::kMissingField,
              "\"data_offsets\"");
}

TEST_CASE("safetensors: rejects mistyped entries and fields", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":[1]})", 0), ErrorKind::kNotAnObject, "entry must be an object");
  RequireKind(Parse(R"({"a":{"dtype":5,"shape":[1],"data_offsets":[0,1]}})", 1),
              ErrorKind::kNotAnObject, "dtype must be a string");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":"1","data_offsets":[0,1]}})", 1),
              ErrorKind::kInvalidShape, "shape must be an array");
}

TEST_CASE("safetensors: rejects an unknown dtype as unsupported", "[safetensors][reader]") {
  Status s = Parse(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16);
  RequireKind(s, ErrorKind::kUnknownDtype, "unknown dtype \"F128\"");
  CHECK(s.code() == StatusCode::kUnsupported);
  RequireKind(Parse(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4),
              ErrorKind::kUnknownDtype, "\"f32\"");
}

TEST_CASE("safetensors: rejects negative, fractional and huge dimensions",
          "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0),
              ErrorKind::kInvalidShape, "dimension 0 is -1");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1,2.0],"data_offsets":[0,2]}})", 2),
              ErrorKind::kInvalidShape, "dimension 1 is 2.0");
  RequireKind(
      Parse(R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})", 0),
      ErrorKind::kInvalidShape, "9223372036854775808");
  RequireKind(
      Parse(R"({"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}})", 0),
      ErrorKind::kInvalidShape, "tensor \"a\"");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[null],"data_offsets":[0,0]}})", 0),
              ErrorKind::kInvalidShape, "null");
}

TEST_CASE("safetensors: data_offsets must be two ordered non-negative integers",
          "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
              ErrorKind::kInvalidOffsets, "two non-negative integers");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1),
              ErrorKind::kInvalidOffsets, "[0,1,2]");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 1),
              ErrorKind::kInvalidOffsets, "");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.5]}})", 1),
              ErrorKind::kInvalidOffsets, "");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":{"b":0}}})", 1),
              ErrorKind::kInvalidOffsets, "");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}})", 1),
              ErrorKind::kInvalidOffsets, "end before begin");
}

TEST_CASE("safetensors: byte length must match shape and dtype", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12),
              ErrorKind::kSizeMismatch,
              "tensor \"w\": data_offsets [0, 12] but F32 [2, 2] needs 16 bytes");
}

TEST_CASE("safetensors: tensor names from the header are escaped in messages",
          "[safetensors][reader][corrupt]") {
  // JSON escapes give the name raw control bytes: ESC [31m, a newline, and
  // the C1 CSI (U+009B); none may reach a terminal as they are.
  const Status s =
      Parse(R"({"a\u001b[31m\n\u009b2J\"":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4);
  RequireKind(s, ErrorKind::kSizeMismatch,
              "tensor \"a\\x1b[31m\\x0a\\xc2\\x9b2J\\\"\": data_offsets [0, 4]");
  CHECK(s.message().find('\x1b') == std::string::npos);
  CHECK(s.message().find('\n') == std::string::npos);
}

TEST_CASE("safetensors: rejects hostile shapes whose size overflows",
          "[safetensors][reader][corrupt]") {
  RequireKind(
      Parse(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,16]}})", 16),
      ErrorKind::kNumelOverflow, "beyond 2^64");
  RequireKind(
      Parse(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0),
      ErrorKind::kNumelOverflow, "");
}

TEST_CASE("safetensors: sub-byte tensors must fill whole bytes", "[safetensors][reader]") {
  CHECK(Parse(R"({"q":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", 2).ok());
  CHECK(Parse(R"({"q":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}})", 3).ok());
  RequireKind(Parse(R"({"q":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2),
              ErrorKind::kPartialByte, "12 bits");
  RequireKind(Parse(R"({"q":{"dtype":"F6_E3M2","shape":[2],"data_offsets":[0,2]}})", 2),
              ErrorKind::kPartialByte, "");
}

TEST_CASE("safetensors: offsets must start at 0 without holes", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2),
              ErrorKind::kDataGap, "tensor \"a\": data_offsets [1, 2] leave a hole");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                    R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                    3),
              ErrorKind::kDataGap, "tensor \"b\"");
}

TEST_CASE("safetensors: offsets must not overlap", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                    R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                    3),
              ErrorKind::kDataOverlap, "tensor \"b\"");
  // The same range claimed twice.
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                    R"("b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                    2),
              ErrorKind::kDataOverlap, "");
}

TEST_CASE("safetensors: data must end at the end of the file", "[safetensors][reader][corrupt]") {
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 2),
              ErrorKind::kDataEndMismatch, "ends at 1 but the data section is 2 bytes");
  RequireKind(Parse(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 3),
              ErrorKind::kDataEndMismatch, "");
}

TEST_CASE("safetensors: accepts empty and 0-rank tensors", "[safetensors][reader]") {
  auto f = File::FromOwnedBuffer(
      RawSafetensors(R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},)"
                     R"("s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})",
                     8));
  REQUIRE(f.ok());
  CHECK(f->Find("e")->data.empty());
  CHECK(f->Find("e")->numel() == 0);
  CHECK(f->Find("s")->shape.empty());
  CHECK(f->Find("s")->numel() == 1);
  CHECK(f->Find("s")->data.size() == 8);
}

TEST_CASE("safetensors: rejects JSON nested beyond the depth limit",
          "[safetensors][reader][corrupt]") {
  std::string deep = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":)";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  deep += "}}";
  RequireKind(Parse(deep, 1), ErrorKind::kTooDeep, "deeper than 16");
}

TEST_CASE("safetensors: root must be an object", "[safetensors][reader][corrupt]") {
  // Starts with '{' but is not one JSON object.
  RequireKind(Parse("{", 0), ErrorKind::kInvalidJson, "");
}

TEST_CASE("safetensors: Open maps a file and names it in errors", "[safetensors][reader]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("ok.safetensors"), RawSafetensors(kValid, 11));
  auto f = File::Open(dir.file("ok.safetensors"));
  REQUIRE(f.ok());
  CHECK(f->size() == 2);
  File moved = std::move(f).value();
  CHECK(moved.Find("a")->data.size() == 8);  // views survive a move

  testing::WriteBytes(dir.file("bad.safetensors"), RawSafetensors(kValid, 12));
  auto bad = File::Open(dir.file("bad.safetensors"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find(dir.file("bad.safetensors") + ": ") == 0);

  auto missing = File::Open(dir.file("none.safetensors"));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  testing::WriteBytes(dir.file("empty"), {});
  CHECK(KindOf(File::Open(dir.file("empty")).status()) == ErrorKind::kFileTooSmall);
}

TEST_CASE("safetensors: Populate maps a file's tensors ahead of reading", "[safetensors][reader]") {
  testing::TempDir dir;
  std::string path = dir.file("p.safetensors");
  testing::WriteBytes(path, RawSafetensors(kValid, 11, std::byte{7}));
  auto f = File::Open(path);
  REQUIRE(f.ok());
  CHECK(f->Populate().ok());
  CHECK(f->Populate(*f->Find("b")).ok());
  CHECK(f->Find("b")->data[2] == std::byte{7});
  // Buffers have nothing to populate.
  auto b = File::FromOwnedBuffer(RawSafetensors(kValid, 11));
  CHECK(b->Populate().ok());
}

TEST_CASE("safetensors: ReadInto copies a tensor's bytes", "[safetensors][reader]") {
  testing::TempDir dir;
  std::string path = dir.file("r.safetensors");
  auto bytes = RawSafetensors(kValid, 11);
  for (std::size_t i = 0; i < 11; ++i) bytes[bytes.size() - 11 + i] = std::byte(i + 1);
  testing::WriteBytes(path, bytes);
  for (bool mapped : {true, false}) {
    auto f = mapped ? File::Open(path) : File::FromBuffer(bytes);
    REQUIRE(f.ok());
    const TensorView& b = *f->Find("b");
    std::vector<std::byte> out(3);
    REQUIRE(f->ReadInto(b, out).ok());
    CHECK(out == std::vector<std::byte>{std::byte{9}, std::byte{10}, std::byte{11}});
    std::vector<std::byte> wrong(2);
    Status s = f->ReadInto(b, wrong);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("buffer of 2 bytes for 3") != std::string::npos);
  }
  // A view from another file is refused.
  auto other = File::FromOwnedBuffer(RawSafetensors(kValid, 11));
  auto f = File::Open(path);
  std::vector<std::byte> out(3);
  CHECK(f->ReadInto(*other->Find("b"), out).code() == StatusCode::kInvalidArgument);
}
