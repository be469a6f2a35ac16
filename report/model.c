/* A model's section: its kernels (the graph's tuner tasks) ranked by their
 * share of the model's time (calls x best time), how the task scheduler
 * gave out trials over time, and the latency estimate as tuning went. */
#include "report/report_internal.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "tuner/tuner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct kernel {
  const mlc_tuner_task *task;
  int64_t workload_id;       /* 0: not in the database */
  int n, n_failed;           /* records of the model's target */
  mlc_db_record *recs;
  double best_sec;           /* 0: none */
  int rank;                  /* 1-based, by share */
} kernel;

/* One record of any kernel, in the order measured (ids). */
typedef struct event {
  int64_t id;
  int kernel;
  double sec; /* 0: failed */
} event;

static int by_id(const void *a, const void *b) {
  int64_t x = ((const event *)a)->id, y = ((const event *)b)->id;
  return (x > y) - (x < y);
}

static int by_share(const void *a, const void *b) {
  const kernel *x = *(kernel *const *)a, *y = *(kernel *const *)b;
  double sx = x->task->weight * x->best_sec, sy = y->task->weight * y->best_sec;
  return (sx < sy) - (sx > sy);
}

static void note(mlc_str *out, mlc_report_summary *sum, const char *text, const char *detail) {
  sum->note = text;
  mlc_str_puts(out, "<p class=\"note model-note\">");
  html_escape(out, text);
  if (detail) mlc_str_puts(out, " "), html_escape(out, detail);
  mlc_str_puts(out, "</p>\n");
}

/* The target the model's records are read for: the option, else the
 * first target of the first kernel the database holds. */
static const char *model_target(mlc_db *db, mlc_arena *a, const mlc_report_options *o, int n,
                                const kernel *ks, mlc_error *err) {
  if (o->target) return o->target;
  for (int i = 0; i < n; i++) {
    const char **ts;
    if (!ks[i].workload_id) continue;
    int nt = mlc_db_targets(db, ks[i].workload_id, a, &ts, err);
    if (nt < 0) return NULL;
    if (nt > 0) return ts[0];
  }
  return "";
}

static bool read_kernels(mlc_db *db, mlc_arena *a, const mlc_report_options *o, int n,
                         kernel *ks, const char **target, mlc_error *err) {
  for (int i = 0; i < n; i++) {
    int found = mlc_db_find_workload(db, ks[i].task->func, &ks[i].workload_id, err);
    if (found < 0) return false;
    if (!found) ks[i].workload_id = 0;
  }
  if (!(*target = model_target(db, a, o, n, ks, err))) return false;
  for (int i = 0; i < n; i++) {
    if (!ks[i].workload_id) continue;
    int k = mlc_db_record_summaries(db, ks[i].workload_id, *target, a, &ks[i].recs, err);
    if (k < 0) return false;
    ks[i].n = k;
    for (int j = 0; j < k; j++) {
      const mlc_db_record *r = &ks[i].recs[j];
      if (r->error || r->mean_sec <= 0) ks[i].n_failed++;
      else if (ks[i].best_sec == 0 || r->mean_sec < ks[i].best_sec) ks[i].best_sec = r->mean_sec;
    }
  }
  return true;
}

static void kernel_row(mlc_str *out, const kernel *k, const char *target, double total) {
  double share = k->task->weight * k->best_sec;
  mlc_str_printf(out, "<tr><td>%d</td><td class=\"l\">", k->rank);
  if (k->n) {
    mlc_str_puts(out, "<a href=\"#");
    report_put_anchor(out, k->workload_id, target);
    mlc_str_puts(out, "\">");
  }
  html_escape(out, k->task->name);
  if (k->n) mlc_str_puts(out, "</a>");
  mlc_str_printf(out, "</td><td>%d</td><td>%d</td><td>%d</td>", k->task->weight, k->n, k->n_failed);
  if (k->best_sec <= 0) {
    mlc_str_puts(out, k->workload_id ? "<td data-v=\"0\">all failed</td>" : "<td data-v=\"0\">not tuned</td>");
    mlc_str_puts(out, "<td data-v=\"0\">-</td><td data-v=\"0\">-</td><td data-v=\"0\">-</td></tr>\n");
    return;
  }
  mlc_str_printf(out, "<td data-v=\"%.6g\">", k->best_sec);
  put_time(out, k->best_sec);
  mlc_str_printf(out, "</td><td data-v=\"%.6g\">", share);
  put_time(out, share);
  mlc_str_printf(out, "</td><td data-v=\"%.6g\">%.1f%%</td>", share, total > 0 ? 100 * share / total : 0);
  double flops = k->task->flops > 0 ? k->task->flops : mlc_func_flops(k->task->func);
  if (flops > 0) mlc_str_printf(out, "<td data-v=\"%.6g\">%.2f</td></tr>\n", flops / k->best_sec * 1e-9, flops / k->best_sec * 1e-9);
  else mlc_str_puts(out, "<td data-v=\"0\">-</td></tr>\n");
}

static void kernel_table(mlc_str *out, int n, kernel **order, const char *target) {
  double total = 0;
  for (int i = 0; i < n; i++) total += order[i]->task->weight * order[i]->best_sec;
  mlc_str_puts(out, "<table class=\"sortable kernels\"><thead><tr><th>rank</th><th class=\"l\">kernel</th>"
                    "<th>calls</th><th>records</th><th>failed</th><th>best time</th>"
                    "<th>calls x time</th><th>share</th><th>GFLOP/s</th></tr></thead><tbody>\n");
  for (int i = 0; i < n; i++) kernel_row(out, order[i], target, total);
  mlc_str_puts(out, "</tbody></table>\n");
  if (total > 0) {
    mlc_str_puts(out, "<p>Estimated model latency (sum of calls x best time of the tuned kernels): ");
    put_time(out, total);
    mlc_str_puts(out, ".</p>\n");
  }
}

/* Every kernel's records merged in the order measured. */
static event *merge(mlc_arena *a, int n, const kernel *ks, int *n_events) {
  int total = 0;
  for (int i = 0; i < n; i++) total += ks[i].n;
  event *ev = MLC_NEW_ARRAY(a, event, total + 1);
  int m = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < ks[i].n; j++) {
      const mlc_db_record *r = &ks[i].recs[j];
      ev[m++] = (event){r->id, i, r->error || r->mean_sec <= 0 ? 0 : r->mean_sec};
    }
  qsort(ev, (size_t)m, sizeof *ev, by_id);
  *n_events = m;
  return ev;
}

/* Trials over time: a dot per record at (trial, kernel rank). */
static void allocation_plot(mlc_str *out, mlc_arena *a, const kernel *ks, const event *ev, int m,
                            int max_dots) {
  int k = m > max_dots ? (m + max_dots - 1) / max_dots : 1, d = 0;
  double *x = MLC_NEW_ARRAY(a, double, m + 1), *y = MLC_NEW_ARRAY(a, double, m + 1);
  const char **tips = MLC_NEW_ARRAY(a, const char *, m + 1);
  for (int i = 0; i < m; i += k, d++) {
    x[d] = i + 1, y[d] = ks[ev[i].kernel].rank;
    tips[d] = mlc_arena_printf(a, "trial %d: %s (rank %d)", i + 1, ks[ev[i].kernel].task->name,
                               ks[ev[i].kernel].rank);
  }
  plot p = {.title = "Trials the task scheduler gave each kernel, in the order measured",
            .xlabel = "trial over all kernels", .ylabel = "kernel rank (1: largest share)",
            .attrs = "class=\"allocation\"", .xmin = 0.5, .xmax = m + 0.5};
  plot_add(&p, PLOT_DOTS, "pt", NULL, d, x, y, tips);
  plot_svg(out, &p, false);
}

/* The model's latency estimate after each trial, once every kernel that
 * was tuned has a time (untuned kernels are left out). */
static void estimate_plot(mlc_str *out, mlc_arena *a, int n, const kernel *ks, const event *ev,
                          int m) {
  double *best = MLC_NEW_ARRAY(a, double, n + 1);
  double *x = MLC_NEW_ARRAY(a, double, m + 1), *y = MLC_NEW_ARRAY(a, double, m + 1);
  int missing = 0, d = 0;
  for (int i = 0; i < n; i++) missing += ks[i].best_sec > 0;
  for (int i = 0; i < m; i++) {
    int kk = ev[i].kernel;
    if (ev[i].sec <= 0 || (best[kk] > 0 && ev[i].sec >= best[kk])) continue;
    if (best[kk] == 0) missing--;
    best[kk] = ev[i].sec;
    if (missing > 0) continue;
    double est = 0;
    for (int j = 0; j < n; j++) est += ks[j].task->weight * best[j];
    x[d] = i + 1, y[d++] = est * 1e3;
  }
  plot p = {.title = "Estimated model latency as tuning went", .xlabel = "trial over all kernels",
            .ylabel = "ms (sum of calls x best time)", .attrs = "class=\"estimate\"",
            .xmin = 0.5, .xmax = m + 0.5};
  if (d > 0) p.ymin = y[d - 1] * 0.9, p.ymax = y[0] * 1.05; /* it only falls */
  plot_add(&p, PLOT_STEP, "best", "estimate", d, x, y, NULL);
  plot_svg(out, &p, false);
}

static void model_body(mlc_str *out, mlc_arena *a, int n, kernel *ks, const char *target,
                       int max_dots, mlc_report_summary *sum) {
  kernel **order = MLC_NEW_ARRAY(a, kernel *, n + 1);
  int found = 0;
  for (int i = 0; i < n; i++) order[i] = &ks[i], found += ks[i].workload_id != 0;
  sum->kernels = found;
  qsort(order, (size_t)n, sizeof *order, by_share);
  for (int i = 0; i < n; i++) order[i]->rank = i + 1;
  mlc_str_printf(out, "<p>%d kernels, %d of them in the database; records of target <code>", n, found);
  html_escape(out, target);
  mlc_str_puts(out, "</code>.</p>\n");
  kernel_table(out, n, order, target);
  int m;
  event *ev = merge(a, n, ks, &m);
  if (m == 0) return;
  mlc_str_puts(out, "<div class=\"row\">\n");
  allocation_plot(out, a, ks, ev, m, max_dots);
  estimate_plot(out, a, n, ks, ev, m);
  mlc_str_puts(out, "</div>\n");
}

bool report_model_section(mlc_str *out, mlc_db *db, mlc_arena *a, const mlc_report_options *o,
                          mlc_report_summary *sum, mlc_error *err) {
  mlc_str_puts(out, "<section class=\"model\">\n<h2>Model ");
  html_escape(out, o->model);
  mlc_str_puts(out, "</h2>\n");
  mlc_error e;
  mlc_gmodule *m = mlc_graph_load_any(o->model, NULL, NULL, &e);
  bool ok = true;
  if (!m) note(out, sum, "The model file could not be read:", e.msg);
  else if (!mlc_graph_run_pipeline(m, NULL, NULL, NULL, &e))
    note(out, sum, "The model did not compile:", e.msg);
  else {
    mlc_tuner_task *tasks;
    int n = mlc_graph_tuner_tasks(a, m, &tasks);
    kernel *ks = MLC_NEW_ARRAY(a, kernel, n + 1);
    for (int i = 0; i < n; i++) ks[i].task = &tasks[i];
    const char *target;
    ok = read_kernels(db, a, o, n, ks, &target, err);
    int found = 0;
    for (int i = 0; ok && i < n; i++) found += ks[i].workload_id != 0;
    if (ok && n == 0) note(out, sum, "The model has no kernels to tune.", NULL);
    else if (ok && found == 0)
      note(out, sum, "None of the model's kernels is in the database: the model does not match"
                     " it (tuned with other shapes, another model, or not yet).", NULL);
    else if (ok) model_body(out, a, n, ks, target, o->max_dots, sum);
  }
  if (m) mlc_graph_free(m);
  mlc_str_puts(out, "</section>\n");
  return ok;
}
