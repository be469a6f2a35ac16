/* mlc_parallel_for on OpenMP (GCC's libgomp, the one OpenMP runtime of the
 * process: XGBoost links it too). */
#include "targets/runtime/mlcrt.h"

#include <omp.h>
#include <stdlib.h>

int mlc_rt_num_threads(int32_t num_threads) {
  /* getenv on every call: cheap next to starting a parallel region, and a
   * test or tool may change the variable between runs. */
  const char *env = getenv("MLC_NUM_THREADS");
  if (env && *env) {
    long v = strtol(env, NULL, 10);
    if (v > 0) return v > 1024 ? 1024 : (int)v;
  }
  if (num_threads > 0) return num_threads;
  return omp_get_max_threads();
}

void mlc_parallel_for(int64_t n, void (*fn)(int64_t i, void *closure), void *closure,
                      int32_t num_threads) {
  int nt = mlc_rt_num_threads(num_threads);
  if (nt > n) nt = (int)n;
  if (nt <= 1 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; i++) fn(i, closure);
    return;
  }
  /* Dynamic chunks of about an eighth of a thread's share: on a shared
   * machine a thread that loses its core for a while then takes fewer
   * chunks instead of holding up the whole loop (with a static split the
   * loop ends when the slowest thread does). */
  int64_t chunk = n / ((int64_t)nt * 8);
  if (chunk < 1) chunk = 1;
#pragma omp parallel for num_threads(nt) schedule(dynamic, chunk)
  for (int64_t i = 0; i < n; i++) fn(i, closure);
}
