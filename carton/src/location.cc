// Location: paths, http(s) URLs and oci:// references (location.h).
#include "carton/carton/location.h"

#include <cctype>

#include "carton/common/quote.h"
#include "carton/net/url.h"

namespace carton {
namespace {

constexpr std::size_t kMaxRepositoryLength = 255;
constexpr std::size_t kMaxTagLength = 128;
constexpr std::string_view kDefaultTag = "latest";

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

std::string OciReference::Target() const { return digest ? manifest::DigestString(*digest) : tag; }

std::string OciReference::ToString() const {
  std::string s = std::string(kOciScheme) + registry + "/" + repository;
  if (!tag.empty()) s += ":" + tag;
  if (digest) s += "@" + manifest::DigestString(*digest);
  return s;
}

bool IsOciReference(std::string_view text) {
  if (text.size() < kOciScheme.size()) return false;
  for (std::size_t i = 0; i < kOciScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != kOciScheme[i]) return false;
  }
  return true;
}

Result<OciReference> ParseOciReference(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument(QuoteForMessage(text) + ": " + why +
                           " (expected oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST])");
  };
  if (!IsOciReference(text)) return bad("not an oci:// reference");
  std::string_view rest = text.substr(kOciScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("no repository after the registry");
  OciReference ref;
  const std::string_view registry = rest.substr(0, slash);
  if (!ValidRegistry(registry))
    return bad("registry \"" + std::string(registry) + "\" is not HOST or HOST:PORT");
  for (char c : registry) {
    ref.registry.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  rest = rest.substr(slash + 1);
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    auto digest = manifest::ParseDigestString(rest.substr(at + 1));
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

namespace {

// "scheme://" at the start of `text`: the scheme, else "".
std::string_view SchemeBeforeSlashes(std::string_view text) {
  const auto at = text.find("://");
  if (at == std::string_view::npos || at == 0) return {};
  for (std::size_t i = 0; i < at; ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (!(std::isalpha(u) ||
          (i > 0 && (std::isdigit(u) || text[i] == '+' || text[i] == '-' || text[i] == '.')))) {
      return {};
    }
  }
  return text.substr(0, at);
}

}  // namespace

Result<Location> Location::Parse(std::string_view text) {
  Location loc;
  loc.text_ = std::string(text);
  if (text.empty()) return InvalidArgument("an empty location: give a path, a URL or a reference");
  if (IsOciReference(text)) {
    CARTON_ASSIGN_OR_RETURN(OciReference ref, ParseOciReference(text));
    loc.kind_ = Kind::kOci;
    loc.oci_ = std::move(ref);
    return loc;
  }
  if (net::IsHttpUrl(text)) {
    if (auto problem = net::UrlProblem(text)) {
      return InvalidArgument(net::QuoteUrl(text) + ": " + *problem);
    }
    loc.kind_ = Kind::kUrl;
    return loc;
  }
  if (const std::string_view scheme = SchemeBeforeSlashes(text); !scheme.empty()) {
    return InvalidArgument(QuoteForMessage(text) + ": " + QuoteForMessage(scheme) +
                           " is not a scheme carton reads (a path, http://, https:// or oci://)");
  }
  loc.kind_ = Kind::kPath;
  return loc;
}

Location::Location(std::string_view text) {
  auto parsed = Parse(text);
  if (parsed.ok()) {
    *this = std::move(parsed).value();
  } else {
    text_ = std::string(text);
    status_ = parsed.status();
  }
}

Location::Location(const std::string& text) : Location(std::string_view(text)) {}
Location::Location(const char* text) : Location(std::string_view(text)) {}

std::string_view Location::kind_name() const {
  // By Kind's value: kPath, kUrl, kOci.
  static constexpr std::string_view kNames[] = {"a path", "an http(s) URL", "an oci:// reference"};
  return kNames[static_cast<std::size_t>(kind_)];
}

Status Location::Refuse(std::string_view operation, std::string_view takes,
                        std::string_view is) const {
  return InvalidArgument(std::string(operation) + " takes " + std::string(takes) + "; " + text_ +
                         " is " + std::string(is.empty() ? kind_name() : is));
}

}  // namespace carton
