/* bench/: benchmark programs and their shared report (DESIGN.md section 6).
 *
 * Each program measures a few cases, prints one line per case and merges
 * them into bench/results.json by name, so several programs add to one
 * file:
 *   {"machine": {"cpu": ..., "cores": ..., "date": ...},
 *    "cases": [{"name": "matmul_1024_openblas_2t", "value": 182.1,
 *               "unit": "GFLOP/s", "baseline": "openblas_2t",
 *               "baseline_value": 182.1, "ratio": 1.0, "notes": "..."}]}
 * Timings are medians over repeats: the machine is shared and noisy.
 */
#ifndef MLC_BENCH_RESULTS_H
#define MLC_BENCH_RESULTS_H

#include "base/base.h"

typedef struct bench_case {
  const char *name;
  double value;
  const char *unit;     /* "GFLOP/s", "ms", "us", "replays/s" */
  const char *baseline; /* NULL: none */
  double baseline_value;
  const char *notes;    /* may be NULL */
} bench_case;

/* Print "name: value unit (ratio x baseline)" on stdout. */
void bench_print(const bench_case *c);
/* Merge cases into the results file (replacing cases of the same names);
 * false with err set when the file cannot be read or written. */
bool bench_write_results(const char *path, int n, const bench_case *cases, mlc_error *err);

/* Wall-clock milliseconds (CLOCK_MONOTONIC). */
double bench_now_ms(void);
/* Median of n values (sorts them). */
double bench_median(double *v, int n);
/* Median milliseconds per call of fn(ctx): a warm-up call, then `repeat`
 * repeats of enough calls to last min_ms each. */
double bench_time_ms(void (*fn)(void *ctx), void *ctx, int repeat, double min_ms);

#endif
