// The loader: turns a carton, wherever it is (a file, a URL, an oci://
// reference, a directory: carton/carton/source.h), into files on disk and
// tensors in memory.
//
//   carton::Environment env = carton::loader::DefaultEnvironment().value();
//   auto source = carton::OpenSource("model.carton", env).value();
//   auto c = carton::loader::Load(*source);
//   if (!c.ok()) { /* c.status().message() names the file and the rule */ }
//   framework.open(c->model_dir() + "/model.pt");
//   for (const auto& t : c->self_tests()) { /* t.inputs, t.outputs */ }
//
// A .carton is materialized once per machine into the manifest-hash cache
// (cache.h, loader/FORMAT.md "Cache"): every file is checked against
// MANIFEST on the way in, and a later load of any carton with the same
// manifest hash reads only its MANIFEST. Stored (uncompressed, aligned)
// entries are zero-copy: tensor_data tensors and model/*.safetensors
// tensors are views into a read-only mapping of the .carton itself when it
// is the file the entry was verified from, else into a mapping of the
// entry's files. Nothing is read into heap memory but metadata and string
// tensors.
//
// Ownership: a LoadedCarton owns its mappings and a shared lock that keeps
// `carton cache gc` from removing the entry while it lives; every view it
// hands out borrows from it (copies of a LoadedCarton share them).
// Thread-safety: Load may run on many threads and processes at once; a
// LoadedCarton is immutable and its const methods may be called
// concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/info.h"
#include "carton/carton/source.h"
#include "carton/common/bytes.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor.h"
#include "carton/manifest/sha256.h"
#include "carton/safetensors/file.h"

namespace carton::loader {

// The tensors a LoadedCarton hands out (carton/format/tensor.h).
using carton::NestedTensor;
using carton::Tensor;

namespace internal {
struct LoadedCartonFactory;
}  // namespace internal

// What a load takes beyond its source's Environment, whose rules it follows
// (the cache root, the threads that hash and copy on a miss, the network
// rules linked files and downloads are fetched by).
struct LoadOptions {
  // On a cache hit, rehash every file of the entry (as `carton cache
  // verify` does) instead of checking only that each file has its size.
  bool verify_cache_hit = false;
  // If set, called on a miss with the bytes done so far and the total:
  // first the download of a carton given by URL (which then draws no line
  // of its own), then the files hashed, copied, decoded or fetched into
  // the cache entry. Set it to a function that does nothing for silence.
  ProgressFn progress;
};

// A file of misc/ (or of the model directory) by its path in the carton.
struct MiscFile {
  std::string path;        // "misc/input.png"
  std::string local_path;  // absolute path of the file on disk
};

// The tensors of one [[self_test]] or [[example]]. A reference to
// @misc/... (examples only) appears in the *_files lists instead.
struct TensorSet {
  std::string name;  // the entry's name, or "self_test[i]" / "example[i]"
  std::optional<std::string> description;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;  // expected_out / sample_out
  std::vector<std::pair<std::string, MiscFile>> input_files;
  std::vector<std::pair<std::string, MiscFile>> output_files;
};

// A safetensors file found under model/, validated, its tensors viewing
// the mapping (zero-copy).
struct ModelSafetensors {
  std::string path;  // "model/model.safetensors"
  std::shared_ptr<const safetensors::File> file;
};

// How a load went, for callers that print or measure it.
struct LoadStats {
  bool cache_hit = false;
  bool mapped_from_carton = false;  // stored views point into the .carton
  std::uint64_t bytes_hashed = 0;
  std::uint64_t bytes_copied = 0;   // stored files copied into the entry
  std::uint64_t bytes_decoded = 0;  // compressed files decoded into it
  std::uint64_t bytes_fetched = 0;  // linked files taken from the blob cache
};

class LoadedCarton {
 public:
  const CartonConfig& config() const;
  // nullopt for LoadUnpacked of a directory without MANIFEST.
  const std::optional<manifest::Digest>& manifest_hash() const;
  // The directory holding carton.toml, model/, tensor_data/ and misc/ (the
  // cache entry, or the unpacked directory).
  const std::string& root_dir() const;
  // Absolute path of model/ (frameworks open files by name there).
  const std::string& model_dir() const;

  // Every non-nested tensor of tensor_data/, in index order (the inner
  // tensors of nested tensors included, under their index names).
  const std::vector<Tensor>& tensors() const;
  const Tensor* FindTensor(std::string_view name) const;
  // Every nested tensor of tensor_data/, in index order; their inner
  // tensors view the same bytes as the entries of tensors() they name.
  const std::vector<NestedTensor>& nested_tensors() const;
  const NestedTensor* FindNestedTensor(std::string_view name) const;
  const std::vector<MiscFile>& misc_files() const;
  const std::vector<TensorSet>& self_tests() const;
  const std::vector<TensorSet>& examples() const;
  const std::vector<ModelSafetensors>& model_safetensors() const;

  // The read-only mapping of the .carton when stored views point into it
  // (empty otherwise): the zero-copy proof.
  ByteView carton_mapping() const;
  const LoadStats& stats() const;

 private:
  struct Impl;
  friend struct internal::LoadedCartonFactory;  // Load and LoadUnpacked make them
  explicit LoadedCarton(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

  std::shared_ptr<const Impl> impl_;
};

// Loads the carton `source` reads: a .carton file, a URL, an oci://
// reference, or a directory holding an unpacked carton (carton.toml,
// model/, ...; loaded in place, checked against its MANIFEST only if
// verify_cache_hit is set) or a cache entry. Input is untrusted. A hit
// reads the manifest hash alone (CartonSource::ManifestHash: an oci://
// reference costs one manifest request); a miss reads the source whole
// (a URL downloaded, an artifact pulled) and its MANIFEST must hash to what
// the lookup read (loader/FORMAT.md "URLs", "OCI references").
// Errors: kNotFound, kCorrupt (bad archive, a file whose sha256 is not the
// one in MANIFEST, a damaged cache entry that cannot be rebuilt; naming the
// file), kUnsupported (also: a server that ignores HTTP Range),
// kNetworkError (a URL or a linked file), kIoError. A URL is read with range
// requests (MANIFEST only on a hit) and downloaded on a miss
// (loader/FORMAT.md "URLs").
Result<LoadedCarton> Load(CartonSource& source, const LoadOptions& options = {});

// Loads a model directory that has not been packed: `dir` is the model
// folder (what would become model/), used in place; the config has only
// the runner fields. `framework_version` is a semver requirement
// ("=1.12.1"). Errors: kNotFound, kInvalidArgument (bad name or
// requirement).
Result<LoadedCarton> LoadUnpacked(const std::string& dir, const std::string& runner_name,
                                  const std::string& framework_version,
                                  std::uint64_t runner_compat_version = 1);

}  // namespace carton::loader
