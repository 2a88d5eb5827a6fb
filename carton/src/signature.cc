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
  for (std::string_view p : {manifest::kManifestPath, manifest::kLinksPath}) paths.emplace_back(p);
  paths.emplace_back(kDirectorySignatureName);
  return paths;
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

namespace internal {

Result<sign::Bundle> ParseKept(const KeptSignature& kept) {
  auto bundle = sign::ParseBundle(AsBytes(kept.bytes));
  if (!bundle.ok()) return bundle.status().WithContext(kept.where);
  return std::move(bundle).value();
}

}  // namespace internal

Result<std::optional<sign::Bundle>> FindSignature(CartonSource& carton) {
  CARTON_ASSIGN_OR_RETURN(std::optional<KeptSignature> kept, carton.Signature());
  if (!kept) return std::optional<sign::Bundle>();
  CARTON_ASSIGN_OR_RETURN(sign::Bundle b, internal::ParseKept(*kept));
  return std::optional<sign::Bundle>(std::move(b));
}

std::optional<SignatureSummary> DescribeSignature(CartonSource& carton,
                                                  const manifest::Manifest& manifest) {
  auto kept = carton.Signature();
  if (!kept.ok() || !*kept) return std::nullopt;
  SignatureSummary s;
  s.path = (*kept)->where;
  auto bundle = internal::ParseKept(**kept);
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

Result<std::optional<std::string>> SignatureToShip(CartonSource& carton) {
  CARTON_ASSIGN_OR_RETURN(std::optional<KeptSignature> kept, carton.Signature());
  if (!kept) return std::optional<std::string>();
  CARTON_ASSIGN_OR_RETURN(auto manifest, carton.Manifest());
  CARTON_ASSIGN_OR_RETURN(sign::Bundle bundle, internal::ParseKept(*kept));
  const auto problems =
      sign::CompareFiles(bundle.statement.resources, internal::ManifestFiles(manifest->manifest));
  if (!problems.empty()) {
    return sign::SignFailure(sign::Failure::kNotCovered,
                             kept->where + ": not the signature of " + carton.location().text() +
                                 ": " + sign::ProblemsStatus(problems).message());
  }
  return std::optional<std::string>(std::move(kept->bytes));
}

Result<sign::TrustVerdict> CheckTrust(const sign::TrustPolicy& policy, const CartonSource& carton,
                                      const manifest::Manifest& manifest,
                                      const sign::Bundle* bundle) {
  return policy.Check(carton.TrustTarget(), bundle, internal::ManifestFiles(manifest));
}

}  // namespace carton
