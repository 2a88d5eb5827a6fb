// tensor_data/index.toml: parsing (untrusted) and writing.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "carton/common/quote.h"
#include "carton/common/toml_string.h"
#include "carton/format/tensor_data.h"
#include "carton/safetensors/tensor.h"
#include "tensor_data_internal.h"
#include "toml_util.h"

namespace carton {

namespace format_internal {

std::optional<std::string> PathProblem(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.front() == '/') return "is absolute";
  if (path.find('\\') != std::string_view::npos) return "contains a backslash";
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  std::size_t start = 0;
  while (true) {
    std::size_t end = path.find('/', start);
    std::string_view part = path.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty()) return "has an empty component";
    if (part == "." || part == "..") return "has a \"" + std::string(part) + "\" component";
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace format_internal

namespace {

using format_internal::At;
using format_internal::ParseToml;
using format_internal::PathProblem;

constexpr std::string_view kSource = "tensor_data/index.toml";
constexpr std::string_view kNested = "nested";

std::string_view TypeName(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

// Parses one [[tensor]] table. `position` is its index in the array.
class EntryParser {
 public:
  EntryParser(const toml::table& table, std::size_t position)
      : table_(table), label_("tensor[" + std::to_string(position) + "]") {}

  Result<TensorDataEntry> Parse() {
    TensorDataEntry e;
    CARTON_ASSIGN_OR_RETURN(const toml::node* name, Required("name", toml::node_type::string));
    e.name = name->as_string()->get();
    if (e.name.empty()) return Corrupt(At(kSource, name->source(), label_ + ": name is empty"));
    label_ = "tensor " + QuoteForMessage(e.name);

    CARTON_ASSIGN_OR_RETURN(const toml::node* dtype, Required("dtype", toml::node_type::string));
    const std::string& dtype_name = dtype->as_string()->get();
    if (dtype_name != kNested) {
      e.dtype = ParseDataType(dtype_name);
      if (!e.dtype) {
        return Unsupported(At(kSource, dtype->source(),
                              label_ + ": unknown dtype " + QuoteForMessage(dtype_name)));
      }
    }
    if (e.nested()) {
      CARTON_RETURN_IF_ERROR(ParseNested(&e));
    } else {
      CARTON_RETURN_IF_ERROR(ParsePlain(&e));
    }
    return e;
  }

  // Where each inner name was given, parallel to the entry's `inner`.
  const std::vector<toml::source_region>& inner_sources() const { return inner_sources_; }

 private:
  Status TypeError(const toml::node& n, std::string_view what, std::string_view want) const {
    return Corrupt(At(kSource, n.source(),
                      label_ + ": " + std::string(what) + " is " + std::string(TypeName(n.type())) +
                          ", not " + std::string(want)));
  }

  Result<const toml::node*> Required(std::string_view key, toml::node_type type) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) {
      return Corrupt(
          At(kSource, table_.source(), label_ + ": missing \"" + std::string(key) + "\""));
    }
    if (n->type() != type) {
      return TypeError(*n, key, TypeName(type));
    }
    return n;
  }

  Status ParseNested(TensorDataEntry* e) {
    for (std::string_view key : {"shape", "file"}) {
      if (const toml::node* n = table_.get(key)) {
        return Corrupt(At(kSource, n->source(),
                          label_ + ": a nested tensor has no \"" + std::string(key) + "\""));
      }
    }
    CARTON_ASSIGN_OR_RETURN(const toml::node* inner, Required("inner", toml::node_type::array));
    std::size_t k = 0;
    for (const toml::node& item : *inner->as_array()) {
      if (!item.is_string()) {
        return TypeError(item, "inner[" + std::to_string(k) + "]", "a string");
      }
      e->inner.push_back(item.as_string()->get());
      inner_sources_.push_back(item.source());
      ++k;
    }
    return Status::Ok();
  }

  Status ParsePlain(TensorDataEntry* e) {
    CARTON_ASSIGN_OR_RETURN(const toml::node* shape, Required("shape", toml::node_type::array));
    std::size_t k = 0;
    for (const toml::node& dim : *shape->as_array()) {
      std::string what = "shape[" + std::to_string(k) + "]";
      if (!dim.is_integer()) return TypeError(dim, what, "an integer");
      const std::int64_t v = dim.as_integer()->get();
      if (v < 0) {
        return Corrupt(
            At(kSource, dim.source(),
               label_ + ": " + what + " is " + std::to_string(v) + ", not a non-negative integer"));
      }
      e->shape.push_back(static_cast<std::uint64_t>(v));
      ++k;
    }
    std::optional<std::uint64_t> numel = safetensors::CheckedNumel(e->shape);
    std::uint64_t bytes = 0;
    if (!numel || !CheckedMul(*numel, DataTypeSize(*e->dtype), &bytes)) {
      return Corrupt(
          At(kSource, shape->source(),
             label_ + ": shape " + safetensors::ShapeToString(e->shape) + " overflows 64 bits"));
    }

    CARTON_ASSIGN_OR_RETURN(const toml::node* file, Required("file", toml::node_type::string));
    e->file = file->as_string()->get();
    if (std::optional<std::string> problem = PathProblem(e->file)) {
      return Corrupt(At(kSource, file->source(),
                        label_ + ": file " + QuoteForMessage(e->file) + " " + *problem));
    }
    const bool is_string = *e->dtype == DataType::kString;
    const std::string_view ext = is_string ? ".toml" : ".bin";
    if (!e->file.ends_with(ext)) {
      return Corrupt(At(kSource, file->source(),
                        label_ + ": file " + QuoteForMessage(e->file) + " of a " +
                            std::string(DataTypeName(*e->dtype)) + " tensor must end in " +
                            std::string(ext)));
    }

    // `inner` is tolerated on plain tensors as long as it is empty: writers
    // emit `inner = []` on every entry.
    if (const toml::node* inner = table_.get("inner")) {
      if (!inner->is_array()) return TypeError(*inner, "inner", "an array");
      if (!inner->as_array()->empty()) {
        return Corrupt(
            At(kSource, inner->source(), label_ + ": inner is only allowed on nested tensors"));
      }
    }
    return Status::Ok();
  }

  const toml::table& table_;
  std::string label_;
  std::vector<toml::source_region> inner_sources_;
};

void AppendStringArray(std::string* out, const std::vector<std::string>& items) {
  if (items.empty()) {
    out->append("[]");
    return;
  }
  out->append("[\n");
  for (const std::string& s : items) {
    out->append("    ");
    AppendTomlString(out, s);
    out->append(",\n");
  }
  out->push_back(']');
}

// An inner name of nested entry `entry`, checked once every name is known.
struct InnerRef {
  std::size_t entry;
  std::size_t k;
  toml::source_region where;
};

// Entry positions by name; the names are borrowed from the index's entries.
using NameMap = std::unordered_map<std::string_view, std::size_t>;

// Parses each [[tensor]] table of `items` into `index`, collecting the
// inner names of nested entries in `inner_refs`.
Status ParseEntries(const toml::array& items, TensorDataIndex& index,
                    std::vector<InnerRef>& inner_refs) {
  index.tensors.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const toml::node& item = items[i];
    if (!item.is_table()) {
      return Corrupt(At(kSource, item.source(),
                        "tensor[" + std::to_string(i) + "] is " +
                            std::string(TypeName(item.type())) + ", not a table"));
    }
    EntryParser parser(*item.as_table(), i);
    CARTON_ASSIGN_OR_RETURN(TensorDataEntry entry, parser.Parse());
    for (std::size_t k = 0; k < parser.inner_sources().size(); ++k) {
      inner_refs.push_back({i, k, parser.inner_sources()[k]});
    }
    index.tensors.push_back(std::move(entry));
  }
  return Status::Ok();
}

// Indexes the entries by name, refusing a duplicate. REQUIRES: `index`
// holds the parsed tables of `items` and no longer grows.
Result<NameMap> IndexNames(const TensorDataIndex& index, const toml::array& items) {
  NameMap by_name;
  for (std::size_t i = 0; i < index.tensors.size(); ++i) {
    const std::string& name = index.tensors[i].name;
    auto [it, inserted] = by_name.emplace(name, i);
    if (!inserted) {
      const toml::node* n = items[i].as_table()->get("name");
      return Corrupt(At(kSource, n->source(),
                        "tensor " + QuoteForMessage(name) + ": duplicate name (also tensor[" +
                            std::to_string(it->second) + "])"));
    }
  }
  return by_name;
}

// Each inner name must be an entry of the index, and not a nested one.
Status CheckInnerRefs(const TensorDataIndex& index, const std::vector<InnerRef>& inner_refs,
                      const NameMap& by_name) {
  for (const InnerRef& ref : inner_refs) {
    const TensorDataEntry& outer = index.tensors[ref.entry];
    const std::string& target = outer.inner[ref.k];
    auto it = by_name.find(target);
    const std::string label = "tensor " + QuoteForMessage(outer.name) + ": inner[" +
                              std::to_string(ref.k) + "] " + QuoteForMessage(target);
    if (it == by_name.end()) {
      return Corrupt(At(kSource, ref.where, label + " is not in the index"));
    }
    if (index.tensors[it->second].nested()) {
      return Corrupt(At(kSource, ref.where, label + " is itself nested"));
    }
  }
  return Status::Ok();
}

}  // namespace

const TensorDataEntry* TensorDataIndex::Find(std::string_view name) const {
  for (const TensorDataEntry& e : tensors) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Result<TensorDataIndex> ParseIndex(std::string_view toml_text, const TensorDataLimits& limits) {
  if (toml_text.size() > limits.max_index_size) {
    return Corrupt(std::string(kSource) + ": " + std::to_string(toml_text.size()) +
                   " bytes, more than the limit of " + std::to_string(limits.max_index_size));
  }
  CARTON_ASSIGN_OR_RETURN(toml::table doc, ParseToml(toml_text, kSource));

  TensorDataIndex index;
  const toml::node* list = doc.get("tensor");
  if (list == nullptr) return index;
  if (!list->is_array()) {
    return Corrupt(
        At(kSource, list->source(),
           "tensor is " + std::string(TypeName(list->type())) + ", not an array of tables"));
  }

  const toml::array& items = *list->as_array();
  std::vector<InnerRef> inner_refs;
  CARTON_RETURN_IF_ERROR(ParseEntries(items, index, inner_refs));
  // Names are stable now that the vector is full: index them.
  CARTON_ASSIGN_OR_RETURN(const NameMap by_name, IndexNames(index, items));
  CARTON_RETURN_IF_ERROR(CheckInnerRefs(index, inner_refs, by_name));
  return index;
}

std::string WriteIndex(const TensorDataIndex& index) {
  if (index.tensors.empty()) return "tensor = []\n";
  std::string out;
  for (std::size_t i = 0; i < index.tensors.size(); ++i) {
    const TensorDataEntry& e = index.tensors[i];
    if (i > 0) out.push_back('\n');
    out.append("[[tensor]]\nname = ");
    AppendTomlString(&out, e.name);
    out.append("\ndtype = ");
    AppendTomlString(&out, e.nested() ? kNested : DataTypeName(*e.dtype));
    if (!e.nested()) {
      out.append("\nshape = [");
      for (std::size_t k = 0; k < e.shape.size(); ++k) {
        if (k > 0) out.append(", ");
        out.append(std::to_string(e.shape[k]));
      }
      out.append("]\nfile = ");
      AppendTomlString(&out, e.file);
    }
    out.append("\ninner = ");
    AppendStringArray(&out, e.nested() ? e.inner : std::vector<std::string>{});
    out.push_back('\n');
  }
  return out;
}

}  // namespace carton
