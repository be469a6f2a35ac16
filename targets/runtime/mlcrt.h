/* The runtime library build/libmlcrt.a: what emitted objects call besides
 * libc and libm. It depends on nothing of libmlc.a, so users link only it
 * next to an emitted object (and -fopenmp). */
#ifndef MLC_MLCRT_H
#define MLC_MLCRT_H

#include <stdint.h>

/* Run fn(i, closure) for i in [0, n) on OpenMP threads, static schedule.
 * num_threads: the target's core count (<= 0: OpenMP's default); a positive
 * MLC_NUM_THREADS in the environment overrides it. One thread, n <= 1, or a
 * call from inside a parallel region runs the loop in the calling thread. */
void mlc_parallel_for(int64_t n, void (*fn)(int64_t i, void *closure), void *closure,
                      int32_t num_threads);

/* Threads mlc_parallel_for would use for a given target core count. */
int mlc_rt_num_threads(int32_t num_threads);

/* IEEE half <-> float, under the names LLVM 14 calls for float16 code on
 * CPUs without F16C instructions (compiler-rt has them, libgcc on x86 does
 * not). */
float __gnu_h2f_ieee(uint16_t h);
uint16_t __gnu_f2h_ieee(float f);

#endif
