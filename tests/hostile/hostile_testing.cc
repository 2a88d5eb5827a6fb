#include "hostile_testing.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"

namespace carton::testing {
namespace {

void Put16(std::vector<std::byte>* out, std::uint64_t v) {
  for (int i = 0; i < 2; ++i) out->push_back(static_cast<std::byte>(v >> (8 * i)));
}
void Put32(std::vector<std::byte>* out, std::uint64_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<std::byte>(v >> (8 * i)));
}
void Put64(std::vector<std::byte>* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<std::byte>(v >> (8 * i)));
}
void PutText(std::vector<std::byte>* out, const std::string& s) {
  for (char c : s) out->push_back(static_cast<std::byte>(c));
}

constexpr std::uint32_t kMax32 = 0xFFFFFFFF;

}  // namespace

std::uint32_t Crc32(const std::string& data) {
  return static_cast<std::uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

std::string Deflate(const std::string& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::byte> BuildZip(const std::vector<RawEntry>& entries,
                                const RawZipOptions& options) {
  std::vector<std::byte> out;
  std::vector<std::uint64_t> offsets;
  for (const RawEntry& e : entries) {
    if (e.same_data_as) {
      offsets.push_back(offsets.at(*e.same_data_as));
      continue;
    }
    offsets.push_back(out.size());
    const std::string name = e.local_name.value_or(e.name);
    const std::uint64_t size = e.local_size.value_or(e.size.value_or(e.data.size()));
    Put32(&out, 0x04034b50);
    Put16(&out, e.zip64_size ? 45 : 20);
    Put16(&out, e.flags);
    Put16(&out, e.local_method.value_or(e.method));
    Put16(&out, 0);
    Put16(&out, 0x21);
    Put32(&out, e.crc32.value_or(Crc32(e.data)));
    Put32(&out, e.zip64_size ? kMax32 : e.data.size());
    Put32(&out, e.zip64_size ? kMax32 : size);
    Put16(&out, name.size());
    Put16(&out, e.zip64_size ? 20 : 0);
    PutText(&out, name);
    if (e.zip64_size) {
      Put16(&out, 1);
      Put16(&out, 16);
      Put64(&out, *e.zip64_size);
      Put64(&out, e.data.size());
    }
    PutText(&out, e.data);
  }
  const std::uint64_t cd_offset = out.size();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const RawEntry& e = entries[i];
    const std::uint64_t size = e.size.value_or(e.data.size());
    Put32(&out, 0x02014b50);
    Put16(&out, (3 << 8) | 45);  // made by Unix
    Put16(&out, e.zip64_size ? 45 : 20);
    Put16(&out, e.flags);
    Put16(&out, e.method);
    Put16(&out, 0);
    Put16(&out, 0x21);
    Put32(&out, e.crc32.value_or(Crc32(e.data)));
    Put32(&out, e.zip64_size ? kMax32 : e.data.size());
    Put32(&out, e.zip64_size ? kMax32 : size);
    Put16(&out, e.name.size());
    Put16(&out, e.zip64_size ? 20 : 0);
    Put16(&out, 0);  // comment
    Put16(&out, 0);  // disk
    Put16(&out, 0);  // internal attributes
    Put32(&out, std::uint64_t{e.unix_mode} << 16);
    Put32(&out, offsets[i]);
    PutText(&out, e.name);
    if (e.zip64_size) {
      Put16(&out, 1);
      Put16(&out, 16);
      Put64(&out, *e.zip64_size);
      Put64(&out, e.data.size());
    }
  }
  const std::uint64_t cd_size = out.size() - cd_offset;
  Put32(&out, 0x06054b50);
  Put16(&out, 0);
  Put16(&out, 0);
  Put16(&out, entries.size());
  Put16(&out, entries.size());
  Put32(&out, cd_size);
  Put32(&out, options.cd_offset.value_or(cd_offset));
  Put16(&out, 0);
  return out;
}

std::map<std::string, std::string> ValidCartonFiles() {
  return {{"carton.toml",
           "spec_version = 1\nmodel_name = \"hostile\"\n"
           "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
           "runner_compat_version = 1\n"},
          {"model/weights.bin", std::string(4000, 'w')}};
}

std::string ManifestFor(const std::map<std::string, std::string>& files) {
  std::string text;
  for (const auto& [path, content] : files) {
    if (manifest::IsReservedPath(path) || path.back() == '/') continue;
    text += path + "=" + manifest::ToHex(manifest::Sha256Of(AsBytes(content))) + "\n";
  }
  return text;
}

std::vector<RawEntry> CartonEntries(const std::map<std::string, std::string>& files) {
  std::vector<RawEntry> entries;
  for (const auto& [path, content] : files) entries.push_back({path, content});
  entries.push_back({"MANIFEST", ManifestFor(files)});
  return entries;
}

std::vector<std::string> ListTree(const std::string& root) {
  std::vector<std::string> out;
  namespace fs = std::filesystem;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    std::string rel = fs::relative(it->path(), root).string();
    if (it->is_directory() && !it->is_symlink()) rel += "/";
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace carton::testing
