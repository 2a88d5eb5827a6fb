// Packing a model into a .carton file.
//
// Pack() takes a folder in the carton layout (model/, carton.toml,
// optional tensor_data/ and misc/), any other folder (its files go under
// model/, but for carton.toml), or a single file (model/<its name>). It validates carton.toml and
// tensor_data/index.toml and runs every consistency check verify runs
// (references, declared names, tensor sizes) before writing a byte, hashes
// every file once
// (in the pass that compresses it; stored files on other threads while the
// archive is written, which reads each once more), writes MANIFEST, and
// writes the zip atomically: on any error nothing is left at the destination. Entries come
// in a fixed order (sorted by path, MANIFEST last) with fixed timestamps, so
// the same directory always gives a byte-identical .carton.
//
// Thread-safety: Pack() may run concurrently on different outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/compression.h"

namespace carton {

enum class PackCompression : std::uint8_t {
  kStored,
  kDeflate,
  kZstd,
  // zstd where it pays; stored for files under 4 KiB (so carton.toml and
  // MANIFEST open with any zip tool), files that zstd does not shrink by at
  // least 10%, and large files (>= PackOptions::auto_store_size), so they
  // stay mappable.
  kAuto,
};

// "auto", or a name ParseCompression takes. Errors: kInvalidArgument
// "must be stored, deflate, zstd or auto, not "<name>"".
Result<PackCompression> ParsePackCompression(std::string_view name);

// How the carton is written.
struct PackOptions {
  PackCompression compression = PackCompression::kAuto;
  int level = 0;  // 0: the method's default (deflate 6, zstd 2)
  std::uint32_t alignment = 64;
  std::uint64_t auto_store_size = std::uint64_t{16} << 20;
  // Threads for hashing stored files and for zstd (0: one per core). The
  // output is the same for every value.
  unsigned threads = 0;
  // Files and directories left out, besides those of PATH/.cartonignore
  // (one glob per line, # comments) and the defaults (.git/, __pycache__/,
  // .DS_Store). fnmatch(3) globs: a glob without '/' matches a name at any
  // depth; one with '/' (or starting with '/') matches the path from PATH;
  // a trailing '/' matches directories only. .cartonignore itself is not
  // packed.
  std::vector<std::string> exclude;
  // If set, called with the bytes of the model's files read so far and
  // their total, as they are written.
  ProgressFn progress;
};

// Where carton.toml comes from when a PackDescription gives a config.
enum class PackConfigUse : std::uint8_t {
  kIfMissing,  // the config is used when the path has no carton.toml
  kReplace,    // the config is written in place of the path's carton.toml
};

// A file of the carton that is not on disk: its path in the carton
// (under tensor_data/ or misc/) and its bytes.
struct PackBytes {
  std::string path;
  std::string bytes;
};

// A [[self_test]] that Pack() adds to the carton (the folder is left as
// it is): its tensors go into the carton's tensor_data/ under new names
// ("self_test_<n>_input_<name>", files under self_test_<n>/), and the
// carton.toml written gets a [[self_test]] referring to them. Checked as
// the folder's own self-tests are.
struct PackSelfTest {
  std::optional<std::string> name;
  std::optional<std::string> description;
  TensorData inputs;                       // each named as the input it feeds
  std::optional<TensorData> expected_out;  // each named as the output
};

// Everything a carton is packed from, in one value: the CLI's flags,
// `carton init`'s guesses and Python's carton.pack each build one.
struct PackDescription {
  // A folder in the carton layout (model/, carton.toml, optional
  // tensor_data/ and misc/), any other folder (its files go under model/,
  // but for carton.toml), or a single file (model/<its name>).
  std::string path;
  // carton.toml's values, used as config_use says; without one the path
  // must hold carton.toml.
  std::optional<CartonConfig> config;
  PackConfigUse config_use = PackConfigUse::kIfMissing;
  // Overrides: when the path's carton.toml is used, its parsed values are
  // handed to this before the carton.toml written from them replaces the
  // file (the CLI's describing flags with --override). Its error stops the
  // pack.
  std::function<Status(CartonConfig*)> edit_config;
  // Files added beside the path's (self-test tensors, misc files given as
  // bytes). Each must be under tensor_data/ or misc/ and not be a file
  // the path has too.
  std::vector<PackBytes> extra_files;
  // Self-tests added after those of carton.toml (`carton pack --self-test`,
  // carton.pack(self_tests=...)).
  std::vector<PackSelfTest> self_tests;
  // Files that live at URLs: the files with these sha256s stay out of the
  // zip, listed in LINKS with these URLs (carton.toml and
  // tensor_data/index.toml always stay in). Each sha256 must name a file.
  std::map<manifest::Digest, std::vector<std::string>> links;
  PackOptions options;
};

struct PackedFile {
  std::string path;
  std::uint64_t size = 0;
  std::uint64_t compressed_size = 0;
  Compression method = Compression::kStored;
  manifest::Digest sha256{};
};

struct PackReport {
  std::vector<PackedFile> files;  // in archive order, MANIFEST excluded
  manifest::Digest manifest_hash{};
  // What the default exclusions left out, relative to the path ("a/.git/").
  std::vector<std::string> skipped_by_default;
  // carton.toml keys that spec v1 does not define (packed, ignored by
  // readers), one line each with a "did you mean" for near misses.
  std::vector<std::string> warnings;
};

// Errors: kInvalidArgument (no carton.toml and no config given, a bad
// option or glob, an output path that is a directory), kNotFound (no such
// path, or the output's directory is missing), kIoError (the output's
// directory cannot be written; checked before any work, so the message
// names `out_path`), kUnsupported (content a carton cannot carry: no file
// for model/, a top-level LINKS, a top-level file or directory named
// MANIFEST or LINKS in another letter case, names differing only in letter
// case, a dangling symlink or one to a directory, a socket/device/FIFO —
// each naming the path), kCorrupt (invalid carton.toml or index.toml, or
// what verify would report: a reference to a missing tensor or misc file,
// an undeclared input or output name, a self-test tensor whose dtype or
// shape contradicts its declaration, a tensor file of the wrong size; one
// line per problem, "<path>/carton.toml:12:1: self-test 1 inputs: ...").
// An `out_path` inside the folder is not packed into itself (an earlier
// output there is left out, as tar leaves out its own archive). With links,
// also kInvalidArgument: a sha256 that names no file that can leave the
// zip, a URL LINKS cannot hold; with extra files, kInvalidArgument for a
// path outside tensor_data/ and misc/ or one the path has too.
Result<PackReport> Pack(const PackDescription& description, const std::string& out_path);

// Pack of `path` as it is (its carton.toml describes the model).
Result<PackReport> Pack(const std::string& path, const std::string& out_path,
                        const PackOptions& options = {});

}  // namespace carton
