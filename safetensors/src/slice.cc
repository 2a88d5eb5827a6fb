#include "carton/safetensors/slice.h"

#include <cstring>
#include <limits>

#include "carton/common/quote.h"
#include "carton/safetensors/dtype.h"

namespace carton::safetensors {
namespace {

std::string Label(const TensorView& t) { return "tensor " + QuoteForMessage(t.name); }

std::string Pos(std::size_t pos) { return "position " + std::to_string(pos); }

// |v| without overflow, also for INT64_MIN.
std::uint64_t Magnitude(std::int64_t v) {
  return v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

// Recursive descent over the grammar
//   slice     := blank* [index (',' index)*]
//   index     := blank* (int | [int] ':' [int] [':' [int]]) blank*
//   int       := ['+' | '-'] digit+
// with blanks allowed around every token. Positions in messages are 0-based
// byte offsets into the text.
class SliceParser {
 public:
  explicit SliceParser(std::string_view text) : text_(text) {}

  Result<std::vector<SliceIndex>> Parse() {
    std::vector<SliceIndex> indices;
    SkipBlanks();
    if (AtEnd()) return indices;
    for (;;) {
      CARTON_ASSIGN_OR_RETURN(SliceIndex index, Index());
      indices.push_back(index);
      if (AtEnd()) return indices;
      if (Peek() != ',') return Unexpected();
      ++pos_;
    }
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  bool PeekIs(char c) const { return !AtEnd() && Peek() == c; }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  void SkipBlanks() {
    while (PeekIs(' ') || PeekIs('\t')) ++pos_;
  }

  // The text is untrusted: show a printable character, otherwise its code.
  Status Unexpected() const {
    if (AtEnd()) return InvalidArgument("unexpected end of slice at " + Pos(pos_));
    unsigned char c = static_cast<unsigned char>(Peek());
    std::string shown;
    if (c >= 0x20 && c < 0x7f) {
      shown = std::string("'") + static_cast<char>(c) + "'";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      shown = std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
    }
    return InvalidArgument("unexpected " + shown + " in slice at " + Pos(pos_));
  }

  // An integer if one starts here, nullopt if none does.
  Result<std::optional<std::int64_t>> OptionalInteger() {
    const std::size_t begin = pos_;
    bool negative = false;
    if (PeekIs('+') || PeekIs('-')) {
      negative = Peek() == '-';
      ++pos_;
    }
    if (AtEnd() || !IsDigit(Peek())) {
      if (pos_ == begin) return std::optional<std::int64_t>();
      return InvalidArgument("expected a digit after '" + std::string(1, text_[begin]) + "' at " +
                             Pos(pos_));
    }
    const std::uint64_t limit =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (negative ? 1 : 0);
    std::uint64_t magnitude = 0;
    while (!AtEnd() && IsDigit(Peek())) {
      if (!CheckedMul(magnitude, 10, &magnitude) ||
          !CheckedAdd(magnitude, static_cast<std::uint64_t>(Peek() - '0'), &magnitude) ||
          magnitude > limit) {
        return InvalidArgument("integer at " + Pos(begin) + " does not fit in 64 bits");
      }
      ++pos_;
    }
    // Two's complement conversion is defined in C++20; it maps 2^63 to INT64_MIN.
    std::uint64_t bits = negative ? 0 - magnitude : magnitude;
    return std::optional<std::int64_t>(static_cast<std::int64_t>(bits));
  }

  Result<SliceIndex> Index() {
    SkipBlanks();
    if (AtEnd() || Peek() == ',') {
      return InvalidArgument("empty index in slice at " + Pos(pos_));
    }
    CARTON_ASSIGN_OR_RETURN(std::optional<std::int64_t> start, OptionalInteger());
    SkipBlanks();
    if (!PeekIs(':')) {
      if (!start) return Unexpected();
      return SliceIndex::At(*start);
    }
    ++pos_;
    SkipBlanks();
    CARTON_ASSIGN_OR_RETURN(std::optional<std::int64_t> stop, OptionalInteger());
    SkipBlanks();
    std::optional<std::int64_t> step;
    if (PeekIs(':')) {
      ++pos_;
      SkipBlanks();
      const std::size_t step_pos = pos_;
      CARTON_ASSIGN_OR_RETURN(step, OptionalInteger());
      if (step && *step == 0) {
        return InvalidArgument("slice step cannot be zero at " + Pos(step_pos));
      }
      SkipBlanks();
      if (PeekIs(':')) {
        return InvalidArgument("more than two ':' in one index at " + Pos(pos_));
      }
    }
    return SliceIndex::Range(start, stop, step);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// numpy's slice.indices() for a dimension of `len` elements. REQUIRES: the
// step is not 0.
DimSelection ResolveRange(const SliceIndex& index, std::uint64_t len) {
  const std::int64_t step = index.step.value_or(1);
  DimSelection sel;
  if (step > 0) {
    // Clamp to a position in [0, len].
    auto clamp = [len](std::optional<std::int64_t> v, std::uint64_t absent) {
      if (!v) return absent;
      if (*v < 0) return Magnitude(*v) > len ? 0 : len - Magnitude(*v);
      return std::min(static_cast<std::uint64_t>(*v), len);
    };
    const std::uint64_t begin = clamp(index.start, 0);
    const std::uint64_t end = clamp(index.stop, len);
    sel.start = begin;
    sel.count = end > begin ? (end - begin - 1) / static_cast<std::uint64_t>(step) + 1 : 0;
  } else {
    // Walking backwards the positions are [-1, len - 1]; shift them by one
    // so they stay unsigned.
    auto clamp = [len](std::optional<std::int64_t> v, std::uint64_t absent) {
      if (!v) return absent;
      if (*v < 0) return Magnitude(*v) > len ? 0 : len - Magnitude(*v) + 1;
      return static_cast<std::uint64_t>(*v) >= len ? len : static_cast<std::uint64_t>(*v) + 1;
    };
    const std::uint64_t begin = clamp(index.start, len);
    const std::uint64_t end = clamp(index.stop, 0);
    sel.start = begin > 0 ? begin - 1 : 0;
    sel.count = begin > end ? (begin - end - 1) / Magnitude(step) + 1 : 0;
  }
  // A step only matters between two elements; keeping plans canonical lets
  // the copy treat a single element as contiguous.
  sel.step = sel.count > 1 ? step : 1;
  if (sel.count == 0) sel.start = 0;
  return sel;
}

// `with_data`: the view's bytes are in memory and must match its shape.
Status CheckView(const TensorView& t, bool with_data = true) {
  std::optional<std::uint64_t> numel = CheckedNumel(t.shape);
  std::optional<std::uint64_t> bytes = numel ? ByteSize(t.dtype, *numel) : std::nullopt;
  if (!bytes || (with_data && *bytes != t.data.size())) {
    return InvalidArgument(Label(t) + ": " + std::string(DtypeName(t.dtype)) + " " +
                           ShapeToString(t.shape) + " does not match its " +
                           std::to_string(t.data.size()) + " bytes");
  }
  return Status::Ok();
}

// One outer dimension of the copy that reads more than one index.
struct Loop {
  std::uint64_t count;
  std::uint64_t delta;  // byte step; negative steps wrap modulo 2^64
};

// Copies one run of `run` bytes (a constant when kRun is not 0, so the
// common element sizes get an inlined copy) from `src + offset` for each
// step of an odometer over `loops`, in C order.
template <std::size_t kRun>
void Gather(const std::byte* src, std::uint64_t offset, std::uint64_t run,
            std::span<const Loop> loops, std::byte* out) {
  std::vector<std::uint64_t> counter(loops.size(), 0);
  for (;;) {
    std::memcpy(out, src + offset, kRun != 0 ? kRun : run);
    out += kRun != 0 ? kRun : run;
    std::size_t level = loops.size();
    for (; level > 0; --level) {
      const Loop& loop = loops[level - 1];
      if (++counter[level - 1] < loop.count) {
        offset += loop.delta;
        break;
      }
      counter[level - 1] = 0;
      offset -= loop.delta * (loop.count - 1);
    }
    if (level == 0) return;
  }
}

// REQUIRES: `plan` comes from PlanSlice(t, ...) and `out` has
// plan.byte_size bytes.
void CopySelection(const TensorView& t, const SlicePlan& plan, std::byte* out) {
  if (plan.byte_size == 0) return;
  if (plan.whole) {
    std::memcpy(out, t.data.data(), plan.byte_size);
    return;
  }
  // Only whole-byte dtypes get here, and every dimension is non-empty, so
  // each suffix product is at most the tensor's byte size.
  const std::size_t rank = plan.dims.size();
  std::vector<std::uint64_t> stride(rank);
  std::uint64_t size = DtypeBits(t.dtype) / 8;
  for (std::size_t d = rank; d-- > 0;) {
    stride[d] = size;
    size *= t.shape[d];
  }
  // The innermost dimensions read with step 1, each under fully read ones,
  // form one contiguous run per memcpy.
  std::uint64_t run = DtypeBits(t.dtype) / 8;
  std::uint64_t offset = 0;
  std::size_t inner = rank;
  while (inner > 0 && stride[inner - 1] == run && plan.dims[inner - 1].step == 1) {
    const DimSelection& sel = plan.dims[inner - 1];
    run = sel.count * stride[inner - 1];
    offset += sel.start * stride[inner - 1];
    --inner;
  }
  std::vector<Loop> loops;
  for (std::size_t d = 0; d < inner; ++d) {
    const DimSelection& sel = plan.dims[d];
    offset += sel.start * stride[d];
    if (sel.count > 1) {
      loops.push_back({sel.count, static_cast<std::uint64_t>(sel.step) * stride[d]});
    }
  }
  const std::byte* src = t.data.data();
  switch (run) {
    case 1:
      return Gather<1>(src, offset, run, loops, out);
    case 2:
      return Gather<2>(src, offset, run, loops, out);
    case 4:
      return Gather<4>(src, offset, run, loops, out);
    case 8:
      return Gather<8>(src, offset, run, loops, out);
    default:
      return Gather<0>(src, offset, run, loops, out);
  }
}

}  // namespace

Result<std::vector<SliceIndex>> ParseSlice(std::string_view text) {
  return SliceParser(text).Parse();
}

std::string SliceToString(std::span<const SliceIndex> indices) {
  std::string s;
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const SliceIndex& index = indices[i];
    if (i) s += ", ";
    if (index.kind == SliceIndex::Kind::kInteger) {
      s += std::to_string(index.index);
      continue;
    }
    if (index.start) s += std::to_string(*index.start);
    s += ":";
    if (index.stop) s += std::to_string(*index.stop);
    if (index.step) s += ":" + std::to_string(*index.step);
  }
  return s;
}

Result<SlicePlan> PlanSlice(const TensorView& t, std::span<const SliceIndex> indices) {
  CARTON_RETURN_IF_ERROR(CheckView(t));
  return PlanSliceOfShape(t, indices);
}

Result<SlicePlan> PlanSliceOfShape(const TensorView& t, std::span<const SliceIndex> indices) {
  CARTON_RETURN_IF_ERROR(CheckView(t, false));
  const std::size_t rank = t.shape.size();
  if (indices.size() > rank) {
    return InvalidArgument(Label(t) + ": " + std::to_string(indices.size()) + " indices for " +
                           std::to_string(rank) + " dimensions " + ShapeToString(t.shape));
  }
  SlicePlan plan;
  plan.dims.reserve(rank);
  plan.whole = true;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint64_t len = t.shape[d];
    auto where = [&] {
      return Label(t) + ": dimension " + std::to_string(d) + " of size " + std::to_string(len);
    };
    DimSelection sel;
    if (d >= indices.size()) {
      sel.count = len;
    } else if (indices[d].kind == SliceIndex::Kind::kInteger) {
      const std::int64_t i = indices[d].index;
      const std::uint64_t m = Magnitude(i);
      if (i < 0 ? m > len : m >= len) {
        return InvalidArgument(where() + ": index " + std::to_string(i) + " is out of range");
      }
      sel.start = i < 0 ? len - m : m;
      sel.count = 1;
      sel.dropped = true;
    } else {
      if (indices[d].step == 0) {
        return InvalidArgument(where() + ": slice step cannot be zero");
      }
      sel = ResolveRange(indices[d], len);
    }
    if (!sel.dropped) plan.shape.push_back(sel.count);
    // Every element of this dimension, in order.
    plan.whole = plan.whole && sel.count == len && sel.step == 1;
    plan.dims.push_back(sel);
  }
  // Each output dimension is at most its source dimension, so these checks
  // only guard against a plan that would not fit.
  std::optional<std::uint64_t> numel = CheckedNumel(plan.shape);
  std::optional<std::uint64_t> bytes = numel ? ByteSize(t.dtype, *numel) : std::nullopt;
  if (DtypeBits(t.dtype) % 8 != 0) {
    if (numel && *numel != 0 && !plan.whole) {
      return Unsupported(Label(t) +
                         ": sub-byte dtype cannot be sliced: " + std::string(DtypeName(t.dtype)) +
                         " " + ShapeToString(t.shape) + " with [" + SliceToString(indices) +
                         "]; only the whole tensor can be read");
    }
    // Whole, or empty: a sub-byte count of elements need not fill bytes.
    bytes = plan.whole ? std::optional<std::uint64_t>(t.byte_size()) : bytes;
  }
  if (!numel || !bytes) {
    return InvalidArgument(Label(t) + ": slice shape " + ShapeToString(plan.shape) +
                           " overflows 64 bits");
  }
  plan.numel = *numel;
  plan.byte_size = *bytes;
  return plan;
}

Status ReadSliceInto(const TensorView& t, std::span<const SliceIndex> indices,
                     MutableByteView out) {
  CARTON_ASSIGN_OR_RETURN(SlicePlan plan, PlanSlice(t, indices));
  if (out.size() != plan.byte_size) {
    return InvalidArgument(Label(t) + ": output buffer has " + std::to_string(out.size()) +
                           " bytes but slice [" + SliceToString(indices) + "] of " +
                           std::string(DtypeName(t.dtype)) + " " + ShapeToString(t.shape) +
                           " needs " + std::to_string(plan.byte_size));
  }
  CopySelection(t, plan, out.data());
  return Status::Ok();
}

Result<Tensor> ReadSlice(const TensorView& t, std::span<const SliceIndex> indices) {
  CARTON_ASSIGN_OR_RETURN(SlicePlan plan, PlanSlice(t, indices));
  Tensor result;
  result.name = std::string(t.name);
  result.dtype = t.dtype;
  result.data.resize(plan.byte_size);
  CopySelection(t, plan, result.data.data());
  result.shape = std::move(plan.shape);
  return result;
}

}  // namespace carton::safetensors
