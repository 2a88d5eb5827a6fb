// carton_fuzz_seeds DIR: writes a seed corpus for every fuzz target, one
// folder per target (DIR/<target>/), holding valid inputs of each kind made
// with carton's own writers, so the fuzzers start from real files.
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "carton/carton/pack.h"
#include "carton/common/atomic_file.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"
#include "carton/safetensors/writer.h"
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
    "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\nfile = \"tensor_0.bin\"\ninner = "
    "[]\n"
    "[[tensor]]\nname = \"s\"\ndtype = \"string\"\nshape = [2]\nfile = \"tensor_1.toml\"\n"
    "[[tensor]]\nname = \"n\"\ndtype = \"nested\"\ninner = [\"x\", \"s\"]\n";

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: carton_fuzz_seeds DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  SafetensorsSeeds(root / "safetensors");
  Write(root / "config", "seed-1", kConfig);
  Write(root / "config", "seed-2",
        "spec_version = 1\n[runner]\nrunner_name = \"r\"\n"
        "required_framework_version = \"=1.0.0\"\nrunner_compat_version = 0\n");
  Write(root / "tensor_index", "seed-1", kIndex);
  Write(root / "tensor_index", "seed-2", "tensor = []\n");
  Write(root / "tensor_index", "seed-3",
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

  ZipSeeds(root / "zip");
  ZipSeeds(root / "zip_source");
  const fs::path scratch = root / ".scratch";
  fs::remove_all(scratch);
  CartonSeeds(root / "carton", scratch);
  fs::remove_all(scratch);
  SliceSeeds(root / "slice");
  return 0;
}
