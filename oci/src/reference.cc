// oci:// references and digests (oci/FORMAT.md "The registry client").
#include <cctype>

#include "carton/oci/client.h"

namespace carton::oci {
namespace {

constexpr std::size_t kMaxRepositoryLength = 255;
constexpr std::size_t kMaxTagLength = 128;
constexpr std::string_view kDefaultTag = "latest";
constexpr std::string_view kSha256Prefix = "sha256:";

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component: [a-z0-9]+ separated by runs of '.', '_' or '-'.
bool ValidComponent(std::string_view c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (char ch : c) {
    if (!IsLowerAlnum(ch) && ch != '.' && ch != '_' && ch != '-') return false;
  }
  return true;
}

bool ValidTag(std::string_view t) {
  if (t.empty() || t.size() > kMaxTagLength) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto u = static_cast<unsigned char>(t[i]);
    const bool word = std::isalnum(u) || t[i] == '_';
    if (!(word || (i > 0 && (t[i] == '.' || t[i] == '-')))) return false;
  }
  return true;
}

// HOST[:PORT]: a DNS name or IPv4 address, or [IPv6].
bool ValidRegistry(std::string_view r) {
  if (r.empty()) return false;
  std::string_view host = r;
  std::string_view port;
  if (r.front() == '[') {
    const auto close = r.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (char c : r.substr(1, close - 1)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
    }
    const std::string_view rest = r.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    port = rest.empty() ? rest : rest.substr(1);
    if (!rest.empty() && port.empty()) return false;
    host = {};
  } else if (const auto colon = r.find(':'); colon != std::string_view::npos) {
    host = r.substr(0, colon);
    port = r.substr(colon + 1);
    if (port.empty()) return false;
  }
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '-' && c != '.') return false;
  }
  if (!host.empty() && (host.front() == '.' || host.front() == '-')) return false;
  if (r.front() != '[' && host.empty()) return false;
  if (port.size() > 5) return false;
  unsigned value = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return port.empty() || (value >= 1 && value <= 65535);
}

}  // namespace

std::string Reference::Target() const { return digest ? DigestString(*digest) : tag; }

std::string Reference::ToString() const {
  std::string s = std::string(kScheme) + registry + "/" + repository;
  if (!tag.empty()) s += ":" + tag;
  if (digest) s += "@" + DigestString(*digest);
  return s;
}

bool IsReference(std::string_view text) {
  if (text.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != kScheme[i]) return false;
  }
  return true;
}

std::string DigestString(const manifest::Digest& digest) {
  return std::string(kSha256Prefix) + manifest::ToHex(digest);
}

Result<manifest::Digest> ParseDigest(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("digest \"" + std::string(text) + "\" has no algorithm (sha256:...)");
  }
  if (text.substr(0, colon + 1) != kSha256Prefix) {
    return Unsupported("digest \"" + std::string(text) + "\": only sha256 digests are supported");
  }
  auto d = manifest::ParseHex(text.substr(colon + 1));
  if (!d) {
    return InvalidArgument("digest \"" + std::string(text) +
                           "\": expected sha256: and 64 lowercase hex digits");
  }
  return *d;
}

Result<Reference> ParseReference(std::string_view text) {
  const std::string shown(text);
  auto bad = [&](const std::string& why) {
    return InvalidArgument("\"" + shown + "\": " + why +
                           " (expected oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST])");
  };
  if (!IsReference(text)) return bad("not an oci:// reference");
  std::string_view rest = text.substr(kScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("no repository after the registry");
  Reference ref;
  const std::string_view registry = rest.substr(0, slash);
  if (!ValidRegistry(registry))
    return bad("registry \"" + std::string(registry) + "\" is not HOST or HOST:PORT");
  for (char c : registry) {
    ref.registry.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  rest = rest.substr(slash + 1);
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    auto digest = ParseDigest(rest.substr(at + 1));
    if (!digest.ok()) return bad(digest.status().message());
    ref.digest = *digest;
    rest = rest.substr(0, at);
  }
  // A ':' after the last '/' starts the tag.
  const auto last_slash = rest.rfind('/');
  const auto colon = rest.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (colon != std::string_view::npos) {
    const std::string_view tag = rest.substr(colon + 1);
    if (!ValidTag(tag)) {
      return bad("tag \"" + std::string(tag) +
                 "\" is not 1 to 128 of [A-Za-z0-9_.-] starting with a letter, digit or '_'");
    }
    ref.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad("empty repository");
  if (rest.size() > kMaxRepositoryLength) return bad("repository longer than 255 bytes");
  std::string_view path = rest;
  while (true) {
    const auto s = path.find('/');
    const std::string_view component = path.substr(0, s);
    if (!ValidComponent(component)) {
      return bad("repository component \"" + std::string(component) +
                 "\" is not lowercase letters and digits separated by '.', '_' or '-'");
    }
    if (s == std::string_view::npos) break;
    path = path.substr(s + 1);
  }
  ref.repository = std::string(rest);
  if (ref.tag.empty() && !ref.digest) ref.tag = std::string(kDefaultTag);
  return ref;
}

}  // namespace carton::oci
