/* The CUDA Driver API entry points mlc-tune calls, declared once (as
 * cuda.h defines them, so that nothing needs CUDA at build time), and the
 * loader that opens the driver with dlopen. Two places use it: targets/
 * cuda_driver.c (libmlc.a: mlc-ir run, the CUDA runner) and targets/
 * runtime/cuda_launch.c (libmlcrt.a: the launchers of objects that
 * mlc-compile --target cuda writes, which users link without libmlc.a).
 * The loader is static inline so that each library has its own copy and
 * neither exports it.
 *
 * MLC_CUDA_DRIVER in the environment names the library to open instead of
 * libcuda.so.1: for tests, which point it at a fake driver
 * (tests/fake_cuda.c) on machines without a GPU.
 */
#ifndef MLC_RUNTIME_CUDA_API_H
#define MLC_RUNTIME_CUDA_API_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;

enum {
  CUDA_ERROR_NO_DEVICE = 100,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* The driver's entry points, by the versioned names cuda.h maps to. */
typedef struct mlc_cuda_api {
  void *lib; /* the dlopen handle; NULL before a successful open */
  CUresult (*init)(unsigned);
  CUresult (*device_get_count)(int *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*primary_reset)(CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*ctx_synchronize)(void);
  CUresult (*module_load_data_ex)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*module_unload)(CUmodule);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void **, void **);
  CUresult (*event_create)(CUevent *, unsigned);
  CUresult (*event_destroy)(CUevent);
  CUresult (*event_record)(CUevent, CUstream);
  CUresult (*event_synchronize)(CUevent);
  CUresult (*event_elapsed)(float *, CUevent, CUevent);
  CUresult (*get_error_string)(CUresult, const char **);
} mlc_cuda_api;

/* The driver's text for r ("unknown CUDA error" before it is loaded). */
static inline const char *mlc_cuda_api_error(const mlc_cuda_api *cu, CUresult r) {
  const char *s = NULL;
  if (cu->get_error_string) cu->get_error_string(r, &s);
  return s ? s : "unknown CUDA error";
}

/* Open the driver (MLC_CUDA_DRIVER or libcuda.so.1), resolve every entry
 * point, initialize it and take device 0. False with the reason in msg:
 * "no CUDA driver (...)", "no CUDA device", "no usable CUDA device: ...". */
static inline bool mlc_cuda_api_open(mlc_cuda_api *cu, CUdevice *dev, char *msg, size_t cap) {
  const char *path = getenv("MLC_CUDA_DRIVER");
  if (!path || !*path) path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(msg, cap, "no CUDA driver (cannot open %s: %s)", path, e ? e : "not found");
    return false;
  }
  static const struct {
    size_t offset;
    const char *name;
  } syms[] = {
#define MLC_CUDA_SYM(field, name) {offsetof(mlc_cuda_api, field), name}
      MLC_CUDA_SYM(init, "cuInit"),
      MLC_CUDA_SYM(device_get_count, "cuDeviceGetCount"),
      MLC_CUDA_SYM(device_get, "cuDeviceGet"),
      MLC_CUDA_SYM(primary_retain, "cuDevicePrimaryCtxRetain"),
      MLC_CUDA_SYM(primary_reset, "cuDevicePrimaryCtxReset_v2"),
      MLC_CUDA_SYM(ctx_set_current, "cuCtxSetCurrent"),
      MLC_CUDA_SYM(ctx_synchronize, "cuCtxSynchronize"),
      MLC_CUDA_SYM(module_load_data_ex, "cuModuleLoadDataEx"),
      MLC_CUDA_SYM(module_unload, "cuModuleUnload"),
      MLC_CUDA_SYM(module_get_function, "cuModuleGetFunction"),
      MLC_CUDA_SYM(mem_alloc, "cuMemAlloc_v2"),
      MLC_CUDA_SYM(mem_free, "cuMemFree_v2"),
      MLC_CUDA_SYM(memcpy_htod, "cuMemcpyHtoD_v2"),
      MLC_CUDA_SYM(memcpy_dtoh, "cuMemcpyDtoH_v2"),
      MLC_CUDA_SYM(launch, "cuLaunchKernel"),
      MLC_CUDA_SYM(event_create, "cuEventCreate"),
      MLC_CUDA_SYM(event_destroy, "cuEventDestroy_v2"),
      MLC_CUDA_SYM(event_record, "cuEventRecord"),
      MLC_CUDA_SYM(event_synchronize, "cuEventSynchronize"),
      MLC_CUDA_SYM(event_elapsed, "cuEventElapsedTime"),
      MLC_CUDA_SYM(get_error_string, "cuGetErrorString"),
#undef MLC_CUDA_SYM
  };
  mlc_cuda_api api = {.lib = lib};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(lib, syms[i].name);
    if (!p) {
      snprintf(msg, cap, "no CUDA driver (%s lacks %s)", path, syms[i].name);
      dlclose(lib);
      return false;
    }
    *(void **)((char *)&api + syms[i].offset) = p;
  }
  CUresult r = api.init(0);
  int count = 0;
  if (r == 0) r = api.device_get_count(&count);
  if (r == CUDA_ERROR_NO_DEVICE || (r == 0 && count == 0)) {
    snprintf(msg, cap, "no CUDA device");
    dlclose(lib);
    return false;
  }
  if (r == 0) r = api.device_get(dev, 0);
  if (r != 0) {
    snprintf(msg, cap, "no usable CUDA device: %s", mlc_cuda_api_error(&api, r));
    dlclose(lib);
    return false;
  }
  *cu = api;
  return true;
}

#pragma GCC visibility pop
#endif
