/* ONNX converters: MatMul, Gemm and the window ops (Conv, ConvTranspose, pools).
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- matmul, gemm --------------------------------------------------------------- */

/* numpy matmul: a 2-D right side shared by every batch (as one 2-D
 * matmul), equal batch dims (flattened to one), or batch dims that
 * broadcast; 1-D operands gain then lose a dim. */
bool onnx_cv_matmul(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *a = onnx_var(n, 0), *b = onnx_var(n, 1);
  if (!a || !b) return false;
  int ra = onnx_in_rank(n, 0), rb = onnx_in_rank(n, 1);
  if (ra < 1 || rb < 1) return onnx_fail(n, "matmul of a scalar");
  int64_t sa[MLC_GRAPH_MAX_DIMS + 1], sb[MLC_GRAPH_MAX_DIMS + 1];
  memcpy(sa + (ra == 1), n->in[0]->shape, sizeof(int64_t) * (size_t)ra);
  memcpy(sb, n->in[1]->shape, sizeof(int64_t) * (size_t)rb);
  if (ra == 1) sa[0] = 1, ra = 2;
  bool b_vec = rb == 1;
  if (b_vec) sb[1] = 1, rb = 2;
  int64_t M = sa[ra - 2], K = sa[ra - 1], N = sb[rb - 1];
  if (sb[rb - 2] != K) return onnx_fail(n, "inner dimensions differ (%lld and %lld)",
                                        (long long)K, (long long)sb[rb - 2]);
  int64_t ba = onnx_numel(ra - 2, sa), bb = onnx_numel(rb - 2, sb);
  mlc_gattrs at;
  mlc_gattrs_init(MLC_GOP_MATMUL, &at);
  mlc_gvar *y;
  int64_t out[MLC_GRAPH_MAX_DIMS + 1];
  int ro;
  if (rb == 2) { /* [.., M, K] @ [K, N] as [B*M, K] @ [K, N] */
    int64_t s2[2] = {ba * M, K}, b2[2] = {K, N};
    mlc_gvar *a2 = onnx_reshape(n, "a2d", a, 2, s2), *bb2 = onnx_reshape(n, "b2d", b, 2, b2);
    mlc_gvar *args[2] = {a2, bb2};
    y = a2 && bb2 ? onnx_emit(n, "mm", MLC_GOP_MATMUL, &at, 2, args) : NULL;
    ro = ra;
    memcpy(out, sa, sizeof(int64_t) * (size_t)ra);
  } else if (ra == rb && memcmp(sa, sb, sizeof(int64_t) * (size_t)(ra - 2)) == 0) {
    int64_t s3[3] = {ba, M, K}, b3[3] = {bb, K, N};
    mlc_gvar *a3 = onnx_reshape(n, "a3d", a, 3, s3), *b3v = onnx_reshape(n, "b3d", b, 3, b3);
    mlc_gvar *args[2] = {a3, b3v};
    y = a3 && b3v ? onnx_emit(n, "mm", MLC_GOP_MATMUL, &at, 2, args) : NULL;
    ro = ra;
    memcpy(out, sa, sizeof(int64_t) * (size_t)ra);
  } else { /* batch dims broadcast (numpy), as the graph's matmul does */
    mlc_gvar *a2 = onnx_reshape(n, "a2", a, ra, sa), *b2 = onnx_reshape(n, "b2", b, rb, sb);
    mlc_gvar *args[2] = {a2, b2};
    y = a2 && b2 ? onnx_emit(n, "mm", MLC_GOP_MATMUL, &at, 2, args) : NULL;
    if (!y) return false;
    ro = y->type.ndim;
    memcpy(out, y->type.shape, sizeof(int64_t) * (size_t)ro);
  }
  out[ro - 1] = N;
  int64_t final[MLC_GRAPH_MAX_DIMS];
  int rf = 0;
  for (int d = 0; d < ro; d++) {
    if (d == ro - 2 && onnx_in_rank(n, 0) == 1) continue;
    if (d == ro - 1 && b_vec) continue;
    final[rf++] = out[d];
  }
  if (rf == 0) return onnx_fail(n, "a scalar result is not supported");
  if (!y || !(y = onnx_reshape(n, NULL, y, rf, final))) return false;
  return onnx_set_out(n, 0, y, rf, final);
}

mlc_gvar *onnx_scalar_const(const onode *n, const char *sfx, double v) {
  mlc_gtype t = {MLC_FLOAT32, 1, {1}};
  mlc_gvar *c = onnx_new_const(n, sfx, &t);
  *(float *)c->data = (float)v;
  return c;
}

/* Before opset 7 C broadcasts only with broadcast 1, and then (as Gemm-6
 * leaves the rule to the old limited broadcasting) we take only what
 * numpy broadcasting agrees with: a one-element C, or a C whose shape is
 * a suffix of [M, N]. Since opset 7: numpy's unidirectional rule. */
static bool gemm_c_old(onode *n, int64_t M, int64_t N) {
  int64_t bc;
  if (n->opset >= 7) return true;
  if (!onnx_attr_int(n, "broadcast", 0, &bc)) return false;
  const oval *c = n->in[2];
  int64_t mn[2] = {M, N};
  bool exact = c->ndim == 2 && c->shape[0] == M && c->shape[1] == N;
  bool suffix = c->ndim <= 2 && memcmp(c->shape, mn + 2 - c->ndim, sizeof(int64_t) * (size_t)c->ndim) == 0;
  if (!bc && !exact)
    return onnx_fail(n, "C is not [%lld, %lld] and broadcast is 0", (long long)M, (long long)N);
  if (bc && !suffix && onnx_numel(c->ndim, c->shape) != 1)
    return onnx_fail(n, "broadcast 1 with a C whose shape is not a suffix of [%lld, %lld] is "
                        "not supported", (long long)M, (long long)N);
  return true;
}

/* Y = alpha * A' B' + beta * C; B' as dense's [N, K] when transB. */
bool onnx_cv_gemm(onode *n) {
  int64_t ta, tb;
  double alpha, beta;
  if (!onnx_check_attrs(n, n->opset < 7 ? " alpha beta broadcast transA transB "
                                          : " alpha beta transA transB ") ||
      !onnx_attr_int(n, "transA", 0, &ta) || !onnx_attr_int(n, "transB", 0, &tb) ||
      !onnx_attr_float(n, "alpha", 1, &alpha) || !onnx_attr_float(n, "beta", 1, &beta))
    return false;
  mlc_gvar *a = onnx_var(n, 0), *b = onnx_var(n, 1);
  if (!a || !b) return false;
  if (onnx_in_rank(n, 0) != 2 || onnx_in_rank(n, 1) != 2) return onnx_fail(n, "A and B must be 2-D");
  if (onnx_in_val(n, 2) && !gemm_c_old(n, a->type.shape[ta ? 1 : 0], b->type.shape[tb ? 0 : 1]))
    return false;
  int perm[2] = {1, 0};
  if (ta && !(a = onnx_transpose(n, "at", a, 2, perm))) return false;
  mlc_gattrs at;
  mlc_gattrs_init(MLC_GOP_MATMUL, &at);
  mlc_gvar *args[2] = {a, b};
  bool last = alpha == 1 && (!onnx_in_val(n, 2));
  mlc_gvar *y = onnx_emit(n, last ? NULL : "mm", tb ? MLC_GOP_DENSE : MLC_GOP_MATMUL, &at, 2, args);
  if (!y) return false;
  mlc_gattrs e;
  mlc_gattrs_init(MLC_GOP_MULTIPLY, &e);
  if (alpha != 1) {
    mlc_gvar *m2[2] = {y, onnx_scalar_const(n, "alpha", alpha)};
    if (!(y = onnx_emit(n, onnx_in_val(n, 2) ? "scaled" : NULL, MLC_GOP_MULTIPLY, &e, 2, m2)))
      return false;
  }
  if (onnx_in_val(n, 2)) {
    mlc_gvar *c = onnx_var(n, 2);
    if (!c) return false;
    if (beta != 1) {
      mlc_gvar *m2[2] = {c, onnx_scalar_const(n, "beta", beta)};
      if (!(c = onnx_emit(n, "c", MLC_GOP_MULTIPLY, &e, 2, m2))) return false;
    }
    mlc_gvar *s2[2] = {y, c};
    mlc_gvar *sum = onnx_emit(n, NULL, MLC_GOP_ADD, &e, 2, s2);
    if (!sum) return false;
    if (!mlc_gtype_equal(&sum->type, &y->type)) return onnx_fail(n, "C does not broadcast to A B");
    y = sum;
  }
  return onnx_set_var(n, 0, y);
}

/* ---- windows -------------------------------------------------------------------- */

/* A window op's spatial rank from its input's: 1-D (NCL), 2-D (NCHW) and
 * 3-D (NCDHW) windows; a 1-D one runs as 2-D with H = 1 (kernel, stride,
 * dilation 1, no padding along H), which computes the same values. */
static bool window_rank(onode *n, const mlc_gvar *x, const char *what, int *sp) {
  *sp = x->type.ndim - 2;
  if (*sp >= 1 && *sp <= 3) return true;
  return onnx_fail(n, "%s need an input of rank 3 (N, C, L), 4 (N, C, H, W) or 5 (N, C, D, H, W), not %d",
                   what, x->type.ndim);
}

/* The spatial rank of the graph op a window of sp axes runs as. */
static int lifted(int sp) { return sp == 1 ? 2 : sp; }

/* The graph op of 2-D op op2d for a window of sp axes. */
static mlc_gop window_op(mlc_gop op2d, int sp) {
  if (lifted(sp) == 2) return op2d;
  if (op2d == MLC_GOP_CONV2D) return MLC_GOP_CONV3D;
  if (op2d == MLC_GOP_CONV_TRANSPOSE2D) return MLC_GOP_CONV_TRANSPOSE3D;
  if (op2d == MLC_GOP_MAX_POOL2D) return MLC_GOP_MAX_POOL3D;
  MLC_ASSERT(op2d == MLC_GOP_AVG_POOL2D);
  return MLC_GOP_AVG_POOL3D;
}

/* x with a unit H inserted after N and C (sp 1); x itself for sp 2 and 3. */
static mlc_gvar *lift_2d(onode *n, const char *sfx, mlc_gvar *x, int sp) {
  if (!x || sp != 1) return x;
  int64_t s[4] = {x->type.shape[0], x->type.shape[1], 1, x->type.shape[2]};
  return onnx_reshape(n, sfx, x, 4, s);
}

/* Output 0 is y (the window op's result), its unit H dropped for sp 1. */
static bool set_window_out(onode *n, mlc_gvar *y, int sp) {
  if (!y || sp != 1) return onnx_set_var(n, 0, y);
  MLC_ASSERT(y->type.ndim == 4 && y->type.shape[2] == 1);
  int64_t s[3] = {y->type.shape[0], y->type.shape[1], y->type.shape[3]};
  return onnx_set_var(n, 0, onnx_reshape(n, NULL, y, 3, s));
}

/* The window op over x (lifted), named after the node, its result set as
 * output 0 (set_window_out). */
static bool emit_window(onode *n, mlc_gop op2d, int sp, const mlc_gattrs *a, int k,
                        mlc_gvar **args) {
  return set_window_out(n, onnx_emit(n, sp == 1 ? "2d" : NULL, window_op(op2d, sp), a, k, args), sp);
}

/* Attribute name, per entries per spatial axis (pads: 2), as the lifted
 * op's values in out (per * lifted(sp) entries, axes in order in each
 * group): a 1-D window's entries become W's and H gets fill. *c: -1 when
 * absent. */
static bool window_ints(onode *n, const char *name, int sp, int per, int64_t fill, int *c,
                        int64_t *out) {
  int64_t v[8];
  int L = lifted(sp);
  if (!onnx_attr_ints(n, name, 8, c, v)) return false;
  if (*c < 0) return true;
  if (*c != per * sp)
    return onnx_fail(n, "%s must have %d entries (a %d-D window)", name, per * sp, sp);
  for (int g = 0; g < per; g++)
    for (int j = 0; j < L; j++) out[g * L + j] = j < L - sp ? fill : v[g * sp + j - (L - sp)];
  return true;
}

/* kernel_shape, strides, pads, dilations, auto_pad of a window with sp
 * spatial axes into a (lifted; see window_rank). in_sp: the lifted
 * input's spatial extents; k_sp: the lifted weight's (NULL for pools). */
static bool window_attrs(onode *n, mlc_gattrs *a, int sp, const int64_t *in_sp,
                         const int64_t *k_sp) {
  int c, L = lifted(sp);
  size_t row = sizeof(int64_t) * (size_t)L;
  int64_t v[2 * MLC_GRAPH_MAX_WINDOW];
  if (!window_ints(n, "kernel_shape", sp, 1, 1, &c, v)) return false;
  if (c >= 0 && k_sp && memcmp(v, k_sp, row) != 0)
    return onnx_fail(n, "kernel_shape does not match the weight");
  if (c >= 0) memcpy(a->kernel, v, row);
  else if (k_sp) memcpy(a->kernel, k_sp, row);
  else return onnx_fail(n, "kernel_shape is required");
  if (!window_ints(n, "strides", sp, 1, 1, &c, v)) return false;
  if (c >= 0) memcpy(a->strides, v, row);
  if (!window_ints(n, "dilations", sp, 1, 1, &c, v)) return false;
  if (c >= 0) memcpy(a->dilations, v, row);
  int cp;
  if (!window_ints(n, "pads", sp, 2, 0, &cp, v)) return false;
  /* ONNX: all begins, then all ends (2-D: top, left, bottom, right), as ours */
  if (cp >= 0) memcpy(a->pads, v, 2 * row);
  for (int i = 0; i < 2 * L; i++)
    if (a->pads[i] < 0) return onnx_fail(n, "negative pads are not supported");
  for (int i = 0; i < L; i++)
    if (a->strides[i] < 1 || a->dilations[i] < 1 || a->kernel[i] < 1)
      return onnx_fail(n, "strides, dilations and kernel_shape must be positive");
  const char *auto_pad;
  if (!onnx_attr_string(n, "auto_pad", "NOTSET", &auto_pad)) return false;
  if (strcmp(auto_pad, "NOTSET") == 0) return true;
  if (cp >= 0) return onnx_fail(n, "auto_pad %s together with pads", auto_pad);
  if (strcmp(auto_pad, "VALID") == 0) return true;
  bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
  if (!upper && strcmp(auto_pad, "SAME_LOWER") != 0)
    return onnx_fail(n, "auto_pad \"%s\" is not supported", auto_pad);
  for (int i = 0; i < L; i++) { /* out = ceil(in / stride); a unit H gets no pads */
    int64_t out = (in_sp[i] + a->strides[i] - 1) / a->strides[i];
    int64_t span = a->dilations[i] * (a->kernel[i] - 1) + 1;
    int64_t total = (out - 1) * a->strides[i] + span - in_sp[i];
    if (total < 0) total = 0;
    a->pads[i] = upper ? total / 2 : total - total / 2;
    a->pads[i + L] = total - a->pads[i];
  }
  return true;
}

/* Conv over NCL, NCHW or NCDHW (weight OIK, OIHW or OIDHW), groups, bias. */
bool onnx_cv_conv(onode *n) {
  if (!onnx_check_attrs(n, " auto_pad dilations group kernel_shape pads strides ")) return false;
  mlc_gvar *x = onnx_var(n, 0), *w = onnx_var(n, 1);
  int sp;
  if (!x || !w || !window_rank(n, x, "convolutions", &sp)) return false;
  if (w->type.ndim != x->type.ndim)
    return onnx_fail(n, "the weight has rank %d for an input of rank %d", w->type.ndim,
                     x->type.ndim);
  x = lift_2d(n, "x2d", x, sp);
  w = lift_2d(n, "w2d", w, sp);
  if (!x || !w) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CONV2D, &a);
  if (!onnx_attr_int(n, "group", 1, &a.groups) ||
      !window_attrs(n, &a, sp, x->type.shape + 2, w->type.shape + 2))
    return false;
  mlc_gvar *args[3] = {x, w, NULL};
  int k = 2;
  if (onnx_in_val(n, 2) && !(args[k++] = onnx_var(n, 2))) return false;
  return emit_window(n, MLC_GOP_CONV2D, sp, &a, k, args);
}

bool onnx_cv_max_pool(onode *n) {
  if (!onnx_check_attrs(n, " auto_pad ceil_mode dilations kernel_shape pads storage_order strides "))
    return false;
  if (n->p->n_output > 1 && n->p->output[1] && *n->p->output[1])
    return onnx_fail(n, "the Indices output is not supported");
  mlc_gvar *x = onnx_var(n, 0);
  int sp;
  if (!x || !window_rank(n, x, "pools", &sp) || !(x = lift_2d(n, "x2d", x, sp))) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_MAX_POOL2D, &a);
  int64_t ceil_mode, order;
  if (!onnx_attr_int(n, "ceil_mode", 0, &ceil_mode) ||
      !onnx_attr_int(n, "storage_order", 0, &order) ||
      !window_attrs(n, &a, sp, x->type.shape + 2, NULL))
    return false;
  if (order) return onnx_fail(n, "storage_order 1 is not supported");
  a.ceil_mode = ceil_mode != 0;
  return emit_window(n, MLC_GOP_MAX_POOL2D, sp, &a, 1, &x);
}

/* The pads of a transposed convolution whose output extent is out:
 * total = stride (in - 1) + output_padding + span - out, split as ONNX
 * splits it (SAME_UPPER: the smaller half first; otherwise the larger).
 * A negative total (an output_shape beyond the computed one) grows the
 * output at the end, as output_padding does. */
static bool transpose_pads(onode *n, mlc_gattrs *a, int L, int i, int64_t in, int64_t k,
                           int64_t out, bool upper) {
  int64_t span = a->dilations[i] * (k - 1) + 1;
  int64_t total = a->strides[i] * (in - 1) + a->output_padding[i] + span - out;
  int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor */
  int64_t begin = upper ? half : total - half, end = total - begin;
  if (begin < 0) return onnx_fail(n, "output_shape %lld needs negative padding", (long long)out);
  if (end < 0) a->output_padding[i] -= end, end = 0;
  a->pads[i] = begin;
  a->pads[i + L] = end;
  return true;
}

/* output_shape of ConvTranspose: its last sp entries (it may also list N
 * and C), lifted (a 1-D window's H: 1). *co -1 when absent. */
static bool output_shape_attr(onode *n, int sp, int *co, int64_t *os) {
  int64_t v[8];
  int L = lifted(sp);
  if (!onnx_attr_ints(n, "output_shape", 8, co, v)) return false;
  if (*co < 0) return true;
  if (*co != sp && *co != sp + 2)
    return onnx_fail(n, "output_shape must have %d or %d entries (a %d-D window)", sp, sp + 2, sp);
  for (int j = 0; j < L; j++) os[j] = j < L - sp ? 1 : v[*co - L + j];
  return true;
}

/* ConvTranspose over NCL, NCHW or NCDHW, weight [C, K / group, ((T,) R,) S]. */
bool onnx_cv_conv_transpose(onode *n) {
  if (!onnx_check_attrs(n, " auto_pad dilations group kernel_shape output_padding output_shape "
                           "pads strides "))
    return false;
  mlc_gvar *x = onnx_var(n, 0), *w = onnx_var(n, 1);
  int sp;
  if (!x || !w || !window_rank(n, x, "transposed convolutions", &sp)) return false;
  if (w->type.ndim != x->type.ndim)
    return onnx_fail(n, "the weight has rank %d for an input of rank %d", w->type.ndim,
                     x->type.ndim);
  x = lift_2d(n, "x2d", x, sp);
  w = lift_2d(n, "w2d", w, sp);
  if (!x || !w) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CONV_TRANSPOSE2D, &a);
  int c, co;
  int64_t op[MLC_GRAPH_MAX_WINDOW], os[MLC_GRAPH_MAX_WINDOW];
  const char *auto_pad;
  if (!onnx_attr_int(n, "group", 1, &a.groups) ||
      !window_ints(n, "output_padding", sp, 1, 0, &c, op) ||
      !output_shape_attr(n, sp, &co, os) || !onnx_attr_string(n, "auto_pad", "NOTSET", &auto_pad))
    return false;
  if (c >= 0) memcpy(a.output_padding, op, sizeof(int64_t) * (size_t)lifted(sp));
  bool same = strncmp(auto_pad, "SAME_", 5) == 0;
  if (same || co >= 0) { /* window_attrs would pad as a convolution does */
    Onnx__NodeProto p = *n->p;
    Onnx__AttributeProto *kept[64];
    p.n_attribute = 0;
    for (size_t i = 0; i < n->p->n_attribute && i < 64; i++)
      if (strcmp(n->p->attribute[i]->name, "auto_pad") != 0) kept[p.n_attribute++] = n->p->attribute[i];
    p.attribute = kept;
    onode m = *n;
    m.p = &p;
    if (!window_attrs(&m, &a, sp, x->type.shape + 2, w->type.shape + 2)) return false;
    if (onnx_attr(n, "pads") && (same || co >= 0))
      return onnx_fail(n, "pads together with auto_pad %s or output_shape", auto_pad);
    bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
    if (same && !upper && strcmp(auto_pad, "SAME_LOWER") != 0)
      return onnx_fail(n, "auto_pad \"%s\" is not supported", auto_pad);
    for (int i = 0; i < lifted(sp); i++) {
      int64_t in = x->type.shape[2 + i];
      int64_t out = co >= 0 ? os[i] : in * a.strides[i];
      if (!transpose_pads(n, &a, lifted(sp), i, in, w->type.shape[2 + i], out, upper)) return false;
    }
  } else if (!window_attrs(n, &a, sp, x->type.shape + 2, w->type.shape + 2)) {
    return false;
  }
  mlc_gvar *args[3] = {x, w, NULL};
  int k = 2;
  if (onnx_in_val(n, 2) && !(args[k++] = onnx_var(n, 2))) return false;
  return emit_window(n, MLC_GOP_CONV_TRANSPOSE2D, sp, &a, k, args);
}

bool onnx_cv_avg_pool(onode *n) {
  if (!onnx_check_attrs(n, " auto_pad ceil_mode count_include_pad kernel_shape pads strides "))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  int sp;
  if (!x || !window_rank(n, x, "pools", &sp) || !(x = lift_2d(n, "x2d", x, sp))) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_AVG_POOL2D, &a);
  int64_t ceil_mode, include;
  if (!onnx_attr_int(n, "ceil_mode", 0, &ceil_mode) ||
      !onnx_attr_int(n, "count_include_pad", 0, &include) ||
      !window_attrs(n, &a, sp, x->type.shape + 2, NULL))
    return false;
  a.ceil_mode = ceil_mode != 0;
  a.count_include_pad = include != 0;
  return emit_window(n, MLC_GOP_AVG_POOL2D, sp, &a, 1, &x);
}

/* GlobalAveragePool / GlobalMaxPool over every axis after N and C. */
static bool global_pool(onode *n, mlc_gop op) {
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (x->type.ndim < 3) return onnx_fail(n, "the input needs spatial dimensions (N, C, ...)");
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  if (op == MLC_GOP_GLOBAL_AVG_POOL2D && x->type.ndim == 4)
    return onnx_set_var(n, 0, onnx_emit(n, NULL, op, &a, 1, &x));
  if (op == MLC_GOP_GLOBAL_AVG_POOL2D) op = MLC_GOP_REDUCE_MEAN;
  mlc_gattrs_init(op, &a);
  a.keepdims = true;
  for (int d = 2; d < x->type.ndim; d++) a.ints[a.n_ints++] = d;
  return onnx_set_var(n, 0, onnx_emit(n, NULL, op, &a, 1, &x));
}

/* The op table's row gives the graph op (n->op->gop). */
bool onnx_cv_global_pool(onode *n) { return global_pool(n, n->op->gop); }

/* ---- Einsum ------------------------------------------------------------------- */

/* An operand during Einsum: its var and the letter of each of its axes
 * (no axes: the var has shape [1]). */
typedef struct eterm {
  mlc_gvar *v;
  char l[MLC_GRAPH_MAX_DIMS + 1];
  int nd;
} eterm;

/* Parses term s (up to a ',' or '-' or the end) into t->l; letters only,
 * none repeated. */
static bool einsum_term(const onode *n, const char **s, int k, eterm *t) {
  t->nd = 0;
  for (; **s && **s != ',' && **s != '-'; (*s)++) {
    char c = **s;
    if (c == ' ') continue;
    if (c == '.') return onnx_fail(n, "ellipsis (...) is not supported");
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return onnx_fail(n, "'%c' in the equation is not a letter", c);
    if (memchr(t->l, c, (size_t)t->nd))
      return onnx_fail(n, "letter '%c' repeats in %s %d (diagonals are not supported)", c,
                       k < 0 ? "the output" : "operand", k < 0 ? 0 : k);
    if (t->nd == MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d letters in a term", MLC_GRAPH_MAX_DIMS);
    t->l[t->nd++] = c;
  }
  t->l[t->nd] = 0;
  return true;
}

static bool has(const eterm *t, char c) { return memchr(t->l, c, (size_t)t->nd) != NULL; }

/* The implicit output: the letters that appear once, in alphabetical
 * order (ONNX's rule without "->"). */
static void implicit_output(const eterm *in, int n_in, eterm *out) {
  out->nd = 0;
  for (int c = 'A'; c <= 'z'; c++) {
    int seen = 0;
    for (int k = 0; k < n_in; k++) seen += has(&in[k], (char)c);
    if (seen == 1) out->l[out->nd++] = (char)c;
  }
  out->l[out->nd] = 0;
}

/* The equation into the operands' terms and the output's; each letter's
 * extent into ext (one extent per letter: no broadcasting). */
static bool einsum_parse(onode *n, const char *eq, eterm *in, eterm *out, int64_t *ext) {
  const char *s = eq;
  for (int k = 0; k < n->n_in; k++) {
    if (k && *s++ != ',') return onnx_fail(n, "the equation has %d terms for %d inputs", k, n->n_in);
    if (!einsum_term(n, &s, k, &in[k])) return false;
    if (in[k].nd != onnx_in_rank(n, k))
      return onnx_fail(n, "term %d has %d letters for an input of rank %d", k, in[k].nd, onnx_in_rank(n, k));
    for (int d = 0; d < in[k].nd; d++) {
      int64_t e = n->in[k]->shape[d], *x = &ext[(unsigned char)in[k].l[d]];
      if (*x >= 0 && *x != e)
        return onnx_fail(n, "letter '%c' has extents %lld and %lld (broadcasting is not supported)",
                         in[k].l[d], (long long)*x, (long long)e);
      *x = e;
    }
  }
  if (*s == ',') return onnx_fail(n, "the equation has more terms than the %d inputs", n->n_in);
  if (!*s) {
    implicit_output(in, n->n_in, out);
    return true;
  }
  if (s[0] != '-' || s[1] != '>') return onnx_fail(n, "expected \"->\" in the equation");
  s += 2;
  if (!einsum_term(n, &s, -1, out)) return false;
  if (*s) return onnx_fail(n, "unexpected '%c' after the output term", *s);
  for (int d = 0; d < out->nd; d++)
    if (ext[(unsigned char)out->l[d]] < 0)
      return onnx_fail(n, "output letter '%c' is in no input", out->l[d]);
  return true;
}

/* t reshaped to the extents of its letters. */
static bool eterm_reshape(const onode *n, const char *sfx, eterm *t, const int64_t *ext) {
  int64_t shape[MLC_GRAPH_MAX_DIMS] = {1};
  for (int d = 0; d < t->nd; d++) shape[d] = ext[(unsigned char)t->l[d]];
  return (t->v = onnx_reshape(n, sfx, t->v, t->nd ? t->nd : 1, shape)) != NULL;
}

/* t summed over its letters that keep does not have (nor other, when
 * given): reduce_sum, then the summed axes dropped. */
static bool eterm_sum(const onode *n, const char *sfx, eterm *t, const eterm *keep,
                      const eterm *other, const int64_t *ext) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_REDUCE_SUM, &a);
  a.keepdims = true;
  int nd = 0;
  for (int d = 0; d < t->nd; d++)
    if (has(keep, t->l[d]) || (other && has(other, t->l[d]))) t->l[nd++] = t->l[d];
    else a.ints[a.n_ints++] = d;
  if (!a.n_ints) return true;
  if (!(t->v = onnx_emit(n, sfx, MLC_GOP_REDUCE_SUM, &a, 1, &t->v))) return false;
  t->l[t->nd = nd] = 0;
  char rs[16];
  snprintf(rs, sizeof rs, "%s_r", sfx);
  return eterm_reshape(n, rs, t, ext);
}

/* t's axes in the order of the letters `order` (all of t's). */
static bool eterm_permute(const onode *n, const char *sfx, eterm *t, const char *order) {
  int perm[MLC_GRAPH_MAX_DIMS];
  bool id = true;
  for (int d = 0; d < t->nd; d++) {
    perm[d] = (int)((const char *)memchr(t->l, order[d], (size_t)t->nd) - t->l);
    id = id && perm[d] == d;
  }
  memcpy(t->l, order, (size_t)t->nd);
  if (id) return true;
  return (t->v = onnx_transpose(n, sfx, t->v, t->nd, perm)) != NULL;
}

/* The letters of t with (want) or without (!want) a letter of u, in t's
 * order, appended to s. */
static void letters_of(const eterm *t, const eterm *u, bool want, const eterm *out, bool in_out,
                       char *s) {
  size_t k = strlen(s);
  for (int d = 0; d < t->nd; d++)
    if (has(u, t->l[d]) == want && has(out, t->l[d]) == in_out) s[k++] = t->l[d];
  s[k] = 0;
}

static int64_t extent_of(const char *s, const int64_t *ext) {
  int64_t p = 1;
  for (; *s; s++) p *= ext[(unsigned char)*s];
  return p;
}

/* Two operands: batch letters (both and the output) first, a's kept
 * letters, the contracted ones (both, not the output), b's kept: a as
 * [batch, M, K] times b as [batch, K, N] by matmul, the product as
 * [batch..., a's..., b's...]. */
static bool einsum_pair(const onode *n, eterm *a, eterm *b, const eterm *out, const int64_t *ext,
                        eterm *y) {
  char bat[MLC_GRAPH_MAX_DIMS + 1] = "", m[MLC_GRAPH_MAX_DIMS + 1] = "",
       k[MLC_GRAPH_MAX_DIMS + 1] = "", nn[MLC_GRAPH_MAX_DIMS + 1] = "";
  letters_of(out, a, true, b, true, bat); /* in the output's order */
  letters_of(a, b, false, out, true, m);
  letters_of(a, b, true, out, false, k);
  letters_of(b, a, false, out, true, nn);
  char ao[2 * MLC_GRAPH_MAX_DIMS + 1], bo[2 * MLC_GRAPH_MAX_DIMS + 1];
  snprintf(ao, sizeof ao, "%s%s%s", bat, m, k);
  snprintf(bo, sizeof bo, "%s%s%s", bat, k, nn);
  if (!eterm_permute(n, "a_t", a, ao) || !eterm_permute(n, "b_t", b, bo)) return false;
  int64_t B = extent_of(bat, ext), M = extent_of(m, ext), K = extent_of(k, ext), N = extent_of(nn, ext);
  bool batched = bat[0] != 0;
  mlc_gvar *args[2] = {
      onnx_reshape(n, "a_mk", a->v, batched ? 3 : 2, batched ? (int64_t[]){B, M, K} : (int64_t[]){M, K}),
      onnx_reshape(n, "b_kn", b->v, batched ? 3 : 2, batched ? (int64_t[]){B, K, N} : (int64_t[]){K, N})};
  if (!args[0] || !args[1]) return false;
  mlc_gattrs at;
  mlc_gattrs_init(MLC_GOP_MATMUL, &at);
  if (!(y->v = onnx_emit(n, "mm", MLC_GOP_MATMUL, &at, 2, args))) return false;
  y->nd = snprintf(y->l, sizeof y->l, "%s%s%s", bat, m, nn);
  return eterm_reshape(n, "mm_nd", y, ext);
}

/* Einsum of one operand (transpose, sums) or two (batched matmul over
 * any letters; the inner and outer products as its degenerate forms):
 * letters only, no letter twice in a term, one extent per letter.
 * Diagonals and ellipsis are refused. */
bool onnx_cv_einsum(onode *n) {
  const char *eq;
  if (!onnx_check_attrs(n, " equation ") || !onnx_attr_string(n, "equation", "", &eq)) return false;
  eterm in[2], out, y;
  int64_t ext[256];
  for (int c = 0; c < 256; c++) ext[c] = -1;
  if (!einsum_parse(n, eq, in, &out, ext)) return false;
  for (int k = 0; k < n->n_in; k++)
    if (!(in[k].v = onnx_var(n, k))) return false;
  if (n->n_in == 1) {
    y = in[0];
    if (!eterm_sum(n, "sum", &y, &out, NULL, ext)) return false;
  } else {
    if (!eterm_sum(n, "a_sum", &in[0], &out, &in[1], ext) ||
        !eterm_sum(n, "b_sum", &in[1], &out, &in[0], ext) ||
        !einsum_pair(n, &in[0], &in[1], &out, ext, &y))
      return false;
  }
  if (!eterm_permute(n, "out", &y, out.l)) return false;
  int64_t shape[MLC_GRAPH_MAX_DIMS] = {1};
  for (int d = 0; d < out.nd; d++) shape[d] = ext[(unsigned char)out.l[d]];
  return onnx_set_out(n, 0, y.v, out.nd, shape);
}
