/* report: what a tuning database holds, as pictures a person looks at:
 * one self-contained HTML page (inline SVG and CSS, a little
 * plain JavaScript to sort tables; no network) or one figure as SVG or
 * PNG (drawn by our own rasterizer; zlib compresses it).
 *
 *   mlc_report_options o = {.task = "matmul"};           // NULL: every workload
 *   mlc_str html = {0};
 *   mlc_report_summary sum;
 *   if (!mlc_report_html(db, &o, &html, &sum, &err)) ...  // err: the database failed
 *   mlc_report_plot(db, &o, MLC_REPORT_PLOT_CURVE, MLC_REPORT_PNG, &png, &err);
 *   mlc_report_bench_html(json, len, "bench/results.json", &html, &n, &err);
 *
 * Per workload and target the page draws the tuning curve (GFLOP/s, with
 * the matching time on the right axis, against trials and against wall
 * time: every measured candidate a dot, failed ones a red cross on the
 * axis, the best so far a line), the distribution of candidate speeds,
 * the best record's trace and scheduled TVMScript, and its share of the
 * target's nominal peak (mlc_report_peak_gflops). With a model, its
 * kernels ranked by their share of the model's time (calls x best time),
 * how the trials went to the kernels over time, and the model's latency
 * estimate as tuning went.
 *
 * Bad input is a page that says so, never an error: an empty database, a
 * task nobody tuned, a workload with only failed records, a model whose
 * kernels the database does not hold. Past max_dots candidates a curve
 * draws every k-th plus every new best, and the page says so.
 */
#ifndef MLC_REPORT_H
#define MLC_REPORT_H

#include "db/db.h"

#define MLC_REPORT_MAX_DOTS 2000 /* default max_dots */

typedef struct mlc_report_options {
  const char *task;   /* only this task's workloads; NULL: every workload */
  const char *shape;  /* with task: only this shape (as the database stores it) */
  const char *target; /* only records of this target; NULL: all */
  const char *model;  /* a model file (ONNX or JSON): its kernels ranked; NULL: none */
  int max_dots;       /* dots per curve before downsampling; 0: MLC_REPORT_MAX_DOTS */
  double peak_gflops; /* the machine's peak; 0: mlc_report_peak_gflops of the target */
} mlc_report_options;

/* What a report showed, for the tool's one-line summary and tests. */
typedef struct mlc_report_summary {
  int workloads;     /* curves drawn (workload x target) */
  int64_t records;   /* records behind them */
  int64_t dots;      /* dots drawn (records when none was downsampled) */
  int downsampled;   /* curves drawn with fewer dots than records */
  int kernels;       /* model kernels found in the database */
  const char *note;  /* why the page has no curve (static text), or NULL */
} mlc_report_summary;

/* The page into out. False only when the database fails (err set);
 * nothing there to show is a page that says why. */
bool mlc_report_html(mlc_db *db, const mlc_report_options *o, mlc_str *out,
                     mlc_report_summary *sum, mlc_error *err);

typedef enum mlc_report_figure {
  MLC_REPORT_PLOT_CURVE,     /* GFLOP/s against trials */
  MLC_REPORT_PLOT_WALL,      /* GFLOP/s against wall time */
  MLC_REPORT_PLOT_HISTOGRAM, /* distribution of candidate speeds */
} mlc_report_figure;

typedef enum mlc_report_format {
  MLC_REPORT_SVG, /* a standalone SVG document */
  MLC_REPORT_PNG, /* a PNG image, twice the SVG's size in pixels (binary: use out->len) */
} mlc_report_format;

/* One figure of the first workload (and target) o selects, appended to
 * out. False with err when nothing matches. */
bool mlc_report_plot(mlc_db *db, const mlc_report_options *o, mlc_report_figure fig,
                     mlc_report_format format, mlc_str *out, mlc_error *err);

/* The bench page of bench/results.json's text (source names it on the
 * page and in errors): per unit a table of the cases, ours against each
 * case's baseline with the speed-up and a pair of bars. False with err
 * when the text is not JSON or has no "cases" array; malformed cases are
 * skipped and counted on the page. *n_cases: the cases shown. */
bool mlc_report_bench_html(const char *text, size_t len, const char *source, mlc_str *out,
                           int *n_cases, mlc_error *err);

/* ---- records as data (mlc-db top/show --json; python's Database) ---------------------- */

/* The best k records of each workload (and target) o selects (o->task,
 * o->shape, o->target; NULL: all), as a JSON array of objects: rank, id,
 * task, shape, target, mean_sec, gflops (null: unknown), run_secs,
 * trace_hash, replay ("ok", "DIFFERS": it no longer replays to what was
 * measured, "NO-HASH"), round, library (null: none). *shown: the rows.
 * False with err when the database fails. */
bool mlc_report_top_json(mlc_db *db, const mlc_report_options *o, int k, mlc_str *out,
                         int *shown, mlc_error *err);
/* Record id as a JSON object: id, workload_id, task, shape, target,
 * trace (the JSON itself), trace_hash, sched_hash, run_secs, mean_sec,
 * gflops, error, round, host, mlc_version, created_at, python (the trace
 * as Python), and with_ir "ir" (its scheduled TVMScript). 1, 0 when there
 * is no such record, -1 with err when the database or the replay fails. */
int mlc_report_record(mlc_db *db, int64_t id, bool with_ir, mlc_str *out, mlc_error *err);
/* The pieces, for the text forms of mlc-db top/show: one top row, one
 * record (python, ir: NULL to leave out); the workload's function (NULL
 * when its IR does not parse); whether r replays to what it measured; the
 * library r's trace calls (NULL: none); r's scheduled TVMScript and its
 * trace as Python. */
void mlc_report_top_row_json(mlc_str *out, const mlc_db_workload *w, const mlc_db_record *r,
                             const char *check, int rank, double flops, const char *lib);
void mlc_report_record_json(mlc_str *out, const mlc_db_record *r, const mlc_db_workload *w,
                            double flops, const char *python, const char *ir);
const struct mlc_prim_func *mlc_report_workload_func(mlc_arena *a, const mlc_db_workload *w);
const char *mlc_report_replay_check(mlc_arena *a, const struct mlc_prim_func *f,
                                    const mlc_db_record *r);
const char *mlc_report_record_library(mlc_arena *a, const mlc_db_record *r);
bool mlc_report_scheduled_ir(const char *ir, const char *trace, mlc_str *out, mlc_error *err);
bool mlc_report_trace_python(const char *trace, mlc_str *out, mlc_error *err);

/* Floating-point work per call of a workload: the built-in task's count,
 * else counted from its stored IR; 0 when the IR does not parse. */
double mlc_report_workload_flops(mlc_arena *a, const mlc_db_workload *w);

/* Nominal FP32 peak of a CPU target in GFLOP/s: cores x SIMD lanes of its
 * widest vector features x 2 (FMA) x 2 FMA pipes x the host's maximum
 * clock; 0 for other targets or when the clock is unknown. how (may be
 * NULL) receives the product spelled out. */
double mlc_report_peak_gflops(const char *target, mlc_str *how);

#endif
