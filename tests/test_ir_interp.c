/* Reference interpreter and mlc_array: hand-built functions (ir.h
 * constructors only) compared against plain C loops written here. */
#include "ir/ir.h"
#include "tests/test.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The C references below must be the float32 operations as written. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static mlc_arena *A;

/* ---- building IR ----------------------------------------------------------- */

static mlc_expr *I(int64_t v) { return mlc_int(A, v); }
static mlc_expr *F(double v) { return mlc_float(A, MLC_FLOAT32, v); }
static mlc_expr *R(mlc_var *v) { return mlc_ref(A, v); }
static mlc_var *ivar(const char *name) { return mlc_var_new(A, name, MLC_INT32); }
static mlc_expr *bin(mlc_expr_kind k, mlc_expr *x, mlc_expr *y) { return mlc_binary(A, k, x, y); }

static mlc_buffer *buf1(const char *name, mlc_dtype t, int64_t n) {
  return mlc_buffer_new(A, name, t, 1, (int64_t[]){n}, "global");
}
static mlc_buffer *buf2(const char *name, mlc_dtype t, int64_t m, int64_t n) {
  return mlc_buffer_new(A, name, t, 2, (int64_t[]){m, n}, "global");
}

static mlc_expr *ld1(mlc_buffer *b, mlc_expr *i) { return mlc_load(A, b, (mlc_expr *[]){i}); }
static mlc_expr *ld2(mlc_buffer *b, mlc_expr *i, mlc_expr *j) {
  return mlc_load(A, b, (mlc_expr *[]){i, j});
}
static mlc_stmt *st1(mlc_buffer *b, mlc_expr *i, mlc_expr *v) {
  return mlc_store_new(A, b, (mlc_expr *[]){i}, v);
}
static mlc_stmt *st2(mlc_buffer *b, mlc_expr *i, mlc_expr *j, mlc_expr *v) {
  return mlc_store_new(A, b, (mlc_expr *[]){i, j}, v);
}
static mlc_stmt *loop(mlc_var *v, int64_t n, mlc_stmt *body) {
  return mlc_for_new(A, v, I(0), I(n), MLC_FOR_SERIAL, body);
}
static mlc_stmt *seq2(mlc_stmt *x, mlc_stmt *y) { return mlc_seq_new(A, 2, (mlc_stmt *[]){x, y}); }

/* A block with iter vars named by `vars`, domains [0, ext[i]), kinds "S"/"R". */
static mlc_block *block(const char *name, int n, mlc_var **vars, const int64_t *ext,
                        const char *kinds) {
  mlc_block *b = mlc_block_new(A, name);
  b->n_iters = n;
  b->iters = MLC_NEW_ARRAY(A, mlc_iter_var, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    b->iters[i].var = vars[i];
    b->iters[i].dom = (mlc_range){I(0), I(ext[i])};
    b->iters[i].kind = kinds[i] == 'R' ? MLC_ITER_REDUCE : MLC_ITER_SPATIAL;
  }
  return b;
}

static mlc_prim_func *func(const char *name, int n, mlc_buffer **params, mlc_stmt *body,
                           int n_allocs, mlc_buffer **allocs) {
  mlc_block *root = mlc_block_new(A, "root");
  root->body = body;
  root->n_allocs = n_allocs;
  root->allocs = n_allocs ? mlc_arena_memdup(A, allocs, sizeof(*allocs) * (size_t)n_allocs) : NULL;
  mlc_prim_func *f = mlc_func_new(A, name);
  f->n_params = n;
  f->params = mlc_arena_memdup(A, params, sizeof(*params) * (size_t)n);
  f->body = mlc_realize_new(A, root, NULL, NULL);
  return f;
}

/* Arrays for f's parameters, filled with seeded random values. */
static mlc_array *args_for(const mlc_prim_func *f, uint64_t seed) {
  mlc_array *args = mlc_xmalloc(sizeof(mlc_array) * (size_t)f->n_params);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 5);
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(x, &rng);
    args[i] = *x;
    mlc_free(x); /* keep the data, now owned by args[i] */
  }
  return args;
}

static void free_args(const mlc_prim_func *f, mlc_array *args) {
  for (int i = 0; i < f->n_params; i++) mlc_free(args[i].data);
  mlc_free(args);
}

static float *fdata(mlc_array *x) { return x->data; }
static int32_t *idata(mlc_array *x) { return x->data; }

/* ---- functions under test --------------------------------------------------- */

/* C[i] = A[i] + B[i] */
static mlc_prim_func *make_vadd(int64_t n) {
  mlc_buffer *a = buf1("A", MLC_FLOAT32, n), *b = buf1("B", MLC_FLOAT32, n),
             *c = buf1("C", MLC_FLOAT32, n);
  mlc_var *i = ivar("i"), *vi = ivar("vi");
  mlc_block *blk = block("C", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  blk->body = st1(c, R(vi), mlc_add(A, ld1(a, R(vi)), ld1(b, R(vi))));
  mlc_stmt *body = loop(i, n, mlc_realize_new(A, blk, (mlc_expr *[]){R(i)}, NULL));
  return func("vadd", 3, (mlc_buffer *[]){a, b, c}, body, 0, NULL);
}

/* C[i, j] = sum_k A[i, k] * B[k, j], with T.init() C[i, j] = 0. */
static mlc_prim_func *make_matmul(int64_t m, int64_t n, int64_t k) {
  mlc_buffer *a = buf2("A", MLC_FLOAT32, m, k), *b = buf2("B", MLC_FLOAT32, k, n),
             *c = buf2("C", MLC_FLOAT32, m, n);
  mlc_var *i = ivar("i"), *j = ivar("j"), *kk = ivar("k");
  mlc_var *vi = ivar("vi"), *vj = ivar("vj"), *vk = ivar("vk");
  mlc_block *blk = block("C", 3, (mlc_var *[]){vi, vj, vk}, (int64_t[]){m, n, k}, "SSR");
  blk->init = st2(c, R(vi), R(vj), F(0));
  blk->body = st2(c, R(vi), R(vj),
                  mlc_add(A, ld2(c, R(vi), R(vj)),
                          mlc_mul(A, ld2(a, R(vi), R(vk)), ld2(b, R(vk), R(vj)))));
  mlc_stmt *s = mlc_realize_new(A, blk, (mlc_expr *[]){R(i), R(j), R(kk)}, NULL);
  s = loop(i, m, loop(j, n, loop(kk, k, s)));
  return func("matmul", 3, (mlc_buffer *[]){a, b, c}, s, 0, NULL);
}

static void ref_matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0;
      for (int p = 0; p < k; p++) acc = acc + a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
}

/* ---- tests ------------------------------------------------------------------- */

static void test_vector_add(void) {
  mlc_prim_func *f = make_vadd(37);
  mlc_array *x = args_for(f, 1);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int i = 0; i < 37; i++) CHECK(fdata(&x[2])[i] == fdata(&x[0])[i] + fdata(&x[1])[i]);
  free_args(f, x);
}

static void test_matmul(void) {
  int m = 24, n = 40, k = 33;
  mlc_prim_func *f = make_matmul(m, n, k);
  mlc_array *x = args_for(f, 2);
  /* Garbage in C first: the init must overwrite it. */
  for (int i = 0; i < m * n; i++) fdata(&x[2])[i] = 1000.0f + (float)i;
  float *want = mlc_xmalloc(sizeof(float) * (size_t)(m * n));
  ref_matmul(fdata(&x[0]), fdata(&x[1]), want, m, n, k);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  CHECK(memcmp(want, fdata(&x[2]), sizeof(float) * (size_t)(m * n)) == 0);
  /* Running twice gives the same bits (deterministic, init reruns). */
  CHECK(mlc_interp_run(f, x, &err));
  CHECK(memcmp(want, fdata(&x[2]), sizeof(float) * (size_t)(m * n)) == 0);
  mlc_free(want);
  free_args(f, x);
}

/* A split loop with a tail: vi = io * 4 + ii over 10 elements, guarded by
 * T.where. Without the predicate the store would be out of bounds. */
static void test_where(void) {
  int64_t n = 10;
  mlc_buffer *a = buf1("A", MLC_FLOAT32, n), *b = buf1("B", MLC_FLOAT32, n);
  mlc_var *io = ivar("io"), *ii = ivar("ii"), *vi = ivar("vi");
  mlc_block *blk = block("B", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  blk->body = st1(b, R(vi), mlc_mul(A, ld1(a, R(vi)), F(2)));
  mlc_expr *idx = mlc_add(A, mlc_mul(A, R(io), I(4)), R(ii));
  mlc_expr *pred = bin(MLC_EXPR_LT, idx, I(n));
  mlc_stmt *s = loop(io, 3, loop(ii, 4, mlc_realize_new(A, blk, (mlc_expr *[]){idx}, pred)));
  mlc_prim_func *f = func("where", 2, (mlc_buffer *[]){a, b}, s, 0, NULL);
  mlc_array *x = args_for(f, 3);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int i = 0; i < n; i++) CHECK(fdata(&x[1])[i] == fdata(&x[0])[i] * 2);
  /* Without the predicate: out of bounds, B[10]. */
  mlc_stmt *s2 = loop(io, 3, loop(ii, 4, mlc_realize_new(A, blk, (mlc_expr *[]){idx}, NULL)));
  mlc_prim_func *g = func("no_where", 2, (mlc_buffer *[]){a, b}, s2, 0, NULL);
  CHECK(!mlc_interp_run(g, x, &err));
  CHECK_MSG(strstr(err.msg, "[10] (shape [10])") && strstr(err.msg, "out-of-bounds"), "%s",
            err.msg);
  free_args(f, x);
}

/* B[i] = if_then_else(i >= 1, A[i - 1], 0): A[-1] is on the untaken side.
 * The same with T.Select evaluates A[-1] and fails. */
static void test_if_then_else(void) {
  int64_t n = 8;
  mlc_buffer *a = buf1("A", MLC_FLOAT32, n), *b = buf1("B", MLC_FLOAT32, n);
  mlc_var *i = ivar("i"), *vi = ivar("vi");
  mlc_block *blk = block("B", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  mlc_expr *cond = bin(MLC_EXPR_GE, R(vi), I(1));
  mlc_expr *prev = ld1(a, mlc_sub(A, R(vi), I(1)));
  blk->body = st1(b, R(vi), mlc_if_then_else(A, cond, prev, F(0)));
  mlc_prim_func *f = func("shift", 2, (mlc_buffer *[]){a, b},
                          loop(i, n, mlc_realize_new(A, blk, (mlc_expr *[]){R(i)}, NULL)), 0,
                          NULL);
  mlc_array *x = args_for(f, 4);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  CHECK(fdata(&x[1])[0] == 0);
  for (int k = 1; k < n; k++) CHECK(fdata(&x[1])[k] == fdata(&x[0])[k - 1]);

  mlc_block *blk2 = block("B", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  blk2->body = st1(b, R(vi), mlc_select(A, cond, prev, F(0)));
  mlc_prim_func *g = func("shift_select", 2, (mlc_buffer *[]){a, b},
                          loop(i, n, mlc_realize_new(A, blk2, (mlc_expr *[]){R(i)}, NULL)), 0,
                          NULL);
  CHECK(!mlc_interp_run(g, x, &err));
  CHECK_MSG(strstr(err.msg, "A[-1]") && strstr(err.msg, "load"), "%s", err.msg);
  free_args(f, x);
}

static void test_out_of_bounds(void) {
  mlc_buffer *a = buf2("A", MLC_FLOAT32, 4, 6), *b = buf2("B", MLC_FLOAT32, 4, 6);
  mlc_var *i = ivar("i"), *j = ivar("j"), *vi = ivar("vi"), *vj = ivar("vj");
  mlc_block *blk = block("copy", 2, (mlc_var *[]){vi, vj}, (int64_t[]){4, 6}, "SS");
  blk->body = st2(b, R(vi), R(vj), ld2(a, R(vi), mlc_add(A, R(vj), I(1))));
  mlc_prim_func *f = func("oob", 2, (mlc_buffer *[]){a, b},
                          loop(i, 4, loop(j, 6, mlc_realize_new(A, blk, (mlc_expr *[]){R(i), R(j)},
                                                                NULL))),
                          0, NULL);
  mlc_array *x = args_for(f, 5);
  mlc_error err = {{0}};
  CHECK(!mlc_interp_run(f, x, &err));
  CHECK_MSG(strstr(err.msg, "out-of-bounds load of A[0, 6]") && strstr(err.msg, "[4, 6]") &&
                strstr(err.msg, "\"copy\""),
            "%s", err.msg);
  /* Everything before the bad access ran. */
  for (int k = 0; k < 5; k++) CHECK(fdata(&x[1])[k] == fdata(&x[0])[k + 1]);

  /* A store out of bounds in the first dimension. */
  mlc_block *blk2 = block("copy2", 2, (mlc_var *[]){vi, vj}, (int64_t[]){4, 6}, "SS");
  blk2->body = st2(b, mlc_sub(A, I(3), mlc_mul(A, R(vi), I(2))), R(vj), F(1));
  mlc_prim_func *g = func("oob2", 2, (mlc_buffer *[]){a, b},
                          loop(i, 4, loop(j, 6, mlc_realize_new(A, blk2, (mlc_expr *[]){R(i), R(j)},
                                                                 NULL))),
                          0, NULL);
  CHECK(!mlc_interp_run(g, x, &err));
  CHECK_MSG(strstr(err.msg, "out-of-bounds store to B[-1, 0]"), "%s", err.msg);
  free_args(f, x);
}

/* Elementwise C[i] = op(A[i], B[i]) over one dtype. */
static mlc_prim_func *make_binop(mlc_expr_kind k, mlc_dtype t, int64_t n) {
  mlc_buffer *a = buf1("A", t, n), *b = buf1("B", t, n);
  mlc_buffer *c = buf1("C", mlc_expr_kind_is_compare(k) ? MLC_BOOL : t, n);
  mlc_var *i = ivar("i"), *vi = ivar("vi");
  mlc_block *blk = block("C", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  blk->body = st1(c, R(vi), bin(k, ld1(a, R(vi)), ld1(b, R(vi))));
  return func("binop", 3, (mlc_buffer *[]){a, b, c},
              loop(i, n, mlc_realize_new(A, blk, (mlc_expr *[]){R(i)}, NULL)), 0, NULL);
}

static void test_int32_wrap(void) {
  int32_t av[] = {INT32_MAX, INT32_MIN, 65536, -7, 123456789, INT32_MIN};
  int32_t bv[] = {1, -1, 65536, 3, 987654321, -1};
  int n = MLC_COUNTOF(av);
  mlc_expr_kind kinds[] = {MLC_EXPR_ADD, MLC_EXPR_SUB, MLC_EXPR_MUL, MLC_EXPR_DIV};
  for (int kk = 0; kk < MLC_COUNTOF(kinds); kk++) {
    mlc_prim_func *f = make_binop(kinds[kk], MLC_INT32, n);
    mlc_array *x = args_for(f, 6);
    memcpy(x[0].data, av, sizeof av);
    memcpy(x[1].data, bv, sizeof bv);
    mlc_error err = {{0}};
    CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
    for (int i = 0; i < n; i++) {
      uint32_t ua = (uint32_t)av[i], ub = (uint32_t)bv[i];
      int32_t want;
      switch (kinds[kk]) {
      case MLC_EXPR_ADD: want = (int32_t)(ua + ub); break;
      case MLC_EXPR_SUB: want = (int32_t)(ua - ub); break;
      case MLC_EXPR_MUL: want = (int32_t)(ua * ub); break;
      default: want = bv[i] == -1 ? (int32_t)(0u - ua) : av[i] / bv[i]; break;
      }
      CHECK_MSG(idata(&x[2])[i] == want, "%s %d %d: got %d want %d",
                mlc_expr_kind_name(kinds[kk]), av[i], bv[i], idata(&x[2])[i], want);
    }
    free_args(f, x);
  }
  /* int8 and int64 wrap too. */
  mlc_prim_func *f8 = make_binop(MLC_EXPR_ADD, MLC_INT8, 2);
  mlc_array *x8 = args_for(f8, 7);
  ((int8_t *)x8[0].data)[0] = 127, ((int8_t *)x8[1].data)[0] = 1;
  ((int8_t *)x8[0].data)[1] = -100, ((int8_t *)x8[1].data)[1] = -100;
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f8, x8, &err), "%s", err.msg);
  CHECK(((int8_t *)x8[2].data)[0] == -128 && ((int8_t *)x8[2].data)[1] == 56);
  free_args(f8, x8);
  mlc_prim_func *f64 = make_binop(MLC_EXPR_MUL, MLC_INT64, 1);
  mlc_array *x64 = args_for(f64, 8);
  ((int64_t *)x64[0].data)[0] = INT64_MAX, ((int64_t *)x64[1].data)[0] = 3;
  CHECK_MSG(mlc_interp_run(f64, x64, &err), "%s", err.msg);
  CHECK(((int64_t *)x64[2].data)[0] == (int64_t)((uint64_t)INT64_MAX * 3u));
  free_args(f64, x64);
}

static int64_t py_floordiv(int64_t a, int64_t b) { return (int64_t)floor((double)a / (double)b); }

static void test_floordiv_floormod(void) {
  int n = 0;
  int32_t av[64], bv[64];
  for (int a = -9; a <= 9; a += 3)
    for (int b = -4; b <= 4; b++)
      if (b != 0 && n < 64) av[n] = a + (b & 1), bv[n++] = b;
  mlc_expr_kind kinds[] = {MLC_EXPR_FLOORDIV, MLC_EXPR_FLOORMOD, MLC_EXPR_DIV, MLC_EXPR_MIN,
                           MLC_EXPR_MAX};
  for (int kk = 0; kk < MLC_COUNTOF(kinds); kk++) {
    mlc_prim_func *f = make_binop(kinds[kk], MLC_INT32, n);
    mlc_array *x = args_for(f, 9);
    memcpy(x[0].data, av, sizeof(int32_t) * (size_t)n);
    memcpy(x[1].data, bv, sizeof(int32_t) * (size_t)n);
    mlc_error err = {{0}};
    CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
    for (int i = 0; i < n; i++) {
      int64_t a = av[i], b = bv[i], want;
      switch (kinds[kk]) {
      case MLC_EXPR_FLOORDIV: want = py_floordiv(a, b); break;
      case MLC_EXPR_FLOORMOD: want = a - py_floordiv(a, b) * b; break;
      case MLC_EXPR_DIV: want = (int64_t)trunc((double)a / (double)b); break;
      case MLC_EXPR_MIN: want = a < b ? a : b; break;
      default: want = a > b ? a : b; break;
      }
      CHECK_MSG(idata(&x[2])[i] == want, "%s(%d, %d) = %d, want %d", mlc_expr_kind_name(kinds[kk]),
                av[i], bv[i], idata(&x[2])[i], (int)want);
    }
    free_args(f, x);
  }
  /* Spot values: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1. */
  CHECK(py_floordiv(-7, 2) == -4);
  /* Float floordiv/floormod follow floor too. */
  mlc_prim_func *ff = make_binop(MLC_EXPR_FLOORMOD, MLC_FLOAT32, 2);
  mlc_array *xf = args_for(ff, 10);
  fdata(&xf[0])[0] = -7.5f, fdata(&xf[1])[0] = 2.0f;
  fdata(&xf[0])[1] = 7.5f, fdata(&xf[1])[1] = -2.0f;
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(ff, xf, &err), "%s", err.msg);
  CHECK(fdata(&xf[2])[0] == 0.5f && fdata(&xf[2])[1] == -0.5f);
  free_args(ff, xf);
}

static void test_division_by_zero(void) {
  mlc_expr_kind kinds[] = {MLC_EXPR_DIV, MLC_EXPR_FLOORDIV, MLC_EXPR_FLOORMOD};
  for (int kk = 0; kk < MLC_COUNTOF(kinds); kk++) {
    mlc_prim_func *f = make_binop(kinds[kk], MLC_INT32, 3);
    mlc_array *x = args_for(f, 11);
    idata(&x[1])[0] = 1, idata(&x[1])[1] = 0, idata(&x[1])[2] = 2;
    mlc_error err = {{0}};
    CHECK(!mlc_interp_run(f, x, &err));
    CHECK_MSG(strstr(err.msg, "division by zero") && strstr(err.msg, mlc_expr_kind_name(kinds[kk])),
              "%s", err.msg);
    free_args(f, x);
  }
  /* Float division by zero is IEEE: inf, no error. */
  mlc_prim_func *f = make_binop(MLC_EXPR_DIV, MLC_FLOAT32, 1);
  mlc_array *x = args_for(f, 12);
  fdata(&x[0])[0] = 1, fdata(&x[1])[0] = 0;
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  CHECK(fdata(&x[2])[0] == INFINITY);
  free_args(f, x);
}

/* Comparisons write bools. */
static void test_compare(void) {
  mlc_expr_kind kinds[] = {MLC_EXPR_EQ, MLC_EXPR_NE, MLC_EXPR_LT,
                           MLC_EXPR_LE, MLC_EXPR_GT, MLC_EXPR_GE};
  float av[] = {1, 2, 3, NAN}, bv[] = {1, 3, 2, 1};
  for (int kk = 0; kk < MLC_COUNTOF(kinds); kk++) {
    mlc_prim_func *f = make_binop(kinds[kk], MLC_FLOAT32, 4);
    mlc_array *x = args_for(f, 13);
    memcpy(x[0].data, av, sizeof av);
    memcpy(x[1].data, bv, sizeof bv);
    mlc_error err = {{0}};
    CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
    for (int i = 0; i < 4; i++) {
      float a = av[i], b = bv[i];
      bool want = kinds[kk] == MLC_EXPR_EQ   ? a == b
                  : kinds[kk] == MLC_EXPR_NE ? a != b
                  : kinds[kk] == MLC_EXPR_LT ? a < b
                  : kinds[kk] == MLC_EXPR_LE ? a <= b
                  : kinds[kk] == MLC_EXPR_GT ? a > b
                                             : a >= b;
      CHECK(((uint8_t *)x[2].data)[i] == want);
    }
    free_args(f, x);
  }
}

static float h2f(uint16_t h) { return mlc_half_to_float(h); }

static void test_float16(void) {
  int64_t n = 64;
  mlc_prim_func *f = make_binop(MLC_EXPR_MUL, MLC_FLOAT16, n);
  mlc_array *x = args_for(f, 14);
  uint16_t *a = x[0].data, *b = x[1].data, *c = x[2].data;
  a[0] = mlc_float_to_half(300.0f), b[0] = mlc_float_to_half(300.0f); /* overflows to inf */
  a[1] = 0x0001, b[1] = mlc_float_to_half(0.25f);                    /* underflow to 0 */
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int i = 0; i < n; i++) {
    uint16_t want = mlc_float_to_half(h2f(a[i]) * h2f(b[i]));
    CHECK_MSG(c[i] == want, "%d: %04x * %04x = %04x, want %04x", i, a[i], b[i], c[i], want);
  }
  CHECK(c[0] == 0x7c00 && c[1] == 0);
  free_args(f, x);
  /* An add whose float32 result is not a half: rounded to nearest even. */
  mlc_prim_func *g = make_binop(MLC_EXPR_ADD, MLC_FLOAT16, 2);
  mlc_array *y = args_for(g, 15);
  uint16_t *ya = y[0].data, *yb = y[1].data, *yc = y[2].data;
  ya[0] = mlc_float_to_half(2048.0f), yb[0] = mlc_float_to_half(1.0f);  /* 2049: tie -> 2048 */
  ya[1] = mlc_float_to_half(2048.0f), yb[1] = mlc_float_to_half(3.0f);  /* 2051: tie -> 2052 */
  CHECK_MSG(mlc_interp_run(g, y, &err), "%s", err.msg);
  CHECK(h2f(yc[0]) == 2048.0f && h2f(yc[1]) == 2052.0f);
  free_args(g, y);
}

/* B[i] = cast(dst, A[i]) */
static mlc_prim_func *make_cast(mlc_dtype from, mlc_dtype to, int64_t n) {
  mlc_buffer *a = buf1("A", from, n), *b = buf1("B", to, n);
  mlc_var *i = ivar("i"), *vi = ivar("vi");
  mlc_block *blk = block("B", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  blk->body = st1(b, R(vi), mlc_cast(A, to, ld1(a, R(vi))));
  return func("cast", 2, (mlc_buffer *[]){a, b},
              loop(i, n, mlc_realize_new(A, blk, (mlc_expr *[]){R(i)}, NULL)), 0, NULL);
}

static void test_casts(void) {
  mlc_error err = {{0}};
  /* float32 -> int32: truncation, saturation, NaN -> 0. */
  float fv[] = {-2.7f, 2.7f, 1e10f, -1e10f, NAN, 2147483520.0f, -0.5f};
  int32_t want_i[] = {-2, 2, INT32_MAX, INT32_MIN, 0, 2147483520, 0};
  mlc_prim_func *f = make_cast(MLC_FLOAT32, MLC_INT32, MLC_COUNTOF(fv));
  mlc_array *x = args_for(f, 16);
  memcpy(x[0].data, fv, sizeof fv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int i = 0; i < MLC_COUNTOF(fv); i++)
    CHECK_MSG(idata(&x[1])[i] == want_i[i], "%g -> %d", fv[i], idata(&x[1])[i]);
  free_args(f, x);
  /* int32 -> int8 wraps; int32 -> float32; int32 -> bool. */
  int32_t iv[] = {300, -129, 127, 16777217, 0};
  f = make_cast(MLC_INT32, MLC_INT8, 5);
  x = args_for(f, 17);
  memcpy(x[0].data, iv, sizeof iv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  int8_t *o8 = x[1].data;
  CHECK(o8[0] == 44 && o8[1] == 127 && o8[2] == 127 && o8[3] == 1 && o8[4] == 0);
  free_args(f, x);
  f = make_cast(MLC_INT32, MLC_FLOAT32, 5);
  x = args_for(f, 18);
  memcpy(x[0].data, iv, sizeof iv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  CHECK(fdata(&x[1])[0] == 300.0f && fdata(&x[1])[3] == 16777216.0f);
  free_args(f, x);
  f = make_cast(MLC_INT32, MLC_BOOL, 5);
  x = args_for(f, 19);
  memcpy(x[0].data, iv, sizeof iv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  uint8_t *ob = x[1].data;
  CHECK(ob[0] == 1 && ob[1] == 1 && ob[4] == 0);
  free_args(f, x);
  /* float32 -> float16 rounds; float16 -> float32 is exact; float -> int8 saturates. */
  float hv[] = {1.0f / 3.0f, 65519.0f, 65520.0f, 1e-8f, -2.5f};
  f = make_cast(MLC_FLOAT32, MLC_FLOAT16, 5);
  x = args_for(f, 20);
  memcpy(x[0].data, hv, sizeof hv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  uint16_t *oh = x[1].data;
  CHECK(oh[0] == 0x3555 && oh[1] == 0x7bff && oh[2] == 0x7c00 && oh[3] == 0 && oh[4] == 0xc100);
  free_args(f, x);
  f = make_cast(MLC_FLOAT32, MLC_INT8, 3);
  x = args_for(f, 21);
  fdata(&x[0])[0] = 200.0f, fdata(&x[0])[1] = -200.0f, fdata(&x[0])[2] = -127.9f;
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  o8 = x[1].data;
  CHECK(o8[0] == 127 && o8[1] == -128 && o8[2] == -127);
  free_args(f, x);
  f = make_cast(MLC_BOOL, MLC_INT32, 2);
  x = args_for(f, 22);
  ((uint8_t *)x[0].data)[0] = 1, ((uint8_t *)x[0].data)[1] = 0;
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  CHECK(idata(&x[1])[0] == 1 && idata(&x[1])[1] == 0);
  free_args(f, x);
}

/* uint8: every binary kind over the full 0..255 range (products past 255
 * wrap, division and comparisons are unsigned), against C's uint8_t. */
static void test_uint8(void) {
  mlc_expr_kind kinds[] = {MLC_EXPR_ADD, MLC_EXPR_SUB, MLC_EXPR_MUL, MLC_EXPR_DIV, MLC_EXPR_FLOORDIV,
                           MLC_EXPR_FLOORMOD, MLC_EXPR_MIN, MLC_EXPR_MAX, MLC_EXPR_LT, MLC_EXPR_GE};
  int64_t n = 256;
  for (int kk = 0; kk < MLC_COUNTOF(kinds); kk++) {
    mlc_prim_func *f = make_binop(kinds[kk], MLC_UINT8, n);
    mlc_array *x = args_for(f, 40 + (uint64_t)kk);
    uint8_t *a = x[0].data, *b = x[1].data, *c = x[2].data;
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, 9, (uint64_t)kk);
    for (int i = 0; i < n; i++) a[i] = (uint8_t)i, b[i] = (uint8_t)(mlc_pcg32_next(&rng) | 1);
    mlc_error err = {{0}};
    CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
    int bad = 0;
    for (int i = 0; i < n; i++) {
      unsigned p = a[i], q = b[i], want = 0;
      switch (kinds[kk]) {
      case MLC_EXPR_ADD: want = (uint8_t)(p + q); break;
      case MLC_EXPR_SUB: want = (uint8_t)(p - q); break;
      case MLC_EXPR_MUL: want = (uint8_t)(p * q); break;
      case MLC_EXPR_DIV:
      case MLC_EXPR_FLOORDIV: want = p / q; break;
      case MLC_EXPR_FLOORMOD: want = p % q; break;
      case MLC_EXPR_MIN: want = p < q ? p : q; break;
      case MLC_EXPR_MAX: want = p > q ? p : q; break;
      case MLC_EXPR_LT: want = p < q; break;
      case MLC_EXPR_GE: want = p >= q; break;
      default: MLC_ASSERT(0);
      }
      if (c[i] != want) bad++;
    }
    CHECK_MSG(bad == 0, "%s: %d of 256 wrong", mlc_expr_kind_name(kinds[kk]), bad);
    free_args(f, x);
  }
}

/* The bfloat16 nearest to v (ties to even), from the exact double, by
 * scaling the significand to 8 bits: another way than ir/array.c's. */
static uint16_t ref_bf16(double v) {
  int e;
  double m = frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
  double r = ldexp(nearbyint(ldexp(m, 8)), e - 8);
  float f = (float)r; /* exact: 8 significant bits */
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}

static float bf2f(uint16_t h) { return mlc_bf16_to_float(h); }

/* bfloat16 add, sub, mul round once to nearest even (the exact result
 * fits a double), as a bfloat16 machine computing in float32 does. */
static void test_bfloat16(void) {
  mlc_expr_kind kinds[] = {MLC_EXPR_ADD, MLC_EXPR_SUB, MLC_EXPR_MUL};
  int64_t n = 512;
  for (int kk = 0; kk < MLC_COUNTOF(kinds); kk++) {
    mlc_prim_func *f = make_binop(kinds[kk], MLC_BFLOAT16, n);
    mlc_array *x = args_for(f, 50 + (uint64_t)kk);
    uint16_t *a = x[0].data, *b = x[1].data, *c = x[2].data;
    b[0] = mlc_float_to_bf16(1.0f / 256), a[0] = mlc_float_to_bf16(1.0f); /* 1 + 2^-8: a tie */
    mlc_error err = {{0}};
    CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
    int bad = 0;
    for (int i = 0; i < n; i++) {
      double p = bf2f(a[i]), q = bf2f(b[i]);
      double v = kinds[kk] == MLC_EXPR_ADD ? p + q : kinds[kk] == MLC_EXPR_SUB ? p - q : p * q;
      uint16_t want = v == 0 ? (uint16_t)(signbit(v) ? 0x8000 : 0) : ref_bf16(v);
      if (c[i] != want && !(v == 0 && (c[i] & 0x7fff) == 0)) bad++;
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld wrong", mlc_expr_kind_name(kinds[kk]), bad, (long long)n);
    if (kinds[kk] == MLC_EXPR_ADD) CHECK(bf2f(c[0]) == 1.0f); /* tie to even */
    if (kinds[kk] == MLC_EXPR_SUB) CHECK(bf2f(c[0]) == 1.0f - 1.0f / 256);
    free_args(f, x);
  }
}

/* Conversions to and from uint8 and bfloat16: saturating from float,
 * wrapping from int, rounding to bfloat16. */
static void test_casts_lowp(void) {
  mlc_error err = {{0}};
  mlc_prim_func *f = make_cast(MLC_FLOAT32, MLC_UINT8, 4);
  mlc_array *x = args_for(f, 60);
  float fv[] = {300.0f, -5.0f, 254.9f, NAN};
  memcpy(x[0].data, fv, sizeof fv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  uint8_t *u = x[1].data;
  CHECK_MSG(u[0] == 255 && u[1] == 0 && u[2] == 254 && u[3] == 0, "%d %d %d %d", u[0], u[1], u[2], u[3]);
  free_args(f, x);
  f = make_cast(MLC_INT32, MLC_UINT8, 3);
  x = args_for(f, 61);
  idata(&x[0])[0] = 300, idata(&x[0])[1] = -1, idata(&x[0])[2] = 255;
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  u = x[1].data;
  CHECK(u[0] == 44 && u[1] == 255 && u[2] == 255);
  free_args(f, x);
  f = make_cast(MLC_UINT8, MLC_INT32, 2);
  x = args_for(f, 62);
  ((uint8_t *)x[0].data)[0] = 200, ((uint8_t *)x[0].data)[1] = 7;
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  CHECK(idata(&x[1])[0] == 200 && idata(&x[1])[1] == 7);
  free_args(f, x);
  f = make_cast(MLC_FLOAT32, MLC_BFLOAT16, 4);
  x = args_for(f, 63);
  float bv[] = {1.0f / 3.0f, 3.0e38f, 3.4e38f, -2.5f};
  memcpy(x[0].data, bv, sizeof bv);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  uint16_t *ob = x[1].data;
  CHECK_MSG(ob[0] == 0x3eab && ob[1] == 0x7f62 && ob[2] == 0x7f80 && ob[3] == 0xc020, "%04x %04x %04x %04x",
            ob[0], ob[1], ob[2], ob[3]);
  free_args(f, x);
  f = make_cast(MLC_INT32, MLC_BFLOAT16, 2);
  x = args_for(f, 64);
  idata(&x[0])[0] = 257, idata(&x[0])[1] = 259; /* 257: tie to 256; 259 -> 260 */
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  ob = x[1].data;
  CHECK(bf2f(ob[0]) == 256.0f && bf2f(ob[1]) == 260.0f);
  free_args(f, x);
}

/* Every bfloat16 widens and narrows back to itself; the floats halfway
 * between two neighbours round to the even one; NaN stays NaN. */
static void test_bf16_exhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = mlc_bf16_to_float((uint16_t)h);
    if (isnan(f)) {
      if (!isnan(mlc_bf16_to_float(mlc_float_to_bf16(f)))) bad++;
      continue;
    }
    if (mlc_float_to_bf16(f) != h) bad++;
    if ((h & 0x7fff) < 0x7f7f && (h & 0x7fff) != 0) { /* finite, nonzero, with a finite neighbour up */
      float hi = mlc_bf16_to_float((uint16_t)(h + 1));
      float mid = f + (hi - f) / 2;
      uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
      if (mlc_float_to_bf16(mid) != want) bad++;
      if (mlc_float_to_bf16(nextafterf(mid, 0)) != h && (h & 0x8000) == 0) bad++;
    }
  }
  CHECK_MSG(bad == 0, "%d bfloat16 conversions wrong", bad);
  CHECK(mlc_float_to_bf16(1.0f) == 0x3f80 && mlc_float_to_bf16(-2.0f) == 0xc000);
  CHECK(mlc_float_to_bf16(INFINITY) == 0x7f80 && mlc_float_to_bf16(FLT_MAX) == 0x7f80);
  CHECK(isnan(mlc_bf16_to_float(mlc_float_to_bf16(NAN))));
}

static float ref_intrin(mlc_intrin op, float x, float y) {
  switch (op) {
  case MLC_INTRIN_EXP: return expf(x);
  case MLC_INTRIN_LOG: return logf(x);
  case MLC_INTRIN_SQRT: return sqrtf(x);
  case MLC_INTRIN_RSQRT: return 1.0f / sqrtf(x);
  case MLC_INTRIN_TANH: return tanhf(x);
  case MLC_INTRIN_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case MLC_INTRIN_ABS: return fabsf(x);
  case MLC_INTRIN_ERF: return erff(x);
  case MLC_INTRIN_FLOOR: return floorf(x);
  case MLC_INTRIN_CEIL: return ceilf(x);
  case MLC_INTRIN_POW: return powf(x, y);
  case MLC_INTRIN_ROUND: return nearbyintf(x);
  case MLC_INTRIN_SIN: return sinf(x);
  case MLC_INTRIN_COS: return cosf(x);
  case MLC_INTRIN_TAN: return tanf(x);
  case MLC_INTRIN_ASIN: return asinf(x);
  case MLC_INTRIN_ACOS: return acosf(x);
  case MLC_INTRIN_ATAN: return atanf(x);
  case MLC_INTRIN_SINH: return sinhf(x);
  case MLC_INTRIN_COSH: return coshf(x);
  case MLC_INTRIN_ASINH: return asinhf(x);
  case MLC_INTRIN_ACOSH: return acoshf(x);
  case MLC_INTRIN_ATANH: return atanhf(x);
  }
  return NAN;
}

static bool same_float(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

static void test_intrinsics(void) {
  int64_t n = 16;
  for (int op = 0; op < MLC_INTRIN_COUNT; op++) {
    for (int half = 0; half < 2; half++) {
      mlc_dtype t = half ? MLC_FLOAT16 : MLC_FLOAT32;
      mlc_buffer *a = buf1("A", t, n), *b = buf1("B", t, n), *c = buf1("C", t, n);
      mlc_var *i = ivar("i"), *vi = ivar("vi");
      mlc_block *blk = block("C", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
      mlc_expr *call = mlc_call(A, (mlc_intrin)op, (mlc_expr *[]){ld1(a, R(vi)), ld1(b, R(vi))});
      blk->body = st1(c, R(vi), call);
      mlc_prim_func *f = func("intrin", 3, (mlc_buffer *[]){a, b, c},
                              loop(i, n, mlc_realize_new(A, blk, (mlc_expr *[]){R(i)}, NULL)), 0,
                              NULL);
      mlc_array *x = args_for(f, 23 + (uint64_t)op);
      /* Positive inputs for log/sqrt/rsqrt/pow half the time. */
      for (int k = 0; k < n; k++) {
        double v = mlc_array_get(&x[0], k) * 3;
        if (k % 2) v = fabs(v) + 0.01;
        mlc_array_set(&x[0], k, v);
      }
      mlc_error err = {{0}};
      CHECK_MSG(mlc_interp_run(f, x, &err), "%s: %s", mlc_intrin_name((mlc_intrin)op), err.msg);
      for (int k = 0; k < n; k++) {
        float xa = (float)mlc_array_get(&x[0], k), xb = (float)mlc_array_get(&x[1], k);
        float want = ref_intrin((mlc_intrin)op, xa, xb);
        if (half) want = h2f(mlc_float_to_half(want));
        float got = (float)mlc_array_get(&x[2], k);
        CHECK_MSG(same_float(got, want), "%s%s(%g, %g) = %g, want %g",
                  mlc_intrin_name((mlc_intrin)op), half ? " f16" : "", xa, xb, got, want);
      }
      free_args(f, x);
    }
  }
}

/* T.round rounds ties to even (ONNX Round, TVM's T.round), in the
 * interpreter and when the simplifier folds a constant. */
static void test_round_ties(void) {
  static const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, -2.6f};
  static const float want[] = {0, 2, 2, -0.0f, -2, -2, 2, -3};
  int64_t n = MLC_COUNTOF(x);
  mlc_buffer *a = buf1("A", MLC_FLOAT32, n), *c = buf1("C", MLC_FLOAT32, n);
  mlc_var *i = ivar("i"), *vi = ivar("vi");
  mlc_block *blk = block("C", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  blk->body = st1(c, R(vi), mlc_call(A, MLC_INTRIN_ROUND, (mlc_expr *[]){ld1(a, R(vi))}));
  mlc_prim_func *f = func("round", 2, (mlc_buffer *[]){a, c},
                          loop(i, n, mlc_realize_new(A, blk, (mlc_expr *[]){R(i)}, NULL)), 0, NULL);
  mlc_array *args = args_for(f, 5);
  for (int k = 0; k < n; k++) mlc_array_set(&args[0], k, x[k]);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, args, &err), "%s", err.msg);
  for (int k = 0; k < n; k++)
    CHECK_MSG(mlc_array_get(&args[1], k) == want[k], "round(%g) = %g, want %g", x[k],
              mlc_array_get(&args[1], k), want[k]);
  free_args(f, args);
  mlc_simplifier *s = mlc_simplifier_new(A);
  mlc_expr *e = mlc_simplify(s, mlc_call(A, MLC_INTRIN_ROUND, (mlc_expr *[]){mlc_float(A, MLC_FLOAT32, 2.5)}));
  CHECK(e->kind == MLC_EXPR_FLOAT_IMM && e->float_val == 2);
}

/* T = A * 2 into a root alloc_buffer, then B = T + 1; and an ALLOCATE
 * statement holding a temporary the same way. */
static void test_alloc_buffer(void) {
  int64_t n = 20;
  mlc_buffer *a = buf1("A", MLC_FLOAT32, n), *b = buf1("B", MLC_FLOAT32, n);
  mlc_buffer *t = buf1("T", MLC_FLOAT32, n);
  mlc_var *i = ivar("i"), *j = ivar("j"), *vi = ivar("vi"), *vj = ivar("vj");
  mlc_block *b1 = block("T", 1, (mlc_var *[]){vi}, (int64_t[]){n}, "S");
  b1->body = st1(t, R(vi), mlc_mul(A, ld1(a, R(vi)), F(2)));
  mlc_block *b2 = block("B", 1, (mlc_var *[]){vj}, (int64_t[]){n}, "S");
  b2->body = st1(b, R(vj), mlc_add(A, ld1(t, R(vj)), F(1)));
  mlc_stmt *body = seq2(loop(i, n, mlc_realize_new(A, b1, (mlc_expr *[]){R(i)}, NULL)),
                        loop(j, n, mlc_realize_new(A, b2, (mlc_expr *[]){R(j)}, NULL)));
  mlc_prim_func *f = func("two_stage", 2, (mlc_buffer *[]){a, b}, body, 1, (mlc_buffer *[]){t});
  mlc_array *x = args_for(f, 40);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int k = 0; k < n; k++) CHECK(fdata(&x[1])[k] == fdata(&x[0])[k] * 2 + 1);

  /* Undeclared: the same body with T not allocated is an error. */
  mlc_prim_func *g = func("undeclared", 2, (mlc_buffer *[]){a, b}, body, 0, NULL);
  CHECK(!mlc_interp_run(g, x, &err));
  CHECK_MSG(strstr(err.msg, "buffer T") && strstr(err.msg, "not declared"), "%s", err.msg);

  /* ALLOCATE: scratch is zeroed; B[i] = T[i] + A[i] where T was never written. */
  mlc_buffer *u = mlc_buffer_new(A, "U", MLC_FLOAT32, 1, (int64_t[]){n}, "local");
  mlc_block *b3 = block("B", 1, (mlc_var *[]){vj}, (int64_t[]){n}, "S");
  b3->body = st1(b, R(vj), mlc_add(A, ld1(u, R(vj)), ld1(a, R(vj))));
  mlc_stmt *s = mlc_allocate_new(A, u, loop(j, n, mlc_realize_new(A, b3, (mlc_expr *[]){R(j)}, NULL)));
  mlc_prim_func *h = func("allocate", 2, (mlc_buffer *[]){a, b}, s, 0, NULL);
  CHECK_MSG(mlc_interp_run(h, x, &err), "%s", err.msg);
  for (int k = 0; k < n; k++) CHECK(fdata(&x[1])[k] == fdata(&x[0])[k]);
  free_args(f, x);
}

/* Row sums B[i] = sum_k A[i, k] written as nested blocks: an outer block
 * over (vi, vko) holds the init, and an inner block without init over
 * (vi2, vk) accumulates; then the reverse: an outer spatial block around a
 * reduction block with its own init. Also a reduce domain that starts at 2. */
static void test_nested_blocks(void) {
  int64_t m = 6, k = 12;
  mlc_buffer *a = buf2("A", MLC_FLOAT32, m, k), *b = buf1("B", MLC_FLOAT32, m);
  mlc_var *i = ivar("i"), *ko = ivar("ko"), *ki = ivar("ki");
  mlc_var *vi = ivar("vi"), *vko = ivar("vko"), *vi2 = ivar("vi2"), *vk = ivar("vk");
  mlc_block *inner = block("B_i", 2, (mlc_var *[]){vi2, vk}, (int64_t[]){m, k}, "SR");
  inner->body = st1(b, R(vi2), mlc_add(A, ld1(b, R(vi2)), ld2(a, R(vi2), R(vk))));
  mlc_expr *kidx = mlc_add(A, mlc_mul(A, R(vko), I(4)), R(ki));
  mlc_stmt *inner_loop =
      loop(ki, 4, mlc_realize_new(A, inner, (mlc_expr *[]){R(vi), kidx}, NULL));
  mlc_block *outer = block("B_o", 2, (mlc_var *[]){vi, vko}, (int64_t[]){m, 3}, "SR");
  outer->init = st1(b, R(vi), F(0));
  outer->body = inner_loop;
  mlc_stmt *s = loop(i, m, loop(ko, 3, mlc_realize_new(A, outer, (mlc_expr *[]){R(i), R(ko)}, NULL)));
  mlc_prim_func *f = func("rowsum", 2, (mlc_buffer *[]){a, b}, s, 0, NULL);
  mlc_array *x = args_for(f, 41);
  float want[6];
  for (int r = 0; r < m; r++) {
    float acc = 0;
    for (int c = 0; c < k; c++) acc = acc + fdata(&x[0])[r * k + c];
    want[r] = acc;
  }
  for (int r = 0; r < m; r++) fdata(&x[1])[r] = 99;
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int r = 0; r < m; r++) CHECK_MSG(fdata(&x[1])[r] == want[r], "row %d", r);

  /* Outer spatial block, inner reduction block with init. */
  mlc_var *vi3 = ivar("vi3"), *vk3 = ivar("vk3"), *vo = ivar("vo"), *kk = ivar("kk");
  mlc_block *red = block("B_r", 2, (mlc_var *[]){vi3, vk3}, (int64_t[]){m, k}, "SR");
  red->init = st1(b, R(vi3), F(0));
  red->body = st1(b, R(vi3), mlc_add(A, ld1(b, R(vi3)), ld2(a, R(vi3), R(vk3))));
  mlc_block *wrap = block("B_w", 1, (mlc_var *[]){vo}, (int64_t[]){m}, "S");
  wrap->body = loop(kk, k, mlc_realize_new(A, red, (mlc_expr *[]){R(vo), R(kk)}, NULL));
  mlc_prim_func *g = func("rowsum2", 2, (mlc_buffer *[]){a, b},
                          loop(i, m, mlc_realize_new(A, wrap, (mlc_expr *[]){R(i)}, NULL)), 0,
                          NULL);
  for (int r = 0; r < m; r++) fdata(&x[1])[r] = 99;
  CHECK_MSG(mlc_interp_run(g, x, &err), "%s", err.msg);
  for (int r = 0; r < m; r++) CHECK_MSG(fdata(&x[1])[r] == want[r], "row %d", r);

  /* Reduce domain [2, 12): init runs when vk == 2; sums columns 2..11. */
  mlc_block *red2 = block("B_r2", 2, (mlc_var *[]){vi3, vk3}, (int64_t[]){m, k - 2}, "SR");
  red2->iters[1].dom.min = I(2);
  red2->init = st1(b, R(vi3), F(0));
  red2->body = red->body;
  mlc_stmt *s3 = loop(i, m, loop(kk, k - 2, mlc_realize_new(A, red2,
                                                            (mlc_expr *[]){R(i), mlc_add(A, R(kk), I(2))},
                                                            NULL)));
  mlc_prim_func *h = func("rowsum3", 2, (mlc_buffer *[]){a, b}, s3, 0, NULL);
  CHECK_MSG(mlc_interp_run(h, x, &err), "%s", err.msg);
  for (int r = 0; r < m; r++) {
    float acc = 0;
    for (int c = 2; c < k; c++) acc = acc + fdata(&x[0])[r * k + c];
    CHECK_MSG(fdata(&x[1])[r] == acc, "row %d", r);
  }
  free_args(f, x);
}

/* Cooperative fetch: a loop bound to threadIdx.x inside another bound to
 * threadIdx.x; both iterate (serialized), so shared gets fully written. */
static void test_thread_binding(void) {
  int64_t n = 8;
  mlc_buffer *a = buf1("A", MLC_FLOAT32, n), *b = buf1("B", MLC_FLOAT32, n);
  mlc_buffer *sh = mlc_buffer_new(A, "A_shared", MLC_FLOAT32, 1, (int64_t[]){n}, "shared");
  mlc_var *tx = ivar("tx"), *ax = ivar("ax"), *tx2 = ivar("tx2"), *v = ivar("v"), *w = ivar("w");
  mlc_block *fetch = block("A_shared", 1, (mlc_var *[]){v}, (int64_t[]){n}, "S");
  fetch->body = st1(sh, R(v), ld1(a, R(v)));
  mlc_stmt *inner = mlc_for_new(A, tx2, I(0), I(4), MLC_FOR_THREAD_BINDING,
                                mlc_realize_new(A, fetch,
                                                (mlc_expr *[]){mlc_add(A, mlc_mul(A, R(ax), I(4)), R(tx2))},
                                                NULL));
  inner->loop.thread = "threadIdx.x";
  mlc_block *use = block("B", 1, (mlc_var *[]){w}, (int64_t[]){n}, "S");
  use->body = st1(b, R(w), mlc_sub(A, ld1(sh, mlc_sub(A, I(n - 1), R(w))), F(1)));
  mlc_var *j = ivar("j");
  mlc_stmt *body = seq2(loop(ax, 2, inner),
                        mlc_for_new(A, j, I(0), I(n), MLC_FOR_VECTORIZED,
                                    mlc_realize_new(A, use, (mlc_expr *[]){R(j)}, NULL)));
  mlc_stmt *outer = mlc_for_new(A, tx, I(0), I(4), MLC_FOR_THREAD_BINDING, body);
  outer->loop.thread = "threadIdx.x";
  mlc_prim_func *f = func("coop", 2, (mlc_buffer *[]){a, b}, outer, 1, (mlc_buffer *[]){sh});
  mlc_array *x = args_for(f, 42);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int k = 0; k < n; k++) CHECK(fdata(&x[1])[k] == fdata(&x[0])[n - 1 - k] - 1);
  free_args(f, x);
}

/* if/else statements, loops with nonzero min, EVALUATE, and/or/not. */
static void test_control(void) {
  int64_t n = 10;
  mlc_buffer *b = buf1("B", MLC_INT32, n);
  mlc_var *i = ivar("i");
  /* for i in range(2, 9): if i % 3 == 0 and not i == 6: B[i] = 1 else B[i] = i * 10 */
  mlc_expr *c1 = bin(MLC_EXPR_EQ, bin(MLC_EXPR_FLOORMOD, R(i), I(3)), I(0));
  mlc_expr *c2 = mlc_not(A, bin(MLC_EXPR_EQ, R(i), I(6)));
  mlc_stmt *ifs = mlc_if_new(A, bin(MLC_EXPR_AND, c1, c2), st1(b, R(i), I(1)),
                             st1(b, R(i), mlc_mul(A, R(i), I(10))));
  mlc_stmt *body = seq2(mlc_for_new(A, i, I(2), I(7), MLC_FOR_UNROLLED, ifs),
                        mlc_evaluate_new(A, I(0)));
  mlc_prim_func *f = func("control", 1, (mlc_buffer *[]){b}, body, 0, NULL);
  mlc_array *x = args_for(f, 43);
  for (int k = 0; k < n; k++) idata(&x[0])[k] = -5;
  mlc_error err = {{0}};
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  int32_t want[] = {-5, -5, 20, 1, 40, 50, 60, 70, 80, -5};
  for (int k = 0; k < n; k++) CHECK_MSG(idata(&x[0])[k] == want[k], "B[%d] = %d", k, idata(&x[0])[k]);
  /* or short-circuits: i < 0 or A[i] is fine for i in range. */
  free_args(f, x);
}

/* Index forms: split bindings proven in bounds, a triangular loop whose
 * extent is a var (checked), int32 index arithmetic that wraps, a 3-term
 * affine index, and a non-affine index. */
static void test_index_forms(void) {
  mlc_error err = {{0}};
  /* B[io * 4 + ii, n - 1 - j] = A[j, io * 4 + ii] over 12 x 5, via a block. */
  mlc_buffer *a = buf2("A", MLC_FLOAT32, 5, 12), *b = buf2("B", MLC_FLOAT32, 12, 5);
  mlc_var *io = ivar("io"), *ii = ivar("ii"), *j = ivar("j"), *vi = ivar("vi"), *vj = ivar("vj");
  mlc_block *blk = block("T", 2, (mlc_var *[]){vi, vj}, (int64_t[]){12, 5}, "SS");
  blk->body = st2(b, R(vi), mlc_sub(A, I(4), R(vj)), ld2(a, R(vj), R(vi)));
  mlc_expr *idx = mlc_add(A, mlc_mul(A, I(4), R(io)), R(ii));
  mlc_stmt *s = loop(io, 3, loop(ii, 4, loop(j, 5, mlc_realize_new(A, blk, (mlc_expr *[]){idx, R(j)}, NULL))));
  mlc_prim_func *f = func("tr", 2, (mlc_buffer *[]){a, b}, s, 0, NULL);
  mlc_array *x = args_for(f, 50);
  CHECK_MSG(mlc_interp_run(f, x, &err), "%s", err.msg);
  for (int r = 0; r < 12; r++)
    for (int c = 0; c < 5; c++) CHECK(fdata(&x[1])[r * 5 + (4 - c)] == fdata(&x[0])[c * 12 + r]);
  free_args(f, x);

  /* Triangular: for i in 0..6, for k in 0..i+1: L[i, k] = 1 (extent is an expression). */
  mlc_buffer *l = buf2("L", MLC_INT32, 6, 6);
  mlc_var *i = ivar("i"), *k = ivar("k");
  mlc_stmt *tri = loop(i, 6, mlc_for_new(A, k, I(0), mlc_add(A, R(i), I(1)), MLC_FOR_SERIAL,
                                         st2(l, R(i), R(k), I(1))));
  mlc_prim_func *g = func("tri", 1, (mlc_buffer *[]){l}, tri, 0, NULL);
  mlc_array *y = args_for(g, 51);
  memset(y[0].data, 0, 36 * sizeof(int32_t));
  CHECK_MSG(mlc_interp_run(g, y, &err), "%s", err.msg);
  for (int r = 0; r < 6; r++)
    for (int c = 0; c < 6; c++) CHECK(idata(&y[0])[r * 6 + c] == (c <= r));
  /* One past the triangle: k in 0..i+2 writes L[5, 6], out of bounds. */
  mlc_stmt *tri2 = loop(i, 6, mlc_for_new(A, k, I(0), mlc_add(A, R(i), I(2)), MLC_FOR_SERIAL,
                                          st2(l, R(i), R(k), I(2))));
  mlc_prim_func *g2 = func("tri2", 1, (mlc_buffer *[]){l}, tri2, 0, NULL);
  CHECK(!mlc_interp_run(g2, y, &err));
  CHECK_MSG(strstr(err.msg, "L[0, 1]") == NULL && strstr(err.msg, "L[5, 6]"), "%s", err.msg);
  free_args(g, y);

  /* int32 index arithmetic wraps: (i * 65536) * 65536 + i == i. */
  mlc_buffer *w = buf1("W", MLC_INT32, 4);
  mlc_expr *wrapped = mlc_add(A, mlc_mul(A, mlc_mul(A, R(i), I(65536)), I(65536)), R(i));
  mlc_prim_func *h = func("wrap", 1, (mlc_buffer *[]){w}, loop(i, 4, st1(w, wrapped, R(i))), 0, NULL);
  mlc_array *z = args_for(h, 52);
  CHECK_MSG(mlc_interp_run(h, z, &err), "%s", err.msg);
  for (int r = 0; r < 4; r++) CHECK(idata(&z[0])[r] == r);
  /* ... and (i * 2^30) * 2 is -2^31 at i = 1: reported with the wrapped value;
   * i * 2^30 - i * (2^30 - 1) == i stays in bounds. */
  mlc_buffer *w2 = buf1("W2", MLC_INT32, 4);
  mlc_expr *same = mlc_sub(A, mlc_mul(A, R(i), I(1 << 30)), mlc_mul(A, R(i), I((1 << 30) - 1)));
  mlc_expr *bad = mlc_mul(A, mlc_mul(A, R(i), I(1 << 30)), I(2));
  mlc_prim_func *h2 = func("wrap2", 1, (mlc_buffer *[]){w2},
                           loop(i, 4, seq2(st1(w2, same, I(7)), st1(w2, bad, I(8)))), 0, NULL);
  memset(z[0].data, 0, 4 * sizeof(int32_t));
  CHECK(!mlc_interp_run(h2, z, &err));
  CHECK_MSG(strstr(err.msg, "W2[-2147483648]"), "%s", err.msg);
  CHECK(idata(&z[0])[0] == 8 && idata(&z[0])[1] == 7); /* i = 0 ran, then W2[1] = 7 */
  free_args(h, z);

  /* A 3-term affine index and a non-affine one (floormod). */
  mlc_buffer *c3 = buf1("C3", MLC_INT32, 24), *c4 = buf1("C4", MLC_INT32, 7);
  mlc_var *p = ivar("p"), *q = ivar("q"), *r2 = ivar("r");
  mlc_expr *flat3 = mlc_add(A, mlc_add(A, mlc_mul(A, R(p), I(12)), mlc_mul(A, R(q), I(4))), R(r2));
  mlc_expr *mod = bin(MLC_EXPR_FLOORMOD, flat3, I(7));
  mlc_stmt *body3 = seq2(st1(c3, flat3, flat3),
                         st1(c4, mod, mlc_add(A, ld1(c4, mod), I(1))));
  mlc_prim_func *m3 = func("three", 2, (mlc_buffer *[]){c3, c4},
                           loop(p, 2, loop(q, 3, loop(r2, 4, body3))), 0, NULL);
  mlc_array *u = args_for(m3, 53);
  memset(u[1].data, 0, 7 * sizeof(int32_t));
  CHECK_MSG(mlc_interp_run(m3, u, &err), "%s", err.msg);
  for (int t = 0; t < 24; t++) CHECK(idata(&u[0])[t] == t);
  for (int t = 0; t < 7; t++) CHECK(idata(&u[1])[t] == (t < 3 ? 4 : 3));
  free_args(m3, u);
}

static void test_argument_errors(void) {
  mlc_prim_func *f = make_vadd(8);
  mlc_array *x = args_for(f, 44);
  mlc_error err = {{0}};
  CHECK(!mlc_interp_run_n(f, 2, x, &err));
  CHECK_MSG(strstr(err.msg, "3 arguments, got 2"), "%s", err.msg);
  CHECK(!mlc_interp_run(f, NULL, &err));
  x[1].dtype = MLC_FLOAT16;
  CHECK(!mlc_interp_run(f, x, &err));
  CHECK_MSG(strstr(err.msg, "argument 1 (B)") && strstr(err.msg, "float16"), "%s", err.msg);
  x[1].dtype = MLC_FLOAT32;
  x[2].shape[0] = 9;
  CHECK(!mlc_interp_run(f, x, &err));
  CHECK_MSG(strstr(err.msg, "argument 2 (C)") && strstr(err.msg, "[9]") && strstr(err.msg, "[8]"),
            "%s", err.msg);
  x[2].shape[0] = 8;
  x[0].ndim = 2;
  x[0].shape[1] = 1;
  CHECK(!mlc_interp_run(f, x, &err));
  CHECK_MSG(strstr(err.msg, "argument 0 (A)") && strstr(err.msg, "[8, 1]"), "%s", err.msg);
  x[0].ndim = 1;
  CHECK_MSG(mlc_interp_run_n(f, 3, x, &err), "%s", err.msg);
  /* A var used outside its loop is a compile error, not a crash. */
  mlc_buffer *b = buf1("B", MLC_FLOAT32, 4);
  mlc_var *i = ivar("i");
  mlc_prim_func *g = func("unbound", 1, (mlc_buffer *[]){b}, st1(b, R(i), F(1)), 0, NULL);
  mlc_array *y = args_for(g, 45);
  CHECK(!mlc_interp_run(g, y, &err));
  CHECK_MSG(strstr(err.msg, "variable i"), "%s", err.msg);
  free_args(g, y);
  free_args(f, x);
}

/* ---- arrays and halves --------------------------------------------------- */

static void test_half_exhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = mlc_half_to_float((uint16_t)h);
    bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff);
    if (nan) {
      if (!isnan(f) || !isnan(mlc_half_to_float(mlc_float_to_half(f)))) bad++;
      continue;
    }
    if (mlc_float_to_half(f) != h) bad++;
  }
  CHECK_MSG(bad == 0, "%d halves do not round-trip", bad);
  /* Known values. */
  CHECK(mlc_half_to_float(0x3c00) == 1.0f && mlc_half_to_float(0xc000) == -2.0f);
  CHECK(mlc_half_to_float(0x7bff) == 65504.0f && mlc_half_to_float(0x0001) == 0x1p-24f);
  CHECK(mlc_half_to_float(0x0400) == 0x1p-14f && mlc_half_to_float(0x7c00) == INFINITY);
  CHECK(mlc_float_to_half(-0.0f) == 0x8000 && mlc_float_to_half(INFINITY) == 0x7c00);
  CHECK(mlc_float_to_half(1e6f) == 0x7c00 && mlc_float_to_half(-1e6f) == 0xfc00);
  CHECK(mlc_float_to_half(65519.996f) == 0x7bff && mlc_float_to_half(65520.0f) == 0x7c00);
  /* Ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10. */
  CHECK(mlc_float_to_half(1.0f + 0x1p-11f) == 0x3c00);
  CHECK(mlc_float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);
  /* Subnormals: 2^-25 is a tie to 0; just above rounds up to 2^-24. */
  CHECK(mlc_float_to_half(0x1p-25f) == 0 && mlc_float_to_half(0x1.0002p-25f) == 1);
  CHECK(mlc_float_to_half(3 * 0x1p-25f) == 2); /* 1.5 ulp: tie to even 2 */
  CHECK(mlc_float_to_half(0x1.ff8p-15f) == 0x03ff); /* largest subnormal */
  CHECK(mlc_float_to_half(0x1.ffcp-15f) == 0x0400); /* tie: rounds up into the normals */
  /* Every float halfway between two adjacent halves rounds to the even one. */
  int bad_ties = 0;
  for (uint32_t h = 0; h < 0x7bff; h++) {
    float lo = mlc_half_to_float((uint16_t)h), hi = mlc_half_to_float((uint16_t)(h + 1));
    float mid = lo + (hi - lo) / 2;
    uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    if (mlc_float_to_half(mid) != want || mlc_float_to_half(-mid) != (want | 0x8000)) bad_ties++;
    if (mlc_float_to_half(nextafterf(mid, 0)) != h) bad_ties++;
    if (mlc_float_to_half(nextafterf(mid, INFINITY)) != h + 1) bad_ties++;
  }
  CHECK_MSG(bad_ties == 0, "%d ties wrong", bad_ties);
  CHECK(isnan(mlc_half_to_float(mlc_float_to_half(NAN))));
}

static void test_array_basics(void) {
  mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){3, 5});
  CHECK(mlc_array_numel(x) == 15 && x->ndim == 2 && x->shape[1] == 5);
  for (int i = 0; i < 15; i++) CHECK(mlc_array_get(x, i) == 0);
  mlc_array_set(x, 7, 2.5);
  CHECK(fdata(x)[7] == 2.5f && mlc_array_get(x, 7) == 2.5);
  mlc_array_free(x);
  mlc_buffer *b = mlc_buffer_new(A, "X", MLC_INT8, 3, (int64_t[]){2, 3, 4}, "global");
  mlc_array *y = mlc_array_for_buffer(b);
  CHECK(y->dtype == MLC_INT8 && mlc_array_numel(y) == 24);
  mlc_array_set(y, 0, 300);
  mlc_array_set(y, 1, -3.9);
  CHECK(mlc_array_get(y, 0) == 127 && mlc_array_get(y, 1) == -3);
  mlc_array_free(y);
  mlc_array *h = mlc_array_new(MLC_FLOAT16, 1, (int64_t[]){2});
  mlc_array_set(h, 0, 0.1);
  CHECK(((uint16_t *)h->data)[0] == 0x2e66 && fabs(mlc_array_get(h, 0) - 0.1) < 1e-4);
  mlc_array_free(h);
  mlc_array_free(NULL);
}

static void test_fill_random(void) {
  mlc_dtype types[] = {MLC_FLOAT32, MLC_FLOAT16, MLC_INT32, MLC_INT8, MLC_INT64, MLC_BOOL};
  for (int t = 0; t < MLC_COUNTOF(types); t++) {
    mlc_array *x = mlc_array_new(types[t], 1, (int64_t[]){4000});
    mlc_array *y = mlc_array_new(types[t], 1, (int64_t[]){4000});
    mlc_pcg32 r1, r2;
    mlc_pcg32_seed(&r1, 99, 1);
    mlc_pcg32_seed(&r2, 99, 1);
    mlc_array_fill_random(x, &r1);
    mlc_array_fill_random(y, &r2);
    size_t bytes = 4000 * (size_t)mlc_dtype_bytes(types[t]);
    CHECK(memcmp(x->data, y->data, bytes) == 0); /* seeded: reproducible */
    double lo = 1e9, hi = -1e9, sum = 0;
    for (int i = 0; i < 4000; i++) {
      double v = mlc_array_get(x, i);
      lo = fmin(lo, v), hi = fmax(hi, v), sum += v;
      if (types[t] == MLC_INT32 || types[t] == MLC_INT8 || types[t] == MLC_INT64)
        CHECK(v == floor(v));
    }
    if (types[t] == MLC_BOOL) {
      CHECK(lo == 0 && hi == 1);
    } else if (mlc_dtype_is_float(types[t])) {
      CHECK_MSG(lo >= -1 && hi < 1 && lo < -0.99 && hi > 0.99, "%s [%g, %g]",
                mlc_dtype_name(types[t]), lo, hi);
      CHECK(fabs(sum / 4000) < 0.05);
    } else {
      CHECK_MSG(lo == -8 && hi == 7, "%s [%g, %g]", mlc_dtype_name(types[t]), lo, hi);
    }
    mlc_array_free(x);
    mlc_array_free(y);
  }
}

static void test_allclose(void) {
  mlc_array *x = mlc_array_new(MLC_FLOAT32, 1, (int64_t[]){4});
  mlc_array *y = mlc_array_new(MLC_FLOAT32, 1, (int64_t[]){4});
  float xv[] = {1.0f, 2.0f, -3.0f, 100.0f}, yv[] = {1.0f, 2.001f, -3.0f, 100.05f};
  memcpy(x->data, xv, sizeof xv);
  memcpy(y->data, yv, sizeof yv);
  double e;
  CHECK(mlc_array_allclose(x, y, 1e-3, 1e-3, &e));
  CHECK(fabs(e - ((double)100.05f - 100.0)) < 1e-9);
  CHECK(!mlc_array_allclose(x, y, 1e-6, 1e-6, &e));
  CHECK(mlc_array_allclose(x, x, 0, 0, &e) && e == 0);
  /* NaN in x where y is finite: never close; NaN in both: fine. */
  fdata(x)[2] = NAN;
  CHECK(!mlc_array_allclose(x, y, 1, 1, &e));
  fdata(y)[2] = NAN;
  CHECK(mlc_array_allclose(x, y, 1e-3, 1e-3, &e));
  fdata(x)[0] = INFINITY, fdata(y)[0] = INFINITY;
  CHECK(mlc_array_allclose(x, y, 1e-3, 1e-3, &e));
  fdata(y)[0] = 1;
  CHECK(!mlc_array_allclose(x, y, 1e-3, 1e-3, &e));
  mlc_array *z = mlc_array_new(MLC_FLOAT32, 1, (int64_t[]){5});
  CHECK(!mlc_array_allclose(x, z, 1, 1, &e));
  mlc_array_free(x);
  mlc_array_free(y);
  mlc_array_free(z);
}

/* ---- speed --------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOW_BUILD 1
#endif
#endif
#ifndef SLOW_BUILD
#define SLOW_BUILD 0
#endif

static void test_speed_matmul128(void) {
  int n = 128;
  mlc_prim_func *f = make_matmul(n, n, n);
  mlc_array *x = args_for(f, 46);
  float *want = mlc_xmalloc(sizeof(float) * (size_t)(n * n));
  ref_matmul(fdata(&x[0]), fdata(&x[1]), want, n, n, n);
  mlc_error err = {{0}};
  double best = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = mlc_now_sec();
    bool ok = mlc_interp_run(f, x, &err);
    double t = mlc_now_sec() - t0;
    CHECK_MSG(ok, "%s", err.msg);
    if (t < best) best = t;
  }
  CHECK(memcmp(want, fdata(&x[2]), sizeof(float) * (size_t)(n * n)) == 0);
  double iters = (double)n * n * n;
  printf("# interp matmul 128x128x128: %.1f ms, %.1f M iterations/s%s\n", best * 1e3,
         iters / best / 1e6, SLOW_BUILD ? " (sanitizer build)" : "");
  CHECK_MSG(best < (SLOW_BUILD ? 20.0 : 1.0), "%.3f s", best);
  mlc_free(want);
  free_args(f, x);
}

int main(void) {
  A = mlc_arena_new();
  RUN(test_vector_add);
  RUN(test_matmul);
  RUN(test_where);
  RUN(test_if_then_else);
  RUN(test_out_of_bounds);
  RUN(test_int32_wrap);
  RUN(test_floordiv_floormod);
  RUN(test_division_by_zero);
  RUN(test_compare);
  RUN(test_float16);
  RUN(test_casts);
  RUN(test_uint8);
  RUN(test_bfloat16);
  RUN(test_casts_lowp);
  RUN(test_bf16_exhaustive);
  RUN(test_intrinsics);
  RUN(test_round_ties);
  RUN(test_alloc_buffer);
  RUN(test_nested_blocks);
  RUN(test_thread_binding);
  RUN(test_control);
  RUN(test_index_forms);
  RUN(test_argument_errors);
  RUN(test_half_exhaustive);
  RUN(test_array_basics);
  RUN(test_fill_random);
  RUN(test_allclose);
  RUN(test_speed_matmul128);
  mlc_arena_free(A);
  return test_summary();
}
