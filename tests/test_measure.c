/* measure: builder and runner worker processes end to end. Good candidates
 * are measured; every fault class (builder crash, hang and garbage; runner
 * segfault, SIGFPE, abort, hang, wrong result, absurd allocation, zero
 * time, garbage) costs exactly its candidate, the pool keeps going, and no
 * worker is left behind as a zombie or a live child. Interference: an
 * injected disturbance and a real busy neighbour are re-timed or marked. */
#include "measure/measure.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A small matmul workload as TVMScript. */
static char *matmul_text(int64_t m, int64_t n, int64_t k) {
  mlc_arena *a = mlc_arena_new();
  const mlc_task_def *d = mlc_task_find("matmul");
  int64_t shape[3] = {m, n, k};
  mlc_prim_func *f = mlc_task_build(a, d, shape);
  mlc_str s = {0};
  mlc_print_func(&s, f);
  mlc_arena_free(a);
  return mlc_str_take(&s);
}

/* A random tiling of matmul's j loop (reordered, inner loop unrolled). */
static char *matmul_trace(const char *text, uint64_t seed) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "mm.py", text, &err);
  MLC_ASSERT(m);
  mlc_sched *s = mlc_sched_new(m->funcs[0], seed);
  mlc_rv c, *l, f[2], j[2];
  bool ok = mlc_sched_get_block(s, "C", "main", &c, &err) &&
            mlc_sched_get_loops(s, c, &l, &err) == 3 &&
            mlc_sched_sample_perfect_tile(s, l[1], 2, 8, f, &err) &&
            mlc_sched_split(s, l[1], 2, (mlc_operand[]){MLC_OP_RV(f[0]), MLC_OP_RV(f[1])}, true,
                            j, &err) &&
            mlc_sched_reorder(s, 4, (mlc_rv[]){l[0], j[0], l[2], j[1]}, &err) &&
            mlc_sched_unroll(s, j[1], &err);
  MLC_ASSERT(ok);
  mlc_str js = {0};
  mlc_trace_to_json(&js, mlc_sched_trace(s));
  mlc_sched_free(s);
  mlc_arena_free(a);
  return mlc_str_take(&js);
}

/* Children of this process that are zombies (state Z in /proc). */
static int zombie_children(void) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *p = strrchr(buf, ')');
    char state;
    int ppid;
    if (p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid() && state == 'Z') n++;
  }
  if (d) closedir(d);
  return n;
}

static bool no_children(void) {
  int st;
  return waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
}

/* Pids of the children of `parent`, alive (not zombies). */
static int children_of(pid_t parent, pid_t *out, int max) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) && n < max) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *p = strrchr(buf, ')');
    char state;
    int ppid;
    if (p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 && ppid == parent && state != 'Z')
      out[n++] = atoi(e->d_name);
  }
  if (d) closedir(d);
  return n;
}

static bool alive(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = 0;
  char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The pool's timeout where cases hang on purpose. A fresh runner must
 * start and compute its workload's reference within it: 1.5 s on a
 * 2-core machine at load 8, over 3 s under AddressSanitizer; hence the
 * margin. A runner that holds the reference takes the candidate's own
 * (shorter) run timeout. */
#if defined(__SANITIZE_ADDRESS__)
#define HANG_TIMEOUT_S 8
#else
#define HANG_TIMEOUT_S 4
#endif

static mlc_measure_opts fast_opts(void) {
  mlc_measure_opts o = mlc_measure_defaults();
  o.n_builders = 2;
  o.build_timeout_s = 20;
  o.run_timeout_s = 20;
  o.repeat = 3;
  o.number = 2;
  return o;
}

static char *MM;

static void test_good_batch(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  mlc_measure *m = mlc_measure_new(&o, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  enum { N = 6 };
  char *traces[N];
  mlc_measure_cand c[N];
  for (int i = 0; i < N; i++) {
    traces[i] = matmul_trace(MM, 100 + (uint64_t)i);
    c[i] = (mlc_measure_cand){.workload = MM, .trace = i == 0 ? NULL : traces[i]};
  }
  mlc_measure_result r[N];
  CHECK(mlc_measure_run_batch(m, N, c, r, NULL, NULL, &err));
  for (int i = 0; i < N; i++) {
    CHECK_MSG(r[i].status == MLC_MEASURE_OK, "cand %d: %s", i, r[i].error);
    CHECK(r[i].index == i && r[i].n_secs == 3);
    double sum = 0;
    for (int k = 0; k < r[i].n_secs; k++) sum += r[i].secs[k];
    CHECK(r[i].mean_sec > 0 && fabs(r[i].mean_sec - sum / 3) < 1e-12);
    CHECK_MSG(r[i].max_error < 1e-3, "max error %g", r[i].max_error);
    CHECK(r[i].build_sec > 0 && r[i].run_sec > 0);
  }
  CHECK_MSG(mlc_measure_spawn_count(m) == 3, "spawned %d", mlc_measure_spawn_count(m));
  /* A second batch reuses the workers and the cached reference. */
  CHECK(mlc_measure_run_batch(m, 2, c + 1, r, NULL, NULL, &err));
  CHECK(r[0].status == MLC_MEASURE_OK && r[1].status == MLC_MEASURE_OK);
  CHECK(mlc_measure_spawn_count(m) == 3);
  mlc_measure_free(m);
  CHECK(no_children());
  for (int i = 0; i < N; i++) mlc_free(traces[i]);
}

/* One candidate of `text` measured by a fresh pool whose runner keeps
 * references in dir: where its reference came from (-1: not OK). */
static int measure_fresh(const char *dir, const char *text, uint64_t seed) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.ref_cache_dir = dir;
  o.seed = seed;
  mlc_measure *m = mlc_measure_new(&o, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return -1;
  char *trace = matmul_trace(text, 7);
  mlc_measure_cand c = {.workload = text, .trace = trace};
  mlc_measure_result r;
  bool ok = mlc_measure_run_batch(m, 1, &c, &r, NULL, NULL, &err);
  CHECK_MSG(ok && r.status == MLC_MEASURE_OK, "%s%s", err.msg, r.error);
  mlc_measure_free(m);
  mlc_free(trace);
  return ok && r.status == MLC_MEASURE_OK ? (int)r.ref : -1;
}

/* The entries in dir: how many, and the path of one that is neither of
 * the known ones (NULL: none known). */
static int ref_entries(const char *dir, const char *known1, const char *known2, char *fresh) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".ref") != 0) continue;
    n++;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if ((!known1 || strcmp(path, known1) != 0) && (!known2 || strcmp(path, known2) != 0))
      snprintf(fresh, 512, "%s", path);
  }
  if (d) closedir(d);
  return n;
}

static void copy_file(const char *from, const char *to) {
  size_t n;
  mlc_error err;
  char *data = mlc_read_file(from, &n, &err);
  MLC_ASSERT(data);
  FILE *f = fopen(to, "wb");
  MLC_ASSERT(f && fwrite(data, 1, n, f) == n);
  fclose(f);
  mlc_free(data);
}

static void flip_byte(const char *path, long from_end) {
  FILE *f = fopen(path, "r+b");
  MLC_ASSERT(f && fseek(f, -from_end, SEEK_END) == 0);
  int c = fgetc(f);
  fseek(f, -from_end, SEEK_END);
  fputc(c ^ 0x40, f);
  fclose(f);
}

/* The reference cache on disk: a workload's reference is computed once
 * and read by the next pool; another seed or workload has its own entry;
 * an entry that is corrupt, cut short or another workload's is refused
 * and computed again (never trusted: the candidate would be a wrong
 * result against another workload's values); a directory that cannot be
 * made costs only the caching. */
static void test_reference_cache(void) {
  char tmp[] = "/tmp/test_refcache_XXXXXX";
  MLC_ASSERT(mkdtemp(tmp));
  char dir[128], f1[512] = "", f2[512] = "", f3[512] = "";
  snprintf(dir, sizeof dir, "%s/refs/deeper", tmp); /* made with its parents */
  CHECK(measure_fresh(dir, MM, 1) == MLC_MEASURE_REF_COMPUTED);
  CHECK(ref_entries(dir, NULL, NULL, f1) == 1);
  CHECK(measure_fresh(dir, MM, 1) == MLC_MEASURE_REF_CACHED);
  CHECK(measure_fresh(dir, MM, 2) == MLC_MEASURE_REF_COMPUTED);
  CHECK(ref_entries(dir, f1, NULL, f2) == 2);
  CHECK(measure_fresh(dir, MM, 2) == MLC_MEASURE_REF_CACHED);
  flip_byte(f1, 20); /* in the values */
  CHECK(measure_fresh(dir, MM, 1) == MLC_MEASURE_REF_RECOMPUTED);
  CHECK(measure_fresh(dir, MM, 1) == MLC_MEASURE_REF_CACHED); /* rewritten */
  CHECK(truncate(f1, 100) == 0);
  CHECK(measure_fresh(dir, MM, 1) == MLC_MEASURE_REF_RECOMPUTED);
  /* Same arguments, other values: twice each product. */
  char *mm2 = mlc_xstrdup(MM);
  char *at = strstr(mm2, "A[vi, vk] * B[vk, vj]");
  MLC_ASSERT(at);
  mlc_str other = {0};
  mlc_str_putn(&other, mm2, (size_t)(at - mm2));
  mlc_str_puts(&other, "A[vi, vk] * B[vk, vj] * T.float32(2)");
  mlc_str_puts(&other, at + strlen("A[vi, vk] * B[vk, vj]"));
  CHECK(measure_fresh(dir, mlc_str_cstr(&other), 1) == MLC_MEASURE_REF_COMPUTED);
  CHECK(ref_entries(dir, f1, f2, f3) == 3);
  copy_file(f1, f3); /* MM's values where the other workload's belong */
  CHECK(measure_fresh(dir, mlc_str_cstr(&other), 1) == MLC_MEASURE_REF_RECOMPUTED);
  CHECK(measure_fresh(dir, mlc_str_cstr(&other), 1) == MLC_MEASURE_REF_CACHED);
  /* A directory under a regular file cannot be made. */
  char bad[160];
  snprintf(bad, sizeof bad, "%s/deeper/x", f1);
  CHECK(measure_fresh(bad, MM, 1) == MLC_MEASURE_REF_COMPUTED);
  CHECK(measure_fresh(bad, MM, 1) == MLC_MEASURE_REF_COMPUTED);
  mlc_str_free(&other);
  mlc_free(mm2);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  CHECK(system(cmd) == 0);
}

/* One runner, more workloads than it keeps references of (the pool stops
 * sending a reference object once the runner holds its outputs, and
 * sends it again when the runner may have dropped them): every candidate
 * checked and timed, the first workload again at the end, no restart. */
static void test_many_workloads(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.repeat = 1;
  o.number = 1;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  enum { N = 11 };
  char *texts[N];
  mlc_measure_cand c[N + 2];
  for (int i = 0; i < N; i++) {
    texts[i] = matmul_text(4 + i, 8, 8);
    c[i] = (mlc_measure_cand){.workload = texts[i]};
  }
  c[N] = c[0];     /* dropped by the runner by now: sent again */
  c[N + 1] = c[N - 1]; /* still held */
  mlc_measure_result r[N + 2];
  for (int pass = 0; pass < 2; pass++) {
    CHECK(mlc_measure_run_batch(m, pass ? 2 : N, pass ? c + N : c, r, NULL, NULL, &err));
    for (int i = 0; i < (pass ? 2 : N); i++)
      CHECK_MSG(r[i].status == MLC_MEASURE_OK, "pass %d cand %d: %s", pass, i, r[i].error);
  }
  /* the builders and one runner, never restarted */
  CHECK_MSG(mlc_measure_spawn_count(m) == o.n_builders + 1, "spawned %d",
            mlc_measure_spawn_count(m));
  mlc_measure_free(m);
  CHECK(no_children());
  for (int i = 0; i < N; i++) mlc_free(texts[i]);
}

/* (mpi) A batch that grows while it is collected: appended candidates
 * continue its indices, each result comes once, a wait with no result
 * ready returns -1, and a fully returned batch is followed by a fresh one
 * (indices from 0 again). */
static void test_append_and_wait(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  mlc_measure *m = mlc_measure_new(&o, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  enum { N = 4 };
  char *traces[N];
  mlc_measure_cand c[N];
  for (int i = 0; i < N; i++) {
    traces[i] = matmul_trace(MM, 200 + (uint64_t)i);
    c[i] = (mlc_measure_cand){.workload = MM, .trace = traces[i]};
  }
  CHECK(mlc_measure_append(m, 1, c, &err)); /* nothing open: a new batch */
  mlc_measure_result r;
  CHECK(mlc_measure_next_wait(m, &r, 0) == -1); /* nothing is built yet */
  CHECK(mlc_measure_append(m, 2, c + 1, &err));
  int seen[N] = {0}, got = 0, rc;
  while ((rc = mlc_measure_next_wait(m, &r, 0.05)) != 0) {
    if (rc < 0) continue;
    CHECK_MSG(r.index >= 0 && r.index < 3, "index %d", r.index);
    if (r.index < 0 || r.index >= 3) break;
    CHECK_MSG(r.status == MLC_MEASURE_OK, "cand %d: %s", r.index, r.error);
    seen[r.index]++;
    if (++got == 1) CHECK(mlc_measure_append(m, 0, c, &err)); /* an empty append is harmless */
  }
  CHECK(got == 3 && seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  /* every result returned: the next append starts a batch at index 0 */
  CHECK(mlc_measure_append(m, 1, c + 3, &err));
  CHECK(mlc_measure_next(m, &r) == 1 && r.index == 0 && r.status == MLC_MEASURE_OK);
  CHECK(mlc_measure_next(m, &r) == 0);
  mlc_measure_free(m);
  CHECK(no_children());
  for (int i = 0; i < N; i++) mlc_free(traces[i]);
}

typedef struct progress_log {
  int calls, last_done, total;
  bool ordered;
} progress_log;

static void on_progress(void *ud, int done, int total, const mlc_measure_result *r) {
  progress_log *p = ud;
  p->ordered &= done == p->last_done + 1 && r != NULL;
  p->calls++;
  p->last_done = done;
  p->total = total;
}

/* The mixed batch: every fault class next to good candidates. */
static void test_fault_batch(void) {
  static const struct {
    mlc_measure_fault fault;
    mlc_measure_status want;
  } cases[] = {
      {MLC_FAULT_NONE, MLC_MEASURE_OK},
      {MLC_FAULT_BUILD_CRASH, MLC_MEASURE_CRASH},
      {MLC_FAULT_RUN_SEGV, MLC_MEASURE_CRASH},
      {MLC_FAULT_NONE, MLC_MEASURE_OK},
      {MLC_FAULT_RUN_HANG, MLC_MEASURE_TIMEOUT},
      {MLC_FAULT_RUN_WRONG, MLC_MEASURE_WRONG_RESULT},
      {MLC_FAULT_RUN_FPE, MLC_MEASURE_CRASH},
      {MLC_FAULT_NONE, MLC_MEASURE_OK},
      {MLC_FAULT_RUN_ABORT, MLC_MEASURE_CRASH},
      {MLC_FAULT_BUILD_HANG, MLC_MEASURE_TIMEOUT},
      {MLC_FAULT_RUN_ALLOC, MLC_MEASURE_ALLOC_ERROR},
      {MLC_FAULT_RUN_ZERO_TIME, MLC_MEASURE_BAD_TIME},
      {MLC_FAULT_RUN_GARBAGE, MLC_MEASURE_PROTOCOL_ERROR},
      {MLC_FAULT_BUILD_GARBAGE, MLC_MEASURE_PROTOCOL_ERROR},
      {MLC_FAULT_RUN_SEGV, MLC_MEASURE_CRASH}, /* the same fault again */
      {MLC_FAULT_NONE, MLC_MEASURE_OK},
  };
  enum { N = MLC_COUNTOF(cases) };
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  /* Short enough for the hang cases, long enough for a loaded machine. */
  o.build_timeout_s = HANG_TIMEOUT_S;
  o.run_timeout_s = HANG_TIMEOUT_S;
  mlc_measure *m = mlc_measure_new(&o, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  char *traces[N];
  mlc_measure_cand c[N];
  for (int i = 0; i < N; i++) {
    traces[i] = matmul_trace(MM, 7 + (uint64_t)i);
    c[i] = (mlc_measure_cand){.workload = MM, .trace = traces[i], .fault = cases[i].fault};
    if (cases[i].fault == MLC_FAULT_RUN_HANG) c[i].run_timeout_s = 2;
  }
  mlc_measure_result r[N];
  progress_log p = {.ordered = true};
  CHECK(mlc_measure_run_batch(m, N, c, r, on_progress, &p, &err));
  CHECK(p.calls == N && p.total == N && p.ordered);
  for (int i = 0; i < N; i++) {
    CHECK_MSG(r[i].status == cases[i].want, "cand %d (fault %d): want %s, got %s", i,
              (int)cases[i].fault, mlc_measure_status_name(cases[i].want), r[i].error);
    if (r[i].status != MLC_MEASURE_OK) {
      const char *cls = mlc_measure_status_name(r[i].status);
      CHECK(strncmp(r[i].error, cls, strlen(cls)) == 0 && r[i].error[strlen(cls)] == ':');
      CHECK(r[i].n_secs == 0);
    }
  }
  CHECK(strstr(r[2].error, "signal 11") != NULL);
  CHECK(strstr(r[6].error, "signal 8") != NULL);
  CHECK(strstr(r[8].error, "signal 6") != NULL);
  CHECK(strstr(r[4].error, "killed") != NULL);
  CHECK(strstr(r[12].error, "bad frame magic") != NULL);
  CHECK(zombie_children() == 0);
  /* Each crash, hang or garbage restarted one worker. */
  CHECK_MSG(mlc_measure_spawn_count(m) >= 3 + 8, "spawned %d", mlc_measure_spawn_count(m));
  /* The pool still works after all that. */
  CHECK(mlc_measure_run_batch(m, 1, c, r, NULL, NULL, &err));
  CHECK_MSG(r[0].status == MLC_MEASURE_OK, "%s", r[0].error);
  mlc_measure_free(m);
  CHECK(no_children());
  for (int i = 0; i < N; i++) mlc_free(traces[i]);
}

/* A workload whose function carries MLC_ATTR_CHECK_ATOL is checked with
 * that atol (a quantized kernel's rounding-boundary differences): an
 * output element moved by 1 + 2 max|out| passes under an atol of 8 (a
 * share of max|out|: enough once max|out| >= 1/6, far below what sums of
 * 16 products of random [-1, 1) values reach) and fails the same workload
 * without it. */
static void test_workload_check_atol(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_task_def *d = mlc_task_find("matmul");
  mlc_prim_func *f = mlc_task_build(a, d, (const int64_t[]){16, 16, 16});
  mlc_func_set_check_atol(a, f, 8);
  CHECK(mlc_func_check_atol(f, 0) == 8);
  mlc_str text = {0};
  mlc_print_func(&text, f);
  CHECK(strstr(text.data, "\"mlc.check_atol\": 8.0") != NULL);
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  mlc_measure *m = mlc_measure_new(&o, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (m) {
    mlc_measure_cand c[2] = {{.workload = text.data, .fault = MLC_FAULT_RUN_WRONG},
                             {.workload = MM, .fault = MLC_FAULT_RUN_WRONG}};
    mlc_measure_result r[2];
    CHECK(mlc_measure_run_batch(m, 2, c, r, NULL, NULL, &err));
    CHECK_MSG(r[0].status == MLC_MEASURE_OK, "%s", r[0].error);
    CHECK_MSG(r[1].status == MLC_MEASURE_WRONG_RESULT, "%s", r[1].error);
    mlc_measure_free(m);
  }
  mlc_str_free(&text);
  mlc_arena_free(a);
}

/* Bad traces and bad workloads are build errors, not crashes. */
static void test_build_errors(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  const char *bad_split =
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
      "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],"
      "[\"Split\",[\"l2\",3,5],{\"preserve_unit_iters\":true},[\"l4\",\"l5\"]]],"
      "\"decisions\":{},\"version\":1}";
  mlc_measure_cand c[4] = {
      {.workload = MM, .trace = "{not json"},
      {.workload = MM, .trace = bad_split},
      {.workload = "def broken(:\n", .trace = NULL},
      {.workload = MM, .trace = NULL, .target = "llvm -bogus=1"},
  };
  mlc_measure_result r[4];
  CHECK(mlc_measure_run_batch(m, 4, c, r, NULL, NULL, &err));
  for (int i = 0; i < 4; i++)
    CHECK_MSG(r[i].status == MLC_MEASURE_BUILD_ERROR, "cand %d: %s", i, r[i].error);
  CHECK(strstr(r[0].error, "trace") != NULL);
  CHECK_MSG(strstr(r[2].error, "expected @T.prim_func") != NULL, "%s", r[2].error);
  CHECK(strstr(r[3].error, "bogus") != NULL);
  mlc_measure_free(m);
  CHECK(no_children());
}

/* A cuda candidate goes through the same worker protocol: the builder
 * writes PTX, the runner picks the CUDA runner by the object's format (the
 * reference still runs on the CPU). Without the CUDA driver or a device
 * that runner reports why, as a runtime error of that candidate only, and
 * the runner check says "no CUDA device: <reason>". */
static void test_cuda_runner(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_task_def *d = mlc_task_find("vecadd");
  int64_t shape[1] = {256};
  mlc_sched *s = mlc_sched_new(mlc_task_build(a, d, shape), 1);
  mlc_rv b, *l, parts[2];
  mlc_error err = {{0}};
  bool ok = mlc_sched_get_block(s, "C", "main", &b, &err) &&
            mlc_sched_get_loops(s, b, &l, &err) == 1 &&
            mlc_sched_split(s, l[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(64)}, true,
                            parts, &err) &&
            mlc_sched_bind(s, parts[0], "blockIdx.x", &err) &&
            mlc_sched_bind(s, parts[1], "threadIdx.x", &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_str js = {0}, text = {0};
  mlc_trace_to_json(&js, mlc_sched_trace(s));
  mlc_print_func(&text, mlc_task_build(a, d, shape));
  mlc_sched_free(s);
  mlc_measure_opts o = fast_opts();
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_measure_cand c[2] = {
      {.workload = mlc_str_cstr(&text), .trace = mlc_str_cstr(&js), .target = "cuda -arch=sm_80"},
      {.workload = MM, .trace = NULL},
  };
  mlc_measure_result r[2];
  CHECK(mlc_measure_run_batch(m, 2, c, r, NULL, NULL, &err));
  mlc_error ce;
  bool device = mlc_measure_runner_check("cuda -arch=sm_80", &ce);
  if (device) {
    CHECK_MSG(r[0].status == MLC_MEASURE_OK, "%s", r[0].error);
  } else {
    CHECK_MSG(strncmp(ce.msg, "no CUDA device: ", 16) == 0, "%s", ce.msg);
    CHECK_MSG(r[0].status == MLC_MEASURE_RUNTIME_ERROR && strstr(r[0].error, "CUDA"), "%s",
              r[0].error);
  }
  CHECK_MSG(r[1].status == MLC_MEASURE_OK, "%s", r[1].error);
  CHECK(mlc_measure_runner_check("llvm", &ce));
  printf("# cuda candidate: %s\n", device ? "measured on the GPU" : r[0].error);
  mlc_measure_free(m);
  mlc_str_free(&js);
  mlc_str_free(&text);
  mlc_arena_free(a);
  CHECK(no_children());
}

/* Faults of real kernels, no injection: an intermediate buffer of 4 TiB
 * (its allocation fails inside the kernel), a loop nest of 2^62
 * iterations (killed at the timeout) and a wild read (WILD_READ below).
 * These workloads fail already in their reference; a good workload in the
 * same batch is still measured. */
static const char *BIG_ALLOC =
    "@T.prim_func\n"
    "def main(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
    "    T_big = T.alloc_buffer((1048576, 1048576))\n"
    "    for i, j in T.grid(1048576, 1048576):\n"
    "        with T.block(\"big\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T_big[vi, vj] = T.float32(1)\n"
    "    for i in range(4):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            B[vi] = A[vi] + T_big[vi, vi]\n";

static const char *ENDLESS =
    "@T.prim_func\n"
    "def main(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
    "    for k, i, j in T.grid(4, 1073741824, 1073741824):\n"
    "        with T.block(\"B\"):\n"
    "            vk, vi, vj = T.axis.remap(\"SRR\", [k, i, j])\n"
    "            with T.init():\n"
    "                B[vk] = T.float32(0)\n"
    "            B[vk] = B[vk] + A[vk]\n";

/* A kernel that reads far out of bounds through an index loaded from its
 * input: no static check can see it, and it faults for real. (Division by
 * zero cannot trap in generated code: targets/llvm_expr.c makes its
 * result unspecified instead, so SIGFPE is covered by injection only.) */
static const char *WILD_READ =
    "@T.prim_func\n"
    "def main(A: T.Buffer((64,), \"int32\"), X: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for i in range(64):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(64, i)\n"
    "            B[vi] = X[T.Cast(\"int64\", A[vi]) * T.int64(1000000007) + T.int64(4000000000)]\n";

static void test_real_kernel_faults(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.run_timeout_s = HANG_TIMEOUT_S;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_measure_cand c[5] = {{.workload = BIG_ALLOC}, {.workload = ENDLESS}, {.workload = MM},
                           {.workload = BIG_ALLOC}, {.workload = WILD_READ}};
  mlc_measure_result r[5];
  CHECK(mlc_measure_run_batch(m, 5, c, r, NULL, NULL, &err));
  CHECK_MSG(r[0].status == MLC_MEASURE_ALLOC_ERROR, "%s", r[0].error);
  CHECK_MSG(r[1].status == MLC_MEASURE_TIMEOUT, "%s", r[1].error);
  CHECK_MSG(r[2].status == MLC_MEASURE_OK, "%s", r[2].error);
  CHECK_MSG(r[3].status == MLC_MEASURE_ALLOC_ERROR, "%s", r[3].error);
  CHECK_MSG(r[4].status == MLC_MEASURE_CRASH, "%s", r[4].error);
  CHECK_MSG(strstr(r[4].error, "signal 11") != NULL, "%s", r[4].error);
  mlc_measure_free(m);
  CHECK(no_children());
}

/* A tuner killed with SIGKILL in the middle of a batch (its runner
 * hanging, its builders stopped) leaves no worker behind. */
static void test_tuner_killed(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    mlc_error err;
    mlc_measure_opts o = fast_opts();
    o.run_timeout_s = 60;
    o.build_timeout_s = 60;
    mlc_measure *m = mlc_measure_new(&o, &err);
    mlc_measure_cand c[3] = {{.workload = MM, .fault = MLC_FAULT_RUN_HANG},
                             {.workload = MM, .fault = MLC_FAULT_BUILD_HANG},
                             {.workload = MM, .fault = MLC_FAULT_BUILD_HANG}};
    mlc_measure_result r[3];
    if (m) mlc_measure_run_batch(m, 3, c, r, NULL, NULL, &err);
    _exit(1);
  }
  pid_t kids[8];
  int n = 0;
  for (int i = 0; i < 100 && n < 3; i++) {
    usleep(50000);
    n = children_of(pid, kids, 8);
  }
  usleep(500000); /* let the runner reach its hang and stop the builders */
  n = children_of(pid, kids, 8);
  CHECK_MSG(n == 3, "%d workers", n);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  int left = n;
  for (int i = 0; i < 60 && left > 0; i++) {
    usleep(50000);
    left = 0;
    for (int k = 0; k < n; k++) left += alive(kids[k]);
  }
  CHECK_MSG(left == 0, "%d of %d workers still alive", left, n);
}

/* Fake workers (shell scripts) that break the protocol in ways the fault
 * injection does not: an oversize length, a frame cut short by exit, a
 * reply of the wrong type. Each costs its job; the batch completes. */
static void fake_worker_batch(const char *script, const char *want_class, const char *want_msg) {
  char path[] = "/tmp/mlc_fake_worker_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return (void)CHECK(0);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "#!/bin/sh\n%s\n", script);
  fclose(f);
  chmod(path, 0755);
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.worker_path = path;
  o.n_builders = 1;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) {
    unlink(path);
    return (void)CHECK_MSG(0, "%s", err.msg);
  }
  mlc_measure_cand c[2] = {{.workload = MM}, {.workload = MM}};
  mlc_measure_result r[2];
  CHECK(mlc_measure_run_batch(m, 2, c, r, NULL, NULL, &err));
  for (int i = 0; i < 2; i++) {
    CHECK_MSG(strncmp(r[i].error, want_class, strlen(want_class)) == 0, "%s", r[i].error);
    CHECK_MSG(strstr(r[i].error, want_msg) != NULL, "%s", r[i].error);
  }
  mlc_measure_free(m);
  CHECK(no_children());
  unlink(path);
}

static void test_protocol_edges(void) {
  /* "MCF1", type BUILD_OK, length 0xffffffff */
  fake_worker_batch("printf 'MCF1\\002\\000\\000\\000\\377\\377\\377\\377'; exec sleep 30",
                    "protocol_error", "frame length over the limit");
  /* a header promising 16 bytes, 3 given, then exit */
  fake_worker_batch("printf 'MCF1\\002\\000\\000\\000\\020\\000\\000\\000abc'", "crash",
                    "exited with status 0");
  /* a RUN_OK (type 4) where BUILD_OK was asked for */
  fake_worker_batch("printf 'MCF1\\004\\000\\000\\000\\000\\000\\000\\000'; exec sleep 30",
                    "protocol_error", "malformed build reply");
  /* a BUILD_OK (1-byte object, no args) claiming 0 threads for the kernel */
  fake_worker_batch("printf 'MCF1\\002\\000\\000\\000\\015\\000\\000\\000"
                    "\\001\\000\\000\\000x\\000\\000\\000\\000\\000\\000\\000\\000'; exec sleep 30",
                    "protocol_error", "malformed build reply");
}

/* min_repeat_ms stretches each repeat; timings stay plausible. */
static void test_min_repeat(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.number = 1;
  o.repeat = 2;
  o.min_repeat_ms = 30;
  o.flush_cache = false;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_measure_cand c = {.workload = MM};
  mlc_measure_result r;
  CHECK(mlc_measure_run_batch(m, 1, &c, &r, NULL, NULL, &err));
  CHECK_MSG(r.status == MLC_MEASURE_OK, "%s", r.error);
  /* two repeats of at least 30 ms each, plus load and check */
  CHECK_MSG(r.run_sec >= 0.06, "run took %g s", r.run_sec);
  CHECK(r.mean_sec > 0 && r.mean_sec < 0.03);
  mlc_measure_free(m);
}

/* A missing worker program is an error up front; one that dies at once
 * costs each candidate and the batch still completes. */
static void test_bad_worker(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.worker_path = "/nonexistent/mlc-worker";
  CHECK(mlc_measure_new(&o, &err) == NULL);
  CHECK(strstr(err.msg, "/nonexistent/mlc-worker") != NULL);
  o.worker_path = "/bin/false";
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_measure_cand c[3] = {{.workload = MM}, {.workload = MM}, {.workload = MM}};
  mlc_measure_result r[3];
  CHECK(mlc_measure_run_batch(m, 3, c, r, NULL, NULL, &err));
  for (int i = 0; i < 3; i++) {
    CHECK_MSG(r[i].status == MLC_MEASURE_BUILD_ERROR || r[i].status == MLC_MEASURE_CRASH, "%s",
              r[i].error);
    CHECK_MSG(strstr(r[i].error, "exited with status 1") != NULL, "%s", r[i].error);
  }
  mlc_measure_free(m);
  CHECK(no_children());
}

/* The injected disturbance: every timing attempt counts as disturbed, so
 * the runner times twice more and marks the result; a clean neighbour in
 * the same batch is never marked without retimes. */
static void test_disturb_fault(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  mlc_measure_cand c[2] = {{.workload = MM, .fault = MLC_FAULT_RUN_DISTURB}, {.workload = MM}};
  mlc_measure_result r[2];
  CHECK(mlc_measure_run_batch(m, 2, c, r, NULL, NULL, &err));
  CHECK_MSG(r[0].status == MLC_MEASURE_OK, "%s", r[0].error);
  CHECK_MSG(r[0].disturbed && r[0].retimes == 2, "disturbed %d retimes %d", r[0].disturbed,
            r[0].retimes);
  CHECK(r[0].disturb_why[0] != 0); /* "injected", or a real sign seen first */
  CHECK(r[0].n_secs == 3 && r[0].mean_sec > 0);
  CHECK_MSG(r[1].status == MLC_MEASURE_OK, "%s", r[1].error);
  CHECK(r[1].retimes >= 0 && r[1].retimes <= 2);
  CHECK(!r[1].disturbed || r[1].retimes == 2);
  CHECK((r[1].disturb_why[0] != 0) == r[1].disturbed);
  mlc_measure_free(m);
  CHECK(no_children());
}

/* Busy processes that want every core several times over. */
static int start_spinners(int n, pid_t *pids) {
  int k = 0;
  for (; k < n; k++) {
    pids[k] = fork();
    if (pids[k] < 0) break;
    if (pids[k] == 0) {
      volatile unsigned long x = 0;
      for (;;) x++;
    }
  }
  return k;
}

static void stop_spinners(int n, const pid_t *pids) {
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
  for (int i = 0; i < n; i++) waitpid(pids[i], NULL, 0);
}

/* A real neighbour: spinners started while the pool times. Every timing
 * was disturbed at first (the runner loses its core every few ms), so each
 * result was timed again or is marked. */
static void test_busy_neighbour(void) {
  mlc_error err = {{0}};
  mlc_measure_opts o = fast_opts();
  o.number = 1;
  o.min_repeat_ms = 20; /* long enough for the CPU clocks and a few time slices */
  o.flush_cache = false;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) return (void)CHECK_MSG(0, "%s", err.msg);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  pid_t pids[64];
  int n = start_spinners((int)(cores < 1 ? 4 : cores > 16 ? 64 : 4 * cores), pids);
  CHECK(n > 0);
  enum { N = 2 };
  char *traces[N];
  mlc_measure_cand c[N];
  for (int i = 0; i < N; i++) {
    traces[i] = matmul_trace(MM, 300 + (uint64_t)i);
    c[i] = (mlc_measure_cand){.workload = MM, .trace = traces[i]};
  }
  mlc_measure_result r[N];
  CHECK(mlc_measure_run_batch(m, N, c, r, NULL, NULL, &err));
  stop_spinners(n, pids);
  for (int i = 0; i < N; i++) {
    CHECK_MSG(r[i].status == MLC_MEASURE_OK, "cand %d: %s", i, r[i].error);
    CHECK_MSG(r[i].disturbed || r[i].retimes > 0, "cand %d: neither marked nor re-timed "
              "(ivcsw %ld, cpu ratio %.2f)", i, r[i].ivcsw, r[i].cpu_ratio);
  }
  mlc_measure_free(m);
  CHECK(no_children());
  for (int i = 0; i < N; i++) mlc_free(traces[i]);
}

static void test_status_names(void) {
  for (int i = 0; i < MLC_MEASURE_STATUS_COUNT; i++) {
    mlc_measure_status s;
    CHECK(mlc_measure_status_from_name(mlc_measure_status_name((mlc_measure_status)i), &s));
    CHECK((int)s == i);
  }
  mlc_measure_status s;
  CHECK(!mlc_measure_status_from_name("nonsense", &s));
}

/* Measurement defaults follow the device the target's kernels run on. */
static void test_defaults_for_target(void) {
  mlc_measure_opts d = mlc_measure_defaults(), cpu = mlc_measure_defaults_for("llvm"),
                   gpu = mlc_measure_defaults_for("cuda -arch=sm_86"),
                   bad = mlc_measure_defaults_for("nonsense");
  const mlc_measure_opts *same[] = {&cpu, &bad};
  for (int i = 0; i < 2; i++)
    CHECK(same[i]->pause_builders == d.pause_builders && same[i]->number == d.number &&
          same[i]->run_timeout_s == d.run_timeout_s && same[i]->repeat == d.repeat);
  CHECK(d.pause_builders && d.number == 1 && d.run_timeout_s == 20);
  CHECK(!gpu.pause_builders && gpu.number == 10 && gpu.run_timeout_s == 120);
  CHECK(gpu.repeat == d.repeat && gpu.build_timeout_s == d.build_timeout_s);
}

int main(void) {
  setenv("MLC_WORKER_FAULTS", "1", 1);
  RUN(test_defaults_for_target);
  MM = matmul_text(16, 16, 16);
  RUN(test_status_names);
  RUN(test_good_batch);
  RUN(test_many_workloads);
  RUN(test_reference_cache);
  RUN(test_append_and_wait);
  RUN(test_fault_batch);
  RUN(test_workload_check_atol);
  RUN(test_build_errors);
  RUN(test_cuda_runner);
  RUN(test_real_kernel_faults);
  RUN(test_protocol_edges);
  RUN(test_tuner_killed);
  RUN(test_min_repeat);
  RUN(test_bad_worker);
  RUN(test_disturb_fault);
  RUN(test_busy_neighbour);
  mlc_free(MM);
  return test_summary();
}
