// Helpers for the TorchScript runner's tests: tensors built with torch as
// tensor_data values, model directories (carton.toml, model/*.pt,
// tensor_data/), packing with the built `carton`, and the environment that
// lets `carton` find the runner.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "carton/format/tensor_data.h"
#include "testing.h"

namespace carton::torchscript::testing {

using carton::testing::TempDir;

// The built carton-runner-torchscript.
std::string RunnerBin();

// Environment for a carton command: the runner's directory on the search
// path and a private cache.
std::string Env(const TempDir& tmp);

std::vector<std::uint64_t> Shape(const at::Tensor& t);
// The carton dtype of a torch tensor (fails the test when there is none).
DataType TypeOf(const at::Tensor& t);

// A tensor_data value holding `t`'s bytes, typed `as` (default: its own type).
TensorValue Value(const std::string& name, at::Tensor t, DataType as);
TensorValue Value(const std::string& name, const at::Tensor& t);
// A rank-1 string tensor, and a rank-0 one.
TensorValue Strings(const std::string& name, std::vector<std::string> s);
TensorValue String(const std::string& name, std::string s);

void WriteText(const std::filesystem::path& path, const std::string& text);

// A model directory under `tmp`: carton.toml, model/<model_file> and
// tensor_data with the given tensors.
struct ModelDir {
  std::filesystem::path dir;
  ModelDir(const TempDir& tmp, torch::jit::Module& module, const std::string& toml,
           const std::vector<TensorValue>& tensors, const std::string& model_file = "model.pt");
};

// Packs `model` into tmp/model.carton; the test fails if `carton pack` does.
std::string Pack(const TempDir& tmp, const ModelDir& model, const std::string& compression);

// A [runner] table for the TorchScript runner, with optional [runner.opts].
std::string Runner(const std::string& requirement = "=1.13.1", const std::string& opts = "");

}  // namespace carton::torchscript::testing
