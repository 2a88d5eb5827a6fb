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

// The path's components, for ordering.
std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

}  // namespace

Status ValidateResourceName(std::string_view name, std::string_view what) {
  auto bad = [&](std::string_view rule) {
    return SignFailure(Failure::kBadBundle,
                       std::string(what) + ": " + QuoteForMessage(name) + " " + std::string(rule));
  };
  if (name.empty()) return bad("is empty");
  if (name.size() > kMaxNameBytes)
    return bad("is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  if (!IsValidUtf8(name)) return bad("is not valid UTF-8");
  if (name.find('\0') != std::string_view::npos) return bad("holds a NUL byte");
  if (name.front() == '/') return bad("is an absolute path");
  for (std::string_view part : Components(name)) {
    if (part.empty()) return bad("has an empty component");
    if (part == "." || part == "..") return bad("has a \"" + std::string(part) + "\" component");
  }
  return Status::Ok();
}

bool IsIgnored(std::string_view path, std::span<const std::string> ignore_paths) {
  return std::any_of(ignore_paths.begin(), ignore_paths.end(), [&](const std::string& p) {
    return path == p || (path.size() > p.size() && path.starts_with(p) && path[p.size()] == '/');
  });
}

void SortByComponents(std::vector<Resource>* resources) {
  std::sort(resources->begin(), resources->end(), [](const Resource& a, const Resource& b) {
    const auto pa = Components(a.name);
    const auto pb = Components(b.name);
    return std::lexicographical_compare(pa.begin(), pa.end(), pb.begin(), pb.end());
  });
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
    const std::string shown = ShowText(r.name);
    auto it = there.find(r.name);
    if (it == there.end()) {
      problems.push_back({Failure::kMissingFile, r.name, shown + ": signed, but not there"});
    } else if (it->second->digest != r.digest) {
      problems.push_back({Failure::kTamperedFile, r.name,
                          shown + ": sha256 " + manifest::ToHex(it->second->digest) +
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
