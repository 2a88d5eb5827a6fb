// Signed cartons (carton/signature.h): what a carton's signature lists and
// ignores, where it lives, and what each change to a signed carton gets.
// Keys and certificates come from tests/sign/make_pki.sh.
#include "carton/carton/signature.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/carton/info.h"
#include "carton/carton/links.h"
#include "carton/carton/pack.h"
#include "carton/carton/unpack.h"
#include "carton/carton/verify.h"
#include "carton/common/atomic_file.h"
#include "carton/sign/failure.h"
#include "carton_testing.h"
#include "sign/sign_testing.h"
#include "source_testing.h"

using namespace carton;
using namespace carton::testing;
using sign::Failure;
namespace fs = std::filesystem;

namespace {

std::string PackMinimal(const TempDir& tmp, const std::string& name = "m",
                        std::map<std::string, std::string> files = MinimalFiles()) {
  const std::string dir = tmp.file(name + "-src");
  WriteTree(dir, files);
  const std::string out = tmp.file(name + ".carton");
  auto r = Pack(dir, out);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return out;
}

sign::SigningIdentity Identity(const std::string& key, const std::string& cert = "",
                               const std::string& chain = "") {
  auto id = sign::LoadSigningIdentity(key, cert, chain, {});
  INFO(id.status().ToString());
  REQUIRE(id.ok());
  return *id;
}

SignCartonReport SignWith(const std::string& carton, const std::string& key,
                          const SignCartonOptions& o = {}) {
  auto r = SignCarton(*testing::SourceFor(carton), Identity(key), o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("signature: a carton signed with each curve and a chain verifies, naming its signer",
          "[carton][signature]") {
  TempDir tmp;
  const std::string carton = PackMinimal(tmp);
  for (const char* curve : {"p256", "p384", "p521"}) {
    INFO(curve);
    const SignCartonReport r = SignWith(carton, Pki(std::string(curve) + ".key"));
    CHECK(r.signature_path == carton + ".sig");
    CHECK(r.files == MinimalFiles().size());
    auto check =
        VerifySignature(*testing::SourceFor(carton), TrustKey(Pki(std::string(curve) + ".pub")));
    INFO(check.status().ToString());
    REQUIRE(check.ok());
    CHECK(check->signer.key_hint == ReadPublicKey(Pki(std::string(curve) + ".pub")).hint());
    CHECK(check->files == MinimalFiles().size());
    CHECK_FALSE(check->directory);
  }
  auto r = SignCarton(*testing::SourceFor(carton),
                      Identity(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem")));
  REQUIRE(r.ok());
  CHECK(r->method == sign::Method::kCertificate);
  CHECK(r->signer == "CN=release");
  sign::TrustedSigners roots = TrustRoots(Pki("root.pem"));
  roots.identities = {"release@example.com"};
  auto check = VerifySignature(*testing::SourceFor(carton), roots);
  INFO(check.status().ToString());
  REQUIRE(check.ok());
  CHECK(check->signer.subject == "CN=release");
}

TEST_CASE("signature: it lists exactly MANIFEST's files, linked ones by their sha256",
          "[carton][signature]") {
  TempDir tmp;
  auto files = MinimalFiles();
  files["model/big.bin"] = Noise(4096, 7);
  const std::string carton = PackMinimal(tmp, "m", files);
  ShrinkOptions s;
  s.url_prefix = "https://models.example.com/blobs";
  s.blobs_dir = tmp.file("blobs");
  s.min_size = 4000;
  const std::string small = tmp.file("small.carton");
  REQUIRE(Shrink(*testing::SourceFor(carton), small, s).ok());
  const SignCartonReport r = SignWith(small, Pki("p256.key"));
  auto bundle = ReadSignature(r.signature_path);
  REQUIRE(bundle.ok());
  std::vector<std::string> names;
  for (const auto& f : bundle->statement.resources) names.push_back(f.name);
  CHECK(names == std::vector<std::string>{"carton.toml", "misc/readme.md", "model/big.bin",
                                          "model/model.bin", "model/sub/vocab.txt",
                                          "tensor_data/index.toml", "tensor_data/tensor_0.bin",
                                          "tensor_data/tensor_1.bin"});
  CHECK(bundle->statement.resources[2].digest ==
        manifest::Sha256Of(AsBytes(files["model/big.bin"])));
  CHECK(bundle->statement.ignore_paths ==
        std::vector<std::string>{".git", ".gitattributes", ".github", ".gitignore", "MANIFEST",
                                 "LINKS", "model.sig"});
  CHECK(bundle->statement.subject_name == "tiny");
  // The shrunk carton and the whole one have one MANIFEST: one signature serves both.
  REQUIRE(WriteFileAtomically(carton + ".sig", AsBytes(FileBytes(r.signature_path))).ok());
  CHECK(VerifySignature(*testing::SourceFor(carton), TrustKey(Pki("p256.pub"))).ok());
}

TEST_CASE(
    "signature: a changed carton is refused: a tampered byte, a swapped MANIFEST, a new "
    "signer",
    "[carton][signature]") {
  TempDir tmp;
  const std::string carton = PackMinimal(tmp);
  SignWith(carton, Pki("p256.key"));
  const sign::TrustedSigners trusted = TrustKey(Pki("p256.pub"));
  REQUIRE(VerifySignature(*testing::SourceFor(carton), trusted).ok());
  // A tampered byte of a file: the signature still covers MANIFEST, and
  // Verify, which hashes every file, refuses the carton.
  std::string bytes = FileBytes(carton);
  const std::size_t at = bytes.find(std::string(3000, 'w'));
  REQUIRE(at != std::string::npos);
  bytes[at + 1000] = 'x';
  const std::string tampered = tmp.file("tampered.carton");
  WriteBytes(tampered, AsBytes(bytes));
  fs::copy_file(carton + ".sig", tampered + ".sig");
  auto report = Verify(*testing::SourceFor(tampered));
  REQUIRE(report.ok());
  REQUIRE_FALSE(report->ok());
  CHECK_THAT(report->problems[0].message, Catch::Contains("sha256"));
  // A swapped MANIFEST (the files and MANIFEST changed together).
  auto files = MinimalFiles();
  files["model/model.bin"] = std::string(3000, 'v');
  const std::string swapped = PackMinimal(tmp, "swapped", files);
  REQUIRE(Verify(*testing::SourceFor(swapped))->ok());
  fs::copy_file(carton + ".sig", swapped + ".sig");
  ExpectFailure(VerifySignature(*testing::SourceFor(swapped), trusted).status(),
                StatusCode::kCorrupt, Failure::kTamperedFile, "model/model.bin: sha256");
  // Re-signed by a key nobody trusts.
  SignWith(carton, Pki("p384.key"));
  ExpectFailure(VerifySignature(*testing::SourceFor(carton), trusted).status(),
                StatusCode::kCorrupt, Failure::kUntrustedKey, "which is not a trusted key");
  // No signature at all, or a signature file that is not there.
  fs::remove(carton + ".sig");
  ExpectFailure(VerifySignature(*testing::SourceFor(carton), trusted).status(),
                StatusCode::kCorrupt, Failure::kUnsigned, "not signed (no " + carton + ".sig)");
  SignatureCheckOptions o;
  o.signature_path = tmp.file("none.sig");
  CHECK(VerifySignature(*testing::SourceFor(carton), trusted, o).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("signature: unpack keeps it as model.sig, and the directory verifies file by file",
          "[carton][signature]") {
  TempDir tmp;
  const std::string carton = PackMinimal(tmp);
  SignWith(carton, Pki("p256.key"));
  const std::string dir = tmp.file("unpacked");
  REQUIRE(Unpack(*testing::SourceFor(carton), dir).ok());
  CHECK(FileBytes(dir + "/model.sig") == FileBytes(carton + ".sig"));
  const sign::TrustedSigners trusted = TrustKey(Pki("p256.pub"));
  auto check = VerifySignature(*testing::SourceFor(dir), trusted);
  INFO(check.status().ToString());
  REQUIRE(check.ok());
  CHECK(check->directory);
  CHECK(check->signature_path == dir + "/model.sig");
  CHECK(check->bytes_hashed > 3000);
  // Git's files are not the model's.
  WriteText(dir + "/.git/HEAD", "ref: refs/heads/main\n");
  CHECK(VerifySignature(*testing::SourceFor(dir), trusted).ok());
  WriteText(dir + "/model/extra.py", "print(1)\n");
  ExpectFailure(VerifySignature(*testing::SourceFor(dir), trusted).status(), StatusCode::kCorrupt,
                Failure::kUnlistedFile, "model/extra.py: not signed");
  fs::remove(dir + "/model/extra.py");
  fs::remove(dir + "/misc/readme.md");
  ExpectFailure(VerifySignature(*testing::SourceFor(dir), trusted).status(), StatusCode::kCorrupt,
                Failure::kMissingFile, "misc/readme.md: signed, but not there");
  WriteText(dir + "/misc/readme.md", "# changed\n");
  ExpectFailure(VerifySignature(*testing::SourceFor(dir), trusted).status(), StatusCode::kCorrupt,
                Failure::kTamperedFile, "misc/readme.md: sha256");
  // A carton without a signature unpacks without one.
  const std::string plain = PackMinimal(tmp, "plain");
  REQUIRE(Unpack(*testing::SourceFor(plain), tmp.file("plain-dir")).ok());
  CHECK_FALSE(fs::exists(tmp.file("plain-dir/model.sig")));
}

TEST_CASE("signature: any folder the reference signed verifies; an unpacked carton signs itself",
          "[carton][signature]") {
  TempDir tmp;
  // The OMS key vector signs models/model, its bundle kept outside the folder.
  SignatureCheckOptions o;
  o.signature_path = OmsPath("test-vectors/v1.0/valid/key.bundle.json");
  auto check = VerifySignature(*testing::SourceFor(OmsPath("models/model")),
                               TrustKey(OmsPath("keys/signing-key-pub.pem")), o);
  INFO(check.status().ToString());
  REQUIRE(check.ok());
  CHECK(check->files == 2);
  o.signature_path = OmsPath("test-vectors/v1.0/valid/certificate.bundle.json");
  CHECK(VerifySignature(*testing::SourceFor(OmsPath("models/model")),
                        TrustRoots(OmsPath("keys/ca-cert.pem")), o)
            .ok());
  // Sign an unpacked carton in place: DIR/model.sig.
  const std::string dir = tmp.file("u");
  REQUIRE(Unpack(*testing::SourceFor(PackMinimal(tmp)), dir).ok());
  const SignCartonReport r = SignWith(dir, Pki("p384.key"));
  CHECK(r.signature_path == dir + "/model.sig");
  CHECK(VerifySignature(*testing::SourceFor(dir), TrustKey(Pki("p384.pub"))).ok());
  // A folder whose files are not MANIFEST's is not signed.
  WriteText(dir + "/model/extra.py", "x");
  auto refused = SignCarton(*testing::SourceFor(dir), Identity(Pki("p384.key")));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(refused.status().message(), Catch::Contains("not the ones MANIFEST lists"));
}

TEST_CASE("signature: a carton that does not verify is not signed", "[carton][signature]") {
  TempDir tmp;
  auto files = MinimalFiles();
  auto listed = files;
  listed["model/model.bin"] = "something else";
  const std::string bad = tmp.file("bad.carton");
  WriteArchive(bad, files, &listed);
  auto r = SignCarton(*testing::SourceFor(bad), Identity(Pki("p256.key")));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(r.status().message(), Catch::Contains("does not verify, so it is not signed"));
  CHECK_FALSE(fs::exists(bad + ".sig"));
}

TEST_CASE("signature: info's summary and the trust policy's decision for a carton",
          "[carton][signature]") {
  TempDir tmp;
  const std::string carton = PackMinimal(tmp);
  CartonReader reader = testing::OpenReader(carton);
  REQUIRE(reader.ReadManifest().ok());
  CHECK_FALSE(DescribeSignature(*testing::SourceFor(carton), reader.manifest()).has_value());
  SignWith(carton, Pki("p256.key"));
  auto s = DescribeSignature(*testing::SourceFor(carton), reader.manifest());
  REQUIRE(s.has_value());
  CHECK(s->covers_manifest);
  CHECK(s->claimed_signer == "key " + ReadPublicKey(Pki("p256.pub")).hint());
  fs::copy_file(Pki("p256.pub"), tmp.file("release.pub"));
  WriteText(tmp.file("trust.toml"), "require_signature = true\nkeys = [\"release.pub\"]\n");
  auto policy = sign::TrustPolicy::ReadFile(tmp.file("trust.toml"));
  REQUIRE(policy.ok());
  auto bundle = FindSignature(*testing::SourceFor(carton));
  REQUIRE(bundle.ok());
  REQUIRE(bundle->has_value());
  auto verdict = CheckTrust(**policy, *testing::SourceFor(carton), reader.manifest(), &**bundle);
  INFO(verdict.status().ToString());
  REQUIRE(verdict.ok());
  CHECK(verdict->signer.has_value());
  ExpectFailure(
      CheckTrust(**policy, *testing::SourceFor(carton), reader.manifest(), nullptr).status(),
      StatusCode::kCorrupt, Failure::kUnsigned,
      fs::absolute(carton).lexically_normal().string() + ": not signed");
  const sign::TrustTarget url = testing::SourceFor("https://example.com/m.carton")->TrustTarget();
  CHECK(url.kind == sign::TrustTarget::Kind::kUrl);
  CHECK(url.url == "https://example.com/m.carton");
}
