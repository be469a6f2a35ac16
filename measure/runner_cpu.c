/* measure: the CPU runner (runner_internal.h): ELF objects loaded with
 * ORC into the worker, called in-process, timed with mlc_time_calls while
 * each repeat is watched for interference from other processes. */
#include "measure/runner_internal.h"
#include "targets/runtime/mlcrt.h"
#include "targets/targets.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Interference thresholds. The calling thread runs chunks for the whole
 * call (the runtime ends a loop when every claimed chunk is done and the
 * caller claims chunks too; it sleeps only while a worker finishes a last
 * chunk), so its CPU time is close to the wall time unless the OS took its
 * core. An involuntary switch happens when another
 * runnable task wants the core; a quiet machine gives a handful per
 * second. Repeats of one kernel on a quiet machine differ by a few per
 * cent; twice the fastest is a slice lost to another process. */
#define WATCH_MIN_CALLER_RATIO 0.85
#define WATCH_IVCSW_BASE 3
#define WATCH_IVCSW_PER_SEC 20.0
#define WATCH_MAX_SPREAD 2.0
/* A parallel kernel whose workers were taken off their cores does not wait
 * for them (the caller runs their chunks), so its time shows only as CPU
 * missing: its T threads used much less than T x wall. Judged on windows
 * long enough that waking the workers does not weigh, and only with
 * switches seen (a loop too small to go parallel leaves them asleep on a
 * quiet machine too). */
#define WATCH_MIN_PARALLEL_WALL 2.5e-4
#define WATCH_MIN_WORKER_SHARE 0.5
/* Threads waiting runnable for a CPU (run-queue delay, all threads
 * summed) for more than this share of a repeat's wall time, and at least
 * WATCH_MIN_WAIT: another process (or the caller, on a shared CPU) held
 * their cores. Waking a worker costs microseconds of it per loop. */
#define WATCH_MAX_WAIT_SHARE 0.25
#define WATCH_MIN_WAIT 5e-5
/* Attempts after the first when an attempt was disturbed. */
#define WATCH_RETRIES 2
/* The machine's speed, probed before each repeat (speed_probe): a repeat
 * whose probe took this much longer than the fastest this worker has
 * seen ran on a machine lending fewer cores than it has. A shared 2-vCPU
 * guest loses its second CPU for seconds at a time: a 2-thread kernel
 * then takes up to twice as long with nothing in the guest to show it (no
 * switch, no wait, no steal time), and a candidate timed then against one
 * timed before is compared across machines. */
#define WATCH_MAX_PROBE_SLOWDOWN 1.3
/* Dependent multiply-adds per thread of the probe: about 30 us at 3 GHz. */
#define PROBE_STEPS 20000

/* Judge one repeat: wall seconds, its CPU seconds (process, caller) and
 * switches of a kernel whose parallel loops use `threads`; the first sign
 * found names the attempt disturbed. */
static void watch_repeat(timing_watch *w, uint32_t threads, double wall, double cpu,
                         double caller, long sw, double wait) {
  double cr = wall > 0 ? caller / wall : 1;
  if (cr < w->caller_ratio) w->caller_ratio = cr;
  w->ivcsw += sw;
  w->cpu_ratio = fmax(w->cpu_ratio, wall > 0 ? cpu / wall : 0);
  if (w->disturbed) return;
  if (sw > WATCH_IVCSW_BASE + (long)(wall * WATCH_IVCSW_PER_SEC)) {
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "%ld involuntary context switches in %.3g s", sw, wall);
  } else if (wait > WATCH_MIN_WAIT && wait > WATCH_MAX_WAIT_SHARE * wall) {
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "threads waited %.3g s for a CPU in %.3g s", wait, wall);
  } else if (cr < WATCH_MIN_CALLER_RATIO && wall > 50e-6 && sw > 0) {
    /* Shorter windows: the two clock reads themselves weigh in. Without an
     * involuntary switch the caller slept by itself (waiting on a worker's
     * last chunk of a parallel loop), which is the kernel's own time. */
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "the calling thread ran %.0f%% of the wall time", cr * 100);
  } else if (threads > 1 && wall >= WATCH_MIN_PARALLEL_WALL && sw > 0 &&
             /* threads is at most the usable CPUs (run_checked) */
             cpu < wall * (1 + WATCH_MIN_WORKER_SHARE * (threads - 1))) {
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "%u threads got %.2f cores' worth of CPU (%ld involuntary "
             "switches)", threads, cpu / wall, sw);
  }
}

/* The probe's loop: a chain of multiply-adds on each thread, which only
 * the cores the thread gets can speed up. */
static void probe_chunk(int64_t i, void *closure) {
  volatile float *sink = closure;
  float a = 1.0f + (float)i * 1e-9f, b = 0.5f;
  for (int k = 0; k < PROBE_STEPS; k++) a = a * 0.9999f + b, b = b * 0.9999f + 1e-7f;
  sink[i % 2] = a + b;
}

/* Seconds of the probe on the runtime's team with `threads` threads (the
 * kernel's; ud points to them), which also wakes the team before the
 * repeat. */
static double speed_probe(void *ud) {
  uint32_t threads = *(const uint32_t *)ud;
  static float sink[2];
  double t = mlc_now_sec();
  /* cost: the whole chain per iteration, so the runtime runs it in parallel */
  mlc_parallel_for(threads, probe_chunk, sink, (int32_t)threads, (int64_t)PROBE_STEPS * 8);
  return mlc_now_sec() - t;
}

bool mlc_runner_probe_slow(double *best, double probe) {
  if (probe <= 0) return false;
  if (*best <= 0 || probe < *best) *best = probe;
  return probe > WATCH_MAX_PROBE_SLOWDOWN * *best;
}

/* The fastest probe of this process, over all its candidates. */
static double best_probe;

static void watch_probe(timing_watch *w, double probe) {
  if (mlc_runner_probe_slow(&best_probe, probe) && !w->disturbed) {
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "a calibration loop ran at %.0f%% of its best speed (fewer cores lent)",
             100 * best_probe / probe);
  }
}

static void watch_spread(timing_watch *w, int n, const double *secs) {
  double lo = secs[0], hi = secs[0];
  for (int i = 1; i < n; i++) lo = fmin(lo, secs[i]), hi = fmax(hi, secs[i]);
  if (!w->disturbed && n > 1 && hi > WATCH_MAX_SPREAD * lo) {
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "repeats spread from %.3g to %.3g s", lo, hi);
  }
}

typedef struct timed_call {
  mlc_kernel_fn fn;
  int n;
  mlc_array *xs;
} timed_call;

static bool call_kernel(void *ctx) {
  timed_call *c = ctx;
  return mlc_kernel_call(c->fn, c->n, c->xs) == 0;
}

typedef struct watch_ctx {
  timing_watch *w;
  uint32_t threads;
  double first_wall; /* the first repeat's, all its calls */
} watch_ctx;

static void watch_hook(void *ud, int r, const mlc_timing_repeat *rep) {
  watch_ctx *c = ud;
  if (r == 0) c->first_wall = rep->wall;
  watch_probe(c->w, rep->probe);
  watch_repeat(c->w, c->threads, rep->wall, rep->cpu, rep->caller, rep->ivcsw, rep->wait);
}

static bool time_kernel(const run_req *q, mlc_kernel_fn fn, mlc_array *xs, double *secs,
                        timing_watch *w, mlc_error *err) {
  *w = (timing_watch){.caller_ratio = 1};
  timed_call c = {fn, q->n_args, xs};
  watch_ctx wc = {w, q->threads, 0};
  uint32_t threads = q->threads;
  mlc_timing_opts o = {.repeat = (int)q->repeat, .number = q->number,
                       .min_repeat_sec = q->min_repeat_ms * 1e-3, .flush_cache = q->flush,
                       .probe = speed_probe, .probe_ud = &threads};
  if (mlc_time_calls(call_kernel, &c, &o, secs, watch_hook, &wc, err) < 0) return false;
  if (q->fault == MLC_FAULT_RUN_DISTURB && !w->disturbed) {
    w->disturbed = true;
    snprintf(w->why, sizeof w->why, "injected disturbance");
  }
  /* Repeats under a millisecond differ by their cold start alone. */
  if (wc.first_wall >= 1e-3) watch_spread(w, (int)q->repeat, secs);
  return true;
}

static double mean_of(int n, const double *x) {
  double s = 0;
  for (int i = 0; i < n; i++) s += x[i];
  return s / n;
}

/* Time, and time again (at most WATCH_RETRIES more, and none that would
 * end past the request's re-timing budget) while an attempt was disturbed.
 * Keeps the first undisturbed attempt, else the fastest. */
static bool time_watched(const run_req *q, mlc_kernel_fn fn, mlc_array *xs, double *secs,
                         timing_watch *w, int *retimes, mlc_error *err) {
  double try_secs[MLC_MEASURE_MAX_REPEAT];
  timing_watch tw;
  *retimes = 0;
  double t0 = mlc_now_sec();
  if (!time_kernel(q, fn, xs, secs, w, err)) return false;
  double last = mlc_now_sec() - t0;
  while (w->disturbed && *retimes < WATCH_RETRIES &&
         mlc_now_sec() + last - q->start <= q->retime_budget_s) {
    t0 = mlc_now_sec();
    ++*retimes;
    if (!time_kernel(q, fn, xs, try_secs, &tw, err)) return false;
    last = mlc_now_sec() - t0;
    if (!tw.disturbed || mean_of((int)q->repeat, try_secs) < mean_of((int)q->repeat, secs)) {
      memcpy(secs, try_secs, sizeof(double) * q->repeat);
      *w = tw;
    }
  }
  return true;
}

typedef struct cpu_kernel {
  mlc_jit_lib *lib;
  mlc_kernel_fn fn;
} cpu_kernel;

static bool cpu_owns(const void *obj, size_t len) {
  return len >= 4 && memcmp(obj, "\x7f" "ELF", 4) == 0;
}

static bool cpu_available(mlc_error *err) { return true; }

static void *cpu_load(const void *obj, size_t len, const char *symbol, mlc_error *err) {
  mlc_object o = {(void *)obj, len};
  mlc_jit_lib *lib = mlc_jit_load(&o, err);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, symbol, err) : NULL;
  if (!fn) {
    mlc_jit_unload(lib);
    return NULL;
  }
  cpu_kernel *k = mlc_xmalloc(sizeof *k);
  *k = (cpu_kernel){lib, fn};
  return k;
}

static bool cpu_call(void *p, int n, mlc_array *args, int32_t *rc, mlc_error *err) {
  *rc = mlc_kernel_call(((cpu_kernel *)p)->fn, n, args);
  return true;
}

static bool cpu_time(void *p, const run_req *q, mlc_array *args, double *secs, timing_watch *w,
                     int *retimes, mlc_error *err) {
  return time_watched(q, ((cpu_kernel *)p)->fn, args, secs, w, retimes, err);
}

static void cpu_unload(void *p) {
  cpu_kernel *k = p;
  if (!k) return;
  mlc_jit_unload(k->lib);
  mlc_free(k);
}

const runner_impl runner_cpu = {
    .name = "cpu",
    .owns = cpu_owns,
    .available = cpu_available,
    .load = cpu_load,
    .call = cpu_call,
    .time = cpu_time,
    .unload = cpu_unload,
};

