#include "carton/safetensors/writer.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

namespace carton::safetensors {
namespace {

// JSON string with serde_json's escaping (nlohmann's strict mode escapes
// the same characters and rejects invalid UTF-8).
Result<std::string> JsonString(const std::string& s, std::string_view what) {
  try {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception&) {
    return InvalidArgument(std::string(what) + " is not valid UTF-8");
  }
}

Status WriteData(const TensorSource& t, std::uint64_t size, const ByteSink& out) {
  if (!t.stream) return out(t.bytes);
  std::uint64_t written = 0;
  Status s = t.stream([&](ByteView chunk) -> Status {
    if (chunk.size() > size - written) {
      return InvalidArgument("tensor \"" + t.name + "\": stream gave more than " +
                             std::to_string(size) + " bytes");
    }
    written += chunk.size();
    return out(chunk);
  });
  CARTON_RETURN_IF_ERROR(s);
  if (written != size) {
    return InvalidArgument("tensor \"" + t.name + "\": stream gave " + std::to_string(written) +
                           " bytes, expected " + std::to_string(size));
  }
  return Status::Ok();
}

Status WriteAll(const PlannedHeader& plan, std::span<const TensorSource> tensors,
                const ByteSink& out) {
  CARTON_RETURN_IF_ERROR(out(plan.header));
  for (std::size_t i : plan.order) {
    const auto& t = tensors[i];
    std::uint64_t size = *ByteSize(t.dtype, *CheckedNumel(t.shape));
    CARTON_RETURN_IF_ERROR(WriteData(t, size, out));
  }
  return Status::Ok();
}

// The order of the tensors' data.
std::vector<std::size_t> DataOrder(std::span<const TensorSource> tensors) {
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  // The reference's order: dtype descending, then name.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (tensors[a].dtype != tensors[b].dtype) return tensors[a].dtype > tensors[b].dtype;
    return tensors[a].name < tensors[b].name;
  });
  return order;
}

// Appends the "__metadata__" member to `json`.
Status AppendMetadata(const Metadata& metadata, std::string* json) {
  *json += "\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : metadata) {
    if (!first) *json += ',';
    first = false;
    CARTON_ASSIGN_OR_RETURN(std::string key, JsonString(k, "metadata key"));
    CARTON_ASSIGN_OR_RETURN(std::string value, JsonString(v, "metadata value of \"" + k + "\""));
    *json += key;
    *json += ':';
    *json += value;
  }
  *json += "}";
  return Status::Ok();
}

// The byte size of `t`'s data, which its bytes (unless streamed) must have.
Result<std::uint64_t> DataSize(const TensorSource& t) {
  auto numel = CheckedNumel(t.shape);
  std::optional<std::uint64_t> size = numel ? ByteSize(t.dtype, *numel) : std::nullopt;
  if (!size) {
    return InvalidArgument("tensor \"" + t.name + "\": " + std::string(DtypeName(t.dtype)) + " " +
                           ShapeToString(t.shape) + " overflows or is not a whole number of bytes");
  }
  if (!t.stream && t.bytes.size() != *size) {
    return InvalidArgument("tensor \"" + t.name + "\": " + std::to_string(t.bytes.size()) +
                           " bytes given but " + std::string(DtypeName(t.dtype)) + " " +
                           ShapeToString(t.shape) + " needs " + std::to_string(*size));
  }
  return *size;
}

// Appends the member of tensor `t`, whose data is [begin, end), to `json`.
Status AppendTensor(const TensorSource& t, std::uint64_t begin, std::uint64_t end,
                    std::string* json) {
  CARTON_ASSIGN_OR_RETURN(std::string name, JsonString(t.name, "tensor name"));
  if (json->size() > 1) *json += ',';
  *json += name;
  *json += ":{\"dtype\":\"";
  *json += DtypeName(t.dtype);
  *json += "\",\"shape\":[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i) *json += ',';
    *json += std::to_string(t.shape[i]);
  }
  *json += "],\"data_offsets\":[";
  *json += std::to_string(begin);
  *json += ',';
  *json += std::to_string(end);
  *json += "]}";
  return Status::Ok();
}

// Appends the members of the tensors, in `order`, to `json`; returns the
// size of their data.
Result<std::uint64_t> AppendTensors(std::span<const TensorSource> tensors,
                                    const std::vector<std::size_t>& order, std::string* json) {
  std::uint64_t offset = 0;
  for (std::size_t n = 0; n < order.size(); ++n) {
    const auto& t = tensors[order[n]];
    if (t.name == "__metadata__") {
      return InvalidArgument("a tensor may not be named \"__metadata__\"");
    }
    if (n > 0 && t.name == tensors[order[n - 1]].name) {
      return InvalidArgument("duplicate tensor name \"" + t.name + "\"");
    }
    CARTON_ASSIGN_OR_RETURN(std::uint64_t size, DataSize(t));
    std::uint64_t end;
    if (!CheckedAdd(offset, size, &end)) return InvalidArgument("total data size overflows");
    CARTON_RETURN_IF_ERROR(AppendTensor(t, offset, end, json));
    offset = end;
  }
  return offset;
}

// The header's bytes: its size, then `json` padded with spaces to the
// alignment.
Result<std::vector<std::byte>> FrameHeader(std::string json, std::uint64_t alignment) {
  // Pad so that 8 + N is a multiple of the alignment.
  std::uint64_t a = alignment;
  std::uint64_t total = 8 + json.size();
  json.append(static_cast<std::size_t>((a - total % a) % a), ' ');
  if (json.size() > kMaxHeaderSize) {
    return InvalidArgument("header of " + std::to_string(json.size()) +
                           " bytes exceeds the format's limit of " +
                           std::to_string(kMaxHeaderSize));
  }
  std::vector<std::byte> header(8 + json.size());
  StoreLE64(header.data(), json.size());
  std::memcpy(header.data() + 8, json.data(), json.size());
  return header;
}

}  // namespace

Result<PlannedHeader> PlanHeader(std::span<const TensorSource> tensors, const Metadata& metadata,
                                 const WriteOptions& options) {
  if (options.alignment < 8 || (options.alignment & (options.alignment - 1)) != 0) {
    return InvalidArgument("alignment " + std::to_string(options.alignment) +
                           " is not a power of two of at least 8");
  }
  PlannedHeader plan;
  plan.order = DataOrder(tensors);
  std::string json = "{";
  if (!metadata.empty() || options.keep_empty_metadata) {
    CARTON_RETURN_IF_ERROR(AppendMetadata(metadata, &json));
  }
  CARTON_ASSIGN_OR_RETURN(plan.data_size, AppendTensors(tensors, plan.order, &json));
  json += '}';
  CARTON_ASSIGN_OR_RETURN(plan.header, FrameHeader(std::move(json), options.alignment));
  return plan;
}

Result<std::vector<std::byte>> Serialize(std::span<const TensorSource> tensors,
                                         const Metadata& metadata, const WriteOptions& options) {
  CARTON_ASSIGN_OR_RETURN(PlannedHeader plan, PlanHeader(tensors, metadata, options));
  std::vector<std::byte> out;
  out.reserve(plan.header.size() + plan.data_size);
  CARTON_RETURN_IF_ERROR(WriteAll(plan, tensors, [&](ByteView chunk) {
    out.insert(out.end(), chunk.begin(), chunk.end());
    return Status::Ok();
  }));
  return out;
}

Status WriteFile(const std::string& path, std::span<const TensorSource> tensors,
                 const Metadata& metadata, const WriteOptions& options) {
  CARTON_ASSIGN_OR_RETURN(PlannedHeader plan, PlanHeader(tensors, metadata, options));
  CARTON_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, options.file));
  // The size is known: reserving it saves the file system work per write
  // (docs/BENCHMARKS.md, safetensors write).
  CARTON_RETURN_IF_ERROR(file.Preallocate(plan.header.size() + plan.data_size));
  CARTON_RETURN_IF_ERROR(
      WriteAll(plan, tensors, [&](ByteView chunk) { return file.Write(chunk); }).WithContext(path));
  return file.Commit();
}

}  // namespace carton::safetensors
