/* The runtime side of objects that mlc-compile --target cuda writes: each
 * kernel's entry point (built by targets/cuda_host.c) calls
 * mlc_rt_cuda_launch with the object's PTX, its kernel symbol, the launch
 * extents and the argument sizes.
 *
 * The driver is opened with dlopen on the first launch (targets/runtime/
 * cuda_api.h: libcuda.so.1, or MLC_CUDA_DRIVER for tests); device 0's
 * primary context is retained once; each PTX text (one per object, known
 * by its address) is loaded once per process and kept. A failed launch
 * leaves the context unusable: it is reset and the modules are loaded
 * again by the next call. Calls are serialized by a mutex.
 *
 * This file depends on libc, libdl and pthreads only: users link
 * libmlcrt.a, never libmlc.a, next to an emitted object.
 */
#include "targets/runtime/mlcrt.h"
#include "targets/runtime/cuda_api.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One loaded PTX text, keyed by its address in the object. */
typedef struct rt_module {
  const char *ptx;
  CUmodule mod;
  struct rt_module *next;
} rt_module;

static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
static mlc_cuda_api rt_cu;
static bool rt_loaded;
static char rt_load_error[512]; /* why the driver could not be opened ("" untried) */
static CUdevice rt_dev;
static CUcontext rt_ctx;        /* NULL until retained (again, after a reset) */
static rt_module *rt_modules;   /* loaded in rt_ctx */
static __thread char rt_error[2048];

const char *mlc_rt_cuda_error(void) { return rt_error; }

__attribute__((format(printf, 1, 2))) static int32_t fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_error, sizeof rt_error, fmt, ap);
  va_end(ap);
  return -1;
}

/* A driver call that failed: -1 with "<what>: <driver's text>". */
static int32_t fail_cu(CUresult r, const char *symbol, const char *what) {
  return fail("%s: %s: %s (CUDA error %d)", symbol, what, mlc_cuda_api_error(&rt_cu, r), r);
}

/* After a failed launch the context is lost with every module in it. */
static void reset_context(void) {
  rt_cu.primary_reset(rt_dev);
  rt_ctx = NULL;
  while (rt_modules) {
    rt_module *m = rt_modules;
    rt_modules = m->next;
    free(m);
  }
}

/* Driver loaded and the context current in this thread; caller holds rt_mu. */
static int32_t ensure_context(const char *symbol) {
  if (!rt_loaded && !rt_load_error[0])
    rt_loaded = mlc_cuda_api_open(&rt_cu, &rt_dev, rt_load_error, sizeof rt_load_error);
  if (!rt_loaded) return fail("%s: %s", symbol, rt_load_error);
  CUresult r;
  if (!rt_ctx && (r = rt_cu.primary_retain(&rt_ctx, rt_dev)) != 0) {
    rt_ctx = NULL;
    return fail_cu(r, symbol, "cuDevicePrimaryCtxRetain");
  }
  if ((r = rt_cu.ctx_set_current(rt_ctx)) != 0) return fail_cu(r, symbol, "cuCtxSetCurrent");
  return 0;
}

/* The module of ptx, loaded on first use. */
static int32_t get_module(const char *ptx, const char *symbol, CUmodule *out) {
  for (rt_module *m = rt_modules; m; m = m->next)
    if (m->ptx == ptx) {
      *out = m->mod;
      return 0;
    }
  char log[4096] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(size_t)sizeof log};
  CUmodule mod = NULL;
  CUresult r = rt_cu.module_load_data_ex(&mod, ptx, 2, opts, vals);
  if (r != 0)
    return fail("%s: cuModuleLoadDataEx: %s (CUDA error %d): %.1500s", symbol,
                mlc_cuda_api_error(&rt_cu, r), r, log);
  rt_module *m = malloc(sizeof *m);
  if (!m) {
    rt_cu.module_unload(mod);
    return fail("%s: out of memory", symbol);
  }
  *m = (rt_module){ptx, mod, rt_modules};
  rt_modules = m;
  *out = mod;
  return 0;
}

/* Copy in, launch, wait, copy out; caller holds rt_mu and the context. */
static int32_t run(CUfunction fn, const char *symbol, const int64_t *launch, int32_t n_args,
                   const int64_t *arg_bytes, void **args) {
  CUdeviceptr *dev = calloc((size_t)n_args + 1, sizeof *dev);
  void **params = calloc((size_t)n_args + 1, sizeof *params);
  if (!dev || !params) {
    free(dev);
    free(params);
    return fail("%s: out of memory", symbol);
  }
  int32_t rc = 0;
  int n_alloc = 0;
  CUresult r;
  for (int32_t i = 0; !rc && i < n_args; i++) {
    size_t bytes = (size_t)arg_bytes[i];
    if ((r = rt_cu.mem_alloc(&dev[i], bytes ? bytes : 1)) != 0) rc = fail_cu(r, symbol, "cuMemAlloc");
    else n_alloc++;
    if (!rc && (r = rt_cu.memcpy_htod(dev[i], args[i], bytes)) != 0)
      rc = fail_cu(r, symbol, "cuMemcpyHtoD");
    params[i] = &dev[i];
  }
  bool broken = false;
  if (!rc) {
    /* Shared memory is static (declared in the PTX): no dynamic bytes. */
    r = rt_cu.launch(fn, (unsigned)launch[0], (unsigned)launch[1], (unsigned)launch[2],
                     (unsigned)launch[3], (unsigned)launch[4], (unsigned)launch[5], 0, NULL,
                     params, NULL);
    if (r != 0) rc = fail_cu(r, symbol, "cuLaunchKernel");
    else if ((r = rt_cu.ctx_synchronize()) != 0) rc = fail_cu(r, symbol, "kernel run");
    broken = rc != 0;
  }
  for (int32_t i = 0; !rc && i < n_args; i++)
    if ((r = rt_cu.memcpy_dtoh(args[i], dev[i], (size_t)arg_bytes[i])) != 0)
      rc = fail_cu(r, symbol, "cuMemcpyDtoH");
  if (broken) reset_context(); /* frees the context's memory too */
  else
    for (int i = 0; i < n_alloc; i++) rt_cu.mem_free(dev[i]);
  free(dev);
  free(params);
  return rc;
}

int32_t mlc_rt_cuda_launch(const char *ptx, const char *symbol, const int64_t *launch,
                           int32_t n_args, const int64_t *arg_bytes, void **args) {
  pthread_mutex_lock(&rt_mu);
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  int32_t rc = ensure_context(symbol);
  if (!rc) rc = get_module(ptx, symbol, &mod);
  CUresult r;
  if (!rc && (r = rt_cu.module_get_function(&fn, mod, symbol)) != 0)
    rc = fail_cu(r, symbol, "cuModuleGetFunction");
  if (!rc) rc = run(fn, symbol, launch, n_args, arg_bytes, args);
  pthread_mutex_unlock(&rt_mu);
  return rc;
}
