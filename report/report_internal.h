/* report's private interface: plots laid out once (plot.c) and drawn
 * through a canvas as SVG (svg.c) or pixels (raster.c, png.c), the HTML
 * page pieces (html.c), one workload's section (workload.c), a model's
 * section (model.c). */
#ifndef MLC_REPORT_INTERNAL_H
#define MLC_REPORT_INTERNAL_H

#include "report/report.h"

#pragma GCC visibility push(hidden)

/* ---- plots (plot.c) ------------------------------------------------------ */

typedef enum plot_kind {
  PLOT_DOTS,   /* one circle per point, class cls, hover text tips[i] */
  PLOT_STEP,   /* a staircase through the points (best so far) */
  PLOT_LINE,   /* a polyline */
  PLOT_ERRORS, /* a cross per x on the bottom axis (failed candidates); y unused */
  PLOT_BARS,   /* bars from x[i] to x[i+1] of height y[i] (n + 1 x values) */
} plot_kind;

typedef struct plot_series {
  plot_kind kind;
  const char *cls;         /* style class (plot_styles): pt, best, err, bar, ... */
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

/* How a class is drawn: the one table the SVG stylesheet and the raster
 * backend both read. Colours are 0xRRGGBB, PLOT_NONE for none. */
#define PLOT_NONE 0xffffffffu
typedef struct plot_style {
  const char *cls;   /* "text" styles every text; a series' legend uses cls-key */
  uint32_t fill, stroke;
  double fill_opacity; /* 0: opaque */
  double stroke_width;
  int font_px;       /* text size; 0: the text default */
  bool bold;
} plot_style;

/* The style of a class list ("legend best-key": its last known class),
 * the "text" row when none is known. */
const plot_style *plot_style_of(const char *classes);
/* The stylesheet of plot_styles, each rule under "svg ". */
void plot_css(mlc_str *out);

/* A surface plots are drawn on, in the plot's own units (one CSS pixel,
 * y down). Tips are hover texts a backend may drop. */
typedef enum text_anchor { ANCHOR_START, ANCHOR_MIDDLE, ANCHOR_END } text_anchor;
typedef struct canvas canvas;
typedef struct canvas_ops {
  void (*begin)(canvas *c, int width, int height, const char *attrs);
  void (*end)(canvas *c);
  void (*rect)(canvas *c, const char *cls, double x, double y, double w, double h,
               const char *tip);
  /* Straight segments through n points (n >= 2). */
  void (*polyline)(canvas *c, const char *cls, int n, const double *x, const double *y,
                   const char *tip);
  void (*circle)(canvas *c, const char *cls, double x, double y, double r, const char *tip);
  /* Baseline at y; rotate: 0, -90 (reads upwards) or 90 (downwards). */
  void (*text)(canvas *c, const char *cls, double x, double y, text_anchor anchor, int rotate,
               const char *text);
} canvas_ops;
struct canvas {
  const canvas_ops *ops;
};

/* p drawn on c. */
void plot_draw(canvas *c, const plot *p);

/* <svg> element (svg.c); standalone: with the XML declaration, namespace
 * and style a file needs on its own. */
void plot_svg(mlc_str *out, const plot *p, bool standalone);

/* ---- raster plots (raster.c, png.c, font.c) ----------------------------------- */

typedef struct raster_glyph {
  uint8_t w, h;
  int8_t left, top; /* bitmap origin from the pen position, top above the baseline */
  uint8_t advance;
  const char *coverage; /* h rows of w: '.' none, '1'..'f' n/15 */
} raster_glyph;

typedef struct raster_font {
  int px, ascent, descent;
  raster_glyph glyphs['~' - ' ' + 1]; /* printable ASCII from ' ' */
} raster_font;

extern const raster_font raster_font_sans;

/* The advance of text in the font, in pixels of its size. */
double raster_text_width(const raster_font *f, const char *text);
/* p as a PNG image at scale pixels per plot unit, appended to out. */
void plot_png(mlc_str *out, const plot *p, int scale);
/* An 8-bit RGB image (rows of 3 * w bytes) as a PNG file. */
void png_encode(mlc_str *out, const uint8_t *rgb, int w, int h);

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
