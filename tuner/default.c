/* The CPU default schedule: what a kernel without a tuning record runs,
 * and the first candidate of every tuning run (tune.c), so that no record
 * slower than it is ever the best. Fixed rules, no sampled decisions,
 * applied through schedule/ primitives whatever a primitive refuses is left
 * out; the trace replays to the same function. In order: blocks that only
 * copy (a transpose fused in front of a matmul) inlined into a consumer
 * that is a matrix-vector product; then, for a kernel of row-wise blocks
 * (no contraction, no layout change), every block computed a row at a
 * time under one parallel loop (rows_together); else per block a row
 * rfactor for a matrix-vector product whose reads all walk the reduction
 * along their last dim, else the register tile of GEMM-like blocks (a
 * depthwise convolution's or a pool's pads inlined first, the elementwise
 * blocks after it computed per tile), else a row rfactor, else, for a copy
 * that transposes the last dimension, 16 x 16 tiles, else the inner loop
 * vectorized and the outer one parallel.
 */
#include "tuner/tuner_internal.h"

#include <string.h>

/* Loop nests with fewer iterations run serially: starting threads costs
 * more than such a nest takes. */
#define MIN_PARALLEL_WORK (1 << 18)


static int64_t loop_extent(const mlc_sched *s, mlc_rv l) {
  const mlc_stmt *st = mlc_sched_rv_loop(s, l);
  int64_t e;
  return st && mlc_expr_is_const_int(st->loop.extent, &e) ? e : -1;
}

/* The extent of loop l, or, for a loop of symbolic extent, its value at
 * the sizes' bounds (what threads and vector splits go by); -1 when
 * neither is known. */
static int64_t loop_extent_at_bound(const mlc_sched *s, mlc_rv l) {
  const mlc_stmt *st = mlc_sched_rv_loop(s, l);
  const mlc_prim_func *f = mlc_sched_func(s);
  int64_t e = loop_extent(s, l), his[MLC_MAX_SIZES];
  if (e >= 0 || !st || f->n_sizes == 0 || f->n_sizes > MLC_MAX_SIZES) return e;
  for (int k = 0; k < f->n_sizes; k++) his[k] = f->sizes[k].hi;
  return mlc_size_eval(f, st->loop.extent, his, &e) ? e : -1;
}

/* The realize statement of block b in s (NULL if absent). */
static const mlc_stmt *find_realize(const mlc_stmt *s, const mlc_block *b) {
  if (!s) return NULL;
  switch (s->kind) {
  case MLC_STMT_FOR: return find_realize(s->loop.body, b);
  case MLC_STMT_BLOCK_REALIZE:
    if (s->realize.block == b) return s;
    return find_realize(s->realize.block->body, b);
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) {
      const mlc_stmt *r = find_realize(s->seq.stmts[i], b);
      if (r) return r;
    }
    return NULL;
  case MLC_STMT_IF: {
    const mlc_stmt *r = find_realize(s->if_.then_s, b);
    return r ? r : find_realize(s->if_.else_s, b);
  }
  case MLC_STMT_ALLOCATE: return find_realize(s->alloc.body, b);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return NULL;
  }
  mlc_unreachable();
}

/* Whether a reduce iter var of block b is bound to an expression of loop l. */
static bool loop_is_reduce(const mlc_sched *s, mlc_rv b, mlc_rv l) {
  const mlc_block *blk = mlc_sched_rv_block(s, b);
  const mlc_stmt *r = find_realize(mlc_sched_func(s)->body, blk);
  const mlc_stmt *st = mlc_sched_rv_loop(s, l);
  if (!r || !st) return true;
  for (int i = 0; i < blk->n_iters; i++)
    if (blk->iters[i].kind == MLC_ITER_REDUCE && mlc_expr_uses_var(r->realize.values[i], st->loop.var))
      return true;
  return false;
}

/* Loops longer than 64 (the longest vectorized loop codegen takes) are
 * split by 16, 8 or 4 and *inner becomes the short inner part; false when
 * no such factor divides the extent. A loop of symbolic extent is split
 * by 16 whatever its extent (a vectorized loop needs a constant one). */
static bool split_long(mlc_sched *t, mlc_rv *inner, mlc_error *err) {
  int64_t e = loop_extent(t, *inner);
  if (e >= 0 && e <= 64) return true;
  /* A symbolic extent: 16 a vector, the tail predicated. */
  int64_t f = e < 0 ? 16 : e % 16 == 0 ? 16 : e % 8 == 0 ? 8 : e % 4 == 0 ? 4 : 0;
  mlc_rv parts[2];
  mlc_operand fs[2] = {MLC_OP_NONE, MLC_OP_INT(f)};
  if (!f || !mlc_sched_split(t, *inner, 2, fs, true, parts, err)) return false;
  *inner = parts[1];
  return true;
}

/* A reduction whose innermost loop reduces (matmul's k, conv's rx): move
 * the innermost spatial loop (or its last 16/8/4 iterations) below the
 * reduction loops, so that it can be vectorized; each output element still
 * sums in the same order. With no spatial loop at or below `from` (a row
 * reduction's write-back from its partial sums) the reduce loop stays
 * innermost, to be vectorized as a reduction over lanes. */
static bool spatial_inner(mlc_sched *t, mlc_rv b, int from, mlc_error *err) {
  mlc_rv *got, loops[64];
  int n = mlc_sched_get_loops(t, b, &got, err);
  if (n < 2 || n > 64 || !loop_is_reduce(t, b, got[n - 1])) return true;
  memcpy(loops, got, sizeof *loops * (size_t)n);
  int sp = n - 1;
  while (sp >= from && loop_is_reduce(t, b, loops[sp])) sp--;
  if (sp < from) return true;
  mlc_rv inner = loops[sp];
  if (!split_long(t, &inner, err)) return false;
  mlc_rv order[65];
  int k = 0;
  for (int i = sp + 1; i < n; i++) order[k++] = loops[i];
  order[k++] = inner;
  return mlc_sched_reorder(t, k, order, err);
}

/* Vectorize the innermost loop of block b (split by 16, 8 or 4 first when
 * longer than 64), moving a spatial loop at or below depth `from` there
 * when a reduction loop is innermost; on a copy, kept only when every
 * step succeeds. Returns the (possibly new) state. */
static mlc_sched *vectorize_inner(mlc_sched *s, mlc_rv b, int from) {
  mlc_error err;
  mlc_sched *t = mlc_sched_copy(s);
  mlc_rv *loops;
  bool ok = spatial_inner(t, b, from, &err);
  int n = ok ? mlc_sched_get_loops(t, b, &loops, &err) : -1;
  ok = n > from;
  if (ok) {
    mlc_rv inner = loops[n - 1];
    ok = loop_extent_at_bound(t, inner) > 1 && split_long(t, &inner, &err) &&
         mlc_sched_vectorize(t, inner, &err);
  }
  if (!ok) {
    mlc_sched_free(t);
    return s;
  }
  mlc_sched_free(s);
  return t;
}

/* Iterations of the loop nest around block b. */
static int64_t nest_work(mlc_sched *s, mlc_rv b) {
  mlc_error err;
  mlc_rv *loops;
  int n = mlc_sched_get_loops(s, b, &loops, &err);
  int64_t w = 1;
  for (int i = 0; i < n; i++) {
    int64_t e = loop_extent_at_bound(s, loops[i]);
    w *= e > 0 ? e : 1;
  }
  return w;
}

static void parallel_outer(mlc_sched *s, mlc_rv b) {
  mlc_error err;
  mlc_rv *loops;
  if (nest_work(s, b) < MIN_PARALLEL_WORK) return;
  int n = mlc_sched_get_loops(s, b, &loops, &err);
  for (int i = 0; i < n; i++) {
    const mlc_stmt *st = mlc_sched_rv_loop(s, loops[i]);
    if (st && st->loop.kind == MLC_FOR_VECTORIZED) return;
    if (loop_extent_at_bound(s, loops[i]) > 1) {
      mlc_sched_parallel(s, loops[i], &err); /* a reduction loop refuses: fine */
      return;
    }
  }
}

/* Whether the innermost loop of block b drives a reduce iter that walks
 * the last dim of something b reads (a row reduction: softmax's max and
 * sum, a norm's mean, a dense layer over an unpacked weight). */
static bool reduces_contiguous(const mlc_sched *t, mlc_rv b, mlc_rv inner) {
  const mlc_block *blk = mlc_sched_rv_block(t, b);
  const mlc_stmt *r = find_realize(mlc_sched_func(t)->body, blk);
  const mlc_stmt *st = mlc_sched_rv_loop(t, inner);
  if (!r || !st) return false;
  for (int i = 0; i < blk->n_iters; i++) {
    if (blk->iters[i].kind != MLC_ITER_REDUCE || !mlc_expr_uses_var(r->realize.values[i], st->loop.var))
      continue;
    for (int k = 0; k < blk->n_reads; k++) {
      const mlc_region *rd = &blk->reads[k];
      if (rd->buf->ndim > 0 && mlc_expr_uses_var(rd->ranges[rd->buf->ndim - 1].min, blk->iters[i].var))
        return true;
    }
  }
  return false;
}

/* The loops around block b reordered so that its reduction loops are the
 * innermost (a matmul lowered with its reduction outside the columns). */
static bool reductions_inner(mlc_sched *t, mlc_rv b, mlc_error *err) {
  mlc_rv *got, order[64];
  int n = mlc_sched_get_loops(t, b, &got, err), k = 0, first = -1;
  if (n < 1 || n > 64) return false;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++)
      if (loop_is_reduce(t, b, got[i]) == (pass == 1)) {
        if (first < 0 && loop_is_reduce(t, b, got[i])) first = i;
        order[k++] = got[i];
      }
  if (first < 0) return false;
  /* reorder the loops from the first reduction down */
  int skip = 0;
  while (skip < n && order[skip] == got[skip]) skip++;
  return skip == n || mlc_sched_reorder(t, n - skip, order + skip, err);
}

/* A row reduction (reduces_contiguous) over at least two vectors: its
 * innermost loop split by a vector of 16 (or 8) lanes, or by `wide` lanes
 * when the row holds four such (shorter rows lose more to the second
 * write-back than they gain: softmax over 128 columns), and rfactor'd, so
 * that each row sums into a vector of partial results (the rf block,
 * *rf), then one short write-back per row. False, with t as it may have
 * been left half done, when a step refuses. */
static bool rfactor_row(mlc_sched *t, mlc_rv b, bool reduce_inner, int64_t wide, mlc_rv *rf) {
  mlc_error err;
  mlc_rv *loops, parts[2];
  if (reduce_inner && !reductions_inner(t, b, &err)) return false;
  int n = mlc_sched_get_loops(t, b, &loops, &err);
  bool ok = n > 0 && loop_is_reduce(t, b, loops[n - 1]) && reduces_contiguous(t, b, loops[n - 1]);
  int64_t e = ok ? loop_extent(t, loops[n - 1]) : -1;
  int64_t f = wide > 16 && e % wide == 0 && e >= 4 * wide ? wide : e % 16 == 0 ? 16 : e % 8 == 0 ? 8 : 0;
  mlc_operand fs[2] = {MLC_OP_NONE, MLC_OP_INT(f)};
  return ok && f > 0 && e >= 2 * f && mlc_sched_split(t, loops[n - 1], 2, fs, true, parts, &err) &&
         mlc_sched_rfactor(t, parts[1], -1, rf, &err);
}

/* rfactor_row with the rf block's contiguous loads vectorized, instead of
 * vectorizing across rows with strided loads; on a copy, kept only when
 * every step succeeds; true when it did. */
static bool row_rfactor(mlc_sched **s, mlc_rv b, bool reduce_inner) {
  mlc_error err;
  mlc_sched *t = mlc_sched_copy(*s);
  mlc_rv *loops, rf;
  bool ok = rfactor_row(t, b, reduce_inner, 16, &rf);
  if (ok) {
    int n = mlc_sched_get_loops(t, rf, &loops, &err);
    ok = n > 0 && mlc_sched_vectorize(t, loops[n - 1], &err) && mlc_verify_func(mlc_sched_func(t), &err);
  }
  if (!ok) {
    mlc_sched_free(t);
    return false;
  }
  parallel_outer(t, rf);
  parallel_outer(t, b);
  mlc_sched_free(*s);
  *s = t;
  return true;
}

/* Whether read k of blk indexes iter i. */
static bool read_uses(const mlc_block *blk, int k, int i) {
  const mlc_region *rd = &blk->reads[k];
  for (int d = 0; d < rd->buf->ndim; d++)
    if (mlc_expr_uses_var(rd->ranges[d].min, blk->iters[i].var)) return true;
  return false;
}

/* Whether some read of blk is one row: the spatial iters it alone indexes
 * all have extent 1 (a matrix-vector product's vector). */
static bool reads_one_row(const mlc_block *blk) {
  for (int k = 0; k < blk->n_reads; k++) {
    bool row = true;
    for (int i = 0; i < blk->n_iters && row; i++) {
      if (blk->iters[i].kind != MLC_ITER_SPATIAL || !read_uses(blk, k, i)) continue;
      bool alone = true;
      for (int o = 0; o < blk->n_reads && alone; o++) alone = o == k || !read_uses(blk, o, i);
      int64_t e;
      if (alone) row = mlc_expr_is_const_int(blk->iters[i].dom.extent, &e) && e == 1;
    }
    if (row) return true;
  }
  return false;
}

/* Whether block b is a matrix-vector product (reads_one_row) whose reads
 * all walk the reduction along their last dim: a decode step's attention
 * scores over its cache read in place ([n, h, k]), or a dense layer of one
 * row over an unpacked weight. A register tile would vectorize across the
 * matrix's rows with strided loads; a row rfactor reads each row along. */
static bool reads_along_reduction(const mlc_sched *t, mlc_rv b) {
  const mlc_block *blk = mlc_sched_rv_block(t, b);
  if (!blk->init || blk->n_reads < 2 || !reads_one_row(blk)) return false;
  for (int k = 0; k < blk->n_reads; k++) {
    const mlc_region *rd = &blk->reads[k];
    bool reduce_last = false;
    for (int i = 0; rd->buf->ndim > 0 && i < blk->n_iters; i++)
      if (blk->iters[i].kind == MLC_ITER_REDUCE &&
          mlc_expr_uses_var(rd->ranges[rd->buf->ndim - 1].min, blk->iters[i].var))
        reduce_last = true;
    if (!reduce_last) return false;
  }
  return true;
}

/* A block that only copies (its one store's value a load): a transpose or
 * reshape a fused kernel computes in front of a matmul. */
static bool is_copy(const mlc_prim_func *f, const mlc_block *b) {
  const mlc_stmt *st = b->body;
  return tuner_block_is_spatial(b) && !b->init && b->n_writes == 1 && !tuner_block_is_output(f, b) &&
         st && st->kind == MLC_STMT_STORE && st->store.value->kind == MLC_EXPR_LOAD;
}

/* Whether some consumer of block b is a matrix-vector product. */
static bool feeds_one_row(mlc_sched *s, mlc_rv b) {
  mlc_error err;
  mlc_rv *cs;
  int n = mlc_sched_get_consumers(s, b, &cs, &err);
  for (int i = 0; i < n; i++) {
    const mlc_block *c = mlc_sched_rv_block(s, cs[i]);
    if (c->init && reads_one_row(c)) return true;
  }
  return false;
}

/* The top-level blocks of s into *out (mlc_xmalloc'd); their count, -1
 * when s has no root block. */
static int root_blocks(mlc_sched *s, mlc_rv **out) {
  mlc_error err;
  mlc_rv root, *kids;
  int n = mlc_sched_get_block(s, "root", NULL, &root, &err) ? mlc_sched_get_child_blocks(s, root, &kids, &err)
                                                             : -1;
  *out = mlc_xmalloc(sizeof **out * (size_t)(n > 0 ? n : 1));
  if (n > 0) memcpy(*out, kids, sizeof **out * (size_t)n);
  return n;
}

/* Copy blocks that feed a matrix-vector product inlined into it, which
 * then reads the source in place (a decode step's cache: each row read
 * once); a matrix-matrix product keeps its contiguous copy, which its
 * register tile needs. One that refuses stays. */
static void inline_copies(mlc_sched *s) {
  mlc_error err;
  mlc_rv *blocks;
  int n = root_blocks(s, &blocks);
  for (int i = 0; i < n; i++)
    if (is_copy(mlc_sched_func(s), mlc_sched_rv_block(s, blocks[i])) && feeds_one_row(s, blocks[i]))
      mlc_sched_compute_inline(s, blocks[i], &err);
  mlc_free(blocks);
}

/* Whether blk reads 8-bit integers or bfloat16: what the CPU tensor
 * intrinsics take (float32 blocks keep the register tile without trying
 * them). */
static bool reads_narrow(mlc_sched *s, mlc_rv blk) {
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  for (int i = 0; i < b->n_reads; i++) {
    mlc_dtype t = b->reads[i].buf->dtype;
    if (t == MLC_UINT8 || t == MLC_INT8 || t == MLC_BFLOAT16) return true;
  }
  return false;
}

/* A block of 8-bit or bfloat16 products tiled around the CPU's tensor
 * intrinsic (AMX, VNNI, AVX-512 BF16) where one is registered and o
 * allows it: a 1024^3 int8 dense ran its register tile in 337 ms, its
 * VNNI tile tuned in 2.8 ms. */
static bool intrin_tile(mlc_sched **s, mlc_rv b, const mlc_tuner_opts *o) {
  return reads_narrow(*s, b) && tuner_intrin_tile_default(s, mlc_sched_rv_block(*s, b)->name, o);
}

static bool at_root(mlc_sched *s, mlc_rv b);

static bool has_reduce_iter(const mlc_block *b) {
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind == MLC_ITER_REDUCE) return true;
  return false;
}

/* After a tensorized block, its elementwise epilogue (a quantized layer's
 * zero point, scale, bias, requantization) inlined into the last block,
 * which then reads the accumulators once: as separate sweeps over the
 * output the epilogue took 30 times the AMX call's time. A block that
 * refuses (an output, a reduction) stays. */
static void inline_epilogue(mlc_sched *s, int n, const mlc_rv *blocks, int after) {
  mlc_error err;
  for (int i = after + 1; i < n; i++) {
    const mlc_block *b = mlc_sched_rv_block(s, blocks[i]);
    if (b && !has_reduce_iter(b) && at_root(s, blocks[i])) mlc_sched_compute_inline(s, blocks[i], &err);
  }
}

/* A GEMM-like block (matmul, the blocked convolution) becomes the tuner's
 * register-blocked micro-kernel, on a copy kept only when it applies:
 * with fuse, first with its pads inlined and its epilogue computed per
 * tile (tuner_register_tile), then without; true when it applied. */
static bool register_tile(mlc_sched **s, mlc_rv b, bool fuse) {
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  const char *name = mlc_sched_rv_block(*s, b)->name;
  bool parallel = nest_work(*s, b) >= MIN_PARALLEL_WORK;
  for (int f = fuse; f >= 0; f--) {
    mlc_error err;
    mlc_rv s0_last;
    mlc_sched *t = mlc_sched_copy(*s);
    if (tuner_register_tile(t, name, &o, false, parallel, f, &s0_last, &err) &&
        mlc_verify_func(mlc_sched_func(t), &err)) {
      mlc_sched_free(*s);
      *s = t;
      return true;
    }
    mlc_sched_free(t);
  }
  return false;
}

/* The iter of blk that index e (a write's or a load's last index) is, or
 * -1 when e is not one iter var. */
static int iter_of(const mlc_block *blk, const mlc_expr *e) {
  for (int i = 0; e->kind == MLC_EXPR_VAR && i < blk->n_iters; i++)
    if (blk->iters[i].var == e->var) return i;
  return -1;
}

/* Tiles of a transposing copy, per side. */
#define TRANSPOSE_TILE 16

bool tuner_transposing_copy(const mlc_block *blk, int *w, int *r) {
  const mlc_stmt *st = blk->body;
  if (!tuner_block_is_spatial(blk) || blk->init || blk->n_writes != 1 || !st || st->kind != MLC_STMT_STORE ||
      st->store.value->kind != MLC_EXPR_LOAD || st->store.buf->ndim < 2 || st->store.value->load.buf->ndim < 1)
    return false;
  const mlc_expr *ld = st->store.value;
  *w = iter_of(blk, st->store.indices[st->store.buf->ndim - 1]);
  *r = iter_of(blk, ld->load.indices[ld->load.buf->ndim - 1]);
  return *w >= 0 && *r >= 0 && *w != *r;
}

bool tuner_transpose_tiles(mlc_sched *t, mlc_rv b, mlc_error *err) {
  const mlc_block *blk = mlc_sched_rv_block(t, b);
  tuner_site site;
  int w, r;
  if (!blk || !tuner_transposing_copy(blk, &w, &r) || !tuner_find_site(mlc_sched_func(t), blk, &site) ||
      !tuner_trivial_binding(blk, &site) || site.n_loops != blk->n_iters ||
      tuner_loop_extent(site.loops[w]) % TRANSPOSE_TILE != 0 || tuner_loop_extent(site.loops[r]) % TRANSPOSE_TILE != 0)
    return mlc_error_set(err, "transpose tiles: block \"%s\" is no transposing copy of %d x %d tiles",
                         blk ? blk->name : "?", TRANSPOSE_TILE, TRANSPOSE_TILE);
  mlc_rv *got, loops[TUNER_MAX_LOOPS], ws[2], rs[2], order[TUNER_MAX_LOOPS + 2];
  int n = mlc_sched_get_loops(t, b, &got, err), m = 0;
  if (n != blk->n_iters) return false;
  memcpy(loops, got, sizeof *loops * (size_t)n);
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(TRANSPOSE_TILE)};
  if (!mlc_sched_split(t, loops[w], 2, f, true, ws, err) || !mlc_sched_split(t, loops[r], 2, f, true, rs, err))
    return false;
  for (int i = 0; i < n; i++)
    if (i != w && i != r) order[m++] = loops[i];
  order[m++] = rs[0], order[m++] = ws[0], order[m++] = ws[1], order[m++] = rs[1];
  return mlc_sched_reorder(t, m, order, err);
}

/* tuner_transpose_tiles (a transposing copy vectorized along its write
 * gathered each vector from 16 rows: BERT-base's attention scores kernel
 * ran 310 us, 211 with tiles), the outer loop parallel; on a copy, kept
 * only when every step succeeds; true when it did. */
static bool transpose_tiles(mlc_sched **s, mlc_rv b) {
  mlc_error err;
  mlc_sched *t = mlc_sched_copy(*s);
  if (!tuner_transpose_tiles(t, b, &err) || !mlc_verify_func(mlc_sched_func(t), &err)) {
    mlc_sched_free(t);
    return false;
  }
  parallel_outer(t, b);
  mlc_sched_free(*s);
  *s = t;
  return true;
}

/* Whether block b is still one of s's top-level blocks: not inlined, nor
 * computed under another block's loops (a register tile's epilogue). */
static bool at_root(mlc_sched *s, mlc_rv b) {
  const mlc_block *blk = mlc_sched_rv_block(s, b);
  mlc_rv *kids;
  int n = root_blocks(s, &kids);
  bool found = false;
  for (int k = 0; k < n && !found; k++) found = mlc_sched_rv_block(s, kids[k]) == blk;
  mlc_free(kids);
  return blk && found;
}

/* Iterations of all the blocks' loop nests. */
static int64_t total_work(mlc_sched *s, int n, const mlc_rv *blocks) {
  int64_t w = 0;
  for (int i = 0; i < n; i++) w += nest_work(s, blocks[i]);
  return w;
}

/* Every block but the last computed under the last one's loop at depth
 * `depth` (consumers first), on a copy; NULL when one refuses. */
static mlc_sched *blocks_at(mlc_sched *s, int n, const mlc_rv *blocks, int depth) {
  mlc_error err;
  mlc_sched *t = mlc_sched_copy(s);
  mlc_rv *loops;
  bool ok = mlc_sched_get_loops(t, blocks[n - 1], &loops, &err) > depth;
  mlc_rv at = ok ? loops[depth] : 0;
  for (int i = n - 2; ok && i >= 0; i--) ok = mlc_sched_compute_at(t, blocks[i], at, false, -1, &err);
  if (ok) return t;
  mlc_sched_free(t);
  return NULL;
}

/* Rows computed together share their loop among threads from this many
 * iterations of all their blocks, fewer than a lone nest needs: a row's
 * iterations are mostly vector lanes, several blocks' worth of work per
 * row (an RMS norm over 128 x 768 holds about 200,000), and the runtime
 * itself runs a loop of too little work serially. */
#define MIN_ROWS_PARALLEL_WORK (1 << 15)

/* The loops of block b down to depth `depth` that run more than once
 * fused into one parallel loop when the kernel's blocks hold enough work
 * (they all run under those loops). */
static void rows_parallel(mlc_sched *s, mlc_rv b, int depth, int64_t work) {
  mlc_error err;
  mlc_rv *got, loops[64], fused;
  if (work < MIN_ROWS_PARALLEL_WORK) return;
  int m = mlc_sched_get_loops(s, b, &got, &err), k = 0;
  for (int i = 0; i <= depth && i < m && k < 64; i++)
    if (loop_extent_at_bound(s, got[i]) != 1) loops[k++] = got[i];
  if (k == 0) return;
  if (k > 1 && !mlc_sched_fuse(s, k, loops, false, &fused, &err)) return;
  mlc_sched_parallel(s, k > 1 ? fused : loops[0], &err);
}

/* Rows of a tile computed together by each block of a kernel with a row
 * reduction: the reduction's chain of dependent operations (partial sums,
 * their tree, a division) for one row overlaps the others' work, where
 * row after row it left the core idle (softmax over 256 x 256: 17 -> 14.5
 * us on 2 threads). */
#define ROW_TILE 4

/* Whether loop l drives the index of the last dimension b writes. */
static bool loop_along_row(const mlc_sched *s, mlc_rv b, mlc_rv l) {
  const mlc_block *blk = mlc_sched_rv_block(s, b);
  const mlc_stmt *r = find_realize(mlc_sched_func(s)->body, blk);
  const mlc_stmt *st = mlc_sched_rv_loop(s, l);
  if (!r || !st || blk->n_writes != 1 || blk->writes[0].buf->ndim == 0) return true;
  const mlc_expr *last = blk->writes[0].ranges[blk->writes[0].buf->ndim - 1].min;
  for (int i = 0; i < blk->n_iters; i++)
    if (mlc_expr_uses_var(last, blk->iters[i].var) && mlc_expr_uses_var(r->realize.values[i], st->loop.var))
      return true;
  return false;
}

/* Whether block b's innermost loop reduces along a row. */
static bool row_reduction(mlc_sched *s, mlc_rv b) {
  mlc_error err;
  mlc_rv *loops;
  int n = mlc_sched_get_loops(s, b, &loops, &err);
  return n > 0 && loop_is_reduce(s, b, loops[n - 1]) && reduces_contiguous(s, b, loops[n - 1]);
}

/* The rows of a tile of blocks[n - 1]'s loop at `depth`: ROW_TILE (or
 * half of it) when a block reduces along rows and that many divide the
 * loop's constant extent, else 1. */
static int row_tile(mlc_sched *s, const mlc_rv *blocks, int n, int depth) {
  bool reduces = false;
  for (int i = 0; i < n; i++) reduces |= row_reduction(s, blocks[i]);
  mlc_error err;
  mlc_rv *loops;
  if (!reduces || mlc_sched_get_loops(s, blocks[n - 1], &loops, &err) <= depth) return 1;
  int64_t e = loop_extent(s, loops[depth]);
  for (int t = ROW_TILE; t > 1; t /= 2)
    if (e > t && e % t == 0) return t;
  return 1;
}

/* A copy of s with b's loop at `depth` split by `tile` rows (the tile's
 * loop at depth + 1); NULL when the split refuses. */
static mlc_sched *split_rows(mlc_sched *s, mlc_rv b, int depth, int tile) {
  mlc_error err;
  mlc_rv *loops, parts[2];
  mlc_sched *t = mlc_sched_copy(s);
  mlc_operand fs[2] = {MLC_OP_NONE, MLC_OP_INT(tile)};
  if (mlc_sched_get_loops(t, b, &loops, &err) > depth && mlc_sched_split(t, loops[depth], 2, fs, true, parts, &err))
    return t;
  mlc_sched_free(t);
  return NULL;
}

/* b's loops below `depth` reordered: first those over the tile's rows,
 * then those along a row, then reductions; compute_at leaves them in the
 * order of b's iters, which for a partial sum's block puts its lanes
 * before its rows. */
static void rows_outermost(mlc_sched *s, mlc_rv b, int depth) {
  mlc_error err;
  mlc_rv *got, loops[64], order[64];
  int n = mlc_sched_get_loops(s, b, &got, &err), k = 0;
  if (n <= depth + 2 || n > 64) return;
  memcpy(loops, got, sizeof *loops * (size_t)n);
  for (int pass = 0; pass < 3; pass++)
    for (int i = depth + 1; i < n; i++) {
      int kind = loop_is_reduce(s, b, loops[i]) ? 2 : loop_along_row(s, b, loops[i]) ? 1 : 0;
      if (kind == pass) order[k++] = loops[i];
    }
  mlc_sched_reorder(s, k, order, &err);
}

/* s's blocks computed row by row (see rows_together) with the loop at
 * `depth` of the output block; NULL when a block refuses to move or one
 * would compute more than before. */
static mlc_sched *rows_at(mlc_sched *s, int n, const mlc_rv *blocks, int depth, int64_t work) {
  int tile = row_tile(s, blocks, n, depth);
  mlc_sched *t = tile > 1 ? split_rows(s, blocks[n - 1], depth, tile) : NULL;
  if (!t) tile = 1;
  mlc_sched *u = blocks_at(t ? t : s, n, blocks, depth);
  mlc_sched_free(t);
  if (!u) return NULL;
  if (total_work(u, n, blocks) != work) {
    mlc_sched_free(u);
    return NULL;
  }
  for (int i = 0; tile > 1 && i < n; i++) rows_outermost(u, blocks[i], depth);
  for (int i = 0; i < n; i++) u = vectorize_inner(u, blocks[i], depth + 1 + (tile > 1));
  rows_parallel(u, blocks[n - 1], depth, work);
  return u;
}

/* Whether a spatial block reads along its rows: no read indexes, in a
 * dimension before its last, the iter that indexes the last dimension of
 * what blk writes. A layout change (unpacking NCHWc, a transpose) does,
 * and computed row by row would read its producer across rows. */
static bool reads_along_rows(const mlc_block *blk) {
  if (!tuner_block_is_spatial(blk) || blk->n_writes != 1) return true;
  const mlc_region *w = &blk->writes[0];
  if (w->buf->ndim == 0) return true;
  for (int i = 0; i < blk->n_iters; i++) {
    if (!mlc_expr_uses_var(w->ranges[w->buf->ndim - 1].min, blk->iters[i].var)) continue;
    for (int k = 0; k < blk->n_reads; k++)
      for (int d = 0; d + 1 < blk->reads[k].buf->ndim; d++)
        if (mlc_expr_uses_var(blk->reads[k].ranges[d].min, blk->iters[i].var)) return false;
  }
  return true;
}

/* Elementwise blocks inlined into their one consumer when it runs over as
 * many iterations (an RMS norm's square into its sum, the quotient into
 * the scaling after it): each value is computed where it is used, once,
 * and never stored. A row's scalar (its root) feeding every element of
 * the row stays a block: inlined, it would be computed per element. */
static void inline_same_domain(mlc_sched *s) {
  mlc_error err;
  mlc_rv *blocks, *cs;
  int n = root_blocks(s, &blocks);
  for (int i = 0; i < n - 1; i++) {
    const mlc_block *blk = mlc_sched_rv_block(s, blocks[i]);
    if (!tuner_block_is_spatial(blk) || blk->init || tuner_block_is_output(mlc_sched_func(s), blk) ||
        mlc_sched_get_consumers(s, blocks[i], &cs, &err) != 1 || nest_work(s, blocks[i]) != nest_work(s, cs[0]))
      continue;
    mlc_sched_compute_inline(s, blocks[i], &err);
  }
  mlc_free(blocks);
}

/* Lanes of a row reduction's partial sums in a kernel computed row by
 * row: four vectors, four chains of adds in flight instead of one
 * (a layer norm's two sums over 768 columns, 1.3x faster), combined as
 * a tree by the write-back's vectorized loop. */
#define WIDE_PARTIALS 64

/* A kernel of row-wise blocks (softmax's max, exps, sum and quotient; a
 * norm's mean, variance and result; an elementwise chain) computed row by
 * row: elementwise blocks inlined into a consumer of the same domain
 * (inline_same_domain), row reductions rfactor'd into vector partial
 * sums (with partials), then every block under the output block's loop around its last
 * dimension (or the nearest loop outside it where every block moves), so
 * that a row's intermediates stay in L1 between the blocks and the
 * threads share the rows once, where each block swept all of memory in a
 * nest of its own; then each block's innermost spatial loop below the row
 * vectorized.
 * Kept only when no block then computes more than before (a window's
 * producer would recompute overlapping rows) and the function verifies;
 * true when it did. */
static bool rows_together(mlc_sched **s, bool partials) {
  mlc_error err;
  mlc_rv *blocks, *loops, rf;
  int n = root_blocks(*s, &blocks);
  bool fits = true;
  for (int i = 0; i < n; i++) {
    const mlc_block *blk = mlc_sched_rv_block(*s, blocks[i]);
    fits &= !tuner_block_is_contraction(blk) && reads_along_rows(blk);
  }
  mlc_free(blocks);
  if (!fits || n < 2) return false;
  mlc_sched *t = mlc_sched_copy(*s);
  inline_same_domain(t);
  n = root_blocks(t, &blocks);
  for (int i = 0; partials && i < n - 1; i++) {
    mlc_sched *u = mlc_sched_copy(t);
    if (!rfactor_row(u, blocks[i], false, WIDE_PARTIALS, &rf)) {
      mlc_sched_free(u);
      continue;
    }
    mlc_sched_free(t), t = u;
  }
  mlc_free(blocks);
  n = root_blocks(t, &blocks);
  const mlc_block *out = n >= 1 ? mlc_sched_rv_block(t, blocks[n - 1]) : NULL;
  mlc_sched *done = NULL;
  if (out && tuner_block_is_output(mlc_sched_func(t), out) && !out->init) {
    int m = mlc_sched_get_loops(t, blocks[n - 1], &loops, &err);
    int64_t work = total_work(t, n, blocks);
    for (int d = m - 2; d >= 0 && !done; d--) {
      done = rows_at(t, n, blocks, d, work);
      if (done && !mlc_verify_func(mlc_sched_func(done), &err)) mlc_sched_free(done), done = NULL;
    }
  }
  mlc_free(blocks);
  mlc_sched_free(t);
  if (!done) return false;
  mlc_sched_free(*s);
  *s = done;
  return true;
}

/* The rules on every top-level block of f, then the CPU postprocessors
 * (decomposed reductions), as a search candidate would have them; a
 * postprocessor that refuses leaves the schedule as the rules made it. */
/* Sizes a function of size vars gets its default schedule at: each at
 * its max, or 128 when that is larger (tiles for a large size waste
 * little at small ones; the tails are guarded). */
enum { DEFAULT_AT_SIZE = 128 };

static mlc_sched *rules_sched(const mlc_prim_func *f, const mlc_tuner_opts *o, bool fuse, bool partials);

/* A parallel nest fused over a loop of symbolic extent keeps the order
 * its schedule chose when the loops outside that loop give this many
 * iterations to share among the threads (mlc_sched_set_fuse_outer_min):
 * a dense layer whose rows run inside its weight's tiles then reads each
 * tile once, where moving the rows outermost had every thread read all
 * of the weight (BERT-base's feed-forward layers at 16 rows: 1.3x slower
 * in a model, where the weights come from memory). */
enum { KEEP_ORDER_MIN_ITERS = 16 };

/* A schedule state for f; one of size vars keeps fused loops' order. */
static mlc_sched *sized_sched_new(const mlc_prim_func *f) {
  mlc_sched *s = mlc_sched_new(f, 0);
  if (f->n_sizes > 0) mlc_sched_set_fuse_outer_min(s, KEEP_ORDER_MIN_ITERS);
  return s;
}

/* Instructions that only say how a loop runs (vectorized, unrolled,
 * parallel): leaving one out changes no result. */
static bool is_hint(mlc_inst_kind k) {
  return k == MLC_INST_VECTORIZE || k == MLC_INST_UNROLL || k == MLC_INST_PARALLEL;
}

/* Most hints a replay on a function of size vars may leave out. */
enum { MAX_DROPPED_HINTS = 16 };

/* Instruction i of t left out: a hint, or a Fuse whose loop the later
 * instructions then take to be its first loop (a parallel fused nest run
 * parallel over its outer loop). False for anything else. Whatever then
 * replays is still correct: every primitive keeps the function's meaning. */
static bool leave_out(mlc_trace *t, int i) {
  mlc_inst *in = &t->insts.data[i];
  if (in->kind == MLC_INST_FUSE && in->n_outputs == 1 && in->n_inputs >= 1 &&
      in->inputs[0].kind == MLC_OPERAND_RV) {
    mlc_rv fused = in->outputs[0], first = in->inputs[0].rv;
    for (int j = i + 1; j < t->insts.len; j++)
      for (int k = 0; k < t->insts.data[j].n_inputs; k++) {
        mlc_operand *op = &t->insts.data[j].inputs[k];
        if (op->kind == MLC_OPERAND_RV && op->rv == fused) op->rv = first;
      }
  } else if (!is_hint(in->kind) || in->n_outputs) {
    return false;
  }
  memmove(in, in + 1, sizeof(mlc_inst) * (size_t)(t->insts.len - i - 1));
  t->insts.len--;
  return true;
}

/* t replayed on a fresh state of f; a hint the function refuses (a loop
 * of symbolic extent cannot be vectorized), or a fuse, is left out
 * (leave_out) and the rest replayed again. NULL when anything else fails
 * or the result does not verify. */
static mlc_sched *replay_dropping_hints(mlc_arena *a, const mlc_prim_func *f, const mlc_trace *t,
                                        mlc_error *err) {
  mlc_trace *cur = mlc_trace_copy(a, t);
  for (int tries = 0; tries <= MAX_DROPPED_HINTS; tries++) {
    mlc_sched *s = sized_sched_new(f);
    mlc_replay_report rep;
    if (mlc_sched_replay(s, cur, NULL, &rep, err))
      return mlc_verify_func(mlc_sched_func(s), err) ? s : (mlc_sched_free(s), NULL);
    mlc_sched_free(s);
    if (rep.failed_at < 0 || !leave_out(cur, rep.failed_at)) return NULL;
  }
  return mlc_error_set(err, "more than %d instructions left out", MAX_DROPPED_HINTS), NULL;
}

mlc_prim_func *mlc_tuner_replay_sized(mlc_arena *a, const mlc_prim_func *f, const mlc_trace *t,
                                      mlc_error *err) {
  mlc_arena *q = mlc_arena_new();
  mlc_sched *s = replay_dropping_hints(q, f, t, err);
  mlc_prim_func *g = s ? mlc_func_copy(a, mlc_sched_func(s)) : NULL;
  if (s) mlc_sched_free(s);
  mlc_arena_free(q);
  return g;
}

/* A function of size vars takes the schedule its rules give a static
 * instance (register tiles need constant extents to plan), replayed on
 * it without the hints it refuses; the rules on the function itself
 * where that replay fails. */
static mlc_sched *sized_default(const mlc_prim_func *f, const int64_t *sizes,
                                const mlc_tuner_opts *o) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *g = mlc_func_specialize(a, f, sizes, &err);
  mlc_sched *s = NULL;
  /* blocks moved into rows or register tiles may not replay over a
   * symbolic extent, nor may a row reduction in vector partial sums (an
   * rfactor of a loop split with a tail): then the instance's schedule
   * without partial sums, without blocks moved, without either */
  for (int level = 3; level >= 0 && g && !s; level--) {
    mlc_sched *at = rules_sched(g, o, level >= 2, level % 2 == 1);
    s = replay_dropping_hints(a, f, mlc_sched_trace(at), &err);
    mlc_sched_free(at);
  }
  mlc_arena_free(a);
  return s ? s : rules_sched(f, o, false, false);
}

mlc_sched *tuner_cpu_default_sched(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                   mlc_error *unused) {
  (void)unused; /* the rules never fail: what a primitive refuses is left out */
  if (f->n_sizes == 0) return rules_sched(f, o, true, true);
  int64_t sizes[MLC_MAX_SIZES];
  for (int k = 0; k < f->n_sizes; k++)
    sizes[k] = f->sizes[k].hi < DEFAULT_AT_SIZE ? f->sizes[k].hi : DEFAULT_AT_SIZE;
  return sized_default(f, sizes, o);
}

/* fuse: blocks may move together (attention's row tiles, rows_together,
 * a register tile's epilogue); partials: row reductions may sum in
 * vector partial sums (rfactor). */
static mlc_sched *rules_sched(const mlc_prim_func *f, const mlc_tuner_opts *o, bool fuse, bool partials) {
  mlc_error err;
  mlc_sched *s = sized_sched_new(f);
  inline_copies(s);
  mlc_rv *blocks;
  int n = root_blocks(s, &blocks);
  mlc_rv weighted_sum = -1;
  bool attention = fuse && tuner_attention_rows(&s, partials, false, &weighted_sum);
  bool done = !attention && fuse && rows_together(&s, partials);
  for (int i = 0; !done && i < n; i++) {
    if (!at_root(s, blocks[i]) || blocks[i] == weighted_sum) continue;
    if (intrin_tile(&s, blocks[i], o)) {
      inline_epilogue(s, n, blocks, i);
      continue;
    }
    if ((partials && reads_along_reduction(s, blocks[i]) && row_rfactor(&s, blocks[i], true)) ||
        register_tile(&s, blocks[i], fuse) || (partials && row_rfactor(&s, blocks[i], false)) ||
        transpose_tiles(&s, blocks[i]))
      continue;
    s = vectorize_inner(s, blocks[i], 0);
    parallel_outer(s, blocks[i]);
  }
  mlc_free(blocks);
  mlc_sched *post = mlc_sched_copy(s);
  if (!tuner_postproc_cpu(post, o, &err)) {
    mlc_sched_free(post);
    return s;
  }
  mlc_sched_free(s);
  return post;
}

mlc_prim_func *mlc_tuner_cpu_default_schedule_at(mlc_arena *a, const mlc_prim_func *f,
                                                 const int64_t *sizes) {
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_sched *s = sized_default(f, sizes, &o);
  mlc_prim_func *out = mlc_func_copy(a, mlc_sched_func(s));
  mlc_sched_free(s);
  return out;
}

mlc_prim_func *mlc_tuner_cpu_default_schedule(mlc_arena *a, const mlc_prim_func *f) {
  return mlc_tuner_cpu_default_schedule_for(a, f, NULL);
}

mlc_prim_func *mlc_tuner_cpu_default_schedule_for(mlc_arena *a, const mlc_prim_func *f,
                                                  const char *cpu_features) {
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  o.cpu_features = cpu_features;
  mlc_error err;
  mlc_sched *s = tuner_cpu_default_sched(f, &o, &err);
  mlc_prim_func *out = mlc_func_copy(a, mlc_sched_func(s));
  mlc_sched_free(s);
  return out;
}
