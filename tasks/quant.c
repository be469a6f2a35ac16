/* Tasks for dot-product instructions: dense_int8, matmul_bf16,
 * conv2d_nchwc_int8. */
#include "tasks/task_impl.h"

/* ---- dense_int8: C[i, j] = sum_k int32(A[i, k]) * int32(W[j, k]) ---------- *
 * uint8 activations A[M, K] times int8 weights, accumulated in int32 as
 * quantized inference does. The weights come pre-packed for AVX-512 VNNI's
 * 16x4 tile (TVM's dot_16x4 layout): W[j, k] is B[j / 16, k / 4, j % 16,
 * k % 4], so each 16 outputs x 4 reduction elements are 64 contiguous
 * bytes. N must be a multiple of 16, K of 4. */

static mlc_prim_func *dense_int8_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, K), MLC_UINT8);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 4, SHAPE(N / 16, K / 4, 16, 4), MLC_INT8);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(M, N), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  mlc_expr *j = ij[1];
  mlc_expr *w = mlc_te_at(te, B, mlc_binary(a, MLC_EXPR_FLOORDIV, j, mlc_int(a, 16)),
                          mlc_binary(a, MLC_EXPR_FLOORDIV, k, mlc_int(a, 4)),
                          mlc_binary(a, MLC_EXPR_FLOORMOD, j, mlc_int(a, 16)),
                          mlc_binary(a, MLC_EXPR_FLOORMOD, k, mlc_int(a, 4)));
  mlc_expr *x = mlc_cast(a, MLC_INT32, mlc_te_at(te, A, ij[0], k));
  mlc_te_tensor *C = mlc_te_sum(te, mlc_mul(a, x, mlc_cast(a, MLC_INT32, w)));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

/* A multiply-add counts 2 operations, as for the float tasks. */
static double dense_int8_flops(const int64_t *s) { return 2.0 * s[0] * s[1] * s[2]; }

static int dense_int8_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  if (s[1] % 16 || s[2] % 4) {
    mlc_error_set(err, "N (%lld) must be a multiple of 16 and K (%lld) of 4, the packed weight tile",
                  (long long)s[1], (long long)s[2]);
    return -1;
  }
  b[0] = (mlc_task_buf){"A", mlc_task_mul(2, SHAPE(s[0], s[2])), 1};
  b[1] = (mlc_task_buf){"B", mlc_task_mul(2, SHAPE(s[1], s[2])), 1};
  b[2] = (mlc_task_buf){"C", mlc_task_mul(2, SHAPE(s[0], s[1])), 4};
  return 3;
}

const mlc_task_entry mlc_task_dense_int8 = {
    .def = {.name = "dense_int8",
            .shape_doc = "M,N,K",
            .description = "C[M,N] (int32) = A[M,K] (uint8) @ W[N,K]^T (int8, packed [N/16,K/4,16,4])",
            .n_dims = 3,
            .defaults = {1024, 1024, 1024},
            .build = dense_int8_build,
            .flops = dense_int8_flops},
    .buffers = dense_int8_buffers,
};

/* ---- matmul_bf16: C[i, j] = sum_k float32(A[i, k]) * float32(W[j, k]) ---- *
 * bfloat16 operands accumulated in float32, as AVX-512 BF16's vdpbf16ps
 * does. The weights come packed for its 16x2 tile: W[j, k] is B[j / 16,
 * k / 2, j % 16, k % 2], each 16 outputs x 2 reduction elements 64
 * contiguous bytes. N must be a multiple of 16, K of 2. */

static mlc_prim_func *matmul_bf16_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, K), MLC_BFLOAT16);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 4, SHAPE(N / 16, K / 2, 16, 2), MLC_BFLOAT16);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(M, N), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  mlc_expr *j = ij[1];
  mlc_expr *w = mlc_te_at(te, B, mlc_binary(a, MLC_EXPR_FLOORDIV, j, mlc_int(a, 16)),
                          mlc_binary(a, MLC_EXPR_FLOORDIV, k, mlc_int(a, 2)),
                          mlc_binary(a, MLC_EXPR_FLOORMOD, j, mlc_int(a, 16)),
                          mlc_binary(a, MLC_EXPR_FLOORMOD, k, mlc_int(a, 2)));
  mlc_expr *x = mlc_cast(a, MLC_FLOAT32, mlc_te_at(te, A, ij[0], k));
  mlc_te_tensor *C = mlc_te_sum(te, mlc_mul(a, x, mlc_cast(a, MLC_FLOAT32, w)));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

static int matmul_bf16_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  if (s[1] % 16 || s[2] % 2) {
    mlc_error_set(err, "N (%lld) must be a multiple of 16 and K (%lld) of 2, the packed weight tile",
                  (long long)s[1], (long long)s[2]);
    return -1;
  }
  b[0] = (mlc_task_buf){"A", mlc_task_mul(2, SHAPE(s[0], s[2])), 2};
  b[1] = (mlc_task_buf){"B", mlc_task_mul(2, SHAPE(s[1], s[2])), 2};
  b[2] = (mlc_task_buf){"C", mlc_task_mul(2, SHAPE(s[0], s[1])), 4};
  return 3;
}

const mlc_task_entry mlc_task_matmul_bf16 = {
    .def = {.name = "matmul_bf16",
            .shape_doc = "M,N,K",
            .description = "C[M,N] (float32) = A[M,K] (bfloat16) @ W[N,K]^T (bfloat16, packed "
                           "[N/16,K/2,16,2])",
            .n_dims = 3,
            .defaults = {1024, 1024, 1024},
            .build = matmul_bf16_build,
            .flops = dense_int8_flops},
    .buffers = matmul_bf16_buffers,
};

/* ---- conv2d_nchwc_int8 ------------------------------------------------------- *
 * TOPI's conv2d_NCHWc_int8 for AVX-512 VNNI: uint8 activations already in
 * the blocked layout data[N, C/cb, H, W, cb] (cb = 16, 8 or 4 channels,
 * the largest dividing C), int8 weights packed [K/16, C/cb, R, S, cb/4, 16,
 * 4] so that 16 output channels x 4 input channels are 64 contiguous
 * bytes (the intrinsic's tile), int32 output in the blocked layout
 * [N, K/16, OH, OW, 16]. The zero padding is its own block (data_pad).
 *   conv[n, kb, y, x, ki] = sum_{rc, ry, rx, rf, rs}
 *       int32(data_pad[n, rc, y*stride + ry, x*stride + rx, rf*4 + rs])
 *       * int32(weight[kb, rc, ry, rx, rf, ki, rs]) */

static int64_t int8_in_block(int64_t c) { return c % 16 == 0 ? 16 : c % 8 == 0 ? 8 : c % 4 == 0 ? 4 : 0; }

static mlc_te_tensor *pad_nchwc(mlc_arena *a, mlc_te *te, mlc_te_tensor *x, int64_t pad) {
  if (pad == 0) return x;
  const mlc_buffer *b = mlc_te_buffer(x);
  int64_t H = b->shape[2], W = b->shape[3];
  int64_t shape[5] = {b->shape[0], b->shape[1], H + 2 * pad, W + 2 * pad, b->shape[4]};
  mlc_expr **i = mlc_te_begin(te, "data_pad", 5, shape, "nchwb");
  mlc_expr *p = mlc_int(a, pad);
  mlc_expr *inside = mlc_binary(a, MLC_EXPR_LE, p, i[2]);
  inside = mlc_binary(a, MLC_EXPR_AND, inside, mlc_binary(a, MLC_EXPR_LT, i[2], mlc_int(a, H + pad)));
  inside = mlc_binary(a, MLC_EXPR_AND, inside, mlc_binary(a, MLC_EXPR_LE, p, i[3]));
  inside = mlc_binary(a, MLC_EXPR_AND, inside, mlc_binary(a, MLC_EXPR_LT, i[3], mlc_int(a, W + pad)));
  mlc_expr *v = mlc_te_at(te, x, i[0], i[1], mlc_sub(a, i[2], p), mlc_sub(a, i[3], p), i[4]);
  return mlc_te_end(te, mlc_if_then_else(a, inside, v, mlc_int_t(a, b->dtype, 0)));
}

static mlc_prim_func *conv_int8_build(mlc_arena *a, const int64_t *s) {
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], K = s[4], R = s[5], S = s[6];
  int64_t stride = s[7], pad = s[8], cb = int8_in_block(C);
  int64_t OH = mlc_task_conv_out(H, R, stride, pad), OW = mlc_task_conv_out(W, S, stride, pad);
  MLC_ASSERT(OH > 0 && OW > 0 && cb > 0 && K % 16 == 0);
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *data = mlc_te_placeholder(te, "data", 5, SHAPE(N, C / cb, H, W, cb), MLC_UINT8);
  mlc_te_tensor *weight =
      mlc_te_placeholder(te, "weight", 7, SHAPE(K / 16, C / cb, R, S, cb / 4, 16, 4), MLC_INT8);
  mlc_te_tensor *pd = pad_nchwc(a, te, data, pad);
  mlc_expr **o = mlc_te_begin(te, "conv2d_nchwc_int8", 5, SHAPE(N, K / 16, OH, OW, 16), "nfyxk");
  mlc_expr *rc = mlc_te_reduce_axis(te, C / cb, "rc");
  mlc_expr *ry = mlc_te_reduce_axis(te, R, "ry");
  mlc_expr *rx = mlc_te_reduce_axis(te, S, "rx");
  mlc_expr *rf = mlc_te_reduce_axis(te, cb / 4, "rf");
  mlc_expr *rs = mlc_te_reduce_axis(te, 4, "rs");
  mlc_expr *in = mlc_te_at(te, pd, o[0], rc, mlc_task_window_index(a, o[2], stride, ry),
                           mlc_task_window_index(a, o[3], stride, rx),
                           mlc_add(a, mlc_mul(a, rf, mlc_int(a, 4)), rs));
  mlc_expr *w = mlc_te_at(te, weight, o[1], rc, ry, rx, rf, o[4], rs);
  mlc_te_tensor *out =
      mlc_te_sum(te, mlc_mul(a, mlc_cast(a, MLC_INT32, in), mlc_cast(a, MLC_INT32, w)));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(data, weight, out));
}

static double conv_int8_flops(const int64_t *s) {
  int64_t OH = mlc_task_conv_out(s[2], s[5], s[7], s[8]);
  int64_t OW = mlc_task_conv_out(s[3], s[6], s[7], s[8]);
  return 2.0 * s[0] * s[4] * OH * OW * s[1] * s[5] * s[6];
}

static int conv_int8_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  int64_t OH = mlc_task_conv_out(s[2], s[5], s[7], s[8]);
  int64_t OW = mlc_task_conv_out(s[3], s[6], s[7], s[8]);
  if (OH < 1 || OW < 1) {
    mlc_error_set(err, "kernel %lldx%lld does not fit the padded input %lldx%lld", (long long)s[5],
                  (long long)s[6], (long long)(s[2] + 2 * s[8]), (long long)(s[3] + 2 * s[8]));
    return -1;
  }
  if (int8_in_block(s[1]) == 0 || s[4] % 16) {
    mlc_error_set(err,
                  "conv2d_nchwc_int8 needs C a multiple of 4 and K a multiple of 16, the packed "
                  "weight tile (got C=%lld, K=%lld)",
                  (long long)s[1], (long long)s[4]);
    return -1;
  }
  b[0] = (mlc_task_buf){"data", mlc_task_mul(4, SHAPE(s[0], s[1], s[2], s[3])), 1};
  b[1] = (mlc_task_buf){"weight", mlc_task_mul(4, SHAPE(s[4], s[1], s[5], s[6])), 1};
  b[2] = (mlc_task_buf){"data_pad", mlc_task_mul(4, SHAPE(s[0], s[1], s[2] + 2 * s[8], s[3] + 2 * s[8])), 1};
  b[3] = (mlc_task_buf){"conv2d_nchwc_int8", mlc_task_mul(4, SHAPE(s[0], s[4], OH, OW)), 4};
  return 4;
}

const mlc_task_entry mlc_task_conv2d_nchwc_int8 = {
    .def = {.name = "conv2d_nchwc_int8",
            .shape_doc = "N,C,H,W,K,R,S[,stride,pad]",
            .description = "int32 conv2d of uint8 data[N,C/c,H,W,c] (c = 16, 8 or 4) by int8 "
                           "weight packed [K/16,C/c,R,S,c/4,16,4], output [N,K/16,OH,OW,16]",
            .n_dims = 9,
            .defaults = {1, 64, 56, 56, 64, 3, 3, 1, 1},
            .build = conv_int8_build,
            .flops = conv_int8_flops},
    .min_dims = 7,
    .zero_ok = 1u << 8,
    .buffers = conv_int8_buffers,
};
