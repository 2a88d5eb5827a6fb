// zlib's crc32(), answered by ISA-L for the whole program that links this
// file (the `carton` CLI does; the libraries do not).
//
// libzip computes the CRC-32 of every stored byte it writes with zlib's
// crc32() (zip_source_crc), and has no hook to pass a CRC in: on a 1 GiB
// stored file that is about a quarter of a second of CPU at zlib's 4.3 GB/s
// here, against ISA-L's 29-41 GB/s (docs/BENCHMARKS.md, "CRC-32 for
// libzip"). A definition of crc32 in the executable takes precedence over
// zlib's for every shared library in the process (ELF symbol
// interposition), so libzip, and zlib itself (gzip streams), get this one.
// It computes exactly what zlib's does, with zlib's contract: the running
// value goes in and out uninverted, crc32(x, NULL, 0) is 0, and any length
// a uInt holds. tests/zip/zlib_crc32_test.cc compares it with zlib's own
// (found with dlsym(RTLD_NEXT)).
#include <isa-l/crc.h>
#include <zlib.h>

extern "C" uLong crc32(uLong crc, const Bytef* buf, uInt len) {
  if (buf == Z_NULL) return 0;
  return crc32_gzip_refl(static_cast<unsigned int>(crc), buf, len);
}
