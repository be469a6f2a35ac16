/* model/model.h, the flat API python/mlc_tune calls: a model's inputs and
 * outputs described, compiled and run from raw pointers against its
 * stored output, exported, and refused with a message when it is not
 * compiled, the target is not a CPU or the file is missing. */
#include "frontend/frontend.h"
#include "model/model.h"
#include "targets/targets.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static void test_describe_compile_run(void) {
  mlc_error err;
  mlc_model *m = mlc_model_load("tests/onnx/tiny_cnn.onnx", NULL, NULL, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK_STREQ(mlc_model_name(m), "tiny_cnn");
  CHECK(mlc_model_num_inputs(m) == 1 && mlc_model_num_outputs(m) == 1);
  CHECK_STREQ(mlc_model_io_dtype(m, false, 0), "float32");
  CHECK(mlc_model_io_ndim(m, false, 0) == 4 && mlc_model_io_dim(m, false, 0, 1) == 3);
  CHECK(mlc_model_io_dim(m, false, 0, 4) == -1 && !mlc_model_io_name(m, true, 1));
  float x[1 * 3 * 8 * 8] = {0}, y[5];
  CHECK(!mlc_model_run(m, (void *[]){x}, (void *[]){y}, &err) && strstr(err.msg, "not compiled"));
  CHECK(!mlc_model_compile(m, "cuda -arch=sm_80", NULL, &err) && strstr(err.msg, "CPU only"));
  CHECK_MSG(mlc_model_compile(m, NULL, NULL, &err), "%s", err.msg);
  CHECK(mlc_model_num_kernels(m) > 0 && mlc_model_kernel_symbol(m, 0));
  CHECK_STREQ(mlc_model_kernel_schedule(m, 0), "default schedule");
  mlc_gtype ti, to;
  float *in = mlc_npy_read("tests/onnx/tiny_cnn_input.npy", &ti, &err);
  float *want = mlc_npy_read("tests/onnx/tiny_cnn_output.npy", &to, &err);
  CHECK(in && want && mlc_model_run(m, (void *[]){in}, (void *[]){y}, &err));
  double e = 0;
  for (int i = 0; in && want && i < 5; i++) e = fmax(e, fabs(y[i] - want[i]));
  CHECK_MSG(e < 1e-5, "max error %g", e);
  char obj[] = "/tmp/test_model_XXXXXX";
  int fd = mkstemp(obj);
  CHECK(fd >= 0 && mlc_model_export(m, obj, NULL, &err));
  if (fd >= 0) close(fd), unlink(obj);
  mlc_free(in);
  mlc_free(want);
  mlc_model_free(m);
}

static void test_missing_file(void) {
  mlc_error err;
  CHECK(!mlc_model_load("/nonexistent/x.onnx", NULL, NULL, &err) && strstr(err.msg, "x.onnx"));
  CHECK(!mlc_model_load("tests/onnx/lm/gpt2_tiny.onnx", NULL, "input_ids=1,5;;bogus", &err));
  mlc_model *m = mlc_model_load("tests/onnx/lm/gpt2_tiny.onnx", NULL, "input_ids=1,5", &err);
  CHECK_MSG(m && mlc_model_io_dim(m, false, 0, 1) == 5, "%s", err.msg);
  mlc_model_free(m);
}

int main(void) {
  RUN(test_describe_compile_run);
  RUN(test_missing_file);
  mlc_jit_shutdown();
  return test_summary();
}
