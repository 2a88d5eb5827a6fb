// URL checks shared by the LINKS parser and the fetcher. Private to links/src.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "carton/links/links.h"

namespace carton::links {

enum class Scheme { kHttp, kHttps, kFile, kOther };

// The scheme of `url` (compared case-insensitively); kOther when it has none
// or an unknown one.
Scheme SchemeOf(std::string_view url);

// Why `url` is not acceptable in LINKS (FORMAT.md "URLs"), or nullopt.
// The reason is lowercase and does not repeat the URL.
// `max_length` replaces kMaxUrlLength.
std::optional<std::string> UrlProblem(std::string_view url, std::size_t max_length = kMaxUrlLength);

// `s` in double quotes, cut to a readable length, for error messages about
// untrusted text.
std::string QuoteForMessage(std::string_view s);

}  // namespace carton::links
