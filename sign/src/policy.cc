// The trust policy file (sign/FORMAT.md "The trust policy"). The only file
// of sign/ that sees toml++; its exceptions stop here.
#include "carton/sign/policy.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "carton/common/atomic_file.h"
#include "carton/common/quote.h"
#include "carton/common/toml_screen.h"
#include "carton/sign/failure.h"
#include "carton/sign/files.h"

namespace carton::sign {
namespace {

namespace fs = std::filesystem;
using Scope = TrustPolicy::Scope;

constexpr std::size_t kMaxDottedParts = 4;
constexpr std::string_view kTopKeys[] = {"version", "require_signature", "keys",
                                         "cas",     "identities",        "scope"};
constexpr std::string_view kScopeKeys[] = {"registry", "url", "path",      "require_signature",
                                           "keys",     "cas", "identities"};

struct Source {
  const std::string& path;
  fs::path dir;  // relative key and CA paths resolve here
  std::string At(const toml::node& n, std::string_view message) const {
    const auto& b = n.source().begin;
    return path + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
           std::string(message);
  }
};

template <std::size_t N>
Status OnlyKnown(const Source& src, const toml::table& t, const std::string_view (&known)[N],
                 std::string_view where) {
  for (const auto& [key, value] : t) {
    if (std::find(std::begin(known), std::end(known), key.str()) == std::end(known)) {
      return Corrupt(
          src.At(value, std::string(where) + "unknown key " + QuoteForMessage(key.str())));
    }
  }
  return Status::Ok();
}

// A list of strings, or nullopt when `key` is absent.
Result<std::optional<std::vector<std::string>>> StringList(const Source& src, const toml::table& t,
                                                           std::string_view key) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return std::optional<std::vector<std::string>>();
  const toml::array* a = n->as_array();
  if (a == nullptr) return Corrupt(src.At(*n, std::string(key) + " must be an array of strings"));
  if (a->size() > kMaxPolicyListEntries) {
    return Corrupt(src.At(*n, std::string(key) + " has more than " +
                                  std::to_string(kMaxPolicyListEntries) + " entries"));
  }
  std::vector<std::string> out;
  for (const toml::node& e : *a) {
    const auto* s = e.as_string();
    if (s == nullptr || s->get().empty()) {
      return Corrupt(src.At(e, std::string(key) + " entries must be non-empty strings"));
    }
    out.push_back(s->get());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::optional<bool>> Flag(const Source& src, const toml::table& t, std::string_view key) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return std::optional<bool>();
  const auto* b = n->as_boolean();
  if (b == nullptr) return Corrupt(src.At(*n, std::string(key) + " must be true or false"));
  return std::optional<bool>(b->get());
}

std::string Resolve(const Source& src, const std::string& file) {
  const fs::path p(file);
  return p.is_absolute() ? file : (src.dir / p).string();
}

// keys, cas and identities of `t` over `inherited` (a scope that names
// keys or cas trusts those alone).
Status ReadSigners(const Source& src, const toml::table& t, const TrustedSigners& inherited,
                   TrustedSigners* out) {
  CARTON_ASSIGN_OR_RETURN(auto keys, StringList(src, t, "keys"));
  CARTON_ASSIGN_OR_RETURN(auto cas, StringList(src, t, "cas"));
  CARTON_ASSIGN_OR_RETURN(auto identities, StringList(src, t, "identities"));
  if (!keys && !cas) {
    *out = inherited;
  } else {
    for (const std::string& k : keys.value_or(std::vector<std::string>())) {
      auto key = PublicKey::ReadFile(Resolve(src, k));
      if (!key.ok()) return key.status().WithContext(src.path + ": keys");
      out->keys.push_back(std::move(*key));
    }
    for (const std::string& c : cas.value_or(std::vector<std::string>())) {
      auto roots = Certificate::ReadPemFile(Resolve(src, c));
      if (!roots.ok()) return roots.status().WithContext(src.path + ": cas");
      out->roots.insert(out->roots.end(), roots->begin(), roots->end());
    }
    out->identities = inherited.identities;
  }
  if (identities) out->identities = std::move(*identities);
  return Status::Ok();
}

// The scope's prefix, checked and made canonical.
Result<std::string> Prefix(const Source& src, const toml::node& n, Scope::Kind kind) {
  const auto* s = n.as_string();
  if (s == nullptr || s->get().empty())
    return Corrupt(src.At(n, "a scope's prefix must be a non-empty string"));
  std::string p = s->get();
  if (kind == Scope::Kind::kPath) {
    if (!fs::path(p).is_absolute())
      return Corrupt(src.At(n, "path " + QuoteForMessage(p) + " is not absolute"));
    p = fs::path(p).lexically_normal().string();
  } else if (kind == Scope::Kind::kUrl) {
    if (!p.starts_with("http://") && !p.starts_with("https://")) {
      return Corrupt(src.At(n, "url " + QuoteForMessage(p) + " is not an http(s) URL"));
    }
    return p;
  } else {
    if (p.starts_with("oci://")) p = p.substr(6);
    const std::size_t slash = p.find('/');
    std::transform(p.begin(), p.begin() + std::min(slash, p.size()), p.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

Result<Scope> ParseScope(const Source& src, const toml::node& n, const Scope& top) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return Corrupt(src.At(n, "scope must be a table ([[scope]])"));
  CARTON_RETURN_IF_ERROR(OnlyKnown(src, *t, kScopeKeys, "scope: "));
  Scope s;
  int kinds = 0;
  for (auto [key, kind] :
       {std::pair{"registry", Scope::Kind::kRegistry}, std::pair{"url", Scope::Kind::kUrl},
        std::pair{"path", Scope::Kind::kPath}}) {
    if (const toml::node* v = t->get(key)) {
      ++kinds;
      s.kind = kind;
      CARTON_ASSIGN_OR_RETURN(s.prefix, Prefix(src, *v, kind));
    }
  }
  if (kinds != 1) return Corrupt(src.At(n, "a scope names exactly one of registry, url and path"));
  CARTON_ASSIGN_OR_RETURN(auto required, Flag(src, *t, "require_signature"));
  s.require_signature = required.value_or(top.require_signature);
  CARTON_RETURN_IF_ERROR(ReadSigners(src, *t, top.signers, &s.signers));
  return s;
}

Status CheckSatisfiable(const Source& src, const Scope& s) {
  if (s.require_signature && s.signers.empty()) {
    return Corrupt(src.path + ": " + s.Describe() +
                   " requires a signature but trusts no key or CA (keys, cas)");
  }
  return Status::Ok();
}

bool UnderPrefix(std::string_view text, std::string_view prefix) {
  return text == prefix ||
         (text.starts_with(prefix) && (prefix.back() == '/' || text[prefix.size()] == '/'));
}

bool Matches(const Scope& s, const TrustTarget& t) {
  switch (s.kind) {
    case Scope::Kind::kDefault:
      return true;
    case Scope::Kind::kRegistry:
      return t.kind == TrustTarget::Kind::kOci &&
             UnderPrefix(t.registry + "/" + t.repository, s.prefix);
    case Scope::Kind::kPath:
      return t.kind == TrustTarget::Kind::kPath && UnderPrefix(t.path, s.prefix);
    case Scope::Kind::kUrl:
      return t.kind == TrustTarget::Kind::kUrl && t.url.starts_with(s.prefix) &&
             (s.prefix.back() == '/' || t.url.size() == s.prefix.size() ||
              std::string_view("/?#").find(t.url[s.prefix.size()]) != std::string_view::npos);
  }
  return false;
}

}  // namespace

std::string TrustTarget::Describe() const {
  switch (kind) {
    case Kind::kPath:
      return path;
    case Kind::kUrl:
      return url;
    case Kind::kOci:
      return "oci://" + registry + "/" + repository;
  }
  return path;
}

std::string Scope::Describe() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kRegistry:
      return "registry " + prefix;
    case Kind::kUrl:
      return "url " + prefix;
    case Kind::kPath:
      return "path " + prefix;
  }
  return "default";
}

namespace {

Status ParseTop(const Source& src, const toml::table& root, Scope* top,
                std::vector<Scope>* scopes) {
  CARTON_RETURN_IF_ERROR(OnlyKnown(src, root, kTopKeys, ""));
  if (const toml::node* v = root.get("version")) {
    const auto* n = v->as_integer();
    if (n == nullptr || n->get() != 1) return Unsupported(src.At(*v, "version must be 1"));
  }
  CARTON_ASSIGN_OR_RETURN(auto required, Flag(src, root, "require_signature"));
  top->require_signature = required.value_or(false);
  CARTON_RETURN_IF_ERROR(ReadSigners(src, root, TrustedSigners{}, &top->signers));
  CARTON_RETURN_IF_ERROR(CheckSatisfiable(src, *top));
  const toml::node* list = root.get("scope");
  if (list == nullptr) return Status::Ok();
  const toml::array* a = list->as_array();
  if (a == nullptr) return Corrupt(src.At(*list, "scope must be an array of tables ([[scope]])"));
  if (a->size() > kMaxPolicyScopes) {
    return Corrupt(src.At(*list, "more than " + std::to_string(kMaxPolicyScopes) + " scopes"));
  }
  for (const toml::node& n : *a) {
    CARTON_ASSIGN_OR_RETURN(Scope s, ParseScope(src, n, *top));
    CARTON_RETURN_IF_ERROR(CheckSatisfiable(src, s));
    scopes->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const TrustPolicy>> TrustPolicy::Parse(std::string_view text,
                                                              const std::string& path) {
  CARTON_RETURN_IF_ERROR(ScreenTomlDottedKeys(text, path, kMaxDottedParts));
  const Source src{path, fs::path(path).parent_path()};
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return Corrupt(path + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                   std::string(e.description()));
  }
  std::shared_ptr<TrustPolicy> policy(new TrustPolicy());
  policy->path_ = path;
  CARTON_RETURN_IF_ERROR(ParseTop(src, root, &policy->default_, &policy->scopes_));
  return std::shared_ptr<const TrustPolicy>(std::move(policy));
}

Result<std::shared_ptr<const TrustPolicy>> TrustPolicy::ReadFile(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && size > kMaxPolicyBytes) {
    return Corrupt(path + ": " + std::to_string(size) + " bytes, more than the limit of " +
                   std::to_string(kMaxPolicyBytes));
  }
  CARTON_ASSIGN_OR_RETURN(auto bytes, carton::ReadFile(path));
  return Parse(AsChars(bytes), path);
}

std::string TrustPolicy::DefaultPath() {
  if (const char* p = std::getenv("CARTON_TRUST_POLICY")) return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x == '/') {
    return std::string(x) + "/carton/trust.toml";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.config/carton/trust.toml";
  }
  return "";
}

Result<std::shared_ptr<const TrustPolicy>> TrustPolicy::LoadDefault() {
  const std::string path = DefaultPath();
  const bool named = std::getenv("CARTON_TRUST_POLICY") != nullptr;
  std::error_code ec;
  if (path.empty() || (!named && !fs::exists(path, ec))) {
    return std::shared_ptr<const TrustPolicy>();
  }
  auto policy = ReadFile(path);
  if (!policy.ok() && named && policy.status().code() == StatusCode::kNotFound) {
    return NotFound(path + " (CARTON_TRUST_POLICY): no such trust policy file");
  }
  return policy;
}

const TrustPolicy::Scope& TrustPolicy::Match(const TrustTarget& target) const {
  const Scope* best = &default_;
  for (const Scope& s : scopes_) {
    if (Matches(s, target) && (best == &default_ || s.prefix.size() > best->prefix.size())) {
      best = &s;
    }
  }
  return *best;
}

bool TrustPolicy::RequiresSignature(const TrustTarget& target) const {
  return Match(target).require_signature;
}

Result<TrustVerdict> TrustPolicy::Check(const TrustTarget& target, const Bundle* bundle,
                                        std::span<const Resource> files) const {
  const Scope& s = Match(target);
  TrustVerdict v{s.require_signature, std::nullopt, s.Describe()};
  const std::string by = "the trust policy " + path_ + " (" + v.scope + ")";
  if (bundle == nullptr) {
    if (!s.require_signature) return v;
    return SignFailure(Failure::kUnsigned,
                       target.Describe() + ": not signed, and " + by + " requires a signature");
  }
  if (s.signers.empty()) return v;
  Result<SignerInfo> signer = VerifyBundle(*bundle, s.signers);
  if (!signer.ok()) {
    const Status& e = signer.status();
    return Status(e.code(), target.Describe() + ": " + e.message() + ", checked against " + by,
                  e.detail());
  }
  const auto problems = CompareFiles(bundle->statement.resources, files);
  if (!problems.empty()) {
    return SignFailure(Failure::kNotCovered, target.Describe() +
                                                 ": the signature does not cover these files: " +
                                                 ProblemsStatus(problems).message());
  }
  v.signer = std::move(*signer);
  return v;
}

}  // namespace carton::sign
