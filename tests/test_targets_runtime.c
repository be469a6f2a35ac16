/* The parallel runtime (targets/runtime/parallel.c): every iteration runs
 * once for every extent and thread count, nested loops run serially in the
 * worker, a thread stuck in its chunk does not stop the others from
 * finishing the loop, and a loop does not wait for threads the OS does not
 * run (all threads pinned to one CPU). The kernel workspace
 * (targets/runtime/workspace.c): a freed block serves the thread's next
 * allocation that fits it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "targets/runtime/mlcrt.h"
#include "tests/test.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A cost that keeps every loop parallel (small loops run serially). */
#define BIG_COST ((int64_t)1 << 20)
#define MAXN 256

static double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void set_threads(int nt) {
  char buf[16];
  snprintf(buf, sizeof buf, "%d", nt);
  setenv("MLC_NUM_THREADS", buf, 1);
}

typedef struct hits {
  int count[MAXN];           /* runs of iteration i */
  pthread_t thread[MAXN];    /* the thread that ran it */
  int64_t spin_ns;           /* busy work per iteration */
  int64_t sleep_iter;        /* this iteration sleeps sleep_ms (-1: none) */
  int sleep_ms;
} hits;

static void busy_ns(int64_t ns) {
  double end = now_sec() + ns * 1e-9;
  while (now_sec() < end) {
  }
}

static void count_fn(int64_t i, void *closure) {
  hits *h = closure;
  __atomic_add_fetch(&h->count[i], 1, __ATOMIC_RELAXED);
  h->thread[i] = pthread_self();
  if (i == h->sleep_iter) usleep((useconds_t)h->sleep_ms * 1000);
  if (h->spin_ns) busy_ns(h->spin_ns);
}

static int distinct_threads(const hits *h, int64_t n) {
  int k = 0;
  for (int64_t i = 0; i < n; i++) {
    bool seen = false;
    for (int64_t j = 0; j < i && !seen; j++) seen = pthread_equal(h->thread[i], h->thread[j]);
    k += !seen;
  }
  return k;
}

/* Every extent 0..100 with 1..4 threads: each iteration exactly once. */
static void test_every_extent(void) {
  for (int nt = 1; nt <= 4; nt++) {
    set_threads(nt);
    for (int64_t n = 0; n <= 100; n++) {
      hits *h = calloc(1, sizeof *h);
      h->sleep_iter = -1;
      mlc_parallel_for(n, count_fn, h, 0, BIG_COST);
      for (int64_t i = 0; i < MAXN; i++)
        CHECK_MSG(h->count[i] == (i < n), "threads %d, n %lld: iteration %lld ran %d times", nt,
                  (long long)n, (long long)i, h->count[i]);
      free(h);
    }
  }
  unsetenv("MLC_NUM_THREADS");
}

/* mlc_parallel_for_range hands out non-empty ranges that cover [0, n)
 * once, each on one thread: a serial loop (one thread, a cheap loop) as
 * one range, a parallel one as its chunks. */
typedef struct ranges {
  int count[MAXN];
  int calls;
  bool empty, whole;
} ranges;

static void range_fn(int64_t lo, int64_t hi, void *closure) {
  ranges *r = closure;
  if (lo >= hi) r->empty = true;
  if (lo == 0 && hi > 0 && r->count[hi - 1] == 0) r->whole = true;
  for (int64_t i = lo; i < hi; i++) __atomic_add_fetch(&r->count[i], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
}

static void test_ranges(void) {
  int64_t costs[] = {1, BIG_COST};
  for (int nt = 1; nt <= 4; nt++)
    for (int c = 0; c < 2; c++) {
      set_threads(nt);
      for (int64_t n = 0; n <= 100; n++) {
        ranges *r = calloc(1, sizeof *r);
        mlc_parallel_for_range(n, range_fn, r, 0, costs[c]);
        int bad = 0;
        for (int64_t i = 0; i < MAXN; i++) bad += r->count[i] != (i < n);
        CHECK_MSG(bad == 0 && !r->empty, "threads %d, cost %lld, n %lld: %d iterations ran other than once%s",
                  nt, (long long)costs[c], (long long)n, bad, r->empty ? ", an empty range" : "");
        bool serial = nt == 1 || n <= 1 || costs[c] == 1;
        if (serial && n > 0)
          CHECK_MSG(r->calls == 1 && r->whole, "threads %d, n %lld: a serial loop in %d calls", nt,
                    (long long)n, r->calls);
        if (!serial && n >= 16) CHECK_MSG(r->calls > 1, "threads %d, n %lld: one range", nt, (long long)n);
        free(r);
      }
    }
  unsetenv("MLC_NUM_THREADS");
}

/* Cheap loops too (chunks of many iterations, or serial), and the target's
 * core count when MLC_NUM_THREADS is unset. */
static void test_cost_and_default_threads(void) {
  unsetenv("MLC_NUM_THREADS");
  int64_t costs[] = {0, 1, 7, 100, 5000};
  for (int c = 0; c < 5; c++)
    for (int32_t nc = 0; nc <= 3; nc++) {
      hits *h = calloc(1, sizeof *h);
      h->sleep_iter = -1;
      mlc_parallel_for(MAXN, count_fn, h, nc, costs[c]);
      int bad = 0;
      for (int i = 0; i < MAXN; i++) bad += h->count[i] != 1;
      CHECK_MSG(bad == 0, "cost %lld, cores %d: %d iterations ran other than once",
                (long long)costs[c], nc, bad);
      free(h);
    }
}

/* The work is shared: with 4 threads and iterations of 200 us, more than
 * one thread runs iterations. */
static void test_uses_threads(void) {
  set_threads(4);
  hits *h = calloc(1, sizeof *h);
  h->sleep_iter = -1;
  h->spin_ns = 200000;
  mlc_parallel_for(64, count_fn, h, 0, BIG_COST);
  CHECK_MSG(distinct_threads(h, 64) >= 2, "64 iterations of 200 us ran on %d thread(s)",
            distinct_threads(h, 64));
  free(h);
  unsetenv("MLC_NUM_THREADS");
}

/* Each thread runs the same part of a loop call after call, the caller
 * the first part (its home range; what it runs of another's is stolen
 * work), so a memory-bound kernel called again finds its data in its
 * core's cache. Calls back to back of 256 iterations of 0.2 us in 16
 * chunks on 2 threads: a call is clean when at least 90% of the first
 * half ran on the caller and of the second half on the one worker. Most
 * calls are (measured: all but a disturbed few; a loaded machine makes the
 * caller steal more, so 10 of up to 200 are asked for); with chunks taken
 * first come, first served the two threads alternate chunks and no call
 * is clean. */
static void test_same_part_each_call(void) {
  set_threads(2);
  hits *h = calloc(1, sizeof *h);
  h->sleep_iter = -1;
  h->spin_ns = 200;
  pthread_t me = pthread_self(), worker = me;
  int clean = 0, calls = 0;
  for (; calls < 200 && clean < 10; calls++) {
    mlc_parallel_for(MAXN, count_fn, h, 0, 64); /* 64 cost units: chunks of 16 */
    int home = 0;
    for (int i = 0; i < MAXN; i++) {
      bool caller = pthread_equal(h->thread[i], me) != 0;
      if (!caller && pthread_equal(worker, me)) worker = h->thread[i];
      home += i < MAXN / 2 ? caller : pthread_equal(h->thread[i], worker) != 0;
    }
    clean += !pthread_equal(worker, me) && home * 10 >= MAXN * 9;
  }
  CHECK_MSG(!pthread_equal(worker, me), "the worker never took part");
  CHECK_MSG(clean >= 10, "%d of %d calls ran their halves on their home threads", clean, calls);
  free(h);
  unsetenv("MLC_NUM_THREADS");
}

/* Nested loops run serially inside the outer iteration's thread. */
typedef struct nest {
  int count[16][16];
  pthread_t outer[16];
  int other_thread; /* inner iterations on another thread than their outer one */
} nest;

typedef struct inner_ctx {
  nest *nt;
  int64_t i;
} inner_ctx;

static void inner_fn(int64_t j, void *closure) {
  inner_ctx *c = closure;
  __atomic_add_fetch(&c->nt->count[c->i][j], 1, __ATOMIC_RELAXED);
  if (!pthread_equal(pthread_self(), c->nt->outer[c->i]))
    __atomic_add_fetch(&c->nt->other_thread, 1, __ATOMIC_RELAXED);
}

static void outer_fn(int64_t i, void *closure) {
  nest *nt = closure;
  nt->outer[i] = pthread_self();
  inner_ctx c = {nt, i};
  mlc_parallel_for(16, inner_fn, &c, 0, BIG_COST);
  busy_ns(50000);
}

static void test_nested(void) {
  set_threads(3);
  nest *nt = calloc(1, sizeof *nt);
  mlc_parallel_for(16, outer_fn, nt, 0, BIG_COST);
  int bad = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) bad += nt->count[i][j] != 1;
  CHECK_MSG(bad == 0, "%d inner iterations ran other than once", bad);
  CHECK_MSG(nt->other_thread == 0, "%d inner iterations left their outer iteration's thread",
            nt->other_thread);
  free(nt);
  unsetenv("MLC_NUM_THREADS");
}

/* Iteration 0 sleeps 300 ms in whichever thread claims it; the other
 * threads finish the other 63 iterations (1 ms each) meanwhile, so the
 * sleeping thread runs only its own chunk, and the loop takes about the
 * sleep, not the sleep plus the rest. */
static void test_sleeping_thread(void) {
  set_threads(2);
  hits *h = calloc(1, sizeof *h);
  h->sleep_iter = 0;
  h->sleep_ms = 300;
  h->spin_ns = 1000000;
  double t0 = now_sec();
  mlc_parallel_for(64, count_fn, h, 0, BIG_COST);
  double sec = now_sec() - t0;
  int bad = 0, by_sleeper = 0;
  for (int i = 0; i < 64; i++) {
    bad += h->count[i] != 1;
    by_sleeper += pthread_equal(h->thread[i], h->thread[0]);
  }
  CHECK_MSG(bad == 0, "%d iterations ran other than once", bad);
  /* Its chunk is 64 / (2 threads * 8) = 4 iterations. */
  CHECK_MSG(by_sleeper <= 4, "the sleeping thread ran %d iterations (its chunk is 4)", by_sleeper);
  CHECK_MSG(sec < 0.300 + 0.060 + 0.5, "the loop took %.3f s", sec);
  free(h);
  unsetenv("MLC_NUM_THREADS");
}

/* In a forked child pinned to one CPU (its new team inherits the pin):
 * 4 threads on one core must cost about what 1 thread costs, since the
 * loop never waits for a worker that has no core. A barrier that every
 * thread must reach (OpenMP) costs a time slice per loop here. */
static int pinned_child(void) {
  alarm(30); /* a runtime that waits for descheduled threads takes minutes */
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return 2;
  hits *h = calloc(1, sizeof *h);
  h->sleep_iter = -1;
  h->spin_ns = 2000; /* 64 x 2 us: a 128 us loop, like a small kernel */
  double sec[2];
  for (int k = 0; k < 2; k++) {
    set_threads(k == 0 ? 1 : 4);
    mlc_parallel_for(64, count_fn, h, 0, BIG_COST); /* warm up, start the team */
    double t0 = now_sec();
    for (int r = 0; r < 300; r++) mlc_parallel_for(64, count_fn, h, 0, BIG_COST);
    sec[k] = now_sec() - t0;
  }
  for (int i = 0; i < 64; i++)
    if (h->count[i] != 602) return 3;
  printf("    1 CPU: 300 loops take %.1f ms with 1 thread, %.1f ms with 4\n", sec[0] * 1e3,
         sec[1] * 1e3);
  fflush(stdout);
  return sec[1] < 3 * sec[0] + 0.05 ? 0 : 4;
}

static void test_pinned_one_cpu(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) _exit(pinned_child());
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child: status %d, signal %d (2: no affinity, 3: wrong counts, 4: 4 threads over "
            "3x slower; SIGALRM: over 30 s)",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Each iteration notes the CPU mask of the thread that runs it. */
typedef struct masks {
  cpu_set_t set[64];
  pthread_t thread[64];
} masks;

static void mask_fn(int64_t i, void *p) {
  masks *m = p;
  sched_getaffinity(0, sizeof m->set[i], &m->set[i]);
  m->thread[i] = pthread_self();
  busy_ns(20000); /* long enough that both threads take chunks */
}

/* In a forked child (a new team) with MLC_BIND_THREADS=1 and 2 threads:
 * the caller bound to the first CPU of its mask, the worker to the second. */
static int bind_child(void) {
  alarm(30);
  cpu_set_t own;
  if (sched_getaffinity(0, sizeof own, &own) != 0) return 2;
  int first = -1, second = -1;
  for (int c = 0; c < CPU_SETSIZE && second < 0; c++)
    if (CPU_ISSET(c, &own)) *(first < 0 ? &first : &second) = c;
  setenv("MLC_BIND_THREADS", "1", 1);
  set_threads(2);
  masks *m = calloc(1, sizeof *m);
  for (int tries = 0; tries < 20; tries++) {
    mlc_parallel_for(64, mask_fn, m, 0, BIG_COST);
    for (int i = 0; i < 64; i++) {
      if (CPU_COUNT(&m->set[i]) != 1) return 3;
      bool caller = pthread_equal(m->thread[i], pthread_self());
      if (!CPU_ISSET(caller ? first : second, &m->set[i])) return 4;
      if (!caller) return 0; /* the worker took a chunk, on its own CPU */
    }
  }
  return 5;
}

static void test_bind_threads(void) {
  cpu_set_t own;
  if (sched_getaffinity(0, sizeof own, &own) != 0 || CPU_COUNT(&own) < 2) {
    printf("# test_bind_threads: SKIP: one CPU\n");
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) _exit(bind_child());
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child: status %d (3: a thread not bound to one CPU, 4: on the wrong CPU, 5: the "
            "worker never took a chunk)",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* ---- the kernel workspace ---------------------------------------------------------- */

/* A freed block comes back for the next allocation of its size (aligned),
 * and for a somewhat smaller one, but not for one far smaller; the larger
 * blocks are the ones kept when more than 8 are freed. */
static void test_workspace_reuse(void) {
  const int64_t mb = 1 << 20;
  char *p = mlc_rt_workspace_alloc(mb);
  CHECK(p && (uintptr_t)p % 64 == 0);
  if (!p) return;
  p[0] = 1, p[mb - 1] = 2;
  mlc_rt_workspace_free(p, mb);
  char *q = mlc_rt_workspace_alloc(mb);
  CHECK_MSG(q == p, "the freed block was not reused");
  mlc_rt_workspace_free(q, mb);
  char *r = mlc_rt_workspace_alloc(mb / 2 + 64);
  CHECK_MSG(r == p, "a block of twice the size was not reused");
  char *small = mlc_rt_workspace_alloc(4096);
  CHECK_MSG(small && small != p, "a 1 MiB block served 4 KiB");
  mlc_rt_workspace_free(small, 4096);
  mlc_rt_workspace_free(r, mb / 2 + 64);
  /* ten blocks of 1..10 x 64 KiB freed: the eight largest stay */
  char *b[10];
  for (int i = 0; i < 10; i++) b[i] = mlc_rt_workspace_alloc((int64_t)(i + 1) << 16);
  for (int i = 0; i < 10; i++) mlc_rt_workspace_free(b[i], (int64_t)(i + 1) << 16);
  int kept = 0;
  char *again[8];
  for (int i = 9; i >= 2; i--) {
    again[9 - i] = mlc_rt_workspace_alloc((int64_t)(i + 1) << 16);
    kept += again[9 - i] == b[i];
  }
  CHECK_MSG(kept == 8, "%d of the 8 largest blocks reused", kept);
  for (int i = 0; i < 8; i++) mlc_rt_workspace_free(again[i], (int64_t)(10 - i) << 16);
  CHECK(mlc_rt_workspace_alloc((int64_t)1 << 62) == NULL);
  mlc_rt_workspace_free(NULL, 0);
  mlc_rt_workspace_release();
}

static void *workspace_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 4; i++) {
    char *p = mlc_rt_workspace_alloc((int64_t)(i + 1) << 18);
    if (p) p[0] = 1;
    mlc_rt_workspace_free(p, (int64_t)(i + 1) << 18);
  }
  return NULL; /* its cached blocks are freed at exit (the sanitizers check) */
}

static void test_workspace_threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, workspace_thread, NULL) == 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}

int main(void) {
  RUN(test_every_extent);
  RUN(test_ranges);
  RUN(test_cost_and_default_threads);
  RUN(test_uses_threads);
  RUN(test_same_part_each_call);
  RUN(test_nested);
  RUN(test_sleeping_thread);
  RUN(test_pinned_one_cpu);
  RUN(test_bind_threads);
  RUN(test_workspace_reuse);
  RUN(test_workspace_threads);
  return test_summary();
}
