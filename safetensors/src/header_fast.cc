// The fast header validator, on simdjson's On-Demand API: one pass over the
// structural index, no DOM, no copy of the text when the bytes after it can
// be read, tensor names borrowed from the text. It handles the header that
// writers produce: tensor entries with exactly dtype, shape and
// data_offsets, unescaped names, and a __metadata__ object of strings.
// Anything else, valid or not, makes it give up (return false) so that the
// complete validator decides (header_parser.h).
//
// On-Demand validates what it is asked to read and skips the rest, so this
// code reads every value: it never leaves one to be skipped.
#include <simdjson.h>

#include <cstring>
#include <memory>
#include <utility>

#include "header_parser.h"
#include "simdjson_kernel.h"

namespace carton::safetensors::internal {
namespace {

namespace od = simdjson::ondemand;

static_assert(simdjson::SIMDJSON_PADDING <= kJsonPadding);

// Reuses one parser per thread for small headers; a large one gets its own
// so that a thread does not keep hundreds of megabytes afterwards.
constexpr std::size_t kReusableParserLimit = 16 << 20;

// The first '"' or '\\' in [p, end), or `end`. Eight bytes at a time: the
// lowest byte flagged by the has-zero-byte test of (word ^ pattern) is the
// first match (flags above it may be false).
const char* FindQuoteOrBackslash(const char* p, const char* end) {
  constexpr std::uint64_t kOnes = 0x0101010101010101u, kHigh = 0x8080808080808080u;
  for (; end - p >= 8; p += 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    const std::uint64_t q = w ^ (kOnes * '"'), b = w ^ (kOnes * '\\');
    const std::uint64_t hits = (((q - kOnes) & ~q) | ((b - kOnes) & ~b)) & kHigh;
    if (hits != 0) return p + (__builtin_ctzll(hits) >> 3);
  }
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

// The text of a string token that holds no escape. `raw` points just after
// the opening quote inside [raw, end).
bool PlainString(const char* raw, const char* end, std::string_view* out) {
  const char* p = FindQuoteOrBackslash(raw, end);
  if (p == end || *p != '"') return false;
  *out = std::string_view(raw, static_cast<std::size_t>(p - raw));
  return true;
}

bool PlainString(od::raw_json_string raw, const char* end, std::string_view* out) {
  return PlainString(reinterpret_cast<const char*>(raw.raw()), end, out);
}

// The shortest tensor entry of a valid header, with its comma:
// "":{"dtype":"U8","shape":[],"data_offsets":[0,0]},
// so a header of B bytes holds at most B / kMinEntryBytes + 1 tensors.
constexpr std::size_t kMinEntryBytes = 51;

// A JSON integer written without a sign, fraction or exponent, as the
// complete validator reads them (its DOM keeps such tokens as integers).
inline bool Count(od::value& value, std::uint64_t* out) {
  const std::string_view token = value.raw_json_token();
  if (token.empty() || token.front() < '0' || token.front() > '9') return false;
  return value.get_uint64().get(*out) == simdjson::SUCCESS;
}

class FastReader {
 public:
  FastReader(std::string_view body, ParsedHeader* out, Extracted* ex)
      : end_(body.data() + body.size()), out_(out), ex_(ex) {}

  bool Header(od::document& doc) {
    od::object root;
    if (doc.get_object().get(root)) return false;
    for (auto field_result : root) {
      od::field field;
      std::string_view key;
      if (std::move(field_result).get(field) || !PlainString(field.key(), end_, &key)) return false;
      if (key == "__metadata__") {
        if (out_->has_metadata || !Metadata(field.value())) return false;
      } else if (!Tensor(key, field.value())) {
        return false;
      }
    }
    // Nothing may follow the object (R7).
    return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
  }

 private:
  bool Metadata(od::value& value) {
    od::object object;
    if (value.get_object().get(object)) return false;
    for (auto field_result : object) {
      od::field field;
      std::string_view key, text;
      if (std::move(field_result).get(field) || !PlainString(field.key(), end_, &key) ||
          field.value().get_string().get(text)) {
        return false;
      }
      if (!out_->metadata.emplace(std::string(key), std::string(text)).second) return false;
    }
    out_->has_metadata = true;
    return true;
  }

  bool Tensor(std::string_view name, od::value& value) {
    od::object entry;
    if (value.get_object().get(entry)) return false;
    std::vector<std::uint64_t>& dims = ex_->dims;
    // Filled in place: copying the finished record costs more here (GCC
    // copies it with rep movs). On failure the caller discards it all.
    RawTensor& t = ex_->tensors.emplace_back();
    t.name = name.data();
    t.name_size = static_cast<std::uint32_t>(name.size());
    t.shape_begin = static_cast<std::uint32_t>(dims.size());
    bool seen_dtype = false, seen_shape = false, seen_offsets = false;
    for (auto field_result : entry) {
      od::field field;
      if (std::move(field_result).get(field)) return false;
      // A raw comparison: a key spelled with escapes is not matched, and the
      // complete validator takes the header.
      const od::raw_json_string key = field.key();
      if (key.unsafe_is_equal("dtype") && !seen_dtype) {
        seen_dtype = true;
        if (!DtypeField(field.value(), &t)) return false;
      } else if (key.unsafe_is_equal("shape") && !seen_shape) {
        seen_shape = true;
        if (!ShapeField(field.value(), &dims)) return false;
      } else if (key.unsafe_is_equal("data_offsets") && !seen_offsets) {
        seen_offsets = true;
        if (!OffsetsField(field.value(), &t)) return false;
      } else {
        return false;  // an unknown or repeated field
      }
    }
    const std::size_t rank = dims.size() - t.shape_begin;
    if (!seen_dtype || !seen_shape || !seen_offsets || dims.size() > UINT32_MAX) return false;
    t.rank = static_cast<std::uint32_t>(rank);
    std::span<const std::uint64_t> shape(dims.data() + t.shape_begin, t.rank);
    return SizeMatches(t.dtype, shape, t.begin, t.end);
  }

  // The "dtype" field: an unescaped, known dtype name, into t->dtype.
  bool DtypeField(od::value& value, RawTensor* t) {
    od::raw_json_string text;
    std::string_view s;
    if (value.get_raw_json_string().get(text) || !PlainString(text, end_, &s)) return false;
    // Most tensors of a file share a dtype.
    if (s != last_dtype_name_) {
      auto dtype = ParseDtype(s);
      if (!dtype) return false;
      last_dtype_ = *dtype;
      last_dtype_name_ = s;
    }
    t->dtype = last_dtype_;
    return true;
  }

  // The "shape" field: counts below 2^63, appended to `dims`.
  static bool ShapeField(od::value& value, std::vector<std::uint64_t>* dims) {
    od::array shape;
    if (value.get_array().get(shape)) return false;
    for (auto dim_result : shape) {
      od::value dim;
      std::uint64_t d;
      if (std::move(dim_result).get(dim) || !Count(dim, &d) || d > INT64_MAX) return false;
      dims->push_back(d);
    }
    return true;
  }

  // The "data_offsets" field: two counts, into t->begin and t->end.
  static bool OffsetsField(od::value& value, RawTensor* t) {
    od::array offsets;
    if (value.get_array().get(offsets)) return false;
    std::uint64_t o[2];
    std::size_t n = 0;
    for (auto offset_result : offsets) {
      od::value offset;
      if (n == 2 || std::move(offset_result).get(offset) || !Count(offset, &o[n])) return false;
      ++n;
    }
    if (n != 2) return false;
    t->begin = o[0];
    t->end = o[1];
    return true;
  }

  const char* end_;
  ParsedHeader* out_;
  Extracted* ex_;
  std::string_view last_dtype_name_;
  Dtype last_dtype_ = Dtype::kU8;
};

struct PaddedCopy {
  std::unique_ptr<char[]> data;
  std::size_t capacity = 0;
  const char* Assign(std::string_view s) {
    const std::size_t need = s.size() + kJsonPadding;
    if (need > capacity) {
      data.reset(new char[need]);
      capacity = need;
    }
    std::memcpy(data.get(), s.data(), s.size());
    std::memset(data.get() + s.size(), ' ', kJsonPadding);
    return data.get();
  }
};

}  // namespace

bool ExtractFast(std::string_view body, bool padded, const ReaderOptions& options,
                 ParsedHeader* out, Extracted* ex) {
  // A valid header nests 3 deep; below that the complete validator reports.
  if (options.max_json_depth < 3 || body.empty() || body.back() != '}') return false;
  ChooseSimdjsonKernel();
  const bool reuse = body.size() <= kReusableParserLimit;
  thread_local od::parser tl_parser;
  thread_local PaddedCopy tl_copy;
  std::unique_ptr<od::parser> local_parser;
  PaddedCopy local_copy;
  if (!reuse) local_parser = std::make_unique<od::parser>();
  od::parser& parser = reuse ? tl_parser : *local_parser;
  // Names borrow from the text, so it is read in place; a copy serves only
  // to get the padding, and then it is parsed there but names must not
  // point into the copy: the caller's text is the same bytes, so names are
  // rebased onto it below.
  const char* text = body.data();
  if (!padded) text = (reuse ? tl_copy : local_copy).Assign(body);
  od::document doc;
  if (parser.iterate(text, body.size(), body.size() + kJsonPadding).get(doc)) return false;
  // At most this many tensors: reserving them (in the reused buffer, see
  // ParseHeaderJson) saves growing one entry at a time.
  const std::size_t most = body.size() / kMinEntryBytes + 1;
  ex->tensors.reserve(most);
  ex->dims.reserve(2 * most);
  FastReader reader(std::string_view(text, body.size()), out, ex);
  if (!reader.Header(doc)) return false;
  if (text != body.data()) {
    for (RawTensor& t : ex->tensors) t.name = body.data() + (t.name - text);
  }
  return true;
}

}  // namespace carton::safetensors::internal
