/* The C API's test cases; capi_test_main.c lists them for CTest. */
#ifndef CARTON_TESTS_CAPI_CAPI_TESTS_H_
#define CARTON_TESTS_CAPI_CAPI_TESTS_H_

void test_versions_and_names(void);
void test_null_arguments(void);
void test_tensor_map(void);
void test_strides(void);
void test_safetensors_files(void);
void test_safetensors_args_and_errors(void);
void test_out_of_memory(void);
void test_pack_and_hash(void);
void test_verify_and_corrupt(void);
void test_info(void);
void test_load_options(void);
void test_load_device(void);
void test_infer(void);
void test_wrong_inputs(void);
void test_every_dtype_round_trips(void);
void test_self_test(void);
void test_threads(void);
void test_model_error(void);

#endif /* CARTON_TESTS_CAPI_CAPI_TESTS_H_ */
