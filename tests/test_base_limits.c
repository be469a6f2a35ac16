/* Limits on integers and sizes that come from input: trace factors whose
 * product wraps around, schedules nested past what the state and the
 * printer/parser handle, and shapes that would allocate gigabytes. Each is
 * refused with a message (never an abort or a wrong kernel), and a refused
 * primitive leaves the state as it was. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "schedule/schedule.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>

#define HDR "# from tvm.script import tir as T\n"

static const char *SCALE64 = HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for i in range(64):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(64, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n";

static mlc_prim_func *parse_in(mlc_arena *a, const char *text) {
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(a, "test.py", text, &err);
  if (!m) {
    fprintf(stderr, "parse error: %s\n", err.msg);
    return NULL;
  }
  return m->funcs[0];
}

/* Replays json on a fresh state of text; false with err set if refused. */
static bool replay_json(const char *text, const char *json, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_in(a, text);
  MLC_ASSERT(f);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), err);
  bool ok = t && mlc_sched_replay(s, t, NULL, NULL, err);
  mlc_sched_free(s);
  mlc_arena_free(a);
  return ok;
}

/* ---- item 1: checked arithmetic ------------------------------------------------- */

static void test_checked_helpers(void) {
  int64_t r;
  CHECK(!mlc_add_overflow(INT64_MAX - 1, 1, &r) && r == INT64_MAX);
  CHECK(mlc_add_overflow(INT64_MAX, 1, &r));
  CHECK(mlc_sub_overflow(INT64_MIN, 1, &r));
  CHECK(!mlc_mul_overflow(INT64_C(1) << 31, INT64_C(1) << 31, &r) && r == INT64_C(1) << 62);
  CHECK(mlc_mul_overflow(INT64_C(4611686018427387908), 16, &r));
  int64_t v[4] = {INT64_C(4611686018427387908), 4, 16, 16};
  CHECK(mlc_prod_overflow(v, 4, &r));
  CHECK(!mlc_prod_overflow(v + 1, 3, &r) && r == 1024);
  CHECK(!mlc_prod_overflow(v, 0, &r) && r == 1);
}

/* The record: (2^62 + 4) * 16 wraps to exactly 64, the extent, so
 * replay used to "succeed" with a 2^62-trip loop and a constant binding. */
static void test_split_wrapping_factors_refused(void) {
  mlc_error err = {{0}};
  const char *json =
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
      "[\"GetLoops\",[\"b0\"],{},[\"l1\"]],"
      "[\"Split\",[\"l1\",4611686018427387908,16],{\"preserve_unit_iters\":true},"
      "[\"l2\",\"l3\"]]]}";
  CHECK(!replay_json(SCALE64, json, &err));
  CHECK_MSG(strstr(err.msg, "Split") && strstr(err.msg, "loop i") &&
                strstr(err.msg, "4611686018427387908") && strstr(err.msg, "multiply to more"),
            "message: %s", err.msg);
  /* Four factors, as in the T.grid(4611686018427387908, 4, 16, 16). */
  const char *json4 =
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
      "[\"GetLoops\",[\"b0\"],{},[\"l1\"]],"
      "[\"Split\",[\"l1\",4611686018427387908,4,16,16],{\"preserve_unit_iters\":true},"
      "[\"l2\",\"l3\",\"l4\",\"l5\"]]]}";
  err.msg[0] = 0;
  CHECK(!replay_json(SCALE64, json4, &err));
  CHECK_MSG(strstr(err.msg, "multiply to more"), "message: %s", err.msg);
}

/* Refused directly: the state (IR, trace, handles) is as it was. */
static void test_split_overflow_leaves_state(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_sched *s = mlc_sched_new(parse_in(a, SCALE64), 1);
  mlc_error err = {{0}};
  mlc_rv b, *l, out[4];
  MLC_ASSERT(mlc_sched_get_block(s, "B", NULL, &b, &err) && mlc_sched_get_loops(s, b, &l, &err) == 1);
  mlc_rv loop = l[0];
  char *ir0 = print_func(mlc_sched_func(s)), *tr0 = trace_json(s);
  int n0 = mlc_sched_n_rvs(s);
  mlc_operand f2[2] = {MLC_OP_INT(INT64_C(4611686018427387908)), MLC_OP_INT(16)};
  CHECK(!mlc_sched_split(s, loop, 2, f2, true, out, &err));
  /* Inferred factor: ceil(64 / p) * p must not wrap either. */
  mlc_operand f3[2] = {MLC_OP_NONE, MLC_OP_INT(INT64_MAX - 10)};
  CHECK(!mlc_sched_split(s, loop, 2, f3, true, out, &err));
  CHECK_MSG(strstr(err.msg, "None") != NULL, "message: %s", err.msg);
  /* No wrap, but more than the int32 loop variable holds. */
  mlc_operand f4[2] = {MLC_OP_INT(INT64_C(1) << 31), MLC_OP_INT(1)};
  CHECK(!mlc_sched_split(s, loop, 2, f4, true, out, &err));
  CHECK_MSG(strstr(err.msg, "32-bit") && strstr(err.msg, "loop i"), "message: %s", err.msg);
  char *ir1 = print_func(mlc_sched_func(s)), *tr1 = trace_json(s);
  CHECK_STREQ(ir0, ir1);
  CHECK_STREQ(tr0, tr1);
  CHECK(n0 == mlc_sched_n_rvs(s));
  mlc_free(ir0), mlc_free(ir1), mlc_free(tr0), mlc_free(tr1);
  mlc_sched_free(s);
  mlc_arena_free(a);
}


/* ---- item 3: deep nests ---------------------------------------------------------- */

/* A trace of n splits, each splitting the inner loop of the previous one:
 * the nest deepens by one per split. */
static char *chained_splits_p(int n, bool preserve) {
  mlc_str o = {0};
  mlc_str_puts(&o, "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
                   "[\"GetLoops\",[\"b0\"],{},[\"l1\"]]");
  for (int k = 0, cur = 1, next = 2; k < n; k++, cur = next + 1, next += 2)
    mlc_str_printf(&o, ",[\"Split\",[\"l%d\",1,null],{\"preserve_unit_iters\":%s},[\"l%d\",\"l%d\"]]",
                   cur, preserve ? "true" : "false", next, next + 1);
  mlc_str_puts(&o, "]}");
  return mlc_str_take(&o);
}
static char *chained_splits(int n) { return chained_splits_p(n, true); }

/* Used to abort (exit 134) on the walker's depth assertion. */
static void test_254_splits_refused(void) {
  char *json = chained_splits(254);
  mlc_error err = {{0}};
  CHECK(!replay_json(SCALE64, json, &err));
  CHECK_MSG(strstr(err.msg, "Split") && strstr(err.msg, "statements deep") &&
                strstr(err.msg, "200"),
            "message: %s", err.msg);
  mlc_free(json);
}

/* The deepest nest split allows prints as TVMScript that parses back to
 * the same function, and computes the same; one more split is refused. */
static void test_nest_at_limit_round_trips(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_in(a, SCALE64);
  mlc_sched *s = mlc_sched_new(f, 1);
  /* root realize + loops + block realize + store: 196 splits give 200. */
  char *json = chained_splits(196);
  mlc_error err = {{0}};
  mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), &err);
  CHECK_MSG(t && mlc_sched_replay(s, t, NULL, NULL, &err), "replay: %s", err.msg);
  char *text = print_func(mlc_sched_func(s));
  mlc_module *m = mlc_parse_module(a, "printed.py", text, &err);
  CHECK_MSG(m != NULL, "printed nest does not parse: %s", err.msg);
  if (m) CHECK(mlc_func_struct_equal(m->funcs[0], mlc_sched_func(s)));
  if (m) CHECK(mlc_verify_func(m->funcs[0], &err));
  /* Same results as the unscheduled function. */
  mlc_array *x = mlc_array_for_buffer(f->params[0]), *y0 = mlc_array_for_buffer(f->params[1]),
            *y1 = mlc_array_for_buffer(f->params[1]);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  mlc_array_fill_random(x, &rng);
  mlc_array a0[2] = {*x, *y0}, a1[2] = {*x, *y1};
  CHECK(mlc_interp_run(f, a0, &err));
  CHECK_MSG(m && mlc_interp_run(m->funcs[0], a1, &err), "run: %s", err.msg);
  CHECK(mlc_array_allclose(y0, y1, 0, 0, NULL));
  /* One more level is refused, and leaves the state as it was. */
  mlc_rv b, *l, out[2];
  int n0 = mlc_sched_n_rvs(s);
  CHECK(mlc_sched_get_block(s, "B", NULL, &b, &err));
  int nl = mlc_sched_get_loops(s, b, &l, &err);
  CHECK(nl == 197);
  char *before = print_func(mlc_sched_func(s)), *tr0 = trace_json(s);
  mlc_operand fs[2] = {MLC_OP_INT(1), MLC_OP_NONE};
  CHECK(nl > 0 && !mlc_sched_split(s, l[nl - 1], 2, fs, true, out, &err));
  CHECK_MSG(strstr(err.msg, "split") && strstr(err.msg, "201 statements deep"), "message: %s",
            err.msg);
  char *after = print_func(mlc_sched_func(s)), *tr1 = trace_json(s);
  CHECK_STREQ(before, after);
  CHECK_STREQ(tr0, tr1);
  CHECK(mlc_sched_n_rvs(s) == n0 + 1 + nl);
  mlc_free(before), mlc_free(after), mlc_free(tr0), mlc_free(tr1), mlc_free(text), mlc_free(json);
  mlc_array_free(x), mlc_array_free(y0), mlc_array_free(y1);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* Primitives other than split may still take a function at the limit one
 * level past it (blockize adds a block level); replay stops such a record
 * there, so a replayed function always prints as parsable TVMScript. */
static void test_replay_stops_past_limit(void) {
  char *json = chained_splits_p(196, false);
  mlc_str t = {0};
  mlc_str_putn(&t, json, strlen(json) - 2); /* drop "]}" */
  mlc_str_puts(&t, ",[\"Blockize\",[\"l393\"],{\"preserve_unit_iters\":true},[\"b394\"]]]}");
  mlc_error err = {{0}};
  CHECK(!replay_json(SCALE64, mlc_str_cstr(&t), &err));
  CHECK_MSG(strstr(err.msg, "instruction 198 (Blockize)") && strstr(err.msg, "201 statements deep"),
            "message: %s", err.msg);
  /* One split fewer leaves room for the block level. */
  mlc_free(json);
  mlc_str_clear(&t);
  json = chained_splits_p(195, false);
  mlc_str_putn(&t, json, strlen(json) - 2);
  mlc_str_puts(&t, ",[\"Blockize\",[\"l391\"],{\"preserve_unit_iters\":true},[\"b392\"]]]}");
  CHECK_MSG(replay_json(SCALE64, mlc_str_cstr(&t), &err), "%s", err.msg);
  mlc_str_free(&t);
  mlc_free(json);
}

/* A function nested deeper than schedules work on (253 loops, the deepest
 * T.grid that parses) is refused by the primitives with a message; its
 * cache_write used to abort on the walkers' depth assertion (exit 134). */
static void test_deep_function_refused(void) {
  mlc_str src = {0};
  mlc_str_puts(&src, HDR "@T.prim_func\n"
                         "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
                         "    for i, ");
  for (int k = 0; k < 252; k++) mlc_str_printf(&src, "%sj%d", k ? ", " : "", k);
  mlc_str_puts(&src, " in T.grid(64");
  for (int k = 0; k < 252; k++) mlc_str_puts(&src, ", 1");
  mlc_str_puts(&src, "):\n"
                     "        with T.block(\"B\"):\n"
                     "            vi = T.axis.spatial(64, i)\n"
                     "            B[vi] = A[vi] * T.float32(2)\n");
  mlc_arena *a = mlc_arena_new();
  mlc_sched *s = mlc_sched_new(parse_in(a, mlc_str_cstr(&src)), 1);
  mlc_error err = {{0}};
  mlc_rv b, out;
  CHECK(mlc_sched_get_block(s, "B", NULL, &b, &err));
  char *ir0 = print_func(mlc_sched_func(s));
  CHECK(!mlc_sched_cache_write(s, b, 0, "local", 0, NULL, &out, &err));
  CHECK_MSG(strstr(err.msg, "cache_write") && strstr(err.msg, "block B") &&
                strstr(err.msg, "256 statements deep"),
            "message: %s", err.msg);
  char *ir1 = print_func(mlc_sched_func(s));
  CHECK_STREQ(ir0, ir1);
  mlc_free(ir0), mlc_free(ir1);
  mlc_sched_free(s);
  mlc_arena_free(a);
  /* A record replayed on it stops at its first instruction. */
  const char *json =
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
      "[\"CacheWrite\",[\"b0\"],{\"write_buffer_index\":0,\"storage_scope\":\"local\"},[\"b1\"]]]}";
  CHECK(!replay_json(mlc_str_cstr(&src), json, &err));
  CHECK_MSG(strstr(err.msg, "instruction 0") && strstr(err.msg, "256 statements deep"), "message: %s",
            err.msg);
  mlc_str_free(&src);
}

/* ---- item 1 (continued): fuse and parsed ranges ------------------------------------ */

/* 65536 * 65536 does not wrap int64 but does not fit the int32 loop
 * variable: the fused loop used to print as range(4294967296). */
static void test_fuse_extent_product_refused(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_in(a, HDR
                              "@T.prim_func\n"
                              "def main(A: T.Buffer((65536, 65536), \"float32\"), B: T.Buffer((65536, 65536), \"float32\")):\n"
                              "    for i, j in T.grid(65536, 65536):\n"
                              "        with T.block(\"B\"):\n"
                              "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                              "            B[vi, vj] = A[vi, vj] * T.float32(2)\n");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err = {{0}};
  mlc_rv b, *l, out;
  MLC_ASSERT(mlc_sched_get_block(s, "B", NULL, &b, &err) && mlc_sched_get_loops(s, b, &l, &err) == 2);
  char *ir0 = print_func(mlc_sched_func(s));
  CHECK(!mlc_sched_fuse(s, 2, l, true, &out, &err));
  CHECK_MSG(strstr(err.msg, "fuse") && strstr(err.msg, "loop i") && strstr(err.msg, "4294967296") &&
                strstr(err.msg, "32-bit"),
            "message: %s", err.msg);
  char *ir1 = print_func(mlc_sched_func(s));
  CHECK_STREQ(ir0, ir1);
  mlc_free(ir0), mlc_free(ir1);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static void test_parse_range_overflow_refused(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err = {{0}};
  const char *text = HDR "@T.prim_func\n"
                         "def main(B: T.Buffer((64,), \"float32\")):\n"
                         "    for i in range(-2147483648, 2147483647):\n"
                         "        with T.block(\"B\"):\n"
                         "            vi = T.axis.spatial(64, 0)\n"
                         "            B[vi] = T.float32(1)\n";
  CHECK(!mlc_parse_module(a, "r.py", text, &err));
  CHECK_MSG(strstr(err.msg, "r.py:4:") && strstr(err.msg, "range too large") &&
                strstr(err.msg, "int32"),
            "message: %s", err.msg);
  mlc_arena_free(a);
}

/* ---- item 5: sizes from input ------------------------------------------------------ */

/* The largest single allocation while a hook is installed. */
static size_t biggest_alloc;
static void *measuring_alloc(void *ud, void *ptr, size_t n) {
  if (n > biggest_alloc) biggest_alloc = n;
  return mlc_default_alloc(ud, ptr, n);
}
static void measure_begin(void) {
  biggest_alloc = 0;
  mlc_set_allocator(measuring_alloc, NULL);
}
static size_t measure_end(void) {
  mlc_set_allocator(NULL, NULL);
  return biggest_alloc;
}
#define SMALL_ALLOC ((size_t)64 << 20) /* nothing near gigabytes */

static void test_tensor_limit(void) {
  mlc_error err = {{0}};
  int64_t ok[2] = {INT64_C(1) << 21, 1024}; /* 2^31 float32: exactly 8 GiB */
  CHECK(mlc_tensor_numel_checked("t", ok, 2, 4, &err) == INT64_C(1) << 31);
  CHECK(mlc_tensor_numel_checked("t", ok, 2, 8, &err) < 0); /* 16 GiB */
  int64_t over[2] = {INT64_C(2147483648), 784};
  CHECK(mlc_tensor_numel_checked("weight w", over, 2, 4, &err) < 0);
  CHECK_MSG(strstr(err.msg, "weight w has shape [2147483648, 784]: over the limit"), "%s", err.msg);
  int64_t wraps[3] = {INT64_C(1) << 32, INT64_C(1) << 32, 16}; /* product wraps to 0 */
  CHECK(mlc_tensor_numel_checked("t", wraps, 3, 1, &err) < 0);
  int64_t empty[3] = {INT64_C(1) << 40, 0, INT64_C(1) << 40};
  CHECK(mlc_tensor_numel_checked("t", empty, 3, 4, &err) == 0);
  int64_t neg[1] = {-1};
  CHECK(mlc_tensor_numel_checked("t", neg, 1, 4, &err) < 0 && strstr(err.msg, "negative"));
  /* Lowered for the process (the fuzz harnesses), then back to the default;
   * a limit above the default keeps the default. */
  int64_t mid[2] = {1024, 1024};
  mlc_set_tensor_limits(1000, 0);
  CHECK(mlc_tensor_numel_checked("t", mid, 2, 4, &err) < 0);
  CHECK_MSG(strstr(err.msg, "over the limit of 1000 elements and 8589934592 bytes set for this process"),
            "%s", err.msg);
  mlc_set_tensor_limits(0, 1 << 20);
  CHECK(mlc_tensor_numel_checked("t", mid, 2, 4, &err) < 0); /* 4 MiB */
  CHECK(mlc_tensor_numel_checked("t", mid, 2, 1, &err) == 1 << 20);
  mlc_set_tensor_limits(INT64_MAX, INT64_MAX);
  CHECK(mlc_tensor_numel_checked("t", ok, 2, 8, &err) < 0);
  mlc_set_tensor_limits(0, 0);
  CHECK(mlc_tensor_numel_checked("t", ok, 2, 4, &err) == INT64_C(1) << 31);
}

static void test_model_shape_refused_before_alloc(void) {
  const char *json =
      "{\"inputs\": [{\"name\": \"x\", \"shape\": [2147483648, 784]}], \"weights\": [], "
      "\"nodes\": [{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}], \"outputs\": [\"a\"]}";
  mlc_error err = {{0}};
  measure_begin();
  mlc_gmodule *m = mlc_graph_parse("m.json", json, strlen(json), NULL, &err);
  size_t big = measure_end();
  CHECK(!m);
  CHECK_MSG(strstr(err.msg, "input 'x' has shape [2147483648, 784]: over the limit"), "%s", err.msg);
  CHECK_MSG(big < SMALL_ALLOC, "allocated %zu bytes", big);
  mlc_graph_free(m);
  /* A weight (seeded data would be allocated) and an inferred result. */
  const char *json_w =
      "{\"inputs\": [{\"name\": \"x\", \"shape\": [784]}], "
      "\"weights\": [{\"name\": \"w\", \"shape\": [2147483648, 784]}], "
      "\"nodes\": [{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}], \"outputs\": [\"a\"]}";
  measure_begin();
  m = mlc_graph_parse("m.json", json_w, strlen(json_w), NULL, &err);
  big = measure_end();
  CHECK(!m && strstr(err.msg, "weight 'w' has shape [2147483648, 784]"));
  CHECK_MSG(big < SMALL_ALLOC, "allocated %zu bytes", big);
  mlc_graph_free(m);
  const char *json_mm =
      "{\"inputs\": [{\"name\": \"x\", \"shape\": [65536, 1]}, {\"name\": \"y\", \"shape\": [1, 65536]}], "
      "\"weights\": [], \"nodes\": [{\"name\": \"a\", \"op\": \"matmul\", \"inputs\": [\"x\", \"y\"]}], "
      "\"outputs\": [\"a\"]}";
  measure_begin();
  m = mlc_graph_parse("m.json", json_mm, strlen(json_mm), NULL, &err);
  big = measure_end();
  CHECK_MSG(!m && strstr(err.msg, "node 'a': matmul: the result has shape [65536, 65536]"), "%s",
            err.msg);
  CHECK_MSG(big < SMALL_ALLOC, "allocated %zu bytes", big);
  mlc_graph_free(m);
}

/* An inferred shape past the limit is refused by inference itself, for
 * graphs built without the model reader too. */
static void test_infer_result_limit(void) {
  mlc_gattrs at;
  mlc_gattrs_init(MLC_GOP_ADD, &at);
  mlc_gtype a[2] = {{.dtype = MLC_FLOAT32, .ndim = 2, .shape = {65536, 1}},
                    {.dtype = MLC_FLOAT32, .ndim = 1, .shape = {65536}}}, out;
  mlc_error err = {{0}};
  CHECK(!mlc_gop_infer(MLC_GOP_ADD, &at, 2, a, &out, &err));
  CHECK_MSG(strstr(err.msg, "add: the result has shape [65536, 65536]: over the limit"), "%s",
            err.msg);
  a[0].shape[0] = 32768;
  CHECK(mlc_gop_infer(MLC_GOP_ADD, &at, 2, a, &out, &err)); /* 2^31 elements: allowed */
  /* Attributes are bounded before the window arithmetic can overflow. */
  mlc_gattrs_init(MLC_GOP_MAX_POOL2D, &at);
  at.kernel[0] = at.kernel[1] = 2;
  at.strides[0] = INT64_C(1) << 62;
  mlc_gtype x = {.dtype = MLC_FLOAT32, .ndim = 4, .shape = {1, 1, 4, 4}};
  CHECK(!mlc_gop_infer(MLC_GOP_MAX_POOL2D, &at, 1, &x, &out, &err));
  CHECK_MSG(strstr(err.msg, "max_pool2d") && strstr(err.msg, "at most 2^24"), "%s", err.msg);
}

static void test_npy_shape_refused_before_alloc(void) {
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 784), }";
  char buf[256];
  size_t n = strlen(dict);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)n, buf[9] = 0;
  memcpy(buf + 10, dict, n);
  mlc_gtype t;
  mlc_error err = {{0}};
  measure_begin();
  float *d = mlc_npy_parse("w.npy", buf, 10 + n, &t, &err);
  size_t big = measure_end();
  CHECK(!d);
  CHECK_MSG(strstr(err.msg, "w.npy: bad .npy header: the array has shape [2147483648, 784]"), "%s",
            err.msg);
  CHECK_MSG(big < SMALL_ALLOC, "allocated %zu bytes", big);
  mlc_free(d);
}

/* Parsed buffers: the interpreter and mlc-ir's run paths check the
 * function's sizes before allocating arguments or scratch buffers. */
static void test_parsed_buffer_sizes(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err = {{0}};
  mlc_prim_func *big_param = parse_in(a, HDR
                                      "@T.prim_func\n"
                                      "def main(A: T.Buffer((2147483648, 784), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
                                      "    for i in range(64):\n"
                                      "        with T.block(\"B\"):\n"
                                      "            vi = T.axis.spatial(64, i)\n"
                                      "            B[vi] = A[vi, 0]\n");
  CHECK(!mlc_func_check_sizes(big_param, &err));
  CHECK_MSG(strstr(err.msg, "main: buffer A has shape [2147483648, 784]: over the limit"), "%s",
            err.msg);
  mlc_prim_func *big_scratch = parse_in(a, HDR
                                        "@T.prim_func\n"
                                        "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
                                        "    C = T.alloc_buffer((65536, 65536, 4), \"float32\")\n"
                                        "    for i in range(64):\n"
                                        "        with T.block(\"C\"):\n"
                                        "            vi = T.axis.spatial(64, i)\n"
                                        "            C[vi, 0, 0] = A[vi]\n"
                                        "    for i in range(64):\n"
                                        "        with T.block(\"B\"):\n"
                                        "            vi = T.axis.spatial(64, i)\n"
                                        "            B[vi] = C[vi, 0, 0]\n");
  CHECK(!mlc_func_check_sizes(big_scratch, &err));
  CHECK_MSG(strstr(err.msg, "buffer C has shape [65536, 65536, 4]"), "%s", err.msg);
  /* The interpreter refuses the scratch buffer instead of allocating 64 GiB. */
  mlc_array *x = mlc_array_for_buffer(big_scratch->params[0]),
            *y = mlc_array_for_buffer(big_scratch->params[1]);
  mlc_array args[2] = {*x, *y};
  measure_begin();
  bool ran = mlc_interp_run(big_scratch, args, &err);
  size_t big = measure_end();
  CHECK(!ran);
  CHECK_MSG(strstr(err.msg, "buffer C has shape [65536, 65536, 4]: over the limit"), "%s", err.msg);
  CHECK_MSG(big < SMALL_ALLOC, "allocated %zu bytes", big);
  mlc_array_free(x), mlc_array_free(y);
  CHECK(mlc_func_check_sizes(parse_in(a, SCALE64), &err));
  mlc_arena_free(a);
}

static void test_array_try_new(void) {
  mlc_error err = {{0}};
  int64_t over[2] = {INT64_C(2147483648), 784};
  measure_begin();
  mlc_array *x = mlc_array_try_new(MLC_FLOAT32, 2, over, "input x", &err);
  size_t big = measure_end();
  CHECK(!x && strstr(err.msg, "input x has shape [2147483648, 784]: over the limit"));
  CHECK(big < SMALL_ALLOC);
  int64_t ok[2] = {3, 5};
  x = mlc_array_try_new(MLC_INT64, 2, ok, "y", &err);
  CHECK(x && x->ndim == 2 && x->shape[1] == 5 && mlc_array_numel(x) == 15);
  for (int i = 0; x && i < 15; i++) CHECK(((int64_t *)x->data)[i] == 0);
  mlc_array_free(x);
  CHECK(!mlc_array_try_new(MLC_FLOAT32, 9, ok, "z", &err) && strstr(err.msg, "9 dimensions"));
}

int main(void) {
  RUN(test_checked_helpers);
  RUN(test_split_wrapping_factors_refused);
  RUN(test_split_overflow_leaves_state);
  RUN(test_254_splits_refused);
  RUN(test_nest_at_limit_round_trips);
  RUN(test_replay_stops_past_limit);
  RUN(test_deep_function_refused);
  RUN(test_fuse_extent_product_refused);
  RUN(test_parse_range_overflow_refused);
  RUN(test_tensor_limit);
  RUN(test_model_shape_refused_before_alloc);
  RUN(test_infer_result_limit);
  RUN(test_npy_shape_refused_before_alloc);
  RUN(test_parsed_buffer_sizes);
  RUN(test_array_try_new);
  return test_summary();
}
