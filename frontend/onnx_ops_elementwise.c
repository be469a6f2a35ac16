/* ONNX converters: pass-through (Identity, Dropout), integer arithmetic on constants, elementwise ops, softmax.
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- pass-through -------------------------------------------------------------- */

static bool forward(const onode *n, int k, const oval *v) {
  if (v->is_int) return onnx_set_out_ints_as(n, k, v->onnx_dtype, v->ndim, v->shape, v->i);
  return onnx_set_out(n, k, v->var, v->ndim, v->shape);
}

bool onnx_cv_identity(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  return forward(n, 0, n->in[0]);
}


/* Inference (or a ratio of 0): the identity, and the optional mask output
 * all true (a bool constant, which can feed shape arithmetic but not be a
 * graph output: outputs are float32). Training with a nonzero ratio is
 * random and refused. */
bool onnx_cv_dropout(onode *n) {
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
  if (training && onnx_in_val(n, 1) && !onnx_scalar_input(n, 1, &ratio)) return false;
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
    return onnx_set_out_ints_as(n, 1, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, x->ndim, x->shape, ones);
  }
  return true;
}

/* ---- integer arithmetic on constants ------------------------------------------- */

bool onnx_broadcast_shape(const onode *n, const oval *a, const oval *b, int *nd,
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


static bool int_binary(onode *n, int_op op) {
  const oval *a = n->in[0], *b = n->in[1];
  int nd;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  if (!onnx_broadcast_shape(n, a, b, &nd, shape)) return false;
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
    case I_LT: y[k] = x0 < x1; break;
    case I_GT: y[k] = x0 > x1; break;
    case I_LE: y[k] = x0 <= x1; break;
    case I_GE: y[k] = x0 >= x1; break;
    case I_AND: y[k] = x0 && x1; break;
    case I_OR: y[k] = x0 || x1; break;
    case I_XOR: y[k] = !x0 != !x1; break;
    }
  }
  if (op >= I_EQ) return onnx_set_out_ints_as(n, 0, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, nd, shape, y);
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
  if (n->opset >= 7) return onnx_no_attrs(n);
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
bool onnx_binary(onode *n, mlc_gop op, int_op iop) {
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
  if (!onnx_broadcast_shape(n, n->in[0], n->in[1], &nd, shape)) return false;
  return onnx_set_out(n, 0, y, nd, shape);
}

/* Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor: a bool
 * result; folded at import over integer constants (the row's int_op),
 * else the row's graph op. */
bool onnx_cv_compare(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  if (both_int(n)) return int_binary(n, (int_op)n->op->arg);
  mlc_gvar *args[2] = {onnx_var(n, 0), onnx_var(n, 1)};
  if (!args[0] || !args[1]) return false;
  mlc_gattrs a;
  mlc_gattrs_init(n->op->gop, &a);
  int nd;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  if (!onnx_broadcast_shape(n, n->in[0], n->in[1], &nd, shape)) return false;
  mlc_gvar *y = onnx_emit(n, NULL, n->op->gop, &a, 2, args);
  return y && onnx_set_out(n, 0, y, nd, shape);
}

static bool unary(onode *n, mlc_gop op);

bool onnx_cv_logical_not(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  const oval *x = n->in[0];
  if (x->is_int) {
    int64_t c = onnx_numel(x->ndim, x->shape);
    int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(c + 1));
    for (int64_t k = 0; k < c; k++) y[k] = !x->i[k];
    return onnx_set_out_ints_as(n, 0, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, x->ndim, x->shape, y);
  }
  return unary(n, MLC_GOP_LOGICAL_NOT);
}

/* Mod: the sign of the divisor (fmod 0, integers), or of the dividend
 * (fmod 1, as C's fmod). */
bool onnx_cv_mod(onode *n) {
  int64_t fm;
  if (!onnx_check_attrs(n, " fmod ") || !onnx_attr_int(n, "fmod", 0, &fm)) return false;
  mlc_gvar *args[2] = {onnx_var(n, 0), onnx_var(n, 1)};
  if (!args[0] || !args[1]) return false;
  if (!fm && args[0]->type.dtype == MLC_FLOAT32)
    return onnx_fail(n, "fmod 0 on floats (ONNX requires fmod 1 for them)");
  mlc_gop op = fm ? MLC_GOP_FMOD : MLC_GOP_MOD;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  int nd;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  if (!onnx_broadcast_shape(n, n->in[0], n->in[1], &nd, shape)) return false;
  mlc_gvar *y = onnx_emit(n, NULL, op, &a, 2, args);
  return y && onnx_set_out(n, 0, y, nd, shape);
}

/* Where(cond, x, y): folded at import when all three are integer
 * constants, else the graph's where (itself folded over constants). */
bool onnx_cv_where(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  const oval *c = n->in[0], *x = n->in[1], *y = n->in[2];
  int nd, nd2;
  int64_t s1[MLC_GRAPH_MAX_DIMS], shape[MLC_GRAPH_MAX_DIMS];
  if (!onnx_broadcast_shape(n, x, y, &nd, s1)) return false;
  oval xy = {.ndim = nd};
  memcpy(xy.shape, s1, sizeof s1);
  if (!onnx_broadcast_shape(n, c, &xy, &nd2, shape)) return false;
  if (c->is_int && x->is_int && y->is_int) {
    int64_t cnt = onnx_checked_numel(n, "the result", nd2, shape, 8);
    if (cnt < 0) return false;
    int64_t *v = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(cnt + 1));
    for (int64_t k = 0; k < cnt; k++)
      v[k] = c->i[bcast_index(c, nd2, shape, k)] ? x->i[bcast_index(x, nd2, shape, k)]
                                                  : y->i[bcast_index(y, nd2, shape, k)];
    return onnx_set_out_ints_as(n, 0, x->onnx_dtype, nd2, shape, v);
  }
  mlc_gvar *args[3] = {onnx_var(n, 0), onnx_var(n, 1), onnx_var(n, 2)};
  if (!args[0] || !args[1] || !args[2]) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_WHERE, &a);
  mlc_gvar *r = onnx_emit(n, NULL, MLC_GOP_WHERE, &a, 3, args);
  return r && onnx_set_out(n, 0, r, nd2, shape);
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
  if (!onnx_no_attrs(n)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  return unary_with(n, op, &a);
}


bool onnx_cv_thresholded_relu(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_THRESHOLDED_RELU, &a);
  return onnx_check_attrs(n, " alpha ") && onnx_attr_float(n, "alpha", 1, &a.alpha) &&
         unary_with(n, MLC_GOP_THRESHOLDED_RELU, &a);
}

/* Shrink: the graph's shrink, alpha lambd and beta bias. */
bool onnx_cv_shrink(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_SHRINK, &a);
  if (!onnx_check_attrs(n, " bias lambd ") || !onnx_attr_float(n, "lambd", 0.5, &a.alpha) ||
      !onnx_attr_float(n, "bias", 0, &a.beta))
    return false;
  if (!(a.alpha >= 0)) return onnx_fail(n, "lambd %g is negative", a.alpha);
  return unary_with(n, MLC_GOP_SHRINK, &a);
}

bool onnx_cv_leaky_relu(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_LEAKY_RELU, &a);
  return onnx_check_attrs(n, " alpha ") && onnx_attr_float(n, "alpha", 0.01, &a.alpha) &&
         unary_with(n, MLC_GOP_LEAKY_RELU, &a);
}

bool onnx_cv_hard_sigmoid(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_HARD_SIGMOID, &a);
  return onnx_check_attrs(n, " alpha beta ") && onnx_attr_float(n, "alpha", 0.2, &a.alpha) &&
         onnx_attr_float(n, "beta", 0.5, &a.beta) && unary_with(n, MLC_GOP_HARD_SIGMOID, &a);
}

/* A scalar float constant from input k (Clip bounds, Pow exponent). */
bool onnx_scalar_input(const onode *n, int k, double *out) {
  int64_t c;
  const float *f = onnx_floats(n, k, &c);
  if (!f) return false;
  if (c != 1) return onnx_fail(n, "input %d must be a single value", k);
  *out = f[0];
  return true;
}

/* Clip: bounds as attributes before opset 11, as constant inputs since. */
bool onnx_cv_clip(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CLIP, &a);
  if (!onnx_check_attrs(n, n->opset < 11 ? " min max " : " ")) return false;
  if (n->opset < 11) {
    if (!onnx_attr_float(n, "min", -INFINITY, &a.lo) || !onnx_attr_float(n, "max", INFINITY, &a.hi))
      return false;
  } else {
    if (onnx_in_val(n, 1) && !onnx_scalar_input(n, 1, &a.lo)) return false;
    if (onnx_in_val(n, 2) && !onnx_scalar_input(n, 2, &a.hi)) return false;
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
  for (int64_t j = 0; j < c; j++) ((float *)f->var->data)[j] = (float)iv[j];
  n->in[k] = f;
  return true;
}

/* Pow of an integer x: the graph's pow over x and the exponent as they
 * are (an integer exponent exactly, a float one in float32, truncated). */
static bool int_pow(onode *n, mlc_gvar *x) {
  mlc_gvar *args[2] = {x, onnx_var(n, 1)};
  if (!args[1]) return false;
  int nd;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  if (!onnx_broadcast_shape(n, n->in[0], n->in[1], &nd, shape)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_POW, &a);
  mlc_gvar *y = onnx_emit(n, NULL, MLC_GOP_POW, &a, 2, args);
  return y && onnx_set_out(n, 0, y, nd, shape);
}

/* Pow: a constant scalar exponent becomes power (multiplies for 2 and 3,
 * sqrt for 0.5); any other exponent (a tensor, a runtime value) the
 * elementwise pow with broadcasting; an integer x int_pow. */
bool onnx_cv_pow(onode *n) {
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_POWER, &a);
  if (!onnx_no_attrs(n)) return false;
  const oval *e = onnx_in_val(n, 1);
  if (!e || !n->in[0]) return onnx_fail(n, "an input is missing");
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (x->type.dtype != MLC_FLOAT32) return int_pow(n, x);
  /* a one-element exponent of higher rank than x broadcasts x up: onnx_binary */
  if (onnx_numel(e->ndim, e->shape) == 1 && e->ndim <= onnx_in_rank(n, 0) &&
      (e->is_int || onnx_const_float(e))) {
    if (e->is_int) a.exponent = (double)e->i[0];
    else if (!onnx_scalar_input(n, 1, &a.exponent)) return false;
    return unary_with(n, MLC_GOP_POWER, &a);
  }
  if (e->is_int && !int_input_as_float(n, 1)) return false;
  /* the exponent is float now, so onnx_binary never takes its integer path */
  return onnx_binary(n, MLC_GOP_POW, I_EQ);
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
    if (!onnx_broadcast_shape(n, &shape, n->in[k], &nd, shape.shape)) return NULL;
    shape.ndim = nd;
  }
  *shape_out = shape;
  return acc;
}

static bool variadic(onode *n, mlc_gop op) {
  oval shape;
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *acc = variadic_fold(n, op, NULL, &shape);
  if (!acc) return false;
  if (n->n_in == 1 && !(acc = onnx_reshape(n, NULL, acc, acc->type.ndim, acc->type.shape)))
    return false;
  return onnx_set_out(n, 0, acc, shape.ndim, shape.shape);
}



/* Mean: the sum divided by the number of inputs. */
bool onnx_cv_mean(onode *n) {
  oval shape;
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *acc = variadic_fold(n, MLC_GOP_ADD, "sum", &shape);
  if (!acc) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_DIVIDE, &a);
  mlc_gvar *args[2] = {acc, onnx_scalar_const(n, "count", n->n_in)};
  mlc_gvar *y = onnx_emit(n, NULL, MLC_GOP_DIVIDE, &a, 2, args);
  if (!y) return false;
  return onnx_set_out(n, 0, y, shape.ndim, shape.shape);
}

/* ---- softmax ------------------------------------------------------------------ */

mlc_gvar *onnx_transpose(const onode *n, const char *sfx, mlc_gvar *x, int nd, const int *perm) {
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
  if (onnx_in_rank(n, 0) == 0) return onnx_fail(n, "the input is a scalar (no axis)");
  int nd = x->type.ndim, ax = 0;
  if (!onnx_norm_axis(n, axis, nd, &ax)) return false;
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
  return onnx_set_var(n, 0, y);
}

/* The op table's row gives the graph op (n->op->gop). */
bool onnx_cv_unary(onode *n) { return unary(n, n->op->gop); }

/* The op table's row gives the graph op (n->op->gop). */
bool onnx_cv_binary(onode *n) { return onnx_binary(n, n->op->gop, (int_op)n->op->arg); }

/* The op table's row gives the graph op (n->op->gop). */
bool onnx_cv_variadic(onode *n) { return variadic(n, n->op->gop); }

/* The op table's row gives the graph op (n->op->gop). */
bool onnx_cv_softmax_like(onode *n) { return softmax_like(n, n->op->gop); }
