/* The walks over statement trees, so that a pass writes only the statement
 * kinds it cares about and lets these recurse through the others (as
 * mlc_expr_visit / mlc_expr_any / mlc_expr_map do for expressions). */
#include "ir/ir.h"

#include <string.h>

/* Children of s in order; false when fn stopped the walk. */
static bool walk_children(const mlc_stmt *s, mlc_walk (*fn)(const mlc_stmt *s, void *ud), void *ud) {
  switch (s->kind) {
  case MLC_STMT_FOR: return mlc_stmt_walk(s->loop.body, fn, ud);
  case MLC_STMT_BLOCK_REALIZE:
    return mlc_stmt_walk(s->realize.block->init, fn, ud) &&
           mlc_stmt_walk(s->realize.block->body, fn, ud);
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (!mlc_stmt_walk(s->seq.stmts[i], fn, ud)) return false;
    return true;
  case MLC_STMT_IF: return mlc_stmt_walk(s->if_.then_s, fn, ud) && mlc_stmt_walk(s->if_.else_s, fn, ud);
  case MLC_STMT_ALLOCATE: return mlc_stmt_walk(s->alloc.body, fn, ud);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return true;
  }
  mlc_unreachable();
}

bool mlc_stmt_walk(const mlc_stmt *s, mlc_walk (*fn)(const mlc_stmt *s, void *ud), void *ud) {
  if (!s) return true;
  switch (fn(s, ud)) {
  case MLC_WALK_INTO: return walk_children(s, fn, ud);
  case MLC_WALK_SKIP: return true;
  case MLC_WALK_STOP: return false;
  }
  mlc_unreachable();
}

typedef struct pred_ctx {
  bool (*any)(const mlc_stmt *s, void *ud);
  void (*visit)(const mlc_stmt *s, void *ud);
  void *ud;
} pred_ctx;

static mlc_walk any_step(const mlc_stmt *s, void *ud) {
  pred_ctx *c = ud;
  return c->any(s, c->ud) ? MLC_WALK_STOP : MLC_WALK_INTO;
}

bool mlc_stmt_any(const mlc_stmt *s, bool (*fn)(const mlc_stmt *s, void *ud), void *ud) {
  pred_ctx c = {.any = fn, .ud = ud};
  return !mlc_stmt_walk(s, any_step, &c);
}

static mlc_walk visit_step(const mlc_stmt *s, void *ud) {
  pred_ctx *c = ud;
  c->visit(s, c->ud);
  return MLC_WALK_INTO;
}

void mlc_stmt_visit(const mlc_stmt *s, void (*fn)(const mlc_stmt *s, void *ud), void *ud) {
  pred_ctx c = {.visit = fn, .ud = ud};
  mlc_stmt_walk(s, visit_step, &c);
}

static bool exprs_any(int n, mlc_expr *const *es, bool (*fn)(const mlc_expr *e, void *ud), void *ud) {
  for (int i = 0; i < n; i++)
    if (mlc_expr_any(es[i], fn, ud)) return true;
  return false;
}

bool mlc_stmt_exprs_any(const mlc_stmt *s, bool (*fn)(const mlc_expr *e, void *ud), void *ud) {
  switch (s->kind) {
  case MLC_STMT_FOR: return mlc_expr_any(s->loop.min, fn, ud) || mlc_expr_any(s->loop.extent, fn, ud);
  case MLC_STMT_BLOCK_REALIZE:
    return exprs_any(s->realize.block->n_iters, s->realize.values, fn, ud) ||
           mlc_expr_any(s->realize.predicate, fn, ud);
  case MLC_STMT_IF: return mlc_expr_any(s->if_.cond, fn, ud);
  case MLC_STMT_STORE:
    return exprs_any(s->store.buf->ndim, s->store.indices, fn, ud) ||
           mlc_expr_any(s->store.value, fn, ud);
  case MLC_STMT_EVALUATE: return mlc_expr_any(s->eval.value, fn, ud);
  case MLC_STMT_SEQ:
  case MLC_STMT_ALLOCATE: return false;
  }
  mlc_unreachable();
}

/* ---- copy-on-write rewrite ---------------------------------------------------- */

static mlc_stmt *copy_stmt(mlc_arena *a, const mlc_stmt *s) {
  return mlc_arena_memdup(a, s, sizeof *s);
}

static mlc_stmt *map_seq(mlc_arena *a, mlc_stmt *s, mlc_stmt_map_fn fn, void *ud) {
  mlc_stmt **kids = NULL;
  for (int i = 0; i < s->seq.n; i++) {
    mlc_stmt *k = mlc_stmt_map(a, s->seq.stmts[i], fn, ud);
    if (k == s->seq.stmts[i] && !kids) continue;
    if (!kids) kids = mlc_arena_memdup(a, s->seq.stmts, sizeof(mlc_stmt *) * (size_t)s->seq.n);
    kids[i] = k;
  }
  if (!kids) return s;
  mlc_stmt *n = copy_stmt(a, s);
  n->seq.stmts = kids;
  return n;
}

static mlc_stmt *map_realize(mlc_arena *a, mlc_stmt *s, mlc_stmt_map_fn fn, void *ud) {
  mlc_block *b = s->realize.block;
  mlc_stmt *init = mlc_stmt_map(a, b->init, fn, ud), *body = mlc_stmt_map(a, b->body, fn, ud);
  if (init == b->init && body == b->body) return s;
  mlc_block *nb = mlc_arena_memdup(a, b, sizeof *b);
  nb->init = init;
  nb->body = body;
  mlc_stmt *n = copy_stmt(a, s);
  n->realize.block = nb;
  return n;
}

static mlc_stmt *map_children(mlc_arena *a, mlc_stmt *s, mlc_stmt_map_fn fn, void *ud) {
  mlc_stmt *n;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    mlc_stmt *body = mlc_stmt_map(a, s->loop.body, fn, ud);
    if (body == s->loop.body) return s;
    n = copy_stmt(a, s);
    n->loop.body = body;
    return n;
  }
  case MLC_STMT_BLOCK_REALIZE: return map_realize(a, s, fn, ud);
  case MLC_STMT_SEQ: return map_seq(a, s, fn, ud);
  case MLC_STMT_IF: {
    mlc_stmt *t = mlc_stmt_map(a, s->if_.then_s, fn, ud), *e = mlc_stmt_map(a, s->if_.else_s, fn, ud);
    if (t == s->if_.then_s && e == s->if_.else_s) return s;
    n = copy_stmt(a, s);
    n->if_.then_s = t;
    n->if_.else_s = e;
    return n;
  }
  case MLC_STMT_ALLOCATE: {
    mlc_stmt *body = mlc_stmt_map(a, s->alloc.body, fn, ud);
    if (body == s->alloc.body) return s;
    n = copy_stmt(a, s);
    n->alloc.body = body;
    return n;
  }
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return s;
  }
  mlc_unreachable();
}

mlc_stmt *mlc_stmt_map(mlc_arena *a, mlc_stmt *s, mlc_stmt_map_fn fn, void *ud) {
  if (!s) return NULL;
  mlc_stmt *n = map_children(a, s, fn, ud);
  return fn ? fn(a, n, ud) : n;
}
