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
 * llvm_codegen.c builds LLVM IR, llvm_backend.c runs the O3 pipeline and
 * emits an ELF object in memory.
 *
 * Generated code (docs/API.md). Each prim_func becomes
 *   int32_t <symbol>(void **args)   args[i]: data pointer of parameter i;
 *                                   then, for a function of size vars,
 *                                   args[n_params + k]: an int64_t * to
 *                                   the value of size var k
 * returning MLC_KERNEL_OK (0), MLC_KERNEL_NO_MEMORY (-1) when a heap
 * allocation inside the kernel failed (the kernel then skips the work that
 * needed it), or MLC_KERNEL_BAD_SIZE (-2) when a size lies outside its
 * declared bounds (nothing is done). The symbol is the function's
 * name unless the caller gives others. mlc_target_write_header declares it
 * and a typed wrapper `static inline int32_t <symbol>_call(float *A, ...)`,
 * so the two never clash. Helpers (outlined parallel bodies, inner bodies
 * with noalias parameters) have internal linkage. Objects are PIC and refer
 * only to libc/libm (malloc, free, aligned_alloc, memset, memcpy, expf,
 * tanhf, erff, ...) and to the runtime library build/libmlcrt.a:
 *   void mlc_parallel_for_range(int64_t n, void (*fn)(int64_t lo, int64_t hi,
 *                               void *closure), void *closure, int32_t num_threads,
 *                               int64_t cost);
 * which runs fn on ranges covering 0..n-1 on the runtime's thread team (targets/runtime/
 * mlcrt.h); num_threads is the target's -num-cores (MLC_NUM_THREADS in the
 * environment overrides it), cost the codegen's estimate of one
 * iteration's work (stores executed). Link with libmlcrt.a and -lpthread.
 *
 * Floating point. Reductions keep the interpreter's order (no fast-math
 * flags: LLVM 14's C API cannot set them per instruction) except over the
 * lanes of a vectorized reduce loop, which the schedule asked for
 * (mlc_sched_vectorize): there the lanes combine as a tree. float32
 * `a * b + c` is emitted as llvm.fmuladd (contraction: one rounding
 * instead of two where the CPU has FMA), so results differ from the
 * interpreter by rounding only. float16 values are stored as IEEE half
 * and every operation rounds to half, as the interpreter does; intrinsics
 * (exp, tanh, ...) on float16 compute in float32.
 *
 * Loop kinds (codegen): serial loops are plain loops; unrolled loops are
 * unrolled while emitting when the extent is constant and the body small
 * (else they get llvm.loop.unroll metadata); vectorized loops become LLVM
 * vector operations (constant extent 1..64; unit-stride accesses as vector
 * loads/stores, lane-invariant values broadcast, every lane updating one
 * element by a sum, product, max or min as one tree over the lanes, other
 * accesses and statements whose lanes could interact done lane by lane); parallel loops
 * are outlined and run through mlc_parallel_for_range. Errors: a vectorized loop
 * with a non-constant or too-large extent, nested parallel loops, a
 * parallel loop inside a vectorized one, and thread-bound loops on `llvm`.
 */
#ifndef MLC_TARGETS_H
#define MLC_TARGETS_H

#include "ir/ir.h"

/* ---- targets ---------------------------------------------------------- */

typedef struct mlc_target mlc_target;
typedef struct mlc_object mlc_object;
typedef struct mlc_object_data mlc_object_data;

/* What a target's kernels run on. Code above targets/ asks this (never
 * which backend it is): the design space, the runner, the measurement
 * defaults and the files mlc-compile writes follow it. */
typedef enum mlc_device_kind {
  MLC_DEVICE_CPU,  /* objects are ELF the JIT loads into the process */
  MLC_DEVICE_CUDA, /* objects are PTX, run through the CUDA driver */
} mlc_device_kind;
#define MLC_DEVICE_KIND_COUNT 2

/* What one kind of target ("llvm", "cuda") provides. Members marked
 * optional may be NULL. */
typedef struct mlc_target_backend {
  const char *kind;       /* the first word of a target string */
  mlc_device_kind device; /* what its objects run on */
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
  /* optional; rewrites a prim_func before
   * mlc_target_lower (cuda: shared buffers compacted to one thread block's
   * tile). Returns f itself when nothing changes, NULL with err set. */
  const mlc_prim_func *(*prepare)(mlc_arena *a, const mlc_prim_func *f, mlc_error *err);
  /* optional (NULL: its objects cannot carry data); `build` with n_data
   * constant arrays defined in the same object (mlc_target_build_with_data). */
  bool (*build_with_data)(const mlc_target *t, int n, mlc_prim_func *const *lowered,
                          const char *const *symbols, int n_data, const mlc_object_data *data,
                          mlc_str *ir_text, mlc_object *out, mlc_error *err);
} mlc_target_backend;

/* A parsed, normalized target. Plain data: copy it freely. */
struct mlc_target {
  const mlc_target_backend *backend;
  char str[512];    /* normalized text, the key of tuning records:
                     * "llvm -mcpu=znver3 -num-cores=2" (options in a fixed
                     * order; -mtriple and -mattr only when given) */
  char mcpu[64];    /* llvm: CPU name; the host's when not given;
                     * cuda: the SM, "sm_80" */
  char mattr[256];  /* llvm: "+avx2,-fma"; "" derives features from mcpu
                     * (the host's full feature set when mcpu is the host) */
  char mtriple[64]; /* llvm: "" for the host triple */
  int num_cores;    /* threads for parallel loops; default: CPUs this
                     * process may run on (sched_getaffinity) */
};

/* Parse "llvm", "llvm -mcpu=znver3 -num-cores=2" (options "-key=value",
 * separated by spaces). Errors name the bad word. */
bool mlc_target_parse(const char *text, mlc_target *out, mlc_error *err);
/* What t's kernels run on (t->backend->device). */
mlc_device_kind mlc_target_device(const mlc_target *t);
/* The host CPU target, as "llvm" parses. */
void mlc_target_host(mlc_target *out);
/* The host's CPU name, feature string and usable CPU count (cached). */
const char *mlc_target_host_cpu(void);
const char *mlc_target_host_features(void);
int mlc_target_host_cores(void);
/* the LLVM feature string an llvm target's machine is made
 * with: -mattr when given, else the host's features when the CPU is the
 * host's, else "" (a named CPU's defaults, which LLVM 14's C API does not
 * list); "" for other backends. mlc_target_has_feature: whether that
 * string turns `feature` on ("avx512vnni": "+avx512vnni" in the list). */
const char *mlc_target_cpu_features(const mlc_target *t);
bool mlc_target_has_feature(const mlc_target *t, const char *feature);
/* The multiply-adds one T.call_extern of a CPU builtin the LLVM backend
 * expands (mlc_x86_vpdpbusd_16x4, mlc_x86_vdpbf16ps_16x2 and the
 * micro-kernels mlc_x86_vpdpbusd_block, mlc_x86_vdpbf16ps_block,
 * mlc_x86_tdpbusd_block, mlc_x86_tdpbf16ps_block and their _init
 * variants) performs, from its
 * constant shape arguments; 0 for any other call or a shape that is not
 * constant (the cost model's count of what a tensorized call computes). */
double mlc_target_extern_work(const mlc_expr *call);
/* Whether `name` is a CPU builtin the LLVM backend expands inline (no
 * symbol to link or define). */
bool mlc_target_is_builtin(const char *name);

/* ---- lowering ------------------------------------------------------------ */

/* Lower a prim_func to plain loops: block iter vars replaced by their
 * bindings, T.where predicates and reduction inits (run when every reduce
 * iter var is at its first value, tested as "every loop the reduce
 * bindings use is at its first iteration" where that is equivalent)
 * turned into `if` guards; an init of a block that ends a chain of loops
 * is instead hoisted before the outermost reduce loop under copies of the
 * spatial loops below it (decompose_reduction done by the lowering), so
 * the reduction loops carry no guard, where that is provably the same
 * (reduce bindings affine in their loops with the minimum at the first
 * iteration, an init free of reduce loop vars and injective over spatial
 * loops between reduce loops); otherwise the guard stays. Every buffer is flattened
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
/* A named read-only array for an object: a model's weights, so that they
 * travel in the object file as bytes instead of as C literals in a header
 * (a C compiler needs minutes and gigabytes for the 45 MB of ResNet-18).
 * In the object it is an external, 64-byte aligned constant in .rodata:
 * declare it in C as `extern const float <symbol>[len / 4];`. */
struct mlc_object_data {
  const char *symbol;
  const void *bytes; /* the contents in the host's byte order (a target of
                      * the other byte order is refused) */
  size_t len;        /* bytes; 0 gives a 1-byte zero array */
};

/* mlc_target_build with n_data constant arrays in the same object. The
 * arrays do not pass through the optimizer, nor into ir_text. Errors: a
 * backend without data support (cuda), a symbol given twice or equal to a
 * function's. */
bool mlc_target_build_with_data(const mlc_target *t, int n, const mlc_prim_func *const *funcs,
                                const char *const *symbols, int n_data,
                                const mlc_object_data *data, mlc_str *ir_text, mlc_object *out,
                                mlc_error *err);
/* Every function of a module, each under its own name. */
bool mlc_target_build_module(const mlc_target *t, const mlc_module *m, mlc_str *ir_text,
                             mlc_object *out, mlc_error *err);

/* The llvm backend (CPU code through the LLVM 14 C API). */
extern const mlc_target_backend mlc_backend_llvm;

/* The cuda backend (NVPTX through the LLVM 14 C API,
 * targets/cuda_*.c). Target string "cuda [-arch=sm_80]" (t->mcpu holds the
 * arch: sm_50 .. sm_86, the SMs LLVM 14 knows; default sm_80). A build
 * gives PTX text (ISA 7.5, the newest LLVM 14 writes) in the object, NUL-
 * terminated (len excludes the NUL), one .entry per function taking the
 * parameters' data pointers in order (16-byte aligned, as cuMemAlloc's).
 *
 * Before lowering, shared buffers are compacted to one block's tile per
 * iteration of the loop around all their uses (the notes' window sum:
 * 130 elements). Loops bound to blockIdx.x/y/z and threadIdx.x/y/z read
 * the special registers (launch extents: the largest extent bound to each
 * axis; smaller loops are guarded; a loop nested in one bound to the same
 * axis, as a cooperative fetch, splits its work among the same threads).
 * vthread loops are interleaved as TVM does (what does not use the
 * virtual thread runs once; private buffers get a copy per virtual
 * thread). Vectorized loops run their lanes in each thread (a copy of
 * aligned unit-stride elements as one ld/st.v2/v4). "shared" buffers live
 * in shared memory, the others in each
 * thread's registers/local memory; bar.sync separates shared-memory writes
 * from other threads' reads (and a loop's next writes from its reads).
 * exp, log, pow, tanh, erf call CUDA's libdevice (MLC_LIBDEVICE, else
 * $CUDA_HOME or /usr/local/cuda nvvm/libdevice/libdevice.10.bc), linked
 * into the module. Refused with a reason: no bound loop, more threads or
 * shared memory than sm_50..86 allow, parallel loops, stores that every
 * thread of a launched axis would run or race on (a reduction over a
 * threadIdx-bound loop is first made a cross-thread reduction by the
 * prepare step: cuda_allreduce.c), intermediate "global" buffers the
 * threads share, and barriers needed where only some threads run. Each kernel's launch
 * extents are also written as a PTX comment line
 *   // mlc.launch SYMBOL grid=X,Y,Z block=X,Y,Z shared=BYTES */
extern const mlc_target_backend mlc_backend_cuda;

/* What a GPU kernel needs at launch. */
typedef struct mlc_gpu_launch {
  int64_t grid[3];      /* blocks along x, y, z */
  int64_t block[3];     /* threads per block along x, y, z */
  int64_t shared_bytes; /* static shared memory per block */
  int64_t local_bytes;  /* per-thread local arrays (before register promotion) */
} mlc_gpu_launch;
/* Launch dimensions of f built for a cuda target, or false with the reason
 * the cuda backend would refuse f (unbound stores, too many threads, ...). */
bool mlc_cuda_launch_info(const mlc_target *t, const mlc_prim_func *f, mlc_gpu_launch *out,
                          mlc_error *err);
/* The launch extents of `symbol` from the `// mlc.launch` line of PTX the
 * cuda backend built (NUL-terminated); local_bytes is 0. */
bool mlc_cuda_ptx_launch(const mlc_object *ptx, const char *symbol, mlc_gpu_launch *l,
                         mlc_error *err);
/* A host object (ELF for `host`, an llvm target) for PTX built from funcs
 * under symbols (NULL: the functions' names): the PTX as constant data and,
 * per kernel, the entry point CPU objects have, `int32_t sym(void **args)`,
 * which runs the kernel on device 0 through libmlcrt's mlc_rt_cuda_launch
 * (targets/runtime/mlcrt.h: the CUDA driver opened with dlopen, the
 * module loaded once per process, every argument copied in and back) and
 * returns 0, or -1 with the reason in mlc_rt_cuda_error(). Link it with
 * libmlcrt.a, -ldl and -lpthread. mlc_target_write_header declares it as
 * for CPU objects. */
bool mlc_cuda_host_object(const mlc_target *host, const mlc_object *ptx, int n,
                          const mlc_prim_func *const *funcs, const char *const *symbols,
                          mlc_object *out, mlc_error *err);

/* Running PTX with the CUDA Driver API (libcuda.so.1, or the library
 * MLC_CUDA_DRIVER names, as tests do with tests/fake_cuda.c; opened with
 * dlopen on first use through targets/runtime/cuda_api.h, which libmlcrt's
 * launcher shares; device 0's primary context, reset after
 * a failed launch; tools/gpu_check.sh runs it on a GPU). Whether a device can be used: false
 * with "no CUDA driver (...)" or "no CUDA device". */
bool mlc_cuda_available(mlc_error *err);
/* Load the PTX, copy args in (host arrays as mlc_interp_run takes them, 16-
 * byte aligned device copies), launch `symbol` once with l's extents, copy
 * every arg back; then, when ms is given and repeat > 0, `warmup` more
 * launches and `repeat` launches timed with CUDA events: *ms is their
 * median in milliseconds. */
bool mlc_cuda_run(const mlc_object *ptx, const char *symbol, const mlc_gpu_launch *l, int n,
                  mlc_array *args, int warmup, int repeat, double *ms, mlc_error *err);
/* The same in steps, so a kernel timed many times is loaded (and JIT-
 * compiled by the driver) once: load the PTX's `symbol`, call it (as
 * mlc_cuda_run, each call copying args in and out), unload. A kernel
 * loaded before a failed launch reset the context refuses calls. */
typedef struct mlc_cuda_kernel mlc_cuda_kernel;
mlc_cuda_kernel *mlc_cuda_load(const mlc_object *ptx, const char *symbol, const mlc_gpu_launch *l,
                               mlc_error *err);
bool mlc_cuda_call(mlc_cuda_kernel *k, int n, mlc_array *args, int warmup, int repeat, double *ms,
                   mlc_error *err);
void mlc_cuda_unload(mlc_cuda_kernel *k);

/* ---- in-process loading (LLVM ORC LLJIT) ------------------------------ */

typedef int32_t (*mlc_kernel_fn)(void **args);
enum { MLC_KERNEL_OK = 0, MLC_KERNEL_NO_MEMORY = -1, MLC_KERNEL_BAD_SIZE = -2 };
typedef struct mlc_jit_lib mlc_jit_lib;

/* Load an llvm object into the process's JIT (created on first use, shared
 * by all loads, safe to call from several threads). The bytes are copied.
 * Entry symbols of objects loaded at the same time must differ: a second
 * object defining a loaded symbol is refused. */
mlc_jit_lib *mlc_jit_load(const mlc_object *obj, mlc_error *err);
mlc_kernel_fn mlc_jit_lookup(mlc_jit_lib *lib, const char *symbol, mlc_error *err);
/* Free the object's code and data; pointers from lookup become invalid. */
void mlc_jit_unload(mlc_jit_lib *lib);
/* let loaded objects call `name` (a T.call_extern
 * target) at addr. Objects resolve only the runtime, libc/libm and the
 * symbols defined here, never the whole process. Defining a name again
 * with the same address is a no-op; with another, an error. Up to 64. */
bool mlc_jit_define_symbol(const char *name, void *addr, mlc_error *err);
/* Dispose of the process's JIT (every loaded object with it); a later load
 * creates a new one. For tools that exit and leak checkers; requires that
 * no kernel runs and no lib is used afterwards. */
void mlc_jit_shutdown(void);

/* Call fn with args[i].data as its argument i (args as mlc_interp_run
 * takes them). */
int32_t mlc_kernel_call(mlc_kernel_fn fn, int n, const mlc_array *args);
/* The same for a function of size vars: sizes[k] is size var k's value
 * (mlc_func_bind_sizes reads them from the arrays). */
int32_t mlc_kernel_call_sized(mlc_kernel_fn fn, int n, const mlc_array *args, int n_sizes,
                              const int64_t *sizes);

/* ---- GPU verification (cuda_verify.c) -------------------------------------- */

/* Hardware limits a scheduled GPU prim_func must respect. */
typedef struct mlc_gpu_limits {
  int64_t max_threads_per_block; /* product of threadIdx.{x,y,z} extents */
  int64_t max_thread_dim[3];     /* threadIdx.x, .y, .z */
  int64_t max_grid_dim[3];       /* blockIdx.x, .y, .z */
  int64_t max_vthread;           /* product of vthread extents (meta-schedule: 8) */
  int64_t max_shared_bytes;      /* per thread block, all shared buffers of a kernel */
  int64_t max_local_bytes;       /* per thread, all local buffers of a kernel */
  int64_t max_vector_bytes;      /* vectorized lanes * element bytes */
  int64_t warp_size;             /* informational: auto-bind extents are multiples */
} mlc_gpu_limits;

/* sm_80 (A100): 1024 threads per block, thread dims 1024/1024/64, grid
 * 2^31-1/65535/65535, 8 vthreads (meta-schedule's VerifyGPUCode), 48 KiB
 * shared per block (the static limit: shared buffers are emitted as
 * fixed-size arrays; the 163 KiB opt-in needs dynamic shared memory and
 * cuFuncSetAttribute), 64 KiB local per thread (the cuda backend's limit
 * on local arrays, CUDA_MAX_LOCAL; the hardware allows 512 KiB, but arrays
 * that large only spill), 16-byte vectors, warp 32. */
void mlc_gpu_limits_sm80(mlc_gpu_limits *out);
/* The limits of t's GPU (its -arch); false for a CPU target. Every SM
 * the cuda backend takes (sm_50 .. sm_86) has sm_80's limits as far as
 * these go: the thread, block and grid extents, 48 KiB of static shared
 * memory per block, 16-byte vectors and warps of 32 are the same from
 * sm_50 on; local bytes and vthreads are our own bounds. */
bool mlc_target_gpu_limits(const mlc_target *t, mlc_gpu_limits *out);

/* Which check failed first (MLC_GPU_OK: none). */
typedef enum mlc_gpu_check {
  MLC_GPU_OK,
  MLC_GPU_UNBOUND,   /* work outside every thread binding (host) */
  MLC_GPU_THREADS,   /* threads per block, a thread or grid dimension */
  MLC_GPU_VTHREAD,   /* virtual threads */
  MLC_GPU_SHARED,    /* shared memory per block */
  MLC_GPU_LOCAL,     /* local memory per thread */
  MLC_GPU_VECTOR,    /* vector width in bytes */
  MLC_GPU_PARALLEL,  /* a parallel loop */
  MLC_GPU_STRUCTURE, /* inconsistent or misplaced bindings, non-constant extents */
} mlc_gpu_check;

/* What the kernels of a function use: maxima over its kernels. */
typedef struct mlc_gpu_usage {
  int n_kernels;          /* top-level nests rooted at a thread-bound loop */
  int64_t threads;        /* threads per block */
  int64_t vthreads;
  int64_t shared_bytes;   /* per block, buffers compacted to what they touch */
  int64_t local_bytes;    /* per thread, likewise */
  mlc_gpu_check failed;   /* the first failed check */
} mlc_gpu_usage;

/* Check a scheduled prim_func against the limits: every statement that
 * does work lies inside a thread-bound loop (a loop outside them would run
 * on the host), blockIdx loops are outermost in their kernel and each
 * thread tag has one extent per kernel, no parallel loop, threads, grid,
 * vthreads, vector bytes within the limits, and shared (per block) and
 * local (per thread) memory within the limits. A shared or local buffer's
 * size is the region its accesses touch where it is placed (the lowest
 * loop above all its uses; compacted as TVM does, which targets/lower.c
 * does not yet do for shared buffers under thread loops): for shared, all
 * loops below that one and the thread and vthread loops above it relaxed
 * (one copy per block); for local, the loops below it that are not thread
 * loops relaxed, times the vthread extents above (one copy per vthread).
 * Regions come from the blocks' declared T.reads/T.writes, a point
 * dimension narrowed by a T.where(q < C) when the index is q plus fixed
 * terms (an overshooting split), united per dimension when their starts
 * differ by constants; a dimension that cannot be bounded counts whole
 * (an over-approximation). Local buffers count once per vthread (TVM's
 * vthread injection; the cuda backend runs vthreads serially and reuses
 * one copy, so this over-approximates there). The message
 * names the kernel's first loop, the block or loop at fault and the
 * limit. usage may be NULL. */
bool mlc_gpu_verify(const mlc_prim_func *f, const mlc_gpu_limits *lim, mlc_gpu_usage *usage,
                    mlc_error *err);

/* ---- C header for emitted objects ------------------------------------- */

/* Append a C header declaring each function's entry `int32_t sym(void **)`
 * and a typed wrapper `sym_call(float *A, ...)` (parameter comments give
 * shapes). guard: the include-guard macro (NULL: MLC_KERNELS_H). Fails for
 * a symbol that is not a C identifier or is `main`. */
bool mlc_target_write_header(mlc_str *out, int n, const mlc_prim_func *const *funcs,
                             const char *const *symbols, const char *guard,
                             mlc_error *err);
/* The same for the launchers of mlc_cuda_host_object: the entry points
 * are declared alike, said to run on the GPU, with mlc_rt_cuda_error. */
bool mlc_cuda_write_header(mlc_str *out, int n, const mlc_prim_func *const *funcs,
                           const char *const *symbols, const char *guard, mlc_error *err);
/* Whether name is a C keyword or a name these headers use themselves
 * (stdint types, `args`): not a symbol a header may declare. */
bool mlc_target_c_reserved(const char *name);

#endif
