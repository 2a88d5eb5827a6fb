/* The C API's tests: `capi_tests NAME` runs one case (CTest runs each on
 * its own; tests/CMakeLists.txt reads the table below), `capi_tests` runs
 * them all. `capi_tests --make-fixture DIR` writes the fixtures of
 * example_test.sh instead: DIR/echo.carton, DIR/x.safetensors and
 * DIR/multi.safetensors. Each case runs in a fresh temporary directory
 * under $CARTON_TEST_TMP (else /tmp), with its own cache, and with the
 * stand-in CUDA driver (CARTON_LIBCUDA, unless set). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_testing.h"
#include "capi_tests.h"

struct test_case {
  const char* name;
  const char* title; /* the CTest name */
  void (*run)(void);
};

/* Each case's name and title start one line: tests/CMakeLists.txt registers
 * each with CTest under its title. */
static const struct test_case kCases[] = {
    {"versions", "capi: versions, status and dtype names", test_versions_and_names},
    {"nulls", "capi: null handles and arguments are errors", test_null_arguments},
    {"tensor_map", "capi: tensor maps borrow, copy and refuse", test_tensor_map},
    {"strides", "capi: strided tensors are gathered once", test_strides},
    {"safetensors", "capi: safetensors files round-trip every dtype", test_safetensors_files},
    {"safetensors_args", "capi: safetensors inputs as carton infer reads them",
     test_safetensors_args_and_errors},
    {"out_of_memory", "capi: running out of memory is an error", test_out_of_memory},
    {"pack", "capi: pack with options and hash", test_pack_and_hash},
    {"corrupt", "capi: verify, corrupt and missing cartons", test_verify_and_corrupt},
    {"info", "capi: model info without loading", test_info},
    {"load_options", "capi: load options", test_load_options},
    {"load_device", "capi: the device option reaches the runner", test_load_device},
    {"infer", "capi: infer through the noop runner", test_infer},
    {"wrong_inputs", "capi: wrong inputs are refused before the runner runs", test_wrong_inputs},
    {"dtypes", "capi: every dtype round-trips through the noop runner",
     test_every_dtype_round_trips},
    {"self_test", "capi: self-tests pass and fail", test_self_test},
    {"threads", "capi: one model used from several threads", test_threads},
    {"model_error", "capi: a model that raises is CARTON_ERR_MODEL and stays usable",
     test_model_error},
};

static void make_test_dir(const char* name) {
  const char* base = getenv("CARTON_TEST_TMP");
  char cache[4200];
  if (base == NULL || *base == '\0') base = "/tmp";
  make_dirs(base);
  snprintf(g_test_dir, sizeof g_test_dir, "%s/capi-%s-XXXXXX", base, name);
  if (mkdtemp(g_test_dir) == NULL) {
    perror("mkdtemp");
    exit(2);
  }
  snprintf(cache, sizeof cache, "%s/cache", g_test_dir);
  setenv("CARTON_CACHE_DIR", cache, 1);
}

static void remove_test_dir(void) {
  char command[4300];
  snprintf(command, sizeof command, "rm -rf '%s'", g_test_dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", g_test_dir);
}

/* 0: passed, 1: failed, kSkipped: skipped (CTest's SKIP_RETURN_CODE). */
enum { kSkipped = 77 };

static int run_case(const struct test_case* c) {
  make_test_dir(c->name);
  g_failures = 0;
  g_skipped = 0;
  c->run();
  if (g_failures == 0) remove_test_dir();
  fprintf(stderr, "%s %s (%s)\n",
          g_failures  ? "FAIL"
          : g_skipped ? "SKIP"
                      : "PASS",
          c->name, c->title);
  return g_failures ? 1 : g_skipped ? kSkipped : 0;
}

/* The fixtures of example_test.sh: a carton, x (float32 [2, 4]) and a
 * file of two tensors, labels (string [3]) and w (int64 [2]). */
static int make_fixture(const char* dir) {
  const float x[8] = {1, 2, 3, 4, -1, -2, -3, -4.5f};
  const char* labels[3] = {"first",
                           "s\xc3\xa9"
                           "cond",
                           ""};
  const int64_t w[2] = {7, -7};
  char path[4200], file[4200];
  carton_tensors* t = NULL;
  carton_status s;
  snprintf(g_test_dir, sizeof g_test_dir, "%s", dir);
  make_dirs(dir);
  snprintf(path, sizeof path, "%s/echo", dir);
  snprintf(file, sizeof file, "%s/echo.carton", dir);
  if (make_echo_carton(path, file, NULL) != 0) return 1;
  s = carton_tensors_new(&t);
  if (s == CARTON_OK)
    s = carton_tensors_add(t, "x", CARTON_DTYPE_FLOAT32, x, 2, (const uint64_t[]){2, 4}, NULL);
  snprintf(file, sizeof file, "%s/x.safetensors", dir);
  if (s == CARTON_OK) s = carton_safetensors_write(file, t);
  carton_tensors_free(t);
  t = NULL;
  if (s == CARTON_OK) s = carton_tensors_new(&t);
  if (s == CARTON_OK) s = carton_tensors_add_strings(t, "labels", labels, 1, (const uint64_t[]){3});
  if (s == CARTON_OK)
    s = carton_tensors_add(t, "w", CARTON_DTYPE_INT64, w, 1, (const uint64_t[]){2}, NULL);
  snprintf(file, sizeof file, "%s/multi.safetensors", dir);
  if (s == CARTON_OK) s = carton_safetensors_write(file, t);
  carton_tensors_free(t);
  if (s != CARTON_OK) fprintf(stderr, "fixture: %s\n", carton_last_error());
  return s == CARTON_OK ? 0 : 1;
}

int main(int argc, char** argv) {
  const size_t n = sizeof kCases / sizeof kCases[0];
  size_t i;
  int failed = 0;
  if (argc == 3 && strcmp(argv[1], "--make-fixture") == 0) return make_fixture(argv[2]);
  /* Every case sees the stand-in CUDA driver (two GPUs): the driver is
   * opened once per process, and the default device is its first GPU. */
  setenv("CARTON_LIBCUDA", CARTON_FAKE_CUDA, 0);
  for (i = 0; i < n; ++i) {
    if (argc > 1 && strcmp(argv[1], kCases[i].name) == 0) return run_case(&kCases[i]);
    if (argc == 1 && run_case(&kCases[i]) == 1) failed = 1;
  }
  if (argc > 1) {
    fprintf(stderr, "no test case named \"%s\"\n", argv[1]);
    return 2;
  }
  return failed;
}
