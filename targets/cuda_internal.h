/* Private to targets/: the cuda backend, in three files:
 *
 *   cuda_prepare.c  before lowering: shared buffers compacted to the tile
 *                   one thread block uses per iteration of the loop around
 *                   all their uses (mlc_target_backend.prepare)
 *   cuda_allreduce.c  before lowering, after that: cross-thread reductions
 *   cuda_vthread.c  after lowering: virtual threads interleaved, vector
 *                   lanes' indices made base + lane
 *   cuda_kernel.c   a lowered prim_func: launch extents, the checks that
 *                   refuse what cannot run on a GPU, barrier placement,
 *                   and the kernel's LLVM IR (statements here, expressions
 *                   through llvm_expr.c)
 *   cuda_backend.c  target options, the NVPTX target machine, libdevice,
 *                   the O3 pipeline and PTX emission
 *   cuda_driver.c   running PTX: the CUDA Driver API through dlopen
 *
 * Statements are generated here rather than by llvm_codegen.c: its loop,
 * allocation and vector-mode code is CPU-specific (status slots, heap
 * allocations, outlined parallel bodies), and the GPU needs different
 * meanings for thread-bound loops, shared/local allocations and barriers;
 * the expression code (the bulk: arithmetic, casts, loads, intrinsics) is
 * shared through llvm_internal.h, always in scalar mode (vectorized loops
 * become unrolled scalar code that NVPTX's load/store vectorizer merges).
 */
#ifndef MLC_TARGETS_CUDA_INTERNAL_H
#define MLC_TARGETS_CUDA_INTERNAL_H

#include "targets/llvm_internal.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* Limits every supported SM shares (sm_50 .. sm_86): threads per block,
 * block extents, grid extents, static shared memory per block. Local
 * arrays per thread are capped lower than the hardware's 512 KiB: more is
 * certainly a schedule mistake (a cache not placed under its thread). */
#define CUDA_MAX_THREADS 1024
#define CUDA_MAX_BLOCK_XY 1024
#define CUDA_MAX_BLOCK_Z 64
#define CUDA_MAX_GRID_X 2147483647LL
#define CUDA_MAX_GRID_YZ 65535
#define CUDA_MAX_SHARED (48 * 1024)
#define CUDA_MAX_LOCAL (64 * 1024)

const mlc_prim_func *cuda_prepare(mlc_arena *a, const mlc_prim_func *f, mlc_error *err);
/* Part of cuda_prepare (cuda_allreduce.c): reductions whose reduce loops
 * include a threadIdx loop rewritten as per-thread partials combined in
 * shared memory; NULL with err set for one that cannot be. Returns f
 * itself when there is none. */
const mlc_prim_func *cuda_lower_allreduce(mlc_arena *a, const mlc_prim_func *f, mlc_error *err);
/* s with every access old[i...] made new_[i - offset[d]...] (offset[d]
 * NULL: unchanged), blocks' regions and allocs included. */
mlc_stmt *cuda_replace_buffer(mlc_arena *a, mlc_stmt *s, const mlc_buffer *old, mlc_buffer *new_,
                              mlc_expr **offset);

/* Lowered s with the index of every access to a 1-D buffer replaced by
 * fn(ud, index). */
mlc_stmt *cuda_rewrite_indices(mlc_arena *a, mlc_stmt *s, mlc_expr *(*fn)(void *ud, mlc_expr *index),
                               void *ud);

/* After lowering (cuda_vthread.c): vthread loops pushed down to the
 * statements that use their var, thread-private buffers under them
 * expanded to one copy per virtual thread; in vectorized loops, unit-
 * stride indices written base + (lane - min). Returns lowered itself when
 * nothing changes. */
const mlc_prim_func *cuda_vthread(mlc_arena *a, const mlc_prim_func *lowered);
/* The largest power of two (up to 64) an integer expression is always a
 * multiple of (1 when unknown). */
int64_t cuda_pow2_multiple(const mlc_expr *e);

/* Launch extents and the checks of cuda_kernel.c, on a lowered function. */
bool cuda_analyze(mlc_arena *a, const mlc_prim_func *lowered, mlc_gpu_launch *out,
                  mlc_error *err);

/* Emit `void @symbol(T0 *, ...)` with its nvvm.annotations into c->mod
 * (after cuda_vthread);
 * false with err set for code a GPU cannot run. */
bool cuda_emit_kernel(cg *c, const mlc_prim_func *lowered, const char *symbol,
                      mlc_gpu_launch *launch, mlc_error *err);


#pragma GCC visibility pop
#endif
