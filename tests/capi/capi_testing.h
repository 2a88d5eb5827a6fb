/* A small test harness for the C API tests (plain C99: these tests are
 * what a C caller compiles), and the fixtures they share: cartons for the
 * noop runner, packed with carton_pack in a temporary directory. */
#ifndef CARTON_TESTS_CAPI_CAPI_TESTING_H_
#define CARTON_TESTS_CAPI_CAPI_TESTING_H_

#include <stddef.h>
#include <stdint.h>

#include "carton/c/carton.h"

/* Failed checks so far (the test fails when it is not 0). */
extern int g_failures;

void check_true(const char* file, int line, const char* what, int ok);
void check_ok(const char* file, int line, const char* call, carton_status got);
void check_error(const char* file, int line, const char* call, carton_status got,
                 carton_status want, const char* text);
void check_str(const char* file, int line, const char* what, const char* got, const char* want);

#define CHECK(cond) check_true(__FILE__, __LINE__, #cond, (cond) ? 1 : 0)
#define CHECK_OK(call) check_ok(__FILE__, __LINE__, #call, (call))
/* `call` returns `code` and carton_last_error() contains `text` (NULL: any). */
#define CHECK_ERR(call, code, text) check_error(__FILE__, __LINE__, #call, (call), (code), (text))
/* Both NULL, or equal strings. */
#define CHECK_STR(got, want) check_str(__FILE__, __LINE__, #got, (got), (want))
/* Ends the test function when `call` fails (what follows depends on it). */
#define REQUIRE_OK(call)                         \
  do {                                           \
    int failures_before_ = g_failures;           \
    check_ok(__FILE__, __LINE__, #call, (call)); \
    if (g_failures != failures_before_) return;  \
  } while (0)

/* Marks the test skipped (CTest shows it so), saying why. */
void skip_test(const char* why);
extern int g_skipped;

/* The test's own temporary directory (made by main, removed after). */
extern char g_test_dir[4096];
const char* test_dir(void);
/* test_dir()/name, in a static buffer of its own per call (8 in turn). */
const char* test_path(const char* name);

void write_file(const char* path, const void* data, size_t size);
void write_text(const char* path, const char* text);
/* The whole file in a malloc'ed buffer (size in *size); NULL if unreadable. */
unsigned char* read_file(const char* path, size_t* size);
void make_dirs(const char* path);

/* The echo model: inputs x (float32 ["batch", 4]) and labels (string "*"),
 * outputs x (float32 ["batch", "*"]) and labels (string "names"); two
 * self-tests, "echo" (passes with the noop runner) and an unnamed one that
 * expects other numbers (fails). Writes the folder `dir` and packs it into
 * `carton` (stored); the manifest hash into `hash` when not NULL. Returns
 * 0 on success. */
int make_echo_carton(const char* dir, const char* carton, char hash[CARTON_HASH_HEX_SIZE]);

/* A noop model that declares no inputs (so it takes any). */
int make_any_carton(const char* dir, const char* carton);

/* The self-test input x of the echo model. */
extern const float kEchoX[4];

#endif /* CARTON_TESTS_CAPI_CAPI_TESTING_H_ */
