/* mlc_target_lower: blocks -> plain loops over flat buffers.
 *
 * The pipeline is three passes (lower_internal.h). This file has the
 * driver and pass 1: every block realize becomes its body with the iter
 * vars replaced by their bindings, guarded by T.where, with the init
 * statement run first under "every reduce iter var is at its minimum", and
 * wrapped in an ALLOCATE per alloc_buffer of the block. The root block's
 * allocs are collected for pass 2, which places them.
 */
#include "targets/lower_internal.h"

static mlc_stmt *lower_stmt(lower_state *st, const mlc_stmt *s);

static bool is_true(const mlc_expr *e) {
  return e == NULL || (e->kind == MLC_EXPR_INT_IMM && e->int_val != 0);
}

/* Buffers stored to anywhere under s, nested blocks included. */
static void stored_buffers(mlc_arena *a, const mlc_stmt *s, void *vec) {
  MLC_VEC(const mlc_buffer *) *out = vec;
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR: stored_buffers(a, s->loop.body, vec); return;
  case MLC_STMT_BLOCK_REALIZE:
    stored_buffers(a, s->realize.block->init, vec);
    stored_buffers(a, s->realize.block->body, vec);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) stored_buffers(a, s->seq.stmts[i], vec);
    return;
  case MLC_STMT_STORE:
    for (int i = 0; i < out->len; i++)
      if (out->data[i] == s->store.buf) return;
    MLC_VEC_APUSH(a, *out, s->store.buf);
    return;
  case MLC_STMT_IF:
    stored_buffers(a, s->if_.then_s, vec);
    stored_buffers(a, s->if_.else_s, vec);
    return;
  case MLC_STMT_ALLOCATE: stored_buffers(a, s->alloc.body, vec); return;
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
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
        MLC_VEC_PUSH(st->carries, c);
      }
    }
  }
}

/* "Every reduce iter var at the start of its domain", simplified; NULL when
 * always true (no reduce iter vars, or bindings that are constants). */
static mlc_expr *init_guard(lower_state *st, const mlc_block *b, mlc_expr *const *vals) {
  mlc_expr *guard = NULL;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
    mlc_expr *min = b->iters[i].dom.min;
    if (min->dtype != vals[i]->dtype) min = mlc_cast(st->a, vals[i]->dtype, min);
    mlc_expr *eq = mlc_simplify_expr(st->a, mlc_binary(st->a, MLC_EXPR_EQ, vals[i], min));
    if (is_true(eq)) continue;
    guard = guard ? mlc_binary(st->a, MLC_EXPR_AND, guard, eq) : eq;
  }
  return guard;
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
  if (init) {
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
  n->loop.body = lower_stmt(st, s->loop.body);
  st->loops.len--;
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

mlc_prim_func *mlc_target_lower(mlc_arena *a, const mlc_prim_func *f, mlc_error *err) {
  if (!f->body || f->body->kind != MLC_STMT_BLOCK_REALIZE) {
    mlc_error_set(err, "function %s: body is not a root block", f->name);
    return NULL;
  }
  const mlc_block *root = f->body->realize.block;
  lower_state st = {.a = a};
  for (int i = 0; i < root->n_allocs; i++) MLC_VEC_APUSH(a, st.root_allocs, root->allocs[i]);

  /* The root block has no iter vars, predicate or init worth lowering
   * differently from any other block; only its allocs are special. */
  mlc_stmt *body = lower_stmt(&st, root->body);
  if (root->init) body = mlc_seq_new(a, 2, (mlc_stmt *[]){lower_stmt(&st, root->init), body});
  body = lower_place_allocs(&st, body);
  MLC_VEC_FREE(st.carries);

  mlc_prim_func *out = mlc_func_new(a, f->name);
  out->n_attrs = f->n_attrs;
  out->attrs = f->attrs;
  out->n_params = f->n_params;
  out->params = MLC_NEW_ARRAY(a, mlc_buffer *, f->n_params > 0 ? f->n_params : 1);
  out->body = lower_flatten(a, body, f->n_params, f->params, out->params, err);
  if (!out->body) {
    mlc_error_prefix(err, "function %s", f->name);
    return NULL;
  }
  return out;
}
