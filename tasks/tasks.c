/* The task registry, --shape parsing and helpers the task files share. */
#include "tasks/task_impl.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In the order of DESIGN.md section 1. */
static const mlc_task_entry *const entries[] = {
    &mlc_task_matmul,      &mlc_task_batch_matmul,     &mlc_task_dense_bias_relu,
    &mlc_task_matmul_relu, &mlc_task_conv2d_nchw,      &mlc_task_conv2d_nchwc,
    &mlc_task_depthwise_conv2d, &mlc_task_softmax,     &mlc_task_layernorm,        &mlc_task_vecadd,
    &mlc_task_window_sum,  &mlc_task_transpose,        &mlc_task_reduce_sum,
    &mlc_task_dense_int8,  &mlc_task_matmul_bf16,       &mlc_task_conv2d_nchwc_int8,
};

/* Limits on what --shape may ask for: indices are int32 in generated code,
 * and a run must fit in memory. */
#define MAX_EXTENT INT32_MAX
#define MAX_BUFFER_ELEMS ((int64_t)INT32_MAX)
#define MAX_TOTAL_BYTES ((int64_t)16 << 30)

int mlc_task_count(void) { return MLC_COUNTOF(entries); }

const mlc_task_def *mlc_task_at(int i) {
  MLC_ASSERT(i >= 0 && i < mlc_task_count());
  return &entries[i]->def;
}

const mlc_task_def *mlc_task_find(const char *name) {
  for (int i = 0; i < mlc_task_count(); i++)
    if (strcmp(entries[i]->def.name, name) == 0) return &entries[i]->def;
  return NULL;
}

static char names_buf[512];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void) {
  size_t len = 0;
  for (int i = 0; i < mlc_task_count(); i++) {
    int w = snprintf(names_buf + len, sizeof names_buf - len, "%s%s", i ? ", " : "",
                     entries[i]->def.name);
    MLC_ASSERT(w > 0 && (size_t)w < sizeof names_buf - len);
    len += (size_t)w;
  }
}

const char *mlc_task_names(void) {
  pthread_once(&names_once, names_init);
  return names_buf;
}

/* The registry entry of d, or NULL for a def made elsewhere (then every
 * number is required and no size limits beyond the per-number ones apply). */
static const mlc_task_entry *entry_of(const mlc_task_def *d) {
  for (int i = 0; i < mlc_task_count(); i++)
    if (&entries[i]->def == d) return entries[i];
  return NULL;
}

/* ---- --shape ------------------------------------------------------------ */

/* Name of number i in shape_doc ("N,C,H,W,K,R,S[,stride,pad]" -> "stride"). */
static void dim_name(const mlc_task_def *d, int i, char *buf, size_t n) {
  const char *p = d->shape_doc;
  for (int k = 0; k < i && p; k++) {
    p = strchr(p, ',');
    if (p) p++;
  }
  size_t len = 0;
  for (; p && *p && *p != ',' && len + 1 < n; p++)
    if (*p != '[' && *p != ']' && *p != ' ') buf[len++] = *p;
  buf[len] = 0;
  if (len == 0) snprintf(buf, n, "number %d", i + 1);
}

static bool count_error(const mlc_task_def *d, int min, int got, mlc_error *err) {
  if (min == d->n_dims)
    return mlc_error_set(err, "%s: --shape expects %s (%d number%s), got %d", d->name,
                         d->shape_doc, d->n_dims, d->n_dims == 1 ? "" : "s", got);
  return mlc_error_set(err, "%s: --shape expects %s (%d or %d numbers), got %d", d->name,
                       d->shape_doc, min, d->n_dims, got);
}

/* One number of the list: [start, end) after trimming blanks. */
static bool parse_number(const mlc_task_def *d, const char *text, int pos, bool zero_ok,
                         const char *start, const char *end, int64_t *out, mlc_error *err) {
  while (start < end && isspace((unsigned char)*start)) start++;
  while (end > start && isspace((unsigned char)end[-1])) end--;
  int len = (int)(end - start);
  if (len == 0)
    return mlc_error_set(err, "%s: --shape \"%s\": number %d is empty (expects %s)", d->name,
                         text, pos + 1, d->shape_doc);
  const char *digits = start + (*start == '-' || *start == '+');
  bool ok = digits < end;
  for (const char *p = digits; p < end; p++)
    if (!isdigit((unsigned char)*p)) ok = false;
  if (!ok)
    return mlc_error_set(err, "%s: --shape \"%s\": \"%.*s\" is not an integer (expects %s)",
                         d->name, text, len, start, d->shape_doc);
  char name[32];
  dim_name(d, pos, name, sizeof name);
  if (*start == '-') {
    bool zero = true;
    for (const char *p = start + 1; p < end; p++)
      if (*p != '0') zero = false;
    if (!zero)
      return mlc_error_set(err, "%s: --shape \"%s\": %s must be at least %d, got %.*s",
                           d->name, text, name, zero_ok ? 0 : 1, len, start);
  }
  char tmp[64];
  if (len >= (int)sizeof tmp) len = (int)sizeof tmp - 1; /* still too large below */
  memcpy(tmp, start, (size_t)len);
  tmp[len] = 0;
  errno = 0;
  long long v = strtoll(tmp, NULL, 10);
  if (errno == ERANGE || v > MAX_EXTENT || (int)(end - start) >= (int)sizeof tmp)
    return mlc_error_set(err, "%s: --shape \"%s\": %s = %.*s is too large (at most %d)",
                         d->name, text, name, (int)(end - start), start, MAX_EXTENT);
  *out = v < 0 ? 0 : v; /* "-0" */
  return true;
}

static bool check_sizes(const mlc_task_entry *e, const char *text, const int64_t *shape,
                        mlc_error *err) {
  const mlc_task_def *d = &e->def;
  mlc_task_buf bufs[MLC_TASK_MAX_BUFS];
  mlc_error sub;
  int n = e->buffers(shape, bufs, &sub);
  if (n < 0) return mlc_error_set(err, "%s: --shape \"%s\": %s", d->name, text, sub.msg);
  double total = 0;
  for (int i = 0; i < n; i++) {
    if (bufs[i].numel > MAX_BUFFER_ELEMS)
      return mlc_error_set(err,
                           "%s: --shape \"%s\": buffer %s would have %lld elements "
                           "(limit %lld, 2^31 - 1)",
                           d->name, text, bufs[i].name, (long long)bufs[i].numel,
                           (long long)MAX_BUFFER_ELEMS);
    total += (double)bufs[i].numel * bufs[i].bytes;
  }
  if (total > (double)MAX_TOTAL_BYTES)
    return mlc_error_set(err,
                         "%s: --shape \"%s\": buffers would need %.1f GiB in total (limit 16 GiB)",
                         d->name, text, total / (double)((int64_t)1 << 30));
  return true;
}

bool mlc_task_parse_shape(const mlc_task_def *d, const char *text, int64_t *shape,
                          mlc_error *err) {
  const mlc_task_entry *e = entry_of(d);
  int min = e && e->min_dims ? e->min_dims : d->n_dims;
  uint32_t zero_ok = e ? e->zero_ok : 0;
  int64_t v[MLC_TASK_MAX_DIMS];
  memcpy(v, d->defaults, sizeof v);
  if (text && *text) {
    int count = 1;
    for (const char *p = text; *p; p++) count += *p == ',';
    const char *start = text;
    for (int i = 0; i < count; i++) {
      const char *end = strchr(start, ',');
      if (!end) end = start + strlen(start);
      int64_t x = 0;
      bool z = i < 32 && (zero_ok & (1u << i));
      if (!parse_number(d, text, i, z, start, end, &x, err)) return false;
      if (i < MLC_TASK_MAX_DIMS) v[i] = x;
      start = end + 1;
    }
    if (count != min && count != d->n_dims) return count_error(d, min, count, err);
    for (int i = 0; i < count; i++) {
      char name[32];
      dim_name(d, i, name, sizeof name);
      if (v[i] == 0 && !(zero_ok & (1u << i)))
        return mlc_error_set(err, "%s: --shape \"%s\": %s must be at least 1, got 0", d->name,
                             text, name);
    }
  }
  if (e && !check_sizes(e, text && *text ? text : "(defaults)", v, err)) return false;
  memcpy(shape, v, sizeof(int64_t) * (size_t)d->n_dims);
  return true;
}

void mlc_task_shape_str(const mlc_task_def *d, const int64_t *shape, char *buf, size_t n) {
  size_t len = 0;
  if (n == 0) return;
  buf[0] = 0;
  for (int i = 0; i < d->n_dims; i++) {
    int w = snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (w < 0 || (size_t)w >= n - len) return; /* truncated, still NUL-terminated */
    len += (size_t)w;
  }
}

mlc_prim_func *mlc_task_build(mlc_arena *a, const mlc_task_def *d, const int64_t *shape) {
  return d->build(a, shape);
}

double mlc_task_flops(const mlc_task_def *d, const int64_t *shape) { return d->flops(shape); }

/* ---- helpers for the task files ----------------------------------------- */

int64_t mlc_task_mul(int n, const int64_t *factors) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    MLC_ASSERT(factors[i] >= 0);
    if (__builtin_mul_overflow(p, factors[i], &p)) return INT64_MAX;
  }
  return p;
}

mlc_task_buf mlc_task_buf_f32(const char *name, int n, const int64_t *dims) {
  return (mlc_task_buf){name, mlc_task_mul(n, dims), 4};
}

int64_t mlc_task_conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad) {
  int64_t padded = in + 2 * pad; /* each number is at most 2^31 - 1 */
  if (padded < k || stride < 1) return 0;
  return (padded - k) / stride + 1;
}

mlc_expr *mlc_task_f32(mlc_arena *a, double v) { return mlc_float(a, MLC_FLOAT32, v); }

mlc_expr *mlc_task_window_index(mlc_arena *a, mlc_expr *x, int64_t stride, mlc_expr *r) {
  mlc_expr *base = stride == 1 ? x : mlc_mul(a, x, mlc_int(a, stride));
  return mlc_add(a, base, r);
}

mlc_te_tensor *mlc_task_pad_nchw(mlc_arena *a, mlc_te *te, const char *name, mlc_te_tensor *x,
                                 int64_t pad) {
  const mlc_buffer *b = mlc_te_buffer(x);
  MLC_ASSERT(b->ndim == 4);
  int64_t H = b->shape[2], W = b->shape[3];
  int64_t shape[4] = {b->shape[0], b->shape[1], H + 2 * pad, W + 2 * pad};
  mlc_expr **i = mlc_te_begin(te, name, 4, shape, NULL);
  if (pad == 0) return mlc_te_end(te, mlc_te_at(te, x, i[0], i[1], i[2], i[3]));
  mlc_expr *p = mlc_int(a, pad);
  mlc_expr *inside = mlc_binary(a, MLC_EXPR_LE, p, i[2]);
  inside = mlc_binary(a, MLC_EXPR_AND, inside,
                      mlc_binary(a, MLC_EXPR_LT, i[2], mlc_int(a, H + pad)));
  inside = mlc_binary(a, MLC_EXPR_AND, inside, mlc_binary(a, MLC_EXPR_LE, p, i[3]));
  inside = mlc_binary(a, MLC_EXPR_AND, inside,
                      mlc_binary(a, MLC_EXPR_LT, i[3], mlc_int(a, W + pad)));
  mlc_expr *v = mlc_te_at(te, x, i[0], i[1], mlc_sub(a, i[2], p), mlc_sub(a, i[3], p));
  return mlc_te_end(te, mlc_if_then_else(a, inside, v, mlc_float(a, b->dtype, 0.0)));
}
