#include "decode.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "records.h"

namespace carton::zip_internal {
namespace {

// The decoder of DecodeOptions::codec; stored bytes pass as they are.
struct Decoder {
  std::optional<ZstdDecoder> zstd;
  std::optional<InflateDecoder> inflate;

  Status Make(const DecodeOptions& options, std::uint64_t size_hint) {
    if (options.codec == Compression::kZstd) {
      CARTON_ASSIGN_OR_RETURN(ZstdDecoder d,
                              ZstdDecoder::Make(size_hint, options.max_zstd_window_log));
      zstd.emplace(std::move(d));
    } else if (options.codec == Compression::kDeflate) {
      CARTON_ASSIGN_OR_RETURN(InflateDecoder d, InflateDecoder::Make(size_hint));
      inflate.emplace(std::move(d));
    }
    return Status::Ok();
  }

  Status Update(ByteView in, const ByteSink& out) {
    return zstd ? zstd->Update(in, out) : inflate ? inflate->Update(in, out) : out(in);
  }

  Status Finish() const {
    if (zstd) return zstd->Finish();
    if (inflate) return inflate->Finish();
    return Status::Ok();
  }
};

}  // namespace

Status DecodeEntry(const ZipEntry& e, const DecodeOptions& options, EntryInput& input,
                   const ByteSink& sink) {
  const std::string context = "entry " + QuoteName(e.name);
  Decoder decoder;
  if (Status s = decoder.Make(options, e.size); !s.ok()) return s.WithContext(context);
  std::uint32_t crc = 0;
  std::uint64_t total = 0;
  Status sink_error;
  const ByteSink check = [&](ByteView chunk) -> Status {
    if (chunk.size() > e.size - total) {
      return Corrupt("decodes to more than its size of " + std::to_string(e.size) + " bytes");
    }
    total += chunk.size();
    if (options.check_crc) crc = UpdateCrc32(crc, chunk);
    sink_error = sink(chunk);
    return sink_error;
  };
  std::vector<std::byte> buffer(options.read_size);
  Status s;
  for (;;) {
    Result<std::size_t> n = input.Read(buffer);
    if (!n.ok()) {
      s = n.status();
      break;
    }
    if (*n == 0) break;
    s = decoder.Update(ByteView(buffer.data(), *n), check);
    if (!s.ok()) break;
    input.Consumed(total);
  }
  if (!sink_error.ok()) return sink_error;
  if (s.ok()) s = decoder.Finish();
  if (!s.ok()) return s.WithContext(context);
  if (total != e.size) {
    return Corrupt("decodes to " + std::to_string(total) + " bytes, but its size is " +
                   std::to_string(e.size))
        .WithContext(context);
  }
  if (options.check_crc) return ZipReader::CheckCrc32(e, crc);
  return Status::Ok();
}

}  // namespace carton::zip_internal
