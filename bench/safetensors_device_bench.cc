// safetensors_device_bench: safetensors::Load into a GPU (or host memory)
// against baselines measured in the same run (results in docs/BENCHMARKS.md;
// bench/gpu_load.sh runs it on a GPU machine).
//
//   safetensors_device_bench DIR
//
// Writes a bf16 checkpoint into DIR (kept for the next run when its size
// matches): one file, DIR/one.safetensors, and the same tensors as 4 shards
// with an index, DIR/shards/model.safetensors.index.json. Then, for each of
// CARTON_BENCH_RUNS rounds, runs each of these in a fresh process (this
// program with --one), in turn:
//   carton-file    Load(one.safetensors) into the target
//   carton-shards  Load(the index) into the target
//   ceiling        GPU: the file's data read into page-locked memory by 8
//                  threads (untimed), then one host-to-device copy of it,
//                  timed: what the link allows. Host: 8 threads of pread
//                  into plain memory.
//   safetensors    the reference's load_file(f, device=...), when
//                  `python3 -c "import safetensors, torch"` works
// and prints the median GB/s (bytes of tensor data / seconds of the load;
// the process start, the CUDA context and imports are not timed) and each
// one's peak resident memory (getrusage of the child). The first round of
// each carton load copies every tensor back and compares it with the file.
//
// Environment: CARTON_BENCH_MIB (checkpoint size, 64), CARTON_BENCH_TENSORS
// (64), CARTON_BENCH_RUNS (3), CARTON_BENCH_TARGET ("cuda:0", "cpu"; default
// cuda:0 when a driver is found), CARTON_BENCH_PYTHON (the interpreter,
// "python3"; "none" skips), and LoadOptions: CARTON_BENCH_THREADS,
// CARTON_BENCH_BUFFER_MIB, CARTON_BENCH_BUFFERS, CARTON_BENCH_STREAMS.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "carton/gpu/gpu.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/load.h"
#include "carton/safetensors/writer.h"

namespace {

using namespace carton;
using namespace carton::safetensors;
using Clock = std::chrono::steady_clock;

constexpr int kShards = 4;
constexpr std::uint64_t kRow = 1024;  // bf16 elements per row

long EnvLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : fallback;
}

std::string EnvText(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "safetensors_device_bench: %s\n", what.c_str());
  std::exit(2);
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Target ParseTarget(const std::string& text) {
  if (text == "cpu") return Target::Host();
  if (text.rfind("cuda:", 0) == 0) return Target::Cuda(std::atoi(text.c_str() + 5));
  Die("CARTON_BENCH_TARGET must be cpu or cuda:N, not " + text);
}

// --- the checkpoint ---------------------------------------------------------

struct Shape {
  std::uint64_t tensors;
  std::uint64_t rows;  // per tensor
  std::uint64_t tensor_bytes() const { return rows * kRow * 2; }
};

Shape CheckpointShape() {
  const auto mib = static_cast<std::uint64_t>(EnvLong("CARTON_BENCH_MIB", 64));
  const auto tensors = static_cast<std::uint64_t>(EnvLong("CARTON_BENCH_TENSORS", 64));
  const std::uint64_t rows = std::max<std::uint64_t>(1, (mib << 20) / tensors / (kRow * 2));
  return {tensors, rows};
}

// Writes `names` (each tensor's first 8 bytes are its index, the rest
// pseudo-random, so a misplaced tensor shows) into `path`.
void WriteTensors(const std::string& path, const Shape& shape, std::uint64_t first,
                  std::uint64_t count, const std::vector<std::byte>& noise) {
  std::vector<std::string> names;
  std::vector<std::uint64_t> ids(count);
  names.reserve(count);
  std::vector<TensorSource> tensors;
  for (std::uint64_t i = 0; i < count; ++i) {
    ids[i] = first + i;
    names.push_back("layers." + std::to_string(first + i) + ".weight");
    ByteStream stream = [&noise, id = &ids[i]](const ByteSink& sink) {
      CARTON_RETURN_IF_ERROR(sink(ByteView(reinterpret_cast<const std::byte*>(id), 8)));
      return sink(ByteView(noise).subspan(8));
    };
    tensors.push_back({names.back(), Dtype::kBF16, {shape.rows, kRow}, {}, stream});
  }
  Status s = WriteFile(path, tensors);
  if (!s.ok()) Die(s.ToString());
}

void Generate(const std::string& dir, const Shape& shape) {
  const std::string stamp = dir + "/stamp";
  const std::string want = std::to_string(shape.tensors) + " x " + std::to_string(shape.rows);
  std::FILE* f = std::fopen(stamp.c_str(), "r");
  char have[64] = {};
  if (f != nullptr) {
    const bool same = std::fgets(have, sizeof(have), f) != nullptr && want == have;
    std::fclose(f);
    if (same) return;
  }
  std::filesystem::create_directories(dir + "/shards");
  std::vector<std::byte> noise(shape.tensor_bytes());
  std::uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (std::size_t i = 0; i + 8 <= noise.size(); i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(noise.data() + i, &x, 8);
  }
  WriteTensors(dir + "/one.safetensors", shape, 0, shape.tensors, noise);
  std::string map;
  const std::uint64_t per = (shape.tensors + kShards - 1) / kShards;
  for (int k = 0; k < kShards; ++k) {
    const std::uint64_t first = std::min(shape.tensors, k * per);
    const std::uint64_t count = std::min(shape.tensors, first + per) - first;
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", k + 1, kShards);
    WriteTensors(dir + "/shards/" + name, shape, first, count, noise);
    for (std::uint64_t i = first; i < first + count; ++i) {
      map += std::string(map.empty() ? "" : ", ") + "\"layers." + std::to_string(i) +
             ".weight\": \"" + name + "\"";
    }
  }
  std::FILE* index = std::fopen((dir + "/shards/model.safetensors.index.json").c_str(), "w");
  std::fprintf(index, "{\"metadata\": {}, \"weight_map\": {%s}}\n", map.c_str());
  std::fclose(index);
  f = std::fopen(stamp.c_str(), "w");
  std::fputs(want.c_str(), f);
  std::fclose(f);
}

// --- one measurement, in a child process ----------------------------------

LoadOptions OptionsFromEnv() {
  LoadOptions o;
  o.threads = static_cast<unsigned>(EnvLong("CARTON_BENCH_THREADS", 0));
  const long mib = EnvLong("CARTON_BENCH_BUFFER_MIB", 0);
  if (mib > 0) o.staging_buffer_size = static_cast<std::size_t>(mib) << 20;
  o.staging_buffers = static_cast<unsigned>(EnvLong("CARTON_BENCH_BUFFERS", 0));
  o.streams = static_cast<unsigned>(EnvLong("CARTON_BENCH_STREAMS", 4));
  return o;
}

// Compares every loaded tensor with the file's bytes (mapped).
void Verify(const LoadedTensors& loaded, const std::string& path) {
  std::map<std::string, std::vector<std::byte>> expected;
  std::vector<File> files;
  std::vector<std::string> paths = {path};
  if (path.ends_with(".json")) {
    paths.clear();
    for (int k = 0; k < kShards; ++k) {
      char name[64];
      std::snprintf(name, sizeof(name), "/model-%05d-of-%05d.safetensors", k + 1, kShards);
      paths.push_back(std::filesystem::path(path).parent_path().string() + name);
    }
  }
  for (const std::string& p : paths) files.push_back(File::Open(p).value());
  for (const LoadedTensor& t : loaded.tensors()) {
    const TensorView* view = nullptr;
    for (const File& f : files) view = view != nullptr ? view : f.Find(t.name);
    if (view == nullptr) Die("no " + t.name + " in the files");
    auto bytes = loaded.CopyToHost(t);
    if (!bytes.ok()) Die(bytes.status().ToString());
    if (bytes->size() != view->data.size() ||
        std::memcmp(bytes->data(), view->data.data(), bytes->size()) != 0) {
      Die("tensor " + t.name + " differs from the file after the load");
    }
  }
}

int RunCarton(const std::string& path, const Target& target, bool verify) {
  // The device's context is made before the clock starts, as the
  // reference's baseline has torch's.
  std::optional<gpu::Device> device;
  if (target.kind == Target::Kind::kCuda) device.emplace(gpu::OpenDevice(target.index).value());
  LoadRequest request;
  request.paths = {path};
  const auto start = Clock::now();
  auto loaded = Load(request, target, OptionsFromEnv());
  const double seconds = Seconds(start);
  if (!loaded.ok()) Die(loaded.status().ToString());
  std::uint64_t bytes = 0;
  for (const LoadedTensor& t : loaded->tensors()) bytes += t.byte_size;
  if (verify) Verify(*loaded, path);
  std::printf("seconds=%.6f bytes=%llu\n", seconds, static_cast<unsigned long long>(bytes));
  return 0;
}

// Reads [offset, offset + size) of `fd` into `out` with 8 threads.
void ParallelRead(int fd, std::uint64_t offset, std::byte* out, std::uint64_t size) {
  const unsigned threads = 8;
  const std::uint64_t step = (size + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      for (std::uint64_t done = t * step; done < std::min(size, (t + 1) * step);) {
        const std::uint64_t want = std::min(size, (t + 1) * step) - done;
        const ssize_t n = ::pread(fd, out + done, want, static_cast<off_t>(offset + done));
        if (n <= 0) Die("pread failed");
        done += static_cast<std::uint64_t>(n);
      }
    });
  }
  for (std::thread& w : workers) w.join();
}

int RunCeiling(const std::string& path, const Target& target) {
  File file = File::Open(path).value();
  const std::uint64_t size = file.file_size() - file.data_start();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target.kind == Target::Kind::kHost) {
    // Untouched pages, as a load's destination is: the faults are timed.
    const auto start = Clock::now();
    std::unique_ptr<std::byte[]> out(new std::byte[size]);
    ParallelRead(fd, file.data_start(), out.get(), size);
    std::printf("seconds=%.6f bytes=%llu\n", Seconds(start), static_cast<unsigned long long>(size));
    ::close(fd);
    return 0;
  }
  gpu::Device device = gpu::OpenDevice(target.index).value();
  gpu::PinnedMemory pinned = device.AllocatePinned(size).value();
  gpu::DeviceMemory memory = device.Allocate(size).value();
  gpu::Stream stream = device.CreateStream().value();
  const auto read_start = Clock::now();
  ParallelRead(fd, file.data_start(), pinned.data(), size);
  const double read_seconds = Seconds(read_start);
  ::close(fd);
  const auto start = Clock::now();
  if (!stream.CopyToDevice(memory.address(), pinned.data(), size).ok()) Die("copy failed");
  if (!stream.Synchronize().ok()) Die("copy failed");
  std::printf("seconds=%.6f bytes=%llu read_seconds=%.6f\n", Seconds(start),
              static_cast<unsigned long long>(size), read_seconds);
  return 0;
}

// --- the parent ---------------------------------------------------------------

struct ChildResult {
  double seconds = 0;
  double bytes = 0;
  double read_seconds = 0;
  long maxrss_kib = 0;
};

ChildResult RunChild(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe(out) != 0) Die("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof(buf))) > 0;) text.append(buf, n);
  ::close(out[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die(argv[0] + " " + argv[1] + " failed");
  ChildResult r;
  r.maxrss_kib = usage.ru_maxrss;
  std::sscanf(text.c_str(), "seconds=%lf bytes=%lf read_seconds=%lf", &r.seconds, &r.bytes,
              &r.read_seconds);
  return r;
}

constexpr char kPythonLoad[] =
    "import sys, time, torch\n"
    "from safetensors.torch import load_file\n"
    "dev = sys.argv[2]\n"
    "if dev.startswith('cuda'):\n"
    "    torch.zeros(1, device=dev); torch.cuda.synchronize()\n"
    "t = time.perf_counter()\n"
    "d = load_file(sys.argv[1], device=dev)\n"
    "if dev.startswith('cuda'): torch.cuda.synchronize()\n"
    "s = time.perf_counter() - t\n"
    "print('seconds=%.6f bytes=%d' % (s, sum(v.numel() * v.element_size() for v in "
    "d.values())))\n";

bool PythonWorks(const std::string& python) {
  if (python == "none") return false;
  const std::string command = python + " -c 'import safetensors, torch' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

struct Mode {
  std::string name;
  std::vector<std::string> argv;
};

std::vector<Mode> Modes(const std::string& self, const std::string& dir,
                        const std::string& target) {
  const std::string one = dir + "/one.safetensors";
  const std::string index = dir + "/shards/model.safetensors.index.json";
  std::vector<Mode> modes = {
      {"carton-file", {self, "--one", "carton", one, target}},
      {"carton-shards", {self, "--one", "carton", index, target}},
      {target == "cpu" ? "ceiling (8-thread pread)" : "ceiling (pinned H2D copy)",
       {self, "--one", "ceiling", one, target}},
  };
  const std::string python = EnvText("CARTON_BENCH_PYTHON", "python3");
  if (PythonWorks(python)) {
    modes.push_back({"safetensors load_file", {python, "-c", kPythonLoad, one, target}});
  } else {
    std::printf("(no reference baseline: %s cannot import safetensors and torch)\n",
                python.c_str());
  }
  return modes;
}

void Report(const std::vector<Mode>& modes, const std::vector<std::vector<ChildResult>>& results) {
  std::printf("%-28s %10s %10s %12s %14s\n", "load", "GB/s", "seconds", "peak RSS MiB",
              "vs ceiling");
  auto rate_of = [&](std::size_t m) {
    std::vector<double> rates;
    for (const ChildResult& r : results[m]) rates.push_back(r.bytes / r.seconds / 1e9);
    return bench::Median(rates);
  };
  double ceiling = 0;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    if (modes[m].name.rfind("ceiling", 0) == 0) ceiling = rate_of(m);
  }
  for (std::size_t m = 0; m < modes.size(); ++m) {
    std::vector<double> seconds, rss;
    for (const ChildResult& r : results[m]) {
      seconds.push_back(r.seconds);
      rss.push_back(static_cast<double>(r.maxrss_kib) / 1024);
    }
    const double rate = rate_of(m);
    std::printf("%-28s %10.2f %10.4f %12.0f %13.2fx\n", modes[m].name.c_str(), rate,
                bench::Median(seconds), bench::Median(rss), ceiling > 0 ? rate / ceiling : 0.0);
    // The GPU ceiling's untimed fill: what 8 threads of pread give alone.
    if (results[m][0].read_seconds > 0) {
      std::vector<double> reads;
      for (const ChildResult& r : results[m]) reads.push_back(r.bytes / r.read_seconds / 1e9);
      std::printf("%-28s %10.2f\n", "  (its fill: 8-thread pread)", bench::Median(reads));
    }
  }
}

int RunAll(const std::string& self, const std::string& dir) {
  const Shape shape = CheckpointShape();
  const std::string target =
      EnvText("CARTON_BENCH_TARGET", gpu::DriverAvailable() ? "cuda:0" : "cpu");
  Generate(dir, shape);
  const int runs = static_cast<int>(EnvLong("CARTON_BENCH_RUNS", 3));
  std::printf("%llu bf16 tensors of %llu bytes (%.1f MiB) into %s, medians of %d runs\n",
              static_cast<unsigned long long>(shape.tensors),
              static_cast<unsigned long long>(shape.tensor_bytes()),
              static_cast<double>(shape.tensors * shape.tensor_bytes()) / (1 << 20), target.c_str(),
              runs);
  std::vector<Mode> modes = Modes(self, dir, target);
  std::vector<std::vector<ChildResult>> results(modes.size());
  for (int run = 0; run < runs; ++run) {
    for (std::size_t m = 0; m < modes.size(); ++m) {
      std::vector<std::string> argv = modes[m].argv;
      if (run == 0 && modes[m].name.rfind("carton", 0) == 0) argv.push_back("--verify");
      results[m].push_back(RunChild(argv));
    }
  }
  Report(modes, results);
  std::printf("every carton load verified against the files (first round)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::string(argv[1]) == "--one") {
    const std::string mode = argv[2];
    const Target target = ParseTarget(argv[4]);
    if (mode == "carton") return RunCarton(argv[3], target, argc >= 6);
    if (mode == "ceiling") return RunCeiling(argv[3], target);
    Die("unknown mode " + mode);
  }
  if (argc != 2) Die("usage: safetensors_device_bench DIR (see the comment at the top)");
  return RunAll("/proc/self/exe", argv[1]);
}
