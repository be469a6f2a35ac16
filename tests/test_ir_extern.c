/* T.call_extern: parse and print, the verifier, the interpreter calling a
 * registered C function, and LLVM code calling the same function through
 * the JIT (mlc_jit_define_symbol), including a pointer into a buffer that
 * lowering compacts (the stride argument follows the compacted layout). */
#include "targets/targets.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>

/* ---- the C functions ---------------------------------------------------- */

static int n_touch_calls;

float row_sum(const float *a, int n, int stride);
float row_sum(const float *a, int n, int stride) {
  float s = 0;
  for (int i = 0; i < n; i++) s += a[i];
  (void)stride;
  return s;
}

int32_t touch(float *b, int n);
int32_t touch(float *b, int n) {
  n_touch_calls++;
  for (int i = 0; i < n; i++) b[i] *= 2;
  return 0;
}

/* out[i, j] = a[i, j] * 3 over a rows x 4 block with row strides. */
int32_t scale3(float *out, const float *a, int rows, int so, int sa);
int32_t scale3(float *out, const float *a, int rows, int so, int sa) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < 4; j++) out[i * so + j] = a[i * sa + j] * 3;
  return 0;
}

/* Each call returns the next number: counts calls. */
static int next_count;
float next_value(void);
float next_value(void) { return (float)next_count++; }

/* Interpreter wrappers: unpack mlc_extern_vals into the C calls. */
static double row_sum_x(void *ud, int n, const mlc_extern_val *a) {
  (void)ud, (void)n;
  return row_sum(a[0].p, (int)a[1].i, (int)a[2].i);
}
static double touch_x(void *ud, int n, const mlc_extern_val *a) {
  (void)ud, (void)n;
  return touch(a[0].p, (int)a[1].i);
}
static double scale3_x(void *ud, int n, const mlc_extern_val *a) {
  (void)ud, (void)n;
  return scale3(a[0].p, a[1].p, (int)a[2].i, (int)a[3].i, (int)a[4].i);
}

static const char *const ext_src =
    "@T.prim_func\n"
    "def main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
    "    for i in range(4):\n"
    "        with T.block(\"row\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            T.reads(A[vi, 0:8])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = T.call_extern(\"float32\", \"row_sum\", T.access_ptr(A[vi, 0:8], \"r\"), 8, "
    "A.strides[0]) + T.float32(1)\n"
    "    T.call_extern(\"int32\", \"touch\", B.access_ptr(\"rw\"), 4)\n";

/* A 16x32 scratch buffer of which 4 rows and 16 columns are used under
 * loop i: lowering compacts it to [4, 16], so the stride passed must be 16
 * (32 in the interpreter) and the pointer must point into the compacted
 * buffer. The IR must show the constant 16 passed. */
static const char *const compact_src =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16), \"float32\"), C: T.Buffer((16, 16), \"float32\")):\n"
    "    T.func_attr({\"tir.noalias\": True})\n"
    "    S = T.alloc_buffer((16, 32), \"float32\", scope=\"global.A_reg\")\n"
    "    for i in range(4):\n"
    "        for j in range(4):\n"
    "            with T.block(\"scale\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])\n"
    "                T.writes(S[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])\n"
    "                T.call_extern(\"int32\", \"scale3\", T.access_ptr(S[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], \"w\"), "
    "T.access_ptr(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], \"r\"), 4, S.strides[0], A.strides[0])\n"
    "        for ii, jj in T.grid(4, 16):\n"
    "            with T.block(\"copy\"):\n"
    "                vi = T.axis.spatial(16, i * 4 + ii)\n"
    "                vj = T.axis.spatial(16, jj)\n"
    "                C[vi, vj] = S[vi, vj] + T.float32(1)\n";

static mlc_prim_func *parse_one(mlc_arena *a, const char *src, mlc_error *err) {
  mlc_module *m = mlc_parse_module(a, "t.py", src, err);
  return m && m->n_funcs == 1 ? m->funcs[0] : NULL;
}

static void register_all(void) {
  mlc_interp_register_extern("row_sum", row_sum_x, NULL);
  mlc_interp_register_extern("touch", touch_x, NULL);
  mlc_interp_register_extern("scale3", scale3_x, NULL);
}

/* ---- cases ----------------------------------------------------------------- */

static void test_round_trip(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse_one(a, ext_src, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (!f) goto out;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
  mlc_str p1 = {0}, p2 = {0};
  mlc_print_func(&p1, f);
  CHECK(strstr(p1.data, "T.call_extern(\"float32\", \"row_sum\", T.access_ptr(A[vi, 0:8], \"r\"), 8, "
                        "A.strides[0])"));
  CHECK(strstr(p1.data, "T.evaluate(T.call_extern(\"int32\", \"touch\", T.access_ptr(B[0:4], \"rw\"), 4))"));
  mlc_prim_func *g = parse_one(a, p1.data, &err);
  CHECK_MSG(g, "%s", err.msg);
  if (g) {
    mlc_print_func(&p2, g);
    CHECK_STREQ(p1.data, p2.data);
    CHECK(mlc_func_struct_equal(f, g));
    mlc_prim_func *h = mlc_func_copy(a, g);
    CHECK(mlc_func_struct_hash(h) == mlc_func_struct_hash(f));
  }
  mlc_str_free(&p1);
  mlc_str_free(&p2);
out:
  mlc_arena_free(a);
}

/* Different calls hash differently (name, argument kind, mask). */
static void test_hash_distinguishes(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char *variants[] = {"T.access_ptr(A[vi, 0:8], \"r\"), 8, A.strides[0]",
                            "T.access_ptr(A[vi, 0:8], \"rw\"), 8, A.strides[0]",
                            "T.access_ptr(A[vi, 0:4], \"r\"), 8, A.strides[0]",
                            "T.access_ptr(A[vi, 0:8], \"r\"), 8, 8"};
  uint64_t h[4];
  for (int i = 0; i < 4; i++) {
    char src[1024];
    snprintf(src, sizeof src,
             "@T.prim_func\ndef main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
             "    for i in range(4):\n        with T.block(\"row\"):\n            vi = T.axis.spatial(4, i)\n"
             "            B[vi] = T.call_extern(\"float32\", \"row_sum\", %s)\n",
             variants[i]);
    mlc_prim_func *f = parse_one(a, src, &err);
    CHECK_MSG(f, "%s: %s", variants[i], err.msg);
    h[i] = f ? mlc_func_struct_hash(f) : (uint64_t)i;
  }
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) CHECK_MSG(h[i] != h[j], "variants %d and %d hash alike", i, j);
  mlc_arena_free(a);
}

static void expect_parse_error(const char *args, const char *want) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char src[1024];
  snprintf(src, sizeof src,
           "@T.prim_func\ndef main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
           "    for i in range(4):\n        with T.block(\"row\"):\n            vi = T.axis.spatial(4, i)\n"
           "            B[vi] = %s\n",
           args);
  mlc_module *m = mlc_parse_module(a, "t.py", src, &err);
  CHECK_MSG(!m, "parsed: %s", args);
  if (!m) CHECK_MSG(strstr(err.msg, want), "%s: got \"%s\", want \"%s\"", args, err.msg, want);
  mlc_arena_free(a);
}

static void test_parse_errors(void) {
  expect_parse_error("T.access_ptr(A[vi, 0:8], \"r\")", "only allowed as an argument of T.call_extern");
  expect_parse_error("T.call_extern(\"float32\", \"f\", T.access_ptr(A[vi, 0:8], \"x\"))",
                     "expected access mask");
  expect_parse_error("T.call_extern(\"float32\", \"f\", vi < 2)", "cannot pass a bool");
  expect_parse_error("T.call_extern(\"float32\", \"a-b\", 1)", "is not a C function name");
  expect_parse_error("T.call_extern(\"float32\", \"f\", A.strides[2])", "no stride 2");
  expect_parse_error("T.call_extern(\"float32\")", "takes a dtype, a function name");
  expect_parse_error("A.strides[0]", "expected a buffer name");
}

/* The verifier bounds-checks a pointer's whole region, and the region
 * counts as an access that must lie inside the block's T.reads. */
static void test_verify_errors(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char *oob =
      "@T.prim_func\ndef main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i in range(4):\n        with T.block(\"row\"):\n            vi = T.axis.spatial(4, i)\n"
      "            T.reads(A[vi, 0:8])\n            T.writes(B[vi])\n"
      "            B[vi] = T.call_extern(\"float32\", \"row_sum\", T.access_ptr(A[vi, 4:12], \"r\"), 8, 8)\n";
  mlc_prim_func *f = parse_one(a, oob, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (f) {
    CHECK(!mlc_verify_func(f, &err));
    CHECK_MSG(strstr(err.msg, "\"A\""), "%s", err.msg);
  }
  const char *undeclared =
      "@T.prim_func\ndef main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i in range(4):\n        with T.block(\"row\"):\n            vi = T.axis.spatial(4, i)\n"
      "            T.reads(A[vi, 0:4])\n            T.writes(B[vi])\n"
      "            B[vi] = T.call_extern(\"float32\", \"row_sum\", T.access_ptr(A[vi, 0:8], \"r\"), 8, 8)\n";
  f = parse_one(a, undeclared, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (f) CHECK_MSG(!mlc_verify_func(f, &err), "a pointer region outside T.reads verified");
  mlc_arena_free(a);
}

/* Inferred regions include what the pointer touches. */
static void test_inferred_regions(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char *src =
      "@T.prim_func\ndef main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i in range(4):\n        with T.block(\"row\"):\n            vi = T.axis.spatial(4, i)\n"
      "            T.call_extern(\"int32\", \"touch\", T.access_ptr(A[vi, 2:6], \"rw\"), 4)\n";
  mlc_prim_func *f = parse_one(a, src, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (f) {
    mlc_str s = {0};
    mlc_print_func(&s, f);
    CHECK_MSG(strstr(s.data, "T.reads(A[vi, 2:6])") && strstr(s.data, "T.writes(A[vi, 2:6])"), "%s",
              s.data);
    mlc_str_free(&s);
  }
  mlc_arena_free(a);
}

static void fill(mlc_array *x, uint64_t seed) {
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, seed, 3);
  mlc_array_fill_random(x, &r);
}

static void test_interp(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse_one(a, ext_src, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (!f) goto out;
  mlc_array *A = mlc_array_for_buffer(f->params[0]), *B = mlc_array_for_buffer(f->params[1]);
  fill(A, 1);
  mlc_array args[2] = {*A, *B};
  n_touch_calls = 0;
  CHECK_MSG(mlc_interp_run(f, args, &err), "%s", err.msg);
  CHECK(n_touch_calls == 1);
  const float *pa = A->data, *pb = B->data;
  for (int i = 0; i < 4; i++) {
    float s = 0;
    for (int j = 0; j < 8; j++) s += pa[i * 8 + j];
    CHECK_MSG(pb[i] == 2 * (s + 1), "B[%d] = %g, want %g", i, pb[i], 2 * (s + 1));
  }
  mlc_array_free(A);
  mlc_array_free(B);
out:
  mlc_arena_free(a);
}

static void test_interp_unregistered(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char *src =
      "@T.prim_func\ndef main(B: T.Buffer((4,), \"float32\")):\n"
      "    T.call_extern(\"int32\", \"nobody_registered_this\", B.access_ptr(\"w\"))\n";
  mlc_prim_func *f = parse_one(a, src, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (f) {
    mlc_array *B = mlc_array_for_buffer(f->params[0]);
    CHECK(!mlc_interp_run(f, B, &err));
    CHECK_MSG(strstr(err.msg, "no function \"nobody_registered_this\" is registered"), "%s", err.msg);
    mlc_array_free(B);
  }
  mlc_arena_free(a);
}

/* Compile, load with the functions defined for the JIT, compare every
 * parameter with the interpreter on the same inputs. */
static void check_compiled(const char *src, const char *name) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_prim_func *f = parse_one(a, src, &err);
  CHECK_MSG(f, "%s", err.msg);
  if (!f) goto out;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
  mlc_target t;
  CHECK(mlc_target_parse("llvm", &t, &err));
  mlc_object obj;
  mlc_str ir = {0};
  if (!mlc_target_build(&t, 1, (const mlc_prim_func *const *)&f, NULL, &ir, &obj, &err)) {
    CHECK_MSG(false, "%s: build: %s", name, err.msg);
    goto out;
  }
  CHECK(mlc_jit_define_symbol("row_sum", (void *)row_sum, &err));
  CHECK(mlc_jit_define_symbol("touch", (void *)touch, &err));
  CHECK(mlc_jit_define_symbol("scale3", (void *)scale3, &err));
  CHECK(mlc_jit_define_symbol("touch", (void *)touch, &err)); /* again: same address is fine */
  CHECK(!mlc_jit_define_symbol("touch", (void *)row_sum, &err));
  mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, f->name, &err) : NULL;
  CHECK_MSG(fn, "%s: load: %s", name, err.msg);
  if (fn) {
    int np = f->n_params;
    mlc_array got[4], want[4];
    for (int i = 0; i < np; i++) {
      mlc_array *g = mlc_array_for_buffer(f->params[i]), *w = mlc_array_for_buffer(f->params[i]);
      fill(g, 10 + (uint64_t)i);
      fill(w, 10 + (uint64_t)i);
      got[i] = *g, want[i] = *w;
      mlc_free(g), mlc_free(w);
    }
    CHECK_MSG(mlc_interp_run(f, want, &err), "%s", err.msg);
    CHECK(mlc_kernel_call(fn, np, got) == 0);
    for (int i = 0; i < np; i++) {
      double me;
      CHECK_MSG(mlc_array_allclose(&got[i], &want[i], 1e-5, 1e-5, &me), "%s: %s differs by %g", name,
                f->params[i]->name, me);
      mlc_free(got[i].data), mlc_free(want[i].data);
    }
  }
  /* The object declares the symbol for the final link. */
  CHECK_MSG(strstr(ir.data, "declare") && strstr(ir.data, name), "%s not declared in the IR", name);
  mlc_jit_unload(lib);
  mlc_object_free(&obj);
  mlc_str_free(&ir);
out:
  mlc_arena_free(a);
}

static void test_codegen(void) { check_compiled(ext_src, "@row_sum"); }

/* In a vectorized loop every lane calls the function once, even though
 * its arguments do not depend on the lane. */
static void test_codegen_vectorized(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char *src =
      "@T.prim_func\ndef main(B: T.Buffer((8,), \"float32\")):\n"
      "    for i in T.vectorized(8):\n        with T.block(\"v\"):\n"
      "            vi = T.axis.spatial(8, i)\n"
      "            B[vi] = T.call_extern(\"float32\", \"next_value\") + T.float32(1)\n";
  mlc_prim_func *f = parse_one(a, src, &err);
  CHECK_MSG(f, "%s", err.msg);
  mlc_target t;
  mlc_object obj;
  CHECK(mlc_target_parse("llvm", &t, &err));
  if (f && mlc_target_build(&t, 1, (const mlc_prim_func *const *)&f, NULL, NULL, &obj, &err)) {
    CHECK(mlc_jit_define_symbol("next_value", (void *)next_value, &err));
    mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, f->name, &err) : NULL;
    CHECK_MSG(fn, "%s", err.msg);
    if (fn) {
      mlc_array *B = mlc_array_for_buffer(f->params[0]);
      next_count = 0;
      CHECK(mlc_kernel_call(fn, 1, B) == 0);
      CHECK_MSG(next_count == 8, "called %d times", next_count);
      const float *b = B->data;
      for (int i = 0; i < 8; i++) CHECK_MSG(b[i] == (float)(i + 1), "B[%d] = %g", i, b[i]);
      mlc_array_free(B);
    }
    mlc_jit_unload(lib);
    mlc_object_free(&obj);
  } else if (f) {
    CHECK_MSG(0, "build: %s", err.msg);
  }
  mlc_arena_free(a);
}
static void test_codegen_compacted(void) { check_compiled(compact_src, "i32 4, i32 16, i32 16)"); }

int main(void) {
  register_all();
  RUN(test_round_trip);
  RUN(test_hash_distinguishes);
  RUN(test_parse_errors);
  RUN(test_verify_errors);
  RUN(test_inferred_regions);
  RUN(test_interp);
  RUN(test_interp_unregistered);
  RUN(test_codegen);
  RUN(test_codegen_compacted);
  RUN(test_codegen_vectorized);
  mlc_jit_shutdown();
  return test_summary();
}
