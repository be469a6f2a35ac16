/* Private to tasks/: what the registry (tasks.c) knows about each task
 * beyond the public mlc_task_def, and helpers the task files share. */
#ifndef MLC_TASK_IMPL_H
#define MLC_TASK_IMPL_H

#include "tasks/tasks.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* Element count of a buffer, for the size limits of --shape. */
typedef struct mlc_task_buf {
  const char *name;
  int64_t numel; /* saturates at INT64_MAX */
  int bytes;     /* per element */
} mlc_task_buf;

#define MLC_TASK_MAX_BUFS 8

typedef struct mlc_task_entry {
  mlc_task_def def;
  /* Fewest numbers --shape may give; the remaining ones keep their
   * defaults (conv stride and pad). 0 means def.n_dims. */
  int min_dims;
  uint32_t zero_ok; /* bit i set: shape[i] may be 0 (a padding) */
  /* Every buffer the task allocates (params and intermediates) for a shape
   * whose numbers are each in range; returns how many, or -1 with err set
   * when a derived extent is empty (a kernel larger than its input). */
  int (*buffers)(const int64_t *shape, mlc_task_buf *bufs, mlc_error *err);
} mlc_task_entry;

extern const mlc_task_entry mlc_task_matmul, mlc_task_batch_matmul, mlc_task_dense_bias_relu,
    mlc_task_matmul_relu, mlc_task_conv2d_nchw, mlc_task_conv2d_nchwc, mlc_task_depthwise_conv2d, mlc_task_softmax,
    mlc_task_layernorm, mlc_task_vecadd, mlc_task_window_sum, mlc_task_transpose,
    mlc_task_reduce_sum, mlc_task_dense_int8, mlc_task_matmul_bf16, mlc_task_conv2d_nchwc_int8;

/* Shorthands for the task files. */
#define F32 MLC_FLOAT32
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define TENSORS(...) ((mlc_te_tensor *[]){__VA_ARGS__})

/* A float32 buffer of n dims for the size check. */
mlc_task_buf mlc_task_buf_f32(const char *name, int n, const int64_t *dims);
/* a * b * ..., saturating at INT64_MAX (each factor >= 0). */
int64_t mlc_task_mul(int n, const int64_t *factors);
/* Output extent of a convolution: (in + 2 * pad - k) / stride + 1, or 0 when
 * the kernel does not fit. */
int64_t mlc_task_conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad);
mlc_expr *mlc_task_f32(mlc_arena *a, double v);
/* x * stride + r, written without the unit stride (the index TOPI prints). */
mlc_expr *mlc_task_window_index(mlc_arena *a, mlc_expr *x, int64_t stride, mlc_expr *r);
/* The zero-padded copy `name` of a 4-d NCHW tensor (TOPI's pad_temp):
 * T.if_then_else on the border, a plain copy when pad is 0. */
mlc_te_tensor *mlc_task_pad_nchw(mlc_arena *a, mlc_te *te, const char *name, mlc_te_tensor *x,
                                 int64_t pad);


#pragma GCC visibility pop
#endif
