// Checking a carton's or a directory's signature (carton/FORMAT.md
// "Signatures"), and the signature an unpacked carton keeps.
#include <filesystem>

#include "carton/carton/signature.h"
#include "carton/common/atomic_file.h"
#include "carton/common/notice.h"
#include "carton/sign/certificate.h"
#include "carton/sign/files.h"
#include "signature_files.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

// The signature to check: the one asked for, else the one the source
// keeps.
Result<KeptSignature> SignatureOf(CartonSource& carton, const SignatureCheckOptions& options) {
  if (!options.signature_path.empty()) {
    std::error_code ec;
    if (!fs::exists(options.signature_path, ec)) {
      return NotFound(options.signature_path + ": no such signature file");
    }
    CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(options.signature_path));
    return KeptSignature{options.signature_path, std::string(AsChars(bytes))};
  }
  const std::string& text = carton.location().text();
  CARTON_ASSIGN_OR_RETURN(std::optional<KeptSignature> kept, carton.Signature());
  if (!kept) {
    const std::string path = carton.SignaturePath();
    return sign::SignFailure(
        sign::Failure::kUnsigned,
        text + ": not signed (" +
            (path.empty() ? "none is kept with it; name one (--signature)" : "no " + path) + ")");
  }
  return std::move(*kept);
}

// A directory: every file hashed and compared with the signed list.
Status CheckDirectoryFiles(const std::string& dir, const std::string& signature,
                           const sign::Bundle& bundle, const SignatureCheckOptions& options,
                           unsigned threads, SignatureCheck* out) {
  sign::HashDirectoryOptions o;
  o.ignore_paths = bundle.statement.ignore_paths;
  if (const std::string rel = internal::RelativeInside(signature, dir); !rel.empty()) {
    o.ignore_paths.push_back(rel);
  }
  o.allow_symlinks = bundle.statement.allow_symlinks;
  o.threads = threads;
  // The total for progress only: errors show when the files are listed.
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) total += it->file_size(size_ec);
  }
  o.on_bytes = [&, done = std::uint64_t{0}](std::uint64_t n) mutable {
    out->bytes_hashed += n;
    done += n;
    if (options.progress) options.progress(done, total);
  };
  auto present = sign::HashDirectory(dir, o);
  if (!present.ok()) return present.status().WithContext(dir);
  out->directory = true;
  return sign::ProblemsStatus(sign::CompareFiles(bundle.statement.resources, *present))
      .WithContext(dir);
}

// A carton: the signed list against MANIFEST.
Status CheckManifest(CartonSource& carton, const sign::Bundle& bundle) {
  CARTON_ASSIGN_OR_RETURN(auto manifest, carton.Manifest());
  return sign::ProblemsStatus(sign::CompareFiles(bundle.statement.resources,
                                                 internal::ManifestFiles(manifest->manifest)))
      .WithContext(carton.location().text());
}

}  // namespace

std::string internal::ClaimedSigner(const sign::Bundle& bundle) {
  if (bundle.method == sign::Method::kKey) {
    if (!bundle.key_hint.empty()) return "key " + bundle.key_hint;
    auto key = sign::PublicKey::FromDer(bundle.raw_public_key, "rawBytes");
    return key.ok() ? "key " + key->hint() : "a key that does not parse";
  }
  auto leaf = sign::Certificate::FromDer(bundle.certificates.front(), "leaf");
  return leaf.ok() ? leaf->subject() : "a certificate that does not parse";
}

std::string internal::RelativeInside(const std::string& signature, const std::string& dir) {
  std::error_code ec;
  const fs::path sig = fs::weakly_canonical(signature, ec);
  const fs::path root = fs::weakly_canonical(dir, ec);
  if (ec) return "";
  const fs::path rel = sig.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") return "";
  return rel.generic_string();
}

Result<SignatureCheck> VerifySignature(CartonSource& carton, const sign::TrustedSigners& trusted,
                                       const SignatureCheckOptions& options) {
  SignatureCheck out;
  CARTON_ASSIGN_OR_RETURN(KeptSignature kept, SignatureOf(carton, options));
  out.signature_path = kept.where;
  CARTON_ASSIGN_OR_RETURN(sign::Bundle bundle, internal::ParseKept(kept));
  auto signer = sign::VerifyBundle(bundle, trusted);
  if (!signer.ok()) return signer.status().WithContext(out.signature_path);
  out.signer = std::move(*signer);
  out.files = bundle.statement.resources.size();
  const std::string& dir = carton.directory();
  CARTON_RETURN_IF_ERROR(!dir.empty()
                             ? CheckDirectoryFiles(dir, out.signature_path, bundle, options,
                                                   carton.environment().threads, &out)
                             : CheckManifest(carton, bundle));
  return out;
}

Status internal::PlaceSignature(CartonSource& carton, const manifest::Manifest& manifest,
                                const std::string& dir) {
  auto kept = carton.Signature();
  if (!kept.ok() || !*kept) return Status::Ok();
  auto bundle = ParseKept(**kept);
  std::string problem = bundle.ok() ? "" : bundle.status().message();
  if (bundle.ok()) {
    problem = sign::ProblemsStatus(
                  sign::CompareFiles(bundle->statement.resources, ManifestFiles(manifest)))
                  .message();
  }
  if (!problem.empty()) {
    Notice((*kept)->where + ": not copied into the unpacked carton: " + problem);
    return Status::Ok();
  }
  return WriteFileAtomically((fs::path(dir) / kDirectorySignatureName).string(),
                             AsBytes((*kept)->bytes));
}

}  // namespace carton
