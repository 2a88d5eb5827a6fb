// Location: where a carton is, as a user names it: a path (a .carton file
// or a carton directory), an http(s):// URL, or an oci:// reference to an
// OCI registry. It is parsed once, where the text enters (the CLI's
// arguments, Python's calls), and names the carton in every message; the
// source of its kind (source.h OpenSource) reads it, and an operation that
// cannot read a kind refuses it by name. Parsing is pure: it never touches
// the file system (whether a path is a file or a directory is the source's
// business, decided when it is opened).
//
//   oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]   (carton's own artifacts)
//   http://... https://...                          (range requests, or a download)
//   anything else                                   a path
//
// A Location converts implicitly from a string, keeping a parse error in
// status() for the first operation to report, as a path converts to
// std::filesystem::path; Parse() reports it at once.
//
// Thread-safety: a value type; const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton {

inline constexpr std::string_view kOciScheme = "oci://";

// A parsed oci:// reference.
struct OciReference {
  std::string registry;    // "HOST" or "HOST:PORT", lowercase
  std::string repository;  // "team/model"
  std::string tag;         // "" when only a digest is given
  std::optional<manifest::Digest> digest;

  // What the manifests endpoint is asked for: "sha256:<hex>" when a digest
  // is given, else the tag.
  std::string Target() const;
  // "oci://registry/repository[:tag][@sha256:hex]".
  std::string ToString() const;
};

// True when `text` starts with "oci://" (any case).
bool IsOciReference(std::string_view text);

// Parses `oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]` (untrusted text).
// REPO is one or more lowercase path components
// (`[a-z0-9]+([._-]+[a-z0-9]+)*`, at most 255 bytes); TAG is
// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`, "latest" when neither a tag nor a
// digest is given. Errors: kInvalidArgument naming the part and the rule.
Result<OciReference> ParseOciReference(std::string_view text);

class Location {
 public:
  enum class Kind : std::uint8_t {
    kPath,  // a .carton file or a directory (it may not exist yet)
    kUrl,   // http:// or https://
    kOci,   // oci://
  };

  // Parses `text`: "oci://..." (any case) must be a valid reference;
  // "http://" and "https://" URLs must pass the URL rules (net/FORMAT.md
  // "URLs"); any other "scheme://" is refused; everything else is a path.
  // Errors: kInvalidArgument naming the text and the rule.
  static Result<Location> Parse(std::string_view text);

  // As Parse, but an error is kept in status() instead of returned.
  Location(std::string_view text);    // NOLINT(google-explicit-constructor)
  Location(const std::string& text);  // NOLINT(google-explicit-constructor)
  Location(const char* text);         // NOLINT(google-explicit-constructor)

  // OK, or why the text is not a location (every operation returns it).
  const Status& status() const { return status_; }
  Kind kind() const { return kind_; }
  // The text as given: messages name the carton by it.
  const std::string& text() const { return text_; }
  bool is_remote() const { return kind_ == Kind::kUrl || kind_ == Kind::kOci; }
  // REQUIRES: kind() == kOci and status() is OK.
  const OciReference& oci() const { return *oci_; }

  // "a path", "an http(s) URL", "an oci:// reference".
  std::string_view kind_name() const;

  // The error an operation that cannot read this location returns:
  // kInvalidArgument "<operation> takes <takes>; <text> is <is>" (`is`
  // defaults to kind_name(); a directory source says "a directory").
  Status Refuse(std::string_view operation, std::string_view takes, std::string_view is = {}) const;

 private:
  Location() = default;

  std::string text_;
  Kind kind_ = Kind::kPath;
  std::optional<OciReference> oci_;
  Status status_;
};

}  // namespace carton
