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

// The signature to check: the one asked for, else the default place.
Result<std::string> SignatureFile(const Location& location, const SignatureCheckOptions& options) {
  std::error_code ec;
  if (!options.signature_path.empty()) {
    if (!fs::exists(options.signature_path, ec)) {
      return NotFound(options.signature_path + ": no such signature file");
    }
    return options.signature_path;
  }
  const std::string path = DefaultSignaturePath(location);
  if (path.empty()) {
    return InvalidArgument(location.text() + ": " + std::string(location.kind_name()) +
                           " has no signature beside it: name one (--signature)");
  }
  if (!fs::exists(path, ec)) {
    return sign::SignFailure(sign::Failure::kUnsigned,
                             location.text() + ": not signed (no " + path + ")");
  }
  return path;
}

// A directory: every file hashed and compared with the signed list.
Status CheckDirectoryFiles(const std::string& dir, const std::string& signature,
                           const sign::Bundle& bundle, const SignatureCheckOptions& options,
                           SignatureCheck* out) {
  sign::HashDirectoryOptions o;
  o.ignore_paths = bundle.statement.ignore_paths;
  if (const std::string rel = internal::RelativeInside(signature, dir); !rel.empty()) {
    o.ignore_paths.push_back(rel);
  }
  o.allow_symlinks = bundle.statement.allow_symlinks;
  o.threads = options.threads;
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

// A carton file: the signed list against MANIFEST.
Status CheckManifest(const Location& location, const sign::Bundle& bundle) {
  CARTON_ASSIGN_OR_RETURN(CartonReader reader, CartonReader::Open(location));
  Status read = reader.ReadManifest();
  if (!read.ok()) return read.WithContext(location.text());
  return sign::ProblemsStatus(sign::CompareFiles(bundle.statement.resources,
                                                 internal::ManifestFiles(reader.manifest())))
      .WithContext(location.text());
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

Result<SignatureCheck> VerifySignature(const Location& location,
                                       const sign::TrustedSigners& trusted,
                                       const SignatureCheckOptions& options) {
  CARTON_RETURN_IF_ERROR(location.status());
  SignatureCheck out;
  CARTON_ASSIGN_OR_RETURN(out.signature_path, SignatureFile(location, options));
  CARTON_ASSIGN_OR_RETURN(sign::Bundle bundle, ReadSignature(out.signature_path));
  auto signer = sign::VerifyBundle(bundle, trusted);
  if (!signer.ok()) return signer.status().WithContext(out.signature_path);
  out.signer = std::move(*signer);
  out.files = bundle.statement.resources.size();
  CARTON_RETURN_IF_ERROR(
      location.kind() == Location::Kind::kDirectory
          ? CheckDirectoryFiles(location.text(), out.signature_path, bundle, options, &out)
          : CheckManifest(location, bundle));
  return out;
}

Status internal::PlaceSignature(const Location& carton, const manifest::Manifest& manifest,
                                const std::string& dir) {
  const std::optional<SignatureSummary> s = DescribeSignature(carton, manifest);
  if (!s) return Status::Ok();
  if (!s->problem.empty()) {
    Notice(s->path + ": not copied into the unpacked carton: " + s->problem);
    return Status::Ok();
  }
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(s->path));
  return WriteFileAtomically((fs::path(dir) / kDirectorySignatureName).string(), bytes);
}

}  // namespace carton
