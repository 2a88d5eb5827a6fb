// Private to sign/src: untrusted JSON for the bundle and its payload
// (bundle_parse.cc), read strictly: nesting limited (deep input would make
// any tree recursive), duplicate keys refused (a second reader that keeps
// the other one must not see another statement), and a reader of one
// object's fields that names each field by its path in messages.
// nlohmann/json's exceptions stop in json.cc.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"

namespace carton::sign::internal {

using Json = nlohmann::json;

// Parses `text`: invalid JSON, a duplicate key or nesting deeper than
// `max_depth` (the top-level value is depth 0) is kCorrupt
// (Failure::kBadBundle) "<what>: ...", with the byte offset where
// nlohmann/json gives one.
Result<Json> ParseStrictJson(std::string_view text, int max_depth, std::string_view what);

// The fields of one JSON object, read by name; `path` names the object in
// messages ("dsseEnvelope.signatures[0]"; "" for the top level).
class Fields {
 public:
  // kCorrupt "<path>: must be an object" unless `value` is one.
  static Result<Fields> Of(const Json& value, std::string path);

  // "<path>.<key>" (or "<key>" at the top level).
  std::string PathOf(std::string_view key) const;
  // The field, or nullptr when absent.
  const Json* Find(std::string_view key) const;
  // kCorrupt "<path>.<key>: missing" when absent.
  Result<const Json*> Require(std::string_view key) const;
  // A required string field. kCorrupt "...: must be a string".
  Result<std::string> RequireString(std::string_view key) const;
  // Every field must be one of `known`: kCorrupt "<path>.<name>: unknown
  // field" for the first that is not.
  Status OnlyKnown(std::initializer_list<std::string_view> known) const;

 private:
  Fields(const Json* object, std::string path) : object_(object), path_(std::move(path)) {}
  const Json* object_;
  std::string path_;
};

// "<path>[<i>]".
std::string ItemPath(std::string_view path, std::size_t i);

// A kCorrupt bad-bundle status "<path>: <rule>".
Status BadField(std::string_view path, std::string_view rule);
// A kUnsupported status "<path>: <rule>".
Status UnsupportedField(std::string_view path, std::string_view rule);

}  // namespace carton::sign::internal
