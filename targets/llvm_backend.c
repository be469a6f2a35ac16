/* The llvm target: options, target machine, the O3 pipeline, and an ELF
 * object in memory.
 *
 *   llvm [-mtriple=T] [-mcpu=C] [-mattr=+f1,-f2] [-num-cores=N]
 *
 * The CPU defaults to the host's (LLVMGetHostCPUName); features follow the
 * CPU (the host's full feature string when the CPU is the host's, since
 * LLVM's CPU tables do not know the host's exact extensions); cores default
 * to the CPUs this process may run on.
 */
#include "targets/llvm_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm-c/Support.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;

static void llvm_init_once(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  /* GVN's memory dependence queries walk up to 1,000 blocks back from
   * each load; over a tuning candidate's unrolled nests that walk was
   * half of the candidate's build time (conv2d candidates: 0.7-1.5 s ->
   * 0.4-0.8 s at 20, measured kernels as fast). A load whose walk gives up
   * is only kept, never wrong. LLVM's options are process-wide: set once,
   * before the first pass runs. */
  const char *argv[] = {"mlc", "-memdep-block-number-limit=20"};
  LLVMParseCommandLineOptions(2, argv, NULL);
}

void cg_llvm_init(void) { pthread_once(&llvm_once, llvm_init_once); }

/* ---- options -------------------------------------------------------------- */

static bool copy_opt(char *dst, size_t n, const char *key, const char *value, mlc_error *err) {
  if (!value || !*value) return mlc_error_set(err, "target option -%s needs a value (-%s=...)", key, key);
  if (strlen(value) >= n) return mlc_error_set(err, "target option -%s: value too long", key);
  snprintf(dst, n, "%s", value);
  return true;
}

static bool llvm_set_option(mlc_target *t, const char *key, const char *value, mlc_error *err) {
  if (strcmp(key, "mcpu") == 0) return copy_opt(t->mcpu, sizeof t->mcpu, key, value, err);
  if (strcmp(key, "mattr") == 0) return copy_opt(t->mattr, sizeof t->mattr, key, value, err);
  if (strcmp(key, "mtriple") == 0) return copy_opt(t->mtriple, sizeof t->mtriple, key, value, err);
  if (strcmp(key, "num-cores") == 0) {
    char *end;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || !*value || *end || v < 1 || v > 4096)
      return mlc_error_set(err, "target option -num-cores needs a number from 1 to 4096, got '%s'",
                           value ? value : "");
    t->num_cores = (int)v;
    return true;
  }
  return mlc_error_set(err, "unknown option -%s for target llvm (known: -mtriple, -mcpu, -mattr, "
                            "-num-cores)", key);
}

static void llvm_finish(mlc_target *t) {
  if (!t->mcpu[0]) snprintf(t->mcpu, sizeof t->mcpu, "%s", mlc_target_host_cpu());
  if (t->num_cores < 1) t->num_cores = mlc_target_host_cores();
  int n = snprintf(t->str, sizeof t->str, "llvm");
  if (t->mtriple[0]) n += snprintf(t->str + n, sizeof t->str - (size_t)n, " -mtriple=%s", t->mtriple);
  n += snprintf(t->str + n, sizeof t->str - (size_t)n, " -mcpu=%s", t->mcpu);
  if (t->mattr[0]) n += snprintf(t->str + n, sizeof t->str - (size_t)n, " -mattr=%s", t->mattr);
  snprintf(t->str + n, sizeof t->str - (size_t)n, " -num-cores=%d", t->num_cores);
}

/* ---- target machine ---------------------------------------------------------- */

/* x86-64 objects use the large code model: the JIT places an object's
 * code and data wherever the process has room, and in a process whose
 * address space large libraries have cut up (PyTorch 2 from PyPI maps 5 GB
 * of CUDA libraries) they land more than 2 GB apart, out of reach of the
 * small model's 32-bit offsets (a kernel then read 4 GB short of its
 * constants and crashed); a model's weights in .rodata may also pass
 * 2 GB. Addresses then take a 64-bit immediate, formed once per kernel
 * outside its loops. Other CPUs keep their default. */
static LLVMCodeModel code_model(const char *triple) {
  return strncmp(triple, "x86_64", 6) == 0 ? LLVMCodeModelLarge : LLVMCodeModelDefault;
}

LLVMTargetMachineRef llvm_make_machine(const mlc_target *t, mlc_error *err) {
  cg_llvm_init();
  char *triple = t->mtriple[0] ? LLVMNormalizeTargetTriple(t->mtriple) : LLVMGetDefaultTargetTriple();
  LLVMTargetRef target;
  char *msg = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    mlc_error_set(err, "target %s: %s", t->str, msg ? msg : "unknown triple");
  } else {
    const char *features = t->mattr[0] ? t->mattr
                           : strcmp(t->mcpu, mlc_target_host_cpu()) == 0 ? mlc_target_host_features()
                                                                          : "";
    tm = LLVMCreateTargetMachine(target, triple, t->mcpu, features, LLVMCodeGenLevelAggressive,
                                 LLVMRelocPIC, code_model(triple));
    if (!tm) mlc_error_set(err, "target %s: cannot create a target machine", t->str);
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeMessage(triple);
  return tm;
}

static bool take_error(LLVMErrorRef e, mlc_error *err, const char *what) {
  if (!e) return true;
  char *msg = LLVMGetErrorMessage(e);
  mlc_error_set(err, "%s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}

static bool optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, mlc_error *err) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  bool ok = take_error(LLVMRunPasses(mod, "default<O3>", tm, opts), err, "LLVM passes");
  LLVMDisposePassBuilderOptions(opts);
  return ok;
}

bool llvm_emit_object(LLVMModuleRef mod, LLVMTargetMachineRef tm, mlc_object *out, mlc_error *err) {
  char *msg = NULL;
  LLVMMemoryBufferRef buf;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &buf)) {
    mlc_error_set(err, "LLVM code generation: %s", msg ? msg : "failed");
    LLVMDisposeMessage(msg);
    return false;
  }
  size_t len = LLVMGetBufferSize(buf);
  out->data = mlc_malloc(len ? len : 1);
  if (!out->data) {
    LLVMDisposeMemoryBuffer(buf);
    return mlc_error_set(err, "out of memory for a %zu-byte object", len);
  }
  memcpy(out->data, LLVMGetBufferStart(buf), len);
  out->len = len;
  LLVMDisposeMemoryBuffer(buf);
  return true;
}


static bool host_little_endian(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

/* Each array as an external constant [len x i8] holding its bytes (a
 * ConstantDataArray: LLVM keeps the bytes as they are, so 45 MB of weights
 * cost one copy, not a constant per float). Added after the optimizer,
 * which would otherwise delete or scan arrays no kernel refers to. */
static bool add_data(cg *c, LLVMTargetMachineRef tm, int n, const mlc_object_data *data,
                     mlc_error *err) {
  if (n == 0) return true;
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  bool little = LLVMByteOrder(td) == LLVMLittleEndian;
  LLVMDisposeTargetData(td);
  if (little != host_little_endian())
    return mlc_error_set(err, "target %s: data arrays need the host's byte order", c->target->str);
  for (int i = 0; i < n; i++) {
    const mlc_object_data *d = &data[i];
    static const char zero = 0;
    if (d->len > UINT32_MAX)
      return mlc_error_set(err, "data array %s: %zu bytes (at most 4 GiB)", d->symbol, d->len);
    LLVMValueRef init = LLVMConstStringInContext(c->ctx, d->len ? d->bytes : &zero,
                                                 d->len ? (unsigned)d->len : 1, 1);
    LLVMValueRef g = LLVMAddGlobal(c->mod, LLVMTypeOf(init), d->symbol);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 64);
  }
  return true;
}

static bool llvm_build_data(const mlc_target *t, int n, mlc_prim_func *const *lowered,
                            const char *const *symbols, int n_data, const mlc_object_data *data,
                            mlc_str *ir_text, mlc_object *out, mlc_error *err) {
  *out = (mlc_object){0};
  LLVMTargetMachineRef tm = llvm_make_machine(t, err);
  if (!tm) return false;
  cg c;
  cg_open(&c, t, tm);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    ok = cg_emit_function(&c, lowered[i], symbols[i], err);
    if (!ok) mlc_error_prefix(err, "function %s", lowered[i]->name);
  }
  ok = ok && cg_verify(&c, ir_text, err);
  ok = ok && optimize(c.mod, tm, err) && add_data(&c, tm, n_data, data, err) &&
       llvm_emit_object(c.mod, tm, out, err);

  cg_close(&c);
  LLVMDisposeTargetMachine(tm);
  return ok;
}

static bool llvm_build(const mlc_target *t, int n, mlc_prim_func *const *lowered,
                       const char *const *symbols, mlc_str *ir_text, mlc_object *out,
                       mlc_error *err) {
  return llvm_build_data(t, n, lowered, symbols, 0, NULL, ir_text, out, err);
}

const mlc_target_backend mlc_backend_llvm = {
    .kind = "llvm",
    .device = MLC_DEVICE_CPU,
    .set_option = llvm_set_option,
    .finish = llvm_finish,
    .build = llvm_build,
    .build_with_data = llvm_build_data,
};
