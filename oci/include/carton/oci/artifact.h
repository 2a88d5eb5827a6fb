// Cartons as OCI artifacts: push a .carton to an OCI registry, pull it back
// byte for byte, and read its metadata or manifest hash from the registry
// (oci/FORMAT.md "Cartons as OCI artifacts" gives the layout and media types).
//
//   oci://HOST[:PORT]/REPO[:TAG|@sha256:DIGEST]
//
// The artifact is an OCI image manifest with one layer per MANIFEST file
// (its digest the sha256 MANIFEST records, so a file shared by two
// versions is stored and uploaded once), plus MANIFEST and LINKS as layers
// and a config blob that records how to rebuild the zip. Pull fetches the
// blobs into the blob cache (links/blob_cache.h; a cached blob is not
// downloaded again; every blob's sha256 is checked before it becomes
// visible) and rebuilds the carton with carton's ZipWriter; when the pushed
// carton was written by carton, the rebuild is checked to be byte for byte
// that carton. Registry access, credentials and retries are those of
// oci::Client. Push writes carton's own form or, with OciFormat::kModelPack,
// a CNCF ModelPack of the same blobs (oci/FORMAT.md "ModelPack
// artifacts"); everything that reads an artifact reads both. A ModelPack
// another tool wrote is imported: its files (raw and tar layers, each
// checked against its digest and DiffID) packed anew under model/, with
// carton.toml from its config (oci/FORMAT.md "Importing a ModelPack").
//
// Inputs from the registry are untrusted. Outputs are written to a
// temporary name and renamed into place on success. Thread-safety: the
// functions may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/info.h"
#include "carton/carton/source.h"
#include "carton/carton/verify.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/oci/client.h"

namespace carton::oci {

// The config blob's media type, also the manifest's artifactType.
inline constexpr std::string_view kOciCartonMediaType = "application/vnd.carton.model.v1+json";
// Layer media types.
inline constexpr std::string_view kOciFileMediaType = "application/vnd.carton.file.v1";
inline constexpr std::string_view kOciCartonTomlMediaType = "application/vnd.carton.config.v1+toml";
inline constexpr std::string_view kOciManifestMediaType = "application/vnd.carton.manifest.v1";
inline constexpr std::string_view kOciLinksMediaType = "application/vnd.carton.links.v1+toml";
// Annotations: a layer's path in the carton, and the manifest hash on the
// OCI manifest.
inline constexpr std::string_view kOciTitleAnnotation = "org.opencontainers.image.title";
inline constexpr std::string_view kOciManifestHashAnnotation = "dev.carton.manifest-hash";

// The CNCF ModelPack form (model-spec v1; oci/FORMAT.md "ModelPack
// artifacts"): the manifest's artifactType and the config's media type.
inline constexpr std::string_view kModelPackArtifactType =
    "application/vnd.cncf.model.manifest.v1+json";
inline constexpr std::string_view kModelPackConfigMediaType =
    "application/vnd.cncf.model.config.v1+json";
// Layer annotations: the file's path, and its tar-style metadata (a JSON
// string); "true" in the last when the layer's kind was guessed.
inline constexpr std::string_view kModelPackFilepathAnnotation = "org.cncf.model.filepath";
inline constexpr std::string_view kModelPackMetadataAnnotation =
    "org.cncf.model.file.metadata+json";
inline constexpr std::string_view kModelPackUntestedAnnotation =
    "org.cncf.model.file.mediatype.untested";
// Manifest annotation of a ModelPack written by carton: the digest
// ("sha256:<hex>") of the layer holding carton's own config (what the
// config blob holds in the carton form), at this path.
inline constexpr std::string_view kModelPackCartonConfigAnnotation = "dev.carton.config";
inline constexpr std::string_view kModelPackCartonConfigPath = ".carton/oci-config.json";

// The form push writes. Pull, load, info and hash read both.
enum class OciFormat : std::uint8_t {
  kCarton,     // carton's own artifact (config kOciCartonMediaType)
  kModelPack,  // a CNCF ModelPack (config kModelPackConfigMediaType)
};

// What an OCI operation takes beyond the Environment, whose rules it
// follows: the registry's credentials (registry_config), plain_http, the
// network rules, the cache root (the blob cache, mount records), `jobs`
// (blobs moved at once; with more than one, no per-blob progress line),
// `threads` (zstd when rebuilding: the output is the same for any number),
// and network.allow_file_links (push fetches linked files to push them).
struct OciOptions {
  // The registry client's own settings (credentials instead of the config
  // file's, the upload chunk size).
  oci::ClientOptions client;
  // Pull: also keep the large stored files' blobs that were not cached in
  // the blob cache. Without it they are written only into the carton as
  // they download (each byte written once); with it they are written to
  // the cache and copied into the carton from there.
  bool cache_large_blobs = false;
  // Push: the artifact's form. The file blobs are the same in both, so
  // pushing a carton in one form after the other uploads no file again.
  OciFormat format = OciFormat::kCarton;
  // Pull: also fetch the carton's signature (an OCI referrer, signature.h)
  // and write it beside the carton (OciPullReport::signature_path), through
  // the same connection and token as the pull.
  bool fetch_signature = false;
};

// What happened to one blob.
struct OciBlobReport {
  std::string path;  // the carton path ("MANIFEST", "LINKS", "(config)" for the config blob)
  manifest::Digest digest{};
  std::uint64_t size = 0;
  // Push: "uploaded", "mounted" or "present"; pull: "downloaded" or "cached".
  std::string action;
};

struct OciPushReport {
  std::string reference;               // oci://HOST/REPO:TAG
  manifest::Digest manifest_digest{};  // of the OCI manifest
  manifest::Digest manifest_hash{};    // of the carton
  std::vector<OciBlobReport> blobs;    // one per distinct digest
  std::uint64_t bytes_uploaded = 0;
  // The config records a layout hash: pull rebuilds exactly these bytes.
  bool reproducible = false;
};

// Pushes the carton `carton` (read whole, with its source's Environment) to `reference`
// (a tag; "latest" when none is given). Every blob is asked for first
// (HEAD) and sent only when the repository does not have it (mounted from
// another repository of the registry when one is known to hold it).
// Errors: kInvalidArgument (a bad reference, a digest reference, the
// registry's refusal of our credentials is kNetworkError), kCorrupt and
// kUnsupported (a bad carton, as Verify would say; a manifest over the
// registries' 4 MiB limit), kNetworkError, kIoError.
Result<OciPushReport> PushCarton(CartonSource& carton, const Location& reference,
                                 const OciOptions& options = {});

struct OciPullReport {
  std::string reference;
  manifest::Digest manifest_digest{};
  manifest::Digest manifest_hash{};
  std::vector<OciBlobReport> blobs;  // one per distinct digest, config included
  std::uint64_t bytes_downloaded = 0;
  // True when the config recorded a layout hash and the rebuilt carton
  // matched it: the carton written is byte for byte the one pushed.
  bool byte_identical = false;
  // The artifact was a ModelPack carton did not write, imported: its
  // files packed anew under model/ (oci/FORMAT.md "Importing a ModelPack").
  bool imported = false;
  // When not byte_identical: why (no layout recorded, or the rebuild came
  // out different, e.g. with another zstd version). The carton is still
  // written: every file checked, the same manifest hash.
  std::string not_identical_reason;
  // With OciOptions::fetch_signature: the signature written beside the
  // carton (signature.h PullSignatureBeside), "" when the registry has
  // none.
  std::string signature_path;
};

// Pulls `reference` and writes the carton to `out_path`. Linked files
// (LINKS) are fetched into the blob cache too but stay out of the zip, as
// pushed. Blobs already in the blob cache are not downloaded. A large
// stored file's blob (8 MiB or more, one entry) that is not cached is
// written into the carton as it downloads, hashed as it streams, its last
// byte only once its size and sha256 are checked, so the carton is done
// when the download is; it lands in the blob cache only with
// cache_large_blobs (or when a retry starts the download over after some
// of it was written: the carton is then written again from the cache).
// Every other blob goes into the blob cache first. A ModelPack another
// tool wrote is imported (report.imported): every blob into the blob
// cache, the files unpacked into a temporary directory beside `out_path`
// (removed after) and packed. Errors: kNotFound (unknown
// repository, tag or blob), kUnsupported (a manifest that is not a carton), kCorrupt (a blob or
// manifest whose sha256 is wrong, never cached; a config that contradicts
// MANIFEST; an imported layer whose DiffID does not match, a path that
// breaks the zip entry rules or repeats), kUnsupported also for an imported
// tar's links, devices and other entry types and sizes over the limits,
// kNetworkError (401/403 with the registry's message,
// transfers, after retries), kInvalidArgument, kIoError.
Result<OciPullReport> PullCarton(const Location& reference, const std::string& out_path,
                                 const Environment& environment, const OciOptions& options = {});

// Checks a carton artifact's three documents as pull does before it fetches
// any file blob: `image_manifest` (the OCI manifest) is a carton's, with
// valid, distinct layer titles; `config` (its config blob) follows the
// layout rules; `manifest_text` (its MANIFEST layer) parses; and the three
// agree (every MANIFEST file has its layer with its digest, and is a zip
// entry or linked). The blobs' digests and sizes are not checked here: a
// registry serves blobs by digest, and the fetch checks them. `where`
// names the artifact in messages. For checking artifacts without pulling
// them (a registry's admission hook, a mirror). For a ModelPack, `config`
// is its .carton/oci-config.json layer (carton's config), not the spec's
// config blob. Errors: kUnsupported (not a carton; a ModelPack carton did
// not write), kCorrupt naming the rule.
Status CheckOciArtifact(std::string_view image_manifest, std::string_view config,
                        std::string_view manifest_text, const std::string& where);

// A regular file of a ModelPack tar layer: its path (under model/ once
// imported) and size.
struct ModelPackLayerFile {
  std::string path;
  std::uint64_t size = 0;
};

// Reads the bytes of a ModelPack tar layer (`media_type` one of
// application/vnd.cncf.model.<kind>.v1.tar, .tar+gzip, .tar+zstd) as pull's
// import does, keeping nothing: every header, name and byte of data, by the
// import's rules (oci/FORMAT.md "Importing a ModelPack"). Returns the
// regular files in order. For tools that inspect a layer before importing
// it, and for fuzzing. `where` names the layer in messages. Errors:
// kInvalidArgument (not a tar layer type), kCorrupt and kUnsupported
// naming `where` and the entry, kIoError.
Result<std::vector<ModelPackLayerFile>> ReadModelPackTarLayer(std::string_view media_type,
                                                              ByteView layer,
                                                              const std::string& where);

// The OCI manifest's digest and the carton's manifest hash (the digest of
// its MANIFEST layer), from one manifest request. Errors: as PullCarton.
struct OciResolved {
  std::string reference;
  manifest::Digest manifest_digest{};
  // Zero when `imported`: a ModelPack carton did not write has no manifest
  // hash until it is imported (PullCarton).
  manifest::Digest manifest_hash{};
  bool imported = false;
};
Result<OciResolved> ResolveOciCarton(const Location& reference, const Environment& environment,
                                     const OciOptions& options = {});

// As ManifestHash (info.h): MANIFEST is fetched (into the blob cache) and
// checked to be well-formed. A ModelPack another tool wrote is imported
// into a temporary carton in the cache's downloads directory first (its
// manifest hash is the imported carton's). Errors: as PullCarton.
Result<manifest::Digest> OciManifestHash(const Location& reference, const Environment& environment,
                                         const OciOptions& options = {});

// The carton's MANIFEST as its artifact holds it: the OCI manifest's
// digest, and the MANIFEST blob's bytes (fetched into the blob cache,
// checked to parse), from one manifest request. `imported` (and no bytes)
// for a ModelPack carton did not write, which has no MANIFEST until it is
// imported (PullCarton). Errors: as PullCarton.
struct OciManifestText {
  manifest::Digest manifest_digest{};
  std::string text;
  bool imported = false;
};
Result<OciManifestText> ReadOciManifest(const Location& reference, const Environment& environment,
                                        const OciOptions& options = {});

// As ReadInfo (info.h), from the config, carton.toml, MANIFEST, LINKS and
// tensor_data/index.toml blobs only (fetched into the blob cache): the
// files' sizes are their layers'. A ModelPack another tool wrote is
// imported as OciManifestHash imports it, and read with ReadInfo. Errors:
// as PullCarton, and those of ReadInfo's parsers.
Result<CartonInfo> ReadOciInfo(const Location& reference, const Environment& environment,
                               const OciOptions& options = {}, const CartonLimits& limits = {});

}  // namespace carton::oci
