/* The raster canvas: plots as pixels for `mlc-db plot -o F.png`. Every
 * shape is first rendered as coverage (0..1 per pixel, anti-aliased by
 * distance to its edge) into a scratch mask over its bounding box, then
 * blended in its style's colour, so overlapping segments of one line do
 * not darken their joints. Text is drawn from raster_font_sans's coverage
 * maps, sampled bilinearly at any size and turned by a quarter. */
#include "report/report_internal.h"

#include <math.h>
#include <string.h>

typedef struct raster {
  canvas base;
  double scale; /* pixels per plot unit */
  int w, h;
  uint8_t *rgb;
  float *mask;       /* w * h, zero outside the shape being drawn */
  int x0, y0, x1, y1; /* the mask's dirty box, pixels [x0, x1) x [y0, y1) */
} raster;

static raster *of(canvas *c) { return (raster *)c; }

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

/* The pixel box covering [x0, x1] x [y0, y1] (pixels) grown by pad, on
 * the image, added to the dirty box. False when empty. */
static bool box(raster *r, double x0, double y0, double x1, double y1, double pad, int b[4]) {
  b[0] = (int)floor(x0 - pad), b[1] = (int)floor(y0 - pad);
  b[2] = (int)ceil(x1 + pad) + 1, b[3] = (int)ceil(y1 + pad) + 1;
  if (b[0] < 0) b[0] = 0;
  if (b[1] < 0) b[1] = 0;
  if (b[2] > r->w) b[2] = r->w;
  if (b[3] > r->h) b[3] = r->h;
  if (b[0] >= b[2] || b[1] >= b[3]) return false;
  if (b[0] < r->x0) r->x0 = b[0];
  if (b[1] < r->y0) r->y0 = b[1];
  if (b[2] > r->x1) r->x1 = b[2];
  if (b[3] > r->y1) r->y1 = b[3];
  return true;
}

static void cover(raster *r, int x, int y, double c) {
  float *m = &r->mask[(size_t)y * r->w + x];
  if (c > *m) *m = (float)c;
}

/* The mask blended in rgb at opacity alpha, then cleared. */
static void paint(raster *r, uint32_t rgb, double alpha) {
  double col[3] = {rgb >> 16 & 255, rgb >> 8 & 255, rgb & 255};
  for (int y = r->y0; y < r->y1; y++)
    for (int x = r->x0; x < r->x1; x++) {
      float *m = &r->mask[(size_t)y * r->w + x];
      double a = *m * alpha;
      *m = 0;
      if (a <= 0) continue;
      uint8_t *p = &r->rgb[((size_t)y * r->w + x) * 3];
      for (int k = 0; k < 3; k++) p[k] = (uint8_t)lrint(p[k] * (1 - a) + col[k] * a);
    }
  r->x0 = r->w, r->y0 = r->h, r->x1 = r->y1 = 0;
}

/* A segment of width wd (pixels): coverage from each pixel centre's
 * distance to it. */
static void cover_segment(raster *r, double ax, double ay, double bx, double by, double wd) {
  int b[4];
  if (!box(r, fmin(ax, bx), fmin(ay, by), fmax(ax, bx), fmax(ay, by), wd / 2 + 1, b)) return;
  double dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
  for (int y = b[1]; y < b[3]; y++)
    for (int x = b[0]; x < b[2]; x++) {
      double cx = x + 0.5 - ax, cy = y + 0.5 - ay;
      double t = len2 > 0 ? clamp01((cx * dx + cy * dy) / len2) : 0;
      double d = hypot(cx - t * dx, cy - t * dy);
      cover(r, x, y, clamp01(wd / 2 + 0.5 - d));
    }
}

/* The area of each pixel inside [x0, x1] x [y0, y1]. */
static void cover_box(raster *r, double x0, double y0, double x1, double y1) {
  int b[4];
  if (!box(r, x0, y0, x1, y1, 0, b)) return;
  for (int y = b[1]; y < b[3]; y++)
    for (int x = b[0]; x < b[2]; x++)
      cover(r, x, y, clamp01(fmin(x + 1, x1) - fmax(x, x0)) * clamp01(fmin(y + 1, y1) - fmax(y, y0)));
}

static void cover_disc(raster *r, double cx, double cy, double rad) {
  int b[4];
  if (!box(r, cx - rad, cy - rad, cx + rad, cy + rad, 1, b)) return;
  for (int y = b[1]; y < b[3]; y++)
    for (int x = b[0]; x < b[2]; x++) cover(r, x, y, clamp01(rad + 0.5 - hypot(x + 0.5 - cx, y + 0.5 - cy)));
}

static void stroke(raster *r, const plot_style *s) {
  paint(r, s->stroke, 1);
}

static void fill(raster *r, const plot_style *s) {
  paint(r, s->fill, s->fill_opacity > 0 ? s->fill_opacity : 1);
}

static void raster_begin(canvas *c, int w, int h, const char *attrs) {
  raster *r = of(c);
  r->w = (int)lrint(w * r->scale), r->h = (int)lrint(h * r->scale);
  r->rgb = mlc_xmalloc((size_t)r->w * r->h * 3);
  memset(r->rgb, 255, (size_t)r->w * r->h * 3);
  r->mask = mlc_xmalloc((size_t)r->w * r->h * sizeof(float));
  r->x0 = r->w, r->y0 = r->h, r->x1 = r->y1 = 0;
}

static void raster_end(canvas *c) {}

static void raster_polyline(canvas *c, const char *cls, int n, const double *x, const double *y,
                            const char *tip) {
  raster *r = of(c);
  const plot_style *s = plot_style_of(cls);
  if (s->stroke == PLOT_NONE) return;
  double k = r->scale;
  for (int i = 0; i + 1 < n; i++)
    cover_segment(r, x[i] * k, y[i] * k, x[i + 1] * k, y[i + 1] * k, s->stroke_width * k);
  stroke(r, s);
}

static void raster_rect(canvas *c, const char *cls, double x, double y, double w, double h,
                        const char *tip) {
  raster *r = of(c);
  const plot_style *s = plot_style_of(cls);
  double k = r->scale;
  if (s->fill != PLOT_NONE) {
    cover_box(r, x * k, y * k, (x + w) * k, (y + h) * k);
    fill(r, s);
  }
  if (s->stroke != PLOT_NONE)
    raster_polyline(c, cls, 5, (double[]){x, x + w, x + w, x, x}, (double[]){y, y, y + h, y + h, y},
                    NULL);
}

static void raster_circle(canvas *c, const char *cls, double x, double y, double rad,
                          const char *tip) {
  raster *r = of(c);
  const plot_style *s = plot_style_of(cls);
  if (s->fill == PLOT_NONE) return;
  cover_disc(r, x * r->scale, y * r->scale, rad * r->scale);
  fill(r, s);
}

/* ---- text ---------------------------------------------------------------------- */

/* The glyph of the character at *t, advancing t past it: printable ASCII
 * as itself, anything else (a UTF-8 sequence, a control) as '?'. */
static const raster_glyph *next_glyph(const raster_font *f, const char **t) {
  unsigned char ch = (unsigned char)*(*t)++;
  if (ch >= 0x80)
    while ((**t & 0xc0) == 0x80) (*t)++;
  if (ch < ' ' || ch > '~') ch = '?';
  return &f->glyphs[ch - ' '];
}

double raster_text_width(const raster_font *f, const char *text) {
  double w = 0;
  for (const char *t = text; *t;) w += next_glyph(f, &t)->advance;
  return w;
}

static double level(char c) {
  return c >= '1' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 0;
}

/* The glyph's coverage at (gx, gy) in its bitmap's pixels, bilinear
 * between pixel centres. */
static double sample(const raster_glyph *g, double gx, double gy) {
  gx -= 0.5, gy -= 0.5;
  int ix = (int)floor(gx), iy = (int)floor(gy);
  double fx = gx - ix, fy = gy - iy, v = 0;
  for (int dy = 0; dy < 2; dy++)
    for (int dx = 0; dx < 2; dx++) {
      int x = ix + dx, y = iy + dy;
      if (x < 0 || y < 0 || x >= g->w || y >= g->h) continue;
      v += level(g->coverage[y * g->w + x]) / 15 * (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
    }
  return v;
}

/* Text space: u along the baseline from the pen's start, v down from it;
 * a quarter turn maps it onto the image about the origin (ox, oy). */
typedef struct pen {
  double ox, oy, k; /* origin (pixels), pixels per font pixel */
  int rotate;
} pen;

static void to_image(const pen *p, double u, double v, double *x, double *y) {
  *x = p->ox + (p->rotate == 0 ? u : p->rotate < 0 ? v : -v);
  *y = p->oy + (p->rotate == 0 ? v : p->rotate < 0 ? -u : u);
}

static void to_text(const pen *p, double x, double y, double *u, double *v) {
  double dx = x - p->ox, dy = y - p->oy;
  *u = p->rotate == 0 ? dx : p->rotate < 0 ? -dy : dy;
  *v = p->rotate == 0 ? dy : p->rotate < 0 ? dx : -dx;
}

/* Glyph g with its pen position at u: coverage into the mask. */
static void cover_glyph(raster *r, const pen *p, const raster_glyph *g, double u) {
  double u0 = u + g->left * p->k, v0 = -g->top * p->k, u1 = u0 + g->w * p->k, v1 = v0 + g->h * p->k;
  double ax, ay, bx, by;
  to_image(p, u0, v0, &ax, &ay);
  to_image(p, u1, v1, &bx, &by);
  int b[4];
  if (!box(r, fmin(ax, bx), fmin(ay, by), fmax(ax, bx), fmax(ay, by), 1, b)) return;
  for (int y = b[1]; y < b[3]; y++)
    for (int x = b[0]; x < b[2]; x++) {
      double tu, tv;
      to_text(p, x + 0.5, y + 0.5, &tu, &tv);
      double c = sample(g, (tu - u0) / p->k, (tv - v0) / p->k);
      if (c > 0) cover(r, x, y, c);
    }
}

static void raster_text(canvas *c, const char *cls, double x, double y, text_anchor anchor,
                        int rotate, const char *text) {
  raster *r = of(c);
  const plot_style *s = plot_style_of(cls);
  const raster_font *f = &raster_font_sans;
  int size = s->font_px ? s->font_px : plot_style_of("text")->font_px;
  pen p = {x * r->scale, y * r->scale, size * r->scale / f->px, rotate};
  double u = -raster_text_width(f, text) * p.k * (anchor == ANCHOR_START ? 0 : anchor == ANCHOR_MIDDLE ? 0.5 : 1);
  for (const char *t = text; *t;) {
    const raster_glyph *g = next_glyph(f, &t);
    cover_glyph(r, &p, g, u);
    if (s->bold) cover_glyph(r, &p, g, u + 0.6 * p.k);
    u += g->advance * p.k;
  }
  fill(r, s);
}

static const canvas_ops raster_ops = {raster_begin, raster_end, raster_rect, raster_polyline,
                                      raster_circle, raster_text};

void plot_png(mlc_str *out, const plot *p, int scale) {
  raster r = {.base = {&raster_ops}, .scale = scale};
  plot_draw(&r.base, p);
  png_encode(out, r.rgb, r.w, r.h);
  mlc_free(r.rgb);
  mlc_free(r.mask);
}
