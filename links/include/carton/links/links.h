// LINKS: where to fetch the files a carton leaves out of its zip.
//
// A LINKS file is TOML mapping the sha256 of each file to the URLs it can be
// fetched from (spec section LINKS; the rules enforced here, and where they
// are stricter than the spec, are in links/FORMAT.md):
//
//   version = 1
//   [urls]
//   e550f6224a5133f597d823ab4590f369e0b20e3c6446488225fc6f7a372b9fe2 = ["https://example.com/w"]
//
// ParseLinks reads untrusted text and validates all of it before returning;
// WriteLinks produces the canonical text. Thread-safety: plain values and
// pure functions; safe to use from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/net/url.h"

namespace carton::links {

// Largest LINKS text ParseLinks accepts (FORMAT.md "Limits").
inline constexpr std::size_t kMaxLinksSize = 16u << 20;
// Most URLs listed for one hash.
inline constexpr std::size_t kMaxUrlsPerHash = 64;
// Most parts in a dotted TOML key (`a.b.c` has 3); LINKS needs only 1.
inline constexpr std::size_t kMaxDottedKeyParts = 4;

// The limits ParseLinks applies; the defaults are the constants above.
struct LinksLimits {
  std::size_t max_size = kMaxLinksSize;
  std::size_t max_urls_per_hash = kMaxUrlsPerHash;
  std::size_t max_url_length = net::kMaxUrlLength;  // the longest URL (net/url.h)
};

// The parsed contents of a LINKS file: for each sha256, the URLs to try, in
// the order given.
struct Links {
  std::map<manifest::Digest, std::vector<std::string>> urls;

  friend bool operator==(const Links&, const Links&) = default;
};

// Parses and validates a LINKS file. `toml_text` is untrusted.
// Errors (every message starts with "LINKS", and with "LINKS:<line>:<col>"
// when a position is known):
//   kCorrupt      larger than kMaxLinksSize, not TOML, a missing or
//                 non-integer `version`, a missing `[urls]` table, a key that
//                 is not 64 lowercase hex digits, a value that is not a
//                 non-empty array of strings, more than kMaxUrlsPerHash URLs,
//                 or a URL that is empty, too long, contains whitespace or
//                 control characters, or whose scheme is not http, https or
//                 file.
//   kUnsupported  `version` is an integer other than 1.
// Unknown top-level keys are ignored, like unknown fields in carton.toml.
// `limits` replaces the size, URL-count and URL-length limits.
Result<Links> ParseLinks(std::string_view toml_text, const LinksLimits& limits = {});

// The canonical LINKS text: `version = 1`, then `[urls]` with one line per
// hash in ascending order, URLs in their given order. Deterministic.
// REQUIRES: every list is non-empty and every URL passes ParseLinks' rules;
// then ParseLinks(WriteLinks(links)) == links.
std::string WriteLinks(const Links& links);

}  // namespace carton::links
