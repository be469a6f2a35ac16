/* ONNX nodes onto graph ops: the op table (one row per ONNX op: its
 * converter, inputs, graph op) and the helpers the converters share; the
 * converters are in onnx_ops_<section>.c. Integer tensors are shapes,
 * axes and indices, computed here at import time; float tensors become
 * graph bindings (evaluated at import when their inputs
 * are all constants). A node we cannot map exactly is refused. */
#include "frontend/onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* axis in [-ndim, ndim) -> [0, ndim). */
bool onnx_norm_axis(const onode *n, int64_t axis, int ndim, int *out) {
  if (axis < -ndim || axis >= ndim)
    return onnx_fail(n, "axis %lld is out of range for rank %d", (long long)axis, ndim);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return true;
}

bool onnx_no_attrs(onode *n) { return onnx_check_attrs(n, " "); }

const oval *onnx_in_val(const onode *n, int k) { return k < n->n_in ? n->in[k] : NULL; }

/* The ONNX rank and shape of input k (a scalar has rank 0). */
int onnx_in_rank(const onode *n, int k) { return n->in[k]->ndim; }

/* out = var, whose ONNX shape is the var's (rank >= 1). */
bool onnx_set_var(const onode *n, int k, mlc_gvar *v) {
  if (!v) return false;
  return onnx_set_out(n, k, v, v->type.ndim, v->type.shape);
}

/* ---- op table ------------------------------------------------------------------ */

/* Rows: ONNX op_type, converter, inputs (min, max), graph op, argument.
 * OWN: the converter chooses the graph ops itself. */
#define OWN ((mlc_gop)MLC_GOP_COUNT)
static const onnx_op ops[] = {
    {"Abs", onnx_cv_unary, 1, 1, MLC_GOP_ABS, 0},
    {"Acos", onnx_cv_unary, 1, 1, MLC_GOP_ACOS, 0},
    {"Acosh", onnx_cv_unary, 1, 1, MLC_GOP_ACOSH, 0},
    {"Add", onnx_cv_binary, 2, 2, MLC_GOP_ADD, I_ADD},
    {"And", onnx_cv_compare, 2, 2, MLC_GOP_LOGICAL_AND, I_AND},
    {"ArgMax", onnx_cv_argmax, 1, 1, MLC_GOP_ARGMAX, 0},
    {"ArgMin", onnx_cv_argmax, 1, 1, MLC_GOP_ARGMIN, 0},
    {"Asin", onnx_cv_unary, 1, 1, MLC_GOP_ASIN, 0},
    {"Asinh", onnx_cv_unary, 1, 1, MLC_GOP_ASINH, 0},
    {"Atan", onnx_cv_unary, 1, 1, MLC_GOP_ATAN, 0},
    {"Atanh", onnx_cv_unary, 1, 1, MLC_GOP_ATANH, 0},
    {"AveragePool", onnx_cv_avg_pool, 1, 1, OWN, 0},
    {"BatchNormalization", onnx_cv_batch_norm, 5, 5, OWN, 0},
    {"Cast", onnx_cv_cast, 1, 1, OWN, 0},
    {"Ceil", onnx_cv_unary, 1, 1, MLC_GOP_CEIL, 0},
    {"Celu", onnx_cv_celu, 1, 1, OWN, 0},
    {"Clip", onnx_cv_clip, 1, 3, OWN, 0},
    {"Concat", onnx_cv_concat, 1, MLC_GRAPH_MAX_ARGS, OWN, 0},
    {"Constant", onnx_cv_constant, 0, 0, OWN, 0},
    {"ConstantOfShape", onnx_cv_constant_of_shape, 1, 1, OWN, 0},
    {"Conv", onnx_cv_conv, 2, 3, OWN, 0},
    {"ConvTranspose", onnx_cv_conv_transpose, 2, 3, OWN, 0},
    {"Cos", onnx_cv_unary, 1, 1, MLC_GOP_COS, 0},
    {"Cosh", onnx_cv_unary, 1, 1, MLC_GOP_COSH, 0},
    {"CumSum", onnx_cv_cumsum, 2, 2, OWN, 0},
    {"DepthToSpace", onnx_cv_depth_space, 1, 1, OWN, 1},
    {"Div", onnx_cv_binary, 2, 2, MLC_GOP_DIVIDE, I_DIV},
    {"DequantizeLinear", onnx_cv_dequantize_linear, 2, 3, OWN, 0},
    {"Dropout", onnx_cv_dropout, 1, 3, OWN, 0},
    {"Einsum", onnx_cv_einsum, 1, 2, OWN, 0},
    {"Elu", onnx_cv_elu, 1, 1, OWN, 0},
    {"Equal", onnx_cv_compare, 2, 2, MLC_GOP_EQUAL, I_EQ},
    {"Erf", onnx_cv_unary, 1, 1, MLC_GOP_ERF, 0},
    {"Exp", onnx_cv_unary, 1, 1, MLC_GOP_EXP, 0},
    {"Expand", onnx_cv_expand, 2, 2, OWN, 0},
    {"Flatten", onnx_cv_flatten, 1, 1, OWN, 0},
    {"Floor", onnx_cv_unary, 1, 1, MLC_GOP_FLOOR, 0},
    {"Gather", onnx_cv_gather, 2, 2, OWN, 0},
    {"GatherElements", onnx_cv_gather_elements, 2, 2, OWN, 0},
    {"Gemm", onnx_cv_gemm, 2, 3, OWN, 0},
    {"GlobalAveragePool", onnx_cv_global_pool, 1, 1, MLC_GOP_GLOBAL_AVG_POOL2D, 0},
    {"GlobalMaxPool", onnx_cv_global_pool, 1, 1, MLC_GOP_REDUCE_MAX, 0},
    {"Greater", onnx_cv_compare, 2, 2, MLC_GOP_GREATER, I_GT},
    {"GreaterOrEqual", onnx_cv_compare, 2, 2, MLC_GOP_GREATER_EQUAL, I_GE},
    {"HardSigmoid", onnx_cv_hard_sigmoid, 1, 1, OWN, 0},
    {"HardSwish", onnx_cv_unary, 1, 1, MLC_GOP_HARD_SWISH, 0},
    {"Hardmax", onnx_cv_softmax_like, 1, 1, MLC_GOP_HARDMAX, 0},
    {"Identity", onnx_cv_identity, 1, 1, OWN, 0},
    {"InstanceNormalization", onnx_cv_instance_norm, 3, 3, OWN, 0},
    {"LRN", onnx_cv_lrn, 1, 1, OWN, 0},
    {"LayerNormalization", onnx_cv_layer_norm, 2, 3, OWN, 0},
    {"LeakyRelu", onnx_cv_leaky_relu, 1, 1, OWN, 0},
    {"Less", onnx_cv_compare, 2, 2, MLC_GOP_LESS, I_LT},
    {"LessOrEqual", onnx_cv_compare, 2, 2, MLC_GOP_LESS_EQUAL, I_LE},
    {"Log", onnx_cv_unary, 1, 1, MLC_GOP_LOG, 0},
    {"LogSoftmax", onnx_cv_softmax_like, 1, 1, MLC_GOP_LOG_SOFTMAX, 0},
    {"MatMul", onnx_cv_matmul, 2, 2, OWN, 0},
    {"Max", onnx_cv_variadic, 1, MLC_GRAPH_MAX_ARGS, MLC_GOP_MAXIMUM, 0},
    {"MaxPool", onnx_cv_max_pool, 1, 1, OWN, 0},
    {"Mean", onnx_cv_mean, 1, MLC_GRAPH_MAX_ARGS, OWN, 0},
    {"MeanVarianceNormalization", onnx_cv_mvn, 1, 1, OWN, 0},
    {"Min", onnx_cv_variadic, 1, MLC_GRAPH_MAX_ARGS, MLC_GOP_MINIMUM, 0},
    {"Mod", onnx_cv_mod, 2, 2, OWN, 0},
    {"Mul", onnx_cv_binary, 2, 2, MLC_GOP_MULTIPLY, I_MUL},
    {"Neg", onnx_cv_unary, 1, 1, MLC_GOP_NEGATIVE, 0},
    {"Not", onnx_cv_logical_not, 1, 1, OWN, 0},
    {"Or", onnx_cv_compare, 2, 2, MLC_GOP_LOGICAL_OR, I_OR},
    {"PRelu", onnx_cv_prelu, 2, 2, OWN, 0},
    {"Pad", onnx_cv_pad, 1, 4, OWN, 0},
    {"Pow", onnx_cv_pow, 2, 2, OWN, 0},
    {"QuantizeLinear", onnx_cv_quantize_linear, 2, 3, OWN, 0},
    {"Range", onnx_cv_range, 3, 3, OWN, 0},
    {"Reciprocal", onnx_cv_reciprocal, 1, 1, OWN, 0},
    {"ReduceL1", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceL2", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceLogSum", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceLogSumExp", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceMax", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceMean", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceMin", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceProd", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceSum", onnx_cv_reduce, 1, 2, OWN, 0},
    {"ReduceSumSquare", onnx_cv_reduce, 1, 2, OWN, 0},
    {"Relu", onnx_cv_unary, 1, 1, MLC_GOP_RELU, 0},
    {"Reshape", onnx_cv_reshape, 2, 2, OWN, 0},
    {"Round", onnx_cv_unary, 1, 1, MLC_GOP_ROUND, 0},
    {"ScatterND", onnx_cv_scatter_nd, 3, 3, OWN, 0},
    {"Selu", onnx_cv_selu, 1, 1, OWN, 0},
    {"Shape", onnx_cv_shape, 1, 1, OWN, 0},
    {"Shrink", onnx_cv_shrink, 1, 1, OWN, 0},
    {"Sigmoid", onnx_cv_unary, 1, 1, MLC_GOP_SIGMOID, 0},
    {"Sign", onnx_cv_unary, 1, 1, MLC_GOP_SIGN, 0},
    {"Sin", onnx_cv_unary, 1, 1, MLC_GOP_SIN, 0},
    {"Sinh", onnx_cv_unary, 1, 1, MLC_GOP_SINH, 0},
    {"Size", onnx_cv_size, 1, 1, OWN, 0},
    {"Slice", onnx_cv_slice, 1, 5, OWN, 0},
    {"Softmax", onnx_cv_softmax_like, 1, 1, MLC_GOP_SOFTMAX, 0},
    {"Softplus", onnx_cv_softplus, 1, 1, OWN, 0},
    {"Softsign", onnx_cv_softsign, 1, 1, OWN, 0},
    {"SpaceToDepth", onnx_cv_depth_space, 1, 1, OWN, 0},
    {"Split", onnx_cv_split, 1, 2, OWN, 0},
    {"Sqrt", onnx_cv_unary, 1, 1, MLC_GOP_SQRT, 0},
    {"Squeeze", onnx_cv_squeeze, 1, 2, OWN, 0},
    {"Sub", onnx_cv_binary, 2, 2, MLC_GOP_SUBTRACT, I_SUB},
    {"Sum", onnx_cv_variadic, 1, MLC_GRAPH_MAX_ARGS, MLC_GOP_ADD, 0},
    {"Tan", onnx_cv_unary, 1, 1, MLC_GOP_TAN, 0},
    {"Tanh", onnx_cv_unary, 1, 1, MLC_GOP_TANH, 0},
    {"ThresholdedRelu", onnx_cv_thresholded_relu, 1, 1, OWN, 0},
    {"Tile", onnx_cv_tile, 2, 2, OWN, 0},
    {"TopK", onnx_cv_topk, 1, 2, OWN, 0},
    {"Transpose", onnx_cv_transpose, 1, 1, OWN, 0},
    {"Trilu", onnx_cv_trilu, 1, 2, OWN, 0},
    {"Unsqueeze", onnx_cv_unsqueeze, 1, 2, OWN, 0},
    {"Where", onnx_cv_where, 3, 3, OWN, 0},
    {"Xor", onnx_cv_compare, 2, 2, MLC_GOP_LOGICAL_XOR, I_XOR},
};

const onnx_op *onnx_find_op(const char *op_type) {
  for (int i = 0; i < MLC_COUNTOF(ops); i++)
    if (strcmp(ops[i].name, op_type) == 0) return &ops[i];
  return NULL;
}

const char *onnx_op_names(void) {
  static char buf[4096];
  if (!buf[0]) {
    size_t k = 0;
    for (int i = 0; i < MLC_COUNTOF(ops) && k < sizeof buf; i++)
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? ", " : "", ops[i].name);
  }
  return buf;
}
