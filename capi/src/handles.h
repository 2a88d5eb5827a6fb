// What the C API's opaque handles hold. Each struct is declared (as an
// incomplete type) in carton/c/carton.h and defined here, in the global
// namespace, for the .cc files of capi/src; C callers see only pointers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "carton/c/carton.h"
#include "carton/carton/environment.h"
#include "carton/carton/pack.h"
#include "carton/carton/verify.h"
#include "carton/format/config.h"
#include "carton/format/tensor.h"
#include "carton/loader/loader.h"
#include "carton/runner/model.h"
#include "carton/runner/self_test.h"
#include "device.h"

// An ordered map of uniquely named tensors. Numeric tensors either borrow
// the caller's buffer (no owner) or own theirs (gathered, read from a file,
// returned by a runner).
struct carton_tensors {
  std::vector<carton::Tensor> tensors;
};

// The shell's translation of carton::runner::Model's inputs: the policy
// (its cache directory) and the model's options (the runner override, its
// options, lenient), with the device as given, resolved when the model
// loads.
struct carton_load_options {
  carton::Environment environment;    // loader::DefaultEnvironment() and what is set
  carton::loader::DeviceSpec device;  // kDefault: the first GPU when there is one, else the CPU
  carton::runner::ModelOptions model;
};

// A loaded model with its runner process (carton::runner::Model). Calls
// that use the runner hold `mu`; `closed` once carton_model_close ran.
struct carton_model {
  carton_model(std::string where, carton::runner::Model m)
      : location(std::move(where)), model(std::move(m)) {}

  std::string location;  // as given, for messages
  carton::runner::Model model;
  bool closed = false;
  std::mutex mu;
};

struct carton_info {
  carton::CartonConfig config;
  std::optional<std::string> manifest_hash;  // hex
  std::vector<std::string> self_test_names;
};

struct carton_self_test_report {
  struct Test {
    std::string name;
    bool passed = false;
    std::string message;
  };
  std::vector<Test> tests;
  bool passed = true;
};

struct carton_pack_options {
  carton::PackOptions options;
  std::optional<carton::CartonConfig> config;  // used when the path has no carton.toml
};

struct carton_verify_report {
  carton::VerifyReport report;
};

namespace carton::capi {

// A new handle for a C caller, who frees it with FreeHandle (through the
// type's *_free function).
template <typename T, typename... Args>
T* NewHandle(Args&&... args) {
  return std::make_unique<T>(std::forward<Args>(args)...).release();
}

// Frees a handle made by NewHandle; NULL is a no-op.
template <typename T>
void FreeHandle(T* handle) noexcept {
  std::unique_ptr<T> owned(handle);
}

}  // namespace carton::capi
