/* measure: frame encoding and blocking I/O helpers (layout in measure.h). */
#include "measure/frame_internal.h"
#include "ir/ir.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void frame_begin(mlc_str *s, mlc_frame_type type) {
  mlc_str_clear(s);
  frame_u32(s, MLC_FRAME_MAGIC);
  frame_u32(s, (uint32_t)type);
  frame_u32(s, 0);
}

void frame_u32(mlc_str *s, uint32_t v) { mlc_str_putn(s, (const char *)&v, sizeof v); }
void frame_u64(mlc_str *s, uint64_t v) { mlc_str_putn(s, (const char *)&v, sizeof v); }
void frame_f64(mlc_str *s, double v) { mlc_str_putn(s, (const char *)&v, sizeof v); }

void frame_bytes(mlc_str *s, const void *p, size_t n) {
  frame_u32(s, (uint32_t)n);
  if (n) mlc_str_putn(s, (const char *)p, n);
}

void frame_str(mlc_str *s, const char *str) { frame_bytes(s, str ? str : "", str ? strlen(str) : 0); }

void frame_args(mlc_str *s, int n, const frame_arg *args) {
  frame_u32(s, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    frame_u32(s, args[i].dtype);
    frame_u32(s, args[i].ndim);
    for (uint32_t d = 0; d < args[i].ndim; d++) frame_u64(s, (uint64_t)args[i].shape[d]);
  }
}

void frame_end(mlc_str *s) {
  MLC_ASSERT(s->len >= MLC_FRAME_HEADER);
  uint32_t len = (uint32_t)(s->len - MLC_FRAME_HEADER);
  memcpy(s->data + 8, &len, sizeof len);
}

static const void *take(frame_reader *r, size_t n) {
  if (r->bad || r->n - r->pos < n) {
    r->bad = true;
    return NULL;
  }
  const void *p = r->p + r->pos;
  r->pos += n;
  return p;
}

uint32_t frame_get_u32(frame_reader *r) {
  uint32_t v = 0;
  const void *p = take(r, sizeof v);
  if (p) memcpy(&v, p, sizeof v);
  return v;
}

uint64_t frame_get_u64(frame_reader *r) {
  uint64_t v = 0;
  const void *p = take(r, sizeof v);
  if (p) memcpy(&v, p, sizeof v);
  return v;
}

double frame_get_f64(frame_reader *r) {
  double v = 0;
  const void *p = take(r, sizeof v);
  if (p) memcpy(&v, p, sizeof v);
  return v;
}

const void *frame_get_bytes(frame_reader *r, size_t *len) {
  uint32_t n = frame_get_u32(r);
  const void *p = take(r, n);
  *len = p ? n : 0;
  return p ? p : "";
}

char *frame_get_str(frame_reader *r) {
  size_t n;
  const char *p = frame_get_bytes(r, &n);
  char *s = mlc_xmalloc(n + 1);
  memcpy(s, p, n);
  s[n] = 0;
  return s;
}

int frame_get_args(frame_reader *r, int max, frame_arg *out) {
  uint32_t n = frame_get_u32(r);
  if (n > (uint32_t)max) {
    r->bad = true;
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    out[i].dtype = frame_get_u32(r);
    out[i].ndim = frame_get_u32(r);
    if (out[i].ndim > 8 || out[i].dtype >= (uint32_t)MLC_DTYPE_COUNT) r->bad = true;
    for (uint32_t d = 0; d < out[i].ndim && !r->bad; d++) {
      out[i].shape[d] = (int64_t)frame_get_u64(r);
      if (out[i].shape[d] < 1) r->bad = true;
    }
    if (r->bad) return -1;
  }
  return (int)n;
}

const char *frame_check_header(const uint8_t hdr[MLC_FRAME_HEADER], uint32_t *type,
                               uint32_t *len) {
  uint32_t magic;
  memcpy(&magic, hdr, 4);
  memcpy(type, hdr + 4, 4);
  memcpy(len, hdr + 8, 4);
  if (magic != MLC_FRAME_MAGIC) return "bad frame magic";
  if (*type < MLC_FRAME_BUILD_REQ || *type > MLC_FRAME_ERROR) return "unknown frame type";
  if (*len > MLC_FRAME_MAX) return "frame length over the limit";
  return NULL;
}

bool frame_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == ENOTSOCK) k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= (size_t)k;
  }
  return true;
}

int frame_read_all(int fd, void *p, size_t n) {
  char *c = p;
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, c + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) return got == 0 ? 0 : -1;
    got += (size_t)k;
  }
  return 1;
}

