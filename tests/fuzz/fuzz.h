/* Shared by the libFuzzer harnesses in tests/fuzz/ (built by `make fuzz`
 * with clang -fsanitize=fuzzer,address,undefined). A harness gets any
 * bytes: every library call must return a result or an error message,
 * never crash, leak, hang or read out of bounds. A property that does not
 * hold (a round trip that differs) traps, so libFuzzer saves the input. */
#ifndef MLC_FUZZ_H
#define MLC_FUZZ_H

#include "base/base.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Tensors of at most 2^22 elements and 16 MiB: the product accepts up to
 * 8 GiB, but a harness must finish each input within libFuzzer's timeout
 * (folding a 3 GB weight takes half a minute). Defined in each harness's
 * file; replay_main.c (FUZZ_REPLAY_MAIN) calls it as libFuzzer does. */
#ifndef FUZZ_REPLAY_MAIN
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  mlc_set_tensor_limits(INT64_C(1) << 22, INT64_C(16) << 20);
  return 0;
}
#endif

/* The bytes as a NUL-terminated string (mlc_free); parsers taking C
 * strings stop at an embedded NUL, which is fine. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = mlc_xmalloc(size + 1);
  if (size) memcpy(s, data, size);
  s[size] = 0;
  return s;
}

/* A broken property: print both sides and trap. */
static inline void fuzz_fail(const char *what, const char *a, const char *b) {
  fprintf(stderr, "fuzz: %s\n--- first:\n%s\n--- second:\n%s\n", what, a, b);
  __builtin_trap();
}

#endif
