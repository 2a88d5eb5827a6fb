// Load into a GPU, against the stand-in driver (tests/gpu/fake_cuda.cc):
// its copies run only when a stream or event is synchronized, so a staging
// buffer refilled before its copy ran shows here as wrong bytes. Failures
// (out of memory, a failed copy, no driver) free everything: the driver's
// log of allocations balances.
#include <dlfcn.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <thread>

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

// The calling thread's current context, through the stand-in driver's own
// entry points (its context for device N is the pointer value N + 1).
struct Contexts {
  Contexts() {
    void* library = ::dlopen(CARTON_FAKE_CUDA, RTLD_NOW);
    REQUIRE(library != nullptr);
    get = reinterpret_cast<int (*)(void**)>(::dlsym(library, "cuCtxGetCurrent"));
    set = reinterpret_cast<int (*)(void*)>(::dlsym(library, "cuCtxSetCurrent"));
    REQUIRE(get != nullptr);
    REQUIRE(set != nullptr);
  }
  std::uintptr_t Current() const {
    void* context = nullptr;
    REQUIRE(get(&context) == 0);
    return reinterpret_cast<std::uintptr_t>(context);
  }
  int (*get)(void**) = nullptr;
  int (*set)(void*) = nullptr;
};

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

TEST_CASE("load to cuda: the caller's thread keeps its current context, as a deleter's does",
          "[safetensors][load][gpu]") {
  TempDir dir;
  const std::string log = UseFakeCuda(dir);
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 16);
  Contexts contexts;
  // A consumer (torch, say) has cuda:1 current on this thread.
  REQUIRE(contexts.set(reinterpret_cast<void*>(2)) == 0);
  dlpack::DLManagedTensor* exported = nullptr;
  {
    LoadRequest request;
    request.paths = {path};
    auto loaded = Load(request, Target::Cuda(0), Tight());
    REQUIRE(loaded.ok());
    CHECK(contexts.Current() == 2);
    auto bytes = loaded->CopyToHost(loaded->tensors()[0]);
    REQUIRE(bytes.ok());
    CHECK(contexts.Current() == 2);
    auto managed = loaded->ToDLPack(loaded->tensors()[0].name);
    REQUIRE(managed.ok());
    exported = *managed;
  }
  CHECK(contexts.Current() == 2);
  // The last share is freed on a thread with no context current: the
  // memory is freed all the same, and the thread still has none after.
  std::uintptr_t after = 99;
  std::thread([&] {
    exported->deleter(exported);
    void* context = nullptr;
    contexts.get(&context);
    after = reinterpret_cast<std::uintptr_t>(context);
  }).join();
  CHECK(after == 0);
  REQUIRE(contexts.set(nullptr) == 0);
  RequireBalanced(log);
}
