/* Cache stages and buffer storage: cache_read, cache_write, set_scope,
 * storage_align.
 *
 * Golden cases are data: tests/sched_golden/cache_*.py holds the input
 * function and, in a "# trace: " comment, the trace (canonical JSON) to
 * replay; the .expected file next to it holds the TVMScript written by
 * hand from TensorIR's semantics. Each case must replay, equal the
 * expected function structurally, verify, print and read back, compute
 * what the unscheduled function computes on random inputs (interpreter,
 * and compiled with the LLVM backend where no loop is thread-bound), and
 * its trace must serialize back to the same JSON.
 *
 * Refusals: each must fail with a specific message naming the primitive
 * and leave the printed IR, the trace and the handles as they were. */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static mlc_arena *TA; /* parsed inputs and expectations */

#define GOLDEN_DIR "tests/sched_golden"
#define HDR "# from tvm.script import tir as T\n"

static mlc_prim_func *parse_named(const char *file, const char *text) {
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(TA, file, text, &err);
  if (!m) {
    fprintf(stderr, "parse error: %s\n", err.msg);
    return NULL;
  }
  return m->funcs[0];
}

static mlc_prim_func *parse(const char *text) { return parse_named("test.py", text); }

static char *trace_py(const mlc_sched *s) {
  mlc_str o = {0};
  mlc_trace_print(&o, mlc_sched_trace(s));
  return mlc_str_take(&o);
}

static mlc_sched *sched_of(const char *text) {
  mlc_prim_func *f = parse(text);
  MLC_ASSERT(f);
  return mlc_sched_new(f, 1);
}

/* ---- refusals ------------------------------------------------------------- */

typedef struct snapshot {
  char *ir, *json;
  int n_rvs;
  uint32_t rng_next; /* the next draw, from a copy of the state */
} snapshot;

static uint32_t next_draw(const mlc_sched *s) {
  mlc_sched *c = mlc_sched_copy(s);
  mlc_rv v;
  mlc_error e;
  bool ok = mlc_sched_sample_categorical(c, 4, (int64_t[]){1, 2, 3, 4},
                                         (double[]){1, 1, 1, 1}, &v, &e);
  uint32_t r = ok ? (uint32_t)mlc_sched_rv_value(c, v) : 0;
  mlc_sched_free(c);
  return r;
}

static snapshot snap(const mlc_sched *s) {
  return (snapshot){print_func(mlc_sched_func(s)), trace_json(s), mlc_sched_n_rvs(s), next_draw(s)};
}

static void free_snap(snapshot *x) {
  mlc_free(x->ir);
  mlc_free(x->json);
}

/* ok must be false, the message must name the primitive and contain
 * `want`, and the state must be unchanged. */
static void check_refused_(const char *file, int line, mlc_sched *s, snapshot before, bool ok,
                           const mlc_error *err, const char *prim, const char *want) {
  snapshot after = snap(s);
  if (ok) test_fail_(file, line, "accepted, expected refusal with \"%s\"", want);
  else if (strncmp(err->msg, prim, strlen(prim)) != 0 || !strstr(err->msg, want))
    test_fail_(file, line, "message \"%s\" lacks \"%s: ...%s\"", err->msg, prim, want);
  if (strcmp(before.ir, after.ir) != 0) test_fail_(file, line, "IR changed by a refusal");
  if (strcmp(before.json, after.json) != 0) test_fail_(file, line, "trace changed by a refusal");
  if (before.n_rvs != after.n_rvs) test_fail_(file, line, "handles changed by a refusal");
  if (before.rng_next != after.rng_next) test_fail_(file, line, "generator changed by a refusal");
  free_snap(&before);
  free_snap(&after);
}
#define REFUSED(s, call, prim, want)                                                   \
  do {                                                                                 \
    mlc_error e_ = {{0}};                                                              \
    snapshot b_ = snap(s);                                                             \
    mlc_error *err = &e_;                                                              \
    bool ok_ = (call);                                                                 \
    check_refused_(__FILE__, __LINE__, s, b_, ok_, err, prim, want);                   \
  } while (0)

#define OK(call)                                        \
  do {                                                  \
    mlc_error e_ = {{0}};                               \
    mlc_error *err = &e_;                               \
    bool ok_ = (call);                                  \
    CHECK_MSG(ok_, "%s failed: %s", #call, e_.msg);     \
  } while (0)

/* ---- numeric checks ---------------------------------------------------------- */

static void fill_args(const mlc_prim_func *f, uint64_t seed, mlc_array *out) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 1);
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(x, &rng);
    out[i] = *x;
    mlc_free(x); /* keeps x->data, now owned by out[i] */
  }
}

static void free_args(int n, mlc_array *xs) {
  for (int i = 0; i < n; i++) mlc_free(xs[i].data);
  mlc_free(xs);
}

static bool compare_args(int n, const mlc_array *got, const mlc_array *want, char *why, size_t wn) {
  for (int i = 0; i < n; i++) {
    double m;
    if (!mlc_array_allclose(&got[i], &want[i], 1e-4, 1e-4, &m)) {
      snprintf(why, wn, "param %d differs by %g", i, m);
      return false;
    }
  }
  return true;
}

/* f and g on the same random inputs (every parameter filled: outputs are
 * overwritten or start from an init) give the same parameters. */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, uint64_t seed, char *why,
                         size_t wn) {
  int n = f->n_params;
  mlc_array *x = mlc_xmalloc(sizeof(mlc_array) * (size_t)(n + 1));
  mlc_array *y = mlc_xmalloc(sizeof(mlc_array) * (size_t)(n + 1));
  fill_args(f, seed, x);
  fill_args(g, seed, y);
  mlc_error e = {{0}};
  bool ok = mlc_interp_run(f, x, &e) && mlc_interp_run(g, y, &e);
  if (!ok) snprintf(why, wn, "interp: %.200s", e.msg);
  ok = ok && compare_args(n, y, x, why, wn);
  free_args(n, x);
  free_args(n, y);
  return ok;
}

static bool has_thread_loop(const mlc_stmt *st) {
  if (!st) return false;
  switch (st->kind) {
  case MLC_STMT_FOR:
    return st->loop.kind == MLC_FOR_THREAD_BINDING || has_thread_loop(st->loop.body);
  case MLC_STMT_BLOCK_REALIZE:
    return has_thread_loop(st->realize.block->init) || has_thread_loop(st->realize.block->body);
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++)
      if (has_thread_loop(st->seq.stmts[i])) return true;
    return false;
  case MLC_STMT_IF: return has_thread_loop(st->if_.then_s) || has_thread_loop(st->if_.else_s);
  case MLC_STMT_ALLOCATE: return has_thread_loop(st->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return false;
  }
  return false;
}

static int n_compiled, n_lower_failures;

/* g compiled for the host gives what the unscheduled f interprets to.
 * Shared and local buffers are plain memory on the CPU. */
static bool compiled_matches(const mlc_prim_func *f, const mlc_prim_func *g, uint64_t seed, char *why,
                             size_t wn) {
  mlc_target host;
  mlc_target_host(&host);
  mlc_error e = {{0}};
  mlc_object obj;
  if (!mlc_target_build(&host, 1, &g, NULL, NULL, &obj, &e)) {
    snprintf(why, wn, "LLVM build: %.300s", e.msg);
    n_lower_failures++;
    return false;
  }
  mlc_jit_lib *lib = mlc_jit_load(&obj, &e);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, g->name, &e) : NULL;
  bool ok = fn != NULL;
  if (!ok) snprintf(why, wn, "load: %.300s", e.msg);
  int n = f->n_params;
  mlc_array *x = mlc_xmalloc(sizeof(mlc_array) * (size_t)(n + 1));
  mlc_array *y = mlc_xmalloc(sizeof(mlc_array) * (size_t)(n + 1));
  fill_args(f, seed, x);
  fill_args(g, seed, y);
  if (ok && !mlc_interp_run(f, x, &e)) ok = (snprintf(why, wn, "interp: %.300s", e.msg), false);
  if (ok && mlc_kernel_call(fn, n, y) != 0) ok = (snprintf(why, wn, "kernel failed"), false);
  ok = ok && compare_args(n, y, x, why, wn);
  free_args(n, x);
  free_args(n, y);
  if (lib) mlc_jit_unload(lib);
  mlc_object_free(&obj);
  if (ok) n_compiled++;
  return ok;
}

/* The scheduled function verifies, prints and reads back to the same
 * function, and computes what f computes. */
static void check_applied_(const char *file, int line, const mlc_prim_func *f, const mlc_sched *s,
                           bool compile) {
  const mlc_prim_func *g = mlc_sched_func(s);
  mlc_error e = {{0}};
  char why[512] = "";
  if (!mlc_verify_func(g, &e)) test_fail_(file, line, "verify: %s", e.msg);
  char *text = print_func(g);
  mlc_prim_func *back = parse(text);
  if (!back || !mlc_func_struct_equal(back, g)) test_fail_(file, line, "print/parse round trip differs");
  mlc_free(text);
  if (!same_results(f, g, 11, why, sizeof why)) test_fail_(file, line, "interpreter: %s", why);
  if (compile && !has_thread_loop(g->body) && !compiled_matches(f, g, 12, why, sizeof why))
    test_fail_(file, line, "compiled: %s", why);
}
#define CHECK_APPLIED(f, s) check_applied_(__FILE__, __LINE__, f, s, true)

static bool equals_text(const mlc_prim_func *g, const char *expected) {
  mlc_prim_func *want = parse(expected);
  if (!want) return false;
  bool eq = mlc_func_struct_equal(g, want);
  if (!eq) {
    char *got = print_func(g), *w = print_func(want);
    fprintf(stderr, "---- got:\n%s---- expected:\n%s", got, w);
    mlc_free(got);
    mlc_free(w);
  }
  return eq;
}

/* The printed function contains `want` (a buffer's declaration, say). */
static void check_has_(const char *file, int line, const mlc_sched *s, const char *want) {
  char *text = print_func(mlc_sched_func(s));
  if (!strstr(text, want)) test_fail_(file, line, "printed IR lacks \"%s\":\n%s", want, text);
  mlc_free(text);
}
#define CHECK_HAS(s, want) check_has_(__FILE__, __LINE__, s, want)

/* ---- golden files ------------------------------------------------------------- */

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The JSON after "# trace: " on its own line, NULL if none. */
static char *trace_line(const char *text) {
  const char *p = strstr(text, "# trace: ");
  if (!p) return NULL;
  p += strlen("# trace: ");
  size_t n = strcspn(p, "\n");
  char *out = mlc_xmalloc(n + 1);
  memcpy(out, p, n);
  out[n] = 0;
  return out;
}

static void golden_case(const char *name) {
  char path[512], exp_path[512], why[512] = "";
  snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, name);
  snprintf(exp_path, sizeof exp_path, "%s/%.*s.expected", GOLDEN_DIR, (int)strlen(name) - 3, name);
  test_case_failed_ = 0;
  test_first_failure_[0] = 0;
  char *text = test_read_file(path, NULL), *expected = test_read_file(exp_path, NULL);
  char *json = text ? trace_line(text) : NULL;
  mlc_prim_func *f = text ? parse_named(path, text) : NULL;
  CHECK_MSG(text && expected && json && f, "%s: missing input, expected file or trace line", name);
  if (text && expected && json && f) {
    mlc_error e = {{0}};
    mlc_arena *a = mlc_arena_new();
    mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), &e);
    mlc_sched *s = mlc_sched_new(f, 3);
    bool ok = t && mlc_sched_replay(s, t, NULL, NULL, &e);
    CHECK_MSG(ok, "replay: %s", e.msg);
    if (ok) {
      CHECK_MSG(equals_text(mlc_sched_func(s), expected), "differs from %s", exp_path);
      CHECK_APPLIED(f, s);
      char *js = trace_json(s);
      CHECK_STREQ(js, json);
      mlc_free(js);
    }
    (void)why;
    mlc_sched_free(s);
    mlc_arena_free(a);
  }
  char case_name[300];
  snprintf(case_name, sizeof case_name, "golden %s", name);
  test_report(case_name, !test_case_failed_, test_first_failure_);
  mlc_free(text);
  mlc_free(expected);
  mlc_free(json);
}

static void run_golden_files(void) {
  DIR *d = opendir(GOLDEN_DIR);
  if (!d) {
    test_report("golden files", 0, "cannot open " GOLDEN_DIR);
    return;
  }
  char *names[256];
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 256) {
    size_t len = strlen(de->d_name);
    if (strncmp(de->d_name, "cache_", 6) == 0 && len > 3 && strcmp(de->d_name + len - 3, ".py") == 0)
      names[n++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_names);
  for (int i = 0; i < n; i++) {
    golden_case(names[i]);
    free(names[i]);
  }
  test_report("golden files found", n >= 8, "fewer than 8 cache_*.py goldens");
}

/* ---- inputs for the API tests ------------------------------------------------------ */

static const char *MM_RELU =
    HDR
    "@T.prim_func\n"
    "def mm_relu(A: T.Buffer((8, 6), \"float32\"), B: T.Buffer((6, 10), \"float32\"),\n"
    "            C: T.Buffer((8, 10), \"float32\")):\n"
    "    Y = T.alloc_buffer((8, 10))\n"
    "    for i, j, k in T.grid(8, 10, 6):\n"
    "        with T.block(\"Y\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(Y[vi, vj])\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(8, 10):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(Y[vi, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

/* Two writers of B; an in-place update of A; a partial writer of D. */
static const char *ODD =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((8,), \"float32\"), D: T.Buffer((8,), \"float32\"),\n"
    "         E: T.Buffer((8,), \"float32\")):\n"
    "    B = T.alloc_buffer((8,))\n"
    "    for i in range(4):\n"
    "        with T.block(\"B0\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            T.reads(A[vi])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[vi]\n"
    "    for i in range(4):\n"
    "        with T.block(\"B1\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            T.reads(A[vi + 4])\n"
    "            T.writes(B[vi + 4])\n"
    "            B[vi + 4] = A[vi + 4] * T.float32(2)\n"
    "    for i in range(8):\n"
    "        with T.block(\"inc\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            T.reads(A[vi], B[vi])\n"
    "            T.writes(A[vi])\n"
    "            A[vi] = A[vi] + B[vi]\n"
    "    for i in range(4):\n"
    "        with T.block(\"half\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            T.reads(A[vi * 2])\n"
    "            T.writes(D[vi * 2])\n"
    "            D[vi * 2] = A[vi * 2]\n"
    "    for i in range(8):\n"
    "        with T.block(\"use\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            T.reads(D[vi])\n"
    "            T.writes(E[vi])\n"
    "            E[vi] = D[vi] + T.float32(1)\n";

static mlc_rv block_of(mlc_sched *s, const char *name) {
  mlc_rv b = -1;
  mlc_error e = {{0}};
  CHECK_MSG(mlc_sched_get_block(s, name, NULL, &b, &e), "%s", e.msg);
  return b;
}

/* ---- API behaviour ------------------------------------------------------------------- */

/* Handles stay valid and the new block works with other primitives. */
static void test_handles_and_chaining(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C"), *l, *al, yl, yr, sp[2];
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, c, &l, &e) == 2);
  OK(mlc_sched_cache_read(s, c, 0, "local", 0, NULL, &yr, err));
  OK(mlc_sched_cache_write(s, y, 0, "shared", 0, NULL, &yl, err));
  CHECK(mlc_sched_rv_alive(s, l[0]) && mlc_sched_rv_alive(s, l[1]));
  CHECK_STREQ(mlc_sched_rv_block(s, yr)->name, "Y_local");
  CHECK_STREQ(mlc_sched_rv_block(s, yl)->name, "Y_shared");
  /* The stage's loops split, the consumer's loops reorder, then replay. */
  CHECK(mlc_sched_get_loops(s, yr, &al, &e) == 2);
  OK(mlc_sched_split(s, al[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, sp, err));
  OK(mlc_sched_reorder(s, 2, (mlc_rv[]){l[1], l[0]}, err));
  OK(mlc_sched_set_scope(s, yr, 0, "shared", err));
  OK(mlc_sched_storage_align(s, yr, 0, 1, 8, 2, err));
  CHECK_APPLIED(f, s);
  /* Y -> Y_shared -> Y_local chain: block order Y, write-back, read copy, C. */
  mlc_rv root, *kids;
  OK(mlc_sched_get_block(s, "root", NULL, &root, err));
  CHECK(mlc_sched_get_child_blocks(s, root, &kids, &e) == 4);
  CHECK_STREQ(mlc_sched_rv_block(s, kids[1])->name, "Y_shared");
  CHECK_STREQ(mlc_sched_rv_block(s, kids[2])->name, "Y_local");
  const mlc_block *rb = mlc_sched_rv_block(s, kids[2]);
  CHECK_STREQ(rb->writes[0].buf->scope, "shared");
  CHECK_STREQ(rb->writes[0].buf->name, "Y_local_shared");
  /* Through JSON and replay to the same IR. */
  char *js = trace_json(s);
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
  CHECK_MSG(t, "%s", e.msg);
  mlc_sched *r = mlc_sched_new(f, 9);
  CHECK_MSG(t && mlc_sched_replay(r, t, NULL, NULL, &e), "replay: %s", e.msg);
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)));
  char *js2 = trace_json(r);
  CHECK_STREQ(js, js2);
  mlc_free(js);
  mlc_free(js2);
  mlc_sched_free(r);
  mlc_arena_free(a);
  /* A copy keeps the new handles. */
  mlc_sched *cp = mlc_sched_copy(s);
  CHECK_STREQ(mlc_sched_rv_block(cp, yr)->name, "Y_local");
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(cp)));
  mlc_sched_free(cp);
  mlc_sched_free(s);
}

/* The trace prints in the notes' Python-like form. */
static void test_trace_print(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C"), o1, o2;
  OK(mlc_sched_cache_read(s, c, 0, "shared", 0, NULL, &o1, err));
  OK(mlc_sched_cache_write(s, y, 0, "local", 0, NULL, &o2, err));
  OK(mlc_sched_storage_align(s, o1, 0, -1, 32, 8, err));
  OK(mlc_sched_set_scope(s, o1, 0, "local", err));
  char *tr = trace_py(s);
  CHECK_STREQ(tr,
              "# from tvm import tir\n"
              "def apply_trace(sch: tir.Schedule) -> None:\n"
              "  b0 = sch.get_block(name=\"Y\", func_name=\"mm_relu\")\n"
              "  b1 = sch.get_block(name=\"C\", func_name=\"mm_relu\")\n"
              "  b2 = sch.cache_read(block=b1, read_buffer_index=0, storage_scope=\"shared\")\n"
              "  b3 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope=\"local\")\n"
              "  sch.storage_align(block=b2, buffer_index=0, axis=-1, factor=32, offset=8)\n"
              "  sch.set_scope(block=b2, buffer_index=0, storage_scope=\"local\")\n");
  mlc_free(tr);
  char *js = trace_json(s);
  CHECK_MSG(strstr(js, "[\"CacheRead\",[\"b1\"],{\"read_buffer_index\":0,\"storage_scope\":\"shared\"},[\"b2\"]]"), "%s", js);
  CHECK_MSG(strstr(js, "[\"StorageAlign\",[\"b2\"],{\"buffer_index\":0,\"axis\":-1,\"factor\":32,\"offset\":8},[]]"), "%s", js);
  CHECK_MSG(strstr(js, "[\"SetScope\",[\"b2\"],{\"buffer_index\":0,\"storage_scope\":\"local\"},[]]"), "%s", js);
  mlc_free(js);
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

/* A tagged scope names the buffer with underscores; a second cache of the
 * same buffer and scope gets a fresh buffer name. */
static void test_scope_names(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C"), a1, a2, w;
  OK(mlc_sched_cache_read(s, y, 0, "global.A_reg", 0, NULL, &a1, err));
  CHECK_STREQ(mlc_sched_rv_block(s, a1)->name, "A_global.A_reg");
  CHECK_STREQ(mlc_sched_rv_block(s, a1)->writes[0].buf->name, "A_global_A_reg");
  CHECK_STREQ(mlc_sched_rv_block(s, a1)->writes[0].buf->scope, "global.A_reg");
  /* Y now reads A_global_A_reg; caching that again is a cache of the cache. */
  OK(mlc_sched_cache_read(s, y, 0, "global", 0, NULL, &a2, err));
  CHECK_STREQ(mlc_sched_rv_block(s, a2)->writes[0].buf->name, "A_global_A_reg_global");
  /* C now writes C_local, so a second cache_write caches C_local. */
  OK(mlc_sched_cache_write(s, c, 0, "local", 0, NULL, &w, err));
  mlc_rv w2;
  OK(mlc_sched_cache_write(s, c, 0, "local", 0, NULL, &w2, err));
  CHECK_STREQ(mlc_sched_rv_block(s, w2)->name, "C_local_local");
  CHECK_STREQ(mlc_sched_rv_block(s, w2)->writes[0].buf->name, "C_local");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);

  /* Two caches of A in one scope, one per consumer: a second buffer and
   * block name (TVM would repeat the block name; block names are unique
   * here). */
  f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((6,), \"float32\"), B: T.Buffer((6,), \"float32\"),\n"
      "         C: T.Buffer((6,), \"float32\")):\n"
      "    for i in range(6):\n"
      "        with T.block(\"C1\"):\n"
      "            vi = T.axis.spatial(6, i)\n"
      "            B[vi] = A[vi] * T.float32(2)\n"
      "    for i in range(6):\n"
      "        with T.block(\"C2\"):\n"
      "            vi = T.axis.spatial(6, i)\n"
      "            C[vi] = A[5 - vi] + T.float32(1)\n");
  s = mlc_sched_new(f, 1);
  mlc_rv c1 = block_of(s, "C1"), c2 = block_of(s, "C2"), s1, s2, dup;
  OK(mlc_sched_cache_read(s, c1, 0, "shared", 1, &c1, &s1, err));
  OK(mlc_sched_cache_read(s, c2, 0, "shared", 1, &c2, &s2, err));
  CHECK_STREQ(mlc_sched_rv_block(s, s1)->writes[0].buf->name, "A_shared");
  CHECK_STREQ(mlc_sched_rv_block(s, s2)->writes[0].buf->name, "A_shared_1");
  CHECK_STREQ(mlc_sched_rv_block(s, s2)->name, "A_shared_1");
  OK(mlc_sched_get_block(s, "A_shared_1", NULL, &dup, err));
  mlc_str py = {0};
  mlc_trace_print(&py, mlc_sched_trace(s));
  CHECK_MSG(strstr(mlc_str_cstr(&py), "sch.cache_read(block=b0, read_buffer_index=0, "
                                      "storage_scope=\"shared\", consumer_blocks=[b0])"),
            "%s", mlc_str_cstr(&py));
  mlc_str_free(&py);
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

/* The same scope again: set_scope accepts and changes nothing. */
static void test_set_scope_same(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv y = block_of(s, "Y");
  char *before = print_func(mlc_sched_func(s));
  OK(mlc_sched_set_scope(s, y, 0, "global", err));
  char *after = print_func(mlc_sched_func(s));
  CHECK_STREQ(before, after);
  CHECK(mlc_sched_trace(s)->insts.len == 2);
  CHECK_APPLIED(f, s);
  mlc_free(before);
  mlc_free(after);
  mlc_sched_free(s);
}

/* A blockized block writes a tile per outer iter: cache_write copies the
 * tiles back; cache_read of its input serves the outer block. */
static void test_blockized(void) {
  mlc_prim_func *f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 6), \"float32\"), B: T.Buffer((6, 8), \"float32\"),\n"
      "         C: T.Buffer((8, 8), \"float32\")):\n"
      "    for i, j, k in T.grid(8, 8, 6):\n"
      "        with T.block(\"C\"):\n"
      "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
      "            with T.init():\n"
      "                C[vi, vj] = T.float32(0)\n"
      "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv c = block_of(s, "C"), *l, i2[2], j2[2], outer, w, rd;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, c, &l, &e) == 3);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, i2, err));
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, j2, err));
  OK(mlc_sched_reorder(s, 4, (mlc_rv[]){i2[0], j2[0], i2[1], j2[1]}, err));
  OK(mlc_sched_blockize(s, i2[1], false, &outer, err));
  const mlc_block *ob = mlc_sched_rv_block(s, outer);
  CHECK(ob && ob->n_writes == 1);
  OK(mlc_sched_cache_write(s, outer, 0, "local", 0, NULL, &w, err));
  OK(mlc_sched_cache_read(s, outer, 0, "shared", 0, NULL, &rd, err));
  CHECK_APPLIED(f, s);
  /* The inner block's scope is the outer block: its cache lives there. */
  mlc_rv rd2;
  OK(mlc_sched_cache_read(s, c, 1, "local", 0, NULL, &rd2, err));
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

static int read_index(mlc_sched *s, mlc_rv b, const char *buf) {
  const mlc_block *blk = mlc_sched_rv_block(s, b);
  for (int i = 0; i < blk->n_reads; i++)
    if (strcmp(blk->reads[i].buf->name, buf) == 0) return i;
  return -1;
}

/* A blockized matmul: the inner block's scope is the outer block, whose
 * loops are outside it, so caches placed in it are compacted to the tile
 * (TensorIR's cache stage in its scope block): A_shared (4, 6) holds the
 * outer block's rows of A, B_local (6, 4) its columns of B. A blockized
 * elementwise block's cache_write: B_local (4, 4), written back at the end
 * of the outer block. */
static void test_compact_blockized(void) {
  mlc_prim_func *f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 6), \"float32\"), B: T.Buffer((6, 8), \"float32\"),\n"
      "         C: T.Buffer((8, 8), \"float32\")):\n"
      "    for i, j, k in T.grid(8, 8, 6):\n"
      "        with T.block(\"C\"):\n"
      "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
      "            with T.init():\n"
      "                C[vi, vj] = T.float32(0)\n"
      "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv c = block_of(s, "C"), *l, i2[2], j2[2], outer, o1, o2;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, c, &l, &e) == 3);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, i2, err));
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, j2, err));
  OK(mlc_sched_reorder(s, 4, (mlc_rv[]){i2[0], j2[0], i2[1], j2[1]}, err));
  OK(mlc_sched_blockize(s, i2[1], false, &outer, err));
  OK(mlc_sched_cache_read(s, c, read_index(s, c, "A"), "shared", 0, NULL, &o1, err));
  OK(mlc_sched_cache_read(s, c, read_index(s, c, "B"), "local", 0, NULL, &o2, err));
  CHECK_HAS(s, "A_shared = T.alloc_buffer((4, 6), scope=\"shared\")");
  CHECK_HAS(s, "B_local = T.alloc_buffer((6, 4), scope=\"local\")");
  CHECK_HAS(s, "A_shared[v0, v1] = A[vi_o * 4 + v0, v1]");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);

  f = parse(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\")):\n"
      "    for i, j in T.grid(8, 8):\n"
      "        with T.block(\"B\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            B[vi, vj] = A[vi, vj] * T.float32(2)\n");
  s = mlc_sched_new(f, 1);
  mlc_rv b = block_of(s, "B"), *kids;
  CHECK(mlc_sched_get_loops(s, b, &l, &e) == 2);
  OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, i2, err));
  OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, j2, err));
  OK(mlc_sched_reorder(s, 4, (mlc_rv[]){i2[0], j2[0], i2[1], j2[1]}, err));
  OK(mlc_sched_blockize(s, i2[1], false, &outer, err));
  OK(mlc_sched_cache_write(s, b, 0, "local", 0, NULL, &o1, err));
  CHECK_HAS(s, "B_local = T.alloc_buffer((4, 4), scope=\"local\")");
  CHECK(mlc_sched_get_child_blocks(s, outer, &kids, &e) == 2);
  CHECK_STREQ(mlc_sched_rv_block(s, kids[1])->name, "B_local");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

/* The scale: a 128 x 128 stage read 16 x 16 at a time. Under a
 * blockized tile the cache is (16, 16) in the schedule; placed under the
 * tile loops with compute_at it keeps the buffer's shape in the schedule
 * (as TensorIR's cache_read does) and lowering compacts it to the 256
 * elements read under the loops (TensorIR's CompactBufferAllocation). */
static void test_compact_tile_128(void) {
  static const char *ew = HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\")):\n"
      "    for i, j in T.grid(128, 128):\n"
      "        with T.block(\"B\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            B[vi, vj] = A[vi, vj] * T.float32(2)\n";
  mlc_prim_func *f = parse(ew);
  for (int placed = 0; placed < 2; placed++) {
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_rv b = block_of(s, "B"), *l, i2[2], j2[2], outer, o;
    mlc_error e = {{0}};
    CHECK(mlc_sched_get_loops(s, b, &l, &e) == 2);
    OK(mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(16)}, true, i2, err));
    OK(mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(16)}, true, j2, err));
    OK(mlc_sched_reorder(s, 4, (mlc_rv[]){i2[0], j2[0], i2[1], j2[1]}, err));
    if (!placed) {
      OK(mlc_sched_blockize(s, i2[1], false, &outer, err));
      OK(mlc_sched_cache_read(s, b, 0, "shared", 0, NULL, &o, err));
      CHECK_HAS(s, "A_shared = T.alloc_buffer((16, 16), scope=\"shared\")");
    } else {
      OK(mlc_sched_cache_read(s, b, 0, "shared", 0, NULL, &o, err));
      OK(mlc_sched_compute_at(s, o, j2[0], false, -1, err));
      CHECK_HAS(s, "for ax0, ax1 in T.grid(16, 16):");
      mlc_arena *a = mlc_arena_new();
      mlc_prim_func *low = mlc_target_lower(a, mlc_sched_func(s), &e);
      mlc_str out = {0};
      if (low) mlc_print_func(&out, low);
      CHECK_MSG(low && strstr(mlc_str_cstr(&out), "A_shared = T.decl_buffer((256,)"),
                "A_shared not compacted to 16 x 16:\n%s", low ? mlc_str_cstr(&out) : e.msg);
      mlc_str_free(&out);
      mlc_arena_free(a);
    }
    CHECK_APPLIED(f, s);
    mlc_sched_free(s);
  }
}

/* At the root the cache holds the region the writer writes when that is
 * less than the buffer: A[2:6] here, so A_local is (4,) and C reads
 * A_local[vi - 2]. */
static void test_compact_root_region(void) {
  mlc_prim_func *f = parse(HDR
      "@T.prim_func\n"
      "def main(X: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
      "    A = T.alloc_buffer((8,))\n"
      "    for i in range(4):\n"
      "        with T.block(\"A\"):\n"
      "            vi = T.axis.spatial(8, i + 2)\n"
      "            T.reads(X[vi])\n"
      "            T.writes(A[vi])\n"
      "            A[vi] = X[vi] * T.float32(2)\n"
      "    for i in range(4):\n"
      "        with T.block(\"C\"):\n"
      "            vi = T.axis.spatial(8, i + 2)\n"
      "            T.reads(A[vi])\n"
      "            T.writes(C[vi])\n"
      "            C[vi] = A[vi] + T.float32(1)\n");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv c = block_of(s, "C"), a = block_of(s, "A"), o;
  OK(mlc_sched_cache_read(s, c, 0, "local", 0, NULL, &o, err));
  CHECK_HAS(s, "A_local = T.alloc_buffer((4,), scope=\"local\")");
  CHECK_HAS(s, "A_local[v0] = A[2 + v0]");
  CHECK_HAS(s, "C[vi] = A_local[vi - 2] + T.float32(1)");
  CHECK_APPLIED(f, s);
  /* cache_write of the writer: its cache is compacted the same way. */
  OK(mlc_sched_cache_write(s, a, 0, "shared", 0, NULL, &o, err));
  CHECK_HAS(s, "A_shared = T.alloc_buffer((4,), scope=\"shared\")");
  CHECK_HAS(s, "A_shared[vi - 2] = X[vi] * T.float32(2)");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

static const char *SCOPE_1D_HEAD =
    HDR
    "@T.prim_func\n"
    "def main(X: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
    "    for i0 in range(2):\n"
    "        with T.block(\"scope\"):\n"
    "            i = T.axis.spatial(2, i0)\n"
    "            T.reads(X[i * 8:i * 8 + 8])\n"
    "            T.writes(B[i * 8:i * 8 + 8])\n";

/* cache_write of a block under a block scope: the write-back copies what
 * the loops under the scope write, which must be every element of the
 * region (here through two split loops, strides 4 and 1), else it would
 * copy elements never written (every other one). */
static void test_cache_write_under_scope(void) {
  char text[2048];
  snprintf(text, sizeof text, "%s%s", SCOPE_1D_HEAD,
           "            for x0, x1 in T.grid(4, 2):\n"
           "                with T.block(\"B\"):\n"
           "                    vi = T.axis.spatial(16, i * 8 + x1 * 4 + x0)\n"
           "                    T.reads(X[vi])\n"
           "                    T.writes(B[vi])\n"
           "                    B[vi] = X[vi] * T.float32(2)\n");
  mlc_prim_func *f = parse(text);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b = block_of(s, "B"), o;
  OK(mlc_sched_cache_write(s, b, 0, "local", 0, NULL, &o, err));
  CHECK_HAS(s, "B_local = T.alloc_buffer((8,), scope=\"local\")");
  CHECK_HAS(s, "B[i * 8 + v0] = B_local[v0]");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);

  snprintf(text, sizeof text, "%s%s", SCOPE_1D_HEAD,
           "            for x in range(4):\n"
           "                with T.block(\"B\"):\n"
           "                    vi = T.axis.spatial(16, i * 8 + x * 2)\n"
           "                    T.reads(X[vi])\n"
           "                    T.writes(B[vi])\n"
           "                    B[vi] = X[vi] * T.float32(2)\n");
  s = sched_of(text);
  b = block_of(s, "B");
  REFUSED(s, mlc_sched_cache_write(s, b, 0, "local", 0, NULL, &o, err), "cache_write",
          "does not write every element of the region of B");
  mlc_sched_free(s);

  /* A diagonal: the box B[i*4:+4, i*4:+4] holds 16 elements, 4 written. */
  s = sched_of(HDR
      "@T.prim_func\n"
      "def main(X: T.Buffer((8,), \"float32\"), B: T.Buffer((8, 8), \"float32\")):\n"
      "    for i0 in range(2):\n"
      "        with T.block(\"scope\"):\n"
      "            i = T.axis.spatial(2, i0)\n"
      "            T.reads(X[i * 4:i * 4 + 4])\n"
      "            T.writes(B[i * 4:i * 4 + 4, i * 4:i * 4 + 4])\n"
      "            for x in range(4):\n"
      "                with T.block(\"B\"):\n"
      "                    vi = T.axis.spatial(8, i * 4 + x)\n"
      "                    T.reads(X[vi])\n"
      "                    T.writes(B[vi, vi])\n"
      "                    B[vi, vi] = X[vi]\n");
  b = block_of(s, "B");
  REFUSED(s, mlc_sched_cache_write(s, b, 0, "local", 0, NULL, &o, err), "cache_write",
          "would copy elements it never writes");
  mlc_sched_free(s);
}

/* cache_read with several consumers: the copy goes before the first, the
 * others read it once the copy's loop has run (a loop nest later in the
 * same loop i; the root, transposed). A consumer that reads what no copy
 * holds, or that runs before the writer, is refused. */
static void test_cache_read_consumers(void) {
  mlc_prim_func *f = parse(HDR
      "@T.prim_func\n"
      "def main(X: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\"),\n"
      "         C: T.Buffer((16,), \"float32\")):\n"
      "    A = T.alloc_buffer((16,))\n"
      "    for i in range(4):\n"
      "        for j in range(4):\n"
      "            with T.block(\"A\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(X[vi])\n"
      "                T.writes(A[vi])\n"
      "                A[vi] = X[vi] * T.float32(2)\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(A[vi])\n"
      "                T.writes(B[vi])\n"
      "                B[vi] = A[vi] + T.float32(1)\n"
      "        for j in range(4):\n"
      "            with T.block(\"C\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                vo = T.axis.spatial(4, i)\n"
      "                T.reads(A[vi], A[vo * 4 + 3])\n"
      "                T.writes(C[vi])\n"
      "                C[vi] = A[vi] + A[vo * 4 + 3]\n");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b = block_of(s, "B"), o;
  OK(mlc_sched_cache_read(s, b, 0, "global", 0, NULL, &o, err));
  CHECK_HAS(s, "C[vi] = A_global[vi] + A_global[vo * 4 + 3]");
  CHECK_HAS(s, "B[vi] = A_global[vi] + T.float32(1)");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);

  f = parse(HDR
      "@T.prim_func\n"
      "def main(X: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 4), \"float32\"),\n"
      "         C: T.Buffer((4, 4), \"float32\")):\n"
      "    A = T.alloc_buffer((4, 4))\n"
      "    for i in range(4):\n"
      "        for j in range(4):\n"
      "            with T.block(\"A\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                T.reads(X[vi, vj])\n"
      "                T.writes(A[vi, vj])\n"
      "                A[vi, vj] = X[vi, vj] + T.float32(1)\n"
      "        for j in range(4):\n"
      "            with T.block(\"B\"):\n"
      "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "                T.reads(A[vi, vj])\n"
      "                T.writes(B[vi, vj])\n"
      "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
      "    for i, j in T.grid(4, 4):\n"
      "        with T.block(\"C\"):\n"
      "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
      "            T.reads(A[vj, vi])\n"
      "            T.writes(C[vi, vj])\n"
      "            C[vi, vj] = A[vj, vi]\n");
  s = mlc_sched_new(f, 1);
  b = block_of(s, "B");
  OK(mlc_sched_cache_read(s, b, 0, "shared", 0, NULL, &o, err));
  CHECK_HAS(s, "A_shared = T.alloc_buffer((4, 4), scope=\"shared\")");
  CHECK_HAS(s, "C[vi, vj] = A_shared[vj, vi]");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);

  /* The writer covers A[0:12]; C at the root reads A[0:16]. */
  s = sched_of(HDR
      "@T.prim_func\n"
      "def main(X: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\"),\n"
      "         C: T.Buffer((16,), \"float32\")):\n"
      "    A = T.alloc_buffer((16,))\n"
      "    for i in range(3):\n"
      "        for j in range(4):\n"
      "            with T.block(\"A\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(X[vi])\n"
      "                T.writes(A[vi])\n"
      "                A[vi] = X[vi]\n"
      "        for j in range(4):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(A[vi])\n"
      "                T.writes(B[vi])\n"
      "                B[vi] = A[vi]\n"
      "    for i in range(16):\n"
      "        with T.block(\"C\"):\n"
      "            vi = T.axis.spatial(16, i)\n"
      "            T.reads(A[vi])\n"
      "            T.writes(C[vi])\n"
      "            C[vi] = A[vi]\n");
  b = block_of(s, "B");
  REFUSED(s, mlc_sched_cache_read(s, b, 0, "global", 0, NULL, &o, err), "cache_read",
          "consumer \"C\" reads a part of A the cache would not hold");
  mlc_sched_free(s);

  /* C, in loop i before the writer, reads the previous row. */
  s = sched_of(HDR
      "@T.prim_func\n"
      "def main(X: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\"),\n"
      "         C: T.Buffer((16,), \"float32\")):\n"
      "    A = T.alloc_buffer((16,))\n"
      "    for i in range(4):\n"
      "        for j in range(4):\n"
      "            with T.block(\"C\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(A[(vi + 12) % 16])\n"
      "                T.writes(C[vi])\n"
      "                C[vi] = A[(vi + 12) % 16]\n"
      "        for j in range(4):\n"
      "            with T.block(\"A\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(X[vi])\n"
      "                T.writes(A[vi])\n"
      "                A[vi] = X[vi]\n"
      "        for j in range(4):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(16, i * 4 + j)\n"
      "                T.reads(A[vi])\n"
      "                T.writes(B[vi])\n"
      "                B[vi] = A[vi]\n");
  b = block_of(s, "B");
  REFUSED(s, mlc_sched_cache_read(s, b, 0, "global", 0, NULL, &o, err), "cache_read",
          "found no place after writer \"A\"");
  mlc_sched_free(s);
}

/* ---- refusals ------------------------------------------------------------------------ */

static void test_cache_read_refusals(void) {
  const char *P = "cache_read";
  mlc_sched *s = sched_of(ODD);
  mlc_rv o, inc = block_of(s, "inc"), half = block_of(s, "half"), use = block_of(s, "use");
  mlc_rv root = block_of(s, "root"), b0 = block_of(s, "B0"), *l;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, use, &l, &e) == 1);
  REFUSED(s, mlc_sched_cache_read(s, use, 1, "shared", 0, NULL, &o, err), P, "read_buffer_index 1 is out of range");
  REFUSED(s, mlc_sched_cache_read(s, use, -1, "shared", 0, NULL, &o, err), P, "out of range");
  REFUSED(s, mlc_sched_cache_read(s, use, 0, "texture", 0, NULL, &o, err), P, "invalid storage scope \"texture\"");
  REFUSED(s, mlc_sched_cache_read(s, use, 0, "shared.", 0, NULL, &o, err), P, "invalid storage scope");
  REFUSED(s, mlc_sched_cache_read(s, use, 0, NULL, 0, NULL, &o, err), P, "invalid storage scope");
  REFUSED(s, mlc_sched_cache_read(s, l[0], 0, "shared", 0, NULL, &o, err), P, "is a loop, expected a block");
  REFUSED(s, mlc_sched_cache_read(s, 999, 0, "shared", 0, NULL, &o, err), P, "handle 999 does not exist");
  REFUSED(s, mlc_sched_cache_read(s, root, 0, "shared", 0, NULL, &o, err), P, "out of range");
  /* inc reads A and writes it in place. */
  REFUSED(s, mlc_sched_cache_read(s, inc, 0, "shared", 0, NULL, &o, err), P, "also writes buffer A");
  /* B has two writers. */
  REFUSED(s, mlc_sched_cache_read(s, inc, 1, "shared", 0, NULL, &o, err), P, "written by 2 blocks");
  /* D: half writes only even elements, use reads all of them. */
  REFUSED(s, mlc_sched_cache_read(s, use, 0, "local", 0, NULL, &o, err), P, "reads a part of D the cache would not hold");
  /* Consumers: one that does not read the buffer, one given twice. */
  REFUSED(s, mlc_sched_cache_read(s, use, 0, "local", 1, (mlc_rv[]){b0}, &o, err), P, "does not read buffer D");
  REFUSED(s, mlc_sched_cache_read(s, use, 0, "local", 2, (mlc_rv[]){use, use}, &o, err), P, "given twice");
  /* A read by half comes after inc writes A; but inc also reads A before
   * writing it, i.e. a consumer before the writer would see the cache early. */
  REFUSED(s, mlc_sched_cache_read(s, half, 0, "local", 0, NULL, &o, err), P, "found no place after writer");
  mlc_sched_free(s);

  /* A consumer block from another scope. */
  s = sched_of(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 4), \"float32\")):\n"
      "    for i in range(4):\n"
      "        with T.block(\"outer\"):\n"
      "            vi = T.axis.spatial(4, i)\n"
      "            T.reads(A[vi, 0:4])\n"
      "            T.writes(B[vi, 0:4])\n"
      "            for j in range(4):\n"
      "                with T.block(\"inner\"):\n"
      "                    vj = T.axis.spatial(4, j)\n"
      "                    T.reads(A[vi, vj])\n"
      "                    T.writes(B[vi, vj])\n"
      "                    B[vi, vj] = A[vi, vj]\n");
  mlc_rv outer = block_of(s, "outer"), inner = block_of(s, "inner");
  REFUSED(s, mlc_sched_cache_read(s, outer, 0, "shared", 1, (mlc_rv[]){inner}, &o, err), P,
          "is not a block of the same scope");
  /* Inside the outer block the scope is "outer": the copy covers its read region. */
  char *text = print_func(mlc_sched_func(s));
  mlc_prim_func *f = parse(text);
  mlc_free(text);
  OK(mlc_sched_cache_read(s, inner, 0, "local", 0, NULL, &o, err));
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

static void test_cache_write_refusals(void) {
  const char *P = "cache_write";
  mlc_sched *s = sched_of(ODD);
  mlc_rv o, inc = block_of(s, "inc"), half = block_of(s, "half"), b0 = block_of(s, "B0"),
            use = block_of(s, "use"), *l;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, use, &l, &e) == 1);
  REFUSED(s, mlc_sched_cache_write(s, use, 1, "local", 0, NULL, &o, err), P, "write_buffer_index 1 is out of range");
  REFUSED(s, mlc_sched_cache_write(s, use, 0, "register", 0, NULL, &o, err), P, "invalid storage scope \"register\"");
  REFUSED(s, mlc_sched_cache_write(s, l[0], 0, "local", 0, NULL, &o, err), P, "is a loop, expected a block");
  /* B0 is not the only writer of B. */
  REFUSED(s, mlc_sched_cache_write(s, b0, 0, "local", 0, NULL, &o, err), P, "written by 2 blocks");
  /* inc reads A's earlier content. */
  REFUSED(s, mlc_sched_cache_write(s, inc, 0, "local", 0, NULL, &o, err), P, "reads the earlier content of A");
  /* A block whose sub-blocks read A where no earlier sub-block wrote it in
   * the same iteration: a neighbour's tile (what an earlier iteration
   * wrote), a reader before the writer, a reader under the writer's loop. */
  static const char *const reads_before[] = {
      "            for x in range(4):\n"
      "                with T.block(\"fill\"):\n"
      "                    vx = T.axis.spatial(32, vt * 4 + x)\n"
      "                    A[vx] = X[vx]\n"
      "            for x in range(4):\n"
      "                with T.block(\"use\"):\n"
      "                    vx = T.axis.spatial(32, vt * 4 + x)\n"
      "                    Y[vx] = A[T.max(vx - 1, 0)]\n",
      "            for x in range(4):\n"
      "                with T.block(\"use\"):\n"
      "                    vx = T.axis.spatial(32, vt * 4 + x)\n"
      "                    Y[vx] = A[vx]\n"
      "            for x in range(4):\n"
      "                with T.block(\"fill\"):\n"
      "                    vx = T.axis.spatial(32, vt * 4 + x)\n"
      "                    A[vx] = X[vx]\n",
      "            for x in range(4):\n"
      "                with T.block(\"fill\"):\n"
      "                    vx = T.axis.spatial(32, vt * 4 + x)\n"
      "                    A[vx] = X[vx]\n"
      "                with T.block(\"use\"):\n"
      "                    vx = T.axis.spatial(32, vt * 4 + x)\n"
      "                    Y[vx] = A[vt * 4 + 3 - x]\n",
  };
  for (int i = 0; i < MLC_COUNTOF(reads_before); i++) {
    char text[2048];
    snprintf(text, sizeof text,
             HDR "@T.prim_func\n"
             "def main(X: T.Buffer((32,), \"float32\"), Y: T.Buffer((32,), \"float32\")):\n"
             "    A = T.alloc_buffer((32,))\n"
             "    for t in range(8):\n"
             "        with T.block(\"scope\"):\n"
             "            vt = T.axis.spatial(8, t)\n"
             "%s",
             reads_before[i]);
    mlc_sched *r = sched_of(text);
    mlc_rv scope = block_of(r, "scope");
    const mlc_block *sb = mlc_sched_rv_block(r, scope);
    int wa = 0;
    while (wa < sb->n_writes - 1 && strcmp(sb->writes[wa].buf->name, "A") != 0) wa++;
    REFUSED(r, mlc_sched_cache_write(r, scope, wa, "global", 0, NULL, &o, err), P,
            "the block reads the earlier content of A");
    mlc_sched_free(r);
  }
  /* half writes every other element of D. */
  REFUSED(s, mlc_sched_cache_write(s, half, 0, "local", 0, NULL, &o, err), P, "write-back would copy elements it never writes");
  /* Consumers: not a reader, and a reader of what half does not write. */
  REFUSED(s, mlc_sched_cache_write(s, half, 0, "local", 1, (mlc_rv[]){inc}, &o, err), P, "does not read buffer D");
  mlc_sched_free(s);

  /* A consumer before the writer; a loop that does not cover the domain. */
  s = sched_of(HDR
      "@T.prim_func\n"
      "def main(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\"),\n"
      "         C: T.Buffer((8,), \"float32\")):\n"
      "    for i in range(8):\n"
      "        with T.block(\"early\"):\n"
      "            vi = T.axis.spatial(8, i)\n"
      "            T.reads(B[vi])\n"
      "            T.writes(C[vi])\n"
      "            C[vi] = B[vi]\n"
      "    for i in range(6):\n"
      "        with T.block(\"W\"):\n"
      "            vi = T.axis.spatial(8, i)\n"
      "            T.reads(A[vi])\n"
      "            T.writes(B[vi])\n"
      "            B[vi] = A[vi]\n");
  mlc_rv early = block_of(s, "early"), w = block_of(s, "W");
  REFUSED(s, mlc_sched_cache_write(s, w, 0, "local", 1, (mlc_rv[]){early}, &o, err), P, "comes before the block");
  /* W writes B[0:6] (its loop runs 6 of its domain's 8 values): TensorIR
   * accepts it, and the write-back, in the root block, copies exactly
   * those 6 elements through a cache compacted to them. */
  char *text = print_func(mlc_sched_func(s));
  mlc_prim_func *f = parse(text);
  mlc_free(text);
  OK(mlc_sched_cache_write(s, w, 0, "local", 0, NULL, &o, err));
  CHECK_HAS(s, "B_local = T.alloc_buffer((6,), scope=\"local\")");
  CHECK_APPLIED(f, s);
  mlc_sched_free(s);
}

static void test_set_scope_refusals(void) {
  const char *P = "set_scope";
  mlc_sched *s = sched_of(MM_RELU);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C"), *l;
  mlc_error e = {{0}};
  CHECK(mlc_sched_get_loops(s, c, &l, &e) == 2);
  REFUSED(s, mlc_sched_set_scope(s, y, 1, "shared", err), P, "buffer_index 1 is out of range");
  REFUSED(s, mlc_sched_set_scope(s, y, 0, "warp", err), P, "invalid storage scope \"warp\"");
  REFUSED(s, mlc_sched_set_scope(s, c, 0, "shared", err), P, "buffer C is not allocated by a block");
  REFUSED(s, mlc_sched_set_scope(s, l[1], 0, "shared", err), P, "is a loop, expected a block");
  mlc_sched_free(s);
}

static void test_storage_align_refusals(void) {
  const char *P = "storage_align";
  mlc_sched *s = sched_of(MM_RELU);
  mlc_rv y = block_of(s, "Y"), c = block_of(s, "C");
  REFUSED(s, mlc_sched_storage_align(s, y, 1, 0, 16, 0, err), P, "buffer_index 1 is out of range");
  REFUSED(s, mlc_sched_storage_align(s, y, 0, 0, 0, 0, err), P, "factor 0 must be positive");
  REFUSED(s, mlc_sched_storage_align(s, y, 0, 2, 16, 0, err), P, "axis 2 is out of range [-2, 2)");
  REFUSED(s, mlc_sched_storage_align(s, y, 0, -3, 16, 0, err), P, "axis -3 is out of range");
  REFUSED(s, mlc_sched_storage_align(s, c, 0, 0, 16, 0, err), P, "buffer C is not allocated by a block");
  /* A foreign annotation under the key. */
  OK(mlc_sched_annotate(s, y, "buffer_dim_align", MLC_OP_INT(3), err));
  REFUSED(s, mlc_sched_storage_align(s, y, 0, 0, 16, 0, err), P, "is not a list of tuples");
  mlc_sched_free(s);
}

/* ---- storage_align: TVM's structured annotation ----------------------------- */

/* MM_RELU with the block "Y" carrying an alignment parsed from TVMScript,
 * and Y's buffer given a second dimension to align. */
static const char *MM_RELU_ALIGNED =
    HDR
    "@T.prim_func\n"
    "def mm_relu(A: T.Buffer((8, 6), \"float32\"), B: T.Buffer((6, 10), \"float32\"),\n"
    "            C: T.Buffer((8, 10), \"float32\")):\n"
    "    Y = T.alloc_buffer((8, 10))\n"
    "    for i, j, k in T.grid(8, 10, 6):\n"
    "        with T.block(\"Y\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(Y[vi, vj])\n"
    "            T.block_attr({\"buffer_dim_align\": [[0, 1, 4, 0]], \"other\": 1})\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(8, 10):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(Y[vi, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

/* The annotation's tuples, flattened: n tuples into t[4 * n]. */
static int align_tuples(const mlc_sched *s, mlc_rv b, int64_t *t, int max) {
  const mlc_block *blk = mlc_sched_rv_block(s, b);
  const mlc_ann *a = mlc_ann_find(blk->n_anns, blk->anns, "buffer_dim_align");
  if (!a || a->kind != MLC_ANN_LIST || a->n > max) return -1;
  for (int i = 0; i < a->n; i++) {
    const mlc_ann *x = &a->items[i];
    if (x->kind != MLC_ANN_LIST || x->n != 4) return -1;
    for (int k = 0; k < 4; k++) {
      if (x->items[k].kind != MLC_ANN_INT) return -1;
      t[4 * i + k] = x->items[k].i;
    }
  }
  return a->n;
}

/* The state replays from its JSON trace to the same function. */
static void check_replays_(const char *file, int line, const mlc_prim_func *f, const mlc_sched *s) {
  mlc_error e = {{0}};
  char *js = trace_json(s);
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
  mlc_sched *r = mlc_sched_new(f, 5);
  if (!t || !mlc_sched_replay(r, t, NULL, NULL, &e)) test_fail_(file, line, "replay: %s", e.msg);
  else if (!mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)))
    test_fail_(file, line, "replay gives another function");
  mlc_sched_free(r);
  mlc_arena_free(a);
  mlc_free(js);
}
#define CHECK_REPLAYS(f, s) check_replays_(__FILE__, __LINE__, f, s)

/* Two calls on different axes give two tuples, as a list of int lists (the
 * axis normalized), printed as TVM prints them. */
static void test_storage_align_list(void) {
  mlc_prim_func *f = parse(MM_RELU);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv y = block_of(s, "Y");
  int64_t t[8];
  OK(mlc_sched_storage_align(s, y, 0, -1, 32, 8, err));
  OK(mlc_sched_storage_align(s, y, 0, 0, 16, 1, err));
  CHECK(align_tuples(s, y, t, 2) == 2);
  CHECK(t[0] == 0 && t[1] == 1 && t[2] == 32 && t[3] == 8);
  CHECK(t[4] == 0 && t[5] == 0 && t[6] == 16 && t[7] == 1);
  CHECK_HAS(s, "T.block_attr({\"buffer_dim_align\": [[0, 1, 32, 8], [0, 0, 16, 1]]})");
  CHECK_APPLIED(f, s);
  CHECK_REPLAYS(f, s);
  mlc_sched_free(s);
}

/* A list parsed from TVMScript is merged with: a new axis appends, the
 * same buffer and axis replaces in place, other annotations stay. */
static void test_storage_align_parsed(void) {
  mlc_prim_func *f = parse(MM_RELU_ALIGNED);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv y = block_of(s, "Y");
  int64_t t[8];
  OK(mlc_sched_storage_align(s, y, 0, 0, 16, 1, err));
  CHECK(align_tuples(s, y, t, 2) == 2);
  CHECK(t[0] == 0 && t[1] == 1 && t[2] == 4 && t[3] == 0);
  CHECK(t[4] == 0 && t[5] == 0 && t[6] == 16 && t[7] == 1);
  OK(mlc_sched_storage_align(s, y, 0, -1, 8, 2, err));
  CHECK(align_tuples(s, y, t, 2) == 2);
  CHECK(t[0] == 0 && t[1] == 1 && t[2] == 8 && t[3] == 2);
  CHECK_HAS(s, "T.block_attr({\"buffer_dim_align\": [[0, 1, 8, 2], [0, 0, 16, 1]], \"other\": 1})");
  /* The unscheduled input still holds the parsed value. */
  const mlc_ann *orig = NULL;
  mlc_sched *s0 = mlc_sched_new(f, 1);
  const mlc_block *b0 = mlc_sched_rv_block(s0, block_of(s0, "Y"));
  orig = mlc_ann_find(b0->n_anns, b0->anns, "buffer_dim_align");
  CHECK(orig && orig->kind == MLC_ANN_LIST && orig->n == 1 && orig->items[0].items[2].i == 4);
  mlc_sched_free(s0);
  CHECK_APPLIED(f, s);
  CHECK_REPLAYS(f, s);
  mlc_sched_free(s);
}

/* Values under the key that are not a list of 4-int tuples are refused,
 * the string form included. */
static void test_storage_align_bad_value(void) {
  const char *P = "storage_align";
  static const char *const bad[] = {"\"[[0, 0, 16, 1]]\"", "[[0, 0, 16]]", "[[0, 0, 16, 1.5]]",
                                    "[0, 0, 16, 1]"};
  for (int i = 0; i < MLC_COUNTOF(bad); i++) {
    const char *from = "\"buffer_dim_align\": [[0, 1, 4, 0]]";
    char *text = mlc_xmalloc(strlen(MM_RELU_ALIGNED) + 64);
    const char *at = strstr(MM_RELU_ALIGNED, from);
    MLC_ASSERT(at);
    sprintf(text, "%.*s\"buffer_dim_align\": %s%s", (int)(at - MM_RELU_ALIGNED), MM_RELU_ALIGNED,
            bad[i], at + strlen(from));
    mlc_sched *s = sched_of(text);
    mlc_rv y = block_of(s, "Y");
    REFUSED(s, mlc_sched_storage_align(s, y, 0, 0, 16, 0, err), P,
            "the block's \"buffer_dim_align\" annotation is not a list of tuples");
    mlc_sched_free(s);
    mlc_free(text);
  }
}

/* Replay refuses corrupt cache instructions with a message. */
static void test_replay_errors(void) {
  static const char *const bad[] = {
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"mm_relu\"},[\"b0\"]],"
      "[\"CacheRead\",[\"b0\"],{\"read_buffer_index\":5,\"storage_scope\":\"shared\"},[\"b1\"]]]}",
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"mm_relu\"},[\"b0\"]],"
      "[\"CacheWrite\",[\"b0\"],{\"write_buffer_index\":0,\"storage_scope\":\"shared\"},[\"b1\",\"b2\"]]]}",
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"Y\",\"func_name\":\"mm_relu\"},[\"b0\"]],"
      "[\"StorageAlign\",[\"b0\"],{\"buffer_index\":0,\"axis\":0,\"factor\":99999999999,\"offset\":0},[]]]}",
  };
  static const char *const want[] = {"read_buffer_index 5 is out of range", "expects 2 outputs",
                                     "\"factor\" is out of range"};
  mlc_prim_func *f = parse(MM_RELU);
  for (int i = 0; i < MLC_COUNTOF(bad); i++) {
    mlc_error e = {{0}};
    mlc_arena *a = mlc_arena_new();
    mlc_trace *t = mlc_trace_from_json(a, bad[i], strlen(bad[i]), &e);
    CHECK_MSG(t, "%s", e.msg);
    mlc_sched *s = mlc_sched_new(f, 1);
    bool ok = t && mlc_sched_replay(s, t, NULL, NULL, &e);
    CHECK_MSG(!ok && strstr(e.msg, want[i]), "case %d: %s", i, e.msg);
    mlc_sched_free(s);
    mlc_arena_free(a);
  }
}

/* Every block of a few built-in tasks, every read and write index:
 * cache_read and cache_write either apply (and compute the same, compiled
 * too) or refuse and leave the state unchanged. */
static void test_tasks_exhaustive(void) {
  static const struct {
    const char *task, *shape;
  } cases[] = {{"matmul", "6,5,7"},           {"conv2d_nchw", "1,2,5,5,2,3,3,1,1"},
               {"softmax", "3,7"},            {"dense_bias_relu", "4,6,5"},
               {"layernorm", "3,6"},          {"window_sum", "20"}};
  int applied = 0, refused = 0;
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    mlc_error e = {{0}};
    const mlc_task_def *d = mlc_task_find(cases[c].task);
    int64_t sh[MLC_TASK_MAX_DIMS];
    CHECK_MSG(d && mlc_task_parse_shape(d, cases[c].shape, sh, &e), "%s: %s", cases[c].task, e.msg);
    if (!d) continue;
    mlc_prim_func *f = mlc_task_build(TA, d, sh);
    mlc_sched *probe = mlc_sched_new(f, 1);
    mlc_rv root, *kids;
    OK(mlc_sched_get_block(probe, "root", NULL, &root, err));
    int nk = mlc_sched_get_child_blocks(probe, root, &kids, &e);
    for (int k = 0; k < nk; k++) {
      const mlc_block *blk = mlc_sched_rv_block(probe, kids[k]);
      for (int w = 0; w < 2; w++) {
        int n_idx = w ? blk->n_writes : blk->n_reads;
        for (int i = 0; i < n_idx; i++) {
          mlc_sched *s = mlc_sched_new(f, 1);
          mlc_rv b = block_of(s, blk->name), out;
          snapshot before = snap(s);
          bool ok = w ? mlc_sched_cache_write(s, b, i, "local", 0, NULL, &out, &e)
                      : mlc_sched_cache_read(s, b, i, "shared", 0, NULL, &out, &e);
          if (ok) {
            applied++;
            free_snap(&before);
            CHECK_APPLIED(f, s);
          } else {
            refused++;
            check_refused_(__FILE__, __LINE__, s, before, false, &e, w ? "cache_write" : "cache_read", "");
          }
          mlc_sched_free(s);
        }
      }
    }
    mlc_sched_free(probe);
  }
  printf("# tasks: %d cache stages applied and checked, %d refused\n", applied, refused);
  CHECK(applied > 10);
}

int main(void) {
  TA = mlc_arena_new();
  run_golden_files();
  RUN(test_handles_and_chaining);
  RUN(test_trace_print);
  RUN(test_scope_names);
  RUN(test_set_scope_same);
  RUN(test_blockized);
  RUN(test_compact_blockized);
  RUN(test_compact_tile_128);
  RUN(test_compact_root_region);
  RUN(test_cache_write_under_scope);
  RUN(test_cache_read_consumers);
  RUN(test_cache_read_refusals);
  RUN(test_cache_write_refusals);
  RUN(test_set_scope_refusals);
  RUN(test_storage_align_refusals);
  RUN(test_storage_align_list);
  RUN(test_storage_align_parsed);
  RUN(test_storage_align_bad_value);
  RUN(test_replay_errors);
  RUN(test_tasks_exhaustive);
  printf("# compiled with LLVM and matched: %d, lowering failures: %d\n", n_compiled, n_lower_failures);
  mlc_arena_free(TA);
  return test_summary();
}
