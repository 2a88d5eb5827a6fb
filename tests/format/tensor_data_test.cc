#include "carton/format/tensor_data.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "carton/safetensors/file.h"
#include "carton/safetensors/writer.h"
#include "testing.h"

using namespace carton;
using carton::testing::TempDir;

namespace {

void CheckError(const Status& s, StatusCode code, const std::string& substring) {
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK_THAT(s.message(), Catch::Contains(substring));
}

template <typename T>
void CheckError(const Result<T>& r, StatusCode code, const std::string& substring) {
  REQUIRE_FALSE(r.ok());
  CheckError(r.status(), code, substring);
}

template <typename T>
void RequireOk(const Result<T>& r) {
  INFO(r.status().ToString());
  REQUIRE(r.ok());
}

void RequireOk(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// An index holding one [[tensor]] table with the keys in `body`.
std::string OneTensor(const std::string& body) { return "[[tensor]]\n" + body; }

std::vector<std::byte> Iota(std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 7 + 1);
  return out;
}

TensorValue Numeric(std::string name, DataType dtype, std::vector<std::uint64_t> shape) {
  std::uint64_t numel = 1;
  for (auto d : shape) numel *= d;
  TensorValue v;
  v.name = std::move(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = Iota(numel * DataTypeSize(dtype));
  return v;
}

TensorValue Strings(std::string name, std::vector<std::uint64_t> shape,
                    std::vector<std::string> strings) {
  TensorValue v;
  v.name = std::move(name);
  v.dtype = DataType::kString;
  v.shape = std::move(shape);
  v.strings = std::move(strings);
  return v;
}

void CheckSameValue(const TensorValue& a, const TensorValue& b) {
  CHECK(a.dtype == b.dtype);
  CHECK(a.shape == b.shape);
  CHECK(a.data == b.data);
  CHECK(a.strings == b.strings);
}

TensorDataEntry Entry(std::string name, DataType dtype, std::vector<std::uint64_t> shape,
                      std::string file) {
  TensorDataEntry e;
  e.name = std::move(name);
  e.dtype = dtype;
  e.shape = std::move(shape);
  e.file = std::move(file);
  return e;
}

// The spec's example, with the two tensors its nested tensor names (the
// spec elides them with "# ...").
constexpr const char* kSpecExample = R"([[tensor]]
name = "some_string_tensor"
dtype = "string"
shape = [1, 2, 3]
file = "tensor_0.toml"

[[tensor]]
name = "some_numeric_tensor"
dtype = "float32"
shape = [2, 2, 3]
file = "tensor_1.bin"

[[tensor]]
name = "some_nested_tensor"
# Nested/ragged tensors
dtype = "nested"
# Note: The inner tensors must not be nested tensors.
inner = [
"some_other_tensor",
"another_tensor",
]

[[tensor]]
name = "some_other_tensor"
dtype = "int64"
shape = [3]
file = "tensor_2.bin"

[[tensor]]
name = "another_tensor"
dtype = "uint8"
shape = []
file = "tensor_3.bin"
)";

}  // namespace

TEST_CASE("carton tensor_data: the spec's index example parses", "[carton][tensor_data]") {
  Result<TensorDataIndex> r = ParseIndex(kSpecExample);
  RequireOk(r);
  REQUIRE(r->tensors.size() == 5);
  const TensorDataEntry& s = r->tensors[0];
  CHECK(s.name == "some_string_tensor");
  CHECK(s.dtype == DataType::kString);
  CHECK(s.shape == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(s.file == "tensor_0.toml");
  CHECK(s.inner.empty());
  CHECK(r->tensors[1].dtype == DataType::kFloat32);
  const TensorDataEntry& n = r->tensors[2];
  CHECK(n.nested());
  CHECK(n.shape.empty());
  CHECK(n.file.empty());
  CHECK(n.inner == std::vector<std::string>{"some_other_tensor", "another_tensor"});
  CHECK(r->tensors[4].shape.empty());
  CHECK(r->Find("another_tensor") == &r->tensors[4]);
  CHECK(r->Find("missing") == nullptr);
}

TEST_CASE("carton tensor_data: empty indexes", "[carton][tensor_data]") {
  for (const char* text : {"", "tensor = []\n", "# nothing\n", "other = 1\n"}) {
    Result<TensorDataIndex> r = ParseIndex(text);
    RequireOk(r);
    CHECK(r->tensors.empty());
  }
  CHECK(WriteIndex({}) == "tensor = []\n");
}

TEST_CASE("carton tensor_data: index TOML and structure errors carry line:col",
          "[carton][tensor_data][corrupt]") {
  CheckError(ParseIndex("[[tensor]]\nname = \"x\nfile"), StatusCode::kCorrupt,
             "tensor_data/index.toml:2:");
  CheckError(ParseIndex("tensor = 3\n"), StatusCode::kCorrupt,
             "tensor_data/index.toml:1:10: tensor is an integer, not an array of tables");
  CheckError(ParseIndex("tensor = [1]\n"), StatusCode::kCorrupt,
             "tensor_data/index.toml:1:11: tensor[0] is an integer, not a table");
  CheckError(ParseIndex("[tensor]\nname = \"x\"\n"), StatusCode::kCorrupt,
             "tensor is a table, not an array of tables");
  std::string big(kMaxTensorIndexSize + 1, '#');
  CheckError(ParseIndex(big), StatusCode::kCorrupt, "more than the limit");
}

TEST_CASE("carton tensor_data: inline tables and unknown keys are accepted",
          "[carton][tensor_data]") {
  Result<TensorDataIndex> r = ParseIndex(
      "future = true\n"
      "tensor = [{ name = \"x\", dtype = \"int8\", shape = [2], file = \"a.bin\", extra = 1 }]\n");
  RequireOk(r);
  REQUIRE(r->tensors.size() == 1);
  CHECK(r->tensors[0].dtype == DataType::kInt8);
}

TEST_CASE("carton tensor_data: name rules", "[carton][tensor_data][corrupt]") {
  const std::string rest = "dtype = \"int8\"\nshape = [1]\nfile = \"a.bin\"\n";
  CheckError(ParseIndex(OneTensor(rest)), StatusCode::kCorrupt,
             "tensor_data/index.toml:1:1: tensor[0]: missing \"name\"");
  CheckError(ParseIndex(OneTensor("name = 5\n" + rest)), StatusCode::kCorrupt,
             "tensor_data/index.toml:2:8: tensor[0]: name is an integer, not a string");
  CheckError(ParseIndex(OneTensor("name = \"\"\n" + rest)), StatusCode::kCorrupt,
             "tensor_data/index.toml:2:8: tensor[0]: name is empty");
  std::string twice = OneTensor("name = \"x\"\n" + rest) + "\n" +
                      OneTensor("name = \"x\"\ndtype = \"int8\"\nshape = [1]\nfile = \"b.bin\"\n");
  CheckError(ParseIndex(twice), StatusCode::kCorrupt,
             "tensor_data/index.toml:8:8: tensor \"x\": duplicate name (also tensor[0])");
  RequireOk(ParseIndex(OneTensor("name = \"x y/@é\"\n" + rest)));
  // A name from an untrusted carton is escaped in messages (TOML's \u
  // escapes give it raw control bytes).
  CheckError(ParseIndex(OneTensor("name = \"x\\u001b[2J\"\n" + rest) + "\n" +
                        OneTensor("name = \"x\\u001b[2J\"\n" + rest)),
             StatusCode::kCorrupt, "tensor \"x\\x1b[2J\": duplicate name (also tensor[0])");
}

TEST_CASE("carton tensor_data: dtype rules", "[carton][tensor_data][corrupt]") {
  const std::string rest = "shape = [1]\nfile = \"a.bin\"\n";
  CheckError(ParseIndex(OneTensor("name = \"x\"\n" + rest)), StatusCode::kCorrupt,
             "tensor_data/index.toml:1:1: tensor \"x\": missing \"dtype\"");
  CheckError(ParseIndex(OneTensor("name = \"x\"\ndtype = 1\n" + rest)), StatusCode::kCorrupt,
             "tensor_data/index.toml:3:9: tensor \"x\": dtype is an integer, not a string");
  CheckError(ParseIndex(OneTensor("name = \"x\"\ndtype = \"float16\"\n" + rest)),
             StatusCode::kUnsupported,
             "tensor_data/index.toml:3:9: tensor \"x\": unknown dtype \"float16\"");
  CheckError(ParseIndex(OneTensor("name = \"x\"\ndtype = \"Float32\"\n" + rest)),
             StatusCode::kUnsupported, "unknown dtype \"Float32\"");
  for (DataType t : AllDataTypes()) {
    std::string file = t == DataType::kString ? "a.toml" : "a.bin";
    std::string text = OneTensor("name = \"x\"\ndtype = \"" + std::string(DataTypeName(t)) +
                                 "\"\nshape = [1]\nfile = \"" + file + "\"\n");
    Result<TensorDataIndex> r = ParseIndex(text);
    RequireOk(r);
    CHECK(r->tensors[0].dtype == t);
  }
}

TEST_CASE("carton tensor_data: shape rules", "[carton][tensor_data][corrupt]") {
  auto with_shape = [](const std::string& shape) {
    return OneTensor("name = \"x\"\ndtype = \"float32\"\n" + shape + "file = \"a.bin\"\n");
  };
  CheckError(ParseIndex(with_shape("")), StatusCode::kCorrupt,
             "tensor_data/index.toml:1:1: tensor \"x\": missing \"shape\"");
  CheckError(ParseIndex(with_shape("shape = 3\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:4:9: tensor \"x\": shape is an integer, not an array");
  CheckError(ParseIndex(with_shape("shape = [2, 2.0]\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:4:13: tensor \"x\": shape[1] is a float, not an integer");
  CheckError(ParseIndex(with_shape("shape = [\"2\"]\n")), StatusCode::kCorrupt,
             "shape[0] is a string, not an integer");
  CheckError(
      ParseIndex(with_shape("shape = [3, -2]\n")), StatusCode::kCorrupt,
      "tensor_data/index.toml:4:13: tensor \"x\": shape[1] is -2, not a non-negative integer");
  CheckError(ParseIndex(with_shape("shape = [4611686018427387904, 4]\n")), StatusCode::kCorrupt,
             "tensor \"x\": shape [4611686018427387904, 4] overflows 64 bits");
  // Element count fits but the byte size (x4 for float32) does not.
  CheckError(ParseIndex(with_shape("shape = [4611686018427387904]\n")), StatusCode::kCorrupt,
             "overflows 64 bits");
  for (const char* ok : {"shape = []\n", "shape = [0]\n", "shape = [0, 9223372036854775807]\n",
                         "shape = [1, 2, 3, 4]\n"}) {
    RequireOk(ParseIndex(with_shape(ok)));
  }
}

TEST_CASE("carton tensor_data: file rules", "[carton][tensor_data][corrupt]") {
  auto with_file = [](const std::string& dtype, const std::string& file) {
    return OneTensor("name = \"x\"\ndtype = \"" + dtype + "\"\nshape = [1]\n" + file);
  };
  CheckError(ParseIndex(with_file("int8", "")), StatusCode::kCorrupt,
             "tensor_data/index.toml:1:1: tensor \"x\": missing \"file\"");
  CheckError(ParseIndex(with_file("int8", "file = 1\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:5:8: tensor \"x\": file is an integer, not a string");
  struct Case {
    const char* file;
    const char* problem;
  };
  for (Case c :
       {Case{"../a.bin", "has a \"..\" component"},
        Case{"sub/../../a.bin", "has a \"..\" component"}, Case{"./a.bin", "has a \".\" component"},
        Case{"/a.bin", "is absolute"}, Case{"sub\\\\a.bin", "contains a backslash"},
        Case{"sub//a.bin", "has an empty component"}, Case{"sub/", "has an empty component"},
        Case{"", "is empty"}, Case{"a\\u0000.bin", "contains a NUL byte"}}) {
    INFO(c.file);
    CheckError(ParseIndex(with_file("int8", std::string("file = \"") + c.file + "\"\n")),
               StatusCode::kCorrupt, "tensor_data/index.toml:5:8: tensor \"x\": file \"");
    CheckError(ParseIndex(with_file("int8", std::string("file = \"") + c.file + "\"\n")),
               StatusCode::kCorrupt, c.problem);
  }
  CheckError(ParseIndex(with_file("int8", "file = \"a.toml\"\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:5:8: tensor \"x\": file \"a.toml\" of a int8 tensor must "
             "end in .bin");
  CheckError(ParseIndex(with_file("string", "file = \"a.bin\"\n")), StatusCode::kCorrupt,
             "file \"a.bin\" of a string tensor must end in .toml");
  RequireOk(ParseIndex(with_file("int8", "file = \"sub/dir/a.b.bin\"\n")));
  RequireOk(ParseIndex(with_file("string", "file = 'x..y.toml'\n")));
}

TEST_CASE("carton tensor_data: inner is only for nested tensors", "[carton][tensor_data]") {
  const std::string base = "name = \"x\"\ndtype = \"int8\"\nshape = [1]\nfile = \"a.bin\"\n";
  RequireOk(ParseIndex(OneTensor(base)));
  RequireOk(ParseIndex(OneTensor(base + "inner = []\n")));
  CheckError(ParseIndex(OneTensor(base + "inner = [\"y\"]\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:6:9: tensor \"x\": inner is only allowed on nested tensors");
  CheckError(ParseIndex(OneTensor(base + "inner = \"y\"\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:6:9: tensor \"x\": inner is a string, not an array");
}

TEST_CASE("carton tensor_data: nested tensor rules", "[carton][tensor_data][corrupt]") {
  const std::string plain =
      "[[tensor]]\nname = \"p\"\ndtype = \"int8\"\nshape = [1]\nfile = \"a.bin\"\n\n";
  auto nested = [&](const std::string& body) {
    return plain + "[[tensor]]\nname = \"n\"\ndtype = \"nested\"\n" + body;
  };
  RequireOk(ParseIndex(nested("inner = [\"p\"]\n")));
  RequireOk(ParseIndex(nested("inner = [\"p\", \"p\"]\n")));
  RequireOk(ParseIndex(nested("inner = []\n")));
  // The inner tensor may also come after the nested one.
  RequireOk(
      ParseIndex("[[tensor]]\nname = \"n\"\ndtype = \"nested\"\ninner = [\"p\"]\n\n" + plain));

  CheckError(ParseIndex(nested("")), StatusCode::kCorrupt,
             "tensor_data/index.toml:7:1: tensor \"n\": missing \"inner\"");
  CheckError(ParseIndex(nested("inner = [\"p\", \"q\"]\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:10:15: tensor \"n\": inner[1] \"q\" is not in the index");
  CheckError(ParseIndex(nested("inner = [\"n\"]\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:10:10: tensor \"n\": inner[0] \"n\" is itself nested");
  std::string two_nested = nested("inner = [\"m\"]\n") +
                           "\n[[tensor]]\nname = \"m\"\ndtype = \"nested\"\ninner = [\"p\"]\n";
  CheckError(ParseIndex(two_nested), StatusCode::kCorrupt, "inner[0] \"m\" is itself nested");
  CheckError(ParseIndex(nested("inner = [1]\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:10:10: tensor \"n\": inner[0] is an integer, not a string");
  CheckError(ParseIndex(nested("inner = [\"p\"]\nshape = [1]\n")), StatusCode::kCorrupt,
             "tensor_data/index.toml:11:9: tensor \"n\": a nested tensor has no \"shape\"");
  CheckError(ParseIndex(nested("inner = [\"p\"]\nfile = \"b.bin\"\n")), StatusCode::kCorrupt,
             "a nested tensor has no \"file\"");
}

TEST_CASE("carton tensor_data: WriteIndex output is deterministic and parses back",
          "[carton][tensor_data]") {
  TensorDataIndex index;
  TensorDataEntry n;
  n.name = "n";
  n.inner = {"_carton_nested_inner_n_0"};
  index.tensors.push_back(n);
  index.tensors.push_back(Entry("_carton_nested_inner_n_0", DataType::kInt8, {2}, "tensor_0.bin"));
  index.tensors.push_back(
      Entry("quote\"back\\slash\nnewline", DataType::kString, {}, "tensor_1.toml"));
  const std::string text = WriteIndex(index);
  CHECK(text ==
        "[[tensor]]\n"
        "name = \"n\"\n"
        "dtype = \"nested\"\n"
        "inner = [\n"
        "    \"_carton_nested_inner_n_0\",\n"
        "]\n"
        "\n"
        "[[tensor]]\n"
        "name = \"_carton_nested_inner_n_0\"\n"
        "dtype = \"int8\"\n"
        "shape = [2]\n"
        "file = \"tensor_0.bin\"\n"
        "inner = []\n"
        "\n"
        "[[tensor]]\n"
        "name = \"quote\\\"back\\\\slash\\nnewline\"\n"
        "dtype = \"string\"\n"
        "shape = []\n"
        "file = \"tensor_1.toml\"\n"
        "inner = []\n");
  Result<TensorDataIndex> back = ParseIndex(text);
  RequireOk(back);
  REQUIRE(back->tensors.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back->tensors[i].name == index.tensors[i].name);
    CHECK(back->tensors[i].dtype == index.tensors[i].dtype);
    CHECK(back->tensors[i].shape == index.tensors[i].shape);
    CHECK(back->tensors[i].file == index.tensors[i].file);
    CHECK(back->tensors[i].inner == index.tensors[i].inner);
  }
  CHECK(WriteIndex(*back) == text);
}

TEST_CASE("carton tensor_data: a .bin must hold exactly numel * size bytes",
          "[carton][tensor_data][corrupt]") {
  TensorDataEntry e = Entry("x", DataType::kFloat32, {2, 2}, "tensor_1.bin");
  std::vector<std::byte> bytes = Iota(16);
  Result<TensorValue> ok = DecodeTensor(e, bytes);
  RequireOk(ok);
  CHECK(ok->data == bytes);
  CHECK(ok->name == "x");
  CheckError(DecodeTensor(e, ByteView(bytes).first(12)), StatusCode::kCorrupt,
             "tensor_data/tensor_1.bin: tensor \"x\": float32 [2, 2] needs 16 bytes but the file "
             "has 12");
  bytes.push_back(std::byte{0});
  CheckError(DecodeTensor(e, bytes), StatusCode::kCorrupt, "needs 16 bytes but the file has 17");
  // 0-rank tensors hold one element; empty tensors none.
  RequireOk(DecodeTensor(Entry("s", DataType::kUint64, {}, "s.bin"), Iota(8)));
  RequireOk(DecodeTensor(Entry("z", DataType::kUint64, {3, 0}, "z.bin"), {}));
  CheckError(DecodeTensor(Entry("z", DataType::kUint64, {3, 0}, "z.bin"), Iota(1)),
             StatusCode::kCorrupt, "needs 0 bytes but the file has 1");
  TensorDataEntry nested;
  nested.name = "n";
  CheckError(DecodeTensor(nested, {}), StatusCode::kInvalidArgument, "tensor \"n\" is nested");
}

TEST_CASE("carton tensor_data: a string file must hold numel strings",
          "[carton][tensor_data][corrupt]") {
  TensorDataEntry e = Entry("s", DataType::kString, {2, 3}, "tensor_0.toml");
  Result<TensorValue> ok =
      DecodeTensor(e, AsBytes("data = [\"a\", \"b\", \"c\", 'd', \"\"\"e\"\"\", \"\"]"));
  RequireOk(ok);
  CHECK(ok->strings == std::vector<std::string>{"a", "b", "c", "d", "e", ""});
  CHECK(ok->data.empty());
  CheckError(DecodeTensor(e, AsBytes("data = [\"a\", \"b\", \"c\", \"d\", \"e\"]")),
             StatusCode::kCorrupt,
             "tensor_data/tensor_0.toml:1:8: tensor \"s\": data has 5 strings but shape [2, 3] "
             "needs 6");
  CheckError(DecodeTensor(e, AsBytes("other = 1\n")), StatusCode::kCorrupt,
             "tensor_data/tensor_0.toml: tensor \"s\": missing \"data\"");
  CheckError(DecodeTensor(e, AsBytes("\ndata = \"abc\"")), StatusCode::kCorrupt,
             "tensor_data/tensor_0.toml:2:8: tensor \"s\": data is not an array");
  CheckError(DecodeTensor(e, AsBytes("data = [\"a\", \"b\", 3, \"d\", \"e\", \"f\"]")),
             StatusCode::kCorrupt,
             "tensor_data/tensor_0.toml:1:19: tensor \"s\": data[2] is not a string");
  CheckError(DecodeTensor(e, AsBytes("data = [\"a\",\n\"b")), StatusCode::kCorrupt,
             "tensor_data/tensor_0.toml:2:");
  std::string big(kMaxStringTensorFileSize + 1, ' ');
  CheckError(DecodeTensor(e, AsBytes(big)), StatusCode::kCorrupt, "more than the limit");
  RequireOk(DecodeTensor(Entry("e", DataType::kString, {0}, "e.toml"), AsBytes("data = []\n")));
}

TEST_CASE("carton tensor_data: EncodeNumeric is little-endian", "[carton][tensor_data]") {
  std::vector<float> f = {1.0f, -2.0f};
  CHECK(EncodeNumeric<float>(f) ==
        std::vector<std::byte>{std::byte{0x00}, std::byte{0x00}, std::byte{0x80}, std::byte{0x3F},
                               std::byte{0x00}, std::byte{0x00}, std::byte{0x00}, std::byte{0xC0}});
  std::vector<std::int16_t> i = {-2};
  CHECK(EncodeNumeric<std::int16_t>(i) == std::vector<std::byte>{std::byte{0xFE}, std::byte{0xFF}});
  std::vector<std::uint32_t> u = {0x01020304};
  CHECK(EncodeNumeric<std::uint32_t>(u) ==
        std::vector<std::byte>{std::byte{4}, std::byte{3}, std::byte{2}, std::byte{1}});
  std::vector<double> d = {1.0};
  CHECK(EncodeNumeric<double>(d).back() == std::byte{0x3F});
}

TEST_CASE("carton tensor_data: EncodeStrings escapes and rejects invalid UTF-8",
          "[carton][tensor_data]") {
  std::vector<std::string> none;
  CHECK(EncodeStrings(none).value() == "data = []\n");
  std::vector<std::string> some = {"a", "q\"\\\t\x01\x7f"};
  CHECK(EncodeStrings(some).value() ==
        "data = [\n    \"a\",\n    \"q\\\"\\\\\\t\\u0001\\u007F\",\n]\n");
  std::vector<std::string> bad = {"ok", "\xC3\x28"};
  CheckError(EncodeStrings(bad), StatusCode::kInvalidArgument, "string 1 is not valid UTF-8");
  std::vector<std::string> surrogate = {"\xED\xA0\x80"};
  CheckError(EncodeStrings(surrogate), StatusCode::kInvalidArgument, "not valid UTF-8");
  std::vector<std::string> overlong = {"\xC0\xAF"};
  CheckError(EncodeStrings(overlong), StatusCode::kInvalidArgument, "not valid UTF-8");
}

TEST_CASE("carton tensor_data: every dtype, strings and nested tensors round-trip through a dir",
          "[carton][tensor_data]") {
  TempDir tmp;
  const std::string dir = tmp.file("tensor_data");
  TensorData data;
  for (DataType t : AllDataTypes()) {
    if (t == DataType::kString) continue;
    data.tensors.push_back(Numeric("t_" + std::string(DataTypeName(t)), t, {2, 3}));
    data.tensors.push_back(Numeric("scalar_" + std::string(DataTypeName(t)), t, {}));
    data.tensors.push_back(Numeric("empty_" + std::string(DataTypeName(t)), t, {0, 4}));
  }
  data.tensors.push_back(Strings("strings", {2, 3},
                                 {"plain", "ünïcödé 日本語 🎉", "with \"quotes\" and 'single'",
                                  "multi\nline\r\n", "back\\slash\ttab\x01\x7f", ""}));
  data.tensors.push_back(Strings("scalar string", {}, {"'''"}));
  data.tensors.push_back(Strings("no strings", {0}, {}));
  NestedTensorValue nested{"ragged", {}};
  nested.inner.push_back(Numeric("", DataType::kFloat32, {3}));
  nested.inner.push_back(Numeric("", DataType::kFloat32, {1, 5}));
  nested.inner.push_back(Strings("", {2}, {"x", "y"}));
  data.nested.push_back(nested);
  data.nested.push_back(NestedTensorValue{"empty ragged", {}});

  RequireOk(WriteTensorDataDir(dir, data));
  Result<TensorData> back = ReadTensorDataDir(dir);
  RequireOk(back);
  REQUIRE(back->tensors.size() == data.tensors.size());
  for (std::size_t i = 0; i < data.tensors.size(); ++i) {
    INFO(data.tensors[i].name);
    CHECK(back->tensors[i].name == data.tensors[i].name);
    CheckSameValue(back->tensors[i], data.tensors[i]);
  }
  REQUIRE(back->nested.size() == 2);
  CHECK(back->nested[0].name == "ragged");
  REQUIRE(back->nested[0].inner.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(back->nested[0].inner[k].name == "_carton_nested_inner_ragged_" + std::to_string(k));
    CheckSameValue(back->nested[0].inner[k], nested.inner[k]);
  }
  CHECK(back->nested[1].name == "empty ragged");
  CHECK(back->nested[1].inner.empty());

  // The layout: nested entries first, then tensor_<i> files in order, and
  // `inner` on every entry.
  Result<TensorDataIndex> index = ReadTensorDataIndex(dir);
  RequireOk(index);
  CHECK(index->tensors[0].nested());
  CHECK(index->tensors[1].nested());
  CHECK(index->tensors[2].file == "tensor_0.bin");
  const std::size_t strings_pos = 3 * 10;
  CHECK(index->tensors[2 + strings_pos].file == "tensor_" + std::to_string(strings_pos) + ".toml");
  const std::string text = testing::ReadText(dir + "/index.toml");
  std::size_t entries = 0, inners = 0;
  for (std::size_t p = 0; (p = text.find("[[tensor]]", p)) != std::string::npos; ++p) ++entries;
  for (std::size_t p = 0; (p = text.find("\ninner = ", p)) != std::string::npos; ++p) ++inners;
  CHECK(entries == index->tensors.size());
  CHECK(inners == entries);
  CHECK(testing::ReadText(dir + "/tensor_" + std::to_string(strings_pos + 2) + ".toml") ==
        "data = []\n");
}

TEST_CASE("carton tensor_data: an empty TensorData writes tensor = []", "[carton][tensor_data]") {
  TempDir tmp;
  RequireOk(WriteTensorDataDir(tmp.file("td"), {}));
  CHECK(testing::ReadText(tmp.file("td/index.toml")) == "tensor = []\n");
  Result<TensorData> back = ReadTensorDataDir(tmp.file("td"));
  RequireOk(back);
  CHECK(back->tensors.empty());
  CHECK(back->nested.empty());
}

TEST_CASE("carton tensor_data: index.toml may be absent only from an empty dir",
          "[carton][tensor_data]") {
  TempDir tmp;
  Result<TensorData> empty = ReadTensorDataDir(tmp.path().string());
  RequireOk(empty);
  CHECK(empty->tensors.empty());
  testing::WriteBytes(tmp.file("tensor_0.bin"), Iota(4));
  CheckError(ReadTensorDataDir(tmp.path().string()), StatusCode::kCorrupt,
             "index.toml is missing but the folder holds \"tensor_0.bin\"");
  CheckError(ReadTensorDataDir(tmp.file("nope")), StatusCode::kNotFound, "no such directory");
}

TEST_CASE("carton tensor_data: reading a dir checks each data file",
          "[carton][tensor_data][corrupt]") {
  TempDir tmp;
  const std::string dir = tmp.path().string();
  testing::WriteBytes(tmp.file("index.toml"),
                      AsBytes("[[tensor]]\nname = \"x\"\ndtype = \"int32\"\nshape = [2]\n"
                              "file = \"tensor_0.bin\"\n"));
  CheckError(ReadTensorDataDir(dir), StatusCode::kCorrupt,
             "tensor_data/tensor_0.bin: tensor \"x\": file is missing");
  std::filesystem::create_directory(tmp.file("tensor_0.bin"));
  CheckError(ReadTensorDataDir(dir), StatusCode::kCorrupt, "not a regular file");
  std::filesystem::remove(tmp.file("tensor_0.bin"));
  testing::WriteBytes(tmp.file("tensor_0.bin"), Iota(7));
  CheckError(ReadTensorDataDir(dir), StatusCode::kCorrupt,
             "tensor_data/tensor_0.bin: tensor \"x\": int32 [2] needs 8 bytes but the file has 7");
  testing::WriteBytes(tmp.file("tensor_0.bin"), Iota(8));
  RequireOk(ReadTensorDataDir(dir));
  testing::WriteBytes(tmp.file("index.toml"), AsBytes("tensor = 1\n"));
  CheckError(ReadTensorDataDir(dir), StatusCode::kCorrupt, "tensor_data/index.toml:1:10:");
}

TEST_CASE("carton tensor_data: WriteTensorDataDir rejects bad tensors before writing",
          "[carton][tensor_data]") {
  TempDir tmp;
  const std::string dir = tmp.file("td");
  auto check = [&](const TensorData& data, const std::string& substring) {
    CheckError(WriteTensorDataDir(dir, data), StatusCode::kInvalidArgument, substring);
    CHECK_FALSE(std::filesystem::exists(dir));
  };
  TensorData dup;
  dup.tensors = {Numeric("a", DataType::kInt8, {1}), Numeric("a", DataType::kInt8, {1})};
  check(dup, "duplicate tensor name \"a\"");
  TensorData clash;
  clash.tensors = {Numeric("_carton_nested_inner_n_0", DataType::kInt8, {1})};
  clash.nested = {NestedTensorValue{"n", {Numeric("", DataType::kInt8, {1})}}};
  check(clash, "names starting with _carton_nested_inner_");
  TensorData unnamed;
  unnamed.tensors = {Numeric("", DataType::kInt8, {1})};
  check(unnamed, "empty name");
  TensorData short_data;
  short_data.tensors = {Numeric("s", DataType::kInt32, {3})};
  short_data.tensors[0].data.pop_back();
  check(short_data, "tensor \"s\": int32 [3] needs 12 bytes (and no strings) but has 11");
  TensorData few_strings;
  few_strings.tensors = {Strings("w", {2}, {"one"})};
  check(few_strings, "tensor \"w\": string [2] needs 2 strings (and no bytes) but has 1");
  TensorData bad_utf8;
  bad_utf8.tensors = {Strings("u", {1}, {"\xFF"})};
  check(bad_utf8, "tensor \"u\": string 0 is not valid UTF-8");
  TensorData huge_dim;
  huge_dim.tensors = {Numeric("h", DataType::kInt8, {0})};
  huge_dim.tensors[0].shape = {0, 1ull << 63};
  check(huge_dim, "does not fit in a TOML integer");
}

TEST_CASE("carton tensor_data: safetensors import then export gives the same tensors",
          "[carton][tensor_data]") {
  TempDir tmp;
  const std::string original = tmp.file("in.safetensors");
  std::vector<std::vector<std::byte>> buffers;
  std::vector<safetensors::TensorSource> sources;
  const std::vector<std::pair<safetensors::Dtype, std::vector<std::uint64_t>>> specs = {
      {safetensors::Dtype::kF32, {2, 3}}, {safetensors::Dtype::kF64, {4}},
      {safetensors::Dtype::kI8, {3, 1}},  {safetensors::Dtype::kI16, {}},
      {safetensors::Dtype::kI32, {0}},    {safetensors::Dtype::kI64, {2}},
      {safetensors::Dtype::kU8, {5}},     {safetensors::Dtype::kU16, {2, 2}},
      {safetensors::Dtype::kU32, {1}},    {safetensors::Dtype::kU64, {3}}};
  buffers.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::uint64_t numel = 1;
    for (auto d : specs[i].second) numel *= d;
    buffers.push_back(Iota(numel * safetensors::DtypeBits(specs[i].first) / 8));
    sources.push_back(
        {"w" + std::to_string(i), specs[i].first, specs[i].second, buffers.back(), {}});
  }
  RequireOk(safetensors::WriteFile(original, sources));

  const std::string dir = tmp.file("tensor_data");
  RequireOk(ImportSafetensors(original, dir));
  Result<TensorDataIndex> index = ReadTensorDataIndex(dir);
  RequireOk(index);
  CHECK(index->tensors.size() == specs.size());
  CHECK(index->tensors[0].file == "tensor_0.bin");

  const std::string exported = tmp.file("out.safetensors");
  RequireOk(ExportSafetensors(dir, exported));
  Result<safetensors::File> a = safetensors::File::Open(original);
  Result<safetensors::File> b = safetensors::File::Open(exported);
  RequireOk(a);
  RequireOk(b);
  REQUIRE(a->size() == b->size());
  for (std::string_view name : a->Names()) {
    INFO(std::string(name));
    const safetensors::TensorView* x = a->Find(name);
    const safetensors::TensorView* y = b->Find(name);
    REQUIRE(y != nullptr);
    CHECK(x->dtype == y->dtype);
    CHECK(std::vector<std::uint64_t>(x->shape.begin(), x->shape.end()) ==
          std::vector<std::uint64_t>(y->shape.begin(), y->shape.end()));
    CHECK(std::vector<std::byte>(x->data.begin(), x->data.end()) ==
          std::vector<std::byte>(y->data.begin(), y->data.end()));
  }
  // Without metadata, the whole file comes back byte for byte.
  CHECK(testing::ReadText(original) == testing::ReadText(exported));
}

TEST_CASE("carton tensor_data: import refuses dtypes carton lacks", "[carton][tensor_data]") {
  TempDir tmp;
  std::vector<std::byte> f32 = Iota(4), bf16 = Iota(4);
  std::vector<safetensors::TensorSource> sources = {
      {"fine", safetensors::Dtype::kF32, {1}, f32, {}},
      {"half", safetensors::Dtype::kBF16, {2}, bf16, {}}};
  RequireOk(safetensors::WriteFile(tmp.file("in.safetensors"), sources));
  CheckError(ImportSafetensors(tmp.file("in.safetensors"), tmp.file("td")),
             StatusCode::kUnsupported, "tensor \"half\": dtype BF16 has no carton equivalent");
  CHECK_FALSE(std::filesystem::exists(tmp.file("td")));
  CheckError(ImportSafetensors(tmp.file("missing.safetensors"), tmp.file("td")),
             StatusCode::kNotFound, "");
}

TEST_CASE("carton tensor_data: export refuses string and nested tensors", "[carton][tensor_data]") {
  TempDir tmp;
  TensorData strings;
  strings.tensors = {Numeric("n", DataType::kInt8, {1}), Strings("s", {1}, {"x"})};
  RequireOk(WriteTensorDataDir(tmp.file("a"), strings));
  CheckError(ExportSafetensors(tmp.file("a"), tmp.file("a.safetensors")), StatusCode::kUnsupported,
             "tensor \"s\" is a string tensor");
  CHECK_FALSE(std::filesystem::exists(tmp.file("a.safetensors")));

  TensorData nested;
  nested.nested = {NestedTensorValue{"r", {Numeric("", DataType::kInt8, {1})}}};
  RequireOk(WriteTensorDataDir(tmp.file("b"), nested));
  CheckError(ExportSafetensors(tmp.file("b"), tmp.file("b.safetensors")), StatusCode::kUnsupported,
             "tensor \"r\" is a nested tensor");

  // An empty folder exports an empty safetensors file.
  std::filesystem::create_directory(tmp.file("c"));
  RequireOk(ExportSafetensors(tmp.file("c"), tmp.file("c.safetensors")));
  Result<safetensors::File> c = safetensors::File::Open(tmp.file("c.safetensors"));
  RequireOk(c);
  CHECK(c->size() == 0);
}

TEST_CASE("carton tensor_data: long dotted keys are refused before parsing",
          "[carton][tensor_data][corrupt]") {
  std::string deep = "x = 1\n";
  for (int i = 0; i < 1'000'000; ++i) deep += "a.";
  deep += "b = 1\n";
  CheckError(ParseIndex(deep), StatusCode::kCorrupt,
             "tensor_data/index.toml:2:16: dotted key has more than 8 parts");
  CheckError(DecodeTensor(Entry("s", DataType::kString, {0}, "s.toml"), AsBytes(deep)),
             StatusCode::kCorrupt, "tensor_data/s.toml:2:16: dotted key has more than 8");
  CheckError(ParseIndex("[a.b.c.d.e.f.g.h.i.j]\n"), StatusCode::kCorrupt, "1:17: dotted key");
  CheckError(ParseIndex("x = { a . b . c . d . e . f . g . h . i = 1 }\n"), StatusCode::kCorrupt,
             "dotted key");

  // Dots inside strings, comments and values do not count.
  RequireOk(
      ParseIndex("a.b.c.d.e.f.g.h = 1.5\n"
                 "# ......................\n"
                 "s = \"..........\"\n"
                 "t = '..........'\n"
                 "m = \"\"\"\n...\\\"\"\"......\n...........\"\"\"\"\n"
                 "l = '''\n..........'''''\n"
                 "\"q.q.q.q.q.q.q.q.q.q.q\".'r.r.r.r.r.r.r.r' = 2\n"
                 "f = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 1979-05-27T00:32:00.999]\n"
                 "tensor = []\n"));
  RequireOk(DecodeTensor(Entry("s", DataType::kString, {2}, "s.toml"),
                         AsBytes("data = [\"a.b.c.d.e.f.g.h.i.j.k\", '...........']\n")));
}
