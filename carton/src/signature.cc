// Where a carton's signature lives and what it lists (carton/FORMAT.md
// "Signatures"), reading one, and the trust policy's decision for a
// carton.
#include "carton/carton/signature.h"

#include <filesystem>

#include "carton/common/atomic_file.h"
#include "carton/sign/files.h"
#include "signature_files.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string DefaultSignaturePath(const Location& location) {
  switch (location.kind()) {
    case Location::Kind::kFile:
      return location.text() + std::string(kSignatureSuffix);
    case Location::Kind::kDirectory:
      return (fs::path(location.text()) / kDirectorySignatureName).string();
    case Location::Kind::kUrl:
    case Location::Kind::kOci:
      return "";
  }
  return "";
}

std::vector<sign::Resource> internal::ManifestFiles(const manifest::Manifest& manifest) {
  std::vector<sign::Resource> files;
  files.reserve(manifest.size());
  for (const auto& e : manifest.entries()) files.push_back({e.path, e.sha256});
  return files;
}

std::vector<sign::Resource> SignedFiles(const manifest::Manifest& manifest) {
  std::vector<sign::Resource> files = internal::ManifestFiles(manifest);
  sign::SortByComponents(&files);
  return files;
}

std::vector<std::string> CartonIgnorePaths() {
  std::vector<std::string> paths(sign::kDefaultIgnorePaths.begin(),
                                 sign::kDefaultIgnorePaths.end());
  for (const char* p : {"MANIFEST", "LINKS"}) paths.emplace_back(p);
  paths.emplace_back(kDirectorySignatureName);
  return paths;
}

sign::TrustTarget TrustTargetFor(const Location& location) {
  sign::TrustTarget t;
  switch (location.kind()) {
    case Location::Kind::kOci:
      t.kind = sign::TrustTarget::Kind::kOci;
      t.registry = location.oci().registry;
      t.repository = location.oci().repository;
      break;
    case Location::Kind::kUrl:
      t.kind = sign::TrustTarget::Kind::kUrl;
      t.url = location.text();
      break;
    default: {
      std::error_code ec;
      const fs::path abs = fs::absolute(location.text(), ec);
      t.path = (ec ? fs::path(location.text()) : abs).lexically_normal().string();
      while (t.path.size() > 1 && t.path.back() == '/') t.path.pop_back();
    }
  }
  return t;
}

Result<sign::Bundle> ReadSignature(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && size > sign::kMaxBundleBytes) {
    return sign::SignFailure(sign::Failure::kBadBundle, path + ": " + std::to_string(size) +
                                                            " bytes, more than the limit of " +
                                                            std::to_string(sign::kMaxBundleBytes));
  }
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  auto bundle = sign::ParseBundle(bytes);
  if (!bundle.ok()) return bundle.status().WithContext(path);
  return std::move(bundle).value();
}

Result<std::optional<sign::Bundle>> FindSignature(const Location& location) {
  const std::string path = DefaultSignaturePath(location);
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return std::optional<sign::Bundle>();
  CARTON_ASSIGN_OR_RETURN(sign::Bundle b, ReadSignature(path));
  return std::optional<sign::Bundle>(std::move(b));
}

std::optional<SignatureSummary> DescribeSignature(const Location& location,
                                                  const manifest::Manifest& manifest) {
  const std::string path = DefaultSignaturePath(location);
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return std::nullopt;
  SignatureSummary s;
  s.path = path;
  auto bundle = ReadSignature(path);
  if (!bundle.ok()) {
    s.problem = bundle.status().message();
    return s;
  }
  s.method = bundle->method;
  s.claimed_signer = internal::ClaimedSigner(*bundle);
  const auto problems =
      sign::CompareFiles(bundle->statement.resources, internal::ManifestFiles(manifest));
  s.covers_manifest = problems.empty();
  if (!problems.empty()) s.problem = sign::ProblemsStatus(problems).message();
  return s;
}

Result<std::optional<std::string>> SignatureToShip(const Location& location) {
  const std::string path = DefaultSignaturePath(location);
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return std::optional<std::string>();
  CARTON_ASSIGN_OR_RETURN(CartonReader reader, CartonReader::Open(location));
  Status read = reader.ReadManifest();
  if (!read.ok()) return read.WithContext(location.text());
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  auto bundle = sign::ParseBundle(bytes);
  if (!bundle.ok()) return bundle.status().WithContext(path);
  const auto problems =
      sign::CompareFiles(bundle->statement.resources, internal::ManifestFiles(reader.manifest()));
  if (!problems.empty()) {
    return sign::SignFailure(sign::Failure::kNotCovered,
                             path + ": not the signature of " + location.text() + ": " +
                                 sign::ProblemsStatus(problems).message());
  }
  return std::optional<std::string>(std::string(AsChars(bytes)));
}

Result<sign::TrustVerdict> CheckTrust(const sign::TrustPolicy& policy, const Location& location,
                                      const manifest::Manifest& manifest,
                                      const sign::Bundle* bundle) {
  return policy.Check(TrustTargetFor(location), bundle, internal::ManifestFiles(manifest));
}

}  // namespace carton
