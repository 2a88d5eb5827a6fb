// Private to sign/src: owners for the OpenSSL objects the module uses, and
// OpenSSL's error queue as text. Only files under sign/src include OpenSSL.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"

namespace carton::sign::internal {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
struct StackX509Free {
  void operator()(STACK_OF(X509) * s) const { sk_X509_free(s); }
};

using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, StoreCtxFree>;
using StackX509Ptr = std::unique_ptr<STACK_OF(X509), StackX509Free>;

// The DER encoding `i2d` (i2d_X509, i2d_PUBKEY) gives of `x`; empty when
// it fails.
template <typename T>
std::vector<std::byte> Der(int (*i2d)(const T*, unsigned char**), const T* x) {
  unsigned char* out = nullptr;
  const int n = i2d(x, &out);
  std::vector<std::byte> der;
  if (n > 0) der.assign(reinterpret_cast<std::byte*>(out), reinterpret_cast<std::byte*>(out) + n);
  OPENSSL_free(out);
  return der;
}

// A read-only memory BIO over `bytes` (which must outlive it).
BioPtr MemoryBio(ByteView bytes);
// What a memory BIO holds.
std::string BioText(BIO* bio);
// Drains OpenSSL's error queue of this thread: its first reason, or
// `fallback` when it is empty.
std::string OpenSslError(std::string_view fallback);

}  // namespace carton::sign::internal
