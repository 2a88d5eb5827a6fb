// keygen, sign, and the signature checks of verify and info: thin shells
// over carton/carton/signature.h and sign/.
#include "sign_cmd.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "carton/carton/reader.h"
#include "carton/carton/signature.h"
#include "carton/common/atomic_file.h"
#include "carton/common/progress.h"
#include "carton/common/temporaries.h"
#include "carton/oci/signature.h"
#include "carton/sign/failure.h"
#include "carton/sign/keys.h"
#include "carton/sign/signer.h"
#include "environment_args.h"
#include "exit_code.h"
#include "progress_flags.h"

namespace carton::cli {
namespace {

namespace fs = std::filesystem;

// KEY.pem -> KEY.pub; any other name gets ".pub" added.
std::string PublicKeyPath(const std::string& private_path) {
  for (std::string_view ext : {".pem", ".key"}) {
    if (private_path.size() > ext.size() && private_path.ends_with(ext)) {
      return private_path.substr(0, private_path.size() - ext.size()) + ".pub";
    }
  }
  return private_path + ".pub";
}

Result<std::string> NewPassphrase() {
  auto ask = sign::DefaultPassphrase();
  CARTON_ASSIGN_OR_RETURN(std::string first, ask("the new key"));
  if (std::getenv("CARTON_KEY_PASSPHRASE") == nullptr) {
    CARTON_ASSIGN_OR_RETURN(std::string again, ask("the new key (again)"));
    if (again != first) return InvalidArgument("the passphrases differ");
  }
  if (first.empty()) return InvalidArgument("an empty passphrase (leave out --encrypt instead)");
  return first;
}

Json SignerJson(const sign::SignerInfo& s) {
  return {{"method", std::string(sign::MethodName(s.method))},
          {"key_hint", s.key_hint.empty() ? Json(nullptr) : Json(s.key_hint)},
          {"subject", s.subject.empty() ? Json(nullptr) : Json(s.subject)},
          {"signer", s.Describe()}};
}

Json FailureJson(const Status& s) {
  Json j = ErrorJson(s);
  const sign::Failure f = sign::FailureOf(s);
  j["failure"] =
      f == sign::Failure::kNone ? Json(nullptr) : Json(std::string(sign::FailureName(f)));
  return j;
}

}  // namespace

int Keygen(const KeygenArgs& a) {
  auto curve = sign::ParseCurve(a.curve);
  if (!curve.ok()) return Fail("keygen", curve.status().WithContext("--curve"));
  const std::string pub = a.public_output.empty() ? PublicKeyPath(a.output) : a.public_output;
  std::error_code ec;
  for (const std::string& path : {a.output, pub}) {
    if (fs::exists(path, ec))
      return Fail("keygen", InvalidArgument(path + ": exists; not replaced"));
  }
  std::string passphrase;
  if (a.encrypt) {
    auto p = NewPassphrase();
    if (!p.ok()) return Fail("keygen", p.status());
    passphrase = std::move(*p);
  }
  auto key = sign::PrivateKey::Generate(*curve);
  if (!key.ok()) return Fail("keygen", key.status());
  auto pem = key->ToPem(passphrase);
  if (!pem.ok()) return Fail("keygen", pem.status());
  Status s = sign::WritePrivateKeyFile(a.output, *pem);
  if (s.ok()) s = WriteFileAtomically(pub, AsBytes(key->public_key().pem()));
  if (!s.ok()) return Fail("keygen", s);
  if (a.json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["private_key"] = a.output;
    j["public_key"] = pub;
    j["curve"] = std::string(sign::CurveName(*curve));
    j["key_hint"] = key->public_key().hint();
    j["encrypted"] = a.encrypt;
    PrintJson(j);
    return kExitOk;
  }
  std::cerr << "wrote " << a.output << " (the private key, mode 0600"
            << (a.encrypt ? ", encrypted" : "") << ") and " << pub
            << " (the public key: give it to those who verify)\n";
  std::cout << "key " << key->public_key().hint() << '\n';
  return kExitOk;
}

namespace {

Result<SignCartonReport> SignWith(const SignArgs& a, const sign::SigningIdentity& id,
                                  const SignCartonOptions& options) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(a.env, a.quiet));
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(a.carton, env, "sign"));
  return SignCarton(*source, id, options);
}

}  // namespace

int Sign(const SignArgs& a) {
  auto id = sign::LoadSigningIdentity(a.key, a.cert, a.chain, sign::DefaultPassphrase());
  if (!id.ok()) return Fail("sign", id.status());
  SignCartonOptions o;
  o.output = a.output;
  auto r = SignWith(a, *id, o);
  if (!r.ok()) return Fail("sign", r.status());
  if (a.json) {
    Json j = JsonDocument();
    j["model"] = a.carton;
    j["ok"] = true;
    j["signature"] = r->signature_path;
    j["manifest_hash"] = manifest::ToHex(r->manifest_hash);
    j["files"] = r->files;
    j["method"] = std::string(sign::MethodName(r->method));
    j["signer"] = r->signer;
    PrintJson(j);
    return kExitOk;
  }
  if (!a.quiet) {
    std::cerr << "signed " << a.carton << " (" << r->files << " files) with " << r->signer << '\n';
  }
  std::cout << r->signature_path << '\n';
  return kExitOk;
}

Result<sign::TrustedSigners> TrustedFromArgs(const VerifyArgs& a) {
  sign::TrustedSigners t;
  for (const std::string& k : a.keys) {
    CARTON_ASSIGN_OR_RETURN(sign::PublicKey key, sign::PublicKey::ReadFile(k));
    t.keys.push_back(std::move(key));
  }
  for (const std::string& c : a.cas) {
    CARTON_ASSIGN_OR_RETURN(auto roots, sign::Certificate::ReadPemFile(c));
    t.roots.insert(t.roots.end(), roots.begin(), roots.end());
  }
  t.identities = a.identities;
  return t;
}

namespace {

// The signature check of one location, its document and its lines;
// `details` are the "ok" line's ("" when the carton itself is bad: no
// line).
int ReportSignature(const std::string& model, const Result<SignatureCheck>& r, bool json,
                    const std::string& details, Json* doc) {
  if (!r.ok()) {
    (*doc)["ok"] = false;
    (*doc)["signature"] = {{"ok", false}, {"error", FailureJson(r.status())}};
    return ReportError("verify", r.status().WithContext(model));
  }
  (*doc)["signature"] = {{"ok", true},
                         {"path", r->signature_path},
                         {"files", r->files},
                         {"signed_by", SignerJson(r->signer)}};
  if (!json && !details.empty()) {
    std::cout << model << ": ok (" << details << "; signed by " << r->signer.Describe() << ")\n";
  }
  return kExitOk;
}

}  // namespace

int CheckSignatureOf(const VerifyArgs& a, CartonSource& carton, const sign::TrustedSigners& trusted,
                     const std::string& ok_details, Json* doc) {
  SignatureCheckOptions o;
  o.signature_path = a.signature;
  return ReportSignature(carton.location().text(), VerifySignature(carton, trusted, o), a.json,
                         ok_details, doc);
}

int VerifyDirectorySignature(const VerifyArgs& a, CartonSource& directory,
                             const sign::TrustedSigners& trusted, Json* results) {
  const std::string& model = directory.location().text();
  SignatureCheckOptions o;
  o.signature_path = a.signature;
  ProgressLine progress("verifying " + model, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  auto r = VerifySignature(directory, trusted, o);
  progress.Finish();
  Json doc = {{"model", model}, {"ok", r.ok()}};
  const std::string details = r.ok() ? std::to_string(r->files) + " files, " +
                                           std::to_string(r->bytes_hashed) + " bytes hashed"
                                     : std::string();
  const int rc = ReportSignature(model, r, a.json, details, &doc);
  results->push_back(std::move(doc));
  return rc;
}

void AddSignatureInfo(CartonSource& carton, const manifest::Digest& manifest_hash, bool print,
                      Json* doc) {
  (*doc)["signature"] = nullptr;
  auto manifest = carton.Manifest();
  if (!manifest.ok() || (*manifest)->hash != manifest_hash) return;
  const std::optional<SignatureSummary> s = DescribeSignature(carton, (*manifest)->manifest);
  if (!s) return;
  (*doc)["signature"] = {{"path", s->path},
                         {"method", std::string(sign::MethodName(s->method))},
                         {"claimed_signer", s->claimed_signer},
                         {"covers_manifest", s->covers_manifest},
                         {"problem", s->problem.empty() ? Json(nullptr) : Json(s->problem)}};
  if (!print) return;
  if (!s->problem.empty()) {
    std::cout << "signature: " << s->path << " does not hold: " << s->problem << '\n';
    return;
  }
  std::cout << "signed by: " << s->claimed_signer << " (" << s->path
            << "; not checked: `carton verify --key` or `--ca` checks it)\n";
}

}  // namespace carton::cli
