// carton push --format modelpack through the built binary against Debian's
// docker-registry on 127.0.0.1: the manifest and config the spec asks for
// (oci/FORMAT.md "ModelPack artifacts"), pulls, loads, info and hash that
// read it as they read carton's own form, blobs shared with other versions
// and with the carton form, and a ModelPack without carton's annotations.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "carton/links/blob_cache.h"
#include "carton/manifest/sha256.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"
#include "registry_testing.h"
#include "testing.h"

using carton::testing::ReadText;
using carton::testing::RegistryServer;
using carton::testing::Run;
using carton::testing::TempDir;

using carton::testing::Noise;

using carton::testing::WriteText;

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const char kConfig[] =
    "spec_version = 1\nmodel_name = \"mp\"\nlicense = \"MIT\"\n"
    "short_description = \"a test model\"\nhomepage = \"https://example.com/mp\"\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Carton(const TempDir& tmp, const std::string& cache = "cache") {
  return "CARTON_CACHE_DIR=" + Q(tmp.file(cache)) + " HOME=" + Q(tmp.path().string()) + " " +
         carton::testing::CartonBin();
}

std::string Hex(const std::string& text) {
  return carton::manifest::ToHex(carton::manifest::Sha256Of(carton::AsBytes(text)));
}

// A model with a file of every kind; the weights are shared by every
// version, the notes differ.
std::string PackVersion(const TempDir& tmp, const std::string& name, int version) {
  const std::string dir = tmp.file(name + "-dir");
  WriteText(dir + "/carton.toml", kConfig);
  WriteText(dir + "/model/weights.bin", Noise(700'000, 1));
  WriteText(dir + "/model/config.json", "{\"layers\": 2}\n");
  WriteText(dir + "/model/run.py", "print('hi')\n");
  WriteText(dir + "/model/notes.txt", "version " + std::to_string(version) + "\n");
  WriteText(dir + "/model/data.xyz", "xyz\n");
  WriteText(dir + "/misc/README.md", "# mp\n");
  const std::string out = tmp.file(name + ".carton");
  auto r = Run(carton::testing::CartonBin() + " pack " + Q(dir) + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

Json Parse(const std::string& s) {
  INFO(s);
  return Json::parse(s);
}

std::string ActionOf(const Json& report, const std::string& path) {
  for (const auto& b : report["blobs"]) {
    if (b["path"] == path) return b["action"];
  }
  return "";
}

// The OCI manifest at repo:tag and its config blob.
std::pair<Json, Json> FetchManifestAndConfig(const RegistryServer& registry,
                                             const std::string& repo, const std::string& tag) {
  auto client = carton::oci::Client::Open(registry.host(), {});
  REQUIRE(client.ok());
  auto m = (*client)->GetManifest(repo, tag);
  REQUIRE(m.ok());
  Json manifest = Json::parse(m->bytes);
  TempDir dir;
  const carton::links::BlobCache cache(dir.file("cache"));
  auto digest =
      carton::manifest::ParseDigestString(manifest["config"]["digest"].get<std::string>());
  REQUIRE(digest.ok());
  auto path = (*client)->FetchBlob(cache, repo, *digest, manifest["config"]["size"]);
  REQUIRE(path.ok());
  return {manifest, Json::parse(ReadText(*path))};
}

std::set<std::string> Keys(const Json& object) {
  std::set<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.insert(k);
  return keys;
}

bool Subset(const std::set<std::string>& a, const std::set<std::string>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

// Each layer's file metadata annotation says what the spec asks for.
void CheckMetadata(const Json& layer, const std::string& path) {
  const Json meta =
      Json::parse(layer["annotations"]["org.cncf.model.file.metadata+json"].get<std::string>());
  CHECK(Keys(meta) ==
        std::set<std::string>{"name", "mode", "uid", "gid", "size", "mtime", "typeflag"});
  CHECK(meta["name"] == fs::path(path).filename().string());
  CHECK(meta["mode"] == 0644);
  CHECK(meta["uid"] == 0);
  CHECK(meta["gid"] == 0);
  CHECK(meta["size"] == layer["size"]);
  CHECK(meta["mtime"] == "1970-01-01T00:00:00Z");
  CHECK(meta["typeflag"] == 48);
}

}  // namespace

TEST_CASE("modelpack cli: push --format modelpack writes the spec's manifest and config",
          "[oci][cli][modelpack]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  auto r = Run(Carton(tmp) + " push --format modelpack " + Q(v1) + " " +
               registry.Ref("team/mp:v1") + " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto [manifest, config] = FetchManifestAndConfig(registry, "team/mp", "v1");
  INFO(manifest.dump(1));
  INFO(config.dump(1));
  CHECK(manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json");
  CHECK(manifest["artifactType"] == "application/vnd.cncf.model.manifest.v1+json");
  CHECK(manifest["config"]["mediaType"] == "application/vnd.cncf.model.config.v1+json");

  const std::string kind = "application/vnd.cncf.model.";
  const std::map<std::string, std::string> expected = {
      {"carton.toml", "weight.config"},
      {"model/weights.bin", "weight"},
      {"model/config.json", "weight.config"},
      {"model/run.py", "code"},
      {"model/notes.txt", "doc"},
      {"model/data.xyz", "weight.config"},
      {"misc/README.md", "doc"},
      {"MANIFEST", "weight.config"},
      {".carton/oci-config.json", "weight.config"},
      // pack writes an empty tensor_data index: self-test data.
      {"tensor_data/index.toml", "dataset"}};
  std::map<std::string, std::string> kinds;
  Json layer_digests = Json::array();
  for (const Json& l : manifest["layers"]) {
    const std::string path = l["annotations"]["org.cncf.model.filepath"];
    CHECK(l["annotations"]["org.opencontainers.image.title"] == path);
    CheckMetadata(l, path);
    const std::string mt = l["mediaType"];
    REQUIRE(mt.starts_with(kind));
    REQUIRE(mt.ends_with(".v1.raw"));
    kinds[path] = mt.substr(kind.size(), mt.size() - kind.size() - 7);
    // Only the file no rule matched is marked untested.
    CHECK(l["annotations"].contains("org.cncf.model.file.mediatype.untested") ==
          (path == "model/data.xyz"));
    layer_digests.push_back(l["digest"]);
    if (path == "model/weights.bin") CHECK(l["digest"] == "sha256:" + Hex(Noise(700'000, 1)));
  }
  CHECK(kinds == expected);
  CHECK(manifest["layers"].back()["annotations"]["org.cncf.model.filepath"] ==
        ".carton/oci-config.json");
  CHECK(manifest["annotations"]["dev.carton.config"] == manifest["layers"].back()["digest"]);
  CHECK(manifest["annotations"].contains("dev.carton.manifest-hash"));

  // The config: exactly the schema's keys, the required ones present.
  CHECK(Keys(config) == std::set<std::string>{"descriptor", "config", "modelfs"});
  CHECK(Subset(Keys(config["descriptor"]),
               {"createdAt", "authors", "vendor", "family", "name", "version", "title",
                "description", "docURL", "sourceURL", "revision", "licenses"}));
  CHECK(config["descriptor"]["name"] == "mp");
  CHECK(config["descriptor"]["version"] == "v1");
  CHECK(config["descriptor"]["licenses"] == Json::array({"MIT"}));
  CHECK(config["descriptor"]["title"] == "a test model");
  CHECK(config["descriptor"]["description"] == "a test model");
  CHECK(config["descriptor"]["docURL"] == "https://example.com/mp");
  CHECK(Subset(Keys(config["config"]), {"architecture", "format", "paramSize", "precision",
                                        "quantization", "capabilities"}));
  CHECK(Keys(config["modelfs"]) == std::set<std::string>{"type", "diffIds"});
  CHECK(config["modelfs"]["type"] == "layers");
  CHECK(config["modelfs"]["diffIds"] == layer_digests);

  // The same carton pushed again: the same manifest digest.
  const Json first = Parse(r.out);
  r = Run(Carton(tmp) + " push --format modelpack " + Q(v1) + " " + registry.Ref("team/mp:v1") +
          " --json");
  REQUIRE(r.exit_code == 0);
  CHECK(Parse(r.out)["digest"] == first["digest"]);
}

TEST_CASE("modelpack cli: pull, load, info and hash read a ModelPack as they read a carton",
          "[oci][cli][modelpack]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string ref = registry.Ref("team/mp:v1");
  REQUIRE(Run(Carton(tmp) + " push -q --format modelpack " + Q(v1) + " " + ref).exit_code == 0);

  const std::string out = tmp.file("pulled.carton");
  auto r = Run(Carton(tmp, "pull-cache") + " pull " + ref + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("byte for byte the carton that was pushed") != std::string::npos);
  CHECK(Run("cmp " + Q(out) + " " + Q(v1)).exit_code == 0);
  const std::string local_hash = Run(carton::testing::CartonBin() + " hash " + Q(v1)).out;
  CHECK(r.out == local_hash);

  r = Run(Carton(tmp, "load-cache") + " load --json " + ref);
  REQUIRE(r.exit_code == 0);
  const Json loaded = Parse(r.out);
  CHECK(ReadText(loaded["model_dir"].get<std::string>() + "/weights.bin") == Noise(700'000, 1));

  r = Run(Carton(tmp, "info-cache") + " info " + ref);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("mp") != std::string::npos);
  auto local = Parse(Run(carton::testing::CartonBin() + " info --json " + Q(v1)).out);
  auto remote = Parse(Run(Carton(tmp, "info-cache") + " info --json " + ref).out);
  local.erase("model");
  remote.erase("model");
  CHECK(remote == local);

  r = Run(Carton(tmp, "hash-cache") + " hash " + ref);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == local_hash);

  r = Run(Carton(tmp, "verify-cache") + " verify " + ref);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("modelpack cli: blobs are shared between versions and with the carton form",
          "[oci][cli][modelpack]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string v2 = PackVersion(tmp, "v2", 2);
  const std::string weights_hex = Hex(Noise(700'000, 1));

  // The carton form first, then the ModelPack form of the same carton: no
  // file blob moves again, only the ModelPack's own config.
  auto r = Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("team/mp:c1") + " --json");
  REQUIRE(r.exit_code == 0);
  r = Run(Carton(tmp) + " push --format modelpack " + Q(v1) + " " + registry.Ref("team/mp:m1") +
          " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Json m1 = Parse(r.out);
  for (const Json& b : m1["blobs"]) {
    INFO(b.dump());
    CHECK(b["action"] == (b["path"] == "(modelpack config)" ? "uploaded" : "present"));
  }

  // A second version: only what changed is uploaded.
  r = Run(Carton(tmp) + " push --format modelpack " + Q(v2) + " " + registry.Ref("team/mp:m2") +
          " --json");
  REQUIRE(r.exit_code == 0);
  const Json m2 = Parse(r.out);
  CHECK(ActionOf(m2, "model/weights.bin") == "present");
  CHECK(ActionOf(m2, "carton.toml") == "present");
  CHECK(ActionOf(m2, "model/notes.txt") == "uploaded");
  CHECK(registry.Requests("PUT", "digest=sha256%3A" + weights_hex) == 1);

  // The summary says so too.
  r = Run(Carton(tmp) + " push --format modelpack " + Q(v2) + " " + registry.Ref("team/mp:m2"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("present") != std::string::npos);
  CHECK(r.err.find("uploaded") == std::string::npos);
}

TEST_CASE(
    "modelpack cli: a ModelPack without carton's annotations is imported, its DiffIDs checked",
    "[oci][cli][modelpack][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(
      Run(Carton(tmp) + " push -q --format modelpack " + Q(v1) + " " + registry.Ref("team/mp:v1"))
          .exit_code == 0);
  // The same manifest without carton's annotations (and its config layer):
  // a ModelPack carton did not write, imported (modelpack_import_test.cc),
  // whose config still lists the removed layer's DiffID.
  auto [manifest, config] = FetchManifestAndConfig(registry, "team/mp", "v1");
  manifest.erase("annotations");
  manifest["layers"].erase(manifest["layers"].size() - 1);
  auto client = carton::oci::Client::Open(registry.host(), {});
  REQUIRE(client.ok());
  const std::string text = manifest.dump();
  REQUIRE((*client)
              ->PutManifest("team/mp", "foreign", carton::oci::kImageManifestMediaType,
                            carton::AsBytes(text))
              .ok());
  const std::string ref = registry.Ref("team/mp:foreign");
  for (const std::string& command : {"pull " + ref + " -o " + Q(tmp.file("x.carton")),
                                     "load " + ref, "info " + ref, "hash " + ref}) {
    auto r = Run(Carton(tmp) + " " + command);
    INFO(command);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(ref + ": config.modelfs.diffIds must list one DiffID per layer") !=
          std::string::npos);
  }
  CHECK_FALSE(fs::exists(tmp.file("x.carton")));
}

namespace {

// What CheckOciArtifact takes for the ModelPack at repo:tag: the OCI
// manifest, carton's config layer and MANIFEST.
struct ModelPackDocuments {
  Json manifest;
  std::string carton_config, manifest_text;
};
ModelPackDocuments FetchModelPackDocuments(const RegistryServer& registry, const std::string& repo,
                                           const std::string& tag) {
  auto client = carton::oci::Client::Open(registry.host(), {});
  REQUIRE(client.ok());
  auto m = (*client)->GetManifest(repo, tag);
  REQUIRE(m.ok());
  ModelPackDocuments d{Json::parse(m->bytes), "", ""};
  TempDir dir;
  const carton::links::BlobCache cache(dir.file("cache"));
  for (const Json& l : d.manifest["layers"]) {
    const std::string path = l["annotations"]["org.cncf.model.filepath"];
    if (path != "MANIFEST" && path != ".carton/oci-config.json") continue;
    auto digest = carton::manifest::ParseDigestString(l["digest"].get<std::string>());
    REQUIRE(digest.ok());
    auto file = (*client)->FetchBlob(cache, repo, *digest, l["size"]);
    REQUIRE(file.ok());
    (path == "MANIFEST" ? d.manifest_text : d.carton_config) = ReadText(*file);
  }
  return d;
}

// The index of the layer at `path` in `manifest`.
std::size_t LayerAt(const Json& manifest, const std::string& path) {
  for (std::size_t i = 0; i < manifest["layers"].size(); ++i) {
    if (manifest["layers"][i]["annotations"]["org.cncf.model.filepath"] == path) return i;
  }
  FAIL("no layer " << path);
  return 0;
}

}  // namespace

TEST_CASE("modelpack cli: a ModelPack that breaks the rules is refused",
          "[oci][cli][modelpack][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(
      Run(Carton(tmp) + " push -q --format modelpack " + Q(v1) + " " + registry.Ref("team/mp:v1"))
          .exit_code == 0);
  const ModelPackDocuments d = FetchModelPackDocuments(registry, "team/mp", "v1");
  auto check = [&](const std::function<void(Json&)>& change) {
    Json manifest = d.manifest;
    change(manifest);
    return carton::oci::CheckOciArtifact(manifest.dump(), d.carton_config, d.manifest_text, "mp");
  };
  REQUIRE(check([](Json&) {}).ok());
  const std::size_t weights = LayerAt(d.manifest, "model/weights.bin");
  const std::size_t manifest_layer = LayerAt(d.manifest, "MANIFEST");
  const std::size_t config_layer = LayerAt(d.manifest, ".carton/oci-config.json");
  const std::string kFilepath = "org.cncf.model.filepath";
  const std::vector<std::pair<std::function<void(Json&)>, std::string>> cases = {
      {[&](Json& m) {
         m["layers"][weights]["mediaType"] = "application/vnd.cncf.model.weight.v1.tar+gzip";
       },
       "mp: layers[" + std::to_string(weights) +
           "]: media type \"application/vnd.cncf.model.weight.v1.tar+gzip\" is not a raw "
           "ModelPack layer type"},
      {[&](Json& m) { m["layers"][weights]["annotations"].erase(kFilepath); },
       "has no org.cncf.model.filepath"},
      {[&](Json& m) { m["layers"][weights]["annotations"][kFilepath] = "model/other.bin"; },
       "org.opencontainers.image.title and org.cncf.model.filepath differ"},
      {[&](Json& m) {
         m["layers"][weights]["annotations"][kFilepath] = "../x";
         m["layers"][weights]["annotations"].erase("org.opencontainers.image.title");
       },
       "title:"},
      {[&](Json& m) { m["layers"].push_back(m["layers"][weights]); }, "repeats"},
      {[&](Json& m) {
         m["layers"][manifest_layer]["mediaType"] = "application/vnd.cncf.model.doc.v1.raw";
       },
       "MANIFEST has media type"},
      {[&](Json& m) { m["annotations"]["dev.carton.config"] = m["layers"][weights]["digest"]; },
       ".carton/oci-config.json is not the layer dev.carton.config names"},
      {[&](Json& m) { m["layers"].erase(config_layer); }, "no .carton/oci-config.json layer"},
      {[&](Json& m) { m["annotations"]["dev.carton.config"] = "sha256:12"; }, "dev.carton.config:"},
      {[&](Json& m) { m["annotations"]["dev.carton.manifest-hash"] = std::string(64, '0'); },
       "dev.carton.manifest-hash does not name the MANIFEST layer's digest"},
  };
  for (const auto& [change, message] : cases) {
    const carton::Status s = check(change);
    INFO(s.message());
    CHECK(s.code() == carton::StatusCode::kCorrupt);
    CHECK(s.message().find(message) != std::string::npos);
  }
  const carton::Status s =
      check([](Json& m) { m["annotations"].erase("dev.carton.manifest-hash"); });
  CHECK(s.code() == carton::StatusCode::kUnsupported);
  CHECK(s.message() ==
        "mp: a ModelPack not written by carton: it has no carton documents to check (pull "
        "imports it)");
}
