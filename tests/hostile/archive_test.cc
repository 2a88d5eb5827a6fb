// The malicious-archive suite: hostile .carton files crafted byte by byte,
// run through the library and through `carton verify`, `carton info` and
// `carton unpack` as a user would. Every case must give a clear error that
// names the entry and the rule, and leave nothing behind: no file outside
// the target directory, no partial target directory, no temporary files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "carton/carton/info.h"
#include "carton/carton/unpack.h"
#include "carton/carton/verify.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/reader.h"
#include "hostile_testing.h"
#include "source_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string title;
  std::vector<RawEntry> entries;
  std::string want;  // in every error and in one verify problem
  // info reads no file data, so it cannot see data-level damage (a CRC or
  // sha256 that does not match); verify and unpack do.
  bool info_sees_it = true;
  RawZipOptions options = {};
};

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::vector<RawEntry> With(std::vector<RawEntry> base, std::vector<RawEntry> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

RawEntry Symlink(std::string name, std::string target) {
  RawEntry e{std::move(name), std::move(target)};
  e.unix_mode = 0120777;
  return e;
}

// Runs one hostile carton through the library and the CLI.
void Check(const Case& c) {
  INFO(c.title);
  TempDir root;
  fs::create_directories(root.path() / "in");
  fs::create_directories(root.path() / "work");
  const std::string carton = root.file("in/x.carton");
  const std::string out = root.file("work/out");
  WriteBytes(carton, BuildZip(c.entries, c.options));
  const std::vector<std::string> before = ListTree(root.path().string());

  auto verify = Verify(*testing::SourceFor(carton));
  REQUIRE(verify.ok());
  CHECK_FALSE(verify->ok());
  bool named = false;
  for (const auto& p : verify->problems) {
    named |= (p.where.empty() ? p.message : p.where + ": " + p.message).find(c.want) !=
             std::string::npos;
  }
  if (!named) {
    for (const auto& p : verify->problems) UNSCOPED_INFO(p.where << ": " << p.message);
  }
  CHECK(named);

  auto info = testing::SourceFor(carton)->Info();
  if (c.info_sees_it) {
    REQUIRE_FALSE(info.ok());
    CHECK_THAT(info.status().message(), Catch::Contains(c.want));
    CHECK_THAT(info.status().message(), Catch::Contains(carton));
  }

  Status unpack = Unpack(*testing::SourceFor(carton), out).status();
  REQUIRE_FALSE(unpack.ok());
  CHECK_THAT(unpack.message(), Catch::Contains(c.want));
  CHECK(ListTree(root.path().string()) == before);

  const std::string bin = CartonBin();
  auto v = Run(bin + " verify " + Q(carton));
  CHECK(v.exit_code == 1);
  CHECK_THAT(v.err, Catch::Contains(c.want));
  auto i = Run(bin + " info " + Q(carton));
  if (c.info_sees_it) {
    CHECK(i.exit_code == 1);
    CHECK_THAT(i.err, Catch::Contains("carton info: " + carton));
    CHECK_THAT(i.err, Catch::Contains(c.want));
  }
  CHECK(i.exit_code != 2);
  auto u = Run(bin + " unpack " + Q(carton) + " " + Q(out));
  CHECK(u.exit_code == 1);
  CHECK_THAT(u.err, Catch::Contains("carton unpack: "));
  CHECK_THAT(u.err, Catch::Contains(c.want));
  CHECK(u.out.empty());
  // Nothing from the archive reaches the terminal raw.
  for (const auto* err : {&v.err, &i.err, &u.err}) CHECK(err->find('\x1b') == std::string::npos);
  CHECK(ListTree(root.path().string()) == before);
  CHECK_FALSE(fs::exists("/etc/x"));
}

std::vector<RawEntry> Valid() { return CartonEntries(ValidCartonFiles()); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("hostile: entry names that leave the target are refused", "[hostile]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"../x", "entry \"../x\": name has a \"..\" component"},
      {"a/../../x", "entry \"a/../../x\": name has a \"..\" component"},
      {"model/../../x", "entry \"model/../../x\": name has a \"..\" component"},
      {"/etc/x", "entry \"/etc/x\": name is absolute"},
      {"C:\\x", "entry \"C:\\\\x\": name contains a backslash"},
      {"C:x", "entry \"C:x\": name starts with a drive letter"},
      {"a\\..\\x", "entry \"a\\\\..\\\\x\": name contains a backslash"},
      {std::string("model/a\0b", 9), "entry \"model/a\\x00b\": name contains a NUL byte"},
      {"", "entry \"\": name is empty"},
      {"model//x", "entry \"model//x\": name has an empty path component"},
      {"./x", "entry \"./x\": name has a \".\" component"},
      {"model/\x01x", "entry \"model/\\x01x\": name breaks the path rules"},
      {"model/\xff", "entry \"model/\\xff\": name breaks the path rules"},
  };
  for (const auto& [name, want] : names) {
    Check({"name " + want, With(Valid(), {{name, "evil"}}), want});
  }
}

TEST_CASE("hostile: names that collide on some file system are refused", "[hostile]") {
  Check({"case", With(Valid(), {{"model/Weights.bin", "other"}}),
         "entry \"model/Weights.bin\": name differs only in letter case from entry "
         "\"model/weights.bin\""});
  Check({"case of a directory", With(Valid(), {{"MODEL/WEIGHTS.BIN", "other"}}),
         "entry \"MODEL/WEIGHTS.BIN\": name differs only"});
  Check({"file used as a directory", With(Valid(), {{"model/weights.bin/x", "other"}}),
         "entry \"model/weights.bin/x\": uses the file entry \"model/weights.bin\" as a "
         "directory"});
  Check({"file and directory", With(Valid(), {{"model/weights.bin/", ""}}),
         "name both a file and a directory"});
}

// A valid carton plus symlink entry `link` whose data is `target`, listed in
// MANIFEST with the sha256 of `as_if`.
std::vector<RawEntry> WithSymlink(std::map<std::string, std::string> files, const std::string& link,
                                  const std::string& target, const std::string& as_if) {
  files[link] = as_if;
  auto entries = CartonEntries(files);
  for (auto& e : entries) {
    if (e.name == link) {
      e.data = target;
      e.unix_mode = 0120777;
    }
  }
  return entries;
}

TEST_CASE("hostile: a symlink entry to a file of the carton is accepted", "[hostile]") {
  auto files = ValidCartonFiles();
  files["model/sub/config.json"] = "{}";
  const std::string weights = files["model/weights.bin"];
  auto entries = WithSymlink(files, "model/sub/link.bin", "./../weights.bin", weights);
  TempDir root;
  const std::string carton = root.file("x.carton");
  WriteBytes(carton, BuildZip(entries));

  auto verify = Verify(*testing::SourceFor(carton));
  REQUIRE(verify.ok());
  for (const auto& p : verify->problems) UNSCOPED_INFO(p.where << ": " << p.message);
  CHECK(verify->ok());
  CHECK(testing::SourceFor(carton)->Info().ok());

  // unpack writes the resolved target, relative to the link.
  const std::string out = root.file("out");
  REQUIRE(Unpack(*testing::SourceFor(carton), out).ok());
  CHECK(fs::is_symlink(out + "/model/sub/link.bin"));
  CHECK(fs::read_symlink(out + "/model/sub/link.bin") == "../weights.bin");
  CHECK(ReadFile(out + "/model/sub/link.bin") == weights);

  // The loader's entry gives the runner the file by the link's name.
  auto load = Run("CARTON_CACHE_DIR='" + root.file("cache") + "' " + CartonBin() +
                  " load --json '" + carton + "'");
  INFO(load.err);
  REQUIRE(load.exit_code == 0);
  const auto key = load.out.find("\"root_dir\"");
  REQUIRE(key != std::string::npos);
  const auto start = load.out.find('"', load.out.find(':', key)) + 1;
  const std::string entry = load.out.substr(start, load.out.find('"', start) - start);
  CHECK(ReadFile(entry + "/model/sub/link.bin") == weights);
}

TEST_CASE("hostile: symlink entries that leave or misuse the carton are refused", "[hostile]") {
  const auto files = ValidCartonFiles();
  const std::string w = files.at("model/weights.bin");
  Check({"absolute target", WithSymlink(files, "model/l", "/etc/passwd", w),
         "model/l: symlink target \"/etc/passwd\" is absolute"});
  Check({"target with escape sequences", WithSymlink(files, "model/l", "\x1b]0;x\a/a\\b", w),
         "model/l: symlink target \"\\x1b]0;x\\x07/a\\\\b\" contains a backslash"});
  Check({"escaping target", WithSymlink(files, "model/link", "../../../etc", w),
         "model/link: symlink target \"../../../etc\" leaves model/"});
  Check({"escaping then back", WithSymlink(files, "model/l", "../model/weights.bin", w),
         "model/l: symlink target \"../model/weights.bin\" leaves model/"});
  Check({"missing target", WithSymlink(files, "model/l", "nothing.bin", w),
         "model/l: symlink target \"nothing.bin\" names model/nothing.bin, which is not in the "
         "archive"});
  auto with_dir = files;
  with_dir["model/sub/x"] = "x";
  Check({"directory target", WithSymlink(with_dir, "model/l", "sub", w),
         "model/l: symlink target \"sub\" names a directory"});
  Check({"model/ itself", WithSymlink(files, "model/l", ".", w),
         "model/l: symlink target \".\" names model/ itself"});
  std::vector<RawEntry> chain;
  {
    auto both = files;
    both["model/a"] = w;
    both["model/b"] = w;
    chain = CartonEntries(both);
    for (auto& e : chain) {
      if (e.name == "model/a") e.data = "weights.bin";
      if (e.name == "model/b") e.data = "a";
      if (e.name == "model/a" || e.name == "model/b") e.unix_mode = 0120777;
    }
  }
  Check({"symlink to a symlink", chain, "model/b: symlink target \"a\" names another symlink"});
  Check({"oversize target", WithSymlink(files, "model/l", std::string(5000, 'a'), w),
         "model/l: symlink target takes 5000 bytes, over the limit of 4096"});
  Check({"NUL in target", WithSymlink(files, "model/l", std::string("weights.bin\0x", 13), w),
         "model/l: symlink target contains a NUL byte"});
  Check({"outside model/", WithSymlink(files, "misc/l", "../model/weights.bin", w),
         "misc/l: symlink entries are allowed only under model/"});
  Check({"wrong MANIFEST sha256", WithSymlink(files, "model/l", "weights.bin", "other"),
         "model/l: symlink has sha256"});
  Check({"symlink then a file through it",
         With(Valid(), {Symlink("model/dir", "/tmp"), {"model/dir/x", "evil"}}),
         "entry \"model/dir/x\": uses the file entry \"model/dir\" as a directory"});
  Check({"symlink not in MANIFEST", With(Valid(), {Symlink("model/l", "weights.bin")}),
         "model/l: in the archive but not listed in MANIFEST"});
}

TEST_CASE("hostile: duplicate and overlapping entries are refused", "[hostile]") {
  Check({"duplicate", With(Valid(), {{"model/weights.bin", "again"}}),
         "entry \"model/weights.bin\": duplicate name"});
  auto twice = Valid();
  RawEntry alias{"model/alias.bin", twice[1].data};
  alias.same_data_as = 1;
  twice.insert(twice.begin() + 2, alias);
  Check({"two records, one data", twice, "entry \"model/alias.bin\": local header name"});
}

TEST_CASE("hostile: local headers that disagree with the central directory", "[hostile]") {
  auto name = Valid();
  name[1].local_name = "model/weightz.bin";
  Check({"name", name,
         "entry \"model/weights.bin\": local header name \"model/weightz.bin\" differs"});
  auto size = Valid();
  size[1].local_size = 40;
  Check({"size", size, "entry \"model/weights.bin\": local header (crc"});
  auto method = Valid();
  method[1].local_method = 8;
  Check({"method", method, "entry \"model/weights.bin\": local header method 8 differs"});
}

TEST_CASE("hostile: zip bombs are refused before anything is decoded", "[hostile]") {
  // Claimed: 1 MiB of zeros deflated (about 1 KiB) that says it is 1 TiB,
  // far past what deflate can encode in 1 KiB.
  auto claimed = Valid();
  claimed[1].data = Deflate(std::string(1 << 20, '\0'));
  claimed[1].method = 8;
  claimed[1].zip64_size = std::uint64_t{1} << 40;
  claimed[1].crc32 = 0;
  Check({"claimed, deflate", claimed,
         "entry \"model/weights.bin\": declares 1099511627776 bytes from " +
             std::to_string(claimed[1].data.size()) + ", more than the deflate ratio limit of " +
             std::to_string(kZipMaxDeflateRatio) + " to 1"});
  // A directory entry is held to its method's limit too.
  auto dir = With(Valid(), {{"model/", claimed[1].data}});
  dir.back().method = 8;
  dir.back().zip64_size = std::uint64_t{1} << 40;
  dir.back().crc32 = 0;
  Check({"claimed, a directory", dir,
         "entry \"model/\": declares 1099511627776 bytes from " +
             std::to_string(claimed[1].data.size()) + ", more than the deflate ratio limit"});
  // zstd: 64 MiB of zeros (about 2 KiB) that says it is 1 GiB, 16 times
  // what any zstd frame of that size can hold.
  claimed[1].data = Zstd(std::string(64 << 20, '\0'));
  claimed[1].method = 93;
  claimed[1].zip64_size = std::uint64_t{1} << 30;
  Check({"claimed, zstd", claimed,
         "entry \"model/weights.bin\": declares 1073741824 bytes from " +
             std::to_string(claimed[1].data.size()) + ", more than the zstd ratio limit of " +
             std::to_string(kZipMaxZstdRatio) + " to 1"});
  // Claimed together: four entries under the per-entry floor, each 1 MiB
  // of zeros deflated that says it is 15 MiB.
  auto files = ValidCartonFiles();
  for (int i = 0; i < 4; ++i) files["model/zeros" + std::to_string(i)] = std::string(1 << 20, '\0');
  auto entries = CartonEntries(files);
  std::uint64_t declared = 0, stored = 0;
  for (auto& e : entries) {
    if (e.name.rfind("model/zeros", 0) == 0) {
      e.crc32 = 0;
      e.size = 15 << 20;
      e.data = Deflate(e.data);
      e.method = 8;
    }
    declared += e.size.value_or(e.data.size());
    stored += e.data.size();
  }
  Check({"claimed together", entries,
         "the archive: its entries declare " + std::to_string(declared) + " bytes from " +
             std::to_string(stored) + ", more than their methods' ratio limits allow (deflate " +
             std::to_string(kZipMaxDeflateRatio) + ", zstd " + std::to_string(kZipMaxZstdRatio) +
             " to 1)"});
}

TEST_CASE("hostile: an honest zstd bomb is bounded by the total size and read limits",
          "[hostile]") {
  // Four real zstd entries of 15 MiB of zeros each, a few KiB in all: a
  // ratio zstd can reach, so the size limits answer it, before decoding.
  auto files = ValidCartonFiles();
  for (int i = 0; i < 4; ++i) {
    files["model/zeros" + std::to_string(i)] = std::string(15 << 20, '\0');
  }
  auto entries = CartonEntries(files);
  for (auto& e : entries) {
    if (e.name.rfind("model/zeros", 0) != 0) continue;
    e.crc32 = Crc32(e.data);
    e.size = e.data.size();
    e.data = Zstd(e.data);
    e.method = 93;
  }
  TempDir root;
  const std::string carton = root.file("x.carton");
  WriteBytes(carton, BuildZip(entries));
  REQUIRE(ZipReader::Open(carton).ok());
  ZipReaderOptions small;
  small.max_total_size = 32 << 20;
  auto z = ZipReader::Open(carton, small);
  REQUIRE_FALSE(z.ok());
  CHECK_THAT(z.status().message(),
             Catch::Contains(": the entries declare more than the limit of 33554432 bytes in all"));
  small = {};
  small.max_read_size = 1 << 20;
  z = ZipReader::Open(carton, small);
  REQUIRE(z.ok());
  auto read = z->Read("model/zeros0");
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(read.status().message(),
             Catch::Contains("entry \"model/zeros0\": size 15728640 exceeds the read limit"));
}

TEST_CASE("hostile: a zstd carton with a 64 MiB all-zero tensor packs, verifies and unpacks",
          "[hostile]") {
  // zstd compresses zeros about 32000 : 1, far past deflate's limit; such a
  // carton is legitimate and must not be taken for a bomb.
  TempDir root;
  const std::string model = root.file("model");
  for (const auto& [path, content] : ValidCartonFiles()) {
    fs::create_directories((fs::path(model) / path).parent_path());
    WriteBytes(model + "/" + path, AsBytes(content));
  }
  WriteBytes(model + "/model/zeros.bin", AsBytes(std::string(64 << 20, '\0')));
  const std::string carton = root.file("z.carton");
  const std::string bin = CartonBin();
  auto p = Run(bin + " pack --compression zstd " + Q(model) + " -o " + Q(carton));
  REQUIRE(p.exit_code == 0);
  auto zip = ZipReader::Open(carton);
  REQUIRE(zip.ok());
  const ZipEntry* e = zip->Find("model/zeros.bin");
  REQUIRE(e != nullptr);
  CHECK(e->method == 93);
  CHECK(e->size == 64 << 20);
  INFO("compressed to " << e->compressed_size << " bytes");
  CHECK(e->size / e->compressed_size > kZipMaxDeflateRatio);
  CHECK(e->size / e->compressed_size <= kZipMaxZstdRatio);
  auto v = Run(bin + " verify " + Q(carton));
  CHECK(v.exit_code == 0);
  CHECK(v.err.empty());
  auto u = Run(bin + " unpack " + Q(carton) + " " + Q(root.file("out")));
  REQUIRE(u.exit_code == 0);
  CHECK(fs::file_size(root.file("out/model/zeros.bin")) == 64 << 20);
}

TEST_CASE("hostile: damaged and unsupported archives", "[hostile]") {
  auto crc = Valid();
  crc[1].crc32 = 0x12345678;
  Check({"bad crc", crc, "entry \"model/weights.bin\": crc-32 mismatch", false});
  auto method = Valid();
  method[1].method = 12;
  method[1].local_method = 12;
  Check({"unknown method", method,
         "model/weights.bin: compression method 12 is not stored, deflate or zstd"});
  auto encrypted = Valid();
  encrypted[1].flags = 1;
  Check({"encrypted", encrypted, "model/weights.bin: encrypted entries are not allowed"});
  auto zip64 = Valid();
  zip64[1].zip64_size = std::uint64_t{1} << 33;
  Check({"zip64 size that lies", zip64, "entry \"model/weights.bin\""});
  Check({"central directory outside the file",
         Valid(),
         "central directory at offset 4294967",
         true,
         {.cd_offset = 0xFFFFFFF0}});

  TempDir dir;
  auto bytes = BuildZip(Valid());
  for (std::size_t cut : {bytes.size() / 2, bytes.size() - 1, std::size_t{10}}) {
    auto truncated = bytes;
    truncated.resize(cut);
    const std::string path = dir.file("cut.carton");
    WriteBytes(path, truncated);
    auto v = Run(CartonBin() + " verify " + Q(path));
    CHECK(v.exit_code == 1);
    CHECK_THAT(v.err, Catch::Contains("cut.carton"));
    auto u = Run(CartonBin() + " unpack " + Q(path) + " " + Q(dir.file("out")));
    CHECK(u.exit_code == 1);
    CHECK_FALSE(fs::exists(dir.file("out")));
    auto i = Run(CartonBin() + " info " + Q(path));
    CHECK(i.exit_code == 1);
  }
}

TEST_CASE("hostile: MANIFEST and LINKS that do not match the archive", "[hostile]") {
  auto files = ValidCartonFiles();
  std::vector<RawEntry> twice;
  for (const auto& [path, content] : files) twice.push_back({path, content});
  std::string m = ManifestFor(files);
  twice.push_back({"MANIFEST", m + m.substr(m.find('\n') + 1)});
  Check({"listed twice", twice, "MANIFEST line 3: duplicate path \"model/weights.bin\""});

  Check({"file not listed", With(Valid(), {{"model/extra.bin", "x"}}),
         "model/extra.bin: in the archive but not listed in MANIFEST"});

  auto listed = files;
  listed["model/gone.bin"] = "gone";
  std::vector<RawEntry> missing;
  for (const auto& [path, content] : files) missing.push_back({path, content});
  missing.push_back({"MANIFEST", ManifestFor(listed)});
  Check({"file missing", missing, "model/gone.bin: listed in MANIFEST but "});

  auto wrong = Valid();
  wrong[1].data = std::string(4000, 'x');
  Check({"hash mismatch", wrong, "model/weights.bin: sha256 ", false});

  std::vector<RawEntry> uncovered = missing;
  uncovered.push_back({"LINKS", "version = 1\n[urls]\n"});
  Check({"LINKS does not cover a missing file", uncovered,
         "the archive, and LINKS has no url for its sha256"});
  Check({"LINKS not valid", With(Valid(), {{"LINKS", "version = 1\n[urls]\nx = 1\n"}}),
         "key \"x\" is not a sha256"});
}

TEST_CASE("hostile: a LINKS hash that names no MANIFEST file is refused by every reader",
          "[hostile]") {
  // Stricter than the spec (carton/FORMAT.md K3): every LINKS hash must be
  // the sha256 of a MANIFEST file. Nothing is fetched for a stray one.
  const std::string stranger = manifest::ToHex(manifest::Sha256Of(AsBytes("stranger")));
  const std::string rule = "LINKS: sha256 " + stranger + " names no file in MANIFEST";
  Check({"stray hash",
         With(Valid(),
              {{"LINKS", "version = 1\n[urls]\n" + stranger + " = [\"http://127.0.0.1:1/x\"]\n"}}),
         rule});

  // Beside a hash that covers a linked file, the stray one is still refused.
  auto files = ValidCartonFiles();
  const std::string weights = files.at("model/weights.bin");
  const std::string covered = manifest::ToHex(manifest::Sha256Of(AsBytes(weights)));
  std::vector<RawEntry> linked;
  for (const auto& [path, content] : files) {
    if (path != "model/weights.bin") linked.push_back({path, content});
  }
  linked.push_back({"MANIFEST", ManifestFor(files)});
  linked.push_back({"LINKS", "version = 1\n[urls]\n" + covered + " = [\"http://127.0.0.1:1/w\"]\n" +
                                 stranger + " = [\"http://127.0.0.1:1/x\"]\n"});
  Check({"stray hash beside a linked file", linked, rule});

  // The same LINKS without the stray hash is accepted (no fetch needed).
  TempDir root;
  const std::string carton = root.file("ok.carton");
  linked.back().data = "version = 1\n[urls]\n" + covered + " = [\"http://127.0.0.1:1/w\"]\n";
  WriteBytes(carton, BuildZip(linked));
  auto v = Verify(*testing::SourceFor(carton));
  REQUIRE(v.ok());
  for (const auto& p : v->problems) UNSCOPED_INFO(p.where << ": " << p.message);
  CHECK(v->ok());
  CHECK(v->linked_files == 1);
  CHECK(testing::SourceFor(carton)->Info().ok());
}

TEST_CASE("hostile: a valid crafted carton passes, so the cases above fail for their reason",
          "[hostile]") {
  TempDir root;
  const std::string carton = root.file("ok.carton");
  WriteBytes(carton, BuildZip(Valid()));
  auto verify = Verify(*testing::SourceFor(carton));
  REQUIRE(verify.ok());
  for (const auto& p : verify->problems) UNSCOPED_INFO(p.where << ": " << p.message);
  CHECK(verify->ok());
  CHECK(testing::SourceFor(carton)->Info().ok());
  REQUIRE(Unpack(*testing::SourceFor(carton), root.file("out")).ok());
  CHECK(ListTree(root.file("out")) ==
        std::vector<std::string>{"MANIFEST", "carton.toml", "model/", "model/weights.bin"});
}

TEST_CASE("hostile: archive limits are options, and unpack checks free space first", "[hostile]") {
  TempDir root;
  const std::string carton = root.file("x.carton");
  WriteBytes(carton, BuildZip(Valid()));
  ZipReaderOptions small;
  small.max_total_size = 100;
  auto z = ZipReader::Open(carton, small);
  REQUIRE_FALSE(z.ok());
  CHECK_THAT(z.status().message(), Catch::Contains("more than the limit of 100 bytes in all"));
  small = {};
  small.max_entries = 2;
  z = ZipReader::Open(carton, small);
  REQUIRE_FALSE(z.ok());
  CHECK_THAT(z.status().message(), Catch::Contains("3 entries, more than the limit of 2"));
  for (const auto& [method, name] : {std::pair<std::uint16_t, std::string>{8, "deflate"},
                                     std::pair<std::uint16_t, std::string>{93, "zstd"}}) {
    small = {};
    small.ratio_min_size = 0;
    (method == 8 ? small.max_deflate_ratio : small.max_zstd_ratio) = 1;
    auto entries = CartonEntries(ValidCartonFiles());
    entries[1].size = entries[1].data.size();
    entries[1].crc32 = Crc32(entries[1].data);
    entries[1].data = method == 8 ? Deflate(entries[1].data) : Zstd(entries[1].data);
    entries[1].method = method;
    WriteBytes(carton, BuildZip(entries));
    REQUIRE(ZipReader::Open(carton).ok());
    z = ZipReader::Open(carton, small);
    REQUIRE_FALSE(z.ok());
    CHECK_THAT(z.status().message(),
               Catch::Contains("entry \"model/weights.bin\": declares 4000 bytes from " +
                               std::to_string(entries[1].data.size()) + ", more than the " + name +
                               " ratio limit of 1 to 1"));
  }

  // A claimed size past the free space: refused before anything is written.
  auto claimed = Valid();
  claimed[1].data = Deflate(std::string(4000, 'w'));
  claimed[1].method = 8;
  claimed[1].zip64_size = std::uint64_t{1} << 55;
  WriteBytes(carton, BuildZip(claimed));
  SourceOptions options;
  options.limits.zip.max_deflate_ratio = ~std::uint64_t{0};
  options.limits.zip.max_total_size = ~std::uint64_t{0};
  Status s = Unpack(*testing::SourceFor(carton, {}, options), root.file("out")).status();
  CHECK(s.code() == StatusCode::kIoError);
  CHECK_THAT(s.message(), Catch::Contains("are free there"));
  CHECK(ListTree(root.path().string()) == std::vector<std::string>{"x.carton"});
}

// carton.toml's rules hold on every path that reads a carton: what verify
// refuses, unpack refuses before writing anything, and load refuses before
// the carton enters the cache.
TEST_CASE("hostile: unpack and load hold carton.toml to verify's rules", "[hostile][config]") {
  std::string big = "spec_version = 1\n";
  while (big.size() < (std::size_t{1} << 20) + 100) big += "# padding padding padding\n";
  std::string dotted = "spec_version = 1\n";
  for (int i = 0; i < 50000; ++i) dotted += i == 0 ? "a" : ".a";
  dotted += " = 1\n";
  const std::vector<std::pair<std::string, std::string>> tomls = {
      {big, "carton.toml: 1048"},
      {"spec_version = 1\n[runner\n", "carton.toml:2:"},
      {dotted, "carton.toml:2:"},
  };
  for (const auto& [toml, want] : tomls) {
    auto files = ValidCartonFiles();
    files["carton.toml"] = toml;
    const auto entries = CartonEntries(files);
    Check({"carton.toml " + want, entries, want});

    // load: exit 1 naming the rule; the cache holds no entry, and what it
    // holds verifies.
    TempDir root;
    const std::string carton = root.file("x.carton");
    WriteBytes(carton, BuildZip(entries));
    const std::string cache = "CARTON_CACHE_DIR=" + Q(root.file("cache")) + " ";
    auto load = Run(cache + CartonBin() + " load " + Q(carton));
    CHECK(load.exit_code == 1);
    CHECK_THAT(load.err, Catch::Contains(want));
    const bool entries_made =
        fs::exists(root.file("cache/cartons")) && !ListTree(root.file("cache/cartons")).empty();
    CHECK_FALSE(entries_made);
    auto again = Run(cache + CartonBin() + " load " + Q(carton));
    CHECK(again.exit_code == 1);
    CHECK(Run(cache + CartonBin() + " cache verify").exit_code == 0);
  }
}

// What verify accepts, unpack can write: a path too long for the file
// system is refused by both, with the same rule.
TEST_CASE("hostile: a path too long to unpack is refused by verify too", "[hostile][paths]") {
  std::string deep = "model/";
  while (deep.size() < 59000) deep += "dir/";
  Check({"59 KB path", With(Valid(), {{deep + "x", "deep"}}), "more than the limit of 1024"});
  Check({"256-byte component", With(Valid(), {{"model/" + std::string(256, 'n'), "long"}}),
         "a component of 256 bytes, more than the limit of 255"});
}

// A rule broken thousands of times is shown a hundred times and counted,
// not printed thousands of times; --json still lists every problem.
TEST_CASE("hostile: verify shows the first problems of many and counts the rest",
          "[hostile][verify]") {
  auto files = ValidCartonFiles();
  auto listed = files;
  for (int i = 0; i < 5000; ++i) listed["model/missing-" + std::to_string(i)] = "x";
  std::vector<RawEntry> entries;
  for (const auto& e : CartonEntries(files)) {
    if (e.name != "MANIFEST") entries.push_back(e);
  }
  RawEntry manifest;
  manifest.name = "MANIFEST";
  manifest.data = ManifestFor(listed);
  entries.push_back(manifest);
  TempDir root;
  const std::string carton = root.file("x.carton");
  WriteBytes(carton, BuildZip(entries));
  auto v = Run(CartonBin() + " verify " + Q(carton));
  CHECK(v.exit_code == 1);
  const auto lines = std::count(v.err.begin(), v.err.end(), '\n');
  CHECK(lines <= 101);
  CHECK_THAT(v.err,
             Catch::Contains("5000 problems; the first 100 follow (--json lists every one)"));
  auto j = Run(CartonBin() + " verify --json " + Q(carton));
  CHECK(j.exit_code == 1);
  CHECK(j.out.find("model/missing-4999") != std::string::npos);
}
