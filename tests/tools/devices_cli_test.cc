// carton devices, and --device on load, self-test and infer: the GPUs the
// CUDA driver lists (the stand-in driver, two GPUs), none without a driver,
// and the specs refused as usage errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "testing.h"

using namespace carton::testing;

namespace {

constexpr char kNoDriver[] = "/nonexistent/libcuda.so.1";

CommandResult Carton(const std::string& libcuda, const std::string& args) {
  return Run("CARTON_LIBCUDA='" + libcuda + "' " + CartonBin() + " " + args);
}

}  // namespace

TEST_CASE("cli devices: no driver is one line on stderr, exit 0, none listed", "[cli][devices]") {
  auto r = Carton(kNoDriver, "devices");
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK(r.err == std::string("carton devices: no GPU: no CUDA driver: cannot open ") + kNoDriver +
                     " (" + kNoDriver +
                     ": cannot open shared object file: No such file or directory)\n");
  auto j = Carton(kNoDriver, "devices --json");
  CHECK(j.exit_code == 0);
  CHECK(j.err.empty());
  auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["schema"] == 1);
  CHECK(doc["ok"] == true);
  CHECK(doc["driver"] == false);
  CHECK(doc["gpus"].empty());
  CHECK_THAT(doc["note"].get<std::string>(), Catch::StartsWith("no GPU: no CUDA driver"));
  auto none = Run("FAKE_CUDA_DEVICES=0 CARTON_LIBCUDA='" + std::string(CARTON_FAKE_CUDA) + "' " +
                  CartonBin() + " devices");
  CHECK(none.exit_code == 0);
  CHECK(none.out.empty());
  CHECK_THAT(none.err, Catch::StartsWith("carton devices: no GPU: "));
}

TEST_CASE("cli devices: lists each GPU's index, name, UUID and memory", "[cli][devices]") {
  auto r = Carton(CARTON_FAKE_CUDA, "devices");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out ==
        "0  Fake GPU 0  GPU-00010203-0405-0607-0809-0a0b0c0d0e0f  1.0 GiB\n"
        "1  Fake GPU 1  GPU-10111213-1415-1617-1819-1a1b1c1d1e1f  1.0 GiB\n");
  auto j = Carton(CARTON_FAKE_CUDA, "devices --json");
  CHECK(j.exit_code == 0);
  auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["ok"] == true);
  CHECK(doc["driver"] == true);
  CHECK_FALSE(doc.contains("note"));
  REQUIRE(doc["gpus"].size() == 2);
  CHECK(doc["gpus"][1]["index"] == 1);
  CHECK(doc["gpus"][1]["name"] == "Fake GPU 1");
  CHECK(doc["gpus"][1]["uuid"] == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  CHECK(doc["gpus"][1]["total_memory"] == 1073741824);
}

TEST_CASE("cli devices: a --device of none of the forms is a usage error naming them",
          "[cli][devices]") {
  for (const char* command :
       {"load m.carton", "self-test m.carton", "infer m.carton --output o.safetensors"}) {
    for (const char* spec : {"gpu0", "cuda:x", "GPU-1234", "''"}) {
      auto r = Carton(CARTON_FAKE_CUDA, std::string(command) + " --device " + spec);
      INFO(command << " --device " << spec << "\n" << r.err);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains("(cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)"));
    }
  }
  auto json = Carton(CARTON_FAKE_CUDA, "load --json m.carton --device gpu0");
  CHECK(json.exit_code == 2);
  CHECK(nlohmann::json::parse(json.out)["error"]["code"] == "invalid_argument");
}

TEST_CASE("cli devices: the help of each command that loads a model documents --device",
          "[cli][devices][help]") {
  for (const char* command : {"load", "self-test", "infer"}) {
    auto r = Run(CartonBin() + " " + command + " --help");
    INFO(command);
    CHECK_THAT(r.out, Catch::Contains("--device"));
    CHECK_THAT(r.out, Catch::Contains("cuda:N"));
    CHECK_THAT(r.out, Catch::Contains("CARTON_LIBCUDA"));
  }
  auto d = Run(CartonBin() + " devices --help");
  CHECK_THAT(d.out, Catch::Contains("carton devices --json"));
}

TEST_CASE("cli devices: a driver that sees no GPU is said once, by devices and by --device",
          "[cli][devices]") {
  const std::string driver = CARTON_FAKE_CUDA;
  const std::string none =
      "no GPU: the CUDA driver (" + driver + ") reports no CUDA-capable device";
  auto listed =
      Run("FAKE_CUDA_DEVICES=0 CARTON_LIBCUDA='" + driver + "' " + CartonBin() + " devices");
  CHECK(listed.exit_code == 0);
  CHECK(listed.err == "carton devices: " + none + "\n");
  auto json =
      Run("FAKE_CUDA_DEVICES=0 CARTON_LIBCUDA='" + driver + "' " + CartonBin() + " devices --json");
  CHECK(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out)["note"] == none);
  auto asked = Run("FAKE_CUDA_DEVICES=0 CARTON_LIBCUDA='" + driver + "' " + CartonBin() +
                   " load --device 0 m.carton");
  CHECK(asked.exit_code == 2);
  CHECK(asked.err == "carton load: device \"0\": no GPU (the CUDA driver (" + driver +
                         ") reports no CUDA-capable device)\n");
}
