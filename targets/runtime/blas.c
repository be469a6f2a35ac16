/* The BLAS calls of library-offloaded kernels (the LibraryCall schedule
 * instruction, schedule/library.c): mlc_rt_sgemm runs one row-major
 * single-precision matrix product through OpenBLAS's cblas_sgemm.
 *
 * The library is found at the first call: a process linked with
 * -lopenblas has cblas_sgemm and openblas_set_num_threads already (found
 * with dlsym(RTLD_DEFAULT)); otherwise libopenblas.so.0 (or the file
 * MLC_BLAS_LIBRARY names: for tests) is opened with dlopen. So the tools,
 * which load kernels with the JIT, need no link-time dependency on
 * OpenBLAS, and an object written by mlc-compile links with libmlcrt.a
 * -ldl, plus -lopenblas where the library should be linked rather than
 * opened. This file is its own member of libmlcrt.a: a program that
 * calls no BLAS kernel does not pull it in.
 *
 * Threads: before each call OpenBLAS is told to use mlc_rt_num_threads(0)
 * threads (MLC_NUM_THREADS, else the CPUs this process may use), the count
 * mlc_parallel_for uses for a target whose core count is the machine's,
 * so a library call and a tuned kernel compete with the same cores.
 */
#include "targets/runtime/mlcrt.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CBLAS's enum values (cblas.h), fixed by the CBLAS standard. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c,
                         int ldc);
typedef void (*set_threads_fn)(int n);
typedef char *(*corename_fn)(void);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sgemm_fn sgemm;
static set_threads_fn set_threads;
static corename_fn corename;
static int threads_set; /* the count last given to set_threads (0: none yet) */
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static char load_error[512];

static void load(void) {
  sgemm = (sgemm_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "cblas_sgemm");
  set_threads = (set_threads_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  corename = (corename_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "openblas_get_corename");
  if (sgemm && set_threads) return;
  const char *env = getenv("MLC_BLAS_LIBRARY");
  const char *path = env && *env ? env : "libopenblas.so.0";
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "cannot open %s (%s); install OpenBLAS "
             "(libopenblas0) or set MLC_BLAS_LIBRARY", path, why ? why : "no reason given");
    sgemm = NULL;
    return;
  }
  sgemm = (sgemm_fn)(uintptr_t)dlsym(h, "cblas_sgemm");
  set_threads = (set_threads_fn)(uintptr_t)dlsym(h, "openblas_set_num_threads");
  corename = (corename_fn)(uintptr_t)dlsym(h, "openblas_get_corename");
  if (!sgemm || !set_threads) {
    snprintf(load_error, sizeof load_error, "%s has no %s: not OpenBLAS", path,
             sgemm ? "openblas_set_num_threads" : "cblas_sgemm");
    sgemm = NULL;
  }
}

const char *mlc_rt_blas_error(void) {
  pthread_once(&once, load);
  return sgemm ? "" : load_error;
}

const char *mlc_rt_blas_corename(void) {
  pthread_once(&once, load);
  const char *c = sgemm && corename ? corename() : NULL;
  return c ? c : "";
}

/* OpenBLAS 0.3.21 (Debian 12) knows no CPU newer than Cooper Lake: its
 * runtime detection takes a Sapphire/Emerald Rapids Xeon (family 6, model
 * 143/207) for a Prescott and runs SSE3 kernels, five times slower than
 * its AVX-512 ones there. */
const char *mlc_rt_blas_coretype(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return NULL;
}

static void use_threads(void) {
  int nt = mlc_rt_num_threads(0);
  pthread_mutex_lock(&threads_mu);
  if (nt != threads_set) {
    set_threads(nt);
    threads_set = nt;
  }
  pthread_mutex_unlock(&threads_mu);
}

int32_t mlc_rt_sgemm(int32_t trans_a, int32_t trans_b, int32_t m, int32_t n, int32_t k,
                     const float *a, int32_t lda, const float *b, int32_t ldb, float *c,
                     int32_t ldc, int32_t accumulate) {
  pthread_once(&once, load);
  if (!sgemm) {
    /* The caller (emitted code) ignores the status: a result that is NaN
     * everywhere cannot pass for a product. */
    for (int32_t i = 0; i < m; i++)
      for (int32_t j = 0; j < n; j++) c[(int64_t)i * ldc + j] = NAN;
    return -1;
  }
  use_threads();
  sgemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
        trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, m, n, k, 1.0f, a, lda, b, ldb,
        accumulate ? 1.0f : 0.0f, c, ldc);
  return 0;
}
