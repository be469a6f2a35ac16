/* Loop kinds (parallel, vectorize, unroll, bind) and annotations. */
#include "schedule/sched_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What one check of a loop found of its blocks' bindings: the
 * compact-dataflow rule and the per-block rule ask of the same blocks. */
enum { MEMO_CAP = 16 };
typedef struct affine_memo {
  int n;
  struct {
    const mlc_stmt *realize;
    bool ok;
    int bad, other;
  } e[MEMO_CAP];
} affine_memo;

static uint64_t mix_ptr(uint64_t h, const void *p) { return mlc_hash_combine(h, (uint64_t)(uintptr_t)p); }

/* What mlc_affine_bindings reads of realize under its scope's loops. */
static uint64_t affine_key(const mlc_stmt *realize, int nl, mlc_stmt *const *loops) {
  uint64_t h = mlc_hash_combine(mix_ptr(0, realize), (uint64_t)nl);
  h = mix_ptr(h, realize->realize.predicate);
  for (int i = 0; i < nl; i++) {
    const mlc_stmt *l = loops[i];
    h = mix_ptr(mix_ptr(mix_ptr(mix_ptr(h, l), l->loop.var), l->loop.min), l->loop.extent);
  }
  for (int i = 0; i < realize->realize.block->n_iters; i++) h = mix_ptr(h, realize->realize.values[i]);
  return h;
}

/* Whether the bindings of `realize` are quasi-affine in the loops of its
 * scope (TensorIR's IsAffineBinding, see mlc_affine_bindings), asked of
 * m first. If not, *bad is the first iter whose binding is not, or two
 * iters (*bad, *other) use the same part of a loop. */
static bool affine_bindings(mlc_sched *s, affine_memo *m, mlc_stmt *realize, int *bad, int *other) {
  for (int i = 0; i < m->n; i++)
    if (m->e[i].realize == realize) {
      *bad = m->e[i].bad, *other = m->e[i].other;
      return m->e[i].ok;
    }
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  mlc_expr *conj[64];
  int nl = sched_scope_loops(s, realize, loops, NULL);
  uint64_t key = affine_key(realize, nl, loops);
  bool ok;
  int seen = -1;
  for (int i = 0; i < s->n_affine && seen < 0; i++)
    if (s->affine[i].key == key) seen = i;
  if (seen >= 0) {
    ok = s->affine[seen].ok, *bad = s->affine[seen].bad, *other = s->affine[seen].other;
  } else {
    int nc = sched_conjuncts(realize->realize.predicate, conj, 64);
    const mlc_block *b = realize->realize.block;
    *bad = *other = -1;
    ok = mlc_affine_bindings(nl, loops, nc, conj, b->n_iters, realize->realize.values, bad, other);
    int at = s->next_affine;
    s->next_affine = (at + 1) % MLC_COUNTOF(s->affine);
    if (s->n_affine < MLC_COUNTOF(s->affine)) s->n_affine++;
    s->affine[at].key = key, s->affine[at].ok = ok;
    s->affine[at].bad = *bad, s->affine[at].other = *other;
  }
  if (m->n < MEMO_CAP) {
    m->e[m->n].realize = realize, m->e[m->n].ok = ok;
    m->e[m->n].bad = *bad, m->e[m->n].other = *other;
    m->n++;
  }
  return ok;
}

/* ---- TensorIR's parallelizability rule ---------------------------------------------
 *
 * parallel, vectorize and bind (ParallelizeComputation) require:
 * 1. compact data flow under the loop: each block directly under it is a
 *    complete block (all iters spatial, the only writer of its outputs
 *    there, reading none of them as TensorIR completes its reads, see
 *    completed_reads) or a reduction block (T.init(), affine
 *    bindings, the only writer of its outputs there, no reduce iter in an
 *    output index);
 * 2. every block under the loop has quasi-affine bindings;
 * 3. the iters bound to the loop are spatial (or reduce, for threadIdx:
 *    a cross-thread reduction). */

/* The text lives in the state's arena (replay's escape point covers it). */
static void print_expr_to(mlc_arena *a, char *buf, size_t n, const mlc_expr *e) {
  mlc_str o = {.arena = a};
  mlc_print_expr(&o, e);
  snprintf(buf, n, "%s", mlc_str_cstr(&o));
  mlc_str_free(&o);
}

static bool affine_check(mlc_sched *s, affine_memo *m, const char *prim, const char *ld,
                         mlc_stmt *r, mlc_error *err) {
  int bad, other;
  if (affine_bindings(s, m, r, &bad, &other)) return true;
  const mlc_block *b = r->realize.block;
  if (other >= 0)
    return mlc_error_set(err,
                         "%s: %s: block \"%s\" does not have an affine binding: iters %s and %s "
                         "are bound to the same iterations of the loops",
                         prim, ld, b->name, b->iters[bad].var->name, b->iters[other].var->name);
  char e[160];
  print_expr_to(s->arena, e, sizeof e, r->realize.values[bad]);
  return mlc_error_set(err,
                       "%s: %s: block \"%s\" does not have an affine binding: %s = %s is not a "
                       "quasi-affine map of the loops",
                       prim, ld, b->name, b->iters[bad].var->name, e);
}

/* A statement of the block's body stores to an output at an index that
 * uses a reduce iter. */
static const mlc_var *reduce_in_output_index(const mlc_block *b, const mlc_stmt *st,
                                             const mlc_buffer **buf) {
  if (!st) return NULL;
  const mlc_var *v;
  switch (st->kind) {
  case MLC_STMT_FOR: return reduce_in_output_index(b, st->loop.body, buf);
  case MLC_STMT_BLOCK_REALIZE: return reduce_in_output_index(b, st->realize.block->body, buf);
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++)
      if ((v = reduce_in_output_index(b, st->seq.stmts[i], buf))) return v;
    return NULL;
  case MLC_STMT_IF:
    if ((v = reduce_in_output_index(b, st->if_.then_s, buf))) return v;
    return reduce_in_output_index(b, st->if_.else_s, buf);
  case MLC_STMT_ALLOCATE: return reduce_in_output_index(b, st->alloc.body, buf);
  case MLC_STMT_STORE:
    if (!sched_block_writes(b, st->store.buf)) return NULL;
    for (int d = 0; d < st->store.buf->ndim; d++)
      for (int i = 0; i < b->n_iters; i++)
        if (b->iters[i].kind == MLC_ITER_REDUCE &&
            mlc_expr_uses_var(st->store.indices[d], b->iters[i].var)) {
          *buf = st->store.buf;
          return b->iters[i].var;
        }
    return NULL;
  case MLC_STMT_EVALUATE: return NULL;
  }
  mlc_unreachable();
}

typedef struct flow_ctx {
  mlc_sched *s;
  affine_memo *memo;
  MLC_VEC(mlc_stmt *) blocks; /* realizes directly under the loop */
} flow_ctx;

static void collect_child(mlc_stmt *r, void *ctx_) {
  flow_ctx *c = ctx_;
  MLC_VEC_APUSH(c->s->arena, c->blocks, r);
}

/* Another block directly under the loop that writes one of b's outputs. */
static const mlc_block *other_writer(const flow_ctx *c, const mlc_block *b, const mlc_buffer **buf) {
  for (int w = 0; w < b->n_writes; w++)
    for (int i = 0; i < c->blocks.len; i++) {
      const mlc_block *o = c->blocks.data[i]->realize.block;
      if (o != b && sched_block_writes(o, b->writes[w].buf)) {
        *buf = b->writes[w].buf;
        return o;
      }
    }
  return NULL;
}

static const char *reason(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *reason(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return why;
}

/* ---- reads as TensorIR completes them ----
 *
 * TensorIR derives a block's reads from the reads its nested blocks
 * declare (not from what their bodies load), and a block with T.init()
 * does not read its own outputs. A block that only wraps a reduction
 * (outer { for k: inner with T.init(): B[vi, k] += A[vi, k, l] }) thus
 * reads A alone and is complete: what each of its iterations needs from B
 * it writes itself first. Our inferred regions follow loads into nested
 * bodies, so the complete-block rule asks these functions instead. */

static bool loads_buffer(const mlc_expr *e, void *buf) {
  return e->kind == MLC_EXPR_LOAD && e->load.buf == buf;
}

static bool is_realize(const mlc_stmt *st, void *ud) {
  MLC_UNUSED(ud);
  return st->kind == MLC_STMT_BLOCK_REALIZE;
}

static bool has_nested_block(const mlc_stmt *st) { return mlc_stmt_any(st, is_realize, NULL); }

static bool completed_reads(const mlc_block *b, const mlc_buffer *buf);

/* Whether st reads buf: a load outside nested blocks, or a nested block
 * whose completed reads hold it. */
static mlc_walk reads_step(const mlc_stmt *st, void *buf) {
  if (mlc_stmt_exprs_any(st, loads_buffer, buf)) return MLC_WALK_STOP;
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return MLC_WALK_INTO;
  return completed_reads(st->realize.block, buf) ? MLC_WALK_STOP : MLC_WALK_SKIP;
}

static bool stmt_reads(const mlc_stmt *st, const mlc_buffer *buf) {
  return !mlc_stmt_walk(st, reads_step, (void *)buf);
}

/* Whether b reads buf as TensorIR's completion of its reads would say: a
 * block without nested blocks as it declares. */
static bool completed_reads(const mlc_block *b, const mlc_buffer *buf) {
  bool declared = false; /* in b's reads: a reduction's own output is not */
  for (int i = 0; i < b->n_reads; i++) declared = declared || b->reads[i].buf == buf;
  if (!declared) return false;
  if (!has_nested_block(b->init) && !has_nested_block(b->body)) return true;
  if (b->init && sched_block_writes(b, buf)) return false;
  return stmt_reads(b->init, buf) || stmt_reads(b->body, buf);
}

/* Why b is not a complete block among the loop's blocks (NULL: it is). */
static const char *not_complete(const flow_ctx *c, const mlc_block *b, char *why, size_t n) {
  const mlc_buffer *buf;
  const mlc_block *o;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind != MLC_ITER_SPATIAL)
      return reason(why, n, "iter %s is not data parallel", b->iters[i].var->name);
  if ((o = other_writer(c, b, &buf)))
    return reason(why, n, "block \"%s\" also writes %s", o->name, buf->name);
  for (int r = 0; r < b->n_reads; r++)
    if (sched_block_writes(b, b->reads[r].buf) && completed_reads(b, b->reads[r].buf))
      return reason(why, n, "it reads %s, which it writes", b->reads[r].buf->name);
  return NULL;
}

static const char *not_reduction(const flow_ctx *c, mlc_stmt *r, char *why, size_t n) {
  const mlc_block *b = r->realize.block, *o;
  const mlc_buffer *buf;
  const mlc_var *v;
  int bad, other;
  if (!b->init) return reason(why, n, "it has no T.init()");
  if (!affine_bindings(c->s, c->memo, r, &bad, &other))
    return reason(why, n, "its bindings are not quasi-affine");
  if ((o = other_writer(c, b, &buf)))
    return reason(why, n, "block \"%s\" also writes %s", o->name, buf->name);
  if ((v = reduce_in_output_index(b, b->body, &buf)))
    return reason(why, n, "reduce iter %s indexes its output %s", v->name, buf->name);
  return NULL;
}

static bool compact_dataflow_check(mlc_sched *s, affine_memo *m, const char *prim, const char *ld,
                                   mlc_stmt *loop, mlc_error *err) {
  flow_ctx c = {s, m, {0}};
  sched_each_realize(loop->loop.body, collect_child, &c);
  for (int i = 0; i < c.blocks.len; i++) {
    char w1[200], w2[200];
    const char *nc = not_complete(&c, c.blocks.data[i]->realize.block, w1, sizeof w1);
    const char *nr = nc ? not_reduction(&c, c.blocks.data[i], w2, sizeof w2) : NULL;
    if (nc && nr)
      return mlc_error_set(err,
                           "%s: %s: block \"%s\" is neither a complete block (%s) nor a reduction "
                           "block (%s); the blocks under the loop must have compact data flow",
                           prim, ld, c.blocks.data[i]->realize.block->name, nc, nr);
  }
  return true;
}

/* Each block under the loop, nested blocks included (not inits). */
static void each_block_deep(mlc_stmt *st, void (*fn)(mlc_stmt *, void *), void *ctx) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: each_block_deep(st->loop.body, fn, ctx); return;
  case MLC_STMT_BLOCK_REALIZE:
    fn(st, ctx);
    each_block_deep(st->realize.block->body, fn, ctx);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) each_block_deep(st->seq.stmts[i], fn, ctx);
    return;
  case MLC_STMT_IF:
    each_block_deep(st->if_.then_s, fn, ctx);
    each_block_deep(st->if_.else_s, fn, ctx);
    return;
  case MLC_STMT_ALLOCATE: each_block_deep(st->alloc.body, fn, ctx); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
}

/* Which blocks may bind a reduce iter to the loop: none (parallel,
 * blockIdx), any (threadIdx: a cross-thread reduction), those whose
 * reduction is a reducer's (vectorize: the lanes combined as a tree). */
typedef enum reduce_rule { REDUCE_NONE, REDUCE_ANY, REDUCE_REDUCER } reduce_rule;

typedef struct par_ctx {
  mlc_sched *s;
  affine_memo *memo;
  const char *prim, *ld;
  const mlc_var *var;
  reduce_rule reduce;
  mlc_error *err;
  bool failed;
} par_ctx;

/* A block under the loop: affine bindings, the loop bound only to spatial
 * iters. */
static void check_block(mlc_stmt *r, void *ctx_) {
  par_ctx *c = ctx_;
  if (c->failed) return;
  if (!affine_check(c->s, c->memo, c->prim, c->ld, r, c->err)) {
    c->failed = true;
    return;
  }
  const mlc_block *b = r->realize.block;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_REDUCE || c->reduce == REDUCE_ANY ||
        !mlc_expr_uses_var(r->realize.values[i], c->var))
      continue;
    mlc_reducer red;
    const char *why = c->reduce == REDUCE_REDUCER ? mlc_block_reducer(b, &red) : "";
    if (!why) continue;
    if (*why)
      mlc_error_set(c->err,
                    "%s: %s: block \"%s\" binds its reduce iter %s to this loop, and %s (a vectorized "
                    "reduction needs a sum, product, max or min)",
                    c->prim, c->ld, b->name, b->iters[i].var->name, why);
    else
      mlc_error_set(c->err,
                    "%s: %s: block \"%s\" binds its reduce iter %s to this loop; only "
                    "spatial iters may depend on it",
                    c->prim, c->ld, b->name, b->iters[i].var->name);
    c->failed = true;
    return;
  }
}

/* Checks shared by parallel, vectorize, bind and unroll. A loop already
 * bound to a thread may be given another kind or thread, as in TensorIR. */
static bool loop_kind_check(mlc_sched *s, const char *prim, mlc_rv rv, bool check_blocks,
                            reduce_rule reduce, mlc_error *err) {
  char d[96];
  if (!sched_check_loop(s, prim, rv, err)) return false;
  mlc_stmt *l = s->rvs.data[rv].loop;
  sched_rv_desc(s, rv, d);
  /* A parallel loop may run over a symbolic extent (its trip count is a
   * run-time value to the runtime's parallel_for); vector lanes, unrolled
   * copies and threads are counted at compile time. */
  int64_t ext;
  if (!mlc_expr_is_const_int(l->loop.extent, &ext) && strcmp(prim, "parallel") != 0)
    return mlc_error_set(err, "%s: %s: the loop's extent is not constant", prim, d);
  if (!check_blocks) return true;
  affine_memo memo = {0};
  if (!compact_dataflow_check(s, &memo, prim, d, l, err)) return false;
  par_ctx ctx = {s, &memo, prim, d, l->loop.var, reduce, err, false};
  each_block_deep(l->loop.body, check_block, &ctx);
  return !ctx.failed;
}

/* ---- dependences carried by a loop ------------------------------------------- */

/* One block's access to a buffer, per iteration of the loop being checked:
 * iter vars replaced by their bindings, loops inside that loop relaxed. */
typedef struct access {
  mlc_region r;
  const mlc_block *blk;
  bool write;
} access;

typedef struct dep_ctx {
  mlc_sched *s;
  mlc_stmt *loop;
  MLC_VEC(access) acc;
  /* The buffers one block writes and another touches: only their
   * accesses are relaxed (the others cannot race). */
  MLC_VEC(const mlc_buffer *) shared;
} dep_ctx;

static bool in_list(const mlc_buffer *const *v, int n, const mlc_buffer *b) {
  for (int i = 0; i < n; i++)
    if (v[i] == b) return true;
  return false;
}

/* Who touches what under the loop, regions left out. */
typedef struct touch {
  const mlc_buffer *buf;
  const mlc_block *blk;
  bool write;
} touch;

typedef struct touch_ctx {
  mlc_arena *a;
  MLC_VEC(touch) t;
} touch_ctx;

static void collect_touches(mlc_stmt *realize, void *ctx_) {
  touch_ctx *c = ctx_;
  const mlc_block *b = realize->realize.block;
  for (int k = 0; k < b->n_reads; k++) MLC_VEC_APUSH(c->a, c->t, ((touch){b->reads[k].buf, b, false}));
  for (int k = 0; k < b->n_writes; k++) MLC_VEC_APUSH(c->a, c->t, ((touch){b->writes[k].buf, b, true}));
}

static void find_shared(dep_ctx *c) {
  touch_ctx tc = {c->s->arena, {0}};
  sched_each_realize(c->loop->loop.body, collect_touches, &tc);
  for (int i = 0; i < tc.t.len; i++) {
    const touch *w = &tc.t.data[i];
    if (!w->write || in_list(c->shared.data, c->shared.len, w->buf)) continue;
    for (int j = 0; j < tc.t.len; j++)
      if (tc.t.data[j].buf == w->buf && tc.t.data[j].blk != w->blk) {
        MLC_VEC_APUSH(c->s->arena, c->shared, w->buf);
        break;
      }
  }
}

static void add_accesses(dep_ctx *c, mlc_stmt *realize, int n, const mlc_region *rs, bool write,
                         int nl, mlc_var **lv, const int64_t *mins, const int64_t *exts) {
  mlc_arena *a = c->s->arena;
  const mlc_block *b = realize->realize.block;
  mlc_var *iv[64];
  int ni = b->n_iters < 64 ? b->n_iters : 64;
  for (int i = 0; i < ni; i++) iv[i] = b->iters[i].var;
  for (int k = 0; k < n; k++) {
    if (!in_list(c->shared.data, c->shared.len, rs[k].buf)) continue;
    mlc_region r = {rs[k].buf, MLC_NEW_ARRAY(a, mlc_range, rs[k].buf->ndim + 1)};
    for (int d = 0; d < r.buf->ndim; d++) {
      r.ranges[d].min = mlc_expr_subst(a, rs[k].ranges[d].min, ni, iv, realize->realize.values);
      r.ranges[d].extent = mlc_expr_subst(a, rs[k].ranges[d].extent, ni, iv, realize->realize.values);
    }
    access x = {mlc_region_relax(a, r, nl, lv, mins, exts), b, write};
    MLC_VEC_APUSH(a, c->acc, x);
  }
}

static void collect_accesses(mlc_stmt *realize, void *ctx_) {
  dep_ctx *c = ctx_;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  mlc_var *lv[SCHED_MAX_DEPTH];
  int64_t mins[SCHED_MAX_DEPTH], exts[SCHED_MAX_DEPTH];
  int n = sched_path_to(c->s, realize, path), nl = 0, start = 0;
  while (start < n && path[start] != c->loop) start++;
  /* The loops below the loop are relaxed over their range; so are those
   * above it that run once, whose var one block may index by and another
   * (placed by compute_at, simplified) by its only value. */
  for (int i = 0; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_FOR && i != start && mlc_expr_is_const_int(path[i]->loop.min, &mins[nl]) &&
        mlc_expr_is_const_int(path[i]->loop.extent, &exts[nl]) && (i > start || exts[nl] == 1))
      lv[nl++] = path[i]->loop.var;
  const mlc_block *b = realize->realize.block;
  add_accesses(c, realize, b->n_reads, b->reads, false, nl, lv, mins, exts);
  add_accesses(c, realize, b->n_writes, b->writes, true, nl, lv, mins, exts);
}

static bool same_region(mlc_arena *a, const mlc_region *x, const mlc_region *y) {
  for (int d = 0; d < x->buf->ndim; d++) {
    int64_t dm, de;
    if (!mlc_expr_const_diff(a, x->ranges[d].min, y->ranges[d].min, &dm) || dm != 0 ||
        !mlc_expr_const_diff(a, x->ranges[d].extent, y->ranges[d].extent, &de) || de != 0)
      return false;
  }
  return true;
}

/* Blocks under the loop that share a buffer, one writing it, must touch
 * the same part of it in each iteration; otherwise an iteration reads or
 * overwrites what another one writes, and running them concurrently races. */
static bool carried_dependence_check(mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err) {
  char d[96];
  dep_ctx c = {s, s->rvs.data[rv].loop, {0}, {0}};
  find_shared(&c);
  if (c.shared.len == 0) return true;
  sched_each_realize(c.loop->loop.body, collect_accesses, &c);
  for (int i = 0; i < c.acc.len; i++) {
    const access *w = &c.acc.data[i];
    if (!w->write) continue;
    for (int j = 0; j < c.acc.len; j++) {
      const access *x = &c.acc.data[j];
      if (x->blk == w->blk || x->r.buf != w->r.buf || same_region(s->arena, &w->r, &x->r)) continue;
      return mlc_error_set(err,
                           "%s: %s: block \"%s\" %s buffer %s where block \"%s\" writes it in "
                           "other iterations of this loop",
                           prim, sched_rv_desc(s, rv, d), x->blk->name,
                           x->write ? "writes" : "reads", x->r.buf->name, w->blk->name);
    }
  }
  return true;
}

/* A bound loop given another kind loses its thread, as in TensorIR. */
static void set_kind(mlc_stmt *l, mlc_for_kind k) {
  l->loop.kind = k;
  l->loop.thread = NULL;
}

static void record_loop(mlc_sched *s, mlc_inst_kind k, mlc_rv rv) {
  mlc_operand in = MLC_OP_RV(rv);
  sched_record(s, k, 1, &in, 0, NULL, 0, NULL);
}

bool mlc_sched_parallel(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  if (!loop_kind_check(s, "parallel", rv, true, REDUCE_NONE, err) ||
      !carried_dependence_check(s, "parallel", rv, err))
    return false;
  set_kind(s->rvs.data[rv].loop, MLC_FOR_PARALLEL);
  record_loop(s, MLC_INST_PARALLEL, rv);
  return true;
}

static mlc_walk find_vectorized(const mlc_stmt *st, void *ud) {
  if (st->kind != MLC_STMT_FOR || st->loop.kind != MLC_FOR_VECTORIZED) return MLC_WALK_INTO;
  *(const mlc_stmt **)ud = st;
  return MLC_WALK_STOP;
}

/* Vector lanes are one loop: none of the loops around or inside l may be
 * vectorized already (code generation runs no vector inside a vector). */
static bool nesting_check(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  mlc_stmt *l = s->rvs.data[rv].loop, *path[SCHED_MAX_DEPTH];
  const mlc_stmt *other = NULL;
  int n = sched_path_to(s, l, path);
  for (int i = 0; i < n - 1 && !other; i++)
    if (path[i]->kind == MLC_STMT_FOR && path[i]->loop.kind == MLC_FOR_VECTORIZED) other = path[i];
  if (!other) mlc_stmt_walk(l->loop.body, find_vectorized, &other);
  if (!other) return true;
  char d[96];
  return mlc_error_set(err, "vectorize: %s: loop %s %s it is vectorized already (vectors do not nest)",
                       sched_rv_desc(s, rv, d), other->loop.var->name,
                       sched_path_to(s, other, path) < n ? "around" : "inside");
}

bool mlc_sched_vectorize(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  if (!loop_kind_check(s, "vectorize", rv, true, REDUCE_REDUCER, err) || !nesting_check(s, rv, err) ||
      !carried_dependence_check(s, "vectorize", rv, err))
    return false;
  set_kind(s->rvs.data[rv].loop, MLC_FOR_VECTORIZED);
  record_loop(s, MLC_INST_VECTORIZE, rv);
  return true;
}

bool mlc_sched_unroll(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  if (!loop_kind_check(s, "unroll", rv, false, REDUCE_NONE, err)) return false;
  set_kind(s->rvs.data[rv].loop, MLC_FOR_UNROLLED);
  record_loop(s, MLC_INST_UNROLL, rv);
  return true;
}

static bool valid_thread_tag(const char *t) {
  static const char *const tags[] = {
      "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
      "vthread",    "vthread.x",  "vthread.y",  "vthread.z",
  };
  for (int i = 0; i < MLC_COUNTOF(tags); i++)
    if (strcmp(t, tags[i]) == 0) return true;
  return false;
}

/* A loop bound to `tag` with another extent, above or below l: one thread
 * axis has one extent (nesting with the same extent is cooperative
 * fetching). NULL if none. */
typedef struct tag_search {
  const char *tag;
  int64_t ext;
  const mlc_stmt *found;
} tag_search;

static bool other_extent_same_tag(const mlc_stmt *st, void *ud) {
  tag_search *t = ud;
  int64_t e;
  if (st->kind != MLC_STMT_FOR || st->loop.kind != MLC_FOR_THREAD_BINDING ||
      strcmp(st->loop.thread, t->tag) != 0 ||
      (mlc_expr_is_const_int(st->loop.extent, &e) && e == t->ext))
    return false;
  t->found = st;
  return true;
}

static const mlc_stmt *find_same_tag(const mlc_stmt *st, const char *tag, int64_t ext) {
  tag_search t = {tag, ext, NULL};
  mlc_stmt_any(st, other_extent_same_tag, &t);
  return t.found;
}

static bool thread_extent_check(mlc_sched *s, mlc_rv rv, const char *tag, mlc_error *err) {
  char d[96];
  mlc_stmt *l = s->rvs.data[rv].loop, *path[SCHED_MAX_DEPTH];
  int64_t ext = 0;
  mlc_expr_is_const_int(l->loop.extent, &ext);
  int n = sched_path_to(s, l, path);
  const mlc_stmt *other = NULL;
  for (int i = 0; i < n - 1 && !other; i++) {
    const mlc_stmt *p = path[i];
    int64_t e;
    if (p->kind == MLC_STMT_FOR && p->loop.kind == MLC_FOR_THREAD_BINDING &&
        strcmp(p->loop.thread, tag) == 0 && (!mlc_expr_is_const_int(p->loop.extent, &e) || e != ext))
      other = p;
  }
  if (!other) other = find_same_tag(l->loop.body, tag, ext);
  if (!other) return true;
  int64_t oe = 0;
  mlc_expr_is_const_int(other->loop.extent, &oe);
  return mlc_error_set(err,
                       "bind: %s: loop %s is bound to %s with extent %lld; this loop's extent "
                       "%lld differs (one thread axis has one extent)",
                       sched_rv_desc(s, rv, d), other->loop.var->name, tag, (long long)oe,
                       (long long)ext);
}

bool mlc_sched_bind(mlc_sched *s, mlc_rv rv, const char *thread, mlc_error *err) {
  char d[96];
  if (!thread || !valid_thread_tag(thread))
    return mlc_error_set(err,
                         "bind: %s: unknown thread axis \"%s\" (expected blockIdx.x/y/z, "
                         "threadIdx.x/y/z or vthread.x/y/z)",
                         sched_rv_desc(s, rv, d), thread ? thread : "(null)");
  bool thread_idx = strncmp(thread, "threadIdx.", 10) == 0;
  if (!loop_kind_check(s, "bind", rv, true, thread_idx ? REDUCE_ANY : REDUCE_NONE, err) ||
      !thread_extent_check(s, rv, thread, err) ||
      (strncmp(thread, "blockIdx.", 9) == 0 && !carried_dependence_check(s, "bind", rv, err)))
    return false;
  mlc_stmt *l = s->rvs.data[rv].loop;
  l->loop.kind = MLC_FOR_THREAD_BINDING;
  l->loop.thread = mlc_arena_strdup(s->arena, thread);
  mlc_operand in = MLC_OP_RV(rv);
  mlc_attr at = sched_attr_str("thread_axis", thread);
  sched_record(s, MLC_INST_BIND, 1, &in, 1, &at, 0, NULL);
  return true;
}

/* ---- annotations --------------------------------------------------------------- */

/* The annotation list of a live block or loop handle. */
static bool ann_target(mlc_sched *s, const char *prim, mlc_rv rv, int **n, mlc_ann ***anns,
                       mlc_error *err) {
  char d[96];
  if (rv < 0 || rv >= s->rvs.len || s->rvs.data[rv].kind == MLC_RV_VALUE)
    return mlc_error_set(err, "%s: %s is not a block or loop", prim, sched_rv_desc(s, rv, d));
  if (!mlc_sched_rv_alive(s, rv))
    return mlc_error_set(err, "%s: %s is no longer in the function", prim, sched_rv_desc(s, rv, d));
  rv_entry *e = &s->rvs.data[rv];
  if (e->kind == MLC_RV_LOOP) {
    *n = &e->loop->loop.n_anns;
    *anns = &e->loop->loop.anns;
  } else {
    *n = &e->block->n_anns;
    *anns = &e->block->anns;
  }
  return true;
}

/* An int, float or string ANN value as the plain operand, so that the
 * trace records one form of each value (and its JSON reads back as it). */
static mlc_operand plain_operand(mlc_operand v) {
  if (v.kind != MLC_OPERAND_ANN || !v.ann) return v;
  switch (v.ann->kind) {
  case MLC_ANN_INT: return MLC_OP_INT(v.ann->i);
  case MLC_ANN_FLOAT: return MLC_OP_FLOAT(v.ann->f);
  case MLC_ANN_STRING: return v.ann->s ? MLC_OP_STR(v.ann->s) : v;
  case MLC_ANN_BOOL:
  case MLC_ANN_LIST:
  case MLC_ANN_DICT: return v;
  }
  mlc_unreachable();
}

bool mlc_sched_annotate(mlc_sched *s, mlc_rv rv, const char *key, mlc_operand value,
                        mlc_error *err) {
  char d[96];
  int *n;
  mlc_ann **anns;
  if (!ann_target(s, "annotate", rv, &n, &anns, err)) return false;
  if (!key || !*key)
    return mlc_error_set(err, "annotate: %s: empty annotation key", sched_rv_desc(s, rv, d));
  mlc_ann ann = {.key = mlc_arena_strdup(s->arena, key)};
  value = plain_operand(value);
  switch (value.kind) {
  case MLC_OPERAND_ANN:
    if (!value.ann) return mlc_error_set(err, "annotate: %s: NULL value", sched_rv_desc(s, rv, d));
    ann = mlc_ann_dup(s->arena, value.ann);
    ann.key = mlc_arena_strdup(s->arena, key);
    break;
  case MLC_OPERAND_INT: ann.kind = MLC_ANN_INT, ann.i = value.i; break;
  case MLC_OPERAND_FLOAT: ann.kind = MLC_ANN_FLOAT, ann.f = value.f; break;
  case MLC_OPERAND_STR:
    if (!value.s) return mlc_error_set(err, "annotate: %s: NULL string value", sched_rv_desc(s, rv, d));
    ann.kind = MLC_ANN_STRING, ann.s = mlc_arena_strdup(s->arena, value.s);
    break;
  case MLC_OPERAND_RV:
    if (!sched_check_value(s, "annotate", value.rv, err)) return false;
    ann.kind = MLC_ANN_INT, ann.i = s->rvs.data[value.rv].value;
    break;
  case MLC_OPERAND_NONE:
    return mlc_error_set(err, "annotate: %s: key \"%s\" needs a value", sched_rv_desc(s, rv, d), key);
  }
  /* A fresh array: the old one may be shared with nothing, but arrays are
   * never resized in place in the arena. */
  mlc_ann *na = MLC_NEW_ARRAY(s->arena, mlc_ann, *n + 1);
  int m = 0;
  bool replaced = false;
  for (int i = 0; i < *n; i++) {
    if (strcmp((*anns)[i].key, key) == 0) na[m++] = ann, replaced = true;
    else na[m++] = (*anns)[i];
  }
  if (!replaced) na[m++] = ann;
  *anns = na;
  *n = m;
  mlc_operand in[2] = {MLC_OP_RV(rv), value};
  mlc_attr at = sched_attr_str("ann_key", key);
  sched_record(s, MLC_INST_ANNOTATE, 2, in, 1, &at, 0, NULL);
  return true;
}

bool mlc_sched_unannotate(mlc_sched *s, mlc_rv rv, const char *key, mlc_error *err) {
  char d[96];
  int *n;
  mlc_ann **anns;
  if (!ann_target(s, "unannotate", rv, &n, &anns, err)) return false;
  if (!key || !mlc_ann_find(*n, *anns, key))
    return mlc_error_set(err, "unannotate: %s has no annotation \"%s\"", sched_rv_desc(s, rv, d),
                         key ? key : "(null)");
  mlc_ann *na = MLC_NEW_ARRAY(s->arena, mlc_ann, *n + 1);
  int m = 0;
  for (int i = 0; i < *n; i++)
    if (strcmp((*anns)[i].key, key) != 0) na[m++] = (*anns)[i];
  *anns = na;
  *n = m;
  mlc_operand in = MLC_OP_RV(rv);
  mlc_attr at = sched_attr_str("ann_key", key);
  sched_record(s, MLC_INST_UNANNOTATE, 1, &in, 1, &at, 0, NULL);
  return true;
}
