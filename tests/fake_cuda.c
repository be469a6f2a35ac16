/* A fake CUDA driver for tests on machines without a GPU (built by
 * tests/cli/mlc_compile_cuda.sh with cc -shared; loaded through
 * MLC_CUDA_DRIVER, see targets/runtime/cuda_api.h). It exports the entry
 * points mlc-tune opens, keeps "device" memory in host memory, and
 * records what it is given, one line each, in the file FAKE_CUDA_LOG:
 *
 *   load BYTES            cuModuleLoadDataEx (the PTX is also written to
 *                         FAKE_CUDA_LOG.ptx)
 *   alloc BYTES / htod BYTES / dtoh BYTES
 *   launch SYMBOL grid=X,Y,Z block=X,Y,Z shared=BYTES
 *   reset                 cuDevicePrimaryCtxReset_v2
 *
 * A launch cannot run the PTX: it runs a C reference of the kernel named
 * by FAKE_CUDA_REFERENCE on the device copies ("vecadd": the three
 * arguments A, B, C of equal size, C = A + B), so that a test sees whether
 * the arguments went in, in order, and came back. FAKE_CUDA_DEVICES=0
 * reports no device; FAKE_CUDA_FAIL_LAUNCH=1 makes launches fail with
 * CUDA_ERROR_ILLEGAL_ADDRESS (700). cuModuleGetFunction fails with
 * CUDA_ERROR_NOT_FOUND (500) for a name the PTX has no .entry of.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { MAX_ALLOCS = 256 };

static struct {
  CUdeviceptr ptr;
  size_t bytes;
} allocs[MAX_ALLOCS];

typedef struct fake_module {
  char *ptx;
} fake_module;

typedef struct fake_function {
  char name[256];
} fake_function;

static void note(const char *fmt, ...) {
  const char *path = getenv("FAKE_CUDA_LOG");
  if (!path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

static size_t alloc_bytes(CUdeviceptr p) {
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].ptr == p) return allocs[i].bytes;
  return 0;
}

CUresult cuInit(unsigned flags);
CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }

CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGetCount(int *n) {
  const char *d = getenv("FAKE_CUDA_DEVICES");
  *n = d ? atoi(d) : 1;
  return 0;
}

CUresult cuDeviceGet(int *dev, int ordinal);
CUresult cuDeviceGet(int *dev, int ordinal) {
  *dev = ordinal;
  return 0;
}

static int context;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev);
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  *ctx = &context;
  return dev == 0 ? 0 : 101;
}

CUresult cuDevicePrimaryCtxReset_v2(int dev);
CUresult cuDevicePrimaryCtxReset_v2(int dev) {
  note("reset");
  return dev == 0 ? 0 : 101;
}

CUresult cuCtxSetCurrent(void *ctx);
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &context ? 0 : 201; }

CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuModuleLoadDataEx(fake_module **mod, const void *image, unsigned n, int *opts,
                            void **vals);
CUresult cuModuleLoadDataEx(fake_module **mod, const void *image, unsigned n, int *opts,
                            void **vals) {
  (void)n, (void)opts, (void)vals;
  const char *ptx = image;
  note("load %zu", strlen(ptx));
  const char *path = getenv("FAKE_CUDA_LOG");
  if (path) {
    char out[4096];
    snprintf(out, sizeof out, "%s.ptx", path);
    FILE *f = fopen(out, "w");
    if (f) {
      fputs(ptx, f);
      fclose(f);
    }
  }
  if (!strstr(ptx, ".entry")) return 200; /* CUDA_ERROR_INVALID_IMAGE */
  *mod = malloc(sizeof **mod);
  (*mod)->ptx = strdup(ptx);
  return 0;
}

CUresult cuModuleUnload(fake_module *mod);
CUresult cuModuleUnload(fake_module *mod) {
  free(mod->ptx);
  free(mod);
  return 0;
}

CUresult cuModuleGetFunction(fake_function **fn, fake_module *mod, const char *name);
CUresult cuModuleGetFunction(fake_function **fn, fake_module *mod, const char *name) {
  char entry[300];
  snprintf(entry, sizeof entry, ".entry %s(", name);
  if (!strstr(mod->ptx, entry)) return 500;
  static fake_function fns[16];
  static int n_fns;
  fake_function *f = &fns[n_fns++ % 16];
  snprintf(f->name, sizeof f->name, "%s", name);
  *fn = f;
  return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (!allocs[i].ptr) {
      void *m = calloc(1, bytes);
      if (!m) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
      allocs[i].ptr = (CUdeviceptr)(size_t)m;
      allocs[i].bytes = bytes;
      *p = allocs[i].ptr;
      note("alloc %zu", bytes);
      return 0;
    }
  return 2;
}

CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFree_v2(CUdeviceptr p) {
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].ptr == p) {
      free((void *)(size_t)p);
      allocs[i].ptr = 0;
      return 0;
    }
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  note("htod %zu", bytes);
  if (bytes > alloc_bytes(dst)) return 1;
  memcpy((void *)(size_t)dst, src, bytes);
  return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  note("dtoh %zu", bytes);
  if (bytes > alloc_bytes(src)) return 1;
  memcpy(dst, (void *)(size_t)src, bytes);
  return 0;
}

/* C = A + B over the device copies (params point at CUdeviceptrs). */
static CUresult vecadd(void **params) {
  CUdeviceptr a = *(CUdeviceptr *)params[0], b = *(CUdeviceptr *)params[1],
              c = *(CUdeviceptr *)params[2];
  size_t n = alloc_bytes(c);
  if (!n || alloc_bytes(a) != n || alloc_bytes(b) != n) return 1;
  const float *A = (const float *)(size_t)a, *B = (const float *)(size_t)b;
  float *C = (float *)(size_t)c;
  for (size_t i = 0; i < n / sizeof(float); i++) C[i] = A[i] + B[i];
  return 0;
}

CUresult cuLaunchKernel(fake_function *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra);
CUresult cuLaunchKernel(fake_function *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  (void)stream, (void)extra;
  note("launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u", fn->name, gx, gy, gz, bx, by, bz,
       shared);
  const char *fail = getenv("FAKE_CUDA_FAIL_LAUNCH");
  if (fail && *fail == '1') return 700; /* CUDA_ERROR_ILLEGAL_ADDRESS */
  const char *ref = getenv("FAKE_CUDA_REFERENCE");
  if (ref && strcmp(ref, "vecadd") == 0) return vecadd(params);
  return 0;
}

CUresult cuEventCreate(void **ev, unsigned flags);
CUresult cuEventCreate(void **ev, unsigned flags) {
  (void)flags;
  *ev = malloc(1);
  return 0;
}

CUresult cuEventDestroy_v2(void *ev);
CUresult cuEventDestroy_v2(void *ev) {
  free(ev);
  return 0;
}

CUresult cuEventRecord(void *ev, void *stream);
CUresult cuEventRecord(void *ev, void *stream) {
  (void)ev, (void)stream;
  return 0;
}

CUresult cuEventSynchronize(void *ev);
CUresult cuEventSynchronize(void *ev) {
  (void)ev;
  return 0;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end);
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  (void)start, (void)end;
  *ms = 0.01f;
  return 0;
}

CUresult cuGetErrorString(CUresult r, const char **s);
CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case 500: *s = "named symbol not found (fake driver)"; return 0;
  case 700: *s = "an illegal memory access was encountered (fake driver)"; return 0;
  default: *s = "fake driver error"; return 0;
  }
}
