// The loader and the manifest-hash cache: misses, hits, zero-copy views,
// damage, concurrency, gc.
#include "carton/loader/loader.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "carton/format/tensor_data.h"
#include "carton/loader/cache.h"
#include "carton/zip/reader.h"
#include "loader/loader_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

bool Inside(ByteView inner, ByteView outer) {
  return !outer.empty() && inner.data() >= outer.data() &&
         inner.data() + inner.size() <= outer.data() + outer.size();
}

std::size_t CountEntries(const std::string& cache) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache + "/cartons", ec)) {
    (void)e;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("loader: a miss materializes the carton, a hit finds it by MANIFEST", "[loader]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string hash = PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"));

  auto first = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(first.ok());
  CHECK_FALSE(first->stats().cache_hit);
  CHECK(first->stats().bytes_hashed > 4096);
  CHECK(manifest::ToHex(*first->manifest_hash()) == hash);
  CHECK(first->root_dir() == tmp.file("cache") + "/cartons/" + hash);
  CHECK(first->model_dir() == first->root_dir() + "/model");
  CHECK(ReadText(first->model_dir() + "/notes.txt") == "notes\n");
  CHECK(fs::file_size(first->model_dir() + "/weights.safetensors") > 4096);
  CHECK(first->config().model_name == "loader-test");

  const loader::Tensor* x = first->FindTensor("x");
  REQUIRE(x != nullptr);
  CHECK(x->shape == std::vector<std::uint64_t>{4});
  float f0;
  std::memcpy(&f0, x->data.data(), 4);
  CHECK(f0 == 1.5f);
  const loader::Tensor* labels = first->FindTensor("labels");
  REQUIRE(labels != nullptr);
  CHECK(labels->strings == std::vector<std::string>{"first", "second"});
  REQUIRE(first->self_tests().size() == 1);
  CHECK(first->self_tests()[0].name == "echo");
  REQUIRE(first->self_tests()[0].inputs.size() == 2);
  CHECK(first->self_tests()[0].inputs[0].name == "x");  // declared order
  REQUIRE(first->examples().size() == 1);
  REQUIRE(first->examples()[0].input_files.size() == 1);
  CHECK(first->examples()[0].input_files[0].second.path == "misc/readme.md");
  REQUIRE(first->misc_files().size() == 1);
  REQUIRE(first->model_safetensors().size() == 1);
  CHECK(first->model_safetensors()[0].file->Find("w") != nullptr);

  auto second = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(second.ok());
  CHECK(second->stats().cache_hit);
  CHECK(second->stats().bytes_hashed == 0);
  CHECK(second->root_dir() == first->root_dir());

  // A copy under another name is the same model: a hit, with views from
  // the entry (its bytes were never hashed).
  fs::copy_file(tmp.file("m.carton"), tmp.file("copy.carton"));
  auto copy = testing::LoadAt(tmp.file("copy.carton"));
  REQUIRE(copy.ok());
  CHECK(copy->stats().cache_hit);
  CHECK_FALSE(copy->stats().mapped_from_carton);
  CHECK(copy->carton_mapping().empty());
  CHECK(CountEntries(tmp.file("cache")) == 1);
}

TEST_CASE("loader: a hit reads only the end of the .carton and MANIFEST", "[loader]") {
  // A copy whose every byte before MANIFEST is zeroed (every other local
  // header and all file data) still hits: the lookup reads the end
  // records, the central directory and MANIFEST, and the model comes from
  // the entry, which was verified when it was made.
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 64 * 1024), tmp.file("m.carton"));
  REQUIRE(testing::LoadAt(tmp.file("m.carton")).ok());

  std::uint64_t end = 0;
  {
    auto zip = ZipReader::Open(tmp.file("m.carton"));
    REQUIRE(zip.ok());
    for (const auto& e : zip->entries()) {
      if (e.name == "MANIFEST" || e.is_dir) continue;
      auto offset = zip->DataOffset(e.name);
      REQUIRE(offset.ok());
      end = std::max(end, *offset + e.compressed_size);
    }
  }
  std::string bytes = ReadText(tmp.file("m.carton"));
  REQUIRE(end > 64 * 1024);
  REQUIRE(end < bytes.size());
  std::fill(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(end), '\0');
  WriteBytes(tmp.file("wiped.carton"), AsBytes(bytes));
  REQUIRE_FALSE(ZipReader::Open(tmp.file("wiped.carton")).ok());

  manifest::Digest hash{};
  {
    auto hit = testing::LoadAt(tmp.file("wiped.carton"));
    REQUIRE(hit.ok());
    CHECK(hit->stats().cache_hit);
    hash = *hit->manifest_hash();
    const loader::Tensor* x = hit->FindTensor("x");
    REQUIRE(x != nullptr);
    float f0;
    std::memcpy(&f0, x->data.data(), 4);
    CHECK(f0 == 1.5f);
    REQUIRE(hit->model_safetensors().size() == 1);
    CHECK(hit->model_safetensors()[0].file->Find("w") != nullptr);
  }

  // Without the entry, the same file is read in full and refused.
  REQUIRE(loader::CartonCache(tmp.file("cache")).Remove(hash).ok());
  CHECK_FALSE(testing::LoadAt(tmp.file("wiped.carton")).ok());
}

TEST_CASE("loader: stored tensors are views into the mapping of the .carton",
          "[loader][zerocopy]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 100000), tmp.file("m.carton"), PackCompression::kStored);
  fs::copy_file(tmp.file("m.carton"), tmp.file("copy.carton"));
  struct stat original;
  REQUIRE(::stat(tmp.file("m.carton").c_str(), &original) == 0);
  // The miss, a hit on the same file, and a hit on a copy: all map the
  // verified .carton (the entry holds a hard link to its inode).
  for (const char* name : {"m.carton", "m.carton", "copy.carton"}) {
    auto c = testing::LoadAt(tmp.file(name));
    REQUIRE(c.ok());
    CHECK(c->stats().mapped_from_carton);
    ByteView mapping = c->carton_mapping();
    REQUIRE(mapping.size() == fs::file_size(tmp.file("m.carton")));
    struct stat linked;
    REQUIRE(::stat((c->root_dir() + "/.carton-source.carton").c_str(), &linked) == 0);
    CHECK(linked.st_ino == original.st_ino);
    const loader::Tensor* big = c->FindTensor("big");
    REQUIRE(big != nullptr);
    CHECK(big->data.size() == 400000);
    CHECK(Inside(big->data, mapping));
    auto w = c->model_safetensors()[0].file->Get("w");
    REQUIRE(w.ok());
    CHECK(w->data.size() == 400000);
    CHECK(Inside(w->data, mapping));
    // Small files are plain copies in the entry; large mapped ones are
    // viewed in the mapping and are files of the entry too, so every file
    // of MANIFEST is in the directory load prints.
    CHECK_FALSE(Inside(c->FindTensor("x")->data, mapping));
    CHECK(testing::ReadText(c->model_dir() + "/weights.safetensors") ==
          testing::ReadText(tmp.file("m/model/weights.safetensors")));
  }
  // Deleting the original does not affect the entry.
  fs::remove(tmp.file("m.carton"));
  auto c = testing::LoadAt(tmp.file("copy.carton"));
  REQUIRE(c.ok());
  CHECK(c->stats().cache_hit);
  CHECK(Inside(c->FindTensor("big")->data, c->carton_mapping()));
}

TEST_CASE("loader: a mapped .carton changed in place is damage and the entry is rebuilt",
          "[loader][zerocopy][corrupt]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string hash = PackDir(MakeModelDir(tmp.file("m"), 100000), tmp.file("m.carton"));
  fs::copy_file(tmp.file("m.carton"), tmp.file("pristine.carton"));
  REQUIRE(testing::LoadAt(tmp.file("m.carton")).ok());
  // Rewrite a byte of the weights in place (same inode, new mtime).
  {
    std::fstream f(tmp.file("m.carton"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(tmp.file("m.carton")) / 4));
    f.put('\x7f');
  }
  loader::CartonCache cc(tmp.file("cache"));
  auto v = cc.Verify(*manifest::ParseHex(hash));
  REQUIRE(v.ok());
  CHECK_FALSE(v->ok());
  auto bad = testing::LoadAt(tmp.file("m.carton"));  // rebuilding from it fails its hash
  CHECK(bad.status().code() == StatusCode::kCorrupt);
  auto good = testing::LoadAt(tmp.file("pristine.carton"));
  REQUIRE(good.ok());
  CHECK_FALSE(good->stats().cache_hit);
  CHECK(cc.Verify(*manifest::ParseHex(hash))->ok());
}

TEST_CASE("loader: compressed files are decoded into the cache and mapped from there",
          "[loader][zerocopy]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 100000), tmp.file("m.carton"), PackCompression::kZstd);
  auto c = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(c.ok());
  CHECK(c->stats().bytes_decoded > 400000);
  CHECK(c->stats().bytes_copied == 0);
  auto w = c->model_safetensors()[0].file->Get("w");
  REQUIRE(w.ok());
  CHECK_FALSE(Inside(w->data, c->carton_mapping()));
  float v;
  std::memcpy(&v, w->data.data() + 4 * 3, 4);
  CHECK(v == 1.5f);
}

TEST_CASE("loader: a carton whose file breaks its MANIFEST hash is refused and no entry remains",
          "[loader][corrupt]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"), PackCompression::kStored);
  std::string bytes = ReadText(tmp.file("m.carton"));
  auto pos = bytes.find("notes\n");
  REQUIRE(pos != std::string::npos);
  bytes[pos] = 'N';
  WriteBytes(tmp.file("m.carton"), AsBytes(bytes));
  auto c = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(c.status().message(), Catch::Contains("model/notes.txt: sha256"));
  CHECK(CountEntries(tmp.file("cache")) == 0);
}

TEST_CASE("loader: a carton whose LINKS names a hash MANIFEST does not list is refused",
          "[loader][corrupt]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"), PackCompression::kStored);
  const std::string stray = std::string(64, 'a');
  fs::create_directories(tmp.file("links"));
  WriteBytes(tmp.file("links/LINKS"),
             AsBytes("version = 1\n[urls]\n" + stray + " = [\"https://example.com/x\"]\n"));
  REQUIRE(Run("cd '" + tmp.file("links") + "' && zip -q '" + tmp.file("m.carton") + "' LINKS")
              .exit_code == 0);
  auto c = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(c.status().message(), Catch::Contains(tmp.file("m.carton") + ": LINKS: sha256 " +
                                                   stray + " names no file in MANIFEST"));
  CHECK(CountEntries(tmp.file("cache")) == 0);
}

TEST_CASE("loader: a damaged cache entry is detected by verify and by a load, and rebuilt",
          "[loader][corrupt]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string hash = PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"));
  std::string root;
  {
    auto c = testing::LoadAt(tmp.file("m.carton"));
    REQUIRE(c.ok());
    root = c->root_dir();
  }
  loader::CartonCache cc(tmp.file("cache"));
  auto ok = cc.Verify(*manifest::ParseHex(hash));
  REQUIRE(ok.ok());
  CHECK(ok->ok());

  SECTION("a flipped byte: cache verify names the file; a verifying load rebuilds") {
    WriteBytes(root + "/model/notes.txt", AsBytes("NOTES\n"));
    auto v = cc.Verify(*manifest::ParseHex(hash));
    REQUIRE(v.ok());
    REQUIRE(v->problems.size() == 1);
    CHECK_THAT(v->problems[0], Catch::StartsWith("model/notes.txt: sha256"));
    auto cli = Run("CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + CartonBin() + " cache verify");
    CHECK(cli.exit_code == 1);
    CHECK_THAT(cli.err, Catch::Contains("model/notes.txt: sha256"));

    loader::LoadOptions o;
    o.verify_cache_hit = true;
    auto c = testing::LoadAt(tmp.file("m.carton"), o);
    REQUIRE(c.ok());
    CHECK_FALSE(c->stats().cache_hit);
    CHECK(ReadText(c->model_dir() + "/notes.txt") == "notes\n");
  }
  SECTION("a truncated or missing file: any load notices and rebuilds") {
    fs::resize_file(root + "/model/weights.safetensors", 10);
    fs::remove(root + "/tensor_data/index.toml");
    auto c = testing::LoadAt(tmp.file("m.carton"));
    REQUIRE(c.ok());
    CHECK_FALSE(c->stats().cache_hit);
    CHECK(fs::file_size(c->model_dir() + "/weights.safetensors") > 4096);
  }
  SECTION("an entry loaded by its directory (as runners do) has no source to rebuild from") {
    WriteBytes(root + "/model/notes.txt", AsBytes("NOTES\n"));  // same size
    CHECK(testing::LoadAt(root).ok());                          // the quick check cannot see this
    loader::LoadOptions o;
    o.verify_cache_hit = true;
    auto v = testing::LoadAt(root, o);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(v.status().message(), Catch::Contains("model/notes.txt: sha256"));
    fs::resize_file(root + "/model/notes.txt", 1);
    auto q = testing::LoadAt(root);
    REQUIRE_FALSE(q.ok());
    CHECK_THAT(q.status().message(), Catch::Contains("model/notes.txt: 1 bytes"));
  }
  CHECK(CountEntries(tmp.file("cache")) == 1);
}

TEST_CASE("loader: eight processes loading one carton at once materialize it once",
          "[loader][concurrency]") {
  TempDir tmp;
  std::string hash = PackDir(MakeModelDir(tmp.file("m"), 2'000'000), tmp.file("m.carton"));
  std::string cmd;
  for (int i = 0; i < 8; ++i) {
    std::string n = std::to_string(i);
    cmd += "( CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + CartonBin() + " load --json '" +
           tmp.file("m.carton") + "' > '" + tmp.file("out" + n) + "'; echo $? > '" +
           tmp.file("rc" + n) + "' ) & ";
  }
  cmd += "wait";
  REQUIRE(Run(cmd).exit_code == 0);
  for (int i = 0; i < 8; ++i) CHECK(ReadText(tmp.file("rc" + std::to_string(i))) == "0\n");
  int misses = 0;
  for (int i = 0; i < 8; ++i) {
    auto j = nlohmann::json::parse(ReadText(tmp.file("out" + std::to_string(i))));
    CHECK(j["manifest_hash"] == hash);
    if (!j["cache_hit"].get<bool>()) ++misses;
  }
  CHECK(misses == 1);
  CHECK(CountEntries(tmp.file("cache")) == 1);  // no temporary directory left
  loader::CartonCache cc(tmp.file("cache"));
  auto v = cc.Verify(*manifest::ParseHex(hash));
  REQUIRE(v.ok());
  CHECK(v->ok());
}

TEST_CASE("loader: a killed load leaves nothing a later load uses", "[loader][concurrency]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string hash = PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"));
  // What a load killed while materializing leaves: a temporary directory
  // (its lock died with it).
  std::string stale = tmp.file("cache") + "/cartons/.tmp-" + hash + "-99999-1";
  fs::create_directories(stale + "/model");
  WriteBytes(stale + "/model/notes.txt", AsBytes("partial"));
  auto c = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(c.ok());
  CHECK_FALSE(c->stats().cache_hit);
  CHECK(ReadText(c->model_dir() + "/notes.txt") == "notes\n");
  CHECK_FALSE(fs::exists(stale));

  // A real process killed mid-load: the next load still works.
  TempDir big;
  std::string big_hash = PackDir(MakeModelDir(big.file("m"), 12'000'000), big.file("m.carton"));
  auto r = Run("CARTON_CACHE_DIR='" + tmp.file("cache") + "' timeout -s KILL 0.05 " + CartonBin() +
               " load '" + big.file("m.carton") + "' 2>/dev/null");
  (void)r;  // killed or finished; either way the next load is good
  auto again = testing::LoadAt(big.file("m.carton"));
  REQUIRE(again.ok());
  loader::CartonCache cc(tmp.file("cache"));
  auto v = cc.Verify(*manifest::ParseHex(big_hash));
  REQUIRE(v.ok());
  CHECK(v->ok());
}

TEST_CASE("loader: cache list, rm and gc, and gc keeps entries in use", "[loader][cache]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string a = PackDir(MakeModelDir(tmp.file("a")), tmp.file("a.carton"));
  std::string b = PackDir(MakeModelDir(tmp.file("b"), 5000), tmp.file("b.carton"));
  loader::CartonCache cc(tmp.file("cache"));
  {
    auto la = testing::LoadAt(tmp.file("a.carton"));
    REQUIRE(la.ok());
  }
  auto held = testing::LoadAt(tmp.file("b.carton"));
  REQUIRE(held.ok());
  auto list = cc.List();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK(list->at(0).model_name == "loader-test");

  auto rm = cc.Remove(*manifest::ParseHex(b));
  CHECK(rm.code() == StatusCode::kInvalidArgument);  // in use

  auto gc = cc.Gc(0);
  REQUIRE(gc.ok());
  CHECK(gc->removed == std::vector<std::string>{a});
  CHECK(gc->skipped_in_use == std::vector<std::string>{b});
  CHECK(fs::exists(held->model_dir() + "/notes.txt"));

  held = Status(StatusCode::kNotFound, "released");
  CHECK(cc.Remove(*manifest::ParseHex(b)).ok());
  CHECK(cc.List()->empty());
  CHECK(cc.Remove(*manifest::ParseHex(b)).code() == StatusCode::kNotFound);

  auto cli = Run("CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + CartonBin() + " load '" +
                 tmp.file("a.carton") + "' && CARTON_CACHE_DIR='" + tmp.file("cache") + "' " +
                 CartonBin() + " cache list && CARTON_CACHE_DIR='" + tmp.file("cache") + "' " +
                 CartonBin() + " cache rm " + a + " && CARTON_CACHE_DIR='" + tmp.file("cache") +
                 "' " + CartonBin() + " cache gc --max-size 1G");
  CHECK(cli.exit_code == 0);
  CHECK_THAT(cli.out, Catch::Contains(tmp.file("cache") + "/cartons/" + a + "/model\n"));
  CHECK_THAT(cli.out, Catch::Contains(a + "  "));
  CHECK(cc.List()->empty());
}

TEST_CASE("loader: sizes for gc", "[loader][cache]") {
  CHECK(*loader::ParseSize("0") == 0);
  CHECK(*loader::ParseSize("1500") == 1500);
  CHECK(*loader::ParseSize("10K") == 10240);
  CHECK(*loader::ParseSize("2G") == (2ull << 30));
  CHECK(*loader::ParseSize("2GiB") == (2ull << 30));
  CHECK(*loader::ParseSize("512MB") == (512ull << 20));
  CHECK(loader::ParseSize("").status().code() == StatusCode::kInvalidArgument);
  CHECK(loader::ParseSize("1X").status().code() == StatusCode::kInvalidArgument);
  CHECK(loader::ParseSize("99999999999999999999").status().code() == StatusCode::kInvalidArgument);
  CHECK(loader::ParseSize("20000000T").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("loader: unpacked directories and model folders load in place", "[loader]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string dir = MakeModelDir(tmp.file("m"));
  auto c = testing::LoadAt(dir);
  REQUIRE(c.ok());
  CHECK(c->root_dir() == dir);
  CHECK_FALSE(c->manifest_hash().has_value());
  CHECK(c->self_tests().size() == 1);

  auto u = loader::LoadUnpacked(dir + "/model", "torchscript", "=1.12.1");
  REQUIRE(u.ok());
  CHECK(u->model_dir() == dir + "/model");
  CHECK(u->config().runner.runner_name == "torchscript");
  CHECK(loader::LoadUnpacked(dir + "/model", "", "=1").status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(loader::LoadUnpacked(dir + "/model", "x", "not a version").status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(loader::LoadUnpacked(tmp.file("none"), "x", "=1").status().code() == StatusCode::kNotFound);
  CHECK(CountEntries(tmp.file("cache")) == 0);
}

TEST_CASE("loader: URLs go through the remote seam", "[loader]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  // Nothing listens on port 1: a network error naming the URL, no entry.
  auto c = testing::LoadAt("http://127.0.0.1:1/m.carton");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == StatusCode::kNetworkError);
  CHECK_THAT(c.status().message(), Catch::Contains("127.0.0.1:1"));
  CHECK(CountEntries(tmp.file("cache")) == 0);
}

TEST_CASE("loader: a source's Info reads metadata without caching", "[loader]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  std::string hash = PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"));
  auto source = OpenSource(tmp.file("m.carton"), Environment{});
  REQUIRE(source.ok());
  auto info = (*source)->Info();
  REQUIRE(info.ok());
  CHECK(manifest::ToHex(info->manifest_hash) == hash);
  CHECK(info->config.runner.runner_name == "noop");
  CHECK(CountEntries(tmp.file("cache")) == 0);
}

TEST_CASE("loader: nested tensors are ordered lists of inner tensor views", "[loader][nested]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  // A tensor_data index as the spec shows it: a nested entry naming other
  // entries, one of them large enough to be mapped from the .carton.
  std::string dir = MakeModelDir(tmp.file("m"));
  std::vector<float> row0 = {1, 2, 3};
  std::vector<float> row1(20'000, 0.25f);
  WriteBytes(dir + "/tensor_data/row0.bin", EncodeNumeric<float>(row0));
  WriteBytes(dir + "/tensor_data/row1.bin", EncodeNumeric<float>(row1));
  WriteBytes(dir + "/tensor_data/words.toml", AsBytes("data = [\"a\", \"bc\"]\n"));
  std::string index = ReadText(dir + "/tensor_data/index.toml");
  index +=
      "\n[[tensor]]\nname = \"ragged\"\ndtype = \"nested\"\ninner = [\"row1\", \"row0\", "
      "\"words\"]\n"
      "[[tensor]]\nname = \"row0\"\ndtype = \"float32\"\nshape = [3]\nfile = \"row0.bin\"\n"
      "[[tensor]]\nname = \"row1\"\ndtype = \"float32\"\nshape = [100, 200]\nfile = \"row1.bin\"\n"
      "[[tensor]]\nname = \"words\"\ndtype = \"string\"\nshape = [2]\nfile = \"words.toml\"\n"
      "[[tensor]]\nname = \"pair\"\ndtype = \"nested\"\ninner = [\"row0\", \"row0\"]\n";
  WriteBytes(dir + "/tensor_data/index.toml", AsBytes(index));
  PackDir(dir, tmp.file("m.carton"), PackCompression::kStored);

  auto check = [](const loader::LoadedCarton& c, bool mapped) {
    REQUIRE(c.nested_tensors().size() == 2);
    const loader::NestedTensor* ragged = c.FindNestedTensor("ragged");
    REQUIRE(ragged == &c.nested_tensors()[0]);
    REQUIRE(ragged->inner.size() == 3);
    CHECK(ragged->inner[0].name == "row1");
    CHECK(ragged->inner[0].shape == std::vector<std::uint64_t>{100, 200});
    CHECK(ragged->inner[0].data.size() == 80'000);
    CHECK(ragged->inner[1].name == "row0");
    REQUIRE(ragged->inner[1].data.size() == 12);
    float f;
    std::memcpy(&f, ragged->inner[1].data.data() + 8, 4);
    CHECK(f == 3.0f);
    CHECK(ragged->inner[2].dtype == DataType::kString);
    CHECK(ragged->inner[2].strings == std::vector<std::string>{"a", "bc"});
    // The same bytes as the plain tensors of the same names.
    CHECK(ragged->inner[0].data.data() == c.FindTensor("row1")->data.data());
    CHECK(Inside(ragged->inner[0].data, c.carton_mapping()) == mapped);
    const loader::NestedTensor* pair = c.FindNestedTensor("pair");
    REQUIRE(pair != nullptr);
    REQUIRE(pair->inner.size() == 2);
    CHECK(pair->inner[0].data.data() == pair->inner[1].data.data());
    CHECK(c.FindNestedTensor("row0") == nullptr);
    CHECK(c.FindTensor("ragged") == nullptr);
    // The existing list is unchanged: every non-nested tensor.
    CHECK(c.tensors().size() == 6);
  };
  auto miss = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(miss.ok());
  check(*miss, true);
  auto hit = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(hit.ok());
  CHECK(hit->stats().cache_hit);
  check(*hit, true);
  auto unpacked = testing::LoadAt(dir);
  REQUIRE(unpacked.ok());
  check(*unpacked, false);
}
