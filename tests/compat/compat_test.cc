// Interoperability with the original Rust implementation, through
// carton-rust-peer (tests/compat/rust_peer; what it models is in
// docs/COMPAT.md): cartons `carton` writes must pass `peer read`, cartons
// `peer write` produces must pass verify, info, unpack and load here, and
// the peer must refuse what the original could not read.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/reader.h"
#include "carton/zip/writer.h"
#include "testing.h"

namespace {

namespace fs = std::filesystem;
using carton::testing::Run;
using carton::testing::TempDir;
using Files = std::map<std::string, std::string>;

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Peer() {
  const char* p = std::getenv("CARTON_RUST_PEER");
  return Q(p ? p : CARTON_RUST_PEER);
}

std::string Carton() { return Q(carton::testing::CartonBin()); }

void WriteTree(const std::string& dir, const Files& files) {
  for (const auto& [name, content] : files) {
    fs::path p = fs::path(dir) / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
}

std::string ReadFile(const fs::path& p) { return carton::testing::ReadText(p.string()); }

// Bytes that look like weights: a pseudo-random half and a zero half, so
// every compression method has something to do.
std::string Weights(std::size_t n) {
  std::string s(n, '\0');
  std::uint32_t x = 12345;
  for (std::size_t i = 0; i < n / 2; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

std::string LittleEndian(std::initializer_list<std::uint64_t> values, int size) {
  std::string out;
  for (auto v : values) {
    for (int i = 0; i < size; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  return out;
}

const char kConfigTemplate[] = R"(spec_version = 1
model_name = "compat"
short_description = "a model for the compat tests"
model_description = """
Two lines
of description."""
license = "Apache-2.0"
required_platforms = ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin"]

[[input]]
name = "x"
dtype = "float32"
shape = ["batch", 3]
description = "the input"

[[input]]
name = "s"
dtype = "string"
shape = "*"

@NESTED_INPUT@[[output]]
name = "y"
dtype = "int64"
shape = []

[[output]]
name = "e"
dtype = "uint8"
shape = [0]

[[self_test]]
name = "first"
inputs = { x = "@tensor_data/x", s = "@tensor_data/s"@NESTED_REF@ }
expected_out = { y = "@tensor_data/y", e = "@tensor_data/e" }

[[example]]
name = "picture"
inputs = { x = "@tensor_data/x", s = "@misc/sub/picture.png" }
sample_out = { y = "@tensor_data/y" }

[runner]
runner_name = "noop"
required_framework_version = ">=1.0.0, <2"
runner_compat_version = 1

[runner.opts]
threads = 4
scale = 0.5
mode = "fast"
verbose = true
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

// carton.toml; with `nested`, input n is a nested tensor.
std::string Config(bool nested) {
  std::string s = kConfigTemplate;
  s = Replace(s, "@NESTED_INPUT@",
              nested ? "[[input]]\nname = \"n\"\ndtype = \"float32\"\nshape = [\"*\"]\n\n" : "");
  return Replace(s, "@NESTED_REF@", nested ? ", n = \"@tensor_data/n\"" : "");
}

// Numeric, string, scalar and empty tensors, and with `nested` a nested one;
// index.toml without `inner` on plain entries (carton pack adds it).
Files TensorFiles(bool nested) {
  Files files = {
      {"tensor_data/index.toml", R"([[tensor]]
name = "x"
dtype = "float32"
shape = [2, 3]
file = "x.bin"

[[tensor]]
name = "y"
dtype = "int64"
shape = []
file = "y.bin"

[[tensor]]
name = "e"
dtype = "uint8"
shape = [0]
file = "e.bin"

[[tensor]]
name = "s"
dtype = "string"
shape = [2]
file = "s.toml"
)"},
      {"tensor_data/x.bin",
       LittleEndian({0x3f800000, 0x40000000, 0x40400000, 0x40800000, 0x40a00000, 0x40c00000}, 4)},
      {"tensor_data/y.bin", LittleEndian({7}, 8)},
      {"tensor_data/e.bin", ""},
      {"tensor_data/s.toml", "data = [\"a\", \"b 'quoted'\"]\n"},
  };
  if (!nested) return files;
  files["tensor_data/index.toml"] += R"(
[[tensor]]
name = "n"
dtype = "nested"
inner = ["n0", "n1"]

[[tensor]]
name = "n0"
dtype = "float32"
shape = [2]
file = "n0.bin"

[[tensor]]
name = "n1"
dtype = "float32"
shape = [1, 3]
file = "n1.bin"
)";
  files["tensor_data/n0.bin"] = LittleEndian({0x3f800000, 0xbf800000}, 4);
  files["tensor_data/n1.bin"] = LittleEndian({0, 0x3f000000, 0x3e800000}, 4);
  return files;
}

// The full model directory: carton.toml, model/, tensor_data/, misc/.
std::string WriteModel(const TempDir& tmp, bool nested, const std::string& name = "model") {
  Files files = TensorFiles(nested);
  files["carton.toml"] = Config(nested);
  files["model/weights.bin"] = Weights(200000);
  files["model/sub/config.json"] = "{\"layers\": 2}\n";
  files["misc/note.txt"] = "hello\n";
  files["misc/sub/picture.png"] = std::string("\x89PNG\r\n\x1a\n", 8) + Weights(300);
  std::string dir = tmp.file(name);
  WriteTree(dir, files);
  return dir;
}

std::string ManifestHash(const std::string& peer_out) {
  const std::string key = "manifest sha256: ";
  auto at = peer_out.find(key);
  return at == std::string::npos ? "" : peer_out.substr(at + key.size(), 64);
}

std::string PackWith(const TempDir& tmp, const std::string& dir, const std::string& flags,
                     const std::string& name) {
  std::string out = tmp.file(name);
  auto pack = Run(Carton() + " pack " + flags + " " + Q(dir) + " -o " + Q(out));
  INFO(pack.err);
  REQUIRE(pack.exit_code == 0);
  return out;
}

// Every regular file under `root` (and symlink to one, under its own
// name), relative path -> bytes.
Files Snapshot(const fs::path& root) {
  Files out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (fs::is_regular_file(e.path()))
      out[e.path().lexically_relative(root).string()] = ReadFile(e.path());
  }
  return out;
}

}  // namespace

TEST_CASE(
    "compat: the Rust peer reads what carton pack writes, with every "
    "compression",
    "[compat]") {
  TempDir tmp;
  std::string dir = WriteModel(tmp, /*nested=*/true);
  const std::vector<std::string> flag_sets = {"--compression stored",
                                              "--compression deflate",
                                              "--compression zstd",
                                              "--compression auto",
                                              "--compression stored --align 4096",
                                              "--compression zstd --level 19"};
  for (std::size_t i = 0; i < flag_sets.size(); ++i) {
    INFO("carton pack " << flag_sets[i]);
    std::string out = PackWith(tmp, dir, flag_sets[i], "m" + std::to_string(i) + ".carton");
    auto read = Run(Peer() + " read " + Q(out));
    INFO(read.err);
    REQUIRE(read.exit_code == 0);
    // x, y, e, s and n; n0 and n1 belong to n.
    CHECK(read.out.find("ok: ") == 0);
    CHECK(read.out.find(", 5 tensors, 8 references, 2 misc files") != std::string::npos);
    auto hash = Run(Carton() + " hash " + Q(out));
    REQUIRE(hash.exit_code == 0);
    CHECK(ManifestHash(read.out) + "\n" == hash.out);
  }
}

TEST_CASE("compat: the Rust peer reads a carton without tensors", "[compat]") {
  // The original's loader reads tensor_data/index.toml unconditionally;
  // carton pack writes `tensor = []` for a model without one.
  TempDir tmp;
  const char config[] =
      "spec_version = 1\n[runner]\nrunner_name = \"noop\"\n"
      "required_framework_version = \"=1.0.0\"\nrunner_compat_version = 1\n";
  WriteTree(tmp.file("bare"), {{"carton.toml", config}, {"model/m.bin", Weights(5000)}});
  WriteTree(tmp.file("empty"), {{"carton.toml", config},
                                {"model/m.bin", Weights(5000)},
                                {"tensor_data/index.toml", "tensor = []\n"}});
  for (const char* name : {"bare", "empty"}) {
    INFO(name);
    std::string out =
        PackWith(tmp, tmp.file(name), "--compression zstd", std::string(name) + ".carton");
    auto read = Run(Peer() + " read " + Q(out));
    INFO(read.err);
    CHECK(read.exit_code == 0);
    CHECK(read.out.find(", 0 tensors, 0 references, 0 misc files") != std::string::npos);
  }
}

TEST_CASE("compat: the Rust peer reads a LINKS-shrunk carton", "[compat][links]") {
  TempDir tmp;
  std::string in = PackWith(tmp, WriteModel(tmp, true), "--compression zstd", "whole.carton");
  std::string shrunk = tmp.file("small.carton"), blobs = tmp.file("blobs");
  auto shrink =
      Run(Carton() + " shrink " + Q(in) + " -o " + Q(shrunk) +
          " --url-prefix https://models.example.com/blobs --blobs " + Q(blobs) + " --min-size 100");
  INFO(shrink.err);
  REQUIRE(shrink.exit_code == 0);

  // Without the blobs the linked files are only counted (the original
  // fetches them over HTTP); with them they are hashed and read too.
  auto counted = Run(Peer() + " read " + Q(shrunk));
  INFO(counted.err);
  REQUIRE(counted.exit_code == 0);
  CHECK(counted.out.find(" linked, 0 of them read from blobs") != std::string::npos);
  CHECK(counted.out.find("(0 linked") == std::string::npos);
  auto fetched = Run(Peer() + " read " + Q(shrunk) + " --blobs " + Q(blobs));
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  CHECK(ManifestHash(fetched.out) == ManifestHash(Run(Peer() + " read " + Q(in)).out));

  // A linked file the blobs directory has wrong is caught.
  for (const auto& e : fs::directory_iterator(blobs)) {
    if (e.path().extension().empty()) std::ofstream(e.path(), std::ios::app) << "x";
  }
  auto bad = Run(Peer() + " read " + Q(shrunk) + " --blobs " + Q(blobs));
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("linked file has sha256") != std::string::npos);
}

// Checks a carton the peer wrote from `dir` with every reading command but
// load: verify, hash, info, and unpack to the bytes the peer wrote.
Files CheckPeerCarton(const std::string& dir, const std::string& out, const std::string& hash) {
  auto self = Run(Peer() + " read --original-layout " + Q(out));
  INFO(self.err);
  REQUIRE(self.exit_code == 0);

  auto verify = Run(Carton() + " verify " + Q(out));
  INFO(verify.out << verify.err);
  CHECK(verify.exit_code == 0);
  CHECK(Run(Carton() + " hash " + Q(out)).out == hash + "\n");

  auto info = Run(Carton() + " info --json " + Q(out));
  INFO(info.err);
  REQUIRE(info.exit_code == 0);
  auto j = nlohmann::json::parse(info.out);
  CHECK(j["manifest_hash"] == hash);
  CHECK(j["model_name"] == "compat");
  CHECK(j["runner"]["runner_name"] == "noop");

  // Unpacked bytes equal the entries the peer wrote, and model/ and misc/
  // equal the source directory.
  std::string unpacked_dir = out + ".unpacked", extracted_dir = out + ".extracted";
  auto unpack = Run(Carton() + " unpack " + Q(out) + " " + Q(unpacked_dir));
  INFO(unpack.err);
  REQUIRE(unpack.exit_code == 0);
  REQUIRE(Run(Peer() + " extract " + Q(out) + " " + Q(extracted_dir)).exit_code == 0);
  Files unpacked = Snapshot(unpacked_dir), extracted = Snapshot(extracted_dir);
  extracted.erase("MANIFEST");
  unpacked.erase("MANIFEST");
  CHECK(unpacked == extracted);
  CHECK(unpacked["model/weights.bin"] == ReadFile(dir + "/model/weights.bin"));
  CHECK(unpacked["model/sub/config.json"] == ReadFile(dir + "/model/sub/config.json"));
  CHECK(unpacked["misc/note.txt"] == "hello\n");
  CHECK(unpacked["misc/_example_misc_file_0"] == ReadFile(dir + "/misc/sub/picture.png"));
  return extracted;
}

TEST_CASE("compat: cartons the Rust peer writes verify, unpack and load here", "[compat]") {
  TempDir tmp;
  std::string dir = WriteModel(tmp, /*nested=*/false), out = tmp.file("peer.carton");
  auto write = Run(Peer() + " write " + Q(dir) + " " + Q(out));
  INFO(write.err);
  REQUIRE(write.exit_code == 0);
  std::string hash = ManifestHash(write.out);
  REQUIRE(hash.size() == 64);
  Files extracted = CheckPeerCarton(dir, out, hash);
  // carton.toml, index.toml, 6 tensor files (one per reference), 2 model
  // files, 3 misc files (one a copy made for the example).
  CHECK(extracted.size() == 13);

  auto load =
      Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " " + Carton() + " load --json " + Q(out));
  INFO(load.err);
  REQUIRE(load.exit_code == 0);
  auto l = nlohmann::json::parse(load.out);
  CHECK(l["manifest_hash"] == hash);
  Files loaded = Snapshot(l["root_dir"].get<std::string>());
  loaded.erase("MANIFEST");
  // The cache's own record (loader/FORMAT.md).
  loaded.erase(".carton-cache-entry.json");
  CHECK(loaded == extracted);
}

TEST_CASE("compat: a peer-written carton with symlink entries verifies, unpacks and loads",
          "[compat]") {
  TempDir tmp;
  std::string dir = WriteModel(tmp, /*nested=*/false), out = tmp.file("peer.carton");
  fs::create_symlink("sub/config.json", dir + "/model/alias.json");
  fs::create_symlink("../weights.bin", dir + "/model/sub/weights_link.bin");
  auto write = Run(Peer() + " write " + Q(dir) + " " + Q(out));
  INFO(write.err);
  REQUIRE(write.exit_code == 0);
  {
    auto zip = carton::ZipReader::Open(out);
    REQUIRE(zip.ok());
    const carton::ZipEntry* e = zip->Find("model/alias.json");
    REQUIRE(e != nullptr);
    CHECK(e->is_symlink);
  }
  std::string hash = ManifestHash(write.out);
  REQUIRE(hash.size() == 64);
  Files extracted = CheckPeerCarton(dir, out, hash);
  CHECK(extracted["model/alias.json"] == ReadFile(dir + "/model/sub/config.json"));
  // unpack writes relative symlinks (carton/FORMAT.md, "Symlink entries").
  const std::string unpacked = out + ".unpacked";
  CHECK(fs::is_symlink(unpacked + "/model/alias.json"));
  CHECK(fs::read_symlink(unpacked + "/model/alias.json") == "sub/config.json");
  CHECK(fs::read_symlink(unpacked + "/model/sub/weights_link.bin") == "../weights.bin");

  auto load =
      Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " " + Carton() + " load --json " + Q(out));
  INFO(load.err);
  REQUIRE(load.exit_code == 0);
  auto l = nlohmann::json::parse(load.out);
  CHECK(l["manifest_hash"] == hash);
  const std::string root = l["root_dir"].get<std::string>();
  Files loaded = Snapshot(root);
  loaded.erase("MANIFEST");
  loaded.erase(".carton-cache-entry.json");
  CHECK(loaded == extracted);
  CHECK(fs::is_symlink(root + "/model/alias.json"));

  // Loading again reuses the entry, symlinks included.
  auto again =
      Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " " + Carton() + " load --json " + Q(out));
  INFO(again.err);
  CHECK(again.exit_code == 0);
}

TEST_CASE(
    "compat: a carton the Rust peer writes with LINKS verifies and unpacks "
    "here",
    "[compat][links]") {
  // As a caller of the original's save can: model files of 1000 bytes or
  // more are linked (file:// urls, so no server is needed), LINKS is stored
  // after MANIFEST.
  TempDir tmp;
  std::string dir = WriteModel(tmp, /*nested=*/false), out = tmp.file("linked.carton");
  std::string blobs = tmp.file("blobs");
  auto write = Run(Peer() + " write " + Q(dir) + " " + Q(out) + " --link-prefix " +
                   Q("file://" + blobs) + " --link-min-size 1000 --blobs " + Q(blobs));
  INFO(write.err);
  REQUIRE(write.exit_code == 0);
  std::string hash = ManifestHash(write.out);
  auto self = Run(Peer() + " read --original-layout --blobs " + Q(blobs) + " " + Q(out));
  INFO(self.err);
  REQUIRE(self.exit_code == 0);
  CHECK(self.out.find("(1 linked, 1 of them read from blobs)") != std::string::npos);

  const std::string env = "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " ";
  auto verify = Run(env + Carton() + " verify " + Q(out));
  INFO(verify.out << verify.err);
  CHECK(verify.exit_code == 0);
  CHECK(verify.out.find("1 linked file not fetched") != std::string::npos);
  auto fetched = Run(env + Carton() + " verify --fetch --allow-file-links " + Q(out));
  INFO(fetched.out << fetched.err);
  CHECK(fetched.exit_code == 0);
  CHECK(Run(Carton() + " hash " + Q(out)).out == hash + "\n");

  auto unpack =
      Run(env + Carton() + " unpack --allow-file-links " + Q(out) + " " + Q(tmp.file("unpacked")));
  INFO(unpack.err);
  REQUIRE(unpack.exit_code == 0);
  CHECK(ReadFile(tmp.file("unpacked/model/weights.bin")) == ReadFile(dir + "/model/weights.bin"));
  CHECK_FALSE(fs::exists(tmp.file("unpacked/LINKS")));
}

TEST_CASE(
    "compat: a nested tensor laid out as the original's writer means to "
    "verifies here",
    "[compat]") {
  // The original's save_tensors panics on a nested tensor, so the peer
  // refuses one unless told to write the layout that code aims for (inner
  // tensors named `_carton_nested_inner_@tensor_data/_tensor_<n>_<k>`).
  // carton load is not tried: the loader does not hand out nested tensors
  // (loader.h).
  TempDir tmp;
  std::string dir = WriteModel(tmp, /*nested=*/true), out = tmp.file("peer.carton");
  auto refused = Run(Peer() + " write " + Q(dir) + " " + Q(out));
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("nested tensor") != std::string::npos);

  auto write = Run(Peer() + " write " + Q(dir) + " " + Q(out) + " --nested-as-intended");
  INFO(write.err);
  REQUIRE(write.exit_code == 0);
  Files extracted = CheckPeerCarton(dir, out, ManifestHash(write.out));
  CHECK(extracted["tensor_data/index.toml"].find(
            "inner = [\n    '_carton_nested_inner_@tensor_data/_tensor_0_0',") !=
        std::string::npos);
  auto info = Run(Carton() + " info --json " + Q(out));
  CHECK(info.out.find("_carton_nested_inner_@tensor_data/_tensor_0_1") != std::string::npos);
}

namespace {

// A carton laid out by hand: `files` in order, each with `method`, then
// MANIFEST (listing them unless `manifest` is given) with `manifest_method`.
std::string HandMade(const TempDir& tmp, const Files& files,
                     std::function<void(std::string&)> edit_manifest = {},
                     carton::Compression method = carton::Compression::kZstd,
                     carton::Compression manifest_method = carton::Compression::kStored) {
  std::string path = tmp.file("hand.carton");
  fs::remove(path);
  auto zip = carton::ZipWriter::Create(path);
  REQUIRE(zip.ok());
  std::vector<carton::manifest::ManifestEntry> entries;
  for (const auto& [name, content] : files) {
    REQUIRE(zip->AddBytes(name, carton::AsBytes(content), method, 3).ok());
    entries.push_back({name, carton::manifest::Sha256Of(carton::AsBytes(content))});
  }
  std::string text = carton::manifest::Manifest::FromEntries(entries)->Serialize();
  if (edit_manifest) edit_manifest(text);
  REQUIRE(zip->AddBytes("MANIFEST", carton::AsBytes(text), manifest_method).ok());
  REQUIRE(zip->Finish().ok());
  return path;
}

Files GoodFiles() {
  Files f = {
      {"carton.toml",
       "spec_version = 1\n[runner]\nrunner_name = \"noop\"\n"
       "required_framework_version = \"=1.0.0\"\nrunner_compat_version = 1\n"},
      {"model/m.bin", Weights(3000)},
      {"tensor_data/index.toml",
       // What toml 0.5's to_string_pretty writes for this index.
       "[[tensor]]\nname = 'x'\ndtype = 'float32'\nshape = [2]\nfile = "
       "'tensor_0.bin'\n"
       "inner = []\n"},
      {"tensor_data/tensor_0.bin", std::string(8, '\0')},
  };
  return f;
}

// Sets the DOS date of every central directory record to 0 (month 0).
void ZeroCentralDates(const std::string& path) {
  std::string bytes = ReadFile(path);
  const std::string sig("PK\x01\x02", 4);
  for (auto at = bytes.find(sig); at != std::string::npos; at = bytes.find(sig, at + 4)) {
    bytes[at + 14] = 0;
    bytes[at + 15] = 0;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

TEST_CASE("compat: the Rust peer refuses what the original cannot read", "[compat]") {
  TempDir tmp;
  auto expect_refused = [&](const std::string& path, const std::string& message) {
    auto r = Run(Peer() + " read " + Q(path));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(message) != std::string::npos);
  };

  SECTION("the hand-made carton itself is fine") {
    auto r = Run(Peer() + " read --original-layout " + Q(HandMade(tmp, GoodFiles())));
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("a wrong sha256 in MANIFEST") {
    auto path = HandMade(tmp, GoodFiles(), [](std::string& m) {
      auto at = m.find("model/m.bin=") + 12;
      m[at] = m[at] == '0' ? '1' : '0';
    });
    expect_refused(path, "model/m.bin: sha256 ");
  }
  SECTION("MANIFEST out of order") {
    auto path = HandMade(tmp, GoodFiles(), [](std::string& m) {
      auto first = m.substr(0, m.find('\n') + 1);
      m = m.substr(first.size()) + first;
    });
    expect_refused(path, "is not after");
  }
  SECTION("MANIFEST compressed") {
    auto path =
        HandMade(tmp, GoodFiles(), {}, carton::Compression::kZstd, carton::Compression::kZstd);
    expect_refused(path, "MANIFEST is compressed");
  }
  SECTION("index.toml without inner") {
    Files f = GoodFiles();
    f["tensor_data/index.toml"] =
        "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\nfile = "
        "\"tensor_0.bin\"\n";
    expect_refused(HandMade(tmp, f), "missing field `inner`");
  }
  SECTION("index.toml without tensor") {
    Files f = GoodFiles();
    f["tensor_data/index.toml"] = "";
    f.erase("tensor_data/tensor_0.bin");
    expect_refused(HandMade(tmp, f), "missing field `tensor`");
  }
  SECTION("no index.toml") {
    Files f = GoodFiles();
    f.erase("tensor_data/index.toml");
    f.erase("tensor_data/tensor_0.bin");
    expect_refused(HandMade(tmp, f), "no tensor_data/index.toml");
  }
  SECTION("a tensor file of the wrong size") {
    Files f = GoodFiles();
    f["tensor_data/tensor_0.bin"] = std::string(7, '\0');
    expect_refused(HandMade(tmp, f), "tensor_data/tensor_0.bin: 7 bytes");
  }
  SECTION("carton.toml without runner_compat_version") {
    Files f = GoodFiles();
    f["carton.toml"] =
        "spec_version = 1\n[runner]\nrunner_name = "
        "\"noop\"\nrequired_framework_version = "
        "\"=1.0.0\"\n";
    expect_refused(HandMade(tmp, f), "missing field `runner_compat_version`");
  }
  SECTION("a self_test naming no tensor") {
    Files f = GoodFiles();
    f["carton.toml"] += "[[self_test]]\ninputs = { a = \"@tensor_data/nope\" }\n";
    expect_refused(HandMade(tmp, f), "names no tensor");
  }
  SECTION("an impossible DOS date") {
    auto path = HandMade(tmp, GoodFiles());
    ZeroCentralDates(path);
    expect_refused(path, "is not a valid date");
  }
  SECTION("a damaged stored entry") {
    auto path = HandMade(tmp, GoodFiles(), {}, carton::Compression::kStored);
    std::string bytes = ReadFile(path);
    auto at = bytes.find(Weights(3000).substr(0, 64));
    REQUIRE(at != std::string::npos);
    bytes[at + 10] ^= 1;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    expect_refused(path, "model/m.bin: cannot decode");
  }
}
