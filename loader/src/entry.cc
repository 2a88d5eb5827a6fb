#include "entry.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "carton/common/atomic_file.h"
#include "carton/common/unique_fd.h"

namespace carton::loader::internal {

using Json = nlohmann::json;

Status WriteEntryRecord(const std::string& entry_dir, const EntryRecord& r) {
  Json j;
  j["format"] = kEntryFormat;
  j["manifest_hash"] = manifest::ToHex(r.manifest_hash);
  j["total_size"] = r.total_size;
  Json files = Json::array();
  for (const auto& f : r.files) {
    Json e = {{"path", f.path}, {"size", f.size}};
    if (f.mapped) e["data_offset"] = f.data_offset;
    files.push_back(std::move(e));
  }
  j["files"] = std::move(files);
  if (r.source) {
    j["source"] = {{"dev", r.source->dev},
                   {"ino", r.source->ino},
                   {"size", r.source->size},
                   {"mtime_ns", r.source->mtime_ns}};
  }
  return WriteFileAtomically(entry_dir + "/" + std::string(kEntryRecordName), AsBytes(j.dump()));
}

Result<EntryRecord> ReadEntryRecord(const std::string& entry_dir) {
  std::string path = entry_dir + "/" + std::string(kEntryRecordName);
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  // The record is written by us, but a damaged disk or a hand edit must not
  // crash a load: any surprise is kCorrupt and the entry is rebuilt.
  try {
    Json j = Json::parse(AsChars(*bytes));
    if (j.at("format").get<int>() != kEntryFormat) {
      return Corrupt(path + ": unknown record format");
    }
    EntryRecord r;
    const auto hash = manifest::ParseHex(j.at("manifest_hash").get<std::string>());
    if (!hash) return Corrupt(path + ": manifest_hash is not 64 lowercase hex digits");
    r.manifest_hash = *hash;
    r.total_size = j.at("total_size").get<std::uint64_t>();
    for (const auto& e : j.at("files")) {
      EntryFile f;
      f.path = e.at("path").get<std::string>();
      f.size = e.at("size").get<std::uint64_t>();
      if (e.contains("data_offset")) {
        f.mapped = true;
        f.data_offset = e.at("data_offset").get<std::uint64_t>();
      }
      r.files.push_back(std::move(f));
    }
    if (j.contains("source")) {
      const Json& s = j.at("source");
      r.source = FileIdentity{};
      r.source->dev = s.at("dev").get<std::uint64_t>();
      r.source->ino = s.at("ino").get<std::uint64_t>();
      r.source->size = s.at("size").get<std::uint64_t>();
      r.source->mtime_ns = s.at("mtime_ns").get<std::int64_t>();
    }
    return r;
  } catch (const Json::exception& e) {
    return Corrupt(path + ": " + e.what());
  }
}

Status QuickCheck(const std::string& entry_dir, const EntryRecord& record) {
  if (record.source) {
    std::string p = entry_dir + "/" + std::string(kSourceName);
    struct stat st;
    if (::stat(p.c_str(), &st) != 0)
      return Corrupt("cache entry " + entry_dir + ": source missing");
    std::int64_t mtime =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (static_cast<std::uint64_t>(st.st_size) != record.source->size ||
        mtime != record.source->mtime_ns) {
      return Corrupt("cache entry " + entry_dir +
                     ": the .carton it maps was changed in place since it was verified");
    }
  }
  // Every file is in the directory, mapped ones too (an entry made before
  // they were is incomplete: it is rebuilt).
  for (const auto& f : record.files) {
    std::string p = entry_dir + "/" + f.path;
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) {
      return Corrupt("cache entry " + entry_dir + ": " + f.path + ": missing");
    }
    if (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != f.size) {
      return Corrupt("cache entry " + entry_dir + ": " + f.path + ": " +
                     std::to_string(st.st_size) + " bytes, MANIFEST's file has " +
                     std::to_string(f.size));
    }
  }
  return Status::Ok();
}

void PrefetchEntry(const std::string& entry_dir, const EntryRecord& record) {
  // A safetensors header is 8 bytes of length and its JSON, rarely more
  // than this.
  constexpr std::uint64_t kHeaderPrefetch = 64 * 1024;
  auto will_need = [](const std::string& path, std::uint64_t offset, std::uint64_t length) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.valid()) {
      ::posix_fadvise(fd.get(), static_cast<off_t>(offset), static_cast<off_t>(length),
                      POSIX_FADV_WILLNEED);
    }
  };
  const std::string source = entry_dir + "/" + std::string(kSourceName);
  for (const auto& f : record.files) {
    const std::string_view path = f.path;
    const bool header = path.rfind("model/", 0) == 0 && path.size() > 12 &&
                        path.substr(path.size() - 12) == ".safetensors";
    if (path != "carton.toml" && path != "tensor_data/index.toml" && !header) continue;
    const std::uint64_t length = header ? std::min(f.size, kHeaderPrefetch) : f.size;
    if (f.mapped) {
      will_need(source, f.data_offset, length);
    } else {
      will_need(entry_dir + "/" + f.path, 0, length);
    }
  }
}

void TouchEntry(const std::string& entry_dir) {
  std::string path = entry_dir + "/" + std::string(kEntryRecordName);
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

}  // namespace carton::loader::internal
