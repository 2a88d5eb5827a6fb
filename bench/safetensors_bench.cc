// safetensors_bench: throughput of the safetensors writer and reader against
// the tools a user would compare them with (cp, cat, memcpy).
//
//   safetensors_bench [OUTPUT_DIR]     (default /tmp/carton-bench)
//
// Writes about 2.1 GB of scratch files into OUTPUT_DIR and removes them at
// the end. Every number is the median of several runs with the page cache
// warm; dirty pages are flushed (sync) before each timed write so that
// writeback of an earlier run does not land in a later one.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

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

// Keeps results of timed loops observable so the compiler cannot drop them.
volatile std::uint64_t g_sink = 0;

void Check(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "safetensors_bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(2);
}

double TimeOnce(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median seconds of `runs` calls to `f`; `before` runs untimed before each.
double Median(
    int runs, const std::function<void()>& f, const std::function<void()>& before = [] {}) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    before();
    t.push_back(TimeOnce(f));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void Shell(const std::string& command) {
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "safetensors_bench: command failed: %s\n", command.c_str());
    std::exit(2);
  }
}

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

void PrintRow(const char* what, int runs, double seconds, std::uint64_t bytes,
              const std::string& note = "") {
  std::printf("  %-44s %5d %10.3f ms %9.2f GB/s  %s\n", what, runs, seconds * 1e3,
              static_cast<double>(bytes) / seconds / 1e9, note.c_str());
}

void PrintRatio(const char* what, double ratio, const std::string& note = "") {
  std::printf("  %-44s %5s %13s %9.2f x     %s\n", what, "", "", ratio, note.c_str());
}

std::string Verdict(bool ok) { return ok ? "[meets target]" : "[MISSES target]"; }

}  // namespace

int main(int argc, char** argv) {
  std::string cmdline;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) cmdline += ' ';
    cmdline += ShellQuote(argv[i]);
  }
  std::printf("command: %s\n", cmdline.c_str());
  if (argc > 2) {
    std::fprintf(stderr, "usage: safetensors_bench [OUTPUT_DIR]\n");
    return 2;
  }
  const std::string dir = argc == 2 ? argv[1] : "/tmp/carton-bench";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "safetensors_bench: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 2;
  }
  const std::string large = dir + "/large.safetensors";
  const std::string copy = dir + "/large.copy";
  const std::string small = dir + "/small.safetensors";

  const std::vector<float> pool = MakePool();
  const auto large_tensors = LargeTensors(pool);
  Check(st::WriteFile(large, large_tensors), "write large file");
  std::uint64_t large_size = std::filesystem::file_size(large);
  Shell("cat " + ShellQuote(large) + " > /dev/null");  // warm the page cache

  std::printf("file: %s, %llu bytes, %d F32 tensors of 1 MiB\n\n", large.c_str(),
              static_cast<unsigned long long>(large_size), kLargeTensors);
  std::printf("  %-44s %5s %13s %14s\n", "measurement", "runs", "median", "throughput");

  // (a) Writing, against cp of the same file. Both write a new file whose
  // old copy was removed (untimed), so neither pays for freeing 1 GiB.
  auto sync = [] { Shell("sync"); };
  const std::string written = large + ".written";
  double t_write = Median(
      5, [&] { Check(st::WriteFile(written, large_tensors), "write"); },
      [&] {
        std::filesystem::remove(written, ec);
        sync();
      });
  std::filesystem::remove(written, ec);
  double t_cp = Median(
      5, [&] { Shell("cp " + ShellQuote(large) + " " + ShellQuote(copy)); },
      [&] {
        std::filesystem::remove(copy, ec);
        sync();
      });
  std::filesystem::remove(copy, ec);
  std::printf("(a) write\n");
  PrintRow("safetensors::WriteFile", 5, t_write, large_size);
  PrintRow("cp FILE COPY", 5, t_cp, large_size);
  PrintRatio("write / cp throughput", t_cp / t_write);

  // (b) Open and validate.
  Shell("cat " + ShellQuote(large) + " > /dev/null");
  std::uint64_t large_header = 0;
  double t_open = Median(201, [&] {
    auto f = st::File::Open(large);
    Check(f.status(), "open large file");
    large_header = f->header_size();
    g_sink = g_sink + f->size();
  });
  std::printf("(b) open + validate, %d tensors, header %llu bytes (throughput: of the header)\n",
              kLargeTensors, static_cast<unsigned long long>(large_header));
  PrintRow("File::Open", 201, t_open, large_header, "target < 0.5 ms " + Verdict(t_open < 0.5e-3));

  // (c) Reading every byte.
  auto opened = st::File::Open(large);
  Check(opened.status(), "open large file");
  g_sink = g_sink + XorFile(*opened);  // faults the mapping in
  double t_mapped_fresh = Median(7, [&] {
    auto f = st::File::Open(large);
    Check(f.status(), "open large file");
    g_sink = g_sink + XorFile(*f);
  });
  double t_populated = Median(7, [&] {
    auto f = st::File::Open(large);
    Check(f.status(), "open large file");
    Check(f->Populate(), "populate");
    g_sink = g_sink + XorFile(*f);
  });
  double t_mapped_warm = Median(7, [&] { g_sink = g_sink + XorFile(*opened); });
  // Copying every tensor out (as a loader filling framework tensors does),
  // through one reused buffer, with File::ReadInto.
  double t_read_into = Median(7, [&] {
    auto f = st::File::Open(large);
    Check(f.status(), "open large file");
    std::vector<std::byte> buf(f->tensors().empty() ? 0 : f->tensors()[0].data.size());
    std::uint64_t x = 0;
    for (const auto& t : f->tensors()) {
      buf.resize(t.data.size());
      Check(f->ReadInto(t, buf), "read tensor");
      x ^= std::to_integer<std::uint64_t>(buf[buf.size() / 2]);
    }
    g_sink = g_sink + x;
  });
  double t_cat = Median(7, [&] { Shell("cat " + ShellQuote(large) + " > /dev/null"); });
  std::vector<std::byte> src(large_size, std::byte{0x5a}), dst(large_size);
  double t_memcpy = Median(7, [&] {
    std::memcpy(dst.data(), src.data(), src.size());
    g_sink = g_sink + std::to_integer<std::uint64_t>(dst[dst.size() / 2]);
  });
  src = {};
  dst = {};
  std::printf("(c) read every byte\n");
  PrintRow("xor via mapping, open + read", 7, t_mapped_fresh, large_size);
  PrintRow("xor via mapping, open + Populate + read", 7, t_populated, large_size);
  PrintRow("xor via mapping, pages already mapped", 7, t_mapped_warm, large_size);
  PrintRow("File::ReadInto every tensor (pread copy)", 7, t_read_into, large_size);
  PrintRow("cat FILE > /dev/null", 7, t_cat, large_size);
  PrintRow("memcpy, same size, heap to heap", 7, t_memcpy, large_size);
  PrintRatio("open + read / cat throughput", t_cat / t_mapped_fresh);
  PrintRatio("open + Populate + read / cat throughput", t_cat / t_populated);
  PrintRatio("ReadInto every tensor / cat throughput", t_cat / t_read_into);
  PrintRatio("open + read / memcpy throughput", t_memcpy / t_mapped_fresh);
  PrintRatio("already mapped / memcpy throughput", t_memcpy / t_mapped_warm);

  // (d) A header with many small tensors.
  Check(st::WriteFile(small, SmallTensors(pool)), "write small file");
  Shell("cat " + ShellQuote(small) + " > /dev/null");
  std::uint64_t header_bytes = 0;
  double t_small = Median(21, [&] {
    auto f = st::File::Open(small);
    Check(f.status(), "open small file");
    header_bytes = f->header_size();
    g_sink = g_sink + f->size();
  });
  double json_mb_s = static_cast<double>(header_bytes) / t_small / 1e6;
  std::printf("(d) open + validate, %d tensors, header %llu bytes (throughput: of the header)\n",
              kSmallTensors, static_cast<unsigned long long>(header_bytes));
  PrintRow("File::Open", 21, t_small, header_bytes,
           "target >= 0.20 GB/s " + Verdict(json_mb_s >= 200));

  std::filesystem::remove(large, ec);
  std::filesystem::remove(small, ec);
  std::printf("\nchecksum %llu\n", static_cast<unsigned long long>(g_sink));
  return 0;
}
