// Private: the record kept beside a cache entry's files
// (<entry>/.carton-cache-entry.json, loader/FORMAT.md "Cache").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/file_identity.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::loader::internal {

inline constexpr std::string_view kEntryRecordName = ".carton-cache-entry.json";
// A hard link to the verified .carton whose stored entries are mapped.
inline constexpr std::string_view kSourceName = ".carton-source.carton";
// Stored safetensors files of model/ and .bin files of tensor_data/ at
// least this large are mapped from the source instead of copied.
inline constexpr std::uint64_t kMapThreshold = 64 * 1024;
inline constexpr int kEntryFormat = 1;

struct EntryFile {
  std::string path;  // as in MANIFEST
  std::uint64_t size = 0;
  // Not a file of the entry: its bytes are at data_offset in the source
  // (kSourceName), which was hashed when the entry was made.
  bool mapped = false;
  std::uint64_t data_offset = 0;
};

struct EntryRecord {
  manifest::Digest manifest_hash{};
  std::vector<EntryFile> files;  // MANIFEST order
  std::uint64_t total_size = 0;
  // The identity of kSourceName when the entry was made (set when some
  // file is mapped); a source changed in place (another size or mtime) is
  // damage. The record keeps its device, inode, size and mtime (not ctime).
  std::optional<FileIdentity> source;
};

Result<EntryRecord> ReadEntryRecord(const std::string& entry_dir);
Status WriteEntryRecord(const std::string& entry_dir, const EntryRecord& record);

// The cheap check of a hit: every file exists as a regular file with its
// size, and the source (when files are mapped) is unchanged. kCorrupt
// naming the entry and the file otherwise.
Status QuickCheck(const std::string& entry_dir, const EntryRecord& record);

// Asks the kernel to start reading, all at once, what loading a hit reads
// next: carton.toml, tensor_data/index.toml and the head of every
// model/*.safetensors (in the source when mapped). On cold pages a hit
// then waits for one disk round trip instead of one per file. Best effort.
void PrefetchEntry(const std::string& entry_dir, const EntryRecord& record);

// Marks the entry as used now (the record's mtime; gc removes the least
// recently used first). Best effort.
void TouchEntry(const std::string& entry_dir);

}  // namespace carton::loader::internal
