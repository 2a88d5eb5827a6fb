// carton_zlib_crc32: the zip tests link it, so libzip's CRC-32 of stored
// bytes goes through it here as it does in the CLI. It must compute what
// zlib's own crc32() computes, which dlsym(RTLD_NEXT) still finds.
#include <dlfcn.h>
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using Crc32Fn = uLong (*)(uLong, const Bytef*, uInt);

Crc32Fn ZlibsOwn() {
  static const Crc32Fn fn = reinterpret_cast<Crc32Fn>(::dlsym(RTLD_NEXT, "crc32"));
  return fn;
}

}  // namespace

TEST_CASE("zlib crc32: the program's crc32 is not zlib's, and computes the same", "[zip][crc32]") {
  const Crc32Fn zlib = ZlibsOwn();
  REQUIRE(zlib != nullptr);
  // The executable's definition is the one the dynamic linker gives every
  // library (it is exported), and it is not zlib's.
  void* global = ::dlsym(RTLD_DEFAULT, "crc32");
  CHECK(global == reinterpret_cast<void*>(&crc32));
  CHECK(global != reinterpret_cast<void*>(zlib));

  std::mt19937 rng(42);
  std::vector<Bytef> data(1 << 20);
  for (auto& b : data) b = static_cast<Bytef>(rng());
  // Lengths around the vector widths and the page size, at odd offsets,
  // chained from zero and from running values.
  for (uInt len : {0u, 1u, 3u, 15u, 16u, 17u, 63u, 64u, 65u, 255u, 4095u, 4096u, 4097u, 65537u,
                   (1u << 20) - 7}) {
    for (uLong start : {0ul, 1ul, 0xffffffffUL, 0x12345678UL}) {
      const Bytef* p = data.data() + (len % 7);
      if (len + (len % 7) > data.size()) p = data.data();
      INFO("len " << len << " start " << start);
      CHECK(crc32(start, p, len) == zlib(start, p, len));
    }
  }
  // Chained pieces equal one pass.
  uLong chained = 0;
  for (std::size_t off = 0; off < data.size(); off += 8191) {
    const uInt n = static_cast<uInt>(std::min<std::size_t>(8191, data.size() - off));
    chained = crc32(chained, data.data() + off, n);
  }
  CHECK(chained == zlib(0, data.data(), static_cast<uInt>(data.size())));
  // zlib's contract for the initial value: a null buffer gives 0.
  CHECK(crc32(0x1234, Z_NULL, 0) == 0);
  CHECK(zlib(0x1234, Z_NULL, 0) == 0);
  CHECK(crc32(0x1234, Z_NULL, 5) == 0);
  // A start value past 32 bits: zlib keeps only the low 32.
  CHECK(crc32(0x1'0000'1234UL, data.data(), 100) == zlib(0x1'0000'1234UL, data.data(), 100));
  // The CRC-32 check value of "123456789".
  const Bytef check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  CHECK(crc32(0, check, 9) == 0xCBF43926UL);
}
