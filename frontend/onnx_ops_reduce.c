/* ONNX converters: reductions (Reduce*, BatchNormalization).
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
  } else if (onnx_in_val(n, 1)) {
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


/* ReduceLogSumExp as m + log(sum(exp(x - m))) with m the max over the
 * axes (kept): log(sum(exp(x))) overflows from x = 89 on. nd, shape: the
 * result's ONNX rank and shape; with no axes and noop_with_empty_axes,
 * x itself. */
static bool log_sum_exp(onode *n, mlc_gvar *x, const mlc_gattrs *axes, bool noop, int nd,
                        const int64_t *shape) {
  if (noop) {
    mlc_gvar *y = onnx_reshape(n, NULL, x, x->type.ndim, x->type.shape);
    return y && onnx_set_out(n, 0, y, onnx_in_rank(n, 0), n->in[0]->shape);
  }
  mlc_gattrs mk = *axes, r = *axes;
  mk.keepdims = true;
  r.keepdims = axes->keepdims || nd == 0;
  mlc_gvar *m = onnx_emit(n, "max", MLC_GOP_REDUCE_MAX, &mk, 1, &x);
  mlc_gvar *e = onnx_ew(n, "exp", MLC_GOP_EXP, onnx_ew(n, "shifted", MLC_GOP_SUBTRACT, x, m), NULL);
  mlc_gvar *s = e ? onnx_emit(n, "sum", MLC_GOP_REDUCE_SUM, &r, 1, &e) : NULL;
  mlc_gvar *l = onnx_ew(n, "log", MLC_GOP_LOG, s, NULL);
  mlc_gvar *mo = l ? onnx_reshape(n, "max_out", m, l->type.ndim, l->type.shape) : NULL;
  mlc_gvar *y = onnx_ew(n, nd ? NULL : "lse", MLC_GOP_ADD, l, mo);
  int64_t one = 1;
  if (y && !nd) y = onnx_reshape(n, NULL, y, 1, &one);
  return y && onnx_set_out(n, 0, y, nd, shape);
}

bool onnx_cv_reduce(onode *n) {
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
  if (onnx_in_rank(n, 0) == 0) return onnx_fail(n, "reducing a scalar is not supported");
  if (noop && strcmp(f->name, "ReduceLogSumExp") == 0) return log_sum_exp(n, x, &a, true, 0, NULL);
  if (noop) { /* the input unchanged; the pre and post ops still apply */
    mlc_gvar *y = x;
    if (f->pre != NO_OP && !(y = reduce_step(n, "pre", f->pre, y))) return false;
    if (f->post != NO_OP && !(y = reduce_step(n, "post", f->post, y))) return false;
    if (y == x && !(y = onnx_reshape(n, NULL, x, x->type.ndim, x->type.shape))) return false;
    return onnx_set_out(n, 0, y, onnx_in_rank(n, 0), n->in[0]->shape);
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
bool onnx_cv_batch_norm(onode *n) {
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
    ((float *)s->data)[i] = (float)si;
    ((float *)b->data)[i] = (float)(p[1][i] - p[2][i] * si);
  }
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_MULTIPLY, &a);
  mlc_gvar *m2[2] = {x, s};
  mlc_gvar *xs = onnx_emit(n, "scaled", MLC_GOP_MULTIPLY, &a, 2, m2);
  if (!xs) return false;
  mlc_gvar *a2[2] = {xs, b};
  return onnx_set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_ADD, &a, 2, a2));
}

/* ArgMax / ArgMin: the graph's (int64 indices); keepdims 1 by default. */
bool onnx_cv_argmax(onode *n) {
  int64_t axis, keep, last;
  if (!onnx_check_attrs(n, " axis keepdims select_last_index ") ||
      !onnx_attr_int(n, "axis", 0, &axis) || !onnx_attr_int(n, "keepdims", 1, &keep) ||
      !onnx_attr_int(n, "select_last_index", 0, &last))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int r = onnx_in_rank(n, 0), ax;
  if (r == 0) return onnx_fail(n, "the input is a scalar");
  if (!onnx_norm_axis(n, axis, r, &ax)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(n->op->gop, &a);
  a.axis = ax;
  a.keepdims = keep != 0;
  a.select_last_index = last != 0;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < r; d++)
    if (d != ax) shape[nd++] = n->in[0]->shape[d];
    else if (keep) shape[nd++] = 1;
  if (nd == 0) return onnx_fail(n, "a scalar result is not supported");
  mlc_gvar *y = onnx_emit(n, NULL, n->op->gop, &a, 1, &x);
  return y && onnx_set_out(n, 0, y, nd, shape);
}

/* TopK's k: the attribute before opset 10, then the constant input 1. */
static bool topk_k(onode *n, int64_t *k) {
  if (n->opset < 10) {
    if (!onnx_attr_int(n, "k", -1, k)) return false;
    return *k >= 0 || onnx_fail(n, "the attribute k is required");
  }
  int64_t c;
  if (!onnx_in_val(n, 1)) return onnx_fail(n, "the input k is missing");
  const int64_t *v = onnx_ints(n, 1, &c);
  if (!v) return false;
  if (c != 1) return onnx_fail(n, "k must be a single value");
  *k = v[0];
  return true;
}

/* TopK: the graph's topk gives the indices (output 1), gather_elements
 * of them the values (output 0). */
bool onnx_cv_topk(onode *n) {
  int64_t axis, largest, sorted, k;
  if (!onnx_check_attrs(n, n->opset < 10 ? " axis k " : " axis largest sorted ") ||
      !onnx_attr_int(n, "axis", -1, &axis) || !onnx_attr_int(n, "largest", 1, &largest) ||
      !onnx_attr_int(n, "sorted", 1, &sorted) || !topk_k(n, &k))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int r = onnx_in_rank(n, 0), ax;
  if (r == 0) return onnx_fail(n, "the input is a scalar");
  if (!onnx_norm_axis(n, axis, r, &ax)) return false;
  if (k < 1 || k > x->type.shape[ax])
    return onnx_fail(n, "k %lld is outside [1, %lld] (the axis' extent)", (long long)k,
                     (long long)x->type.shape[ax]);
  mlc_gattrs a, g;
  mlc_gattrs_init(MLC_GOP_TOPK, &a);
  a.axis = ax, a.k = k, a.largest = largest != 0, a.sorted = sorted != 0;
  mlc_gattrs_init(MLC_GOP_GATHER_ELEMENTS, &g);
  g.axis = ax;
  mlc_gvar *idx = onnx_emit(n, "indices", MLC_GOP_TOPK, &a, 1, &x);
  if (!idx) return false;
  mlc_gvar *val = onnx_emit(n, NULL, MLC_GOP_GATHER_ELEMENTS, &g, 2, (mlc_gvar *[]){x, idx});
  return onnx_set_var(n, 0, val) && onnx_set_var(n, 1, idx);
}
