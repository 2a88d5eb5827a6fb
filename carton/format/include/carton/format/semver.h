// Semantic versions and version requirements, as used by carton.toml's
// runner.required_framework_version.
//
// The spec says requirements are "semver version requirements parsable by"
// the Rust semver crate (1.0), so VersionReq follows that crate's grammar and
// matching rules:
//   * comparators separated by commas: "=1.2.3", ">1.2", ">=2", "<3",
//     "<=1.2.3", "~1.2", "^1.2", and a bare version, which means caret;
//   * partial versions ("1", "1.2") and wildcards ("*", "x", "1.*", "1.2.x");
//     a lone wildcard matches everything and cannot be combined;
//   * a prerelease version (1.3.0-alpha) matches only if every comparator
//     matches it and at least one comparator names the same
//     major.minor.patch with a prerelease of its own.
// Build metadata is accepted and ignored when matching. At most 32
// comparators are accepted.
//
// All functions take untrusted text. Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"

namespace carton {

struct Version {
  std::uint64_t major = 0;
  std::uint64_t minor = 0;
  std::uint64_t patch = 0;
  std::string prerelease;  // dot-separated identifiers, without the '-'
  std::string build;       // dot-separated identifiers, without the '+'

  // "1.2.3", "1.2.3-rc.1+build.5".
  std::string ToString() const;

  friend bool operator==(const Version&, const Version&) = default;
};

// Parses a strict "MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]". Numbers have no
// leading zeros; identifiers are [0-9A-Za-z-]; nothing else may follow.
// Errors: kInvalidArgument naming the problem.
Result<Version> ParseVersion(std::string_view text);

// Semver precedence: negative, zero or positive as a is lower than, equal to
// or higher than b. A release is higher than its prereleases; build metadata
// is ignored.
int CompareVersions(const Version& a, const Version& b);

class VersionReq {
 public:
  enum class Op : std::uint8_t {
    kExact,      // =
    kGreater,    // >
    kGreaterEq,  // >=
    kLess,       // <
    kLessEq,     // <=
    kTilde,      // ~
    kCaret,      // ^ (and a bare version)
    kWildcard,   // 1.* / 1.2.*
  };

  struct Comparator {
    Op op = Op::kCaret;
    std::uint64_t major = 0;
    std::optional<std::uint64_t> minor;
    std::optional<std::uint64_t> patch;  // set only if minor is set
    std::string prerelease;              // set only if patch is set

    friend bool operator==(const Comparator&, const Comparator&) = default;
  };

  static constexpr std::size_t kMaxComparators = 32;

  // The requirement "*": matches every release.
  VersionReq() = default;

  // Parses a requirement (see the top of this file). Untrusted input.
  // Errors: kInvalidArgument with a message naming the problem.
  static Result<VersionReq> Parse(std::string_view text);

  // Whether `v` satisfies every comparator (with the prerelease rule above).
  bool Matches(const Version& v) const;

  // Canonical text: comparators joined by ", ", bare versions shown as "^",
  // "*" for the empty requirement. Parse(ToString()) gives an equal value.
  std::string ToString() const;

  // Empty for "*".
  const std::vector<Comparator>& comparators() const { return comparators_; }

  friend bool operator==(const VersionReq&, const VersionReq&) = default;

 private:
  std::vector<Comparator> comparators_;
};

}  // namespace carton
