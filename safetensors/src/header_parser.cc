// The steps every header goes through, whichever validator reads its JSON:
// the length (R1-R3), the first byte (R4), then the rules about the set of
// tensors (R8 for names, R17-R19 for offsets) in Finish().
#include "header_parser.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "quote.h"

namespace carton::safetensors::internal {
namespace {

std::size_t HashName(std::string_view name) { return std::hash<std::string_view>{}(name); }

// Puts tensors (and their raw records) in data order: by begin, then end;
// ties keep header order. Files from the reference writer are already in
// that order, so this is usually one linear check.
void SortByOffset(ParsedHeader* out, Extracted* ex) {
  auto& t = out->tensors;
  auto less = [&](std::size_t a, std::size_t b) {
    if (t[a].data_offset != t[b].data_offset) return t[a].data_offset < t[b].data_offset;
    return ex->raw[a].end < ex->raw[b].end;
  };
  bool sorted = true;
  for (std::size_t i = 1; i < t.size() && sorted; ++i) sorted = !less(i, i - 1);
  if (sorted) return;
  std::vector<std::size_t> order(t.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<TensorView> tensors;
  std::vector<RawTensor> raw;
  tensors.reserve(t.size());
  raw.reserve(t.size());
  for (std::size_t i : order) {
    tensors.push_back(t[i]);
    raw.push_back(ex->raw[i]);
  }
  t = std::move(tensors);
  ex->raw = std::move(raw);
}

// R8 for tensor names, building the lookup table on the way.
Status IndexNames(ParsedHeader* out) {
  const std::size_t n = out->tensors.size();
  std::size_t capacity = 8;
  while (capacity < 2 * n) capacity *= 2;
  out->table.assign(capacity, 0);
  const std::size_t mask = capacity - 1;
  for (std::size_t k = 0; k < n; ++k) {
    std::string_view name = out->tensors[k].name;
    std::size_t i = HashName(name) & mask;
    while (out->table[i] != 0) {
      if (out->tensors[out->table[i] - 1].name == name) {
        return Fail(ErrorKind::kDuplicateKey, "duplicate tensor name " + Quote(name));
      }
      i = (i + 1) & mask;
    }
    out->table[i] = static_cast<std::uint32_t>(k + 1);
  }
  return Status::Ok();
}

// R17-R19: taken in data order, the tensors tile [0, data size) exactly.
Status CheckTiling(const ParsedHeader& h, const Extracted& ex, std::uint64_t data_size) {
  std::uint64_t expected = 0;
  for (std::size_t i = 0; i < h.tensors.size(); ++i) {
    const std::uint64_t begin = h.tensors[i].data_offset, end = ex.raw[i].end;
    if (begin != expected) {
      bool gap = begin > expected;
      return Fail(gap ? ErrorKind::kDataGap : ErrorKind::kDataOverlap,
                  "tensor " + Quote(h.tensors[i].name) + ": data_offsets [" +
                      std::to_string(begin) + ", " + std::to_string(end) + "] " +
                      (gap ? "leave a hole: the previous tensor ends at "
                           : "overlap the previous tensor, which ends at ") +
                      std::to_string(expected));
    }
    expected = end;
  }
  if (expected != data_size) {
    return Fail(ErrorKind::kDataEndMismatch, "tensor data ends at " + std::to_string(expected) +
                                                 " but the data section is " +
                                                 std::to_string(data_size) + " bytes");
  }
  return Status::Ok();
}

Status Finish(std::uint64_t data_size, ByteView data, ParsedHeader* out, Extracted* ex) {
  if (out->tensors.size() >= UINT32_MAX) {
    return Fail(ErrorKind::kNotAnObject, "header has more than 2^32 - 2 tensors");
  }
  SortByOffset(out, ex);
  CARTON_RETURN_IF_ERROR(IndexNames(out));
  CARTON_RETURN_IF_ERROR(CheckTiling(*out, *ex, data_size));
  // Views are complete only now: dims no longer grows, and the tiling
  // check put every range inside the data section.
  for (std::size_t i = 0; i < out->tensors.size(); ++i) {
    TensorView& v = out->tensors[i];
    const RawTensor& r = ex->raw[i];
    v.shape = std::span<const std::uint64_t>(out->dims.data() + r.shape_begin, r.rank);
    if (data.data() != nullptr) {
      v.data = data.subspan(static_cast<std::size_t>(v.data_offset),
                            static_cast<std::size_t>(r.end - v.data_offset));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Fail(ErrorKind kind, std::string message) {
  int detail = static_cast<int>(kind);
  if (kind == ErrorKind::kUnknownDtype) return Unsupported(std::move(message), detail);
  return Corrupt(std::move(message), detail);
}

const TensorView* ParsedHeader::Find(std::string_view name) const {
  if (table.empty()) return nullptr;
  const std::size_t mask = table.size() - 1;
  for (std::size_t i = HashName(name) & mask; table[i] != 0; i = (i + 1) & mask) {
    const TensorView& v = tensors[table[i] - 1];
    if (v.name == name) return &v;
  }
  return nullptr;
}

bool SizeMatches(Dtype dtype, std::span<const std::uint64_t> shape, std::uint64_t begin,
                 std::uint64_t end) {
  std::uint64_t numel = 1, bits;
  for (std::uint64_t d : shape) {
    if (!CheckedMul(numel, d, &numel)) return false;
  }
  if (!CheckedMul(numel, DtypeBits(dtype), &bits) || bits % 8 != 0) return false;
  return begin <= end && end - begin == bits / 8;
}

Result<std::uint64_t> ParseHeaderLength(ByteView head, std::uint64_t file_size,
                                        const ReaderOptions& options) {
  if (file_size < 8 || head.size() < 8) {
    return Fail(ErrorKind::kFileTooSmall, "file is " + std::to_string(file_size) +
                                              " bytes, shorter than the 8-byte header length");
  }
  const std::uint64_t n = LoadLE64(head.data());
  if (n > options.max_header_size) {
    return Fail(ErrorKind::kHeaderTooLarge, "header length " + std::to_string(n) +
                                                " exceeds the limit of " +
                                                std::to_string(options.max_header_size));
  }
  if (!InBounds(8, n, file_size)) {
    return Fail(ErrorKind::kHeaderPastEnd, "header length " + std::to_string(n) +
                                               " runs past the end of the " +
                                               std::to_string(file_size) + "-byte file");
  }
  return n;
}

Status ParseHeaderJson(std::string_view json, std::uint64_t file_size, std::size_t readable_after,
                       ByteView data, const ReaderOptions& options, ParsedHeader* out) {
  if (json.empty() || json.front() != '{') {
    return Fail(ErrorKind::kHeaderNoBrace, "header must start with '{'");
  }
  // Padding is spaces only (FORMAT.md: stricter than JSON whitespace).
  const std::string_view body = json.substr(0, json.find_last_not_of(' ') + 1);
  const bool padded = json.size() - body.size() + readable_after >= kJsonPadding;
  *out = ParsedHeader();
  out->header_size = json.size();
  Extracted ex;
  if (options.skip_fast_path || !ExtractFast(body, padded, options, out, &ex)) {
    *out = ParsedHeader();
    out->header_size = json.size();
    ex = Extracted();
    CARTON_RETURN_IF_ERROR(ExtractDom(body, options, out, &ex));
  }
  return Finish(file_size - 8 - json.size(), data, out, &ex);
}

Status ParseFile(ByteView file, const ReaderOptions& options, ParsedHeader* out) {
  CARTON_ASSIGN_OR_RETURN(std::uint64_t n, ParseHeaderLength(file, file.size(), options));
  const std::size_t data_start = static_cast<std::size_t>(8 + n);
  return ParseHeaderJson(AsChars(file.subspan(8, static_cast<std::size_t>(n))), file.size(),
                         file.size() - data_start, file.subspan(data_start), options, out);
}

}  // namespace carton::safetensors::internal
