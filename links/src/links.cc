// LINKS parsing and writing (links/FORMAT.md). The only file that sees
// toml++; its exceptions stop here.
#include "carton/links/links.h"

#include <toml++/toml.h>

#include <string>

#include "carton/common/toml_screen.h"
#include "carton/common/toml_string.h"
#include "carton/net/url.h"

namespace carton::links {
namespace {

constexpr std::string_view kSource = "LINKS";
constexpr std::int64_t kVersion = 1;

std::string At(const toml::source_region& where, std::string_view message) {
  return std::string(kSource) + ":" + std::to_string(where.begin.line) + ":" +
         std::to_string(where.begin.column) + ": " + std::string(message);
}

Result<std::vector<std::string>> ParseUrlList(const std::string& hex, const toml::node& value,
                                              const LinksLimits& limits) {
  const std::string where = "urls." + hex;
  const toml::array* list = value.as_array();
  if (list == nullptr) {
    return Corrupt(At(value.source(), where + " must be an array of url strings"));
  }
  if (list->empty()) return Corrupt(At(value.source(), where + " lists no urls"));
  if (list->size() > limits.max_urls_per_hash) {
    return Corrupt(At(value.source(), where + " lists " + std::to_string(list->size()) +
                                          " urls, more than the limit of " +
                                          std::to_string(limits.max_urls_per_hash)));
  }
  std::vector<std::string> urls;
  urls.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::node& entry = *list->get(i);
    const std::string item = where + "[" + std::to_string(i) + "]";
    const auto* text = entry.as_string();
    if (text == nullptr) return Corrupt(At(entry.source(), item + " must be a string"));
    const std::string& url = text->get();
    if (auto problem = net::UrlProblem(url, limits.max_url_length)) {
      return Corrupt(At(entry.source(), item + ": " + *problem + ": " + net::QuoteUrl(url)));
    }
    urls.push_back(url);
  }
  return urls;
}

Result<Links> FromTable(const toml::table& root, const LinksLimits& limits) {
  const toml::node* version = root.get("version");
  if (version == nullptr) return Corrupt(std::string(kSource) + ": missing version");
  const auto* number = version->as_integer();
  if (number == nullptr) return Corrupt(At(version->source(), "version must be an integer"));
  if (number->get() != kVersion) {
    return Unsupported(At(version->source(), "version " + std::to_string(number->get()) +
                                                 " is not supported (only 1)"));
  }

  const toml::node* urls_node = root.get("urls");
  if (urls_node == nullptr) return Corrupt(std::string(kSource) + ": missing [urls] table");
  const toml::table* urls = urls_node->as_table();
  if (urls == nullptr) return Corrupt(At(urls_node->source(), "urls must be a table"));

  Links links;
  for (const auto& [key, value] : *urls) {
    const std::optional<manifest::Digest> digest = manifest::ParseHex(key.str());
    if (!digest) {
      return Corrupt(At(key.source(), "key " + net::QuoteUrl(key.str()) +
                                          " is not a sha256 (64 lowercase hex digits)"));
    }
    CARTON_ASSIGN_OR_RETURN(auto list, ParseUrlList(std::string(key.str()), value, limits));
    links.urls.emplace(*digest, std::move(list));
  }
  return links;
}

}  // namespace

Result<Links> ParseLinks(std::string_view toml_text, const LinksLimits& limits) {
  if (toml_text.size() > limits.max_size) {
    return Corrupt(std::string(kSource) + ": " + std::to_string(toml_text.size()) +
                   " bytes, more than the limit of " + std::to_string(limits.max_size));
  }
  CARTON_RETURN_IF_ERROR(ScreenTomlDottedKeys(toml_text, kSource, kMaxDottedKeyParts));
  toml::table root;
  try {
    root = toml::parse(toml_text, kSource);
  } catch (const toml::parse_error& e) {
    return Corrupt(At(e.source(), e.description()));
  }
  return FromTable(root, limits);
}

std::string WriteLinks(const Links& links) {
  std::string out = "version = 1\n\n[urls]\n";
  for (const auto& [digest, urls] : links.urls) {
    out += manifest::ToHex(digest);
    out += " = [";
    for (std::size_t i = 0; i < urls.size(); ++i) {
      if (i > 0) out += ", ";
      AppendTomlString(&out, urls[i]);
    }
    out += "]\n";
  }
  return out;
}

}  // namespace carton::links
