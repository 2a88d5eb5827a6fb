/* infer: runs a carton on inputs read from safetensors files and writes
 * its outputs to a safetensors file, through carton's C API only
 * (`pkg-config --cflags --libs carton-c`). The output is byte for byte
 * what `carton infer MODEL --input ... --output OUT` writes.
 *
 *   infer MODEL OUT.safetensors NAME=IN.safetensors[:TENSOR]...
 *
 * MODEL is a .carton path, an unpacked carton directory, an http(s) URL or
 * an oci:// reference. Each input is the file's tensor TENSOR, else its
 * tensor NAME, else its only tensor. Exits 0 on success, 1 with the
 * library's message on stderr on any error, 2 on a usage error. */
#include <carton/c/carton.h>
#include <stdio.h>

static void print_outputs(const carton_tensors* outputs) {
  size_t count = 0;
  size_t i;
  carton_tensors_count(outputs, &count);
  for (i = 0; i < count; ++i) {
    const char* name = NULL;
    carton_dtype dtype = CARTON_DTYPE_FLOAT32;
    size_t rank = 0;
    size_t d;
    const uint64_t* shape = NULL;
    carton_tensors_name(outputs, i, &name);
    carton_tensors_dtype(outputs, i, &dtype);
    carton_tensors_shape(outputs, i, &rank, &shape);
    fprintf(stderr, "output %s: %s [", name, carton_dtype_name(dtype));
    for (d = 0; d < rank; ++d) {
      fprintf(stderr, "%s%llu", d ? ", " : "", (unsigned long long)shape[d]);
    }
    fprintf(stderr, "]\n");
  }
}

/* Reads the inputs, loads the model, runs it and writes the outputs.
 * Returns the first failing call's status. */
static carton_status run(int argc, char** argv) {
  carton_tensors* inputs = NULL;
  carton_tensors* outputs = NULL;
  carton_model* model = NULL;
  int i;
  carton_status s = carton_tensors_new(&inputs);
  for (i = 3; s == CARTON_OK && i < argc; ++i) s = carton_safetensors_read_arg(argv[i], inputs);
  if (s == CARTON_OK) s = carton_load(argv[1], NULL, &model);
  if (s == CARTON_OK) s = carton_infer(model, inputs, &outputs);
  if (s == CARTON_OK) s = carton_safetensors_write(argv[2], outputs);
  if (s == CARTON_OK) s = carton_model_close(model);
  if (s == CARTON_OK) print_outputs(outputs);
  /* The free functions leave carton_last_error() as it is. */
  carton_tensors_free(outputs);
  carton_model_free(model);
  carton_tensors_free(inputs);
  return s;
}

int main(int argc, char** argv) {
  carton_status s;
  if (argc < 3) {
    fprintf(stderr, "usage: infer MODEL OUT.safetensors NAME=IN.safetensors[:TENSOR]...\n");
    return 2;
  }
  if (carton_abi_version() != CARTON_C_ABI_VERSION) {
    fprintf(stderr, "infer: libcarton_c has ABI %u, this program was built for %d\n",
            carton_abi_version(), CARTON_C_ABI_VERSION);
    return 1;
  }
  s = run(argc, argv);
  if (s != CARTON_OK) {
    fprintf(stderr, "infer: %s: %s\n", carton_status_name(s), carton_last_error());
    return 1;
  }
  return 0;
}
