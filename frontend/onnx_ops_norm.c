/* ONNX converters: layer norm (LayerNormalization, InstanceNormalization).
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
  if (has_out(n, 1) && !onnx_set_var(n, 1, onnx_reshape(n, "mean_out", mean, nd, st))) return false;
  if (!has_out(n, 2)) return true;
  mlc_gvar *dv = onnx_emit(n, "dev", MLC_GOP_SUBTRACT, &e, 2, (mlc_gvar *[]){x2, mean});
  mlc_gvar *sq = dv ? onnx_emit(n, "dev2", MLC_GOP_MULTIPLY, &e, 2, (mlc_gvar *[]){dv, dv}) : NULL;
  mlc_gvar *var = sq ? onnx_emit(n, "var", MLC_GOP_REDUCE_MEAN, &r, 1, &sq) : NULL;
  mlc_gvar *ve = var ? onnx_emit(n, "var_eps", MLC_GOP_ADD, &e, 2,
                                 (mlc_gvar *[]){var, onnx_scalar_const(n, "eps", eps)})
                     : NULL;
  mlc_gvar *sd = ve ? onnx_emit(n, "std", MLC_GOP_SQRT, &e, 1, &ve) : NULL;
  mlc_gvar *inv = sd ? onnx_emit(n, "inv_std", MLC_GOP_DIVIDE, &e, 2,
                                 (mlc_gvar *[]){onnx_scalar_const(n, "one", 1), sd})
                     : NULL;
  return inv && onnx_set_var(n, 2, onnx_reshape(n, "inv_std_out", inv, nd, st));
}

/* Over the trailing dims from axis: flattened into one when there are
 * several. */
bool onnx_cv_layer_norm(onode *n) {
  int64_t axis, stash;
  double eps;
  if (!onnx_check_attrs(n, " axis epsilon stash_type ") || !onnx_attr_int(n, "axis", -1, &axis) ||
      !onnx_attr_float(n, "epsilon", 1e-5, &eps) || !onnx_attr_int(n, "stash_type", 1, &stash))
    return false;
  mlc_gvar *x = onnx_var(n, 0), *g = onnx_var(n, 1), *b = onnx_in_val(n, 2) ? onnx_var(n, 2) : NULL;
  if (!x || !g || (onnx_in_val(n, 2) && !b)) return false;
  if (onnx_in_rank(n, 0) == 0) return onnx_fail(n, "the input is a scalar (no axis)");
  int nd = x->type.ndim, ax = 0;
  if (!onnx_norm_axis(n, axis, nd, &ax)) return false;
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
  if (!y || !onnx_set_var(n, 0, onnx_reshape(n, NULL, y, nd, x->type.shape))) return false;
  return !(has_out(n, 1) || has_out(n, 2)) || layer_norm_stats(n, x2, ax, nd, eps);
}

/* InstanceNormalization: per (n, c), over the spatial axes,
 * y = scale[c] (x - mean) / sqrt(var + eps) + B[c] with the biased
 * variance mean((x - mean)^2). */
bool onnx_cv_instance_norm(onode *n) {
  double eps;
  if (!onnx_check_attrs(n, " epsilon ") || !onnx_attr_float(n, "epsilon", 1e-5, &eps)) return false;
  mlc_gvar *x = onnx_var(n, 0), *g = onnx_var(n, 1), *b = onnx_var(n, 2);
  if (!x || !g || !b) return false;
  int nd = onnx_in_rank(n, 0);
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
                                 (mlc_gvar *[]){var, onnx_scalar_const(n, "eps", eps)})
                     : NULL;
  mlc_gvar *sd = ve ? onnx_emit(n, "std", MLC_GOP_SQRT, &e, 1, &ve) : NULL;
  mlc_gvar *nv = sd ? onnx_emit(n, "normed", MLC_GOP_DIVIDE, &e, 2, (mlc_gvar *[]){dv, sd}) : NULL;
  mlc_gvar *sc = nv && gc ? onnx_emit(n, "scaled", MLC_GOP_MULTIPLY, &e, 2, (mlc_gvar *[]){nv, gc}) : NULL;
  return onnx_set_var(n, 0, sc && bc ? onnx_emit(n, NULL, MLC_GOP_ADD, &e, 2, (mlc_gvar *[]){sc, bc}) : NULL);
}
