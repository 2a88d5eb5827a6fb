// Writes a small example model's weights as safetensors:
//   write_example_safetensors OUT.safetensors
// A two-layer MLP (F32 weights and biases, a BF16 embedding, an I64 step
// counter) with metadata, written atomically by carton::safetensors.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "carton/safetensors/writer.h"

using namespace carton;
using namespace carton::safetensors;

namespace {

std::vector<std::byte> F32s(std::size_t n, float scale) {
  std::vector<std::byte> out(n * 4);
  for (std::size_t i = 0; i < n; ++i) {
    float v = scale * std::sin(static_cast<float>(i));
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    StoreLE32(out.data() + 4 * i, bits);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.safetensors\n", argv[0]);
    return 2;
  }
  auto w1 = F32s(16 * 8, 0.1f), b1 = F32s(16, 0.01f);
  auto w2 = F32s(4 * 16, 0.1f), b2 = F32s(4, 0.01f);
  std::vector<std::byte> emb(10 * 8 * 2);
  for (std::size_t i = 0; i < emb.size(); i += 2) StoreLE16(&emb[i], 0x3F80);  // BF16 1.0
  std::vector<std::byte> step(8);
  StoreLE64(step.data(), 1000);
  std::vector<TensorSource> tensors = {
      {"layer1.weight", Dtype::kF32, {16, 8}, w1, {}}, {"layer1.bias", Dtype::kF32, {16}, b1, {}},
      {"layer2.weight", Dtype::kF32, {4, 16}, w2, {}}, {"layer2.bias", Dtype::kF32, {4}, b2, {}},
      {"embedding", Dtype::kBF16, {10, 8}, emb, {}},   {"step", Dtype::kI64, {}, step, {}},
  };
  Status s = WriteFile(argv[1], tensors, {{"format", "pt"}, {"model", "example-mlp"}});
  if (!s.ok()) {
    std::fprintf(stderr, "write_example_safetensors: %s\n", s.message().c_str());
    return 2;
  }
  std::printf("wrote %s\n", argv[1]);
  return 0;
}
