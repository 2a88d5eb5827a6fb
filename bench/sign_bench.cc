// sign_bench [RUNS]: what checking a carton's signature against a trust
// policy costs where a load would do it, beside the work a cache hit does
// anyway: reading and parsing MANIFEST. For cartons of 10, 100, 1,000 and
// 100,000 files (synthetic digests), each run interleaved, wall-clock
// medians:
//   manifest: Manifest::Parse of MANIFEST's bytes (the hit's baseline);
//   check:    ReadSignature (the .sig file: read, parsed) + CheckTrust
//             (policy scope, ECDSA P-256 verify, the signed list against
//             MANIFEST);
//   sign:     SignStatement (for the record).
// Prints one line per size and the ratio check / manifest.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/carton/signature.h"
#include "carton/carton/source.h"
#include "carton/common/atomic_file.h"
#include "carton/sign/signer.h"

using namespace carton;
namespace fs = std::filesystem;

namespace {

template <typename F>
double Millis(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void Die(const Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "sign_bench: %s\n", s.ToString().c_str());
  std::exit(2);
}

manifest::Manifest Files(std::size_t n) {
  std::vector<manifest::ManifestEntry> e;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string path =
        "model/layer" + std::to_string(i / 100) + "/w" + std::to_string(i) + ".bin";
    e.push_back({path, manifest::Sha256Of(AsBytes(path))});
  }
  auto m = manifest::Manifest::FromEntries(std::move(e));
  Die(m.status());
  return *m;
}

void Measure(std::size_t n, int runs, const sign::SigningIdentity& id, const fs::path& dir) {
  const manifest::Manifest m = Files(n);
  const std::string text = m.Serialize();
  const std::string carton = (dir / ("m" + std::to_string(n) + ".carton")).string();
  const auto statement = sign::MakeStatement("m", SignedFiles(m), CartonIgnorePaths());
  auto bundle = sign::SignStatement(statement, id);
  Die(bundle.status());
  Die(WriteFileAtomically(carton + ".sig", AsBytes(sign::BundleJson(*bundle))));
  auto policy = sign::TrustPolicy::ReadFile((dir / "trust.toml").string());
  Die(policy.status());
  std::vector<double> parse, check, sign;
  const auto source = OpenSource(carton, Environment{}).value();
  for (int r = 0; r < runs; ++r) {
    parse.push_back(Millis([&] { Die(manifest::Manifest::Parse(AsBytes(text)).status()); }));
    check.push_back(Millis([&] {
      auto b = ReadSignature(carton + ".sig");
      Die(b.status());
      Die(CheckTrust(**policy, *source, m, &*b).status());
    }));
    sign.push_back(Millis([&] { Die(sign::SignStatement(statement, id).status()); }));
  }
  const double p = bench::Median(parse), c = bench::Median(check);
  std::printf(
      "%7zu files: manifest %8.3f ms  check %8.3f ms  (x%.2f)  sign %8.3f ms  bundle %zu bytes\n",
      n, p, c, c / p, bench::Median(sign), fs::file_size(carton + ".sig"));
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 9;
  const fs::path dir = fs::temp_directory_path() / ("sign-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto key = sign::PrivateKey::Generate(sign::Curve::kP256);
  Die(key.status());
  Die(WriteFileAtomically((dir / "k.pub").string(), AsBytes(key->public_key().pem())));
  Die(WriteFileAtomically((dir / "trust.toml").string(),
                          AsBytes("require_signature = true\nkeys = [\"k.pub\"]\n")));
  const sign::SigningIdentity id{*key, {}};
  for (std::size_t n : {10, 100, 1000, 100000}) Measure(n, runs, id, dir);
  fs::remove_all(dir);
  return 0;
}
