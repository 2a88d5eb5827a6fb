// Helpers for the hostile-input tests: zip archives crafted byte by byte
// (so every field can lie), and a sandbox that runs the carton commands on
// one and checks that nothing was written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "testing.h"

namespace carton::testing {

// One entry of a crafted archive. Defaults describe a correct stored entry.
struct RawEntry {
  RawEntry() = default;
  RawEntry(std::string n, std::string d) : name(std::move(n)), data(std::move(d)) {}

  std::string name;
  std::string data;  // the bytes as they sit in the archive
  std::uint16_t method = 0;
  std::optional<std::uint32_t> crc32;  // default: CRC-32 of `data`
  std::optional<std::uint64_t> size;   // uncompressed; default data.size()
  std::uint16_t flags = 0;
  std::uint32_t unix_mode = 0100644;
  // Local-header values that differ from the central record.
  std::optional<std::string> local_name;
  std::optional<std::uint16_t> local_method;
  std::optional<std::uint64_t> local_size;
  // Write 0xFFFFFFFF sizes and a zip64 extra field (in both headers) whose
  // uncompressed size is this.
  std::optional<std::uint64_t> zip64_size;
  // Write no local header or data: the central record points at the local
  // header of entry number `same_data_as`.
  std::optional<std::size_t> same_data_as;
};

struct RawZipOptions {
  std::optional<std::uint64_t> cd_offset;  // lie about where the directory is
};

std::vector<std::byte> BuildZip(const std::vector<RawEntry>& entries,
                                const RawZipOptions& options = {});

// Raw deflate (as zip stores it) and zstd of `data`.
std::string Deflate(const std::string& data);
std::string Zstd(const std::string& data);
std::uint32_t Crc32(const std::string& data);

// A valid carton's files (path -> contents).
std::map<std::string, std::string> ValidCartonFiles();
// The MANIFEST text for `files` (reserved names skipped).
std::string ManifestFor(const std::map<std::string, std::string>& files);
// Stored entries for `files` plus their MANIFEST.
std::vector<RawEntry> CartonEntries(const std::map<std::string, std::string>& files);

// Every file and directory under `root`, relative, sorted ("a/", "a/b").
std::vector<std::string> ListTree(const std::string& root);

}  // namespace carton::testing
