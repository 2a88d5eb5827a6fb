// Making OMS bundles: a statement signed with a private key, with the key
// method (publicKey.hint) or, with a leaf certificate and its chain, the
// certificate method (sign/FORMAT.md "Signing").
//
// A SigningIdentity holds the private key in memory for as long as it
// lives; nothing here writes or prints it. Thread-safe once built.
#pragma once

#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/sign/bundle.h"
#include "carton/sign/certificate.h"
#include "carton/sign/keys.h"

namespace carton::sign {

struct SigningIdentity {
  PrivateKey key;
  // Empty: the key method. Else the leaf (whose key must be `key`'s) then
  // the intermediates up to, not including, a root.
  std::vector<Certificate> chain;
};

// Reads the private key at `key_path` (PrivateKey::ReadFile) and, when
// `cert_path` is given, the leaf certificate there and the intermediates
// at `chain_path` (optional; PEM, in order). Errors: those of the reads;
// kInvalidArgument when the leaf's key is not the private key's, or a
// chain is given without a certificate.
Result<SigningIdentity> LoadSigningIdentity(const std::string& key_path,
                                            const std::string& cert_path,
                                            const std::string& chain_path,
                                            const PassphraseFn& passphrase);

// Signs `statement` (its root digest as MakeStatement computes it): the
// bundle, parsed (as ParseBundle would return it). Errors: kInternal.
Result<Bundle> SignStatement(const Statement& statement, const SigningIdentity& identity);

}  // namespace carton::sign
