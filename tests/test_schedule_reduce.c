/* decompose_reduction, rfactor and blockize.
 *
 * Golden pairs: tests/sched_golden/reduce_*.py hold the input function and
 * a `# trace:` line (JSON); replaying it must give a function structurally
 * equal to the .expected file, written by hand from TensorIR's semantics.
 * Refusals: each invalid use must fail with a specific message and leave
 * the printed IR, the trace, the handles and the random generator as they
 * were. Every successful application is run against the unscheduled
 * program on random inputs, with the interpreter and compiled through the
 * LLVM backend (mlc_target_build + mlc_jit_load). */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static mlc_arena *TA;
static mlc_target host;
static int n_interp, n_llvm; /* numeric checks done */

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

static bool equals_text(const mlc_prim_func *got, const char *expected) {
  mlc_prim_func *want = parse(expected);
  if (!want) return false;
  bool eq = mlc_func_struct_equal(got, want);
  if (!eq) {
    char *g = print_func(got), *w = print_func(want);
    fprintf(stderr, "---- got:\n%s---- expected:\n%s", g, w);
    mlc_free(g), mlc_free(w);
  }
  return eq;
}

/* ---- numeric checks ------------------------------------------------------------ */

static void fill_pair(const mlc_prim_func *f, mlc_array *x, mlc_array *y, uint64_t seed) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 1);
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *a = mlc_array_for_buffer(f->params[i]), *b = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(a, &rng);
    for (int64_t k = 0; k < mlc_array_numel(a); k++) mlc_array_set(b, k, mlc_array_get(a, k));
    x[i] = *a, y[i] = *b;
    mlc_free(a), mlc_free(b);
  }
}

static void free_arrays(mlc_array *x, int n) {
  for (int i = 0; i < n; i++) mlc_free(x[i].data);
}

static bool compare_all(const mlc_prim_func *f, mlc_array *got, mlc_array *want, char *why, size_t n) {
  for (int i = 0; i < f->n_params; i++) {
    double m = 0, scale = 1;
    for (int64_t k = 0; k < mlc_array_numel(&want[i]); k++) {
      double v = mlc_array_get(&want[i], k);
      if (v > scale) scale = v;
      if (-v > scale) scale = -v;
    }
    if (!mlc_array_allclose(&got[i], &want[i], 1e-4, 1e-5 * scale, &m)) {
      snprintf(why, n, "param %s differs by %g", f->params[i]->name, m);
      return false;
    }
  }
  return true;
}

/* g (scheduled) against f (unscheduled), both with the interpreter. */
static bool interp_matches(const mlc_prim_func *f, const mlc_prim_func *g, char *why, size_t n) {
  int np = f->n_params;
  mlc_array *x = mlc_xmalloc(sizeof(mlc_array) * (size_t)(np + 1));
  mlc_array *y = mlc_xmalloc(sizeof(mlc_array) * (size_t)(np + 1));
  fill_pair(f, x, y, 11);
  mlc_error e = {{0}};
  bool ok = mlc_interp_run(f, x, &e) && mlc_interp_run(g, y, &e);
  if (!ok) snprintf(why, n, "interp: %.300s", e.msg);
  ok = ok && compare_all(f, y, x, why, n);
  free_arrays(x, np), free_arrays(y, np);
  mlc_free(x), mlc_free(y);
  n_interp++;
  return ok;
}

/* g compiled for the host and loaded in-process, against f interpreted. */
static bool llvm_matches(const mlc_prim_func *f, const mlc_prim_func *g, char *why, size_t n) {
  mlc_error e = {{0}};
  mlc_object obj;
  const char *sym = "mlc_sched_reduce_kernel";
  if (!mlc_target_build(&host, 1, &g, &sym, NULL, &obj, &e)) {
    snprintf(why, n, "llvm build: %.300s", e.msg);
    return false;
  }
  mlc_jit_lib *lib = mlc_jit_load(&obj, &e);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &e) : NULL;
  bool ok = fn != NULL;
  if (!ok) snprintf(why, n, "jit: %.300s", e.msg);
  int np = f->n_params;
  mlc_array *x = mlc_xmalloc(sizeof(mlc_array) * (size_t)(np + 1));
  mlc_array *y = mlc_xmalloc(sizeof(mlc_array) * (size_t)(np + 1));
  fill_pair(f, x, y, 23);
  if (ok && !mlc_interp_run(f, x, &e)) ok = (snprintf(why, n, "interp: %.300s", e.msg), false);
  if (ok && mlc_kernel_call(fn, np, y) != 0) ok = (snprintf(why, n, "kernel failed"), false);
  /* Compiled code may contract a * b + c into one FMA: a looser bound. */
  for (int i = 0; ok && i < np; i++) {
    double m = 0;
    if (!mlc_array_allclose(&y[i], &x[i], 1e-3, 1e-4, &m))
      ok = (snprintf(why, n, "llvm: param %s differs by %g", f->params[i]->name, m), false);
  }
  free_arrays(x, np), free_arrays(y, np);
  mlc_free(x), mlc_free(y);
  if (lib) mlc_jit_unload(lib);
  mlc_object_free(&obj);
  n_llvm++;
  return ok;
}

/* Verified and equal in results to f (interpreter); SAME_AS_LLVM also
 * compiles it (an O3 build costs ~0.1 s, so not every state is built). */
#define SAME_AS_(f, s, llvm)                                                          \
  do {                                                                                \
    char why_[512] = "";                                                              \
    mlc_error ve_ = {{0}};                                                            \
    const mlc_prim_func *g_ = mlc_sched_func(s);                                      \
    CHECK_MSG(mlc_verify_func(g_, &ve_), "verify: %s", ve_.msg);                      \
    CHECK_MSG(interp_matches((f), g_, why_, sizeof why_), "%s", why_);                \
    if (llvm) CHECK_MSG(llvm_matches((f), g_, why_, sizeof why_), "%s", why_);        \
  } while (0)
#define SAME_AS(f, s) SAME_AS_(f, s, false)
#define SAME_AS_LLVM(f, s) SAME_AS_(f, s, true)

/* ---- refusals --------------------------------------------------------------------- */

/* The state's printed IR, trace JSON, handle count, and a copy whose
 * generator tells whether the refusal drew a random number. */
typedef struct snapshot {
  char *ir, *json;
  int n_rvs;
  mlc_sched *copy;
} snapshot;

static snapshot snap(const mlc_sched *s) {
  return (snapshot){print_func(mlc_sched_func(s)), trace_json(s), mlc_sched_n_rvs(s), mlc_sched_copy(s)};
}

static int64_t next_draw(const mlc_sched *s) {
  mlc_sched *c = mlc_sched_copy(s);
  mlc_rv v;
  mlc_error e = {{0}};
  int64_t cands[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  double probs[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  MLC_ASSERT(mlc_sched_sample_categorical(c, 8, cands, probs, &v, &e));
  int64_t x = mlc_sched_rv_value(c, v);
  mlc_sched_sample_categorical(c, 8, cands, probs, &v, &e);
  x = x * 8 + mlc_sched_rv_value(c, v);
  mlc_sched_free(c);
  return x;
}

static void check_refused_(const char *file, int line, mlc_sched *s, snapshot before, bool ok,
                           const mlc_error *err, const char *want) {
  snapshot after = snap(s);
  if (ok) test_fail_(file, line, "accepted, expected refusal with \"%s\"", want);
  else if (!strstr(err->msg, want))
    test_fail_(file, line, "message \"%s\" lacks \"%s\"", err->msg, want);
  if (strcmp(before.ir, after.ir) != 0) {
    test_fail_(file, line, "IR changed by a refusal");
    fprintf(stderr, "---- before:\n%s---- after:\n%s", before.ir, after.ir);
  }
  if (strcmp(before.json, after.json) != 0) test_fail_(file, line, "trace changed by a refusal");
  if (before.n_rvs != after.n_rvs) test_fail_(file, line, "handles changed by a refusal");
  if (next_draw(before.copy) != next_draw(s)) test_fail_(file, line, "generator changed by a refusal");
  mlc_free(before.ir), mlc_free(before.json), mlc_free(after.ir), mlc_free(after.json);
  mlc_sched_free(before.copy), mlc_sched_free(after.copy);
}

#define REFUSED(s, call, want)                                 \
  do {                                                         \
    mlc_error e_ = {{0}};                                      \
    snapshot b_ = snap(s);                                     \
    mlc_error *err = &e_;                                      \
    bool ok_ = (call);                                         \
    check_refused_(__FILE__, __LINE__, s, b_, ok_, err, want); \
  } while (0)

#define OK(call)                                      \
  do {                                                \
    mlc_error e_ = {{0}};                             \
    mlc_error *err = &e_;                             \
    bool ok_ = (call);                                \
    CHECK_MSG(ok_, "%s failed: %s", #call, e_.msg);   \
  } while (0)

/* ---- inputs ------------------------------------------------------------------------- */

static const char *MM =
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

static const char *MM_RELU =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\"),\n"
    "         C: T.Buffer((8, 8), \"float32\")):\n"
    "    Y = T.alloc_buffer((8, 8))\n"
    "    for i, j, k in T.grid(8, 8, 8):\n"
    "        with T.block(\"Y\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(8, 8):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

/* A reduction with the given init value and update expression over A[vi, vk]. */
static mlc_prim_func *reduction(const char *init, const char *update) {
  char text[2048];
  snprintf(text, sizeof text,
           HDR
           "@T.prim_func\n"
           "def main(A: T.Buffer((6, 24), \"float32\"), B: T.Buffer((6,), \"float32\")):\n"
           "    for i, k in T.grid(6, 24):\n"
           "        with T.block(\"B\"):\n"
           "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
           "            with T.init():\n"
           "                B[vi] = %s\n"
           "            B[vi] = %s\n",
           init, update);
  mlc_prim_func *f = parse(text);
  MLC_ASSERT(f);
  return f;
}

static mlc_rv block_of(mlc_sched *s, const char *name) {
  mlc_rv b;
  mlc_error e = {{0}};
  MLC_ASSERT(mlc_sched_get_block(s, name, NULL, &b, &e));
  return b;
}

static int loops_of(mlc_sched *s, const char *name, mlc_rv **l) {
  mlc_error e = {{0}};
  int n = mlc_sched_get_loops(s, block_of(s, name), l, &e);
  MLC_ASSERT(n >= 0);
  return n;
}

static void split2(mlc_sched *s, mlc_rv loop, int64_t inner, mlc_rv *out) {
  mlc_error e = {{0}};
  bool ok = mlc_sched_split(s, loop, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(inner)}, true, out, &e);
  if (!ok) fprintf(stderr, "split: %s\n", e.msg);
  MLC_ASSERT(ok);
}

/* ---- golden files ---------------------------------------------------------------------- */

static bool golden_one(const char *name, char *why, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "tests/sched_golden/%s", name);
  char *src = test_read_file(path, NULL);
  size_t len = strlen(path);
  snprintf(path + len - 3, sizeof path - len + 3, ".expected");
  char *exp = test_read_file(path, NULL);
  bool ok = false;
  mlc_prim_func *f = src ? parse(src) : NULL;
  const char *tl = src ? strstr(src, "# trace: ") : NULL;
  mlc_sched *s = NULL;
  mlc_arena *ta = mlc_arena_new();
  mlc_error e = {{0}};
  if (!src || !exp || !f || !tl) {
    snprintf(why, n, "missing input, expected file, function or # trace: line");
    goto done;
  }
  tl += strlen("# trace: ");
  mlc_trace *t = mlc_trace_from_json(ta, tl, strcspn(tl, "\n"), &e);
  s = mlc_sched_new(f, 1);
  if (!t || !mlc_sched_replay(s, t, NULL, NULL, &e)) {
    snprintf(why, n, "trace: %.400s", e.msg);
    goto done;
  }
  if (!mlc_verify_func(mlc_sched_func(s), &e)) {
    snprintf(why, n, "verify: %.400s", e.msg);
    goto done;
  }
  if (!equals_text(mlc_sched_func(s), exp)) {
    snprintf(why, n, "differs from the .expected file (printed on stderr)");
    goto done;
  }
  /* The printed result reads back as the same function. */
  char *txt = print_func(mlc_sched_func(s));
  bool rt = equals_text(mlc_sched_func(s), txt);
  mlc_free(txt);
  if (!rt) {
    snprintf(why, n, "print/parse round trip differs");
    goto done;
  }
  /* Small enough to run: the interpreter and the LLVM build. */
  int64_t volume = 0;
  for (int i = 0; i < f->n_params; i++) volume += mlc_buffer_numel(f->params[i]);
  ok = volume > 100000 || (interp_matches(f, mlc_sched_func(s), why, n) &&
                           llvm_matches(f, mlc_sched_func(s), why, n));
done:
  mlc_sched_free(s);
  mlc_arena_free(ta);
  mlc_free(src), mlc_free(exp);
  return ok;
}

static void run_golden(void) {
  DIR *d = opendir("tests/sched_golden");
  if (!d) {
    test_report("sched_golden/reduce", 0, "cannot open tests/sched_golden");
    return;
  }
  char *names[64];
  int nn = 0;
  struct dirent *de;
  while ((de = readdir(d)) && nn < 64) {
    size_t l = strlen(de->d_name);
    if (strncmp(de->d_name, "reduce_", 7) == 0 && l > 3 && strcmp(de->d_name + l - 3, ".py") == 0)
      names[nn++] = mlc_arena_strdup(TA, de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)nn, sizeof names[0], test_cmp_str);
  for (int i = 0; i < nn; i++) {
    char why[512] = "", cname[128];
    bool ok = golden_one(names[i], why, sizeof why);
    snprintf(cname, sizeof cname, "sched_golden/%s", names[i]);
    test_report(cname, ok, why);
  }
  if (nn < 5) test_report("sched_golden/reduce count", 0, "expected at least 5 reduce_*.py files");
}

/* The blockized 1024 matmul is the notes' tmm-16x16 form up to names. */
static void test_blockize_is_notes_form(void) {
  char *src = test_read_file("tests/sched_golden/reduce_blockize_16x16.py", NULL);
  char *notes = test_read_file("tests/golden/tmm_16x16.py", NULL);
  CHECK(src && notes);
  if (!src || !notes) return;
  mlc_prim_func *f = parse(src);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, ii[2], jj[2], kk[2], out;
  CHECK(loops_of(s, "matmul", &l) == 3);
  split2(s, l[0], 16, ii), split2(s, l[1], 16, jj), split2(s, l[2], 16, kk);
  OK(mlc_sched_reorder(s, 6, (mlc_rv[]){ii[0], jj[0], kk[0], ii[1], jj[1], kk[1]}, err));
  OK(mlc_sched_blockize(s, ii[1], true, &out, err));
  CHECK(equals_text(mlc_sched_func(s), notes));
  CHECK_STREQ(mlc_sched_rv_block(s, out)->name, "matmul_o");
  /* The notes then decompose the outer block at k_0 (6.7). */
  mlc_rv init;
  OK(mlc_sched_decompose_reduction(s, out, kk[0], &init, err));
  CHECK_STREQ(mlc_sched_rv_block(s, out)->name, "matmul_o_update");
  CHECK_STREQ(mlc_sched_rv_block(s, init)->name, "matmul_o_init");
  mlc_error e = {{0}};
  CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "%s", e.msg);
  mlc_str o = {0};
  mlc_trace_print(&o, mlc_sched_trace(s));
  CHECK_MSG(strstr(mlc_str_cstr(&o), "  b10 = sch.blockize(loop=l5, preserve_unit_iters=True)\n"
                                      "  b11 = sch.decompose_reduction(block=b10, loop=l8)\n"),
            "%.300s", strstr(mlc_str_cstr(&o), "b10"));
  mlc_str_free(&o);
  mlc_sched_free(s);
  mlc_free(src), mlc_free(notes);
}

/* The notes' stochastic_schedule_mm, decision [32, 4]: the trace prints as
 * the notes print it (4.3). */
static void test_notes_stochastic_trace(void) {
  char *src = test_read_file("tests/sched_golden/reduce_decompose_notes.py", NULL);
  CHECK(src);
  if (!src) return;
  mlc_sched *s = mlc_sched_new(parse(src), 1);
  mlc_rv c = block_of(s, "C"), *l, v[2], j[2], init;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, c, &l, &e) == 3);
  OK(mlc_sched_sample_perfect_tile(s, l[1], 2, 16, v, err));
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_RV(v[0]), MLC_OP_RV(v[1])}, true, j, err));
  OK(mlc_sched_reorder(s, 4, (mlc_rv[]){l[0], j[0], l[2], j[1]}, err));
  OK(mlc_sched_decompose_reduction(s, c, l[2], &init, err));
  /* Replay with the notes' decision for the printed form. */
  char *js = trace_json(s);
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
  mlc_sched *r = mlc_sched_new(parse(src), 2);
  mlc_decision d = {2, {32, 4}};
  mlc_replay_opts o = {.n_overrides = 1, .override_insts = (int[]){2}, .override_decisions = &d};
  OK(t && mlc_sched_replay(r, t, &o, NULL, err));
  mlc_str p = {0};
  mlc_trace_print(&p, mlc_sched_trace(r));
  CHECK_STREQ(mlc_str_cstr(&p),
              "# from tvm import tir\n"
              "def apply_trace(sch: tir.Schedule) -> None:\n"
              "  b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
              "  l1, l2, l3 = sch.get_loops(block=b0)\n"
              "  v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[32, 4])\n"
              "  l6, l7 = sch.split(loop=l2, factors=[v4, v5], preserve_unit_iters=True)\n"
              "  sch.reorder(l1, l6, l3, l7)\n"
              "  b8 = sch.decompose_reduction(block=b0, loop=l3)\n");
  char *exp = test_read_file("tests/sched_golden/reduce_decompose_notes.expected", NULL);
  CHECK(exp && equals_text(mlc_sched_func(r), exp));
  mlc_str_free(&p);
  mlc_free(js), mlc_free(exp), mlc_free(src);
  mlc_sched_free(r), mlc_sched_free(s);
  mlc_arena_free(a);
}

/* The notes' stochastic_schedule_mm (4.3), all of it: sample j's tiling,
 * split, reorder(i, j_0, k, j_1), decompose_reduction(C, k). */
static bool notes_stochastic_mm(mlc_sched *s, mlc_error *err) {
  mlc_rv c, *l, v[2], j[2], init;
  return mlc_sched_get_block(s, "C", "main", &c, err) && mlc_sched_get_loops(s, c, &l, err) == 3 &&
         mlc_sched_sample_perfect_tile(s, l[1], 2, 16, v, err) &&
         mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_RV(v[0]), MLC_OP_RV(v[1])}, true, j,
                         err) &&
         mlc_sched_reorder(s, 4, (mlc_rv[]){l[0], j[0], l[2], j[1]}, err) &&
         mlc_sched_decompose_reduction(s, c, l[2], &init, err);
}

/* The notes' printed trace with decision [outer, inner]. */
static char *notes_mm_trace(int64_t outer, int64_t inner) {
  mlc_str o = {0};
  mlc_str_printf(&o,
                 "# from tvm import tir\n"
                 "def apply_trace(sch: tir.Schedule) -> None:\n"
                 "  b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
                 "  l1, l2, l3 = sch.get_loops(block=b0)\n"
                 "  v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, "
                 "decision=[%d, %d])\n"
                 "  l6, l7 = sch.split(loop=l2, factors=[v4, v5], preserve_unit_iters=True)\n"
                 "  sch.reorder(l1, l6, l3, l7)\n"
                 "  b8 = sch.decompose_reduction(block=b0, loop=l3)\n",
                 (int)outer, (int)inner);
  return mlc_str_take(&o);
}

/* tests/sched_golden/reduce_decompose_notes.expected with j tiled
 * outer x inner instead of 32 x 4. */
static char *notes_mm_ir(int64_t outer, int64_t inner) {
  char j[48];
  if (inner == 1) snprintf(j, sizeof j, "j_0");
  else snprintf(j, sizeof j, "j_0 * %d", (int)inner);
  mlc_str o = {0};
  mlc_str_printf(&o, HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"), "
      "C: T.Buffer((128, 128), \"float32\")):\n"
      "    T.func_attr({\"global_symbol\": \"main\", \"tir.noalias\": True})\n"
      "    for i, j_0 in T.grid(128, %d):\n"
      "        for j_1_init in range(%d):\n"
      "            with T.block(\"C_init\"):\n"
      "                vi = T.axis.spatial(128, i)\n"
      "                vj = T.axis.spatial(128, %s + j_1_init)\n"
      "                T.reads()\n"
      "                T.writes(C[vi, vj])\n"
      "                C[vi, vj] = T.float32(0)\n"
      "        for k, j_1 in T.grid(128, %d):\n"
      "            with T.block(\"C_update\"):\n"
      "                vi = T.axis.spatial(128, i)\n"
      "                vj = T.axis.spatial(128, %s + j_1)\n"
      "                vk = T.axis.reduce(128, k)\n"
      "                T.reads(C[vi, vj], A[vi, vk], B[vk, vj])\n"
      "                T.writes(C[vi, vj])\n"
      "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n",
      (int)outer, (int)inner, j, (int)inner, j);
  return mlc_str_take(&o);
}

/* Issue 4, item 3, end to end on the notes' whole example: for several
 * seeds the sampled trace prints as in the notes (with the drawn
 * decision) and the IR is the notes' form of that tiling; the JSON reads
 * back to the same JSON and trace hash; replaying it on a fresh state
 * (another seed) reproduces the IR; replaying with each other decision
 * gives that other tiling; results equal the unscheduled matmul. */
static void test_notes_stochastic_full(void) {
  char *src = test_read_file("tests/sched_golden/reduce_decompose_notes.py", NULL);
  CHECK(src);
  if (!src) return;
  mlc_prim_func *f = parse(src);
  mlc_error e = {{0}};
  int seen[17] = {0}, distinct = 0;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    mlc_sched *s = mlc_sched_new(f, seed);
    OK(notes_stochastic_mm(s, err));
    const mlc_decision *d = &mlc_sched_trace(s)->insts.data[2].decision;
    CHECK(d->n == 2 && d->v[0] * d->v[1] == 128 && d->v[1] >= 1 && d->v[1] <= 16);
    if (d->n != 2 || d->v[1] < 1 || d->v[1] > 16) {
      mlc_sched_free(s);
      continue;
    }
    if (!seen[d->v[1]]++) distinct++;
    mlc_str p = {0};
    mlc_trace_print(&p, mlc_sched_trace(s));
    char *want = notes_mm_trace(d->v[0], d->v[1]), *ir = notes_mm_ir(d->v[0], d->v[1]);
    CHECK_STREQ(mlc_str_cstr(&p), want);
    CHECK_MSG(equals_text(mlc_sched_func(s), ir), "seed %d: not the notes' IR", (int)seed);
    /* JSON round trip. */
    char *js = trace_json(s);
    mlc_arena *a = mlc_arena_new();
    mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
    CHECK_MSG(t, "%s", e.msg);
    if (t) {
      mlc_str o = {0};
      mlc_trace_to_json(&o, t);
      CHECK_STREQ(mlc_str_cstr(&o), js);
      CHECK(mlc_trace_hash(t) == mlc_trace_hash(mlc_sched_trace(s)));
      mlc_str_free(&o);
      /* Replay with the stored decision reproduces the IR. */
      mlc_sched *r = mlc_sched_new(f, 1000 + seed);
      OK(mlc_sched_replay(r, t, NULL, NULL, err));
      CHECK(mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)));
      char *p1 = print_func(mlc_sched_func(s)), *p2 = print_func(mlc_sched_func(r));
      CHECK_STREQ(p2, p1);
      mlc_free(p1), mlc_free(p2);
      mlc_sched_free(r);
      /* Another decision: the other tiling. */
      int64_t other = d->v[1] == 4 ? 16 : 4;
      mlc_decision od = {2, {128 / other, other}};
      mlc_replay_opts o2 = {.n_overrides = 1, .override_insts = (int[]){2}, .override_decisions = &od};
      mlc_replay_report rep;
      r = mlc_sched_new(f, seed);
      OK(mlc_sched_replay(r, t, &o2, &rep, err));
      CHECK(rep.n_resampled == 0);
      char *oir = notes_mm_ir(128 / other, other);
      CHECK_MSG(equals_text(mlc_sched_func(r), oir), "seed %d: decision [%d, %d] not applied",
                (int)seed, (int)(128 / other), (int)other);
      CHECK(!mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)));
      if (seed == 1) SAME_AS(f, r);
      mlc_free(oir);
      mlc_sched_free(r);
    }
    if (seed == 1) SAME_AS(f, s);
    mlc_arena_free(a);
    mlc_free(js), mlc_free(want), mlc_free(ir);
    mlc_str_free(&p);
    mlc_sched_free(s);
  }
  CHECK_MSG(distinct >= 2, "12 seeds drew %d distinct tilings", distinct);
  mlc_free(src);
}

/* ---- decompose_reduction ------------------------------------------------------------- */

static void test_decompose_numeric(void) {
  mlc_prim_func *f = parse(MM);
  /* At every loop of a 3-level tiling. */
  for (int at = 0; at < 6; at++) {
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_rv *l, ii[2], jj[2], kk[2], init;
    loops_of(s, "C", &l);
    split2(s, l[0], 4, ii), split2(s, l[1], 5, jj), split2(s, l[2], 4, kk);
    mlc_rv order[6] = {ii[0], kk[0], jj[0], ii[1], kk[1], jj[1]};
    OK(mlc_sched_reorder(s, 6, order, err));
    mlc_rv c = block_of(s, "C");
    /* Below k_0 (positions 2..5) the reduce loop k_0 is above: refused. */
    if (at >= 2) {
      REFUSED(s, mlc_sched_decompose_reduction(s, c, order[at], &init, err),
              "which drives reduce iter vk");
    } else {
      OK(mlc_sched_decompose_reduction(s, c, order[at], &init, err));
      SAME_AS_LLVM(f, s);
    }
    mlc_sched_free(s);
  }
  /* Uneven split: predicates follow the chosen loops. */
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, ii[2], jj[2], init;
  loops_of(s, "C", &l);
  split2(s, l[0], 5, ii), split2(s, l[1], 3, jj);
  OK(mlc_sched_reorder(s, 4, (mlc_rv[]){ii[0], l[2], jj[0], ii[1]}, err));
  OK(mlc_sched_decompose_reduction(s, block_of(s, "C"), l[2], &init, err));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
}

static void test_decompose_refusals(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *ly, *lc, y = block_of(s, "Y"), c = block_of(s, "C"), k2[2], out;
  loops_of(s, "Y", &ly);
  loops_of(s, "C", &lc);
  REFUSED(s, mlc_sched_decompose_reduction(s, c, lc[0], &out, err),
          "decompose_reduction: b1 (block C) has no init: only a reduction block can be decomposed");
  REFUSED(s, mlc_sched_decompose_reduction(s, y, lc[1], &out, err),
          "decompose_reduction: l8 (loop j) is not a loop around b0 (block Y) in its scope");
  split2(s, ly[2], 4, k2);
  REFUSED(s, mlc_sched_decompose_reduction(s, y, k2[1], &out, err),
          "lies inside loop k_0, which drives reduce iter vk of b0 (block Y): the loop must be above "
          "every loop the reduction depends on");
  REFUSED(s, mlc_sched_decompose_reduction(s, ly[0], ly[1], &out, err),
          "decompose_reduction: l3 (loop i) is a loop, expected a block");
  REFUSED(s, mlc_sched_decompose_reduction(s, y, ly[2], &out, err), "no longer in the function");
  OK(mlc_sched_decompose_reduction(s, y, ly[0], &out, err));
  /* The update has no init left. */
  REFUSED(s, mlc_sched_decompose_reduction(s, y, ly[0], &out, err), "(block Y_update) has no init");
  SAME_AS(f, s);
  mlc_sched_free(s);

  /* A loop no iter depends on: the update would run twice per init. */
  s = mlc_sched_new(parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i, u, k in T.grid(4, 2, 8):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(4, i)\n"
      "            vk = T.axis.reduce(8, k)\n"
      "            with T.init():\n"
      "                B[vi] = T.float32(0)\n"
      "            B[vi] = B[vi] + A[vi, vk]\n"), 1);
  mlc_rv *lb, bb = block_of(s, "B");
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_decompose_reduction(s, bb, lb[0], &out, err),
          "decompose_reduction: loop u (at or below l2 (loop i)) drives no iter of b0 (block B)");
  REFUSED(s, mlc_sched_decompose_reduction(s, bb, lb[1], &out, err), "loop u (at or below l3 (loop u))");
  mlc_sched_free(s);
}

/* TVM's DecomposeReduction gives the init block the block's annotations
 * (its new loops carry none); the update keeps them. */
static const char *SQ_ANN =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((4, 6, 8), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for b0, i0, j0 in T.grid(4, 6, 8):\n"
    "        with T.block(\"C\"):\n"
    "            b, i, j = T.axis.remap(\"SRR\", [b0, i0, j0])\n"
    "            T.block_attr({\"test_annotation\": 1, \"note\": \"keep\"})\n"
    "            with T.init():\n"
    "                C[b] = T.float32(0)\n"
    "            C[b] = C[b] + A[b, i, j] * A[b, i, j]\n";

static bool has_int_ann(const mlc_block *b, const char *key, int64_t v) {
  const mlc_ann *a = b ? mlc_ann_find(b->n_anns, b->anns, key) : NULL;
  return a && a->kind == MLC_ANN_INT && a->i == v;
}

static bool has_str_ann(const mlc_block *b, const char *key, const char *v) {
  const mlc_ann *a = b ? mlc_ann_find(b->n_anns, b->anns, key) : NULL;
  return a && a->kind == MLC_ANN_STRING && strcmp(a->s, v) == 0;
}

static void test_decompose_annotations(void) {
  /* The example: the init block carries the block's annotations. */
  mlc_prim_func *f = parse(SQ_ANN);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, init, c = block_of(s, "C");
  loops_of(s, "C", &l);
  OK(mlc_sched_decompose_reduction(s, c, l[0], &init, err));
  CHECK(equals_text(mlc_sched_func(s),
      HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 6, 8), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
      "    for b0_init in range(4):\n"
      "        with T.block(\"C_init\"):\n"
      "            b = T.axis.remap(\"S\", [b0_init])\n"
      "            T.block_attr({\"test_annotation\": 1, \"note\": \"keep\"})\n"
      "            C[b] = T.float32(0)\n"
      "    for b0, i0, j0 in T.grid(4, 6, 8):\n"
      "        with T.block(\"C_update\"):\n"
      "            b, i, j = T.axis.remap(\"SRR\", [b0, i0, j0])\n"
      "            T.reads(C[b], A[b, i, j])\n"
      "            T.block_attr({\"test_annotation\": 1, \"note\": \"keep\"})\n"
      "            C[b] = C[b] + A[b, i, j] * A[b, i, j]\n"));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);

  /* Tiled, annotated through the schedule (so replay must agree), the
   * init placed under a loop that carries an annotation of its own: the
   * init's copy of that loop carries none, as in TVM. */
  s = mlc_sched_new(parse(MM), 1);
  c = block_of(s, "C");
  mlc_rv ii[2];
  loops_of(s, "C", &l);
  split2(s, l[0], 4, ii);
  OK(mlc_sched_annotate(s, c, "schedule_rule", MLC_OP_STR("mlt"), err));
  OK(mlc_sched_annotate(s, c, "level", MLC_OP_INT(3), err));
  OK(mlc_sched_annotate(s, ii[1], "pragma_unroll_explicit", MLC_OP_INT(1), err));
  OK(mlc_sched_decompose_reduction(s, c, ii[1], &init, err));
  const mlc_block *ib = mlc_sched_rv_block(s, init), *ub = mlc_sched_rv_block(s, c);
  CHECK(ib && ib->n_anns == 2 && has_str_ann(ib, "schedule_rule", "mlt") && has_int_ann(ib, "level", 3));
  CHECK(ub && ub->n_anns == 2 && has_str_ann(ub, "schedule_rule", "mlt") && has_int_ann(ub, "level", 3));
  mlc_rv *il;
  mlc_error e = {{0}};
  int nil = mlc_sched_get_loops(s, init, &il, &e);
  CHECK(nil == 3 && mlc_sched_rv_loop(s, il[1])->loop.n_anns == 0);
  const mlc_stmt *kept = mlc_sched_rv_loop(s, ii[1]);
  CHECK(kept && kept->loop.n_anns == 1);
  SAME_AS_LLVM(parse(MM), s);
  /* The two blocks' lists are independent: annotating one leaves the other. */
  OK(mlc_sched_annotate(s, init, "level", MLC_OP_INT(7), err));
  CHECK(has_int_ann(mlc_sched_rv_block(s, init), "level", 7) && has_int_ann(mlc_sched_rv_block(s, c), "level", 3));
  char *js = trace_json(s);
  mlc_arena *ta = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(ta, js, strlen(js), &e);
  mlc_sched *r2 = mlc_sched_new(parse(MM), 5);
  CHECK_MSG(t && mlc_sched_replay(r2, t, NULL, NULL, &e), "%s", e.msg);
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r2)));
  mlc_sched_free(r2), mlc_arena_free(ta), mlc_free(js);
  mlc_sched_free(s);

  /* Refusals, as TensorIR's CheckReductionBlock: bindings not quasi-affine
   * (the init runs at k = 0 and at k = 1: moving it out would change the
   * result), a reversed reduce loop (the init runs last), an init that
   * indexes the output with a reduce iter. */
  static const char *const bad[][3] = {
      {"vk = T.axis.R(64, T.floordiv(k * k, 2))", "B[vi] = T.float32(0)",
       "decompose_reduction: b3 (block B): block \"B\" binds iter vk to k * k // 2, which is not quasi-affine"},
      {"vk = T.axis.R(8, 7 - k)", "B[vi] = T.float32(0)",
       "decompose_reduction: b3 (block B): reduce iter vk of block \"B\" (bound to 7 - k) is not at its "
       "minimum when every loop is at its first iteration"},
      {"vk = T.axis.R(8, k)", "B[vi] = A[vi, vk] * T.float32(0)",
       "decompose_reduction: b3 (block B): the init uses reduce iter vk"},
  };
  for (int q = 0; q < 3; q++) {
    char text[1024];
    snprintf(text, sizeof text,
             HDR
             "@T.prim_func\n"
             "def main(A: T.Buffer((4, 64), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
             "    for i, k in T.grid(4, 8):\n"
             "        with T.block(\"B\"):\n"
             "            vi = T.axis.S(4, i)\n"
             "            %s\n"
             "            T.block_attr({\"a\": 1})\n"
             "            with T.init():\n"
             "                %s\n"
             "            B[vi] = B[vi] + A[vi, vk]\n",
             bad[q][0], bad[q][1]);
    mlc_prim_func *g = parse(text);
    CHECK(g != NULL);
    if (!g) continue;
    s = mlc_sched_new(g, 1);
    loops_of(s, "B", &l);
    mlc_rv bb = block_of(s, "B");
    REFUSED(s, mlc_sched_decompose_reduction(s, bb, l[0], &init, err), bad[q][2]);
    mlc_sched_free(s);
  }

  /* The rf block of an rfactor, decomposed: its init inherits what the rf
   * block inherited from the reduction. */
  f = parse(SQ_ANN);
  s = mlc_sched_new(f, 1);
  mlc_rv rf, *rl;
  loops_of(s, "C", &l);
  OK(mlc_sched_rfactor(s, l[2], 1, &rf, err));
  CHECK(mlc_sched_get_loops(s, rf, &rl, &e) == 3);
  OK(mlc_sched_decompose_reduction(s, rf, rl[0], &init, err));
  ib = mlc_sched_rv_block(s, init);
  CHECK(has_int_ann(ib, "test_annotation", 1) && has_str_ann(ib, "note", "keep"));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
}

/* ---- rfactor ------------------------------------------------------------------------------ */

static void test_rfactor_numeric(void) {
  static const char *const reducers[][2] = {
      {"T.float32(0)", "B[vi] + A[vi, vk]"},
      {"T.float32(0)", "A[vi, vk] * T.float32(2) + B[vi]"},
      {"T.float32(1)", "B[vi] * (A[vi, vk] * T.float32(0.5) + T.float32(1))"},
      {"T.float32(-3.4028234663852886e+38)", "T.max(B[vi], A[vi, vk])"},
      {"T.float32(3.4028234663852886e+38)", "T.min(A[vi, vk], B[vi])"},
  };
  for (int r = 0; r < 5; r++) {
    mlc_prim_func *f = reduction(reducers[r][0], reducers[r][1]);
    for (int which = 0; which < 3; which++)
      for (int axis = -2; axis <= 1; axis++) {
        mlc_sched *s = mlc_sched_new(f, 1);
        mlc_rv *l, kk[2], rf;
        loops_of(s, "B", &l);
        mlc_rv target = l[1];
        if (which < 2) {
          split2(s, l[1], 4, kk);
          target = kk[which];
        }
        OK(mlc_sched_rfactor(s, target, axis, &rf, err));
        SAME_AS_(f, s, axis == which - 1);
        /* The rf block is a reduction again when it kept a reduce iter. */
        const mlc_block *rb = mlc_sched_rv_block(s, rf);
        mlc_rv *rl, init;
        mlc_error e = {{0}};
        if (rb && rb->init && mlc_sched_get_loops(s, rf, &rl, &e) > 0) {
          OK(mlc_sched_decompose_reduction(s, rf, rl[0], &init, err));
          OK(mlc_sched_decompose_reduction(s, block_of(s, "B"), l[0], &init, err));
          SAME_AS_(f, s, axis == 0 && which == 0);
        }
        mlc_sched_free(s);
      }
  }
  /* A matmul's k, whole (the rf block has no reduce iter left), and on a task. */
  mlc_prim_func *f = parse(MM);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, rf;
  loops_of(s, "C", &l);
  OK(mlc_sched_rfactor(s, l[2], 1, &rf, err));
  CHECK(mlc_sched_rv_block(s, rf) && !mlc_sched_rv_block(s, rf)->init);
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);

  const mlc_task_def *d = mlc_task_find("softmax");
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error e = {{0}};
  CHECK_MSG(d && mlc_task_parse_shape(d, "4,24", sh, &e), "%s", e.msg);
  if (!d) return;
  f = mlc_task_build(TA, d, sh);
  s = mlc_sched_new(f, 1);
  /* Every reduction block of the task, on its inner split reduce loop. */
  mlc_rv root, *kids;
  OK(mlc_sched_get_block(s, "root", NULL, &root, err));
  int nk = mlc_sched_get_child_blocks(s, root, &kids, &e);
  int done = 0;
  for (int i = 0; i < nk; i++) {
    const mlc_block *b = mlc_sched_rv_block(s, kids[i]);
    if (!b || !b->init) continue;
    int n = mlc_sched_get_loops(s, kids[i], &l, &e);
    mlc_rv kk[2];
    split2(s, l[n - 1], 6, kk);
    OK(mlc_sched_rfactor(s, kk[1], 0, &rf, err));
    done++;
  }
  CHECK(done >= 2);
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
}

static void test_rfactor_refusals(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *ly, *lc, out, k2[2];
  loops_of(s, "Y", &ly);
  loops_of(s, "C", &lc);
  REFUSED(s, mlc_sched_rfactor(s, ly[0], 0, &out, err),
          "rfactor: l1 (loop i) drives spatial iter vi of block \"Y\"; only a reduce loop can be factored");
  REFUSED(s, mlc_sched_rfactor(s, lc[1], 0, &out, err),
          "rfactor: l6 (loop j): block \"C\" has no init: not a reduction block");
  REFUSED(s, mlc_sched_rfactor(s, ly[2], 3, &out, err),
          "rfactor: l3 (loop k): factor_axis 3 is out of range [-3, 2] for 2-d buffer Y");
  REFUSED(s, mlc_sched_rfactor(s, ly[2], -4, &out, err), "factor_axis -4 is out of range");
  OK(mlc_sched_unroll(s, ly[2], err));
  REFUSED(s, mlc_sched_rfactor(s, ly[2], 0, &out, err), "rfactor: l3 (loop k) is unroll, not serial");
  mlc_sched_free(s);

  /* A root-level loop over two blocks. */
  const char *two = HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
      "    for i in range(4):\n"
      "        for k in range(8):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
      "                with T.init():\n"
      "                    B[vi] = T.float32(0)\n"
      "                B[vi] = B[vi] + A[vi, vk]\n"
      "        for k in range(8):\n"
      "            with T.block(\"C\"):\n"
      "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
      "                with T.init():\n"
      "                    C[vi] = T.float32(0)\n"
      "                C[vi] = C[vi] + A[vi, vk]\n";
  f = parse(two);
  s = mlc_sched_new(f, 1);
  mlc_rv *lb;
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_rfactor(s, lb[0], 0, &out, err), "rfactor: l1 (loop i) must hold exactly one block, holds 2");
  mlc_sched_free(s);

  /* The rf nest goes before the outermost loop: a block before the
   * reduction under it, or one after it that feeds it, would be reordered. */
  f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    P = T.alloc_buffer((4, 8))\n"
      "    for i in range(4):\n"
      "        for j in range(8):\n"
      "            with T.block(\"P\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                P[vi, vj] = A[vi, vj] * T.float32(2)\n"
      "        for k in range(8):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
      "                with T.init():\n"
      "                    B[vi] = T.float32(0)\n"
      "                B[vi] = B[vi] + P[vi, vk]\n");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_rfactor(s, lb[1], 0, &out, err),
          "rfactor: l2 (loop k): block \"B\" is not the first block under its outermost loop i");
  mlc_sched_free(s);
  f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i in range(4):\n"
      "        for k in range(8):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
      "                with T.init():\n"
      "                    B[vi] = T.float32(0)\n"
      "                B[vi] = B[vi] + A[vi, vk]\n"
      "        for j in range(8):\n"
      "            with T.block(\"W\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                A[(vi + 1) % 4, vj] = A[(vi + 1) % 4, vj] + T.float32(1)\n");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_rfactor(s, lb[1], 0, &out, err),
          "rfactor: l2 (loop k): block \"W\" under the same loops writes what block \"B\" reads");
  mlc_sched_free(s);

  /* Not a recognised reducer; init not the identity; a predicate on k. */
  f = reduction("T.float32(0)", "B[vi] * T.float32(0.5) + A[vi, vk]");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_rfactor(s, lb[1], 0, &out, err),
          "rfactor: l2 (loop k): block \"B\": its update does not read the element it writes");
  mlc_sched_free(s);
  f = reduction("T.float32(1)", "B[vi] + A[vi, vk]");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_rfactor(s, lb[1], 0, &out, err), "block \"B\": its init is not the identity of its reduction");
  mlc_sched_free(s);
  f = reduction("T.float32(0)", "B[vi] + B[vi] * A[vi, vk]");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_rfactor(s, lb[1], 0, &out, err), "its update reads the buffer it reduces into elsewhere");
  mlc_sched_free(s);
  f = reduction("T.float32(0)", "B[vi] + A[vi, vk]");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  OK(mlc_sched_split(s, lb[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(5)}, true, k2, err));
  REFUSED(s, mlc_sched_rfactor(s, k2[1], 0, &out, err),
          "the predicate of block \"B\" depends on reduce loop k_0");
  mlc_sched_free(s);
}

/* ---- rfactor over fused reduce loops ---------------------------------------------------- */

/* TVM's transformed_square_sum_square_root (smaller): i and j fused and split
 * by 1, the unit inner loop used by no binding. */
static const char *SQ_FUSED =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((4, 8, 8), \"float32\"), D: T.Buffer((4,), \"float32\")):\n"
    "    C = T.alloc_buffer((4,))\n"
    "    for i0, i1_i2_fused_outer, i1_i2_fused_inner in T.grid(4, 64, 1):\n"
    "        with T.block(\"C\"):\n"
    "            b = T.axis.S(4, i0)\n"
    "            i = T.axis.R(8, T.floordiv(i1_i2_fused_outer, 8))\n"
    "            j = T.axis.R(8, T.floormod(i1_i2_fused_outer, 8))\n"
    "            T.reads([A[b, i, j]])\n"
    "            T.writes([C[b]])\n"
    "            with T.init():\n"
    "                C[b] = 0.0\n"
    "            C[b] = C[b] + (A[b, i, j] * A[b, i, j])\n"
    "    for i0_1 in T.serial(0, 4):\n"
    "        with T.block(\"D\"):\n"
    "            b_1 = T.axis.S(4, i0_1)\n"
    "            D[b_1] = T.sqrt(C[b_1])\n";

/* A sum over two axes (2-D output) and over three (with a 1-D output). */
static const char *SUM2 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((3, 2, 6, 4), \"float32\"), B: T.Buffer((3, 2), \"float32\")):\n"
    "    for x, y, k1, k2 in T.grid(3, 2, 6, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vx, vy, vk1, vk2 = T.axis.remap(\"SSRR\", [x, y, k1, k2])\n"
    "            with T.init():\n"
    "                B[vx, vy] = T.float32(0)\n"
    "            B[vx, vy] = B[vx, vy] + A[vx, vy, vk1, vk2]\n";

static const char *MAX3 =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((3, 4, 3, 5), \"float32\"), B: T.Buffer((3,), \"float32\")):\n"
    "    for x, k1, k2, k3 in T.grid(3, 4, 3, 5):\n"
    "        with T.block(\"B\"):\n"
    "            vx, vk1, vk2, vk3 = T.axis.remap(\"SRRR\", [x, k1, k2, k3])\n"
    "            with T.init():\n"
    "                B[vx] = T.float32(-3.4028234663852886e+38)\n"
    "            B[vx] = T.max(B[vx], A[vx, vk1, vk2, vk3] * T.float32(2))\n";

static void test_rfactor_fused_example(void) {
  mlc_prim_func *f = parse(SQ_FUSED);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, rf;
  loops_of(s, "C", &l);
  OK(mlc_sched_rfactor(s, l[2], 0, &rf, err));
  /* TVM's square_sum_square_root_rfactor. */
  CHECK(equals_text(mlc_sched_func(s),
      HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8, 8), \"float32\"), D: T.Buffer((4,), \"float32\")):\n"
      "    C = T.alloc_buffer((4,))\n"
      "    C_rf = T.alloc_buffer((1, 4))\n"
      "    for i0, i1_i2_fused_outer, i1_i2_fused_inner in T.grid(4, 64, 1):\n"
      "        with T.block(\"C_rf\"):\n"
      "            vi1_i2_fused_inner, b = T.axis.remap(\"SS\", [i1_i2_fused_inner, i0])\n"
      "            i = T.axis.R(8, T.floordiv(i1_i2_fused_outer, 8))\n"
      "            j = T.axis.R(8, T.floormod(i1_i2_fused_outer, 8))\n"
      "            with T.init():\n"
      "                C_rf[vi1_i2_fused_inner, b] = 0.0\n"
      "            C_rf[vi1_i2_fused_inner, b] = C_rf[vi1_i2_fused_inner, b] + (A[b, i, j] * A[b, i, j])\n"
      "    for i0_1, i1_i2_fused_inner_1 in T.grid(4, 1):\n"
      "        with T.block(\"C\"):\n"
      "            vi1_i2_fused_inner_1, b_1 = T.axis.remap(\"RS\", [i1_i2_fused_inner_1, i0_1])\n"
      "            with T.init():\n"
      "                C[b_1] = 0.0\n"
      "            C[b_1] = C[b_1] + C_rf[vi1_i2_fused_inner_1, b_1]\n"
      "    for i0_2 in T.serial(0, 4):\n"
      "        with T.block(\"D\"):\n"
      "            b_2 = T.axis.S(4, i0_2)\n"
      "            D[b_2] = T.sqrt(C[b_2])\n"));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
  /* The fused outer loop itself (it drives both reduce iters). */
  s = mlc_sched_new(f, 1);
  loops_of(s, "C", &l);
  OK(mlc_sched_rfactor(s, l[1], 1, &rf, err));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
}

/* fuse the reduce loops, optionally split the fused loop, rfactor a part. */
static void fuse_split_rfactor(const char *text, int n_spatial, int64_t inner, bool preserve,
                               int part, int axis, bool decompose, bool llvm) {
  mlc_prim_func *f = parse(text);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, fused, parts[2], rf, init;
  int n = loops_of(s, "B", &l);
  OK(mlc_sched_fuse(s, n - n_spatial, l + n_spatial, true, &fused, err));
  mlc_rv target = fused;
  if (inner != 0) {
    mlc_operand fs[2] = {MLC_OP_NONE, MLC_OP_INT(inner)};
    if (inner < 0) fs[0] = MLC_OP_INT(-inner), fs[1] = MLC_OP_NONE;
    OK(mlc_sched_split(s, fused, 2, fs, preserve, parts, err));
    target = parts[part];
  }
  OK(mlc_sched_rfactor(s, target, axis, &rf, err));
  SAME_AS_(f, s, llvm);
  if (decompose) {
    mlc_rv *rl;
    mlc_error e = {{0}};
    const mlc_block *rb = mlc_sched_rv_block(s, rf);
    if (rb && rb->init && mlc_sched_get_loops(s, rf, &rl, &e) > 0)
      OK(mlc_sched_decompose_reduction(s, rf, rl[0], &init, err));
    OK(mlc_sched_decompose_reduction(s, block_of(s, "B"), l[0], &init, err));
    SAME_AS_(f, s, llvm);
  }
  mlc_sched_free(s);
}

static void test_rfactor_fused_variants(void) {
  /* Two reduce loops fused, the fused loop factored whole. */
  fuse_split_rfactor(SUM2, 2, 0, true, 0, 0, true, true);
  fuse_split_rfactor(SUM2, 2, 0, true, 0, 2, false, false);
  /* Fused then split: the outer or the inner part, even and uneven (24 =
   * 6 * 4; 5 leaves a predicate, refused below) splits. */
  for (int part = 0; part < 2; part++)
    for (int axis = -3; axis <= 2; axis++)
      fuse_split_rfactor(SUM2, 2, 4, true, part, axis, axis == 0, axis == 1);
  /* Split by 1 (inner or outer unit loop), with and without unit iters:
   * without, the unit loop binds nothing and is factored as TVM does. */
  for (int pu = 0; pu < 2; pu++) {
    fuse_split_rfactor(SUM2, 2, 1, pu, 1, 0, true, pu == 0);
    fuse_split_rfactor(SUM2, 2, -1, pu, 0, 1, true, pu == 0);
    fuse_split_rfactor(SUM2, 2, 1, pu, 0, -1, false, false);
    fuse_split_rfactor(SUM2, 2, -1, pu, 1, 0, false, false);
  }
  /* Three reduce loops fused (floordiv of floordiv), max reducer. */
  fuse_split_rfactor(MAX3, 1, 0, true, 0, 0, true, true);
  fuse_split_rfactor(MAX3, 1, 6, true, 0, 1, true, false);
  fuse_split_rfactor(MAX3, 1, 6, true, 1, 0, true, true);
  fuse_split_rfactor(MAX3, 1, 1, false, 1, 0, true, false);
  /* Two of three reduce loops fused, the third left: rfactor the fused. */
  mlc_prim_func *f = parse(MAX3);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, fused, rf;
  loops_of(s, "B", &l);
  OK(mlc_sched_fuse(s, 2, l + 2, true, &fused, err));
  OK(mlc_sched_rfactor(s, fused, 0, &rf, err));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
  /* The tuner's add-rfactor shape on a task: spatial loops, reduce loops
   * fused and split by a sampled tile, either part. */
  const mlc_task_def *d = mlc_task_find("reduce_sum");
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error e = {{0}};
  CHECK_MSG(d && mlc_task_parse_shape(d, "4,24", sh, &e), "%s", e.msg);
  if (!d) return;
  f = mlc_task_build(TA, d, sh);
  for (int part = 0; part < 2; part++) {
    s = mlc_sched_new(f, 7);
    mlc_rv root, *kids, v[2], parts[2];
    OK(mlc_sched_get_block(s, "root", NULL, &root, err));
    int nk = mlc_sched_get_child_blocks(s, root, &kids, &e);
    for (int i = 0; i < nk; i++) {
      const mlc_block *b = mlc_sched_rv_block(s, kids[i]);
      if (!b || !b->init) continue;
      int n = mlc_sched_get_loops(s, kids[i], &l, &e);
      OK(mlc_sched_sample_perfect_tile(s, l[n - 1], 2, 8, v, err));
      OK(mlc_sched_split(s, l[n - 1], 2, (mlc_operand[]){MLC_OP_RV(v[0]), MLC_OP_RV(v[1])}, true, parts, err));
      OK(mlc_sched_rfactor(s, parts[part], 0, &rf, err));
    }
    SAME_AS_LLVM(f, s);
    mlc_sched_free(s);
  }
}

/* With the block's annotations on both new blocks (TVM's
 * square_sum_with_annotation_rfactor). */
static void test_rfactor_annotations(void) {
  mlc_prim_func *f = parse(SQ_ANN);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, rf, fused;
  loops_of(s, "C", &l);
  OK(mlc_sched_rfactor(s, l[2], 1, &rf, err));
  CHECK(equals_text(mlc_sched_func(s),
      HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 6, 8), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
      "    C_rf = T.alloc_buffer((4, 8))\n"
      "    for i0, i1, i2 in T.grid(4, 6, 8):\n"
      "        with T.block(\"C_rf\"):\n"
      "            vi2, b, i = T.axis.remap(\"SSR\", [i2, i0, i1])\n"
      "            T.block_attr({\"test_annotation\": 1, \"note\": \"keep\"})\n"
      "            with T.init():\n"
      "                C_rf[b, vi2] = T.float32(0)\n"
      "            C_rf[b, vi2] = C_rf[b, vi2] + A[b, i, vi2] * A[b, i, vi2]\n"
      "    for i0_1, i2_1 in T.grid(4, 8):\n"
      "        with T.block(\"C\"):\n"
      "            vi2_1, b_1 = T.axis.remap(\"RS\", [i2_1, i0_1])\n"
      "            T.block_attr({\"test_annotation\": 1, \"note\": \"keep\"})\n"
      "            with T.init():\n"
      "                C[b_1] = T.float32(0)\n"
      "            C[b_1] = C[b_1] + C_rf[b_1, vi2_1]\n"));
  SAME_AS(f, s);
  mlc_sched_free(s);
  /* After fuse, and with annotations set by the schedule. */
  s = mlc_sched_new(f, 1);
  mlc_rv c = block_of(s, "C");
  loops_of(s, "C", &l);
  OK(mlc_sched_annotate(s, c, "extra", MLC_OP_INT(5), err));
  OK(mlc_sched_fuse(s, 2, l + 1, true, &fused, err));
  OK(mlc_sched_rfactor(s, fused, 0, &rf, err));
  const mlc_block *rb = mlc_sched_rv_block(s, rf), *wb = mlc_sched_rv_block(s, c);
  CHECK(rb && rb->n_anns == 3 && has_int_ann(rb, "extra", 5) && has_int_ann(rb, "test_annotation", 1));
  CHECK(wb && wb->n_anns == 3 && has_int_ann(wb, "extra", 5) && has_str_ann(wb, "note", "keep"));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
}

static void test_rfactor_fused_refusals(void) {
  /* TVM's rowsum_not_quasi_affine: vk = (k * k) // 2 is refused (the init
   * runs at k = 0 and again at k = 1, which the rf block cannot follow). */
  mlc_prim_func *f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 128), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i, k in T.grid(4, 16):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.S(4, i)\n"
      "            vk = T.axis.R(128, T.floordiv(k * k, 2))\n"
      "            with T.init():\n"
      "                B[vi] = 0.0\n"
      "            B[vi] = B[vi] + A[vi, vk]\n");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, out, fused, parts[2];
  loops_of(s, "B", &l);
  REFUSED(s, mlc_sched_rfactor(s, l[1], 0, &out, err),
          "rfactor: l2 (loop k): block \"B\" binds iter vk to k * k // 2, which is not quasi-affine");
  mlc_sched_free(s);
  /* A reversed reduce loop runs the init last: refused. */
  f = reduction("T.float32(0)", "B[vi] + A[vi, vk]");
  s = mlc_sched_new(parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((6, 24), \"float32\"), B: T.Buffer((6,), \"float32\")):\n"
      "    for i, k in T.grid(6, 24):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.S(6, i)\n"
      "            vk = T.axis.R(24, 23 - k)\n"
      "            with T.init():\n"
      "                B[vi] = T.float32(0)\n"
      "            B[vi] = B[vi] + A[vi, vk]\n"), 1);
  loops_of(s, "B", &l);
  REFUSED(s, mlc_sched_rfactor(s, l[1], 0, &out, err),
          "rfactor: l2 (loop k): reduce iter vk of block \"B\" (bound to 23 - k) is not at its minimum when "
          "every loop is at its first iteration");
  mlc_sched_free(s);
  /* A loop no iter uses: factored only with extent 1; under a reduce loop
   * it must have extent 1 (TVM's kUnboundLoopUnderReductionLoop). */
  const char *unbound = HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 8), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    for i, u, k, w in T.grid(4, 2, 8, %d):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(4, i)\n"
      "            vk = T.axis.reduce(8, k)\n"
      "            with T.init():\n"
      "                B[vi] = T.float32(0)\n"
      "            B[vi] = B[vi] + A[vi, vk]\n";
  char text[1024];
  snprintf(text, sizeof text, unbound, 2);
  s = mlc_sched_new(parse(text), 1);
  loops_of(s, "B", &l);
  REFUSED(s, mlc_sched_rfactor(s, l[1], 0, &out, err),
          "rfactor: l2 (loop u) drives no reduce iter of block \"B\" and its extent is not 1");
  REFUSED(s, mlc_sched_rfactor(s, l[2], 0, &out, err),
          "rfactor: l3 (loop k): loop w drives no iter of block \"B\" and lies under reduce loop k");
  mlc_sched_free(s);
  snprintf(text, sizeof text, unbound, 1);
  f = parse(text);
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &l);
  OK(mlc_sched_rfactor(s, l[3], 0, &out, err)); /* w: unit, unbound */
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &l);
  OK(mlc_sched_rfactor(s, l[2], 0, &out, err)); /* k, with u above it */
  SAME_AS(f, s);
  mlc_sched_free(s);
  /* Fused then split unevenly: the predicate on the reduce loops stays
   * refused; a spatial loop fused with a reduce loop is refused by fuse. */
  s = mlc_sched_new(parse(SUM2), 1);
  int n = loops_of(s, "B", &l);
  OK(mlc_sched_fuse(s, 2, l + 2, true, &fused, err));
  OK(mlc_sched_split(s, fused, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(5)}, true, parts, err));
  REFUSED(s, mlc_sched_rfactor(s, parts[1], 0, &out, err),
          "the predicate of block \"B\" depends on reduce loop k1_k2_fused_0");
  REFUSED(s, mlc_sched_rfactor(s, l[0], 0, &out, err),
          "rfactor: l1 (loop x) drives spatial iter vx of block \"B\"; only a reduce loop can be factored");
  (void)n;
  mlc_sched_free(s);
}

/* ---- blockize ---------------------------------------------------------------------------- */

static void test_blockize_numeric(void) {
  mlc_prim_func *f = parse(MM);
  for (int at = 0; at < 6; at++)
    for (int pu = 0; pu < 2; pu++) {
      mlc_sched *s = mlc_sched_new(f, 1);
      mlc_rv *l, ii[2], jj[2], kk[2], ob, init;
      loops_of(s, "C", &l);
      split2(s, l[0], 4, ii), split2(s, l[1], 5, jj), split2(s, l[2], 4, kk);
      mlc_rv order[6] = {ii[0], jj[0], kk[0], ii[1], jj[1], kk[1]};
      OK(mlc_sched_reorder(s, 6, order, err));
      OK(mlc_sched_blockize(s, order[at], pu, &ob, err));
      SAME_AS(f, s);
      /* Nested: blockize the outer block again, then decompose it. */
      mlc_error e = {{0}};
      mlc_rv *ol, ob2;
      int n = mlc_sched_get_loops(s, ob, &ol, &e);
      if (n >= 2) {
        OK(mlc_sched_blockize(s, ol[1], pu, &ob2, err));
        SAME_AS(f, s);
        OK(mlc_sched_decompose_reduction(s, ob2, ol[0], &init, err));
        SAME_AS_(f, s, pu);
      } else if (n == 1) {
        OK(mlc_sched_decompose_reduction(s, ob, ol[0], &init, err));
        SAME_AS_(f, s, pu);
      }
      mlc_sched_free(s);
    }
  /* Predicates wholly inside and wholly outside the blockized loop. */
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, ii[2], jj[2], ob;
  loops_of(s, "C", &l);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_INT(5), MLC_OP_NONE}, true, ii, err));
  split2(s, l[1], 3, jj);
  REFUSED(s, mlc_sched_blockize(s, ii[1], true, &ob, err),
          "the predicate i_0 * 3 + i_1 < 12 of block \"C\" depends on loops both inside and outside");
  REFUSED(s, mlc_sched_blockize(s, jj[0], true, &ob, err),
          "blockize: l6 (loop j_0): the predicate j_0 * 3 + j_1 < 10 of block \"C\" depends only on "
          "loops inside the loop");
  OK(mlc_sched_blockize(s, l[2], true, &ob, err));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
  s = mlc_sched_new(f, 1);
  loops_of(s, "C", &l);
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(3)}, true, jj, err));
  OK(mlc_sched_blockize(s, l[2], false, &ob, err));
  SAME_AS(f, s);
  mlc_sched_free(s);
}

static void test_blockize_refusals(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv root, *kids, ob, ii[2], *ly, fu, ff[2];
  mlc_error e = {{0}};
  OK(mlc_sched_get_block(s, "root", NULL, &root, err));
  CHECK(mlc_sched_get_child_blocks(s, root, &kids, &e) == 2);
  loops_of(s, "Y", &ly);
  /* i_0 * 2 + i_1 with i_1 outside i_0: the inner part is not dense. */
  OK(mlc_sched_split(s, ly[0], 2, (mlc_operand[]){MLC_OP_INT(4), MLC_OP_INT(2)}, true, ii, err));
  OK(mlc_sched_reorder(s, 2, (mlc_rv[]){ii[1], ii[0]}, err));
  REFUSED(s, mlc_sched_blockize(s, ii[0], true, &ob, err),
          "blockize: l7 (loop i_0): the binding i_0 * 2 + i_1 of iter vi of block \"Y\" cannot be "
          "divided into an outer part and a dense inner part");
  REFUSED(s, mlc_sched_blockize(s, ly[0], true, &ob, err), "no longer in the function");
  REFUSED(s, mlc_sched_blockize(s, kids[0], true, &ob, err), "blockize: b1 (block Y) is a block, expected a loop");
  /* fused j, k split again: floordiv/floormod across the split point. */
  mlc_sched *t = mlc_sched_new(parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((6, 10), \"float32\"), B: T.Buffer((6, 10), \"float32\")):\n"
      "    for i in range(6):\n"
      "        for j in range(10):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                B[vi, vj] = A[vi, vj] + T.float32(1)\n"
      "        for j in range(10):\n"
      "            with T.block(\"C\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                B[vi, vj] = B[vi, vj] * T.float32(2)\n"), 1);
  mlc_rv *lt;
  loops_of(t, "B", &lt);
  REFUSED(t, mlc_sched_blockize(t, lt[0], true, &ob, err),
          "blockize: l1 (loop i) must hold a single block under a chain of loops (found a seq statement)");
  mlc_sched_free(t);
  t = mlc_sched_new(parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((6, 10), \"float32\"), B: T.Buffer((6, 10), \"float32\")):\n"
      "    for i, j in T.grid(6, 10):\n"
      "        with T.block(\"B\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            B[vi, vj] = A[vi, vj] + T.float32(1)\n"), 1);
  loops_of(t, "B", &lt);
  OK(mlc_sched_fuse(t, 2, (mlc_rv[]){lt[0], lt[1]}, true, &fu, err));
  OK(mlc_sched_split(t, fu, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, ff, err));
  REFUSED(t, mlc_sched_blockize(t, ff[1], true, &ob, err),
          "of iter vi of block \"B\" cannot be divided into an outer part and a dense inner part");
  /* The whole fused nest blockizes (every binding wholly inner). */
  const mlc_prim_func *orig = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((6, 10), \"float32\"), B: T.Buffer((6, 10), \"float32\")):\n"
      "    for i, j in T.grid(6, 10):\n"
      "        with T.block(\"B\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            B[vi, vj] = A[vi, vj] + T.float32(1)\n");
  OK(mlc_sched_blockize(t, ff[0], false, &ob, err));
  SAME_AS_LLVM(orig, t);
  mlc_sched_free(t);
  mlc_sched_free(s);
}

/* An uneven split inside a blockized block adds a T.where to the inner
 * block. The program stays correct (checked), but the verifier relaxes
 * the inner block's accesses over its loops without the predicate and
 * finds them outside the outer block's regions (stated over the inner
 * iter domains, as TVM does). Reported; printed here as a note until
 * ir/ clamps nested bindings to their iter domains. */
static void test_split_inside_blockized(void) {
  mlc_prim_func *f = parse(MM);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv *l, kk[2], ob;
  loops_of(s, "C", &l);
  OK(mlc_sched_blockize(s, l[2], true, &ob, err));
  OK(mlc_sched_split(s, l[2], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(3)}, true, kk, err));
  char why[512] = "";
  CHECK_MSG(interp_matches(f, mlc_sched_func(s), why, sizeof why), "%s", why);
  CHECK_MSG(llvm_matches(f, mlc_sched_func(s), why, sizeof why), "%s", why);
  mlc_error e = {{0}};
  /* The inner block's T.where keeps it inside A's extent: region analysis
   * clamps predicated bindings to their domains. */
  CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &e), "%s", e.msg);
  mlc_sched_free(s);
}

/* ---- traces ------------------------------------------------------------------------------- */

static void test_trace_roundtrip(void) {
  mlc_prim_func *f = parse(MM);
  mlc_sched *s = mlc_sched_new(f, 5);
  mlc_rv *l, v[2], jj[2], kk[2], ob, rf, init;
  mlc_error e = {{0}};
  loops_of(s, "C", &l);
  OK(mlc_sched_sample_perfect_tile(s, l[2], 2, 8, v, err));
  OK(mlc_sched_split(s, l[2], 2, (mlc_operand[]){MLC_OP_RV(v[0]), MLC_OP_RV(v[1])}, true, kk, err));
  OK(mlc_sched_rfactor(s, kk[1], 0, &rf, err));
  split2(s, l[1], 5, jj);
  OK(mlc_sched_blockize(s, jj[1], true, &ob, err));
  mlc_rv *rl;
  CHECK(mlc_sched_get_loops(s, rf, &rl, &e) == 4);
  OK(mlc_sched_decompose_reduction(s, rf, rl[1], &init, err));
  SAME_AS_LLVM(f, s);
  mlc_str o = {0};
  mlc_trace_print(&o, mlc_sched_trace(s));
  const char *p = mlc_str_cstr(&o);
  CHECK_MSG(strstr(p, "b8 = sch.rfactor(loop=l7, factor_axis=0)"), "%s", p);
  CHECK_MSG(strstr(p, "b11 = sch.blockize(loop=l10, preserve_unit_iters=True)"), "%s", p);
  CHECK_MSG(strstr(p, "b16 = sch.decompose_reduction(block=b8, loop=l13)"), "%s", p);
  mlc_str_free(&o);
  char *js = trace_json(s);
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
  CHECK_MSG(t, "%s", e.msg);
  mlc_sched *r = mlc_sched_new(f, 99);
  OK(t && mlc_sched_replay(r, t, NULL, NULL, err));
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)));
  char *js2 = trace_json(r);
  CHECK_STREQ(js, js2);
  /* Replay with a new tile: another valid program, same results. */
  mlc_sched *q = mlc_sched_new(f, 3);
  mlc_replay_opts opts = {.new_decisions = true};
  OK(mlc_sched_replay(q, t, &opts, NULL, err));
  SAME_AS(f, q);
  mlc_free(js), mlc_free(js2);
  mlc_sched_free(q);
  mlc_sched_free(r);
  mlc_arena_free(a);
  mlc_sched_free(s);
}

/* ---- random sequences of these primitives --------------------------------------------- */

static void collect_names(const mlc_stmt *st, const char **names, int *n) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: collect_names(st->loop.body, names, n); return;
  case MLC_STMT_BLOCK_REALIZE:
    if (strcmp(st->realize.block->name, "root") != 0 && *n < 32) names[(*n)++] = st->realize.block->name;
    collect_names(st->realize.block->init, names, n);
    collect_names(st->realize.block->body, names, n);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) collect_names(st->seq.stmts[i], names, n);
    return;
  case MLC_STMT_IF:
    collect_names(st->if_.then_s, names, n);
    collect_names(st->if_.else_s, names, n);
    return;
  case MLC_STMT_ALLOCATE: collect_names(st->alloc.body, names, n); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
}

/* A random block of the current function and one of its loops. */
static bool pick(mlc_sched *s, mlc_pcg32 *r, mlc_rv *b, mlc_rv *loop, int *n_loops, mlc_rv **loops) {
  const char *names[32];
  int nn = 0;
  mlc_error e = {{0}};
  collect_names(mlc_sched_func(s)->body, names, &nn);
  if (!nn || !mlc_sched_get_block(s, names[mlc_pcg32_bounded(r, (uint32_t)nn)], NULL, b, &e)) return false;
  *n_loops = mlc_sched_get_loops(s, *b, loops, &e);
  if (*n_loops <= 0) return false;
  *loop = (*loops)[mlc_pcg32_bounded(r, (uint32_t)*n_loops)];
  return true;
}

typedef struct fuzz_stats {
  int seqs, applied[3], refused[3], other, fused;
} fuzz_stats;

/* Tiling first (splits, reorders), then decompose/rfactor/blockize and
 * loop kinds in any order; refusals must leave the state unchanged, the
 * result must verify, match the unscheduled program and replay. */
static void fuzz_func(const char *task, mlc_prim_func *f, int n_seq, fuzz_stats *st) {
  mlc_error e = {{0}};
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, mlc_hash_str(task, 0), 9);
  for (int q = 0; q < n_seq && !test_case_failed_; q++) {
    mlc_sched *s = mlc_sched_new(f, (uint64_t)q);
    /* No split after the first blockize could run: an uneven one inside
     * it trips the verifier (see test_split_inside_blockized). */
    int tiling = (int)mlc_pcg32_bounded(&r, 4), steps = tiling + 1 + (int)mlc_pcg32_bounded(&r, 4);
    for (int t = 0; t < steps; t++) {
      mlc_rv b, x, *l, out, o[3];
      int n;
      if (!pick(s, &r, &b, &x, &n, &l)) continue;
      /* Tiling: split, reorder, or fuse of the picked loop with the next
       * (floordiv/floormod bindings for rfactor and decompose). */
      uint32_t what = t < tiling ? (uint32_t)"017"[mlc_pcg32_bounded(&r, 3)] - '0' : 2 + mlc_pcg32_bounded(&r, 5);
      snapshot before = snap(s);
      bool ok = false;
      int kind = -1;
      switch (what) {
      case 0: ok = mlc_sched_split(s, x, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(2 + mlc_pcg32_bounded(&r, 3))},
                                   mlc_pcg32_bounded(&r, 2), o, &e);
        break;
      case 1:
        if (n >= 2) ok = mlc_sched_reorder(s, 2, (mlc_rv[]){l[n - 1], l[0]}, &e);
        break;
      case 2: kind = 0, ok = mlc_sched_decompose_reduction(s, b, x, &out, &e); break;
      case 3: kind = 1, ok = mlc_sched_rfactor(s, x, (int)mlc_pcg32_bounded(&r, 5) - 2, &out, &e); break;
      case 4: kind = 2, ok = mlc_sched_blockize(s, x, mlc_pcg32_bounded(&r, 2), &out, &e); break;
      case 5: ok = mlc_sched_unroll(s, x, &e); break;
      case 6: ok = mlc_sched_parallel(s, x, &e); break;
      case 7:
        for (int j = 0; j + 1 < n; j++)
          if (l[j] == x) ok = mlc_sched_fuse(s, 2, l + j, mlc_pcg32_bounded(&r, 2), o, &e);
        st->fused += ok;
        break;
      }
      if (kind >= 0) ok ? st->applied[kind]++ : st->refused[kind]++;
      else st->other += ok;
      if (!ok) check_refused_(__FILE__, __LINE__, s, before, false, &e, "");
      else mlc_free(before.ir), mlc_free(before.json), mlc_sched_free(before.copy);
    }
    st->seqs++;
    char why[512] = "";
    bool good = mlc_verify_func(mlc_sched_func(s), &e);
    if (!good) snprintf(why, sizeof why, "verify: %.400s", e.msg);
    good = good && interp_matches(f, mlc_sched_func(s), why, sizeof why);
    if (good && q % 8 == 0) { /* through JSON, replayed */
      char *js = trace_json(s);
      mlc_arena *a = mlc_arena_new();
      mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
      mlc_sched *r2 = mlc_sched_new(f, 5);
      good = t && mlc_sched_replay(r2, t, NULL, NULL, &e) &&
             mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r2));
      if (!good) snprintf(why, sizeof why, "replay differs: %.400s", e.msg);
      mlc_sched_free(r2), mlc_arena_free(a), mlc_free(js);
    }
    CHECK_MSG(good, "%s seq %d: %s", task, q, why);
    if (!good) {
      mlc_str o = {0};
      mlc_trace_print(&o, mlc_sched_trace(s));
      char *ir = print_func(mlc_sched_func(s));
      fprintf(stderr, "%s%s", mlc_str_cstr(&o), ir);
      mlc_str_free(&o), mlc_free(ir);
    }
    mlc_sched_free(s);
  }
}

static void fuzz_task(const char *task, const char *shape, int n_seq, fuzz_stats *st) {
  mlc_error e = {{0}};
  const mlc_task_def *d = mlc_task_find(task);
  int64_t sh[MLC_TASK_MAX_DIMS];
  CHECK_MSG(d && mlc_task_parse_shape(d, shape, sh, &e), "%s %s", task, e.msg);
  if (d) fuzz_func(task, mlc_task_build(TA, d, sh), n_seq, st);
}

static void test_random_sequences(void) {
  fuzz_stats st = {0};
  fuzz_func("sum2", parse(SUM2), 200, &st);
  fuzz_func("max3", parse(MAX3), 200, &st);
  fuzz_task("matmul", "6,8,10", 300, &st);
  fuzz_task("reduce_sum", "6,24", 300, &st);
  fuzz_task("softmax", "4,12", 200, &st);
  fuzz_task("dense_bias_relu", "4,6,8", 200, &st);
  fuzz_task("conv2d_nchw", "1,2,5,5,2,3,3", 100, &st);
  printf("# random sequences: %d; decompose_reduction %d applied / %d refused, rfactor %d / %d, "
         "blockize %d / %d, other primitives %d (fuse %d)\n",
         st.seqs, st.applied[0], st.refused[0], st.applied[1], st.refused[1], st.applied[2],
         st.refused[2], st.other, st.fused);
  CHECK(st.applied[0] > 50 && st.applied[1] > 50 && st.applied[2] > 50);
}

/* vectorize of a reduce loop: its lanes update one element, combined as a
 * tree (codegen), for a block whose reduction is a reducer's (a sum, a max
 * split by 8 so the lanes are an inner part, its init then decomposed
 * out); refused for any other update, and for parallel. */
static void test_vectorize_reduction(void) {
  mlc_rv *lb, parts[2];
  mlc_prim_func *f = reduction("T.float32(0)", "B[vi] + A[vi, vk]");
  mlc_sched *s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  OK(mlc_sched_vectorize(s, lb[1], err));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
  f = reduction("T.float32(-3.4028234663852886e+38)", "T.max(B[vi], A[vi, vk])");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  mlc_rv i = lb[0];
  OK(mlc_sched_split(s, lb[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, parts, err));
  OK(mlc_sched_vectorize(s, parts[1], err));
  OK(mlc_sched_parallel(s, i, err));
  OK(mlc_sched_decompose_reduction(s, block_of(s, "B"), parts[0], &(mlc_rv){0}, err));
  SAME_AS_LLVM(f, s);
  mlc_sched_free(s);
  f = reduction("T.float32(0)", "B[vi] * T.float32(0.5) + A[vi, vk]");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_vectorize(s, lb[1], err),
          "vectorize: l2 (loop k): block \"B\" binds its reduce iter vk to this loop, and its update does not "
          "read the element it writes (a vectorized reduction needs a sum, product, max or min)");
  mlc_sched_free(s);
  f = reduction("T.float32(0)", "B[vi] + A[vi, vk]");
  s = mlc_sched_new(f, 1);
  loops_of(s, "B", &lb);
  REFUSED(s, mlc_sched_parallel(s, lb[1], err),
          "parallel: l2 (loop k): block \"B\" binds its reduce iter vk to this loop; only spatial iters");
  mlc_sched_free(s);
}

int main(void) {
  TA = mlc_arena_new();
  mlc_target_host(&host);
  run_golden();
  RUN(test_blockize_is_notes_form);
  RUN(test_notes_stochastic_trace);
  RUN(test_notes_stochastic_full);
  RUN(test_decompose_numeric);
  RUN(test_decompose_refusals);
  RUN(test_decompose_annotations);
  RUN(test_rfactor_numeric);
  RUN(test_rfactor_refusals);
  RUN(test_rfactor_fused_example);
  RUN(test_rfactor_fused_variants);
  RUN(test_rfactor_annotations);
  RUN(test_rfactor_fused_refusals);
  RUN(test_vectorize_reduction);
  RUN(test_blockize_numeric);
  RUN(test_blockize_refusals);
  RUN(test_split_inside_blockized);
  RUN(test_trace_roundtrip);
  RUN(test_random_sequences);
  printf("# numeric checks: %d against the interpreter, %d through LLVM\n", n_interp, n_llvm);
  mlc_jit_shutdown();
  mlc_arena_free(TA);
  return test_summary();
}
