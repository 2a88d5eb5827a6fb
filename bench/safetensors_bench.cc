// safetensors_bench: the safetensors writer and reader against baselines
// measured in the same run (results in docs/BENCHMARKS.md).
//
//   safetensors_bench [OUTPUT_DIR] [--runs N]   (default /tmp/carton-bench, 7 runs)
//   safetensors_bench --write-large FILE        the 1 GiB file of (a), for other benches
//   safetensors_bench --write-many FILE         the 100,000-tensor file of (c)
//
// Writes about 3.2 GB of scratch files into OUTPUT_DIR and removes them at
// the end. Each row gives the median of N runs and their spread (min-max);
// a ratio comes from runs made in turn with its baseline, one pair per
// round, and is given as the median and spread of the per-round ratios.
// Before every timed write, earlier outputs are removed and `sync` runs
// (untimed), so that no writeback lands in a later run. The load average is
// printed at the start and the end.
//
//   (a) write 1 GiB: WriteFile against the reference implementation's
//       pattern (temporary file, one ftruncate to the final size, writes
//       through a 1 MiB buffer, rename), reproduced here byte for byte, and
//       against cp of the same file. Also the CPU time (user + system) the
//       two writers take, which the other programs running on a shared
//       machine disturb less than the elapsed time.
//   (b) open + validate, 1,000 tensors: the first File::Open in a fresh
//       process (this program started again with --first-open) against the
//       steady state of many opens in one process; and the same for
//       simdjson's bare On-Demand parse of the header (--first-parse: a new
//       parser, the header already read, simdjson's kernel set by name as
//       the parent's), the floor that the parser itself sets.
//   (c) open + validate, 100,000 tensors (a 10 MB header): File::Open
//       against simdjson's bare DOM parse of the same header bytes.
//   (d) read every byte through the mapping, with and without
//       File::Populate(), with the pages warm and cold (dropped from the
//       page cache with posix_fadvise(POSIX_FADV_DONTNEED) before each run),
//       against File::ReadInto of each tensor and `cat FILE > /dev/null`.
#include <fcntl.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/writer.h"

namespace {

using carton::ByteView;
using carton::Status;
namespace st = carton::safetensors;

constexpr int kLargeTensors = 1000;
constexpr std::uint64_t kLargeDim = 512;  // 512 x 512 F32 = 1 MiB per tensor
constexpr int kSmallTensors = 100'000;
constexpr std::size_t kPoolFloats = 16 << 20;  // 64 MiB of source data
constexpr int kSteadyOpens = 201;
constexpr std::size_t kReferenceBuffer = 1 << 20;

// Keeps results of timed loops observable so the compiler cannot drop them.
volatile std::uint64_t g_sink = 0;

void Check(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "safetensors_bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(2);
}

void Die(const std::string& what) {
  std::fprintf(stderr, "safetensors_bench: %s\n", what.c_str());
  std::exit(2);
}

double Seconds(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void Shell(const std::string& command) {
  if (std::system(command.c_str()) != 0) Die("command failed: " + command);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// CPU time (user + system) of this process so far, in seconds.
double CpuSeconds() {
  rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Runs of one measurement, in seconds.
struct Runs {
  std::vector<double> t;
  double median() const { return carton::bench::Median(t); }
  double min() const { return *std::min_element(t.begin(), t.end()); }
  double max() const { return *std::max_element(t.begin(), t.end()); }
};

// Per-round ratios baseline / candidate (> 1: the candidate is faster).
Runs Ratios(const Runs& candidate, const Runs& baseline) {
  Runs r;
  for (std::size_t i = 0; i < candidate.t.size(); ++i) {
    r.t.push_back(baseline.t[i] / candidate.t[i]);
  }
  return r;
}

void PrintRow(const char* what, const Runs& r, std::uint64_t bytes) {
  std::printf("  %-46s %3zu %10.3f ms  (%.3f-%.3f)", what, r.t.size(), r.median() * 1e3,
              r.min() * 1e3, r.max() * 1e3);
  if (bytes != 0) std::printf("  %6.2f GB/s", static_cast<double>(bytes) / r.median() / 1e9);
  std::printf("\n");
}

void PrintRatio(const char* what, const Runs& r, const std::string& target = "") {
  std::printf("  %-46s %3zu %8.2f x     (%.2f-%.2f)  %s\n", what, r.t.size(), r.median(), r.min(),
              r.max(), target.c_str());
}

std::string Verdict(bool ok) { return ok ? "[meets target]" : "[MISSES target]"; }

// XOR of all bytes as 64-bit words (tail bytes folded in one by one).
std::uint64_t XorBytes(ByteView b) {
  std::uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  const std::byte* p = b.data();
  std::size_t i = 0, n = b.size();
  for (; i + 32 <= n; i += 32) {
    std::uint64_t w[4];
    std::memcpy(w, p + i, sizeof(w));
    a0 ^= w[0];
    a1 ^= w[1];
    a2 ^= w[2];
    a3 ^= w[3];
  }
  for (; i < n; ++i) a0 ^= std::to_integer<std::uint64_t>(p[i]);
  return a0 ^ a1 ^ a2 ^ a3;
}

std::uint64_t XorFile(const st::File& f) {
  std::uint64_t x = 0;
  for (const auto& t : f.tensors()) x ^= XorBytes(t.data);
  return x;
}

// Weight-like floats in [-1, 1) from a fixed xorshift sequence.
std::vector<float> MakePool() {
  std::vector<float> pool(kPoolFloats);
  std::uint64_t s = 0x9e3779b97f4a7c15ull;
  for (float& f : pool) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    f = static_cast<float>(static_cast<double>(s >> 11) / 4503599627370496.0 - 1.0);
  }
  return pool;
}

// `n` floats of the pool starting at a different place for each `i`.
ByteView PoolSlice(const std::vector<float>& pool, std::uint64_t i, std::size_t n) {
  std::size_t start = static_cast<std::size_t>((i * 104'729) % (pool.size() - n));
  return std::as_bytes(std::span<const float>(pool).subspan(start, n));
}

std::vector<st::TensorSource> LargeTensors(const std::vector<float>& pool) {
  std::vector<st::TensorSource> t;
  for (int i = 0; i < kLargeTensors; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model.layers.%03d.mlp.weight", i);
    t.push_back({name,
                 st::Dtype::kF32,
                 {kLargeDim, kLargeDim},
                 PoolSlice(pool, i, kLargeDim * kLargeDim),
                 {}});
  }
  return t;
}

std::vector<st::TensorSource> SmallTensors(const std::vector<float>& pool) {
  std::vector<st::TensorSource> t;
  for (int i = 0; i < kSmallTensors; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model.layers.%d.attn.q_norm.weight", i);
    t.push_back({name, st::Dtype::kF32, {4}, PoolSlice(pool, i, 4), {}});
  }
  return t;
}

// The reference implementation's write pattern, byte for byte the same
// file: a temporary file in the destination's directory, one ftruncate to
// the final size, the header and tensors through a 1 MiB buffer (a write
// as large as the buffer goes straight to the file, as Rust's BufWriter
// does), then rename.
void WriteLikeReference(const std::string& path, std::span<const st::TensorSource> tensors) {
  auto plan = st::PlanHeader(tensors, {});
  Check(plan.status(), "plan header");
  const std::string temp = path + ".reference-tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) Die("cannot create " + temp);
  if (::ftruncate(fd, static_cast<off_t>(plan->header.size() + plan->data_size)) != 0) {
    Die("ftruncate failed");
  }
  auto write_all = [&](const std::byte* p, std::size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) Die("write failed");
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  };
  std::vector<std::byte> buffer(kReferenceBuffer);
  std::size_t used = 0;
  auto put = [&](ByteView data) {
    if (used + data.size() > buffer.size()) {
      write_all(buffer.data(), used);
      used = 0;
    }
    if (data.size() >= buffer.size()) {
      write_all(data.data(), data.size());
    } else {
      std::memcpy(buffer.data() + used, data.data(), data.size());
      used += data.size();
    }
  };
  put(plan->header);
  for (std::size_t i : plan->order) put(tensors[i].bytes);
  write_all(buffer.data(), used);
  if (::close(fd) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) Die("cannot finish " + temp);
}

bool SameBytes(const std::string& a, const std::string& b) {
  auto fa = st::File::Open(a), fb = st::File::Open(b);
  return fa.ok() && fb.ok() && std::ranges::equal(fa->bytes(), fb->bytes());
}

// Drops the file's pages from the page cache (clean pages only, so it is
// flushed first). The host of this virtual machine may still hold the disk
// image in its own cache: "cold" here means cold for this kernel.
void DropFromPageCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Die("cannot open " + path);
  ::fdatasync(fd);
  if (::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) Die("posix_fadvise failed");
  ::close(fd);
}

// Runs this program with MODE FILE [ARG] and returns the seconds it reports
// for its one timed operation.
double FirstInChild(const std::string& self, const char* mode, const std::string& file,
                    const std::string& arg = "") {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) Die("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::execl(self.c_str(), self.c_str(), mode, file.c_str(), arg.empty() ? nullptr : arg.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  char text[64] = {};
  ssize_t n = ::read(pipe_fds[0], text, sizeof(text) - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die(std::string(mode) + " failed");
  }
  return std::strtod(text, nullptr);
}

// The header of a safetensors file (JSON without its padding), with the
// padding simdjson needs after it.
std::string HeaderJson(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char length[8];
  if (!in.read(length, 8)) Die("cannot read " + file);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(length[i]);
  std::string json(n, ' ');
  if (!in.read(json.data(), static_cast<std::streamsize>(n))) Die("cannot read " + file);
  json.resize(json.find_last_not_of(' ') + 1);
  json.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  return json;
}

// simdjson's bare On-Demand parse of a header: stage 1 and a visit of every
// top-level field (each value skipped, which still walks its structure).
std::uint64_t BareParse(simdjson::ondemand::parser& parser, const std::string& json) {
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(json.data(), json.size(), json.capacity()).get(doc) ||
      doc.get_object().get(root)) {
    Die("simdjson rejected the header");
  }
  std::uint64_t fields = 0;
  for (auto field : root) {
    if (field.error()) Die("simdjson rejected the header");
    ++fields;
  }
  return fields;
}

int FirstParse(const char* file, const char* kernel) {
  const std::string json = HeaderJson(file);
  const simdjson::implementation* chosen = simdjson::get_available_implementations()[kernel];
  if (chosen == nullptr) Die(std::string("no simdjson kernel ") + kernel);
  simdjson::get_active_implementation() = chosen;
  double s = Seconds([&] {
    simdjson::ondemand::parser parser;
    g_sink = g_sink + BareParse(parser, json);
  });
  std::printf("%.9f\n", s);
  return 0;
}

int FirstOpen(const char* file) {
  double s = Seconds([&] {
    auto f = st::File::Open(file);
    Check(f.status(), "open");
    g_sink = g_sink + f->size();
  });
  std::printf("%.9f\n", s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--first-open") return FirstOpen(argv[2]);
  if (argc == 4 && std::string(argv[1]) == "--first-parse") return FirstParse(argv[2], argv[3]);
  if (argc == 3 && std::string(argv[1]) == "--write-large") {
    const std::vector<float> pool = MakePool();
    Check(st::WriteFile(argv[2], LargeTensors(pool)), "write large file");
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--write-many") {
    const std::vector<float> pool = MakePool();
    Check(st::WriteFile(argv[2], SmallTensors(pool)), "write small file");
    return 0;
  }
  std::string cmdline;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) cmdline += ' ';
    cmdline += ShellQuote(argv[i]);
  }
  std::string dir = "/tmp/carton-bench";
  int runs = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (!a.empty() && a[0] != '-') {
      dir = a;
    } else {
      std::fprintf(stderr,
                   "usage: safetensors_bench [OUTPUT_DIR] [--runs N]\n"
                   "       safetensors_bench --write-large FILE\n"
                   "       safetensors_bench --write-many FILE\n");
      return 2;
    }
  }
  if (runs < 5) Die("--runs must be at least 5");
  const std::string self = std::filesystem::canonical("/proc/self/exe").string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) Die("cannot create " + dir + ": " + ec.message());
  std::printf("command: %s\nload average at start: %s\n", cmdline.c_str(), LoadAverage().c_str());

  const std::string large = dir + "/large.safetensors";
  const std::string small = dir + "/small.safetensors";
  const std::string ours = dir + "/ours.safetensors", theirs = dir + "/reference.safetensors",
                    copy = dir + "/cp.safetensors";
  auto remove_outputs = [&] {
    for (const auto& p : {ours, theirs, copy}) std::filesystem::remove(p, ec);
    Shell("sync");
  };

  const std::vector<float> pool = MakePool();
  const auto large_tensors = LargeTensors(pool);
  Check(st::WriteFile(large, large_tensors), "write large file");
  const std::uint64_t large_size = std::filesystem::file_size(large);
  std::printf("data: %s, %llu bytes, %d F32 tensors of 1 MiB; runs: %d\n\n", large.c_str(),
              static_cast<unsigned long long>(large_size), kLargeTensors, runs);
  std::printf("  %-46s %3s %13s  %s\n", "measurement", "n", "median", "(min-max), throughput");

  // (a) Writing, in rounds of three.
  Runs w_ours, w_ref, w_cp, cpu_ours, cpu_ref;
  Shell("cat " + ShellQuote(large) + " > /dev/null");
  for (int r = 0; r < runs; ++r) {
    remove_outputs();
    double cpu = CpuSeconds();
    w_ours.t.push_back(Seconds([&] { Check(st::WriteFile(ours, large_tensors), "write"); }));
    cpu_ours.t.push_back(CpuSeconds() - cpu);
    remove_outputs();
    cpu = CpuSeconds();
    w_ref.t.push_back(Seconds([&] { WriteLikeReference(theirs, large_tensors); }));
    cpu_ref.t.push_back(CpuSeconds() - cpu);
    remove_outputs();
    w_cp.t.push_back(Seconds([&] { Shell("cp " + ShellQuote(large) + " " + ShellQuote(copy)); }));
  }
  WriteLikeReference(theirs, large_tensors);
  Check(st::WriteFile(ours, large_tensors), "write");
  if (!SameBytes(ours, theirs)) Die("the writer's bytes differ from the reference pattern's");
  remove_outputs();
  Runs w_ratio_ref = Ratios(w_ours, w_ref), w_ratio_cp = Ratios(w_ours, w_cp);
  std::printf("(a) write 1 GiB (the same bytes from both writers, checked)\n");
  PrintRow("safetensors::WriteFile", w_ours, large_size);
  PrintRow("reference pattern (ftruncate, 1 MiB writes)", w_ref, large_size);
  PrintRow("cp FILE COPY", w_cp, large_size);
  PrintRatio("WriteFile speed / reference pattern's", w_ratio_ref,
             "target >= 1.1 " + Verdict(w_ratio_ref.median() >= 1.1));
  PrintRatio("WriteFile speed / cp's", w_ratio_cp);
  PrintRow("safetensors::WriteFile, CPU time", cpu_ours, 0);
  PrintRow("reference pattern, CPU time", cpu_ref, 0);
  PrintRatio("reference CPU time / WriteFile's", Ratios(cpu_ours, cpu_ref));

  // (b) Open + validate, first open in a process against the steady state.
  Shell("cat " + ShellQuote(large) + " > /dev/null");
  Runs steady, first;
  std::uint64_t large_header = 0;
  for (int i = 0; i < kSteadyOpens; ++i) {
    steady.t.push_back(Seconds([&] {
      auto f = st::File::Open(large);
      Check(f.status(), "open large file");
      large_header = f->header_size();
      g_sink = g_sink + f->size();
    }));
  }
  for (int r = 0; r < std::max(runs, 11); ++r) {
    first.t.push_back(FirstInChild(self, "--first-open", large));
  }
  Runs first_ratio;
  for (double t : first.t) first_ratio.t.push_back(t / steady.median());
  // The same for the bare parse, with the kernel the opens above chose.
  const std::string large_json = HeaderJson(large);
  const std::string kernel = simdjson::get_active_implementation()->name();
  simdjson::ondemand::parser steady_parser;
  Runs parse_steady, parse_first;
  for (int i = 0; i < kSteadyOpens; ++i) {
    parse_steady.t.push_back(
        Seconds([&] { g_sink = g_sink + BareParse(steady_parser, large_json); }));
  }
  for (int r = 0; r < std::max(runs, 11); ++r) {
    parse_first.t.push_back(FirstInChild(self, "--first-parse", large, kernel));
  }
  Runs parse_ratio;
  for (double t : parse_first.t) parse_ratio.t.push_back(t / parse_steady.median());
  std::printf("(b) open + validate, %d tensors, header %llu bytes\n", kLargeTensors,
              static_cast<unsigned long long>(large_header));
  PrintRow("File::Open, steady state (one process)", steady, 0);
  PrintRow("File::Open, first in a fresh process", first, 0);
  PrintRatio("first open / steady-state open", first_ratio,
             "target <= 1.5 " + Verdict(first_ratio.median() <= 1.5));
  std::printf("  simdjson kernel: %s\n", kernel.c_str());
  PrintRow("bare On-Demand parse, steady state", parse_steady, 0);
  PrintRow("bare On-Demand parse, first in a fresh process", parse_first, 0);
  PrintRatio("first parse / steady-state parse", parse_ratio);

  // (c) A header of 100,000 tensors against simdjson's bare parse of it.
  Check(st::WriteFile(small, SmallTensors(pool)), "write small file");
  Shell("cat " + ShellQuote(small) + " > /dev/null");
  std::string json;
  {
    auto f = st::File::Open(small);
    Check(f.status(), "open small file");
    json.assign(carton::AsChars(f->bytes().subspan(8, f->header_size())));
  }
  const simdjson::padded_string padded(json);
  simdjson::dom::parser parser;
  Runs open_small, parse_small;
  for (int r = 0; r < std::max(runs, 21); ++r) {
    open_small.t.push_back(Seconds([&] {
      auto f = st::File::Open(small);
      Check(f.status(), "open small file");
      g_sink = g_sink + f->size();
    }));
    parse_small.t.push_back(Seconds([&] {
      simdjson::dom::element root;
      if (parser.parse(padded).get(root)) Die("simdjson rejected the header");
      g_sink = g_sink + root.get_object().size();
    }));
  }
  Runs small_ratio = Ratios(parse_small, open_small);
  std::printf("(c) open + validate, %d tensors, header %zu bytes\n", kSmallTensors, json.size());
  PrintRow("File::Open", open_small, json.size());
  PrintRow("simdjson DOM parse of the header alone", parse_small, json.size());
  // Ratios() gives baseline / candidate; here the figure is open / parse.
  PrintRatio("File::Open / bare parse", small_ratio,
             "target <= 2.5 " + Verdict(small_ratio.median() <= 2.5));

  // (d) Reading every byte, warm and cold.
  for (bool cold : {false, true}) {
    Runs fresh, populated, read_into, cat;
    auto prepare = [&] {
      if (cold) {
        DropFromPageCache(large);
      } else {
        Shell("cat " + ShellQuote(large) + " > /dev/null");
      }
    };
    for (int r = 0; r < runs; ++r) {
      prepare();
      fresh.t.push_back(Seconds([&] {
        auto f = st::File::Open(large);
        Check(f.status(), "open");
        g_sink = g_sink + XorFile(*f);
      }));
      prepare();
      populated.t.push_back(Seconds([&] {
        auto f = st::File::Open(large);
        Check(f.status(), "open");
        Check(f->Populate(), "populate");
        g_sink = g_sink + XorFile(*f);
      }));
      prepare();
      read_into.t.push_back(Seconds([&] {
        auto f = st::File::Open(large);
        Check(f.status(), "open");
        std::vector<std::byte> buf;
        std::uint64_t x = 0;
        for (const auto& t : f->tensors()) {
          buf.resize(t.data.size());
          Check(f->ReadInto(t, buf), "read tensor");
          x ^= XorBytes(buf);
        }
        g_sink = g_sink + x;
      }));
      prepare();
      cat.t.push_back(Seconds([&] { Shell("cat " + ShellQuote(large) + " > /dev/null"); }));
    }
    std::printf("(d) read every byte, pages %s\n",
                cold ? "cold (dropped with POSIX_FADV_DONTNEED before each run)" : "warm");
    PrintRow("Open + read through the mapping", fresh, large_size);
    PrintRow("Open + Populate() + read through the mapping", populated, large_size);
    PrintRow("Open + ReadInto each tensor (pread)", read_into, large_size);
    PrintRow("cat FILE > /dev/null", cat, large_size);
    PrintRatio("Populate()+read speed / read speed", Ratios(populated, fresh));
    PrintRatio("read speed / cat's", Ratios(fresh, cat));
    PrintRatio("ReadInto speed / cat's", Ratios(read_into, cat));
  }

  std::filesystem::remove(large, ec);
  std::filesystem::remove(small, ec);
  std::printf("\nload average at end: %s\nchecksum %llu\n", LoadAverage().c_str(),
              static_cast<unsigned long long>(g_sink));
  return 0;
}
