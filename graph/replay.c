/* Choosing what to compile for each kernel: the best record of the tuning
 * database for its workload (by structural hash) and target, replayed, or
 * the default schedule when there is none.
 *
 * The trace is replayed on the workload IR stored with the record (so the
 * block names the trace asks for exist, whatever the graph named them),
 * with its stored decisions and the postprocessing steps it recorded; the
 * result takes the kernel's name. Structural equality of the stored IR
 * and the kernel (checked) guarantees the same parameters in the same
 * order. */
#include "db/db.h"
#include "graph/graph_impl.h"
#include "schedule/schedule.h"

#include <stdio.h>
#include <string.h>

static void set_name(mlc_arena *a, mlc_prim_func *f, const char *name) {
  f->name = mlc_arena_strdup(a, name);
  for (int i = 0; i < f->n_attrs; i++)
    if (strcmp(f->attrs[i].key, "global_symbol") == 0) f->attrs[i].s = f->name;
}

/* The function name the trace's GetBlock instructions ask for (tasks are
 * named "main"), or NULL. */
static const char *trace_func_name(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    if (in->kind != MLC_INST_GET_BLOCK) continue;
    for (int j = 0; j < in->n_attrs; j++)
      if (strcmp(in->attrs[j].key, "func_name") == 0 && in->attrs[j].kind == MLC_ATTR_STR)
        return in->attrs[j].s;
  }
  return NULL;
}

/* Replay record r of workload w for f; NULL with a message on failure. */
static mlc_prim_func *replay(mlc_arena *a, const mlc_prim_func *f, const mlc_db_workload *w,
                             const mlc_db_record *r, mlc_error *err) {
  mlc_arena *tmp = mlc_arena_new();
  mlc_prim_func *out = NULL;
  mlc_module *mod = mlc_parse_module(tmp, "workload.py", w->ir, err);
  mlc_trace *t = mod ? mlc_trace_from_json(tmp, r->trace, strlen(r->trace), err) : NULL;
  if (mod && mod->n_funcs != 1) mlc_error_set(err, "the stored workload has %d functions", mod->n_funcs);
  else if (mod && !mlc_func_struct_equal(mod->funcs[0], f))
    mlc_error_set(err, "the stored workload differs from the kernel (hash collision)");
  else if (t) {
    const char *fname = trace_func_name(t);
    if (fname) set_name(tmp, mod->funcs[0], fname);
    mlc_sched *s = mlc_sched_new(mod->funcs[0], 0);
    if (mlc_sched_replay(s, t, NULL, NULL, err) && mlc_verify_func(mlc_sched_func(s), err)) {
      out = mlc_func_copy(a, mlc_sched_func(s));
      set_name(a, out, f->name);
    }
    mlc_sched_free(s);
  }
  mlc_arena_free(tmp);
  return out;
}

bool mlc_graph_schedule_kernel(mlc_arena *a, mlc_db *db, const char *target,
                               const mlc_prim_func *f, bool schedule, mlc_gkernel *out,
                               mlc_error *err) {
  memset(out, 0, sizeof *out);
  out->func = f;
  int64_t wid = 0;
  int found = db && schedule ? mlc_db_find_workload(db, f, &wid, err) : 0;
  if (found < 0) return false;
  if (found) {
    mlc_arena *q = mlc_arena_new();
    mlc_db_record *best;
    mlc_db_workload w;
    int n = mlc_db_top_k(db, wid, target, 1, q, &best, err);
    bool ok = n >= 0 && (n == 0 || mlc_db_get_workload(db, wid, q, &w, err));
    if (ok && n == 1) {
      mlc_error why;
      mlc_prim_func *s = replay(a, f, &w, &best[0], &why);
      if (s) {
        out->sched = s;
        out->record_id = best[0].id;
        out->record_sec = best[0].mean_sec;
      } else
        snprintf(out->note, sizeof out->note, "record %lld did not replay: %.400s",
                 (long long)best[0].id, why.msg);
    }
    mlc_arena_free(q);
    if (!ok) return mlc_error_prefix(err, "tuning database");
    if (out->sched) return true;
  }
  out->sched = schedule ? mlc_graph_default_schedule(a, f) : f;
  return true;
}
