/* mlc_parallel_for_range (and mlc_parallel_for on it) on our own thread
 * team (see mlcrt.h for the contract).
 *
 * Why not OpenMP: an OpenMP parallel region ends at a barrier that every
 * thread of the team must reach, so on a machine where another process
 * holds a core the region waits for a thread the OS has not scheduled yet
 * (a time slice, milliseconds, for a kernel of microseconds). Here the
 * region ends when every *claimed* chunk is done: a thread that is not
 * running claims nothing, and the threads that run (the caller always
 * among them) take its share.
 *
 * The team: one process-wide set of workers, created on the first parallel
 * loop and grown when a loop asks for more threads, never shrunk. A worker
 * spins for a short while after its last chunk (back-to-back kernels of a
 * model find it awake), then sleeps on a futex, so an idle team costs
 * nothing. A child after fork() starts a new team on its first loop.
 *
 * Sharing a CPU: Linux may wake a worker that slept (after the caller ran
 * alone for a while: a measurement's cache flush) on the caller's CPU and
 * leave both there for tens of milliseconds while the other CPU idles:
 * measured on a 2-CPU VM, a 2-thread kernel ran at one thread's speed
 * (0.62 -> 1.06 ms) in 3 of every 5 timings, and a whole model in spells
 * of seconds (3.5 -> 5.5 ms). So a worker that finds itself on the CPU
 * the caller started the loop on moves off it: its affinity becomes the
 * team's CPUs but that one (one system call, only then).
 * Binding (MLC_BIND_THREADS=1): the thread that starts the team is bound
 * to the first CPU of its mask, each worker to one of the others; the
 * runner that times candidates binds.
 *
 * One loop at a time: the current loop is `state` (one 64-bit word: the
 * loop's generation and its chunk count) plus the fields fn, closure, n,
 * chunk and participants, written by the caller before it publishes the
 * new state. Each participant has a home range of chunks, the same part of
 * the loop every time (participant 0, the caller, the first): a kernel
 * called again finds the data it last touched in its core's own L2 (a
 * residual add+ReLU of 2.4 MB on 2 cores, every chunk taken by whichever
 * thread came first: 33 us a call; each core its own half: 23 us). A
 * home is a word like `state` (the generation, its next chunk and its
 * end), set by the caller before it publishes the state; a thread claims
 * a chunk by a CAS of a home word of the loop's generation, its own first,
 * then the others' (a thread that is not running leaves its home to the
 * rest). Fields read after loading `state` and before a successful claim
 * belong to that loop: the caller writes the next loop's fields only after
 * every chunk of this one is claimed and done, and the next generation's
 * home words fail a claim of this one. Chunks done are counted in `done`;
 * the caller returns when it reaches the chunk count, so it never touches
 * a worker that did not wake, and a worker never touches the closure after
 * its last chunk. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* syscall, clock_gettime under -std=c11 */
#endif
#include "targets/runtime/mlcrt.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024
/* Chunks per thread: a thread that loses its core in the middle of a
 * chunk holds the loop up by at most one chunk of work. */
#define CHUNKS_PER_THREAD 8
/* The state word holds chunk indices in 16 bits. */
#define MAX_CHUNKS 65535
/* Cost units (stores executed, see mlcrt.h) a chunk should hold at least,
 * so one atomic claim (tens of ns, more when threads contend) stays small
 * next to the work; and below which a whole loop runs serially, because
 * waking a sleeping worker (a futex call, microseconds) costs more. */
#define MIN_CHUNK_COST 1024
#define MIN_PARALLEL_COST 8192
/* How long a worker spins for the next loop before it sleeps, and the
 * caller for chunks in flight before it sleeps; a spinning thread yields
 * its core every SPIN_YIELD rounds, so on a core shared with the thread it
 * waits for (or with another process) it does not hold that thread off. */
#define WORKER_SPIN_NS 50000
#define CALLER_SPIN_NS 20000
#define SPIN_YIELD 256

typedef struct worker {
  _Alignas(64) uint32_t seq; /* futex word: bumped to hand the worker a new loop */
  uint32_t sleeping;         /* 1 while the worker is in (or about to enter) futex_wait */
  int index;                 /* 0-based; the caller is not a worker */
  int cpu;                   /* the CPU it binds itself to (MLC_BIND_THREADS); -1: none */
  struct team *team;
  pthread_t thread;
} worker;

/* A participant's range of chunks: gen << 32 | next << 16 | end. */
typedef struct home {
  _Alignas(64) uint64_t word;
} home;

typedef struct team {
  _Alignas(64) uint64_t state; /* gen << 32 | nchunks */
  /* The current loop; read by workers only between a load of `state` and
   * a successful CAS of it (see above). Accessed atomically (relaxed). */
  void (*fn)(int64_t, int64_t, void *);
  void *closure;
  int64_t n, chunk;
  int32_t participants; /* threads that may take part, the caller included */
  _Alignas(64) uint32_t done; /* futex word: chunks of the current loop done */
  uint32_t caller_waiting;    /* 1 while the caller sleeps on `done` */
  _Alignas(64) pthread_mutex_t region; /* held by the caller of the current loop */
  int n_workers;                       /* workers started (grows under `region`) */
  int n_cpus;                          /* > 1: bind worker k to cpus[(k + 1) % n_cpus] */
  int16_t cpus[MAX_THREADS];
  int caller_cpu;                       /* where the current loop's caller started it; -1: unknown */
  uint64_t cpu_set[MAX_THREADS / 64];   /* the CPUs the team's creator could run on */
  worker *workers[MAX_THREADS];
  home homes[MAX_THREADS]; /* participant 0 is the caller, k + 1 worker k */
} team;

static team *g_team;
static pthread_mutex_t g_team_lock = PTHREAD_MUTEX_INITIALIZER;
/* > 0 inside a loop body (workers always): nested loops run serially. */
static __thread int t_in_region;

/* ---- small helpers ------------------------------------------------------- */

static long futex(uint32_t *addr, int op, uint32_t val) {
  return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static inline uint64_t pack(uint32_t gen, uint32_t next, uint32_t nchunks) {
  return (uint64_t)gen << 32 | (uint64_t)next << 16 | nchunks;
}
static inline uint32_t st_gen(uint64_t s) { return (uint32_t)(s >> 32); }
static inline uint32_t st_next(uint64_t s) { return (uint32_t)(s >> 16) & 0xffff; }
static inline uint32_t st_nchunks(uint64_t s) { return (uint32_t)s & 0xffff; }
static inline uint32_t st_end(uint64_t s) { return (uint32_t)s & 0xffff; } /* a home's */

/* The calling thread's CPU mask (taskset's); the number of CPUs in it.
 * The raw system call: sched_getaffinity() and CPU_COUNT need
 * _GNU_SOURCE before any libc header, which a user compiling this file
 * may not give. */
static int cpu_mask(uint64_t mask[MAX_THREADS / 64]) {
  memset(mask, 0, MAX_THREADS / 8);
  long bytes = syscall(SYS_sched_getaffinity, 0, MAX_THREADS / 8, mask);
  int n = 0;
  for (long i = 0; i < bytes / 8; i++) n += __builtin_popcountll(mask[i]);
  return n;
}

/* CPUs this process may run on, at least 1. */
static int available_cpus(void) {
  uint64_t mask[MAX_THREADS / 64];
  int n = cpu_mask(mask);
  if (n > 0) return n;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int)online : 1;
}

int mlc_rt_num_threads(int32_t num_threads) {
  /* getenv on every call: cheap next to a parallel loop, and a test or
   * tool may change the variable between runs. */
  const char *env = getenv("MLC_NUM_THREADS");
  if (env && *env) {
    long v = strtol(env, NULL, 10);
    if (v > 0) return v > MAX_THREADS ? MAX_THREADS : (int)v;
  }
  if (num_threads > 0) return num_threads > MAX_THREADS ? MAX_THREADS : num_threads;
  return available_cpus();
}

/* ---- claiming and running chunks ----------------------------------------- */

/* Claim a chunk of generation gen from participant q's home: its index
 * in *k, false when the home is spent or the loop is another one. */
static bool claim(team *t, int q, uint32_t gen, uint32_t *k) {
  uint64_t h = __atomic_load_n(&t->homes[q].word, __ATOMIC_ACQUIRE);
  for (;;) {
    if (st_gen(h) != gen || st_next(h) >= st_end(h)) return false;
    /* Release: the field loads before it complete before the claim. */
    if (__atomic_compare_exchange_n(&t->homes[q].word, &h, h + (1u << 16), false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      *k = st_next(h);
      return true;
    }
  }
}

/* Claim and run chunks of the current loop until none is left, from this
 * thread's home first; `index` is the worker's (-1: the caller, who always
 * takes part). */
static void run_chunks(team *t, int index) {
  uint64_t s = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
  uint32_t gen = st_gen(s), nchunks = st_nchunks(s);
  void (*fn)(int64_t, int64_t, void *) = __atomic_load_n(&t->fn, __ATOMIC_RELAXED);
  void *closure = __atomic_load_n(&t->closure, __ATOMIC_RELAXED);
  int64_t n = __atomic_load_n(&t->n, __ATOMIC_RELAXED);
  int64_t chunk = __atomic_load_n(&t->chunk, __ATOMIC_RELAXED);
  int32_t parts = __atomic_load_n(&t->participants, __ATOMIC_RELAXED);
  /* Fewer threads asked for than this worker's index (a torn read here
   * only makes a worker skip a loop: the others run what it leaves). */
  if (index >= parts - 1) return;
  uint32_t k;
  for (int i = 0; i < parts; i++)
    for (int q = (index + 1 + i) % parts; claim(t, q, gen, &k);) {
      int64_t lo = (int64_t)k * chunk, hi = lo + chunk < n ? lo + chunk : n;
      fn(lo, hi, closure);
      if (__atomic_add_fetch(&t->done, 1, __ATOMIC_SEQ_CST) == nchunks &&
          __atomic_load_n(&t->caller_waiting, __ATOMIC_SEQ_CST))
        futex(&t->done, FUTEX_WAKE_PRIVATE, 1);
    }
}

/* ---- workers ---------------------------------------------------------------- */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin until *word differs from `seen` or ns have passed; the last value. */
static uint32_t spin_while(uint32_t *word, uint32_t seen, int64_t ns) {
  int64_t end = 0;
  for (int i = 1;; i++) {
    uint32_t cur = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (cur != seen) return cur;
    cpu_relax();
    if (i % 32 == 0) {
      int64_t t = now_ns();
      if (!end) end = t + ns;
      else if (t >= end) return cur;
    }
    if (i % SPIN_YIELD == 0) sched_yield();
  }
}

/* Wait until w->seq differs from `seen`: spin, then sleep. */
static uint32_t wait_for_work(worker *w, uint32_t seen) {
  uint32_t cur = spin_while(&w->seq, seen, WORKER_SPIN_NS);
  if (cur != seen) return cur;
  for (;;) {
    __atomic_store_n(&w->sleeping, 1, __ATOMIC_SEQ_CST);
    cur = __atomic_load_n(&w->seq, __ATOMIC_SEQ_CST);
    if (cur == seen) futex(&w->seq, FUTEX_WAIT_PRIVATE, seen);
    __atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
    cur = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
    if (cur != seen) return cur;
  }
}

/* glibc's and musl's, declared here: <sched.h> declares it only under
 * _GNU_SOURCE, which a user compiling this file may not define. */
int sched_getcpu(void);

/* Unbound worker w, on the CPU where the caller started the current loop,
 * moves to the team's other CPUs (see the top of the file). */
static void leave_callers_cpu(worker *w) {
  team *t = w->team;
  int c = __atomic_load_n(&t->caller_cpu, __ATOMIC_RELAXED);
  if (c < 0 || c >= MAX_THREADS || sched_getcpu() != c) return;
  uint64_t mask[MAX_THREADS / 64];
  memcpy(mask, t->cpu_set, sizeof mask);
  mask[c / 64] &= ~(1ull << (c % 64));
  bool other = false;
  for (int i = 0; i < MAX_THREADS / 64; i++) other |= mask[i] != 0;
  if (other) syscall(SYS_sched_setaffinity, 0, sizeof mask, mask); /* advice: a refusal changes nothing */
}

static void bind_to(int cpu) {
  uint64_t mask[MAX_THREADS / 64] = {0};
  mask[cpu / 64] = 1ull << (cpu % 64);
  syscall(SYS_sched_setaffinity, 0, sizeof mask, mask); /* advice: a refusal changes nothing */
}

/* With MLC_BIND_THREADS=1, the CPUs of the calling thread's mask into
 * t->cpus, and the caller bound to the first; else no binding. */
static void plan_binding(team *t) {
  t->n_cpus = 0;
  const char *env = getenv("MLC_BIND_THREADS");
  if (!env || strcmp(env, "1") != 0) return;
  uint64_t mask[MAX_THREADS / 64];
  if (cpu_mask(mask) <= 1) return;
  for (int c = 0; c < MAX_THREADS; c++)
    if (mask[c / 64] >> (c % 64) & 1) t->cpus[t->n_cpus++] = (int16_t)c;
  bind_to(t->cpus[0]);
}

static void *worker_main(void *arg) {
  worker *w = arg;
  t_in_region = 1;
  if (w->cpu >= 0) bind_to(w->cpu);
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_work(w, seen);
    if (w->cpu < 0) leave_callers_cpu(w);
    run_chunks(w->team, w->index);
  }
  return NULL;
}

/* Start workers until the team has `want`; requires t->region held. On a
 * failed thread start the team stays smaller (loops still finish: the
 * caller runs every chunk nobody else claims). */
static void grow_team(team *t, int want) {
  if (want > MAX_THREADS - 1) want = MAX_THREADS - 1;
  while (t->n_workers < want) {
    worker *w = aligned_alloc(64, sizeof *w);
    if (!w) return;
    memset(w, 0, sizeof *w);
    w->index = t->n_workers;
    w->cpu = t->n_cpus > 1 ? t->cpus[(w->index + 1) % t->n_cpus] : -1;
    w->team = t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&w->thread, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      free(w);
      return;
    }
    t->workers[t->n_workers++] = w;
  }
}

/* The child of a fork has none of the parent's workers (and perhaps a
 * locked region mutex): it starts a new team. The old one is leaked. */
static void after_fork_child(void) {
  g_team = NULL;
  pthread_mutex_init(&g_team_lock, NULL);
}

static team *get_team(void) {
  team *t = __atomic_load_n(&g_team, __ATOMIC_ACQUIRE);
  if (t) return t;
  pthread_mutex_lock(&g_team_lock);
  t = g_team;
  if (!t && (t = aligned_alloc(64, sizeof *t)) != NULL) {
    static int atfork_done;
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->region, NULL);
    cpu_mask(t->cpu_set);
    plan_binding(t);
    if (!atfork_done) atfork_done = pthread_atfork(NULL, NULL, after_fork_child) == 0;
    __atomic_store_n(&g_team, t, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_team_lock);
  return t;
}

/* ---- the loop ----------------------------------------------------------------- */


/* Iterations per chunk: about CHUNKS_PER_THREAD chunks per thread, none
 * cheaper than MIN_CHUNK_COST, at most MAX_CHUNKS chunks. */
static int64_t chunk_size(int64_t n, int64_t cost, int nt) {
  int64_t chunk = (n + (int64_t)nt * CHUNKS_PER_THREAD - 1) / ((int64_t)nt * CHUNKS_PER_THREAD);
  int64_t by_cost = (MIN_CHUNK_COST + cost - 1) / cost;
  if (chunk < by_cost) chunk = by_cost;
  if (chunk < (n + MAX_CHUNKS - 1) / MAX_CHUNKS) chunk = (n + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return chunk < 1 ? 1 : chunk;
}

/* Wait until all `nchunks` chunks are done: spin, then sleep on `done`. */
static void wait_done(team *t, uint32_t nchunks) {
  uint32_t d = __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
  while (d != nchunks) {
    uint32_t cur = spin_while(&t->done, d, CALLER_SPIN_NS);
    if (cur != d) {
      d = cur;
      continue;
    }
    __atomic_store_n(&t->caller_waiting, 1, __ATOMIC_SEQ_CST);
    d = __atomic_load_n(&t->done, __ATOMIC_SEQ_CST);
    if (d != nchunks) futex(&t->done, FUTEX_WAIT_PRIVATE, d);
    __atomic_store_n(&t->caller_waiting, 0, __ATOMIC_RELAXED);
    d = __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
  }
}

void mlc_parallel_for_range(int64_t n, void (*fn)(int64_t lo, int64_t hi, void *closure), void *closure,
                            int32_t num_threads, int64_t cost) {
  if (n <= 0) return;
  if (cost < 1) cost = 1;
  int nt = mlc_rt_num_threads(num_threads);
  if (nt <= 1 || n == 1 || t_in_region ||
      (cost < MIN_PARALLEL_COST && n * cost < MIN_PARALLEL_COST)) {
    fn(0, n, closure);
    return;
  }
  int64_t chunk = chunk_size(n, cost, nt);
  int64_t nchunks = (n + chunk - 1) / chunk;
  int parts = nchunks < nt ? (int)nchunks : nt;
  team *t = parts > 1 ? get_team() : NULL;
  /* Another thread of the process runs a loop on the team: run this one
   * serially rather than wait for it. */
  if (!t || pthread_mutex_trylock(&t->region) != 0) {
    fn(0, n, closure);
    return;
  }
  grow_team(t, parts - 1);
  if (parts - 1 > t->n_workers) parts = t->n_workers + 1;

  __atomic_store_n(&t->fn, fn, __ATOMIC_RELAXED);
  __atomic_store_n(&t->closure, closure, __ATOMIC_RELAXED);
  __atomic_store_n(&t->n, n, __ATOMIC_RELAXED);
  __atomic_store_n(&t->chunk, chunk, __ATOMIC_RELAXED);
  __atomic_store_n(&t->participants, parts, __ATOMIC_RELAXED);
  __atomic_store_n(&t->done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&t->caller_cpu, t->n_cpus > 1 ? -1 : sched_getcpu(), __ATOMIC_RELAXED);
  uint32_t gen = st_gen(__atomic_load_n(&t->state, __ATOMIC_RELAXED)) + 1;
  for (int p = 0; p < parts; p++)
    __atomic_store_n(&t->homes[p].word,
                     pack(gen, (uint32_t)(nchunks * p / parts), (uint32_t)(nchunks * (p + 1) / parts)),
                     __ATOMIC_RELAXED);
  __atomic_store_n(&t->state, pack(gen, 0, (uint32_t)nchunks), __ATOMIC_RELEASE);
  for (int k = 0; k < parts - 1; k++) {
    worker *w = t->workers[k];
    __atomic_add_fetch(&w->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w->sleeping, __ATOMIC_SEQ_CST)) futex(&w->seq, FUTEX_WAKE_PRIVATE, 1);
  }
  t_in_region = 1;
  run_chunks(t, -1);
  wait_done(t, (uint32_t)nchunks);
  t_in_region = 0;
  pthread_mutex_unlock(&t->region);
}

/* mlc_parallel_for's iterations as ranges: fn on each index of one. */
typedef struct each_index {
  void (*fn)(int64_t i, void *closure);
  void *closure;
} each_index;

static void run_each(int64_t lo, int64_t hi, void *p) {
  const each_index *e = p;
  for (int64_t i = lo; i < hi; i++) e->fn(i, e->closure);
}

void mlc_parallel_for(int64_t n, void (*fn)(int64_t i, void *closure), void *closure,
                      int32_t num_threads, int64_t cost) {
  each_index e = {fn, closure};
  mlc_parallel_for_range(n, run_each, &e, num_threads, cost);
}
