// Value rules for carton.toml, shared by the parser (which reports them with
// a line and column) and ValidateConfig (which reports the field path).
//
// Each Check* function returns an empty string if the value is acceptable,
// else a predicate to append to the field's name, e.g. `must not be empty`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "carton/common/utf8.h"

namespace carton::format_internal {

std::string CheckRunnerName(std::string_view name);
std::string CheckFrameworkVersion(std::string_view req);
// A target triple: 3 or 4 '-'-separated components of [a-z0-9_.].
std::string CheckPlatform(std::string_view triple);
// "@tensor_data/<name>".
std::string CheckSelfTestRef(std::string_view ref);
// "@tensor_data/<name>" or "@misc/<path>".
std::string CheckExampleRef(std::string_view ref);

// "spec_version 2 is not supported (...)"; empty if `v` is 1.
std::string CheckSpecVersion(std::int64_t v);

using carton::IsValidUtf8;  // carton/common/utf8.h

// `s` in double quotes for a message (carton::QuoteForMessage), values
// longer than 120 bytes shortened.
std::string QuoteForMessage(std::string_view s);

// Whether a TOML key can be written without quotes ([A-Za-z0-9_-]+).
bool IsBareKey(std::string_view key);

// A key as it would appear in a dotted path: bare if it can be, else quoted.
std::string KeyForPath(std::string_view key);

}  // namespace carton::format_internal
