/* One workload's section of the page: its records of one target read as a
 * curve, the curves against trials and wall time, the distribution of
 * candidate speeds, failures by class, the best schedule. */
#include "report/report_internal.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"

#include <math.h>
#include <string.h>
#include <time.h>

double mlc_report_workload_flops(mlc_arena *a, const mlc_db_workload *w) {
  const mlc_task_def *d = w->task ? mlc_task_find(w->task) : NULL;
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error err;
  if (d && w->shape && mlc_task_parse_shape(d, w->shape, sh, &err)) return mlc_task_flops(d, sh);
  mlc_module *m = w->ir ? mlc_parse_module(a, "workload", w->ir, &err) : NULL;
  if (!m || m->n_funcs < 1) return 0;
  return mlc_func_flops(mlc_module_find(m, "main") ? mlc_module_find(m, "main") : m->funcs[0]);
}

/* created_at ("2026-12-05T00:37:27Z") in seconds; 0 when absent. */
static double parse_time(const char *text) {
  struct tm tm = {0};
  if (!text || !strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm)) return 0;
  return (double)timegm(&tm);
}

static bool ok(const mlc_db_record *r) { return !r->error && r->mean_sec > 0; }

/* What the curves plot for a record: GFLOP/s, or ms per call when the
 * work is unknown. */
static double value(const report_curve *c, const mlc_db_record *r) {
  return c->flops > 0 ? c->flops / r->mean_sec * 1e-9 : r->mean_sec * 1e3;
}

static bool better(const report_curve *c, double a, double b) {
  return c->flops > 0 ? a > b : a < b;
}

bool report_curve_read(mlc_db *db, mlc_arena *a, const mlc_db_workload *w, const char *target,
                       const mlc_report_options *o, report_curve *c, mlc_error *err) {
  mlc_db_record *rs;
  int n = mlc_db_record_summaries(db, w->id, target, a, &rs, err);
  if (n < 0) return false;
  *c = (report_curve){.w = w, .target = target, .n = n, .recs = rs, .best = -1};
  c->flops = mlc_report_workload_flops(a, w);
  c->t0 = n ? parse_time(rs[0].created_at) : 0;
  for (int i = 0; i < n; i++) {
    if (!ok(&rs[i])) {
      c->n_failed++;
      continue;
    }
    if (c->best < 0 || rs[i].mean_sec < rs[c->best].mean_sec) c->best = i;
  }
  c->peak_gflops = o->peak_gflops > 0 ? o->peak_gflops : mlc_report_peak_gflops(target, NULL);
  return true;
}

/* ---- figures ------------------------------------------------------------------ */

typedef MLC_VEC(double) dvec;
typedef MLC_VEC(const char *) svec;

static const char *record_tip(mlc_arena *a, const report_curve *c, int i) {
  const mlc_db_record *r = &c->recs[i];
  if (!ok(r)) return mlc_arena_printf(a, "record %lld, trial %d: %s", (long long)r->id, i + 1,
                                      r->error ? r->error : "no time");
  mlc_str t = {0};
  put_time(&t, r->mean_sec);
  const char *s = c->flops > 0
                      ? mlc_arena_printf(a, "record %lld, trial %d: %s, %.2f GFLOP/s, round %lld",
                                         (long long)r->id, i + 1, mlc_str_cstr(&t),
                                         value(c, r), (long long)r->round)
                      : mlc_arena_printf(a, "record %lld, trial %d: %s, round %lld",
                                         (long long)r->id, i + 1, mlc_str_cstr(&t),
                                         (long long)r->round);
  mlc_str_free(&t);
  return s;
}

/* Wall time of record i, in the unit the axis uses. */
static double wall(const report_curve *c, int i, double unit) {
  return (parse_time(c->recs[i].created_at) - c->t0) / unit;
}

static double wall_unit(const report_curve *c) {
  return c->n && wall(c, c->n - 1, 1) > 1200 ? 60 : 1;
}

/* Dots (every k-th record past max_dots, and every new best), error
 * marks and the best-so-far staircase. */
static void curve_series(mlc_arena *a, const report_curve *c, bool by_wall, int max_dots,
                         plot *p, int64_t *dots) {
  dvec dx = {0}, dy = {0}, ex = {0}, bx = {0}, by = {0};
  svec dt = {0}, et = {0};
  int k = c->n > max_dots ? (c->n + max_dots - 1) / max_dots : 1;
  double unit = wall_unit(c), best = 0;
  bool have = false;
  for (int i = 0; i < c->n; i++) {
    const mlc_db_record *r = &c->recs[i];
    double x = by_wall ? wall(c, i, unit) : i + 1;
    bool is_best = ok(r) && (!have || better(c, value(c, r), best));
    if (is_best) {
      best = value(c, r), have = true;
      MLC_VEC_APUSH(a, bx, x);
      MLC_VEC_APUSH(a, by, best);
    }
    if (i % k != 0 && !is_best) continue;
    if (ok(r)) {
      MLC_VEC_APUSH(a, dx, x);
      MLC_VEC_APUSH(a, dy, value(c, r));
      MLC_VEC_APUSH(a, dt, record_tip(a, c, i));
    } else {
      MLC_VEC_APUSH(a, ex, x);
      MLC_VEC_APUSH(a, et, record_tip(a, c, i));
    }
  }
  plot_add(p, PLOT_DOTS, "pt", "candidate", dx.len, dx.data, dy.data, dt.data);
  plot_add(p, PLOT_ERRORS, "err", "failed", ex.len, ex.data, ex.data, et.data);
  plot_add(p, PLOT_STEP, "best", "best so far", bx.len, bx.data, by.data, NULL);
  p->xmin = by_wall ? 0 : 0.5;
  p->xmax = by_wall ? (c->n ? fmax(wall(c, c->n - 1, unit), 1) : 1) : c->n + 0.5;
  *dots = dx.len + ex.len;
}

/* Candidate speeds in 30 bins from the slowest to the fastest. */
static void histogram(mlc_arena *a, const report_curve *c, plot *p) {
  enum { BINS = 30 };
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < c->n; i++)
    if (ok(&c->recs[i])) lo = fmin(lo, value(c, &c->recs[i])), hi = fmax(hi, value(c, &c->recs[i]));
  if (!isfinite(lo)) return;
  if (hi <= lo) hi = lo + fmax(lo * 0.01, 1e-9);
  double *x = MLC_NEW_ARRAY(a, double, BINS + 1), *y = MLC_NEW_ARRAY(a, double, BINS);
  const char **tips = MLC_NEW_ARRAY(a, const char *, BINS);
  for (int b = 0; b <= BINS; b++) x[b] = lo + (hi - lo) * b / BINS;
  for (int i = 0; i < c->n; i++) {
    if (!ok(&c->recs[i])) continue;
    int b = (int)((value(c, &c->recs[i]) - lo) / (hi - lo) * BINS);
    y[b < BINS ? b : BINS - 1] += 1;
  }
  for (int b = 0; b < BINS; b++)
    tips[b] = mlc_arena_printf(a, "%.0f candidates in %.4g .. %.4g", y[b], x[b], x[b + 1]);
  plot_add(p, PLOT_BARS, "bar", NULL, BINS, x, y, tips);
  p->xmin = lo, p->xmax = hi;
}

void report_curve_figure(mlc_arena *a, const report_curve *c, mlc_report_figure fig,
                         int max_dots, plot *p, int64_t *dots) {
  const char *rate = c->flops > 0 ? "GFLOP/s" : "ms per call";
  *p = (plot){.ylabel = rate, .y2_num = c->flops > 0 ? c->flops * 1e-9 : 0};
  *dots = 0;
  const char *name = mlc_arena_printf(a, "%s %s", c->w->task ? c->w->task : "workload",
                                      c->w->shape ? c->w->shape : "");
  switch (fig) {
  case MLC_REPORT_PLOT_CURVE:
    p->title = mlc_arena_printf(a, "%s: %s against trials", name, rate);
    p->xlabel = "trial (records in the order measured)";
    curve_series(a, c, false, max_dots, p, dots);
    p->attrs = mlc_arena_printf(a, "class=\"curve trials\" data-records=\"%d\" data-dots=\"%lld\"",
                                c->n, (long long)*dots);
    return;
  case MLC_REPORT_PLOT_WALL:
    p->title = mlc_arena_printf(a, "%s: %s against wall time", name, rate);
    p->xlabel = wall_unit(c) > 1 ? "wall time since the first record (min)"
                                 : "wall time since the first record (s)";
    curve_series(a, c, true, max_dots, p, dots);
    p->attrs = mlc_arena_printf(a, "class=\"curve wall\" data-records=\"%d\" data-dots=\"%lld\"",
                                c->n, (long long)*dots);
    return;
  case MLC_REPORT_PLOT_HISTOGRAM:
    p->title = mlc_arena_printf(a, "%s: distribution of candidate speeds", name);
    p->xlabel = rate;
    p->ylabel = "candidates";
    p->y2_num = 0;
    p->attrs = "class=\"histogram\"";
    histogram(a, c, p);
    return;
  }
  mlc_unreachable();
}

/* ---- the section ---------------------------------------------------------------- */

/* First trial reaching 90% of the best speed. */
static int trial_to_90(const report_curve *c) {
  double best = c->recs[c->best].mean_sec;
  for (int i = 0; i < c->n; i++)
    if (ok(&c->recs[i]) && c->recs[i].mean_sec <= best / 0.9) return i + 1;
  return c->best + 1;
}

/* How much faster the final best is than the best after 3/4 of the trials. */
static double last_quarter_gain(const report_curve *c) {
  double early = 0;
  for (int i = 0; i < c->n * 3 / 4; i++)
    if (ok(&c->recs[i]) && (early == 0 || c->recs[i].mean_sec < early)) early = c->recs[i].mean_sec;
  return early > 0 ? early / c->recs[c->best].mean_sec - 1 : -1;
}

static void convergence(mlc_str *o, const report_curve *c) {
  double gain = last_quarter_gain(c);
  mlc_str_printf(o, "<li>the best came at trial %d of %d; 90%% of its speed at trial %d</li>\n",
                 c->best + 1, c->n, trial_to_90(c));
  if (gain < 0) return;
  mlc_str_printf(o, "<li>the last quarter of the trials made the best %.1f%% faster: %s</li>\n",
                 gain * 100,
                 gain > 0.05 ? "still improving, more trials should pay"
                             : "the search has flattened out");
}

static void put_best(mlc_str *o, const report_curve *c) {
  const mlc_db_record *b = &c->recs[c->best];
  mlc_str_puts(o, "<li>best: ");
  put_time(o, b->mean_sec);
  if (c->flops > 0) mlc_str_printf(o, ", %.2f GFLOP/s", c->flops / b->mean_sec * 1e-9);
  mlc_str_printf(o, " (record %lld)</li>\n", (long long)b->id);
  if (c->flops > 0 && c->peak_gflops > 0) {
    mlc_str how = {0};
    mlc_report_peak_gflops(c->target, &how);
    mlc_str_printf(o, "<li>share of peak: %.1f%% of %.0f GFLOP/s (", 100 * c->flops / b->mean_sec *
                   1e-9 / c->peak_gflops, c->peak_gflops);
    html_escape(o, how.len ? mlc_str_cstr(&how) : "as given");
    mlc_str_puts(o, ")</li>\n");
    mlc_str_free(&how);
  } else {
    mlc_str_puts(o, "<li>share of peak: unknown (no peak for this target, or no FLOP count)</li>\n");
  }
}

/* Failed records per class ("crash", "timeout", ...: the error up to ':'). */
static void error_classes(mlc_str *o, const report_curve *c) {
  enum { MAX_CLASSES = 16 };
  const char *keys[MAX_CLASSES];
  size_t lens[MAX_CLASSES];
  int counts[MAX_CLASSES], n = 0, other = 0;
  for (int i = 0; i < c->n; i++) {
    if (ok(&c->recs[i])) continue;
    const char *e = c->recs[i].error ? c->recs[i].error : "";
    size_t len = strchr(e, ':') ? (size_t)(strchr(e, ':') - e) : strlen(e);
    int k = 0;
    while (k < n && (lens[k] != len || strncmp(keys[k], e, len) != 0)) k++;
    if (k == MAX_CLASSES) {
      other++;
      continue;
    }
    if (k == n) keys[n] = e, lens[n] = len, counts[n++] = 0;
    counts[k]++;
  }
  if (n == 0) return;
  mlc_str_puts(o, "<table class=\"errors\"><thead><tr><th class=\"l\">failed: class</th>"
                  "<th>records</th></tr></thead><tbody>\n");
  for (int k = 0; k < n; k++) {
    mlc_str cls = {0};
    mlc_str_putn(&cls, keys[k], lens[k]);
    mlc_str_puts(o, "<tr><td class=\"l\">");
    html_escape(o, cls.len ? mlc_str_cstr(&cls) : "(no time)");
    mlc_str_printf(o, "</td><td>%d</td></tr>\n", counts[k]);
    mlc_str_free(&cls);
  }
  if (other) mlc_str_printf(o, "<tr><td class=\"l\">other</td><td>%d</td></tr>\n", other);
  mlc_str_puts(o, "</tbody></table>\n");
}

/* The best record's trace (Python-like) and its scheduled TVMScript. */
static void best_schedule(mlc_str *o, mlc_db *db, mlc_arena *a, const report_curve *c) {
  mlc_error err;
  mlc_db_record r;
  mlc_str py = {0}, ir = {0};
  const char *why = NULL;
  mlc_module *m = c->w->ir ? mlc_parse_module(a, "workload", c->w->ir, &err) : NULL;
  mlc_trace *t = NULL;
  mlc_prim_func *f = NULL;
  char hash[17];
  if (mlc_db_get_record(db, c->recs[c->best].id, a, &r, &err) != 1) why = err.msg;
  else if (!(t = mlc_trace_from_json(a, r.trace, strlen(r.trace), &err))) why = err.msg;
  if (t) mlc_trace_print(&py, t);
  if (t && (!m || m->n_funcs < 1)) why = "the stored workload IR does not parse";
  else if (t && !mlc_db_replay_trace(a, mlc_module_find(m, "main") ? mlc_module_find(m, "main")
                                                               : m->funcs[0],
                                     r.trace, &f, hash, &err))
    why = err.msg;
  if (f) mlc_print_func(&ir, f);
  mlc_str_printf(o, "<details open><summary>best schedule: trace of record %lld</summary><pre class=\"trace\">",
                 (long long)c->recs[c->best].id);
  html_escape(o, py.len ? mlc_str_cstr(&py) : "(unreadable trace)");
  mlc_str_puts(o, "</pre></details>\n<details><summary>scheduled TVMScript</summary><pre class=\"tvmscript\">");
  if (f) html_escape(o, mlc_str_cstr(&ir));
  else mlc_str_puts(o, "(does not replay: "), html_escape(o, why), mlc_str_puts(o, ")");
  mlc_str_puts(o, "</pre></details>\n");
  mlc_str_free(&py), mlc_str_free(&ir);
}

/* The section's id: workload id and target, letters and digits only. */
void report_put_anchor(mlc_str *o, int64_t workload_id, const char *target) {
  mlc_str_printf(o, "w%lld-", (long long)workload_id);
  for (const char *t = target; *t; t++)
    mlc_str_putc(o, (*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9') ? *t : '_');
}

static void section_head(mlc_str *o, const report_curve *c) {
  mlc_str_puts(o, "<section class=\"workload\" id=\"");
  report_put_anchor(o, c->w->id, c->target);
  mlc_str_puts(o, "\">\n<h2>");
  html_escape(o, c->w->task ? c->w->task : "workload");
  mlc_str_putc(o, ' ');
  html_escape(o, c->w->shape ? c->w->shape : "");
  mlc_str_puts(o, " <small>");
  html_escape(o, c->target);
  mlc_str_puts(o, "</small></h2>\n<ul class=\"facts\">\n");
  mlc_str_printf(o, "<li>%d records, %d failed (workload %lld, hash %s)</li>\n", c->n, c->n_failed,
                 (long long)c->w->id, c->w->hash ? c->w->hash : "-");
}

void report_workload_section(mlc_str *o, mlc_db *db, mlc_arena *a, const report_curve *c,
                             int max_dots, mlc_report_summary *sum) {
  section_head(o, c);
  if (c->best >= 0) put_best(o, c), convergence(o, c);
  mlc_str_puts(o, "</ul>\n");
  if (c->best < 0)
    mlc_str_printf(o, "<p class=\"note\">No successful record: all %d candidates failed. Their"
                      " errors by class are below; nothing here can be compiled.</p>\n", c->n);
  plot p;
  int64_t dots, wall_dots;
  mlc_str_puts(o, "<div class=\"row\">\n");
  report_curve_figure(a, c, MLC_REPORT_PLOT_CURVE, max_dots, &p, &dots);
  plot_svg(o, &p, false);
  report_curve_figure(a, c, MLC_REPORT_PLOT_WALL, max_dots, &p, &wall_dots);
  plot_svg(o, &p, false);
  mlc_str_puts(o, "</div>\n");
  if (dots < c->n) {
    int k = (c->n + max_dots - 1) / max_dots;
    mlc_str_printf(o, "<p class=\"note downsampled\">Downsampled: %lld of %d candidates drawn (every"
                      " %d-th, and every new best); the best-so-far line uses all of them.</p>\n",
                   (long long)dots, c->n, k);
    sum->downsampled++;
  }
  mlc_str_puts(o, "<div class=\"row\">\n");
  if (c->best >= 0) {
    report_curve_figure(a, c, MLC_REPORT_PLOT_HISTOGRAM, max_dots, &p, &wall_dots);
    plot_svg(o, &p, false);
  }
  error_classes(o, c);
  mlc_str_puts(o, "</div>\n");
  if (c->best >= 0) best_schedule(o, db, a, c);
  mlc_str_puts(o, "</section>\n");
  sum->workloads++;
  sum->records += c->n;
  sum->dots += dots;
}

void report_workload_row(mlc_str *o, const report_curve *c) {
  mlc_str_puts(o, "<tr><td class=\"l\"><a href=\"#");
  report_put_anchor(o, c->w->id, c->target);
  mlc_str_puts(o, "\">");
  html_escape(o, c->w->task ? c->w->task : "workload");
  mlc_str_puts(o, "</a></td><td class=\"l\">");
  html_escape(o, c->w->shape ? c->w->shape : "");
  mlc_str_puts(o, "</td><td class=\"l\">");
  html_escape(o, c->target);
  mlc_str_printf(o, "</td><td>%d</td><td>%d</td>", c->n, c->n_failed);
  if (c->best < 0) {
    mlc_str_puts(o, "<td data-v=\"0\">-</td><td data-v=\"0\">-</td><td data-v=\"0\">-</td><td>-</td></tr>\n");
    return;
  }
  double sec = c->recs[c->best].mean_sec, g = c->flops > 0 ? c->flops / sec * 1e-9 : 0;
  mlc_str_printf(o, "<td data-v=\"%.6g\">", sec);
  put_time(o, sec);
  mlc_str_printf(o, "</td><td data-v=\"%.6g\">", g);
  if (g > 0) mlc_str_printf(o, "%.2f", g);
  else mlc_str_putc(o, '-');
  if (g > 0 && c->peak_gflops > 0)
    mlc_str_printf(o, "</td><td data-v=\"%.4g\">%.1f%%</td>", g / c->peak_gflops,
                   100 * g / c->peak_gflops);
  else mlc_str_puts(o, "</td><td data-v=\"0\">-</td>");
  mlc_str_printf(o, "<td>%d</td></tr>\n", c->best + 1);
}
