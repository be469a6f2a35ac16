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

static void ref_elemwise(mlc_gop op, int n, float *const *in, const mlc_gtype *ts,
                         const mlc_gtype *out, float *y) {
  int64_t idx[MLC_GRAPH_MAX_DIMS];
  for (int64_t i = 0; i < mlc_gtype_numel(out); i++) {
    unravel(out, i, idx);
    double v[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) v[k] = in[k][bcast_index(&ts[k], out, idx)];
    switch (op) {
    case MLC_GOP_ADD: y[i] = (float)(v[0] + v[1]); break;
    case MLC_GOP_MULTIPLY: y[i] = (float)(v[0] * v[1]); break;
    case MLC_GOP_EWISE_FMA: y[i] = (float)(v[0] * v[1] + v[2]); break;
    case MLC_GOP_RELU: y[i] = v[0] > 0 ? (float)v[0] : 0.0f; break;
    case MLC_GOP_GELU: y[i] = (float)(0.5 * v[0] * (1 + erf(v[0] / sqrt(2.0)))); break;
    case MLC_GOP_MATMUL:
    case MLC_GOP_DENSE:
    case MLC_GOP_SOFTMAX:
    case MLC_GOP_LAYERNORM:
    case MLC_GOP_CONV2D:
    case MLC_GOP_MAX_POOL2D:
    case MLC_GOP_RESHAPE:
    case MLC_GOP_FLATTEN:
    case MLC_GOP_TRANSPOSE: mlc_unreachable();
    }
  }
}

static void ref_matmul(bool dense, const mlc_gtype *xt, const float *x, const float *w,
                       const mlc_gtype *out, float *y) {
  int b = out->ndim - 2;
  int64_t B = b ? out->shape[0] : 1, M = out->shape[b], N = out->shape[b + 1];
  int64_t K = xt->shape[b + 1];
  for (int64_t p = 0; p < B; p++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += (double)x[(p * M + i) * K + k] *
                 (dense ? w[j * K + k] : w[(p * K + k) * N + j]);
        y[(p * M + i) * N + j] = (float)acc;
      }
}

/* Rows are everything but the last axis. */
static void rows_cols(const mlc_gtype *t, int64_t *R, int64_t *C) {
  *C = t->shape[t->ndim - 1];
  *R = mlc_gtype_numel(t) / *C;
}

static void ref_softmax(const mlc_gtype *t, const float *x, float *y) {
  int64_t R, C;
  rows_cols(t, &R, &C);
  for (int64_t i = 0; i < R; i++) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < C; j++) mx = fmax(mx, x[i * C + j]);
    for (int64_t j = 0; j < C; j++) sum += exp(x[i * C + j] - mx);
    for (int64_t j = 0; j < C; j++) y[i * C + j] = (float)(exp(x[i * C + j] - mx) / sum);
  }
}

static void ref_layernorm(const mlc_gtype *t, const float *x, const float *g, const float *b,
                          double eps, float *y) {
  int64_t R, C;
  rows_cols(t, &R, &C);
  for (int64_t i = 0; i < R; i++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < C; j++) mean += x[i * C + j];
    mean /= (double)C;
    for (int64_t j = 0; j < C; j++) var += (x[i * C + j] - mean) * (x[i * C + j] - mean);
    var /= (double)C;
    for (int64_t j = 0; j < C; j++)
      y[i * C + j] = (float)((x[i * C + j] - mean) / sqrt(var + eps) * g[j] + b[j]);
  }
}

/* conv2d (w given) or max_pool2d (w NULL) over NCHW. */
static void ref_window(const mlc_gattrs *at, const mlc_gtype *xt, const float *x,
                       const mlc_gtype *wt, const float *w, const mlc_gtype *out, float *y) {
  int64_t N = out->shape[0], K = out->shape[1], OH = out->shape[2], OW = out->shape[3];
  int64_t C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
  int64_t R = w ? wt->shape[2] : at->pool, S = w ? wt->shape[3] : at->pool;
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = w ? 0 : -FLT_MAX;
          for (int64_t c = 0; c < (w ? C : 1); c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t s = 0; s < S; s++) {
                int64_t ih = oh * at->stride + r - at->padding;
                int64_t iw = ow * at->stride + s - at->padding;
                bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                int64_t ch = w ? c : k;
                double v = in ? x[((n * C + ch) * H + ih) * W + iw] : (w ? 0 : -FLT_MAX);
                if (w) acc += v * w[((k * C + c) * R + r) * S + s];
                else acc = fmax(acc, v);
              }
          y[((n * K + k) * OH + oh) * OW + ow] = (float)acc;
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

void mlc_graph_ref_op(const mlc_gbinding *b, float *const *in, float *y) {
  mlc_gtype ts[8];
  for (int i = 0; i < b->n_args; i++) ts[i] = b->args[i]->type;
  const mlc_gtype *out = &b->var->type;
  switch (b->op) {
  case MLC_GOP_ADD:
  case MLC_GOP_MULTIPLY:
  case MLC_GOP_EWISE_FMA:
  case MLC_GOP_RELU:
  case MLC_GOP_GELU: ref_elemwise(b->op, b->n_args, in, ts, out, y); return;
  case MLC_GOP_MATMUL:
  case MLC_GOP_DENSE: ref_matmul(b->op == MLC_GOP_DENSE, &ts[0], in[0], in[1], out, y); return;
  case MLC_GOP_SOFTMAX: ref_softmax(out, in[0], y); return;
  case MLC_GOP_LAYERNORM: ref_layernorm(out, in[0], in[1], in[2], b->attrs.eps, y); return;
  case MLC_GOP_CONV2D: ref_window(&b->attrs, &ts[0], in[0], &ts[1], in[1], out, y); return;
  case MLC_GOP_MAX_POOL2D: ref_window(&b->attrs, &ts[0], in[0], NULL, NULL, out, y); return;
  case MLC_GOP_RESHAPE:
  case MLC_GOP_FLATTEN: memcpy(y, in[0], sizeof(float) * (size_t)mlc_gtype_numel(out)); return;
  case MLC_GOP_TRANSPOSE: ref_transpose(&b->attrs, &ts[0], in[0], out, y); return;
  }
  mlc_unreachable();
}

/* Evaluate f with params bound to ins; results into outs[0..n_outputs). */
static bool eval_func(const mlc_gfunc *f, float *const *ins, float *const *outs, mlc_error *err) {
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
    case MLC_GCALL_FUNC: ok = eval_func(b->callee, in, &vals[i], err); break;
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
  return eval_func(f, ins, outs, err);
}
