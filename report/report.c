/* The report's entry points: which workloads and targets, the page's
 * outline (header, table of workloads, a section each), one figure. */
#include "report/report_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"

#include <string.h>
#include <time.h>

typedef MLC_VEC(report_curve) curve_vec;

/* Every (workload, target) with records that o selects, into v. */
static bool read_curves(mlc_db *db, mlc_arena *a, const mlc_report_options *o, curve_vec *v,
                        int *n_workloads, mlc_error *err) {
  mlc_db_workload *ws;
  int n = mlc_db_list_workloads(db, o->task, o->shape, a, &ws, err);
  if (n < 0) return false;
  *n_workloads = n;
  for (int i = 0; i < n; i++) {
    const char **targets, *only[1] = {o->target};
    int nt = o->target ? 1 : mlc_db_targets(db, ws[i].id, a, &targets, err);
    if (nt < 0) return false;
    if (o->target) targets = only;
    for (int t = 0; t < nt; t++) {
      report_curve c;
      if (!report_curve_read(db, a, &ws[i], targets[t], o, &c, err)) return false;
      if (c.n > 0) MLC_VEC_APUSH(a, *v, c);
    }
  }
  return true;
}

/* Why there is nothing to draw, as the page says it. */
static const char *empty_note(mlc_db *db, mlc_arena *a, const mlc_report_options *o,
                              int n_workloads) {
  mlc_error err;
  mlc_db_workload *all;
  int n = mlc_db_list_workloads(db, NULL, NULL, a, &all, &err);
  if (n <= 0) return "The database holds no workloads and no records: nothing was tuned into it.";
  if (n_workloads > 0)
    return o->target ? "The selected workloads have no records for this target."
                     : "The selected workloads have no records.";
  if (!o->task) return "The database holds workloads but no records.";
  return "No workload of this task (and shape) is in the database.";
}

static void put_tasks_present(mlc_str *out, mlc_db *db, mlc_arena *a) {
  mlc_error err;
  mlc_db_workload *all;
  int n = mlc_db_list_workloads(db, NULL, NULL, a, &all, &err);
  if (n <= 0) return;
  mlc_str_puts(out, "<p>Workloads in the database:</p>\n<ul>\n");
  for (int i = 0; i < n; i++) {
    mlc_str_puts(out, "<li>");
    html_escape(out, all[i].task ? all[i].task : "-");
    mlc_str_putc(out, ' ');
    html_escape(out, all[i].shape ? all[i].shape : "");
    mlc_str_printf(out, ": %d records, %d failed</li>\n", all[i].n_records, all[i].n_errors);
  }
  mlc_str_puts(out, "</ul>\n");
}

static void page_intro(mlc_str *out, mlc_db *db, const mlc_report_options *o) {
  char now[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(now, sizeof now, "%Y-%m-%d %H:%M UTC", &tm);
  mlc_str_puts(out, "<p>Database <code>");
  html_escape(out, mlc_db_path(db));
  mlc_str_printf(out, "</code>, written %s by mlc-db report", now);
  if (o->task) mlc_str_puts(out, ", task "), html_escape(out, o->task);
  if (o->shape) mlc_str_puts(out, ", shape "), html_escape(out, o->shape);
  if (o->target) mlc_str_puts(out, ", target "), html_escape(out, o->target);
  mlc_str_puts(out, ". Hover over a dot for its record; click a table heading to sort.</p>\n");
}

static void workload_table(mlc_str *out, const curve_vec *v) {
  mlc_str_puts(out, "<h2>Workloads</h2>\n<table class=\"sortable workloads\"><thead><tr>"
                    "<th class=\"l\">task</th><th class=\"l\">shape</th><th class=\"l\">target</th>"
                    "<th>records</th><th>failed</th><th>best time</th><th>GFLOP/s</th>"
                    "<th>of peak</th><th>best at trial</th></tr></thead><tbody>\n");
  for (int i = 0; i < v->len; i++) report_workload_row(out, &v->data[i]);
  mlc_str_puts(out, "</tbody></table>\n");
}

bool mlc_report_html(mlc_db *db, const mlc_report_options *opts, mlc_str *out,
                     mlc_report_summary *sum, mlc_error *err) {
  mlc_report_options o = *opts;
  if (o.max_dots <= 0) o.max_dots = MLC_REPORT_MAX_DOTS;
  *sum = (mlc_report_summary){0};
  mlc_error ignored;
  /* records tensorized with the host CPU's intrinsics replay (mlc-tune's) */
  mlc_tensor_intrin_register_cpu(mlc_target_host_features(), NULL, &ignored);
  mlc_arena *a = mlc_arena_new();
  curve_vec v = {0};
  int n_workloads = 0;
  bool ok = read_curves(db, a, &o, &v, &n_workloads, err);
  if (ok) {
    html_begin(out, "mlc-tune tuning report");
    page_intro(out, db, &o);
    if (o.model) ok = report_model_section(out, db, a, &o, sum, err);
    if (ok && v.len == 0) {
      sum->note = empty_note(db, a, &o, n_workloads);
      mlc_str_puts(out, "<p class=\"note empty\">");
      html_escape(out, sum->note);
      mlc_str_puts(out, "</p>\n");
      put_tasks_present(out, db, a);
    } else if (ok) {
      workload_table(out, &v);
      for (int i = 0; i < v.len; i++) report_workload_section(out, db, a, &v.data[i], o.max_dots, sum);
    }
    html_end(out);
  }
  mlc_arena_free(a);
  return ok;
}

bool mlc_report_plot(mlc_db *db, const mlc_report_options *opts, mlc_report_figure fig,
                     mlc_report_format format, mlc_str *out, mlc_error *err) {
  mlc_report_options o = *opts;
  if (o.max_dots <= 0) o.max_dots = MLC_REPORT_MAX_DOTS;
  mlc_arena *a = mlc_arena_new();
  curve_vec v = {0};
  int n_workloads = 0;
  bool ok = read_curves(db, a, &o, &v, &n_workloads, err);
  if (ok && v.len == 0) ok = mlc_error_set(err, "%s", empty_note(db, a, &o, n_workloads));
  if (ok) {
    plot p;
    int64_t dots;
    report_curve_figure(a, &v.data[0], fig, o.max_dots, &p, &dots);
    switch (format) {
    case MLC_REPORT_SVG: plot_svg(out, &p, true); break;
    case MLC_REPORT_PNG: plot_png(out, &p, 2); break;
    }
  }
  mlc_arena_free(a);
  return ok;
}
