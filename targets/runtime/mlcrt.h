/* The runtime library build/libmlcrt.a: what emitted objects call besides
 * libc and libm. It depends on nothing of libmlc.a, so users link only it
 * next to an emitted object (and -lpthread; -ldl for cuda objects). */
#ifndef MLC_MLCRT_H
#define MLC_MLCRT_H

#include <stdint.h>

/* Run fn(i, closure) for every i in [0, n), on the calling thread and the
 * runtime's worker threads, and return when all are done. Iterations are
 * claimed in chunks (about 8 per thread, none under ~1000 cost units),
 * each thread from its own contiguous part of the loop first (the caller
 * the first part; the same part every call, so a kernel called again finds
 * its data in the core's cache), then from the others' parts: a thread the
 * OS has not scheduled claims nothing and the loop does not wait for it;
 * iterations of one chunk run in order on one thread.
 * num_threads: the target's core count (<= 0: the CPUs this process may
 * use); a positive MLC_NUM_THREADS in the environment overrides it.
 * Unbound, a worker that finds itself on the CPU where the caller started
 * the loop moves to the others (its affinity: the team's CPUs but that
 * one); MLC_BIND_THREADS=1 instead binds the thread whose loop starts the
 * runtime's team to the first CPU of its mask and each worker thread to
 * another (parallel.c says why the runner that times kernels does so). cost:
 * the work of one iteration, in stores executed (the codegen's estimate;
 * < 1 counts as 1). One thread, n <= 1, a loop of under ~8000 cost units,
 * a call from inside a loop body (nested loops), or a call while another
 * thread of the process runs a loop, runs the loop serially in the calling
 * thread. */
void mlc_parallel_for(int64_t n, void (*fn)(int64_t i, void *closure), void *closure,
                      int32_t num_threads, int64_t cost);
/* The same loop handed out as ranges: fn(lo, hi, closure) runs iterations
 * [lo, hi) (a chunk, or the whole loop when it runs serially), so a body
 * unpacks its closure once a chunk rather than once an iteration (what
 * emitted objects call: a parallel loop of short iterations, an
 * elementwise row of 56 floats, lost a quarter of its time to the calls). */
void mlc_parallel_for_range(int64_t n, void (*fn)(int64_t lo, int64_t hi, void *closure), void *closure,
                            int32_t num_threads, int64_t cost);

/* Threads mlc_parallel_for would use for a given target core count. */
int mlc_rt_num_threads(int32_t num_threads);

/* Memory a kernel allocates inside (a fused kernel's intermediates over
 * the stack limit): 64-byte aligned, NULL when the allocation fails (and
 * for more than 2^48 bytes, which no machine has).
 * Freed blocks are kept for the thread's next allocations (at most 8 per
 * thread, the larger ones first), so a kernel called again reuses its
 * memory instead of faulting in fresh pages; pass free the size given to
 * alloc. A thread's cached blocks are freed when it exits, or now by
 * mlc_rt_workspace_release (a program done with its models). */
void *mlc_rt_workspace_alloc(int64_t bytes);
void mlc_rt_workspace_free(void *p, int64_t bytes);
void mlc_rt_workspace_release(void);

/* Asks Linux once per process for the AMX tile data state
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), which AMX tile
 * instructions need; emitted AMX code calls it before its first tile
 * load. 0 when granted (now or before), -1 when refused (the tile
 * instructions would then fault). */
int32_t mlc_rt_amx_enable(void);

/* Run a GPU kernel: what the entry points of objects written by
 * mlc-compile --target cuda call (`int32_t sym(void **args)`, as on CPUs).
 * ptx: the object's PTX text (NUL-terminated; the driver loads it on the
 * first call and the module is kept for the process, known by the text's
 * address); symbol: the kernel's .entry; launch: grid x, y, z then
 * block x, y, z; args[i]: host pointer of parameter i, arg_bytes[i] its
 * size. Each call copies every argument to the device, launches, waits,
 * and copies every argument back (so all of them must be writable). The
 * CUDA driver (libcuda.so.1, or the library MLC_CUDA_DRIVER names: for
 * tests) is opened with dlopen on the first call; device 0. Returns 0, or
 * -1 with the reason in mlc_rt_cuda_error(): "no CUDA driver (...)",
 * "no CUDA device", a driver call and its error. */
int32_t mlc_rt_cuda_launch(const char *ptx, const char *symbol, const int64_t *launch,
                           int32_t n_args, const int64_t *arg_bytes, void **args);
/* The message of this thread's last failed mlc_rt_cuda_launch ("" if none),
 * prefixed with the kernel's symbol. */
const char *mlc_rt_cuda_error(void);

/* C[m, n] = (accumulate ? C : 0) + op(A) @ op(B), row-major float32, through
 * OpenBLAS's cblas_sgemm (blas.c): op(A) is A[m, k] (trans_a 0) or A[k, m]
 * transposed, op(B) is B[k, n] or B[n, k] transposed; lda, ldb, ldc are
 * the row strides in elements. What a LibraryCall("openblas") kernel
 * calls. OpenBLAS comes from the process (linked with -lopenblas) or is
 * opened with dlopen on the first call (libopenblas.so.0, or the file
 * MLC_BLAS_LIBRARY names); it runs on mlc_rt_num_threads(0) threads.
 * Returns 0, or -1 when OpenBLAS cannot be found: C is then all NaN and
 * mlc_rt_blas_error() says why. */
int32_t mlc_rt_sgemm(int32_t trans_a, int32_t trans_b, int32_t m, int32_t n, int32_t k,
                     const float *a, int32_t lda, const float *b, int32_t ldb, float *c,
                     int32_t ldc, int32_t accumulate);
/* "" when OpenBLAS is found (finding it on the first call), else why not. */
const char *mlc_rt_blas_error(void);
/* The kernels OpenBLAS chose (openblas_get_corename: "SkylakeX",
 * "Prescott"...), finding it first; "" if not found. */
const char *mlc_rt_blas_corename(void);
/* The OPENBLAS_CORETYPE that suits this CPU by its features ("SkylakeX"
 * with AVX-512, "Haswell" with AVX2 and FMA), or NULL: for programs to set
 * before OpenBLAS loads where its own detection does not know the CPU
 * (OpenBLAS 0.3.21 runs SSE3 kernels on Sapphire Rapids). The mlc tools
 * set it when the environment does not. */
const char *mlc_rt_blas_coretype(void);

/* IEEE half <-> float, under the names LLVM 14 calls for float16 code on
 * CPUs without F16C instructions (compiler-rt has them, libgcc on x86 does
 * not). */
float __gnu_h2f_ieee(uint16_t h);
uint16_t __gnu_f2h_ieee(float f);

#endif
