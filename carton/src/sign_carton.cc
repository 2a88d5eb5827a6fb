// Signing a carton (carton/FORMAT.md "Signatures"): checked first, then
// its MANIFEST's files signed.
#include <filesystem>

#include "carton/carton/signature.h"
#include "carton/carton/verify.h"
#include "carton/common/atomic_file.h"
#include "carton/format/config.h"
#include "carton/sign/files.h"
#include "signature_files.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

// What is signed: MANIFEST, the statement's name, whether symlinks were
// followed.
struct Signable {
  manifest::Manifest manifest;
  std::string name;
  bool symlinks = false;
};

bool HasSymlinks(const std::string& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_symlink(ec)) return true;
  }
  return false;
}

std::string FileStem(const std::string& text) {
  fs::path p(text);
  while (p.has_filename() && p.filename() == ".") p = p.parent_path();
  const std::string stem = p.filename().string().empty() ? "model" : p.stem().string();
  return stem.empty() ? "model" : stem;
}

std::string ModelName(const std::optional<std::string>& name, const std::string& text) {
  return name && !name->empty() ? *name : FileStem(text);
}

// An unpacked carton: exactly MANIFEST's files, each with its digest.
Result<Signable> CheckDirectory(const std::string& dir, const std::string& output,
                                unsigned threads) {
  CARTON_ASSIGN_OR_RETURN(auto text, ReadFile((fs::path(dir) / manifest::kManifestPath).string()));
  auto m = manifest::Manifest::Parse(text);
  if (!m.ok()) return m.status().WithContext(dir);
  sign::HashDirectoryOptions o;
  o.ignore_paths = CartonIgnorePaths();
  if (const std::string rel = internal::RelativeInside(output, dir); !rel.empty()) {
    o.ignore_paths.push_back(rel);
  }
  o.allow_symlinks = HasSymlinks(dir);
  o.threads = threads;
  CARTON_ASSIGN_OR_RETURN(auto present, sign::HashDirectory(dir, o));
  const auto problems = sign::CompareFiles(SignedFiles(*m), present);
  if (!problems.empty()) {
    return Corrupt(dir + ": its files are not the ones MANIFEST lists, so it is not signed: " +
                   sign::ProblemsStatus(problems).message());
  }
  Signable s{std::move(*m), FileStem(dir), o.allow_symlinks};
  if (auto config = ReadFile((fs::path(dir) / "carton.toml").string()); config.ok()) {
    if (auto c = ParseConfig(AsChars(*config)); c.ok()) s.name = ModelName(c->model_name, dir);
  }
  return s;
}

// A carton: Verify's every rule and hash, then its MANIFEST.
Result<Signable> CheckCarton(CartonSource& carton) {
  const std::string& text = carton.location().text();
  CARTON_ASSIGN_OR_RETURN(VerifyReport report, Verify(carton));
  if (!report.ok()) {
    const VerifyProblem& p = report.problems.front();
    return Corrupt(text + ": does not verify, so it is not signed: " +
                   (p.where.empty() ? "" : p.where + ": ") + p.message);
  }
  CARTON_ASSIGN_OR_RETURN(CartonReader * reader, carton.Reader(ReadScope::kWhole));
  CARTON_RETURN_IF_ERROR(reader->Check());
  Signable s{reader->manifest(), ModelName(reader->config().model_name, text), false};
  for (const auto& e : reader->zip().entries()) s.symlinks = s.symlinks || e.is_symlink;
  return s;
}

}  // namespace

Result<SignCartonReport> SignCarton(CartonSource& carton, const sign::SigningIdentity& identity,
                                    const SignCartonOptions& options) {
  const std::string output = options.output.empty() ? carton.SignaturePath() : options.output;
  if (output.empty()) {
    return InvalidArgument(carton.location().text() + ": a signature of " +
                           std::string(carton.location().kind_name()) +
                           " needs an output path (-o)");
  }
  CARTON_RETURN_IF_ERROR(CheckOutputPath(output, "the signature"));
  const std::string& dir = carton.directory();
  CARTON_ASSIGN_OR_RETURN(Signable s,
                          !dir.empty() ? CheckDirectory(dir, output, carton.environment().threads)
                                       : CheckCarton(carton));
  const sign::Statement statement =
      sign::MakeStatement(s.name, SignedFiles(s.manifest), CartonIgnorePaths(), s.symlinks);
  CARTON_ASSIGN_OR_RETURN(sign::Bundle bundle, sign::SignStatement(statement, identity));
  CARTON_RETURN_IF_ERROR(WriteFileAtomically(output, AsBytes(sign::BundleJson(bundle))));
  SignCartonReport r;
  r.signature_path = output;
  r.manifest_hash = s.manifest.Hash();
  r.files = statement.resources.size();
  r.method = bundle.method;
  r.signer = internal::ClaimedSigner(bundle);
  return r;
}

}  // namespace carton
