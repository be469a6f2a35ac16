/* JSON reader (a recursive-descent parser into an arena) and writer helpers.
 *
 * The reader accepts RFC 8259 JSON plus the three tokens Python's json
 * module writes for non-finite numbers (NaN, Infinity, -Infinity), so that
 * whatever mlc_json_write_number prints reads back. Strings are decoded to
 * UTF-8; \u0000 is refused because decoded strings are NUL-terminated. */
#include "base/base.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 512 };

typedef struct parser {
  mlc_arena *a;
  const char *p, *end, *begin;
  mlc_error *err;
  jmp_buf fail; /* taken on a syntax error or an allocation failure */
} parser;

/* ---- errors -------------------------------------------------------------- */

static void position(const parser *ps, const char *at, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (const char *q = ps->begin; q < at; q++) {
    if (*q == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

static const char *describe(const parser *ps, const char *at, char *buf, size_t n) {
  if (at >= ps->end) return "end of input";
  unsigned char c = (unsigned char)*at;
  if (c >= 0x20 && c < 0x7f) snprintf(buf, n, "'%c'", c);
  else snprintf(buf, n, "byte 0x%02x", c);
  return buf;
}

/* "line L, column C: expected WHAT, got X" and leave the parse. */
static _Noreturn void fail_at(parser *ps, const char *at, const char *what) {
  int line, col;
  char buf[32];
  position(ps, at, &line, &col);
  mlc_error_set(ps->err, "line %d, column %d: expected %s, got %s", line, col, what,
                describe(ps, at, buf, sizeof buf));
  longjmp(ps->fail, 1);
}

/* ---- lexical helpers ------------------------------------------------------ */

static void skip_ws(parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static bool match_word(parser *ps, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0) return false;
  ps->p += n;
  return true;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Four hex digits after "\u"; ps->p points at the first. */
static unsigned read_hex4(parser *ps) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = ps->p < ps->end ? hex_value(*ps->p) : -1;
    if (h < 0) fail_at(ps, ps->p, "four hex digits after \\u");
    v = v * 16 + (unsigned)h;
    ps->p++;
  }
  return v;
}

static char *put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xc0 | (cp >> 6));
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *o++ = (char)(0xe0 | (cp >> 12));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *o++ = (char)(0xf0 | (cp >> 18));
    *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  }
  return o;
}

/* After "\u" with ps->p at the hex digits: one code point, joining a
 * surrogate pair. */
static unsigned read_unicode_escape(parser *ps) {
  const char *start = ps->p - 2;
  unsigned cp = read_hex4(ps);
  if (cp >= 0xdc00 && cp <= 0xdfff) fail_at(ps, start, "a high surrogate before a low surrogate");
  if (cp >= 0xd800 && cp <= 0xdbff) {
    const char *low_at = ps->p;
    if (!match_word(ps, "\\u")) fail_at(ps, low_at, "a \\u low surrogate after a high surrogate");
    unsigned lo = read_hex4(ps);
    if (lo < 0xdc00 || lo > 0xdfff) fail_at(ps, low_at, "a low surrogate (\\udc00-\\udfff)");
    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
  }
  if (cp == 0) fail_at(ps, start, "a character other than \\u0000");
  return cp;
}

/* A string; ps->p at the opening quote. Decoding never grows the text
 * (an escape of n chars yields at most n bytes), so the raw length bounds
 * the output. */
static const char *parse_string(parser *ps) {
  ps->p++;
  const char *q = ps->p;
  while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
  char *out = mlc_arena_alloc(ps->a, (size_t)(q - ps->p) + 1), *o = out;
  for (;;) {
    if (ps->p >= ps->end) fail_at(ps, ps->p, "'\"' to close the string");
    unsigned char c = (unsigned char)*ps->p;
    if (c == '"') break;
    if (c < 0x20) fail_at(ps, ps->p, "an escaped control character");
    if (c != '\\') {
      *o++ = (char)c;
      ps->p++;
      continue;
    }
    const char *esc = ps->p++;
    char e = ps->p < ps->end ? *ps->p++ : 0;
    switch (e) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '/': *o++ = '/'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'u': o = put_utf8(o, read_unicode_escape(ps)); break;
    default: fail_at(ps, esc, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
  }
  ps->p++;
  *o = 0;
  return out;
}

/* ---- values ------------------------------------------------------------- */

static mlc_json *new_value(parser *ps, mlc_json_kind k) {
  mlc_json *v = MLC_NEW(ps->a, mlc_json);
  v->kind = k;
  return v;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Plain integer text (optional '-', digits) that fits int64. */
static bool integer_value(const char *s, const char *e, int64_t *out) {
  bool neg = *s == '-';
  if (neg) s++;
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
  for (; s < e; s++) {
    uint64_t d = (uint64_t)(*s - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

static mlc_json *parse_number(parser *ps) {
  const char *s = ps->p, *q = s;
  if (q < ps->end && *q == '-') q++;
  if (q < ps->end && *q == 'I') {
    ps->p = q;
    if (!match_word(ps, "Infinity")) fail_at(ps, q, "a value");
    mlc_json *v = new_value(ps, MLC_JSON_NUMBER);
    v->number = *s == '-' ? -INFINITY : INFINITY;
    return v;
  }
  if (q >= ps->end || !is_digit(*q)) fail_at(ps, q, "a digit");
  if (*q == '0') q++;
  else
    while (q < ps->end && is_digit(*q)) q++;
  bool plain = true;
  if (q < ps->end && *q == '.') {
    plain = false;
    q++;
    if (q >= ps->end || !is_digit(*q)) fail_at(ps, q, "a digit after '.'");
    while (q < ps->end && is_digit(*q)) q++;
  }
  if (q < ps->end && (*q == 'e' || *q == 'E')) {
    plain = false;
    q++;
    if (q < ps->end && (*q == '+' || *q == '-')) q++;
    if (q >= ps->end || !is_digit(*q)) fail_at(ps, q, "a digit in the exponent");
    while (q < ps->end && is_digit(*q)) q++;
  }
  ps->p = q;
  mlc_json *v = new_value(ps, MLC_JSON_NUMBER);
  /* strtod needs a terminated copy; the input need not be terminated. */
  char small[64], *text = (size_t)(q - s) < sizeof small ? small
                                                         : mlc_arena_alloc(ps->a, (size_t)(q - s) + 1);
  memcpy(text, s, (size_t)(q - s));
  text[q - s] = 0;
  v->number = strtod(text, NULL);
  if (plain && integer_value(s, q, &v->integer)) v->is_integer = true;
  return v;
}

static mlc_json *parse_value(parser *ps, int depth);

static void check_depth(parser *ps, int depth) {
  if (depth >= MAX_DEPTH) fail_at(ps, ps->p, "at most 512 levels of nesting");
}

static mlc_json *parse_array(parser *ps, int depth) {
  check_depth(ps, depth);
  mlc_json *v = new_value(ps, MLC_JSON_ARRAY);
  MLC_VEC(mlc_json *) items = {0};
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ']') {
    ps->p++;
    return v;
  }
  for (;;) {
    MLC_VEC_APUSH(ps->a, items, parse_value(ps, depth + 1));
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == ']') break;
    fail_at(ps, ps->p, "',' or ']'");
  }
  ps->p++;
  v->len = items.len;
  v->items = items.data;
  return v;
}

static mlc_json *parse_object(parser *ps, int depth) {
  check_depth(ps, depth);
  mlc_json *v = new_value(ps, MLC_JSON_OBJECT);
  MLC_VEC(mlc_json *) items = {0};
  MLC_VEC(const char *) keys = {0};
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '}') {
    ps->p++;
    return v;
  }
  for (;;) {
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') fail_at(ps, ps->p, "a string key");
    MLC_VEC_APUSH(ps->a, keys, parse_string(ps));
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') fail_at(ps, ps->p, "':' after the key");
    ps->p++;
    MLC_VEC_APUSH(ps->a, items, parse_value(ps, depth + 1));
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == '}') break;
    fail_at(ps, ps->p, "',' or '}'");
  }
  ps->p++;
  v->len = items.len;
  v->items = items.data;
  v->keys = keys.data;
  return v;
}

static mlc_json *parse_value(parser *ps, int depth) {
  skip_ws(ps);
  if (ps->p >= ps->end) fail_at(ps, ps->p, "a value");
  const char *at = ps->p;
  switch (*at) {
  case '{': return parse_object(ps, depth);
  case '[': return parse_array(ps, depth);
  case '"': {
    mlc_json *v = new_value(ps, MLC_JSON_STRING);
    v->str = parse_string(ps);
    return v;
  }
  case 't':
  case 'f':
    if (match_word(ps, "true") || match_word(ps, "false")) {
      mlc_json *v = new_value(ps, MLC_JSON_BOOL);
      v->boolean = *at == 't';
      return v;
    }
    break;
  case 'n':
    if (match_word(ps, "null")) return new_value(ps, MLC_JSON_NULL);
    break;
  case 'N':
    if (match_word(ps, "NaN")) {
      mlc_json *v = new_value(ps, MLC_JSON_NUMBER);
      v->number = NAN;
      return v;
    }
    break;
  default:
    if (*at == '-' || *at == 'I' || is_digit(*at)) return parse_number(ps);
    break;
  }
  fail_at(ps, at, "a value");
}

mlc_json *mlc_json_parse(mlc_arena *a, const char *text, size_t len, mlc_error *err) {
  parser ps = {.a = a, .p = text, .end = text + len, .begin = text, .err = err};
  if (err) err->msg[0] = 0;
  jmp_buf *outer = mlc_arena_oom_jump(a); /* a caller's own escape point, put back */
  if (setjmp(ps.fail)) {
    /* A syntax error left a message; an arena allocation failure did not. */
    mlc_arena_set_oom_jump(a, outer);
    if (err && err->msg[0] == 0) mlc_error_set(err, "out of memory parsing JSON");
    return NULL;
  }
  mlc_arena_set_oom_jump(a, &ps.fail);
  mlc_json *v = parse_value(&ps, 0);
  skip_ws(&ps);
  if (ps.p < ps.end) fail_at(&ps, ps.p, "end of input after the value");
  mlc_arena_set_oom_jump(a, outer);
  return v;
}

const mlc_json *mlc_json_get(const mlc_json *obj, const char *key) {
  if (!obj || obj->kind != MLC_JSON_OBJECT) return NULL;
  for (int i = 0; i < obj->len; i++)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}

/* ---- writer ------------------------------------------------------------- */

void mlc_json_write_string(mlc_str *s, const char *str) {
  mlc_str_putc(s, '"');
  const unsigned char *run = (const unsigned char *)str; /* bytes written as they are */
  for (const unsigned char *p = run;; p++) {
    unsigned char c = *p;
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    mlc_str_putn(s, (const char *)run, (size_t)(p - run));
    run = p + 1;
    switch (c) {
    case 0: mlc_str_putc(s, '"'); return;
    case '"': mlc_str_puts(s, "\\\""); break;
    case '\\': mlc_str_puts(s, "\\\\"); break;
    case '\n': mlc_str_puts(s, "\\n"); break;
    case '\t': mlc_str_puts(s, "\\t"); break;
    case '\r': mlc_str_puts(s, "\\r"); break;
    case '\b': mlc_str_puts(s, "\\b"); break;
    case '\f': mlc_str_puts(s, "\\f"); break;
    default: mlc_str_printf(s, "\\u%04x", c);
    }
  }
}

void mlc_json_write_number(mlc_str *s, double v) {
  if (isnan(v)) {
    mlc_str_puts(s, "NaN");
  } else if (isinf(v)) {
    mlc_str_puts(s, v < 0 ? "-Infinity" : "Infinity");
  } else if (v == floor(v) && fabs(v) <= 9007199254740992.0 && !(v == 0 && signbit(v))) {
    /* Every integer up to 2^53 is exact: print it as one. */
    mlc_str_put_i64(s, (int64_t)v);
  } else {
    mlc_str_put_double(s, v); /* "-0", "0.1", "1e+300" */
  }
}

void mlc_json_write_key(mlc_str *s, bool *first, const char *key) {
  if (!*first) mlc_str_putc(s, ',');
  *first = false;
  mlc_json_write_string(s, key);
  mlc_str_putc(s, ':');
}

void mlc_json_write_member_string(mlc_str *s, bool *first, const char *key, const char *v) {
  mlc_json_write_key(s, first, key);
  if (v) mlc_json_write_string(s, v);
  else mlc_str_puts(s, "null");
}

void mlc_json_write_member_number(mlc_str *s, bool *first, const char *key, double v) {
  mlc_json_write_key(s, first, key);
  mlc_json_write_number(s, v);
}

void mlc_json_write(mlc_str *s, const mlc_json *v) {
  switch (v->kind) {
  case MLC_JSON_NULL: mlc_str_puts(s, "null"); return;
  case MLC_JSON_BOOL: mlc_str_puts(s, v->boolean ? "true" : "false"); return;
  case MLC_JSON_NUMBER:
    /* The stored integer is exact beyond 2^53, where the double is not; -0
     * keeps its sign through the double. */
    if (v->is_integer && !(v->integer == 0 && signbit(v->number)))
      mlc_str_printf(s, "%" PRId64, v->integer);
    else
      mlc_json_write_number(s, v->number);
    return;
  case MLC_JSON_STRING: mlc_json_write_string(s, v->str); return;
  case MLC_JSON_ARRAY:
    mlc_str_putc(s, '[');
    for (int i = 0; i < v->len; i++) {
      if (i) mlc_str_putc(s, ',');
      mlc_json_write(s, v->items[i]);
    }
    mlc_str_putc(s, ']');
    return;
  case MLC_JSON_OBJECT:
    mlc_str_putc(s, '{');
    for (int i = 0; i < v->len; i++) {
      if (i) mlc_str_putc(s, ',');
      mlc_json_write_string(s, v->keys[i]);
      mlc_str_putc(s, ':');
      mlc_json_write(s, v->items[i]);
    }
    mlc_str_putc(s, '}');
    return;
  }
  mlc_unreachable();
}
