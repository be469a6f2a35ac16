/* Timing and result checking: the one implementation the measure workers,
 * mlc-ir, mlc-compile and the benches use (measure.h).
 *
 * Timing: one warm-up call, then `repeat` repeats of `number` calls each,
 * more calls when a repeat is shorter than min_repeat_sec (the warm-up
 * estimate may be off by the cold start: a short repeat is redone with
 * more calls, up to four times), the last-level cache written over before
 * each repeat when asked, and each repeat's wall, process CPU and calling
 * thread CPU time, involuntary switches and the time its threads waited
 * runnable for a CPU handed to the caller's hook (the workers judge
 * interference with them).
 *
 * Checking: rtol * |want| + atol * max |want| for floats, exact for
 * integers and bools (docs/PROTOCOL.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#endif
#include "measure/measure.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_NUMBER 100000000ULL

/* ---- the cache flush ------------------------------------------------------ */

/* Bytes of the last-level cache one core sees: sysfs gives the slice
 * (32 MiB on a Zen3 CCX) where sysconf may give the whole socket. */
size_t mlc_measure_llc_bytes(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  long kb = 0;
  char unit = 0;
  if (f) {
    if (fscanf(f, "%ld%c", &kb, &unit) < 1) kb = 0;
    fclose(f);
    if (unit == 'M') kb *= 1024;
  }
  if (kb > 0) return (size_t)kb << 10;
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return llc > 0 ? (size_t)llc : (size_t)32 << 20;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL) */
#endif

/* The flush buffer, faulted in at once: touched page by page, 128 MiB of
 * 4 KiB pages took 1 to 3 s in a loaded VM, which every fresh runner paid
 * inside its first candidate's run timeout. Huge pages where the kernel
 * gives them, populated in one call; plain heap memory if mmap fails. */
static char *flush_buffer(size_t n) {
  size_t huge = (size_t)2 << 20;
  char *p = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return mlc_xmalloc(n);
  char *b = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
  (void)madvise(b, n, MADV_HUGEPAGE);       /* advice only */
  (void)madvise(b, n, MADV_POPULATE_WRITE); /* else the first memset faults it in */
  return b;
}

/* Write over twice the last-level cache (at most 128 MiB) so the next
 * repeat starts cold. The buffer lives as long as the process. */
static void flush_llc(void) {
  static char *buf;
  static size_t n;
  static unsigned char v;
  if (!buf) {
    n = 2 * mlc_measure_llc_bytes();
    if (n > ((size_t)128 << 20)) n = (size_t)128 << 20;
    buf = flush_buffer(n);
  }
  memset(buf, ++v, n);
  __asm__ volatile("" : : "r"(buf) : "memory");
}

/* ---- timing ------------------------------------------------------------------ */

static double cpu_secs(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long ivcsw_now(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_nivcsw : 0;
}

/* Seconds the process's threads have spent runnable but not running (the
 * second field of each /proc/self/task/<tid>/schedstat: run-queue delay),
 * summed; 0 where the kernel does not keep it. A thread of a parallel
 * kernel that waits behind another process, or behind the caller on the
 * caller's CPU, shows here even when nothing switches it out. */
static double wait_secs(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  double ns = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    unsigned long long run, wait;
    if (fgets(buf, sizeof buf, f) && sscanf(buf, "%llu %llu", &run, &wait) == 2) ns += (double)wait;
    fclose(f);
  }
  closedir(d);
  return ns * 1e-9;
}

static uint64_t clamp_number(double x) {
  if (!(x >= 1)) return 1;
  return x >= (double)MAX_NUMBER ? MAX_NUMBER : (uint64_t)ceil(x);
}

/* One repeat of n calls; false if a call failed. */
static bool one_repeat(mlc_timing_fn fn, void *ctx, uint64_t n, mlc_timing_repeat *out) {
  double w0 = wait_secs();
  long sw0 = ivcsw_now();
  double c0 = cpu_secs(CLOCK_PROCESS_CPUTIME_ID), k0 = cpu_secs(CLOCK_THREAD_CPUTIME_ID);
  double t = mlc_now_sec();
  for (uint64_t k = 0; k < n; k++)
    if (!fn(ctx)) return false;
  out->wall = mlc_now_sec() - t;
  out->cpu = cpu_secs(CLOCK_PROCESS_CPUTIME_ID) - c0;
  out->caller = cpu_secs(CLOCK_THREAD_CPUTIME_ID) - k0;
  out->ivcsw = ivcsw_now() - sw0;
  out->wait = wait_secs() - w0;
  out->calls = n;
  return true;
}

int mlc_time_calls(mlc_timing_fn fn, void *ctx, const mlc_timing_opts *o, double *secs,
                   mlc_timing_hook hook, void *ud, mlc_error *err) {
  double t0 = mlc_now_sec();
  if (!fn(ctx)) return mlc_error_set(err, "warm-up call failed"), -1;
  double once = mlc_now_sec() - t0;
  int repeat = o->repeat > 0 ? o->repeat : 1;
  /* Slow functions (an unscheduled 1024^3 matmul takes seconds): fewer
   * repeats, so that the whole measurement stays near max_total_sec. */
  if (o->max_total_sec > 0 && once * repeat > o->max_total_sec)
    repeat = once >= o->max_total_sec ? 1 : (int)(o->max_total_sec / once);
  uint64_t number = o->number > 0 ? o->number : 1;
  if (o->min_repeat_sec > 0 && once * (double)number < o->min_repeat_sec)
    number = clamp_number(o->min_repeat_sec / fmax(once, 1e-9));
  for (int r = 0; r < repeat; r++) {
    mlc_timing_repeat rep;
    for (int tries = 0;; tries++) {
      if (o->flush_cache) flush_llc();
      double probe = o->probe ? o->probe(o->probe_ud) : 0;
      if (!one_repeat(fn, ctx, number, &rep)) return mlc_error_set(err, "timed call failed"), -1;
      rep.probe = probe;
      if (rep.wall >= o->min_repeat_sec || tries == 4 || number >= MAX_NUMBER) break;
      number = clamp_number((double)number * 1.2 * o->min_repeat_sec / fmax(rep.wall, 1e-9));
    }
    secs[r] = rep.wall / (double)number;
    if (hook) hook(ud, r, &rep);
  }
  return repeat;
}

/* ---- checking ------------------------------------------------------------------ */

bool mlc_check_close(const mlc_array *got, const mlc_array *want, double rtol, double atol,
                     double *max_err) {
  if (!mlc_dtype_is_float(want->dtype)) return mlc_array_allclose(got, want, 0, 0, max_err);
  double scale = 0;
  int64_t n = mlc_array_numel(want);
  for (int64_t i = 0; i < n; i++) {
    double v = fabs(mlc_array_get(want, i));
    if (isfinite(v)) scale = fmax(scale, v);
  }
  return mlc_array_allclose(got, want, rtol, atol * scale, max_err);
}
