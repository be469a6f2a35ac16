/* Private to measure/: the runner interface of `mlc-worker run`.
 *
 * A runner loads one kind of object, calls its kernel on host arrays and
 * times it. Both kinds sit behind the same worker protocol (measure.h):
 * the runner of a RUN_REQ is chosen per object by its format, so the
 * reference (the unscheduled kernel, always built for the host CPU) runs
 * on the CPU runner while a cuda candidate (PTX) runs on the CUDA runner,
 * and the result check is the same for both.
 *
 *   runner_cpu   ELF objects, loaded with ORC in the worker (runner_cpu.c)
 *   runner_cuda  PTX text from the cuda backend, run on device 0 through
 *                the CUDA driver API, opened with dlopen (runner_cuda.c,
 *                targets' mlc_cuda_load/call)
 */
#ifndef MLC_RUNNER_INTERNAL_H
#define MLC_RUNNER_INTERNAL_H

#include "measure/frame_internal.h"
#include "ir/ir.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* The symbols of a candidate's kernel and of a workload's reference
 * kernel in BUILD_REQ and RUN_REQ; a build of the reference's symbol is
 * the reference (worker.c builds it its own way). */
#define MLC_MEASURE_CAND_SYMBOL "mlc_cand"
#define MLC_MEASURE_REF_SYMBOL "mlc_ref"

/* A decoded RUN_REQ (measure.h's wire protocol). */
typedef struct run_req {
  uint64_t key;
  char *symbol, *ref_symbol;
  const void *obj, *ref_obj;
  size_t obj_len, ref_len;
  int n_args;
  frame_arg args[MLC_MEASURE_MAX_ARGS];
  uint32_t number, repeat, flush;
  uint32_t fault; /* MLC_FAULT_NONE unless the worker runs with faults enabled */
  double min_repeat_ms, rtol, atol;
  uint64_t seed, max_bytes;
  double max_call_sec; /* 0: no limit (the tuner's early abort) */
  uint32_t threads;    /* threads the kernel's parallel loops use (1: serial) */
  double retime_budget_s; /* re-timing stops once the request has run this long */
  double start;        /* when the request arrived (mlc_now_sec) */
} run_req;

/* What the runner saw of other work while it timed (one attempt). */
typedef struct timing_watch {
  bool disturbed;
  long ivcsw;         /* involuntary context switches of the process's threads */
  double cpu_ratio;   /* process CPU time over wall time of the timed calls */
  double caller_ratio;/* the calling thread's CPU time over wall time (lowest repeat) */
  char why[96];       /* the first sign seen, for the log */
} timing_watch;

/* Whether a speed probe of `probe` seconds (before a repeat) says the
 * machine lent fewer cores than when it ran fastest: more than 1.3x
 * *best, which keeps the fastest seen (probe <= 0: no probe, false). */
bool mlc_runner_probe_slow(double *best, double probe);

typedef struct runner_impl {
  const char *name; /* "cpu", "cuda" */
  /* Whether obj is this runner's kind of object (ELF, PTX text). */
  bool (*owns)(const void *obj, size_t len);
  /* Whether kernels can run in this process; false with the reason
   * ("no CUDA device: ..."). */
  bool (*available)(mlc_error *err);
  /* Load obj and find symbol: a handle for the calls below; NULL with err. */
  void *(*load)(const void *obj, size_t len, const char *symbol, mlc_error *err);
  /* One call on n host arrays, updated in place (copied to and from the
   * device where there is one); *rc: the kernel's status (0: ok, -1: an
   * allocation inside it failed). False: it could not run (err says why). */
  bool (*call)(void *k, int n, mlc_array *args, int32_t *rc, mlc_error *err);
  /* q->repeat timings of at least q->number calls each (q->min_repeat_ms
   * grows the count): secs[r] per call; w: interference seen; *retimes:
   * timings redone because of it. */
  bool (*time)(void *k, const run_req *q, mlc_array *args, double *secs, timing_watch *w,
               int *retimes, mlc_error *err);
  void (*unload)(void *k);
  /* optional: mlc_measure_defaults changed for this runner's kernels */
  void (*measure_defaults)(mlc_measure_opts *o);
} runner_impl;

extern const runner_impl runner_cpu, runner_cuda;


#pragma GCC visibility pop
#endif
