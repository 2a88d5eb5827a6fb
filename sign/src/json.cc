// Strict JSON for untrusted bundles. The only place in sign/ that calls
// nlohmann/json's parser; its exceptions stop here. A SAX handler builds
// the tree, so that nesting and duplicate keys are refused as they are
// read, in linear time.
#include "json.h"

#include <algorithm>

#include "carton/common/quote.h"
#include "carton/sign/failure.h"

namespace carton::sign::internal {
namespace {

class StrictBuilder {
 public:
  explicit StrictBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return Put(nullptr); }
  bool boolean(bool v) { return Put(v); }
  bool number_integer(Json::number_integer_t v) { return Put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return Put(v); }
  bool string(Json::string_t& v) { return Put(std::move(v)); }
  bool binary(Json::binary_t&) { return Fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(Json::string_t& k) {
    if (stack_.back()->contains(k)) return Fail("duplicate key " + QuoteForMessage(k));
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    return Fail(e.what());
  }

  Json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  Json* Place(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    Json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool Put(Json v) {
    Place(std::move(v));
    return true;
  }
  bool Open(Json v) {
    if (static_cast<int>(stack_.size()) > max_depth_) {
      return Fail("nested deeper than " + std::to_string(max_depth_) + " levels");
    }
    stack_.push_back(Place(std::move(v)));
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  int max_depth_;
  Json root_;
  std::vector<Json*> stack_;
  std::string key_;
  std::string error_;
};

}  // namespace

Result<Json> ParseStrictJson(std::string_view text, int max_depth, std::string_view what) {
  StrictBuilder builder(max_depth);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const Json::exception& e) {
    return BadField(what, std::string("not JSON: ") + e.what());
  }
  if (!ok) {
    const std::string& e = builder.error();
    const bool syntax = e.rfind("[json.exception.", 0) == 0;
    return BadField(what, (syntax ? "not JSON: " : "") + (e.empty() ? "not JSON" : e));
  }
  return std::move(builder.root());
}

Result<Fields> Fields::Of(const Json& value, std::string path) {
  if (!value.is_object()) return BadField(path.empty() ? "bundle" : path, "must be an object");
  return Fields(&value, std::move(path));
}

std::string Fields::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const Json* Fields::Find(std::string_view key) const {
  auto it = object_->find(key);
  return it == object_->end() ? nullptr : &*it;
}

Result<const Json*> Fields::Require(std::string_view key) const {
  const Json* v = Find(key);
  if (v == nullptr) return BadField(PathOf(key), "missing");
  return v;
}

Result<std::string> Fields::RequireString(std::string_view key) const {
  CARTON_ASSIGN_OR_RETURN(const Json* v, Require(key));
  if (!v->is_string()) return BadField(PathOf(key), "must be a string");
  return v->get<std::string>();
}

Status Fields::OnlyKnown(std::initializer_list<std::string_view> known) const {
  for (const auto& [name, value] : object_->items()) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return BadField(PathOf(QuoteForMessage(name)), "unknown field");
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
