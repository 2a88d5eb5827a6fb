// Private: what the files of carton.safetensors' native core share: raising
// a Status as SafetensorError, holding a Python buffer, and the writer's
// bindings (safetensors_write.cc).
//
// Every function here is called with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "bindings.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton::python {

// Raises `status` (not OK) as SafetensorError with `code` and `kind` (the
// rule a file breaks, errors.h) set, its message prefixed with `prefix`
// (the reference's "Error while deserializing header: ", or nothing).
[[noreturn]] void RaiseSafetensors(const Status& status, std::string_view prefix = {});

// Raises SafetensorError("<message>") with code "invalid argument": the
// reference's own words for a bad argument.
[[noreturn]] void RaiseSafetensorsMessage(const std::string& message);

template <typename T>
T TakeSafetensors(Result<T> r) {
  if (!r.ok()) RaiseSafetensors(r.status());
  return std::move(r).value();
}

// The type name of a Python value, for messages.
std::string TypeName(py::handle value);

// A Python buffer held for the life of this object (released with the GIL).
class Buffer {
 public:
  // Raises SafetensorError naming `what` when `object` has no C-contiguous
  // (and, if asked, writable) buffer.
  Buffer(py::handle object, const std::string& what, bool writable);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  ByteView bytes() const {
    return {static_cast<const std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }
  MutableByteView mutable_bytes() const {
    return {static_cast<std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// TensorSpec, serialize and serialize_file (safetensors_write.cc).
void BindSafetensorsWrite(py::module_& m);

}  // namespace carton::python
