// The source of oci:// references (carton/oci/source.h).
#include "carton/oci/source.h"

#include <filesystem>
#include <memory>
#include <optional>

#include "carton/carton/signature.h"
#include "carton/carton/source.h"
#include "carton/common/temporaries.h"
#include "carton/links/cache_layout.h"
#include "carton/oci/artifact.h"
#include "carton/oci/signature.h"

namespace carton::oci {
namespace {

class OciSource final : public CartonSource {
 public:
  OciSource(const Location& location, const Environment& environment, const SourceOptions& options)
      : CartonSource(location, environment, options) {}

  // One manifest request: the MANIFEST layer's digest. A ModelPack another
  // tool wrote has none until it is imported, so it is pulled (imported)
  // first, and a miss reads that copy.
  Result<manifest::Digest> ManifestHash() override {
    if (pulled_ != nullptr) return pulled_->ManifestHash();
    CARTON_ASSIGN_OR_RETURN(OciResolved r, ResolveOciCarton(location(), environment()));
    manifest_digest_ = r.manifest_digest;
    if (!r.imported) {
      resolved_ = r.manifest_hash;
      return r.manifest_hash;
    }
    CARTON_RETURN_IF_ERROR(Pull(ReadScope::kWhole));
    return pulled_->ManifestHash();
  }

  Result<std::shared_ptr<const ManifestFile>> Manifest() override {
    if (pulled_ != nullptr) return pulled_->Manifest();
    if (manifest_ != nullptr) return manifest_;
    CARTON_ASSIGN_OR_RETURN(OciManifestText m, ReadOciManifest(location(), environment()));
    manifest_digest_ = m.manifest_digest;
    if (m.imported) {
      CARTON_RETURN_IF_ERROR(Pull(ReadScope::kWhole));
      return pulled_->Manifest();
    }
    auto parsed = manifest::Manifest::Parse(AsBytes(m.text));
    if (!parsed.ok()) return parsed.status().WithContext(location().text());
    const manifest::Digest hash = manifest::Sha256Of(AsBytes(m.text));
    manifest_ = std::make_shared<const ManifestFile>(
        ManifestFile{std::move(m.text), std::move(parsed).value(), hash});
    return manifest_;
  }

  // The newest referrer of the carton's OCI manifest that is an OMS bundle
  // listing exactly its MANIFEST's files (oci/signature.h).
  Result<std::optional<KeptSignature>> Signature() override {
    CARTON_ASSIGN_OR_RETURN(auto manifest, Manifest());
    if (!manifest_digest_) {
      CARTON_ASSIGN_OR_RETURN(OciResolved r, ResolveOciCarton(location(), environment()));
      manifest_digest_ = r.manifest_digest;
    }
    const std::vector<sign::Resource> files = SignedFiles(manifest->manifest);
    CARTON_ASSIGN_OR_RETURN(
        auto found, PullCartonSignature(location(), *manifest_digest_, files, environment()));
    if (!found) return std::optional<KeptSignature>();
    return std::optional<KeptSignature>(
        KeptSignature{location().text() + " (its signature " +
                          manifest::DigestString(found->referrer_digest) + ")",
                      std::move(found->bundle)});
  }

  sign::TrustTarget TrustTarget() const override {
    sign::TrustTarget t;
    t.kind = sign::TrustTarget::Kind::kOci;
    t.registry = location().oci().registry;
    t.repository = location().oci().repository;
    return t;
  }

  Result<CartonInfo> Info() override {
    if (pulled_ != nullptr) return pulled_->Info();
    return ReadOciInfo(location(), environment(), {}, options().limits);
  }

  Result<CartonReader*> Reader(ReadScope scope) override {
    if (pulled_ == nullptr) CARTON_RETURN_IF_ERROR(Pull(scope));
    return pulled_->Reader(scope);
  }

  std::shared_ptr<const MappedFile> file() const override {
    return pulled_ != nullptr ? pulled_->file() : nullptr;
  }

  ~OciSource() override {
    pulled_.reset();
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove(path_, ec);
    }
  }

 private:
  // Pulls the carton into the cache's downloads/, every blob kept in the
  // blob cache (what is read whole is kept whole, as a load keeps it), and
  // reads it as a file (named as the reference in messages). Its name has
  // an owner gc knows: the holder of the hash's lock for a load's pull
  // (<hash>-<n>.carton, which the next load of it removes if this one
  // dies), else this process (pulled-<pid>-<n>.carton).
  Status Pull(ReadScope scope) {
    CARTON_ASSIGN_OR_RETURN(std::string root, environment().CacheRoot());
    const links::CacheLayout layout(root);
    std::error_code ec;
    std::filesystem::create_directories(layout.DownloadsDir(), ec);
    if (ec) return IoError(layout.DownloadsDir() + ": cannot create: " + ec.message());
    path_ = scope == ReadScope::kWholeUnderCartonLock && resolved_
                ? layout.HashDownloadPath(manifest::ToHex(*resolved_))
                : layout.ProcessDownloadPath(links::kPulledCopyPrefix);
    // Registered before it exists, so that no moment leaves it unregistered.
    registration_ = TemporaryPath(path_, TemporaryKind::kFile);
    OciOptions pull;
    pull.cache_large_blobs = true;
    Environment env = environment();
    if (options().progress) env.network.progress = options().progress;
    CARTON_RETURN_IF_ERROR(PullCarton(location(), path_, env, pull).status());
    pulled_ = OpenFileCopy(location(), path_, env, options());
    return Status::Ok();
  }

  std::optional<manifest::Digest> resolved_;         // the manifest hash the registry names
  std::optional<manifest::Digest> manifest_digest_;  // the OCI manifest's
  std::shared_ptr<const ManifestFile> manifest_;     // its MANIFEST blob
  std::string path_;
  TemporaryPath registration_;
  std::unique_ptr<CartonSource> pulled_;  // the pulled copy, as a file
};

}  // namespace

void AddOciSource(Environment& environment) {
  environment.sources = SourceKinds::With(
      environment.sources, Location::Kind::kOci,
      [](const Location& location, const Environment& env,
         const SourceOptions& options) -> Result<std::unique_ptr<CartonSource>> {
        return std::unique_ptr<CartonSource>(new OciSource(location, env, options));
      });
}

}  // namespace carton::oci
