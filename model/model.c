/* The model handle: a graph after its passes, its compiled kernels and
 * the in-process runner over them (graph/runner.c), the target and
 * database they were compiled with (export builds the same again, with
 * the weights in the object). */
#include "model/model.h"
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "ir/ir.h"
#include "targets/targets.h"
#include "tuner/tuner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mlc_model {
  mlc_gmodule *g;
  mlc_gcompiled c;
  bool compiled;
  mlc_grunner *runner;
  char target[256];
  char *db;              /* the last compile's (heap), or NULL */
  const char **schedule; /* per compiled kernel, in c.arena */
  const char **symbol, **workload; /* per kernel of g->tir, in g's arena */
};

mlc_model *mlc_model_load(const char *path, const char *weights, const char *input_shapes,
                          mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  const char **shapes = mlc_graph_shape_list(a, input_shapes);
  mlc_gmodule *g = mlc_graph_load_any(path, weights, shapes, err);
  mlc_arena_free(a);
  if (!g) return NULL;
  if (!mlc_graph_run_pipeline(g, NULL, NULL, NULL, err)) {
    mlc_graph_free(g);
    return NULL;
  }
  mlc_model *m = mlc_xmalloc(sizeof *m);
  m->g = g;
  snprintf(m->target, sizeof m->target, "llvm");
  int n = mlc_model_num_kernels(m);
  m->symbol = MLC_NEW_ARRAY(g->arena, const char *, n + 1);
  m->workload = MLC_NEW_ARRAY(g->arena, const char *, n + 1);
  for (int i = 0; i < n; i++) {
    char *hex = mlc_arena_alloc(g->arena, 17);
    mlc_func_hash_hex(g->tir->funcs[i], hex);
    m->symbol[i] = mlc_graph_symbol(g->arena, g, g->tir->funcs[i]);
    m->workload[i] = hex;
  }
  return m;
}

static void drop_compiled(mlc_model *m) {
  mlc_graph_runner_free(m->runner);
  m->runner = NULL;
  if (m->compiled) mlc_gcompiled_free(&m->c);
  m->compiled = false;
  m->schedule = NULL;
}

void mlc_model_free(mlc_model *m) {
  if (!m) return;
  drop_compiled(m);
  mlc_free(m->db);
  mlc_graph_free(m->g);
  mlc_free(m);
}

const char *mlc_model_name(const mlc_model *m) { return m->g->name; }
int mlc_model_num_inputs(const mlc_model *m) { return mlc_graph_main(m->g)->n_params; }
int mlc_model_num_outputs(const mlc_model *m) { return mlc_graph_main(m->g)->n_outputs; }
int mlc_model_num_kernels(const mlc_model *m) { return m->g->tir ? m->g->tir->n_funcs : 0; }

static const mlc_gvar *io_var(const mlc_model *m, bool output, int i) {
  const mlc_gfunc *f = mlc_graph_main(m->g);
  if (i < 0 || i >= (output ? f->n_outputs : f->n_params)) return NULL;
  return output ? f->outputs[i] : f->params[i];
}

const char *mlc_model_io_name(const mlc_model *m, bool output, int i) {
  const mlc_gvar *v = io_var(m, output, i);
  return v ? v->name : NULL;
}

const char *mlc_model_io_dtype(const mlc_model *m, bool output, int i) {
  const mlc_gvar *v = io_var(m, output, i);
  return v ? mlc_dtype_name(v->type.dtype) : NULL;
}

int mlc_model_io_ndim(const mlc_model *m, bool output, int i) {
  const mlc_gvar *v = io_var(m, output, i);
  return v ? v->type.ndim : -1;
}

int64_t mlc_model_io_dim(const mlc_model *m, bool output, int i, int axis) {
  const mlc_gvar *v = io_var(m, output, i);
  return v && axis >= 0 && axis < v->type.ndim ? v->type.shape[axis] : -1;
}

/* The words mlc-compile prints for kernel i's schedule. */
static const char *describe(mlc_arena *a, const mlc_gcompiled *c, int i) {
  const mlc_gkernel *g = &c->info[i];
  if (c->fallback[i]) return mlc_arena_printf(a, "unscheduled (%s)", c->fallback[i]);
  if (g->record_id)
    return mlc_arena_printf(a, "record %lld (%.4g us)%s%s", (long long)g->record_id,
                            g->record_sec * 1e6, g->library[0] ? ", library " : "", g->library);
  if (g->note[0]) return mlc_arena_printf(a, "default schedule (%s)", g->note);
  return "default schedule";
}

/* Compiles m->g for target with db into *c (the weights in the object or not). */
static bool compile_into(mlc_model *m, const char *target, const char *db, bool with_weights,
                         mlc_gcompiled *c, mlc_error *err) {
  mlc_target t;
  if (!mlc_target_parse(target, &t, err)) return false;
  if (mlc_target_device(&t) != MLC_DEVICE_CPU)
    return mlc_error_set(err, "target '%s': a model runs in-process on the CPU only (use "
                              "mlc-compile for GPU objects)", target);
  mlc_gcompile_options o = {.db_path = db && *db ? db : NULL, .no_schedule = false,
                            .with_weights = with_weights};
  if (mlc_graph_compile(m->g, &t, &o, c, err)) return true;
  mlc_gcompiled_free(c);
  return false;
}

bool mlc_model_compile(mlc_model *m, const char *target, const char *db, mlc_error *err) {
  if (!target || !*target) target = "llvm";
  drop_compiled(m);
  if (!compile_into(m, target, db, false, &m->c, err)) return false;
  m->compiled = true;
  snprintf(m->target, sizeof m->target, "%s", target);
  mlc_free(m->db);
  m->db = db && *db ? mlc_xstrdup(db) : NULL;
  m->schedule = MLC_NEW_ARRAY(m->c.arena, const char *, m->c.n + 1);
  for (int i = 0; i < m->c.n; i++) m->schedule[i] = describe(m->c.arena, &m->c, i);
  m->runner = mlc_graph_runner_new(m->g, &m->c, err);
  if (!m->runner) drop_compiled(m);
  return m->runner != NULL;
}

const char *mlc_model_kernel_symbol(const mlc_model *m, int i) {
  return i >= 0 && i < mlc_model_num_kernels(m) ? m->symbol[i] : NULL;
}

const char *mlc_model_kernel_workload(const mlc_model *m, int i) {
  return i >= 0 && i < mlc_model_num_kernels(m) ? m->workload[i] : NULL;
}

const char *mlc_model_kernel_schedule(const mlc_model *m, int i) {
  return m->compiled && i >= 0 && i < m->c.n ? m->schedule[i] : NULL;
}

bool mlc_model_run(mlc_model *m, void *const *inputs, void *const *outputs, mlc_error *err) {
  if (!m->runner) return mlc_error_set(err, "model %s is not compiled (mlc_model_compile)", m->g->name);
  return mlc_graph_runner_run(m->runner, inputs, outputs, err);
}

bool mlc_model_export(mlc_model *m, const char *object_path, const char *header_path,
                      mlc_error *err) {
  mlc_gcompiled c = {0};
  mlc_target t;
  if (!compile_into(m, m->target, m->db, true, &c, err)) return false;
  bool ok = mlc_target_parse(m->target, &t, err) && mlc_graph_write_object(object_path, &t, &c, err);
  if (ok && header_path) {
    mlc_str h = {0};
    ok = mlc_graph_write_header(&h, &t, &c, m->g, err) &&
         mlc_write_file(header_path, h.data, h.len, err);
    mlc_str_free(&h);
  }
  mlc_gcompiled_free(&c);
  return ok;
}

/* ---- tuning ------------------------------------------------------------------ */

typedef struct progress_ctx {
  const mlc_model_tune_opts *o;
} progress_ctx;

static void on_round(void *ud, const mlc_tuner_sched_progress *p) {
  const mlc_model_tune_opts *o = ((progress_ctx *)ud)->o;
  o->progress(o->progress_ud, p->trials_done, p->trials_total, p->est_sec, p->elapsed_s);
}

bool mlc_model_tune(mlc_model *m, const mlc_model_tune_opts *o, mlc_model_tune_result *r,
                    mlc_error *err) {
  *r = (mlc_model_tune_result){0};
  const char *db_path = o->db ? o->db : getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  mlc_target t;
  if (!mlc_target_parse(o->target && *o->target ? o->target : "llvm", &t, err)) return false;
  mlc_db *db = mlc_db_open(db_path, MLC_DB_CREATE, err);
  if (!db) return false;
  mlc_arena *a = mlc_arena_new();
  mlc_tuner_task *tasks;
  int n = mlc_graph_tuner_tasks(a, m->g, &tasks);
  mlc_tuner_task_state *st = MLC_NEW_ARRAY(a, mlc_tuner_task_state, n + 1);
  mlc_tuner_sched_opts so;
  mlc_tuner_sched_opts_default(&so);
  so.trials = o->trials > 0 ? o->trials : 64;
  progress_ctx pc = {o};
  if (o->progress) so.progress = on_round, so.progress_ud = &pc;
  so.tune.target = t.str;
  so.tune.search.num_cores = t.num_cores;
  so.tune.stop = o->stop;
  mlc_tuner_sched_result res;
  bool ok = mlc_tuner_schedule_tasks(db, n, tasks, &so, st, &res, err);
  if (ok)
    *r = (mlc_model_tune_result){res.measured, res.errors, res.stopped, res.est_sec,
                                 res.est_default_sec, res.total_sec};
  mlc_arena_free(a);
  mlc_db_close(db);
  return ok;
}
