/* library_call: hand a matrix-product block to a BLAS library.
 *
 * The block must be a plain float32 (batch) matmul or dense layer, as the
 * tasks and the graph's lowering write them:
 *
 *   C[b.., i, j] (+)= A[b.., i, k] * B[b.., k, j]     (T.init C = 0 or none)
 *
 * where A may be indexed [k, i] (transposed), B [j, k] (transposed: a
 * dense layer's weights), and A or B may leave out the batch indices (one
 * matrix for every batch). Every index is one iterator; the block's loops
 * (between it and its parent block) are one per iterator, each bound to
 * its iterator over its whole domain, and hold nothing else. Then the i,
 * j, k loops go away and the block keeps its batch iterators (their loops
 * stay, in their order): per batch it calls
 *
 *   mlc_rt_sgemm(trans_a, trans_b, M, N, K, A ptr, lda, B ptr, ldb,
 *                C ptr, ldc, accumulate)
 *
 * (targets/runtime/blas.c: cblas_sgemm), with T.access_ptr regions and
 * the buffers' row strides. The block is no longer a reduction: it reads
 * A and B (and C when accumulating, i.e. without an init) and writes C.
 * Elementwise blocks around it (bias, relu) are untouched.
 *
 * The interpreter runs mlc_rt_sgemm as the plain triple loop below
 * (registered when the primitive first runs), so a library kernel is
 * checked against the unscheduled one without the library.
 */
#include "schedule/sched_impl.h"

#include <stdio.h>
#include <string.h>

/* Libraries a block can be handed to, and the runtime function that calls
 * each. */
static const struct {
  const char *name;
  const char *fn;
} libraries[] = {
    {"openblas", "mlc_rt_sgemm"},
};

bool mlc_sched_library_known(const char *library) {
  for (int i = 0; i < MLC_COUNTOF(libraries); i++)
    if (strcmp(libraries[i].name, library) == 0) return true;
  return false;
}

/* The interpreter's mlc_rt_sgemm: the same arguments, the product in
 * float. */
static double sgemm_ref(void *ud, int n, const mlc_extern_val *v) {
  MLC_UNUSED(ud);
  if (n != 12) return -1;
  int64_t ta = v[0].i, tb = v[1].i, m = v[2].i, nn = v[3].i, k = v[4].i;
  const float *a = v[5].p, *b = v[7].p;
  float *c = v[9].p;
  int64_t lda = v[6].i, ldb = v[8].i, ldc = v[10].i;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < nn; j++) {
      float acc = v[11].i ? c[i * ldc + j] : 0.0f;
      for (int64_t p = 0; p < k; p++)
        acc += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = acc;
    }
  return 0;
}

/* ---- matching ------------------------------------------------------------------ */

/* What the block computes, once recognized. */
typedef struct gemm {
  mlc_buffer *a, *b, *c;
  const mlc_expr *la, *lb, *lc; /* the loads of A, B and C in the body */
  int iv_i, iv_j, iv_k;   /* indices of the block's iterators */
  bool trans_a, trans_b;
  bool accumulate;        /* no init: C += A @ B */
  int64_t m, n, k;
} gemm;

/* The block iterator a plain index refers to, or -1. */
static int iter_of(const mlc_block *b, const mlc_expr *e) {
  if (e->kind != MLC_EXPR_VAR) return -1;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].var == e->var) return i;
  return -1;
}

static bool same_indices(const mlc_block *b, int n, mlc_expr **x, mlc_expr **y) {
  for (int d = 0; d < n; d++)
    if (iter_of(b, x[d]) < 0 || iter_of(b, x[d]) != iter_of(b, y[d])) return false;
  return true;
}

/* An operand load: its last two indices are {row, col} iterators in
 * either order (*trans: col first), the others the batch indices of C
 * in order (or none). */
static bool match_operand(const mlc_block *blk, const mlc_expr *ld, const mlc_expr *cst, int row,
                          int col, bool *trans, const char *what, mlc_error *err) {
  const mlc_buffer *buf = ld->load.buf;
  int nd = buf->ndim, cnd = cst->load.buf->ndim;
  if (nd != 2 && nd != cnd)
    return mlc_error_set(err, "access pattern mismatch: %s %s has %d dimensions, C %s %d", what,
                         buf->name, nd, cst->load.buf->name, cnd);
  for (int d = 0; d < nd - 2; d++)
    if (iter_of(blk, ld->load.indices[d]) != iter_of(blk, cst->load.indices[d]))
      return mlc_error_set(err, "access pattern mismatch: %s %s is not indexed by the batch "
                           "iterators of %s", what, buf->name, cst->load.buf->name);
  int x = iter_of(blk, ld->load.indices[nd - 2]), y = iter_of(blk, ld->load.indices[nd - 1]);
  if (x == row && y == col) *trans = false;
  else if (x == col && y == row) *trans = true;
  else
    return mlc_error_set(err, "access pattern mismatch: %s %s is not indexed [%s, %s] or "
                         "[%s, %s]", what, buf->name, blk->iters[row].var->name,
                         blk->iters[col].var->name, blk->iters[col].var->name,
                         blk->iters[row].var->name);
  return true;
}

static bool is_float32_buffer(const mlc_buffer *b, mlc_error *err) {
  if (b->dtype != MLC_FLOAT32)
    return mlc_error_set(err, "dtype mismatch: %s is %s; the library multiplies float32 only",
                         b->name, mlc_dtype_name(b->dtype));
  if (strcmp(b->scope, "global") != 0)
    return mlc_error_set(err, "buffer %s is in scope \"%s\", not global", b->name, b->scope);
  return true;
}

/* C[...] = C[...] + x * y (either order of the sum). */
static bool split_update(const mlc_stmt *st, const mlc_expr **cld, const mlc_expr **x,
                         const mlc_expr **y) {
  const mlc_expr *v = st->store.value;
  if (v->kind != MLC_EXPR_ADD) return false;
  const mlc_expr *p = v->bin.b, *c = v->bin.a;
  if (p->kind != MLC_EXPR_MUL) p = v->bin.a, c = v->bin.b;
  if (p->kind != MLC_EXPR_MUL || c->kind != MLC_EXPR_LOAD || c->load.buf != st->store.buf)
    return false;
  *cld = c;
  *x = p->bin.a;
  *y = p->bin.b;
  return true;
}

static bool match_init(const mlc_block *blk, const mlc_stmt *store, gemm *g, mlc_error *err) {
  g->accumulate = blk->init == NULL;
  if (!blk->init) return true;
  const mlc_stmt *in = blk->init;
  if (in->kind != MLC_STMT_STORE || in->store.buf != store->store.buf ||
      !same_indices(blk, store->store.buf->ndim, in->store.indices, store->store.indices) ||
      in->store.value->kind != MLC_EXPR_FLOAT_IMM || in->store.value->float_val != 0)
    return mlc_error_set(err, "reduction mismatch: the init of block %s does not set %s to 0",
                         blk->name, store->store.buf->name);
  return true;
}

static bool match_gemm(const mlc_block *blk, gemm *g, mlc_error *err) {
  const mlc_stmt *st = blk->body;
  if (blk->n_allocs) return mlc_error_set(err, "block %s allocates buffers", blk->name);
  if (!st || st->kind != MLC_STMT_STORE)
    return mlc_error_set(err, "block %s is not one store C[...] = C[...] + A[...] * B[...]",
                         blk->name);
  const mlc_expr *cld, *x, *y;
  if (!split_update(st, &cld, &x, &y))
    return mlc_error_set(err, "block %s does not compute C[...] = C[...] + A[...] * B[...]",
                         blk->name);
  if (st->store.value->dtype != MLC_FLOAT32 || x->dtype != MLC_FLOAT32 || y->dtype != MLC_FLOAT32)
    return mlc_error_set(err, "dtype mismatch: block %s computes in %s; the library multiplies "
                         "float32 only", blk->name, mlc_dtype_name(st->store.value->dtype));
  if (x->kind != MLC_EXPR_LOAD || y->kind != MLC_EXPR_LOAD)
    return mlc_error_set(err, "block %s multiplies something other than two buffer elements "
                         "(casts, arithmetic)", blk->name);
  g->c = st->store.buf;
  int nd = g->c->ndim;
  if (blk->n_iters > 32) return mlc_error_set(err, "block %s has %d iterators", blk->name, blk->n_iters);
  if (nd < 2) return mlc_error_set(err, "block %s writes a %d-dimensional %s, not a matrix",
                                   blk->name, nd, g->c->name);
  if (!same_indices(blk, nd, st->store.indices, cld->load.indices))
    return mlc_error_set(err, "access pattern mismatch: block %s reads %s elsewhere than it "
                         "writes it", blk->name, g->c->name);
  int n_reduce = 0;
  g->iv_k = -1;
  for (int i = 0; i < blk->n_iters; i++)
    if (blk->iters[i].kind == MLC_ITER_REDUCE) n_reduce++, g->iv_k = i;
  if (n_reduce != 1)
    return mlc_error_set(err, "block %s has %d reduction iterators, a matrix product one",
                         blk->name, n_reduce);
  if (blk->n_iters != nd + 1)
    return mlc_error_set(err, "access pattern mismatch: block %s has %d iterators; C[...] is "
                         "indexed by %d", blk->name, blk->n_iters, nd);
  for (int d = 0; d < nd; d++) {
    int it = iter_of(blk, st->store.indices[d]);
    for (int e = 0; e < d && it >= 0; e++)
      if (iter_of(blk, st->store.indices[e]) == it) it = -1;
    if (it < 0 || blk->iters[it].kind != MLC_ITER_SPATIAL)
      return mlc_error_set(err, "access pattern mismatch: %s index %d of block %s is not a "
                           "spatial iterator of its own", g->c->name, d, blk->name);
  }
  g->iv_i = iter_of(blk, st->store.indices[nd - 2]);
  g->iv_j = iter_of(blk, st->store.indices[nd - 1]);
  /* A is the operand indexed by i; B by j */
  const mlc_expr *la = x, *lb = y;
  int xn = x->load.buf->ndim;
  bool x_has_i = iter_of(blk, x->load.indices[xn - 1]) == g->iv_i ||
                 (xn >= 2 && iter_of(blk, x->load.indices[xn - 2]) == g->iv_i);
  if (!x_has_i) la = y, lb = x;
  if (la->load.buf->ndim < 2 || lb->load.buf->ndim < 2)
    return mlc_error_set(err, "access pattern mismatch: block %s multiplies by a vector",
                         blk->name);
  g->a = la->load.buf;
  g->b = lb->load.buf;
  g->la = la, g->lb = lb, g->lc = cld;
  if (!match_operand(blk, la, cld, g->iv_i, g->iv_k, &g->trans_a, "A", err) ||
      !match_operand(blk, lb, cld, g->iv_k, g->iv_j, &g->trans_b, "B", err))
    return false;
  if (g->a == g->c || g->b == g->c)
    return mlc_error_set(err, "block %s multiplies %s into itself", blk->name, g->c->name);
  if (!is_float32_buffer(g->a, err) || !is_float32_buffer(g->b, err) ||
      !is_float32_buffer(g->c, err))
    return false;
  for (int i = 0; i < blk->n_iters; i++) {
    int64_t lo = -1;
    if (!mlc_expr_is_const_int(blk->iters[i].dom.min, &lo) || lo != 0 ||
        !mlc_expr_is_const_int(blk->iters[i].dom.extent, &lo))
      return mlc_error_set(err, "iterator %s of block %s has no constant domain from 0",
                           blk->iters[i].var->name, blk->name);
  }
  mlc_expr_is_const_int(blk->iters[g->iv_i].dom.extent, &g->m);
  mlc_expr_is_const_int(blk->iters[g->iv_j].dom.extent, &g->n);
  mlc_expr_is_const_int(blk->iters[g->iv_k].dom.extent, &g->k);
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX)
    return mlc_error_set(err, "block %s is larger than BLAS's 32-bit sizes", blk->name);
  return match_init(blk, st, g, err);
}

/* The loops of the block (below its parent block), outer first: one per
 * iterator, each its iterator's whole domain, nested with nothing beside
 * them. */
static int match_loops(mlc_sched *s, mlc_stmt *r, mlc_stmt **loops, mlc_error *err) {
  const mlc_block *blk = r->realize.block;
  int nl = sched_scope_loops(s, r, loops, NULL);
  if (nl != blk->n_iters)
    return mlc_error_set(err, "block %s sits under %d loops, not one per iterator (%d): "
                         "schedule it after the library call, not before", blk->name, nl,
                         blk->n_iters), -1;
  if (r->realize.predicate)
    return mlc_error_set(err, "block %s has a predicate (T.where)", blk->name), -1;
  for (int l = 0; l < nl; l++) {
    mlc_stmt *body = l + 1 < nl ? loops[l + 1] : r;
    if (loops[l]->loop.body != body)
      return mlc_error_set(err, "loop %s holds more than the loops of block %s",
                           loops[l]->loop.var->name, blk->name), -1;
    if (loops[l]->loop.kind == MLC_FOR_THREAD_BINDING)
      return mlc_error_set(err, "loop %s is bound to a thread", loops[l]->loop.var->name), -1;
  }
  for (int i = 0; i < blk->n_iters; i++) {
    const mlc_expr *v = r->realize.values[i];
    int l = -1;
    for (int q = 0; q < nl && v->kind == MLC_EXPR_VAR; q++)
      if (loops[q]->loop.var == v->var) l = q;
    int64_t lo, ext, dom;
    if (l < 0 || !mlc_expr_is_const_int(loops[l]->loop.min, &lo) || lo != 0 ||
        !mlc_expr_is_const_int(loops[l]->loop.extent, &ext) ||
        !mlc_expr_is_const_int(blk->iters[i].dom.extent, &dom) || ext != dom)
      return mlc_error_set(err, "iterator %s of block %s is not bound to a loop over its "
                           "domain", blk->iters[i].var->name, blk->name), -1;
  }
  return nl;
}

/* ---- rewriting ----------------------------------------------------------------- */

/* The region of an operand for one call: the batch indices (the block's
 * batch iterators, which the realize keeps), then [0, rows) x [0, cols). */
static mlc_region operand_region(mlc_arena *a, const mlc_block *blk, mlc_buffer *buf,
                                 const mlc_expr *ld, int64_t rows, int64_t cols) {
  int nd = buf->ndim;
  mlc_region rg = {buf, MLC_NEW_ARRAY(a, mlc_range, nd)};
  for (int d = 0; d < nd - 2; d++)
    rg.ranges[d] = (mlc_range){mlc_ref(a, blk->iters[iter_of(blk, ld->load.indices[d])].var),
                               mlc_int(a, 1)};
  rg.ranges[nd - 2] = (mlc_range){mlc_int(a, 0), mlc_int(a, rows)};
  rg.ranges[nd - 1] = (mlc_range){mlc_int(a, 0), mlc_int(a, cols)};
  return rg;
}

/* A and B in one buffer (X @ X.T): one read region covering both (the
 * same batch indices; both matrices start at row and column 0). */
static mlc_region region_union(mlc_arena *a, const mlc_region *x, const mlc_region *y) {
  int nd = x->buf->ndim;
  mlc_region u = {x->buf, MLC_NEW_ARRAY(a, mlc_range, nd)};
  for (int d = 0; d < nd; d++) {
    int64_t ex = 1, ey = 1;
    mlc_expr_is_const_int(x->ranges[d].extent, &ex);
    mlc_expr_is_const_int(y->ranges[d].extent, &ey);
    u.ranges[d] = d < nd - 2 ? x->ranges[d]
                             : (mlc_range){mlc_int(a, 0), mlc_int(a, ex > ey ? ex : ey)};
  }
  return u;
}

typedef struct call_args {
  mlc_arena *a;
  mlc_xarg args[12];
  mlc_expr *kids[64];
  int n_args, n_kids;
} call_args;

static void arg_int(call_args *c, int64_t v) {
  c->args[c->n_args++] = (mlc_xarg){.kind = MLC_XARG_VALUE, .kid = c->n_kids};
  c->kids[c->n_kids++] = mlc_int(c->a, v);
}

static void arg_ptr(call_args *c, const mlc_region *rg, int access) {
  int nd = rg->buf->ndim;
  c->args[c->n_args++] = (mlc_xarg){.kind = MLC_XARG_PTR, .buf = rg->buf, .access = access,
                                    .kid = c->n_kids};
  for (int d = 0; d < nd; d++) c->kids[c->n_kids + d] = rg->ranges[d].min;
  for (int d = 0; d < nd; d++) c->kids[c->n_kids + nd + d] = rg->ranges[d].extent;
  c->n_kids += 2 * nd;
}

static void arg_row_stride(call_args *c, mlc_buffer *buf) {
  c->args[c->n_args++] = (mlc_xarg){.kind = MLC_XARG_STRIDE, .buf = buf, .dim = buf->ndim - 2};
}

static void rewrite(mlc_sched *s, mlc_stmt *r, mlc_stmt **loops, int nl, const gemm *g,
                    const char *fn) {
  mlc_arena *a = s->arena;
  mlc_block *blk = r->realize.block;
  const mlc_expr *la = g->la, *lb = g->lb, *cst = g->lc;
  mlc_region ra = operand_region(a, blk, g->a, la, g->trans_a ? g->k : g->m,
                                 g->trans_a ? g->m : g->k);
  mlc_region rb = operand_region(a, blk, g->b, lb, g->trans_b ? g->n : g->k,
                                 g->trans_b ? g->k : g->n);
  mlc_region rc = operand_region(a, blk, g->c, cst, g->m, g->n);
  call_args c = {.a = a};
  arg_int(&c, g->trans_a);
  arg_int(&c, g->trans_b);
  arg_int(&c, g->m);
  arg_int(&c, g->n);
  arg_int(&c, g->k);
  arg_ptr(&c, &ra, MLC_ACCESS_READ);
  arg_row_stride(&c, g->a);
  arg_ptr(&c, &rb, MLC_ACCESS_READ);
  arg_row_stride(&c, g->b);
  arg_ptr(&c, &rc, g->accumulate ? MLC_ACCESS_READ | MLC_ACCESS_WRITE : MLC_ACCESS_WRITE);
  arg_row_stride(&c, g->c);
  arg_int(&c, g->accumulate);
  mlc_expr *call = mlc_call_extern(a, MLC_INT32, fn, c.n_args, c.args, c.n_kids, c.kids);

  /* The block keeps its batch iterators (and their loops, in order). */
  int nb = 0;
  mlc_iter_var *iters = MLC_NEW_ARRAY(a, mlc_iter_var, blk->n_iters);
  mlc_expr **values = MLC_NEW_ARRAY(a, mlc_expr *, blk->n_iters);
  for (int i = 0; i < blk->n_iters; i++)
    if (i != g->iv_i && i != g->iv_j && i != g->iv_k) {
      iters[nb] = blk->iters[i];
      values[nb++] = r->realize.values[i];
    }
  mlc_stmt *kept[64];
  int nk = 0;
  for (int l = 0; l < nl; l++)
    for (int i = 0; i < nb; i++)
      if (values[i]->var == loops[l]->loop.var) kept[nk++] = loops[l];
  MLC_ASSERT(nk == nb);
  mlc_region *reads = MLC_NEW_ARRAY(a, mlc_region, 3);
  int n_reads = 0;
  reads[n_reads++] = g->b != g->a ? ra : region_union(a, &ra, &rb);
  if (g->b != g->a) reads[n_reads++] = rb;
  if (g->accumulate) reads[n_reads++] = rc;
  mlc_region *writes = MLC_NEW_ARRAY(a, mlc_region, 1);
  writes[0] = rc;
  blk->iters = iters, blk->n_iters = nb;
  blk->reads = reads, blk->n_reads = n_reads;
  blk->writes = writes, blk->n_writes = 1;
  blk->init = NULL;
  blk->body = mlc_evaluate_new(a, call);
  r->realize.values = values;

  /* Re-chain: kept loops, then the realize, in place of the outer loop. */
  mlc_stmt *top = nk ? kept[0] : r;
  for (int l = 0; l < nk; l++) kept[l]->loop.body = l + 1 < nk ? kept[l + 1] : r;
  if (nl == 0 || loops[0] == top) return;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, loops[0], path);
  MLC_ASSERT(n >= 2);
  *sched_child_slot(path[n - 2], loops[0]) = top;
}

static bool run(mlc_sched *s, mlc_rv block, const char *fn, mlc_error *err) {
  mlc_block *blk = s->rvs.data[block].block;
  mlc_stmt *r = sched_find_realize(s, blk);
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  gemm g;
  if (!match_gemm(blk, &g, err)) return false;
  int nl = match_loops(s, r, loops, err);
  if (nl < 0) return false;
  rewrite(s, r, loops, nl, &g, fn);
  s->height = 0;
  return mlc_verify_func_in(s->arena, s->func, err) ||
         mlc_error_prefix(err, "the library call does not fit block %s", blk->name);
}

bool mlc_sched_library_call(mlc_sched *s, mlc_rv block, const char *library, mlc_error *err) {
  char desc[96];
  const char *fn = NULL;
  for (int i = 0; i < MLC_COUNTOF(libraries); i++)
    if (strcmp(libraries[i].name, library) == 0) fn = libraries[i].fn;
  if (!fn) return mlc_error_set(err, "library_call: unknown library \"%s\" (known: openblas)", library);
  if (!sched_check_block(s, "library_call", block, err)) return false;
  if (sched_func_height(s) > SCHED_MAX_NEST)
    return mlc_error_set(err, "library_call: the function nests deeper than %d statements",
                         SCHED_MAX_NEST);
  if (!mlc_interp_register_extern(fn, sgemm_ref, NULL))
    return mlc_error_set(err, "library_call: cannot register %s with the interpreter", fn);
  /* First on a copy, so that a refusal leaves s (IR, handles, trace,
   * generator, arena) as it was; then, the same, on s. */
  mlc_sched *probe = mlc_sched_copy(s);
  bool ok = run(probe, block, fn, err);
  mlc_sched_free(probe);
  if (!ok)
    return mlc_error_prefix(err, "library_call: %s with %s", sched_rv_desc(s, block, desc),
                            library);
  ok = run(s, block, fn, err);
  MLC_ASSERT(ok);
  mlc_operand in = MLC_OP_RV(block);
  mlc_attr at = sched_attr_str("library", library);
  sched_record(s, MLC_INST_LIBRARY_CALL, 1, &in, 1, &at, 0, NULL);
  return true;
}

const char *mlc_trace_library(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    const mlc_attr *at = in->kind == MLC_INST_LIBRARY_CALL ? sched_attr_find(in, "library") : NULL;
    if (at && at->kind == MLC_ATTR_STR) return at->s;
  }
  return NULL;
}
