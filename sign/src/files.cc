// The file list rules of OMS signatures (sign/FORMAT.md "The file list").
#include "carton/sign/files.h"

#include <algorithm>
#include <unordered_map>

#include "carton/common/quote.h"
#include "carton/common/utf8.h"
#include "carton/sign/failure.h"

namespace carton::sign {
namespace {

// Problems ProblemsStatus spells out; the rest are counted.
constexpr std::size_t kProblemsShown = 5;

// Calls `f` with each "/"-separated component of `path` until it returns
// false; false when it did.
template <typename F>
bool EachComponent(std::string_view path, F&& f) {
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    if (!f(path.substr(start, slash == std::string_view::npos ? slash : slash - start))) {
      return false;
    }
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

// Path components compared in order, a shorter one first: the same as
// comparing the bytes with "/" below every other byte (names hold no NUL).
bool ComponentLess(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    const auto key = [](char c) { return c == '/' ? 0 : static_cast<unsigned char>(c); };
    return key(a[i]) < key(b[i]);
  }
  return a.size() < b.size();
}

}  // namespace

std::string ResourceNameProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNameBytes) {
    return "is longer than " + std::to_string(kMaxNameBytes) + " bytes";
  }
  if (!IsValidUtf8(name)) return "is not valid UTF-8";
  if (name.find('\0') != std::string_view::npos) return "holds a NUL byte";
  if (name.front() == '/') return "is an absolute path";
  std::string_view broken;
  const bool clean = EachComponent(name, [&](std::string_view part) {
    broken = part;
    return !part.empty() && part != "." && part != "..";
  });
  if (clean) return "";
  if (broken.empty()) return "has an empty component";
  return "has a \"" + std::string(broken) + "\" component";
}

Status ValidateResourceName(std::string_view name, std::string_view what) {
  const std::string rule = ResourceNameProblem(name);
  if (rule.empty()) return Status::Ok();
  return SignFailure(Failure::kBadBundle,
                     std::string(what) + ": " + QuoteForMessage(name) + " " + rule);
}

bool IsIgnored(std::string_view path, std::span<const std::string> ignore_paths) {
  return std::any_of(ignore_paths.begin(), ignore_paths.end(), [&](const std::string& p) {
    return path == p || (path.size() > p.size() && path.starts_with(p) && path[p.size()] == '/');
  });
}

void SortByComponents(std::vector<Resource>* resources) {
  std::sort(resources->begin(), resources->end(),
            [](const Resource& a, const Resource& b) { return ComponentLess(a.name, b.name); });
}

std::vector<FileProblem> CompareFiles(std::span<const Resource> listed,
                                      std::span<const Resource> present) {
  std::unordered_map<std::string_view, const Resource*> there;
  there.reserve(present.size());
  for (const Resource& r : present) there.emplace(r.name, &r);
  std::vector<FileProblem> problems;
  std::unordered_map<std::string_view, bool> signed_names;
  signed_names.reserve(listed.size());
  for (const Resource& r : listed) {
    signed_names.emplace(r.name, true);
    auto it = there.find(r.name);
    if (it == there.end()) {
      problems.push_back(
          {Failure::kMissingFile, r.name, ShowText(r.name) + ": signed, but not there"});
    } else if (it->second->digest != r.digest) {
      problems.push_back({Failure::kTamperedFile, r.name,
                          ShowText(r.name) + ": sha256 " + manifest::ToHex(it->second->digest) +
                              " but the signature says " + manifest::ToHex(r.digest)});
    }
  }
  for (const Resource& r : present) {
    if (signed_names.count(r.name) == 0) {
      problems.push_back({Failure::kUnlistedFile, r.name,
                          ShowText(r.name) + ": not signed (the signature neither lists nor "
                                             "ignores it)"});
    }
  }
  return problems;
}

Status ProblemsStatus(std::span<const FileProblem> problems) {
  if (problems.empty()) return Status::Ok();
  std::string message;
  const std::size_t shown = std::min(problems.size(), kProblemsShown);
  for (std::size_t i = 0; i < shown; ++i) message += (i ? "; " : "") + problems[i].message;
  if (shown < problems.size()) {
    message += "; and " + std::to_string(problems.size() - shown) + " more";
  }
  return SignFailure(problems.front().failure, std::move(message));
}

}  // namespace carton::sign
