// Helpers for loader and runner tests: model directories and cartons built
// at test time, and a private cache directory per test.
#pragma once

#include <cstdint>
#include <string>

#include "carton/carton/environment.h"
#include "carton/carton/pack.h"
#include "carton/loader/loader.h"
#include "testing.h"

namespace carton::testing {

// carton.toml for a model with input x (float32 [n]) and labels (string
// [2]), outputs of the same names, and one self-test expecting its inputs
// back. `runner` lines can be replaced through `runner_toml`.
std::string LoaderConfig(const std::string& runner_toml =
                             "runner_name = \"noop\"\nrequired_framework_version = \">=1.0.0, "
                             "<2\"\nrunner_compat_version = 1\n");

// Writes a model directory: carton.toml, model/weights.safetensors (one F32
// tensor "w" of `weight_floats` values), model/notes.txt, tensor_data with
// x (float32 [4]), labels (string [2]) and big (float32 [weight_floats],
// the same values as w), misc/readme.md. Returns `dir`.
std::string MakeModelDir(const std::string& dir, std::uint64_t weight_floats = 1024,
                         const std::string& config = LoaderConfig());

// Packs `dir` into `out` with `compression`; returns the manifest hash (hex).
std::string PackDir(const std::string& dir, const std::string& out,
                    PackCompression compression = PackCompression::kStored);

// What a shell does to load `location`: its source with `env` (the default
// Environment unless given: every kind of location), then loader::Load.
Result<loader::LoadedCarton> LoadAt(const Location& location,
                                    const loader::LoadOptions& options = {});
Result<loader::LoadedCarton> LoadAt(const Location& location, const loader::LoadOptions& options,
                                    const Environment& env);

// Paths of built programs (from compile definitions).
std::string NoopRunnerDir();
std::string FakeRunnerBin();

// Writes an executable `carton-runner-<file_name>` script into `dir` that
// runs the fake runner with the given environment assignments
// ("FAKE_RUNNER_MODE=crash ...").
void WriteFakeRunner(const std::string& dir, const std::string& file_name,
                     const std::string& env_assignments);

}  // namespace carton::testing
