/* frontend: the importers. A model file (model JSON, ONNX) becomes a graph
 * module (graph/graph.h), built with graph.h's "building a graph"
 * functions; .npy and ONNX tensor files become weights and inputs.
 *
 *   mlc_error err;
 *   mlc_gmodule *m = mlc_graph_load_any("model.onnx", NULL, NULL, &err);
 *   if (!m || !mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err)) ...
 *   mlc_graph_free(m);
 */
#ifndef MLC_FRONTEND_H
#define MLC_FRONTEND_H

#include "graph/graph.h"

/* ---- model files --------------------------------------------------------- */

/* A JSON model description:
 *   {"name": "mlp",
 *    "inputs":  [{"name": "x", "shape": [1, 784]}],
 *    "weights": [{"name": "w0", "shape": [128, 784]}, ...],    // <weights_dir>/w0.npy
 *    "nodes":   [{"name": "lv0", "op": "transpose", "inputs": ["w0"]},
 *                {"name": "lv1", "op": "matmul", "inputs": ["x", "lv0"]}, ...
 *                {"name": "c", "op": "conv2d", "inputs": ["x", "w"], "stride": 1, "padding": 1}],
 *    "outputs": ["lv4"]}
 * Ops (graph/ops.def; attributes as in mlc_gattrs): matmul ([..., M, K] @
 * [..., K, N], batch dims broadcast), dense (x[M,K] @ W[N,K]^T [+ bias]),
 * elementwise ops with numpy broadcasting, softmax / log_softmax ("axis"),
 * layernorm ("axis", "eps"), batch_norm ("eps"), conv2d / conv_transpose2d
 * (NCHW, OIHW / IOHW weights, optional bias), max_pool2d / avg_pool2d,
 * conv3d / conv_transpose3d / max_pool3d / avg_pool3d (the same over
 * NCDHW, OIDHW / IODHW weights; window arrays have 3 entries per side),
 * global_avg_pool2d, reduce_sum / reduce_mean / reduce_max ("axes",
 * "keepdims"), reshape, flatten ("axis", 1: [prod(shape[:axis]),
 * prod(shape[axis:])]), transpose, concat ("axis"), slice ("axes",
 * "starts", "ends", "steps"), pad ("pad_before", "pad_after": one entry per
 * axis; "pad_value"), gather ("axis"; data, indices: output shape
 * data.shape[:axis] + indices.shape + data.shape[axis + 1:], indices whole
 * numbers in [-n, n) for the axis' extent n), astype ("to": "float32",
 * "int64", "int32", "bool": weights are float32, an input takes a "dtype"
 * ("int64" token ids; default float32), other dtypes come from astype) and the ops of other dtypes in graph/ops.def
 * (comparisons, logic, where, mod, argmax, gather_elements, topk,
 * scatter_nd, ...). Window keys: "stride" and
 * "padding" (one value for all axes and sides), or "strides" [h, w],
 * "pads" [top, left, bottom, right], "dilations", "groups",
 * "output_padding"; pools: "pool_size" or "kernel" [h, w] (2; the stride
 * defaults to the window), "ceil_mode", "count_include_pad". Scalars:
 * leaky_relu / hard_sigmoid "alpha", "beta"; clip "min", "max" (numbers or
 * "inf" / "-inf"); power "exponent"; transpose "axes" (default reversed);
 * reshape "shape" (one -1 allowed). A key the op does not take is an
 * error.
 * A node may call a C function instead of an op (MLC_GCALL_EXTERN):
 *   {"name": "lv1", "op": "call_extern", "func": "my_linear",
 *    "inputs": ["x", "w"], "out_shape": [1, 10], "dtype": "float32"}
 * "func" is a C identifier and none of the emitted entry's own names (C
 * keywords, main, malloc, free, workspace, ws, rc, names starting mlc_,
 * v_, input, output or <model>_ in any case; names <math.h>, <stdlib.h> or
 * <stdint.h> declare clash when the header is compiled), at most
 * MLC_GRAPH_MAX_EXTERN_ARGS inputs (the same count wherever the function
 * is called), "out_shape" the result's shape, "dtype" float32 (the
 * default and only one).
 * A weight may give its elements inline, row-major: "values": [0, 2, -1]
 * (small constants such as gather indices; no file is read for it).
 * Nodes may come in any order (they are sorted; a cycle is an error); every
 * node must feed an output. weights_dir NULL: the model path without
 * ".json" (examples/mlp.json -> examples/mlp/). Errors name the file and
 * the node. */
mlc_gmodule *mlc_graph_load(const char *path, const char *weights_dir, mlc_error *err);
/* The same from text. weights_dir NULL: no files are read and every
 * weight gets seeded values in [-0.5, 0.5) (tests of small graphs). */
mlc_gmodule *mlc_graph_parse(const char *filename, const char *text, size_t len,
                             const char *weights_dir, mlc_error *err);

/* An ONNX model (frontend/onnx.c; default-domain opsets 1 to 17) into the same
 * graph: initializers and Constant nodes become weights; integer
 * constants (shapes, axes, positions, masks computed from shapes) are
 * folded at import (Shape -> Gather -> Concat -> Reshape, Range, Where,
 * comparisons), becoming graph constants only where a graph op reads
 * them; inputs, outputs and runtime values may be float32, int64, int32
 * or bool (token ids, attention masks); each node maps onto graph ops. input_shapes: NULL or a
 * NULL-terminated list of "name=1,3,224,224", required for inputs with
 * symbolic dimensions. A node of the domain "mlc.extern" is a call_extern
 * of the C function named by its op_type, over its float inputs, with one
 * output whose shape is the node's ints attribute "out_shape". Refused, with a message naming the file and the node
 * or tensor: unsupported ops or attributes, other domains, external data,
 * other dtypes (float64, float16, ...; integer constants of other widths
 * only in shape arithmetic), cycles, missing
 * initializers. The model is named after the file ("resnet18.onnx" ->
 * resnet18). */
mlc_gmodule *mlc_graph_load_onnx(const char *path, const char *const *input_shapes,
                                 mlc_error *err);
mlc_gmodule *mlc_graph_parse_onnx(const char *filename, const void *bytes, size_t len,
                                  const char *const *input_shapes, mlc_error *err);
/* The shapes the model's inputs (not initializers) declare, as the
 * NULL-terminated "name=1,sequence,768" list the loaders take: a symbolic
 * extent by its name ("?": unnamed), in a. */
const char **mlc_graph_onnx_declared_shapes(mlc_arena *a, const char *filename, const void *bytes,
                                           size_t len, mlc_error *err);
/* "a=1,2;b=3" (the model API's and Python's spelling of several
 * input_shapes) as the NULL-terminated list the loaders take, in a;
 * empty entries are dropped, the entries themselves checked by the
 * loader. NULL or "": NULL (no shapes). */
const char **mlc_graph_shape_list(mlc_arena *a, const char *text);
/* A model file by its extension: ".onnx" through mlc_graph_load_onnx
 * (weights_dir must be NULL), anything else as JSON through mlc_graph_load
 * (input_shapes must be NULL or empty); the tools' --model. */
mlc_gmodule *mlc_graph_load_any(const char *path, const char *weights_dir,
                                const char *const *input_shapes, mlc_error *err);
/* ---- models built once for every size (sized.c) ---------------------------------- */
/* "seq=1..2048" (mlc-compile --dim) into s, its name in a. */
bool mlc_gsize_parse(mlc_arena *a, const char *spec, mlc_gsize *s, mlc_error *err);
/* input_shapes (NULL-terminated "ids=1,seq") with each extent that names
 * one of the n sizes replaced by values[k], in a. */
const char **mlc_graph_shapes_at(mlc_arena *a, const char *const *input_shapes, int n,
                                 const mlc_gsize *sizes, const int64_t *values);
/* An ONNX model whose input shapes name the sizes as extents, imported
 * and run through the passes at the sizes mlc_graph_generalize asks for
 * (each module's fuse_max_ops as given) and made one module for every
 * size in the bounds. */
mlc_gmodule *mlc_graph_load_sized(const char *path, const char *const *input_shapes, int n,
                                  const mlc_gsize *sizes, int fuse_max_ops, mlc_error *err);
/* An ONNX model whose inputs declare one dynamic axis (symbolic extents
 * of one name, as an exporter's dynamic_axes write them), built as
 * mlc_graph_load_sized builds it for every value lo..hi of that axis,
 * named after it. Refused when the inputs declare none or several. */
mlc_gmodule *mlc_graph_load_dynamic(const char *path, int64_t lo, int64_t hi, int fuse_max_ops,
                                    mlc_error *err);
/* The same model imported at the given values of the sizes (no passes):
 * the reference of a run at those sizes. */
mlc_gmodule *mlc_graph_load_at(const char *path, const char *const *input_shapes, int n,
                               const mlc_gsize *sizes, const int64_t *values, mlc_error *err);

/* A serialized ONNX TensorProto (the backend tests' input_0.pb), as
 * mlc_npy_read reads .npy: float32, int64, int32, bool, uint8 or int8 from
 * raw_data or the typed fields (float_data, int64_data, int32_data: ONNX
 * keeps int32, int8, uint8 and bool there); type->dtype says which and the
 * data comes back in its C type (float, int64_t, int32_t, uint8_t, int8_t;
 * bool one byte, 0 or 1). Other dtypes, bool values other than 0/1 and
 * int32_data entries out of the dtype's range are refused, naming the file. */
void *mlc_onnx_tensor_read(const char *path, mlc_gtype *type, mlc_error *err); /* mlc_free */
void *mlc_onnx_tensor_parse(const char *name, const void *bytes, size_t len, mlc_gtype *type,
                            mlc_error *err);

/* .npy files (format 1.0-3.0), little-endian C order. Read: descr '<f4'
 * (float32), '<i8' (int64), '<i4' (int32), '|b1' (bool: every byte 0 or
 * 1), '|u1' (uint8), '|i1' (int8); type->dtype says which and the data
 * comes back in the dtype's C type, as mlc_onnx_tensor_read. Errors name
 * the file and what is wrong (bad magic, header, dtype with the accepted
 * list, Fortran order, shape, a bool byte not 0/1, truncated or trailing
 * data). */
void *mlc_npy_read(const char *path, mlc_gtype *type, mlc_error *err); /* mlc_free */
void *mlc_npy_parse(const char *name, const void *bytes, size_t len, mlc_gtype *type,
                    mlc_error *err);
/* Writes data (numel(type) elements of type->dtype's C type) with the
 * descr of type->dtype; false (nothing written) for a dtype .npy reading
 * does not accept (float16, bfloat16). */
bool mlc_npy_write(const char *path, const mlc_gtype *type, const void *data, mlc_error *err);

#endif
