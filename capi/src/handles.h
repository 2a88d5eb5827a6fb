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
#include "carton/carton/pack.h"
#include "carton/carton/verify.h"
#include "carton/format/config.h"
#include "carton/format/tensor.h"
#include "carton/loader/loader.h"
#include "carton/runner/client.h"
#include "carton/runner/select.h"
#include "carton/runner/self_test.h"
#include "device.h"

// An ordered map of uniquely named tensors. Numeric tensors either borrow
// the caller's buffer (no owner) or own theirs (gathered, read from a file,
// returned by a runner).
struct carton_tensors {
  std::vector<carton::Tensor> tensors;
};

struct carton_load_options {
  carton::loader::DeviceSpec device;  // kDefault: the first GPU when there is one, else the CPU
  std::optional<std::string> runner_name;
  std::optional<std::string> framework_version;
  std::map<std::string, std::string> runner_opts;
  std::string cache_dir;  // empty: the default
};

// A loaded carton and its runner process. Calls that use the process hold
// `mu`; `process` is empty once closed. Destroyed in reverse order: the
// runner ends before the carton's mappings go.
struct carton_model {
  std::string location;  // as given, for messages
  carton::loader::LoadedCarton carton;
  carton::runner::RunnerCandidate runner;
  std::optional<carton::runner::RunnerProcess> process;
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
