#include "carton/manifest/sha256.h"

#include <openssl/evp.h>

#include <algorithm>
#include <stdexcept>

#include "carton/common/mapped_file.h"
#include "carton/common/quote.h"

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

// Small enough to stay in L2 while it is hashed.
constexpr std::size_t kWarmPiece = std::size_t{256} << 10;

// Loads one byte of every 64-byte line of `piece` (see Sha256::Update).
void WarmCacheLines(ByteView piece) {
  const volatile std::byte* p = piece.data();
  std::byte sink{0};
  for (std::size_t i = 0; i < piece.size(); i += 64) sink ^= p[i];
  static_cast<void>(sink);
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
  // Large inputs are mostly cold: a mapping of the page cache, read once.
  // SHA-256 reads them 64 bytes at a time, and the hardware prefetcher stops
  // at every 4 KiB page, so each line stalls; pulling a piece into the cache
  // first with one load per line (the loads overlap) makes the whole cost
  // about 25% less CPU than hashing straight from the mapping, the same as
  // hashing through a read copy (docs/BENCHMARKS.md, "carton pack / verify").
  // Inputs of one piece or less (read buffers, text) are hashed as they are.
  const bool warm = data.size() > kWarmPiece;
  while (!data.empty()) {
    const ByteView piece = data.first(std::min(kWarmPiece, data.size()));
    if (warm) WarmCacheLines(piece);
    Check(EVP_DigestUpdate(impl_->ctx.get(), piece.data(), piece.size()));
    data = data.subspan(piece.size());
  }
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

namespace {
constexpr std::string_view kSha256Prefix = "sha256:";
}  // namespace

std::string DigestString(const Digest& d) { return std::string(kSha256Prefix) + ToHex(d); }

Result<Digest> ParseDigestString(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("digest " + QuoteForMessage(text) + " has no algorithm (sha256:...)");
  }
  if (text.substr(0, colon + 1) != kSha256Prefix) {
    return Unsupported("digest " + QuoteForMessage(text) + ": only sha256 digests are supported");
  }
  auto d = ParseHex(text.substr(colon + 1));
  if (!d) {
    return InvalidArgument("digest " + QuoteForMessage(text) +
                           ": expected sha256: and 64 lowercase hex digits");
  }
  return *d;
}

}  // namespace carton::manifest
