/* The TE-like builder (ir/builder.c): block structure of what
 * mlc_te_create_prim_func produces, checked node by node. */
#include "ir/ir.h"
#include "tests/test.h"

#include <float.h>
#include <string.h>

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define TENSORS(...) ((mlc_te_tensor *[]){__VA_ARGS__})

/* ---- helpers ------------------------------------------------------------- */

/* The loops down from s to the first block realize; their vars in order. */
static const mlc_stmt *descend(const mlc_stmt *s, int *n_loops, mlc_var **loops,
                               int64_t *extents) {
  *n_loops = 0;
  while (s && s->kind == MLC_STMT_FOR) {
    int64_t ext = -1, mn = -1;
    mlc_expr_is_const_int(s->loop.extent, &ext);
    mlc_expr_is_const_int(s->loop.min, &mn);
    CHECK(mn == 0);
    CHECK(s->loop.kind == MLC_FOR_SERIAL);
    loops[*n_loops] = s->loop.var;
    extents[(*n_loops)++] = ext;
    s = s->loop.body;
  }
  return s;
}

/* Does e mention var v anywhere? (local walk; independent of copy.c) */
static bool uses(const mlc_expr *e, const mlc_var *v) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
    return false;
  case MLC_EXPR_VAR:
    return e->var == v;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
    return uses(e->bin.a, v) || uses(e->bin.b, v);
  case MLC_EXPR_NOT:
    return uses(e->bin.a, v);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return uses(e->sel.cond, v) || uses(e->sel.t, v) || uses(e->sel.f, v);
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++)
      if (uses(e->load.indices[i], v)) return true;
    return false;
  case MLC_EXPR_CAST:
    return uses(e->cast.value, v);
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      if (uses(e->call.args[i], v)) return true;
    return false;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++)
      if (uses(e->ext.kids[i], v)) return true;
    return false;
  }
  return false;
}

static bool store_uses(const mlc_stmt *s, const mlc_var *v) {
  if (!s || s->kind != MLC_STMT_STORE) return false;
  for (int i = 0; i < s->store.buf->ndim; i++)
    if (uses(s->store.indices[i], v)) return true;
  return uses(s->store.value, v);
}

/* Every node of e reachable once: count nodes pointer-distinct. */
static int count_nodes(const mlc_expr *e, const mlc_expr **seen, int *n_seen, int *dups) {
  for (int i = 0; i < *n_seen; i++)
    if (seen[i] == e) (*dups)++;
  if (*n_seen < 256) seen[(*n_seen)++] = e;
  switch (e->kind) {
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_MAX:
  case MLC_EXPR_MIN:
    count_nodes(e->bin.a, seen, n_seen, dups);
    count_nodes(e->bin.b, seen, n_seen, dups);
    break;
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++) count_nodes(e->load.indices[i], seen, n_seen, dups);
    break;
  default:
    break;
  }
  return *n_seen;
}

/* The region r is the point buf[vars...]. */
static bool region_is_point(const mlc_region *r, const mlc_buffer *buf, int n,
                            mlc_var *const *vars) {
  if (r->buf != buf || buf->ndim != n) return false;
  for (int i = 0; i < n; i++) {
    int64_t ext = 0;
    if (!mlc_expr_is_const_int(r->ranges[i].extent, &ext) || ext != 1) return false;
    const mlc_expr *m = r->ranges[i].min;
    if (vars[i] == NULL) {
      if (!mlc_expr_is_const_int(m, NULL)) return false;
    } else if (m->kind != MLC_EXPR_VAR || m->var != vars[i]) {
      return false;
    }
  }
  return true;
}

/* ---- cases ---------------------------------------------------------------- */

/* B[i, j] = A[j, i] * 2: one spatial block, bindings are plain loop vars. */
static void test_elementwise(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(5, 3), MLC_FLOAT32);
  mlc_expr **ij = mlc_te_begin(te, "B", 2, SHAPE(3, 5), "ij");
  mlc_te_tensor *B =
      mlc_te_end(te, mlc_mul(a, mlc_te_at(te, A, ij[1], ij[0]), mlc_float(a, MLC_FLOAT32, 2)));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "transpose2", 2, TENSORS(A, B));

  CHECK_STREQ(f->name, "transpose2");
  CHECK(f->n_params == 2 && f->params[0] == mlc_te_buffer(A) && f->params[1] == mlc_te_buffer(B));
  CHECK_STREQ(f->params[1]->name, "B");
  CHECK(f->params[1]->ndim == 2 && f->params[1]->shape[0] == 3 && f->params[1]->shape[1] == 5);
  CHECK(f->params[1]->dtype == MLC_FLOAT32);
  CHECK_STREQ(f->params[0]->scope, "global");
  const mlc_ann *gs = mlc_ann_find(f->n_attrs, f->attrs, "global_symbol");
  CHECK(gs && gs->kind == MLC_ANN_STRING && strcmp(gs->s, "transpose2") == 0);
  const mlc_ann *na = mlc_ann_find(f->n_attrs, f->attrs, "tir.noalias");
  CHECK(na && na->kind == MLC_ANN_BOOL && na->i == 1);

  mlc_block *root = mlc_func_root(f);
  CHECK_STREQ(root->name, "root");
  CHECK(root->n_iters == 0 && root->n_allocs == 0 && root->init == NULL);

  int nl;
  mlc_var *loops[8];
  int64_t ext[8];
  const mlc_stmt *r = descend(root->body, &nl, loops, ext);
  CHECK(nl == 2);
  CHECK_STREQ(loops[0]->name, "i");
  CHECK_STREQ(loops[1]->name, "j");
  CHECK(ext[0] == 3 && ext[1] == 5);
  CHECK(r && r->kind == MLC_STMT_BLOCK_REALIZE);
  if (!r || r->kind != MLC_STMT_BLOCK_REALIZE) goto out;
  const mlc_block *b = r->realize.block;
  CHECK_STREQ(b->name, "B");
  CHECK(b->n_iters == 2);
  CHECK_STREQ(b->iters[0].var->name, "vi");
  CHECK_STREQ(b->iters[1].var->name, "vj");
  for (int i = 0; i < b->n_iters && i < 2; i++) {
    int64_t mn = -1, e = -1;
    CHECK(b->iters[i].kind == MLC_ITER_SPATIAL);
    CHECK(mlc_expr_is_const_int(b->iters[i].dom.min, &mn) && mn == 0);
    CHECK(mlc_expr_is_const_int(b->iters[i].dom.extent, &e) && e == ext[i]);
    /* T.axis.remap-able: each binding is the plain loop var, distinct. */
    const mlc_expr *v = r->realize.values[i];
    CHECK(v->kind == MLC_EXPR_VAR && v->var == loops[i]);
    CHECK(b->iters[i].var != loops[i]);
  }
  CHECK(r->realize.predicate == NULL);
  CHECK(b->init == NULL);
  CHECK(b->body->kind == MLC_STMT_STORE && b->body->store.buf == mlc_te_buffer(B));
  /* The body uses iter vars, never the loop vars. */
  CHECK(!store_uses(b->body, loops[0]) && !store_uses(b->body, loops[1]));
  CHECK(store_uses(b->body, b->iters[0].var) && store_uses(b->body, b->iters[1].var));
  const mlc_expr *val = b->body->store.value;
  CHECK(val->kind == MLC_EXPR_MUL && val->bin.a->kind == MLC_EXPR_LOAD);
  if (val->kind == MLC_EXPR_MUL && val->bin.a->kind == MLC_EXPR_LOAD) {
    const mlc_expr *ld = val->bin.a;
    CHECK(ld->load.buf == mlc_te_buffer(A));
    CHECK(ld->load.indices[0]->kind == MLC_EXPR_VAR && ld->load.indices[0]->var == b->iters[1].var);
    CHECK(ld->load.indices[1]->kind == MLC_EXPR_VAR && ld->load.indices[1]->var == b->iters[0].var);
  }
  CHECK(b->n_reads == 1 && b->n_writes == 1);
  if (b->n_reads == 1 && b->n_writes == 1) {
    mlc_var *rv[2] = {b->iters[1].var, b->iters[0].var};
    mlc_var *wv[2] = {b->iters[0].var, b->iters[1].var};
    CHECK(region_is_point(&b->reads[0], mlc_te_buffer(A), 2, rv));
    CHECK(region_is_point(&b->writes[0], mlc_te_buffer(B), 2, wv));
  }
  mlc_error err;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
out:
  mlc_arena_free(a);
}

/* C[i, j] = sum_k A[i, k] * B[k, j]: spatial loops outside, reduce inside. */
static void test_reduction(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(4, 6), MLC_FLOAT32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 2, SHAPE(6, 5), MLC_FLOAT32);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(4, 5), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, 6, "k");
  mlc_te_tensor *C =
      mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, A, ij[0], k), mlc_te_at(te, B, k, ij[1])));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));

  int nl;
  mlc_var *loops[8];
  int64_t ext[8];
  const mlc_stmt *r = descend(mlc_func_root(f)->body, &nl, loops, ext);
  CHECK(nl == 3 && ext[0] == 4 && ext[1] == 5 && ext[2] == 6);
  CHECK_STREQ(loops[2]->name, "k");
  CHECK(r && r->kind == MLC_STMT_BLOCK_REALIZE);
  if (!r || r->kind != MLC_STMT_BLOCK_REALIZE || nl != 3) goto out;
  const mlc_block *b = r->realize.block;
  CHECK_STREQ(b->name, "C");
  CHECK(b->n_iters == 3);
  if (b->n_iters != 3) goto out;
  CHECK(b->iters[0].kind == MLC_ITER_SPATIAL && b->iters[1].kind == MLC_ITER_SPATIAL);
  CHECK(b->iters[2].kind == MLC_ITER_REDUCE);
  CHECK_STREQ(b->iters[2].var->name, "vk");
  for (int i = 0; i < 3; i++)
    CHECK(r->realize.values[i]->kind == MLC_EXPR_VAR && r->realize.values[i]->var == loops[i]);
  /* init: C[vi, vj] = 0.0 */
  CHECK(b->init && b->init->kind == MLC_STMT_STORE);
  if (b->init && b->init->kind == MLC_STMT_STORE) {
    CHECK(b->init->store.buf == mlc_te_buffer(C));
    CHECK(b->init->store.value->kind == MLC_EXPR_FLOAT_IMM && b->init->store.value->float_val == 0.0);
    CHECK(b->init->store.value->dtype == MLC_FLOAT32);
  }
  /* body: C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj] */
  const mlc_expr *v = b->body->store.value;
  CHECK(v->kind == MLC_EXPR_ADD);
  if (v->kind == MLC_EXPR_ADD) {
    CHECK(v->bin.a->kind == MLC_EXPR_LOAD && v->bin.a->load.buf == mlc_te_buffer(C));
    CHECK(v->bin.b->kind == MLC_EXPR_MUL);
  }
  for (int i = 0; i < 3; i++) CHECK(!store_uses(b->body, loops[i]));
  CHECK(store_uses(b->body, b->iters[2].var));
  /* reads A and B (not the implicit read of C), writes C */
  CHECK(b->n_reads == 2 && b->n_writes == 1);
  if (b->n_reads == 2 && b->n_writes == 1) {
    mlc_var *ra[2] = {b->iters[0].var, b->iters[2].var};
    mlc_var *rb[2] = {b->iters[2].var, b->iters[1].var};
    mlc_var *wc[2] = {b->iters[0].var, b->iters[1].var};
    CHECK(region_is_point(&b->reads[0], mlc_te_buffer(A), 2, ra));
    CHECK(region_is_point(&b->reads[1], mlc_te_buffer(B), 2, rb));
    CHECK(region_is_point(&b->writes[0], mlc_te_buffer(C), 2, wc));
  }
  mlc_error err;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
out:
  mlc_arena_free(a);
}

/* The identity of each reducer; NULL axis names give i0, i1 / v_i0. */
static void test_reducers(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(3, 7), MLC_FLOAT32);
  mlc_te_tensor *I = mlc_te_placeholder(te, "I", 2, SHAPE(3, 7), MLC_INT32);
  mlc_expr **i = mlc_te_begin(te, "mx", 1, SHAPE(3), NULL);
  mlc_expr *k = mlc_te_reduce_axis(te, 7, "rk");
  mlc_te_tensor *mx = mlc_te_reduce(te, MLC_TE_MAX, mlc_te_at(te, A, i[0], k));
  i = mlc_te_begin(te, "mn", 1, SHAPE(3), NULL);
  k = mlc_te_reduce_axis(te, 7, "rk");
  mlc_te_tensor *mn = mlc_te_reduce(te, MLC_TE_MIN, mlc_te_at(te, A, i[0], k));
  i = mlc_te_begin(te, "isum", 1, SHAPE(3), NULL);
  k = mlc_te_reduce_axis(te, 7, "rk");
  mlc_te_tensor *is = mlc_te_sum(te, mlc_te_at(te, I, i[0], k));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 5, TENSORS(A, I, mx, mn, is));

  mlc_stmt *body = mlc_func_root(f)->body;
  CHECK(body->kind == MLC_STMT_SEQ && body->seq.n == 3);
  if (body->kind != MLC_STMT_SEQ || body->seq.n != 3) goto out;
  double want[2] = {-3.4028234663852886e38, 3.4028234663852886e38};
  for (int s = 0; s < 3; s++) {
    int nl;
    mlc_var *loops[8];
    int64_t ext[8];
    const mlc_stmt *r = descend(body->seq.stmts[s], &nl, loops, ext);
    CHECK(nl == 2);
    CHECK_STREQ(loops[0]->name, "i0");
    CHECK_STREQ(loops[1]->name, "rk");
    if (!r || r->kind != MLC_STMT_BLOCK_REALIZE) {
      CHECK(0);
      continue;
    }
    const mlc_block *b = r->realize.block;
    CHECK_STREQ(b->iters[0].var->name, "v_i0");
    CHECK_STREQ(b->iters[1].var->name, "v_rk");
    CHECK(b->init != NULL);
    if (!b->init) continue;
    const mlc_expr *id = b->init->store.value;
    const mlc_expr *v = b->body->store.value;
    if (s < 2) {
      CHECK(id->kind == MLC_EXPR_FLOAT_IMM && id->float_val == want[s]);
      CHECK(v->kind == (s == 0 ? MLC_EXPR_MAX : MLC_EXPR_MIN));
    } else {
      CHECK(id->kind == MLC_EXPR_INT_IMM && id->int_val == 0 && id->dtype == MLC_INT32);
      CHECK(v->kind == MLC_EXPR_ADD && v->dtype == MLC_INT32);
      CHECK(b->writes && b->writes[0].buf->dtype == MLC_INT32);
    }
  }
  mlc_error err;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
out:
  mlc_arena_free(a);
}

/* Y = A @ B (intermediate), C = max(Y, 0): Y becomes a root alloc and the
 * two nests follow in program order. */
static void test_chained(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(4, 6), MLC_FLOAT32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 2, SHAPE(6, 5), MLC_FLOAT32);
  mlc_expr **ij = mlc_te_begin(te, "Y", 2, SHAPE(4, 5), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, 6, "k");
  mlc_te_tensor *Y =
      mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, A, ij[0], k), mlc_te_at(te, B, k, ij[1])));
  ij = mlc_te_begin(te, "C", 2, SHAPE(4, 5), "ij");
  mlc_te_tensor *C = mlc_te_end(te, mlc_binary(a, MLC_EXPR_MAX, mlc_te_at(te, Y, ij[0], ij[1]),
                                               mlc_float(a, MLC_FLOAT32, 0)));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "mm_relu", 3, TENSORS(A, B, C));

  CHECK(f->n_params == 3 && f->params[2] == mlc_te_buffer(C));
  mlc_block *root = mlc_func_root(f);
  CHECK(root->n_allocs == 1 && root->allocs[0] == mlc_te_buffer(Y));
  CHECK(root->body->kind == MLC_STMT_SEQ && root->body->seq.n == 2);
  if (root->body->kind != MLC_STMT_SEQ || root->body->seq.n != 2) goto out;
  int nl;
  mlc_var *loops[8];
  int64_t ext[8];
  const mlc_stmt *r0 = descend(root->body->seq.stmts[0], &nl, loops, ext);
  CHECK(nl == 3 && r0->kind == MLC_STMT_BLOCK_REALIZE);
  CHECK_STREQ(r0->realize.block->name, "Y");
  CHECK(r0->realize.block->init != NULL);
  const mlc_stmt *r1 = descend(root->body->seq.stmts[1], &nl, loops, ext);
  CHECK(nl == 2 && r1->kind == MLC_STMT_BLOCK_REALIZE);
  if (r1->kind != MLC_STMT_BLOCK_REALIZE) goto out;
  const mlc_block *b = r1->realize.block;
  CHECK_STREQ(b->name, "C");
  CHECK(b->init == NULL);
  CHECK(b->n_reads == 1 && b->n_writes == 1);
  if (b->n_reads == 1) {
    mlc_var *v[2] = {b->iters[0].var, b->iters[1].var};
    CHECK(region_is_point(&b->reads[0], mlc_te_buffer(Y), 2, v));
  }
  CHECK(b->body->store.value->kind == MLC_EXPR_MAX);
  /* Each block has its own iter vars and loops. */
  CHECK(b->iters[0].var != r0->realize.block->iters[0].var);
  mlc_error err;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);

  /* Interpret it: the intermediate and the relu are computed. */
  mlc_array *args[3];
  for (int i = 0; i < 3; i++) args[i] = mlc_array_for_buffer(f->params[i]);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  mlc_array_fill_random(args[0], &rng);
  mlc_array_fill_random(args[1], &rng);
  mlc_array_fill_random(args[2], &rng);
  mlc_array arr[3] = {*args[0], *args[1], *args[2]};
  CHECK_MSG(mlc_interp_run(f, arr, &err), "%s", err.msg);
  int negatives = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) {
      double s = 0;
      for (int kk = 0; kk < 6; kk++)
        s += mlc_array_get(args[0], i * 6 + kk) * mlc_array_get(args[1], kk * 5 + j);
      negatives += s < 0;
      double want = s > 0 ? s : 0, got = mlc_array_get(args[2], i * 5 + j);
      CHECK_MSG(got - want < 1e-5 && want - got < 1e-5, "C[%d,%d] = %g, want %g", i, j, got, want);
    }
  CHECK(negatives > 0); /* the relu mattered */
  for (int i = 0; i < 3; i++) mlc_array_free(args[i]);
out:
  mlc_arena_free(a);
}

/* An index expression used twice (and a reduce axis used in two places)
 * must not make the IR a DAG. */
static void test_tree(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(4, 4), MLC_FLOAT32);
  mlc_expr **i = mlc_te_begin(te, "B", 1, SHAPE(4), "i");
  mlc_expr *k = mlc_te_reduce_axis(te, 4, "k");
  mlc_expr *x = mlc_te_at(te, A, i[0], k);
  mlc_te_tensor *B = mlc_te_sum(te, mlc_mul(a, x, x));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 2, TENSORS(A, B));
  int nl;
  mlc_var *loops[8];
  int64_t ext[8];
  const mlc_stmt *r = descend(mlc_func_root(f)->body, &nl, loops, ext);
  CHECK(r->kind == MLC_STMT_BLOCK_REALIZE);
  if (r->kind == MLC_STMT_BLOCK_REALIZE) {
    const mlc_expr *seen[256];
    int n = 0, dups = 0;
    count_nodes(r->realize.block->body->store.value, seen, &n, &dups);
    CHECK_MSG(dups == 0, "%d shared nodes", dups);
    CHECK(n >= 9); /* add(load(B,vi), mul(load(A,vi,vk), load(A,vi,vk))) */
    /* the caller's expression is untouched: still refers to loop vars */
    CHECK(x->load.indices[0]->var == loops[0]);
  }
  mlc_arena_free(a);
}

/* A reduce axis named like a spatial axis gets a distinct loop name. */
static void test_name_clash(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(3, 4), MLC_FLOAT32);
  mlc_expr **i = mlc_te_begin(te, "B", 1, SHAPE(3), "i");
  mlc_expr *k = mlc_te_reduce_axis(te, 4, "i");
  mlc_te_tensor *B = mlc_te_sum(te, mlc_te_at(te, A, i[0], k));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 2, TENSORS(A, B));
  int nl;
  mlc_var *loops[8];
  int64_t ext[8];
  const mlc_stmt *r = descend(mlc_func_root(f)->body, &nl, loops, ext);
  CHECK(nl == 2);
  CHECK_STREQ(loops[0]->name, "i");
  CHECK_STREQ(loops[1]->name, "i_1");
  CHECK(r->kind == MLC_STMT_BLOCK_REALIZE);
  if (r->kind == MLC_STMT_BLOCK_REALIZE) {
    CHECK_STREQ(r->realize.block->iters[0].var->name, "vi");
    CHECK_STREQ(r->realize.block->iters[1].var->name, "v_i_1");
  }
  mlc_arena_free(a);
}

/* The printed form is TVMScript with T.axis.remap and T.init. */
/* Integer literals keep their dtype and value at the edges of the range
 * that shares nodes (-16..239) and past them, int64's extremes included;
 * equal small literals are one node, others each their own. */
static void test_int_literals(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_dtype ts[] = {MLC_INT32, MLC_INT64, MLC_BOOL, MLC_INT8, MLC_UINT8};
  const int64_t vs[] = {INT64_MIN, -17, -16, -1, 0, 1, 2, 239, 240, INT64_MAX};
  for (int i = 0; i < MLC_COUNTOF(ts); i++)
    for (int k = 0; k < MLC_COUNTOF(vs); k++) {
      mlc_expr *e = mlc_int_t(a, ts[i], vs[k]);
      CHECK(e->kind == MLC_EXPR_INT_IMM && e->dtype == ts[i] && e->int_val == vs[k]);
    }
  CHECK(mlc_int_t(a, MLC_INT64, 7) == mlc_int_t(a, MLC_INT64, 7));
  CHECK(mlc_int_t(a, MLC_INT64, 7) != mlc_int_t(a, MLC_INT32, 7));
  CHECK(mlc_int(a, 240) != mlc_int(a, 240) && mlc_int(a, 240)->int_val == 240);
  CHECK(mlc_bool(a, true)->int_val == 1 && mlc_bool(a, false)->dtype == MLC_BOOL);
  mlc_arena_free(a);
}

static void test_printed(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(4, 6), MLC_FLOAT32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 2, SHAPE(6, 5), MLC_FLOAT32);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(4, 5), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, 6, "k");
  mlc_te_tensor *C =
      mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, A, ij[0], k), mlc_te_at(te, B, k, ij[1])));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
  mlc_str s = {0};
  mlc_print_func(&s, f);
  const char *t = mlc_str_cstr(&s);
  CHECK_MSG(strstr(t, "for i, j, k in T.grid(4, 5, 6):"), "%s", t);
  CHECK_MSG(strstr(t, "with T.block(\"C\"):"), "%s", t);
  CHECK_MSG(strstr(t, "vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])"), "%s", t);
  CHECK_MSG(strstr(t, "with T.init():"), "%s", t);
  CHECK_MSG(strstr(t, "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]"), "%s", t);
  CHECK_MSG(strstr(t, "\"global_symbol\": \"main\""), "%s", t);
  mlc_str_free(&s);
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_elementwise);
  RUN(test_reduction);
  RUN(test_reducers);
  RUN(test_chained);
  RUN(test_tree);
  RUN(test_name_clash);
  RUN(test_printed);
  RUN(test_int_literals);
  return test_summary();
}
