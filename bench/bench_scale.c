/* Scaling of whole pipelines: seconds for a model of
 * n nodes through every graph pass, a trace of n instructions read and
 * replayed, a TVMScript function of n statements parsed, verified,
 * printed and parsed again, at n = 1,000, 3,000 and 10,000. Linear growth
 * shows as a 10k/1k ratio near 10 (tests/test_graph_scale.c asserts a generous
 * bound on it).
 *
 *   bench_scale [--results FILE]
 */
#include "bench/results.h"
#include "tests/scale_inputs.h"

#include <stdio.h>
#include <string.h>

typedef double (*scale_fn)(int n, mlc_error *err);

/* The best of three runs: the machine is shared. */
static double best_of(scale_fn fn, int n, mlc_error *err) {
  double best = -1;
  for (int r = 0; r < 3; r++) {
    double t = fn(n, err);
    if (t < 0) return -1;
    if (best < 0 || t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json";
  if (argc == 3 && strcmp(argv[1], "--results") == 0) results = argv[2];
  else if (argc != 1) {
    fprintf(stderr, "usage: bench_scale [--results FILE]\n");
    return 2;
  }
  static const struct {
    const char *name, *what;
    scale_fn fn;
  } kinds[] = {
      {"model", "graph pipeline of a relu/add chain model", scale_run_model},
      {"trace", "trace JSON read + replay on matmul 64^3", scale_run_trace},
      {"script", "TVMScript parse + verify + print + parse", scale_run_script},
  };
  static const int sizes[] = {1000, 3000, 10000};
  mlc_arena *a = mlc_arena_new();
  bench_case cases[3 * 3];
  int nc = 0;
  mlc_error err = {{0}};
  for (int k = 0; k < 3; k++) {
    double t[3];
    for (int i = 0; i < 3; i++) {
      t[i] = best_of(kinds[k].fn, sizes[i], &err);
      if (t[i] < 0) {
        fprintf(stderr, "bench_scale: error: %s of %d: %s\n", kinds[k].name, sizes[i], err.msg);
        return 1;
      }
    }
    for (int i = 0; i < 3; i++)
      cases[nc++] = (bench_case){
          mlc_arena_printf(a, "scale_%s_%d", kinds[k].name, sizes[i]), t[i] * 1e3, "ms", NULL, 0,
          mlc_arena_printf(a, "%s of %d; %d/1000 time ratio %.1f (linear: %.0f)", kinds[k].what,
                           sizes[i], sizes[i], t[i] / t[0], sizes[i] / 1000.0)};
  }
  for (int i = 0; i < nc; i++) bench_print(&cases[i]);
  bool ok = bench_write_results(results, nc, cases, &err);
  if (!ok) fprintf(stderr, "bench_scale: error: %s\n", err.msg);
  mlc_arena_free(a);
  return ok ? 0 : 1;
}
