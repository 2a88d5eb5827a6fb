// Load into a GPU, against the stand-in driver (tests/gpu/fake_cuda.cc):
// its copies run only when a stream or event is synchronized, so a staging
// buffer refilled before its copy ran shows here as wrong bytes. Failures
// (out of memory, a failed copy, no driver) free everything: the driver's
// log of allocations balances.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "carton/safetensors/load.h"
#include "safetensors/load_testing.h"

using namespace carton;
using namespace carton::safetensors;
using namespace carton::safetensors::testing;

namespace {

using Names = std::vector<std::pair<std::string, std::string>>;

LoadOptions Tight() {
  LoadOptions o;
  o.threads = 3;
  o.staging_buffer_size = 4096;
  o.staging_buffers = 2;
  o.streams = 2;
  return o;
}

void RequireBalanced(const std::string& log_path) {
  const DriverLog log = ReadDriverLog(log_path);
  CHECK(log.alloc == log.free);
  CHECK(log.hostalloc == log.hostfree);
}

// Runs the hidden child test below in a fresh process (the fake driver's
// copy counter starts at 0 there) with `env`; returns what it wrote.
std::string RunChild(const TempDir& dir, const std::string& path, std::vector<std::string> env) {
  const std::string result = dir.file("child.txt");
  env.push_back("CARTON_TEST_LOAD_PATH=" + path);
  env.push_back("CARTON_TEST_LOAD_RESULT=" + result);
  pid_t pid = carton::testing::Spawn({"/proc/self/exe", "safetensors: load child"}, env,
                                     dir.file("child.log"));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO(carton::testing::ReadText(dir.file("child.log")));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  return carton::testing::ReadText(result);
}

}  // namespace

TEST_CASE("safetensors: load child", "[.]") {
  const char* path = std::getenv("CARTON_TEST_LOAD_PATH");
  const char* result = std::getenv("CARTON_TEST_LOAD_RESULT");
  REQUIRE(path != nullptr);
  REQUIRE(result != nullptr);
  LoadRequest request;
  request.paths = {path};
  auto loaded = Load(request, Target::Cuda(0), Tight());
  std::ofstream(result) << (loaded.ok() ? "ok" : loaded.status().ToString());
}

TEST_CASE("load to cuda: every dtype, slices and shards arrive as the mapped reader reads them",
          "[safetensors][load][gpu]") {
  TempDir dir;
  const std::string log = UseFakeCuda(dir);
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 11);
  {
    LoadRequest request;
    request.paths = {path};
    auto loaded = Load(request, Target::Cuda(1), Tight());
    REQUIRE(loaded.ok());
    CHECK(loaded->target().ToString() == "cuda:1");
    CHECK(loaded->HostBytes(loaded->tensors()[0]).empty());
    CheckAgainstMapped(*loaded, path);
    CHECK(ReadDriverLog(log).alloc == 1);  // one device allocation for the plan
    const Names slices = {{"matrix", ":, 8:24"}, {"cube", "1:5, :, 3"}, {"I32", "::2, 1:4"}};
    auto sliced = Load(RequestOf(path, slices), Target::Cuda(0), Tight());
    REQUIRE(sliced.ok());
    CheckAgainstMapped(*sliced, path, slices);
    const std::string index = WriteShards(dir);
    request.paths = {index};
    auto sharded = Load(request, Target::Cuda(0));
    REQUIRE(sharded.ok());
    CheckAgainstMapped(*sharded, index);
  }
  RequireBalanced(log);
}

TEST_CASE("load to cuda: a device out of memory frees everything", "[safetensors][load][gpu]") {
  TempDir dir;
  const std::string log = UseFakeCuda(dir);
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 12);
  ScopedEnv memory("FAKE_CUDA_MEMORY", "10000");
  LoadRequest request;
  request.paths = {path};
  auto r = Load(request, Target::Cuda(0), Tight());
  REQUIRE(!r.ok());
  INFO(r.status().ToString());
  CHECK(r.status().code() == StatusCode::kIoError);
  CHECK(r.status().message().find("cuda:0: out of memory allocating") != std::string::npos);
  RequireBalanced(log);
  CHECK(ReadDriverLog(log).alloc == 0);
}

TEST_CASE("load to cuda: a failed copy fails the load and frees everything",
          "[safetensors][load][gpu]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 13);
  for (int n : {1, 3, 10}) {
    INFO("copy " << n);
    const std::string log = dir.file("driver" + std::to_string(n) + ".log");
    const std::string result = RunChild(dir, path,
                                        {"CARTON_LIBCUDA=" CARTON_FAKE_CUDA, "FAKE_CUDA_LOG=" + log,
                                         "FAKE_CUDA_FAIL_COPY=" + std::to_string(n)});
    CHECK(result.find("io error: a copy to the device failed: cuda:0: CUDA_ERROR_LAUNCH_FAILED") !=
          std::string::npos);
    RequireBalanced(log);
    CHECK(ReadDriverLog(log).alloc == 1);
  }
}

TEST_CASE("load to cuda: a failed read frees everything", "[safetensors][load][gpu]") {
  TempDir dir;
  const std::string log = UseFakeCuda(dir);
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 15);
  for (int fail_at : {2, 7, 20}) {
    INFO("read " << fail_at);
    LoadOptions options = Tight();
    options.open = FailingOpener(fail_at);
    LoadRequest request;
    request.paths = {path};
    auto r = Load(request, Target::Cuda(0), options);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == StatusCode::kIoError);
    CHECK(r.status().message() == path + ": read failed: Input/output error");
  }
  RequireBalanced(log);
  CHECK(ReadDriverLog(log).alloc == 3);
}

TEST_CASE("load to cuda: without a driver the load says why", "[safetensors][load][gpu]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 14);
  const std::string result = RunChild(dir, path, {"CARTON_LIBCUDA=/nonexistent/libcuda.so.1"});
  CHECK(result.find("unsupported: no CUDA driver: cannot open /nonexistent/libcuda.so.1") !=
        std::string::npos);
}
