// The trust policy: which keys and CA roots a carton may be signed by, and
// whether it must be signed, for all cartons or per registry, URL or path
// prefix (sign/FORMAT.md "The trust policy"). Read from a TOML file,
// `$CARTON_TRUST_POLICY` or `~/.config/carton/trust.toml`:
//
//   require_signature = true
//   keys = ["release.pub"]              # PEM public keys, paths relative to this file
//   cas = ["corp-roots.pem"]            # PEM CA roots
//   identities = ["release@example.com"]
//   [[scope]]
//   registry = "registry.example.com/team"   # or path = "/srv/models", url = "https://..."
//   keys = ["team.pub"]
//
// A TrustPolicy is immutable once parsed (its keys and roots read), so one
// value, shared as std::shared_ptr<const TrustPolicy>, serves every
// operation and thread of a process; Check is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/sign/bundle.h"
#include "carton/sign/verify.h"

namespace carton::sign {

// Largest policy file read.
inline constexpr std::size_t kMaxPolicyBytes = std::size_t{1} << 20;
// Most [[scope]] tables, and entries of one keys/cas/identities list.
inline constexpr std::size_t kMaxPolicyScopes = 1024;
inline constexpr std::size_t kMaxPolicyListEntries = 256;

// Where a carton comes from, as the policy's scopes match it. The caller
// fills the fields of its kind (carton/ makes one from a Location).
struct TrustTarget {
  enum class Kind : std::uint8_t { kPath, kUrl, kOci };
  Kind kind = Kind::kPath;
  // kPath: an absolute path, lexically normal (no ".", "..", "//").
  std::string path;
  // kUrl: the http(s) URL.
  std::string url;
  // kOci: "HOST[:PORT]" (lowercase) and the repository ("team/model").
  std::string registry;
  std::string repository;

  // The path, the URL, or "oci://HOST/REPO".
  std::string Describe() const;
};

// What the policy decided for an accepted carton.
struct TrustVerdict {
  // Whether the scope that applies requires a signature.
  bool signature_required = false;
  // Set when a signature verified against the scope's signers.
  std::optional<SignerInfo> signer;
  // The scope that applied: "registry 127.0.0.1:5000/team",
  // "path /srv/models", "url https://...", or "default".
  std::string scope;
};

class TrustPolicy {
 public:
  // Parses policy text (untrusted: every key checked, unknown ones refused;
  // toml++'s line and column kept). Relative key and CA paths resolve
  // against the directory of `path`, which names the policy in messages;
  // the files are read now. Errors: kCorrupt ("<path>:3:7: ..."), kNotFound
  // and kIoError for a key or CA file, those of PublicKey::ReadFile and
  // Certificate::ReadPemFile.
  static Result<std::shared_ptr<const TrustPolicy>> Parse(std::string_view text,
                                                          const std::string& path);
  // Reads and parses the policy file at `path` (at most kMaxPolicyBytes).
  static Result<std::shared_ptr<const TrustPolicy>> ReadFile(const std::string& path);
  // The policy file that applies: $CARTON_TRUST_POLICY when set (a path),
  // else $XDG_CONFIG_HOME/carton/trust.toml, else
  // ~/.config/carton/trust.toml. "" when none can be named (no HOME).
  static std::string DefaultPath();
  // ReadFile(DefaultPath()); nullptr when that file does not exist and
  // $CARTON_TRUST_POLICY is not set (no policy: nothing changes). A
  // $CARTON_TRUST_POLICY naming a missing file is kNotFound, so a typo
  // never turns a policy off.
  static Result<std::shared_ptr<const TrustPolicy>> LoadDefault();

  const std::string& path() const { return path_; }

  // Whether a carton at `target` must be signed.
  bool RequiresSignature(const TrustTarget& target) const;

  // The decision for a carton at `target` whose signature is `bundle`
  // (nullptr: it has none) and whose files are `files` (MANIFEST's
  // entries: path and sha256). The most specific scope that matches
  // `target` applies (the longest prefix; else the file's top level). A
  // bundle is checked against the scope's keys and roots (VerifyBundle),
  // and must list exactly `files`, every one with its digest (ignore_paths
  // do not excuse a file the carton has). A bundle where the scope trusts
  // no signer is not checked (the verdict has no signer). Errors: kCorrupt
  // with the Failure detail, the message naming the target, the policy and
  // the scope: kUnsigned (no bundle, one required), those of VerifyBundle,
  // kNotCovered (the files differ from the signed ones).
  Result<TrustVerdict> Check(const TrustTarget& target, const Bundle* bundle,
                             std::span<const Resource> files) const;

  // Parsed scopes; public for policy.cc's helpers.
  struct Scope {
    enum class Kind : std::uint8_t { kDefault, kRegistry, kUrl, kPath };
    Kind kind = Kind::kDefault;
    std::string prefix;  // "HOST[:PORT][/REPO-PREFIX]", a URL prefix or an absolute path
    bool require_signature = false;
    TrustedSigners signers;
    std::string Describe() const;
  };

 private:
  TrustPolicy() = default;
  const Scope& Match(const TrustTarget& target) const;

  std::string path_;
  Scope default_;
  std::vector<Scope> scopes_;
};

}  // namespace carton::sign
