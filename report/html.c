/* The page around the sections: escaping, the stylesheet, the script that
 * sorts tables (click a heading). */
#include "report/report_internal.h"

void html_escape(mlc_str *out, const char *text) {
  for (const char *c = text ? text : ""; *c; c++) {
    switch (*c) {
    case '<': mlc_str_puts(out, "&lt;"); break;
    case '>': mlc_str_puts(out, "&gt;"); break;
    case '&': mlc_str_puts(out, "&amp;"); break;
    case '"': mlc_str_puts(out, "&quot;"); break;
    default: mlc_str_putc(out, *c);
    }
  }
}

void put_time(mlc_str *s, double sec) {
  if (sec >= 1) mlc_str_printf(s, "%.4g s", sec);
  else if (sec >= 1e-3) mlc_str_printf(s, "%.4g ms", sec * 1e3);
  else mlc_str_printf(s, "%.4g us", sec * 1e6);
}

static const char *style =
    "body{font:14px/1.4 sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}"
    "h1{font-size:1.5em}h2{font-size:1.2em;border-top:1px solid #ccc;padding-top:.8em}"
    "h3{font-size:1em}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}"
    "th{background:#f4f4f4;cursor:pointer}td.l,th.l{text-align:left}"
    "pre{background:#f8f8f8;padding:.6em;overflow-x:auto;font-size:12px;max-height:30em}"
    ".row{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}.note{background:#fff4d6;padding:.4em .8em;"
    "border-left:4px solid #e0a000}.facts li{margin:.1em 0}"
    ".pt:hover{fill:#000;fill-opacity:1}";

/* Click a table heading to sort by that column (numbers by value). */
static const char *script =
    "document.querySelectorAll('table.sortable th').forEach(function(th,col){"
    "th.addEventListener('click',function(){"
    "var tb=th.closest('table').tBodies[0],rows=Array.prototype.slice.call(tb.rows);"
    "var dir=th.dataset.dir==='asc'?-1:1;th.dataset.dir=dir>0?'asc':'desc';"
    "function key(r){var c=r.cells[col],v=c.dataset.v!==undefined?c.dataset.v:c.textContent;"
    "var n=parseFloat(v);return isNaN(n)?v:n;}"
    "rows.sort(function(a,b){var x=key(a),y=key(b);return (x<y?-1:x>y?1:0)*dir;});"
    "rows.forEach(function(r){tb.appendChild(r);});});});";

void html_begin(mlc_str *out, const char *title) {
  mlc_str_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
  html_escape(out, title);
  mlc_str_printf(out, "</title>\n<style>%s", style);
  plot_css(out);
  mlc_str_puts(out, "</style>\n</head><body>\n<h1>");
  html_escape(out, title);
  mlc_str_puts(out, "</h1>\n");
}

void html_end(mlc_str *out) {
  mlc_str_printf(out, "<script>%s</script>\n</body></html>\n", script);
}
