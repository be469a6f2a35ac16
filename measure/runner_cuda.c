/* The CUDA runner: PTX from the cuda backend, on device 0 through the
 * CUDA driver API (targets' mlc_cuda_load/call: libcuda.so.1 opened with dlopen,
 * so workers build and start on machines without it). The launch extents
 * come from the `// mlc.launch SYMBOL grid=X,Y,Z block=X,Y,Z shared=BYTES`
 * line the backend writes for each kernel. Times are CUDA events' (the
 * median of `number` launches per repeat); host interference does not
 * apply to them, so a timing is never marked disturbed.
 *
 * On machines without a GPU (CI) the tests check only that the missing
 * driver or device is reported; tools/gpu_check.sh runs it on one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "measure/runner_internal.h"
#include "targets/targets.h"

#include <string.h>

static bool cuda_owns(const void *obj, size_t len) {
  static const char MARK[] = "// mlc.launch ";
  return len >= 4 && memcmp(obj, "\x7f" "ELF", 4) != 0 && memmem(obj, len, MARK, sizeof MARK - 1);
}

static bool cuda_available(mlc_error *err) {
  return mlc_cuda_available(err) || mlc_error_prefix(err, "no CUDA device");
}

static void cuda_unload(void *p) { mlc_cuda_unload(p); }

/* The PTX loaded once (the driver compiles it for the device here), then
 * called and timed as often as asked. */
static void *cuda_load(const void *obj, size_t len, const char *symbol, mlc_error *err) {
  char *text = mlc_xmalloc(len + 1); /* the driver wants NUL-terminated text */
  memcpy(text, obj, len);
  text[len] = 0;
  mlc_gpu_launch launch;
  mlc_cuda_kernel *k = NULL;
  mlc_object ptx = {text, len};
  if (mlc_cuda_ptx_launch(&ptx, symbol, &launch, err)) k = mlc_cuda_load(&ptx, symbol, &launch, err);
  mlc_free(text);
  return k;
}

static bool cuda_call(void *p, int n, mlc_array *args, int32_t *rc, mlc_error *err) {
  *rc = 0;
  return mlc_cuda_call(p, n, args, 0, 0, NULL, err);
}

/* Each repeat: the median of `number` launches (one warm-up launch before
 * the first repeat). */
static bool cuda_time(void *p, const run_req *q, mlc_array *args, double *secs, timing_watch *w,
                      int *retimes, mlc_error *err) {
  *w = (timing_watch){.caller_ratio = 1, .cpu_ratio = 1};
  *retimes = 0;
  for (uint32_t r = 0; r < q->repeat; r++) {
    double ms;
    if (!mlc_cuda_call(p, q->n_args, args, r == 0 ? 1 : 0, (int)q->number, &ms, err)) return false;
    secs[r] = ms * 1e-3;
  }
  return true;
}

/* CUDA events time on the device, where builders on the host do not
 * disturb; one launch of a fast kernel lasts microseconds, so each repeat
 * is the median of 10. The reference (the unscheduled kernel, on the host
 * CPU) is computed by the runner within its first candidate's time:
 * 1024^3 matmul takes 20-30 s on some hosts. */
static void cuda_measure_defaults(mlc_measure_opts *o) {
  o->pause_builders = false;
  o->number = 10;
  o->run_timeout_s = 120;
}

const runner_impl runner_cuda = {
    .name = "cuda",
    .owns = cuda_owns,
    .available = cuda_available,
    .load = cuda_load,
    .call = cuda_call,
    .time = cuda_time,
    .unload = cuda_unload,
    .measure_defaults = cuda_measure_defaults,
};
