/* bench_measure: the measurement pool.
 *   measure_build_<N>w        builds per second of one batch of random matmul
 *                             schedules with N builder processes (ratio
 *                             against 1 builder)
 *   measure_runner_overhead   wall time of a run request beyond the timed
 *                             calls: JIT load, correctness check, warm-up, IPC
 *   measure_spread_flush / _noflush
 *                             the same kernel measured 20 times through the
 *                             runner: max/min of the 20 mean times, with and
 *                             without the last-level cache flush
 *
 *   bench_measure [--results FILE] [--quick]
 */
#include "bench/results.h"
#include "measure/measure.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *workload_text(int64_t n) {
  mlc_arena *a = mlc_arena_new();
  int64_t shape[3] = {n, n, n};
  mlc_prim_func *f = mlc_task_build(a, mlc_task_find("matmul"), shape);
  mlc_str s = {0};
  mlc_print_func(&s, f);
  mlc_arena_free(a);
  return mlc_str_take(&s);
}

/* Tile i, j, k in two, reorder to i0 j0 k0 i1 k1 j1, vectorize j1,
 * parallelize i0: a typical CPU matmul schedule with random tiles. */
static char *random_trace(const char *text, uint64_t seed) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "mm.py", text, &err);
  mlc_sched *s = mlc_sched_new(m->funcs[0], seed);
  mlc_rv c, *l, f[3][2], t[3][2];
  bool ok = mlc_sched_get_block(s, "C", "main", &c, &err) &&
            mlc_sched_get_loops(s, c, &l, &err) == 3;
  mlc_rv loops[3] = {l[0], l[1], l[2]};
  for (int i = 0; ok && i < 3; i++)
    ok = mlc_sched_sample_perfect_tile(s, loops[i], 2, i == 1 ? 32 : 16, f[i], &err) &&
         mlc_sched_split(s, loops[i], 2,
                         (mlc_operand[]){MLC_OP_RV(f[i][0]), MLC_OP_RV(f[i][1])}, true, t[i],
                         &err);
  ok = ok &&
       mlc_sched_reorder(s, 6, (mlc_rv[]){t[0][0], t[1][0], t[2][0], t[0][1], t[2][1], t[1][1]},
                         &err) &&
       mlc_sched_vectorize(s, t[1][1], &err) && mlc_sched_parallel(s, t[0][0], &err);
  char *js = NULL;
  if (ok) {
    mlc_str o = {0};
    mlc_trace_to_json(&o, mlc_sched_trace(s));
    js = mlc_str_take(&o);
  } else {
    fprintf(stderr, "bench_measure: schedule failed: %s\n", err.msg);
  }
  mlc_sched_free(s);
  mlc_arena_free(a);
  return js;
}

/* Builds per second of the batch with nb builders (compile only). */
static double build_rate(int nb, int n, mlc_measure_cand *c) {
  mlc_measure_opts o = mlc_measure_defaults();
  o.n_builders = nb;
  o.build_only = true;
  mlc_error err;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) {
    fprintf(stderr, "bench_measure: %s\n", err.msg);
    exit(1);
  }
  mlc_measure_result *r = mlc_xmalloc(sizeof *r * (size_t)n);
  /* Warm the workers (process start, LLVM initialization) on one batch. */
  mlc_measure_run_batch(m, nb, c, r, NULL, NULL, &err);
  double t0 = bench_now_ms();
  mlc_measure_run_batch(m, n, c, r, NULL, NULL, &err);
  double ms = bench_now_ms() - t0;
  int ok = 0;
  double busy = 0;
  for (int i = 0; i < n; i++) ok += r[i].status == MLC_MEASURE_OK, busy += r[i].build_sec;
  printf("# %d builder(s): %d builds in %.0f ms, %.2f builds in flight on average\n", nb, n, ms,
         busy / (ms * 1e-3));
  if (ok != n) fprintf(stderr, "bench_measure: %d of %d builds failed\n", n - ok, n);
  mlc_free(r);
  mlc_measure_free(m);
  return n / (ms * 1e-3);
}

/* Median wall time of a run request beyond its one timed call, for a
 * tiny kernel: process round trip, JIT load and unload, correctness check
 * against the cached reference, warm-up. */
static double runner_overhead_ms(int n) {
  mlc_measure_opts o = mlc_measure_defaults();
  o.n_builders = 1;
  o.flush_cache = false;
  o.repeat = 1;
  o.number = 1;
  mlc_error err;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) {
    fprintf(stderr, "bench_measure: %s\n", err.msg);
    exit(1);
  }
  char *mm = workload_text(16);
  mlc_measure_cand *cs = mlc_xmalloc(sizeof *cs * (size_t)n);
  mlc_measure_result *r = mlc_xmalloc(sizeof *r * (size_t)n);
  for (int i = 0; i < n; i++) cs[i] = (mlc_measure_cand){.workload = mm};
  mlc_measure_run_batch(m, 1, cs, r, NULL, NULL, &err); /* warm: reference, JIT */
  mlc_measure_run_batch(m, n, cs, r, NULL, NULL, &err);
  double *over = mlc_xmalloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++) over[i] = (r[i].run_sec - r[i].mean_sec) * 1e3;
  double med = bench_median(over, n);
  mlc_free(over), mlc_free(cs), mlc_free(r), mlc_free(mm);
  mlc_measure_free(m);
  return med;
}

/* n measurements of one candidate: max/min of the means. */
static double spread(mlc_measure_cand *c, bool flush, int n) {
  mlc_measure_opts o = mlc_measure_defaults();
  o.n_builders = 1;
  o.flush_cache = flush;
  o.repeat = 3;
  o.number = 1;
  o.min_repeat_ms = 20;
  mlc_error err;
  mlc_measure *m = mlc_measure_new(&o, &err);
  if (!m) {
    fprintf(stderr, "bench_measure: %s\n", err.msg);
    exit(1);
  }
  mlc_measure_cand *cs = mlc_xmalloc(sizeof *cs * (size_t)n);
  mlc_measure_result *r = mlc_xmalloc(sizeof *r * (size_t)n);
  for (int i = 0; i < n; i++) cs[i] = *c;
  mlc_measure_run_batch(m, n, cs, r, NULL, NULL, &err);
  double lo = 1e30, hi = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].status != MLC_MEASURE_OK) {
      fprintf(stderr, "bench_measure: %s\n", r[i].error);
      exit(1);
    }
    lo = r[i].mean_sec < lo ? r[i].mean_sec : lo;
    hi = r[i].mean_sec > hi ? r[i].mean_sec : hi;
  }
  mlc_free(cs), mlc_free(r);
  mlc_measure_free(m);
  return hi / lo;
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json";
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      fprintf(stderr, "usage: bench_measure [--results FILE] [--quick]\n");
      return 2;
    }
  }
  int n = quick ? 8 : 24;
  char *mm = workload_text(256);
  char **traces = mlc_xmalloc(sizeof(char *) * (size_t)n);
  mlc_measure_cand *c = mlc_xmalloc(sizeof *c * (size_t)n);
  for (int i = 0; i < n; i++) {
    traces[i] = random_trace(mm, 1000 + (uint64_t)i);
    if (!traces[i]) return 1;
    c[i] = (mlc_measure_cand){.workload = mm, .trace = traces[i]};
  }
  double r1 = build_rate(1, n, c), r2 = build_rate(2, n, c);
  int reps = quick ? 8 : 20;
  double overhead = runner_overhead_ms(reps);
  double s_flush = spread(&c[0], true, reps);
  double s_noflush = spread(&c[0], false, reps);
  char notes[256], load[64] = "?";
  FILE *lf = fopen("/proc/loadavg", "r");
  if (lf) {
    if (!fgets(load, sizeof load, lf)) snprintf(load, sizeof load, "?");
    fclose(lf);
    load[strcspn(load, " ")] = 0;
  }
  snprintf(notes, sizeof notes,
           "%d random tilings of matmul 256^3 (vectorized, parallel); load average %s on %d cores",
           n, load, mlc_target_host_cores());
  bench_case cases[] = {
      {"measure_build_1w", r1, "builds/s", NULL, 0, notes},
      {"measure_build_2w", r2, "builds/s", "measure_build_1w", r1, notes},
      {"measure_runner_overhead", overhead, "ms", NULL, 0,
       "median wall time of a run request of matmul 16^3 beyond its one timed call (IPC, JIT "
       "load, check against the cached reference, warm-up)"},
      {"measure_spread_flush", s_flush, "max/min", NULL, 0,
       "one matmul 256^3 candidate measured 20 times (3 repeats >= 20 ms), LLC flushed between repeats"},
      {"measure_spread_noflush", s_noflush, "max/min", "measure_spread_flush", s_flush,
       "the same without the flush"},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) bench_print(&cases[i]);
  mlc_error err;
  if (!bench_write_results(results, MLC_COUNTOF(cases), cases, &err)) {
    fprintf(stderr, "bench_measure: %s\n", err.msg);
    return 1;
  }
  for (int i = 0; i < n; i++) mlc_free(traces[i]);
  mlc_free(traces), mlc_free(c), mlc_free(mm);
  return 0;
}
