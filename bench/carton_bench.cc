// carton_bench: the `carton` CLI's pack and verify against the tools a user
// would compare them with (openssl dgst for hashing, zip -6 for packing), and
// the peak memory of pack and verify.
//
//   carton_bench CARTON [SCRATCH_DIR] [--big]
//
// CARTON is the built CLI (e.g. build-rel/tools/carton); SCRATCH_DIR defaults
// to /tmp/carton-bench2. The bench writes a ~2 GiB model directory (four
// 500 MiB weight files and a few hundred small text files) and the archives
// made from it, about 7 GiB in all. --big then grows the model to ~4 GiB
// (eight weight files) and measures peak memory on it (about 11 GiB on disk).
// Everything in SCRATCH_DIR that the bench wrote is removed at the end.
//
// Every command runs as a child process; its time is wall time from fork to
// wait4, and its peak memory is ru_maxrss from wait4 (which counts the pages
// of files the child maps, too) beside the largest RssAnon polled from /proc
// while it runs (its own memory). The page cache is warm
// (every input is read once before timing); dirty pages are flushed (sync)
// and the old output removed, untimed, before each timed write.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_stats.h"

namespace {

namespace fs = std::filesystem;

constexpr int kWeightFiles = 4;
constexpr int kBigWeightFiles = 8;
constexpr std::uint64_t kWeightBytes = std::uint64_t{500} << 20;
constexpr int kModelTextFiles = 200;
constexpr int kMiscTextFiles = 100;
constexpr std::uint64_t kMinTextBytes = 1 << 10;
constexpr std::uint64_t kMaxTextBytes = 64 << 10;
constexpr std::size_t kWriteChunkFloats = 1 << 20;  // 4 MiB per write
constexpr int kRuns = 5;                            // pack stored, verify, openssl, cp
constexpr int kZstdRuns = 3;
constexpr int kZipRuns = 1;  // zip -6 takes about 1.5 minutes on 2 GiB
constexpr double kMiB = 1024.0 * 1024.0;

constexpr const char* kCartonToml =
    "spec_version = 1\n"
    "model_name = \"bench-model\"\n"
    "short_description = \"Generated weights and text files for carton_bench\"\n"
    "\n"
    "[runner]\n"
    "runner_name = \"noop\"\n"
    "required_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

// Paths the bench created, removed at exit (also when it gives up early).
std::vector<std::string> g_scratch_paths;

void RemoveScratch() {
  for (const auto& p : g_scratch_paths) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  g_scratch_paths.clear();
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "carton_bench: %s\n", message.c_str());
  std::exit(2);
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string CommandText(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(a);
  }
  return out;
}

struct RunResult {
  double seconds = 0;
  std::uint64_t max_rss_bytes = 0;
  // The largest RssAnon seen in /proc/PID/status while the child ran, polled
  // every few milliseconds: max RSS also counts file pages the child maps,
  // which the kernel can drop at will; this is its own memory.
  std::uint64_t peak_anon_bytes = 0;
};

// RssAnon of `pid` in bytes, or 0 if it cannot be read.
std::uint64_t RssAnon(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/status";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "RssAnon: %llu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return static_cast<std::uint64_t>(kib) * 1024;
}

// Runs `argv` (looked up in PATH) in `cwd` with stdin and stdout on
// /dev/null and stderr into `log`; exits the bench if it does not exit 0.
RunResult Run(const std::vector<std::string>& argv, const std::string& log,
              const std::string& cwd = "") {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) Die("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDWR);
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null_fd < 0 || log_fd < 0) _exit(126);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  std::uint64_t peak_anon = 0;
  for (;;) {
    pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) Die("wait4: " + std::string(std::strerror(errno)));
    peak_anon = std::max(peak_anon, RssAnon(pid));
    usleep(2000);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "carton_bench: command failed (status %d): %s\n", status,
                 CommandText(argv).c_str());
    std::string cat = "cat " + ShellQuote(log) + " >&2";
    (void)std::system(cat.c_str());
    std::exit(2);
  }
  // ru_maxrss is in KiB on Linux.
  return {seconds, static_cast<std::uint64_t>(usage.ru_maxrss) * 1024, peak_anon};
}

void Sync() { ::sync(); }

void Remove(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

struct Samples {
  std::vector<double> seconds;
  std::uint64_t max_rss_bytes = 0;
  std::uint64_t peak_anon_bytes = 0;

  void Add(const RunResult& r) {
    seconds.push_back(r.seconds);
    max_rss_bytes = std::max(max_rss_bytes, r.max_rss_bytes);
    peak_anon_bytes = std::max(peak_anon_bytes, r.peak_anon_bytes);
  }
  int runs() const { return static_cast<int>(seconds.size()); }
  double Median() const { return carton::bench::Median(seconds); }
};

class Random {
 public:
  explicit Random(std::uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  std::uint64_t Next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  std::uint64_t Below(std::uint64_t n) { return Next() % n; }

 private:
  std::uint64_t s_;
};

void WriteAll(int fd, const void* data, std::size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) Die("write " + path + ": " + std::strerror(errno));
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void WriteFile(const std::string& path, const void* data, std::size_t n) {
  fs::create_directories(fs::path(path).parent_path());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Die("open " + path + ": " + std::strerror(errno));
  WriteAll(fd, data, n, path);
  if (close(fd) != 0) Die("close " + path + ": " + std::strerror(errno));
}

// Weight-like float32 data: roughly normal around 0 with a standard deviation
// of about 0.02 (a sum of four uniforms), at full precision. Like real fp32
// weights, zstd and deflate shrink it only a little (to about 92% and 90%);
// no two files and no two chunks repeat.
void WriteWeights(const std::string& path, std::uint64_t bytes, std::uint64_t seed) {
  fs::create_directories(fs::path(path).parent_path());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Die("open " + path + ": " + std::strerror(errno));
  Random rng(seed);
  std::vector<std::uint32_t> chunk(kWriteChunkFloats);
  constexpr float kScale = 0.02f / (65536.0f * 0.57735f);  // 4 uniforms: sd 0.577 * 65536
  for (std::uint64_t left = bytes; left > 0;) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left / 4, chunk.size()));
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t r = rng.Next();
      std::int64_t sum = static_cast<std::int64_t>((r & 0xffff) + ((r >> 16) & 0xffff) +
                                                   ((r >> 32) & 0xffff) + (r >> 48)) -
                         2 * 65535;
      float f = static_cast<float>(sum) * kScale;
      std::memcpy(&chunk[i], &f, sizeof(f));
    }
    WriteAll(fd, chunk.data(), n * 4, path);
    left -= n * 4;
  }
  if (close(fd) != 0) Die("close " + path + ": " + std::strerror(errno));
}

// Text-like content: lines of words from a small vocabulary.
std::string MakeText(Random& rng, std::uint64_t bytes) {
  static const char* const kWords[] = {
      "the",    "model",    "layer",  "weight", "bias",    "token",  "attention", "head",
      "vocab",  "merge",    "config", "hidden", "size",    "float",  "tensor",    "input",
      "output", "embed",    "norm",   "scale",  "dropout", "rotary", "position",  "cache",
      "batch",  "sequence", "length", "of",     "and",     "to",     "is",        "a",
      "with",   "for",      "in",     "value",  "key",     "query",  "0.02",      "1e-5",
      "true",   "false",    "null",   "gelu",   "silu",    "relu",   "bfloat16",  "float32"};
  constexpr std::size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);
  std::string s;
  s.reserve(bytes + 16);
  int words_on_line = 0;
  while (s.size() < bytes) {
    s += kWords[rng.Below(kWordCount)];
    if (++words_on_line >= 6 + static_cast<int>(rng.Below(10))) {
      s += '\n';
      words_on_line = 0;
    } else {
      s += ' ';
    }
  }
  s.resize(bytes);
  return s;
}

std::uint64_t WriteTextFiles(const std::string& dir, const char* pattern, int count,
                             std::uint64_t seed) {
  Random rng(seed);
  std::uint64_t total = 0;
  for (int i = 0; i < count; ++i) {
    std::uint64_t size = kMinTextBytes + rng.Below(kMaxTextBytes - kMinTextBytes + 1);
    char name[128];
    std::snprintf(name, sizeof(name), pattern, i % 8, i);
    std::string text = MakeText(rng, size);
    WriteFile(dir + "/" + name, text.data(), text.size());
    total += size;
  }
  return total;
}

std::string WeightPath(const std::string& model, int i) {
  char name[64];
  std::snprintf(name, sizeof(name), "/model/weights-%05d-of-%05d.bin", i + 1, kBigWeightFiles);
  return model + name;
}

// Every regular file below `dir`, sorted, and their total size.
std::vector<std::string> ListFiles(const std::string& dir, std::uint64_t* total) {
  std::vector<std::string> files;
  *total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    files.push_back(e.path().string());
    *total += e.file_size();
  }
  std::sort(files.begin(), files.end());
  return files;
}

void WarmCache(const std::vector<std::string>& files) {
  std::vector<char> buf(4 << 20);
  for (const auto& f : files) {
    int fd = open(f.c_str(), O_RDONLY);
    if (fd < 0) Die("open " + f + ": " + std::strerror(errno));
    while (read(fd, buf.data(), buf.size()) > 0) {
    }
    close(fd);
  }
}

std::string Verdict(bool ok) { return ok ? "[meets target]" : "[MISSES target]"; }

void PrintHeader() {
  std::printf("  %-46s %4s %11s %11s\n", "measurement", "runs", "median", "throughput");
}

void PrintRow(const std::string& what, const Samples& s, std::uint64_t bytes) {
  double t = s.Median();
  std::printf("  %-46s %4d %9.3f s %6.2f GB/s\n", what.c_str(), s.runs(), t,
              static_cast<double>(bytes) / t / 1e9);
}

void PrintRatio(const std::string& what, double ratio, const std::string& note) {
  std::printf("  %-46s %4s %9.2f x   %s\n", what.c_str(), "", ratio, note.c_str());
}

constexpr std::uint64_t kMemoryLimit = std::uint64_t{128} << 20;

void PrintMemoryHeader(double model_bytes) {
  std::printf("4. peak memory, %.2f GiB model (target: max RSS < %llu MiB)\n",
              model_bytes / kMiB / 1024, static_cast<unsigned long long>(kMemoryLimit >> 20));
  std::printf("  %-46s %4s %11s %11s\n", "command", "runs", "max RSS", "anon peak");
}

void PrintMemory(const std::string& what, const Samples& s) {
  std::printf("  %-46s %4d %7.1f MiB %7.1f MiB   %s\n", what.c_str(), s.runs(),
              static_cast<double>(s.max_rss_bytes) / kMiB,
              static_cast<double>(s.peak_anon_bytes) / kMiB,
              Verdict(s.max_rss_bytes < kMemoryLimit).c_str());
}

struct Model {
  std::string dir;
  std::vector<std::string> files;
  std::uint64_t bytes = 0;
};

Model Describe(const std::string& dir) {
  Model m;
  m.dir = dir;
  m.files = ListFiles(dir, &m.bytes);
  return m;
}

std::vector<std::string> OpensslArgs(const Model& m) {
  std::vector<std::string> a = {"openssl", "dgst", "-sha256"};
  a.insert(a.end(), m.files.begin(), m.files.end());
  return a;
}

std::vector<std::string> PackArgs(const std::string& carton, const Model& m,
                                  const char* compression, const std::string& out) {
  return {carton, "pack", "--compression", compression, m.dir, "-o", out};
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmdline;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) cmdline += ' ';
    cmdline += ShellQuote(argv[i]);
  }
  std::printf("command: %s\n", cmdline.c_str());
  bool big = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--big")
      big = true;
    else
      positional.push_back(a);
  }
  if (positional.empty() || positional.size() > 2) {
    std::fprintf(stderr, "usage: carton_bench CARTON [SCRATCH_DIR] [--big]\n");
    return 2;
  }
  const std::string carton = fs::absolute(positional[0]).string();
  const std::string scratch =
      fs::absolute(positional.size() == 2 ? positional[1] : "/tmp/carton-bench2").string();
  const std::string model_dir = scratch + "/model-dir";
  const std::string stored = scratch + "/stored.carton";
  const std::string zstd = scratch + "/zstd.carton";
  const std::string zipped = scratch + "/zip6.zip";
  const std::string copied = scratch + "/model-copy";
  const std::string log = scratch + "/stderr.log";
  std::error_code ec;
  fs::create_directories(scratch, ec);
  if (ec) Die("cannot create " + scratch + ": " + ec.message());
  if (fs::exists(model_dir)) fs::remove_all(model_dir);
  g_scratch_paths = {model_dir, copied, stored, zstd, zipped, log};
  std::atexit(RemoveScratch);

  // The model directory.
  WriteFile(model_dir + "/carton.toml", kCartonToml, std::strlen(kCartonToml));
  for (int i = 0; i < kWeightFiles; ++i) WriteWeights(WeightPath(model_dir, i), kWeightBytes, i);
  WriteTextFiles(model_dir, "model/tokenizer-%d/part-%04d.txt", kModelTextFiles, 1001);
  WriteTextFiles(model_dir, "misc/notes-%d/note-%04d.md", kMiscTextFiles, 2002);
  Model model = Describe(model_dir);
  Sync();
  WarmCache(model.files);
  std::printf(
      "model: %s, %zu files, %llu bytes (%d x %llu MiB float32 weights, "
      "%d + %d text files of 1-64 KiB)\n",
      model_dir.c_str(), model.files.size(), static_cast<unsigned long long>(model.bytes),
      kWeightFiles, static_cast<unsigned long long>(kWeightBytes >> 20), kModelTextFiles,
      kMiscTextFiles);
  std::printf("carton: %s\n", carton.c_str());
  std::printf("commands timed (stdout to /dev/null):\n");
  std::printf("  %s\n", CommandText(PackArgs(carton, model, "stored", stored)).c_str());
  std::printf("  %s\n", CommandText({carton, "verify", stored}).c_str());
  std::printf("  %s\n", CommandText(PackArgs(carton, model, "zstd", zstd)).c_str());
  std::printf("  openssl dgst -sha256 FILES...   (the %zu files of the model)\n",
              model.files.size());
  std::printf("  cd %s && zip -q -r -6 %s .\n", ShellQuote(model_dir).c_str(),
              ShellQuote(zipped).c_str());
  std::printf("  %s   (for reference: the cost of writing the bytes)\n\n",
              CommandText({"cp", "-r", model_dir, copied}).c_str());

  // 1 and 2: stored pack and verify against openssl, interleaved so that
  // noise from other users of the machine lands on all three alike.
  Samples openssl, pack_stored, verify_stored, copy;
  for (int i = 0; i < kRuns; ++i) {
    openssl.Add(Run(OpensslArgs(model), log));
    fs::remove_all(copied, ec);
    Sync();
    copy.Add(Run({"cp", "-r", model_dir, copied}, log));
    fs::remove_all(copied, ec);
    Remove(stored);
    Sync();
    pack_stored.Add(Run(PackArgs(carton, model, "stored", stored), log));
    Sync();
    verify_stored.Add(Run({carton, "verify", stored}, log));
  }
  std::uint64_t stored_size = fs::file_size(stored);

  // 3: zstd pack against zip -6.
  Samples pack_zstd, zip6, verify_zstd;
  for (int i = 0; i < kZstdRuns; ++i) {
    Remove(zstd);
    Sync();
    pack_zstd.Add(Run(PackArgs(carton, model, "zstd", zstd), log));
  }
  Sync();
  for (int i = 0; i < kZstdRuns; ++i) verify_zstd.Add(Run({carton, "verify", zstd}, log));
  for (int i = 0; i < kZipRuns; ++i) {
    Remove(zipped);
    Sync();
    zip6.Add(Run({"zip", "-q", "-r", "-6", zipped, "."}, log, model_dir));
  }
  std::uint64_t zstd_size = fs::file_size(zstd);
  std::uint64_t zip_size = fs::file_size(zipped);
  Remove(zipped);

  std::printf("results (throughput: of the model's %llu bytes)\n",
              static_cast<unsigned long long>(model.bytes));
  PrintHeader();
  PrintRow("openssl dgst -sha256 FILES", openssl, model.bytes);
  PrintRow("cp -r DIR COPY", copy, model.bytes);
  PrintRow("carton pack --compression stored", pack_stored, model.bytes);
  PrintRow("carton verify (stored carton)", verify_stored, model.bytes);
  PrintRow("carton pack --compression zstd", pack_zstd, model.bytes);
  PrintRow("carton verify (zstd carton)", verify_zstd, model.bytes);
  PrintRow("zip -q -r -6", zip6, model.bytes);
  std::printf("\n");
  std::printf("  %-46s %14s %8s\n", "archive", "bytes", "of model");
  auto size_row = [&](const char* what, std::uint64_t n) {
    std::printf("  %-46s %14llu %7.1f%%\n", what, static_cast<unsigned long long>(n),
                100.0 * static_cast<double>(n) / static_cast<double>(model.bytes));
  };
  size_row("stored carton", stored_size);
  size_row("zstd carton", zstd_size);
  size_row("zip -6", zip_size);
  std::printf("\n");
  double r_pack = pack_stored.Median() / openssl.Median();
  double r_verify = verify_stored.Median() / openssl.Median();
  double r_zip = zip6.Median() / pack_zstd.Median();
  double r_size = static_cast<double>(zstd_size) / static_cast<double>(zip_size);
  PrintRatio("1. pack stored time / openssl time", r_pack,
             "target <= 1.3 x " + Verdict(r_pack <= 1.3));
  PrintRatio("2. verify stored time / openssl time", r_verify,
             "target <= 0.7 x " + Verdict(r_verify <= 0.7));
  PrintRatio("3. zip -6 time / pack zstd time", r_zip, "target >= 5 x " + Verdict(r_zip >= 5.0));
  PrintRatio("3. zstd carton size / zip -6 size", r_size, "target < 1 x " + Verdict(r_size < 1.0));
  PrintMemoryHeader(static_cast<double>(model.bytes));
  PrintMemory("carton pack --compression stored", pack_stored);
  PrintMemory("carton pack --compression zstd", pack_zstd);
  PrintMemory("carton verify (stored carton)", verify_stored);
  PrintMemory("carton verify (zstd carton)", verify_zstd);
  std::fflush(stdout);

  if (big) {
    Remove(stored);
    Remove(zstd);
    for (int i = kWeightFiles; i < kBigWeightFiles; ++i) {
      WriteWeights(WeightPath(model_dir, i), kWeightBytes, i);
    }
    Model bigm = Describe(model_dir);
    Sync();
    WarmCache(bigm.files);
    Samples b_openssl, b_pack_stored, b_verify_stored, b_pack_zstd, b_verify_zstd;
    b_openssl.Add(Run(OpensslArgs(bigm), log));
    Sync();
    b_pack_stored.Add(Run(PackArgs(carton, bigm, "stored", stored), log));
    Sync();
    b_verify_stored.Add(Run({carton, "verify", stored}, log));
    Remove(stored);
    Sync();
    b_pack_zstd.Add(Run(PackArgs(carton, bigm, "zstd", zstd), log));
    Sync();
    b_verify_zstd.Add(Run({carton, "verify", zstd}, log));
    Remove(zstd);
    std::printf("\n--big: %zu files, %llu bytes (%d x %llu MiB weights), one run each\n",
                bigm.files.size(), static_cast<unsigned long long>(bigm.bytes), kBigWeightFiles,
                static_cast<unsigned long long>(kWeightBytes >> 20));
    PrintHeader();
    PrintRow("openssl dgst -sha256 FILES", b_openssl, bigm.bytes);
    PrintRow("carton pack --compression stored", b_pack_stored, bigm.bytes);
    PrintRow("carton verify (stored carton)", b_verify_stored, bigm.bytes);
    PrintRow("carton pack --compression zstd", b_pack_zstd, bigm.bytes);
    PrintRow("carton verify (zstd carton)", b_verify_zstd, bigm.bytes);
    PrintMemoryHeader(static_cast<double>(bigm.bytes));
    PrintMemory("carton pack --compression stored", b_pack_stored);
    PrintMemory("carton pack --compression zstd", b_pack_zstd);
    PrintMemory("carton verify (stored carton)", b_verify_stored);
    PrintMemory("carton verify (zstd carton)", b_verify_zstd);
  }

  RemoveScratch();
  std::error_code ignored;
  fs::remove(scratch, ignored);  // only if empty
  return 0;
}
