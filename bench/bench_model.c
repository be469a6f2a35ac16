/* Model latency (issue 8): the MLP of examples/mlp.json, all in one run:
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

/* One compiled variant of the model. */
typedef struct variant {
  const char *name;
  const mlc_gmodule *m;
  int n;
  const mlc_prim_func **src, **sched;
  const char **symbols;
  int n_tuned; /* kernels replayed from a record */
  mlc_object obj;
  mlc_jit_lib *lib;
  mlc_kernel_fn *fns;
  mlc_array **in, **out;
} variant;

static bool call_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  const variant *v = ud;
  for (int i = 0; i < v->n; i++)
    if (v->src[i] == f) {
      if (mlc_kernel_call(v->fns[i], n, args) != 0)
        return mlc_error_set(err, "kernel %s failed", v->symbols[i]);
      return true;
    }
  return mlc_error_set(err, "no kernel for %s", f->name);
}

static void run_once(void *ctx) {
  variant *v = ctx;
  mlc_error err;
  if (!mlc_graph_execute(v->m, call_kernel, v, v->in, v->out, &err)) die(v->name, err.msg);
}

/* db NULL: the default schedule (schedule) or none. */
static void build_variant(mlc_arena *a, variant *v, const mlc_target *t, mlc_db *db,
                          bool schedule) {
  mlc_error err;
  v->n = v->m->tir->n_funcs;
  v->src = MLC_NEW_ARRAY(a, const mlc_prim_func *, v->n);
  v->sched = MLC_NEW_ARRAY(a, const mlc_prim_func *, v->n);
  v->symbols = MLC_NEW_ARRAY(a, const char *, v->n);
  for (int i = 0; i < v->n; i++) {
    mlc_gkernel k;
    v->src[i] = v->m->tir->funcs[i];
    /* one JIT namespace holds every variant: symbols named per variant */
    v->symbols[i] = mlc_arena_printf(a, "%s_%s", v->name, mlc_graph_symbol(a, v->m, v->src[i]));
    if (!mlc_graph_schedule_kernel(a, db, t->str, v->src[i], schedule, &k, &err))
      die(v->name, err.msg);
    if (db && !k.record_id)
      fprintf(stderr, "bench_model: %s: %s untuned%s%s\n", v->name, v->symbols[i],
              k.note[0] ? ": " : "", k.note);
    v->sched[i] = k.sched;
    v->n_tuned += k.record_id != 0;
  }
  if (!mlc_target_build(t, v->n, v->sched, v->symbols, NULL, &v->obj, &err)) die(v->name, err.msg);
  v->lib = mlc_jit_load(&v->obj, &err);
  if (!v->lib) die(v->name, err.msg);
  v->fns = mlc_xmalloc(sizeof *v->fns * (size_t)v->n);
  for (int i = 0; i < v->n; i++)
    if (!(v->fns[i] = mlc_jit_lookup(v->lib, v->symbols[i], &err))) die(v->name, err.msg);
}

static void free_variant(variant *v) {
  mlc_free(v->fns);
  mlc_jit_unload(v->lib);
  mlc_object_free(&v->obj);
}

/* Inputs seeded, outputs allocated, the result checked against want. */
static void check_variant(variant *v, mlc_array **in, mlc_array **out, mlc_array **want) {
  const mlc_gfunc *f = mlc_graph_main(v->m);
  v->in = in;
  v->out = out;
  run_once(v);
  for (int i = 0; i < f->n_outputs; i++) {
    double scale = 0, e;
    for (int64_t j = 0; j < mlc_array_numel(want[i]); j++)
      scale = fmax(scale, fabs(mlc_array_get(want[i], j)));
    if (!mlc_array_allclose(out[i], want[i], 1e-3, 1e-4 * (scale > 0 ? scale : 1), &e)) {
      char msg[128];
      snprintf(msg, sizeof msg, "output %d differs from the reference (max abs error %.3g)", i, e);
      die(v->name, msg);
    }
  }
}

static void tune(const char *db_path, const mlc_gmodule *m, const mlc_target *t, int trials) {
  mlc_error err;
  mlc_db *db = mlc_db_open(db_path, MLC_DB_CREATE, &err);
  if (!db) die(db_path, err.msg);
  mlc_arena *a = mlc_arena_new();
  mlc_tuner_task *tasks;
  int n = mlc_graph_tuner_tasks(a, m, &tasks);
  mlc_tuner_task_state *st = MLC_NEW_ARRAY(a, mlc_tuner_task_state, n + 1);
  mlc_tuner_sched_opts o;
  mlc_tuner_sched_opts_default(&o);
  o.trials = trials;
  o.tune.target = t->str;
  o.tune.search.num_cores = t->num_cores;
  mlc_tuner_sched_result r;
  fprintf(stderr, "bench_model: tuning %s: %d tasks, %d trials ...\n", m->name, n, trials);
  if (!mlc_tuner_schedule_tasks(db, n, tasks, &o, st, &r, &err)) die("tuning", err.msg);
  for (int i = 0; i < n; i++)
    fprintf(stderr, "bench_model:   %-32s calls %d, %d trials, best %.3f us\n", tasks[i].name,
            tasks[i].weight, st[i].trials, st[i].best_sec * 1e6);
  fprintf(stderr, "bench_model: tuned in %.0f s\n", r.total_sec);
  mlc_db_close(db);
  mlc_arena_free(a);
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
    unlink(tmp_db);
    tune(tmp_db, m, &t, trials);
    db_path = tmp_db;
  }
  mlc_db *db = mlc_db_open(db_path, MLC_DB_EXISTING, &err);
  if (!db) die(db_path, err.msg);

  mlc_arena *a = mlc_arena_new();
  variant vs[3] = {{.name = "tuned", .m = m}, {.name = "default_schedule", .m = m},
                   {.name = "unscheduled", .m = m}};
  build_variant(a, &vs[0], &t, db, true);
  build_variant(a, &vs[1], &t, NULL, true);
  build_variant(a, &vs[2], &t, NULL, false);
  mlc_db_close(db);

  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_array **in = MLC_NEW_ARRAY(a, mlc_array *, f->n_params + 1);
  mlc_array **out = MLC_NEW_ARRAY(a, mlc_array *, f->n_outputs + 1);
  mlc_array **want = MLC_NEW_ARRAY(a, mlc_array *, f->n_outputs + 1);
  for (int i = 0; i < f->n_params; i++) {
    mlc_pcg32 r;
    mlc_pcg32_seed(&r, 1, (uint64_t)i);
    in[i] = mlc_array_new(MLC_FLOAT32, f->params[i]->type.ndim, f->params[i]->type.shape);
    mlc_array_fill_random(in[i], &r);
  }
  for (int i = 0; i < f->n_outputs; i++) {
    out[i] = mlc_array_new(MLC_FLOAT32, f->outputs[i]->type.ndim, f->outputs[i]->type.shape);
    want[i] = mlc_array_new(MLC_FLOAT32, f->outputs[i]->type.ndim, f->outputs[i]->type.shape);
  }
  if (!mlc_graph_reference(ref, in, want, &err)) die("reference", err.msg);
  for (int k = 0; k < 3; k++) check_variant(&vs[k], in, out, want);

  /* Interleaved rounds, so that load changes hit every variant alike. */
  enum { ROUNDS = 7 };
  double us[3][ROUNDS];
  for (int r = 0; r < ROUNDS; r++)
    for (int k = 0; k < 3; k++) us[k][r] = 1e3 * bench_time_ms(run_once, &vs[k], 3, 30);
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

  for (int k = 0; k < 3; k++) free_variant(&vs[k]);
  for (int i = 0; i < f->n_params; i++) mlc_array_free(in[i]);
  for (int i = 0; i < f->n_outputs; i++) {
    mlc_array_free(out[i]);
    mlc_array_free(want[i]);
  }
  if (tmp_db[0]) {
    char more[80];
    unlink(tmp_db);
    snprintf(more, sizeof more, "%s-wal", tmp_db);
    unlink(more);
    snprintf(more, sizeof more, "%s-shm", tmp_db);
    unlink(more);
  }
  mlc_arena_free(a);
  mlc_graph_free(m);
  mlc_graph_free(ref);
  return 0;
}
