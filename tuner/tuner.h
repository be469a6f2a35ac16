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
 *   mlc_tuner_opts o;
 *   mlc_tuner_opts_default(&o);                // o.num_cores = target cores
 *   mlc_tuner_search *s = mlc_tuner_search_new(func, &o, &err);
 *   mlc_tuner_search_set_model(s, &model);     // optional: random scores until then
 *   for each measured record in the db:
 *     mlc_tuner_search_add_measured(s, trace, mean_sec, &err);   // dedup + seeds
 *   mlc_tuner_cand *batch;
 *   int n = mlc_tuner_search_next_batch(s, 16, &batch, &err);  // 0: exhausted
 *   for (i < n) build/run mlc_sched_trace(batch[i].sched), then
 *     mlc_tuner_search_add_measured(s, mlc_sched_trace(batch[i].sched), secs, &err);
 *   mlc_tuner_search_free(s);
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
  mlc_gpu_limits gpu_limits;  /* GPU spaces: every candidate fits them (sm_80's) */
} mlc_tuner_opts;

/* meta-schedule's CPU defaults, num_cores from the host. */
void mlc_tuner_opts_default(mlc_tuner_opts *o);

/* ---- design-space interface (design.c) -------------------------------------
 *
 * A design space plugs in as a struct of function pointers, the way
 * targets plug in through mlc_target_backend; the tuner never asks which
 * one it holds. Implementations: mlc_tuner_space_cpu (space.c,
 * postproc.c: meta-schedule's DefaultLLVM rules) and mlc_tuner_space_gpu
 * (space_gpu.c, postproc_gpu.c: DefaultCUDA, below). */
typedef struct mlc_tuner_space_impl {
  const char *name; /* "cpu", "gpu" */
  /* The sketches of f (f outlives the space: the caller's copy). NULL
   * with a message if f has no block to schedule or a rule broke. */
  void *(*new)(const mlc_prim_func *f, const mlc_tuner_opts *o, mlc_error *err);
  int (*count)(const void *sp);
  const mlc_trace *(*trace)(const void *sp, int i);
  /* One point of sketch i, postprocessed; NULL with a message if rejected. */
  mlc_sched *(*sample)(const void *sp, int i, uint64_t seed, mlc_error *err);
  /* Record EnterPostproc and run the space's postprocessors on s (a
   * sketch replayed up to EnterPostproc); false: the candidate is invalid. */
  bool (*postprocess)(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err);
  /* mlc_tuner_mutate for candidates of this space. */
  mlc_sched *(*mutate)(const mlc_prim_func *f, const mlc_sched *cand, int which,
                       mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err);
  void (*free)(void *sp);
} mlc_tuner_space_impl;

/* CPU: auto-inline, add-rfactor, multi-level tiling "SSRSRS", parallel-
 * vectorize-unroll, random compute location (space.c, postproc.c). */
extern const mlc_tuner_space_impl mlc_tuner_space_cpu;
/* GPU: meta-schedule's CUDA rules (ScheduleRule::DefaultCUDA), one sketch
 * per workload: multi-level tiling "SSSRRSRS" of blocks with data reuse,
 * the first three spatial levels fused and bound to blockIdx.x /
 * vthread.x / threadIdx.x, a local write cache computed at the threadIdx
 * loop, shared read caches at the first reduce level marked for
 * cooperative fetch (the vector width sampled from {1, 2, 4}); auto-inline
 * of elementwise producers into consumers and of elementwise outputs into
 * their producer; the unroll step sampled from {0, 16, 64, 512, 1024};
 * auto-bind (fuse the leading spatial loops, split by a sampled thread
 * count, bind) for every block left outside thread bindings. Cross-thread
 * reduction is left out: reductions without data reuse run one row per
 * thread. Padding blocks inline into the shared-memory fetch after them,
 * as on CUDA in TVM.
 * A sample's tile decisions are drawn afresh, then kept within
 * o->gpu_limits: thread and vthread factors over the limits move to the
 * blockIdx level, and while the verifier finds too much shared or local
 * memory, inner tile factors move outward (each move keeps a perfect
 * tiling); rejected if no such repair succeeds. Postprocessing: cooperative
 * fetch (the annotated copy blocks' loops fused, split by the kernel's
 * threadIdx.x extent and the sampled vector width, bound and vectorized),
 * the root's unroll step moved to each kernel's outermost loop as
 * pragma_auto_unroll_max_step / pragma_unroll_explicit, then the IR
 * verifier and mlc_gpu_verify with o->gpu_limits. Mutants are not
 * repaired: the verifier may refuse some, as meta-schedule's
 * VerifyGPUCode does. */
extern const mlc_tuner_space_impl mlc_tuner_space_gpu;
/* The space for a target's kind: GPU for cuda, CPU otherwise. */
const mlc_tuner_space_impl *mlc_tuner_space_for_target(const mlc_target *t);

/* ---- design space (design.c) ---------------------------------------------- */

typedef struct mlc_tuner_space mlc_tuner_space;

/* Apply o->space's rules (NULL: the CPU's) to a copy of f. Fails only if f
 * has no block to schedule or a rule broke an invariant (message says
 * which). */
mlc_tuner_space *mlc_tuner_space_new(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                     mlc_error *err);
void mlc_tuner_space_free(mlc_tuner_space *sp);
int mlc_tuner_space_count(const mlc_tuner_space *sp);
/* Sketch i: a trace with sampling instructions and no postprocessing. */
const mlc_trace *mlc_tuner_space_trace(const mlc_tuner_space *sp, int i);
/* The unscheduled workload the space was made for. */
const mlc_prim_func *mlc_tuner_space_func(const mlc_tuner_space *sp);
/* One point of sketch i: replayed with fresh decisions drawn from `seed`,
 * then postprocessed. NULL with a message when the sample is rejected (a
 * decision combination that some primitive or the verifier refuses). */
mlc_sched *mlc_tuner_space_sample(const mlc_tuner_space *sp, int i, uint64_t seed,
                                  mlc_error *err);

/* ---- postprocessors (design.c; the CPU's in postproc.c) ---------------------- */

/* o->space's postprocessors (NULL: the CPU's). The CPU's: record EnterPostproc, then: turn the root block's meta_schedule.parallel
 * / vectorize / unroll_explicit annotations into loop kinds (fuse and
 * parallelize outer spatial loops up to the bound, fuse and vectorize
 * innermost spatial loops up to the bound, unroll inner loops whose
 * iteration volume fits the sampled step), decompose reductions where the
 * schedule module supports it, and verify. False with a message means the
 * candidate is invalid (the state is then unusable: free it). */
bool mlc_tuner_postproc(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err);

/* A candidate from any trace of f (a stored record with or without its
 * postprocessing part): the sketch part is replayed with its decisions and
 * postprocessed again, so the result's trace hashes like the record's. */
mlc_sched *mlc_tuner_apply_trace(const mlc_prim_func *f, const mlc_trace *t,
                                 const mlc_tuner_opts *o, mlc_error *err);

/* ---- mutators (mutate.c) ---------------------------------------------------- */

typedef enum mlc_mutator {
  MLC_MUTATE_TILE_SIZE,        /* move a factor between two levels of one tile */
  MLC_MUTATE_UNROLL,           /* another unroll step (SampleCategorical) */
  MLC_MUTATE_PARALLEL,         /* another parallel extent bound */
  MLC_MUTATE_COMPUTE_LOCATION, /* another SampleComputeLocation decision */
} mlc_mutator;
enum { MLC_MUTATOR_COUNT = 4 };
const char *mlc_mutator_name(mlc_mutator m);
/* meta-schedule's CPU probabilities: 0.9, 0.03, 0.02, 0.05. */
double mlc_mutator_prob(mlc_mutator m);

/* A new candidate: cand's sketch with one mutation, replayed on a fresh
 * copy of f and postprocessed (o->space's mutate). which < 0 picks a mutator by the
 * probabilities among those that apply to the trace. NULL with a message
 * when no mutator applies or the mutant is rejected. */
mlc_sched *mlc_tuner_mutate(const mlc_prim_func *f, const mlc_sched *cand, int which,
                            mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err);

/* ---- cost model interface ------------------------------------------------- */

/* Scores for n postprocessed candidates: higher means predicted faster
 * (e.g. normalized throughput). costmodel/ plugs in here; with no model
 * the search scores uniformly at random. */
typedef struct mlc_tuner_model {
  bool (*predict)(void *ctx, int n, const mlc_prim_func *const *funcs, double *scores,
                  mlc_error *err);
  void *ctx;
} mlc_tuner_model;

/* ---- evolutionary search (search.c) ---------------------------------------- */

typedef struct mlc_tuner_search mlc_tuner_search;

/* A proposed candidate. sched holds the scheduled IR (mlc_sched_func) and
 * the full trace to measure (mlc_sched_trace). */
typedef struct mlc_tuner_cand {
  mlc_sched *sched;
  uint64_t hash;  /* mlc_trace_hash of the full trace */
  double score;   /* the model's prediction */
  bool random;    /* drawn by the epsilon-greedy share, not by score */
} mlc_tuner_cand;

typedef struct mlc_tuner_stats {
  int rounds;
  long samples, samples_rejected;     /* design-space draws */
  long mutations, mutations_rejected; /* mutator calls */
  long predicted;                     /* candidates scored */
  double search_sec;                  /* wall time inside next_batch */
} mlc_tuner_stats;

mlc_tuner_search *mlc_tuner_search_new(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                       mlc_error *err);
void mlc_tuner_search_free(mlc_tuner_search *s);
/* model NULL: random scores. The model is used by reference. */
void mlc_tuner_search_set_model(mlc_tuner_search *s, const mlc_tuner_model *model);
/* A measured trace of this workload: never proposed again; with a finite
 * mean_sec > 0 it may seed the population (the fastest first). A trace
 * that no longer replays still counts for deduplication. */
bool mlc_tuner_search_add_measured(mlc_tuner_search *s, const mlc_trace *t, double mean_sec,
                                   mlc_error *err);
/* Only the hash (a record whose trace text is all that is known). */
void mlc_tuner_search_add_measured_hash(mlc_tuner_search *s, uint64_t hash);
/* One round: up to n new candidates, best predicted first, then the
 * random share. The array and its states belong to the search until the
 * next call. Proposed candidates count as measured. Returns the count
 * (< n when the space has too few new points left: then
 * mlc_tuner_search_message says so; 0 means the search is over), -1 on
 * error (the model failed). */
int mlc_tuner_search_next_batch(mlc_tuner_search *s, int n, mlc_tuner_cand **out,
                                mlc_error *err);
/* Why the last batch was short, or "" if it was not. */
const char *mlc_tuner_search_message(const mlc_tuner_search *s);
const mlc_tuner_space *mlc_tuner_search_space(const mlc_tuner_search *s);
void mlc_tuner_search_stats_get(const mlc_tuner_search *s, mlc_tuner_stats *out);

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
 * (added by mpi) The tuner sets results[i].index to -1 before the call; a
 * function that fails part way (a measurement host died) leaves it so for
 * the candidates it has no result of and sets it to i for those it has:
 * those are committed before the run ends with its error. */
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
  /* Also time the unscheduled kernel (speed-up in the summary), and at the
   * end time it again next to the best, in one runner, interleaved. */
  bool measure_baseline;
  const char *cost_model; /* "xgb-rank" (default), "xgb-reg", "xgb-sum" or "random" */
  const char *worker_path;          /* NULL: measure's lookup */
  const volatile int *stop;         /* non-zero: stop after the current batch, uncommitted */
  void (*progress)(void *ud, const mlc_tuner_progress *p); /* after each round; may be NULL */
  void *progress_ud;
  mlc_tuner_measure_fn measure;     /* NULL: worker processes */
  void *measure_ud;
  mlc_tuner_opts search;  /* search options; search.seed is --seed; search.space
                           * NULL: the space of the target's kind */
} mlc_tuner_tune_opts;

void mlc_tuner_tune_opts_default(mlc_tuner_tune_opts *o);
/* added by mpi: the options of the worker pools mlc_tuner_tune would start
 * for o (builders, timeouts; for a cuda target: builders not paused, ten
 * calls per repeat), for measurement hosts that run the pools elsewhere. */
struct mlc_measure_opts;
void mlc_tuner_pool_opts(const mlc_tuner_tune_opts *o, struct mlc_measure_opts *out);

typedef struct mlc_tuner_tune_result {
  int64_t workload_id;
  int measured_before;   /* records present when the run started */
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
  /* The end check (measure_baseline): the unscheduled kernel and the best,
   * timed side by side (fastest of each); 0 when not run. not_faster: the
   * best was not faster there, and warning says so. */
  double check_base_sec, check_best_sec;
  bool not_faster;
  char warning[512];
  double search_sec, build_sec, run_sec, total_sec; /* where time went */
  char message[512];     /* why the run ended early, warnings (cost model fallback) */
  char first_error[512]; /* the first failed candidate's "<class>: <message>" */
} mlc_tuner_tune_result;

/* f: the workload (prim_func "main"). False with a message for failures
 * of the database, the workers or the cost model's update; a run that
 * measured nothing new is not a failure (see result). */
bool mlc_tuner_tune(mlc_db *db, const mlc_prim_func *f, const mlc_tuner_tune_opts *o,
                    mlc_tuner_tune_result *res, mlc_error *err);

/* ---- task scheduler (scheduler.c) -------------------------------------------- */

/* One tuning task of a model: a distinct kernel and how often one model
 * run calls it. */
typedef struct mlc_tuner_task {
  const char *name;          /* stored with the workload (o->tune.task) and printed */
  const mlc_prim_func *func; /* the workload (prim_func "main") */
  int weight;                /* calls per model run (>= 1) */
  double flops;              /* per call, for GFLOP/s; 0: counted from the function */
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
  double est_sec;    /* sum of weight x best_sec; 0 until every task has a time */
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
  double est_sec;               /* sum of weight x best_sec (0: some task has no time) */
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
 * trials. state (n entries) receives where each task ends. False with a
 * message for database or worker failures. */
bool mlc_tuner_schedule_tasks(mlc_db *db, int n, const mlc_tuner_task *tasks,
                              const mlc_tuner_sched_opts *o, mlc_tuner_task_state *state,
                              mlc_tuner_sched_result *res, mlc_error *err);

#endif
