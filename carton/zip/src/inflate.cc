// The streaming raw-deflate decoder (zlib) for archives read through a
// RandomAccessSource. The compressed bytes are untrusted.

#include <zlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codec.h"

namespace carton::zip_internal {
namespace {

// Negative window bits: a raw deflate stream, no zlib header.
constexpr int kRawDeflateWindowBits = -15;

}  // namespace

struct InflateDecoder::State {
  z_stream stream{};
  bool initialised = false;
  bool ended = false;
  std::vector<std::byte> buffer;
  ~State() {
    if (initialised) inflateEnd(&stream);
  }
};

InflateDecoder::InflateDecoder(std::unique_ptr<State> state) : state_(std::move(state)) {}
InflateDecoder::InflateDecoder(InflateDecoder&&) noexcept = default;
InflateDecoder& InflateDecoder::operator=(InflateDecoder&&) noexcept = default;
InflateDecoder::~InflateDecoder() = default;

Result<InflateDecoder> InflateDecoder::Make(std::uint64_t size_hint) {
  auto state = std::make_unique<State>();
  if (inflateInit2(&state->stream, kRawDeflateWindowBits) != Z_OK) {
    return Internal("cannot allocate a zlib stream");
  }
  state->initialised = true;
  state->buffer.resize(static_cast<std::size_t>(
      std::clamp<std::uint64_t>(size_hint, kMinOutputChunk, kMaxOutputChunk)));
  return InflateDecoder(std::move(state));
}

Status InflateDecoder::Update(ByteView in, const ByteSink& out) {
  State& s = *state_;
  if (in.empty()) return Status::Ok();
  if (s.ended) return Corrupt("deflate data continues after the end of its stream");
  // zlib takes a non-const pointer but does not write through next_in.
  s.stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  s.stream.avail_in = static_cast<uInt>(in.size());
  while (s.stream.avail_in > 0 || !s.ended) {
    s.stream.next_out = reinterpret_cast<Bytef*>(s.buffer.data());
    s.stream.avail_out = static_cast<uInt>(s.buffer.size());
    const int r = inflate(&s.stream, Z_NO_FLUSH);
    const std::size_t produced = s.buffer.size() - s.stream.avail_out;
    if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
      return Corrupt(std::string("invalid deflate data: ") +
                     (s.stream.msg != nullptr ? s.stream.msg : "zlib error " + std::to_string(r)));
    }
    if (produced != 0) CARTON_RETURN_IF_ERROR(out(ByteView(s.buffer.data(), produced)));
    if (r == Z_STREAM_END) {
      s.ended = true;
      if (s.stream.avail_in > 0)
        return Corrupt("deflate data continues after the end of its stream");
      return Status::Ok();
    }
    // No progress possible until more input arrives.
    if (s.stream.avail_in == 0 && produced < s.buffer.size()) return Status::Ok();
    if (r == Z_BUF_ERROR && produced == 0) return Status::Ok();
  }
  return Status::Ok();
}

Status InflateDecoder::Finish() const {
  if (!state_->ended) return Corrupt("deflate data is truncated");
  return Status::Ok();
}

}  // namespace carton::zip_internal
