#include "carton/runner/self_test.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "carton/common/quote.h"

namespace carton::runner {

bool SelfTestReport::passed() const {
  for (const auto& t : tests) {
    if (!t.passed) return false;
  }
  return true;
}

namespace {

// "y float32 [2, 3], labels string [2]": what a runner returned, for a
// message about an expected output it did not return (a model whose
// single output is named "output" because carton.toml declares none).
std::string ReturnedNames(const std::vector<Tensor>& outputs) {
  if (outputs.empty()) return "no outputs";
  std::string s;
  for (const auto& o : outputs) {
    if (!s.empty()) s += ", ";
    s += QuoteForMessage(o.name) + " " + std::string(DataTypeName(o.dtype)) + " " +
         safetensors::ShapeToString(o.shape);
  }
  return s;
}

}  // namespace

OutputCheck CheckOutput(const Tensor* actual, const Tensor& expected,
                        const safetensors::CompareOptions& options) {
  OutputCheck c;
  c.name = expected.name;
  if (actual == nullptr) {
    c.message = "missing from the runner's outputs";
    return c;
  }
  if (actual->dtype != expected.dtype) {
    c.message = "dtype " + std::string(DataTypeName(actual->dtype)) + " vs expected " +
                std::string(DataTypeName(expected.dtype));
    return c;
  }
  if (actual->shape != expected.shape) {
    c.message = "shape " + safetensors::ShapeToString(actual->shape) + " vs expected " +
                safetensors::ShapeToString(expected.shape);
    return c;
  }
  if (Status s = actual->Validate(); !s.ok()) {
    c.message = s.message();
    return c;
  }
  if (actual->dtype == DataType::kString) {
    std::uint64_t bad = 0, first = 0;
    for (std::size_t i = 0; i < expected.strings.size(); ++i) {
      if (actual->strings[i] != expected.strings[i] && bad++ == 0) first = i;
    }
    c.passed = bad == 0;
    c.message = c.passed ? "all " + std::to_string(expected.strings.size()) + " strings match"
                         : std::to_string(bad) + " of " + std::to_string(expected.strings.size()) +
                               " strings differ; first at flat index " + std::to_string(first) +
                               ": " + QuoteForMessage(actual->strings[first]) + " vs expected " +
                               QuoteForMessage(expected.strings[first]);
    return c;
  }
  auto r =
      safetensors::AllClose(actual->AsSafetensorsView(), expected.AsSafetensorsView(), options);
  if (!r.ok()) {
    c.message = r.status().message();
    return c;
  }
  c.passed = r->equal;
  c.message = r->message;
  return c;
}

SelfTestReport RunSelfTests(const loader::LoadedCarton& carton, const InferFn& infer,
                            const safetensors::CompareOptions& options) {
  SelfTestReport report;
  for (const auto& set : carton.self_tests()) {
    SelfTestResult r;
    r.name = set.name;
    auto start = std::chrono::steady_clock::now();
    auto outputs = infer(set.inputs);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!outputs.ok()) {
      r.error = outputs.status().message();
      report.tests.push_back(std::move(r));
      continue;
    }
    r.passed = true;
    for (const auto& expected : set.outputs) {
      const Tensor* actual = nullptr;
      for (const auto& o : *outputs) {
        if (o.name == expected.name) actual = &o;
      }
      OutputCheck c = CheckOutput(actual, expected, options);
      if (actual == nullptr) c.message += " (it returned " + ReturnedNames(*outputs) + ")";
      r.passed = r.passed && c.passed;
      r.outputs.push_back(std::move(c));
    }
    report.tests.push_back(std::move(r));
  }
  return report;
}

std::string FormatReport(const SelfTestReport& report) {
  std::string out;
  std::size_t failed = 0;
  for (const auto& t : report.tests) {
    if (!t.passed) ++failed;
    out += (t.passed ? "PASS " : "FAIL ") + t.name;
    if (!t.error.empty()) out += ": inference failed: " + t.error;
    out += "\n";
    for (const auto& o : t.outputs) {
      out += "  " + std::string(o.passed ? "ok   " : "FAIL ") + o.name + ": " + o.message + "\n";
    }
  }
  out += std::to_string(report.tests.size() - failed) + " of " +
         std::to_string(report.tests.size()) + " self-tests passed\n";
  return out;
}

std::string FormatReportJson(const SelfTestReport& report) {
  nlohmann::ordered_json j;
  j["passed"] = report.passed();
  j["tests"] = nlohmann::ordered_json::array();
  for (const auto& t : report.tests) {
    nlohmann::ordered_json e;
    e["name"] = t.name;
    e["passed"] = t.passed;
    e["seconds"] = t.seconds;
    if (!t.error.empty()) e["error"] = t.error;
    e["outputs"] = nlohmann::ordered_json::array();
    for (const auto& o : t.outputs) {
      e["outputs"].push_back({{"name", o.name}, {"passed", o.passed}, {"message", o.message}});
    }
    j["tests"].push_back(std::move(e));
  }
  return j.dump(2) + "\n";
}

}  // namespace carton::runner
