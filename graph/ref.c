/* A plain C evaluation of the high-level ops (before lowering): the
 * independent reference the compiled model is checked against. Written
 * straight from the op definitions, sharing nothing with the lowering.
 *
 * Every value is held as doubles, whatever its dtype: exact for float32,
 * bool and integers up to 2^53 (int64 values past that lose their low
 * bits here, never in compiled code). Each op computes in double and its
 * result is rounded to its dtype (round_to_dtype), so a float32 value is
 * what float32 arithmetic stores, an integer truncated toward zero. */
#include "graph/graph_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Flat index into x (shape xt) of the element broadcast to output index
 * idx (shape out). */
static int64_t bcast_index(const mlc_gtype *xt, const mlc_gtype *out, const int64_t *idx) {
  int64_t flat = 0;
  int off = out->ndim - xt->ndim;
  for (int d = 0; d < xt->ndim; d++)
    flat = flat * xt->shape[d] + (xt->shape[d] == 1 ? 0 : idx[d + off]);
  return flat;
}

static void unravel(const mlc_gtype *t, int64_t flat, int64_t *idx) {
  for (int d = t->ndim - 1; d >= 0; d--) {
    idx[d] = flat % t->shape[d];
    flat /= t->shape[d];
  }
}

/* n doubles of scratch: from `scratch` when given (freed with it; under
 * its escape point running out of memory jumps there), else from the
 * heap (aborts on failure), given back by put_doubles. */
static double *get_doubles(mlc_arena *scratch, int64_t n) {
  size_t bytes = sizeof(double) * (size_t)(n > 0 ? n : 1);
  return scratch ? mlc_arena_alloc(scratch, bytes) : mlc_xmalloc(bytes);
}

static void put_doubles(mlc_arena *scratch, double *p) {
  if (!scratch) mlc_free(p);
}

static double hard_sigmoid(double x, double alpha, double beta) {
  return fmax(0, fmin(1, alpha * x + beta));
}

/* ---- pointwise ops (ops.def's MLC_GOP_PW rows) -------------------------------- */

/* One element of a pointwise op; v holds its operands. */
#define PW(name) \
  static double pw_##name(const mlc_gattrs *at __attribute__((unused)), \
                          mlc_dtype dt __attribute__((unused)), const double *v)

PW(add) { return v[0] + v[1]; }
PW(multiply) { return v[0] * v[1]; }
PW(subtract) { return v[0] - v[1]; }
PW(divide) { return v[0] / v[1]; }
PW(maximum) { return fmax(v[0], v[1]); }
PW(minimum) { return fmin(v[0], v[1]); }
PW(pow) { return pow(v[0], v[1]); }
PW(ewise_fma) { return v[0] * v[1] + v[2]; }
PW(relu) { return v[0] > 0 ? v[0] : 0; }
PW(gelu) { return 0.5 * v[0] * (1 + erf(v[0] / sqrt(2.0))); }
PW(power) { return pow(v[0], at->exponent); }
PW(sqrt) { return sqrt(v[0]); }
PW(exp) { return exp(v[0]); }
PW(erf) { return erf(v[0]); }
PW(tanh) { return tanh(v[0]); }
PW(sigmoid) { return 1 / (1 + exp(-v[0])); }
PW(leaky_relu) { return v[0] >= 0 ? v[0] : at->alpha * v[0]; }
PW(clip) { return fmin(fmax(v[0], at->lo), at->hi); }
PW(hard_sigmoid) { return hard_sigmoid(v[0], at->alpha, at->beta); }
PW(hard_swish) { return v[0] * hard_sigmoid(v[0], 1.0 / 6, 0.5); }
PW(negative) { return -v[0]; }
PW(abs) { return fabs(v[0]); }
PW(log) { return log(v[0]); }
PW(floor) { return floor(v[0]); }
PW(ceil) { return ceil(v[0]); }
PW(round) { return nearbyint(v[0]); }
PW(sign) { return v[0] > 0 ? 1 : v[0] < 0 ? -1 : v[0]; }
PW(sin) { return sin(v[0]); }
PW(cos) { return cos(v[0]); }
PW(tan) { return tan(v[0]); }
PW(asin) { return asin(v[0]); }
PW(acos) { return acos(v[0]); }
PW(atan) { return atan(v[0]); }
PW(sinh) { return sinh(v[0]); }
PW(cosh) { return cosh(v[0]); }
PW(asinh) { return asinh(v[0]); }
PW(acosh) { return acosh(v[0]); }
PW(atanh) { return atanh(v[0]); }
PW(equal) { return v[0] == v[1]; }
PW(less) { return v[0] < v[1]; }
PW(greater) { return v[0] > v[1]; }
PW(less_equal) { return v[0] <= v[1]; }
PW(greater_equal) { return v[0] >= v[1]; }
PW(logical_not) { return v[0] == 0; }
PW(logical_and) { return v[0] != 0 && v[1] != 0; }
PW(logical_or) { return v[0] != 0 || v[1] != 0; }
PW(logical_xor) { return (v[0] != 0) != (v[1] != 0); }
PW(where) { return v[0] != 0 ? v[1] : v[2]; }
PW(astype) { return v[0]; } /* round_to_dtype converts */
PW(fmod) { return fmod(v[0], v[1]); }
PW(mod) {
  double r = fmod(v[0], v[1]);
  return r != 0 && (r < 0) != (v[1] < 0) ? r + v[1] : r;
}
PW(thresholded_relu) { return v[0] > at->alpha ? v[0] : 0; }
/* In float32 as the lowering computes it: the quotient rounds once. */
PW(quantize) {
  float q = nearbyintf((float)v[0] / (float)v[1]) + (float)v[2];
  bool u8 = dt == MLC_UINT8;
  return fmin(fmax(q, u8 ? 0 : -128), u8 ? 255 : 127);
}
PW(dequantize) { return (float)(v[0] - v[2]) * (float)v[1]; }
PW(shrink) { return v[0] < -at->alpha ? v[0] + at->beta : v[0] > at->alpha ? v[0] - at->beta : 0; }

typedef double pw_value(const mlc_gattrs *at, mlc_dtype dt, const double *v);

/* NULL for the ops that are not pointwise. */
static pw_value *const pw_values[MLC_GOP_COUNT] = {
#define MLC_GOP_PW(id, name, script, n_in, shape, types, print, keys) [MLC_GOP_##id] = pw_##name,
#include "graph/ops.def"
};

static void ref_elemwise(mlc_gop op, const mlc_gattrs *at, int n, double *const *in,
                         const mlc_gtype *ts, const mlc_gtype *out, double *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  MLC_ASSERT(pw_values[op]);
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    double v[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) v[k] = in[k][bcast_index(&ts[k], out, idx)];
    y[i] = (double)pw_values[op](at, out->dtype, v);
  }
}

/* Flat offset of the batch part of x ([..., R, C], batch dims broadcast
 * to out's) at output batch index idx. */
static int64_t batch_offset(const mlc_gtype *xt, const mlc_gtype *out, const int64_t *idx) {
  int nb = out->ndim - 2, xb = xt->ndim - 2;
  int64_t flat = 0;
  for (int d = 0; d < xb; d++)
    flat = flat * xt->shape[d] + (xt->shape[d] == 1 ? 0 : idx[d + nb - xb]);
  return flat * xt->shape[xb] * xt->shape[xb + 1];
}

/* matmul x [..., M, K] @ w [..., K, N]; dense x [M, K] . w [N, K] (+ bias). */
static void ref_matmul(bool dense, const mlc_gtype *xt, const double *x, const mlc_gtype *wt,
                       const double *w, const double *bias, const mlc_gtype *out, double *y) {
  int nb = out->ndim - 2;
  int64_t M = out->shape[nb], N = out->shape[nb + 1], K = xt->shape[xt->ndim - 1];
  mlc_gtype bt = *out;
  bt.ndim = nb;
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  for (int64_t p = 0; p < mlc_gtype_numel(&bt); p++) {
    unravel(&bt, p, idx);
    const double *xp = x + batch_offset(xt, out, idx), *wp = dense ? w : w + batch_offset(wt, out, idx);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = bias ? bias[j] : 0;
        for (int64_t k = 0; k < K; k++)
          acc += (double)xp[i * K + k] * (dense ? wp[j * K + k] : wp[k * N + j]);
        y[(p * M + i) * N + j] = (double)acc;
      }
  }
}

/* t as [outer, L, inner] around axis ax. */
static void split_at(const mlc_gtype *t, int ax, int64_t *outer, int64_t *L, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < ax; d++) *outer *= t->shape[d];
  for (int d = ax + 1; d < t->ndim; d++) *inner *= t->shape[d];
  *L = t->shape[ax];
}

static void ref_softmax(const mlc_gtype *t, int ax, bool log_, const double *x, double *y) {
  int64_t O, L, I;
  split_at(t, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      const double *xp = x + o * L * I + i;
      double *yp = y + o * L * I + i;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < L; j++) mx = fmax(mx, xp[j * I]);
      for (int64_t j = 0; j < L; j++) sum += exp(xp[j * I] - mx);
      for (int64_t j = 0; j < L; j++)
        yp[j * I] = (double)(log_ ? xp[j * I] - mx - log(sum) : exp(xp[j * I] - mx) / sum);
    }
}

/* Normalized over the axes from ax on; b may be NULL. */
static void ref_layernorm(const mlc_gtype *t, int ax, const double *x, const double *g,
                          const double *b, double eps, double *y) {
  int64_t R = 1, C = 1;
  for (int d = 0; d < t->ndim; d++) *(d < ax ? &R : &C) *= t->shape[d];
  for (int64_t i = 0; i < R; i++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < C; j++) mean += x[i * C + j];
    mean /= (double)C;
    for (int64_t j = 0; j < C; j++) var += (x[i * C + j] - mean) * (x[i * C + j] - mean);
    var /= (double)C;
    for (int64_t j = 0; j < C; j++)
      y[i * C + j] = (double)((x[i * C + j] - mean) / sqrt(var + eps) * g[j] + (b ? b[j] : 0));
  }
}

static void ref_batch_norm(const mlc_gtype *t, double *const *in, double eps, double *y) {
  int64_t O, C, I;
  split_at(t, 1, &O, &C, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < I; i++) {
        int64_t k = (o * C + c) * I + i;
        y[k] = (double)((in[0][k] - in[3][c]) / sqrt(in[4][c] + eps) * in[1][c] + in[2][c]);
      }
}

/* conv2d over NCHW, w [K, C / groups, R, S], bias [K] or NULL: each output
 * element as the sum over its window. */
static void ref_conv2d(const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                       const mlc_gtype *wt, const double *w, const double *bias,
                       const mlc_gtype *out, double *y) {
  int64_t N = out->shape[0], K = out->shape[1], OH = out->shape[2], OW = out->shape[3];
  int64_t C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
  /* a packed weight [K/kk, C/cc, R, S, cc, kk] (groups 1) or [K, C/groups, R, S] */
  bool packed = wt->ndim == 6;
  int64_t cc = packed ? wt->shape[4] : 1, kk = packed ? wt->shape[5] : 1;
  int64_t Cg = wt->shape[1] * cc, R = wt->shape[2], S = wt->shape[3], Kg = K / at->groups;
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = bias ? bias[k] : 0;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t s = 0; s < S; s++) {
                int64_t ih = oh * at->strides[0] + r * at->dilations[0] - at->pads[0];
                int64_t iw = ow * at->strides[1] + s * at->dilations[1] - at->pads[1];
                int64_t ch = k / Kg * Cg + c;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                  acc += (double)x[((n * C + ch) * H + ih) * W + iw] *
                         w[(((k / kk * (Cg / cc) + c / cc) * R + r) * S + s) * cc * kk +
                           c % cc * kk + k % kk];
              }
          y[((n * K + k) * OH + oh) * OW + ow] = (double)acc;
        }
}

/* conv_transpose2d, w [C, K / groups, R, S]: every input element scattered
 * into the outputs its window reaches. */
static void ref_conv_transpose2d(mlc_arena *scratch, const mlc_gattrs *at, const mlc_gtype *xt,
                                 const double *x, const mlc_gtype *wt, const double *w,
                                 const double *bias, const mlc_gtype *out, double *y) {
  int64_t N = out->shape[0], K = out->shape[1], OH = out->shape[2], OW = out->shape[3];
  int64_t C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
  int64_t Kg = wt->shape[1], R = wt->shape[2], S = wt->shape[3], Cg = C / at->groups;
  double *acc = get_doubles(scratch, mlc_gtype_numel(out));
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++)
    acc[i] = bias ? bias[i / (OH * OW) % K] : 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t ih = 0; ih < H; ih++)
        for (int64_t iw = 0; iw < W; iw++)
          for (int64_t kg = 0; kg < Kg; kg++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t s = 0; s < S; s++) {
                int64_t oh = ih * at->strides[0] + r * at->dilations[0] - at->pads[0];
                int64_t ow = iw * at->strides[1] + s * at->dilations[1] - at->pads[1];
                int64_t k = c / Cg * Kg + kg;
                if (oh >= 0 && oh < OH && ow >= 0 && ow < OW)
                  acc[((n * K + k) * OH + oh) * OW + ow] +=
                      (double)x[((n * C + c) * H + ih) * W + iw] * w[((c * Kg + kg) * R + r) * S + s];
              }
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) y[i] = (double)acc[i];
  put_doubles(scratch, acc);
}

/* avg_pool2d: the mean of each window, divided by the elements of the
 * window inside the input (or inside the padded input). */
static void ref_avg_pool(const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                         const mlc_gtype *out, double *y) {
  int64_t NC = out->shape[0] * out->shape[1], OH = out->shape[2], OW = out->shape[3];
  int64_t H = xt->shape[2], W = xt->shape[3];
  for (int64_t p = 0; p < NC; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double sum = 0;
        int64_t n = 0;
        for (int64_t r = 0; r < at->kernel[0]; r++)
          for (int64_t s = 0; s < at->kernel[1]; s++) {
            int64_t ih = oh * at->strides[0] + r - at->pads[0];
            int64_t iw = ow * at->strides[1] + s - at->pads[1];
            bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
            bool padded = ih < H + at->pads[2] && iw < W + at->pads[3];
            if (in) sum += x[(p * H + ih) * W + iw];
            n += at->count_include_pad ? padded : in;
          }
        y[(p * OH + oh) * OW + ow] = (double)(sum / (double)n);
      }
}

/* reduce_*: every input element into the output element it reduces to. */
static void ref_reduce(mlc_arena *scratch, mlc_gop op, const bool *red, const mlc_gtype *xt,
                       const double *x, const mlc_gtype *out, double *y) {
  int64_t n_out = mlc_gtype_numel(out), idx[MLC_GRAPH_MAX_DIMS];
  double *acc = get_doubles(scratch, n_out);
  for (int64_t i = 0; i < n_out; i++)
    acc[i] = op == MLC_GOP_REDUCE_MAX ? -INFINITY : op == MLC_GOP_REDUCE_PROD ? 1 : 0;
  for (int64_t i = 0; i < mlc_gtype_numel(xt); i++) {
    unravel(xt, i, idx);
    int64_t o = 0;
    for (int d = 0; d < xt->ndim; d++)
      if (!red[d]) o = o * xt->shape[d] + idx[d];
    acc[o] = op == MLC_GOP_REDUCE_MAX    ? fmax(acc[o], x[i])
             : op == MLC_GOP_REDUCE_PROD ? acc[o] * x[i]
                                         : acc[o] + x[i];
  }
  double count = (double)(mlc_gtype_numel(xt) / n_out);
  for (int64_t i = 0; i < n_out; i++)
    y[i] = (double)(op == MLC_GOP_REDUCE_MEAN || op == MLC_GOP_GLOBAL_AVG_POOL2D ? acc[i] / count : acc[i]);
  put_doubles(scratch, acc);
}

/* tril / triu over the last two axes (rows R, columns C). */
static void ref_trilu(bool upper, int64_t k, const mlc_gtype *t, const double *x, double *y) {
  int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
  for (int64_t i = 0; i < mlc_gtype_numel(t); i++) {
    int64_t r = i / C % R, c = i % C;
    y[i] = (upper ? c - r >= k : c - r <= k) ? x[i] : 0;
  }
}

static void ref_cumsum(const mlc_gattrs *at, const mlc_gtype *t, const double *x, double *y) {
  int64_t O, L, I;
  split_at(t, mlc_gop_axis(at->axis, t->ndim), &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      double acc = 0;
      for (int64_t s = 0; s < L; s++) {
        int64_t l = at->reverse ? L - 1 - s : s, at_l = (o * L + l) * I + i;
        if (at->exclusive) y[at_l] = (double)acc;
        acc += x[at_l];
        if (!at->exclusive) y[at_l] = (double)acc;
      }
    }
}

/* 1 at the first largest element along ax (NaN inputs: unspecified). */
static void ref_hardmax(const mlc_gtype *t, int ax, const double *x, double *y) {
  int64_t O, L, I;
  split_at(t, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      int64_t best = 0;
      for (int64_t l = 0; l < L; l++) {
        if (x[(o * L + l) * I + i] > x[(o * L + best) * I + i]) best = l;
        y[(o * L + l) * I + i] = 0;
      }
      y[(o * L + best) * I + i] = 1;
    }
}

static void ref_concat(int n, double *const *in, const mlc_gtype *ts, int ax, const mlc_gtype *out,
                       double *y) {
  int64_t O, L, I, k = 0;
  split_at(out, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int i = 0; i < n; i++) {
      int64_t len = ts[i].shape[ax] * I;
      memcpy(y + k, in[i] + o * len, sizeof(double) * (size_t)len);
      k += len;
    }
}

static void ref_slice(const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                      const mlc_gtype *out, double *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    int64_t flat = 0;
    for (int d = 0; d < xt->ndim; d++) {
      int64_t b, s, c;
      MLC_ASSERT(mlc_gop_slice_axis(at, xt, d, &b, &s, &c));
      flat = flat * xt->shape[d] + b + idx[d] * s;
    }
    y[i] = x[flat];
  }
}

/* pad: each input element moved by pad_before; the rest pad_value. */
static void ref_pad(const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                    const mlc_gtype *out, double *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    int64_t flat = 0;
    bool inside = true;
    for (int d = 0; d < xt->ndim; d++) {
      int64_t k = idx[d] - at->pad_before[d];
      inside &= k >= 0 && k < xt->shape[d];
      flat = flat * xt->shape[d] + k;
    }
    y[i] = inside ? x[flat] : (double)at->pad_value;
  }
}

/* The position along an axis of extent n of index v: from the end when
 * negative; 0 outside [-n, n), as the kernels read. */
static int64_t axis_index(double v, int64_t n) {
  int64_t k = v >= (double)-n && v <= (double)(n - 1) ? (int64_t)v : 0;
  return k < 0 ? k + n : k;
}

/* gather: [outer, n, inner] x, index j of the indices picks row k (an
 * index outside [-n, n) reads row 0, as the kernel does). */
static void ref_gather(int ax, const mlc_gtype *xt, const double *x, const mlc_gtype *it,
                       const double *ind, double *y) {
  int64_t O, n, I, J = mlc_gtype_numel(it);
  split_at(xt, ax, &O, &n, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t j = 0; j < J; j++) {
      int64_t k = axis_index(ind[j], n);
      memcpy(y + (o * J + j) * I, x + (o * n + k) * I, sizeof(double) * (size_t)I);
    }
}

/* gather_elements: each result element (type it, the indices') reads x at
 * its own index with the axis index replaced by its index value. */
static void ref_gather_elements(int ax, const mlc_gtype *xt, const double *x, const mlc_gtype *it,
                                const double *ind, double *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  for (int64_t f = 0, c = mlc_gtype_numel(it); f < c; f++) {
    unravel(it, f, idx);
    idx[ax] = axis_index(ind[f], xt->shape[ax]);
    int64_t flat = 0;
    for (int d = 0; d < xt->ndim; d++) flat = flat * xt->shape[d] + idx[d];
    y[f] = x[flat];
  }
}

/* scatter_nd*: data copied, then each indices row in order writes (adds,
 * multiplies) its update slice at the data slice it names; a row out of
 * range writes nothing. */
static void ref_scatter_nd(mlc_gop op, const mlc_gtype *ts, double *const *in, double *y) {
  const mlc_gtype *xt = &ts[0], *it = &ts[1];
  int q = it->ndim - 1, k = (int)it->shape[q];
  int64_t rows = 1, slice = 1, at = 0;
  for (int d = 0; d < q; d++) rows *= it->shape[d];
  for (int d = k; d < xt->ndim; d++) slice *= xt->shape[d];
  memcpy(y, in[0], sizeof(double) * (size_t)mlc_gtype_numel(xt));
  for (int64_t r = 0; r < rows; r++) {
    bool ok = true;
    at = 0;
    for (int j = 0; j < k; j++) {
      double v = in[1][r * k + j], n = (double)xt->shape[j];
      ok = ok && v >= -n && v < n;
      at = at * xt->shape[j] + (ok ? (int64_t)(v < 0 ? v + n : v) : 0);
    }
    if (!ok) continue;
    const double *u = in[2] + r * slice;
    double *t = y + at * slice;
    for (int64_t e = 0; e < slice; e++)
      t[e] = op == MLC_GOP_SCATTER_ND ? u[e] : op == MLC_GOP_SCATTER_ND_ADD ? t[e] + u[e] : t[e] * u[e];
  }
}

/* Element (v, l) comes before (w, m) in topk's order: larger (smaller),
 * or equal at a lower index. */
static bool topk_before(bool largest, double v, int64_t l, double w, int64_t m) {
  return (largest ? v > w : v < w) || (v == w && l < m);
}

/* topk along ax: the r-th index of a row is the first in the order among
 * the elements after the (r-1)-th (O(n k) per row). */
static void ref_topk(const mlc_gattrs *at, const mlc_gtype *t, const double *x, double *y) {
  int ax = mlc_gop_axis(at->axis, t->ndim);
  int64_t O, L, I, K = at->k;
  split_at(t, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      const double *row = x + o * L * I + i;
      int64_t prev = -1;
      for (int64_t r = 0; r < K; r++) {
        int64_t best = -1;
        for (int64_t l = 0; l < L; l++) {
          bool after = prev < 0 || topk_before(at->largest, row[prev * I], prev, row[l * I], l);
          if (after && (best < 0 || topk_before(at->largest, row[l * I], l, row[best * I], best)))
            best = l;
        }
        if (best < 0) best = 0; /* NaNs: the order is not total */
        y[(o * K + r) * I + i] = (double)best;
        prev = best;
      }
    }
}

/* max_pool2d: the largest input element inside each window (padding and
 * the part of a window past the input do not count). */
static void ref_max_pool(const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                         const mlc_gtype *out, double *y) {
  int64_t NC = out->shape[0] * out->shape[1], OH = out->shape[2], OW = out->shape[3];
  int64_t H = xt->shape[2], W = xt->shape[3];
  for (int64_t p = 0; p < NC; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double m = -FLT_MAX;
        for (int64_t r = 0; r < at->kernel[0]; r++)
          for (int64_t s = 0; s < at->kernel[1]; s++) {
            int64_t ih = oh * at->strides[0] + r * at->dilations[0] - at->pads[0];
            int64_t iw = ow * at->strides[1] + s * at->dilations[1] - at->pads[1];
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) m = fmax(m, x[(p * H + ih) * W + iw]);
          }
        y[(p * OH + oh) * OW + ow] = (double)m;
      }
}

static void ref_transpose(const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                          const mlc_gtype *out, double *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS], src[MLC_GRAPH_MAX_DIMS];
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    for (int d = 0; d < out->ndim; d++) src[at->n_ints ? at->ints[d] : out->ndim - 1 - d] = idx[d];
    int64_t flat = 0;
    for (int d = 0; d < xt->ndim; d++) flat = flat * xt->shape[d] + src[d];
    y[i] = x[flat];
  }
}

/* argmax / argmin along axis ax of x (type t) into y: the index of the
 * first extreme, or the last with select_last_index; NaN never wins. */
static void ref_argmax(bool is_max, bool last, int ax, const mlc_gtype *t, const double *x,
                       double *y) {
  int64_t O, L, I;
  split_at(t, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      int64_t best = 0;
      double bv = x[o * L * I + i];
      for (int64_t l = 1; l < L; l++) {
        double v = x[(o * L + l) * I + i];
        bool better = is_max ? v > bv || (last && v == bv) : v < bv || (last && v == bv);
        if (better || (isnan(bv) && !isnan(v))) best = l, bv = v;
      }
      y[o * I + i] = (double)best;
    }
}

/* ---- NCHWc values (the layout pass) ---------------------------------------------- */

/* blocked [N, C/c, H, W, c] and its NCHW form: one into the other. */
static void nchwc_copy(const mlc_gtype *blocked, double *nchwc, double *nchw, bool to_nchw) {
  int64_t N = blocked->shape[0], CB = blocked->shape[1], HW = blocked->shape[2] * blocked->shape[3];
  int64_t c = blocked->shape[4];
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < CB * c; ch++)
      for (int64_t p = 0; p < HW; p++) {
        double *b = &nchwc[((n * CB + ch / c) * HW + p) * c + ch % c];
        double *u = &nchw[(n * CB * c + ch) * HW + p];
        if (to_nchw) *u = *b;
        else *b = *u;
      }
}

static mlc_gtype nchw_of(const mlc_gtype *blocked) {
  mlc_gtype t = *blocked;
  t.ndim = 4;
  t.shape[1] *= blocked->shape[4];
  t.shape[4] = 0;
  return t;
}

/* conv2d over a packed weight (its result NCHWc) or max_pool2d over an
 * NCHWc operand: evaluated in NCHW between conversions, so the blocked
 * forms are checked against the same loops as the plain ones. */
static void ref_blocked(mlc_arena *scratch, const mlc_gbinding *b, double *const *in,
                        const mlc_gtype *ts, double *y) {
  mlc_gtype xt = ts[0].ndim == 5 ? nchw_of(&ts[0]) : ts[0];
  mlc_gtype yt = b->var->type.ndim == 5 ? nchw_of(&b->var->type) : b->var->type;
  double *x = in[0], *y4 = y;
  if (ts[0].ndim == 5) nchwc_copy(&ts[0], in[0], x = get_doubles(scratch, mlc_gtype_numel(&xt)), true);
  if (b->var->type.ndim == 5) y4 = get_doubles(scratch, mlc_gtype_numel(&yt));
  if (b->op == MLC_GOP_CONV2D)
    ref_conv2d(&b->attrs, &xt, x, &ts[1], in[1], b->n_args == 3 ? in[2] : NULL, &yt, y4);
  else
    ref_max_pool(&b->attrs, &xt, x, &yt, y4);
  if (y4 != y) nchwc_copy(&b->var->type, y, y4, false);
  if (!scratch && x != in[0]) mlc_free(x);
  if (!scratch && y4 != y) mlc_free(y4);
}

/* dense over a packed weight [N/n, K, n] (the layout pass): the weight
 * unpacked to [N, K] first, so the packed form is checked against the
 * same loops as the plain one. */
static void ref_dense_packed(mlc_arena *scratch, const mlc_gbinding *b, double *const *in,
                             const mlc_gtype *ts, double *y) {
  int64_t NB = ts[1].shape[0], K = ts[1].shape[1], n = ts[1].shape[2];
  mlc_gtype wt = {MLC_FLOAT32, 2, {NB * n, K}};
  double *w = get_doubles(scratch, NB * n * K);
  for (int64_t j = 0; j < NB * n; j++)
    for (int64_t k = 0; k < K; k++) w[j * K + k] = in[1][((j / n) * K + k) * n + j % n];
  ref_matmul(true, &ts[0], in[0], &wt, w, b->n_args == 3 ? in[2] : NULL, &b->var->type, y);
  if (!scratch) mlc_free(w);
}

/* ---- references (ops.def's impl column) ---------------------------------------- */

/* One op binding to evaluate: its inputs in (types ts) and the result y
 * (type out); scratch as get_doubles takes it. */
typedef struct ref_call {
  mlc_arena *scratch;
  const mlc_gbinding *b;
  mlc_gop op;
  const mlc_gattrs *at;
  double *const *in;
  const mlc_gtype *ts;
  const mlc_gtype *out;
  double *y;
} ref_call;

typedef void reference(const ref_call *c);

static const double *bias_of(const ref_call *c) { return c->b->n_args == 3 ? c->in[2] : NULL; }

static void ref_op_pointwise(const ref_call *c) {
  ref_elemwise(c->op, c->at, c->b->n_args, c->in, c->ts, c->out, c->y);
}

static void ref_op_matmul(const ref_call *c) {
  ref_matmul(false, &c->ts[0], c->in[0], &c->ts[1], c->in[1], bias_of(c), c->out, c->y);
}

static void ref_op_dense(const ref_call *c) {
  if (c->ts[1].ndim == 3) {
    ref_dense_packed(c->scratch, c->b, c->in, c->ts, c->y);
    return;
  }
  ref_matmul(true, &c->ts[0], c->in[0], &c->ts[1], c->in[1], bias_of(c), c->out, c->y);
}

static void ref_op_im2col(const ref_call *c) {
  const mlc_gattrs *at = c->at;
  int64_t H = c->ts[0].shape[2], W = c->ts[0].shape[3];
  int64_t R = at->kernel[0], S = at->kernel[1];
  int64_t OW = (W - (at->dilations[1] * (S - 1) + 1)) / at->strides[1] + 1;
  int64_t P = c->out->shape[0], Q = c->out->shape[1];
  for (int64_t p = 0; p < P; p++)
    for (int64_t q = 0; q < Q; q++) {
      int64_t ch = q / (R * S), r = q / S % R, s = q % S;
      int64_t ih = p / OW * at->strides[0] + r * at->dilations[0], iw = p % OW * at->strides[1] + s * at->dilations[1];
      c->y[p * Q + q] = c->in[0][(ch * H + ih) * W + iw];
    }
}

static void ref_op_qdense(const ref_call *c) {
  int64_t M = c->out->shape[0], N = c->out->shape[1], K = c->ts[0].shape[1];
  const double *x = c->in[0], *w = c->in[1];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0; /* exact: |acc| < K * 2^15 */
      for (int64_t k = 0; k < K; k++)
        acc += x[i * K + k] * w[mlc_qdense_packed_at(j, k, K)];
      c->y[i * N + j] = acc;
    }
}

static void ref_op_softmax(const ref_call *c) {
  ref_softmax(c->out, mlc_gop_axis(c->at->axis, c->out->ndim), c->op == MLC_GOP_LOG_SOFTMAX,
              c->in[0], c->y);
}

static void ref_op_layernorm(const ref_call *c) {
  ref_layernorm(c->out, mlc_gop_axis(c->at->axis, c->out->ndim), c->in[0], c->in[1], bias_of(c),
                c->at->eps, c->y);
}

static void ref_op_batch_norm(const ref_call *c) { ref_batch_norm(c->out, c->in, c->at->eps, c->y); }

static void ref_op_conv2d(const ref_call *c) {
  if (c->ts[1].ndim == 6) ref_blocked(c->scratch, c->b, c->in, c->ts, c->y);
  else ref_conv2d(c->at, &c->ts[0], c->in[0], &c->ts[1], c->in[1], bias_of(c), c->out, c->y);
}

static void ref_op_unpack_nchwc(const ref_call *c) { nchwc_copy(&c->ts[0], c->in[0], c->y, true); }

/* The 3-D windows: ref_window.c. */
static void ref_op_conv3d(const ref_call *c) { mlc_graph_ref_window(c->b, c->in, c->y); }

static void ref_op_conv_transpose(const ref_call *c) {
  if (mlc_gop_window_dims(c->op) == 3) mlc_graph_ref_window(c->b, c->in, c->y);
  else
    ref_conv_transpose2d(c->scratch, c->at, &c->ts[0], c->in[0], &c->ts[1], c->in[1], bias_of(c),
                         c->out, c->y);
}

static void ref_op_max_pool(const ref_call *c) {
  if (mlc_gop_window_dims(c->op) == 3) mlc_graph_ref_window(c->b, c->in, c->y);
  else if (c->ts[0].ndim == 5) ref_blocked(c->scratch, c->b, c->in, c->ts, c->y);
  else ref_max_pool(c->at, &c->ts[0], c->in[0], c->out, c->y);
}

static void ref_op_avg_pool(const ref_call *c) {
  if (mlc_gop_window_dims(c->op) == 3) mlc_graph_ref_window(c->b, c->in, c->y);
  else ref_avg_pool(c->at, &c->ts[0], c->in[0], c->out, c->y);
}

static void ref_op_concat(const ref_call *c) {
  ref_concat(c->b->n_args, c->in, c->ts, mlc_gop_axis(c->at->axis, c->out->ndim), c->out, c->y);
}

/* the whole result, as concat: the reference of a model is its values */
static void ref_op_append(const ref_call *c) { ref_op_concat(c); }

static void ref_op_slice(const ref_call *c) { ref_slice(c->at, &c->ts[0], c->in[0], c->out, c->y); }

static void ref_op_pad(const ref_call *c) { ref_pad(c->at, &c->ts[0], c->in[0], c->out, c->y); }

static void ref_op_gather(const ref_call *c) {
  ref_gather(mlc_gop_axis(c->at->axis, c->ts[0].ndim), &c->ts[0], c->in[0], &c->ts[1], c->in[1],
             c->y);
}

static void ref_op_gather_elements(const ref_call *c) {
  ref_gather_elements(mlc_gop_axis(c->at->axis, c->ts[0].ndim), &c->ts[0], c->in[0], &c->ts[1],
                      c->in[1], c->y);
}

static void ref_op_topk(const ref_call *c) { ref_topk(c->at, &c->ts[0], c->in[0], c->y); }

static void ref_op_scatter_nd(const ref_call *c) { ref_scatter_nd(c->op, c->ts, c->in, c->y); }

static void ref_op_global_avg_pool(const ref_call *c) {
  ref_reduce(c->scratch, c->op, (const bool[]){false, false, true, true}, &c->ts[0], c->in[0],
             c->out, c->y);
}

static void ref_op_reduce(const ref_call *c) {
  bool red[MLC_GRAPH_MAX_DIMS];
  mlc_error err;
  MLC_ASSERT(mlc_gop_reduced_axes(c->op, c->at, c->ts[0].ndim, red, &err));
  ref_reduce(c->scratch, c->op, red, &c->ts[0], c->in[0], c->out, c->y);
}

static void ref_op_reshape(const ref_call *c) {
  memcpy(c->y, c->in[0], sizeof(double) * (size_t)mlc_gtype_numel(c->out));
}

static void ref_op_transpose(const ref_call *c) {
  ref_transpose(c->at, &c->ts[0], c->in[0], c->out, c->y);
}

static void ref_op_trilu(const ref_call *c) {
  ref_trilu(c->op == MLC_GOP_TRIU, c->at->k, c->out, c->in[0], c->y);
}

static void ref_op_cumsum(const ref_call *c) { ref_cumsum(c->at, c->out, c->in[0], c->y); }

static void ref_op_hardmax(const ref_call *c) {
  ref_hardmax(c->out, mlc_gop_axis(c->at->axis, c->out->ndim), c->in[0], c->y);
}

static void ref_op_argmax(const ref_call *c) {
  ref_argmax(c->op == MLC_GOP_ARGMAX, c->at->select_last_index,
             mlc_gop_axis(c->at->axis, c->ts[0].ndim), &c->ts[0], c->in[0], c->y);
}

static reference *const references[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) \
  [MLC_GOP_##id] = ref_op_##impl,
#include "graph/ops.def"
};
_Static_assert(sizeof(references) / sizeof(references[0]) == MLC_GOP_COUNT,
               "reference table out of date");

/* An integer dtype's value of v: truncated toward zero, wrapped to the
 * dtype's width as two's complement; NaN and infinities (an integer
 * divided by 0) give 0. */
static double to_int(double v, mlc_dtype t) {
  if (!isfinite(v)) return 0;
  v = trunc(v);
  if (fabs(v) >= 0x1p63) v = fmod(v, 0x1p64);
  int64_t i = v >= 0x1p63 ? (int64_t)(v - 0x1p64) : v < -0x1p63 ? (int64_t)(v + 0x1p64) : (int64_t)v;
  switch (t) {
  case MLC_INT32: return (double)(int32_t)(uint32_t)i;
  case MLC_UINT8: return (double)(uint8_t)i;
  case MLC_INT8: return (double)(int8_t)(uint8_t)i;
  default: return (double)i;
  }
}

/* The values y (n of them) as dtype t stores them. */
static void round_to_dtype(mlc_dtype t, double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    switch (t) {
    case MLC_FLOAT32: y[i] = (float)y[i]; break;
    case MLC_INT64:
    case MLC_INT32:
    case MLC_UINT8:
    case MLC_INT8: y[i] = to_int(y[i], t); break;
    case MLC_BOOL: y[i] = y[i] != 0; break;
    default: mlc_unreachable();
    }
}

static void ref_op(mlc_arena *scratch, const mlc_gbinding *b, double *const *in, double *y) {
  mlc_gtype ts[MLC_GRAPH_MAX_ARGS];
  for (int i = 0; i < b->n_args; i++) ts[i] = b->args[i]->type;
  ref_call c = {scratch, b, b->op, &b->attrs, in, ts, &b->var->type, y};
  references[b->op](&c);
  round_to_dtype(b->var->type.dtype, y, mlc_gtype_numel(&b->var->type));
}

/* Typed data of dtype t (n elements) as doubles, and back. */
static void load_doubles(mlc_dtype t, const void *src, double *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = mlc_gdata_get(t, src, i);
}

static void store_doubles(mlc_dtype t, const double *src, void *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    switch (t) {
    case MLC_FLOAT32: ((float *)dst)[i] = (float)src[i]; break;
    case MLC_INT64: ((int64_t *)dst)[i] = (int64_t)to_int(src[i], t); break;
    case MLC_INT32: ((int32_t *)dst)[i] = (int32_t)to_int(src[i], t); break;
    case MLC_BOOL: ((uint8_t *)dst)[i] = src[i] != 0; break;
    case MLC_UINT8: ((uint8_t *)dst)[i] = (uint8_t)to_int(src[i], t); break;
    case MLC_INT8: ((int8_t *)dst)[i] = (int8_t)to_int(src[i], t); break;
    default: mlc_unreachable();
    }
}

static double *doubles_of(mlc_arena *scratch, const mlc_gtype *t, const void *data) {
  int64_t n = mlc_gtype_numel(t);
  double *d = get_doubles(scratch, n);
  load_doubles(t->dtype, data, d, n);
  return d;
}

void mlc_graph_eval_op(mlc_arena *scratch, const mlc_gbinding *b, const void *const *in, void *y) {
  double *din[MLC_GRAPH_MAX_ARGS];
  MLC_ASSERT(b->n_args <= MLC_GRAPH_MAX_ARGS);
  for (int i = 0; i < b->n_args; i++) din[i] = doubles_of(scratch, &b->args[i]->type, in[i]);
  int64_t n = mlc_gtype_numel(&b->var->type);
  double *dy = get_doubles(scratch, n);
  ref_op(scratch, b, din, dy);
  store_doubles(b->var->type.dtype, dy, y, n);
  put_doubles(scratch, dy);
  for (int i = 0; i < b->n_args; i++) put_doubles(scratch, din[i]);
}

/* A call_extern on doubles: its float32 operands and result converted. */
static bool call_extern(const mlc_gmodule *m, const mlc_gbinding *b, double *const *in, double *y,
                        mlc_error *err) {
  float *fin[MLC_GRAPH_MAX_EXTERN_ARGS];
  MLC_ASSERT(b->n_args <= MLC_GRAPH_MAX_EXTERN_ARGS);
  for (int j = 0; j < b->n_args; j++) {
    int64_t n = mlc_gtype_numel(&b->args[j]->type);
    fin[j] = mlc_xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    store_doubles(MLC_FLOAT32, in[j], fin[j], n);
  }
  int64_t n = mlc_gtype_numel(&b->var->type);
  float *fy = mlc_xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  bool ok = mlc_graph_call_extern(m, b, fin, fy, err);
  if (ok) load_doubles(MLC_FLOAT32, fy, y, n);
  mlc_free(fy);
  for (int j = 0; j < b->n_args; j++) mlc_free(fin[j]);
  return ok;
}

/* The doubles of v: a param's (ins), an earlier binding's (vals) or a
 * constant's, converted into *owned (freed by the caller) . */
static double *value_of(const mlc_gfunc *f, const mlc_gvar *v, double *const *ins,
                        double *const *vals, int before, double **owned) {
  *owned = NULL;
  if (v->kind == MLC_GVAR_CONST) return *owned = doubles_of(NULL, &v->type, v->data);
  for (int k = 0; k < f->n_params; k++)
    if (f->params[k] == v) return ins[k];
  for (int k = 0; k < before; k++)
    if (f->bindings[k].var == v) return vals[k];
  mlc_unreachable();
}

/* Evaluate f with params bound to ins; results into outs[0..n_outputs). */
static bool eval_func(const mlc_gmodule *m, const mlc_gfunc *f, double *const *ins,
                      double *const *outs, mlc_error *err) {
  double **vals = mlc_xmalloc(sizeof(double *) * (size_t)(f->n_bindings + 1));
  bool ok = true;
  for (int i = 0; i < f->n_bindings && ok; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    double *in[MLC_GRAPH_MAX_ARGS], *owned[MLC_GRAPH_MAX_ARGS];
    MLC_ASSERT(b->n_args <= MLC_GRAPH_MAX_ARGS);
    for (int j = 0; j < b->n_args; j++) in[j] = value_of(f, b->args[j], ins, vals, i, &owned[j]);
    vals[i] = get_doubles(NULL, mlc_gtype_numel(&b->var->type));
    switch (b->kind) {
    case MLC_GCALL_OP: ref_op(NULL, b, in, vals[i]); break;
    case MLC_GCALL_FUNC: ok = eval_func(m, b->callee, in, &vals[i], err); break;
    case MLC_GCALL_EXTERN: ok = call_extern(m, b, in, vals[i], err); break;
    case MLC_GCALL_TIR:
      ok = mlc_error_set(err, "reference: %s is already lowered (use the graph before lower)",
                         b->var->name);
      break;
    }
    for (int j = 0; j < b->n_args; j++) mlc_free(owned[j]);
  }
  for (int i = 0; i < f->n_outputs && ok; i++) {
    const mlc_gvar *v = f->outputs[i];
    double *owned;
    const double *src = value_of(f, v, ins, vals, f->n_bindings, &owned);
    memcpy(outs[i], src, sizeof(double) * (size_t)mlc_gtype_numel(&v->type));
    mlc_free(owned);
  }
  for (int i = 0; i < f->n_bindings; i++) mlc_free(vals[i]);
  mlc_free(vals);
  return ok;
}

bool mlc_graph_reference(const mlc_gmodule *m, mlc_array *const *inputs,
                         mlc_array *const *outputs, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  double *ins[MLC_GRAPH_MAX_ARGS], *outs[MLC_GRAPH_MAX_ARGS];
  if (f->n_params > MLC_GRAPH_MAX_ARGS || f->n_outputs > MLC_GRAPH_MAX_ARGS)
    return mlc_error_set(err, "reference: more than %d inputs or outputs", MLC_GRAPH_MAX_ARGS);
  for (int i = 0; i < f->n_params; i++) {
    const mlc_gtype *t = &f->params[i]->type;
    if (inputs[i]->dtype != t->dtype)
      return mlc_error_set(err, "reference: input %s is %s, the model takes %s", f->params[i]->name,
                           mlc_dtype_name(inputs[i]->dtype), mlc_dtype_name(t->dtype));
    ins[i] = doubles_of(NULL, t, inputs[i]->data);
  }
  for (int i = 0; i < f->n_outputs; i++) outs[i] = get_doubles(NULL, mlc_gtype_numel(&f->outputs[i]->type));
  bool ok = eval_func(m, f, ins, outs, err);
  for (int i = 0; i < f->n_outputs; i++) {
    const mlc_gtype *t = &f->outputs[i]->type;
    if (ok) store_doubles(t->dtype, outs[i], outputs[i]->data, mlc_gtype_numel(t));
    mlc_free(outs[i]);
  }
  for (int i = 0; i < f->n_params; i++) mlc_free(ins[i]);
  return ok;
}
