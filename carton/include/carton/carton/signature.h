// Signed cartons (carton/FORMAT.md "Signatures"): an OpenSSF Model Signing
// bundle (sign/) whose files are exactly the ones MANIFEST lists, linked
// files included by their sha256, kept beside the carton:
//
//   MODEL.carton  ->  MODEL.carton.sig
//   DIR/          ->  DIR/model.sig    (an unpacked carton, or any folder)
//
//   oci://...     ->  a referrer of the carton's OCI manifest (oci/)
//
// Each carton's source knows where its kind keeps a signature
// (CartonSource::SignaturePath, Signature). SignCarton writes one;
// VerifySignature checks one against trusted keys or CA roots, for a carton
// or for any directory of files (a folder signed by the reference
// `model_signing` tool verifies too); FindSignature and CheckTrust are what
// a load needs to apply a trust policy. Inputs are untrusted; signatures
// are written atomically. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/reader.h"
#include "carton/carton/source.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/manifest/manifest.h"
#include "carton/sign/bundle.h"
#include "carton/sign/policy.h"
#include "carton/sign/signer.h"
#include "carton/sign/verify.h"

namespace carton {

// MODEL.carton's signature is MODEL.carton + kSignatureSuffix.
inline constexpr std::string_view kSignatureSuffix = ".sig";
// A directory's signature: DIR/kDirectorySignatureName.
inline constexpr std::string_view kDirectorySignatureName = "model.sig";

// The files a carton's signature lists: MANIFEST's entries, in the
// reference's order (sign::SortByComponents).
std::vector<sign::Resource> SignedFiles(const manifest::Manifest& manifest);

// What a carton's signature leaves out: MANIFEST, LINKS, model.sig and the
// git defaults (sign::kDefaultIgnorePaths), so that the signature verifies
// an unpacked carton as a directory, here and with `model_signing`.
std::vector<std::string> CartonIgnorePaths();

struct SignCartonOptions {
  // Where to write the signature; empty: the source's SignaturePath.
  std::string output;
};

struct SignCartonReport {
  std::string signature_path;
  manifest::Digest manifest_hash{};
  std::size_t files = 0;
  sign::Method method = sign::Method::kKey;
  // sign::SignerInfo::Describe() of the signer: "key <hint>" or the
  // leaf's subject.
  std::string signer;
};

// Signs the carton `carton` reads (a .carton file or URL, an oci://
// reference, or an unpacked carton directory): every file is first checked
// against MANIFEST (as Verify checks it, on the Environment's threads; a
// directory must hold exactly MANIFEST's files), so a carton that does not
// verify is never signed. The statement lists SignedFiles, ignores
// CartonIgnorePaths, and is named after carton.toml's model_name (else the
// carton's file name). Written atomically to options.output, else the
// source's SignaturePath (a URL or a reference needs an output).
// Errors: kCorrupt (the carton does not verify: the first problem),
// kInvalidArgument (no output for a URL or an oci:// reference), kIoError,
// and those of reading the carton.
Result<SignCartonReport> SignCarton(CartonSource& carton, const sign::SigningIdentity& identity,
                                    const SignCartonOptions& options = {});

struct SignatureCheckOptions {
  // The signature to check; empty: the one the source keeps
  // (CartonSource::Signature: beside the file, DIR/model.sig, a referrer).
  std::string signature_path;
  // Called with the bytes of a directory's files hashed so far and their
  // total.
  ProgressFn progress;
};

struct SignatureCheck {
  std::string signature_path;
  sign::SignerInfo signer;
  std::size_t files = 0;  // files the signature lists
  // A directory: every file was hashed (bytes_hashed). A carton file:
  // the signed list was checked against MANIFEST, whose files Verify
  // hashes.
  bool directory = false;
  std::uint64_t bytes_hashed = 0;
};

// Checks the signature of the carton or directory `carton` reads against
// `trusted`: the bundle (sign::ParseBundle), its signer
// (sign::VerifyBundle), and its files: for a carton, the signed list must
// be exactly MANIFEST's entries with their digests (the files themselves
// are Verify's to hash); for a directory (an unpacked carton, or any folder
// of files), every file is hashed and compared (sign::HashDirectory with
// the bundle's ignore_paths and the signature file itself left out, on the
// Environment's threads). Returns who signed. Errors: kCorrupt with the
// sign::Failure detail (kUnsigned when the source keeps no signature; the
// others of sign/), kNotFound (an explicit signature_path that does not
// exist), kUnsupported, kInvalidArgument (a URL, which keeps none: name
// one), kIoError, kNetworkError. Messages name the signature or the carton.
Result<SignatureCheck> VerifySignature(CartonSource& carton, const sign::TrustedSigners& trusted,
                                       const SignatureCheckOptions& options = {});

// The bundle at `path`, parsed (at most sign::kMaxBundleBytes read).
// Errors: kNotFound, kIoError, those of sign::ParseBundle naming `path`.
Result<sign::Bundle> ReadSignature(const std::string& path);

// The signature the source keeps (CartonSource::Signature), parsed;
// nullopt when there is none. Errors: those of Signature, and of
// sign::ParseBundle naming where it was.
Result<std::optional<sign::Bundle>> FindSignature(CartonSource& carton);

// The bytes of the signature the source keeps, checked to parse and to
// list exactly its MANIFEST's files: what push sends to a registry with the
// carton. nullopt when there is none. Errors: kCorrupt naming the
// signature (it does not parse, or lists other files), and those of
// reading.
Result<std::optional<std::string>> SignatureToShip(CartonSource& carton);

// What `carton info` shows: a signature beside the carton, who it claims
// signed (not checked against any trusted key: VerifySignature does that)
// and whether it lists exactly `manifest`'s files.
struct SignatureSummary {
  std::string path;
  sign::Method method = sign::Method::kKey;
  std::string claimed_signer;  // "key <hint>" or the leaf's subject
  bool covers_manifest = false;
  // Why the bundle does not parse or does not cover MANIFEST; "" when it
  // parses and covers it.
  std::string problem;
};
// nullopt when the source keeps no signature (or it cannot be read). A
// signature that does not parse is a summary with `problem` set.
std::optional<SignatureSummary> DescribeSignature(CartonSource& carton,
                                                  const manifest::Manifest& manifest);

// The trust policy's decision for the carton `carton` reads, whose MANIFEST
// is `manifest` and whose signature is `bundle` (nullptr: none):
// policy.Check(carton.TrustTarget(), bundle, SignedFiles(manifest)).
Result<sign::TrustVerdict> CheckTrust(const sign::TrustPolicy& policy, const CartonSource& carton,
                                      const manifest::Manifest& manifest,
                                      const sign::Bundle* bundle);

}  // namespace carton
