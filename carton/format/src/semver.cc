#include "carton/format/semver.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>

namespace carton {
namespace {

enum class Position { kMajor, kMinor, kPatch, kPre, kBuild };

std::string_view PositionName(Position p) {
  switch (p) {
    case Position::kMajor:
      return "major version number";
    case Position::kMinor:
      return "minor version number";
    case Position::kPatch:
      return "patch version number";
    case Position::kPre:
      return "pre-release identifier";
    case Position::kBuild:
      return "build metadata";
  }
  return "version";
}

// A character of untrusted text, printable in a message.
std::string Describe(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
  return buf;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}
bool IsWildcard(char c) { return c == '*' || c == 'x' || c == 'X'; }

void TrimSpaces(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
}

// Parsing helpers consume from `text` and return an error message (empty on
// success); the public functions add the prefix and code.
using Error = std::string;

Error UnexpectedEndOrChar(std::string_view text, Position pos) {
  if (text.empty())
    return "unexpected end of input while parsing " + std::string(PositionName(pos));
  return "unexpected character " + Describe(text.front()) + " while parsing " +
         std::string(PositionName(pos));
}

Error ParseNumber(std::string_view& text, Position pos, std::uint64_t& out) {
  std::size_t len = 0;
  std::uint64_t value = 0;
  while (len < text.size() && IsDigit(text[len])) {
    if (len > 0 && value == 0) return "invalid leading zero in " + std::string(PositionName(pos));
    auto digit = static_cast<std::uint64_t>(text[len] - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      return std::string(PositionName(pos)) + " is too large";
    }
    value = value * 10 + digit;
    ++len;
  }
  if (len == 0) return UnexpectedEndOrChar(text, pos);
  out = value;
  text.remove_prefix(len);
  return {};
}

// Dot-separated identifiers of [0-9A-Za-z-]. Takes nothing (and succeeds) if
// the text does not start with an identifier character or a dot.
Error ParseIdentifiers(std::string_view& text, Position pos, std::string& out) {
  std::size_t done = 0;  // bytes accepted, including separating dots
  while (true) {
    std::size_t seg = 0;
    bool has_nondigit = false;
    while (done + seg < text.size() && IsIdentChar(text[done + seg])) {
      if (!IsDigit(text[done + seg])) has_nondigit = true;
      ++seg;
    }
    bool at_dot = done + seg < text.size() && text[done + seg] == '.';
    if (seg == 0) {
      if (done == 0 && !at_dot) break;
      return "empty identifier segment in " + std::string(PositionName(pos));
    }
    if (pos == Position::kPre && seg > 1 && !has_nondigit && text[done] == '0') {
      return "invalid leading zero in " + std::string(PositionName(pos));
    }
    done += seg;
    if (!at_dot) break;
    ++done;
  }
  out.assign(text.substr(0, done));
  text.remove_prefix(done);
  return {};
}

// Parses "-pre" and "+build" if present.
Error ParseSuffixes(std::string_view& text, Position& pos, std::string& pre, std::string* build) {
  if (!text.empty() && text.front() == '-') {
    pos = Position::kPre;
    text.remove_prefix(1);
    if (Error e = ParseIdentifiers(text, pos, pre); !e.empty()) return e;
    if (pre.empty()) return "empty identifier segment in " + std::string(PositionName(pos));
  }
  if (!text.empty() && text.front() == '+') {
    pos = Position::kBuild;
    text.remove_prefix(1);
    std::string b;
    if (Error e = ParseIdentifiers(text, pos, b); !e.empty()) return e;
    if (b.empty()) return "empty identifier segment in " + std::string(PositionName(pos));
    if (build != nullptr) *build = std::move(b);
  }
  return {};
}

// Semver prerelease precedence; an empty prerelease (a release) is highest.
int ComparePrerelease(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return (a.empty() ? 1 : 0) - (b.empty() ? 1 : 0);
  while (true) {
    std::size_t ea = std::min(a.find('.'), a.size());
    std::size_t eb = std::min(b.find('.'), b.size());
    std::string_view ia = a.substr(0, ea);
    std::string_view ib = b.substr(0, eb);
    bool na = std::all_of(ia.begin(), ia.end(), IsDigit);
    bool nb = std::all_of(ib.begin(), ib.end(), IsDigit);
    if (na != nb) return na ? -1 : 1;  // numeric identifiers sort first
    int c = 0;
    if (na && ia.size() != ib.size()) {
      c = ia.size() < ib.size() ? -1 : 1;  // no leading zeros: longer is larger
    } else {
      c = ia.compare(ib);
    }
    if (c != 0) return c < 0 ? -1 : 1;
    bool more_a = ea < a.size();
    bool more_b = eb < b.size();
    if (!more_a || !more_b) return (more_a ? 1 : 0) - (more_b ? 1 : 0);
    a.remove_prefix(ea + 1);
    b.remove_prefix(eb + 1);
  }
}

using Op = VersionReq::Op;
using Comparator = VersionReq::Comparator;

Op TakeOp(std::string_view& text, bool& explicit_op) {
  explicit_op = true;
  auto take = [&text](std::size_t n, Op op) {
    text.remove_prefix(n);
    return op;
  };
  if (text.starts_with(">=")) return take(2, Op::kGreaterEq);
  if (text.starts_with("<=")) return take(2, Op::kLessEq);
  if (text.starts_with('=')) return take(1, Op::kExact);
  if (text.starts_with('>')) return take(1, Op::kGreater);
  if (text.starts_with('<')) return take(1, Op::kLess);
  if (text.starts_with('~')) return take(1, Op::kTilde);
  if (text.starts_with('^')) return take(1, Op::kCaret);
  explicit_op = false;
  return Op::kCaret;
}

Error ParseComparator(std::string_view& text, Comparator& c, Position& pos) {
  bool explicit_op = false;
  c.op = TakeOp(text, explicit_op);
  TrimSpaces(text);
  pos = Position::kMajor;
  if (Error e = ParseNumber(text, pos, c.major); !e.empty()) return e;

  bool wildcard = false;
  if (text.starts_with('.')) {
    text.remove_prefix(1);
    pos = Position::kMinor;
    if (!text.empty() && IsWildcard(text.front())) {
      text.remove_prefix(1);
      wildcard = true;
      if (!explicit_op) c.op = Op::kWildcard;
    } else {
      std::uint64_t minor = 0;
      if (Error e = ParseNumber(text, pos, minor); !e.empty()) return e;
      c.minor = minor;
    }
  }
  if (text.starts_with('.')) {
    text.remove_prefix(1);
    pos = Position::kPatch;
    if (!text.empty() && IsWildcard(text.front())) {
      text.remove_prefix(1);
      if (!explicit_op) c.op = Op::kWildcard;
    } else if (wildcard) {
      if (text.empty()) return "unexpected end of input after wildcard";
      return "unexpected character " + Describe(text.front()) + " after wildcard";
    } else {
      std::uint64_t patch = 0;
      if (Error e = ParseNumber(text, pos, patch); !e.empty()) return e;
      c.patch = patch;
    }
  }
  if (c.patch.has_value()) {
    if (Error e = ParseSuffixes(text, pos, c.prerelease, nullptr); !e.empty()) return e;
  }
  TrimSpaces(text);
  return {};
}

bool MatchesExact(const Comparator& c, const Version& v) {
  if (v.major != c.major) return false;
  if (c.minor && v.minor != *c.minor) return false;
  if (c.patch && v.patch != *c.patch) return false;
  return v.prerelease == c.prerelease;
}

// sign > 0: v is above c; sign < 0: v is below c. A comparator missing a
// component covers every value of it, so v is neither above nor below.
bool MatchesOrder(const Comparator& c, const Version& v, int sign) {
  auto cmp = [sign](std::uint64_t a, std::uint64_t b) { return sign > 0 ? a > b : a < b; };
  if (v.major != c.major) return cmp(v.major, c.major);
  if (!c.minor) return false;
  if (v.minor != *c.minor) return cmp(v.minor, *c.minor);
  if (!c.patch) return false;
  if (v.patch != *c.patch) return cmp(v.patch, *c.patch);
  int p = ComparePrerelease(v.prerelease, c.prerelease);
  return sign > 0 ? p > 0 : p < 0;
}

bool MatchesTilde(const Comparator& c, const Version& v) {
  if (v.major != c.major) return false;
  if (c.minor && v.minor != *c.minor) return false;
  if (c.patch && v.patch != *c.patch) return v.patch > *c.patch;
  return ComparePrerelease(v.prerelease, c.prerelease) >= 0;
}

bool MatchesCaret(const Comparator& c, const Version& v) {
  if (v.major != c.major) return false;
  if (!c.minor) return true;
  std::uint64_t minor = *c.minor;
  if (!c.patch) return c.major > 0 ? v.minor >= minor : v.minor == minor;
  std::uint64_t patch = *c.patch;
  if (c.major > 0) {
    if (v.minor != minor) return v.minor > minor;
    if (v.patch != patch) return v.patch > patch;
  } else if (minor > 0) {
    if (v.minor != minor) return false;
    if (v.patch != patch) return v.patch > patch;
  } else if (v.minor != minor || v.patch != patch) {
    return false;
  }
  return ComparePrerelease(v.prerelease, c.prerelease) >= 0;
}

bool MatchesComparator(const Comparator& c, const Version& v) {
  switch (c.op) {
    case Op::kExact:
    case Op::kWildcard:
      return MatchesExact(c, v);
    case Op::kGreater:
      return MatchesOrder(c, v, 1);
    case Op::kGreaterEq:
      return MatchesExact(c, v) || MatchesOrder(c, v, 1);
    case Op::kLess:
      return MatchesOrder(c, v, -1);
    case Op::kLessEq:
      return MatchesExact(c, v) || MatchesOrder(c, v, -1);
    case Op::kTilde:
      return MatchesTilde(c, v);
    case Op::kCaret:
      return MatchesCaret(c, v);
  }
  return false;
}

std::string_view OpText(Op op) {
  switch (op) {
    case Op::kExact:
      return "=";
    case Op::kGreater:
      return ">";
    case Op::kGreaterEq:
      return ">=";
    case Op::kLess:
      return "<";
    case Op::kLessEq:
      return "<=";
    case Op::kTilde:
      return "~";
    case Op::kCaret:
      return "^";
    case Op::kWildcard:
      return "";
  }
  return "";
}

}  // namespace

std::string Version::ToString() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  if (!prerelease.empty()) s += "-" + prerelease;
  if (!build.empty()) s += "+" + build;
  return s;
}

Result<Version> ParseVersion(std::string_view text) {
  auto fail = [](const Error& e) { return InvalidArgument("invalid version: " + e); };
  Version v;
  Position pos = Position::kMajor;
  std::uint64_t* parts[] = {&v.major, &v.minor, &v.patch};
  const Position positions[] = {Position::kMajor, Position::kMinor, Position::kPatch};
  for (int i = 0; i < 3; ++i) {
    pos = positions[i];
    if (i > 0) {
      if (!text.starts_with('.')) return fail(UnexpectedEndOrChar(text, positions[i - 1]));
      text.remove_prefix(1);
    }
    if (Error e = ParseNumber(text, pos, *parts[i]); !e.empty()) return fail(e);
  }
  if (Error e = ParseSuffixes(text, pos, v.prerelease, &v.build); !e.empty()) return fail(e);
  if (!text.empty()) {
    return fail("unexpected character " + Describe(text.front()) + " after " +
                std::string(PositionName(pos)));
  }
  return v;
}

int CompareVersions(const Version& a, const Version& b) {
  auto cmp = [](std::uint64_t x, std::uint64_t y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (int c = cmp(a.major, b.major)) return c;
  if (int c = cmp(a.minor, b.minor)) return c;
  if (int c = cmp(a.patch, b.patch)) return c;
  return ComparePrerelease(a.prerelease, b.prerelease);
}

namespace {

// A hint for a requirement written in pip's syntax: "==1.2" is "=1.2" here.
std::string SyntaxHint(std::string_view text) {
  if (!text.starts_with("==") || text.starts_with("===") || text.size() > 64) return "";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return "";
  }
  return " (use =" + std::string(text.substr(2)) +
         ": requirements use the Rust semver syntax, where = means exactly this version)";
}

}  // namespace

Result<VersionReq> VersionReq::Parse(std::string_view text) {
  TrimSpaces(text);
  const std::string hint = SyntaxHint(text);
  auto fail = [&](const Error& e) {
    return InvalidArgument("invalid version requirement: " + e + hint);
  };
  if (!text.empty() && IsWildcard(text.front())) {
    char w = text.front();
    std::string_view rest = text.substr(1);
    TrimSpaces(rest);
    if (rest.empty()) return VersionReq();
    if (rest.starts_with(',')) {
      return fail(std::string("wildcard ") + w + " must be the only comparator");
    }
    return fail("unexpected character " + Describe(rest.front()) + " after wildcard");
  }

  VersionReq req;
  while (true) {
    std::string_view start = text;
    Comparator c;
    Position pos = Position::kMajor;
    if (Error e = ParseComparator(text, c, pos); !e.empty()) {
      if (!start.empty() && IsWildcard(start.front())) {
        std::string_view rest = start.substr(1);
        TrimSpaces(rest);
        if (rest.empty() || rest.starts_with(',')) {
          return fail(std::string("wildcard ") + start.front() + " must be the only comparator");
        }
      }
      return fail(e);
    }
    req.comparators_.push_back(std::move(c));
    if (text.empty()) return req;
    if (!text.starts_with(',')) {
      return fail("expected comma after " + std::string(PositionName(pos)) + ", found " +
                  Describe(text.front()));
    }
    text.remove_prefix(1);
    TrimSpaces(text);
    if (req.comparators_.size() == kMaxComparators) {
      return fail("more than " + std::to_string(kMaxComparators) + " comparators");
    }
  }
}

bool VersionReq::Matches(const Version& v) const {
  for (const Comparator& c : comparators_) {
    if (!MatchesComparator(c, v)) return false;
  }
  if (v.prerelease.empty()) return true;
  // A prerelease is only admitted by a comparator that opts into
  // prereleases of that exact release.
  for (const Comparator& c : comparators_) {
    if (c.major == v.major && c.minor == v.minor && c.patch == v.patch && !c.prerelease.empty()) {
      return true;
    }
  }
  return false;
}

std::string VersionReq::ToString() const {
  if (comparators_.empty()) return "*";
  std::string out;
  for (const Comparator& c : comparators_) {
    if (!out.empty()) out += ", ";
    out += OpText(c.op);
    out += std::to_string(c.major);
    if (c.minor) {
      out += "." + std::to_string(*c.minor);
      if (c.patch) {
        out += "." + std::to_string(*c.patch);
        if (!c.prerelease.empty()) out += "-" + c.prerelease;
      } else if (c.op == Op::kWildcard) {
        out += ".*";
      }
    } else if (c.op == Op::kWildcard) {
      out += ".*";
    }
  }
  return out;
}

}  // namespace carton
