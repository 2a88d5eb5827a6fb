/* Every call with a NULL handle or argument: CARTON_ERR_INVALID_ARGUMENT
 * naming the argument, outputs reset, never a crash. */
#include <string.h>

#include "capi_testing.h"
#include "capi_tests.h"

#define CHECK_NULL(call, what) CHECK_ERR(call, CARTON_ERR_INVALID_ARGUMENT, what " is NULL")

static void null_tensors(void) {
  carton_tensors* t = NULL;
  const int8_t v = 1;
  const uint64_t one[1] = {1};
  const char* s = "x";
  const void* data = &v;
  const uint64_t* shape = one;
  size_t n = 5, rank = 5, size = 5;
  carton_dtype dtype = CARTON_DTYPE_INT8;
  CHECK_NULL(carton_tensors_new(NULL), "carton_tensors_new: out");
  CHECK_NULL(carton_tensors_add(NULL, "x", CARTON_DTYPE_INT8, &v, 1, one, NULL), "tensors");
  CHECK_NULL(carton_tensors_add_strings(NULL, "x", &s, 1, one), "tensors");
  CHECK_NULL(carton_tensors_count(NULL, &n), "tensors");
  CHECK(n == 0);
  CHECK_NULL(carton_tensors_find(NULL, "x", &n), "tensors");
  CHECK_NULL(carton_tensors_name(NULL, 0, &s), "tensors");
  CHECK(s == NULL);
  CHECK_NULL(carton_tensors_dtype(NULL, 0, &dtype), "tensors");
  CHECK_NULL(carton_tensors_shape(NULL, 0, &rank, &shape), "tensors");
  CHECK(rank == 0 && shape == NULL);
  CHECK_NULL(carton_tensors_data(NULL, 0, &data, &size), "tensors");
  CHECK(data == NULL && size == 0);
  CHECK_NULL(carton_tensors_string(NULL, 0, 0, &s, &size), "tensors");
  REQUIRE_OK(carton_tensors_new(&t));
  CHECK_OK(carton_tensors_add(t, "x", CARTON_DTYPE_INT8, &v, 1, one, NULL));
  CHECK_NULL(carton_tensors_add(t, NULL, CARTON_DTYPE_INT8, &v, 1, one, NULL), "name");
  CHECK_NULL(carton_tensors_add_strings(t, NULL, &s, 1, one), "name");
  CHECK_NULL(carton_tensors_count(t, NULL), "count");
  CHECK_NULL(carton_tensors_find(t, NULL, &n), "name");
  CHECK_NULL(carton_tensors_find(t, "x", NULL), "index");
  CHECK_NULL(carton_tensors_name(t, 0, NULL), "name");
  CHECK_NULL(carton_tensors_dtype(t, 0, NULL), "dtype");
  CHECK_NULL(carton_tensors_shape(t, 0, NULL, &shape), "rank");
  CHECK_NULL(carton_tensors_shape(t, 0, &rank, NULL), "shape");
  CHECK_NULL(carton_tensors_data(t, 0, NULL, &size), "data");
  CHECK_NULL(carton_tensors_data(t, 0, &data, NULL), "size");
  CHECK_NULL(carton_tensors_string(t, 0, 0, NULL, &size), "string");
  CHECK_NULL(carton_safetensors_read(NULL, t), "path");
  CHECK_NULL(carton_safetensors_read("x.safetensors", NULL), "into");
  CHECK_NULL(carton_safetensors_read_arg(NULL, t), "spec");
  CHECK_NULL(carton_safetensors_read_arg("x=y", NULL), "into");
  CHECK_NULL(carton_safetensors_write(NULL, t), "path");
  CHECK_NULL(carton_safetensors_write("x.safetensors", NULL), "tensors");
  carton_tensors_free(t);
}

static void null_model(void) {
  carton_model* model = (carton_model*)&model; /* must be reset */
  carton_load_options* options = NULL;
  carton_tensors* out = (carton_tensors*)&out;
  carton_info* info = (carton_info*)&info;
  carton_self_test_report* report = (carton_self_test_report*)&report;
  CHECK_NULL(carton_load_options_new(NULL), "out");
  CHECK_NULL(carton_load_options_set_device(NULL, "cpu"), "options");
  CHECK_NULL(carton_load_options_set_runner_name(NULL, "noop"), "options");
  CHECK_NULL(carton_load_options_set_framework_version(NULL, ">=1"), "options");
  CHECK_NULL(carton_load_options_add_runner_opt(NULL, "a=b"), "options");
  CHECK_NULL(carton_load_options_set_cache_dir(NULL, "/tmp"), "options");
  REQUIRE_OK(carton_load_options_new(&options));
  CHECK_NULL(carton_load_options_add_runner_opt(options, NULL), "key_value");
  CHECK_NULL(carton_load(NULL, options, &model), "carton_load: location");
  CHECK(model == NULL);
  CHECK_NULL(carton_load("m.carton", options, NULL), "carton_load: out");
  CHECK_NULL(carton_model_close(NULL), "model");
  CHECK_NULL(carton_infer(NULL, NULL, &out), "model");
  CHECK(out == NULL);
  CHECK_NULL(carton_infer(NULL, NULL, NULL), "outputs");
  CHECK_NULL(carton_model_info(NULL, &info), "model");
  CHECK(info == NULL);
  CHECK_NULL(carton_model_info(NULL, NULL), "out");
  CHECK_NULL(carton_self_test(NULL, 0, 0, &report), "model");
  CHECK(report == NULL);
  CHECK_NULL(carton_self_test(NULL, 0, 0, NULL), "out");
  carton_load_options_free(options);
  carton_model_free(NULL);
  carton_load_options_free(NULL);
}

static void null_reports(void) {
  const char* s = "x";
  const char* m = "x";
  size_t n = 3;
  int flag = 3;
  carton_dtype dtype = CARTON_DTYPE_INT8;
  carton_shape_kind shape_kind = CARTON_SHAPE_DIMS;
  carton_dim_kind dim_kind = CARTON_DIM_FIXED;
  uint64_t dim = 3;
  char hash[CARTON_HASH_HEX_SIZE] = "x";
  carton_info* info = (carton_info*)&info;
  carton_verify_report* verify = (carton_verify_report*)&verify;
  CHECK_NULL(carton_info_read(NULL, &info), "location");
  CHECK(info == NULL);
  CHECK_NULL(carton_info_read("m.carton", NULL), "out");
  CHECK_NULL(carton_info_string(NULL, CARTON_INFO_LICENSE, &s), "info");
  CHECK(s == NULL);
  CHECK_NULL(carton_info_tensor_count(NULL, CARTON_INPUTS, &n), "info");
  CHECK_NULL(carton_info_tensor_name(NULL, CARTON_INPUTS, 0, &s), "info");
  CHECK_NULL(carton_info_tensor_dtype(NULL, CARTON_INPUTS, 0, &dtype), "info");
  CHECK_NULL(carton_info_tensor_description(NULL, CARTON_INPUTS, 0, &s), "info");
  CHECK_NULL(carton_info_tensor_shape(NULL, CARTON_INPUTS, 0, &shape_kind, &n, &s), "info");
  CHECK_NULL(carton_info_tensor_dim(NULL, CARTON_INPUTS, 0, 0, &dim_kind, &dim, &s), "info");
  CHECK_NULL(carton_info_self_test_count(NULL, &n), "info");
  CHECK_NULL(carton_info_self_test_name(NULL, 0, &s), "info");
  CHECK_NULL(carton_self_test_report_passed(NULL, &flag), "report");
  CHECK(flag == 0);
  CHECK_NULL(carton_self_test_report_count(NULL, &n), "report");
  CHECK(n == 0);
  CHECK_NULL(carton_self_test_report_test(NULL, 0, &s, &flag, &m), "report");
  CHECK(s == NULL && m == NULL);
  CHECK_NULL(carton_verify(NULL, &verify), "location");
  CHECK(verify == NULL);
  CHECK_NULL(carton_verify("m.carton", NULL), "out");
  CHECK_NULL(carton_verify_report_ok(NULL, &flag), "report");
  CHECK_NULL(carton_verify_report_problem_count(NULL, &n), "report");
  CHECK_NULL(carton_verify_report_problem(NULL, 0, &s, &m), "report");
  CHECK_NULL(carton_hash(NULL, hash), "location");
  CHECK(hash[0] == '\0');
  CHECK_NULL(carton_hash("m.carton", NULL), "manifest_hash");
  carton_info_free(NULL);
  carton_self_test_report_free(NULL);
  carton_verify_report_free(NULL);
}

static void null_pack(void) {
  carton_pack_options* options = NULL;
  char hash[CARTON_HASH_HEX_SIZE] = "x";
  CHECK_NULL(carton_pack_options_new(NULL), "out");
  CHECK_NULL(carton_pack_options_set_compression(NULL, "zstd"), "options");
  CHECK_NULL(carton_pack_options_set_level(NULL, 1), "options");
  CHECK_NULL(carton_pack_options_set_threads(NULL, 1), "options");
  CHECK_NULL(carton_pack_options_set_runner(NULL, "noop", ">=1"), "options");
  REQUIRE_OK(carton_pack_options_new(&options));
  CHECK_NULL(carton_pack_options_set_compression(options, NULL), "compression");
  CHECK_NULL(carton_pack_options_set_runner(options, NULL, ">=1"), "runner_name");
  CHECK_NULL(carton_pack_options_set_runner(options, "noop", NULL), "required_framework_version");
  CHECK_NULL(carton_pack(NULL, "out.carton", options, hash), "path");
  CHECK(hash[0] == '\0');
  CHECK_NULL(carton_pack("dir", NULL, options, NULL), "output");
  carton_pack_options_free(options);
  carton_pack_options_free(NULL);
}

void test_null_arguments(void) {
  null_tensors();
  null_model();
  null_reports();
  null_pack();
}
