/* Printer tests.
 *
 * Golden files: every tests/golden/X.py is parsed, verified and printed;
 * the text must equal tests/golden/X.expected byte for byte, and parsing
 * the printed text and printing again must give the same bytes (round
 * trip). One PASS/FAIL line per file. MLC_UPDATE_GOLDEN=1 writes X.expected
 * from the current printer instead (then read the diff before keeping it).
 *
 * Unit tests print IR built with the ir.h constructors and compare with
 * text written here by hand: precedence and parentheses, literals of each
 * dtype, shortest floats, name collisions, remap vs per-axis bindings,
 * T.grid collapsing, regions, decl_buffer, module layout.
 */
#include "ir/ir.h"
#include "tests/test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------- */

static mlc_arena *A_;

static mlc_expr *I(int64_t v) { return mlc_int(A_, v); }
static mlc_expr *V(mlc_var *v) { return mlc_ref(A_, v); }
static mlc_var *ivar(const char *name) { return mlc_var_new(A_, name, MLC_INT32); }
static mlc_expr *bin(mlc_expr_kind k, mlc_expr *x, mlc_expr *y) { return mlc_binary(A_, k, x, y); }

/* Print an expression into a static buffer (valid until the next call). */
static const char *expr_text(const mlc_expr *e) {
  static char buf[1024];
  mlc_str s = {0};
  mlc_print_expr(&s, e);
  snprintf(buf, sizeof buf, "%s", mlc_str_cstr(&s));
  mlc_str_free(&s);
  return buf;
}

static char *stmt_text(const mlc_stmt *s, int indent) {
  mlc_str out = {0};
  mlc_print_stmt(&out, s, indent);
  return mlc_str_take(&out);
}

static char *func_text(const mlc_prim_func *f) {
  mlc_str out = {0};
  mlc_print_func(&out, f);
  return mlc_str_take(&out);
}

/* CHECK that two multi-line texts agree, naming the first differing line. */
static void check_text(const char *got, const char *want, const char *file, int line) {
  if (strcmp(got, want) == 0) return;
  int ln = 1;
  const char *g = got, *w = want;
  while (*g && *g == *w) {
    if (*g == '\n') ln++;
    g++, w++;
  }
  while (g > got && g[-1] != '\n') g--;
  while (w > want && w[-1] != '\n') w--;
  test_fail_(file, line, "line %d: got \"%.*s\" want \"%.*s\"", ln, (int)strcspn(g, "\n"), g,
             (int)strcspn(w, "\n"), w);
}
#define CHECK_TEXT(got, want) check_text((got), (want), __FILE__, __LINE__)

static mlc_buffer *buf1(const char *name, int64_t n) {
  return mlc_buffer_new(A_, name, MLC_FLOAT32, 1, (int64_t[]){n}, "global");
}

static mlc_buffer *buf2(const char *name, int64_t m, int64_t n) {
  return mlc_buffer_new(A_, name, MLC_FLOAT32, 2, (int64_t[]){m, n}, "global");
}

static mlc_stmt *loop(mlc_var *v, int64_t n, mlc_stmt *body) {
  return mlc_for_new(A_, v, I(0), I(n), MLC_FOR_SERIAL, body);
}

/* A block "name" with iter vars (all spatial unless kinds says 'R') over
 * [0, ext[i]), bound to values, with body built by the caller. */
static mlc_block *block(const char *name, int n, mlc_var **vars, const int64_t *ext,
                        const char *kinds) {
  mlc_block *b = mlc_block_new(A_, name);
  b->n_iters = n;
  b->iters = MLC_NEW_ARRAY(A_, mlc_iter_var, n);
  for (int i = 0; i < n; i++) {
    b->iters[i].var = vars[i];
    b->iters[i].dom = (mlc_range){I(0), I(ext[i])};
    b->iters[i].kind = kinds && kinds[i] == 'R' ? MLC_ITER_REDUCE : MLC_ITER_SPATIAL;
  }
  return b;
}

/* A function whose root block holds `body` and the given allocs. */
static mlc_prim_func *func(const char *name, int np, mlc_buffer **params, int na,
                           mlc_buffer **allocs, mlc_stmt *body) {
  mlc_prim_func *f = mlc_func_new(A_, name);
  f->n_params = np;
  f->params = MLC_NEW_ARRAY(A_, mlc_buffer *, np);
  memcpy(f->params, params, sizeof(mlc_buffer *) * (size_t)np);
  mlc_block *root = mlc_block_new(A_, "root");
  root->n_allocs = na;
  root->allocs = MLC_NEW_ARRAY(A_, mlc_buffer *, na ? na : 1);
  if (na) memcpy(root->allocs, allocs, sizeof(mlc_buffer *) * (size_t)na);
  root->body = body;
  f->body = mlc_realize_new(A_, root, NULL, NULL);
  return f;
}

/* ---- expressions ------------------------------------------------------ */

static void test_precedence(void) {
  A_ = mlc_arena_new();
  mlc_var *i0 = ivar("i_0"), *a0 = ivar("ax0_0"), *a1 = ivar("ax0_1");
  mlc_expr *a = V(ivar("a")), *b = V(ivar("b")), *c = V(ivar("c")), *d = V(ivar("d"));
  CHECK_STREQ(expr_text(mlc_add(A_, mlc_mul(A_, V(i0), I(128)),
                                mlc_add(A_, mlc_mul(A_, V(a0), I(128)), V(a1)))),
              "i_0 * 128 + (ax0_0 * 128 + ax0_1)");
  CHECK_STREQ(expr_text(mlc_add(A_, mlc_add(A_, a, b), c)), "a + b + c");
  CHECK_STREQ(expr_text(mlc_mul(A_, mlc_add(A_, a, b), c)), "(a + b) * c");
  CHECK_STREQ(expr_text(mlc_mul(A_, mlc_add(A_, a, b), mlc_sub(A_, c, d))), "(a + b) * (c - d)");
  CHECK_STREQ(expr_text(mlc_sub(A_, mlc_sub(A_, a, b), c)), "a - b - c");
  CHECK_STREQ(expr_text(mlc_sub(A_, a, mlc_sub(A_, b, c))), "a - (b - c)");
  CHECK_STREQ(expr_text(mlc_sub(A_, a, mlc_mul(A_, b, c))), "a - b * c");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_FLOORDIV, bin(MLC_EXPR_FLOORMOD, a, I(4)), I(2))), "a % 4 // 2");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_FLOORMOD, a, bin(MLC_EXPR_FLOORDIV, b, I(2)))), "a % (b // 2)");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_MUL, a, bin(MLC_EXPR_FLOORDIV, b, I(2)))), "a * (b // 2)");
  mlc_expr *lt_ab = bin(MLC_EXPR_LT, a, b), *lt_cd = bin(MLC_EXPR_LT, c, d);
  CHECK_STREQ(expr_text(bin(MLC_EXPR_LT, mlc_add(A_, a, I(1)), b)), "a + 1 < b");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_EQ, lt_ab, lt_cd)), "(a < b) == (c < d)");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_AND, lt_ab, bin(MLC_EXPR_OR, lt_cd, lt_ab))),
              "a < b and (c < d or a < b)");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_OR, bin(MLC_EXPR_AND, lt_ab, lt_cd), lt_ab)),
              "a < b and c < d or a < b");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_AND, bin(MLC_EXPR_OR, lt_ab, lt_cd), lt_ab)),
              "(a < b or c < d) and a < b");
  CHECK_STREQ(expr_text(mlc_not(A_, bin(MLC_EXPR_AND, lt_ab, lt_cd))), "not (a < b and c < d)");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_AND, mlc_not(A_, lt_ab), lt_cd)), "not a < b and c < d");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_EQ, mlc_not(A_, lt_ab), lt_cd)), "(not a < b) == (c < d)");
  CHECK_STREQ(expr_text(bin(MLC_EXPR_MAX, mlc_add(A_, a, b), I(0))), "T.max(a + b, 0)");
  CHECK_STREQ(expr_text(mlc_mul(A_, bin(MLC_EXPR_MIN, a, b), c)), "T.min(a, b) * c");
  CHECK_STREQ(expr_text(mlc_add(A_, a, I(-1))), "a + -1");
  mlc_arena_free(A_);
}

static void test_literals(void) {
  A_ = mlc_arena_new();
  CHECK_STREQ(expr_text(I(128)), "128");
  CHECK_STREQ(expr_text(I(-1)), "-1");
  CHECK_STREQ(expr_text(mlc_int_t(A_, MLC_INT64, 1)), "T.int64(1)");
  CHECK_STREQ(expr_text(mlc_int_t(A_, MLC_INT64, -7)), "T.int64(-7)");
  CHECK_STREQ(expr_text(mlc_int_t(A_, MLC_INT8, 2)), "T.int8(2)");
  CHECK_STREQ(expr_text(mlc_bool(A_, true)), "T.bool(True)");
  CHECK_STREQ(expr_text(mlc_bool(A_, false)), "T.bool(False)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 0)), "T.float32(0)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 0.5)), "T.float32(0.5)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, -2.5)), "T.float32(-2.5)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 0.1)), "T.float32(0.1)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 1e-5)), "T.float32(1e-05)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 1e20)), "T.float32(1e+20)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 3.14159265358979)), "T.float32(3.1415927)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT32, 100)), "T.float32(100)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT16, 1)), "T.float16(1)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT16, 0.1)), "T.float16(0.1)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT16, 1.0 / 3)), "T.float16(0.3333)");
  /* 65500 is the shortest decimal that rounds to the half 65504 */
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT16, 65504)), "T.float16(65500)");
  CHECK_STREQ(expr_text(mlc_float(A_, MLC_FLOAT16, -0.000123)), "T.float16(-0.000123)");
  mlc_expr *x = mlc_ref(A_, mlc_var_new(A_, "x", MLC_FLOAT32));
  CHECK_STREQ(expr_text(mlc_cast(A_, MLC_FLOAT16, x)), "T.Cast(\"float16\", x)");
  CHECK_STREQ(expr_text(mlc_cast(A_, MLC_INT32, x)), "T.Cast(\"int32\", x)");
  mlc_expr *c = bin(MLC_EXPR_GT, x, mlc_float(A_, MLC_FLOAT32, 0));
  CHECK_STREQ(expr_text(mlc_select(A_, c, x, mlc_float(A_, MLC_FLOAT32, 0))),
              "T.Select(x > T.float32(0), x, T.float32(0))");
  CHECK_STREQ(expr_text(mlc_if_then_else(A_, c, x, mlc_float(A_, MLC_FLOAT32, 1))),
              "T.if_then_else(x > T.float32(0), x, T.float32(1))");
  CHECK_STREQ(expr_text(mlc_call(A_, MLC_INTRIN_EXP, (mlc_expr *[]){x})), "T.exp(x)");
  CHECK_STREQ(expr_text(mlc_call(A_, MLC_INTRIN_POW, (mlc_expr *[]){x, mlc_float(A_, MLC_FLOAT32, 2)})),
              "T.pow(x, T.float32(2))");
  mlc_buffer *B = buf2("B", 4, 4);
  CHECK_STREQ(expr_text(mlc_load(A_, B, (mlc_expr *[]){I(1), mlc_add(A_, I(2), I(3))})), "B[1, 2 + 3]");
  mlc_arena_free(A_);
}

/* The float32 literal text reads back as the same float, and no shorter
 * decimal (fewer significant digits) does: checked against strtof on
 * seeded random bit patterns, independently of the printer's method. */
static void test_float_shortest(void) {
  A_ = mlc_arena_new();
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 42, 7);
  int bad = 0;
  for (int t = 0; t < 3000 && bad < 3; t++) {
    uint32_t bits = mlc_pcg32_next(&rng);
    float f;
    memcpy(&f, &bits, sizeof f);
    if (isnan(f) || isinf(f)) continue;
    const char *s = expr_text(mlc_float(A_, MLC_FLOAT32, f));
    char digits[64];
    size_t n = strlen(s);
    if (strncmp(s, "T.float32(", 10) != 0 || s[n - 1] != ')' || n - 11 >= sizeof digits) {
      bad++;
      CHECK_MSG(0, "bad form %s", s);
      continue;
    }
    memcpy(digits, s + 10, n - 11);
    digits[n - 11] = 0;
    float back = strtof(digits, NULL);
    if (back != f && !(back == 0 && f == 0)) {
      bad++;
      CHECK_MSG(0, "%s does not read back as %.9g", digits, (double)f);
    }
    int sig = 0;
    bool leading = true;
    for (const char *c = digits; *c && *c != 'e'; c++) {
      if (*c < '0' || *c > '9') continue;
      if (*c == '0' && leading) continue;
      leading = false;
      sig++;
    }
    /* trailing zeros of an integer are not significant */
    if (!strpbrk(digits, ".e"))
      for (size_t k = strlen(digits); k > 1 && digits[k - 1] == '0'; k--) sig--;
    if (sig > 1) {
      char shorter[64];
      snprintf(shorter, sizeof shorter, "%.*e", sig - 2, (double)f);
      if (strtof(shorter, NULL) == f) {
        bad++;
        CHECK_MSG(0, "%s is not shortest: %s", digits, shorter);
      }
    }
  }
  mlc_arena_free(A_);
}

/* ---- statements ------------------------------------------------------- */

static void test_grid_collapse(void) {
  A_ = mlc_arena_new();
  mlc_buffer *C = buf1("C", 8);
  mlc_var *i = ivar("i"), *j = ivar("j"), *k = ivar("k"), *l = ivar("l");
  mlc_stmt *st = mlc_store_new(A_, C, (mlc_expr *[]){V(i)}, mlc_float(A_, MLC_FLOAT32, 1));
  /* three plain loops collapse; a parallel loop below ends the chain */
  mlc_stmt *par = mlc_for_new(A_, l, I(0), I(4), MLC_FOR_PARALLEL, st);
  mlc_stmt *s = loop(i, 8, loop(j, 4, loop(k, 2, par)));
  char *t = stmt_text(s, 0);
  CHECK_TEXT(t, "for i, j, k in T.grid(8, 4, 2):\n"
                "    for l in T.parallel(4):\n"
                "        C[i] = T.float32(1)\n");
  mlc_free(t);
  /* a parallel loop on top: no grid; the plain loops below it collapse */
  s = mlc_for_new(A_, l, I(0), I(4), MLC_FOR_PARALLEL, loop(i, 8, loop(j, 4, st)));
  t = stmt_text(s, 4);
  CHECK_TEXT(t, "    for l in T.parallel(4):\n"
                "        for i, j in T.grid(8, 4):\n"
                "            C[i] = T.float32(1)\n");
  mlc_free(t);
  /* a SEQ body ends the chain; a single loop is range(n) */
  s = loop(i, 8, mlc_seq_new(A_, 2, (mlc_stmt *[]){loop(j, 4, st), loop(k, 2, st)}));
  t = stmt_text(s, 0);
  CHECK_TEXT(t, "for i in range(8):\n"
                "    for j in range(4):\n"
                "        C[i] = T.float32(1)\n"
                "    for k in range(2):\n"
                "        C[i] = T.float32(1)\n");
  mlc_free(t);
  /* nonzero min, annotations, loop kinds */
  mlc_stmt *rng = mlc_for_new(A_, i, I(2), I(8), MLC_FOR_SERIAL, loop(j, 4, st));
  t = stmt_text(rng, 0);
  CHECK_TEXT(t, "for i in range(2, 10):\n"
                "    for j in range(4):\n"
                "        C[i] = T.float32(1)\n");
  mlc_free(t);
  mlc_stmt *ann = loop(i, 128, loop(j, 4, st));
  ann->loop.n_anns = 2;
  ann->loop.anns = MLC_NEW_ARRAY(A_, mlc_ann, 2);
  ann->loop.anns[0] = (mlc_ann){.key = "k", .kind = MLC_ANN_INT, .i = 1};
  ann->loop.anns[1] = (mlc_ann){.key = "pragma", .kind = MLC_ANN_STRING, .s = "x\"y"};
  t = stmt_text(ann, 0);
  CHECK_TEXT(t, "for i in T.serial(128, annotations={\"k\": 1, \"pragma\": \"x\\\"y\"}):\n"
                "    for j in range(4):\n"
                "        C[i] = T.float32(1)\n");
  mlc_free(t);
  mlc_stmt *tb = mlc_for_new(A_, i, I(0), I(8), MLC_FOR_THREAD_BINDING,
                             mlc_for_new(A_, j, I(0), I(4), MLC_FOR_VECTORIZED,
                                         mlc_for_new(A_, k, I(1), I(2), MLC_FOR_UNROLLED, st)));
  tb->loop.thread = "blockIdx.x";
  t = stmt_text(tb, 0);
  CHECK_TEXT(t, "for i in T.thread_binding(8, thread=\"blockIdx.x\"):\n"
                "    for j in T.vectorized(4):\n"
                "        for k in T.unroll(1, 3):\n"
                "            C[i] = T.float32(1)\n");
  mlc_free(t);
  /* an inner extent that uses an outer var cannot join the grid */
  s = loop(i, 8, mlc_for_new(A_, j, I(0), mlc_add(A_, V(i), I(1)), MLC_FOR_SERIAL, st));
  t = stmt_text(s, 0);
  CHECK_TEXT(t, "for i in range(8):\n"
                "    for j in range(i + 1):\n"
                "        C[i] = T.float32(1)\n");
  mlc_free(t);
  /* int64 loops keep their literal type */
  mlc_var *w = mlc_var_new(A_, "w", MLC_INT64), *z = mlc_var_new(A_, "z", MLC_INT64);
  s = mlc_for_new(A_, w, mlc_int_t(A_, MLC_INT64, 0), mlc_int_t(A_, MLC_INT64, 4), MLC_FOR_SERIAL,
                  mlc_for_new(A_, z, mlc_int_t(A_, MLC_INT64, 0), mlc_int_t(A_, MLC_INT64, 2),
                              MLC_FOR_SERIAL, mlc_evaluate_new(A_, I(0))));
  t = stmt_text(s, 0);
  CHECK_TEXT(t, "for w, z in T.grid(T.int64(4), T.int64(2)):\n"
                "    T.evaluate(0)\n");
  mlc_free(t);
  mlc_arena_free(A_);
}

/* A block over loops i, j (extents 128, 64) with the given bindings. */
static char *bindings_text(mlc_var **loops, const int64_t *loop_ext, int n, mlc_expr **values,
                           const int64_t *dom_ext, const char *kinds) {
  mlc_var *iv[4] = {ivar("vi"), ivar("vj"), ivar("vk"), ivar("vl")};
  mlc_block *b = block("B", n, iv, dom_ext, kinds);
  b->body = mlc_evaluate_new(A_, I(0));
  mlc_stmt *s = mlc_realize_new(A_, b, values, NULL);
  for (int i = 1; i >= 0; i--) s = loop(loops[i], loop_ext[i], s);
  return stmt_text(s, 0);
}

static void test_remap_vs_per_axis(void) {
  A_ = mlc_arena_new();
  mlc_var *L[2] = {ivar("i"), ivar("j")};
  int64_t ext[2] = {128, 64};
  char *t = bindings_text(L, ext, 2, (mlc_expr *[]){V(L[0]), V(L[1])}, (int64_t[]){128, 64}, "SR");
  CHECK_TEXT(t, "for i, j in T.grid(128, 64):\n"
                "    with T.block(\"B\"):\n"
                "        vi, vj = T.axis.remap(\"SR\", [i, j])\n"
                "        T.reads()\n"
                "        T.writes()\n"
                "        T.evaluate(0)\n");
  mlc_free(t);
  /* order of values need not follow the loops */
  t = bindings_text(L, ext, 2, (mlc_expr *[]){V(L[1]), V(L[0])}, (int64_t[]){64, 128}, "SS");
  CHECK(strstr(t, "vi, vj = T.axis.remap(\"SS\", [j, i])\n") != NULL);
  mlc_free(t);
  /* a single plain binding still uses remap */
  t = bindings_text(L, ext, 1, (mlc_expr *[]){V(L[0])}, (int64_t[]){128}, "S");
  CHECK(strstr(t, "        vi = T.axis.remap(\"S\", [i])\n") != NULL);
  mlc_free(t);
  /* one compound value: every iter var is written per axis */
  t = bindings_text(L, ext, 2, (mlc_expr *[]){V(L[0]), mlc_mul(A_, V(L[1]), I(2))},
                    (int64_t[]){128, 128}, "SR");
  CHECK_TEXT(t, "for i, j in T.grid(128, 64):\n"
                "    with T.block(\"B\"):\n"
                "        vi = T.axis.spatial(128, i)\n"
                "        vj = T.axis.reduce(128, j * 2)\n"
                "        T.reads()\n"
                "        T.writes()\n"
                "        T.evaluate(0)\n");
  mlc_free(t);
  /* a repeated var */
  t = bindings_text(L, ext, 2, (mlc_expr *[]){V(L[0]), V(L[0])}, (int64_t[]){128, 128}, "SS");
  CHECK(strstr(t, "vi = T.axis.spatial(128, i)\n") && strstr(t, "vj = T.axis.spatial(128, i)\n"));
  mlc_free(t);
  /* a domain that differs from the loop's range */
  t = bindings_text(L, ext, 2, (mlc_expr *[]){V(L[0]), V(L[1])}, (int64_t[]){128, 256}, "SS");
  CHECK(strstr(t, "vj = T.axis.spatial(256, j)\n") != NULL);
  mlc_free(t);
  /* a nonzero domain min prints as a (lo, hi) pair */
  mlc_var *iv[1] = {ivar("vi")};
  mlc_block *b = block("B", 1, iv, (int64_t[]){8}, "S");
  b->iters[0].dom.min = I(2);
  b->body = mlc_evaluate_new(A_, I(0));
  mlc_stmt *s = mlc_for_new(A_, L[0], I(2), I(8), MLC_FOR_SERIAL,
                            mlc_realize_new(A_, b, (mlc_expr *[]){V(L[0])}, NULL));
  t = stmt_text(s, 0);
  CHECK(strstr(t, "vi = T.axis.spatial((2, 10), i)\n") != NULL);
  mlc_free(t);
  /* a var that is not an enclosing loop (here a free var) */
  t = bindings_text(L, ext, 1, (mlc_expr *[]){V(ivar("q"))}, (int64_t[]){128}, "S");
  CHECK(strstr(t, "vi = T.axis.spatial(128, q)\n") != NULL);
  mlc_free(t);
  mlc_arena_free(A_);
}

static void test_block_parts(void) {
  A_ = mlc_arena_new();
  mlc_buffer *Abuf = buf2("A", 64, 64), *Cbuf = buf2("C", 64, 64);
  mlc_var *i = ivar("i"), *vi = ivar("vi");
  mlc_block *b = block("blk", 1, (mlc_var *[]){vi}, (int64_t[]){4}, "S");
  /* reads: A[vi * 16:vi * 16 + 16, 0:16], A[vi + 2:vi + 5, vi - 1:vi + 2],
   * A[vi - 3:vi, 5]; writes: C[vi, 3:7] */
  mlc_range *r0 = MLC_NEW_ARRAY(A_, mlc_range, 2), *r1 = MLC_NEW_ARRAY(A_, mlc_range, 2),
            *r2 = MLC_NEW_ARRAY(A_, mlc_range, 2), *w0 = MLC_NEW_ARRAY(A_, mlc_range, 2);
  r0[0] = (mlc_range){mlc_mul(A_, V(vi), I(16)), I(16)};
  r0[1] = (mlc_range){I(0), I(16)};
  r1[0] = (mlc_range){mlc_add(A_, V(vi), I(2)), I(3)};
  r1[1] = (mlc_range){mlc_sub(A_, V(vi), I(1)), I(3)};
  r2[0] = (mlc_range){mlc_sub(A_, V(vi), I(3)), I(3)};
  r2[1] = (mlc_range){I(5), I(1)};
  w0[0] = (mlc_range){V(vi), I(1)};
  w0[1] = (mlc_range){I(3), I(4)};
  b->n_reads = 3;
  b->reads = MLC_NEW_ARRAY(A_, mlc_region, 3);
  b->reads[0] = (mlc_region){Abuf, r0};
  b->reads[1] = (mlc_region){Abuf, r1};
  b->reads[2] = (mlc_region){Abuf, r2};
  b->n_writes = 1;
  b->writes = MLC_NEW_ARRAY(A_, mlc_region, 1);
  b->writes[0] = (mlc_region){Cbuf, w0};
  b->n_anns = 1;
  b->anns = MLC_NEW_ARRAY(A_, mlc_ann, 1);
  b->anns[0] = (mlc_ann){.key = "meta_schedule.tiling_structure", .kind = MLC_ANN_STRING, .s = "SSRSRS"};
  mlc_buffer *loc = mlc_buffer_new(A_, "loc", MLC_INT32, 1, (int64_t[]){4}, "local");
  b->n_allocs = 1;
  b->allocs = MLC_NEW_ARRAY(A_, mlc_buffer *, 1);
  b->allocs[0] = loc;
  b->init = mlc_store_new(A_, Cbuf, (mlc_expr *[]){V(vi), I(0)}, mlc_float(A_, MLC_FLOAT32, 0));
  mlc_stmt *then_s = mlc_store_new(A_, loc, (mlc_expr *[]){I(0)}, I(1));
  mlc_stmt *else_s = mlc_evaluate_new(A_, I(1));
  b->body = mlc_if_new(A_, bin(MLC_EXPR_LT, V(vi), I(2)), then_s, else_s);
  mlc_expr *pred = bin(MLC_EXPR_LT, mlc_mul(A_, V(i), I(2)), I(7));
  mlc_stmt *s = loop(i, 4, mlc_realize_new(A_, b, (mlc_expr *[]){V(i)}, pred));
  char *t = stmt_text(s, 0);
  CHECK_TEXT(t, "for i in range(4):\n"
                "    with T.block(\"blk\"):\n"
                "        vi = T.axis.remap(\"S\", [i])\n"
                "        T.where(i * 2 < 7)\n"
                "        T.reads(A[vi * 16:vi * 16 + 16, 0:16], A[vi + 2:vi + 5, vi - 1:vi + 2], A[vi - 3:vi, 5])\n"
                "        T.writes(C[vi, 3:7])\n"
                "        T.block_attr({\"meta_schedule.tiling_structure\": \"SSRSRS\"})\n"
                "        loc = T.alloc_buffer((4,), \"int32\", scope=\"local\")\n"
                "        with T.init():\n"
                "            C[vi, 0] = T.float32(0)\n"
                "        if vi < 2:\n"
                "            loc[0] = 1\n"
                "        else:\n"
                "            T.evaluate(1)\n");
  mlc_free(t);
  mlc_arena_free(A_);
}

static void test_decl_buffer(void) {
  A_ = mlc_arena_new();
  mlc_buffer *X = mlc_buffer_new(A_, "X", MLC_FLOAT32, 1, (int64_t[]){16}, "local");
  mlc_buffer *Y = mlc_buffer_new(A_, "Y", MLC_FLOAT16, 2, (int64_t[]){2, 3}, "global");
  mlc_var *i = ivar("i");
  mlc_stmt *st = mlc_store_new(A_, X, (mlc_expr *[]){V(i)}, mlc_float(A_, MLC_FLOAT32, 0));
  mlc_stmt *s = loop(i, 16, mlc_allocate_new(A_, X, mlc_allocate_new(A_, Y, st)));
  char *t = stmt_text(s, 0);
  CHECK_TEXT(t, "for i in range(16):\n"
                "    X = T.decl_buffer((16,), \"float32\", scope=\"local\")\n"
                "    Y = T.decl_buffer((2, 3), \"float16\")\n"
                "    X[i] = T.float32(0)\n");
  mlc_free(t);
  mlc_arena_free(A_);
}

/* ---- names ------------------------------------------------------------ */

static void test_name_collisions(void) {
  A_ = mlc_arena_new();
  mlc_buffer *A = buf1("A", 8), *A2 = buf1("A", 8), *i_buf = buf1("i", 8);
  mlc_var *i = ivar("i"), *i_in = ivar("i"), *i_1 = ivar("i_1"), *i_sib = ivar("i");
  mlc_var *vi = ivar("i"), *bad = ivar("for"), *odd = ivar("3x-y");
  /* A (param) and A (root alloc); loop i holding loop i holding loop i_1;
   * a sibling loop i; a block iter var i inside loop i; the alloc named i
   * is defined first, so every loop i is renamed. */
  mlc_stmt *inner = loop(i_1, 2, mlc_store_new(A_, A2, (mlc_expr *[]){mlc_add(A_, V(i), mlc_add(A_, V(i_in), V(i_1)))},
                                               mlc_float(A_, MLC_FLOAT32, 0)));
  mlc_stmt *nest = loop(i, 2, mlc_seq_new(A_, 2, (mlc_stmt *[]){loop(i_in, 2, inner),
                                                                 mlc_store_new(A_, A, (mlc_expr *[]){V(i)}, mlc_float(A_, MLC_FLOAT32, 1))}));
  mlc_block *b = block("B", 1, (mlc_var *[]){vi}, (int64_t[]){2}, "S");
  b->body = loop(bad, 2, loop(odd, 2, mlc_store_new(A_, i_buf, (mlc_expr *[]){mlc_add(A_, V(vi), mlc_add(A_, V(bad), V(odd)))},
                                                 mlc_float(A_, MLC_FLOAT32, 2))));
  mlc_stmt *sib = loop(i_sib, 2, mlc_realize_new(A_, b, (mlc_expr *[]){V(i_sib)}, NULL));
  mlc_prim_func *f = func("main", 1, (mlc_buffer *[]){A}, 2, (mlc_buffer *[]){A2, i_buf},
                          mlc_seq_new(A_, 2, (mlc_stmt *[]){nest, sib}));
  char *t = func_text(f);
  CHECK_TEXT(t, "# from tvm.script import tir as T\n"
                "\n"
                "@T.prim_func\n"
                "def main(A: T.Buffer((8,), \"float32\")):\n"
                "    # with T.block(\"root\"):\n"
                "    A_1 = T.alloc_buffer((8,))\n"
                "    i = T.alloc_buffer((8,))\n"
                "    for i_1 in range(2):\n"
                "        for i_2, i_1_1 in T.grid(2, 2):\n"
                "            A_1[i_1 + (i_2 + i_1_1)] = T.float32(0)\n"
                "        A[i_1] = T.float32(1)\n"
                "    for i_1 in range(2):\n"
                "        with T.block(\"B\"):\n"
                "            i_2 = T.axis.remap(\"S\", [i_1])\n"
                "            T.reads()\n"
                "            T.writes()\n"
                "            for for_1, _3x_y in T.grid(2, 2):\n"
                "                i[i_2 + (for_1 + _3x_y)] = T.float32(2)\n");
  mlc_free(t);
  mlc_arena_free(A_);
}

/* ---- functions and modules -------------------------------------------- */

static mlc_prim_func *small_func(const char *name) {
  mlc_buffer *A = buf1("A", 4);
  mlc_buffer *B = mlc_buffer_new(A_, "B", MLC_INT8, 2, (int64_t[]){2, 2}, "shared");
  mlc_var *i = ivar("i");
  mlc_prim_func *f = func(name, 2, (mlc_buffer *[]){A, B}, 0, NULL,
                          loop(i, 4, mlc_store_new(A_, A, (mlc_expr *[]){V(i)}, mlc_float(A_, MLC_FLOAT32, 0))));
  f->n_attrs = 4;
  f->attrs = MLC_NEW_ARRAY(A_, mlc_ann, 4);
  f->attrs[0] = (mlc_ann){.key = "global_symbol", .kind = MLC_ANN_STRING, .s = name};
  f->attrs[1] = (mlc_ann){.key = "tir.noalias", .kind = MLC_ANN_BOOL, .i = 1};
  f->attrs[2] = (mlc_ann){.key = "n", .kind = MLC_ANN_INT, .i = -3};
  f->attrs[3] = (mlc_ann){.key = "f", .kind = MLC_ANN_FLOAT, .f = 2};
  return f;
}

static const char *small_body =
    "(A: T.Buffer((4,), \"float32\"), B: T.Buffer((2, 2), \"int8\", scope=\"shared\")):\n"
    "%s    T.func_attr({\"global_symbol\": \"%s\", \"tir.noalias\": True, \"n\": -3, \"f\": 2.0})\n"
    "%s    # with T.block(\"root\"):\n"
    "%s    for i in range(4):\n"
    "%s        A[i] = T.float32(0)\n";

static void test_module_layout(void) {
  A_ = mlc_arena_new();
  mlc_module *m = mlc_module_new(A_, "MyMod");
  mlc_module_add(A_, m, small_func("f1"));
  mlc_module_add(A_, m, small_func("f2"));
  char want[4096], f1[1024], f2[1024];
  snprintf(f1, sizeof f1, small_body, "    ", "f1", "    ", "    ", "    ");
  snprintf(f2, sizeof f2, small_body, "    ", "f2", "    ", "    ", "    ");
  snprintf(want, sizeof want,
           "# from tvm.script import ir as I\n# from tvm.script import tir as T\n\n"
           "@I.ir_module\nclass MyMod:\n    @T.prim_func\n    def f1%s\n    @T.prim_func\n    def f2%s",
           f1, f2);
  mlc_str out = {0};
  mlc_print_module(&out, m);
  CHECK_TEXT(mlc_str_cstr(&out), want);
  /* bare functions */
  m->name = NULL;
  snprintf(f1, sizeof f1, small_body, "", "f1", "", "", "");
  snprintf(f2, sizeof f2, small_body, "", "f2", "", "", "");
  snprintf(want, sizeof want,
           "# from tvm.script import tir as T\n\n@T.prim_func\ndef f1%s\n@T.prim_func\ndef f2%s", f1, f2);
  mlc_str_clear(&out);
  mlc_print_module(&out, m);
  CHECK_TEXT(mlc_str_cstr(&out), want);
  /* mlc_print_func of one function = a bare module of it */
  snprintf(want, sizeof want, "# from tvm.script import tir as T\n\n@T.prim_func\ndef f1%s", f1);
  mlc_str_clear(&out);
  mlc_print_func(&out, m->funcs[0]);
  CHECK_TEXT(mlc_str_cstr(&out), want);
  mlc_str_free(&out);
  mlc_arena_free(A_);
}

/* The root prints as a comment unless it has annotations; then as an
 * explicit block, as TVM prints it. */
static void test_root_block(void) {
  A_ = mlc_arena_new();
  mlc_buffer *A = buf1("A", 4), *S = mlc_buffer_new(A_, "S", MLC_FLOAT32, 1, (int64_t[]){4}, "shared");
  mlc_prim_func *f = func("main", 1, (mlc_buffer *[]){A}, 1, (mlc_buffer *[]){S},
                          mlc_evaluate_new(A_, I(0)));
  char *t = func_text(f);
  CHECK_TEXT(t, "# from tvm.script import tir as T\n\n@T.prim_func\n"
                "def main(A: T.Buffer((4,), \"float32\")):\n"
                "    # with T.block(\"root\"):\n"
                "    S = T.alloc_buffer((4,), scope=\"shared\")\n"
                "    T.evaluate(0)\n");
  mlc_free(t);
  mlc_block *root = mlc_func_root(f);
  root->n_anns = 1;
  root->anns = MLC_NEW_ARRAY(A_, mlc_ann, 1);
  root->anns[0] = (mlc_ann){.key = "meta_schedule.unroll_explicit", .kind = MLC_ANN_INT, .i = 16};
  t = func_text(f);
  CHECK_TEXT(t, "# from tvm.script import tir as T\n\n@T.prim_func\n"
                "def main(A: T.Buffer((4,), \"float32\")):\n"
                "    with T.block(\"root\"):\n"
                "        T.reads()\n"
                "        T.writes()\n"
                "        T.block_attr({\"meta_schedule.unroll_explicit\": 16})\n"
                "        S = T.alloc_buffer((4,), scope=\"shared\")\n"
                "        T.evaluate(0)\n");
  mlc_free(t);
  mlc_arena_free(A_);
}

/* ---- golden files ----------------------------------------------------- */

/* The first differing line of two texts, for a FAIL message. */
static void first_diff(const char *got, const char *want, char *msg, size_t n) {
  int ln = 1;
  const char *g = got, *w = want;
  while (*g && *g == *w) {
    if (*g == '\n') ln++;
    g++, w++;
  }
  while (g > got && g[-1] != '\n') g--;
  while (w > want && w[-1] != '\n') w--;
  snprintf(msg, n, "line %d: got \"%.*s\" want \"%.*s\"", ln, (int)strcspn(g, "\n"), g,
           (int)strcspn(w, "\n"), w);
}

static char *print_text(const mlc_module *m) {
  mlc_str out = {0};
  mlc_print_module(&out, m);
  return mlc_str_take(&out);
}

static void golden_one(const char *dir, const char *name, bool update) {
  char path[1024], exp_path[1024], msg[1200], case_name[300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(exp_path, sizeof exp_path, "%s/%.*s.expected", dir, (int)(strlen(name) - 3), name);
  snprintf(case_name, sizeof case_name, "golden/%s", name);
  mlc_error err = {{0}};
  mlc_arena *a = mlc_arena_new();
  char *text = mlc_read_file(path, NULL, &err), *printed = NULL, *again = NULL, *want = NULL;
  mlc_module *m = text ? mlc_parse_module(a, path, text, &err) : NULL;
  if (!m) {
    test_report(case_name, 0, err.msg);
    goto done;
  }
  if (!mlc_verify_module(m, &err)) {
    snprintf(msg, sizeof msg, "verify: %s", err.msg);
    test_report(case_name, 0, msg);
    goto done;
  }
  printed = print_text(m);
  if (update) {
    if (!mlc_write_file(exp_path, printed, strlen(printed), &err)) {
      test_report(case_name, 0, err.msg);
      goto done;
    }
  }
  want = mlc_read_file(exp_path, NULL, &err);
  if (!want) {
    test_report(case_name, 0, err.msg);
    goto done;
  }
  if (strcmp(printed, want) != 0) {
    first_diff(printed, want, msg, sizeof msg);
    test_report(case_name, 0, msg);
    goto done;
  }
  /* round trip: the printed text parses to a program that prints the same */
  mlc_module *m2 = mlc_parse_module(a, exp_path, printed, &err);
  if (!m2) {
    snprintf(msg, sizeof msg, "reparse: %s", err.msg);
    test_report(case_name, 0, msg);
    goto done;
  }
  if (!mlc_verify_module(m2, &err)) {
    snprintf(msg, sizeof msg, "verify after reparse: %s", err.msg);
    test_report(case_name, 0, msg);
    goto done;
  }
  /* the reparsed program is the same program, not only the same text */
  bool same = m2->n_funcs == m->n_funcs;
  for (int i = 0; same && i < m->n_funcs; i++)
    if (!mlc_func_struct_equal(m->funcs[i], m2->funcs[i])) {
      snprintf(msg, sizeof msg, "round trip: function %s parses back to a different program",
               m->funcs[i]->name);
      test_report(case_name, 0, msg);
      goto done;
    }
  if (!same) {
    test_report(case_name, 0, "round trip: function count differs");
    goto done;
  }
  again = print_text(m2);
  if (strcmp(again, printed) != 0) {
    first_diff(again, printed, msg, sizeof msg);
    char full[1300];
    snprintf(full, sizeof full, "round trip: %s", msg);
    test_report(case_name, 0, full);
    goto done;
  }
  test_report(case_name, 1, NULL);
done:
  mlc_free(text);
  mlc_free(printed);
  mlc_free(again);
  mlc_free(want);
  mlc_arena_free(a);
}

static void run_golden(void) {
  const char *dir = "tests/golden";
  const char *upd = getenv("MLC_UPDATE_GOLDEN");
  bool update = upd && strcmp(upd, "1") == 0;
  DIR *d = opendir(dir);
  if (!d) {
    test_report("golden", 0, "cannot open tests/golden (run from the repository root)");
    return;
  }
  MLC_VEC(char *) names = {0};
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 3 && strcmp(e->d_name + n - 3, ".py") == 0) MLC_VEC_PUSH(names, mlc_xstrdup(e->d_name));
  }
  closedir(d);
  qsort(names.data, (size_t)names.len, sizeof(char *), test_cmp_str);
  if (names.len == 0) test_report("golden", 0, "no tests/golden/*.py files");
  for (int i = 0; i < names.len; i++) {
    golden_one(dir, names.data[i], update);
    mlc_free(names.data[i]);
  }
  MLC_VEC_FREE(names);
}

int main(void) {
  RUN(test_precedence);
  RUN(test_literals);
  RUN(test_float_shortest);
  RUN(test_grid_collapse);
  RUN(test_remap_vs_per_axis);
  RUN(test_block_parts);
  RUN(test_decl_buffer);
  RUN(test_name_collisions);
  RUN(test_module_layout);
  RUN(test_root_block);
  run_golden();
  return test_summary();
}
