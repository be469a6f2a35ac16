/* library_call (schedule/library.c): which blocks it takes (matmul, dense
 * with transposed weights, batch matmul, a fused dense+bias+relu, a
 * broadcast operand, an accumulating block without init) and which it
 * refuses with what reason (convolution, a max reduction, int8 operands,
 * a scheduled nest), leaving the state unchanged; the trace's JSON and
 * Python forms and replay; the result against the unscheduled kernel in
 * the interpreter (which runs mlc_rt_sgemm as a plain loop) and compiled
 * with LLVM through the JIT (which runs OpenBLAS). */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "targets/runtime/mlcrt.h"
#include "tasks/tasks.h"
#include "measure/measure.h"
#include "tests/test.h"

#include <stdlib.h>

static mlc_prim_func *task(mlc_arena *a, const char *name, const char *shape) {
  mlc_error err;
  const mlc_task_def *d = mlc_task_find(name);
  int64_t dims[MLC_TASK_MAX_DIMS];
  bool ok = d && mlc_task_parse_shape(d, shape, dims, &err);
  CHECK_MSG(ok, "%s %s: %s", name, shape, d ? err.msg : "unknown task");
  return ok ? mlc_task_build(a, d, dims) : NULL;
}

static mlc_prim_func *parse_one(mlc_arena *a, const char *src) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "t.py", src, &err);
  CHECK_MSG(m && m->n_funcs == 1, "%s", m ? "not one function" : err.msg);
  return m && m->n_funcs == 1 ? m->funcs[0] : NULL;
}

/* get_block(name) + library_call; NULL (state freed) when refused, with
 * the message in err. */
static mlc_sched *offload(const mlc_prim_func *f, const char *block, mlc_error *err) {
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b;
  if (mlc_sched_get_block(s, block, NULL, &b, err) &&
      mlc_sched_library_call(s, b, "openblas", err))
    return s;
  mlc_sched_free(s);
  return NULL;
}

/* Seeded random inputs: every parameter but the last (the output), which
 * holds `out_fill` (an accumulating block adds to it). */
static void fill(const mlc_prim_func *f, mlc_array *args, float out_fill) {
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 7, 3);
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    if (i < f->n_params - 1) mlc_array_fill_random(x, &r);
    else
      for (int64_t e = 0; e < mlc_buffer_numel(f->params[i]); e++) ((float *)x->data)[e] = out_fill;
    args[i] = *x;
    mlc_free(x);
  }
}

static void free_args(int n, mlc_array *args) {
  for (int i = 0; i < n; i++) mlc_free(args[i].data);
}

/* Output of f (interpreter) vs output of g: interpreter and compiled. */
static void check_numerics(const mlc_prim_func *f, const mlc_prim_func *g, float out_fill,
                           const char *what) {
  mlc_error err;
  int n = f->n_params;
  mlc_array want[8], got[8];
  fill(f, want, out_fill);
  CHECK_MSG(mlc_interp_run(f, want, &err), "%s: %s", what, err.msg);
  fill(g, got, out_fill);
  CHECK_MSG(mlc_interp_run(g, got, &err), "%s: interpreter: %s", what, err.msg);
  double me;
  CHECK_MSG(mlc_check_close(&got[n - 1], &want[n - 1], 1e-4, 1e-5, &me),
            "%s: interpreter, library vs unscheduled: max error %g", what, me);
  free_args(n, got);
  mlc_target t;
  mlc_object obj = {0};
  CHECK(mlc_target_parse("llvm", &t, &err));
  bool built = mlc_target_build(&t, 1, &g, NULL, NULL, &obj, &err);
  CHECK_MSG(built, "%s: %s", what, err.msg);
  mlc_jit_lib *lib = built ? mlc_jit_load(&obj, &err) : NULL;
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, g->name, &err) : NULL;
  CHECK_MSG(!built || fn, "%s: %s", what, err.msg);
  if (fn) {
    fill(g, got, out_fill);
    CHECK(mlc_kernel_call(fn, n, got) == 0);
    CHECK_MSG(mlc_check_close(&got[n - 1], &want[n - 1], 1e-4, 1e-5, &me),
              "%s: compiled (OpenBLAS: %s) vs unscheduled: max error %g", what,
              mlc_rt_blas_error(), me);
    free_args(n, got);
  }
  mlc_jit_unload(lib);
  if (built) mlc_object_free(&obj);
  free_args(n, want);
}

static bool printed_has(const mlc_prim_func *f, const char *needle) {
  mlc_str p = {0};
  mlc_print_func(&p, f);
  bool ok = p.data && strstr(p.data, needle);
  if (!ok) fprintf(stderr, "--- expected %s in:\n%s\n", needle, p.data ? p.data : "");
  mlc_str_free(&p);
  return ok;
}

/* ---- what it takes ---------------------------------------------------------------- */

static void test_matmul(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "48,40,24");
  mlc_error err;
  mlc_sched *s = f ? offload(f, "C", &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    const mlc_prim_func *g = mlc_sched_func(s);
    CHECK(printed_has(g, "T.call_extern(\"int32\", \"mlc_rt_sgemm\", 0, 0, 48, 40, 24, "
                         "T.access_ptr(A[0:48, 0:24], \"r\"), A.strides[0], "
                         "T.access_ptr(B[0:24, 0:40], \"r\"), B.strides[0], "
                         "T.access_ptr(C[0:48, 0:40], \"w\"), C.strides[0], 0)"));
    mlc_str p = {0};
    mlc_print_func(&p, g);
    CHECK_MSG(!strstr(p.data, "for "), "loops left:\n%s", p.data);
    mlc_str_free(&p);
    check_numerics(f, g, 0, "matmul");
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

static void test_dense_bias_relu(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "dense_bias_relu", "20,36,28");
  mlc_error err;
  mlc_sched *s = f ? offload(f, "Y", &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    const mlc_prim_func *g = mlc_sched_func(s);
    /* W is [N, K]: transposed B */
    CHECK(printed_has(g, "\"mlc_rt_sgemm\", 0, 1, 20, 36, 28, T.access_ptr(X[0:20, 0:28], \"r\")"));
    CHECK(printed_has(g, "T.access_ptr(W[0:36, 0:28], \"r\")"));
    CHECK(printed_has(g, "with T.block(\"Z\")")); /* the epilogue stays */
    check_numerics(f, g, 0, "dense_bias_relu");
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

static void test_batch_matmul(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "batch_matmul", "3,16,12,8");
  mlc_error err;
  mlc_sched *s = f ? offload(f, "C", &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    const mlc_prim_func *g = mlc_sched_func(s);
    CHECK(printed_has(g, "for b in range(3):"));
    CHECK(printed_has(g, "T.access_ptr(A[vb, 0:16, 0:8], \"r\"), A.strides[1]"));
    CHECK(printed_has(g, "T.access_ptr(C[vb, 0:16, 0:12], \"w\"), C.strides[1], 0)"));
    check_numerics(f, g, 0, "batch_matmul");
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* A transposed, B shared by every batch, the batch loop inside i, no
 * init (C accumulates): trans_a, a 2-D B region, "rw" and accumulate. */
static const char *const odd_src =
    "@T.prim_func\n"
    "def main(A: T.Buffer((2, 8, 6), \"float32\"), B: T.Buffer((8, 5), \"float32\"), "
    "C: T.Buffer((2, 6, 5), \"float32\")):\n"
    "    for i, b, j, k in T.grid(6, 2, 5, 8):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vb, vj, vk = T.axis.remap(\"SSSR\", [i, b, j, k])\n"
    "            C[vb, vi, vj] = C[vb, vi, vj] + B[vk, vj] * A[vb, vk, vi]\n";

static void test_transposed_broadcast_accumulate(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_one(a, odd_src);
  mlc_error err;
  mlc_sched *s = f ? offload(f, "C", &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    const mlc_prim_func *g = mlc_sched_func(s);
    CHECK(printed_has(g, "\"mlc_rt_sgemm\", 1, 0, 6, 5, 8, T.access_ptr(A[vb, 0:8, 0:6], \"r\"), "
                         "A.strides[1], T.access_ptr(B[0:8, 0:5], \"r\"), B.strides[0], "
                         "T.access_ptr(C[vb, 0:6, 0:5], \"rw\"), C.strides[1], 1)"));
    check_numerics(f, g, 0.5f, "transposed A, broadcast B, accumulate");
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* A and B are one buffer, read over different regions. */
static void test_same_buffer(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_one(a,
      "@T.prim_func\n"
      "def main(X: T.Buffer((8, 8), \"float32\"), C: T.Buffer((6, 8), \"float32\")):\n"
      "    for i, j, k in T.grid(6, 8, 8):\n"
      "        with T.block(\"C\"):\n"
      "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
      "            with T.init():\n"
      "                C[vi, vj] = T.float32(0)\n"
      "            C[vi, vj] = C[vi, vj] + X[vi, vk] * X[vk, vj]\n");
  mlc_error err;
  mlc_sched *s = f ? offload(f, "C", &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    const mlc_prim_func *g = mlc_sched_func(s);
    CHECK(printed_has(g, "T.reads(X[0:8, 0:8])"));
    CHECK(printed_has(g, "T.access_ptr(X[0:6, 0:8], \"r\"), X.strides[0], T.access_ptr(X[0:8, 0:8], \"r\")"));
    check_numerics(f, g, 0, "X @ X");
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* ---- what it refuses ---------------------------------------------------------------- */

/* library_call on `block` is refused with a message containing `why`, and
 * the state (IR, trace) is as before. */
static void refused(const mlc_prim_func *f, const char *block, const char *lib, const char *why) {
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  mlc_rv b;
  CHECK_MSG(mlc_sched_get_block(s, block, NULL, &b, &err), "%s", err.msg);
  mlc_str before = {0}, after = {0};
  mlc_print_func(&before, mlc_sched_func(s));
  int n_insts = mlc_sched_trace(s)->insts.len;
  err.msg[0] = 0;
  CHECK_MSG(!mlc_sched_library_call(s, b, lib, &err), "%s: accepted", block);
  CHECK_MSG(strstr(err.msg, why), "%s: message \"%s\" lacks \"%s\"", block, err.msg, why);
  mlc_print_func(&after, mlc_sched_func(s));
  CHECK_STREQ(before.data, after.data);
  CHECK(mlc_sched_trace(s)->insts.len == n_insts);
  mlc_str_free(&before);
  mlc_str_free(&after);
  mlc_sched_free(s);
}

static void test_refuse_conv(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "conv2d_nchw", "1,4,8,8,4,3,3");
  if (f) refused(f, "conv2d_nchw", "openblas", "has 3 reduction iterators, a matrix product one");
  if (f) refused(f, "pad_temp", "openblas", "not compute C[...] = C[...] + A[...] * B[...]");
  mlc_arena_free(a);
}

static void test_refuse_max_reduction(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_one(a,
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\"), "
      "C: T.Buffer((8, 8), \"float32\")):\n"
      "    for i, j, k in T.grid(8, 8, 8):\n"
      "        with T.block(\"C\"):\n"
      "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
      "            with T.init():\n"
      "                C[vi, vj] = T.float32(0)\n"
      "            C[vi, vj] = T.max(C[vi, vj], A[vi, vk] * B[vk, vj])\n");
  if (f) refused(f, "C", "openblas", "does not compute C[...] = C[...] + A[...] * B[...]");
  mlc_arena_free(a);
}

static void test_refuse_dtype(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_one(a,
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 8), \"int8\"), B: T.Buffer((8, 8), \"int8\"), "
      "C: T.Buffer((8, 8), \"int32\")):\n"
      "    for i, j, k in T.grid(8, 8, 8):\n"
      "        with T.block(\"C\"):\n"
      "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
      "            with T.init():\n"
      "                C[vi, vj] = 0\n"
      "            C[vi, vj] = C[vi, vj] + T.Cast(\"int32\", A[vi, vk]) * T.Cast(\"int32\", B[vk, vj])\n");
  if (f) refused(f, "C", "openblas", "dtype mismatch");
  mlc_arena_free(a);
}

static void test_refuse_scheduled_and_unknown(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  if (f) {
    refused(f, "C", "mkl", "unknown library \"mkl\"");
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    mlc_rv b, *loops, parts[2];
    mlc_operand fs[2] = {MLC_OP_INT(4), MLC_OP_INT(4)};
    bool ok = mlc_sched_get_block(s, "C", NULL, &b, &err) &&
              mlc_sched_get_loops(s, b, &loops, &err) == 3 &&
              mlc_sched_split(s, loops[0], 2, fs, true, parts, &err);
    CHECK_MSG(ok, "%s", err.msg);
    mlc_str before = {0};
    mlc_print_func(&before, mlc_sched_func(s));
    CHECK(ok && !mlc_sched_library_call(s, b, "openblas", &err));
    CHECK_MSG(strstr(err.msg, "not one per iterator"), "%s", err.msg);
    mlc_str after = {0};
    mlc_print_func(&after, mlc_sched_func(s));
    CHECK_STREQ(before.data, after.data);
    mlc_str_free(&before), mlc_str_free(&after);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* ---- traces ----------------------------------------------------------------------------- */

static void test_trace_round_trip(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "dense_bias_relu", "16,24,8");
  mlc_error err;
  mlc_sched *s = f ? offload(f, "Y", &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    mlc_str js = {0}, py = {0}, js2 = {0};
    mlc_trace_to_json(&js, mlc_sched_trace(s));
    CHECK_STREQ(js.data, "{\"insts\":[[\"GetBlock\",[],{\"name\":\"Y\",\"func_name\":\"main\"},"
                         "[\"b0\"]],[\"LibraryCall\",[\"b0\"],{\"library\":\"openblas\"},[]]],"
                         "\"decisions\":{},\"version\":1}");
    mlc_trace_print(&py, mlc_sched_trace(s));
    CHECK_MSG(strstr(py.data, "sch.library_call(block=b0, library=\"openblas\")"), "%s", py.data);
    mlc_trace *t = mlc_trace_from_json(a, js.data, js.len, &err);
    CHECK_MSG(t, "%s", err.msg);
    if (t) {
      mlc_trace_to_json(&js2, t);
      CHECK_STREQ(js.data, js2.data);
      mlc_sched *r = mlc_sched_new(f, 99);
      CHECK_MSG(mlc_sched_replay(r, t, NULL, NULL, &err), "%s", err.msg);
      CHECK(mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)));
      char h1[17], h2[17];
      mlc_func_hash_hex(mlc_sched_func(r), h1);
      mlc_func_hash_hex(mlc_sched_func(s), h2);
      CHECK_STREQ(h1, h2);
      mlc_sched_free(r);
      /* replay on a kernel it does not fit fails with the reason */
      mlc_prim_func *add = parse_one(a,
          "@T.prim_func\n"
          "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\")):\n"
          "    for i, j in T.grid(8, 8):\n"
          "        with T.block(\"Y\"):\n"
          "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
          "            B[vi, vj] = A[vi, vj] + T.float32(1)\n");
      if (add) {
        mlc_sched *q = mlc_sched_new(add, 1);
        CHECK(!mlc_sched_replay(q, t, NULL, NULL, &err));
        CHECK_MSG(strstr(err.msg, "replay: instruction 1 (LibraryCall): library_call: b0 (block Y) "
                                  "with openblas: block Y does not compute"), "%s", err.msg);
        mlc_sched_free(q);
      }
    }
    mlc_str_free(&js), mlc_str_free(&py), mlc_str_free(&js2);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* Without OpenBLAS, a call fills C with NaN and says why. */
static void test_missing_library_message(void) {
  /* mlc_rt_blas_error finds the library once per process: here it must
   * already have found it (the numerics above ran) or say why not. */
  const char *e = mlc_rt_blas_error();
  CHECK_MSG(e[0] == 0, "OpenBLAS not found: %s", e);
}

int main(void) {
  RUN(test_matmul);
  RUN(test_dense_bias_relu);
  RUN(test_batch_matmul);
  RUN(test_transposed_broadcast_accumulate);
  RUN(test_same_buffer);
  RUN(test_refuse_conv);
  RUN(test_refuse_max_reduction);
  RUN(test_refuse_dtype);
  RUN(test_refuse_scheduled_and_unknown);
  RUN(test_trace_round_trip);
  RUN(test_missing_library_message);
  return test_summary();
}
