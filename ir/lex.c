/* TVMScript lexer (Python's rules, for the subset we read) and the parser's
 * located error messages.
 *
 * Python's tokenizer: a logical line ends with NEWLINE unless inside (), []
 * or {}; indentation changes give INDENT/DEDENT (a tab advances to the next
 * multiple of 8; indentation that compares differently when a tab counts
 * as one column is rejected, as Python rejects it); blank and comment-only
 * lines produce nothing. A lexical error becomes a TK_ERROR token so the
 * parser reports it only when it reaches it, after any earlier error.
 */
#include "ir/parse_internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct indent {
  int col; /* tabs to multiples of 8 */
  int alt; /* tabs as one column */
} indent;

typedef struct lexer {
  mlc_parser *p;
  const char *s;
  size_t i;
  int line;
  size_t line_start; /* offset of the current line's first byte */
  int depth;         /* open brackets */
  bool bol;          /* at the beginning of a logical line */
  MLC_VEC(ptok) toks;
  MLC_VEC(indent) ind;
} lexer;

static int col_of(const lexer *L, size_t off) { return (int)(off - L->line_start) + 1; }

static ptok *push(lexer *L, tk_kind k, size_t start, size_t len) {
  ptok t = {0};
  t.kind = k;
  t.line = L->line;
  t.col = col_of(L, start);
  t.src = L->s + start;
  t.len = (int)len;
  MLC_VEC_APUSH(L->p->a, L->toks, t);
  return &L->toks.data[L->toks.len - 1];
}

/* Record an error token at offset `at` of the current line; lexing stops. */
static void lex_error(lexer *L, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lex_error(lexer *L, size_t at, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ptok *t = push(L, TK_ERROR, at, 0);
  t->str = mlc_arena_strdup(L->p->a, msg);
}

static bool is_ident_start(int c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_ident(int c) { return is_ident_start(c) || is_digit(c); }

static void newline_seen(lexer *L) {
  L->line++;
  L->line_start = L->i;
}

/* Measure the indentation of a new logical line and emit INDENT/DEDENT.
 * Returns false at end of input (or on error); skips blank lines. */
static bool line_begin(lexer *L) {
  for (;;) {
    int col = 0, alt = 0;
    size_t j = L->i;
    for (;; j++) {
      char c = L->s[j];
      if (c == ' ') col++, alt++;
      else if (c == '\t') col = (col / 8 + 1) * 8, alt++;
      else if (c == '\f') col = alt = 0;
      else if (c == '\r') continue;
      else break;
    }
    char c = L->s[j];
    if (c == '#')
      while (L->s[j] && L->s[j] != '\n') j++;
    if (L->s[j] == '\n') {
      L->i = j + 1;
      newline_seen(L);
      continue;
    }
    if (L->s[j] == 0) {
      L->i = j;
      return false;
    }
    indent *top = &L->ind.data[L->ind.len - 1];
    if (col > top->col) {
      if (alt <= top->alt) {
        lex_error(L, j, "inconsistent use of tabs and spaces in indentation");
        return false;
      }
      indent in = {col, alt};
      MLC_VEC_APUSH(L->p->a, L->ind, in);
      push(L, TK_INDENT, j, 0);
    } else {
      while (col < L->ind.data[L->ind.len - 1].col) {
        L->ind.len--;
        push(L, TK_DEDENT, j, 0);
      }
      top = &L->ind.data[L->ind.len - 1];
      if (col != top->col) {
        lex_error(L, j, "unindent does not match any outer indentation level");
        return false;
      }
      if (alt != top->alt) {
        lex_error(L, j, "inconsistent use of tabs and spaces in indentation");
        return false;
      }
    }
    L->i = j;
    L->bol = false;
    return true;
  }
}

static int hex_digit(int c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool lex_number(lexer *L) {
  size_t start = L->i, j = L->i;
  const char *s = L->s;
  bool is_float = false;
  if (s[j] == '0' && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
    j += 2;
    uint64_t v = 0;
    size_t digits = j;
    for (; hex_digit(s[j]) >= 0; j++) {
      if (v > (UINT64_MAX >> 4)) {
        lex_error(L, start, "integer literal too large");
        return false;
      }
      v = v * 16 + (uint64_t)hex_digit(s[j]);
    }
    if (j == digits || is_ident(s[j])) {
      lex_error(L, start, "invalid number literal");
      return false;
    }
    if (v > INT64_MAX) {
      lex_error(L, start, "integer literal too large");
      return false;
    }
    ptok *t = push(L, TK_INT, start, j - start);
    t->ival = (int64_t)v;
    L->i = j;
    return true;
  }
  while (is_digit(s[j])) j++;
  if (s[j] == '.') {
    is_float = true;
    j++;
    while (is_digit(s[j])) j++;
  }
  if (s[j] == 'e' || s[j] == 'E') {
    size_t k = j + 1;
    if (s[k] == '+' || s[k] == '-') k++;
    if (!is_digit(s[k])) {
      lex_error(L, start, "invalid number literal");
      return false;
    }
    while (is_digit(s[k])) k++;
    j = k;
    is_float = true;
  }
  if (is_ident(s[j]) || s[j] == '.') {
    lex_error(L, start, "invalid number literal");
    return false;
  }
  size_t len = j - start;
  char buf[128];
  if (len >= sizeof buf) {
    lex_error(L, start, "number literal too long");
    return false;
  }
  memcpy(buf, s + start, len);
  buf[len] = 0;
  ptok *t = push(L, is_float ? TK_FLOAT : TK_INT, start, len);
  if (is_float) {
    t->fval = strtod(buf, NULL);
  } else {
    int64_t v = 0;
    for (size_t k = 0; k < len; k++) {
      int d = buf[k] - '0';
      if (v > (INT64_MAX - d) / 10) {
        L->toks.len--;
        lex_error(L, start, "integer literal too large");
        return false;
      }
      v = v * 10 + d;
    }
    t->ival = v;
  }
  L->i = j;
  return true;
}

static char *put_utf8(char *o, uint32_t cp) {
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

/* Digits of base 8 (at most 3) or exactly `n` hex digits at s; -1 if the
 * hex digits are short. */
static int64_t escape_digits(const char *s, int n, bool octal, int *used) {
  int64_t v = 0;
  int k = 0;
  if (octal) {
    for (; k < 3 && s[k] >= '0' && s[k] <= '7'; k++) v = v * 8 + (s[k] - '0');
  } else {
    for (; k < n; k++) {
      if (hex_digit(s[k]) < 0) return -1;
      v = v * 16 + hex_digit(s[k]);
    }
  }
  *used = k;
  return v;
}

/* Source bytes of the escape at s (s[0] is the backslash), as escape()
 * reads them. */
static size_t escape_len(const char *s) {
  int used = 0;
  switch (s[1]) {
  case 'x': escape_digits(s + 2, 2, false, &used); return 2 + (size_t)used;
  case 'u': escape_digits(s + 2, 4, false, &used); return 2 + (size_t)used;
  case 'U': escape_digits(s + 2, 8, false, &used); return 2 + (size_t)used;
  case 0: return 1; /* reported as unterminated on the next round */
  default:
    if (s[1] >= '0' && s[1] <= '7') {
      escape_digits(s + 1, 3, true, &used);
      return 1 + (size_t)used;
    }
    return 2;
  }
}

/* Decode the escape at s into out as Python does for a str literal: the
 * code point of \ooo, \xhh, \uXXXX, \UXXXXXXXX goes out as UTF-8 (so
 * "\xe9" is the same text as "\u00e9" and as a raw é). An unknown escape
 * keeps its backslash, as Python does. Returns bytes written, or -1 after
 * a located error: NUL cannot be held (strings are NUL-terminated), \N{}
 * names are not known here, surrogates and code points past U+10FFFF are
 * not characters. Never writes more bytes than escape_len() reads. */
static int escape(lexer *L, const char *s, char *out) {
  size_t at = (size_t)(s - L->s);
  int used = 0;
  int64_t cp;
  switch (s[1]) {
  case 'n': *out = '\n'; return 1;
  case 't': *out = '\t'; return 1;
  case 'r': *out = '\r'; return 1;
  case 'a': *out = '\a'; return 1;
  case 'b': *out = '\b'; return 1;
  case 'f': *out = '\f'; return 1;
  case 'v': *out = '\v'; return 1;
  case '\\': *out = '\\'; return 1;
  case '\'': *out = '\''; return 1;
  case '"': *out = '"'; return 1;
  case 0: return 0;
  case 'N':
    lex_error(L, at, "\\N{...} escapes are not supported; write the character or \\u");
    return -1;
  case 'x':
  case 'u':
  case 'U': {
    int want = s[1] == 'x' ? 2 : s[1] == 'u' ? 4 : 8;
    cp = escape_digits(s + 2, want, false, &used);
    if (cp < 0) {
      lex_error(L, at, "truncated \\%c escape: expected %d hex digits", s[1], want);
      return -1;
    }
    break;
  }
  default:
    if (s[1] < '0' || s[1] > '7') {
      out[0] = '\\';
      out[1] = s[1];
      return 2;
    }
    cp = escape_digits(s + 1, 3, true, &used);
    break;
  }
  if (cp == 0) {
    lex_error(L, at, "a string cannot contain a NUL character");
    return -1;
  }
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    lex_error(L, at, "escape of U+%llX is not a character", (unsigned long long)cp);
    return -1;
  }
  return (int)(put_utf8(out, (uint32_t)cp) - out);
}

static bool lex_string(lexer *L) {
  const char *s = L->s;
  size_t start = L->i;
  char q = s[start];
  bool triple = s[start + 1] == q && s[start + 2] == q;
  size_t j = start + (triple ? 3 : 1);
  int line0 = L->line;
  size_t line_start0 = L->line_start;
  /* Decoded text is never longer than the source text up to the closing
   * quote (sizing by the rest of the file made n strings cost O(n * file)). */
  size_t cap = 16;
  for (size_t k = j; s[k]; k++, cap++) {
    if (s[k] == '\\' && s[k + 1]) {
      k++;
      cap++;
    } else if (s[k] == q && (!triple || (s[k + 1] == q && s[k + 2] == q)))
      break;
  }
  char *out = mlc_arena_alloc(L->p->a, cap);
  size_t n = 0;
  for (;;) {
    char c = s[j];
    if (c == 0 || (c == '\n' && !triple)) {
      L->line = line0;
      L->line_start = line_start0;
      lex_error(L, start, "unterminated string");
      return false;
    }
    if (c == q && (!triple || (s[j + 1] == q && s[j + 2] == q))) {
      j += triple ? 3 : 1;
      break;
    }
    if (c == '\\') {
      if (s[j + 1] == '\n') { /* a line continuation: no character */
        j += 2;
        L->i = j;
        newline_seen(L);
        continue;
      }
      int k = escape(L, s + j, out + n);
      if (k < 0) return false;
      n += (size_t)k;
      j += escape_len(s + j);
      continue;
    }
    out[n++] = c;
    j++;
    if (c == '\n') {
      L->i = j;
      newline_seen(L);
    }
  }
  out[n] = 0;
  /* The token starts where the string started. */
  int line_end = L->line;
  size_t line_start_end = L->line_start;
  L->line = line0;
  L->line_start = line_start0;
  ptok *t = push(L, TK_STR, start, j - start);
  t->str = out;
  L->line = line_end;
  L->line_start = line_start_end;
  L->i = j;
  return true;
}

static const char *const ops3[] = {"//=", "**="};
static const char *const ops2[] = {"->", "//", "==", "!=", "<=", ">=", "+=",
                                   "-=", "*=", "/=", "%=", "**"};
static const char ops1[] = "+-*/%<>=:,.()[]{}@";

static bool lex_op(lexer *L) {
  const char *s = L->s + L->i;
  size_t len = 0;
  for (int k = 0; k < MLC_COUNTOF(ops3) && !len; k++)
    if (strncmp(s, ops3[k], 3) == 0) len = 3;
  for (int k = 0; k < MLC_COUNTOF(ops2) && !len; k++)
    if (strncmp(s, ops2[k], 2) == 0) len = 2;
  if (!len && strchr(ops1, s[0])) len = 1;
  if (!len) {
    unsigned char c = (unsigned char)s[0];
    if (c >= 0x21 && c < 0x7f) lex_error(L, L->i, "unexpected character '%c'", c);
    else lex_error(L, L->i, "unexpected byte 0x%02x", c);
    return false;
  }
  ptok *t = push(L, TK_OP, L->i, len);
  t->str = mlc_arena_strndup(L->p->a, s, len);
  if (len == 1 && strchr("([{", s[0])) L->depth++;
  if (len == 1 && strchr(")]}", s[0]) && L->depth > 0) L->depth--;
  L->i += len;
  return true;
}

static void lex_end(lexer *L) {
  if (L->depth == 0) {
    if (L->toks.len > 0) {
      tk_kind last = L->toks.data[L->toks.len - 1].kind;
      if (last != TK_NEWLINE && last != TK_DEDENT && last != TK_INDENT)
        push(L, TK_NEWLINE, L->i, 0);
    }
    while (L->ind.len > 1) {
      L->ind.len--;
      push(L, TK_DEDENT, L->i, 0);
    }
  }
  if (L->toks.len == 0) { /* nothing but blanks and comments: point at the start */
    L->line = 1;
    L->line_start = 0;
    push(L, TK_EOF, 0, 0);
    return;
  }
  push(L, TK_EOF, L->i, 0);
}

void mlc_lex_tokens(mlc_parser *p) {
  lexer L = {0};
  L.p = p;
  L.s = p->text;
  L.line = 1;
  L.bol = true;
  indent base = {0, 0};
  MLC_VEC_APUSH(p->a, L.ind, base);
  for (;;) {
    if (L.bol && L.depth == 0 && !line_begin(&L)) {
      if (L.toks.len && L.toks.data[L.toks.len - 1].kind == TK_ERROR) break;
      lex_end(&L);
      break;
    }
    char c = L.s[L.i];
    if (c == 0) {
      lex_end(&L);
      break;
    }
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      L.i++;
    } else if (c == '#') {
      while (L.s[L.i] && L.s[L.i] != '\n') L.i++;
    } else if (c == '\\' && (L.s[L.i + 1] == '\n' ||
                             (L.s[L.i + 1] == '\r' && L.s[L.i + 2] == '\n'))) {
      L.i += L.s[L.i + 1] == '\n' ? 2 : 3;
      newline_seen(&L);
    } else if (c == '\n') {
      if (L.depth == 0) {
        push(&L, TK_NEWLINE, L.i, 0);
        L.bol = true;
      }
      L.i++;
      newline_seen(&L);
    } else if (is_ident_start((unsigned char)c)) {
      size_t j = L.i;
      while (is_ident((unsigned char)L.s[j])) j++;
      ptok *t = push(&L, TK_NAME, L.i, j - L.i);
      t->str = mlc_arena_strndup(p->a, L.s + L.i, j - L.i);
      L.i = j;
    } else if (is_digit((unsigned char)c) || (c == '.' && is_digit((unsigned char)L.s[L.i + 1]))) {
      if (!lex_number(&L)) break;
    } else if (c == '"' || c == '\'') {
      if (!lex_string(&L)) break;
    } else {
      if (!lex_op(&L)) break;
    }
  }
  p->toks = L.toks.data;
  p->ntoks = L.toks.len;
}

/* ---- error messages ------------------------------------------------------ */

void mlc_parse_tok_desc(const ptok *t, char *buf, size_t n) {
  switch (t->kind) {
  case TK_NAME:
  case TK_INT:
  case TK_FLOAT:
  case TK_OP: {
    int len = t->len > 40 ? 40 : t->len;
    snprintf(buf, n, "'%.*s%s'", len, t->src, t->len > 40 ? "..." : "");
    return;
  }
  case TK_STR: {
    int len = t->len > 40 ? 40 : t->len;
    snprintf(buf, n, "string %.*s%s", len, t->src, t->len > 40 ? "..." : "");
    for (char *c = buf; *c; c++)
      if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
    return;
  }
  case TK_NEWLINE: snprintf(buf, n, "end of line"); return;
  case TK_INDENT: snprintf(buf, n, "indent"); return;
  case TK_DEDENT: snprintf(buf, n, "dedent"); return;
  case TK_EOF: snprintf(buf, n, "end of file"); return;
  case TK_ERROR: snprintf(buf, n, "%s", t->str); return;
  }
  mlc_unreachable();
}

/* Append the source line of t and a caret under its column; long lines
 * show a window around the column. */
static void put_source_line(const mlc_parser *p, const ptok *t, char *out, size_t cap) {
  const char *ls = p->text;
  for (int line = 1; line < t->line && *ls; ls++)
    if (*ls == '\n') line++;
  size_t len = 0;
  while (ls[len] && ls[len] != '\n') len++;
  if (len && ls[len - 1] == '\r') len--;
  size_t col = (size_t)(t->col - 1);
  if (col > len) col = len;
  enum { WINDOW = 160 };
  size_t from = col > WINDOW / 2 ? col - WINDOW / 2 : 0;
  size_t to = from + WINDOW < len ? from + WINDOW : len;
  size_t used = strlen(out);
  char *o = out + used;
  size_t room = cap - used;
  if (room < 8) return;
  size_t k = 0;
  o[k++] = '\n';
  for (size_t i = from; i < to && k + 2 < room; i++) {
    unsigned char c = (unsigned char)ls[i];
    o[k++] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
  }
  if (k + 2 < room) o[k++] = '\n';
  for (size_t i = from; i < col && k + 2 < room; i++) o[k++] = ls[i] == '\t' ? '\t' : ' ';
  if (k + 1 < room) o[k++] = '^';
  o[k] = 0;
}

_Noreturn void mlc_parse_fail(mlc_parser *p, const ptok *t, const char *fmt, ...) {
  char *out = p->err->msg;
  size_t cap = sizeof p->err->msg;
  int n = snprintf(out, cap, "%s:%d:%d: ", p->file, t->line, t->col);
  if (n < 0) n = 0;
  if ((size_t)n < cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
  }
  put_source_line(p, t, out, cap);
  p->failed = true;
  longjmp(p->jb, 1);
}

_Noreturn void mlc_parse_expected(mlc_parser *p, const ptok *t, const char *what) {
  char desc[128];
  mlc_parse_tok_desc(t, desc, sizeof desc);
  mlc_parse_fail(p, t, "expected %s, got %s", what, desc);
}
