// safetensors tensors as numpy arrays: dtype names both ways, and views of
// a File's bytes that keep their base alive and cannot be written.
#include "carton/pybridge/safetensors_numpy.h"

#include <pybind11/embed.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "carton/pybridge/numpy_tensor.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/writer.h"

using namespace carton;
namespace py = pybind11;
namespace st = carton::safetensors;

namespace {

// The interpreter, started once for the test binary (other test files of
// this binary may have started it already).
void Python() {
  static const bool started = [] {
    if (!Py_IsInitialized()) py::initialize_interpreter(false);
    return pybridge::Init().ok();
  }();
  REQUIRE(started);
}

}  // namespace

TEST_CASE("pybridge safetensors: dtype names as numpy and torch spell them", "[pybridge]") {
  CHECK(pybridge::SafetensorsDtypeFromName("float32") == st::Dtype::kF32);
  CHECK(pybridge::SafetensorsDtypeFromName("bfloat16") == st::Dtype::kBF16);
  CHECK(pybridge::SafetensorsDtypeFromName("bool") == st::Dtype::kBool);
  CHECK(pybridge::SafetensorsDtypeFromName("complex64") == st::Dtype::kC64);
  CHECK(pybridge::SafetensorsDtypeFromName("float8_e4m3fn") == st::Dtype::kF8E4M3);
  CHECK(pybridge::SafetensorsDtypeFromName("F16") == st::Dtype::kF16);
  CHECK_FALSE(pybridge::SafetensorsDtypeFromName("complex128").has_value());
  CHECK_FALSE(pybridge::SafetensorsDtypeFromName("f32").has_value());
  CHECK(pybridge::NumpyTypeString(st::Dtype::kF16) == "<f2");
  CHECK(pybridge::NumpyTypeString(st::Dtype::kBool) == "|b1");
  CHECK_FALSE(pybridge::NumpyTypeString(st::Dtype::kBF16).has_value());
}

TEST_CASE("pybridge safetensors: a tensor is a read-only view whose base is the owner",
          "[pybridge]") {
  Python();
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::vector<std::byte> bytes(sizeof(float) * values.size());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  std::vector<st::TensorSource> sources = {{"w", st::Dtype::kF32, {2, 3}, bytes, {}}};
  auto serialized = st::Serialize(sources);
  REQUIRE(serialized.ok());
  auto file = st::File::FromOwnedBuffer(std::move(serialized).value());
  REQUIRE(file.ok());
  const st::TensorView* w = file->Find("w");
  REQUIRE(w != nullptr);

  py::object owner = py::eval("object()");
  auto array = pybridge::SafetensorsViewToNumpy(*w, owner);
  REQUIRE(array.ok());
  py::dict l;
  l["a"] = *array;
  l["owner"] = owner;
  CHECK(py::eval("a.shape == (2, 3) and str(a.dtype) == 'float32'", py::globals(), l).cast<bool>());
  CHECK(py::eval("a.base is owner", py::globals(), l).cast<bool>());
  CHECK(py::eval("float(a[1, 2])", py::globals(), l).cast<double>() == 6.0);
  CHECK_FALSE(py::eval("a.flags.writeable", py::globals(), l).cast<bool>());
  CHECK(array->data() == static_cast<const void*>(w->data.data()));
}

TEST_CASE("pybridge safetensors: dtypes numpy lacks are unsupported, naming the tensor",
          "[pybridge]") {
  Python();
  std::vector<std::byte> two(4);
  std::vector<st::TensorSource> sources = {{"h", st::Dtype::kBF16, {2}, two, {}}};
  auto serialized = st::Serialize(sources);
  REQUIRE(serialized.ok());
  auto file = st::File::FromOwnedBuffer(std::move(serialized).value());
  REQUIRE(file.ok());
  auto array = pybridge::SafetensorsViewToNumpy(*file->Find("h"), py::none());
  REQUIRE_FALSE(array.ok());
  CHECK(array.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(array.status().message(), Catch::Contains("tensor \"h\"") && Catch::Contains("BF16"));
}
