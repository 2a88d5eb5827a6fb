// A C entry point over Load and ToDLPack for test_dlpack_interop.py, which
// hands the structs to torch and numpy through ctypes (no binding between).
#include <cstdint>

#include "carton/safetensors/load.h"

using namespace carton::safetensors;

// Loads tensor `name` of `path` into host memory and returns it as a
// DLManagedTensor (versioned != 0: a DLManagedTensorVersioned), with its
// address in *address; null on any error.
extern "C" void* carton_test_export(const char* path, const char* name, int versioned,
                                    std::uint64_t* address) {
  LoadRequest request;
  request.paths = {path};
  auto loaded = Load(request, Target::Host());
  if (!loaded.ok() || loaded->Find(name) == nullptr) return nullptr;
  *address = loaded->Find(name)->address;
  if (versioned != 0) {
    auto v = loaded->ToDLPackVersioned(name);
    return v.ok() ? *v : nullptr;
  }
  auto m = loaded->ToDLPack(name);
  return m.ok() ? *m : nullptr;
}
