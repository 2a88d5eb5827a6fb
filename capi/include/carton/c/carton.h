/* carton's C API: load, inspect, run, pack, verify and hash .carton models
 * from C or any language with a C foreign-function interface.
 *
 *   carton_model* model = NULL;
 *   if (carton_load("model.carton", NULL, &model) != CARTON_OK) {
 *     fprintf(stderr, "%s\n", carton_last_error());  // names the carton, file and rule
 *   }
 *   carton_tensors* in = NULL;
 *   carton_tensors* out = NULL;
 *   carton_tensors_new(&in);
 *   uint64_t shape[1] = {4};
 *   carton_tensors_add(in, "x", CARTON_DTYPE_FLOAT32, x, 1, shape, NULL);
 *   carton_infer(model, in, &out);                   // out: a map the caller owns
 *   ...
 *   carton_tensors_free(out);
 *   carton_tensors_free(in);
 *   carton_model_free(model);
 *
 * A thin shell over the C++ library (carton/loader, carton/runner,
 * carton/carton): a model is loaded through the manifest-hash cache, the
 * runner it needs is selected and started once in serve mode, and every
 * carton_infer and carton_self_test goes through that runner process, as
 * `carton infer` and Python's carton.load do.
 *
 * Plain C99. Link with `pkg-config --cflags --libs carton-c` (the shared
 * library libcarton_c.so). Every exported symbol starts with carton_; the
 * types are opaque handles made by *_new / carton_load / carton_infer / ...
 * and released by the matching *_free.
 *
 * ERRORS. Every function that can fail returns a carton_status: CARTON_OK,
 * or one code per rule of the library (see carton_status below). The
 * message of the last call on the calling thread is carton_last_error().
 * Null pointers passed where a handle, a string or an output pointer is
 * required are CARTON_ERR_INVALID_ARGUMENT, never a crash. Nothing aborts
 * and no C++ exception leaves the library; running out of memory is
 * CARTON_ERR_INTERNAL with the message "<function>: out of memory". On
 * failure, an output handle or pointer is set to NULL (numbers and enums
 * to 0) and nothing is allocated for the caller. The functions that cannot fail
 * (carton_abi_version, carton_last_error, carton_status_name,
 * carton_dtype_name, carton_dtype_size and the *_free functions) return
 * their value directly and leave carton_last_error() as it was.
 *
 * OWNERSHIP. Each handle is owned by the caller until passed to its *_free
 * function (which accepts NULL, like free()). Strings and arrays returned
 * through `const` pointers (names, shapes, data, messages) borrow from the
 * handle they were read from and stay valid, unchanged, until that handle
 * is freed; the caller never frees them. Input strings are copied; input
 * tensor buffers are borrowed (carton_tensors_add says for how long).
 *
 * THREADS. carton_last_error() is per thread. A carton_model may be used
 * from several threads at once: carton_infer, carton_self_test and
 * carton_model_close on one model are serialized inside it (one runner
 * process serves one call at a time; different models run in parallel),
 * and carton_model_info reads only what never changes. Every other handle
 * (carton_tensors, carton_info, options, reports) is not thread-safe: use
 * it from one thread at a time; reading one handle (the accessors, or
 * passing it as a const argument) from several threads while nobody
 * modifies it is fine. Free a handle only when no other call on it is in
 * progress. carton_load, carton_pack, carton_verify, carton_hash and
 * carton_info_read take no handle and may run concurrently, also on the
 * same carton.
 *
 * RUNNERS. A model runs in a runner process (`carton-runner-<name>`),
 * found in the directories of $CARTON_RUNNER_PATH (colon-separated), then
 * in <dir of the running program>/../libexec/carton/runners, then in
 * <install prefix>/libexec/carton/runners (the prefix the library was
 * configured with). What a runner writes to its stderr reaches this
 * process's stderr as "[<runner name>] <line>". The cache is
 * $CARTON_CACHE_DIR, else $XDG_CACHE_HOME/carton, else ~/.cache/carton,
 * unless carton_load_options says otherwise.
 *
 * Untrusted input: cartons, URLs, references and safetensors files may
 * come from anyone; they are checked before use (see README.md, "Hostile
 * input"). Tensor buffers and strings given by the caller are trusted to
 * be as large as their shape says.
 */
#ifndef CARTON_C_CARTON_H_
#define CARTON_C_CARTON_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define CARTON_C_EXPORT __attribute__((visibility("default")))
#else
#define CARTON_C_EXPORT
#endif

/* The enums are int-sized in both languages. In C++ (the library) they have
 * int as their underlying type, so any int a C caller passes is a value
 * the library can inspect and refuse, rather than undefined behavior. */
#ifdef __cplusplus
#define CARTON_C_ENUM(name) enum name : int
#else
#define CARTON_C_ENUM(name) enum name
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------ */

/* The ABI this header describes. It changes whenever a function's
 * signature or meaning, an enum value or an ownership rule changes; adding
 * functions does not change it. The shared library's file name carries it
 * (libcarton_c.so.<CARTON_C_ABI_VERSION>). */
#define CARTON_C_ABI_VERSION 1

/* The ABI of the loaded library. A program checks it at start:
 *   if (carton_abi_version() != CARTON_C_ABI_VERSION) -> built for another ABI.
 * Never fails. */
CARTON_C_EXPORT unsigned carton_abi_version(void);

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

/* One code per rule of the library (carton::StatusCode). */
typedef CARTON_C_ENUM(carton_status){
    CARTON_OK = 0,
    /* The caller asked for something impossible: a NULL handle or argument,
     * a bad option, an input tensor that does not match the model's declared
     * inputs, a duplicate tensor name, an index out of range. */
    CARTON_ERR_INVALID_ARGUMENT = 1,
    /* A named thing (a file, a carton, a tensor, a runner) does not exist. */
    CARTON_ERR_NOT_FOUND = 2,
    /* Bytes break the format, or a hash does not match. */
    CARTON_ERR_CORRUPT = 3,
    /* Valid but not supported here (a version, a dtype, a device). */
    CARTON_ERR_UNSUPPORTED = 4,
    /* The operating system failed a read, write or open. */
    CARTON_ERR_IO = 5,
    /* A transfer failed. */
    CARTON_ERR_NETWORK = 6,
    /* A bug in carton, a runner that crashed, hung or broke the protocol,
     * or memory ran out. */
    CARTON_ERR_INTERNAL = 7,
    /* The model's own code failed while it ran (a Python model raised, a
     * TorchScript forward threw); carton_last_error() names the exception,
     * its message and the model's traceback. The model stays loaded: the
     * next call may succeed. */
    CARTON_ERR_MODEL = 8} carton_status;

/* The message of the last call made on this thread that returns a
 * carton_status: "" after CARTON_OK, else what failed, naming the carton,
 * the file and the tensor as the library's messages do ("m.carton: input
 * \"x\": dtype int32, not float32 (declared in carton.toml) ..."). Never
 * NULL. The string is owned by the library and valid until the next such
 * call on the same thread. Never fails. */
CARTON_C_EXPORT const char* carton_last_error(void);

/* Lowercase name of a status ("ok", "invalid argument", "not found",
 * "corrupt", "unsupported", "io error", "network error", "internal");
 * "unknown" for a value that is not a carton_status. Static storage.
 * Never fails. */
CARTON_C_EXPORT const char* carton_status_name(carton_status status);

/* ------------------------------------------------------------------------
 * Data types
 * ------------------------------------------------------------------------ */

/* The element types of carton v1. Numeric tensors are in the host's byte
 * order (the library supports little-endian hosts only, where that is the
 * carton format's order) and C order unless strides say otherwise; string
 * tensors hold UTF-8 strings. */
typedef CARTON_C_ENUM(carton_dtype){
    CARTON_DTYPE_FLOAT32 = 0, CARTON_DTYPE_FLOAT64 = 1, CARTON_DTYPE_STRING = 2,
    CARTON_DTYPE_INT8 = 3,    CARTON_DTYPE_INT16 = 4,   CARTON_DTYPE_INT32 = 5,
    CARTON_DTYPE_INT64 = 6,   CARTON_DTYPE_UINT8 = 7,   CARTON_DTYPE_UINT16 = 8,
    CARTON_DTYPE_UINT32 = 9,  CARTON_DTYPE_UINT64 = 10} carton_dtype;

/* The dtype as carton.toml spells it ("float32", "string", "uint64"), or
 * NULL for a value that is not a carton_dtype. Static storage. Never
 * fails. */
CARTON_C_EXPORT const char* carton_dtype_name(carton_dtype dtype);

/* Bytes per element: 1, 2, 4 or 8; 0 for CARTON_DTYPE_STRING and for a
 * value that is not a carton_dtype. Never fails. */
CARTON_C_EXPORT size_t carton_dtype_size(carton_dtype dtype);

/* The dtype spelled `name` ("float32", ...). Errors: INVALID_ARGUMENT for
 * NULL arguments or an unknown name (the message lists the names). */
CARTON_C_EXPORT carton_status carton_dtype_parse(const char* name, carton_dtype* out);

/* ------------------------------------------------------------------------
 * Tensors: a map of named tensors (inputs, outputs, safetensors files)
 * ------------------------------------------------------------------------ */

/* An ordered map of uniquely named tensors: the inputs given to
 * carton_infer, the outputs it returns, the tensors of a safetensors file.
 * Tensors are read back by index (0 .. count-1, in the order they were
 * added or returned) or found by name. Not thread-safe (see THREADS). */
typedef struct carton_tensors carton_tensors;

/* A new, empty map in *out (free with carton_tensors_free).
 * Errors: INVALID_ARGUMENT (out is NULL). */
CARTON_C_EXPORT carton_status carton_tensors_new(carton_tensors** out);

/* Frees the map, its tensors and every view read from it. NULL is a no-op.
 * Buffers the caller lent (carton_tensors_add) are released, not freed. */
CARTON_C_EXPORT void carton_tensors_free(carton_tensors* tensors);

/* Adds a numeric tensor named `name` (a non-empty UTF-8 string, copied)
 * of `rank` dimensions `shape[0..rank-1]` (shape may be NULL when rank is
 * 0: a scalar). `data` points at element [0, ..., 0]; it may be NULL only
 * when the tensor has no elements.
 *
 * `strides` (may be NULL: C order, contiguous) gives, per dimension, the
 * distance between consecutive indices IN ELEMENTS, not bytes (as DLPack;
 * numpy's byte strides divided by the item size). Strides may be zero or
 * negative. Dimensions of size 1 may have any stride.
 *
 * Borrowing: a contiguous tensor (strides NULL, or equal to C order) is
 * not copied: the map borrows `data`, which must stay valid and unchanged
 * until the map is freed (carton_infer copies it once, into the runner's
 * shared memory). A non-contiguous tensor is gathered once, now, into a
 * buffer the map owns; `data` may be reused as soon as this returns.
 * REQUIRES: every element the shape and strides address is readable.
 *
 * Errors: INVALID_ARGUMENT (a NULL argument, an empty or non-UTF-8 name,
 * a name already in the map, CARTON_DTYPE_STRING (use
 * carton_tensors_add_strings) or a value that is not a dtype, an element
 * count or byte size that overflows, strides whose offsets overflow). */
CARTON_C_EXPORT carton_status carton_tensors_add(carton_tensors* tensors, const char* name,
                                                 carton_dtype dtype, const void* data, size_t rank,
                                                 const uint64_t* shape, const int64_t* strides);

/* Adds a string tensor: `strings` holds numel (the product of the shape;
 * 1 for a scalar) pointers to NUL-terminated UTF-8 strings, in C order.
 * The strings are copied; `strings` may be NULL when numel is 0.
 * Errors: INVALID_ARGUMENT (a NULL argument or string, an empty, non-UTF-8
 * or duplicate name, a string that is not valid UTF-8: the message gives
 * its index and the offset of the first bad byte, an element count that
 * overflows). */
CARTON_C_EXPORT carton_status carton_tensors_add_strings(carton_tensors* tensors, const char* name,
                                                         const char* const* strings, size_t rank,
                                                         const uint64_t* shape);

/* The number of tensors in the map. Errors: INVALID_ARGUMENT (NULL). */
CARTON_C_EXPORT carton_status carton_tensors_count(const carton_tensors* tensors, size_t* count);

/* The index of the tensor named `name`. Errors: INVALID_ARGUMENT (NULL),
 * NOT_FOUND (no tensor of that name; the message lists the names). */
CARTON_C_EXPORT carton_status carton_tensors_find(const carton_tensors* tensors, const char* name,
                                                  size_t* index);

/* The accessors below read tensor `index` (0 <= index < count). Every
 * pointer they return borrows from the map (valid until it is freed).
 * Errors: INVALID_ARGUMENT (NULL, or index out of range). */

/* Its name (NUL-terminated UTF-8). */
CARTON_C_EXPORT carton_status carton_tensors_name(const carton_tensors* tensors, size_t index,
                                                  const char** name);

/* Its dtype. */
CARTON_C_EXPORT carton_status carton_tensors_dtype(const carton_tensors* tensors, size_t index,
                                                   carton_dtype* dtype);

/* Its rank and shape (`*shape` is NULL when the rank is 0). */
CARTON_C_EXPORT carton_status carton_tensors_shape(const carton_tensors* tensors, size_t index,
                                                   size_t* rank, const uint64_t** shape);

/* A numeric tensor's elements, contiguous, in C order, and their size in
 * bytes (numel * carton_dtype_size). `*data` may be NULL when the size is
 * 0. Outputs of carton_infer point into the runner's shared memory, which
 * stays mapped while the map lives; the bytes are read-only.
 * Errors: also INVALID_ARGUMENT for a string tensor (read it with
 * carton_tensors_string). */
CARTON_C_EXPORT carton_status carton_tensors_data(const carton_tensors* tensors, size_t index,
                                                  const void** data, size_t* size);

/* Element `element` (0 <= element < numel, C order) of a string tensor:
 * NUL-terminated, and its length in bytes (`length` may be NULL; a string
 * from a runner or a file may hold NUL bytes, which the length counts).
 * Errors: also INVALID_ARGUMENT for a numeric tensor, or element out of
 * range. */
CARTON_C_EXPORT carton_status carton_tensors_string(const carton_tensors* tensors, size_t index,
                                                    size_t element, const char** string,
                                                    size_t* length);

/* ------------------------------------------------------------------------
 * Safetensors files (as `carton infer` reads --input and writes --output)
 * ------------------------------------------------------------------------ */

/* Adds every tensor of the safetensors file at `path` to `into` (in the
 * order the file records, else by name). String tensors use carton's
 * convention for them (runner/PROTOCOL.md "Tensors"), so whatever
 * carton_safetensors_write wrote reads back. The file is mapped: numeric
 * tensors view it (no copy) for as long as `into` lives. Input is
 * untrusted. On error `into` is unchanged.
 * Errors: INVALID_ARGUMENT (NULL, a name already in `into`), NOT_FOUND, IO,
 * CORRUPT (the message names the file and the rule), UNSUPPORTED (a dtype
 * carton has no type for). */
CARTON_C_EXPORT carton_status carton_safetensors_read(const char* path, carton_tensors* into);

/* Adds one tensor given as `carton infer --input` takes it:
 * "NAME=FILE.safetensors[:TENSOR]": the file's tensor TENSOR, else its
 * tensor NAME, else its only tensor; added under NAME. Errors: as
 * carton_safetensors_read; INVALID_ARGUMENT for a spec without "NAME=";
 * NOT_FOUND for a missing tensor (the message lists the file's tensors). */
CARTON_C_EXPORT carton_status carton_safetensors_read_arg(const char* spec, carton_tensors* into);

/* Writes every tensor of `tensors` to a safetensors file at `path`,
 * atomically (a temporary file renamed into place; nothing is left on
 * error), byte for byte what `carton infer --output` writes for the same
 * tensors. Errors: INVALID_ARGUMENT (NULL), IO. */
CARTON_C_EXPORT carton_status carton_safetensors_write(const char* path,
                                                       const carton_tensors* tensors);

/* ------------------------------------------------------------------------
 * Loading a model
 * ------------------------------------------------------------------------ */

/* How carton_load loads and starts a model. Defaults: the first GPU when
 * there is one, else the CPU; the runner carton.toml names, no runner
 * options, the default cache. */
typedef struct carton_load_options carton_load_options;

/* New options with the defaults in *out (free with
 * carton_load_options_free). Errors: INVALID_ARGUMENT (out is NULL). */
CARTON_C_EXPORT carton_status carton_load_options_new(carton_load_options** out);

/* NULL is a no-op. */
CARTON_C_EXPORT void carton_load_options_free(carton_load_options* options);

/* The device the model's runner runs on: "cpu"; a GPU's index as the CUDA
 * driver counts them ("1" or "cuda:1", as `carton devices` lists them); a
 * GPU's or MIG instance's UUID ("GPU-<uuid>", "MIG-<uuid>", as nvidia-smi -L
 * prints them). NULL is the default: the first GPU when the driver lists
 * one, else the CPU. The runner is started with CUDA_VISIBLE_DEVICES naming
 * that device alone (inside it, the GPU is cuda:0). An index (and a UUID)
 * is resolved by carton_load, which fails with NOT_FOUND when there is no
 * such GPU ("device \"cuda:1\": no GPU (...)"; a UUID where the driver
 * lists no GPU and CUDA_VISIBLE_DEVICES is unset). Errors: INVALID_ARGUMENT (options
 * is NULL, an empty name, a name of none of these forms: "device \"gpu0\":
 * not a device (cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)"). */
CARTON_C_EXPORT carton_status carton_load_options_set_device(carton_load_options* options,
                                                             const char* device);

/* Replaces carton.toml's runner_name for selecting the runner (NULL: use
 * carton.toml's). Errors: INVALID_ARGUMENT (options is NULL, an empty
 * name). */
CARTON_C_EXPORT carton_status carton_load_options_set_runner_name(carton_load_options* options,
                                                                  const char* runner_name);

/* Replaces carton.toml's required_framework_version for selecting the
 * runner: a semver requirement such as ">=1.13" (NULL: use carton.toml's).
 * Errors: INVALID_ARGUMENT (options is NULL, a requirement that does not
 * parse). */
CARTON_C_EXPORT carton_status carton_load_options_set_framework_version(
    carton_load_options* options, const char* required_framework_version);

/* Adds a runner option "KEY=VALUE", overriding [runner.opts] KEY as
 * `carton infer --opt` does (the last one given for a KEY wins).
 * Errors: INVALID_ARGUMENT (NULL, no '=' or an empty KEY). */
CARTON_C_EXPORT carton_status carton_load_options_add_runner_opt(carton_load_options* options,
                                                                 const char* key_value);

/* The cache directory cartons are materialized into (NULL: the default,
 * see RUNNERS above). Errors: INVALID_ARGUMENT
 * (options is NULL, an empty directory name). */
CARTON_C_EXPORT carton_status carton_load_options_set_cache_dir(carton_load_options* options,
                                                                const char* cache_dir);

/* Lenient mode (nonzero; 0, the default, is strict): inputs that do not fit
 * the carton's declared [[input]]s are a warning on stderr ("carton:
 * warning: ..."), and the model runs anyway, as `carton infer --lenient`
 * and carton.load(..., lenient=True) do: for cartons whose declarations do
 * not hold. Errors: INVALID_ARGUMENT (options is NULL). */
CARTON_C_EXPORT carton_status carton_load_options_set_lenient(carton_load_options* options,
                                                              int lenient);

/* A loaded model and its runner process (see THREADS: thread-safe). */
typedef struct carton_model carton_model;

/* Loads `location` (a .carton path, an unpacked carton directory, an
 * http(s):// URL or an oci://HOST/REPO[:TAG][@sha256:DIGEST] reference)
 * through the manifest-hash cache, selects the runner it needs and
 * starts it in serve mode. `options` may be NULL (the defaults); it is
 * not kept. Input is untrusted. Blocks until the runner reports the model
 * loaded (at most 5 minutes).
 * Errors: INVALID_ARGUMENT (NULL, a location that does not parse, a bad
 * framework requirement), NOT_FOUND (no such carton; no runner fits: the
 * message lists every runner found and why each was rejected),
 * CORRUPT (a damaged carton, naming the file), UNSUPPORTED, IO, NETWORK,
 * INTERNAL (the runner crashed or hung while loading; the message names
 * it and ends with its last stderr lines), and the runner's own load
 * error with its code. */
CARTON_C_EXPORT carton_status carton_load(const char* location, const carton_load_options* options,
                                          carton_model** out);

/* Ends the runner process (asking it to exit, then killing it if it
 * lingers) and frees the model. Output maps from carton_infer stay valid:
 * they keep their shared memory mapped. NULL is a no-op. */
CARTON_C_EXPORT void carton_model_free(carton_model* model);

/* Asks the runner to exit and waits for it; later carton_infer and
 * carton_self_test calls fail with INVALID_ARGUMENT ("the model is
 * closed"). Closing twice is fine. The model must still be freed.
 * Errors: INVALID_ARGUMENT (NULL), INTERNAL (the runner exited badly). */
CARTON_C_EXPORT carton_status carton_model_close(carton_model* model);

/* Runs the model once. `inputs` are checked against the model's declared
 * [[input]]s first (every declared input present once, with its dtype and
 * a shape that fits, no undeclared input; a carton that declares none
 * takes any), as `carton infer` checks them, then copied once into the
 * runner's shared memory. On success *outputs is a new map the caller owns
 * (free with carton_tensors_free), named as the model names them; its
 * numeric tensors view the runner's output memory, which stays valid and
 * unchanged while the map lives, also after the model is freed.
 * Errors: INVALID_ARGUMENT (NULL, a closed model, inputs that do not fit:
 * the message names the carton, the input and the mismatch, and lists the
 * declared inputs), INTERNAL (the runner crashed, hung (1 minute) or broke
 * the protocol: it is killed and later calls fail), and the runner's own
 * error with its code. */
CARTON_C_EXPORT carton_status carton_infer(carton_model* model, const carton_tensors* inputs,
                                           carton_tensors** outputs);

/* ------------------------------------------------------------------------
 * Model information
 * ------------------------------------------------------------------------ */

/* What carton.toml and MANIFEST say about a model. Immutable; its strings
 * borrow from it. */
typedef struct carton_info carton_info;

/* The information of a loaded model, in *out (free with
 * carton_info_free). Errors: INVALID_ARGUMENT (NULL). */
CARTON_C_EXPORT carton_status carton_model_info(carton_model* model, carton_info** out);

/* The information of a carton without loading it: only its metadata is
 * read (a few kilobytes by range requests for a URL; for an oci://
 * reference the small blobs). `location` as carton_load takes it, but not
 * a directory. Input is untrusted.
 * Errors: INVALID_ARGUMENT (NULL, a bad location, a directory), NOT_FOUND,
 * CORRUPT, UNSUPPORTED, IO, NETWORK. */
CARTON_C_EXPORT carton_status carton_info_read(const char* location, carton_info** out);

/* NULL is a no-op. */
CARTON_C_EXPORT void carton_info_free(carton_info* info);

/* The text fields of carton_info_string. */
typedef CARTON_C_ENUM(carton_info_field){
    CARTON_INFO_MODEL_NAME = 0, CARTON_INFO_SHORT_DESCRIPTION = 1,
    CARTON_INFO_MODEL_DESCRIPTION = 2, CARTON_INFO_LICENSE = 3, CARTON_INFO_REPOSITORY = 4,
    CARTON_INFO_HOMEPAGE = 5, CARTON_INFO_RUNNER_NAME = 6, /* carton.toml's, never NULL */
    CARTON_INFO_REQUIRED_FRAMEWORK_VERSION = 7,            /* carton.toml's, never NULL */
    /* The manifest hash: 64 lowercase hex digits (NULL for an unpacked
     * directory without MANIFEST). */
    CARTON_INFO_MANIFEST_HASH = 8} carton_info_field;

/* A text field, NUL-terminated UTF-8; *value is NULL when carton.toml
 * does not give it. Errors: INVALID_ARGUMENT (NULL, a value that is not a
 * carton_info_field). */
CARTON_C_EXPORT carton_status carton_info_string(const carton_info* info, carton_info_field field,
                                                 const char** value);

/* Which list of tensor specs: the [[input]]s or the [[output]]s. */
typedef CARTON_C_ENUM(carton_io){CARTON_INPUTS = 0, CARTON_OUTPUTS = 1} carton_io;

/* How many [[input]]s or [[output]]s carton.toml declares.
 * Errors: INVALID_ARGUMENT (NULL, a bad carton_io). */
CARTON_C_EXPORT carton_status carton_info_tensor_count(const carton_info* info, carton_io io,
                                                       size_t* count);

/* The accessors below read spec `index` (0 <= index < count) of `io`.
 * Errors: INVALID_ARGUMENT (NULL, a bad carton_io, index out of range). */

/* Its name. */
CARTON_C_EXPORT carton_status carton_info_tensor_name(const carton_info* info, carton_io io,
                                                      size_t index, const char** name);

/* Its dtype. */
CARTON_C_EXPORT carton_status carton_info_tensor_dtype(const carton_info* info, carton_io io,
                                                       size_t index, carton_dtype* dtype);

/* Its description (NULL when it has none). */
CARTON_C_EXPORT carton_status carton_info_tensor_description(const carton_info* info, carton_io io,
                                                             size_t index,
                                                             const char** description);

/* What a declared shape allows. */
typedef CARTON_C_ENUM(carton_shape_kind){
    CARTON_SHAPE_ANY = 0,    /* shape = "*": any rank, any dimensions */
    CARTON_SHAPE_SYMBOL = 1, /* shape = "name": one whole shape, the same wherever named */
    CARTON_SHAPE_DIMS = 2    /* shape = [d0, d1, ...]: this rank (0: a scalar) */
} carton_shape_kind;

/* One dimension of a CARTON_SHAPE_DIMS shape. */
typedef CARTON_C_ENUM(carton_dim_kind){
    CARTON_DIM_FIXED = 0,  /* a number */
    CARTON_DIM_SYMBOL = 1, /* "name": the same size wherever the name is used */
    CARTON_DIM_ANY = 2     /* "*": any size */
} carton_dim_kind;

/* Its declared shape: the kind; for CARTON_SHAPE_DIMS the rank in *rank
 * (else 0); for CARTON_SHAPE_SYMBOL the symbol in *symbol (else NULL).
 * `rank` and `symbol` may be NULL. */
CARTON_C_EXPORT carton_status carton_info_tensor_shape(const carton_info* info, carton_io io,
                                                       size_t index, carton_shape_kind* kind,
                                                       size_t* rank, const char** symbol);

/* Dimension `dim` (0 <= dim < rank) of a CARTON_SHAPE_DIMS shape: its
 * kind; for CARTON_DIM_FIXED the size in *size (else 0); for
 * CARTON_DIM_SYMBOL the name in *symbol (else NULL). `size` and `symbol`
 * may be NULL. Errors: also INVALID_ARGUMENT when the shape is not
 * CARTON_SHAPE_DIMS or dim is out of range. */
CARTON_C_EXPORT carton_status carton_info_tensor_dim(const carton_info* info, carton_io io,
                                                     size_t index, size_t dim,
                                                     carton_dim_kind* kind, uint64_t* size,
                                                     const char** symbol);

/* How many [[self_test]]s carton.toml declares. Errors: INVALID_ARGUMENT
 * (NULL). */
CARTON_C_EXPORT carton_status carton_info_self_test_count(const carton_info* info, size_t* count);

/* The name of self-test `index`: its `name`, or "self_test[<index>]" when
 * it has none (as carton_self_test reports it). Errors: INVALID_ARGUMENT
 * (NULL, index out of range). */
CARTON_C_EXPORT carton_status carton_info_self_test_name(const carton_info* info, size_t index,
                                                         const char** name);

/* ------------------------------------------------------------------------
 * Self-tests
 * ------------------------------------------------------------------------ */

/* The outcome of a model's self-tests. Immutable; strings borrow from it. */
typedef struct carton_self_test_report carton_self_test_report;

/* Runs every [[self_test]] of the model through its runner and compares
 * each output with expected_out: numbers within |actual - expected| <=
 * atol + rtol * |expected| (`carton self-test` uses rtol 1e-5, atol 1e-8),
 * strings exactly. A test that fails (a wrong output, an inference error)
 * is a verdict in the report, not an error. A model without self-tests
 * passes with an empty report.
 * Errors: INVALID_ARGUMENT (NULL, a closed model, rtol or atol negative or
 * NaN), INTERNAL (the runner crashed or hung: trouble, not a verdict). */
CARTON_C_EXPORT carton_status carton_self_test(carton_model* model, double rtol, double atol,
                                               carton_self_test_report** out);

/* NULL is a no-op. */
CARTON_C_EXPORT void carton_self_test_report_free(carton_self_test_report* report);

/* Whether every test passed (1) or not (0). Errors: INVALID_ARGUMENT
 * (NULL). */
CARTON_C_EXPORT carton_status carton_self_test_report_passed(const carton_self_test_report* report,
                                                             int* passed);

/* How many tests ran. Errors: INVALID_ARGUMENT (NULL). */
CARTON_C_EXPORT carton_status carton_self_test_report_count(const carton_self_test_report* report,
                                                            size_t* count);

/* Test `index`: its name (as carton_info_self_test_name), whether it
 * passed, and a message: for a test whose inference failed, "inference
 * failed: <error>"; otherwise one line per output, "<name>: <what the
 * comparison found>" ("x: all 4 elements match", "y: 3 of 6 differ; ..."),
 * joined by "\n". `passed` and `message` may be NULL.
 * Errors: INVALID_ARGUMENT (NULL, index out of range). */
CARTON_C_EXPORT carton_status carton_self_test_report_test(const carton_self_test_report* report,
                                                           size_t index, const char** name,
                                                           int* passed, const char** message);

/* ------------------------------------------------------------------------
 * Packing, verifying, hashing
 * ------------------------------------------------------------------------ */

/* The size of a buffer for a manifest hash: 64 hex digits and a NUL. */
#define CARTON_HASH_HEX_SIZE 65

/* How carton_pack writes a carton. Defaults: compression "auto", the
 * method's default level, one thread per core, no describing fields. */
typedef struct carton_pack_options carton_pack_options;

/* New options with the defaults in *out (free with
 * carton_pack_options_free). Errors: INVALID_ARGUMENT (out is NULL). */
CARTON_C_EXPORT carton_status carton_pack_options_new(carton_pack_options** out);

/* NULL is a no-op. */
CARTON_C_EXPORT void carton_pack_options_free(carton_pack_options* options);

/* The compression: "stored", "deflate", "zstd" or "auto" (zstd where it
 * pays; small, incompressible and large files stored).
 * Errors: INVALID_ARGUMENT (NULL, another name). */
CARTON_C_EXPORT carton_status carton_pack_options_set_compression(carton_pack_options* options,
                                                                  const char* compression);

/* The compression level; 0 is the method's default (deflate 6, zstd 2).
 * Errors: INVALID_ARGUMENT (options is NULL). */
CARTON_C_EXPORT carton_status carton_pack_options_set_level(carton_pack_options* options,
                                                            int level);

/* Threads for hashing and compressing; 0 is one per core. The output is
 * the same for every value. Errors: INVALID_ARGUMENT (options is NULL). */
CARTON_C_EXPORT carton_status carton_pack_options_set_threads(carton_pack_options* options,
                                                              unsigned threads);

/* Describes the model when the packed path has no carton.toml (a folder
 * of model files, or a single file): the runner that runs it and the
 * framework versions it needs (a semver requirement such as "=1.13.1" or
 * ">=2.0"), as `carton pack --runner --framework-version` does; compat
 * version 1. A path that has a carton.toml is packed as that file says.
 * Errors: INVALID_ARGUMENT (NULL, an empty runner name, a requirement that
 * does not parse). */
CARTON_C_EXPORT carton_status carton_pack_options_set_runner(
    carton_pack_options* options, const char* runner_name, const char* required_framework_version);

/* Packs `path` (a folder in the carton layout: model/, carton.toml,
 * optional tensor_data/ and misc/; any other folder; or a single file)
 * into the .carton `output`, written atomically (nothing is left there on
 * error) and deterministically (the same input gives the same bytes, as
 * `carton pack`). `options` may be NULL (the defaults). When
 * `manifest_hash` is not NULL it receives the new carton's manifest hash
 * (64 hex digits and a NUL; "" on error).
 * Errors: INVALID_ARGUMENT (NULL, no carton.toml and no runner given, an
 * output that is a directory), NOT_FOUND (no such path, or the output's
 * directory is missing), IO, UNSUPPORTED (content a carton cannot carry),
 * CORRUPT (an invalid carton.toml or tensor_data, a self-test naming a
 * missing tensor; one line per problem). */
CARTON_C_EXPORT carton_status carton_pack(const char* path, const char* output,
                                          const carton_pack_options* options,
                                          char manifest_hash[CARTON_HASH_HEX_SIZE]);

/* The manifest hash of a carton (the SHA-256 of its MANIFEST, which
 * identifies the carton's contents) into `manifest_hash` (64 hex digits
 * and a NUL; "" on error). Reads only the central directory and MANIFEST.
 * `location` as carton_info_read takes it. Input is untrusted.
 * Errors: INVALID_ARGUMENT (NULL, a bad location), NOT_FOUND, CORRUPT,
 * UNSUPPORTED, IO, NETWORK. */
CARTON_C_EXPORT carton_status carton_hash(const char* location,
                                          char manifest_hash[CARTON_HASH_HEX_SIZE]);

/* What verifying found: every problem, not just the first. */
typedef struct carton_verify_report carton_verify_report;

/* Checks every rule of the format and every file's hash (`carton
 * verify`). A carton that breaks rules is not an error: the report lists
 * each problem. `location` as carton_info_read takes it (a URL is
 * downloaded first; an oci:// reference pulled into the cache). Input is
 * untrusted.
 * Errors (verification could not run): INVALID_ARGUMENT (NULL, a bad
 * location, a directory), NOT_FOUND, IO, NETWORK. */
CARTON_C_EXPORT carton_status carton_verify(const char* location, carton_verify_report** out);

/* NULL is a no-op. */
CARTON_C_EXPORT void carton_verify_report_free(carton_verify_report* report);

/* 1 when the carton has no problem, else 0. Errors: INVALID_ARGUMENT
 * (NULL). */
CARTON_C_EXPORT carton_status carton_verify_report_ok(const carton_verify_report* report, int* ok);

/* How many problems were found. Errors: INVALID_ARGUMENT (NULL). */
CARTON_C_EXPORT carton_status carton_verify_report_problem_count(const carton_verify_report* report,
                                                                 size_t* count);

/* Problem `index`: where (the entry or file at fault; "" for the archive
 * as a whole) and the rule broken with the values. Entry names come from
 * the archive and need not be UTF-8. `where` and `message` may be NULL.
 * Errors: INVALID_ARGUMENT (NULL, index out of range). */
CARTON_C_EXPORT carton_status carton_verify_report_problem(const carton_verify_report* report,
                                                           size_t index, const char** where,
                                                           const char** message);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CARTON_C_CARTON_H_ */
