/* carton_pack, carton_hash, carton_verify and carton_info_read: packed
 * cartons, damaged ones and missing ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_testing.h"
#include "capi_tests.h"

void test_pack_and_hash(void) {
  char hash[CARTON_HASH_HEX_SIZE];
  char again[CARTON_HASH_HEX_SIZE];
  char zstd_hash[CARTON_HASH_HEX_SIZE];
  const char* carton = test_path("echo.carton");
  carton_pack_options* options = NULL;
  REQUIRE_OK((carton_status)make_echo_carton(test_path("echo"), carton, hash));
  CHECK(strlen(hash) == 64);
  CHECK_OK(carton_hash(carton, again));
  CHECK_STR(again, hash);

  /* Every option; the manifest hash names the contents, not the bytes. */
  REQUIRE_OK(carton_pack_options_new(&options));
  CHECK_OK(carton_pack_options_set_compression(options, "zstd"));
  CHECK_OK(carton_pack_options_set_level(options, 3));
  CHECK_OK(carton_pack_options_set_threads(options, 2));
  CHECK_OK(carton_pack(test_path("echo"), test_path("zstd.carton"), options, zstd_hash));
  CHECK_STR(zstd_hash, hash);
  CHECK_OK(carton_pack_options_set_compression(options, "deflate"));
  CHECK_OK(carton_pack(test_path("echo"), test_path("deflate.carton"), options, NULL));
  CHECK_OK(carton_pack_options_set_compression(options, "auto"));
  CHECK_OK(carton_pack(test_path("echo"), test_path("auto.carton"), NULL, NULL));
  CHECK_ERR(carton_pack_options_set_compression(options, "lzma"), CARTON_ERR_INVALID_ARGUMENT,
            "compression: must be stored, deflate, zstd or auto, not \"lzma\"");

  /* A folder without carton.toml needs the describing fields. */
  make_dirs(test_path("bare"));
  write_text(test_path("bare/model.onnx"), "not really onnx\n");
  CHECK_ERR(carton_pack(test_path("bare"), test_path("bare.carton"), NULL, hash),
            CARTON_ERR_INVALID_ARGUMENT, NULL);
  CHECK(hash[0] == '\0');
  CHECK_ERR(carton_pack_options_set_runner(options, "noop", "not a version"),
            CARTON_ERR_INVALID_ARGUMENT, "carton_pack_options_set_runner: ");
  CHECK_ERR(carton_pack_options_set_runner(options, "", ">=1"), CARTON_ERR_INVALID_ARGUMENT,
            "runner");
  CHECK_OK(carton_pack_options_set_runner(options, "noop", ">=1"));
  CHECK_OK(carton_pack(test_path("bare"), test_path("bare.carton"), options, hash));
  {
    carton_info* info = NULL;
    const char* s = NULL;
    CHECK_OK(carton_info_read(test_path("bare.carton"), &info));
    CHECK_OK(carton_info_string(info, CARTON_INFO_RUNNER_NAME, &s));
    CHECK_STR(s, "noop");
    CHECK_OK(carton_info_string(info, CARTON_INFO_REQUIRED_FRAMEWORK_VERSION, &s));
    CHECK_STR(s, ">=1");
    CHECK_OK(carton_info_string(info, CARTON_INFO_MANIFEST_HASH, &s));
    CHECK_STR(s, hash);
    carton_info_free(info);
  }
  CHECK_ERR(carton_pack(test_path("missing"), test_path("m.carton"), NULL, NULL),
            CARTON_ERR_NOT_FOUND, "missing");
  CHECK_ERR(carton_pack(test_path("echo"), test_path("no/dir/m.carton"), NULL, NULL),
            CARTON_ERR_NOT_FOUND, NULL);
  carton_pack_options_free(options);
}

/* Flips one byte of the stored weights file inside `carton`. */
static int damage(const char* carton) {
  size_t size = 0, i;
  unsigned char* bytes = read_file(carton, &size);
  const char* needle = "WEIGHTS-0123456789";
  int done = 0;
  for (i = 0; bytes != NULL && i + strlen(needle) <= size && !done; ++i) {
    if (memcmp(bytes + i, needle, strlen(needle)) == 0) {
      bytes[i + 10] ^= 0x20;
      done = 1;
    }
  }
  if (done) write_file(carton, bytes, size);
  free(bytes);
  return done;
}

void test_verify_and_corrupt(void) {
  const char* good = test_path("good.carton");
  const char* bad = test_path("bad.carton");
  carton_verify_report* report = NULL;
  carton_model* model = NULL;
  carton_info* info = NULL;
  char hash[CARTON_HASH_HEX_SIZE];
  int ok = 7;
  size_t count = 9;
  const char* where = NULL;
  const char* message = NULL;

  REQUIRE_OK((carton_status)make_echo_carton(test_path("m"), good, NULL));
  CHECK_OK(carton_verify(good, &report));
  CHECK_OK(carton_verify_report_ok(report, &ok));
  CHECK(ok == 1);
  CHECK_OK(carton_verify_report_problem_count(report, &count));
  CHECK(count == 0);
  CHECK_ERR(carton_verify_report_problem(report, 0, &where, &message), CARTON_ERR_INVALID_ARGUMENT,
            "problem 0 is out of range (there are 0)");
  carton_verify_report_free(report);
  report = NULL;

  REQUIRE_OK((carton_status)make_echo_carton(test_path("m"), bad, NULL));
  CHECK(damage(bad));
  CHECK_OK(carton_verify(bad, &report));
  CHECK_OK(carton_verify_report_ok(report, &ok));
  CHECK(ok == 0);
  CHECK_OK(carton_verify_report_problem_count(report, &count));
  CHECK(count >= 1);
  CHECK_OK(carton_verify_report_problem(report, 0, &where, &message));
  CHECK_STR(where, "model/weights.bin");
  CHECK(message != NULL && strstr(message, "sha256") != NULL);
  CHECK_OK(carton_verify_report_problem(report, 0, NULL, NULL));
  carton_verify_report_free(report);

  /* Loading refuses it, naming the file. */
  CHECK_ERR(carton_load(bad, NULL, &model), CARTON_ERR_CORRUPT, "model/weights.bin");
  CHECK(model == NULL);

  /* Not a zip at all; a truncated carton; a missing one; a directory. */
  write_text(test_path("text.carton"), "hello, not a zip\n");
  CHECK_ERR(carton_hash(test_path("text.carton"), hash), CARTON_ERR_CORRUPT, "text.carton");
  CHECK(hash[0] == '\0');
  CHECK_ERR(carton_info_read(test_path("text.carton"), &info), CARTON_ERR_CORRUPT, "text.carton");
  CHECK_ERR(carton_load(test_path("text.carton"), NULL, &model), CARTON_ERR_CORRUPT, "text.carton");
  /* Verifying it is not an error: the report says what is wrong. */
  CHECK_OK(carton_verify(test_path("text.carton"), &report));
  CHECK_OK(carton_verify_report_ok(report, &ok));
  CHECK(ok == 0);
  carton_verify_report_free(report);
  report = NULL;
  CHECK_ERR(carton_hash(test_path("missing.carton"), hash), CARTON_ERR_NOT_FOUND, "missing.carton");
  CHECK_ERR(carton_info_read(test_path("missing.carton"), &info), CARTON_ERR_NOT_FOUND,
            "missing.carton");
  CHECK_ERR(carton_verify(test_path("missing.carton"), &report), CARTON_ERR_NOT_FOUND,
            "missing.carton");
  CHECK_ERR(carton_load(test_path("missing.carton"), NULL, &model), CARTON_ERR_NOT_FOUND,
            "missing.carton");
  CHECK_ERR(carton_verify(test_path("m"), &report), CARTON_ERR_INVALID_ARGUMENT, "is a directory");
  CHECK_ERR(carton_hash("ftp://example.com/m.carton", hash), CARTON_ERR_INVALID_ARGUMENT, "ftp");
}

void test_info(void) {
  char hash[CARTON_HASH_HEX_SIZE];
  const char* carton = test_path("echo.carton");
  carton_info* info = NULL;
  const char* s = NULL;
  size_t n = 0, rank = 0;
  carton_dtype dtype = CARTON_DTYPE_STRING;
  carton_shape_kind shape = CARTON_SHAPE_ANY;
  carton_dim_kind dim = CARTON_DIM_ANY;
  uint64_t size = 0;

  REQUIRE_OK((carton_status)make_echo_carton(test_path("echo"), carton, hash));
  REQUIRE_OK(carton_info_read(carton, &info));
  CHECK_OK(carton_info_string(info, CARTON_INFO_MODEL_NAME, &s));
  CHECK_STR(s, "capi-echo");
  CHECK_OK(carton_info_string(info, CARTON_INFO_SHORT_DESCRIPTION, &s));
  CHECK_STR(s, "echoes its inputs");
  CHECK_OK(carton_info_string(info, CARTON_INFO_MODEL_DESCRIPTION, &s));
  CHECK_STR(s, NULL);
  CHECK_OK(carton_info_string(info, CARTON_INFO_LICENSE, &s));
  CHECK_STR(s, "MIT");
  CHECK_OK(carton_info_string(info, CARTON_INFO_REPOSITORY, &s));
  CHECK_STR(s, NULL);
  CHECK_OK(carton_info_string(info, CARTON_INFO_HOMEPAGE, &s));
  CHECK_STR(s, NULL);
  CHECK_OK(carton_info_string(info, CARTON_INFO_RUNNER_NAME, &s));
  CHECK_STR(s, "noop");
  CHECK_OK(carton_info_string(info, CARTON_INFO_MANIFEST_HASH, &s));
  CHECK_STR(s, hash);
  CHECK_ERR(carton_info_string(info, (carton_info_field)77, &s), CARTON_ERR_INVALID_ARGUMENT,
            "field 77 is not a carton_info_field");

  CHECK_OK(carton_info_tensor_count(info, CARTON_INPUTS, &n));
  CHECK(n == 2);
  CHECK_OK(carton_info_tensor_name(info, CARTON_INPUTS, 0, &s));
  CHECK_STR(s, "x");
  CHECK_OK(carton_info_tensor_dtype(info, CARTON_INPUTS, 0, &dtype));
  CHECK(dtype == CARTON_DTYPE_FLOAT32);
  CHECK_OK(carton_info_tensor_description(info, CARTON_INPUTS, 0, &s));
  CHECK_STR(s, "the numbers");
  CHECK_OK(carton_info_tensor_description(info, CARTON_INPUTS, 1, &s));
  CHECK_STR(s, NULL);
  /* x: ["batch", 4] */
  CHECK_OK(carton_info_tensor_shape(info, CARTON_INPUTS, 0, &shape, &rank, &s));
  CHECK(shape == CARTON_SHAPE_DIMS && rank == 2 && s == NULL);
  CHECK_OK(carton_info_tensor_dim(info, CARTON_INPUTS, 0, 0, &dim, &size, &s));
  CHECK(dim == CARTON_DIM_SYMBOL && size == 0);
  CHECK_STR(s, "batch");
  CHECK_OK(carton_info_tensor_dim(info, CARTON_INPUTS, 0, 1, &dim, &size, &s));
  CHECK(dim == CARTON_DIM_FIXED && size == 4 && s == NULL);
  CHECK_ERR(carton_info_tensor_dim(info, CARTON_INPUTS, 0, 2, &dim, &size, &s),
            CARTON_ERR_INVALID_ARGUMENT, "dimension 2 is out of range (there are 2)");
  /* labels: "*" */
  CHECK_OK(carton_info_tensor_shape(info, CARTON_INPUTS, 1, &shape, &rank, &s));
  CHECK(shape == CARTON_SHAPE_ANY && rank == 0 && s == NULL);
  CHECK_OK(carton_info_tensor_dtype(info, CARTON_INPUTS, 1, &dtype));
  CHECK(dtype == CARTON_DTYPE_STRING);
  CHECK_ERR(carton_info_tensor_dim(info, CARTON_INPUTS, 1, 0, &dim, NULL, NULL),
            CARTON_ERR_INVALID_ARGUMENT, "\"labels\" has no list of dimensions");
  /* outputs: x ["batch", "*"], labels "names" */
  CHECK_OK(carton_info_tensor_count(info, CARTON_OUTPUTS, &n));
  CHECK(n == 2);
  CHECK_OK(carton_info_tensor_dim(info, CARTON_OUTPUTS, 0, 1, &dim, NULL, NULL));
  CHECK(dim == CARTON_DIM_ANY);
  CHECK_OK(carton_info_tensor_shape(info, CARTON_OUTPUTS, 1, &shape, NULL, &s));
  CHECK(shape == CARTON_SHAPE_SYMBOL);
  CHECK_STR(s, "names");
  CHECK_ERR(carton_info_tensor_name(info, CARTON_OUTPUTS, 2, &s), CARTON_ERR_INVALID_ARGUMENT,
            "output 2 is out of range (there are 2)");
  CHECK_ERR(carton_info_tensor_count(info, (carton_io)5, &n), CARTON_ERR_INVALID_ARGUMENT,
            "io 5 is not CARTON_INPUTS or CARTON_OUTPUTS");

  CHECK_OK(carton_info_self_test_count(info, &n));
  CHECK(n == 2);
  CHECK_OK(carton_info_self_test_name(info, 0, &s));
  CHECK_STR(s, "echo");
  CHECK_OK(carton_info_self_test_name(info, 1, &s));
  CHECK_STR(s, "self_test[1]");
  CHECK_ERR(carton_info_self_test_name(info, 2, &s), CARTON_ERR_INVALID_ARGUMENT,
            "self-test 2 is out of range");
  carton_info_free(info);
}
