// Fills an example model directory (examples/mlp/) with generated data:
//   make_example_model DIR [INPUTS.safetensors]
// writes DIR/model/model.safetensors (MLP weights) and DIR/tensor_data/:
// the self-test inputs `x` and `labels`, and the outputs the MLP must give,
// computed here in C++ (`y`, and `classified`: each label with the class
// of the largest output of its row). carton.toml and model/main.py (the
// numpy model) are not touched. INPUTS.safetensors, when given, receives
// the inputs `x` and `labels` in the form `carton infer --input` reads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "carton/format/tensor_data.h"
#include "carton/runner/runner.h"
#include "carton/runner/tensor_file.h"
#include "carton/safetensors/writer.h"

using namespace carton;

namespace {

std::vector<float> Wave(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(static_cast<float>(i) * 0.7f);
  return v;
}

// y = w2 relu(w1 x + b1) + b2 for each row of x, in double as the numpy
// model computes it, rounded to float once.
std::vector<float> Forward(const std::vector<float>& x, std::size_t rows,
                           const std::vector<float>& w1, const std::vector<float>& b1,
                           const std::vector<float>& w2, const std::vector<float>& b2) {
  const std::size_t in = 8, hidden = 16, out = 8;
  std::vector<float> y(rows * out);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> h(hidden);
    for (std::size_t j = 0; j < hidden; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < in; ++k) sum += double{x[r * in + k]} * w1[j * in + k];
      h[j] = std::max(sum + b1[j], 0.0);
    }
    for (std::size_t c = 0; c < out; ++c) {
      double sum = 0;
      for (std::size_t j = 0; j < hidden; ++j) sum += h[j] * w2[c * hidden + j];
      y[r * out + c] = static_cast<float>(sum + b2[c]);
    }
  }
  return y;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "make_example_model: %s\n", s.message().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s DIR [INPUTS.safetensors]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir + "/model", ec);
  if (ec) return Fail(IoError(dir + "/model: " + ec.message()));

  const std::vector<float> w1f = Wave(16 * 8, 0.1f), b1f = Wave(16, 0.01f);
  const std::vector<float> w2f = Wave(8 * 16, 0.1f), b2f = Wave(8, 0.01f);
  auto w1 = EncodeNumeric<float>(w1f);
  auto b1 = EncodeNumeric<float>(b1f);
  auto w2 = EncodeNumeric<float>(w2f);
  auto b2 = EncodeNumeric<float>(b2f);
  using safetensors::Dtype;
  std::vector<safetensors::TensorSource> weights = {
      {"layer1.weight", Dtype::kF32, {16, 8}, w1, {}},
      {"layer1.bias", Dtype::kF32, {16}, b1, {}},
      {"layer2.weight", Dtype::kF32, {8, 16}, w2, {}},
      {"layer2.bias", Dtype::kF32, {8}, b2, {}},
  };
  Status s = safetensors::WriteFile(dir + "/model/model.safetensors", weights, {{"format", "pt"}});
  if (!s.ok()) return Fail(s);

  std::vector<float> x = Wave(16, 1.0f);
  for (std::size_t i = 8; i < 16; ++i) x[i] = -x[i];  // the rows fall into different classes
  const std::vector<float> y = Forward(x, 2, w1f, b1f, w2f, b2f);
  std::vector<std::string> labels = {"first", "second"};
  std::vector<std::string> classified;
  for (std::size_t r = 0; r < 2; ++r) {
    const auto row = y.begin() + static_cast<std::ptrdiff_t>(r * 8);
    const auto best = std::max_element(row, row + 8) - row;  // the first largest, as numpy
    classified.push_back(labels[r] + ": class " + std::to_string(best));
  }
  TensorData data;
  data.tensors.push_back({"x", DataType::kFloat32, {2, 8}, EncodeNumeric<float>(x), {}});
  data.tensors.push_back({"labels", DataType::kString, {2}, {}, labels});
  data.tensors.push_back({"y", DataType::kFloat32, {2, 8}, EncodeNumeric<float>(y), {}});
  data.tensors.push_back({"classified", DataType::kString, {2}, {}, classified});
  s = WriteTensorDataDir(dir + "/tensor_data", data);
  if (!s.ok()) return Fail(s);
  if (argc == 3) {
    s = runner::WriteTensorsFile(
        argv[2], {runner::Tensor::Owned("x", DataType::kFloat32, {2, 8}, EncodeNumeric<float>(x)),
                  runner::Tensor::Strings("labels", {2}, labels)});
    if (!s.ok()) return Fail(s);
  }
  std::printf("wrote %s/model and %s/tensor_data\n", dir.c_str(), dir.c_str());
  return 0;
}
