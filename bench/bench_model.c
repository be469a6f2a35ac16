/* Model latency: the MLP of examples/mlp.json, all in one run:
 *   <model>_tuned             every kernel replayed from its best record
 *   <model>_default_schedule  no records: the default schedule (parallel
 *                             outer loop, vectorized inner loop)
 *   <model>_unscheduled       the lowered kernels as they are
 * The ratios are against the tuned model (value / tuned: the speed-up of
 * tuning). Records come from --db PATH (read only); without it the model is
 * tuned first into a temporary database by the task scheduler (--trials,
 * default 200, gradient scheduler), as `mlc-tune --model` does.
 * Each variant's output is checked against the plain C evaluation of the
 * graph before it is timed. A model run is mlc_graph_execute over the JIT
 * kernels (intermediates allocated per run, the same for every variant).
 * Case names end in _<N>t, N the target's -num-cores: kernels run their
 * parallel loops on that many threads (--target "llvm -num-cores=1": serial
 * kernels, tuned and timed as such).
 *
 *   bench_model [--results FILE] [--model FILE.json] [--db PATH] [--trials N]
 *               [--target T]
 */
#include "bench/results.h"
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/targets.h"
#include "tuner/tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_model: error: %s: %s\n", what, msg);
  exit(1);
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json", *model = "examples/mlp.json", *db_path = NULL;
  const char *target = "llvm";
  int trials = 200;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) db_path = argv[++i];
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) target = argv[++i];
    else {
      fprintf(stderr, "usage: bench_model [--results FILE] [--model FILE.json] [--db PATH] "
                      "[--trials N] [--target T]\n");
      return 2;
    }
  }
  mlc_error err;
  mlc_target t;
  if (!mlc_target_parse(target, &t, &err)) die(target, err.msg);
  mlc_gmodule *m = mlc_graph_load(model, NULL, &err), *ref = mlc_graph_load(model, NULL, &err);
  if (!m || !ref || !mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err)) die(model, err.msg);

  char tmp_db[64] = "";
  if (!db_path) {
    snprintf(tmp_db, sizeof tmp_db, "/tmp/bench_model_%d.db", (int)getpid());
    bench_remove_db(tmp_db);
    if (!bench_tune_model(tmp_db, m, &t, trials, "bench_model", &err)) die(model, err.msg);
    db_path = tmp_db;
  }
  mlc_db *db = mlc_db_open(db_path, MLC_DB_EXISTING, &err);
  if (!db) die(db_path, err.msg);

  mlc_arena *a = mlc_arena_new();
  bench_variant vs[3] = {{.name = "tuned", .m = m}, {.name = "default_schedule", .m = m},
                         {.name = "unscheduled", .m = m}};
  for (int k = 0; k < 3; k++)
    if (!bench_variant_build(a, &vs[k], &t, k == 0 ? db : NULL, k < 2, "bench_model", &err))
      die(model, err.msg);
  mlc_db_close(db);

  bench_model_io io;
  if (!bench_model_io_new(a, m, ref, &io, &err)) die(model, err.msg);
  for (int k = 0; k < 3; k++)
    if (!bench_variant_check(&vs[k], &io, &err)) die(model, err.msg);

  /* Interleaved rounds, so that load changes hit every variant alike. */
  enum { ROUNDS = 7 };
  double us[3][ROUNDS];
  for (int r = 0; r < ROUNDS; r++)
    for (int k = 0; k < 3; k++) {
      us[k][r] = 1e3 * bench_time_ms(bench_variant_run, &vs[k], 3, 30);
      if (vs[k].failed) die(vs[k].name, vs[k].err.msg);
    }
  double med[3];
  for (int k = 0; k < 3; k++) med[k] = bench_median(us[k], ROUNDS);

  const char *tuned_name = mlc_arena_printf(a, "%s_tuned_%dt", m->name, t.num_cores);
  double load[1] = {-1};
  getloadavg(load, 1);
  const char *notes = mlc_arena_printf(
      a, "%s: %d/%d kernels replayed from records (%s); median of %d rounds; load %.1f", t.str,
      vs[0].n_tuned, vs[0].n,
      tmp_db[0] ? mlc_arena_printf(a, "tuned in this run, %d trials", trials) : db_path, ROUNDS,
      load[0]);
  bench_case cases[3] = {
      {tuned_name, med[0], "us", NULL, 0, notes},
      {mlc_arena_printf(a, "%s_default_schedule_%dt", m->name, t.num_cores), med[1], "us", tuned_name, med[0],
       "no records: parallel outer / vectorized inner loops; ratio = speed-up of tuning"},
      {mlc_arena_printf(a, "%s_unscheduled_%dt", m->name, t.num_cores), med[2], "us", tuned_name, med[0],
       "lowered kernels as they are"},
  };
  for (int k = 0; k < 3; k++) bench_print(&cases[k]);
  if (!bench_write_results(results, 3, cases, &err)) die(results, err.msg);

  for (int k = 0; k < 3; k++) bench_variant_free(&vs[k]);
  bench_model_io_free(&io);
  if (tmp_db[0]) bench_remove_db(tmp_db);
  mlc_arena_free(a);
  mlc_graph_free(m);
  mlc_graph_free(ref);
  return 0;
}
