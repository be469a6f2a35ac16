/* Convolutions in NCHW layout, as TOPI writes them: a zero-padded copy of
 * the input (pad_temp) and then the reduction over the window. */
#include "tasks/task_impl.h"


/* Output extents, or false with a message when the kernel does not fit. */
static bool out_hw(int64_t H, int64_t W, int64_t R, int64_t S, int64_t stride, int64_t pad,
                   int64_t *OH, int64_t *OW, mlc_error *err) {
  *OH = mlc_task_conv_out(H, R, stride, pad);
  *OW = mlc_task_conv_out(W, S, stride, pad);
  if (*OH < 1 || *OW < 1)
    return mlc_error_set(err,
                         "kernel %lldx%lld does not fit the padded input %lldx%lld "
                         "(needs R <= H + 2*pad and S <= W + 2*pad)",
                         (long long)R, (long long)S, (long long)(H + 2 * pad),
                         (long long)(W + 2 * pad));
  return true;
}

/* ---- conv2d_nchw ----------------------------------------------------------- */
/* shape: N, C, H, W, K, R, S, stride, pad.
 * conv2d_nchw[n, f, y, x] = sum_{rc, ry, rx}
 *     pad_temp[n, rc, y*stride + ry, x*stride + rx] * weight[f, rc, ry, rx] */

static mlc_prim_func *conv2d_build(mlc_arena *a, const int64_t *s) {
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], K = s[4], R = s[5], S = s[6];
  int64_t stride = s[7], pad = s[8], OH, OW;
  MLC_ASSERT(out_hw(H, W, R, S, stride, pad, &OH, &OW, NULL));
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *data = mlc_te_placeholder(te, "data", 4, SHAPE(N, C, H, W), F32);
  mlc_te_tensor *weight = mlc_te_placeholder(te, "weight", 4, SHAPE(K, C, R, S), F32);
  mlc_te_tensor *pt = mlc_task_pad_nchw(a, te, "pad_temp", data, pad);
  mlc_expr **o = mlc_te_begin(te, "conv2d_nchw", 4, SHAPE(N, K, OH, OW), "nfyx");
  mlc_expr *rc = mlc_te_reduce_axis(te, C, "rc");
  mlc_expr *ry = mlc_te_reduce_axis(te, R, "ry");
  mlc_expr *rx = mlc_te_reduce_axis(te, S, "rx");
  mlc_expr *in = mlc_te_at(te, pt, o[0], rc, mlc_task_window_index(a, o[2], stride, ry),
                           mlc_task_window_index(a, o[3], stride, rx));
  mlc_expr *w = mlc_te_at(te, weight, o[1], rc, ry, rx);
  mlc_te_tensor *out = mlc_te_sum(te, mlc_mul(a, in, w));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(data, weight, out));
}

static double conv2d_flops(const int64_t *s) {
  int64_t OH = mlc_task_conv_out(s[2], s[5], s[7], s[8]);
  int64_t OW = mlc_task_conv_out(s[3], s[6], s[7], s[8]);
  return 2.0 * s[0] * s[4] * OH * OW * s[1] * s[5] * s[6];
}

static int conv2d_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  int64_t OH, OW;
  if (!out_hw(s[2], s[3], s[5], s[6], s[7], s[8], &OH, &OW, err)) return -1;
  b[0] = mlc_task_buf_f32("data", 4, SHAPE(s[0], s[1], s[2], s[3]));
  b[1] = mlc_task_buf_f32("weight", 4, SHAPE(s[4], s[1], s[5], s[6]));
  b[2] = mlc_task_buf_f32("pad_temp", 4, SHAPE(s[0], s[1], s[2] + 2 * s[8], s[3] + 2 * s[8]));
  b[3] = mlc_task_buf_f32("conv2d_nchw", 4, SHAPE(s[0], s[4], OH, OW));
  return 4;
}

const mlc_task_entry mlc_task_conv2d_nchw = {
    .def = {.name = "conv2d_nchw",
            .shape_doc = "N,C,H,W,K,R,S[,stride,pad]",
            .description = "2-d convolution, data[N,C,H,W] * weight[K,C,R,S], zero padding "
                           "(stride 1, pad 1 unless given)",
            .n_dims = 9,
            .defaults = {1, 64, 56, 56, 64, 3, 3, 1, 1},
            .build = conv2d_build,
            .flops = conv2d_flops},
    .min_dims = 7,
    .zero_ok = 1u << 8,
    .buffers = conv2d_buffers,
};

/* ---- conv2d_nchwc ---------------------------------------------------------- */
/* The same convolution computed in the blocked layout (NCHWc): channels
 * split into blocks of cc (input) and kk (output) floats, kk the vector
 * lanes. The weight comes packed, [K/kk, C/cc, R, S, cc, kk] (the graph
 * packs its constant weights once at compile time); the input is padded
 * and blocked in one pass (data_pack), the output unblocked back to NCHW
 * (the last block), so the task reads and writes what conv2d_nchw does.
 * Every output vector then loads its weights contiguously and its input as
 * one broadcast: the design space vectorizes over output channels
 * (conv2d_nchwc's last dimension) and keeps rows of x in registers.
 *   conv2d_nchwc[n, kb, y, x, ki] = sum_{rc, ry, rx, rb}
 *       data_pack[n, rc, y*stride + ry, x*stride + rx, rb] * weight[kb, rc, ry, rx, rb, ki] */

int64_t mlc_task_conv_block(int64_t channels, bool output) {
  if (channels % 16 == 0) return 16;
  if (channels % 8 == 0) return 8;
  return !output && channels <= 16 ? channels : 0;
}

static mlc_te_tensor *pack_pad(mlc_arena *a, mlc_te *te, mlc_te_tensor *x, int64_t cc,
                               int64_t pad) {
  const mlc_buffer *b = mlc_te_buffer(x);
  int64_t H = b->shape[2], W = b->shape[3];
  int64_t shape[5] = {b->shape[0], b->shape[1] / cc, H + 2 * pad, W + 2 * pad, cc};
  mlc_expr **i = mlc_te_begin(te, "data_pack", 5, shape, "nchwb");
  mlc_expr *c = mlc_add(a, mlc_mul(a, i[1], mlc_int(a, cc)), i[4]);
  if (pad == 0) return mlc_te_end(te, mlc_te_at(te, x, i[0], c, i[2], i[3]));
  mlc_expr *p = mlc_int(a, pad);
  mlc_expr *inside = mlc_binary(a, MLC_EXPR_LE, p, i[2]);
  inside = mlc_binary(a, MLC_EXPR_AND, inside,
                      mlc_binary(a, MLC_EXPR_LT, i[2], mlc_int(a, H + pad)));
  inside = mlc_binary(a, MLC_EXPR_AND, inside, mlc_binary(a, MLC_EXPR_LE, p, i[3]));
  inside = mlc_binary(a, MLC_EXPR_AND, inside,
                      mlc_binary(a, MLC_EXPR_LT, i[3], mlc_int(a, W + pad)));
  mlc_expr *v = mlc_te_at(te, x, i[0], c, mlc_sub(a, i[2], p), mlc_sub(a, i[3], p));
  return mlc_te_end(te, mlc_if_then_else(a, inside, v, mlc_float(a, b->dtype, 0.0)));
}

static mlc_prim_func *nchwc_build(mlc_arena *a, const int64_t *s) {
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], K = s[4], R = s[5], S = s[6];
  int64_t stride = s[7], pad = s[8], OH, OW;
  int64_t cc = mlc_task_conv_block(C, false), kk = mlc_task_conv_block(K, true);
  MLC_ASSERT(out_hw(H, W, R, S, stride, pad, &OH, &OW, NULL) && cc > 0 && kk > 0);
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *data = mlc_te_placeholder(te, "data", 4, SHAPE(N, C, H, W), F32);
  mlc_te_tensor *weight =
      mlc_te_placeholder(te, "weight", 6, SHAPE(K / kk, C / cc, R, S, cc, kk), F32);
  mlc_te_tensor *pk = pack_pad(a, te, data, cc, pad);
  mlc_expr **o = mlc_te_begin(te, "conv2d_nchwc", 5, SHAPE(N, K / kk, OH, OW, kk), "nfyxk");
  mlc_expr *rc = mlc_te_reduce_axis(te, C / cc, "rc");
  mlc_expr *ry = mlc_te_reduce_axis(te, R, "ry");
  mlc_expr *rx = mlc_te_reduce_axis(te, S, "rx");
  mlc_expr *rb = mlc_te_reduce_axis(te, cc, "rb");
  mlc_expr *in = mlc_te_at(te, pk, o[0], rc, mlc_task_window_index(a, o[2], stride, ry),
                           mlc_task_window_index(a, o[3], stride, rx), rb);
  mlc_expr *w = mlc_te_at(te, weight, o[1], rc, ry, rx, rb, o[4]);
  mlc_te_tensor *blocked = mlc_te_sum(te, mlc_mul(a, in, w));
  mlc_expr **u = mlc_te_begin(te, "conv2d_unpack", 4, SHAPE(N, K, OH, OW), "nfyx");
  mlc_expr *kb = mlc_binary(a, MLC_EXPR_FLOORDIV, u[1], mlc_int(a, kk));
  mlc_expr *ki = mlc_binary(a, MLC_EXPR_FLOORMOD, u[1], mlc_int(a, kk));
  mlc_te_tensor *out = mlc_te_end(te, mlc_te_at(te, blocked, u[0], kb, u[2], u[3], ki));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(data, weight, out));
}

static int nchwc_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  int64_t OH, OW, cc = mlc_task_conv_block(s[1], false), kk = mlc_task_conv_block(s[4], true);
  if (!out_hw(s[2], s[3], s[5], s[6], s[7], s[8], &OH, &OW, err)) return -1;
  if (cc == 0 || kk == 0) {
    mlc_error_set(err,
                  "conv2d_nchwc needs C a multiple of 8 or at most 16 and K a multiple of 8 "
                  "(got C=%lld, K=%lld)",
                  (long long)s[1], (long long)s[4]);
    return -1;
  }
  b[0] = mlc_task_buf_f32("data", 4, SHAPE(s[0], s[1], s[2], s[3]));
  b[1] = mlc_task_buf_f32("weight", 4, SHAPE(s[4], s[1], s[5], s[6]));
  b[2] = mlc_task_buf_f32("data_pack", 4, SHAPE(s[0], s[1], s[2] + 2 * s[8], s[3] + 2 * s[8]));
  b[3] = mlc_task_buf_f32("conv2d_nchwc", 4, SHAPE(s[0], s[4], OH, OW));
  b[4] = mlc_task_buf_f32("conv2d_unpack", 4, SHAPE(s[0], s[4], OH, OW));
  return 5;
}

const mlc_task_entry mlc_task_conv2d_nchwc = {
    .def = {.name = "conv2d_nchwc",
            .shape_doc = "N,C,H,W,K,R,S[,stride,pad]",
            .description = "conv2d_nchw computed in the blocked layout (16- or 8-channel "
                           "blocks, weight packed [K/k,C/c,R,S,c,k])",
            .n_dims = 9,
            .defaults = {1, 64, 56, 56, 64, 3, 3, 1, 1},
            .build = nchwc_build,
            .flops = conv2d_flops},
    .min_dims = 7,
    .zero_ok = 1u << 8,
    .buffers = nchwc_buffers,
};

/* ---- depthwise_conv2d ------------------------------------------------------- */
/* shape: N, C, H, W, R, S, stride, pad; weight [C, 1, R, S] (multiplier 1).
 * depthwise_conv2d_nchw[n, c, y, x] = sum_{ry, rx}
 *     pad_temp[n, c, y*stride + ry, x*stride + rx] * weight[c, 0, ry, rx] */

static mlc_prim_func *depthwise_build(mlc_arena *a, const int64_t *s) {
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], R = s[4], S = s[5];
  int64_t stride = s[6], pad = s[7], OH, OW;
  MLC_ASSERT(out_hw(H, W, R, S, stride, pad, &OH, &OW, NULL));
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *data = mlc_te_placeholder(te, "data", 4, SHAPE(N, C, H, W), F32);
  mlc_te_tensor *weight = mlc_te_placeholder(te, "weight", 4, SHAPE(C, 1, R, S), F32);
  mlc_te_tensor *pt = mlc_task_pad_nchw(a, te, "pad_temp", data, pad);
  mlc_expr **o = mlc_te_begin(te, "depthwise_conv2d_nchw", 4, SHAPE(N, C, OH, OW), "ncyx");
  mlc_expr *ry = mlc_te_reduce_axis(te, R, "ry");
  mlc_expr *rx = mlc_te_reduce_axis(te, S, "rx");
  mlc_expr *in = mlc_te_at(te, pt, o[0], o[1], mlc_task_window_index(a, o[2], stride, ry),
                           mlc_task_window_index(a, o[3], stride, rx));
  mlc_expr *w = mlc_te_at(te, weight, o[1], mlc_int(a, 0), ry, rx);
  mlc_te_tensor *out = mlc_te_sum(te, mlc_mul(a, in, w));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(data, weight, out));
}

static double depthwise_flops(const int64_t *s) {
  int64_t OH = mlc_task_conv_out(s[2], s[4], s[6], s[7]);
  int64_t OW = mlc_task_conv_out(s[3], s[5], s[6], s[7]);
  return 2.0 * s[0] * s[1] * OH * OW * s[4] * s[5];
}

static int depthwise_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  int64_t OH, OW;
  if (!out_hw(s[2], s[3], s[4], s[5], s[6], s[7], &OH, &OW, err)) return -1;
  b[0] = mlc_task_buf_f32("data", 4, SHAPE(s[0], s[1], s[2], s[3]));
  b[1] = mlc_task_buf_f32("weight", 4, SHAPE(s[1], 1, s[4], s[5]));
  b[2] = mlc_task_buf_f32("pad_temp", 4, SHAPE(s[0], s[1], s[2] + 2 * s[7], s[3] + 2 * s[7]));
  b[3] = mlc_task_buf_f32("depthwise_conv2d_nchw", 4, SHAPE(s[0], s[1], OH, OW));
  return 4;
}

const mlc_task_entry mlc_task_depthwise_conv2d = {
    .def = {.name = "depthwise_conv2d",
            .shape_doc = "N,C,H,W,R,S[,stride,pad]",
            .description = "depthwise 2-d convolution, data[N,C,H,W] * weight[C,1,R,S] "
                           "(stride 1, pad 1 unless given)",
            .n_dims = 8,
            .defaults = {1, 32, 112, 112, 3, 3, 1, 1},
            .build = depthwise_build,
            .flops = depthwise_flops},
    .min_dims = 6,
    .zero_ok = 1u << 7,
    .buffers = depthwise_buffers,
};
