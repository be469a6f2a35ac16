/* mlc_target_lower: blocks -> plain loops over flat buffers.
 *
 * The pipeline is three passes (lower_internal.h). This file has the
 * driver and pass 1: every block realize becomes its body with the iter
 * vars replaced by their bindings, guarded by T.where, with the init
 * statement run first under "every reduce iter var is at its minimum", and
 * wrapped in an ALLOCATE per alloc_buffer of the block. When the block
 * sits at the bottom of a chain of loops and that is provably the same
 * (hoist_init), its init is instead hoisted out of the reduce loops (as
 * decompose_reduction would do), so the reduction loops carry no guard and
 * LLVM can keep accumulators in registers. The root block's allocs are
 * collected for pass 2, which places them.
 */
#include "targets/lower_internal.h"

static mlc_stmt *lower_stmt(lower_state *st, const mlc_stmt *s);

static bool is_true(const mlc_expr *e) {
  return e == NULL || (e->kind == MLC_EXPR_INT_IMM && e->int_val != 0);
}

typedef struct writes_ctx {
  mlc_arena *a;
  void *vec; /* MLC_VEC(const mlc_buffer *) */
} writes_ctx;

/* Buffers an external call writes through its pointer arguments. */
static void extern_writes(const mlc_expr *e, void *ud) {
  writes_ctx *w = ud;
  MLC_VEC(const mlc_buffer *) *out = w->vec;
  if (e->kind != MLC_EXPR_CALL_EXTERN) return;
  for (int i = 0; i < e->ext.n_args; i++) {
    const mlc_xarg *x = &e->ext.args[i];
    if (x->kind != MLC_XARG_PTR || !(x->access & MLC_ACCESS_WRITE)) continue;
    bool seen = false;
    for (int k = 0; k < out->len && !seen; k++) seen = out->data[k] == x->buf;
    if (!seen) MLC_VEC_APUSH(w->a, *out, x->buf);
  }
}

/* Buffers stored to anywhere under s, nested blocks included. */
static void node_stores(const mlc_stmt *s, void *ud) {
  writes_ctx *w = ud;
  MLC_VEC(const mlc_buffer *) *out = w->vec;
  if (s->kind == MLC_STMT_EVALUATE) mlc_expr_visit(s->eval.value, extern_writes, w);
  if (s->kind != MLC_STMT_STORE) return;
  for (int i = 0; i < out->len; i++)
    if (out->data[i] == s->store.buf) return;
  MLC_VEC_APUSH(w->a, *out, s->store.buf);
}

static void stored_buffers(mlc_arena *a, const mlc_stmt *s, void *vec) {
  writes_ctx w = {a, vec};
  mlc_stmt_visit(s, node_stores, &w);
}

/* A reduction block accumulates into what it stores over every enclosing
 * loop its reduce bindings depend on (vk = k0 * 4 + k1: both k0 and k1). */
static void record_carries(lower_state *st, const mlc_block *b, mlc_expr *const *vals,
                           const mlc_stmt *body, const mlc_stmt *init) {
  MLC_VEC(const mlc_buffer *) bufs = {0};
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
    for (int l = 0; l < st->loops.len; l++) {
      mlc_stmt *loop = st->loops.data[l];
      if (!mlc_expr_uses_var(vals[i], loop->loop.var)) continue;
      if (bufs.len == 0) {
        stored_buffers(st->a, body, &bufs);
        stored_buffers(st->a, init, &bufs);
      }
      for (int k = 0; k < bufs.len; k++) {
        lower_carry c = {bufs.data[k], loop};
        MLC_VEC_APUSH(st->a, st->carries, c);
      }
    }
  }
}

/* "binding == min" as "each loop the binding uses is at its first
 * iteration", when that is equivalent: the binding is affine with a
 * positive constant stride in each of those loops (constant mins), and
 * equals min when they all start. vk = k0 * 8 + k1 == 0 becomes k0 == 0
 * and k1 == 0, which LLVM folds in every unrolled or peeled iteration of
 * k1 but the first, so the guarded init store no longer blocks keeping the
 * accumulator in registers. NULL when not provably equivalent. */
static mlc_expr *first_iteration_guard(lower_state *st, mlc_expr *val, mlc_expr *min) {
  mlc_arena *a = st->a;
  int n = 0;
  mlc_var **vars = MLC_NEW_ARRAY(a, mlc_var *, st->loops.len + 1);
  mlc_expr **mins = MLC_NEW_ARRAY(a, mlc_expr *, st->loops.len + 1);
  for (int l = 0; l < st->loops.len; l++) {
    mlc_stmt *loop = st->loops.data[l];
    mlc_var *v = loop->loop.var;
    if (!mlc_expr_uses_var(val, v)) continue;
    int64_t lo, step;
    if (!mlc_expr_is_const_int(loop->loop.min, &lo) || !mlc_expr_var_stride(a, val, v, &step) ||
        step <= 0)
      return NULL;
    vars[n] = v;
    mins[n++] = mlc_int_t(a, v->dtype, lo);
  }
  int64_t d;
  mlc_expr *start = n ? mlc_expr_subst(a, val, n, vars, mins) : val;
  /* Every var of the binding must be one of those loops. */
  for (int i = 0; i < n; i++) MLC_ASSERT(!mlc_expr_uses_var(start, vars[i]));
  if (!mlc_expr_const_diff(a, start, min, &d) || d != 0) return NULL;
  mlc_expr *guard = NULL;
  for (int i = 0; i < n; i++) {
    mlc_expr *eq = mlc_binary(a, MLC_EXPR_EQ, mlc_ref(a, vars[i]), mins[i]);
    guard = guard ? mlc_binary(a, MLC_EXPR_AND, guard, eq) : eq;
  }
  return guard ? guard : mlc_bool(a, true);
}

/* "Every reduce iter var at the start of its domain", simplified; NULL when
 * always true (no reduce iter vars, or bindings that are constants). */
static mlc_expr *init_guard(lower_state *st, const mlc_block *b, mlc_expr *const *vals) {
  mlc_expr *guard = NULL;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
    mlc_expr *min = b->iters[i].dom.min;
    if (min->dtype != vals[i]->dtype) min = mlc_cast(st->a, vals[i]->dtype, min);
    mlc_expr *eq = first_iteration_guard(st, vals[i], min);
    if (!eq) eq = mlc_binary(st->a, MLC_EXPR_EQ, vals[i], min);
    eq = mlc_simplify_expr(st->a, eq);
    if (is_true(eq)) continue;
    guard = guard ? mlc_binary(st->a, MLC_EXPR_AND, guard, eq) : eq;
  }
  return guard;
}

/* ---- when hoisting the init is equivalent -------------------------------- */

typedef struct var_use {
  mlc_var *const *vars;
  int n;
  bool found;
} var_use;

static void note_var(const mlc_expr *e, void *ud) {
  var_use *u = ud;
  if (e->kind != MLC_EXPR_VAR) return;
  for (int i = 0; i < u->n; i++)
    if (e->var == u->vars[i]) u->found = true;
}

/* Does s (nested statements and blocks included) refer to any of vars? */
static bool stmt_uses_vars(const mlc_stmt *s, var_use *u) {
  if (!s || u->found) return u->found;
  switch (s->kind) {
  case MLC_STMT_FOR:
    lower_visit_exprs(s, note_var, u);
    return stmt_uses_vars(s->loop.body, u);
  case MLC_STMT_BLOCK_REALIZE:
    for (int i = 0; i < s->realize.block->n_iters; i++)
      lower_visit_expr(s->realize.values[i], note_var, u);
    if (s->realize.predicate) lower_visit_expr(s->realize.predicate, note_var, u);
    stmt_uses_vars(s->realize.block->init, u);
    return stmt_uses_vars(s->realize.block->body, u);
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) stmt_uses_vars(s->seq.stmts[i], u);
    return u->found;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE:
    lower_visit_exprs(s, note_var, u);
    return u->found;
  case MLC_STMT_IF:
    lower_visit_exprs(s, note_var, u);
    stmt_uses_vars(s->if_.then_s, u);
    return stmt_uses_vars(s->if_.else_s, u);
  case MLC_STMT_ALLOCATE: return stmt_uses_vars(s->alloc.body, u);
  }
  mlc_unreachable();
}

/* TensorIR runs the init whenever every reduce iter var is at its
 * minimum. That is "at the first iteration of every reduce loop" only when
 * each reduce binding is affine with positive strides in its loops and
 * starts at the minimum (vk = k0 * 8 + k1, not vk = floordiv(k * k, 2),
 * which is 0 at k = 0 and k = 1, nor vk = 15 - k, which is 0 last). */
static bool init_runs_first(lower_state *st, const mlc_block *b, mlc_expr *const *vals) {
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
    mlc_expr *min = b->iters[i].dom.min;
    if (min->dtype != vals[i]->dtype) min = mlc_cast(st->a, vals[i]->dtype, min);
    if (!first_iteration_guard(st, vals[i], min)) return false;
  }
  return true;
}

/* The stores of s when s is made of stores only (what the injectivity and
 * same-element checks below can reason about); false otherwise. */
static bool plain_stores(mlc_arena *a, const mlc_stmt *s, void *vec) {
  MLC_VEC(const mlc_stmt *) *out = vec;
  if (s->kind == MLC_STMT_STORE) {
    MLC_VEC_APUSH(a, *out, s);
    return true;
  }
  if (s->kind != MLC_STMT_SEQ) return false;
  for (int i = 0; i < s->seq.n; i++)
    if (!plain_stores(a, s->seq.stmts[i], vec)) return false;
  return true;
}

/* The copied spatial loops (vars, constant extents ext) between the
 * hoisted init and the block. */
typedef struct copied_loops {
  mlc_var **vars;
  int64_t *ext;
  int n;
} copied_loops;

/* Is the index tuple idx (ndim entries) injective over the copied loops?
 * Each entry must be affine in them with constant strides; the loops an
 * entry uses must be mixed-radix there (each stride exceeds the span of the
 * smaller ones), and every loop of extent > 1 must be used by some entry. */
static bool injective_indices(mlc_arena *a, mlc_expr **idx, int ndim, const copied_loops *cl) {
  bool *used = MLC_NEW_ARRAY(a, bool, cl->n + 1);
  int64_t *strides = MLC_NEW_ARRAY(a, int64_t, cl->n + 1);
  int64_t *spans = MLC_NEW_ARRAY(a, int64_t, cl->n + 1);
  for (int d = 0; d < ndim; d++) {
    int m = 0;
    for (int l = 0; l < cl->n; l++) {
      mlc_var *v = cl->vars[l];
      if (!mlc_expr_uses_var(idx[d], v)) continue;
      int64_t step;
      if (!mlc_expr_var_stride(a, idx[d], v, &step)) return false;
      if (step == 0 || cl->ext[l] == 1) continue;
      used[l] = true;
      /* Insert by |stride| so the check below runs smallest first. */
      int64_t as = step < 0 ? -step : step;
      int k = m++;
      for (; k > 0 && strides[k - 1] > as; k--) {
        strides[k] = strides[k - 1];
        spans[k] = spans[k - 1];
      }
      strides[k] = as;
      spans[k] = as * (cl->ext[l] - 1);
    }
    int64_t reach = 0;
    for (int k = 0; k < m; k++) {
      if (strides[k] <= reach) return false;
      reach += spans[k];
    }
  }
  for (int l = 0; l < cl->n; l++)
    if (cl->ext[l] > 1 && !used[l]) return false;
  return true;
}

typedef struct same_elem {
  mlc_arena *a;
  const mlc_stmt *const *inits; /* the init's stores */
  int n;
  bool ok;
} same_elem;

/* An access of a buffer the init stores to must touch the element the init
 * stores (the accumulator), so no update reaches another point's
 * accumulator before its hoisted init. */
static void check_same_elem(same_elem *se, const mlc_buffer *buf, mlc_expr **idx) {
  for (int i = 0; i < se->n; i++) {
    const mlc_stmt *in = se->inits[i];
    if (in->store.buf != buf) continue;
    for (int d = 0; d < buf->ndim; d++) {
      int64_t diff;
      if (!mlc_expr_const_diff(se->a, idx[d], in->store.indices[d], &diff) || diff != 0)
        se->ok = false;
    }
  }
}

static void same_elem_load(const mlc_expr *e, void *ud) {
  if (e->kind == MLC_EXPR_LOAD) check_same_elem(ud, e->load.buf, e->load.indices);
}

/* With spatial loops between the reduce loops (k0, i, k1), the original
 * runs the init of point i after the updates of the points before it; the
 * hoist runs all inits first. Equivalent when distinct points of those
 * loops have distinct accumulators (the init's indices are injective over
 * them) and the updates touch only their own accumulator. */
static bool inits_first_ok(mlc_arena *a, const mlc_stmt *init, const mlc_stmt *body,
                           const copied_loops *cl) {
  bool any = false;
  for (int l = 0; l < cl->n; l++) any |= cl->ext[l] != 1;
  if (!any) return true;
  MLC_VEC(const mlc_stmt *) inits = {0};
  MLC_VEC(const mlc_stmt *) updates = {0};
  if (!plain_stores(a, init, &inits) || !plain_stores(a, body, &updates)) return false;
  for (int i = 0; i < inits.len; i++)
    if (!injective_indices(a, inits.data[i]->store.indices, inits.data[i]->store.buf->ndim, cl))
      return false;
  same_elem se = {a, inits.data, inits.len, true};
  for (int i = 0; i < updates.len; i++) {
    const mlc_stmt *u = updates.data[i];
    check_same_elem(&se, u->store.buf, u->store.indices);
    lower_visit_exprs(u, same_elem_load, &se);
  }
  return se.ok;
}

/* Hoisting the init of block b (realize s, bindings vals, init with the
 * bindings substituted) before the outermost loop its reduce bindings use,
 * under copies of the spatial loops between. Valid when it is provably
 * what TensorIR does: the loops from there down form a chain ending in s
 * (nothing else runs between the init and the updates), spatial bindings
 * and loop bounds do not depend on reduce loops, the block reads no part
 * of its output besides the accumulation, the init runs exactly at the
 * first iteration of the reduce loops (init_runs_first), the init does not
 * depend on the reduce loops (B[vk] = 0 writes a different element at each
 * vk), and spatial loops between keep their own accumulators
 * (inits_first_ok). Registers the hoist and returns true, or returns false
 * and changes nothing. */
static bool hoist_init(lower_state *st, const mlc_stmt *s, const mlc_block *b,
                       mlc_expr *const *vals, mlc_stmt *init, const mlc_stmt *body) {
  mlc_arena *a = st->a;
  int n = st->loops.len, outer = -1;
  if (n == 0 || b->n_allocs > 0 || b->n_writes != 1) return false;
  if (!init_runs_first(st, b, vals)) return false;
  for (int i = 0; i < b->n_reads; i++)
    if (b->reads[i].buf == b->writes[0].buf) return false;
  bool *is_r = MLC_NEW_ARRAY(a, bool, n);
  for (int l = 0; l < n; l++) {
    mlc_var *v = st->loops.data[l]->loop.var;
    for (int i = 0; i < b->n_iters; i++)
      if (b->iters[i].kind == MLC_ITER_REDUCE && mlc_expr_uses_var(vals[i], v)) is_r[l] = true;
    for (int i = 0; i < b->n_iters && is_r[l]; i++)
      if (b->iters[i].kind == MLC_ITER_SPATIAL && mlc_expr_uses_var(vals[i], v)) return false;
    if (is_r[l] && outer < 0) outer = l;
  }
  if (outer < 0) return false;
  int nr = 0;
  mlc_var **rvars = MLC_NEW_ARRAY(a, mlc_var *, n);
  mlc_expr **rmins = MLC_NEW_ARRAY(a, mlc_expr *, n);
  for (int l = outer; l < n; l++) {
    const mlc_stmt *o = st->orig_loops.data[l];
    if (o->loop.kind == MLC_FOR_THREAD_BINDING) return false;
    if (o->loop.body != (l + 1 < n ? st->orig_loops.data[l + 1] : s)) return false;
    for (int r = 0; r < nr; r++)
      if (mlc_expr_uses_var(o->loop.min, rvars[r]) || mlc_expr_uses_var(o->loop.extent, rvars[r]))
        return false;
    if (is_r[l]) {
      rvars[nr] = o->loop.var;
      rmins[nr++] = o->loop.min;
    }
  }
  var_use u = {rvars, nr, false};
  if (stmt_uses_vars(init, &u)) return false;
  copied_loops cl = {MLC_NEW_ARRAY(a, mlc_var *, n), MLC_NEW_ARRAY(a, int64_t, n), 0};
  for (int l = outer; l < n; l++) {
    const mlc_stmt *o = st->orig_loops.data[l];
    if (is_r[l]) continue;
    if (!mlc_expr_is_const_int(o->loop.extent, &cl.ext[cl.n])) return false;
    cl.vars[cl.n++] = o->loop.var;
  }
  if (!inits_first_ok(a, init, body, &cl)) return false;
  mlc_stmt *li = lower_stmt(st, init);
  mlc_expr *pred = s->realize.predicate;
  if (!is_true(pred)) pred = mlc_simplify_expr(a, mlc_expr_subst(a, pred, nr, rvars, rmins));
  if (!is_true(pred)) li = mlc_if_new(a, pred, li, NULL);
  for (int l = n - 1; l >= outer; l--) {
    if (is_r[l]) continue;
    const mlc_stmt *o = st->loops.data[l];
    mlc_stmt *copy = mlc_for_new(a, o->loop.var, o->loop.min, o->loop.extent, o->loop.kind, li);
    copy->loop.thread = o->loop.thread;
    copy->loop.n_anns = o->loop.n_anns;
    copy->loop.anns = o->loop.anns;
    li = copy;
  }
  lower_hoist h = {st->loops.data[outer], li};
  MLC_VEC_APUSH(a, st->hoists, h);
  return true;
}

static mlc_stmt *lower_realize(lower_state *st, const mlc_stmt *s) {
  const mlc_block *b = s->realize.block;
  mlc_arena *a = st->a;
  int n = b->n_iters;
  mlc_expr *const *vals = s->realize.values;
  mlc_stmt *body = b->body, *init = b->init;
  if (n > 0) {
    mlc_var **vars = MLC_NEW_ARRAY(a, mlc_var *, n);
    for (int i = 0; i < n; i++) vars[i] = b->iters[i].var;
    body = mlc_stmt_subst(a, body, n, vars, (mlc_expr **)vals);
    if (init) init = mlc_stmt_subst(a, init, n, vars, (mlc_expr **)vals);
  }
  record_carries(st, b, vals, body, init);
  mlc_stmt *out = lower_stmt(st, body);
  if (init && !hoist_init(st, s, b, vals, init, body)) {
    mlc_stmt *li = lower_stmt(st, init);
    mlc_expr *guard = init_guard(st, b, vals);
    if (guard) li = mlc_if_new(a, guard, li, NULL);
    out = mlc_seq_new(a, 2, (mlc_stmt *[]){li, out});
  }
  for (int i = b->n_allocs - 1; i >= 0; i--) out = mlc_allocate_new(a, b->allocs[i], out);
  if (!is_true(s->realize.predicate)) out = mlc_if_new(a, s->realize.predicate, out, NULL);
  return out;
}

static mlc_stmt *lower_for(lower_state *st, const mlc_stmt *s) {
  mlc_stmt *n = mlc_for_new(st->a, s->loop.var, s->loop.min, s->loop.extent, s->loop.kind, NULL);
  n->loop.thread = s->loop.thread;
  n->loop.n_anns = s->loop.n_anns;
  n->loop.anns = s->loop.anns;
  MLC_VEC_APUSH(st->a, st->loops, n);
  MLC_VEC_APUSH(st->a, st->orig_loops, s);
  n->loop.body = lower_stmt(st, s->loop.body);
  st->loops.len--;
  st->orig_loops.len--;
  for (int i = 0; i < st->hoists.len; i++)
    if (st->hoists.data[i].loop == n) return mlc_seq_new(st->a, 2, (mlc_stmt *[]){st->hoists.data[i].init, n});
  return n;
}

static mlc_stmt *lower_stmt(lower_state *st, const mlc_stmt *s) {
  mlc_arena *a = st->a;
  switch (s->kind) {
  case MLC_STMT_FOR: return lower_for(st, s);
  case MLC_STMT_BLOCK_REALIZE: return lower_realize(st, s);
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) kids[i] = lower_stmt(st, s->seq.stmts[i]);
    return mlc_seq_new(a, s->seq.n, kids);
  }
  case MLC_STMT_STORE: return (mlc_stmt *)s;
  case MLC_STMT_IF:
    return mlc_if_new(a, s->if_.cond, lower_stmt(st, s->if_.then_s),
                      s->if_.else_s ? lower_stmt(st, s->if_.else_s) : NULL);
  case MLC_STMT_ALLOCATE:
    return mlc_allocate_new(a, s->alloc.buf, lower_stmt(st, s->alloc.body));
  case MLC_STMT_EVALUATE: return (mlc_stmt *)s;
  }
  mlc_unreachable();
}

static bool not_plain(const mlc_expr *e, void *ud) {
  MLC_UNUSED(ud);
  return e->kind == MLC_EXPR_LOAD || e->kind == MLC_EXPR_CALL_EXTERN;
}

/* `for v: if c: S` whose guard does not use v (a block's T.where that
 * depends only on outer loops, as a split of a symbolic extent leaves) is
 * `if c: for v: S`, so the loop, often vectorized, runs unguarded. Only
 * guards of plain arithmetic move: one that loads could read where a loop
 * that never runs would not. */
static mlc_stmt *hoist_guard(mlc_arena *a, mlc_stmt *s, void *ud) {
  MLC_UNUSED(ud);
  if (s->kind != MLC_STMT_FOR || s->loop.body->kind != MLC_STMT_IF || s->loop.body->if_.else_s)
    return s;
  const mlc_stmt *g = s->loop.body;
  if (mlc_expr_uses_var(g->if_.cond, s->loop.var) || mlc_expr_any(g->if_.cond, not_plain, NULL))
    return s;
  mlc_stmt *loop = mlc_arena_memdup(a, s, sizeof *s);
  loop->loop.body = g->if_.then_s;
  return mlc_if_new(a, g->if_.cond, loop, NULL);
}

/* ---- full tiles and the tail -------------------------------------------------------- */

/* A loop whose body guards its blocks with tails (`i0 * 32 + i1 * 8 + i2
 * < n`: splits of a symbolic extent) runs its body twice over: once
 * unguarded, for iterations where every guard holds at every inner
 * iteration (all but the last tile), and once as it was. */
typedef struct tail_ctx {
  mlc_arena *a;
  const mlc_var *outer;         /* the loop being specialized */
  MLC_VEC(const mlc_stmt *) inner; /* loops inside it, constant ranges */
  MLC_VEC(const mlc_stmt *) symbolic; /* loops inside it of other ranges */
  MLC_VEC(mlc_expr *) full;     /* conditions that make every dropped guard true */
  MLC_VEC(const mlc_expr *) dropped;
} tail_ctx;

static bool uses_loop_of(const mlc_expr *e, int n, const mlc_stmt *const *loops) {
  for (int i = 0; i < n; i++)
    if (mlc_expr_uses_var(e, loops[i]->loop.var)) return true;
  return false;
}

static bool uses_inner(const tail_ctx *c, const mlc_expr *e) {
  return uses_loop_of(e, c->inner.len, c->inner.data) ||
         uses_loop_of(e, c->symbolic.len, c->symbolic.data);
}

/* The largest value of e over the inner loops (e linear in each), or NULL. */
static mlc_expr *inner_max(tail_ctx *c, mlc_expr *e) {
  mlc_arena *a = c->a;
  for (int i = 0; i < c->inner.len; i++) {
    const mlc_stmt *l = c->inner.data[i];
    mlc_var *v = l->loop.var;
    if (!mlc_expr_uses_var(e, v)) continue;
    mlc_expr *next = mlc_add(a, mlc_ref(a, v), mlc_int_t(a, v->dtype, 1));
    int64_t step;
    if (!mlc_expr_const_diff(a, mlc_expr_subst(a, e, 1, &v, &next), e, &step)) return NULL;
    mlc_expr *last = mlc_sub(a, mlc_add(a, l->loop.min, l->loop.extent), mlc_int_t(a, v->dtype, 1));
    mlc_expr *at = step >= 0 ? last : l->loop.min;
    e = mlc_expr_subst(a, e, 1, &v, &at);
  }
  return mlc_simplify_expr(a, e);
}

static bool same_test(mlc_arena *a, mlc_expr *x, mlc_expr *y) {
  int64_t d1, d2;
  return x->kind == y->kind && x->bin.a->dtype == y->bin.a->dtype &&
         x->bin.b->dtype == y->bin.b->dtype && mlc_expr_const_diff(a, x->bin.a, y->bin.a, &d1) &&
         d1 == 0 && mlc_expr_const_diff(a, x->bin.b, y->bin.b, &d2) && d2 == 0;
}

/* A guard conjunct `x < y` (or <=) the tile test can stand for. */
static void tail_conjunct(tail_ctx *c, const mlc_expr *e) {
  if (e->kind == MLC_EXPR_AND) {
    tail_conjunct(c, e->bin.a);
    tail_conjunct(c, e->bin.b);
    return;
  }
  /* Only inner loops of constant ranges have a largest value to test. */
  if ((e->kind != MLC_EXPR_LT && e->kind != MLC_EXPR_LE) || !mlc_expr_uses_var(e, c->outer) ||
      uses_inner(c, e->bin.b) || uses_loop_of(e->bin.a, c->symbolic.len, c->symbolic.data) ||
      mlc_expr_any(e, not_plain, NULL))
    return;
  mlc_expr *top = inner_max(c, e->bin.a);
  if (!top) return;
  MLC_VEC_APUSH(c->a, c->dropped, e);
  mlc_expr *full = mlc_binary(c->a, e->kind, top, e->bin.b);
  for (int i = 0; i < c->full.len; i++) /* the init's guard and the update's are one */
    if (same_test(c->a, c->full.data[i], full)) return;
  MLC_VEC_APUSH(c->a, c->full, full);
}

static void tail_collect(const mlc_stmt *s, void *ud) {
  tail_ctx *c = ud;
  if (s->kind == MLC_STMT_FOR) {
    int64_t x;
    if (mlc_expr_is_const_int(s->loop.min, &x) && mlc_expr_is_const_int(s->loop.extent, &x))
      MLC_VEC_APUSH(c->a, c->inner, s);
    else MLC_VEC_APUSH(c->a, c->symbolic, s);
  }
}

static void tail_guards(const mlc_stmt *s, void *ud) {
  if (s->kind == MLC_STMT_IF && !s->if_.else_s) tail_conjunct(ud, s->if_.cond);
}

static bool is_dropped(const tail_ctx *c, const mlc_expr *e) {
  for (int i = 0; i < c->dropped.len; i++)
    if (c->dropped.data[i] == e) return true;
  return false;
}

/* cond without the dropped conjuncts; NULL when none is left. */
static mlc_expr *without_dropped(tail_ctx *c, mlc_expr *e) {
  if (is_dropped(c, e)) return NULL;
  if (e->kind != MLC_EXPR_AND) return e;
  mlc_expr *x = without_dropped(c, e->bin.a), *y = without_dropped(c, e->bin.b);
  if (!x || !y) return x ? x : y;
  return x == e->bin.a && y == e->bin.b ? e : mlc_binary(c->a, MLC_EXPR_AND, x, y);
}

static mlc_stmt *drop_guards(mlc_arena *a, mlc_stmt *s, void *ud) {
  if (s->kind != MLC_STMT_IF || s->if_.else_s) return s;
  mlc_expr *cond = without_dropped(ud, s->if_.cond);
  if (!cond) return s->if_.then_s;
  return cond == s->if_.cond ? s : mlc_if_new(a, cond, s->if_.then_s, NULL);
}

static mlc_stmt *split_tails(mlc_arena *a, mlc_stmt *s) {
  if (!s) return NULL;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    tail_ctx c = {.a = a, .outer = s->loop.var};
    mlc_stmt_visit(s->loop.body, tail_collect, &c);
    mlc_stmt_visit(s->loop.body, tail_guards, &c);
    mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
    if (c.full.len == 0) {
      n->loop.body = split_tails(a, s->loop.body);
      return n;
    }
    mlc_expr *full = c.full.data[0];
    for (int i = 1; i < c.full.len; i++) full = mlc_binary(a, MLC_EXPR_AND, full, c.full.data[i]);
    /* Inner loops of the full tiles may split again on their own tails (a
     * tile over two symbolic extents: full in both, or in this one only);
     * the tail runs as it was. */
    mlc_stmt *fast = split_tails(a, mlc_stmt_map(a, s->loop.body, drop_guards, &c));
    n->loop.body = mlc_if_new(a, full, fast, s->loop.body);
    return n;
  }
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) kids[i] = split_tails(a, s->seq.stmts[i]);
    return mlc_seq_new(a, s->seq.n, kids);
  }
  case MLC_STMT_IF:
    return mlc_if_new(a, s->if_.cond, split_tails(a, s->if_.then_s), split_tails(a, s->if_.else_s));
  case MLC_STMT_ALLOCATE: return mlc_allocate_new(a, s->alloc.buf, split_tails(a, s->alloc.body));
  case MLC_STMT_BLOCK_REALIZE:
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return s;
  }
  mlc_unreachable();
}

static mlc_prim_func *lower_func(mlc_arena *a, const mlc_prim_func *f, mlc_error *err) {
  const mlc_block *root = f->body->realize.block;
  lower_state st = {.a = a};
  for (int i = 0; i < root->n_allocs; i++) MLC_VEC_APUSH(a, st.root_allocs, root->allocs[i]);

  /* The root block has no iter vars, predicate or init worth lowering
   * differently from any other block; only its allocs are special. */
  mlc_stmt *body = lower_stmt(&st, root->body);
  if (root->init) body = mlc_seq_new(a, 2, (mlc_stmt *[]){lower_stmt(&st, root->init), body});
  body = lower_place_allocs(&st, body);
  body = mlc_stmt_map(a, body, hoist_guard, NULL);
  if (f->n_sizes > 0) body = split_tails(a, body);

  mlc_prim_func *out = mlc_func_new(a, f->name);
  out->n_attrs = f->n_attrs;
  out->attrs = f->attrs;
  out->n_params = f->n_params;
  out->n_sizes = f->n_sizes;
  out->sizes = f->sizes;
  out->params = MLC_NEW_ARRAY(a, mlc_buffer *, f->n_params > 0 ? f->n_params : 1);
  out->body = lower_flatten(a, body, f->n_params, f->params, out->params, err);
  if (!out->body) {
    mlc_error_prefix(err, "function %s", f->name);
    return NULL;
  }
  return out;
}

/* Lowering allocates in `a` only (the lowered tree, its scratch vectors, the
 * simplifiers' facts), as much as the function is big: one escape point on
 * `a` turns running out of memory anywhere in it into an error, and what
 * it took stays owned by `a`. The caller's own escape point is put back. */
mlc_prim_func *mlc_target_lower(mlc_arena *a, const mlc_prim_func *f, mlc_error *err) {
  if (!f->body || f->body->kind != MLC_STMT_BLOCK_REALIZE) {
    mlc_error_set(err, "function %s: body is not a root block", f->name);
    return NULL;
  }
  jmp_buf jb, *outer = mlc_arena_oom_jump(a);
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(a, outer);
    mlc_error_set(err, "function %s: out of memory lowering it", f->name);
    return NULL;
  }
  mlc_arena_set_oom_jump(a, &jb);
  mlc_prim_func *out = lower_func(a, f, err);
  mlc_arena_set_oom_jump(a, outer);
  return out;
}
