/* Graph IR basics: the op table, types and shape inference, modules. */
#include "graph/graph_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- op table ------------------------------------------------------------ */

typedef struct op_info {
  const char *name, *script, *keys;
  int min_in, max_in;
  mlc_gop_class cls;
} op_info;

static const op_info ops[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) \
  {name, script, keys, min_in, max_in, MLC_GOP_##cls},
#include "graph/ops.def"
};
_Static_assert(sizeof(ops) / sizeof(ops[0]) == MLC_GOP_COUNT, "op table out of date");

const char *mlc_gop_name(mlc_gop op) { return ops[op].name; }
const char *mlc_gop_script(mlc_gop op) { return ops[op].script; }
const char *mlc_gop_keys(mlc_gop op) { return ops[op].keys; }
int mlc_gop_n_inputs(mlc_gop op) { return ops[op].min_in; }
int mlc_gop_max_inputs(mlc_gop op) { return ops[op].max_in; }
mlc_gop_class mlc_gop_class_of(mlc_gop op) { return ops[op].cls; }

bool mlc_gop_reads_indices(mlc_gop op) {
  return op == MLC_GOP_GATHER || op == MLC_GOP_GATHER_ELEMENTS;
}

int mlc_gop_window_dims(mlc_gop op) {
  if (op == MLC_GOP_CONV2D || op == MLC_GOP_CONV_TRANSPOSE2D || op == MLC_GOP_MAX_POOL2D ||
      op == MLC_GOP_AVG_POOL2D || op == MLC_GOP_IM2COL)
    return 2;
  if (op == MLC_GOP_CONV3D || op == MLC_GOP_CONV_TRANSPOSE3D || op == MLC_GOP_MAX_POOL3D ||
      op == MLC_GOP_AVG_POOL3D)
    return 3;
  return 0;
}

bool mlc_gop_from_name(const char *name, mlc_gop *out) {
  for (int i = 0; i < MLC_GOP_COUNT; i++)
    if (strcmp(ops[i].name, name) == 0) {
      *out = (mlc_gop)i;
      return true;
    }
  return false;
}

const char *mlc_gop_names(void) {
  static char buf[2048];
  if (!buf[0]) {
    size_t n = 0;
    for (int i = 0; i < MLC_GOP_COUNT; i++)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", ops[i].name);
  }
  return buf;
}

int mlc_gop_axis(int64_t axis, int ndim) {
  if (axis < 0) axis += ndim;
  return axis >= 0 && axis < ndim ? (int)axis : -1;
}

bool mlc_gop_reduced_axes(mlc_gop op, const mlc_gattrs *at, int ndim, bool *red,
                          mlc_error *err) {
  for (int d = 0; d < ndim; d++) red[d] = at->n_ints == 0;
  for (int i = 0; i < at->n_ints; i++) {
    int ax = mlc_gop_axis(at->ints[i], ndim);
    if (ax < 0 || (red[ax] && at->n_ints))
      return mlc_error_set(err, "%s: axis %lld is out of range or repeated for a %d-d operand 0",
                           mlc_gop_name(op), (long long)at->ints[i], ndim);
    red[ax] = true;
  }
  return true;
}

bool mlc_gop_slice_axis(const mlc_gattrs *at, const mlc_gtype *x, int d, int64_t *start,
                        int64_t *step, int64_t *count) {
  int64_t n = x->shape[d], b = 0, e = n, s = 1;
  for (int i = 0; i < at->n_ints; i++) {
    if (mlc_gop_axis(at->ints[i], x->ndim) != d) continue;
    b = at->starts[i], e = at->ends[i], s = at->steps[i];
    if (s == 0) return false;
    if (b < 0) b += n;
    if (e < 0) e += n;
    int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? n : n - 1;
    b = b < lo ? lo : b > hi ? hi : b;
    e = e < lo ? lo : e > hi ? hi : e;
  }
  int64_t span = s > 0 ? e - b : b - e, as = s > 0 ? s : -s;
  *start = b, *step = s, *count = span > 0 ? (span + as - 1) / as : 0;
  return true;
}

bool mlc_gop_arity_ok(mlc_gop op, int n) {
  return n >= ops[op].min_in && (ops[op].max_in < 0 || n <= ops[op].max_in) &&
         n <= MLC_GRAPH_MAX_ARGS;
}

bool mlc_gop_arity_error(mlc_gop op, int n, mlc_error *err) {
  const op_info *o = &ops[op];
  if (o->min_in == o->max_in)
    return mlc_error_set(err, "%s takes %d inputs, got %d", o->name, o->min_in, n);
  if (o->max_in < 0)
    return mlc_error_set(err, "%s takes %d to %d inputs, got %d", o->name, o->min_in,
                         MLC_GRAPH_MAX_ARGS, n);
  return mlc_error_set(err, "%s takes %d to %d inputs, got %d", o->name, o->min_in, o->max_in, n);
}

/* ---- types ------------------------------------------------------------------ */

/* ---- attributes ------------------------------------------------------------- */

const mlc_gattr mlc_gattr_table[] = {
#define MLC_GATTR(field, key, kind, def) {key, MLC_GATTR_##kind, offsetof(mlc_gattrs, field)},
#define MLC_GATTR_ALIAS(key, field, kind) {key, MLC_GATTR_##kind, offsetof(mlc_gattrs, field)},
#include "graph/attrs.def"
};
const int mlc_gattr_count = (int)(sizeof mlc_gattr_table / sizeof mlc_gattr_table[0]);

/* An alias's kind must fit its field. */
#define MLC_GATTR_ALIAS(key, field, kind)                                                      \
  _Static_assert(sizeof(((mlc_gattrs *)0)->field) == sizeof(MLC_GATTR_TYPE_##kind), key);
#include "graph/attrs.def"

const mlc_gattr *mlc_gattr_find(const char *key) {
  for (int i = 0; i < mlc_gattr_count; i++)
    if (strcmp(mlc_gattr_table[i].key, key) == 0) return &mlc_gattr_table[i];
  return NULL;
}

bool mlc_gop_key_next(const char **p, char *key, char *def, size_t n) {
  const char *s = *p;
  while (*s == ' ') s++;
  if (!*s) return false;
  size_t k = strcspn(s, " ="), d = 0;
  snprintf(key, n, "%.*s", (int)k, s);
  s += k;
  if (*s == '=') {
    d = strcspn(++s, " ");
    snprintf(def, n, "%.*s", (int)d, s);
    s += d;
  } else {
    def[0] = '\0';
  }
  *p = s;
  return true;
}

bool mlc_gop_has_key(mlc_gop op, const char *key) {
  const char *p = ops[op].keys;
  char k[32], def[32];
  while (mlc_gop_key_next(&p, k, def, sizeof k))
    if (strcmp(k, key) == 0) return true;
  return false;
}

void mlc_gattrs_default(mlc_gattrs *a) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < MLC_GRAPH_MAX_WINDOW; i++) a->kernel[i] = 2, a->strides[i] = a->dilations[i] = 1;
  a->groups = 1;
#define MLC_GATTR(field, key, kind, def) a->field = def;
#include "graph/attrs.def"
}

/* Sets attribute g of a from the text of an ops.def default. */
static void set_default(mlc_gattrs *a, const mlc_gattr *g, const char *text) {
  switch (g->kind) {
  case MLC_GATTR_NUMBER:
  case MLC_GATTR_POSITIVE: MLC_GATTR_REF(a, g, double) = strtod(text, NULL); return;
  case MLC_GATTR_AXIS:
  case MLC_GATTR_INT: MLC_GATTR_REF(a, g, int64_t) = strtoll(text, NULL, 10); return;
  case MLC_GATTR_BOOL: MLC_GATTR_REF(a, g, bool) = strcmp(text, "true") == 0; return;
  case MLC_GATTR_DTYPE: MLC_ASSERT(mlc_dtype_from_name(text, &MLC_GATTR_REF(a, g, mlc_dtype))); return;
  }
  mlc_unreachable();
}

void mlc_gattrs_init(mlc_gop op, mlc_gattrs *a) {
  mlc_gattrs_default(a);
  const char *p = ops[op].keys;
  char key[32], def[32];
  while (mlc_gop_key_next(&p, key, def, sizeof key)) {
    if (!def[0]) continue;
    const mlc_gattr *g = mlc_gattr_find(key);
    MLC_ASSERT(g);
    set_default(a, g, def);
  }
}

int64_t mlc_gtype_numel(const mlc_gtype *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0 || mlc_mul_overflow(n, t->shape[i], &n)) return -1;
  return n;
}

bool mlc_graph_is_quantized(const mlc_gmodule *m) {
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++) {
      const mlc_gbinding *b = &m->funcs[i]->bindings[j];
      if (b->kind == MLC_GCALL_OP && b->op == MLC_GOP_QUANTIZE) return true;
    }
  return false;
}

double mlc_gdata_get(mlc_dtype t, const void *data, int64_t k) {
  switch (t) {
  case MLC_FLOAT32: return ((const float *)data)[k];
  case MLC_INT64: return (double)((const int64_t *)data)[k];
  case MLC_INT32: return ((const int32_t *)data)[k];
  case MLC_BOOL: return ((const uint8_t *)data)[k] != 0;
  case MLC_UINT8: return ((const uint8_t *)data)[k];
  case MLC_INT8: return ((const int8_t *)data)[k];
  default: mlc_unreachable();
  }
}

int64_t mlc_gtype_bytes(const mlc_gtype *t) {
  int64_t n = mlc_gtype_numel(t), bytes;
  if (n < 0 || mlc_mul_overflow(n, mlc_dtype_bytes(t->dtype), &bytes)) return -1;
  return bytes;
}

bool mlc_gshape_equal(const mlc_gtype *x, const mlc_gtype *y) {
  if (x->ndim != y->ndim) return false;
  for (int i = 0; i < x->ndim; i++)
    if (x->shape[i] != y->shape[i]) return false;
  return true;
}

bool mlc_gtype_equal(const mlc_gtype *x, const mlc_gtype *y) {
  return x->dtype == y->dtype && mlc_gshape_equal(x, y);
}

void mlc_gtype_str(const mlc_gtype *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < t->ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (k < n) snprintf(buf + k, n - k, t->ndim == 1 ? ",)" : ")");
}

static bool fail_shape(mlc_error *err, mlc_gop op, int i, const mlc_gtype *t, const char *want) {
  char s[128];
  mlc_gtype_str(t, s, sizeof s);
  return mlc_error_set(err, "%s: operand %d has shape %s, expected %s", mlc_gop_name(op), i, s,
                       want);
}

/* numpy broadcasting of n shapes, right-aligned. */
static bool broadcast(mlc_gop op, int n, const mlc_gtype *args, mlc_gtype *out, mlc_error *err) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (args[i].ndim > nd) nd = args[i].ndim;
  out->ndim = nd;
  for (int d = 0; d < nd; d++) {
    int64_t e = 1;
    for (int i = 0; i < n; i++) {
      int k = d - (nd - args[i].ndim);
      if (k < 0 || args[i].shape[k] == 1) continue;
      if (e != 1 && e != args[i].shape[k]) {
        char s0[128], s1[128];
        mlc_gtype_str(&args[0], s0, sizeof s0);
        mlc_gtype_str(&args[i], s1, sizeof s1);
        return mlc_error_set(err, "%s: shapes %s and %s do not broadcast", mlc_gop_name(op), s0,
                             s1);
      }
      e = args[i].shape[k];
    }
    out->shape[d] = e;
  }
  return true;
}

/* The output extent of a window along one axis (graph.h, mlc_gattrs). */
static int64_t window_out(int64_t in, int64_t k, int64_t dil, int64_t stride, int64_t pb,
                          int64_t pe, bool ceil_mode) {
  int64_t span = in + pb + pe - (dil * (k - 1) + 1);
  if (span < 0) return 0;
  if (!ceil_mode) return span / stride + 1;
  int64_t o = (span + stride - 1) / stride + 1;
  if ((o - 1) * stride >= in + pb) o--;
  return o;
}

/* x [..., M, K] @ w [..., K, N] with numpy broadcasting of the leading
 * (batch) dims. */
static bool infer_matmul(const mlc_gtype *a, mlc_gtype *out, mlc_error *err) {
  const mlc_gtype *x = &a[0], *w = &a[1];
  if (x->ndim < 2) return fail_shape(err, MLC_GOP_MATMUL, 0, x, "[..., M, K] (at least 2 dims)");
  if (w->ndim < 2)
    return fail_shape(err, MLC_GOP_MATMUL, 1, w, "[K, N] after x [M, K] (or [..., K, N])");
  if (x->shape[x->ndim - 1] != w->shape[w->ndim - 2])
    return fail_shape(err, MLC_GOP_MATMUL, 1, w, "inner dimension equal to operand 0's last");
  mlc_gtype bx = *x, bw = *w;
  bx.ndim -= 2, bw.ndim -= 2;
  if (!broadcast(MLC_GOP_MATMUL, 2, (mlc_gtype[]){bx, bw}, out, err))
    return fail_shape(err, MLC_GOP_MATMUL, 1, w, "batch dimensions that broadcast with operand 0's");
  out->shape[out->ndim++] = x->shape[x->ndim - 2];
  out->shape[out->ndim++] = w->shape[w->ndim - 1];
  return true;
}

static bool check_window_attrs(mlc_gop op, int nsp, const mlc_gattrs *at, mlc_error *err) {
  const char *name = mlc_gop_name(op);
  for (int i = 0; i < nsp; i++) {
    if (at->strides[i] < 1 || at->dilations[i] < 1)
      return mlc_error_set(err, "%s: strides and dilations must be >= 1", name);
    if (at->output_padding[i] < 0 ||
        (at->output_padding[i] && at->output_padding[i] >= at->strides[i] &&
         at->output_padding[i] >= at->dilations[i]))
      return mlc_error_set(err, "%s: output_padding must be >= 0 and below the stride or dilation",
                           name);
  }
  for (int i = 0; i < 2 * nsp; i++)
    if (at->pads[i] < 0) return mlc_error_set(err, "%s: pads must be >= 0", name);
  /* Bounded so that the output size arithmetic (sums of products of one of
   * these and an extent of at most 2^31) stays far from int64 overflow. */
  const int64_t big = INT64_C(1) << 24;
  for (int i = 0; i < nsp; i++)
    if (at->strides[i] > big || at->dilations[i] > big || at->output_padding[i] > big ||
        at->kernel[i] > big)
      return mlc_error_set(err,
                           "%s: strides, dilations, kernel and output_padding must be at most 2^24",
                           name);
  for (int i = 0; i < 2 * nsp; i++)
    if (at->pads[i] > big) return mlc_error_set(err, "%s: pads must be at most 2^24", name);
  if (at->groups > big) return mlc_error_set(err, "%s: groups must be at most 2^24", name);
  if (at->groups < 1) return mlc_error_set(err, "%s: groups must be >= 1", name);
  return true;
}

/* conv2d: w [K, C / groups, R, S], bias [K]; conv3d: w [K, C / groups,
 * T, R, S]; the transposed ones [C, K / groups, ...]. */
static bool infer_conv_weight(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                              int64_t *k_out, mlc_error *err) {
  const mlc_gtype *x = &a[0], *w = &a[1];
  bool d3 = op == MLC_GOP_CONV3D || op == MLC_GOP_CONV_TRANSPOSE3D;
  /* conv2d over NCHWc [N, C/c, H, W, c] (blocked_input): c must be the
   * packed weight's input block */
  int64_t xb = !d3 && x->ndim == 5 ? x->shape[4] : 0;
  int64_t g = at->groups, C = xb ? x->shape[1] * xb : x->shape[1];
  if (C % g) return fail_shape(err, op, 0, x, "channels divisible by groups");
  if (xb && w->ndim != 6)
    return fail_shape(err, op, 1, w, "a packed weight (6 dims) for an NCHWc operand 0");
  if (op == MLC_GOP_CONV2D && w->ndim == 6 && g > 1) { /* depthwise: [C/k, 1, R, S, 1, k] */
    if (g != C || w->shape[1] != 1 || w->shape[4] != 1 || w->shape[0] * w->shape[5] != C ||
        (xb && xb != w->shape[5]))
      return fail_shape(err, op, 1, w,
                        "[C/k, 1, R, S, 1, k] with groups C (C: the input's channels, k: its block)");
    *k_out = C;
  } else if (op == MLC_GOP_CONV2D && w->ndim == 6) { /* packed: [K/k, C/c, R, S, c, k] */
    if (w->shape[1] * w->shape[4] != C || (xb && xb != w->shape[4]))
      return fail_shape(err, op, 1, w,
                        "[K/k, C/c, R, S, c, k] without groups (C: the input's channels, c: its block)");
    *k_out = w->shape[0] * w->shape[5];
  } else if (op == MLC_GOP_CONV2D || op == MLC_GOP_CONV3D) {
    if (w->ndim != x->ndim || w->shape[1] * g != C || w->shape[0] % g)
      return fail_shape(err, op, 1, w,
                        d3 ? "[K, C / groups, T, R, S] with K divisible by groups (C: the input's channels)"
                           : "[K, C / groups, R, S] with K divisible by groups (C: the input's channels)");
    *k_out = w->shape[0];
  } else {
    if (w->ndim != x->ndim || w->shape[0] != C)
      return fail_shape(err, op, 1, w,
                        d3 ? "[C, K / groups, T, R, S] (C: the input's channels)"
                           : "[C, K / groups, R, S] (C: the input's channels)");
    *k_out = w->shape[1] * g;
  }
  if (n == 3 && (a[2].ndim != 1 || a[2].shape[0] != *k_out))
    return fail_shape(err, op, 2, &a[2], "[K] (one bias per output channel)");
  return true;
}

/* conv2d and max_pool2d also read x in NCHWc, [N, C/c, H, W, c] (the
 * layout pass's blocked values): a conv2d over a packed weight, a max pool
 * per channel block. */
static bool blocked_input(mlc_gop op, const mlc_gtype *x) {
  return (op == MLC_GOP_CONV2D || op == MLC_GOP_MAX_POOL2D) && x->ndim == 5;
}

static bool infer_window(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  const mlc_gtype *x = &a[0];
  int nsp = mlc_gop_window_dims(op);
  bool blocked = blocked_input(op, x);
  if (x->ndim != 2 + nsp && !blocked) return fail_shape(err, op, 0, x, nsp == 3 ? "5 dims (NCDHW)" : "4 dims (NCHW)");
  if (!check_window_attrs(op, nsp, at, err)) return false;
  int64_t k[MLC_GRAPH_MAX_WINDOW];
  *out = *x;
  bool avg = op == MLC_GOP_AVG_POOL2D || op == MLC_GOP_AVG_POOL3D;
  bool pool = avg || op == MLC_GOP_MAX_POOL2D || op == MLC_GOP_MAX_POOL3D;
  bool transposed = op == MLC_GOP_CONV_TRANSPOSE2D || op == MLC_GOP_CONV_TRANSPOSE3D;
  for (int i = 0; avg && i < nsp; i++)
    if (at->dilations[i] != 1)
      return mlc_error_set(err, "%s: dilations are not supported", mlc_gop_name(op));
  if (pool) {
    for (int i = 0; i < nsp; i++)
      if (at->kernel[i] < 1 || at->pads[i] >= at->kernel[i] || at->pads[i + nsp] >= at->kernel[i])
        return mlc_error_set(err, "%s: the window must be >= 1 and larger than the padding",
                             mlc_gop_name(op));
    memcpy(k, at->kernel, sizeof k);
  } else {
    if (!infer_conv_weight(op, at, n, a, &out->shape[1], err)) return false;
    memcpy(k, a[1].shape + 2, sizeof(int64_t) * (size_t)nsp);
  }
  bool fits = true;
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->shape[2 + i], d = at->dilations[i], s = at->strides[i];
    int64_t pb = at->pads[i], pe = at->pads[i + nsp];
    if (transposed)
      out->shape[2 + i] = s * (in - 1) + at->output_padding[i] + d * (k[i] - 1) + 1 - pb - pe;
    else
      out->shape[2 + i] = window_out(in, k[i], d, s, pb, pe, pool && at->ceil_mode);
    fits &= out->shape[2 + i] >= 1;
  }
  if (!fits) return fail_shape(err, op, 0, x, "a spatial size that fits the window");
  if (op == MLC_GOP_CONV2D && a[1].ndim == 6) { /* packed weight: the result in NCHWc */
    out->ndim = 5;
    out->shape[4] = a[1].shape[5];
    out->shape[1] /= out->shape[4];
  }
  return true;
}

static bool infer_reshape(const mlc_gattrs *at, const mlc_gtype *x, mlc_gtype *out,
                          mlc_error *err) {
  int64_t known = 1, n = mlc_gtype_numel(x);
  int infer_at = -1;
  if (at->n_ints < 1) return mlc_error_set(err, "reshape: needs a \"shape\" attribute");
  out->ndim = at->n_ints;
  for (int i = 0; i < at->n_ints; i++) {
    int64_t d = at->ints[i];
    if (d == -1 && infer_at < 0) infer_at = i;
    else if (d < 1 || d > n) return mlc_error_set(err, "reshape: bad extent %lld", (long long)d);
    else if ((known *= d) > n)
      return fail_shape(err, MLC_GOP_RESHAPE, 0, x, "as many elements as the new shape");
    out->shape[i] = d;
  }
  if (infer_at >= 0 && n % known == 0) out->shape[infer_at] = n / known;
  if (mlc_gtype_numel(out) != n || (infer_at >= 0 && n % known))
    return fail_shape(err, MLC_GOP_RESHAPE, 0, x, "as many elements as the new shape");
  return true;
}

static bool infer_transpose(const mlc_gattrs *at, const mlc_gtype *x, mlc_gtype *out,
                            mlc_error *err) {
  bool seen[MLC_GRAPH_MAX_DIMS] = {0};
  if (at->n_ints && at->n_ints != x->ndim)
    return mlc_error_set(err, "transpose: %d axes for a %d-d tensor", at->n_ints, x->ndim);
  out->ndim = x->ndim;
  for (int i = 0; i < x->ndim; i++) {
    int64_t ax = at->n_ints ? at->ints[i] : x->ndim - 1 - i;
    if (ax < 0 || ax >= x->ndim || seen[ax])
      return mlc_error_set(err, "transpose: axes are not a permutation of 0..%d", x->ndim - 1);
    seen[ax] = true;
    out->shape[i] = x->shape[ax];
  }
  return true;
}

/* pad: every extent plus its pads, at least 1. */
static bool infer_pad(const mlc_gattrs *at, const mlc_gtype *x, mlc_gtype *out, mlc_error *err) {
  if (at->n_pads != x->ndim)
    return mlc_error_set(err, "pad: %d pads per side for a %d-d operand 0 (one per axis)",
                         at->n_pads, x->ndim);
  if (isnan(at->pad_value))
    return mlc_error_set(err, "pad: pad_value must be a number");
  *out = *x;
  for (int d = 0; d < x->ndim; d++) {
    int64_t b = at->pad_before[d], e = at->pad_after[d];
    if (b < -x->shape[d] || e < -x->shape[d] || b > (INT64_C(1) << 40) || e > (INT64_C(1) << 40) ||
        (out->shape[d] = x->shape[d] + b + e) < 1)
      return fail_shape(err, MLC_GOP_PAD, 0, x, "pads that leave at least one element per axis");
  }
  return true;
}

/* gather: data.shape[:axis] + indices.shape + data.shape[axis + 1:]. */
static bool infer_gather(const mlc_gattrs *at, const mlc_gtype *a, mlc_gtype *out,
                         mlc_error *err) {
  int ax = mlc_gop_axis(at->axis, a[0].ndim);
  if (ax < 0)
    return mlc_error_set(err, "gather: axis %lld is out of range for a %d-d operand 0",
                         (long long)at->axis, a[0].ndim);
  if (a[0].ndim - 1 + a[1].ndim > MLC_GRAPH_MAX_DIMS)
    return fail_shape(err, MLC_GOP_GATHER, 1, &a[1], "indices giving a result of at most 8 dims");
  for (int d = 0; d < ax; d++) out->shape[out->ndim++] = a[0].shape[d];
  for (int d = 0; d < a[1].ndim; d++) out->shape[out->ndim++] = a[1].shape[d];
  for (int d = ax + 1; d < a[0].ndim; d++) out->shape[out->ndim++] = a[0].shape[d];
  return true;
}

/* flatten: [prod(shape[:axis]), prod(shape[axis:])], axis in [-rank, rank]. */
static bool infer_flatten(const mlc_gattrs *at, const mlc_gtype *x, mlc_gtype *out,
                          mlc_error *err) {
  int64_t ax = at->axis < 0 ? at->axis + x->ndim : at->axis;
  if (ax < 0 || ax > x->ndim)
    return mlc_error_set(err, "flatten: axis %lld is out of range for a %d-d operand 0",
                         (long long)at->axis, x->ndim);
  out->ndim = 2;
  out->shape[0] = out->shape[1] = 1;
  for (int d = 0; d < x->ndim; d++)
    if (mlc_mul_overflow(out->shape[d >= ax], x->shape[d], &out->shape[d >= ax]))
      return fail_shape(err, MLC_GOP_FLATTEN, 0, x, "extents whose products fit in 64 bits");
  return true;
}

/* dense: w [N, K], or packed by the layout pass (layout.c:
 * pack_dense_weight) as [N/n, K, n]: n columns of one k contiguous. */
static bool infer_dense(int n, const mlc_gtype *a, mlc_gtype *out, mlc_error *err) {
  const mlc_gtype *w = &a[1];
  bool packed = w->ndim == 3;
  if (a[0].ndim != 2) return fail_shape(err, MLC_GOP_DENSE, 0, &a[0], "[M, K]");
  if ((w->ndim != 2 && !packed) || w->shape[1] != a[0].shape[1])
    return fail_shape(err, MLC_GOP_DENSE, 1, w,
                      "[N, K] (or packed [N/n, K, n]) with K equal to operand 0's last");
  int64_t N = packed ? w->shape[0] * w->shape[2] : w->shape[0];
  if (n == 3 && (a[2].ndim != 1 || a[2].shape[0] != N))
    return fail_shape(err, MLC_GOP_DENSE, 2, &a[2], "[N] (one bias per output column)");
  *out = a[0];
  out->shape[1] = N;
  return true;
}

/* qdense: x [M, K], w packed [N/16, K/4, 16, 4] -> [M, N]. */
static bool shape_qdense(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  (void)at, (void)n;
  const mlc_gtype *w = &a[1];
  if (a[0].ndim != 2) return fail_shape(err, op, 0, &a[0], "[M, K]");
  if (w->ndim != 4 || w->shape[2] != 16 || w->shape[3] != 4 || w->shape[1] * 4 != a[0].shape[1])
    return fail_shape(err, op, 1, w, "[N/16, K/4, 16, 4] with K equal to operand 0's last");
  *out = a[0];
  out->shape[1] = w->shape[0] * 16;
  return true;
}

/* im2col: x [1, C, H, W] -> [OH * OW, C * R * S]. */
static bool shape_im2col(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  (void)n;
  if (a[0].ndim != 4 || a[0].shape[0] != 1) return fail_shape(err, op, 0, &a[0], "[1, C, H, W]");
  int64_t oh = window_out(a[0].shape[2], at->kernel[0], at->dilations[0], at->strides[0], 0, 0, false);
  int64_t ow = window_out(a[0].shape[3], at->kernel[1], at->dilations[1], at->strides[1], 0, 0, false);
  if (oh < 1 || ow < 1 || at->kernel[0] < 1 || at->kernel[1] < 1 || at->strides[0] < 1 || at->strides[1] < 1 ||
      at->dilations[0] < 1 || at->dilations[1] < 1)
    return fail_shape(err, op, 0, &a[0], "at least one window (kernel, strides, dilations >= 1)");
  *out = (mlc_gtype){a[0].dtype, 2, {oh * ow, a[0].shape[1] * at->kernel[0] * at->kernel[1]}};
  return true;
}

/* ---- shape rules (ops.def's shape column) ------------------------------------ */

typedef bool shape_rule(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_gtype *out, mlc_error *err);

static bool shape_matmul(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  (void)op, (void)at, (void)n;
  return infer_matmul(a, out, err);
}

static bool shape_dense(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_gtype *out, mlc_error *err) {
  (void)op, (void)at;
  return infer_dense(n, a, out, err);
}

static bool shape_broadcast(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                            mlc_gtype *out, mlc_error *err) {
  (void)at;
  return broadcast(op, n, a, out, err);
}

/* The operand's type (a unary pointwise op). */
static bool shape_same(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                       mlc_gtype *out, mlc_error *err) {
  (void)op, (void)at, (void)n, (void)err;
  *out = a[0];
  return true;
}

/* A unary pointwise op with scalar attributes (alpha, beta, exponent). */
static bool shape_scalars(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                          mlc_gtype *out, mlc_error *err) {
  if (!isfinite(at->exponent) || !isfinite(at->alpha) || !isfinite(at->beta))
    return mlc_error_set(err, "%s: attributes must be finite numbers", mlc_gop_name(op));
  return shape_same(op, at, n, a, out, err);
}

static bool shape_clip(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                       mlc_gtype *out, mlc_error *err) {
  if (isnan(at->lo) || isnan(at->hi) || at->lo > at->hi)
    return mlc_error_set(err, "clip: min %g is above max %g", at->lo, at->hi);
  return shape_same(op, at, n, a, out, err);
}

/* The operand's type, along at->axis (softmax, cumsum, hardmax). */
static bool shape_axis(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                       mlc_gtype *out, mlc_error *err) {
  if (mlc_gop_axis(at->axis, a[0].ndim) < 0)
    return mlc_error_set(err, "%s: axis %lld is out of range for a %d-d operand 0",
                         mlc_gop_name(op), (long long)at->axis, a[0].ndim);
  return shape_same(op, at, n, a, out, err);
}

static bool shape_layernorm(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                            mlc_gtype *out, mlc_error *err) {
  int ax = mlc_gop_axis(at->axis, a[0].ndim);
  if (ax < 0)
    return mlc_error_set(err, "layernorm: axis %lld is out of range for a %d-d operand 0",
                         (long long)at->axis, a[0].ndim);
  for (int i = 1; i < n; i++) {
    bool ok = a[i].ndim == a[0].ndim - ax;
    for (int d = 0; ok && d < a[i].ndim; d++) ok = a[i].shape[d] == a[0].shape[ax + d];
    if (!ok) return fail_shape(err, op, i, &a[i], "operand 0's normalized (trailing) dims");
  }
  if (!(at->eps > 0)) return mlc_error_set(err, "layernorm: eps must be positive");
  *out = a[0];
  return true;
}

static bool shape_batch_norm(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                             mlc_gtype *out, mlc_error *err) {
  (void)n;
  if (a[0].ndim < 2) return fail_shape(err, op, 0, &a[0], "[N, C, ...] (at least 2 dims)");
  for (int i = 1; i < 5; i++)
    if (a[i].ndim != 1 || a[i].shape[0] != a[0].shape[1])
      return fail_shape(err, op, i, &a[i], "[C] (operand 0's channels)");
  if (!(at->eps > 0)) return mlc_error_set(err, "batch_norm: eps must be positive");
  *out = a[0];
  return true;
}

static bool shape_window(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  return infer_window(op, at, n, a, out, err);
}

static bool shape_concat(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  int ax = mlc_gop_axis(at->axis, a[0].ndim);
  if (ax < 0)
    return mlc_error_set(err, "concat: axis %lld is out of range for a %d-d operand 0",
                         (long long)at->axis, a[0].ndim);
  *out = a[0];
  for (int i = 1; i < n; i++) {
    bool ok = a[i].ndim == a[0].ndim;
    for (int d = 0; ok && d < a[0].ndim; d++) ok = d == ax || a[i].shape[d] == a[0].shape[d];
    if (!ok) return fail_shape(err, op, i, &a[i], "operand 0's shape but along the axis");
    out->shape[ax] += a[i].shape[ax];
  }
  return true;
}

static bool shape_append(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  if (!shape_concat(op, at, n, a, out, err)) return false;
  for (int d = 0; d < mlc_gop_axis(at->axis, a[0].ndim); d++)
    if (a[0].shape[d] != 1)
      return fail_shape(err, op, 0, &a[0], "extents of 1 before the axis");
  return true;
}

static bool shape_slice(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_gtype *out, mlc_error *err) {
  (void)n;
  bool seen[MLC_GRAPH_MAX_DIMS] = {0};
  *out = a[0];
  for (int i = 0; i < at->n_ints; i++) {
    int d = mlc_gop_axis(at->ints[i], a[0].ndim);
    if (d < 0 || seen[d])
      return mlc_error_set(err, "slice: axis %lld is out of range or repeated for a %d-d operand 0",
                           (long long)at->ints[i], a[0].ndim);
    seen[d] = true;
  }
  for (int d = 0; d < a[0].ndim; d++) {
    int64_t b, s;
    if (!mlc_gop_slice_axis(at, &a[0], d, &b, &s, &out->shape[d]))
      return mlc_error_set(err, "slice: a step is 0");
    if (out->shape[d] < 1) return fail_shape(err, op, 0, &a[0], "a slice with at least one element");
  }
  return true;
}

static bool shape_unpack_nchwc(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                               mlc_gtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (a[0].ndim != 5) return fail_shape(err, op, 0, &a[0], "5 dims (NCHWc)");
  *out = a[0];
  out->ndim = 4;
  out->shape[1] *= a[0].shape[4];
  out->shape[4] = 0;
  return true;
}

/* global_avg_pool2d: NCHW to [N, C, 1, 1]. */
static bool shape_global_pool(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                              mlc_gtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (a[0].ndim != 4) return fail_shape(err, op, 0, &a[0], "4 dims (NCHW)");
  *out = a[0];
  out->shape[2] = out->shape[3] = 1;
  return true;
}

static bool shape_reduce(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  (void)n;
  bool red[MLC_GRAPH_MAX_DIMS];
  if (!mlc_gop_reduced_axes(op, at, a[0].ndim, red, err)) return false;
  for (int d = 0; d < a[0].ndim; d++)
    if (!red[d]) out->shape[out->ndim++] = a[0].shape[d];
    else if (at->keepdims) out->shape[out->ndim++] = 1;
  return true;
}

/* The operand's type, at least 2-d (tril, triu). */
static bool shape_matrix(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  if (a[0].ndim < 2) return fail_shape(err, op, 0, &a[0], "at least 2 dims");
  return shape_same(op, at, n, a, out, err);
}

static bool shape_reshape(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                          mlc_gtype *out, mlc_error *err) {
  (void)op, (void)n;
  return infer_reshape(at, &a[0], out, err);
}

static bool shape_flatten(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                          mlc_gtype *out, mlc_error *err) {
  (void)op, (void)n;
  return infer_flatten(at, &a[0], out, err);
}

static bool shape_pad(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                      mlc_gtype *out, mlc_error *err) {
  (void)op, (void)n;
  return infer_pad(at, &a[0], out, err);
}

static bool shape_gather(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_gtype *out, mlc_error *err) {
  (void)op, (void)n;
  return infer_gather(at, a, out, err);
}

static bool shape_transpose(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                            mlc_gtype *out, mlc_error *err) {
  (void)op, (void)n;
  return infer_transpose(at, &a[0], out, err);
}

/* argmax, argmin: axis reduced (kept as extent 1 with keepdims). */
static bool shape_reduce_axis(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                              mlc_gtype *out, mlc_error *err) {
  (void)n;
  int ax = mlc_gop_axis(at->axis, a[0].ndim);
  if (ax < 0)
    return mlc_error_set(err, "%s: axis %lld is out of range for a %d-d operand 0",
                         mlc_gop_name(op), (long long)at->axis, a[0].ndim);
  for (int d = 0; d < a[0].ndim; d++)
    if (d != ax) out->shape[out->ndim++] = a[0].shape[d];
    else if (at->keepdims) out->shape[out->ndim++] = 1;
  return true;
}

/* gather_elements: the indices' shape, of x's rank, within x's extents off
 * the axis (every element read is inside x). */
static bool shape_gather_elements(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                                  mlc_gtype *out, mlc_error *err) {
  (void)n;
  int ax = mlc_gop_axis(at->axis, a[0].ndim);
  if (ax < 0)
    return mlc_error_set(err, "%s: axis %lld is out of range for a %d-d operand 0",
                         mlc_gop_name(op), (long long)at->axis, a[0].ndim);
  bool ok = a[1].ndim == a[0].ndim;
  for (int d = 0; ok && d < a[0].ndim; d++) ok = d == ax || a[1].shape[d] <= a[0].shape[d];
  if (!ok)
    return fail_shape(err, op, 1, &a[1], "operand 0's rank, extents at most operand 0's off the axis");
  *out = a[1];
  return true;
}

/* topk: k (1 to the extent) along axis. */
static bool shape_topk(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                       mlc_gtype *out, mlc_error *err) {
  if (!shape_axis(op, at, n, a, out, err)) return false;
  int ax = mlc_gop_axis(at->axis, a[0].ndim);
  if (at->k < 1 || at->k > a[0].shape[ax])
    return mlc_error_set(err, "%s: k %lld is outside [1, %lld] (axis %d's extent)", mlc_gop_name(op),
                         (long long)at->k, (long long)a[0].shape[ax], ax);
  out->shape[ax] = at->k;
  return true;
}

/* scatter_nd*: data's type; indices [..., k] with k in [1, data's rank],
 * updates [indices' leading..., data's from k]. */
static bool shape_scatter_nd(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                             mlc_gtype *out, mlc_error *err) {
  (void)at, (void)n;
  int q = a[1].ndim - 1;
  int64_t k = q >= 0 ? a[1].shape[q] : 0;
  if (q < 0 || k < 1 || k > a[0].ndim)
    return fail_shape(err, op, 1, &a[1], "[..., k] with k from 1 to operand 0's rank");
  bool ok = a[2].ndim == q + a[0].ndim - k;
  for (int d = 0; ok && d < a[2].ndim; d++)
    ok = a[2].shape[d] == (d < q ? a[1].shape[d] : a[0].shape[k + d - q]);
  if (!ok) return fail_shape(err, op, 2, &a[2], "operand 1's leading dims, then operand 0's from k");
  *out = a[0];
  return true;
}

static shape_rule *const shape_rules[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) \
  [MLC_GOP_##id] = shape_##shape,
#include "graph/ops.def"
};
_Static_assert(sizeof(shape_rules) / sizeof(shape_rules[0]) == MLC_GOP_COUNT,
               "shape rule table out of date");

/* ---- dtype rules (ops.def's types column) ------------------------------------ */

static const mlc_dtype graph_dtypes[] = {MLC_FLOAT32, MLC_INT64, MLC_INT32, MLC_BOOL, MLC_UINT8, MLC_INT8};

bool mlc_graph_dtype_ok(mlc_dtype t) {
  for (size_t i = 0; i < MLC_COUNTOF(graph_dtypes); i++)
    if (graph_dtypes[i] == t) return true;
  return false;
}

bool mlc_graph_dtype_from_name(const char *s, mlc_dtype *out) {
  mlc_dtype t;
  if (!mlc_dtype_from_name(s, &t) || !mlc_graph_dtype_ok(t)) return false;
  *out = t;
  return true;
}

const char *mlc_graph_dtype_names(void) { return "float32, int64, int32, bool, uint8, int8"; }

static bool is_num(mlc_dtype t) { return t == MLC_FLOAT32 || t == MLC_INT64 || t == MLC_INT32; }

/* Operand i's dtype is not one the rule takes. */
static bool fail_dtype(mlc_error *err, mlc_gop op, int i, mlc_dtype t, const char *want) {
  return mlc_error_set(err, "%s: operand %d is %s; %s", mlc_gop_name(op), i, mlc_dtype_name(t),
                       want);
}

/* Operand i's dtype differs from operand j's. */
static bool fail_mixed(mlc_error *err, mlc_gop op, const mlc_gtype *a, int i, int j) {
  return mlc_error_set(err, "%s: operand %d is %s, operand %d %s (one dtype expected)", mlc_gop_name(op), i,
                       mlc_dtype_name(a[i].dtype), j, mlc_dtype_name(a[j].dtype));
}

/* Operands from..n-1 have the dtype of operand from. */
static bool same_dtypes(mlc_gop op, int from, int n, const mlc_gtype *a, mlc_error *err) {
  for (int i = from + 1; i < n; i++)
    if (a[i].dtype != a[from].dtype) return fail_mixed(err, op, a, i, from);
  return true;
}

typedef bool types_rule(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_dtype *out, mlc_error *err);

static bool types_float(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_dtype *out, mlc_error *err) {
  (void)at;
  for (int i = 0; i < n; i++)
    if (a[i].dtype != MLC_FLOAT32) return fail_dtype(err, op, i, a[i].dtype, "only float32 is supported");
  *out = MLC_FLOAT32;
  return true;
}

static bool types_num(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                      mlc_dtype *out, mlc_error *err) {
  (void)at;
  if (!is_num(a[0].dtype)) return fail_dtype(err, op, 0, a[0].dtype, "float32, int64 or int32 expected");
  *out = a[0].dtype;
  return same_dtypes(op, 0, n, a, err);
}

static bool types_any(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                      mlc_dtype *out, mlc_error *err) {
  (void)at;
  *out = a[0].dtype;
  return same_dtypes(op, 0, n, a, err);
}

static bool types_cmp(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                      mlc_dtype *out, mlc_error *err) {
  (void)at;
  if (a[0].dtype == MLC_BOOL && op != MLC_GOP_EQUAL)
    return fail_dtype(err, op, 0, a[0].dtype, "float32, int64 or int32 expected");
  *out = MLC_BOOL;
  return same_dtypes(op, 0, n, a, err);
}

static bool types_logic(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_dtype *out, mlc_error *err) {
  (void)at;
  for (int i = 0; i < n; i++)
    if (a[i].dtype != MLC_BOOL) return fail_dtype(err, op, i, a[i].dtype, "bool expected");
  *out = MLC_BOOL;
  return true;
}

static bool types_where(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_dtype *out, mlc_error *err) {
  (void)at;
  if (a[0].dtype != MLC_BOOL) return fail_dtype(err, op, 0, a[0].dtype, "a bool condition expected");
  *out = a[1].dtype;
  return same_dtypes(op, 1, n, a, err);
}

static bool types_cast(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                       mlc_dtype *out, mlc_error *err) {
  (void)n, (void)a;
  if (!mlc_graph_dtype_ok(at->to))
    return mlc_error_set(err, "%s: cannot cast to %s (%s)", mlc_gop_name(op),
                         mlc_dtype_name(at->to), mlc_graph_dtype_names());
  *out = at->to;
  return true;
}

static bool types_arg(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                      mlc_dtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (!is_num(a[0].dtype)) return fail_dtype(err, op, 0, a[0].dtype, "float32, int64 or int32 expected");
  *out = MLC_INT64;
  return true;
}

/* pow: a number to a number of any dtype, the base's dtype. */
static bool types_pow(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                      mlc_dtype *out, mlc_error *err) {
  (void)at;
  for (int i = 0; i < n; i++)
    if (!is_num(a[i].dtype)) return fail_dtype(err, op, i, a[i].dtype, "float32, int64 or int32 expected");
  *out = a[0].dtype;
  return true;
}

/* scatter_nd*: data and updates of one dtype (a number to add or
 * multiply), int64 or int32 indices. */
static bool types_scatter(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                          mlc_dtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (op != MLC_GOP_SCATTER_ND && !is_num(a[0].dtype))
    return fail_dtype(err, op, 0, a[0].dtype, "float32, int64 or int32 expected");
  if (a[1].dtype != MLC_INT64 && a[1].dtype != MLC_INT32)
    return fail_dtype(err, op, 1, a[1].dtype, "int64 or int32 indices expected");
  if (a[2].dtype != a[0].dtype) return fail_mixed(err, op, a, 2, 0);
  *out = a[0].dtype;
  return true;
}

/* quantize: float32 values and scales, a uint8 or int8 zero point whose
 * dtype is the result's. */
static bool types_quantize(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                           mlc_dtype *out, mlc_error *err) {
  (void)at, (void)n;
  for (int i = 0; i < 2; i++)
    if (a[i].dtype != MLC_FLOAT32) return fail_dtype(err, op, i, a[i].dtype, "float32 expected");
  if (a[2].dtype != MLC_UINT8 && a[2].dtype != MLC_INT8)
    return fail_dtype(err, op, 2, a[2].dtype, "a uint8 or int8 zero point expected");
  *out = a[2].dtype;
  return true;
}

/* dequantize: uint8, int8 or int32 values and a zero point of their
 * dtype, float32 scales; a float32 result. */
static bool types_dequantize(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                             mlc_dtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (a[0].dtype != MLC_UINT8 && a[0].dtype != MLC_INT8 && a[0].dtype != MLC_INT32)
    return fail_dtype(err, op, 0, a[0].dtype, "uint8, int8 or int32 expected");
  if (a[1].dtype != MLC_FLOAT32) return fail_dtype(err, op, 1, a[1].dtype, "float32 scales expected");
  if (a[2].dtype != a[0].dtype) return fail_mixed(err, op, a, 2, 0);
  *out = MLC_FLOAT32;
  return true;
}

static bool types_qdense(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_dtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (a[0].dtype != MLC_UINT8) return fail_dtype(err, op, 0, a[0].dtype, "uint8 expected");
  if (a[1].dtype != MLC_INT8) return fail_dtype(err, op, 1, a[1].dtype, "int8 weights expected");
  *out = MLC_INT32;
  return true;
}

/* gather: data of any dtype; indices int64, int32 or float32 holding whole
 * numbers. */
static bool types_gather(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                         mlc_dtype *out, mlc_error *err) {
  (void)at, (void)n;
  if (!is_num(a[1].dtype)) return fail_dtype(err, op, 1, a[1].dtype, "int64, int32 or float32 indices expected");
  *out = a[0].dtype;
  return true;
}

static types_rule *const types_rules[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) \
  [MLC_GOP_##id] = types_##types,
#include "graph/ops.def"
};
_Static_assert(sizeof(types_rules) / sizeof(types_rules[0]) == MLC_GOP_COUNT,
               "dtype rule table out of date");

static bool infer_shape(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a,
                        mlc_gtype *out, mlc_error *err) {
  if (!mlc_gop_arity_ok(op, n)) return mlc_gop_arity_error(op, n, err);
  for (int i = 0; i < n; i++)
    if (!mlc_graph_dtype_ok(a[i].dtype))
      return mlc_error_set(err, "%s: operand %d is %s; graph values are %s", mlc_gop_name(op), i,
                           mlc_dtype_name(a[i].dtype), mlc_graph_dtype_names());
  memset(out, 0, sizeof *out);
  mlc_dtype t;
  if (!types_rules[op](op, at, n, a, &t, err)) return false;
  if (!shape_rules[op](op, at, n, a, out, err)) return false;
  out->dtype = t;
  return true;
}

/* ---- modules ---------------------------------------------------------------- */

/* Inferred shapes are refused past the size limit (base.h) here, before
 * anything allocates them: a chain of ops on small inputs (a matmul of
 * [65536, 1] by [1, 65536]) can ask for more than any input did. */
bool mlc_gop_infer(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a, mlc_gtype *out,
                   mlc_error *err) {
  memset(out, 0, sizeof *out);
  if (!infer_shape(op, at, n, a, out, err)) return false;
  char what[64];
  snprintf(what, sizeof what, "%s: the result", mlc_gop_name(op));
  return mlc_tensor_numel_checked(what, out->shape, out->ndim, mlc_dtype_bytes(out->dtype), err) >= 0;
}

mlc_gmodule *mlc_graph_new(const char *name) {
  mlc_arena *a = mlc_arena_new();
  mlc_gmodule *m = MLC_NEW(a, mlc_gmodule);
  m->arena = a;
  m->name = mlc_arena_strdup(a, name ? name : "model");
  m->tir = mlc_module_new(a, "Module");
  return m;
}

void mlc_graph_free(mlc_gmodule *m) {
  if (m) mlc_arena_free(m->arena);
}

mlc_gfunc *mlc_graph_find_func(const mlc_gmodule *m, const char *name) {
  for (int i = 0; i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
  return NULL;
}

mlc_gfunc *mlc_graph_main(const mlc_gmodule *m) { return mlc_graph_find_func(m, "main"); }

mlc_gvar *mlc_gvar_new(mlc_gmodule *m, const char *name, mlc_gvar_kind kind,
                       const mlc_gtype *t) {
  mlc_gvar *v = MLC_NEW(m->arena, mlc_gvar);
  v->name = mlc_arena_strdup(m->arena, name);
  v->kind = kind;
  v->type = *t;
  return v;
}

mlc_gfunc *mlc_gfunc_new(mlc_gmodule *m, const char *name, bool primitive) {
  mlc_gfunc *f = MLC_NEW(m->arena, mlc_gfunc);
  f->name = mlc_arena_strdup(m->arena, name);
  f->primitive = primitive;
  return f;
}

/* Sub-functions go before main, so main stays last as the printer wants. */
void mlc_graph_add_func(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_gfunc **fs = MLC_NEW_ARRAY(m->arena, mlc_gfunc *, m->n_funcs + 1);
  int k = 0;
  bool is_main = strcmp(f->name, "main") == 0;
  for (int i = 0; i < m->n_funcs; i++) {
    if (!is_main && strcmp(m->funcs[i]->name, "main") == 0) fs[k++] = f;
    fs[k++] = m->funcs[i];
  }
  if (k == m->n_funcs) fs[k++] = f;
  m->funcs = fs;
  m->n_funcs = k;
}

void mlc_gfunc_set_bindings(mlc_gmodule *m, mlc_gfunc *f, int n, const mlc_gbinding *bs) {
  f->bindings = MLC_NEW_ARRAY(m->arena, mlc_gbinding, n > 0 ? n : 1);
  if (n) memcpy(f->bindings, bs, sizeof *bs * (size_t)n);
  f->n_bindings = n;
}

mlc_gvar **mlc_gvars_dup(mlc_gmodule *m, int n, mlc_gvar *const *vs) {
  mlc_gvar **out = MLC_NEW_ARRAY(m->arena, mlc_gvar *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) out[i] = vs[i];
  return out;
}

/* Uses of v as an argument in f, plus one if it is an output. */
int mlc_gfunc_uses(const mlc_gfunc *f, const mlc_gvar *v) {
  int n = 0;
  for (int i = 0; i < f->n_bindings; i++)
    for (int j = 0; j < f->bindings[i].n_args; j++) n += f->bindings[i].args[j] == v;
  for (int i = 0; i < f->n_outputs; i++) n += f->outputs[i] == v;
  return n;
}

/* The binding defining v in f, or -1. */
int mlc_gfunc_def(const mlc_gfunc *f, const mlc_gvar *v) {
  for (int i = 0; i < f->n_bindings; i++)
    if (f->bindings[i].var == v) return i;
  return -1;
}

bool mlc_gfunc_is_output(const mlc_gfunc *f, const mlc_gvar *v) {
  for (int i = 0; i < f->n_outputs; i++)
    if (f->outputs[i] == v) return true;
  return false;
}

bool mlc_gbinding_is_view(const mlc_gfunc *f, const mlc_gbinding *b) {
  return !f->primitive && b->kind == MLC_GCALL_OP &&
         (b->op == MLC_GOP_RESHAPE || b->op == MLC_GOP_FLATTEN) && !mlc_gfunc_is_output(f, b->var);
}

const mlc_gvar *mlc_gfunc_storage(const mlc_gfunc *f, const mlc_gvar *v) {
  for (int d; v->kind == MLC_GVAR_BOUND && (d = mlc_gfunc_def(f, v)) >= 0 &&
              mlc_gbinding_is_view(f, &f->bindings[d]);)
    v = f->bindings[d].args[0];
  return v;
}
