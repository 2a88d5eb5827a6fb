#include "consistency.h"

#include <algorithm>

#include "carton/common/bytes.h"

namespace carton::internal {
namespace {

constexpr std::string_view kTensorDataPrefix = "@tensor_data/";
constexpr std::string_view kMiscPrefix = "@misc/";
constexpr std::string_view kIndex = "tensor_data/index.toml";

std::string Where(const std::vector<TextPosition>& positions, std::size_t i) {
  std::string out = "carton.toml";
  if (i < positions.size() && positions[i].line > 0) {
    out += ":" + std::to_string(positions[i].line) + ":" + std::to_string(positions[i].column);
  }
  return out;
}

class RefChecker {
 public:
  RefChecker(const std::optional<TensorDataIndex>& index, const CartonFiles& files,
             std::vector<VerifyProblem>* problems)
      : index_(index), files_(files), problems_(problems) {}

  void Ref(const std::string& where, const std::string& what, const std::string& ref,
           bool allow_misc) {
    std::string_view r = ref;
    if (r.starts_with(kTensorDataPrefix)) {
      std::string name(r.substr(kTensorDataPrefix.size()));
      if (!index_ || index_->Find(name) == nullptr) {
        problems_->push_back(
            {where, what + ": " + ref + " names no tensor in tensor_data/index.toml"});
      }
    } else if (allow_misc && r.starts_with(kMiscPrefix)) {
      std::string path = "misc/" + std::string(r.substr(kMiscPrefix.size()));
      if (!files_.Present(path))
        problems_->push_back({where, what + ": " + ref + " names no file in misc/"});
    }
  }

  void Refs(const std::string& where, const std::string& what, const TensorRefs& refs,
            bool allow_misc) {
    for (const auto& [name, ref] : refs) Ref(where, what, ref, allow_misc);
  }

  void Names(const std::string& where, const std::string& what, const TensorRefs& refs,
             const std::vector<TensorSpec>& declared, const char* kind) {
    if (declared.empty()) return;
    for (const auto& ref : refs) {
      const std::string& name = ref.first;  // a lambda cannot capture a binding in clang 14
      bool found = std::any_of(declared.begin(), declared.end(),
                               [&](const TensorSpec& s) { return s.name == name; });
      if (!found) {
        problems_->push_back({where, what + ": \"" + name + "\" is not a declared " + kind});
      }
    }
  }

 private:
  const std::optional<TensorDataIndex>& index_;
  const CartonFiles& files_;
  std::vector<VerifyProblem>* problems_;
};

}  // namespace

std::optional<TensorDataIndex> CheckTensorData(const CartonFiles& files,
                                               const TensorDataLimits& limits,
                                               std::vector<VerifyProblem>* problems) {
  const std::string index_path(kIndex);
  if (!files.Present(index_path)) {
    if (files.HasTensorFiles()) {
      problems->push_back({index_path, "missing, but tensor_data/ holds other files"});
    }
    return std::nullopt;
  }
  if (!files.Size(index_path)) return std::nullopt;  // linked; checked when fetched
  auto text = files.ReadText(index_path, limits.max_index_size);
  if (!text.ok()) {
    problems->push_back({index_path, text.status().message()});
    return std::nullopt;
  }
  auto index = ParseIndex(*text, limits);
  if (!index.ok()) {
    problems->push_back({index_path, index.status().message()});
    return std::nullopt;
  }
  for (const auto& t : index->tensors) {
    if (t.nested()) continue;
    std::string path = "tensor_data/" + t.file;
    const std::optional<std::uint64_t> size = files.Size(path);
    if (!size) {
      if (!files.Present(path)) {
        problems->push_back({path, "tensor \"" + t.name + "\" refers to it, but it is missing"});
      }
      continue;
    }
    if (*t.dtype == DataType::kString) {
      auto bytes = files.ReadText(path, limits.max_string_file_size);
      auto decoded = bytes.ok() ? DecodeTensor(t, AsBytes(*bytes), limits)
                                : Result<TensorValue>(bytes.status());
      if (!decoded.ok()) problems->push_back({path, decoded.status().message()});
      continue;
    }
    std::uint64_t numel = 1, need = 0;
    bool overflow = false;
    for (auto d : t.shape) overflow |= !CheckedMul(numel, d, &numel);
    overflow |= !CheckedMul(numel, DataTypeSize(*t.dtype), &need);
    if (overflow || *size != need) {
      problems->push_back(
          {path, "tensor \"" + t.name + "\": " + std::to_string(*size) + " bytes but " +
                     std::string(DataTypeName(*t.dtype)) + " of " + std::to_string(numel) +
                     " elements needs " +
                     (overflow ? std::string("more than 2^64") : std::to_string(need))});
    }
  }
  return std::move(index).value();
}

void CheckReferences(const CartonConfig& c, const ConfigParseDetails& details,
                     const std::optional<TensorDataIndex>& index, const CartonFiles& files,
                     std::vector<VerifyProblem>* problems) {
  RefChecker check(index, files, problems);
  std::vector<std::string> self_test_where;
  for (std::size_t i = 0; i < c.self_tests.size(); ++i) {
    const auto& t = c.self_tests[i];
    const std::string where = Where(details.self_tests, i);
    self_test_where.push_back(where);
    const std::string what = "self-test " + std::to_string(i + 1);
    check.Refs(where, what + " inputs", t.inputs, false);
    check.Names(where, what + " inputs", t.inputs, c.inputs, "input");
    if (t.expected_out) {
      check.Refs(where, what + " expected_out", *t.expected_out, false);
      check.Names(where, what + " expected_out", *t.expected_out, c.outputs, "output");
    }
  }
  if (index) CheckSelfTestTensors(c, self_test_where, *index, problems);
  for (std::size_t i = 0; i < c.examples.size(); ++i) {
    const auto& e = c.examples[i];
    const std::string where = Where(details.examples, i);
    const std::string what = "example " + std::to_string(i + 1);
    check.Refs(where, what + " inputs", e.inputs, true);
    check.Refs(where, what + " sample_out", e.sample_out, true);
    check.Names(where, what + " inputs", e.inputs, c.inputs, "input");
    check.Names(where, what + " sample_out", e.sample_out, c.outputs, "output");
  }
}

}  // namespace carton::internal
