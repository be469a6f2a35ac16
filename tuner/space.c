/* Design-space generation: schedule rules applied to every block in
 * post-order, as meta-schedule's PostOrderApply does for CPU targets. Each
 * rule runs over all blocks (last block first) of every state the previous
 * rules produced; a rule may fork a state into several (multi-level tiling
 * with and without a write cache), so a space is a list of sketches.
 *
 * Rules, in meta-schedule's order (ScheduleRule::DefaultLLVM):
 *   auto_inline          inline elementwise producers into their consumers
 *   add_rfactor          rfactor reductions with little spatial parallelism
 *   vector_rfactor       a row reduction's innermost loop split by a vector
 *                        width and rfactored there: partial results per lane
 *                        (vectorized), then one cross-lane reduction
 *   tiling_with_intrin   meta-schedule's MultiLevelTilingWithIntrin: a block
 *                        that a registered CPU dot-product intrinsic fits
 *                        (the AMX, then the VNNI micro-kernel family, whose
 *                        R x C x K tile is sampled; dot_16x4_u8i8i32_vnni,
 *                        its NCHWc variant, the bfloat16 micro-kernel
 *                        family, dot_16x2_bf16bf16f32_avx512bf16,
 *                        then users' registered ones) gets its innermost
 *                        tile cut to the intrinsic's shape and blockized,
 *                        the outer
 *                        block tiled "SSRSRS" and annotated with the
 *                        intrinsic, which the postprocessor tensorizes it
 *                        with once parallel loops are in place
 *   multi_level_tiling   "SSRSRS" tiles of blocks with data reuse, with and
 *                        without a write cache at tile levels 1 and 2;
 *                        for GEMM-like blocks also the register tile
 *                        (regtile.c): "SSRRS", the innermost S a rows x
 *                        vectors accumulator held in registers
 *   transpose_tiles      a copy that transposes the last dimension in
 *                        16 x 16 tiles (not meta-schedule's; the default's)
 *   parallel_vectorize_unroll  annotations on the root, once per state
 *   random_compute_location    compute producers at a sampled consumer loop
 * and, for attention fused into one kernel, one more sketch on the whole
 * function: the default's tiles of query rows (tuner/attention.c) with
 * the rows a tile and the register tiles' vectors a row drawn. Not
 * meta-schedule's: its block rules place each block alone.
 * A primitive that refuses (its preconditions fail) leaves the state as it
 * was, so a rule that does not fit a block simply passes the state on.
 */
#include "tuner/tuner_internal.h"

#include <stdio.h>
#include <string.h>

/* The CPU implementation of mlc_tuner_space_impl. */
typedef struct cpu_space {
  mlc_arena *arena;
  const mlc_prim_func *func; /* the workload (the interface's copy) */
  mlc_tuner_opts opts;
  MLC_VEC(mlc_trace *) traces;
} cpu_space;

typedef MLC_VEC(mlc_sched *) sched_list;

/* ---- helpers -------------------------------------------------------------------- */

typedef struct find_ctx {
  const char *name;
  const mlc_block *found;
} find_ctx;

static void find_block_rec(const mlc_stmt *st, find_ctx *c);

static void find_kids(const mlc_stmt *st, find_ctx *c) {
  switch (st->kind) {
  case MLC_STMT_FOR: find_block_rec(st->loop.body, c); return;
  case MLC_STMT_BLOCK_REALIZE:
    if (st->realize.block->init) find_block_rec(st->realize.block->init, c);
    find_block_rec(st->realize.block->body, c);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) find_block_rec(st->seq.stmts[i], c);
    return;
  case MLC_STMT_IF:
    find_block_rec(st->if_.then_s, c);
    if (st->if_.else_s) find_block_rec(st->if_.else_s, c);
    return;
  case MLC_STMT_ALLOCATE: find_block_rec(st->alloc.body, c); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
}

static void find_block_rec(const mlc_stmt *st, find_ctx *c) {
  if (c->found) return;
  if (st->kind == MLC_STMT_BLOCK_REALIZE && strcmp(st->realize.block->name, c->name) == 0) {
    c->found = st->realize.block;
    return;
  }
  find_kids(st, c);
}

/* The block named `name` in the state's IR, without recording anything;
 * NULL once a rule inlined it. */
static const mlc_block *peek_block(const mlc_sched *s, const char *name) {
  find_ctx c = {name, NULL};
  find_block_rec(mlc_sched_func(s)->body, &c);
  return c.found;
}

/* Whether some other block reads what b writes. */
static bool has_consumer_rec(const mlc_stmt *st, const mlc_block *b);

static bool reads_output_of(const mlc_block *x, const mlc_block *b) {
  for (int r = 0; r < x->n_reads; r++)
    for (int w = 0; w < b->n_writes; w++)
      if (x->reads[r].buf == b->writes[w].buf) return true;
  return false;
}

static bool consumes(const mlc_stmt *st, void *b) {
  return st->kind == MLC_STMT_BLOCK_REALIZE && st->realize.block != b &&
         reads_output_of(st->realize.block, b);
}

static bool has_consumer_rec(const mlc_stmt *st, const mlc_block *b) {
  return mlc_stmt_any(st, consumes, (void *)b);
}

/* ---- rule: auto-inline ---------------------------------------------------------- */

/* meta-schedule's AutoInline for CPU (into_consumer only, no if_then_else,
 * injective, disallow_op tir.exp): an elementwise block writing an
 * intermediate buffer is inlined into its consumers. exp is left alone
 * because inlining recomputes it in every consumer, once inside a
 * reduction where it cannot be vectorized (softmax: 2x slower); so is a
 * copy that transposes the last dimension (attention's keys): inlined,
 * the matmul after it would gather its vector operand. */
static bool inline_candidate(const mlc_sched *s, const mlc_block *b) {
  const mlc_prim_func *f = mlc_sched_func(s);
  int w, r;
  return tuner_block_is_spatial(b) && b->n_writes == 1 && b->init == NULL &&
         !tuner_block_is_output(f, b) && !tuner_block_has_if_then_else(b) &&
         !tuner_block_calls(b, MLC_INTRIN_EXP) && !tuner_transposing_copy(b, &w, &r) &&
         has_consumer_rec(f->body, b);
}

static void rule_auto_inline(const mlc_tuner_opts *o, mlc_sched *s, const char *name,
                             sched_list *out) {
  MLC_UNUSED(o);
  const mlc_block *b = peek_block(s, name);
  mlc_rv rv;
  mlc_error e;
  if (b && inline_candidate(s, b) && mlc_sched_get_block(s, name, NULL, &rv, &e))
    mlc_sched_compute_inline(s, rv, &e); /* refused: the block stays */
  MLC_VEC_PUSH(*out, s);
}

/* ---- rule: add-rfactor -------------------------------------------------------------- */

/* meta-schedule's AddRFactor condition: a reduction with trivial binding
 * whose spatial extent is no larger than its reduce extent nor than the
 * parallel bound: too little parallelism outside the reduction. */
static bool needs_rfactor(const mlc_tuner_opts *o, const mlc_prim_func *f, const mlc_block *b,
                          int *n_spatial) {
  tuner_site site;
  if (!tuner_block_is_reduction(b) || !tuner_find_site(f, b, &site) ||
      !tuner_trivial_binding(b, &site))
    return false;
  int64_t space = 1, reduce = 1;
  int n_r = 0;
  *n_spatial = 0;
  for (int i = 0; i < site.n_loops; i++) {
    int64_t e = tuner_loop_extent(site.loops[i]);
    if (b->iters[i].kind == MLC_ITER_REDUCE) reduce *= e, n_r++;
    else space *= e, (*n_spatial)++;
  }
  return n_r > 0 && space <= reduce && space <= (int64_t)o->num_cores * o->max_jobs_per_core;
}

/* Spatial loops first, the reduce loops fused into one and split in two by
 * a sampled tile; *parts receives the two. */
static bool split_reduction(mlc_sched *t, const char *name, const mlc_tuner_opts *o,
                            mlc_rv *parts, mlc_error *err) {
  mlc_rv blk, *loops, order[TUNER_MAX_LOOPS], fused, v[2];
  if (!mlc_sched_get_block(t, name, NULL, &blk, err)) return false;
  int n = mlc_sched_get_loops(t, blk, &loops, err);
  if (n < 1 || n > TUNER_MAX_LOOPS) return false;
  const mlc_block *b = mlc_sched_rv_block(t, blk);
  int m = 0, first_r = -1;
  bool sorted = true;
  for (int i = 0; i < n; i++)
    if (b->iters[i].kind == MLC_ITER_SPATIAL) order[m++] = loops[i];
  for (int i = 0; i < n; i++)
    if (b->iters[i].kind == MLC_ITER_REDUCE) {
      if (first_r < 0) first_r = m;
      order[m++] = loops[i];
    }
  for (int i = 0; i < n; i++) sorted &= order[i] == loops[i];
  if (!sorted && !mlc_sched_reorder(t, n, order, err)) return false;
  if (n - first_r == 1) fused = order[first_r];
  else if (!mlc_sched_fuse(t, n - first_r, order + first_r, true, &fused, err)) return false;
  if (!mlc_sched_sample_perfect_tile(t, fused, 2, o->max_innermost_factor, v, err)) return false;
  mlc_operand f[2] = {MLC_OP_RV(v[0]), MLC_OP_RV(v[1])};
  return mlc_sched_split(t, fused, 2, f, true, parts, err);
}

/* meta-schedule's AddRFactor: the reduction's loops are reordered and
 * fused, split in two by a sampled tile, and rfactored at either part
 * (two sketches), the original kept as a third. */
static void rule_add_rfactor(const mlc_tuner_opts *o, mlc_sched *s, const char *name,
                             sched_list *out) {
  const mlc_block *b = peek_block(s, name);
  int n_spatial;
  mlc_rv parts[2];
  mlc_error e;
  if (b && needs_rfactor(o, mlc_sched_func(s), b, &n_spatial)) {
    mlc_sched *t = mlc_sched_copy(s);
    if (split_reduction(t, name, o, parts, &e))
      for (int k = 0; k < 2; k++) {
        mlc_sched *c = mlc_sched_copy(t);
        mlc_rv rf;
        if (mlc_sched_rfactor(c, parts[k], n_spatial, &rf, &e)) MLC_VEC_PUSH(*out, c);
        else mlc_sched_free(c);
      }
    mlc_sched_free(t);
  }
  MLC_VEC_PUSH(*out, s);
}

/* ---- rule: vector rfactor (row reductions) ---------------------------------------- */

/* Lanes of the partial results: AVX2 and AVX-512 vectors of float. */
static const int64_t REDUCE_LANES[] = {8, 16};
static const double REDUCE_LANE_PROBS[] = {0.5, 0.5};

/* A reduction along a contiguous row (softmax's max and sum, layernorm's
 * mean and variance, a reduce over the last axis) is a chain of dependent
 * scalar max/add operations: one element per operation latency, however
 * many rows run in parallel. With the innermost reduce loop split by a
 * vector width w and rfactored at the inner part, w partial results
 * accumulate side by side (the rf block's innermost loop is spatial and
 * writes consecutive elements, so the postprocessor vectorizes it), and
 * the write-back block adds the w lanes (the cross-lane reduction). Only
 * for blocks without data reuse (matmul and conv are tiled instead) and
 * that add_rfactor leaves alone. */
static bool reads_contiguous_in(const mlc_block *b, const mlc_var *v);

static bool vector_reduction(const mlc_tuner_opts *o, const mlc_prim_func *f, const mlc_block *b,
                             int *n_spatial) {
  tuner_site site;
  int dummy;
  if (!tuner_block_is_reduction(b) || tuner_needs_tiling(f, b) || !tuner_find_site(f, b, &site) ||
      !tuner_trivial_binding(b, &site) || needs_rfactor(o, f, b, &dummy) || site.n_loops < 1)
    return false;
  const mlc_iter_var *last = &b->iters[site.n_loops - 1];
  int64_t e = tuner_loop_extent(site.loops[site.n_loops - 1]);
  if (last->kind != MLC_ITER_REDUCE || e < 2 * REDUCE_LANES[0] || e % REDUCE_LANES[0] ||
      !reads_contiguous_in(b, last->var))
    return false;
  *n_spatial = 0;
  for (int i = 0; i < site.n_loops; i++) *n_spatial += b->iters[i].kind == MLC_ITER_SPATIAL;
  return true;
}

/* The innermost loop of block `name` split by a sampled lane count and
 * rfactored at the lanes. */
static bool rfactor_lanes(mlc_sched *t, const char *name, int64_t extent, int n_spatial,
                          mlc_error *err) {
  mlc_rv blk, *loops, lanes, parts[2], rf;
  double probs[MLC_COUNTOF(REDUCE_LANES)];
  int64_t cands[MLC_COUNTOF(REDUCE_LANES)];
  int nc = 0;
  for (int i = 0; i < MLC_COUNTOF(REDUCE_LANES); i++)
    if (extent % REDUCE_LANES[i] == 0 && extent >= 2 * REDUCE_LANES[i])
      cands[nc] = REDUCE_LANES[i], probs[nc++] = REDUCE_LANE_PROBS[i];
  if (!mlc_sched_get_block(t, name, NULL, &blk, err)) return false;
  int n = mlc_sched_get_loops(t, blk, &loops, err);
  if (n < 1 || nc == 0) return false;
  mlc_rv inner = loops[n - 1];
  if (!mlc_sched_sample_categorical(t, nc, cands, probs, &lanes, err)) return false;
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_RV(lanes)};
  return mlc_sched_split(t, inner, 2, f, true, parts, err) &&
         mlc_sched_rfactor(t, parts[1], n_spatial, &rf, err);
}

static void rule_vector_rfactor(const mlc_tuner_opts *o, mlc_sched *s, const char *name,
                                sched_list *out) {
  const mlc_block *b = peek_block(s, name);
  int n_spatial;
  tuner_site site;
  mlc_error e;
  if (b && vector_reduction(o, mlc_sched_func(s), b, &n_spatial) &&
      tuner_find_site(mlc_sched_func(s), b, &site)) {
    mlc_sched *t = mlc_sched_copy(s);
    if (rfactor_lanes(t, name, tuner_loop_extent(site.loops[site.n_loops - 1]), n_spatial, &e))
      MLC_VEC_PUSH(*out, t);
    else
      mlc_sched_free(t);
  }
  MLC_VEC_PUSH(*out, s);
}

/* ---- rule: multi-level tiling --------------------------------------------------- */

#define TILE_STRUCTURE "SSRSRS"

/* CPU register tiles. The innermost tile of the spatial loop that walks
 * the output's last dimension is what the postprocessor vectorizes: it is
 * drawn from whole vectors (SampleCategorical over VECTOR_TILES dividing
 * the extent) instead of any factor, so the vectorized loop never ends up
 * 1 or 3 wide. The other spatial loops' innermost tiles are rows of the
 * register accumulator: at most ROW_TILE_MAX. Together they keep the
 * accumulator of a write cache at tile level 2 (e.g. 4 x 16 floats, as a
 * hand-written kernel holds in registers) within the register file. */
static const int64_t VECTOR_TILES[] = {8, 16, 32, 64};
static const double VECTOR_TILE_PROBS[] = {0.2, 0.4, 0.3, 0.1};
#define ROW_TILE_MAX 8

/* Whether every read of b that uses v uses it only in its last
 * dimension: vector lanes along v then load consecutive elements or one
 * broadcast value, never a gather (dense's W[j, k] fails this for j). */
static bool reads_contiguous_in(const mlc_block *b, const mlc_var *v) {
  for (int r = 0; r < b->n_reads; r++) {
    const mlc_region *rd = &b->reads[r];
    for (int d = 0; d + 1 < rd->buf->ndim; d++)
      if (mlc_expr_uses_var(rd->ranges[d].min, v) || mlc_expr_uses_var(rd->ranges[d].extent, v))
        return false;
  }
  return true;
}

/* The var that the output's last index steps by one: `v` or `x + v` with
 * x free of v (a dense layer over a packed weight writes
 * T_dense[i, jb * 16 + jl]: consecutive jl, consecutive elements). */
static const mlc_expr *unit_stride_var(const mlc_expr *e) {
  if (e->kind == MLC_EXPR_ADD && e->bin.b->kind == MLC_EXPR_VAR &&
      !mlc_expr_uses_var(e->bin.a, e->bin.b->var))
    return e->bin.b;
  return e->kind == MLC_EXPR_VAR ? e : NULL;
}

int tuner_contiguous_iter(const mlc_block *b) {
  if (b->n_writes != 1 || b->writes[0].buf->ndim < 1) return -1;
  const mlc_expr *e = unit_stride_var(b->writes[0].ranges[b->writes[0].buf->ndim - 1].min);
  if (!e) return -1;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].var == e->var && b->iters[i].kind == MLC_ITER_SPATIAL)
      return reads_contiguous_in(b, e->var) ? i : -1;
  return -1;
}

/* Split `loop` into `parts` tiles whose innermost is a whole vector:
 * v = SampleCategorical(VECTOR_TILES dividing the extent, max_innermost
 * bound), then the rest by SamplePerfectTile. False (nothing recorded)
 * when no vector width divides the extent. */
static bool split_vector_tile(mlc_sched *s, mlc_rv loop, int parts, const mlc_tuner_opts *o,
                              mlc_rv *out, mlc_error *err) {
  int64_t ext = tuner_loop_extent(mlc_sched_rv_loop(s, loop));
  int64_t cands[MLC_COUNTOF(VECTOR_TILES)];
  double probs[MLC_COUNTOF(VECTOR_TILES)];
  int n = 0;
  for (int i = 0; i < MLC_COUNTOF(VECTOR_TILES); i++)
    if (ext > 0 && ext % VECTOR_TILES[i] == 0 && VECTOR_TILES[i] <= o->max_innermost_factor &&
        VECTOR_TILES[i] <= o->max_vectorize_extent) {
      cands[n] = VECTOR_TILES[i];
      probs[n++] = VECTOR_TILE_PROBS[i];
    }
  if (n == 0 || parts < 2) return false;
  mlc_rv v, halves[2], rest[MLC_SCHED_MAX_TILE];
  mlc_operand f2[2] = {MLC_OP_NONE, MLC_OP_RV(v = 0)};
  if (!mlc_sched_sample_categorical(s, n, cands, probs, &v, err)) return false;
  f2[1] = MLC_OP_RV(v);
  if (!mlc_sched_split(s, loop, 2, f2, true, halves, err)) return false;
  mlc_operand f[MLC_SCHED_MAX_TILE];
  if (!mlc_sched_sample_perfect_tile(s, halves[0], parts - 1, o->max_innermost_factor, rest, err))
    return false;
  for (int k = 0; k < parts - 1; k++) f[k] = MLC_OP_RV(rest[k]);
  if (!mlc_sched_split(s, halves[0], parts - 1, f, true, out, err)) return false;
  out[parts - 1] = halves[1];
  return true;
}

/* Split every loop of the block into its tile levels and reorder them
 * into the structure. levels[k] receives, for the k-th letter of the
 * structure, the last loop of that group (for a write cache to go under). */
static bool tile_block(mlc_sched *s, const char *name, const mlc_tuner_opts *o, mlc_rv *levels,
                       mlc_error *err) {
  const char *st = TILE_STRUCTURE;
  int n_s = 0, n_r = 0, n_lv = (int)strlen(st);
  for (int k = 0; k < n_lv; k++) *(st[k] == 'S' ? &n_s : &n_r) += 1;
  mlc_rv blk, *loops;
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  int n = mlc_sched_get_loops(s, blk, &loops, err);
  if (n < 1 || n > TUNER_MAX_LOOPS) return n >= 1 ? mlc_error_set(err, "too many loops") : false;
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  mlc_rv tiles[TUNER_MAX_LOOPS][MLC_SCHED_MAX_TILE];
  bool reduce[TUNER_MAX_LOOPS];
  mlc_rv loop_copy[TUNER_MAX_LOOPS];
  memcpy(loop_copy, loops, sizeof(mlc_rv) * (size_t)n);
  int contig = tuner_contiguous_iter(b);
  int n_spatial = 0;
  for (int i = 0; i < n; i++) n_spatial += b->iters[i].kind != MLC_ITER_REDUCE;
  for (int i = 0; i < n; i++) {
    reduce[i] = b->iters[i].kind == MLC_ITER_REDUCE;
    int parts = reduce[i] ? n_r : n_s;
    mlc_rv v[MLC_SCHED_MAX_TILE];
    mlc_operand f[MLC_SCHED_MAX_TILE];
    if (i == contig && split_vector_tile(s, loop_copy[i], parts, o, tiles[i], err)) continue;
    /* rows of the register tile (blocks with a contiguous iter only) */
    int max_inner = o->max_innermost_factor;
    if (!reduce[i] && contig >= 0 && n_spatial > 1 && max_inner > ROW_TILE_MAX)
      max_inner = ROW_TILE_MAX;
    if (!mlc_sched_sample_perfect_tile(s, loop_copy[i], parts, max_inner, v, err))
      return false;
    for (int k = 0; k < parts; k++) f[k] = MLC_OP_RV(v[k]);
    if (!mlc_sched_split(s, loop_copy[i], parts, f, true, tiles[i], err)) return false;
  }
  mlc_rv order[TUNER_MAX_LOOPS * 4];
  int m = 0, occ_s = 0, occ_r = 0;
  for (int k = 0; k < n_lv; k++) {
    bool want_r = st[k] == 'R';
    int occ = want_r ? occ_r++ : occ_s++;
    levels[k] = -1;
    for (int i = 0; i < n; i++)
      if (reduce[i] == want_r) levels[k] = order[m++] = tiles[i][occ];
  }
  return mlc_sched_reorder(s, m, order, err);
}

/* Write cache at one level: the block writes a "global" cache that is
 * written back under the last loop of tile group `level` (meta-schedule's
 * AddWriteReuse, case 3). */
static mlc_sched *with_write_cache(mlc_sched *tiled, const char *name, mlc_rv level_loop) {
  mlc_sched *c = mlc_sched_copy(tiled);
  mlc_rv blk, cache;
  mlc_error e;
  if (mlc_sched_get_block(c, name, NULL, &blk, &e) &&
      mlc_sched_cache_write(c, blk, 0, "global", 0, NULL, &cache, &e) &&
      mlc_sched_reverse_compute_at(c, cache, level_loop, true, -1, &e))
    return c;
  mlc_sched_free(c);
  return NULL;
}

/* The read of b whose last dimension the contiguous (vectorized) iter
 * walks, not of what b writes: matmul's B[k, j]. -1 if none, and -1 when
 * that dimension is at most BLOCKED_ROW_MAX (one 512-bit vector of floats):
 * the operand is already blocked (conv2d_nchwc's packed weight [.., c, k]),
 * a tile's panel of it is contiguous, and copying it per outer tile only
 * rereads it (2.4 MB per call for a 256-channel 3x3 layer). */
#define BLOCKED_ROW_MAX 16

static int streamed_read(const mlc_block *b) {
  int ci = tuner_contiguous_iter(b);
  if (ci < 0) return -1;
  for (int r = 0; r < b->n_reads; r++) {
    const mlc_region *rd = &b->reads[r];
    bool written = false;
    for (int w = 0; w < b->n_writes; w++) written |= b->writes[w].buf == rd->buf;
    const mlc_expr *e = rd->buf->ndim > 0 ? rd->ranges[rd->buf->ndim - 1].min : NULL;
    if (!written && e && e->kind == MLC_EXPR_VAR && e->var == b->iters[ci].var)
      return rd->buf->shape[rd->buf->ndim - 1] > BLOCKED_ROW_MAX ? r : -1;
  }
  return -1;
}

/* A packed copy of that operand: cache_read "global" computed under the
 * outer tile (level 1's loops), so the tile's whole panel of it (all of k
 * by the tile's columns) is read from one contiguous buffer. Without it,
 * a 1024-wide row-major B puts every k of a column panel 4 KiB apart: the
 * same cache sets, conflict misses on each use (what the hand-written
 * kernel's packing of B avoids). Not in meta-schedule's CPU rules. */
static mlc_sched *with_packed_read(const mlc_sched *cached, const char *name, mlc_rv outer_loop) {
  const mlc_block *b = peek_block(cached, name);
  int r = b ? streamed_read(b) : -1;
  if (r < 0) return NULL;
  mlc_sched *c = mlc_sched_copy(cached);
  mlc_rv blk, copy;
  mlc_error e;
  if (mlc_sched_get_block(c, name, NULL, &blk, &e) &&
      mlc_sched_cache_read(c, blk, r, "global", 0, NULL, &copy, &e) &&
      mlc_sched_compute_at(c, copy, outer_loop, true, -1, &e))
    return c;
  mlc_sched_free(c);
  return NULL;
}

/* The register-blocked micro-kernel (regtile.c): every reduce loop
 * outside a rows x vectors tile whose accumulator stays in registers,
 * its epilogue computed per tile and a depthwise convolution's pads
 * inlined, as the default schedule has them (without, where they do not
 * fit); and again with the streamed operand packed per outer tile. Not
 * in meta-schedule's rules, whose SSRSRS tiles leave reduce loops
 * between the write cache and the innermost tile (partial sums through
 * L1). */
static void add_register_tile(const mlc_tuner_opts *o, const mlc_sched *s, const char *name,
                              sched_list *out) {
  for (int fuse = 1; fuse >= 0; fuse--) {
    mlc_sched *c = mlc_sched_copy(s);
    mlc_rv s0_last;
    mlc_error e;
    if (!tuner_register_tile(c, name, o, true, false, fuse, &s0_last, &e)) {
      mlc_sched_free(c);
      continue;
    }
    MLC_VEC_PUSH(*out, c);
    mlc_sched *p = with_packed_read(c, name, s0_last);
    if (p) MLC_VEC_PUSH(*out, p);
    return;
  }
}

/* meta-schedule's MultiLevelTiling with reuse-write "may" at levels 1 and
 * 2: one sketch without a write cache and one per level with the cache
 * computed under that level's loops; and the level-2 one again with its
 * streamed operand packed per outer tile (with_packed_read); and the
 * register tile's sketches (add_register_tile). */
static void rule_multi_level_tiling(const mlc_tuner_opts *o, mlc_sched *s, const char *name,
                                    sched_list *out) {
  const mlc_block *b = peek_block(s, name);
  if (!b || !tuner_needs_tiling(mlc_sched_func(s), b) ||
      mlc_ann_find(b->n_anns, b->anns, TUNER_ANN_TENSOR_TILE)) {
    MLC_VEC_PUSH(*out, s);
    return;
  }
  mlc_sched *t = mlc_sched_copy(s);
  mlc_rv levels[16];
  mlc_error err;
  if (!tile_block(t, name, o, levels, &err)) {
    /* a shape the rule cannot tile: keep the untiled sketch */
    mlc_sched_free(t);
    MLC_VEC_PUSH(*out, s);
    return;
  }
  static const int WRITE_LEVELS[] = {1, 2};
  for (int i = 0; i < MLC_COUNTOF(WRITE_LEVELS); i++) {
    mlc_sched *c = with_write_cache(t, name, levels[WRITE_LEVELS[i] - 1]);
    if (!c) continue;
    MLC_VEC_PUSH(*out, c);
    mlc_sched *p = WRITE_LEVELS[i] == 2 ? with_packed_read(c, name, levels[0]) : NULL;
    if (p) MLC_VEC_PUSH(*out, p);
  }
  add_register_tile(o, s, name, out);
  mlc_sched_free(s);
  MLC_VEC_PUSH(*out, t);
}

/* ---- rule: multi-level tiling with an intrinsic ---------------------------------- */

/* Each size with a weight: the sampling probability before normalizing
 * over the sizes that divide the loop. Bigger tiles weigh more: an
 * accumulator tile loaded and stored once serves more multiply-adds, and
 * each A broadcast (AMX: A tile) and B load serves more accumulators;
 * the small ones stay in the space for small or odd shapes. */
typedef struct knob {
  const int64_t *sizes;
  const double *weights;
  int n;
} knob;
#define KNOB(s, w) {s, w, MLC_COUNTOF(s)}
static const int64_t ROW_TILES[] = {1, 2, 3, 4, 5, 6, 7, 8};
static const double ROW_WEIGHTS[] = {1, 1, 1, 2, 1, 2, 1, 2};
static const int64_t COL_TILES[] = {16, 32, 48, 64};
static const double COL_WEIGHTS[] = {1, 2, 2, 2};
/* K per micro-kernel call; the short ones only where none of the long
 * ones divides K (the accumulators' load and store then dominate). */
static const int64_t RED_TILES[] = {16, 32, 64, 128, 256, 512};
static const double RED_WEIGHTS[] = {1, 1, 2, 2, 2, 2};
static const int64_t RED_TILES_SHORT[] = {4, 8};
static const double RED_SHORT_WEIGHTS[] = {1, 1};
/* AMX: 16 x 16 int32 tiles, 64 bytes of K per step, at most 2 x 2
 * accumulators (8 tile registers with their operands). */
static const int64_t AMX_ROW_TILES[] = {16, 32};
static const double AMX_ROW_WEIGHTS[] = {1, 2};
static const int64_t AMX_RED_TILES[] = {64, 128, 256, 512, 1024};
static const double AMX_RED_WEIGHTS[] = {1, 1, 2, 2, 2};

/* AVX-512 BF16: 32 vector registers hold up to 14 rows x 2 column
 * blocks of accumulators with the two B loads and the A broadcast, so the
 * tall tiles weigh most; K per call long (the accumulators' load and
 * store amortized), pairs of K per step. */
static const int64_t BF16_ROW_TILES[] = {1, 2, 4, 6, 7, 8, 12, 14};
static const double BF16_ROW_WEIGHTS[] = {1, 1, 1, 2, 2, 2, 3, 3};
static const int64_t BF16_COL_TILES[] = {16, 32};
static const double BF16_COL_WEIGHTS[] = {1, 3};
static const int64_t BF16_RED_TILES[] = {32, 64, 128, 256, 512, 1024};
static const double BF16_RED_WEIGHTS[] = {1, 1, 2, 2, 3, 3};
static const int64_t BF16_RED_SHORT[] = {2, 4, 8, 16};
static const double BF16_RED_SHORT_WEIGHTS[] = {1, 1, 1, 1};

/* AMX BF16: tiles as AMX int8's, 32 bfloat16 of K per step. */
static const int64_t AMX_BF16_RED_TILES[] = {32, 64, 128, 256, 512, 1024};
static const double AMX_BF16_RED_WEIGHTS[] = {1, 1, 1, 2, 2, 2};

/* The whole reduction in one call is a size too (weight WHOLE_WEIGHT) where
 * it is a multiple of the family's K step and at most the builtins' K
 * bound: the postprocessor then gives the call the block's init (the
 * _init member, accumulators from zero), which on AMX is what the tile
 * loads of a decomposed init cost. */
enum { WHOLE_MAX = 4096 };
static const double WHOLE_WEIGHT = 2;

typedef struct tile_knobs {
  knob rows, cols, red, red_short; /* red_short: when no size of red divides */
  int64_t whole_step;              /* K step of a whole reduction (0: never whole) */
} tile_knobs;
static const tile_knobs VNNI_KNOBS = {KNOB(ROW_TILES, ROW_WEIGHTS), KNOB(COL_TILES, COL_WEIGHTS),
                                      KNOB(RED_TILES, RED_WEIGHTS),
                                      KNOB(RED_TILES_SHORT, RED_SHORT_WEIGHTS), 4};
static const tile_knobs AMX_KNOBS = {KNOB(AMX_ROW_TILES, AMX_ROW_WEIGHTS),
                                     KNOB(AMX_ROW_TILES, AMX_ROW_WEIGHTS),
                                     KNOB(AMX_RED_TILES, AMX_RED_WEIGHTS), {NULL, NULL, 0}, 64};
static const tile_knobs AMX_BF16_KNOBS = {KNOB(AMX_ROW_TILES, AMX_ROW_WEIGHTS),
                                          KNOB(AMX_ROW_TILES, AMX_ROW_WEIGHTS),
                                          KNOB(AMX_BF16_RED_TILES, AMX_BF16_RED_WEIGHTS), {NULL, NULL, 0}, 32};
static const tile_knobs BF16_KNOBS = {KNOB(BF16_ROW_TILES, BF16_ROW_WEIGHTS),
                                      KNOB(BF16_COL_TILES, BF16_COL_WEIGHTS), KNOB(BF16_RED_TILES, BF16_RED_WEIGHTS),
                                      KNOB(BF16_RED_SHORT, BF16_RED_SHORT_WEIGHTS), 2};
#undef KNOB

/* CPU tensor intrinsics the rule tries, first fit first, with their tile:
 * `spatial` lanes of the output's last dimension by `reduce` elements of
 * the last reduction. A family (mlc_tensor_intrin_register_cpu registers
 * dense_u8i8i32_vnni_<R>x<C>x<K> on demand) has a sampled tile instead:
 * R rows (the output's second-last dimension), C columns and K reduction
 * elements, each a SampleCategorical over the sizes dividing the loop
 * (VNNI_KNOBS, AMX_KNOBS, AMX_BF16_KNOBS, BF16_KNOBS), so the micro-kernel's shape is a knob
 * that mutation moves; the postprocessor names the member from the tile.
 * Each is used only where registered (for a target whose CPU has the
 * instruction). */
typedef struct tile_intrin {
  const char *name;
  int64_t spatial, reduce;
  const tile_knobs *family; /* NULL: one fixed tile */
  const char *probe;        /* a member that shows the family registered */
  const char *feature;      /* the LLVM feature of its instruction */
} tile_intrin;

static const tile_intrin TILE_INTRINS[] = {
    {"dense_u8i8i32_amx", 0, 0, &AMX_KNOBS, "dense_u8i8i32_amx_16x16x64", "amx-int8"},
    {"dense_u8i8i32_vnni", 0, 0, &VNNI_KNOBS, "dense_u8i8i32_vnni_1x16x4", "avx512vnni"},
    {"dot_16x4_u8i8i32_vnni", 16, 4, NULL, NULL, "avx512vnni"},
    {"dot_16x4_u8i8i32_vnni_nchwc", 16, 4, NULL, NULL, "avx512vnni"},
    {"dense_bf16bf16f32_amx", 0, 0, &AMX_BF16_KNOBS, "dense_bf16bf16f32_amx_16x16x32", "amx-bf16"},
    {"dense_bf16bf16f32_avx512bf16", 0, 0, &BF16_KNOBS, "dense_bf16bf16f32_avx512bf16_1x16x2", "avx512bf16"},
    {"dot_16x2_bf16bf16f32_avx512bf16", 16, 2, NULL, NULL, "avx512bf16"},
};

/* The spatial iter indexing the last dimension of b's one write, and b's
 * last reduce iter (the innermost of a convolution's channel, window and
 * channel-block reductions); false when b has another form. */
static bool intrin_iters(const mlc_block *b, int *sp, int *rd) {
  *sp = *rd = -1;
  if (b->n_writes != 1 || b->writes[0].buf->ndim < 1) return false;
  const mlc_expr *e = b->writes[0].ranges[b->writes[0].buf->ndim - 1].min;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind == MLC_ITER_REDUCE) {
      *rd = i;
    } else if (e->kind == MLC_EXPR_VAR && b->iters[i].var == e->var) {
      *sp = i;
    }
  }
  return *sp >= 0 && *rd >= 0;
}

/* The spatial iter indexing the second-last dimension of b's one write
 * (the micro-kernel's rows), or -1. */
static int row_iter(const mlc_block *b) {
  if (b->n_writes != 1 || b->writes[0].buf->ndim < 2) return -1;
  const mlc_expr *e = b->writes[0].ranges[b->writes[0].buf->ndim - 2].min;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind != MLC_ITER_REDUCE && e->kind == MLC_EXPR_VAR && b->iters[i].var == e->var)
      return i;
  return -1;
}

/* A size: SampleCategorical over the sizes of k that divide the loop's
 * extent (else over those of fallback), and the extent itself where
 * whole_step allows it (WHOLE_MAX); fixed (the default schedule): the
 * heaviest of them, the largest among equals. The loop split by it:
 * (outer, inner), the size into *size. False when none fits. */
static bool split_by_knob(mlc_sched *t, mlc_rv loop, const knob *k, const knob *fallback, int64_t whole_step,
                          bool fixed, int64_t *size, mlc_rv *parts, mlc_error *err) {
  int64_t ext = tuner_loop_extent(mlc_sched_rv_loop(t, loop)), cands[16];
  double probs[16], sum = 0;
  int n = 0;
  for (int pass = 0; pass < 2 && n == 0; pass++) {
    const knob *z = pass ? fallback : k;
    for (int i = 0; z && i < z->n && n < 16; i++)
      if (ext > 0 && ext % z->sizes[i] == 0) {
        cands[n] = z->sizes[i];
        sum += probs[n++] = z->weights[i];
      }
  }
  bool have_whole = false;
  for (int i = 0; i < n; i++) have_whole |= cands[i] == ext;
  if (whole_step > 0 && ext > 0 && ext % whole_step == 0 && ext <= WHOLE_MAX && !have_whole && n < 16) {
    cands[n] = ext;
    sum += probs[n++] = WHOLE_WEIGHT;
  }
  if (n == 0) return mlc_error_set(err, "no micro-kernel tile divides %lld", (long long)ext);
  if (fixed) {
    int best = 0;
    for (int i = 1; i < n; i++)
      if (probs[i] > probs[best] || (probs[i] == probs[best] && cands[i] > cands[best])) best = i;
    *size = cands[best];
    mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(*size)};
    return mlc_sched_split(t, loop, 2, f, true, parts, err);
  }
  for (int i = 0; i < n; i++) probs[i] /= sum;
  mlc_rv v;
  if (!mlc_sched_sample_categorical(t, n, cands, probs, &v, err)) return false;
  *size = mlc_sched_rv_value(t, v);
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_RV(v)};
  return mlc_sched_split(t, loop, 2, f, true, parts, err);
}

/* The tile loops of intrinsic k cut off the block's loops lp[n] (sp: the
 * output's last dimension, rd: the reduction), with the inner parts
 * innermost (first at inner[0]); the family's member name into member.
 * fixed: the tile's sizes chosen, not sampled (split_by_knob). */
static bool cut_tile(mlc_sched *t, int n, mlc_rv *lp, const mlc_block *b, int sp, int rd,
                     const tile_intrin *ti, bool fixed, mlc_rv *inner, char *member, size_t member_n,
                     mlc_error *err) {
  mlc_rv order[TUNER_MAX_LOOPS + 3], js[2], ks[2], is[2];
  int rw = -1, n_in = 2;
  const tile_knobs *kn = ti->family;
  if (kn) {
    int64_t vr, vc, vk;
    rw = row_iter(b);
    if (rw < 0) return mlc_error_set(err, "no row dimension");
    if (!split_by_knob(t, lp[rw], &kn->rows, NULL, 0, fixed, &vr, is, err) ||
        !split_by_knob(t, lp[sp], &kn->cols, NULL, 0, fixed, &vc, js, err) ||
        !split_by_knob(t, lp[rd], &kn->red, &kn->red_short, kn->whole_step, fixed, &vk, ks, err))
      return false;
    snprintf(member, member_n, "%s_%lldx%lldx%lld", ti->name, (long long)vr, (long long)vc, (long long)vk);
    n_in = 3;
  } else {
    mlc_operand fs[2] = {MLC_OP_NONE, MLC_OP_INT(ti->spatial)};
    mlc_operand fr[2] = {MLC_OP_NONE, MLC_OP_INT(ti->reduce)};
    if (!mlc_sched_split(t, lp[sp], 2, fs, true, js, err) || !mlc_sched_split(t, lp[rd], 2, fr, true, ks, err))
      return false;
    snprintf(member, member_n, "%s", ti->name);
  }
  for (int i = 0; i < n; i++) order[i] = i == sp ? js[0] : i == rd ? ks[0] : i == rw ? is[0] : lp[i];
  int m = n;
  if (rw >= 0) order[m++] = is[1];
  order[m++] = js[1], order[m++] = ks[1];
  *inner = order[n];
  MLC_ASSERT(m == n + n_in);
  return mlc_sched_reorder(t, m, order, err);
}

/* The leading spatial loops of block blk fused and run in parallel. */
static bool parallel_spatial(mlc_sched *t, mlc_rv blk, int n_sp, mlc_error *err) {
  mlc_rv *loops, fused;
  if (mlc_sched_get_loops(t, blk, &loops, err) < n_sp || n_sp < 1) return false;
  if (n_sp == 1) return mlc_sched_parallel(t, loops[0], err);
  return mlc_sched_fuse(t, n_sp, loops, false, &fused, err) && mlc_sched_parallel(t, fused, err);
}

/* On t: cut the intrinsic's tile off the block's loops (inner parts
 * innermost), blockize it, tile the outer block and annotate it with the
 * intrinsic (a family's name: the postprocessor picks the member), after
 * checking on a copy that its update (init moved out) tensorizes. fixed
 * (the default schedule): the tile's sizes chosen, the outer block not
 * tiled but its leading spatial loops run in parallel. False (t then
 * garbage) when some step refuses. */
static bool tile_around(mlc_sched *t, const char *name, const mlc_tuner_opts *o, int sp, int rd,
                        const tile_intrin *ti, bool fixed, mlc_error *err) {
  mlc_rv blk, *loops, inner = -1, outer, init, levels[16];
  if (!mlc_sched_get_block(t, name, NULL, &blk, err)) return false;
  int n = mlc_sched_get_loops(t, blk, &loops, err);
  if (n < 2 || n > TUNER_MAX_LOOPS) return false;
  mlc_rv lp[TUNER_MAX_LOOPS];
  memcpy(lp, loops, sizeof(mlc_rv) * (size_t)n);
  char member[64];
  if (!cut_tile(t, n, lp, mlc_sched_rv_block(t, blk), sp, rd, ti, fixed, &inner, member, sizeof member, err) ||
      !mlc_sched_blockize(t, inner, true, &outer, err) || !mlc_sched_get_block(t, name, NULL, &blk, err) ||
      !mlc_sched_annotate(t, blk, TUNER_ANN_TENSOR_TILE, MLC_OP_INT(1), err))
    return false;
  const char *oname = mlc_sched_rv_block(t, outer)->name;
  if ((!fixed && !tile_block(t, oname, o, levels, err)) || !mlc_sched_get_block(t, oname, NULL, &outer, err))
    return false;
  /* the first reduce loop, where the postprocessor moves the init: of the
   * first "R" group of SSRSRS (one outer tile per spatial iter in each "S"
   * group before it); untiled, the one after the spatial loops */
  int n_sp = 0;
  const mlc_block *ob = mlc_sched_rv_block(t, outer);
  for (int i = 0; i < ob->n_iters; i++) n_sp += ob->iters[i].kind != MLC_ITER_REDUCE;
  int first_r = fixed ? n_sp : 2 * n_sp;
  mlc_sched *probe = mlc_sched_copy(t);
  mlc_rv pb, *ol;
  bool fits = mlc_sched_get_block(probe, oname, NULL, &pb, err) &&
              mlc_sched_get_loops(probe, pb, &ol, err) > first_r &&
              mlc_sched_decompose_reduction(probe, pb, ol[first_r], &init, err) &&
              mlc_sched_tensorize(probe, pb, member, err);
  mlc_sched_free(probe);
  return fits && mlc_sched_annotate(t, outer, TUNER_ANN_TENSORIZE, MLC_OP_STR(ti->name), err) &&
         (!fixed || (mlc_sched_get_block(t, oname, NULL, &outer, err) && parallel_spatial(t, outer, n_sp, err)));
}

/* The k-th intrinsic the rule tries: the built-in table's registered
 * ones the target CPU has (o->cpu_features), then every other registered
 * intrinsic of a dot-product shape (users' own, mlc-tune --intrin); false
 * past the end. */
static bool nth_tile_intrin(const mlc_tuner_opts *o, int k, tile_intrin *out) {
  if (k < MLC_COUNTOF(TILE_INTRINS)) {
    *out = TILE_INTRINS[k];
    if (!mlc_tensor_intrin_exists(out->probe ? out->probe : out->name) ||
        (o->cpu_features && !mlc_feature_list_has(o->cpu_features, out->feature)))
      out->name = NULL;
    return true;
  }
  k -= MLC_COUNTOF(TILE_INTRINS);
  if (k >= mlc_tensor_intrin_count()) return false;
  *out = (tile_intrin){mlc_tensor_intrin_name(k), 0, 0, NULL, NULL, NULL};
  for (int i = 0; i < MLC_COUNTOF(TILE_INTRINS) && out->name; i++)
    if (strcmp(TILE_INTRINS[i].name, out->name) == 0) out->name = NULL;
  if (out->name && !mlc_tensor_intrin_dot_shape(out->name, &out->spatial, &out->reduce)) out->name = NULL;
  return true;
}

/* Replaces the state by the intrinsic's sketch when one fits (the plain
 * tiling rule then finds no block of that name to tile). */
static void rule_tiling_with_intrin(const mlc_tuner_opts *o, mlc_sched *s, const char *name,
                                    sched_list *out) {
  const mlc_block *b = peek_block(s, name);
  const mlc_prim_func *f = mlc_sched_func(s);
  tuner_site site;
  int sp, rd;
  if (b && tuner_needs_tiling(f, b) && tuner_find_site(f, b, &site) && tuner_trivial_binding(b, &site) &&
      intrin_iters(b, &sp, &rd)) {
    tile_intrin ti;
    for (int k = 0; nth_tile_intrin(o, k, &ti); k++) {
      if (!ti.name) continue;
      mlc_sched *t = mlc_sched_copy(s);
      mlc_error err;
      if (tile_around(t, name, o, sp, rd, &ti, false, &err)) {
        mlc_sched_free(s);
        MLC_VEC_PUSH(*out, t);
        return;
      }
      mlc_sched_free(t);
    }
  }
  MLC_VEC_PUSH(*out, s);
}

/* The default schedule's form of the rule: block name of *s tiled around
 * the first intrinsic that fits, with the tile tuning samples most
 * (split_by_knob's fixed choice) and the outer spatial loops parallel;
 * false (*s unchanged) when none fits. */
bool tuner_intrin_tile_default(mlc_sched **s, const char *name, const mlc_tuner_opts *o) {
  const mlc_block *b = peek_block(*s, name);
  const mlc_prim_func *f = mlc_sched_func(*s);
  tuner_site site;
  int sp, rd;
  if (!b || !tuner_needs_tiling(f, b) || !tuner_find_site(f, b, &site) || !tuner_trivial_binding(b, &site) ||
      !intrin_iters(b, &sp, &rd))
    return false;
  tile_intrin ti;
  for (int k = 0; nth_tile_intrin(o, k, &ti); k++) {
    if (!ti.name) continue;
    mlc_sched *t = mlc_sched_copy(*s);
    mlc_error err;
    if (tile_around(t, name, o, sp, rd, &ti, true, &err)) {
      mlc_sched_free(*s);
      *s = t;
      return true;
    }
    mlc_sched_free(t);
  }
  return false;
}

/* ---- rule: random compute location ------------------------------------------------ */

/* Whether a block the tiling-with-intrinsic rule annotated reads what b
 * writes: inlining b there (conv2d_nchwc_int8's zero padding) would put
 * a T.if_then_else into the operand that tensorize cannot match. */
static bool feeds_tensorized(const mlc_prim_func *f, const mlc_block *b) {
  mlc_arena *a = mlc_arena_new();
  const char **names;
  int n = tuner_blocks_post_order(a, f, &names);
  bool found = false;
  for (int i = 0; i < n && !found; i++) {
    const mlc_block *c = tuner_find_block(f, names[i]);
    found = c && c != b && reads_output_of(c, b) && mlc_ann_find(c->n_anns, c->anns, TUNER_ANN_TENSORIZE);
  }
  mlc_arena_free(a);
  return found;
}

/* ---- rule: transposing copies ---------------------------------------------------- */

/* A copy that transposes the last dimension in 16 x 16 tiles, as the
 * default schedule has it (tuner_transpose_tiles); it then stays where it
 * is. */
static void rule_transpose_tiles(const mlc_tuner_opts *o, mlc_sched *s, const char *name, sched_list *out) {
  MLC_UNUSED(o);
  const mlc_block *b = peek_block(s, name);
  int w, r;
  if (b && tuner_transposing_copy(b, &w, &r)) {
    mlc_sched *c = mlc_sched_copy(s);
    mlc_rv rv;
    mlc_error e;
    if (mlc_sched_get_block(c, name, NULL, &rv, &e) && tuner_transpose_tiles(c, rv, &e)) {
      mlc_sched_free(s);
      s = c;
    } else {
      mlc_sched_free(c);
    }
  }
  MLC_VEC_PUSH(*out, s);
}

/* meta-schedule's RandomComputeLocation: a block directly under the root
 * that is not an output, not tiled and feeds another block is computed at
 * a sampled loop of its consumers (or stays, or is inlined: the sampled
 * location's root and inline marks). A producer of a block to be
 * tensorized stays where it is (feeds_tensorized), and so does a
 * transposing copy (rule_transpose_tiles). */
static void rule_random_compute_location(const mlc_tuner_opts *o, mlc_sched *s,
                                         const char *name, sched_list *out) {
  MLC_UNUSED(o);
  const mlc_block *b = peek_block(s, name);
  const mlc_prim_func *f = mlc_sched_func(s);
  tuner_site site;
  int w, r;
  if (b && !tuner_block_is_output(f, b) && has_consumer_rec(f->body, b) && !tuner_transposing_copy(b, &w, &r) &&
      tuner_find_site(f, b, &site) && tuner_trivial_binding(b, &site) &&
      !tuner_needs_tiling(f, b) && !feeds_tensorized(f, b)) {
    mlc_sched *c = mlc_sched_copy(s);
    mlc_rv rv, loc;
    mlc_error e;
    if (mlc_sched_get_block(c, name, NULL, &rv, &e) &&
        mlc_sched_sample_compute_location(c, rv, &loc, &e) &&
        mlc_sched_compute_at(c, rv, loc, true, -1, &e)) {
      mlc_sched_free(s);
      s = c;
    } else {
      mlc_sched_free(c);
    }
  }
  MLC_VEC_PUSH(*out, s);
}

/* ---- rule: parallelize-vectorize-unroll ----------------------------------------- */

static const int64_t UNROLL_STEPS[] = {0, 16, 64, 512};

/* The root block carries the bounds; the postprocessor applies them.
 * Kernels smaller than o->min_parallel_work start serial: starting threads
 * costs more than such a nest takes (the graph's default schedule uses the
 * same bound), and the parallel mutator can still try threads. */
static bool annotate_root(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err) {
  mlc_rv root, v;
  double probs[MLC_COUNTOF(UNROLL_STEPS)];
  for (int i = 0; i < MLC_COUNTOF(UNROLL_STEPS); i++) probs[i] = 1.0 / MLC_COUNTOF(UNROLL_STEPS);
  bool small = tuner_nest_iterations(mlc_sched_func(s)->body) < o->min_parallel_work;
  int64_t par = small ? 0 : (int64_t)o->num_cores * o->max_jobs_per_core;
  return mlc_sched_get_block(s, "root", NULL, &root, err) &&
         mlc_sched_annotate(s, root, TUNER_ANN_PARALLEL, MLC_OP_INT(par), err) &&
         mlc_sched_annotate(s, root, TUNER_ANN_VECTORIZE, MLC_OP_INT(o->max_vectorize_extent),
                            err) &&
         mlc_sched_sample_categorical(s, MLC_COUNTOF(UNROLL_STEPS), UNROLL_STEPS, probs, &v,
                                      err) &&
         mlc_sched_annotate(s, root, TUNER_ANN_UNROLL, MLC_OP_RV(v), err);
}

/* ---- driver ------------------------------------------------------------------------- */

typedef void (*rule_fn)(const mlc_tuner_opts *o, mlc_sched *s, const char *name,
                        sched_list *out);

static const rule_fn BLOCK_RULES[] = {
    rule_auto_inline,
    rule_add_rfactor,
    rule_vector_rfactor,
    rule_tiling_with_intrin,
    rule_multi_level_tiling,
    rule_transpose_tiles,
    rule_random_compute_location,
};

/* Apply one rule to every block of every state, last block first. */
static void apply_rule(rule_fn rule, const mlc_tuner_opts *o, int nb, const char **blocks,
                       sched_list *states) {
  for (int bi = nb - 1; bi >= 0; bi--) {
    sched_list next = {0};
    for (int i = 0; i < states->len; i++) rule(o, states->data[i], blocks[bi], &next);
    MLC_VEC_FREE(*states);
    *states = next;
  }
}

static void free_list(sched_list *l) {
  for (int i = 0; i < l->len; i++) mlc_sched_free(l->data[i]);
  MLC_VEC_FREE(*l);
}

static void cpu_free(void *p) {
  cpu_space *sp = p;
  MLC_VEC_FREE(sp->traces);
  mlc_arena_free(sp->arena);
  mlc_free(sp);
}

static void *cpu_new(const mlc_prim_func *f, const mlc_tuner_opts *o, mlc_error *err) {
  cpu_space *sp = mlc_xmalloc(sizeof *sp);
  *sp = (cpu_space){.arena = mlc_arena_new(), .func = f, .opts = *o};
  const char **blocks;
  int nb = tuner_blocks_post_order(sp->arena, sp->func, &blocks);
  if (nb == 0) {
    cpu_free(sp);
    mlc_error_set(err, "design space: function \"%s\" has no block to schedule", f->name);
    return NULL;
  }
  sched_list states = {0};
  MLC_VEC_PUSH(states, mlc_sched_new(sp->func, o->seed));
  for (int r = 0; r < MLC_COUNTOF(BLOCK_RULES); r++)
    apply_rule(BLOCK_RULES[r], o, nb, blocks, &states);
  mlc_sched *att = mlc_sched_new(sp->func, o->seed);
  mlc_rv weighted_sum;
  if (tuner_attention_rows(&att, true, true, &weighted_sum)) MLC_VEC_PUSH(states, att);
  else mlc_sched_free(att);
  for (int i = 0; i < states.len; i++) {
    if (!annotate_root(states.data[i], o, err)) {
      free_list(&states);
      cpu_free(sp);
      mlc_error_prefix(err, "design space: parallel-vectorize-unroll");
      return NULL;
    }
    MLC_VEC_PUSH(sp->traces, mlc_trace_copy(sp->arena, mlc_sched_trace(states.data[i])));
  }
  free_list(&states);
  return sp;
}

static int cpu_count(const void *p) { return ((const cpu_space *)p)->traces.len; }

static const mlc_trace *cpu_trace(const void *p, int i) {
  const cpu_space *sp = p;
  MLC_ASSERT(i >= 0 && i < sp->traces.len);
  return sp->traces.data[i];
}

static mlc_sched *cpu_sample(const void *p, int i, uint64_t seed, mlc_error *err) {
  const cpu_space *sp = p;
  mlc_replay_opts ro = {.new_decisions = true};
  mlc_sched *s = tuner_replay_sketch(sp->func, cpu_trace(sp, i), seed, &ro, err);
  if (s && !tuner_postproc_cpu(s, &sp->opts, err)) {
    mlc_sched_free(s);
    return NULL;
  }
  return s;
}

const mlc_tuner_space_impl mlc_tuner_space_cpu = {
    .name = "cpu",
    .new = cpu_new,
    .count = cpu_count,
    .trace = cpu_trace,
    .sample = cpu_sample,
    .postprocess = tuner_postproc_cpu,
    .default_sched = tuner_cpu_default_sched,
    .draw_mutation = tuner_mutation_draw,
    .apply_mutation = tuner_mutation_apply,
    .free = cpu_free,
};
