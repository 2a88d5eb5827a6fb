// One JSON schema (docs/JSON.md): every reporting command's --json prints
// one document with "schema": 1, "ok", and the carton it is about in
// "model"; errors are {"schema": 1, "ok": false, "error": {...}} on stdout
// with the human line still on stderr.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing.h"

using carton::testing::Run;
using carton::testing::TempDir;
using Json = nlohmann::json;

using carton::testing::WriteText;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// A carton the noop runner can self-test: x float32 [2] in, x out.
struct Fixture {
  TempDir tmp;
  std::string carton, other, safetensors;
  Fixture() {
    safetensors = tmp.file("x.safetensors");
    carton::testing::WriteBytes(
        safetensors,
        carton::testing::RawSafetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                        8, std::byte{1}));
    const std::string dir = tmp.file("m");
    WriteText(dir + "/carton.toml",
              "spec_version = 1\nmodel_name = \"json\"\n"
              "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\n"
              "[[output]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\n"
              "[[self_test]]\nname = \"echo\"\ninputs = { x = \"@tensor_data/x\" }\n"
              "expected_out = { x = \"@tensor_data/x\" }\n"
              "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \">=1.0.0, <2\"\n"
              "runner_compat_version = 1\n");
    WriteText(dir + "/model/weights.bin", std::string(3000, 'w'));
    REQUIRE(Cli("tensors import " + Q(safetensors) + " " + Q(dir + "/tensor_data")).exit_code == 0);
    carton = tmp.file("m.carton");
    REQUIRE(Cli("pack " + Q(dir) + " -o " + Q(carton)).exit_code == 0);
    WriteText(dir + "/model/more.txt", "more\n");
    other = tmp.file("o.carton");
    REQUIRE(Cli("pack " + Q(dir) + " -o " + Q(other)).exit_code == 0);
  }
  carton::testing::CommandResult Cli(const std::string& args) const {
    return Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " CARTON_RUNNER_PATH=" +
               Q(CARTON_NOOP_RUNNER_DIR) + " " + carton::testing::CartonBin() + " " + args);
  }
  // Runs a command with --json; its stdout must be one document.
  Json Document(const std::string& args, int exit_code = 0) const {
    auto r = Cli(args);
    INFO(args << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.exit_code == exit_code);
    REQUIRE(!r.out.empty());
    CHECK(r.out.back() == '\n');
    CHECK(r.out.find('\n') == r.out.size() - 1);  // one line
    Json j = Json::parse(r.out);
    CHECK(j["schema"] == 1);
    CHECK(j.contains("ok"));
    return j;
  }
};

}  // namespace

TEST_CASE("cli json: every reporting command prints one schema-1 document", "[cli][json]") {
  Fixture f;
  const std::string m = Q(f.carton);
  // Commands about one carton name it in "model".
  for (const std::string& args :
       {"verify --json " + m, "info --json " + m, "hash --json " + m, "ls --json " + m,
        "load --json " + m, "self-test --json " + m, "diff --json " + m + " " + Q(f.other),
        "infer --json " + m + " --input x=" + Q(f.safetensors) + " --output " +
            Q(f.tmp.file("out.safetensors"))}) {
    INFO(args);
    Json j = f.Document(args);
    CHECK(j["ok"] == true);
    CHECK(j["model"] == f.carton);
  }
  Json pack = f.Document("pack --json " + Q(f.tmp.file("m")) + " -o " + Q(f.tmp.file("p.carton")));
  CHECK(pack["model"] == f.tmp.file("p.carton"));
  CHECK(pack["manifest_hash"].get<std::string>().size() == 64);
  CHECK(pack["files"].size() == 5);
  Json unpack = f.Document("unpack --json " + m + " " + Q(f.tmp.file("u")));
  CHECK(unpack["model"] == f.carton);
  CHECK(unpack["dir"] == f.tmp.file("u"));
  Json shrink = f.Document("shrink --json " + m + " -o " + Q(f.tmp.file("s.carton")) +
                           " --url-prefix file://" + f.tmp.file("blobs") + " --blobs " +
                           Q(f.tmp.file("blobs")) + " --min-size 1000");
  CHECK(shrink["model"] == f.tmp.file("s.carton"));
  CHECK(shrink["moved"] == Json::array({"model/weights.bin"}));
  Json fetch = f.Document("fetch --json --allow-file-links " + Q(f.tmp.file("s.carton")) + " -o " +
                          Q(f.tmp.file("f.carton")));
  CHECK(fetch["model"] == f.tmp.file("f.carton"));
  CHECK(fetch["manifest_hash"] == shrink["manifest_hash"]);

  Json list = f.Document("cache list --json");
  REQUIRE(list["entries"].size() == 1);
  const std::string hash = list["entries"][0]["manifest_hash"];
  Json cv = f.Document("cache verify --json");
  CHECK(cv["ok"] == true);
  CHECK(cv["entries"][0]["manifest_hash"] == hash);
  Json gc = f.Document("cache gc --json --max-size 100G");
  CHECK(gc["removed"].empty());
  CHECK(gc.at("removed_partials") == Json::array());
  Json rm = f.Document("cache rm --json " + hash);
  CHECK(rm["removed"] == Json::array({hash}));
  Json runners = f.Document("runners --json");
  CHECK(runners["runners"][0]["runner_name"] == "noop");
  Json version = f.Document("version --json");
  CHECK(version["version"].is_string());

  Json st = f.Document("safetensors inspect --json " + Q(f.safetensors));
  CHECK(st["file"] == f.safetensors);
  Json get = f.Document("safetensors get --json " + Q(f.safetensors) + " x -o " +
                        Q(f.tmp.file("got.safetensors")));
  CHECK(get["output"] == f.tmp.file("got.safetensors"));
  CHECK(get["tensors"] == Json::array({"x"}));
  Json imported =
      f.Document("tensors import --json " + Q(f.safetensors) + " " + Q(f.tmp.file("td")));
  CHECK(imported["dir"] == f.tmp.file("td"));
  Json exported = f.Document("tensors export --json " + Q(f.tmp.file("td")) + " " +
                             Q(f.tmp.file("back.safetensors")));
  CHECK(exported["file"] == f.tmp.file("back.safetensors"));
  Json init = f.Document("init --json " + Q(f.tmp.file("fresh")) +
                         " --runner noop --framework-version '>=1'");
  CHECK(init["path"] == f.tmp.file("fresh") + "/carton.toml");
  CHECK(std::filesystem::exists(f.tmp.file("fresh/carton.toml")));
  Json sv = f.Document("safetensors verify --json " + Q(f.safetensors));
  CHECK(sv["file"] == f.safetensors);
  CHECK(sv["ok"] == true);
}

TEST_CASE("cli json: the same facts have the same keys", "[cli][json]") {
  Fixture f;
  Json verify = f.Document("verify --json " + Q(f.carton));
  Json info = f.Document("info --json " + Q(f.carton));
  Json hash = f.Document("hash --json " + Q(f.carton));
  Json ls = f.Document("ls --json " + Q(f.carton));
  CHECK(verify["manifest_hash"] == hash["manifest_hash"]);
  CHECK(info["manifest_hash"] == hash["manifest_hash"]);
  CHECK(verify["problems"].empty());
  // A file: path, size, compressed_size, method, linked (ls adds sha256).
  for (const Json& files : {info["files"], ls["files"]}) {
    for (const char* key : {"path", "size", "compressed_size", "method", "linked"}) {
      CHECK(files[0].contains(key));
    }
  }
  CHECK(ls["files"][0]["sha256"].get<std::string>().size() == 64);
  // No report says "valid".
  for (const Json& j : {verify, info, hash, ls}) CHECK_FALSE(j.contains("valid"));
}

TEST_CASE("cli json: several MODELs give results, each with its own ok", "[cli][json]") {
  Fixture f;
  const std::string missing = f.tmp.file("none.carton");
  for (const char* cmd : {"verify", "info", "hash"}) {
    INFO(cmd);
    Json j = f.Document(std::string(cmd) + " --json " + Q(f.carton) + " " + Q(missing), 2);
    CHECK(j["ok"] == false);
    REQUIRE(j["results"].size() == 2);
    CHECK(j["results"][0]["model"] == f.carton);
    CHECK(j["results"][0]["ok"] == true);
    CHECK(j["results"][1]["model"] == missing);
    CHECK(j["results"][1]["ok"] == false);
    CHECK(j["results"][1]["error"]["code"] == "not_found");
  }
}

TEST_CASE("cli json: errors are a document on stdout and a line on stderr", "[cli][json]") {
  Fixture f;
  const std::string missing = f.tmp.file("none.carton");
  auto r = f.Cli("ls --json " + Q(missing));
  CHECK(r.exit_code == 2);
  Json j = Json::parse(r.out);
  CHECK(j["schema"] == 1);
  CHECK(j["ok"] == false);
  CHECK(j["error"]["code"] == "not_found");
  CHECK_THAT(j["error"]["message"].get<std::string>(), Catch::Contains(missing));
  CHECK_THAT(r.err, Catch::StartsWith("carton ls: " + missing));

  WriteText(f.tmp.file("junk.carton"), "PK\x03\x04 not really");
  r = f.Cli("diff --json " + Q(f.carton) + " " + Q(f.tmp.file("junk.carton")));
  CHECK(r.exit_code == 1);
  CHECK(Json::parse(r.out)["error"]["code"] == "corrupt");

  // A usage error, too.
  r = f.Cli("cat --json " + Q(f.carton));
  CHECK(r.exit_code == 2);
  j = Json::parse(r.out);
  CHECK(j["error"]["code"] == "invalid_argument");
  CHECK_THAT(r.err, Catch::StartsWith("carton cat: "));

  // And an unknown command.
  r = f.Cli("verfy --json " + Q(f.carton));
  CHECK(r.exit_code == 2);
  j = Json::parse(r.out);
  CHECK(j["ok"] == false);
  CHECK(j["error"]["code"] == "invalid_argument");
  CHECK(j["error"]["message"] == "unknown command 'verfy' (did you mean 'verify'?)");
  CHECK_THAT(r.err, Catch::StartsWith("carton: unknown command 'verfy'"));
}
