/* FuseTIR: each primitive sub-function (all of whose bindings are call_tir
 * after lowering) becomes one prim_func. The callee prim_funcs are copied,
 * their parameter buffers replaced by the fused function's parameters or,
 * for results consumed inside, by intermediate buffers allocated in the
 * root block (`<name>_intermediate`, as the notes show); their loop nests
 * follow each other in call order. The call in main becomes a call_tir of
 * the fused prim_func, which takes the sub-function's name. */
#include "graph/graph_impl.h"

#include <string.h>

typedef struct bufmap {
  mlc_arena *a; /* where rewritten expressions go */
  int n, cap;
  mlc_buffer **from, **to;
} bufmap;

static void map_put(mlc_arena *a, bufmap *bm, mlc_buffer *from, mlc_buffer *to) {
  if (bm->n == bm->cap) {
    int cap = bm->cap ? bm->cap * 2 : 16;
    mlc_buffer **f = MLC_NEW_ARRAY(a, mlc_buffer *, cap), **t = MLC_NEW_ARRAY(a, mlc_buffer *, cap);
    if (bm->n) {
      memcpy(f, bm->from, sizeof *f * (size_t)bm->n);
      memcpy(t, bm->to, sizeof *t * (size_t)bm->n);
    }
    bm->from = f, bm->to = t, bm->cap = cap;
  }
  bm->from[bm->n] = from;
  bm->to[bm->n++] = to;
}

static mlc_buffer *map_buf(bufmap *bm, mlc_buffer *b) {
  for (int i = 0; i < bm->n; i++)
    if (bm->from[i] == b) return bm->to[i];
  return b;
}

/* ---- replacing buffers in place (the tree is a private copy) ----------------- */

static mlc_expr *rebuf_load(mlc_arena *a, mlc_expr *e, void *ud) {
  if (e->kind != MLC_EXPR_LOAD) return e;
  mlc_buffer *b = map_buf(ud, e->load.buf);
  if (b == e->load.buf) return e;
  mlc_expr *n = mlc_arena_memdup(a, e, sizeof *e);
  n->load.buf = b;
  return n;
}

/* Expressions may be shared, so they are rewritten copy on write. */
static mlc_expr *re_expr(bufmap *bm, mlc_expr *e) {
  return mlc_expr_map(bm->a, e, rebuf_load, bm);
}

static void re_regions(bufmap *bm, int n, mlc_region *rs) {
  for (int i = 0; i < n; i++) {
    mlc_buffer *old = rs[i].buf;
    rs[i].buf = map_buf(bm, old);
    for (int d = 0; d < old->ndim; d++) {
      rs[i].ranges[d].min = re_expr(bm, rs[i].ranges[d].min);
      rs[i].ranges[d].extent = re_expr(bm, rs[i].ranges[d].extent);
    }
  }
}

static void re_stmt(bufmap *bm, mlc_stmt *s);

static void re_block(bufmap *bm, mlc_block *b) {
  re_regions(bm, b->n_reads, b->reads);
  re_regions(bm, b->n_writes, b->writes);
  for (int i = 0; i < b->n_allocs; i++) b->allocs[i] = map_buf(bm, b->allocs[i]);
  re_stmt(bm, b->init);
  re_stmt(bm, b->body);
}

static void re_stmt(bufmap *bm, mlc_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR:
    re_stmt(bm, s->loop.body);
    return;
  case MLC_STMT_BLOCK_REALIZE:
    for (int i = 0; i < s->realize.block->n_iters; i++)
      s->realize.values[i] = re_expr(bm, s->realize.values[i]);
    s->realize.predicate = re_expr(bm, s->realize.predicate);
    re_block(bm, s->realize.block);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) re_stmt(bm, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE: {
    mlc_buffer *old = s->store.buf;
    s->store.buf = map_buf(bm, old);
    for (int i = 0; i < old->ndim; i++) s->store.indices[i] = re_expr(bm, s->store.indices[i]);
    s->store.value = re_expr(bm, s->store.value);
    return;
  }
  case MLC_STMT_IF:
    s->if_.cond = re_expr(bm, s->if_.cond);
    re_stmt(bm, s->if_.then_s);
    re_stmt(bm, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE:
    s->alloc.buf = map_buf(bm, s->alloc.buf);
    re_stmt(bm, s->alloc.body);
    return;
  case MLC_STMT_EVALUATE: s->eval.value = re_expr(bm, s->eval.value); return;
  }
  mlc_unreachable();
}

/* ---- block names: unique within the fused function --------------------------- */

typedef MLC_VEC(const char *) names;

static bool has_name(const names *ns, const char *s) {
  for (int i = 0; i < ns->len; i++)
    if (strcmp(ns->data[i], s) == 0) return true;
  return false;
}

static void rename_blocks(mlc_arena *a, mlc_stmt *s, names *ns) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR: rename_blocks(a, s->loop.body, ns); return;
  case MLC_STMT_BLOCK_REALIZE: {
    mlc_block *b = s->realize.block;
    const char *base = b->name;
    for (int k = 1; has_name(ns, b->name); k++) b->name = mlc_arena_printf(a, "%s_%d", base, k);
    MLC_VEC_APUSH(a, *ns, b->name);
    rename_blocks(a, b->init, ns);
    rename_blocks(a, b->body, ns);
    return;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) rename_blocks(a, s->seq.stmts[i], ns);
    return;
  case MLC_STMT_IF:
    rename_blocks(a, s->if_.then_s, ns);
    rename_blocks(a, s->if_.else_s, ns);
    return;
  case MLC_STMT_ALLOCATE: rename_blocks(a, s->alloc.body, ns); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
}

/* Buffer names unique within the fused function: a chain of adds makes
 * T_add_intermediate, T_add_intermediate_1, ... */
static void unique_buffer_name(mlc_arena *a, mlc_buffer *b, names *ns) {
  const char *base = b->name;
  for (int k = 1; has_name(ns, b->name); k++) b->name = mlc_arena_printf(a, "%s_%d", base, k);
  MLC_VEC_APUSH(a, *ns, b->name);
}

/* ---- one sub-function ----------------------------------------------------------- */

static mlc_buffer *buffer_for(mlc_arena *a, const char *name, const mlc_gtype *t) {
  return mlc_buffer_new(a, name, t->dtype, t->ndim, t->shape, "global");
}

typedef struct fuser {
  mlc_arena *a;
  int n_vars;
  const mlc_gvar **vars; /* graph values of the sub-function ... */
  mlc_buffer **bufs;     /* ... and the fused function's buffer for each */
} fuser;

static mlc_buffer *buf_of(const fuser *F, const mlc_gvar *v) {
  for (int i = 0; i < F->n_vars; i++)
    if (F->vars[i] == v) return F->bufs[i];
  mlc_unreachable();
}

static mlc_prim_func *fuse_one(mlc_gmodule *m, const mlc_gfunc *g, mlc_error *err) {
  mlc_arena *a = m->arena;
  int nv = g->n_params + g->n_bindings;
  fuser F = {a, 0, MLC_NEW_ARRAY(a, const mlc_gvar *, nv), MLC_NEW_ARRAY(a, mlc_buffer *, nv)};
  mlc_prim_func *f = mlc_func_new(a, g->name);
  f->n_params = g->n_params + 1;
  f->params = MLC_NEW_ARRAY(a, mlc_buffer *, f->n_params);
  for (int i = 0; i < g->n_params; i++) {
    F.vars[F.n_vars] = g->params[i];
    f->params[i] = F.bufs[F.n_vars++] = buffer_for(a, g->params[i]->name, &g->params[i]->type);
  }
  mlc_block *root = mlc_block_new(a, "root");
  root->allocs = MLC_NEW_ARRAY(a, mlc_buffer *, 4 * g->n_bindings + 4);
  mlc_stmt **nests = MLC_NEW_ARRAY(a, mlc_stmt *, g->n_bindings);
  names ns = {0}, bufs = {0};
  for (int i = 0; i < g->n_params; i++) MLC_VEC_APUSH(a, bufs, f->params[i]->name);
  for (int i = 0; i < g->n_bindings; i++) {
    const mlc_gbinding *b = &g->bindings[i];
    if (b->kind != MLC_GCALL_TIR) {
      mlc_error_set(err, "fuse_tir: %s: binding %s is not lowered (run lower first)", g->name,
                    b->var->name);
      return NULL;
    }
    mlc_prim_func *c = mlc_func_copy(a, b->tir);
    bufmap bm = {.a = a};
    for (int j = 0; j < b->n_args; j++) map_put(a, &bm, c->params[j], buf_of(&F, b->args[j]));
    mlc_buffer *out = c->params[b->n_args];
    bool last = b->var == g->outputs[0];
    if (!last) {
      out->name = mlc_arena_printf(a, "%s_intermediate", out->name);
      root->allocs[root->n_allocs++] = out;
    } else f->params[g->n_params] = out;
    F.vars[F.n_vars] = b->var;
    F.bufs[F.n_vars++] = out;
    mlc_block *croot = mlc_func_root(c);
    for (int j = 0; j < croot->n_allocs; j++) root->allocs[root->n_allocs++] = croot->allocs[j];
    for (int j = 0; j < croot->n_allocs; j++) unique_buffer_name(a, croot->allocs[j], &bufs);
    unique_buffer_name(a, out, &bufs);
    re_stmt(&bm, croot->body);
    rename_blocks(a, croot->body, &ns);
    nests[i] = croot->body;
  }
  if (!f->params[g->n_params]) {
    mlc_error_set(err, "fuse_tir: %s: the output is not computed by a call_tir", g->name);
    return NULL;
  }
  root->body = mlc_seq_new(a, g->n_bindings, nests);
  f->body = mlc_realize_new(a, root, NULL, NULL);
  f->n_attrs = 2;
  f->attrs = MLC_NEW_ARRAY(a, mlc_ann, 2);
  f->attrs[0] = (mlc_ann){.key = "global_symbol", .kind = MLC_ANN_STRING, .s = f->name};
  f->attrs[1] = (mlc_ann){.key = "tir.noalias", .kind = MLC_ANN_BOOL, .i = 1};
  for (int i = 0; i < g->n_bindings; i++) {
    double atol = mlc_func_check_atol(g->bindings[i].tir, 0);
    if (atol > 0) mlc_func_set_check_atol(a, f, atol);
  }
  return f;
}

bool mlc_graph_fuse_tir(mlc_gmodule *m, mlc_error *err) {
  /* Each primitive function's prim_func first, then one walk over the
   * calls (a walk per function was O(functions x bindings)). */
  mlc_arena *a = mlc_arena_new_child(m->arena);
  mlc_gmap fused = {.a = a}; /* primitive gfunc -> index in fs */
  MLC_VEC(mlc_prim_func *) fs = {0};
  bool ok = true;
  for (int i = 0; ok && i < m->n_funcs; i++) {
    mlc_gfunc *g = m->funcs[i];
    if (!g->primitive) continue;
    mlc_prim_func *f = fuse_one(m, g, err);
    if (!f) ok = false;
    else {
      mlc_gmap_put(&fused, g, fs.len);
      MLC_VEC_APUSH(a, fs, f);
    }
  }
  if (ok) {
    mlc_graph_add_tir_funcs(m, fs.len, fs.data);
    for (int k = 0; k < m->n_funcs; k++)
      for (int j = 0; j < m->funcs[k]->n_bindings; j++) {
        mlc_gbinding *b = &m->funcs[k]->bindings[j];
        int x;
        if (b->kind != MLC_GCALL_FUNC || !mlc_gmap_get(&fused, b->callee, &x)) continue;
        b->kind = MLC_GCALL_TIR;
        b->tir = fs.data[x];
        b->callee = NULL;
      }
  }
  mlc_arena_free(a);
  if (!ok) return false;
  /* The sub-functions and the per-op prim_funcs they called are unused now. */
  mlc_graph_remove_unused(m);
  return mlc_graph_verify(m, err);
}
