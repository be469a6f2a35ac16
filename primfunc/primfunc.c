/* The prim_func handle: a function in its own arena, and its hash. */
#include "primfunc/primfunc.h"
#include "db/db.h"
#include "graph/graph.h"
#include "ir/ir.h"
#include "measure/measure.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"

#include <stdlib.h>

#include <string.h>

struct mlc_primfunc {
  mlc_arena *a;
  mlc_prim_func *f;
  char hash[17];
};

static mlc_primfunc *wrap(mlc_arena *a, mlc_prim_func *f) {
  mlc_primfunc *p = mlc_xmalloc(sizeof *p);
  p->a = a;
  p->f = f;
  mlc_func_hash_hex(f, p->hash);
  return p;
}

mlc_primfunc *mlc_primfunc_parse(const char *text, const char *name, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, "<text>", text, err);
  mlc_prim_func *f = NULL;
  if (m && name) {
    if (!(f = mlc_module_find(m, name))) mlc_error_set(err, "no function '%s' in the text", name);
  } else if (m) {
    f = mlc_module_find(m, "main");
    if (!f && m->n_funcs == 1) f = m->funcs[0];
    if (!f) mlc_error_set(err, "the text defines %d functions and none is 'main': name one",
                          m->n_funcs);
  }
  if (f && !mlc_verify_func(f, err)) f = NULL;
  if (!f) return mlc_arena_free(a), NULL;
  return wrap(a, f);
}

mlc_primfunc *mlc_primfunc_task(const char *task, const char *shape, mlc_error *err) {
  const mlc_task_def *d = mlc_task_find(task);
  if (!d) return mlc_error_set(err, "unknown task '%s' (tasks: %s)", task, mlc_task_names()), NULL;
  int64_t dims[MLC_TASK_MAX_DIMS];
  if (!mlc_task_parse_shape(d, shape, dims, err)) return NULL;
  mlc_arena *a = mlc_arena_new();
  return wrap(a, mlc_task_build(a, d, dims));
}

void mlc_primfunc_free(mlc_primfunc *f) {
  if (!f) return;
  mlc_arena_free(f->a);
  mlc_free(f);
}

const char *mlc_primfunc_name(const mlc_primfunc *f) { return f->f->name; }
const char *mlc_primfunc_hash(const mlc_primfunc *f) { return f->hash; }

char *mlc_primfunc_script(const mlc_primfunc *f) {
  mlc_str s = {0};
  mlc_print_func(&s, f->f);
  return mlc_str_take(&s);
}

mlc_primfunc *mlc_primfunc_apply_trace(const mlc_primfunc *f, const char *trace, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *out = NULL;
  char hash[17];
  if (!mlc_db_replay_trace(a, f->f, trace, &out, hash, err)) return mlc_arena_free(a), NULL;
  return wrap(a, out);
}

typedef struct jit_kernel {
  mlc_kernel_fn fn;
  int n;
  mlc_array *args;
} jit_kernel;

/* mlc_graph_check_kernel's runner: the compiled function. */
static bool run_compiled(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  jit_kernel *k = ud;
  return mlc_kernel_call(k->fn, n, args) == 0 ||
         mlc_error_set(err, "%s returned an error (out of memory inside it)", f->name);
}

static bool call_once(void *ud) {
  jit_kernel *k = ud;
  return mlc_kernel_call(k->fn, k->n, k->args) == 0;
}

/* Median seconds per call of the compiled kernel on fresh arrays. */
static bool time_kernel(jit_kernel *k, const mlc_prim_func *f, uint64_t seed, double *sec,
                        mlc_error *err) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 1);
  k->n = f->n_params;
  k->args = mlc_xmalloc(sizeof(mlc_array) * (size_t)(k->n + 1));
  mlc_array **own = mlc_xmalloc(sizeof(mlc_array *) * (size_t)(k->n + 1));
  for (int i = 0; i < k->n; i++) {
    own[i] = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(own[i], &rng);
    k->args[i] = *own[i];
  }
  mlc_timing_opts o = {.repeat = 5, .number = 1, .min_repeat_sec = 0.02, .max_total_sec = 5};
  double secs[5];
  int got = mlc_time_calls(call_once, k, &o, secs, NULL, NULL, err);
  if (got > 0) *sec = mlc_median(secs, got);
  for (int i = 0; i < k->n; i++) mlc_array_free(own[i]);
  mlc_free(own);
  mlc_free(k->args);
  return got > 0;
}

bool mlc_primfunc_check(const mlc_primfunc *f, const char *target, uint64_t seed, double *sec,
                        mlc_error *err) {
  mlc_target t;
  if (!mlc_target_parse(target ? target : "llvm", &t, err)) return false;
  if (mlc_target_device(&t) != MLC_DEVICE_CPU)
    return mlc_error_set(err, "target '%s': checked on the CPU only", t.str);
  if (f->f->n_sizes > 0)
    return mlc_error_set(err, "%s has size vars: check it with mlc-ir run --size", f->f->name);
  mlc_object obj = {0};
  const char *sym = f->f->name;
  mlc_jit_lib *lib = NULL;
  jit_kernel k = {0};
  bool ok = mlc_func_check_sizes(f->f, err) &&
            mlc_target_build(&t, 1, (const mlc_prim_func *const *)&f->f, &sym, NULL, &obj, err) &&
            (lib = mlc_jit_load(&obj, err)) != NULL &&
            (k.fn = mlc_jit_lookup(lib, sym, err)) != NULL &&
            mlc_graph_check_kernel(f->f, run_compiled, &k, seed, err);
  if (ok && sec) ok = time_kernel(&k, f->f, seed, sec, err);
  if (lib) mlc_jit_unload(lib);
  mlc_object_free(&obj);
  return ok;
}

/* ---- tuning ----------------------------------------------------------------------- */

static void on_round(void *ud, const mlc_tuner_progress *p) {
  const mlc_primfunc_tune_opts *o = ud;
  o->progress(o->progress_ud, p->trials_done, p->trials_total, p->best_sec, p->elapsed_s);
}

bool mlc_primfunc_tune(const mlc_primfunc *f, const mlc_primfunc_tune_opts *o,
                       mlc_primfunc_tune_result *r, mlc_error *err) {
  *r = (mlc_primfunc_tune_result){0};
  const char *path = o->db ? o->db : getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  mlc_target t;
  if (!mlc_target_parse(o->target && *o->target ? o->target : "llvm", &t, err)) return false;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, err);
  if (!db) return false;
  mlc_tuner_tune_opts to;
  mlc_tuner_tune_opts_default(&to);
  to.task = o->task ? o->task : f->f->name;
  to.shape = "";
  to.target = t.str;
  to.trials = o->trials > 0 ? o->trials : 64;
  to.search.num_cores = t.num_cores;
  to.stop = o->stop;
  if (o->progress) to.progress = on_round, to.progress_ud = (void *)o;
  mlc_tuner_tune_result res;
  bool ok = mlc_tuner_tune(db, f->f, &to, &res, err);
  if (ok)
    *r = (mlc_primfunc_tune_result){res.measured, res.errors, res.stopped, res.best_sec,
                                    res.best_record_id};
  mlc_db_close(db);
  return ok;
}
