// Parsing an OMS bundle's payload: the in-toto Statement v1 and its
// predicate (sign/FORMAT.md "The statement"). Untrusted; every field
// checked, messages naming "payload.<field>".
#include <unordered_set>

#include "carton/common/quote.h"
#include "carton/sign/bundle.h"
#include "carton/sign/failure.h"
#include "carton/sign/files.h"
#include "json.h"

namespace carton::sign {
namespace {

using internal::BadField;
using internal::Fields;
using internal::ItemPath;
using internal::UnsupportedField;
using internal::Value;

constexpr std::string_view kPredicatePrefix = "https://model_signing/signature/";
constexpr std::string_view kResources = "payload.predicate.resources";

Result<manifest::Digest> HexDigest(const Value& v, const std::string& path) {
  if (!v.is_string()) return BadField(path, "must be a string");
  const std::string_view text = v.str();
  auto d = manifest::ParseHex(text);
  if (!d)
    return BadField(path, QuoteForMessage(text) + " is not a sha256 (64 lowercase hex digits)");
  return *d;
}

// A hash algorithm name of OMS: only sha256 is supported.
Status CheckAlgorithm(const Value& v, const std::string& path) {
  if (!v.is_string()) return BadField(path, "must be a string");
  const std::string_view name = v.str();
  if (name == "sha256") return Status::Ok();
  if (name == "blake2b" || name == "blake3") {
    return UnsupportedField(path, QuoteForMessage(name) + " is not supported yet (only sha256)");
  }
  return BadField(path, QuoteForMessage(name) + " is not a hash algorithm of OMS v1.0");
}

Status ParseSubject(const Value& value, Statement* s) {
  const std::string list = "payload.subject";
  if (!value.is_array()) return BadField(list, "must be an array");
  const std::vector<Value> items = value.Items();
  if (items.size() != 1) {
    return BadField(list, std::to_string(items.size()) + " subjects, not exactly one");
  }
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(items[0], ItemPath(list, 0)));
  CARTON_ASSIGN_OR_RETURN(std::string_view name, f.RequireString("name"));
  if (name.empty()) return BadField(f.PathOf("name"), "empty");
  if (name.size() > kMaxShortTextBytes) return BadField(f.PathOf("name"), "too long");
  s->subject_name = std::string(name);
  CARTON_ASSIGN_OR_RETURN(Value digest, f.Require("digest"));
  CARTON_ASSIGN_OR_RETURN(Fields d, Fields::Of(digest, f.PathOf("digest")));
  // Other algorithms may sit beside sha256 (an in-toto DigestSet); only
  // sha256 is read.
  CARTON_ASSIGN_OR_RETURN(Value sha, d.Require("sha256"));
  CARTON_ASSIGN_OR_RETURN(s->root_digest, HexDigest(sha, d.PathOf("sha256")));
  return Status::Ok();
}

Status ParseIgnorePaths(const Value& ignore, const std::string& list, Statement* s) {
  if (!ignore.is_array()) return BadField(list, "must be an array");
  const std::vector<Value> items = ignore.Items();
  if (items.size() > kMaxIgnorePaths) {
    return BadField(list, std::to_string(items.size()) + " paths, more than the limit of " +
                              std::to_string(kMaxIgnorePaths));
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) return BadField(ItemPath(list, i), "must be a string");
    CARTON_RETURN_IF_ERROR(ValidateResourceName(items[i].str(), ItemPath(list, i)));
    s->ignore_paths.emplace_back(items[i].str());
  }
  return Status::Ok();
}

Status ParseSerialization(const Value& value, Statement* s) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, "payload.predicate.serialization"));
  CARTON_ASSIGN_OR_RETURN(std::string_view method, f.RequireString("method"));
  if (method == "shards") {
    return UnsupportedField(f.PathOf("method"), "\"shards\" is not supported yet (only \"files\")");
  }
  if (method != "files") {
    return BadField(f.PathOf("method"),
                    QuoteForMessage(method) + " is not \"files\" or \"shards\"");
  }
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"method", "hash_type", "allow_symlinks", "ignore_paths"}));
  CARTON_ASSIGN_OR_RETURN(Value hash, f.Require("hash_type"));
  CARTON_RETURN_IF_ERROR(CheckAlgorithm(hash, f.PathOf("hash_type")));
  CARTON_ASSIGN_OR_RETURN(Value links, f.Require("allow_symlinks"));
  if (!links.is_bool()) return BadField(f.PathOf("allow_symlinks"), "must be a boolean");
  s->allow_symlinks = links.boolean();
  const Value ignore = f.Find("ignore_paths");
  return ignore ? ParseIgnorePaths(ignore, f.PathOf("ignore_paths"), s) : Status::Ok();
}

// One resource, read in one pass over its fields: the paths of messages
// are built only for an error (a model may list a million files).
Status ParseResource(const Value& value, std::size_t i, Resource* r) {
  const auto where = [i](std::string_view field) {
    return ItemPath(kResources, i) + (field.empty() ? "" : "." + std::string(field));
  };
  simdjson::dom::object object;
  if (value.element().get_object().get(object) != simdjson::SUCCESS) {
    return BadField(where(""), "must be an object");
  }
  bool has_name = false, has_digest = false, has_algorithm = false;
  for (auto field : object) {
    bool* seen = field.key == "name"        ? &has_name
                 : field.key == "digest"    ? &has_digest
                 : field.key == "algorithm" ? &has_algorithm
                                            : nullptr;
    if (seen == nullptr) continue;  // other fields are allowed, and not read
    if (*seen) return BadField(where(""), "duplicate key " + QuoteForMessage(field.key));
    *seen = true;
    const Value v(field.value);
    if (seen == &has_algorithm) {
      CARTON_RETURN_IF_ERROR(CheckAlgorithm(v, where("algorithm")));
    } else if (!v.is_string()) {
      return BadField(where(field.key), "must be a string");
    } else if (seen == &has_name) {
      if (std::string rule = ResourceNameProblem(v.str()); !rule.empty()) {
        return BadField(where("name"), QuoteForMessage(v.str()) + " " + rule);
      }
      r->name = std::string(v.str());
    } else if (auto d = manifest::ParseHex(v.str())) {
      r->digest = *d;
    } else {
      return BadField(where("digest"),
                      QuoteForMessage(v.str()) + " is not a sha256 (64 lowercase hex digits)");
    }
  }
  for (auto [has, name] : {std::pair{has_name, "name"}, std::pair{has_digest, "digest"},
                           std::pair{has_algorithm, "algorithm"}}) {
    if (!has) return BadField(where(name), "missing");
  }
  return Status::Ok();
}

Status ParseResources(const Value& value, Statement* s) {
  const std::string list(kResources);
  if (!value.is_array()) return BadField(list, "must be an array");
  const std::vector<Value> items = value.Items();
  if (items.size() > kMaxResources) {
    return BadField(list, std::to_string(items.size()) + " resources, more than the limit of " +
                              std::to_string(kMaxResources));
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(items.size());
  s->resources.resize(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    CARTON_RETURN_IF_ERROR(ParseResource(items[i], i, &s->resources[i]));
    if (!seen.insert(s->resources[i].name).second) {
      return BadField(ItemPath(list, i) + ".name",
                      QuoteForMessage(s->resources[i].name) + " is listed twice");
    }
  }
  return Status::Ok();
}

Status ParsePredicate(const Value& value, Statement* s) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, "payload.predicate"));
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"resources", "serialization"}));
  CARTON_ASSIGN_OR_RETURN(Value serialization, f.Require("serialization"));
  CARTON_RETURN_IF_ERROR(ParseSerialization(serialization, s));
  CARTON_ASSIGN_OR_RETURN(Value resources, f.Require("resources"));
  return ParseResources(resources, s);
}

Status CheckTypes(const Fields& f) {
  CARTON_ASSIGN_OR_RETURN(std::string_view type, f.RequireString("_type"));
  if (type != kStatementType) {
    return BadField(f.PathOf("_type"),
                    QuoteForMessage(type) + " is not \"" + std::string(kStatementType) + "\"");
  }
  CARTON_ASSIGN_OR_RETURN(std::string_view predicate, f.RequireString("predicateType"));
  if (predicate == kPredicateType) return Status::Ok();
  const std::string rule =
      QuoteForMessage(predicate) + " is not \"" + std::string(kPredicateType) + "\"";
  return predicate.starts_with(kPredicatePrefix)
             ? UnsupportedField(f.PathOf("predicateType"), rule + " (another OMS version)")
             : BadField(f.PathOf("predicateType"), rule + ": not a model signature");
}

}  // namespace

Result<Statement> ParseStatement(std::string_view payload) {
  simdjson::dom::parser parser;
  CARTON_ASSIGN_OR_RETURN(Value j,
                          internal::ParseStrictJson(payload, kMaxJsonDepth, "payload", &parser));
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(j, "payload"));
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"_type", "subject", "predicateType", "predicate"}));
  CARTON_RETURN_IF_ERROR(CheckTypes(f));
  Statement s;
  CARTON_ASSIGN_OR_RETURN(Value subject, f.Require("subject"));
  CARTON_RETURN_IF_ERROR(ParseSubject(subject, &s));
  CARTON_ASSIGN_OR_RETURN(Value predicate, f.Require("predicate"));
  CARTON_RETURN_IF_ERROR(ParsePredicate(predicate, &s));
  const manifest::Digest root = RootDigest(s.resources);
  if (root != s.root_digest) {
    return BadField("payload.subject[0].digest.sha256", manifest::ToHex(s.root_digest) +
                                                            ", but the resources' root digest is " +
                                                            manifest::ToHex(root));
  }
  return s;
}

}  // namespace carton::sign
