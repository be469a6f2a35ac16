/* targets: target descriptions, lowering TensorIR to loops, machine code
 * generation, in-process loading, and C headers for emitted objects.
 *
 *   mlc_target t;
 *   if (!mlc_target_parse("llvm -num-cores=2", &t, &err)) ...   // "llvm": host CPU
 *   mlc_object obj;
 *   if (!mlc_target_build(&t, 1, &f, NULL, &obj, &err)) ...       // f: any prim_func
 *   mlc_jit_lib *lib = mlc_jit_load(&obj, &err);                  // one JIT per process
 *   mlc_kernel_fn fn = mlc_jit_lookup(lib, f->name, &err);
 *   void *args[] = {A->data, B->data, C->data};
 *   int32_t rc = fn(args);                                        // 0 on success
 *   mlc_jit_unload(lib);                                          // frees the code
 *   mlc_object_write(&obj, "mm.o", &err);                         // for users
 *   mlc_object_free(&obj);
 *
 * Pipeline: mlc_target_lower (blocks -> plain loops over flat buffers;
 * lower.c, lower_alloc.c), then the target's backend (a struct of function
 * pointers, below) turns lowered functions into an object: for `llvm`,
 * codegen_llvm.c builds LLVM IR, llvm_backend.c runs the O3 pipeline and
 * emits an ELF object in memory.
 *
 * Generated code (DESIGN.md section 4). Each prim_func becomes
 *   int32_t <symbol>(void **args)   args[i]: data pointer of parameter i
 * returning 0, or -1 when a heap allocation inside the kernel failed (the
 * kernel then skips the work that needed it). The symbol is the function's
 * name unless the caller gives others. mlc_target_write_header declares it
 * and a typed wrapper `static inline int32_t <symbol>_call(float *A, ...)`,
 * so the two never clash. Helpers (outlined parallel bodies, inner bodies
 * with noalias parameters) have internal linkage. Objects are PIC and refer
 * only to libc/libm (malloc, free, aligned_alloc, memset, memcpy, expf,
 * tanhf, erff, ...) and to the runtime library build/libmlcrt.a:
 *   void mlc_parallel_for(int64_t n, void (*fn)(int64_t i, void *closure),
 *                         void *closure, int32_t num_threads);
 * which runs fn(0..n-1) on OpenMP threads; num_threads is the target's
 * -num-cores, and MLC_NUM_THREADS in the environment overrides it.
 *
 * Floating point. No reassociation: LLVM 14's C API cannot set per-
 * instruction fast-math flags, and reductions then keep the interpreter's
 * order. float32 `a * b + c` is emitted as llvm.fmuladd (contraction: one
 * rounding instead of two where the CPU has FMA), so results differ from
 * the interpreter by rounding only. float16 values are stored as IEEE half
 * and every operation rounds to half, as the interpreter does; intrinsics
 * (exp, tanh, ...) on float16 compute in float32.
 *
 * Loop kinds (codegen): serial loops are plain loops; unrolled loops are
 * unrolled while emitting when the extent is constant and the body small
 * (else they get llvm.loop.unroll metadata); vectorized loops become LLVM
 * vector operations (constant extent 1..64; unit-stride accesses as vector
 * loads/stores, lane-invariant values broadcast, other accesses and
 * statements whose lanes could interact done lane by lane); parallel loops
 * are outlined and run through mlc_parallel_for. Errors: a vectorized loop
 * with a non-constant or too-large extent, nested parallel loops, a
 * parallel loop inside a vectorized one, and thread-bound loops on `llvm`.
 */
#ifndef MLC_TARGETS_H
#define MLC_TARGETS_H

#include "ir/ir.h"

/* ---- targets ---------------------------------------------------------- */

typedef struct mlc_target mlc_target;
typedef struct mlc_object mlc_object;

/* What one kind of target ("llvm", later "cuda") provides. Members marked
 * optional may be NULL. */
typedef struct mlc_target_backend {
  const char *kind; /* the first word of a target string */
  /* Apply one option of the target string (key without the dash, value
   * after '=', NULL when absent); false with a message if unknown or bad. */
  bool (*set_option)(mlc_target *t, const char *key, const char *value, mlc_error *err);
  /* Fill what the string left out (host detection) and write t->str. */
  void (*finish)(mlc_target *t);
  /* Compile lowered functions (mlc_target_lower) into one object under the
   * given symbols. ir_text (optional, may be NULL): receives the backend's
   * IR as generated, before optimization (LLVM IR text for llvm). */
  bool (*build)(const mlc_target *t, int n, mlc_prim_func *const *lowered,
                const char *const *symbols, mlc_str *ir_text, mlc_object *out,
                mlc_error *err);
} mlc_target_backend;

/* A parsed, normalized target. Plain data: copy it freely. */
struct mlc_target {
  const mlc_target_backend *backend;
  char str[512];    /* normalized text, the key of tuning records:
                     * "llvm -mcpu=znver3 -num-cores=2" (options in a fixed
                     * order; -mtriple and -mattr only when given) */
  char mcpu[64];    /* llvm: CPU name; the host's when not given */
  char mattr[256];  /* llvm: "+avx2,-fma"; "" derives features from mcpu
                     * (the host's full feature set when mcpu is the host) */
  char mtriple[64]; /* llvm: "" for the host triple */
  int num_cores;    /* threads for parallel loops; default: CPUs this
                     * process may run on (sched_getaffinity) */
};

/* Parse "llvm", "llvm -mcpu=znver3 -num-cores=2" (options "-key=value",
 * separated by spaces). Errors name the bad word. */
bool mlc_target_parse(const char *text, mlc_target *out, mlc_error *err);
/* The host CPU target, as "llvm" parses. */
void mlc_target_host(mlc_target *out);
/* The host's CPU name, feature string and usable CPU count (cached). */
const char *mlc_target_host_cpu(void);
const char *mlc_target_host_features(void);
int mlc_target_host_cores(void);

/* ---- lowering ------------------------------------------------------------ */

/* Lower a prim_func to plain loops: block iter vars replaced by their
 * bindings, T.where predicates and reduction inits (run when every reduce
 * iter var is at its first value, tested as "every loop the reduce
 * bindings use is at its first iteration" where that is equivalent)
 * turned into `if` guards; an init of a block that ends a chain of loops
 * is instead hoisted before the outermost reduce loop under copies of the
 * spatial loops below it (decompose_reduction done by the lowering), so
 * the reduction loops carry no guard. Every buffer is flattened
 * row-major to one dimension, each intermediate buffer is an
 * ALLOCATE placed at the lowest loop where all its uses meet (never inside
 * a loop its reduction accumulates over, nor inside a vectorized loop) and
 * compacted to the region it touches there, index expressions simplified.
 * The result's body is a plain statement (no blocks); its params are the
 * flattened parameters, in order. It refers to f's vars: keep f alive. */
mlc_prim_func *mlc_target_lower(mlc_arena *a, const mlc_prim_func *f, mlc_error *err);

/* Lowered stack allocations up to this many bytes live on the stack
 * (64-byte aligned); larger ones use aligned_alloc/free. */
#define MLC_STACK_ALLOC_MAX (64 * 1024)

/* ---- building object code ------------------------------------------------ */

/* Object code (ELF for llvm) in heap memory. */
struct mlc_object {
  void *data;
  size_t len;
};
void mlc_object_free(mlc_object *o);
bool mlc_object_write(const mlc_object *o, const char *path, mlc_error *err);

/* Lower and compile n prim_funcs into one object. symbols[i] names
 * function i's entry (symbols NULL: the functions' names). ir_text (may be
 * NULL) receives the generated IR before optimization. On failure `out` is
 * left empty and err says which function failed and why. */
bool mlc_target_build(const mlc_target *t, int n, const mlc_prim_func *const *funcs,
                      const char *const *symbols, mlc_str *ir_text, mlc_object *out,
                      mlc_error *err);
/* Every function of a module, each under its own name. */
bool mlc_target_build_module(const mlc_target *t, const mlc_module *m, mlc_str *ir_text,
                             mlc_object *out, mlc_error *err);

/* The llvm backend (CPU code through the LLVM 14 C API). */
extern const mlc_target_backend mlc_backend_llvm;

/* ---- in-process loading (LLVM ORC LLJIT) ------------------------------ */

typedef int32_t (*mlc_kernel_fn)(void **args);
typedef struct mlc_jit_lib mlc_jit_lib;

/* Load an llvm object into the process's JIT (created on first use, shared
 * by all loads, safe to call from several threads). The bytes are copied.
 * Entry symbols of objects loaded at the same time must differ: a second
 * object defining a loaded symbol is refused. */
mlc_jit_lib *mlc_jit_load(const mlc_object *obj, mlc_error *err);
mlc_kernel_fn mlc_jit_lookup(mlc_jit_lib *lib, const char *symbol, mlc_error *err);
/* Free the object's code and data; pointers from lookup become invalid. */
void mlc_jit_unload(mlc_jit_lib *lib);
/* Dispose of the process's JIT (every loaded object with it); a later load
 * creates a new one. For tools that exit and leak checkers; requires that
 * no kernel runs and no lib is used afterwards. */
void mlc_jit_shutdown(void);

/* Call fn with args[i].data as its argument i (args as mlc_interp_run
 * takes them). */
int32_t mlc_kernel_call(mlc_kernel_fn fn, int n, const mlc_array *args);

/* ---- C header for emitted objects ------------------------------------- */

/* Append a C header declaring each function's entry `int32_t sym(void **)`
 * and a typed wrapper `sym_call(float *A, ...)` (parameter comments give
 * shapes). guard: the include-guard macro (NULL: MLC_KERNELS_H). Fails for
 * a symbol that is not a C identifier or is `main`. */
bool mlc_target_write_header(mlc_str *out, int n, const mlc_prim_func *const *funcs,
                             const char *const *symbols, const char *guard,
                             mlc_error *err);

#endif
