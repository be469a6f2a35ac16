/* A plain C evaluation of the high-level ops (before lowering), in double
 * accumulation: the independent reference the compiled model is checked
 * against. Written straight from the op definitions, sharing nothing with
 * the lowering. */
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
#define PW(name) static double pw_##name(const mlc_gattrs *at __attribute__((unused)), const double *v)

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
PW(thresholded_relu) { return v[0] > at->alpha ? v[0] : 0; }
PW(shrink) { return v[0] < -at->alpha ? v[0] + at->beta : v[0] > at->alpha ? v[0] - at->beta : 0; }

typedef double pw_value(const mlc_gattrs *at, const double *v);

/* NULL for the ops that are not pointwise. */
static pw_value *const pw_values[MLC_GOP_COUNT] = {
#define MLC_GOP_PW(id, name, script, n_in, shape, print, keys) [MLC_GOP_##id] = pw_##name,
#include "graph/ops.def"
};

static void ref_elemwise(mlc_gop op, const mlc_gattrs *at, int n, float *const *in,
                         const mlc_gtype *ts, const mlc_gtype *out, float *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  MLC_ASSERT(pw_values[op]);
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    double v[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) v[k] = in[k][bcast_index(&ts[k], out, idx)];
    y[i] = (float)pw_values[op](at, v);
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
static void ref_matmul(bool dense, const mlc_gtype *xt, const float *x, const mlc_gtype *wt,
                       const float *w, const float *bias, const mlc_gtype *out, float *y) {
  int nb = out->ndim - 2;
  int64_t M = out->shape[nb], N = out->shape[nb + 1], K = xt->shape[xt->ndim - 1];
  mlc_gtype bt = *out;
  bt.ndim = nb;
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  for (int64_t p = 0; p < mlc_gtype_numel(&bt); p++) {
    unravel(&bt, p, idx);
    const float *xp = x + batch_offset(xt, out, idx), *wp = dense ? w : w + batch_offset(wt, out, idx);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = bias ? bias[j] : 0;
        for (int64_t k = 0; k < K; k++)
          acc += (double)xp[i * K + k] * (dense ? wp[j * K + k] : wp[k * N + j]);
        y[(p * M + i) * N + j] = (float)acc;
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

static void ref_softmax(const mlc_gtype *t, int ax, bool log_, const float *x, float *y) {
  int64_t O, L, I;
  split_at(t, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      const float *xp = x + o * L * I + i;
      float *yp = y + o * L * I + i;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < L; j++) mx = fmax(mx, xp[j * I]);
      for (int64_t j = 0; j < L; j++) sum += exp(xp[j * I] - mx);
      for (int64_t j = 0; j < L; j++)
        yp[j * I] = (float)(log_ ? xp[j * I] - mx - log(sum) : exp(xp[j * I] - mx) / sum);
    }
}

/* Normalized over the axes from ax on; b may be NULL. */
static void ref_layernorm(const mlc_gtype *t, int ax, const float *x, const float *g,
                          const float *b, double eps, float *y) {
  int64_t R = 1, C = 1;
  for (int d = 0; d < t->ndim; d++) *(d < ax ? &R : &C) *= t->shape[d];
  for (int64_t i = 0; i < R; i++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < C; j++) mean += x[i * C + j];
    mean /= (double)C;
    for (int64_t j = 0; j < C; j++) var += (x[i * C + j] - mean) * (x[i * C + j] - mean);
    var /= (double)C;
    for (int64_t j = 0; j < C; j++)
      y[i * C + j] = (float)((x[i * C + j] - mean) / sqrt(var + eps) * g[j] + (b ? b[j] : 0));
  }
}

static void ref_batch_norm(const mlc_gtype *t, float *const *in, double eps, float *y) {
  int64_t O, C, I;
  split_at(t, 1, &O, &C, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < I; i++) {
        int64_t k = (o * C + c) * I + i;
        y[k] = (float)((in[0][k] - in[3][c]) / sqrt(in[4][c] + eps) * in[1][c] + in[2][c]);
      }
}

/* conv2d over NCHW, w [K, C / groups, R, S], bias [K] or NULL: each output
 * element as the sum over its window. */
static void ref_conv2d(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                       const mlc_gtype *wt, const float *w, const float *bias,
                       const mlc_gtype *out, float *y) {
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
          y[((n * K + k) * OH + oh) * OW + ow] = (float)acc;
        }
}

/* conv_transpose2d, w [C, K / groups, R, S]: every input element scattered
 * into the outputs its window reaches. */
static void ref_conv_transpose2d(mlc_arena *scratch, const mlc_gattrs *at, const mlc_gtype *xt,
                                 const float *x, const mlc_gtype *wt, const float *w,
                                 const float *bias, const mlc_gtype *out, float *y) {
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
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) y[i] = (float)acc[i];
  put_doubles(scratch, acc);
}

/* avg_pool2d: the mean of each window, divided by the elements of the
 * window inside the input (or inside the padded input). */
static void ref_avg_pool(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                         const mlc_gtype *out, float *y) {
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
        y[(p * OH + oh) * OW + ow] = (float)(sum / (double)n);
      }
}

/* reduce_*: every input element into the output element it reduces to. */
static void ref_reduce(mlc_arena *scratch, mlc_gop op, const bool *red, const mlc_gtype *xt,
                       const float *x, const mlc_gtype *out, float *y) {
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
    y[i] = (float)(op == MLC_GOP_REDUCE_MEAN || op == MLC_GOP_GLOBAL_AVG_POOL2D ? acc[i] / count : acc[i]);
  put_doubles(scratch, acc);
}

/* tril / triu over the last two axes (rows R, columns C). */
static void ref_trilu(bool upper, int64_t k, const mlc_gtype *t, const float *x, float *y) {
  int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
  for (int64_t i = 0; i < mlc_gtype_numel(t); i++) {
    int64_t r = i / C % R, c = i % C;
    y[i] = (upper ? c - r >= k : c - r <= k) ? x[i] : 0;
  }
}

static void ref_cumsum(const mlc_gattrs *at, const mlc_gtype *t, const float *x, float *y) {
  int64_t O, L, I;
  split_at(t, mlc_gop_axis(at->axis, t->ndim), &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++) {
      double acc = 0;
      for (int64_t s = 0; s < L; s++) {
        int64_t l = at->reverse ? L - 1 - s : s, at_l = (o * L + l) * I + i;
        if (at->exclusive) y[at_l] = (float)acc;
        acc += x[at_l];
        if (!at->exclusive) y[at_l] = (float)acc;
      }
    }
}

/* 1 at the first largest element along ax (NaN inputs: unspecified). */
static void ref_hardmax(const mlc_gtype *t, int ax, const float *x, float *y) {
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

static void ref_concat(int n, float *const *in, const mlc_gtype *ts, int ax, const mlc_gtype *out,
                       float *y) {
  int64_t O, L, I, k = 0;
  split_at(out, ax, &O, &L, &I);
  for (int64_t o = 0; o < O; o++)
    for (int i = 0; i < n; i++) {
      int64_t len = ts[i].shape[ax] * I;
      memcpy(y + k, in[i] + o * len, sizeof(float) * (size_t)len);
      k += len;
    }
}

static void ref_slice(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                      const mlc_gtype *out, float *y) {
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
static void ref_pad(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                    const mlc_gtype *out, float *y) {
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
    y[i] = inside ? x[flat] : (float)at->pad_value;
  }
}

/* gather: [outer, n, inner] x, index j of the indices picks row k (an
 * index outside [-n, n) reads row 0, as the kernel does). */
static void ref_gather(int ax, const mlc_gtype *xt, const float *x, const mlc_gtype *it,
                       const float *ind, float *y) {
  int64_t O, n, I, J = mlc_gtype_numel(it);
  split_at(xt, ax, &O, &n, &I);
  for (int64_t o = 0; o < O; o++)
    for (int64_t j = 0; j < J; j++) {
      double v = ind[j];
      int64_t k = v >= (double)-n && v <= (double)(n - 1) ? (int64_t)v : 0;
      if (k < 0) k += n;
      memcpy(y + (o * J + j) * I, x + (o * n + k) * I, sizeof(float) * (size_t)I);
    }
}

/* max_pool2d: the largest input element inside each window (padding and
 * the part of a window past the input do not count). */
static void ref_max_pool(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                         const mlc_gtype *out, float *y) {
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
        y[(p * OH + oh) * OW + ow] = (float)m;
      }
}

static void ref_transpose(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                          const mlc_gtype *out, float *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS], src[MLC_GRAPH_MAX_DIMS];
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    for (int d = 0; d < out->ndim; d++) src[at->n_ints ? at->ints[d] : out->ndim - 1 - d] = idx[d];
    int64_t flat = 0;
    for (int d = 0; d < xt->ndim; d++) flat = flat * xt->shape[d] + src[d];
    y[i] = x[flat];
  }
}

/* ---- NCHWc values (the layout pass) ---------------------------------------------- */

static float *get_floats(mlc_arena *scratch, int64_t n) {
  size_t bytes = sizeof(float) * (size_t)(n > 0 ? n : 1);
  return scratch ? mlc_arena_alloc(scratch, bytes) : mlc_xmalloc(bytes);
}

/* blocked [N, C/c, H, W, c] and its NCHW form: one into the other. */
static void nchwc_copy(const mlc_gtype *blocked, float *nchwc, float *nchw, bool to_nchw) {
  int64_t N = blocked->shape[0], CB = blocked->shape[1], HW = blocked->shape[2] * blocked->shape[3];
  int64_t c = blocked->shape[4];
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < CB * c; ch++)
      for (int64_t p = 0; p < HW; p++) {
        float *b = &nchwc[((n * CB + ch / c) * HW + p) * c + ch % c];
        float *u = &nchw[(n * CB * c + ch) * HW + p];
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
static void ref_blocked(mlc_arena *scratch, const mlc_gbinding *b, float *const *in,
                        const mlc_gtype *ts, float *y) {
  mlc_gtype xt = ts[0].ndim == 5 ? nchw_of(&ts[0]) : ts[0];
  mlc_gtype yt = b->var->type.ndim == 5 ? nchw_of(&b->var->type) : b->var->type;
  float *x = in[0], *y4 = y;
  if (ts[0].ndim == 5) nchwc_copy(&ts[0], in[0], x = get_floats(scratch, mlc_gtype_numel(&xt)), true);
  if (b->var->type.ndim == 5) y4 = get_floats(scratch, mlc_gtype_numel(&yt));
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
static void ref_dense_packed(mlc_arena *scratch, const mlc_gbinding *b, float *const *in,
                             const mlc_gtype *ts, float *y) {
  int64_t NB = ts[1].shape[0], K = ts[1].shape[1], n = ts[1].shape[2];
  mlc_gtype wt = {MLC_FLOAT32, 2, {NB * n, K}};
  float *w = get_floats(scratch, NB * n * K);
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
  float *const *in;
  const mlc_gtype *ts;
  const mlc_gtype *out;
  float *y;
} ref_call;

typedef void reference(const ref_call *c);

static const float *bias_of(const ref_call *c) { return c->b->n_args == 3 ? c->in[2] : NULL; }

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

static void ref_op_slice(const ref_call *c) { ref_slice(c->at, &c->ts[0], c->in[0], c->out, c->y); }

static void ref_op_pad(const ref_call *c) { ref_pad(c->at, &c->ts[0], c->in[0], c->out, c->y); }

static void ref_op_gather(const ref_call *c) {
  ref_gather(mlc_gop_axis(c->at->axis, c->ts[0].ndim), &c->ts[0], c->in[0], &c->ts[1], c->in[1],
             c->y);
}

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
  memcpy(c->y, c->in[0], sizeof(float) * (size_t)mlc_gtype_numel(c->out));
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

static reference *const references[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, impl, print, keys) \
  [MLC_GOP_##id] = ref_op_##impl,
#include "graph/ops.def"
};
_Static_assert(sizeof(references) / sizeof(references[0]) == MLC_GOP_COUNT,
               "reference table out of date");

void mlc_graph_ref_op(const mlc_gbinding *b, float *const *in, float *y) {
  mlc_graph_ref_op_in(NULL, b, in, y);
}

void mlc_graph_ref_op_in(mlc_arena *scratch, const mlc_gbinding *b, float *const *in, float *y) {
  mlc_gtype ts[MLC_GRAPH_MAX_ARGS];
  for (int i = 0; i < b->n_args; i++) ts[i] = b->args[i]->type;
  ref_call c = {scratch, b, b->op, &b->attrs, in, ts, &b->var->type, y};
  references[b->op](&c);
}

/* Evaluate f with params bound to ins; results into outs[0..n_outputs). */
static bool eval_func(const mlc_gmodule *m, const mlc_gfunc *f, float *const *ins,
                      float *const *outs, mlc_error *err) {
  float **vals = mlc_xmalloc(sizeof(float *) * (size_t)(f->n_bindings + 1));
  bool ok = true;
  for (int i = 0; i < f->n_bindings && ok; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    float *in[64];
    MLC_ASSERT(b->n_args <= 64);
    for (int j = 0; j < b->n_args; j++) {
      const mlc_gvar *v = b->args[j];
      in[j] = v->kind == MLC_GVAR_CONST ? v->data : NULL;
      for (int k = 0; k < f->n_params && !in[j]; k++)
        if (f->params[k] == v) in[j] = ins[k];
      for (int k = 0; k < i && !in[j]; k++)
        if (f->bindings[k].var == v) in[j] = vals[k];
      MLC_ASSERT(in[j]);
    }
    vals[i] = mlc_xmalloc(sizeof(float) * (size_t)mlc_gtype_numel(&b->var->type));
    switch (b->kind) {
    case MLC_GCALL_OP: mlc_graph_ref_op(b, in, vals[i]); break;
    case MLC_GCALL_FUNC: ok = eval_func(m, b->callee, in, &vals[i], err); break;
    case MLC_GCALL_EXTERN: ok = mlc_graph_call_extern(m, b, in, vals[i], err); break;
    case MLC_GCALL_TIR:
      ok = mlc_error_set(err, "reference: %s is already lowered (use the graph before lower)",
                         b->var->name);
      break;
    }
  }
  for (int i = 0; i < f->n_outputs && ok; i++) {
    const mlc_gvar *v = f->outputs[i];
    const float *src = v->kind == MLC_GVAR_CONST ? v->data : NULL;
    for (int k = 0; k < f->n_params && !src; k++)
      if (f->params[k] == v) src = ins[k];
    for (int k = 0; k < f->n_bindings && !src; k++)
      if (f->bindings[k].var == v) src = vals[k];
    memcpy(outs[i], src, sizeof(float) * (size_t)mlc_gtype_numel(&v->type));
  }
  for (int i = 0; i < f->n_bindings; i++) mlc_free(vals[i]);
  mlc_free(vals);
  return ok;
}

bool mlc_graph_reference(const mlc_gmodule *m, mlc_array *const *inputs,
                         mlc_array *const *outputs, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  float *ins[64], *outs[64];
  if (f->n_params > 64 || f->n_outputs > 64) return mlc_error_set(err, "too many inputs");
  for (int i = 0; i < f->n_params; i++) ins[i] = inputs[i]->data;
  for (int i = 0; i < f->n_outputs; i++) outs[i] = outputs[i]->data;
  return eval_func(m, f, ins, outs, err);
}
