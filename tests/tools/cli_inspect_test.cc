// ls, cat, diff; unpack without DIR; several MODELs for verify, info and
// hash; messages that name the user's paths.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "nginx_testing.h"
#include "testing.h"

using carton::testing::Run;
using carton::testing::TempDir;
namespace fs = std::filesystem;

using carton::testing::WriteText;

namespace {

std::string Bin() { return carton::testing::CartonBin(); }
std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Config(const std::string& name) {
  return "spec_version = 1\nmodel_name = \"" + name +
         "\"\n[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
         "runner_compat_version = 1\n";
}

// Packs a folder holding carton.toml and `files` under model/.
std::string Pack(const TempDir& tmp, const std::string& name,
                 const std::map<std::string, std::string>& files,
                 const std::string& model_name = "inspect") {
  const std::string dir = tmp.file(name);
  WriteText(dir + "/carton.toml", Config(model_name));
  for (const auto& [path, text] : files) WriteText(dir + "/model/" + path, text);
  const std::string out = tmp.file(name + ".carton");
  auto r = Run(Bin() + " pack --compression deflate " + Q(dir) + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

}  // namespace

TEST_CASE("cli: ls lists each file with sizes, method and sha256", "[cli][ls]") {
  TempDir tmp;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}, {"w.bin", std::string(5000, 'w')}});
  auto r = Run(Bin() + " ls " + Q(m));
  REQUIRE(r.exit_code == 0);
  // sha256 of "hello\n".
  CHECK_THAT(r.out,
             Catch::Contains("           6            8 deflate "
                             "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  "
                             "model/a.txt\n"));
  CHECK_THAT(r.out, Catch::Contains("        5000 "));
  CHECK_THAT(r.out, Catch::Contains("  carton.toml\n"));
  CHECK(r.err.empty());
  auto bad = Run(Bin() + " ls " + Q(tmp.file("none.carton")));
  CHECK(bad.exit_code == 2);
  // The path once.
  CHECK(bad.err.find(tmp.file("none.carton")) == bad.err.rfind(tmp.file("none.carton")));
}

TEST_CASE("cli: ls shows linked files and cat fetches them", "[cli][ls][cat]") {
  TempDir tmp;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}, {"w.bin", std::string(5000, 'w')}});
  const std::string env = "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " ";
  REQUIRE(Run(Bin() + " shrink " + Q(m) + " -o " + Q(tmp.file("s.carton")) +
              " --url-prefix file://" + tmp.file("blobs") + " --blobs " + Q(tmp.file("blobs")) +
              " --min-size 1000")
              .exit_code == 0);
  auto r = Run(Bin() + " ls " + Q(tmp.file("s.carton")));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("           -            - linked  "));
  CHECK_THAT(r.out, Catch::Contains("  model/w.bin\n"));
  auto refused = Run(env + Bin() + " cat " + Q(tmp.file("s.carton")) + " model/w.bin");
  CHECK(refused.exit_code != 0);
  CHECK(refused.out.empty());
  auto cat =
      Run(env + Bin() + " cat --allow-file-links " + Q(tmp.file("s.carton")) + " model/w.bin");
  CHECK(cat.exit_code == 0);
  CHECK(cat.out == std::string(5000, 'w'));
}

TEST_CASE("cli: cat writes one file's bytes, checked, and names a missing path", "[cli][cat]") {
  TempDir tmp;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}});
  auto r = Run(Bin() + " cat " + Q(m) + " model/a.txt");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "hello\n");
  CHECK(Run(Bin() + " cat " + Q(m) + " carton.toml").out == Config("inspect"));

  r = Run(Bin() + " cat " + Q(m) + " model/b.txt");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "carton cat: " + m + ": model/b.txt: not in MANIFEST\n");

  // Damaged stored bytes: nothing on stdout, exit 1.
  const std::string dir = tmp.file("s");
  WriteText(dir + "/carton.toml", Config("s"));
  WriteText(dir + "/model/w.bin", std::string(5000, 'w'));
  REQUIRE(Run(Bin() + " pack --compression stored " + Q(dir) + " -o " + Q(tmp.file("s.carton")))
              .exit_code == 0);
  std::string bytes = carton::testing::ReadText(tmp.file("s.carton"));
  bytes[bytes.find(std::string(100, 'w')) + 3] = 'X';
  std::ofstream(tmp.file("s.carton"), std::ios::binary | std::ios::trunc) << bytes;
  r = Run(Bin() + " cat " + Q(tmp.file("s.carton")) + " model/w.bin");
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("model/w.bin"));
  CHECK(r.err.find(tmp.file("s.carton")) == r.err.rfind(tmp.file("s.carton")));
}

TEST_CASE("cli: diff lists what changed, or says identical", "[cli][diff]") {
  TempDir tmp;
  const std::string a = Pack(tmp, "a", {{"a.txt", "one\n"}, {"gone.txt", "x"}});
  const std::string b = Pack(tmp, "b", {{"a.txt", "two\n"}, {"new.txt", "y"}});
  auto r = Run(Bin() + " diff " + Q(a) + " " + Q(b));
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("- model/gone.txt\n"));
  CHECK_THAT(r.out, Catch::Contains("+ model/new.txt\n"));
  CHECK_THAT(r.out, Catch::Contains("~ model/a.txt  "));
  CHECK_THAT(r.out, Catch::Contains("1 removed, 1 added, 1 changed\n"));
  auto same = Run(Bin() + " diff " + Q(a) + " " + Q(a));
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.out, Catch::StartsWith("identical (manifest hash "));
}

TEST_CASE("cli: ls, cat and diff read a carton by URL", "[cli][ls][http]") {
  TempDir tmp;
  carton::testing::NginxServer nginx;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}});
  fs::copy_file(m, nginx.www() + "/m.carton");
  const std::string url = nginx.Url("/m.carton");
  auto ls = Run(Bin() + " ls " + Q(url));
  CHECK(ls.exit_code == 0);
  CHECK_THAT(ls.out, Catch::Contains("model/a.txt"));
  auto cat = Run(Bin() + " cat " + Q(url) + " model/a.txt");
  CHECK(cat.out == "hello\n");
  auto diff = Run(Bin() + " diff " + Q(url) + " " + Q(m));
  CHECK_THAT(diff.out, Catch::StartsWith("identical"));
}

TEST_CASE("cli: unpack without DIR unpacks into ./<model_name>/", "[cli][unpack]") {
  TempDir tmp;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}}, "bert-tiny");
  const std::string cd = "cd " + Q(tmp.path().string()) + " && ";
  auto r = Run(cd + Bin() + " unpack " + Q(m));
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("into bert-tiny/"));
  CHECK(carton::testing::ReadText(tmp.file("bert-tiny/model/a.txt")) == "hello\n");
  // Again: the directory is there now, named once in the error.
  r = Run(cd + Bin() + " unpack " + Q(m));
  CHECK(r.exit_code == 2);
  CHECK(r.err == "carton unpack: bert-tiny: exists and is not an empty directory\n");

  // A model name that is not a plain file name: MODEL's stem.
  const std::string odd = Pack(tmp, "odd", {{"a.txt", "x"}}, "org/model");
  fs::rename(odd, tmp.file("renamed.carton"));
  r = Run(cd + Bin() + " unpack renamed.carton");
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(tmp.file("renamed/model/a.txt")));
}

TEST_CASE("cli: unpack into a place it cannot create names DIR, not a temporary", "[cli][unpack]") {
  TempDir tmp;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}});
  // DIR below a regular file: no directory can be made there, even by root.
  WriteText(tmp.file("file"), "x");
  auto r = Run(Bin() + " unpack " + Q(m) + " " + Q(tmp.file("file/out")));
  CHECK(r.exit_code == 2);
  CHECK(r.err == "carton unpack: " + tmp.file("file/out") +
                     ": cannot create the directory: Not a directory\n");
  CHECK(r.err.find(".unpack-") == std::string::npos);
}

TEST_CASE("cli: verify, info and hash take several MODELs like sha256sum", "[cli][multi]") {
  TempDir tmp;
  const std::string a = Pack(tmp, "a", {{"a.txt", "one\n"}}, "first");
  const std::string b = Pack(tmp, "b", {{"a.txt", "two\n"}}, "second");
  const std::string ha = Run(Bin() + " hash " + Q(a)).out;
  const std::string hb = Run(Bin() + " hash " + Q(b)).out;
  REQUIRE(ha.size() == 65);
  auto h = Run(Bin() + " hash " + Q(a) + " " + Q(b));
  CHECK(h.exit_code == 0);
  CHECK(h.out == ha.substr(0, 64) + "  " + a + "\n" + hb.substr(0, 64) + "  " + b + "\n");

  auto v = Run(Bin() + " verify " + Q(a) + " " + Q(b));
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::Contains(a + ": ok ("));
  CHECK_THAT(v.out, Catch::Contains(b + ": ok ("));

  auto i = Run(Bin() + " info " + Q(a) + " " + Q(b));
  CHECK(i.exit_code == 0);
  CHECK_THAT(i.out, Catch::Contains("name: first"));
  CHECK_THAT(i.out, Catch::Contains("name: second"));

  // One bad MODEL: the others are still done; exit is the worst.
  WriteText(tmp.file("junk.carton"), "PK\x03\x04 not really");
  v = Run(Bin() + " verify " + Q(a) + " " + Q(tmp.file("junk.carton")) + " " + Q(b));
  CHECK(v.exit_code == 1);
  CHECK_THAT(v.out, Catch::Contains(a + ": ok ("));
  CHECK_THAT(v.out, Catch::Contains(b + ": ok ("));
  CHECK_THAT(v.err, Catch::Contains("carton verify: " + tmp.file("junk.carton") + ": too short"));
  h = Run(Bin() + " hash " + Q(tmp.file("none.carton")) + " " + Q(a));
  CHECK(h.exit_code == 2);
  CHECK(h.out == ha.substr(0, 64) + "  " + a + "\n");
}

TEST_CASE("cli: exit 1 for bad input, 2 for usage and environment", "[cli][exit]") {
  TempDir tmp;
  const std::string m = Pack(tmp, "m", {{"a.txt", "hello\n"}});
  WriteText(tmp.file("junk.carton"), "PK\x03\x04 not really");
  const std::string junk = Q(tmp.file("junk.carton"));
  // Bad input: 1.
  for (const std::string& args : std::vector<std::string>{
           "ls " + junk, "cat " + junk + " carton.toml", "diff " + Q(m) + " " + junk,
           "unpack " + junk + " " + Q(tmp.file("u1")), "load " + junk}) {
    INFO(args);
    CHECK(Run("CARTON_CACHE_DIR=" + Q(tmp.file("c")) + " " + Bin() + " " + args).exit_code == 1);
  }
  // Usage and environment: 2.
  for (const std::string& args : std::vector<std::string>{
           "ls", "ls " + Q(tmp.file("none.carton")), "cat " + Q(m),
           "unpack " + Q(m) + " " + Q(tmp.file("m")), "pack " + Q(tmp.file("m")) + " -o x --level",
           "cache gc --max-size lots"}) {
    INFO(args);
    CHECK(Run("CARTON_CACHE_DIR=" + Q(tmp.file("c")) + " " + Bin() + " " + args).exit_code == 2);
  }
}

TEST_CASE("cli: load of a folder that is not a carton says what to do", "[cli][load]") {
  TempDir tmp;
  fs::create_directories(tmp.file("plain/model"));
  auto r =
      Run("CARTON_CACHE_DIR=" + Q(tmp.file("c")) + " " + Bin() + " load " + Q(tmp.file("plain")));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("carton pack"));
  CHECK(r.err.find("LoadUnpacked") == std::string::npos);
}

TEST_CASE("cli: verify names each problem's entry once", "[cli][verify]") {
  TempDir tmp;
  // A zip Python writes: a MANIFEST with a bad line and a carton.toml with a
  // wrong type; each message names its entry itself.
  const std::string script =
      "import zipfile\n"
      "with zipfile.ZipFile('" +
      tmp.file("b.carton") +
      "', 'w') as z:\n"
      "    z.writestr('MANIFEST', 'nonsense\\n')\n"
      "    z.writestr('carton.toml', 'spec_version = 1\\n[runner]\\nrunner_name = 5\\n')\n";
  WriteText(tmp.file("make.py"), script);
  REQUIRE(Run("/usr/bin/python3 " + Q(tmp.file("make.py"))).exit_code == 0);
  auto r = Run(Bin() + " verify " + Q(tmp.file("b.carton")));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err,
             Catch::Contains("carton verify: " + tmp.file("b.carton") + ": MANIFEST line 1"));
  CHECK_THAT(r.err,
             Catch::Contains("carton verify: " + tmp.file("b.carton") + ": carton.toml:3:15: "));
  CHECK(r.err.find("MANIFEST: MANIFEST") == std::string::npos);
  CHECK(r.err.find("carton.toml: carton.toml") == std::string::npos);
}
