// The fuzz targets: one entry point per parser of untrusted bytes.
//
// Each function takes arbitrary bytes, runs one public parser on them the
// way a user's input reaches it, and checks the invariants that must hold for
// any input (a parsed value re-serializes and re-parses; every view handed
// out lies inside the input). A broken invariant aborts. Memory errors and
// undefined behaviour are caught by the sanitizers the fuzz build enables.
//
// The libFuzzer binaries (fuzz_main.cc, one per target) call these, and so
// do the regression tests in tests/hostile/, which feed them the inputs that
// once broke a target. Thread-safety: the functions share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace carton::fuzz {

using Input = std::span<const std::uint8_t>;

// safetensors: File::FromBuffer (header parse and every validation rule),
// then every accessor; the same bytes through the complete validator alone
// and through File::OpenSource (an in-memory RandomAccessSource) must be
// judged the same, with the same message, tensors and bytes.
void FuzzSafetensors(Input data);
// carton.toml: ParseConfig, then WriteConfig and ParseConfig again.
void FuzzConfig(Input data);
// tensor_data/index.toml: ParseIndex, WriteIndex and ParseIndex again,
// DecodeTensor of every entry.
void FuzzTensorIndex(Input data);
// MANIFEST: Manifest::Parse; a parsed manifest serializes to the same bytes.
void FuzzManifest(Input data);
// LINKS: ParseLinks; WriteLinks re-parses to an equal value.
void FuzzLinks(Input data);
// The zip container: ZipReader::OpenBuffer, entries(), Find, Read, ReadTo,
// DataOffset and MappedData on every entry.
void FuzzZip(Input data);
// The zip container read through a RandomAccessSource (as remote cartons
// are): ZipReader::OpenSource over the bytes in memory, entries(), Find,
// Read and ReadTo on every entry; and, when OpenBuffer accepts the same
// bytes, the same entries and the same decoded bytes from both readers.
void FuzzZipSource(Input data);
// A whole .carton: Verify, ReadInfo and ManifestHash on the bytes (held in
// an anonymous in-memory file, so nothing touches the disk).
void FuzzCarton(Input data);
// Text from a registry or the environment; the first byte picks the
// parser: ParseOciReference (ToString re-parses to the same
// reference), ParseDockerConfig, ParseHostHeaders, ParseHostPattern
// (ToString re-parses to an equal pattern), RefusedTarget and
// CheckUrlAccess on a host or URL, ParseChallenges (WWW-Authenticate
// values, one per line), ParseTokenResponse, or RegistryError.
void FuzzRegistryText(Input data);
// A carton's OCI artifact from a registry: the OCI manifest, the config
// blob and MANIFEST, separated by NUL bytes, through oci::CheckOciArtifact.
void FuzzOciArtifact(Input data);
// A ModelPack tar layer through oci::ReadModelPackTarLayer: the first byte
// picks tar, tar+gzip or tar+zstd, the rest is the layer.
void FuzzModelPackLayer(Input data);
// An OMS signature bundle (sign::ParseBundle): a bundle that parses
// writes out (BundleJson) and parses back to the same statement, payload
// and signature, its payload alone parses to the same statement, and
// VerifyBundle against a key nobody signed with says no without a crash
// (certificates in the bundle are parsed on the way).
void FuzzBundle(Input data);
// The slice parser: ParseSlice, SliceToString round trip, and PlanSlice /
// ReadSlice against a tensor whose dtype and shape come from the first bytes.
void FuzzSlice(Input data);

struct Target {
  std::string_view name;
  void (*run)(Input);
};

// Every target, by name (the names scripts/fuzz.sh takes).
std::span<const Target> AllTargets();

}  // namespace carton::fuzz
