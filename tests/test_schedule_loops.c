/* Loop primitives against TensorIR's rules: split and fuse of bound or
 * annotated loops, parallel / vectorize / bind over blocks without compact
 * data flow or affine bindings, and rebinding / unrolling bound loops.
 *
 * Refusals must name the primitive, the loop or block and the reason, and
 * leave the printed IR, the trace, the handles and the generator as they
 * were. Accepted schedules must verify and compute what the unscheduled
 * program computes (interpreter; LLVM where it matters). */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>

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

static bool sched_equals(const mlc_sched *s, const char *expected) {
  mlc_prim_func *want = parse(expected);
  if (!want) return false;
  bool eq = mlc_func_struct_equal(mlc_sched_func(s), want);
  if (!eq) {
    char *got = print_func(mlc_sched_func(s)), *w = print_func(want);
    fprintf(stderr, "---- got:\n%s---- expected:\n%s", got, w);
    mlc_free(got);
    mlc_free(w);
  }
  return eq;
}

static mlc_sched *sched_of(const char *text) {
  mlc_prim_func *f = parse(text);
  MLC_ASSERT(f);
  return mlc_sched_new(f, 1);
}

/* The loops of a block, outer first (handles l1, l2, ... of a fresh state). */
static void loops_of(mlc_sched *s, const char *block, int n, mlc_rv *out) {
  mlc_rv b, *l;
  mlc_error e = {{0}};
  MLC_ASSERT(mlc_sched_get_block(s, block, NULL, &b, &e));
  MLC_ASSERT(mlc_sched_get_loops(s, b, &l, &e) == n);
  memcpy(out, l, sizeof *out * (size_t)n);
}

/* ---- refusal checks ------------------------------------------------------------ */

typedef struct snapshot {
  char *ir, *json;
  int n_rvs;
  int64_t draw; /* what the state's generator gives next */
} snapshot;

static int64_t next_draw(const mlc_sched *s) {
  mlc_sched *c = mlc_sched_copy(s);
  int64_t cand[16];
  double pr[16];
  for (int i = 0; i < 16; i++) cand[i] = i, pr[i] = 1;
  mlc_rv v;
  mlc_error e = {{0}};
  int64_t d = mlc_sched_sample_categorical(c, 16, cand, pr, &v, &e) ? mlc_sched_rv_value(c, v) : -1;
  mlc_sched_free(c);
  return d;
}

static snapshot snap(const mlc_sched *s) {
  return (snapshot){print_func(mlc_sched_func(s)), trace_json(s), mlc_sched_n_rvs(s), next_draw(s)};
}

static void check_refused_(const char *file, int line, mlc_sched *s, snapshot before, bool ok,
                           const mlc_error *err, const char *want) {
  snapshot after = snap(s);
  if (ok) test_fail_(file, line, "accepted, expected refusal with \"%s\"", want);
  else if (!strstr(err->msg, want))
    test_fail_(file, line, "message \"%s\" lacks \"%s\"", err->msg, want);
  if (strcmp(before.ir, after.ir) != 0) test_fail_(file, line, "IR changed by a refusal");
  if (strcmp(before.json, after.json) != 0) test_fail_(file, line, "trace changed by a refusal");
  if (before.n_rvs != after.n_rvs) test_fail_(file, line, "handles changed by a refusal");
  if (before.draw != after.draw) test_fail_(file, line, "generator changed by a refusal");
  mlc_free(before.ir);
  mlc_free(before.json);
  mlc_free(after.ir);
  mlc_free(after.json);
}

#define REFUSED(s, call, want)                                 \
  do {                                                         \
    mlc_error e_ = {{0}};                                      \
    snapshot b_ = snap(s);                                     \
    mlc_error *err = &e_;                                      \
    bool ok_ = (call);                                         \
    check_refused_(__FILE__, __LINE__, s, b_, ok_, err, want); \
  } while (0)

#define OK(call)                                    \
  do {                                              \
    mlc_error e_ = {{0}};                           \
    mlc_error *err = &e_;                           \
    bool ok_ = (call);                              \
    CHECK_MSG(ok_, "%s failed: %s", #call, e_.msg); \
  } while (0)

/* ---- numeric checks ---------------------------------------------------------------- */

typedef struct args {
  int n;
  mlc_array **x;
  mlc_array *xs;
} args;

static args args_new(const mlc_prim_func *f, uint64_t seed) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 1);
  args a = {f->n_params, mlc_xmalloc(sizeof(mlc_array *) * (size_t)(f->n_params + 1)),
            mlc_xmalloc(sizeof(mlc_array) * (size_t)(f->n_params + 1))};
  for (int i = 0; i < a.n; i++) {
    a.x[i] = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(a.x[i], &rng);
    a.xs[i] = *a.x[i];
  }
  return a;
}

static void args_free(args a) {
  for (int i = 0; i < a.n; i++) mlc_array_free(a.x[i]);
  mlc_free(a.x);
  mlc_free(a.xs);
}

static bool args_close(args x, args y, char *why, size_t n) {
  for (int i = 0; i < x.n; i++) {
    double m = 0;
    if (!mlc_array_allclose(y.x[i], x.x[i], 1e-4, 1e-5, &m)) {
      snprintf(why, n, "param %d differs by %g", i, m);
      return false;
    }
  }
  return true;
}

/* The scheduled function verifies and gives the original's results in the
 * interpreter, and (compiled) when the function runs on the CPU. */
static void check_equivalent_(const char *file, int line, const char *orig, const mlc_sched *s,
                              bool compiled) {
  const mlc_prim_func *f = parse(orig), *g = mlc_sched_func(s);
  mlc_error e = {{0}};
  char why[300] = "";
  if (!mlc_verify_func(g, &e)) {
    test_fail_(file, line, "verify: %s", e.msg);
    return;
  }
  args x = args_new(f, 7), y = args_new(g, 7);
  bool ok = mlc_interp_run_n(f, x.n, x.xs, &e);
  if (ok && compiled) {
    mlc_target t;
    mlc_object obj = {0};
    mlc_target_host(&t);
    const char *syms[1] = {g->name};
    ok = mlc_target_build(&t, 1, &g, syms, NULL, &obj, &e);
    mlc_jit_lib *lib = ok ? mlc_jit_load(&obj, &e) : NULL;
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, g->name, &e) : NULL;
    ok = fn && mlc_kernel_call(fn, y.n, y.xs) == 0;
    if (lib) mlc_jit_unload(lib);
    mlc_object_free(&obj);
  } else if (ok) {
    ok = mlc_interp_run_n(g, y.n, y.xs, &e);
  }
  if (!ok) test_fail_(file, line, "run: %s", e.msg);
  else if (!args_close(x, y, why, sizeof why)) test_fail_(file, line, "%s", why);
  args_free(x);
  args_free(y);
}
#define CHECK_EQUIVALENT(orig, s, compiled) check_equivalent_(__FILE__, __LINE__, orig, s, compiled)

/* ---- workloads -------------------------------------------------------------------------- */

static const char *VEC128 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
    "    for i in range(128):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(128, i)\n"
    "            B[vi] = A[vi] + T.float32(1)\n";

static const char *EW2 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((64, 32), \"float32\"), B: T.Buffer((64, 32), \"float32\")):\n"
    "    for i, j in T.grid(64, 32):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(2)\n";

static const char *MM =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16, 16), \"float32\"),\n"
    "         C: T.Buffer((16, 16), \"float32\")):\n"
    "    for i, j, k in T.grid(16, 16, 16):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* Each iteration reads what the previous one wrote (a prefix product). */
static const char *SHIFT =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((17,), \"float32\")):\n"
    "    for i in range(16):\n"
    "        with T.block(\"S\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            T.reads(A[vi])\n"
    "            T.writes(A[vi + 1])\n"
    "            A[vi + 1] = A[vi] * T.float32(0.5)\n";

/* The same along the inner loop of a 2-d nest. */
static const char *SHIFT2 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 9), \"float32\")):\n"
    "    for i, j in T.grid(8, 8):\n"
    "        with T.block(\"S\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(A[vi, vj + 1])\n"
    "            A[vi, vj + 1] = A[vi, vj] + T.float32(1)\n";

/* The init runs twice (k = 0 and 1 both give vk = 0): not an affine
 * reduction. */
static const char *SQ_REDUCE =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 128), \"float32\"), B: T.Buffer((8,), \"float32\")):\n"
    "    for i, k in T.grid(8, 16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            vk = T.axis.reduce(128, T.floordiv(k * k, 2))\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vi])\n"
    "            with T.init():\n"
    "                B[vi] = T.float32(0)\n"
    "            B[vi] = B[vi] + A[vi, vk]\n";

/* A reduction whose reduce iter indexes its output. */
static const char *REDUCE_INDEXED =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8,), \"float32\")):\n"
    "    for i, k in T.grid(8, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vk])\n"
    "            with T.init():\n"
    "                B[vk] = T.float32(0)\n"
    "            B[vk] = B[vk] + A[vi, vk]\n";

/* A spatial iter bound to 2 * i: every other element (not affine). */
static const char *STRIDED =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for i in range(32):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(64, i * 2)\n"
    "            B[vi] = A[vi] + T.float32(1)\n";

/* Two iters bound to the same loop: the diagonal. */
static const char *DIAG =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16, 16), \"float32\")):\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, i])\n"
    "            B[vi, vj] = A[vi, vj] + T.float32(1)\n";

/* ---- item 3: split of a bound or annotated loop ------------------------------------------- */

static void test_split_bound_loop(void) {
  mlc_sched *s = sched_of(VEC128);
  mlc_rv l[2], o[2], p[2];
  loops_of(s, "B", 1, l);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(32)}, true,
                     o, err));
  OK(mlc_sched_bind(s, o[0], "blockIdx.x", err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  REFUSED(s, mlc_sched_split(s, o[0], 2, (mlc_operand[]){MLC_OP_INT(2), MLC_OP_NONE}, true, p, err),
          "split: l2 (loop i_0) is bound to blockIdx.x; TensorIR only splits loops without a "
          "thread binding or annotations");
  REFUSED(s, mlc_sched_split(s, o[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, p, err),
          "split: l3 (loop i_1) is bound to threadIdx.x");
  /* An uneven split is refused the same way (no predicate is added). */
  REFUSED(s, mlc_sched_split(s, o[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(5)}, true, p, err),
          "split: l3 (loop i_1) is bound to threadIdx.x");
  mlc_sched_free(s);

  /* A virtual thread, bound directly. */
  s = sched_of(EW2);
  loops_of(s, "B", 2, l);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_bind(s, j, "vthread.x", err));
  REFUSED(s, mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_INT(4), MLC_OP_INT(8)}, true, p, err),
          "split: l2 (loop j) is bound to vthread.x");
  /* Unbinding it (unroll) makes it splittable again. */
  OK(mlc_sched_unroll(s, j, err));
  OK(mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_INT(4), MLC_OP_INT(8)}, true, p, err));
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_INT(8), MLC_OP_INT(8)}, true, o, err));
  CHECK_EQUIVALENT(EW2, s, false);
  mlc_sched_free(s);
}

static void test_split_annotated_loop(void) {
  mlc_sched *s = sched_of(EW2);
  mlc_rv l[2], p[2];
  loops_of(s, "B", 2, l);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_annotate(s, i, "pragma_auto_unroll_max_step", MLC_OP_INT(16), err));
  REFUSED(s, mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, p, err),
          "split: l1 (loop i) carries annotation \"pragma_auto_unroll_max_step\"; TensorIR only "
          "splits loops without a thread binding or annotations");
  OK(mlc_sched_annotate(s, j, "a", MLC_OP_INT(1), err));
  OK(mlc_sched_annotate(s, j, "b", MLC_OP_STR("x"), err));
  REFUSED(s, mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, p, err),
          "split: l2 (loop j) carries annotation \"a\" and others");
  /* Without annotations the loop splits. */
  OK(mlc_sched_unannotate(s, i, "pragma_auto_unroll_max_step", err));
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, p, err));
  CHECK_EQUIVALENT(EW2, s, false);
  mlc_sched_free(s);
}

/* ---- item 4: fuse of annotated or bound loops ------------------------------------------------ */

static void test_fuse_annotated_loops(void) {
  mlc_sched *s = sched_of(EW2);
  mlc_rv l[2], f;
  loops_of(s, "B", 2, l);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_annotate(s, i, "pragma_auto_unroll_max_step", MLC_OP_INT(16), err));
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err),
          "fuse: l1 (loop i) carries annotation \"pragma_auto_unroll_max_step\"; TensorIR only fuses "
          "loops without a thread binding or annotations");
  OK(mlc_sched_unannotate(s, i, "pragma_auto_unroll_max_step", err));
  /* The inner loop's annotation refuses it too. */
  OK(mlc_sched_annotate(s, j, "ratio", MLC_OP_FLOAT(0.5), err));
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err),
          "fuse: l2 (loop j) carries annotation \"ratio\"");
  OK(mlc_sched_unannotate(s, j, "ratio", err));
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((64, 32), \"float32\"), B: T.Buffer((64, 32), \"float32\")):\n"
      "    for i_j_fused in range(2048):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(64, i_j_fused // 32)\n"
      "            vj = T.axis.spatial(32, i_j_fused % 32)\n"
      "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"));
  CHECK_EQUIVALENT(EW2, s, false);
  mlc_sched_free(s);
}

static void test_fuse_bound_loops(void) {
  mlc_sched *s = sched_of(EW2);
  mlc_rv l[2], f;
  loops_of(s, "B", 2, l);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_bind(s, i, "blockIdx.x", err));
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err),
          "fuse: l1 (loop i) is bound to blockIdx.x; TensorIR only fuses loops without a thread "
          "binding or annotations");
  mlc_sched_free(s);
  s = sched_of(EW2);
  loops_of(s, "B", 2, l);
  i = l[0], j = l[1];
  OK(mlc_sched_bind(s, j, "threadIdx.x", err));
  REFUSED(s, mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err),
          "fuse: l2 (loop j) is bound to threadIdx.x");
  mlc_sched_free(s);
}

/* ---- item 6: parallel / vectorize / bind need compact data flow and affine bindings ---- */

static void test_parallel_carried_in_place(void) {
  mlc_sched *s = sched_of(SHIFT);
  mlc_rv l[2], p[2];
  loops_of(s, "S", 1, l);
  mlc_rv i = l[0];
  const char *why = "block \"S\" is neither a complete block (it reads A, which it writes) nor a "
                    "reduction block (it has no T.init()); the blocks under the loop must have "
                    "compact data flow";
  char want[400];
  snprintf(want, sizeof want, "vectorize: l1 (loop i): %s", why);
  REFUSED(s, mlc_sched_vectorize(s, i, err), want);
  snprintf(want, sizeof want, "parallel: l1 (loop i): %s", why);
  REFUSED(s, mlc_sched_parallel(s, i, err), want);
  REFUSED(s, mlc_sched_bind(s, i, "blockIdx.x", err), "bind: l1 (loop i): block \"S\" is neither");
  REFUSED(s, mlc_sched_bind(s, i, "threadIdx.x", err), "bind: l1 (loop i): block \"S\" is neither");
  /* unroll keeps the order: accepted, and so are serial splits. */
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, p, err));
  REFUSED(s, mlc_sched_vectorize(s, p[1], err), "vectorize: l3 (loop i_1): block \"S\" is neither");
  REFUSED(s, mlc_sched_parallel(s, p[0], err), "parallel: l2 (loop i_0): block \"S\" is neither");
  OK(mlc_sched_unroll(s, p[1], err));
  CHECK_EQUIVALENT(SHIFT, s, true);
  mlc_sched_free(s);

  /* Along the inner loop only; TensorIR refuses the outer loop as well
   * (the block is not complete anywhere). */
  s = sched_of(SHIFT2);
  loops_of(s, "S", 2, l);
  REFUSED(s, mlc_sched_vectorize(s, l[1], err),
          "vectorize: l2 (loop j): block \"S\" is neither a complete block (it reads A, which it "
          "writes)");
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "parallel: l1 (loop i): block \"S\" is neither");
  mlc_sched_free(s);
}

static void test_parallel_not_reduction(void) {
  /* The init that runs twice: bindings not quasi-affine. */
  mlc_sched *s = sched_of(SQ_REDUCE);
  mlc_rv l[3];
  loops_of(s, "B", 2, l);
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "parallel: l1 (loop i): block \"B\" is neither a complete block (iter vk is not data "
          "parallel) nor a reduction block (its bindings are not quasi-affine)");
  REFUSED(s, mlc_sched_vectorize(s, l[0], err), "vectorize: l1 (loop i): block \"B\" is neither");
  mlc_sched_free(s);

  /* A reduce iter that indexes the output. */
  s = sched_of(REDUCE_INDEXED);
  loops_of(s, "B", 2, l);
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "parallel: l1 (loop i): block \"B\" is neither a complete block (iter vk is not data "
          "parallel) nor a reduction block (reduce iter vk indexes its output B)");
  mlc_sched_free(s);

  /* After decompose_reduction two blocks write C and the update has no
   * init: TensorIR parallelizes before decomposing (meta-schedule does). */
  s = sched_of(MM);
  loops_of(s, "C", 3, l);
  mlc_rv i = l[0], k = l[2], b, init;
  OK(mlc_sched_get_block(s, "C", NULL, &b, err));
  mlc_sched *t = mlc_sched_copy(s);
  OK(mlc_sched_decompose_reduction(t, b, k, &init, err));
  REFUSED(t, mlc_sched_parallel(t, i, err),
          "parallel: l1 (loop i): block \"C_init\" is neither a complete block (block "
          "\"C_update\" also writes C) nor a reduction block (it has no T.init())");
  mlc_sched_free(t);
  OK(mlc_sched_parallel(s, i, err));
  OK(mlc_sched_decompose_reduction(s, b, k, &init, err));
  CHECK_EQUIVALENT(MM, s, true);
  mlc_sched_free(s);
}

static void test_parallel_not_affine(void) {
  mlc_sched *s = sched_of(STRIDED);
  mlc_rv l[2];
  loops_of(s, "B", 1, l);
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "parallel: l1 (loop i): block \"B\" does not have an affine binding: vi = i * 2 is not a "
          "quasi-affine map of the loops");
  REFUSED(s, mlc_sched_vectorize(s, l[0], err),
          "vectorize: l1 (loop i): block \"B\" does not have an affine binding");
  REFUSED(s, mlc_sched_bind(s, l[0], "blockIdx.x", err),
          "bind: l1 (loop i): block \"B\" does not have an affine binding");
  /* asked again (the state remembers the answer): the same reason */
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "parallel: l1 (loop i): block \"B\" does not have an affine binding: vi = i * 2 is not a "
          "quasi-affine map of the loops");
  mlc_sched_free(s);

  s = sched_of(DIAG);
  loops_of(s, "B", 1, l);
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "parallel: l1 (loop i): block \"B\" does not have an affine binding: iters vi and vj are "
          "bound to the same iterations of the loops");
  REFUSED(s, mlc_sched_vectorize(s, l[0], err),
          "vectorize: l1 (loop i): block \"B\" does not have an affine binding: iters vi and vj are "
          "bound to the same iterations of the loops");
  mlc_sched_free(s);

  /* A block under the loop that does not bind it counts too. */
  s = sched_of(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\")):\n"
      "    for i in range(8):\n"
      "        for j in range(4):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(8, i)\n"
      "                vj = T.axis.spatial(8, j * j)\n"
      "                B[vi, vj] = A[vi, vj]\n");
  loops_of(s, "B", 2, l);
  REFUSED(s, mlc_sched_parallel(s, l[0], err),
          "block \"B\" does not have an affine binding: vj = j * j is not a quasi-affine map");
  mlc_sched_free(s);
}

/* Bindings that split, fuse and uneven splits produce stay affine. */
static void test_parallel_affine_accepted(void) {
  mlc_sched *s = sched_of(EW2);
  mlc_rv l[3], f, p[3], q[2];
  loops_of(s, "B", 2, l);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){i, j}, true, &f, err));
  OK(mlc_sched_split(s, f, 3, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(7), MLC_OP_INT(8)}, true, p,
                     err)); /* 37 * 7 * 8 = 2072 > 2048: T.where */
  OK(mlc_sched_parallel(s, p[0], err));
  OK(mlc_sched_vectorize(s, p[2], err));
  CHECK_EQUIVALENT(EW2, s, true);
  mlc_sched_free(s);

  /* Split then fuse the parts of two loops, bound for a GPU. */
  s = sched_of(EW2);
  loops_of(s, "B", 2, l);
  i = l[0], j = l[1];
  OK(mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(5)}, true, p, err));
  OK(mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, q, err));
  OK(mlc_sched_reorder(s, 4, (mlc_rv[]){p[0], q[0], p[1], q[1]}, err));
  OK(mlc_sched_fuse(s, 2, (mlc_rv[]){p[0], q[0]}, true, &f, err));
  OK(mlc_sched_bind(s, f, "blockIdx.x", err));
  OK(mlc_sched_bind(s, q[1], "threadIdx.x", err));
  CHECK_EQUIVALENT(EW2, s, false);
  mlc_sched_free(s);

  /* A reduction: spatial loops parallel and vectorized, cross-thread
   * reduce loop allowed for threadIdx only. */
  s = sched_of(MM);
  loops_of(s, "C", 3, l);
  OK(mlc_sched_parallel(s, l[0], err));
  OK(mlc_sched_vectorize(s, l[1], err));
  CHECK_EQUIVALENT(MM, s, true);
  mlc_sched_free(s);
}

/* ---- blocks with nested blocks: the sub-blocks decide ----------------------------------- */

/* TVM's nested_block_bind: "outer" only wraps a reduction, so it reads A
 * alone as TensorIR completes its reads, and is complete. */
static const char *NESTED =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16, 16, 16), \"float32\"), B: T.Buffer((16, 16, 16), \"float32\")):\n"
    "    for i, j in T.grid(16, 16):\n"
    "        with T.block(\"outer\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            for k, l in T.grid(16, 16):\n"
    "                with T.block(\"inner\"):\n"
    "                    vk, vl = T.axis.remap(\"SR\", [k, l])\n"
    "                    with T.init():\n"
    "                        B[vi, vj, vk] = T.float32(0)\n"
    "                    B[vi, vj, vk] = B[vi, vj, vk] + A[vi, vj, vk, vl]\n";

/* TVM's thread_bound_nested_block. */
static const char *NESTED_BOUND =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16, 16, 16), \"float32\"), B: T.Buffer((16, 16, 16), \"float32\")):\n"
    "    for i in T.serial(16):\n"
    "        for j in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
    "            with T.block(\"outer\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                for k in T.serial(16):\n"
    "                    for l in T.thread_binding(16, thread=\"threadIdx.x\"):\n"
    "                        with T.block(\"inner\"):\n"
    "                            vk, vl = T.axis.remap(\"SR\", [k, l])\n"
    "                            with T.init():\n"
    "                                B[vi, vj, vk] = T.float32(0)\n"
    "                            B[vi, vj, vk] = B[vi, vj, vk] + A[vi, vj, vk, vl]\n";

/* Two levels of wrapping: "mid" sums rows into C, "outer" wraps it. */
static const char *NESTED2 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 4, 16), \"float32\"), C: T.Buffer((8, 4), \"float32\")):\n"
    "    for i in range(8):\n"
    "        with T.block(\"outer\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            for j in range(4):\n"
    "                with T.block(\"mid\"):\n"
    "                    vj = T.axis.spatial(4, j)\n"
    "                    for k in range(16):\n"
    "                        with T.block(\"inner\"):\n"
    "                            vk = T.axis.reduce(16, k)\n"
    "                            with T.init():\n"
    "                                C[vi, vj] = T.float32(0)\n"
    "                            C[vi, vj] = C[vi, vj] + A[vi, vj, vk] * T.float32(0.5)\n";

/* "outer" wraps a reduction into B and a block that reads B back: it reads
 * B, which it writes, whichever way its reads are completed. */
static const char *NESTED_READS_BACK =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 16), \"float32\"), B: T.Buffer((8,), \"float32\"),\n"
    "         C: T.Buffer((8,), \"float32\")):\n"
    "    for i in range(8):\n"
    "        with T.block(\"outer\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            for k in range(16):\n"
    "                with T.block(\"inner\"):\n"
    "                    vk = T.axis.reduce(16, k)\n"
    "                    with T.init():\n"
    "                        B[vi] = T.float32(0)\n"
    "                    B[vi] = B[vi] + A[vi, vk]\n"
    "            with T.block(\"post\"):\n"
    "                C[vi] = B[vi] * T.float32(2)\n";

/* The trace recorded on s, replayed from its JSON on a fresh state of
 * orig, gives the same function (TVM's verify_trace_roundtrip). */
static void check_trace_roundtrip_(const char *file, int line, const char *orig, const mlc_sched *s) {
  char *json = trace_json(s);
  mlc_error e = {{0}};
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), &e);
  mlc_sched *r = t ? sched_of(orig) : NULL;
  if (!t || !mlc_sched_replay(r, t, NULL, NULL, &e)) test_fail_(file, line, "replay: %s", e.msg);
  else if (!mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)))
    test_fail_(file, line, "replayed function differs");
  if (r) mlc_sched_free(r);
  mlc_arena_free(a);
  mlc_free(json);
}
#define CHECK_TRACE_ROUNDTRIP(orig, s) check_trace_roundtrip_(__FILE__, __LINE__, orig, s)

/* TVM's test_nested_block_bind: the inner loop to threadIdx.x, then the
 * outer block's loop to blockIdx.x. */
static void test_nested_block_bind(void) {
  mlc_sched *s = sched_of(NESTED);
  mlc_rv lo[2], li[2];
  loops_of(s, "outer", 2, lo);
  loops_of(s, "inner", 2, li); /* k, l: the loops up to the outer block */
  OK(mlc_sched_bind(s, li[1], "threadIdx.x", err));
  OK(mlc_sched_bind(s, lo[1], "blockIdx.x", err));
  CHECK(sched_equals(s, NESTED_BOUND));
  CHECK_TRACE_ROUNDTRIP(NESTED, s);
  CHECK_EQUIVALENT(NESTED, s, false);
  /* No GPU here: the cuda backend must take it, the threadIdx.x reduction
   * becoming a cross-thread one (through shared memory, with barriers). */
  mlc_target t;
  mlc_object obj = {0};
  mlc_error e = {{0}};
  const mlc_prim_func *g = mlc_sched_func(s);
  bool built = mlc_target_parse("cuda -arch=sm_80", &t, &e) &&
               mlc_target_build(&t, 1, &g, NULL, NULL, &obj, &e);
  CHECK_MSG(built && strstr(obj.data, "bar.sync"), "cuda: %s", built ? "no barrier" : e.msg);
  if (built) mlc_object_free(&obj);
  mlc_sched_free(s);
}

/* The same rule for parallel (runs on the CPU): the outer block's loop,
 * and the loop above a block that wraps a block that wraps a reduction. */
static void test_nested_block_parallel(void) {
  mlc_sched *s = sched_of(NESTED);
  mlc_rv lo[2];
  loops_of(s, "outer", 2, lo);
  OK(mlc_sched_parallel(s, lo[1], err));
  CHECK_TRACE_ROUNDTRIP(NESTED, s);
  CHECK_EQUIVALENT(NESTED, s, false);
  CHECK_EQUIVALENT(NESTED, s, true);
  mlc_sched_free(s);

  s = sched_of(NESTED2);
  mlc_rv i;
  loops_of(s, "outer", 1, &i);
  OK(mlc_sched_parallel(s, i, err));
  char *text = print_func(mlc_sched_func(s));
  CHECK_MSG(strstr(text, "for i in T.parallel(8):"), "%s", text);
  mlc_free(text);
  CHECK_TRACE_ROUNDTRIP(NESTED2, s);
  CHECK_EQUIVALENT(NESTED2, s, false);
  CHECK_EQUIVALENT(NESTED2, s, true);
  mlc_sched_free(s);
}

/* A block that reads back what its sub-blocks wrote stays refused. */
static void test_nested_block_reads_back(void) {
  mlc_sched *s = sched_of(NESTED_READS_BACK);
  mlc_rv i;
  loops_of(s, "outer", 1, &i);
  REFUSED(s, mlc_sched_parallel(s, i, err),
          "parallel: l1 (loop i): block \"outer\" is neither a complete block (it reads B, which "
          "it writes) nor a reduction block (it has no T.init())");
  REFUSED(s, mlc_sched_bind(s, i, "blockIdx.x", err), "bind: l1 (loop i): block \"outer\" is neither");
  mlc_sched_free(s);
}

/* ---- item 8: rebinding and unrolling bound loops ----------------------------------------------- */

static void test_rebind_bound_loop(void) {
  mlc_sched *s = sched_of(VEC128);
  mlc_rv l[3], o[2];
  loops_of(s, "B", 1, l);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(32)}, true,
                     o, err));
  OK(mlc_sched_bind(s, o[0], "blockIdx.x", err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  /* The same axis again, then another one: the binding is replaced. */
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  OK(mlc_sched_bind(s, o[0], "blockIdx.y", err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.y", err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
      "    for i_0 in T.thread_binding(4, thread=\"blockIdx.y\"):\n"
      "        for i_1 in T.thread_binding(32, thread=\"threadIdx.y\"):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(128, i_0 * 32 + i_1)\n"
      "                B[vi] = A[vi] + T.float32(1)\n"));
  char *tr = print_trace(s);
  CHECK_MSG(strstr(tr, "sch.bind(loop=l2, thread_axis=\"blockIdx.y\")"), "%s", tr);
  mlc_free(tr);
  /* Replaying the trace gives the same program. */
  mlc_sched *r = sched_of(VEC128);
  OK(mlc_sched_replay(r, mlc_sched_trace(s), NULL, NULL, err));
  CHECK(mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)));
  mlc_sched_free(r);
  /* Rebinding still keeps one extent per thread axis: i_1 (32) cannot
   * take blockIdx.y, which i_0 (4) holds. */
  REFUSED(s, mlc_sched_bind(s, o[1], "blockIdx.y", err),
          "bind: l3 (loop i_1): loop i_0 is bound to blockIdx.y with extent 4; this loop's extent "
          "32 differs");
  mlc_sched_free(s);
}

static void test_unroll_bound_loop(void) {
  mlc_sched *s = sched_of(VEC128);
  mlc_rv l[3], o[2];
  loops_of(s, "B", 1, l);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(32)}, true,
                     o, err));
  OK(mlc_sched_bind(s, o[0], "blockIdx.x", err));
  OK(mlc_sched_bind(s, o[1], "threadIdx.x", err));
  /* unroll, parallel and vectorize replace a binding, as in TensorIR. */
  OK(mlc_sched_unroll(s, o[1], err));
  OK(mlc_sched_parallel(s, o[0], err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
      "    for i_0 in T.parallel(4):\n"
      "        for i_1 in T.unroll(32):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(128, i_0 * 32 + i_1)\n"
      "                B[vi] = A[vi] + T.float32(1)\n"));
  CHECK_EQUIVALENT(VEC128, s, true);
  mlc_sched_free(s);

  s = sched_of(EW2);
  loops_of(s, "B", 2, l);
  mlc_rv i = l[0], j = l[1];
  OK(mlc_sched_bind(s, j, "vthread.x", err));
  OK(mlc_sched_vectorize(s, j, err));
  OK(mlc_sched_bind(s, i, "blockIdx.x", err));
  OK(mlc_sched_unroll(s, i, err));
  CHECK(sched_equals(s, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((64, 32), \"float32\"), B: T.Buffer((64, 32), \"float32\")):\n"
      "    for i in T.unroll(64):\n"
      "        for j in T.vectorized(32):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"));
  CHECK_EQUIVALENT(EW2, s, true);
  /* A reduce loop bound to threadIdx (cross-thread reduction) may be
   * unrolled, but not parallelized. */
  mlc_sched_free(s);
  s = sched_of(MM);
  loops_of(s, "C", 3, l);
  mlc_rv k = l[2];
  OK(mlc_sched_bind(s, k, "threadIdx.x", err));
  REFUSED(s, mlc_sched_parallel(s, k, err),
          "parallel: l3 (loop k): block \"C\" binds its reduce iter vk to this loop");
  OK(mlc_sched_unroll(s, k, err));
  CHECK_EQUIVALENT(MM, s, false);
  mlc_sched_free(s);
}

int main(void) {
  TA = mlc_arena_new();
  RUN(test_split_bound_loop);
  RUN(test_split_annotated_loop);
  RUN(test_fuse_annotated_loops);
  RUN(test_fuse_bound_loops);
  RUN(test_parallel_carried_in_place);
  RUN(test_parallel_not_reduction);
  RUN(test_parallel_not_affine);
  RUN(test_parallel_affine_accepted);
  RUN(test_nested_block_bind);
  RUN(test_nested_block_parallel);
  RUN(test_nested_block_reads_back);
  RUN(test_rebind_bound_loop);
  RUN(test_unroll_bound_loop);
  mlc_arena_free(TA);
  return test_summary();
}
