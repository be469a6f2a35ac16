/* Region analysis (ir/region.c), deep copy and substitution (ir/copy.c).
 * IR is built by hand with the constructors; regions are compared in a
 * printed form made here ("A[vi:+3]" = min vi, extent 3), independent of
 * the printer. */
#include "ir/ir.h"
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a test-local expression printer (Python precedence) ------------------- */

static int prec(const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_ADD: case MLC_EXPR_SUB: return 11;
  case MLC_EXPR_MUL: case MLC_EXPR_DIV: case MLC_EXPR_FLOORDIV: case MLC_EXPR_FLOORMOD: return 12;
  case MLC_EXPR_EQ: case MLC_EXPR_NE: case MLC_EXPR_LT: case MLC_EXPR_LE: case MLC_EXPR_GT:
  case MLC_EXPR_GE: return 6;
  case MLC_EXPR_AND: return 4;
  case MLC_EXPR_OR: return 3;
  case MLC_EXPR_INT_IMM: return e->int_val < 0 ? 13 : 100;
  default: return 100;
  }
}

static void show_to(mlc_str *o, const mlc_expr *e) {
  const char *op = mlc_binop_symbol(e->kind);
  if (op) {
    int p = prec(e);
    bool lp = prec(e->bin.a) < p, rp = prec(e->bin.b) <= p;
    if (lp) mlc_str_putc(o, '(');
    show_to(o, e->bin.a);
    if (lp) mlc_str_putc(o, ')');
    mlc_str_printf(o, " %s ", op);
    if (rp) mlc_str_putc(o, '(');
    show_to(o, e->bin.b);
    if (rp) mlc_str_putc(o, ')');
    return;
  }
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: mlc_str_printf(o, "%lld", (long long)e->int_val); return;
  case MLC_EXPR_FLOAT_IMM: mlc_str_printf(o, "%g", e->float_val); return;
  case MLC_EXPR_VAR: mlc_str_puts(o, e->var->name); return;
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    mlc_str_puts(o, e->kind == MLC_EXPR_MIN ? "T.min(" : "T.max(");
    show_to(o, e->bin.a);
    mlc_str_puts(o, ", ");
    show_to(o, e->bin.b);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_LOAD:
    mlc_str_printf(o, "%s[", e->load.buf->name);
    for (int i = 0; i < e->load.buf->ndim; i++) {
      if (i) mlc_str_puts(o, ", ");
      show_to(o, e->load.indices[i]);
    }
    mlc_str_puts(o, "]");
    return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    mlc_str_puts(o, "T.if_then_else(");
    show_to(o, e->sel.cond);
    mlc_str_puts(o, ", ");
    show_to(o, e->sel.t);
    mlc_str_puts(o, ", ");
    show_to(o, e->sel.f);
    mlc_str_puts(o, ")");
    return;
  default:
    mlc_str_printf(o, "<%s>", mlc_expr_kind_name(e->kind));
  }
}

static char ring[8][1024];
static int ring_k;
static const char *keep(mlc_str *o) {
  char *dst = ring[ring_k++ % 8];
  snprintf(dst, 1024, "%s", mlc_str_cstr(o));
  mlc_str_free(o);
  return dst;
}

static const char *show(const mlc_expr *e) {
  mlc_str o = {0};
  show_to(&o, e);
  return keep(&o);
}

static void region_to(mlc_str *o, const mlc_region *r) {
  mlc_str_printf(o, "%s[", r->buf->name);
  for (int d = 0; d < r->buf->ndim; d++) {
    if (d) mlc_str_puts(o, ", ");
    show_to(o, r->ranges[d].min);
    mlc_str_puts(o, ":+");
    show_to(o, r->ranges[d].extent);
  }
  mlc_str_puts(o, "]");
}

/* "A[vi:+3] B[0:+16]" */
static const char *show_regions(int n, const mlc_region *rs) {
  mlc_str o = {0};
  for (int i = 0; i < n; i++) {
    if (i) mlc_str_putc(&o, ' ');
    region_to(&o, &rs[i]);
  }
  if (n == 0) mlc_str_puts(&o, "-");
  return keep(&o);
}

static const char *show_set(mlc_region_set s) { return show_regions(s.n, s.regions); }

/* ---- building IR ------------------------------------------------------------- */

static mlc_arena *A;
static mlc_expr *I(int64_t v) { return mlc_int(A, v); }
static mlc_expr *R(mlc_var *v) { return mlc_ref(A, v); }
static mlc_expr *add(mlc_expr *x, mlc_expr *y) { return mlc_add(A, x, y); }
static mlc_expr *sub(mlc_expr *x, mlc_expr *y) { return mlc_sub(A, x, y); }
static mlc_expr *mul(mlc_expr *x, mlc_expr *y) { return mlc_mul(A, x, y); }
static mlc_var *var(const char *name) { return mlc_var_new(A, name, MLC_INT32); }
static mlc_buffer *buf(const char *name, int ndim, const int64_t *shape) {
  return mlc_buffer_new(A, name, MLC_FLOAT32, ndim, shape, "global");
}
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define EXPRS(...) ((mlc_expr *[]){__VA_ARGS__})
static mlc_expr *ld(mlc_buffer *b, mlc_expr **idx) { return mlc_load(A, b, idx); }
static mlc_stmt *st(mlc_buffer *b, mlc_expr **idx, mlc_expr *v) { return mlc_store_new(A, b, idx, v); }
static mlc_stmt *loop(mlc_var *v, int64_t ext, mlc_stmt *body) {
  return mlc_for_new(A, v, I(0), I(ext), MLC_FOR_SERIAL, body);
}

/* A block with n iter vars over [0, ext[i]); kinds "SSR". */
static mlc_block *block(const char *name, int n, mlc_var **iters, const int64_t *ext,
                        const char *kinds) {
  mlc_block *b = mlc_block_new(A, name);
  b->n_iters = n;
  b->iters = MLC_NEW_ARRAY(A, mlc_iter_var, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    b->iters[i].var = iters[i];
    b->iters[i].dom = (mlc_range){I(0), I(ext[i])};
    b->iters[i].kind = kinds[i] == 'R' ? MLC_ITER_REDUCE : MLC_ITER_SPATIAL;
  }
  return b;
}

/* ---- regions ------------------------------------------------------------------ */

static void test_window_sum(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 1, SHAPE(10)), *b = buf("B", 1, SHAPE(8));
  mlc_var *i = var("i"), *vi = var("vi");
  mlc_block *blk = block("B", 1, (mlc_var *[]){vi}, SHAPE(8), "S");
  mlc_expr *sum = add(add(ld(a, EXPRS(R(vi))), ld(a, EXPRS(add(R(vi), I(1))))),
                      ld(a, EXPRS(add(R(vi), I(2)))));
  blk->body = st(b, EXPRS(R(vi)), sum);
  mlc_block_infer_regions(A, blk);
  CHECK_STREQ(show_regions(blk->n_reads, blk->reads), "A[vi:+3]");
  CHECK_STREQ(show_regions(blk->n_writes, blk->writes), "B[vi:+1]");
  /* The region's min is the var itself; the extent a constant of its dtype. */
  CHECK(blk->reads[0].ranges[0].min->kind == MLC_EXPR_VAR);
  CHECK(blk->reads[0].ranges[0].extent->kind == MLC_EXPR_INT_IMM &&
        blk->reads[0].ranges[0].extent->dtype == MLC_INT32);
  /* Out of order and with a gap: the hull. */
  mlc_block *b2 = block("B2", 1, (mlc_var *[]){vi}, SHAPE(8), "S");
  b2->body = st(b, EXPRS(R(vi)), add(ld(a, EXPRS(add(R(vi), I(2)))), ld(a, EXPRS(sub(R(vi), I(1))))));
  mlc_block_infer_regions(A, b2);
  CHECK_STREQ(show_regions(b2->n_reads, b2->reads), "A[vi - 1:+4]");
  /* The whole loop nest: the loop var is relaxed over [0, 8). */
  mlc_stmt *nest = loop(i, 8, mlc_realize_new(A, blk, EXPRS(R(i)), NULL));
  mlc_region_set rd, wr;
  mlc_stmt_access_regions(A, nest, &rd, &wr);
  CHECK_STREQ(show_set(rd), "A[0:+10]");
  CHECK_STREQ(show_set(wr), "B[0:+8]");
  /* The realize alone: vi is replaced by its binding, i stays symbolic. */
  mlc_stmt_access_regions(A, nest->loop.body, &rd, &wr);
  CHECK_STREQ(show_set(rd), "A[i:+3]");
  CHECK_STREQ(show_set(wr), "B[i:+1]");
  mlc_arena_free(A);
}

/* The blockized matmul: an outer block over 16x16x16 tiles whose body holds
 * loops and the inner block; the init writes C through its own block. */
static mlc_block *tensorized_block(mlc_buffer *a, mlc_buffer *b, mlc_buffer *c, mlc_var **outer) {
  mlc_var *vi0 = var("vi0"), *vj0 = var("vj0"), *vk0 = var("vk0");
  outer[0] = vi0, outer[1] = vj0, outer[2] = vk0;
  mlc_block *ob = block("C_o", 3, outer, SHAPE(8, 8, 8), "SSR");
  /* init: for i1, j1: block C_init(vi = vi0*16 + i1, vj = vj0*16 + j1): C[vi, vj] = 0 */
  mlc_var *i1 = var("i1"), *j1 = var("j1"), *ivi = var("vi_i"), *ivj = var("vj_i");
  mlc_block *ib = block("C_init", 2, (mlc_var *[]){ivi, ivj}, SHAPE(128, 128), "SS");
  ib->body = st(c, EXPRS(R(ivi), R(ivj)), mlc_float(A, MLC_FLOAT32, 0));
  mlc_stmt *init_r = mlc_realize_new(A, ib, EXPRS(add(mul(R(vi0), I(16)), R(i1)),
                                                  add(mul(R(vj0), I(16)), R(j1))), NULL);
  ob->init = loop(i1, 16, loop(j1, 16, init_r));
  /* body: for i2, j2, k2: block C(vi, vj, vk): C[vi, vj] += A[vi, vk] * B[vk, vj] */
  mlc_var *i2 = var("i2"), *j2 = var("j2"), *k2 = var("k2");
  mlc_var *vi = var("vi"), *vj = var("vj"), *vk = var("vk");
  mlc_block *ub = block("C", 3, (mlc_var *[]){vi, vj, vk}, SHAPE(128, 128, 128), "SSR");
  mlc_expr *acc = ld(c, EXPRS(R(vi), R(vj)));
  ub->body = st(c, EXPRS(R(vi), R(vj)),
                add(acc, mul(ld(a, EXPRS(R(vi), R(vk))), ld(b, EXPRS(R(vk), R(vj))))));
  mlc_stmt *upd = mlc_realize_new(A, ub, EXPRS(add(mul(R(vi0), I(16)), R(i2)),
                                               add(mul(R(vj0), I(16)), R(j2)),
                                               add(mul(R(vk0), I(16)), R(k2))), NULL);
  ob->body = loop(i2, 16, loop(j2, 16, loop(k2, 16, upd)));
  return ob;
}

static void test_tensorized_block(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 2, SHAPE(128, 128)), *b = buf("B", 2, SHAPE(128, 128));
  mlc_buffer *c = buf("C", 2, SHAPE(128, 128));
  mlc_var *outer[3];
  mlc_block *ob = tensorized_block(a, b, c, outer);
  mlc_block_infer_regions(A, ob);
  /* C's self-read is dropped: the block has an init. */
  CHECK_STREQ(show_regions(ob->n_reads, ob->reads), "A[vi0 * 16:+16, vk0 * 16:+16] B[vk0 * 16:+16, vj0 * 16:+16]");
  CHECK_STREQ(show_regions(ob->n_writes, ob->writes), "C[vi0 * 16:+16, vj0 * 16:+16]");
  /* The inner block has no init: its read of C stays, in order of first
   * appearance (the accumulator's load comes first). */
  mlc_block *ub = ob->body->loop.body->loop.body->loop.body->realize.block;
  mlc_block_infer_regions(A, ub);
  CHECK_STREQ(show_regions(ub->n_reads, ub->reads), "C[vi:+1, vj:+1] A[vi:+1, vk:+1] B[vk:+1, vj:+1]");
  CHECK_STREQ(show_regions(ub->n_writes, ub->writes), "C[vi:+1, vj:+1]");
  /* The statement view of the outer body keeps the self-read. */
  mlc_region_set rd, wr;
  mlc_stmt_access_regions(A, ob->body, &rd, &wr);
  CHECK_STREQ(show_set(rd), "C[vi0 * 16:+16, vj0 * 16:+16] A[vi0 * 16:+16, vk0 * 16:+16] B[vk0 * 16:+16, vj0 * 16:+16]");
  /* The outer block in its own loop nest, relaxed: the whole buffers. */
  mlc_var *i0 = var("i0"), *j0 = var("j0"), *k0 = var("k0");
  mlc_stmt *nest = loop(i0, 8, loop(j0, 8, loop(k0, 8,
      mlc_realize_new(A, ob, EXPRS(R(i0), R(j0), R(k0)), NULL))));
  mlc_stmt_access_regions(A, nest, &rd, &wr);
  CHECK_STREQ(show_set(rd), "C[0:+128, 0:+128] A[0:+128, 0:+128] B[0:+128, 0:+128]");
  CHECK_STREQ(show_set(wr), "C[0:+128, 0:+128]");
  /* Only k0 inside (compute_at-style view from under j0). */
  mlc_stmt_access_regions(A, nest->loop.body->loop.body, &rd, &wr);
  CHECK_STREQ(show_set(wr), "C[i0 * 16:+16, j0 * 16:+16]");
  CHECK_STREQ(show_set(rd), "C[i0 * 16:+16, j0 * 16:+16] A[i0 * 16:+16, 0:+128] B[0:+128, j0 * 16:+16]");
  mlc_arena_free(A);
}

static void test_reduction_self_read_te(void) {
  A = mlc_arena_new();
  mlc_te *te = mlc_te_new(A);
  mlc_te_tensor *ta = mlc_te_placeholder(te, "A", 2, SHAPE(16, 8), MLC_FLOAT32);
  mlc_te_tensor *tb = mlc_te_placeholder(te, "B", 2, SHAPE(8, 12), MLC_FLOAT32);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(16, 12), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, 8, "k");
  mlc_te_tensor *tc = mlc_te_sum(te, mul(mlc_te_at(te, ta, ij[0], k), mlc_te_at(te, tb, k, ij[1])));
  mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 3, (mlc_te_tensor *[]){ta, tb, tc});
  mlc_stmt *nest = mlc_func_root(f)->body;
  mlc_stmt *r = nest;
  while (r->kind == MLC_STMT_FOR) r = r->loop.body;
  mlc_block *blk = r->realize.block;
  blk->n_reads = blk->n_writes = 0;
  mlc_block_infer_regions(A, blk);
  CHECK_STREQ(show_regions(blk->n_reads, blk->reads), "A[vi:+1, vk:+1] B[vk:+1, vj:+1]");
  CHECK_STREQ(show_regions(blk->n_writes, blk->writes), "C[vi:+1, vj:+1]");
  /* Without the init the self-read is a read like any other. */
  mlc_stmt *init = blk->init;
  blk->init = NULL;
  mlc_block_infer_regions(A, blk);
  CHECK_STREQ(show_regions(blk->n_reads, blk->reads), "C[vi:+1, vj:+1] A[vi:+1, vk:+1] B[vk:+1, vj:+1]");
  blk->init = init;
  /* The whole function body (root realize): loops relaxed. */
  mlc_region_set rd, wr;
  mlc_stmt_access_regions(A, f->body, &rd, &wr);
  CHECK_STREQ(show_set(rd), "C[0:+16, 0:+12] A[0:+16, 0:+8] B[0:+8, 0:+12]");
  CHECK_STREQ(show_set(wr), "C[0:+16, 0:+12]");
  mlc_arena_free(A);
}

static void test_if_then_else_and_if(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 1, SHAPE(8)), *b = buf("B", 1, SHAPE(10)), *m = buf("M", 1, SHAPE(10));
  mlc_var *vi = var("vi"), *i = var("i");
  mlc_block *blk = block("pad", 1, (mlc_var *[]){vi}, SHAPE(10), "S");
  mlc_expr *cond = mlc_binary(A, MLC_EXPR_AND, mlc_binary(A, MLC_EXPR_LE, I(1), R(vi)),
                              mlc_binary(A, MLC_EXPR_LT, R(vi), I(9)));
  blk->body = st(b, EXPRS(R(vi)), mlc_if_then_else(A, cond, ld(a, EXPRS(sub(R(vi), I(1)))),
                                                  mlc_float(A, MLC_FLOAT32, 0)));
  mlc_block_infer_regions(A, blk);
  CHECK_STREQ(show_regions(blk->n_reads, blk->reads), "A[vi - 1:+1]");
  /* Relaxed over the loop it goes out of bounds: only conservative, as
   * the untaken side of T.if_then_else may. */
  mlc_region_set rd, wr;
  mlc_stmt_access_regions(A, loop(i, 10, mlc_realize_new(A, blk, EXPRS(R(i)), NULL)), &rd, &wr);
  CHECK_STREQ(show_set(rd), "A[-1:+10]");
  /* An if statement: its condition's loads are reads; both branches count. */
  mlc_block *b2 = block("mask", 1, (mlc_var *[]){vi}, SHAPE(8), "S");
  mlc_expr *mc = mlc_binary(A, MLC_EXPR_GT, ld(m, EXPRS(add(R(vi), I(2)))), mlc_float(A, MLC_FLOAT32, 0));
  b2->body = mlc_if_new(A, mc, st(b, EXPRS(R(vi)), ld(a, EXPRS(R(vi)))),
                        st(b, EXPRS(add(R(vi), I(1))), mlc_float(A, MLC_FLOAT32, 0)));
  mlc_block_infer_regions(A, b2);
  CHECK_STREQ(show_regions(b2->n_reads, b2->reads), "M[vi + 2:+1] A[vi:+1]");
  CHECK_STREQ(show_regions(b2->n_writes, b2->writes), "B[vi:+2]");
  mlc_arena_free(A);
}

static void test_non_affine_and_union(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 1, SHAPE(20)), *c = buf("C", 1, SHAPE(5)), *o = buf("O", 1, SHAPE(20));
  mlc_buffer *idx = mlc_buffer_new(A, "idx", MLC_INT32, 1, SHAPE(4), "global");
  mlc_var *vi = var("vi"), *vj = var("vj"), *k = var("k");
  /* C[(vi*3 + k) % 5] with k inside: floormod bounds [0, 4]. */
  mlc_block *b1 = block("b1", 1, (mlc_var *[]){vi}, SHAPE(4), "S");
  mlc_expr *fm = mlc_binary(A, MLC_EXPR_FLOORMOD, add(mul(R(vi), I(3)), R(k)), I(5));
  b1->body = loop(k, 4, st(o, EXPRS(R(vi)), ld(c, EXPRS(fm))));
  mlc_block_infer_regions(A, b1);
  CHECK_STREQ(show_regions(b1->n_reads, b1->reads), "C[0:+5]");
  /* A gather A[idx[k]]: the index is a load: the whole dimension. */
  mlc_block *b2 = block("b2", 1, (mlc_var *[]){vi}, SHAPE(4), "S");
  b2->body = loop(k, 4, st(o, EXPRS(R(vi)), ld(a, EXPRS(ld(idx, EXPRS(R(k)))))));
  mlc_block_infer_regions(A, b2);
  CHECK_STREQ(show_regions(b2->n_reads, b2->reads), "A[0:+20] idx[0:+4]");
  /* Two symbolic accesses that differ by no constant: min/max, as TVM. */
  mlc_block *b3 = block("b3", 2, (mlc_var *[]){vi, vj}, SHAPE(4, 4), "SS");
  b3->body = st(o, EXPRS(R(vi)), add(ld(a, EXPRS(R(vi))), ld(a, EXPRS(R(vj)))));
  mlc_block_infer_regions(A, b3);
  CHECK_STREQ(show_regions(b3->n_reads, b3->reads),
              "A[T.min(vi, vj):+T.max(vi, vj) - T.min(vi, vj) + 1]");
  /* Non-linear in a relaxed var: vi * k, k in [0, 4) -> bounds need vi: whole. */
  mlc_block *b4 = block("b4", 1, (mlc_var *[]){vi}, SHAPE(4), "S");
  b4->body = loop(k, 4, st(o, EXPRS(R(vi)), ld(a, EXPRS(mul(R(vi), R(k))))));
  mlc_block_infer_regions(A, b4);
  CHECK_STREQ(show_regions(b4->n_reads, b4->reads), "A[0:+20]");
  /* ... but k * k is fine: [0, 9]. */
  mlc_block *b5 = block("b5", 1, (mlc_var *[]){vi}, SHAPE(4), "S");
  b5->body = loop(k, 4, st(o, EXPRS(R(vi)), ld(a, EXPRS(add(R(vi), mul(R(k), R(k)))))));
  mlc_block_infer_regions(A, b5);
  CHECK_STREQ(show_regions(b5->n_reads, b5->reads), "A[vi:+10]");
  mlc_arena_free(A);
}

static void test_symbolic_loop_min_and_locals(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 1, SHAPE(64)), *o = buf("O", 1, SHAPE(16));
  mlc_var *vi = var("vi"), *k = var("k");
  /* for k in range(vi, vi + 4): A[k], A[k * 2] */
  mlc_block *b1 = block("b1", 1, (mlc_var *[]){vi}, SHAPE(16), "S");
  b1->body = mlc_for_new(A, k, R(vi), I(4), MLC_FOR_SERIAL,
                         st(o, EXPRS(R(vi)), ld(a, EXPRS(R(k)))));
  mlc_block_infer_regions(A, b1);
  CHECK_STREQ(show_regions(b1->n_reads, b1->reads), "A[vi:+4]");
  mlc_block *b2 = block("b2", 1, (mlc_var *[]){vi}, SHAPE(16), "S");
  b2->body = mlc_for_new(A, k, R(vi), I(4), MLC_FOR_SERIAL,
                         st(o, EXPRS(R(vi)), ld(a, EXPRS(mul(R(k), I(2))))));
  mlc_block_infer_regions(A, b2);
  CHECK_STREQ(show_regions(b2->n_reads, b2->reads), "A[vi * 2:+7]");
  /* A buffer allocated by the block itself or by a nested block is not
   * visible outside. */
  mlc_buffer *t = mlc_buffer_new(A, "T", MLC_FLOAT32, 1, SHAPE(16), "local");
  mlc_buffer *u = mlc_buffer_new(A, "U", MLC_FLOAT32, 1, SHAPE(16), "local");
  mlc_var *vj = var("vj"), *j = var("j");
  mlc_block *inner = block("inner", 1, (mlc_var *[]){vj}, SHAPE(16), "S");
  inner->n_allocs = 1;
  inner->allocs = MLC_NEW_ARRAY(A, mlc_buffer *, 1);
  inner->allocs[0] = u;
  inner->body = mlc_seq_new(A, 2, (mlc_stmt *[]){st(u, EXPRS(R(vj)), ld(t, EXPRS(R(vj)))),
                                                 st(o, EXPRS(R(vj)), ld(u, EXPRS(R(vj))))});
  mlc_block *outer = block("outer", 0, NULL, NULL, "");
  outer->n_allocs = 1;
  outer->allocs = MLC_NEW_ARRAY(A, mlc_buffer *, 1);
  outer->allocs[0] = t;
  outer->body = mlc_seq_new(A, 2, (mlc_stmt *[]){
      loop(j, 16, st(t, EXPRS(R(j)), ld(a, EXPRS(add(R(j), I(3)))))),
      loop(j, 16, mlc_realize_new(A, inner, EXPRS(R(j)), NULL))});
  mlc_block_infer_regions(A, outer);
  CHECK_STREQ(show_regions(outer->n_reads, outer->reads), "A[3:+16]");
  CHECK_STREQ(show_regions(outer->n_writes, outer->writes), "O[0:+16]");
  mlc_block_infer_regions(A, inner);
  CHECK_STREQ(show_regions(inner->n_reads, inner->reads), "T[vj:+1]");
  CHECK_STREQ(show_regions(inner->n_writes, inner->writes), "O[vj:+1]");
  /* ALLOCATE statements too. */
  mlc_region_set rd, wr;
  mlc_stmt_access_regions(A, mlc_allocate_new(A, t, loop(j, 16, st(t, EXPRS(R(j)), ld(a, EXPRS(R(j)))))),
                          &rd, &wr);
  CHECK_STREQ(show_set(rd), "A[0:+16]");
  CHECK_STREQ(show_set(wr), "-");
  mlc_arena_free(A);
}

static void test_region_relax(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 2, SHAPE(32, 16));
  mlc_var *i = var("i"), *j = var("j"), *vo = var("vo");
  mlc_region r = {a, MLC_NEW_ARRAY(A, mlc_range, 2)};
  r.ranges[0] = (mlc_range){add(mul(R(i), I(4)), R(j)), I(1)};
  r.ranges[1] = (mlc_range){add(R(vo), R(j)), I(2)};
  mlc_region x = mlc_region_relax(A, r, 1, (mlc_var *[]){j}, (int64_t[]){0}, (int64_t[]){4});
  CHECK_STREQ(show_regions(1, &x), "A[i * 4:+4, vo:+5]");
  x = mlc_region_relax(A, r, 2, (mlc_var *[]){i, j}, (int64_t[]){0, 0}, (int64_t[]){8, 4});
  CHECK_STREQ(show_regions(1, &x), "A[0:+32, vo:+5]");
  x = mlc_region_relax(A, r, 1, (mlc_var *[]){i}, (int64_t[]){2}, (int64_t[]){3});
  CHECK_STREQ(show_regions(1, &x), "A[j + 8:+9, vo + j:+2]");
  /* Nothing to relax: the region comes back simplified. */
  x = mlc_region_relax(A, r, 0, NULL, NULL, NULL);
  CHECK_STREQ(show_regions(1, &x), "A[i * 4 + j:+1, vo + j:+2]");
  /* The input is untouched. */
  CHECK_STREQ(show_regions(1, &r), "A[i * 4 + j:+1, vo + j:+2]");
  mlc_arena_free(A);
}

/* Randomized soundness: random index expressions over an outer (symbolic)
 * var vi and inner loops k, m; every index value, for sampled vi and all
 * k, m, must lie in the inferred region evaluated at that vi (or be outside
 * the buffer where the region is the whole dimension). */
static mlc_var *ev_vars[3];

static bool ev(const mlc_expr *e, const int64_t *pt, int64_t *out) {
  int64_t x, y;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: *out = e->int_val; return true;
  case MLC_EXPR_VAR:
    for (int i = 0; i < 3; i++)
      if (ev_vars[i] == e->var) { *out = pt[i]; return true; }
    return false;
  default: break;
  }
  if (!ev(e->bin.a, pt, &x) || !ev(e->bin.b, pt, &y)) return false;
  switch (e->kind) {
  case MLC_EXPR_ADD: *out = x + y; return true;
  case MLC_EXPR_SUB: *out = x - y; return true;
  case MLC_EXPR_MUL: *out = x * y; return true;
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD: {
    if (y == 0) return false;
    int64_t q = x / y;
    if (x % y != 0 && ((x < 0) != (y < 0))) q--;
    *out = e->kind == MLC_EXPR_FLOORDIV ? q : x - q * y;
    return true;
  }
  case MLC_EXPR_MIN: *out = x < y ? x : y; return true;
  case MLC_EXPR_MAX: *out = x > y ? x : y; return true;
  default: return false;
  }
}

static mlc_pcg32 rng;
static int rnd(int n) { return (int)mlc_pcg32_bounded(&rng, (uint32_t)n); }

static mlc_expr *gen_index(int depth) {
  if (depth <= 0 || rnd(4) == 0) return rnd(3) == 0 ? I(rnd(9) - 2) : R(ev_vars[rnd(3)]);
  mlc_expr *x = gen_index(depth - 1);
  switch (rnd(7)) {
  case 0: return add(x, gen_index(depth - 1));
  case 1: return sub(x, gen_index(depth - 1));
  case 2: return mul(x, I(rnd(5) + 1));
  case 3: return mlc_binary(A, MLC_EXPR_FLOORDIV, x, I(rnd(6) + 1));
  case 4: return mlc_binary(A, MLC_EXPR_FLOORMOD, x, I(rnd(6) + 1));
  case 5: return mlc_binary(A, rnd(2) ? MLC_EXPR_MIN : MLC_EXPR_MAX, x, gen_index(depth - 1));
  default: return mul(x, gen_index(depth - 2));
  }
}

static void test_random_region_soundness(void) {
  mlc_pcg32_seed(&rng, 2024, 11);
  int bad = 0, full = 0, exact = 0, n_cases = 600;
  for (int t = 0; t < n_cases; t++) {
    A = mlc_arena_new();
    mlc_var *vi = var("vi"), *k = var("k"), *m = var("m");
    ev_vars[0] = vi, ev_vars[1] = k, ev_vars[2] = m;
    int64_t kext = 1 + rnd(6), mext = 1 + rnd(4), kmin = rnd(3) - 1;
    mlc_buffer *a = buf("A", 1, SHAPE(200)), *o = buf("O", 1, SHAPE(1));
    int n_acc = 1 + rnd(3);
    mlc_expr *idx[3], *sum = NULL;
    for (int i = 0; i < n_acc; i++) {
      idx[i] = gen_index(3);
      mlc_expr *l = ld(a, EXPRS(idx[i]));
      sum = sum ? add(sum, l) : l;
    }
    mlc_block *blk = block("b", 1, (mlc_var *[]){vi}, SHAPE(8), "S");
    /* k's loop has a symbolic min half of the time: range(vi + kmin, ...). */
    mlc_expr *kmin_e = rnd(2) ? add(R(vi), I(kmin)) : I(kmin);
    blk->body = mlc_for_new(A, k, kmin_e, I(kext), MLC_FOR_SERIAL,
                            loop(m, mext, st(o, EXPRS(I(0)), sum)));
    mlc_block_infer_regions(A, blk);
    CHECK(blk->n_reads == 1);
    if (blk->n_reads != 1) break;
    mlc_range r = blk->reads[0].ranges[0];
    bool is_full = r.min->kind == MLC_EXPR_INT_IMM && r.min->int_val == 0 &&
                   r.extent->kind == MLC_EXPR_INT_IMM && r.extent->int_val == 200;
    full += is_full;
    exact += r.extent->kind == MLC_EXPR_INT_IMM;
    for (int64_t v = -3; v < 8 && !bad; v++) {
      int64_t pt[3] = {v, 0, 0}, lo, ext;
      if (!ev(r.min, pt, &lo) || !ev(r.extent, pt, &ext)) {
        bad++;
        printf("  # cannot evaluate the region of %s\n", show(idx[0]));
        break;
      }
      int64_t kb;
      ev(kmin_e, pt, &kb);
      for (int64_t kk = kb; kk < kb + kext; kk++)
        for (int64_t mm = 0; mm < mext; mm++)
          for (int i = 0; i < n_acc; i++) {
            int64_t p3[3] = {v, kk, mm}, x;
            if (!ev(idx[i], p3, &x)) continue;
            bool inside = x >= lo && x < lo + ext;
            bool oob = x < 0 || x >= 200;
            if (!inside && !(is_full && oob) && bad++ < 3)
              printf("  # %s at vi=%lld k=%lld m=%lld is %lld, outside A[%s:+%s]\n", show(idx[i]),
                     (long long)v, (long long)kk, (long long)mm, (long long)x, show(r.min),
                     show(r.extent));
          }
    }
    mlc_arena_free(A);
  }
  printf("  # %d random blocks: %d with a constant extent, %d whole-dimension\n", n_cases, exact,
         full);
  CHECK_MSG(bad == 0, "%d accesses outside their region", bad);
  CHECK(full < n_cases / 2);
}

/* ---- copy ------------------------------------------------------------------------ */

/* matmul (with init) -> bias add -> relu: three blocks. */
static mlc_prim_func *matmul_bias_relu(mlc_arena *a, int64_t n) {
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *ta = mlc_te_placeholder(te, "A", 2, SHAPE(n, n), MLC_FLOAT32);
  mlc_te_tensor *tb = mlc_te_placeholder(te, "B", 2, SHAPE(n, n), MLC_FLOAT32);
  mlc_te_tensor *tbias = mlc_te_placeholder(te, "bias", 1, SHAPE(n), MLC_FLOAT32);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(n, n), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, n, "k");
  mlc_te_tensor *tc = mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, ta, ij[0], k), mlc_te_at(te, tb, k, ij[1])));
  ij = mlc_te_begin(te, "D", 2, SHAPE(n, n), "ij");
  mlc_te_tensor *td = mlc_te_end(te, mlc_add(a, mlc_te_at(te, tc, ij[0], ij[1]), mlc_te_at(te, tbias, ij[1])));
  ij = mlc_te_begin(te, "E", 2, SHAPE(n, n), "ij");
  mlc_te_tensor *tE = mlc_te_end(te, mlc_binary(a, MLC_EXPR_MAX, mlc_te_at(te, td, ij[0], ij[1]),
                                                mlc_float(a, MLC_FLOAT32, 0)));
  return mlc_te_create_prim_func(te, "main", 4, (mlc_te_tensor *[]){ta, tb, tbias, tE});
}

/* A set of pointers (open addressing) for the independence check. */
typedef struct pset {
  const void **k;
  size_t cap, n;
} pset;
static void pset_add(pset *s, const void *p) {
  if (!p) return;
  if (2 * (s->n + 1) > s->cap) {
    pset o = *s;
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->k = calloc(s->cap, sizeof(void *));
    s->n = 0;
    for (size_t i = 0; i < o.cap; i++)
      if (o.k[i]) pset_add(s, o.k[i]);
    free(o.k);
  }
  size_t h = ((uintptr_t)p >> 4) & (s->cap - 1);
  while (s->k[h] && s->k[h] != p) h = (h + 1) & (s->cap - 1);
  if (!s->k[h]) s->n++;
  s->k[h] = p;
}
static bool pset_has(const pset *s, const void *p) {
  if (!p || !s->cap) return false;
  size_t h = ((uintptr_t)p >> 4) & (s->cap - 1);
  while (s->k[h]) {
    if (s->k[h] == p) return true;
    h = (h + 1) & (s->cap - 1);
  }
  return false;
}

/* Walks x and y in lockstep: same structure, names and values; vars and
 * buffers in a consistent 1:1 correspondence; every pointer of y outside
 * `orig` (the original's pointers). Returns a description of the first
 * difference, or NULL. */
typedef struct cmp {
  pset orig;
  const void *from[4096], *to[4096];
  int n;
  const char *why;
} cmp;

static void note(cmp *c, const char *why) {
  if (!c->why) c->why = why;
}
static void own(cmp *c, const void *p) {
  if (pset_has(&c->orig, p)) note(c, "copy shares a pointer with the original");
}
static void pair(cmp *c, const void *x, const void *y) {
  for (int i = 0; i < c->n; i++) {
    if (c->from[i] == x || c->to[i] == y) {
      if (c->from[i] != x || c->to[i] != y) note(c, "var/buffer correspondence broken");
      return;
    }
  }
  if (c->n < 4096) {
    c->from[c->n] = x;
    c->to[c->n++] = y;
  }
}
static void str_eq(cmp *c, const char *x, const char *y) {
  if (!x || !y) {
    if (x != y) note(c, "string presence differs");
    return;
  }
  own(c, y);
  if (strcmp(x, y) != 0) note(c, "string differs");
}
static void buf_eq(cmp *c, const mlc_buffer *x, const mlc_buffer *y) {
  own(c, y);
  own(c, y->shape);
  pair(c, x, y);
  str_eq(c, x->name, y->name);
  str_eq(c, x->scope, y->scope);
  if (x->dtype != y->dtype || x->ndim != y->ndim) note(c, "buffer differs");
  else if (x->ndim && memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
    note(c, "shape differs");
}
static void var_eq(cmp *c, const mlc_var *x, const mlc_var *y) {
  own(c, y);
  pair(c, x, y);
  str_eq(c, x->name, y->name);
  if (x->dtype != y->dtype) note(c, "var dtype differs");
}
static void expr_eq(cmp *c, const mlc_expr *x, const mlc_expr *y) {
  if (!x || !y) {
    if (x != y) note(c, "expr presence differs");
    return;
  }
  own(c, y);
  if (x->kind != y->kind || x->dtype != y->dtype) {
    note(c, "expr kind differs");
    return;
  }
  switch (x->kind) {
  case MLC_EXPR_INT_IMM: if (x->int_val != y->int_val) note(c, "int differs"); return;
  case MLC_EXPR_FLOAT_IMM: if (x->float_val != y->float_val) note(c, "float differs"); return;
  case MLC_EXPR_VAR: var_eq(c, x->var, y->var); return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    expr_eq(c, x->sel.cond, y->sel.cond);
    expr_eq(c, x->sel.t, y->sel.t);
    expr_eq(c, x->sel.f, y->sel.f);
    return;
  case MLC_EXPR_LOAD:
    buf_eq(c, x->load.buf, y->load.buf);
    own(c, y->load.indices);
    for (int i = 0; i < x->load.buf->ndim; i++) expr_eq(c, x->load.indices[i], y->load.indices[i]);
    return;
  case MLC_EXPR_CAST: expr_eq(c, x->cast.value, y->cast.value); return;
  case MLC_EXPR_CALL:
    if (x->call.op != y->call.op) note(c, "call differs");
    own(c, y->call.args);
    for (int i = 0; i < mlc_intrin_nargs(x->call.op); i++) expr_eq(c, x->call.args[i], y->call.args[i]);
    return;
  case MLC_EXPR_NOT: expr_eq(c, x->bin.a, y->bin.a); return;
  default:
    expr_eq(c, x->bin.a, y->bin.a);
    expr_eq(c, x->bin.b, y->bin.b);
  }
}
static void anns_eq(cmp *c, int n, const mlc_ann *x, const mlc_ann *y) {
  if (n) own(c, y);
  for (int i = 0; i < n; i++) {
    str_eq(c, x[i].key, y[i].key);
    str_eq(c, x[i].s, y[i].s);
    if (x[i].kind != y[i].kind || x[i].i != y[i].i || x[i].f != y[i].f) note(c, "ann differs");
  }
}
static void regions_eq(cmp *c, int n, const mlc_region *x, const mlc_region *y) {
  if (n) own(c, y);
  for (int i = 0; i < n; i++) {
    buf_eq(c, x[i].buf, y[i].buf);
    own(c, y[i].ranges);
    for (int d = 0; d < x[i].buf->ndim; d++) {
      expr_eq(c, x[i].ranges[d].min, y[i].ranges[d].min);
      expr_eq(c, x[i].ranges[d].extent, y[i].ranges[d].extent);
    }
  }
}
static void stmt_eq(cmp *c, const mlc_stmt *x, const mlc_stmt *y);
static void block_eq(cmp *c, const mlc_block *x, const mlc_block *y) {
  own(c, y);
  str_eq(c, x->name, y->name);
  if (x->n_iters != y->n_iters || x->n_reads != y->n_reads || x->n_writes != y->n_writes ||
      x->n_allocs != y->n_allocs || x->n_anns != y->n_anns) {
    note(c, "block counts differ");
    return;
  }
  if (x->n_iters) own(c, y->iters);
  for (int i = 0; i < x->n_iters; i++) {
    var_eq(c, x->iters[i].var, y->iters[i].var);
    expr_eq(c, x->iters[i].dom.min, y->iters[i].dom.min);
    expr_eq(c, x->iters[i].dom.extent, y->iters[i].dom.extent);
    if (x->iters[i].kind != y->iters[i].kind) note(c, "iter kind differs");
  }
  regions_eq(c, x->n_reads, x->reads, y->reads);
  regions_eq(c, x->n_writes, x->writes, y->writes);
  if (x->n_allocs) own(c, y->allocs);
  for (int i = 0; i < x->n_allocs; i++) buf_eq(c, x->allocs[i], y->allocs[i]);
  anns_eq(c, x->n_anns, x->anns, y->anns);
  stmt_eq(c, x->init, y->init);
  stmt_eq(c, x->body, y->body);
}
static void stmt_eq(cmp *c, const mlc_stmt *x, const mlc_stmt *y) {
  if (!x || !y) {
    if (x != y) note(c, "stmt presence differs");
    return;
  }
  own(c, y);
  if (x->kind != y->kind) {
    note(c, "stmt kind differs");
    return;
  }
  switch (x->kind) {
  case MLC_STMT_FOR:
    var_eq(c, x->loop.var, y->loop.var);
    expr_eq(c, x->loop.min, y->loop.min);
    expr_eq(c, x->loop.extent, y->loop.extent);
    if (x->loop.kind != y->loop.kind || x->loop.n_anns != y->loop.n_anns) note(c, "loop differs");
    str_eq(c, x->loop.thread, y->loop.thread);
    anns_eq(c, x->loop.n_anns, x->loop.anns, y->loop.anns);
    stmt_eq(c, x->loop.body, y->loop.body);
    return;
  case MLC_STMT_BLOCK_REALIZE:
    block_eq(c, x->realize.block, y->realize.block);
    if (x->realize.block->n_iters) own(c, y->realize.values);
    for (int i = 0; i < x->realize.block->n_iters; i++)
      expr_eq(c, x->realize.values[i], y->realize.values[i]);
    expr_eq(c, x->realize.predicate, y->realize.predicate);
    return;
  case MLC_STMT_SEQ:
    if (x->seq.n != y->seq.n) {
      note(c, "seq length differs");
      return;
    }
    own(c, y->seq.stmts);
    for (int i = 0; i < x->seq.n; i++) stmt_eq(c, x->seq.stmts[i], y->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    buf_eq(c, x->store.buf, y->store.buf);
    own(c, y->store.indices);
    for (int i = 0; i < x->store.buf->ndim; i++) expr_eq(c, x->store.indices[i], y->store.indices[i]);
    expr_eq(c, x->store.value, y->store.value);
    return;
  case MLC_STMT_IF:
    expr_eq(c, x->if_.cond, y->if_.cond);
    stmt_eq(c, x->if_.then_s, y->if_.then_s);
    stmt_eq(c, x->if_.else_s, y->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE:
    buf_eq(c, x->alloc.buf, y->alloc.buf);
    stmt_eq(c, x->alloc.body, y->alloc.body);
    return;
  case MLC_STMT_EVALUATE:
    expr_eq(c, x->eval.value, y->eval.value);
    return;
  }
}
static void func_eq(cmp *c, const mlc_prim_func *x, const mlc_prim_func *y) {
  own(c, y);
  str_eq(c, x->name, y->name);
  if (x->n_params != y->n_params || x->n_attrs != y->n_attrs) {
    note(c, "func counts differ");
    return;
  }
  own(c, y->params);
  for (int i = 0; i < x->n_params; i++) buf_eq(c, x->params[i], y->params[i]);
  anns_eq(c, x->n_attrs, x->attrs, y->attrs);
  stmt_eq(c, x->body, y->body);
}

/* Every pointer reachable from a function, into a set. */
static pset *collect_target;
static void add_ptr(const void *p) { pset_add(collect_target, p); }

static void collect_expr(const mlc_expr *e);
static void collect_stmt(const mlc_stmt *s);
static void collect_buf(const mlc_buffer *b) {
  add_ptr(b), add_ptr(b->name), add_ptr(b->scope), add_ptr(b->shape);
}
static void collect_var(const mlc_var *v) { add_ptr(v), add_ptr(v->name); }
static void collect_expr(const mlc_expr *e) {
  if (!e) return;
  add_ptr(e);
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM: return;
  case MLC_EXPR_VAR: collect_var(e->var); return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    collect_expr(e->sel.cond), collect_expr(e->sel.t), collect_expr(e->sel.f);
    return;
  case MLC_EXPR_LOAD:
    collect_buf(e->load.buf);
    add_ptr(e->load.indices);
    for (int i = 0; i < e->load.buf->ndim; i++) collect_expr(e->load.indices[i]);
    return;
  case MLC_EXPR_CAST: collect_expr(e->cast.value); return;
  case MLC_EXPR_CALL:
    add_ptr(e->call.args);
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) collect_expr(e->call.args[i]);
    return;
  case MLC_EXPR_NOT: collect_expr(e->bin.a); return;
  default: collect_expr(e->bin.a), collect_expr(e->bin.b);
  }
}
static void collect_regions(int n, const mlc_region *r) {
  add_ptr(r);
  for (int i = 0; i < n; i++) {
    collect_buf(r[i].buf);
    add_ptr(r[i].ranges);
    for (int d = 0; d < r[i].buf->ndim; d++)
      collect_expr(r[i].ranges[d].min), collect_expr(r[i].ranges[d].extent);
  }
}
static void collect_anns(int n, const mlc_ann *a) {
  add_ptr(a);
  for (int i = 0; i < n; i++) add_ptr(a[i].key), add_ptr(a[i].s);
}
static void collect_stmt(const mlc_stmt *s) {
  if (!s) return;
  add_ptr(s);
  switch (s->kind) {
  case MLC_STMT_FOR:
    collect_var(s->loop.var), collect_expr(s->loop.min), collect_expr(s->loop.extent);
    add_ptr(s->loop.thread);
    collect_anns(s->loop.n_anns, s->loop.anns);
    collect_stmt(s->loop.body);
    return;
  case MLC_STMT_BLOCK_REALIZE: {
    const mlc_block *b = s->realize.block;
    add_ptr(b), add_ptr(b->name), add_ptr(b->iters), add_ptr(b->allocs);
    add_ptr(s->realize.values);
    for (int i = 0; i < b->n_iters; i++) {
      collect_var(b->iters[i].var);
      collect_expr(b->iters[i].dom.min), collect_expr(b->iters[i].dom.extent);
      collect_expr(s->realize.values[i]);
    }
    collect_expr(s->realize.predicate);
    collect_regions(b->n_reads, b->reads);
    collect_regions(b->n_writes, b->writes);
    for (int i = 0; i < b->n_allocs; i++) collect_buf(b->allocs[i]);
    collect_anns(b->n_anns, b->anns);
    collect_stmt(b->init);
    collect_stmt(b->body);
    return;
  }
  case MLC_STMT_SEQ:
    add_ptr(s->seq.stmts);
    for (int i = 0; i < s->seq.n; i++) collect_stmt(s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    collect_buf(s->store.buf);
    add_ptr(s->store.indices);
    for (int i = 0; i < s->store.buf->ndim; i++) collect_expr(s->store.indices[i]);
    collect_expr(s->store.value);
    return;
  case MLC_STMT_IF:
    collect_expr(s->if_.cond), collect_stmt(s->if_.then_s), collect_stmt(s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE:
    collect_buf(s->alloc.buf), collect_stmt(s->alloc.body);
    return;
  case MLC_STMT_EVALUATE:
    collect_expr(s->eval.value);
    return;
  }
}
static void collect_func(pset *into, const mlc_prim_func *f) {
  collect_target = into;
  add_ptr(f), add_ptr(f->name), add_ptr(f->params);
  for (int i = 0; i < f->n_params; i++) collect_buf(f->params[i]);
  collect_anns(f->n_attrs, f->attrs);
  collect_stmt(f->body);
}

/* Adds every kind of node the te builder does not make, so the copy sees
 * them all: an if, an allocate, an evaluate, a thread-bound annotated loop,
 * a predicate, a cast, a call, a select, block annotations. */
static void decorate(mlc_arena *a, mlc_prim_func *f) {
  mlc_block *root = mlc_func_root(f);
  mlc_stmt *first = root->body->seq.stmts[0];
  first->loop.kind = MLC_FOR_THREAD_BINDING;
  first->loop.thread = mlc_arena_strdup(a, "blockIdx.x");
  first->loop.n_anns = 1;
  first->loop.anns = MLC_NEW_ARRAY(a, mlc_ann, 1);
  first->loop.anns[0] = (mlc_ann){.key = mlc_arena_strdup(a, "pragma_unroll"), .kind = MLC_ANN_INT, .i = 16};
  mlc_stmt *r = first;
  while (r->kind == MLC_STMT_FOR) r = r->loop.body;
  r->realize.predicate = mlc_binary(a, MLC_EXPR_LT, mlc_ref(a, first->loop.var), mlc_int(a, 100));
  mlc_block *blk = r->realize.block;
  blk->n_anns = 2;
  blk->anns = MLC_NEW_ARRAY(a, mlc_ann, 2);
  blk->anns[0] = (mlc_ann){.key = mlc_arena_strdup(a, "meta"), .kind = MLC_ANN_STRING,
                           .s = mlc_arena_strdup(a, "hello")};
  blk->anns[1] = (mlc_ann){.key = mlc_arena_strdup(a, "f"), .kind = MLC_ANN_FLOAT, .f = 0.5};
  mlc_buffer *tmp = mlc_buffer_new(a, "tmp", MLC_FLOAT16, 1, SHAPE(4), "local");
  mlc_expr *x = mlc_ref(a, blk->iters[0].var);
  mlc_expr *args[1] = {mlc_cast(a, MLC_FLOAT32, mlc_load(a, tmp, (mlc_expr *[]){mlc_int(a, 0)}))};
  mlc_expr *sel = mlc_select(a, mlc_not(a, mlc_binary(a, MLC_EXPR_EQ, x, mlc_int(a, 0))),
                             mlc_call(a, MLC_INTRIN_EXP, args), mlc_float(a, MLC_FLOAT32, 1));
  mlc_stmt *extra = mlc_if_new(a, mlc_binary(a, MLC_EXPR_GE, x, mlc_int(a, 0)),
                               mlc_evaluate_new(a, sel), mlc_evaluate_new(a, mlc_int(a, 0)));
  blk->body = mlc_seq_new(a, 2, (mlc_stmt *[]){mlc_allocate_new(a, tmp, extra), blk->body});
}

static void test_copy_independent_and_equal(void) {
  mlc_arena *src = mlc_arena_new(), *dst = mlc_arena_new(), *dst2 = mlc_arena_new();
  mlc_prim_func *f = matmul_bias_relu(src, 16);
  decorate(src, f);
  mlc_prim_func *g = mlc_func_copy(dst, f);
  pset orig = {0};
  collect_func(&orig, f);
  cmp *c = calloc(1, sizeof(cmp));
  c->orig = orig;
  func_eq(c, f, g);
  CHECK_MSG(!c->why, "%s", c->why);
  CHECK(c->n > 10);
  /* Printed forms agree (the printer is ir/print.c). */
  mlc_str pf = {0}, pg = {0};
  mlc_print_func(&pf, f);
  mlc_print_func(&pg, g);
  CHECK_STREQ(mlc_str_cstr(&pf), mlc_str_cstr(&pg));
  /* Copy the copy, free the source: the second copy must not reach into it
   * (AddressSanitizer would see a use after free). */
  mlc_prim_func *h = mlc_func_copy(dst2, g);
  mlc_arena_free(src);
  mlc_arena_free(dst);
  mlc_str ph = {0};
  mlc_print_func(&ph, h);
  CHECK_STREQ(mlc_str_cstr(&pf), mlc_str_cstr(&ph));
  mlc_str_free(&pf);
  mlc_str_free(&pg);
  mlc_str_free(&ph);
  free(orig.k);
  free(c);
  mlc_arena_free(dst2);
}

static void test_module_copy(void) {
  mlc_arena *src = mlc_arena_new(), *dst = mlc_arena_new();
  mlc_module *m = mlc_module_new(src, "Module");
  mlc_module_add(src, m, matmul_bias_relu(src, 8));
  mlc_module_add(src, m, matmul_bias_relu(src, 4));
  m->funcs[1]->name = "second";
  mlc_module *n = mlc_module_copy(dst, m);
  CHECK(n->n_funcs == 2 && n->funcs != m->funcs && n->name != m->name);
  CHECK_STREQ(n->name, "Module");
  CHECK_STREQ(n->funcs[1]->name, "second");
  mlc_str pm = {0}, pn = {0};
  mlc_print_module(&pm, m);
  mlc_arena_free(src);
  mlc_print_module(&pn, n);
  CHECK_STREQ(mlc_str_cstr(&pm), mlc_str_cstr(&pn));
  mlc_str_free(&pm);
  mlc_str_free(&pn);
  mlc_arena_free(dst);
}

/* Not a strict timing (sanitizer builds are slow, machines are shared):
 * prints the best of several batches, each copy into a fresh arena as a
 * tuner's candidates are made, and checks a loose ceiling. */
static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void test_copy_speed(void) {
  mlc_arena *src = mlc_arena_new();
  mlc_prim_func *f = matmul_bias_relu(src, 64);
  double best = 1e30;
  size_t bytes = 0;
  for (int batch = 0; batch < 10; batch++) {
    double t0 = now_us();
    for (int i = 0; i < 500; i++) {
      mlc_arena *dst = mlc_arena_new();
      mlc_prim_func *g = mlc_func_copy(dst, f);
      CHECK(g && g->n_params == 4);
      bytes = mlc_arena_bytes_used(dst);
      mlc_arena_free(dst);
    }
    double us = (now_us() - t0) / 500;
    if (us < best) best = us;
  }
  printf("  # mlc_func_copy of a 3-block matmul-bias-relu: %.2f us per copy (%zu bytes)\n", best,
         bytes);
  CHECK_MSG(best < 200, "%.1f us per copy", best);
  mlc_arena_free(src);
}

/* ---- substitution ------------------------------------------------------------------ */

static void test_expr_subst(void) {
  A = mlc_arena_new();
  mlc_var *i = var("i"), *j = var("j"), *k = var("k");
  mlc_expr *e = add(mul(R(i), I(4)), R(j));
  mlc_expr *r = mlc_expr_subst(A, e, 1, (mlc_var *[]){i}, EXPRS(add(R(k), I(1))));
  CHECK_STREQ(show(r), "(k + 1) * 4 + j");
  CHECK_STREQ(show(e), "i * 4 + j");
  CHECK(r->bin.b == e->bin.b); /* the unchanged side is shared */
  CHECK(mlc_expr_subst(A, e, 1, (mlc_var *[]){k}, EXPRS(I(0))) == e);
  /* Simultaneous, not sequential: i -> j, j -> i swaps. */
  r = mlc_expr_subst(A, e, 2, (mlc_var *[]){i, j}, EXPRS(R(j), R(i)));
  CHECK_STREQ(show(r), "j * 4 + i");
  /* A literal adopts the other side's dtype (int64 var). */
  mlc_var *l = mlc_var_new(A, "l", MLC_INT64);
  mlc_expr *e64 = add(R(l), mlc_int_t(A, MLC_INT64, 1));
  mlc_var *l2 = mlc_var_new(A, "l2", MLC_INT64);
  r = mlc_expr_subst(A, mlc_binary(A, MLC_EXPR_LT, e64, R(l2)), 1, (mlc_var *[]){l2}, EXPRS(I(7)));
  CHECK(r->bin.b->dtype == MLC_INT64 && r->bin.b->int_val == 7);
  /* Inside loads, casts, calls, selects. */
  mlc_buffer *a = buf("A", 2, SHAPE(4, 4));
  mlc_expr *args[1] = {mlc_cast(A, MLC_FLOAT32, R(i))};
  mlc_expr *big = mlc_select(A, mlc_binary(A, MLC_EXPR_LT, R(i), I(2)), ld(a, EXPRS(R(i), R(j))),
                             mlc_call(A, MLC_INTRIN_EXP, args));
  r = mlc_expr_subst(A, big, 1, (mlc_var *[]){i}, EXPRS(I(3)));
  CHECK(!mlc_expr_uses_var(r, i) && mlc_expr_uses_var(r, j) && mlc_expr_uses_var(big, i));
  CHECK(mlc_expr_uses_var(r->sel.t, j) && !mlc_expr_uses_var(r->sel.f, j));
  /* Many vars: the hashed path. */
  mlc_var *vs[40];
  mlc_expr *vals[40], *sum = I(0);
  for (int t = 0; t < 40; t++) {
    vs[t] = mlc_var_new(A, "v", MLC_INT32);
    vals[t] = I(t);
    sum = add(sum, R(vs[t]));
  }
  r = mlc_simplify_expr(A, mlc_expr_subst(A, sum, 40, vs, vals));
  CHECK(r->kind == MLC_EXPR_INT_IMM && r->int_val == 40 * 39 / 2);
  mlc_arena_free(A);
}

static void test_stmt_subst(void) {
  A = mlc_arena_new();
  mlc_buffer *a = buf("A", 1, SHAPE(64)), *b = buf("B", 1, SHAPE(64));
  mlc_var *o = var("o"), *i = var("i"), *vi = var("vi"), *k = var("k"), *vk = var("vk");
  /* for i in range(o): block(vi = i * 2, where i < o):
   *   reads A[vi + o], init B[vi] = o, body: for k in range(o, o + 2): block(vk = k + o) ... */
  mlc_block *inner = block("inner", 1, (mlc_var *[]){vk}, SHAPE(64), "S");
  inner->body = st(b, EXPRS(R(vk)), ld(a, EXPRS(add(R(vk), R(o)))));
  mlc_stmt *inner_r = mlc_realize_new(A, inner, EXPRS(add(R(k), R(o))), mlc_binary(A, MLC_EXPR_LT, R(k), R(o)));
  mlc_block *blk = block("outer", 1, (mlc_var *[]){vi}, SHAPE(64), "S");
  blk->iters[0].dom.extent = mul(R(o), I(2));
  blk->init = st(b, EXPRS(R(vi)), mlc_cast(A, MLC_FLOAT32, R(o)));
  blk->body = mlc_seq_new(A, 2, (mlc_stmt *[]){
      mlc_for_new(A, k, R(o), I(2), MLC_FOR_SERIAL, inner_r),
      mlc_if_new(A, mlc_binary(A, MLC_EXPR_GT, R(o), I(0)),
                 mlc_evaluate_new(A, R(o)), st(a, EXPRS(R(o)), mlc_float(A, MLC_FLOAT32, 1)))});
  mlc_block_infer_regions(A, blk);
  mlc_stmt *s = mlc_for_new(A, i, I(0), R(o), MLC_FOR_SERIAL,
                            mlc_realize_new(A, blk, EXPRS(mul(R(i), I(2))),
                                            mlc_binary(A, MLC_EXPR_LT, R(i), R(o))));
  mlc_str before = {0};
  mlc_print_stmt(&before, s, 0);
  mlc_stmt *r = mlc_stmt_subst(A, s, 1, (mlc_var *[]){o}, EXPRS(I(5)));
  mlc_str after = {0}, again = {0};
  mlc_print_stmt(&after, r, 0);
  mlc_print_stmt(&again, s, 0);
  CHECK_STREQ(mlc_str_cstr(&before), mlc_str_cstr(&again)); /* input untouched */
  CHECK(strstr(mlc_str_cstr(&before), "o") != NULL);
  /* No reference to o is left anywhere: loop bounds, binding, predicate,
   * iter domain, regions, init, nested realize, nested loop min, if. */
  const mlc_block *rb = r->loop.body->realize.block;
  CHECK(r->loop.extent->kind == MLC_EXPR_INT_IMM);
  CHECK(!mlc_expr_uses_var(r->loop.body->realize.predicate, o));
  CHECK(!mlc_expr_uses_var(rb->iters[0].dom.extent, o));
  for (int t = 0; t < rb->n_reads; t++) CHECK(!mlc_expr_uses_var(rb->reads[t].ranges[0].min, o));
  for (int t = 0; t < rb->n_writes; t++) CHECK(!mlc_expr_uses_var(rb->writes[t].ranges[0].min, o));
  CHECK(!mlc_expr_uses_var(rb->init->store.value, o));
  const mlc_stmt *kl = rb->body->seq.stmts[0];
  CHECK(!mlc_expr_uses_var(kl->loop.min, o));
  CHECK(!mlc_expr_uses_var(kl->loop.body->realize.values[0], o));
  CHECK(!mlc_expr_uses_var(kl->loop.body->realize.predicate, o));
  const mlc_block *ib = kl->loop.body->realize.block;
  CHECK(!mlc_expr_uses_var(ib->body->store.value->load.indices[0], o));
  const mlc_stmt *ifs = rb->body->seq.stmts[1];
  CHECK(!mlc_expr_uses_var(ifs->if_.cond, o) && !mlc_expr_uses_var(ifs->if_.then_s->eval.value, o));
  CHECK(!mlc_expr_uses_var(ifs->if_.else_s->store.indices[0], o));
  /* The original block is not modified, a new one is made. */
  CHECK(rb != blk && blk->iters[0].dom.extent->kind == MLC_EXPR_MUL);
  /* Substituting a var that does not occur returns the same statement. */
  CHECK(mlc_stmt_subst(A, s, 1, (mlc_var *[]){var("zz")}, EXPRS(I(1))) == s);
  mlc_str_free(&before);
  mlc_str_free(&after);
  mlc_str_free(&again);
  mlc_arena_free(A);
}

int main(void) {
  RUN(test_window_sum);
  RUN(test_tensorized_block);
  RUN(test_reduction_self_read_te);
  RUN(test_if_then_else_and_if);
  RUN(test_non_affine_and_union);
  RUN(test_symbolic_loop_min_and_locals);
  RUN(test_region_relax);
  RUN(test_random_region_soundness);
  RUN(test_copy_independent_and_equal);
  RUN(test_module_copy);
  RUN(test_copy_speed);
  RUN(test_expr_subst);
  RUN(test_stmt_subst);
  return test_summary();
}
