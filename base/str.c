/* String builder, error values and whole-file I/O. */
#include "base/base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(mlc_str *s, size_t extra) {
  size_t need = s->len + extra + 1;
  if (need <= s->cap) return;
  size_t cap = s->cap ? s->cap : 64;
  while (cap < need) cap *= 2;
  if (s->arena) {
    char *p = mlc_arena_alloc(s->arena, cap);
    if (s->len) memcpy(p, s->data, s->len + 1);
    s->data = p;
  } else {
    s->data = mlc_xrealloc(s->data, cap);
  }
  s->cap = cap;
}

void mlc_str_putn(mlc_str *s, const char *t, size_t n) {
  reserve(s, n);
  memcpy(s->data + s->len, t, n);
  s->len += n;
  s->data[s->len] = 0;
}

void mlc_str_reserve(mlc_str *s, size_t extra) { reserve(s, extra); }

void mlc_str_putc(mlc_str *s, char c) {
  reserve(s, 1);
  s->data[s->len++] = c;
  s->data[s->len] = 0;
}

void mlc_str_put_i64(mlc_str *s, int64_t v) {
  char buf[24], *p = buf + sizeof buf;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  mlc_str_putn(s, p, (size_t)(buf + sizeof buf - p));
}
void mlc_str_puts(mlc_str *s, const char *t) { mlc_str_putn(s, t, strlen(t)); }

void mlc_str_vprintf(mlc_str *s, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  MLC_ASSERT(n >= 0);
  reserve(s, (size_t)n);
  vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
  s->len += (size_t)n;
}

void mlc_str_printf(mlc_str *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mlc_str_vprintf(s, fmt, ap);
  va_end(ap);
}

void mlc_str_indent(mlc_str *s, int spaces) {
  reserve(s, (size_t)spaces);
  memset(s->data + s->len, ' ', (size_t)spaces);
  s->len += (size_t)spaces;
  s->data[s->len] = 0;
}

const char *mlc_str_cstr(mlc_str *s) { return s->data ? s->data : ""; }

char *mlc_str_take(mlc_str *s) {
  MLC_ASSERT(!s->arena); /* the caller would mlc_free arena memory */
  char *p = s->data ? s->data : mlc_xstrdup("");
  s->data = NULL;
  s->len = s->cap = 0;
  return p;
}

void mlc_str_clear(mlc_str *s) {
  s->len = 0;
  if (s->data) s->data[0] = 0;
}

void mlc_str_free(mlc_str *s) {
  if (!s->arena) mlc_free(s->data);
  s->data = NULL;
  s->len = s->cap = 0;
}

/* Python-repr-like text from the shortest %.*e digits that round-trip:
 * fixed notation when -4 <= exponent < 16, else d.ddde-XX; integral values
 * in fixed range print without a fraction ("3", not "3.0"). */
static void put_shortest(mlc_str *s, double v, bool as_float) {
  if (isnan(v)) { mlc_str_puts(s, "nan"); return; }
  if (isinf(v)) { mlc_str_puts(s, v < 0 ? "-inf" : "inf"); return; }
  if (v == 0) { mlc_str_puts(s, signbit(v) ? "-0" : "0"); return; }
  char buf[64];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    double back = strtod(buf, NULL);
    if (as_float ? (float)back == (float)v : back == v) break;
  }
  /* buf is "-d.ddde[+-]XX": split digits and exponent. */
  char digits[32];
  int nd = 0, exp10;
  const char *p = buf;
  bool neg = *p == '-';
  if (neg) p++;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  exp10 = atoi(p + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  if (neg) mlc_str_putc(s, '-');
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      mlc_str_puts(s, "0.");
      for (int i = -1; i > exp10; i--) mlc_str_putc(s, '0');
      mlc_str_putn(s, digits, (size_t)nd);
    } else if (nd <= exp10 + 1) {
      mlc_str_putn(s, digits, (size_t)nd);
      for (int i = nd; i <= exp10; i++) mlc_str_putc(s, '0');
    } else {
      mlc_str_putn(s, digits, (size_t)exp10 + 1);
      mlc_str_putc(s, '.');
      mlc_str_putn(s, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
    }
  } else {
    mlc_str_putc(s, digits[0]);
    if (nd > 1) {
      mlc_str_putc(s, '.');
      mlc_str_putn(s, digits + 1, (size_t)nd - 1);
    }
    mlc_str_printf(s, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
}

void mlc_str_put_double(mlc_str *s, double v) { put_shortest(s, v, false); }
void mlc_str_put_float(mlc_str *s, float v) { put_shortest(s, (double)v, true); }

/* ---- errors ----------------------------------------------------------- */

bool mlc_error_vset(mlc_error *err, const char *fmt, va_list ap) {
  if (err) vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  return false;
}

bool mlc_error_set(mlc_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mlc_error_vset(err, fmt, ap);
  va_end(ap);
  return false;
}

bool mlc_error_prefix(mlc_error *err, const char *fmt, ...) {
  if (!err) return false;
  char prefix[512], old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  size_t n = strlen(prefix);
  if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
  memcpy(err->msg, prefix, n);
  memcpy(err->msg + n, ": ", 2);
  size_t room = sizeof err->msg - n - 3, olen = strlen(old);
  if (olen > room) olen = room;
  memcpy(err->msg + n + 2, old, olen);
  err->msg[n + 2 + olen] = 0;
  return false;
}

/* ---- files ------------------------------------------------------------ */

char *mlc_read_file(const char *path, size_t *len, mlc_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    mlc_error_set(err, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  mlc_str s = {0};
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) mlc_str_putn(&s, buf, n);
  bool failed = ferror(f);
  int saved = errno;
  fclose(f);
  if (failed) {
    mlc_str_free(&s);
    mlc_error_set(err, "cannot read %s: %s", path, strerror(saved));
    return NULL;
  }
  if (len) *len = s.len;
  return mlc_str_take(&s);
}

bool mlc_write_file(const char *path, const void *data, size_t len, mlc_error *err) {
  FILE *f = fopen(path, "wb");
  if (!f) return mlc_error_set(err, "cannot write %s: %s", path, strerror(errno));
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok) return mlc_error_set(err, "cannot write %s: %s", path, strerror(errno));
  return true;
}

bool mlc_feature_list_has(const char *list, const char *feature) {
  size_t n = strlen(feature);
  bool on = false;
  for (const char *p = list; (p = strstr(p, feature)) != NULL; p += n) {
    bool item = p > list && (p[-1] == '+' || p[-1] == '-') && (p == list + 1 || p[-2] == ',');
    if (item && (p[n] == ',' || p[n] == 0)) on = p[-1] == '+';
  }
  return on;
}
