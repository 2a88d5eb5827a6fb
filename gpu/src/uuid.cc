#include "uuid.h"

namespace carton::gpu::internal {

std::string UuidText(const CuUuid& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += kHex[uuid.bytes[i] >> 4];
    text += kHex[uuid.bytes[i] & 0xf];
  }
  return text;
}

}  // namespace carton::gpu::internal
