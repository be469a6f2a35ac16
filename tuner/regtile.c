/* Register-blocked micro-kernels for GEMM-like blocks on CPUs (matmul,
 * the blocked convolution): the shape of oneDNN's and TVM's x86 kernels.
 *
 * The output tile a thread computes at once is rows x vectors: `row` (a
 * spatial iter that only the broadcast operand uses: matmul's i, the
 * convolution's output column x) by the contiguous iter's vector lanes
 * (matmul's j, the output-channel lanes k), optionally times `mult` (a
 * spatial iter that only the vector operand uses: the convolution's
 * output-channel block f, two weight vectors per broadcast, three where
 * its extent is odd and a multiple of 3; a dense layer's weight block jb,
 * up to 8 when there are no rows). Where no
 * operand is a broadcast (a depthwise convolution, a pool: every read
 * carries the lanes) the rows are output columns, each its own vector
 * load, with the weights loaded once for all of them. The loops
 * are ordered
 *     S0 (parallel) | S1 | R0 | R1 | S2 = row, mult, lanes
 * so every reduce loop runs outside the register tile, whose rows and
 * multiples are unrolled and whose lanes are vectorized. The block writes
 * a cache that is initialized before R0 and written back after R1 under
 * the last S1 loop: after lowering, the cache is a small buffer indexed by
 * constants only, which LLVM's SROA turns into vector registers held
 * across the whole reduction (partial sums never go through memory).
 *
 * Budget: the accumulator takes rows x W registers (W = vectors per row,
 * at most 3), plus W vector loads and one broadcast: rows <= (regs - 4) /
 * W (14 x 2, 9 x 3 or 28 x 1 with AVX-512's 32 registers, as oneDNN's
 * ur_w).
 */
#include "tuner/tuner_internal.h"

#include <string.h>

#define MAX_VECTORS_PER_ROW 2
/* The innermost reduce loop's inner tile in the fixed schedule: the
 * convolution's input-channel lanes of a block (16), matmul's k by 16. */
#define FIXED_REDUCE_INNER 16

typedef struct reg_plan {
  int contig;    /* iter of the output's last dimension: vector lanes */
  int row;       /* rows (one broadcast each, or one vector load: vector_rows); -1: none */
  bool vector_rows; /* no operand is broadcast: each row loads a vector */
  int mult;      /* vectors per row beyond the lanes; -1: none */
  int64_t lanes; /* fp32 lanes of one vector register */
  int regs;      /* vector registers */
} reg_plan;

/* The host's vector registers: the design space does not see the target
 * it tunes for, so tuning for another CPU (-mcpu=...) sizes tiles for
 * this one (the tuner still measures what it picks). */
int64_t tuner_host_lanes(void) {
  mlc_target t;
  mlc_target_host(&t);
  return mlc_target_has_feature(&t, "avx512f") ? 16 : mlc_target_has_feature(&t, "avx") ? 8 : 4;
}

static void register_file(reg_plan *p) {
  p->lanes = tuner_host_lanes();
  p->regs = p->lanes == 16 ? 32 : 16;
}

static bool read_uses(const mlc_region *rd, const mlc_var *v) {
  for (int d = 0; d < rd->buf->ndim; d++)
    if (mlc_expr_uses_var(rd->ranges[d].min, v) || mlc_expr_uses_var(rd->ranges[d].extent, v))
      return true;
  return false;
}

static bool is_output(const mlc_block *b, const mlc_buffer *buf) {
  for (int w = 0; w < b->n_writes; w++)
    if (b->writes[w].buf == buf) return true;
  return false;
}

/* Whether iter i is used by some read that uses (with_lanes) or does not
 * use the lanes' iter, the block's own output left out. */
static bool used_by(const mlc_block *b, int i, const mlc_var *lanes, bool with_lanes) {
  for (int r = 0; r < b->n_reads; r++) {
    const mlc_region *rd = &b->reads[r];
    if (!is_output(b, rd->buf) && read_uses(rd, lanes) == with_lanes && read_uses(rd, b->iters[i].var))
      return true;
  }
  return false;
}

/* Rows where no operand is a broadcast (a depthwise convolution, a pool:
 * every read carries the lanes): output columns a read walks with the
 * lanes, each row its own vector load of it, and an operand that does not
 * walk them (the weights) loaded once for all rows; several rows keep
 * several accumulator chains in flight. The last such iter (adjacent
 * vectors in a blocked layout), or -1. */
static int vector_row(const mlc_block *b, const tuner_site *site, const reg_plan *p) {
  const mlc_var *lanes = b->iters[p->contig].var;
  int row = -1;
  for (int i = 0; i < b->n_iters; i++)
    if (i != p->contig && i != p->mult && b->iters[i].kind == MLC_ITER_SPATIAL &&
        tuner_loop_extent(site->loops[i]) > 1 && used_by(b, i, lanes, true))
      row = i;
  return row;
}

static bool make_plan(const mlc_block *b, const tuner_site *site, reg_plan *p) {
  *p = (reg_plan){.contig = tuner_contiguous_iter(b), .row = -1, .mult = -1};
  if (p->contig < 0 || !tuner_block_is_reduction(b) || b->n_iters != site->n_loops) return false;
  const mlc_var *lanes = b->iters[p->contig].var;
  for (int i = 0; i < b->n_iters; i++) {
    if (i == p->contig || b->iters[i].kind != MLC_ITER_SPATIAL) continue;
    bool vec = used_by(b, i, lanes, true), bcast = used_by(b, i, lanes, false);
    if (bcast && !vec && tuner_loop_extent(site->loops[i]) > 1) p->row = i; /* the last one */
    if (vec && !bcast && p->mult < 0) p->mult = i;
  }
  if (p->row < 0) {
    p->row = vector_row(b, site, p);
    p->vector_rows = p->row >= 0;
  }
  register_file(p);
  return true;
}

/* ---- tile candidates ---- */

typedef struct cands {
  int n;
  int64_t v[32];
  double p[32];
} cands;

static void add(cands *c, int64_t v, double p) {
  if (c->n < (int)MLC_COUNTOF(c->v)) c->v[c->n] = v, c->p[c->n++] = p;
}

/* Vector tiles of the lanes' iter (extent e): one register, or two when
 * no mult iter can give more vectors (mult_two); e itself when shorter than a
 * register, but not 1 (a matrix times a vector has no lanes to tile: the
 * default schedule sums its rows by vector lanes instead). */
static void lane_cands(const reg_plan *p, int64_t e, bool mult_two, const mlc_tuner_opts *o,
                       cands *c) {
  c->n = 0;
  int64_t bound = o->max_vectorize_extent < o->max_innermost_factor ? o->max_vectorize_extent
                                                                     : o->max_innermost_factor;
  if (e > 1 && e < p->lanes && e <= bound) add(c, e, 1);
  for (int w = 1; w <= (mult_two ? 1 : MAX_VECTORS_PER_ROW); w++)
    if (e % (w * p->lanes) == 0 && w * p->lanes <= bound) add(c, w * p->lanes, 1);
}

/* Vector rows in a tile at most: each row loads its own vector, so more
 * rows save no loads, and this many chains already hide the latency. */
#define MAX_VECTOR_ROWS 8

/* Rows: divisors of e from 2 to the budget, likelier the larger (fewer
 * loads per FMA); {1} when there is none. */
static void row_cands(const reg_plan *p, int64_t e, int vectors, cands *c) {
  c->n = 0;
  int64_t max = (p->regs - 4) / vectors;
  if (p->vector_rows && max > MAX_VECTOR_ROWS) max = MAX_VECTOR_ROWS;
  for (int64_t d = 2; d <= max && d <= e; d++)
    if (e % d == 0) add(c, d, (double)d);
  if (c->n == 0) add(c, 1, 1);
}

/* Vectors of the mult iter (extent e) when there are no rows (a dense
 * layer over one input row): without rows, each weight vector is one FMA
 * chain, so up to MAX_MULT_NO_ROWS of them (divisors of e, likelier the
 * larger) keep several chains in flight (ResNet-18's classifier: 125
 * blocks of 8 columns, 5 per tile). */
#define MAX_MULT_NO_ROWS 8
static void mult_cands(int64_t e, cands *c) {
  c->n = 0;
  for (int64_t d = 1; d <= MAX_MULT_NO_ROWS && d <= e; d++)
    if (e % d == 0) add(c, d, (double)d);
}

/* The factor as an operand: a SampleCategorical over the candidates, or
 * (fixed) the last one. */
static bool pick(mlc_sched *s, const cands *c, bool sample, mlc_operand *out, mlc_error *err) {
  if (!sample) {
    *out = MLC_OP_INT(c->v[c->n - 1]);
    return true;
  }
  mlc_rv v;
  if (!mlc_sched_sample_categorical(s, c->n, c->v, c->p, &v, err)) return false;
  *out = MLC_OP_RV(v);
  return true;
}

/* Vectors per row the mult iter (extent e) can give beside the rows: two
 * where e is even, three where it is a multiple of 3 only (GPT-2's output
 * layer: 3141 weight blocks; 8 rows x 3 vectors ran 39 ms where 16 rows x
 * 1 ran 51), else 1 (none). */
static int mult_vectors(int64_t e) { return e % 2 == 0 ? 2 : e % 3 == 0 ? 3 : 1; }

/* The register factor of every iter (MLC_OP_NONE: not in the tile). */
static bool reg_factors(mlc_sched *s, const reg_plan *p, const mlc_stmt *const *loops, bool sample,
                        const mlc_tuner_opts *o, mlc_operand *f, mlc_error *err) {
  int64_t ec = tuner_loop_extent(loops[p->contig]);
  int mv = p->mult >= 0 ? mult_vectors(tuner_loop_extent(loops[p->mult])) : 1;
  cands c;
  lane_cands(p, ec, mv > 1, o, &c);
  if (c.n == 0) return mlc_error_set(err, "register tile: no vector tile divides %lld", (long long)ec);
  int vectors = mv > 1 ? mv : c.v[c.n - 1] > p->lanes ? 2 : 1;
  if (!pick(s, &c, sample, &f[p->contig], err)) return false;
  if (p->mult >= 0 && p->row < 0) {
    mult_cands(tuner_loop_extent(loops[p->mult]), &c);
    if (!pick(s, &c, sample, &f[p->mult], err)) return false;
  } else if (p->mult >= 0) {
    c.n = 0;
    add(&c, 1, 0.3);
    if (mv > 1) add(&c, mv, 0.7);
    if (!pick(s, &c, sample, &f[p->mult], err)) return false;
  }
  if (p->row >= 0) {
    row_cands(p, tuner_loop_extent(loops[p->row]), vectors, &c);
    if (!pick(s, &c, sample, &f[p->row], err)) return false;
  }
  return true;
}

/* ---- the schedule ---- */

/* Split loop in two (outer, inner): a sampled perfect tile, or fixed
 * with the inner part `inner`. */
static bool split2(mlc_sched *s, mlc_rv loop, bool sample, int64_t inner,
                   const mlc_tuner_opts *o, mlc_rv *out, mlc_error *err) {
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(inner)};
  mlc_rv v[2];
  if (sample) {
    if (!mlc_sched_sample_perfect_tile(s, loop, 2, o->max_innermost_factor, v, err)) return false;
    f[0] = MLC_OP_RV(v[0]), f[1] = MLC_OP_RV(v[1]);
  }
  return mlc_sched_split(s, loop, 2, f, true, out, err);
}

static int64_t largest_divisor_upto(int64_t e, int64_t max) {
  for (int64_t d = max < e ? max : e; d > 1; d--)
    if (e % d == 0) return d;
  return 1;
}

/* Loops of the tiled nest: group k of (S0, S1, R0, R1, S2) per iter. */
enum { G_S0, G_S1, G_R0, G_R1, G_S2, N_GROUPS };

/* Bytes of the buffers block b reads with (with_lanes) or without the
 * lanes' iter, its own output left out. */
static int64_t read_bytes(const mlc_block *b, const mlc_var *lanes, bool with_lanes) {
  int64_t bytes = 0;
  for (int r = 0; r < b->n_reads; r++) {
    const mlc_region *rd = &b->reads[r];
    if (!is_output(b, rd->buf) && read_uses(rd, lanes) == with_lanes)
      bytes += mlc_buffer_numel(rd->buf) * mlc_dtype_bytes(rd->buf->dtype);
  }
  return bytes;
}

/* The order of the iters' outer (S0, S1) loops: the iters' own, except
 * that the rows go innermost when the vector operand (a weight) is the
 * larger one, so that a weight block stays in cache while every row
 * tile reads it, and the weight streams from memory once (GPT-2's output
 * layer, 154 MB of weight read once per 8 rows in the iters' order:
 * 94 -> 47 ms for a 128-token prompt; its other layers 15-22% faster). */
static void outer_order(const mlc_block *b, const reg_plan *p, int n, int *ord) {
  const mlc_var *lanes = b->iters[p->contig].var;
  bool rows_inner = p->row >= 0 && read_bytes(b, lanes, true) > read_bytes(b, lanes, false);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!(rows_inner && i == p->row)) ord[m++] = i;
  if (rows_inner) ord[m++] = p->row;
}

static bool tile_loops(mlc_sched *s, mlc_rv blk, const reg_plan *p, bool sample,
                       const mlc_tuner_opts *o, mlc_rv (*g)[N_GROUPS], mlc_error *err) {
  mlc_rv *got, loops[TUNER_MAX_LOOPS];
  int n = mlc_sched_get_loops(s, blk, &got, err);
  if (n < 1 || n > TUNER_MAX_LOOPS) return false;
  memcpy(loops, got, sizeof *loops * (size_t)n);
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  const mlc_stmt *stmts[TUNER_MAX_LOOPS];
  for (int i = 0; i < n; i++) stmts[i] = mlc_sched_rv_loop(s, loops[i]);
  mlc_operand f[TUNER_MAX_LOOPS];
  for (int i = 0; i < n; i++) f[i] = MLC_OP_NONE;
  if (!reg_factors(s, p, stmts, sample, o, f, err)) return false;
  int last_r = -1;
  for (int i = 0; i < n; i++)
    if (b->iters[i].kind == MLC_ITER_REDUCE) last_r = i;
  for (int i = 0; i < n; i++) {
    mlc_rv two[2];
    for (int k = 0; k < N_GROUPS; k++) g[i][k] = -1;
    if (b->iters[i].kind == MLC_ITER_REDUCE) {
      int64_t inner = i == last_r ? largest_divisor_upto(tuner_loop_extent(stmts[i]), FIXED_REDUCE_INNER) : 1;
      if (!split2(s, loops[i], sample, inner, o, two, err)) return false;
      g[i][G_R0] = two[0], g[i][G_R1] = two[1];
      continue;
    }
    mlc_rv outer = loops[i];
    if (f[i].kind != MLC_OPERAND_NONE) {
      mlc_operand fr[2] = {MLC_OP_NONE, f[i]};
      if (!mlc_sched_split(s, loops[i], 2, fr, true, two, err)) return false;
      outer = two[0], g[i][G_S2] = two[1];
    }
    if (!split2(s, outer, sample, 1, o, two, err)) return false;
    g[i][G_S0] = two[0], g[i][G_S1] = two[1];
  }
  mlc_rv order[TUNER_MAX_LOOPS * 3];
  int m = 0, ord[TUNER_MAX_LOOPS];
  outer_order(b, p, n, ord);
  for (int k = G_S0; k < G_S2; k++)
    for (int i = 0; i < n; i++)
      if (g[ord[i]][k] >= 0) order[m++] = g[ord[i]][k];
  const int inner[3] = {p->row, p->mult, p->contig};
  for (int k = 0; k < 3; k++)
    if (inner[k] >= 0 && g[inner[k]][G_S2] >= 0) order[m++] = g[inner[k]][G_S2];
  return mlc_sched_reorder(s, m, order, err);
}

/* The write-back's loops below the last S1 loop: all but the innermost
 * unrolled (the accumulator is read at constant indices), the innermost
 * vectorized when fixed (the postprocessor vectorizes it when sampled).
 * An innermost loop over several vectors (a dense layer's weight blocks
 * times lanes, when the output flattens them into one dimension) is
 * split into unrolled vectors first. */
static bool shape_write_back(mlc_sched *s, mlc_rv cache, int n_outer, int64_t lanes, bool sample,
                             mlc_error *err) {
  mlc_rv *got, loops[TUNER_MAX_LOOPS + 1];
  int n = mlc_sched_get_loops(s, cache, &got, err);
  if (n <= n_outer) return n == n_outer;
  if (n > TUNER_MAX_LOOPS) return mlc_error_set(err, "register tile: write-back nest too deep");
  memcpy(loops, got, sizeof *loops * (size_t)n);
  int64_t e = tuner_loop_extent(mlc_sched_rv_loop(s, loops[n - 1]));
  if (e > lanes && e % lanes == 0) {
    mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(lanes)};
    if (!mlc_sched_split(s, loops[n - 1], 2, f, true, &loops[n - 1], err)) return false;
    n++;
  }
  for (int i = n_outer; i < n - 1; i++)
    if (!mlc_sched_unroll(s, loops[i], err)) return false;
  return sample || mlc_sched_vectorize(s, loops[n - 1], err);
}

/* Whether every read of b carries the lanes of its output's last
 * dimension (no operand is a broadcast: a depthwise convolution, a pool). */
static bool reads_all_lanes(const mlc_block *b) {
  int c = tuner_contiguous_iter(b);
  if (c < 0) return false;
  for (int k = 0; k < b->n_reads; k++)
    if (!read_uses(&b->reads[k], b->iters[c].var) && !is_output(b, b->reads[k].buf)) return false;
  return true;
}

/* A block that pads: a copy of a load, or a constant where the load
 * would fall outside (data_pad). */
static bool is_pad(const mlc_prim_func *f, const mlc_block *b) {
  const mlc_stmt *st = b->body;
  if (!tuner_block_is_spatial(b) || b->init || b->n_writes != 1 || tuner_block_is_output(f, b) || !st ||
      st->kind != MLC_STMT_STORE || st->store.value->kind != MLC_EXPR_IF_THEN_ELSE)
    return false;
  const mlc_expr *v = st->store.value;
  return v->sel.t->kind == MLC_EXPR_LOAD && v->sel.f->kind != MLC_EXPR_LOAD;
}

/* The pads block blk reads inlined into it when every read of it carries
 * the lanes (a depthwise convolution, a pool): each padded vector is then
 * loaded where it is used, the bounds test shared by its lanes, instead
 * of the whole padded input being written and read again (2-4x faster
 * for MobileNetV2's depthwise layers). A convolution whose input is a
 * broadcast keeps its pad: one test per broadcast made a 3x3 one 2x
 * slower. A pad that refuses stays. */
static void inline_pads(mlc_sched *s, mlc_rv blk) {
  mlc_error err;
  mlc_rv *got, pads[TUNER_MAX_LOOPS];
  if (!reads_all_lanes(mlc_sched_rv_block(s, blk))) return;
  int n = mlc_sched_get_producers(s, blk, &got, &err), m = 0;
  for (int i = 0; i < n && m < TUNER_MAX_LOOPS; i++)
    if (is_pad(mlc_sched_func(s), mlc_sched_rv_block(s, got[i]))) pads[m++] = got[i];
  for (int i = 0; i < m; i++) mlc_sched_compute_inline(s, pads[i], &err);
}

/* The elementwise blocks after the tile's write-back (its epilogue: a
 * bias, a residual add, an activation) computed per tile under loop
 * `at`, right after the write-back while the tile is in L1, instead of
 * each sweeping the whole output again: each that feeds the next
 * inlined into it, the last (an output of the function) computed at `at`
 * and shaped like the write-back. Nothing to do when the write-back
 * itself writes an output. False when the blocks after it are not such
 * a chain.
 * Not inlined into the write-back: a record of this schedule tuned at
 * one size must replay on the kernel of size vars, where the epilogue
 * under a tile with a guarded tail has a predicate, which
 * reverse_compute_inline refuses. */
static bool tile_epilogue(mlc_sched *s, mlc_rv write_back, mlc_rv at, int n_outer, int64_t lanes, bool sample,
                          mlc_error *err) {
  const mlc_prim_func *f = mlc_sched_func(s);
  for (;;) {
    mlc_rv *cs;
    int n = mlc_sched_get_consumers(s, write_back, &cs, err);
    if (n == 0 && tuner_block_is_output(f, mlc_sched_rv_block(s, write_back))) return true;
    if (n != 1) return mlc_error_set(err, "register tile: the tile's output has %d consumers", n);
    mlc_rv c = cs[0];
    const mlc_block *b = mlc_sched_rv_block(s, c);
    if (!tuner_block_is_spatial(b) || b->init)
      return mlc_error_set(err, "register tile: block \"%s\" after the tile is not elementwise", b->name);
    if (tuner_block_is_output(f, b))
      return mlc_sched_reverse_compute_at(s, c, at, false, -1, err) &&
             shape_write_back(s, c, n_outer, lanes, sample, err);
    if (!mlc_sched_compute_inline(s, c, err)) return false;
  }
}

bool tuner_register_tile(mlc_sched *s, const char *name, const mlc_tuner_opts *o, bool sample,
                         bool parallel, bool fuse, mlc_rv *s0_last, mlc_error *err) {
  mlc_rv blk, cache;
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  if (fuse) {
    inline_pads(s, blk);
    if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  }
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  tuner_site site;
  reg_plan p;
  if (!tuner_find_site(mlc_sched_func(s), b, &site) || !tuner_trivial_binding(b, &site) ||
      !make_plan(b, &site, &p))
    return mlc_error_set(err, "register tile: block \"%s\" is not a reduction into a contiguous "
                              "output dimension", name);
  int n = b->n_iters;
  /* the write-back's vectors as wide as the update's: a lanes' iter
   * shorter than a register (a dense layer's weight blocked by 8) is one
   * vector of its extent; a write-back 40 wide over five such had LLVM
   * keep the accumulators in scalars (10x slower) */
  int64_t vec = tuner_loop_extent(site.loops[p.contig]);
  if (vec < 1 || vec > p.lanes) vec = p.lanes;
  mlc_rv g[TUNER_MAX_LOOPS][N_GROUPS];
  if (!tile_loops(s, blk, &p, sample, o, g, err)) return false;
  int last_s = -1, first_r = -1, n_outer = 0, ord[TUNER_MAX_LOOPS];
  outer_order(mlc_sched_rv_block(s, blk), &p, n, ord);
  for (int i = 0; i < n; i++) {
    if (g[ord[i]][G_S1] >= 0) last_s = ord[i], n_outer += 2;
    if (g[i][G_R0] >= 0 && first_r < 0) first_r = i;
  }
  *s0_last = g[last_s][G_S0];
  if (!mlc_sched_cache_write(s, blk, 0, "global", 0, NULL, &cache, err) ||
      !mlc_sched_reverse_compute_at(s, cache, g[last_s][G_S1], true, -1, err))
    return false;
  for (int i = 0; i < n; i++)
    if (g[i][G_S2] >= 0 && i != p.contig && !mlc_sched_unroll(s, g[i][G_S2], err)) return false;
  if (!shape_write_back(s, cache, n_outer, vec, sample, err) ||
      (fuse && !tile_epilogue(s, cache, g[last_s][G_S1], n_outer, vec, sample, err)))
    return false;
  if (sample) return true;
  mlc_rv init, s0[TUNER_MAX_LOOPS], fused;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (g[ord[i]][G_S0] >= 0) s0[m++] = g[ord[i]][G_S0];
  if (!mlc_sched_vectorize(s, g[p.contig][G_S2], err)) return false;
  /* parallel before the init is split off: a loop over two blocks that
   * both write the cache is not a parallel one */
  if (parallel) {
    if (m == 1) fused = s0[0];
    else if (!mlc_sched_fuse(s, m, s0, true, &fused, err)) return false;
    if (!mlc_sched_parallel(s, fused, err)) return false;
  }
  return mlc_sched_decompose_reduction(s, blk, g[first_r][G_R0], &init, err);
}

bool mlc_tuner_cpu_register_tile(mlc_sched *s, const char *block, bool parallel, mlc_error *err) {
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_rv s0_last;
  return tuner_register_tile(s, block, &o, false, parallel, false, &s0_last, err);
}
