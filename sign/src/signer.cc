// Making OMS bundles (sign/FORMAT.md "Signing").
#include "carton/sign/signer.h"

namespace carton::sign {

Result<SigningIdentity> LoadSigningIdentity(const std::string& key_path,
                                            const std::string& cert_path,
                                            const std::string& chain_path,
                                            const PassphraseFn& passphrase) {
  if (cert_path.empty() && !chain_path.empty()) {
    return InvalidArgument("a certificate chain needs the signing certificate too");
  }
  CARTON_ASSIGN_OR_RETURN(PrivateKey key, PrivateKey::ReadFile(key_path, passphrase));
  SigningIdentity id{std::move(key), {}};
  if (cert_path.empty()) return id;
  CARTON_ASSIGN_OR_RETURN(std::vector<Certificate> leaf, Certificate::ReadPemFile(cert_path));
  if (leaf.size() != 1) {
    return InvalidArgument(cert_path + ": " + std::to_string(leaf.size()) +
                           " certificates; give the signing certificate alone (the others "
                           "as the chain)");
  }
  CARTON_ASSIGN_OR_RETURN(PublicKey leaf_key, leaf[0].public_key());
  if (!(leaf_key == id.key.public_key())) {
    return InvalidArgument(cert_path + ": the certificate's key is not the key of " + key_path);
  }
  id.chain.push_back(std::move(leaf[0]));
  if (!chain_path.empty()) {
    CARTON_ASSIGN_OR_RETURN(std::vector<Certificate> rest, Certificate::ReadPemFile(chain_path));
    for (Certificate& c : rest) id.chain.push_back(std::move(c));
  }
  if (id.chain.size() > kMaxCertificates) {
    return InvalidArgument("a chain of " + std::to_string(id.chain.size()) +
                           " certificates, more than the " + std::to_string(kMaxCertificates) +
                           " a bundle may carry");
  }
  return id;
}

Result<Bundle> SignStatement(const Statement& statement, const SigningIdentity& identity) {
  Bundle b;
  b.statement = statement;
  b.payload = StatementJson(statement);
  CARTON_ASSIGN_OR_RETURN(b.signature, identity.key.Sign(AsBytes(Pae(kPayloadType, b.payload))));
  if (identity.chain.empty()) {
    b.method = Method::kKey;
    b.key_hint = identity.key.public_key().hint();
  } else {
    b.method = Method::kCertificate;
    for (const Certificate& c : identity.chain) b.certificates.push_back(c.der());
  }
  return b;
}

}  // namespace carton::sign
