// Parsing untrusted OMS bundles (sign/FORMAT.md "The bundle", "Reading a
// bundle"): every field checked, each error naming its field.
#include "base64.h"
#include "carton/common/quote.h"
#include "carton/sign/bundle.h"
#include "carton/sign/failure.h"
#include "json.h"

namespace carton::sign {
namespace {

using internal::BadField;
using internal::Fields;
using internal::ItemPath;
using internal::UnsupportedField;
using internal::Value;

// A non-empty base64 string field, decoded.
Result<std::vector<std::byte>> Base64Field(const Fields& f, std::string_view key) {
  CARTON_ASSIGN_OR_RETURN(std::string_view text, f.RequireString(key));
  if (text.empty()) return BadField(f.PathOf(key), "empty");
  auto bytes = internal::Base64Decode(text);
  if (!bytes) return BadField(f.PathOf(key), "not base64");
  return std::move(*bytes);
}

Status ParsePublicKey(const Value& value, const std::string& path, Bundle* b) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, path));
  const Value hint = f.Find("hint");
  const Value raw = f.Find("rawBytes");
  if (!hint && !raw) return BadField(path, "has neither hint nor rawBytes");
  if (hint) {
    if (!hint.is_string()) return BadField(f.PathOf("hint"), "must be a string");
    if (hint.str().size() > kMaxShortTextBytes) return BadField(f.PathOf("hint"), "too long");
    b->key_hint = std::string(hint.str());
  }
  if (raw) {
    CARTON_ASSIGN_OR_RETURN(b->raw_public_key, Base64Field(f, "rawBytes"));
  }
  b->method = Method::kKey;
  return Status::Ok();
}

Status ParseChain(const Value& value, const std::string& path, Bundle* b) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, path));
  CARTON_ASSIGN_OR_RETURN(Value certs, f.Require("certificates"));
  const std::string list = f.PathOf("certificates");
  if (!certs.is_array()) return BadField(list, "must be an array");
  const std::vector<Value> items = certs.Items();
  if (items.empty()) return BadField(list, "is empty");
  if (items.size() > kMaxCertificates) {
    return BadField(list, std::to_string(items.size()) + " certificates, more than the limit of " +
                              std::to_string(kMaxCertificates));
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    CARTON_ASSIGN_OR_RETURN(Fields c, Fields::Of(items[i], ItemPath(list, i)));
    CARTON_ASSIGN_OR_RETURN(auto der, Base64Field(c, "rawBytes"));
    b->certificates.push_back(std::move(der));
  }
  b->method = Method::kCertificate;
  return Status::Ok();
}

// tlogEntries and timestampVerificationData: what keyless signing needs,
// not supported yet; empty ones (as key and certificate bundles have) are
// accepted.
Status CheckNoTransparency(const Fields& f) {
  if (const Value t = f.Find("tlogEntries")) {
    if (!t.is_array()) return BadField(f.PathOf("tlogEntries"), "must be an array");
    if (!t.Items().empty()) {
      return UnsupportedField(f.PathOf("tlogEntries"),
                              "transparency log entries are not supported yet");
    }
  }
  if (const Value t = f.Find("timestampVerificationData")) {
    CARTON_ASSIGN_OR_RETURN(Fields data, Fields::Of(t, f.PathOf("timestampVerificationData")));
    const Value stamps = data.Find("rfc3161Timestamps");
    if (stamps && !(stamps.is_array() && stamps.Items().empty())) {
      return UnsupportedField(f.PathOf("timestampVerificationData"),
                              "signed timestamps are not supported yet");
    }
  }
  return Status::Ok();
}

Status ParseMaterial(const Value& value, Bundle* b) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, "verificationMaterial"));
  if (f.Find("certificate")) {
    return UnsupportedField(f.PathOf("certificate"),
                            "keyless (sigstore) bundles are not supported yet: sign with a key "
                            "or a certificate chain");
  }
  CARTON_RETURN_IF_ERROR(f.OnlyKnown(
      {"publicKey", "x509CertificateChain", "tlogEntries", "timestampVerificationData"}));
  CARTON_RETURN_IF_ERROR(CheckNoTransparency(f));
  const Value key = f.Find("publicKey");
  const Value chain = f.Find("x509CertificateChain");
  if (key && chain) {
    return BadField("verificationMaterial", "has both publicKey and x509CertificateChain");
  }
  if (key) return ParsePublicKey(key, f.PathOf("publicKey"), b);
  if (chain) return ParseChain(chain, f.PathOf("x509CertificateChain"), b);
  return BadField("verificationMaterial", "has neither publicKey nor x509CertificateChain");
}

Status ParseSignature(const Value& value, const std::string& path, Bundle* b) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, path));
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"sig", "keyid"}));
  // keyid: absent, "" or null, or any string (OMS does not use it).
  if (const Value id = f.Find("keyid"); id && !id.is_string() && !id.is_null()) {
    return BadField(f.PathOf("keyid"), "must be a string or null");
  }
  CARTON_ASSIGN_OR_RETURN(b->signature, Base64Field(f, "sig"));
  return Status::Ok();
}

Status ParseEnvelope(const Value& value, Bundle* b) {
  CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(value, "dsseEnvelope"));
  CARTON_RETURN_IF_ERROR(f.OnlyKnown({"payload", "payloadType", "signatures"}));
  CARTON_ASSIGN_OR_RETURN(std::string_view type, f.RequireString("payloadType"));
  if (type != kPayloadType) {
    return BadField(f.PathOf("payloadType"),
                    QuoteForMessage(type) + " is not \"" + std::string(kPayloadType) + "\"");
  }
  CARTON_ASSIGN_OR_RETURN(auto payload, Base64Field(f, "payload"));
  b->payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
  CARTON_ASSIGN_OR_RETURN(Value sigs, f.Require("signatures"));
  const std::string list = f.PathOf("signatures");
  if (!sigs.is_array()) return BadField(list, "must be an array");
  const std::vector<Value> items = sigs.Items();
  if (items.empty()) return BadField(list, "is empty");
  if (items.size() > 1) {
    return UnsupportedField(
        list, std::to_string(items.size()) + " signatures; only one is supported yet");
  }
  return ParseSignature(items[0], ItemPath(list, 0), b);
}

Status CheckMediaType(const Fields& f) {
  CARTON_ASSIGN_OR_RETURN(std::string_view media_type, f.RequireString("mediaType"));
  if (media_type == kBundleMediaType) return Status::Ok();
  const bool sigstore = media_type.starts_with("application/vnd.dev.sigstore.bundle");
  const std::string rule =
      QuoteForMessage(media_type) + " is not \"" + std::string(kBundleMediaType) + "\"";
  return sigstore ? UnsupportedField("mediaType", rule + " (other versions are not supported)")
                  : BadField("mediaType", rule);
}

}  // namespace

Result<Bundle> ParseBundle(ByteView bytes) {
  if (bytes.size() > kMaxBundleBytes) {
    return SignFailure(Failure::kBadBundle, "bundle: " + std::to_string(bytes.size()) +
                                                " bytes, more than the limit of " +
                                                std::to_string(kMaxBundleBytes));
  }
  Bundle b;
  {
    simdjson::dom::parser parser;
    CARTON_ASSIGN_OR_RETURN(
        Value root, internal::ParseStrictJson(AsChars(bytes), kMaxJsonDepth, "bundle", &parser));
    CARTON_ASSIGN_OR_RETURN(Fields f, Fields::Of(root, ""));
    if (f.Find("messageSignature")) {
      return UnsupportedField("messageSignature",
                              "message signatures are not OMS bundles (dsseEnvelope is)");
    }
    CARTON_RETURN_IF_ERROR(f.OnlyKnown({"mediaType", "verificationMaterial", "dsseEnvelope"}));
    CARTON_RETURN_IF_ERROR(CheckMediaType(f));
    CARTON_ASSIGN_OR_RETURN(Value material, f.Require("verificationMaterial"));
    CARTON_RETURN_IF_ERROR(ParseMaterial(material, &b));
    CARTON_ASSIGN_OR_RETURN(Value envelope, f.Require("dsseEnvelope"));
    CARTON_RETURN_IF_ERROR(ParseEnvelope(envelope, &b));
  }
  CARTON_ASSIGN_OR_RETURN(b.statement, ParseStatement(b.payload));
  return b;
}

}  // namespace carton::sign
