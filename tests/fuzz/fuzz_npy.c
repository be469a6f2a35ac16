/* libFuzzer harness for the .npy reader: any bytes load or are refused;
 * what loads has as many elements as its shape says, and writes back. */
#include "fuzz.h"
#include "frontend/frontend.h"
#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_error err;
  mlc_gtype t;
  float *v = mlc_npy_parse("fuzz.npy", data, size, &t, &err);
  if (v) {
    int64_t n = mlc_gtype_numel(&t);
    if (n < 0) fuzz_fail("a loaded array has no element count", "", "");
    /* Touch every element: ASan checks the buffer holds them all. */
    volatile float sum = 0;
    for (int64_t i = 0; i < n; i++) sum += v[i];
    mlc_free(v);
  }
  return 0;
}
