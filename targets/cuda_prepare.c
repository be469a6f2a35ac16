/* Before lowering, for cuda: each shared buffer of the root block shrinks
 * to the tile one thread block uses per iteration of the innermost loop
 * around all its uses, as TVM's buffer compaction does for the notes'
 * window sum (A_shared: 1027 -> 130 elements) and shared-memory matmul.
 *
 * mlc_target_lower's own compaction cannot do this: it keeps every index
 * affine and relaxes every loop inside the allocation, serial reduction
 * loops included, so a tile fetched at each k0 iteration would still span
 * all of K. Here, per access and dimension, with e the index (iter vars
 * replaced by their bindings):
 *   relaxed vars: loops below the common loop prefix of all accesses, and
 *                 threadIdx/vthread loops within it (other threads'
 *                 parts of the tile);
 *   fixed vars:   blockIdx loops and serial loops of the prefix (one
 *                 tile per block and iteration);
 *   region:       base + [lo, hi], base = e at the relaxed loops' minima,
 *                 [lo, hi] the interval bounds of e - base (floordiv and
 *                 floormod included), narrowed by a T.where "q < C" whose
 *                 q differs from e by fixed terms only.
 * Accesses' regions must agree up to constants; the new extent covers
 * them all and every access becomes index - offset. A fixed serial loop
 * is only trusted when each iteration writes the buffer before reading
 * it (a cache fetch): the first access under it must be a store by a
 * block that does not read the buffer; otherwise it is relaxed too.
 */
#include "targets/cuda_internal.h"
#include "targets/lower_internal.h"

#include <string.h>

typedef struct acc {
  mlc_expr **idx;       /* in loop vars */
  mlc_stmt **loops;     /* enclosing loops, outermost first */
  int n_loops;
  const mlc_expr *pred; /* the block's T.where in loop vars, or NULL */
  const mlc_block *blk;
  bool write;
} acc;

typedef struct pctx {
  mlc_arena *a;
  const mlc_buffer *buf;
  MLC_VEC(mlc_stmt *) stack;
  MLC_VEC(acc) accs;
  const mlc_expr *pred;
  const mlc_block *blk;
  bool bad; /* an access outside any block, or in loop bounds */
} pctx;

static void record(pctx *pc, mlc_expr **idx, bool write) {
  acc r = {idx, NULL, pc->stack.len, pc->pred, pc->blk, write};
  r.loops = MLC_NEW_ARRAY(pc->a, mlc_stmt *, pc->stack.len + 1);
  for (int i = 0; i < pc->stack.len; i++) r.loops[i] = pc->stack.data[i];
  MLC_VEC_APUSH(pc->a, pc->accs, r);
}

static void on_load(const mlc_expr *e, void *ud) {
  pctx *pc = ud;
  if (e->kind == MLC_EXPR_LOAD && e->load.buf == pc->buf) record(pc, e->load.indices, false);
}

static void on_bound_load(const mlc_expr *e, void *ud) {
  pctx *pc = ud;
  if (e->kind == MLC_EXPR_LOAD && e->load.buf == pc->buf) pc->bad = true;
}

static void walk(pctx *pc, mlc_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR:
    lower_visit_expr(s->loop.min, on_bound_load, pc);
    lower_visit_expr(s->loop.extent, on_bound_load, pc);
    MLC_VEC_APUSH(pc->a, pc->stack, s);
    walk(pc, s->loop.body);
    pc->stack.len--;
    return;
  case MLC_STMT_BLOCK_REALIZE: {
    const mlc_block *b = s->realize.block;
    int n = b->n_iters;
    mlc_var **vars = MLC_NEW_ARRAY(pc->a, mlc_var *, n + 1);
    for (int i = 0; i < n; i++) vars[i] = b->iters[i].var;
    mlc_expr **vals = s->realize.values;
    const mlc_expr *saved_pred = pc->pred;
    const mlc_block *saved_blk = pc->blk;
    pc->pred = s->realize.predicate;
    pc->blk = b;
    if (b->init) walk(pc, n ? mlc_stmt_subst(pc->a, b->init, n, vars, vals) : b->init);
    walk(pc, n ? mlc_stmt_subst(pc->a, b->body, n, vars, vals) : b->body);
    pc->pred = saved_pred;
    pc->blk = saved_blk;
    return;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) walk(pc, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    lower_visit_exprs(s, on_load, pc);
    if (s->store.buf == pc->buf) record(pc, s->store.indices, true);
    return;
  case MLC_STMT_IF:
    lower_visit_expr(s->if_.cond, on_load, pc);
    walk(pc, s->if_.then_s);
    walk(pc, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: walk(pc, s->alloc.body); return;
  case MLC_STMT_EVALUATE: lower_visit_exprs(s, on_load, pc); return;
  }
  mlc_unreachable();
}

/* ---- regions ------------------------------------------------------------------ */

static bool relaxed_thread(const mlc_stmt *l) {
  const char *t = l->loop.thread;
  return l->loop.kind == MLC_FOR_THREAD_BINDING && t &&
         (strncmp(t, "threadIdx", 9) == 0 || strncmp(t, "vthread", 7) == 0);
}

static bool is_block_axis(const mlc_stmt *l) {
  return l->loop.kind == MLC_FOR_THREAD_BINDING && l->loop.thread &&
         strncmp(l->loop.thread, "blockIdx", 8) == 0;
}

/* Narrow hi by a predicate term q < C (q <= C) with e - q free of relaxed
 * vars: e - base = q - q_min there. */
static void narrow(mlc_arena *a, const mlc_expr *p, mlc_expr *e, int nr, mlc_var **rv,
                   mlc_expr **rmin, int64_t *hi) {
  if (!p) return;
  if (p->kind == MLC_EXPR_AND) {
    narrow(a, p->bin.a, e, nr, rv, rmin, hi);
    narrow(a, p->bin.b, e, nr, rv, rmin, hi);
    return;
  }
  int64_t c, qmin;
  if ((p->kind != MLC_EXPR_LT && p->kind != MLC_EXPR_LE) || !mlc_expr_is_const_int(p->bin.b, &c))
    return;
  mlc_expr *q = p->bin.a;
  if (q->dtype != e->dtype) return;
  mlc_expr *rest = mlc_simplify_expr(a, mlc_sub(a, e, q));
  for (int i = 0; i < nr; i++)
    if (mlc_expr_uses_var(rest, rv[i])) return;
  mlc_expr *q0 = mlc_simplify_expr(a, mlc_expr_subst(a, q, nr, rv, rmin));
  if (!mlc_expr_is_const_int(q0, &qmin)) return;
  int64_t lim = (p->kind == MLC_EXPR_LT ? c - 1 : c) - qmin;
  if (lim < *hi) *hi = lim;
}

/* Region of access r in dimension d: *start (expression of fixed vars) and
 * [0, *len). False when it cannot be bounded. */
static bool access_dim(mlc_arena *a, const acc *r, int d, int lca, bool trust_serial,
                       mlc_expr **start, int64_t *len) {
  mlc_expr *e = r->idx[d];
  mlc_simplifier *simp = mlc_simplifier_new(a);
  mlc_var **rv = MLC_NEW_ARRAY(a, mlc_var *, r->n_loops + 1);
  mlc_expr **rmin = MLC_NEW_ARRAY(a, mlc_expr *, r->n_loops + 1);
  int nr = 0;
  for (int i = 0; i < r->n_loops; i++) {
    const mlc_stmt *l = r->loops[i];
    bool relaxed = i >= lca || relaxed_thread(l) || (!trust_serial && !is_block_axis(l));
    int64_t lo, ext;
    bool konst = mlc_expr_is_const_int(l->loop.min, &lo) && mlc_expr_is_const_int(l->loop.extent, &ext);
    if (konst) mlc_simplifier_bind(simp, l->loop.var, lo, ext);
    if (!relaxed || !mlc_expr_uses_var(e, l->loop.var)) continue;
    if (!konst) return false;
    rv[nr] = l->loop.var;
    rmin[nr++] = mlc_int_t(a, l->loop.var->dtype, lo);
  }
  mlc_expr *base = mlc_simplify_expr(a, nr ? mlc_expr_subst(a, e, nr, rv, rmin) : e);
  mlc_expr *diff = mlc_simplify_expr(a, mlc_sub(a, e, base));
  int64_t lo, hi;
  if (!mlc_simplifier_bounds(simp, diff, &lo, &hi)) return false;
  narrow(a, r->pred, e, nr, rv, rmin, &hi);
  if (hi < lo) hi = lo;
  *start = mlc_simplify_expr(a, mlc_add(a, base, mlc_int_t(a, base->dtype, lo)));
  *len = hi - lo + 1;
  return true;
}

/* Per dimension: offset (NULL: unchanged) and new extent. False: no change. */
static bool compact(mlc_arena *a, const pctx *pc, mlc_expr **offset, int64_t *extent) {
  const mlc_buffer *b = pc->buf;
  int n = pc->accs.len;
  if (n == 0 || pc->bad) return false;
  int lca = pc->accs.data[0].n_loops;
  for (int k = 1; k < n; k++) {
    const acc *r = &pc->accs.data[k];
    int d = 0;
    while (d < lca && d < r->n_loops && r->loops[d] == pc->accs.data[0].loops[d]) d++;
    lca = d;
  }
  /* Serial loops of the prefix are fixed only for a fetch-then-use buffer. */
  const acc *first = &pc->accs.data[0];
  bool trust = first->write;
  for (int k = 1; k < n && trust; k++)
    if (pc->accs.data[k].blk == first->blk && !pc->accs.data[k].write) trust = false;
  bool changed = false;
  for (int d = 0; d < b->ndim; d++) {
    offset[d] = NULL;
    extent[d] = b->shape[d];
    mlc_expr *s0 = NULL;
    int64_t lo = 0, hi = 0;
    bool ok = true;
    for (int k = 0; k < n && ok; k++) {
      mlc_expr *s;
      int64_t len, off;
      ok = access_dim(a, &pc->accs.data[k], d, lca, trust, &s, &len);
      if (!ok) break;
      if (!s0) {
        s0 = s;
        lo = 0;
        hi = len - 1;
        continue;
      }
      ok = mlc_expr_const_diff(a, s, s0, &off);
      if (ok && off < lo) lo = off;
      if (ok && off + len - 1 > hi) hi = off + len - 1;
    }
    if (!ok || hi - lo + 1 >= b->shape[d]) continue;
    offset[d] = mlc_simplify_expr(a, mlc_add(a, s0, mlc_int_t(a, s0->dtype, lo)));
    extent[d] = hi - lo + 1;
    changed = true;
  }
  return changed;
}

/* ---- rewriting ------------------------------------------------------------------ */

typedef struct rctx {
  mlc_arena *a;
  const mlc_buffer *old; /* NULL: none replaced */
  mlc_buffer *new_;
  mlc_expr **offset;
  mlc_expr *(*index_fn)(void *ud, mlc_expr *index); /* NULL, or for 1-D accesses */
  void *ud;
} rctx;

static mlc_expr **shift(rctx *rc, mlc_expr **idx) {
  int n = rc->old->ndim;
  mlc_expr **out = MLC_NEW_ARRAY(rc->a, mlc_expr *, n);
  for (int d = 0; d < n; d++) {
    out[d] = idx[d];
    mlc_expr *off = rc->offset[d];
    if (!off) continue;
    if (off->dtype != idx[d]->dtype) off = mlc_cast(rc->a, idx[d]->dtype, off);
    out[d] = mlc_sub(rc->a, idx[d], off);
  }
  return out;
}

/* A load after its indices are rewritten: one-dimensional indices go
 * through index_fn, and loads of the old buffer read the new one. */
static mlc_expr *rw_load(mlc_arena *a, mlc_expr *e, void *ud) {
  rctx *rc = ud;
  if (e->kind != MLC_EXPR_LOAD) return e;
  mlc_expr **idx = e->load.indices;
  if (rc->index_fn && e->load.buf->ndim == 1) {
    idx = MLC_NEW_ARRAY(a, mlc_expr *, 1);
    idx[0] = rc->index_fn(rc->ud, e->load.indices[0]);
  }
  if (e->load.buf == rc->old) return mlc_load(a, rc->new_, shift(rc, idx));
  return idx == e->load.indices ? e : mlc_load(a, e->load.buf, idx);
}

static mlc_expr *rw_expr(rctx *rc, mlc_expr *e) { return mlc_expr_map(rc->a, e, rw_load, rc); }

static void rw_regions(rctx *rc, int n, mlc_region **regs) {
  mlc_region *out = MLC_NEW_ARRAY(rc->a, mlc_region, n + 1);
  for (int i = 0; i < n; i++) {
    out[i] = (*regs)[i];
    if (out[i].buf != rc->old) continue;
    out[i].buf = rc->new_;
    out[i].ranges = MLC_NEW_ARRAY(rc->a, mlc_range, rc->old->ndim);
    for (int d = 0; d < rc->old->ndim; d++) {
      mlc_range r = (*regs)[i].ranges[d];
      if (rc->offset[d]) {
        mlc_expr *off = rc->offset[d];
        if (off->dtype != r.min->dtype) off = mlc_cast(rc->a, r.min->dtype, off);
        r.min = mlc_sub(rc->a, r.min, off);
      }
      out[i].ranges[d] = r;
    }
  }
  *regs = out;
}

static mlc_stmt *rw_stmt(rctx *rc, mlc_stmt *s) {
  mlc_arena *a = rc->a;
  if (!s) return NULL;
  mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
  switch (s->kind) {
  case MLC_STMT_FOR:
    n->loop.body = rw_stmt(rc, s->loop.body);
    return n;
  case MLC_STMT_BLOCK_REALIZE: {
    mlc_block *b = mlc_arena_memdup(a, s->realize.block, sizeof *s->realize.block);
    b->init = rw_stmt(rc, b->init);
    b->body = rw_stmt(rc, b->body);
    rw_regions(rc, b->n_reads, &b->reads);
    rw_regions(rc, b->n_writes, &b->writes);
    if (b->n_allocs > 0) {
      b->allocs = mlc_arena_memdup(a, b->allocs, sizeof(mlc_buffer *) * (size_t)b->n_allocs);
      for (int i = 0; i < b->n_allocs; i++)
        if (b->allocs[i] == rc->old) b->allocs[i] = rc->new_;
    }
    n->realize.block = b;
    return n;
  }
  case MLC_STMT_SEQ:
    n->seq.stmts = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) n->seq.stmts[i] = rw_stmt(rc, s->seq.stmts[i]);
    return n;
  case MLC_STMT_STORE: {
    int nd = s->store.buf->ndim;
    mlc_expr **idx = MLC_NEW_ARRAY(a, mlc_expr *, nd);
    for (int i = 0; i < nd; i++) idx[i] = rw_expr(rc, s->store.indices[i]);
    if (rc->index_fn && nd == 1) idx[0] = rc->index_fn(rc->ud, idx[0]);
    n->store.value = rw_expr(rc, s->store.value);
    n->store.indices = idx;
    if (s->store.buf == rc->old) {
      n->store.buf = rc->new_;
      n->store.indices = shift(rc, idx);
    }
    return n;
  }
  case MLC_STMT_IF:
    n->if_.cond = rw_expr(rc, s->if_.cond);
    n->if_.then_s = rw_stmt(rc, s->if_.then_s);
    n->if_.else_s = rw_stmt(rc, s->if_.else_s);
    return n;
  case MLC_STMT_ALLOCATE:
    n->alloc.body = rw_stmt(rc, s->alloc.body);
    return n;
  case MLC_STMT_EVALUATE:
    n->eval.value = rw_expr(rc, s->eval.value);
    return n;
  }
  mlc_unreachable();
}

mlc_stmt *cuda_replace_buffer(mlc_arena *a, mlc_stmt *s, const mlc_buffer *old, mlc_buffer *new_,
                              mlc_expr **offset) {
  rctx rc = {a, old, new_, offset, NULL, NULL};
  return rw_stmt(&rc, s);
}

mlc_stmt *cuda_rewrite_indices(mlc_arena *a, mlc_stmt *s, mlc_expr *(*fn)(void *ud, mlc_expr *index),
                               void *ud) {
  rctx rc = {a, NULL, NULL, NULL, fn, ud};
  return rw_stmt(&rc, s);
}

static bool is_extern(const mlc_expr *e, void *ud) {
  MLC_UNUSED(ud);
  return e->kind == MLC_EXPR_CALL_EXTERN;
}

/* The first T.call_extern under s (its name), or NULL. */
/* The external call st itself makes (its name, or where it is). */
static const char *node_extern(const mlc_stmt *s) {
  if (s->kind == MLC_STMT_STORE && mlc_expr_any(s->store.value, is_extern, NULL))
    return "(in a store)";
  if (s->kind != MLC_STMT_EVALUATE) return NULL;
  return s->eval.value->kind == MLC_EXPR_CALL_EXTERN ? s->eval.value->ext.name
         : mlc_expr_any(s->eval.value, is_extern, NULL) ? "(in an expression)" : NULL;
}

static bool has_extern(const mlc_stmt *s, void *ud) {
  return (*(const char **)ud = node_extern(s)) != NULL;
}

static const char *find_extern(const mlc_stmt *s) {
  const char *name = NULL;
  mlc_stmt_any(s, has_extern, &name);
  return name;
}

const mlc_prim_func *cuda_prepare(mlc_arena *a, const mlc_prim_func *f, mlc_error *err) {
  const char *ext = find_extern(f->body);
  if (ext) {
    mlc_error_set(err, "%s: T.call_extern %s: external functions are not supported on cuda",
                  f->name, ext);
    return NULL;
  }
  if (!f->body || f->body->kind != MLC_STMT_BLOCK_REALIZE) return f; /* lowering says why */
  /* (cross-thread reductions after the compaction, which need not see
   * their buffers: each is indexed by the thread alone) */
  const mlc_block *root = f->body->realize.block;
  mlc_stmt *body = f->body;
  for (int i = 0; i < root->n_allocs; i++) {
    mlc_buffer *b = root->allocs[i];
    if (strncmp(b->scope, "shared", 6) != 0) continue;
    pctx pc = {.a = a, .buf = b};
    walk(&pc, body);
    mlc_expr **offset = MLC_NEW_ARRAY(a, mlc_expr *, b->ndim);
    int64_t *extent = MLC_NEW_ARRAY(a, int64_t, b->ndim);
    if (!compact(a, &pc, offset, extent)) continue;
    mlc_buffer *nb = mlc_buffer_new(a, b->name, b->dtype, b->ndim, extent, b->scope);
    body = cuda_replace_buffer(a, body, b, nb, offset);
  }
  if (body == f->body) return cuda_lower_allreduce(a, f, err);
  mlc_prim_func *out = mlc_arena_memdup(a, f, sizeof *f);
  out->body = body;
  return cuda_lower_allreduce(a, out, err);
}
