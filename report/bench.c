/* The bench page: bench/results.json (bench/results.h) as tables of ours
 * against each case's baseline, a pair of bars per case, grouped by unit.
 * The file is input: every field is checked, a case without a name, a
 * finite value and a unit is skipped and counted on the page. */
#include "report/report_internal.h"

#include <math.h>
#include <string.h>

typedef struct bench_row {
  const char *name, *unit, *baseline, *notes;
  double value, baseline_value; /* baseline_value 0: none */
} bench_row;

static const char *str_field(const mlc_json *o, const char *key) {
  const mlc_json *v = mlc_json_get(o, key);
  return v && v->kind == MLC_JSON_STRING ? v->str : NULL;
}

static double num_field(const mlc_json *o, const char *key) {
  const mlc_json *v = mlc_json_get(o, key);
  return v && v->kind == MLC_JSON_NUMBER && isfinite(v->number) ? v->number : NAN;
}

static bool read_row(const mlc_json *c, bench_row *r) {
  if (c->kind != MLC_JSON_OBJECT) return false;
  *r = (bench_row){str_field(c, "name"), str_field(c, "unit"), str_field(c, "baseline"),
                   str_field(c, "notes"), num_field(c, "value"), num_field(c, "baseline_value")};
  if (!r->name || !r->unit || isnan(r->value)) return false;
  if (!r->baseline || isnan(r->baseline_value) || r->baseline_value <= 0) r->baseline_value = 0;
  return true;
}

/* Times are better lower; rates (GFLOP/s, replays/s, ...) higher. */
static bool lower_is_better(const char *unit) {
  static const char *const times[] = {"s", "ms", "us", "ns"};
  for (size_t i = 0; i < MLC_COUNTOF(times); i++)
    if (strcmp(unit, times[i]) == 0) return true;
  return false;
}

/* Ours over the baseline as a speed ratio (above 1: ours is faster). */
static double speedup(const bench_row *r) {
  if (r->baseline_value <= 0 || r->value <= 0) return 0;
  return lower_is_better(r->unit) ? r->baseline_value / r->value : r->value / r->baseline_value;
}

static void bars(mlc_str *o, const bench_row *r) {
  double hi = fmax(fabs(r->value), r->baseline_value);
  if (!(hi > 0)) return;
  double w0 = 180 * fabs(r->value) / hi, w1 = 180 * r->baseline_value / hi;
  mlc_str_printf(o, "<svg class=\"pair\" width=\"190\" height=\"22\" viewBox=\"0 0 190 22\">"
                    "<rect class=\"bar\" x=\"0\" y=\"1\" width=\"%.1f\" height=\"9\"><title>ours</title></rect>",
                 w0);
  if (r->baseline_value > 0)
    mlc_str_printf(o, "<rect class=\"bar2\" x=\"0\" y=\"12\" width=\"%.1f\" height=\"9\"><title>", w1),
        html_escape(o, r->baseline), mlc_str_puts(o, "</title></rect>");
  mlc_str_puts(o, "</svg>");
}

static void row(mlc_str *o, const bench_row *r) {
  mlc_str_puts(o, "<tr><td class=\"l\">");
  html_escape(o, r->name);
  mlc_str_printf(o, "</td><td data-v=\"%.6g\">%.4g</td><td class=\"l\">", r->value, r->value);
  html_escape(o, r->baseline ? r->baseline : "-");
  if (r->baseline_value > 0) mlc_str_printf(o, "</td><td data-v=\"%.6g\">%.4g", r->baseline_value, r->baseline_value);
  else mlc_str_puts(o, "</td><td data-v=\"0\">-");
  double s = speedup(r);
  if (s > 0) mlc_str_printf(o, "</td><td data-v=\"%.6g\">%.2fx", s, s);
  else mlc_str_puts(o, "</td><td data-v=\"0\">-");
  mlc_str_puts(o, "</td><td class=\"l\">");
  bars(o, r);
  mlc_str_puts(o, "</td><td class=\"l\">");
  html_escape(o, r->notes ? r->notes : "");
  mlc_str_puts(o, "</td></tr>\n");
}

static void unit_table(mlc_str *o, const char *unit, int n, const bench_row *rows) {
  mlc_str_puts(o, "<h2>Cases in ");
  html_escape(o, unit);
  mlc_str_printf(o, " <small>(%s is better)</small></h2>\n", lower_is_better(unit) ? "lower" : "higher");
  mlc_str_puts(o, "<table class=\"sortable bench\"><thead><tr><th class=\"l\">case</th><th>ours</th>"
                  "<th class=\"l\">baseline</th><th>baseline value</th><th>speed-up</th>"
                  "<th class=\"l\">ours (blue) vs baseline (orange)</th><th class=\"l\">notes</th>"
                  "</tr></thead><tbody>\n");
  for (int i = 0; i < n; i++)
    if (strcmp(rows[i].unit, unit) == 0) row(o, &rows[i]);
  mlc_str_puts(o, "</tbody></table>\n");
}

static void machine(mlc_str *o, const mlc_json *doc) {
  const mlc_json *m = mlc_json_get(doc, "machine");
  if (!m || m->kind != MLC_JSON_OBJECT) return;
  mlc_str_puts(o, "<p>Machine: ");
  for (int i = 0; i < m->len; i++) {
    if (i) mlc_str_puts(o, ", ");
    html_escape(o, m->keys[i]);
    mlc_str_puts(o, " ");
    if (m->items[i]->kind == MLC_JSON_STRING) html_escape(o, m->items[i]->str);
    else if (m->items[i]->kind == MLC_JSON_NUMBER) mlc_str_printf(o, "%.6g", m->items[i]->number);
  }
  mlc_str_puts(o, ".</p>\n");
}

bool mlc_report_bench_html(const char *text, size_t len, const char *source, mlc_str *out,
                           int *n_cases, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  const mlc_json *doc = mlc_json_parse(a, text, len, err);
  const mlc_json *cases = doc && doc->kind == MLC_JSON_OBJECT ? mlc_json_get(doc, "cases") : NULL;
  if (doc && (!cases || cases->kind != MLC_JSON_ARRAY))
    mlc_error_set(err, "expected an object with a \"cases\" array (bench/results.h)");
  if (!cases || cases->kind != MLC_JSON_ARRAY) {
    mlc_error_prefix(err, "%s", source);
    mlc_arena_free(a);
    return false;
  }
  bench_row *rows = MLC_NEW_ARRAY(a, bench_row, cases->len + 1);
  int n = 0, skipped = 0;
  for (int i = 0; i < cases->len; i++) {
    if (read_row(cases->items[i], &rows[n])) n++;
    else skipped++;
  }
  html_begin(out, "mlc-tune benchmarks");
  mlc_str_puts(out, "<p>From <code>");
  html_escape(out, source);
  mlc_str_printf(out, "</code>: %d cases. Speed-up: the baseline's time over ours (or our rate"
                      " over its): above 1x ours is faster. Click a heading to sort.</p>\n", n);
  machine(out, doc);
  if (skipped)
    mlc_str_printf(out, "<p class=\"note\">%d cases skipped: not objects with a name, a finite"
                        " value and a unit.</p>\n", skipped);
  if (n == 0) mlc_str_puts(out, "<p class=\"note empty\">No benchmark cases in the file.</p>\n");
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < i && strcmp(rows[j].unit, rows[i].unit) != 0) j++;
    if (j == i) unit_table(out, rows[i].unit, n, rows);
  }
  html_end(out);
  *n_cases = n;
  mlc_arena_free(a);
  return true;
}
