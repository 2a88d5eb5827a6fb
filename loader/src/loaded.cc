#include "loaded.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "carton/common/mapped_file.h"
#include "carton/common/quote.h"
#include "carton/format/tensor_data.h"

namespace carton::loader {

const CartonConfig& LoadedCarton::config() const { return impl_->config; }
const std::optional<manifest::Digest>& LoadedCarton::manifest_hash() const { return impl_->hash; }
const std::string& LoadedCarton::root_dir() const { return impl_->root_dir; }
const std::string& LoadedCarton::model_dir() const { return impl_->model_dir; }
const std::vector<Tensor>& LoadedCarton::tensors() const { return impl_->tensors; }
const std::vector<MiscFile>& LoadedCarton::misc_files() const { return impl_->misc; }
const std::vector<TensorSet>& LoadedCarton::self_tests() const { return impl_->self_tests; }
const std::vector<TensorSet>& LoadedCarton::examples() const { return impl_->examples; }
const std::vector<ModelSafetensors>& LoadedCarton::model_safetensors() const {
  return impl_->model_safetensors;
}
ByteView LoadedCarton::carton_mapping() const { return impl_->carton_mapping; }
const LoadStats& LoadedCarton::stats() const { return impl_->stats; }

const std::vector<NestedTensor>& LoadedCarton::nested_tensors() const { return impl_->nested; }

const Tensor* LoadedCarton::FindTensor(std::string_view name) const {
  for (const auto& t : impl_->tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const NestedTensor* LoadedCarton::FindNestedTensor(std::string_view name) const {
  for (const auto& n : impl_->nested) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

namespace internal {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTensorDataRef = "@tensor_data/";
constexpr std::string_view kMiscRef = "@misc/";

Result<FileView> ViewOf(const CartonState& impl, const ViewProvider& views,
                        const std::string& path) {
  if (auto v = views(path)) return *v;
  std::string local = impl.root_dir + "/" + path;
  auto mapped = MappedFile::Open(local);
  if (!mapped.ok()) return mapped.status();
  auto owner = std::make_shared<const MappedFile>(std::move(mapped).value());
  return FileView{owner->bytes(), owner};
}

// The files under root/sub, as carton paths ("misc/a.png"), sorted.
std::vector<std::string> ListFiles(const std::string& root, const std::string& sub) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::path base = fs::path(root) / sub;
  if (!fs::is_directory(base, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(fs::relative(it->path(), root, ec).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status LoadTensors(CartonState* impl, const ViewProvider& views) {
  std::string dir = impl->root_dir + "/tensor_data";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::Ok();
  CARTON_ASSIGN_OR_RETURN(TensorDataIndex index, ReadTensorDataIndex(dir));
  for (const auto& e : index.tensors) {
    if (e.nested()) continue;
    if (*e.dtype == DataType::kString) {
      CARTON_ASSIGN_OR_RETURN(TensorValue v, ReadTensor(dir, e));
      impl->tensors.push_back(Tensor::Strings(e.name, e.shape, std::move(v.strings)));
      continue;
    }
    std::string path = "tensor_data/" + e.file;
    auto view = ViewOf(*impl, views, path);
    if (!view.ok()) {
      if (view.status().code() == StatusCode::kNotFound) {
        return Corrupt(path + ": tensor \"" + e.name + "\" names a file that is not there");
      }
      return view.status();
    }
    Tensor t = Tensor::View(e.name, *e.dtype, e.shape, view->bytes, view->owner);
    Status s = t.Validate();
    if (!s.ok()) return Corrupt(path + ": " + s.message());
    impl->tensors.push_back(std::move(t));
  }
  // ReadTensorDataIndex checked that every inner name is a non-nested
  // entry, so each is in impl->tensors (index names are unique).
  for (const auto& e : index.tensors) {
    if (!e.nested()) continue;
    NestedTensor n{e.name, {}};
    for (const auto& inner : e.inner) {
      auto it = std::find_if(impl->tensors.begin(), impl->tensors.end(),
                             [&](const Tensor& t) { return t.name == inner; });
      if (it == impl->tensors.end()) {
        return Internal("tensor_data/index.toml: nested tensor \"" + e.name +
                        "\": inner tensor \"" + inner + "\" not loaded");
      }
      n.inner.push_back(*it);
    }
    impl->nested.push_back(std::move(n));
  }
  return Status::Ok();
}

std::vector<std::string> Under(const std::vector<std::string>& paths, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (p.rfind(prefix, 0) == 0) out.push_back(p);
  }
  return out;
}

Status LoadModelSafetensors(CartonState* impl, const ViewProvider& views,
                            const std::vector<std::string>& model_files) {
  for (const auto& path : model_files) {
    if (path.size() < 12 || path.substr(path.size() - 12) != ".safetensors") continue;
    CARTON_ASSIGN_OR_RETURN(FileView view, ViewOf(*impl, views, path));
    auto file = safetensors::File::FromBuffer(view.bytes);
    if (!file.ok()) return file.status().WithContext(path);
    // The File borrows the view; keep both together and hand out an
    // aliasing pointer.
    struct Holder {
      std::shared_ptr<const void> owner;
      safetensors::File file;
    };
    auto holder = std::make_shared<const Holder>(Holder{view.owner, std::move(file).value()});
    impl->model_safetensors.push_back(
        {path, std::shared_ptr<const safetensors::File>(holder, &holder->file)});
  }
  return Status::Ok();
}

// Resolves the references of one self-test or example, in the order the
// config declares its inputs or outputs (then by name).
Status Resolve(const CartonState& impl, const TensorRefs& refs,
               const std::vector<TensorSpec>& specs, const std::string& where,
               std::vector<Tensor>* tensors, std::vector<std::pair<std::string, MiscFile>>* files) {
  std::vector<std::pair<std::string, std::string>> ordered(refs.begin(), refs.end());
  auto rank = [&](const std::string& name) {
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].name == name) return i;
    }
    return specs.size();
  };
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  for (const auto& [name, ref] : ordered) {
    if (ref.rfind(kTensorDataRef, 0) == 0) {
      std::string tname = ref.substr(kTensorDataRef.size());
      const Tensor* t = nullptr;
      for (const auto& c : impl.tensors) {
        if (c.name == tname) t = &c;
      }
      if (t == nullptr) {
        return Corrupt(where + ": " + name + " = \"" + ref +
                       "\": no such tensor in tensor_data/index.toml (nested tensors are not "
                       "supported here)");
      }
      Tensor copy = *t;
      copy.name = name;
      tensors->push_back(std::move(copy));
    } else if (ref.rfind(kMiscRef, 0) == 0) {
      std::string path = "misc/" + ref.substr(kMiscRef.size());
      std::error_code ec;
      std::string local = impl.root_dir + "/" + path;
      if (!fs::is_regular_file(local, ec)) {
        return Corrupt(where + ": " + name + " = \"" + ref + "\": no such file");
      }
      files->push_back({name, MiscFile{path, local}});
    } else {
      return Corrupt(where + ": " + name + " = \"" + ref + "\": not a @tensor_data/ reference");
    }
  }
  return Status::Ok();
}

}  // namespace

Status BuildContents(CartonState* impl, const ViewProvider& views,
                     const std::vector<std::string>* paths) {
  CARTON_RETURN_IF_ERROR(LoadTensors(impl, views));
  CARTON_RETURN_IF_ERROR(LoadModelSafetensors(
      impl, views, paths ? Under(*paths, "model/") : ListFiles(impl->root_dir, "model")));
  for (const auto& path : paths ? Under(*paths, "misc/") : ListFiles(impl->root_dir, "misc")) {
    impl->misc.push_back({path, impl->root_dir + "/" + path});
  }
  const auto& c = impl->config;
  // A [[self_test]] or [[example]] as named tensor sets; `kind` names it in
  // messages ("self_test") and `outputs_key` its outputs' field.
  auto make_set = [&](const char* kind, std::size_t i, const std::optional<std::string>& name,
                      const std::optional<std::string>& description, const TensorRefs& inputs,
                      const TensorRefs* outputs, const char* outputs_key) -> Result<TensorSet> {
    TensorSet set;
    set.name = name && !name->empty() ? *name : std::string(kind) + "[" + std::to_string(i) + "]";
    set.description = description;
    std::string where = std::string("carton.toml: ") + kind + " " + QuoteForMessage(set.name);
    CARTON_RETURN_IF_ERROR(
        Resolve(*impl, inputs, c.inputs, where + " inputs", &set.inputs, &set.input_files));
    if (outputs != nullptr) {
      CARTON_RETURN_IF_ERROR(Resolve(*impl, *outputs, c.outputs, where + " " + outputs_key,
                                     &set.outputs, &set.output_files));
    }
    return set;
  };
  for (std::size_t i = 0; i < c.self_tests.size(); ++i) {
    const SelfTest& st = c.self_tests[i];
    CARTON_ASSIGN_OR_RETURN(
        TensorSet set, make_set("self_test", i, st.name, st.description, st.inputs,
                                st.expected_out ? &*st.expected_out : nullptr, "expected_out"));
    impl->self_tests.push_back(std::move(set));
  }
  for (std::size_t i = 0; i < c.examples.size(); ++i) {
    const Example& ex = c.examples[i];
    CARTON_ASSIGN_OR_RETURN(TensorSet set, make_set("example", i, ex.name, ex.description,
                                                    ex.inputs, &ex.sample_out, "sample_out"));
    impl->examples.push_back(std::move(set));
  }
  return Status::Ok();
}

}  // namespace internal
}  // namespace carton::loader
