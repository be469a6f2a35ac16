/* Plots laid out once for every backend: axes with round ticks, dots,
 * best-so-far staircases, error marks, bars, a legend, all drawn through
 * a canvas; and the style table both backends read. */
#include "report/report_internal.h"

#include <math.h>
#include <string.h>

enum { W = 576, H = 316, LEFT = 64, RIGHT = 80, TOP = 44, BOTTOM = 44 };

#define RED 0xd62728u
#define BLUE 0x4477aau
#define GREEN 0x2ca02cu
#define ORANGE 0xff7f0eu

static const plot_style plot_styles[] = {
    /* cls        fill       stroke     opacity width px bold */
    {"text", 0x333333u, PLOT_NONE, 0, 0, 11, false},
    {"title", 0x333333u, PLOT_NONE, 0, 0, 12, true},
    {"frame", PLOT_NONE, 0x999999u, 0, 1, 0, false},
    {"grid", PLOT_NONE, 0xeeeeeeu, 0, 1, 0, false},
    {"pt", BLUE, PLOT_NONE, .6, 0, 0, false},
    {"best", PLOT_NONE, RED, 0, 2, 0, false},
    {"err", PLOT_NONE, RED, 0, 1.5, 0, false},
    {"bar", BLUE, PLOT_NONE, 0, 0, 0, false},
    {"bar2", ORANGE, PLOT_NONE, 0, 0, 0, false},
    {"line", PLOT_NONE, GREEN, 0, 2, 0, false},
    {"best-key", RED, PLOT_NONE, 0, 0, 0, false},
    {"err-key", RED, PLOT_NONE, 0, 0, 0, false},
    {"pt-key", BLUE, PLOT_NONE, 0, 0, 0, false},
    {"bar-key", BLUE, PLOT_NONE, 0, 0, 0, false},
    {"line-key", GREEN, PLOT_NONE, 0, 0, 0, false},
    {"bar2-key", ORANGE, PLOT_NONE, 0, 0, 0, false},
};

const plot_style *plot_style_of(const char *classes) {
  const plot_style *found = &plot_styles[0];
  for (const char *c = classes ? classes : ""; *c;) {
    size_t n = strcspn(c, " ");
    for (int i = 0; i < MLC_COUNTOF(plot_styles); i++)
      if (strlen(plot_styles[i].cls) == n && !strncmp(plot_styles[i].cls, c, n))
        found = &plot_styles[i];
    c += n + strspn(c + n, " ");
  }
  return found;
}

static void css_color(mlc_str *o, const char *prop, uint32_t rgb) {
  if (rgb == PLOT_NONE) mlc_str_printf(o, "%s:none;", prop);
  else mlc_str_printf(o, "%s:#%06x;", prop, rgb);
}

void plot_css(mlc_str *o) {
  for (int i = 0; i < MLC_COUNTOF(plot_styles); i++) {
    const plot_style *s = &plot_styles[i];
    bool text = !strcmp(s->cls, "text");
    mlc_str_printf(o, "svg %s%s{", text ? "" : ".", s->cls);
    if (text) mlc_str_printf(o, "font:%dpx sans-serif;", s->font_px);
    else if (s->font_px) mlc_str_printf(o, "font-size:%dpx;", s->font_px);
    if (s->bold) mlc_str_puts(o, "font-weight:bold;");
    css_color(o, "fill", s->fill);
    if (s->fill_opacity > 0) mlc_str_printf(o, "fill-opacity:%g;", s->fill_opacity);
    if (s->stroke != PLOT_NONE) css_color(o, "stroke", s->stroke);
    if (s->stroke_width > 0) mlc_str_printf(o, "stroke-width:%g;", s->stroke_width);
    mlc_str_puts(o, "}");
  }
}

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

typedef struct frame {
  double x0, x1, y0, y1;
} frame;

/* The data's range, y from 0, never empty. */
static frame ranges(const plot *p) {
  frame f = {INFINITY, -INFINITY, 0, -INFINITY};
  for (int s = 0; s < p->n_series; s++) {
    const plot_series *ps = &p->series[s];
    int nx = ps->kind == PLOT_BARS && ps->n > 0 ? ps->n + 1 : ps->n;
    for (int i = 0; i < nx; i++) extend(&f.x0, &f.x1, ps->x[i]);
    if (ps->kind != PLOT_ERRORS)
      for (int i = 0; i < ps->n; i++) extend(&f.y0, &f.y1, ps->y[i]);
  }
  if (p->xmin != p->xmax) f.x0 = p->xmin, f.x1 = p->xmax;
  if (!isfinite(f.x0)) f.x0 = 0, f.x1 = 1;
  if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
  if (!isfinite(f.y1) || f.y1 <= f.y0) f.y1 = f.y0 + 1;
  f.y1 *= 1.05;
  if (p->ymax > p->ymin) f.y0 = p->ymin, f.y1 = p->ymax;
  return f;
}

/* A round step giving about n ticks over [lo, hi]. */
static double tick_step(double lo, double hi, int n) {
  double raw = (hi - lo) / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static double px(const frame *f, double x) { return LEFT + (x - f->x0) / (f->x1 - f->x0) * (W - LEFT - RIGHT); }
static double py(const frame *f, double y) { return H - BOTTOM - (y - f->y0) / (f->y1 - f->y0) * (H - TOP - BOTTOM); }

static const char *num(char *buf, size_t n, double v) {
  snprintf(buf, n, "%.4g", fabs(v) < 1e-12 ? 0 : v);
  return buf;
}

static void hline(canvas *c, const char *cls, double x0, double x1, double y) {
  c->ops->polyline(c, cls, 2, (double[]){x0, x1}, (double[]){y, y}, NULL);
}

static void axes(canvas *c, const plot *p, const frame *f) {
  c->ops->rect(c, "frame", LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM, NULL);
  double sx = tick_step(f->x0, f->x1, 6), sy = tick_step(f->y0, f->y1, 5);
  char buf[64];
  for (double x = ceil(f->x0 / sx) * sx; x <= f->x1 + sx * 1e-9; x += sx)
    c->ops->text(c, "tick", px(f, x), H - BOTTOM + 16, ANCHOR_MIDDLE, 0, num(buf, sizeof buf, x));
  for (double y = ceil(f->y0 / sy) * sy; y <= f->y1 + sy * 1e-9; y += sy) {
    hline(c, "grid", LEFT, W - RIGHT, py(f, y));
    c->ops->text(c, "tick", LEFT - 6, py(f, y) + 4, ANCHOR_END, 0, num(buf, sizeof buf, y));
    if (p->y2_num > 0 && y > 0) {
      mlc_str t = {0};
      put_time(&t, p->y2_num / y);
      c->ops->text(c, "tick", W - RIGHT + 6, py(f, y) + 4, ANCHOR_START, 0, mlc_str_cstr(&t));
      mlc_str_free(&t);
    }
  }
}

static void labels(canvas *c, const plot *p) {
  c->ops->text(c, "title", LEFT, 18, ANCHOR_START, 0, p->title ? p->title : "");
  c->ops->text(c, "label", (LEFT + W - RIGHT) / 2.0, H - 8, ANCHOR_MIDDLE, 0,
               p->xlabel ? p->xlabel : "");
  c->ops->text(c, "label", 14, (TOP + H - BOTTOM) / 2.0, ANCHOR_MIDDLE, -90,
               p->ylabel ? p->ylabel : "");
  if (p->y2_num > 0)
    c->ops->text(c, "label", W - 6, (TOP + H - BOTTOM) / 2.0, ANCHOR_MIDDLE, 90, "time per call");
}

static const char *tip(const plot_series *s, int i) { return s->tips ? s->tips[i] : NULL; }

static void dots(canvas *c, const plot_series *s, const frame *f) {
  for (int i = 0; i < s->n; i++)
    c->ops->circle(c, s->cls, px(f, s->x[i]), py(f, s->y[i]), 2.5, tip(s, i));
}

/* A cross on the bottom axis, as one stroke through its centre. */
static void errors(canvas *c, const plot_series *s, const frame *f) {
  double y = H - BOTTOM - 4;
  for (int i = 0; i < s->n; i++) {
    double x = px(f, s->x[i]);
    c->ops->polyline(c, s->cls, 5, (double[]){x - 3, x + 3, x, x + 3, x - 3},
                     (double[]){y - 3, y + 3, y, y - 3, y + 3}, tip(s, i));
  }
}

static void line(canvas *c, const plot_series *s, const frame *f, double x_end) {
  if (s->n == 0) return;
  bool step = s->kind == PLOT_STEP;
  int n = step ? 2 * s->n : s->n, k = 0;
  double *x = mlc_xmalloc(2 * sizeof(double) * (size_t)n), *y = x + n;
  for (int i = 0; i < s->n; i++) {
    if (step && i > 0) x[k] = px(f, s->x[i]), y[k++] = py(f, s->y[i - 1]);
    x[k] = px(f, s->x[i]), y[k++] = py(f, s->y[i]);
  }
  if (step) x[k] = px(f, x_end), y[k++] = py(f, s->y[s->n - 1]);
  if (k >= 2) c->ops->polyline(c, s->cls, k, x, y, NULL);
  mlc_free(x);
}

static void bars(canvas *c, const plot_series *s, const frame *f) {
  for (int i = 0; i < s->n; i++) {
    if (s->y[i] <= 0) continue;
    double x0 = px(f, s->x[i]), x1 = px(f, s->x[i + 1]), y = py(f, s->y[i]);
    c->ops->rect(c, s->cls, x0, y, x1 - x0 > 1 ? x1 - x0 - 0.5 : 0.5, H - BOTTOM - y, tip(s, i));
  }
}

/* Right-aligned names above the frame, in the colour of their series. */
static void legend(canvas *c, const plot *p) {
  double x = W - RIGHT;
  const raster_font *font = &raster_font_sans;
  double per_px = (double)plot_style_of("legend")->font_px / font->px;
  for (int s = p->n_series - 1; s >= 0; s--) {
    const plot_series *ps = &p->series[s];
    if (!ps->name) continue;
    char cls[64];
    snprintf(cls, sizeof cls, "legend %s-key", ps->cls);
    c->ops->text(c, cls, x, 36, ANCHOR_END, 0, ps->name);
    x -= 10 + raster_text_width(font, ps->name) * per_px;
  }
}

void plot_draw(canvas *c, const plot *p) {
  frame f = ranges(p);
  c->ops->begin(c, W, H, p->attrs);
  axes(c, p, &f);
  labels(c, p);
  legend(c, p);
  for (int s = 0; s < p->n_series; s++) {
    const plot_series *ps = &p->series[s];
    switch (ps->kind) {
    case PLOT_DOTS: dots(c, ps, &f); break;
    case PLOT_STEP:
    case PLOT_LINE: line(c, ps, &f, f.x1); break;
    case PLOT_ERRORS: errors(c, ps, &f); break;
    case PLOT_BARS: bars(c, ps, &f); break;
    }
  }
  c->ops->end(c);
}
