/* mlc-db: look at and move tuning records (db/db.h).
 *
 *   mlc-db list                          workloads, record counts, best GFLOP/s per target
 *   mlc-db top --task matmul [-k 5]      best records of a task
 *   mlc-db show ID [--ir]                one record: trace, run times, scheduled IR
 *   mlc-db stats                         records per error class and per target
 *   mlc-db export [--task T] > f.jsonl   JSON lines (docs/DATABASE.md)
 *   mlc-db import f.jsonl                the same back, duplicates skipped
 *   mlc-db report [--task T] [--model M] [-o report.html]   the page of report/report.h
 *   mlc-db plot [--task T] [--figure F] -o curve.svg|png     one figure of it
 */
#include "db/db.h"
#include "report/report.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: mlc-db [--db PATH] COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  list                      workloads: task, shape, records, best GFLOP/s per target\n"
    "  top --task NAME           best records of a task (all its shapes unless --shape);\n"
    "                            REPLAY says whether each replays to the function it\n"
    "                            measured (DIFFERS: tampered or another version;\n"
    "                            NO-HASH: written outside mlc-tune; mlc-compile skips both)\n"
    "  show ID                   one record: trace (Python-like), run times, error\n"
    "  stats                     records per error class and per target\n"
    "  export                    every record as one JSON object per line, on stdout\n"
    "  import FILE               read JSON lines (FILE or - for stdin); duplicates are\n"
    "                            skipped; every trace is replayed on its workload and\n"
    "                            must verify (and match a stated sched_hash), run times\n"
    "                            must be finite and positive; a bad line changes nothing\n"
    "  report                    one self-contained HTML page (-o, default report.html):\n"
    "                            per workload and target the tuning curve against trials\n"
    "                            and wall time (every candidate a dot, failures marked),\n"
    "                            the distribution of speeds, the best trace and scheduled\n"
    "                            TVMScript, its share of peak; with --model, the model's\n"
    "                            kernels ranked by calls x time, the trials per kernel over\n"
    "                            time, the latency estimate as tuning went\n"
    "  plot                      one figure of the first selected workload, SVG or PNG by -o\n"
    "\n"
    "Options:\n"
    "      --db PATH      database file (default: $MLC_DB, else ./mlc.db), or a\n"
    "                     PostgreSQL URL: postgresql://user@host/dbname\n"
    "  -t, --task NAME    task name (top, list, export, report, plot)\n"
    "  -s, --shape S      shape of the task, e.g. 128,128,128 (top, list, report, plot)\n"
    "      --target T     only records of this target (top, report, plot), e.g. \"llvm\"\n"
    "  -k N               how many records top shows (default 5)\n"
    "      --ir           show: also print the scheduled TensorIR\n"
    "      --intrin FILE.py  register the tensor intrinsics of FILE.py (NAME_desc/\n"
    "                     NAME_impl pairs), as mlc-tune --intrin did, so records\n"
    "                     tensorized with them replay (top, show --ir, import;\n"
    "                     repeatable)\n"
    "      --json         machine-readable output\n"
    "  -o, --output FILE  report: the page (default report.html); plot: F.svg or F.png\n"
    "      --model FILE   report: a model (.onnx or JSON) whose kernels to rank\n"
    "      --bench FILE   report: the benchmarks' page of FILE (bench/results.json:\n"
    "                     ours against each baseline per case), no database read\n"
    "      --figure F     plot: curve (GFLOP/s against trials, default), wall\n"
    "                     (against wall time) or histogram (speeds)\n"
    "      --max-dots N   report, plot: dots per curve before downsampling (2000)\n"
    "      --peak-gflops X  report: the machine's peak (default: estimated from\n"
    "                     the target: cores x lanes x 2 x 2 x clock)\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit status: 0 success, 1 failure (unreadable database, missing record, bad\n"
    "input), 2 bad usage.\n";

typedef struct options {
  const char *db, *command, *arg, *task, *shape, *target;
  const char *output, *model, *figure, *bench; /* report, plot */
  int k, max_dots;
  double peak_gflops;
  bool ir, json;
  const char *intrins[8]; /* --intrin files */
  int n_intrins;
} options;

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mlc-db: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'mlc-db --help'.\n");
  return 2;
}

static int fail(const char *msg) {
  fprintf(stderr, "mlc-db: error: %s\n", msg);
  return 1;
}

/* ---- formatting ---------------------------------------------------------- */

static void put_time(mlc_str *s, double sec) {
  if (sec >= 1e-3) mlc_str_printf(s, "%.4g ms", sec * 1e3);
  else mlc_str_printf(s, "%.4g us", sec * 1e6);
}


/* Floating-point work of a workload: the built-in task's count, otherwise
 * counted from its stored IR (--task-file and model kernels); 0 if the IR
 * does not parse. */
static double workload_flops(mlc_arena *a, const mlc_db_workload *w) {
  return mlc_report_workload_flops(a, w);
}

static void put_gflops(mlc_str *s, double flops, double sec) {
  if (flops > 0 && sec > 0) mlc_str_printf(s, "%.2f GFLOP/s", flops / sec * 1e-9);
  else mlc_str_puts(s, "-");
}

static void flush_out(mlc_str *s) {
  fputs(mlc_str_cstr(s), stdout);
  mlc_str_clear(s);
}

/* ---- list ------------------------------------------------------------------ */

static void list_json_row(mlc_str *o, const mlc_db_workload *w, const char *target,
                          const mlc_db_record *best, double flops, bool *first_row) {
  if (!*first_row) mlc_str_putc(o, ',');
  *first_row = false;
  bool f = true;
  mlc_str_putc(o, '{');
  mlc_json_write_member_number(o, &f, "workload_id", (double)w->id);
  mlc_json_write_member_string(o, &f, "task", w->task);
  mlc_json_write_member_string(o, &f, "shape", w->shape);
  mlc_json_write_member_string(o, &f, "hash", w->hash);
  mlc_json_write_member_number(o, &f, "records", w->n_records);
  mlc_json_write_member_number(o, &f, "errors", w->n_errors);
  mlc_json_write_member_string(o, &f, "target", target);
  mlc_json_write_key(o, &f, "best_mean_sec");
  if (best) mlc_json_write_number(o, best->mean_sec);
  else mlc_str_puts(o, "null");
  mlc_json_write_key(o, &f, "best_gflops");
  if (best && flops > 0) mlc_json_write_number(o, flops / best->mean_sec * 1e-9);
  else mlc_str_puts(o, "null");
  mlc_str_putc(o, '}');
}

static void list_text_row(mlc_str *o, const mlc_db_workload *w, const char *target,
                          const mlc_db_record *best, double flops) {
  mlc_str cell = {0};
  if (best) {
    put_gflops(&cell, flops, best->mean_sec);
    mlc_str_puts(&cell, " (");
    put_time(&cell, best->mean_sec);
    mlc_str_putc(&cell, ')');
  } else {
    mlc_str_puts(&cell, "-");
  }
  mlc_str_printf(o, "%-4lld %-18s %-16s %7d %6d  %-28s %s\n", (long long)w->id,
                 w->task ? w->task : "-", w->shape ? w->shape : "-", w->n_records, w->n_errors,
                 mlc_str_cstr(&cell), target ? target : "-");
  mlc_str_free(&cell);
}

static int cmd_list(mlc_db *db, const options *o, mlc_arena *a) {
  mlc_error err;
  mlc_db_workload *ws;
  int n = mlc_db_list_workloads(db, o->task, o->shape, a, &ws, &err);
  if (n < 0) return fail(err.msg);
  mlc_str out = {0};
  bool first = true;
  if (o->json) mlc_str_putc(&out, '[');
  else mlc_str_printf(&out, "%-4s %-18s %-16s %7s %6s  %-28s %s\n", "ID", "TASK", "SHAPE",
                      "RECORDS", "ERRORS", "BEST", "TARGET");
  for (int i = 0; i < n; i++) {
    const char **targets;
    int nt = mlc_db_targets(db, ws[i].id, a, &targets, &err);
    if (nt < 0) return mlc_str_free(&out), fail(err.msg);
    double flops = workload_flops(a, &ws[i]);
    for (int t = 0; t < (nt ? nt : 1); t++) {
      mlc_db_record *best = NULL;
      if (nt && mlc_db_top_k(db, ws[i].id, targets[t], 1, a, &best, &err) < 1) best = NULL;
      const char *target = nt ? targets[t] : NULL;
      if (o->json) list_json_row(&out, &ws[i], target, best, flops, &first);
      else list_text_row(&out, &ws[i], target, best, flops);
    }
  }
  if (o->json) mlc_str_puts(&out, "]\n");
  flush_out(&out);
  mlc_str_free(&out);
  return 0;
}

/* ---- top ----------------------------------------------------------------------- */

/* The shape as the database stores it ("16,16,16"), for a built-in task. */
static bool canonical_shape(const options *o, char *buf, size_t n) {
  const mlc_task_def *d = mlc_task_find(o->task);
  if (!o->shape) return false;
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error err;
  if (d && mlc_task_parse_shape(d, o->shape, sh, &err)) mlc_task_shape_str(d, sh, buf, n);
  else snprintf(buf, n, "%s", o->shape);
  return true;
}

static void top_row(mlc_str *out, const mlc_db_workload *w, const mlc_db_record *r,
                    const char *check, int rank, double flops, const char *lib) {
  mlc_str t = {0}, g = {0};
  put_time(&t, r->mean_sec);
  put_gflops(&g, flops, r->mean_sec);
  mlc_str_printf(out, "%4d  %-6lld %-12s %-16s %-16s %s  %-9s  %s%s%s\n", rank, (long long)r->id,
                 mlc_str_cstr(&t), mlc_str_cstr(&g), w->shape ? w->shape : "-", r->trace_hash,
                 check, r->target, lib ? "  library " : "", lib ? lib : "");
  mlc_str_free(&t), mlc_str_free(&g);
}

static int cmd_top(mlc_db *db, const options *o, mlc_arena *a) {
  mlc_error err;
  char shape[256];
  bool by_shape = canonical_shape(o, shape, sizeof shape);
  mlc_db_workload *ws;
  int n = mlc_db_list_workloads(db, o->task, by_shape ? shape : NULL, a, &ws, &err);
  if (n < 0) return fail(err.msg);
  if (n == 0 && !mlc_task_find(o->task) &&
      mlc_db_list_workloads(db, o->task, NULL, a, &ws, &err) == 0) {
    fprintf(stderr, "mlc-db: error: unknown task '%s' (tasks: %s)\n", o->task, mlc_task_names());
    return 1;
  }
  mlc_str out = {0};
  int shown = 0;
  if (o->json) {
    mlc_report_options r = {.task = o->task, .shape = by_shape ? shape : NULL, .target = o->target};
    bool ok = mlc_report_top_json(db, &r, o->k, &out, &shown, &err);
    if (ok) flush_out(&out);
    mlc_str_free(&out);
    return ok ? 0 : fail(err.msg);
  }
  mlc_str_printf(&out, "%4s  %-6s %-12s %-16s %-16s %-16s  %-9s  %s\n", "RANK", "ID", "MEAN", "RATE",
                 "SHAPE", "TRACE", "REPLAY", "TARGET");
  for (int i = 0; i < n; i++) {
    const char **targets, *only[1] = {o->target};
    int nt = o->target ? 1 : mlc_db_targets(db, ws[i].id, a, &targets, &err);
    if (o->target) targets = only;
    double flops = workload_flops(a, &ws[i]);
    const mlc_prim_func *wf = mlc_report_workload_func(a, &ws[i]);
    for (int t = 0; t < nt; t++) {
      mlc_db_record *rs;
      int k = mlc_db_top_k(db, ws[i].id, targets[t], o->k, a, &rs, &err);
      if (k < 0) return mlc_str_free(&out), fail(err.msg);
      for (int j = 0; j < k; j++)
        top_row(&out, &ws[i], &rs[j], mlc_report_replay_check(a, wf, &rs[j]), j + 1, flops,
                mlc_report_record_library(a, &rs[j]));
      shown += k;
    }
  }
  if (shown == 0) {
    mlc_str_free(&out);
    fprintf(stderr, "mlc-db: no successful records for task '%s'%s%s\n", o->task,
            by_shape ? " shape " : "", by_shape ? shape : "");
    return 0;
  }
  flush_out(&out);
  mlc_str_free(&out);
  return 0;
}

/* ---- show ----------------------------------------------------------------------------- */

static void show_text(mlc_str *o, const mlc_db_record *r, const mlc_db_workload *w, double flops,
                      const char *py, const char *ir) {
  mlc_str_printf(o, "record %lld\n", (long long)r->id);
  mlc_str_printf(o, "  workload:  %lld (%s %s, hash %s)\n", (long long)w->id,
                 w->task ? w->task : "-", w->shape ? w->shape : "-", w->hash);
  mlc_str_printf(o, "  target:    %s\n", r->target);
  mlc_str_printf(o, "  trace:     %s\n", r->trace_hash);
  mlc_str_printf(o, "  scheduled: %s\n", r->sched_hash ? r->sched_hash : "- (not recorded)");
  if (r->error) {
    mlc_str_printf(o, "  error:     %s\n", r->error);
  } else {
    mlc_str_puts(o, "  mean:      ");
    put_time(o, r->mean_sec);
    mlc_str_puts(o, ", ");
    put_gflops(o, flops, r->mean_sec);
    mlc_str_puts(o, "\n  run times:");
    for (int i = 0; i < r->n_secs; i++) {
      mlc_str_puts(o, i ? ", " : " ");
      put_time(o, r->secs[i]);
    }
    mlc_str_putc(o, '\n');
  }
  mlc_str_printf(o, "  round:     %lld\n  host:      %s\n  version:   %s\n  created:   %s\n\n",
                 (long long)r->round, r->host ? r->host : "-",
                 r->mlc_version ? r->mlc_version : "-", r->created_at ? r->created_at : "-");
  mlc_str_puts(o, py);
  if (ir) {
    mlc_str_puts(o, "\n# scheduled TensorIR\n");
    mlc_str_puts(o, ir);
  }
}

static int cmd_show(mlc_db *db, const options *o, mlc_arena *a) {
  char *end;
  long long id = strtoll(o->arg, &end, 10);
  if (*end || !*o->arg || id <= 0) return usage_error("show expects a record id, got '%s'", o->arg);
  mlc_error err;
  mlc_db_record r;
  int found = mlc_db_get_record(db, id, a, &r, &err);
  if (found < 0) return fail(err.msg);
  if (!found) {
    fprintf(stderr, "mlc-db: error: no record %lld in %s\n", id, mlc_db_path(db));
    return 1;
  }
  mlc_db_workload w;
  if (!mlc_db_get_workload(db, r.workload_id, a, &w, &err)) return fail(err.msg);
  mlc_str py = {0}, ir = {0}, out = {0};
  int rc = 0;
  if (!mlc_report_trace_python(r.trace, &py, &err)) rc = fail(err.msg);
  else if (o->ir && !mlc_report_scheduled_ir(w.ir, r.trace, &ir, &err)) rc = fail(err.msg);
  if (!rc) {
    double flops = workload_flops(a, &w);
    if (o->json) mlc_report_record_json(&out, &r, &w, flops, NULL, o->ir ? mlc_str_cstr(&ir) : NULL);
    else show_text(&out, &r, &w, flops, mlc_str_cstr(&py), o->ir ? mlc_str_cstr(&ir) : NULL);
    flush_out(&out);
  }
  mlc_str_free(&py), mlc_str_free(&ir), mlc_str_free(&out);
  return rc;
}

/* ---- stats ------------------------------------------------------------------------------ */

static void put_counts(mlc_str *o, bool json, const char *title, int n, const mlc_db_count *c) {
  if (json) {
    mlc_json_write_string(o, title);
    mlc_str_puts(o, ":{");
    for (int i = 0; i < n; i++) {
      if (i) mlc_str_putc(o, ',');
      mlc_json_write_string(o, c[i].key);
      mlc_str_printf(o, ":%lld", (long long)c[i].n);
    }
    mlc_str_putc(o, '}');
    return;
  }
  mlc_str_printf(o, "%s:\n", title);
  for (int i = 0; i < n; i++) mlc_str_printf(o, "  %-40s %lld\n", c[i].key, (long long)c[i].n);
  if (n == 0) mlc_str_puts(o, "  (none)\n");
}

static int cmd_stats(mlc_db *db, const options *o, mlc_arena *a) {
  mlc_error err;
  mlc_db_count *by_err, *by_target;
  mlc_db_workload *ws;
  int nw = mlc_db_list_workloads(db, NULL, NULL, a, &ws, &err);
  int ne = nw < 0 ? -1 : mlc_db_count_by_error(db, a, &by_err, &err);
  int nt = ne < 0 ? -1 : mlc_db_count_by_target(db, a, &by_target, &err);
  if (nt < 0) return fail(err.msg);
  int64_t total = 0;
  for (int i = 0; i < ne; i++) total += by_err[i].n;
  mlc_str out = {0};
  if (o->json) {
    mlc_str_printf(&out, "{\"workloads\":%d,\"records\":%lld,", nw, (long long)total);
    put_counts(&out, true, "by_class", ne, by_err);
    mlc_str_putc(&out, ',');
    put_counts(&out, true, "by_target", nt, by_target);
    mlc_str_puts(&out, "}\n");
  } else {
    mlc_str_printf(&out, "database: %s\nworkloads: %d\nrecords: %lld\n", mlc_db_path(db), nw,
                   (long long)total);
    put_counts(&out, false, "records per class", ne, by_err);
    put_counts(&out, false, "records per target", nt, by_target);
  }
  flush_out(&out);
  mlc_str_free(&out);
  return 0;
}

/* ---- export and import ---------------------------------------------------------------------- */

static int cmd_export(mlc_db *db, const options *o) {
  mlc_error err;
  int64_t n = mlc_db_export(db, o->task, stdout, &err);
  if (n < 0) return fail(err.msg);
  if (fflush(stdout) != 0) return fail("writing to stdout failed");
  return 0;
}

static char *read_stdin(size_t *len) {
  mlc_str s = {0};
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, stdin)) > 0) mlc_str_putn(&s, buf, k);
  *len = s.len;
  if (!s.data) mlc_str_puts(&s, "");
  return mlc_str_take(&s);
}

static int cmd_import(mlc_db *db, const options *o) {
  mlc_error err;
  size_t len;
  char *text = strcmp(o->arg, "-") == 0 ? read_stdin(&len) : mlc_read_file(o->arg, &len, &err);
  if (!text) return fail(err.msg);
  int64_t added, dup;
  bool ok = mlc_db_import(db, text, len, &added, &dup, &err);
  mlc_free(text);
  if (!ok) {
    fprintf(stderr, "mlc-db: error: %s: %s (nothing imported)\n", o->arg, err.msg);
    return 1;
  }
  if (o->json) printf("{\"imported\":%lld,\"duplicates\":%lld}\n", (long long)added, (long long)dup);
  else printf("imported %lld records (%lld duplicates skipped)\n", (long long)added, (long long)dup);
  return 0;
}

/* ---- report and plot ------------------------------------------------------------------------ */

/* s into path, then freed; 0, or 1 with the error printed. */
static int write_page(const char *path, mlc_str *s) {
  mlc_error err;
  bool ok = mlc_write_file(path, s->data ? s->data : "", s->len, &err);
  mlc_str_free(s);
  return ok ? 0 : fail(err.msg);
}

static void report_options(const options *o, mlc_report_options *r, char *shape, size_t n) {
  *r = (mlc_report_options){.task = o->task, .target = o->target, .model = o->model,
                            .max_dots = o->max_dots, .peak_gflops = o->peak_gflops};
  if (o->task && canonical_shape(o, shape, n)) r->shape = shape;
}

static int cmd_report(mlc_db *db, const options *o) {
  mlc_report_options r;
  char shape[256];
  report_options(o, &r, shape, sizeof shape);
  const char *path = o->output ? o->output : "report.html";
  mlc_str page = {0};
  mlc_report_summary sum;
  mlc_error err;
  if (!mlc_report_html(db, &r, &page, &sum, &err)) return mlc_str_free(&page), fail(err.msg);
  if (write_page(path, &page)) return 1;
  printf("wrote %s: %d curves, %lld records, %lld dots", path, sum.workloads,
         (long long)sum.records, (long long)sum.dots);
  if (sum.downsampled) printf(" (%d curves downsampled)", sum.downsampled);
  if (o->model) printf(", %d model kernels in the database", sum.kernels);
  printf("\n");
  if (sum.note) printf("note: %s\n", sum.note);
  return 0;
}

static int cmd_bench_report(const options *o) {
  mlc_error err;
  size_t len;
  char *text = mlc_read_file(o->bench, &len, &err);
  if (!text) return fail(err.msg);
  const char *path = o->output ? o->output : "report.html";
  mlc_str page = {0};
  int n;
  bool ok = mlc_report_bench_html(text, len, o->bench, &page, &n, &err);
  mlc_free(text);
  if (!ok) return mlc_str_free(&page), fail(err.msg);
  if (write_page(path, &page)) return 1;
  printf("wrote %s: %d benchmark cases\n", path, n);
  return 0;
}

static int cmd_plot(mlc_db *db, const options *o) {
  static const struct {
    const char *name;
    mlc_report_figure fig;
  } figures[] = {{"curve", MLC_REPORT_PLOT_CURVE},
                 {"wall", MLC_REPORT_PLOT_WALL},
                 {"histogram", MLC_REPORT_PLOT_HISTOGRAM}};
  size_t f = 0;
  while (o->figure && f < MLC_COUNTOF(figures) && strcmp(figures[f].name, o->figure) != 0) f++;
  if (f == MLC_COUNTOF(figures))
    return usage_error("--figure expects curve, wall or histogram, got '%s'", o->figure);
  const char *dot = strrchr(o->output, '.');
  mlc_report_format format;
  if (dot && !strcmp(dot, ".svg")) format = MLC_REPORT_SVG;
  else if (dot && !strcmp(dot, ".png")) format = MLC_REPORT_PNG;
  else return usage_error("plot writes SVG or PNG: -o must end in .svg or .png, got '%s'", o->output);
  mlc_report_options r;
  char shape[256];
  report_options(o, &r, shape, sizeof shape);
  mlc_str figure = {0};
  mlc_error err;
  if (!mlc_report_plot(db, &r, figures[f].fig, format, &figure, &err))
    return mlc_str_free(&figure), fail(err.msg);
  if (write_page(o->output, &figure)) return 1;
  printf("wrote %s\n", o->output);
  return 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, options *o) {
  enum { OPT_DB = 256, OPT_TARGET, OPT_IR, OPT_JSON, OPT_INTRIN, OPT_MODEL, OPT_FIGURE,
         OPT_MAX_DOTS, OPT_PEAK, OPT_BENCH };
  static const struct option longopts[] = {
      {"db", required_argument, 0, OPT_DB},   {"task", required_argument, 0, 't'},
      {"shape", required_argument, 0, 's'},   {"target", required_argument, 0, OPT_TARGET},
      {"ir", no_argument, 0, OPT_IR},         {"json", no_argument, 0, OPT_JSON},
      {"intrin", required_argument, 0, OPT_INTRIN},
      {"output", required_argument, 0, 'o'},  {"model", required_argument, 0, OPT_MODEL},
      {"figure", required_argument, 0, OPT_FIGURE},
      {"max-dots", required_argument, 0, OPT_MAX_DOTS},
      {"peak-gflops", required_argument, 0, OPT_PEAK},
      {"bench", required_argument, 0, OPT_BENCH},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "t:s:k:o:h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_DB: o->db = optarg; break;
    case 't': o->task = optarg; break;
    case 's': o->shape = optarg; break;
    case OPT_TARGET: o->target = optarg; break;
    case OPT_IR: o->ir = true; break;
    case OPT_JSON: o->json = true; break;
    case 'o': o->output = optarg; break;
    case OPT_MODEL: o->model = optarg; break;
    case OPT_FIGURE: o->figure = optarg; break;
    case OPT_BENCH: o->bench = optarg; break;
    case OPT_MAX_DOTS: {
      char *end;
      long k = strtol(optarg, &end, 10);
      if (*end || !*optarg || k < 1 || k > 10000000)
        return usage_error("--max-dots expects a positive number, got '%s'", optarg);
      o->max_dots = (int)k;
      break;
    }
    case OPT_PEAK: {
      char *end;
      o->peak_gflops = strtod(optarg, &end);
      if (*end || !*optarg || !(o->peak_gflops > 0))
        return usage_error("--peak-gflops expects a positive number, got '%s'", optarg);
      break;
    }
    case OPT_INTRIN:
      if (o->n_intrins == MLC_COUNTOF(o->intrins)) return usage_error("%s", "at most 8 --intrin files");
      o->intrins[o->n_intrins++] = optarg;
      break;
    case 'k': {
      char *end;
      long k = strtol(optarg, &end, 10);
      if (*end || !*optarg || k < 1 || k > 1000000)
        return usage_error("-k expects a positive number, got '%s'", optarg);
      o->k = (int)k;
      break;
    }
    case 'h': fputs(usage_text, stdout); exit(0);
    default: return usage_error("%s", "bad option");
    }
  }
  if (optind >= argc) return usage_error("%s", "missing command (list, top, show, stats, export, import, report, plot)");
  o->command = argv[optind++];
  if (optind < argc) o->arg = argv[optind++];
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  return 0;
}

/* Which commands take what. */
static int check_usage(const options *o) {
  const char *c = o->command;
  bool known = !strcmp(c, "list") || !strcmp(c, "top") || !strcmp(c, "show") ||
               !strcmp(c, "stats") || !strcmp(c, "export") || !strcmp(c, "import") ||
               !strcmp(c, "report") || !strcmp(c, "plot");
  if (!known) return usage_error("unknown command '%s'", c);
  bool wants_arg = !strcmp(c, "show") || !strcmp(c, "import");
  if (wants_arg && !o->arg) return usage_error("%s needs an argument", c);
  if (!wants_arg && o->arg) return usage_error("unexpected argument '%s'", o->arg);
  if (!strcmp(c, "top") && !o->task) return usage_error("%s", "top needs --task NAME");
  if (o->shape && !o->task) return usage_error("%s", "--shape needs --task");
  if (o->ir && strcmp(c, "show") != 0) return usage_error("%s", "--ir goes with show");
  bool drawing = !strcmp(c, "report") || !strcmp(c, "plot");
  if ((o->output || o->max_dots) && !drawing)
    return usage_error("%s", "-o and --max-dots go with report or plot");
  if ((o->model || o->peak_gflops || o->bench) && strcmp(c, "report") != 0)
    return usage_error("%s", "--model, --peak-gflops and --bench go with report");
  if (o->bench && (o->model || o->task || o->target))
    return usage_error("%s", "--bench reads no database: no --model, --task or --target");
  if (o->figure && strcmp(c, "plot") != 0) return usage_error("%s", "--figure goes with plot");
  if (!strcmp(c, "plot") && !o->output) return usage_error("%s", "plot needs -o FILE.svg or -o FILE.png");
  return 0;
}

int main(int argc, char **argv) {
  options o = {.k = 5};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  if ((rc = check_usage(&o))) return rc;
  if (!o.db) o.db = getenv("MLC_DB") && *getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  if (o.bench) return cmd_bench_report(&o);
  mlc_error err;
  for (int i = 0; i < o.n_intrins; i++)
    if (!mlc_tensor_intrin_register_file(o.intrins[i], NULL, &err)) {
      fprintf(stderr, "mlc-db: error: --intrin %s: %s\n", o.intrins[i], err.msg);
      return 1;
    }
  bool creates = strcmp(o.command, "import") == 0;
  mlc_db *db = mlc_db_open(o.db, creates ? MLC_DB_CREATE : MLC_DB_EXISTING, &err);
  if (!db) return fail(err.msg);
  mlc_arena *a = mlc_arena_new();
  if (!strcmp(o.command, "list")) rc = cmd_list(db, &o, a);
  else if (!strcmp(o.command, "top")) rc = cmd_top(db, &o, a);
  else if (!strcmp(o.command, "show")) rc = cmd_show(db, &o, a);
  else if (!strcmp(o.command, "stats")) rc = cmd_stats(db, &o, a);
  else if (!strcmp(o.command, "export")) rc = cmd_export(db, &o);
  else if (!strcmp(o.command, "report")) rc = cmd_report(db, &o);
  else if (!strcmp(o.command, "plot")) rc = cmd_plot(db, &o);
  else rc = cmd_import(db, &o);
  mlc_arena_free(a);
  mlc_db_close(db);
  return rc;
}
