// Helpers of the sign tests: the OMS vectors copied into tests/sign/oms/,
// and keys and certificates made at test time by make_pki.sh with the
// openssl CLI.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/sign/bundle.h"
#include "carton/sign/failure.h"
#include "carton/sign/verify.h"
#include "testing.h"

namespace carton::testing {

// tests/sign/oms/<rel>.
std::string OmsPath(std::string_view rel);
// The bytes of a file (empty when it cannot be read).
std::string FileBytes(const std::string& path);

// make_pki.sh's keys and certificates in a temporary directory, made once
// per test binary (the directory lives until the process exits).
const std::string& PkiDir();
// PkiDir()/<name>.
std::string Pki(std::string_view name);

// A PublicKey or the certificates of a PEM file; the test fails when they
// do not read.
sign::PublicKey ReadPublicKey(const std::string& path);
std::vector<sign::Certificate> ReadCertificates(const std::string& path);

// Signers trusting the key(s) or root(s) given.
sign::TrustedSigners TrustKey(const std::string& pub_path);
sign::TrustedSigners TrustRoots(const std::string& pem_path);

// A statement of a few resources, the bundle signed with the key at
// `key_path` (and the certificates, for the certificate method).
sign::Statement SmallStatement();
std::string SignedBundleJson(const std::string& key_path, const std::string& cert_path = "",
                             const std::string& chain_path = "");

// Checks `s` is an error with `code`, `failure` and `part` in its message.
void ExpectFailure(const Status& s, StatusCode code, sign::Failure failure, std::string_view part);

}  // namespace carton::testing
