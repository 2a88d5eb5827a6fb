// Importing a ModelPack carton did not write (oci/FORMAT.md "Importing a
// ModelPack"), through the built binary against Debian's docker-registry on
// 127.0.0.1: a ModelPack as other tools write one (raw layers, a tar+gzip
// and a tar+zstd layer, no carton documents) becomes a carton that verify
// calls ok, holding the same bytes under model/; pull, load, info, hash
// and verify read it. Hostile artifacts are refused, naming the layer and the rule,
// and leave nothing behind.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "carton/manifest/sha256.h"
#include "carton/oci/client.h"
#include "registry_testing.h"
#include "testing.h"

using carton::testing::ReadText;
using carton::testing::RegistryServer;
using carton::testing::Run;
using carton::testing::TempDir;

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
constexpr auto npos = std::string::npos;

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Carton(const TempDir& tmp, const std::string& cache = "cache") {
  return "CARTON_CACHE_DIR=" + Q(tmp.file(cache)) + " HOME=" + Q(tmp.path().string()) + " " +
         carton::testing::CartonBin();
}

std::string Sha(const std::string& bytes) {
  return carton::manifest::DigestString(carton::manifest::Sha256Of(carton::AsBytes(bytes)));
}

// One tar header block (ustar) with `size` in the size field, or in
// base-256 when `base256`.
std::string TarHeader(const std::string& name, std::uint64_t size, char type,
                      const std::string& link = "", bool base256 = false) {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<std::size_t>(name.size(), 100));
  std::snprintf(h.data() + 100, 8, "%07o", 0644);
  std::snprintf(h.data() + 108, 8, "%07o", 0);
  std::snprintf(h.data() + 116, 8, "%07o", 0);
  if (base256) {
    h[124] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<char>((size >> (8 * i)) & 0xff);
  } else {
    std::snprintf(h.data() + 124, 12, "%011llo", static_cast<unsigned long long>(size));
  }
  std::snprintf(h.data() + 136, 12, "%011o", 0);
  h[156] = type;
  std::memcpy(h.data() + 157, link.data(), std::min<std::size_t>(link.size(), 100));
  std::memcpy(h.data() + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h.data() + 148, 8, "%06o", sum);
  return h;
}

struct TarItem {
  TarItem(std::string n, std::string d, char t = '0', std::string l = "")
      : name(std::move(n)), data(std::move(d)), type(t), link(std::move(l)) {}
  std::string name, data;
  char type;
  std::string link;
};

std::string Tar(const std::vector<TarItem>& items) {
  std::string t;
  for (const TarItem& i : items) {
    t += TarHeader(i.name, i.data.size(), i.type, i.link);
    t += i.data + std::string((512 - i.data.size() % 512) % 512, '\0');
  }
  return t + std::string(1024, '\0');
}

// `bytes` through `tool` (gzip -n, zstd -q).
std::string Compress(const TempDir& tmp, const std::string& bytes, const std::string& tool) {
  const std::string in = tmp.file("compress-in");
  std::ofstream(in, std::ios::binary) << bytes;
  REQUIRE(Run(tool + " -c " + Q(in) + " > " + Q(in + ".out")).exit_code == 0);
  return ReadText(in + ".out");
}

// A ModelPack written as other tools write one: blobs uploaded directly,
// layers and DiffIDs as given, no carton annotation.
class ModelPackWriter {
 public:
  // `prefix`: the media types' (the spec's older name is
  // application/vnd.cnai.model.).
  ModelPackWriter(const RegistryServer& registry, std::string repo,
                  std::string prefix = "application/vnd.cncf.model.")
      : repo_(std::move(repo)), prefix_(std::move(prefix)) {
    auto c = carton::oci::Client::Open(registry.host(), {});
    REQUIRE(c.ok());
    client_ = std::move(c).value();
  }

  void Upload(const std::string& bytes) {
    auto d = carton::manifest::Sha256Of(carton::AsBytes(bytes));
    REQUIRE(client_->PushBlob(repo_, d, carton::AsBytes(bytes)).ok());
  }

  // A layer of `kind` and `encoding` holding `blob`; `diff_id` defaults
  // to the blob's digest.
  Json& Add(const std::string& kind, const std::string& encoding, const std::string& blob,
            const std::string& path = "", std::string diff_id = "") {
    Upload(blob);
    Json l = {{"mediaType", prefix_ + kind + ".v1." + encoding},
              {"digest", Sha(blob)},
              {"size", blob.size()}};
    const std::string filepath = prefix_.find("cnai") != std::string::npos
                                     ? "org.cnai.model.filepath"
                                     : "org.cncf.model.filepath";
    if (!path.empty()) l["annotations"] = {{filepath, path}};
    layers.push_back(l);
    diff_ids.push_back(diff_id.empty() ? Sha(blob) : diff_id);
    return layers.back();
  }

  void Push(const std::string& tag) {
    const Json config = {{"descriptor",
                          {{"name", "tiny"},
                           {"licenses", {"Apache-2.0"}},
                           {"title", "A tiny model"},
                           {"description", "A tiny model, imported"},
                           {"docURL", "https://example.com/tiny"},
                           {"sourceURL", "https://example.com/tiny.git"}}},
                         {"config", {{"format", "safetensors"}}},
                         {"modelfs", {{"type", "layers"}, {"diffIds", diff_ids}}}};
    const std::string config_text = config.dump();
    Upload(config_text);
    const Json manifest = {{"schemaVersion", 2},
                           {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                           {"artifactType", "application/vnd.cncf.model.manifest.v1+json"},
                           {"config",
                            {{"mediaType", prefix_ + "config.v1+json"},
                             {"digest", Sha(config_text)},
                             {"size", config_text.size()}}},
                           {"layers", layers}};
    const std::string text = manifest.dump();
    auto put = client_->PutManifest(repo_, tag, carton::oci::kImageManifestMediaType,
                                    carton::AsBytes(text));
    INFO(put.status().message());
    REQUIRE(put.ok());
  }

  std::vector<Json> layers;
  std::vector<std::string> diff_ids;

 private:
  std::string repo_;
  std::string prefix_;
  std::unique_ptr<carton::oci::Client> client_;
};

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The files of the model as the test writes them.
const std::map<std::string, std::string>& ModelFiles() {
  static const std::map<std::string, std::string> files = {
      {"weights-1.bin", carton::testing::Noise(300'000, 7)},
      {"weights-2.bin", carton::testing::Noise(200'000, 8)},
      {"config.json", "{\"hidden_size\": 8}\n"},
      {"tokenizer.json", "{\"vocab\": {\"a\": 0}}\n"},
      {"tokenizer/merges.txt", "a b\n"},
      // Large and compressible: the decoders still hold output when the
      // blob's last bytes are read.
      {"vocab.txt", Repeat("token ", 700'000)},
      {"tokenizer/big.txt", Repeat("merge ", 900'000)},
      {"README.md", "# tiny\n"}};
  return files;
}

// Writes the model as a ModelPack at repo:tag.
void WriteForeign(const RegistryServer& registry, const TempDir& tmp, const std::string& tag) {
  const auto& f = ModelFiles();
  ModelPackWriter w(registry, "team/tiny");
  w.Add("weight", "raw", f.at("weights-1.bin"), "weights-1.bin");
  w.Add("weight", "raw", f.at("weights-2.bin"), "weights-2.bin");
  const std::string tar = Tar({{"config.json", f.at("config.json")},
                               {"./tokenizer.json", f.at("tokenizer.json")},
                               {"vocab.txt", f.at("vocab.txt")}});
  w.Add("weight.config", "tar+gzip", Compress(tmp, tar, "gzip -n"), "", Sha(tar));
  const std::string tar2 = Tar({{"tokenizer/", "", '5'},
                                {"tokenizer/merges.txt", f.at("tokenizer/merges.txt")},
                                {"tokenizer/big.txt", f.at("tokenizer/big.txt")}});
  w.Add("weight.config", "tar+zstd", Compress(tmp, tar2, "zstd -q --no-check"), "", Sha(tar2));
  w.Add("doc", "raw", f.at("README.md"), "README.md");
  w.Push(tag);
}

}  // namespace

TEST_CASE("modelpack import: a ModelPack carton did not write is pulled into a carton",
          "[oci][cli][modelpack]") {
  RegistryServer registry;
  TempDir tmp;
  WriteForeign(registry, tmp, "v1");
  const std::string ref = registry.Ref("team/tiny:v1");
  const std::string out = tmp.file("tiny.carton");
  auto r = Run(Carton(tmp) + " pull " + ref + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("imported a ModelPack carton did not write") != std::string::npos);
  const std::string hash = r.out;

  r = Run(carton::testing::CartonBin() + " verify " + Q(out));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  r = Run(carton::testing::CartonBin() + " ls " + Q(out));
  REQUIRE(r.exit_code == 0);
  for (const auto& [path, bytes] : ModelFiles()) CHECK(r.out.find("model/" + path) != npos);
  const std::string dir = tmp.file("unpacked");
  REQUIRE(Run(carton::testing::CartonBin() + " unpack -q " + Q(out) + " " + Q(dir)).exit_code == 0);
  for (const auto& [path, bytes] : ModelFiles()) {
    INFO(path);
    CHECK(ReadText(dir + "/model/" + path) == bytes);
  }
  // carton.toml from the config's descriptor; weights alone run on noop.
  const Json info = Json::parse(Run(carton::testing::CartonBin() + " info --json " + Q(out)).out);
  INFO(info.dump());
  CHECK(info["model_name"] == "tiny");
  CHECK(info["license"] == "Apache-2.0");
  CHECK(info["short_description"] == "A tiny model");
  CHECK(info["homepage"] == "https://example.com/tiny");
  CHECK(info["repository"] == "https://example.com/tiny.git");
  CHECK(info["runner"]["runner_name"] == "noop");

  // load, info and hash of the reference go through the same import.
  r = Run(Carton(tmp, "load-cache") + " load --json " + ref);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string model_dir = Json::parse(r.out)["model_dir"];
  for (const auto& [path, bytes] : ModelFiles()) CHECK(ReadText(model_dir + "/" + path) == bytes);
  r = Run(Carton(tmp, "info-cache") + " info " + ref);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("tiny") != std::string::npos);
  r = Run(Carton(tmp, "hash-cache") + " hash " + ref);
  CHECK(r.exit_code == 0);
  CHECK(r.out == hash);
  r = Run(Carton(tmp, "verify-cache") + " verify " + ref);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // No temporary directory is left beside the carton.
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    CHECK(e.path().filename().string().find(".import-") == std::string::npos);
  }
}

namespace {

// Pulls repo:tag into an empty directory: exit 1, `message` on stderr,
// and the directory left empty.
void CheckRefused(const RegistryServer& registry, const TempDir& tmp, const std::string& tag,
                  const std::string& message) {
  const std::string dir = tmp.file("out-" + tag);
  fs::create_directories(dir);
  auto r =
      Run(Carton(tmp) + " pull " + registry.Ref("team/bad:" + tag) + " -o " + Q(dir + "/x.carton"));
  INFO(tag << ": " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(message) != npos);
  CHECK(fs::is_empty(dir));
}

}  // namespace

TEST_CASE("modelpack import: hostile ModelPacks are refused and leave nothing behind",
          "[oci][cli][modelpack][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string weights = carton::testing::Noise(5000, 3);
  auto writer = [&] { return ModelPackWriter(registry, "team/bad"); };
  {
    ModelPackWriter w = writer();
    w.Add("weight", "raw", weights, "../evil.bin");
    w.Push("traversal");
    CheckRefused(registry, tmp, "traversal", "layers[0]: path \"../evil.bin\"");
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "raw", weights, "/etc/evil.bin");
    w.Push("absolute");
    CheckRefused(registry, tmp, "absolute", "layers[0]: path \"/etc/evil.bin\"");
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "raw", weights, "w.bin");
    w.Add("weight", "tar", Tar({{"w.bin", "other"}}));
    w.Push("duplicate");
    CheckRefused(registry, tmp, "duplicate", "layers[1]: \"w.bin\" repeats");
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "tar", Tar({{"passwd", "", '2', "/etc/passwd"}}));
    w.Push("symlink");
    CheckRefused(registry, tmp, "symlink",
                 "layers[0]: \"passwd\": a symlink to \"/etc/passwd\"; only regular files and "
                 "directories are imported");
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "tar", Tar({{"w.bin", weights}, {"w2.bin", "", '1', "w.bin"}}));
    w.Push("hardlink");
    CheckRefused(registry, tmp, "hardlink", "\"w2.bin\": a hard link to \"w.bin\"");
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "tar", Tar({{"a/../../x.txt", "x"}}));
    w.Push("dotdot");
    CheckRefused(registry, tmp, "dotdot", "layers[0]: path \"a/../../x.txt\"");
  }
  {
    ModelPackWriter w = writer();
    const std::string tar = Tar({{"config.json", "{}"}});
    w.Add("weight.config", "tar+gzip", Compress(tmp, tar, "gzip -n"), "", Sha("not the tar"));
    w.Push("diffid");
    CheckRefused(registry, tmp, "diffid",
                 "the config's modelfs.diffIds names " + Sha("not the tar"));
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "raw", weights, "w.bin", Sha("other"));
    w.Push("rawdiffid");
    CheckRefused(registry, tmp, "rawdiffid", "config.modelfs.diffIds[0] is " + Sha("other"));
  }
  {
    // The registry serves other bytes than the digest names.
    ModelPackWriter w = writer();
    const std::string blob = carton::testing::Noise(4000, 9);
    w.Add("weight", "raw", blob, "w.bin");
    w.Push("digest");
    const std::string hex = Sha(blob).substr(7);
    std::ofstream(registry.BlobDataPath(hex), std::ios::binary | std::ios::trunc)
        << carton::testing::Noise(4000, 10);
    CheckRefused(registry, tmp, "digest", "sha256");
  }
  {
    ModelPackWriter w = writer();
    w.Add("weight", "raw", weights, "w.bin")["size"] = std::uint64_t{1} << 50;
    w.Push("hugelayer");
    const int gets = registry.Requests("GET", Sha(weights).substr(7));
    CheckRefused(registry, tmp, "hugelayer", "a declared size of 1125899906842624 bytes");
    CHECK(registry.Requests("GET", Sha(weights).substr(7)) == gets);
  }
  {
    ModelPackWriter w = writer();
    const std::string tar =
        TarHeader("big.bin", std::uint64_t{1} << 50, '0', "", true) + std::string(1024, '\0');
    w.Add("weight", "tar", tar);
    w.Push("hugeentry");
    CheckRefused(registry, tmp, "hugeentry",
                 "\"big.bin\": 1125899906842624 bytes, more than the limit");
  }
}

TEST_CASE(
    "modelpack import: tar layers as GNU tar writes them (pax, GNU long names, ustar "
    "prefixes, ./)",
    "[oci][cli][modelpack]") {
  RegistryServer registry;
  TempDir tmp;
  // A path past ustar's 100-byte name field: a pax `path` record in
  // --format=posix, an `L` entry in --format=gnu.
  const std::string deep = "sub/" + std::string(120, 'd') + "/weights.bin";
  const std::string src = tmp.file("src");
  fs::create_directories(src + "/" + fs::path(deep).parent_path().string());
  std::ofstream(src + "/" + deep, std::ios::binary) << carton::testing::Noise(3000, 4);
  std::ofstream(src + "/config.json", std::ios::binary) << "{}\n";
  ModelPackWriter w(registry, "team/gnu");
  // posix: zstd; gnu: plain; ustar-gz: two gzip members, as gzip -d reads
  // them (the name fits ustar's 100 + 155 bytes name and prefix).
  for (const std::string format : {"posix", "gnu", "ustar"}) {
    const std::string out = tmp.file(format + ".tar");
    REQUIRE(Run("tar --format=" + format + " -C " + Q(src) + " -cf " + Q(out) + " ./" + deep)
                .exit_code == 0);
    const std::string tar = ReadText(out);
    if (format == "posix") {
      w.Add("weight", "tar+zstd", Compress(tmp, tar, "zstd -q"), "", Sha(tar));
    } else if (format == "gnu") {
      w.Add("weight", "tar", tar, "", Sha(tar));
    } else {
      const std::string two =
          Compress(tmp, tar.substr(0, 700), "gzip -n") + Compress(tmp, tar.substr(700), "gzip -n");
      w.Add("weight", "tar+gzip", two, "", Sha(tar));
    }
    w.Push(format);
    const std::string carton = tmp.file(format + ".carton");
    auto r = Run(Carton(tmp) + " pull --json " + registry.Ref("team/gnu:" + format) + " -o " +
                 Q(carton));
    INFO(format << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const Json report = Json::parse(r.out);
    CHECK(report["imported"] == true);
    CHECK(report["byte_identical"] == false);
    const std::string dir = tmp.file(format + "-unpacked");
    REQUIRE(
        Run(carton::testing::CartonBin() + " unpack -q " + Q(carton) + " " + Q(dir)).exit_code ==
        0);
    CHECK(ReadText(dir + "/model/" + deep) == carton::testing::Noise(3000, 4));
    w.layers.clear();
    w.diff_ids.clear();
  }
}

TEST_CASE("modelpack import: more hostile tars", "[oci][cli][modelpack][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::vector<std::pair<std::vector<TarItem>, std::string>> cases = {
      {{{"/etc/x", "x"}}, "path \"/etc/x\""},
      {{{"fifo", "", '6'}}, "\"fifo\": a FIFO; only regular files and directories are imported"},
      {{{"dev", "", '3'}}, "\"dev\": a character device"},
      {{{"a", "x"}, {"a/b", "y"}}, "\"a/b\": \"a\" is a file"},
      {{{".git/config", "x"}}, "pack leaves out .git/"},
  };
  int n = 0;
  for (const auto& [items, message] : cases) {
    ModelPackWriter w(registry, "team/bad");
    w.Add("weight", "tar", Tar(items));
    const std::string tag = "t" + std::to_string(n++);
    w.Push(tag);
    CheckRefused(registry, tmp, tag, message);
  }
  // A tar whose checksum is wrong, and one cut short.
  std::string tar = Tar({{"w.bin", "x"}});
  tar[0] = 'v';
  ModelPackWriter w(registry, "team/bad");
  w.Add("weight", "tar", tar);
  w.Push("checksum");
  CheckRefused(registry, tmp, "checksum", "has a wrong checksum");
  ModelPackWriter w2(registry, "team/bad");
  w2.Add("weight", "tar", Tar({{"w.bin", std::string(2000, 'x')}}).substr(0, 1024));
  w2.Push("short");
  CheckRefused(registry, tmp, "short", "the tar ends early");
}

TEST_CASE("modelpack import: the spec's older media types (vnd.cnai.model) are read too",
          "[oci][cli][modelpack]") {
  RegistryServer registry;
  TempDir tmp;
  ModelPackWriter w(registry, "team/old", "application/vnd.cnai.model.");
  w.Add("weight", "raw", carton::testing::Noise(1000, 5), "model.bin");
  const std::string tar = Tar({{"config.json", "{}\n"}});
  w.Add("weight.config", "tar+gzip", Compress(tmp, tar, "gzip -n"), "", Sha(tar));
  w.Push("v1");
  const std::string out = tmp.file("old.carton");
  auto r = Run(Carton(tmp) + " pull -q " + registry.Ref("team/old:v1") + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = Run(carton::testing::CartonBin() + " ls " + Q(out));
  CHECK(r.out.find("model/model.bin") != npos);
  CHECK(r.out.find("model/config.json") != npos);
}
