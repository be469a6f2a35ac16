/* tasks: the built-in workload library (mlc-ir --list-tasks; docs/CLI.md).
 *
 *   const mlc_task_def *d = mlc_task_find("matmul");
 *   int64_t shape[MLC_TASK_MAX_DIMS];
 *   if (!mlc_task_parse_shape(d, "128,128,128", shape, &err)) ...
 *   mlc_prim_func *f = mlc_task_build(a, d, shape);   // named "main"
 *   double flops = mlc_task_flops(d, shape);
 *
 * Each task is written with the ir builder (mlc_te_*) and has default
 * shapes; shapes from --shape are checked (count, >= 1, total size fits).
 */
#ifndef MLC_TASKS_H
#define MLC_TASKS_H

#include "ir/ir.h"

#define MLC_TASK_MAX_DIMS 12

typedef struct mlc_task_def {
  const char *name;
  const char *shape_doc;   /* "M,N,K" */
  const char *description; /* one line for --help */
  int n_dims;              /* numbers a --shape gives (some tasks accept fewer: see parse) */
  int64_t defaults[MLC_TASK_MAX_DIMS];
  /* Build the prim_func "main" for a validated shape. */
  mlc_prim_func *(*build)(mlc_arena *a, const int64_t *shape);
  /* Floating-point operations of one call (multiply-add counts 2). */
  double (*flops)(const int64_t *shape);
} mlc_task_def;

int mlc_task_count(void);
const mlc_task_def *mlc_task_at(int i);
const mlc_task_def *mlc_task_find(const char *name); /* NULL if unknown */
/* Comma-separated names of every task, for error messages and --help. */
const char *mlc_task_names(void);

/* Parse "a,b,c" into shape; NULL or "" gives the defaults. Errors name the
 * task and the expected form. */
bool mlc_task_parse_shape(const mlc_task_def *d, const char *text, int64_t *shape,
                          mlc_error *err);
/* "128,128,128" into buf. */
void mlc_task_shape_str(const mlc_task_def *d, const int64_t *shape, char *buf, size_t n);

mlc_prim_func *mlc_task_build(mlc_arena *a, const mlc_task_def *d, const int64_t *shape);
double mlc_task_flops(const mlc_task_def *d, const int64_t *shape);

/* the channel block of the blocked convolution layout
 * (conv2d_nchwc): 16 floats (one zmm) when it divides the channels, else 8,
 * else all of them when there are at most 16 (an RGB input); 0 when none
 * fits (the convolution stays in NCHW). Output channels need a block of 8
 * or 16 (the vector lanes): pass output = true. */
int64_t mlc_task_conv_block(int64_t channels, bool output);

#endif
