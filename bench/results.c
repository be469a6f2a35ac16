/* The benchmarks' shared report: printing, timing, results.json merging. */
#include "bench/results.h"
#include "measure/measure.h"
#include "tuner/tuner.h"
#include "targets/runtime/mlcrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

double bench_now_ms(void) { return mlc_now_sec() * 1e3; }

double bench_median(double *v, int n) { return mlc_median(v, n); }

typedef struct bench_call {
  void (*fn)(void *ctx);
  void *ctx;
} bench_call;

static bool call_bench(void *p) {
  bench_call *c = p;
  c->fn(c->ctx);
  return true;
}

double bench_time_ms(void (*fn)(void *ctx), void *ctx, int repeat, double min_ms) {
  bench_call c = {fn, ctx};
  mlc_timing_opts o = {.repeat = repeat, .number = 1, .min_repeat_sec = min_ms * 1e-3};
  double *secs = mlc_xmalloc(sizeof(double) * (size_t)repeat);
  int got = mlc_time_calls(call_bench, &c, &o, secs, NULL, NULL, NULL);
  double med = mlc_median(secs, got) * 1e3;
  mlc_free(secs);
  return med;
}

void bench_time_pair(void (*f0)(void *), void *c0, void (*f1)(void *), void *c1, int rounds, int repeat,
                     double min_ms, double ms[4]) {
  double *a = mlc_xmalloc(sizeof(double) * (size_t)(2 * rounds)), *b = a + rounds;
  for (int r = 0; r < rounds; r++) {
    a[r] = bench_time_ms(f0, c0, repeat, min_ms);
    b[r] = f1 ? bench_time_ms(f1, c1, repeat, min_ms) : -1;
  }
  ms[0] = bench_median(a, rounds), ms[2] = a[0]; /* sorted by the median */
  ms[1] = bench_median(b, rounds), ms[3] = b[0];
  mlc_free(a);
}

void bench_print(const bench_case *c) {
  printf("%-34s %10.4g %s", c->name, c->value, c->unit);
  if (c->baseline && c->baseline_value > 0)
    printf("  (%.3f x %s)", c->value / c->baseline_value, c->baseline);
  if (c->notes) printf("  # %s", c->notes);
  printf("\n");
  fflush(stdout);
}

static void write_case(mlc_str *s, const bench_case *c) {
  mlc_str_puts(s, "    {\"name\": ");
  mlc_json_write_string(s, c->name);
  mlc_str_puts(s, ", \"value\": ");
  mlc_json_write_number(s, c->value);
  mlc_str_puts(s, ", \"unit\": ");
  mlc_json_write_string(s, c->unit);
  if (c->baseline && c->baseline_value > 0) {
    mlc_str_puts(s, ", \"baseline\": ");
    mlc_json_write_string(s, c->baseline);
    mlc_str_puts(s, ", \"baseline_value\": ");
    mlc_json_write_number(s, c->baseline_value);
    mlc_str_puts(s, ", \"ratio\": ");
    mlc_json_write_number(s, (double)(long long)(c->value / c->baseline_value * 1e4 + 0.5) / 1e4);
  }
  if (c->notes) {
    mlc_str_puts(s, ", \"notes\": ");
    mlc_json_write_string(s, c->notes);
  }
  mlc_str_puts(s, "}");
}

static void cpu_name(char *buf, size_t n) {
  snprintf(buf, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *p = strchr(line, ':');
    if (!p) break;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    snprintf(buf, n, "%.*s", (int)strcspn(p, "\n"), p);
    break;
  }
  fclose(f);
}

static bool is_new(const char *name, int n, const bench_case *cases) {
  for (int i = 0; i < n; i++)
    if (strcmp(cases[i].name, name) == 0) return true;
  return false;
}

bool bench_write_results(const char *path, int n, const bench_case *cases, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_str s = {0};
  char cpu[256], date[64];
  cpu_name(cpu, sizeof cpu);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  mlc_str_puts(&s, "{\n  \"machine\": {\"cpu\": ");
  mlc_json_write_string(&s, cpu);
  mlc_str_printf(&s, ", \"cores\": %ld, \"date\": ", sysconf(_SC_NPROCESSORS_ONLN));
  mlc_json_write_string(&s, date);
  mlc_str_puts(&s, "},\n  \"cases\": [\n");
  int written = 0;
  /* Cases already in the file that this run does not measure stay. */
  size_t len;
  char *old = access(path, R_OK) == 0 ? mlc_read_file(path, &len, NULL) : NULL;
  const mlc_json *doc = old ? mlc_json_parse(a, old, len, err) : NULL;
  const mlc_json *prev = doc ? mlc_json_get(doc, "cases") : NULL;
  bool ok = !old || doc;
  for (int i = 0; ok && prev && prev->kind == MLC_JSON_ARRAY && i < prev->len; i++) {
    const mlc_json *nm = mlc_json_get(prev->items[i], "name");
    if (!nm || nm->kind != MLC_JSON_STRING || is_new(nm->str, n, cases)) continue;
    mlc_str_puts(&s, written++ ? ",\n    " : "    ");
    mlc_json_write(&s, prev->items[i]);
  }
  for (int i = 0; ok && i < n; i++) {
    if (written++) mlc_str_puts(&s, ",\n");
    write_case(&s, &cases[i]);
  }
  mlc_str_puts(&s, "\n  ]\n}\n");
  if (!ok) mlc_error_prefix(err, "%s", path);
  ok = ok && mlc_write_file(path, s.data, s.len, err);
  mlc_free(old);
  mlc_str_free(&s);
  mlc_arena_free(a);
  return ok;
}

/* ---- a model compiled and run in process --------------------------------------- */

static bool call_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  const bench_variant *v = ud;
  for (int i = 0; i < v->n; i++)
    if (v->src[i] == f) {
      if (mlc_kernel_call(v->fns[i], n, args) != 0)
        return mlc_error_set(err, "kernel %s failed", v->symbols[i]);
      return true;
    }
  return mlc_error_set(err, "no kernel for %s", f->name);
}

void bench_variant_run(void *ctx) {
  bench_variant *v = ctx;
  if (!v->failed && !mlc_graph_execute(v->m, call_kernel, v, v->in, v->out, &v->err))
    v->failed = true;
}

bool bench_variant_build(mlc_arena *a, bench_variant *v, const mlc_target *t, mlc_db *db,
                         bool schedule, const char *prog, mlc_error *err) {
  mlc_gcompile_options co = {.db = db, .no_schedule = !schedule, .symbol_prefix = v->name};
  mlc_gcompiled *c = &v->compiled;
  bool ok = mlc_graph_compile(v->m, t, &co, c, err);
  v->n = c->n;
  v->src = c->src;
  v->sched = c->sched;
  v->symbols = c->symbols;
  for (int i = 0; i < c->n_scheduled; i++) {
    if (db && !c->skipped[i] && !c->info[i].record_id)
      fprintf(stderr, "%s: %s: %s untuned\n", prog, v->name, v->symbols[i]);
    else if (db && !c->info[i].record_id)
      fprintf(stderr, "%s: %s: %s untuned: %s\n", prog, v->name, v->symbols[i], c->skipped[i]);
    v->n_tuned += c->info[i].record_id != 0;
  }
  if (!ok || !(v->lib = mlc_jit_load(c->obj, err))) return mlc_error_prefix(err, "%s", v->name);
  v->fns = mlc_xmalloc(sizeof *v->fns * (size_t)v->n);
  for (int i = 0; i < v->n; i++)
    if (!(v->fns[i] = mlc_jit_lookup(v->lib, v->symbols[i], err)))
      return mlc_error_prefix(err, "%s", v->name);
  return true;
}

void bench_variant_free(bench_variant *v) {
  mlc_free(v->fns);
  if (v->lib) mlc_jit_unload(v->lib);
  mlc_gcompiled_free(&v->compiled);
}

bool bench_model_io_new(mlc_arena *a, const mlc_gmodule *m, const mlc_gmodule *ref,
                        bench_model_io *io, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  io->n_in = f->n_params;
  io->n_out = f->n_outputs;
  io->in = MLC_NEW_ARRAY(a, mlc_array *, f->n_params + 1);
  io->out = MLC_NEW_ARRAY(a, mlc_array *, f->n_outputs + 1);
  io->want = MLC_NEW_ARRAY(a, mlc_array *, f->n_outputs + 1);
  for (int i = 0; i < f->n_params; i++) {
    const mlc_gtype *ty = &f->params[i]->type;
    io->in[i] = mlc_array_new(ty->dtype, ty->ndim, ty->shape);
    mlc_graph_seed_input(m, i, io->in[i], 1);
  }
  for (int i = 0; i < f->n_outputs; i++) {
    const mlc_gtype *ty = &f->outputs[i]->type;
    io->out[i] = mlc_array_new(ty->dtype, ty->ndim, ty->shape);
    io->want[i] = mlc_array_new(ty->dtype, ty->ndim, ty->shape);
  }
  return mlc_graph_reference(ref, io->in, io->want, err) ||
         mlc_error_prefix(err, "the reference evaluation");
}

void bench_model_io_free(bench_model_io *io) {
  for (int i = 0; i < io->n_in; i++) mlc_array_free(io->in[i]);
  for (int i = 0; i < io->n_out; i++) {
    mlc_array_free(io->out[i]);
    mlc_array_free(io->want[i]);
  }
}

bool bench_model_io_check(const bench_model_io *io, mlc_error *err) {
  for (int i = 0; i < io->n_out; i++) {
    double e;
    if (!mlc_check_close(io->out[i], io->want[i], MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e))
      return mlc_error_set(err, "output %d differs from the reference (max abs error %.3g)", i,
                           e);
  }
  return true;
}

bool bench_variant_check(bench_variant *v, bench_model_io *io, mlc_error *err) {
  v->in = io->in;
  v->out = io->out;
  for (int i = 0; i < io->n_out; i++)
    memset(io->out[i]->data, 0, sizeof(float) * (size_t)mlc_array_numel(io->out[i]));
  bench_variant_run(v);
  if (v->failed) {
    *err = v->err;
    return mlc_error_prefix(err, "%s", v->name);
  }
  return bench_model_io_check(io, err) || mlc_error_prefix(err, "%s", v->name);
}

bool bench_tune_model(const char *path, const mlc_gmodule *m, const mlc_target *t, int trials,
                      const char *prog, mlc_error *err) {
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, err);
  if (!db) return false;
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
  fprintf(stderr, "%s: tuning %s: %d tasks, %d trials ...\n", prog, m->name, n, trials);
  bool ok = mlc_tuner_schedule_tasks(db, n, tasks, &o, st, &r, err);
  for (int i = 0; ok && i < n; i++)
    fprintf(stderr, "%s:   %-32s calls %d, %d trials, best %.3f us\n", prog, tasks[i].name,
            tasks[i].weight, st[i].trials, st[i].best_sec * 1e6);
  if (ok) fprintf(stderr, "%s: tuned in %.0f s\n", prog, r.total_sec);
  mlc_db_close(db);
  mlc_arena_free(a);
  return ok || mlc_error_prefix(err, "tuning %s", m->name);
}

void bench_remove_db(const char *path) {
  char more[512];
  unlink(path);
  snprintf(more, sizeof more, "%s-wal", path);
  unlink(more);
  snprintf(more, sizeof more, "%s-shm", path);
  unlink(more);
}

bool bench_build_dir(char *out, size_t size) {
  ssize_t n = readlink("/proc/self/exe", out, size - 1);
  if (n <= 0) return false;
  out[n] = 0;
  for (int k = 0; k < 2; k++) { /* strip /<name>, then /bench */
    char *slash = strrchr(out, '/');
    if (!slash) return false;
    *slash = 0;
  }
  return true;
}

double bench_json_number(const char *text, const char *key) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *j = mlc_json_parse(a, text, strlen(text), &err);
  const mlc_json *v = j ? mlc_json_get(j, key) : NULL;
  double x = v && v->kind == MLC_JSON_NUMBER ? v->number : -1;
  mlc_arena_free(a);
  return x;
}

void bench_openblas_coretype(char **argv) {
  const char *ct = mlc_rt_blas_coretype(), *env_ct = getenv("OPENBLAS_CORETYPE");
  if (!ct || (env_ct && *env_ct)) return;
  setenv("OPENBLAS_CORETYPE", ct, 1);
  execv("/proc/self/exe", argv);
  fprintf(stderr, "bench: cannot run again with OPENBLAS_CORETYPE=%s: OpenBLAS keeps its generic kernels\n", ct);
}

bool bench_coprocess_start(bench_coprocess *c, char *const *argv, const char *env_name,
                           const char *env_value, char *line, int n) {
  int in[2], out[2];
  memset(c, 0, sizeof *c);
  if (pipe(in) || pipe(out)) return false;
  c->pid = fork();
  if (c->pid < 0) return false;
  if (c->pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    if (env_name) setenv(env_name, env_value, 1);
    execv(argv[0], argv);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  c->to = fdopen(in[1], "w");
  c->from = fdopen(out[0], "r");
  if (fgets(line, n, c->from)) return true;
  fclose(c->to);
  fclose(c->from);
  waitpid(c->pid, NULL, 0);
  return false;
}

void bench_coprocess_stop(bench_coprocess *c) {
  fprintf(c->to, "quit\n");
  fclose(c->to);
  fclose(c->from);
  waitpid(c->pid, NULL, 0);
}
