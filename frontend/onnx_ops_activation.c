/* ONNX converters: activations composed of graph ops (Elu, Selu, Softplus, ..., PRelu, LRN).
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- activations composed of graph ops ----------------------------------------- */

/* op over a (and b for a onnx_binary op, else NULL) with default attributes;
 * a NULL operand (a failed step) passes the failure on. */
mlc_gvar *onnx_ew(onode *n, const char *sfx, mlc_gop op, mlc_gvar *a, mlc_gvar *b) {
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
  mlc_gvar *mn = onnx_ew(n, "neg_part", MLC_GOP_MINIMUM, x, onnx_scalar_const(n, "zero", 0));
  mlc_gvar *em = onnx_ew(n, "exp", MLC_GOP_EXP, mn, NULL);
  mlc_gvar *e1 = onnx_ew(n, "expm1", MLC_GOP_SUBTRACT, em, onnx_scalar_const(n, "one", 1));
  return onnx_ew(n, "neg_scaled", MLC_GOP_MULTIPLY, e1, onnx_scalar_const(n, "alpha", scale));
}

/* Elu: x for x >= 0, alpha (exp(x) - 1) below; as relu(x) + that. */
bool onnx_cv_elu(onode *n) {
  double alpha;
  if (!onnx_check_attrs(n, " alpha ") || !onnx_attr_float(n, "alpha", 1, &alpha)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *pos = onnx_ew(n, "pos", MLC_GOP_RELU, x, NULL);
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_ADD, pos, elu_negative(n, x, alpha)));
}

/* Selu: gamma x for x > 0, gamma alpha (exp(x) - 1) below. */
bool onnx_cv_selu(onode *n) {
  double alpha, gamma;
  if (!onnx_check_attrs(n, " alpha gamma ") ||
      !onnx_attr_float(n, "alpha", 1.67326319217681884765625, &alpha) ||
      !onnx_attr_float(n, "gamma", 1.05070102214813232421875, &gamma))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *pos = onnx_ew(n, "pos", MLC_GOP_MULTIPLY, onnx_ew(n, "relu", MLC_GOP_RELU, x, NULL),
                     onnx_scalar_const(n, "gamma", gamma));
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_ADD, pos, elu_negative(n, x, alpha * gamma)));
}

/* Softplus: log(exp(x) + 1), computed as relu(x) + log(1 + exp(-|x|)):
 * the same value, but exp never overflows (log(exp(x) + 1) is inf from
 * x = 89 on, where softplus is x). */
bool onnx_cv_softplus(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *ax = onnx_ew(n, "abs", MLC_GOP_ABS, x, NULL);
  mlc_gvar *e = onnx_ew(n, "exp", MLC_GOP_EXP, onnx_ew(n, "neg_abs", MLC_GOP_NEGATIVE, ax, NULL), NULL);
  mlc_gvar *l = onnx_ew(n, "log1p", MLC_GOP_LOG, onnx_ew(n, "exp1", MLC_GOP_ADD, e, onnx_scalar_const(n, "one", 1)), NULL);
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_ADD, onnx_ew(n, "relu", MLC_GOP_RELU, x, NULL), l));
}

/* Softsign: x / (1 + |x|). */
bool onnx_cv_softsign(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  mlc_gvar *ax = onnx_ew(n, "abs", MLC_GOP_ABS, x, NULL);
  mlc_gvar *d = onnx_ew(n, "den", MLC_GOP_ADD, ax, onnx_scalar_const(n, "one", 1));
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_DIVIDE, x, d));
}

/* Reciprocal: 1 / x. */
bool onnx_cv_reciprocal(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  mlc_gvar *x = onnx_var(n, 0);
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_DIVIDE, onnx_scalar_const(n, "one", 1), x));
}

/* Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)), as relu(x) +
 * alpha (exp(min(x, 0) / alpha) - 1) (the second term is 0 for x >= 0,
 * exactly). */
bool onnx_cv_celu(onode *n) {
  double alpha;
  if (!onnx_check_attrs(n, " alpha ") || !onnx_attr_float(n, "alpha", 1, &alpha)) return false;
  if (alpha == 0 || !isfinite(alpha)) return onnx_fail(n, "alpha %g (must be nonzero and finite)", alpha);
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  mlc_gvar *mn = onnx_ew(n, "neg_part", MLC_GOP_MINIMUM, x, onnx_scalar_const(n, "zero", 0));
  mlc_gvar *sc = onnx_ew(n, "neg_scaled", MLC_GOP_DIVIDE, mn, onnx_scalar_const(n, "alpha", alpha));
  mlc_gvar *em = onnx_ew(n, "exp", MLC_GOP_EXP, sc, NULL);
  mlc_gvar *e1 = onnx_ew(n, "expm1", MLC_GOP_SUBTRACT, em, onnx_scalar_const(n, "one", 1));
  mlc_gvar *neg = onnx_ew(n, "neg", MLC_GOP_MULTIPLY, e1, onnx_scalar_const(n, "alpha_out", alpha));
  mlc_gvar *pos = onnx_ew(n, "pos", MLC_GOP_RELU, x, NULL);
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_ADD, pos, neg));
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over axes
 * (0, 2, 3), var the biased variance, as ONNX's function body (which
 * takes it as E[x^2] - E[x]^2). */
bool onnx_cv_mvn(onode *n) {
  int c;
  int64_t axes[MLC_GRAPH_MAX_DIMS];
  if (!onnx_check_attrs(n, " axes ") || !onnx_attr_ints(n, "axes", MLC_GRAPH_MAX_DIMS, &c, axes))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int nd = onnx_in_rank(n, 0);
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
    if (!onnx_norm_axis(n, axes[i], nd, &ax)) return false;
    if (seen[ax]) return onnx_fail(n, "axis %d is repeated", ax);
    seen[ax] = true;
    r.ints[r.n_ints++] = ax;
  }
  if (c == 0) return onnx_fail(n, "axes is empty");
  mlc_gattrs_init(MLC_GOP_ADD, &e);
  mlc_gvar *mean = onnx_emit(n, "mean", MLC_GOP_REDUCE_MEAN, &r, 1, &x);
  mlc_gvar *dv = onnx_ew(n, "dev", MLC_GOP_SUBTRACT, x, mean);
  mlc_gvar *sq = onnx_ew(n, "dev2", MLC_GOP_MULTIPLY, dv, dv);
  mlc_gvar *var = sq ? onnx_emit(n, "var", MLC_GOP_REDUCE_MEAN, &r, 1, &sq) : NULL;
  mlc_gvar *sd = onnx_ew(n, "std", MLC_GOP_SQRT, var, NULL);
  mlc_gvar *se = onnx_ew(n, "std_eps", MLC_GOP_ADD, sd, onnx_scalar_const(n, "eps", 1e-9));
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_DIVIDE, dv, se));
}

/* LRN: x / (bias + alpha / size * sum of x^2 over the size channels around
 * c)^beta, the window [c - (size - 1) / 2, c + ceil((size - 1) / 2)]
 * clipped to the channels. The sum is an average pool of x^2 viewed as
 * [N, 1, C, rest] with a (size, 1) window, zero padding counted (so the
 * average is the sum / size). */
bool onnx_cv_lrn(onode *n) {
  double alpha, beta, bias;
  int64_t size;
  if (!onnx_check_attrs(n, " alpha beta bias size ") || !onnx_attr_float(n, "alpha", 1e-4, &alpha) ||
      !onnx_attr_float(n, "beta", 0.75, &beta) || !onnx_attr_float(n, "bias", 1, &bias) ||
      !onnx_attr_int(n, "size", 0, &size))
    return false;
  if (size < 1 || size > 4096) return onnx_fail(n, "size %lld is out of range (1 to 4096)", (long long)size);
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int nd = onnx_in_rank(n, 0);
  if (nd < 3) return onnx_fail(n, "the input must be N x C x D1 x ... (rank 3 or more)");
  int64_t view[4] = {x->type.shape[0], 1, x->type.shape[1], onnx_numel(nd - 2, x->type.shape + 2)};
  mlc_gvar *sq = onnx_ew(n, "sq", MLC_GOP_MULTIPLY, x, x);
  mlc_gvar *sv = sq ? onnx_reshape(n, "sq_view", sq, 4, view) : NULL;
  mlc_gattrs p;
  mlc_gattrs_init(MLC_GOP_AVG_POOL2D, &p);
  p.kernel[0] = size, p.kernel[1] = 1;
  p.strides[0] = p.strides[1] = 1;
  p.pads[0] = (size - 1) / 2, p.pads[2] = size - 1 - (size - 1) / 2;
  p.count_include_pad = true;
  mlc_gvar *avg = sv ? onnx_emit(n, "window", MLC_GOP_AVG_POOL2D, &p, 1, &sv) : NULL;
  mlc_gvar *av = avg ? onnx_reshape(n, "window_sum", avg, x->type.ndim, x->type.shape) : NULL;
  mlc_gvar *sc = onnx_ew(n, "scaled", MLC_GOP_MULTIPLY, av, onnx_scalar_const(n, "alpha", alpha));
  mlc_gvar *base = onnx_ew(n, "base", MLC_GOP_ADD, sc, onnx_scalar_const(n, "bias", bias));
  mlc_gattrs pw;
  mlc_gattrs_init(MLC_GOP_POWER, &pw);
  pw.exponent = beta;
  mlc_gvar *den = base ? onnx_emit(n, "den", MLC_GOP_POWER, &pw, 1, &base) : NULL;
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_DIVIDE, x, den));
}

/* PRelu: x for x >= 0, slope x below; as relu(x) - slope relu(-x) (the
 * same values: one term is 0). Since opset 7 the slope broadcasts to x
 * (numpy, one way); before, a slope of one value is shared and one of C
 * values is per channel (axis 1). */
bool onnx_cv_prelu(onode *n) {
  if (!onnx_no_attrs(n)) return false;
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
    if (!onnx_broadcast_shape(n, xv, sv, &nd, s)) return false;
    if (nd != xv->ndim || memcmp(s, xv->shape, sizeof(int64_t) * (size_t)nd) != 0)
      return onnx_fail(n, "the slope does not broadcast to X's shape");
  }
  mlc_gvar *pos = onnx_ew(n, "pos", MLC_GOP_RELU, x, NULL);
  mlc_gvar *neg = onnx_ew(n, "neg", MLC_GOP_RELU, onnx_ew(n, "minus", MLC_GOP_NEGATIVE, x, NULL), NULL);
  mlc_gvar *sn = onnx_ew(n, "neg_scaled", MLC_GOP_MULTIPLY, neg, slope);
  return set_like_input(n, onnx_ew(n, NULL, MLC_GOP_SUBTRACT, pos, sn));
}
