/* Running cuda kernels: the CUDA Driver API, opened with dlopen at run
 * time (no build-time dependency on CUDA).
 *
 * One primary context on device 0 for the process, retained on first use.
 * A launch that fails (an illegal address, a trap) leaves the context
 * unusable: it is reset, so the next run starts with a fresh one. Calls
 * are serialized by a mutex.
 *
 * The driver's entry points and its loader are targets/runtime/cuda_api.h,
 * shared with the runtime's launcher (targets/runtime/cuda_launch.c).
 *
 * Run on an NVIDIA H200 (driver 580, CUDA 13) with tools/gpu_check.sh
 * (docs/GPU.md); CI has no GPU, so there the tests check only that a
 * missing driver or device is reported cleanly.
 */
#include "targets/cuda_internal.h"
#include "targets/runtime/cuda_api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mlc_cuda_api cu;

static pthread_mutex_t cu_mu = PTHREAD_MUTEX_INITIALIZER;
static bool cu_loaded;
static char cu_load_error[512];
static CUdevice cu_dev;
static CUcontext cu_ctx; /* NULL until retained (again, after a reset) */

static const char *cu_err(CUresult r) { return mlc_cuda_api_error(&cu, r); }

static bool cu_check(CUresult r, const char *what, mlc_error *err) {
  if (r == 0) return true;
  return mlc_error_set(err, "%s: %s (CUDA error %d)", what, cu_err(r), r);
}

static bool load_driver(void) {
  return mlc_cuda_api_open(&cu, &cu_dev, cu_load_error, sizeof cu_load_error);
}

/* Driver loaded and the context current in this thread; caller holds cu_mu. */
static bool ensure_context(mlc_error *err) {
  if (!cu_loaded && !cu_load_error[0]) cu_loaded = load_driver();
  if (!cu_loaded) return mlc_error_set(err, "%s", cu_load_error);
  if (!cu_ctx && !cu_check(cu.primary_retain(&cu_ctx, cu_dev), "cuDevicePrimaryCtxRetain", err)) {
    cu_ctx = NULL;
    return false;
  }
  return cu_check(cu.ctx_set_current(cu_ctx), "cuCtxSetCurrent", err);
}

bool mlc_cuda_available(mlc_error *err) {
  pthread_mutex_lock(&cu_mu);
  bool ok = ensure_context(err);
  pthread_mutex_unlock(&cu_mu);
  return ok;
}

static int cmp_float(const void *x, const void *y) {
  float a = *(const float *)x, b = *(const float *)y;
  return a < b ? -1 : a > b;
}

static bool launch_once(CUfunction fn, const mlc_gpu_launch *l, void **params, mlc_error *err) {
  return cu_check(cu.launch(fn, (unsigned)l->grid[0], (unsigned)l->grid[1], (unsigned)l->grid[2],
                            (unsigned)l->block[0], (unsigned)l->block[1], (unsigned)l->block[2], 0,
                            NULL, params, NULL),
                  "cuLaunchKernel", err);
}

/* Median ms of `repeat` launches timed with events, after `warmup` more. */
static bool time_launches(CUfunction fn, const mlc_gpu_launch *l, void **params, int warmup,
                          int repeat, double *ms, mlc_error *err) {
  CUevent ev[2] = {NULL, NULL};
  float *t = mlc_xmalloc(sizeof(float) * (size_t)repeat);
  bool ok = cu_check(cu.event_create(&ev[0], 0), "cuEventCreate", err) &&
            cu_check(cu.event_create(&ev[1], 0), "cuEventCreate", err);
  for (int i = 0; ok && i < warmup; i++) ok = launch_once(fn, l, params, err);
  for (int i = 0; ok && i < repeat; i++) {
    ok = cu_check(cu.event_record(ev[0], NULL), "cuEventRecord", err) &&
         launch_once(fn, l, params, err) &&
         cu_check(cu.event_record(ev[1], NULL), "cuEventRecord", err) &&
         cu_check(cu.event_synchronize(ev[1]), "kernel run", err) &&
         cu_check(cu.event_elapsed(&t[i], ev[0], ev[1]), "cuEventElapsedTime", err);
  }
  if (ok) {
    qsort(t, (size_t)repeat, sizeof(float), cmp_float);
    *ms = t[repeat / 2];
  }
  for (int i = 0; i < 2; i++)
    if (ev[i]) cu.event_destroy(ev[i]);
  mlc_free(t);
  return ok;
}

/* A loaded module and its kernel, valid while the context it was loaded
 * in lives (a reset after a failed launch ends it: `generation`). */
struct mlc_cuda_kernel {
  CUmodule mod;
  CUfunction fn;
  mlc_gpu_launch launch;
  unsigned generation;
};

static unsigned cu_generation; /* bumped by each context reset */

static void reset_context(void) {
  cu.primary_reset(cu_dev);
  cu_ctx = NULL;
  cu_generation++;
}

mlc_cuda_kernel *mlc_cuda_load(const mlc_object *ptx, const char *symbol, const mlc_gpu_launch *l,
                               mlc_error *err) {
  pthread_mutex_lock(&cu_mu);
  mlc_cuda_kernel *k = NULL;
  char log[4096] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  if (ensure_context(err)) {
    CUresult r = cu.module_load_data_ex(&mod, ptx->data, 2, opts, vals);
    if (r != 0) {
      mlc_error_set(err, "cuModuleLoadDataEx: %s: %.1500s", cu_err(r), log);
      mod = NULL;
    } else if (cu_check(cu.module_get_function(&fn, mod, symbol), "cuModuleGetFunction", err)) {
      k = mlc_xmalloc(sizeof *k);
      *k = (mlc_cuda_kernel){mod, fn, *l, cu_generation};
    } else {
      cu.module_unload(mod);
    }
  }
  pthread_mutex_unlock(&cu_mu);
  return k;
}

void mlc_cuda_unload(mlc_cuda_kernel *k) {
  if (!k) return;
  pthread_mutex_lock(&cu_mu);
  if (k->generation == cu_generation && cu_ctx) cu.module_unload(k->mod);
  pthread_mutex_unlock(&cu_mu);
  mlc_free(k);
}

static size_t arg_bytes(const mlc_array *x) {
  return (size_t)mlc_array_numel(x) * (size_t)mlc_dtype_bytes(x->dtype);
}

bool mlc_cuda_call(mlc_cuda_kernel *k, int n, mlc_array *args, int warmup, int repeat, double *ms,
                   mlc_error *err) {
  pthread_mutex_lock(&cu_mu);
  if (!ensure_context(err)) {
    pthread_mutex_unlock(&cu_mu);
    return false;
  }
  if (k->generation != cu_generation) {
    pthread_mutex_unlock(&cu_mu);
    return mlc_error_set(err, "the kernel's CUDA context was reset by an earlier failure; load it "
                              "again");
  }
  CUdeviceptr *dev = mlc_xmalloc(sizeof(CUdeviceptr) * (size_t)(n + 1));
  void **params = mlc_xmalloc(sizeof(void *) * (size_t)(n + 1));
  int n_alloc = 0;
  bool ok = true, broken = false;
  for (int i = 0; ok && i < n; i++) {
    size_t bytes = arg_bytes(&args[i]);
    ok = cu_check(cu.mem_alloc(&dev[i], bytes ? bytes : 1), "cuMemAlloc", err);
    if (ok) n_alloc++;
    ok = ok && cu_check(cu.memcpy_htod(dev[i], args[i].data, bytes), "cuMemcpyHtoD", err);
    params[i] = &dev[i];
  }
  if (ok) {
    ok = launch_once(k->fn, &k->launch, params, err) &&
         cu_check(cu.ctx_synchronize(), "kernel run", err);
    broken = !ok;
  }
  for (int i = 0; ok && i < n; i++)
    ok = cu_check(cu.memcpy_dtoh(args[i].data, dev[i], arg_bytes(&args[i])), "cuMemcpyDtoH", err);
  if (ok && ms && repeat > 0) {
    ok = time_launches(k->fn, &k->launch, params, warmup, repeat, ms, err);
    broken = !ok;
  }
  if (broken) {
    /* The context is lost after a failed launch: start a fresh one (which
     * frees its memory and modules). */
    reset_context();
  } else {
    for (int i = 0; i < n_alloc; i++) cu.mem_free(dev[i]);
  }
  mlc_free(dev);
  mlc_free(params);
  pthread_mutex_unlock(&cu_mu);
  return ok;
}

bool mlc_cuda_run(const mlc_object *ptx, const char *symbol, const mlc_gpu_launch *l, int n,
                  mlc_array *args, int warmup, int repeat, double *ms, mlc_error *err) {
  mlc_cuda_kernel *k = mlc_cuda_load(ptx, symbol, l, err);
  bool ok = k && mlc_cuda_call(k, n, args, warmup, repeat, ms, err);
  mlc_cuda_unload(k);
  return ok;
}
