/* One build for every sequence length against a build per length
 * (`make bench BENCH=dynamic`). For a language model whose inputs take
 * the sequence as an extent (models/bert_base.onnx from `make models`; with
 * --smoke tests/onnx/lm/bert_tiny.onnx at lengths 5..64):
 *   static   at each length L: the model imported at L, tuned (the gradient
 *            task scheduler, --trials over all its kernels, a fresh
 *            database of its own) and compiled from that database;
 *   dynamic  the model built once for lengths 1..bound (mlc-compile --dim),
 *            tuned once (its kernels of the length as their
 *            specializations at 1, 16, 128 and the bound; --dyn-trials in
 *            all, by default as many as one static tuning) and compiled
 *            once, then run at each L.
 * Both run through the in-process runner (the emitted entry's plan),
 * interleaved rounds at each length, on the same seeded inputs (token ids
 * inside their tables, an attention mask of ones): their outputs must
 * agree (mlc_check_close). Cases per length: dynamic_<model>_s<L> (ms,
 * against the static build of that length); then the tuning wall seconds
 * of the one dynamic tuning against the static ones together. Goals of
 * the issue: every length within 1.15x, the dynamic tuning at most a
 * quarter of the static ones together. --keep leaves the databases in
 * /tmp (mlc-compile --report --db on them says per kernel what ran). */
#include "bench/results.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "measure/measure.h"
#include "targets/runtime/mlcrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LENGTHS 8
#define MAX_INPUTS 4

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_dynamic: %s: %s\n", what, msg);
  exit(1);
}

typedef struct setup {
  const char *model, *name;
  const char *inputs[MAX_INPUTS + 1]; /* "input_ids=1,seq", NULL-terminated */
  int n_inputs;
  int64_t lengths[MAX_LENGTHS];
  int n_lengths;
  int64_t bound;
  int trials, dyn_trials, rounds;
  bool keep; /* leave the tuning databases in /tmp (their paths printed) */
} setup;

/* A compiled module and its runner; the arrays of one length. */
typedef struct built {
  mlc_gmodule *m;
  mlc_gcompiled c;
  mlc_grunner *r;
  int64_t size; /* the length a dynamic build runs at */
  void *io[2 * MAX_INPUTS + 4];
  bool failed;
  mlc_error err;
} built;

static void run_built(void *ud) {
  built *b = ud;
  const mlc_gfunc *f = mlc_graph_main(b->m);
  bool ok = b->m->n_sizes ? mlc_graph_runner_run_at(b->r, &b->size, b->io, b->io + f->n_params, &b->err)
                          : mlc_graph_runner_run(b->r, b->io, b->io + f->n_params, &b->err);
  if (!ok) b->failed = true;
}

static bool build(built *b, const mlc_target *t, const char *db_path, const char *prefix,
                  mlc_error *err) {
  mlc_db *db = mlc_db_open(db_path, MLC_DB_EXISTING, err);
  if (!db) return false;
  mlc_gcompile_options o = {.db = db, .symbol_prefix = prefix};
  bool ok = mlc_graph_compile(b->m, t, &o, &b->c, err) && (b->r = mlc_graph_runner_new(b->m, &b->c, err));
  mlc_db_close(db);
  return ok;
}

/* Inputs at length L: gather indices seeded inside their tables, other
 * integer inputs (an attention mask) ones. */
static mlc_array **make_inputs(const mlc_gmodule *m, int64_t L) {
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_array **in = mlc_xmalloc(sizeof *in * (size_t)(f->n_params + 1));
  int64_t sizes[1] = {L};
  for (int i = 0; i < f->n_params; i++) {
    int64_t shape[MLC_GRAPH_MAX_DIMS];
    mlc_gvar_shape_at(m, f->params[i], m->n_sizes ? sizes : NULL, shape);
    in[i] = mlc_array_new(f->params[i]->type.dtype, f->params[i]->type.ndim, shape);
    bool index = false;
    for (int c = 0; c < m->n_index_checks; c++) index = index || m->index_checks[c].param == i;
    if (index || !mlc_dtype_is_int(in[i]->dtype)) mlc_graph_seed_input(m, i, in[i], (uint64_t)L);
    else
      for (int64_t k = 0; k < mlc_array_numel(in[i]); k++) mlc_array_set(in[i], k, 1);
  }
  return in;
}

static mlc_array **make_outputs(const mlc_gmodule *m, int64_t L) {
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_array **out = mlc_xmalloc(sizeof *out * (size_t)(f->n_outputs + 1));
  int64_t sizes[1] = {L};
  for (int i = 0; i < f->n_outputs; i++) {
    int64_t shape[MLC_GRAPH_MAX_DIMS];
    mlc_gvar_shape_at(m, f->outputs[i], m->n_sizes ? sizes : NULL, shape);
    out[i] = mlc_array_new(f->outputs[i]->type.dtype, f->outputs[i]->type.ndim, shape);
  }
  return out;
}

static double tune(const char *db_path, const mlc_gmodule *m, const mlc_target *t, int trials) {
  mlc_error err;
  bench_remove_db(db_path);
  double t0 = bench_now_ms();
  if (!bench_tune_model(db_path, m, t, trials, "bench_dynamic", &err)) die(db_path, err.msg);
  return (bench_now_ms() - t0) / 1e3;
}

static void done_with_db(const setup *s, const char *path) {
  if (s->keep) printf("# kept %s\n", path);
  else bench_remove_db(path);
}

static void parse_args(int argc, char **argv, setup *s, const char **results) {
  static const int64_t real[] = {16, 64, 128, 256, 384}, smoke[] = {5, 16, 33, 64};
  bool is_smoke = false;
  const char *lengths = NULL;
  const char *env = getenv("MLC_BENCH_TRIALS");
  *s = (setup){.model = "models/bert_base.onnx", .name = "bert_base", .bound = 384,
               .trials = env && atoi(env) > 0 ? atoi(env) : 64, .rounds = 5};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--smoke") == 0) is_smoke = true;
    else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) *results = argv[++i];
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) s->trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--dyn-trials") == 0 && i + 1 < argc) s->dyn_trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--lengths") == 0 && i + 1 < argc) lengths = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0) s->keep = true;
    else {
      fprintf(stderr, "usage: bench_dynamic [--smoke] [--trials N] [--dyn-trials N] [--lengths L,L,...] "
                      "[--keep] [--results FILE]\n");
      exit(2);
    }
  }
  const int64_t *ls = is_smoke ? smoke : real;
  s->n_lengths = is_smoke ? 4 : 5;
  memcpy(s->lengths, ls, sizeof(int64_t) * (size_t)s->n_lengths);
  if (is_smoke) {
    s->model = "tests/onnx/lm/bert_tiny.onnx";
    s->name = "bert_tiny";
    s->bound = 64;
    s->trials = env && atoi(env) > 0 ? atoi(env) : 16;
  }
  if (s->dyn_trials <= 0) s->dyn_trials = s->trials;
  for (const char *p = lengths; p && *p && s->n_lengths <= MAX_LENGTHS;) {
    if (p == lengths) s->n_lengths = 0;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 1 || v > s->bound || s->n_lengths == MAX_LENGTHS) {
      fprintf(stderr, "bench_dynamic: --lengths: at most %d lengths in 1..%lld\n", MAX_LENGTHS,
              (long long)s->bound);
      exit(2);
    }
    s->lengths[s->n_lengths++] = v;
    p = *end == ',' ? end + 1 : end;
  }
  const char *names[3] = {"input_ids", "token_type_ids", "attention_mask"};
  for (int i = 0; i < 3; i++) s->inputs[s->n_inputs++] = names[i];
}

/* "name=1,seq" or "name=1,<L>" for each input. */
static const char **shapes(mlc_arena *a, const setup *s, int64_t L) {
  const char **v = MLC_NEW_ARRAY(a, const char *, s->n_inputs + 1);
  for (int i = 0; i < s->n_inputs; i++)
    v[i] = L ? mlc_arena_printf(a, "%s=1,%lld", s->inputs[i], (long long)L)
             : mlc_arena_printf(a, "%s=1,seq", s->inputs[i]);
  return v;
}

int main(int argc, char **argv) {
  bench_openblas_coretype(argv);
  const char *results = "bench/results.json";
  setup s;
  parse_args(argc, argv, &s, &results);
  if (access(s.model, R_OK) != 0) {
    printf("bench_dynamic: skipped: %s missing (`make models` exports it; needs python3-torch)\n",
           s.model);
    return 0;
  }
  mlc_error err;
  mlc_target t;
  if (!mlc_target_parse("llvm", &t, &err)) die("llvm", err.msg);
  mlc_arena *a = mlc_arena_new();
  printf("# %s, lengths", s.model);
  for (int i = 0; i < s.n_lengths; i++) printf(" %lld", (long long)s.lengths[i]);
  printf("; %d trials per static build, %d for the dynamic one; %d threads\n", s.trials,
         s.dyn_trials, mlc_rt_num_threads(0));
  fflush(stdout);

  /* The dynamic build: tuned once, compiled once. */
  built dyn = {0};
  mlc_gsize seq = {"seq", 1, s.bound};
  dyn.m = mlc_graph_load_sized(s.model, shapes(a, &s, 0), 1, &seq, 0, &err);
  if (!dyn.m) die(s.model, err.msg);
  char db[96];
  snprintf(db, sizeof db, "/tmp/bench_dynamic_%d_dyn.db", (int)getpid());
  double dyn_wall = tune(db, dyn.m, &t, s.dyn_trials);
  if (!build(&dyn, &t, db, "dyn", &err)) die("dynamic build", err.msg);
  done_with_db(&s, db);

  bench_case cases[MAX_LENGTHS + 1];
  double static_wall = 0;
  for (int i = 0; i < s.n_lengths; i++) {
    int64_t L = s.lengths[i];
    built st = {0};
    st.m = mlc_graph_load_any(s.model, NULL, shapes(a, &s, L), &err);
    if (!st.m || !mlc_graph_run_pipeline(st.m, NULL, NULL, NULL, &err)) die(s.model, err.msg);
    snprintf(db, sizeof db, "/tmp/bench_dynamic_%d_s%lld.db", (int)getpid(), (long long)L);
    static_wall += tune(db, st.m, &t, s.trials);
    if (!build(&st, &t, db, mlc_arena_printf(a, "s%lld", (long long)L), &err)) die("static build", err.msg);
    done_with_db(&s, db);
    mlc_array **in = make_inputs(st.m, L), **out_s = make_outputs(st.m, L), **out_d = make_outputs(dyn.m, L);
    const mlc_gfunc *f = mlc_graph_main(st.m);
    for (int k = 0; k < f->n_params; k++) st.io[k] = dyn.io[k] = in[k]->data;
    for (int k = 0; k < f->n_outputs; k++) {
      st.io[f->n_params + k] = out_s[k]->data;
      dyn.io[f->n_params + k] = out_d[k]->data;
    }
    dyn.size = L;
    run_built(&st);
    run_built(&dyn);
    if (st.failed || dyn.failed) die("run", (st.failed ? st : dyn).err.msg);
    for (int k = 0; k < f->n_outputs; k++) {
      double me;
      if (!mlc_check_close(out_d[k], out_s[k], MLC_CHECK_RTOL, MLC_CHECK_ATOL, &me))
        die(f->outputs[k]->name, "the dynamic build's output differs from the static build's");
    }
    double ms[4];
    bench_time_pair(run_built, &dyn, run_built, &st, s.rounds, 5, 50, ms);
    cases[i] = (bench_case){mlc_arena_printf(a, "dynamic_%s_s%lld", s.name, (long long)L), ms[0],
                            "ms", mlc_arena_printf(a, "static_s%lld", (long long)L), ms[1],
                            mlc_arena_printf(a, "one build for seq 1..%lld, tuned once (%d trials at "
                                                "its sampled lengths) vs built and tuned (%d trials) "
                                                "for this length; minima %.4g vs %.4g ms",
                                             (long long)s.bound, s.dyn_trials, s.trials, ms[2], ms[3])};
    bench_print(&cases[i]);
    for (int k = 0; k < f->n_params; k++) mlc_array_free(in[k]);
    for (int k = 0; k < f->n_outputs; k++) mlc_array_free(out_s[k]), mlc_array_free(out_d[k]);
    mlc_free(in);
    mlc_free(out_s);
    mlc_free(out_d);
    mlc_graph_runner_free(st.r);
    mlc_gcompiled_free(&st.c);
    mlc_graph_free(st.m);
  }
  cases[s.n_lengths] = (bench_case){mlc_arena_printf(a, "dynamic_%s_tuning_wall", s.name), dyn_wall,
                                    "s", "static_tunings", static_wall,
                                    mlc_arena_printf(a, "one tuning of the build for every length vs "
                                                        "%d tunings, one per length", s.n_lengths)};
  bench_print(&cases[s.n_lengths]);
  if (!bench_write_results(results, s.n_lengths + 1, cases, &err)) die(results, err.msg);
  mlc_graph_runner_free(dyn.r);
  mlc_gcompiled_free(&dyn.c);
  mlc_graph_free(dyn.m);
  mlc_arena_free(a);
  return 0;
}
