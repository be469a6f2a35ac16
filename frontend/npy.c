/* .npy files: float32, int64, int32, bool, uint8, int8; little-endian, C
 * order, strictly checked.
 *
 * Layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.x,
 * uint32 LE for 2.x/3.x), an ASCII Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and ending in '\n', then the raw data. */
#include "frontend/frontend.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The descr of each dtype we read and write; a dtype not listed is refused. */
static const struct {
  mlc_dtype dtype;
  const char *descr;
} descrs[] = {
    {MLC_FLOAT32, "<f4"}, {MLC_INT64, "<i8"}, {MLC_INT32, "<i4"},
    {MLC_BOOL, "|b1"},    {MLC_UINT8, "|u1"}, {MLC_INT8, "|i1"},
};
#define ACCEPTED "'<f4' float32, '<i8' int64, '<i4' int32, '|b1' bool, '|u1' uint8, '|i1' int8"

static const char *descr_of(mlc_dtype t) {
  for (int i = 0; i < MLC_COUNTOF(descrs); i++)
    if (descrs[i].dtype == t) return descrs[i].descr;
  return NULL;
}

typedef struct hdr_parser {
  const char *p, *end;
  const char *name;
  mlc_error *err;
} hdr_parser;

static void skip_ws(hdr_parser *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\n' || *h->p == '\t')) h->p++;
}

static bool hdr_fail(hdr_parser *h, const char *what) {
  return mlc_error_set(h->err, "%s: bad .npy header: %s", h->name, what);
}

static bool eat(hdr_parser *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted Python string (no escapes needed for the keys and dtypes). */
static bool read_str(hdr_parser *h, char *buf, size_t n) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return hdr_fail(h, "expected a string");
  char q = *h->p++;
  size_t k = 0;
  while (h->p < h->end && *h->p != q) {
    if (k + 1 >= n) return hdr_fail(h, "string too long");
    buf[k++] = *h->p++;
  }
  if (h->p >= h->end) return hdr_fail(h, "unterminated string");
  h->p++;
  buf[k] = 0;
  return true;
}

static bool read_shape(hdr_parser *h, mlc_gtype *t) {
  if (!eat(h, '(')) return hdr_fail(h, "shape is not a tuple");
  t->ndim = 0;
  for (;;) {
    skip_ws(h);
    if (eat(h, ')')) return true;
    if (h->p >= h->end || !isdigit((unsigned char)*h->p)) return hdr_fail(h, "bad shape entry");
    if (t->ndim == MLC_GRAPH_MAX_DIMS) return hdr_fail(h, "too many dimensions");
    int64_t v = 0;
    while (h->p < h->end && isdigit((unsigned char)*h->p)) {
      if (v > (INT64_C(1) << 40)) return hdr_fail(h, "dimension too large");
      v = v * 10 + (*h->p++ - '0');
    }
    t->shape[t->ndim++] = v;
    if (!eat(h, ',')) {
      if (!eat(h, ')')) return hdr_fail(h, "expected ',' or ')' in shape");
      return true;
    }
  }
}

static bool read_value(hdr_parser *h, const char *key, mlc_gtype *t, bool seen[3]) {
  char buf[64];
  if (strcmp(key, "descr") == 0) {
    if (!read_str(h, buf, sizeof buf)) return false;
    for (int i = 0; i < MLC_COUNTOF(descrs); i++)
      if (strcmp(buf, descrs[i].descr) == 0) {
        t->dtype = descrs[i].dtype;
        seen[0] = true;
        return true;
      }
    return mlc_error_set(h->err, "%s: dtype '%s' is not supported (accepted: " ACCEPTED
                                 "; little-endian)", h->name, buf);
  }
  if (strcmp(key, "fortran_order") == 0) {
    skip_ws(h);
    if ((size_t)(h->end - h->p) >= 5 && memcmp(h->p, "False", 5) == 0) h->p += 5;
    else if ((size_t)(h->end - h->p) >= 4 && memcmp(h->p, "True", 4) == 0)
      return mlc_error_set(h->err, "%s: Fortran order is not supported (need C order)", h->name);
    else return hdr_fail(h, "fortran_order is not True/False");
    seen[1] = true;
    return true;
  }
  if (strcmp(key, "shape") == 0) {
    if (!read_shape(h, t)) return false;
    seen[2] = true;
    return true;
  }
  snprintf(buf, sizeof buf, "unknown key '%.40s'", key);
  return hdr_fail(h, buf);
}

static bool parse_header(hdr_parser *h, mlc_gtype *t) {
  bool seen[3] = {false, false, false};
  if (!eat(h, '{')) return hdr_fail(h, "expected '{'");
  while (!eat(h, '}')) {
    char key[64];
    if (!read_str(h, key, sizeof key)) return false;
    if (!eat(h, ':')) return hdr_fail(h, "expected ':'");
    if (!read_value(h, key, t, seen)) return false;
    if (!eat(h, ',')) {
      if (!eat(h, '}')) return hdr_fail(h, "expected ',' or '}'");
      break;
    }
  }
  if (!seen[0] || !seen[1] || !seen[2])
    return hdr_fail(h, "needs 'descr', 'fortran_order' and 'shape'");
  skip_ws(h);
  if (h->p != h->end) return hdr_fail(h, "text after the dict");
  return true;
}

/* A bool array must hold 0 or 1 in every byte: anything else would be a
 * value C's bool cannot hold. */
static bool check_bools(const char *name, const mlc_gtype *t, const unsigned char *d, size_t n,
                        mlc_error *err) {
  for (size_t i = 0; i < n; i++)
    if (d[i] > 1) {
      char at[160];
      mlc_gtype u = *t; /* the element's index, for the message (extents > 0 here) */
      size_t k = i;
      for (int a = t->ndim - 1; a >= 0; a--) {
        u.shape[a] = (int64_t)(k % (size_t)t->shape[a]);
        k /= (size_t)t->shape[a];
      }
      mlc_gtype_str(&u, at, sizeof at);
      return mlc_error_set(err, "%s: bool element %zu at %s is %u, not 0 or 1", name, i, at, d[i]);
    }
  return true;
}

void *mlc_npy_parse(const char *name, const void *bytes, size_t len, mlc_gtype *t,
                    mlc_error *err) {
  const unsigned char *b = bytes;
  memset(t, 0, sizeof *t);
  t->dtype = MLC_FLOAT32;
  if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
    return mlc_error_set(err, "%s: not a .npy file (bad magic)", name), NULL;
  int major = b[6];
  size_t hlen, off;
  if (major == 1) hlen = (size_t)b[8] | (size_t)b[9] << 8, off = 10;
  else if (major == 2 || major == 3) {
    if (len < 12) return mlc_error_set(err, "%s: truncated header", name), NULL;
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    off = 12;
  } else return mlc_error_set(err, "%s: unsupported .npy version %d.%d", name, major, b[7]), NULL;
  if (hlen > len - off) return mlc_error_set(err, "%s: truncated header", name), NULL;
  hdr_parser h = {(const char *)b + off, (const char *)b + off + hlen, name, err};
  if (!parse_header(&h, t)) return NULL;
  int esize = mlc_dtype_bytes(t->dtype);
  if (mlc_tensor_numel_checked("the array", t->shape, t->ndim, esize, err) < 0)
    return mlc_error_prefix(err, "%s: bad .npy header", name), NULL;
  size_t have = len - off - hlen, want = (size_t)mlc_gtype_numel(t) * (size_t)esize;
  if (have < want)
    return mlc_error_set(err, "%s: truncated data: %zu bytes for %zu", name, have, want), NULL;
  if (have > want)
    return mlc_error_set(err, "%s: %zu trailing bytes after the data", name, have - want), NULL;
  if (t->dtype == MLC_BOOL && !check_bools(name, t, b + off + hlen, want, err)) return NULL;
  void *data = mlc_malloc(want ? want : 8); /* sized by the file: an error, not an abort */
  if (!data) return mlc_error_set(err, "%s: out of memory for %zu bytes", name, want), NULL;
  memcpy(data, b + off + hlen, want); /* little-endian hosts only (x86, arm64) */
  return data;
}

void *mlc_npy_read(const char *path, mlc_gtype *t, mlc_error *err) {
  size_t len;
  char *bytes = mlc_read_file(path, &len, err);
  if (!bytes) return NULL;
  void *data = mlc_npy_parse(path, bytes, len, t, err);
  mlc_free(bytes);
  return data;
}

bool mlc_npy_write(const char *path, const mlc_gtype *t, const void *data, mlc_error *err) {
  const char *descr = descr_of(t->dtype);
  if (!descr)
    return mlc_error_set(err, "%s: cannot write %s to .npy (writes %s)", path,
                         mlc_dtype_name(t->dtype), ACCEPTED);
  mlc_str s = {0};
  char shape[256];
  mlc_gtype_str(t, shape, sizeof shape);
  mlc_str_puts(&s, "\x93NUMPY\x01");
  mlc_str_putn(&s, "\0\0\0", 3); /* minor 0, header length patched below */
  mlc_str_printf(&s, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  while ((s.len + 1) % 64) mlc_str_putc(&s, ' ');
  mlc_str_putc(&s, '\n');
  size_t hlen = s.len - 10;
  s.data[8] = (char)(hlen & 0xff);
  s.data[9] = (char)(hlen >> 8);
  mlc_str_putn(&s, data, (size_t)mlc_gtype_numel(t) * (size_t)mlc_dtype_bytes(t->dtype));
  bool ok = mlc_write_file(path, s.data, s.len, err);
  mlc_str_free(&s);
  return ok;
}
