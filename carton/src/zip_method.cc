// Compression methods and their zip method numbers (APPNOTE 4.4.5).

#include "carton/carton/zip.h"
#include "zip_format.h"

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

std::uint16_t ZipMethodNumber(Compression c) {
  switch (c) {
    case Compression::kStored:
      return zip_format::kMethodStored;
    case Compression::kDeflate:
      return zip_format::kMethodDeflate;
    case Compression::kZstd:
      return zip_format::kMethodZstd;
  }
  return zip_format::kMethodStored;
}

std::optional<Compression> CompressionFromZipMethod(std::uint16_t method) {
  switch (method) {
    case zip_format::kMethodStored:
      return Compression::kStored;
    case zip_format::kMethodDeflate:
      return Compression::kDeflate;
    case zip_format::kMethodZstd:
      return Compression::kZstd;
  }
  return std::nullopt;
}

}  // namespace carton
