// ShardedFile: one set of tensors spread over several safetensors files.
//
// A sharded checkpoint is an index, `model.safetensors.index.json`:
//
//   {"metadata": {"total_size": 123, ...any JSON...},
//    "weight_map": {"tensor name": "model-00001-of-00002.safetensors", ...}}
//
// plus the shards it names, which live beside it. ShardedFile::Open reads the
// index, opens and validates every shard with File::Open, and checks that
// the index and the shards agree exactly (rules in the comment on Open).
// ShardedFile::FromIndex does the same for an index the caller has read and
// shards it opens itself (e.g. File::OpenSource over HTTP), in parallel.
// Input is untrusted: both the index and the shards.
//
// Ownership: a ShardedFile owns its shards' mappings; every TensorView and
// string_view it hands out borrows from it and stays valid while it lives,
// including after it is moved. Move-only.
// Thread-safety: immutable after Open; const methods may be called
// concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/tensor.h"

namespace carton::safetensors {

class ShardedFile {
 public:
  // Reads the index at `index_json_path` and opens each distinct shard it
  // names, relative to the index's directory. `options` applies to every
  // shard; its max_json_depth also bounds the index's nesting.
  //
  // Errors (kCorrupt unless noted; messages start with the index path):
  //   - the index is not JSON (message gives the byte offset, line and
  //     column), is nested too deeply, or repeats a key in any object
  //     (message names the key and the object holding it);
  //   - the index is not an object, "weight_map" is missing or is not an
  //     object of strings, or "metadata" is present and not an object;
  //   - a shard name is empty, absolute, contains a backslash, a NUL, or an
  //     empty, "." or ".." path component;
  //   - a tensor mapped to a shard is not in that shard;
  //   - a tensor appears in two shards;
  //   - a tensor in a shard is absent from weight_map;
  //   - kNotFound/kIoError for a missing or unreadable index or shard, and
  //     any error of File::Open for a shard (with the shard's path).
  // Other top-level keys of the index are ignored. An empty weight_map gives
  // an empty set with no shards.
  static Result<ShardedFile> Open(const std::string& index_json_path,
                                  const ReaderOptions& options = {});

  // Opens the shard named `shard_name` (a weight_map value that passed the
  // checks above, so a relative path inside the index's directory). Called
  // from several threads at once.
  using ShardOpener = std::function<Result<File>(const std::string& shard_name)>;

  // Open for an index the caller has read: `index_json` is its text and
  // `index_name` its path or URL (for messages and index_path()). Each
  // distinct shard is opened once with `open_shard`, up to `threads` at a
  // time (0: one per core); shards() then lists each File's source(). The
  // same rules and errors as Open; when several shards fail, the first in
  // shard-name order is reported.
  static Result<ShardedFile> FromIndex(const std::string& index_name, std::string_view index_json,
                                       const ShardOpener& open_shard,
                                       const ReaderOptions& options = {}, unsigned threads = 0);

  ShardedFile(ShardedFile&&) noexcept;
  ShardedFile& operator=(ShardedFile&&) noexcept;
  ShardedFile(const ShardedFile&) = delete;
  ShardedFile& operator=(const ShardedFile&) = delete;
  ~ShardedFile();

  // Number of tensors over all shards.
  std::size_t size() const;
  // Tensor names over all shards, sorted by their bytes.
  std::vector<std::string_view> Names() const;
  // nullptr if there is no tensor `name`.
  const TensorView* Find(std::string_view name) const;
  // The tensor `name`, or kNotFound naming it and the index.
  Result<TensorView> Get(std::string_view name) const;

  // Paths of the distinct shards (index directory + weight_map value; for
  // FromIndex, each shard File's source()), in the order of their names.
  // Empty only for an empty weight_map.
  std::span<const std::string> shards() const;
  // The shard holding `name`, as an index into shards(); nullopt if there is
  // no tensor `name`.
  std::optional<std::size_t> ShardOf(std::string_view name) const;
  // The opened shard shards()[i]. REQUIRES: i < shards().size().
  const File& shard(std::size_t i) const;

  // The index's "metadata" object as compact JSON text ("{}" when absent).
  const std::string& metadata_json() const;
  // metadata.total_size when it is a non-negative integer; nullopt
  // otherwise. Not checked against the shards (producers disagree on what
  // it counts).
  std::optional<std::uint64_t> total_size() const;
  // The path given to Open.
  const std::string& index_path() const;

 private:
  struct Impl;
  explicit ShardedFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton::safetensors
