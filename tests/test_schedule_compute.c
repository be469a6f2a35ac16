/* compute_at, reverse_compute_at, compute_inline, reverse_compute_inline
 * and sample_compute_location.
 *
 * Golden cases are data files tests/sched_golden/compute_*.py: the input
 * TVMScript with a `# trace: {...}` line (the trace JSON to replay) and
 * the expected TVMScript next to it (.expected), written from TensorIR's
 * semantics; the notes' own printed results serve where they exist. Each
 * result must be structurally equal to the expectation, verify, give the
 * unscheduled program's results on random inputs (interpreter), and
 * record exactly the replayed trace. Refusals print the state before and
 * after and compare. */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static mlc_arena *TA; /* test arena: parsed inputs and expectations */

#define HDR "# from tvm.script import tir as T\n"

static mlc_prim_func *parse_named(const char *name, const char *text) {
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(TA, name, text, &err);
  if (!m) {
    fprintf(stderr, "parse error: %s\n", err.msg);
    return NULL;
  }
  return m->funcs[0];
}

static mlc_prim_func *parse(const char *text) { return parse_named("test.py", text); }

static bool func_equals(const mlc_prim_func *got, const mlc_prim_func *want) {
  bool eq = mlc_func_struct_equal(got, want);
  if (!eq) {
    char *g = print_func(got), *w = print_func(want);
    fprintf(stderr, "---- got:\n%s---- expected:\n%s", g, w);
    mlc_free(g);
    mlc_free(w);
  }
  return eq;
}

__attribute__((unused)) static bool sched_equals(const mlc_sched *s, const char *expected) {
  mlc_prim_func *want = parse(expected);
  return want && func_equals(mlc_sched_func(s), want);
}

/* ---- refusal checks ------------------------------------------------------------ */

typedef struct snapshot {
  char *ir, *json;
  int n_rvs;
  uint32_t draw; /* the next number the state's generator would give */
} snapshot;

static uint32_t next_draw(const mlc_sched *s) {
  mlc_sched *c = mlc_sched_copy(s);
  mlc_rv v;
  mlc_error e = {{0}};
  uint32_t d = 0;
  if (mlc_sched_sample_categorical(c, 2, (int64_t[]){0, 1}, (double[]){0.5, 0.5}, &v, &e))
    d = (uint32_t)mlc_sched_rv_value(c, v);
  int64_t big[16];
  double pr[16];
  for (int i = 0; i < 16; i++) big[i] = i, pr[i] = 1;
  if (mlc_sched_sample_categorical(c, 16, big, pr, &v, &e)) d = d * 16 + (uint32_t)mlc_sched_rv_value(c, v);
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

static int n_refusals[4];

#define REFUSED(kind, s, call, want)                                             \
  do {                                                                           \
    mlc_error e_ = {{0}};                                                        \
    snapshot b_ = snap(s);                                                       \
    mlc_error *err = &e_;                                                        \
    bool ok_ = (call);                                                           \
    check_refused_(__FILE__, __LINE__, s, b_, ok_, err, want);                   \
    n_refusals[kind]++;                                                          \
  } while (0)

#define OK(call)                                                     \
  do {                                                               \
    mlc_error e_ = {{0}};                                            \
    mlc_error *err = &e_;                                            \
    bool ok_ = (call);                                               \
    CHECK_MSG(ok_, "%s failed: %s", #call, e_.msg);                  \
  } while (0)

enum { K_CA, K_RCA, K_CI, K_RCI };

/* ---- numeric checks -------------------------------------------------------------------- */

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

/* f and g (the same signature) agree on random inputs, in the interpreter. */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, uint64_t seed, char *why,
                         size_t n) {
  args x = args_new(f, seed), y = args_new(g, seed);
  mlc_error e = {{0}};
  bool ok = mlc_interp_run_n(f, x.n, x.xs, &e) && mlc_interp_run_n(g, y.n, y.xs, &e);
  if (!ok) snprintf(why, n, "interp: %.200s", e.msg);
  ok = ok && args_close(x, y, why, n);
  args_free(x);
  args_free(y);
  return ok;
}

/* g compiled by the LLVM backend agrees with f in the interpreter. */
static bool same_compiled(const mlc_prim_func *f, const mlc_prim_func *g, const char *sym,
                          uint64_t seed, char *why, size_t n) {
  mlc_target t;
  mlc_object obj = {0};
  mlc_error e = {{0}};
  mlc_target_host(&t);
  const char *syms[1] = {sym};
  if (!mlc_target_build(&t, 1, &g, syms, NULL, &obj, &e)) {
    snprintf(why, n, "build: %.200s", e.msg);
    return false;
  }
  mlc_jit_lib *lib = mlc_jit_load(&obj, &e);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &e) : NULL;
  bool ok = fn != NULL;
  if (!ok) snprintf(why, n, "jit: %.200s", e.msg);
  args x = args_new(f, seed), y = args_new(g, seed);
  if (ok && !mlc_interp_run_n(f, x.n, x.xs, &e)) {
    snprintf(why, n, "interp: %.200s", e.msg);
    ok = false;
  }
  if (ok && mlc_kernel_call(fn, y.n, y.xs) != 0) {
    snprintf(why, n, "kernel returned an error");
    ok = false;
  }
  ok = ok && args_close(x, y, why, n);
  args_free(x);
  args_free(y);
  if (lib) mlc_jit_unload(lib);
  mlc_object_free(&obj);
  return ok;
}

static bool uses_threads(const mlc_stmt *st) {
  if (!st) return false;
  switch (st->kind) {
  case MLC_STMT_FOR:
    return st->loop.kind == MLC_FOR_THREAD_BINDING || uses_threads(st->loop.body);
  case MLC_STMT_BLOCK_REALIZE:
    return uses_threads(st->realize.block->init) || uses_threads(st->realize.block->body);
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++)
      if (uses_threads(st->seq.stmts[i])) return true;
    return false;
  case MLC_STMT_IF: return uses_threads(st->if_.then_s) || uses_threads(st->if_.else_s);
  case MLC_STMT_ALLOCATE: return uses_threads(st->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return false;
  }
  return false;
}

/* The scheduled function verifies and computes what the original does. */
static void check_equivalent(const mlc_prim_func *f, const mlc_sched *s, uint64_t seed) {
  mlc_error e = {{0}};
  char why[300] = "";
  CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "verify: %s", e.msg);
  CHECK_MSG(same_results(f, mlc_sched_func(s), seed, why, sizeof why), "%s", why);
}

/* ---- golden files ------------------------------------------------------------------------ */

static int n_golden, n_compiled;

/* Replay the file's trace on its function; compare with the expectation. */
static void golden(const char *name, const char *expected_path) {
  char path[256], exp_path[256], why[300] = "";
  snprintf(path, sizeof path, "tests/sched_golden/%s.py", name);
  if (!expected_path) snprintf(exp_path, sizeof exp_path, "tests/sched_golden/%s.expected", name);
  else snprintf(exp_path, sizeof exp_path, "%s", expected_path);
  /* An empty expected path: a numeric check only. */
  bool has_expected = !expected_path || expected_path[0];
  char *in = test_read_file(path, NULL), *ex = has_expected ? test_read_file(exp_path, NULL) : mlc_xstrdup(HDR "@T.prim_func\ndef main():\n    T.evaluate(0)\n");
  CHECK_MSG(in && ex, "%s: cannot read", name);
  if (!in || !ex) return;
  bool run = strstr(in, "no-run:") == NULL;
  const char *tl = strstr(in, "# trace: ");
  CHECK_MSG(tl, "%s: no trace line", name);
  if (!tl) return;
  tl += strlen("# trace: ");
  size_t tlen = strcspn(tl, "\n");
  mlc_error e = {{0}};
  mlc_prim_func *f = parse_named(path, in), *want = parse_named(exp_path, ex);
  mlc_trace *t = mlc_trace_from_json(TA, tl, tlen, &e);
  CHECK_MSG(f && want && t, "%s: %s", name, e.msg);
  if (f && want && t) {
    mlc_sched *s = mlc_sched_new(f, 1);
    bool ok = mlc_sched_replay(s, t, NULL, NULL, &e);
    CHECK_MSG(ok, "%s: replay: %s", name, e.msg);
    if (ok) {
      if (has_expected)
        CHECK_MSG(func_equals(mlc_sched_func(s), want), "%s: differs from %s", name, exp_path);
      if (run) check_equivalent(f, s, 7);
      else CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "verify: %s", e.msg);
      char *js = trace_json(s);
      CHECK_MSG(strlen(js) == tlen && strncmp(js, tl, tlen) == 0, "%s: recorded trace %s", name, js);
      mlc_free(js);
      if (run && !uses_threads(mlc_sched_func(s)->body)) {
        char sym[64];
        snprintf(sym, sizeof sym, "golden_%d", n_golden);
        bool c = same_compiled(f, mlc_sched_func(s), sym, 3, why, sizeof why);
        CHECK_MSG(c, "%s: llvm: %s", name, why);
        n_compiled += c;
      }
    }
    mlc_sched_free(s);
    n_golden++;
  }
  mlc_free(in);
  mlc_free(ex);
}

/* One line per golden file. */
#define GOLDEN(name, expected)                                                   \
  do {                                                                           \
    test_case_failed_ = 0;                                                       \
    test_first_failure_[0] = 0;                                                  \
    golden(name, expected);                                                      \
    test_report("golden " name, !test_case_failed_, test_first_failure_);        \
  } while (0)

static void golden_files(void) {
  GOLDEN("compute_mm_relu_reverse_compute_at", "tests/golden/mm_relu_reverse_compute_at.py");
  GOLDEN("compute_at_window_sum", "tests/golden/window_sum_cache_read.py");
  GOLDEN("compute_at_window_coop_fetch", NULL);
  GOLDEN("compute_at_mm_relu", NULL);
  GOLDEN("compute_at_window_pred", NULL);
  GOLDEN("compute_at_index", NULL);
  GOLDEN("compute_reverse_at_unit", NULL);
  GOLDEN("compute_reverse_at_factorized", NULL);
  GOLDEN("compute_reverse_at_factorized_serial", NULL);
  GOLDEN("compute_inline_elementwise", NULL);
  GOLDEN("compute_reverse_inline_relu", NULL);
  GOLDEN("compute_reverse_inline_affine_load", NULL);
  GOLDEN("compute_reverse_inline_reshape_split", NULL);
  GOLDEN("compute_reverse_inline_reshape_3d", NULL);
  GOLDEN("compute_local_blocking_notes", "tests/golden/matmul_local_blocking.py");
  GOLDEN("compute_local_blocking_small", "");
  GOLDEN("compute_tensorize_prep", NULL);
  printf("# golden: %d cases, %d also compiled by llvm and compared\n", n_golden, n_compiled);
}


/* ---- inputs ----------------------------------------------------------------------------- */

static const char *MM_RELU_SMALL =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 6), \"float32\"), B: T.Buffer((6, 8), \"float32\"), C: T.Buffer((8, 8), \"float32\")):\n"
    "    Y = T.alloc_buffer((8, 8))\n"
    "    for i, j_0, k, j_1 in T.grid(8, 2, 6, 4):\n"
    "        with T.block(\"Y\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            vj = T.axis.spatial(8, j_0 * 4 + j_1)\n"
    "            vk = T.axis.reduce(6, k)\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(8, 8):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

/* Two consumers of Y (C and D), two producers of C (Y and Z). */
static const char *TWO_WAY =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\"), D: T.Buffer((8,), \"float32\")):\n"
    "    Y = T.alloc_buffer((8,))\n"
    "    Z = T.alloc_buffer((8,))\n"
    "    for i in range(8):\n"
    "        with T.block(\"Y\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            Y[vi] = A[vi] + T.float32(1)\n"
    "    for i in range(8):\n"
    "        with T.block(\"Z\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            Z[vi] = A[vi] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = Y[vi] + Z[vi]\n"
    "    for i in range(8):\n"
    "        with T.block(\"D\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            D[vi] = Y[vi] * T.float32(3)\n";

/* B reads A, which W overwrites later in the loop that holds C. */
static const char *WAR =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
    "    Y = T.alloc_buffer((8,))\n"
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            Y[vi] = A[vi] + T.float32(1)\n"
    "    for i in range(8):\n"
    "        with T.block(\"W\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            A[vi] = T.float32(0)\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = Y[vi]\n";

/* A window consumer, an accumulating block without init, a reversed store. */
static const char *ODD =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((10,), \"float32\"), C: T.Buffer((8,), \"float32\"), E: T.Buffer((10,), \"float32\")):\n"
    "    B = T.alloc_buffer((10,))\n"
    "    R = T.alloc_buffer((10,))\n"
    "    for i in range(10):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(10, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = B[vi] + B[vi + 2]\n"
    "    for i in range(10):\n"
    "        with T.block(\"R\"):\n"
    "            vi = T.axis.spatial(10, i)\n"
    "            R[9 - vi] = A[vi]\n"
    "    for i in range(10):\n"
    "        with T.block(\"E\"):\n"
    "            vi = T.axis.spatial(10, i)\n"
    "            E[vi] = E[vi] + R[vi]\n";

static mlc_sched *sched_of(const char *text, uint64_t seed) {
  mlc_prim_func *f = parse(text);
  MLC_ASSERT(f);
  return mlc_sched_new(f, seed);
}

static mlc_rv block_of(mlc_sched *s, const char *name) {
  mlc_rv b = -1;
  mlc_error e = {{0}};
  if (!mlc_sched_get_block(s, name, NULL, &b, &e)) fprintf(stderr, "%s\n", e.msg);
  return b;
}

static mlc_rv loop_of(mlc_sched *s, const char *block, int which) {
  mlc_rv *l;
  mlc_error e = {{0}};
  int n = mlc_sched_get_loops(s, block_of(s, block), &l, &e);
  MLC_ASSERT(which < n);
  return l[which];
}

/* ---- refusals ---------------------------------------------------------------------------------- */

static void test_compute_at_refusals(void) {
  mlc_sched *s = sched_of(MM_RELU_SMALL, 1);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C");
  mlc_rv yi = loop_of(s, "Y", 0), ci = loop_of(s, "C", 0), cj = loop_of(s, "C", 1);
  REFUSED(K_CA, s, mlc_sched_compute_at(s, y, yi, false, -1, err), "the loop is an ancestor of the block");
  REFUSED(K_CA, s, mlc_sched_compute_at(s, c, yi, false, -1, err), "the block is an output block: it writes C");
  REFUSED(K_CA, s, mlc_sched_compute_at(s, y, cj, false, 5, err), "index 5 is not valid; valid: -1, -2, or 0 to 0");
  REFUSED(K_CA, s, mlc_sched_compute_at(s, y, y, false, -1, err), "is a block, expected a loop");
  REFUSED(K_CA, s, mlc_sched_compute_at(s, ci, cj, false, -1, err), "is a loop, expected a block");
  mlc_sched_free(s);

  /* After blockize, C lives in the scope of its outer block. */
  s = sched_of(MM_RELU_SMALL, 1);
  {
    mlc_rv outer, c2 = block_of(s, "C"), cj2 = loop_of(s, "C", 1), yi2 = loop_of(s, "Y", 0);
    OK(mlc_sched_blockize(s, cj2, false, &outer, err));
    REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, c2, yi2, false, -1, err),
            "the loop is not in the block's scope");
  }
  mlc_sched_free(s);

  s = sched_of(TWO_WAY, 1);
  {
  mlc_rv h0 = block_of(s, "Y");
  mlc_rv h1 = loop_of(s, "C", 0);
    REFUSED(K_CA, s, mlc_sched_compute_at(s, h0, h1, false, -1, err),
            "consumer \"D\" is not under the loop");
  }
  mlc_sched_free(s);

  s = sched_of(WAR, 1);
  {
  mlc_rv h2 = block_of(s, "B");
  mlc_rv h3 = loop_of(s, "C", 0);
    REFUSED(K_CA, s, mlc_sched_compute_at(s, h2, h3, false, -1, err),
            "block \"W\" writes A, which the block reads, and would run after it");
  }
  mlc_sched_free(s);

  s = sched_of(ODD, 1);
  /* R writes R[9 - vi], a quasi-affine (reversed) index: TensorIR
   * computes instance vi = 9 - i in iteration i of E's loop. */
  {
  mlc_rv h4 = block_of(s, "R");
  mlc_rv h5 = loop_of(s, "E", 0);
    OK(mlc_sched_compute_at(s, h4, h5, false, -1, err));
    check_equivalent(parse(ODD), s, 3);
  }
  mlc_sched_free(s);
}

/* The final sum of an rfactor, placed where the loops would split its
 * reduce iter but could not run the pieces in order from the start. */
static const char *FACTORIZED_FMT =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16, 16), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
    "    B_rf = T.alloc_buffer((16, 16))\n"
    "    for j, i_o, i_i, k in T.grid(16, 4, 4, 16):\n"
    "        with T.block(\"B_rf\"):\n"
    "            vi = T.axis.spatial(16, %s)\n"
    "            vj, vk = T.axis.remap(\"SR\", [j, k])\n"
    "            with T.init():\n"
    "                B_rf[vi, vj] = T.float32(0)\n"
    "            B_rf[vi, vj] = B_rf[vi, vj] + A[vj, vi, vk]\n"
    "    for i, k in T.grid(16, 16):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            with T.init():\n"
    "                B[vi] = T.float32(0)\n"
    "            B[vi] = B[vi] + B_rf[vk, vi]\n";

/* No GPU here: TVM's factorized result, with B's pieces under the
 * threadIdx.x loop i_o, is refused by the cuda backend (the threads would
 * race on B[j]) rather than built wrong. */
static void test_reverse_compute_at_factorized_cuda(void) {
  char *in = test_read_file("tests/sched_golden/compute_reverse_at_factorized.py", NULL);
  mlc_prim_func *f = in ? parse(in) : NULL;
  CHECK(f);
  if (f) {
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_rv b = block_of(s, "B"), io = loop_of(s, "B_rf", 1);
    OK(mlc_sched_reverse_compute_at(s, b, io, false, -1, err));
    mlc_target t;
    mlc_object obj = {0};
    mlc_error e = {{0}};
    const mlc_prim_func *g = mlc_sched_func(s);
    bool built = mlc_target_parse("cuda -arch=sm_80", &t, &e) &&
                 mlc_target_build(&t, 1, &g, NULL, NULL, &obj, &e);
    CHECK_MSG(!built && strstr(e.msg, "store to B does not depend on threadIdx.x (loop i_o)"), "%s",
              built ? "built" : e.msg);
    if (built) mlc_object_free(&obj);
    mlc_sched_free(s);
  }
  mlc_free(in);
}

static void test_reverse_compute_at_split_refusals(void) {
  char text[2048];
  /* Parallel iterations of i_o would add to B[j] at once. */
  snprintf(text, sizeof text, FACTORIZED_FMT, "i_o * 4 + i_i");
  mlc_sched *s = sched_of(text, 1);
  mlc_rv b = block_of(s, "B"), io = loop_of(s, "B_rf", 1);
  OK(mlc_sched_parallel(s, io, err));
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, b, io, false, -1, err),
          "reduce iter vk would be split across iterations of loop i_o, which are not run in "
          "order");
  mlc_sched_free(s);
  /* Partial sums produced from the top down: B's pieces would start at
   * vk = 12, and the init (at vk = 0) would come last and wipe them. */
  snprintf(text, sizeof text, FACTORIZED_FMT, "15 - (i_o * 4 + i_i)");
  s = sched_of(text, 1);
  b = block_of(s, "B"), io = loop_of(s, "B_rf", 1);
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, b, io, false, -1, err),
          "reduce iter vk would be split across iterations of the loop, and i_o does not step it "
          "up by a constant");
  mlc_sched_free(s);
}

static void test_reverse_compute_at_refusals(void) {
  mlc_sched *s = sched_of(MM_RELU_SMALL, 1);
  mlc_rv c = block_of(s, "C"), k = loop_of(s, "Y", 2), j1 = loop_of(s, "Y", 3);
  /* Under k, Y[i, j] is still being accumulated: C would read partial sums. */
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, c, k, false, -1, err),
          "block \"Y\" that the block reads from is not finished within one iteration (its reduce "
          "iter vk follows this loop");
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, c, j1, false, -1, err),
          "is not finished within one iteration");
  {
  mlc_rv h6 = loop_of(s, "C", 1);
    REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, c, h6, false, -1, err),
            "the loop is an ancestor of the block");
  }
  mlc_sched_free(s);

  s = sched_of(TWO_WAY, 1);
  {
  mlc_rv h7 = block_of(s, "C");
  mlc_rv h8 = loop_of(s, "Y", 0);
    REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, h7, h8, false, -1, err),
            "producer \"Z\" is not under the loop");
  }
  mlc_sched_free(s);

  s = sched_of(ODD, 1);
  {
  mlc_rv h9 = block_of(s, "C");
  mlc_rv h10 = loop_of(s, "B", 0);
    REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, h9, h10, false, -1, err),
            "the block reads a range of B in dimension 0");
  }
  {
  mlc_rv h11 = block_of(s, "E");
  mlc_rv h12 = loop_of(s, "R", 0);
    REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, h11, h12, false, -1, err),
            "the block must be a complete or a reduction block (block \"E\" is not a complete block: it "
          "reads and writes E)");
  }
  mlc_sched_free(s);
}

static void test_compute_inline_refusals(void) {
  mlc_sched *s = sched_of(MM_RELU_SMALL, 1);
  {
  mlc_rv h13 = block_of(s, "Y");
    REFUSED(K_CI, s, mlc_sched_compute_inline(s, h13, err), "the block has an init (it is a reduction)");
  }
  {
  mlc_rv h14 = block_of(s, "C");
    REFUSED(K_CI, s, mlc_sched_compute_inline(s, h14, err), "the block is an output block: C is not allocated");
  }
  mlc_sched_free(s);
  s = sched_of(ODD, 1);
  {
  mlc_rv h15 = block_of(s, "R");
    REFUSED(K_CI, s, mlc_sched_compute_inline(s, h15, err),
            "the store's index 0 is not a distinct iter var; only a trivially indexed store can be inlined");
  }
  {
  mlc_rv h16 = block_of(s, "E");
    REFUSED(K_CI, s, mlc_sched_compute_inline(s, h16, err), "is not a complete block: it reads and writes E");
  }
  mlc_sched_free(s);
  s = sched_of(HDR
               "@T.prim_func\n"
               "def main(A: T.Buffer((4, 3), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
               "    B = T.alloc_buffer((4,))\n"
               "    for i, j in T.grid(4, 3):\n"
               "        with T.block(\"B\"):\n"
               "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
               "            B[vi] = A[vi, vj]\n"
               "    for i in range(4):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(4, i)\n"
               "            C[vi] = B[vi]\n",
               1);
  {
  mlc_rv h17 = block_of(s, "B");
    REFUSED(K_CI, s, mlc_sched_compute_inline(s, h17, err),
            "the stored value uses iter vj, which is not an index");
  }
  mlc_sched_free(s);
}

/* TVM's elementwise_reverse_affine_load_inlined, as TVM writes it: the
 * golden compute_reverse_inline_affine_load holds our simplified form of
 * the same indices; the two must compute the same (interpreter and LLVM). */
static const char *TVM_AFFINE_LOAD_INLINED =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((128, 128), \"float32\"), C: T.Buffer((8, 32, 8, 8), \"float32\")):\n"
    "    for i, j in T.grid(128, 128):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[(vj + vi * 128) // 2048, (vj + vi * 128) // 64 % 32, (vj + vi * 128) // 8 % 8,\n"
    "              (vj + vi * 128) % 8] = A[vi, vj] * T.float32(2)\n";

static void test_reverse_inline_affine_load_as_tvm(void) {
  char *in = test_read_file("tests/sched_golden/compute_reverse_inline_affine_load.py", NULL);
  mlc_prim_func *f = in ? parse(in) : NULL, *tvm = parse(TVM_AFFINE_LOAD_INLINED);
  CHECK(f && tvm);
  if (f && tvm) {
    mlc_sched *s = mlc_sched_new(f, 1);
    char why[300] = "";
    OK(mlc_sched_reverse_compute_inline(s, block_of(s, "C"), err));
    CHECK_MSG(same_results(tvm, mlc_sched_func(s), 3, why, sizeof why), "interpreter: %s", why);
    CHECK_MSG(same_compiled(tvm, mlc_sched_func(s), "affine_load_tvm", 4, why, sizeof why), "llvm: %s", why);
    mlc_sched_free(s);
  }
  mlc_free(in);
}

static void test_reverse_compute_inline_refusals(void) {
  mlc_sched *s = sched_of(MM_RELU_SMALL, 1);
  {
  mlc_rv h18 = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h18, err), "producer \"Y\" is not a complete block");
  }
  mlc_sched_free(s);
  s = sched_of(TWO_WAY, 1);
  {
  mlc_rv h19 = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h19, err),
            "the block reads two buffers produced in its scope (Y and Z)");
  }
  {
  mlc_rv h20 = block_of(s, "D");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h20, err),
            "producer \"Y\" has another consumer, block \"C\"");
  }
  mlc_sched_free(s);
  s = sched_of(ODD, 1);
  {
  mlc_rv h21 = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h21, err), "the block reads B at different indices");
  }
  {
  mlc_rv h22 = block_of(s, "E");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h22, err), "is not a complete block: it reads and writes E");
  }
  mlc_sched_free(s);
  /* A shifted read that leaves producer instances without a consumer one. */
  s = sched_of(HDR
               "@T.prim_func\n"
               "def main(A: T.Buffer((8,), \"float32\"), C: T.Buffer((7,), \"float32\")):\n"
               "    Y = T.alloc_buffer((8,))\n"
               "    for i in range(8):\n"
               "        with T.block(\"Y\"):\n"
               "            vi = T.axis.spatial(8, i)\n"
               "            Y[vi] = A[vi] * T.float32(3)\n"
               "    for i in range(7):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(7, i)\n"
               "            C[vi] = Y[vi + 1] + T.float32(1)\n",
               1);
  {
    mlc_rv h = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h, err),
            "producer \"Y\" writes elements of Y that no instance of the block reads (iter vi would "
            "leave its domain)");
  }
  mlc_sched_free(s);
  /* Reads that are no bijection of the iters: TVM's
   * elementwise_reverse_non_affine_load (the same fused sum in both
   * indices), and a reshape whose inner index wraps at 16 instead of 32. */
  static const char *const not_bijective[] = {
      "B[vi * 16 + vj, vi * 16 + vj]",
      "B[(vi * 16 + vj) // 32, (vi * 16 + vj) % 16 + vk % 2 * 16]",
  };
  for (int i = 0; i < MLC_COUNTOF(not_bijective); i++) {
    char text[1024];
    snprintf(text, sizeof text,
             HDR "@T.prim_func\n"
             "def main(A: T.Buffer((128, 128), \"float32\"), C: T.Buffer((8, 16, 128), \"float32\")):\n"
             "    B = T.alloc_buffer((128, 128))\n"
             "    for i, j in T.grid(128, 128):\n"
             "        with T.block(\"B\"):\n"
             "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"
             "    for i, j, k in T.grid(8, 16, 128):\n"
             "        with T.block(\"C\"):\n"
             "            vi, vj, vk = T.axis.remap(\"SSS\", [i, j, k])\n"
             "            C[vi, vj, vk] = %s\n",
             not_bijective[i]);
    s = sched_of(text, 1);
    mlc_rv h = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h, err),
            "of the block's read of B");
    mlc_sched_free(s);
  }
  /* A reshape that reads half of what the producer writes. */
  s = sched_of(HDR
               "@T.prim_func\n"
               "def main(A: T.Buffer((32, 32), \"float32\"), C: T.Buffer((8, 64), \"float32\")):\n"
               "    B = T.alloc_buffer((32, 32))\n"
               "    for i, j in T.grid(32, 32):\n"
               "        with T.block(\"B\"):\n"
               "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
               "            B[vi, vj] = A[vi, vj] + T.float32(1)\n"
               "    for i, j in T.grid(8, 64):\n"
               "        with T.block(\"C\"):\n"
               "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
               "            C[vi, vj] = B[(vi * 64 + vj) // 32, (vi * 64 + vj) % 32]\n",
               1);
  {
    mlc_rv h = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h, err),
            "producer \"B\" writes elements of B that no instance of the block reads");
  }
  mlc_sched_free(s);
  /* A consumer under an uneven split carries a predicate. */
  s = sched_of(HDR
               "@T.prim_func\n"
               "def main(A: T.Buffer((6,), \"float32\"), C: T.Buffer((6,), \"float32\")):\n"
               "    B = T.alloc_buffer((6,))\n"
               "    for i in range(6):\n"
               "        with T.block(\"B\"):\n"
               "            vi = T.axis.spatial(6, i)\n"
               "            B[vi] = A[vi] + T.float32(1)\n"
               "    for i in range(6):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(6, i)\n"
               "            C[vi] = B[vi] * B[vi]\n",
               1);
  mlc_rv o[2];
  OK(mlc_sched_split(s, loop_of(s, "C", 0), 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, o, err));
  {
  mlc_rv h23 = block_of(s, "C");
    REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, h23, err), "the block has a predicate (T.where)");
  }
  mlc_sched_free(s);
  printf("# refusals: compute_at %d, reverse_compute_at %d, compute_inline %d, reverse_compute_inline %d\n",
         n_refusals[K_CA], n_refusals[K_RCA], n_refusals[K_CI], n_refusals[K_RCI]);
}

/* ---- quasi-affine indices ----------------------------------------------------------------------- */

/* TensorIR accepts any quasi-affine index in compute_at,
 * reverse_compute_at and reverse_compute_inline: reversed (7 - i),
 * strided (2 * i), floordiv/floormod by constants and fused sums of iters
 * (2 * i + j). Each case moves one block (after an optional split of the
 * target block's first loop), and the result must verify, compute what the
 * unscheduled program computes (interpreter and LLVM), and, where given,
 * print the expected loop or binding (the regions narrowed as TensorIR
 * narrows them). */

#define QA_FN(params) HDR "@T.prim_func\ndef main(" params "):\n"

static const char *QA_REVERSED_READ =
    QA_FN("A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")")
    "    B = T.alloc_buffer((8,))\n"
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = B[7 - vi] + T.float32(1)\n";

static const char *QA_REVERSED_WRITE =
    QA_FN("A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")")
    "    B = T.alloc_buffer((8,))\n"
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            B[7 - vi] = A[vi] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = B[vi] + T.float32(1)\n";

static const char *QA_STRIDED =
    QA_FN("A: T.Buffer((16,), \"float32\"), C: T.Buffer((8,), \"float32\")")
    "    B = T.alloc_buffer((16,))\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = B[2 * vi] * T.float32(3)\n";

/* A repeat op: each B element is read by four C elements. */
static const char *QA_FLOORDIV =
    QA_FN("A: T.Buffer((8,), \"float32\"), C: T.Buffer((32,), \"float32\")")
    "    B = T.alloc_buffer((8,))\n"
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i in range(32):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(32, i)\n"
    "            C[vi] = B[vi // 4] + T.float32(1)\n";

/* A tile op: C repeats B four times. */
static const char *QA_FLOORMOD =
    QA_FN("A: T.Buffer((4,), \"float32\"), C: T.Buffer((16,), \"float32\")")
    "    B = T.alloc_buffer((4,))\n"
    "    for i in range(4):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i in range(16):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            C[vi] = B[vi % 4] * T.float32(3)\n";

/* A reshape: both floordiv and floormod of one iter. */
static const char *QA_RESHAPE =
    QA_FN("A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((16,), \"float32\")")
    "    B = T.alloc_buffer((4, 4))\n"
    "    for i, j in T.grid(4, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = A[vi, vj] + T.float32(1)\n"
    "    for i in range(16):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            C[vi] = B[vi // 4, vi % 4] * T.float32(2)\n";

/* A 3-D reshape: the read splits one iter over all three dimensions. */
static const char *QA_RESHAPE3 =
    QA_FN("A: T.Buffer((2, 3, 4), \"float32\"), C: T.Buffer((4, 6), \"float32\")")
    "    B = T.alloc_buffer((2, 3, 4))\n"
    "    for i, j, k in T.grid(2, 3, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSS\", [i, j, k])\n"
    "            B[vi, vj, vk] = A[vi, vj, vk] - T.float32(3)\n"
    "    for i, j in T.grid(4, 6):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[(vi * 6 + vj) // 12, (vi * 6 + vj) // 4 % 3, (vi * 6 + vj) % 4] * T.float32(2)\n";

static const char *QA_TWO_VAR_READ =
    QA_FN("A: T.Buffer((16,), \"float32\"), C: T.Buffer((8, 2), \"float32\")")
    "    B = T.alloc_buffer((16,))\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i, j in T.grid(8, 2):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[2 * vi + vj] + T.float32(1)\n";

static const char *QA_TWO_VAR_WRITE =
    QA_FN("A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((16,), \"float32\")")
    "    B = T.alloc_buffer((16,))\n"
    "    for i, j in T.grid(4, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[4 * vi + vj] = A[vi, vj] * T.float32(2)\n"
    "    for i in range(16):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            C[vi] = B[15 - vi] + T.float32(1)\n";

typedef struct qa_case {
  const char *name;       /* "<workload>: ..." picks the workload (qa_text) */
  int prim;               /* K_CA, K_RCA or K_RCI */
  const char *block;      /* the block moved or inlined */
  const char *at;         /* the block whose loop is the target */
  int split;              /* > 0: split at's first loop with this inner factor first */
  int loop;               /* which loop of `at` (after the split) */
  const char *want[3];    /* lines the result must contain */
} qa_case;

static const qa_case QA_CASES[] = {
    {"reversed read: compute_at", K_CA, "B", "C", 4, 0,
     {"for ax0 in range(4):", "vi = T.axis.spatial(8, 4 - i_0 * 4 + ax0)"}},
    {"reversed read: compute_at, one element", K_CA, "B", "C", 0, 0,
     {"vi = T.axis.spatial(8, 7 - i)"}},
    {"reversed read: reverse_compute_at", K_RCA, "C", "B", 4, 0, {"for ax0 in range(4):"}},
    {"reversed read: reverse_compute_inline", K_RCI, "C", NULL, 0, 0,
     {"C[7 - vi] = A[vi] * T.float32(2) + T.float32(1)"}},
    {"reversed write: compute_at", K_CA, "B", "C", 2, 0,
     {"for ax0 in range(2):", "6 - i_0 * 2 + ax0"}},
    {"reversed write: reverse_compute_at", K_RCA, "C", "B", 2, 0, {"for ax0 in range(2):"}},
    {"strided: compute_at, one element", K_CA, "B", "C", 0, 0,
     {"vi = T.axis.spatial(16, i * 2)"}},
    {"strided: compute_at under a tile", K_CA, "B", "C", 4, 0, {"for ax0 in range(7):"}},
    {"strided: reverse_compute_at", K_RCA, "C", "B", 4, 0,
     {"for ax0 in range(2):", "i_0 * 2 + ax0"}},
    {"floordiv: compute_at, aligned tile", K_CA, "B", "C", 4, 0,
     {"vi = T.axis.remap(\"S\", [i_0])"}},
    {"floordiv: compute_at, half tile", K_CA, "B", "C", 2, 0,
     {"vi = T.axis.spatial(8, i_0 * 2 // 4)"}},
    {"floordiv: compute_at, two-element tile", K_CA, "B", "C", 8, 0,
     {"for ax0 in range(2):", "vi = T.axis.spatial(8, i_0 * 2 + ax0)"}},
    {"floordiv: compute_at, unaligned tile", K_CA, "B", "C", 3, 0,
     {"for ax0 in range(2):", "T.where(i_0 * 3 // 4 + ax0 <= (i_0 * 3 + 2) // 4"}},
    {"floordiv: reverse_compute_at", K_RCA, "C", "B", 0, 0,
     {"for ax0 in range(4):", "vi = T.axis.spatial(32, i * 4 + ax0)"}},
    {"floormod: compute_at, inner loop", K_CA, "B", "C", 4, 1,
     {"vi = T.axis.remap(\"S\", [i_1])"}},
    {"floormod: compute_at, whole period", K_CA, "B", "C", 4, 0, {"for ax0 in range(4):"}},
    /* floormod(2 * i_0 + [0, 1], 4) is [0, 3], as TVM's EvalSet gives. */
    {"floormod: compute_at, half period", K_CA, "B", "C", 2, 0,
     {"for ax0 in range(4):", "vi = T.axis.remap(\"S\", [ax0])"}},
    {"reshape: compute_at", K_CA, "B", "C", 4, 0,
     {"for ax0 in range(4):", "vi, vj = T.axis.remap(\"SS\", [i_0, ax0])"}},
    {"reshape: reverse_compute_at", K_RCA, "C", "B", 0, 0,
     {"for ax0 in range(4):", "vi = T.axis.spatial(16, i * 4 + ax0)"}},
    {"reshape: reverse_compute_inline", K_RCI, "C", NULL, 0, 0,
     {"C[vi * 4 + vj] = (A[vi, vj] + T.float32(1)) * T.float32(2)"}},
    {"reshape3: reverse_compute_inline", K_RCI, "C", NULL, 0, 0,
     {"C[vi * 2 + (vj * 4 + vk) // 6, (vj * 4 + vk) % 6]"}},
    {"reshape3: reverse_compute_at", K_RCA, "C", "B", 0, 0, {"for ax0, ax1 in T.grid(2, 6):"}},
    {"two-var read: compute_at", K_CA, "B", "C", 0, 0,
     {"for ax0 in range(2):", "vi = T.axis.spatial(16, i * 2 + ax0)"}},
    {"two-var read: reverse_compute_at", K_RCA, "C", "B", 4, 0,
     {"for ax0, ax1 in T.grid(2, 2):", "vi = T.axis.spatial(8, i_0 * 2 + ax0)"}},
    {"two-var read: reverse_compute_inline", K_RCI, "C", NULL, 0, 0,
     {"C[vi // 2, vi % 2] = A[vi] * T.float32(2) + T.float32(1)"}},
    {"two-var write: compute_at", K_CA, "B", "C", 4, 0,
     {"for ax0 in range(4):", "vi = T.axis.spatial(4, 3 - i_0)", "vj = T.axis.spatial(4, ax0)"}},
    {"two-var write: reverse_compute_at", K_RCA, "C", "B", 0, 0,
     {"for ax0 in range(4):", "vi = T.axis.spatial(16, 12 - i * 4 + ax0)"}},
};

static const char *qa_text(int i) {
  static const char **texts[] = {&QA_REVERSED_READ, &QA_REVERSED_WRITE, &QA_STRIDED, &QA_FLOORDIV,
                                 &QA_FLOORMOD, &QA_RESHAPE, &QA_RESHAPE3, &QA_TWO_VAR_READ, &QA_TWO_VAR_WRITE};
  static const char *prefix[] = {"reversed read", "reversed write", "strided", "floordiv",
                                 "floormod", "reshape", "reshape3", "two-var read", "two-var write"};
  for (size_t k = 0; k < MLC_COUNTOF(prefix); k++)
    if (strncmp(QA_CASES[i].name, prefix[k], strlen(prefix[k])) == 0 &&
        QA_CASES[i].name[strlen(prefix[k])] == ':')
      return *texts[k];
  return NULL;
}

static void qa_run(int i) {
  const qa_case *c = &QA_CASES[i];
  const char *text = qa_text(i);
  CHECK_MSG(text, "no workload for %s", c->name);
  if (!text) return;
  mlc_prim_func *f = parse(text);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b = block_of(s, c->block), o[2], l = -1;
  mlc_error e = {{0}};
  bool ok = true;
  if (c->split > 0)
    ok = mlc_sched_split(s, loop_of(s, c->at, 0), 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(c->split)},
                         true, o, &e);
  if (ok && c->at) l = loop_of(s, c->at, c->loop);
  if (ok) {
    switch (c->prim) {
    case K_CA: ok = mlc_sched_compute_at(s, b, l, false, -1, &e); break;
    case K_RCA: ok = mlc_sched_reverse_compute_at(s, b, l, false, -1, &e); break;
    case K_RCI: ok = mlc_sched_reverse_compute_inline(s, b, &e); break;
    }
  }
  CHECK_MSG(ok, "%s: %s", c->name, e.msg);
  if (ok) {
    check_equivalent(f, s, 17 + (uint64_t)i);
    char *got = print_func(mlc_sched_func(s)), why[300] = "", sym[64];
    for (int k = 0; k < 3 && c->want[k]; k++)
      CHECK_MSG(strstr(got, c->want[k]), "%s: no \"%s\" in\n%s", c->name, c->want[k], got);
    snprintf(sym, sizeof sym, "qa_%d", i);
    CHECK_MSG(same_compiled(f, mlc_sched_func(s), sym, 5, why, sizeof why), "%s: llvm: %s", c->name, why);
    mlc_free(got);
  }
  mlc_sched_free(s);
}

static void test_quasi_affine_indices(void) {
  for (int i = 0; i < (int)MLC_COUNTOF(QA_CASES); i++) {
    test_case_failed_ = 0;
    test_first_failure_[0] = 0;
    qa_run(i);
    char name[128];
    snprintf(name, sizeof name, "quasi-affine %s", QA_CASES[i].name);
    test_report(name, !test_case_failed_, test_first_failure_);
  }
}

/* What TensorIR refuses still is refused, the state unchanged: indices
 * that are no quasi-affine map (vi * vi, a gather through idx), a floormod
 * whose needed part is not one interval of instances, and a strided read
 * that is no bijection (for reverse_compute_inline). */
static void test_quasi_affine_refusals(void) {
  mlc_sched *s = sched_of(QA_FN("A: T.Buffer((4,), \"float32\"), C: T.Buffer((16,), \"float32\")")
                          "    B = T.alloc_buffer((16,))\n"
                          "    for i in range(4):\n"
                          "        with T.block(\"B\"):\n"
                          "            vi = T.axis.spatial(4, i)\n"
                          "            B[vi * vi] = A[vi]\n"
                          "    for i in range(16):\n"
                          "        with T.block(\"C\"):\n"
                          "            vi = T.axis.spatial(16, i)\n"
                          "            C[vi] = B[vi] + T.float32(1)\n",
                          1);
  mlc_rv rb = block_of(s, "B"), rl = loop_of(s, "C", 0);
  REFUSED(K_CA, s, mlc_sched_compute_at(s, rb, rl, false, -1, err),
          "compute_at: b0 (block B) at l2 (loop i): the block's index into B in dimension 0 (vi * vi) "
          "is not a quasi-affine map of its iter vars");
  mlc_sched_free(s);
  s = sched_of(QA_FN("A: T.Buffer((16,), \"float32\"), C: T.Buffer((4,), \"float32\")")
               "    B = T.alloc_buffer((16,))\n"
               "    for i in range(16):\n"
               "        with T.block(\"B\"):\n"
               "            vi = T.axis.spatial(16, i)\n"
               "            B[vi] = A[vi]\n"
               "    for i in range(4):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(4, i)\n"
               "            C[vi] = B[vi * vi] + T.float32(1)\n",
               1);
  rb = block_of(s, "C"), rl = loop_of(s, "B", 0);
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, rb, rl, false, -1, err),
          "reverse_compute_at: b0 (block C) at l2 (loop i): the block's index into B in dimension 0 "
          "(vi * vi) is not a quasi-affine map");
  REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, rb, err),
          "reverse_compute_inline: b0 (block C): index 0 of the block's read of B (vi * vi) is not a "
          "bijective affine map");
  mlc_sched_free(s);
  s = sched_of(QA_FN("A: T.Buffer((8,), \"float32\"), idx: T.Buffer((8,), \"int32\"), C: T.Buffer((8,), \"float32\")")
               "    B = T.alloc_buffer((8,))\n"
               "    for i in range(8):\n"
               "        with T.block(\"B\"):\n"
               "            vi = T.axis.spatial(8, i)\n"
               "            B[vi] = A[vi]\n"
               "    for i in range(8):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(8, i)\n"
               "            C[vi] = B[idx[vi]] + T.float32(1)\n",
               1);
  rb = block_of(s, "C"), rl = loop_of(s, "B", 0);
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, rb, rl, false, -1, err),
          "reverse_compute_at: b0 (block C) at l2 (loop i): the block's index into B in dimension 0 "
          "(idx[vi]) is not a quasi-affine map");
  REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, rb, err),
          "reverse_compute_inline: b0 (block C): index 0 of the block's read of B (idx[vi]) is not a "
          "bijective affine map");
  mlc_sched_free(s);
  s = sched_of(QA_FLOORMOD, 1);
  rb = block_of(s, "C"), rl = loop_of(s, "B", 0);
  REFUSED(K_RCA, s, mlc_sched_reverse_compute_at(s, rb, rl, false, -1, err),
          "reverse_compute_at: b0 (block C) at l2 (loop i): the block's index into B in dimension 0 "
          "(vi % 4) is not a quasi-affine map of its iter vars");
  REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, rb, err),
          "index 0 of the block's read of B (vi % 4) is not a bijective affine map");
  mlc_sched_free(s);
  s = sched_of(QA_STRIDED, 1);
  rb = block_of(s, "C");
  REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, rb, err),
          "index 0 of the block's read of B (vi * 2) is not a bijective affine map");
  mlc_sched_free(s);
  /* The read has more dimensions than the store (this once read past the
   * store's indices): a slice is no bijection, a column-major split neither. */
  s = sched_of(QA_FN("A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\")")
               "    B = T.alloc_buffer((4, 4))\n"
               "    for i, j in T.grid(4, 4):\n"
               "        with T.block(\"B\"):\n"
               "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
               "            B[vi, vj] = A[vi, vj]\n"
               "    for i in range(4):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(4, i)\n"
               "            C[vi] = B[vi, 2] + T.float32(1)\n",
               1);
  rb = block_of(s, "C");
  REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, rb, err),
          "index 1 of the block's read of B (2) is not a bijective affine map");
  mlc_sched_free(s);
  s = sched_of(QA_FN("A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((16,), \"float32\")")
               "    B = T.alloc_buffer((4, 4))\n"
               "    for i, j in T.grid(4, 4):\n"
               "        with T.block(\"B\"):\n"
               "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
               "            B[vi, vj] = A[vi, vj]\n"
               "    for i in range(16):\n"
               "        with T.block(\"C\"):\n"
               "            vi = T.axis.spatial(16, i)\n"
               "            C[vi] = B[vi % 4, vi // 4] + T.float32(1)\n",
               1);
  rb = block_of(s, "C");
  REFUSED(K_RCI, s, mlc_sched_reverse_compute_inline(s, rb, err),
          "index 0 of the block's read of B (vi % 4) is not a bijective affine map of its iter vars "
          "(distinct iters, a single one times +-1 or a fused sum of them), nor are the indices the "
          "row-major split of one");
  mlc_sched_free(s);
}

/* ---- sample_compute_location ------------------------------------------------------------------ */

static const char *EW_PAIR =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((6, 8), \"float32\"), C: T.Buffer((6, 7), \"float32\")):\n"
    "    B = T.alloc_buffer((6, 8))\n"
    "    for i, j in T.grid(6, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = T.exp(A[vi, vj])\n"
    "    for i, j in T.grid(6, 7):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[vi, vj] - B[vi, vj + 1]\n";

/* Draw locations for `block` with many seeds, apply compute_at at each, and
 * return the set of decisions seen as a bit mask (bit d + 2). */
static unsigned sample_all(const char *text, const char *block, int seeds) {
  mlc_prim_func *f = parse(text);
  unsigned seen = 0;
  for (int q = 0; q < seeds && f; q++) {
    mlc_sched *s = mlc_sched_new(f, (uint64_t)q);
    mlc_rv b = block_of(s, block), l;
    OK(mlc_sched_sample_compute_location(s, b, &l, err));
    const mlc_trace *t = mlc_sched_trace(s);
    const mlc_inst *in = &t->insts.data[t->insts.len - 1];
    CHECK(in->kind == MLC_INST_SAMPLE_COMPUTE_LOCATION && in->decision.n == 1);
    int64_t d = in->decision.v[0];
    CHECK_MSG(d >= -2 && d < 30, "decision %lld", (long long)d);
    seen |= 1u << (d + 2);
    OK(mlc_sched_compute_at(s, b, l, false, -1, err));
    /* The mark handles say what happened. */
    if (d == -2) CHECK(mlc_sched_rv_block(s, b) == NULL);
    if (d == -1) CHECK(mlc_func_struct_equal(f, mlc_sched_func(s)));
    check_equivalent(f, s, (uint64_t)q);
    mlc_sched_free(s);
  }
  return seen;
}

static void test_sample_compute_location(void) {
  /* Y is a reduction (no inline): root, i, j of C. */
  CHECK_MSG(sample_all(MM_RELU_SMALL, "Y", 24) == (1u << 1 | 1u << 2 | 1u << 3), "mm_relu Y");
  /* B is elementwise: inline, root, i, j. */
  CHECK_MSG(sample_all(EW_PAIR, "B", 30) == 0xf, "B");
  /* C has no consumer and writes an output: only the root. */
  CHECK_MSG(sample_all(EW_PAIR, "C", 5) == 1u << 1, "C");
  /* A reduce loop of the consumer is no candidate: Y's consumer S sums
   * over k, and only S's spatial loop i is offered. */
  CHECK_MSG(sample_all(HDR
                       "@T.prim_func\n"
                       "def main(A: T.Buffer((4, 5), \"float32\"), S: T.Buffer((4,), \"float32\")):\n"
                       "    Y = T.alloc_buffer((4, 5))\n"
                       "    for i, k in T.grid(4, 5):\n"
                       "        with T.block(\"Y\"):\n"
                       "            vi, vk = T.axis.remap(\"SS\", [i, k])\n"
                       "            Y[vi, vk] = A[vi, vk] * T.float32(2)\n"
                       "    for i, k in T.grid(4, 5):\n"
                       "        with T.block(\"S\"):\n"
                       "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
                       "            with T.init():\n"
                       "                S[vi] = T.float32(0)\n"
                       "            S[vi] = S[vi] + Y[vi, vk]\n",
                       "Y", 24) == (1u << 0 | 1u << 1 | 1u << 2),
            "reduce consumer");
}

/* A candidate loop compute_at refuses is never drawn, and the others come
 * up equally often: C's outer loop i also holds block W, which writes A
 * after P reads it, so compute_at refuses P there (and compute_inline
 * everywhere); C's inner loop j is fine. Valid: the root and j: 300 draws
 * (seeds 0..299) give each 150 +- 40. */
static void test_sample_location_uniform(void) {
  mlc_prim_func *f = parse(QA_FN("A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4, 4), \"float32\")")
                           "    B = T.alloc_buffer((4, 4))\n"
                           "    for i, j in T.grid(4, 4):\n"
                           "        with T.block(\"P\"):\n"
                           "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                           "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"
                           "    for i in range(4):\n"
                           "        for j in range(4):\n"
                           "            with T.block(\"C\"):\n"
                           "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                           "                C[vi, vj] = B[vi, vj]\n"
                           "        with T.block(\"W\"):\n"
                           "            vi = T.axis.spatial(4, i)\n"
                           "            A[vi, 0] = T.float32(0)\n");
  MLC_ASSERT(f);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b = block_of(s, "P"), ci = loop_of(s, "C", 0);
  mlc_error e = {{0}};
  CHECK_MSG(!mlc_sched_compute_at(s, b, ci, true, -1, &e), "compute_at at C's loop i accepted");
  mlc_sched_free(s);
  int count[4] = {0}; /* decisions -2 .. 1 */
  for (uint64_t q = 0; q < 300; q++) {
    s = mlc_sched_new(f, q);
    b = block_of(s, "P");
    mlc_rv l;
    OK(mlc_sched_sample_compute_location(s, b, &l, err));
    const mlc_trace *t = mlc_sched_trace(s);
    int64_t d = t->insts.data[t->insts.len - 1].decision.v[0];
    CHECK_MSG(d >= -2 && d <= 1, "decision %lld", (long long)d);
    if (d >= -2 && d <= 1) count[d + 2]++;
    OK(mlc_sched_compute_at(s, b, l, true, -1, err));
    if (q < 8) check_equivalent(f, s, q);
    mlc_sched_free(s);
  }
  CHECK_MSG(count[0] == 0 && count[2] == 0, "inline drawn %d times, the refused loop i %d times",
            count[0], count[2]);
  for (int k = 1; k < 4; k += 2)
    CHECK_MSG(count[k] >= 110 && count[k] <= 190, "decision %d drawn %d times of 300", k - 2, count[k]);
}

/* Draw locations until the root mark comes up (want says which). */
static bool sched_sample_root(mlc_sched *s, mlc_rv b, const mlc_decision *want, mlc_rv *out,
                              mlc_error *err) {
  for (int i = 0; i < 64; i++) {
    mlc_sched *c = mlc_sched_copy(s);
    mlc_rv l;
    if (!mlc_sched_sample_compute_location(c, b, &l, err)) return mlc_sched_free(c), false;
    const mlc_trace *t = mlc_sched_trace(c);
    bool hit = t->insts.data[t->insts.len - 1].decision.v[0] == want->v[0];
    mlc_sched_free(c);
    if (hit) return mlc_sched_sample_compute_location(s, b, out, err);
    mlc_sched_seed(s, 1000 + (uint64_t)i);
  }
  return mlc_error_set(err, "no such draw");
}

/* The tuner's use: a sampled location in a trace, replayed with stored,
 * replaced and unfit decisions, through JSON. */
static void test_compute_location_replay(void) {
  mlc_prim_func *f = parse(EW_PAIR);
  MLC_ASSERT(f);
  mlc_sched *s = mlc_sched_new(f, 3);
  mlc_rv b = block_of(s, "B"), l;
  OK(mlc_sched_sample_compute_location(s, b, &l, err));
  OK(mlc_sched_compute_at(s, b, l, false, -1, err));
  char *js = trace_json(s);
  mlc_error e = {{0}};
  mlc_trace *t = mlc_trace_from_json(TA, js, strlen(js), &e);
  CHECK_MSG(t, "%s", e.msg);
  if (!t) return;
  mlc_sched *r = mlc_sched_new(f, 99);
  CHECK_MSG(mlc_sched_replay(r, t, NULL, NULL, &e), "replay: %s", e.msg);
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)));
  char *js2 = trace_json(r);
  CHECK_STREQ(js, js2);
  mlc_free(js2);
  mlc_sched_free(r);
  /* Every decision, and one that no longer fits (7: the nearest candidate
   * below it, 1, is taken and reported). */
  int64_t want[5] = {-2, -1, 0, 1, 7}, got[5] = {-2, -1, 0, 1, 1};
  const char *n_blocks_after[5] = {"C", "B", "B", "B", "B"};
  for (int k = 0; k < 5; k++) {
    mlc_decision d = {1, {want[k]}};
    int at = 1;
    mlc_replay_opts o = {.n_overrides = 1, .override_insts = &at, .override_decisions = &d};
    mlc_replay_report rep;
    r = mlc_sched_new(f, 5);
    CHECK_MSG(mlc_sched_replay(r, t, &o, &rep, &e), "replay %lld: %s", (long long)want[k], e.msg);
    const mlc_inst *in = &mlc_sched_trace(r)->insts.data[1];
    CHECK_MSG(in->decision.n == 1 && in->decision.v[0] == got[k], "decision %lld recorded as %lld",
              (long long)want[k], (long long)in->decision.v[0]);
    CHECK(rep.n_resampled == (k == 4));
    mlc_rv x;
    mlc_error e2 = {{0}};
    CHECK_MSG(mlc_sched_get_block(r, n_blocks_after[k], NULL, &x, &e2), "%s", e2.msg);
    if (k == 0) CHECK(!mlc_sched_get_block(r, "B", NULL, &x, &e2));
    if (k == 1) CHECK(mlc_func_struct_equal(f, mlc_sched_func(r)));
    check_equivalent(f, r, 11 + (uint64_t)k);
    mlc_sched_free(r);
  }
  /* A copy of a state holding a root mark handle applies it the same way. */
  r = mlc_sched_new(f, 8);
  mlc_rv rb = block_of(r, "B"), rl;
  mlc_decision root = {1, {-1}};
  OK(sched_sample_root(r, rb, &root, &rl, err));
  mlc_sched *rc = mlc_sched_copy(r);
  OK(mlc_sched_compute_at(rc, rb, rl, false, -1, err));
  CHECK(mlc_func_struct_equal(f, mlc_sched_func(rc)));
  CHECK(mlc_sched_trace(rc)->insts.len == mlc_sched_trace(r)->insts.len + 1);
  mlc_sched_free(rc);
  mlc_sched_free(r);
  mlc_free(js);
  mlc_sched_free(s);
}

/* compute_at right after sample_compute_location applies the plan the
 * sample made for that loop (it planned it to know the loop is a
 * candidate); after any other primitive changed the tree it plans again.
 * Either way the result is what compute_at on a fresh state gives. */
static mlc_sched *located_at_i(const mlc_prim_func *f, mlc_rv *b, mlc_rv *l) {
  for (uint64_t q = 0; q < 64; q++) {
    mlc_sched *s = mlc_sched_new(f, q);
    *b = block_of(s, "B");
    OK(mlc_sched_sample_compute_location(s, *b, l, err));
    const mlc_trace *t = mlc_sched_trace(s);
    if (t->insts.data[t->insts.len - 1].decision.v[0] == 0) return s; /* C's loop i */
    mlc_sched_free(s);
  }
  return NULL;
}

static void split_c_j(mlc_sched *s) {
  mlc_rv c = block_of(s, "C"), *loops, out[2];
  mlc_error e = {{0}};
  CHECK_MSG(mlc_sched_get_loops(s, c, &loops, &e) == 2, "%s", e.msg);
  OK(mlc_sched_split(s, loops[1], 2, (mlc_operand[]){MLC_OP_INT(7), MLC_OP_INT(1)}, true, out, err));
}

static void test_compute_location_plan_reuse(void) {
  mlc_prim_func *f = parse(EW_PAIR);
  MLC_ASSERT(f);
  for (int split = 0; split < 2; split++) {
    mlc_rv b, l, *loops;
    mlc_sched *s = located_at_i(f, &b, &l);
    CHECK(s != NULL);
    if (!s) return;
    if (split) split_c_j(s);
    OK(mlc_sched_compute_at(s, b, l, true, -1, err));
    mlc_sched *fresh = mlc_sched_new(f, 0);
    mlc_rv fb = block_of(fresh, "B");
    if (split) split_c_j(fresh);
    mlc_error e = {{0}};
    CHECK(mlc_sched_get_loops(fresh, block_of(fresh, "C"), &loops, &e) >= 1);
    OK(mlc_sched_compute_at(fresh, fb, loops[0], true, -1, err));
    CHECK_MSG(mlc_func_struct_equal(mlc_sched_func(fresh), mlc_sched_func(s)),
              "split %d: compute_at after the sample differs from a fresh one", split);
    check_equivalent(f, s, 21 + (uint64_t)split);
    mlc_sched_free(fresh);
    mlc_sched_free(s);
  }
}

/* A replayed decision becomes the nearest candidate at or before it (the
 * root when there is none): the candidates a replay looks at are those a
 * draw chooses from (a replay tries loops from the decision outwards). */
static void test_compute_location_nearest(void) {
  static const struct {
    const char **text, *block;
  } cases[] = {{&MM_RELU_SMALL, "Y"}, {&EW_PAIR, "B"}};
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    unsigned drawn = sample_all(*cases[c].text, cases[c].block, 40); /* bit d + 2 */
    mlc_prim_func *f = parse(*cases[c].text);
    MLC_ASSERT(f);
    mlc_sched *s = mlc_sched_new(f, 3);
    mlc_rv b = block_of(s, cases[c].block), l;
    OK(mlc_sched_sample_compute_location(s, b, &l, err));
    char *js = trace_json(s);
    mlc_error e = {{0}};
    mlc_trace *t = mlc_trace_from_json(TA, js, strlen(js), &e);
    CHECK_MSG(t, "%s", e.msg);
    for (int64_t want = -3; t && want <= 5; want++) {
      int64_t expect = -1;
      for (int64_t d = -2; d <= want; d++)
        if (drawn & 1u << (d + 2)) expect = d;
      mlc_decision d = {1, {want}};
      int at = 1;
      mlc_replay_opts o = {.n_overrides = 1, .override_insts = &at, .override_decisions = &d};
      mlc_sched *r = mlc_sched_new(f, 5);
      CHECK_MSG(mlc_sched_replay(r, t, &o, NULL, &e), "replay %lld: %s", (long long)want, e.msg);
      int64_t got = mlc_sched_trace(r)->insts.data[1].decision.v[0];
      CHECK_MSG(got == expect, "%s: decision %lld replayed as %lld, expected %lld", cases[c].block,
                (long long)want, (long long)got, (long long)expect);
      mlc_sched_free(r);
    }
    mlc_free(js);
    mlc_sched_free(s);
  }
}

/* Handles survive: the block keeps its handle after moving, the loops
 * that held only it are gone, and a copy of the state behaves the same. */
static void test_handles_after_move(void) {
  mlc_sched *s = sched_of(MM_RELU_SMALL, 1);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C"), yi = loop_of(s, "Y", 0), cj = loop_of(s, "C", 1);
  mlc_sched *copy = mlc_sched_copy(s);
  OK(mlc_sched_compute_at(s, y, cj, true, -1, err));
  CHECK(mlc_sched_rv_block(s, y) != NULL);
  CHECK(mlc_sched_rv_loop(s, yi) == NULL);
  mlc_rv *l;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, y, &l, &e) == 5); /* i, j, ax0, ax1, ax2 */
  OK(mlc_sched_compute_at(copy, y, cj, true, -1, err));
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(copy)));
  /* Now under C's loops: they are its ancestors, not places to move to. */
  mlc_rv ci = loop_of(s, "C", 0);
  REFUSED(K_CA, s, mlc_sched_compute_at(s, y, ci, false, -1, err), "the loop is an ancestor of the block");
  check_equivalent(parse(MM_RELU_SMALL), s, 4);
  (void)c;
  mlc_sched_free(copy);
  mlc_sched_free(s);
}

/* One block reads B at two unrelated indices and declares no T.reads, so
 * region inference gives the hull B[T.min(14 - 2 * vi, 2 * vi + vj):
 * T.max(...) + 1]; that region is valid, and compute_at of B's producer
 * under C's outer loop verifies and computes what the unscheduled program
 * does (interpreted and compiled). */
static const char *HULL_READ =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((18,), \"float32\"), C: T.Buffer((8, 4), \"float32\")):\n"
    "    B = T.alloc_buffer((18,))\n"
    "    for i in range(18):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(18, i)\n"
    "            B[vi] = A[vi] * T.float32(2)\n"
    "    for i, j in T.grid(8, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[14 - 2 * vi] + B[2 * vi + vj]\n";

static void test_compute_at_min_max_region(void) {
  mlc_prim_func *f = parse(HULL_READ);
  MLC_ASSERT(f);
  mlc_error e = {{0}};
  CHECK_MSG(mlc_verify_func(f, &e), "unscheduled: %s", e.msg);
  mlc_sched *s = mlc_sched_new(f, 1);
  OK(mlc_sched_compute_at(s, block_of(s, "B"), loop_of(s, "C", 0), true, -1, err));
  check_equivalent(f, s, 7);
  char why[300] = "";
  CHECK_MSG(same_compiled(f, mlc_sched_func(s), "main", 8, why, sizeof why), "%s", why);
  mlc_sched_free(s);
}

/* Softmax's shape: B feeds S (a row sum) and C; S is placed under C's row
 * loop first, where the extent-1 batch loop's var simplifies to 0 in S's
 * bindings while C still indexes by it. B then moves under the same loop:
 * the two dependents' regions agree once the run-once loop is fixed at
 * its value, and the row loop over all three can run parallel (the race
 * check sees the same). */
static const char UNIT_BATCH[] = HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((1, 8, 32), \"float32\"), C: T.Buffer((1, 8, 32), \"float32\")):\n"
    "    B = T.alloc_buffer((1, 8, 32))\n"
    "    S = T.alloc_buffer((1, 8))\n"
    "    for i0, i1, i2 in T.grid(1, 8, 32):\n"
    "        with T.block(\"B\"):\n"
    "            v0, v1, v2 = T.axis.remap(\"SSS\", [i0, i1, i2])\n"
    "            B[v0, v1, v2] = A[v0, v1, v2] * T.float32(2)\n"
    "    for i0, i1, k in T.grid(1, 8, 32):\n"
    "        with T.block(\"S\"):\n"
    "            v0, v1, vk = T.axis.remap(\"SSR\", [i0, i1, k])\n"
    "            with T.init():\n"
    "                S[v0, v1] = T.float32(0)\n"
    "            S[v0, v1] = S[v0, v1] + B[v0, v1, vk]\n"
    "    for i0, i1, i2 in T.grid(1, 8, 32):\n"
    "        with T.block(\"C\"):\n"
    "            v0, v1, v2 = T.axis.remap(\"SSS\", [i0, i1, i2])\n"
    "            C[v0, v1, v2] = B[v0, v1, v2] / S[v0, v1]\n";

static void test_compute_at_unit_loop_dependents(void) {
  mlc_prim_func *f = parse(UNIT_BATCH);
  MLC_ASSERT(f);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv row = loop_of(s, "C", 1);
  OK(mlc_sched_compute_at(s, block_of(s, "S"), row, false, -1, err));
  OK(mlc_sched_compute_at(s, block_of(s, "B"), row, false, -1, err));
  OK(mlc_sched_parallel(s, row, err));
  check_equivalent(f, s, 3);
  char why[300] = "";
  CHECK_MSG(same_compiled(f, mlc_sched_func(s), "main", 3, why, sizeof why), "%s", why);
  mlc_sched_free(s);
}

/* ---- random sequences --------------------------------------------------------------------------- */

/* -DPROP_SCALE=20 for a longer hunt outside the suite. */
#ifndef PROP_SCALE
#define PROP_SCALE 1
#endif


typedef struct prop_stats {
  int sequences, steps, applied[6], refused, compiled, compile_failed;
} prop_stats;

static void names_rec(const mlc_stmt *st, const char **names, int *n) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: names_rec(st->loop.body, names, n); return;
  case MLC_STMT_BLOCK_REALIZE:
    if (strcmp(st->realize.block->name, "root") != 0 && *n < 32) names[(*n)++] = st->realize.block->name;
    names_rec(st->realize.block->init, names, n);
    names_rec(st->realize.block->body, names, n);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) names_rec(st->seq.stmts[i], names, n);
    return;
  case MLC_STMT_IF:
    names_rec(st->if_.then_s, names, n);
    names_rec(st->if_.else_s, names, n);
    return;
  case MLC_STMT_ALLOCATE: names_rec(st->alloc.body, names, n); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
}

static uint32_t rnd(mlc_pcg32 *r, uint32_t n) { return mlc_pcg32_bounded(r, n); }

/* A random block of the current function and one of its loops (-1 if it
 * has none). Recorded getters. */
static bool pick(mlc_sched *s, mlc_pcg32 *r, mlc_rv *b, mlc_rv *loop) {
  const char *names[32];
  int nn = 0;
  mlc_error e = {{0}};
  names_rec(mlc_sched_func(s)->body, names, &nn);
  if (nn == 0 || !mlc_sched_get_block(s, names[rnd(r, (uint32_t)nn)], NULL, b, &e)) return false;
  mlc_rv *l;
  int n = mlc_sched_get_loops(s, *b, &l, &e);
  *loop = n > 0 ? l[rnd(r, (uint32_t)n)] : -1;
  return true;
}

/* One step: a split (to make tiles to compute at), or one of this file's
 * primitives with random arguments. Returns the kind applied, -1 if
 * refused (checked to leave the state unchanged). */
static int random_step(mlc_sched *s, mlc_pcg32 *r) {
  mlc_rv b, x, b2, x2, o[3];
  mlc_error e = {{0}};
  if (!pick(s, r, &b, &x)) return -1;
  int op = (int)rnd(r, 7);
  if (op == 6 || op == 1) {
    if (!pick(s, r, &b2, &x2)) return -1;
    x = x2;
  }
  snapshot before = snap(s);
  bool ok = false;
  int kind = op;
  switch (op) {
  case 0: /* split */
    if (x < 0) break;
    ok = mlc_sched_split(s, x, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(1 + rnd(r, 4))}, rnd(r, 2), o, &e);
    break;
  case 1:
  case 6:
    if (x < 0) break;
    if (op == 1) ok = mlc_sched_compute_at(s, b, x, rnd(r, 3) == 0, rnd(r, 4) ? -1 : -2, &e), kind = 1;
    else ok = mlc_sched_reverse_compute_at(s, b, x, rnd(r, 3) == 0, rnd(r, 4) ? -1 : -2, &e), kind = 2;
    break;
  case 2: ok = mlc_sched_compute_inline(s, b, &e), kind = 3; break;
  case 3: ok = mlc_sched_reverse_compute_inline(s, b, &e), kind = 4; break;
  case 4:
  case 5: {
    mlc_rv loc;
    kind = 5;
    if (!mlc_sched_sample_compute_location(s, b, &loc, &e)) break;
    mlc_free(before.ir), mlc_free(before.json);
    before = snap(s);
    ok = mlc_sched_compute_at(s, b, loc, false, -1, &e);
    CHECK_MSG(ok, "compute_at at a sampled location: %s", e.msg);
    break;
  }
  }
  if (!ok) check_refused_(__FILE__, __LINE__, s, before, false, &e, "");
  else mlc_free(before.ir), mlc_free(before.json);
  return ok ? kind : -1;
}

static void property_func(const char *task, mlc_prim_func *f, int n_seq, int steps, prop_stats *st) {
  mlc_error e = {{0}};
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, mlc_hash_str(task, 0), 5 + PROP_SCALE);
  for (int q = 0; q < n_seq && !test_case_failed_; q++) {
    mlc_sched *s = mlc_sched_new(f, (uint64_t)q);
    int moved = 0;
    for (int t = 0; t < steps; t++) {
      int k = random_step(s, &r);
      st->steps++;
      if (k < 0) st->refused++;
      else st->applied[k]++, moved += k > 0;
    }
    st->sequences++;
    char why[300] = "";
    CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "%s seq %d: verify: %s", task, q, e.msg);
    bool same = same_results(f, mlc_sched_func(s), (uint64_t)q, why, sizeof why);
    CHECK_MSG(same, "%s seq %d: %s", task, q, why);
    if (same && moved && q % 12 == 0) { /* also through the LLVM backend */
      char sym[64];
      snprintf(sym, sizeof sym, "prop_%s_%d", task, q);
      if (same_compiled(f, mlc_sched_func(s), sym, (uint64_t)q, why, sizeof why)) st->compiled++;
      else st->compile_failed++, fprintf(stderr, "# llvm: %s seq %d: %s\n", task, q, why);
    }
    if (!same) {
      mlc_str o = {0};
      mlc_trace_print(&o, mlc_sched_trace(s));
      char *ir = print_func(mlc_sched_func(s));
      fprintf(stderr, "%s%s", mlc_str_cstr(&o), ir);
      mlc_str_free(&o);
      mlc_free(ir);
    }
    /* The trace replays, through JSON, to the same IR. */
    if (q % 3 == 0) {
      char *js = trace_json(s);
      mlc_trace *t = mlc_trace_from_json(TA, js, strlen(js), &e);
      mlc_sched *s2 = mlc_sched_new(f, 1234);
      CHECK_MSG(t && mlc_sched_replay(s2, t, NULL, NULL, &e), "%s seq %d: replay: %s", task, q, e.msg);
      CHECK_MSG(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(s2)), "%s seq %d: replay differs",
                task, q);
      mlc_free(js);
      mlc_sched_free(s2);
    }
    mlc_sched_free(s);
  }
}

static void property_task(const char *task, const char *shape, int n_seq, int steps, prop_stats *st) {
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

/* Workloads whose indices are reversed, strided, floordiv/floormod and
 * fused sums of iters, chained so that every block has a producer or a
 * consumer to move against. */
static const char *PROP_QUASI_AFFINE =
    QA_FN("A: T.Buffer((16,), \"float32\"), D: T.Buffer((8, 2), \"float32\"), E: T.Buffer((4, 4), \"float32\")")
    "    B = T.alloc_buffer((16,))\n"
    "    C = T.alloc_buffer((8,))\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            B[15 - vi] = A[vi] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            C[vi] = B[2 * vi] + B[2 * vi + 1]\n"
    "    for i, j in T.grid(8, 2):\n"
    "        with T.block(\"D\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            D[vi, vj] = C[7 - vi] + A[2 * vi + vj]\n"
    "    for i, j in T.grid(4, 4):\n"
    "        with T.block(\"E\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            E[vi, vj] = C[(vi * 4 + vj) // 2] * T.float32(3)\n";

/* Each buffer is read at one index per block, also after inlining: a
 * union of unrelated symbolic indices (T.min/T.max regions) is beyond what
 * the verifier proves today. */
static const char *PROP_REPEAT_TILE =
    QA_FN("A: T.Buffer((8,), \"float32\"), F: T.Buffer((8,), \"float32\"), D: T.Buffer((32,), \"float32\")")
    "    B = T.alloc_buffer((8,))\n"
    "    G = T.alloc_buffer((8,))\n"
    "    C = T.alloc_buffer((32,))\n"
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            B[vi] = A[vi] + T.float32(1)\n"
    "    for i in range(8):\n"
    "        with T.block(\"G\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            G[vi] = F[vi] * T.float32(2)\n"
    "    for i in range(32):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(32, i)\n"
    "            C[vi] = B[vi // 4] * G[vi % 8]\n"
    "    for i in range(32):\n"
    "        with T.block(\"D\"):\n"
    "            vi = T.axis.spatial(32, i)\n"
    "            D[vi] = C[31 - vi] + T.float32(1)\n";

static void test_random_sequences(void) {
  prop_stats st = {0};
  clock_t t0 = clock();
  property_task("dense_bias_relu", "6,8,5", 110 * PROP_SCALE, 12, &st);
  property_task("matmul_relu", "6,8,5", 70 * PROP_SCALE, 12, &st);
  property_task("softmax", "4,6", 90 * PROP_SCALE, 12, &st);
  property_task("layernorm", "3,8", 60 * PROP_SCALE, 12, &st);
  property_task("conv2d_nchw", "1,2,5,5,2,3,3", 40 * PROP_SCALE, 12, &st);
  property_func("quasi_affine", parse(PROP_QUASI_AFFINE), 90 * PROP_SCALE, 12, &st);
  property_func("repeat_tile", parse(PROP_REPEAT_TILE), 90 * PROP_SCALE, 12, &st);
  property_func("reshape", parse(QA_RESHAPE), 40 * PROP_SCALE, 12, &st);
  property_func("reshape3", parse(QA_RESHAPE3), 40 * PROP_SCALE, 12, &st);
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  printf("# random sequences: %d sequences of 12 steps (%d steps): applied split %d, compute_at %d, "
         "sample_compute_location + compute_at %d, reverse_compute_at %d, compute_inline %d, "
         "reverse_compute_inline %d; %d refused; %d also compiled by llvm (%d failed); %.2f s\n",
         st.sequences, st.steps, st.applied[0], st.applied[1], st.applied[5], st.applied[2],
         st.applied[3], st.applied[4], st.refused, st.compiled, st.compile_failed, secs);
  CHECK(st.applied[1] > 0 && st.applied[2] > 0 && st.applied[3] > 0 && st.applied[4] > 0);
}

int main(void) {
  TA = mlc_arena_new();
  golden_files();
  RUN(test_compute_at_refusals);
  RUN(test_reverse_compute_at_refusals);
  RUN(test_reverse_compute_at_split_refusals);
  RUN(test_reverse_compute_at_factorized_cuda);
  RUN(test_compute_inline_refusals);
  RUN(test_reverse_compute_inline_refusals);
  RUN(test_reverse_inline_affine_load_as_tvm);
  test_quasi_affine_indices();
  RUN(test_quasi_affine_refusals);
  RUN(test_sample_compute_location);
  RUN(test_sample_location_uniform);
  RUN(test_compute_location_nearest);
  RUN(test_compute_location_replay);
  RUN(test_compute_location_plan_reuse);
  RUN(test_handles_after_move);
  RUN(test_compute_at_min_max_region);
  RUN(test_compute_at_unit_loop_dependents);
  RUN(test_random_sequences);
  mlc_arena_free(TA);
  mlc_jit_shutdown();
  return test_summary();
}
