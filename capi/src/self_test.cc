// carton_self_test and its report: runner::Model::SelfTest, as `carton
// self-test` and Python's Model.self_test run it.
#include <cmath>
#include <mutex>
#include <string>

#include "errors.h"
#include "handles.h"
#include "model.h"

namespace carton::capi {
namespace {

// One test as the C report gives it: "inference failed: <error>", or one
// line per output.
carton_self_test_report::Test ToCTest(const runner::SelfTestResult& t) {
  carton_self_test_report::Test out{t.name, t.passed, ""};
  if (!t.error.empty()) {
    out.message = "inference failed: " + t.error;
    return out;
  }
  for (const auto& o : t.outputs) {
    if (!out.message.empty()) out.message += "\n";
    out.message += o.name + ": " + o.message;
  }
  return out;
}

Result<const carton_self_test_report::Test*> TestAt(const char* function,
                                                    const carton_self_test_report* report,
                                                    std::size_t index) {
  CARTON_RETURN_IF_ERROR(Require(report, function, "report"));
  if (index >= report->tests.size())
    return OutOfRange(function, "test", index, report->tests.size());
  return &report->tests[index];
}

}  // namespace
}  // namespace carton::capi

extern "C" {

carton_status carton_self_test(carton_model* model, double rtol, double atol,
                               carton_self_test_report** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(model, fn, "model"));
    if (!(rtol >= 0) || !(atol >= 0)) {  // also NaN
      return InvalidArgument(std::string(fn) + ": rtol " + std::to_string(rtol) + " and atol " +
                             std::to_string(atol) + " must be >= 0");
    }
    safetensors::CompareOptions compare;
    compare.rtol = rtol;
    compare.atol = atol;
    std::lock_guard<std::mutex> lock(model->mu);
    if (model->closed) return capi::ModelClosed(fn, *model);
    // A runner that crashed or hung is trouble (an error), not a verdict on
    // the model.
    runner::SelfTestReport report;
    CARTON_RETURN_IF_ERROR(model->model.SelfTest(compare, &report));
    carton_self_test_report c;
    c.passed = report.passed();
    for (const auto& t : report.tests) c.tests.push_back(capi::ToCTest(t));
    *out = capi::NewHandle<carton_self_test_report>(std::move(c));
    return Status::Ok();
  });
}

void carton_self_test_report_free(carton_self_test_report* report) {
  carton::capi::FreeHandle(report);
}

carton_status carton_self_test_report_passed(const carton_self_test_report* report, int* passed) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(passed, fn, "passed"));
    *passed = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(report, fn, "report"));
    *passed = report->passed ? 1 : 0;
    return Status::Ok();
  });
}

carton_status carton_self_test_report_count(const carton_self_test_report* report, size_t* count) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(count, fn, "count"));
    *count = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(report, fn, "report"));
    *count = report->tests.size();
    return Status::Ok();
  });
}

carton_status carton_self_test_report_test(const carton_self_test_report* report, size_t index,
                                           const char** name, int* passed, const char** message) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(name, fn, "name"));
    *name = nullptr;
    if (passed != nullptr) *passed = 0;
    if (message != nullptr) *message = nullptr;
    CARTON_ASSIGN_OR_RETURN(const auto* test, capi::TestAt(fn, report, index));
    *name = test->name.c_str();
    if (passed != nullptr) *passed = test->passed ? 1 : 0;
    if (message != nullptr) *message = test->message.c_str();
    return Status::Ok();
  });
}

}  // extern "C"
