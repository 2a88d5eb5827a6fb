// The CLI's commands as plain functions, so main.cc stays a thin parser.
// Each returns the process exit code (see exit_code.h) and writes requested
// output to stdout, errors to stderr.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/loader/device.h"

namespace carton::cli {

struct SafetensorsInspectArgs {
  std::string file;
  bool json = false;
};
int SafetensorsInspect(const SafetensorsInspectArgs& args);

struct SafetensorsVerifyArgs {
  std::vector<std::string> files;
  bool json = false;
  bool quiet = false;
};
int SafetensorsVerify(const SafetensorsVerifyArgs& args);

struct SafetensorsGetArgs {
  std::string file;
  std::vector<std::string> tensors;
  std::string output;
  bool json = false;
};
int SafetensorsGet(const SafetensorsGetArgs& args);

}  // namespace carton::cli

namespace carton::cli {

// The policy flags of the commands that read cartons, from which
// environment_args.cc builds the one Environment a command runs with.
struct EnvironmentArgs {
  std::string registry_config;    // --registry-config: a docker config.json
  bool plain_http = false;        // --plain-http
  unsigned jobs = 4;              // blobs moved at once (-j for registries)
  unsigned threads = 0;           // -j: hashing threads (0: one per core)
  bool allow_file_links = false;  // --allow-file-links
};

// The flags that describe a model (pack and init): used when PATH has no
// carton.toml, or over its values with --override (pack_cmd.cc).
struct DescribeArgs {
  std::string runner;
  std::string framework_version;
  std::uint64_t compat_version = 1;
  bool compat_given = false;
  std::string name;
  std::string description;
  std::string license;
  std::vector<std::string> opts;        // KEY=VALUE
  std::vector<std::string> inputs;      // NAME:DTYPE[:SHAPE]
  std::vector<std::string> outputs;     // --output-tensor NAME:DTYPE[:SHAPE]
  std::vector<std::string> self_tests;  // IN=TENSOR,...[:OUT=...]; pack: IN.safetensors[:OUT]
};

struct PackArgs {
  std::string dir;  // a folder or a single file
  std::string output;
  std::string compression = "auto";
  int level = 0;
  std::uint32_t align = 64;
  unsigned threads = 0;
  DescribeArgs describe;
  bool override_config = false;      // --override: the flags win over carton.toml
  std::vector<std::string> exclude;  // globs
  bool json = false;
  bool quiet = false;  // -q: no progress line
};
int Pack(const PackArgs& args);

// init_cmd.cc: writes DIR/carton.toml, commented.
struct InitArgs {
  std::string dir;
  DescribeArgs describe;
  bool json = false;
  bool quiet = false;  // -q: no "wrote" line (notes stay)
};
int Init(const InitArgs& args);

// verify, info and hash take several MODELs, like sha256sum: each is
// reported, the others still run, and the exit code is the worst one.
struct VerifyArgs {
  std::vector<std::string> cartons;
  bool json = false;
  bool fetch = false;
  bool quiet = false;
  EnvironmentArgs env;
  // The signature check (sign_cmd.cc), when keys or CA roots are given:
  // the signature (default: beside the carton, DIR/model.sig, or an
  // oci:// reference's referrer), the trusted public keys and CA roots,
  // and identities one of which the leaf certificate must name.
  std::string signature;
  std::vector<std::string> keys;
  std::vector<std::string> cas;
  std::vector<std::string> identities;
  bool wants_signature() const { return !keys.empty() || !cas.empty(); }
};
int Verify(const VerifyArgs& args);

struct InfoArgs {
  std::vector<std::string> cartons;
  bool json = false;
  EnvironmentArgs env;
};
int Info(const InfoArgs& args);

struct UnpackArgs {
  std::string carton;
  std::string dir;  // empty: ./<model_name or file stem>
  bool json = false;
  bool quiet = false;
  EnvironmentArgs env;
};
int Unpack(const UnpackArgs& args);

struct HashArgs {
  std::vector<std::string> cartons;
  bool json = false;
  EnvironmentArgs env;
};
int Hash(const HashArgs& args);

// ls, cat, diff (inspect_cmd.cc).
struct LsArgs {
  std::string carton;
  bool json = false;
  EnvironmentArgs env;
};
int Ls(const LsArgs& args);

struct CatArgs {
  std::string carton;
  std::string path;
  EnvironmentArgs env;
};
int Cat(const CatArgs& args);

struct DiffArgs {
  std::string a;
  std::string b;
  bool json = false;
  EnvironmentArgs env;
};
int Diff(const DiffArgs& args);

// oci_cmd.cc
struct PushArgs {
  std::string carton;
  std::string reference;
  bool json = false;
  EnvironmentArgs env;
  bool quiet = false;             // no summary or progress on stderr
  std::string format = "carton";  // "carton" or "modelpack"
};
int Push(const PushArgs& args);

struct PullArgs {
  std::string reference;
  std::string output;
  bool json = false;
  EnvironmentArgs env;
  bool quiet = false;  // no summary or progress on stderr
  bool cache = false;  // keep large blobs in the blob cache too
};
int Pull(const PullArgs& args);

// links_cmd.cc
struct ShrinkArgs {
  std::string carton;
  std::string output;
  std::string url_prefix;
  std::string blobs_dir;
  std::uint64_t min_size = std::uint64_t{1} << 20;
  std::vector<std::string> encodings;
  bool json = false;
  bool quiet = false;
  EnvironmentArgs env;
};
int Shrink(const ShrinkArgs& args);

struct FetchArgs {
  std::string carton;
  std::string output;
  std::string compression = "stored";
  bool json = false;
  bool quiet = false;
  EnvironmentArgs env;
};
int Fetch(const FetchArgs& args);
// sign_cmd.cc: keys and signatures (carton/FORMAT.md "Signatures").
struct KeygenArgs {
  std::string output;         // -o: the private key
  std::string public_output;  // --public: default <output without .pem/.key>.pub
  std::string curve = "p256";
  bool encrypt = false;  // with the passphrase of CARTON_KEY_PASSPHRASE or the terminal
  bool json = false;
};
int Keygen(const KeygenArgs& args);

struct SignArgs {
  std::string carton;
  std::string key;
  std::string cert;
  std::string chain;
  std::string output;  // -o: default MODEL.carton.sig, or DIR/model.sig
  bool json = false;
  bool quiet = false;
  EnvironmentArgs env;  // -j: the check's threads; registries for oci://
};
int Sign(const SignArgs& args);

struct TensorsArgs {
  std::string file;  // the .safetensors file
  std::string dir;   // the tensor_data folder
  bool json = false;
};
int TensorsImport(const TensorsArgs& args);
int TensorsExport(const TensorsArgs& args);

}  // namespace carton::cli

// Loader, cache and runner commands (loader_cmd.cc).
namespace carton::cli {

struct LoadArgs {
  std::string model;
  std::string device;   // --device: resolved and reported; empty: not asked
  bool root = false;    // print the entry's root instead of model/
  bool verify = false;  // rehash the cache entry on a hit
  bool json = false;
  bool quiet = false;
  EnvironmentArgs env;
};
int Load(const LoadArgs& args);

struct CacheArgs {
  std::vector<std::string> hashes;
  bool json = false;
  std::string max_size;
  bool quiet = false;
};
int CacheList(const CacheArgs& args);
int CacheVerify(const CacheArgs& args);
int CacheRemove(const CacheArgs& args);
int CacheGc(const CacheArgs& args);

struct RunArgs {
  std::string model;
  double rtol = 1e-5;
  double atol = 1e-8;
  bool json = false;
  double timeout = 60;  // seconds per inference
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::string> opts;
  bool quiet = false;  // no progress line; infer: no output summary on stderr
  EnvironmentArgs env;
  // Declarations that do not hold (inputs against [[input]]) are warnings:
  // for cartons whose carton.toml does not describe the model.
  bool lenient = false;
  std::string device;  // --device (carton/loader/device.h); empty: the default
  // The runner override (--runner, --framework-version): they replace
  // carton.toml's [runner] fields when the runner is selected.
  std::string runner_name;
  std::string framework_version;
};
int SelfTest(const RunArgs& args);
int Infer(const RunArgs& args);
// `quiet`: no note on stderr when no runner is found.
int Runners(bool json, bool quiet);
int Version(bool json);

}  // namespace carton::cli

// Devices (devices_cmd.cc).
namespace carton::cli {

// "" when `spec` is a device spec, else why not (a usage error: the forms
// accepted).
std::string CheckDeviceSpec(const std::string& spec);

// The device of --device `spec` (empty: the default, the CPU without a word
// when there is no GPU). Errors: as loader::ResolveDevice (a GPU that is not
// there).
Result<loader::Device> ResolveCommandDevice(const std::string& spec);

// carton devices [--json]: the GPUs the CUDA driver lists; none (and a
// line on stderr saying why) without a driver or a GPU.
int Devices(bool json);

}  // namespace carton::cli
