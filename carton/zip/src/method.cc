// Compression methods and their zip method numbers (APPNOTE 4.4.5).

#include "carton/common/quote.h"
#include "carton/zip/compression.h"
#include "records.h"

namespace carton {

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kStored:
      return "stored";
    case Compression::kDeflate:
      return "deflate";
    case Compression::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<Compression> ParseCompression(std::string_view name) {
  for (Compression c : {Compression::kStored, Compression::kDeflate, Compression::kZstd}) {
    if (name == CompressionName(c)) return c;
  }
  return InvalidArgument("must be stored, deflate or zstd, not " + QuoteForMessage(name));
}

std::uint16_t ZipMethodNumber(Compression c) {
  switch (c) {
    case Compression::kStored:
      return zip_internal::kMethodStored;
    case Compression::kDeflate:
      return zip_internal::kMethodDeflate;
    case Compression::kZstd:
      return zip_internal::kMethodZstd;
  }
  return zip_internal::kMethodStored;
}

std::optional<Compression> CompressionFromZipMethod(std::uint16_t method) {
  switch (method) {
    case zip_internal::kMethodStored:
      return Compression::kStored;
    case zip_internal::kMethodDeflate:
      return Compression::kDeflate;
    case zip_internal::kMethodZstd:
      return Compression::kZstd;
  }
  return std::nullopt;
}

}  // namespace carton
