/* carton_tensors, dtypes, errors and safetensors files: no model needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_testing.h"
#include "capi_tests.h"

void test_versions_and_names(void) {
  carton_dtype d = CARTON_DTYPE_STRING;
  CHECK(carton_abi_version() == CARTON_C_ABI_VERSION);
  CHECK_STR(carton_status_name(CARTON_OK), "ok");
  CHECK_STR(carton_status_name(CARTON_ERR_INVALID_ARGUMENT), "invalid argument");
  CHECK_STR(carton_status_name(CARTON_ERR_NOT_FOUND), "not found");
  CHECK_STR(carton_status_name(CARTON_ERR_CORRUPT), "corrupt");
  CHECK_STR(carton_status_name(CARTON_ERR_UNSUPPORTED), "unsupported");
  CHECK_STR(carton_status_name(CARTON_ERR_IO), "io error");
  CHECK_STR(carton_status_name(CARTON_ERR_NETWORK), "network error");
  CHECK_STR(carton_status_name(CARTON_ERR_INTERNAL), "internal");
  CHECK_STR(carton_status_name((carton_status)42), "unknown");
  CHECK_STR(carton_status_name((carton_status)-1), "unknown");
  CHECK_STR(carton_dtype_name(CARTON_DTYPE_FLOAT32), "float32");
  CHECK_STR(carton_dtype_name(CARTON_DTYPE_STRING), "string");
  CHECK_STR(carton_dtype_name(CARTON_DTYPE_UINT64), "uint64");
  CHECK_STR(carton_dtype_name((carton_dtype)11), NULL);
  CHECK_STR(carton_dtype_name((carton_dtype)-3), NULL);
  CHECK(carton_dtype_size(CARTON_DTYPE_INT16) == 2);
  CHECK(carton_dtype_size(CARTON_DTYPE_FLOAT64) == 8);
  CHECK(carton_dtype_size(CARTON_DTYPE_STRING) == 0);
  CHECK(carton_dtype_size((carton_dtype)99) == 0);
  CHECK_OK(carton_dtype_parse("int8", &d));
  CHECK(d == CARTON_DTYPE_INT8);
  CHECK_STR(carton_last_error(), "");
  CHECK_ERR(carton_dtype_parse("float16", &d), CARTON_ERR_INVALID_ARGUMENT,
            "\"float16\" is not a dtype (float32, float64, string, int8");
  CHECK_ERR(carton_dtype_parse(NULL, &d), CARTON_ERR_INVALID_ARGUMENT,
            "carton_dtype_parse: name is NULL");
  CHECK_ERR(carton_dtype_parse("int8", NULL), CARTON_ERR_INVALID_ARGUMENT, "out is NULL");
  /* The last error stays until the next call that returns a status, and
   * the calls that cannot fail leave it alone. */
  carton_tensors_free(NULL);
  CHECK(carton_dtype_size(CARTON_DTYPE_INT8) == 1);
  CHECK(strstr(carton_last_error(), "out is NULL") != NULL);
  CHECK_OK(carton_dtype_parse("int8", &d));
  CHECK_STR(carton_last_error(), "");
}

void test_tensor_map(void) {
  carton_tensors* t = NULL;
  const int32_t numbers[6] = {1, 2, 3, 4, 5, 6};
  const uint64_t shape[2] = {2, 3};
  const char* strings[3] = {"a", "b\xc3\xa9", ""};
  const uint64_t string_shape[1] = {3};
  const double scalar = 2.5;
  size_t count = 9, index = 9, rank = 9, size = 9, length = 9;
  const char* name = NULL;
  const char* s = NULL;
  const void* data = NULL;
  const uint64_t* dims = NULL;
  carton_dtype dtype = CARTON_DTYPE_STRING;

  REQUIRE_OK(carton_tensors_new(&t));
  CHECK_OK(carton_tensors_count(t, &count));
  CHECK(count == 0);
  CHECK_OK(carton_tensors_add(t, "n", CARTON_DTYPE_INT32, numbers, 2, shape, NULL));
  CHECK_OK(carton_tensors_add_strings(t, "s", strings, 1, string_shape));
  CHECK_OK(carton_tensors_add(t, "scalar", CARTON_DTYPE_FLOAT64, &scalar, 0, NULL, NULL));
  CHECK_OK(
      carton_tensors_add(t, "empty", CARTON_DTYPE_UINT8, NULL, 1, (const uint64_t[]){0}, NULL));
  CHECK_OK(carton_tensors_count(t, &count));
  CHECK(count == 4);

  /* A contiguous tensor borrows the caller's buffer: no copy. */
  CHECK_OK(carton_tensors_data(t, 0, &data, &size));
  CHECK(data == (const void*)numbers);
  CHECK(size == sizeof numbers);
  CHECK_OK(carton_tensors_name(t, 0, &name));
  CHECK_STR(name, "n");
  CHECK_OK(carton_tensors_dtype(t, 0, &dtype));
  CHECK(dtype == CARTON_DTYPE_INT32);
  CHECK_OK(carton_tensors_shape(t, 0, &rank, &dims));
  CHECK(rank == 2 && dims != NULL && dims[0] == 2 && dims[1] == 3);

  /* Strings are copied. */
  CHECK_OK(carton_tensors_find(t, "s", &index));
  CHECK(index == 1);
  CHECK_OK(carton_tensors_string(t, 1, 1, &s, &length));
  CHECK_STR(s, "b\xc3\xa9");
  CHECK(s != strings[1] && length == 3);
  CHECK_OK(carton_tensors_string(t, 1, 2, &s, NULL));
  CHECK_STR(s, "");
  CHECK_OK(carton_tensors_dtype(t, 1, &dtype));
  CHECK(dtype == CARTON_DTYPE_STRING);

  /* A scalar has rank 0 and no shape array; an empty tensor no bytes. */
  CHECK_OK(carton_tensors_shape(t, 2, &rank, &dims));
  CHECK(rank == 0 && dims == NULL);
  CHECK_OK(carton_tensors_data(t, 2, &data, &size));
  CHECK(size == 8 && *(const double*)data == 2.5);
  CHECK_OK(carton_tensors_data(t, 3, &data, &size));
  CHECK(size == 0 && data == NULL);

  /* Wrong uses. */
  CHECK_ERR(carton_tensors_find(t, "nope", &index), CARTON_ERR_NOT_FOUND,
            "no tensor named \"nope\" (the map has: n, s, scalar, empty)");
  CHECK_ERR(carton_tensors_name(t, 4, &name), CARTON_ERR_INVALID_ARGUMENT,
            "tensor 4 is out of range (there are 4)");
  CHECK(name == NULL);
  CHECK_ERR(carton_tensors_data(t, 1, &data, &size), CARTON_ERR_INVALID_ARGUMENT,
            "tensor \"s\" is a string tensor");
  CHECK(data == NULL && size == 0);
  CHECK_ERR(carton_tensors_string(t, 0, 0, &s, &length), CARTON_ERR_INVALID_ARGUMENT,
            "tensor \"n\" is int32, not a string tensor");
  CHECK_ERR(carton_tensors_string(t, 1, 3, &s, &length), CARTON_ERR_INVALID_ARGUMENT,
            "element of tensor \"s\" 3 is out of range (there are 3)");
  CHECK_ERR(carton_tensors_add(t, "n", CARTON_DTYPE_INT32, numbers, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "tensor \"n\" is already in the map");
  CHECK_ERR(carton_tensors_add(t, "", CARTON_DTYPE_INT32, numbers, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "the tensor name is empty");
  CHECK_ERR(carton_tensors_add(t, "bad\xff", CARTON_DTYPE_INT32, numbers, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "the tensor name is not valid UTF-8");
  CHECK_ERR(carton_tensors_add(t, "str", CARTON_DTYPE_STRING, numbers, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "added with carton_tensors_add_strings");
  CHECK_ERR(carton_tensors_add(t, "odd", (carton_dtype)99, numbers, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "dtype 99 is not a carton_dtype");
  CHECK_ERR(carton_tensors_add(t, "odd", (carton_dtype)-1, numbers, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "dtype -1 is not a carton_dtype");
  CHECK_ERR(carton_tensors_add(t, "nodata", CARTON_DTYPE_INT32, NULL, 2, shape, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "data (of a tensor with elements) is NULL");
  CHECK_ERR(carton_tensors_add(t, "noshape", CARTON_DTYPE_INT32, numbers, 2, NULL, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "shape (with a rank above 0) is NULL");
  {
    const uint64_t huge[2] = {UINT64_C(1) << 40, UINT64_C(1) << 40};
    CHECK_ERR(carton_tensors_add(t, "huge", CARTON_DTYPE_INT32, numbers, 2, huge, NULL),
              CARTON_ERR_INVALID_ARGUMENT, "tensor \"huge\" (int32 [1099511627776, ");
    CHECK_ERR(carton_tensors_add_strings(t, "huge", strings, 2, huge), CARTON_ERR_INVALID_ARGUMENT,
              "the element count overflows");
  }
  {
    const char* with_null[2] = {"x", NULL};
    const char* bad_utf8[2] = {"ok", "ab\xc0\xaf"};
    const uint64_t two[1] = {2};
    CHECK_ERR(carton_tensors_add_strings(t, "w", with_null, 1, two), CARTON_ERR_INVALID_ARGUMENT,
              "tensor \"w\" (string [2]): string 1 is NULL");
    CHECK_ERR(carton_tensors_add_strings(t, "w", bad_utf8, 1, two), CARTON_ERR_INVALID_ARGUMENT,
              "string 1 is not valid UTF-8 (byte 2)");
    CHECK_ERR(carton_tensors_add_strings(t, "w", NULL, 1, two), CARTON_ERR_INVALID_ARGUMENT,
              "strings is NULL");
    CHECK_OK(carton_tensors_add_strings(t, "none", NULL, 1, (const uint64_t[]){0}));
  }
  /* A failed add leaves the map as it was. */
  CHECK_OK(carton_tensors_count(t, &count));
  CHECK(count == 5);
  carton_tensors_free(t);
}

void test_strides(void) {
  carton_tensors* t = NULL;
  /* A 3x2 int16 matrix m; its transpose is 2x3 with strides {1, 2}. */
  int16_t m[6] = {1, 2, 3, 4, 5, 6};
  const uint64_t shape_t[2] = {2, 3};
  const int64_t strides_t[2] = {1, 2};
  const int16_t want_t[6] = {1, 3, 5, 2, 4, 6};
  /* Reversed, every other element: {6, 4, 2}. */
  const uint64_t shape_r[1] = {3};
  const int64_t strides_r[1] = {-2};
  const int16_t want_r[3] = {6, 4, 2};
  /* Broadcast: one row repeated (stride 0). */
  const uint64_t shape_b[2] = {3, 2};
  const int64_t strides_b[2] = {0, 1};
  const int16_t want_b[6] = {1, 2, 1, 2, 1, 2};
  /* C order spelled out, and size-1 dimensions with odd strides: borrowed. */
  const uint64_t shape_c[3] = {3, 1, 2};
  const int64_t strides_c[3] = {2, 99, 1};
  const void* data = NULL;
  size_t size = 0;

  REQUIRE_OK(carton_tensors_new(&t));
  CHECK_OK(carton_tensors_add(t, "t", CARTON_DTYPE_INT16, m, 2, shape_t, strides_t));
  CHECK_OK(carton_tensors_add(t, "r", CARTON_DTYPE_INT16, m + 5, 1, shape_r, strides_r));
  CHECK_OK(carton_tensors_add(t, "b", CARTON_DTYPE_INT16, m, 2, shape_b, strides_b));
  CHECK_OK(carton_tensors_add(t, "c", CARTON_DTYPE_INT16, m, 3, shape_c, strides_c));
  /* Gathered tensors own their bytes: changing the source changes nothing. */
  m[0] = 100;
  CHECK_OK(carton_tensors_data(t, 0, &data, &size));
  CHECK(size == sizeof want_t && memcmp(data, want_t, size) == 0 && data != (const void*)m);
  CHECK_OK(carton_tensors_data(t, 1, &data, &size));
  CHECK(size == sizeof want_r && memcmp(data, want_r, size) == 0);
  CHECK_OK(carton_tensors_data(t, 2, &data, &size));
  CHECK(size == sizeof want_b && memcmp(data, want_b, size) == 0);
  CHECK_OK(carton_tensors_data(t, 3, &data, &size));
  CHECK(data == (const void*)m && size == sizeof m);
  {
    const uint64_t big[2] = {2, 2};
    const int64_t far[2] = {INT64_MAX / 2, 1};
    CHECK_ERR(carton_tensors_add(t, "far", CARTON_DTYPE_INT16, m, 2, big, far),
              CARTON_ERR_INVALID_ARGUMENT, "strides address offsets that overflow");
  }
  carton_tensors_free(t);
}

/* One tensor of every dtype, written and read back. */
void test_safetensors_files(void) {
  carton_tensors* t = NULL;
  carton_tensors* back = NULL;
  const float f32[2] = {1.5f, -0.25f};
  const double f64[2] = {1e300, -2.0};
  const int8_t i8[2] = {-128, 127};
  const int16_t i16[2] = {-32768, 32767};
  const int32_t i32[2] = {INT32_MIN, INT32_MAX};
  const int64_t i64[2] = {INT64_MIN, INT64_MAX};
  const uint8_t u8[2] = {0, 255};
  const uint16_t u16[2] = {0, 65535};
  const uint32_t u32[2] = {0, UINT32_MAX};
  const uint64_t u64[2] = {0, UINT64_MAX};
  const void* buffers[] = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};
  const carton_dtype types[] = {CARTON_DTYPE_FLOAT32, CARTON_DTYPE_FLOAT64, CARTON_DTYPE_INT8,
                                CARTON_DTYPE_INT16,   CARTON_DTYPE_INT32,   CARTON_DTYPE_INT64,
                                CARTON_DTYPE_UINT8,   CARTON_DTYPE_UINT16,  CARTON_DTYPE_UINT32,
                                CARTON_DTYPE_UINT64};
  const char* strings[2] = {"one", "tw\xc3\xb6"};
  const uint64_t two[1] = {2};
  const char* file = test_path("all.safetensors");
  size_t i, count = 0, index = 0;

  REQUIRE_OK(carton_tensors_new(&t));
  for (i = 0; i < 10; ++i) {
    CHECK_OK(
        carton_tensors_add(t, carton_dtype_name(types[i]), types[i], buffers[i], 1, two, NULL));
  }
  CHECK_OK(carton_tensors_add_strings(t, "string", strings, 1, two));
  CHECK_OK(carton_safetensors_write(file, t));
  REQUIRE_OK(carton_tensors_new(&back));
  CHECK_OK(carton_safetensors_read(file, back));
  CHECK_OK(carton_tensors_count(back, &count));
  CHECK(count == 11);
  for (i = 0; i < 10; ++i) {
    const void* data = NULL;
    size_t size = 0;
    carton_dtype dtype = CARTON_DTYPE_STRING;
    CHECK_OK(carton_tensors_find(back, carton_dtype_name(types[i]), &index));
    CHECK_OK(carton_tensors_dtype(back, index, &dtype));
    CHECK(dtype == types[i]);
    CHECK_OK(carton_tensors_data(back, index, &data, &size));
    CHECK(size == 2 * carton_dtype_size(types[i]) && memcmp(data, buffers[i], size) == 0);
  }
  {
    const char* s = NULL;
    CHECK_OK(carton_tensors_find(back, "string", &index));
    CHECK_OK(carton_tensors_string(back, index, 1, &s, NULL));
    CHECK_STR(s, "tw\xc3\xb6");
  }
  /* Reading the file again into the same map: every name is taken, and
   * the map stays as it was. */
  CHECK_ERR(carton_safetensors_read(file, back), CARTON_ERR_INVALID_ARGUMENT,
            "is already in the map");
  CHECK_OK(carton_tensors_count(back, &count));
  CHECK(count == 11);
  carton_tensors_free(back);
  carton_tensors_free(t);
}

void test_safetensors_args_and_errors(void) {
  carton_tensors* t = NULL;
  carton_tensors* one = NULL;
  const int64_t v[3] = {7, 8, 9};
  const uint64_t three[1] = {3};
  char spec[4200];
  const char* multi = test_path("multi.safetensors");
  const char* single = test_path("single.safetensors");
  size_t count = 0, index = 0;

  REQUIRE_OK(carton_tensors_new(&t));
  REQUIRE_OK(carton_tensors_new(&one));
  CHECK_OK(carton_tensors_add(t, "a", CARTON_DTYPE_INT64, v, 1, three, NULL));
  CHECK_OK(carton_tensors_add(t, "b", CARTON_DTYPE_INT64, v + 1, 1, (const uint64_t[]){2}, NULL));
  CHECK_OK(carton_safetensors_write(multi, t));
  CHECK_OK(carton_tensors_add(one, "only", CARTON_DTYPE_INT64, v, 1, three, NULL));
  CHECK_OK(carton_safetensors_write(single, one));
  carton_tensors_free(one);
  one = NULL;
  REQUIRE_OK(carton_tensors_new(&one));
  /* NAME=FILE:TENSOR, NAME=FILE (its tensor NAME, else its only one). */
  snprintf(spec, sizeof spec, "x=%s:b", multi);
  CHECK_OK(carton_safetensors_read_arg(spec, one));
  snprintf(spec, sizeof spec, "a=%s", multi);
  CHECK_OK(carton_safetensors_read_arg(spec, one));
  snprintf(spec, sizeof spec, "y=%s", single);
  CHECK_OK(carton_safetensors_read_arg(spec, one));
  CHECK_OK(carton_tensors_count(one, &count));
  CHECK(count == 3);
  CHECK_OK(carton_tensors_find(one, "x", &index));
  CHECK(index == 0);
  {
    const void* data = NULL;
    size_t size = 0;
    CHECK_OK(carton_tensors_data(one, 0, &data, &size));
    CHECK(size == 16 && ((const int64_t*)data)[0] == 8);
  }
  snprintf(spec, sizeof spec, "z=%s:nope", multi);
  CHECK_ERR(carton_safetensors_read_arg(spec, one), CARTON_ERR_NOT_FOUND,
            "no tensor named \"nope\" (it has: a, b)");
  CHECK_ERR(carton_safetensors_read_arg("no-equals-sign", one), CARTON_ERR_INVALID_ARGUMENT,
            "expected NAME=FILE.safetensors[:TENSOR]");
  snprintf(spec, sizeof spec, "x=%s:a", multi);
  CHECK_ERR(carton_safetensors_read_arg(spec, one), CARTON_ERR_INVALID_ARGUMENT,
            "tensor \"x\" is already in the map");
  CHECK_ERR(carton_safetensors_read(test_path("missing.safetensors"), one), CARTON_ERR_NOT_FOUND,
            "missing.safetensors");
  /* A damaged file: a header length past the end. */
  write_file(test_path("bad.safetensors"), "\xff\xff\xff\x7f\0\0\0\0{}", 10);
  CHECK_ERR(carton_safetensors_read(test_path("bad.safetensors"), one), CARTON_ERR_CORRUPT,
            "bad.safetensors");
  CHECK_ERR(carton_safetensors_write(test_path("no/such/dir/out.safetensors"), one), CARTON_ERR_IO,
            "no/such/dir/out.safetensors");
  CHECK_OK(carton_tensors_count(one, &count));
  CHECK(count == 3);
  carton_tensors_free(one);
  carton_tensors_free(t);
}

/* Running out of memory is an error with a clear message, not an abort:
 * a broadcast tensor of 2^40 elements is gathered into 4 TiB. Skipped
 * where a failed allocation cannot be seen: under ASan (which reports it
 * and exits) and where the kernel grants any allocation (overcommit 1). */
void test_out_of_memory(void) {
  carton_tensors* t = NULL;
  const int32_t value = 5;
  const uint64_t shape[2] = {UINT64_C(1) << 20, UINT64_C(1) << 20};
  const int64_t strides[2] = {0, 0};
  int mode = -1;
  FILE* f = fopen("/proc/sys/vm/overcommit_memory", "r");
  if (f != NULL) {
    if (fscanf(f, "%d", &mode) != 1) mode = -1;
    fclose(f);
  }
#ifdef CARTON_TEST_SANITIZED
  mode = -1;
#endif
  if (mode != 0 && mode != 2) {
    skip_test("a failed allocation cannot be observed here");
    return;
  }
  REQUIRE_OK(carton_tensors_new(&t));
  CHECK_ERR(carton_tensors_add(t, "huge", CARTON_DTYPE_INT32, &value, 2, shape, strides),
            CARTON_ERR_INTERNAL, "carton_tensors_add: out of memory");
  carton_tensors_free(t);
}
