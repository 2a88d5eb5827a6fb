// Flags every command spells the same way: -j/--threads/--jobs as one
// option, -q/--quiet accepted everywhere; and info's lists in columns.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing.h"

using carton::testing::Run;
using carton::testing::TempDir;
namespace fs = std::filesystem;

using carton::testing::WriteText;

namespace {

std::string Bin() { return carton::testing::CartonBin(); }
std::string Q(const std::string& s) { return "'" + s + "'"; }

// A carton with three inputs of different widths, in `tmp`.
std::string PackModel(const TempDir& tmp) {
  WriteText(tmp.file("m/model/weights.bin"), "0123456789");
  WriteText(tmp.file("m/model/a_much_longer_file_name.txt"), "x");
  const std::string out = tmp.file("a.carton");
  auto r = Run(Bin() + " pack " + Q(tmp.file("m")) + " -o " + Q(out) +
               " --runner noop --framework-version =1.0.0 --input x:float32:[2]"
               " --input a_longer_name:int64:[1,2,3] --input mid:uint8:'*'"
               " --output-tensor y:string:[4] -q");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

// The lines under `title:` in info's output, up to the next title.
std::vector<std::string> Section(const std::string& out, const std::string& title) {
  std::vector<std::string> lines;
  std::size_t at = out.find("\n" + title + ":\n");
  if (at == std::string::npos) return lines;
  at += title.size() + 3;
  while (at < out.size() && out.compare(at, 2, "  ") == 0) {
    const std::size_t end = out.find('\n', at);
    lines.push_back(out.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// Where each cell of `line` starts: cells are separated by two spaces or
// more (a shape's "[1, 2, 3]" stays one cell).
std::vector<std::size_t> CellStarts(const std::string& line) {
  std::vector<std::size_t> starts;
  std::size_t i = line.find_first_not_of(' ');
  while (i != std::string::npos) {
    starts.push_back(i);
    const std::size_t gap = line.find("  ", i);
    i = gap == std::string::npos ? gap : line.find_first_not_of(' ', gap);
  }
  return starts;
}

// Each line of `lines` has `cells` cells, starting at the same offsets.
void CheckAligned(const std::vector<std::string>& lines, std::size_t cells) {
  REQUIRE(lines.size() >= 2);
  const std::vector<std::size_t> first = CellStarts(lines[0]);
  for (const auto& line : lines) {
    INFO(line);
    const std::vector<std::size_t> starts = CellStarts(line);
    REQUIRE(starts.size() == cells);
    CHECK(starts == first);
  }
}

}  // namespace

TEST_CASE("cli: -j, --threads and --jobs are one option wherever one of them is taken",
          "[cli][flags]") {
  for (const char* c : {"pack", "verify", "load", "info", "unpack", "hash", "ls", "cat", "diff",
                        "push", "pull", "shrink", "fetch"}) {
    INFO(c);
    auto h = Run(Bin() + " " + c + " --help");
    CHECK(h.exit_code == 0);
    CHECK_THAT(h.out, Catch::Contains("-j,--threads,--jobs UINT"));
  }
  TempDir tmp;
  const std::string model = PackModel(tmp);
  for (const char* spelling : {"-j 2", "--threads 2", "--jobs 2", "--jobs=2"}) {
    INFO(spelling);
    auto v = Run(Bin() + " verify " + spelling + " " + Q(model));
    CHECK(v.exit_code == 0);
    auto l = Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " " + Bin() + " load -q " + spelling +
                 " " + Q(model));
    INFO(l.err);
    CHECK(l.exit_code == 0);
  }
  // One value: the spellings are the same option, not two.
  auto twice = Run(Bin() + " verify -j 2 --jobs 3 " + Q(model));
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err, Catch::Contains("--threads"));
}

TEST_CASE("cli: every command accepts -q, and it never silences stdout", "[cli][flags]") {
  TempDir tmp;
  const std::string m = PackModel(tmp);
  // Refused before any request: -q is parsed, and no time goes on retries.
  const std::string bad = "oci://127.0.0.1:1/NOT-LOWERCASE:v1";
  const std::vector<std::string> commands = {
      "pack " + Q(tmp.file("m")) + " -o " + Q(tmp.file("b.carton")),
      "init " + Q(tmp.file("new")),
      "verify " + Q(m),
      "info " + Q(m),
      "hash " + Q(m),
      "ls " + Q(m),
      "cat " + Q(m) + " carton.toml",
      "diff " + Q(m) + " " + Q(m),
      "unpack " + Q(m) + " " + Q(tmp.file("u")),
      "push " + Q(m) + " " + bad,
      "pull " + bad + " -o " + Q(tmp.file("p.carton")),
      "shrink " + Q(m) + " -o " + Q(tmp.file("s.carton")) + " --url-prefix http://x/ --blobs " +
          Q(tmp.file("blobs")),
      "fetch " + Q(m) + " -o " + Q(tmp.file("f.carton")),
      "tensors import " + Q(tmp.file("none.safetensors")) + " " + Q(tmp.file("td")),
      "tensors export " + Q(tmp.file("td")) + " " + Q(tmp.file("t.safetensors")),
      "safetensors inspect " + Q(tmp.file("none.safetensors")),
      "safetensors verify " + Q(tmp.file("none.safetensors")),
      "safetensors get " + Q(tmp.file("none.safetensors")) + " w -o " + Q(tmp.file("g")),
      "load " + Q(m),
      "cache list",
      "cache verify",
      "cache rm 0123456789abcdef",
      "cache gc",
      "self-test " + Q(m),
      "infer " + Q(m) + " --output " + Q(tmp.file("o.safetensors")),
      "runners",
      "version",
  };
  const std::string env = "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) +
                          " CARTON_RUNNER_PATH=" + Q(tmp.file("no-runners")) + " ";
  for (const auto& c : commands) {
    for (const char* q : {"-q", "--quiet"}) {
      INFO(c << " " << q);
      auto r = Run(env + Bin() + " " + c + " " + q);
      INFO(r.err);
      CHECK_THAT(r.err, !Catch::Contains("not expected"));
      CHECK_THAT(r.err, !Catch::Contains("--help' for more information"));
    }
  }
  // Requested output stays; what -q silences goes.
  auto h = Run(Bin() + " hash -q " + Q(m));
  CHECK(h.exit_code == 0);
  CHECK(h.out.size() == 65);
  auto i = Run(Bin() + " init -q " + Q(tmp.file("quiet")));
  CHECK(i.exit_code == 0);
  CHECK_THAT(i.err, !Catch::Contains("wrote"));
  CHECK(fs::exists(tmp.file("quiet/carton.toml")));
  auto n = Run(env + Bin() + " runners -q");
  CHECK(n.exit_code == 0);
  CHECK(n.err.empty());
}

TEST_CASE("cli: info prints its lists in aligned columns", "[cli][flags][info]") {
  TempDir tmp;
  const std::string m = PackModel(tmp);
  auto r = Run(Bin() + " info " + Q(m));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  // name, dtype, shape: the dtype column starts at the same offset on
  // every input line.
  const std::vector<std::string> inputs = Section(r.out, "inputs");
  REQUIRE(inputs.size() == 3);
  CheckAligned(inputs, 3);
  CHECK(inputs[1].find("int64") == inputs[0].find("float32"));
  CHECK(inputs[2].find("uint8") == inputs[0].find("float32"));
  // path, size, method.
  const std::vector<std::string> files = Section(r.out, "files");
  CHECK(files.size() == 4);
  CheckAligned(files, 3);
  // --json is unchanged.
  auto j = Run(Bin() + " info --json " + Q(m));
  CHECK(j.exit_code == 0);
  CHECK_THAT(j.out,
             Catch::Contains("\"dtype\":\"int64\"") || Catch::Contains("\"dtype\": \"int64\""));
}
