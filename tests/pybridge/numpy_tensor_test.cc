// The Python bridge in an interpreter embedded in this test: carton tensors
// to numpy arrays and back (zero-copy where promised, owners kept alive),
// Python values to tensors, and errors both ways.
#include "carton/pybridge/numpy_tensor.h"

#include <pybind11/embed.h>
#include <pybind11/numpy.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <thread>

#include "carton/format/tensor_data.h"
#include "carton/pybridge/errors.h"

using namespace carton;
namespace py = pybind11;
using carton::Tensor;

namespace {

// Starts the interpreter once for the whole test binary (another file may
// have started it); the main thread keeps the GIL.
void Python() {
  static const bool started = [] {
    if (!Py_IsInitialized()) py::initialize_interpreter(false);
    return pybridge::Init().ok();
  }();
  REQUIRE(started);
}

py::object Eval(const char* code, py::dict locals = py::dict()) {
  return py::eval(code, py::globals(), locals);
}

// numpy's address of an array's first byte.
std::uintptr_t DataAddress(py::handle array) {
  return py::cast<std::uintptr_t>(array.attr("__array_interface__")["data"].cast<py::tuple>()[0]);
}

Tensor Floats(std::vector<float> values, std::vector<std::uint64_t> shape,
              std::shared_ptr<std::vector<std::byte>>* owner_out = nullptr) {
  auto owner = std::make_shared<std::vector<std::byte>>(EncodeNumeric<float>(values));
  if (owner_out) *owner_out = owner;
  return Tensor::View("x", DataType::kFloat32, std::move(shape), ByteView(*owner), owner);
}

}  // namespace

TEST_CASE("pybridge: a numeric tensor is a read-only numpy view of its bytes", "[pybridge]") {
  Python();
  std::shared_ptr<std::vector<std::byte>> bytes;
  Tensor t = Floats({1, 2, 3, 4, 5, 6}, {2, 3}, &bytes);
  auto array = pybridge::TensorToPython(t);
  REQUIRE(array.ok());
  py::dict l;
  l["a"] = *array;
  CHECK(Eval("str(a.dtype)", l).cast<std::string>() == "float32");
  CHECK(Eval("a.shape == (2, 3)", l).cast<bool>());
  CHECK(Eval("a[1, 2]", l).cast<float>() == 6.0f);
  CHECK_FALSE(Eval("a.flags.writeable", l).cast<bool>());
  CHECK_FALSE(Eval("a.flags.owndata", l).cast<bool>());
  CHECK(DataAddress(*array) == reinterpret_cast<std::uintptr_t>(bytes->data()));
  // Writing through it is refused by numpy.
  CHECK_THROWS_AS(py::exec("a[0, 0] = 9", py::globals(), l), py::error_already_set);
  CHECK(EncodeNumeric<float>(std::vector<float>{1, 2, 3, 4, 5, 6}) == *bytes);
}

TEST_CASE("pybridge: an array and its views keep the tensor's owner alive", "[pybridge]") {
  Python();
  std::weak_ptr<std::vector<std::byte>> watch;
  py::dict l;
  {
    std::shared_ptr<std::vector<std::byte>> bytes;
    Tensor t = Floats({1, 2, 3, 4}, {4}, &bytes);
    watch = bytes;
    l["a"] = *pybridge::TensorToPython(t);
  }
  REQUIRE_FALSE(watch.expired());  // only the array holds the bytes now
  py::exec("v = a[1:]\ndel a", py::globals(), l);
  CHECK_FALSE(watch.expired());
  CHECK(Eval("float(v[0])", l).cast<float>() == 2.0f);
  py::exec("del v", py::globals(), l);
  CHECK(watch.expired());
}

TEST_CASE("pybridge: ArrayMode::kCopy gives a writable array of its own", "[pybridge]") {
  Python();
  std::shared_ptr<std::vector<std::byte>> bytes;
  Tensor t = Floats({1, 2}, {2}, &bytes);
  auto array = pybridge::TensorToPython(t, pybridge::ArrayMode::kCopy);
  REQUIRE(array.ok());
  CHECK(DataAddress(*array) != reinterpret_cast<std::uintptr_t>(bytes->data()));
  py::dict l;
  l["a"] = *array;
  py::exec("a[0] = 7", py::globals(), l);
  CHECK(Eval("float(a[0])", l).cast<float>() == 7.0f);
  CHECK(EncodeNumeric<float>(std::vector<float>{1, 2}) == *bytes);
}

TEST_CASE("pybridge: every numeric dtype crosses both ways without a copy", "[pybridge]") {
  Python();
  for (DataType type : AllDataTypes()) {
    if (type == DataType::kString) continue;
    INFO(DataTypeName(type));
    auto owner = std::make_shared<std::vector<std::byte>>(3 * DataTypeSize(type));
    for (std::size_t i = 0; i < owner->size(); ++i) (*owner)[i] = std::byte(i * 7 + 1);
    Tensor t = Tensor::View("t", type, {3}, ByteView(*owner), owner);
    auto array = pybridge::TensorToPython(t);
    REQUIRE(array.ok());
    CHECK(py::str(array->attr("dtype")).cast<std::string>() == DataTypeName(type));
    auto back = pybridge::TensorFromPython("t", *array);
    REQUIRE(back.ok());
    CHECK(back->dtype == type);
    CHECK(back->shape == std::vector<std::uint64_t>{3});
    CHECK(back->data.data() == owner->data());  // the same bytes, no copy
  }
}

TEST_CASE("pybridge: string tensors are numpy arrays of str of the declared shape", "[pybridge]") {
  Python();
  Tensor t = Tensor::Strings("s", {2, 2}, {"a", "b", "c", "é"});
  auto array = pybridge::TensorToPython(t);
  REQUIRE(array.ok());
  py::dict l;
  l["a"] = *array;
  CHECK(Eval("a.dtype == object and a.shape == (2, 2)", l).cast<bool>());
  CHECK(Eval("all(type(v) is str for v in a.flat)", l).cast<bool>());
  CHECK(Eval("a[1, 1]", l).cast<std::string>() == "é");
  auto back = pybridge::TensorFromPython("s", *array);
  REQUIRE(back.ok());
  CHECK(back->dtype == DataType::kString);
  CHECK(back->shape == std::vector<std::uint64_t>{2, 2});
  CHECK(back->strings == t.strings);
  SECTION("rank 0") {
    auto scalar = pybridge::TensorToPython(Tensor::Strings("s", {}, {"one"}));
    REQUIRE(scalar.ok());
    l["s"] = *scalar;
    CHECK(Eval("s.shape == () and s.item() == 'one'", l).cast<bool>());
  }
  SECTION("invalid UTF-8 is refused, naming the tensor") {
    auto bad = pybridge::TensorToPython(Tensor::Strings("s", {1}, {"\xff"}));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message() == "tensor \"s\": string 0 is not valid UTF-8");
  }
}

TEST_CASE("pybridge: arrays numpy cannot lend as they are are copied once", "[pybridge]") {
  Python();
  SECTION("a strided view") {
    auto t =
        pybridge::TensorFromPython("y", Eval("__import__('numpy').arange(10, dtype='<i4')[::3]"));
    REQUIRE(t.ok());
    CHECK(t->dtype == DataType::kInt32);
    CHECK(t->data.size() == 16);
    std::int32_t v[4];
    std::memcpy(v, t->data.data(), sizeof v);
    CHECK(v[3] == 9);
  }
  SECTION("a big-endian array") {
    auto t = pybridge::TensorFromPython("y", Eval("__import__('numpy').array([1.5], dtype='>f8')"));
    REQUIRE(t.ok());
    CHECK(t->dtype == DataType::kFloat64);
    CHECK(t->data.size() == 8);
    CHECK(LoadLE64(t->data.data()) == 0x3FF8000000000000ull);
  }
  SECTION("a Fortran-order array is read in C order") {
    auto t = pybridge::TensorFromPython(
        "y", Eval("__import__('numpy').asfortranarray([[1, 2], [3, 4]]).astype('u1')"));
    REQUIRE(t.ok());
    CHECK(t->dtype == DataType::kUint8);
    CHECK(t->data.size() == 4);
    CHECK(std::to_integer<int>(t->data[1]) == 2);
  }
  SECTION("bool becomes uint8") {
    auto t = pybridge::TensorFromPython("y", Eval("__import__('numpy').array([True, False])"));
    REQUIRE(t.ok());
    CHECK(t->dtype == DataType::kUint8);
    CHECK(std::to_integer<int>(t->data[0]) == 1);
  }
}

TEST_CASE("pybridge: Python numbers, strings and lists become rank-0 and rank-1 tensors",
          "[pybridge]") {
  Python();
  auto conv = [](const char* code, std::optional<DataType> hint = std::nullopt) {
    return pybridge::TensorFromPython("v", Eval(code), hint);
  };
  auto i = conv("3");
  REQUIRE(i.ok());
  CHECK((i->dtype == DataType::kInt64 && i->shape.empty() && LoadLE64(i->data.data()) == 3));
  auto i32 = conv("-3", DataType::kInt32);
  REQUIRE(i32.ok());
  CHECK((i32->dtype == DataType::kInt32 && LoadLE32(i32->data.data()) == 0xFFFFFFFDu));
  auto f = conv("0.5", DataType::kFloat32);
  REQUIRE(f.ok());
  CHECK((f->dtype == DataType::kFloat32 && LoadLE32(f->data.data()) == 0x3F000000u));
  CHECK(conv("0.5")->dtype == DataType::kFloat64);
  CHECK(conv("True")->dtype == DataType::kUint8);
  auto s = conv("'hi'");
  REQUIRE(s.ok());
  CHECK((s->dtype == DataType::kString && s->shape.empty() && s->strings[0] == "hi"));
  auto list = conv("['a', 'b']");
  REQUIRE(list.ok());
  CHECK((list->shape == std::vector<std::uint64_t>{2} && list->strings[1] == "b"));
  auto nums = conv("[1, 2, 3]", DataType::kFloat32);
  REQUIRE(nums.ok());
  CHECK((nums->dtype == DataType::kFloat32 && nums->data.size() == 12));
  auto nested = conv("[[1, 2], [3, 4]]");
  REQUIRE(nested.ok());
  CHECK((nested->dtype == DataType::kInt64 && nested->shape == std::vector<std::uint64_t>{2, 2}));
  auto empty = conv("[]", DataType::kString);
  REQUIRE(empty.ok());
  CHECK((empty->dtype == DataType::kString && empty->shape == std::vector<std::uint64_t>{0}));
  // numpy scalars keep their own dtype whatever the hint.
  auto np_scalar = conv("__import__('numpy').float64(2.0)", DataType::kFloat32);
  REQUIRE(np_scalar.ok());
  CHECK((np_scalar->dtype == DataType::kFloat64 && np_scalar->shape.empty()));
  auto np_str = conv("__import__('numpy').str_('x')");
  REQUIRE(np_str.ok());
  CHECK(np_str->strings == std::vector<std::string>{"x"});
}

TEST_CASE("pybridge: values with no carton dtype are refused, naming the tensor", "[pybridge]") {
  Python();
  auto message = [](const char* code, std::optional<DataType> hint = std::nullopt) {
    auto r = pybridge::TensorFromPython("out", Eval(code), hint);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    return r.status().message();
  };
  CHECK_THAT(message("__import__('numpy').zeros(2, dtype=complex)"),
             Catch::StartsWith("tensor \"out\": numpy dtype complex128 has no carton dtype"));
  CHECK_THAT(message("__import__('numpy').zeros(2, dtype='f2')"),
             Catch::StartsWith("tensor \"out\": numpy dtype float16 has no carton dtype"));
  CHECK(message("__import__('numpy').array(['a', 3], dtype=object)") ==
        "tensor \"out\": element 1 has type int; an object array must hold only str");
  CHECK(message("['a', 1]") == "tensor \"out\": a list mixing str with other values");
  CHECK(message("300", DataType::kUint8) == "tensor \"out\": the int 300 does not fit uint8");
  CHECK(message("2**70") == "tensor \"out\": the int 1180591620717411303424 does not fit int64");
  CHECK(message("[1, 300]", DataType::kInt8) ==
        "tensor \"out\": list values outside the range of int8");
  CHECK_THAT(message("b'raw'"),
             Catch::StartsWith("tensor \"out\": a value of type bytes is not a tensor"));
  CHECK(message("1j") == "tensor \"out\": a Python complex has no carton dtype");
  CHECK(
      message("object()") ==
      "tensor \"out\": a value of type object is not a tensor (give a numpy array, a number, a str "
      "or a list)");
  CHECK(message("'\\udc80'") == "tensor \"out\": the str cannot be encoded as UTF-8");
}

TEST_CASE("pybridge: dicts of tensors", "[pybridge]") {
  Python();
  auto ok = pybridge::TensorsFromMapping(Eval("{'b': 1, 'a': 'x'}"), {{"b", DataType::kInt16}});
  REQUIRE(ok.ok());
  REQUIRE(ok->size() == 2);
  CHECK(((*ok)[0].name == "b" && (*ok)[0].dtype == DataType::kInt16));
  CHECK((*ok)[1].name == "a");
  auto bad_key = pybridge::TensorsFromMapping(Eval("{1: 2}"));
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.status().message() == "a key of the dict of tensors has type int, not str");
  auto not_dict = pybridge::TensorsFromMapping(Eval("[1]"));
  REQUIRE_FALSE(not_dict.ok());
  CHECK(not_dict.status().message() == "expected a dict of tensors, got a value of type list");
  auto twice = pybridge::TensorsToDict({Floats({1}, {1}), Floats({2}, {1})});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message() == "tensor \"x\" is given twice");
}

TEST_CASE("pybridge: a tensor viewing a Python array may be dropped on another thread",
          "[pybridge]") {
  Python();
  auto t = pybridge::TensorFromPython("y", Eval("__import__('numpy').ones(4, dtype='<f4')"));
  REQUIRE(t.ok());
  std::weak_ptr<const void> watch = t->owner;
  {
    py::gil_scoped_release release;  // the other thread takes the GIL to let go
    std::thread([&] { *t = Tensor(); }).join();
  }
  CHECK(watch.expired());
}

TEST_CASE("pybridge: Python exceptions become a Status with the traceback's last lines",
          "[pybridge][errors]") {
  Python();
  py::exec(R"(
def inner():
    raise ValueError("bad weights")
def outer():
    inner()
)",
           py::globals());
  try {
    py::globals()["outer"]();
    FAIL("no exception");
  } catch (const py::error_already_set& e) {
    Status s = pybridge::StatusFromPython(e, "loading");
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::StartsWith("loading: ValueError: bad weights\n"));
    CHECK_THAT(s.message(), Catch::Contains("in outer\n"));
    CHECK_THAT(s.message(),
               Catch::EndsWith("line 4, in inner"));  // exec'd code has no source lines
  }
  auto code_of = [](const char* raise) {
    try {
      py::exec(raise, py::globals());
    } catch (const py::error_already_set& e) {
      return pybridge::StatusFromPython(e, "x").code();
    }
    return StatusCode::kOk;
  };
  CHECK(code_of("raise FileNotFoundError('f')") == StatusCode::kNotFound);
  CHECK(code_of("import no_such_module_here") == StatusCode::kNotFound);
  CHECK(code_of("raise NotImplementedError()") == StatusCode::kUnsupported);
  CHECK(code_of("raise ConnectionResetError()") == StatusCode::kNetworkError);
  CHECK(code_of("raise PermissionError()") == StatusCode::kIoError);
  CHECK(code_of("raise KeyError('k')") == StatusCode::kInvalidArgument);
  CHECK(code_of("raise RuntimeError('r')") == StatusCode::kInternal);
}

TEST_CASE("pybridge: a Status raised in Python keeps its message and code", "[pybridge][errors]") {
  Python();
  try {
    pybridge::ThrowStatus(Corrupt("model.safetensors: header too long"));
  } catch (const py::error_already_set& e) {
    CHECK(e.matches(PyExc_ValueError));
    CHECK(py::str(e.value()).cast<std::string>() == "model.safetensors: header too long");
    CHECK(e.value().attr("code").cast<std::string>() == "corrupt");
    // Coming back, the code survives.
    CHECK(pybridge::StatusFromPython(e, "").code() == StatusCode::kCorrupt);
  }
  py::exec("class MyNotFound(Exception): pass", py::globals());
  pybridge::SetExceptionType(StatusCode::kNotFound, py::globals()["MyNotFound"]);
  try {
    pybridge::ThrowStatus(NotFound("no such model"));
  } catch (const py::error_already_set& e) {
    CHECK(e.matches(py::globals()["MyNotFound"]));
    CHECK(pybridge::StatusFromPython(e, "load").message() == "load: MyNotFound: no such model");
  }
  pybridge::SetExceptionType(StatusCode::kNotFound, PyExc_FileNotFoundError);
}
