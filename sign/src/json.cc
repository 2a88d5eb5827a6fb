// Strict JSON for untrusted bundles. The only place in sign/ that calls a
// JSON parser on them: simdjson's, whose errors stop here; a syntax error
// is worded by nlohmann/json's lexer (run only then, through a SAX handler
// that builds nothing), which gives the line and column.
#include "json.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "carton/common/quote.h"
#include "carton/sign/failure.h"

namespace carton::sign::internal {
namespace {

using Json = nlohmann::json;

// Keeps only the first syntax error nlohmann/json's lexer reports.
struct SyntaxError : nlohmann::json_sax<Json> {
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = e.what();
    return false;
  }
};

std::string Diagnose(std::string_view text, simdjson::error_code err) {
  SyntaxError sax;
  try {
    Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const Json::exception& e) {
    sax.message = e.what();
  }
  return sax.message.empty() ? simdjson::error_message(err) : sax.message;
}

}  // namespace

std::vector<Value> Value::Items() const {
  std::vector<Value> out;
  if (!is_array()) return out;
  simdjson::dom::array a = element_.get_array().value_unsafe();
  out.reserve(a.size());
  for (simdjson::dom::element e : a) out.emplace_back(e);
  return out;
}

Result<Value> ParseStrictJson(std::string_view text, int max_depth, std::string_view what,
                              simdjson::dom::parser* parser) {
  // simdjson counts the top-level value as depth 1.
  if (parser->allocate(std::max<std::size_t>(text.size(), 64), max_depth + 1) !=
      simdjson::SUCCESS) {
    return Internal(std::string(what) + ": cannot allocate the JSON parser");
  }
  simdjson::dom::element root;
  const auto err = parser->parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root);
  if (err == simdjson::DEPTH_ERROR) {
    return BadField(what, "nested deeper than " + std::to_string(max_depth) + " levels");
  }
  if (err) return BadField(what, "not JSON: " + Diagnose(text, err));
  return Value(root);
}

Result<Fields> Fields::Of(const Value& value, std::string path) {
  const std::string_view where = path.empty() ? std::string_view("bundle") : std::string_view(path);
  if (!value.is_object()) return BadField(where, "must be an object");
  simdjson::dom::object object = value.element().get_object().value_unsafe();
  std::vector<std::string_view> keys;
  for (auto field : object) keys.push_back(field.key);
  std::sort(keys.begin(), keys.end());
  const auto twice = std::adjacent_find(keys.begin(), keys.end());
  if (twice != keys.end()) return BadField(where, "duplicate key " + QuoteForMessage(*twice));
  return Fields(object, std::move(path));
}

std::string Fields::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Value Fields::Find(std::string_view key) const {
  simdjson::dom::element e;
  if (object_.at_key(key).get(e) != simdjson::SUCCESS) return Value();
  return Value(e);
}

Result<Value> Fields::Require(std::string_view key) const {
  Value v = Find(key);
  if (!v) return BadField(PathOf(key), "missing");
  return v;
}

Result<std::string_view> Fields::RequireString(std::string_view key) const {
  CARTON_ASSIGN_OR_RETURN(Value v, Require(key));
  if (!v.is_string()) return BadField(PathOf(key), "must be a string");
  return v.str();
}

Status Fields::OnlyKnown(std::initializer_list<std::string_view> known) const {
  for (auto field : object_) {
    if (std::find(known.begin(), known.end(), field.key) == known.end()) {
      return BadField(PathOf(QuoteForMessage(field.key)), "unknown field");
    }
  }
  return Status::Ok();
}

std::string ItemPath(std::string_view path, std::size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

Status BadField(std::string_view path, std::string_view rule) {
  return SignFailure(Failure::kBadBundle, std::string(path) + ": " + std::string(rule));
}

Status UnsupportedField(std::string_view path, std::string_view rule) {
  return SignFailure(Failure::kUnsupported, std::string(path) + ": " + std::string(rule));
}

}  // namespace carton::sign::internal
