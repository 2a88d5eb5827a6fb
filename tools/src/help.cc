// The text every --help ends with, from one table: each command's
// examples, the environment variables it reads, what its exit 1 means.
#include "help.h"

#include <algorithm>
#include <vector>

namespace carton::cli {
namespace {

// Sets of environment variables, by what a command does.
enum EnvGroup : unsigned {
  kEnvHttp = 1,      // reads http(s) URLs
  kEnvCache = 2,     // uses the cache (linked files, loaded cartons, registry blobs)
  kEnvRegistry = 4,  // talks to OCI registries
  kEnvRunner = 8,    // starts runners
  kEnvTemp = 16,     // downloads a carton whose server ignores Range to the temporary directory
  kEnvGpu = 32,      // asks the CUDA driver for GPUs
  kEnvKey = 64,      // reads a private key, which may be encrypted
};

// What each command's --help ends with. `path` is the command as typed
// after "carton".
struct CommandDoc {
  const char* path;
  std::vector<const char*> examples;
  unsigned env;
  const char* exit1;  // what exit 1 means for this command
};

// The table of every command's examples, environment and exit 1.
const std::vector<CommandDoc> kDocs = {
    {"pack",
     {"carton pack my-model/ -o my-model.carton",
      "carton pack model.pt -o m.carton --runner torchscript --framework-version =2.1.0",
      "carton pack hf-snapshot/ -o m.carton --runner python --framework-version '>=3.11' "
      "--exclude '*.bin'",
      "carton pack my-model/ -o my-model.carton --compression deflate -j 4",
      "carton pack my-model/ -o my-model.carton --self-test in.safetensors:out.safetensors"},
     0,
     "a carton.toml or a file of the folder is bad, or the carton would break a rule "
     "verify checks (a self-test's tensors must match the declared inputs and outputs)"},
    {"init",
     {"carton init my-model/",
      "carton init my-model/ --runner python --framework-version '>=3.11'"},
     0,
     "never (a carton.toml already there, or a bad flag, is exit 2)"},
    {"verify",
     {"carton verify my-model.carton", "carton verify --json -j 4 a.carton b.carton",
      "carton verify --fetch https://example.com/m.carton",
      "carton verify my-model.carton --key release.pub   # and its my-model.carton.sig",
      "carton verify oci://registry.example.com/models/my-model:1.0 --ca roots.pem "
      "--identity release@example.com",
      "carton verify hf-snapshot/ --signature model.sig --key team.pub   # any folder"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "a carton breaks a rule (each problem is listed on stderr), or its signature does not "
     "hold: not signed, a wrong key, a broken or expired chain, a changed, missing or unlisted "
     "file"},
    {"keygen",
     {"carton keygen -o release.pem   # release.pem (0600) and release.pub",
      "CARTON_KEY_PASSPHRASE=... carton keygen -o release.pem --encrypt --curve p384"},
     kEnvKey,
     "never (an existing key file is not replaced: exit 2)"},
    {"sign",
     {"carton sign my-model.carton --key release.pem   # writes my-model.carton.sig",
      "carton sign my-model.carton --key leaf.key --cert leaf.pem --chain intermediates.pem",
      "carton sign unpacked-dir/ --key release.pem   # writes unpacked-dir/model.sig"},
     kEnvHttp | kEnvCache | kEnvTemp | kEnvKey,
     "the carton does not verify, so it is not signed"},
    {"info",
     {"carton info my-model.carton", "carton info --json https://example.com/m.carton"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "a carton is corrupt or unsupported"},
    {"hash",
     {"carton hash my-model.carton", "carton hash *.carton   # <hash>  <model> per line"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "a carton is corrupt"},
    {"ls",
     {"carton ls my-model.carton", "carton ls --json https://example.com/m.carton",
      "carton ls oci://registry.example.com/models/my-model:1.0"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "the carton is corrupt"},
    {"cat",
     {"carton cat my-model.carton carton.toml",
      "carton cat my-model.carton model/config.json | jq .",
      "carton cat oci://registry.example.com/models/my-model:1.0 carton.toml"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "the carton is corrupt or the file's bytes do not match MANIFEST"},
    {"diff",
     {"carton diff old.carton new.carton", "carton diff --json a.carton b.carton",
      "carton diff oci://registry.example.com/m:1.0 oci://registry.example.com/m:1.1"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "a carton is corrupt (a difference is not an error: exit 0)"},
    {"unpack",
     {"carton unpack my-model.carton   # into ./<model_name>/",
      "carton unpack https://example.com/m.carton out/",
      "carton unpack oci://registry.example.com/models/my-model:1.0 out/"},
     kEnvHttp | kEnvCache | kEnvRegistry,
     "the carton is corrupt or a file does not match MANIFEST"},
    {"push",
     {"carton push my-model.carton oci://registry.example.com/models/my-model:1.0",
      "carton push -j 8 -q my-model.carton oci://registry.example.com/models/my-model:1.0"
      "   # 8 blobs at once",
      "carton push --format modelpack my-model.carton "
      "oci://registry.example.com/models/my-model:1.0"
      "   # a CNCF ModelPack"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvTemp,
     "the carton is corrupt"},
    {"pull",
     {"carton pull oci://registry.example.com/models/my-model:1.0 -o my-model.carton",
      "carton pull --cache oci://registry.example.com/models/my-model:1.0 -o my-model.carton"
      "   # large blobs stay in the blob cache too",
      "carton pull oci://registry.example.com/models/llama:v1 -o llama.carton"
      "   # a ModelPack modctl pushed: imported"},
     kEnvHttp | kEnvCache | kEnvRegistry,
     "what the registry serves is corrupt, or a ModelPack to import breaks the rules"},
    {"shrink",
     {"carton shrink m.carton -o small.carton --url-prefix https://cdn.example.com/blobs "
      "--blobs blobs/"},
     kEnvHttp | kEnvCache | kEnvRegistry,
     "the carton is corrupt"},
    {"fetch",
     {"carton fetch small.carton -o whole.carton"},
     kEnvHttp | kEnvCache | kEnvRegistry,
     "the carton is corrupt or a linked file does not match MANIFEST"},
    {"tensors", {"carton tensors import weights.safetensors tensor_data/"}, 0, ""},
    {"tensors import",
     {"carton tensors import weights.safetensors my-model/tensor_data/"},
     0,
     "the file is not valid safetensors or has a dtype cartons lack"},
    {"tensors export",
     {"carton tensors export my-model/tensor_data/ weights.safetensors"},
     0,
     "the folder is not a valid tensor_data folder"},
    {"safetensors", {"carton safetensors inspect model.safetensors"}, kEnvHttp, ""},
    {"safetensors inspect",
     {"carton safetensors inspect model.safetensors",
      "carton safetensors inspect --json https://example.com/model.safetensors.index.json"},
     kEnvHttp,
     "the file breaks a rule of the format"},
    {"safetensors verify",
     {"carton safetensors verify *.safetensors"},
     kEnvHttp,
     "a file breaks a rule of the format"},
    {"safetensors get",
     {"carton safetensors get model.safetensors lm_head.weight -o head.safetensors"},
     kEnvHttp,
     "the file breaks a rule of the format"},
    {"load",
     {"carton load my-model.carton", "carton load --json https://example.com/m.carton",
      "carton load --json --device 0 my-model.carton   # and check that GPU 0 is there"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvGpu,
     "the carton is corrupt"},
    {"cache", {"carton cache list"}, kEnvCache, ""},
    {"cache list", {"carton cache list", "carton cache list --json"}, kEnvCache, ""},
    {"cache verify",
     {"carton cache verify", "carton cache verify <manifest hash>"},
     kEnvCache,
     "a cached carton's files changed"},
    {"cache rm", {"carton cache rm <manifest hash>"}, kEnvCache, ""},
    {"cache gc", {"carton cache gc", "carton cache gc --max-size 20G"}, kEnvCache, ""},
    {"self-test",
     {"carton self-test my-model.carton", "carton self-test --json --atol 1e-6 m.carton",
      "carton self-test oci://registry.example.com/models/my-model:1.0",
      "carton self-test --device cpu my-model.carton"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvRunner | kEnvGpu,
     "a self-test failed, or the carton is corrupt"},
    {"infer",
     {"carton infer m.carton --input x=in.safetensors --output out.safetensors",
      "carton infer m.carton --input x=batch.safetensors:images --output out.safetensors",
      "carton infer m.carton --input inputs.safetensors --output out.safetensors   # by name",
      "carton infer m.carton --device cuda:1 --input x=in.safetensors --output out.safetensors"},
     kEnvHttp | kEnvCache | kEnvRegistry | kEnvRunner | kEnvGpu,
     "the inputs do not match the carton's [[input]]s, or the carton is corrupt"},
    {"runners",
     {"carton runners", "CARTON_RUNNER_PATH=build/ carton runners --json"},
     kEnvRunner,
     ""},
    {"devices",
     {"carton devices", "carton devices --json",
      "carton infer m.carton --device GPU-8c6d5f29-... ...   # a UUID it lists"},
     kEnvGpu,
     ""},
    {"help", {"carton help", "carton help cache gc"}, 0, ""},
    {"version", {"carton version"}, 0, ""},
};

std::string EnvText(unsigned env) {
  struct Var {
    unsigned group;
    const char* name;
    const char* what;
  };
  static const Var kVars[] = {
      {kEnvCache, "CARTON_CACHE_DIR",
       "the cache (default $XDG_CACHE_HOME/carton, then ~/.cache/carton)"},
      {kEnvHttp, "CARTON_ALLOWED_HOSTS", "host patterns URLs may reach; others are refused"},
      {kEnvHttp, "CARTON_ALLOW_LINK_LOCAL", "1: allow link-local and cloud metadata addresses"},
      {kEnvHttp, "CARTON_HTTP_HEADERS", "lines `HOST-PATTERN Name: value` (or @FILE) to send"},
      {kEnvHttp, "CARTON_NETRC", "a netrc file instead of ~/.netrc, or off"},
      {kEnvHttp, "CARTON_HTTP_TIMEOUT",
       "seconds one small HTTP exchange (a registry's manifest, token, answer) may take (120)"},
      {kEnvRegistry, "CARTON_REGISTRY_AUTH",
       "registry credentials, docker config.json format (a path or the JSON)"},
      {kEnvRegistry, "DOCKER_CONFIG", "where config.json is when CARTON_REGISTRY_AUTH is unset"},
      {kEnvRunner, "CARTON_RUNNER_PATH", "directories searched for runners first (':'-separated)"},
      {kEnvGpu, "CARTON_LIBCUDA", "the CUDA driver library to open (default libcuda.so.1)"},
      {kEnvGpu, "CUDA_VISIBLE_DEVICES", "the GPUs the driver shows (and their indices)"},
      {kEnvKey, "CARTON_KEY_PASSPHRASE",
       "the passphrase of an encrypted private key (else asked on the terminal)"},
      {kEnvTemp, "TMPDIR",
       "where a carton by URL is downloaded whole when its server ignores Range (default /tmp)"},
  };
  std::string out;
  for (const auto& v : kVars) {
    if ((env & v.group) == 0) continue;
    std::string name = v.name;
    name.resize(std::max<std::size_t>(name.size() + 2, 26), ' ');
    out += "  " + name + v.what + "\n";
  }
  return out;
}

std::string Footer(const CommandDoc& doc, bool json) {
  std::string out = "Examples:\n";
  for (const char* e : doc.examples) out += std::string("  ") + e + "\n";
  out += "\nEnvironment:\n";
  out += doc.env == 0 ? "  (none read)\n" : EnvText(doc.env);
  out += "\nExit status:\n  0  success\n";
  if (*doc.exit1 != '\0') out += std::string("  1  ") + doc.exit1 + "\n";
  out += "  2  usage error (bad arguments), a missing file, or I/O, network or runner trouble";
  if (std::string_view(doc.path) == "infer") {
    out +=
        "\n  3  the model's own code failed: it raised (the message gives its exception and "
        "traceback)";
  }
  if (json) {
    out +=
        "\nWith --json, errors are also printed on stdout as "
        "{\"schema\": 1, \"ok\": false, \"error\": {\"code\", \"message\"}} (docs/JSON.md).";
  }
  return out;
}

}  // namespace

std::string HelpFooter(std::string_view path, bool json) {
  for (const auto& doc : kDocs) {
    if (path == doc.path) return Footer(doc, json);
  }
  return "";
}

std::size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace carton::cli
