/* In-process loading of llvm objects with ORC LLJIT.
 *
 * One LLJIT for the process, created on first use and kept until exit. Its
 * main JITDylib defines, as absolute symbols, exactly what emitted objects
 * may call (the runtime's mlc_parallel_for_range and mlc_rt_sgemm, and the libc/libm functions
 * LLVM's code generator and our codegen emit calls to), so loading never
 * searches the process. Each load gets its own resource tracker; unloading
 * removes it, which frees that object's code and data, so a tuner can load
 * and drop thousands of candidates with flat memory.
 */
#include "targets/llvm_internal.h"
#include "targets/runtime/mlcrt.h"

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mlc_jit_lib {
  LLVMOrcResourceTrackerRef rt;
};

static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef the_jit;
static char jit_init_error[sizeof(mlc_error)];
/* The last error ORC reported on its own (e.g. unresolved symbols while
 * linking during a lookup); ORC would print it to stderr otherwise. */
static char session_error[512];

static void report_session_error(void *ctx, LLVMErrorRef e) {
  MLC_UNUSED(ctx);
  char *msg = LLVMGetErrorMessage(e);
  snprintf(session_error, sizeof session_error, "%s", msg);
  LLVMDisposeErrorMessage(msg);
}

typedef struct abs_sym {
  const char *name;
  void *addr;
} abs_sym;

/* Wrappers give libm's functions addresses that cannot be confused with
 * a builtin (taking &expf is fine, but a wrapper keeps the table plain). */
static void *jit_memset(void *p, int v, size_t n) { return memset(p, v, n); }
static void *jit_memcpy(void *d, const void *s, size_t n) { return memcpy(d, s, n); }
static void *jit_memmove(void *d, const void *s, size_t n) { return memmove(d, s, n); }

/* Functions callers add for T.call_extern (mlc_jit_define_symbol), kept
 * so that a JIT created again after mlc_jit_shutdown has them too. */
enum { MAX_USER_SYMS = 64 };
static struct {
  char name[64];
  void *addr;
} user_syms[MAX_USER_SYMS];
static int n_user_syms;

static bool define_abs(LLVMOrcLLJITRef j, int n, const abs_sym *syms, mlc_error *err) {
  LLVMJITCSymbolMapPair pairs[MAX_USER_SYMS + 64];
  MLC_ASSERT(n <= MLC_COUNTOF(pairs));
  for (int i = 0; i < n; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(j, syms[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(j), mu);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    mlc_error_set(err, "jit: defining symbols: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return false;
  }
  return true;
}

static bool define_user_symbols(LLVMOrcLLJITRef j, mlc_error *err) {
  if (n_user_syms == 0) return true;
  abs_sym syms[MAX_USER_SYMS];
  for (int i = 0; i < n_user_syms; i++) syms[i] = (abs_sym){user_syms[i].name, user_syms[i].addr};
  return define_abs(j, n_user_syms, syms, err);
}

static bool define_symbols(LLVMOrcLLJITRef j, mlc_error *err) {
  const abs_sym syms[] = {
      {"mlc_parallel_for", (void *)mlc_parallel_for},
      {"mlc_parallel_for_range", (void *)mlc_parallel_for_range},
      {"mlc_rt_amx_enable", (void *)mlc_rt_amx_enable},
      {"mlc_rt_sgemm", (void *)mlc_rt_sgemm},
      {"mlc_rt_workspace_alloc", (void *)mlc_rt_workspace_alloc},
      {"mlc_rt_workspace_free", (void *)mlc_rt_workspace_free},
      {"__gnu_h2f_ieee", (void *)__gnu_h2f_ieee},
      {"__gnu_f2h_ieee", (void *)__gnu_f2h_ieee},
      {"aligned_alloc", (void *)aligned_alloc},
      {"malloc", (void *)malloc},
      {"free", (void *)free},
      {"memset", (void *)jit_memset},
      {"memcpy", (void *)jit_memcpy},
      {"memmove", (void *)jit_memmove},
      {"expf", (void *)expf},
      {"exp2f", (void *)exp2f},
      {"logf", (void *)logf},
      {"log2f", (void *)log2f},
      {"log10f", (void *)log10f},
      {"powf", (void *)powf},
      {"sqrtf", (void *)sqrtf},
      {"tanhf", (void *)tanhf},
      {"erff", (void *)erff},
      {"nearbyintf", (void *)nearbyintf},
      {"sinf", (void *)sinf},
      {"cosf", (void *)cosf},
      {"tanf", (void *)tanf},
      {"asinf", (void *)asinf},
      {"acosf", (void *)acosf},
      {"atanf", (void *)atanf},
      {"sinhf", (void *)sinhf},
      {"coshf", (void *)coshf},
      {"asinhf", (void *)asinhf},
      {"acoshf", (void *)acoshf},
      {"atanhf", (void *)atanhf},
      {"floorf", (void *)floorf},
      {"ceilf", (void *)ceilf},
      {"fabsf", (void *)fabsf},
      {"fmaf", (void *)fmaf},
      {"fmodf", (void *)fmodf},
      {"ldexpf", (void *)ldexpf},
      {"exp", (void *)exp},
      {"log", (void *)log},
      {"pow", (void *)pow},
      {"fma", (void *)fma},
  };
  int n = MLC_COUNTOF(syms);
  LLVMJITCSymbolMapPair pairs[MLC_COUNTOF(syms)];
  for (int i = 0; i < n; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(j, syms[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(j), mu);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    mlc_error_set(err, "jit: defining runtime symbols: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return false;
  }
  return true;
}

/* Requires jit_mu held. */
static LLVMOrcLLJITRef get_jit(mlc_error *err) {
  if (the_jit) return the_jit;
  if (jit_init_error[0]) {
    mlc_error_set(err, "%s", jit_init_error);
    return NULL;
  }
  cg_llvm_init();
  LLVMOrcLLJITRef j;
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j, NULL);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    snprintf(jit_init_error, sizeof jit_init_error, "jit: cannot create LLJIT: %s", msg);
    LLVMDisposeErrorMessage(msg);
    mlc_error_set(err, "%s", jit_init_error);
    return NULL;
  }
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(j), report_session_error,
                                          NULL);
  mlc_error tmp;
  if (!define_symbols(j, &tmp) || !define_user_symbols(j, &tmp)) {
    snprintf(jit_init_error, sizeof jit_init_error, "%s", tmp.msg);
    mlc_error_set(err, "%s", jit_init_error);
    LLVMOrcDisposeLLJIT(j);
    return NULL;
  }
  the_jit = j;
  return j;
}

mlc_jit_lib *mlc_jit_load(const mlc_object *obj, mlc_error *err) {
  if (!obj || !obj->data || obj->len == 0) {
    mlc_error_set(err, "jit: empty object");
    return NULL;
  }
  pthread_mutex_lock(&jit_mu);
  mlc_jit_lib *lib = NULL;
  LLVMOrcLLJITRef j = get_jit(err);
  if (!j) goto out;
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(j));
  /* AddObjectFile takes the buffer; this copy is the JIT's. */
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(obj->data, obj->len, "mlc-object");
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(j, rt, buf);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    mlc_error_set(err, "jit: cannot load object: %s", msg);
    LLVMDisposeErrorMessage(msg);
    LLVMOrcReleaseResourceTracker(rt);
    goto out;
  }
  lib = mlc_malloc(sizeof *lib);
  if (!lib) {
    mlc_error_set(err, "jit: out of memory");
    LLVMErrorRef r = LLVMOrcResourceTrackerRemove(rt);
    if (r) LLVMConsumeError(r);
    LLVMOrcReleaseResourceTracker(rt);
    goto out;
  }
  lib->rt = rt;
out:
  pthread_mutex_unlock(&jit_mu);
  return lib;
}

mlc_kernel_fn mlc_jit_lookup(mlc_jit_lib *lib, const char *symbol, mlc_error *err) {
  /* Symbols are global to the JIT's main dylib; lib only proves a load. */
  if (!lib) {
    mlc_error_set(err, "jit: lookup of %s in no object", symbol);
    return NULL;
  }
  pthread_mutex_lock(&jit_mu);
  LLVMOrcExecutorAddress addr = 0;
  session_error[0] = 0;
  LLVMErrorRef e = LLVMOrcLLJITLookup(the_jit, &addr, symbol);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    mlc_error_set(err, "jit: symbol %s: %s%s%s", symbol, msg, session_error[0] ? ": " : "",
                  session_error);
    LLVMDisposeErrorMessage(msg);
  }
  pthread_mutex_unlock(&jit_mu);
  return e ? NULL : (mlc_kernel_fn)(uintptr_t)addr;
}

bool mlc_jit_define_symbol(const char *name, void *addr, mlc_error *err) {
  if (!name || !*name || strlen(name) >= sizeof user_syms[0].name || !addr)
    return mlc_error_set(err, "jit: bad symbol to define");
  bool ok = true;
  pthread_mutex_lock(&jit_mu);
  int i = 0;
  while (i < n_user_syms && strcmp(user_syms[i].name, name) != 0) i++;
  if (i < n_user_syms) {
    if (user_syms[i].addr != addr)
      ok = mlc_error_set(err, "jit: symbol %s is already defined at another address", name);
  } else if (n_user_syms == MAX_USER_SYMS) {
    ok = mlc_error_set(err, "jit: more than %d symbols defined", MAX_USER_SYMS);
  } else {
    strcpy(user_syms[i].name, name);
    user_syms[i].addr = addr;
    n_user_syms++;
    abs_sym one = {user_syms[i].name, addr};
    if (the_jit && !define_abs(the_jit, 1, &one, err)) {
      n_user_syms--;
      ok = false;
    }
  }
  pthread_mutex_unlock(&jit_mu);
  return ok;
}

void mlc_jit_unload(mlc_jit_lib *lib) {
  if (!lib) return;
  pthread_mutex_lock(&jit_mu);
  LLVMErrorRef e = LLVMOrcResourceTrackerRemove(lib->rt);
  if (e) LLVMConsumeError(e); /* nothing a caller could do about it */
  LLVMOrcReleaseResourceTracker(lib->rt);
  pthread_mutex_unlock(&jit_mu);
  mlc_free(lib);
}

void mlc_jit_shutdown(void) {
  pthread_mutex_lock(&jit_mu);
  if (the_jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(the_jit);
    if (e) LLVMConsumeError(e);
    the_jit = NULL;
  }
  pthread_mutex_unlock(&jit_mu);
}

int32_t mlc_kernel_call_sized(mlc_kernel_fn fn, int n, const mlc_array *args, int n_sizes,
                              const int64_t *sizes) {
  void *stack[16];
  int total = n + n_sizes;
  void **ptrs = total <= 16 ? stack : mlc_xmalloc(sizeof(void *) * (size_t)total);
  for (int i = 0; i < n; i++) ptrs[i] = args[i].data;
  for (int k = 0; k < n_sizes; k++) ptrs[n + k] = (void *)&sizes[k];
  int32_t rc = fn(ptrs);
  if (ptrs != stack) mlc_free(ptrs);
  return rc;
}

int32_t mlc_kernel_call(mlc_kernel_fn fn, int n, const mlc_array *args) {
  return mlc_kernel_call_sized(fn, n, args, 0, NULL);
}
