#include "carton/carton/pack.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/carton/info.h"
#include "carton/carton/unpack.h"
#include "carton/carton/verify.h"
#include "carton/format/tensor_data.h"
#include "carton/zip/reader.h"
#include "carton/zip/writer.h"
#include "carton_testing.h"
#include "source_testing.h"

using namespace carton;
namespace fs = std::filesystem;
using testing::MinimalFiles;
using testing::TempDir;

namespace {

std::string Packed(const TempDir& tmp, const PackOptions& o = {}, const char* name = "m.carton") {
  std::string dir = tmp.file("model");
  if (!fs::exists(dir)) testing::WriteTree(dir, MinimalFiles());
  auto r = Pack(dir, tmp.file(name), o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return tmp.file(name);
}

}  // namespace

TEST_CASE("carton pack: a packed directory verifies and lists its files", "[carton][pack]") {
  TempDir tmp;
  std::string path = Packed(tmp);
  auto report = Verify(*testing::SourceFor(path));
  REQUIRE(report.ok());
  for (auto& p : report->problems) INFO(p.where << ": " << p.message);
  CHECK(report->ok());
  CHECK(report->files_hashed == 7);

  auto info = testing::SourceFor(path)->Info();
  REQUIRE(info.ok());
  CHECK(info->config.model_name == "tiny");
  CHECK(info->files.size() == 7);
  CHECK(info->files[0].path == "carton.toml");
  REQUIRE(info->tensor_index.has_value());
  CHECK(info->tensor_index->tensors.size() == 2);
  CHECK(*report->manifest_hash == info->manifest_hash);

  // The manifest hash is the sha256 of the MANIFEST entry.
  auto zip = ZipReader::Open(path);
  REQUIRE(zip.ok());
  auto m = zip->Read("MANIFEST");
  REQUIRE(m.ok());
  CHECK(manifest::Sha256Of(*m) == *testing::SourceFor(path)->ManifestHash());
  CHECK(zip->entries().back().name == "MANIFEST");
  CHECK(zip->Find("MANIFEST")->method == 0);  // stored, as the original does
}

TEST_CASE("carton pack: output is byte-identical for the same input", "[carton][pack]") {
  TempDir tmp;
  std::string a = Packed(tmp, {}, "a.carton");
  std::string b = Packed(tmp, {}, "b.carton");
  CHECK(testing::ReadText(a) == testing::ReadText(b));
}

TEST_CASE("carton pack: output does not depend on the number of threads", "[carton][pack]") {
  TempDir tmp;
  auto files = MinimalFiles();
  // Past zstd's single-thread cut-off (512 KiB) and one 2 MiB job.
  std::string big;
  for (std::uint64_t i = 0; big.size() < (5u << 20); ++i)
    big += "line " + std::to_string(i * 7919 % 100003) + "\n";
  files["model/big.txt"] = big;
  testing::WriteTree(tmp.file("model"), files);
  for (auto c : {PackCompression::kStored, PackCompression::kZstd, PackCompression::kAuto}) {
    std::string first;
    for (unsigned threads : {1u, 2u, 3u}) {
      INFO("compression " << static_cast<int>(c) << ", threads " << threads);
      PackOptions o;
      o.compression = c;
      o.threads = threads;
      std::string path = Packed(tmp, o, "t.carton");
      std::string bytes = testing::ReadText(path);
      if (first.empty()) first = bytes;
      CHECK(bytes == first);
      auto report = Verify(*testing::SourceFor(path));
      REQUIRE(report.ok());
      CHECK(report->ok());
    }
  }
}

TEST_CASE("carton pack: every compression method round-trips", "[carton][pack]") {
  for (auto c : {PackCompression::kStored, PackCompression::kDeflate, PackCompression::kZstd,
                 PackCompression::kAuto}) {
    TempDir tmp;
    PackOptions o;
    o.compression = c;
    std::string path = Packed(tmp, o);
    auto report = Verify(*testing::SourceFor(path));
    REQUIRE(report.ok());
    CHECK(report->ok());
    std::string out = tmp.file("out");
    REQUIRE(Unpack(*testing::SourceFor(path), out).ok());
    for (const auto& [p, content] : MinimalFiles()) {
      if (p == "tensor_data/index.toml") continue;  // normalized; compared below
      CHECK(testing::ReadText(out + "/" + p) == content);
    }
    auto packed = ParseIndex(testing::ReadText(out + "/tensor_data/index.toml"));
    auto original = ParseIndex(testing::kMinimalIndex);
    REQUIRE(packed.ok());
    REQUIRE(packed->tensors.size() == original->tensors.size());
    for (std::size_t i = 0; i < packed->tensors.size(); ++i) {
      CHECK(packed->tensors[i].name == original->tensors[i].name);
      CHECK(packed->tensors[i].file == original->tensors[i].file);
      CHECK(packed->tensors[i].shape == original->tensors[i].shape);
    }
    CHECK(fs::exists(out + "/MANIFEST"));
  }
}

TEST_CASE("carton pack: other zip tools accept our cartons", "[carton][pack][interop]") {
  for (auto c : {PackCompression::kStored, PackCompression::kDeflate, PackCompression::kZstd}) {
    TempDir tmp;
    PackOptions o;
    o.compression = c;
    std::string path = Packed(tmp, o);
    if (c == PackCompression::kZstd) {
      auto r = testing::Run("bsdtar -tf '" + path + "'");
      CHECK(r.exit_code == 0);
      CHECK(r.out.find("model/sub/vocab.txt") != std::string::npos);
      continue;
    }
    auto py = testing::Run("python3 -m zipfile -t '" + path + "'");
    CHECK(py.exit_code == 0);
    auto uz = testing::Run("unzip -t '" + path + "'");
    CHECK(uz.exit_code == 0);
    CHECK(uz.out.find("No errors detected") != std::string::npos);
    auto cat = testing::Run("unzip -p '" + path + "' model/sub/vocab.txt");
    CHECK(cat.out == "hello\nworld\n");
  }
}

TEST_CASE("carton pack: stored entries are aligned for mapping", "[carton][pack]") {
  for (std::uint32_t align : {64u, 4096u}) {
    TempDir tmp;
    PackOptions o;
    o.compression = PackCompression::kStored;
    o.alignment = align;
    std::string path = Packed(tmp, o);
    auto zip = ZipReader::Open(path);
    REQUIRE(zip.ok());
    for (const auto& e : zip->entries()) {
      auto off = zip->DataOffset(e.name);
      REQUIRE(off.ok());
      CHECK(*off % align == 0);
    }
    CHECK(AsChars(*zip->MappedData("model/sub/vocab.txt")) == "hello\nworld\n");
  }
}

TEST_CASE("carton pack: auto stores large and incompressible files", "[carton][pack]") {
  TempDir tmp;
  auto files = MinimalFiles();
  std::string noise(200000, '\0');
  std::uint32_t x = 12345;
  for (auto& ch : noise) {
    x = x * 1103515245 + 12345;
    ch = static_cast<char>(x >> 24);
  }
  files["model/noise.bin"] = noise;
  files["model/zeros.bin"] = std::string(200000, '\0');
  testing::WriteTree(tmp.file("model"), files);
  PackOptions o;
  o.auto_store_size = 100000;
  auto r = Pack(tmp.file("model"), tmp.file("m.carton"), o);
  REQUIRE(r.ok());
  std::map<std::string, Compression> method;
  for (const auto& f : r->files) method[f.path] = f.method;
  CHECK(method["model/noise.bin"] == Compression::kStored);
  CHECK(method["model/zeros.bin"] == Compression::kStored);  // large
  CHECK(method["carton.toml"] == Compression::kStored);      // under 4 KiB
}

TEST_CASE("carton pack: creates carton.toml from flags when missing", "[carton][pack]") {
  TempDir tmp;
  auto files = MinimalFiles();
  files.erase("carton.toml");
  files.erase("tensor_data/index.toml");
  files.erase("tensor_data/tensor_0.bin");
  files.erase("tensor_data/tensor_1.bin");
  testing::WriteTree(tmp.file("model"), files);
  auto missing = Pack(tmp.file("model"), tmp.file("m.carton"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kInvalidArgument);
  CHECK(missing.status().message().find("no carton.toml") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("m.carton")));

  PackDescription d;
  d.path = tmp.file("model");
  CartonConfig c;
  c.runner.runner_name = "torchscript";
  c.runner.required_framework_version = "=1.13.1";
  c.runner.runner_compat_version = 2;
  c.model_name = "flagged";
  d.config = c;
  REQUIRE(Pack(d, tmp.file("m.carton")).ok());
  auto info = testing::SourceFor(tmp.file("m.carton"))->Info();
  REQUIRE(info.ok());
  CHECK(info->config.runner.runner_name == "torchscript");
  CHECK(info->config.model_name == "flagged");
  CHECK(Verify(*testing::SourceFor(tmp.file("m.carton")))->ok());
}

TEST_CASE("carton pack: refuses an invalid carton.toml or index.toml", "[carton][pack]") {
  TempDir tmp;
  auto files = MinimalFiles();
  files["carton.toml"] = "spec_version = 2\n";
  testing::WriteTree(tmp.file("a"), files);
  auto r = Pack(tmp.file("a"), tmp.file("a.carton"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("carton.toml") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("a.carton")));

  files = MinimalFiles();
  files["tensor_data/index.toml"] = "[[tensor]]\nname = 3\n";
  testing::WriteTree(tmp.file("b"), files);
  r = Pack(tmp.file("b"), tmp.file("b.carton"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("index.toml") != std::string::npos);
}

TEST_CASE("carton pack: follows symlinks; refuses dangling ones, sockets and devices",
          "[carton][pack]") {
  TempDir tmp;
  testing::WriteTree(tmp.file("m"), MinimalFiles());
  // A symlink out of the folder is packed as the file it points to.
  testing::WriteBytes(tmp.file("outside"), AsBytes("outside"));
  fs::create_symlink(tmp.file("outside"), tmp.file("m/model/link"));
  REQUIRE(Pack(tmp.file("m"), tmp.file("m.carton")).ok());
  CHECK(AsChars(*ZipReader::Open(tmp.file("m.carton"))->Read("model/link")) == "outside");
  fs::remove(tmp.file("m/model/link"));

  fs::create_symlink(tmp.file("nothing"), tmp.file("m/model/dangling"));
  auto r = Pack(tmp.file("m"), tmp.file("n.carton"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(r.status().message(), Catch::Contains("model/dangling: dangling symlink"));
  CHECK_FALSE(fs::exists(tmp.file("n.carton")));
  fs::remove(tmp.file("m/model/dangling"));

  fs::create_symlink(tmp.path(), tmp.file("m/model/dir"));
  r = Pack(tmp.file("m"), tmp.file("n.carton"));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("model/dir: symlinks to directories"));
  fs::remove(tmp.file("m/model/dir"));

  // A symlink inside the directory is packed with its target's bytes.
  fs::create_symlink("sub/vocab.txt", tmp.file("m/model/alias.txt"));
  REQUIRE(Pack(tmp.file("m"), tmp.file("m.carton")).ok());
  auto zip = ZipReader::Open(tmp.file("m.carton"));
  CHECK(AsChars(*zip->Read("model/alias.txt")) == "hello\nworld\n");
  fs::remove(tmp.file("m/model/alias.txt"));

  // Unix socket paths are short; make one with a relative name.
  std::string sock_dir = tmp.file("m/model");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string cwd = fs::current_path();
  fs::current_path(sock_dir);
  std::strcpy(addr.sun_path, "sock");
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  fs::current_path(cwd);
  REQUIRE(rc == 0);
  r = Pack(tmp.file("m"), tmp.file("s.carton"));
  ::close(fd);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(r.status().message().find("model/sock: a socket") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("s.carton")));

  auto dev = Pack("/dev", tmp.file("d.carton"));
  CHECK_FALSE(dev.ok());
}

TEST_CASE("carton pack: drops empty directories and skips an old MANIFEST", "[carton][pack]") {
  TempDir tmp;
  testing::WriteTree(tmp.file("m"), MinimalFiles());
  fs::create_directories(tmp.file("m/model/empty/deeper"));
  testing::WriteBytes(tmp.file("m/MANIFEST"), AsBytes("stale"));
  REQUIRE(Pack(tmp.file("m"), tmp.file("m.carton")).ok());
  auto zip = ZipReader::Open(tmp.file("m.carton"));
  for (const auto& e : zip->entries()) CHECK(e.name.find("empty") == std::string::npos);
  CHECK(Verify(*testing::SourceFor(tmp.file("m.carton")))->ok());
}

TEST_CASE("carton pack: refuses top-level names that are MANIFEST or LINKS in another case",
          "[carton][pack]") {
  // Readers refuse an archive whose names collide case-insensitively, so
  // pack must not write one beside its MANIFEST (or shrink's LINKS).
  for (const std::string rel : {"manifest", "Manifest", "links", "Links", "lInKs/x.bin",
                                "MANIFEST/x.bin", "manifest/sub/x.bin"}) {
    INFO(rel);
    TempDir tmp;
    auto files = MinimalFiles();
    files[rel] = "x";
    testing::WriteTree(tmp.file("m"), files);
    auto r = Pack(tmp.file("m"), tmp.file("m.carton"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kUnsupported);  // the CLI exits 1
    const std::string first = rel.substr(0, rel.find('/'));
    const std::string reserved = first.size() == 8 ? "MANIFEST" : "LINKS";
    CHECK_THAT(r.status().message(),
               Catch::Contains(tmp.file("m") + "/" + rel + ": top-level name \"" + first +
                               "\" collides with " + reserved));
    CHECK_THAT(r.status().message(), Catch::Contains("reserved in any letter case"));
    CHECK_FALSE(fs::exists(tmp.file("m.carton")));
  }
  // The same names below the top level are ordinary files.
  TempDir tmp;
  auto files = MinimalFiles();
  files["model/manifest"] = "x";
  files["misc/LINKS"] = "y";
  testing::WriteTree(tmp.file("m"), files);
  REQUIRE(Pack(tmp.file("m"), tmp.file("m.carton")).ok());
  auto v = Verify(*testing::SourceFor(tmp.file("m.carton")));
  REQUIRE(v.ok());
  CHECK(v->ok());
}

TEST_CASE("carton pack: always writes a normalized tensor_data/index.toml",
          "[carton][pack][compat]") {
  // The original implementation's reader needs index.toml, and `inner` on
  // every entry; we write both even when the directory has neither.
  TempDir tmp;
  auto files = MinimalFiles();
  files.erase("tensor_data/index.toml");
  files.erase("tensor_data/tensor_0.bin");
  files.erase("tensor_data/tensor_1.bin");
  files["carton.toml"] =
      "spec_version = 1\n[runner]\nrunner_name = \"noop\"\n"
      "required_framework_version = \"=1.0.0\"\nrunner_compat_version = 1\n";
  testing::WriteTree(tmp.file("a"), files);
  REQUIRE(Pack(tmp.file("a"), tmp.file("a.carton")).ok());
  auto zip = ZipReader::Open(tmp.file("a.carton"));
  auto index = zip->Read("tensor_data/index.toml");
  REQUIRE(index.ok());
  CHECK(AsChars(*index).find("tensor = []") != std::string::npos);
  CHECK(Verify(*testing::SourceFor(tmp.file("a.carton")))->ok());

  files = MinimalFiles();  // its index.toml has no `inner`
  testing::WriteTree(tmp.file("b"), files);
  REQUIRE(Pack(tmp.file("b"), tmp.file("b.carton")).ok());
  auto zb = ZipReader::Open(tmp.file("b.carton"));
  std::string text(AsChars(*zb->Read("tensor_data/index.toml")));
  CHECK(text.find("inner = []") != std::string::npos);
  CHECK(Verify(*testing::SourceFor(tmp.file("b.carton")))->ok());

  files.erase("tensor_data/index.toml");
  testing::WriteTree(tmp.file("c"), files);
  std::filesystem::remove(tmp.file("c/tensor_data/index.toml"));
  auto r = Pack(tmp.file("c"), tmp.file("c.carton"));
  REQUIRE_FALSE(r.ok());
  // verify's words (consistency.h).
  CHECK(r.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(r.status().message(),
             Catch::Contains(tmp.file("c") + "/tensor_data/index.toml: missing, but "
                                             "tensor_data/ holds other files"));
}

TEST_CASE("carton verify: reads a carton laid out as the original implementation writes it",
          "[carton][verify][compat]") {
  // Every file zstd-compressed, MANIFEST stored, index.toml with `inner = []`
  // on every entry including a nested tensor and its inner tensors.
  TempDir tmp;
  std::map<std::string, std::string> files = {
      {"carton.toml", testing::kMinimalConfig},
      {"model/model.pt", std::string(1000, 'p')},
      {"tensor_data/index.toml",
       "[[tensor]]\nname = \"n\"\ndtype = \"nested\"\ninner = [\"_carton_nested_inner_n_0\"]\n\n"
       "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\nfile = \"tensor_0.bin\"\ninner "
       "= []\n\n"
       "[[tensor]]\nname = \"y\"\ndtype = \"float32\"\nshape = [2]\nfile = \"tensor_1.bin\"\ninner "
       "= []\n\n"
       "[[tensor]]\nname = \"_carton_nested_inner_n_0\"\ndtype = \"string\"\nshape = [1]\n"
       "file = \"tensor_2.toml\"\ninner = []\n"},
      {"tensor_data/tensor_0.bin", std::string(8, '\0')},
      {"tensor_data/tensor_1.bin", std::string(8, '\0')},
      {"tensor_data/tensor_2.toml", "data = [\"s\"]\n"},
  };
  std::string path = tmp.file("rust.carton");
  {
    auto zip = ZipWriter::Create(path);
    std::vector<manifest::ManifestEntry> entries;
    for (const auto& [name, content] : files) {
      REQUIRE(zip->AddBytes(name, AsBytes(content), Compression::kZstd, 3).ok());
      entries.push_back({name, manifest::Sha256Of(AsBytes(content))});
    }
    auto m = manifest::Manifest::FromEntries(entries);
    REQUIRE(zip->AddBytes("MANIFEST", AsBytes(m->Serialize()), Compression::kStored).ok());
    REQUIRE(zip->Finish().ok());
  }
  auto report = Verify(*testing::SourceFor(path));
  REQUIRE(report.ok());
  for (auto& p : report->problems) INFO(p.where << ": " << p.message);
  CHECK(report->ok());
  auto info = testing::SourceFor(path)->Info();
  REQUIRE(info.ok());
  CHECK(info->tensor_index->Find("n")->nested());
  REQUIRE(Unpack(*testing::SourceFor(path), tmp.file("out")).ok());
  CHECK(testing::ReadText(tmp.file("out/tensor_data/tensor_2.toml")) == "data = [\"s\"]\n");
}

TEST_CASE("carton pack: an output inside the model directory is not packed into itself",
          "[carton][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("model");
  testing::WriteTree(dir, MinimalFiles());
  const std::string out = dir + "/model/x.carton";
  auto first = Pack(dir, out, {});
  INFO(first.status().ToString());
  REQUIRE(first.ok());
  const std::string first_bytes = testing::ReadText(out);
  // Packing again with the first output in place gives the same carton.
  auto second = Pack(dir, out, {});
  REQUIRE(second.ok());
  CHECK(second->files.size() == first->files.size());
  for (const auto& f : second->files) CHECK(f.path != "model/x.carton");
  CHECK(testing::ReadText(out) == first_bytes);
}

TEST_CASE("carton pack: a folder without model/ and a single file go under model/",
          "[carton][pack]") {
  TempDir tmp;
  testing::WriteTree(tmp.file("flat"), {{"config.json", "{}"}, {"sub/w.bin", "w"}});
  PackDescription d;
  d.path = tmp.file("flat");
  CartonConfig c;
  c.runner.runner_name = "noop";
  c.runner.required_framework_version = "=1.0.0";
  d.config = c;
  auto r = Pack(d, tmp.file("f.carton"));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  std::vector<std::string> paths;
  for (const auto& f : r->files) paths.push_back(f.path);
  CHECK(paths == std::vector<std::string>{"carton.toml", "model/config.json", "model/sub/w.bin",
                                          "tensor_data/index.toml"});
  CHECK(Verify(*testing::SourceFor(tmp.file("f.carton")))->ok());

  d.path = tmp.file("flat/sub/w.bin");
  r = Pack(d, tmp.file("s.carton"));
  REQUIRE(r.ok());
  CHECK(r->files[1].path == "model/w.bin");

  // carton.toml beside the files stays the carton's.
  testing::WriteTree(tmp.file("flat"), {{"carton.toml", testing::kMinimalConfig}});
  r = Pack(tmp.file("flat"), tmp.file("g.carton"));
  REQUIRE_FALSE(r.ok());  // its self-test names tensors this folder lacks
  CHECK(r.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(r.status().message(),
             Catch::Contains("/carton.toml:11:1: self-test 1 inputs: @tensor_data/x names no "
                             "tensor in tensor_data/index.toml"));
}

TEST_CASE("carton pack: the output path is checked before the folder is read", "[carton][pack]") {
  TempDir tmp;
  // A folder that would fail later: the output's problem is reported first.
  testing::WriteTree(tmp.file("m"), {{"model/a", "a"}});
  auto r = Pack(tmp.file("m"), tmp.file("none/o.carton"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kNotFound);
  CHECK(r.status().message() ==
        tmp.file("none/o.carton") + ": directory " + tmp.file("none") + " does not exist");
  r = Pack(tmp.file("m"), tmp.file("m"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("is a directory"));
}

TEST_CASE("carton pack: auto stores files under 4 KiB", "[carton][pack]") {
  TempDir tmp;
  auto files = MinimalFiles();
  files["model/small.txt"] = std::string(4095, 'a');
  files["model/big.txt"] = std::string(4096, 'a');
  testing::WriteTree(tmp.file("m"), files);
  auto r = Pack(tmp.file("m"), tmp.file("m.carton"));
  REQUIRE(r.ok());
  std::map<std::string, Compression> method;
  for (const auto& f : r->files) method[f.path] = f.method;
  CHECK(method["model/small.txt"] == Compression::kStored);
  CHECK(method["model/big.txt"] == Compression::kZstd);
  CHECK(method["carton.toml"] == Compression::kStored);
  CHECK(method["tensor_data/index.toml"] == Compression::kStored);
}

TEST_CASE("carton pack: a description adds files and links in one pass",
          "[carton][pack][description]") {
  TempDir tmp;
  // The folder lacks tensor_data/ and misc/: the description brings them.
  auto files = MinimalFiles();
  std::vector<PackBytes> extra;
  for (auto it = files.begin(); it != files.end();) {
    if (it->first.starts_with("tensor_data/") || it->first.starts_with("misc/")) {
      extra.push_back({it->first, it->second});
      it = files.erase(it);
    } else {
      ++it;
    }
  }
  testing::WriteTree(tmp.file("m"), files);
  testing::WriteTree(tmp.file("whole"), MinimalFiles());
  REQUIRE(Pack(tmp.file("whole"), tmp.file("whole.carton")).ok());

  PackDescription d;
  d.path = tmp.file("m");
  d.extra_files = extra;
  auto r = Pack(d, tmp.file("added.carton"));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  // The same carton as the folder that holds those files.
  CHECK(testing::ReadText(tmp.file("added.carton")) == testing::ReadText(tmp.file("whole.carton")));

  // Linked: the file leaves the zip, MANIFEST still lists it, LINKS covers it.
  const manifest::Digest weights = manifest::Sha256Of(AsBytes(files["model/model.bin"]));
  d.links[weights] = {"https://example.com/blobs/w"};
  r = Pack(d, tmp.file("linked.carton"));
  REQUIRE(r.ok());
  CHECK(r->manifest_hash == testing::SourceFor(tmp.file("whole.carton"))->ManifestHash().value());
  auto zip = ZipReader::Open(tmp.file("linked.carton"));
  REQUIRE(zip.ok());
  CHECK(zip->Find("model/model.bin") == nullptr);
  CHECK(zip->Find("LINKS") != nullptr);
  auto report = Verify(*testing::SourceFor(tmp.file("linked.carton")));
  REQUIRE(report.ok());
  CHECK(report->ok());
  CHECK(report->linked_files == 1);
}

TEST_CASE("carton pack: a description's extra files and links are checked first",
          "[carton][pack][description][errors]") {
  TempDir tmp;
  testing::WriteTree(tmp.file("m"), MinimalFiles());
  auto refused = [&](const PackDescription& d, const std::string& expected) {
    auto r = Pack(d, tmp.file("out.carton"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(expected));
    CHECK_FALSE(fs::exists(tmp.file("out.carton")));
  };
  PackDescription d;
  d.path = tmp.file("m");
  d.extra_files = {{"model/extra.bin", "x"}};
  refused(d, "model/extra.bin: a file added to a carton goes under tensor_data/ or misc/");
  d.extra_files = {{"misc/readme.md", "other"}};
  refused(d, "has misc/readme.md already");
  d.extra_files = {{"misc/../escape", "x"}};
  refused(d, "misc/../escape");
  d.extra_files = {{"misc/a", "1"}, {"misc/a", "2"}};
  refused(d, "misc/a: given twice");

  d.extra_files.clear();
  d.links[manifest::Sha256Of(AsBytes("nothing packed has these bytes"))] = {"https://e.com/x"};
  refused(d, "names no file of");
  // carton.toml stays in the zip: its hash names no file that can leave.
  d.links.clear();
  d.links[manifest::Sha256Of(AsBytes(std::string(testing::kMinimalConfig)))] = {"https://e.com/c"};
  refused(d, "carton.toml and index.toml stay in");
  d.links.clear();
  d.links[manifest::Sha256Of(AsBytes(MinimalFiles()["model/model.bin"]))] = {"ftp://e.com/w"};
  refused(d, "LINKS cannot hold these urls");
}

TEST_CASE("carton pack: compression names are parsed in one place", "[carton][pack][errors]") {
  CHECK(ParsePackCompression("auto").value() == PackCompression::kAuto);
  CHECK(ParsePackCompression("zstd").value() == PackCompression::kZstd);
  CHECK(ParseCompression("deflate").value() == Compression::kDeflate);
  auto bad = ParsePackCompression("gzip");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "must be stored, deflate, zstd or auto, not \"gzip\"");
  CHECK_FALSE(ParseCompression("auto").ok());
}
