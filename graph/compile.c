/* Compiling a module's kernels: the one path mlc-compile, the benches and
 * (later) the Python package share. Each kernel gets the schedule the
 * database chooses (replay.c), then all are built into one object; a
 * scheduled kernel that does not build falls back to its unscheduled form,
 * so that one bad record never costs the whole model. */
#include "db/db.h"
#include "graph/graph_impl.h"
#include "targets/targets.h"
#include "tuner/tuner.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The database of o: the open one, or o->db_path opened (NULL when the
 * file does not exist: all untuned; a server's database must be there). */
static bool open_db(const mlc_gcompile_options *o, mlc_db **db, bool *owned, mlc_error *err) {
  *db = o->db;
  *owned = false;
  if (*db || !o->db_path) return true;
  if (!mlc_db_is_url(o->db_path) && access(o->db_path, F_OK) != 0) return true;
  *owned = true;
  *db = mlc_db_open(o->db_path, MLC_DB_EXISTING, err);
  return *db != NULL;
}

static bool build_all(const mlc_target *t, mlc_gcompiled *c, int n_data,
                      const mlc_object_data *data, mlc_error *err) {
  return mlc_target_build_with_data(t, c->n, c->sched, c->symbols, n_data, data, NULL, c->obj,
                                    err);
}

/* Some scheduled kernel did not build: find which, compile those
 * unscheduled (saying why in fallback[i]), and build again. */
static bool build_fallback(const mlc_target *t, mlc_gcompiled *c, int n_data,
                           const mlc_object_data *data, mlc_error *err) {
  for (int i = 0; i < c->n; i++) {
    mlc_object one;
    mlc_error why;
    if (c->sched[i] == c->src[i]) continue;
    if (mlc_target_build(t, 1, &c->sched[i], &c->symbols[i], NULL, &one, &why)) {
      mlc_object_free(&one);
      continue;
    }
    c->fallback[i] = mlc_arena_printf(c->arena, "the %s did not build (%s)",
                                      c->info[i].record_id ? "replayed record" : "default schedule",
                                      why.msg);
    c->sched[i] = c->src[i];
    c->info[i].record_id = 0;
    snprintf(c->info[i].note, sizeof c->info[i].note, "its schedule did not build");
  }
  return build_all(t, c, n_data, data, err);
}

/* c->n, src, symbols and calls set: schedule and build. */
static bool compile(const mlc_target *t, const mlc_gcompile_options *o, mlc_gcompiled *c,
                    int n_data, const mlc_object_data *data, mlc_error *err) {
  mlc_arena *a = c->arena;
  bool schedule = !o->no_schedule;
  bool gpu = c->gpu = mlc_target_device(t) == MLC_DEVICE_CUDA;
  c->sched = MLC_NEW_ARRAY(a, const mlc_prim_func *, c->n + 1);
  c->info = MLC_NEW_ARRAY(a, mlc_gkernel, c->n + 1);
  c->fallback = MLC_NEW_ARRAY(a, const char *, c->n + 1);
  c->skipped = MLC_NEW_ARRAY(a, const char *, c->n + 1);
  mlc_db *db;
  bool owned;
  if (!open_db(o, &db, &owned, err)) return false;
  bool ok = true;
  for (int i = 0; ok && i < c->n; i++) {
    ok = mlc_graph_schedule_kernel(a, db, t->str, c->src[i], schedule, &c->info[i], err);
    if (!ok) break;
    c->sched[i] = c->info[i].sched;
    if (c->info[i].note[0]) c->skipped[i] = mlc_arena_strdup(a, c->info[i].note);
    c->n_scheduled = i + 1;
    /* no record for this cuda target: never the CPU default schedule */
    if (gpu && !c->info[i].record_id &&
        !(c->sched[i] = mlc_tuner_gpu_default_schedule(a, c->src[i], err)))
      ok = mlc_error_prefix(err, "kernel %s has no record for %s", c->symbols[i], t->str);
  }
  if (owned) mlc_db_close(db);
  if (!ok) return false;
  c->obj = mlc_xmalloc(sizeof *c->obj);
  memset(c->obj, 0, sizeof *c->obj);
  ok = build_all(t, c, n_data, data, err);
  /* a GPU kernel cannot fall back to its unscheduled form (nothing bound) */
  if (!ok && gpu) mlc_error_prefix(err, "kernel %s", c->symbols[0]);
  if (!ok && schedule && !gpu) ok = build_fallback(t, c, n_data, data, err);
  return ok;
}

bool mlc_graph_compile_kernels(int n, const mlc_prim_func *const *funcs,
                               const char *const *symbols, const mlc_target *t,
                               const mlc_gcompile_options *o, mlc_gcompiled *out,
                               mlc_error *err) {
  memset(out, 0, sizeof *out);
  mlc_arena *a = out->arena = mlc_arena_new();
  out->n = n;
  out->src = MLC_NEW_ARRAY(a, const mlc_prim_func *, n + 1);
  out->symbols = MLC_NEW_ARRAY(a, const char *, n + 1);
  out->calls = MLC_NEW_ARRAY(a, int, n + 1);
  for (int i = 0; i < n; i++) {
    out->src[i] = funcs[i];
    out->symbols[i] = mlc_arena_strdup(a, symbols[i]);
    out->calls[i] = 1;
  }
  return compile(t, o, out, 0, NULL, err);
}

bool mlc_graph_compile(const mlc_gmodule *m, const mlc_target *t, const mlc_gcompile_options *o,
                       mlc_gcompiled *out, mlc_error *err) {
  memset(out, 0, sizeof *out);
  mlc_arena *a = out->arena = mlc_arena_new();
  int n = out->n = m->tir->n_funcs;
  out->src = MLC_NEW_ARRAY(a, const mlc_prim_func *, n + 1);
  out->symbols = MLC_NEW_ARRAY(a, const char *, n + 1);
  out->calls = MLC_NEW_ARRAY(a, int, n + 1);
  const mlc_gfunc *main_fn = mlc_graph_main(m);
  for (int i = 0; i < n; i++) {
    out->src[i] = m->tir->funcs[i];
    const char *sym = mlc_graph_symbol(a, m, m->tir->funcs[i]);
    out->symbols[i] = o->symbol_prefix ? mlc_arena_printf(a, "%s_%s", o->symbol_prefix, sym) : sym;
    for (int j = 0; main_fn && j < main_fn->n_bindings; j++)
      out->calls[i] += main_fn->bindings[j].tir == out->src[i];
  }
  int n_data = 0;
  mlc_object_data *data = NULL;
  if (o->with_weights) { /* the header's weights are defined in the object */
    n_data = m->n_consts;
    data = MLC_NEW_ARRAY(a, mlc_object_data, m->n_consts + 1);
    for (int i = 0; i < m->n_consts; i++)
      data[i] = (mlc_object_data){mlc_graph_weight_symbol(a, m, m->consts[i]), m->consts[i]->data,
                                  (size_t)mlc_gtype_bytes(&m->consts[i]->type)};
  }
  return compile(t, o, out, n_data, data, err);
}

void mlc_gcompiled_free(mlc_gcompiled *c) {
  if (c->obj) mlc_object_free(c->obj);
  mlc_free(c->obj);
  if (c->arena) mlc_arena_free(c->arena);
  memset(c, 0, sizeof *c);
}
