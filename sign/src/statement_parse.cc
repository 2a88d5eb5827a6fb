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
using internal::Json;
using internal::UnsupportedField;

constexpr std::string_view kPredicatePrefix = "https://model_signing/signature/";

Result<manifest::Digest> HexDigest(const Json& v, const std::string& path) {
  if (!v.is_string()) return BadField(path, "must be a string");
  const std::string& text = v.get_ref<const std::string&>();
  auto d = manifest::ParseHex(text);
  if (!d)
    return BadField(path, QuoteForMessage(text) + " is not a sha256 (64 lowercase hex digits)");
  return *d;
}

// A hash algorithm name of OMS: only sha256 is supported.
Status CheckAlgorithm(const Json& v, const std::string& path) {
  if (!v.is_string()) return BadField(path, "must be a string");
  const std::string& name = v.get_ref<const std::string&>();
  if (name == "sha256") return Status::Ok();
  if (name == "blake2b" || name == "blake3") {
    return UnsupportedField(path, QuoteForMessage(name) + " is not supported yet (only sha256)");
  }
  return BadField(path, QuoteForMessage(name) + " is not a hash algorithm of OMS v1.0");
}

Status ParseSubject(const Json& value, Statement* s) {
  const std::string list = "payload.subject";
  if (!value.is_array()) return BadField(list, "must be an array");
  if (value.size() != 1) {
    return BadField(list, std::to_string(value.size()) + " subjects, not exactly one");
  }
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value[0], ItemPath(list, 0)));
  CARTON_ASSIGN_OR_RETURN(s->subject_name, f.RequireString("name"));
  if (s->subject_name.empty()) return BadField(f.PathOf("name"), "empty");
  if (s->subject_name.size() > kMaxShortTextBytes) return BadField(f.PathOf("name"), "too long");
  CARTON_ASSIGN_OR_RETURN(const Json* digest, f.Require("digest"));
  CARTON_ASSIGN_OR_RETURN(Fields d, Fields::Of(*digest, f.PathOf("digest")));
  // Other algorithms may sit beside sha256 (an in-toto DigestSet); only
  // sha256 is read.
  CARTON_ASSIGN_OR_RETURN(const Json* sha, d.Require("sha256"));
  CARTON_ASSIGN_OR_RETURN(s->root_digest, HexDigest(*sha, d.PathOf("sha256")));
  return Status::Ok();
}

Status ParseSerialization(const Json& value, Statement* s) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, "payload.predicate.serialization"));
  CARTON_ASSIGN_OR_RETURN(std::string method, f.RequireString("method"));
  if (method == "shards") {
    return UnsupportedField(f.PathOf("method"), "\"shards\" is not supported yet (only \"files\")");
  }
  if (method != "files") {
    return BadField(f.PathOf("method"),
                    QuoteForMessage(method) + " is not \"files\" or \"shards\"");
  }
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"method", "hash_type", "allow_symlinks", "ignore_paths"}));
  CARTON_ASSIGN_OR_RETURN(const Json* hash, f.Require("hash_type"));
  CARTON_RETURN_IF_ERROR(CheckAlgorithm(*hash, f.PathOf("hash_type")));
  CARTON_ASSIGN_OR_RETURN(const Json* links, f.Require("allow_symlinks"));
  if (!links->is_boolean()) return BadField(f.PathOf("allow_symlinks"), "must be a boolean");
  s->allow_symlinks = links->get<bool>();
  const Json* ignore = f.Find("ignore_paths");
  if (ignore == nullptr) return Status::Ok();
  const std::string list = f.PathOf("ignore_paths");
  if (!ignore->is_array()) return BadField(list, "must be an array");
  if (ignore->size() > kMaxIgnorePaths) {
    return BadField(list, std::to_string(ignore->size()) + " paths, more than the limit of " +
                              std::to_string(kMaxIgnorePaths));
  }
  for (std::size_t i = 0; i < ignore->size(); ++i) {
    const Json& p = (*ignore)[i];
    if (!p.is_string()) return BadField(ItemPath(list, i), "must be a string");
    CARTON_RETURN_IF_ERROR(ValidateResourceName(p.get<std::string>(), ItemPath(list, i)));
    s->ignore_paths.push_back(p.get<std::string>());
  }
  return Status::Ok();
}

Status ParseResource(const Json& value, const std::string& path, Resource* r) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, path));
  CARTON_ASSIGN_OR_RETURN(r->name, f.RequireString("name"));
  CARTON_RETURN_IF_ERROR(ValidateResourceName(r->name, f.PathOf("name")));
  CARTON_ASSIGN_OR_RETURN(const Json* algorithm, f.Require("algorithm"));
  CARTON_RETURN_IF_ERROR(CheckAlgorithm(*algorithm, f.PathOf("algorithm")));
  CARTON_ASSIGN_OR_RETURN(const Json* digest, f.Require("digest"));
  CARTON_ASSIGN_OR_RETURN(r->digest, HexDigest(*digest, f.PathOf("digest")));
  return Status::Ok();
}

Status ParseResources(const Json& value, Statement* s) {
  const std::string list = "payload.predicate.resources";
  if (!value.is_array()) return BadField(list, "must be an array");
  if (value.size() > kMaxResources) {
    return BadField(list, std::to_string(value.size()) + " resources, more than the limit of " +
                              std::to_string(kMaxResources));
  }
  std::unordered_set<std::string_view> seen;
  s->resources.resize(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    CARTON_RETURN_IF_ERROR(ParseResource(value[i], ItemPath(list, i), &s->resources[i]));
    if (!seen.insert(s->resources[i].name).second) {
      return BadField(ItemPath(list, i) + ".name",
                      QuoteForMessage(s->resources[i].name) + " is listed twice");
    }
  }
  return Status::Ok();
}

Status ParsePredicate(const Json& value, Statement* s) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, "payload.predicate"));
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"resources", "serialization"}));
  CARTON_ASSIGN_OR_RETURN(const Json* serialization, f.Require("serialization"));
  CARTON_RETURN_IF_ERROR(ParseSerialization(*serialization, s));
  CARTON_ASSIGN_OR_RETURN(const Json* resources, f.Require("resources"));
  return ParseResources(*resources, s);
}

Status CheckTypes(const Fields& f) {
  CARTON_ASSIGN_OR_RETURN(std::string type, f.RequireString("_type"));
  if (type != kStatementType) {
    return BadField(f.PathOf("_type"),
                    QuoteForMessage(type) + " is not \"" + std::string(kStatementType) + "\"");
  }
  CARTON_ASSIGN_OR_RETURN(std::string predicate, f.RequireString("predicateType"));
  if (predicate == kPredicateType) return Status::Ok();
  const std::string rule =
      QuoteForMessage(predicate) + " is not \"" + std::string(kPredicateType) + "\"";
  return predicate.rfind(kPredicatePrefix, 0) == 0
             ? UnsupportedField(f.PathOf("predicateType"), rule + " (another OMS version)")
             : BadField(f.PathOf("predicateType"), rule + ": not a model signature");
}

}  // namespace

Result<Statement> ParseStatement(std::string_view payload) {
  CARTON_ASSIGN_OR_RETURN(Json j, internal::ParseStrictJson(payload, kMaxJsonDepth, "payload"));
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(j, "payload"));
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"_type", "subject", "predicateType", "predicate"}));
  CARTON_RETURN_IF_ERROR(CheckTypes(f));
  Statement s;
  CARTON_ASSIGN_OR_RETURN(const Json* subject, f.Require("subject"));
  CARTON_RETURN_IF_ERROR(ParseSubject(*subject, &s));
  CARTON_ASSIGN_OR_RETURN(const Json* predicate, f.Require("predicate"));
  CARTON_RETURN_IF_ERROR(ParsePredicate(*predicate, &s));
  const manifest::Digest root = RootDigest(s.resources);
  if (root != s.root_digest) {
    return BadField("payload.subject[0].digest.sha256", manifest::ToHex(s.root_digest) +
                                                            ", but the resources' root digest is " +
                                                            manifest::ToHex(root));
  }
  return s;
}

}  // namespace carton::sign
