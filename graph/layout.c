/* The layout pass: conv2d and dense weights packed once (pack_conv_weight,
 * pack_dense_weight, at the end of this file), then NCHWc values between
 * blocked convs.
 *
 * A conv2d over a packed weight (pack_conv_weight below) computes its
 * result blocked, [N, K/k, OH, OW, k]. Converting it back to NCHW after
 * every conv and blocking it again in the next one costs two passes over
 * each activation; instead the blocked value is passed on directly:
 *
 *   - a packed conv2d reads the blocked form of its input when there is
 *     one with the block its weight takes (the next conv of a chain, the
 *     residual branch);
 *   - max_pool2d pools each channel block in place;
 *   - global_avg_pool2d becomes a mean over H and W of the blocks, each
 *     vector of c channels summed across the plane (its NCHW result is
 *     the same bytes as the blocked one, [N, C/c, 1, 1, c]);
 *   - an elementwise op whose operands are blocked values of its own shape,
 *     scalars and per-channel constants (packed once) runs on the blocks:
 *     ReLU, clip, a bias add, the residual add.
 * Each NCHW value keeps its binding as `v = unpack_nchwc(v_nchwc)`, so
 * anything that reads NCHW (the graph's outputs, flatten, global pooling,
 * ops without a blocked form) is unchanged; unpacks that nothing reads are
 * removed afterwards (mlc_graph_remove_unused), so conversions remain
 * only at the edges of the blocked region. The fuse pass fuses an unpack
 * after its producer like an elementwise op. */
#include "graph/graph_impl.h"
#include "tasks/tasks.h"

#include <stdio.h>
#include <string.h>

typedef struct layout {
  mlc_gmodule *m;
  mlc_gmap names;   /* var names in use in the function (strings) */
  mlc_gmap twin;    /* NCHW var -> index into blocked: its NCHWc form */
  MLC_VEC(mlc_gvar *) blocked;
  MLC_VEC(mlc_gbinding) out; /* the new bindings */
} layout;

static mlc_gvar *twin_of(const layout *L, const mlc_gvar *v) {
  int i;
  return mlc_gmap_get(&L->twin, v, &i) ? L->blocked.data[i] : NULL;
}

/* "<v>_nchwc", or with a number when taken. */
static const char *blocked_name(layout *L, const char *base) {
  const char *s = mlc_arena_printf(L->m->arena, "%s_nchwc", base);
  for (int k = 1; mlc_gmap_get(&L->names, s, NULL); k++)
    s = mlc_arena_printf(L->m->arena, "%s_nchwc%d", base, k);
  mlc_gmap_put(&L->names, s, 1);
  return s;
}

/* Emits b over args (blocked operands) defining a new NCHWc var, then
 * `b->var = unpack_nchwc(it)`; b->var's blocked form is then the new var. */
static void emit_blocked(layout *L, const mlc_gbinding *b, mlc_gvar **args) {
  mlc_gtype ts[MLC_GRAPH_MAX_ARGS], t;
  for (int i = 0; i < b->n_args; i++) ts[i] = args[i]->type;
  mlc_error err;
  MLC_ASSERT(mlc_gop_infer(b->op, &b->attrs, b->n_args, ts, &t, &err) && t.ndim == 5);
  mlc_gvar *bv = mlc_gvar_new(L->m, blocked_name(L, b->var->name), MLC_GVAR_BOUND, &t);
  mlc_gbinding nb = *b;
  nb.var = bv;
  nb.args = mlc_gvars_dup(L->m, b->n_args, args);
  MLC_VEC_APUSH(L->m->arena, L->out, nb);
  mlc_gbinding u = {.var = b->var, .kind = MLC_GCALL_OP, .op = MLC_GOP_UNPACK_NCHWC, .n_args = 1};
  mlc_gattrs_init(MLC_GOP_UNPACK_NCHWC, &u.attrs);
  u.args = mlc_gvars_dup(L->m, 1, &bv);
  MLC_VEC_APUSH(L->m->arena, L->out, u);
  mlc_gmap_put(&L->twin, b->var, L->blocked.len);
  MLC_VEC_APUSH(L->m->arena, L->blocked, bv);
}

/* The block a packed conv2d reads its input in: the weight's input block
 * (depthwise: its channel block). */
static int64_t conv_in_block(const mlc_gbinding *b) {
  const mlc_gtype *w = &b->args[1]->type;
  return b->attrs.groups > 1 ? w->shape[5] : w->shape[4];
}

/* (one whose var is still NCHW: packed by this pass, not given blocked) */
static bool is_packed_conv(const mlc_gbinding *b) {
  return b->op == MLC_GOP_CONV2D && b->args[1]->type.ndim == 6;
}

/* A constant with one value per channel of a 4-d result (a bias [C, 1, 1]
 * or [1, C, 1, 1]), as numpy broadcasting aligns it. */
static bool per_channel(const mlc_gvar *c, const mlc_gtype *out) {
  if (c->kind != MLC_GVAR_CONST || c->type.ndim < 3 || c->type.ndim > 4) return false;
  for (int d = 0; d < c->type.ndim; d++) {
    int od = d + 4 - c->type.ndim;
    if (c->type.shape[d] != (od == 1 ? out->shape[1] : 1)) return false;
  }
  return true;
}

/* c packed as [1, C/k, 1, 1, k] (broadcast over NCHWc blocks), once per
 * constant. */
static mlc_gvar *packed_channels(layout *L, mlc_gvar *c, int64_t k) {
  mlc_gvar *t = twin_of(L, c);
  if (t && t->type.shape[4] == k) return t;
  int64_t C = mlc_gtype_numel(&c->type);
  mlc_gtype pt = {c->type.dtype, 5, {1, C / k, 1, 1, k}};
  mlc_gvar *p = mlc_graph_const_new(L->m, blocked_name(L, c->name), &pt);
  memcpy(p->data, c->data, (size_t)mlc_gtype_bytes(&c->type)); /* [C] read as [C/k, k] */
  mlc_gmap_put(&L->twin, c, L->blocked.len);
  MLC_VEC_APUSH(L->m->arena, L->blocked, p);
  return p;
}

/* An elementwise op that can run on blocks: its operands are blocked
 * values of its result's shape, in one block size, single elements, or
 * per-channel constants (packed to the block). */
static bool blocked_operands(layout *L, const mlc_gbinding *b, mlc_gvar **args) {
  if (mlc_gop_class_of(b->op) != MLC_GOP_ELEMWISE || b->op == MLC_GOP_BATCH_NORM ||
      b->op == MLC_GOP_UNPACK_NCHWC || b->var->type.ndim != 4)
    return false;
  int64_t block = 0;
  for (int i = 0; i < b->n_args; i++) {
    mlc_gvar *t = twin_of(L, b->args[i]);
    args[i] = b->args[i];
    if (t && mlc_gshape_equal(&b->args[i]->type, &b->var->type)) {
      if (block && t->type.shape[4] != block) return false;
      block = t->type.shape[4];
      args[i] = t;
    } else if (mlc_gtype_numel(&b->args[i]->type) != 1 && !per_channel(b->args[i], &b->var->type)) {
      return false;
    }
  }
  for (int i = 0; block && i < b->n_args; i++)
    if (args[i] == b->args[i] && mlc_gtype_numel(&b->args[i]->type) != 1)
      args[i] = packed_channels(L, b->args[i], block);
  return block != 0;
}

static void layout_binding(layout *L, const mlc_gbinding *b) {
  mlc_gvar *args[MLC_GRAPH_MAX_ARGS];
  if (b->kind == MLC_GCALL_OP && is_packed_conv(b) && b->var->type.ndim == 4) {
    memcpy(args, b->args, sizeof *args * (size_t)b->n_args);
    mlc_gvar *t = twin_of(L, b->args[0]);
    if (t && t->type.shape[4] == conv_in_block(b)) args[0] = t;
    emit_blocked(L, b, args);
    return;
  }
  if (b->kind == MLC_GCALL_OP && b->op == MLC_GOP_MAX_POOL2D && twin_of(L, b->args[0])) {
    args[0] = twin_of(L, b->args[0]);
    emit_blocked(L, b, args);
    return;
  }
  if (b->kind == MLC_GCALL_OP && b->op == MLC_GOP_GLOBAL_AVG_POOL2D && twin_of(L, b->args[0])) {
    mlc_gbinding mean = *b;
    mean.op = MLC_GOP_REDUCE_MEAN;
    mlc_gattrs_init(MLC_GOP_REDUCE_MEAN, &mean.attrs);
    mean.attrs.n_ints = 2, mean.attrs.ints[0] = 2, mean.attrs.ints[1] = 3;
    mean.attrs.keepdims = true;
    args[0] = twin_of(L, b->args[0]);
    emit_blocked(L, &mean, args);
    return;
  }
  if (b->kind == MLC_GCALL_OP && blocked_operands(L, b, args)) {
    emit_blocked(L, b, args);
    return;
  }
  MLC_VEC_APUSH(L->m->arena, L->out, *b);
}

void mlc_graph_layout_nchwc(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_arena *a = mlc_arena_new_child(m->arena);
  layout L = {.m = m, .names = {.a = a, .strings = true}, .twin = {.a = a}};
  for (int i = 0; i < f->n_params; i++) mlc_gmap_put(&L.names, f->params[i]->name, 1);
  for (int i = 0; i < m->n_consts; i++) mlc_gmap_put(&L.names, m->consts[i]->name, 1);
  for (int i = 0; i < f->n_bindings; i++) mlc_gmap_put(&L.names, f->bindings[i].var->name, 1);
  for (int i = 0; i < f->n_bindings; i++) layout_binding(&L, &f->bindings[i]);
  mlc_arena_free(a);
  f->bindings = L.out.data;
  f->n_bindings = L.out.len;
}

/* ---- layout: conv2d weights packed for the blocked (NCHWc) kernel --------------- */

/* A conv2d whose weight is a constant [K, C, R, S] without groups, with
 * channel blocks that fit (mlc_task_conv_block): its weight becomes a new
 * constant [K/kk, C/cc, R, S, cc, kk], packed here once, so the kernel
 * (lower.c: lower_conv_blocked) loads kk output channels of one (c, r, s)
 * as one contiguous vector on every call without repacking. A depthwise
 * conv2d (groups = C = K, weight [C, 1, R, S]) gets [C/kk, 1, R, S, 1, kk]:
 * kk channels of one (r, s) contiguous. The conv's result is then NCHWc
 * (mlc_graph_layout_nchwc puts the unpack after it). */
static void pack_conv_weight(mlc_gmodule *m, mlc_gbinding *b) {
  if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_CONV2D) return;
  const mlc_gvar *w = b->args[1];
  if (w->kind != MLC_GVAR_CONST || w->type.ndim != 4 || b->args[0]->type.ndim != 4) return;
  int64_t K = w->type.shape[0], C = w->type.shape[1], R = w->type.shape[2], S = w->type.shape[3];
  bool dw = b->attrs.groups > 1;
  if (dw && (b->attrs.groups != K || C != 1 || b->args[0]->type.shape[1] != K)) return;
  if (!dw && b->attrs.groups != 1) return;
  int64_t cc = dw ? 1 : mlc_task_conv_block(C, false), kk = mlc_task_conv_block(K, true);
  if (cc == 0 || kk == 0) return;
  mlc_gtype pt = {MLC_FLOAT32, 6, {K / kk, C / cc, R, S, cc, kk}};
  mlc_gvar *p = mlc_graph_const_new(m, mlc_arena_printf(m->arena, "%s_packed", w->name), &pt);
  float *pd = p->data;
  const float *wd = w->data;
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t rs = 0; rs < R * S; rs++)
        pd[(((k / kk) * (C / cc) + c / cc) * R * S + rs) * cc * kk + (c % cc) * kk + k % kk] =
            wd[(k * C + c) * R * S + rs];
  mlc_gvar **args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, b->n_args);
  memcpy(args, b->args, sizeof *args * (size_t)b->n_args);
  args[1] = p;
  b->args = args;
}

/* Constant w ([N, K], or [K, N] when k_major) packed [N/n, K, n], once
 * per weight (packed maps w to its index in m->consts). */
static mlc_gvar *packed_weight(mlc_gmodule *m, mlc_gmap *packed, mlc_gvar *w, int64_t N, int64_t K,
                               int64_t n, bool k_major) {
  int i;
  if (mlc_gmap_get(packed, w, &i)) return m->consts[i];
  mlc_gtype pt = {MLC_FLOAT32, 3, {N / n, K, n}};
  mlc_gvar *p = mlc_graph_const_new(m, mlc_arena_printf(m->arena, "%s_packed", w->name), &pt);
  float *pd = p->data;
  const float *wd = w->data;
  for (int64_t j = 0; j < N; j++)
    for (int64_t k = 0; k < K; k++)
      pd[((j / n) * K + k) * n + j % n] = wd[k_major ? k * N + j : j * K + k];
  mlc_gmap_put(packed, w, m->n_consts - 1);
  return p;
}

/* A dense layer whose weight is a constant [N, K] with N a multiple of a
 * vector block n (16, else 8: mlc_task_conv_block): its weight becomes
 * [N/n, K, n], packed here once (shared by the dense layers that use the
 * same weight), so the kernel (lower.c: lower_dense) loads n output
 * columns of one k as one contiguous vector and gets the register tile
 * matmul has. Other N keep the plain weight (no padding: the kernel would
 * need a guard on every store). The result stays [M, N]. */
static void pack_dense_weight(mlc_gmodule *m, mlc_gmap *packed, mlc_gbinding *b) {
  mlc_gvar *w = b->kind == MLC_GCALL_OP && b->op == MLC_GOP_DENSE ? b->args[1] : NULL;
  if (!w || w->kind != MLC_GVAR_CONST || w->type.ndim != 2) return;
  int64_t N = w->type.shape[0], K = w->type.shape[1], n = mlc_task_conv_block(N, true);
  if (n == 0) return;
  mlc_gvar **args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, b->n_args);
  memcpy(args, b->args, sizeof *args * (size_t)b->n_args);
  args[1] = packed_weight(m, packed, w, N, K, n, false);
  b->args = args;
}

/* A matmul of rows x [M, K] by a constant [K, N] weight whose N a vector
 * block n divides becomes the dense layer over the weight packed
 * [N/n, K, n] (pack_dense_weight's layout, made from [K, N]; shared by
 * the matmuls of the same weight): its register tile then streams the
 * weight contiguously instead of n columns of a K-long strided walk
 * (measured on Zen 4, untuned: 128x768x3072 3.2 -> 2.8 ms, and a
 * one-row 1x768x3072 458 -> 70 us, the decoding step's shape). */
static void matmul_to_dense(mlc_gmodule *m, mlc_gmap *packed, mlc_gbinding *b) {
  if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_MATMUL) return;
  mlc_gvar *x = b->args[0], *w = b->args[1];
  if (x->type.ndim != 2 || x->type.dtype != MLC_FLOAT32 || w->kind != MLC_GVAR_CONST ||
      w->type.ndim != 2 || w->type.dtype != MLC_FLOAT32)
    return;
  int64_t K = w->type.shape[0], N = w->type.shape[1], n = mlc_task_conv_block(N, true);
  if (n == 0) return;
  mlc_gvar *p = packed_weight(m, packed, w, N, K, n, true);
  b->op = MLC_GOP_DENSE;
  mlc_gattrs_init(MLC_GOP_DENSE, &b->attrs);
  b->args = mlc_gvars_dup(m, 2, (mlc_gvar *[]){x, p});
}

/* The columns the CPU register tile takes at once (16 float32 lanes). */
#define RAGGED_BLOCK 16

/* A matmul by a constant [K, N] weight whose N no vector block divides
 * (GPT-2's tied output embedding, 50257 columns) gets no register tile:
 * it becomes a matmul of the first N - N % 16 columns (tiled), one of the
 * last N % 16 and their concat. Writes the bindings replacing b into out
 * and returns their count: 3, or 0 to keep b. */
static int split_ragged_matmul(mlc_gmodule *m, const mlc_gbinding *b, mlc_gbinding *out) {
  if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_MATMUL) return 0;
  const mlc_gvar *w = b->args[1];
  if (w->kind != MLC_GVAR_CONST || w->type.ndim != 2 || w->type.dtype != MLC_FLOAT32) return 0;
  int64_t K = w->type.shape[0], N = w->type.shape[1], tail = N % RAGGED_BLOCK;
  if (tail == 0 || N < 4 * RAGGED_BLOCK) return 0;
  int64_t first[2] = {0, N - tail}, cols[2] = {N - tail, tail};
  mlc_gvar *parts[2];
  const float *wd = w->data;
  for (int p = 0; p < 2; p++) {
    mlc_gtype wt = {MLC_FLOAT32, 2, {K, cols[p]}};
    mlc_gvar *wp = mlc_graph_const_new(m, mlc_arena_printf(m->arena, "%s_cols%d", w->name, p), &wt);
    float *pd = wp->data;
    for (int64_t k = 0; k < K; k++)
      memcpy(pd + k * cols[p], wd + k * N + first[p], sizeof(float) * (size_t)cols[p]);
    mlc_gtype yt = b->var->type;
    yt.shape[yt.ndim - 1] = cols[p];
    parts[p] = mlc_gvar_new(m, mlc_arena_printf(m->arena, "%s_cols%d", b->var->name, p),
                            MLC_GVAR_BOUND, &yt);
    out[p] = *b;
    out[p].var = parts[p];
    out[p].args = mlc_gvars_dup(m, 2, (mlc_gvar *[]){b->args[0], wp});
  }
  out[2] = (mlc_gbinding){.var = b->var, .kind = MLC_GCALL_OP, .op = MLC_GOP_CONCAT, .n_args = 2,
                          .args = mlc_gvars_dup(m, 2, parts)};
  mlc_gattrs_init(MLC_GOP_CONCAT, &out[2].attrs);
  out[2].attrs.axis = -1;
  return 3;
}

static void split_ragged_matmuls(mlc_gmodule *m, mlc_gfunc *f) {
  MLC_VEC(mlc_gbinding) bs = {0};
  bool any = false;
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding out[3];
    int n = split_ragged_matmul(m, &f->bindings[i], out);
    any |= n > 0;
    if (!n) out[n++] = f->bindings[i];
    for (int k = 0; k < n; k++) MLC_VEC_APUSH(m->arena, bs, out[k]);
  }
  if (any) mlc_gfunc_set_bindings(m, f, bs.len, bs.data);
}

bool mlc_graph_pack_weights(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) split_ragged_matmuls(m, m->funcs[i]);
  mlc_arena *a = mlc_arena_new_child(m->arena);
  /* weight -> index of its packed form in m->consts, one map per layout
   * read (dense [N, K], matmul [K, N]) */
  mlc_gmap packed = {.a = a}, packed_kn = {.a = a};
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++) {
      pack_conv_weight(m, &m->funcs[i]->bindings[j]);
      pack_dense_weight(m, &packed, &m->funcs[i]->bindings[j]);
      matmul_to_dense(m, &packed_kn, &m->funcs[i]->bindings[j]);
    }
  mlc_arena_free(a);
  for (int i = 0; i < m->n_funcs; i++) mlc_graph_layout_nchwc(m, m->funcs[i]);
  mlc_graph_remove_unused(m);
  return mlc_graph_verify(m, err);
}
