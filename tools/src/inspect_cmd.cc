// carton ls | cat | diff: one carton's files, one file's bytes, and what
// differs between two cartons; thin shells over carton/listing.h.
#include <cstdio>
#include <iostream>
#include <string>

#include "carton/carton/listing.h"
#include "carton/manifest/sha256.h"
#include "commands.h"
#include "environment_args.h"
#include "exit_code.h"
#include "json_out.h"

namespace carton::cli {
namespace {

// A file at most this large is held in memory by `carton cat` until its
// hash is checked, so a bad one prints nothing; a larger one is streamed
// and a mismatch is reported (exit 1) after its bytes went out.
constexpr std::uint64_t kCatBufferLimit = std::uint64_t{64} << 20;

Status WriteStdout(ByteView bytes) {
  if (bytes.empty()) return Status::Ok();
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
    return IoError("standard output: write failed");
  }
  return Status::Ok();
}

Result<std::vector<CartonEntry>> EntriesOf(const LsArgs& args) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(args.env));
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(args.carton, env, "ls"));
  return ListEntries(*source);
}

Result<CartonDiff> DiffOf(const DiffArgs& args) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(args.env));
  CARTON_ASSIGN_OR_RETURN(auto a, CommandSource(args.a, env, "diff"));
  CARTON_ASSIGN_OR_RETURN(auto b, CommandSource(args.b, env, "diff"));
  return DiffCartons(*a, *b);
}

Json DiffEntries(const std::vector<manifest::ManifestEntry>& entries) {
  Json a = Json::array();
  for (const auto& e : entries) {
    a.push_back({{"path", e.path}, {"sha256", manifest::ToHex(e.sha256)}});
  }
  return a;
}

}  // namespace

int Ls(const LsArgs& args) {
  auto entries = EntriesOf(args);
  if (!entries.ok()) return Fail("ls", entries.status());
  if (args.json) {
    Json j = JsonDocument();
    j["model"] = args.carton;
    j["ok"] = true;
    j["files"] = Json::array();
    for (const auto& e : *entries) {
      Json f;
      f["path"] = e.path;
      f["size"] = e.linked ? Json(nullptr) : Json(e.size);
      f["compressed_size"] = e.linked ? Json(nullptr) : Json(e.compressed_size);
      f["method"] = e.linked ? "linked" : e.method;
      f["sha256"] = manifest::ToHex(e.sha256);
      f["linked"] = e.linked;
      if (e.linked) f["urls"] = e.urls;
      if (e.symlink_target) f["symlink_target"] = *e.symlink_target;
      j["files"].push_back(std::move(f));
    }
    PrintJson(j);
    return kExitOk;
  }
  // Columns: size, stored size and method, sha256, path (a link's target
  // or "(linked)" after it); sizes of linked files are unknown ("-").
  for (const auto& e : *entries) {
    char sizes[64];
    if (e.linked) {
      std::snprintf(sizes, sizeof(sizes), "%12s %12s %-7s", "-", "-", "linked");
    } else {
      std::snprintf(sizes, sizeof(sizes), "%12llu %12llu %-7s",
                    static_cast<unsigned long long>(e.size),
                    static_cast<unsigned long long>(e.compressed_size), e.method.c_str());
    }
    std::cout << sizes << ' ' << manifest::ToHex(e.sha256) << "  " << e.path;
    if (e.symlink_target) std::cout << " -> " << *e.symlink_target;
    std::cout << '\n';
  }
  return kExitOk;
}

int Cat(const CatArgs& args) {
  auto env = CommandEnvironment(args.env);
  if (!env.ok()) return Fail("cat", env.status());
  auto source = CommandSource(args.carton, *env, "cat");
  if (!source.ok()) return Fail("cat", source.status());
  std::string held;
  bool streaming = false;
  Status s = ReadCartonFile(**source, args.path, [&](ByteView chunk) -> Status {
    if (!streaming && held.size() + chunk.size() <= kCatBufferLimit) {
      held.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      return Status::Ok();
    }
    if (!streaming) {
      streaming = true;
      CARTON_RETURN_IF_ERROR(WriteStdout(AsBytes(held)));
      held.clear();
    }
    return WriteStdout(chunk);
  });
  if (s.ok() && !streaming) s = WriteStdout(AsBytes(held));
  if (s.ok() && std::fflush(stdout) != 0) s = IoError("standard output: write failed");
  if (!s.ok()) return Fail("cat", s);
  return kExitOk;
}

int Diff(const DiffArgs& args) {
  auto d = DiffOf(args);
  if (!d.ok()) return Fail("diff", d.status());
  if (args.json) {
    Json j = JsonDocument();
    j["model"] = args.a;
    j["other"] = args.b;
    j["ok"] = true;
    j["identical"] = d->identical();
    j["manifest_hash"] = manifest::ToHex(d->a_hash);
    j["other_manifest_hash"] = manifest::ToHex(d->b_hash);
    j["added"] = DiffEntries(d->added);
    j["removed"] = DiffEntries(d->removed);
    j["changed"] = Json::array();
    for (const auto& c : d->changed) {
      j["changed"].push_back({{"path", c.path},
                              {"sha256", manifest::ToHex(c.a_sha256)},
                              {"other_sha256", manifest::ToHex(c.b_sha256)}});
    }
    PrintJson(j);
    return kExitOk;
  }
  if (d->identical()) {
    std::cout << "identical (manifest hash " << manifest::ToHex(d->a_hash) << ")\n";
    return kExitOk;
  }
  // diff(1)'s markers: "-" only in A, "+" only in B, "~" in both, changed.
  for (const auto& e : d->removed) std::cout << "- " << e.path << '\n';
  for (const auto& e : d->added) std::cout << "+ " << e.path << '\n';
  for (const auto& c : d->changed) {
    std::cout << "~ " << c.path << "  " << manifest::ToHex(c.a_sha256).substr(0, 12) << " -> "
              << manifest::ToHex(c.b_sha256).substr(0, 12) << '\n';
  }
  std::cout << d->removed.size() << " removed, " << d->added.size() << " added, "
            << d->changed.size() << " changed\n";
  return kExitOk;
}

}  // namespace carton::cli
