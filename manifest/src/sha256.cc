#include "carton/manifest/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

#include "carton/common/mapped_file.h"

namespace carton::manifest {

struct Sha256::Impl {
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx;
};

namespace {

// Only allocation failure makes these fail; treat it like std::bad_alloc.
void Check(int ok) {
  if (ok != 1) throw std::bad_alloc();
}

}  // namespace

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx.reset(EVP_MD_CTX_new());
  if (!impl_->ctx) throw std::bad_alloc();
  Check(EVP_DigestInit_ex(impl_->ctx.get(), EVP_sha256(), nullptr));
}
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;
Sha256::~Sha256() = default;

void Sha256::Update(ByteView data) {
  if (!data.empty()) Check(EVP_DigestUpdate(impl_->ctx.get(), data.data(), data.size()));
}

Digest Sha256::Finish() {
  Digest d;
  unsigned int len = 0;
  Check(EVP_DigestFinal_ex(impl_->ctx.get(), d.data(), &len));
  Check(EVP_DigestInit_ex(impl_->ctx.get(), EVP_sha256(), nullptr));
  return d;
}

Digest Sha256Of(ByteView data) {
  Sha256 h;
  h.Update(data);
  return h.Finish();
}

std::string ToHex(const Digest& d) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(64, '0');
  for (std::size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = kHex[d[i] >> 4];
    s[2 * i + 1] = kHex[d[i] & 15];
  }
  return s;
}

std::optional<Digest> ParseHex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  Digest d;
  for (std::size_t i = 0; i < 32; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return d;
}

Result<Digest> HashFile(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(MappedFile f, MappedFile::Open(path));
  f.AdviseSequential();
  return Sha256Of(f.bytes());
}

}  // namespace carton::manifest
