/* The default schedule of attention fused into one kernel (graph/fuse.c's
 * take_attention): scores S = Q K^T, the row-wise blocks after them (a
 * scale, a mask, softmax's max, exps, sum and quotient), then O = P V.
 * Computed one block after another, each sweeps memory: the score matrix
 * is heads x rows x keys, 200 MB for 12 heads at 2,048 tokens. Here every
 * block that depends on S is computed under O's loop over tiles of ROWS
 * query rows, so a thread holds ROWS rows of scores (8 KB at 256 keys) in
 * L1 from the product that makes them to the product that reads them:
 *
 *   parallel for heads, row tiles:
 *     S[ROWS, keys]  register tiles of ROWS x W vectors (keys in lanes)
 *     row-wise blocks over the tile (vector partial max and sum)
 *     O[ROWS, dim]   register tiles of ROWS x W vectors (dim in lanes)
 *
 * Blocks that do not depend on S (copies of K and V) stay whole, before.
 * Kept only when every step succeeds and the function verifies; the
 * caller's rules take the kernel otherwise. */
#include "tuner/tuner_internal.h"

#include <string.h>

/* Query rows a tile: the register tiles' rows (8 x 2 vectors: 16 of
 * AVX-512's 32 registers hold the accumulators). */
enum { ROWS = 8, MAX_VECTORS = 2, MAX_BLOCKS = 64 };

/* What the design space's sketch draws from instead (decisions the
 * search mutates): rows a tile, vectors a row of the register tiles. */
static const int64_t ROW_CHOICES[] = {4, 8, 16};
static const int64_t VECTOR_CHOICES[] = {1, 2};

typedef struct att_opts {
  int64_t lanes; /* the host's fp32 lanes */
  bool partials; /* row reductions in vector partial sums */
  bool sample;   /* tile sizes drawn (the sketch), else fixed (the default) */
} att_opts;

/* A tile size: with o->sample drawn evenly among the n fitting choices,
 * else `fixed` (one of them). */
static bool tile_size(mlc_sched *t, const att_opts *o, int n, const int64_t *fit, int64_t fixed,
                      mlc_operand *out, mlc_error *err) {
  if (!o->sample) {
    *out = MLC_OP_INT(fixed);
    return true;
  }
  double probs[8];
  for (int i = 0; i < n; i++) probs[i] = 1.0 / n;
  mlc_rv v;
  if (!mlc_sched_sample_categorical(t, n, fit, probs, &v, err)) return false;
  *out = MLC_OP_RV(v);
  return true;
}

/* The widest vector of at most `lanes` (halved down to 4) that divides
 * extent e; 0 when none does. A head of 8 dims takes 8-lane vectors. */
static int64_t lanes_for(int64_t e, int64_t lanes) {
  for (int64_t l = lanes; l >= 4; l /= 2)
    if (e >= l && e % l == 0) return l;
  return 0;
}

static bool reads_buffer(const mlc_block *b, const mlc_buffer *buf) {
  for (int k = 0; k < b->n_reads; k++)
    if (b->reads[k].buf == buf) return true;
  return false;
}

/* A block of the kernel at the root, with whether it depends on S. */
typedef struct root_block {
  mlc_rv rv;
  const mlc_block *b;
  bool dep;
} root_block;

/* The root blocks in order; dep marks S and every block reading what a
 * marked block writes. The index of S (the first contraction) in *s_at;
 * the count, or -1 when the kernel is not attention's: its last block a
 * contraction writing an output that depends on S, no other contraction. */
static int root_blocks(mlc_sched *t, root_block *out, int *s_at) {
  mlc_error err;
  mlc_rv root, *kids;
  if (!mlc_sched_get_block(t, "root", NULL, &root, &err)) return -1;
  int n = mlc_sched_get_child_blocks(t, root, &kids, &err), m = 0;
  if (n < 3 || n > MAX_BLOCKS) return -1;
  *s_at = -1;
  for (int i = 0; i < n; i++) {
    const mlc_block *b = mlc_sched_rv_block(t, kids[i]);
    bool dep = false;
    for (int k = 0; k < m && !dep; k++) dep = out[k].dep && reads_buffer(b, out[k].b->writes[0].buf);
    if (tuner_block_is_contraction(b)) {
      if (*s_at >= 0 && i != n - 1) return -1;
      if (*s_at < 0) *s_at = m, dep = true;
    }
    if (b->n_writes != 1) return -1;
    out[m++] = (root_block){kids[i], b, dep};
  }
  const mlc_block *o = out[m - 1].b;
  return *s_at >= 0 && *s_at < m - 1 && out[m - 1].dep && tuner_block_is_contraction(o) &&
                 tuner_block_is_output(mlc_sched_func(t), o)
             ? m
             : -1;
}

/* The iter of b whose binding uses loop l's var; -1 when none or several. */
static int iter_of_loop(const tuner_site *site, const mlc_block *b, const mlc_stmt *l) {
  int found = -1;
  for (int i = 0; i < b->n_iters; i++)
    if (mlc_expr_uses_var(site->realize->realize.values[i], l->loop.var)) {
      if (found >= 0) return -1;
      found = i;
    }
  return found;
}

/* Whether iter i of b indexes the last dim of what b writes. */
static bool writes_along(const mlc_block *b, int i) {
  const mlc_region *w = &b->writes[0];
  return w->buf->ndim > 0 && mlc_expr_uses_var(w->ranges[w->buf->ndim - 1].min, b->iters[i].var);
}

/* The loops of b below depth (its own, under the row tile) with their
 * iters; their count, -1 when b has too many or a loop binds no one iter. */
static int own_loops(mlc_sched *t, mlc_rv b, int depth, mlc_rv *loops, int *iters, int max) {
  mlc_error err;
  mlc_rv *got;
  tuner_site site;
  const mlc_block *blk = mlc_sched_rv_block(t, b);
  int n = mlc_sched_get_loops(t, b, &got, &err);
  if (n - depth > max || n < depth || !tuner_find_site(mlc_sched_func(t), blk, &site)) return -1;
  for (int k = depth; k < n; k++) {
    loops[k - depth] = got[k];
    iters[k - depth] = iter_of_loop(&site, blk, mlc_sched_rv_loop(t, got[k]));
    if (iters[k - depth] < 0) return -1;
  }
  return n - depth;
}

/* Contraction b under the row tile (depth loops above it) as a register
 * tile: its own loops must be one of rows, one of the output's last dim
 * (lanes) and one reduction. The lanes split into (outer, W vectors,
 * lanes); order outer, reduction, rows, W, lanes; the accumulator a
 * cache written back under the outer loop. *red: the reduction loop,
 * for decompose_reduction once the nest is parallel. */
static bool tile_contraction(mlc_sched *t, mlc_rv b, int depth, const att_opts *o, mlc_rv *red,
                             mlc_error *err) {
  mlc_rv loops[3], parts[3], cache, *wb;
  int iters[3];
  if (own_loops(t, b, depth, loops, iters, 3) != 3)
    return mlc_error_set(err, "attention: block has not one row, lane and reduce loop each");
  const mlc_block *blk = mlc_sched_rv_block(t, b);
  int row = -1, lane = -1, r = -1;
  for (int k = 0; k < 3; k++) {
    if (blk->iters[iters[k]].kind == MLC_ITER_REDUCE) r = k;
    else if (writes_along(blk, iters[k])) lane = k;
    else row = k;
  }
  if (row < 0 || lane < 0 || r < 0) return mlc_error_set(err, "attention: no row, lane or reduce loop");
  int64_t e = tuner_loop_extent(mlc_sched_rv_loop(t, loops[lane])), lanes = lanes_for(e, o->lanes);
  if (!lanes) return mlc_error_set(err, "attention: no vector divides the row");
  int64_t fit[MLC_COUNTOF(VECTOR_CHOICES)];
  int nf = 0;
  for (int i = 0; i < MLC_COUNTOF(VECTOR_CHOICES); i++)
    if (e % (VECTOR_CHOICES[i] * lanes) == 0) fit[nf++] = VECTOR_CHOICES[i];
  mlc_operand f[3] = {MLC_OP_NONE, MLC_OP_NONE, MLC_OP_INT(lanes)};
  if (!tile_size(t, o, nf, fit, e % (MAX_VECTORS * lanes) == 0 ? MAX_VECTORS : 1, &f[1], err) ||
      !mlc_sched_split(t, loops[lane], 3, f, true, parts, err))
    return false;
  mlc_rv order[5] = {parts[0], loops[r], loops[row], parts[1], parts[2]};
  *red = loops[r];
  if (!mlc_sched_reorder(t, 5, order, err) ||
      !mlc_sched_cache_write(t, b, 0, "global", 0, NULL, &cache, err) ||
      !mlc_sched_reverse_compute_at(t, cache, parts[0], true, -1, err) ||
      !mlc_sched_unroll(t, loops[row], err) || !mlc_sched_unroll(t, parts[1], err) ||
      !mlc_sched_vectorize(t, parts[2], err))
    return false;
  /* the write-back below the outer loop: rows unrolled, each row's
   * vectors stored */
  int n = mlc_sched_get_loops(t, cache, &wb, err);
  if (n < depth + 3 || n > depth + 8) return mlc_error_set(err, "attention: write-back nest of %d loops", n);
  mlc_rv outer[8];
  int m = n - 2 - depth;
  memcpy(outer, wb + depth + 1, sizeof *outer * (size_t)m);
  if (!mlc_sched_split(t, wb[n - 1], 2, (mlc_operand[2]){MLC_OP_NONE, MLC_OP_INT(lanes)}, true, parts, err))
    return false;
  outer[m++] = parts[0];
  for (int k = 0; k < m; k++)
    if (!mlc_sched_unroll(t, outer[k], err)) return false;
  return mlc_sched_vectorize(t, parts[1], err);
}

/* The first read of b of a buffer it does not write (a reduction reads
 * its own accumulator too), or NULL. */
static const mlc_region *input_read(const mlc_block *b) {
  for (int k = 0; k < b->n_reads; k++)
    if (b->reads[k].buf != b->writes[0].buf && b->reads[k].buf->ndim > 0) return &b->reads[k];
  return NULL;
}

/* u, the copy an optional step ran on, replaces *t when the step
 * succeeded (handles stay valid across a copy); else it is dropped and
 * *t stays as it was. Returns ok. */
static bool keep_if(mlc_sched **t, mlc_sched *u, bool ok) {
  mlc_sched_free(ok ? *t : u);
  if (ok) *t = u;
  return ok;
}

/* A row reduction at the root (softmax's max and sum) rfactor'd by a
 * vector of lanes: its innermost loop, reducing along the last dim of
 * what it reads, split by lanes. *rf: the partial block. False (*t
 * unchanged) when it is not such a reduction. */
static bool rfactor_lanes(mlc_sched **t, mlc_rv b, int64_t lanes, mlc_rv *rf) {
  mlc_error err;
  mlc_rv *got, parts[2];
  tuner_site site;
  const mlc_block *blk = mlc_sched_rv_block(*t, b);
  int n = mlc_sched_get_loops(*t, b, &got, &err);
  const mlc_region *rd = input_read(blk);
  if (n < 1 || !rd || !tuner_find_site(mlc_sched_func(*t), blk, &site)) return false;
  mlc_rv inner = got[n - 1];
  int i = iter_of_loop(&site, blk, mlc_sched_rv_loop(*t, inner));
  int64_t e = tuner_loop_extent(mlc_sched_rv_loop(*t, inner));
  lanes = lanes_for(e, lanes);
  if (i < 0 || blk->iters[i].kind != MLC_ITER_REDUCE || !lanes || e < 2 * lanes ||
      !mlc_expr_uses_var(rd->ranges[rd->buf->ndim - 1].min, blk->iters[i].var))
    return false;
  mlc_sched *u = mlc_sched_copy(*t);
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(lanes)};
  return keep_if(t, u, mlc_sched_split(u, inner, 2, f, true, parts, &err) &&
                           mlc_sched_rfactor(u, parts[1], -1, rf, &err));
}

/* The row-wise block b under the tile: the own loop along the last dim
 * of its input (a row's elements, or an rfactor's lanes) moved
 * innermost, split by lanes and vectorized. *t left as it is when that
 * loop is not there, not a multiple of lanes, or a step refuses. */
static void vectorize_row(mlc_sched **t, mlc_rv b, int depth, int64_t lanes) {
  mlc_error err;
  mlc_rv loops[8], order[8], parts[2];
  int iters[8], n = own_loops(*t, b, depth, loops, iters, 8);
  const mlc_block *blk = mlc_sched_rv_block(*t, b);
  const mlc_region *rd = input_read(blk);
  if (n < 1 || !rd) return;
  int along = -1;
  for (int k = 0; k < n; k++)
    if (blk->iters[iters[k]].kind == MLC_ITER_SPATIAL &&
        mlc_expr_uses_var(rd->ranges[rd->buf->ndim - 1].min, blk->iters[iters[k]].var))
      along = k;
  int64_t e = along >= 0 ? tuner_loop_extent(mlc_sched_rv_loop(*t, loops[along])) : 0;
  if (!(lanes = lanes_for(e, lanes))) return;
  int m = 0;
  for (int k = 0; k < n; k++)
    if (k != along) order[m++] = loops[k];
  order[m++] = loops[along];
  mlc_sched *u = mlc_sched_copy(*t);
  keep_if(t, u,
          (m < 2 || mlc_sched_reorder(u, m, order, &err)) &&
              (e == lanes || mlc_sched_split(u, loops[along], 2, (mlc_operand[2]){MLC_OP_NONE, MLC_OP_INT(lanes)},
                                             true, parts, &err)) &&
              mlc_sched_vectorize(u, e == lanes ? loops[along] : parts[1], &err));
}

/* O's row loop: the spatial iter of its input (the probabilities) that
 * its other reads do not use and that is not the output's last dim, as
 * O's loop; its index in *at. */
static bool row_loop(mlc_sched *t, mlc_rv o, mlc_rv *loop, int *at) {
  mlc_rv loops[16];
  int iters[16], n = own_loops(t, o, 0, loops, iters, 16);
  const mlc_block *b = mlc_sched_rv_block(t, o);
  const mlc_region *in = input_read(b);
  for (int k = 0; k < n; k++) {
    const mlc_var *v = b->iters[iters[k]].var;
    if (b->iters[iters[k]].kind != MLC_ITER_SPATIAL || writes_along(b, iters[k])) continue;
    bool probs = false, other = false;
    for (int r = 0; r < b->n_reads; r++)
      for (int d = 0; d < b->reads[r].buf->ndim && b->reads[r].buf != b->writes[0].buf; d++)
        if (mlc_expr_uses_var(b->reads[r].ranges[d].min, v)) *(&b->reads[r] == in ? &probs : &other) = true;
    if (probs && !other) {
      *loop = loops[k], *at = k;
      return true;
    }
  }
  return false;
}

static bool attention_rows_on(mlc_sched **tp, const att_opts *o, mlc_rv *out, mlc_error *err) {
  mlc_sched *t = *tp;
  root_block rb[MAX_BLOCKS];
  int s_at, n = root_blocks(t, rb, &s_at);
  if (n < 0) return mlc_error_set(err, "attention: not scores, row-wise blocks, weighted sum");
  /* copies inlined: the reshapes between S and O, and an input's copy
   * that keeps its rows contiguous (V's heads gathered from [tokens,
   * heads, dim]: O reads V in place); K's transpose stays, made once */
  for (int k = 0; k < n - 1; k++) {
    const mlc_block *b = mlc_sched_rv_block(t, rb[k].rv);
    const mlc_stmt *st = b->body;
    int w, r;
    bool copy = k != s_at && !b->init && st && st->kind == MLC_STMT_STORE && st->store.value->kind == MLC_EXPR_LOAD;
    if (copy && (rb[k].dep || !tuner_transposing_copy(b, &w, &r))) mlc_sched_compute_inline(t, rb[k].rv, err);
  }
  mlc_rv rfs[MAX_BLOCKS];
  int n_rf = 0;
  for (int k = s_at + 1; o->partials && k < n - 1; k++)
    if (rb[k].dep && mlc_sched_rv_alive(*tp, rb[k].rv) && mlc_sched_rv_block(*tp, rb[k].rv)->init &&
        rfactor_lanes(tp, rb[k].rv, o->lanes, &rfs[n_rf]))
      n_rf++;
  t = *tp;
  /* O's rows in tiles; everything S feeds computed per tile */
  mlc_rv ws = rb[n - 1].rv, row, tile[2];
  *out = ws;
  int at;
  if (!row_loop(t, ws, &row, &at)) return mlc_error_set(err, "attention: no row loop in the product");
  int64_t rows = tuner_loop_extent(mlc_sched_rv_loop(t, row)), fit[MLC_COUNTOF(ROW_CHOICES)];
  int nf = 0;
  for (int i = 0; i < MLC_COUNTOF(ROW_CHOICES); i++)
    if (rows >= 2 * ROW_CHOICES[i]) fit[nf++] = ROW_CHOICES[i];
  if (rows < 2 * ROWS) return mlc_error_set(err, "attention: fewer than two tiles of rows");
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_NONE};
  if (!tile_size(t, o, nf, fit, ROWS, &f[1], err) || !mlc_sched_split(t, row, 2, f, true, tile, err))
    return false;
  mlc_rv root;
  if (!mlc_sched_get_block(t, "root", NULL, &root, err)) return false;
  mlc_rv kids[MAX_BLOCKS], *got;
  int nk = mlc_sched_get_child_blocks(t, root, &got, err);
  if (nk > MAX_BLOCKS) return mlc_error_set(err, "attention: too many blocks");
  memcpy(kids, got, sizeof *kids * (size_t)nk);
  /* a root block that depends on S: S itself, what S's result flows through */
  for (int k = nk - 1; k >= 0; k--) {
    const mlc_block *b = mlc_sched_rv_block(t, kids[k]);
    bool dep_on_s = false;
    for (int j = 0; j < n && !dep_on_s; j++)
      dep_on_s = rb[j].dep && mlc_sched_rv_alive(t, rb[j].rv) && mlc_sched_rv_block(t, rb[j].rv) == b;
    for (int j = 0; j < n_rf && !dep_on_s; j++) dep_on_s = mlc_sched_rv_block(t, rfs[j]) == b;
    if (b == mlc_sched_rv_block(t, ws) || !dep_on_s) continue;
    if (!mlc_sched_compute_at(t, kids[k], tile[0], false, -1, err)) return false;
  }
  int depth = at + 1;
  mlc_rv s_red, o_red;
  if (!tile_contraction(t, rb[s_at].rv, depth, o, &s_red, err) || !tile_contraction(t, ws, depth, o, &o_red, err))
    return false;
  for (int k = s_at + 1; k < n - 1; k++)
    if (rb[k].dep && mlc_sched_rv_alive(*tp, rb[k].rv)) vectorize_row(tp, rb[k].rv, depth, o->lanes);
  for (int j = 0; j < n_rf; j++) vectorize_row(tp, rfs[j], depth, o->lanes);
  t = *tp;
  /* the heads and row tiles shared among the threads */
  mlc_rv *ol, par[16], fused, init;
  int no = mlc_sched_get_loops(t, ws, &ol, err), np = 0;
  for (int k = 0; k < depth && k < no && np < 16; k++)
    if (tuner_loop_extent(mlc_sched_rv_loop(t, ol[k])) != 1) par[np++] = ol[k];
  if (np > 1 && !mlc_sched_fuse(t, np, par, true, &fused, err)) return false;
  return np >= 1 && mlc_sched_parallel(t, np > 1 ? fused : par[0], err) &&
         mlc_sched_decompose_reduction(t, rb[s_at].rv, s_red, &init, err) &&
         mlc_sched_decompose_reduction(t, ws, o_red, &init, err) &&
         mlc_verify_func(mlc_sched_func(t), err);
}

bool tuner_attention_rows(mlc_sched **s, bool partials, bool sample, mlc_rv *out) {
  mlc_error err;
  mlc_sched *t = mlc_sched_copy(*s);
  att_opts o = {tuner_host_lanes(), partials, sample};
  if (!attention_rows_on(&t, &o, out, &err)) {
    mlc_sched_free(t);
    return false;
  }
  mlc_sched_free(*s);
  *s = t;
  return true;
}
