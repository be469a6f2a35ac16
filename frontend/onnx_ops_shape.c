/* ONNX converters: shapes (Reshape, Flatten, Squeeze, ...) and integer data movement (Gather, Concat, Slice, ...: shape arithmetic).
 * The op table is onnx_ops.c. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- shapes ------------------------------------------------------------------ */

/* Output k has shape (nd, shape): ints onnx_reshaped, floats a reshape. */
bool onnx_reshaped(onode *n, int nd, const int64_t *shape) {
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

bool onnx_cv_reshape(onode *n) {
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
  return onnx_reshaped(n, (int)c, shape);
}

bool onnx_cv_flatten(onode *n) {
  int64_t axis;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", 1, &axis)) return false;
  const oval *x = n->in[0];
  int ax = 0;
  if (axis == x->ndim) ax = x->ndim;
  else if (!onnx_norm_axis(n, axis, x->ndim, &ax)) return false;
  int64_t s[2] = {onnx_numel(ax, x->shape), onnx_numel(x->ndim - ax, x->shape + ax)};
  return onnx_reshaped(n, 2, s);
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input since. */
static bool axes_of(onode *n, int *count, int64_t *axes) {
  if (n->opset < 13) {
    if (!onnx_check_attrs(n, " axes ") || !onnx_attr_ints(n, "axes", MLC_GRAPH_MAX_DIMS, count, axes))
      return false;
    return true;
  }
  if (!onnx_no_attrs(n)) return false;
  *count = -1;
  if (!onnx_in_val(n, 1)) return true;
  int64_t c;
  const int64_t *a = onnx_ints(n, 1, &c);
  if (!a) return false;
  if (c > MLC_GRAPH_MAX_DIMS) return onnx_fail(n, "too many axes");
  memcpy(axes, a, sizeof(int64_t) * (size_t)c);
  *count = (int)c;
  return true;
}

bool onnx_cv_squeeze(onode *n) {
  int c;
  int64_t axes[MLC_GRAPH_MAX_DIMS];
  if (!axes_of(n, &c, axes)) return false;
  const oval *x = n->in[0];
  bool drop[MLC_GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < c; i++) {
    int ax = 0;
    if (!onnx_norm_axis(n, axes[i], x->ndim, &ax)) return false;
    if (x->shape[ax] != 1) return onnx_fail(n, "axis %d has extent %lld, not 1", ax, (long long)x->shape[ax]);
    drop[ax] = true;
  }
  int64_t s[MLC_GRAPH_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!(c < 0 ? x->shape[d] == 1 : drop[d])) s[nd++] = x->shape[d];
  return onnx_reshaped(n, nd, s);
}

bool onnx_cv_unsqueeze(onode *n) {
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
    if (!onnx_norm_axis(n, axes[i], nd, &ax)) return false;
    if (ins[ax]) return onnx_fail(n, "axis %d given twice", ax);
    ins[ax] = true;
  }
  int64_t s[MLC_GRAPH_MAX_DIMS];
  for (int d = 0, k = 0; d < nd; d++) s[d] = ins[d] ? 1 : x->shape[k++];
  return onnx_reshaped(n, nd, s);
}

bool onnx_cv_transpose(onode *n) {
  int c;
  int64_t perm[MLC_GRAPH_MAX_DIMS];
  if (!onnx_check_attrs(n, " perm ") || !onnx_attr_ints(n, "perm", MLC_GRAPH_MAX_DIMS, &c, perm))
    return false;
  const oval *x = n->in[0];
  if (x->is_int) return onnx_fail(n, "transposing integer tensors is not supported");
  if (x->ndim == 0) return onnx_reshaped(n, 0, NULL); /* a scalar stays itself */
  if (c >= 0 && c != x->ndim) return onnx_fail(n, "perm has %d entries for rank %d", c, x->ndim);
  int p[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) p[d] = c < 0 ? x->ndim - 1 - d : (int)perm[d];
  mlc_gvar *v = onnx_var(n, 0);
  return v && onnx_set_var(n, 0, onnx_transpose(n, NULL, v, x->ndim, p));
}

/* Shape (with start/end since opset 15) of any tensor: its static shape. */
bool onnx_cv_shape(onode *n) {
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

bool onnx_cv_size(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  int64_t c = onnx_numel(n->in[0]->ndim, n->in[0]->shape);
  return onnx_set_out_ints(n, 0, 0, NULL, &c);
}

bool onnx_cv_constant(onode *n) {
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

bool onnx_cv_constant_of_shape(onode *n) {
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

/* Gather as the graph's gather: data of any dtype, integer indices
 * (constant ones checked here; model inputs checked at run time, before
 * any kernel: mlc_graph_check_inputs). */
static bool gather_graph(onode *n, int64_t axis) {
  mlc_gvar *x = onnx_var(n, 0), *ind = onnx_var(n, 1);
  if (!x || !ind) return false;
  int ax = 0;
  if (!onnx_norm_axis(n, axis, onnx_in_rank(n, 0), &ax)) return false;
  int64_t e = x->type.shape[ax];
  const oval *iv = n->in[1];
  if (ind->type.dtype != MLC_INT64 && ind->type.dtype != MLC_INT32)
    return onnx_fail(n, "indices of dtype %s (int64 or int32 expected)", mlc_dtype_name(ind->type.dtype));
  if (iv->is_int)
    for (int64_t k = 0, c = onnx_numel(iv->ndim, iv->shape); k < c; k++)
      if (iv->i[k] < -e || iv->i[k] >= e)
        return onnx_fail(n, "index %lld is out of range", (long long)iv->i[k]);
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_GATHER, &a);
  a.axis = ax;
  mlc_gvar *args[2] = {x, ind};
  mlc_gvar *y = onnx_emit(n, iv->ndim ? NULL : "g", MLC_GOP_GATHER, &a, 2, args);
  if (!y) return false;
  int nd = onnx_in_rank(n, 0) - 1 + iv->ndim; /* ONNX rank: a scalar index drops the axis */
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  memcpy(shape, x->type.shape, sizeof(int64_t) * (size_t)ax);
  memcpy(shape + ax, iv->shape, sizeof(int64_t) * (size_t)iv->ndim);
  memcpy(shape + ax + iv->ndim, x->type.shape + ax + 1, sizeof(int64_t) * (size_t)(onnx_in_rank(n, 0) - ax - 1));
  if (nd == 0) return onnx_fail(n, "a scalar result is not supported");
  if (!iv->ndim && !(y = onnx_reshape(n, NULL, y, nd, shape))) return false;
  return onnx_set_out(n, 0, y, nd, shape);
}

/* Gather over axis with constant indices (negative count from the end). */
bool onnx_cv_gather(onode *n) {
  int64_t axis, c;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", 0, &axis)) return false;
  if (!n->in[0]->is_int || !n->in[1]->is_int) return gather_graph(n, axis);
  if (!need_int(n, 0)) return false;
  const oval *x = n->in[0];
  const int64_t *idx = onnx_ints(n, 1, &c);
  if (!idx) return false;
  int ax = 0;
  if (!onnx_norm_axis(n, axis, x->ndim, &ax)) return false;
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
  if (onnx_in_rank(n, 0) == 0) return onnx_fail(n, "concatenating scalars");
  int ax = 0;
  if (!onnx_norm_axis(n, axis, onnx_in_rank(n, 0), &ax)) return false;
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_CONCAT, &a);
  a.axis = ax;
  return onnx_set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_CONCAT, &a, n->n_in, args));
}

bool onnx_cv_concat(onode *n) {
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
  if (!onnx_norm_axis(n, axis, x->ndim, &ax)) return false;
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

int64_t onnx_clamp40(int64_t v) {
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
    if (!onnx_no_attrs(n)) return false;
    for (int i = 0; i < 4; i++) {
      if (!onnx_in_val(n, i + 1)) continue;
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
    if (!onnx_norm_axis(n, c[2] >= 0 ? v[2][i] : i, rank, &ax)) return false;
    a->ints[i] = ax;
    a->starts[i] = onnx_clamp40(v[0][i]);
    a->ends[i] = onnx_clamp40(v[1][i]);
    a->steps[i] = c[3] >= 0 ? onnx_clamp40(v[3][i]) : 1;
    if (a->steps[i] == 0) return onnx_fail(n, "a step is 0");
  }
  return true;
}

/* Slice with constant parameters: the graph's slice (folded over constants);
 * of a 1-D integer constant (shapes), computed now. */
bool onnx_cv_slice(onode *n) {
  const oval *x = n->in[0];
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_SLICE, &a);
  if (!slice_attrs(n, x->ndim, &a)) return false;
  if (!x->is_int || x->ndim != 1) {
    mlc_gvar *v = onnx_var(n, 0);
    if (!v) return false;
    if (x->ndim == 0) return onnx_fail(n, "slicing a scalar");
    return onnx_set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_SLICE, &a, 1, &v));
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
bool onnx_cv_pad(onode *n) {
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
    if (onnx_in_val(n, 2) && !onnx_scalar_input(n, 2, &value)) return false;
    if (onnx_in_val(n, 3)) return onnx_fail(n, "the axes input is not supported");
  }
  mlc_gvar *x = onnx_var(n, 0);
  if (!x) return false;
  int r = onnx_in_rank(n, 0);
  if (r == 0 || c != 2 * r) return onnx_fail(n, "pads must have 2 entries per axis (%d)", 2 * r);
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_PAD, &a);
  a.n_pads = r;
  a.pad_value = value;
  for (int d = 0; d < r; d++) a.pad_before[d] = pads[d], a.pad_after[d] = pads[r + d];
  return onnx_set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_PAD, &a, 1, &x));
}

/* Split into slices along axis: sizes from the split attribute (input
 * since opset 13), else equal parts. */
bool onnx_cv_split(onode *n) {
  int64_t axis;
  int cs = -1;
  int64_t sizes[MLC_GRAPH_MAX_ARGS];
  if (!onnx_check_attrs(n, n->opset < 13 ? " axis split " : " axis ") ||
      !onnx_attr_int(n, "axis", 0, &axis))
    return false;
  if (n->opset < 13 && !onnx_attr_ints(n, "split", MLC_GRAPH_MAX_ARGS, &cs, sizes)) return false;
  if (n->opset >= 13 && onnx_in_val(n, 1)) {
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
  if (!onnx_norm_axis(n, axis, onnx_in_rank(n, 0), &ax)) return false;
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
/* An integer constant's values as dtype `to` stores them. */
static int64_t int_as(int64_t v, mlc_dtype to) {
  return to == MLC_BOOL ? v != 0 : to == MLC_INT32 ? (int32_t)(uint32_t)(uint64_t)v : v;
}

/* Cast among float32, int64, int32 and bool (ONNX: float to integer
 * truncates toward zero). Integer constants stay constants (shape
 * arithmetic), a float constant cast to an integer becomes one; the rest
 * is the graph's astype (folded when its operand is a constant). */
bool onnx_cv_cast(onode *n) {
  int64_t to;
  if (!onnx_check_attrs(n, " to saturate ") || !onnx_attr_int(n, "to", 0, &to)) return false;
  mlc_dtype gt;
  if (!onnx_graph_dtype((int32_t)to, &gt))
    return onnx_fail(n, "cast to dtype %s is not supported (%s)", onnx_dtype_name((int32_t)to),
                     mlc_graph_dtype_names());
  const oval *x = n->in[0];
  int64_t c = onnx_numel(x->ndim, x->shape);
  if (x->is_int && gt != MLC_FLOAT32) {
    int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(c + 1));
    for (int64_t k = 0; k < c; k++) y[k] = int_as(x->i[k], gt);
    return onnx_set_out_ints_as(n, 0, (int32_t)to, x->ndim, x->shape, y);
  }
  if (onnx_const_float(x) && gt != MLC_FLOAT32) {
    int64_t cnt;
    const float *f = onnx_floats(n, 0, &cnt);
    if (!f) return false;
    int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(c + 1));
    for (int64_t k = 0; k < c; k++) {
      if (gt == MLC_BOOL) y[k] = f[k] != 0;
      else if (!(fabsf(f[k]) < 9e18f)) return onnx_fail(n, "value %g does not fit an integer", f[k]);
      else y[k] = int_as((int64_t)f[k], gt);
    }
    return onnx_set_out_ints_as(n, 0, (int32_t)to, x->ndim, x->shape, y);
  }
  mlc_gvar *v = onnx_var(n, 0);
  if (!v) return false;
  if (v->type.dtype == gt) return onnx_set_out(n, 0, v, x->ndim, x->shape);
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_ASTYPE, &a);
  a.to = gt;
  mlc_gvar *y = onnx_emit(n, NULL, MLC_GOP_ASTYPE, &a, 1, &v);
  return y && onnx_set_out(n, 0, y, x->ndim, x->shape);
}

/* Range(start, limit, delta) of scalar constants: max(ceil((limit -
 * start) / delta), 0) elements, integers when all three are (shape
 * arithmetic), float32 otherwise; the count goes through the tensor
 * limits before anything is sized by it. */
bool onnx_cv_range(onode *n) {
  if (!onnx_no_attrs(n)) return false;
  double v[3];
  bool ints = n->in[0]->is_int && n->in[1]->is_int && n->in[2]->is_int;
  for (int k = 0; k < 3; k++) {
    if (onnx_numel(n->in[k]->ndim, n->in[k]->shape) != 1)
      return onnx_fail(n, "input %d must be a single value", k);
    if (n->in[k]->is_int) v[k] = (double)n->in[k]->i[0];
    else if (!onnx_scalar_input(n, k, &v[k])) return false;
  }
  if (v[2] == 0 || !isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]))
    return onnx_fail(n, "start %g, limit %g, delta %g (a finite range with a nonzero delta expected)",
                     v[0], v[1], v[2]);
  double cnt = ceil((v[1] - v[0]) / v[2]);
  int64_t shape[1] = {cnt > 0 ? (cnt < 0x1p62 ? (int64_t)cnt : INT64_MAX) : 0};
  if (onnx_checked_numel(n, "the result", 1, shape, 8) < 0) return false;
  if (ints) {
    int64_t *y = mlc_arena_alloc(n->arena, sizeof(int64_t) * (size_t)(shape[0] + 1));
    /* step by step: start + k * delta may wrap where the element does not;
     * the count, computed in double, may be one too many near 2^63 */
    y[0] = n->in[0]->i[0];
    for (int64_t k = 1; k < shape[0]; k++)
      if (mlc_add_overflow(y[k - 1], n->in[2]->i[0], &y[k]))
        return onnx_fail(n, "element %lld of the range overflows int64", (long long)k);
    return onnx_set_out_ints(n, 0, 1, shape, y);
  }
  if (shape[0] < 1) return onnx_fail(n, "an empty float range is not supported");
  mlc_gtype t = {MLC_FLOAT32, 1, {shape[0]}};
  mlc_gvar *c = onnx_new_const(n, NULL, &t);
  for (int64_t k = 0; k < shape[0]; k++) ((float *)c->data)[k] = (float)(v[0] + (double)k * v[2]);
  return onnx_set_out(n, 0, c, 1, shape);
}

/* GatherElements along axis: data of any dtype, int64 or int32 indices of
 * the data's rank (negative from the end); constant indices must be
 * inside the axis, runtime ones outside it read position 0. */
bool onnx_cv_gather_elements(onode *n) {
  int64_t axis;
  if (!onnx_check_attrs(n, " axis ") || !onnx_attr_int(n, "axis", 0, &axis)) return false;
  mlc_gvar *x = onnx_var(n, 0), *ind = onnx_var(n, 1);
  if (!x || !ind) return false;
  int r = onnx_in_rank(n, 0), ax = 0;
  if (r == 0) return onnx_fail(n, "the input is a scalar");
  if (onnx_in_rank(n, 1) != r)
    return onnx_fail(n, "indices of rank %d for data of rank %d (one rank expected)", onnx_in_rank(n, 1), r);
  if (!onnx_norm_axis(n, axis, r, &ax)) return false;
  if (ind->type.dtype != MLC_INT64 && ind->type.dtype != MLC_INT32)
    return onnx_fail(n, "indices of dtype %s (int64 or int32 expected)", mlc_dtype_name(ind->type.dtype));
  const oval *iv = n->in[1];
  for (int d = 0; d < r; d++)
    if (d != ax && iv->shape[d] > n->in[0]->shape[d])
      return onnx_fail(n, "indices extent %lld on axis %d is past the data's %lld", (long long)iv->shape[d],
                       d, (long long)n->in[0]->shape[d]);
  int64_t e = x->type.shape[ax];
  if (iv->is_int)
    for (int64_t k = 0, c = onnx_numel(iv->ndim, iv->shape); k < c; k++)
      if (iv->i[k] < -e || iv->i[k] >= e)
        return onnx_fail(n, "index %lld (element %lld) is out of range [%lld, %lld)", (long long)iv->i[k],
                         (long long)k, (long long)-e, (long long)e);
  mlc_gattrs a;
  mlc_gattrs_init(MLC_GOP_GATHER_ELEMENTS, &a);
  a.axis = ax;
  return onnx_set_var(n, 0, onnx_emit(n, NULL, MLC_GOP_GATHER_ELEMENTS, &a, 2, (mlc_gvar *[]){x, ind}));
}

/* ScatterND (reduction none, add, mul) as the graph's scatter_nd ops;
 * constant indices must be inside data. An update of rank 0 (indices [k]
 * naming one element) goes in as indices [1, k] and updates [1]. */
bool onnx_cv_scatter_nd(onode *n) {
  const char *red;
  if (!onnx_check_attrs(n, " reduction ") || !onnx_attr_string(n, "reduction", "none", &red)) return false;
  mlc_gop op = MLC_GOP_SCATTER_ND;
  if (strcmp(red, "add") == 0) op = MLC_GOP_SCATTER_ND_ADD;
  else if (strcmp(red, "mul") == 0) op = MLC_GOP_SCATTER_ND_MUL;
  else if (strcmp(red, "none") != 0)
    return onnx_fail(n, "reduction \"%s\" is not supported (none, add, mul are)", red);
  mlc_gvar *args[3] = {onnx_var(n, 0), onnx_var(n, 1), onnx_var(n, 2)};
  if (!args[0] || !args[1] || !args[2]) return false;
  const oval *x = n->in[0], *iv = n->in[1];
  if (x->ndim == 0 || iv->ndim == 0) return onnx_fail(n, "data and indices must have rank 1 or more");
  int64_t k = iv->shape[iv->ndim - 1];
  if (k < 1 || k > x->ndim) return onnx_fail(n, "indices rows of %lld entries for data of rank %d", (long long)k, x->ndim);
  if (iv->is_int)
    for (int64_t e = 0, c = onnx_numel(iv->ndim, iv->shape); e < c; e++) {
      int64_t v = iv->i[e], ext = x->shape[e % k];
      if (v < -ext || v >= ext)
        return onnx_fail(n, "index %lld (element %lld) is out of range [%lld, %lld)", (long long)v,
                         (long long)e, (long long)-ext, (long long)ext);
    }
  if (onnx_in_rank(n, 2) == 0) {
    if (!(args[1] = onnx_reshape(n, "rows", args[1], 2, (int64_t[]){1, k}))) return false;
  }
  mlc_gattrs a;
  mlc_gattrs_init(op, &a);
  return onnx_set_var(n, 0, onnx_emit(n, NULL, op, &a, 3, args));
}
