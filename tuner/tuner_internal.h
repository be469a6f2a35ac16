/* Private to tuner/: IR analysis shared by the rules, postprocessors and
 * mutators, and the pieces of the search that the files share. */
#ifndef MLC_TUNER_INTERNAL_H
#define MLC_TUNER_INTERNAL_H

#include "tuner/tuner.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* ==== the search behind mlc_tuner_tune (tests and benches drive it too) ==== */

void mlc_tuner_opts_default(mlc_tuner_opts *o);

/* A mutation drawn, not yet applied (tuner_mutation_draw, mutate.c). */
typedef struct tuner_mutation {
  int mutator; /* mlc_mutator */
  int inst;    /* the instruction it changes */
  bool decided;
  mlc_decision decision; /* decided: the instruction's new decision */
  uint64_t seed;         /* the mutant's state */
} tuner_mutation;

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
  /* The schedule an untuned build gives f (fixed rules, no sampled
   * decisions) as a candidate whose trace replays to the same function;
   * NULL with the reason when f has none (a kernel a GPU cannot run
   * untuned). */
  mlc_sched *(*default_sched)(const mlc_prim_func *f, const mlc_tuner_opts *o, mlc_error *err);
  /* mlc_tuner_mutate_trace for candidates of this space, in its two
   * steps (tuner_mutation_draw's comment). */
  bool (*draw_mutation)(const mlc_trace *t, int which, mlc_pcg32 *rng, tuner_mutation *m,
                        mlc_error *err);
  mlc_sched *(*apply_mutation)(const mlc_prim_func *f, const mlc_trace *t,
                               const tuner_mutation *m, mlc_pcg32 *rng,
                               const mlc_tuner_opts *o, mlc_error *err);
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
/* The same for a trace of f at other sizes (a specialization's record
 * carried to another): tile decisions that no longer fit keep their inner
 * factors where they divide (mlc_replay_opts.carry_tiles). */
mlc_sched *tuner_carry_trace(const mlc_prim_func *f, const mlc_trace *t, const mlc_tuner_opts *o,
                             bool carry_tiles, mlc_error *err);

/* o->space's default_sched (NULL: the CPU's). */
mlc_sched *mlc_tuner_default_candidate(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                       mlc_error *err);

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
/* The same from the candidate's trace alone (a mutation replays it). */
mlc_sched *mlc_tuner_mutate_trace(const mlc_prim_func *f, const mlc_trace *t, int which,
                                  mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err);
/* mlc_tuner_mutate_trace's two steps, through o->space (tuner_mutation,
 * below). */
bool mlc_tuner_draw_mutation(const mlc_trace *t, int which, mlc_pcg32 *rng,
                             const mlc_tuner_opts *o, tuner_mutation *m, mlc_error *err);
mlc_sched *mlc_tuner_apply_mutation(const mlc_prim_func *f, const mlc_trace *t,
                                    const tuner_mutation *m, mlc_pcg32 *rng,
                                    const mlc_tuner_opts *o, mlc_error *err);

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
  long mutations_reused;              /* mutants made before in the round: not replayed */
  long predicted;                     /* candidates scored */
  long verify_rejected;               /* picked, but the IR verifier refused them */
  double search_sec;                  /* wall time inside next_batch */
} mlc_tuner_stats;

mlc_tuner_search *mlc_tuner_search_new(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                       mlc_error *err);
void mlc_tuner_search_free(mlc_tuner_search *s);
/* model NULL: random scores. The model is used by reference. */
void mlc_tuner_search_set_model(mlc_tuner_search *s, const mlc_tuner_model *model);
/* A candidate the caller holds, measured (one proposed by next_batch, or
 * a stored record the caller replayed): never proposed again; with a
 * finite mean_sec > 0 a copy may seed the population (the fastest first).
 * Nothing is replayed. */
void mlc_tuner_search_commit(mlc_tuner_search *s, const mlc_sched *cand, double mean_sec);
/* The same from a trace alone (replayed with mlc_tuner_apply_trace); a
 * trace that no longer replays still counts for deduplication. */
void mlc_tuner_search_add_measured(mlc_tuner_search *s, const mlc_trace *t, double mean_sec);
/* Only the hash (a record whose trace text is all that is known). */
void mlc_tuner_search_add_measured_hash(mlc_tuner_search *s, uint64_t hash);
/* A candidate to measure first (the caller's: a schedule that served a
 * related workload), taken into the next batch before what the search
 * proposes. The search owns cand. False (cand freed) when it was
 * measured or proposed already. */
bool mlc_tuner_search_propose(mlc_tuner_search *s, mlc_sched *cand);
/* One round: the proposed candidates first, then new ones up to n in
 * all, best predicted first, then the random share. The array and its
 * states belong to the search until the next call. Candidates returned
 * count as measured. Returns the count
 * (< n when the space has too few new points left: then
 * mlc_tuner_search_message says so; 0 means the search is over), -1 on
 * error (the model failed). */
int mlc_tuner_search_next_batch(mlc_tuner_search *s, int n, mlc_tuner_cand **out,
                                mlc_error *err);
/* The last batch's candidates handed to the caller, who then frees each
 * state (mlc_sched_free) and the array (mlc_free): a batch that is still
 * being measured while the next is searched. *n gets the count. */
mlc_tuner_cand *mlc_tuner_search_detach_batch(mlc_tuner_search *s, int *n);
/* Why the last batch was short, or "" if it was not. */
const char *mlc_tuner_search_message(const mlc_tuner_search *s);
const mlc_tuner_space *mlc_tuner_search_space(const mlc_tuner_search *s);
void mlc_tuner_search_stats_get(const mlc_tuner_search *s, mlc_tuner_stats *out);

/* ==== shared by the files of tuner/ ==== */

/* Deepest loop nest the analyses follow. */
#define TUNER_MAX_LOOPS 64
/* Annotation keys the parallel-vectorize-unroll rule puts on the root
 * block and the postprocessor turns into loop kinds (meta-schedule's). */
#define TUNER_ANN_PARALLEL "meta_schedule.parallel"
#define TUNER_ANN_VECTORIZE "meta_schedule.vectorize"
#define TUNER_ANN_UNROLL "meta_schedule.unroll_explicit"
/* On a block the tiling-with-intrinsic rule cut to an intrinsic's tile:
 * the intrinsic the postprocessor tensorizes it with, once its reduction
 * is decomposed (after parallelization, which needs the init in place). */
#define TUNER_ANN_TENSORIZE "meta_schedule.auto_tensorize"
/* On the block inside it (the intrinsic's tile): no other rule tiles it. */
#define TUNER_ANN_TENSOR_TILE "meta_schedule.tensor_tile"

/* ---- library.c: the --library candidate ---- */

/* get_block + library_call for every block of f the library takes, then
 * the postprocessors of o's space; NULL when no block fits, with the
 * reason (a reduction block's refusal first). */
mlc_sched *tuner_library_candidate(const mlc_prim_func *f, const char *library,
                                   const mlc_tuner_opts *o, mlc_error *why);

/* ---- default.c: the CPU default schedule (the CPU space's default_sched) ---- */

/* Whether blk copies with its last dimension transposed (attention's keys
 * read [j, h, k], written [h, k, j]): one store of a load whose last index
 * is another iter (*r) than the store's (*w). */
bool tuner_transposing_copy(const mlc_block *blk, int *w, int *r);
/* Such a copy's two loops cut into 16 x 16 tiles, the read's innermost
 * (rows of the source read, columns written while both are in L1); false
 * with a message when blk is not one with trivial binding and extents
 * of whole tiles (s may then be partly changed: call it on a copy). */
bool tuner_transpose_tiles(mlc_sched *s, mlc_rv blk, mlc_error *err);

mlc_sched *tuner_cpu_default_sched(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                   mlc_error *err);

/* ---- analysis.c: reading the IR without recording anything ---- */

/* Where a block sits: its realize and the loops from its parent block
 * down to it (outer first). */
typedef struct tuner_site {
  mlc_stmt *realize;
  int n_loops;
  mlc_stmt *loops[TUNER_MAX_LOOPS];
} tuner_site;

/* False if b is not in f. */
bool tuner_find_site(const mlc_prim_func *f, const mlc_block *b, tuner_site *out);
/* Names of the blocks under the root in post-order (children before their
 * parent, siblings in program order), the root excluded; arena-owned. */
int tuner_blocks_post_order(mlc_arena *a, const mlc_prim_func *f, const char ***names);
bool tuner_block_is_spatial(const mlc_block *b);
bool tuner_block_is_reduction(const mlc_block *b); /* a reduce iter and an init */
/* Whether b reduces over two or more operands (a matmul, a convolution's
 * data and weights). */
bool tuner_block_is_contraction(const mlc_block *b);
/* Each iter var bound to exactly the loop at the same position, and
 * nothing else in the nest (the shape multi-level tiling expects). */
bool tuner_trivial_binding(const mlc_block *b, const tuner_site *site);
/* Writes one of f's parameters. */
bool tuner_block_is_output(const mlc_prim_func *f, const mlc_block *b);
/* meta-schedule's NeedsMultiLevelTiling: a non-spatial block with trivial
 * binding, one write, and a read (not of its output) missing some spatial
 * iter var: data reuse that tiling can exploit. */
bool tuner_needs_tiling(const mlc_prim_func *f, const mlc_block *b);
/* The block named `name`, or NULL. */
const mlc_block *tuner_find_block(const mlc_prim_func *f, const char *name);
/* Loops above the first block (program order) that reads what b writes;
 * -1 if none reads it. */
int tuner_first_consumer_loops(const mlc_prim_func *f, const mlc_block *b);
/* Whether the block's value uses T.if_then_else (auto-inline leaves such
 * producers alone on CPU, as meta-schedule does: padding). */
bool tuner_block_has_if_then_else(const mlc_block *b);
/* Whether a block's single store computes intrinsic op. */
bool tuner_block_calls(const mlc_block *b, mlc_intrin op);
/* Whether every block under loop binds its var only into spatial iters. */
bool tuner_loop_is_spatial(const mlc_stmt *loop);
/* Constant extent or -1. */
int64_t tuner_loop_extent(const mlc_stmt *loop);
/* The statements directly under the root block, looking through SEQ. */
int tuner_root_children(const mlc_prim_func *f, mlc_stmt ***out, mlc_arena *a);
/* Outer loops of a top-level nest that parallelization may fuse: a chain
 * of single-child loops from the top, each spatial for every block under
 * it. prods[i] is the product of the first i+1 extents. Returns the
 * count (at most max). */
int tuner_parallel_prefix(const mlc_stmt *top, int64_t *prods, int max);
/* The most loop iterations any block instance of st is nested in (the
 * product of the extents above it, non-constant extents counting 1),
 * saturating at 2^40. */
int64_t tuner_nest_iterations(const mlc_stmt *st);

/* ---- space.c, regtile.c: CPU tiling ---- */

/* The default schedule's tiling around a tensor intrinsic (space.c): block
 * name of *s tiled around the first registered intrinsic o allows that
 * fits (AMX, then VNNI and BF16 micro-kernel families), its tile the one
 * the search samples most, the outer spatial loops fused and parallel,
 * annotated for the postprocessor to tensorize; false (*s unchanged)
 * when none fits. */
bool tuner_intrin_tile_default(mlc_sched **s, const char *name, const mlc_tuner_opts *o);

/* The spatial iter the block's (only) write indexes its last dimension
 * with (alone or added to an offset free of it), when its reads are
 * contiguous in it too (vector lanes along it load consecutive elements
 * or one broadcast value); or -1. */
int tuner_contiguous_iter(const mlc_block *b);
/* The register-blocked micro-kernel (regtile.c): the block's spatial loops
 * tiled S0 S1 and its reduce loops R0 R1, then a register tile S2 of rows
 * x vectors innermost (rows unrolled), under all reduce loops, with a
 * write cache written back under the last S1 loop, so the accumulator
 * lives in vector registers across the whole reduction. sample: tiles
 * are sampled (the design space's sketch); else fixed (the CPU default
 * schedule, which also vectorizes, decomposes the reduction and, with
 * parallel, fuses the S0 loops into one parallel loop). fuse: the pads
 * it reads inlined when every read carries the lanes (a depthwise
 * convolution, a pool), and the elementwise blocks after it (its
 * epilogue) computed per tile under the last S1 loop. *s0_last receives
 * the last S0 loop. False when the block has no such tile (no contiguous
 * output dimension, no reduction) or, with fuse, when what follows it is
 * not an elementwise chain; the state may then be partly changed: call
 * it on a copy. */
/* fp32 lanes of the host's vector registers (16 with AVX-512, 8 with
 * AVX, else 4): register tiles are sized for the host. */
int64_t tuner_host_lanes(void);
bool tuner_register_tile(mlc_sched *s, const char *name, const mlc_tuner_opts *o, bool sample,
                         bool parallel, bool fuse, mlc_rv *s0_last, mlc_error *err);

/* ---- postproc.c, postproc_gpu.c, mutate.c: members of the spaces ---- */

/* Attention fused into one kernel (scores, row-wise blocks, weighted
 * sum: attention.c) computed a tile of query rows at a time, its row
 * reductions in vector partial sums when `partials`, the rows a tile and
 * vectors a register-tile row drawn when `sample` (the design space's
 * sketch), else the default's; on a copy kept when every step succeeds;
 * *out: the weighted sum's block (the blocks left at the root, copies of
 * K and V, are the caller's). */
bool tuner_attention_rows(mlc_sched **s, bool partials, bool sample, mlc_rv *out);
/* The CPU postprocessors (mlc_tuner_postproc's comment); the last of them,
 * the IR verification, is skipped with o->verify_later (as the GPU's). */
bool tuner_postproc_cpu(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err);
/* That verification alone, for a candidate postprocessed with verify_later. */
bool tuner_postproc_verify(const mlc_sched *s, mlc_error *err);
/* The GPU postprocessors (mlc_tuner_space_gpu's comment) with explicit
 * limits; the IR verification only with verify_ir (the GPU verifier
 * always); usage (may be NULL) receives what the verifier measured, so a
 * sample can repair the decisions that broke a limit. */
bool tuner_postproc_gpu(mlc_sched *s, const mlc_gpu_limits *lim, bool verify_ir, mlc_gpu_usage *usage,
                        mlc_error *err);
/* The mutators of mutate.c, which both spaces use (a GPU trace has no
 * parallel annotation, so the parallel mutator finds no site there), in
 * two steps: what changes (drawn from rng; false with the reason when no
 * mutator applies), then the mutant replayed and postprocessed. A tile or unroll mutation is decided when drawn: its
 * mutant is the trace's sketch with one decision replaced (later decisions
 * that no longer fit resampled from seed), so tuner_mutation_key names it
 * before any replay. A parallel extent or compute location is drawn when
 * applied, from the sketch's IR. */
bool tuner_mutation_draw(const mlc_trace *t, int which, mlc_pcg32 *rng, tuner_mutation *m,
                         mlc_error *err);
mlc_sched *tuner_mutation_apply(const mlc_prim_func *f, const mlc_trace *t, const tuner_mutation *m,
                                mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err);
/* A 64-bit hash of a decided mutant's sketch (t's instructions up to
 * EnterPostproc with m's decision in place): equal for equal sketches
 * (the same instructions, inputs, attributes and decisions). */
uint64_t tuner_mutation_key(const mlc_trace *t, const tuner_mutation *m);

/* ---- postproc.c ---- */

/* The parallel bounds a parallel-extent mutation may choose for the
 * sketch IR f: 0 (all serial), `preferred` (the bound sampling uses) and
 * prefix products of the top-level nests, one per distinct plan other
 * than current's, sorted; returns the count (at most max). */
int tuner_parallel_choices(const mlc_prim_func *f, int64_t current, int64_t preferred,
                           int64_t *out, int max);

/* ---- search helpers ---- */

/* Replay the sketch part of t (up to EnterPostproc) onto a fresh state of
 * f with the given overrides (may be NULL); NULL with a message on
 * failure. */
mlc_sched *tuner_replay_sketch(const mlc_prim_func *f, const mlc_trace *t, uint64_t seed,
                               const mlc_replay_opts *opts, mlc_error *err);

/* ---- tune.c: stored records are untrusted ---- */

struct mlc_db_record;
/* Whether rec (a record of workload f) is what its row says was measured:
 * its trace replays on f to its stored sched_hash. A row without a hash
 * (written around mlc-tune with SQL, or migrated from a schema before
 * version 3) is not trusted: nothing ties its run time to a function.
 * False with a warning naming the record in why. */
bool tuner_record_trusted(mlc_arena *a, const mlc_prim_func *f, const struct mlc_db_record *rec,
                          mlc_error *why);

/* ---- tune.c: a run of one batch, measured while the caller goes on ----
 *
 * What mlc_tuner_tune does, cut where the task scheduler overlaps its
 * rounds (o->overlap): open (history, model, the default candidate
 * measured), launch one batch of the round's size (measured on a thread
 * of its own through o->measure), and close (the batch landed and
 * committed, the best chosen, res filled; res must stay where it is until
 * then). The caller keeps one session per function at a time, and uses
 * the database only between these calls, on the thread that makes them.
 * defer_default: the default candidate, when it is to be measured, is
 * left to the caller (tuner_session_default, then _take_default), so that
 * the defaults of many kernels go out as one batch. */
typedef struct tuner_session tuner_session;
tuner_session *tuner_session_open(struct mlc_db *db, const mlc_prim_func *f,
                                  const mlc_tuner_tune_opts *o, bool defer_default,
                                  mlc_tuner_tune_result *res);
/* The deferred default candidate (true: mc set, valid until _take_default
 * or _close), else false. */
bool tuner_session_default(tuner_session *s, struct mlc_measure_cand *mc);
/* Candidates measured as the session measures its own (its pool, or
 * o->measure). */
bool tuner_session_measure(tuner_session *s, int n, const struct mlc_measure_cand *c,
                           struct mlc_measure_result *out, mlc_error *err);
/* The deferred default's result, committed as the run would have. */
void tuner_session_take_default(tuner_session *s, const struct mlc_measure_result *m);
/* 1..n: candidates launched, 0: none to propose (res says why, or the
 * open failed: close reports it), -1: error (close reports it). */
int tuner_session_launch(tuner_session *s);
/* Lands, commits and ends the run; frees s. false: an error (err). */
bool tuner_session_close(tuner_session *s, mlc_error *err);


#pragma GCC visibility pop
#endif
