/* ONNX nodes onto graph ops, one converter per ONNX op. Integer tensors
 * are shapes, axes and indices, computed here at import time; float
 * tensors become graph bindings (evaluated at import when their inputs
 * are all constants). A node we cannot map exactly is refused. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* axis in [-ndim, ndim) -> [0, ndim). */
static bool norm_axis(const onode *n, int64_t axis, int ndim, int *out) {
  if (axis < -ndim || axis >= ndim)
    return onnx_fail(n, "axis %lld is out of range for rank %d", (long long)axis, ndim);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return true;
}

static bool no_attrs(onode *n) { return onnx_check_attrs(n, " "); }

static const oval *in_val(const onode *n, int k) { return k < n->n_in ? n->in[k] : NULL; }

/* The ONNX rank and shape of input k (a scalar has rank 0). */
static int in_rank(const onode *n, int k) { return n->in[k]->ndim; }

/* out = var, whose ONNX shape is the var's (rank >= 1). */
static bool set_var(const onode *n, int k, mlc_gvar *v) {
  if (!v) return false;
  return onnx_set_out(n, k, v, v->type.ndim, v->type.shape);
}

/* ---- pass-through -------------------------------------------------------------- */

static bool forward(const onode *n, int k, const oval *v) {
  if (v->is_int) return onnx_set_out_ints(n, k, v->ndim, v->shape, v->i);
  return onnx_set_out(n, k, v->var, v->ndim, v->shape);
}

static bool cv_identity(onode *n) {
  if (!no_attrs(n)) return false;
  return forward(n, 0, n->in[0]);
}

static bool scalar_input(const onode *n, int k, double *out);

/* Inference (or a ratio of 0): the identity, and the optional mask output
 * all true (a bool constant, which can feed shape arithmetic but not be a
 * graph output: outputs are float32). Training with a nonzero ratio is
 * random and refused. */
static bool cv_dropout(onode *n) {
  if (!onnx_check_attrs(n, n->opset < 7 ? " ratio is_test " : " ratio seed ")) return false;
  int64_t is_test;
  double ratio;
  if (!onnx_attr_int(n, "is_test", 0, &is_test) || !onnx_attr_float(n, "ratio", 0.5, &ratio))
    return false;
  bool training = n->opset < 7 && !is_test;
  if (n->n_in == 3 && n->in[2]) {
    int64_t c;
    const int64_t *t = onnx_ints(n, 2, &c);
    if (!t) return false;
    if (c != 1) return onnx_fail(n, "training_mode must be one value");
    training = t[0] != 0;
  }
  /* the ratio matters (and must be known) only in training mode */
  if (training && in_val(n, 1) && !scalar_input(n, 1, &ratio)) return false;
  if (training && ratio != 0)
    return onnx_fail(n, "training mode with ratio %g is not supported (inference only)", ratio);
  if (!forward(n, 0, n->in[0])) return false;
  if (n->p->n_output > 1 && n->p->output[1] && *n->p->output[1]) {
    if (n->opset < 10) /* float then, and left unfilled in test mode */
      return onnx_fail(n, "the mask output before opset 10 is not supported");
    const oval *x = n->in[0];
    int64_t c = onnx_numel(x->ndim, x->shape);
    int64_t *ones = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(c + 1));
    for (int64_t k = 0; k < c; k++) ones[k] = 1;
    return onnx_set_out_ints(n, 1, x->ndim, x->shape, ones);
  }
  return true;
}

/* ---- integer arithmetic on constants ------------------------------------------- */

static bool broadcast_shape(const onode *n, const oval *a, const oval *b, int *nd,
                            int64_t *shape) {
  *nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int d = 0; d < *nd; d++) {
    int da = d - (*nd - a->ndim), db = d - (*nd - b->ndim);
    int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
    if (x != y && x != 1 && y != 1) return onnx_fail(n, "shapes do not broadcast");
    shape[d] = x == 1 ? y : x;
  }
  return true;
}

static int64_t bcast_index(const oval *v, int nd, const int64_t *shape, int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t c = flat % shape[d];
    flat /= shape[d];
    int dv = d - (nd - v->ndim);
    if (dv < 0) continue;
    if (v->shape[dv] != 1) idx += c * stride;
    stride *= v->shape[dv];
  }
  return idx;
}

typedef enum { I_ADD, I_SUB, I_MUL, I_DIV, I_EQ } int_op;

static bool int_binary(onode *n, int_op op) {
  const oval *a = n->in[0], *b = n->in[1];
  int nd;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  if (!broadcast_shape(n, a, b, &nd, shape)) return false;
  int64_t c = onnx_checked_numel(n, "the result", nd, shape, 8);
  if (c < 0) return false;
  int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(c + 1));
  for (int64_t k = 0; k < c; k++) {
    int64_t x0 = a->i[bcast_index(a, nd, shape, k)], x1 = b->i[bcast_index(b, nd, shape, k)];
    switch (op) {
    case I_ADD: y[k] = (int64_t)((uint64_t)x0 + (uint64_t)x1); break;
    case I_SUB: y[k] = (int64_t)((uint64_t)x0 - (uint64_t)x1); break;
    case I_MUL: y[k] = (int64_t)((uint64_t)x0 * (uint64_t)x1); break;
    case I_DIV:
      if (x1 == 0 || (x0 == INT64_MIN && x1 == -1)) return onnx_fail(n, "integer division by zero");
      y[k] = x0 / x1;
      break;
    case I_EQ: y[k] = x0 == x1; break;
    }
  }
  return onnx_set_out_ints(n, 0, nd, shape, y);
}

/* ---- elementwise --------------------------------------------------------------- */

static bool both_int(const onode *n) {
  return n->n_in == 2 && n->in[0] && n->in[1] && n->in[0]->is_int && n->in[1]->is_int;
}

/* Before opset 7 Add, Sub, Mul and Div broadcast only with broadcast 1,
 * by the old limited rule: B's shape a suffix of A's (or placed at axis),
 * or B one element. Taken where numpy broadcasting gives the same: B a
 * suffix (axis absent or at that position) or one element of rank <= A's;
 * without broadcast the shapes must be equal. */
static bool old_broadcast(onode *n) {
  int64_t bc, axis;
  if (n->opset >= 7) return no_attrs(n);
  if (!onnx_check_attrs(n, " axis broadcast ") || !onnx_attr_int(n, "broadcast", 0, &bc) ||
      !onnx_attr_int(n, "axis", INT64_MIN, &axis))
    return false;
  const oval *a = n->in[0], *b = n->in[1];
  int ra = a->ndim, rb = b->ndim;
  bool same = ra == rb && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)ra) == 0;
  if (!bc) {
    if (axis != INT64_MIN) return onnx_fail(n, "axis without broadcast");
    if (!same) return onnx_fail(n, "the shapes differ and broadcast is 0");
    return true;
  }
  bool suffix = rb <= ra && memcmp(a->shape + ra - rb, b->shape, sizeof(int64_t) * (size_t)rb) == 0;
  if (axis != INT64_MIN && axis != ra - rb && !(axis < 0 && axis + ra == ra - rb))
    return onnx_fail(n, "broadcast with axis %lld (B not aligned with A's last axes) is not "
                        "supported", (long long)axis);
  if (!suffix && !(rb <= ra && onnx_numel(rb, b->shape) == 1))
    return onnx_fail(n, "broadcast 1 with B's shape not a suffix of A's is not supported");
  return true;
}

/* The ONNX shape of a broadcast float result (ranks may be 0). */
static bool binary(onode *n, mlc_gop op, int_op iop) {
  if (!old_broadcast(n)) return false;
  if (both_int(n)) return int_binary(n, iop);
  mlc_gvar *args[2] = {onnx_var(n, 0), onnx_var(n, 1)};
  if (!args[0] || !args[1]) return false;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  mlc_gvar *y = onnx_emit(n, NULL, op, &a, 2, args);
  if (!y) return false;
  int nd;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  if (!broadcast_shape(n, n->in[0], n->in[1], &nd, shape)) return false;
  return onnx_set_out(n, 0, y, nd, shape);
}

static bool cv_equal(onode *n) {
  if (!no_attrs(n)) return false;
  if (!both_int(n)) return onnx_fail(n, "only on integer constants (shape arithmetic)");
  return int_binary(n, I_EQ);
}

/* A unary op with attributes already in a. */
static bool unary_with(onode *n, mlc_gop op, const mlc_gattrs *a) {
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *y = onnx_emit(n, NULL, op, a, 1, &x);
  if (!y) return false;
  return onnx_set_out(n, 0, y, n->in[0]->ndim, n->in[0]->shape);
}

static bool unary(onode *n, mlc_gop op) {
  if (!no_attrs(n)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  return unary_with(n, op, &a);
}


static bool cv_thresholded_relu(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_THRESHOLDED_RELU, &a);
  return onnx_check_attrs(n, " alpha ") && onnx_attr_float(n, "alpha", 1, &a.alpha) &&
         unary_with(n, MLC_GOP_THRESHOLDED_RELU, &a);
}

/* Shrink: the graph's shrink, alpha lambd and beta bias. */
static bool cv_shrink(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_SHRINK, &a);
  if (!onnx_check_attrs(n, " bias lambd ") || !onnx_attr_float(n, "lambd", 0.5, &a.alpha) ||
      !onnx_attr_float(n, "bias", 0, &a.beta))
    return false;
  if (!(a.alpha >= 0)) return onnx_fail(n, "lambd %g is negative", a.alpha);
  return unary_with(n, MLC_GOP_SHRINK, &a);
}

static bool cv_leaky_relu(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_LEAKY_RELU, &a);
  return onnx_check_attrs(n, " alpha ") && onnx_attr_float(n, "alpha", 0.01, &a.alpha) &&
         unary_with(n, MLC_GOP_LEAKY_RELU, &a);
}

static bool cv_hard_sigmoid(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_HARD_SIGMOID, &a);
  return onnx_check_attrs(n, " alpha beta ") && onnx_attr_float(n, "alpha", 0.2, &a.alpha) &&
         onnx_attr_float(n, "beta", 0.5, &a.beta) && unary_with(n, MLC_GOP_HARD_SIGMOID, &a);
}

/* A scalar float constant from input k (Clip bounds, Pow exponent). */
static bool scalar_input(const onode *n, int k, double *out) {
  int64_t c;
  const float *f = onnx_floats(n, k, &c);
  if (!f) return false;
  if (c != 1) return onnx_fail(n, "input %d must be a single value", k);
  *out = f[0];
  return true;
}

/* Clip: bounds as attributes before opset 11, as constant inputs since. */
static bool cv_clip(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CLIP, &a);
  if (!onnx_check_attrs(n, n->opset < 11 ? " min max " : " ")) return false;
  if (n->opset < 11) {
    if (!onnx_attr_float(n, "min", -INFINITY, &a.lo) || !onnx_attr_float(n, "max", INFINITY, &a.hi))
      return false;
  } else {
    if (in_val(n, 1) && !scalar_input(n, 1, &a.lo)) return false;
    if (in_val(n, 2) && !scalar_input(n, 2, &a.hi)) return false;
  }
  return unary_with(n, MLC_GOP_CLIP, &a);
}

/* in[k], an integer constant, as a float constant (Pow's exponent). */
static bool int_input_as_float(onode *n, int k) {
  int64_t c;
  const int64_t *iv = onnx_ints(n, k, &c);
  if (!iv) return false;
  oval *f = mlc_arena_alloc(n->arena, sizeof *f);
  *f = *n->in[k];
  f->is_int = false;
  f->i = NULL;
  mlc_gtype t = {MLC_FLOAT32, f->ndim ? f->ndim : 1, {1}};
  memcpy(t.shape, f->shape, sizeof(int64_t) * (size_t)f->ndim);
  f->var = onnx_new_const(n, "exponent", &t);
  for (int64_t j = 0; j < c; j++) f->var->data[j] = (float)iv[j];
  n->in[k] = f;
  return true;
}

/* Pow: a constant scalar exponent becomes power (multiplies for 2 and 3,
 * sqrt for 0.5); any other exponent (a tensor, a runtime value) the
 * elementwise pow with broadcasting. */
static bool cv_pow(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_POWER, &a);
  if (!no_attrs(n)) return false;
  const oval *e = in_val(n, 1);
  if (!e || !n->in[0]) return onnx_fail(n, "an input is missing");
  /* a one-element exponent of higher rank than x broadcasts x up: binary */
  if (onnx_numel(e->ndim, e->shape) == 1 && e->ndim <= in_rank(n, 0) &&
      (e->is_int || onnx_const_float(e))) {
    if (e->is_int) a.exponent = (double)e->i[0];
    else if (!scalar_input(n, 1, &a.exponent)) return false;
    return unary_with(n, MLC_GOP_POWER, &a);
  }
  if (e->is_int && !int_input_as_float(n, 1)) return false;
  /* the exponent is float now, so binary never takes its integer path */
  return binary(n, MLC_GOP_POW, I_EQ);
}

/* Max, Min, Sum: variadic, folded pairwise left to right; last names the
 * final step's suffix (NULL: the node's output). Its ONNX shape in
 * shape. */
static mlc_gvar *variadic_fold(onode *n, mlc_gop op, const char *last, oval *shape_out) {
  mlc_gvar *acc = onnx_var(n, 0);
  if (!acc) return NULL;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  oval shape = *n->in[0];
  for (int k = 1; k < n->n_in; k++) {
    mlc_gvar *args[2] = {acc, onnx_var(n, k)};
    if (!args[1]) return NULL;
    char sfx[16];
    snprintf(sfx, sizeof sfx, "acc%d", k);
    if (!(acc = onnx_emit(n, k == n->n_in - 1 ? last : sfx, op, &a, 2, args))) return NULL;
    int nd;
    if (!broadcast_shape(n, &shape, n->in[k], &nd, shape.shape)) return NULL;
    shape.ndim = nd;
  }
  *shape_out = shape;
  return acc;
}

static bool variadic(onode *n, mlc_gop op) {
  oval shape;
  if (!no_attrs(n)) return false;
  mlc_gvar *acc = variadic_fold(n, op, NULL, &shape);
  if (!acc) return false;
  if (n->n_in == 1 && !(acc = onnx_reshape(n, NULL, acc, acc->type.ndim, acc->type.shape)))
    return false;
  return onnx_set_out(n, 0, acc, shape.ndim, shape.shape);
}


static mlc_gvar *scalar_const(const onode *n, const char *sfx, double v);

/* Mean: the sum divided by the number of inputs. */
static bool cv_mean(onode *n) {
  oval shape;
  if (!no_attrs(n)) return false;
  mlc_gvar *acc = variadic_fold(n, MLC_GOP_ADD, "sum", &shape);
  if (!acc) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_DIVIDE, &a);
  mlc_gvar *args[2] = {acc, scalar_const(n, "count", n->n_in)};
  mlc_gvar *y = onnx_emit(n, NULL, MLC_GOP_DIVIDE, &a, 2, args);
  if (!y) return false;
  return onnx_set_out(n, 0, y, shape.ndim, shape.shape);
}

/* ---- softmax ------------------------------------------------------------------ */

static mlc_gvar *transpose(const onode *n, const char *sfx, mlc_gvar *x, int nd, const int *perm) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_TRANSPOSE, &a);
  a.n_ints = nd;
  for (int d = 0; d < nd; d++) a.ints[d] = perm[d];
  return onnx_emit(n, sfx, MLC_GOP_TRANSPOSE, &a, 1, &x);
}

/* Softmax, LogSoftmax and Hardmax over `axis`: since opset 13 that one axis (the
 * graph op's axis); before, over the 2-D coercion [prod(:axis),
 * prod(axis:)], as the op over the last axis of that reshape. */
static bool softmax_like(onode *n, mlc_gop op) {
  int64_t axis;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", n->opset < 13 ? 1 : -1, &axis))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (in_rank(n, 0) == 0) return onnx_fail(n, "the input is a scalar (no axis)");
  int nd = x->type.ndim, ax = 0;
  if (!norm_axis(n, axis, nd, &ax)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  mlc_gvar *y;
  if (ax == nd - 1 || n->opset >= 13) {
    a.axis = ax;
    y = onnx_emit(n, NULL, op, &a, 1, &x);
  } else {
    int64_t two[2] = {onnx_numel(ax, x->type.shape), onnx_numel(nd - ax, x->type.shape + ax)};
    mlc_gvar *x2 = onnx_reshape(n, "2d", x, 2, two);
    a.axis = 1;
    mlc_gvar *s = x2 ? onnx_emit(n, "softmax", op, &a, 1, &x2) : NULL;
    y = s ? onnx_reshape(n, NULL, s, nd, x->type.shape) : NULL;
  }
  return set_var(n, 0, y);
}


/* ---- matmul, gemm --------------------------------------------------------------- */

/* numpy matmul: a 2-D right side shared by every batch (as one 2-D
 * matmul), equal batch dims (flattened to one), or batch dims that
 * broadcast; 1-D operands gain then lose a dim. */
static bool cv_matmul(onode *n) {
  if (!no_attrs(n)) return false;
  mlc_gvar *a = onnx_var(n, 0), *b = onnx_var(n, 1);
  if (!a || !b) return false;
  int ra = in_rank(n, 0), rb = in_rank(n, 1);
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
    if (d == ro - 2 && in_rank(n, 0) == 1) continue;
    if (d == ro - 1 && b_vec) continue;
    final[rf++] = out[d];
  }
  if (rf == 0) return onnx_fail(n, "a scalar result is not supported");
  if (!y || !(y = onnx_reshape(n, NULL, y, rf, final))) return false;
  return onnx_set_out(n, 0, y, rf, final);
}

static mlc_gvar *scalar_const(const onode *n, const char *sfx, double v) {
  mlc_gtype t = {MLC_FLOAT32, 1, {1}};
  mlc_gvar *c = onnx_new_const(n, sfx, &t);
  c->data[0] = (float)v;
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
static bool cv_gemm(onode *n) {
  int64_t ta, tb;
  double alpha, beta;
  if (!onnx_check_attrs(n, n->opset < 7 ? " alpha beta broadcast transA transB "
                                          : " alpha beta transA transB ") ||
      !onnx_attr_int(n, "transA", 0, &ta) || !onnx_attr_int(n, "transB", 0, &tb) ||
      !onnx_attr_float(n, "alpha", 1, &alpha) || !onnx_attr_float(n, "beta", 1, &beta))
    return false;
  mlc_gvar *a = onnx_var(n, 0), *b = onnx_var(n, 1);
  if (!a || !b) return false;
  if (in_rank(n, 0) != 2 || in_rank(n, 1) != 2) return onnx_fail(n, "A and B must be 2-D");
  if (in_val(n, 2) && !gemm_c_old(n, a->type.shape[ta ? 1 : 0], b->type.shape[tb ? 0 : 1]))
    return false;
  int perm[2] = {1, 0};
  if (ta && !(a = transpose(n, "at", a, 2, perm))) return false;
  mlc_gattrs at;
  mlc_gattrs_init(MLC_GOP_MATMUL, &at);
  mlc_gvar *args[2] = {a, b};
  bool last = alpha == 1 && (!in_val(n, 2));
  mlc_gvar *y = onnx_emit(n, last ? NULL : "mm", tb ? MLC_GOP_DENSE : MLC_GOP_MATMUL, &at, 2, args);
  if (!y) return false;
  mlc_gattrs e;
  mlc_gattrs_init(MLC_GOP_MULTIPLY, &e);
  if (alpha != 1) {
    mlc_gvar *m2[2] = {y, scalar_const(n, "alpha", alpha)};
    if (!(y = onnx_emit(n, in_val(n, 2) ? "scaled" : NULL, MLC_GOP_MULTIPLY, &e, 2, m2)))
      return false;
  }
  if (in_val(n, 2)) {
    mlc_gvar *c = onnx_var(n, 2);
    if (!c) return false;
    if (beta != 1) {
      mlc_gvar *m2[2] = {c, scalar_const(n, "beta", beta)};
      if (!(c = onnx_emit(n, "c", MLC_GOP_MULTIPLY, &e, 2, m2))) return false;
    }
    mlc_gvar *s2[2] = {y, c};
    mlc_gvar *sum = onnx_emit(n, NULL, MLC_GOP_ADD, &e, 2, s2);
    if (!sum) return false;
    if (!mlc_gtype_equal(&sum->type, &y->type)) return onnx_fail(n, "C does not broadcast to A B");
    y = sum;
  }
  return set_var(n, 0, y);
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
  if (!y || sp != 1) return set_var(n, 0, y);
  MLC_ASSERT(y->type.ndim == 4 && y->type.shape[2] == 1);
  int64_t s[3] = {y->type.shape[0], y->type.shape[1], y->type.shape[3]};
  return set_var(n, 0, onnx_reshape(n, NULL, y, 3, s));
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
static bool cv_conv(onode *n) {
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
  if (in_val(n, 2) && !(args[k++] = onnx_var(n, 2))) return false;
  return emit_window(n, MLC_GOP_CONV2D, sp, &a, k, args);
}

static bool cv_max_pool(onode *n) {
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
static bool cv_conv_transpose(onode *n) {
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
  if (in_val(n, 2) && !(args[k++] = onnx_var(n, 2))) return false;
  return emit_window(n, MLC_GOP_CONV_TRANSPOSE2D, sp, &a, k, args);
}

static bool cv_avg_pool(onode *n) {
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
  if (!no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (x->type.ndim < 3) return onnx_fail(n, "the input needs spatial dimensions (N, C, ...)");
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  if (op == MLC_GOP_GLOBAL_AVG_POOL2D && x->type.ndim == 4)
    return set_var(n, 0, onnx_emit(n, NULL, op, &a, 1, &x));
  if (op == MLC_GOP_GLOBAL_AVG_POOL2D) op = MLC_GOP_REDUCE_MEAN;
  mlc_gattrs_init(op, &a);
  a.keepdims = true;
  for (int d = 2; d < x->type.ndim; d++) a.ints[a.n_ints++] = d;
  return set_var(n, 0, onnx_emit(n, NULL, op, &a, 1, &x));
}


/* ---- reductions ----------------------------------------------------------------- */

/* The Reduce* family as an elementwise op before the reduction (pre), the
 * reduction, and one after (post); NO_OP: none. ReduceMin is
 * -max(-x). */
enum { NO_OP = -1 };

typedef struct reduce_form {
  const char *name;
  int pre, red, post; /* mlc_gop or NO_OP */
} reduce_form;

static const reduce_form reduce_forms[] = {
    {"ReduceSum", NO_OP, MLC_GOP_REDUCE_SUM, NO_OP},
    {"ReduceMean", NO_OP, MLC_GOP_REDUCE_MEAN, NO_OP},
    {"ReduceMax", NO_OP, MLC_GOP_REDUCE_MAX, NO_OP},
    {"ReduceMin", MLC_GOP_NEGATIVE, MLC_GOP_REDUCE_MAX, MLC_GOP_NEGATIVE},
    {"ReduceSumSquare", MLC_GOP_MULTIPLY, MLC_GOP_REDUCE_SUM, NO_OP},
    {"ReduceL1", MLC_GOP_ABS, MLC_GOP_REDUCE_SUM, NO_OP},
    {"ReduceL2", MLC_GOP_MULTIPLY, MLC_GOP_REDUCE_SUM, MLC_GOP_SQRT},
    {"ReduceLogSum", NO_OP, MLC_GOP_REDUCE_SUM, MLC_GOP_LOG},
    {"ReduceLogSumExp", MLC_GOP_EXP, MLC_GOP_REDUCE_SUM, MLC_GOP_LOG}, /* see log_sum_exp */
    {"ReduceProd", NO_OP, MLC_GOP_REDUCE_PROD, NO_OP},
};

/* The reduced axes: the axes attribute, or (ReduceSum since opset 13;
 * every Reduce op since 18) a constant second input. Empty with
 * noop_with_empty_axes: *noop. */
static bool reduce_axes(onode *n, bool axes_input, mlc_gattrs *a, bool *noop) {
  int64_t keep, noop_empty;
  *noop = false;
  if (!onnx_check_attrs(n, axes_input ? " keepdims noop_with_empty_axes " : " axes keepdims ") ||
      !onnx_attr_int(n, "keepdims", 1, &keep) ||
      !onnx_attr_int(n, "noop_with_empty_axes", 0, &noop_empty))
    return false;
  a->keepdims = keep != 0;
  int c = 0;
  if (!axes_input) {
    if (n->n_in > 1) return onnx_fail(n, "axes as an input need opset 13 (ReduceSum) or 18");
    if (!onnx_attr_ints(n, "axes", MLC_GRAPH_MAX_DIMS, &c, a->ints)) return false;
  } else if (in_val(n, 1)) {
    int64_t cnt;
    const int64_t *v = onnx_ints(n, 1, &cnt);
    if (!v) return false;
    if (cnt > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "too many axes");
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
    c = (int)cnt;
  }
  a->n_ints = c < 0 ? 0 : c;
  *noop = a->n_ints == 0 && noop_empty;
  return true;
}

static mlc_gvar *reduce_step(onode *n, const char *sfx, int o, mlc_gvar *x) {
  mlc_gop op = (mlc_gop)o;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  mlc_gvar *args[2] = {x, x};
  return onnx_emit(n, sfx, op, &a, op == MLC_GOP_MULTIPLY ? 2 : 1, args);
}

static mlc_gvar *ew(onode *n, const char *sfx, mlc_gop op, mlc_gvar *a, mlc_gvar *b);

/* ReduceLogSumExp as m + log(sum(exp(x - m))) with m the max over the
 * axes (kept): log(sum(exp(x))) overflows from x = 89 on. nd, shape: the
 * result's ONNX rank and shape; with no axes and noop_with_empty_axes,
 * x itself. */
static bool log_sum_exp(onode *n, mlc_gvar *x, const mlc_gattrs *axes, bool noop, int nd,
                        const int64_t *shape) {
  if (noop) {
    mlc_gvar *y = onnx_reshape(n, NULL, x, x->type.ndim, x->type.shape);
    return y && onnx_set_out(n, 0, y, in_rank(n, 0), n->in[0]->shape);
  }
  mlc_gattrs mk = *axes, r = *axes;
  mk.keepdims = true;
  r.keepdims = axes->keepdims || nd == 0;
  mlc_gvar *m = onnx_emit(n, "max", MLC_GOP_REDUCE_MAX, &mk, 1, &x);
  mlc_gvar *e = ew(n, "exp", MLC_GOP_EXP, ew(n, "shifted", MLC_GOP_SUBTRACT, x, m), NULL);
  mlc_gvar *s = e ? onnx_emit(n, "sum", MLC_GOP_REDUCE_SUM, &r, 1, &e) : NULL;
  mlc_gvar *l = ew(n, "log", MLC_GOP_LOG, s, NULL);
  mlc_gvar *mo = l ? onnx_reshape(n, "max_out", m, l->type.ndim, l->type.shape) : NULL;
  mlc_gvar *y = ew(n, nd ? NULL : "lse", MLC_GOP_ADD, l, mo);
  int64_t one = 1;
  if (y && !nd) y = onnx_reshape(n, NULL, y, 1, &one);
  return y && onnx_set_out(n, 0, y, nd, shape);
}

static bool cv_reduce(onode *n) {
  const reduce_form *f = NULL;
  for (int i = 0; i < MLC_COUNTOF(reduce_forms); i++)
    if (strcmp(reduce_forms[i].name, n->p->op_type) == 0) f = &reduce_forms[i];
  MLC_ASSERT(f);
  mlc_gattrs a;
  mlc_gattrs_init((mlc_gop)f->red, &a);
  bool noop;
  bool axes_input = strcmp(f->name, "ReduceSum") == 0 ? n->opset >= 13 : n->opset >= 18;
  if (!reduce_axes(n, axes_input, &a, &noop)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (in_rank(n, 0) == 0) return onnx_fail(n, "reducing a scalar is not supported");
  if (noop && strcmp(f->name, "ReduceLogSumExp") == 0) return log_sum_exp(n, x, &a, true, 0, NULL);
  if (noop) { /* the input unchanged; the pre and post ops still apply */
    mlc_gvar *y = x;
    if (f->pre != NO_OP && !(y = reduce_step(n, "pre", f->pre, y))) return false;
    if (f->post != NO_OP && !(y = reduce_step(n, "post", f->post, y))) return false;
    if (y == x && !(y = onnx_reshape(n, NULL, x, x->type.ndim, x->type.shape))) return false;
    return onnx_set_out(n, 0, y, in_rank(n, 0), n->in[0]->shape);
  }
  bool red[MLC_GRAPH_MAX_DIMS];
  mlc_error e;
  if (!mlc_gop_reduced_axes((mlc_gop)f->red, &a, x->type.ndim, red, &e)) return onnx_fail(n, "%s", e.msg);
  int nd = 0;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < x->type.ndim; d++)
    if (!red[d]) shape[nd++] = x->type.shape[d];
    else if (a.keepdims) shape[nd++] = 1;
  if (strcmp(f->name, "ReduceLogSumExp") == 0) return log_sum_exp(n, x, &a, false, nd, shape);
  mlc_gvar *y = x;
  if (f->pre != NO_OP && !(y = reduce_step(n, "pre", f->pre, y))) return false;
  mlc_gattrs r = a;
  if (nd == 0) { /* to a scalar: keep one dim for the graph, rank 0 for ONNX */
    r.keepdims = true;
  }
  mlc_gvar *args[1] = {y};
  y = onnx_emit(n, f->post == NO_OP && nd ? NULL : "red", (mlc_gop)f->red, &r, 1, args);
  if (!y) return false;
  if (nd == 0) {
    int64_t one = 1;
    if (!(y = onnx_reshape(n, f->post == NO_OP ? NULL : "flat", y, 1, &one))) return false;
  }
  if (f->post != NO_OP && !(y = reduce_step(n, NULL, f->post, y))) return false;
  if (y == x) return false;
  return onnx_set_out(n, 0, y, nd, shape);
}

/* Inference batch norm with constant statistics: y = x * s + t per
 * channel, s = scale / sqrt(var + eps), t = bias - mean * s. */
static bool cv_batch_norm(onode *n) {
  /* before opset 7, is_test 1 marks inference (its default 0: training) */
  if (!onnx_check_attrs(n, n->opset < 7 ? " epsilon is_test momentum spatial "
                                        : " epsilon momentum training_mode spatial "))
    return false;
  double eps;
  int64_t training, spatial, is_test;
  if (!onnx_attr_float(n, "epsilon", 1e-5, &eps) ||
      !onnx_attr_int(n, "training_mode", 0, &training) ||
      !onnx_attr_int(n, "is_test", 0, &is_test) || !onnx_attr_int(n, "spatial", 1, &spatial))
    return false;
  if (training) return onnx_fail(n, "training_mode is not supported (inference only)");
  if (n->opset < 7 && !is_test)
    return onnx_fail(n, "is_test 0 (training, the default before opset 7) is not supported "
                        "(inference only)");
  if (!spatial) return onnx_fail(n, "spatial 0 is not supported");
  for (size_t k = 1; k < n->p->n_output; k++)
    if (n->p->output[k] && *n->p->output[k])
      return onnx_fail(n, "the running statistics outputs are not supported (inference only)");
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (x->type.ndim < 2) return onnx_fail(n, "the input needs a channel dimension");
  int64_t C = x->type.shape[1], c[4];
  const float *p[4];
  for (int k = 0; k < 4; k++)
    if (!(p[k] = onnx_floats(n, k + 1, &c[k]))) return false;
    else if (c[k] != C) return onnx_fail(n, "input %d must have %lld values", k + 1, (long long)C);
  mlc_gtype t = {MLC_FLOAT32, x->type.ndim - 1, {C}};
  for (int d = 1; d < t.ndim; d++) t.shape[d] = 1;
  mlc_gvar *s = onnx_new_const(n, "scale", &t), *b = onnx_new_const(n, "shift", &t);
  for (int64_t i = 0; i < C; i++) {
    double si = p[0][i] / sqrt((double)p[3][i] + eps);
    s->data[i] = (float)si;
    b->data[i] = (float)(p[1][i] - p[2][i] * si);
  }
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_MULTIPLY, &a);
  mlc_gvar *m2[2] = {x, s};
  mlc_gvar *xs = onnx_emit(n, "scaled", MLC_GOP_MULTIPLY, &a, 2, m2);
  if (!xs) return false;
  mlc_gvar *a2[2] = {xs, b};
  return set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_ADD, &a, 2, a2));
}

/* ---- layer norm --------------------------------------------------------------- */

static bool has_out(const onode *n, size_t k) {
  return k < n->p->n_output && n->p->output[k] && *n->p->output[k];
}

/* LayerNormalization's optional outputs over x2 (the input flattened to
 * [..., inner], normalized over axis ax): Mean (output 1) and InvStdDev =
 * 1 / sqrt(mean((x - Mean)^2) + eps) (output 2), with the normalized axes
 * kept as 1 in ONNX's shape [d0, ..., d(axis-1), 1, ..., 1] of rank nd. */
static bool layer_norm_stats(onode *n, mlc_gvar *x2, int ax, int nd, double eps) {
  int64_t st[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < nd; d++) st[d] = d < ax ? x2->type.shape[d] : 1;
  mlc_gattrs r, e;
  mlc_gattrs_init(MLC_GOP_REDUCE_MEAN, &r);
  r.keepdims = true;
  r.n_ints = 1;
  r.ints[0] = ax;
  mlc_gattrs_init(MLC_GOP_ADD, &e);
  mlc_gvar *mean = onnx_emit(n, "mean", MLC_GOP_REDUCE_MEAN, &r, 1, &x2);
  if (!mean) return false;
  if (has_out(n, 1) && !set_var(n, 1, onnx_reshape(n, "mean_out", mean, nd, st))) return false;
  if (!has_out(n, 2)) return true;
  mlc_gvar *dv = onnx_emit(n, "dev", MLC_GOP_SUBTRACT, &e, 2, (mlc_gvar *[]){x2, mean});
  mlc_gvar *sq = dv ? onnx_emit(n, "dev2", MLC_GOP_MULTIPLY, &e, 2, (mlc_gvar *[]){dv, dv}) : NULL;
  mlc_gvar *var = sq ? onnx_emit(n, "var", MLC_GOP_REDUCE_MEAN, &r, 1, &sq) : NULL;
  mlc_gvar *ve = var ? onnx_emit(n, "var_eps", MLC_GOP_ADD, &e, 2,
                                 (mlc_gvar *[]){var, scalar_const(n, "eps", eps)})
                     : NULL;
  mlc_gvar *sd = ve ? onnx_emit(n, "std", MLC_GOP_SQRT, &e, 1, &ve) : NULL;
  mlc_gvar *inv = sd ? onnx_emit(n, "inv_std", MLC_GOP_DIVIDE, &e, 2,
                                 (mlc_gvar *[]){scalar_const(n, "one", 1), sd})
                     : NULL;
  return inv && set_var(n, 2, onnx_reshape(n, "inv_std_out", inv, nd, st));
}

/* Over the trailing dims from axis: flattened into one when there are
 * several. */
static bool cv_layer_norm(onode *n) {
  int64_t axis, stash;
  double eps;
  if (!onnx_check_attrs(n, " axis epsilon stash_type ") || !onnx_attr_int(n, "axis", -1, &axis) ||
      !onnx_attr_float(n, "epsilon", 1e-5, &eps) || !onnx_attr_int(n, "stash_type", 1, &stash))
    return false;
  mlc_gvar *x = onnx_var(n, 0), *g = onnx_var(n, 1), *b = in_val(n, 2) ? onnx_var(n, 2) : NULL;
  if (!x || !g || (in_val(n, 2) && !b)) return false;
  if (in_rank(n, 0) == 0) return onnx_fail(n, "the input is a scalar (no axis)");
  int nd = x->type.ndim, ax = 0;
  if (!norm_axis(n, axis, nd, &ax)) return false;
  int64_t inner = onnx_numel(nd - ax, x->type.shape + ax);
  if (mlc_gtype_numel(&g->type) != inner || (b && mlc_gtype_numel(&b->type) != inner))
    return onnx_fail(n, "Scale and B must have one value per normalized element");
  int64_t flat[MLC_GRAPH_MAX_DIMS];
  memcpy(flat, x->type.shape, sizeof flat);
  flat[ax] = inner;
  mlc_gvar *x2 = onnx_reshape(n, "x", x, ax + 1, flat);
  mlc_gvar *g2 = onnx_reshape(n, "scale", g, 1, &inner);
  mlc_gvar *b2 = b ? onnx_reshape(n, "bias", b, 1, &inner) : NULL;
  if (!x2 || !g2 || (b && !b2)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_LAYERNORM, &a);
  a.eps = eps;
  mlc_gvar *args[3] = {x2, g2, b2};
  mlc_gvar *y = onnx_emit(n, "ln", MLC_GOP_LAYERNORM, &a, b ? 3 : 2, args);
  if (!y || !set_var(n, 0, onnx_reshape(n, NULL, y, nd, x->type.shape))) return false;
  return !(has_out(n, 1) || has_out(n, 2)) || layer_norm_stats(n, x2, ax, nd, eps);
}

/* InstanceNormalization: per (n, c), over the spatial axes,
 * y = scale[c] (x - mean) / sqrt(var + eps) + B[c] with the biased
 * variance mean((x - mean)^2). */
static bool cv_instance_norm(onode *n) {
  double eps;
  if (!onnx_check_attrs(n, " epsilon ") || !onnx_attr_float(n, "epsilon", 1e-5, &eps)) return false;
  mlc_gvar *x = onnx_var(n, 0), *g = onnx_var(n, 1), *b = onnx_var(n, 2);
  if (!x || !g || !b) return false;
  int nd = in_rank(n, 0);
  if (nd < 3) return onnx_fail(n, "the input needs spatial dimensions (N, C, ...)");
  int64_t C = x->type.shape[1];
  if (mlc_gtype_numel(&g->type) != C || mlc_gtype_numel(&b->type) != C)
    return onnx_fail(n, "scale and B must have C = %lld values", (long long)C);
  int64_t cs[MLC_GRAPH_MAX_DIMS];
  cs[0] = C;
  for (int d = 1; d < nd - 1; d++) cs[d] = 1;
  mlc_gvar *gc = onnx_reshape(n, "scale", g, nd - 1, cs), *bc = onnx_reshape(n, "bias", b, nd - 1, cs);
  mlc_gattrs r, e;
  mlc_gattrs_init(MLC_GOP_REDUCE_MEAN, &r);
  r.keepdims = true;
  for (int d = 2; d < nd; d++) r.ints[r.n_ints++] = d;
  mlc_gattrs_init(MLC_GOP_ADD, &e);
  mlc_gvar *mean = onnx_emit(n, "mean", MLC_GOP_REDUCE_MEAN, &r, 1, &x);
  mlc_gvar *dv = mean ? onnx_emit(n, "dev", MLC_GOP_SUBTRACT, &e, 2, (mlc_gvar *[]){x, mean}) : NULL;
  mlc_gvar *sq = dv ? onnx_emit(n, "dev2", MLC_GOP_MULTIPLY, &e, 2, (mlc_gvar *[]){dv, dv}) : NULL;
  mlc_gvar *var = sq ? onnx_emit(n, "var", MLC_GOP_REDUCE_MEAN, &r, 1, &sq) : NULL;
  mlc_gvar *ve = var ? onnx_emit(n, "var_eps", MLC_GOP_ADD, &e, 2,
                                 (mlc_gvar *[]){var, scalar_const(n, "eps", eps)})
                     : NULL;
  mlc_gvar *sd = ve ? onnx_emit(n, "std", MLC_GOP_SQRT, &e, 1, &ve) : NULL;
  mlc_gvar *nv = sd ? onnx_emit(n, "normed", MLC_GOP_DIVIDE, &e, 2, (mlc_gvar *[]){dv, sd}) : NULL;
  mlc_gvar *sc = nv && gc ? onnx_emit(n, "scaled", MLC_GOP_MULTIPLY, &e, 2, (mlc_gvar *[]){nv, gc}) : NULL;
  return set_var(n, 0, sc && bc ? onnx_emit(n, NULL, MLC_GOP_ADD, &e, 2, (mlc_gvar *[]){sc, bc}) : NULL);
}

/* ---- shapes ------------------------------------------------------------------ */

/* Output k has shape (nd, shape): ints reshaped, floats a reshape. */
static bool reshaped(onode *n, int nd, const int64_t *shape) {
  const oval *v = n->in[0];
  int64_t c = onnx_checked_numel(n, "the new shape", nd, shape, v->is_int ? 8 : 4);
  if (c < 0) return false;
  if (c != onnx_numel(v->ndim, v->shape))
    return onnx_fail(n, "the new shape has a different number of elements");
  if (v->is_int) {
    return onnx_set_out_ints(n, 0, nd, shape, v->i);
  }
  if (nd > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  mlc_gvar *y = nd ? onnx_reshape(n, NULL, v->var, nd, shape) : v->var;
  if (!y) return false;
  return onnx_set_out(n, 0, y, nd, shape);
}

static bool cv_reshape(onode *n) {
  int64_t allowzero, c;
  if (!onnx_check_attrs(n, " allowzero ") || !onnx_attr_int(n, "allowzero", 0, &allowzero))
    return false;
  const int64_t *s = onnx_ints(n, 1, &c);
  if (!s) return false;
  if (c > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  const oval *x = n->in[0];
  int64_t shape[MLC_GRAPH_MAX_DIMS], known = 1, total = onnx_numel(x->ndim, x->shape);
  int infer = -1;
  for (int d = 0; d < c; d++) {
    shape[d] = s[d];
    if (s[d] == 0 && !allowzero) {
      if (d >= x->ndim) return onnx_fail(n, "shape entry %d is 0 beyond the input's rank", d);
      shape[d] = x->shape[d];
    }
    if (shape[d] == -1 && infer < 0) infer = d;
    else if (shape[d] < 0) return onnx_fail(n, "bad shape entry %lld", (long long)s[d]);
    else if (mlc_mul_overflow(known, shape[d], &known))
      return onnx_fail(n, "the shape's extents multiply past 2^63");
  }
  if (infer >= 0) {
    if (known == 0 || total % known) return onnx_fail(n, "the shape does not fit the input");
    shape[infer] = total / known;
  }
  return reshaped(n, (int)c, shape);
}

static bool cv_flatten(onode *n) {
  int64_t axis;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", 1, &axis)) return false;
  const oval *x = n->in[0];
  int ax = 0;
  if (axis == x->ndim) ax = x->ndim;
  else if (!norm_axis(n, axis, x->ndim, &ax)) return false;
  int64_t s[2] = {onnx_numel(ax, x->shape), onnx_numel(x->ndim - ax, x->shape + ax)};
  return reshaped(n, 2, s);
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input since. */
static bool axes_of(onode *n, int *count, int64_t *axes) {
  if (n->opset < 13) {
    if (!onnx_check_attrs(n, " axes ") || !onnx_attr_ints(n, "axes", MLC_GRAPH_MAX_DIMS, count, axes))
      return false;
    return true;
  }
  if (!no_attrs(n)) return false;
  *count = -1;
  if (!in_val(n, 1)) return true;
  int64_t c;
  const int64_t *a = onnx_ints(n, 1, &c);
  if (!a) return false;
  if (c > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "too many axes");
  memcpy(axes, a, sizeof(int64_t) * (size_t)c);
  *count = (int)c;
  return true;
}

static bool cv_squeeze(onode *n) {
  int c;
  int64_t axes[MLC_GRAPH_MAX_DIMS];
  if (!axes_of(n, &c, axes)) return false;
  const oval *x = n->in[0];
  bool drop[MLC_GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < c; i++) {
    int ax = 0;
    if (!norm_axis(n, axes[i], x->ndim, &ax)) return false;
    if (x->shape[ax] != 1) return onnx_fail(n, "axis %d has extent %lld, not 1", ax, (long long)x->shape[ax]);
    drop[ax] = true;
  }
  int64_t s[MLC_GRAPH_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!(c < 0 ? x->shape[d] == 1 : drop[d])) s[nd++] = x->shape[d];
  return reshaped(n, nd, s);
}

static bool cv_unsqueeze(onode *n) {
  int c;
  int64_t axes[MLC_GRAPH_MAX_DIMS];
  if (!axes_of(n, &c, axes)) return false;
  if (c < 0) return onnx_fail(n, "axes are required");
  const oval *x = n->in[0];
  int nd = x->ndim + c;
  if (nd > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  bool ins[MLC_GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < c; i++) {
    int ax = 0;
    if (!norm_axis(n, axes[i], nd, &ax)) return false;
    if (ins[ax]) return onnx_fail(n, "axis %d given twice", ax);
    ins[ax] = true;
  }
  int64_t s[MLC_GRAPH_MAX_DIMS];
  for (int d = 0, k = 0; d < nd; d++) s[d] = ins[d] ? 1 : x->shape[k++];
  return reshaped(n, nd, s);
}

static bool cv_transpose(onode *n) {
  int c;
  int64_t perm[MLC_GRAPH_MAX_DIMS];
  if (!onnx_check_attrs(n, " perm ") || !onnx_attr_ints(n, "perm", MLC_GRAPH_MAX_DIMS, &c, perm))
    return false;
  const oval *x = n->in[0];
  if (x->is_int) return onnx_fail(n, "transposing integer tensors is not supported");
  if (x->ndim == 0) return reshaped(n, 0, NULL); /* a scalar stays itself */
  if (c >= 0 && c != x->ndim) return onnx_fail(n, "perm has %d entries for rank %d", c, x->ndim);
  int p[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) p[d] = c < 0 ? x->ndim - 1 - d : (int)perm[d];
  mlc_gvar *v = onnx_var(n, 0);
  return v && set_var(n, 0, transpose(n, NULL, v, x->ndim, p));
}

/* Shape (with start/end since opset 15) of any tensor: its static shape. */
static bool cv_shape(onode *n) {
  int64_t start, end;
  if (!onnx_check_attrs(n, " start end ") || !onnx_attr_int(n, "start", 0, &start) ||
      !onnx_attr_int(n, "end", INT64_MAX, &end))
    return false;
  const oval *x = n->in[0];
  int64_t r = x->ndim;
  start = start < 0 ? start + r : start;
  end = end < 0 ? end + r : end;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  return onnx_set_out_ints(n, 0, 1, &len, x->shape + start);
}

static bool cv_size(onode *n) {
  if (!no_attrs(n)) return false;
  int64_t c = onnx_numel(n->in[0]->ndim, n->in[0]->shape);
  return onnx_set_out_ints(n, 0, 0, NULL, &c);
}

static bool cv_constant(onode *n) {
  if (!onnx_check_attrs(n, " value value_float value_floats value_int value_ints ")) return false;
  const Onnx__AttributeProto *a;
  if ((a = onnx_attr(n, "value"))) {
    if (!a->t) return onnx_fail(n, "attribute \"value\" must be a tensor");
    return onnx_const_tensor(n, a->t, -1, NULL);
  }
  if ((a = onnx_attr(n, "value_int"))) {
    return onnx_set_out_ints(n, 0, 0, NULL, &a->i);
  }
  if ((a = onnx_attr(n, "value_ints"))) {
    int64_t len = (int64_t)a->n_ints;
    return onnx_set_out_ints(n, 0, 1, &len, a->ints ? (const int64_t *)a->ints : &len);
  }
  Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
  t.has_data_type = true;
  t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  int64_t len = 0;
  float one;
  if ((a = onnx_attr(n, "value_float"))) {
    one = a->f;
    t.n_float_data = 1;
    t.float_data = &one;
  } else if ((a = onnx_attr(n, "value_floats"))) {
    len = (int64_t)a->n_floats;
    t.n_float_data = a->n_floats;
    t.float_data = a->floats ? mlc_arena_memdup(n->arena, a->floats, sizeof(float) * a->n_floats) : NULL;
    t.n_dims = 1;
    t.dims = &len;
  } else {
    return onnx_fail(n, "needs a value attribute (sparse values are not supported)");
  }
  return onnx_const_tensor(n, &t, -1, NULL);
}

static bool cv_constant_of_shape(onode *n) {
  if (!onnx_check_attrs(n, " value ")) return false;
  int64_t c;
  const int64_t *s = onnx_ints(n, 0, &c);
  if (!s) return false;
  if (c > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  const Onnx__AttributeProto *a = onnx_attr(n, "value");
  Onnx__TensorProto zero = ONNX__TENSOR_PROTO__INIT;
  float z = 0;
  zero.has_data_type = true;
  zero.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  zero.n_float_data = 1;
  zero.float_data = &z;
  if (a && !a->t) return onnx_fail(n, "attribute \"value\" must be a tensor");
  return onnx_const_tensor(n, a ? a->t : &zero, (int)c, s);
}

/* ---- integer data movement (shape arithmetic) ------------------------------------- */

static bool need_int(onode *n, int k) {
  if (n->in[k] && n->in[k]->is_int) return true;
  return onnx_fail(n, "only on integer constants (shape arithmetic); float input %d is not "
                      "supported", k);
}

/* Gather of float data with constant indices: the graph's gather, the
 * indices as a float constant (whole numbers; negative from the end). */
static bool gather_floats(onode *n, int64_t axis) {
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int64_t c;
  const int64_t *idx = onnx_ints(n, 1, &c);
  if (!idx) return false;
  int ax = 0;
  if (!norm_axis(n, axis, in_rank(n, 0), &ax)) return false;
  int64_t e = x->type.shape[ax];
  const oval *iv = n->in[1];
  mlc_gtype t = {MLC_FLOAT32, iv->ndim ? iv->ndim : 1, {1}};
  memcpy(t.shape, iv->shape, sizeof(int64_t) * (size_t)iv->ndim);
  if (c < 1) return onnx_fail(n, "no indices");
  mlc_gvar *iconst = onnx_new_const(n, "indices", &t);
  for (int64_t k = 0; k < c; k++) {
    if (idx[k] < -e || idx[k] >= e) return onnx_fail(n, "index %lld is out of range", (long long)idx[k]);
    iconst->data[k] = (float)idx[k];
  }
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_GATHER, &a);
  a.axis = ax;
  mlc_gvar *args[2] = {x, iconst};
  mlc_gvar *y = onnx_emit(n, iv->ndim ? NULL : "g", MLC_GOP_GATHER, &a, 2, args);
  if (!y) return false;
  int nd = in_rank(n, 0) - 1 + iv->ndim; /* ONNX rank: a scalar index drops the axis */
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  memcpy(shape, x->type.shape, sizeof(int64_t) * (size_t)ax);
  memcpy(shape + ax, iv->shape, sizeof(int64_t) * (size_t)iv->ndim);
  memcpy(shape + ax + iv->ndim, x->type.shape + ax + 1, sizeof(int64_t) * (size_t)(in_rank(n, 0) - ax - 1));
  if (nd == 0) return onnx_fail(n, "a scalar result is not supported");
  if (!iv->ndim && !(y = onnx_reshape(n, NULL, y, nd, shape))) return false;
  return onnx_set_out(n, 0, y, nd, shape);
}

/* Gather over axis with constant indices (negative count from the end). */
static bool cv_gather(onode *n) {
  int64_t axis, c;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", 0, &axis)) return false;
  if (n->in[0] && !n->in[0]->is_int) return gather_floats(n, axis);
  if (!need_int(n, 0)) return false;
  const oval *x = n->in[0];
  const int64_t *idx = onnx_ints(n, 1, &c);
  if (!idx) return false;
  int ax = 0;
  if (!norm_axis(n, axis, x->ndim, &ax)) return false;
  const oval *iv = n->in[1];
  int nd = x->ndim - 1 + iv->ndim;
  if (nd > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  int64_t shape[MLC_GRAPH_MAX_DIMS], outer = onnx_numel(ax, x->shape),
          inner = onnx_numel(x->ndim - ax - 1, x->shape + ax + 1), e = x->shape[ax];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)ax);
  memcpy(shape + ax, iv->shape, sizeof(int64_t) * (size_t)iv->ndim);
  memcpy(shape + ax + iv->ndim, x->shape + ax + 1, sizeof(int64_t) * (size_t)(x->ndim - ax - 1));
  int64_t count = onnx_checked_numel(n, "the result", nd, shape, 8);
  if (count < 0) return false;
  int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(count + 1));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < c; j++) {
      int64_t k = idx[j] < 0 ? idx[j] + e : idx[j];
      if (k < 0 || k >= e) return onnx_fail(n, "index %lld is out of range", (long long)idx[j]);
      for (int64_t i = 0; i < inner; i++)
        y[(o * c + j) * inner + i] = x->i[(o * e + k) * inner + i];
    }
  return onnx_set_out_ints(n, 0, nd, shape, y);
}

/* Concat of float tensors: the graph's concat. */
static bool concat_floats(onode *n, int64_t axis) {
  mlc_gvar *args[MLC_GRAPH_MAX_ARGS];
  if (n->n_in > MLC_GRAPH_MAX_ARGS) return onnx_fail(n, "more than %d inputs", MLC_GRAPH_MAX_ARGS);
  for (int k = 0; k < n->n_in; k++)
    if (!(args[k] = onnx_var(n, k))) return false;
  if (in_rank(n, 0) == 0) return onnx_fail(n, "concatenating scalars");
  int ax = 0;
  if (!norm_axis(n, axis, in_rank(n, 0), &ax)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CONCAT, &a);
  a.axis = ax;
  return set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_CONCAT, &a, n->n_in, args));
}

static bool cv_concat(onode *n) {
  int64_t axis;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", INT64_MIN, &axis)) return false;
  if (axis == INT64_MIN) return onnx_fail(n, "axis is required");
  for (int k = 0; k < n->n_in; k++)
    if (!n->in[k]) return onnx_fail(n, "input %d is missing", k);
  if (!n->in[0]->is_int) return concat_floats(n, axis);
  for (int k = 0; k < n->n_in; k++)
    if (!need_int(n, k)) return false;
  const oval *x = n->in[0];
  int ax = 0;
  if (!norm_axis(n, axis, x->ndim, &ax)) return false;
  int64_t shape[MLC_GRAPH_MAX_DIMS], total = 0;
  memcpy(shape, x->shape, sizeof shape);
  for (int k = 0; k < n->n_in; k++) {
    const oval *v = n->in[k];
    if (v->ndim != x->ndim) return onnx_fail(n, "inputs of different ranks");
    for (int d = 0; d < x->ndim; d++)
      if (d != ax && v->shape[d] != x->shape[d]) return onnx_fail(n, "inputs of different shapes");
    if (mlc_add_overflow(total, v->shape[ax], &total))
      return onnx_fail(n, "the extents along axis %d add up past 2^63", ax);
  }
  shape[ax] = total;
  int64_t count = onnx_checked_numel(n, "the result", x->ndim, shape, 8);
  if (count < 0) return false;
  int64_t outer = onnx_numel(ax, x->shape), inner = onnx_numel(x->ndim - ax - 1, x->shape + ax + 1);
  int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(count + 1));
  int64_t at = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < n->n_in; k++) {
      int64_t len = n->in[k]->shape[ax] * inner;
      memcpy(y + at, n->in[k]->i + o * len, sizeof(int64_t) * (size_t)len);
      at += len;
    }
  return onnx_set_out_ints(n, 0, x->ndim, shape, y);
}

static int64_t clamp40(int64_t v) {
  const int64_t big = INT64_C(1) << 40; /* beyond any extent: the same slice */
  return v < -big ? -big : v > big ? big : v;
}

/* Slice's starts, ends, axes and steps (attributes before opset 10,
 * constant inputs since) into the graph's slice attributes. */
static bool slice_attrs(onode *n, int rank, mlc_gattrs *a) {
  int64_t v[4][MLC_GRAPH_MAX_DIMS];
  int64_t c[4] = {-1, -1, -1, -1};
  if (n->opset < 10) {
    int k[3];
    if (!onnx_check_attrs(n, " starts ends axes ")) return false;
    const char *names[3] = {"starts", "ends", "axes"};
    for (int i = 0; i < 3; i++) {
      if (!onnx_attr_ints(n, names[i], MLC_GRAPH_MAX_DIMS, &k[i], v[i])) return false;
      c[i] = k[i];
    }
    if (n->n_in > 1) return onnx_fail(n, "starts and ends are attributes before opset 10");
  } else {
    if (!no_attrs(n)) return false;
    for (int i = 0; i < 4; i++) {
      if (!in_val(n, i + 1)) continue;
      const int64_t *p = onnx_ints(n, i + 1, &c[i]);
      if (!p) return false;
      if (c[i] > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "input %d has too many entries", i + 1);
      memcpy(v[i], p, sizeof(int64_t) * (size_t)c[i]);
    }
  }
  if (c[0] < 0 || c[1] < 0) return onnx_fail(n, "starts and ends are required");
  if (c[0] != c[1] || (c[2] >= 0 && c[2] != c[0]) || (c[3] >= 0 && c[3] != c[0]))
    return onnx_fail(n, "starts, ends, axes and steps must have the same length");
  if (c[0] > rank) return onnx_fail(n, "more starts than the input has axes");
  a->n_ints = (int)c[0];
  for (int i = 0; i < a->n_ints; i++) {
    int ax = 0;
    if (!norm_axis(n, c[2] >= 0 ? v[2][i] : i, rank, &ax)) return false;
    a->ints[i] = ax;
    a->starts[i] = clamp40(v[0][i]);
    a->ends[i] = clamp40(v[1][i]);
    a->steps[i] = c[3] >= 0 ? clamp40(v[3][i]) : 1;
    if (a->steps[i] == 0) return onnx_fail(n, "a step is 0");
  }
  return true;
}

/* Slice with constant parameters: of a float tensor, the graph's slice;
 * of a 1-D integer tensor (shapes), computed now. */
static bool cv_slice(onode *n) {
  const oval *x = n->in[0];
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_SLICE, &a);
  if (!slice_attrs(n, x->ndim, &a)) return false;
  if (!x->is_int) {
    mlc_gvar *v = onnx_var(n, 0);
    if (!v) return false;
    if (x->ndim == 0) return onnx_fail(n, "slicing a scalar");
    return set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_SLICE, &a, 1, &v));
  }
  if (x->ndim != 1) return onnx_fail(n, "only 1-D integer tensors (shapes) are supported");
  mlc_gtype t = {MLC_FLOAT32, 1, {x->shape[0]}};
  int64_t start, step, len;
  if (!mlc_gop_slice_axis(&a, &t, 0, &start, &step, &len)) return onnx_fail(n, "a step is 0");
  int64_t *out = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(len + 1));
  for (int64_t k = 0; k < len; k++) out[k] = x->i[start + k * step];
  return onnx_set_out_ints(n, 0, 1, &len, out);
}

/* Pad, mode constant: pads as an attribute before opset 11, a constant
 * input since, with the optional constant_value. */
static bool cv_pad(onode *n) {
  const char *mode;
  int c = -1;
  int64_t pads[2 * MLC_GRAPH_MAX_DIMS];
  double value = 0;
  if (!onnx_check_attrs(n, n->opset < 11 ? " mode pads value " : " mode ") ||
      !onnx_attr_string(n, "mode", "constant", &mode))
    return false;
  if (strcmp(mode, "constant") != 0) return onnx_fail(n, "mode \"%s\" is not supported (constant only)", mode);
  if (n->opset < 11) {
    if (!onnx_attr_ints(n, "pads", 2 * MLC_GRAPH_MAX_DIMS, &c, pads) ||
        !onnx_attr_float(n, "value", 0, &value))
      return false;
  } else {
    int64_t cnt;
    const int64_t *p = onnx_ints(n, 1, &cnt);
    if (!p) return false;
    if (cnt > 2 * MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "too many pads");
    memcpy(pads, p, sizeof(int64_t) * (size_t)cnt);
    c = (int)cnt;
    if (in_val(n, 2) && !scalar_input(n, 2, &value)) return false;
    if (in_val(n, 3)) return onnx_fail(n, "the axes input is not supported");
  }
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int r = in_rank(n, 0);
  if (r == 0 || c != 2 * r) return onnx_fail(n, "pads must have 2 entries per axis (%d)", 2 * r);
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_PAD, &a);
  a.n_pads = r;
  a.pad_value = value;
  for (int d = 0; d < r; d++) a.pad_before[d] = pads[d], a.pad_after[d] = pads[r + d];
  return set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_PAD, &a, 1, &x));
}

/* Split into slices along axis: sizes from the split attribute (input
 * since opset 13), else equal parts. */
static bool cv_split(onode *n) {
  int64_t axis;
  int cs = -1;
  int64_t sizes[MLC_GRAPH_MAX_ARGS];
  if (!onnx_check_attrs(n, n->opset < 13 ? " axis split " : " axis ") ||
      !onnx_attr_int(n, "axis", 0, &axis))
    return false;
  if (n->opset < 13 && !onnx_attr_ints(n, "split", MLC_GRAPH_MAX_ARGS, &cs, sizes)) return false;
  if (n->opset >= 13 && in_val(n, 1)) {
    int64_t c;
    const int64_t *p = onnx_ints(n, 1, &c);
    if (!p) return false;
    if (c > MLC_GRAPH_MAX_ARGS) return onnx_fail(n, "too many parts");
    memcpy(sizes, p, sizeof(int64_t) * (size_t)c);
    cs = (int)c;
  }
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int ax = 0, parts = (int)n->p->n_output;
  if (!norm_axis(n, axis, in_rank(n, 0), &ax)) return false;
  int64_t e = x->type.shape[ax], at = 0;
  if (cs >= 0 && cs != parts) return onnx_fail(n, "%d sizes for %d outputs", cs, parts);
  if (cs < 0 && (parts < 1 || e % parts))
    return onnx_fail(n, "extent %lld does not split into %d equal parts", (long long)e, parts);
  for (int k = 0; k < parts; k++) {
    int64_t len = cs >= 0 ? sizes[k] : e / parts;
    if (len < 1 || at + len > e) return onnx_fail(n, "the sizes do not fit the axis");
    mlc_gattrs a;
    mlc_gattrs_init(MLC_GOP_SLICE, &a);
    a.n_ints = 1;
    a.ints[0] = ax, a.starts[0] = at, a.ends[0] = at + len, a.steps[0] = 1;
    at += len;
    const char *name = n->p->output[k];
    if (!name || !*name) continue;
    onode m = *n; /* named after its own output */
    Onnx__NodeProto p = *n->p;
    p.output = (char **)&n->p->output[k];
    p.n_output = 1;
    m.p = &p;
    mlc_gvar *y = onnx_emit(&m, NULL, MLC_GOP_SLICE, &a, 1, &x);
    if (!y) return false;
    if (!onnx_set_out(&m, 0, y, y->type.ndim, y->type.shape)) return false;
  }
  if (at != e) return onnx_fail(n, "the sizes add up to %lld, not %lld", (long long)at, (long long)e);
  return true;
}

/* Cast: float to float is the identity; integers stay import-time
 * constants; a constant changes kind. */
static bool cv_cast(onode *n) {
  int64_t to;
  if (!onnx_check_attrs(n, " to saturate ") || !onnx_attr_int(n, "to", 0, &to)) return false;
  const oval *x = n->in[0];
  bool to_float = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  bool to_int = to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
  if (!to_float && !to_int) return onnx_fail(n, "cast to dtype %lld is not supported", (long long)to);
  int64_t c = onnx_numel(x->ndim, x->shape);
  if (x->is_int && to_int) return onnx_set_out_ints(n, 0, x->ndim, x->shape, x->i);
  if (!x->is_int && to_float) return onnx_set_out(n, 0, x->var, x->ndim, x->shape);
  if (x->is_int) {
    mlc_gtype t = {MLC_FLOAT32, x->ndim ? x->ndim : 1, {1}};
    memcpy(t.shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    if (c < 1) return onnx_fail(n, "an empty tensor");
    mlc_gvar *v = onnx_new_const(n, NULL, &t);
    for (int64_t k = 0; k < c; k++) v->data[k] = (float)x->i[k];
    return onnx_set_out(n, 0, v, x->ndim, x->shape);
  }
  int64_t cnt;
  const float *f = onnx_floats(n, 0, &cnt);
  if (!f) return false;
  int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(c + 1));
  for (int64_t k = 0; k < c; k++) {
    if (!(fabsf(f[k]) < 9e18f)) return onnx_fail(n, "value %g does not fit an integer", f[k]);
    y[k] = (int64_t)f[k];
  }
  return onnx_set_out_ints(n, 0, x->ndim, x->shape, y);
}

/* ---- data movement composed of graph ops -------------------------------------- */

/* x along axis ax gathered at indices idx[0..c) (in range). */
static mlc_gvar *gather_at(onode *n, const char *sfx, mlc_gvar *x, int ax, int64_t c,
                           const int64_t *idx) {
  mlc_gtype t = {MLC_FLOAT32, 1, {c}};
  mlc_gvar *ic = onnx_new_const(n, mlc_arena_printf(n->arena, "%s_indices", sfx), &t);
  for (int64_t k = 0; k < c; k++) ic->data[k] = (float)idx[k];
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_GATHER, &a);
  a.axis = ax;
  mlc_gvar *args[2] = {x, ic};
  return onnx_emit(n, sfx, MLC_GOP_GATHER, &a, 2, args);
}

/* x repeated reps[d] times along each axis d (Tile): a gather per
 * repeated axis with indices 0..e-1, r times over; the last step (or a
 * reshape when nothing repeats) is the output. */
static mlc_gvar *tile_axes(onode *n, mlc_gvar *x, const int64_t *reps) {
  int nd = x->type.ndim, last = -1;
  for (int d = 0; d < nd; d++)
    if (reps[d] != 1) last = d;
  if (last < 0) return onnx_reshape(n, NULL, x, nd, x->type.shape);
  for (int d = 0; d <= last && x; d++) {
    if (reps[d] == 1) continue;
    int64_t e = x->type.shape[d], most = INT64_C(1) << 24;
    if (e < 1 || reps[d] > most / e) { /* checked before multiplying: no overflow */
      onnx_fail(n, "axis %d would have more than %lld elements", d, (long long)most);
      return NULL;
    }
    int64_t c = e * reps[d];
    int64_t *idx = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)c);
    for (int64_t k = 0; k < c; k++) idx[k] = k % e;
    x = gather_at(n, d == last ? NULL : mlc_arena_printf(n->arena, "tile%d", d), x, d, c, idx);
  }
  return x;
}

/* Tile (repeats a constant input since opset 6). */
static bool cv_tile(onode *n) {
  if (!no_attrs(n)) return false;
  if (n->opset < 6) return onnx_fail(n, "Tile before opset 6 (tiles and axis inputs) is not supported");
  int64_t c;
  const int64_t *r = onnx_ints(n, 1, &c);
  if (!r) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int nd = in_rank(n, 0);
  if (nd == 0) return onnx_fail(n, "tiling a scalar is not supported");
  if (c != nd) return onnx_fail(n, "repeats has %lld entries for rank %d", (long long)c, nd);
  for (int d = 0; d < nd; d++)
    if (r[d] < 1) return onnx_fail(n, "repeats %lld along axis %d (must be >= 1)", (long long)r[d], d);
  return set_var(n, 0, tile_axes(n, x, r));
}

/* Expand: x broadcast (numpy, both ways) with the constant shape input:
 * x reshaped to the result's rank, then each unit axis that grows
 * gathered at index 0 that many times. */
static bool cv_expand(onode *n) {
  if (!no_attrs(n)) return false;
  int64_t c;
  const int64_t *s = onnx_ints(n, 1, &c);
  if (!s) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (c > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "more than %d dimensions", MLC_GRAPH_MAX_DIMS);
  oval sv = {.ndim = (int)c, .is_int = true};
  for (int d = 0; d < c; d++) {
    if (s[d] < 1) return onnx_fail(n, "shape entry %lld (must be >= 1)", (long long)s[d]);
    sv.shape[d] = s[d];
  }
  int nd;
  int64_t out[MLC_GRAPH_MAX_DIMS], xs[MLC_GRAPH_MAX_DIMS], reps[MLC_GRAPH_MAX_DIMS];
  if (!broadcast_shape(n, n->in[0], &sv, &nd, out)) return false;
  if (nd == 0) return onnx_fail(n, "a scalar result is not supported");
  int xr = in_rank(n, 0);
  for (int d = 0; d < nd; d++) {
    xs[d] = d < nd - xr ? 1 : n->in[0]->shape[d - (nd - xr)];
    reps[d] = xs[d] == out[d] ? 1 : out[d];
  }
  mlc_gvar *xr_var = onnx_reshape(n, "ranked", x, nd, xs);
  if (!xr_var) return false;
  return set_var(n, 0, tile_axes(n, xr_var, reps));
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth over NCHW: a reshape to 6-D,
 * a transpose and a reshape, as ONNX defines them. */
static bool depth_space(onode *n, bool to_space) {
  int64_t b;
  const char *mode = "DCR";
  if (!onnx_check_attrs(n, to_space ? " blocksize mode " : " blocksize ") ||
      !onnx_attr_int(n, "blocksize", 0, &b) ||
      (to_space && !onnx_attr_string(n, "mode", "DCR", &mode)))
    return false;
  bool crd = strcmp(mode, "CRD") == 0;
  if (!crd && strcmp(mode, "DCR") != 0) return onnx_fail(n, "mode \"%s\" is not supported", mode);
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (in_rank(n, 0) != 4) return onnx_fail(n, "the input must be 4-D (N, C, H, W)");
  if (b < 1 || b > 4096) return onnx_fail(n, "blocksize %lld is out of range", (long long)b);
  const int64_t *s = x->type.shape;
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  int64_t six[6], out[4];
  int perm[6];
  if (to_space) {
    if (C % (b * b)) return onnx_fail(n, "C %lld is not a multiple of blocksize^2", (long long)C);
    int64_t c = C / (b * b);
    int64_t dcr[6] = {N, b, b, c, H, W}, crds[6] = {N, c, b, b, H, W};
    int pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
    memcpy(six, crd ? crds : dcr, sizeof six);
    memcpy(perm, crd ? pc : pd, sizeof perm);
    int64_t o[4] = {N, c, H * b, W * b};
    memcpy(out, o, sizeof out);
  } else {
    if (H % b || W % b) return onnx_fail(n, "H and W must be multiples of blocksize");
    int64_t s6[6] = {N, C, H / b, b, W / b, b}, o[4] = {N, C * b * b, H / b, W / b};
    int p6[6] = {0, 3, 5, 1, 2, 4};
    memcpy(six, s6, sizeof six);
    memcpy(perm, p6, sizeof perm);
    memcpy(out, o, sizeof out);
  }
  mlc_gvar *x6 = onnx_reshape(n, "split", x, 6, six);
  mlc_gvar *t = x6 ? transpose(n, "moved", x6, 6, perm) : NULL;
  return set_var(n, 0, t ? onnx_reshape(n, NULL, t, 4, out) : NULL);
}


/* Trilu: upper (1) picks triu, the optional constant input k the diagonal. */
static bool cv_trilu(onode *n) {
  int64_t upper, k = 0;
  if (!onnx_check_attrs(n, " upper ") || !onnx_attr_int(n, "upper", 1, &upper)) return false;
  if (in_val(n, 1)) {
    int64_t c;
    const int64_t *v = onnx_ints(n, 1, &c);
    if (!v) return false;
    if (c != 1) return onnx_fail(n, "k must be a single value");
    k = clamp40(v[0]);
  }
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (in_rank(n, 0) < 2) return onnx_fail(n, "the input must have at least 2 dimensions");
  mlc_gop op = upper ? MLC_GOP_TRIU : MLC_GOP_TRIL;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  a.k = k;
  return set_var(n, 0, onnx_emit(n, NULL, op, &a, 1, &x));
}

/* CumSum along the constant axis input, exclusive and reverse. */
static bool cv_cumsum(onode *n) {
  int64_t exclusive, reverse, c;
  if (!onnx_check_attrs(n, " exclusive reverse ") || !onnx_attr_int(n, "exclusive", 0, &exclusive) ||
      !onnx_attr_int(n, "reverse", 0, &reverse))
    return false;
  const int64_t *axis = onnx_ints(n, 1, &c);
  if (!axis) return false;
  if (c != 1) return onnx_fail(n, "axis must be a single value");
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (in_rank(n, 0) == 0) return onnx_fail(n, "the input is a scalar (no axis)");
  int ax = 0;
  if (!norm_axis(n, axis[0], in_rank(n, 0), &ax)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CUMSUM, &a);
  a.axis = ax;
  a.exclusive = exclusive != 0;
  a.reverse = reverse != 0;
  return set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_CUMSUM, &a, 1, &x));
}

/* ---- activations composed of graph ops ----------------------------------------- */

/* op over a (and b for a binary op, else NULL) with default attributes;
 * a NULL operand (a failed step) passes the failure on. */
static mlc_gvar *ew(onode *n, const char *sfx, mlc_gop op, mlc_gvar *a, mlc_gvar *b) {
  bool binary_op = op == MLC_GOP_ADD || op == MLC_GOP_SUBTRACT || op == MLC_GOP_MULTIPLY ||
                   op == MLC_GOP_DIVIDE || op == MLC_GOP_MINIMUM;
  if (!a || (binary_op && !b)) return NULL;
  mlc_gattrs at;
  mlc_gattrs_init(op, &at);
  mlc_gvar *args[2] = {a, b};
  return onnx_emit(n, sfx, op, &at, binary_op ? 2 : 1, args);
}

/* Output 0 is y, of input 0's shape. */
static bool set_like_input(onode *n, mlc_gvar *y) {
  if (!y) return false;
  return onnx_set_out(n, 0, y, n->in[0]->ndim, n->in[0]->shape);
}

/* scale * (exp(min(x, 0)) - 1): the negative side of Elu and Selu (0 for
 * x >= 0, exactly). */
static mlc_gvar *elu_negative(onode *n, mlc_gvar *x, double scale) {
  mlc_gvar *mn = ew(n, "neg_part", MLC_GOP_MINIMUM, x, scalar_const(n, "zero", 0));
  mlc_gvar *em = ew(n, "exp", MLC_GOP_EXP, mn, NULL);
  mlc_gvar *e1 = ew(n, "expm1", MLC_GOP_SUBTRACT, em, scalar_const(n, "one", 1));
  return ew(n, "neg_scaled", MLC_GOP_MULTIPLY, e1, scalar_const(n, "alpha", scale));
}

/* Elu: x for x >= 0, alpha (exp(x) - 1) below; as relu(x) + that. */
static bool cv_elu(onode *n) {
  double alpha;
  if (!onnx_check_attrs(n, " alpha ") || !onnx_attr_float(n, "alpha", 1, &alpha)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *pos = ew(n, "pos", MLC_GOP_RELU, x, NULL);
  return set_like_input(n, ew(n, NULL, MLC_GOP_ADD, pos, elu_negative(n, x, alpha)));
}

/* Selu: gamma x for x > 0, gamma alpha (exp(x) - 1) below. */
static bool cv_selu(onode *n) {
  double alpha, gamma;
  if (!onnx_check_attrs(n, " alpha gamma ") ||
      !onnx_attr_float(n, "alpha", 1.67326319217681884765625, &alpha) ||
      !onnx_attr_float(n, "gamma", 1.05070102214813232421875, &gamma))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *pos = ew(n, "pos", MLC_GOP_MULTIPLY, ew(n, "relu", MLC_GOP_RELU, x, NULL),
                     scalar_const(n, "gamma", gamma));
  return set_like_input(n, ew(n, NULL, MLC_GOP_ADD, pos, elu_negative(n, x, alpha * gamma)));
}

/* Softplus: log(exp(x) + 1), computed as relu(x) + log(1 + exp(-|x|)):
 * the same value, but exp never overflows (log(exp(x) + 1) is inf from
 * x = 89 on, where softplus is x). */
static bool cv_softplus(onode *n) {
  if (!no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *ax = ew(n, "abs", MLC_GOP_ABS, x, NULL);
  mlc_gvar *e = ew(n, "exp", MLC_GOP_EXP, ew(n, "neg_abs", MLC_GOP_NEGATIVE, ax, NULL), NULL);
  mlc_gvar *l = ew(n, "log1p", MLC_GOP_LOG, ew(n, "exp1", MLC_GOP_ADD, e, scalar_const(n, "one", 1)), NULL);
  return set_like_input(n, ew(n, NULL, MLC_GOP_ADD, ew(n, "relu", MLC_GOP_RELU, x, NULL), l));
}

/* Softsign: x / (1 + |x|). */
static bool cv_softsign(onode *n) {
  if (!no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  mlc_gvar *ax = ew(n, "abs", MLC_GOP_ABS, x, NULL);
  mlc_gvar *d = ew(n, "den", MLC_GOP_ADD, ax, scalar_const(n, "one", 1));
  return set_like_input(n, ew(n, NULL, MLC_GOP_DIVIDE, x, d));
}

/* Reciprocal: 1 / x. */
static bool cv_reciprocal(onode *n) {
  if (!no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  return set_like_input(n, ew(n, NULL, MLC_GOP_DIVIDE, scalar_const(n, "one", 1), x));
}

/* Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)), as relu(x) +
 * alpha (exp(min(x, 0) / alpha) - 1) (the second term is 0 for x >= 0,
 * exactly). */
static bool cv_celu(onode *n) {
  double alpha;
  if (!onnx_check_attrs(n, " alpha ") || !onnx_attr_float(n, "alpha", 1, &alpha)) return false;
  if (alpha == 0 || !isfinite(alpha)) return onnx_fail(n, "alpha %g (must be nonzero and finite)", alpha);
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *mn = ew(n, "neg_part", MLC_GOP_MINIMUM, x, scalar_const(n, "zero", 0));
  mlc_gvar *sc = ew(n, "neg_scaled", MLC_GOP_DIVIDE, mn, scalar_const(n, "alpha", alpha));
  mlc_gvar *em = ew(n, "exp", MLC_GOP_EXP, sc, NULL);
  mlc_gvar *e1 = ew(n, "expm1", MLC_GOP_SUBTRACT, em, scalar_const(n, "one", 1));
  mlc_gvar *neg = ew(n, "neg", MLC_GOP_MULTIPLY, e1, scalar_const(n, "alpha_out", alpha));
  mlc_gvar *pos = ew(n, "pos", MLC_GOP_RELU, x, NULL);
  return set_like_input(n, ew(n, NULL, MLC_GOP_ADD, pos, neg));
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over axes
 * (0, 2, 3), var the biased variance, as ONNX's function body (which
 * takes it as E[x^2] - E[x]^2). */
static bool cv_mvn(onode *n) {
  int c;
  int64_t axes[MLC_GRAPH_MAX_DIMS];
  if (!onnx_check_attrs(n, " axes ") || !onnx_attr_ints(n, "axes", MLC_GRAPH_MAX_DIMS, &c, axes))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int nd = in_rank(n, 0);
  if (nd == 0) return onnx_fail(n, "the input is a scalar");
  mlc_gattrs r, e;
  mlc_gattrs_init(MLC_GOP_REDUCE_MEAN, &r);
  r.keepdims = true;
  if (c < 0) { /* (0, 2, 3): needs rank 4 */
    if (nd != 4) return onnx_fail(n, "the default axes (0, 2, 3) need a 4-D input");
    int64_t def[3] = {0, 2, 3};
    memcpy(axes, def, sizeof def);
    c = 3;
  }
  bool seen[MLC_GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < c; i++) {
    int ax = 0;
    if (!norm_axis(n, axes[i], nd, &ax)) return false;
    if (seen[ax]) return onnx_fail(n, "axis %d is repeated", ax);
    seen[ax] = true;
    r.ints[r.n_ints++] = ax;
  }
  if (c == 0) return onnx_fail(n, "axes is empty");
  mlc_gattrs_init(MLC_GOP_ADD, &e);
  mlc_gvar *mean = onnx_emit(n, "mean", MLC_GOP_REDUCE_MEAN, &r, 1, &x);
  mlc_gvar *dv = ew(n, "dev", MLC_GOP_SUBTRACT, x, mean);
  mlc_gvar *sq = ew(n, "dev2", MLC_GOP_MULTIPLY, dv, dv);
  mlc_gvar *var = sq ? onnx_emit(n, "var", MLC_GOP_REDUCE_MEAN, &r, 1, &sq) : NULL;
  mlc_gvar *sd = ew(n, "std", MLC_GOP_SQRT, var, NULL);
  mlc_gvar *se = ew(n, "std_eps", MLC_GOP_ADD, sd, scalar_const(n, "eps", 1e-9));
  return set_like_input(n, ew(n, NULL, MLC_GOP_DIVIDE, dv, se));
}

/* LRN: x / (bias + alpha / size * sum of x^2 over the size channels around
 * c)^beta, the window [c - (size - 1) / 2, c + ceil((size - 1) / 2)]
 * clipped to the channels. The sum is an average pool of x^2 viewed as
 * [N, 1, C, rest] with a (size, 1) window, zero padding counted (so the
 * average is the sum / size). */
static bool cv_lrn(onode *n) {
  double alpha, beta, bias;
  int64_t size;
  if (!onnx_check_attrs(n, " alpha beta bias size ") || !onnx_attr_float(n, "alpha", 1e-4, &alpha) ||
      !onnx_attr_float(n, "beta", 0.75, &beta) || !onnx_attr_float(n, "bias", 1, &bias) ||
      !onnx_attr_int(n, "size", 0, &size))
    return false;
  if (size < 1 || size > 4096) return onnx_fail(n, "size %lld is out of range (1 to 4096)", (long long)size);
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int nd = in_rank(n, 0);
  if (nd < 3) return onnx_fail(n, "the input must be N x C x D1 x ... (rank 3 or more)");
  int64_t view[4] = {x->type.shape[0], 1, x->type.shape[1], onnx_numel(nd - 2, x->type.shape + 2)};
  mlc_gvar *sq = ew(n, "sq", MLC_GOP_MULTIPLY, x, x);
  mlc_gvar *sv = sq ? onnx_reshape(n, "sq_view", sq, 4, view) : NULL;
  mlc_gattrs p;
  mlc_gattrs_init(MLC_GOP_AVG_POOL2D, &p);
  p.kernel[0] = size, p.kernel[1] = 1;
  p.strides[0] = p.strides[1] = 1;
  p.pads[0] = (size - 1) / 2, p.pads[2] = size - 1 - (size - 1) / 2;
  p.count_include_pad = true;
  mlc_gvar *avg = sv ? onnx_emit(n, "window", MLC_GOP_AVG_POOL2D, &p, 1, &sv) : NULL;
  mlc_gvar *av = avg ? onnx_reshape(n, "window_sum", avg, x->type.ndim, x->type.shape) : NULL;
  mlc_gvar *sc = ew(n, "scaled", MLC_GOP_MULTIPLY, av, scalar_const(n, "alpha", alpha));
  mlc_gvar *base = ew(n, "base", MLC_GOP_ADD, sc, scalar_const(n, "bias", bias));
  mlc_gattrs pw;
  mlc_gattrs_init(MLC_GOP_POWER, &pw);
  pw.exponent = beta;
  mlc_gvar *den = base ? onnx_emit(n, "den", MLC_GOP_POWER, &pw, 1, &base) : NULL;
  return set_like_input(n, ew(n, NULL, MLC_GOP_DIVIDE, x, den));
}

/* PRelu: x for x >= 0, slope x below; as relu(x) - slope relu(-x) (the
 * same values: one term is 0). Since opset 7 the slope broadcasts to x
 * (numpy, one way); before, a slope of one value is shared and one of C
 * values is per channel (axis 1). */
static bool cv_prelu(onode *n) {
  if (!no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0), *slope = onnx_var(n, 1);
  if (!x || !slope) return false;
  const oval *xv = n->in[0], *sv = n->in[1];
  if (n->opset < 7) {
    int64_t c = onnx_numel(sv->ndim, sv->shape);
    if (!(c == 1 && sv->ndim <= xv->ndim) && !(sv->ndim == 1 && xv->ndim >= 2 && c == xv->shape[1]))
      return onnx_fail(n, "before opset 7 the slope must have 1 or C values");
    int64_t s[MLC_GRAPH_MAX_DIMS];
    for (int d = 0; d < xv->ndim - 1; d++) s[d] = d == 0 ? c : 1;
    if (c != 1 && !(slope = onnx_reshape(n, "slope", slope, xv->ndim - 1, s))) return false;
  } else {
    int nd;
    int64_t s[MLC_GRAPH_MAX_DIMS];
    if (!broadcast_shape(n, xv, sv, &nd, s)) return false;
    if (nd != xv->ndim || memcmp(s, xv->shape, sizeof(int64_t) * (size_t)nd) != 0)
      return onnx_fail(n, "the slope does not broadcast to X's shape");
  }
  mlc_gvar *pos = ew(n, "pos", MLC_GOP_RELU, x, NULL);
  mlc_gvar *neg = ew(n, "neg", MLC_GOP_RELU, ew(n, "minus", MLC_GOP_NEGATIVE, x, NULL), NULL);
  mlc_gvar *sn = ew(n, "neg_scaled", MLC_GOP_MULTIPLY, neg, slope);
  return set_like_input(n, ew(n, NULL, MLC_GOP_SUBTRACT, pos, sn));
}

/* Row converters: the op table's row gives the graph op (gop) and, for
 * binary ops, the integer op of shape arithmetic (arg; DepthToSpace: 1). */
static bool cv_unary(onode *n) { return unary(n, n->op->gop); }
static bool cv_binary(onode *n) { return binary(n, n->op->gop, (int_op)n->op->arg); }
static bool cv_variadic(onode *n) { return variadic(n, n->op->gop); }
static bool cv_softmax_like(onode *n) { return softmax_like(n, n->op->gop); }
static bool cv_global_pool(onode *n) { return global_pool(n, n->op->gop); }
static bool cv_depth_space(onode *n) { return depth_space(n, n->op->arg != 0); }

/* ---- op table ------------------------------------------------------------------ */

/* Rows: ONNX op_type, converter, inputs (min, max), graph op, argument.
 * OWN: the converter chooses the graph ops itself. */
#define OWN ((mlc_gop)MLC_GOP_COUNT)
static const onnx_op ops[] = {
    {"Abs", cv_unary, 1, 1, MLC_GOP_ABS, 0},
    {"Acos", cv_unary, 1, 1, MLC_GOP_ACOS, 0},
    {"Acosh", cv_unary, 1, 1, MLC_GOP_ACOSH, 0},
    {"Add", cv_binary, 2, 2, MLC_GOP_ADD, I_ADD},
    {"Asin", cv_unary, 1, 1, MLC_GOP_ASIN, 0},
    {"Asinh", cv_unary, 1, 1, MLC_GOP_ASINH, 0},
    {"Atan", cv_unary, 1, 1, MLC_GOP_ATAN, 0},
    {"Atanh", cv_unary, 1, 1, MLC_GOP_ATANH, 0},
    {"AveragePool", cv_avg_pool, 1, 1, OWN, 0},
    {"BatchNormalization", cv_batch_norm, 5, 5, OWN, 0},
    {"Cast", cv_cast, 1, 1, OWN, 0},
    {"Ceil", cv_unary, 1, 1, MLC_GOP_CEIL, 0},
    {"Celu", cv_celu, 1, 1, OWN, 0},
    {"Clip", cv_clip, 1, 3, OWN, 0},
    {"Concat", cv_concat, 1, MLC_GRAPH_MAX_ARGS, OWN, 0},
    {"Constant", cv_constant, 0, 0, OWN, 0},
    {"ConstantOfShape", cv_constant_of_shape, 1, 1, OWN, 0},
    {"Conv", cv_conv, 2, 3, OWN, 0},
    {"ConvTranspose", cv_conv_transpose, 2, 3, OWN, 0},
    {"Cos", cv_unary, 1, 1, MLC_GOP_COS, 0},
    {"Cosh", cv_unary, 1, 1, MLC_GOP_COSH, 0},
    {"CumSum", cv_cumsum, 2, 2, OWN, 0},
    {"DepthToSpace", cv_depth_space, 1, 1, OWN, 1},
    {"Div", cv_binary, 2, 2, MLC_GOP_DIVIDE, I_DIV},
    {"Dropout", cv_dropout, 1, 3, OWN, 0},
    {"Elu", cv_elu, 1, 1, OWN, 0},
    {"Equal", cv_equal, 2, 2, OWN, 0},
    {"Erf", cv_unary, 1, 1, MLC_GOP_ERF, 0},
    {"Exp", cv_unary, 1, 1, MLC_GOP_EXP, 0},
    {"Expand", cv_expand, 2, 2, OWN, 0},
    {"Flatten", cv_flatten, 1, 1, OWN, 0},
    {"Floor", cv_unary, 1, 1, MLC_GOP_FLOOR, 0},
    {"Gather", cv_gather, 2, 2, OWN, 0},
    {"Gemm", cv_gemm, 2, 3, OWN, 0},
    {"GlobalAveragePool", cv_global_pool, 1, 1, MLC_GOP_GLOBAL_AVG_POOL2D, 0},
    {"GlobalMaxPool", cv_global_pool, 1, 1, MLC_GOP_REDUCE_MAX, 0},
    {"HardSigmoid", cv_hard_sigmoid, 1, 1, OWN, 0},
    {"HardSwish", cv_unary, 1, 1, MLC_GOP_HARD_SWISH, 0},
    {"Hardmax", cv_softmax_like, 1, 1, MLC_GOP_HARDMAX, 0},
    {"Identity", cv_identity, 1, 1, OWN, 0},
    {"InstanceNormalization", cv_instance_norm, 3, 3, OWN, 0},
    {"LRN", cv_lrn, 1, 1, OWN, 0},
    {"LayerNormalization", cv_layer_norm, 2, 3, OWN, 0},
    {"LeakyRelu", cv_leaky_relu, 1, 1, OWN, 0},
    {"Log", cv_unary, 1, 1, MLC_GOP_LOG, 0},
    {"LogSoftmax", cv_softmax_like, 1, 1, MLC_GOP_LOG_SOFTMAX, 0},
    {"MatMul", cv_matmul, 2, 2, OWN, 0},
    {"Max", cv_variadic, 1, MLC_GRAPH_MAX_ARGS, MLC_GOP_MAXIMUM, 0},
    {"MaxPool", cv_max_pool, 1, 1, OWN, 0},
    {"Mean", cv_mean, 1, MLC_GRAPH_MAX_ARGS, OWN, 0},
    {"MeanVarianceNormalization", cv_mvn, 1, 1, OWN, 0},
    {"Min", cv_variadic, 1, MLC_GRAPH_MAX_ARGS, MLC_GOP_MINIMUM, 0},
    {"Mul", cv_binary, 2, 2, MLC_GOP_MULTIPLY, I_MUL},
    {"Neg", cv_unary, 1, 1, MLC_GOP_NEGATIVE, 0},
    {"PRelu", cv_prelu, 2, 2, OWN, 0},
    {"Pad", cv_pad, 1, 4, OWN, 0},
    {"Pow", cv_pow, 2, 2, OWN, 0},
    {"Reciprocal", cv_reciprocal, 1, 1, OWN, 0},
    {"ReduceL1", cv_reduce, 1, 2, OWN, 0},
    {"ReduceL2", cv_reduce, 1, 2, OWN, 0},
    {"ReduceLogSum", cv_reduce, 1, 2, OWN, 0},
    {"ReduceLogSumExp", cv_reduce, 1, 2, OWN, 0},
    {"ReduceMax", cv_reduce, 1, 2, OWN, 0},
    {"ReduceMean", cv_reduce, 1, 2, OWN, 0},
    {"ReduceMin", cv_reduce, 1, 2, OWN, 0},
    {"ReduceProd", cv_reduce, 1, 2, OWN, 0},
    {"ReduceSum", cv_reduce, 1, 2, OWN, 0},
    {"ReduceSumSquare", cv_reduce, 1, 2, OWN, 0},
    {"Relu", cv_unary, 1, 1, MLC_GOP_RELU, 0},
    {"Reshape", cv_reshape, 2, 2, OWN, 0},
    {"Round", cv_unary, 1, 1, MLC_GOP_ROUND, 0},
    {"Selu", cv_selu, 1, 1, OWN, 0},
    {"Shape", cv_shape, 1, 1, OWN, 0},
    {"Shrink", cv_shrink, 1, 1, OWN, 0},
    {"Sigmoid", cv_unary, 1, 1, MLC_GOP_SIGMOID, 0},
    {"Sign", cv_unary, 1, 1, MLC_GOP_SIGN, 0},
    {"Sin", cv_unary, 1, 1, MLC_GOP_SIN, 0},
    {"Sinh", cv_unary, 1, 1, MLC_GOP_SINH, 0},
    {"Size", cv_size, 1, 1, OWN, 0},
    {"Slice", cv_slice, 1, 5, OWN, 0},
    {"Softmax", cv_softmax_like, 1, 1, MLC_GOP_SOFTMAX, 0},
    {"Softplus", cv_softplus, 1, 1, OWN, 0},
    {"Softsign", cv_softsign, 1, 1, OWN, 0},
    {"SpaceToDepth", cv_depth_space, 1, 1, OWN, 0},
    {"Split", cv_split, 1, 2, OWN, 0},
    {"Sqrt", cv_unary, 1, 1, MLC_GOP_SQRT, 0},
    {"Squeeze", cv_squeeze, 1, 2, OWN, 0},
    {"Sub", cv_binary, 2, 2, MLC_GOP_SUBTRACT, I_SUB},
    {"Sum", cv_variadic, 1, MLC_GRAPH_MAX_ARGS, MLC_GOP_ADD, 0},
    {"Tan", cv_unary, 1, 1, MLC_GOP_TAN, 0},
    {"Tanh", cv_unary, 1, 1, MLC_GOP_TANH, 0},
    {"ThresholdedRelu", cv_thresholded_relu, 1, 1, OWN, 0},
    {"Tile", cv_tile, 2, 2, OWN, 0},
    {"Transpose", cv_transpose, 1, 1, OWN, 0},
    {"Trilu", cv_trilu, 1, 2, OWN, 0},
    {"Unsqueeze", cv_unsqueeze, 1, 2, OWN, 0},
};

const onnx_op *onnx_find_op(const char *op_type) {
  for (int i = 0; i < MLC_COUNTOF(ops); i++)
    if (strcmp(ops[i].name, op_type) == 0) return &ops[i];
  return NULL;
}

const char *onnx_op_names(void) {
  static char buf[4096];
  if (!buf[0]) {
    size_t k = 0;
    for (int i = 0; i < MLC_COUNTOF(ops) && k < sizeof buf; i++)
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? ", " : "", ops[i].name);
  }
  return buf;
}
