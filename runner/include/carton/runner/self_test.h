// Running a carton's [[self_test]]s through any inference function and
// comparing every output with expected_out (safetensors AllClose for
// numbers, exact for strings).
// Thread-safety: free functions; `infer` is called from the calling thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/loader/loader.h"
#include "carton/safetensors/compare.h"

namespace carton::runner {

using InferFn = std::function<Result<std::vector<Tensor>>(const std::vector<Tensor>&)>;

struct OutputCheck {
  std::string name;
  bool passed = false;
  std::string
      message;  // "all 16 elements match", "missing", "dtype ...", "3 of 6 differ; worst ..."
};

struct SelfTestResult {
  std::string name;
  bool passed = false;
  std::string error;  // inference failed (then `outputs` is empty)
  std::vector<OutputCheck> outputs;
  double seconds = 0;
};

struct SelfTestReport {
  std::vector<SelfTestResult> tests;
  bool passed() const;
};

// Compares one output with its expected tensor.
OutputCheck CheckOutput(const Tensor* actual, const Tensor& expected,
                        const safetensors::CompareOptions& options);

// Runs every self-test of `carton`. A failing inference or comparison is a
// failed test, not an error; the function itself does not fail.
SelfTestReport RunSelfTests(const loader::LoadedCarton& carton, const InferFn& infer,
                            const safetensors::CompareOptions& options = {});

// Prints "PASS name" / "FAIL name: output y: ..." lines; or the JSON report.
std::string FormatReport(const SelfTestReport& report);
std::string FormatReportJson(const SelfTestReport& report);

}  // namespace carton::runner
