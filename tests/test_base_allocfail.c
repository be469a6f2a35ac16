/* Allocation failure injection through the one allocation hook (Lua's
 * memerr tests): an operation is run with the Nth allocation failing, for
 * N = 0, 1, 2, ... until it completes without reaching the failure. Each run
 * happens in a forked child, so that a crash is reported as a failed case
 * instead of ending the binary. At each N the operation must either return
 * an error saying "out of memory" with every heap block it took given back
 * (live blocks counted through the hook before and after), or, where the
 * library aborts by design (base/alloc.c lists those paths), stop in
 * mlc_panic with "out of memory" on stderr. A segfault, a sanitizer report,
 * a leak, a wrong message or an assertion fails the case. The run that
 * completes must give the same result as an unhooked one. */
#include "base/base.h"
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "ir/ir.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tests/test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the failing hook ---------------------------------------------------- */

static long countdown = -1; /* requests to let through before failing one */
static bool sticky;         /* after the first failure, fail every request */
static bool benign;         /* a failure may be absorbed (SQLite retries or does without) */
static long stride = 1;     /* sweep every stride-th N (1: every N) */
static bool fired;          /* the failure was reached */
static long live;           /* heap blocks held, counted through the hook */

static void *failing_alloc(void *ud, void *ptr, size_t nsize) {
  if (nsize == 0) {
    if (ptr) live--;
    return mlc_default_alloc(ud, ptr, 0);
  }
  if (countdown == 0) {
    fired = true;
    if (!sticky) countdown = -1; /* else the error path must not allocate */
    return NULL;
  }
  if (countdown > 0) countdown--;
  void *q = mlc_default_alloc(ud, ptr, nsize);
  if (q && !ptr) live++;
  return q;
}

/* Called by an operation once the code under test has returned, so that
 * what it does to report its result (printing, which aborts on failure by
 * design) is not under test. */
static void stop_failing(void) { countdown = -1; }

/* Around an operation's setup that is not under test (loading the model a
 * pipeline runs on): the countdown stands still, the blocks still count. */
static long pause_failing(void) {
  long n = countdown;
  countdown = -1;
  return n;
}

static void resume_failing(long n) { countdown = n; }

/* ---- running one failure point in a child ---------------------------------- */

/* An operation under test: returns true on success, false with err set.
 * It gets an arena made (and, with pad > 0, partly filled) before any
 * allocation fails, as callers of the parsers hold one already. On success
 * it writes to *result a hash of what it computed (printed IR, trace JSON,
 * output values), compared with an unhooked run. */
typedef bool (*op_fn)(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result);

typedef struct outcome {
  bool done;       /* the child got as far as writing this */
  bool fired, ok;
  long leaked;     /* live blocks after minus before */
  uint64_t result;
  char msg[sizeof(mlc_error)];
} outcome;

typedef struct tally {
  int points;      /* values of N tried */
  int errors;      /* failure points that returned an error */
  int aborts;      /* failure points that aborted by design */
  int absorbed;    /* failure points the code absorbed with the same result (benign) */
  bool completed;  /* some N completed without reaching the failure */
} tally;

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void child_run(op_fn op, const void *ctx, size_t pad, long n, outcome *out) {
  mlc_error err = {{0}};
  long before = live;
  countdown = -1;
  fired = false;
  mlc_set_allocator(failing_alloc, NULL);
  mlc_arena *a = mlc_arena_new();
  if (pad) mlc_arena_alloc(a, pad);
  countdown = n;
  uint64_t result = 0;
  bool ok = op(ctx, a, &err, &result);
  countdown = -1;
  mlc_arena_free(a);
  mlc_set_allocator(NULL, NULL);
  out->fired = fired;
  out->ok = ok;
  out->leaked = live - before;
  out->result = result;
  memcpy(out->msg, err.msg, sizeof out->msg);
  out->done = true;
}

static char *read_all(FILE *f) {
  fflush(f);
  rewind(f);
  mlc_str s = {0};
  char buf[1024];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) mlc_str_putn(&s, buf, k);
  mlc_str_putc(&s, 0);
  return mlc_str_take(&s);
}

/* A child that ran to its end: false (and the case fails) unless it
 * returned an out-of-memory error or completed as the unhooked run did. */
static bool judge_return(const char *name, long n, const outcome *o, uint64_t want, tally *t,
                         bool *finished) {
  if (o->leaked != 0)
    test_fail_(__FILE__, __LINE__, "%s n=%ld: %ld heap blocks leaked", name, n, o->leaked);
  else if (!o->fired && !o->ok)
    test_fail_(__FILE__, __LINE__, "%s n=%ld: failed without a failing allocation: %s", name, n, o->msg);
  else if (!o->fired && o->result != want)
    test_fail_(__FILE__, __LINE__, "%s n=%ld: result differs from the unhooked run", name, n);
  else if (o->fired && o->ok && !(benign && o->result == want))
    test_fail_(__FILE__, __LINE__, "%s n=%ld: a failed allocation went unnoticed", name, n);
  else if (o->fired && !o->ok && !strstr(o->msg, "out of memory"))
    test_fail_(__FILE__, __LINE__, "%s n=%ld: message lacks \"out of memory\": %s", name, n, o->msg);
  else {
    if (o->fired && o->ok) t->absorbed++;
    else if (o->fired) t->errors++;
    else *finished = t->completed = true;
    return true;
  }
  return false;
}

/* One failure point; returns false (and fails the case) on a bad outcome.
 * *finished is set when the operation completed without reaching N. */
static bool one_point(const char *name, op_fn op, const void *ctx, size_t pad, long n,
                      bool may_abort, uint64_t want, tally *t, bool *finished) {
  outcome *out = mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  MLC_ASSERT(out != MAP_FAILED);
  memset(out, 0, sizeof *out);
  FILE *errf = tmpfile();
  MLC_ASSERT(errf);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  MLC_ASSERT(pid >= 0);
  if (pid == 0) {
    dup2(fileno(errf), 2);
    child_run(op, ctx, pad, n, out);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  char *stderr_text = read_all(errf);
  fclose(errf);
  outcome o = *out;
  munmap(out, sizeof *out);
  bool good = false;
  t->points++;
  *finished = false;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && o.done) {
    good = judge_return(name, n, &o, want, t, finished);
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
             strstr(stderr_text, "out of memory allocating") && !strstr(stderr_text, "Sanitizer")) {
    if (!may_abort)
      test_fail_(__FILE__, __LINE__, "%s n=%ld: aborted where an error was expected: %.200s", name, n,
                 stderr_text);
    else {
      good = true;
      t->aborts++;
    }
  } else {
    test_fail_(__FILE__, __LINE__, "%s n=%ld: child status 0x%x: %.300s", name, n, (unsigned)status,
               stderr_text);
  }
  mlc_free(stderr_text);
  return good;
}

/* Every failure point of op, N = 0, 1, ... up to the first clean run, in
 * two modes: only the Nth allocation fails, and every allocation from the
 * Nth on fails (so an error path that allocates is caught too). The tally
 * adds up both. */
static tally sweep(const char *name, op_fn op, const void *ctx, size_t pad, bool may_abort) {
  mlc_error err = {{0}};
  uint64_t want = 0;
  mlc_arena *a = mlc_arena_new();
  bool ok = op(ctx, a, &err, &want);
  mlc_arena_free(a);
  CHECK_MSG(ok, "%s: unhooked run failed: %s", name, err.msg);
  tally all = {0};
  for (int mode = 0; mode < 2; mode++) {
    sticky = mode == 1;
    tally t = {0};
    for (long n = 0; ok && n < 100000; n += stride) {
      bool finished;
      if (!one_point(name, op, ctx, pad, n, may_abort, want, &t, &finished)) break;
      if (finished) break;
    }
    CHECK_MSG(t.completed, "%s: never completed (%d points)", name, t.points);
    printf("# %s, %s: %d failure points, %d errors returned, %d aborts by design", name,
           sticky ? "Nth on" : "Nth only", t.points - 1, t.errors, t.aborts);
    if (t.absorbed) printf(", %d absorbed", t.absorbed);
    printf("\n");
    all.points += t.points, all.errors += t.errors, all.aborts += t.aborts;
    all.absorbed += t.absorbed;
    all.completed = mode == 0 ? t.completed : all.completed && t.completed;
  }
  sticky = false;
  return all;
}

/* ---- operations -------------------------------------------------------------- */

#define HDR "# from tvm.script import tir as T\n"

static const char *MM =
    HDR
    "@T.prim_func\n"
    "def main(A: T.Buffer((64, 64), \"float32\"), B: T.Buffer((64, 64), \"float32\"),\n"
    "         C: T.Buffer((64, 64), \"float32\")):\n"
    "    for i, j, k in T.grid(64, 64, 64):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* Splits, reorder and a cache_write, with stored decisions. */
static const char *MM_TRACE =
    "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
    "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],"
    "[\"SamplePerfectTile\",[\"l1\"],{\"n\":2,\"max_innermost_factor\":16},[\"v4\",\"v5\"]],"
    "[\"Split\",[\"l1\",\"v4\",\"v5\"],{\"preserve_unit_iters\":true},[\"l6\",\"l7\"]],"
    "[\"SamplePerfectTile\",[\"l2\"],{\"n\":2,\"max_innermost_factor\":16},[\"v8\",\"v9\"]],"
    "[\"Split\",[\"l2\",\"v8\",\"v9\"],{\"preserve_unit_iters\":true},[\"l10\",\"l11\"]],"
    "[\"Reorder\",[\"l6\",\"l10\",\"l3\",\"l7\",\"l11\"],{},[]]],"
    "\"decisions\":{\"2\":[16,4],\"4\":[8,8]},\"version\":1}";

typedef struct parse_ctx {
  const char *text;
} parse_ctx;

/* Parse into an arena made before the hook fails anything: the parser
 * promises an error, not an abort, for every allocation it makes. */
static bool op_parse(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  const parse_ctx *c = ctx;
  mlc_module *m = mlc_parse_module(a, "oom.py", c->text, err);
  stop_failing();
  if (m) {
    mlc_str s = {0};
    mlc_print_module(&s, m);
    *result = fnv(mlc_str_cstr(&s));
    mlc_str_free(&s);
  }
  return m != NULL;
}

static bool op_json(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  const char *text = ctx;
  mlc_json *j = mlc_json_parse(a, text, strlen(text), err);
  stop_failing();
  *result = j ? (uint64_t)j->kind + 1 : 0;
  return j != NULL;
}

typedef struct replay_ctx {
  const mlc_prim_func *func;
  const char *trace_json;
} replay_ctx;

static bool op_replay(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  const replay_ctx *c = ctx;
  mlc_trace *t = mlc_trace_from_json(a, c->trace_json, strlen(c->trace_json), err);
  mlc_sched *s = t ? mlc_sched_try_new(c->func, 1, err) : NULL;
  bool ok = s && mlc_sched_replay(s, t, NULL, NULL, err);
  stop_failing();
  if (ok) {
    mlc_str o = {0};
    mlc_print_func(&o, mlc_sched_func(s));
    mlc_trace_to_json(&o, mlc_sched_trace(s));
    *result = fnv(mlc_str_cstr(&o));
    mlc_str_free(&o);
  }
  mlc_sched_free(s);
  return ok;
}

/* Lowering a (scheduled) function into the caller's arena. */
static bool op_lower(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  mlc_prim_func *low = mlc_target_lower(a, ctx, err);
  stop_failing();
  if (low) {
    mlc_str o = {0};
    mlc_print_func(&o, low);
    *result = fnv(mlc_str_cstr(&o));
    mlc_str_free(&o);
  }
  return low != NULL;
}

/* A model from JSON text (weights seeded, no files), and with pipeline
 * set, the whole pass pipeline over it: then only the pipeline is under
 * test, the model is loaded with the countdown paused. */
typedef struct graph_ctx {
  const char *text;
  bool pipeline;
} graph_ctx;

static bool op_graph(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  const graph_ctx *c = ctx;
  MLC_UNUSED(a);
  long n = c->pipeline ? pause_failing() : countdown;
  mlc_gmodule *m = mlc_graph_parse("oom.json", c->text, strlen(c->text), NULL, err);
  resume_failing(n);
  bool ok = m && (!c->pipeline || mlc_graph_run_pipeline(m, NULL, NULL, NULL, err));
  stop_failing();
  if (ok) {
    mlc_str o = {0};
    mlc_graph_print(&o, m, MLC_GRAPH_PRINT_TIR);
    *result = fnv(mlc_str_cstr(&o));
    mlc_str_free(&o);
  }
  mlc_graph_free(m);
  return ok;
}

/* Open a fresh database, add a workload, commit a record, read the best
 * back, close. Each run has its own file (the children run one at a
 * time, but a crashed one may leave its files). */
typedef struct db_ctx {
  const char *dir;
  const mlc_prim_func *func;
  const char *trace_json;
} db_ctx;

static void db_unlink(const char *path) {
  char p[600];
  const char *suffix[] = {"", "-wal", "-shm", "-journal"};
  for (int i = 0; i < MLC_COUNTOF(suffix); i++) {
    snprintf(p, sizeof p, "%s%s", path, suffix[i]);
    unlink(p);
  }
}

static bool op_db(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  const db_ctx *c = ctx;
  char path[512];
  snprintf(path, sizeof path, "%s/oom-%d.db", c->dir, (int)getpid());
  db_unlink(path);
  bool ok = false;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, err);
  if (db) {
    int64_t wid = mlc_db_add_workload(db, "matmul", "64,64,64", c->func, err);
    double secs[2] = {1e-3, 2e-3};
    mlc_db_record r = {.workload_id = wid, .target = "llvm", .trace = c->trace_json,
                       .n_secs = 2, .secs = secs, .round = 1};
    mlc_db_record *best = NULL;
    int n = wid >= 0 && mlc_db_commit(db, 1, &r, NULL, err)
                ? mlc_db_top_k(db, wid, "llvm", 5, a, &best, err)
                : -1;
    ok = n == 1;
    if (n >= 0 && n != 1) mlc_error_set(err, "top_k found %d records", n);
    if (ok) *result = fnv(best[0].trace) ^ (uint64_t)wid;
    mlc_db_close(db);
  }
  stop_failing();
  db_unlink(path);
  return ok;
}

typedef struct interp_ctx {
  const mlc_prim_func *func;
  mlc_array *args; /* A, B, C; C is written by every run */
} interp_ctx;

static bool op_interp(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  const interp_ctx *c = ctx;
  MLC_UNUSED(a);
  bool ok = mlc_interp_run(c->func, c->args, err);
  stop_failing();
  if (ok) {
    double sum = 0;
    for (int64_t i = 0; i < mlc_array_numel(&c->args[2]); i++)
      sum += mlc_array_get(&c->args[2], i) * (double)(i % 7 + 1);
    char text[64];
    snprintf(text, sizeof text, "%.17g", sum);
    *result = fnv(text);
  }
  return ok;
}

/* An array whose shape comes from input. */
static bool op_array(const void *ctx, mlc_arena *a, mlc_error *err, uint64_t *result) {
  MLC_UNUSED(ctx);
  MLC_UNUSED(a);
  mlc_array *x = mlc_array_try_new(MLC_FLOAT32, 2, (int64_t[]){64, 64}, "input x", err);
  stop_failing();
  *result = x ? (uint64_t)mlc_array_numel(x) : 0;
  if (x) mlc_array_free(x);
  return x != NULL;
}

/* ---- cases ------------------------------------------------------------------ */

static void test_parse_small_module(void) {
  parse_ctx c = {MM};
  tally t = sweep("parse small module", op_parse, &c, 0, false);
  CHECK(t.errors >= 1 && t.aborts == 0);
}

/* A module bigger than one arena chunk, so failures land mid-parse. */
static void test_parse_large_module(void) {
  mlc_str s = {0};
  mlc_str_puts(&s, HDR "@T.prim_func\n"
                       "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n");
  for (int b = 0; b < 300; b++)
    mlc_str_printf(&s,
                   "    for i in range(64):\n"
                   "        with T.block(\"B%d\"):\n"
                   "            vi = T.axis.spatial(64, i)\n"
                   "            B[vi] = A[vi] * T.float32(%d) + B[vi]\n",
                   b, b);
  parse_ctx c = {mlc_str_cstr(&s)};
  tally t = sweep("parse large module", op_parse, &c, 0, false);
  CHECK_MSG(t.errors >= 3 && t.aborts == 0, "%d errors, %d aborts", t.errors, t.aborts);
  mlc_str_free(&s);
}

/* A 100 KB string attribute: the arena gives it a chunk of its own, sized
 * by the input. */
static void test_parse_big_string(void) {
  mlc_str s = {0};
  mlc_str_puts(&s, HDR "@T.prim_func\n"
                       "def main(A: T.Buffer((4,), \"float32\")):\n"
                       "    T.func_attr({\"note\": \"");
  for (int i = 0; i < 100000; i++) mlc_str_putc(&s, (char)('a' + i % 26));
  mlc_str_puts(&s, "\"})\n"
                   "    for i in range(4):\n"
                   "        with T.block(\"B\"):\n"
                   "            vi = T.axis.spatial(4, i)\n"
                   "            A[vi] = A[vi] * T.float32(2)\n");
  parse_ctx c = {mlc_str_cstr(&s)};
  tally t = sweep("parse big string", op_parse, &c, 0, false);
  CHECK_MSG(t.errors >= 4 && t.aborts == 0, "%d errors, %d aborts", t.errors, t.aborts);
  mlc_str_free(&s);
}

static void test_json_trace_text(void) {
  tally t = sweep("json trace text", op_json, MM_TRACE, 0, false);
  CHECK(t.errors >= 1 && t.aborts == 0);
}

/* Under AddressSanitizer a fork costs far more (the page tables of its
 * shadow memory): there the two long sweeps (pipeline, database) try every
 * 4th N, so that the binary stays near 15 s; every N otherwise. */
#if defined(__SANITIZE_ADDRESS__)
enum { LONG_SWEEP_STRIDE = 4 };
#else
enum { LONG_SWEEP_STRIDE = 1 };
#endif

/* Chunks this small make most arena allocations reach the heap, so the
 * sweeps fail allocations all through an operation, not only at its first
 * chunk (64 KiB chunks would hide everything past it). */
enum { SMALL_CHUNK = 256 };

static mlc_module *parse_mm(mlc_arena *a) {
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(a, "mm.py", MM, &err);
  CHECK_MSG(m, "%s", err.msg);
  return m;
}

/* The trace's reading, the state's copy of the function and every
 * primitive of the replay return "out of memory"; only the schedule
 * state's arena header (fixed size) aborts by design, once per mode. */
static void test_trace_replay(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = parse_mm(a);
  if (m) {
    mlc_arena_set_chunk_size(SMALL_CHUNK);
    replay_ctx c = {m->funcs[0], MM_TRACE};
    tally t = sweep("trace replay", op_replay, &c, 0, true);
    mlc_arena_set_chunk_size(0);
    CHECK_MSG(t.errors >= 20 && t.aborts == 2, "%d errors, %d aborts", t.errors, t.aborts);
  }
  mlc_arena_free(a);
}

/* Lowering the replayed matmul: every failure is an error. */
static void test_lower(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = parse_mm(a);
  mlc_error err = {{0}};
  mlc_trace *tr = m ? mlc_trace_from_json(a, MM_TRACE, strlen(MM_TRACE), &err) : NULL;
  mlc_sched *s = tr ? mlc_sched_new(m->funcs[0], 1) : NULL;
  if (s && mlc_sched_replay(s, tr, NULL, NULL, &err)) {
    mlc_arena_set_chunk_size(SMALL_CHUNK);
    tally t = sweep("lower scheduled matmul", op_lower, mlc_sched_func(s), 0, false);
    mlc_arena_set_chunk_size(0);
    CHECK_MSG(t.errors >= 20 && t.aborts == 0, "%d errors, %d aborts", t.errors, t.aborts);
  } else {
    CHECK_MSG(false, "setup: %s", err.msg);
  }
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static const char *MLP_JSON =
    "{\"name\": \"mlp\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 16]}],"
    " \"weights\": [{\"name\": \"w0\", \"shape\": [8, 16]}, {\"name\": \"b0\", \"shape\": [8]},"
    "  {\"name\": \"w1\", \"shape\": [4, 8]}],"
    " \"nodes\": [{\"name\": \"t0\", \"op\": \"transpose\", \"inputs\": [\"w0\"]},"
    "  {\"name\": \"h0\", \"op\": \"matmul\", \"inputs\": [\"x\", \"t0\"]},"
    "  {\"name\": \"h1\", \"op\": \"add\", \"inputs\": [\"h0\", \"b0\"]},"
    "  {\"name\": \"h2\", \"op\": \"relu\", \"inputs\": [\"h1\"]},"
    "  {\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"h2\", \"w1\"]}],"
    " \"outputs\": [\"y\"]}";

/* Loading a model: its JSON, graph and seeded weights live in the
 * module's arena, under an escape point, and the verifiers' scratch arenas
 * are children of it; what aborts by design is fixed-size: the module's
 * arena header and first chunk (mlc_graph_new), once per mode. */
static void test_graph_load(void) {
  mlc_arena_set_chunk_size(SMALL_CHUNK);
  graph_ctx c = {MLP_JSON, false};
  tally t = sweep("graph load", op_graph, &c, 0, true);
  mlc_arena_set_chunk_size(0);
  CHECK_MSG(t.errors >= 20 && t.aborts <= 4, "%d errors, %d aborts", t.errors, t.aborts);
}

/* Every pass has work here: a reduction over a weight and a transposed
 * weight to fold (the reduction with scratch accumulators), multiply + add
 * (ewise_fma), two structurally equal dense + relu layers that fuse and
 * then share one prim_func (dce's structural hash and equality). */
static const char *PIPE_JSON =
    "{\"name\": \"pipe\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 8]}],"
    " \"weights\": [{\"name\": \"w0\", \"shape\": [8, 8]}, {\"name\": \"w1\", \"shape\": [8, 8]},"
    "  {\"name\": \"wt\", \"shape\": [8, 8]}, {\"name\": \"wr\", \"shape\": [4, 8]}],"
    " \"nodes\": [{\"name\": \"r\", \"op\": \"reduce_sum\", \"inputs\": [\"wr\"], \"axes\": [0]},"
    "  {\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"wt\"]},"
    "  {\"name\": \"h0\", \"op\": \"dense\", \"inputs\": [\"x\", \"w0\"]},"
    "  {\"name\": \"a0\", \"op\": \"relu\", \"inputs\": [\"h0\"]},"
    "  {\"name\": \"h1\", \"op\": \"dense\", \"inputs\": [\"a0\", \"w1\"]},"
    "  {\"name\": \"a1\", \"op\": \"relu\", \"inputs\": [\"h1\"]},"
    "  {\"name\": \"m\", \"op\": \"matmul\", \"inputs\": [\"a1\", \"t\"]},"
    "  {\"name\": \"s\", \"op\": \"multiply\", \"inputs\": [\"m\", \"r\"]},"
    "  {\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"s\", \"x\"]}],"
    " \"outputs\": [\"y\"]}";

/* The pass pipeline (rewrite, fold, fuse, lower, fuse_tir, dce) over a
 * loaded model: every pass allocates in the module's arena or in scratch
 * arenas that are its children, under the pipeline's escape point, so
 * every failure is an error (small chunks: failures land all through). */
static void test_graph_pipeline(void) {
  mlc_arena_set_chunk_size(SMALL_CHUNK);
  graph_ctx c = {PIPE_JSON, true};
  stride = LONG_SWEEP_STRIDE;
  tally t = sweep("graph pipeline", op_graph, &c, 0, false);
  stride = 1;
  mlc_arena_set_chunk_size(0);
  CHECK_MSG(t.errors >= 100 && t.aborts == 0, "%d errors, %d aborts", t.errors, t.aborts);
}

/* A call_extern between compiled ops, one over weights only: loading it
 * and every pass (which leave it alone) fail only as errors. */
static const char *EXTERN_JSON =
    "{\"name\": \"ext\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 8]}],"
    " \"weights\": [{\"name\": \"w0\", \"shape\": [8, 8]}, {\"name\": \"s\", \"shape\": [8]}],"
    " \"nodes\": [{\"name\": \"h\", \"op\": \"dense\", \"inputs\": [\"x\", \"w0\"]},"
    "  {\"name\": \"e\", \"op\": \"call_extern\", \"func\": \"f\", \"inputs\": [\"h\", \"s\"],"
    "   \"out_shape\": [1, 8]},"
    "  {\"name\": \"k\", \"op\": \"call_extern\", \"func\": \"g\", \"inputs\": [\"w0\"],"
    "   \"out_shape\": [8, 8]},"
    "  {\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"e\"]},"
    "  {\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"r\", \"k\"]}],"
    " \"outputs\": [\"y\"]}";

static void test_graph_pipeline_extern(void) {
  mlc_arena_set_chunk_size(SMALL_CHUNK);
  graph_ctx c = {EXTERN_JSON, true};
  stride = LONG_SWEEP_STRIDE;
  tally t = sweep("graph pipeline with call_extern", op_graph, &c, 0, false);
  stride = 1;
  mlc_arena_set_chunk_size(0);
  CHECK_MSG(t.errors >= 20 && t.aborts == 0, "%d errors, %d aborts", t.errors, t.aborts);
}

/* SQLite allocates through the hook (db/db.c): its failures come back as
 * errors of the db functions or are absorbed (SQLite's benign failures)
 * with the same result. */
static void test_db(void) {
  /* tmpfs where there is one: SQLite syncs its files at every commit. */
  char dir[] = "/dev/shm/mlc-oom-XXXXXX", tmp_dir[] = "/tmp/mlc-oom-XXXXXX";
  char *d = mkdtemp(dir);
  if (!d) d = mkdtemp(tmp_dir);
  CHECK(d != NULL);
  if (!d) return;
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = parse_mm(a);
  if (m) {
    db_ctx c = {d, m->funcs[0], MM_TRACE};
    /* About 1,600 allocations, most of them SQLite's, each failed in turn
     * (each point forks and creates a database on tmpfs: ~5 s). The
     * workload's key and IR text, the record's texts (canonical trace, run
     * times), the records read back and the scratch arenas' headers are
     * errors too (db/db.c): nothing aborts. */
    benign = true;
    stride = LONG_SWEEP_STRIDE;
    tally t = sweep("database open, add, commit, top_k", op_db, &c, 0, true);
    benign = false;
    stride = 1;
    CHECK_MSG(t.errors >= 250 && t.aborts == 0, "%d errors, %d aborts", t.errors, t.aborts);
  }
  mlc_arena_free(a);
  rmdir(d);
}

/* The interpreter compiles into an arena with an escape point and
 * allocates its buffers with mlc_malloc, so every failure is an error
 * except that of the arena's own header (mlc_arena_new aborts by design),
 * once per mode. */
static void test_interp_run(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(a, "mm.py", MM, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) {
    mlc_arena_free(a);
    return;
  }
  const mlc_prim_func *f = m->funcs[0];
  mlc_array args[3];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  for (int i = 0; i < 3; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(x, &rng);
    args[i] = *x;
    mlc_free(x);
  }
  interp_ctx c = {f, args};
  tally t = sweep("interpreter run", op_interp, &c, 0, true);
  CHECK_MSG(t.errors >= 4 && t.aborts == 2, "%d errors, %d aborts", t.errors, t.aborts);
  for (int i = 0; i < 3; i++) mlc_free(args[i].data);
  mlc_arena_free(a);
}

static void test_array_from_input(void) {
  tally t = sweep("array from input shape", op_array, NULL, 0, false);
  CHECK(t.errors == 4 && t.aborts == 0);
}

int main(void) {
  RUN(test_parse_small_module);
  RUN(test_parse_large_module);
  RUN(test_parse_big_string);
  RUN(test_json_trace_text);
  RUN(test_trace_replay);
  RUN(test_lower);
  RUN(test_graph_load);
  RUN(test_graph_pipeline);
  RUN(test_graph_pipeline_extern);
  RUN(test_db);
  RUN(test_interp_run);
  RUN(test_array_from_input);
  return test_summary();
}
