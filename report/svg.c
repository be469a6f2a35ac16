/* SVG plots of our own data: axes with round ticks, dots with hover text,
 * best-so-far staircases, error marks, bars. */
#include "report/report_internal.h"

#include <math.h>
#include <string.h>

enum { W = 576, H = 316, LEFT = 64, RIGHT = 80, TOP = 44, BOTTOM = 44 };

void plot_add(plot *p, plot_kind kind, const char *cls, const char *name, int n,
              const double *x, const double *y, const char *const *tips) {
  MLC_ASSERT(p->n_series < PLOT_MAX_SERIES);
  p->series[p->n_series++] = (plot_series){kind, cls, name, n, x, y, tips};
}

static void extend(double *lo, double *hi, double v) {
  if (!isfinite(v)) return;
  if (v < *lo) *lo = v;
  if (v > *hi) *hi = v;
}

/* The data's range, y from 0, never empty. */
static void ranges(const plot *p, double *x0, double *x1, double *y0, double *y1) {
  *x0 = INFINITY, *x1 = -INFINITY, *y0 = 0, *y1 = -INFINITY;
  for (int s = 0; s < p->n_series; s++) {
    const plot_series *ps = &p->series[s];
    int nx = ps->kind == PLOT_BARS && ps->n > 0 ? ps->n + 1 : ps->n;
    for (int i = 0; i < nx; i++) extend(x0, x1, ps->x[i]);
    if (ps->kind != PLOT_ERRORS)
      for (int i = 0; i < ps->n; i++) extend(y0, y1, ps->y[i]);
  }
  if (p->xmin != p->xmax) *x0 = p->xmin, *x1 = p->xmax;
  if (!isfinite(*x0)) *x0 = 0, *x1 = 1;
  if (*x1 <= *x0) *x1 = *x0 + 1;
  if (!isfinite(*y1) || *y1 <= *y0) *y1 = *y0 + 1;
  *y1 *= 1.05;
  if (p->ymax > p->ymin) *y0 = p->ymin, *y1 = p->ymax;
}

/* A round step giving about n ticks over [lo, hi]. */
static double tick_step(double lo, double hi, int n) {
  double raw = (hi - lo) / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

typedef struct frame {
  double x0, x1, y0, y1;
} frame;

static double px(const frame *f, double x) { return LEFT + (x - f->x0) / (f->x1 - f->x0) * (W - LEFT - RIGHT); }
static double py(const frame *f, double y) { return H - BOTTOM - (y - f->y0) / (f->y1 - f->y0) * (H - TOP - BOTTOM); }

static void put_num(mlc_str *s, double v) { mlc_str_printf(s, "%.4g", fabs(v) < 1e-12 ? 0 : v); }

static void axes(mlc_str *o, const plot *p, const frame *f) {
  mlc_str_printf(o, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", LEFT,
                 TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);
  double sx = tick_step(f->x0, f->x1, 6), sy = tick_step(f->y0, f->y1, 5);
  for (double x = ceil(f->x0 / sx) * sx; x <= f->x1 + sx * 1e-9; x += sx) {
    mlc_str_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", px(f, x),
                   H - BOTTOM + 16);
    put_num(o, x);
    mlc_str_puts(o, "</text>\n");
  }
  for (double y = ceil(f->y0 / sy) * sy; y <= f->y1 + sy * 1e-9; y += sy) {
    mlc_str_printf(o, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", LEFT,
                   W - RIGHT, py(f, y), py(f, y));
    mlc_str_printf(o, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 6,
                   py(f, y) + 4);
    put_num(o, y);
    mlc_str_puts(o, "</text>");
    if (p->y2_num > 0 && y > 0) {
      mlc_str_printf(o, "<text class=\"tick\" x=\"%d\" y=\"%.1f\">", W - RIGHT + 6, py(f, y) + 4);
      put_time(o, p->y2_num / y);
      mlc_str_puts(o, "</text>");
    }
    mlc_str_putc(o, '\n');
  }
}

static void labels(mlc_str *o, const plot *p) {
  mlc_str_printf(o, "<text class=\"title\" x=\"%d\" y=\"18\">", LEFT);
  html_escape(o, p->title);
  mlc_str_printf(o, "</text>\n<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
                 (LEFT + W - RIGHT) / 2, H - 8);
  html_escape(o, p->xlabel);
  mlc_str_printf(o, "</text>\n<text class=\"label\" transform=\"translate(14 %d) rotate(-90)\""
                    " text-anchor=\"middle\">",
                 (TOP + H - BOTTOM) / 2);
  html_escape(o, p->ylabel);
  mlc_str_puts(o, "</text>\n");
  if (p->y2_num > 0)
    mlc_str_printf(o, "<text class=\"label\" transform=\"translate(%d %d) rotate(90)\""
                      " text-anchor=\"middle\">time per call</text>\n",
                   W - 6, (TOP + H - BOTTOM) / 2);
}

static void tip(mlc_str *o, const plot_series *s, int i) {
  if (!s->tips || !s->tips[i]) return;
  mlc_str_puts(o, "<title>");
  html_escape(o, s->tips[i]);
  mlc_str_puts(o, "</title>");
}

static void dots(mlc_str *o, const plot_series *s, const frame *f) {
  for (int i = 0; i < s->n; i++) {
    mlc_str_printf(o, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\">", s->cls,
                   px(f, s->x[i]), py(f, s->y[i]));
    tip(o, s, i);
    mlc_str_puts(o, "</circle>\n");
  }
}

static void errors(mlc_str *o, const plot_series *s, const frame *f) {
  double y = H - BOTTOM - 4;
  for (int i = 0; i < s->n; i++) {
    mlc_str_printf(o, "<path class=\"%s\" d=\"M%.1f %.1fl6 6m0 -6l-6 6\">", s->cls,
                   px(f, s->x[i]) - 3, y - 3);
    tip(o, s, i);
    mlc_str_puts(o, "</path>\n");
  }
}

static void line(mlc_str *o, const plot_series *s, const frame *f, double x_end) {
  if (s->n == 0) return;
  mlc_str_printf(o, "<polyline class=\"%s\" points=\"", s->cls);
  for (int i = 0; i < s->n; i++) {
    if (s->kind == PLOT_STEP && i > 0)
      mlc_str_printf(o, "%.1f,%.1f ", px(f, s->x[i]), py(f, s->y[i - 1]));
    mlc_str_printf(o, "%.1f,%.1f ", px(f, s->x[i]), py(f, s->y[i]));
  }
  if (s->kind == PLOT_STEP) mlc_str_printf(o, "%.1f,%.1f", px(f, x_end), py(f, s->y[s->n - 1]));
  mlc_str_puts(o, "\"/>\n");
}

static void bars(mlc_str *o, const plot_series *s, const frame *f) {
  for (int i = 0; i < s->n; i++) {
    if (s->y[i] <= 0) continue;
    double x0 = px(f, s->x[i]), x1 = px(f, s->x[i + 1]), y = py(f, s->y[i]);
    mlc_str_printf(o, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">",
                   s->cls, x0, y, x1 - x0 > 1 ? x1 - x0 - 0.5 : 0.5, H - BOTTOM - y);
    tip(o, s, i);
    mlc_str_puts(o, "</rect>\n");
  }
}

static void legend(mlc_str *o, const plot *p) {
  int x = W - RIGHT;
  for (int s = p->n_series - 1; s >= 0; s--) {
    const plot_series *ps = &p->series[s];
    if (!ps->name) continue;
    x -= 8 + 7 * (int)strlen(ps->name);
    mlc_str_printf(o, "<text class=\"legend %s-key\" x=\"%d\" y=\"36\">", ps->cls, x);
    html_escape(o, ps->name);
    mlc_str_puts(o, "</text>\n");
  }
}

static const char *standalone_style =
    "<style>text{font:11px sans-serif;fill:#333}.title{font-weight:bold;font-size:12px}"
    ".frame{fill:none;stroke:#999}.grid{stroke:#eee}.pt{fill:#4477aa;fill-opacity:.6}"
    ".best{fill:none;stroke:#d62728;stroke-width:2}.err{stroke:#d62728;stroke-width:1.5;fill:none}"
    ".bar{fill:#4477aa}.line{fill:none;stroke:#2ca02c;stroke-width:2}"
    ".best-key{fill:#d62728}.err-key{fill:#d62728}.pt-key{fill:#4477aa}</style>\n";

void plot_svg(mlc_str *o, const plot *p, bool standalone) {
  frame f;
  ranges(p, &f.x0, &f.x1, &f.y0, &f.y1);
  if (standalone) mlc_str_puts(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  mlc_str_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\""
                    " height=\"%d\" %s>\n",
                 W, H, W, H, p->attrs ? p->attrs : "");
  if (standalone) mlc_str_puts(o, standalone_style);
  axes(o, p, &f);
  labels(o, p);
  legend(o, p);
  for (int s = 0; s < p->n_series; s++) {
    const plot_series *ps = &p->series[s];
    switch (ps->kind) {
    case PLOT_DOTS: dots(o, ps, &f); break;
    case PLOT_STEP:
    case PLOT_LINE: line(o, ps, &f, f.x1); break;
    case PLOT_ERRORS: errors(o, ps, &f); break;
    case PLOT_BARS: bars(o, ps, &f); break;
    }
  }
  mlc_str_puts(o, "</svg>\n");
}
