// Loader benchmarks (results in docs/BENCHMARKS.md):
//   loader_bench WORKDIR [SIZE_MIB=2048] [RUNNER_DIR] [SHARDS=1]
// 1. sha256 of a stored carton of SIZE_MIB with `openssl dgst -sha256`, and,
//    for reference, SHA-256 of the whole carton in this process on one
//    thread (a shard's hash cannot be split, so with one shard this bounds
//    the first load from below);
// 2. the first load of it (materializing the cache entry); the weights are
//    SHARDS safetensors files of SIZE_MIB / SHARDS each, as checkpoints are
//    sharded;
// 3. cache hits, warm and with the carton's and entry's pages evicted
//    (posix_fadvise DONTNEED on those files; a machine-wide drop_caches would
//    disturb everything else running here);
// 4. serve-mode round trips of a 4 MiB input and output over the noop runner.
// Medians of several runs.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/carton/pack.h"
#include "carton/loader/cache.h"
#include "carton/loader/loader.h"
#include "carton/manifest/sha256.h"
#include "carton/runner/client.h"
#include "carton/safetensors/writer.h"

using namespace carton;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// What a shell does to load `carton`: its source, then loader::Load.
Result<loader::LoadedCarton> LoadOnce(const std::string& carton) {
  CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(carton, Environment{}));
  return loader::Load(*source);
}

using carton::bench::Median;

// User + system CPU time of this process (all threads) or of its waited-for
// children, in ms: unlike wall time, it hardly moves with the machine's load.
double CpuMs(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "loader_bench: %s: %s\n", what.c_str(), s.message().c_str());
  std::exit(2);
}

void Evict(const fs::path& p) {
  std::error_code ec;
  auto evict_file = [](const fs::path& f) {
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  };
  if (fs::is_regular_file(p, ec)) return evict_file(p);
  for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) evict_file(it->path());
  }
}

const char kConfig[] =
    "spec_version = 1\nmodel_name = \"bench\"\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: loader_bench WORKDIR [SIZE_MIB] [RUNNER_DIR] [SHARDS]\n");
    return 2;
  }
  fs::path work = argv[1];
  std::uint64_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2048;
  std::string runner_dir = argc > 3 ? argv[3] : "";
  const std::uint64_t shards = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1;
  if (shards == 0 || mib % (64 * shards) != 0) {
    std::fprintf(stderr, "loader_bench: SIZE_MIB must be a multiple of 64 x SHARDS\n");
    return 2;
  }
  fs::create_directories(work / "model/model");
  std::string cache = (work / "cache").string();
  ::setenv("CARTON_CACHE_DIR", cache.c_str(), 1);
  std::ofstream(work / "model/carton.toml") << kConfig;

  const std::string name = shards == 1 ? "model" : "model-" + std::to_string(shards) + "-shards";
  std::string carton = (work / (name + ".carton")).string();
  if (!fs::exists(carton)) {
    std::vector<std::uint32_t> buf(16 << 20);
    std::uint32_t x = 12345;
    const std::uint64_t shard_mib = mib / shards;
    std::vector<fs::path> written;
    for (std::uint64_t k = 0; k < shards; ++k) {
      char file[96];
      std::snprintf(file, sizeof(file), "weights-%05llu-of-%05llu.safetensors",
                    static_cast<unsigned long long>(k + 1),
                    static_cast<unsigned long long>(shards));
      const fs::path path =
          work / "model/model" / (shards == 1 ? std::string("weights.safetensors") : file);
      written.push_back(path);
      std::ofstream out(path, std::ios::binary);
      // The header only; the data follows below, written in chunks.
      safetensors::TensorSource t{
          "w", safetensors::Dtype::kU32, {shard_mib << 18}, {}, [](const safetensors::ByteSink&) {
            return Status::Ok();
          }};
      auto plan = safetensors::PlanHeader({&t, 1}, {});
      if (!plan.ok()) Die("header", plan.status());
      out.write(reinterpret_cast<const char*>(plan->header.data()), plan->header.size());
      for (std::uint64_t done = 0; done < shard_mib; done += 64) {
        for (auto& v : buf) v = (x = x * 1664525u + 1013904223u);
        out.write(reinterpret_cast<const char*>(buf.data()), buf.size() * 4);
      }
    }
    PackOptions po;
    po.compression = PackCompression::kStored;
    po.alignment = 4096;
    auto r = Pack((work / "model").string(), carton, po);
    if (!r.ok()) Die("pack", r.status());
    for (const auto& p : written) fs::remove(p);
  }
  std::printf("carton: %s, %.0f MiB, stored, weights in %llu file(s)\n", carton.c_str(),
              fs::file_size(carton) / 1048576.0, static_cast<unsigned long long>(shards));

  std::vector<double> sha, first, warm, cold, sha_cpu, first_cpu;
  for (int i = 0; i < 5; ++i) {
    const double c0 = CpuMs(RUSAGE_CHILDREN);
    auto t0 = Clock::now();
    if (std::system(("openssl dgst -sha256 '" + carton + "' >/dev/null").c_str()) != 0) return 2;
    sha.push_back(Ms(t0, Clock::now()));
    sha_cpu.push_back(CpuMs(RUSAGE_CHILDREN) - c0);
  }
  std::vector<double> one_thread;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    auto d = manifest::HashFile(carton);
    one_thread.push_back(Ms(t0, Clock::now()));
    if (!d.ok()) Die("hash", d.status());
  }
  loader::CartonCache cc(cache);
  for (int i = 0; i < 5; ++i) {
    auto h = OpenSource(carton, Environment{}).value()->Info();
    if (!h.ok()) Die("info", h.status());
    (void)cc.Remove(h->manifest_hash);
    ::sync();  // the previous entry's writeback must not throttle this one
    const double c0 = CpuMs(RUSAGE_SELF);
    auto t0 = Clock::now();
    auto c = LoadOnce(carton);
    first.push_back(Ms(t0, Clock::now()));
    first_cpu.push_back(CpuMs(RUSAGE_SELF) - c0);
    if (!c.ok()) Die("first load", c.status());
  }
  for (int i = 0; i < 9; ++i) {
    auto t0 = Clock::now();
    auto c = LoadOnce(carton);
    warm.push_back(Ms(t0, Clock::now()));
    if (!c.ok() || !c->stats().cache_hit) Die("hit", c.status());
  }
  ::sync();
  for (int i = 0; i < 5; ++i) {
    Evict(carton);
    Evict(cache);
    auto t0 = Clock::now();
    auto c = LoadOnce(carton);
    cold.push_back(Ms(t0, Clock::now()));
    if (!c.ok() || !c->stats().cache_hit) Die("cold hit", c.status());
  }
  double m = Median(sha);
  std::printf("load average at the end: ");
  std::fflush(stdout);
  (void)std::system("cut -d' ' -f1-3 /proc/loadavg");
  // The range of a measurement, beside its median.
  auto range = [](const std::vector<double>& v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.1f-%.1f", *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(buf);
  };
  std::printf("openssl dgst -sha256        %9.1f ms (median of 5; %s)\n", m, range(sha).c_str());
  std::printf("sha256, one thread, mapped  %9.1f ms (median of 5; %s) = %.2fx openssl\n",
              Median(one_thread), range(one_thread).c_str(), Median(one_thread) / m);
  std::printf("first load (miss)           %9.1f ms (median of 5; %s) = %.2fx hashing\n",
              Median(first), range(first).c_str(), Median(first) / m);
  std::printf("CPU time: openssl %.1f ms (%s), first load %.1f ms (%s) = %.2fx (medians of 5)\n",
              Median(sha_cpu), range(sha_cpu).c_str(), Median(first_cpu), range(first_cpu).c_str(),
              Median(first_cpu) / Median(sha_cpu));
  std::printf("cache hit, warm             %9.2f ms (median of 9)\n", Median(warm));
  std::printf("cache hit, pages evicted    %9.2f ms (median of 5)\n", Median(cold));

  if (!runner_dir.empty()) {
    auto c = LoadOnce(carton);
    if (!c.ok()) Die("load", c.status());
    auto p = runner::RunnerProcess::Start(runner_dir + "/carton-runner-noop", c->root_dir());
    if (!p.ok()) Die("runner", p.status());
    std::vector<std::byte> data(4 << 20, std::byte{1});
    std::vector<loader::Tensor> in = {
        loader::Tensor::View("x", DataType::kFloat32, {1 << 20}, data)};
    std::vector<double> rt;
    for (int i = 0; i < 200; ++i) {
      auto t0 = Clock::now();
      auto out = p->Infer(in);
      rt.push_back(Ms(t0, Clock::now()));
      if (!out.ok()) Die("infer", out.status());
    }
    std::sort(rt.begin(), rt.end());
    std::printf("serve round trip, 4 MiB     %9.3f ms (median of 200; p90 %.3f ms)\n", Median(rt),
                rt[rt.size() * 9 / 10]);
    (void)p->Close();
  }
  return 0;
}
