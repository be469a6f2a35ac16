/* ONNX converters: quantization (QuantizeLinear, DequantizeLinear), onto
 * the graph's quantize and dequantize ops. A scale and zero point are one
 * value for the tensor, or one per element along an axis (reshaped here so
 * that they broadcast along it); blocked quantization is refused. The op
 * table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <string.h>

/* Input k (a scale or zero point) as a var broadcasting against x's
 * ONNX shape (rank nd): one value stays as it is, one per element along
 * `axis` becomes [C, 1, ..., 1] from the axis on. NULL with a message for
 * any other shape. */
static mlc_gvar *along_axis(onode *n, int k, const char *sfx, int nd, const int64_t *xshape,
                            int64_t axis) {
  mlc_gvar *v = onnx_var(n, k);
  if (!v) return NULL;
  const oval *o = n->in[k];
  int64_t count = onnx_numel(o->ndim, o->shape);
  if (count == 1 && o->ndim <= 1) return v;
  int ax = 0;
  if (o->ndim != 1 || !onnx_norm_axis(n, axis, nd, &ax)) {
    if (o->ndim != 1) onnx_fail(n, "input %d has rank %d: one value or one per element along the axis", k, o->ndim);
    return NULL;
  }
  if (count != xshape[ax]) {
    onnx_fail(n, "input %d has %lld values for axis %d of extent %lld (blocked quantization is not supported)",
              k, (long long)count, ax, (long long)xshape[ax]);
    return NULL;
  }
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  for (int d = ax; d < nd; d++) shape[d - ax] = d == ax ? count : 1;
  return onnx_reshape(n, sfx, v, nd - ax, shape);
}

/* The zero point (input 2), or where it is left out a zero of dtype dt;
 * it must have the same shape as the scale. */
static mlc_gvar *zero_point(onode *n, mlc_dtype dt, int nd, const int64_t *xshape, int64_t axis) {
  if (onnx_in_val(n, 2)) {
    const oval *s = n->in[1], *z = n->in[2];
    if (s->ndim != z->ndim || memcmp(s->shape, z->shape, sizeof(int64_t) * (size_t)s->ndim) != 0) {
      onnx_fail(n, "the zero point's shape differs from the scale's");
      return NULL;
    }
    return along_axis(n, 2, "zero_point", nd, xshape, axis);
  }
  mlc_gtype t = {dt, 1, {1}};
  mlc_gvar *z = onnx_new_const(n, "zero_point", &t);
  memset(z->data, 0, (size_t)mlc_dtype_bytes(dt));
  return z;
}

static bool no_blocks(onode *n) {
  int64_t block;
  if (!onnx_attr_int(n, "block_size", 0, &block)) return false;
  return block == 0 || onnx_fail(n, "block_size %lld: blocked quantization is not supported", (long long)block);
}

/* The graph dtype of a zero point: uint8 or int8 (int32 too where
 * dequantizing, from values of that dtype). */
static bool quant_dtype(onode *n, const char *what, mlc_dtype t, bool int32_ok) {
  if (t == MLC_UINT8 || t == MLC_INT8 || (int32_ok && t == MLC_INT32)) return true;
  return onnx_fail(n, "%s is %s; %s supported", what, mlc_dtype_name(t),
                   int32_ok ? "uint8, int8 or int32" : "uint8 or int8");
}

static bool float_scale(onode *n, const mlc_gvar *s) {
  return s->type.dtype == MLC_FLOAT32 ||
         onnx_fail(n, "the scale is %s; float32 supported", mlc_dtype_name(s->type.dtype));
}

/* y = saturate(round(x / scale) + zero_point), the zero point's dtype
 * (uint8 without one, or output_dtype). */
bool onnx_cv_quantize_linear(onode *n) {
  int64_t axis, saturate, out_dt;
  if (!onnx_check_attrs(n, " axis block_size output_dtype saturate ") ||
      !onnx_attr_int(n, "axis", 1, &axis) || !onnx_attr_int(n, "saturate", 1, &saturate) ||
      !onnx_attr_int(n, "output_dtype", 0, &out_dt) || !no_blocks(n))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  if (x->type.dtype != MLC_FLOAT32)
    return onnx_fail(n, "the input is %s; float32 supported", mlc_dtype_name(x->type.dtype));
  const oval *xv = n->in[0];
  mlc_dtype dt = MLC_UINT8;
  if (onnx_in_val(n, 2)) {
    mlc_gvar *z = onnx_var(n, 2);
    if (!z) return false;
    dt = z->type.dtype;
  } else if (out_dt && !onnx_graph_dtype((int32_t)out_dt, &dt)) {
    return onnx_fail(n, "output_dtype %s is not supported", onnx_dtype_name((int32_t)out_dt));
  }
  if (!quant_dtype(n, "the output", dt, false)) return false;
  mlc_gvar *s = along_axis(n, 1, "scale", xv->ndim, xv->shape, axis);
  if (!s || !float_scale(n, s)) return false;
  mlc_gvar *z = zero_point(n, dt, xv->ndim, xv->shape, axis);
  if (!z) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_QUANTIZE, &a);
  mlc_gvar *y = onnx_emit(n, NULL, MLC_GOP_QUANTIZE, &a, 3, (mlc_gvar *[]){x, s, z});
  return y && onnx_set_out(n, 0, y, xv->ndim, xv->shape);
}

/* y = (x - zero_point) * scale in float32; over constant weights a
 * binding, not a constant: the quantize pass computes a dense layer over
 * them on their integers (the fold pass folds what it leaves). */
bool onnx_cv_dequantize_linear(onode *n) {
  int64_t axis;
  if (!onnx_check_attrs(n, " axis block_size ") || !onnx_attr_int(n, "axis", 1, &axis) ||
      !no_blocks(n))
    return false;
  mlc_gvar *x = onnx_var(n, 0);
  if (!x || !quant_dtype(n, "the input", x->type.dtype, true)) return false;
  const oval *xv = n->in[0];
  mlc_gvar *s = along_axis(n, 1, "scale", xv->ndim, xv->shape, axis);
  if (!s || !float_scale(n, s)) return false;
  mlc_gvar *z = zero_point(n, x->type.dtype, xv->ndim, xv->shape, axis);
  if (!z) return false;
  if (z->type.dtype != x->type.dtype)
    return onnx_fail(n, "the zero point is %s, the input %s", mlc_dtype_name(z->type.dtype),
                     mlc_dtype_name(x->type.dtype));
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_DEQUANTIZE, &a);
  mlc_gvar *y = onnx_emit_bound(n, NULL, MLC_GOP_DEQUANTIZE, &a, 3, (mlc_gvar *[]){x, s, z});
  return y && onnx_set_out(n, 0, y, xv->ndim, xv->shape);
}
