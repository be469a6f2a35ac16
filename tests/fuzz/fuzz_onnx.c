/* libFuzzer harness for the ONNX loader: any bytes must load or be refused
 * with a message, never crash, leak or read out of bounds.
 *
 *   make fuzz                       # build-fuzz/fuzz_onnx, seeds in build-fuzz/corpus
 *   build-fuzz/fuzz_onnx -max_total_time=600 build-fuzz/corpus
 *
 * Seeds: the conformance models (libonnx-testdata) and tests/onnx/. */
#include "fuzz.h"
#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const shapes[] = {"x=1,4", "input=1,3,8,8", NULL};
  mlc_error err;
  mlc_gmodule *m = mlc_graph_parse_onnx("fuzz.onnx", data, size, shapes, &err);
  mlc_graph_free(m);
  return 0;
}
