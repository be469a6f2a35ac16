/* Lowering: every op call becomes R.call_tir of a prim_func written with
 * the ir builder (the notes' LowerToTensorIR with call_te). Ops that match a
 * built-in task (2-d matmul, batch matmul, conv2d, softmax, layernorm, 2-d
 * transpose) reuse the task's builder; the rest are written here. */
#include "graph/graph_impl.h"
#include "tasks/tasks.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

static mlc_expr *f32(mlc_arena *a, double v) { return mlc_float(a, MLC_FLOAT32, v); }

/* The constant v in dtype t (a graph dtype). */
static mlc_expr *const_of(mlc_arena *a, mlc_dtype t, double v) {
  if (t == MLC_FLOAT32) return f32(a, v);
  if (t == MLC_BOOL) return mlc_bool(a, v != 0);
  return mlc_int_t(a, t, (int64_t)v);
}

/* The constant v in the dtype of expression like. */
static mlc_expr *like(mlc_arena *a, const mlc_expr *e, double v) { return const_of(a, e->dtype, v); }

static bool is_int(const mlc_expr *e) { return mlc_dtype_is_int(e->dtype); }

/* x / y for integers (k: DIV truncates, FLOORMOD the floor remainder,
 * SUB the truncated remainder x - (x / y) * y): 0 where y is 0 (the
 * reference's rule; no trap, whatever the divisor). */
static mlc_expr *int_divide(mlc_arena *a, mlc_expr_kind k, mlc_expr *x, mlc_expr *y) {
  mlc_expr *zero = mlc_binary(a, MLC_EXPR_EQ, y, like(a, y, 0));
  mlc_expr *safe = mlc_select(a, zero, like(a, y, 1), y);
  mlc_expr *r = k == MLC_EXPR_SUB
                    ? mlc_sub(a, x, mlc_mul(a, mlc_binary(a, MLC_EXPR_DIV, x, safe), safe))
                    : mlc_binary(a, k, x, safe);
  return mlc_select(a, zero, like(a, x, 0), r);
}

/* trunc(x) for floats: toward zero. */
static mlc_expr *trunc_f(mlc_arena *a, mlc_expr *x) {
  return mlc_select(a, mlc_binary(a, MLC_EXPR_LT, x, f32(a, 0)),
                    mlc_call(a, MLC_INTRIN_CEIL, (mlc_expr *[]){x}),
                    mlc_call(a, MLC_INTRIN_FLOOR, (mlc_expr *[]){x}));
}

static mlc_te_tensor *placeholder(mlc_te *te, const char *name, const mlc_gtype *t) {
  return mlc_te_placeholder(te, name, t->ndim, t->shape, t->dtype);
}

/* x read at the output index idx of an n-d broadcast result. */
static mlc_expr *bcast_at(mlc_arena *a, mlc_te *te, mlc_te_tensor *x, const mlc_gtype *xt,
                          const mlc_gtype *out, mlc_expr **idx) {
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  int off = out->ndim - xt->ndim;
  for (int d = 0; d < xt->ndim; d++)
    ix[d] = xt->shape[d] == 1 && out->shape[d + off] != 1 ? mlc_int(a, 0) : idx[d + off];
  return mlc_te_at_v(te, x, ix);
}

static mlc_expr *intrin1(mlc_arena *a, mlc_intrin op, mlc_expr *x) {
  return mlc_call(a, op, (mlc_expr *[]){x});
}

/* max(0, min(1, alpha * x + beta)) */
static mlc_expr *hard_sigmoid(mlc_arena *a, mlc_expr *x, double alpha, double beta) {
  mlc_expr *t = mlc_add(a, mlc_mul(a, f32(a, alpha), x), f32(a, beta));
  return mlc_binary(a, MLC_EXPR_MAX, f32(a, 0), mlc_binary(a, MLC_EXPR_MIN, f32(a, 1), t));
}

/* x ** c; the exponents exporters use most become multiplies or sqrt. */
static mlc_expr *power(mlc_arena *a, mlc_expr *x, double c) {
  if (c == 1) return x;
  if (c == 2) return mlc_mul(a, x, x);
  if (c == 3) return mlc_mul(a, mlc_mul(a, x, x), x);
  if (c == 0.5) return intrin1(a, MLC_INTRIN_SQRT, x);
  if (c == -1) return mlc_binary(a, MLC_EXPR_DIV, f32(a, 1), x);
  return mlc_call(a, MLC_INTRIN_POW, (mlc_expr *[]){x, f32(a, c)});
}

/* x ** e for integers x and e (e cast to x's dtype): a chain of N
 * multiplies (N x's bits) by x or 1, so exact, wrapping as the multiplies
 * do; an exponent past N - 2 is cut to N - 2 or N - 1 of its parity (only
 * x = 0, 1, -1 do not overflow there); for e < 0, 1 / x ** -e truncated:
 * 0 but for x = 1 or -1 (by e's parity). */
static mlc_expr *int_pow(mlc_arena *a, mlc_expr *x, mlc_expr *e) {
  int N = mlc_dtype_bits(x->dtype);
  e = mlc_cast(a, x->dtype, e);
  mlc_expr *odd = mlc_binary(a, MLC_EXPR_FLOORMOD, e, like(a, e, 2));
  mlc_expr *neg = mlc_binary(a, MLC_EXPR_LT, e, like(a, e, 0));
  mlc_expr *cut = mlc_select(a, mlc_binary(a, MLC_EXPR_GE, e, like(a, e, N - 1)),
                             mlc_add(a, like(a, e, N - 2), odd), e);
  mlc_expr *ee = mlc_select(a, neg, odd, cut), *acc = like(a, x, 1);
  for (int r = 0; r < N; r++)
    acc = mlc_mul(a, acc, mlc_select(a, mlc_binary(a, MLC_EXPR_GT, ee, like(a, e, r)), x, like(a, x, 1)));
  mlc_expr *unit = mlc_binary(a, MLC_EXPR_OR, mlc_binary(a, MLC_EXPR_EQ, x, like(a, x, 1)),
                              mlc_binary(a, MLC_EXPR_EQ, x, like(a, x, -1)));
  return mlc_select(a, mlc_binary(a, MLC_EXPR_AND, neg, mlc_not(a, unit)), like(a, x, 0), acc);
}

/* Float v to integer dtype t truncated; 0 where v is NaN or past t's
 * range (no poison from the conversion). */
static mlc_expr *float_to_int(mlc_arena *a, mlc_dtype t, mlc_expr *v) {
  double lim = t == MLC_INT32 ? 0x1p31 : 0x1p63;
  mlc_expr *ok = mlc_binary(a, MLC_EXPR_AND, mlc_binary(a, MLC_EXPR_GE, v, f32(a, -lim)),
                            mlc_binary(a, MLC_EXPR_LT, v, f32(a, lim)));
  return mlc_cast(a, t, mlc_select(a, ok, v, f32(a, 0)));
}

/* pow: x's dtype; float exponents of integers in float32 (ONNX computes
 * them in double, then casts). */
static mlc_expr *pow_of(mlc_arena *a, mlc_expr *x, mlc_expr *e) {
  if (is_int(x) && is_int(e)) return int_pow(a, x, e);
  mlc_expr *xf = is_int(x) ? mlc_cast(a, MLC_FLOAT32, x) : x;
  mlc_expr *ef = is_int(e) ? mlc_cast(a, MLC_FLOAT32, e) : e;
  mlc_expr *p = mlc_call(a, MLC_INTRIN_POW, (mlc_expr *[]){xf, ef});
  return is_int(x) ? float_to_int(a, x->dtype, p) : p;
}

/* ---- pointwise ops (ops.def's MLC_GOP_PW rows) -------------------------------- */

/* A pointwise op's value from its operands' values v. */
#define PW(name) \
  static mlc_expr *pw_##name(mlc_arena *a, const mlc_gattrs *at __attribute__((unused)), \
                             mlc_expr **v)

PW(add) { return mlc_add(a, v[0], v[1]); }
PW(multiply) { return mlc_mul(a, v[0], v[1]); }
PW(subtract) { return mlc_sub(a, v[0], v[1]); }
/* Whether v is the same along the last output axis: a constant, or a load
 * broadcast there (its last index a constant: a row's scalar). */
static bool same_along_rows(const mlc_expr *v) {
  if (v->kind == MLC_EXPR_FLOAT_IMM) return true;
  if (v->kind != MLC_EXPR_LOAD) return false;
  const mlc_expr *last = v->load.indices[v->load.buf->ndim - 1];
  return last->kind == MLC_EXPR_INT_IMM;
}

/* A float divisor the same along a row becomes a multiplier, 1 / d, which
 * the compiled loop computes once per row instead of a division per
 * element (a normalization's quotient; within an ulp of the quotient). */
PW(divide) {
  if (is_int(v[0])) return int_divide(a, MLC_EXPR_DIV, v[0], v[1]);
  if (same_along_rows(v[1]))
    return mlc_mul(a, v[0], mlc_binary(a, MLC_EXPR_DIV, like(a, v[1], 1), v[1]));
  return mlc_binary(a, MLC_EXPR_DIV, v[0], v[1]);
}
PW(maximum) { return mlc_binary(a, MLC_EXPR_MAX, v[0], v[1]); }
PW(minimum) { return mlc_binary(a, MLC_EXPR_MIN, v[0], v[1]); }
PW(pow) { return pow_of(a, v[0], v[1]); }
PW(ewise_fma) { return mlc_add(a, mlc_mul(a, v[0], v[1]), v[2]); }
PW(relu) { return mlc_binary(a, MLC_EXPR_MAX, v[0], f32(a, 0)); }
PW(gelu) {
  /* 0.5 * x * (1 + erf(x / sqrt(2))) */
  mlc_expr *e = intrin1(a, MLC_INTRIN_ERF, mlc_mul(a, v[0], f32(a, 0.70710678118654752)));
  return mlc_mul(a, mlc_mul(a, f32(a, 0.5), v[0]), mlc_add(a, f32(a, 1), e));
}
PW(power) { return power(a, v[0], at->exponent); }
PW(sqrt) { return intrin1(a, MLC_INTRIN_SQRT, v[0]); }
PW(exp) { return intrin1(a, MLC_INTRIN_EXP, v[0]); }
PW(erf) { return intrin1(a, MLC_INTRIN_ERF, v[0]); }
PW(tanh) { return intrin1(a, MLC_INTRIN_TANH, v[0]); }
PW(sigmoid) { return intrin1(a, MLC_INTRIN_SIGMOID, v[0]); }
PW(abs) {
  if (!is_int(v[0])) return intrin1(a, MLC_INTRIN_ABS, v[0]);
  return mlc_select(a, mlc_binary(a, MLC_EXPR_LT, v[0], like(a, v[0], 0)), mlc_sub(a, like(a, v[0], 0), v[0]), v[0]);
}
PW(log) { return intrin1(a, MLC_INTRIN_LOG, v[0]); }
PW(floor) { return intrin1(a, MLC_INTRIN_FLOOR, v[0]); }
PW(ceil) { return intrin1(a, MLC_INTRIN_CEIL, v[0]); }
PW(round) { return intrin1(a, MLC_INTRIN_ROUND, v[0]); }
PW(sin) { return intrin1(a, MLC_INTRIN_SIN, v[0]); }
PW(cos) { return intrin1(a, MLC_INTRIN_COS, v[0]); }
PW(tan) { return intrin1(a, MLC_INTRIN_TAN, v[0]); }
PW(asin) { return intrin1(a, MLC_INTRIN_ASIN, v[0]); }
PW(acos) { return intrin1(a, MLC_INTRIN_ACOS, v[0]); }
PW(atan) { return intrin1(a, MLC_INTRIN_ATAN, v[0]); }
PW(sinh) { return intrin1(a, MLC_INTRIN_SINH, v[0]); }
PW(cosh) { return intrin1(a, MLC_INTRIN_COSH, v[0]); }
PW(asinh) { return intrin1(a, MLC_INTRIN_ASINH, v[0]); }
PW(acosh) { return intrin1(a, MLC_INTRIN_ACOSH, v[0]); }
PW(atanh) { return intrin1(a, MLC_INTRIN_ATANH, v[0]); }
PW(sign) { /* x itself for 0 and NaN */
  return mlc_select(a, mlc_binary(a, MLC_EXPR_GT, v[0], f32(a, 0)), f32(a, 1),
                    mlc_select(a, mlc_binary(a, MLC_EXPR_LT, v[0], f32(a, 0)), f32(a, -1), v[0]));
}
PW(thresholded_relu) {
  return mlc_select(a, mlc_binary(a, MLC_EXPR_GT, v[0], f32(a, at->alpha)), v[0], f32(a, 0));
}
PW(shrink) {
  mlc_expr *hi = mlc_select(a, mlc_binary(a, MLC_EXPR_GT, v[0], f32(a, at->alpha)),
                            mlc_sub(a, v[0], f32(a, at->beta)), f32(a, 0));
  return mlc_select(a, mlc_binary(a, MLC_EXPR_LT, v[0], f32(a, -at->alpha)),
                    mlc_add(a, v[0], f32(a, at->beta)), hi);
}
PW(negative) { return is_int(v[0]) ? mlc_sub(a, like(a, v[0], 0), v[0]) : mlc_mul(a, f32(a, -1), v[0]); }
PW(equal) { return mlc_binary(a, MLC_EXPR_EQ, v[0], v[1]); }
PW(less) { return mlc_binary(a, MLC_EXPR_LT, v[0], v[1]); }
PW(greater) { return mlc_binary(a, MLC_EXPR_GT, v[0], v[1]); }
PW(less_equal) { return mlc_binary(a, MLC_EXPR_LE, v[0], v[1]); }
PW(greater_equal) { return mlc_binary(a, MLC_EXPR_GE, v[0], v[1]); }
PW(logical_not) { return mlc_not(a, v[0]); }
PW(logical_and) { return mlc_binary(a, MLC_EXPR_AND, v[0], v[1]); }
PW(logical_or) { return mlc_binary(a, MLC_EXPR_OR, v[0], v[1]); }
PW(logical_xor) { return mlc_binary(a, MLC_EXPR_NE, v[0], v[1]); }
PW(where) { return mlc_select(a, v[0], v[1], v[2]); }
PW(astype) {
  if (at->to == MLC_BOOL) return mlc_binary(a, MLC_EXPR_NE, v[0], like(a, v[0], 0));
  return v[0]->dtype == at->to ? v[0] : mlc_cast(a, at->to, v[0]);
}
/* the sign of the divisor: floor modulo (0 where an integer divisor is 0) */
PW(mod) {
  if (is_int(v[0])) return int_divide(a, MLC_EXPR_FLOORMOD, v[0], v[1]);
  return mlc_binary(a, MLC_EXPR_FLOORMOD, v[0], v[1]);
}
/* the sign of the dividend: x - trunc(x / y) * y */
PW(fmod) {
  if (!is_int(v[0])) {
    mlc_expr *q = trunc_f(a, mlc_binary(a, MLC_EXPR_DIV, v[0], v[1]));
    return mlc_sub(a, v[0], mlc_mul(a, q, v[1]));
  }
  return int_divide(a, MLC_EXPR_SUB, v[0], v[1]);
}
PW(leaky_relu) {
  return mlc_select(a, mlc_binary(a, MLC_EXPR_GE, v[0], f32(a, 0)), v[0],
                    mlc_mul(a, f32(a, at->alpha), v[0]));
}
PW(clip) {
  mlc_expr *x = v[0];
  if (at->lo > -INFINITY) x = mlc_binary(a, MLC_EXPR_MAX, x, f32(a, at->lo));
  if (at->hi < INFINITY) x = mlc_binary(a, MLC_EXPR_MIN, x, f32(a, at->hi));
  return x;
}
PW(hard_sigmoid) { return hard_sigmoid(a, v[0], at->alpha, at->beta); }
/* A true division (never the reciprocal's product: a tie rounds as ONNX
 * Runtime's does), rounded to even, shifted and saturated in float32;
 * the conversion then is exact. */
PW(quantize) {
  mlc_dtype t = v[2]->dtype;
  double lo = t == MLC_UINT8 ? 0 : -128, hi = t == MLC_UINT8 ? 255 : 127;
  mlc_expr *q = intrin1(a, MLC_INTRIN_ROUND, mlc_binary(a, MLC_EXPR_DIV, v[0], v[1]));
  q = mlc_add(a, q, mlc_cast(a, MLC_FLOAT32, v[2]));
  q = mlc_binary(a, MLC_EXPR_MIN, mlc_binary(a, MLC_EXPR_MAX, q, f32(a, lo)), f32(a, hi));
  return mlc_cast(a, t, q);
}
PW(dequantize) {
  mlc_expr *d = mlc_sub(a, mlc_cast(a, MLC_INT32, v[0]), mlc_cast(a, MLC_INT32, v[2]));
  return mlc_mul(a, mlc_cast(a, MLC_FLOAT32, d), v[1]);
}
PW(hard_swish) { return mlc_mul(a, v[0], hard_sigmoid(a, v[0], 1.0 / 6, 0.5)); }

typedef mlc_expr *pw_value(mlc_arena *a, const mlc_gattrs *at, mlc_expr **v);

/* NULL for the ops that are not pointwise. */
static pw_value *const pw_values[MLC_GOP_COUNT] = {
#define MLC_GOP_PW(id, name, script, n_in, shape, types, print, keys) [MLC_GOP_##id] = pw_##name,
#include "graph/ops.def"
};

static mlc_prim_func *lower_elemwise(mlc_arena *a, const char *name, mlc_gop op,
                                     const mlc_gattrs *at, int n, mlc_gvar *const *args,
                                     const mlc_gtype *out) {
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *in[3], *tensors[4];
  for (int i = 0; i < n; i++) tensors[i] = in[i] = placeholder(te, args[i]->name, &args[i]->type);
  char block[64];
  snprintf(block, sizeof block, "T_%s", mlc_gop_name(op));
  mlc_expr **idx = mlc_te_begin(te, block, out->ndim, out->shape, NULL);
  mlc_expr *v[3];
  for (int i = 0; i < n; i++) v[i] = bcast_at(a, te, in[i], &args[i]->type, out, idx);
  MLC_ASSERT(pw_values[op]);
  tensors[n] = mlc_te_end(te, pw_values[op](a, at, v));
  return mlc_te_create_prim_func(te, name, n + 1, tensors);
}

/* T_dense[i, j] = sum_k X[i, k] * W[j, k]. Over a packed weight
 * [N/n, K, n] (the layout pass) the block iterates (i, jb, jl) and writes
 * T_dense[i, jb * n + jl], reading W[jb, k, jl]: jl is then the output's
 * contiguous iter that every read uses only in its last dimension, which
 * is what the register tile (tuner/regtile.c) vectorizes, jb a second
 * weight vector per broadcast of X. */
static mlc_te_tensor *dense_product(mlc_arena *a, mlc_te *te, mlc_te_tensor *X, mlc_te_tensor *W,
                                    const mlc_gtype *wt, const mlc_gtype *out) {
  int64_t M = out->shape[0], N = out->shape[1], K = wt->shape[1];
  if (wt->ndim == 2) {
    mlc_expr **ij = mlc_te_begin(te, "T_dense", 2, SHAPE(M, N), "ij");
    mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
    return mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, X, ij[0], k), mlc_te_at(te, W, ij[1], k)));
  }
  int64_t nb = wt->shape[2];
  mlc_expr **o = mlc_te_begin(te, "T_dense", 3, SHAPE(M, N / nb, nb), "ijl");
  mlc_expr *j = mlc_add(a, mlc_mul(a, o[1], mlc_int(a, nb)), o[2]);
  mlc_te_write_at(te, 2, out->shape, (mlc_expr *[]){o[0], j});
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  return mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, X, o[0], k), mlc_te_at(te, W, o[1], k, o[2])));
}

static mlc_prim_func *lower_dense(mlc_arena *a, const char *name, int n, mlc_gvar *const *args,
                                  const mlc_gtype *out) {
  int64_t M = out->shape[0], N = out->shape[1];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, &args[0]->type);
  mlc_te_tensor *W = placeholder(te, args[1]->name, &args[1]->type);
  mlc_te_tensor *B = n == 3 ? placeholder(te, args[2]->name, &args[2]->type) : NULL;
  mlc_te_tensor *Y = dense_product(a, te, X, W, &args[1]->type, out);
  if (!B) return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, W, Y});
  mlc_expr **ij = mlc_te_begin(te, "T_add_bias", 2, SHAPE(M, N), "ij");
  Y = mlc_te_end(te, mlc_add(a, mlc_te_at(te, Y, ij[0], ij[1]), mlc_te_at(te, B, ij[1])));
  return mlc_te_create_prim_func(te, name, 4, (mlc_te_tensor *[]){X, W, B, Y});
}

/* x [..., M, K] @ w [..., K, N], batch dims broadcast (the cases the
 * matmul and batch_matmul tasks do not cover). */
static mlc_prim_func *lower_matmul(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                   const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type, *wt = &args[1]->type;
  int nb = out->ndim - 2;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *W = placeholder(te, args[1]->name, wt);
  mlc_expr **o = mlc_te_begin(te, "T_matmul", out->ndim, out->shape, NULL);
  mlc_expr *k = mlc_te_reduce_axis(te, xt->shape[xt->ndim - 1], "k");
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS], *iw[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim - 2; d++) {
    int od = d + nb - (xt->ndim - 2);
    ix[d] = xt->shape[d] == 1 && out->shape[od] != 1 ? mlc_int(a, 0) : o[od];
  }
  for (int d = 0; d < wt->ndim - 2; d++) {
    int od = d + nb - (wt->ndim - 2);
    iw[d] = wt->shape[d] == 1 && out->shape[od] != 1 ? mlc_int(a, 0) : o[od];
  }
  ix[xt->ndim - 2] = o[nb], ix[xt->ndim - 1] = k;
  iw[wt->ndim - 2] = k, iw[wt->ndim - 1] = o[nb + 1];
  mlc_te_tensor *Y = mlc_te_sum(te, mlc_mul(a, mlc_te_at_v(te, X, ix), mlc_te_at_v(te, W, iw)));
  return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, W, Y});
}

static mlc_expr *and_(mlc_arena *a, mlc_expr *x, mlc_expr *y) {
  return x ? mlc_binary(a, MLC_EXPR_AND, x, y) : y;
}

/* o * stride + r * dil, without multiplying by 1. */
static mlc_expr *window_index(mlc_arena *a, mlc_expr *o, int64_t stride, mlc_expr *r,
                              int64_t dil) {
  mlc_expr *x = stride == 1 ? o : mlc_mul(a, o, mlc_int(a, stride));
  return mlc_add(a, x, dil == 1 ? r : mlc_mul(a, r, mlc_int(a, dil)));
}

/* cond AND 0 <= i < n, dropping the bounds that cannot fail (lo_ok: i is
 * never negative; hi_ok: i never reaches n). */
static mlc_expr *in_range(mlc_arena *a, mlc_expr *cond, mlc_expr *i, int64_t n, bool lo_ok,
                          bool hi_ok) {
  if (!lo_ok) cond = and_(a, cond, mlc_binary(a, MLC_EXPR_GE, i, mlc_int(a, 0)));
  if (!hi_ok) cond = and_(a, cond, mlc_binary(a, MLC_EXPR_LT, i, mlc_int(a, n)));
  return cond;
}

/* Names of a window's blocks and axes by its spatial rank (2 or 3): the
 * 2-D ones as the conv2d task names them. */
static const char *data_axes(int nsp) { return nsp == 3 ? "ncdhw" : "nchw"; }
static const char *conv_axes(int nsp) { return nsp == 3 ? "nfzyx" : "nfyx"; }
static const char *pool_axes(int nsp) { return nsp == 3 ? "nczyx" : "ncyx"; }
/* reduce axes over the window: conv_win[3 - nsp + i] for axis i */
static const char *const conv_win[3] = {"rz", "ry", "rx"};
static const char *const pool_win[3] = {"rd", "rh", "rw"};

/* x (NCHW or NCDHW) padded with zeros by pads (graph.h: begins, then
 * ends): the pad_temp block the conv2d task has too; x itself without
 * padding. */
static mlc_te_tensor *pad_spatial(mlc_arena *a, mlc_te *te, mlc_te_tensor *X, const mlc_gtype *xt,
                                  int nsp, const int64_t *pads) {
  bool any = false;
  for (int i = 0; i < 2 * nsp; i++) any |= pads[i] != 0;
  if (!any) return X;
  int64_t shape[2 + MLC_GRAPH_MAX_WINDOW] = {xt->shape[0], xt->shape[1]};
  for (int i = 0; i < nsp; i++) shape[2 + i] = xt->shape[2 + i] + pads[i] + pads[nsp + i];
  mlc_expr **o = mlc_te_begin(te, "pad_temp", 2 + nsp, shape, data_axes(nsp));
  mlc_expr *ix[2 + MLC_GRAPH_MAX_WINDOW] = {o[0], o[1]}, *cond = NULL;
  for (int i = 0; i < nsp; i++) {
    ix[2 + i] = pads[i] ? mlc_sub(a, o[2 + i], mlc_int(a, pads[i])) : o[2 + i];
    cond = in_range(a, cond, ix[2 + i], xt->shape[2 + i], !pads[i], !pads[nsp + i]);
  }
  return mlc_te_end(te, mlc_if_then_else(a, cond, mlc_te_at_v(te, X, ix), f32(a, 0)));
}

/* y[n, k, ...] + bias[k], the block after a convolution or dense. */
static mlc_te_tensor *add_bias(mlc_arena *a, mlc_te *te, mlc_te_tensor *Y, mlc_te_tensor *B,
                               const mlc_gtype *out, int channel_axis) {
  mlc_expr **o = mlc_te_begin(te, "T_add_bias", out->ndim, out->shape, NULL);
  return mlc_te_end(te, mlc_add(a, mlc_te_at_v(te, Y, o), mlc_te_at(te, B, o[channel_axis])));
}

/* A convolution's prim_func over x, w[, bias]: Y, or Y + bias in
 * T_add_bias. */
static mlc_prim_func *conv_func(mlc_arena *a, mlc_te *te, const char *name, mlc_te_tensor *X,
                                mlc_te_tensor *W, mlc_te_tensor *B, mlc_te_tensor *Y,
                                const mlc_gtype *out) {
  if (!B) return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, W, Y});
  Y = add_bias(a, te, Y, B, out, 1);
  return mlc_te_create_prim_func(te, name, 4, (mlc_te_tensor *[]){X, W, B, Y});
}

/* The input channel of reduction index rc for output channel k: with
 * groups, k's group's channels. */
static mlc_expr *group_channel(mlc_arena *a, const mlc_gattrs *at, mlc_expr *k, int64_t Kg,
                               int64_t Cg, mlc_expr *rc) {
  if (at->groups == 1) return rc;
  mlc_expr *g = mlc_binary(a, MLC_EXPR_FLOORDIV, k, mlc_int(a, Kg));
  return mlc_add(a, mlc_mul(a, g, mlc_int(a, Cg)), rc);
}

/* conv2d / conv3d with groups, dilations, per-side pads and an optional
 * bias: pad_temp, conv2d_nchw (spatial n, f, y, x; reduce rc, ry, rx) or
 * conv3d_ncdhw (n, f, z, y, x; rc, rz, ry, rx), and T_add_bias. */
static mlc_prim_func *lower_conv(mlc_arena *a, const char *name, int nsp, const mlc_gattrs *at,
                                 int n, mlc_gvar *const *args, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type, *wt = &args[1]->type;
  int64_t Cg = wt->shape[1], Kg = out->shape[1] / at->groups;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *W = placeholder(te, args[1]->name, wt);
  mlc_te_tensor *B = n == 3 ? placeholder(te, args[2]->name, &args[2]->type) : NULL;
  mlc_te_tensor *P = pad_spatial(a, te, X, xt, nsp, at->pads);
  mlc_expr **o = mlc_te_begin(te, nsp == 3 ? "conv3d_ncdhw" : "conv2d_nchw", 2 + nsp, out->shape,
                              conv_axes(nsp));
  mlc_expr *rc = mlc_te_reduce_axis(te, Cg, "rc");
  mlc_expr *ix[2 + MLC_GRAPH_MAX_WINDOW] = {o[0], group_channel(a, at, o[1], Kg, Cg, rc)};
  mlc_expr *wx[2 + MLC_GRAPH_MAX_WINDOW] = {o[1], rc};
  for (int i = 0; i < nsp; i++) {
    wx[2 + i] = mlc_te_reduce_axis(te, wt->shape[2 + i], conv_win[3 - nsp + i]);
    ix[2 + i] = window_index(a, o[2 + i], at->strides[i], wx[2 + i], at->dilations[i]);
  }
  mlc_te_tensor *Y = mlc_te_sum(te, mlc_mul(a, mlc_te_at_v(te, P, ix), mlc_te_at_v(te, W, wx)));
  return conv_func(a, te, name, X, W, B, Y, out);
}

/* x blocked by cc and padded, [N, C/cc, H + pads, W + pads, cc]: from NCHW
 * (data_pack, the conv2d_nchwc task's block), from NCHWc (data_pad; x
 * itself without padding). */
static mlc_te_tensor *blocked_padded(mlc_arena *a, mlc_te *te, mlc_te_tensor *X,
                                     const mlc_gtype *xt, int64_t cc, const int64_t *pads) {
  bool nchwc = xt->ndim == 5;
  int64_t H = xt->shape[2], W = xt->shape[3];
  if (nchwc && !(pads[0] | pads[1] | pads[2] | pads[3])) return X;
  int64_t pshape[5] = {xt->shape[0], nchwc ? xt->shape[1] : xt->shape[1] / cc,
                       H + pads[0] + pads[2], W + pads[1] + pads[3], cc};
  mlc_expr **p = mlc_te_begin(te, nchwc ? "data_pad" : "data_pack", 5, pshape, "nchwb");
  mlc_expr *ih = pads[0] ? mlc_sub(a, p[2], mlc_int(a, pads[0])) : p[2];
  mlc_expr *iw = pads[1] ? mlc_sub(a, p[3], mlc_int(a, pads[1])) : p[3];
  mlc_expr *cond = in_range(a, NULL, ih, H, !pads[0], !pads[2]);
  cond = in_range(a, cond, iw, W, !pads[1], !pads[3]);
  mlc_expr *v = nchwc ? mlc_te_at(te, X, p[0], p[1], ih, iw, p[4])
                      : mlc_te_at(te, X, p[0], mlc_add(a, mlc_mul(a, p[1], mlc_int(a, cc)), p[4]), ih, iw);
  return mlc_te_end(te, cond ? mlc_if_then_else(a, cond, v, f32(a, 0)) : v);
}

/* conv2d over a packed weight (the layout pass), with per-side pads,
 * dilations and bias; x in NCHW or NCHWc, the result in NCHWc
 * [N, K/kk, OH, OW, kk] (an unpack_nchwc after it gives NCHW back).
 * Dense, weight [K/kk, C/cc, R, S, cc, kk]: the conv2d_nchwc task's block,
 * kk output channels as the vector lanes. Depthwise (groups C), weight
 * [C/kk, 1, R, S, 1, kk]: each channel block over its own input block
 * (depthwise_conv2d_nchwc). The bias goes in T_add_bias. */
static mlc_prim_func *lower_conv_blocked(mlc_arena *a, const char *name, const mlc_gattrs *at,
                                         int n, mlc_gvar *const *args, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type, *wt = &args[1]->type;
  bool dw = at->groups > 1;
  int64_t cc = dw ? wt->shape[5] : wt->shape[4];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *Wt = placeholder(te, args[1]->name, wt);
  mlc_te_tensor *B = n == 3 ? placeholder(te, args[2]->name, &args[2]->type) : NULL;
  mlc_te_tensor *P = blocked_padded(a, te, X, xt, cc, at->pads);
  mlc_expr **o = mlc_te_begin(te, dw ? "depthwise_conv2d_nchwc" : "conv2d_nchwc", 5, out->shape,
                              "nfyxk");
  mlc_expr *rc = dw ? NULL : mlc_te_reduce_axis(te, wt->shape[1], "rc");
  mlc_expr *ry = mlc_te_reduce_axis(te, wt->shape[2], "ry");
  mlc_expr *rx = mlc_te_reduce_axis(te, wt->shape[3], "rx");
  mlc_expr *rb = dw ? NULL : mlc_te_reduce_axis(te, cc, "rb");
  mlc_expr *iy = window_index(a, o[2], at->strides[0], ry, at->dilations[0]);
  mlc_expr *ix = window_index(a, o[3], at->strides[1], rx, at->dilations[1]);
  mlc_expr *in, *w;
  if (dw) {
    in = mlc_te_at(te, P, o[0], o[1], iy, ix, o[4]);
    w = mlc_te_at(te, Wt, o[1], mlc_int(a, 0), ry, rx, mlc_int(a, 0), o[4]);
  } else {
    in = mlc_te_at(te, P, o[0], rc, iy, ix, rb);
    w = mlc_te_at(te, Wt, o[1], rc, ry, rx, rb, o[4]);
  }
  mlc_te_tensor *Y = mlc_te_sum(te, mlc_mul(a, in, w));
  if (!B) return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, Wt, Y});
  mlc_expr **u = mlc_te_begin(te, "T_add_bias", 5, out->shape, NULL);
  mlc_expr *k = mlc_add(a, mlc_mul(a, u[1], mlc_int(a, out->shape[4])), u[4]);
  Y = mlc_te_end(te, mlc_add(a, mlc_te_at_v(te, Y, u), mlc_te_at(te, B, k)));
  return mlc_te_create_prim_func(te, name, 4, (mlc_te_tensor *[]){X, Wt, B, Y});
}

/* unpack_nchwc: y[n, c, h, w] = x[n, c / k, h, w, c % k]. */
static mlc_prim_func *lower_unpack(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                   const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **u = mlc_te_begin(te, "nchwc_unpack", 4, out->shape, "nchw");
  mlc_expr *k = mlc_int(a, xt->shape[4]);
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at(te, X, u[0], mlc_binary(a, MLC_EXPR_FLOORDIV, u[1], k),
                                               u[2], u[3], mlc_binary(a, MLC_EXPR_FLOORMOD, u[1], k)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* One axis of a transposed convolution's input as a stride-dilated,
 * padded tensor read at i: t = i - (dil * (k - 1) - pad_begin) must be a
 * multiple of the stride and t / stride inside the input. */
static mlc_expr *dilated_index(mlc_arena *a, mlc_expr *i, int64_t off, int64_t stride,
                               int64_t in, mlc_expr **cond) {
  mlc_expr *t = off ? mlc_sub(a, i, mlc_int(a, off)) : i;
  *cond = in_range(a, *cond, t, (in - 1) * stride + 1, off <= 0, false);
  if (stride == 1) return t;
  *cond = and_(a, *cond, mlc_binary(a, MLC_EXPR_EQ, mlc_binary(a, MLC_EXPR_FLOORMOD, t, mlc_int(a, stride)), mlc_int(a, 0)));
  return mlc_binary(a, MLC_EXPR_FLOORDIV, t, mlc_int(a, stride));
}

/* conv_transpose2d / conv_transpose3d as a convolution: the input dilated
 * by the strides and padded (data_dilate_pad), convolved with the flipped
 * kernel, w [C, K / groups, (T,) R, S]. */
static mlc_prim_func *lower_conv_transpose(mlc_arena *a, const char *name, int nsp,
                                           const mlc_gattrs *at, int n, mlc_gvar *const *args,
                                           const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type, *wt = &args[1]->type;
  int64_t Kg = wt->shape[1], Cg = xt->shape[1] / at->groups;
  const int64_t *k = wt->shape + 2, *dil = at->dilations;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *W = placeholder(te, args[1]->name, wt);
  mlc_te_tensor *B = n == 3 ? placeholder(te, args[2]->name, &args[2]->type) : NULL;
  int64_t pshape[2 + MLC_GRAPH_MAX_WINDOW] = {xt->shape[0], xt->shape[1]};
  for (int i = 0; i < nsp; i++) pshape[2 + i] = out->shape[2 + i] + dil[i] * (k[i] - 1);
  mlc_expr **o = mlc_te_begin(te, "data_dilate_pad", 2 + nsp, pshape, data_axes(nsp));
  mlc_expr *ix[2 + MLC_GRAPH_MAX_WINDOW] = {o[0], o[1]}, *cond = NULL;
  for (int i = 0; i < nsp; i++)
    ix[2 + i] = dilated_index(a, o[2 + i], dil[i] * (k[i] - 1) - at->pads[i], at->strides[i],
                              xt->shape[2 + i], &cond);
  mlc_te_tensor *P = mlc_te_end(te, mlc_if_then_else(a, cond, mlc_te_at_v(te, X, ix), f32(a, 0)));
  o = mlc_te_begin(te, nsp == 3 ? "conv3d_transpose_ncdhw" : "conv2d_transpose_nchw", 2 + nsp,
                   out->shape, conv_axes(nsp));
  mlc_expr *rc = mlc_te_reduce_axis(te, Cg, "rc"), *r[MLC_GRAPH_MAX_WINDOW];
  for (int i = 0; i < nsp; i++) r[i] = mlc_te_reduce_axis(te, k[i], conv_win[3 - nsp + i]);
  mlc_expr *c = group_channel(a, at, o[1], Kg, Cg, rc);
  mlc_expr *kk = at->groups == 1 ? o[1] : mlc_binary(a, MLC_EXPR_FLOORMOD, o[1], mlc_int(a, Kg));
  mlc_expr *wx[2 + MLC_GRAPH_MAX_WINDOW] = {c, kk};
  ix[0] = o[0], ix[1] = c;
  for (int i = 0; i < nsp; i++) {
    ix[2 + i] = window_index(a, o[2 + i], 1, r[i], dil[i]);
    wx[2 + i] = mlc_sub(a, mlc_int(a, k[i] - 1), r[i]);
  }
  mlc_te_tensor *Y = mlc_te_sum(te, mlc_mul(a, mlc_te_at_v(te, P, ix), mlc_te_at_v(te, W, wx)));
  return conv_func(a, te, name, X, W, B, Y, out);
}

/* A pool's reads of x for output index o and window index r: ix, and the
 * condition that they fall inside x (NULL: always), for padding and the
 * part of a ceil_mode window past the input. */
static mlc_expr *pool_reads(mlc_arena *a, int nsp, const mlc_gattrs *at, const mlc_gtype *xt,
                            const mlc_gtype *out, mlc_expr **o, mlc_expr **r, mlc_expr **ix) {
  mlc_expr *cond = NULL;
  ix[0] = o[0], ix[1] = o[1];
  for (int i = 0; i < nsp; i++) {
    int64_t pb = at->pads[i], in = xt->shape[2 + i];
    int64_t last = (out->shape[2 + i] - 1) * at->strides[i] + at->dilations[i] * (at->kernel[i] - 1) - pb;
    ix[2 + i] = window_index(a, o[2 + i], at->strides[i], r[i], at->dilations[i]);
    if (pb) ix[2 + i] = mlc_sub(a, ix[2 + i], mlc_int(a, pb));
    cond = in_range(a, cond, ix[2 + i], in, pb == 0, last < in);
  }
  return cond;
}

/* The first block of a pool (T_pool_max or T_pool_sum) over x: the
 * window's reads, out-of-input ones as pad. */
static mlc_te_tensor *pool_reduce(mlc_arena *a, mlc_te *te, const char *block, mlc_te_reducer red,
                                  double pad, int nsp, const mlc_gattrs *at, mlc_te_tensor *X,
                                  const mlc_gtype *xt, const mlc_gtype *out) {
  bool nchwc = xt->ndim == 3 + nsp; /* max_pool2d over [N, C/c, H, W, c] */
  mlc_expr **o = mlc_te_begin(te, block, out->ndim, out->shape, nchwc ? "ncyxb" : pool_axes(nsp));
  mlc_expr *r[MLC_GRAPH_MAX_WINDOW], *ix[3 + MLC_GRAPH_MAX_WINDOW];
  for (int i = 0; i < nsp; i++) r[i] = mlc_te_reduce_axis(te, at->kernel[i], pool_win[3 - nsp + i]);
  mlc_expr *cond = pool_reads(a, nsp, at, xt, out, o, r, ix);
  if (nchwc) ix[2 + nsp] = o[2 + nsp];
  mlc_expr *v = mlc_te_at_v(te, X, ix);
  if (cond) v = mlc_if_then_else(a, cond, v, f32(a, pad));
  return mlc_te_reduce(te, red, v);
}

/* Max over a window (kernel, strides, dilations); padding and the part of
 * a ceil_mode window past the input read as the lowest float. */
static mlc_prim_func *lower_max_pool(mlc_arena *a, const char *name, int nsp, mlc_gvar *const *args,
                                     const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_te_tensor *Y = pool_reduce(a, te, "T_pool_max", MLC_TE_MAX, -FLT_MAX, nsp, at, X, xt, out);
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* min(hi, lim) - max(lo, floor) as an int expression. */
static mlc_expr *clamped_count(mlc_arena *a, mlc_expr *lo, mlc_expr *hi, int64_t floor,
                               int64_t lim) {
  return mlc_sub(a, mlc_binary(a, MLC_EXPR_MIN, hi, mlc_int(a, lim)),
                 mlc_binary(a, MLC_EXPR_MAX, lo, mlc_int(a, floor)));
}

/* Average over a window: T_pool_sum (padding reads 0), then T_pool_avg
 * divides by the elements each window covers: inside the input, or inside
 * the padded input with count_include_pad. */
static mlc_prim_func *lower_avg_pool(mlc_arena *a, const char *name, int nsp, mlc_gvar *const *args,
                                     const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_te_tensor *S = pool_reduce(a, te, "T_pool_sum", MLC_TE_SUM, 0, nsp, at, X, xt, out);
  mlc_expr **o = mlc_te_begin(te, "T_pool_avg", 2 + nsp, out->shape, pool_axes(nsp));
  mlc_expr *count = NULL;
  for (int i = 0; i < nsp; i++) {
    int64_t pb = at->pads[i], pe = at->pads[nsp + i], in = xt->shape[2 + i];
    mlc_expr *lo = mlc_sub(a, window_index(a, o[2 + i], at->strides[i], mlc_int(a, 0), 1), mlc_int(a, pb));
    mlc_expr *hi = mlc_add(a, lo, mlc_int(a, at->kernel[i]));
    mlc_expr *c = at->count_include_pad ? clamped_count(a, lo, hi, -pb, in + pe)
                                        : clamped_count(a, lo, hi, 0, in);
    count = count ? mlc_mul(a, count, c) : c;
  }
  mlc_expr *y = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, S, o), mlc_cast(a, MLC_FLOAT32, count));
  mlc_te_tensor *Y = mlc_te_end(te, y);
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* reduce_sum / reduce_mean / reduce_max / reduce_prod (and global_avg_pool2d, a mean
 * over H and W): one block over the output with a reduce axis per reduced
 * dim; the mean divides in a second block. */
static mlc_prim_func *lower_reduce(mlc_arena *a, const char *name, mlc_gop op,
                                   mlc_gvar *const *args, const bool *red, bool keepdims,
                                   const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  char block[64];
  bool max = op == MLC_GOP_REDUCE_MAX, prod = op == MLC_GOP_REDUCE_PROD;
  snprintf(block, sizeof block, "T_%s", max ? "max" : prod ? "prod" : "sum");
  mlc_expr **o = mlc_te_begin(te, block, out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  double count = 1;
  for (int d = 0, j = 0, k = 0; d < xt->ndim; d++) {
    if (!red[d]) {
      ix[d] = o[j++];
      continue;
    }
    ix[d] = mlc_te_reduce_axis(te, xt->shape[d], mlc_arena_printf(a, "k%d", k++));
    count *= (double)xt->shape[d];
    j += keepdims;
  }
  mlc_te_tensor *Y = mlc_te_reduce(te, max ? MLC_TE_MAX : prod ? MLC_TE_PROD : MLC_TE_SUM,
                                   mlc_te_at_v(te, X, ix));
  if (op == MLC_GOP_REDUCE_MEAN || op == MLC_GOP_GLOBAL_AVG_POOL2D) {
    o = mlc_te_begin(te, "T_divide", out->ndim, out->shape, NULL);
    Y = mlc_te_end(te, mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, Y, o), f32(a, count)));
  }
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* concat: each output element from the input whose range along the axis
 * holds it, a chain of if_then_else by offset. */
static mlc_prim_func *lower_concat(mlc_arena *a, const char *name, int n, mlc_gvar *const *args,
                                   int ax, const mlc_gtype *out) {
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor **ts = MLC_NEW_ARRAY(a, mlc_te_tensor *, n + 1);
  for (int i = 0; i < n; i++) ts[i] = placeholder(te, args[i]->name, &args[i]->type);
  mlc_expr **o = mlc_te_begin(te, "T_concat", out->ndim, out->shape, NULL);
  int64_t *off = MLC_NEW_ARRAY(a, int64_t, n + 1);
  for (int i = 1; i <= n; i++) off[i] = off[i - 1] + args[i - 1]->type.shape[ax];
  mlc_expr *v = NULL;
  for (int i = n - 1; i >= 0; i--) {
    mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
    memcpy(ix, o, sizeof *ix * (size_t)out->ndim);
    if (off[i]) ix[ax] = mlc_sub(a, o[ax], mlc_int(a, off[i]));
    mlc_expr *x = mlc_te_at_v(te, ts[i], ix);
    v = v ? mlc_if_then_else(a, mlc_binary(a, MLC_EXPR_LT, o[ax], mlc_int(a, off[i + 1])), x, v) : x;
  }
  ts[n] = mlc_te_end(te, v);
  return mlc_te_create_prim_func(te, name, n + 1, ts);
}

/* append: the result's rows after operand 0's from operand 1; the others
 * are left to the caller (the graph's mlc_gbinding_appends). */
static mlc_prim_func *lower_append(mlc_arena *a, const char *name, mlc_gvar *const *args, int ax,
                                   const mlc_gtype *out) {
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *P = placeholder(te, args[0]->name, &args[0]->type);
  mlc_te_tensor *X = placeholder(te, args[1]->name, &args[1]->type);
  const mlc_gtype *xt = &args[1]->type;
  mlc_expr **o = mlc_te_begin(te, "T_append", xt->ndim, xt->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  memcpy(ix, o, sizeof *ix * (size_t)xt->ndim);
  ix[ax] = mlc_add(a, o[ax], mlc_int(a, args[0]->type.shape[ax]));
  mlc_te_write_at(te, out->ndim, out->shape, ix);
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, o));
  return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){P, X, Y});
}

/* slice: out[i] = x[start + i * step] along every axis. */
static mlc_prim_func *lower_slice(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                  const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_strided_slice", out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim; d++) {
    int64_t b, s, c;
    MLC_ASSERT(mlc_gop_slice_axis(at, xt, d, &b, &s, &c));
    ix[d] = s == 1 ? o[d] : mlc_mul(a, o[d], mlc_int(a, s));
    if (b) ix[d] = mlc_add(a, ix[d], mlc_int(a, b));
  }
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* pad: out[i] = x[i - pad_before] where that is inside x, else pad_value;
 * negative pads read past the removed elements. */
static mlc_prim_func *lower_pad(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_pad", out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS], *cond = NULL;
  for (int d = 0; d < xt->ndim; d++) {
    int64_t b = at->pad_before[d], e = at->pad_after[d];
    ix[d] = b ? mlc_sub(a, o[d], mlc_int(a, b)) : o[d];
    cond = in_range(a, cond, ix[d], xt->shape[d], b <= 0, e <= 0);
  }
  mlc_expr *v = mlc_te_at_v(te, X, ix);
  if (cond) v = mlc_if_then_else(a, cond, v, const_of(a, xt->dtype, at->pad_value));
  mlc_te_tensor *Y = mlc_te_end(te, v);
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* hardmax along ax: the max m over the axis, the first index f where x
 * equals m (the least k with x == m; n where none: NaN inputs are
 * unspecified), then 1 where the index is f. */
static mlc_prim_func *lower_hardmax(mlc_arena *a, const char *name, mlc_gvar *const *args, int ax,
                                    const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  int64_t n = xt->shape[ax], red[MLC_GRAPH_MAX_DIMS];
  memcpy(red, xt->shape, sizeof red);
  red[ax] = 1;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  mlc_expr **o = mlc_te_begin(te, "T_max", xt->ndim, red, NULL);
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? mlc_te_reduce_axis(te, n, "k") : o[d];
  mlc_te_tensor *M = mlc_te_reduce(te, MLC_TE_MAX, mlc_te_at_v(te, X, ix));
  o = mlc_te_begin(te, "T_first", xt->ndim, red, NULL);
  mlc_expr *k = mlc_te_reduce_axis(te, n, "k");
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? k : o[d];
  mlc_expr *is_max = mlc_binary(a, MLC_EXPR_EQ, mlc_te_at_v(te, X, ix), mlc_te_at_v(te, M, o));
  mlc_te_tensor *F = mlc_te_reduce(te, MLC_TE_MIN,
                                   mlc_select(a, is_max, mlc_cast(a, MLC_FLOAT32, k), f32(a, (double)n)));
  o = mlc_te_begin(te, "T_hardmax", out->ndim, out->shape, NULL);
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? mlc_int(a, 0) : o[d];
  mlc_expr *first = mlc_binary(a, MLC_EXPR_EQ, mlc_cast(a, MLC_FLOAT32, o[ax]), mlc_te_at_v(te, F, ix));
  mlc_te_tensor *Y = mlc_te_end(te, mlc_select(a, first, f32(a, 1), f32(a, 0)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* argmax / argmin along ax: the extreme m over the axis, then the least
 * (greatest: select_last_index) k where x equals m, as int64. */
static mlc_prim_func *lower_argmax(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                   const mlc_gattrs *at, bool is_max, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  int ax = mlc_gop_axis(at->axis, xt->ndim);
  int64_t n = xt->shape[ax];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  /* out index d of an operand index d' (the axis kept as 0 or left out) */
  int od[MLC_GRAPH_MAX_DIMS];
  for (int d = 0, k = 0; d < xt->ndim; d++) od[d] = d == ax && !at->keepdims ? -1 : k++;
  mlc_expr **o = mlc_te_begin(te, is_max ? "T_max" : "T_min", out->ndim, out->shape, NULL);
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? mlc_te_reduce_axis(te, n, "k") : o[od[d]];
  mlc_te_tensor *M = mlc_te_reduce(te, is_max ? MLC_TE_MAX : MLC_TE_MIN, mlc_te_at_v(te, X, ix));
  o = mlc_te_begin(te, is_max ? "T_argmax" : "T_argmin", out->ndim, out->shape, NULL);
  mlc_expr *k = mlc_te_reduce_axis(te, n, "k");
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? k : o[od[d]];
  mlc_expr *hit = mlc_binary(a, MLC_EXPR_EQ, mlc_te_at_v(te, X, ix), mlc_te_at_v(te, M, o));
  mlc_expr *k64 = mlc_cast(a, MLC_INT64, k);
  mlc_te_tensor *Y =
      at->select_last_index
          ? mlc_te_reduce(te, MLC_TE_MAX, mlc_select(a, hit, k64, mlc_int_t(a, MLC_INT64, 0)))
          : mlc_te_reduce(te, MLC_TE_MIN, mlc_select(a, hit, k64, mlc_int_t(a, MLC_INT64, n - 1)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* tril / triu: x where the column minus the row is <= k (tril) or >= k
 * (triu), else 0; k clamped to the matrix (the same elements). */
static mlc_prim_func *lower_trilu(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                  bool upper, int64_t k, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  int64_t R = xt->shape[xt->ndim - 2], C = xt->shape[xt->ndim - 1];
  k = k < -R ? -R : k > C ? C : k;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, upper ? "T_triu" : "T_tril", out->ndim, out->shape, NULL);
  mlc_expr *diff = mlc_sub(a, o[out->ndim - 1], o[out->ndim - 2]);
  mlc_expr *keep = mlc_binary(a, upper ? MLC_EXPR_GE : MLC_EXPR_LE, diff, mlc_int(a, k));
  mlc_te_tensor *Y = mlc_te_end(te, mlc_select(a, keep, mlc_te_at_v(te, X, o), const_of(a, xt->dtype, 0)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* cumsum along ax: y[.., i, ..] = the sum over r of x[.., r, ..] for the
 * r that count (r <= i; r < i exclusive; r >= i or r > i reversed), the
 * others adding 0: one reduction over the axis per element. */
static mlc_prim_func *lower_cumsum(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                   const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  int ax = mlc_gop_axis(at->axis, xt->ndim);
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_cumsum", out->ndim, out->shape, NULL);
  mlc_expr *r = mlc_te_reduce_axis(te, xt->shape[ax], "k"), *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? r : o[d];
  mlc_expr_kind cmp = at->reverse ? (at->exclusive ? MLC_EXPR_GT : MLC_EXPR_GE)
                                  : (at->exclusive ? MLC_EXPR_LT : MLC_EXPR_LE);
  mlc_expr *counts = mlc_binary(a, cmp, r, o[ax]);
  mlc_te_tensor *Y = mlc_te_reduce(te, MLC_TE_SUM, mlc_select(a, counts, mlc_te_at_v(te, X, ix), const_of(a, xt->dtype, 0)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* The position along an axis of extent n that index v (an integer, or a
 * float holding a whole number; negative: from the end) names; 0 for v
 * outside [-n, n) (or NaN), so the read stays inside the operand. */
static mlc_expr *axis_index(mlc_arena *a, mlc_expr *v, int64_t n) {
  mlc_expr *ok = mlc_binary(a, MLC_EXPR_AND, mlc_binary(a, MLC_EXPR_GE, v, like(a, v, (double)-n)),
                            mlc_binary(a, MLC_EXPR_LE, v, like(a, v, (double)(n - 1))));
  /* floormod maps [-n, n) onto the axis and shows the bound analysis
   * that the read stays inside x */
  mlc_expr *k = mlc_cast(a, MLC_INT32, mlc_select(a, ok, v, like(a, v, 0)));
  return mlc_binary(a, MLC_EXPR_FLOORMOD, k, mlc_int(a, n));
}

/* gather along ax: out[o..., j..., i...] = x[o..., k, i...] with k the
 * index at j (an integer, or a float holding a whole number), from the
 * end when negative.
 * An index outside [-n, n) (or NaN) reads row 0 rather than outside x: the
 * verifier refuses constant indices out of range, runtime ones are the
 * caller's. */
static mlc_prim_func *lower_gather(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                   int ax, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type, *it = &args[1]->type;
  int64_t n = xt->shape[ax];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *I = placeholder(te, args[1]->name, it);
  mlc_expr **o = mlc_te_begin(te, "T_take", out->ndim, out->shape, NULL);
  mlc_expr *k = axis_index(a, mlc_te_at_v(te, I, o + ax), n), *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim; d++)
    ix[d] = d < ax ? o[d] : d == ax ? k : o[d - 1 + it->ndim];
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, I, Y});
}

/* gather_elements along ax: out[o] = x[o with k at ax], k the index at o
 * (axis_index: one outside the axis reads position 0). */
static mlc_prim_func *lower_gather_elements(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                            int ax, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type, *it = &args[1]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *I = placeholder(te, args[1]->name, it);
  mlc_expr **o = mlc_te_begin(te, "T_gather_elements", out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim; d++)
    ix[d] = d == ax ? axis_index(a, mlc_te_at_v(te, I, o), xt->shape[ax]) : o[d];
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, I, Y});
}

/* topk along ax: each element's rank, the count of elements that come
 * before it (larger, or equal at a lower index; smaller for !largest),
 * then at output position r the index whose rank is r (ranks are a
 * permutation of the axis, so exactly one). O(n^2) per row. */
static mlc_prim_func *lower_topk(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                 const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  int ax = mlc_gop_axis(at->axis, xt->ndim);
  int64_t n = xt->shape[ax];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  mlc_expr **o = mlc_te_begin(te, "T_rank", xt->ndim, xt->shape, NULL);
  mlc_expr *j = mlc_te_reduce_axis(te, n, "j");
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? j : o[d];
  mlc_expr *xj = mlc_te_at_v(te, X, ix), *xi = mlc_te_at_v(te, X, o);
  mlc_expr *ahead = mlc_binary(a, at->largest ? MLC_EXPR_GT : MLC_EXPR_LT, xj, xi);
  mlc_expr *tie = mlc_binary(a, MLC_EXPR_AND, mlc_binary(a, MLC_EXPR_EQ, xj, xi),
                             mlc_binary(a, MLC_EXPR_LT, j, o[ax]));
  mlc_expr *before = mlc_binary(a, MLC_EXPR_OR, ahead, tie);
  mlc_te_tensor *R = mlc_te_reduce(te, MLC_TE_SUM,
                                   mlc_select(a, before, mlc_int_t(a, MLC_INT64, 1), mlc_int_t(a, MLC_INT64, 0)));
  o = mlc_te_begin(te, "T_topk", out->ndim, out->shape, NULL);
  mlc_expr *i = mlc_te_reduce_axis(te, n, "i");
  for (int d = 0; d < xt->ndim; d++) ix[d] = d == ax ? i : o[d];
  mlc_expr *hit = mlc_binary(a, MLC_EXPR_EQ, mlc_te_at_v(te, R, ix), mlc_cast(a, MLC_INT64, o[ax]));
  mlc_te_tensor *Y = mlc_te_reduce(te, MLC_TE_MAX, mlc_select(a, hit, mlc_cast(a, MLC_INT64, i),
                                                              mlc_int_t(a, MLC_INT64, 0)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* Whether the indices' row u (reduce axes over their leading dims) names
 * output index o: each of its k entries, from the end when negative,
 * equals o's. */
static mlc_expr *scatter_match(mlc_arena *a, mlc_te *te, mlc_te_tensor *I, const mlc_gtype *it,
                               const mlc_gtype *xt, mlc_expr **u, mlc_expr **o) {
  int q = it->ndim - 1;
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS], *match = NULL;
  memcpy(ix, u, sizeof(mlc_expr *) * (size_t)q);
  for (int j = 0; j < it->shape[q]; j++) {
    ix[q] = mlc_int(a, j);
    mlc_expr *v = mlc_te_at_v(te, I, ix);
    v = mlc_select(a, mlc_binary(a, MLC_EXPR_LT, v, like(a, v, 0)), mlc_add(a, v, like(a, v, (double)xt->shape[j])), v);
    mlc_expr *eq = mlc_binary(a, MLC_EXPR_EQ, v, mlc_cast(a, v->dtype, o[j]));
    match = match ? mlc_binary(a, MLC_EXPR_AND, match, eq) : eq;
  }
  return match;
}

/* scatter_nd: for each output element, the last indices row naming it
 * (a max over the rows; -1: none) picks the update read, else data's;
 * the add and mul forms reduce the matching updates (sum, product) onto
 * data's. One scan of the indices per output element. */
static mlc_prim_func *lower_scatter_nd(mlc_arena *a, const char *name, mlc_gop op,
                                       mlc_gvar *const *args, const mlc_gtype *out) {
  static const char *const axis_names[MLC_GRAPH_MAX_DIMS] = {"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"};
  const mlc_gtype *xt = &args[0]->type, *it = &args[1]->type, *ut = &args[2]->type;
  int q = it->ndim - 1, k = (int)it->shape[q];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt), *I = placeholder(te, args[1]->name, it),
                *U = placeholder(te, args[2]->name, ut);
  mlc_expr *u[MLC_GRAPH_MAX_DIMS], *uix[MLC_GRAPH_MAX_DIMS];
  mlc_expr **o = mlc_te_begin(te, op == MLC_GOP_SCATTER_ND ? "T_last" : "T_updates", out->ndim, out->shape, NULL);
  /* indices [k] alone: one row, a reduce axis of extent 1 */
  mlc_expr *flat = mlc_int(a, 0);
  for (int d = 0; d < (q ? q : 1); d++) {
    mlc_expr *r = mlc_te_reduce_axis(te, q ? it->shape[d] : 1, axis_names[d]);
    if (q) u[d] = r, flat = mlc_add(a, mlc_mul(a, flat, mlc_int(a, it->shape[d])), r);
  }
  mlc_expr *match = scatter_match(a, te, I, it, xt, u, o);
  memcpy(uix, u, sizeof(mlc_expr *) * (size_t)q);
  memcpy(uix + q, o + k, sizeof(mlc_expr *) * (size_t)(xt->ndim - k));
  mlc_te_tensor *Y;
  if (op == MLC_GOP_SCATTER_ND) {
    mlc_te_tensor *S = mlc_te_reduce(te, MLC_TE_MAX, mlc_select(a, match, flat, mlc_int(a, -1)));
    o = mlc_te_begin(te, "T_scatter_nd", out->ndim, out->shape, NULL);
    memcpy(uix + q, o + k, sizeof(mlc_expr *) * (size_t)(xt->ndim - k));
    mlc_expr *s = mlc_te_at_v(te, S, o), *rest = mlc_binary(a, MLC_EXPR_MAX, s, mlc_int(a, 0));
    for (int d = q - 1; d >= 0; d--) { /* the row's index, taken apart (floormod keeps it in bounds) */
      uix[d] = mlc_binary(a, MLC_EXPR_FLOORMOD, rest, mlc_int(a, it->shape[d]));
      rest = mlc_binary(a, MLC_EXPR_FLOORDIV, rest, mlc_int(a, it->shape[d]));
    }
    mlc_expr *hit = mlc_binary(a, MLC_EXPR_GE, s, mlc_int(a, 0));
    Y = mlc_te_end(te, mlc_select(a, hit, mlc_te_at_v(te, U, uix), mlc_te_at_v(te, X, o)));
  } else {
    bool add = op == MLC_GOP_SCATTER_ND_ADD;
    mlc_expr *upd = mlc_te_at_v(te, U, uix);
    mlc_te_tensor *R = mlc_te_reduce(te, add ? MLC_TE_SUM : MLC_TE_PROD,
                                     mlc_select(a, match, upd, like(a, upd, add ? 0 : 1)));
    o = mlc_te_begin(te, "T_scatter_nd", out->ndim, out->shape, NULL);
    mlc_expr *x = mlc_te_at_v(te, X, o), *r = mlc_te_at_v(te, R, o);
    Y = mlc_te_end(te, add ? mlc_add(a, x, r) : mlc_mul(a, x, r));
  }
  return mlc_te_create_prim_func(te, name, 4, (mlc_te_tensor *[]){X, I, U, Y});
}

/* The conv2d task covers conv2d without groups, dilation or bias, with
 * one stride and the same padding on every side. */
static bool is_task_conv(const mlc_gattrs *at, int n) {
  return n == 2 && at->groups == 1 && at->dilations[0] == 1 && at->dilations[1] == 1 &&
         at->strides[0] == at->strides[1] && at->pads[0] == at->pads[1] &&
         at->pads[0] == at->pads[2] && at->pads[0] == at->pads[3];
}

/* The input indices of output dims [o0, o1) (indices o) mapped onto input
 * dims [i0, i1) of the same element count: their row-major flat index
 * taken apart over the input dims (a dim of 1 indexed by 0). */
static void reshape_group(mlc_arena *a, const mlc_gtype *xt, const mlc_gtype *out, mlc_expr **o,
                          int o0, int o1, int i0, int i1, mlc_expr **ix) {
  mlc_expr *flat = o0 < o1 ? o[o0] : mlc_int(a, 0);
  for (int d = o0 + 1; d < o1; d++)
    flat = mlc_add(a, mlc_mul(a, flat, mlc_int(a, out->shape[d])), o[d]);
  int64_t stride = 1, outer = 1;
  for (int d = i0; d < i1; d++) outer *= xt->shape[d];
  for (int d = i1 - 1; d >= i0; d--) {
    mlc_expr *q = stride == 1 ? flat : mlc_binary(a, MLC_EXPR_FLOORDIV, flat, mlc_int(a, stride));
    outer /= xt->shape[d];
    /* no modulo where the dims before d are all 1s: q stays below d's
     * extent (a reshape dropping a leading 1 indexes each dim plainly,
     * and a block that reads it inlined keeps affine indices) */
    ix[d] = xt->shape[d] == 1 ? mlc_int(a, 0)
            : outer == 1     ? q
                             : mlc_binary(a, MLC_EXPR_FLOORMOD, q, mlc_int(a, xt->shape[d]));
    stride *= xt->shape[d];
  }
}

/* Reshape and flatten: the dims split into the smallest groups of equal
 * element counts on both sides (a merge of the last two dims is one group,
 * the dims before it each their own), and within each group the row-major
 * flat index of the output element taken apart over the input's dims, so
 * that no index mixes dims it need not (an index over a size var stays
 * affine where the reshape keeps that dim). */
static mlc_prim_func *lower_reshape(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                    const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_reshape", out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  int i = 0, j = 0;
  while (i < xt->ndim || j < out->ndim) {
    int gi = i, gj = j;
    int64_t pin = i < xt->ndim ? xt->shape[i++] : 1, pout = j < out->ndim ? out->shape[j++] : 1;
    while (pin != pout && (pin < pout ? i < xt->ndim : j < out->ndim)) {
      if (pin < pout) pin *= xt->shape[i++];
      else pout *= out->shape[j++];
    }
    if (pin != pout) { /* unequal counts cannot be: one group of everything */
      reshape_group(a, xt, out, o, 0, out->ndim, 0, xt->ndim, ix);
      break;
    }
    reshape_group(a, xt, out, o, gj, j, gi, i, ix);
  }
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

static mlc_prim_func *lower_transpose(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                      const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_transpose", out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim; d++) {
    int64_t ax = at->n_ints ? at->ints[d] : xt->ndim - 1 - d;
    ix[ax] = o[d];
  }
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* ix: x's index from o (x's dims without axis ax) with k at ax. */
static void insert_axis(mlc_expr **ix, mlc_expr **o, int ndim, int ax, mlc_expr *k) {
  for (int d = 0, j = 0; d < ndim; d++) ix[d] = d == ax ? k : o[j++];
}

/* ix: o (all of x's dims) without axis ax. */
static void drop_axis(mlc_expr **ix, mlc_expr **o, int ndim, int ax) {
  for (int d = 0, j = 0; d < ndim; d++)
    if (d != ax) ix[j++] = o[d];
}

/* A block over x's dims without ax, reducing x (or f(x)) along ax. */
static mlc_te_tensor *reduce_along(mlc_te *te, const char *block, mlc_te_tensor *x,
                                   const mlc_gtype *xt, int ax, mlc_te_reducer r) {
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0, j = 0; d < xt->ndim; d++)
    if (d != ax) shape[j++] = xt->shape[d];
  mlc_expr **o = mlc_te_begin(te, block, xt->ndim - 1, shape, NULL);
  insert_axis(ix, o, xt->ndim, ax, mlc_te_reduce_axis(te, xt->shape[ax], "k"));
  return mlc_te_reduce(te, r, mlc_te_at_v(te, x, ix));
}

/* Softmax (or log_softmax) along axis ax: the task's four blocks (max, exp,
 * sum, normalize) with the other axes as rows. */
static mlc_prim_func *lower_softmax(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                    int ax, bool log) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  mlc_te_tensor *mx = reduce_along(te, "T_softmax_maxelem", X, xt, ax, MLC_TE_MAX);
  mlc_expr **o = mlc_te_begin(te, "T_softmax_exp", xt->ndim, xt->shape, NULL);
  drop_axis(ix, o, xt->ndim, ax);
  mlc_te_tensor *ex = mlc_te_end(
      te, intrin1(a, MLC_INTRIN_EXP, mlc_sub(a, mlc_te_at_v(te, X, o), mlc_te_at_v(te, mx, ix))));
  mlc_te_tensor *sum = reduce_along(te, "T_softmax_expsum", ex, xt, ax, MLC_TE_SUM);
  o = mlc_te_begin(te, log ? "T_log_softmax" : "T_softmax_norm", xt->ndim, xt->shape, NULL);
  drop_axis(ix, o, xt->ndim, ax);
  mlc_expr *y;
  if (log)
    y = mlc_sub(a, mlc_sub(a, mlc_te_at_v(te, X, o), mlc_te_at_v(te, mx, ix)),
                intrin1(a, MLC_INTRIN_LOG, mlc_te_at_v(te, sum, ix)));
  else /* times the reciprocal, as the task's (tasks/norm.c) */
    y = mlc_mul(a, mlc_te_at_v(te, ex, o), mlc_binary(a, MLC_EXPR_DIV, f32(a, 1), mlc_te_at_v(te, sum, ix)));
  mlc_te_tensor *Y = mlc_te_end(te, y);
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* The sum over x's axes from ax on, one reduce axis each. */
static mlc_te_tensor *sum_trailing(mlc_arena *a, mlc_te *te, const char *block, mlc_te_tensor *X,
                                   const mlc_gtype *xt, int ax, mlc_te_tensor *mean, double C) {
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  mlc_expr **o = mlc_te_begin(te, block, ax, xt->shape, NULL);
  memcpy(ix, o, sizeof *ix * (size_t)ax);
  for (int d = ax; d < xt->ndim; d++)
    ix[d] = mlc_te_reduce_axis(te, xt->shape[d], mlc_arena_printf(a, "k%d", d - ax));
  mlc_expr *v = mlc_te_at_v(te, X, ix);
  if (!mean) return mlc_te_sum(te, v);
  mlc_expr *dv = mlc_sub(a, v, mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, mean, o), f32(a, C)));
  return mlc_te_sum(te, mlc_mul(a, dv, dv));
}

/* Layer normalization over the axes from ax on, as the layernorm task
 * computes it (two-pass variance), for any rank and epsilon; beta
 * optional. */
static mlc_prim_func *lower_layernorm(mlc_arena *a, const char *name, int n,
                                      mlc_gvar *const *args, int ax, double eps) {
  const mlc_gtype *xt = &args[0]->type;
  double C = 1;
  for (int d = ax; d < xt->ndim; d++) C *= (double)xt->shape[d];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_te_tensor *G = placeholder(te, args[1]->name, &args[1]->type);
  mlc_te_tensor *B = n == 3 ? placeholder(te, args[2]->name, &args[2]->type) : NULL;
  mlc_te_tensor *msum = sum_trailing(a, te, "mean_sum", X, xt, ax, NULL, C);
  mlc_te_tensor *vsum = sum_trailing(a, te, "var_sum", X, xt, ax, msum, C);
  mlc_expr **o = mlc_te_begin(te, "T_layer_norm", xt->ndim, xt->shape, NULL);
  mlc_expr *mean = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, msum, o), f32(a, C));
  mlc_expr *var = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, vsum, o), f32(a, C));
  mlc_expr *inv = intrin1(a, MLC_INTRIN_RSQRT, mlc_add(a, var, f32(a, eps)));
  mlc_expr *norm = mlc_mul(a, mlc_sub(a, mlc_te_at_v(te, X, o), mean), inv);
  mlc_expr *y = mlc_mul(a, norm, mlc_te_at_v(te, G, o + ax));
  if (B) y = mlc_add(a, y, mlc_te_at_v(te, B, o + ax));
  mlc_te_tensor *Y = mlc_te_end(te, y);
  mlc_te_tensor *ts[4] = {X, G, B ? B : Y, Y};
  return mlc_te_create_prim_func(te, name, n + 1, ts);
}

/* Inference batch normalization over channel axis 1, one elementwise block:
 * (x - mean) * scale / sqrt(var + eps) + bias. */
static mlc_prim_func *lower_batch_norm(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                       double eps) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *t[6];
  for (int i = 0; i < 5; i++) t[i] = placeholder(te, args[i]->name, &args[i]->type);
  mlc_expr **o = mlc_te_begin(te, "T_batch_norm", xt->ndim, xt->shape, NULL);
  mlc_expr *c = o[1];
  mlc_expr *inv = intrin1(a, MLC_INTRIN_RSQRT, mlc_add(a, mlc_te_at(te, t[4], c), f32(a, eps)));
  mlc_expr *y = mlc_mul(a, mlc_sub(a, mlc_te_at_v(te, t[0], o), mlc_te_at(te, t[3], c)),
                        mlc_mul(a, mlc_te_at(te, t[1], c), inv));
  t[5] = mlc_te_end(te, mlc_add(a, y, mlc_te_at(te, t[2], c)));
  return mlc_te_create_prim_func(te, name, 6, t);
}

/* A built-in task's prim_func, renamed, its inputs named after the args. */
static mlc_prim_func *from_task(mlc_arena *a, const char *task, const int64_t *shape,
                                const char *name, int n, mlc_gvar *const *args) {
  const mlc_task_def *d = mlc_task_find(task);
  MLC_ASSERT(d);
  mlc_prim_func *f = mlc_task_build(a, d, shape);
  f->name = mlc_arena_strdup(a, name);
  for (int i = 0; i < f->n_attrs; i++)
    if (strcmp(f->attrs[i].key, "global_symbol") == 0) f->attrs[i].s = f->name;
  for (int i = 0; i < n; i++) f->params[i]->name = mlc_arena_strdup(a, args[i]->name);
  return f;
}

static bool is_reverse_2d(const mlc_gattrs *at, const mlc_gtype *t) {
  return t->ndim == 2 && (at->n_ints == 0 || (at->ints[0] == 1 && at->ints[1] == 0));
}

/* ---- lowerings (ops.def's impl column) ---------------------------------------- */

/* One op call to lower: its op, attributes, n args and result type. */
typedef struct lower_call {
  mlc_arena *a;
  const char *name; /* the prim_func's */
  mlc_gop op;
  const mlc_gattrs *at;
  int n;
  mlc_gvar *const *args;
  const mlc_gtype *x; /* args[0]'s type */
  const mlc_gtype *out;
  mlc_error *err;
} lower_call;

typedef mlc_prim_func *lowering(const lower_call *c);

static mlc_prim_func *lower_op_matmul(const lower_call *c) {
  const mlc_gtype *x = c->x, *w = &c->args[1]->type, *out = c->out;
  if (x->ndim == 2 && w->ndim == 2)
    return from_task(c->a, "matmul", SHAPE(x->shape[0], out->shape[1], x->shape[1]), c->name,
                     c->n, c->args);
  if (x->ndim == 3 && w->ndim == 3 && x->shape[0] == w->shape[0])
    return from_task(c->a, "batch_matmul",
                     SHAPE(x->shape[0], x->shape[1], out->shape[2], x->shape[2]), c->name, c->n,
                     c->args);
  return lower_matmul(c->a, c->name, c->args, out);
}

static mlc_prim_func *lower_op_dense(const lower_call *c) {
  return lower_dense(c->a, c->name, c->n, c->args, c->out);
}

/* y[p, q] = x[0, c, oh * sh + r * dh, ow * sw + s * dw] for p = oh * OW + ow,
 * q = (c * R + r) * S + s: a block over (oh, ow, c, r, s) writing there,
 * so that no index is divided per element. */
static mlc_prim_func *lower_op_im2col(const lower_call *c) {
  mlc_arena *a = c->a;
  const mlc_gattrs *at = c->at;
  int64_t R = at->kernel[0], S = at->kernel[1], C = c->x->shape[1];
  int64_t OW = (c->x->shape[3] - (at->dilations[1] * (S - 1) + 1)) / at->strides[1] + 1;
  int64_t OH = c->out->shape[0] / OW;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, c->args[0]->name, c->x);
  mlc_expr **o = mlc_te_begin(te, "T_im2col", 5, SHAPE(OH, OW, C, R, S), "hwcrs");
  mlc_expr *p = mlc_add(a, mlc_mul(a, o[0], mlc_int(a, OW)), o[1]);
  mlc_expr *q = mlc_add(a, mlc_mul(a, mlc_add(a, mlc_mul(a, o[2], mlc_int(a, R)), o[3]), mlc_int(a, S)), o[4]);
  mlc_te_write_at(te, 2, c->out->shape, (mlc_expr *[]){p, q});
  mlc_expr *ih = mlc_add(a, mlc_mul(a, o[0], mlc_int(a, at->strides[0])), mlc_mul(a, o[3], mlc_int(a, at->dilations[0])));
  mlc_expr *iw = mlc_add(a, mlc_mul(a, o[1], mlc_int(a, at->strides[1])), mlc_mul(a, o[4], mlc_int(a, at->dilations[1])));
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at(te, X, mlc_int(a, 0), o[2], ih, iw));
  return mlc_te_create_prim_func(te, c->name, 2, (mlc_te_tensor *[]){X, Y});
}

/* The dense_int8 task (the VNNI / AMX micro-kernels' form). */
static mlc_prim_func *lower_op_qdense(const lower_call *c) {
  const int64_t *w = c->args[1]->type.shape;
  return from_task(c->a, "dense_int8", SHAPE(c->x->shape[0], w[0] * 16, w[1] * 4), c->name, c->n, c->args);
}

static mlc_prim_func *lower_op_hardmax(const lower_call *c) {
  return lower_hardmax(c->a, c->name, c->args, mlc_gop_axis(c->at->axis, c->x->ndim), c->out);
}

static mlc_prim_func *lower_op_softmax(const lower_call *c) {
  int ax = mlc_gop_axis(c->at->axis, c->x->ndim);
  if (c->op == MLC_GOP_SOFTMAX && c->x->ndim == 2 && ax == 1)
    return from_task(c->a, "softmax", c->x->shape, c->name, c->n, c->args);
  return lower_softmax(c->a, c->name, c->args, ax, c->op == MLC_GOP_LOG_SOFTMAX);
}

static mlc_prim_func *lower_op_layernorm(const lower_call *c) {
  int ax = mlc_gop_axis(c->at->axis, c->x->ndim);
  if (c->x->ndim == 2 && ax == 1 && c->n == 3 && c->at->eps == 1e-5)
    return from_task(c->a, "layernorm", c->x->shape, c->name, c->n, c->args);
  return lower_layernorm(c->a, c->name, c->n, c->args, ax, c->at->eps);
}

static mlc_prim_func *lower_op_batch_norm(const lower_call *c) {
  return lower_batch_norm(c->a, c->name, c->args, c->at->eps);
}

static mlc_prim_func *lower_op_conv2d(const lower_call *c) {
  const mlc_gtype *x = c->x;
  const mlc_gattrs *at = c->at;
  const int64_t *w = c->args[1]->type.shape;
  if (c->args[1]->type.ndim == 6) return lower_conv_blocked(c->a, c->name, at, c->n, c->args, c->out);
  if (!is_task_conv(at, c->n)) return lower_conv(c->a, c->name, 2, at, c->n, c->args, c->out);
  return from_task(c->a, "conv2d_nchw",
                   SHAPE(x->shape[0], x->shape[1], x->shape[2], x->shape[3], w[0], w[2], w[3],
                         at->strides[0], at->pads[0]),
                   c->name, c->n, c->args);
}

static mlc_prim_func *lower_op_conv3d(const lower_call *c) {
  return lower_conv(c->a, c->name, 3, c->at, c->n, c->args, c->out);
}

static mlc_prim_func *lower_op_conv_transpose(const lower_call *c) {
  return lower_conv_transpose(c->a, c->name, mlc_gop_window_dims(c->op), c->at, c->n, c->args,
                              c->out);
}

static mlc_prim_func *lower_op_max_pool(const lower_call *c) {
  return lower_max_pool(c->a, c->name, mlc_gop_window_dims(c->op), c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_avg_pool(const lower_call *c) {
  return lower_avg_pool(c->a, c->name, mlc_gop_window_dims(c->op), c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_unpack_nchwc(const lower_call *c) {
  return lower_unpack(c->a, c->name, c->args, c->out);
}

static mlc_prim_func *lower_op_concat(const lower_call *c) {
  return lower_concat(c->a, c->name, c->n, c->args, mlc_gop_axis(c->at->axis, c->x->ndim), c->out);
}

static mlc_prim_func *lower_op_append(const lower_call *c) {
  return lower_append(c->a, c->name, c->args, mlc_gop_axis(c->at->axis, c->x->ndim), c->out);
}

static mlc_prim_func *lower_op_slice(const lower_call *c) {
  return lower_slice(c->a, c->name, c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_pad(const lower_call *c) {
  return lower_pad(c->a, c->name, c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_trilu(const lower_call *c) {
  return lower_trilu(c->a, c->name, c->args, c->op == MLC_GOP_TRIU, c->at->k, c->out);
}

static mlc_prim_func *lower_op_cumsum(const lower_call *c) {
  return lower_cumsum(c->a, c->name, c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_argmax(const lower_call *c) {
  return lower_argmax(c->a, c->name, c->args, c->at, c->op == MLC_GOP_ARGMAX, c->out);
}

static mlc_prim_func *lower_op_gather(const lower_call *c) {
  return lower_gather(c->a, c->name, c->args, mlc_gop_axis(c->at->axis, c->x->ndim), c->out);
}

static mlc_prim_func *lower_op_gather_elements(const lower_call *c) {
  return lower_gather_elements(c->a, c->name, c->args, mlc_gop_axis(c->at->axis, c->x->ndim), c->out);
}

static mlc_prim_func *lower_op_topk(const lower_call *c) {
  return lower_topk(c->a, c->name, c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_scatter_nd(const lower_call *c) {
  return lower_scatter_nd(c->a, c->name, c->op, c->args, c->out);
}

static mlc_prim_func *lower_op_global_avg_pool(const lower_call *c) {
  return lower_reduce(c->a, c->name, c->op, c->args, (const bool[]){false, false, true, true},
                      true, c->out);
}

static mlc_prim_func *lower_op_reduce(const lower_call *c) {
  bool red[MLC_GRAPH_MAX_DIMS];
  if (!mlc_gop_reduced_axes(c->op, c->at, c->x->ndim, red, c->err)) return NULL;
  return lower_reduce(c->a, c->name, c->op, c->args, red, c->at->keepdims, c->out);
}

static mlc_prim_func *lower_op_reshape(const lower_call *c) {
  return lower_reshape(c->a, c->name, c->args, c->out);
}

static mlc_prim_func *lower_op_transpose(const lower_call *c) {
  if (is_reverse_2d(c->at, c->x))
    return from_task(c->a, "transpose", c->x->shape, c->name, c->n, c->args);
  return lower_transpose(c->a, c->name, c->args, c->at, c->out);
}

static mlc_prim_func *lower_op_pointwise(const lower_call *c) {
  return lower_elemwise(c->a, c->name, c->op, c->at, c->n, c->args, c->out);
}

static lowering *const lowerings[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) \
  [MLC_GOP_##id] = lower_op_##impl,
#include "graph/ops.def"
};
_Static_assert(sizeof(lowerings) / sizeof(lowerings[0]) == MLC_GOP_COUNT,
               "lowering table out of date");

mlc_prim_func *mlc_graph_lower_op(mlc_arena *a, const char *name, mlc_gop op,
                                  const mlc_gattrs *at, int n, mlc_gvar *const *args,
                                  const mlc_gtype *out, mlc_error *err) {
  lower_call c = {a, name, op, at, n, args, &args[0]->type, out, err};
  mlc_prim_func *f = lowerings[op](&c);
  if (f && op == MLC_GOP_QUANTIZE) mlc_func_set_check_atol(a, f, MLC_GRAPH_QUANT_ATOL);
  return f;
}

/* ---- the pass ---------------------------------------------------------------- */

/* The names in use in m (prim_funcs and graph functions), each mapped to
 * the next suffix worth trying for names made from it: naming the n-th
 * relu then costs O(1), not n candidates each scanning the module (a
 * chain of 3,000 relus took 20 s). */
static void names_of_module(mlc_gmap *used, const mlc_gmodule *m) {
  for (int i = 0; i < m->tir->n_funcs; i++) mlc_gmap_put(used, m->tir->funcs[i]->name, 0);
  for (int i = 0; i < m->n_funcs; i++) mlc_gmap_put(used, m->funcs[i]->name, 0);
}

/* "add", "add1", "add2", ... as TVM names call_te results: the first one
 * not in use (suffixes below base's mapped value are taken). */
static const char *unique_name(mlc_arena *a, mlc_gmap *used, const char *base) {
  int k = 0;
  mlc_gmap_get(used, base, &k);
  const char *s;
  for (;; k++) {
    s = k ? mlc_arena_printf(a, "%s%d", base, k) : mlc_arena_strdup(a, base);
    if (!mlc_gmap_get(used, s, NULL)) break;
  }
  mlc_gmap_put(used, s, 0);
  mlc_gmap_put(used, base, k + 1);
  return s;
}

/* Param names must differ within a prim_func: add(x, x) gets x and x_1. */
static void dedup_params(mlc_arena *a, mlc_prim_func *f) {
  for (int i = 1; i < f->n_params; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(f->params[i]->name, f->params[j]->name) == 0) {
        f->params[i]->name = mlc_arena_printf(a, "%s_%d", f->params[i]->name, i);
        j = -1;
      }
}

void mlc_graph_add_tir_funcs(mlc_gmodule *m, int n, mlc_prim_func *const *fs) {
  if (!n) return;
  int old = m->tir->n_funcs;
  mlc_prim_func **all = MLC_NEW_ARRAY(m->arena, mlc_prim_func *, old + n);
  if (old) memcpy(all, m->tir->funcs, sizeof(*all) * (size_t)old);
  memcpy(all + old, fs, sizeof(*all) * (size_t)n);
  m->tir->funcs = all;
  m->tir->n_funcs = old + n;
}

bool mlc_graph_lower(mlc_gmodule *m, mlc_error *err) {
  mlc_gmap used = {.a = m->arena, .strings = true};
  names_of_module(&used, m);
  MLC_VEC(mlc_prim_func *) added = {0};
  bool ok = true;
  for (int i = 0; ok && i < m->n_funcs; i++) {
    mlc_gfunc *f = m->funcs[i];
    for (int j = 0; j < f->n_bindings; j++) {
      mlc_gbinding *b = &f->bindings[j];
      if (b->kind != MLC_GCALL_OP || mlc_gbinding_is_view(f, b)) continue;
      const char *name = unique_name(m->arena, &used, mlc_gop_name(b->op));
      mlc_prim_func *p = mlc_graph_lower_op(m->arena, name, b->op, &b->attrs, b->n_args, b->args,
                                            &b->var->type, err);
      if (!p) {
        ok = false;
        break;
      }
      dedup_params(m->arena, p);
      MLC_VEC_APUSH(m->arena, added, p);
      b->kind = MLC_GCALL_TIR;
      b->tir = p;
    }
  }
  mlc_graph_add_tir_funcs(m, added.len, added.data);
  return ok && mlc_graph_verify(m, err);
}
