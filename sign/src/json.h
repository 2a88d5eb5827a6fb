// Private to sign/src: untrusted JSON for the bundle and its payload
// (bundle_parse.cc, statement_parse.cc), read strictly and fast: simdjson
// parses (nesting limited, UTF-8 checked), duplicate keys are refused in
// every object read (a second reader that keeps the other one must not
// see another statement), and a reader of one object's fields names each
// field by its path in messages. simdjson's errors and nlohmann/json's
// exceptions (its lexer words a syntax error with its byte offset) stop in
// json.cc.
#pragma once

#include <simdjson.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"

namespace carton::sign::internal {

// A JSON value of a parsed document (valid while its parser lives and
// parses nothing else), or a missing one (false).
class Value {
 public:
  Value() = default;
  explicit Value(simdjson::dom::element e) : element_(e), present_(true) {}

  explicit operator bool() const { return present_; }
  bool is_string() const { return present_ && element_.is_string(); }
  bool is_array() const { return present_ && element_.is_array(); }
  bool is_object() const { return present_ && element_.is_object(); }
  bool is_bool() const { return present_ && element_.is_bool(); }
  bool is_null() const { return present_ && element_.is_null(); }
  // REQUIRES: is_string(), is_bool().
  std::string_view str() const { return element_.get_string().value_unsafe(); }
  bool boolean() const { return element_.get_bool().value_unsafe(); }
  // An array's items; empty for anything else.
  std::vector<Value> Items() const;
  const simdjson::dom::element& element() const { return element_; }

 private:
  simdjson::dom::element element_;
  bool present_ = false;
};

// Parses `text` with `parser` (whose document the returned value is):
// invalid JSON (or UTF-8) and nesting deeper than `max_depth` (the
// top-level value is depth 0) are kCorrupt (Failure::kBadBundle) "<what>:
// ...", with the byte offset where one can be given.
Result<Value> ParseStrictJson(std::string_view text, int max_depth, std::string_view what,
                              simdjson::dom::parser* parser);

// The fields of one JSON object, read by name; `path` names the object in
// messages ("dsseEnvelope.signatures[0]"; "" for the top level).
class Fields {
 public:
  // kCorrupt "<path>: must be an object" unless `value` is one;
  // "<path>: duplicate key "k"" when a key repeats.
  static Result<Fields> Of(const Value& value, std::string path);

  // "<path>.<key>" (or "<key>" at the top level).
  std::string PathOf(std::string_view key) const;
  // The field, or a missing value.
  Value Find(std::string_view key) const;
  // kCorrupt "<path>.<key>: missing" when absent.
  Result<Value> Require(std::string_view key) const;
  // A required string field. kCorrupt "...: must be a string".
  Result<std::string_view> RequireString(std::string_view key) const;
  // Every field must be one of `known`: kCorrupt "<path>.<name>: unknown
  // field" for the first that is not.
  Status OnlyKnown(std::initializer_list<std::string_view> known) const;

 private:
  Fields(simdjson::dom::object object, std::string path)
      : object_(object), path_(std::move(path)) {}
  simdjson::dom::object object_;
  std::string path_;
};

// "<path>[<i>]".
std::string ItemPath(std::string_view path, std::size_t i);

// A kCorrupt bad-bundle status "<path>: <rule>".
Status BadField(std::string_view path, std::string_view rule);
// A kUnsupported status "<path>: <rule>".
Status UnsupportedField(std::string_view path, std::string_view rule);

}  // namespace carton::sign::internal
