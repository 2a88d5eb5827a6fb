// The CLI's commands as plain functions, so main.cc stays a thin parser.
// Each returns the process exit code (see exit_code.h) and writes requested
// output to stdout, errors to stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace carton::cli {

struct SafetensorsInspectArgs {
  std::string file;
  bool json = false;
};
int SafetensorsInspect(const SafetensorsInspectArgs& args);

struct SafetensorsVerifyArgs {
  std::vector<std::string> files;
  bool json = false;
  bool quiet = false;
};
int SafetensorsVerify(const SafetensorsVerifyArgs& args);

}  // namespace carton::cli

namespace carton::cli {

struct PackArgs {
  std::string dir;
  std::string output;
  std::string compression = "auto";
  int level = 0;
  std::uint32_t align = 64;
  int threads = 0;
  // Used when DIR has no carton.toml.
  std::string runner;
  std::string framework_version;
  std::uint64_t compat_version = 1;
  std::string name;
  std::string description;
  std::string license;
};
int Pack(const PackArgs& args);

struct VerifyArgs {
  std::string carton;
  bool json = false;
  unsigned threads = 0;
  bool fetch = false;
  bool allow_file_links = false;
};
int Verify(const VerifyArgs& args);

struct InfoArgs {
  std::string carton;
  bool json = false;
};
int Info(const InfoArgs& args);

struct UnpackArgs {
  std::string carton;
  std::string dir;
  bool allow_file_links = false;
};
int Unpack(const UnpackArgs& args);
int Hash(const std::string& carton);

// links_cmd.cc
struct ShrinkArgs {
  std::string carton;
  std::string output;
  std::string url_prefix;
  std::string blobs_dir;
  std::uint64_t min_size = std::uint64_t{1} << 20;
  std::vector<std::string> encodings;
};
int Shrink(const ShrinkArgs& args);

struct FetchArgs {
  std::string carton;
  std::string output;
  std::string compression = "stored";
  bool allow_file_links = false;
};
int Fetch(const FetchArgs& args);
int TensorsImport(const std::string& safetensors_file, const std::string& dir);
int TensorsExport(const std::string& dir, const std::string& safetensors_file);

}  // namespace carton::cli
