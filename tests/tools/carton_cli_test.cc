// The carton commands through the built binary: exit codes, stdout, stderr.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "testing.h"

using carton::testing::Run;
using carton::testing::TempDir;

using carton::testing::WriteText;

namespace {

const char kConfig[] =
    "spec_version = 1\nmodel_name = \"cli\"\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

std::string Bin() { return carton::testing::CartonBin(); }

std::string MakeModel(const TempDir& tmp) {
  std::string dir = tmp.file("model");
  WriteText(dir + "/carton.toml", kConfig);
  WriteText(dir + "/model/weights.bin", std::string(5000, 'w'));
  return dir;
}

// MakeModel packed stored into m.carton, with a byte of model/weights.bin
// flipped in place. Returns the carton's path.
std::string DamagedCarton(const TempDir& tmp) {
  std::string dir = MakeModel(tmp), out = tmp.file("m.carton");
  REQUIRE(Run(Bin() + " pack --compression stored '" + dir + "' -o '" + out + "'").exit_code == 0);
  std::string bytes = carton::testing::ReadText(out);
  auto pos = bytes.find(std::string(100, 'w'));
  REQUIRE(pos != std::string::npos);
  bytes[pos + 7] = 'X';
  std::ofstream(out, std::ios::binary | std::ios::trunc) << bytes;
  return out;
}

}  // namespace

TEST_CASE("cli: pack, verify, info, hash and unpack a model", "[cli][carton]") {
  TempDir tmp;
  std::string dir = MakeModel(tmp), out = tmp.file("m.carton");
  auto pack = Run(Bin() + " pack '" + dir + "' -o '" + out + "'");
  REQUIRE(pack.exit_code == 0);
  std::string hash = pack.out.substr(0, pack.out.find('\n'));
  CHECK(hash.size() == 64);

  auto verify = Run(Bin() + " verify '" + out + "'");
  CHECK(verify.exit_code == 0);
  CHECK(verify.out.find(": ok (3 files") != std::string::npos);

  auto h = Run(Bin() + " hash '" + out + "'");
  CHECK(h.exit_code == 0);
  CHECK(h.out == hash + "\n");

  auto info = Run(Bin() + " info '" + out + "'");
  CHECK(info.exit_code == 0);
  CHECK(info.out.find("name: cli") != std::string::npos);
  CHECK(info.out.find("runner: noop (framework =1.0.0, compat 1)") != std::string::npos);
  CHECK(std::regex_search(info.out, std::regex("  model/weights\\.bin +5000 bytes")));
  CHECK(info.out.find("manifest hash: " + hash) != std::string::npos);
  CHECK(info.out.find("files not verified: `carton verify` hashes every one") != std::string::npos);

  auto json = Run(Bin() + " info --json '" + out + "'");
  REQUIRE(json.exit_code == 0);
  auto j = nlohmann::json::parse(json.out);
  CHECK(j["manifest_hash"] == hash);
  CHECK(j["runner"]["runner_name"] == "noop");
  CHECK(j["files"].size() == 3);

  auto unpack = Run(Bin() + " unpack '" + out + "' '" + tmp.file("x") + "'");
  CHECK(unpack.exit_code == 0);
  CHECK(carton::testing::ReadText(tmp.file("x/model/weights.bin")) == std::string(5000, 'w'));
}

TEST_CASE("cli: info shows control characters from carton.toml escaped", "[cli][carton]") {
  // TOML's \u escapes give a carton's strings raw control bytes; info must
  // not hand them to the terminal. Descriptions keep their newlines.
  TempDir tmp;
  std::string dir = tmp.file("model"), out = tmp.file("m.carton");
  WriteText(dir + "/carton.toml",
            "spec_version = 1\nmodel_name = \"x\\u001b[2J\"\n"
            "short_description = \"two\\nlines \\u009b1m\"\n"
            "[[input]]\nname = \"in\\u0007\"\ndtype = \"float32\"\nshape = [1]\n"
            "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
            "runner_compat_version = 1\n");
  WriteText(dir + "/model/weights.bin", "w");
  REQUIRE(Run(Bin() + " pack '" + dir + "' -o '" + out + "'").exit_code == 0);
  auto info = Run(Bin() + " info '" + out + "'");
  REQUIRE(info.exit_code == 0);
  CHECK(info.out.find('\x1b') == std::string::npos);
  CHECK(info.out.find('\a') == std::string::npos);
  CHECK(info.out.find("name: x\\x1b[2J\n") != std::string::npos);
  CHECK(info.out.find("description: two\nlines \\xc2\\x9b1m\n") != std::string::npos);
  CHECK(info.out.find("  in\\x07  float32  [1]") != std::string::npos);
}

TEST_CASE("cli: verify exits 1 and lists every problem on stderr", "[cli][carton]") {
  TempDir tmp;
  const std::string out = DamagedCarton(tmp);

  auto r = Run(Bin() + " verify '" + out + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("carton verify: " + out + ": model/weights.bin: sha256") != std::string::npos);

  auto j = Run(Bin() + " verify --json '" + out + "'");
  CHECK(j.exit_code == 1);
  auto report = nlohmann::json::parse(j.out);
  CHECK(report["ok"] == false);
  CHECK(report["problems"][0]["where"] == "model/weights.bin");
}

TEST_CASE("cli: pack errors exit non-zero and leave no output", "[cli][carton]") {
  TempDir tmp;
  std::string dir = tmp.file("empty");
  std::filesystem::create_directories(dir + "/model");
  WriteText(dir + "/model/a", "a");
  auto r = Run(Bin() + " pack '" + dir + "' -o '" + tmp.file("o.carton") + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("carton pack: ") == 0);
  CHECK(r.err.find("no carton.toml") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.file("o.carton")));

  r = Run(Bin() + " pack '" + dir + "' -o '" + tmp.file("o.carton") +
          "' --runner noop --framework-version '>=1, <2' --name flags");
  CHECK(r.exit_code == 0);
  auto info = Run(Bin() + " info '" + tmp.file("o.carton") + "'");
  CHECK(info.out.find("name: flags") != std::string::npos);

  WriteText(dir + "/carton.toml", "spec_version = 1\n[runner]\nrunner_name = 5\n");
  r = Run(Bin() + " pack '" + dir + "' -o '" + tmp.file("p.carton") + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("carton.toml:3:") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.file("p.carton")));

  r = Run(Bin() + " pack '" + dir + "' -o x --compression lzma");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--compression") != std::string::npos);
}

TEST_CASE("cli: reading a missing or corrupt carton", "[cli][carton]") {
  TempDir tmp;
  CHECK(Run(Bin() + " info '" + tmp.file("none.carton") + "'").exit_code == 2);
  WriteText(tmp.file("junk.carton"), "PK\x03\x04 not really");
  auto r = Run(Bin() + " info '" + tmp.file("junk.carton") + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("carton info: ") == 0);
  CHECK(Run(Bin() + " verify '" + tmp.file("junk.carton") + "'").exit_code == 1);
  CHECK(Run(Bin() + " hash '" + tmp.file("junk.carton") + "'").exit_code == 1);
}

TEST_CASE("cli: tensors import and export convert safetensors", "[cli][carton]") {
  TempDir tmp;
  // A safetensors file with one F32 and one I64 tensor.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  auto bytes = carton::testing::RawSafetensors(header, 16, std::byte{3});
  carton::testing::WriteBytes(tmp.file("in.safetensors"), bytes);
  auto imp =
      Run(Bin() + " tensors import '" + tmp.file("in.safetensors") + "' '" + tmp.file("td") + "'");
  REQUIRE(imp.exit_code == 0);
  CHECK(std::filesystem::exists(tmp.file("td/index.toml")));
  auto exp =
      Run(Bin() + " tensors export '" + tmp.file("td") + "' '" + tmp.file("out.safetensors") + "'");
  REQUIRE(exp.exit_code == 0);
  auto same = Run(Bin() + " safetensors inspect --json '" + tmp.file("out.safetensors") + "'");
  auto j = nlohmann::json::parse(same.out);
  CHECK(j["tensors"].size() == 2);

  // BF16 has no carton type.
  std::string h2 = R"({"w":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}})";
  carton::testing::WriteBytes(tmp.file("bf.safetensors"), carton::testing::RawSafetensors(h2, 2));
  auto bad =
      Run(Bin() + " tensors import '" + tmp.file("bf.safetensors") + "' '" + tmp.file("td2") + "'");
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("\"w\"") != std::string::npos);
}

TEST_CASE("cli: commands that write a carton check the output path before any work",
          "[cli][carton]") {
  TempDir tmp;
  std::string dir = MakeModel(tmp), out = tmp.file("m.carton");
  REQUIRE(Run(Bin() + " pack '" + dir + "' -o '" + out + "'").exit_code == 0);
  const std::string a_dir = tmp.file("model");  // exists, a directory
  const std::string missing = tmp.file("no/such/dir/x.carton");
  struct Case {
    std::string command;
    std::string target;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"fetch '" + out + "' -o", a_dir, a_dir + ": is a directory; give the path of the .carton"},
      {"shrink '" + out + "' --url-prefix http://127.0.0.1:9/b --blobs '" + tmp.file("blobs") +
           "' -o",
       a_dir, a_dir + ": is a directory; give the path of the .carton"},
      // No registry listens there: the path is refused before any connection.
      {"pull oci://127.0.0.1:9/m:v1 -o", a_dir,
       a_dir + ": is a directory; give the path of the .carton"},
      {"fetch '" + out + "' -o", missing,
       missing + ": directory " + tmp.file("no/such/dir") + " does not exist"},
  };
  for (const auto& c : cases) {
    auto r = Run(Bin() + " " + c.command + " '" + c.target + "'");
    INFO(c.command << " " << c.target << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.find(".tmp-") == std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(tmp.file("blobs")));
}

TEST_CASE("cli: the CLI defines zlib's crc32, so libzip's CRC-32 goes through ISA-L",
          "[cli][crc32]") {
  // tests/zip/zlib_crc32_test.cc checks the definition against zlib's.
  auto nm = Run("nm -D --defined-only '" + Bin() + "'");
  REQUIRE(nm.exit_code == 0);
  CHECK_THAT(nm.out, Catch::Contains(" T crc32\n"));
}

TEST_CASE("cli: a damaged entry's error names the carton and the entry once, in every command",
          "[cli][carton][first-day]") {
  TempDir tmp;
  const std::string out = DamagedCarton(tmp);
  auto count = [](const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  const std::string env = "CARTON_CACHE_DIR='" + tmp.file("cache") + "' CARTON_RUNNER_PATH='" +
                          CARTON_NOOP_RUNNER_DIR + "' ";
  for (const std::string command : {"verify", "unpack", "load", "self-test"}) {
    const std::string extra = command == "unpack" ? " '" + tmp.file("out") + "'" : "";
    auto r = Run(env + Bin() + " " + command + " '" + out + "'" + extra);
    INFO(command << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.starts_with("carton " + command + ": "));
    CHECK(count(r.err, out) == 1);
    CHECK(count(r.err, "weights.bin") == 1);
    CHECK_FALSE(std::filesystem::exists(tmp.file("out")));
  }
}
