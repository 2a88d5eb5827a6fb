// The tensors of each [[self_test]] against the [[input]]s and [[output]]s
// they feed and expect: dtype, rank, fixed dimensions, and symbols, which
// resolve to one value across all the inputs and outputs of one self-test
// (spec: "the same value wherever it's used across all inputs and
// outputs"). Shared by Verify() and Pack() through CheckReferences.

#include <map>
#include <string>
#include <variant>

#include "carton/format/tensor.h"
#include "consistency.h"

namespace carton::internal {
namespace {

constexpr std::string_view kTensorDataPrefix = "@tensor_data/";

// One self-test's check: the symbols bound so far, and where.
class SelfTestChecker {
 public:
  SelfTestChecker(std::string where, std::string label, const TensorDataIndex& index,
                  std::vector<VerifyProblem>* problems)
      : where_(std::move(where)), label_(std::move(label)), index_(index), problems_(problems) {}

  void Check(const TensorRefs& refs, const std::vector<TensorSpec>& declared, const char* kind) {
    if (declared.empty()) return;
    for (const auto& [name, ref] : refs) {
      const TensorSpec* spec = FindSpec(declared, name);
      const TensorDataEntry* entry = FindEntry(ref);
      // Undeclared names and dangling references are CheckReferences' own.
      if (spec == nullptr || entry == nullptr || entry->nested()) continue;
      const std::string tensor = std::string(kind) + " \"" + name + "\"";
      const std::string decl = "[[" + std::string(kind) + "]] \"" + name + "\"";
      if (*entry->dtype != spec->dtype) {
        Problem(tensor + ": dtype " + std::string(DataTypeName(*entry->dtype)) + ", but " + decl +
                " is " + std::string(DataTypeName(spec->dtype)));
        continue;
      }
      CheckShape(tensor, decl, spec->shape, entry->shape);
    }
  }

 private:
  static const TensorSpec* FindSpec(const std::vector<TensorSpec>& declared,
                                    const std::string& name) {
    for (const auto& s : declared) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }

  const TensorDataEntry* FindEntry(std::string_view ref) const {
    if (!ref.starts_with(kTensorDataPrefix)) return nullptr;
    return index_.Find(ref.substr(kTensorDataPrefix.size()));
  }

  void Problem(const std::string& message) {
    problems_->push_back({where_, label_ + ": " + message});
  }

  // False (and a problem) when `symbol` was bound to another value.
  template <typename T>
  bool Bind(std::map<std::string, std::pair<T, std::string>>* bound, const std::string& symbol,
            const T& value, const std::string& tensor) {
    auto [it, fresh] = bound->emplace(symbol, std::make_pair(value, tensor));
    return fresh || it->second.first == value;
  }

  void CheckShape(const std::string& tensor, const std::string& decl, const Shape& declared,
                  const std::vector<std::uint64_t>& shape) {
    const std::string actual = tensor + ": shape " + ShapeText(shape) + ", but ";
    if (const auto* sym = std::get_if<SymbolDim>(&declared)) {
      if (!Bind(&shapes_, sym->name, shape, tensor)) {
        const auto& [other, who] = shapes_.at(sym->name);
        Problem(actual + "shape symbol \"" + sym->name + "\" of " + decl + " is " +
                ShapeText(other) + " in " + who);
      }
      return;
    }
    const auto* dims = std::get_if<std::vector<Dimension>>(&declared);
    if (dims == nullptr) return;  // "*": any shape
    if (dims->size() != shape.size()) {
      Problem(actual + decl + " has rank " + std::to_string(dims->size()));
      return;
    }
    for (std::size_t i = 0; i < dims->size(); ++i) {
      const std::string dim = "dimension " + std::to_string(i);
      if (const auto* fixed = std::get_if<std::uint64_t>(&(*dims)[i])) {
        if (*fixed != shape[i]) {
          Problem(actual + dim + " of " + decl + " is " + std::to_string(*fixed));
          return;
        }
      } else if (const auto* s = std::get_if<SymbolDim>(&(*dims)[i])) {
        if (!Bind(&dims_, s->name, shape[i], tensor)) {
          const auto& [other, who] = dims_.at(s->name);
          Problem(actual + dim + " of " + decl + " is symbol \"" + s->name + "\", which is " +
                  std::to_string(other) + " in " + who);
          return;
        }
      }
    }
  }

  const std::string where_;
  const std::string label_;
  const TensorDataIndex& index_;
  std::vector<VerifyProblem>* problems_;
  std::map<std::string, std::pair<std::uint64_t, std::string>> dims_;
  std::map<std::string, std::pair<std::vector<std::uint64_t>, std::string>> shapes_;
};

}  // namespace

void CheckSelfTestTensors(const CartonConfig& c, const std::vector<std::string>& where,
                          const TensorDataIndex& index, std::vector<VerifyProblem>* problems) {
  for (std::size_t i = 0; i < c.self_tests.size(); ++i) {
    const SelfTest& t = c.self_tests[i];
    std::string label = "self_test " + (t.name ? "\"" + *t.name + "\"" : std::to_string(i + 1));
    SelfTestChecker check(i < where.size() ? where[i] : "carton.toml", std::move(label), index,
                          problems);
    check.Check(t.inputs, c.inputs, "input");
    if (t.expected_out) check.Check(*t.expected_out, c.outputs, "output");
  }
}

}  // namespace carton::internal
