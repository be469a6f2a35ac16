/* Size vars: functions whose extents are taken at run time. What the
 * parser, verifier, interpreter, specialization and structural hash must
 * do with them, and what they must refuse. Compiled kernels are checked
 * at many sizes in test_targets_codegen (tests/kernels/sym_*.py). */
#include "tests/test.h"

#include "ir/ir.h"

/* A KV-cache append: `present` is one token longer than `past`. */
static const char append_src[] =
    "@T.prim_func\n"
    "def main(p: T.handle, new: T.Buffer((2, 1, 8), \"float32\"), r: T.handle):\n"
    "    n = T.int32(min=0, max=64)\n"
    "    past = T.match_buffer(p, (2, n, 8))\n"
    "    present = T.match_buffer(r, (2, n + 1, 8))\n"
    "    for h, t, d in T.grid(2, n + 1, 8):\n"
    "        with T.block(\"present\"):\n"
    "            vh, vt, vd = T.axis.remap(\"SSS\", [h, t, d])\n"
    "            present[vh, vt, vd] = T.if_then_else(vt < n, past[vh, vt, vd], new[vh, 0, vd])\n";

static const char rows_src[] =
    "@T.prim_func\n"
    "def main(a: T.handle, b: T.handle):\n"
    "    n = T.int64(min=1, max=100)\n"
    "    A = T.match_buffer(a, (n, 4))\n"
    "    B = T.match_buffer(b, (n, 4))\n"
    "    for i, j in T.grid(n, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(2)\n";

static mlc_prim_func *parse1(mlc_arena *a, const char *src, mlc_error *err) {
  mlc_module *m = mlc_parse_module(a, "t.py", src, err);
  return m ? m->funcs[0] : NULL;
}

/* A function that fails verification with a message holding `want`. */
static void expect_refused(const char *src, const char *want) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, src, &err);
  CHECK_MSG(f != NULL, "parse: %s", err.msg);
  if (f) {
    bool ok = mlc_verify_func(f, &err);
    CHECK_MSG(!ok && strstr(err.msg, want), "want \"%s\", got %s", want, ok ? "accepted" : err.msg);
  }
  mlc_arena_free(a);
}

static void test_parse_print(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, append_src, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return mlc_arena_free(a);
  CHECK(mlc_verify_func(f, &err));
  CHECK(f->n_sizes == 1 && f->sizes[0].lo == 0 && f->sizes[0].hi == 64);
  CHECK(f->sizes[0].var->dtype == MLC_INT32);
  const mlc_buffer *present = f->params[2];
  CHECK(present->dims && present->shape[1] == 65 && present->shape[2] == 8);
  CHECK(f->params[1]->dims == NULL);
  mlc_str out = {0};
  mlc_print_func(&out, f);
  const char *text = mlc_str_cstr(&out);
  CHECK_MSG(strstr(text, "def main(var_past: T.handle, new: T.Buffer((2, 1, 8), \"float32\"), "
                         "var_present: T.handle):") != NULL, "%s", text);
  CHECK_MSG(strstr(text, "    n = T.int32(max=64)\n"
                         "    past = T.match_buffer(var_past, (2, n, 8), \"float32\")\n"
                         "    present = T.match_buffer(var_present, (2, n + 1, 8), \"float32\")\n") != NULL,
            "%s", text);
  /* Printing is a fixed point, and a copy prints the same. */
  mlc_prim_func *g = parse1(a, text, &err);
  CHECK_MSG(g != NULL, "%s", err.msg);
  mlc_str again = {0}, copied = {0};
  if (g) mlc_print_func(&again, g);
  mlc_print_func(&copied, mlc_func_copy(a, f));
  CHECK_STREQ(mlc_str_cstr(&again), text);
  CHECK_STREQ(mlc_str_cstr(&copied), text);
  mlc_str_free(&out);
  mlc_str_free(&again);
  mlc_str_free(&copied);
  mlc_arena_free(a);
}

static void test_verify_refuses(void) {
  /* Below the bound is not enough: A's extent is m, the loop runs to n. */
  expect_refused("@T.prim_func\n"
                 "def main(a: T.handle, b: T.handle):\n"
                 "    m = T.int32(min=1, max=64)\n"
                 "    n = T.int32(min=1, max=64)\n"
                 "    A = T.match_buffer(a, (m,))\n"
                 "    B = T.match_buffer(b, (n,))\n"
                 "    for i in range(n):\n"
                 "        with T.block(\"B\"):\n"
                 "            vi = T.axis.spatial(n, i)\n"
                 "            B[vi] = A[vi]\n",
                 "cannot show that index vi of \"A\" stays below its extent m at every size");
  /* A split of a symbolic extent needs T.where for its tail. */
  expect_refused("@T.prim_func\n"
                 "def main(a: T.handle):\n"
                 "    n = T.int32(min=1, max=64)\n"
                 "    A = T.match_buffer(a, (n,))\n"
                 "    for i0, i1 in T.grid((n + 7) // 8, 8):\n"
                 "        with T.block(\"A\"):\n"
                 "            vi = T.axis.spatial(n, i0 * 8 + i1)\n"
                 "            A[vi] = T.float32(1)\n",
                 "cannot show that binding i0 * 8 + i1 of iter var \"vi\" stays in its domain");
  expect_refused("@T.prim_func\n"
                 "def main(a: T.handle):\n"
                 "    n = T.int32(min=1, max=64)\n"
                 "    A = T.match_buffer(a, (n,))\n"
                 "    for i in T.thread_binding(n, thread=\"threadIdx.x\"):\n"
                 "        with T.block(\"A\"):\n"
                 "            vi = T.axis.spatial(n, i)\n"
                 "            A[vi] = T.float32(1)\n",
                 "is bound to threadIdx.x but its extent n is symbolic");
  /* An extent of a loop var is no size. */
  expect_refused("@T.prim_func\n"
                 "def main(a: T.handle):\n"
                 "    n = T.int32(min=1, max=64)\n"
                 "    A = T.match_buffer(a, (n,))\n"
                 "    for i in range(4):\n"
                 "        for j in range(i + 1):\n"
                 "            A[j] = T.float32(1)\n",
                 "extent must be a positive integer constant or an expression of size vars");
}

static void test_verify_constructed(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, rows_src, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return mlc_arena_free(a);
  /* A bound that disagrees with the extent's range. */
  f->params[0]->shape[0] = 99;
  CHECK(!mlc_verify_func(f, &err) && strstr(err.msg, "ranges over [1, 100], but its bound is 99"));
  f->params[0]->shape[0] = 100;
  CHECK(mlc_verify_func(f, &err));
  /* A size var no parameter gives. */
  mlc_size_var *two = MLC_NEW_ARRAY(a, mlc_size_var, 2);
  two[0] = f->sizes[0];
  two[1] = (mlc_size_var){mlc_var_new(a, "m", MLC_INT64), 1, 8};
  f->sizes = two;
  f->n_sizes = 2;
  CHECK(!mlc_verify_func(f, &err) && strstr(err.msg, "size var \"m\" is no parameter's extent"));
  f->n_sizes = 1;
  f->sizes[0].lo = -1;
  CHECK(!mlc_verify_func(f, &err) && strstr(err.msg, "has bounds [-1, 100]"));
  mlc_arena_free(a);
}

static void test_interp(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, append_src, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return mlc_arena_free(a);
  for (int64_t n = 0; n <= 5; n += 5) {
    mlc_array *past = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){2, n, 8});
    mlc_array *new = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){2, 1, 8});
    mlc_array *present = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){2, n + 1, 8});
    for (int64_t i = 0; i < mlc_array_numel(past); i++) mlc_array_set(past, i, (double)i);
    for (int64_t i = 0; i < 16; i++) mlc_array_set(new, i, -1.0 - (double)i);
    mlc_array args[3] = {*past, *new, *present};
    CHECK_MSG(mlc_interp_run(f, args, &err), "n=%lld: %s", (long long)n, err.msg);
    bool ok = true;
    for (int h = 0; h < 2; h++)
      for (int64_t t = 0; t <= n; t++)
        for (int d = 0; d < 8; d++) {
          double got = mlc_array_get(present, (h * (n + 1) + t) * 8 + d);
          double want = t < n ? (double)((h * n + t) * 8 + d) : -1.0 - (double)(h * 8 + d);
          ok = ok && got == want;
        }
    CHECK_MSG(ok, "present wrong at n=%lld", (long long)n);
    /* present one too short for past: refused, naming the extent. */
    args[2].shape[1] = n;
    CHECK(!mlc_interp_run(f, args, &err));
    CHECK_MSG(strstr(err.msg, "has extent") && strstr(err.msg, "expected"), "%s", err.msg);
    mlc_array_free(past);
    mlc_array_free(new);
    mlc_array_free(present);
  }
  /* A size past its bound is refused before anything runs. */
  mlc_array *past = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){2, 65, 8});
  mlc_array *new = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){2, 1, 8});
  mlc_array *present = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){2, 66, 8});
  mlc_array args[3] = {*past, *new, *present};
  CHECK(!mlc_interp_run(f, args, &err));
  CHECK_MSG(strstr(err.msg, "size n = 65 is outside its bounds [0, 64]"), "%s", err.msg);
  mlc_array_free(past);
  mlc_array_free(new);
  mlc_array_free(present);
  mlc_arena_free(a);
}

/* A size given only as an extent plus a constant (a transpose of a
 * decode step's cache, n + 1 rows): the arguments still give it; an
 * extent of another form does not. */
static const char plus_one_src[] =
    "@T.prim_func\n"
    "def main(a: T.handle, b: T.handle):\n"
    "    n = T.int64(min=0, max=63)\n"
    "    A = T.match_buffer(a, (n + 1, 4))\n"
    "    B = T.match_buffer(b, (4, n + 1))\n"
    "    for i, j in T.grid(n + 1, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vj, vi] = A[vi, vj]\n";

static void test_size_plus_constant(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, plus_one_src, &err);
  CHECK_MSG(f && mlc_verify_func(f, &err), "%s", err.msg);
  if (f) {
    int64_t off;
    CHECK(mlc_size_in_extent(f->params[0]->dims[0], f->sizes[0].var, &off) && off == 1);
    CHECK(!mlc_size_in_extent(f->params[0]->dims[1], f->sizes[0].var, &off));
    mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){6, 4});
    mlc_array *y = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){4, 6});
    for (int i = 0; i < 24; i++) mlc_array_set(x, i, i);
    int64_t sizes[1];
    mlc_array args[2] = {*x, *y};
    CHECK(mlc_func_bind_sizes(f, 2, args, sizes, &err) && sizes[0] == 5);
    CHECK_MSG(mlc_interp_run(f, args, &err), "%s", err.msg);
    CHECK(mlc_array_get(y, 1 * 6 + 2) == 2 * 4 + 1);
    /* 65 rows: n = 64, past its bound */
    mlc_array *big = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){65, 4});
    args[0] = *big;
    CHECK(!mlc_func_bind_sizes(f, 2, args, sizes, &err) && strstr(err.msg, "n = 64 is outside"));
    mlc_array_free(big);
    mlc_array_free(x);
    mlc_array_free(y);
  }
  /* 2 * n gives no value of n */
  mlc_arena_free(a);
  a = mlc_arena_new();
  mlc_module *g = mlc_parse_module(a, "t.py",
                                      "@T.prim_func\n"
                                      "def main(a: T.handle):\n"
                                      "    n = T.int64(min=1, max=8)\n"
                                      "    A = T.match_buffer(a, (n * 2,))\n"
                                      "    for i in range(n * 2):\n"
                                      "        with T.block(\"A\"):\n"
                                      "            vi = T.axis.spatial(n * 2, i)\n"
                                      "            A[vi] = T.float32(1)\n",
                                      &err);
  CHECK_MSG(g == NULL && strstr(err.msg, "size n is no parameter's extent"), "%s", err.msg);
  mlc_arena_free(a);
}

static void test_specialize(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, rows_src, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return mlc_arena_free(a);
  int64_t n = 7;
  mlc_prim_func *g = mlc_func_specialize(a, f, &n, &err);
  CHECK_MSG(g != NULL, "%s", err.msg);
  if (!g) return mlc_arena_free(a);
  CHECK(g->n_sizes == 0 && g->params[0]->dims == NULL && g->params[0]->shape[0] == 7);
  CHECK(f->n_sizes == 1 && f->params[0]->dims != NULL && f->params[0]->shape[0] == 100);
  CHECK_MSG(mlc_verify_func(g, &err), "%s", err.msg);
  /* The same function written for 7 rows. */
  static const char static_src[] =
      "@T.prim_func\n"
      "def main(A: T.Buffer((7, 4), \"float32\"), B: T.Buffer((7, 4), \"float32\")):\n"
      "    for i, j in T.grid(T.int64(7), 4):\n"
      "        with T.block(\"B\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            B[vi, vj] = A[vi, vj] * T.float32(2)\n";
  mlc_prim_func *s = parse1(a, static_src, &err);
  CHECK_MSG(s != NULL, "%s", err.msg);
  if (s) CHECK(mlc_func_struct_equal(g, s));
  /* Extents of sizes fold to constants (n + 1 at 64 is 65), as the
   * verifier wants a static function's. */
  mlc_prim_func *ap = parse1(a, append_src, &err);
  int64_t n64 = 64;
  mlc_prim_func *ag = ap ? mlc_func_specialize(a, ap, &n64, &err) : NULL;
  CHECK_MSG(ag && mlc_verify_func(ag, &err), "%s", err.msg);
  mlc_arena_free(a);
}

static void test_struct_hash(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, rows_src, &err);
  CHECK_MSG(f != NULL, "%s", err.msg);
  if (!f) return mlc_arena_free(a);
  /* Renaming the size var changes nothing. */
  mlc_prim_func *r = mlc_func_copy(a, f);
  r->sizes[0].var->name = "seq";
  CHECK(mlc_func_struct_equal(f, r));
  CHECK(mlc_func_struct_hash(f) == mlc_func_struct_hash(r));
  /* Other bounds are another workload, and so is the static function of
   * the bound's shape. */
  mlc_prim_func *b = mlc_func_copy(a, f);
  b->sizes[0].hi = 50;
  b->params[0]->shape[0] = b->params[1]->shape[0] = 50;
  CHECK(!mlc_func_struct_equal(f, b));
  CHECK(mlc_func_struct_hash(f) != mlc_func_struct_hash(b));
  int64_t n = 100;
  mlc_prim_func *g = mlc_func_specialize(a, f, &n, &err);
  CHECK(g && !mlc_func_struct_equal(f, g) && mlc_func_struct_hash(f) != mlc_func_struct_hash(g));
  mlc_arena_free(a);
}

/* Two variants of one function combined: each runs up to its size; the
 * result verifies and computes what the function does on both sides of
 * the threshold. Only one size var is taken. */
static void test_select_by_size(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse1(a, rows_src, &err);
  mlc_prim_func *v1 = parse1(a, rows_src, &err), *v2 = parse1(a, rows_src, &err);
  CHECK_MSG(f && v1 && v2, "%s", err.msg);
  if (!f || !v1 || !v2) return mlc_arena_free(a);
  const mlc_prim_func *vs[2] = {v1, v2};
  int64_t upto[2] = {8, 100};
  const char *tags[2] = {"small", "large"};
  mlc_prim_func *g = mlc_func_select_by_size(a, f, 2, vs, upto, tags, &err);
  CHECK_MSG(g != NULL, "%s", err.msg);
  if (!g) return mlc_arena_free(a);
  CHECK_MSG(mlc_verify_func(g, &err), "%s", err.msg);
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *t = mlc_str_cstr(&out);
  CHECK_MSG(strstr(t, "if n <= T.int64(8):") && strstr(t, "T.block(\"B_small\")") &&
                strstr(t, "T.block(\"B_large\")"),
            "%s", t);
  mlc_str_free(&out);
  for (int64_t n = 7; n <= 9; n += 2) {
    mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){n, 4});
    mlc_array *y = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){n, 4});
    for (int64_t i = 0; i < n * 4; i++) mlc_array_set(x, i, (double)i);
    mlc_array args[2] = {*x, *y};
    CHECK_MSG(mlc_interp_run(g, args, &err), "%s", err.msg);
    bool ok = true;
    for (int64_t i = 0; i < n * 4; i++) ok = ok && mlc_array_get(y, i) == 2.0 * (double)i;
    CHECK_MSG(ok, "n=%lld", (long long)n);
    mlc_array_free(x);
    mlc_array_free(y);
  }
  mlc_prim_func *two = parse1(a, "@T.prim_func\n"
                                 "def main(a: T.handle, b: T.handle):\n"
                                 "    m = T.int32(max=8)\n"
                                 "    n = T.int32(max=8)\n"
                                 "    A = T.match_buffer(a, (m,))\n"
                                 "    B = T.match_buffer(b, (n,))\n"
                                 "    T.evaluate(0)\n",
                              &err);
  CHECK_MSG(two != NULL, "%s", err.msg);
  if (two) {
    const mlc_prim_func *tv[1] = {two};
    CHECK(!mlc_func_select_by_size(a, two, 1, tv, upto, tags, &err));
    CHECK_MSG(strstr(err.msg, "need one size var"), "%s", err.msg);
  }
  mlc_arena_free(a);
}

/* An instance of a kernel at N rows, as a model lowered at that length
 * gives it: in fmt, %1$lld is N, %2$lld N * 32, %3$lld N - 1, %4$lld N * N. */
static mlc_prim_func *instance(mlc_arena *a, const char *fmt, int64_t n, mlc_error *err) {
  char src[2048];
  long long N = n;
  snprintf(src, sizeof src, fmt, N, N * 32, N - 1, N * N);
  return parse1(a, src, err);
}

/* `M` is data whose leading N x N block serves every N. */
static const char inst_fmt[] =
    "@T.prim_func\n"
    "def main(A: T.Buffer((1, %1$lld, 32), \"float32\"), M: T.Buffer((%1$lld, %1$lld), \"float32\"),\n"
    "         B: T.Buffer((%1$lld, 32), \"float32\"), C: T.Buffer((%2$lld,), \"float32\")):\n"
    "    for i, j in T.grid(%1$lld, 32):\n"
    "        with T.block(\"b\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = T.if_then_else(vi < %3$lld, A[0, vi, vj], M[vi, vi])\n"
    "            C[vi * 32 + vj] = A[0, vi, vj]\n";

static mlc_prim_func *generalize_of(mlc_arena *a, const mlc_prim_func *const *insts,
                                    const int64_t *ns, int count, const bool *static_params,
                                    mlc_error *err) {
  const char *names[1] = {"seq"};
  int64_t lo = 1, hi = ns[0];
  mlc_generalize_in in = {count, insts, 1, ns, names, &lo, &hi, static_params};
  return mlc_func_generalize(a, &in, err);
}

static mlc_prim_func *generalize_at(mlc_arena *a, const char *fmt, const int64_t *ns, int count,
                                    const bool *static_params, mlc_error *err) {
  const mlc_prim_func *insts[8];
  for (int i = 0; i < count; i++)
    if (!(insts[i] = instance(a, fmt, ns[i], err))) return NULL;
  return generalize_of(a, insts, ns, count, static_params, err);
}

/* Instances at 64, 20 and 9 rows make one function of seq that verifies,
 * keeps M at its bound, and computes at 1, 9 and 33 rows what the
 * instance written for that many rows computes. */
static void test_generalize(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  int64_t ns[3] = {64, 20, 9};
  bool keep[4] = {false, true, false, false};
  mlc_prim_func *g = generalize_at(a, inst_fmt, ns, 3, keep, &err);
  CHECK_MSG(g != NULL, "%s", err.msg);
  if (!g) return mlc_arena_free(a);
  CHECK_MSG(mlc_verify_func(g, &err), "%s", err.msg);
  CHECK(g->n_sizes == 1 && g->sizes[0].lo == 1 && g->sizes[0].hi == 64);
  CHECK(g->params[1]->dims == NULL && g->params[1]->shape[0] == 64);
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *t = mlc_str_cstr(&out);
  CHECK_MSG(strstr(t, "seq = T.int32(min=1, max=64)") && strstr(t, "(seq * 32,)") &&
                strstr(t, "vi < seq - 1") && strstr(t, "T.grid(seq, 32)"),
            "%s", t);
  mlc_str_free(&out);
  float mdata[64 * 64];
  for (int i = 0; i < 64 * 64; i++) mdata[i] = (float)(i % 97);
  for (int64_t n = 1; n <= 33; n += n < 9 ? 8 : 24) {
    mlc_prim_func *want = instance(a, inst_fmt, n, &err);
    CHECK_MSG(want != NULL, "%s", err.msg);
    if (!want) break;
    mlc_array *x = mlc_array_new(MLC_FLOAT32, 3, (int64_t[]){1, n, 32});
    mlc_array *mb = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){64, 64});
    mlc_array *ms = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){n, n});
    mlc_array *y[2], *z[2];
    for (int k = 0; k < 2; k++) {
      y[k] = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){n, 32});
      z[k] = mlc_array_new(MLC_FLOAT32, 1, (int64_t[]){n * 32});
    }
    for (int64_t i = 0; i < n * 32; i++) mlc_array_set(x, i, (double)(i * 3 % 11));
    memcpy(mb->data, mdata, sizeof mdata);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) mlc_array_set(ms, i * n + j, mdata[i * 64 + j]);
    mlc_array ga[4] = {*x, *mb, *y[0], *z[0]}, wa[4] = {*x, *ms, *y[1], *z[1]};
    CHECK_MSG(mlc_interp_run(g, ga, &err), "n=%lld: %s", (long long)n, err.msg);
    CHECK_MSG(mlc_interp_run(want, wa, &err), "n=%lld: %s", (long long)n, err.msg);
    CHECK_MSG(memcmp(y[0]->data, y[1]->data, sizeof(float) * (size_t)(n * 32)) == 0 &&
                  memcmp(z[0]->data, z[1]->data, sizeof(float) * (size_t)(n * 32)) == 0,
              "n=%lld", (long long)n);
    mlc_array_free(x);
    mlc_array_free(mb);
    mlc_array_free(ms);
    for (int k = 0; k < 2; k++) mlc_array_free(y[k]), mlc_array_free(z[k]);
  }
  mlc_arena_free(a);
}

/* What the generalizer must refuse: a constant that is no affine function
 * of the size (an extent N * N, a float of N), instances of other
 * structure, data kept at its bound but indexed by the size, and
 * instances that do not pin a fit. */
static void test_generalize_refuses(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  int64_t ns[3] = {64, 20, 9};
  static const char square[] =
      "@T.prim_func\n"
      "def main(A: T.Buffer((%4$lld,), \"float32\"), B: T.Buffer((%1$lld,), \"float32\")):\n"
      "    for i in range(%1$lld):\n"
      "        with T.block(\"b\"):\n"
      "            vi = T.axis.spatial(%1$lld, i)\n"
      "            B[vi] = A[vi]\n";
  CHECK(!generalize_at(a, square, ns, 3, NULL, &err));
  CHECK_MSG(strstr(err.msg, "no affine function of the sizes"), "%s", err.msg);
  static const char scaled[] =
      "@T.prim_func\n"
      "def main(A: T.Buffer((%1$lld,), \"float32\"), B: T.Buffer((%1$lld,), \"float32\")):\n"
      "    for i in range(%1$lld):\n"
      "        with T.block(\"b\"):\n"
      "            vi = T.axis.spatial(%1$lld, i)\n"
      "            B[vi] = A[vi] * T.float32(%1$lld)\n";
  CHECK(!generalize_at(a, scaled, ns, 3, NULL, &err));
  CHECK_MSG(strstr(err.msg, "another loop nest"), "%s", err.msg);
  const mlc_prim_func *mixed[3] = {instance(a, inst_fmt, 64, &err), instance(a, scaled, 20, &err),
                                   instance(a, inst_fmt, 9, &err)};
  CHECK(mixed[0] && mixed[1] && mixed[2]);
  CHECK(!generalize_of(a, mixed, ns, 3, NULL, &err));
  CHECK_MSG(strstr(err.msg, "another loop nest at instance 1"), "%s", err.msg);
  static const char moving[] = /* M kept at its bound, read at a row moving with N */
      "@T.prim_func\n"
      "def main(A: T.Buffer((1, %1$lld, 32), \"float32\"), M: T.Buffer((%1$lld, %1$lld), \"float32\"),\n"
      "         B: T.Buffer((%1$lld, 32), \"float32\")):\n"
      "    for i, j in T.grid(%1$lld, 32):\n"
      "        with T.block(\"b\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            B[vi, vj] = M[vi, %3$lld]\n";
  bool keep[3] = {false, true, false};
  CHECK(!generalize_at(a, moving, ns, 3, keep, &err));
  CHECK_MSG(strstr(err.msg, "M, data kept at its bound, is indexed by the sizes"), "%s", err.msg);
  CHECK(!generalize_at(a, inst_fmt, ns, 1, NULL, &err));
  const char *names[1] = {"seq"};
  int64_t lo = 1, hi = 64; /* the first instance is not at the bound */
  mlc_generalize_in in = {2, mixed + 1, 1, ns + 1, names, &lo, &hi, NULL};
  CHECK(!mlc_func_generalize(a, &in, &err));
  CHECK_MSG(strstr(err.msg, "not at every size's bound"), "%s", err.msg);
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_parse_print);
  RUN(test_verify_refuses);
  RUN(test_verify_constructed);
  RUN(test_interp);
  RUN(test_size_plus_constant);
  RUN(test_specialize);
  RUN(test_struct_hash);
  RUN(test_select_by_size);
  RUN(test_generalize);
  RUN(test_generalize_refuses);
  return test_summary();
}
