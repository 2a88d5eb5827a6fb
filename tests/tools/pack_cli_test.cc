// `carton pack` and `carton init` through the built binary: what pack
// accepts (flat folders, single files, symlinked snapshots), the describing
// flags, pack refusing what verify refuses, exit codes, and other zip tools
// reading a default pack.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "testing.h"

using carton::testing::Run;
using carton::testing::TempDir;
namespace fs = std::filesystem;

using carton::testing::WriteText;

namespace {

std::string Bin() { return carton::testing::CartonBin(); }

std::string Q(const std::string& s) { return "'" + s + "'"; }

const char kNoop[] = " --runner noop --framework-version '=1.0.0'";

// Entry names of a carton, as unzip lists them.
std::string Listing(const std::string& carton) { return Run("unzip -Z1 " + Q(carton)).out; }

// The carton pack would write for `dir` (carton.toml, model/, tensor_data/,
// misc/ and a MANIFEST of their sha256), written by Python's zipfile
// instead, so that verify can be shown what pack refuses to write.
void ZipByHand(const std::string& dir, const std::string& out) {
  const std::string script =
      "import hashlib, os, sys, zipfile\n"
      "root, out = sys.argv[1], sys.argv[2]\n"
      "files = sorted(os.path.relpath(os.path.join(d, f), root)\n"
      "               for d, _, fs in os.walk(root) for f in fs)\n"
      "lines = ''.join(f + '=' + hashlib.sha256(open(os.path.join(root, f), 'rb').read())\n"
      "                .hexdigest() + '\\n' for f in files)\n"
      "with zipfile.ZipFile(out, 'w') as z:\n"
      "    for f in files: z.write(os.path.join(root, f), f)\n"
      "    z.writestr('MANIFEST', lines)\n";
  WriteText(out + ".py", script);
  REQUIRE(Run("/usr/bin/python3 " + Q(out + ".py") + " " + Q(dir) + " " + Q(out)).exit_code == 0);
}

}  // namespace

TEST_CASE("cli pack: a flat folder's files go under model/", "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("hf");
  fs::create_directories(dir);
  carton::testing::WriteBytes(
      dir + "/model.safetensors",
      carton::testing::RawSafetensors(
          R"({"w":{"dtype":"F32","shape":[1500],"data_offsets":[0,6000]}})", 6000));
  WriteText(dir + "/config.json", "{\"hidden\": 4}");
  WriteText(dir + "/tokenizer.json", "{}");
  const std::string out = tmp.file("m.carton");
  auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out) + kNoop);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string names = Listing(out);
  CHECK(names ==
        "carton.toml\nmodel/config.json\nmodel/model.safetensors\nmodel/tokenizer.json\n"
        "tensor_data/index.toml\nMANIFEST\n");
  CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);
  // What load prints is the model/ directory, and it holds the files.
  const std::string cache = tmp.file("cache");
  auto load = Run("CARTON_CACHE_DIR=" + Q(cache) + " " + Bin() + " load " + Q(out));
  REQUIRE(load.exit_code == 0);
  const std::string model_dir = load.out.substr(0, load.out.find('\n'));
  CHECK(fs::is_regular_file(model_dir + "/config.json"));
}

TEST_CASE("cli pack: a single file is packed as model/<name>", "[cli][pack]") {
  TempDir tmp;
  WriteText(tmp.file("model.pt"), std::string(5000, 'p'));
  const std::string out = tmp.file("m.carton");
  auto r = Run(Bin() + " pack " + Q(tmp.file("model.pt")) + " -o " + Q(out) +
               " --runner torchscript --framework-version '=1.13.1'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Listing(out) == "carton.toml\nmodel/model.pt\ntensor_data/index.toml\nMANIFEST\n");
  auto info = Run(Bin() + " info " + Q(out));
  CHECK(info.out.find("runner: torchscript (framework =1.13.1, compat 1)") != std::string::npos);
}

TEST_CASE("cli pack: a Hugging Face snapshot of symlinks into blobs/ packs", "[cli][pack]") {
  TempDir tmp;
  const std::string root = tmp.file("models--org--m");
  WriteText(root + "/blobs/aaa", "{\"hidden\": 4}");
  WriteText(root + "/blobs/bbb", std::string(3000, 'w'));
  fs::create_directories(root + "/snapshots/rev1/sub");
  fs::create_symlink("../../blobs/aaa", root + "/snapshots/rev1/config.json");
  fs::create_symlink("../../../blobs/bbb", root + "/snapshots/rev1/sub/model.safetensors");
  const std::string out = tmp.file("m.carton");
  auto r = Run(Bin() + " pack " + Q(root + "/snapshots/rev1") + " -o " + Q(out) + kNoop);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Run("unzip -p " + Q(out) + " model/config.json").out == "{\"hidden\": 4}");
  CHECK(Run("unzip -p " + Q(out) + " model/sub/model.safetensors").out == std::string(3000, 'w'));
  CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);

  // A dangling link is the folder's problem: exit 1, naming it.
  fs::create_symlink("../../blobs/none", root + "/snapshots/rev1/gone.json");
  r = Run(Bin() + " pack " + Q(root + "/snapshots/rev1") + " -o " + Q(tmp.file("x.carton")) +
          kNoop);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("gone.json: dangling symlink") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("x.carton")));
}

TEST_CASE("cli pack: an empty folder is refused with what a carton needs", "[cli][pack]") {
  TempDir tmp;
  fs::create_directories(tmp.file("empty"));
  auto r = Run(Bin() + " pack " + Q(tmp.file("empty")) + " -o " + Q(tmp.file("e.carton")) + kNoop);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no files for model/; a carton needs the model's files") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.file("e.carton")));

  // Only excluded files: the same.
  WriteText(tmp.file("git/.git/HEAD"), "ref");
  r = Run(Bin() + " pack " + Q(tmp.file("git")) + " -o " + Q(tmp.file("e.carton")) + kNoop);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no files for model/") != std::string::npos);
}

TEST_CASE("cli pack: describing flags without carton.toml, refused beside one", "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/model/w.bin", "w");

  SECTION("--runner without --framework-version says what is missing") {
    auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("o.carton")) + " --runner noop");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--framework-version is required with --runner") != std::string::npos);
    CHECK(r.err.find("invalid version") == std::string::npos);
  }
  SECTION("a pip-style requirement gets a hint") {
    auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("o.carton")) +
                 " --runner noop --framework-version ==1.13.1");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("use =1.13.1") != std::string::npos);
  }
  SECTION("a bad dtype lists the valid ones") {
    auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("o.carton")) + kNoop +
                 " --input x:flaot32");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("unknown dtype \"flaot32\" (valid: float32, float64, string, int8") !=
          std::string::npos);
  }
  SECTION("inputs, outputs, opts and the default compat version") {
    const std::string out = tmp.file("o.carton");
    auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out) + kNoop +
                 " --name flagged --license MIT --opt threads=2 --input 'x:float32:[batch, 3]'"
                 " --input s:string --output-tensor 'y:int64:[]'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string toml = Run("unzip -p " + Q(out) + " carton.toml").out;
    CHECK(toml.find("model_name = \"flagged\"") != std::string::npos);
    CHECK(toml.find("license = \"MIT\"") != std::string::npos);
    CHECK(toml.find("name = \"x\"\ndtype = \"float32\"\nshape = [\"batch\", 3]") !=
          std::string::npos);
    CHECK(toml.find("name = \"s\"\ndtype = \"string\"\nshape = \"*\"") != std::string::npos);
    CHECK(toml.find("name = \"y\"\ndtype = \"int64\"\nshape = []") != std::string::npos);
    CHECK(toml.find("runner_compat_version = 1") != std::string::npos);
    CHECK(toml.find("threads = 2") != std::string::npos);
    CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);
  }
  SECTION("each repeatable flag takes one value, so PATH may follow it") {
    const std::string out = tmp.file("o.carton");
    auto r = Run(Bin() + " pack" + kNoop + " --opt a=1 --input x:float32 --exclude '*.tmp' " +
                 Q(dir) + " -o " + Q(out));
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("flags beside carton.toml are an error unless --override") {
    WriteText(dir + "/carton.toml",
              "spec_version = 1\nmodel_name = \"file\"\n[runner]\nrunner_name = \"noop\"\n"
              "required_framework_version = \"=1.0.0\"\n");
    const std::string out = tmp.file("o.carton");
    auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out) + " --runner torchscript");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("carton.toml describes the model, so --runner would be ignored") !=
          std::string::npos);
    CHECK(r.err.find("--override") != std::string::npos);
    CHECK_FALSE(fs::exists(out));

    r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out) +
            " --runner torchscript --framework-version '=1.13.1' --override");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto info = Run(Bin() + " info " + Q(out));
    CHECK(info.out.find("name: file") != std::string::npos);  // kept from the file
    CHECK(info.out.find("runner: torchscript (framework =1.13.1, compat 1)") != std::string::npos);

    // Without flags the file is packed as it is; its compat version, absent,
    // reads as 1.
    r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out));
    REQUIRE(r.exit_code == 0);
    info = Run(Bin() + " info " + Q(out));
    CHECK(info.out.find("runner: noop (framework =1.0.0, compat 1)") != std::string::npos);
    CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);
  }
}

TEST_CASE("cli pack: refuses what verify refuses, in the same words", "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/model/w.bin", "w");
  WriteText(dir + "/tensor_data/index.toml",
            "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\nfile = \"x.bin\"\n");
  WriteText(dir + "/tensor_data/x.bin", std::string(8, '\1'));
  const std::string head =
      "spec_version = 1\n"
      "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\n"
      "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n";
  const std::string out = tmp.file("o.carton");
  auto pack = [&] { return Run(Bin() + " pack " + Q(dir) + " -o " + Q(out)); };
  // The same folder zipped by hand: verify's line for its problem.
  const std::string by_hand = tmp.file("by-hand.carton");
  auto verify = [&] {
    fs::remove(by_hand);
    ZipByHand(dir, by_hand);
    return Run(Bin() + " verify " + Q(by_hand));
  };

  WriteText(dir + "/carton.toml", head + "[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n");
  REQUIRE(pack().exit_code == 0);
  fs::remove(out);
  {
    auto v = verify();
    INFO(v.err);
    REQUIRE(v.exit_code == 0);  // the hand-made carton is a valid one
  }

  SECTION("a self-test naming a missing tensor") {
    WriteText(dir + "/carton.toml",
              head + "[[self_test]]\ninputs = { x = \"@tensor_data/nope\" }\n");
    auto r = pack();
    CHECK(r.exit_code == 1);
    const std::string words =
        "carton.toml:9:1: self-test 1 inputs: @tensor_data/nope names no tensor in "
        "tensor_data/index.toml\n";
    CHECK(r.err == "carton pack: " + dir + "/" + words);
    CHECK_FALSE(fs::exists(out));
    auto v = verify();
    CHECK(v.exit_code == 1);
    CHECK(v.err == "carton verify: " + by_hand + ": " + words);
  }
  // pack exits 1 naming `words`, and verify of the folder zipped by hand
  // says the same words of its carton.
  auto both_refuse = [&](const std::string& words) {
    auto r = pack();
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
    auto v = verify();
    INFO(v.err);
    CHECK(v.exit_code == 1);
    CHECK(v.err.find(by_hand + ": " + words) != std::string::npos);
  };
  SECTION("an undeclared input name") {
    WriteText(dir + "/carton.toml", head + "[[self_test]]\ninputs = { z = \"@tensor_data/x\" }\n");
    both_refuse("carton.toml:9:1: self-test 1 inputs: \"z\" is not a declared input");
  }
  SECTION("a self-test tensor of another dtype than its input's") {
    WriteText(dir + "/carton.toml",
              head + "[[self_test]]\nname = \"echo\"\ninputs = { x = \"@tensor_data/x\" }\n");
    WriteText(dir + "/tensor_data/index.toml",
              "[[tensor]]\nname = \"x\"\ndtype = \"int32\"\nshape = [2]\nfile = \"x.bin\"\n");
    both_refuse(
        "carton.toml:9:1: self_test \"echo\": input \"x\": dtype int32, but [[input]] \"x\" is "
        "float32");
  }
  SECTION("a self-test tensor of another shape than its input's") {
    WriteText(dir + "/carton.toml", head + "[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n");
    WriteText(dir + "/tensor_data/index.toml",
              "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [1, 2]\nfile = \"x.bin\"\n");
    both_refuse(
        "carton.toml:9:1: self_test 1: input \"x\": shape [1, 2], but [[input]] \"x\" has rank 1");
  }
  SECTION("symbols and \"*\" take any size, the same one for a symbol") {
    WriteText(dir + "/carton.toml",
              "spec_version = 1\n"
              "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [\"n\", \"*\"]\n"
              "[[output]]\nname = \"y\"\ndtype = \"float32\"\nshape = [\"n\"]\n"
              "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
              "[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n"
              "expected_out = { y = \"@tensor_data/y\" }\n");
    WriteText(dir + "/tensor_data/index.toml",
              "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2, 1]\nfile = \"x.bin\"\n"
              "[[tensor]]\nname = \"y\"\ndtype = \"float32\"\nshape = [2]\nfile = \"x.bin\"\n");
    auto r = pack();
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(verify().exit_code == 0);
    // Another size for "n" in the output than in the input.
    WriteText(dir + "/tensor_data/index.toml",
              "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [1, 2]\nfile = \"x.bin\"\n"
              "[[tensor]]\nname = \"y\"\ndtype = \"float32\"\nshape = [2]\nfile = \"x.bin\"\n");
    fs::remove(out);
    both_refuse(
        "carton.toml:13:1: self_test 1: output \"y\": shape [2], but dimension 0 of [[output]] "
        "\"y\" is symbol "
        "\"n\", which is 1 in input \"x\"");
  }
  SECTION("a carton that declares nothing is not checked against declarations") {
    WriteText(dir + "/carton.toml",
              "spec_version = 1\n"
              "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
              "[[self_test]]\ninputs = { anything = \"@tensor_data/x\" }\n");
    CHECK(pack().exit_code == 0);
    CHECK(verify().exit_code == 0);
  }
  SECTION("a tensor file of the wrong size") {
    WriteText(dir + "/carton.toml", head);
    WriteText(dir + "/tensor_data/x.bin", std::string(7, '\1'));
    both_refuse("tensor_data/x.bin: tensor \"x\": 7 bytes but float32 of 2 elements needs 8");
  }
  SECTION("an example naming a missing misc file") {
    WriteText(dir + "/carton.toml",
              head + "[[example]]\ninputs = { x = \"@misc/in.png\" }\nsample_out = {}\n");
    both_refuse("carton.toml:9:1: example 1 inputs: @misc/in.png names no file in misc/");
  }
}

TEST_CASE("cli pack: unknown carton.toml keys are warned about, with near misses named",
          "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/model/w.bin", "w");
  WriteText(dir + "/carton.toml",
            "spec_version = 1\nlicence = \"MIT\"\nshort_descripton = \"x\"\nfuture_field = 1\n"
            "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n");
  const std::string out = tmp.file("o.carton");
  auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("carton pack: warning: " + dir +
                   "/carton.toml:2:1: unknown key \"licence\" (did you mean \"license\"?); it is "
                   "ignored\n") != std::string::npos);
  CHECK(r.err.find("unknown key \"short_descripton\" (did you mean \"short_description\"?)") !=
        std::string::npos);
  CHECK(r.err.find("unknown key \"future_field\"; it is ignored") != std::string::npos);
  // Accepted, per the spec's forward compatibility.
  auto v = Run(Bin() + " verify " + Q(out));
  CHECK(v.exit_code == 0);
  CHECK(v.err.find("warning: " + out + ": carton.toml:2:1: unknown key \"licence\"") !=
        std::string::npos);
  // And in the JSON reports, as warnings, not problems.
  auto pj = Run(Bin() + " pack --json " + Q(dir) + " -o " + Q(tmp.file("j.carton")));
  REQUIRE(pj.exit_code == 0);
  auto pack = nlohmann::json::parse(pj.out);
  REQUIRE(pack["warnings"].size() == 3);
  CHECK(pack["warnings"][0].get<std::string>().find("unknown key \"licence\"") !=
        std::string::npos);
  auto vj = Run(Bin() + " verify --json " + Q(out));
  REQUIRE(vj.exit_code == 0);
  auto verify = nlohmann::json::parse(vj.out);
  CHECK(verify["ok"] == true);
  CHECK(verify["problems"].empty());
  REQUIRE(verify["warnings"].size() == 3);
  // -q drops the summary, not the warnings; the manifest hash stays on stdout.
  CHECK(r.err.find("packed ") != std::string::npos);
  auto quiet = Run(Bin() + " pack -q " + Q(dir) + " -o " + Q(tmp.file("q.carton")));
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.err.find("packed") == std::string::npos);
  CHECK(quiet.err.find("unknown key \"licence\"") != std::string::npos);
  CHECK(quiet.out == r.out);
}

TEST_CASE("cli pack: --exclude, .cartonignore and the default exclusions", "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/weights.bin", "w");
  WriteText(dir + "/notes.txt", "n");
  WriteText(dir + "/logs/run.log", "l");
  WriteText(dir + "/ckpt/a.tmp", "t");
  WriteText(dir + "/ckpt/keep.bin", "k");
  WriteText(dir + "/.git/HEAD", "ref");
  WriteText(dir + "/src/__pycache__/m.pyc", "c");
  WriteText(dir + "/.DS_Store", "d");
  WriteText(dir + "/.cartonignore", "# comments and blank lines are skipped\n\nlogs/\n*.tmp\n");
  const std::string out = tmp.file("o.carton");
  auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out) + kNoop + " --exclude notes.txt");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Listing(out) ==
        "carton.toml\nmodel/ckpt/keep.bin\nmodel/weights.bin\ntensor_data/index.toml\nMANIFEST\n");
  CHECK(r.err.find("carton pack: note: left out .DS_Store, .git/, src/__pycache__/") !=
        std::string::npos);
}

TEST_CASE("cli pack: folder-content problems exit 1, usage problems 2", "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/model/A.bin", "a");
  WriteText(dir + "/model/a.bin", "b");
  auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("o.carton")) + kNoop);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("differ only in letter case") != std::string::npos);
  fs::remove(dir + "/model/A.bin");
  WriteText(dir + "/LINKS", "x");
  r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("o.carton")) + kNoop);
  CHECK(r.exit_code == 1);
  fs::remove(dir + "/LINKS");
  // Usage: a bad --compression, an unknown path.
  CHECK(Run(Bin() + " pack " + Q(dir) + " -o x --compression lzma").exit_code == 2);
  CHECK(Run(Bin() + " pack " + Q(tmp.file("none")) + " -o x" + kNoop).exit_code == 2);
}

TEST_CASE("cli pack: the output location is checked before any work", "[cli][pack]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/model/w.bin", "w");
  auto r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("missing/o.carton")) + kNoop);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "carton pack: " + tmp.file("missing/o.carton") + ": directory " +
                     tmp.file("missing") + " does not exist\n");
  fs::create_directories(tmp.file("adir"));
  r = Run(Bin() + " pack " + Q(dir) + " -o " + Q(tmp.file("adir")) + kNoop);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "carton pack: " + tmp.file("adir") +
                     ": is a directory; give the path of the .carton to write\n");
  CHECK(r.err.find(".tmp") == std::string::npos);
}

TEST_CASE("cli pack: a default pack opens with unzip and Python's zipfile",
          "[cli][pack][interop]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/carton.toml",
            "spec_version = 1\nmodel_name = \"zip\"\n[runner]\nrunner_name = \"noop\"\n"
            "required_framework_version = \"=1.0.0\"\nrunner_compat_version = 1\n");
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i % 7) + "\n";
  WriteText(dir + "/model/vocab.txt", text);  // compressible, over 4 KiB: zstd
  const std::string small = "small and compressible compressible compressible\n";
  WriteText(dir + "/model/small.txt", small);
  const std::string out = tmp.file("o.carton");
  REQUIRE(Run(Bin() + " pack " + Q(dir) + " -o " + Q(out)).exit_code == 0);
  auto info = Run(Bin() + " info " + Q(out));
  CHECK(std::regex_search(
      info.out, std::regex("model/vocab\\.txt +" + std::to_string(text.size()) + " bytes +zstd")));
  CHECK(std::regex_search(info.out, std::regex("model/small\\.txt +" +
                                               std::to_string(small.size()) + " bytes +stored")));
  CHECK(info.out.find("  carton.toml  ") != std::string::npos);
  CHECK(std::regex_search(info.out, std::regex("  carton\\.toml +[0-9]+ bytes +stored\n")));

  CHECK(Run("unzip -p " + Q(out) + " carton.toml").out.find("model_name = \"zip\"") !=
        std::string::npos);
  CHECK(Run("unzip -p " + Q(out) + " MANIFEST").out.find("carton.toml=") == 0);
  // unzip knows no zstd: it tests the stored entries and names the other.
  auto t =
      Run("unzip -t " + Q(out) + " carton.toml MANIFEST tensor_data/index.toml model/small.txt");
  CHECK(t.exit_code == 0);
  auto py =
      Run("/usr/bin/python3 -c \"import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
          "print(z.read('carton.toml').decode()[:12]); print(z.read('MANIFEST')[:12])\" " +
          Q(out));
  CHECK(py.exit_code == 0);
  CHECK(py.out.find("spec_version") == 0);

  // A typical model: weights that do not compress, small metadata. Every
  // entry is stored, so every zip tool tests the whole archive.
  const std::string typical = tmp.file("typical");
  std::string noise(300000, '\0');
  std::uint32_t x = 2463534242u;
  for (char& c : noise) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    c = static_cast<char>(x);
  }
  WriteText(typical + "/model.safetensors", noise);
  WriteText(typical + "/config.json", "{\"hidden_size\": 4, \"layers\": 2}");
  const std::string plain = tmp.file("t.carton");
  REQUIRE(Run(Bin() + " pack " + Q(typical) + " -o " + Q(plain) + kNoop).exit_code == 0);
  CHECK(Run("unzip -t " + Q(plain)).exit_code == 0);
  CHECK(Run("/usr/bin/python3 -m zipfile -t " + Q(plain)).exit_code == 0);
  CHECK(Run("unzip -p " + Q(plain) + " carton.toml").out.find("runner_name = \"noop\"") !=
        std::string::npos);

  // With deflate, every tool reads every entry.
  const std::string deflated = tmp.file("d.carton");
  REQUIRE(
      Run(Bin() + " pack " + Q(dir) + " -o " + Q(deflated) + " --compression deflate").exit_code ==
      0);
  CHECK(Run("unzip -t " + Q(deflated)).exit_code == 0);
  CHECK(Run("/usr/bin/python3 -m zipfile -t " + Q(deflated)).exit_code == 0);
}

TEST_CASE("cli init: writes a commented carton.toml that packs and verifies", "[cli][init]") {
  TempDir tmp;
  const std::string dir = tmp.file("ts");
  WriteText(dir + "/model.pt", std::string(100, 'p'));
  auto r = Run(Bin() + " init " + Q(dir));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string toml = carton::testing::ReadText(dir + "/carton.toml");
  CHECK(toml.find("runner_name = \"torchscript\"") != std::string::npos);
  CHECK(toml.find("# The runner that runs the model") != std::string::npos);
  CHECK(toml.find("# license = ") != std::string::npos);
  // Self-tests are discoverable: an example, commented out.
  CHECK(toml.find("# [[self_test]]\n# name = \"one batch\"") != std::string::npos);
  CHECK(r.err.find("runner torchscript (from model.pt)") != std::string::npos);

  // Refuses to overwrite.
  auto again = Run(Bin() + " init " + Q(dir) + " --runner noop");
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("already exists") != std::string::npos);
  CHECK(carton::testing::ReadText(dir + "/carton.toml") == toml);

  const std::string out = tmp.file("ts.carton");
  auto pack = Run(Bin() + " pack " + Q(dir) + " -o " + Q(out));
  INFO(pack.err);
  REQUIRE(pack.exit_code == 0);
  CHECK(Listing(out) == "carton.toml\nmodel/model.pt\ntensor_data/index.toml\nMANIFEST\n");
  CHECK(Run(Bin() + " verify " + Q(out)).exit_code == 0);

  // From flags, and a guess for Python code.
  const std::string py = tmp.file("py");
  WriteText(py + "/model/main.py", "def get_model(): pass\n");
  r = Run(Bin() + " init " + Q(py) + " --framework-version '=3.11' --name mine" +
          " --input 'x:float32:[2]' --output-tensor y:float32");
  REQUIRE(r.exit_code == 0);
  const std::string py_toml = carton::testing::ReadText(py + "/carton.toml");
  CHECK(py_toml.find("runner_name = \"python\"") != std::string::npos);
  CHECK(py_toml.find("entrypoint_package = \"main\"") != std::string::npos);
  CHECK(py_toml.find("model_name = \"mine\"") != std::string::npos);
  REQUIRE(Run(Bin() + " pack " + Q(py) + " -o " + Q(tmp.file("py.carton"))).exit_code == 0);
  auto info = Run(Bin() + " info " + Q(tmp.file("py.carton")));
  CHECK(info.out.find("runner: python (framework =3.11, compat 1)") != std::string::npos);
  CHECK(std::regex_search(info.out, std::regex("  x +float32 +\\[2\\]")));
  CHECK(Run(Bin() + " verify " + Q(tmp.file("py.carton"))).exit_code == 0);
}

TEST_CASE("cli pack: --runner python takes init's entrypoint defaults, or says which to give",
          "[cli][pack]") {
  TempDir tmp;
  WriteText(tmp.file("m/main.py"), "def get_model():\n    return None\n");
  auto r = Run(Bin() + " pack -q " + Q(tmp.file("m")) + " -o " + Q(tmp.file("m.carton")) +
               " --runner python --framework-version '>=3.11'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto toml = Run(Bin() + " cat " + Q(tmp.file("m.carton")) + " carton.toml");
  CHECK_THAT(toml.out, Catch::Contains("entrypoint_package = \"main\""));
  CHECK_THAT(toml.out, Catch::Contains("entrypoint_fn = \"get_model\""));

  WriteText(tmp.file("n/model.py"), "x = 1\n");
  auto refused = Run(Bin() + " pack -q " + Q(tmp.file("n")) + " -o " + Q(tmp.file("n.carton")) +
                     " --runner python --framework-version '>=3.11'");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("--opt entrypoint_package=MODULE"));
  CHECK_FALSE(std::filesystem::exists(tmp.file("n.carton")));
}
