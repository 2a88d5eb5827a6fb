// carton_fuzz_seeds DIR: writes a seed corpus for every fuzz target, one
// folder per target (DIR/<target>/), holding valid inputs of each kind made
// with carton's own writers, so the fuzzers start from real files.
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "carton/carton/pack.h"
#include "carton/common/atomic_file.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"
#include "carton/oci/artifact.h"
#include "carton/safetensors/writer.h"
#include "carton/sign/signer.h"
#include "carton/zip/writer.h"

namespace fs = std::filesystem;
using namespace carton;

namespace {

const char kConfig[] =
    "spec_version = 1\n"
    "model_name = \"tiny\"\n"
    "short_description = \"a tiny model\"\n"
    "model_description = \"\"\"\nTwo lines\nof text.\"\"\"\n"
    "license = \"MIT\"\nrepository = \"https://example.com/r\"\n"
    "homepage = \"https://example.com\"\n"
    "required_platforms = [\"x86_64-unknown-linux-gnu\", \"aarch64-apple-darwin\"]\n"
    "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [\"batch\", 2, \"*\"]\n"
    "description = \"input\"\ninternal_name = \"in:0\"\n"
    "[[input]]\nname = \"s\"\ndtype = \"string\"\nshape = \"*\"\n"
    "[[output]]\nname = \"y\"\ndtype = \"float32\"\nshape = []\n"
    "[[self_test]]\nname = \"t\"\ndescription = \"d\"\n"
    "inputs = { x = \"@tensor_data/x\" }\nexpected_out = { y = \"@tensor_data/y\" }\n"
    "[[example]]\nname = \"e\"\ninputs = { x = \"@misc/a.png\" }\n"
    "sample_out = { y = \"@tensor_data/y\" }\n"
    "[runner]\nrunner_name = \"torchscript\"\n"
    "required_framework_version = \">=1.12, <2\"\nrunner_compat_version = 1\n"
    "[runner.opts]\nthreads = 4\nscale = 0.5\nmode = \"fast\"\njit = true\n";

const char kIndex[] =
    "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [1, 2, 1]\nfile = "
    "\"tensor_0.bin\"\ninner = "
    "[]\n"
    "[[tensor]]\nname = \"s\"\ndtype = \"string\"\nshape = [2]\nfile = \"tensor_1.toml\"\n"
    "[[tensor]]\nname = \"n\"\ndtype = \"nested\"\ninner = [\"x\", \"s\"]\n"
    "[[tensor]]\nname = \"y\"\ndtype = \"float32\"\nshape = []\nfile = \"tensor_2.bin\"\n";

const char kStrings[] = "data = [\"a\", \"b\"]\n";

const char kHexA[] = "e550f6224a5133f597d823ab4590f369e0b20e3c6446488225fc6f7a372b9fe2";

void Write(const fs::path& dir, const std::string& name, ByteView bytes) {
  fs::create_directories(dir);
  Status s = WriteFileAtomically((dir / name).string(), bytes);
  if (!s.ok()) {
    std::fprintf(stderr, "carton_fuzz_seeds: %s\n", s.ToString().c_str());
    std::exit(2);
  }
}
void Write(const fs::path& dir, const std::string& name, std::string_view text) {
  Write(dir, name, AsBytes(text));
}

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "carton_fuzz_seeds: %s\n", s.ToString().c_str());
    std::exit(2);
  }
}

void SafetensorsSeeds(const fs::path& dir) {
  std::vector<std::byte> f32(24, std::byte{1}), u8(3, std::byte{2}), f4(1, std::byte{3});
  std::vector<safetensors::TensorSource> tensors = {
      {"weight", safetensors::Dtype::kF32, {2, 3}, f32, {}},
      {"bias", safetensors::Dtype::kU8, {3}, u8, {}},
      {"packed", safetensors::Dtype::kF4, {2}, f4, {}},
      {"empty", safetensors::Dtype::kBF16, {0, 4}, {}, {}},
  };
  auto one = safetensors::Serialize(tensors, {{"format", "pt"}});
  Check(one.status());
  Write(dir, "seed-1", *one);
  auto scalar = safetensors::Serialize(std::span(tensors).subspan(1, 1), {});
  Check(scalar.status());
  Write(dir, "seed-2", *scalar);
  Write(dir, "seed-3", std::string_view("\x02\0\0\0\0\0\0\0{}", 10));
}

void SliceSeeds(const fs::path& dir) {
  // rank, dimensions, dtype, then the slice text.
  Write(dir, "seed-1",
        std::string_view("\x03\x04\x05\x06\x11"
                         "1:3, :, ::-1"));
  Write(dir, "seed-2",
        std::string_view("\x02\x06\x06\x01"
                         "-2:, 0"));
  Write(dir, "seed-3",
        std::string_view("\x01\x05\x04"
                         " ::2 "));
  Write(dir, "seed-4", std::string_view("\x00\x11", 2));
}

void ZipSeeds(const fs::path& dir) {
  fs::create_directories(dir);
  const std::string text(5000, 'a');
  auto zip = ZipWriter::Create((dir / "seed-1").string());
  Check(zip.status());
  Check(zip->AddBytes("stored.bin", AsBytes("0123456789"), Compression::kStored).status());
  Check(zip->AddBytes("deflate.txt", AsBytes(text), Compression::kDeflate).status());
  Check(zip->AddBytes("zstd.txt", AsBytes(text), Compression::kZstd).status());
  Check(zip->AddDirectory("dir/"));
  Check(zip->AddBytes("dir/empty", {}, Compression::kStored).status());
  Check(zip->Finish());
  auto empty = ZipWriter::Create((dir / "seed-2").string());
  Check(empty.status());
  Check(empty->Finish());
}

void CartonSeeds(const fs::path& dir, const fs::path& scratch) {
  fs::create_directories(dir);
  const std::map<std::string, std::string> files = {
      {"carton.toml", kConfig},
      {"model/model.bin", std::string(300, 'w')},
      {"tensor_data/index.toml", kIndex},
      {"tensor_data/tensor_0.bin", std::string(8, '\1')},
      {"tensor_data/tensor_1.toml", kStrings},
      {"tensor_data/tensor_2.bin", std::string(4, '\0')},
      {"misc/a.png", "png"},
  };
  for (const auto& [path, content] : files) {
    fs::create_directories((scratch / path).parent_path());
    Check(WriteFileAtomically((scratch / path).string(), AsBytes(content)));
  }
  PackOptions options;
  options.compression = PackCompression::kStored;
  Check(Pack(scratch.string(), (dir / "seed-1").string(), options).status());
  options.compression = PackCompression::kZstd;
  Check(Pack(scratch.string(), (dir / "seed-2").string(), options).status());
  options.compression = PackCompression::kDeflate;
  Check(Pack(scratch.string(), (dir / "seed-3").string(), options).status());
}

// oci_artifact: the OCI manifest, the config blob and MANIFEST of a small
// carton as push writes them (oci/FORMAT.md "Cartons as OCI artifacts"), NUL
// between them; one with a LINKS layer and a linked file, one with a
// symlink entry and a zstd entry.
void OciSeeds(const fs::path& dir) {
  struct File {
    std::string path, bytes;
  };
  auto seed = [&](const std::string& name, const std::vector<File>& files,
                  const std::string& entries, const std::string& linked, const std::string& links) {
    std::string manifest_text;
    std::string layers;
    auto layer = [&](std::string_view type, const std::string& bytes, const std::string& title) {
      if (!layers.empty()) layers += ",";
      layers += R"({"annotations":{"org.opencontainers.image.title":")" + title +
                R"("},"digest":"sha256:)" + manifest::ToHex(manifest::Sha256Of(AsBytes(bytes))) +
                R"(","mediaType":")" + std::string(type) + R"(","size":)" +
                std::to_string(bytes.size()) + "}";
    };
    for (const File& f : files) {
      manifest_text += f.path + "=" + manifest::ToHex(manifest::Sha256Of(AsBytes(f.bytes))) + "\n";
      layer(f.path == "carton.toml" ? "application/vnd.carton.config.v1+toml"
                                    : "application/vnd.carton.file.v1",
            f.bytes, f.path);
    }
    layer("application/vnd.carton.manifest.v1", manifest_text, "MANIFEST");
    if (!links.empty()) layer("application/vnd.carton.links.v1+toml", links, "LINKS");
    const std::string hash = manifest::ToHex(manifest::Sha256Of(AsBytes(manifest_text)));
    const std::string config = R"({"linked":[)" + linked + R"(],"manifest_hash":")" + hash +
                               R"(","version":1,"zip":{"alignment":64,"entries":[)" + entries +
                               R"(],"size":4096,"zstd_workers":"multithreaded"}})";
    const std::string image =
        R"({"annotations":{"dev.carton.manifest-hash":")" + hash +
        R"("},"artifactType":"application/vnd.carton.model.v1+json","config":{"digest":"sha256:)" +
        manifest::ToHex(manifest::Sha256Of(AsBytes(config))) +
        R"(","mediaType":"application/vnd.carton.model.v1+json","size":)" +
        std::to_string(config.size()) + R"(},"layers":[)" + layers +
        R"(],"mediaType":"application/vnd.oci.image.manifest.v1+json","schemaVersion":2})";
    // Written by hand, so checked here: a seed the format no longer accepts
    // would only exercise the first refusal, and no fuzzer reports that.
    Check(oci::CheckOciArtifact(image, config, manifest_text, "oci_artifact/" + name));
    Write(dir, name, image + std::string(1, '\0') + config + std::string(1, '\0') + manifest_text);
  };
  auto entry = [](const std::string& name, const std::string& method, int level, std::size_t size) {
    return R"({"compressed_size":)" + std::to_string(size) + R"(,"kind":"file","level":)" +
           std::to_string(level) + R"(,"method":")" + method + R"(","name":")" + name + R"("})";
  };
  const std::string toml = "spec_version = 1\n";
  seed("seed-linked", {{"carton.toml", toml}, {"model/big.bin", "big"}, {"model/w.bin", "weights"}},
       entry("carton.toml", "stored", 0, toml.size()) +
           R"(,{"kind":"directory","name":"model/"},)" + entry("model/w.bin", "stored", 0, 7) +
           "," + entry("LINKS", "stored", 0, 20) + "," + entry("MANIFEST", "stored", 0, 224),
       R"("model/big.bin")", "version = 1\n[urls]\n");
  seed("seed-symlink", {{"carton.toml", toml}, {"model/a.bin", "a"}, {"model/b.bin", "a"}},
       entry("carton.toml", "zstd", 3, 20) + "," + entry("model/a.bin", "stored", 0, 1) +
           R"(,{"compressed_size":1,"kind":"symlink","level":0,"method":"stored",)"
           R"("name":"model/b.bin","target":"model/a.bin"},)" +
           entry("MANIFEST", "deflate", 6, 150),
       "", "");
}

// oci_artifact: a ModelPack as `push --format modelpack` writes it
// (oci/FORMAT.md "ModelPack artifacts"): the OCI manifest, carton's config
// layer and MANIFEST, NUL between them.
void ModelPackSeed(const fs::path& dir) {
  const std::string toml = "spec_version = 1\n", weights = "weights";
  const std::string raw = "application/vnd.cncf.model.";
  auto hex = [](const std::string& bytes) {
    return manifest::ToHex(manifest::Sha256Of(AsBytes(bytes)));
  };
  std::string layers;
  auto layer = [&](const std::string& kind, const std::string& bytes, const std::string& path) {
    if (!layers.empty()) layers += ",";
    layers += R"({"annotations":{"org.cncf.model.filepath":")" + path +
              R"(","org.opencontainers.image.title":")" + path + R"("},"digest":"sha256:)" +
              hex(bytes) + R"(","mediaType":")" + raw + kind + R"(.v1.raw","size":)" +
              std::to_string(bytes.size()) + "}";
  };
  const std::string manifest_text =
      "carton.toml=" + hex(toml) + "\nmodel/w.bin=" + hex(weights) + "\n";
  const std::string hash = hex(manifest_text);
  const std::string config =
      R"({"linked":[],"manifest_hash":")" + hash +
      R"(","version":1,"zip":{"alignment":64,"entries":[)"
      R"({"compressed_size":16,"kind":"file","level":0,"method":"stored","name":"carton.toml"},)"
      R"({"compressed_size":7,"kind":"file","level":0,"method":"stored","name":"model/w.bin"},)"
      R"({"compressed_size":150,"kind":"file","level":0,"method":"stored","name":"MANIFEST"}],)"
      R"("size":4096,"zstd_workers":"multithreaded"}})";
  layer("weight.config", toml, "carton.toml");
  layer("weight", weights, "model/w.bin");
  layer("weight.config", manifest_text, "MANIFEST");
  layer("weight.config", config, ".carton/oci-config.json");
  const std::string spec_config = "{}";
  const std::string image =
      R"({"annotations":{"dev.carton.config":"sha256:)" + hex(config) +
      R"(","dev.carton.manifest-hash":")" + hash +
      R"("},"artifactType":"application/vnd.cncf.model.manifest.v1+json","config":{"digest":)"
      R"("sha256:)" +
      hex(spec_config) +
      R"(","mediaType":"application/vnd.cncf.model.config.v1+json","size":2},)"
      R"("layers":[)" +
      layers + R"(],"mediaType":"application/vnd.oci.image.manifest.v1+json","schemaVersion":2})";
  Check(oci::CheckOciArtifact(image, config, manifest_text, "oci_artifact/seed-modelpack"));
  Write(dir, "seed-modelpack",
        image + std::string(1, '\0') + config + std::string(1, '\0') + manifest_text);
}

}  // namespace

// A ustar header block for `name` (a regular file of `size` bytes, or a
// directory), its checksum filled in.
std::string TarHeader(const std::string& name, std::size_t size, char type) {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  auto octal = [&](std::size_t at, std::size_t width, std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1),
                  static_cast<unsigned long long>(v));
    h.replace(at, width - 1, buf);
  };
  octal(100, 8, type == '5' ? 0755 : 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);
  h[156] = type;
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 7, std::string(buf, 6) + '\0');
  return h;
}

// A tar of `files` (name -> bytes; a name ending in "/" is a directory).
std::string Tar(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string tar;
  for (const auto& [name, bytes] : files) {
    const bool dir = name.ends_with("/");
    tar += TarHeader(name, dir ? 0 : bytes.size(), dir ? '5' : '0');
    if (dir) continue;
    tar += bytes;
    tar.append((512 - bytes.size() % 512) % 512, '\0');
  }
  return tar + std::string(1024, '\0');
}

std::string Gzip(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::exit(2);
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::exit(2);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  if (ZSTD_isError(n)) std::exit(2);
  out.resize(n);
  return out;
}

// modelpack_layer: the first byte picks tar (0), tar+gzip (1) or tar+zstd (2).
void ModelPackLayerSeeds(const fs::path& dir) {
  const std::string tar = Tar({{"config.json", "{\"model_type\": \"mlp\"}\n"},
                               {"tokenizer/", ""},
                               {"tokenizer/vocab.txt", "a\nb\nc\n"}});
  // Each seed is read as its first byte says: the three tars list their two
  // files, and the one with "../x" is refused.
  const std::string type = "application/vnd.cncf.model.weight.v1.tar";
  auto seed = [&](const std::string& name, char pick, const std::string& suffix,
                  const std::string& layer, bool valid) {
    auto files =
        oci::ReadModelPackTarLayer(type + suffix, AsBytes(layer), "modelpack_layer/" + name);
    if (valid) Check(files.status());
    if (valid && files->size() != 2) Check(Internal("modelpack_layer/" + name + ": not 2 files"));
    if (!valid && files.ok()) Check(Internal("modelpack_layer/" + name + ": not refused"));
    Write(dir, name, std::string(1, pick) + layer);
  };
  seed("seed-tar", '\0', "", tar, true);
  seed("seed-gzip", '\1', "+gzip", Gzip(tar), true);
  seed("seed-zstd", '\2', "+zstd", Zstd(tar), true);
  seed("seed-dotdot", '\0', "", Tar({{"../x", "x"}}), false);
}

// bundle: one signed here (the key method) and the OMS vectors that parse
// (key and certificate method); each must still parse.
void BundleSeeds(const fs::path& dir) {
  auto key = sign::PrivateKey::Generate(sign::Curve::kP256);
  Check(key.status());
  const auto statement = sign::MakeStatement("tiny",
                                             {{"carton.toml", manifest::Sha256Of(AsBytes(kConfig))},
                                              {"model/a b.bin", manifest::Sha256Of(AsBytes("x"))}},
                                             {".git", "MANIFEST", "LINKS", "model.sig"});
  auto bundle = sign::SignStatement(statement, sign::SigningIdentity{*key, {}});
  Check(bundle.status());
  Write(dir, "seed-key", sign::BundleJson(*bundle));
  for (const char* name : {"key.bundle.json", "certificate.bundle.json"}) {
    auto bytes = ReadFile(std::string(CARTON_OMS_VALID_VECTORS) + "/" + name);
    Check(bytes.status());
    Check(sign::ParseBundle(*bytes).status().WithContext(name));
    Write(dir, std::string("seed-") + name, *bytes);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: carton_fuzz_seeds DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  SafetensorsSeeds(root / "safetensors");
  // The TOML seeds are written by hand: each must still parse, or it would
  // only exercise the first refusal.
  auto config_seed = [&](const std::string& name, std::string_view text) {
    Check(ParseConfig(text).status().WithContext("config/" + name));
    Write(root / "config", name, text);
  };
  config_seed("seed-1", kConfig);
  config_seed("seed-2",
              "spec_version = 1\n[runner]\nrunner_name = \"r\"\n"
              "required_framework_version = \"=1.0.0\"\nrunner_compat_version = 0\n");
  auto index_seed = [&](const std::string& name, std::string_view text) {
    Check(ParseIndex(text).status().WithContext("tensor_index/" + name));
    Write(root / "tensor_index", name, text);
  };
  index_seed("seed-1", kIndex);
  index_seed("seed-2", "tensor = []\n");
  index_seed("seed-3",
             "[[tensor]]\nname = \"s\"\ndtype = \"string\"\nshape = [2]\nfile = \"a.toml\"\n"
             "data = [\"a\", \"b\"]\n");

  std::vector<manifest::ManifestEntry> entries = {
      {"carton.toml", manifest::Sha256Of(AsBytes(kConfig))},
      {"model/a b=c.bin", manifest::Sha256Of(AsBytes("x"))},
      {"tensor_data/index.toml", manifest::Sha256Of(AsBytes(kIndex))},
  };
  auto m = manifest::Manifest::FromEntries(entries);
  Check(m.status());
  Write(root / "manifest", "seed-1", m->Serialize());

  links::Links l;
  l.urls[*manifest::ParseHex(kHexA)] = {"https://example.com/w", "http://127.0.0.1:8080/x?y=1"};
  l.urls[manifest::Sha256Of(AsBytes("x"))] = {"file:///tmp/x"};
  Write(root / "links", "seed-1", links::WriteLinks(l));
  Write(root / "links", "seed-2", "version = 1\n[urls]\n");

  // registry_text: the first byte picks the parser (fuzz_targets.h).
  auto registry_seed = [&](const std::string& name, char parser, const std::string& text) {
    Write(root / "registry_text", name, std::string(1, parser) + text);
  };
  registry_seed("seed-ref", 0,
                "oci://registry.example.com:5000/team/m:v1@sha256:" + std::string(kHexA));
  registry_seed("seed-docker-config", 1,
                R"({"auths": {"127.0.0.1:5000": {"auth": "YWxpY2U6cHc="}}})");
  registry_seed("seed-headers", 2, "hub.example.com Authorization: Bearer t\n");
  registry_seed("seed-pattern", 3, "*.cdn.example.com:443");
  registry_seed("seed-target", 4, "http://[fe80::1]:8080/latest");
  registry_seed("seed-challenge", 5,
                "Bearer realm=\"https://auth.example.com/token\",service=\"registry\","
                "scope=\"repository:team/m:pull,push\"\nBasic realm=\"r\\\"q\"");
  registry_seed("seed-token", 6, R"({"token": "abc.def", "expires_in": 300})");
  registry_seed("seed-access-token", 6, R"({"access_token": "xyz"})");
  registry_seed("seed-error", 7,
                R"({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]})");

  ZipSeeds(root / "zip");
  ZipSeeds(root / "zip_source");
  const fs::path scratch = root / ".scratch";
  fs::remove_all(scratch);
  CartonSeeds(root / "carton", scratch);
  fs::remove_all(scratch);
  SliceSeeds(root / "slice");
  OciSeeds(root / "oci_artifact");
  ModelPackSeed(root / "oci_artifact");
  ModelPackLayerSeeds(root / "modelpack_layer");
  BundleSeeds(root / "bundle");
  return 0;
}
