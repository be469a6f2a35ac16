/* plots below the report: one layout drawn through the canvas interface
 * (a recording canvas counts what it is asked to draw), the style table
 * both backends read, the raster backend's pixels, and PNG files that
 * decode back to the image they were made from. */
#include "report/report_internal.h"
#include "tests/test.h"

#include <stdlib.h>
#include <zlib.h>

/* ---- a canvas that records what it is asked to draw ---- */

typedef struct recorder {
  canvas base;
  int width, height, rects, polylines, circles, texts, tips, ends;
  char texts_seen[1024];
} recorder;

static void rec_begin(canvas *c, int w, int h, const char *attrs) {
  recorder *r = (recorder *)c;
  r->width = w, r->height = h;
}
static void rec_end(canvas *c) { ((recorder *)c)->ends++; }
static void rec_rect(canvas *c, const char *cls, double x, double y, double w, double h,
                     const char *tip) {
  recorder *r = (recorder *)c;
  r->rects++, r->tips += tip != NULL;
}
static void rec_polyline(canvas *c, const char *cls, int n, const double *x, const double *y,
                         const char *tip) {
  recorder *r = (recorder *)c;
  CHECK(n >= 2);
  r->polylines++, r->tips += tip != NULL;
}
static void rec_circle(canvas *c, const char *cls, double x, double y, double rad, const char *tip) {
  recorder *r = (recorder *)c;
  CHECK(x >= 0 && x <= r->width && y >= 0 && y <= r->height);
  r->circles++, r->tips += tip != NULL;
}
static void rec_text(canvas *c, const char *cls, double x, double y, text_anchor anchor, int rotate,
                     const char *text) {
  recorder *r = (recorder *)c;
  r->texts++;
  size_t n = strlen(r->texts_seen);
  snprintf(r->texts_seen + n, sizeof r->texts_seen - n, "%s|", text);
}
static const canvas_ops rec_ops = {rec_begin, rec_end, rec_rect, rec_polyline, rec_circle, rec_text};

static const double xs[4] = {1, 2, 3, 4}, ys[4] = {10, 40, 20, 30}, best[4] = {10, 40, 40, 40};
static const char *const tips[4] = {"a", "b", "c", "d"};

static plot sample_plot(void) {
  plot p = {.title = "Tuning curve", .xlabel = "trial", .ylabel = "GFLOP/s"};
  plot_add(&p, PLOT_DOTS, "pt", "candidate", 4, xs, ys, tips);
  plot_add(&p, PLOT_ERRORS, "err", "failed", 2, xs, ys, tips);
  plot_add(&p, PLOT_STEP, "best", "best so far", 4, xs, best, NULL);
  return p;
}

static void test_layout(void) {
  recorder r = {.base = {&rec_ops}};
  plot p = sample_plot();
  plot_draw(&r.base, &p);
  CHECK(r.width > 0 && r.height > 0 && r.ends == 1);
  CHECK_MSG(r.circles == 4, "%d circles", r.circles);
  CHECK(r.rects == 1);                           /* the frame */
  CHECK_MSG(r.tips == 6, "%d tips", r.tips);     /* 4 dots, 2 crosses */
  CHECK(strstr(r.texts_seen, "Tuning curve|") && strstr(r.texts_seen, "candidate|") &&
        strstr(r.texts_seen, "best so far|") && strstr(r.texts_seen, "GFLOP/s|"));
}

static void test_styles(void) {
  CHECK(plot_style_of("legend best-key")->fill == 0xd62728u);
  CHECK(plot_style_of("best")->stroke == 0xd62728u && plot_style_of("best")->fill == PLOT_NONE);
  CHECK(plot_style_of("nosuch") == plot_style_of("text"));
  CHECK(plot_style_of(NULL) == plot_style_of("text") && plot_style_of("text")->font_px > 0);
  mlc_str css = {0};
  plot_css(&css);
  CHECK(strstr(mlc_str_cstr(&css), "svg .pt{fill:#4477aa;fill-opacity:0.6;}"));
  CHECK(strstr(mlc_str_cstr(&css), "svg text{font:11px sans-serif;"));
  mlc_str_free(&css);
}

static void test_font(void) {
  const raster_font *f = &raster_font_sans;
  const raster_glyph *a = &f->glyphs['A' - ' '];
  CHECK(a->w > 0 && a->h > 0 && strlen(a->coverage) == (size_t)a->w * a->h);
  CHECK(raster_text_width(f, "AA") == 2 * a->advance);
  /* anything outside printable ASCII is one '?' a character */
  CHECK(raster_text_width(f, "\xc2\xb5s") == raster_text_width(f, "?s"));
  for (int c = 0; c <= '~' - ' '; c++)
    CHECK_MSG(strlen(f->glyphs[c].coverage) == (size_t)f->glyphs[c].w * f->glyphs[c].h, "glyph %c",
              c + ' ');
}

/* ---- PNG decoding, for the checks ---- */

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The RGB pixels of a PNG as png_encode writes it (one IDAT, filter 0
 * rows); NULL, with the case failed, when it is not one. */
static uint8_t *png_decode(const uint8_t *png, size_t n, int *w, int *h) {
  if (n < 8 || memcmp(png, "\x89PNG\r\n\x1a\n", 8) != 0) return CHECK(!"signature"), NULL;
  uint8_t *rgb = NULL, *raw = NULL;
  bool ended = false;
  for (size_t at = 8; at + 12 <= n && !ended;) {
    uint32_t len = get_u32(png + at);
    const uint8_t *type = png + at + 4, *data = type + 4;
    if (at + 12 + len > n) return CHECK(!"chunk past the end"), free(rgb), NULL;
    CHECK_MSG(crc32(crc32(0, type, 4), data, len) == get_u32(data + len), "CRC of %.4s", type);
    if (!memcmp(type, "IHDR", 4)) {
      *w = (int)get_u32(data), *h = (int)get_u32(data + 4);
      CHECK(len == 13 && data[8] == 8 && data[9] == 2);
    } else if (!memcmp(type, "IDAT", 4)) {
      uLongf raw_n = (uLongf)(*w * 3 + 1) * *h;
      raw = malloc(raw_n);
      CHECK(uncompress(raw, &raw_n, data, len) == Z_OK && raw_n == (uLongf)(*w * 3 + 1) * *h);
      rgb = malloc((size_t)*w * *h * 3);
      for (int y = 0; y < *h; y++) {
        CHECK(raw[(size_t)y * (*w * 3 + 1)] == 0);
        memcpy(rgb + (size_t)y * *w * 3, raw + (size_t)y * (*w * 3 + 1) + 1, (size_t)*w * 3);
      }
      free(raw);
    } else if (!memcmp(type, "IEND", 4)) {
      ended = true;
    }
    at += 12 + len;
  }
  CHECK(ended && rgb);
  return rgb;
}

static void test_png_roundtrip(void) {
  const uint8_t img[2 * 3 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  mlc_str png = {0};
  png_encode(&png, img, 3, 2);
  int w = 0, h = 0;
  uint8_t *back = png_decode((const uint8_t *)png.data, png.len, &w, &h);
  CHECK(w == 3 && h == 2 && back && memcmp(back, img, sizeof img) == 0);
  free(back);
  mlc_str_free(&png);
}

static int count_pixels(const uint8_t *rgb, int n, uint32_t color, int tolerance) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    const uint8_t *p = rgb + 3 * i;
    if (abs(p[0] - (int)(color >> 16 & 255)) <= tolerance && abs(p[1] - (int)(color >> 8 & 255)) <= tolerance &&
        abs(p[2] - (int)(color & 255)) <= tolerance)
      k++;
  }
  return k;
}

/* The sample plot at scale 2: mostly white, the best line in exact red,
 * the dots in their colour at 60% over white, the title's text dark. */
static void test_raster(void) {
  plot p = sample_plot();
  mlc_str png = {0};
  plot_png(&png, &p, 2);
  int w = 0, h = 0;
  uint8_t *rgb = png_decode((const uint8_t *)png.data, png.len, &w, &h);
  recorder r = {.base = {&rec_ops}};
  plot_draw(&r.base, &p);
  CHECK_MSG(w == 2 * r.width && h == 2 * r.height, "%dx%d", w, h);
  if (rgb) {
    int n = w * h, white = count_pixels(rgb, n, 0xffffff, 0), red = count_pixels(rgb, n, 0xd62728, 0);
    /* 0.6 * 0x4477aa + 0.4 * white */
    int dot = count_pixels(rgb, n, 0x8fadcc, 2);
    CHECK_MSG(white > n * 8 / 10, "%d of %d white", white, n);
    CHECK_MSG(red > 400, "%d red", red);            /* a 4-pixel wide staircase */
    CHECK_MSG(dot >= 4 * 12, "%d dot pixels", dot); /* 4 discs of radius 5 */
    int dark = 0;
    for (int y = 0; y < 44; y++) dark += count_pixels(rgb + (size_t)y * w * 3, w, 0x333333, 24);
    CHECK_MSG(dark > 20, "%d dark pixels in the title band", dark);
  }
  free(rgb);
  mlc_str_free(&png);
}

int main(void) {
  RUN(test_layout);
  RUN(test_styles);
  RUN(test_font);
  RUN(test_png_roundtrip);
  RUN(test_raster);
  return test_summary();
}
