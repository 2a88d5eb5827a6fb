/* carton_words: the C API's side of the test that every shell says the same
 * words (tests/python/test_shells.py). Runs one call and prints what it
 * gave: "ok", or "<status name>: <carton_last_error()>".
 *
 *   carton_words infer LOCATION INPUTS.safetensors [--lenient] [--runner NAME]
 *   carton_words load LOCATION
 *
 * Exit 0 when the call succeeded, 1 when it failed, 2 on a usage error. */
#include <stdio.h>
#include <string.h>

#include "carton/c/carton.h"

static int report(carton_status status) {
  if (status == CARTON_OK) {
    printf("ok\n");
    return 0;
  }
  printf("%s: %s\n", carton_status_name(status), carton_last_error());
  return 1;
}

static carton_status run(int argc, char** argv, carton_load_options* options) {
  carton_status s = CARTON_OK;
  carton_model* model = NULL;
  carton_tensors* inputs = NULL;
  carton_tensors* outputs = NULL;
  int i;
  for (i = strcmp(argv[1], "infer") == 0 ? 4 : 3; i < argc; ++i) {
    if (strcmp(argv[i], "--lenient") == 0) {
      s = carton_load_options_set_lenient(options, 1);
    } else if (strcmp(argv[i], "--runner") == 0 && i + 1 < argc) {
      s = carton_load_options_set_runner_name(options, argv[++i]);
    }
    if (s != CARTON_OK) return s;
  }
  s = carton_load(argv[2], options, &model);
  if (s == CARTON_OK && strcmp(argv[1], "infer") == 0) {
    s = carton_tensors_new(&inputs);
    if (s == CARTON_OK) s = carton_safetensors_read(argv[3], inputs);
    if (s == CARTON_OK) s = carton_infer(model, inputs, &outputs);
  }
  carton_tensors_free(outputs);
  carton_tensors_free(inputs);
  carton_model_free(model);
  return s;
}

int main(int argc, char** argv) {
  carton_load_options* options = NULL;
  int rc;
  if (argc < 3 || (strcmp(argv[1], "infer") == 0 && argc < 4) ||
      (strcmp(argv[1], "infer") != 0 && strcmp(argv[1], "load") != 0)) {
    fprintf(stderr, "usage: carton_words infer|load LOCATION [INPUTS] [--lenient] [--runner N]\n");
    return 2;
  }
  if (carton_load_options_new(&options) != CARTON_OK) return report(CARTON_ERR_INTERNAL);
  rc = report(run(argc, argv, options));
  carton_load_options_free(options);
  return rc;
}
