// Private: LoadedCarton's state and how it is built from a directory.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "carton/common/file_lock.h"
#include "carton/loader/loader.h"

namespace carton::loader {

struct LoadedCarton::Impl {
  CartonConfig config;
  std::optional<manifest::Digest> hash;
  std::string root_dir;
  std::string model_dir;
  std::vector<Tensor> tensors;
  std::vector<NestedTensor> nested;
  std::vector<MiscFile> misc;
  std::vector<TensorSet> self_tests;
  std::vector<TensorSet> examples;
  std::vector<ModelSafetensors> model_safetensors;
  LoadStats stats;
  ByteView carton_mapping;
  std::shared_ptr<const void> carton_owner;  // keeps carton_mapping alive
  FileLock use_lock;                         // shared lock on the cache entry
};

namespace internal {

// Makes LoadedCartons: the one friend of LoadedCarton, so its state stays
// private to the loader.
struct LoadedCartonFactory {
  using State = LoadedCarton::Impl;
  static LoadedCarton Make(std::shared_ptr<const State> state) {
    return LoadedCarton(std::move(state));
  }
};
// What a LoadedCarton holds.
using CartonState = LoadedCartonFactory::State;

// The bytes of a file of the carton (path as in MANIFEST), and what keeps
// them alive.
struct FileView {
  ByteView bytes;
  std::shared_ptr<const void> owner;
};
// Gives a view of a file by its carton path, or nullopt to map the file
// under root_dir.
using ViewProvider = std::function<std::optional<FileView>(const std::string& path)>;

// Fills `impl` (whose config, root_dir and model_dir are set) with the
// tensors, misc files, model safetensors, self-tests and examples of the
// carton whose files are `paths` (carton paths; null: the files found
// under impl->root_dir). Errors name the file: kCorrupt, kUnsupported
// (nested tensors in a self-test), kIoError.
Status BuildContents(CartonState* impl, const ViewProvider& views,
                     const std::vector<std::string>* paths);

}  // namespace internal
}  // namespace carton::loader
