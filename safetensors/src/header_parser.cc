// The steps every header goes through, whichever validator reads its JSON:
// the length (R1-R3), the first byte (R4), then the rules about the set of
// tensors (R8 for names, R17-R19 for offsets) in Finish().
#include "header_parser.h"

#include <algorithm>
#include <functional>

#include "carton/common/quote.h"

namespace carton::safetensors::internal {
namespace {

std::uint64_t HashName(std::string_view name) { return std::hash<std::string_view>{}(name); }

// Headers of 16 MiB or less are extracted into one reused buffer per
// thread, so that opening file after file touches no new memory for it.
constexpr std::size_t kReusableScratchLimit = 16 << 20;

// Puts tensors in data order: by begin, then end; ties keep header order.
// Files from the reference writer are already in that order, so this is
// usually one linear check.
void SortByOffset(std::vector<RawTensor>* t) {
  auto less = [](const RawTensor& a, const RawTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  };
  if (!std::is_sorted(t->begin(), t->end(), less)) std::stable_sort(t->begin(), t->end(), less);
}

Status DuplicateName(std::string_view name) {
  return Fail(ErrorKind::kDuplicateKey, "duplicate tensor name " + QuoteForMessage(name));
}

// R8 for tensor names, and what Find() will use: names already sorted in
// data order need only a comparison of neighbours; others a hash table.
Status IndexNames(const std::vector<RawTensor>& t, ParsedHeader* out) {
  bool sorted = true;
  for (std::size_t i = 1; i < t.size() && sorted; ++i) {
    const int c = t[i - 1].name_view().compare(t[i].name_view());
    if (c == 0) return DuplicateName(t[i].name_view());
    sorted = c < 0;
  }
  out->names_sorted = sorted;
  if (sorted) return Status::Ok();
  std::size_t capacity = 8;
  while (capacity < 2 * t.size()) capacity *= 2;
  out->table.assign(capacity, 0);
  const std::size_t mask = capacity - 1;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const std::uint64_t hash = HashName(t[k].name_view());
    const std::uint64_t high = hash & 0xffffffff00000000u;
    std::size_t i = hash & mask;
    for (; out->table[i] != 0; i = (i + 1) & mask) {
      const std::uint64_t slot = out->table[i];
      if ((slot & 0xffffffff00000000u) == high &&
          t[(slot & 0xffffffffu) - 1].name_view() == t[k].name_view()) {
        return DuplicateName(t[k].name_view());
      }
    }
    out->table[i] = high | (k + 1);
  }
  return Status::Ok();
}

// R17-R19: taken in data order, the tensors tile [0, data size) exactly.
Status CheckTiling(const std::vector<RawTensor>& t, std::uint64_t data_size) {
  std::uint64_t expected = 0;
  for (const RawTensor& r : t) {
    if (r.begin != expected) {
      bool gap = r.begin > expected;
      return Fail(gap ? ErrorKind::kDataGap : ErrorKind::kDataOverlap,
                  "tensor " + QuoteForMessage(r.name_view()) + ": data_offsets [" +
                      std::to_string(r.begin) + ", " + std::to_string(r.end) + "] " +
                      (gap ? "leave a hole: the previous tensor ends at "
                           : "overlap the previous tensor, which ends at ") +
                      std::to_string(expected));
    }
    expected = r.end;
  }
  if (expected != data_size) {
    return Fail(ErrorKind::kDataEndMismatch, "tensor data ends at " + std::to_string(expected) +
                                                 " but the data section is " +
                                                 std::to_string(data_size) + " bytes");
  }
  return Status::Ok();
}

Status Finish(std::uint64_t data_size, ByteView data, Extracted* ex, ParsedHeader* out) {
  std::vector<RawTensor>& t = ex->tensors;
  if (t.size() >= UINT32_MAX) {
    return Fail(ErrorKind::kNotAnObject, "header has more than 2^32 - 2 tensors");
  }
  SortByOffset(&t);
  CARTON_RETURN_IF_ERROR(IndexNames(t, out));
  CARTON_RETURN_IF_ERROR(CheckTiling(t, data_size));
  // The views, exactly sized; every range is inside the data section now.
  out->dims.assign(ex->dims.begin(), ex->dims.end());
  out->tensors.reserve(t.size());
  for (const RawTensor& r : t) {
    TensorView& v = out->tensors.emplace_back();
    v.name = r.name_view();
    v.dtype = r.dtype;
    v.shape = std::span<const std::uint64_t>(out->dims.data() + r.shape_begin, r.rank);
    v.data_offset = r.begin;
    if (data.data() != nullptr) {
      v.data = data.subspan(static_cast<std::size_t>(r.begin),
                            static_cast<std::size_t>(r.end - r.begin));
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
  if (names_sorted) {
    auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                               [](const TensorView& v, std::string_view n) { return v.name < n; });
    return it != tensors.end() && it->name == name ? &*it : nullptr;
  }
  if (table.empty()) return nullptr;
  const std::uint64_t hash = HashName(name);
  const std::uint64_t high = hash & 0xffffffff00000000u;
  const std::size_t mask = table.size() - 1;
  for (std::size_t i = hash & mask; table[i] != 0; i = (i + 1) & mask) {
    if ((table[i] & 0xffffffff00000000u) != high) continue;
    const TensorView& v = tensors[(table[i] & 0xffffffffu) - 1];
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
  thread_local Extracted reused;
  Extracted local;
  Extracted& ex = body.size() <= kReusableScratchLimit ? reused : local;
  ex.tensors.clear();
  ex.dims.clear();
  if (options.skip_fast_path || !ExtractFast(body, padded, options, out, &ex)) {
    *out = ParsedHeader();
    out->header_size = json.size();
    ex.tensors.clear();
    ex.dims.clear();
    CARTON_RETURN_IF_ERROR(ExtractDom(body, options, out, &ex));
  }
  return Finish(file_size - 8 - json.size(), data, &ex, out);
}

Status ParseFile(ByteView file, const ReaderOptions& options, ParsedHeader* out) {
  CARTON_ASSIGN_OR_RETURN(std::uint64_t n, ParseHeaderLength(file, file.size(), options));
  const std::size_t data_start = static_cast<std::size_t>(8 + n);
  return ParseHeaderJson(AsChars(file.subspan(8, static_cast<std::size_t>(n))), file.size(),
                         file.size() - data_start, file.subspan(data_start), options, out);
}

}  // namespace carton::safetensors::internal
