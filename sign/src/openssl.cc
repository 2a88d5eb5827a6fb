#include "openssl.h"

#include <openssl/err.h>

namespace carton::sign::internal {

BioPtr MemoryBio(ByteView bytes) {
  return BioPtr(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

std::string OpenSslError(std::string_view fallback) {
  std::string first;
  while (const unsigned long e = ERR_get_error()) {
    if (first.empty()) {
      const char* reason = ERR_reason_error_string(e);
      first = reason != nullptr ? reason : "";
    }
  }
  return first.empty() ? std::string(fallback) : first;
}

}  // namespace carton::sign::internal
