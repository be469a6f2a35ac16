/* libFuzzer harness for a list of input shapes ("x=1,16;..."), as the
 * model API and Python's load(input_shapes=...) pass them
 * (mlc_graph_shape_list, then the ONNX loader): any text loads the test
 * model with a symbolic batch or is refused with a message; what loads
 * has inputs of positive extents. */
#include "fuzz.h"
#include "frontend/frontend.h"
#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_arena *a = mlc_arena_new();
  char *text = mlc_arena_alloc(a, size + 1);
  memcpy(text, data, size);
  text[size] = 0;
  mlc_error err = {{0}};
  mlc_gmodule *m = mlc_graph_load_onnx(MLC_SOURCE_DIR "/tests/onnx/mlp_sym.onnx",
                                       mlc_graph_shape_list(a, text), &err);
  if (!m && !err.msg[0]) fuzz_fail("a refused shape list has no message", text, "");
  const mlc_gfunc *f = m ? mlc_graph_main(m) : NULL;
  for (int i = 0; f && i < f->n_params; i++)
    for (int d = 0; d < f->params[i]->type.ndim; d++)
      if (f->params[i]->type.shape[d] <= 0) fuzz_fail("an input extent is not positive", text, "");
  mlc_graph_free(m);
  mlc_arena_free(a);
  return 0;
}
