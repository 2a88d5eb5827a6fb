// Private: parses the JSON of a sharded checkpoint's index
// (model.safetensors.index.json). The only file that sees nlohmann types for
// it is sharded_index.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "carton/common/status.h"

namespace carton::safetensors::internal {

struct ShardIndex {
  // The "metadata" object as compact JSON; "{}" when absent.
  std::string metadata_json = "{}";
  // metadata.total_size when it is a non-negative integer.
  std::optional<std::uint64_t> total_size;
  // (tensor name, shard name) pairs, sorted by tensor name; names unique.
  std::vector<std::pair<std::string, std::string>> weight_map;
};

// Parses `json`, the text of an index. Untrusted input. Rejects invalid
// JSON, nesting deeper than `max_depth`, a key repeated in any object, a
// non-object root, a missing or non-object "weight_map", a non-string shard
// name and a non-object "metadata", all with kCorrupt. Shard names are not
// checked as paths here. Messages carry no file name; the caller adds it.
Result<ShardIndex> ParseShardIndex(std::string_view json, std::size_t max_depth);

}  // namespace carton::safetensors::internal
