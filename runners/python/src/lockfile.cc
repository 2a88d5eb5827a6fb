#include "carton/python_runner/lockfile.h"

#include <toml++/toml.h>

#include <string>

#include "carton/common/toml_screen.h"
#include "carton/manifest/manifest.h"

namespace carton::python_runner {
namespace {

// Enough for any real key; toml++ has no depth limit of its own.
constexpr std::size_t kMaxLockfileDottedKeyParts = 8;

std::string At(std::string_view source, const toml::node& node, std::string_view message) {
  const auto& where = node.source().begin;
  return std::string(source) + ":" + std::to_string(where.line) + ":" +
         std::to_string(where.column) + ": " + std::string(message);
}

std::string FileNameOf(std::string_view path) {
  const auto query = path.find_first_of("?#");
  if (query != std::string_view::npos) path = path.substr(0, query);
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Result<LockedDep> ParseDep(const toml::node& node, std::string_view source,
                           std::string_view where) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return Corrupt(At(source, node, std::string(where) + " is not a table"));
  LockedDep dep;
  const toml::node* sha = t->get("sha256");
  if (sha == nullptr || !sha->is_string()) {
    return Corrupt(At(source, node, std::string(where) + ".sha256 must be a string"));
  }
  const std::string& hex = sha->as_string()->get();
  auto digest = manifest::ParseHex(hex);
  if (!digest) {
    return Corrupt(At(source, *sha,
                      std::string(where) + ".sha256 \"" + hex.substr(0, 80) +
                          "\" is not 64 lowercase hex digits"));
  }
  dep.sha256 = *digest;
  if (const toml::node* url = t->get("url")) {
    if (!url->is_string()) {
      return Corrupt(At(source, *url, std::string(where) + ".url must be a string"));
    }
    const std::string& u = url->as_string()->get();
    if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
      return Corrupt(
          At(source, *url,
             std::string(where) + ".url \"" + u.substr(0, 200) + "\" is not an http or https URL"));
    }
    dep.url = u;
    dep.file_name = FileNameOf(u.substr(u.find("//") + 2));
  }
  if (const toml::node* path = t->get("bundled_whl_path")) {
    if (!path->is_string()) {
      return Corrupt(At(source, *path, std::string(where) + ".bundled_whl_path must be a string"));
    }
    const std::string& p = path->as_string()->get();
    if (Status s = manifest::ValidateEntryPath(p); !s.ok()) {
      return Corrupt(At(source, *path,
                        std::string(where) +
                            ".bundled_whl_path must be a relative path inside "
                            "model/: " +
                            s.message()));
    }
    dep.bundled_whl_path = p;
    dep.file_name = FileNameOf(p);
  }
  if (!dep.url && !dep.bundled_whl_path) {
    return Corrupt(At(source, node, std::string(where) + " has neither url nor bundled_whl_path"));
  }
  if (dep.file_name.empty()) dep.file_name = manifest::ToHex(dep.sha256) + ".whl";
  return dep;
}

Result<LockfileEntry> ParseEntry(const toml::node& node, std::string_view source,
                                 const std::string& where) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return Corrupt(At(source, node, where + " is not a table"));
  LockfileEntry entry;
  for (const std::string& name : EnvironmentMarkerNames()) {
    const toml::node* marker = t->get(name);
    if (marker == nullptr) continue;
    if (!marker->is_string()) {
      return Corrupt(At(source, *marker, where + "." + name + " must be a string"));
    }
    entry.markers[name] = marker->as_string()->get();
  }
  const toml::node* deps = t->get("locked_deps");
  if (deps == nullptr) return entry;  // an environment without dependencies
  const toml::array* list = deps->as_array();
  if (list == nullptr) {
    return Corrupt(At(source, *deps, where + ".locked_deps must be an array of tables"));
  }
  if (list->size() > kMaxLockedDeps) {
    return Corrupt(At(source, *deps,
                      where + ".locked_deps lists " + std::to_string(list->size()) +
                          " wheels, more than " + std::to_string(kMaxLockedDeps)));
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    CARTON_ASSIGN_OR_RETURN(
        LockedDep dep,
        ParseDep(*list->get(i), source, where + ".locked_deps[" + std::to_string(i) + "]"));
    entry.deps.push_back(std::move(dep));
  }
  return entry;
}

}  // namespace

const std::vector<std::string>& EnvironmentMarkerNames() {
  static const std::vector<std::string> names = {"os_name",
                                                 "sys_platform",
                                                 "platform_machine",
                                                 "platform_python_implementation",
                                                 "platform_release",
                                                 "platform_system",
                                                 "python_version",
                                                 "python_full_version",
                                                 "implementation_name",
                                                 "implementation_version"};
  return names;
}

Result<Lockfile> ParseLockfile(std::string_view text, std::string_view source) {
  if (text.size() > kMaxLockfileSize) {
    return Corrupt(std::string(source) + ": " + std::to_string(text.size()) +
                   " bytes, more than the " + std::to_string(kMaxLockfileSize) + " allowed");
  }
  CARTON_RETURN_IF_ERROR(ScreenTomlDottedKeys(text, source, kMaxLockfileDottedKeyParts));
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return Corrupt(std::string(source) + ":" + std::to_string(where.line) + ":" +
                   std::to_string(where.column) + ": " + std::string(e.description()));
  }
  Lockfile lockfile;
  const toml::node* entries = root.get("lockfile");
  if (entries == nullptr) return lockfile;
  const toml::array* list = entries->as_array();
  if (list == nullptr) {
    return Corrupt(At(source, *entries, "lockfile must be an array of tables ([[lockfile]])"));
  }
  if (list->size() > kMaxLockfileEntries) {
    return Corrupt(At(source, *entries,
                      "lockfile has " + std::to_string(list->size()) + " entries, more than " +
                          std::to_string(kMaxLockfileEntries)));
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    CARTON_ASSIGN_OR_RETURN(LockfileEntry entry, ParseEntry(*list->get(i), source,
                                                            "lockfile[" + std::to_string(i) + "]"));
    lockfile.entries.push_back(std::move(entry));
  }
  return lockfile;
}

const LockfileEntry* MatchLockfileEntry(const Lockfile& lockfile,
                                        const EnvironmentMarkers& environment) {
  for (const LockfileEntry& entry : lockfile.entries) {
    bool all = true;
    for (const auto& [name, value] : entry.markers) {
      auto it = environment.find(name);
      if (it == environment.end() || it->second != value) {
        all = false;
        break;
      }
    }
    if (all) return &entry;
  }
  return nullptr;
}

std::string DescribeMarkers(const EnvironmentMarkers& markers) {
  std::string out;
  for (const std::string& name : EnvironmentMarkerNames()) {
    auto it = markers.find(name);
    if (it == markers.end()) continue;
    if (!out.empty()) out += ", ";
    out += name + "=" + it->second;
  }
  return out.empty() ? "any environment" : out;
}

}  // namespace carton::python_runner
