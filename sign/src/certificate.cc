// X.509 certificates (sign/FORMAT.md "Certificates"): parsing, names,
// validity and usage. Untrusted bytes until verify.cc checks the chain.
#include "carton/sign/certificate.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "carton/common/atomic_file.h"
#include "key_impl.h"

namespace carton::sign {
namespace {

struct GeneralNamesFree {
  void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); }
};

std::int64_t Seconds(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

std::string Text(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<std::size_t>(ASN1_STRING_length(s)));
}

// The email addresses, URIs and DNS names of the subject alternative names.
void AddAltNames(X509* x, std::vector<std::string>* out) {
  std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
    if (n->type == GEN_EMAIL || n->type == GEN_URI || n->type == GEN_DNS) {
      out->push_back(Text(n->d.ia5));
    }
  }
}

}  // namespace

Result<Certificate> Certificate::FromDer(ByteView der, std::string_view source) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  internal::X509Ptr x(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (!x || p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) {
    ERR_clear_error();
    return Corrupt(std::string(source) + ": not a DER X.509 certificate");
  }
  auto impl = std::make_shared<Impl>();
  impl->x509 = std::move(x);
  return Certificate(std::move(impl));
}

Result<std::vector<Certificate>> Certificate::FromPem(std::string_view pem,
                                                      std::string_view source) {
  internal::BioPtr in = internal::MemoryBio(AsBytes(pem));
  std::vector<Certificate> out;
  while (X509* x = PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)) {
    auto impl = std::make_shared<Impl>();
    impl->x509.reset(x);
    out.push_back(Certificate(std::move(impl)));
  }
  const unsigned long last = ERR_peek_last_error();
  ERR_clear_error();
  const bool clean_end =
      ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (out.empty() || (last != 0 && !clean_end)) {
    return Corrupt(std::string(source) + (out.empty()
                                              ? ": no PEM certificate (\"BEGIN CERTIFICATE\")"
                                              : ": a PEM certificate block that does not parse"));
  }
  return out;
}

Result<std::vector<Certificate>> Certificate::ReadPemFile(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(auto bytes, carton::ReadFile(path));
  return FromPem(AsChars(bytes), path);
}

std::vector<std::byte> Certificate::der() const {
  return internal::Der(i2d_X509, impl_->x509.get());
}

std::string Certificate::subject() const {
  internal::BioPtr out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), X509_get_subject_name(impl_->x509.get()), 0, XN_FLAG_RFC2253);
  return internal::BioText(out.get());
}

std::vector<std::string> Certificate::identities() const {
  std::vector<std::string> out = {subject()};
  X509_NAME* name = X509_get_subject_name(impl_->x509.get());
  for (int i = -1; (i = X509_NAME_get_index_by_NID(name, NID_commonName, i)) >= 0;) {
    out.push_back(Text(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i))));
  }
  AddAltNames(impl_->x509.get(), &out);
  return out;
}

Result<PublicKey> Certificate::public_key() const {
  EVP_PKEY* key = X509_get_pubkey(impl_->x509.get());  // a new reference
  if (key == nullptr) {
    ERR_clear_error();
    return Corrupt("the certificate's key does not parse");
  }
  return internal::MakePublicKey(internal::PkeyPtr(key), "the certificate's key");
}

std::int64_t Certificate::not_before() const {
  return Seconds(X509_get0_notBefore(impl_->x509.get()));
}
std::int64_t Certificate::not_after() const {
  return Seconds(X509_get0_notAfter(impl_->x509.get()));
}

bool Certificate::AllowsCodeSigning() const {
  X509* x = impl_->x509.get();
  const std::uint32_t flags = X509_get_extension_flags(x);
  const bool has_ku = (flags & EXFLAG_KUSAGE) != 0;
  const bool has_eku = (flags & EXFLAG_XKUSAGE) != 0;
  if (!has_ku && !has_eku) return false;
  if (has_ku && (X509_get_key_usage(x) & KU_DIGITAL_SIGNATURE) == 0) return false;
  if (has_eku && (X509_get_extended_key_usage(x) & (XKU_CODE_SIGN | XKU_ANYEKU)) == 0) return false;
  return true;
}

}  // namespace carton::sign
