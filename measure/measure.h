/* measure: building and timing candidates in worker processes.
 *
 * The tuner hands over a batch of candidates (a workload's TVMScript, a
 * trace JSON, a target); a pool of `mlc-worker build` processes replays,
 * lowers and compiles them in parallel, and one `mlc-worker run` process at
 * a time loads each object (ELF with ORC on the CPU; PTX of a cuda target
 * on the GPU through the CUDA driver API), checks its result against the
 * unscheduled kernel's, and times it. Results come back as they finish.
 *
 *   mlc_measure_opts o = mlc_measure_defaults();      // one builder per core
 *   mlc_measure *m = mlc_measure_new(&o, &err);
 *   mlc_measure_cand c[2] = {{.workload = ir, .trace = js0, .target = "llvm"}, ...};
 *   mlc_measure_submit(m, 2, c, &err);
 *   mlc_measure_result r;
 *   while (mlc_measure_next(m, &r) > 0)               // blocks; 0: batch done
 *     use(c[r.index], r.status, r.secs, r.n_secs);
 *   mlc_measure_free(m);                              // ends the workers
 *
 * or all at once: mlc_measure_run_batch(m, n, c, results, progress, ud, &err).
 *
 * Faults cost one candidate, never the batch: the worker is restarted.
 * The workers, the wire protocol (frames, BUILD_REQ/OK, RUN_REQ/OK,
 * ERROR), result checking, timing and test faults: docs/PROTOCOL.md.
 */
#ifndef MLC_MEASURE_H
#define MLC_MEASURE_H

#include "base/base.h"
#include "ir/ir.h" /* mlc_array */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MLC_MEASURE_MAX_REPEAT 64
#define MLC_MEASURE_MAX_ARGS 32

/* Outcome of one candidate. The name (mlc_measure_status_name) is the
 * error class stored in the database: "<class>: <message>". */
typedef enum mlc_measure_status {
  MLC_MEASURE_OK,
  MLC_MEASURE_BUILD_ERROR,   /* replay, lowering or code generation refused it */
  MLC_MEASURE_CRASH,         /* the worker died (signal or unexpected exit) */
  MLC_MEASURE_TIMEOUT,       /* no answer within the timeout: killed */
  MLC_MEASURE_WRONG_RESULT,  /* outputs differ from the reference */
  MLC_MEASURE_RUNTIME_ERROR, /* load failed or the kernel returned non-zero */
  MLC_MEASURE_ALLOC_ERROR,   /* absurd or failed allocation */
  MLC_MEASURE_BAD_TIME,      /* a zero, negative or non-finite time */
  MLC_MEASURE_PROTOCOL_ERROR,/* garbage on the pipe */
  MLC_MEASURE_SPAWN_ERROR,   /* the worker could not be started */
} mlc_measure_status;
#define MLC_MEASURE_STATUS_COUNT 10

const char *mlc_measure_status_name(mlc_measure_status s); /* "wrong_result" */
bool mlc_measure_status_from_name(const char *name, mlc_measure_status *out);

/* Test-only faults a request can ask a worker to commit. Workers honour
 * them only when MLC_WORKER_FAULTS=1 is in their environment. */
typedef enum mlc_measure_fault {
  MLC_FAULT_NONE,
  MLC_FAULT_BUILD_CRASH,   /* builder segfaults */
  MLC_FAULT_BUILD_HANG,    /* builder loops forever */
  MLC_FAULT_BUILD_GARBAGE, /* builder writes garbage instead of a frame */
  MLC_FAULT_RUN_SEGV,      /* runner: the kernel segfaults */
  MLC_FAULT_RUN_FPE,       /* runner: integer division by zero (SIGFPE) */
  MLC_FAULT_RUN_ABORT,     /* runner: abort() */
  MLC_FAULT_RUN_HANG,      /* runner: the kernel never returns */
  MLC_FAULT_RUN_WRONG,     /* runner: an output element is changed */
  MLC_FAULT_RUN_ALLOC,     /* runner: the arguments ask for 2^50 bytes */
  MLC_FAULT_RUN_ZERO_TIME, /* runner: reports 0 seconds */
  MLC_FAULT_RUN_GARBAGE,   /* runner: writes garbage instead of a frame */
  MLC_FAULT_RUN_DISTURB,   /* runner: every timing counts as disturbed */
} mlc_measure_fault;

#define MLC_MEASURE_MAX_INTRIN_FILES 8

typedef struct mlc_measure_opts {
  int n_builders;           /* 0: one per usable core */
  const char *worker_path;  /* NULL: $MLC_WORKER, else mlc-worker next to the
                             * executable or in ../bin */
  double build_timeout_s;   /* per candidate, paused time excluded (30) */
  double run_timeout_s;     /* per candidate: load, check and timing (20) */
  int number;               /* calls per repeat, at least (1) */
  int repeat;               /* repeats, <= MLC_MEASURE_MAX_REPEAT (3) */
  double min_repeat_ms;     /* number grows until a repeat lasts this long (0) */
  bool flush_cache;         /* write over the last-level cache before each repeat (true) */
  bool pause_builders;      /* SIGSTOP builders while the runner works (true) */
  uint64_t seed;            /* input values (1) */
  double rtol, atol;        /* |out - ref| <= atol * max|ref| + rtol * |ref| (1e-3, 1e-3) */
  uint64_t max_arg_bytes;   /* larger argument sets are alloc errors (4 GiB) */
  bool build_only;          /* compile only: a built candidate is OK with no
                             * run times (to check or time the builders) */
  /* TVMScript files of tensor intrinsics (mlc-tune --intrin): each worker
   * starts as `mlc-worker MODE --intrin FILE...` and registers them, so
   * traces tensorized with them replay there. Must outlive the pool. */
  int n_intrin_files;
  const char *const *intrin_files;
  /* Reference outputs kept in this directory (created when missing; NULL:
   * none): a workload's unscheduled kernel then runs once for every pool,
   * process and MPI rank sharing it, not once per runner process. An
   * entry is keyed by the workload's text, the seed, the arguments and
   * the reference object, and checked (size, checksum) before it is
   * trusted; a refused one is computed again (docs/PROTOCOL.md). */
  const char *ref_cache_dir;
} mlc_measure_opts;

mlc_measure_opts mlc_measure_defaults(void);
/* Bytes of the last-level cache one core sees (sysfs's slice; 32 MiB
 * when the machine does not say): flush_cache writes over twice that. */
size_t mlc_measure_llc_bytes(void);
/* The defaults for measuring kernels of target (NULL: "llvm"), as the
 * runner of its device wants them (cuda: builders not paused, each repeat
 * 10 launches, 120 s per run); mlc_measure_defaults for a bad target. */
mlc_measure_opts mlc_measure_defaults_for(const char *target);

/* One candidate. The strings are copied by submit. */
typedef struct mlc_measure_cand {
  const char *workload; /* TVMScript of the unscheduled workload */
  const char *trace;    /* trace JSON; NULL or "" measures the unscheduled kernel */
  const char *target;   /* target string; NULL means "llvm" */
  mlc_measure_fault fault; /* test-only, see above */
  /* Adaptive limits for hopeless candidates (0: none).
   * max_call_sec: the runner times the checked first call and, when it
   * took longer, skips the timing and answers TIMEOUT ("too slow"): the
   * runner and its cached reference survive. run_timeout_s: this
   * candidate's run timeout instead of the pool's, applied only when the
   * runner already holds the workload's reference (a fresh runner must
   * first compute it and gets the pool's timeout). */
  double max_call_sec;
  double run_timeout_s;
} mlc_measure_cand;

/* Where a runner's reference outputs came from. */
typedef enum mlc_measure_ref {
  MLC_MEASURE_REF_HELD,       /* held from an earlier candidate of the workload */
  MLC_MEASURE_REF_COMPUTED,   /* the unscheduled kernel ran */
  MLC_MEASURE_REF_CACHED,     /* read from the reference cache (ref_cache_dir) */
  MLC_MEASURE_REF_RECOMPUTED, /* the kernel ran after a cache entry was refused */
} mlc_measure_ref;

typedef struct mlc_measure_result {
  int index;                 /* the candidate's position in its batch */
  mlc_measure_status status;
  char error[512];           /* "<class>: <message>"; "" when OK */
  int n_secs;                /* repeats measured (0 unless OK) */
  double secs[MLC_MEASURE_MAX_REPEAT]; /* seconds per call, per repeat */
  double mean_sec;           /* mean of secs; 0 unless OK */
  double max_error;          /* against the reference (OK and WRONG_RESULT) */
  double build_sec;          /* wall time the builder spent */
  double run_sec;            /* wall time the runner spent */
  /* Interference seen while timing (OK results only). */
  bool disturbed;            /* the kept timing was disturbed: every attempt was */
  int retimes;               /* timings redone because they were disturbed */
  long ivcsw;                /* involuntary context switches during the kept timing */
  double cpu_ratio;          /* CPU over wall time of the timed calls (threads at work) */
  char disturb_why[96];      /* first sign of interference; "" when undisturbed */
  mlc_measure_ref ref;       /* where the reference came from (OK results) */
} mlc_measure_result;

/* A result into its slot of a batch, its index stored last (release): a
 * thread reading the slot with mlc_measure_result_ready sees the whole
 * result once the index is there. Measure functions the tuner reads as
 * results arrive (mlc_tuner_tune_opts.overlap) fill their batch so. */
static inline void mlc_measure_result_publish(mlc_measure_result *slot,
                                              const mlc_measure_result *r, int index) {
  _Static_assert(offsetof(mlc_measure_result, index) == 0, "index first: copied apart");
  size_t at = offsetof(mlc_measure_result, status);
  memcpy((char *)slot + at, (const char *)r + at, sizeof *r - at);
  __atomic_store_n(&slot->index, index, __ATOMIC_RELEASE);
}
static inline bool mlc_measure_result_ready(const mlc_measure_result *slot, int index) {
  return __atomic_load_n(&slot->index, __ATOMIC_ACQUIRE) == index;
}

typedef struct mlc_measure mlc_measure;

/* Checks that the worker program exists; workers start on first use. */
mlc_measure *mlc_measure_new(const mlc_measure_opts *o, mlc_error *err);
/* Ends every worker (closes its input, SIGKILL after a short grace) and
 * reaps it. */
void mlc_measure_free(mlc_measure *m);
/* Queue a batch. Refused while a previous batch still has results to
 * collect. */
bool mlc_measure_submit(mlc_measure *m, int n, const mlc_measure_cand *c, mlc_error *err);
/* Wait for the next finished candidate of the batch: 1 with *out filled, 0
 * when every candidate of the batch has been returned. */
int mlc_measure_next(mlc_measure *m, mlc_measure_result *out);

/* the batch grows while it is collected (a measurement host
 * that keeps its workers fed from a queue). The new candidates' indices
 * follow the batch's; with every result of the batch returned, this is
 * mlc_measure_submit. */
bool mlc_measure_append(mlc_measure *m, int n, const mlc_measure_cand *c, mlc_error *err);
/* mlc_measure_next waiting at most timeout_s seconds: -1
 * when no candidate finished by then. */
int mlc_measure_next_wait(mlc_measure *m, mlc_measure_result *out, double timeout_s);

typedef void (*mlc_measure_progress_fn)(void *ud, int done, int total,
                                        const mlc_measure_result *r);
/* Submit and collect: results[i] is candidate i's. progress may be NULL. */
bool mlc_measure_run_batch(mlc_measure *m, int n, const mlc_measure_cand *c,
                           mlc_measure_result *results, mlc_measure_progress_fn progress,
                           void *ud, mlc_error *err);

/* Whether this machine can run the
 * kernels of `target` (NULL: "llvm"). A cuda target needs the CUDA driver
 * and a device: false with "no CUDA device: <reason>". A CPU target always
 * can. The runner of each RUN_REQ is picked by its object's format: ELF on
 * the CPU (ORC), PTX on the GPU (CUDA driver API through dlopen); the
 * reference is always built for and run on the host CPU. */
bool mlc_measure_runner_check(const char *target, mlc_error *err);

/* Workers started so far (restarts included) and the path in use. */
int mlc_measure_spawn_count(const mlc_measure *m);
const char *mlc_measure_worker_path(const mlc_measure *m);

/* ---- measuring on the ranks of an MPI job (measure/mpi.c) ----------------
 *
 * Under `mpirun -n N mlc-tune ...` rank 0 tunes (search, task scheduler,
 * database) and ranks 1..N-1 are measurement hosts, each running a pool of
 * the workers above on its own machine. Rank 0 measures through
 * mlc_measure_mpi_batch, the tuner's measure hook: each batch is a queue
 * the ranks pull candidates from as their pools have room, results coming
 * back as they finish. Every rank reports its host, pid and target string
 * at the start; a rank whose target (CPU name, features, cores as the
 * host detection gives them) differs from rank 0's is refused and the job
 * ends: measurements are only comparable on identical hardware.
 *
 *   rank 0:  p = mlc_measure_mpi_init(&argc, &argv, "llvm", &err);
 *            mlc_measure_mpi_check(p, &pool_opts, &err);
 *            tune with .measure = mlc_measure_mpi_batch, .measure_ud = p;
 *            mlc_measure_mpi_end(p, status);
 *   others:  p = mlc_measure_mpi_init(...); mlc_measure_mpi_serve(p, &err);
 *            mlc_measure_mpi_end(p, status);
 *
 * MPI is optional at build time (MLC_HAVE_MPI): without it init fails
 * with "this build has no MPI support" and mlc_measure_mpi_built is false.
 * A rank that dies or leaves (measure/mpi.c): under `mpirun
 * --enable-recovery` its candidates go to the other ranks and the job
 * goes on; the hook fails only when no measurement rank is left, or when
 * mpirun ends the job (its default on a death: SIGTERM), naming the dead
 * ranks, with the results it received marked (index == i). */
typedef struct mlc_measure_mpi mlc_measure_mpi;

bool mlc_measure_mpi_built(void);
/* Ranks the launcher started this process among (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE); 1 when not started by mpirun. Needs no MPI. */
int mlc_measure_mpi_env_size(void);
/* MPI_Init; ranks > 0 report to rank 0. target_text: the target to tune,
 * as given (parsed on each rank: its host's CPU). */
mlc_measure_mpi *mlc_measure_mpi_init(int *argc, char ***argv, const char *target_text,
                                      mlc_error *err);
int mlc_measure_mpi_rank(const mlc_measure_mpi *p);
int mlc_measure_mpi_size(const mlc_measure_mpi *p);
/* Rank 0: every rank's report; false (and every rank told to stop) when a
 * rank is refused, else every rank gets o (worker_path aside: each host
 * finds its own mlc-worker). */
bool mlc_measure_mpi_check(mlc_measure_mpi *p, const mlc_measure_opts *o, mlc_error *err);
/* Rank 0: a line for itself (host, pid), then one per measurement rank:
 * host, pid, target, CPU. */
void mlc_measure_mpi_describe(const mlc_measure_mpi *p, mlc_str *out);
/* Rank 0: the tuner's measure hook (mlc_tuner_measure_fn), ud = p. */
bool mlc_measure_mpi_batch(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                           mlc_error *err);
/* Rank 0: fn(ud, msg) is called when mpirun ends the job (SIGTERM: a rank
 * died), from another thread when no batch is being measured; msg names
 * the dead ranks. mpirun kills the process about a second later. */
void mlc_measure_mpi_on_end(mlc_measure_mpi *p, void (*fn)(void *ud, const char *msg), void *ud);
/* Rank 0: fn(ud, msg) is called, on the hook's thread, when the ranks
 * measuring change and the job goes on: a rank lost (msg names it and its
 * requeued candidates), joining late, or refused on joining. */
void mlc_measure_mpi_on_ranks(mlc_measure_mpi *p, void (*fn)(void *ud, const char *msg), void *ud);
/* Rank 0: how many measurement ranks were lost so far. */
int mlc_measure_mpi_lost(mlc_measure_mpi *p);
/* Ranks > 0: measure what rank 0 sends until it ends the job (true;
 * also when rank 0 refused a rank: rank 0 says why). */
bool mlc_measure_mpi_serve(mlc_measure_mpi *p, mlc_error *err);
/* Ends the job's MPI and frees p (NULL: nothing). When rank 0 failed
 * (no rank left), this calls MPI_Abort(status): see mpi.c. */
void mlc_measure_mpi_end(mlc_measure_mpi *p, int status);

/* The worker side (`mlc-worker`): serve requests on stdin/stdout until end
 * of input. mode is "build" or "run"; the tensor intrinsics of the given
 * TVMScript files (mlc_measure_opts.intrin_files) are registered after the
 * host CPU's built-in ones, as the tuner does. Returns the process exit
 * status: 1 with err set when a file fails. */
typedef struct mlc_measure_worker_opts {
  int n_intrin_files;
  const char *const *intrin_files;
  const char *ref_cache_dir; /* a runner's reference cache (NULL: none) */
} mlc_measure_worker_opts;
int mlc_measure_worker_serve(const char *mode, const mlc_measure_worker_opts *o, mlc_error *err);

/* ---- timing and checking (timing.c) ------------------------------------------
 *
 * The one implementation of both: the workers time and check candidates
 * with it, and so do mlc-ir, mlc-compile and the benches. */

/* One call of what is timed; false when it failed. */
typedef bool (*mlc_timing_fn)(void *ctx);

typedef struct mlc_timing_opts {
  int repeat;            /* repeats, each giving one time per call (>= 1) */
  uint64_t number;       /* calls per repeat, at least (>= 1) */
  double min_repeat_sec; /* more calls while a repeat is shorter (0: `number` calls) */
  double max_total_sec;  /* a slow function gets fewer repeats to stay near this (0: all) */
  bool flush_cache;      /* write over the last-level cache before each repeat */
  /* Called right before each repeat's calls (after the flush); its
   * result goes into the repeat's `probe` (NULL: none). */
  double (*probe)(void *probe_ud);
  void *probe_ud;
} mlc_timing_opts;

/* What one repeat took: wall seconds for all its calls, the process's and
 * the calling thread's CPU seconds, involuntary context switches. */
typedef struct mlc_timing_repeat {
  double wall, cpu, caller;
  long ivcsw;
  double wait; /* seconds its threads waited runnable for a CPU (all of them, summed) */
  uint64_t calls;
  double probe; /* what the options' probe returned before it (0: no probe) */
} mlc_timing_repeat;
typedef void (*mlc_timing_hook)(void *ud, int r, const mlc_timing_repeat *rep);

/* One warm-up call, then the repeats; secs[r] gets repeat r's seconds per
 * call (room for o->repeat), hook (may be NULL) sees every repeat. Returns
 * the number of repeats made (fewer than o->repeat only under
 * max_total_sec), or -1 with err set when a call failed. The median of
 * secs is what the tools report (mlc_median). */
int mlc_time_calls(mlc_timing_fn fn, void *ctx, const mlc_timing_opts *o, double *secs,
                   mlc_timing_hook hook, void *ud, mlc_error *err);

/* The tolerance of every result check (docs/PROTOCOL.md): floats
 * within rtol * |want| + atol * max |want| (the largest finite |want|: an
 * all-zero reference wants exact zeros), integers and bools exactly. */
#define MLC_CHECK_RTOL 1e-3
#define MLC_CHECK_ATOL 1e-3
/* got against want under that rule (rtol and atol as above: the workers
 * take them from the request, everything else passes MLC_CHECK_*); *max_err
 * gets the largest absolute difference. */
bool mlc_check_close(const mlc_array *got, const mlc_array *want, double rtol, double atol,
                     double *max_err);

#endif
