/* The GPU design space: meta-schedule's CUDA rules (ScheduleRule::
 * DefaultCUDA) applied to every block in post-order, rule after rule, as
 * space.c does for CPUs:
 *   multi_level_tiling  "SSSRRSRS", levels 1-3 bound to blockIdx.x,
 *                       vthread.x, threadIdx.x; a local write cache at the
 *                       threadIdx loop; shared read caches at the first
 *                       reduce level, marked for cooperative fetch
 *   auto_inline         elementwise intermediates (padding included) into
 *                       their consumers, elementwise outputs into their
 *                       producer (the write cache's write-back)
 *   unroll              the unroll step, sampled once per sketch
 *   auto_bind           blocks left unbound: leading spatial loops fused,
 *                       split by a sampled thread count, bound; where the
 *                       block reads rows that unbound reductions write
 *                       (softmax), only the row loops, and those
 *                       reductions computed under its threadIdx loop
 *   cross_thread        a second sketch where some block reduces (meta-
 *                       schedule's CrossThreadReduction): one row per
 *                       thread block, its reduce loops split by a sampled
 *                       thread count T bound to threadIdx.x (the cuda
 *                       backend lowers it to partials combined in shared
 *                       memory); a reduction that is not an output is
 *                       computed at its consumer's blockIdx loop with its
 *                       buffer in shared memory, and the consumer's row
 *                       split by the same T
 * Samples keep the tile decisions inside the GPU's limits (see
 * mlc_tuner_space_gpu in tuner.h). This is the GPU implementation of the
 * design-space interface; mlc_tuner_tune picks it for cuda targets.
 */
#include "tuner/tuner_internal.h"

#include <string.h>

#define GPU_STRUCTURE "SSSRRSRS"
#define ANN_COOP_FETCH "meta_schedule.cooperative_fetch"
enum { MAX_GROUP_LOOPS = 12 };

/* The SamplePerfectTile instructions of one tiled block. */
typedef struct tile_group {
  int n_s, n_r;
  int s_inst[MAX_GROUP_LOOPS]; /* spatial loops: 5 factors (block, vthread, thread, 2 inner) */
  int r_inst[MAX_GROUP_LOOPS]; /* reduce loops: 3 factors (outer, 2 inner) */
} tile_group;

typedef struct gpu_sketch {
  mlc_trace *trace;
  int n_groups;
  tile_group *groups;
} gpu_sketch;

typedef struct gpu_space {
  mlc_arena *arena;
  const mlc_prim_func *func; /* the interface's copy */
  mlc_tuner_opts opts;
  mlc_gpu_limits lim;
  MLC_VEC(gpu_sketch) sketches;
} gpu_space;

/* A sketch being built: the state and its tile groups. */
typedef struct build {
  mlc_sched *s;
  const mlc_tuner_opts *o;
  const mlc_gpu_limits *lim;
  MLC_VEC(tile_group) groups;
  int64_t threads; /* auto-bind's threads per block; 0: sampled */
  bool has_t;      /* the cross-thread sketch's T was sampled: t_rv */
  mlc_rv t_rv;
  int n_cross;     /* blocks the cross-thread rule reduced across threads */
} build;

static int last_inst(const mlc_sched *s) { return mlc_sched_trace(s)->insts.len - 1; }

static const mlc_block *peek(const mlc_sched *s, const char *name) {
  return tuner_find_block(mlc_sched_func(s), name);
}

typedef bool (*block_step)(build *bd, const char *name, mlc_error *err);

/* Run a step on a copy of the state: kept when it succeeds; when some
 * primitive refuses, the state and its tile groups stay as they were
 * (nothing of the attempt, not even its getters, enters the trace). */
static void try_step(build *bd, block_step step, const char *name) {
  mlc_sched *orig = bd->s;
  int n_groups = bd->groups.len;
  mlc_error e;
  bd->s = mlc_sched_copy(orig);
  if (step(bd, name, &e)) {
    mlc_sched_free(orig);
    return;
  }
  mlc_sched_free(bd->s);
  bd->s = orig;
  bd->groups.len = n_groups;
}

/* Whether a loop above the block is bound to a thread (tiled or bound). */
static bool under_binding(const mlc_prim_func *f, const mlc_block *b) {
  tuner_site site;
  if (!tuner_find_site(f, b, &site)) return false;
  for (int i = 0; i < site.n_loops; i++)
    if (site.loops[i]->loop.kind == MLC_FOR_THREAD_BINDING) return true;
  return false;
}

/* ---- rule: multi-level tiling --------------------------------------------------- */

/* Split every loop into its levels (recording the sample instructions),
 * reorder into the structure; tiles[k] lists the loops of letter k. */
static bool tile_loops(build *bd, mlc_rv blk, tile_group *g, mlc_rv tiles[8][MAX_GROUP_LOOPS],
                       int *n_tiles, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv *lp, loops[MAX_GROUP_LOOPS];
  int n = mlc_sched_get_loops(s, blk, &lp, err);
  if (n < 1 || n > MAX_GROUP_LOOPS) return n >= 1 ? mlc_error_set(err, "too many loops") : false;
  memcpy(loops, lp, sizeof(mlc_rv) * (size_t)n);
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  mlc_rv split[MAX_GROUP_LOOPS][5];
  bool red[MAX_GROUP_LOOPS];
  for (int i = 0; i < n; i++) {
    red[i] = b->iters[i].kind == MLC_ITER_REDUCE;
    int parts = red[i] ? 3 : 5;
    mlc_rv v[5];
    mlc_operand f[5];
    if (!mlc_sched_sample_perfect_tile(s, loops[i], parts, bd->o->max_innermost_factor, v, err))
      return false;
    if (red[i]) g->r_inst[g->n_r++] = last_inst(s);
    else g->s_inst[g->n_s++] = last_inst(s);
    for (int k = 0; k < parts; k++) f[k] = MLC_OP_RV(v[k]);
    if (!mlc_sched_split(s, loops[i], parts, f, true, split[i], err)) return false;
  }
  mlc_rv order[MAX_GROUP_LOOPS * 5];
  int m = 0, occ[2] = {0, 0};
  for (int k = 0; k < 8; k++) {
    bool want_r = GPU_STRUCTURE[k] == 'R';
    int lvl = occ[want_r]++;
    n_tiles[k] = 0;
    for (int i = 0; i < n; i++)
      if (red[i] == want_r) tiles[k][n_tiles[k]++] = order[m++] = split[i][lvl];
  }
  return mlc_sched_reorder(s, m, order, err);
}

/* Fuse the loops of one level (if several) and bind them; *out: the loop. */
static bool bind_level(mlc_sched *s, mlc_rv *loops, int n, const char *tag, mlc_rv *out,
                       mlc_error *err) {
  if (n == 0) return mlc_error_set(err, "no spatial loop to bind to %s", tag);
  if (n == 1) *out = loops[0];
  else if (!mlc_sched_fuse(s, n, loops, true, out, err)) return false;
  return mlc_sched_bind(s, *out, tag, err);
}

/* Shared read caches at the first reduce level, one per input buffer,
 * each marked for cooperative fetch with a sampled vector width. */
static bool read_caches(build *bd, const char *name, mlc_rv at, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv blk;
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  int n = b->n_reads;
  const mlc_buffer *bufs[16];
  if (n > 16) n = 16;
  for (int i = 0; i < n; i++) bufs[i] = b->reads[i].buf;
  static const int64_t LANES[] = {1, 2, 4};
  static const double PROBS[] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
  for (int i = 0; i < n; i++) {
    b = mlc_sched_rv_block(s, blk);
    int idx = -1;
    for (int r = 0; r < b->n_reads; r++)
      if (b->reads[r].buf == bufs[i]) idx = r;
    if (idx < 0 || strncmp(bufs[i]->scope, "global", 6) != 0) continue;
    mlc_rv copy, v;
    if (!mlc_sched_cache_read(s, blk, idx, "shared", 1, &blk, &copy, err) ||
        !mlc_sched_compute_at(s, copy, at, true, -1, err) ||
        !mlc_sched_sample_categorical(s, 3, LANES, PROBS, &v, err) ||
        !mlc_sched_annotate(s, copy, ANN_COOP_FETCH, MLC_OP_RV(v), err))
      return false;
  }
  return true;
}

/* meta-schedule's MultiLevelTiling with the CUDA configuration: tiles,
 * bindings, the write cache at level 3, the read caches at level 4. */
static bool tile_block(build *bd, const char *name, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv blk, tiles[8][MAX_GROUP_LOOPS], bound[3], wb;
  int n_tiles[8];
  tile_group g = {0};
  static const char *TAGS[3] = {"blockIdx.x", "vthread.x", "threadIdx.x"};
  if (!mlc_sched_get_block(s, name, NULL, &blk, err) ||
      !tile_loops(bd, blk, &g, tiles, n_tiles, err))
    return false;
  for (int k = 0; k < 3; k++)
    if (!bind_level(s, tiles[k], n_tiles[k], TAGS[k], &bound[k], err)) return false;
  if (n_tiles[3] == 0) return mlc_error_set(err, "no reduce loop");
  if (!mlc_sched_cache_write(s, blk, 0, "local", 0, NULL, &wb, err) ||
      !mlc_sched_reverse_compute_at(s, wb, bound[2], true, -1, err) ||
      !read_caches(bd, name, tiles[3][n_tiles[3] - 1], err))
    return false;
  MLC_VEC_PUSH(bd->groups, g);
  return true;
}

/* A block the rule cannot tile is left to auto-bind. */
static void rule_multi_level_tiling(build *bd, const char *name) {
  const mlc_block *b = peek(bd->s, name);
  if (b && tuner_needs_tiling(mlc_sched_func(bd->s), b)) try_step(bd, tile_block, name);
}

/* ---- rule: auto-inline ------------------------------------------------------------ */

/* meta-schedule's CUDA AutoInline allows T.if_then_else (padding): a pad
 * block inlines into the shared-memory fetch that multi-level tiling put
 * after it, so the fetch reads the unpadded input under the condition. */
static bool is_elementwise(const mlc_block *b) {
  return tuner_block_is_spatial(b) && b->n_writes == 1 && b->init == NULL;
}

static bool inline_block(build *bd, const char *name, mlc_error *err) {
  mlc_rv rv;
  const mlc_block *b = peek(bd->s, name);
  if (!mlc_sched_get_block(bd->s, name, NULL, &rv, err)) return false;
  if (!tuner_block_is_output(mlc_sched_func(bd->s), b))
    return mlc_sched_compute_inline(bd->s, rv, err);
  return mlc_sched_reverse_compute_inline(bd->s, rv, err);
}

/* Elementwise intermediates go into their consumers; an elementwise
 * output goes into its producer (a local cache's write-back: the epilogue
 * then reads the accumulator directly). Refusals leave the block. */
static void rule_auto_inline(build *bd, const char *name) {
  const mlc_block *b = peek(bd->s, name);
  const mlc_prim_func *f = mlc_sched_func(bd->s);
  if (b && is_elementwise(b) && !under_binding(f, b)) try_step(bd, inline_block, name);
}

/* ---- rule: auto-bind ----------------------------------------------------------------- */

static const int64_t THREAD_EXTENTS[] = {32, 64, 128, 256, 512, 1024};
enum { MAX_THREADBLOCKS = 256 };
/* mlc_tuner_gpu_default_schedule's threads per block: 8 warps, within
 * every SM's limits, without tuning. */
enum { GPU_DEFAULT_THREADS = 256 };

/* The largest rank of the buffers blk reads that an unbound reduction
 * block writes (0: none). */
static int unbound_reduction_rank(mlc_sched *s, mlc_rv blk) {
  mlc_rv *prod;
  mlc_error e;
  const mlc_prim_func *f = mlc_sched_func(s);
  int n = mlc_sched_get_producers(s, blk, &prod, &e), rank = 0;
  for (int i = 0; i < n; i++) {
    const mlc_block *p = mlc_sched_rv_block(s, prod[i]);
    if (!p || !tuner_block_is_reduction(p) || under_binding(f, p)) continue;
    for (int w = 0; w < p->n_writes; w++)
      if (p->writes[w].buf->ndim > rank) rank = p->writes[w].buf->ndim;
  }
  return rank;
}

/* A block left unbound whose consumers are bound: computed under a
 * consumer's innermost threadIdx loop, each thread producing what it
 * reads (a row's max and sum in registers). */
static bool compute_at_thread(build *bd, const char *name, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv blk, *cons, *lp;
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  int nc = mlc_sched_get_consumers(s, blk, &cons, err);
  if (nc < 1) return mlc_error_set(err, "block %s has no consumer", name);
  int n = mlc_sched_get_loops(s, cons[0], &lp, err);
  for (int i = n - 1; i >= 0; i--) {
    const mlc_stmt *l = mlc_sched_rv_loop(s, lp[i]);
    if (l->loop.kind == MLC_FOR_THREAD_BINDING && strncmp(l->loop.thread, "threadIdx.", 10) == 0)
      return mlc_sched_compute_at(s, blk, lp[i], true, -1, err);
  }
  return mlc_error_set(err, "the consumer of %s is not bound to threads", name);
}

/* meta-schedule's AutoBind: the leading spatial chain fused; if it fits
 * max_threadblocks * max_threads, split by a sampled thread count,
 * otherwise into [rest, 256 blocks, max threads] with the rest innermost. */
static bool bind_block(build *bd, const char *name, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv blk, *lp, loops[TUNER_MAX_LOOPS], fused, parts[3], v;
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  int n = mlc_sched_get_loops(s, blk, &lp, err);
  if (n < 0 || n > TUNER_MAX_LOOPS) return false;
  memcpy(loops, lp, sizeof(mlc_rv) * (size_t)n);
  int m = 0;
  while (m < n) {
    const mlc_stmt *l = mlc_sched_rv_loop(s, loops[m]);
    if (!tuner_loop_is_spatial(l) || tuner_loop_extent(l) < 1) break;
    m++;
    if (m < n && l->loop.body != mlc_sched_rv_loop(s, loops[m])) break;
  }
  if (m == 0) return mlc_error_set(err, "auto-bind: block %s has no leading spatial loop", name);
  /* Rows that unbound reductions produce (softmax's max and sum): one
   * thread per row, so that the reductions can be computed under it. */
  int rank = unbound_reduction_rank(s, blk);
  if (rank > 0 && rank < m) m = rank;
  if (m == 1) fused = loops[0];
  else if (!mlc_sched_fuse(s, m, loops, true, &fused, err)) return false;
  int64_t ext = tuner_loop_extent(mlc_sched_rv_loop(s, fused));
  int64_t max_t = bd->lim->max_threads_per_block;
  if (bd->threads > 0) { /* fixed: as many blocks as it takes (grid.x allows 2^31-1) */
    mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(ext < bd->threads ? ext : bd->threads)};
    return mlc_sched_split(s, fused, 2, f, true, parts, err) &&
           mlc_sched_bind(s, parts[0], "blockIdx.x", err) &&
           mlc_sched_bind(s, parts[1], "threadIdx.x", err);
  }
  if (ext <= MAX_THREADBLOCKS * max_t) {
    int64_t cand[MLC_COUNTOF(THREAD_EXTENTS)];
    double probs[MLC_COUNTOF(THREAD_EXTENTS)];
    int nc = 0;
    int64_t cap = ext < max_t ? ext : max_t;
    for (int i = 0; i < MLC_COUNTOF(THREAD_EXTENTS); i++)
      if (THREAD_EXTENTS[i] <= cap) cand[nc++] = THREAD_EXTENTS[i];
    if (nc == 0) cand[nc++] = cap; /* fewer iterations than a warp: one block */
    for (int i = 0; i < nc; i++) probs[i] = 1.0 / nc;
    if (!mlc_sched_sample_categorical(s, nc, cand, probs, &v, err)) return false;
    mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_RV(v)};
    return mlc_sched_split(s, fused, 2, f, true, parts, err) &&
           mlc_sched_bind(s, parts[0], "blockIdx.x", err) &&
           mlc_sched_bind(s, parts[1], "threadIdx.x", err);
  }
  mlc_operand f[3] = {MLC_OP_NONE, MLC_OP_INT(MAX_THREADBLOCKS), MLC_OP_INT(max_t)};
  return mlc_sched_split(s, fused, 3, f, true, parts, err) &&
         mlc_sched_reorder(s, 3, (mlc_rv[]){parts[1], parts[2], parts[0]}, err) &&
         mlc_sched_bind(s, parts[1], "blockIdx.x", err) &&
         mlc_sched_bind(s, parts[2], "threadIdx.x", err);
}

static void rule_auto_bind(build *bd, const char *name) {
  const mlc_block *b = peek(bd->s, name);
  if (b && tuner_block_is_reduction(b) && !under_binding(mlc_sched_func(bd->s), b) &&
      !tuner_block_is_output(mlc_sched_func(bd->s), b))
    try_step(bd, compute_at_thread, name);
  b = peek(bd->s, name);
  if (b && !under_binding(mlc_sched_func(bd->s), b)) try_step(bd, bind_block, name);
}

/* ---- rule: cross-thread reduction ------------------------------------------------------- */

/* The sketch's threads per block, sampled at its first use (every loop
 * bound to threadIdx.x shares it: a barrier of the cross-thread tree must
 * be reached by every thread of the block). */
static bool cross_threads(build *bd, int64_t extent, mlc_rv *out, mlc_error *err) {
  if (!bd->has_t) {
    int64_t cand[MLC_COUNTOF(THREAD_EXTENTS)];
    double probs[MLC_COUNTOF(THREAD_EXTENTS)];
    int nc = 0;
    int64_t cap = bd->lim->max_threads_per_block;
    for (int i = 0; i < MLC_COUNTOF(THREAD_EXTENTS); i++)
      if (THREAD_EXTENTS[i] <= cap && THREAD_EXTENTS[i] <= extent) cand[nc++] = THREAD_EXTENTS[i];
    if (nc == 0) return mlc_error_set(err, "cross-thread: %lld iterations, fewer than a warp",
                                      (long long)extent);
    for (int i = 0; i < nc; i++) probs[i] = 1.0 / nc;
    if (!mlc_sched_sample_categorical(bd->s, nc, cand, probs, &bd->t_rv, err)) return false;
    bd->has_t = true;
  }
  *out = bd->t_rv;
  return true;
}

/* Fuse loops[0..n) if several, split by [rest, T], bind the inner part to
 * threadIdx.x. */
static bool split_to_threads(build *bd, mlc_rv *loops, int n, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv fused, parts[2], t = {0};
  if (n == 1) fused = loops[0];
  else if (!mlc_sched_fuse(s, n, loops, true, &fused, err)) return false;
  if (!cross_threads(bd, tuner_loop_extent(mlc_sched_rv_loop(s, fused)), &t, err)) return false;
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_RV(t)};
  return mlc_sched_split(s, fused, 2, f, true, parts, err) &&
         mlc_sched_bind(s, parts[1], "threadIdx.x", err);
}

/* The block's loops below `from`: the spatial ones (which must come
 * first), then the reduce ones; counts in *n_sp, *n_red. */
static int split_kinds(build *bd, mlc_rv blk, int from, mlc_rv *loops, int *n_sp, int *n_red,
                       mlc_error *err) {
  mlc_rv *lp;
  int n = mlc_sched_get_loops(bd->s, blk, &lp, err);
  if (n < 0 || n - from > TUNER_MAX_LOOPS) return -1;
  *n_sp = *n_red = 0;
  for (int i = from; i < n; i++) {
    bool sp = tuner_loop_is_spatial(mlc_sched_rv_loop(bd->s, lp[i]));
    if (sp && *n_red > 0) return mlc_error_set(err, "a spatial loop under a reduce loop"), -1;
    loops[i - from] = lp[i];
    ++*(sp ? n_sp : n_red);
  }
  return n - from;
}

/* A consumer of unbound reductions (softmax's normalization): its rows
 * (as many leading loops as the reductions' outputs have dimensions) to
 * blockIdx.x, the rest of its spatial loops split to threads. */
static bool cross_consumer(build *bd, mlc_rv blk, int rank, mlc_error *err) {
  mlc_rv loops[TUNER_MAX_LOOPS], rows;
  int n_sp, n_red;
  if (split_kinds(bd, blk, 0, loops, &n_sp, &n_red, err) < 0) return false;
  if (n_red > 0 || n_sp <= rank)
    return mlc_error_set(err, "cross-thread: the consumer has no loop left for its threads");
  return bind_level(bd->s, loops, rank, "blockIdx.x", &rows, err) &&
         split_to_threads(bd, loops + rank, n_sp - rank, err);
}

/* The loop of the block's first consumer bound to blockIdx.x. */
static bool consumer_block_loop(build *bd, mlc_rv blk, mlc_rv *out, mlc_error *err) {
  mlc_rv *cons, *lp;
  int nc = mlc_sched_get_consumers(bd->s, blk, &cons, err);
  if (nc < 1) return mlc_error_set(err, "cross-thread: no consumer");
  int n = mlc_sched_get_loops(bd->s, cons[0], &lp, err);
  for (int i = 0; i < n; i++) {
    const mlc_stmt *l = mlc_sched_rv_loop(bd->s, lp[i]);
    if (l->loop.kind == MLC_FOR_THREAD_BINDING && strcmp(l->loop.thread, "blockIdx.x") == 0) {
      *out = lp[i];
      return true;
    }
  }
  return mlc_error_set(err, "cross-thread: the consumer is not bound to blockIdx.x");
}

/* A reduction: an output gets its spatial loops bound to blockIdx.x; an
 * intermediate moves under its consumer's blockIdx loop into shared
 * memory. Either way its reduce loops are split to the threads. */
static bool cross_reduction(build *bd, const char *name, mlc_error *err) {
  mlc_sched *s = bd->s;
  mlc_rv blk, loops[TUNER_MAX_LOOPS], at = {0}, rows;
  int n_sp, n_red, from = 0;
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  bool output = tuner_block_is_output(mlc_sched_func(s), mlc_sched_rv_block(s, blk));
  if (!output) {
    if (!consumer_block_loop(bd, blk, &at, err) ||
        !mlc_sched_compute_at(s, blk, at, true, -1, err) ||
        !mlc_sched_set_scope(s, blk, 0, "shared", err))
      return false;
    mlc_rv *lp;
    int n = mlc_sched_get_loops(s, blk, &lp, err);
    while (from < n && mlc_sched_rv_loop(s, lp[from])->loop.kind == MLC_FOR_THREAD_BINDING) from++;
  }
  if (split_kinds(bd, blk, from, loops, &n_sp, &n_red, err) < 0) return false;
  if (n_red == 0) return mlc_error_set(err, "cross-thread: no reduce loop");
  /* (an intermediate's spatial loops left under the row have extent 1) */
  if (output && !bind_level(s, loops, n_sp, "blockIdx.x", &rows, err)) return false;
  if (!split_to_threads(bd, loops + n_sp, n_red, err)) return false;
  bd->n_cross++;
  return true;
}

static bool cross_consumer_step(build *bd, const char *name, mlc_error *err) {
  mlc_rv blk;
  if (!mlc_sched_get_block(bd->s, name, NULL, &blk, err)) return false;
  int rank = unbound_reduction_rank(bd->s, blk);
  return rank > 0 ? cross_consumer(bd, blk, rank, err)
                  : mlc_error_set(err, "cross-thread: %s reads no reduction", name);
}

static void rule_cross_thread(build *bd, const char *name) {
  const mlc_block *b = peek(bd->s, name);
  if (!b || under_binding(mlc_sched_func(bd->s), b)) return;
  if (tuner_block_is_reduction(b)) try_step(bd, cross_reduction, name);
  else try_step(bd, cross_consumer_step, name);
}

/* ---- rule: unroll ---------------------------------------------------------------------- */

static const int64_t UNROLL_STEPS[] = {0, 16, 64, 512, 1024};

static bool annotate_unroll(mlc_sched *s, mlc_error *err) {
  mlc_rv root, v;
  double probs[MLC_COUNTOF(UNROLL_STEPS)];
  for (int i = 0; i < MLC_COUNTOF(UNROLL_STEPS); i++) probs[i] = 1.0 / MLC_COUNTOF(UNROLL_STEPS);
  return mlc_sched_get_block(s, "root", NULL, &root, err) &&
         mlc_sched_sample_categorical(s, MLC_COUNTOF(UNROLL_STEPS), UNROLL_STEPS, probs, &v,
                                      err) &&
         mlc_sched_annotate(s, root, TUNER_ANN_UNROLL, MLC_OP_RV(v), err);
}

/* ---- building the space ------------------------------------------------------------------ */

typedef void (*gpu_rule)(build *bd, const char *name);

/* One rule over every block, last block first. */
static void apply_rule(build *bd, gpu_rule rule, int nb, const char **blocks) {
  for (int i = nb - 1; i >= 0; i--) rule(bd, blocks[i]);
}

static void gpu_free(void *p);

/* One sketch: the rules in meta-schedule's order, the cross-thread rule
 * before auto-bind in the second; that one is kept only when it applied. */
static bool add_sketch(gpu_space *sp, int nb, const char **blocks, bool cross, mlc_error *err) {
  build bd = {.s = mlc_sched_new(sp->func, sp->opts.seed), .o = &sp->opts, .lim = &sp->lim};
  apply_rule(&bd, rule_multi_level_tiling, nb, blocks);
  apply_rule(&bd, rule_auto_inline, nb, blocks);
  bool ok = annotate_unroll(bd.s, err);
  /* blocks the rules created (caches) are bound already; the list is the
   * original one, which is what auto-bind needs */
  if (ok && cross) apply_rule(&bd, rule_cross_thread, nb, blocks);
  if (ok) apply_rule(&bd, rule_auto_bind, nb, blocks);
  if (ok && (!cross || bd.n_cross > 0)) {
    gpu_sketch sk = {.trace = mlc_trace_copy(sp->arena, mlc_sched_trace(bd.s)),
                     .n_groups = bd.groups.len};
    sk.groups = MLC_NEW_ARRAY(sp->arena, tile_group, bd.groups.len + 1);
    if (bd.groups.len)
      memcpy(sk.groups, bd.groups.data, sizeof(tile_group) * (size_t)bd.groups.len);
    MLC_VEC_PUSH(sp->sketches, sk);
  }
  mlc_sched_free(bd.s);
  MLC_VEC_FREE(bd.groups);
  if (!ok) mlc_error_prefix(err, "GPU design space: unroll");
  return ok;
}

static void *gpu_new(const mlc_prim_func *f, const mlc_tuner_opts *o, mlc_error *err) {
  gpu_space *sp = mlc_xmalloc(sizeof *sp);
  *sp = (gpu_space){.arena = mlc_arena_new(), .func = f, .opts = *o, .lim = o->gpu_limits};
  const char **blocks;
  int nb = tuner_blocks_post_order(sp->arena, sp->func, &blocks);
  if (nb == 0) {
    gpu_free(sp);
    mlc_error_set(err, "GPU design space: function \"%s\" has no block to schedule", f->name);
    return NULL;
  }
  bool ok = add_sketch(sp, nb, blocks, false, err);
  /* the cross-thread sketch only where some block reduces across threads */
  if (ok) ok = add_sketch(sp, nb, blocks, true, err);
  if (!ok) {
    gpu_free(sp);
    return NULL;
  }
  return sp;
}

static void gpu_free(void *p) {
  gpu_space *sp = p;
  MLC_VEC_FREE(sp->sketches);
  mlc_arena_free(sp->arena);
  mlc_free(sp);
}

static mlc_sched *gpu_default_sched(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                    mlc_error *err) {
  mlc_arena *scratch = mlc_arena_new();
  const char **blocks;
  int nb = tuner_blocks_post_order(scratch, f, &blocks);
  build bd = {.s = mlc_sched_new(f, 0), .o = o, .lim = &o->gpu_limits,
              .threads = GPU_DEFAULT_THREADS};
  apply_rule(&bd, rule_auto_inline, nb, blocks);
  apply_rule(&bd, rule_auto_bind, nb, blocks);
  MLC_VEC_FREE(bd.groups);
  mlc_arena_free(scratch);
  if (mlc_gpu_verify(mlc_sched_func(bd.s), &o->gpu_limits, NULL, err)) return bd.s;
  mlc_error_prefix(err, "no GPU schedule for %s (tune it for the cuda target first)", f->name);
  mlc_sched_free(bd.s);
  return NULL;
}

mlc_prim_func *mlc_tuner_gpu_default_schedule(mlc_arena *a, const mlc_prim_func *f,
                                              mlc_error *err) {
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_sched *s = gpu_default_sched(f, &o, err);
  mlc_prim_func *out = s ? mlc_func_copy(a, mlc_sched_func(s)) : NULL;
  if (s) mlc_sched_free(s);
  return out;
}

static int gpu_count(const void *p) { return ((const gpu_space *)p)->sketches.len; }

static const mlc_trace *gpu_trace(const void *p, int i) {
  const gpu_space *sp = p;
  MLC_ASSERT(i >= 0 && i < sp->sketches.len);
  return sp->sketches.data[i].trace;
}

/* ---- sampling within the limits ------------------------------------------------------------ */

/* The tile decisions of a sample, editable. */
typedef struct tile_decs {
  int n;
  int inst[64];
  mlc_decision d[64];
} tile_decs;

static void read_decisions(const gpu_sketch *sk, const mlc_trace *t, tile_decs *td) {
  td->n = 0;
  for (int g = 0; g < sk->n_groups; g++) {
    const tile_group *tg = &sk->groups[g];
    for (int i = 0; i < tg->n_s + tg->n_r && td->n < 64; i++) {
      int inst = i < tg->n_s ? tg->s_inst[i] : tg->r_inst[i - tg->n_s];
      td->inst[td->n] = inst;
      td->d[td->n++] = t->insts.data[inst].decision;
    }
  }
}

static mlc_decision *dec_of(tile_decs *td, int inst) {
  for (int i = 0; i < td->n; i++)
    if (td->inst[i] == inst) return &td->d[i];
  return NULL;
}

static int64_t smallest_prime(int64_t x) {
  for (int64_t p = 2; p * p <= x; p++)
    if (x % p == 0) return p;
  return x;
}

/* Move the smallest prime factor of level `from` to level `to`. */
static void move_factor(mlc_decision *d, int from, int to) {
  int64_t p = smallest_prime(d->v[from]);
  d->v[from] /= p;
  d->v[to] *= p;
}

/* Keep the product of level `lvl` over the group's spatial loops within
 * max by moving factors of the largest to the block level. */
static bool clamp_level(tile_decs *td, const tile_group *g, int lvl, int64_t max) {
  bool changed = false;
  for (;;) {
    int64_t prod = 1, best = 1;
    mlc_decision *arg = NULL;
    for (int i = 0; i < g->n_s; i++) {
      mlc_decision *d = dec_of(td, g->s_inst[i]);
      if (!d) continue;
      prod *= d->v[lvl];
      if (d->v[lvl] > best) best = d->v[lvl], arg = d;
    }
    if (prod <= max || !arg) return changed;
    move_factor(arg, lvl, 0);
    changed = true;
  }
}

/* One step towards less memory: the largest factor among the levels that
 * size the tiles (reduce inner levels, spatial levels from vthread in;
 * for local memory only the per-thread spatial levels) moves outward. */
static bool shrink_memory(tile_decs *td, const tile_group *g, bool local) {
  mlc_decision *arg = NULL;
  int arg_lvl = 0;
  int64_t best = 1;
  for (int i = 0; i < g->n_s; i++) {
    mlc_decision *d = dec_of(td, g->s_inst[i]);
    for (int l = 1; d && l < 5; l++)
      if ((!local || l != 2) && d->v[l] > best) best = d->v[l], arg = d, arg_lvl = l;
  }
  for (int i = 0; i < g->n_r && !local; i++) {
    mlc_decision *d = dec_of(td, g->r_inst[i]);
    for (int l = 1; d && l < 3; l++)
      if (d->v[l] > best) best = d->v[l], arg = d, arg_lvl = l;
  }
  if (!arg) return false;
  move_factor(arg, arg_lvl, 0);
  return true;
}

static mlc_sched *replay_with(const gpu_space *sp, const mlc_trace *t,
                              const tile_decs *td, uint64_t seed, mlc_error *err) {
  mlc_replay_opts ro = {.n_overrides = td->n, .override_insts = td->inst,
                        .override_decisions = td->d};
  return tuner_replay_sketch(sp->func, t, seed, &ro, err);
}

enum { MAX_REPAIRS = 64 };

static mlc_sched *gpu_sample(const void *p, int i, uint64_t seed, mlc_error *err) {
  const gpu_space *sp = p;
  MLC_ASSERT(i >= 0 && i < sp->sketches.len);
  const gpu_sketch *sk = &sp->sketches.data[i];
  mlc_replay_opts fresh = {.new_decisions = true};
  mlc_sched *s = tuner_replay_sketch(sp->func, sk->trace, seed, &fresh, err);
  if (!s) return NULL;
  tile_decs td;
  read_decisions(sk, mlc_sched_trace(s), &td);
  bool changed = false;
  for (int g = 0; g < sk->n_groups; g++) {
    changed |= clamp_level(&td, &sk->groups[g], 2, sp->lim.max_threads_per_block);
    changed |= clamp_level(&td, &sk->groups[g], 2, sp->lim.max_thread_dim[0]);
    changed |= clamp_level(&td, &sk->groups[g], 1, sp->lim.max_vthread);
  }
  for (int attempt = 0; attempt <= MAX_REPAIRS; attempt++) {
    if (changed) {
      mlc_sched *r = replay_with(sp, mlc_sched_trace(s), &td, seed, err);
      mlc_sched_free(s);
      if (!(s = r)) return NULL;
    }
    /* postprocess in place: a repair replays the trace up to EnterPostproc */
    mlc_gpu_usage u;
    if (tuner_postproc_gpu(s, &sp->lim, !sp->opts.verify_later, &u, err)) return s;
    changed = false;
    bool local = u.failed == MLC_GPU_LOCAL;
    if (u.failed != MLC_GPU_SHARED && !local) break;
    /* each move divides some tile by a prime (>= 2): about log2(used /
     * limit) moves bring the usage under the limit, saving replays */
    int64_t used = local ? u.local_bytes : u.shared_bytes;
    int64_t limit = local ? sp->lim.max_local_bytes : sp->lim.max_shared_bytes;
    for (int64_t r = limit > 0 ? used / limit : 1; r >= 1; r /= 2)
      for (int g = 0; g < sk->n_groups; g++) changed |= shrink_memory(&td, &sk->groups[g], local);
    if (!changed) break;
  }
  mlc_sched_free(s);
  return NULL;
}

static bool gpu_postprocess(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err) {
  return tuner_postproc_gpu(s, &o->gpu_limits, !o->verify_later, NULL, err);
}

const mlc_tuner_space_impl mlc_tuner_space_gpu = {
    .name = "gpu",
    .new = gpu_new,
    .count = gpu_count,
    .trace = gpu_trace,
    .sample = gpu_sample,
    .postprocess = gpu_postprocess,
    .default_sched = gpu_default_sched,
    .draw_mutation = tuner_mutation_draw,
    .apply_mutation = tuner_mutation_apply,
    .free = gpu_free,
};
