/* The cuda target: options, the NVPTX target machine, libdevice, and PTX.
 *
 *   cuda [-arch=sm_80]    (sm_50 .. sm_86; sm_89 and sm_90 as sm_86 PTX)
 *
 * PTX ISA 7.5, the newest LLVM 14 writes (CUDA 11.5 and later accept it;
 * sm_80 needs 7.0). Math the NVPTX backend cannot lower (LLVM 14 has no
 * expf for it) is called in CUDA's libdevice: llvm.exp/log/pow and libm
 * tanhf/erff and the trigonometric and hyperbolic functions (sinf ..
 * atanhf) become __nv_expf, __nv_logf, __nv_powf, __nv_tanhf, __nv_erff,
 * __nv_sinf, ..., and when any is used, libdevice.10.bc is linked into the
 * module (only the functions called, read lazily), then made internal;
 * the O3 pipeline runs NVVMReflect, which resolves libdevice's
 * __nvvm_reflect queries (to "no flush to zero").
 */
#include "targets/cuda_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Error.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PTX_FEATURES "+ptx75"

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

static void nvptx_init_once(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

/* ---- options -------------------------------------------------------------------- */

static const char *const known_archs[] = {"sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62",
                                          "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_89",
                                          "sm_90"};

/* The SM LLVM 14 writes PTX for: newer ones (sm_89, sm_90) get sm_86
 * PTX, which the driver compiles for the device it runs on. */
static const char *llvm_arch(const char *arch) {
  return strcmp(arch, "sm_89") == 0 || strcmp(arch, "sm_90") == 0 ? "sm_86" : arch;
}

static bool cuda_set_option(mlc_target *t, const char *key, const char *value, mlc_error *err) {
  if (strcmp(key, "arch") != 0 && strcmp(key, "mcpu") != 0)
    return mlc_error_set(err, "unknown option -%s for target cuda (known: -arch)", key);
  for (int i = 0; i < MLC_COUNTOF(known_archs); i++)
    if (value && strcmp(value, known_archs[i]) == 0) {
      snprintf(t->mcpu, sizeof t->mcpu, "%s", value);
      return true;
    }
  return mlc_error_set(err, "target option -arch: '%s' is not a known SM (sm_50 to sm_90, "
                            "e.g. -arch=sm_80)", value ? value : "");
}

static void cuda_finish(mlc_target *t) {
  if (!t->mcpu[0]) snprintf(t->mcpu, sizeof t->mcpu, "sm_80");
  snprintf(t->mtriple, sizeof t->mtriple, "nvptx64-nvidia-cuda");
  t->num_cores = 1;
  snprintf(t->str, sizeof t->str, "cuda -arch=%s", t->mcpu);
}

/* ---- libdevice ---------------------------------------------------------------------- */

static const char *const libdevice_names[][2] = {
    {"llvm.exp.f32", "__nv_expf"}, {"llvm.log.f32", "__nv_logf"}, {"llvm.pow.f32", "__nv_powf"},
    {"tanhf", "__nv_tanhf"},       {"erff", "__nv_erff"},     {"sinf", "__nv_sinf"},
    {"cosf", "__nv_cosf"},         {"tanf", "__nv_tanf"},     {"asinf", "__nv_asinf"},
    {"acosf", "__nv_acosf"},       {"atanf", "__nv_atanf"},   {"sinhf", "__nv_sinhf"},
    {"coshf", "__nv_coshf"},       {"asinhf", "__nv_asinhf"}, {"acoshf", "__nv_acoshf"},
    {"atanhf", "__nv_atanhf"},
};

/* Redirect calls to what NVPTX cannot lower; true when any was found. */
static bool use_libdevice(LLVMModuleRef mod) {
  bool any = false;
  for (int i = 0; i < MLC_COUNTOF(libdevice_names); i++) {
    LLVMValueRef old = LLVMGetNamedFunction(mod, libdevice_names[i][0]);
    if (!old) continue;
    LLVMTypeRef fty = LLVMGlobalGetValueType(old);
    LLVMValueRef nv = LLVMGetNamedFunction(mod, libdevice_names[i][1]);
    if (!nv) nv = LLVMAddFunction(mod, libdevice_names[i][1], fty);
    LLVMReplaceAllUsesWith(old, nv);
    LLVMDeleteFunction(old);
    any = true;
  }
  return any;
}

static bool file_exists(const char *p) { return p && access(p, R_OK) == 0; }

static const char *find_libdevice(char *buf, size_t n) {
  const char *env = getenv("MLC_LIBDEVICE");
  if (env && *env) return env;
  const char *home = getenv("CUDA_HOME");
  const char *roots[] = {home, "/usr/local/cuda", "/usr/local/cuda-13.0", "/usr/local/cuda-12"};
  for (int i = 0; i < MLC_COUNTOF(roots); i++) {
    if (!roots[i] || !*roots[i]) continue;
    snprintf(buf, n, "%s/nvvm/libdevice/libdevice.10.bc", roots[i]);
    if (file_exists(buf)) return buf;
  }
  return NULL;
}

static bool link_libdevice(LLVMContextRef ctx, LLVMModuleRef mod, mlc_error *err) {
  char path[1024];
  const char *p = find_libdevice(path, sizeof path);
  if (!p)
    return mlc_error_set(err, "the kernel calls math functions (exp, log, pow, tanh, erf, sin, ...) that "
                              "need CUDA's libdevice.10.bc: not found (set MLC_LIBDEVICE or "
                              "CUDA_HOME)");
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(p, &mb, &msg)) {
    mlc_error_set(err, "cannot read libdevice %s: %s", p, msg ? msg : "");
    LLVMDisposeMessage(msg);
    return false;
  }
  /* Lazily: a full parse takes ~130 ms, the lazy one ~4. Made linkonce,
   * libdevice's functions are linked (and read) only when referenced. */
  LLVMModuleRef lib = NULL;
  if (LLVMGetBitcodeModuleInContext2(ctx, mb, &lib)) {
    LLVMDisposeMemoryBuffer(mb);
    return mlc_error_set(err, "cannot parse libdevice %s", p);
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(lib); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
  /* Match the kernel module, so the linker does not warn or refuse. */
  LLVMSetTarget(lib, LLVMGetTarget(mod));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
  if (LLVMLinkModules2(mod, lib)) return mlc_error_set(err, "cannot link libdevice %s", p);
  return true;
}

/* Everything but the kernels internal, so unused libdevice code goes. */
static void internalize(LLVMModuleRef mod, int n, const char *const *symbols) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    bool kernel = false;
    for (int i = 0; i < n; i++)
      if (strcmp(name, symbols[i]) == 0) kernel = true;
    if (!kernel) LLVMSetLinkage(f, LLVMInternalLinkage);
  }
}

/* Shared arrays listed in llvm.compiler.used. LLVM 14's GlobalsAA models
 * an internal global whose address never escapes, and takes a call of a
 * memory-touching intrinsic to read such globals but never write them:
 * llvm.nvvm.barrier0 then orders nothing, and a value thread 0 stores to
 * shared memory before the barrier is forwarded past it, or other
 * threads' loads of it move above it (softmax's row max read before it
 * was written). Listed, each counts as escaped, and the barrier is taken
 * to read and write it, as it does. */
static void pin_shared(LLVMContextRef ctx, LLVMModuleRef mod) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(ctx), i8p = LLVMPointerType(i8, 0);
  MLC_VEC(LLVMValueRef) keep = {0};
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == 3)
      MLC_VEC_PUSH(keep, LLVMConstAddrSpaceCast(LLVMConstBitCast(g, LLVMPointerType(i8, 3)), i8p));
  if (keep.len > 0) {
    MLC_ASSERT(!LLVMGetNamedGlobal(mod, "llvm.compiler.used")); /* nothing else adds one */
    LLVMValueRef arr = LLVMConstArray(i8p, keep.data, (unsigned)keep.len);
    LLVMValueRef used = LLVMAddGlobal(mod, LLVMTypeOf(arr), "llvm.compiler.used");
    LLVMSetLinkage(used, LLVMAppendingLinkage);
    LLVMSetSection(used, "llvm.metadata");
    LLVMSetInitializer(used, arr);
  }
  MLC_VEC_FREE(keep);
}

/* ---- building ------------------------------------------------------------------------ */

static LLVMTargetMachineRef make_machine(const mlc_target *t, mlc_error *err) {
  pthread_once(&nvptx_once, nvptx_init_once);
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(t->mtriple, &target, &msg)) {
    mlc_error_set(err, "target %s: %s", t->str, msg ? msg : "no NVPTX backend in this LLVM");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, t->mtriple, llvm_arch(t->mcpu), PTX_FEATURES,
                                                    LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                                    LLVMCodeModelDefault);
  if (!tm) mlc_error_set(err, "target %s: cannot create an NVPTX target machine", t->str);
  return tm;
}

static bool optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, mlc_error *err) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!e) return true;
  char *msg = LLVMGetErrorMessage(e);
  mlc_error_set(err, "LLVM passes: %s", msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}

/* The PTX, after one comment line per kernel with its launch extents. */
static bool emit_ptx(LLVMModuleRef mod, LLVMTargetMachineRef tm, int n, const char *const *symbols,
                     const mlc_gpu_launch *launch, mlc_object *out, mlc_error *err) {
  char *msg = NULL;
  LLVMMemoryBufferRef buf;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf)) {
    mlc_error_set(err, "NVPTX code generation: %s", msg ? msg : "failed");
    LLVMDisposeMessage(msg);
    return false;
  }
  mlc_str s = {0};
  for (int i = 0; i < n; i++) {
    const mlc_gpu_launch *l = &launch[i];
    mlc_str_printf(&s, "// mlc.launch %s grid=%lld,%lld,%lld block=%lld,%lld,%lld shared=%lld\n",
                   symbols[i], (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2],
                   (long long)l->block[0], (long long)l->block[1], (long long)l->block[2],
                   (long long)l->shared_bytes);
  }
  size_t head = s.len, len = LLVMGetBufferSize(buf);
  out->data = mlc_malloc(head + len + 1);
  if (!out->data) {
    mlc_str_free(&s);
    LLVMDisposeMemoryBuffer(buf);
    return mlc_error_set(err, "out of memory for %zu bytes of PTX", len);
  }
  memcpy(out->data, s.data, head);
  memcpy((char *)out->data + head, LLVMGetBufferStart(buf), len);
  out->len = head + len;
  /* The buffer may end in a NUL of its own; PTX is text up to the first. */
  ((char *)out->data)[out->len] = 0;
  out->len = strlen(out->data);
  mlc_str_free(&s);
  LLVMDisposeMemoryBuffer(buf);
  return true;
}


static bool cuda_build(const mlc_target *t, int n, mlc_prim_func *const *lowered,
                       const char *const *symbols, mlc_str *ir_text, mlc_object *out,
                       mlc_error *err) {
  *out = (mlc_object){0};
  for (int i = 0; i < n; i++)
    if (lowered[i]->n_sizes > 0)
      return mlc_error_set(err, "function %s: size vars are not supported by the cuda target yet",
                           lowered[i]->name);
  LLVMTargetMachineRef tm = make_machine(t, err);
  if (!tm) return false;
  cg c;
  cg_open(&c, t, tm);

  mlc_gpu_launch *launch = MLC_NEW_ARRAY(c.a, mlc_gpu_launch, n);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    ok = cuda_emit_kernel(&c, lowered[i], symbols[i], &launch[i], err);
    if (!ok) mlc_error_prefix(err, "function %s", lowered[i]->name);
  }
  ok = ok && cg_verify(&c, ir_text, err);
  if (ok && use_libdevice(c.mod)) ok = link_libdevice(c.ctx, c.mod, err);
  if (ok) internalize(c.mod, n, symbols);
  if (ok) pin_shared(c.ctx, c.mod);
  ok = ok && optimize(c.mod, tm, err) && emit_ptx(c.mod, tm, n, symbols, launch, out, err);

  cg_close(&c);
  LLVMDisposeTargetMachine(tm);
  return ok;
}

bool mlc_cuda_launch_info(const mlc_target *t, const mlc_prim_func *f, mlc_gpu_launch *out,
                          mlc_error *err) {
  MLC_UNUSED(t); /* every supported SM has the same limits */
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *p = cuda_prepare(a, f, err);
  mlc_prim_func *lf = p ? mlc_target_lower(a, p, err) : NULL;
  bool ok = lf && cuda_analyze(a, cuda_vthread(a, lf), out, err);
  if (!ok && lf) mlc_error_prefix(err, "function %s", f->name);
  mlc_arena_free(a);
  return ok;
}

const mlc_target_backend mlc_backend_cuda = {
    .kind = "cuda",
    .device = MLC_DEVICE_CUDA,
    .set_option = cuda_set_option,
    .finish = cuda_finish,
    .build = cuda_build,
    .prepare = cuda_prepare,
};
