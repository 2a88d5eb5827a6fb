#define _POSIX_C_SOURCE 200809L
#include "capi_testing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int g_failures = 0;
int g_skipped = 0;
char g_test_dir[4096];

void check_true(const char* file, int line, const char* what, int ok) {
  if (ok) return;
  fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
  ++g_failures;
}

void check_ok(const char* file, int line, const char* call, carton_status got) {
  if (got == CARTON_OK) {
    if (carton_last_error()[0] != '\0') {
      fprintf(stderr, "%s:%d: %s: ok, but carton_last_error() is \"%s\"\n", file, line, call,
              carton_last_error());
      ++g_failures;
    }
    return;
  }
  fprintf(stderr, "%s:%d: %s returned %s: %s\n", file, line, call, carton_status_name(got),
          carton_last_error());
  ++g_failures;
}

void check_error(const char* file, int line, const char* call, carton_status got,
                 carton_status want, const char* text) {
  if (got != want) {
    fprintf(stderr, "%s:%d: %s returned %s, not %s (message: %s)\n", file, line, call,
            carton_status_name(got), carton_status_name(want), carton_last_error());
    ++g_failures;
  } else if (text != NULL && strstr(carton_last_error(), text) == NULL) {
    fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", file, line, call,
            carton_last_error(), text);
    ++g_failures;
  }
}

void check_str(const char* file, int line, const char* what, const char* got, const char* want) {
  if (got == NULL && want == NULL) return;
  if (got != NULL && want != NULL && strcmp(got, want) == 0) return;
  fprintf(stderr, "%s:%d: %s is %s%s%s, not %s%s%s\n", file, line, what, got ? "\"" : "",
          got ? got : "NULL", got ? "\"" : "", want ? "\"" : "", want ? want : "NULL",
          want ? "\"" : "");
  ++g_failures;
}

void skip_test(const char* why) {
  fprintf(stderr, "skipped: %s\n", why);
  g_skipped = 1;
}

const char* test_dir(void) { return g_test_dir; }

const char* test_path(const char* name) {
  static char buffers[8][4096];
  static int next = 0;
  char* b = buffers[next];
  const int n = snprintf(b, sizeof buffers[0], "%s/%s", g_test_dir, name);
  next = (next + 1) % 8;
  if (n < 0 || (size_t)n >= sizeof buffers[0]) {
    fprintf(stderr, "path too long: %s/%s\n", g_test_dir, name);
    exit(2);
  }
  return b;
}

void write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(2);
  }
}

void write_text(const char* path, const char* text) { write_file(path, text, strlen(text)); }

unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  unsigned char* data = NULL;
  long n;
  *size = 0;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = malloc((size_t)n + 1);
    if (data != NULL && fread(data, 1, (size_t)n, f) == (size_t)n) {
      *size = (size_t)n;
    } else {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  return data;
}

void make_dirs(const char* path) {
  char buf[4096];
  char* p;
  snprintf(buf, sizeof buf, "%s", path);
  for (p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(buf, 0755);
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "cannot make %s: %s\n", buf, strerror(errno));
    exit(2);
  }
}

const float kEchoX[4] = {1.5f, -2.0f, 3.25f, 0.0f};

static const char kEchoToml[] =
    "spec_version = 1\n"
    "model_name = \"capi-echo\"\n"
    "short_description = \"echoes its inputs\"\n"
    "license = \"MIT\"\n"
    "[[input]]\n"
    "name = \"x\"\ndtype = \"float32\"\nshape = [\"batch\", 4]\n"
    "description = \"the numbers\"\n"
    "[[input]]\n"
    "name = \"labels\"\ndtype = \"string\"\nshape = \"*\"\n"
    "[[output]]\n"
    "name = \"x\"\ndtype = \"float32\"\nshape = [\"batch\", \"*\"]\n"
    "[[output]]\n"
    "name = \"labels\"\ndtype = \"string\"\nshape = \"names\"\n"
    "[[self_test]]\n"
    "name = \"echo\"\n"
    "inputs = { x = \"@tensor_data/x\", labels = \"@tensor_data/labels\" }\n"
    "expected_out = { x = \"@tensor_data/x\", labels = \"@tensor_data/labels\" }\n"
    "[[self_test]]\n"
    "inputs = { x = \"@tensor_data/x\", labels = \"@tensor_data/labels\" }\n"
    "expected_out = { x = \"@tensor_data/y\", labels = \"@tensor_data/labels\" }\n"
    "[runner]\n"
    "runner_name = \"noop\"\n"
    "required_framework_version = \">=1.0.0, <2\"\n"
    "runner_compat_version = 1\n";

static const char kIndexToml[] =
    "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [1, 4]\n"
    "file = \"tensor_0.bin\"\ninner = []\n\n"
    "[[tensor]]\nname = \"labels\"\ndtype = \"string\"\nshape = [2]\n"
    "file = \"tensor_1.toml\"\ninner = []\n\n"
    "[[tensor]]\nname = \"y\"\ndtype = \"float32\"\nshape = [1, 4]\n"
    "file = \"tensor_2.bin\"\ninner = []\n";

static int pack(const char* dir, const char* carton, char hash[CARTON_HASH_HEX_SIZE]) {
  carton_pack_options* options = NULL;
  carton_status s = carton_pack_options_new(&options);
  if (s == CARTON_OK) s = carton_pack_options_set_compression(options, "stored");
  if (s == CARTON_OK) s = carton_pack(dir, carton, options, hash);
  carton_pack_options_free(options);
  if (s != CARTON_OK) {
    fprintf(stderr, "packing %s: %s\n", dir, carton_last_error());
    return 1;
  }
  return 0;
}

int make_echo_carton(const char* dir, const char* carton, char hash[CARTON_HASH_HEX_SIZE]) {
  char path[4096];
  const float y[4] = {9.0f, 9.0f, 9.0f, 9.0f};
  snprintf(path, sizeof path, "%s/model", dir);
  make_dirs(path);
  snprintf(path, sizeof path, "%s/tensor_data", dir);
  make_dirs(path);
  snprintf(path, sizeof path, "%s/carton.toml", dir);
  write_text(path, kEchoToml);
  snprintf(path, sizeof path, "%s/model/weights.bin", dir);
  write_text(path, "WEIGHTS-0123456789-abcdefghijklmnopqrstuvwxyz-WEIGHTS\n");
  snprintf(path, sizeof path, "%s/tensor_data/index.toml", dir);
  write_text(path, kIndexToml);
  snprintf(path, sizeof path, "%s/tensor_data/tensor_0.bin", dir);
  write_file(path, kEchoX, sizeof kEchoX);
  snprintf(path, sizeof path, "%s/tensor_data/tensor_1.toml", dir);
  write_text(path, "data = [\"first\", \"second\"]\n");
  snprintf(path, sizeof path, "%s/tensor_data/tensor_2.bin", dir);
  write_file(path, y, sizeof y);
  return pack(dir, carton, hash);
}

int make_any_carton(const char* dir, const char* carton) {
  char path[4096];
  snprintf(path, sizeof path, "%s/model", dir);
  make_dirs(path);
  snprintf(path, sizeof path, "%s/carton.toml", dir);
  write_text(path,
             "spec_version = 1\n[runner]\nrunner_name = \"noop\"\n"
             "required_framework_version = \">=1\"\nrunner_compat_version = 1\n");
  snprintf(path, sizeof path, "%s/model/model.bin", dir);
  write_text(path, "any\n");
  return pack(dir, carton, NULL);
}
