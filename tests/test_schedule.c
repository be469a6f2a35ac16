/* Schedule state, loop primitives, sampling and traces.
 *
 * Golden cases: a TVMScript function, primitives applied, and the expected
 * TVMScript written by hand from TensorIR's semantics; compared with
 * mlc_func_struct_equal. Refusals: each must fail with a specific message
 * and leave the printed IR, the trace and the handles as they were. */
#include "schedule/schedule.h"
#include "tasks/tasks.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static mlc_arena *TA; /* test arena: parsed inputs and expectations */

#define HDR "# from tvm.script import tir as T\n"

static mlc_prim_func *parse(const char *text) {
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(TA, "test.py", text, &err);
  if (!m) {
    fprintf(stderr, "parse error: %s\n", err.msg);
    return NULL;
  }
  return m->funcs[0];
}

/* The state's IR equals the expected TVMScript (structurally). */
static bool sched_equals(const mlc_sched *s, const char *expected) {
  mlc_prim_func *want = parse(expected);
  if (!want) return false;
  bool eq = mlc_func_struct_equal(mlc_sched_func(s), want);
  if (!eq) {
    char *got = print_func(mlc_sched_func(s));
    char *w = print_func(want);
    fprintf(stderr, "---- got:\n%s---- expected:\n%s", got, w);
    mlc_free(got);
    mlc_free(w);
  }
  return eq;
}

/* ---- refusal checks ---------------------------------------------------------- */

typedef struct snapshot {
  char *ir, *json;
  int n_rvs;
} snapshot;

static snapshot snap(const mlc_sched *s) {
  return (snapshot){print_func(mlc_sched_func(s)), trace_json(s), mlc_sched_n_rvs(s)};
}

/* ok must be false, the message must contain `want`, the state unchanged. */
static void check_refused_(const char *file, int line, mlc_sched *s, snapshot before, bool ok,
                           const mlc_error *err, const char *want) {
  snapshot after = snap(s);
  if (ok) test_fail_(file, line, "accepted, expected refusal with \"%s\"", want);
  else if (!strstr(err->msg, want))
    test_fail_(file, line, "message \"%s\" lacks \"%s\"", err->msg, want);
  if (strcmp(before.ir, after.ir) != 0) test_fail_(file, line, "IR changed by a refusal");
  if (strcmp(before.json, after.json) != 0) test_fail_(file, line, "trace changed by a refusal");
  if (before.n_rvs != after.n_rvs) test_fail_(file, line, "handles changed by a refusal");
  mlc_free(before.ir);
  mlc_free(before.json);
  mlc_free(after.ir);
  mlc_free(after.json);
}
#define REFUSED(s, call, want)                                                   \
  do {                                                                           \
    mlc_error e_ = {{0}};                                                        \
    snapshot b_ = snap(s);                                                       \
    mlc_error *err = &e_;                                                        \
    bool ok_ = (call);                                                           \
    check_refused_(__FILE__, __LINE__, s, b_, ok_, err, want);                   \
  } while (0)

#define OK(call)                                                     \
  do {                                                               \
    mlc_error e_ = {{0}};                                            \
    mlc_error *err = &e_;                                            \
    bool ok_ = (call);                                               \
    CHECK_MSG(ok_, "%s failed: %s", #call, e_.msg);                  \
  } while (0)

/* ---- inputs -------------------------------------------------------------------- */

static const char *MM_RELU =
    HDR
    "@T.prim_func\n"
    "def mm_relu(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"),\n"
    "            C: T.Buffer((128, 128), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"mm_relu\", \"tir.noalias\": True})\n"
    "    Y = T.alloc_buffer((128, 128))\n"
    "    for i, j, k in T.grid(128, 128, 128):\n"
    "        with T.block(\"Y\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(Y[vi, vj])\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(128, 128):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(Y[vi, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

/* The notes' result of split(j, [None, 4]) and reorder(j0, k, j1). */
static const char *MM_RELU_SPLIT_REORDER =
    HDR
    "@T.prim_func\n"
    "def mm_relu(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"),\n"
    "            C: T.Buffer((128, 128), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"mm_relu\", \"tir.noalias\": True})\n"
    "    Y = T.alloc_buffer((128, 128))\n"
    "    for i, j_0, k, j_1 in T.grid(128, 32, 128, 4):\n"
    "        with T.block(\"Y\"):\n"
    "            vi = T.axis.spatial(128, i)\n"
    "            vj = T.axis.spatial(128, j_0 * 4 + j_1)\n"
    "            vk = T.axis.reduce(128, k)\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(Y[vi, vj])\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(128, 128):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(Y[vi, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

/* A matmul "C" in "main", for the notes' stochastic_schedule_mm. */
static const char *MM =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"),\n"
    "         C: T.Buffer((128, 128), \"float32\")):\n"
    "    for i, j, k in T.grid(128, 128, 128):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static mlc_sched *sched_of(const char *text, uint64_t seed) {
  mlc_prim_func *f = parse(text);
  MLC_ASSERT(f);
  return mlc_sched_new(f, seed);
}

/* ---- state and getters ---------------------------------------------------------- */

static void test_get_block_loops(void) {
  mlc_sched *s = sched_of(MM_RELU, 1);
  mlc_rv y, *loops, *kids;
  OK(mlc_sched_get_block(s, "Y", "mm_relu", &y, err));
  CHECK(mlc_sched_rv_kind(s, y) == MLC_RV_BLOCK);
  CHECK_STREQ(mlc_sched_rv_block(s, y)->name, "Y");
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, y, &loops, &e) == 3);
  CHECK_STREQ(mlc_sched_rv_loop(s, loops[0])->loop.var->name, "i");
  CHECK_STREQ(mlc_sched_rv_loop(s, loops[2])->loop.var->name, "k");
  mlc_rv root;
  OK(mlc_sched_get_block(s, "root", NULL, &root, err));
  CHECK(mlc_sched_get_child_blocks(s, root, &kids, &e) == 2);
  CHECK_STREQ(mlc_sched_rv_block(s, kids[0])->name, "Y");
  CHECK_STREQ(mlc_sched_rv_block(s, kids[1])->name, "C");
  CHECK(mlc_sched_get_child_blocks(s, loops[1], &kids, &e) == 1);
  REFUSED(s, mlc_sched_get_block(s, "Z", "mm_relu", &root, err), "no block named \"Z\"");
  REFUSED(s, mlc_sched_get_block(s, "Y", "main", &root, err), "no function named \"main\"");
  REFUSED(s, mlc_sched_get_loops(s, loops[0], &kids, err) >= 0, "is a loop, expected a block");
  REFUSED(s, mlc_sched_get_loops(s, 999, &kids, err) >= 0, "handle 999 does not exist");
  REFUSED(s, mlc_sched_get_child_blocks(s, 999, &kids, err) >= 0, "is not a block or loop");
  mlc_sched_free(s);

  /* Two blocks with one name: ambiguous. */
  const char *dup = HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8,), \"float32\")):\n"
      "    for i in range(8):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(8, i)\n"
      "            A[vi] = T.float32(1)\n"
      "    for i in range(8):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(8, i)\n"
      "            A[vi] = A[vi] + T.float32(1)\n";
  s = sched_of(dup, 1);
  REFUSED(s, mlc_sched_get_block(s, "B", "main", &root, err), "2 blocks are named \"B\"");
  mlc_sched_free(s);
}

/* Two elementwise blocks: B can be inlined into C. */
static const char *EW_CHAIN =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 4), \"float32\"), C: T.Buffer((8, 4), \"float32\")):\n"
    "    B = T.alloc_buffer((8, 4))\n"
    "    for i, j in T.grid(8, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "    for i, j in T.grid(8, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[vi, vj] + T.float32(1)\n";

/* The getters and sample_compute_location refuse, each in at least three
 * ways, a handle that does not exist, one of the wrong kind, and one no
 * longer in the function (a block inlined, a loop fused away); the IR,
 * the trace and the handles stay as they were. */
static void test_getter_refusals(void) {
  mlc_sched *s = sched_of(EW_CHAIN, 1);
  mlc_rv b, c, *lb, *lc, v, fused, *out, loc;
  OK(mlc_sched_get_block(s, "B", NULL, &b, err));
  OK(mlc_sched_get_block(s, "C", NULL, &c, err));
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, b, &lb, &e) == 2);
  CHECK(mlc_sched_get_loops(s, c, &lc, &e) == 2);
  mlc_rv dead_loop = lc[0];
  OK(mlc_sched_sample_categorical(s, 2, (int64_t[]){1, 2}, (double[]){0.5, 0.5}, &v, err));
  OK(mlc_sched_fuse(s, 2, lc, false, &fused, err));
  OK(mlc_sched_compute_inline(s, b, err)); /* b is dead from here on */

  REFUSED(s, mlc_sched_get_loops(s, v, &out, err) >= 0, "get_loops: v");
  REFUSED(s, mlc_sched_get_loops(s, v, &out, err) >= 0, "is a sampled value, expected a block");
  REFUSED(s, mlc_sched_get_loops(s, fused, &out, err) >= 0, "is a loop, expected a block");
  REFUSED(s, mlc_sched_get_loops(s, b, &out, err) >= 0, "get_loops: b0 (block B) is no longer in the function");

  REFUSED(s, mlc_sched_get_child_blocks(s, v, &out, err) >= 0, "get_child_blocks: v");
  REFUSED(s, mlc_sched_get_child_blocks(s, -1, &out, err) >= 0, "is not a block or loop");
  REFUSED(s, mlc_sched_get_child_blocks(s, dead_loop, &out, err) >= 0,
          "get_child_blocks: l4 (loop i) is no longer in the function");
  REFUSED(s, mlc_sched_get_child_blocks(s, b, &out, err) >= 0, "is no longer in the function");

  REFUSED(s, mlc_sched_get_producers(s, v, &out, err) >= 0, "get_producers: v");
  REFUSED(s, mlc_sched_get_producers(s, fused, &out, err) >= 0, "is a loop, expected a block");
  REFUSED(s, mlc_sched_get_producers(s, b, &out, err) >= 0, "get_producers: b0 (block B) is no longer");
  REFUSED(s, mlc_sched_get_producers(s, 999, &out, err) >= 0, "get_producers: handle 999 does not exist");

  REFUSED(s, mlc_sched_get_consumers(s, v, &out, err) >= 0, "is a sampled value, expected a block");
  REFUSED(s, mlc_sched_get_consumers(s, dead_loop, &out, err) >= 0, "get_consumers: l4 (loop i) is a loop");
  REFUSED(s, mlc_sched_get_consumers(s, b, &out, err) >= 0, "get_consumers: b0 (block B) is no longer");

  REFUSED(s, mlc_sched_sample_compute_location(s, v, &loc, err), "sample_compute_location: v");
  REFUSED(s, mlc_sched_sample_compute_location(s, fused, &loc, err), "is a loop, expected a block");
  REFUSED(s, mlc_sched_sample_compute_location(s, b, &loc, err),
          "sample_compute_location: b0 (block B) is no longer in the function");
  REFUSED(s, mlc_sched_sample_compute_location(s, 999, &loc, err), "handle 999 does not exist");
  /* The root block has no compute location and cannot be moved. */
  mlc_rv root;
  OK(mlc_sched_get_block(s, "root", NULL, &root, err));
  REFUSED(s, mlc_sched_sample_compute_location(s, root, &loc, err),
          "sample_compute_location: b8 (block root) is the root block: it has no compute location");
  REFUSED(s, mlc_sched_compute_at(s, root, fused, false, -1, err),
          "compute_at: b8 (block root) at l7 (loop i_j_fused): the root block cannot be moved");
  REFUSED(s, mlc_sched_reverse_compute_at(s, root, fused, false, -1, err), "the root block cannot be moved");
  /* The live block still answers. */
  CHECK(mlc_sched_get_producers(s, c, &out, &e) == 0);
  CHECK(mlc_sched_get_loops(s, c, &out, &e) == 1);
  mlc_sched_free(s);
}

static void test_producers_consumers(void) {
  mlc_sched *s = sched_of(MM_RELU, 1);
  mlc_rv y, c, *out, *l;
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "Y", NULL, &y, err));
  OK(mlc_sched_get_block(s, "C", NULL, &c, err));
  CHECK(mlc_sched_get_producers(s, c, &out, &e) == 1);
  CHECK_STREQ(mlc_sched_rv_block(s, out[0])->name, "Y");
  CHECK(mlc_sched_get_consumers(s, y, &out, &e) == 1);
  CHECK_STREQ(mlc_sched_rv_block(s, out[0])->name, "C");
  CHECK(mlc_sched_get_producers(s, y, &out, &e) == 0);
  CHECK(mlc_sched_get_consumers(s, c, &out, &e) == 0);
  CHECK(mlc_sched_get_loops(s, y, &l, &e) == 3);
  REFUSED(s, mlc_sched_get_producers(s, l[0], &out, err) >= 0, "get_producers: l4 (loop i) is a loop");
  REFUSED(s, mlc_sched_get_consumers(s, -3, &out, err) >= 0, "get_consumers: handle -3 does not exist");
  char *tr = print_trace(s);
  CHECK_MSG(strstr(tr, "  b2, = sch.get_producers(block=b1)\n  b3, = sch.get_consumers(block=b0)\n"
                       "  sch.get_producers(block=b0)\n"), "%s", tr);
  mlc_free(tr);
  /* Through JSON and replay. */
  char *js = trace_json(s);
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
  CHECK_MSG(t, "%s", e.msg);
  mlc_sched *r = sched_of(MM_RELU, 2);
  OK(t && mlc_sched_replay(r, t, NULL, NULL, err));
  char *js2 = trace_json(r);
  CHECK_STREQ(js2, js);
  mlc_free(js), mlc_free(js2);
  mlc_sched_free(r);
  mlc_arena_free(a);
  mlc_sched_free(s);
}

static void test_split_reorder_notes(void) {
  mlc_sched *s = sched_of(MM_RELU, 1);
  mlc_rv y, *l, j[2];
  OK(mlc_sched_get_block(s, "Y", "mm_relu", &y, err));
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, y, &l, &e) == 3);
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, j, err));
  OK(mlc_sched_reorder(s, 3, (mlc_rv[]){j[0], l[2], j[1]}, err));
  CHECK(sched_equals(s, MM_RELU_SPLIT_REORDER));
  /* The split loop is gone; its handle is refused, the others still work. */
  REFUSED(s, mlc_sched_parallel(s, l[1], err), "no longer in the function");
  OK(mlc_sched_parallel(s, l[0], err));
  CHECK(mlc_sched_rv_loop(s, l[0])->loop.kind == MLC_FOR_PARALLEL);
  mlc_sched_free(s);
}

/* ---- golden: split ---------------------------------------------------------------- */

static const char *VEC130 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((130,), \"float32\"), B: T.Buffer((130,), \"float32\")):\n"
    "    for i in range(130):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(130, i)\n"
    "            B[vi] = A[vi] + T.float32(1)\n";

static const char *VEC128 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
    "    for i in range(128):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(128, i)\n"
    "            B[vi] = A[vi] + T.float32(1)\n";

/* One loop of block B, the state's first. */
static mlc_rv first_loop(mlc_sched *s, const char *block, int which) {
  mlc_rv b, *l;
  mlc_error e = {{0}};
  MLC_ASSERT(mlc_sched_get_block(s, block, NULL, &b, &e));
  int n = mlc_sched_get_loops(s, b, &l, &e);
  MLC_ASSERT(n > which);
  return l[which];
}

static void test_split_golden(void) {
  /* A product above the extent adds T.where, as TVM does. */
  mlc_sched *s = sched_of(VEC130, 1);
  mlc_rv i = first_loop(s, "B", 0), o[3];
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, o, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((130,), \"float32\"), B: T.Buffer((130,), \"float32\")):\n"
      "    for i_0, i_1 in T.grid(33, 4):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(130, i_0 * 4 + i_1)\n"
      "            T.where(i_0 * 4 + i_1 < 130)\n"
      "            B[vi] = A[vi] + T.float32(1)\n"));
  mlc_sched_free(s);

  /* Three factors, the middle one inferred. */
  s = sched_of(VEC128, 1);
  i = first_loop(s, "B", 0);
  OK(mlc_sched_split(s, i, 3, (mlc_operand[]){MLC_OP_INT(2), MLC_OP_INT(-1), MLC_OP_INT(8)}, true,
                     o, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
      "    for i_0, i_1, i_2 in T.grid(2, 8, 8):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(128, i_0 * 64 + i_1 * 8 + i_2)\n"
      "            B[vi] = A[vi] + T.float32(1)\n"));
  /* Splitting an inner loop again flattens the binding. */
  OK(mlc_sched_split(s, o[2], 2, (mlc_operand[]){MLC_OP_INT(4), MLC_OP_NONE}, true, o, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
      "    for i_0, i_1, i_2_0, i_2_1 in T.grid(2, 8, 4, 2):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(128, i_0 * 64 + i_1 * 8 + i_2_0 * 2 + i_2_1)\n"
      "            B[vi] = A[vi] + T.float32(1)\n"));
  mlc_sched_free(s);

  /* preserve_unit_iters=False: a unit loop binds nothing. */
  s = sched_of(VEC128, 1);
  i = first_loop(s, "B", 0);
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_INT(1), MLC_OP_NONE}, false, o, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
      "    for i_0, i_1 in T.grid(1, 128):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(128, i_1)\n"
      "            B[vi] = A[vi] + T.float32(1)\n"));
  mlc_sched_free(s);
}

static void test_split_refusals(void) {
  mlc_sched *s = sched_of(MM_RELU, 1);
  mlc_rv j = first_loop(s, "Y", 1), o[4], b, v[2];
  OK(mlc_sched_get_block(s, "Y", NULL, &b, err));
  REFUSED(s, mlc_sched_split(s, j, 3, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4), MLC_OP_NONE},
                             true, o, err),
          "split: l2 (loop j): more than one factor is None (factors 0 and 2)");
  REFUSED(s, mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_INT(0), MLC_OP_NONE}, true, o, err),
          "factor 0 is 0, factors must be positive");
  REFUSED(s, mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_INT(8), MLC_OP_INT(8)}, true, o, err),
          "the factors multiply to 64, less than the loop's extent 128");
  REFUSED(s, mlc_sched_split(s, b, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, o, err),
          "split: b4 (block Y) is a block, expected a loop");
  REFUSED(s, mlc_sched_split(s, j, 1, (mlc_operand[]){MLC_OP_INT(128)}, true, o, err),
          "needs 2 to 16 factors, got 1");
  REFUSED(s, mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_STR("x"), MLC_OP_NONE}, true, o, err),
          "factor 0 is not an integer");
  OK(mlc_sched_sample_perfect_tile(s, j, 2, 16, v, err));
  REFUSED(s, mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_RV(j), MLC_OP_RV(v[1])}, true, o, err),
          "is a loop, expected a sampled value");
  mlc_sched_free(s);
}

/* ---- golden: fuse ------------------------------------------------------------------ */

static const char *EW2 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((64, 32), \"float32\"), B: T.Buffer((64, 32), \"float32\")):\n"
    "    for i, j in T.grid(64, 32):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(2)\n";

static const char *EW3 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((4, 8, 4), \"float32\"), B: T.Buffer((4, 8, 4), \"float32\")):\n"
    "    for i, j, k in T.grid(4, 8, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSS\", [i, j, k])\n"
    "            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)\n";

static void test_fuse_golden(void) {
  mlc_sched *s = sched_of(EW2, 1);
  mlc_rv f;
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){first_loop(s, "B", 0), first_loop(s, "B", 1)}, true, &f, err));
  CHECK_STREQ(mlc_sched_rv_loop(s, f)->loop.var->name, "i_j_fused");
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((64, 32), \"float32\"), B: T.Buffer((64, 32), \"float32\")):\n"
      "    for i_j_fused in range(2048):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(64, i_j_fused // 32)\n"
      "            vj = T.axis.spatial(32, i_j_fused % 32)\n"
      "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"));
  mlc_sched_free(s);

  s = sched_of(EW3, 1);
  OK(mlc_sched_fuse(s, 3, (mlc_rv[]){first_loop(s, "B", 0), first_loop(s, "B", 1),
                                      first_loop(s, "B", 2)}, true, &f, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8, 4), \"float32\"), B: T.Buffer((4, 8, 4), \"float32\")):\n"
      "    for i_j_k_fused in range(128):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(4, i_j_k_fused // 32)\n"
      "            vj = T.axis.spatial(8, i_j_k_fused // 4 % 8)\n"
      "            vk = T.axis.spatial(4, i_j_k_fused % 4)\n"
      "            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)\n"));
  mlc_sched_free(s);

  /* fuse(j, k) only, under i. */
  s = sched_of(EW3, 1);
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){first_loop(s, "B", 1), first_loop(s, "B", 2)}, true, &f, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8, 4), \"float32\"), B: T.Buffer((4, 8, 4), \"float32\")):\n"
      "    for i, j_k_fused in T.grid(4, 32):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(4, i)\n"
      "            vj = T.axis.spatial(8, j_k_fused // 4)\n"
      "            vk = T.axis.spatial(4, j_k_fused % 4)\n"
      "            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)\n"));
  mlc_sched_free(s);
}

/* Loop i holds two loops: no single chain below it. */
static const char *BRANCH =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\"),\n"
    "         C: T.Buffer((8, 8), \"float32\")):\n"
    "    for i in range(8):\n"
    "        for j in range(8):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                B[vi, vj] = A[vi, vj] + T.float32(1)\n"
    "        for j in range(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                C[vi, vj] = B[vi, vj] * T.float32(2)\n";

static void test_fuse_refusals(void) {
  mlc_sched *s = sched_of(EW3, 1);
  mlc_rv i = first_loop(s, "B", 0), j = first_loop(s, "B", 1), k = first_loop(s, "B", 2), f, b;
  OK(mlc_sched_get_block(s, "B", NULL, &b, err));
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, k}, true, &f, err),
          "is not the only child of l1 (loop i): fused loops must be adjacent");
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){j, i}, true, &f, err), "is not the only child of");
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, i}, true, &f, err), "is given twice");
  REFUSED(s, mlc_sched_fuse(s, 1, (mlc_rv[]){i}, true, &f, err), "needs at least 2 loops, got 1");
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){b, i}, true, &f, err), "is a block, expected a loop");
  mlc_sched_free(s);
  s = sched_of(MM, 1);
  j = first_loop(s, "C", 1);
  k = first_loop(s, "C", 2);
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){j, k}, true, &f, err),
          "fuse: block \"C\" binds spatial iter vj and reduce iter vk to these loops");
  mlc_sched_free(s);
  s = sched_of(BRANCH, 1);
  i = first_loop(s, "B", 0);
  j = first_loop(s, "B", 1);
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err), "is not the only child of");
  mlc_sched_free(s);
}

/* ---- golden: reorder ------------------------------------------------------------------ */

static void test_reorder_golden(void) {
  /* k and i swap; j, not given, keeps its position. */
  mlc_sched *s = sched_of(EW3, 1);
  OK(mlc_sched_reorder(s, 2, (mlc_rv[]){first_loop(s, "B", 2), first_loop(s, "B", 0)}, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8, 4), \"float32\"), B: T.Buffer((4, 8, 4), \"float32\")):\n"
      "    for k, j, i in T.grid(4, 8, 4):\n"
      "        with T.block(\"B\"):\n"
      "            vi, vj, vk = T.axis.remap(\"SSS\", [i, j, k])\n"
      "            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)\n"));
  mlc_sched_free(s);
  /* Reorder within the inner loops of a branch is fine. */
  s = sched_of(BRANCH, 1);
  mlc_rv j = first_loop(s, "C", 1), o[2];
  OK(mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_INT(2), MLC_OP_INT(4)}, true, o, err));
  OK(mlc_sched_reorder(s, 2, (mlc_rv[]){o[1], o[0]}, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\"),\n"
      "         C: T.Buffer((8, 8), \"float32\")):\n"
      "    for i in range(8):\n"
      "        for j in range(8):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                B[vi, vj] = A[vi, vj] + T.float32(1)\n"
      "        for j_1, j_0 in T.grid(4, 2):\n"
      "            with T.block(\"C\"):\n"
      "                vi = T.axis.spatial(8, i)\n"
      "                vj = T.axis.spatial(8, j_0 * 4 + j_1)\n"
      "                C[vi, vj] = B[vi, vj] * T.float32(2)\n"));
  mlc_sched_free(s);
}

static void test_reorder_refusals(void) {
  mlc_sched *s = sched_of(MM_RELU, 1);
  mlc_rv yi = first_loop(s, "Y", 0), yk = first_loop(s, "Y", 2), ci = first_loop(s, "C", 0), b;
  OK(mlc_sched_get_block(s, "Y", NULL, &b, err));
  REFUSED(s, mlc_sched_reorder(s, 2, (mlc_rv[]){yk, ci}, err), "are not in one loop chain");
  REFUSED(s, mlc_sched_reorder(s, 3, (mlc_rv[]){yk, yi, yk}, err), "is given twice");
  REFUSED(s, mlc_sched_reorder(s, 2, (mlc_rv[]){yk, b}, err), "is a block, expected a loop");
  REFUSED(s, mlc_sched_reorder(s, 0, NULL, err), "needs at least one loop");
  mlc_sched_free(s);
  s = sched_of(BRANCH, 1);
  mlc_rv i = first_loop(s, "B", 0), j = first_loop(s, "C", 1);
  REFUSED(s, mlc_sched_reorder(s, 2, (mlc_rv[]){j, i}, err),
          "but not through single-child loops (i has a body that is not a loop)");
  mlc_sched_free(s);
}

/* ---- loop kinds and annotations ------------------------------------------------------ */

static void test_loop_kinds_golden(void) {
  mlc_sched *s = sched_of(EW3, 1);
  OK(mlc_sched_parallel(s, first_loop(s, "B", 0), err));
  OK(mlc_sched_unroll(s, first_loop(s, "B", 1), err));
  OK(mlc_sched_vectorize(s, first_loop(s, "B", 2), err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8, 4), \"float32\"), B: T.Buffer((4, 8, 4), \"float32\")):\n"
      "    for i in T.parallel(4):\n"
      "        for j in T.unroll(8):\n"
      "            for k in T.vectorized(4):\n"
      "                with T.block(\"B\"):\n"
      "                    vi, vj, vk = T.axis.remap(\"SSS\", [i, j, k])\n"
      "                    B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)\n"));
  mlc_sched_free(s);

  /* The notes' GPU vector add: split then bind. */
  s = sched_of(VEC128, 1);
  mlc_rv o[2];
  OK(mlc_sched_split(s, first_loop(s, "B", 0), 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(32)},
                     true, o, err));
  OK(mlc_sched_bind(s, o[0], "blockIdx.x", err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
      "    for i_0 in T.thread_binding(4, thread=\"blockIdx.x\"):\n"
      "        for i_1 in T.thread_binding(32, thread=\"threadIdx.x\"):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(128, i_0 * 32 + i_1)\n"
      "                B[vi] = A[vi] + T.float32(1)\n"));
  mlc_sched_free(s);

  /* threadIdx over a reduce loop is a cross-thread reduction: allowed. */
  s = sched_of(MM, 1);
  OK(mlc_sched_bind(s, first_loop(s, "C", 2), "threadIdx.x", err));
  mlc_sched_free(s);
}

static void test_loop_kind_refusals(void) {
  mlc_sched *s = sched_of(MM, 1);
  mlc_rv b, *l, v, o[2];
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "C", NULL, &b, err));
  CHECK(mlc_sched_get_loops(s, b, &l, &e) == 3);
  mlc_rv i = l[0], j = l[1], k = l[2];
  OK(mlc_sched_sample_categorical(s, 2, (int64_t[]){4, 8}, (double[]){0.5, 0.5}, &v, err));
  OK(mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, o, err));
  OK(mlc_sched_bind(s, i, "blockIdx.x", err));
  /* j is gone (split), i is bound, k is a reduction loop (vectorize may
   * take it: tests/test_schedule_reduce.c). */
  REFUSED(s, mlc_sched_parallel(s, k, err),
          "parallel: l3 (loop k): block \"C\" binds its reduce iter vk to this loop");
  REFUSED(s, mlc_sched_parallel(s, b, err), "parallel: b0 (block C) is a block, expected a loop");
  REFUSED(s, mlc_sched_parallel(s, j, err), "parallel: l2 (loop j) is no longer in the function");
  REFUSED(s, mlc_sched_vectorize(s, v, err), "vectorize: v4 is a sampled value, expected a loop");
  REFUSED(s, mlc_sched_vectorize(s, j, err), "no longer in the function");
  REFUSED(s, mlc_sched_unroll(s, b, err), "unroll: b0 (block C) is a block");
  REFUSED(s, mlc_sched_unroll(s, j, err), "unroll: l2 (loop j) is no longer in the function");
  REFUSED(s, mlc_sched_unroll(s, -1, err), "unroll: handle -1 does not exist");
  REFUSED(s, mlc_sched_bind(s, k, "blockIdx.y", err), "bind: l3 (loop k): block \"C\" binds its reduce");
  REFUSED(s, mlc_sched_bind(s, k, "vthread.x", err), "binds its reduce iter vk");
  REFUSED(s, mlc_sched_bind(s, o[0], "warpIdx.x", err), "bind: l5 (loop j_0): unknown thread axis \"warpIdx.x\"");
  REFUSED(s, mlc_sched_bind(s, j, "threadIdx.x", err), "no longer in the function");
  /* One thread axis, one extent: i (128) holds blockIdx.x, j_0 has 32. */
  REFUSED(s, mlc_sched_bind(s, o[0], "blockIdx.x", err),
          "bind: l5 (loop j_0): loop i is bound to blockIdx.x with extent 128; this loop's extent 32 "
          "differs");
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  REFUSED(s, mlc_sched_bind(s, o[0], "threadIdx.x", err), "loop j_1 is bound to threadIdx.x with extent 4");
  /* TensorIR gives a bound loop another kind or thread (on a copy: i
   * stays bound above). */
  mlc_sched *c = mlc_sched_copy(s);
  OK(mlc_sched_parallel(c, i, err));
  OK(mlc_sched_vectorize(c, i, err));
  OK(mlc_sched_unroll(c, i, err));
  OK(mlc_sched_bind(c, i, "blockIdx.y", err));
  mlc_sched_free(c);
  /* Vectors do not nest: j_1 vectorized, then j_0 around it or k inside
   * it (or the other way) is refused; j_1 again is not. */
  c = mlc_sched_copy(s);
  OK(mlc_sched_vectorize(c, o[1], err));
  OK(mlc_sched_vectorize(c, o[1], err));
  REFUSED(c, mlc_sched_vectorize(c, o[0], err),
          "vectorize: l5 (loop j_0): loop j_1 inside it is vectorized already (vectors do not nest)");
  mlc_sched_free(c);
  c = mlc_sched_copy(s);
  OK(mlc_sched_vectorize(c, o[0], err));
  REFUSED(c, mlc_sched_vectorize(c, o[1], err), "loop j_0 around it is vectorized already");
  mlc_sched_free(c);
  mlc_sched_free(s);
}

/* C reads rows of B that earlier iterations of i wrote. */
static const char *CARRIED =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\"),\n"
    "         C: T.Buffer((8, 8), \"float32\")):\n"
    "    for i in range(8):\n"
    "        for j in range(8):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                B[vi, vj] = A[vi, vj] + T.float32(1)\n"
    "        for j in range(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                C[vi, vj] = B[vi // 2 * 2, vj] * T.float32(2)\n";

static void test_carried_dependences(void) {
  /* Same rows in each iteration: parallel is fine. */
  mlc_sched *s = sched_of(BRANCH, 1);
  OK(mlc_sched_parallel(s, first_loop(s, "B", 0), err));
  mlc_sched_free(s);
  s = sched_of(CARRIED, 1);
  mlc_rv i = first_loop(s, "B", 0), j = first_loop(s, "C", 1);
  REFUSED(s, mlc_sched_parallel(s, i, err),
          "parallel: l1 (loop i): block \"C\" reads buffer B where block \"B\" writes it in other "
          "iterations of this loop");
  REFUSED(s, mlc_sched_vectorize(s, i, err), "vectorize: l1 (loop i): block \"C\" reads buffer B");
  REFUSED(s, mlc_sched_bind(s, i, "blockIdx.x", err), "bind: l1 (loop i): block \"C\" reads buffer B");
  OK(mlc_sched_parallel(s, j, err)); /* one block under j */
  mlc_sched_free(s);
}

static void test_annotate(void) {
  mlc_sched *s = sched_of(EW2, 1);
  mlc_rv b, *l, v;
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "B", NULL, &b, err));
  CHECK(mlc_sched_get_loops(s, b, &l, &e) == 2);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_sample_categorical(s, 3, (int64_t[]){0, 16, 64}, (double[]){0, 0, 1}, &v, err));
  OK(mlc_sched_annotate(s, b, "meta_schedule.tiling_structure", MLC_OP_STR("SSRSRS"), err));
  OK(mlc_sched_annotate(s, b, "meta_schedule.unroll_explicit", MLC_OP_RV(v), err));
  OK(mlc_sched_annotate(s, i, "pragma_auto_unroll_max_step", MLC_OP_INT(16), err));
  OK(mlc_sched_annotate(s, i, "ratio", MLC_OP_FLOAT(0.5), err));
  OK(mlc_sched_annotate(s, i, "pragma_auto_unroll_max_step", MLC_OP_INT(32), err)); /* replaces */
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((64, 32), \"float32\"), B: T.Buffer((64, 32), \"float32\")):\n"
      "    for i in T.serial(64, annotations={\"pragma_auto_unroll_max_step\": 32, \"ratio\": 0.5}):\n"
      "        for j in range(32):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                T.block_attr({\"meta_schedule.tiling_structure\": \"SSRSRS\", "
      "\"meta_schedule.unroll_explicit\": 64})\n"
      "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"));
  char *tr = print_trace(s);
  CHECK_MSG(strstr(tr, "  sch.annotate(block_or_loop=b0, ann_key=\"meta_schedule.unroll_explicit\", "
                       "ann_val=v3)\n"), "%s", tr);
  CHECK_MSG(strstr(tr, "  sch.annotate(block_or_loop=l1, ann_key=\"ratio\", ann_val=0.5)\n"), "%s", tr);
  CHECK_MSG(strstr(tr, "  sch.annotate(block_or_loop=b0, ann_key=\"meta_schedule.tiling_structure\", "
                       "ann_val=\"SSRSRS\")\n"), "%s", tr);
  mlc_free(tr);
  REFUSED(s, mlc_sched_annotate(s, v, "k", MLC_OP_INT(1), err), "annotate: v3 is not a block or loop");
  REFUSED(s, mlc_sched_annotate(s, b, "k", MLC_OP_NONE, err), "key \"k\" needs a value");
  REFUSED(s, mlc_sched_annotate(s, b, "", MLC_OP_INT(1), err), "empty annotation key");
  REFUSED(s, mlc_sched_annotate(s, b, "k", MLC_OP_RV(i), err), "is a loop, expected a sampled value");
  REFUSED(s, mlc_sched_unannotate(s, b, "nope", err), "unannotate: b0 (block B) has no annotation \"nope\"");
  REFUSED(s, mlc_sched_unannotate(s, v, "k", err), "unannotate: v3 is not a block or loop");
  OK(mlc_sched_unannotate(s, b, "meta_schedule.tiling_structure", err));
  OK(mlc_sched_unannotate(s, b, "meta_schedule.unroll_explicit", err));
  OK(mlc_sched_unannotate(s, i, "pragma_auto_unroll_max_step", err));
  OK(mlc_sched_unannotate(s, i, "ratio", err));
  CHECK(sched_equals(s, EW2));
  REFUSED(s, mlc_sched_unannotate(s, i, "ratio", err), "unannotate: l1 (loop i) has no annotation \"ratio\"");
  /* A replaced loop is refused too. */
  mlc_rv f;
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err));
  REFUSED(s, mlc_sched_annotate(s, i, "k", MLC_OP_INT(1), err), "is no longer in the function");
  mlc_sched_free(s);
}

/* ---- sampling ----------------------------------------------------------------------- */

static void test_sample_perfect_tile(void) {
  /* 128 into 2 factors with innermost <= 16: 5 tilings, drawn uniformly. */
  mlc_sched *s = sched_of(MM, 7);
  mlc_rv j = first_loop(s, "C", 1), v[3];
  int counts[17] = {0};
  for (int t = 0; t < 5000; t++) {
    OK(mlc_sched_sample_perfect_tile(s, j, 2, 16, v, err));
    int64_t a = mlc_sched_rv_value(s, v[0]), b = mlc_sched_rv_value(s, v[1]);
    CHECK(a * b == 128 && b <= 16);
    if (b <= 16) counts[b]++;
  }
  for (int b = 1; b <= 16; b *= 2) CHECK_MSG(counts[b] > 850 && counts[b] < 1150, "%d: %d", b, counts[b]);
  mlc_sched_free(s);

  /* 3 factors of 16 with innermost <= 4: count them independently. */
  s = sched_of(VEC128, 3);
  mlc_rv i = first_loop(s, "B", 0);
  int seen[129][129] = {{0}}, expected = 0, distinct = 0;
  for (int a = 1; a <= 128; a++)
    for (int b = 1; b <= 128; b++)
      if (128 % (a * b) == 0 && 128 / (a * b) <= 4) expected++;
  for (int t = 0; t < 3000; t++) {
    OK(mlc_sched_sample_perfect_tile(s, i, 3, 4, v, err));
    int64_t a = mlc_sched_rv_value(s, v[0]), b = mlc_sched_rv_value(s, v[1]),
            c = mlc_sched_rv_value(s, v[2]);
    CHECK(a * b * c == 128 && c <= 4);
    if (!seen[a][b]++) distinct++;
  }
  CHECK_MSG(distinct == expected, "%d of %d tilings seen", distinct, expected);
  mlc_rv b;
  OK(mlc_sched_get_block(s, "B", NULL, &b, err));
  REFUSED(s, mlc_sched_sample_perfect_tile(s, b, 2, 16, v, err),
          "sample_perfect_tile: b");
  REFUSED(s, mlc_sched_sample_perfect_tile(s, i, 0, 16, v, err), "n must be 1 to 16, got 0");
  REFUSED(s, mlc_sched_sample_perfect_tile(s, i, 17, 16, v, err), "n must be 1 to 16, got 17");
  mlc_sched_free(s);
}

static void test_sample_categorical(void) {
  mlc_sched *s = sched_of(MM, 11);
  mlc_rv v;
  int counts[3] = {0};
  for (int t = 0; t < 4000; t++) {
    OK(mlc_sched_sample_categorical(s, 3, (int64_t[]){10, 20, 30}, (double[]){0.25, 0, 0.75}, &v, err));
    counts[mlc_sched_rv_value(s, v) / 10 - 1]++;
  }
  CHECK(counts[1] == 0);
  CHECK_MSG(counts[0] > 850 && counts[0] < 1150, "%d", counts[0]);
  REFUSED(s, mlc_sched_sample_categorical(s, 0, NULL, NULL, &v, err), "needs at least one candidate");
  REFUSED(s, mlc_sched_sample_categorical(s, 2, (int64_t[]){1, 2}, (double[]){0.5, -1}, &v, err),
          "probability 1 is -1, must be >= 0");
  REFUSED(s, mlc_sched_sample_categorical(s, 2, (int64_t[]){1, 2}, (double[]){0, 0}, &v, err),
          "the probabilities are all 0");
  mlc_sched_free(s);
}

/* ---- traces: the notes' stochastic_schedule_mm ------------------------------------------ */

/* stochastic_schedule_mm without decompose_reduction (not in this build). */
static bool stochastic_schedule_mm(mlc_sched *s, mlc_error *err) {
  mlc_rv c, *l, f[2], j[2];
  if (!mlc_sched_get_block(s, "C", "main", &c, err)) return false;
  if (mlc_sched_get_loops(s, c, &l, err) != 3) return false;
  if (!mlc_sched_sample_perfect_tile(s, l[1], 2, 16, f, err)) return false;
  if (!mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_RV(f[0]), MLC_OP_RV(f[1])}, true, j, err))
    return false;
  return mlc_sched_reorder(s, 4, (mlc_rv[]){l[0], j[0], l[2], j[1]}, err);
}

static char *notes_trace(int64_t outer, int64_t inner) {
  mlc_str o = {0};
  mlc_str_printf(&o,
      "# from tvm import tir\n"
      "def apply_trace(sch: tir.Schedule) -> None:\n"
      "  b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
      "  l1, l2, l3 = sch.get_loops(block=b0)\n"
      "  v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[%d, %d])\n"
      "  l6, l7 = sch.split(loop=l2, factors=[v4, v5], preserve_unit_iters=True)\n"
      "  sch.reorder(l1, l6, l3, l7)\n",
      (int)outer, (int)inner);
  return mlc_str_take(&o);
}

static const char *NOTES_JSON =
    "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
    "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],"
    "[\"SamplePerfectTile\",[\"l2\"],{\"n\":2,\"max_innermost_factor\":16},[\"v4\",\"v5\"]],"
    "[\"Split\",[\"l2\",\"v4\",\"v5\"],{\"preserve_unit_iters\":true},[\"l6\",\"l7\"]],"
    "[\"Reorder\",[\"l1\",\"l6\",\"l3\",\"l7\"],{},[]]],"
    "\"decisions\":{\"2\":[32,4]},\"version\":1}";

static char *mm_tiled(int outer, int inner) {
  mlc_str o = {0};
  mlc_str_printf(&o, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"),\n"
      "         C: T.Buffer((128, 128), \"float32\")):\n"
      "    for i, j_0, k, j_1 in T.grid(128, %d, 128, %d):\n"
      "        with T.block(\"C\"):\n"
      "            vi = T.axis.spatial(128, i)\n"
      "            vj = T.axis.spatial(128, %s + j_1)\n"
      "            vk = T.axis.reduce(128, k)\n"
      "            with T.init():\n"
      "                C[vi, vj] = T.float32(0)\n"
      "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n", outer, inner,
      inner == 1 ? "j_0" : mlc_arena_printf(TA, "j_0 * %d", inner));
  return mlc_str_take(&o);
}

static void test_notes_trace(void) {
  /* Sampled: the printout matches the notes with whatever was drawn. */
  for (uint64_t seed = 1; seed <= 5; seed++) {
    mlc_sched *s = sched_of(MM, seed);
    OK(stochastic_schedule_mm(s, err));
    const mlc_inst *st = &mlc_sched_trace(s)->insts.data[2];
    CHECK(st->decision.n == 2 && st->decision.v[0] * st->decision.v[1] == 128);
    char *want = notes_trace(st->decision.v[0], st->decision.v[1]);
    char *got = print_trace(s);
    CHECK_STREQ(got, want);
    char *want_ir = mm_tiled((int)st->decision.v[0], (int)st->decision.v[1]);
    CHECK(sched_equals(s, want_ir));
    mlc_free(want_ir);
    mlc_free(want);
    mlc_free(got);
    mlc_sched_free(s);
  }
}

static void test_trace_json(void) {
  mlc_error e = {{0}};
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, NOTES_JSON, strlen(NOTES_JSON), &e);
  CHECK_MSG(t, "%s", e.msg);
  if (!t) return;
  mlc_str o = {0};
  mlc_trace_to_json(&o, t);
  CHECK_STREQ(mlc_str_cstr(&o), NOTES_JSON);
  mlc_str_clear(&o);
  mlc_trace_print(&o, t);
  char *want = notes_trace(32, 4);
  CHECK_STREQ(mlc_str_cstr(&o), want);
  mlc_free(want);

  /* Replaying the JSON reproduces the IR of the notes' decision... */
  mlc_sched *s = sched_of(MM, 1);
  OK(mlc_sched_replay(s, t, NULL, NULL, err));
  char *ir = mm_tiled(32, 4);
  CHECK(sched_equals(s, ir));
  mlc_free(ir);
  char *js = trace_json(s);
  CHECK_STREQ(js, NOTES_JSON);
  mlc_free(js);
  /* ... and a state sampled directly, once serialized, replays to the same IR. */
  mlc_sched *s2 = sched_of(MM, 99);
  OK(stochastic_schedule_mm(s2, err));
  js = trace_json(s2);
  mlc_trace *t2 = mlc_trace_from_json(a, js, strlen(js), &e);
  CHECK_MSG(t2, "%s", e.msg);
  mlc_sched *s3 = sched_of(MM, 12345);
  OK(mlc_sched_replay(s3, t2, NULL, NULL, err));
  CHECK(mlc_func_struct_equal(mlc_sched_func(s2), mlc_sched_func(s3)));
  char *p2 = print_func(mlc_sched_func(s2)), *p3 = print_func(mlc_sched_func(s3));
  CHECK_STREQ(p2, p3);
  char *js3 = trace_json(s3);
  CHECK_STREQ(js3, js);
  CHECK(mlc_trace_hash(mlc_sched_trace(s3)) == mlc_trace_hash(t2));
  mlc_free(p2), mlc_free(p3), mlc_free(js), mlc_free(js3);
  mlc_sched_free(s2);
  mlc_sched_free(s3);
  mlc_sched_free(s);

  /* Without "version" the trace reads as version 1. */
  const char *nov = "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]]]}";
  CHECK(mlc_trace_from_json(a, nov, strlen(nov), &e) != NULL);
  mlc_str_free(&o);
  mlc_arena_free(a);
}

static void test_replay_decisions(void) {
  mlc_error e = {{0}};
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, NOTES_JSON, strlen(NOTES_JSON), &e);
  MLC_ASSERT(t);
  /* A replaced decision gives the other tiling. */
  mlc_sched *s = sched_of(MM, 1);
  mlc_decision d = {2, {8, 16}};
  mlc_replay_opts opts = {.n_overrides = 1, .override_insts = (int[]){2}, .override_decisions = &d};
  mlc_replay_report rep;
  OK(mlc_sched_replay(s, t, &opts, &rep, err));
  CHECK(rep.n_resampled == 0);
  char *ir = mm_tiled(8, 16);
  CHECK(sched_equals(s, ir));
  mlc_free(ir);
  char *tr = print_trace(s), *want = notes_trace(8, 16);
  CHECK_STREQ(tr, want);
  mlc_free(tr), mlc_free(want);
  mlc_sched_free(s);

  /* A decision that does not fit (3 * 5 != 128; 2 * 64 has innermost > 16)
   * is drawn again and reported. */
  mlc_decision bad[2] = {{2, {3, 5}}, {2, {2, 64}}};
  for (int k = 0; k < 2; k++) {
    s = sched_of(MM, 5);
    opts.override_decisions = &bad[k];
    OK(mlc_sched_replay(s, t, &opts, &rep, err));
    CHECK(rep.n_resampled == 1 && rep.resampled[0] == 2);
    const mlc_decision *got = &mlc_sched_trace(s)->insts.data[2].decision;
    CHECK(got->n == 2 && got->v[0] * got->v[1] == 128 && got->v[1] <= 16);
    mlc_sched_free(s);
  }

  /* New decisions: every draw is a valid tiling, and several appear. */
  int seen[17] = {0}, distinct = 0;
  for (uint64_t seed = 0; seed < 40; seed++) {
    s = sched_of(MM, seed);
    mlc_replay_opts fresh = {.new_decisions = true};
    OK(mlc_sched_replay(s, t, &fresh, &rep, err));
    CHECK(rep.n_resampled == 0);
    const mlc_decision *got = &mlc_sched_trace(s)->insts.data[2].decision;
    CHECK(got->v[0] * got->v[1] == 128 && got->v[1] <= 16);
    char *want_ir = mm_tiled((int)got->v[0], (int)got->v[1]);
    CHECK(sched_equals(s, want_ir));
    mlc_free(want_ir);
    if (got->v[1] <= 16 && !seen[got->v[1]]++) distinct++;
    mlc_sched_free(s);
  }
  CHECK_MSG(distinct == 5, "%d distinct tilings", distinct);

  /* Replay onto a workload whose block is missing names the instruction. */
  s = sched_of(VEC128, 1);
  CHECK(!mlc_sched_replay(s, t, NULL, NULL, &e));
  CHECK_MSG(strstr(e.msg, "replay: instruction 0 (GetBlock): get_block: no block named \"C\""), "%s",
            e.msg);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static void json_error(const char *text, const char *want) {
  mlc_error e = {{0}};
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, text, strlen(text), &e);
  CHECK_MSG(!t, "accepted: %s", text);
  CHECK_MSG(strstr(e.msg, want), "message \"%s\" lacks \"%s\"", e.msg, want);
  mlc_arena_free(a);
}

static void test_trace_json_errors(void) {
  json_error("{\"insts\":[", "trace JSON: line 1, column 11: expected");
  json_error("[]", "trace: expected a JSON object");
  json_error("{\"insts\":[[\"Frobnicate\",[],{},[]]]}", "insts[0]: unknown instruction kind \"Frobnicate\"");
  json_error("{\"insts\":[[\"GetLoops\",[\"b0\"],{},[\"l1\"]]]}",
             "insts[0]: input 0: handle \"b0\" is not defined before");
  json_error("{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\"},[\"b0\"]]]}",
             "insts[0] (GetBlock): missing attr \"func_name\"");
  json_error("{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\",\"x\":1},[\"b0\"]]]}",
             "unknown attr \"x\"");
  json_error("{\"insts\":[],\"version\":2}", "version 2 is newer than this build reads (1)");
  json_error("{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]]],"
             "\"decisions\":{\"0\":[1]}}",
             "decisions: instruction 0 (GetBlock) is not a sampling instruction");
  json_error("{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"x0\"]]]}",
             "a handle name starts with b, l or v");
  json_error("{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"}]]}",
             "insts[0]: expected [kind, inputs, attrs, outputs]");
  json_error("{\"insts\":[],\"extra\":1}", "trace: unknown key \"extra\"");
  json_error("{\"insts\":[[\"Split\",[],{\"preserve_unit_iters\":true},[]]]}",
             "insts[0] (Split): needs at least 2 inputs, got 0");
}

/* Every kind this build applies, printed, through JSON and replayed. */
static void test_trace_all_kinds(void) {
  mlc_sched *s = sched_of(EW3, 21);
  mlc_rv b, *l, root, *kids, f, o[2], v, t[2];
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "B", "main", &b, err));
  CHECK(mlc_sched_get_loops(s, b, &l, &e) == 3);
  OK(mlc_sched_get_block(s, "root", "main", &root, err));
  CHECK(mlc_sched_get_child_blocks(s, root, &kids, &e) == 1);
  OK(mlc_sched_fuse(s, 2, l, false, &f, err));
  OK(mlc_sched_sample_perfect_tile(s, l[2], 2, 2, t, err));
  OK(mlc_sched_split(s, f, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, o, err));
  OK(mlc_sched_bind(s, o[0], "blockIdx.x", err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  OK(mlc_sched_unroll(s, l[2], err));
  OK(mlc_sched_sample_categorical(s, 3, (int64_t[]){0, 16, 64}, (double[]){0.25, 0.5, 0.25}, &v, err));
  OK(mlc_sched_annotate(s, kids[0], "note", MLC_OP_STR("a \"b\""), err));
  OK(mlc_sched_annotate(s, l[2], "ratio", MLC_OP_FLOAT(2), err));
  OK(mlc_sched_annotate(s, b, "meta_schedule.unroll_explicit", MLC_OP_RV(v), err));
  OK(mlc_sched_unannotate(s, l[2], "ratio", err));
  mlc_sched_enter_postproc(s);
  OK(mlc_sched_vectorize(s, l[2], err));
  int64_t d0 = mlc_sched_trace(s)->insts.data[5].decision.v[0];
  int64_t d1 = mlc_sched_trace(s)->insts.data[10].decision.v[0];
  char want[4096];
  snprintf(want, sizeof want,
      "# from tvm import tir\n"
      "def apply_trace(sch: tir.Schedule) -> None:\n"
      "  b0 = sch.get_block(name=\"B\", func_name=\"main\")\n"
      "  l1, l2, l3 = sch.get_loops(block=b0)\n"
      "  b4 = sch.get_block(name=\"root\", func_name=\"main\")\n"
      "  b5, = sch.get_child_blocks(b4)\n"
      "  l6 = sch.fuse(l1, l2, preserve_unit_iters=False)\n"
      "  v7, v8 = sch.sample_perfect_tile(loop=l3, n=2, max_innermost_factor=2, decision=[%d, %d])\n"
      "  l9, l10 = sch.split(loop=l6, factors=[None, 8], preserve_unit_iters=True)\n"
      "  sch.bind(loop=l9, thread_axis=\"blockIdx.x\")\n"
      "  sch.bind(loop=l10, thread_axis=\"threadIdx.x\")\n"
      "  sch.unroll(loop=l3)\n"
      "  v11 = sch.sample_categorical(candidates=[0, 16, 64], probs=[0.25, 0.5, 0.25], decision=%d)\n"
      "  sch.annotate(block_or_loop=b5, ann_key=\"note\", ann_val=\"a \\\"b\\\"\")\n"
      "  sch.annotate(block_or_loop=l3, ann_key=\"ratio\", ann_val=2.0)\n"
      "  sch.annotate(block_or_loop=b0, ann_key=\"meta_schedule.unroll_explicit\", ann_val=v11)\n"
      "  sch.unannotate(block_or_loop=l3, ann_key=\"ratio\")\n"
      "  sch.enter_postproc()\n"
      "  sch.vectorize(loop=l3)\n",
      (int)d0, (int)(4 / d0), (int)d1);
  char *tr = print_trace(s);
  CHECK_STREQ(tr, want);
  mlc_free(tr);

  char *js = trace_json(s);
  CHECK_MSG(strstr(js, "[\"Annotate\",[\"b5\",\"\\\"a \\\\\\\"b\\\\\\\"\\\"\"],{\"ann_key\":\"note\"},[]]"), "%s", js);
  CHECK_MSG(strstr(js, "[\"Annotate\",[\"l3\",2.0],{\"ann_key\":\"ratio\"},[]]"), "%s", js);
  CHECK_MSG(strstr(js, "[\"SampleCategorical\",[],{\"candidates\":[0,16,64],\"probs\":[0.25,0.5,0.25]},[\"v11\"]]"), "%s", js);
  CHECK_MSG(strstr(js, "[\"EnterPostproc\",[],{},[]]"), "%s", js);
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t2 = mlc_trace_from_json(a, js, strlen(js), &e);
  CHECK_MSG(t2, "%s", e.msg);
  mlc_str o2 = {0};
  if (t2) mlc_trace_to_json(&o2, t2);
  CHECK_STREQ(mlc_str_cstr(&o2), js);
  mlc_str_free(&o2);
  /* Replay, full and up to the postprocessors. */
  mlc_sched *r = sched_of(EW3, 5);
  OK(mlc_sched_replay(r, t2, NULL, NULL, err));
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)));
  char *js2 = trace_json(r);
  CHECK_STREQ(js2, js);
  mlc_free(js2);
  mlc_sched_free(r);
  r = sched_of(EW3, 5);
  mlc_replay_opts stop = {.stop_at_postproc = true};
  OK(mlc_sched_replay(r, t2, &stop, NULL, err));
  CHECK(mlc_sched_trace(r)->insts.len == mlc_sched_trace(s)->insts.len - 2);
  CHECK(!mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)));
  mlc_sched_free(r);
  mlc_free(js);
  mlc_arena_free(a);
  mlc_sched_free(s);
}

/* Corrupted traces: every one is either refused with a message or read,
 * printed and replayed (possibly refused) without crashing. */
static void fuzz_json(const char *base, const char *workload, int rounds, int *read, int *replayed) {
  static const char *const tokens[] = {"null", "1", "-1", "0", "17", "\"l1\"", "\"b0\"", "\"v4\"",
                                       "[]", "{}", "\"\\\"s\\\"\"", "2.5", "true", "[32,4]",
                                       "\"x\"", "99999999999"};
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 2024, 1);
  size_t len = strlen(base);
  for (int t = 0; t < rounds; t++) {
    mlc_str m = {0};
    /* Replace one JSON token (a run between delimiters) by another. */
    size_t at = mlc_pcg32_bounded(&r, (uint32_t)len), end = at;
    while (at > 0 && !strchr(",[]{}:", base[at - 1])) at--;
    while (end < len && !strchr(",[]{}:", base[end])) end++;
    mlc_str_putn(&m, base, at);
    mlc_str_puts(&m, tokens[mlc_pcg32_bounded(&r, MLC_COUNTOF(tokens))]);
    mlc_str_puts(&m, base + end);
    mlc_arena *a = mlc_arena_new();
    mlc_error e = {{0}};
    mlc_trace *tr = mlc_trace_from_json(a, mlc_str_cstr(&m), m.len, &e);
    if (!tr) {
      CHECK_MSG(e.msg[0], "refused without a message: %s", mlc_str_cstr(&m));
    } else {
      (*read)++;
      mlc_str o = {0};
      mlc_trace_print(&o, tr);
      mlc_trace_to_json(&o, tr);
      mlc_str_free(&o);
      mlc_sched *s = sched_of(workload, (uint64_t)t);
      mlc_replay_report rep;
      if (mlc_sched_replay(s, tr, NULL, &rep, &e)) (*replayed)++;
      else CHECK(strncmp(e.msg, "replay: instruction ", 20) == 0);
      mlc_sched_free(s);
    }
    mlc_arena_free(a);
    mlc_str_free(&m);
  }
}

static void test_trace_json_fuzz(void) {
  int read = 0, replayed = 0;
  fuzz_json(NOTES_JSON, MM, 2000, &read, &replayed);
  CHECK_MSG(read > 100 && replayed > 20, "%d read, %d replayed", read, replayed);
  /* A trace with every kind this build applies. */
  mlc_sched *s = sched_of(EW3, 21);
  mlc_rv b, *l, f, o[2], v;
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "B", "main", &b, err));
  CHECK(mlc_sched_get_loops(s, b, &l, &e) == 3);
  mlc_rv *kids;
  CHECK(mlc_sched_get_child_blocks(s, l[2], &kids, &e) == 1);
  OK(mlc_sched_fuse(s, 2, l, true, &f, err));
  OK(mlc_sched_split(s, f, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, o, err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  OK(mlc_sched_sample_categorical(s, 2, (int64_t[]){0, 16}, (double[]){0.5, 0.5}, &v, err));
  OK(mlc_sched_annotate(s, b, "k", MLC_OP_RV(v), err));
  OK(mlc_sched_annotate(s, l[2], "s", MLC_OP_STR("x"), err));
  OK(mlc_sched_unannotate(s, l[2], "s", err));
  mlc_sched_enter_postproc(s);
  OK(mlc_sched_vectorize(s, l[2], err));
  char *js = trace_json(s);
  read = replayed = 0;
  fuzz_json(js, EW3, 2000, &read, &replayed);
  CHECK_MSG(read > 100 && replayed > 20, "%d read, %d replayed", read, replayed);
  mlc_free(js);
  mlc_sched_free(s);
}

/* ---- copies ------------------------------------------------------------------------- */

static void test_copy(void) {
  mlc_sched *s = sched_of(MM, 3);
  OK(stochastic_schedule_mm(s, err));
  char *before = print_func(mlc_sched_func(s)), *tr_before = trace_json(s);
  mlc_sched *c = mlc_sched_copy(s);
  /* Handles carry over: l1 (i) and l7 (j_1) are live in the copy, l2 (j) dead. */
  CHECK(mlc_sched_rv_alive(c, 1) && mlc_sched_rv_alive(c, 7) && !mlc_sched_rv_alive(c, 2));
  OK(mlc_sched_parallel(c, 1, err));
  OK(mlc_sched_vectorize(c, 7, err));
  REFUSED(c, mlc_sched_unroll(c, 2, err), "no longer in the function");
  char *after = print_func(mlc_sched_func(s)), *tr_after = trace_json(s);
  CHECK_STREQ(before, after);
  CHECK_STREQ(tr_before, tr_after);
  CHECK(mlc_sched_trace(c)->insts.len == mlc_sched_trace(s)->insts.len + 2);
  /* The generator state is copied: both draw the same next tile. */
  mlc_rv v1[3], v2[3];
  OK(mlc_sched_sample_perfect_tile(s, 3, 3, 64, v1, err));
  OK(mlc_sched_sample_perfect_tile(c, 3, 3, 64, v2, err));
  CHECK_MSG(mlc_sched_rv_value(s, v1[0]) == mlc_sched_rv_value(c, v2[0]) &&
        mlc_sched_rv_value(s, v1[1]) == mlc_sched_rv_value(c, v2[1]), "%d %d / %d %d",
            (int)mlc_sched_rv_value(s, v1[0]), (int)mlc_sched_rv_value(s, v1[1]),
            (int)mlc_sched_rv_value(c, v2[0]), (int)mlc_sched_rv_value(c, v2[1]));
  mlc_sched_free(s); /* the copy outlives its source */
  OK(mlc_sched_unroll(c, 3, err));
  mlc_free(before), mlc_free(after), mlc_free(tr_before), mlc_free(tr_after);
  mlc_sched_free(c);
}

/* ---- numeric equivalence ---------------------------------------------------------------- */

/* Run f and g on the same random inputs; outputs must agree. Every
 * parameter is filled (outputs too: they are overwritten or accumulated
 * from an init). */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, uint64_t seed,
                         double *max_err, char *why, size_t why_n) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 1);
  int n = f->n_params;
  mlc_array **x = mlc_xmalloc(sizeof(mlc_array *) * (size_t)n * 2), **y = x + n;
  mlc_array *xs = mlc_xmalloc(sizeof(mlc_array) * (size_t)n * 2), *ys = xs + n;
  bool ok = true;
  *max_err = 0;
  for (int i = 0; i < n; i++) {
    x[i] = mlc_array_for_buffer(f->params[i]);
    y[i] = mlc_array_for_buffer(g->params[i]);
    mlc_array_fill_random(x[i], &rng);
    for (int64_t k = 0; k < mlc_array_numel(x[i]); k++) mlc_array_set(y[i], k, mlc_array_get(x[i], k));
    xs[i] = *x[i];
    ys[i] = *y[i];
  }
  mlc_error e = {{0}};
  if (!mlc_interp_run(f, xs, &e) || !mlc_interp_run(g, ys, &e)) {
    snprintf(why, why_n, "interp: %.200s", e.msg);
    ok = false;
  }
  for (int i = 0; ok && i < n; i++) {
    double m = 0, scale = 0;
    for (int64_t k = 0; k < mlc_array_numel(x[i]); k++) {
      double v = mlc_array_get(x[i], k);
      if (v > scale) scale = v;
      if (-v > scale) scale = -v;
    }
    if (!mlc_array_allclose(y[i], x[i], 1e-4, 1e-5 * (scale > 1 ? scale : 1), &m)) {
      snprintf(why, why_n, "param %d differs by %g", i, m);
      ok = false;
    }
    if (m > *max_err) *max_err = m;
  }
  for (int i = 0; i < n; i++) mlc_array_free(x[i]), mlc_array_free(y[i]);
  mlc_free(x);
  mlc_free(xs);
  return ok;
}

static const char *MM_SMALL =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((12, 20), \"float32\"), B: T.Buffer((20, 10), \"float32\"),\n"
    "         C: T.Buffer((12, 10), \"float32\")):\n"
    "    for i, j, k in T.grid(12, 10, 20):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_numeric_equivalence(void) {
  mlc_prim_func *f = parse(MM_SMALL);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv c, *l, i2[3], j2[2], k2[2], fu;
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "C", NULL, &c, err));
  CHECK(mlc_sched_get_loops(s, c, &l, &e) == 3);
  /* Uneven factors (predicates), a 3-way split, reorder, fuse, kinds. */
  OK(mlc_sched_split(s, l[0], 3, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(2), MLC_OP_INT(4)}, true,
                     i2, err));
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(3)}, true, j2, err));
  OK(mlc_sched_split(s, l[2], 2, (mlc_operand[]){MLC_OP_INT(7), MLC_OP_NONE}, false, k2, err));
  OK(mlc_sched_reorder(s, 7, (mlc_rv[]){i2[0], j2[0], k2[0], i2[1], k2[1], i2[2], j2[1]}, err));
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){i2[0], j2[0]}, true, &fu, err));
  OK(mlc_sched_parallel(s, fu, err));
  OK(mlc_sched_unroll(s, k2[1], err));
  OK(mlc_sched_vectorize(s, j2[1], err));
  CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "verify: %s", e.msg);
  char why[256] = "";
  double m;
  CHECK_MSG(same_results(f, mlc_sched_func(s), 5, &m, why, sizeof why), "%s", why);
  /* The check can fail: a wrong binding gives different results. */
  mlc_sched *bad = mlc_sched_new(f, 1);
  mlc_rv bc, *bl;
  OK(mlc_sched_get_block(bad, "C", NULL, &bc, err));
  CHECK(mlc_sched_get_loops(bad, bc, &bl, &e) == 3);
  mlc_block *blk = (mlc_block *)mlc_sched_rv_block(bad, bc);
  MLC_ASSERT(blk);
  mlc_stmt *lj = (mlc_stmt *)mlc_sched_rv_loop(bad, bl[1]);
  lj->loop.extent = mlc_int(mlc_sched_arena(bad), 9); /* drop a column */
  CHECK(!same_results(f, mlc_sched_func(bad), 5, &m, why, sizeof why));
  mlc_sched_free(bad);
  mlc_sched_free(s);

  /* A loop not starting at 0: uneven split keeps the offset; fuse refuses. */
  f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((12, 3), \"float32\"), B: T.Buffer((12, 3), \"float32\")):\n"
      "    for i in range(2, 11):\n"
      "        for j in range(3):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                B[vi, vj] = A[vi, vj] + T.float32(1)\n");
  MLC_ASSERT(f);
  s = mlc_sched_new(f, 1);
  mlc_rv i = first_loop(s, "B", 0), j = first_loop(s, "B", 1), fused;
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &fused, err), "the loop starts at 2, not 0");
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, i2, err));
  OK(mlc_sched_reorder(s, 3, (mlc_rv[]){j, i2[1], i2[0]}, err));
  CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "verify: %s", e.msg);
  CHECK_MSG(same_results(f, mlc_sched_func(s), 9, &m, why, sizeof why), "%s", why);
  mlc_sched_free(s);
}

/* ---- random primitive sequences ------------------------------------------------------------ */

typedef struct prop_stats {
  int sequences, applied, refused, replayed;
  int per_kind[MLC_INST_KIND_COUNT];
} prop_stats;

static void block_names(mlc_stmt *st, const char **names, int *n) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: block_names(st->loop.body, names, n); return;
  case MLC_STMT_BLOCK_REALIZE:
    if (strcmp(st->realize.block->name, "root") != 0 && *n < 32) names[(*n)++] = st->realize.block->name;
    block_names(st->realize.block->init, names, n);
    block_names(st->realize.block->body, names, n);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) block_names(st->seq.stmts[i], names, n);
    return;
  case MLC_STMT_IF:
    block_names(st->if_.then_s, names, n);
    block_names(st->if_.else_s, names, n);
    return;
  case MLC_STMT_ALLOCATE: block_names(st->alloc.body, names, n); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
}

static uint32_t rnd(mlc_pcg32 *r, uint32_t n) { return mlc_pcg32_bounded(r, n); }

static int cache_stages_moved;

/* The tuner's pattern after a cache stage: move it under a loop of the
 * block it serves (compute_at for a read copy, reverse_compute_at for a
 * write-back). A refusal must leave the state as the cache left it. */
static void move_cache_stage(mlc_sched *s, mlc_pcg32 *r, mlc_rv stage, mlc_rv b, bool reverse) {
  mlc_error e = {{0}};
  mlc_rv *l;
  int n = mlc_sched_get_loops(s, b, &l, &e);
  if (n <= 0) return;
  snapshot before = snap(s);
  mlc_rv x = l[rnd(r, (uint32_t)n)];
  bool ok = reverse ? mlc_sched_reverse_compute_at(s, stage, x, rnd(r, 4) == 0, -1, &e)
                    : mlc_sched_compute_at(s, stage, x, rnd(r, 4) == 0, -1, &e);
  if (ok) cache_stages_moved++, mlc_free(before.ir), mlc_free(before.json);
  else check_refused_(__FILE__, __LINE__, s, before, false, &e, "");
}

/* cache_read, cache_write, set_scope and
 * storage_align on block b with random (sometimes invalid) arguments;
 * half the new stages are then moved under a loop of b. Getters it calls
 * first are recorded, so *before is taken again. */
static bool random_cache_primitive(mlc_sched *s, mlc_pcg32 *r, mlc_rv b, snapshot *before,
                                   mlc_inst_kind *kind, mlc_error *e) {
  static const char *const scopes[] = {"shared", "local", "global", "shared", "local", "texture"};
  const mlc_block *blk = mlc_sched_rv_block(s, b);
  const char *scope = scopes[rnd(r, MLC_COUNTOF(scopes))];
  mlc_rv out, *cons = NULL;
  int n_cons = 0;
  bool ok;
  switch (rnd(r, 4)) {
  case 0: /* cache_read, maybe only for this block */
    *kind = MLC_INST_CACHE_READ;
    if (rnd(r, 4) == 0) cons = &b, n_cons = 1;
    ok = mlc_sched_cache_read(s, b, (int)rnd(r, (uint32_t)blk->n_reads + 1), scope, n_cons, cons,
                              &out, e);
    if (ok && rnd(r, 2)) move_cache_stage(s, r, out, b, false);
    return ok;
  case 1: /* cache_write, maybe with the consumers reading the cache */
    *kind = MLC_INST_CACHE_WRITE;
    if (rnd(r, 4) == 0) {
      n_cons = mlc_sched_get_consumers(s, b, &cons, e);
      if (n_cons < 0) return false;
      mlc_free(before->ir), mlc_free(before->json);
      *before = snap(s);
    }
    ok = mlc_sched_cache_write(s, b, (int)rnd(r, (uint32_t)blk->n_writes + 1), scope, n_cons,
                               cons, &out, e);
    if (ok && rnd(r, 2)) move_cache_stage(s, r, out, b, true);
    return ok;
  case 2:
    *kind = MLC_INST_SET_SCOPE;
    return mlc_sched_set_scope(s, b, (int)rnd(r, (uint32_t)blk->n_writes + 1), scope, e);
  case 3:
    *kind = MLC_INST_STORAGE_ALIGN;
    return mlc_sched_storage_align(s, b, (int)rnd(r, (uint32_t)blk->n_writes + 1),
                                   (int)rnd(r, 5) - 2, (int)rnd(r, 33), (int)rnd(r, 9), e);
  }
  return false;
}

/* decompose_reduction, rfactor and blockize
 * with random (often invalid) arguments. Half the time on a block of the
 * current function (decompose renames "C" to "C_update", rfactor and
 * blockize add blocks), whose getters are recorded, so *before is taken
 * again. */
static bool random_reduction_primitive(mlc_sched *s, mlc_pcg32 *r, mlc_rv b, mlc_rv x,
                                       snapshot *before, mlc_inst_kind *kind, mlc_error *e) {
  mlc_rv out, *l;
  if (rnd(r, 2)) {
    const char *names[32];
    int nn = 0;
    block_names(mlc_sched_func(s)->body, names, &nn);
    if (nn == 0 || !mlc_sched_get_block(s, names[rnd(r, (uint32_t)nn)], NULL, &b, e)) return false;
    int n = mlc_sched_get_loops(s, b, &l, e);
    if (n <= 0) return false;
    x = l[rnd(r, (uint32_t)n)];
    mlc_free(before->ir), mlc_free(before->json);
    *before = snap(s);
  }
  switch (rnd(r, 3)) {
  case 0:
    *kind = MLC_INST_DECOMPOSE_REDUCTION;
    return mlc_sched_decompose_reduction(s, b, x, &out, e);
  case 1: *kind = MLC_INST_RFACTOR; return mlc_sched_rfactor(s, x, (int)rnd(r, 5) - 2, &out, e);
  case 2: {
    /* On a copy, checked here: a later uneven split inside the blockized
     * block adds a T.where that the verifier's region coverage check of
     * the outer block does not take into account (reported to ir/). */
    *kind = MLC_INST_BLOCKIZE;
    mlc_sched *c = mlc_sched_copy(s);
    bool ok = mlc_sched_blockize(c, x, rnd(r, 2), &out, e);
    char why[256] = "";
    double m;
    if (!ok) {
      check_refused_(__FILE__, __LINE__, c, snap(s), false, e, "");
    } else {
      CHECK_MSG(mlc_verify_func(mlc_sched_func(c), e), "blockize: verify: %s", e->msg);
      CHECK_MSG(same_results(mlc_sched_func(s), mlc_sched_func(c), 5, &m, why, sizeof why),
                "blockize: %s", why);
    }
    mlc_sched_free(c);
    return ok;
  }
  }
  return false;
}

/* compute_at / reverse_compute_at at a loop
 * of a random block of the current function, compute_inline,
 * reverse_compute_inline, and a sampled location used by compute_at (the
 * tuner's pattern). Getters and samples are recorded, so *before is taken
 * again after them. */
static bool random_compute_primitive(mlc_sched *s, mlc_pcg32 *r, mlc_rv b, snapshot *before,
                                     mlc_inst_kind *kind, mlc_error *e) {
  static const int indices[] = {-1, -1, -1, -2, 0, 1};
  mlc_rv b2, *l, loc;
  int op = (int)rnd(r, 6);
  bool preserve = rnd(r, 4) == 0;
  int index = indices[rnd(r, MLC_COUNTOF(indices))];
  if (op <= 1) {
    const char *names[32];
    int nn = 0;
    block_names(mlc_sched_func(s)->body, names, &nn);
    if (nn == 0 || !mlc_sched_get_block(s, names[rnd(r, (uint32_t)nn)], NULL, &b2, e)) return false;
    int n = mlc_sched_get_loops(s, b2, &l, e);
    if (n <= 0) return false;
    mlc_free(before->ir), mlc_free(before->json);
    *before = snap(s);
    mlc_rv x = l[rnd(r, (uint32_t)n)];
    if (op == 0) return *kind = MLC_INST_COMPUTE_AT, mlc_sched_compute_at(s, b, x, preserve, index, e);
    return *kind = MLC_INST_REVERSE_COMPUTE_AT,
           mlc_sched_reverse_compute_at(s, b, x, preserve, index, e);
  }
  if (op == 2) return *kind = MLC_INST_COMPUTE_INLINE, mlc_sched_compute_inline(s, b, e);
  if (op == 3) return *kind = MLC_INST_REVERSE_COMPUTE_INLINE, mlc_sched_reverse_compute_inline(s, b, e);
  *kind = MLC_INST_SAMPLE_COMPUTE_LOCATION;
  if (!mlc_sched_sample_compute_location(s, b, &loc, e)) return false;
  mlc_free(before->ir), mlc_free(before->json);
  *before = snap(s);
  /* A sampled location is always accepted. */
  bool ok = mlc_sched_compute_at(s, b, loc, false, -1, e);
  CHECK_MSG(ok, "compute_at at a sampled location: %s", e->msg);
  return ok;
}

/* One random primitive on a random block's loops; returns whether it was
 * applied. Refusals are checked to leave the state unchanged. */
static bool random_primitive(mlc_sched *s, mlc_pcg32 *r, const char **names, int n_names,
                             mlc_inst_kind *kind) {
  mlc_error e = {{0}};
  mlc_rv b, *l, o[4], v[4];
  if (!mlc_sched_get_block(s, names[rnd(r, (uint32_t)n_names)], NULL, &b, &e)) return false;
  int n = mlc_sched_get_loops(s, b, &l, &e);
  if (n <= 0) return false;
  mlc_rv x = l[rnd(r, (uint32_t)n)];
  snapshot before = snap(s);
  bool ok = false;
  switch (rnd(r, 15)) {
  case 0: { /* split with sampled factors */
    int k = 2 + (int)rnd(r, 2);
    static const int maxi[] = {4, 16, 64};
    *kind = MLC_INST_SPLIT;
    if (!mlc_sched_sample_perfect_tile(s, x, k, maxi[rnd(r, 3)], v, &e)) break;
    mlc_operand f[4];
    for (int i = 0; i < k; i++) f[i] = MLC_OP_RV(v[i]);
    /* The sample itself is recorded even if the split is refused. */
    mlc_free(before.ir), mlc_free(before.json);
    before = snap(s);
    ok = mlc_sched_split(s, x, k, f, rnd(r, 2), o, &e);
    break;
  }
  case 1: { /* split with literal factors, maybe uneven, maybe too small */
    int k = 2 + (int)rnd(r, 2);
    mlc_operand f[4];
    int none = (int)rnd(r, (uint32_t)k + 1);
    for (int i = 0; i < k; i++) f[i] = i == none ? MLC_OP_NONE : MLC_OP_INT(1 + rnd(r, 5));
    *kind = MLC_INST_SPLIT;
    ok = mlc_sched_split(s, x, k, f, rnd(r, 2), o, &e);
    break;
  }
  case 2: { /* fuse 2 or 3 consecutive loops of the block (maybe not adjacent) */
    int k = 2 + (int)rnd(r, 2), at = (int)rnd(r, (uint32_t)n);
    if (at + k > n) break;
    *kind = MLC_INST_FUSE;
    ok = mlc_sched_fuse(s, k, l + at, rnd(r, 2), o, &e);
    break;
  }
  case 3: { /* reorder a random subset in random order; sometimes another block's loop */
    mlc_rv sub[8];
    int k = 0;
    for (int i = 0; i < n && k < 8; i++)
      if (rnd(r, 2)) sub[k++] = l[i];
    for (int i = k - 1; i > 0; i--) {
      int j = (int)rnd(r, (uint32_t)i + 1);
      mlc_rv t = sub[i];
      sub[i] = sub[j], sub[j] = t;
    }
    if (rnd(r, 8) == 0 && k < 8) {
      mlc_rv b2, *l2;
      if (mlc_sched_get_block(s, names[rnd(r, (uint32_t)n_names)], NULL, &b2, &e) &&
          mlc_sched_get_loops(s, b2, &l2, &e) > 0)
        sub[k++] = l2[0];
      mlc_free(before.ir), mlc_free(before.json);
      before = snap(s);
    }
    if (k == 0) break;
    *kind = MLC_INST_REORDER;
    ok = mlc_sched_reorder(s, k, sub, &e);
    break;
  }
  case 4: *kind = MLC_INST_PARALLEL, ok = mlc_sched_parallel(s, x, &e); break;
  case 5: *kind = MLC_INST_VECTORIZE, ok = mlc_sched_vectorize(s, x, &e); break;
  case 6: *kind = MLC_INST_UNROLL, ok = mlc_sched_unroll(s, x, &e); break;
  case 7: {
    static const char *const tags[] = {"blockIdx.x", "threadIdx.x", "vthread.x", "threadIdx.y"};
    *kind = MLC_INST_BIND;
    ok = mlc_sched_bind(s, x, tags[rnd(r, 4)], &e);
    break;
  }
  case 8: {
    *kind = MLC_INST_ANNOTATE;
    if (rnd(r, 2)) {
      ok = mlc_sched_annotate(s, b, "meta_schedule.unroll_explicit", MLC_OP_INT(rnd(r, 64)), &e);
    } else {
      if (!mlc_sched_sample_categorical(s, 2, (int64_t[]){0, 16}, (double[]){0.5, 0.5}, v, &e)) break;
      mlc_free(before.ir), mlc_free(before.json);
      before = snap(s);
      ok = mlc_sched_annotate(s, x, "pragma_auto_unroll_max_step", MLC_OP_RV(v[0]), &e);
    }
    break;
  }
  case 9:
  case 10: ok = random_cache_primitive(s, r, b, &before, kind, &e); break;
  case 11:
  case 12: ok = random_reduction_primitive(s, r, b, x, &before, kind, &e); break;
  case 13:
  case 14: ok = random_compute_primitive(s, r, b, &before, kind, &e); break;
  }
  if (!ok) check_refused_(__FILE__, __LINE__, s, before, false, &e, "");
  else mlc_free(before.ir), mlc_free(before.json);
  return ok;
}

static void property_func(const char *task, mlc_prim_func *f, int n_seq, int steps,
                          prop_stats *st) {
  mlc_error e = {{0}};
  const char *names[32];
  int n_names = 0;
  block_names(f->body, names, &n_names);
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, mlc_hash_str(task, 0), 3);
  for (int q = 0; q < n_seq && !test_case_failed_; q++) {
    mlc_sched *s = mlc_sched_new(f, (uint64_t)q);
    int applied = 0;
    for (int t = 0; t < steps; t++) {
      mlc_inst_kind k = MLC_INST_GET_BLOCK;
      if (random_primitive(s, &r, names, n_names, &k)) applied++, st->per_kind[k]++;
      else st->refused++;
    }
    st->sequences++;
    st->applied += applied;
    char why[256] = "";
    double m;
    CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "%s seq %d: verify: %s", task, q, e.msg);
    bool same = same_results(f, mlc_sched_func(s), (uint64_t)q, &m, why, sizeof why);
    CHECK_MSG(same, "%s seq %d: %s", task, q, why);
    if (!same) { /* show the case */
      char *tr = print_trace(s), *ir = print_func(mlc_sched_func(s));
      fprintf(stderr, "%s%s", tr, ir);
      mlc_free(tr), mlc_free(ir);
    }
    /* Its trace, through JSON, replays to the same IR. */
    if (q % 4 == 0) {
      char *js = trace_json(s);
      mlc_arena *ta = mlc_arena_new();
      mlc_trace *t = mlc_trace_from_json(ta, js, strlen(js), &e);
      CHECK_MSG(t, "%s", e.msg);
      mlc_sched *s2 = mlc_sched_new(f, 777);
      CHECK_MSG(t && mlc_sched_replay(s2, t, NULL, NULL, &e), "%s seq %d: replay: %s", task, q, e.msg);
      CHECK_MSG(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(s2)), "%s seq %d: replay differs",
                task, q);
      char *js2 = trace_json(s2);
      CHECK_STREQ(js, js2);
      st->replayed++;
      mlc_free(js), mlc_free(js2);
      mlc_sched_free(s2);
      mlc_arena_free(ta);
    }
    mlc_sched_free(s);
  }
}

static void property_task(const char *task, const char *shape, int n_seq, int steps,
                          prop_stats *st) {
  mlc_error e = {{0}};
  const mlc_task_def *d = mlc_task_find(task);
  CHECK_MSG(d, "no task %s", task);
  if (!d) return;
  int64_t sh[MLC_TASK_MAX_DIMS];
  CHECK_MSG(mlc_task_parse_shape(d, shape, sh, &e), "%s", e.msg);
  mlc_arena *a = mlc_arena_new();
  property_func(task, mlc_task_build(a, d, sh), n_seq, steps, st);
  mlc_arena_free(a);
}

/* Reversed, strided, floordiv and floormod accesses (TensorIR's
 * quasi-affine indices), each buffer read at one index per block. */
static const char *PROP_QUASI_AFFINE =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 8), \"float32\"), D: T.Buffer((4, 16), \"float32\")):\n"
    "    B = T.alloc_buffer((8, 8))\n"
    "    C = T.alloc_buffer((4, 8))\n"
    "    for i, j in T.grid(8, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[7 - vi, vj] = A[vi, vj] * T.float32(2)\n"
    "    for i, j in T.grid(4, 8):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[2 * vi, 7 - vj] + T.float32(1)\n"
    "    for i, j in T.grid(4, 16):\n"
    "        with T.block(\"D\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            D[vi, vj] = C[3 - vi, vj // 4 + vj % 4] * T.float32(3)\n";

static void test_random_sequences(void) {
  prop_stats st = {0};
  clock_t t0 = clock();
  property_task("matmul", "12,16,10", 600, 10, &st);
  property_task("softmax", "6,10", 500, 10, &st);
  property_task("dense_bias_relu", "8,12,6", 400, 10, &st);
  property_task("conv2d_nchw", "1,2,6,6,3,3,3", 200, 10, &st);
  property_func("quasi_affine", parse(PROP_QUASI_AFFINE), 300, 10, &st);
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  printf("# random sequences: %d sequences, %d primitives applied (%.1f per sequence), %d refused, "
         "%d replayed via JSON, %.2f s\n#  applied:",
         st.sequences, st.applied, (double)st.applied / (st.sequences ? st.sequences : 1), st.refused,
         st.replayed, secs);
  for (int k = 0; k < MLC_INST_KIND_COUNT; k++)
    if (st.per_kind[k]) printf(" %s %d", mlc_inst_kind_name((mlc_inst_kind)k), st.per_kind[k]);
  printf("\n");
  printf("#  cache stages then moved by compute_at/reverse_compute_at: %d\n", cache_stages_moved);
  CHECK(st.applied > st.sequences); /* the test must exercise something */
}

int main(void) {
  TA = mlc_arena_new();
  RUN(test_get_block_loops);
  RUN(test_producers_consumers);
  RUN(test_getter_refusals);
  RUN(test_split_reorder_notes);
  RUN(test_split_golden);
  RUN(test_split_refusals);
  RUN(test_fuse_golden);
  RUN(test_fuse_refusals);
  RUN(test_reorder_golden);
  RUN(test_reorder_refusals);
  RUN(test_loop_kinds_golden);
  RUN(test_loop_kind_refusals);
  RUN(test_carried_dependences);
  RUN(test_annotate);
  RUN(test_sample_perfect_tile);
  RUN(test_sample_categorical);
  RUN(test_notes_trace);
  RUN(test_trace_json);
  RUN(test_replay_decisions);
  RUN(test_trace_json_errors);
  RUN(test_trace_all_kinds);
  RUN(test_trace_json_fuzz);
  RUN(test_copy);
  RUN(test_numeric_equivalence);
  RUN(test_random_sequences);
  mlc_arena_free(TA);
  return test_summary();
}
