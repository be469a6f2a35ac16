/* report's private interface: the SVG plot writer (svg.c), the HTML page
 * pieces (html.c), one workload's section (workload.c), a model's section
 * (model.c). */
#ifndef MLC_REPORT_INTERNAL_H
#define MLC_REPORT_INTERNAL_H

#include "report/report.h"

#pragma GCC visibility push(hidden)

/* ---- plots (svg.c) ------------------------------------------------------- */

typedef enum plot_kind {
  PLOT_DOTS,   /* one circle per point, class cls, hover text tips[i] */
  PLOT_STEP,   /* a staircase through the points (best so far) */
  PLOT_LINE,   /* a polyline */
  PLOT_ERRORS, /* a cross per x on the bottom axis (failed candidates); y unused */
  PLOT_BARS,   /* bars from x[i] to x[i+1] of height y[i] (n + 1 x values) */
} plot_kind;

typedef struct plot_series {
  plot_kind kind;
  const char *cls;         /* CSS class: pt, best, err, bar, ... */
  const char *name;        /* legend; NULL: none */
  int n;
  const double *x, *y;
  const char *const *tips; /* per point (may be NULL) */
} plot_series;

#define PLOT_MAX_SERIES 8

typedef struct plot {
  const char *title, *xlabel, *ylabel;
  const char *attrs;   /* extra attributes of <svg> (class, data-*), or NULL */
  /* Right axis: at each y tick, y2_num / y formatted by y2_unit's rule
   * (a rate's time per call); 0: no right axis. */
  double y2_num;
  double xmin, xmax; /* xmin == xmax: from the data */
  double ymin, ymax; /* ymin == ymax: from 0 to the data's largest */
  int n_series;
  plot_series series[PLOT_MAX_SERIES];
} plot;

void plot_add(plot *p, plot_kind kind, const char *cls, const char *name, int n,
              const double *x, const double *y, const char *const *tips);
/* <svg> element; standalone: with the XML declaration, namespace and
 * style a file needs on its own. */
void plot_svg(mlc_str *out, const plot *p, bool standalone);

/* ---- HTML (html.c) --------------------------------------------------------- */

void html_escape(mlc_str *out, const char *text);
void html_begin(mlc_str *out, const char *title);
void html_end(mlc_str *out);
/* "1.234 ms", "56.7 us" */
void put_time(mlc_str *s, double sec);

/* ---- workloads (workload.c) ------------------------------------------------- */

/* One workload's records of one target, as the curves need them. */
typedef struct report_curve {
  const mlc_db_workload *w;
  const char *target;
  double flops;          /* per call; 0: unknown (curves plot time) */
  int n;                 /* records */
  const mlc_db_record *recs; /* by id */
  double t0;             /* created_at of the first record (seconds) */
  int best;              /* index of the best success, -1: none */
  int n_failed;
  double peak_gflops;    /* 0: unknown */
} report_curve;

/* The records of (w, target) read and summarized into c. */
bool report_curve_read(mlc_db *db, mlc_arena *a, const mlc_db_workload *w, const char *target,
                       const mlc_report_options *o, report_curve *c, mlc_error *err);
/* The figure of c (plot_svg-ready); arrays in a. */
void report_curve_figure(mlc_arena *a, const report_curve *c, mlc_report_figure fig,
                         int max_dots, plot *p, int64_t *dots);
/* A workload's section: facts, curves, distribution, best schedule. */
void report_workload_section(mlc_str *out, mlc_db *db, mlc_arena *a, const report_curve *c,
                             int max_dots, mlc_report_summary *sum);
/* The id of the section of (workload_id, target). */
void report_put_anchor(mlc_str *out, int64_t workload_id, const char *target);
/* One row of the page's table of workloads. */
void report_workload_row(mlc_str *out, const report_curve *c);

/* ---- models (model.c) --------------------------------------------------------- */

/* The model's section; false only when the database fails. */
bool report_model_section(mlc_str *out, mlc_db *db, mlc_arena *a, const mlc_report_options *o,
                          mlc_report_summary *sum, mlc_error *err);

#pragma GCC visibility pop

#endif
