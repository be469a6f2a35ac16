/* libFuzzer harness for the .npy reader: any bytes load or are refused;
 * what loads has as many elements of its dtype as its shape says, and a
 * bool array holds only 0 and 1. */
#include "fuzz.h"
#include "frontend/frontend.h"
#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_error err;
  mlc_gtype t;
  unsigned char *v = mlc_npy_parse("fuzz.npy", data, size, &t, &err);
  if (v) {
    int64_t n = mlc_gtype_numel(&t);
    if (n < 0) fuzz_fail("a loaded array has no element count", "", "");
    /* Touch every byte: ASan checks the buffer holds them all. */
    int64_t bytes = n * mlc_dtype_bytes(t.dtype);
    volatile unsigned sum = 0;
    for (int64_t i = 0; i < bytes; i++) {
      if (t.dtype == MLC_BOOL && v[i] > 1) fuzz_fail("a loaded bool is not 0 or 1", "", "");
      sum += v[i];
    }
    mlc_free(v);
  }
  return 0;
}
