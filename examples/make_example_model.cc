// Fills an example model directory (examples/mlp/) with generated data:
//   make_example_model DIR
// writes DIR/model/model.safetensors (MLP weights) and DIR/tensor_data/
// (the self-test tensors `x` and `labels`). carton.toml is not touched.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "carton/format/tensor_data.h"
#include "carton/safetensors/writer.h"

using namespace carton;

namespace {

std::vector<float> Wave(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(static_cast<float>(i) * 0.7f);
  return v;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "make_example_model: %s\n", s.message().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir + "/model", ec);
  if (ec) return Fail(IoError(dir + "/model: " + ec.message()));

  auto w1 = EncodeNumeric<float>(Wave(16 * 8, 0.1f));
  auto b1 = EncodeNumeric<float>(Wave(16, 0.01f));
  auto w2 = EncodeNumeric<float>(Wave(8 * 16, 0.1f));
  auto b2 = EncodeNumeric<float>(Wave(8, 0.01f));
  using safetensors::Dtype;
  std::vector<safetensors::TensorSource> weights = {
      {"layer1.weight", Dtype::kF32, {16, 8}, w1, {}},
      {"layer1.bias", Dtype::kF32, {16}, b1, {}},
      {"layer2.weight", Dtype::kF32, {8, 16}, w2, {}},
      {"layer2.bias", Dtype::kF32, {8}, b2, {}},
  };
  Status s = safetensors::WriteFile(dir + "/model/model.safetensors", weights, {{"format", "pt"}});
  if (!s.ok()) return Fail(s);

  TensorData data;
  data.tensors.push_back(
      {"x", DataType::kFloat32, {2, 8}, EncodeNumeric<float>(Wave(16, 1.0f)), {}});
  data.tensors.push_back({"labels", DataType::kString, {2}, {}, {"first", "second"}});
  s = WriteTensorDataDir(dir + "/tensor_data", data);
  if (!s.ok()) return Fail(s);
  std::printf("wrote %s/model and %s/tensor_data\n", dir.c_str(), dir.c_str());
  return 0;
}
