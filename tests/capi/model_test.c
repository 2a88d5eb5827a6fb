/* Loading models and running them through the noop runner, which returns
 * its inputs: load options, inference, input checks, every dtype, string
 * tensors, self-tests, threads. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capi_testing.h"
#include "capi_tests.h"

static carton_model* load_echo(void) {
  carton_model* model = NULL;
  if (make_echo_carton(test_path("echo"), test_path("echo.carton"), NULL) != 0) return NULL;
  CHECK_OK(carton_load(test_path("echo.carton"), NULL, &model));
  return model;
}

/* x: float32 [2, 4]; labels: string [3]. */
static carton_tensors* echo_inputs(const float* x) {
  static const char* labels[3] = {"a", "\xe2\x82\xac", "long label"};
  const uint64_t x_shape[2] = {2, 4};
  const uint64_t label_shape[1] = {3};
  carton_tensors* t = NULL;
  if (carton_tensors_new(&t) != CARTON_OK) return NULL;
  CHECK_OK(carton_tensors_add(t, "x", CARTON_DTYPE_FLOAT32, x, 2, x_shape, NULL));
  CHECK_OK(carton_tensors_add_strings(t, "labels", labels, 1, label_shape));
  return t;
}

static void check_echo_outputs(const carton_tensors* out, const float* x) {
  size_t count = 0, index = 0, rank = 0, size = 0, length = 0;
  const uint64_t* shape = NULL;
  const void* data = NULL;
  const char* s = NULL;
  carton_dtype dtype = CARTON_DTYPE_INT8;
  CHECK_OK(carton_tensors_count(out, &count));
  CHECK(count == 2);
  CHECK_OK(carton_tensors_find(out, "x", &index));
  CHECK_OK(carton_tensors_dtype(out, index, &dtype));
  CHECK(dtype == CARTON_DTYPE_FLOAT32);
  CHECK_OK(carton_tensors_shape(out, index, &rank, &shape));
  CHECK(rank == 2 && shape[0] == 2 && shape[1] == 4);
  CHECK_OK(carton_tensors_data(out, index, &data, &size));
  CHECK(size == 8 * sizeof(float) && memcmp(data, x, size) == 0);
  CHECK(data != (const void*)x);
  CHECK_OK(carton_tensors_find(out, "labels", &index));
  CHECK_OK(carton_tensors_string(out, index, 1, &s, &length));
  CHECK_STR(s, "\xe2\x82\xac");
  CHECK(length == 3);
  CHECK_OK(carton_tensors_string(out, index, 2, &s, NULL));
  CHECK_STR(s, "long label");
}

void test_infer(void) {
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8.5f};
  carton_model* model = load_echo();
  carton_tensors* in = NULL;
  carton_tensors* out = NULL;
  carton_info* info = NULL;
  const char* s = NULL;
  if (model == NULL) return;
  in = echo_inputs(x);
  CHECK_OK(carton_infer(model, in, &out));
  check_echo_outputs(out, x);
  carton_tensors_free(out);
  out = NULL;
  /* Again, and the model's info. */
  CHECK_OK(carton_infer(model, in, &out));
  check_echo_outputs(out, x);
  CHECK_OK(carton_model_info(model, &info));
  CHECK_OK(carton_info_string(info, CARTON_INFO_MODEL_NAME, &s));
  CHECK_STR(s, "capi-echo");
  CHECK_OK(carton_info_string(info, CARTON_INFO_MANIFEST_HASH, &s));
  CHECK(s != NULL && strlen(s) == 64);
  carton_info_free(info);
  /* Outputs outlive the model: they keep the runner's memory mapped. */
  carton_model_free(model);
  check_echo_outputs(out, x);
  carton_tensors_free(out);
  carton_tensors_free(in);
}

void test_wrong_inputs(void) {
  const float x[8] = {0};
  const int32_t xi[8] = {0};
  const uint64_t x_shape[2] = {2, 4};
  const uint64_t wide[2] = {2, 5};
  const char* one[1] = {"a"};
  const uint64_t one_shape[1] = {1};
  carton_model* model = load_echo();
  carton_tensors* in = NULL;
  carton_tensors* out = (carton_tensors*)&out;
  if (model == NULL) return;
  /* A wrong dtype: the carton, the input and the declared inputs named. */
  REQUIRE_OK(carton_tensors_new(&in));
  CHECK_OK(carton_tensors_add(in, "x", CARTON_DTYPE_INT32, xi, 2, x_shape, NULL));
  CHECK_OK(carton_tensors_add_strings(in, "labels", one, 1, one_shape));
  CHECK_ERR(carton_infer(model, in, &out), CARTON_ERR_INVALID_ARGUMENT, "echo.carton: input \"x\"");
  CHECK(strstr(carton_last_error(), "int32") != NULL);
  CHECK(strstr(carton_last_error(), "(declared inputs: x float32, labels string)") != NULL);
  CHECK(out == NULL);
  carton_tensors_free(in);
  /* A wrong shape. */
  REQUIRE_OK(carton_tensors_new(&in));
  CHECK_OK(carton_tensors_add(in, "x", CARTON_DTYPE_FLOAT32, x, 2, wide, NULL));
  CHECK_OK(carton_tensors_add_strings(in, "labels", one, 1, one_shape));
  CHECK_ERR(carton_infer(model, in, &out), CARTON_ERR_INVALID_ARGUMENT,
            "input \"x\": shape [2, 5]: dimension 1 is 5, not 4");
  carton_tensors_free(in);
  /* A missing input, then an undeclared one. */
  REQUIRE_OK(carton_tensors_new(&in));
  CHECK_OK(carton_tensors_add(in, "x", CARTON_DTYPE_FLOAT32, x, 2, x_shape, NULL));
  CHECK_ERR(carton_infer(model, in, &out), CARTON_ERR_INVALID_ARGUMENT, "input \"labels\"");
  CHECK_OK(carton_tensors_add_strings(in, "labels", one, 1, one_shape));
  CHECK_OK(carton_tensors_add_strings(in, "extra", one, 1, one_shape));
  CHECK_ERR(carton_infer(model, in, &out), CARTON_ERR_INVALID_ARGUMENT,
            "\"extra\" is not one of the carton's declared inputs");
  CHECK_ERR(carton_infer(model, NULL, &out), CARTON_ERR_INVALID_ARGUMENT, "inputs is NULL");
  /* A closed model refuses calls; closing twice is fine. */
  CHECK_OK(carton_model_close(model));
  CHECK_OK(carton_model_close(model));
  CHECK_ERR(carton_infer(model, in, &out), CARTON_ERR_INVALID_ARGUMENT,
            "echo.carton: the model is closed");
  {
    carton_self_test_report* report = NULL;
    CHECK_ERR(carton_self_test(model, 1e-5, 1e-8, &report), CARTON_ERR_INVALID_ARGUMENT,
              "the model is closed");
  }
  carton_tensors_free(in);
  carton_model_free(model);
}

/* Every numeric dtype, a string tensor, a scalar, an empty tensor and a
 * gathered one, through a model that takes any input. */
void test_every_dtype_round_trips(void) {
  const float f32[3] = {1.5f, -INFINITY, 3.0e38f};
  const double f64[3] = {1e-300, -0.0, NAN};
  const int8_t i8[3] = {-128, 0, 127};
  const int16_t i16[3] = {-32768, 1, 32767};
  const int32_t i32[3] = {INT32_MIN, -1, INT32_MAX};
  const int64_t i64[3] = {INT64_MIN, 42, INT64_MAX};
  const uint8_t u8[3] = {0, 128, 255};
  const uint16_t u16[3] = {0, 1, 65535};
  const uint32_t u32[3] = {0, 7, UINT32_MAX};
  const uint64_t u64[3] = {0, 9, UINT64_MAX};
  const void* buffers[] = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};
  const carton_dtype types[] = {CARTON_DTYPE_FLOAT32, CARTON_DTYPE_FLOAT64, CARTON_DTYPE_INT8,
                                CARTON_DTYPE_INT16,   CARTON_DTYPE_INT32,   CARTON_DTYPE_INT64,
                                CARTON_DTYPE_UINT8,   CARTON_DTYPE_UINT16,  CARTON_DTYPE_UINT32,
                                CARTON_DTYPE_UINT64};
  const uint64_t three[1] = {3};
  const char* strings[4] = {"", "plain", "\xf0\x9f\x98\x80 emoji", "tab\there"};
  const uint64_t two_by_two[2] = {2, 2};
  const int32_t matrix[4] = {1, 2, 3, 4};
  const int64_t transposed[2] = {1, 2};
  const int32_t want_transposed[4] = {1, 3, 2, 4};
  const uint16_t scalar = 513;
  carton_model* model = NULL;
  carton_tensors* in = NULL;
  carton_tensors* out = NULL;
  size_t i, index = 0, count = 0, size = 0, rank = 9;
  const void* data = NULL;
  const uint64_t* shape = NULL;
  carton_dtype dtype = CARTON_DTYPE_STRING;
  const char* s = NULL;

  REQUIRE_OK((carton_status)make_any_carton(test_path("any"), test_path("any.carton")));
  REQUIRE_OK(carton_load(test_path("any.carton"), NULL, &model));
  REQUIRE_OK(carton_tensors_new(&in));
  for (i = 0; i < 10; ++i) {
    CHECK_OK(
        carton_tensors_add(in, carton_dtype_name(types[i]), types[i], buffers[i], 1, three, NULL));
  }
  CHECK_OK(carton_tensors_add_strings(in, "strings", strings, 2, two_by_two));
  CHECK_OK(
      carton_tensors_add(in, "gathered", CARTON_DTYPE_INT32, matrix, 2, two_by_two, transposed));
  CHECK_OK(carton_tensors_add(in, "scalar", CARTON_DTYPE_UINT16, &scalar, 0, NULL, NULL));
  CHECK_OK(carton_tensors_add(in, "empty", CARTON_DTYPE_FLOAT64, NULL, 2, (const uint64_t[]){3, 0},
                              NULL));
  REQUIRE_OK(carton_infer(model, in, &out));
  CHECK_OK(carton_tensors_count(out, &count));
  CHECK(count == 14);
  for (i = 0; i < 10; ++i) {
    CHECK_OK(carton_tensors_find(out, carton_dtype_name(types[i]), &index));
    CHECK_OK(carton_tensors_dtype(out, index, &dtype));
    CHECK(dtype == types[i]);
    CHECK_OK(carton_tensors_data(out, index, &data, &size));
    /* Bytes compared, so NaN and -0.0 count too. */
    CHECK(size == 3 * carton_dtype_size(types[i]) && memcmp(data, buffers[i], size) == 0);
  }
  CHECK_OK(carton_tensors_find(out, "strings", &index));
  CHECK_OK(carton_tensors_shape(out, index, &rank, &shape));
  CHECK(rank == 2 && shape[0] == 2 && shape[1] == 2);
  for (i = 0; i < 4; ++i) {
    CHECK_OK(carton_tensors_string(out, index, i, &s, NULL));
    CHECK_STR(s, strings[i]);
  }
  CHECK_OK(carton_tensors_find(out, "gathered", &index));
  CHECK_OK(carton_tensors_data(out, index, &data, &size));
  CHECK(size == sizeof want_transposed && memcmp(data, want_transposed, size) == 0);
  CHECK_OK(carton_tensors_find(out, "scalar", &index));
  CHECK_OK(carton_tensors_shape(out, index, &rank, &shape));
  CHECK(rank == 0);
  CHECK_OK(carton_tensors_data(out, index, &data, &size));
  CHECK(size == 2 && *(const uint16_t*)data == 513);
  CHECK_OK(carton_tensors_find(out, "empty", &index));
  CHECK_OK(carton_tensors_data(out, index, &data, &size));
  CHECK(size == 0);
  CHECK_OK(carton_tensors_shape(out, index, &rank, &shape));
  CHECK(rank == 2 && shape[0] == 3 && shape[1] == 0);
  carton_tensors_free(out);
  carton_tensors_free(in);
  carton_model_free(model);
}

void test_self_test(void) {
  carton_model* model = load_echo();
  carton_self_test_report* report = NULL;
  int passed = 7;
  size_t count = 0;
  const char* name = NULL;
  const char* message = NULL;
  if (model == NULL) return;
  REQUIRE_OK(carton_self_test(model, 1e-5, 1e-8, &report));
  CHECK_OK(carton_self_test_report_passed(report, &passed));
  CHECK(passed == 0);
  CHECK_OK(carton_self_test_report_count(report, &count));
  CHECK(count == 2);
  CHECK_OK(carton_self_test_report_test(report, 0, &name, &passed, &message));
  CHECK_STR(name, "echo");
  CHECK(passed == 1);
  CHECK(message != NULL && strstr(message, "x: ") != NULL && strstr(message, "labels: ") != NULL);
  CHECK_OK(carton_self_test_report_test(report, 1, &name, &passed, &message));
  CHECK_STR(name, "self_test[1]");
  CHECK(passed == 0);
  CHECK(message != NULL && strstr(message, "x: ") != NULL);
  CHECK_OK(carton_self_test_report_test(report, 1, &name, NULL, NULL));
  CHECK_ERR(carton_self_test_report_test(report, 2, &name, &passed, &message),
            CARTON_ERR_INVALID_ARGUMENT, "test 2 is out of range (there are 2)");
  carton_self_test_report_free(report);
  report = NULL;
  CHECK_ERR(carton_self_test(model, -1, 0, &report), CARTON_ERR_INVALID_ARGUMENT, "must be >= 0");
  CHECK_ERR(carton_self_test(model, 0, NAN, &report), CARTON_ERR_INVALID_ARGUMENT, "must be >= 0");
  CHECK(report == NULL);
  /* A model without self-tests passes with an empty report. */
  carton_model_free(model);
  model = NULL;
  REQUIRE_OK((carton_status)make_any_carton(test_path("any"), test_path("any.carton")));
  REQUIRE_OK(carton_load(test_path("any.carton"), NULL, &model));
  REQUIRE_OK(carton_self_test(model, 0, 0, &report));
  CHECK_OK(carton_self_test_report_passed(report, &passed));
  CHECK(passed == 1);
  CHECK_OK(carton_self_test_report_count(report, &count));
  CHECK(count == 0);
  carton_self_test_report_free(report);
  carton_model_free(model);
}

void test_load_options(void) {
  carton_load_options* o = NULL;
  carton_model* model = NULL;
  struct stat st;
  REQUIRE_OK((carton_status)make_echo_carton(test_path("echo"), test_path("echo.carton"), NULL));
  REQUIRE_OK(carton_load_options_new(&o));
  CHECK_OK(carton_load_options_set_device(o, NULL));
  CHECK_OK(carton_load_options_set_device(o, "cpu"));
  CHECK_OK(carton_load_options_set_device(o, "cuda:0"));
  CHECK_ERR(carton_load_options_set_device(o, "gpu0"), CARTON_ERR_INVALID_ARGUMENT,
            "device \"gpu0\": not a device (cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)");
  CHECK_ERR(carton_load_options_set_device(o, ""), CARTON_ERR_INVALID_ARGUMENT,
            "device \"\": empty");
  CHECK_OK(carton_load_options_set_device(o, "cpu"));
  CHECK_ERR(carton_load_options_set_framework_version(o, "one point two"),
            CARTON_ERR_INVALID_ARGUMENT, "\"one point two\"");
  CHECK_ERR(carton_load_options_set_runner_name(o, ""), CARTON_ERR_INVALID_ARGUMENT,
            "runner_name is empty");
  CHECK_ERR(carton_load_options_add_runner_opt(o, "=x"), CARTON_ERR_INVALID_ARGUMENT,
            "a runner option is KEY=VALUE, not \"=x\"");
  CHECK_ERR(carton_load_options_add_runner_opt(o, "novalue"), CARTON_ERR_INVALID_ARGUMENT,
            "KEY=VALUE");
  CHECK_ERR(carton_load_options_set_cache_dir(o, ""), CARTON_ERR_INVALID_ARGUMENT,
            "cache_dir is empty");

  /* The overrides select the runner: no runner is named "nope", and noop
   * is 1.0.0, which "<1" refuses. */
  CHECK_OK(carton_load_options_set_runner_name(o, "nope"));
  CHECK_ERR(carton_load(test_path("echo.carton"), o, &model), CARTON_ERR_NOT_FOUND, "nope");
  CHECK(model == NULL);
  CHECK_OK(carton_load_options_set_runner_name(o, NULL));
  CHECK_OK(carton_load_options_set_framework_version(o, "<1"));
  CHECK_ERR(carton_load(test_path("echo.carton"), o, &model), CARTON_ERR_NOT_FOUND, NULL);
  CHECK_OK(carton_load_options_set_framework_version(o, NULL));

  /* Runner options reach the runner; the cache is where it is told. */
  CHECK_OK(carton_load_options_add_runner_opt(o, "color=blue"));
  CHECK_OK(carton_load_options_set_cache_dir(o, test_path("own-cache")));
  CHECK_OK(carton_load(test_path("echo.carton"), o, &model));
  CHECK(stat(test_path("own-cache"), &st) == 0 && S_ISDIR(st.st_mode));
  carton_model_free(model);
  model = NULL;
  /* A location that does not parse. */
  CHECK_ERR(carton_load("gopher://example.com/m.carton", o, &model), CARTON_ERR_INVALID_ARGUMENT,
            "gopher");
  carton_load_options_free(o);
}

struct worker {
  carton_model* model;
  int id;
  int failures;
};

/* Many inferences on one shared model, each with this thread's numbers;
 * and a failing call whose message stays this thread's. */
static void* work(void* arg) {
  struct worker* w = (struct worker*)arg;
  int round;
  for (round = 0; round < 10; ++round) {
    float x[8];
    int k;
    carton_tensors* in;
    carton_tensors* out = NULL;
    char name[32];
    const void* data = NULL;
    size_t size = 0;
    for (k = 0; k < 8; ++k) x[k] = (float)(w->id * 100 + round * 10 + k);
    in = echo_inputs(x);
    size_t index = 0;
    if (carton_infer(w->model, in, &out) != CARTON_OK ||
        carton_tensors_find(out, "x", &index) != CARTON_OK ||
        carton_tensors_data(out, index, &data, &size) != CARTON_OK || size != sizeof x ||
        memcmp(data, x, size) != 0) {
      ++w->failures;
    }
    snprintf(name, sizeof name, "thread%d", w->id);
    if (carton_tensors_find(out, name, &index) != CARTON_ERR_NOT_FOUND ||
        strstr(carton_last_error(), name) == NULL) {
      ++w->failures;
    }
    carton_tensors_free(out);
    carton_tensors_free(in);
  }
  return NULL;
}

void test_threads(void) {
  carton_model* model = load_echo();
  pthread_t threads[4];
  struct worker workers[4];
  int i;
  if (model == NULL) return;
  for (i = 0; i < 4; ++i) {
    workers[i].model = model;
    workers[i].id = i + 1;
    workers[i].failures = 0;
    CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
  }
  for (i = 0; i < 4; ++i) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(workers[i].failures == 0);
  }
  carton_model_free(model);
}

/* A Python model that raises: CARTON_ERR_MODEL with the model's message,
 * and the model stays usable. Needs the Python runner on
 * CARTON_RUNNER_PATH (CMake puts it there when it is built). */
void test_model_error(void) {
  static const char* kMain =
      "class M:\n"
      "    def infer_with_tensors(self, tensors):\n"
      "        if float(tensors['x'].sum()) > 0:\n"
      "            raise ValueError('x must be non-positive')\n"
      "        return {'y': tensors['x']}\n\n\n"
      "def get_model():\n    return M()\n";
  static const char* kToml =
      "spec_version = 1\n[runner]\nrunner_name = \"python\"\n"
      "required_framework_version = \">=3.11\"\nrunner_compat_version = 1\n"
      "[runner.opts]\nentrypoint_package = \"main\"\nentrypoint_fn = \"get_model\"\n"
      "python_deps = \"system\"\n";
  const float positive[2] = {1, 2};
  const float negative[2] = {-1, -2};
  const uint64_t shape[1] = {2};
  char path[4096];
  carton_model* model = NULL;
  carton_tensors* in = NULL;
  carton_tensors* out = NULL;
  const char* runners = getenv("CARTON_RUNNER_PATH");
  if (runners == NULL || strstr(runners, "python") == NULL) {
    skip_test("the Python runner is not built");
    return;
  }
  /* An embedded CPython leaves memory allocated at exit: no leak check in
   * the runner (this process read its options at start and keeps them). */
  setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
  snprintf(path, sizeof path, "%s/model", test_path("raises"));
  make_dirs(path);
  snprintf(path, sizeof path, "%s/model/main.py", test_path("raises"));
  write_text(path, kMain);
  snprintf(path, sizeof path, "%s/carton.toml", test_path("raises"));
  write_text(path, kToml);
  REQUIRE_OK(carton_pack(test_path("raises"), test_path("raises.carton"), NULL, NULL));
  REQUIRE_OK(carton_load(test_path("raises.carton"), NULL, &model));
  REQUIRE_OK(carton_tensors_new(&in));
  CHECK_OK(carton_tensors_add(in, "x", CARTON_DTYPE_FLOAT32, positive, 1, shape, NULL));
  CHECK_ERR(carton_infer(model, in, &out), CARTON_ERR_MODEL, "ValueError: x must be non-positive");
  CHECK(out == NULL);
  CHECK(strstr(carton_last_error(), "main.py") != NULL); /* the model's traceback */
  CHECK_STR(carton_status_name(CARTON_ERR_MODEL), "model error");
  carton_tensors_free(in);
  in = NULL;
  REQUIRE_OK(carton_tensors_new(&in));
  CHECK_OK(carton_tensors_add(in, "x", CARTON_DTYPE_FLOAT32, negative, 1, shape, NULL));
  CHECK_OK(carton_infer(model, in, &out));
  carton_tensors_free(out);
  carton_tensors_free(in);
  carton_model_free(model);
}
