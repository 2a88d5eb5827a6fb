// The complete header validator, on simdjson's DOM parser (~2.2 GB/s here,
// 20x nlohmann's SAX parser; docs/BENCHMARKS.md). It decides every header
// the fast validator gives up on, and names the rule a bad one breaks. The
// DOM keeps duplicate keys, so we can reject them ourselves.
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "carton/common/quote.h"
#include "header_parser.h"
#include "simdjson_kernel.h"

namespace carton::safetensors::internal {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Typed accessors. REQUIRES: e.type() is the matching type.
simdjson::dom::array ArrayOf(element e) {
  simdjson::dom::array a;
  if (e.get_array().get(a)) {
  }
  return a;
}
simdjson::dom::object ObjectOf(element e) {
  simdjson::dom::object o;
  if (e.get_object().get(o)) {
  }
  return o;
}
std::string_view StringOf(element e) {
  std::string_view s;
  if (e.get_string().get(s)) {
  }
  return s;
}

// Rejects duplicate keys inside a value we otherwise ignore (unknown fields).
Status CheckNoDuplicates(element e, std::string_view where) {
  if (e.type() == element_type::ARRAY) {
    for (element child : ArrayOf(e)) {
      CARTON_RETURN_IF_ERROR(CheckNoDuplicates(child, where));
    }
  } else if (e.type() == element_type::OBJECT) {
    std::vector<std::string_view> keys;
    for (auto kv : ObjectOf(e)) {
      keys.push_back(kv.key);
      CARTON_RETURN_IF_ERROR(CheckNoDuplicates(kv.value, where));
    }
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end()) {
      return Fail(ErrorKind::kDuplicateKey,
                  std::string(where) + ": duplicate key " + QuoteForMessage(*dup));
    }
  }
  return Status::Ok();
}

// A non-negative integer that fits in int64 (shapes) or uint64 (offsets).
bool AsCount(element e, bool allow_u64, std::uint64_t* out) {
  if (e.type() == element_type::INT64) {
    std::int64_t v = 0;
    if (e.get_int64().get(v)) {
    }
    if (v < 0) return false;
    *out = static_cast<std::uint64_t>(v);
    return true;
  }
  if (e.type() == element_type::UINT64 && allow_u64) {
    if (e.get_uint64().get(*out)) {
    }
    return true;
  }
  return false;
}

std::string ElementText(element e) { return simdjson::minify(e); }

Status ParseShape(element e, std::string_view tname, std::vector<std::uint64_t>* dims) {
  if (e.type() != element_type::ARRAY) {
    return Fail(ErrorKind::kInvalidShape, "tensor " + QuoteForMessage(tname) +
                                              ": shape must be an array, got " + ElementText(e));
  }
  std::size_t i = 0;
  for (element d : ArrayOf(e)) {
    std::uint64_t v;
    if (!AsCount(d, /*allow_u64=*/false, &v)) {
      return Fail(ErrorKind::kInvalidShape, "tensor " + QuoteForMessage(tname) + ": dimension " +
                                                std::to_string(i) + " is " + ElementText(d) +
                                                ", not an integer in [0, 2^63)");
    }
    dims->push_back(v);
    ++i;
  }
  return Status::Ok();
}

Status ParseOffsets(element e, std::string_view tname, std::uint64_t* begin, std::uint64_t* end) {
  std::string msg =
      "tensor " + QuoteForMessage(tname) + ": data_offsets must be two non-negative integers";
  if (e.type() != element_type::ARRAY) {
    return Fail(ErrorKind::kInvalidOffsets, msg + ", got " + ElementText(e));
  }
  auto arr = ArrayOf(e);
  std::uint64_t v[2];
  std::size_t n = 0;
  for (element x : arr) {
    if (n == 2 || !AsCount(x, /*allow_u64=*/true, &v[n])) {
      return Fail(ErrorKind::kInvalidOffsets, msg + ", got " + ElementText(e));
    }
    ++n;
  }
  if (n != 2) return Fail(ErrorKind::kInvalidOffsets, msg + ", got " + ElementText(e));
  if (v[0] > v[1]) {
    return Fail(ErrorKind::kInvalidOffsets, "tensor " + QuoteForMessage(tname) +
                                                ": data_offsets [" + std::to_string(v[0]) + ", " +
                                                std::to_string(v[1]) + "] end before begin");
  }
  *begin = v[0];
  *end = v[1];
  return Status::Ok();
}

Status ParseMetadata(element e, ParsedHeader* out) {
  if (e.type() != element_type::OBJECT) {
    return Fail(ErrorKind::kInvalidMetadata,
                "__metadata__ must be an object of strings, got " + ElementText(e));
  }
  for (auto kv : ObjectOf(e)) {
    if (kv.value.type() != element_type::STRING) {
      return Fail(ErrorKind::kInvalidMetadata, "__metadata__ key " + QuoteForMessage(kv.key) +
                                                   ": value must be a string, got " +
                                                   ElementText(kv.value));
    }
    auto [it, inserted] =
        out->metadata.emplace(std::string(kv.key), std::string(StringOf(kv.value)));
    if (!inserted) {
      return Fail(ErrorKind::kDuplicateKey,
                  "__metadata__: duplicate key " + QuoteForMessage(kv.key));
    }
  }
  out->has_metadata = true;
  return Status::Ok();
}

// The "dtype" field of tensor `tname`: a known dtype name.
Status ParseDtypeField(element value, std::string_view tname, Dtype* dtype) {
  if (value.type() != element_type::STRING) {
    return Fail(ErrorKind::kNotAnObject, "tensor " + QuoteForMessage(tname) +
                                             ": dtype must be a string, got " + ElementText(value));
  }
  std::string_view s = StringOf(value);
  auto d = ParseDtype(s);
  if (!d) {
    return Fail(ErrorKind::kUnknownDtype,
                "tensor " + QuoteForMessage(tname) + ": unknown dtype " + QuoteForMessage(s));
  }
  *dtype = *d;
  return Status::Ok();
}

// The fields of tensor `tname`'s object `e`: dtype, shape (appended to
// ex->dims) and data_offsets into `v`, each present once.
Status ParseTensorFields(element e, std::string_view tname, RawTensor* v, Extracted* ex) {
  bool seen_dtype = false, seen_shape = false, seen_offsets = false;
  std::vector<std::string_view> other_keys;
  auto dup = [&](std::string_view key) {
    return Fail(ErrorKind::kDuplicateKey,
                "tensor " + QuoteForMessage(tname) + ": duplicate key " + QuoteForMessage(key));
  };
  for (auto kv : ObjectOf(e)) {
    if (kv.key == "dtype") {
      if (seen_dtype) return dup(kv.key);
      seen_dtype = true;
      CARTON_RETURN_IF_ERROR(ParseDtypeField(kv.value, tname, &v->dtype));
    } else if (kv.key == "shape") {
      if (seen_shape) return dup(kv.key);
      seen_shape = true;
      CARTON_RETURN_IF_ERROR(ParseShape(kv.value, tname, &ex->dims));
    } else if (kv.key == "data_offsets") {
      if (seen_offsets) return dup(kv.key);
      seen_offsets = true;
      CARTON_RETURN_IF_ERROR(ParseOffsets(kv.value, tname, &v->begin, &v->end));
    } else {
      // Unknown fields are ignored, like the reference does (FORMAT.md).
      if (std::find(other_keys.begin(), other_keys.end(), kv.key) != other_keys.end()) {
        return dup(kv.key);
      }
      other_keys.push_back(kv.key);
      CARTON_RETURN_IF_ERROR(CheckNoDuplicates(kv.value, "tensor " + QuoteForMessage(tname)));
    }
  }
  const char* missing = !seen_dtype     ? "dtype"
                        : !seen_shape   ? "shape"
                        : !seen_offsets ? "data_offsets"
                                        : nullptr;
  if (missing) {
    return Fail(ErrorKind::kMissingField,
                "tensor " + QuoteForMessage(tname) + ": missing field \"" + missing + "\"");
  }
  return Status::Ok();
}

// Sets the rank of `v` from ex->dims and checks that its data_offsets span
// exactly the bytes its dtype and shape need.
Status CheckTensorSize(std::string_view tname, const Extracted& ex, RawTensor* v) {
  std::size_t rank = ex.dims.size() - v->shape_begin;
  if (rank > UINT32_MAX)
    return Fail(ErrorKind::kInvalidShape, "tensor " + QuoteForMessage(tname) + ": rank too large");
  v->rank = static_cast<std::uint32_t>(rank);

  std::span<const std::uint64_t> shape(ex.dims.data() + v->shape_begin, v->rank);
  auto numel = CheckedNumel(shape);
  std::uint64_t bits;
  if (!numel || !CheckedMul(*numel, DtypeBits(v->dtype), &bits)) {
    return Fail(ErrorKind::kNumelOverflow,
                "tensor " + QuoteForMessage(tname) + ": " + std::string(DtypeName(v->dtype)) + " " +
                    ShapeToString(shape) + " has a byte size beyond 2^64");
  }
  if (bits % 8 != 0) {
    return Fail(ErrorKind::kPartialByte, "tensor " + QuoteForMessage(tname) + ": " +
                                             std::string(DtypeName(v->dtype)) + " " +
                                             ShapeToString(shape) + " is " + std::to_string(bits) +
                                             " bits, not a whole number of bytes");
  }
  if (v->end - v->begin != bits / 8) {
    return Fail(ErrorKind::kSizeMismatch,
                "tensor " + QuoteForMessage(tname) + ": data_offsets [" + std::to_string(v->begin) +
                    ", " + std::to_string(v->end) + "] but " + std::string(DtypeName(v->dtype)) +
                    " " + ShapeToString(shape) + " needs " + std::to_string(bits / 8) + " bytes");
  }
  return Status::Ok();
}

Status ParseTensor(std::string_view name, element e, ParsedHeader* out, Extracted* ex) {
  std::string_view tname = name;
  if (e.type() != element_type::OBJECT) {
    return Fail(ErrorKind::kNotAnObject, "tensor " + QuoteForMessage(tname) +
                                             ": entry must be an object, got " + ElementText(e));
  }
  if (ex->dims.size() > UINT32_MAX) {
    return Fail(ErrorKind::kInvalidShape, "more than 2^32 dimensions in the header");
  }
  if (name.size() > UINT32_MAX) {
    return Fail(ErrorKind::kInvalidShape, "tensor name longer than 4 GiB");
  }
  RawTensor v{nullptr,
              static_cast<std::uint32_t>(name.size()),
              static_cast<std::uint32_t>(ex->dims.size()),
              0,
              Dtype::kU8,
              0,
              0};
  CARTON_RETURN_IF_ERROR(ParseTensorFields(e, tname, &v, ex));
  CARTON_RETURN_IF_ERROR(CheckTensorSize(tname, *ex, &v));
  v.name = out->names.emplace_back(name).data();
  ex->tensors.push_back(v);
  return Status::Ok();
}

// Reuses one parser per thread for small headers; a large one gets its own
// so that a thread does not keep hundreds of megabytes afterwards.
constexpr std::size_t kReusableParserLimit = 16 << 20;

struct PaddedCopy {
  std::unique_ptr<char[]> data;
  std::size_t capacity = 0;
  void Assign(std::string_view s) {
    std::size_t need = s.size() + simdjson::SIMDJSON_PADDING;
    if (need > capacity) {
      data.reset(new char[need]);
      capacity = need;
    }
    std::memcpy(data.get(), s.data(), s.size());
    std::memset(data.get() + s.size(), 0, simdjson::SIMDJSON_PADDING);
  }
};

}  // namespace

Status ExtractDom(std::string_view body, const ReaderOptions& options, ParsedHeader* out,
                  Extracted* ex) {
  ChooseSimdjsonKernel();
  if (!simdjson::validate_utf8(body.data(), body.size())) {
    return Fail(ErrorKind::kHeaderNotUtf8, "header is not valid UTF-8");
  }
  thread_local PaddedCopy tl_copy;
  thread_local simdjson::dom::parser tl_parser;
  PaddedCopy local_copy;
  simdjson::dom::parser local_parser;
  bool reuse = body.size() <= kReusableParserLimit;
  PaddedCopy& copy = reuse ? tl_copy : local_copy;
  simdjson::dom::parser& parser = reuse ? tl_parser : local_parser;
  copy.Assign(body);
  if (parser.max_depth() != options.max_json_depth || parser.capacity() < body.size()) {
    if (parser.allocate(std::max(body.size(), parser.capacity()), options.max_json_depth)) {
      return Internal("cannot allocate the JSON parser");
    }
  }
  element root;
  auto err = parser.parse(copy.data.get(), body.size(), /*realloc_if_needed=*/false).get(root);
  if (err == simdjson::DEPTH_ERROR) {
    return Fail(ErrorKind::kTooDeep, "header JSON nests deeper than " +
                                         std::to_string(options.max_json_depth) + " levels");
  }
  if (err) return DiagnoseJson(body, simdjson::error_message(err));
  if (root.type() != element_type::OBJECT) {
    return Fail(ErrorKind::kNotAnObject, "header is not a JSON object");
  }
  if (body.back() != '}') {
    return Fail(ErrorKind::kTrailingBytes,
                "header has bytes other than space padding after the JSON object");
  }
  auto object = ObjectOf(root);
  ex->tensors.reserve(object.size());
  for (auto kv : object) {
    if (kv.key == "__metadata__") {
      if (out->has_metadata) {
        return Fail(ErrorKind::kDuplicateKey, "duplicate key \"__metadata__\"");
      }
      CARTON_RETURN_IF_ERROR(ParseMetadata(kv.value, out));
    } else {
      CARTON_RETURN_IF_ERROR(ParseTensor(kv.key, kv.value, out, ex));
    }
  }
  return Status::Ok();
}

}  // namespace carton::safetensors::internal
