#include "carton/net/url.h"

#include <cctype>

#include "carton/common/quote.h"

namespace carton::net {
namespace {

constexpr std::size_t kMaxQuotedLength = 80;

bool IsSchemeChar(char c, bool first) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalpha(u)) return true;
  return !first && (std::isdigit(u) || c == '+' || c == '-' || c == '.');
}

// The scheme of `url` in lowercase, or "" when it does not start with one.
std::string SchemeText(std::string_view url) {
  const std::size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) return "";
  std::string scheme;
  for (std::size_t i = 0; i < colon; ++i) {
    if (!IsSchemeChar(url[i], i == 0)) return "";
    scheme.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(url[i]))));
  }
  return scheme;
}

}  // namespace

Scheme SchemeOf(std::string_view url) {
  const std::string scheme = SchemeText(url);
  if (scheme == "http") return Scheme::kHttp;
  if (scheme == "https") return Scheme::kHttps;
  if (scheme == "file") return Scheme::kFile;
  return Scheme::kOther;
}

bool IsHttpUrl(std::string_view text) {
  const std::string scheme = SchemeText(text);
  return (scheme == "http" || scheme == "https") && text.substr(scheme.size(), 3) == "://";
}

std::string QuoteUrl(std::string_view text) {
  return carton::QuoteForMessage(text, kMaxQuotedLength);
}

std::optional<std::string> UrlProblem(std::string_view url, std::size_t max_length) {
  if (url.empty()) return "url is empty";
  if (url.size() > max_length) {
    return "url is " + std::to_string(url.size()) + " bytes, more than the limit of " +
           std::to_string(max_length);
  }
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    // Whitespace and control characters must be percent-encoded; a raw one
    // would be sent to the server as-is or split a request line.
    if (u <= 0x20 || u == 0x7F) return "url contains whitespace or a control character";
  }
  const std::string scheme = SchemeText(url);
  if (scheme.empty()) return "url has no scheme (expected http://, https:// or file://)";
  if (SchemeOf(url) == Scheme::kOther) {
    return "url scheme " + QuoteUrl(scheme) + " is not http, https or file";
  }
  const std::string_view rest = url.substr(scheme.size() + 1);
  if (rest.substr(0, 2) != "//") return "url must have the form " + scheme + "://...";
  const std::string_view after = rest.substr(2);
  if (SchemeOf(url) == Scheme::kFile) {
    if (after.empty()) return "file url has no path";
  } else if (after.empty() || after.front() == '/' || after.front() == '?' ||
             after.front() == '#') {
    return "url has no host";
  }
  return std::nullopt;
}

}  // namespace carton::net
