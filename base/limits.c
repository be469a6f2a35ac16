/* Checked products and the size limit on tensors that input asks for. */
#include "base/base.h"

#include <stdio.h>

bool mlc_prod_overflow(const int64_t *v, int n, int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (mlc_mul_overflow(p, v[i], &p)) return true;
  *out = p;
  return false;
}

static int64_t max_elems = MLC_MAX_TENSOR_ELEMS, max_bytes = MLC_MAX_TENSOR_BYTES;

void mlc_set_tensor_limits(int64_t elems, int64_t bytes) {
  max_elems = elems > 0 && elems < MLC_MAX_TENSOR_ELEMS ? elems : MLC_MAX_TENSOR_ELEMS;
  max_bytes = bytes > 0 && bytes < MLC_MAX_TENSOR_BYTES ? bytes : MLC_MAX_TENSOR_BYTES;
}

static void shape_text(char *buf, size_t cap, const int64_t *shape, int ndim) {
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < ndim && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

int64_t mlc_tensor_numel_checked(const char *what, const int64_t *shape, int ndim,
                                 int elem_bytes, mlc_error *err) {
  char text[256];
  int64_t n = 1, bytes;
  bool over = false;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      shape_text(text, sizeof text, shape, ndim);
      mlc_error_set(err, "%s has shape %s: extent %d is negative", what, text, i);
      return -1;
    }
    if (shape[i] == 0) return 0; /* empty, however large the other extents */
  }
  /* Past the limit already means refused; stop multiplying before int64 can wrap. */
  for (int i = 0; i < ndim && !over; i++)
    over = mlc_mul_overflow(n, shape[i], &n) || n > max_elems;
  if (!over && n > 0 && elem_bytes > 0)
    over = mlc_mul_overflow(n, elem_bytes, &bytes) || bytes > max_bytes;
  if (over) {
    shape_text(text, sizeof text, shape, ndim);
    if (max_elems == MLC_MAX_TENSOR_ELEMS && max_bytes == MLC_MAX_TENSOR_BYTES)
      mlc_error_set(err, "%s has shape %s: over the limit of 2^31 elements and 8 GiB that input "
                         "may allocate", what, text);
    else
      mlc_error_set(err, "%s has shape %s: over the limit of %lld elements and %lld bytes set "
                         "for this process", what, text, (long long)max_elems, (long long)max_bytes);
    return -1;
  }
  return n;
}
