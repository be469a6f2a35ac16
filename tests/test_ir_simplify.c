/* The arithmetic simplifier (ir/simplify.c): constant folding per kind and
 * dtype, the affine canonical form, floordiv/floormod with var ranges,
 * interval bounds, provable comparisons and min/max, const_diff; and a
 * randomized check against a tiny evaluator written here. */
#include "ir/ir.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a test-local printer (Python precedence), independent of print.c --- */

static int prec(const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_ADD: case MLC_EXPR_SUB: return 11;
  case MLC_EXPR_MUL: case MLC_EXPR_DIV: case MLC_EXPR_FLOORDIV: case MLC_EXPR_FLOORMOD: return 12;
  case MLC_EXPR_EQ: case MLC_EXPR_NE: case MLC_EXPR_LT: case MLC_EXPR_LE: case MLC_EXPR_GT:
  case MLC_EXPR_GE: return 6;
  case MLC_EXPR_AND: return 4;
  case MLC_EXPR_OR: return 3;
  case MLC_EXPR_NOT: return 5;
  case MLC_EXPR_INT_IMM: return e->int_val < 0 ? 13 : 100;
  default: return 100;
  }
}

static const char *sym(mlc_expr_kind k) {
  switch (k) {
  case MLC_EXPR_ADD: return "+";
  case MLC_EXPR_SUB: return "-";
  case MLC_EXPR_MUL: return "*";
  case MLC_EXPR_DIV: return "/";
  case MLC_EXPR_FLOORDIV: return "//";
  case MLC_EXPR_FLOORMOD: return "%";
  case MLC_EXPR_EQ: return "==";
  case MLC_EXPR_NE: return "!=";
  case MLC_EXPR_LT: return "<";
  case MLC_EXPR_LE: return "<=";
  case MLC_EXPR_GT: return ">";
  case MLC_EXPR_GE: return ">=";
  case MLC_EXPR_AND: return "and";
  case MLC_EXPR_OR: return "or";
  default: return NULL;
  }
}

static void show_to(mlc_str *o, const mlc_expr *e) {
  const char *op = sym(e->kind);
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
  case MLC_EXPR_INT_IMM:
    if (e->dtype == MLC_BOOL) mlc_str_puts(o, e->int_val ? "True" : "False");
    else mlc_str_printf(o, "%lld", (long long)e->int_val);
    return;
  case MLC_EXPR_FLOAT_IMM: mlc_str_printf(o, "%.9g", e->float_val); return;
  case MLC_EXPR_VAR: mlc_str_puts(o, e->var->name); return;
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    mlc_str_puts(o, e->kind == MLC_EXPR_MIN ? "T.min(" : "T.max(");
    show_to(o, e->bin.a);
    mlc_str_puts(o, ", ");
    show_to(o, e->bin.b);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_NOT:
    mlc_str_puts(o, "not (");
    show_to(o, e->bin.a);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    mlc_str_puts(o, e->kind == MLC_EXPR_SELECT ? "T.Select(" : "T.if_then_else(");
    show_to(o, e->sel.cond);
    mlc_str_puts(o, ", ");
    show_to(o, e->sel.t);
    mlc_str_puts(o, ", ");
    show_to(o, e->sel.f);
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
  case MLC_EXPR_CAST:
    mlc_str_printf(o, "T.Cast(\"%s\", ", mlc_dtype_name(e->dtype));
    show_to(o, e->cast.value);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_CALL:
    mlc_str_printf(o, "T.%s(", mlc_intrin_name(e->call.op));
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) {
      if (i) mlc_str_puts(o, ", ");
      show_to(o, e->call.args[i]);
    }
    mlc_str_puts(o, ")");
    return;
  default:
    mlc_str_puts(o, "?");
  }
}

/* Printed form in a ring of static buffers (several per CHECK line). */
static const char *show(const mlc_expr *e) {
  static char ring[8][512];
  static int k;
  mlc_str o = {0};
  show_to(&o, e);
  char *dst = ring[k++ % 8];
  snprintf(dst, 512, "%s", mlc_str_cstr(&o));
  mlc_str_free(&o);
  return dst;
}

/* ---- shorthands ---------------------------------------------------------- */

static mlc_arena *A;
static mlc_expr *I(int64_t v) { return mlc_int(A, v); }
static mlc_expr *I64(int64_t v) { return mlc_int_t(A, MLC_INT64, v); }
static mlc_expr *F(double v) { return mlc_float(A, MLC_FLOAT32, v); }
static mlc_expr *add(mlc_expr *x, mlc_expr *y) { return mlc_add(A, x, y); }
static mlc_expr *sub(mlc_expr *x, mlc_expr *y) { return mlc_sub(A, x, y); }
static mlc_expr *mul(mlc_expr *x, mlc_expr *y) { return mlc_mul(A, x, y); }
static mlc_expr *bin(mlc_expr_kind k, mlc_expr *x, mlc_expr *y) { return mlc_binary(A, k, x, y); }
static mlc_expr *fdv(mlc_expr *x, mlc_expr *y) { return bin(MLC_EXPR_FLOORDIV, x, y); }
static mlc_expr *fmod_(mlc_expr *x, mlc_expr *y) { return bin(MLC_EXPR_FLOORMOD, x, y); }
static mlc_expr *V(const char *name) { return mlc_ref(A, mlc_var_new(A, name, MLC_INT32)); }
static mlc_expr *S(mlc_expr *e) { return mlc_simplify_expr(A, e); }

static bool is_int_const(const mlc_expr *e, mlc_dtype t, int64_t v) {
  return e->kind == MLC_EXPR_INT_IMM && e->dtype == t && e->int_val == v;
}

#define CHECK_SHOW(e, want) CHECK_STREQ(show(e), want)

/* ---- constant folding ----------------------------------------------------- */

static void test_fold_int_kinds(void) {
  A = mlc_arena_new();
  struct { mlc_expr_kind k; int64_t x, y, want; } cases[] = {
      {MLC_EXPR_ADD, 7, -9, -2},       {MLC_EXPR_SUB, 7, -9, 16},
      {MLC_EXPR_MUL, -7, 6, -42},      {MLC_EXPR_DIV, -7, 2, -3},
      {MLC_EXPR_DIV, 7, -2, -3},       {MLC_EXPR_FLOORDIV, -7, 2, -4},
      {MLC_EXPR_FLOORDIV, 7, -2, -4},  {MLC_EXPR_FLOORDIV, -8, 2, -4},
      {MLC_EXPR_FLOORMOD, -7, 2, 1},   {MLC_EXPR_FLOORMOD, 7, -2, -1},
      {MLC_EXPR_FLOORMOD, -8, 4, 0},   {MLC_EXPR_MIN, -3, 2, -3},
      {MLC_EXPR_MAX, -3, 2, 2},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    mlc_expr *r = S(bin(cases[i].k, I(cases[i].x), I(cases[i].y)));
    CHECK_MSG(is_int_const(r, MLC_INT32, cases[i].want), "%s(%lld, %lld) -> %s",
              mlc_expr_kind_name(cases[i].k), (long long)cases[i].x, (long long)cases[i].y,
              show(r));
  }
  struct { mlc_expr_kind k; int64_t x, y, want; } cmps[] = {
      {MLC_EXPR_EQ, 3, 3, 1}, {MLC_EXPR_NE, 3, 3, 0}, {MLC_EXPR_LT, 2, 3, 1},
      {MLC_EXPR_LE, 4, 3, 0}, {MLC_EXPR_GT, -1, -2, 1}, {MLC_EXPR_GE, -2, -1, 0},
  };
  for (int i = 0; i < MLC_COUNTOF(cmps); i++) {
    mlc_expr *r = S(bin(cmps[i].k, I(cmps[i].x), I(cmps[i].y)));
    CHECK_MSG(is_int_const(r, MLC_BOOL, cmps[i].want), "%s -> %s", mlc_expr_kind_name(cmps[i].k),
              show(r));
  }
  CHECK(is_int_const(S(bin(MLC_EXPR_AND, mlc_bool(A, 1), mlc_bool(A, 0))), MLC_BOOL, 0));
  CHECK(is_int_const(S(bin(MLC_EXPR_OR, mlc_bool(A, 1), mlc_bool(A, 0))), MLC_BOOL, 1));
  CHECK(is_int_const(S(mlc_not(A, mlc_bool(A, 0))), MLC_BOOL, 1));
  /* int64 keeps its dtype. */
  CHECK(is_int_const(S(mul(I64(1) , I64(1LL << 40))), MLC_INT64, 1LL << 40));
  mlc_arena_free(A);
}

static void test_fold_refuses_overflow_and_ub(void) {
  A = mlc_arena_new();
  /* int32 2147483647 + 1 would wrap: left alone. In int64 it folds. */
  mlc_expr *r = S(add(I(INT32_MAX), I(1)));
  CHECK_MSG(r->kind == MLC_EXPR_ADD, "%s", show(r));
  CHECK(is_int_const(S(add(I64(INT32_MAX), I64(1))), MLC_INT64, (int64_t)INT32_MAX + 1));
  /* int64 overflow: never folded (and no C UB: UBSan build checks it). */
  r = S(mul(I64(INT64_MAX), I64(2)));
  CHECK_MSG(r->kind == MLC_EXPR_MUL, "%s", show(r));
  r = S(bin(MLC_EXPR_FLOORDIV, I64(INT64_MIN), I64(-1)));
  CHECK_MSG(r->kind == MLC_EXPR_FLOORDIV, "%s", show(r));
  r = S(bin(MLC_EXPR_DIV, I64(INT64_MIN), I64(-1)));
  CHECK_MSG(r->kind == MLC_EXPR_DIV, "%s", show(r));
  /* int8: 100 + 100 does not fit. */
  mlc_expr *a8 = mlc_int_t(A, MLC_INT8, 100);
  r = S(add(a8, mlc_int_t(A, MLC_INT8, 100)));
  CHECK_MSG(r->kind == MLC_EXPR_ADD && r->dtype == MLC_INT8, "%s", show(r));
  CHECK(is_int_const(S(sub(a8, mlc_int_t(A, MLC_INT8, 28))), MLC_INT8, 72));
  /* Division by zero stays. */
  CHECK(S(fdv(I(1), I(0)))->kind == MLC_EXPR_FLOORDIV);
  CHECK(S(fmod_(I(1), I(0)))->kind == MLC_EXPR_FLOORMOD);
  CHECK(S(bin(MLC_EXPR_DIV, I(1), I(0)))->kind == MLC_EXPR_DIV);
  /* An affine form whose constant leaves int32: structure kept. */
  mlc_expr *x = V("x");
  r = S(add(add(x, I(INT32_MAX)), I(INT32_MAX)));
  CHECK_MSG(r->kind == MLC_EXPR_ADD, "%s", show(r));
  mlc_arena_free(A);
}

static void test_fold_float32(void) {
  A = mlc_arena_new();
  float a = 0.1f, b = 0.2f, c = a + b;
  mlc_expr *r = S(add(F(0.1), F(0.2)));
  CHECK(r->kind == MLC_EXPR_FLOAT_IMM && r->dtype == MLC_FLOAT32);
  CHECK_MSG(r->float_val == (double)c, "%.17g vs %.17g", r->float_val, (double)c);
  /* Not the double sum rounded once (which would be the same here), but
   * float arithmetic: 1e8f + 1 == 1e8f. */
  r = S(add(F(1e8), F(1)));
  CHECK(r->kind == MLC_EXPR_FLOAT_IMM && r->float_val == 1e8);
  r = S(bin(MLC_EXPR_DIV, F(1), F(3)));
  CHECK(r->float_val == (double)(1.0f / 3.0f));
  r = S(bin(MLC_EXPR_LT, F(1), F(2)));
  CHECK(is_int_const(r, MLC_BOOL, 1));
  r = S(bin(MLC_EXPR_MAX, F(-1), F(2)));
  CHECK(r->kind == MLC_EXPR_FLOAT_IMM && r->float_val == 2);
  /* Never reassociated: (x + 1) + 2 keeps both additions; x + 0 stays. */
  mlc_expr *x = mlc_ref(A, mlc_var_new(A, "xf", MLC_FLOAT32));
  r = S(add(add(x, F(1)), F(2)));
  CHECK_SHOW(r, "xf + 1 + 2");
  CHECK_SHOW(S(add(x, F(0))), "xf + 0");
  /* A constant subtree inside a float expression folds. */
  CHECK_SHOW(S(mul(x, add(F(1), F(2)))), "xf * 3");
  /* float16: not folded (its rounding is the interpreter's business). */
  r = S(add(mlc_float(A, MLC_FLOAT16, 1), mlc_float(A, MLC_FLOAT16, 2)));
  CHECK(r->kind == MLC_EXPR_ADD);
  /* Only exact intrinsics fold. */
  mlc_expr *args[1] = {F(-2.5)};
  CHECK(S(mlc_call(A, MLC_INTRIN_ABS, args))->float_val == 2.5);
  CHECK(S(mlc_call(A, MLC_INTRIN_FLOOR, args))->float_val == -3);
  CHECK(S(mlc_call(A, MLC_INTRIN_EXP, args))->kind == MLC_EXPR_CALL);
  mlc_arena_free(A);
}

static void test_fold_casts(void) {
  A = mlc_arena_new();
  CHECK(is_int_const(S(mlc_cast(A, MLC_INT8, I(300))), MLC_INT8, 44));
  CHECK(is_int_const(S(mlc_cast(A, MLC_INT8, I(-129))), MLC_INT8, 127));
  CHECK(is_int_const(S(mlc_cast(A, MLC_INT64, I(-5))), MLC_INT64, -5));
  CHECK(is_int_const(S(mlc_cast(A, MLC_INT32, F(2.7))), MLC_INT32, 2));
  CHECK(is_int_const(S(mlc_cast(A, MLC_INT32, F(-2.7))), MLC_INT32, -2));
  CHECK(S(mlc_cast(A, MLC_INT32, F(3e9)))->kind == MLC_EXPR_CAST); /* out of range */
  CHECK(is_int_const(S(mlc_cast(A, MLC_BOOL, I(7))), MLC_BOOL, 1));
  mlc_expr *r = S(mlc_cast(A, MLC_FLOAT32, I(16777217)));
  CHECK(r->kind == MLC_EXPR_FLOAT_IMM && r->float_val == 16777216.0);
  mlc_expr *x = V("x");
  CHECK(S(mlc_cast(A, MLC_INT32, x)) == x); /* a cast to its own dtype drops */
  mlc_arena_free(A);
}

/* ---- affine canonical form ------------------------------------------------ */

static void test_affine(void) {
  A = mlc_arena_new();
  mlc_expr *i0 = V("i_0"), *j = V("j"), *i = V("i"), *vi0 = V("vi0"), *k = V("k");
  CHECK_SHOW(S(sub(add(mul(i0, I(4)), j), mul(i0, I(4)))), "j");
  CHECK_SHOW(S(sub(add(mul(vi0, I(16)), I(16)), mul(vi0, I(16)))), "16");
  CHECK_SHOW(S(sub(add(add(mul(i, I(128)), j), I(1)), I(1))), "i * 128 + j");
  CHECK_SHOW(S(sub(mul(add(i, I(1)), I(4)), I(4))), "i * 4");
  CHECK_SHOW(S(mul(I(2), i)), "i * 2");
  CHECK_SHOW(S(mul(mul(i, I(4)), I(2))), "i * 8");
  CHECK_SHOW(S(sub(i, i)), "0");
  CHECK_SHOW(S(sub(I(15), i)), "15 - i");
  CHECK_SHOW(S(sub(I(0), i)), "i * -1");
  CHECK_SHOW(S(sub(sub(j, i), I(3))), "j - i - 3");
  /* First appearance decides the order, even if a term cancels first. */
  CHECK_SHOW(S(add(add(sub(k, k), j), mul(k, I(3)))), "k * 3 + j");
  CHECK_SHOW(S(add(mul(j, I(0)), i)), "i");
  CHECK_SHOW(S(add(I(3), add(j, I(-5)))), "j - 2");
  /* Non-affine atoms combine like vars. */
  mlc_expr *m = bin(MLC_EXPR_MIN, i, j), *m2 = bin(MLC_EXPR_MIN, i, j);
  CHECK_SHOW(S(sub(add(m, I(1)), m2)), "1");
  /* A product of two non-constants is an atom, its factors simplified. */
  CHECK_SHOW(S(mul(add(i, sub(j, j)), add(k, I(0)))), "i * k");
  /* Inside non-affine nodes too. */
  CHECK_SHOW(S(bin(MLC_EXPR_MAX, add(i, sub(j, j)), k)), "T.max(i, k)");
  /* fuse then split by the same factor: floordiv(f, 8) * 8 + floormod(f, 8) -> f */
  mlc_expr *f = V("f");
  CHECK_SHOW(S(add(mul(fdv(f, I(8)), I(8)), fmod_(f, I(8)))), "f");
  CHECK_SHOW(S(add(fmod_(f, I(8)), mul(fdv(f, I(8)), I(8)))), "f");
  mlc_arena_free(A);
}

/* ---- floordiv / floormod ---------------------------------------------------- */

static void test_divmod_rules(void) {
  A = mlc_arena_new();
  mlc_simplifier *s = mlc_simplifier_new(A);
  mlc_expr *i = V("i"), *j = V("j"), *x = V("x"), *y = V("y");
  mlc_simplifier_bind(s, i->var, 0, 8);
  mlc_simplifier_bind(s, j->var, 0, 16);
  mlc_expr *ij = add(mul(i, I(16)), j);
  CHECK_SHOW(mlc_simplify(s, fdv(ij, I(16))), "i");
  CHECK_SHOW(mlc_simplify(s, fmod_(ij, I(16))), "j");
  CHECK_SHOW(mlc_simplify(s, fdv(add(ij, I(32)), I(16))), "i + 2");
  /* j + 3 may reach 18: the remainder stays symbolic. */
  CHECK_SHOW(mlc_simplify(s, fmod_(add(ij, I(3)), I(16))), "(j + 3) % 16");
  CHECK_SHOW(mlc_simplify(s, fdv(add(ij, I(3)), I(16))), "i + (j + 3) // 16");
  /* i*4 + j//4 with j//4 in [0, 4): */
  CHECK_SHOW(mlc_simplify(s, fdv(add(mul(i, I(4)), fdv(j, I(4))), I(4))), "i");
  CHECK_SHOW(mlc_simplify(s, fmod_(add(mul(i, I(4)), fdv(j, I(4))), I(4))), "j // 4");
  /* The whole numerator in [0, c): */
  CHECK_SHOW(mlc_simplify(s, fdv(j, I(16))), "0");
  CHECK_SHOW(mlc_simplify(s, fmod_(j, I(16))), "j");
  CHECK_SHOW(mlc_simplify(s, fdv(mul(i, I(2)), I(16))), "0");
  /* Negative ranges floor correctly: j - 16 in [-16, 0). */
  CHECK_SHOW(mlc_simplify(s, fdv(sub(j, I(16)), I(16))), "-1");
  CHECK_SHOW(mlc_simplify(s, fmod_(sub(j, I(16)), I(16))), "j");
  /* Unbounded x: divisible terms still come out. */
  CHECK_SHOW(mlc_simplify(s, fdv(add(mul(x, I(16)), y), I(16))), "x + y // 16");
  CHECK_SHOW(mlc_simplify(s, fmod_(add(mul(x, I(16)), y), I(16))), "y % 16");
  CHECK_SHOW(mlc_simplify(s, fdv(y, I(16))), "y // 16");
  /* Trivial divisors, nested floordiv and floormod. */
  CHECK_SHOW(mlc_simplify(s, fdv(x, I(1))), "x");
  CHECK_SHOW(mlc_simplify(s, fmod_(x, I(1))), "0");
  CHECK_SHOW(mlc_simplify(s, fdv(fdv(x, I(4)), I(8))), "x // 32");
  CHECK_SHOW(mlc_simplify(s, fmod_(fmod_(x, I(32)), I(8))), "x % 8");
  CHECK_SHOW(mlc_simplify(s, fdv(fmod_(x, I(16)), I(16))), "0");
  CHECK_SHOW(mlc_simplify(s, fmod_(fmod_(x, I(16)), I(16))), "x % 16");
  /* Divisor not a positive constant: untouched (children simplified). */
  CHECK_SHOW(mlc_simplify(s, fdv(add(x, I(0)), y)), "x // y");
  CHECK_SHOW(mlc_simplify(s, fdv(x, I(-4))), "x // -4");
  /* Truncating division by a positive constant of a non-negative value. */
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_DIV, ij, I(16))), "i");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_DIV, x, I(1))), "x");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_DIV, x, I(2))), "x / 2");
  mlc_arena_free(A);
}

/* ---- bounds ------------------------------------------------------------------ */

static void check_bounds(mlc_simplifier *s, mlc_expr *e, bool ok, int64_t lo, int64_t hi) {
  int64_t l = 0, h = 0;
  bool got = mlc_simplifier_bounds(s, e, &l, &h);
  CHECK_MSG(got == ok && (!ok || (l == lo && h == hi)), "bounds(%s) = %d [%lld, %lld], want %d [%lld, %lld]",
            show(e), got, (long long)l, (long long)h, ok, (long long)lo, (long long)hi);
}

static void test_bounds(void) {
  A = mlc_arena_new();
  mlc_simplifier *s = mlc_simplifier_new(A);
  mlc_expr *i = V("i"), *j = V("j"), *x = V("x"), *n = V("n");
  mlc_simplifier_bind(s, i->var, 0, 8);
  mlc_simplifier_bind(s, j->var, 0, 16);
  mlc_simplifier_bind(s, n->var, -4, 3); /* [-4, -2] */
  check_bounds(s, I(5), true, 5, 5);
  check_bounds(s, i, true, 0, 7);
  check_bounds(s, add(mul(i, I(16)), j), true, 0, 127);
  check_bounds(s, sub(i, j), true, -15, 7);
  check_bounds(s, sub(i, i), true, 0, 0); /* like terms cancel */
  check_bounds(s, mul(i, n), true, -28, 0);
  check_bounds(s, mul(n, I(-3)), true, 6, 12);
  check_bounds(s, fdv(add(mul(i, I(16)), j), I(4)), true, 0, 31);
  check_bounds(s, fdv(n, I(3)), true, -2, -1);
  check_bounds(s, fdv(j, n), true, -8, 0);
  check_bounds(s, fmod_(n, I(3)), true, 0, 2);   /* -4..-2 spans two buckets */
  check_bounds(s, fmod_(j, I(32)), true, 0, 15);
  check_bounds(s, fmod_(x, I(16)), true, 0, 15); /* even for a free x */
  check_bounds(s, fmod_(add(j, I(16)), I(16)), true, 0, 15);
  check_bounds(s, bin(MLC_EXPR_MIN, i, I(4)), true, 0, 4);
  check_bounds(s, bin(MLC_EXPR_MAX, n, I(-3)), true, -3, -2);
  check_bounds(s, bin(MLC_EXPR_DIV, n, I(3)), true, -1, 0);
  check_bounds(s, bin(MLC_EXPR_LT, i, j), true, 0, 1);
  check_bounds(s, mlc_select(A, bin(MLC_EXPR_LT, i, j), i, n), true, -4, 7);
  check_bounds(s, x, false, 0, 0);
  check_bounds(s, add(i, x), false, 0, 0);
  check_bounds(s, bin(MLC_EXPR_MIN, x, I(4)), false, 0, 0);
  check_bounds(s, F(1), false, 0, 0);
  check_bounds(s, mlc_cast(A, MLC_INT8, x), true, -128, 127);
  check_bounds(s, mlc_cast(A, MLC_INT64, i), true, 0, 7);
  /* Overflow of the interval arithmetic: unbounded, not wrong. */
  mlc_var *big = mlc_var_new(A, "big", MLC_INT64);
  mlc_simplifier_bind(s, big, 0, INT64_MAX);
  check_bounds(s, mul(mlc_ref(A, big), I64(4)), false, 0, 0);
  /* Rebinding replaces the range, whether or not others came since; an
   * empty range frees the var (every binding of it), leaving the others. */
  mlc_simplifier_bind(s, i->var, 2, 2);
  check_bounds(s, i, true, 2, 3);
  mlc_simplifier_bind(s, j->var, 1, 1);
  mlc_simplifier_bind(s, i->var, 5, 1);
  check_bounds(s, i, true, 5, 5);
  mlc_simplifier_bind(s, i->var, 0, 0);
  check_bounds(s, i, false, 0, 0);
  check_bounds(s, j, true, 1, 1);
  check_bounds(s, n, true, -4, -2);
  mlc_simplifier_bind(s, i->var, 0, 3);
  check_bounds(s, i, true, 0, 2);
  mlc_arena_free(A);
}

static void test_compare_and_minmax(void) {
  A = mlc_arena_new();
  mlc_simplifier *s = mlc_simplifier_new(A);
  mlc_expr *i = V("i"), *j = V("j"), *x = V("x");
  mlc_simplifier_bind(s, i->var, 0, 8);
  mlc_simplifier_bind(s, j->var, 0, 16);
  mlc_expr *ij = add(mul(i, I(16)), j);
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_LT, ij, I(128))), "True");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_LT, ij, I(127))), "i * 16 + j < 127");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_GE, i, I(8))), "False");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_GE, i, I(0))), "True");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_LE, i, sub(add(i, I(1)), I(1)))), "True");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_GT, x, x)), "False");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_EQ, add(x, I(1)), add(I(1), x))), "True");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_NE, x, add(x, I(2)))), "True");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_LT, x, I(3))), "x < 3");
  /* T.where predicates: (i*16 + j < 128) and (x < 3) -> x < 3 */
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_AND, bin(MLC_EXPR_LT, ij, I(128)), bin(MLC_EXPR_LT, x, I(3)))),
             "x < 3");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_AND, bin(MLC_EXPR_LT, x, I(3)), bin(MLC_EXPR_GE, i, I(8)))),
             "False");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_OR, bin(MLC_EXPR_LT, x, I(3)), bin(MLC_EXPR_LT, i, I(8)))),
             "True");
  CHECK_SHOW(mlc_simplify(s, mlc_not(A, bin(MLC_EXPR_LT, i, I(8)))), "False");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_MIN, i, I(8))), "i");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_MIN, i, I(5))), "T.min(i, 5)");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_MAX, ij, I(0))), "i * 16 + j");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_MIN, add(mul(i, I(16)), I(16)), I(128))), "i * 16 + 16");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_MAX, x, add(x, I(1)))), "x + 1");
  CHECK_SHOW(mlc_simplify(s, bin(MLC_EXPR_MIN, x, x)), "x");
  CHECK_SHOW(mlc_simplify(s, mlc_select(A, bin(MLC_EXPR_LT, i, I(8)), x, j)), "x");
  CHECK_SHOW(mlc_simplify(s, mlc_if_then_else(A, bin(MLC_EXPR_LT, i, I(0)), x, j)), "j");
  CHECK_SHOW(mlc_simplify(s, mlc_select(A, bin(MLC_EXPR_LT, x, I(0)), x, j)), "T.Select(x < 0, x, j)");
  /* A load's indices are simplified; the load itself stays. */
  int64_t shape[1] = {128};
  mlc_buffer *B = mlc_buffer_new(A, "B", MLC_FLOAT32, 1, shape, "global");
  mlc_expr *idx[1] = {fdv(ij, I(16))};
  CHECK_SHOW(mlc_simplify(s, mlc_load(A, B, idx)), "B[i]");
  mlc_arena_free(A);
}

static void test_const_diff(void) {
  A = mlc_arena_new();
  mlc_expr *vi0 = V("vi0"), *x = V("x"), *y = V("y"), *i = V("i");
  int64_t d = 0;
  CHECK(mlc_expr_const_diff(A, add(mul(vi0, I(16)), I(16)), mul(vi0, I(16)), &d) && d == 16);
  CHECK(mlc_expr_const_diff(A, mul(vi0, I(16)), add(mul(vi0, I(16)), I(16)), &d) && d == -16);
  CHECK(mlc_expr_const_diff(A, x, x, &d) && d == 0);
  CHECK(!mlc_expr_const_diff(A, x, y, &d));
  CHECK(!mlc_expr_const_diff(A, mul(x, I(2)), x, &d));
  mlc_expr *m = bin(MLC_EXPR_MIN, i, I(4));
  CHECK(mlc_expr_const_diff(A, add(m, I(1)), bin(MLC_EXPR_MIN, i, I(4)), &d) && d == 1);
  /* Needs simplification inside an atom: (x + 0) // 4 vs x // 4. */
  CHECK(mlc_expr_const_diff(A, fdv(add(x, I(0)), I(4)), fdv(x, I(4)), &d) && d == 0);
  CHECK(mlc_expr_const_diff(A, I(7), I64(3), &d) && d == 4);
  CHECK(!mlc_expr_const_diff(A, F(1), F(1), &d));
  mlc_arena_free(A);
}

/* ---- randomized: simplified == original on random points ---------------- */

enum { NVARS = 4 };
static mlc_var *rvars[NVARS];
static int64_t rlo[NVARS], rext[NVARS];

typedef struct { bool ok; int64_t v; } val;

static val ev(const mlc_expr *e, const int64_t *pt) {
  val a, b, c, r = {true, 0};
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: r.v = e->int_val; return r;
  case MLC_EXPR_VAR:
    for (int i = 0; i < NVARS; i++)
      if (rvars[i] == e->var) { r.v = pt[i]; return r; }
    r.ok = false;
    return r;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    c = ev(e->sel.cond, pt);
    if (!c.ok) return c;
    if (e->kind == MLC_EXPR_IF_THEN_ELSE) return ev(c.v ? e->sel.t : e->sel.f, pt);
    a = ev(e->sel.t, pt);
    b = ev(e->sel.f, pt);
    if (!a.ok || !b.ok) return (val){false, 0};
    return c.v ? a : b;
  case MLC_EXPR_NOT:
    a = ev(e->bin.a, pt);
    a.v = !a.v;
    return a;
  default:
    break;
  }
  a = ev(e->bin.a, pt);
  b = ev(e->bin.b, pt);
  if (!a.ok || !b.ok) return (val){false, 0};
  int64_t x = a.v, y = b.v;
  switch (e->kind) {
  case MLC_EXPR_ADD: r.v = x + y; break;
  case MLC_EXPR_SUB: r.v = x - y; break;
  case MLC_EXPR_MUL: r.v = x * y; break;
  case MLC_EXPR_DIV:
    if (y == 0) return (val){false, 0};
    r.v = x / y;
    break;
  case MLC_EXPR_FLOORDIV:
    if (y == 0) return (val){false, 0};
    r.v = (int64_t)floor((double)x / (double)y);
    break;
  case MLC_EXPR_FLOORMOD:
    if (y == 0) return (val){false, 0};
    r.v = x - y * (int64_t)floor((double)x / (double)y);
    break;
  case MLC_EXPR_MIN: r.v = x < y ? x : y; break;
  case MLC_EXPR_MAX: r.v = x > y ? x : y; break;
  case MLC_EXPR_EQ: r.v = x == y; break;
  case MLC_EXPR_NE: r.v = x != y; break;
  case MLC_EXPR_LT: r.v = x < y; break;
  case MLC_EXPR_LE: r.v = x <= y; break;
  case MLC_EXPR_GT: r.v = x > y; break;
  case MLC_EXPR_GE: r.v = x >= y; break;
  case MLC_EXPR_AND: r.v = x && y; break;
  case MLC_EXPR_OR: r.v = x || y; break;
  default: r.ok = false;
  }
  return r;
}

static mlc_pcg32 rng;
static int rnd(int n) { return (int)mlc_pcg32_bounded(&rng, (uint32_t)n); }

static mlc_expr *gen_int(int depth);

static mlc_expr *gen_cond(int depth) {
  static const mlc_expr_kind cmps[] = {MLC_EXPR_EQ, MLC_EXPR_NE, MLC_EXPR_LT,
                                       MLC_EXPR_LE, MLC_EXPR_GT, MLC_EXPR_GE};
  mlc_expr *c = bin(cmps[rnd(6)], gen_int(depth), gen_int(depth));
  if (depth > 0 && rnd(4) == 0)
    c = bin(rnd(2) ? MLC_EXPR_AND : MLC_EXPR_OR, c, gen_cond(depth - 1));
  return c;
}

static mlc_expr *gen_int(int depth) {
  if (depth <= 0 || rnd(5) == 0) {
    if (rnd(3) == 0) return I(rnd(41) - 20);
    return mlc_ref(A, rvars[rnd(NVARS)]);
  }
  int k = rnd(14);
  mlc_expr *x = gen_int(depth - 1);
  switch (k) {
  case 0: case 1: return add(x, gen_int(depth - 1));
  case 2: return sub(x, gen_int(depth - 1));
  case 3: return mul(x, I(rnd(9) - 4));
  case 4: return mul(I(rnd(9) - 4), x);
  case 5: return mul(x, gen_int(depth - 2));
  case 6: return fdv(x, I(1 + rnd(rnd(2) ? 8 : 40)));
  case 7: return fmod_(x, I(1 + rnd(rnd(2) ? 8 : 40)));
  case 8: return bin(MLC_EXPR_MIN, x, gen_int(depth - 1));
  case 9: return bin(MLC_EXPR_MAX, x, gen_int(depth - 1));
  case 10: return mlc_select(A, gen_cond(depth - 1), x, gen_int(depth - 1));
  case 11: return bin(MLC_EXPR_DIV, x, I(1 + rnd(8)));
  case 12: return fdv(x, gen_int(depth - 2)); /* divisor may be 0 or negative */
  default: return add(mul(x, I(rnd(2) ? 16 : 4)), gen_int(depth - 1));
  }
}

static void test_random_equivalence(void) {
  A = mlc_arena_new();
  mlc_pcg32_seed(&rng, 42, 7);
  const char *names[NVARS] = {"a", "b", "c", "d"};
  int n_cases = 4000, bad = 0, bad_bounds = 0, unbounded = 0, nonidem = 0, changed = 0;
  for (int t = 0; t < n_cases; t++) {
    if (t % 200 == 0) {
      mlc_arena_free(A);
      A = mlc_arena_new();
      for (int i = 0; i < NVARS; i++) rvars[i] = mlc_var_new(A, names[i], MLC_INT32);
    }
    mlc_simplifier *s = mlc_simplifier_new(A);
    int n_bound = 1 + rnd(NVARS); /* the others stay free: never evaluated out of range */
    for (int i = 0; i < NVARS; i++) {
      rlo[i] = rnd(3) == 0 ? -(int64_t)rnd(20) : 0;
      rext[i] = 1 + rnd(rnd(2) ? 8 : 64);
      if (i < n_bound) mlc_simplifier_bind(s, rvars[i], rlo[i], rext[i]);
    }
    mlc_expr *e = rnd(6) == 0 ? gen_cond(3) : gen_int(1 + rnd(5));
    mlc_expr *r = mlc_simplify(s, e);
    changed += strcmp(show(e), show(r)) != 0;
    mlc_expr *r2 = mlc_simplify(s, r);
    if (strcmp(show(r), show(r2)) != 0 && nonidem++ < 3)
      printf("  # not idempotent: %s -> %s -> %s\n", show(e), show(r), show(r2));
    int64_t blo = 0, bhi = 0, slo = 0, shi = 0;
    bool has_b = mlc_simplifier_bounds(s, e, &blo, &bhi);
    bool has_sb = mlc_simplifier_bounds(s, r, &slo, &shi);
    bool all_bound = true;
    for (int i = n_bound; i < NVARS; i++) all_bound &= !mlc_expr_uses_var(e, rvars[i]);
    if (all_bound && !has_b) unbounded++;
    for (int p = 0; p < 40; p++) {
      int64_t pt[NVARS];
      for (int i = 0; i < NVARS; i++) pt[i] = rlo[i] + rnd((int)rext[i]);
      val a = ev(e, pt), b = ev(r, pt);
      if (!a.ok) continue; /* the original divides by zero here */
      if (!b.ok || a.v != b.v) {
        if (bad++ < 5)
          printf("  # mismatch: %s -> %s at a=%lld b=%lld c=%lld d=%lld: %lld vs %lld%s\n",
                 show(e), show(r), (long long)pt[0], (long long)pt[1], (long long)pt[2],
                 (long long)pt[3], (long long)a.v, (long long)b.v, b.ok ? "" : " (undefined)");
        break;
      }
      if ((has_b && (a.v < blo || a.v > bhi)) || (has_sb && (a.v < slo || a.v > shi))) {
        if (bad_bounds++ < 5)
          printf("  # bounds: %s in [%lld, %lld] / %s in [%lld, %lld], value %lld\n", show(e),
                 (long long)blo, (long long)bhi, show(r), (long long)slo, (long long)shi,
                 (long long)a.v);
        break;
      }
    }
  }
  printf("  # %d random expressions, %d changed, %d fully bound but unbounded, %d not idempotent\n",
         n_cases, changed, unbounded, nonidem);
  CHECK_MSG(bad == 0, "%d simplified expressions differ from their originals", bad);
  CHECK_MSG(bad_bounds == 0, "%d bounds miss a value", bad_bounds);
  CHECK_MSG(changed > n_cases / 4, "only %d of %d changed", changed, n_cases);
  mlc_arena_free(A);
}

/* Every rule's result is also checked through int64 vars (no dtype
 * surprises: literals are made int64 to match). */
static void test_int64_affine(void) {
  A = mlc_arena_new();
  mlc_simplifier *s = mlc_simplifier_new(A);
  mlc_expr *i = mlc_ref(A, mlc_var_new(A, "i", MLC_INT64));
  mlc_expr *j = mlc_ref(A, mlc_var_new(A, "j", MLC_INT64));
  mlc_simplifier_bind(s, j->var, 0, 16);
  mlc_expr *r = mlc_simplify(s, fdv(add(mul(i, I64(16)), j), I64(16)));
  CHECK_SHOW(r, "i");
  r = mlc_simplify(s, sub(add(mul(i, I64(4)), I64(3)), I64(1)));
  CHECK_SHOW(r, "i * 4 + 2");
  CHECK(r->dtype == MLC_INT64 && r->bin.b->dtype == MLC_INT64 && r->bin.a->bin.b->dtype == MLC_INT64);
  mlc_arena_free(A);
}

int main(void) {
  RUN(test_fold_int_kinds);
  RUN(test_fold_refuses_overflow_and_ub);
  RUN(test_fold_float32);
  RUN(test_fold_casts);
  RUN(test_affine);
  RUN(test_divmod_rules);
  RUN(test_bounds);
  RUN(test_compare_and_minmax);
  RUN(test_const_diff);
  RUN(test_int64_affine);
  RUN(test_random_equivalence);
  return test_summary();
}
