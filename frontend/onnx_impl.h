/* Private to the ONNX importer (onnx.c reads the file and walks the graph,
 * onnx_ops.c converts each node). */
#ifndef MLC_ONNX_IMPL_H
#define MLC_ONNX_IMPL_H

#include "frontend/frontend.h"
#include "onnx/onnx.pb-c.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* A named ONNX value during import. Float values are graph vars; integer
 * values (shapes, axes, indices) exist only at import time, as constants,
 * and are folded away (Shape -> Gather -> Concat -> Reshape). */
typedef struct oval {
  const char *name; /* ONNX name */
  bool is_int;      /* an integer constant (int64 / int32 / bool data), held in i */
  int32_t onnx_dtype; /* is_int: its ONNX dtype (a graph value only as int64, int32, bool) */
  int ndim;         /* ONNX rank; 0 for a scalar (its var has shape [1]) */
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  int64_t *i;   /* is_int: the values, row-major */
  mlc_gvar *var; /* the graph var (CONST ones hold the data); an integer
                  * constant's once a graph op reads it */
} oval;

typedef struct oimp oimp;

/* One node being converted. */
typedef struct onode {
  oimp *I;
  mlc_arena *arena; /* the module's */
  const Onnx__NodeProto *p;
  const char *label; /* the node's name, or its first output's */
  int64_t opset;     /* of the default domain */
  int n_in;
  oval **in; /* NULL where an optional input is left out ("") */
  const struct onnx_op *op; /* the op table's row (NULL: a call_extern node) */
} onode;

/* Fails with "FILE: node "X" (op Y, opset N): message". */
bool onnx_fail(const onode *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Attributes. Every attribute of a node must be read by its converter
 * (onnx_check_attrs lists the ones it knows); the getters fail on a
 * wrong type and leave *out at def when the attribute is absent. */
bool onnx_check_attrs(const onode *n, const char *known); /* " axis epsilon " */
bool onnx_attr_int(const onode *n, const char *name, int64_t def, int64_t *out);
bool onnx_attr_float(const onode *n, const char *name, double def, double *out);
/* ints: *count -1 when absent. */
bool onnx_attr_ints(const onode *n, const char *name, int max, int *count, int64_t *out);
bool onnx_attr_string(const onode *n, const char *name, const char *def, const char **out);
const Onnx__AttributeProto *onnx_attr(const onode *n, const char *name);

/* Values. */
mlc_gvar *onnx_var(const onode *n, int k); /* input k as a float var; NULL: failed */
bool onnx_const_float(const oval *v);      /* a float whose data is known */
/* Input k's integer values (an import-time constant); NULL with a message. */
const int64_t *onnx_ints(const onode *n, int k, int64_t *count);
/* Input k's float values when they are constant; NULL with a message. */
const float *onnx_floats(const onode *n, int k, int64_t *count);

/* Shapes. Every value's shape is within the tensor limits (base.h):
 * onnx_numel of a value's shape cannot overflow. A shape computed from
 * file data goes through onnx_checked_numel before anything is sized by
 * it: -1 with "WHAT has shape [..]: ..." for the node when it is over
 * the limits, has a negative extent or too many dimensions. */
int64_t onnx_numel(int ndim, const int64_t *shape);
int64_t onnx_checked_numel(const onode *n, const char *what, int ndim, const int64_t *shape,
                           int elem_bytes);

/* Output k of the node is var / the integer tensor; false (with the
 * node's message) when its shape is past the limits. */
bool onnx_set_out(const onode *n, int k, mlc_gvar *var, int ndim, const int64_t *shape);
/* The dtype of the integer result: input 0's when it is an integer
 * constant, else int64; the _as form names it. */
bool onnx_set_out_ints(const onode *n, int k, int ndim, const int64_t *shape, const int64_t *vals);
bool onnx_set_out_ints_as(const onode *n, int k, int32_t onnx_dtype, int ndim,
                          const int64_t *shape, const int64_t *vals);
/* The graph dtype of an ONNX dtype (float32, int64, int32, bool); false
 * for the others (integer constants of other widths are computed as
 * int64 at import, never graph values). */
bool onnx_graph_dtype(int32_t onnx_dtype, mlc_dtype *out);
const char *onnx_dtype_name(int32_t onnx_dtype); /* "int64" */
/* Output 0 is the constant t (a Constant node's value); nd >= 0: t's one
 * value repeated over shape (ConstantOfShape). */
bool onnx_const_tensor(const onode *n, const Onnx__TensorProto *t, int nd, const int64_t *shape);
/* A float constant (in the module; dropped later when unused). */
mlc_gvar *onnx_new_const(const onode *n, const char *suffix, const mlc_gtype *t);

/* A binding of op over args named after the node (suffix: an intermediate);
 * evaluated now into a constant when every arg is one. NULL with the
 * shape-inference message. */
mlc_gvar *onnx_emit(const onode *n, const char *suffix, mlc_gop op, const mlc_gattrs *a,
                    int n_args, mlc_gvar *const *args);
/* The same as a binding even over constants (the graph passes fold it
 * once they have read it: a dequantized weight's integers). */
mlc_gvar *onnx_emit_bound(const onode *n, const char *suffix, mlc_gop op, const mlc_gattrs *a,
                          int n_args, mlc_gvar *const *args);
/* x reshaped (no binding when the shape is already that). */
mlc_gvar *onnx_reshape(const onode *n, const char *suffix, mlc_gvar *x, int ndim,
                       const int64_t *shape);

/* Converters: the op table in onnx_ops.c, the converters in
 * onnx_ops_<section>.c. A row names a converter of its own, or one shared by
 * many rows (onnx_cv_unary, onnx_cv_binary, ...) that reads the row's gop
 * and arg through n->op. */
typedef bool (*onnx_convert_fn)(onode *n);
typedef struct onnx_op {
  const char *name; /* ONNX op_type */
  onnx_convert_fn convert;
  int min_in, max_in; /* inputs, counting left-out optional ones; the
                       * first min_in are never left out */
  /* For the converters shared by many rows (cv_unary, cv_binary, ...):
   * the graph op the row maps to, and a converter's own argument (the
   * integer op of shape arithmetic for cv_binary). */
  mlc_gop gop;
  int arg;
} onnx_op;
const onnx_op *onnx_find_op(const char *op_type);
const char *onnx_op_names(void); /* "Add, Clip, ..." for messages */

/* The integer ops of shape arithmetic on integer constants (the op
 * table's argument of binary rows). */
typedef enum { I_ADD, I_SUB, I_MUL, I_DIV, I_EQ, I_LT, I_GT, I_LE, I_GE, I_AND, I_OR, I_XOR } int_op;

/* Shared by the converters (onnx_ops.c, onnx_ops_<section>.c): the
 * helpers of onnx_ops.c, then what one section uses of another. */
/* onnx_ops_activation.c */
bool onnx_cv_celu(onode *n);
bool onnx_cv_elu(onode *n);
bool onnx_cv_lrn(onode *n);
bool onnx_cv_mvn(onode *n);
bool onnx_cv_prelu(onode *n);
bool onnx_cv_reciprocal(onode *n);
bool onnx_cv_selu(onode *n);
bool onnx_cv_softplus(onode *n);
bool onnx_cv_softsign(onode *n);
mlc_gvar *onnx_ew(onode *n, const char *sfx, mlc_gop op, mlc_gvar *a, mlc_gvar *b);
/* onnx_ops_conv.c */
bool onnx_cv_avg_pool(onode *n);
bool onnx_cv_conv(onode *n);
bool onnx_cv_conv_transpose(onode *n);
bool onnx_cv_einsum(onode *n);
bool onnx_cv_gemm(onode *n);
bool onnx_cv_global_pool(onode *n);
bool onnx_cv_matmul(onode *n);
bool onnx_cv_max_pool(onode *n);
mlc_gvar *onnx_scalar_const(const onode *n, const char *sfx, double v);
/* onnx_ops_elementwise.c */
bool onnx_binary(onode *n, mlc_gop op, int_op iop);
bool onnx_broadcast_shape(const onode *n, const oval *a, const oval *b, int *nd, int64_t *shape);
bool onnx_cv_binary(onode *n);
bool onnx_cv_clip(onode *n);
bool onnx_cv_dropout(onode *n);
bool onnx_cv_compare(onode *n);
bool onnx_cv_logical_not(onode *n);
bool onnx_cv_mod(onode *n);
bool onnx_cv_where(onode *n);
bool onnx_cv_hard_sigmoid(onode *n);
bool onnx_cv_identity(onode *n);
bool onnx_cv_leaky_relu(onode *n);
bool onnx_cv_mean(onode *n);
bool onnx_cv_pow(onode *n);
bool onnx_cv_shrink(onode *n);
bool onnx_cv_softmax_like(onode *n);
bool onnx_cv_thresholded_relu(onode *n);
bool onnx_cv_unary(onode *n);
bool onnx_cv_variadic(onode *n);
bool onnx_scalar_input(const onode *n, int k, double *out);
mlc_gvar *onnx_transpose(const onode *n, const char *sfx, mlc_gvar *x, int nd, const int *perm);
/* onnx_ops_movement.c */
bool onnx_cv_cumsum(onode *n);
bool onnx_cv_depth_space(onode *n);
bool onnx_cv_expand(onode *n);
bool onnx_cv_tile(onode *n);
bool onnx_cv_trilu(onode *n);
/* onnx_ops_norm.c */
bool onnx_cv_instance_norm(onode *n);
bool onnx_cv_layer_norm(onode *n);
/* onnx_ops_quant.c */
bool onnx_cv_dequantize_linear(onode *n);
bool onnx_cv_quantize_linear(onode *n);
/* onnx_ops_reduce.c */
bool onnx_cv_argmax(onode *n);
bool onnx_cv_batch_norm(onode *n);
bool onnx_cv_reduce(onode *n);
bool onnx_cv_topk(onode *n);
/* onnx_ops_shape.c */
int64_t onnx_clamp40(int64_t v);
bool onnx_cv_cast(onode *n);
bool onnx_cv_range(onode *n);
bool onnx_cv_concat(onode *n);
bool onnx_cv_constant(onode *n);
bool onnx_cv_constant_of_shape(onode *n);
bool onnx_cv_flatten(onode *n);
bool onnx_cv_gather(onode *n);
bool onnx_cv_gather_elements(onode *n);
bool onnx_cv_pad(onode *n);
bool onnx_cv_reshape(onode *n);
bool onnx_cv_scatter_nd(onode *n);
bool onnx_cv_shape(onode *n);
bool onnx_cv_size(onode *n);
bool onnx_cv_slice(onode *n);
bool onnx_cv_split(onode *n);
bool onnx_cv_squeeze(onode *n);
bool onnx_cv_transpose(onode *n);
bool onnx_cv_unsqueeze(onode *n);
bool onnx_reshaped(onode *n, int nd, const int64_t *shape);
/* onnx_ops.c */
int onnx_in_rank(const onode *n, int k);
const oval *onnx_in_val(const onode *n, int k);
bool onnx_no_attrs(onode *n);
bool onnx_norm_axis(const onode *n, int64_t axis, int ndim, int *out);
bool onnx_set_var(const onode *n, int k, mlc_gvar *v);


#pragma GCC visibility pop
#endif
