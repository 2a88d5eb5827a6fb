/* carton_load_options_set_device: the device reaches the runner. The fake
 * runner (as carton-runner-noop) logs the device it is given and the
 * CUDA_VISIBLE_DEVICES it is started with; the stand-in CUDA driver lists
 * two GPUs (capi_test_main.c points CARTON_LIBCUDA at it). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi_testing.h"
#include "capi_tests.h"

#define GPU0 "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
#define GPU1 "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f"
#define MIG "MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f/1/0"

/* The last line of the log, in `line`. */
static void last_logged(char* line, size_t size) {
  char buf[512];
  FILE* f = fopen(test_path("device.log"), "r");
  line[0] = '\0';
  if (f == NULL) return;
  while (fgets(buf, sizeof buf, f) != NULL) {
    snprintf(line, size, "%s", buf);
  }
  fclose(f);
}

/* Loads the echo carton on `device` and checks what the runner logged. */
static void check_device(const char* device, const char* expected) {
  carton_load_options* o = NULL;
  carton_model* model = NULL;
  char line[512];
  REQUIRE_OK(carton_load_options_new(&o));
  CHECK_OK(carton_load_options_set_device(o, device));
  CHECK_OK(carton_load(test_path("echo.carton"), o, &model));
  CHECK_OK(carton_model_close(model));
  carton_model_free(model);
  carton_load_options_free(o);
  last_logged(line, sizeof line);
  if (strcmp(line, expected) != 0) {
    fprintf(stderr, "device %s: the runner logged \"%s\", not \"%s\"\n", device ? device : "NULL",
            line, expected);
    ++g_failures;
  }
}

void test_load_device(void) {
  char runner[4200];
  carton_load_options* o = NULL;
  carton_model* model = NULL;
  REQUIRE_OK((carton_status)make_echo_carton(test_path("echo"), test_path("echo.carton"), NULL));
  make_dirs(test_path("runners"));
  snprintf(runner, sizeof runner, "%s/carton-runner-noop", test_path("runners"));
  const char* runner_path = getenv("CARTON_RUNNER_PATH");
  char saved_path[4200];
  snprintf(saved_path, sizeof saved_path, "%s", runner_path ? runner_path : "");
  CHECK(symlink(CARTON_FAKE_RUNNER, runner) == 0);
  if (g_failures) return;
  setenv("CARTON_RUNNER_PATH", test_path("runners"), 1);
  setenv("FAKE_RUNNER_DEVICE_LOG", test_path("device.log"), 1);
  setenv("CUDA_VISIBLE_DEVICES", "inherited", 1);

  check_device("cpu", "device=cpu requested=1 CUDA_VISIBLE_DEVICES=\n");
  check_device("1", "device=" GPU1 " requested=1 CUDA_VISIBLE_DEVICES=" GPU1 "\n");
  check_device("cuda:1", "device=" GPU1 " requested=1 CUDA_VISIBLE_DEVICES=" GPU1 "\n");
  check_device(GPU1, "device=" GPU1 " requested=1 CUDA_VISIBLE_DEVICES=" GPU1 "\n");
  check_device(MIG, "device=" MIG " requested=1 CUDA_VISIBLE_DEVICES=" MIG "\n");
  /* The default: the first GPU the driver lists. */
  check_device(NULL, "device=" GPU0 " requested=0 CUDA_VISIBLE_DEVICES=" GPU0 "\n");

  /* A GPU the driver does not list: refused by carton_load. */
  REQUIRE_OK(carton_load_options_new(&o));
  CHECK_OK(carton_load_options_set_device(o, "cuda:2"));
  CHECK_ERR(carton_load(test_path("echo.carton"), o, &model), CARTON_ERR_NOT_FOUND,
            "device \"cuda:2\": no such GPU (2 found: 0 " GPU0 ", 1 " GPU1 ")");
  CHECK(model == NULL);
  CHECK_ERR(carton_load_options_set_device(o, "GPU-12"), CARTON_ERR_INVALID_ARGUMENT,
            "not a GPU or MIG UUID");
  carton_load_options_free(o);
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("FAKE_RUNNER_DEVICE_LOG");
  setenv("CARTON_RUNNER_PATH", saved_path, 1);
}
