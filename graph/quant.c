/* The quantize pass: a dense layer (dense, or a matmul by a constant
 * [K, N] weight) or a convolution over dequantized 8-bit activations (int8
 * ones on their uint8 twin) and dequantized int8 constant weights (a QDQ
 * model's QGemm / QLinearMatMul / QLinearConv) computed on the integers, as
 * ONNX Runtime computes it:
 *
 *   acc = qdense(x, W packed [N/16, K/4, 16, 4])      sum of x * W, int32
 *   acc = acc - zx * sum_k W[j, k]                    the zero point's share
 *   y   = dequantize(acc, sx * sw[j], 0) (+ bias)     float32 again
 *
 * The products are exact where the float32 sums of dequantized values
 * round; the result then differs from the plain C reference (which
 * computes the model as written) at quantization boundaries only, within
 * what a quantized model's check allows (mlc_graph_is_quantized). Layers
 * of other forms (activations with a scale per channel, a weight zero
 * point, N not a multiple of 16 or K of 4) stay as they are. And a value
 * quantized again with the scale and zero point it was dequantized with
 * is the quantized value. */
#include "graph/graph_impl.h"

#include <string.h>

/* The op binding of f defining v when it is a call of op, or NULL. */
static const mlc_gbinding *def_of(const mlc_gfunc *f, const mlc_guses *u, const mlc_gvar *v, mlc_gop op) {
  int d;
  if (v->kind != MLC_GVAR_BOUND || !mlc_gmap_get(&u->def, v, &d)) return NULL;
  const mlc_gbinding *b = &f->bindings[d];
  return b->kind == MLC_GCALL_OP && b->op == op ? b : NULL;
}

static bool is_const(const mlc_gvar *v, mlc_dtype t) { return v->kind == MLC_GVAR_CONST && v->type.dtype == t; }

/* Two constants of one value. */
static bool same_const(const mlc_gvar *a, const mlc_gvar *b) {
  return a == b || (a->kind == MLC_GVAR_CONST && b->kind == MLC_GVAR_CONST && mlc_gtype_equal(&a->type, &b->type) &&
                    memcmp(a->data, b->data, (size_t)mlc_gtype_bytes(&a->type)) == 0);
}

/* Dequantized activations: x's 8-bit values q (through a reshape to x's
 * shape: *reshape, else NULL), one scale and zero point. int8 ones (ONNX
 * Runtime's default) are computed on their uint8 twin, each value 128
 * more, with the zero point 128 more: the micro-kernels take u8 x s8. */
typedef struct activations {
  mlc_gvar *q;
  const mlc_gbinding *reshape;
  float scale;
  int zero;
  bool is_signed; /* q is int8 */
} activations;

static bool find_activations(const mlc_gfunc *f, const mlc_guses *u, mlc_gvar *x, activations *out) {
  out->reshape = def_of(f, u, x, MLC_GOP_RESHAPE);
  const mlc_gbinding *d = def_of(f, u, out->reshape ? out->reshape->args[0] : x, MLC_GOP_DEQUANTIZE);
  if (!d || !is_const(d->args[1], MLC_FLOAT32) || mlc_gtype_numel(&d->args[1]->type) != 1 ||
      mlc_gtype_numel(&d->args[2]->type) != 1)
    return false;
  out->q = d->args[0];
  out->scale = *(const float *)d->args[1]->data;
  out->is_signed = d->args[0]->type.dtype == MLC_INT8;
  if (out->is_signed && is_const(d->args[2], MLC_INT8)) out->zero = *(const int8_t *)d->args[2]->data + 128;
  else if (!out->is_signed && is_const(d->args[2], MLC_UINT8)) out->zero = *(const uint8_t *)d->args[2]->data;
  else return false;
  return true;
}

/* Dequantized constant int8 weights, W[j, k] = w[j * sj + k * sk] with a
 * zero point of 0 and one scale, or one per output column j. */
typedef struct weights {
  const int8_t *w;
  int64_t N, K, sj, sk;
  const float *scale;
  bool per_column;
} weights;

/* kn: a [K, N] weight (a matmul's); else [N, K] (a dense layer's) or a
 * convolution's [N, C, R, S] read as [N, C * R * S]. */
static bool find_weights(const mlc_gfunc *f, const mlc_guses *u, const mlc_gvar *v, bool kn, weights *out) {
  const mlc_gbinding *d = def_of(f, u, v, MLC_GOP_DEQUANTIZE);
  int nd = d ? d->args[0]->type.ndim : 0;
  if (!d || !is_const(d->args[0], MLC_INT8) || (nd != 2 && (kn || nd != 4)) || !is_const(d->args[1], MLC_FLOAT32) ||
      !is_const(d->args[2], MLC_INT8))
    return false;
  const int8_t *z = d->args[2]->data;
  for (int64_t i = 0; i < mlc_gtype_numel(&d->args[2]->type); i++)
    if (z[i] != 0) return false;
  const int64_t *s = d->args[0]->type.shape;
  int64_t rest = mlc_gtype_numel(&d->args[0]->type) / s[0];
  *out = (weights){d->args[0]->data, kn ? s[1] : s[0], kn ? s[0] : rest, kn ? 1 : rest, kn ? s[1] : 1,
                   d->args[1]->data, mlc_gtype_numel(&d->args[1]->type) != 1};
  /* per column: [N] along a [K, N] weight's last axis, [N, 1(, 1, 1)] along
   * the first of the others */
  const mlc_gtype *st = &d->args[1]->type;
  if (out->per_column && (mlc_gtype_numel(st) != out->N || st->shape[st->ndim - 1] != (kn ? out->N : 1)))
    return false;
  return out->N % 16 == 0 && out->K % 4 == 0;
}

typedef struct quant {
  mlc_gmodule *m;
  mlc_gmap names; /* the vars' names, for new ones */
  mlc_gmap twins; /* int8 activations -> index in twin of their uint8 twin */
  MLC_VEC(mlc_gvar *) twin;
  MLC_VEC(mlc_gbinding) out;
} quant;

static mlc_gvar *new_var(quant *Q, const char *base, const mlc_gtype *t) {
  const char *s = base;
  for (int k = 1; mlc_gmap_get(&Q->names, s, NULL); k++) s = mlc_arena_printf(Q->m->arena, "%s%d", base, k);
  mlc_gmap_put(&Q->names, s, 1);
  return mlc_gvar_new(Q->m, s, MLC_GVAR_BOUND, t);
}

/* Appends var = op(args) (its attrs at, or the op's defaults). */
static mlc_gvar *bind(quant *Q, mlc_gvar *var, mlc_gop op, const mlc_gattrs *at, int n, mlc_gvar **args) {
  mlc_gbinding b = {.var = var, .kind = MLC_GCALL_OP, .op = op, .n_args = n};
  if (at) b.attrs = *at;
  else mlc_gattrs_init(op, &b.attrs);
  b.args = mlc_gvars_dup(Q->m, n, args);
  MLC_VEC_APUSH(Q->m->arena, Q->out, b);
  return var;
}

/* The constant weights packed [N/16, K/4, 16, 4]. */
static mlc_gvar *packed_weights(quant *Q, const char *base, const weights *w) {
  mlc_gtype t = {MLC_INT8, 4, {w->N / 16, w->K / 4, 16, 4}};
  mlc_gvar *p = mlc_graph_const_new(Q->m, mlc_arena_printf(Q->m->arena, "%s_packed", base), &t);
  int8_t *d = p->data;
  for (int64_t j = 0; j < w->N; j++)
    for (int64_t k = 0; k < w->K; k++)
      d[mlc_qdense_packed_at(j, k, w->K)] = w->w[j * w->sj + k * w->sk];
  return p;
}

/* zx * sum_k W[j, k] per column (int32 [N]). */
static mlc_gvar *zero_share(quant *Q, const char *base, const weights *w, int zx) {
  mlc_gtype t = {MLC_INT32, 1, {w->N}};
  mlc_gvar *c = mlc_graph_const_new(Q->m, mlc_arena_printf(Q->m->arena, "%s_zero_share", base), &t);
  for (int64_t j = 0; j < w->N; j++) {
    int32_t sum = 0;
    for (int64_t k = 0; k < w->K; k++) sum += w->w[j * w->sj + k * w->sk];
    ((int32_t *)c->data)[j] = zx * sum;
  }
  return c;
}

/* sx * sw[j] in float32 (one value for a per-tensor weight scale). */
static mlc_gvar *acc_scale(quant *Q, const char *base, const weights *w, float sx) {
  int64_t n = w->per_column ? w->N : 1;
  mlc_gtype t = {MLC_FLOAT32, 1, {n}};
  mlc_gvar *c = mlc_graph_const_new(Q->m, mlc_arena_printf(Q->m->arena, "%s_acc_scale", base), &t);
  for (int64_t j = 0; j < n; j++) ((float *)c->data)[j] = sx * w->scale[j];
  return c;
}

/* The activations' uint8 values in the shape b reads them (a reshape of
 * them where b's operand is a reshape of the dequantized values). */
static mlc_gvar *activation_values(quant *Q, const mlc_gbinding *b, const activations *x) {
  mlc_gvar *q = x->q;
  int k;
  if (x->is_signed && mlc_gmap_get(&Q->twins, x->q, &k)) {
    q = Q->twin.data[k];
  } else if (x->is_signed) { /* the uint8 twin, made once: uint8(int32(q) + 128) */
    mlc_gmodule *m = Q->m;
    mlc_gtype t = q->type, ct = {MLC_INT32, 1, {1}};
    t.dtype = MLC_INT32;
    mlc_gattrs to;
    mlc_gattrs_init(MLC_GOP_ASTYPE, &to);
    to.to = MLC_INT32;
    mlc_gvar *w = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_i32", q->name), &t), MLC_GOP_ASTYPE, &to, 1, &q);
    mlc_gvar *c = mlc_graph_const_new(m, mlc_arena_printf(m->arena, "%s_128", q->name), &ct);
    *(int32_t *)c->data = 128;
    w = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_shifted", q->name), &t), MLC_GOP_ADD, NULL, 2,
             (mlc_gvar *[]){w, c});
    t.dtype = to.to = MLC_UINT8;
    mlc_gvar *twin = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_u8", q->name), &t), MLC_GOP_ASTYPE, &to, 1, &w);
    mlc_gmap_put(&Q->twins, x->q, Q->twin.len);
    MLC_VEC_APUSH(m->arena, Q->twin, twin);
    q = twin;
  }
  if (!x->reshape) return q;
  mlc_gtype t = b->args[0]->type;
  t.dtype = MLC_UINT8;
  return bind(Q, new_var(Q, mlc_arena_printf(Q->m->arena, "%s_x", b->var->name), &t), MLC_GOP_RESHAPE,
              &x->reshape->attrs, 1, (mlc_gvar *[]){q});
}

/* The float [rows, N] result of rows of uint8 values xq times the weights:
 * qdense, the zero point's share, dequantized, plus bias (NULL: none),
 * into var (NULL: a new one). */
static mlc_gvar *integer_product(quant *Q, const char *base, mlc_gvar *xq, const activations *x, const weights *w,
                                 mlc_gvar *bias, mlc_gvar *var) {
  mlc_gmodule *m = Q->m;
  mlc_gtype it = {MLC_INT32, 2, {xq->type.shape[0], w->N}}, ft = it;
  ft.dtype = MLC_FLOAT32;
  mlc_gvar *acc = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_acc", base), &it), MLC_GOP_QDENSE, NULL, 2,
                       (mlc_gvar *[]){xq, packed_weights(Q, base, w)});
  if (x->zero)
    acc = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_acc_zero", base), &it), MLC_GOP_SUBTRACT, NULL, 2,
               (mlc_gvar *[]){acc, zero_share(Q, base, w, x->zero)});
  mlc_gtype zt = {MLC_INT32, 1, {1}};
  mlc_gvar *z = mlc_graph_const_new(m, mlc_arena_printf(m->arena, "%s_acc_zero_point", base), &zt);
  *(int32_t *)z->data = 0;
  mlc_gvar *y = bias || !var ? new_var(Q, mlc_arena_printf(m->arena, "%s_nobias", base), &ft) : var;
  bind(Q, y, MLC_GOP_DEQUANTIZE, NULL, 3, (mlc_gvar *[]){acc, acc_scale(Q, base, w, x->scale), z});
  if (!bias) return y;
  return bind(Q, var ? var : new_var(Q, mlc_arena_printf(m->arena, "%s_bias", base), &ft), MLC_GOP_ADD, NULL, 2,
              (mlc_gvar *[]){y, bias});
}

/* b (a dense or matmul of f) on the integers when it has that form. */
static bool rewrite_dense(quant *Q, const mlc_gfunc *f, const mlc_guses *u, const mlc_gbinding *b) {
  bool dense = b->op == MLC_GOP_DENSE;
  activations x;
  weights w;
  if ((b->op != MLC_GOP_MATMUL && !dense) || b->var->type.ndim != 2 || b->args[0]->type.ndim != 2 ||
      !find_activations(f, u, b->args[0], &x) || !find_weights(f, u, b->args[1], !dense, &w))
    return false;
  mlc_gvar *xq = activation_values(Q, b, &x);
  integer_product(Q, b->var->name, xq, &x, &w, dense && b->n_args == 3 ? b->args[2] : NULL, b->var);
  return true;
}

/* b (a conv2d of f, one image, no groups) as a dense layer over its
 * input's windows: the uint8 input padded with its zero point (a
 * dequantized zero), im2col'd to [OH * OW, C * R * S], the integer
 * product with the weight read as [K, C * R * S], then transposed back to
 * [1, K, OH, OW]. */
static bool rewrite_conv(quant *Q, const mlc_gfunc *f, const mlc_guses *u, const mlc_gbinding *b) {
  activations x;
  weights w;
  const mlc_gattrs *at = &b->attrs;
  if (b->op != MLC_GOP_CONV2D) return false;
  const mlc_gtype *xt = &b->args[0]->type, *wt = &b->args[1]->type;
  if (at->groups != 1 || xt->ndim != 4 || xt->shape[0] != 1 || wt->ndim != 4 ||
      !find_activations(f, u, b->args[0], &x) || !find_weights(f, u, b->args[1], false, &w))
    return false;
  mlc_gmodule *m = Q->m;
  const char *base = b->var->name;
  mlc_gvar *xq = activation_values(Q, b, &x);
  mlc_error err;
  mlc_gtype t;
  if (at->pads[0] || at->pads[1] || at->pads[2] || at->pads[3]) {
    mlc_gattrs pa;
    mlc_gattrs_init(MLC_GOP_PAD, &pa);
    pa.n_pads = 4;
    pa.pad_before[2] = at->pads[0], pa.pad_before[3] = at->pads[1];
    pa.pad_after[2] = at->pads[2], pa.pad_after[3] = at->pads[3];
    pa.pad_value = x.zero;
    MLC_ASSERT(mlc_gop_infer(MLC_GOP_PAD, &pa, 1, &xq->type, &t, &err));
    xq = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_pad", base), &t), MLC_GOP_PAD, &pa, 1, &xq);
  }
  mlc_gattrs ia;
  mlc_gattrs_init(MLC_GOP_IM2COL, &ia);
  ia.kernel[0] = wt->shape[2], ia.kernel[1] = wt->shape[3];
  memcpy(ia.strides, at->strides, sizeof ia.strides);
  memcpy(ia.dilations, at->dilations, sizeof ia.dilations);
  /* the padded input's windows: the conv's own output, whose shape it had */
  MLC_ASSERT(mlc_gop_infer(MLC_GOP_IM2COL, &ia, 1, &xq->type, &t, &err));
  mlc_gvar *cols = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_cols", base), &t), MLC_GOP_IM2COL, &ia, 1, &xq);
  mlc_gvar *y = integer_product(Q, base, cols, &x, &w, b->n_args == 3 ? b->args[2] : NULL, NULL);
  mlc_gattrs ta;
  mlc_gattrs_init(MLC_GOP_TRANSPOSE, &ta);
  ta.n_ints = 2, ta.ints[0] = 1, ta.ints[1] = 0;
  mlc_gtype tt = {MLC_FLOAT32, 2, {w.N, t.shape[0]}};
  mlc_gvar *yt = bind(Q, new_var(Q, mlc_arena_printf(m->arena, "%s_t", base), &tt), MLC_GOP_TRANSPOSE, &ta, 1, &y);
  mlc_gattrs ra;
  mlc_gattrs_init(MLC_GOP_RESHAPE, &ra);
  ra.n_ints = 4;
  memcpy(ra.ints, b->var->type.shape, sizeof(int64_t) * 4);
  bind(Q, b->var, MLC_GOP_RESHAPE, &ra, 1, &yt);
  return true;
}

/* b on the integers when it has one of those forms. */
static bool rewrite(quant *Q, const mlc_gfunc *f, const mlc_guses *u, const mlc_gbinding *b) {
  return b->kind == MLC_GCALL_OP && (rewrite_dense(Q, f, u, b) || rewrite_conv(Q, f, u, b));
}

/* quantize(dequantize(q, s, z), s, z) is q: (q - z) * s / s rounds back
 * to q - z (the two roundings are 255 * 2^-23 from it at most). Exporters
 * quantize again around moved data: quantize(reshape(dequantize(q))) is
 * then reshape(q). Each use of the first kind reads q instead; the second
 * becomes the reshape of q. */
static void drop_requantize(mlc_gmodule *m, mlc_gfunc *f, const mlc_guses *u) {
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *b = &f->bindings[i];
    if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_QUANTIZE) continue;
    const mlc_gbinding *r = def_of(f, u, b->args[0], MLC_GOP_RESHAPE);
    const mlc_gbinding *d = def_of(f, u, r ? r->args[0] : b->args[0], MLC_GOP_DEQUANTIZE);
    if (!d || d->args[0]->type.dtype != b->var->type.dtype || !same_const(d->args[1], b->args[1]) ||
        !same_const(d->args[2], b->args[2]))
      continue;
    if (r) {
      b->op = MLC_GOP_RESHAPE;
      b->attrs = r->attrs;
      b->n_args = 1;
      b->args = mlc_gvars_dup(m, 1, &d->args[0]);
    } else if (!mlc_gfunc_is_output(f, b->var)) {
      for (int j = i + 1; j < f->n_bindings; j++)
        for (int k = 0; k < f->bindings[j].n_args; k++)
          if (f->bindings[j].args[k] == b->var) f->bindings[j].args[k] = d->args[0];
    }
  }
}

static void quantize_func(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_arena *a = mlc_arena_new_child(m->arena);
  quant Q = {.m = m, .names = {.a = a, .strings = true}, .twins = {.a = a}};
  for (int i = 0; i < f->n_params; i++) mlc_gmap_put(&Q.names, f->params[i]->name, 1);
  for (int i = 0; i < m->n_consts; i++) mlc_gmap_put(&Q.names, m->consts[i]->name, 1);
  for (int i = 0; i < f->n_bindings; i++) mlc_gmap_put(&Q.names, f->bindings[i].var->name, 1);
  mlc_guses u;
  mlc_guses_init(&u, a, f);
  drop_requantize(m, f, &u);
  bool any = false;
  for (int i = 0; i < f->n_bindings; i++)
    if (rewrite(&Q, f, &u, &f->bindings[i])) any = true;
    else MLC_VEC_APUSH(m->arena, Q.out, f->bindings[i]);
  if (any) {
    f->bindings = Q.out.data;
    f->n_bindings = Q.out.len;
  }
  mlc_gfunc_remove_unused(m, f);
  mlc_arena_free(a);
}

bool mlc_graph_quantize(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) quantize_func(m, m->funcs[i]);
  return mlc_graph_verify(m, err);
}
