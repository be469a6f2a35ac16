/* Helpers the tests of compiled kernels share: build a function with the
 * LLVM backend and load it, time a loaded kernel. */
#ifndef MLC_TESTS_JIT_UTIL_H
#define MLC_TESTS_JIT_UTIL_H

#include "targets/targets.h"

/* Build g as `sym` for target text t; NULL with err when refused. (Two
 * live JIT objects need distinct symbols.) */
static inline mlc_jit_lib *build(const char *target, const mlc_prim_func *g, const char *sym, mlc_str *ir,
                                 mlc_error *err) {
  mlc_target t;
  mlc_object obj = {0};
  if (!mlc_target_parse(target, &t, err) || !mlc_target_build(&t, 1, &g, &sym, ir, &obj, err))
    return NULL;
  mlc_jit_lib *lib = mlc_jit_load(&obj, err);
  mlc_object_free(&obj);
  return lib;
}

/* Best of `reps` calls of a three-argument kernel, in seconds. */
static inline double best_time(mlc_kernel_fn fn, mlc_array *args, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = mlc_now_sec();
    (void)mlc_kernel_call(fn, 3, args);
    double t = mlc_now_sec() - t0;
    if (t < best) best = t;
  }
  return best;
}

#endif
