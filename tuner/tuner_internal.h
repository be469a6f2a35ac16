/* Private to tuner/: IR analysis shared by the rules, postprocessors and
 * mutators, and the pieces of the search that the files share. */
#ifndef MLC_TUNER_INTERNAL_H
#define MLC_TUNER_INTERNAL_H

#include "tuner/tuner.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* Deepest loop nest the analyses follow. */
#define TUNER_MAX_LOOPS 64
/* Annotation keys the parallel-vectorize-unroll rule puts on the root
 * block and the postprocessor turns into loop kinds (meta-schedule's). */
#define TUNER_ANN_PARALLEL "meta_schedule.parallel"
#define TUNER_ANN_VECTORIZE "meta_schedule.vectorize"
#define TUNER_ANN_UNROLL "meta_schedule.unroll_explicit"

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

/* ---- postproc.c, postproc_gpu.c, mutate.c: members of the spaces ---- */

/* The CPU postprocessors (mlc_tuner_postproc's comment). */
bool tuner_postproc_cpu(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err);
/* The GPU postprocessors (mlc_tuner_space_gpu's comment) with explicit
 * limits; usage (may be NULL) receives what the verifier measured, so a
 * sample can repair the decisions that broke a limit. */
bool tuner_postproc_gpu(mlc_sched *s, const mlc_gpu_limits *lim, mlc_gpu_usage *usage,
                        mlc_error *err);
/* The mutators of mutate.c; both spaces use them (a GPU trace has no
 * parallel annotation, so the parallel mutator finds no site there). */
mlc_sched *tuner_mutate_decisions(const mlc_prim_func *f, const mlc_sched *cand, int which,
                                  mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err);

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


#pragma GCC visibility pop
#endif
