/* Records as data: what mlc-db top/show print with --json, and what the
 * Python package's Database returns: the best records of workloads, one
 * record with its trace as Python and its scheduled TVMScript. */
#include "report/report_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"

#include <string.h>

const mlc_prim_func *mlc_report_workload_func(mlc_arena *a, const mlc_db_workload *w) {
  mlc_error err;
  mlc_module *m = w->ir ? mlc_parse_module(a, "workload", w->ir, &err) : NULL;
  if (!m || m->n_funcs < 1) return NULL;
  return mlc_module_find(m, "main") ? mlc_module_find(m, "main") : m->funcs[0];
}

const char *mlc_report_replay_check(mlc_arena *a, const mlc_prim_func *f, const mlc_db_record *r) {
  if (!r->sched_hash) return "NO-HASH";
  char hash[17];
  mlc_error err;
  if (!f || !mlc_db_replay_trace(a, f, r->trace, NULL, hash, &err)) return "DIFFERS";
  return strcmp(hash, r->sched_hash) == 0 ? "ok" : "DIFFERS";
}

const char *mlc_report_record_library(mlc_arena *a, const mlc_db_record *r) {
  if (!strstr(r->trace, "\"LibraryCall\"")) return NULL;
  mlc_error e;
  mlc_trace *t = mlc_trace_from_json(a, r->trace, strlen(r->trace), &e);
  return t ? mlc_trace_library(t) : NULL;
}

bool mlc_report_scheduled_ir(const char *ir, const char *trace, mlc_str *out, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, "workload", ir, err);
  mlc_prim_func *f = m ? (mlc_module_find(m, "main") ? mlc_module_find(m, "main") : m->funcs[0])
                       : NULL;
  mlc_trace *t = f ? mlc_trace_from_json(a, trace, strlen(trace), err) : NULL;
  bool ok = false;
  /* records tensorized with the host CPU's intrinsics (mlc-tune's) */
  if (t && mlc_tensor_intrin_register_cpu(mlc_target_host_features(), NULL, err)) {
    mlc_sched *s = mlc_sched_new(f, 1);
    ok = mlc_sched_replay(s, t, NULL, NULL, err);
    if (ok) mlc_print_func(out, mlc_sched_func(s));
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
  return ok;
}

bool mlc_report_trace_python(const char *trace, mlc_str *out, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, trace, strlen(trace), err);
  if (t) mlc_trace_print(out, t);
  mlc_arena_free(a);
  return t != NULL;
}

/* ---- JSON ----------------------------------------------------------------------- */

/* v, or null where the condition fails (no time, unknown flops). */
static void num_or_null(mlc_str *s, bool *first, const char *k, bool known, double v) {
  mlc_json_write_key(s, first, k);
  if (known) mlc_json_write_number(s, v);
  else mlc_str_puts(s, "null");
}

static void secs(mlc_str *s, bool *first, const mlc_db_record *r) {
  mlc_json_write_key(s, first, "run_secs");
  mlc_str_putc(s, '[');
  for (int i = 0; i < r->n_secs; i++) {
    if (i) mlc_str_putc(s, ',');
    mlc_json_write_number(s, r->secs[i]);
  }
  mlc_str_putc(s, ']');
}

void mlc_report_top_row_json(mlc_str *out, const mlc_db_workload *w, const mlc_db_record *r,
                             const char *check, int rank, double flops, const char *lib) {
  bool f = true;
  mlc_str_putc(out, '{');
  mlc_json_write_member_number(out, &f, "rank", rank);
  mlc_json_write_member_number(out, &f, "id", (double)r->id);
  mlc_json_write_member_string(out, &f, "task", w->task);
  mlc_json_write_member_string(out, &f, "shape", w->shape);
  mlc_json_write_member_string(out, &f, "target", r->target);
  mlc_json_write_member_number(out, &f, "mean_sec", r->mean_sec);
  num_or_null(out, &f, "gflops", flops > 0, flops / r->mean_sec * 1e-9);
  secs(out, &f, r);
  mlc_json_write_member_string(out, &f, "trace_hash", r->trace_hash);
  mlc_json_write_member_string(out, &f, "replay", check);
  mlc_json_write_member_number(out, &f, "round", (double)r->round);
  mlc_json_write_member_string(out, &f, "library", lib);
  mlc_str_putc(out, '}');
}

bool mlc_report_top_json(mlc_db *db, const mlc_report_options *o, int k, mlc_str *out,
                         int *shown, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_workload *ws;
  int n = mlc_db_list_workloads(db, o->task, o->shape, a, &ws, err);
  bool ok = n >= 0;
  *shown = 0;
  mlc_str_putc(out, '[');
  for (int i = 0; ok && i < n; i++) {
    const char **targets, *only[1] = {o->target};
    int nt = o->target ? 1 : mlc_db_targets(db, ws[i].id, a, &targets, err);
    if (o->target) targets = only;
    ok = nt >= 0;
    double flops = mlc_report_workload_flops(a, &ws[i]);
    const mlc_prim_func *wf = mlc_report_workload_func(a, &ws[i]);
    for (int t = 0; ok && t < nt; t++) {
      mlc_db_record *rs;
      int got = mlc_db_top_k(db, ws[i].id, targets[t], k, a, &rs, err);
      ok = got >= 0;
      for (int j = 0; j < got; j++) {
        if ((*shown)++) mlc_str_putc(out, ',');
        mlc_report_top_row_json(out, &ws[i], &rs[j], mlc_report_replay_check(a, wf, &rs[j]), j + 1,
                                flops, mlc_report_record_library(a, &rs[j]));
      }
    }
  }
  mlc_str_puts(out, "]\n");
  mlc_arena_free(a);
  return ok;
}

void mlc_report_record_json(mlc_str *o, const mlc_db_record *r, const mlc_db_workload *w,
                            double flops, const char *python, const char *ir) {
  bool f = true;
  mlc_str_putc(o, '{');
  mlc_json_write_member_number(o, &f, "id", (double)r->id);
  mlc_json_write_member_number(o, &f, "workload_id", (double)r->workload_id);
  mlc_json_write_member_string(o, &f, "task", w->task);
  mlc_json_write_member_string(o, &f, "shape", w->shape);
  mlc_json_write_member_string(o, &f, "target", r->target);
  mlc_json_write_key(o, &f, "trace");
  mlc_str_puts(o, r->trace);
  mlc_json_write_member_string(o, &f, "trace_hash", r->trace_hash);
  mlc_json_write_member_string(o, &f, "sched_hash", r->sched_hash);
  secs(o, &f, r);
  num_or_null(o, &f, "mean_sec", !r->error, r->mean_sec);
  num_or_null(o, &f, "gflops", !r->error && flops > 0, flops / r->mean_sec * 1e-9);
  mlc_json_write_member_string(o, &f, "error", r->error);
  mlc_json_write_member_number(o, &f, "round", (double)r->round);
  mlc_json_write_member_string(o, &f, "host", r->host);
  mlc_json_write_member_string(o, &f, "mlc_version", r->mlc_version);
  mlc_json_write_member_string(o, &f, "created_at", r->created_at);
  if (python) mlc_json_write_member_string(o, &f, "python", python);
  if (ir) mlc_json_write_member_string(o, &f, "ir", ir);
  mlc_str_puts(o, "}\n");
}

int mlc_report_record(mlc_db *db, int64_t id, bool with_ir, mlc_str *out, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_record r;
  mlc_db_workload w;
  mlc_str py = {0}, ir = {0};
  int found = mlc_db_get_record(db, id, a, &r, err);
  if (found == 1 && !mlc_db_get_workload(db, r.workload_id, a, &w, err)) found = -1;
  if (found == 1 && !mlc_report_trace_python(r.trace, &py, err)) found = -1;
  if (found == 1 && with_ir && !mlc_report_scheduled_ir(w.ir, r.trace, &ir, err)) found = -1;
  if (found == 1)
    mlc_report_record_json(out, &r, &w, mlc_report_workload_flops(a, &w), mlc_str_cstr(&py),
                           with_ir ? mlc_str_cstr(&ir) : NULL);
  mlc_str_free(&py), mlc_str_free(&ir);
  mlc_arena_free(a);
  return found;
}
