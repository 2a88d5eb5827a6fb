// URL rules shared by the LINKS parser and every fetch: which schemes carton
// fetches from and what a URL may contain (net/FORMAT.md "URLs").
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace carton::net {

// Longest URL accepted.
inline constexpr std::size_t kMaxUrlLength = 8192;

enum class Scheme { kHttp, kHttps, kFile, kOther };

// The scheme of `url` (compared case-insensitively); kOther when it has none
// or an unknown one.
Scheme SchemeOf(std::string_view url);

// True when `text` is an http:// or https:// URL (any case).
bool IsHttpUrl(std::string_view text);

// Why `url` is not acceptable to fetch from (net/FORMAT.md "URLs"), or
// nullopt. The reason is lowercase and does not repeat the URL. `url` is
// untrusted.
std::optional<std::string> UrlProblem(std::string_view url, std::size_t max_length = kMaxUrlLength);

// `text` (a URL, or a part of one) quoted for a message: carton's
// QuoteForMessage, cut to 80 bytes.
std::string QuoteUrl(std::string_view text);

}  // namespace carton::net
