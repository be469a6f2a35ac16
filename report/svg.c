/* The SVG canvas: each shape an element with its style class and hover
 * text, for the page (inline) and for `mlc-db plot -o F.svg`. */
#include "report/report_internal.h"

typedef struct svg_canvas {
  canvas base;
  mlc_str *out;
  bool standalone;
} svg_canvas;

static mlc_str *out_of(canvas *c) { return ((svg_canvas *)c)->out; }

static void svg_begin(canvas *c, int w, int h, const char *attrs) {
  svg_canvas *s = (svg_canvas *)c;
  if (s->standalone) mlc_str_puts(s->out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  mlc_str_printf(s->out, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\""
                         " height=\"%d\" %s>\n",
                 w, h, w, h, attrs ? attrs : "");
  if (s->standalone) mlc_str_puts(s->out, "<style>"), plot_css(s->out), mlc_str_puts(s->out, "</style>\n");
}

static void svg_end(canvas *c) { mlc_str_puts(out_of(c), "</svg>\n"); }

/* The element's end: a hover text inside, or self-closed. */
static void close_element(mlc_str *o, const char *name, const char *tip) {
  if (!tip) {
    mlc_str_puts(o, "/>\n");
    return;
  }
  mlc_str_puts(o, "><title>");
  html_escape(o, tip);
  mlc_str_printf(o, "</title></%s>\n", name);
}

static void svg_rect(canvas *c, const char *cls, double x, double y, double w, double h,
                     const char *tip) {
  mlc_str *o = out_of(c);
  mlc_str_printf(o, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", cls,
                 x, y, w, h);
  close_element(o, "rect", tip);
}

static void svg_polyline(canvas *c, const char *cls, int n, const double *x, const double *y,
                         const char *tip) {
  mlc_str *o = out_of(c);
  mlc_str_printf(o, "<polyline class=\"%s\" points=\"", cls);
  for (int i = 0; i < n; i++) mlc_str_printf(o, "%s%.1f,%.1f", i ? " " : "", x[i], y[i]);
  mlc_str_putc(o, '"');
  close_element(o, "polyline", tip);
}

static void svg_circle(canvas *c, const char *cls, double x, double y, double r, const char *tip) {
  mlc_str *o = out_of(c);
  mlc_str_printf(o, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%g\"", cls, x, y, r);
  close_element(o, "circle", tip);
}

static void svg_text(canvas *c, const char *cls, double x, double y, text_anchor anchor,
                     int rotate, const char *text) {
  static const char *anchors[] = {"start", "middle", "end"};
  mlc_str *o = out_of(c);
  mlc_str_printf(o, "<text class=\"%s\" ", cls);
  if (rotate) mlc_str_printf(o, "transform=\"translate(%.1f %.1f) rotate(%d)\"", x, y, rotate);
  else mlc_str_printf(o, "x=\"%.1f\" y=\"%.1f\"", x, y);
  mlc_str_printf(o, " text-anchor=\"%s\">", anchors[anchor]);
  html_escape(o, text);
  mlc_str_puts(o, "</text>\n");
}

static const canvas_ops svg_ops = {svg_begin, svg_end, svg_rect, svg_polyline, svg_circle, svg_text};

void plot_svg(mlc_str *out, const plot *p, bool standalone) {
  svg_canvas s = {{&svg_ops}, out, standalone};
  plot_draw(&s.base, p);
}
