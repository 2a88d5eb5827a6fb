// carton push / pull and oci:// references through the built binary against
// Debian's docker-registry on 127.0.0.1: shared blobs uploaded once,
// byte-identical pulls, loads by tag and digest, auth (basic and bearer,
// the registry verifying the tokens), and every error the issue names.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "carton/manifest/sha256.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"
#include "nginx_testing.h"
#include "registry_testing.h"
#include "testing.h"

using carton::testing::ChildProcess;
using carton::testing::DroppingProxy;
using carton::testing::NginxServer;
using carton::testing::ReadText;
using carton::testing::RegistryOptions;
using carton::testing::RegistryServer;
using carton::testing::Run;
using carton::testing::TempDir;

using carton::testing::Noise;

using carton::testing::WriteText;

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const char kConfig[] =
    "spec_version = 1\nmodel_name = \"oci\"\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

std::string Q(const std::string& s) { return "'" + s + "'"; }

// The carton binary with its own cache and no credentials but those given.
std::string Carton(const TempDir& tmp, const std::string& cache = "cache") {
  return "CARTON_CACHE_DIR=" + Q(tmp.file(cache)) + " HOME=" + Q(tmp.path().string()) + " " +
         carton::testing::CartonBin();
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// Packs a model: weights shared by every version, notes that differ.
std::string PackVersion(const TempDir& tmp, const std::string& name, int version) {
  const std::string dir = tmp.file(name + "-dir");
  WriteText(dir + "/carton.toml", kConfig);
  WriteText(dir + "/model/weights.bin", Noise(700'000, 1));
  std::string notes;
  for (int i = 0; i < 5000; ++i)
    notes += "version " + std::to_string(version) + " line " + std::to_string(i) + "\n";
  WriteText(dir + "/model/notes.txt", notes);
  const std::string out = tmp.file(name + ".carton");
  auto r = Run(carton::testing::CartonBin() + " pack " + Q(dir) + " -o " + Q(out));
  REQUIRE(r.exit_code == 0);
  return out;
}

std::string Sha256Hex(const std::string& text) {
  return carton::manifest::ToHex(carton::manifest::Sha256Of(carton::AsBytes(text)));
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

TEST_CASE("oci cli: a carton with a zstd file compressed as frames pulls byte for byte",
          "[oci][cli]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string dir = tmp.file("frames-dir");
  WriteText(dir + "/carton.toml", kConfig);
  std::string text;
  for (int i = 0; text.size() < (6u << 20); ++i) text += "row " + std::to_string(i % 7919) + "\n";
  WriteText(dir + "/model/table.txt", text);  // over 4 MiB: frames of 1 MiB
  const std::string packed = tmp.file("frames.carton");
  auto r = Run(carton::testing::CartonBin() + " pack " + Q(dir) + " -o " + Q(packed) +
               " --compression zstd -j 3");
  REQUIRE(r.exit_code == 0);
  r = Run(Carton(tmp) + " push " + Q(packed) + " " + registry.Ref("team/frames:v1") + " --json");
  REQUIRE(r.exit_code == 0);
  CHECK(Parse(r.out)["reproducible"] == true);
  const std::string out = tmp.file("pulled.carton");
  r = Run(Carton(tmp, "pull-cache") + " pull " + registry.Ref("team/frames:v1") + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("byte for byte the carton that was pushed") != std::string::npos);
  CHECK(ReadText(out) == ReadText(packed));
}

TEST_CASE("oci cli: a weight shared by two versions is uploaded once, and pulls are byte-identical",
          "[oci][cli]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string v2 = PackVersion(tmp, "v2", 2);
  const std::string weights_hex = Sha256Hex(Noise(700'000, 1));

  auto r = Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("team/model:v1") + " --json");
  REQUIRE(r.exit_code == 0);
  Json one = Parse(r.out);
  CHECK(one["schema"] == 1);
  CHECK(one["ok"] == true);
  CHECK(one["model"] == v1);
  CHECK(one["reference"] == registry.Ref("team/model:v1"));
  CHECK(ActionOf(one, "model/weights.bin") == "uploaded");
  CHECK(one["reproducible"] == true);
  r = Run(Carton(tmp) + " push " + Q(v2) + " " + registry.Ref("team/model:v2") + " --json");
  REQUIRE(r.exit_code == 0);
  Json two = Parse(r.out);
  CHECK(ActionOf(two, "model/weights.bin") == "present");
  CHECK(ActionOf(two, "model/notes.txt") == "uploaded");
  // The registry's own log: one upload of the weights in all.
  CHECK(registry.Requests("PUT", "digest=sha256%3A" + weights_hex) == 1);
  CHECK(registry.Requests("HEAD", "/blobs/sha256:" + weights_hex) == 2);

  // Without --json: the digest on stdout, a summary on stderr.
  r = Run(Carton(tmp) + " push " + Q(v2) + " " + registry.Ref("team/model:v2"));
  REQUIRE(r.exit_code == 0);
  CHECK(FirstLine(r.out) == two["digest"]);
  CHECK(r.err.find("pushed " + v2 + " to " + registry.Ref("team/model:v2") +
                   ": 6 blobs: 6 present") != std::string::npos);
  // -q: the digest alone.
  r = Run(Carton(tmp) + " push -q " + Q(v2) + " " + registry.Ref("team/model:v2"));
  REQUIRE(r.exit_code == 0);
  CHECK(FirstLine(r.out) == two["digest"]);
  CHECK(r.err.empty());

  for (const auto& [tag, original] : {std::pair{"v1", v1}, std::pair{"v2", v2}}) {
    const std::string out = tmp.file(std::string("pulled-") + tag + ".carton");
    r = Run(Carton(tmp, "pull-cache") + " pull " + registry.Ref(std::string("team/model:") + tag) +
            " -o " + Q(out));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("byte for byte the carton that was pushed") != std::string::npos);
    CHECK(ReadText(out) == ReadText(original));
    auto hash = Run(carton::testing::CartonBin() + " hash " + Q(original));
    CHECK(r.out == hash.out);
  }
  // The second pull found the shared weights in the blob cache.
  r = Run(Carton(tmp, "pull-cache") + " pull " + registry.Ref("team/model:v2") + " -o " +
          Q(tmp.file("again.carton")) + " --json");
  REQUIRE(r.exit_code == 0);
  Json pulled = Parse(r.out);
  CHECK(pulled["schema"] == 1);
  CHECK(pulled["ok"] == true);
  CHECK(pulled["model"] == tmp.file("again.carton"));
  CHECK(pulled["byte_identical"] == true);
  CHECK(pulled["bytes_downloaded"] == 0);
  CHECK(ActionOf(pulled, "model/weights.bin") == "cached");
  CHECK(registry.Requests("GET", "/blobs/sha256:" + weights_hex) == 1);

  // By digest too.
  const std::string by_digest = registry.Ref("team/model@") + two["digest"].get<std::string>();
  r = Run(Carton(tmp) + " pull " + by_digest + " -o " + Q(tmp.file("digest.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(tmp.file("digest.carton")) == ReadText(v2));
}

TEST_CASE("oci cli: load by tag and by digest, and a cached load costs one manifest request",
          "[oci][cli][load]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  auto r = Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("team/model:v1"));
  REQUIRE(r.exit_code == 0);
  const std::string digest = FirstLine(r.out);

  r = Run(Carton(tmp, "load-cache") + " load --json " + registry.Ref("team/model:v1"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Json miss = Parse(r.out);
  CHECK(miss["cache_hit"] == false);
  CHECK(ReadText(miss["model_dir"].get<std::string>() + "/weights.bin") == Noise(700'000, 1));

  const int before = registry.TotalRequests();
  r = Run(Carton(tmp, "load-cache") + " load --json " + registry.Ref("team/model@" + digest));
  REQUIRE(r.exit_code == 0);
  Json hit = Parse(r.out);
  CHECK(hit["cache_hit"] == true);
  CHECK(hit["manifest_hash"] == miss["manifest_hash"]);
  CHECK(registry.TotalRequests() == before + 1);
  CHECK(registry.Requests("GET", "/v2/team/model/manifests/" + digest) == 1);
}

TEST_CASE("oci cli: info, hash and verify take oci references", "[oci][cli]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("m:v1")).exit_code == 0);
  auto local = Run(carton::testing::CartonBin() + " info --json " + Q(v1));
  auto remote = Run(Carton(tmp, "c2") + " info --json " + registry.Ref("m:v1"));
  INFO(remote.err);
  REQUIRE(remote.exit_code == 0);
  // The same document but for "model", the carton as given.
  Json remote_info = Parse(remote.out), local_info = Parse(local.out);
  CHECK(remote_info["model"] == registry.Ref("m:v1"));
  remote_info.erase("model");
  local_info.erase("model");
  CHECK(remote_info == local_info);
  auto hash = Run(Carton(tmp, "c3") + " hash " + registry.Ref("m:v1"));
  REQUIRE(hash.exit_code == 0);
  CHECK(hash.out == Run(carton::testing::CartonBin() + " hash " + Q(v1)).out);
  auto verify = Run(Carton(tmp, "c4") + " verify " + registry.Ref("m:v1"));
  INFO(verify.err);
  REQUIRE(verify.exit_code == 0);
  CHECK(verify.out.find(registry.Ref("m:v1") + ": ok (4 files") != std::string::npos);
}

TEST_CASE("oci cli: a carton written by another zip tool keeps its manifest hash", "[oci][cli]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  // The same files zipped by Info-ZIP: other headers, a directory entry,
  // deflate.
  const std::string unpacked = tmp.file("unpacked");
  REQUIRE(Run(carton::testing::CartonBin() + " unpack " + Q(v1) + " " + Q(unpacked)).exit_code ==
          0);
  const std::string foreign = tmp.file("foreign.carton");
  REQUIRE(Run("cd " + Q(unpacked) + " && zip -q -X -r " + Q(foreign) +
              " carton.toml MANIFEST model tensor_data")
              .exit_code == 0);
  REQUIRE(Run(carton::testing::CartonBin() + " verify " + Q(foreign)).exit_code == 0);
  auto r = Run(Carton(tmp) + " push --json " + Q(foreign) + " " + registry.Ref("m:zip"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Parse(r.out)["reproducible"] == false);
  r = Run(Carton(tmp, "c2") + " pull " + registry.Ref("m:zip") + " -o " +
          Q(tmp.file("pulled.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("not checked to be byte for byte the pushed carton: the pushed carton was not "
                   "written by carton's zip writer") != std::string::npos);
  CHECK(r.out == Run(carton::testing::CartonBin() + " hash " + Q(foreign)).out);
  CHECK(Run(carton::testing::CartonBin() + " verify " + Q(tmp.file("pulled.carton"))).exit_code ==
        0);
  // The directory entries survive.
  auto listing = Run("unzip -Z1 " + Q(tmp.file("pulled.carton")));
  CHECK(listing.out.find("model/\n") != std::string::npos);
}

TEST_CASE("oci cli: a symlink entry travels as its target's blob", "[oci][cli]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string unpacked = tmp.file("unpacked");
  REQUIRE(Run(carton::testing::CartonBin() + " unpack " + Q(v1) + " " + Q(unpacked)).exit_code ==
          0);
  // model/link.bin -> weights.bin, listed in MANIFEST with its target's
  // sha256, as the original implementation writes symlinks.
  fs::create_symlink("weights.bin", unpacked + "/model/link.bin");
  std::vector<std::string> lines;
  {
    std::istringstream in(ReadText(unpacked + "/MANIFEST"));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  lines.push_back("model/link.bin=" + Sha256Hex(Noise(700'000, 1)));
  std::sort(lines.begin(), lines.end());
  std::string manifest;
  for (const auto& l : lines) manifest += l + "\n";
  WriteText(unpacked + "/MANIFEST", manifest);
  const std::string with_link = tmp.file("link.carton");
  REQUIRE(Run("cd " + Q(unpacked) + " && zip -q -X -y -r " + Q(with_link) +
              " carton.toml MANIFEST model tensor_data")
              .exit_code == 0);
  REQUIRE(Run("unzip -Z " + Q(with_link) + " model/link.bin").out.find("lrw") != std::string::npos);
  REQUIRE(Run(carton::testing::CartonBin() + " verify " + Q(with_link)).exit_code == 0);

  auto r = Run(Carton(tmp) + " push --json " + Q(with_link) + " " + registry.Ref("m:link"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Json report = Parse(r.out);
  CHECK(report["reproducible"] == false);
  // The link and its target share one blob.
  CHECK(ActionOf(report, "model/link.bin").empty());
  CHECK(ActionOf(report, "model/weights.bin") == "uploaded");
  const std::string out = tmp.file("pulled.carton");
  r = Run(Carton(tmp, "c2") + " pull " + registry.Ref("m:link") + " -o " + Q(out));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == Run(carton::testing::CartonBin() + " hash " + Q(with_link)).out);
  CHECK(Run(carton::testing::CartonBin() + " verify " + Q(out)).exit_code == 0);
  // Rebuilt as a file holding the target's bytes (ZipWriter writes no
  // symlinks), as `carton fetch` does.
  CHECK(Run("unzip -p " + Q(out) + " model/link.bin").out == Noise(700'000, 1));
}

TEST_CASE("oci cli: linked files travel as blobs and stay linked", "[oci][cli][links]") {
  NginxServer nginx;
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string small = tmp.file("small.carton");
  auto r =
      Run(carton::testing::CartonBin() + " shrink " + Q(v1) + " -o " + Q(small) + " --url-prefix " +
          nginx.Url("/blobs") + " --blobs " + Q(nginx.www() + "/blobs") + " --min-size 500000");
  REQUIRE(r.exit_code == 0);
  r = Run(Carton(tmp) + " push --json " + Q(small) + " " + registry.Ref("m:linked"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(ActionOf(Parse(r.out), "model/weights.bin") == "uploaded");
  CHECK(ActionOf(Parse(r.out), "LINKS") == "uploaded");
  CHECK(nginx.Requests("/blobs/") == 1);  // fetched through LINKS to be pushed

  r = Run(Carton(tmp, "c2") + " pull " + registry.Ref("m:linked") + " -o " +
          Q(tmp.file("pulled.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("byte for byte") != std::string::npos);
  CHECK(ReadText(tmp.file("pulled.carton")) == ReadText(small));
  // The linked file came from the registry into the blob cache: verify
  // --fetch needs no other server.
  const std::string weights_hex = Sha256Hex(Noise(700'000, 1));
  CHECK(fs::exists(tmp.file("c2/blobs/sha256/" + weights_hex)));
  r = Run(Carton(tmp, "c2") + " verify --fetch " + Q(tmp.file("pulled.carton")));
  CHECK(r.exit_code == 0);
  CHECK(nginx.Requests("/blobs/") == 1);
}

TEST_CASE("oci cli: unknown repositories and tags", "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  auto r =
      Run(Carton(tmp) + " pull " + registry.Ref("no/such:v1") + " -o " + Q(tmp.file("x.carton")));
  CHECK(r.exit_code == 2);
  CHECK(r.err == "carton pull: " + registry.Ref("no/such:v1") + ": " + registry.host() +
                     "/no/such: manifest v1: not found: http status 404 (MANIFEST_UNKNOWN: "
                     "manifest unknown)\n");
  CHECK_FALSE(fs::exists(tmp.file("x.carton")));
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("m:v1")).exit_code == 0);
  r = Run(Carton(tmp) + " load " + registry.Ref("m:v9"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("manifest v9: not found") != std::string::npos);
  r = Run(Carton(tmp) + " pull " + registry.Ref("m@sha256:" + std::string(64, '0')) + " -o " +
          Q(tmp.file("x.carton")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("not found") != std::string::npos);
  r = Run(Carton(tmp) + " pull oci://" + registry.host() + "/Bad -o " + Q(tmp.file("x.carton")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("repository component \"Bad\"") != std::string::npos);
}

TEST_CASE("oci cli: a manifest that is not a carton", "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  // An ordinary image manifest, pushed with the library's client.
  carton::Environment o;
  o.registry_config = registry.WriteDockerConfig();
  o.cache_dir = tmp.file("cache");
  auto client = carton::oci::Client::Open(registry.host(), o);
  REQUIRE(client.ok());
  const std::string config = "{}";
  const auto digest = carton::manifest::Sha256Of(carton::AsBytes(config));
  REQUIRE((*client)->PushBlob("image", digest, carton::AsBytes(config)).ok());
  const std::string manifest =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
      R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:)" +
      carton::manifest::ToHex(digest) + R"(","size":2},"layers":[]})";
  REQUIRE((*client)
              ->PutManifest("image", "latest", carton::oci::kImageManifestMediaType,
                            carton::AsBytes(manifest))
              .ok());
  for (const std::string& command :
       {"pull " + registry.Ref("image") + " -o " + Q(tmp.file("x")),
        "load " + registry.Ref("image"), "info " + registry.Ref("image")}) {
    auto r = Run(Carton(tmp) + " " + command);
    INFO(command);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(registry.Ref("image:latest") +
                     ": not a carton: its config media type is "
                     "\"application/vnd.oci.image.config.v1+json\", not "
                     "application/vnd.carton.model.v1+json") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(tmp.file("x")));
}

TEST_CASE("oci cli: a tampered blob on the registry is refused and never cached",
          "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("m:v1")).exit_code == 0);
  const std::string weights = Noise(700'000, 1);
  const auto digest = carton::manifest::Sha256Of(carton::AsBytes(weights));
  std::string damaged = weights;
  damaged[123'456] ^= 0x20;
  carton::testing::WriteBytes(registry.BlobDataPath(carton::manifest::ToHex(digest)),
                              carton::AsBytes(damaged));

  auto r =
      Run(Carton(tmp, "c2") + " pull " + registry.Ref("m:v1") + " -o " + Q(tmp.file("x.carton")));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("model/weights.bin: " + registry.host() +
                   "/m: blob sha256:" + carton::manifest::ToHex(digest)) != std::string::npos);
  CHECK(r.err.find(": sha256 is " + Sha256Hex(damaged) + ", expected " +
                   carton::manifest::ToHex(digest)) != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("x.carton")));
  CHECK_FALSE(fs::exists(tmp.file("c2/blobs/sha256/" + carton::manifest::ToHex(digest))));
  r = Run(Carton(tmp, "c2") + " load " + registry.Ref("m:v1"));
  CHECK(r.exit_code == 1);
  CHECK_FALSE(fs::exists(tmp.file("c2/blobs/sha256/" + carton::manifest::ToHex(digest))));
}

TEST_CASE("oci cli: a registry that drops the connection mid-blob", "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("m:v1")).exit_code == 0);
  const std::string weights_hex = Sha256Hex(Noise(700'000, 1));
  {
    // Once: retried, and the pull succeeds.
    DroppingProxy once(registry.host(), 1, 500'000);
    auto r = Run(Carton(tmp, "c1") + " pull oci://" + once.host() + "/m:v1 -o " +
                 Q(tmp.file("a.carton")));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(once.Drops() == 1);
    CHECK(ReadText(tmp.file("a.carton")) == ReadText(v1));
  }
  // Every response over 500 KB cut half-way: the retry resumes with a Range
  // request for the rest (350 KB), which gets through.
  DroppingProxy always(registry.host(), -1, 500'000);
  auto r = Run(Carton(tmp, "c2") + " pull oci://" + always.host() + "/m:v1 -o " +
               Q(tmp.file("b.carton")));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(always.Drops() == 1);
  CHECK(ReadText(tmp.file("b.carton")) == ReadText(v1));
  CHECK(fs::exists(tmp.file("c2/blobs/sha256/" + weights_hex)));
  CHECK_FALSE(fs::exists(tmp.file("c2/blobs/sha256/" + weights_hex + ".partial")));
  // Every response cut, however small: the download fails after its
  // attempts, its partial file kept for the next run, no blob made.
  DroppingProxy every(registry.host(), -1, 0);
  r = Run(Carton(tmp, "c3") + " pull oci://" + every.host() + "/m:v1 -o " +
          Q(tmp.file("c.carton")));
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(every.host() + "/m: blob sha256:") != std::string::npos);
  CHECK(r.err.find("(after 4 attempts)") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("c.carton")));
  CHECK_FALSE(fs::exists(tmp.file("c3/blobs/sha256/" + weights_hex)));
}

// Packs a stored carton with these files (path, bytes) and pushes it.
std::string PushStored(const RegistryServer& registry, const TempDir& tmp, const std::string& name,
                       const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string dir = tmp.file(name + "-dir");
  WriteText(dir + "/carton.toml", kConfig);
  for (const auto& [path, bytes] : files) WriteText(dir + "/" + path, bytes);
  const std::string out = tmp.file(name + ".carton");
  REQUIRE(Run(carton::testing::CartonBin() + " pack " + Q(dir) + " -o " + Q(out) +
              " --compression stored")
              .exit_code == 0);
  REQUIRE(Run(Carton(tmp) + " push " + Q(out) + " " + registry.Ref(name + ":v1")).exit_code == 0);
  return out;
}

// Files left in a blob cache's blobs/ (partial downloads included).
int BlobFiles(const std::string& cache) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(cache + "/blobs", ec);
       !ec && it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_regular_file()) ++n;
  }
  return n;
}

TEST_CASE("oci cli: a large blob goes only into the carton, checked before it ends", "[oci][cli]") {
  // Stored blobs of 8 MiB and more that are not cached are written into the
  // pulled carton as they download, and nowhere else: the result must be
  // the same bytes, with no copy in the blob cache (unless --cache).
  RegistryServer registry;
  TempDir tmp;
  const std::string weights = Noise(10'000'000, 7);
  const std::string hex = Sha256Hex(weights);
  const std::string big = PushStored(
      registry, tmp, "big", {{"model/weights.bin", weights}, {"model/notes.txt", "notes\n"}});
  const std::string blob_uri = "/blobs/sha256:" + hex;

  auto r = Run(Carton(tmp, "c1") + " pull --json " + registry.Ref("big:v1") + " -o " +
               Q(tmp.file("a.carton")));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(tmp.file("a.carton")) == ReadText(big));
  CHECK(ActionOf(Parse(r.out), "model/weights.bin") == "downloaded");
  CHECK(Parse(r.out)["byte_identical"] == true);
  CHECK_FALSE(fs::exists(tmp.file("c1/blobs/sha256/" + hex)));
  CHECK(registry.Requests("GET", blob_uri) == 1);
  // Every other blob (the config and the small layers) is cached.
  CHECK(BlobFiles(tmp.file("c1")) == 5);

  // Pulled again into the same cache: downloaded again, since only the
  // carton has it.
  r = Run(Carton(tmp, "c1") + " pull --json " + registry.Ref("big:v1") + " -o " +
          Q(tmp.file("a2.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(ActionOf(Parse(r.out), "model/weights.bin") == "downloaded");
  CHECK(registry.Requests("GET", blob_uri) == 2);

  // --cache keeps it in the blob cache too, and a later pull does not
  // download it.
  r = Run(Carton(tmp, "c1") + " pull --cache " + registry.Ref("big:v1") + " -o " +
          Q(tmp.file("b.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(tmp.file("b.carton")) == ReadText(big));
  CHECK(ReadText(tmp.file("c1/blobs/sha256/" + hex)) == weights);
  CHECK(registry.Requests("GET", blob_uri) == 3);
  r = Run(Carton(tmp, "c1") + " pull --json " + registry.Ref("big:v1") + " -o " +
          Q(tmp.file("c.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(ActionOf(Parse(r.out), "model/weights.bin") == "cached");
  CHECK(ReadText(tmp.file("c.carton")) == ReadText(big));
  CHECK(registry.Requests("GET", blob_uri) == 3);

  // verify and load keep every blob in the blob cache.
  r = Run(Carton(tmp, "c2") + " verify " + registry.Ref("big:v1"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(tmp.file("c2/blobs/sha256/" + hex)));
  r = Run(Carton(tmp, "c3") + " load " + registry.Ref("big:v1"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(tmp.file("c3/blobs/sha256/" + hex)));
}

TEST_CASE("oci cli: a large blob whose bytes do not match its digest leaves nothing",
          "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string weights = Noise(10'000'000, 8);
  const std::string hex = Sha256Hex(weights);
  PushStored(registry, tmp, "big", {{"model/weights.bin", weights}});
  std::string damaged = weights;
  damaged[9'999'000] ^= 0x01;  // in the last bytes, which wait for the check
  carton::testing::WriteBytes(registry.BlobDataPath(hex), carton::AsBytes(damaged));
  for (const std::string flag : {"", " --cache"}) {
    INFO(flag);
    const std::string cache = flag.empty() ? "c1" : "c2";
    auto r = Run(Carton(tmp, cache) + " pull" + flag + " " + registry.Ref("big:v1") + " -o " +
                 Q(tmp.file("x.carton")));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("model/weights.bin: " + registry.host() + "/big: blob sha256:" + hex) !=
          std::string::npos);
    CHECK(r.err.find(": sha256 is " + Sha256Hex(damaged) + ", expected " + hex) !=
          std::string::npos);
    CHECK_FALSE(fs::exists(tmp.file("x.carton")));
    CHECK_FALSE(fs::exists(tmp.file(cache + "/blobs/sha256/" + hex)));
    CHECK_FALSE(fs::exists(tmp.file(cache + "/blobs/sha256/" + hex + ".partial")));
    for (const auto& e : fs::directory_iterator(tmp.path())) {
      CHECK(e.path().filename().string().find(".pull-") == std::string::npos);
    }
  }
  // A blob cut short (the registry's file truncated): refused the same way.
  damaged.resize(9'000'000);
  carton::testing::WriteBytes(registry.BlobDataPath(hex), carton::AsBytes(damaged));
  auto r =
      Run(Carton(tmp, "c3") + " pull " + registry.Ref("big:v1") + " -o " + Q(tmp.file("y.carton")));
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("model/weights.bin: " + registry.host() + "/big: blob sha256:" + hex) !=
        std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("y.carton")));
  CHECK_FALSE(fs::exists(tmp.file("c3/blobs/sha256/" + hex)));
}

TEST_CASE("oci cli: several large blobs stream in entry order, a shared one through the cache",
          "[oci][cli]") {
  // Three stored blobs larger than what a download may hold ahead of the
  // archive, fewer transfers than blobs, and one file twice (two entries,
  // one blob: it goes through the blob cache).
  RegistryServer registry;
  TempDir tmp;
  const std::string a = Noise(20'000'000, 11), b = Noise(18'000'000, 12), c = Noise(9'000'000, 13);
  const std::string big = PushStored(registry, tmp, "many",
                                     {{"model/a.bin", a},
                                      {"model/b.bin", b},
                                      {"model/c.bin", c},
                                      {"model/c-copy.bin", c},
                                      {"model/small.txt", "small\n"}});
  for (const std::string jobs : {"1", "2"}) {
    INFO(jobs);
    const std::string cache = "c" + jobs;
    auto r = Run(Carton(tmp, cache) + " pull --jobs " + jobs + " " + registry.Ref("many:v1") +
                 " -o " + Q(tmp.file("out.carton")));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(ReadText(tmp.file("out.carton")) == ReadText(big));
    CHECK_FALSE(fs::exists(tmp.file(cache + "/blobs/sha256/" + Sha256Hex(a))));
    CHECK_FALSE(fs::exists(tmp.file(cache + "/blobs/sha256/" + Sha256Hex(b))));
    CHECK(fs::exists(tmp.file(cache + "/blobs/sha256/" + Sha256Hex(c))));
  }
}

TEST_CASE("oci cli: a large blob's download that starts over rebuilds the carton",
          "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string weights = Noise(10'000'000, 9);
  const std::string big = PushStored(registry, tmp, "big", {{"model/weights.bin", weights}});
  // Cut off after half its bytes once: the retry starts the blob over
  // (a download into the carton does not resume), so the carton is written
  // again from the verified blob, or, when nothing reached the carton yet,
  // the stream starts over. Either way the same bytes.
  for (const std::string flag : {"", " --cache"}) {
    INFO(flag);
    DroppingProxy once(registry.host(), 1, 1'000'000);
    auto r = Run(Carton(tmp, "c" + std::to_string(flag.size())) + " pull" + flag + " oci://" +
                 once.host() + "/big:v1 -o " + Q(tmp.file("b.carton")));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(once.Drops() == 1);
    CHECK(ReadText(tmp.file("b.carton")) == ReadText(big));
  }
  // Cut every time: the pull fails after its attempts, no carton.
  DroppingProxy always(registry.host(), -1, 1'000'000);
  auto r = Run(Carton(tmp, "c9") + " pull oci://" + always.host() + "/big:v1 -o " +
               Q(tmp.file("z.carton")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("/big: blob sha256:" + Sha256Hex(weights)) != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("z.carton")));
}

TEST_CASE("oci cli: basic auth with the right, a wrong and no password", "[oci][cli][auth]") {
  RegistryOptions ro;
  ro.auth = RegistryOptions::Auth::kBasic;
  RegistryServer registry(ro);
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string right = registry.WriteDockerConfig();
  auto r = Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("private/m:v1") +
               " --registry-config " + Q(right));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // $CARTON_REGISTRY_AUTH, as a file and as the JSON itself.
  r = Run("CARTON_REGISTRY_AUTH=" + Q(right) + " " + Carton(tmp, "c2") + " pull " +
          registry.Ref("private/m:v1") + " -o " + Q(tmp.file("a.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(tmp.file("a.carton")) == ReadText(v1));
  r = Run("CARTON_REGISTRY_AUTH=" + Q(ReadText(right)) + " " + Carton(tmp, "c3") + " hash " +
          registry.Ref("private/m:v1"));
  CHECK(r.exit_code == 0);
  // ~/.docker/config.json.
  fs::create_directories(tmp.file(".docker"));
  fs::copy_file(right, tmp.file(".docker/config.json"));
  r = Run(Carton(tmp, "c4") + " hash " + registry.Ref("private/m:v1"));
  CHECK(r.exit_code == 0);
  fs::remove(tmp.file(".docker/config.json"));

  r = Run(Carton(tmp, "c5") + " pull " + registry.Ref("private/m:v1") + " -o " +
          Q(tmp.file("b.carton")) + " --registry-config " + Q(registry.WriteDockerConfig("wrong")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("access denied: http status 401 (UNAUTHORIZED: authentication required)") !=
        std::string::npos);
  r = Run(Carton(tmp, "c5") + " pull " + registry.Ref("private/m:v1") + " -o " +
          Q(tmp.file("b.carton")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the registry asks for credentials") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("b.carton")));
}

TEST_CASE("oci cli: the bearer token flow, the registry verifying the tokens", "[oci][cli][auth]") {
  RegistryOptions ro;
  ro.auth = RegistryOptions::Auth::kToken;
  RegistryServer registry(ro);
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string right = registry.WriteDockerConfig();
  auto r = Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("team/m:v1") +
               " --registry-config " + Q(right));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(registry.TokensIssued() == 1);  // one token for every blob and the manifest
  r = Run(Carton(tmp, "c2") + " pull " + registry.Ref("team/m:v1") + " -o " +
          Q(tmp.file("a.carton")) + " --registry-config " + Q(right));
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(tmp.file("a.carton")) == ReadText(v1));
  CHECK(registry.TokensIssued() == 2);
  r = Run(Carton(tmp, "c3") + " push " + Q(v1) + " " + registry.Ref("team/m:v2") +
          " --registry-config " + Q(registry.WriteDockerConfig("wrong")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the token server http://127.0.0.1:") != std::string::npos);
  CHECK(r.err.find("refused the credentials for " + registry.host()) != std::string::npos);
  CHECK(registry.TokensRefused() == 1);
}

TEST_CASE("oci cli: anonymous callers of a token registry pull but may not push",
          "[oci][cli][auth]") {
  RegistryOptions ro;
  ro.auth = RegistryOptions::Auth::kToken;
  RegistryServer registry(ro);
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("team/m:v1") +
              " --registry-config " + Q(registry.WriteDockerConfig()))
              .exit_code == 0);
  // The token server grants anonymous callers pull only.
  auto r = Run(Carton(tmp, "anon") + " pull " + registry.Ref("team/m:v1") + " -o " +
               Q(tmp.file("a.carton")));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(ReadText(tmp.file("a.carton")) == ReadText(v1));
  const int refused_before = registry.TokensRefused();
  r = Run(Carton(tmp, "anon2") + " push " + Q(v1) + " " + registry.Ref("team/m:v2"));
  INFO(r.err);
  CHECK(r.exit_code == 2);
  // The registry's own words, and that no credentials were configured.
  CHECK(r.err.find("access denied: http status 401 (UNAUTHORIZED: authentication required)") !=
        std::string::npos);
  CHECK(r.err.find("(no credentials are configured for " + registry.host() + ")") !=
        std::string::npos);
  CHECK(registry.TokensRefused() == refused_before);
  CHECK(Run(Carton(tmp, "anon3") + " hash " + registry.Ref("team/m:v2")).exit_code == 2);
}

TEST_CASE("oci cli: a second repository mounts the blobs of the first", "[oci][cli]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("team/a:v1")).exit_code == 0);
  auto r = Run(Carton(tmp) + " push --json " + Q(v1) + " " + registry.Ref("team/b:v1"));
  REQUIRE(r.exit_code == 0);
  Json report = Parse(r.out);
  for (const auto& b : report["blobs"]) {
    INFO(b.dump());
    CHECK(b["action"] == "mounted");
  }
  CHECK(report["bytes_uploaded"] == 0);
  CHECK(registry.Requests("POST", "mount=") == 6);
}

TEST_CASE("oci cli: an allowlist that does not name the registry refuses it before any request",
          "[oci][cli][access]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  auto r = Run("CARTON_ALLOWED_HOSTS=127.0.0.2 " + Carton(tmp) + " push " + Q(v1) + " " +
               registry.Ref("m:v1"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("http://" + registry.host() + "/v2/m/blobs/") != std::string::npos);
  CHECK(r.err.find(": refused: host 127.0.0.1 port ") != std::string::npos);
  CHECK(r.err.find("is not in the allowed hosts (CARTON_ALLOWED_HOSTS: 127.0.0.2)") !=
        std::string::npos);
  CHECK(registry.TotalRequests() == 0);
  r = Run("CARTON_ALLOWED_HOSTS=" + registry.host() + " " + Carton(tmp) + " push " + Q(v1) + " " +
          registry.Ref("m:v1"));
  CHECK(r.exit_code == 0);
}

TEST_CASE("oci cli: LINKS naming a host the allowlist refuses are not fetched",
          "[oci][cli][access]") {
  TempDir tmp;
  // A server on 127.0.0.2 holding the blob: it must see no request.
  const std::string www = tmp.file("www");
  fs::create_directories(www);
  ChildProcess server;
  const std::string log = tmp.file("server.log");
  const std::string port_line = server.Start(
      {"/usr/bin/python3", "-c",
       "import http.server, functools, sys\n"
       "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
       "s = http.server.ThreadingHTTPServer(('127.0.0.2', 0), h)\n"
       "print(s.server_address[1], flush=True)\n"
       "s.serve_forever()\n",
       www},
      log, /*first_line=*/true);
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string small = tmp.file("small.carton");
  REQUIRE(Run(carton::testing::CartonBin() + " shrink " + Q(v1) + " -o " + Q(small) +
              " --url-prefix http://127.0.0.2:" + port_line + "/blobs --blobs " +
              Q(www + "/blobs") + " --min-size 500000")
              .exit_code == 0);
  auto r = Run("CARTON_ALLOWED_HOSTS=127.0.0.1 " + Carton(tmp) + " verify --fetch " + Q(small));
  CHECK(r.exit_code == 1);  // a linked file that cannot be fetched is a problem in the report
  CHECK(r.err.find("http://127.0.0.2:" + port_line + "/blobs/") != std::string::npos);
  CHECK(r.err.find("refused: host 127.0.0.2 port " + port_line +
                   " is not in the allowed hosts (CARTON_ALLOWED_HOSTS: 127.0.0.1)") !=
        std::string::npos);
  CHECK(ReadText(log).find("GET") == std::string::npos);
  // Allowed, the same command fetches it.
  r = Run("CARTON_ALLOWED_HOSTS=127.0.0.2 " + Carton(tmp) + " verify --fetch " + Q(small));
  CHECK(r.exit_code == 0);
  CHECK(ReadText(log).find("GET /blobs/") != std::string::npos);
}

}  // namespace

namespace {

// The three documents of the artifact at repo:tag, fetched with the
// library's client: the OCI manifest, the config blob and MANIFEST.
struct Documents {
  std::string manifest, config, manifest_text;
};
Documents FetchDocuments(const RegistryServer& registry, const std::string& repo,
                         const std::string& tag) {
  using carton::oci::Client;
  auto client = Client::Open(registry.host(), {});
  REQUIRE(client.ok());
  auto m = (*client)->GetManifest(repo, tag);
  REQUIRE(m.ok());
  const Json manifest = Json::parse(m->bytes);
  TempDir dir;
  const carton::links::BlobCache cache(dir.file("cache"));
  auto fetch = [&](const Json& descriptor) {
    auto digest = carton::manifest::ParseDigestString(descriptor["digest"].get<std::string>());
    REQUIRE(digest.ok());
    auto path = (*client)->FetchBlob(cache, repo, *digest, descriptor["size"]);
    REQUIRE(path.ok());
    return ReadText(*path);
  };
  Documents d{m->bytes, fetch(manifest["config"]), ""};
  for (const Json& l : manifest["layers"]) {
    // Some variants have a layer without annotations.
    const Json annotations = l.value("annotations", Json::object());
    if (annotations.value("org.opencontainers.image.title", "") == "MANIFEST") {
      d.manifest_text = fetch(l);
    }
  }
  return d;
}

// Pushes a variant of the artifact at `tag`: its manifest and config
// changed by `change_manifest` and `change_config` (the config's digest and
// size are then fixed up), under `new_tag`.
void PushVariant(const RegistryServer& registry, const std::string& repo, const std::string& tag,
                 const std::string& new_tag, const std::function<void(Json&)>& change_manifest,
                 const std::function<void(Json&)>& change_config) {
  using carton::oci::Client;
  auto client = Client::Open(registry.host(), {});
  REQUIRE(client.ok());
  const Documents d = FetchDocuments(registry, repo, tag);
  Json manifest = Json::parse(d.manifest);
  Json config = Json::parse(d.config);
  change_config(config);
  const std::string config_text = config.dump();
  const auto digest = carton::manifest::Sha256Of(carton::AsBytes(config_text));
  REQUIRE((*client)->PushBlob(repo, digest, carton::AsBytes(config_text)).ok());
  manifest["config"]["digest"] = carton::manifest::DigestString(digest);
  manifest["config"]["size"] = config_text.size();
  change_manifest(manifest);
  const std::string text = manifest.dump();
  REQUIRE(
      (*client)
          ->PutManifest(repo, new_tag, carton::oci::kImageManifestMediaType, carton::AsBytes(text))
          .ok());
}

// carton::oci::CheckOciArtifact on the artifact at repo:tag.
carton::Status CheckInRegistry(const RegistryServer& registry, const std::string& repo,
                               const std::string& tag) {
  const Documents d = FetchDocuments(registry, repo, tag);
  return carton::oci::CheckOciArtifact(d.manifest, d.config, d.manifest_text,
                                       registry.Ref(repo + ":" + tag));
}

TEST_CASE("oci cli: artifacts that break the layout rules are refused before anything is written",
          "[oci][cli][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("m:good")).exit_code == 0);
  auto none = [](Json&) {};
  auto layer = [](Json& m, const std::string& title) -> Json& {
    for (auto& l : m["layers"]) {
      if (l["annotations"]["org.opencontainers.image.title"] == title) return l;
    }
    FAIL("no layer " << title);
    return m;
  };
  struct Case {
    std::string name;
    std::function<void(Json&)> manifest, config;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"config-version", none, [](Json& c) { c["version"] = 2; }, 1,
       "carton config blob: version 2 is not supported (only 1)"},
      {"config-hash", none, [](Json& c) { c["manifest_hash"] = std::string(64, 'a'); }, 1,
       "the config names manifest hash " + std::string(64, 'a') + " but the MANIFEST layer is"},
      {"config-json", none, [](Json& c) { c = "not an object"; }, 1,
       "carton config blob: not a JSON object"},
      {"config-alignment", none, [](Json& c) { c["zip"]["alignment"] = 3; }, 1,
       "carton config blob: zip.alignment 3 is not a power of two in 1..32768"},
      {"config-level", none,
       [](Json& c) {
         for (auto& e : c["zip"]["entries"]) {
           if (e["method"] == "zstd") e["level"] = 99;
         }
       },
       1, "is not a level of zstd"},
      {"config-name", none, [](Json& c) { c["zip"]["entries"][0]["name"] = "../evil"; }, 1,
       "carton config blob: zip.entries[0].name \"../evil\""},
      {"config-duplicate", none,
       [](Json& c) { c["zip"]["entries"].push_back(c["zip"]["entries"][0]); }, 1,
       "carton config blob: zip.entries[5]: duplicate name carton.toml"},
      {"config-missing-file", none,
       [](Json& c) {
         auto& e = c["zip"]["entries"];
         for (std::size_t i = 0; i < e.size(); ++i) {
           if (e[i]["name"] == "model/notes.txt") e.erase(i);
         }
       },
       1, "model/notes.txt: neither a zip entry nor linked in the config"},
      {"layer-digest",
       [&](Json& m) {
         // Another blob the registry has (it refuses a manifest naming none).
         layer(m, "model/notes.txt")["digest"] = layer(m, "model/weights.bin")["digest"];
         layer(m, "model/notes.txt")["size"] = layer(m, "model/weights.bin")["size"];
       },
       none, 1,
       "model/notes.txt: its layer has digest " + Sha256Hex(Noise(700'000, 1)) +
           " but MANIFEST says"},
      {"layer-extra",
       [&](Json& m) {
         Json extra = layer(m, "model/notes.txt");
         extra["annotations"]["org.opencontainers.image.title"] = "model/extra.bin";
         m["layers"].push_back(extra);
       },
       none, 1, "layer model/extra.bin is not listed in MANIFEST"},
      {"layer-title", [&](Json& m) { layer(m, "model/notes.txt")["annotations"] = Json::object(); },
       none, 1, "has no org.opencontainers.image.title"},
      {"layer-traversal",
       [&](Json& m) {
         layer(m, "model/notes.txt")["annotations"]["org.opencontainers.image.title"] =
             "../../etc/passwd";
       },
       none, 1, ": title: path \"../../etc/passwd\""},
      {"layer-type",
       [&](Json& m) { layer(m, "model/notes.txt")["mediaType"] = "application/octet-stream"; },
       none, 1, "media type \"application/octet-stream\" is not a carton layer type"},
      {"no-manifest-layer",
       [&](Json& m) {
         auto& l = m["layers"];
         for (std::size_t i = 0; i < l.size(); ++i) {
           if (l[i]["annotations"]["org.opencontainers.image.title"] == "MANIFEST") l.erase(i);
         }
         m.erase("annotations");
       },
       none, 1, "no MANIFEST layer"},
      {"annotation",
       [](Json& m) { m["annotations"]["dev.carton.manifest-hash"] = std::string(64, 'b'); }, none,
       1, "dev.carton.manifest-hash does not name the MANIFEST layer's digest"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    PushVariant(registry, "m", "good", c.name, c.manifest, c.config);
    const std::string out = tmp.file(c.name + ".carton");
    auto r = Run(Carton(tmp, "cache-" + c.name) + " pull " + registry.Ref("m:" + c.name) + " -o " +
                 Q(out));
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.rfind("carton pull: " + registry.Ref("m:" + c.name), 0) == 0);
    CHECK_FALSE(fs::exists(out));
    // The library's check without a pull: the same rule, the same words.
    const carton::Status checked = CheckInRegistry(registry, "m", c.name);
    CHECK_FALSE(checked.ok());
    CHECK(checked.message().find(c.message) != std::string::npos);
    CHECK(checked.message().rfind(registry.Ref("m:" + c.name), 0) == 0);
  }
  CHECK(CheckInRegistry(registry, "m", "good").ok());
  // A layer whose size is wrong: refused, and a good cached blob stays.
  PushVariant(
      registry, "m", "good", "size", [&](Json& m) { layer(m, "model/notes.txt")["size"] = 5; },
      none);
  auto sized = Run(Carton(tmp, "cache-size") + " pull " + registry.Ref("m:size") + " -o " +
                   Q(tmp.file("size.carton")));
  CHECK(sized.exit_code == 1);
  CHECK(sized.err.find("model/notes.txt: " + registry.host() + "/m: blob sha256:") !=
        std::string::npos);
  REQUIRE(Run(Carton(tmp, "cache-size2") + " pull " + registry.Ref("m:good") + " -o " +
              Q(tmp.file("good.carton")))
              .exit_code == 0);
  sized = Run(Carton(tmp, "cache-size2") + " pull " + registry.Ref("m:size") + " -o " +
              Q(tmp.file("size.carton")));
  CHECK(sized.exit_code == 1);
  CHECK(sized.err.find(" is said to have 5 bytes, but it has ") != std::string::npos);
  // Sizes and digests are the fetch's to check, not oci::CheckOciArtifact's.
  CHECK(CheckInRegistry(registry, "m", "size").ok());
  CHECK(Run(Carton(tmp, "cache-size2") + " pull " + registry.Ref("m:good") + " -o " +
            Q(tmp.file("good2.carton")) + " --json")
            .out.find("\"bytes_downloaded\":0") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("size.carton")));

  // The untouched artifact, pushed again as a variant, pulls.
  PushVariant(registry, "m", "good", "same", none, none);
  auto r = Run(Carton(tmp) + " pull " + registry.Ref("m:same") + " -o " + Q(tmp.file("s.carton")));
  CHECK(r.exit_code == 0);
  CHECK(ReadText(tmp.file("s.carton")) == ReadText(v1));
}

TEST_CASE("oci: CheckOciArtifact refuses documents no registry would store", "[oci][errors]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  REQUIRE(Run(Carton(tmp) + " push " + Q(v1) + " " + registry.Ref("m:v1")).exit_code == 0);
  const Documents good = FetchDocuments(registry, "m", "v1");
  REQUIRE(
      carton::oci::CheckOciArtifact(good.manifest, good.config, good.manifest_text, "m:v1").ok());
  auto check = [&](const std::function<void(Json&)>& change) {
    Json m = Json::parse(good.manifest);
    change(m);
    return carton::oci::CheckOciArtifact(m.dump(), good.config, good.manifest_text, "m:v1");
  };
  // A digest that is not one: a bad manifest (exit 1), not a bad argument.
  auto s = check([](Json& m) { m["layers"][0]["digest"] = "sha256:xyz"; });
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().rfind("m:v1: layers[0]: ", 0) == 0);
  s = check([](Json& m) { m["config"]["digest"] = "SHA256"; });
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().rfind("m:v1: config: ", 0) == 0);
  s = check([](Json& m) { m["layers"][0]["digest"] = "sha512:" + std::string(128, 'a'); });
  CHECK(s.code() == carton::StatusCode::kUnsupported);
  // An index of manifests is not a carton.
  s = check([](Json& m) { m["mediaType"] = "application/vnd.oci.image.index.v1+json"; });
  CHECK(s.code() == carton::StatusCode::kUnsupported);
  CHECK(s.message().find("m:v1: not a carton: it is an index of manifests") != std::string::npos);
  // Untrusted text reaches messages escaped: no terminal control sequence.
  s = check([](Json& m) { m["layers"][0]["mediaType"] = "x\x1b[2Jy"; });
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().find("media type \"x\\x1b[2Jy\" is not a carton layer type") !=
        std::string::npos);
  s = check([](Json& m) { m["config"]["mediaType"] = "\x1b]0;title\x07"; });
  CHECK(s.code() == carton::StatusCode::kUnsupported);
  CHECK(s.message().find("its config media type is \"\\x1b]0;title\\x07\"") != std::string::npos);
  auto check_config = [&](const std::function<void(Json&)>& change) {
    Json c = Json::parse(good.config);
    change(c);
    return carton::oci::CheckOciArtifact(good.manifest, c.dump(), good.manifest_text, "m:v1");
  };
  s = check_config([](Json& c) {
    Json& e = c["zip"]["entries"][0];
    e["kind"] = "symlink";
    e["target"] = "model/\x1b[2J";
  });
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().rfind("m:v1: carton config blob: zip.entries[0].target: ", 0) == 0);
  s = check_config([](Json& c) { c["linked"] = Json::array({"../\x1b[2J"}); });
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().rfind("m:v1: carton config blob: linked: ", 0) == 0);
  for (const std::string& message :
       {check([](Json& m) { m["layers"][0]["mediaType"] = "\x1b"; }).message(),
        check_config([](Json& c) { c["linked"] = Json::array({"a\x1b"}); }).message()}) {
    INFO(message);
    CHECK(message.find('\x1b') == std::string::npos);
  }
  // The config and MANIFEST as documents of their own.
  s = carton::oci::CheckOciArtifact(good.manifest, "{", good.manifest_text, "m:v1");
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().rfind("m:v1: carton config blob: not valid JSON", 0) == 0);
  s = carton::oci::CheckOciArtifact(good.manifest, good.config, "model/x=zz\n", "m:v1");
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().rfind("m:v1: ", 0) == 0);
  // A MANIFEST that lists one file fewer than the layers.
  const std::string fewer = good.manifest_text.substr(good.manifest_text.find('\n') + 1);
  s = carton::oci::CheckOciArtifact(good.manifest, good.config, fewer, "m:v1");
  CHECK(s.code() == carton::StatusCode::kCorrupt);
  CHECK(s.message().find("is not listed in MANIFEST") != std::string::npos);
}

}  // namespace

// Every command that reads a carton takes it wherever it is: a file, an
// http(s) URL (nginx) or an oci:// reference (the registry), and says so
// in the same words; a directory is refused by name.
TEST_CASE("oci cli: ls, cat, diff, unpack, verify, hash and info read files, URLs and references",
          "[oci][cli][location]") {
  NginxServer nginx;
  RegistryServer registry;
  TempDir tmp;
  const std::string v1 = PackVersion(tmp, "v1", 1);
  const std::string v2 = PackVersion(tmp, "v2", 2);
  fs::copy_file(v1, nginx.www() + "/v1.carton");
  REQUIRE(Run(Carton(tmp) + " push -q " + Q(v1) + " " + registry.Ref("team/m:v1")).exit_code == 0);
  REQUIRE(Run(Carton(tmp) + " push -q " + Q(v2) + " " + registry.Ref("team/m:v2")).exit_code == 0);
  const std::string url = nginx.Url("/v1.carton");
  const std::string ref = registry.Ref("team/m:v1");
  const std::string ref2 = registry.Ref("team/m:v2");

  const auto file_hash = Run(Carton(tmp) + " hash " + Q(v1));
  REQUIRE(file_hash.exit_code == 0);
  const auto file_ls = Run(Carton(tmp) + " ls " + Q(v1));
  REQUIRE(file_ls.exit_code == 0);
  const auto file_cat = Run(Carton(tmp) + " cat " + Q(v1) + " model/notes.txt");
  REQUIRE(file_cat.exit_code == 0);
  for (const std::string& where : {url, ref}) {
    INFO(where);
    // A fresh cache each time: nothing is read from an earlier command.
    const std::string cache = "cache-" + std::to_string(std::hash<std::string>{}(where));
    auto h = Run(Carton(tmp, cache) + " hash " + Q(where));
    INFO(h.err);
    CHECK(h.exit_code == 0);
    CHECK(h.out == file_hash.out);
    auto ls = Run(Carton(tmp, cache) + " ls " + Q(where));
    INFO(ls.err);
    CHECK(ls.exit_code == 0);
    CHECK(ls.out == file_ls.out);
    auto cat = Run(Carton(tmp, cache) + " cat " + Q(where) + " model/notes.txt");
    CHECK(cat.exit_code == 0);
    CHECK(cat.out == file_cat.out);
    auto v = Run(Carton(tmp, cache) + " verify " + Q(where));
    INFO(v.err);
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.out, Catch::StartsWith(where + ": ok"));
    auto info = Run(Carton(tmp, cache) + " info --json " + Q(where));
    CHECK(info.exit_code == 0);
    CHECK(Parse(info.out)["manifest_hash"] == FirstLine(file_hash.out));
    const std::string dir = tmp.file("unpacked-" + cache);
    auto u = Run(Carton(tmp, cache) + " unpack -q " + Q(where) + " " + Q(dir));
    INFO(u.err);
    CHECK(u.exit_code == 0);
    CHECK(ReadText(dir + "/model/notes.txt") == file_cat.out);
    // Nothing pulled or downloaded stays behind in the cache.
    if (fs::exists(tmp.file(cache + "/downloads"))) {
      CHECK(carton::testing::ListDir(tmp.file(cache + "/downloads")).empty());
    }
  }
  auto d = Run(Carton(tmp) + " diff " + Q(ref) + " " + Q(ref2));
  INFO(d.err);
  CHECK(d.exit_code == 0);
  CHECK_THAT(d.out, Catch::Contains("~ model/notes.txt"));
  auto same = Run(Carton(tmp) + " diff " + Q(url) + " " + Q(ref));
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.out, Catch::StartsWith("identical"));

  // A directory is refused by name, and so is a scheme carton does not read.
  auto dir = Run(Carton(tmp) + " ls " + Q(tmp.path().string()));
  CHECK(dir.exit_code == 2);
  CHECK_THAT(dir.err, Catch::Contains("ls takes a .carton file, an http(s) URL or an oci:// "
                                      "reference; " +
                                      tmp.path().string() + " is a directory"));
  auto ftp = Run(Carton(tmp) + " verify ftp://example.com/m.carton");
  CHECK(ftp.exit_code == 2);
  CHECK_THAT(ftp.err, Catch::Contains("\"ftp\" is not a scheme carton reads"));
  auto bad_ref = Run(Carton(tmp) + " cat oci://127.0.0.1/Bad carton.toml");
  CHECK(bad_ref.exit_code == 2);
  CHECK_THAT(bad_ref.err, Catch::Contains("repository component \"Bad\""));
}
