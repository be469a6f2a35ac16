/* tuner: the search engine of meta-schedule, for CPU and GPU targets.
 *
 * A design space is one or more sketch traces: schedule rules applied to
 * every block of a workload in post-order (on a CPU: auto-inline,
 * add-rfactor, multi-level tiling "SSRSRS" with a write cache, CPU register
 * tiles (a whole-vector innermost tile, short rows) and the streamed
 * operand packed per outer tile, parallelize-vectorize-unroll, random
 * compute location; on a GPU the CUDA rules of space_gpu.c) record traces whose sampling
 * instructions (SamplePerfectTile, SampleCategorical,
 * SampleComputeLocation) are the knobs. A candidate is a sketch replayed
 * with decisions (fresh, stored or mutated) and then postprocessed
 * (annotations become loop kinds, reductions are decomposed, the result is
 * verified); its full trace (sketch, EnterPostproc, what the
 * postprocessors did) is what gets built, measured and stored.
 *
 * The search itself (design spaces, mutators, the evolutionary search;
 * tuner_internal.h) is driven by the tuning loop:
 *
 *   mlc_tuner_tune_opts o = ...;               // task, target, trials, ...
 *   mlc_tuner_tune(db, func, &o, &result, &err);
 *
 * and a model's kernels by the task scheduler (mlc_tuner_schedule_tasks).
 *
 * Everything random comes from o.seed: with the same seed and the same
 * measured results the same candidates come out, in the same order
 * (sampling and mutation run on OpenMP threads from seeds drawn in order).
 *
 * mlc_tuner_tune (tune.c) is the whole loop behind `mlc-tune`: search,
 * measure/ worker pools, db/ records, costmodel/ updates, resume.
 */
#ifndef MLC_TUNER_H
#define MLC_TUNER_H

#include "schedule/schedule.h"
#include "targets/targets.h" /* mlc_target, mlc_gpu_limits */

/* ---- options ------------------------------------------------------------ */

typedef struct mlc_tuner_opts {
  int num_cores;              /* threads of the target; the parallel bound uses it */
  int max_jobs_per_core;      /* parallel extent bound = num_cores * this (16) */
  int64_t min_parallel_work;  /* kernels whose deepest nest has fewer iterations
                                 start serial; the parallel mutator may still
                                 try threads (2^18; 0: always start parallel) */
  int max_vectorize_extent;   /* innermost fused contiguous spatial extent to vectorize (64) */
  int max_innermost_factor;   /* of every SamplePerfectTile (64) */
  int population;             /* evolutionary search population (512) */
  int generations;            /* mutation rounds per batch (4) */
  double mutate_prob;         /* a child is a mutation, else its parent (0.85) */
  double eps_greedy;          /* share of a batch drawn at random (0.05) */
  double init_measured_ratio; /* share of the population seeded from the best measured (0.2) */
  int max_fail_count;         /* failed draws per population slot before giving up (8) */
  uint64_t seed;
  /* The design space (rules, postprocessors, mutators). NULL: the CPU
   * space, except in mlc_tuner_tune, which picks the space of its
   * target's kind (mlc_tuner_space_for_target). */
  const struct mlc_tuner_space_impl *space;
  /* GPU spaces: every candidate fits them (sm_80's; mlc_tuner_tune
   * takes its target's, mlc_target_gpu_limits) */
  mlc_gpu_limits gpu_limits;
  /* The target CPU's LLVM features (mlc_target_cpu_features; must outlive
   * the space): the CPU space uses a built-in dot-product intrinsic only
   * where they have its instruction, whatever else the process registered
   * (the host's AMX, for a VNNI-only target). NULL: every registered one. */
  const char *cpu_features;
  /* The postprocessors skip the final IR verification (mlc_verify_func):
   * the evolutionary search sets it for the thousands of candidates it
   * only scores and verifies each one it hands out. */
  bool verify_later;
} mlc_tuner_opts;

/* meta-schedule's CPU defaults, num_cores from the host. */
/* The design space, postprocessors, mutators, cost-model interface and
 * evolutionary search behind mlc_tuner_tune are private to tuner/ (and the
 * tests and benches that drive them): tuner/tuner_internal.h. */

/* ---- the CPU register tile (regtile.c) ---------------------------------------- */

/* The register-blocked micro-kernel with fixed tiles, for the CPU default
 * schedule of GEMM-like blocks (matmul, the blocked convolution): a
 * reduction whose output's last dimension every read walks contiguously
 * (or not at all). Its loops become S0 | S1 | R0 | R1 | rows x vectors:
 * the rows (a spatial iter only the broadcast operand uses: matmul's i,
 * the convolution's x) the most that divide their extent within the
 * host's vector registers (14 rows of 2 vectors with AVX-512), the rows
 * unrolled and the vector lanes vectorized, every reduce loop outside,
 * the accumulator a write cache initialized before R0 and written back
 * under S1, so it lives in registers. With parallel the S0 loops are
 * fused into one parallel loop. False with a message when the block has
 * no such tile; *s may then be partly scheduled: call it on a copy. */
bool mlc_tuner_cpu_register_tile(mlc_sched *s, const char *block, bool parallel, mlc_error *err);

/* ---- the default schedules (default.c, space_gpu.c) ---------------------------- */

/* A copy of f (in arena a) with, for each top-level block: a block of
 * 8-bit or bfloat16 products tiled around the first registered CPU tensor
 * intrinsic that fits (mlc_tensor_intrin_register_cpu: AMX, VNNI, AVX-512
 * BF16), its tile the one tuning samples most, outer loops parallel; a
 * GEMM-like reduction (matmul, the blocked convolution) register-tiled by
 * mlc_tuner_cpu_register_tile (parallel from 2^18 iterations); otherwise,
 * in a reduction whose innermost loop reduces, the innermost spatial loop (or its last
 * 16/8/4 iterations) moved below the reduction loops; the innermost loop
 * vectorized (split by 16/8/4 first when longer than 64); the outermost
 * spatial loop of extent > 1 parallel when the nest has at least 2^18
 * iterations (threads cost more than smaller nests take). Applied through
 * schedule/ primitives; whatever a primitive refuses is left out; then the
 * CPU postprocessors (reductions decomposed). What mlc-compile compiles
 * for a kernel without a record, and the first candidate of every CPU
 * tuning run. */
mlc_prim_func *mlc_tuner_cpu_default_schedule(mlc_arena *a, const mlc_prim_func *f);
/* The same for a target CPU whose LLVM features (mlc_target_cpu_features)
 * are cpu_features: the tensor intrinsics only where they have their
 * instructions (NULL: every registered one). */
mlc_prim_func *mlc_tuner_cpu_default_schedule_for(mlc_arena *a, const mlc_prim_func *f,
                                                  const char *cpu_features);
/* f, a function of size vars, under the default schedule of its instance
 * at sizes (one per size var, within the bounds), replayed on it as above
 * (mlc_tuner_cpu_default_schedule takes min(bound, 128)). */
mlc_prim_func *mlc_tuner_cpu_default_schedule_at(mlc_arena *a, const mlc_prim_func *f,
                                                 const int64_t *sizes);
/* Trace t (scheduled on another function: a static instance of f) replayed
 * on f, a function of size vars, leaving out the vectorize, unroll and
 * parallel hints and the fuses f's symbolic extents refuse (what replays
 * keeps f's meaning: what is left out costs speed only); the result in
 * `a`, verified. NULL with a message when anything else fails. */
mlc_prim_func *mlc_tuner_replay_sized(mlc_arena *a, const mlc_prim_func *f, const struct mlc_trace *t,
                                      mlc_error *err);

/* What mlc-compile compiles for a kernel without a record for its cuda
 * target: the GPU space's auto-inline and auto-bind rules with fixed
 * decisions (each block's leading spatial loops fused and split by 256
 * threads, bound to blockIdx.x and threadIdx.x; an unbound reduction that
 * a bound block reads computed under that block's thread), then checked
 * by mlc_gpu_verify against sm_80's limits. NULL with the reason (the
 * block left on the host, too many threads, ...) when the result cannot
 * run on a GPU. The first candidate of every cuda tuning run too. */
mlc_prim_func *mlc_tuner_gpu_default_schedule(mlc_arena *a, const mlc_prim_func *f,
                                              mlc_error *err);

/* ---- the tuning loop (tune.c) ------------------------------------------------ */

/* Generate a batch, build and run it in the worker pools, commit the
 * records, update the cost model, until the workload has `trials` records
 * for the target in the database (a rerun tops them up: resume), the time
 * budget is spent, the space is exhausted or *stop is set. At the end the
 * best few are measured again and the best is chosen on those times. */
typedef struct mlc_db mlc_db;
struct mlc_measure_cand;
struct mlc_measure_result;

typedef struct mlc_tuner_progress {
  int round;            /* rounds of this run so far */
  int trials_done;      /* records of the workload for the target, before included */
  int trials_total;     /* the budget */
  int errors;           /* failed candidates of this run */
  int batch;            /* candidates in the round just measured */
  double best_sec;      /* best mean time so far (0: none) */
  double best_gflops;   /* 0 when the flop count is unknown */
  double elapsed_s, eta_s;
  /* Interference from other work (measure.h): measurements of this run
   * that were re-timed, that stayed disturbed (marked in their records),
   * and of the round just measured, those that stayed disturbed. */
  int retimed, disturbed, batch_disturbed;
} mlc_tuner_progress;

/* Measures n candidates: results[i] for c[i]. The default is the worker
 * pool of measure/; tests put a fake runner here. False stops the loop.
 * The tuner sets results[i].index to -1 before the call; a
 * function that fails part way (a measurement host died) leaves it so for
 * the candidates it has no result of and sets it to i for those it has:
 * those are committed before the run ends with its error. Each result is
 * written with mlc_measure_result_publish (its index last): with overlap
 * the tuner reads results while the call is still measuring the rest. */
typedef bool (*mlc_tuner_measure_fn)(void *ud, int n, const struct mlc_measure_cand *c,
                                     struct mlc_measure_result *results, mlc_error *err);

typedef struct mlc_tuner_tune_opts {
  const char *task;       /* stored with the workload ("matmul", or the file name) */
  const char *shape;      /* "128,128,128"; "" when not a built-in task */
  const char *target;     /* NULL: "llvm" (the host). Its kind picks the design
                           * space (cuda: GPU) and the runner; a cuda target
                           * without a driver or device fails before the first
                           * round: "no CUDA device: <reason>" */
  double flops;           /* per call, for GFLOP/s; 0: counted from the function */
  int trials;             /* records wanted for (workload, target) in the database */
  int trials_per_round;   /* 0: 16 while fewer than 128 are measured, then 64 */
  double time_budget_s;   /* 0: no limit */
  int n_builders;         /* 0: one per core */
  double timeout_s;       /* per-candidate build and run timeout; 0: measure's defaults */
  /* Early abort: once a best time is known, a candidate whose checked
   * first call takes over slow_factor times the best (before that: twice
   * the unscheduled kernel, when measured) is stopped there and recorded
   * as "timeout: too slow", and its run timeout shrinks to a few such
   * calls. 0: 20; negative: off. */
  double slow_factor;
  int remeasure_top;      /* the best k measured again at the end (3; 0: none) */
  /* Also time the unscheduled kernel (speed-up in the summary; with the
   * default candidate only when it does under ~1e8 flops a call, else
   * baseline_skipped), and at the end time what the kernel runs otherwise
   * (the default schedule's record, else the unscheduled kernel) next to
   * the best, in one runner, interleaved. */
  bool measure_baseline;
  const char *cost_model; /* "xgb-rank" (default), "xgb-reg", "xgb-sum" or "random" */
  const char *worker_path;          /* NULL: measure's lookup */
  const volatile int *stop;         /* non-zero: stop after the current batch, uncommitted */
  void (*progress)(void *ud, const mlc_tuner_progress *p); /* after each round; may be NULL */
  void *progress_ud;
  mlc_tuner_measure_fn measure;     /* NULL: worker processes */
  void *measure_ud;
  /* Search each batch while the one before is measured, and commit
   * while the one after is (measure runs on a thread of its own): for
   * measurement hosts other than this machine (mpi), whose timings the
   * search cannot disturb. The results of the batch in flight reach the
   * search and the cost model as they arrive, and the next batch is
   * searched as late as lets it be ready when the batch in flight ends,
   * so it knows most of that batch's results. */
  bool overlap;
  mlc_tuner_opts search;  /* search options; search.seed is --seed; search.space
                           * NULL: the space of the target's kind */
  /* Library offload ("openblas"; NULL: none): before the search, the
   * kernel with every matmul/dense block handed to the library
   * (mlc_sched_library_call) is measured as one candidate, once per
   * workload and target, and recorded like any other (it counts as a
   * trial). It neither seeds the search nor trains the cost model. */
  const char *library;
  /* TVMScript files of users' tensor intrinsics (mlc-tune --intrin; at
   * most MLC_MEASURE_MAX_INTRIN_FILES): registered after the target's
   * built-in ones, so the design space tiles around those of a
   * dot-product shape, and passed to the worker processes. */
  int n_intrin_files;
  const char *const *intrin_files;
  /* Reference outputs kept in this directory by the runners
   * (mlc_measure_opts.ref_cache_dir; NULL: none): each workload's
   * unscheduled kernel runs once for every run, pool and rank that shares
   * it. mlc-tune's default is ~/.cache/mlc-tune/refs. */
  const char *ref_cache_dir;
  /* Time kernels with the caches as the calls before left them, instead
   * of writing over the last-level cache before each repeat: what a
   * kernel of a model whose data fits in that cache sees (mlc-tune
   * --cache). */
  bool warm_cache;
  /* The space's default schedule (what the kernel runs untuned) is
   * measured first, once per workload and target, and recorded like any
   * candidate (it counts as a trial): the time to beat, so the best
   * record is never slower than an untuned build. true: the search alone. */
  bool no_default_candidate;
  /* The cost model learns from this workload's records only. Otherwise
   * (the default) the records of the target's other workloads in the
   * database train it first (up to 32 a workload, 512 in all, while it
   * has fewer than 256 records of its own), so a
   * new workload's first round is ranked by what tuning the others
   * learned. */
  bool cold_start;
  /* Traces (JSON) of schedules that served related workloads (the same
   * kernel at other sizes): each that replays on this workload and was
   * not measured on it is measured first, in the first round, then seeds
   * the search as any record. */
  int n_seed_traces;
  const char *const *seed_traces;
} mlc_tuner_tune_opts;

void mlc_tuner_tune_opts_default(mlc_tuner_tune_opts *o);
/* the options of the worker pools mlc_tuner_tune would start
 * for o (builders, timeouts; for a cuda target: builders not paused, ten
 * calls per repeat), for measurement hosts that run the pools elsewhere. */
struct mlc_measure_opts;
void mlc_tuner_pool_opts(const mlc_tuner_tune_opts *o, struct mlc_measure_opts *out);

typedef struct mlc_tuner_tune_result {
  int64_t workload_id;
  int measured_before;   /* records present when the run started */
  int transfer_records;  /* other workloads' records the cost model learned from first */
  int transfer_workloads; /* ... of this many workloads */
  int measured;          /* candidates this run committed */
  int errors;            /* of those, failed */
  int too_slow;          /* of those, stopped early (slow_factor) */
  int rounds;
  bool nothing_to_do;    /* the database already held the budget */
  bool stopped;          /* *stop was set: the batch in flight was dropped */
  bool exhausted;        /* the search ran out of new candidates */
  double best_sec;       /* the chosen best's time (re-measured when asked); 0: none */
  double best_gflops;
  int64_t best_record_id;
  double baseline_sec;   /* unscheduled kernel; 0 unless measured */
  /* Interference seen while measuring (measure.h): candidates re-timed,
   * candidates whose every timing was disturbed (marked in their records),
   * rounds with at least one such candidate. */
  int retimed, disturbed, disturbed_rounds;
  /* The end check (measure_baseline): the default schedule
   * (check_base_default) or the unscheduled kernel, and the best, timed
   * side by side (fastest of each); 0 when not run. not_faster: the best
   * was not faster there, and warning says so. baseline_skipped: the
   * unscheduled kernel was not timed (too slow to be worth it). */
  double check_base_sec, check_best_sec;
  bool check_base_default, not_faster, baseline_skipped;
  char warning[512];
  double search_sec, build_sec, run_sec, total_sec; /* where time went */
  /* Of the rounds' wall time, what passed with no batch being measured
   * (search, commit, learning not overlapped with measuring). */
  double serial_sec;
  /* overlap: results the search and the cost model took while their batch
   * was still being measured (before the next batch was searched). */
  int learned_early;
  /* Records this run added to the database (a candidate another tuner
   * stored first is measured but not added), and its commits' count and
   * wall-time percentiles (a shared server under load). */
  int stored, commits;
  double commit_ms_p50, commit_ms_p95, commit_ms_max;
  /* Where the runners' reference outputs came from, counted from the
   * successful candidates that needed one: the unscheduled kernel ran
   * (refused: of those, after a cache entry was refused as stale or
   * corrupt), or ref_cache_dir had them. */
  int refs_computed, refs_cached, refs_refused;
  char message[512];     /* why the run ended early, warnings (cost model fallback) */
  char first_error[512]; /* the first failed candidate's "<class>: <message>" */
  /* o->library: the library candidate this run measured (library_sec > 0;
   * library_error: it failed), or why it was not (library_note: measured
   * before, or no block fits: the reason). */
  double library_sec;
  char library_error[256];
  /* The default candidate this run measured (default_sec > 0;
   * default_error: it failed); 0 and "" when it was measured before or
   * not at all. */
  double default_sec;
  char default_error[256];
  /* The default schedule's record as the database holds it at the end
   * (measured now or before, re-measures included): its mean time; 0: none. */
  double default_record_sec;
  char library_note[512];
} mlc_tuner_tune_result;

/* The best successful record of a workload and target that calls a
 * library (a LibraryCall trace) and the best that does not (tuned), by
 * mean time; ids 0 where there is none. */
typedef struct mlc_tuner_library_cmp {
  char library[32];   /* "openblas"; "" with no library record */
  int64_t library_id;
  double library_sec;
  int64_t tuned_id;
  double tuned_sec;
} mlc_tuner_library_cmp;
/* 1: a library record exists, 0: none, -1: database error. */
int mlc_tuner_library_compare(mlc_db *db, int64_t workload_id, const char *target,
                              mlc_tuner_library_cmp *out, mlc_error *err);

/* f: the workload (prim_func "main"). False with a message for failures
 * of the database, the workers or the cost model's update; a run that
 * measured nothing new is not a failure (see result). */
bool mlc_tuner_tune(mlc_db *db, const mlc_prim_func *f, const mlc_tuner_tune_opts *o,
                    mlc_tuner_tune_result *res, mlc_error *err);
/* No new candidates: the best o->remeasure_top trusted records of f, and
 * its default schedule's record, are measured again in one pool and the
 * new run times join their records; res gets the best on those times
 * (best_record_id, best_sec). What the task scheduler does at the end, so
 * that a record that won by a lucky timing among many near-equal ones is
 * timed again next to the default schedule it replaces. */
bool mlc_tuner_remeasure(mlc_db *db, const mlc_prim_func *f, const mlc_tuner_tune_opts *o,
                         mlc_tuner_tune_result *res, mlc_error *err);

/* ---- task scheduler (scheduler.c) -------------------------------------------- */

/* One tuning task of a model: a distinct kernel and how often one model
 * run calls it. */
typedef struct mlc_tuner_task {
  const char *name;          /* stored with the workload (o->tune.task) and printed */
  const mlc_prim_func *func; /* the workload (prim_func "main") */
  int weight;                /* calls per model run (>= 1) */
  double flops;              /* per call, for GFLOP/s; 0: counted from the function */
  const char *shape;         /* stored with the workload ("seq=128": a kernel of size vars
                                tuned at that size); NULL: the tune options' */
  /* 0, or an id the specializations of one kernel of size vars share:
   * listed next to each other at increasing sizes, the last (at the
   * bounds) leads the family. */
  int family;
  double size_ratio; /* a family member's work against its lead's (1: the lead) */
  bool anchor;       /* the member the warm-up measures (one a family) */
} mlc_tuner_task;

typedef enum mlc_tuner_task_sched {
  MLC_TUNER_SCHED_GRADIENT,    /* round-robin once, then the largest weighted gradient */
  MLC_TUNER_SCHED_ROUND_ROBIN, /* task after task */
} mlc_tuner_task_sched;

/* Where one task stands. */
typedef struct mlc_tuner_task_state {
  int trials;            /* records of the task for the target, before included */
  int rounds;            /* rounds this run gave it */
  int errors;            /* failed candidates of this run */
  double best_sec;       /* best mean time per call (0: none yet) */
  int64_t best_record_id;
  double default_sec;    /* its default schedule's record's time (0: not known this run) */
  double gradient;       /* the last score it was picked by (gradient scheduler) */
  bool done;             /* its space is exhausted: no more rounds */
} mlc_tuner_task_state;

typedef struct mlc_tuner_sched_progress {
  int round;                         /* rounds of this run so far */
  int task;                          /* the task of the round just measured */
  int n_tasks;
  const mlc_tuner_task *tasks;
  const mlc_tuner_task_state *state; /* n_tasks */
  int trials_done, trials_total;     /* over all tasks */
  double est_sec;    /* sum of weight x best_sec (of a family its lead's); 0 until each
                        such task has a time */
  double elapsed_s;
} mlc_tuner_sched_progress;

typedef struct mlc_tuner_sched_opts {
  mlc_tuner_task_sched kind;
  int trials;           /* records wanted over all tasks (a rerun tops them up) */
  int trials_per_round; /* one round of one task (default 16) */
  double alpha;         /* gradient: weight of the backward window (0.2) */
  int window;           /* gradient: rounds of the backward window (3) */
  void (*progress)(void *ud, const mlc_tuner_sched_progress *p); /* may be NULL */
  void *progress_ud;
  /* Per-round options of mlc_tuner_tune (task, trials, trials_per_round and
   * flops are set per task and round; the progress callback is kept). */
  mlc_tuner_tune_opts tune;
} mlc_tuner_sched_opts;

void mlc_tuner_sched_opts_default(mlc_tuner_sched_opts *o);
const char *mlc_tuner_task_sched_name(mlc_tuner_task_sched k); /* "gradient", "round-robin" */
bool mlc_tuner_task_sched_from_name(const char *name, mlc_tuner_task_sched *out);

typedef struct mlc_tuner_sched_result {
  int rounds, measured, errors; /* of this run */
  bool nothing_to_do;           /* the database already held the budget */
  bool stopped;                 /* *o->tune.stop was set */
  double est_sec;               /* sum of weight x best_sec, of a family its lead's (0: some
                                   such task has no time) */
  double est_default_sec;       /* the same of default_sec: the untuned model */
  double total_sec;
  char message[512];            /* why the run ended before the budget, or "" */
} mlc_tuner_sched_result;

/* Tunes n tasks under one budget: each round gives trials_per_round
 * trials to one task through mlc_tuner_tune (resume included: records in
 * the database count toward the budget and seed the search). The gradient
 * scheduler (MetaSchedule's GradientBasedTaskScheduler) first gives each
 * task without records a round, then the task maximizing
 *   weight x (alpha x (best[-1-window] - best[-1]) / window + (1 - alpha) x best[-1] / rounds)
 * (best[]: the task's best time after each of its rounds): the kernels
 * that dominate model latency (calls x time) and still improve get the
 * trials. The specializations of a kernel of size vars (a family) share
 * what tuning finds: only the anchor has a warm-up round, the others
 * start from its time scaled by their size_ratio; each member's weight
 * is scaled by the lead's untuned time over its own, so that every size
 * counts by its share of the model's time at that size (ties go to the
 * larger time); and each round of a member first measures the best
 * schedules of the others carried to its sizes (tune.seed_traces). At the end each task this run measured that has a record
 * besides its default schedule's gets mlc_tuner_remeasure (with
 * o->tune.remeasure_top; 0: none). state (n entries) receives where each
 * task ends. False with a message for database or worker failures. */
bool mlc_tuner_schedule_tasks(mlc_db *db, int n, const mlc_tuner_task *tasks,
                              const mlc_tuner_sched_opts *o, mlc_tuner_task_state *state,
                              mlc_tuner_sched_result *res, mlc_error *err);

#endif
