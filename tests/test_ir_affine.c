/* The shared affine analysis (ir/affine.c): the syntactic quasi-affine
 * rule, linear forms, strides, fused iterator maps and TensorIR's affine
 * bindings. Fused maps are checked by evaluating the inverse at every
 * point of the iter domains. */
#include "ir/ir.h"
#include "tests/test.h"

static mlc_arena *A;

static mlc_expr *V(mlc_var *v) { return mlc_ref(A, v); }
static mlc_expr *I(int64_t k) { return mlc_int(A, k); }
static mlc_expr *add(mlc_expr *x, mlc_expr *y) { return mlc_add(A, x, y); }
static mlc_expr *sub(mlc_expr *x, mlc_expr *y) { return mlc_sub(A, x, y); }
static mlc_expr *mul(mlc_expr *x, mlc_expr *y) { return mlc_mul(A, x, y); }
static mlc_expr *fdiv(mlc_expr *x, int64_t k) { return mlc_binary(A, MLC_EXPR_FLOORDIV, x, I(k)); }
static mlc_expr *fmod_(mlc_expr *x, int64_t k) { return mlc_binary(A, MLC_EXPR_FLOORMOD, x, I(k)); }

static mlc_expr *load1(mlc_expr *ix) {
  int64_t shape[1] = {64};
  mlc_buffer *b = mlc_buffer_new(A, "B", MLC_INT32, 1, shape, "global");
  return mlc_load(A, b, &ix);
}

/* e with vars[k] = vals[k], folded to a constant. */
static int64_t eval(mlc_expr *e, int n, mlc_var **vars, const int64_t *vals) {
  mlc_expr **ve = MLC_NEW_ARRAY(A, mlc_expr *, n);
  for (int k = 0; k < n; k++) ve[k] = mlc_int_t(A, vars[k]->dtype, vals[k]);
  int64_t r = -999999;
  bool ok = mlc_expr_is_const_int(mlc_simplify_expr(A, mlc_expr_subst(A, e, n, vars, ve)), &r);
  CHECK(ok);
  return r;
}

static void test_quasi_affine_forms(void) {
  mlc_var *i = mlc_var_new(A, "i", MLC_INT32), *j = mlc_var_new(A, "j", MLC_INT32);
  CHECK(mlc_expr_is_quasi_affine(add(mul(V(i), I(4)), V(j))));
  CHECK(mlc_expr_is_quasi_affine(mul(I(3), sub(V(i), V(j)))));
  CHECK(mlc_expr_is_quasi_affine(fdiv(add(V(i), I(1)), 4)));
  CHECK(mlc_expr_is_quasi_affine(fmod_(fdiv(V(i), 2), 3)));
  CHECK(mlc_expr_is_quasi_affine(sub(I(15), V(i)))); /* reversed */
  CHECK(mlc_expr_is_quasi_affine(mul(V(i), V(i))) == false);
  CHECK(mlc_expr_is_quasi_affine(fdiv(mul(V(i), V(i)), 2)) == false);
  CHECK(mlc_expr_is_quasi_affine(fdiv(V(i), 0)) == false);
  CHECK(mlc_expr_is_quasi_affine(fdiv(V(i), -2)) == false);
  CHECK(mlc_expr_is_quasi_affine(mlc_binary(A, MLC_EXPR_FLOORMOD, V(i), V(j))) == false);
  CHECK(mlc_expr_is_quasi_affine(load1(V(i))) == false);
  /* A cast between int types (int32 and int64 loops fused) keeps the
   * form; one to float does not. */
  CHECK(mlc_expr_is_quasi_affine(mlc_cast(A, MLC_INT64, add(mul(V(i), I(4)), V(j)))));
  CHECK(mlc_expr_is_quasi_affine(mlc_cast(A, MLC_INT64, mul(V(i), V(j)))) == false);
  CHECK(mlc_expr_is_quasi_affine(mlc_cast(A, MLC_FLOAT32, V(i))) == false);
  CHECK(mlc_expr_is_quasi_affine(mlc_binary(A, MLC_EXPR_MIN, V(i), V(j))) == false);
}

static void test_linear_in(void) {
  mlc_var *i = mlc_var_new(A, "i", MLC_INT32), *j = mlc_var_new(A, "j", MLC_INT32);
  mlc_var *k = mlc_var_new(A, "k", MLC_INT32);
  mlc_var *vars[2] = {i, j};
  int64_t c[2], c0;
  CHECK(mlc_expr_linear_in(A, add(add(mul(V(i), I(2)), mul(I(3), V(j))), I(5)), 2, vars, c, &c0));
  CHECK(c[0] == 2 && c[1] == 3 && c0 == 5);
  /* Reversed, and terms that cancel after simplification. */
  CHECK(mlc_expr_linear_in(A, sub(sub(I(7), V(i)), sub(V(j), V(j))), 2, vars, c, &c0));
  CHECK(c[0] == -1 && c[1] == 0 && c0 == 7);
  CHECK(mlc_expr_linear_in(A, mul(V(i), V(i)), 2, vars, c, &c0) == false);
  CHECK(mlc_expr_linear_in(A, fdiv(V(i), 2), 2, vars, c, &c0) == false);
  CHECK(mlc_expr_linear_in(A, add(V(i), V(k)), 2, vars, c, &c0) == false);
  CHECK(mlc_expr_linear_in(A, add(V(i), load1(V(j))), 2, vars, c, &c0) == false);
  CHECK(mlc_expr_linear_in(A, mlc_float(A, MLC_FLOAT32, 1.0), 2, vars, c, &c0) == false);
}

static void test_var_stride(void) {
  mlc_var *i = mlc_var_new(A, "i", MLC_INT32), *j = mlc_var_new(A, "j", MLC_INT32);
  int64_t s;
  mlc_expr *e = add(mul(V(i), I(4)), V(j));
  CHECK(mlc_expr_var_stride(A, e, i, &s) && s == 4);
  CHECK(mlc_expr_var_stride(A, e, j, &s) && s == 1);
  CHECK(mlc_expr_var_stride(A, sub(I(15), V(i)), i, &s) && s == -1);
  /* A term free of the var does not matter, even a load. */
  CHECK(mlc_expr_var_stride(A, add(V(i), load1(V(j))), i, &s) && s == 1);
  CHECK(mlc_expr_var_stride(A, add(V(i), load1(V(j))), j, &s) == false);
  CHECK(mlc_expr_var_stride(A, mul(V(i), V(i)), i, &s) == false);
  CHECK(mlc_expr_var_stride(A, fdiv(V(i), 2), i, &s) == false);
}

static mlc_iter_var iter(const char *name, int64_t min, int64_t ext) {
  mlc_iter_var it = {mlc_var_new(A, name, MLC_INT32), {I(min), I(ext)}, MLC_ITER_SPATIAL};
  return it;
}

/* Recovers every iter of a 2-iter fused map from e's value, as the
 * documented inverse says, at every point of the domains. */
static void check_inverse(mlc_expr *e, mlc_iter_var *its, const mlc_fused_map *fm) {
  mlc_var *vars[2] = {its[0].var, its[1].var};
  int64_t m0, e0, m1, e1;
  mlc_expr_is_const_int(its[0].dom.min, &m0);
  mlc_expr_is_const_int(its[0].dom.extent, &e0);
  mlc_expr_is_const_int(its[1].dom.min, &m1);
  mlc_expr_is_const_int(its[1].dom.extent, &e1);
  for (int64_t x = m0; x < m0 + e0; x++)
    for (int64_t y = m1; y < m1 + e1; y++) {
      int64_t vals[2] = {x, y};
      int64_t v = eval(e, 2, vars, vals), rem = v - fm->c0, f;
      CHECK(rem % (fm->sign * fm->g) == 0);
      f = rem / (fm->sign * fm->g);
      CHECK_MSG(f >= 0 && f < fm->span / fm->g, "F = %lld", (long long)f);
      for (int i = 0; i < fm->m; i++) {
        int64_t st = (fm->coeff[i] < 0 ? -fm->coeff[i] : fm->coeff[i]) / fm->g;
        int64_t q = f / st;
        if (i + 1 < fm->m) q %= fm->exts[i];
        CHECK_MSG(q + fm->mins[i] == vals[fm->order[i]], "iter %d at (%lld, %lld)", fm->order[i],
                  (long long)x, (long long)y);
      }
    }
}

static void test_fused_map(void) {
  mlc_iter_var its[2] = {iter("vi", 0, 4), iter("vj", 0, 2)};
  mlc_expr *vi = V(its[0].var), *vj = V(its[1].var);
  mlc_fused_map fm;
  mlc_expr *e = add(add(mul(I(2), vi), vj), I(3));
  CHECK(mlc_expr_fused_map(A, e, 2, its, &fm));
  CHECK(fm.m == 2 && fm.order[0] == 1 && fm.order[1] == 0 && fm.sign == 1 && fm.g == 1);
  CHECK(fm.c0 == 3 && fm.span == 8);
  check_inverse(e, its, &fm);
  /* Reversed. */
  e = sub(I(7), add(mul(I(2), vi), vj));
  CHECK(mlc_expr_fused_map(A, e, 2, its, &fm));
  CHECK(fm.sign == -1 && fm.g == 1 && fm.c0 == 7);
  check_inverse(e, its, &fm);
  /* A common factor, iters not starting at 0. */
  mlc_iter_var sh[2] = {iter("vi", 1, 3), iter("vj", 2, 2)};
  e = add(mul(I(6), V(sh[0].var)), mul(I(3), V(sh[1].var)));
  CHECK(mlc_expr_fused_map(A, e, 2, sh, &fm));
  CHECK(fm.g == 3 && fm.span == 18 && fm.c0 == 12);
  check_inverse(e, sh, &fm);
  /* Constant: no iters. */
  CHECK(mlc_expr_fused_map(A, I(5), 2, its, &fm) && fm.m == 0);
  /* Not mixed radix (3 * vi + vj skips values), not linear, not iters. */
  CHECK(mlc_expr_fused_map(A, add(mul(I(3), vi), vj), 2, its, &fm) == false);
  CHECK(mlc_expr_fused_map(A, add(vi, vj), 2, its, &fm) == false);
  CHECK(mlc_expr_fused_map(A, sub(mul(I(2), vi), vj), 2, its, &fm) == false);
  CHECK(mlc_expr_fused_map(A, mul(vi, vi), 2, its, &fm) == false);
  CHECK(mlc_expr_fused_map(A, fdiv(vi, 2), 2, its, &fm) == false);
  CHECK(mlc_expr_fused_map(A, load1(vi), 2, its, &fm) == false);
  /* A symbolic domain (a size var's) only as the most significant iter:
   * vk * 4 + vi fuses, vi * 1000 + vk (vk's span unknown) does not. */
  mlc_iter_var sym[2] = {iter("vk", 0, 4), iter("vi", 0, 4)};
  sym[0].dom.extent = V(mlc_var_new(A, "n", MLC_INT32));
  CHECK(mlc_expr_fused_map(A, V(sym[0].var), 1, sym, &fm) && fm.m == 1);
  CHECK(mlc_expr_fused_map(A, add(mul(V(sym[0].var), I(4)), V(sym[1].var)), 2, sym, &fm) &&
        fm.m == 2 && fm.order[1] == 0);
  CHECK(mlc_expr_fused_map(A, add(mul(V(sym[1].var), I(1000)), V(sym[0].var)), 2, sym, &fm) == false);
}

/* Loops i in [0, 16), j in [0, 8) (innermost last). */
static mlc_stmt *L[2];

static bool bindings(int n, mlc_expr **vals, mlc_expr *pred, int *bad, int *other) {
  mlc_expr *conj[1] = {pred};
  return mlc_affine_bindings(2, L, pred ? 1 : 0, conj, n, vals, bad, other);
}

static void test_affine_bindings_accept(void) {
  mlc_expr *i = V(L[0]->loop.var), *j = V(L[1]->loop.var);
  mlc_expr *fused = add(mul(i, I(8)), j);
  int bad, other;
  mlc_expr *plain[2] = {i, j};
  CHECK(bindings(2, plain, NULL, &bad, &other));
  mlc_expr *split[2] = {fdiv(fused, 4), fmod_(fused, 4)};
  CHECK(bindings(2, split, NULL, &bad, &other));
  mlc_expr *digits[3] = {fdiv(i, 4), fmod_(i, 4), add(j, I(3))};
  CHECK(bindings(3, digits, NULL, &bad, &other));
  mlc_expr *cast[1] = {mlc_cast(A, MLC_INT64, fused)};
  CHECK(bindings(1, cast, NULL, &bad, &other));
  /* A value the loops do not change, a constant. */
  mlc_expr *sym[2] = {V(mlc_var_new(A, "n", MLC_INT32)), I(2)};
  CHECK(bindings(2, sym, NULL, &bad, &other));
  /* An uneven split: the predicate narrows the fused source. */
  mlc_expr *pred = mlc_binary(A, MLC_EXPR_LT, fused, I(100));
  mlc_expr *uneven[1] = {fused};
  CHECK(bindings(1, uneven, pred, &bad, &other));
}

static void test_affine_bindings_refuse(void) {
  mlc_expr *i = V(L[0]->loop.var), *j = V(L[1]->loop.var);
  int bad, other;
  mlc_expr *scaled[2] = {j, mul(i, I(2))}; /* not dense */
  CHECK(!bindings(2, scaled, NULL, &bad, &other) && bad == 1 && other == -1);
  mlc_expr *square[1] = {fdiv(mul(i, i), 2)};
  CHECK(!bindings(1, square, NULL, &bad, &other) && bad == 0 && other == -1);
  mlc_expr *rev[1] = {sub(I(15), i)};
  CHECK(!bindings(1, rev, NULL, &bad, &other) && bad == 0);
  mlc_expr *ld[1] = {load1(i)};
  CHECK(!bindings(1, ld, NULL, &bad, &other) && bad == 0);
  mlc_expr *same[3] = {j, i, i};
  CHECK(!bindings(3, same, NULL, &bad, &other) && bad == 1 && other == 2);
  mlc_expr *overlap[2] = {fdiv(i, 2), fmod_(i, 4)};
  CHECK(!bindings(2, overlap, NULL, &bad, &other) && bad == 0 && other == 1);
  mlc_expr *skip[1] = {add(mul(i, I(16)), j)}; /* a gap between j's range and i's stride */
  CHECK(!bindings(1, skip, NULL, &bad, &other) && bad == 0);
}

int main(void) {
  A = mlc_arena_new();
  L[0] = mlc_for_new(A, mlc_var_new(A, "i", MLC_INT32), I(0), I(16), MLC_FOR_SERIAL, NULL);
  L[1] = mlc_for_new(A, mlc_var_new(A, "j", MLC_INT32), I(0), I(8), MLC_FOR_SERIAL, NULL);
  RUN(test_quasi_affine_forms);
  RUN(test_linear_in);
  RUN(test_var_stride);
  RUN(test_fused_map);
  RUN(test_affine_bindings_accept);
  RUN(test_affine_bindings_refuse);
  mlc_arena_free(A);
  return test_summary();
}
