/* The plain C reference (graph/ref.c) of the window ops over any spatial
 * rank (conv3d, conv_transpose3d, max_pool3d, avg_pool3d over NCDHW):
 * each output element straight from the definitions in graph.h
 * (mlc_gattrs), in double accumulation, sharing nothing with the
 * lowering. Spatial positions are flat indices over the nsp spatial axes. */
#include "graph/graph_impl.h"

#include <float.h>
#include <math.h>

/* One window op's geometry: spatial extents of x, the output, the window. */
typedef struct window {
  int nsp;
  const mlc_gattrs *at;
  const int64_t *in, *out, *k; /* nsp extents each */
  int64_t n_in, n_out, n_k;    /* their products */
} window;

static int64_t prod(int nsp, const int64_t *e) {
  int64_t p = 1;
  for (int i = 0; i < nsp; i++) p *= e[i];
  return p;
}

static void unravel_sp(int nsp, const int64_t *e, int64_t flat, int64_t *p) {
  for (int i = nsp - 1; i >= 0; i--) {
    p[i] = flat % e[i];
    flat /= e[i];
  }
}

static window window_of(const mlc_gattrs *at, const mlc_gtype *xt, const mlc_gtype *out,
                        const int64_t *k) {
  int nsp = xt->ndim - 2;
  return (window){nsp, at, xt->shape + 2, out->shape + 2, k,
                  prod(nsp, xt->shape + 2), prod(nsp, out->shape + 2), prod(nsp, k)};
}

/* The input position that output position o reads at window position r
 * (o * stride + r * dilation - pad_begin per axis), flat; -1 outside x.
 * *padded: inside x with its end padding (avg pools' count_include_pad). */
static int64_t window_read(const window *w, const int64_t *o, const int64_t *r, bool *padded) {
  int64_t flat = 0;
  bool in = true;
  *padded = true;
  for (int i = 0; i < w->nsp; i++) {
    int64_t p = o[i] * w->at->strides[i] + r[i] * w->at->dilations[i] - w->at->pads[i];
    in &= p >= 0 && p < w->in[i];
    *padded &= p < w->in[i] + w->at->pads[w->nsp + i];
    flat = flat * w->in[i] + p;
  }
  return in ? flat : -1;
}

/* The input position that reaches output position o through window
 * position r in a transposed convolution (o = i * stride + r * dilation -
 * pad_begin), flat; -1 when none. */
static int64_t transposed_read(const window *w, const int64_t *o, const int64_t *r) {
  int64_t flat = 0;
  for (int i = 0; i < w->nsp; i++) {
    int64_t t = o[i] + w->at->pads[i] - r[i] * w->at->dilations[i];
    if (t < 0 || t % w->at->strides[i] || t / w->at->strides[i] >= w->in[i]) return -1;
    flat = flat * w->in[i] + t / w->at->strides[i];
  }
  return flat;
}

/* conv, w [K, C / groups, k...]; transposed conv, w [C, K / groups, k...];
 * bias [K] or NULL. */
static void ref_conv(bool transposed, const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                     const mlc_gtype *wt, const double *wd, const double *bias, const mlc_gtype *out,
                     double *y) {
  window w = window_of(at, xt, out, wt->shape + 2);
  int64_t N = out->shape[0], K = out->shape[1], C = xt->shape[1];
  int64_t Kg = K / at->groups, Cg = C / at->groups;
  int64_t o[MLC_GRAPH_MAX_WINDOW], r[MLC_GRAPH_MAX_WINDOW];
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t op = 0; op < w.n_out; op++) {
        unravel_sp(w.nsp, w.out, op, o);
        double acc = bias ? bias[k] : 0;
        for (int64_t cg = 0; cg < Cg; cg++)
          for (int64_t rp = 0; rp < w.n_k; rp++) {
            unravel_sp(w.nsp, w.k, rp, r);
            bool padded;
            int64_t c = k / Kg * Cg + cg;
            int64_t ip = transposed ? transposed_read(&w, o, r) : window_read(&w, o, r, &padded);
            int64_t wi = transposed ? (c * Kg + k % Kg) * w.n_k + rp : (k * Cg + cg) * w.n_k + rp;
            if (ip >= 0) acc += (double)x[(n * C + c) * w.n_in + ip] * wd[wi];
          }
        y[(n * K + k) * w.n_out + op] = (double)acc;
      }
}

/* max pools: the largest input element inside each window (padding and
 * the part of a window past the input do not count); avg pools: their
 * mean, divided by the elements of the window inside the input (or inside
 * the padded input with count_include_pad). */
static void ref_pool(bool max, const mlc_gattrs *at, const mlc_gtype *xt, const double *x,
                     const mlc_gtype *out, double *y) {
  window w = window_of(at, xt, out, at->kernel);
  int64_t NC = out->shape[0] * out->shape[1];
  int64_t o[MLC_GRAPH_MAX_WINDOW], r[MLC_GRAPH_MAX_WINDOW];
  for (int64_t p = 0; p < NC; p++)
    for (int64_t op = 0; op < w.n_out; op++) {
      unravel_sp(w.nsp, w.out, op, o);
      double m = -FLT_MAX, sum = 0;
      int64_t count = 0;
      for (int64_t rp = 0; rp < w.n_k; rp++) {
        unravel_sp(w.nsp, w.k, rp, r);
        bool padded;
        int64_t ip = window_read(&w, o, r, &padded);
        if (ip >= 0) m = fmax(m, x[p * w.n_in + ip]), sum += x[p * w.n_in + ip];
        count += at->count_include_pad ? padded : ip >= 0;
      }
      y[p * w.n_out + op] = (double)(max ? m : sum / (double)count);
    }
}

void mlc_graph_ref_window(const mlc_gbinding *b, double *const *in, double *y) {
  const mlc_gtype *xt = &b->args[0]->type, *out = &b->var->type;
  const double *bias = b->n_args == 3 ? in[2] : NULL;
  bool transposed = b->op == MLC_GOP_CONV_TRANSPOSE2D || b->op == MLC_GOP_CONV_TRANSPOSE3D;
  if (transposed || b->op == MLC_GOP_CONV2D || b->op == MLC_GOP_CONV3D)
    ref_conv(transposed, &b->attrs, xt, in[0], &b->args[1]->type, in[1], bias, out, y);
  else
    ref_pool(b->op == MLC_GOP_MAX_POOL2D || b->op == MLC_GOP_MAX_POOL3D, &b->attrs, xt, in[0],
             out, y);
}
