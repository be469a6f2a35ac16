/* IR analysis for the rules and postprocessors: where a block sits, what
 * kind of block it is, which loops may be parallel. Reads only. */
#include "tuner/tuner_internal.h"

#include <string.h>

/* ---- walking ------------------------------------------------------------------ */

static int n_kids(const mlc_stmt *st) {
  switch (st->kind) {
  case MLC_STMT_FOR: return 1;
  case MLC_STMT_BLOCK_REALIZE: return st->realize.block->init ? 2 : 1;
  case MLC_STMT_SEQ: return st->seq.n;
  case MLC_STMT_IF: return st->if_.else_s ? 2 : 1;
  case MLC_STMT_ALLOCATE: return 1;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return 0;
  }
  mlc_unreachable();
}

static mlc_stmt *kid(const mlc_stmt *st, int i) {
  switch (st->kind) {
  case MLC_STMT_FOR: return st->loop.body;
  case MLC_STMT_BLOCK_REALIZE: return i == 0 ? st->realize.block->body : st->realize.block->init;
  case MLC_STMT_SEQ: return st->seq.stmts[i];
  case MLC_STMT_IF: return i == 0 ? st->if_.then_s : st->if_.else_s;
  case MLC_STMT_ALLOCATE: return st->alloc.body;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return NULL;
  }
  mlc_unreachable();
}

static bool site_rec(mlc_stmt *st, const mlc_block *b, tuner_site *out) {
  if (st->kind == MLC_STMT_BLOCK_REALIZE && st->realize.block == b) {
    out->realize = st;
    return true;
  }
  int saved = out->n_loops;
  if (st->kind == MLC_STMT_BLOCK_REALIZE) out->n_loops = 0; /* loops restart under a block */
  if (st->kind == MLC_STMT_FOR && out->n_loops < TUNER_MAX_LOOPS) out->loops[out->n_loops++] = st;
  int n = n_kids(st);
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = kid(st, i);
    if (c && site_rec(c, b, out)) return true;
  }
  out->n_loops = saved;
  return false;
}

bool tuner_find_site(const mlc_prim_func *f, const mlc_block *b, tuner_site *out) {
  out->n_loops = 0;
  out->realize = NULL;
  /* start below the root realize so the root's own loops (none) are skipped */
  return site_rec(f->body, b, out);
}

typedef struct name_list {
  mlc_arena *a;
  MLC_VEC(const char *) v;
} name_list;

static void post_order_rec(const mlc_stmt *st, name_list *nl, bool is_root) {
  int n = n_kids(st);
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = kid(st, i);
    if (c) post_order_rec(c, nl, false);
  }
  if (st->kind == MLC_STMT_BLOCK_REALIZE && !is_root) MLC_VEC_APUSH(nl->a, nl->v, st->realize.block->name);
}

int tuner_blocks_post_order(mlc_arena *a, const mlc_prim_func *f, const char ***names) {
  name_list nl = {a, {0}};
  post_order_rec(f->body, &nl, true);
  *names = nl.v.data;
  return nl.v.len;
}

/* ---- block kinds --------------------------------------------------------------- */

bool tuner_block_is_spatial(const mlc_block *b) {
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind != MLC_ITER_SPATIAL) return false;
  return true;
}

bool tuner_block_is_reduction(const mlc_block *b) {
  return !tuner_block_is_spatial(b) && b->init != NULL;
}

bool tuner_block_is_contraction(const mlc_block *b) {
  int n = 0;
  for (int k = 0; k < b->n_reads; k++) {
    bool by_reduce = false;
    for (int i = 0; i < b->n_iters && !by_reduce; i++) {
      if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
      for (int d = 0; d < b->reads[k].buf->ndim; d++)
        by_reduce |= mlc_expr_uses_var(b->reads[k].ranges[d].min, b->iters[i].var);
    }
    n += by_reduce;
  }
  return n >= 2;
}

bool tuner_trivial_binding(const mlc_block *b, const tuner_site *site) {
  if (b->n_iters != site->n_loops || b->n_iters == 0) return false;
  if (site->realize->realize.predicate) return false;
  for (int i = 0; i < b->n_iters; i++) {
    const mlc_expr *v = site->realize->realize.values[i];
    if (v->kind != MLC_EXPR_VAR || v->var != site->loops[i]->loop.var) return false;
    int64_t mn;
    if (!mlc_expr_is_const_int(site->loops[i]->loop.min, &mn) || mn != 0) return false;
    if (tuner_loop_extent(site->loops[i]) < 1) return false;
  }
  return true;
}

bool tuner_block_is_output(const mlc_prim_func *f, const mlc_block *b) {
  for (int w = 0; w < b->n_writes; w++)
    for (int p = 0; p < f->n_params; p++)
      if (b->writes[w].buf == f->params[p]) return true;
  return false;
}

typedef struct var_marks {
  const mlc_block *b;
  bool *used;
} var_marks;

static void mark_var(const mlc_expr *e, void *ctx) {
  var_marks *m = ctx;
  if (e->kind != MLC_EXPR_VAR) return;
  for (int i = 0; i < m->b->n_iters; i++)
    if (m->b->iters[i].var == e->var) m->used[i] = true;
}

/* Marks the block's iter vars that e uses. */
static void mark_vars(const mlc_expr *e, const mlc_block *b, bool *used) {
  var_marks m = {b, used};
  mlc_expr_visit(e, mark_var, &m);
}

bool tuner_needs_tiling(const mlc_prim_func *f, const mlc_block *b) {
  tuner_site site;
  if (tuner_block_is_spatial(b) || b->n_writes != 1 || b->n_reads == 0) return false;
  if (!tuner_find_site(f, b, &site) || !tuner_trivial_binding(b, &site)) return false;
  if (b->n_iters > TUNER_MAX_LOOPS) return false;
  int unused = 0;
  for (int r = 0; r < b->n_reads; r++) {
    const mlc_region *reg = &b->reads[r];
    for (int q = 0; q < r; q++)
      if (b->reads[q].buf == reg->buf) return false; /* one region per buffer */
    if (reg->buf == b->writes[0].buf) continue;
    bool used[TUNER_MAX_LOOPS] = {0};
    for (int d = 0; d < reg->buf->ndim; d++) mark_vars(reg->ranges[d].min, b, used);
    for (int i = 0; i < b->n_iters; i++) {
      int64_t ext;
      bool unit = mlc_expr_is_const_int(b->iters[i].dom.extent, &ext) && ext == 1;
      if (b->iters[i].kind == MLC_ITER_SPATIAL && !unit && !used[i]) unused++;
    }
  }
  return unused >= 1;
}

static void find_ite(const mlc_expr *e, void *ctx) {
  if (e->kind == MLC_EXPR_IF_THEN_ELSE) *(bool *)ctx = true;
}

static bool expr_has_ite(const mlc_expr *e) {
  bool found = false;
  mlc_expr_visit(e, find_ite, &found);
  return found;
}

static bool stmt_has_ite(const mlc_stmt *st) {
  if (!st) return false;
  if (st->kind == MLC_STMT_STORE) return expr_has_ite(st->store.value);
  if (st->kind == MLC_STMT_IF) return true;
  int n = n_kids(st);
  for (int i = 0; i < n; i++)
    if (stmt_has_ite(kid(st, i))) return true;
  return false;
}

bool tuner_block_has_if_then_else(const mlc_block *b) { return stmt_has_ite(b->body); }

static bool is_call_of(const mlc_expr *e, void *op) {
  return e->kind == MLC_EXPR_CALL && e->call.op == *(const mlc_intrin *)op;
}

bool tuner_block_calls(const mlc_block *b, mlc_intrin op) {
  const mlc_stmt *st = b->body;
  return st && st->kind == MLC_STMT_STORE && mlc_expr_any(st->store.value, is_call_of, &op);
}

/* ---- loops ------------------------------------------------------------------------ */

int64_t tuner_loop_extent(const mlc_stmt *loop) {
  int64_t e;
  return mlc_expr_is_const_int(loop->loop.extent, &e) ? e : -1;
}

static bool spatial_rec(const mlc_stmt *st, const mlc_var *v) {
  if (st->kind == MLC_STMT_BLOCK_REALIZE) {
    const mlc_block *b = st->realize.block;
    for (int i = 0; i < b->n_iters; i++)
      if (b->iters[i].kind == MLC_ITER_REDUCE && mlc_expr_uses_var(st->realize.values[i], v))
        return false;
  }
  int n = n_kids(st);
  for (int i = 0; i < n; i++) {
    const mlc_stmt *c = kid(st, i);
    if (c && !spatial_rec(c, v)) return false;
  }
  return true;
}

bool tuner_loop_is_spatial(const mlc_stmt *loop) {
  return spatial_rec(loop->loop.body, loop->loop.var);
}

int tuner_root_children(const mlc_prim_func *f, mlc_stmt ***out, mlc_arena *a) {
  mlc_stmt *body = mlc_func_root(f)->body;
  while (body->kind == MLC_STMT_ALLOCATE) body = body->alloc.body;
  if (body->kind == MLC_STMT_SEQ) {
    *out = body->seq.stmts;
    return body->seq.n;
  }
  mlc_stmt **one = MLC_NEW_ARRAY(a, mlc_stmt *, 1);
  one[0] = body;
  *out = one;
  return 1;
}

int tuner_parallel_prefix(const mlc_stmt *top, int64_t *prods, int max) {
  int n = 0;
  int64_t prod = 1;
  const mlc_stmt *l = top;
  while (n < max && l && l->kind == MLC_STMT_FOR && l->loop.kind == MLC_FOR_SERIAL) {
    int64_t e = tuner_loop_extent(l), mn;
    if (e < 1 || !mlc_expr_is_const_int(l->loop.min, &mn) || mn != 0) break;
    if (!tuner_loop_is_spatial(l)) break;
    if (prod > ((int64_t)1 << 40) / e) break;
    prod *= e;
    prods[n++] = prod;
    l = l->loop.body; /* only a single-child chain can be fused */
  }
  return n;
}

int64_t tuner_nest_iterations(const mlc_stmt *st) {
  if (!st) return 1;
  switch (st->kind) {
  case MLC_STMT_FOR: {
    int64_t e = tuner_loop_extent(st), in = tuner_nest_iterations(st->loop.body);
    if (e < 1) e = 1;
    return in > ((int64_t)1 << 40) / e ? (int64_t)1 << 40 : in * e;
  }
  case MLC_STMT_BLOCK_REALIZE: {
    int64_t body = tuner_nest_iterations(st->realize.block->body);
    int64_t init = tuner_nest_iterations(st->realize.block->init);
    return body > init ? body : init;
  }
  case MLC_STMT_SEQ: {
    int64_t most = 1;
    for (int i = 0; i < st->seq.n; i++) {
      int64_t w = tuner_nest_iterations(st->seq.stmts[i]);
      if (w > most) most = w;
    }
    return most;
  }
  case MLC_STMT_IF: {
    int64_t a = tuner_nest_iterations(st->if_.then_s), b = tuner_nest_iterations(st->if_.else_s);
    return a > b ? a : b;
  }
  case MLC_STMT_ALLOCATE: return tuner_nest_iterations(st->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return 1;
  }
  mlc_unreachable();
}

/* ---- finding blocks -------------------------------------------------------------- */

typedef struct block_walk {
  const char *name;        /* find by name, or */
  const mlc_block *writer; /* find the first reader of its writes */
  mlc_stmt *found;
} block_walk;

static bool reads_from(const mlc_block *x, const mlc_block *w) {
  for (int r = 0; r < x->n_reads; r++)
    for (int k = 0; k < w->n_writes; k++)
      if (x->reads[r].buf == w->writes[k].buf) return true;
  /* a reduction reads its output implicitly */
  for (int r = 0; x->init && r < x->n_writes; r++)
    for (int k = 0; k < w->n_writes; k++)
      if (x->writes[r].buf == w->writes[k].buf) return true;
  return false;
}

static void walk_blocks(mlc_stmt *st, block_walk *w) {
  if (!st || w->found) return;
  if (st->kind == MLC_STMT_BLOCK_REALIZE) {
    const mlc_block *b = st->realize.block;
    bool hit = w->name ? strcmp(b->name, w->name) == 0
                       : b != w->writer && reads_from(b, w->writer);
    if (hit) {
      w->found = st;
      return;
    }
  }
  int n = n_kids(st);
  for (int i = 0; i < n; i++) walk_blocks(kid(st, i), w);
}

const mlc_block *tuner_find_block(const mlc_prim_func *f, const char *name) {
  block_walk w = {name, NULL, NULL};
  walk_blocks(f->body, &w);
  return w.found ? w.found->realize.block : NULL;
}

int tuner_first_consumer_loops(const mlc_prim_func *f, const mlc_block *b) {
  block_walk w = {NULL, b, NULL};
  walk_blocks(f->body, &w);
  tuner_site site;
  if (!w.found || !tuner_find_site(f, w.found->realize.block, &site)) return -1;
  return site.n_loops;
}
