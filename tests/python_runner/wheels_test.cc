// carton.lock through the Python runner, as real processes: wheels built
// here with Python's zipfile, served by nginx with Content-Encoding,
// fetched into the blob cache, unpacked once into the package cache and
// imported; wrong hashes, missing entries, unreachable wheels, bundled
// wheels, hostile wheels, concurrent loads.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "carton/manifest/sha256.h"
#include "nginx_testing.h"
#include "python_runner/python_runner_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

constexpr char kTiny[] = "tinydep-1.0-py3-none-any.whl";
constexpr char kOther[] = "otherdep-2.0-py3-none-any.whl";

std::string TinyWheel(const std::string& path) {
  return BuildWheel(path, {{"tinydep/__init__.py", "def triple(x):\n    return x * 3\n"},
                           {"tinydep-1.0.dist-info/METADATA",
                            "Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n"},
                           {"tinydep-1.0.dist-info/WHEEL",
                            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
                           {"tinydep-1.0.dist-info/RECORD", ""}});
}

// A wheel whose module sits under .data/purelib/, as some builders write it.
std::string OtherWheel(const std::string& path) {
  return BuildWheel(path, {{"otherdep-2.0.data/purelib/otherdep.py", "SUFFIX = 1\n"},
                           {"otherdep-2.0.dist-info/METADATA",
                            "Metadata-Version: 2.1\nName: otherdep\nVersion: 2.0\n"},
                           {"otherdep-2.0.dist-info/RECORD", ""}});
}

std::string Hex(const std::string& file) { return manifest::ToHex(*manifest::HashFile(file)); }

// Compresses `file` into nginx's blobs/ as <name><suffix>, for /enc/<e>/<name>.
void Serve(const NginxServer& nginx, const std::string& file, const std::string& name,
           const std::string& encoder, const std::string& suffix) {
  auto r =
      Run(encoder + " -c " + Quote(file) + " > " + Quote(nginx.www() + "/blobs/" + name + suffix));
  REQUIRE(r.exit_code == 0);
}

std::string Dep(const std::string& sha, const std::string& key, const std::string& value) {
  return "[[lockfile.locked_deps]]\nsha256 = \"" + sha + "\"\n" + key + " = \"" + value + "\"\n";
}

// A model importing the locked packages named in `imports` (each exposing
// a use in `expr` of x): y = expr.
std::string ModelUsing(const std::string& imports, const std::string& expr) {
  return imports +
         "\n\n\nclass M:\n"
         "    def infer_with_tensors(self, t):\n"
         "        x = t['x']\n"
         "        return {'y': " +
         expr +
         "}\n\n\n"
         "def get_model():\n"
         "    return M()\n";
}

// A model directory with the self-test y = 3x and the given lockfile.
std::string LockedModel(const std::string& dir, const std::string& lockfile,
                        const std::string& main_py,
                        const std::map<std::string, std::string>& more_files = {}) {
  TensorData d;
  d.tensors.push_back(Float32("x", {2}, {1, 2}));
  d.tensors.push_back(Float32("y", {2}, {3, 6}));
  const std::string config =
      "spec_version = 1\n[[self_test]]\nname = \"triple\"\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { y = \"@tensor_data/y\" }\n" +
      PythonRunnerToml();
  std::map<std::string, std::string> files = more_files;
  files["main.py"] = main_py;
  files[".carton/carton.lock"] = lockfile;
  return WritePythonModel(dir, config, files, d);
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("python runner: locked wheels are fetched with Content-Encoding, cached, imported",
          "[python][lockfile]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string tiny = TinyWheel(tmp.file(kTiny));
  const std::string other = OtherWheel(tmp.file(kOther));
  Serve(nginx, tiny, kTiny, "zstd -q", ".zst");
  Serve(nginx, other, kOther, "brotli", ".br");
  const std::string lockfile =
      "# written by a packager\norig_deps_hash = \"ignored\"\n"
      "[[lockfile]]\npython_version = \"2.7\"\n" +
      Dep(std::string(64, '0'), "url", "http://127.0.0.1:1/never.whl") + "[[lockfile]]\n" +
      CurrentMarkersToml() + Dep(Hex(tiny), "url", nginx.Url(std::string("/enc/zstd/") + kTiny)) +
      Dep(Hex(other), "url", nginx.Url(std::string("/enc/br/") + kOther));
  const std::string dir = LockedModel(
      tmp.file("m"), lockfile,
      ModelUsing("import tinydep\nimport otherdep", "tinydep.triple(x) * otherdep.SUFFIX"));
  const std::string cache = tmp.file("cache");

  auto first = Carton(cache, "self-test " + Quote(dir));
  INFO(first.out << first.err);
  CHECK(first.exit_code == 0);
  CHECK_THAT(first.out, Catch::Contains("PASS triple"));
  CHECK(nginx.Requests("/enc/") == 2);
  const std::string packages = cache + "/python/packages/";
  CHECK(fs::is_regular_file(packages + Hex(tiny) + "/tinydep/__init__.py"));
  CHECK(fs::is_regular_file(packages + Hex(tiny) + "/tinydep-1.0.dist-info/METADATA"));
  CHECK(fs::is_regular_file(packages + Hex(other) + "/otherdep.py"));  // out of .data/purelib
  CHECK(Names(packages) ==
        std::vector<std::string>{std::min(Hex(tiny), Hex(other)), std::max(Hex(tiny), Hex(other))});
  CHECK(fs::is_regular_file(cache + "/blobs/sha256/" + Hex(tiny)));

  // A second load, in a new process, makes no request.
  auto second = PythonRunner(cache, "self-test " + Quote(dir));
  CHECK(second.exit_code == 0);
  CHECK(nginx.Requests("/enc/") == 2);
  // Nor does a load whose package folders are gone but whose blobs are cached.
  fs::remove_all(packages);
  auto third = Carton(cache, "self-test " + Quote(dir));
  CHECK(third.exit_code == 0);
  CHECK(nginx.Requests("/enc/") == 2);
}

TEST_CASE("python runner: a wheel whose bytes do not match its sha256 is refused, never cached",
          "[python][lockfile]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string tiny = TinyWheel(tmp.file(kTiny));
  Serve(nginx, tiny, kTiny, "gzip", ".gz");
  const std::string wrong = manifest::ToHex(manifest::Sha256Of(AsBytes("another wheel")));
  const std::string url = nginx.Url(std::string("/enc/gzip/") + kTiny);
  const std::string dir =
      LockedModel(tmp.file("m"), "[[lockfile]]\n" + CurrentMarkersToml() + Dep(wrong, "url", url),
                  ModelUsing("import tinydep", "tinydep.triple(x)"));
  const std::string cache = tmp.file("cache");
  auto r = Carton(cache, "self-test " + Quote(dir));
  CHECK(r.exit_code == 1);  // corrupt
  CHECK_THAT(r.err, Catch::Contains(std::string("wheel ") + kTiny + " (" + url + "): "));
  CHECK_THAT(r.err, Catch::Contains("sha256"));
  CHECK_THAT(r.err, Catch::Contains("--opt python_deps=system"));
  CHECK(Names(cache + "/blobs/sha256").empty());
  CHECK(Names(cache + "/python/packages").empty());
}

TEST_CASE("python runner: no entry for this environment, unreachable wheels, python_deps=system",
          "[python][lockfile]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string model = ModelUsing("import numpy as np", "x * 3");
  const std::string cache = tmp.file("cache");
  SECTION("no entry") {
    const std::string dir =
        LockedModel(tmp.file("m"),
                    "[[lockfile]]\npython_version = \"2.7\"\nos_name = \"nt\"\n" +
                        Dep(std::string(64, 'a'), "url", "http://127.0.0.1:1/never.whl"),
                    model);
    auto r = Carton(cache, "self-test " + Quote(dir));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("model/.carton/carton.lock has no entry for this "
                                      "environment (os_name=posix"));
    CHECK_THAT(r.err, Catch::Contains("its entries are for:"));
    CHECK_THAT(r.err, Catch::Contains("os_name=nt, python_version=2.7"));
    CHECK_THAT(r.err, Catch::Contains("--opt python_deps=system"));
    auto system = Carton(cache, "self-test --opt python_deps=system " + Quote(dir));
    CHECK(system.exit_code == 0);
    CHECK_THAT(system.err, Catch::Contains("python_deps=system: carton.lock has no entry for "
                                           "this environment"));
  }
  SECTION("a broken lockfile") {
    const std::string dir = LockedModel(tmp.file("m"), "[[lockfile]]\nlocked_deps = 7\n", model);
    auto r = Carton(cache, "self-test " + Quote(dir));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("model/.carton/carton.lock:2:15: lockfile[0].locked_deps "
                                      "must be an array of tables"));
    auto system = Carton(cache, "self-test --opt python_deps=system " + Quote(dir));
    CHECK(system.exit_code == 0);
    CHECK_THAT(system.err, Catch::Contains("python_deps=system: ignoring model/.carton/carton.lock:"
                                           "2:15: "));
  }
  SECTION("a wheel that cannot be fetched") {
    const std::string url = nginx.Url("/enc/zstd/missing-1.0-py3-none-any.whl");
    const std::string dir = LockedModel(
        tmp.file("m"),
        "[[lockfile]]\n" + CurrentMarkersToml() + Dep(std::string(64, 'b'), "url", url), model);
    auto r = Carton(cache, "self-test " + Quote(dir));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("wheel missing-1.0-py3-none-any.whl (" + url + ")"));
    CHECK_THAT(r.err, Catch::Contains("404"));
    CHECK_THAT(r.err, Catch::Contains("--opt python_deps=system"));
    auto system = Carton(cache, "self-test --opt python_deps=system " + Quote(dir));
    CHECK(system.exit_code == 0);
    CHECK(std::count(system.err.begin(), system.err.end(), '\n') >= 1);
    CHECK_THAT(system.err, Catch::Contains("python_deps=system: skipping locked wheel "
                                           "missing-1.0-py3-none-any.whl (sha256 " +
                                           std::string(64, 'b') + ")"));
  }
}

TEST_CASE("python runner: bundled wheels travel in the carton and are checked",
          "[python][lockfile]") {
  TempDir tmp;
  const std::string tiny = TinyWheel(tmp.file(kTiny));
  const std::string sha = Hex(tiny);
  const std::string bundled = ".carton/bundled_wheels/" + sha + "/" + kTiny;
  std::ifstream in(tiny, std::ios::binary);
  const std::string wheel_bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string main_py = ModelUsing("import tinydep", "tinydep.triple(x)");
  const std::string lockfile =
      "[[lockfile]]\n" + CurrentMarkersToml() + Dep(sha, "bundled_whl_path", bundled);
  const std::string dir = LockedModel(tmp.file("m"), lockfile, main_py, {{bundled, wheel_bytes}});
  const std::string carton = tmp.file("m.carton");
  REQUIRE(Carton(tmp.file("cache"), "pack " + Quote(dir) + " -o " + Quote(carton)).exit_code == 0);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(carton));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(
      fs::is_regular_file(tmp.file("cache") + "/python/packages/" + sha + "/tinydep/__init__.py"));

  SECTION("a bundled wheel that is not the locked one") {
    const std::string other =
        LockedModel(tmp.file("o"), lockfile, main_py, {{bundled, wheel_bytes + "tampered"}});
    auto bad = Carton(tmp.file("cache2"), "self-test " + Quote(other));
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.err, Catch::Contains("bundled wheel " + bundled + ": sha256 is "));
    CHECK_THAT(bad.err, Catch::Contains(", carton.lock says " + sha));
  }
}

TEST_CASE("python runner: a wheel writing outside its folder is refused", "[python][lockfile]") {
  TempDir tmp;
  const std::string evil = BuildWheel(tmp.file("evil-1.0-py3-none-any.whl"),
                                      {{"evil/__init__.py", ""}, {"../../evil.py", "boom = 1\n"}});
  const std::string sha = Hex(evil);
  std::ifstream in(evil, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string bundled = ".carton/bundled_wheels/" + sha + "/evil-1.0-py3-none-any.whl";
  const std::string dir =
      LockedModel(tmp.file("m"), "[[lockfile]]\n" + Dep(sha, "bundled_whl_path", bundled),
                  ModelUsing("import evil", "x * 3"), {{bundled, bytes}});
  const std::string cache = tmp.file("cache");
  auto r = Carton(cache, "self-test " + Quote(dir));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("wheel evil-1.0-py3-none-any.whl"));
  CHECK_THAT(r.err, Catch::Contains("../../evil.py"));
  CHECK_FALSE(fs::exists(cache + "/evil.py"));
  CHECK_FALSE(fs::exists(cache + "/python/evil.py"));
  CHECK(Names(cache + "/python/packages").empty());
}

TEST_CASE("python runner: concurrent loads unpack a wheel once", "[python][lockfile]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string tiny = TinyWheel(tmp.file(kTiny));
  Serve(nginx, tiny, kTiny, "zstd -q", ".zst");
  const std::string dir =
      LockedModel(tmp.file("m"),
                  "[[lockfile]]\n" + CurrentMarkersToml() +
                      Dep(Hex(tiny), "url", nginx.Url(std::string("/enc/zstd/") + kTiny)),
                  ModelUsing("import tinydep", "tinydep.triple(x)"));
  const std::string cache = tmp.file("cache");
  const std::string runner = Quote(PythonRunnerDir() + "/carton-runner-python");
  std::string script = "export CARTON_CACHE_DIR=" + Quote(cache) + "; ";
  for (int i = 0; i < 3; ++i) {
    script += "(" + runner + " self-test " + Quote(dir) + " > " +
              Quote(tmp.file("out" + std::to_string(i))) + " 2>&1; echo $? > " +
              Quote(tmp.file("rc" + std::to_string(i))) + ") & ";
  }
  script += "wait";
  REQUIRE(Run("bash -c " + Quote(script)).exit_code == 0);
  for (int i = 0; i < 3; ++i) {
    INFO(ReadText(tmp.file("out" + std::to_string(i))));
    CHECK(ReadText(tmp.file("rc" + std::to_string(i))) == "0\n");
  }
  CHECK(Names(cache + "/python/packages") == std::vector<std::string>{Hex(tiny)});
  CHECK(nginx.Requests("/enc/") == 1);  // the blob cache's lock: one download
}
