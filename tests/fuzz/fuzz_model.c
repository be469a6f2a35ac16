/* libFuzzer harness for model JSON and the whole graph pipeline: any text
 * loads or is refused with a message naming the node; a model that loads
 * (weights seeded, no files read) runs through every graph pass, each
 * verified, or fails with a message. */
#include "fuzz.h"
#include "frontend/frontend.h"
#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_parse("fuzz.json", (const char *)data, size, NULL, &err);
  if (m) {
    mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err);
    mlc_str out = {0};
    mlc_graph_print(&out, m, MLC_GRAPH_PRINT_TIR);
    mlc_str_free(&out);
  }
  mlc_graph_free(m);
  return 0;
}
