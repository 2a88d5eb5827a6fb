// Helpers for carton tests: a small model directory and hand-built archives.
#pragma once

#include <map>
#include <string>

#include "carton/manifest/manifest.h"
#include "carton/zip/writer.h"
#include "testing.h"

namespace carton::testing {

inline const char kMinimalConfig[] =
    "spec_version = 1\n"
    "model_name = \"tiny\"\n"
    "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\n"
    "[[output]]\nname = \"y\"\ndtype = \"float32\"\nshape = [2]\n"
    "[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n"
    "expected_out = { y = \"@tensor_data/y\" }\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

inline const char kMinimalIndex[] =
    "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\nfile = \"tensor_0.bin\"\n"
    "[[tensor]]\nname = \"y\"\ndtype = \"float32\"\nshape = [2]\nfile = \"tensor_1.bin\"\n";

// path -> contents of a valid model directory.
inline std::map<std::string, std::string> MinimalFiles() {
  return {{"carton.toml", kMinimalConfig},
          {"model/model.bin", std::string(3000, 'w')},
          {"model/sub/vocab.txt", "hello\nworld\n"},
          {"tensor_data/index.toml", kMinimalIndex},
          {"tensor_data/tensor_0.bin", std::string(8, '\1')},
          {"tensor_data/tensor_1.bin", std::string(8, '\2')},
          {"misc/readme.md", "# tiny\n"}};
}

void WriteTree(const std::string& dir, const std::map<std::string, std::string>& files);

// Writes an archive holding `files` plus a MANIFEST computed from
// `manifest_files` (defaults to `files`), with every entry stored.
void WriteArchive(const std::string& path, const std::map<std::string, std::string>& files,
                  const std::map<std::string, std::string>* manifest_files = nullptr,
                  bool with_manifest = true);

}  // namespace carton::testing
