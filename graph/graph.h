/* graph: the model compiler. A Relax-like graph IR, its passes, lowering to
 * TensorIR, and running or emitting a whole model.
 *
 *   mlc_error err;
 *   mlc_gmodule *m = mlc_graph_load("examples/mlp.json", NULL, &err); // frontend/frontend.h
 *   mlc_graph_rewrite_patterns(m, &err); // exported layer norm, GELU -> one op
 *   mlc_graph_rewrite_fma(m, &err);     // multiply + add -> ewise_fma
 *   mlc_graph_fold_constants(m, &err);  // ops over weights only -> new weights
 *   mlc_graph_fuse(m, &err);            // matmul + add (+ relu) -> primitive sub-functions
 *   mlc_graph_lower(m, &err);           // every op -> a prim_func, call_tir in DPS
 *   mlc_graph_fuse_tir(m, &err);        // one prim_func per fused sub-function
 *   mlc_graph_dce(m, &err);             // share identical prim_funcs, drop unused ones
 *   mlc_graph_print(&out, m, 0);        // Relax-like text
 *   mlc_graph_free(m);
 *
 * mlc_graph_run_pipeline runs the passes in that order (the verifier after
 * each). A module owns one arena holding its graph functions, constants
 * (weights) and the TensorIR module of its prim_funcs.
 *
 * A graph function is a list of bindings `var = call(args)` over tensors of
 * static shape, in dataflow order. A call is a high-level op (MLC_GCALL_OP),
 * a call into a primitive sub-function (MLC_GCALL_FUNC), a call_tir into
 * a prim_func in destination-passing style (MLC_GCALL_TIR: the prim_func
 * takes the args then the output buffer), or a call of a C function the
 * user links in, also destination-passing (MLC_GCALL_EXTERN,
 * R.call_dps_packed; opaque to every pass: never folded, fused or lowered).
 * `main` is the entry; the other functions are fused sub-functions marked
 * primitive.
 */
#ifndef MLC_GRAPH_H
#define MLC_GRAPH_H

#include "ir/ir.h"

#define MLC_GRAPH_MAX_DIMS 8
/* Most args one op binding takes (concat's inputs). */
#define MLC_GRAPH_MAX_ARGS 64
/* Most spatial axes of a window op (conv3d's D, H, W). */
#define MLC_GRAPH_MAX_WINDOW 3

/* ---- ops ----------------------------------------------------------------- */

typedef enum mlc_gop {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) MLC_GOP_##id,
#include "graph/ops.def"
} mlc_gop;
/* Counted outside the enum so switches need no default. */
enum { MLC_GOP_COUNT = 0
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) +1
#include "graph/ops.def"
};

typedef enum mlc_gop_class { MLC_GOP_ELEMWISE, MLC_GOP_ANCHOR, MLC_GOP_REDUCE, MLC_GOP_INJECTIVE } mlc_gop_class;

const char *mlc_gop_name(mlc_gop op);   /* "matmul" (JSON) */
const char *mlc_gop_script(mlc_gop op); /* "R.matmul" (printed) */
/* Inputs an op takes: at least mlc_gop_n_inputs (the required ones), at
 * most mlc_gop_max_inputs (-1: any number, concat); optional inputs come
 * last (conv2d's bias). */
int mlc_gop_n_inputs(mlc_gop op);
int mlc_gop_max_inputs(mlc_gop op);
/* axis (negative: from the end) as an index into ndim dims; -1 when out
 * of range. */
int mlc_gop_axis(int64_t axis, int ndim);
/* Whether op takes n inputs; the error says how many it takes. */
bool mlc_gop_arity_ok(mlc_gop op, int n);
bool mlc_gop_arity_error(mlc_gop op, int n, mlc_error *err);
mlc_gop_class mlc_gop_class_of(mlc_gop op);
/* The spatial axes a window op slides
 * over (2: conv2d, conv_transpose2d, max_pool2d, avg_pool2d over NCHW; 3:
 * their 3-D forms over NCDHW), 0 for every other op. */
int mlc_gop_window_dims(mlc_gop op);
/* Whether op reads operand 1 as indices along at->axis of operand 0
 * (gather, gather_elements): constant ones are checked, inputs read so
 * are checked at run time (index_checks). */
bool mlc_gop_reads_indices(mlc_gop op);
bool mlc_gop_from_name(const char *name, mlc_gop *out);
/* Comma-separated list of every op, for messages. */
const char *mlc_gop_names(void);

/* ---- graph IR ------------------------------------------------------------ */

/* Graph values are float32, int64, int32 or bool (one byte, 0 or 1);
 * ops.def's types column says which each op takes. */
typedef struct mlc_gtype {
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
} mlc_gtype;

typedef enum mlc_gvar_kind {
  MLC_GVAR_PARAM, /* a function parameter (main's: a model input) */
  MLC_GVAR_CONST, /* a weight, data owned by the module */
  MLC_GVAR_BOUND, /* defined by a binding */
} mlc_gvar_kind;

/* An extent of a module built for every size of some input dimensions
 * (mlc_graph_generalize): off + sum coef[k] * size k. */
#define MLC_GRAPH_MAX_SIZES 4
typedef struct mlc_gdim {
  int64_t off;
  int64_t coef[MLC_GRAPH_MAX_SIZES];
} mlc_gdim;

typedef struct mlc_gvar {
  const char *name;
  mlc_gvar_kind kind;
  mlc_gtype type; /* in a module of sizes: the extents at every size's bound */
  mlc_gdim *dims; /* a module of sizes' main params and outputs: their extents
                   * (type.ndim of them); NULL otherwise */
  void *data; /* CONST: row-major values of the dtype's C type (float,
               * int64_t, int32_t, bool) */
} mlc_gvar;

/* The C types of graph/attrs.def's kinds. */
#define MLC_GATTR_TYPE_NUMBER double
#define MLC_GATTR_TYPE_POSITIVE double
#define MLC_GATTR_TYPE_AXIS int64_t
#define MLC_GATTR_TYPE_INT int64_t
#define MLC_GATTR_TYPE_BOOL bool
#define MLC_GATTR_TYPE_DTYPE mlc_dtype

/* Op attributes: one plain struct for every op; each field lists the ops
 * that read it, every other op ignores it. mlc_gattrs_default gives the
 * values below in parentheses, and attrs.def's defaults. */
typedef struct mlc_gattrs {
  /* Windows over NCHW (conv2d, conv_transpose2d, max_pool2d, avg_pool2d)
   * and NCDHW (conv3d, conv_transpose3d, max_pool3d, avg_pool3d): per
   * spatial axis i < nsp (mlc_gop_window_dims; the avg pools take no
   * dilation):
   *   out = (in + pad_begin + pad_end - (dilation * (k - 1) + 1)) / stride + 1
   * rounded down, or up with ceil_mode (pools; a last window starting in
   * the end padding is dropped, as PyTorch and ONNX do). conv_transpose2d:
   *   out = stride * (in - 1) + output_padding + dilation * (k - 1) + 1
   *         - pad_begin - pad_end
   * Convolutions pad with zeros, max_pool2d with -inf. */
  int64_t kernel[MLC_GRAPH_MAX_WINDOW];    /* pools: window ((d,) h, w) (2, 2, 2); convs: the weight's */
  int64_t strides[MLC_GRAPH_MAX_WINDOW];   /* ((d,) h, w) (1, 1, 1) */
  /* pad_begin of axis i at pads[i], pad_end at pads[nsp + i], as ONNX
   * lists them: 2-D top, left, bottom, right (0) */
  int64_t pads[2 * MLC_GRAPH_MAX_WINDOW];
  int64_t dilations[MLC_GRAPH_MAX_WINDOW]; /* convs, max pools (1, 1, 1) */
  int64_t groups;                          /* convs, transposed convs: channel groups (1) */
  /* transposed convs: extra elements at the end of each spatial axis (0) */
  int64_t output_padding[MLC_GRAPH_MAX_WINDOW];
  bool ceil_mode;            /* max pools, avg pools (false) */
  /* avg pools: padding counts in the divisor (true), or only the input
   * elements under the window (false, the default) */
  bool count_include_pad;
  /* slice: along axis ints[i], elements starts[i], starts[i] + steps[i],
   * ... up to ends[i] (excluded), ONNX Slice semantics: negative starts
   * and ends count from the end, both are clamped to the axis; steps
   * nonzero, negative walks backwards. Axes not listed are kept whole. */
  int64_t starts[MLC_GRAPH_MAX_DIMS], ends[MLC_GRAPH_MAX_DIMS], steps[MLC_GRAPH_MAX_DIMS];
  /* pad: elements added before and after axis d, pad_before[d] and
   * pad_after[d] for d < n_pads (the operand's rank); negative removes
   * elements, as ONNX Pad (mode constant) does; the new ones are pad_value
   * (0). */
  int64_t pad_before[MLC_GRAPH_MAX_DIMS], pad_after[MLC_GRAPH_MAX_DIMS];
  int n_pads;
  double pad_value;
  int n_ints;      /* transpose: axes (empty: reverse); reshape: new shape;
                    * reduce_*: the axes reduced (negative from the end);
                    * slice: the axes sliced */
  int64_t ints[MLC_GRAPH_MAX_DIMS];
  /* The scalar attributes: graph/attrs.def. */
#define MLC_GATTR(field, key, kind, def) MLC_GATTR_TYPE_##kind field;
#include "graph/attrs.def"
} mlc_gattrs;

typedef enum mlc_gcall_kind {
  MLC_GCALL_OP,   /* a high-level op */
  MLC_GCALL_FUNC, /* a call into a primitive sub-function */
  MLC_GCALL_TIR,  /* R.call_tir(prim_func, args), destination-passing */
  /* R.call_dps_packed("func", args): the C function
   *   int32_t func(const float *in0, ..., const float *inN-1, float *out);
   * over float32 row-major contiguous buffers of the args' and the
   * binding's (fixed) shapes; it writes every element of out and returns 0,
   * nonzero for a failure. Only in main. */
  MLC_GCALL_EXTERN,
} mlc_gcall_kind;

/* Most inputs a call_extern takes. */
#define MLC_GRAPH_MAX_EXTERN_ARGS 8

typedef struct mlc_gfunc mlc_gfunc;

typedef struct mlc_gbinding {
  mlc_gvar *var; /* what the binding defines */
  mlc_gcall_kind kind;
  mlc_gop op;            /* OP */
  mlc_gattrs attrs;      /* OP */
  mlc_gfunc *callee;     /* FUNC */
  mlc_prim_func *tir;    /* TIR: params are the args, then the output */
  const char *extern_func; /* EXTERN: the C function's name (a C identifier) */
  int n_args;
  mlc_gvar **args;
} mlc_gbinding;

struct mlc_gfunc {
  const char *name;
  bool primitive; /* a fused sub-function (R.func_attr({"Primitive": 1})) */
  int n_params;
  mlc_gvar **params;
  int n_bindings;
  mlc_gbinding *bindings; /* dataflow order */
  int n_outputs;
  mlc_gvar **outputs; /* primitive functions: exactly one */
};

typedef struct mlc_gmodule {
  mlc_arena *arena;
  const char *name; /* model name, prefix of emitted symbols */
  int n_funcs;
  mlc_gfunc **funcs; /* sub-functions in creation order, main last */
  int n_consts;
  mlc_gvar **consts;
  mlc_module *tir; /* prim_funcs the module calls */
  /* Most ops the fuse pass puts in one sub-function; 0: no limit beyond
   * MLC_GRAPH_FUSE_MAX. 2 gives the notes' MatmulAddFusor groups
   * (fused_matmul_add0/1, relu on its own). */
  int fuse_max_ops;
  /* The addresses of the C functions call_extern bindings call, for
   * running the model in-process (mlc_graph_define_extern); the emitted
   * entry calls them by name instead. */
  int n_externs;
  struct mlc_gextern *externs;
  /* Model inputs read as gather indices (an embedding's token ids): each
   * element must be in [-n, n), checked before any kernel runs
   * (mlc_graph_check_inputs; the emitted entry's own check). Found by
   * mlc_graph_run_pipeline before its passes. */
  int n_index_checks;
  struct mlc_gindex_check *index_checks;
  /* A module built for every size of some input dimensions
   * (mlc_graph_generalize): the sizes, which main's params and outputs
   * have their extents of (mlc_gvar.dims), and which its kernels of size
   * vars take by name; every other value holds its extents at the bounds.
   * 0: a module of fixed shapes. */
  int n_sizes;
  struct mlc_gsize *sizes;
} mlc_gmodule;

/* A size of a module: its name (an input dimension's, as --dim names it)
 * and bounds, lo <= size <= hi. */
typedef struct mlc_gsize {
  const char *name;
  int64_t lo, hi;
} mlc_gsize;

typedef struct mlc_gindex_check {
  int param;         /* main's param */
  int64_t n;         /* the rows of the gathered axis */
  const char *node;  /* the gather's result, for messages */
} mlc_gindex_check;

typedef struct mlc_gextern {
  const char *name;
  void *fn; /* int32_t name(const float *, ..., float *) */
  /* Calls made in-process and the seconds they took (mlc-compile
   * --report); the caller may reset them. */
  int64_t calls;
  double sec;
} mlc_gextern;
#define MLC_GRAPH_FUSE_MAX 16

mlc_gmodule *mlc_graph_new(const char *name);
void mlc_graph_free(mlc_gmodule *m);
mlc_gfunc *mlc_graph_main(const mlc_gmodule *m);
mlc_gfunc *mlc_graph_find_func(const mlc_gmodule *m, const char *name);

/* Output type of op over args (broadcasting, window sizes, reshape
 * counts); false with a message naming the op and the bad operand. */
bool mlc_gop_infer(mlc_gop op, const mlc_gattrs *attrs, int n, const mlc_gtype *args,
                   mlc_gtype *out, mlc_error *err);
void mlc_gattrs_default(mlc_gattrs *a);
/* slice along axis d of x: the first element, the step and the count
 * (after normalizing and clamping); false for a zero step. */
bool mlc_gop_slice_axis(const mlc_gattrs *at, const mlc_gtype *x, int d, int64_t *start,
                        int64_t *step, int64_t *count);
/* red[d]: whether a reduce_* op reduces axis d of an ndim-d operand;
 * false with a message for an axis out of range or repeated. */
bool mlc_gop_reduced_axes(mlc_gop op, const mlc_gattrs *at, int ndim, bool *red, mlc_error *err);
/* mlc_gattrs_default, then op's own defaults where they differ
 * (hard_sigmoid: alpha 0.2, beta 0.5; its ops.def keys " alpha=0.2 beta=0.5 "). */
void mlc_gattrs_init(mlc_gop op, mlc_gattrs *a);
/* The element count; -1 when a dimension is negative or the product
 * overflows int64 (a .npy header can claim any shape). */
int64_t mlc_gtype_numel(const mlc_gtype *t);
bool mlc_gtype_equal(const mlc_gtype *x, const mlc_gtype *y);
bool mlc_gshape_equal(const mlc_gtype *x, const mlc_gtype *y); /* dtypes aside */
/* Whether t is a dtype graph values may have; by name ("int64"); the
 * list for messages. */
bool mlc_graph_dtype_ok(mlc_dtype t);
bool mlc_graph_dtype_from_name(const char *s, mlc_dtype *out);
const char *mlc_graph_dtype_names(void);
/* The bytes of t's elements (numel times the dtype's size; -1 as numel). */
int64_t mlc_gtype_bytes(const mlc_gtype *t);
/* The bytes one run of m's main touches: its constants (the weights),
 * inputs and outputs, and the workspace of its intermediates as the
 * emitted entry lays it out (mlc-tune --cache auto weighs it against the
 * last-level cache); -1 when a size is not known. */
int64_t mlc_graph_run_bytes(const mlc_gmodule *m);
/* Whether any function of m quantizes (a quantize op). Such a model's
 * outputs follow its summation orders at quantization boundaries: a sum a
 * rounding apart from the reference's lands one step apart once quantized,
 * and the step spreads through the layers after it. Its outputs are
 * checked against the plain C reference with an atol (a share of the
 * largest |value|, as mlc_check_close takes it) of MLC_GRAPH_QUANT_ATOL:
 * a few steps of 8-bit values, far below what a wrong kernel gives. */
bool mlc_graph_is_quantized(const mlc_gmodule *m);
#define MLC_GRAPH_QUANT_ATOL (1.0 / 16)

/* Element k of data holding graph dtype t's C type, as a double (exact
 * up to 2^53 for integers). */
double mlc_gdata_get(mlc_dtype t, const void *data, int64_t k);

/* Checks every function: vars defined before use, names unique, op types
 * as inferred, calls matching their callee's parameters and result, call_tir
 * prim_funcs present in m->tir with matching buffers (and each verified),
 * primitive functions calling no functions, outputs defined. */
bool mlc_graph_verify(const mlc_gmodule *m, mlc_error *err);

/* Relax-like text (@I.ir_module class Module: @R.function def ...).
 * flags: MLC_GRAPH_PRINT_TIR also prints the prim_funcs (TVMScript). */
enum { MLC_GRAPH_PRINT_TIR = 1 };
void mlc_graph_print(mlc_str *out, const mlc_gmodule *m, int flags);

/* ---- building a graph ----------------------------------------------------
 *
 * What the importers (frontend/: model JSON, ONNX; later the Python fx
 * translator) build a module with: mlc_graph_new, then per function
 * mlc_gfunc_new, its params and constants with mlc_gvar_new (a constant
 * also goes into m->consts, its data in m's arena), its bindings with
 * mlc_gfunc_set_bindings (args from mlc_gvars_dup), mlc_graph_add_func;
 * then mlc_graph_verify. Everything is allocated in m's arena. */

mlc_gvar *mlc_gvar_new(mlc_gmodule *m, const char *name, mlc_gvar_kind kind, const mlc_gtype *t);
mlc_gfunc *mlc_gfunc_new(mlc_gmodule *m, const char *name, bool primitive);
void mlc_graph_add_func(mlc_gmodule *m, mlc_gfunc *f);
void mlc_gfunc_set_bindings(mlc_gmodule *m, mlc_gfunc *f, int n, const mlc_gbinding *bs);
mlc_gvar **mlc_gvars_dup(mlc_gmodule *m, int n, mlc_gvar *const *vs);
int mlc_gfunc_uses(const mlc_gfunc *f, const mlc_gvar *v);
int mlc_gfunc_def(const mlc_gfunc *f, const mlc_gvar *v);
bool mlc_gfunc_is_output(const mlc_gfunc *f, const mlc_gvar *v);
/* A binding that stays a view after lowering: a reshape or flatten in a
 * function that is not primitive (main), whose result is not an output.
 * It runs no kernel: its value is its operand's memory, the same
 * elements in the same order (mlc_gfunc_storage). */
bool mlc_gbinding_is_view(const mlc_gfunc *f, const mlc_gbinding *b);
/* Whether b is an append (op or its lowered call): its kernel writes only
 * the rows after args[0]'s, and whoever runs it first copies args[0] into
 * the start of the result unless both are the same memory. */
bool mlc_gbinding_appends(const mlc_gbinding *b);
/* The value whose memory holds v: v, or what the views defining v view. */
const mlc_gvar *mlc_gfunc_storage(const mlc_gfunc *f, const mlc_gvar *v);
void mlc_gtype_str(const mlc_gtype *t, char *buf, size_t n);

/* The attribute keys a JSON node of op may carry, " key key=default "
 * (ops.def's keys column). */
const char *mlc_gop_keys(mlc_gop op);
bool mlc_gop_has_key(mlc_gop op, const char *key);
/* The next word of a keys string at *p: its key into key and the default
 * after '=' into def ("" when none), n bytes each; false at the end. */
bool mlc_gop_key_next(const char **p, char *key, char *def, size_t n);

/* The scalar attributes (graph/attrs.def): JSON key, kind and the field's
 * offset in mlc_gattrs, aliases included, in the file's order. */
typedef enum mlc_gattr_kind {
  MLC_GATTR_NUMBER,
  MLC_GATTR_POSITIVE,
  MLC_GATTR_AXIS,
  MLC_GATTR_INT,
  MLC_GATTR_BOOL,
  MLC_GATTR_DTYPE,
} mlc_gattr_kind;
typedef struct mlc_gattr {
  const char *key;
  mlc_gattr_kind kind;
  size_t offset;
} mlc_gattr;
extern const mlc_gattr mlc_gattr_table[];
extern const int mlc_gattr_count;
const mlc_gattr *mlc_gattr_find(const char *key); /* NULL: not a scalar attribute */
/* The field of g in attributes a, as its kind's C type (MLC_GATTR_TYPE_*). */
#define MLC_GATTR_REF(a, g, type) (*(type *)((char *)(a) + (g)->offset))
#define MLC_GATTR_GET(a, g, type) (*(const type *)((const char *)(a) + (g)->offset))

/* A map from pointers (strings false) or strings (true, compared by
 * content) to ints, in arena a (graph/gmap.c); keys must outlive it.
 *   mlc_gmap used = {.a = arena};  mlc_gmap_put(&used, v, 1);  mlc_gmap_get(&used, v, NULL) */
typedef struct mlc_gmap {
  mlc_arena *a;
  bool strings;
  const void **keys; /* NULL: an empty slot */
  int *vals;
  int cap, len;
} mlc_gmap;
void mlc_gmap_put(mlc_gmap *g, const void *key, int val);
bool mlc_gmap_get(const mlc_gmap *g, const void *key, int *val); /* val may be NULL */

/* Dead-code removal without the verifier (dce.c): mlc_gfunc_remove_unused
 * drops f's bindings whose result nothing uses; mlc_graph_remove_unused
 * does that for every function, then drops unused sub-functions,
 * prim_funcs and constants. */
void mlc_gfunc_remove_unused(mlc_gmodule *m, mlc_gfunc *f);
void mlc_graph_remove_unused(mlc_gmodule *m);

/* A new constant of type t named base (or base_1, ... when taken), its
 * data allocated (uninitialised) in m's arena, appended to m->consts
 * (fold.c). */
mlc_gvar *mlc_graph_const_new(mlc_gmodule *m, const char *base, const mlc_gtype *t);

/* Evaluate one op binding in plain C (ref.c): in[i] holds arg i's
 * elements, y gets the result's, each in its dtype's C type. Its scratch
 * (the values as doubles, accumulators) comes from `scratch`, so under
 * its escape point running out is an error; NULL: from the heap,
 * aborting when that runs out. */
void mlc_graph_eval_op(mlc_arena *scratch, const mlc_gbinding *b, const void *const *in, void *y);

/* Whether name may be a call_extern function of m (extern.c): a C
 * identifier the emitted code does not use itself; false with why. */
bool mlc_graph_extern_name_ok(const mlc_gmodule *m, const char *name, mlc_error *err);

/* ---- passes (each runs mlc_graph_verify after itself) -------------------- */

typedef struct mlc_gpass {
  const char *name; /* for --print-after */
  const char *help;
  bool (*run)(mlc_gmodule *m, mlc_error *err);
} mlc_gpass;

int mlc_graph_pass_count(void);
const mlc_gpass *mlc_graph_pass_at(int i);
const mlc_gpass *mlc_graph_pass_find(const char *name);

/* Exporters' decompositions back into one op: the layer norm pattern
 * (reduce_mean over trailing axes, subtract, power 2, reduce_mean, add eps,
 * sqrt, divide, multiply by gamma[, add beta]) -> layernorm, the erf GELU
 * (x * 0.5 * (1 + erf(x / sqrt(2))), products in any order) -> gelu.
 * Only where the intermediates have no other use. */
bool mlc_graph_rewrite_patterns(mlc_gmodule *m, mlc_error *err);
bool mlc_graph_rewrite_fma(mlc_gmodule *m, mlc_error *err);
bool mlc_graph_quantize(mlc_gmodule *m, mlc_error *err);
/* Ops over constants only are evaluated now into new constants (weights
 * transposed once at compile time); unused weights are dropped. */
bool mlc_graph_fold_constants(mlc_gmodule *m, mlc_error *err);
/* conv2d weights that are constants packed into the blocked
 * layout [K/k, C/c, R, S, c, k] (a 6-d weight is a conv2d's packed form),
 * lowered to the NCHWc kernel (the conv2d_nchwc task's blocks); dense
 * weights that are constants [N, K], N a multiple of 16 or 8, packed into
 * [N/n, K, n] (a 3-d weight is a dense's packed form; the result stays
 * [M, N]), lowered to a block that writes T_dense[i, jb * n + jl] and gets
 * the CPU register tile. A matmul by a constant [K, N] weight with N
 * not a multiple of 16 (N >= 64) becomes two matmuls, of the first
 * N - N % 16 columns and of the rest, and their concat, so that nearly
 * all of it gets the register tile. */
bool mlc_graph_pack_weights(mlc_gmodule *m, mlc_error *err);
bool mlc_graph_fuse(mlc_gmodule *m, mlc_error *err);
/* A concat in main of a model input and other rows into a model output
 * (the extents before the axis 1) -> append (ops.def): the caller may pass
 * the output's memory as the input, which is then extended in place. */
bool mlc_graph_append_in_place(mlc_gmodule *m, mlc_error *err);
bool mlc_graph_lower(mlc_gmodule *m, mlc_error *err);
bool mlc_graph_fuse_tir(mlc_gmodule *m, mlc_error *err);
bool mlc_graph_dce(mlc_gmodule *m, mlc_error *err);

/* Runs every pass in order; after the pass named print_after (NULL: none)
 * calls show(m, pass, ud). Running out of memory is an error ("out of
 * memory"); after any error m is only fit for mlc_graph_free. */
bool mlc_graph_run_pipeline(mlc_gmodule *m, const char *print_after,
                            void (*show)(const mlc_gmodule *m, const char *pass, void *ud),
                            void *ud, mlc_error *err);

/* ---- tasks ---------------------------------------------------------------- */

/* The distinct prim_funcs main calls (by structural hash), each with how
 * often it is called; after lowering. */
typedef struct mlc_gtask {
  mlc_prim_func *func; /* the first one called */
  uint64_t hash;
  int calls;
} mlc_gtask;
int mlc_graph_extract_tasks(const mlc_gmodule *m, mlc_gtask **out); /* mlc_free(*out) */
/* A copy of a task's prim_func named "main", as tasks are tuned and
 * stored (mlc-tune, mlc-compile --dump-tasks). */
mlc_prim_func *mlc_graph_task_func(mlc_arena *a, const mlc_gtask *t);
/* The tasks as the task scheduler takes them (tuner/tuner.h,
 * mlc_tuner_schedule_tasks): named by their symbol ("mlp_fused_matmul_add1"),
 * the task_func copy, weight = calls; all in arena a. Returns the count.
 * A kernel of size vars (a module of sizes) is tuned as its
 * specializations: at 1, 16, 128 and its bound for one size var
 * (mlc_size_samples), else at every size's bound, each a task of shape
 * "seq=16", as mlc-compile looks its records up. */
struct mlc_tuner_task;
int mlc_graph_tuner_tasks(mlc_arena *a, const mlc_gmodule *m, struct mlc_tuner_task **out);

/* ---- sizes (sizes.c) ------------------------------------------------------ */

/* The module (after mlc_graph_run_pipeline) at the given values of the
 * sizes, one per size; NULL with err set. */
typedef mlc_gmodule *(*mlc_ginstance_fn)(void *ud, const int64_t *values, mlc_error *err);
/* One module for every size in the bounds: made by `make` at a few sizes
 * (every size at its bound, each alone at the middle of its range, all at
 * their least from 2; a range needs 3 values from 2 up), which must be one
 * graph up to the sizes: its kernels become functions of size vars
 * (mlc_func_generalize), main's params and outputs get dims, a constant
 * whose shape changes with the sizes must be the leading block of its
 * value at the bounds. The result is the instance at the bounds (its memory
 * plan serves every size), with n_sizes set. NULL with a message naming
 * what differs between the instances or does not fit. */
mlc_gmodule *mlc_graph_generalize(int n_sizes, const mlc_gsize *sizes, mlc_ginstance_fn make,
                                  void *ud, mlc_error *err);
/* Whether name may name a size: a C identifier the emitted entry does not
 * use itself (it is the entry's parameter); false with why. */
bool mlc_gsize_name_ok(const char *name, mlc_error *err);
/* The value of d at the sizes (m->n_sizes of them). */
int64_t mlc_gdim_at(const mlc_gmodule *m, const mlc_gdim *d, const int64_t *sizes);
/* v's extents at the sizes (sizes NULL, or v without dims: its type's). */
void mlc_gvar_shape_at(const mlc_gmodule *m, const mlc_gvar *v, const int64_t *sizes,
                       int64_t *shape);
/* Whether every size lies in its bounds; false with a message naming it. */
bool mlc_graph_sizes_ok(const mlc_gmodule *m, const int64_t *sizes, mlc_error *err);
/* The sizes main's inputs give by their shapes (inputs[i] for param i), each
 * input then checked to have the shape those sizes give it. */
bool mlc_graph_sizes_of(const mlc_gmodule *m, mlc_array *const *inputs, int64_t *sizes,
                        mlc_error *err);

/* ---- replay -------------------------------------------------------------- */

struct mlc_db;

/* What to compile for one kernel. */
typedef struct mlc_gkernel {
  const mlc_prim_func *func;  /* the graph's prim_func */
  const mlc_prim_func *sched; /* what to compile (named like func) */
  int64_t record_id;          /* the replayed record; 0: untuned */
  double record_sec;          /* its mean time per call */
  char note[512];             /* why the best record was not used, or "" */
  char tuned_at[64];          /* a kernel of size vars: the sizes its records were
                                 tuned at ("n=128", "n=1,16,128"), or "" */
  /* Library offload (mlc-tune --library): the library the replayed record
   * calls ("": a compiled loop nest), and the best successful library and
   * tuned records of the workload (0: none), which --report compares. */
  char library[32];
  char offer_library[32];     /* the library record's library */
  double library_sec, tuned_sec;
} mlc_gkernel;

/* Looks up f's best record for target in db (NULL: none; schedule false:
 * no lookup, f unscheduled), replays its trace on the stored workload IR
 * and names the result like f; a record whose replay fails or is not its
 * stored sched_hash, or that has no sched_hash, is skipped for the next
 * best (out->note says why); without one, the default schedule. A kernel
 * of size vars without records of its own takes the records of the sizes
 * it was tuned at (workloads that are its specializations, shape
 * "n=128;m=4" as mlc-tune --size stores them) whose traces replay on it:
 * with one size var, each serves the sizes up to its own
 * (mlc_func_select_by_size) and the default schedule those above the
 * largest (when below the bound), else the largest sizes' serves all
 * (out->tuned_at names them). Traces replay on the kernel through
 * mlc_tuner_replay_sized. False only for a database error. */
bool mlc_graph_schedule_kernel(mlc_arena *a, struct mlc_db *db, const char *target,
                               const mlc_prim_func *f, bool schedule, mlc_gkernel *out,
                               mlc_error *err);

/* ---- compiling ----------------------------------------------------------- */

struct mlc_target;
struct mlc_object;

/* How mlc_graph_compile schedules and builds. Zero is the default: the
 * default schedule for every kernel. */
typedef struct mlc_gcompile_options {
  struct mlc_db *db;       /* an open database (borrowed), or NULL: ... */
  const char *db_path;     /* ... opened here when set: a file that does not exist means
                            * every kernel untuned; a server's database must be there */
  bool no_schedule;        /* compile every kernel unscheduled (no lookup) */
  bool with_weights;       /* put the module's weights into the object's .rodata under
                            * mlc_graph_weight_symbol (what mlc_graph_write_entry declares) */
  const char *symbol_prefix; /* "<prefix>_" before each kernel symbol, or NULL */
} mlc_gcompile_options;

/* A compiled module: per kernel what was chosen, and one object. Owns its
 * memory (mlc_gcompiled_free); plain arrays of n, so a ctypes wrapper can
 * read it. */
typedef struct mlc_gcompiled {
  int n;                        /* kernels (the module's prim_funcs, in order) */
  const mlc_prim_func **src;    /* the unscheduled kernels */
  const mlc_prim_func **sched;  /* what was compiled */
  const char **symbols;         /* their symbols in obj */
  mlc_gkernel *info;            /* record or untuned; info[i].note: a skipped record */
  /* info[i].note as scheduling left it (the records skipped), or NULL;
   * a fallback later sets the note to "its schedule did not build". */
  const char **skipped;
  /* Why kernel i's schedule did not build ("the replayed record did not
   * build (why)"), so it was compiled unscheduled; NULL when it built. */
  const char **fallback;
  int *calls;                   /* how many bindings of main call kernel i (1 for kernels) */
  int n_scheduled;              /* kernels whose info is filled (n unless it failed) */
  bool gpu;                     /* a cuda target: untuned kernels got the GPU default schedule */
  struct mlc_object *obj;       /* the built object (an mlc_object of targets/targets.h) */
  mlc_arena *arena;
} mlc_gcompiled;

/* Compile m (after mlc_graph_run_pipeline) for target t: each prim_func
 * gets mlc_graph_schedule_kernel's choice from o->db (a cuda target's
 * untuned kernels mlc_tuner_gpu_default_schedule, or an error naming the
 * kernel), then all are built into one object; when a scheduled kernel
 * does not build on the CPU, it is compiled unscheduled (fallback[i] says
 * why) and the object built again. Symbols: mlc_graph_symbol. On failure
 * out keeps what it got (n_scheduled) and must still be freed. */
bool mlc_graph_compile(const mlc_gmodule *m, const struct mlc_target *t,
                       const mlc_gcompile_options *o, mlc_gcompiled *out, mlc_error *err);
/* The same for n lone kernels (mlc-compile --task) under the given symbols
 * (o->with_weights and symbol_prefix do not apply). */
bool mlc_graph_compile_kernels(int n, const mlc_prim_func *const *funcs,
                               const char *const *symbols, const struct mlc_target *t,
                               const mlc_gcompile_options *o, mlc_gcompiled *out,
                               mlc_error *err);
void mlc_gcompiled_free(mlc_gcompiled *c);

/* ---- running ------------------------------------------------------------- */

/* Runs one prim_func call: args are the call's args then its output. */
typedef bool (*mlc_gkernel_fn)(void *ud, const mlc_prim_func *f, int n, mlc_array *args,
                               mlc_error *err);

/* Run main after fuse_tir (every binding a call_tir or a call_extern) on
 * inputs (one per main param) into outputs (one per output,
 * preallocated). kernel NULL: the reference interpreter. call_extern
 * bindings call the functions defined for m (mlc_graph_define_extern). */
bool mlc_graph_execute(const mlc_gmodule *m, mlc_gkernel_fn kernel, void *ud,
                       mlc_array *const *inputs, mlc_array *const *outputs, mlc_error *err);
/* m->index_checks of main (before lowering: gathers whose indices are
 * a param, or a reshape of one); mlc_graph_run_pipeline calls it. */
void mlc_graph_find_index_checks(mlc_gmodule *m);
/* Fill x, main's input param, from seed as a run without input files
 * does: mlc_array_fill_random, except that gather indices
 * (m->index_checks) are drawn from the rows of the smallest table they
 * index, so that a seeded run of a language model takes valid token ids. */
void mlc_graph_seed_input(const mlc_gmodule *m, int param, mlc_array *x, uint64_t seed);
/* The inputs against m->index_checks: false naming the input, the
 * element, its value and the gather (mlc_graph_execute checks first). */
bool mlc_graph_check_inputs(const mlc_gmodule *m, mlc_array *const *inputs, mlc_error *err);

/* The in-process runner: c (mlc_graph_compile of m, CPU target, weights
 * in the object or not) loaded into the JIT and run as the emitted entry
 * runs it (mlc_graph_write_entry: one workspace, the same memory plan,
 * the index checks first), from raw data pointers, one per main param
 * and one per output, each contiguous in its var's dtype and shape:
 * nothing is copied. m (its weights) must outlive the runner, c need not.
 * One run at a time (one workspace).
 *
 *   mlc_grunner *r = mlc_graph_runner_new(m, &compiled, &err);
 *   void *in[1] = {x}, *out[1] = {y};
 *   if (!mlc_graph_runner_run(r, in, out, &err)) ...   // err: the bad input or kernel
 *   mlc_graph_runner_free(r);
 */
typedef struct mlc_grunner mlc_grunner;
mlc_grunner *mlc_graph_runner_new(const mlc_gmodule *m, const mlc_gcompiled *c, mlc_error *err);
bool mlc_graph_runner_run(mlc_grunner *r, void *const *inputs, void *const *outputs,
                          mlc_error *err);
/* The same for a module of sizes (m->n_sizes > 0), at the given sizes
 * (checked against their bounds): the inputs and outputs have the shapes
 * the sizes give them (mlc_gvar_shape_at). */
bool mlc_graph_runner_run_at(mlc_grunner *r, const int64_t *sizes, void *const *inputs,
                             void *const *outputs, mlc_error *err);
int64_t mlc_graph_runner_workspace_bytes(const mlc_grunner *r);
void mlc_graph_runner_free(mlc_grunner *r);
/* Profiling: while on, each run adds each call's wall time (an append's
 * copy of its input included); turning it on starts from zero. _get
 * fills out (at most max) per kernel: its calls in one run and their
 * seconds per run, averaged over the runs since it was turned on, in the
 * order of the first call; returns how many. */
typedef struct mlc_gprofile {
  const char *symbol; /* the kernel's (an extern call: its function's) */
  int calls;
  double seconds;
} mlc_gprofile;
void mlc_graph_runner_profile(mlc_grunner *r, bool on);
int mlc_graph_runner_profile_get(const mlc_grunner *r, mlc_gprofile *out, int max);

/* ---- generation with a KV cache (generate.c) ---------------------------------------------- */
/* Greedy decoding from two modules of one size each, compiled and loaded
 * into runners (both must outlive the generator): prefill (input_ids
 * int64 [1, seq] -> logits float32 [1, seq, vocab], then the caches
 * [1, seq, ...]) and the decode step (input_ids and position_ids [1, 1]
 * and the caches [1, past, ...] -> logits [1, 1, vocab] and the caches
 * appended in place, mlc_gbinding_appends, in prefill's order): what
 * examples/lm_models.py's export_generation writes. The generator owns a
 * buffer per cache for the step's bound; a run allocates and copies
 * nothing per step. NULL with why the modules do not fit.
 *
 *   mlc_ggen *g = mlc_graph_generator_new(pre, pre_runner, step, step_runner, &err);
 *   mlc_graph_generate(g, prompt, 128, 64, tokens, NULL, &stats, &err);
 */
typedef struct mlc_ggen mlc_ggen;
typedef struct mlc_ggen_stats {
  double prefill_s, decode_s; /* wall time of prefill, of every decode step together */
  int64_t n_prompt, n_decoded;
} mlc_ggen_stats;
mlc_ggen *mlc_graph_generator_new(const mlc_gmodule *prefill, mlc_grunner *pr,
                                  const mlc_gmodule *step, mlc_grunner *sr, mlc_error *err);
/* n_tokens token ids after the prompt into tokens: the first from
 * prefill's last logits, each next from a decode step of the one before
 * (n_tokens - 1 steps); logits (NULL: not kept) gets the n_tokens rows of
 * vocab they were chosen from. A prompt or length outside the modules'
 * bounds is refused before anything runs. */
bool mlc_graph_generate(mlc_ggen *g, const int64_t *prompt, int64_t n_prompt, int64_t n_tokens,
                        int64_t *tokens, float *logits, mlc_ggen_stats *st, mlc_error *err);
int64_t mlc_graph_generator_vocab(const mlc_ggen *g);
/* The longest prompt prefill takes; the most positions (prompt and
 * generated tokens but the last) the caches hold. */
void mlc_graph_generator_bounds(const mlc_ggen *g, int64_t *max_prompt, int64_t *max_len);
void mlc_graph_generator_free(mlc_ggen *g);


/* mlc-compile --verify: run f's compiled kernel (run(ud, f, ...), as
 * mlc_graph_execute calls it) and the interpreter on f itself, each on the
 * same inputs (every parameter filled from seed); false with a message
 * giving the parameter and the max error when a result differs. */
bool mlc_graph_check_kernel(const mlc_prim_func *f, mlc_gkernel_fn run, void *ud, uint64_t seed,
                            mlc_error *err);

/* Reference run of the graph *before lowering* by a plain C evaluation of
 * each op (graph/ref.c): the independent check of the compiled model.
 * call_extern bindings call the functions defined for m. */
bool mlc_graph_reference(const mlc_gmodule *m, mlc_array *const *inputs,
                         mlc_array *const *outputs, mlc_error *err);

/* ---- external functions ----------------------------------------------------- */

/* call_extern bindings run in-process (mlc_graph_execute,
 * mlc_graph_reference) through the addresses defined here; a binding
 * whose function has none fails with a message naming its node. */
bool mlc_graph_define_extern(mlc_gmodule *m, const char *name, void *fn, mlc_error *err);
/* The distinct functions m's call_extern bindings call (in main's order,
 * strings in m's arena); returns the count. */
int mlc_graph_extern_names(const mlc_gmodule *m, const char ***names);
/* Each of those looked up (dlsym) in the shared objects libs[0..n), which
 * stay loaded for the rest of the process, and defined; false with a
 * message naming the node, the function and the libraries when one
 * defines none, or when a library does not load. */
bool mlc_graph_load_externs(mlc_gmodule *m, int n, const char *const *libs, mlc_error *err);

/* ---- emitting ------------------------------------------------------------ */

/* The C header part that runs the model through the kernels of the object:
 * the weights declared `extern const float <name>_w_<const>[N];` (the
 * object defines them: mlc-compile builds it with every const's data under
 * mlc_graph_weight_symbol), <name>_WORKSPACE_FLOATS,
 * <name>_run_ws(inputs..., outputs..., float *workspace) and
 * <name>_run(inputs..., outputs...) (workspace on the heap); for one input
 * and one output that is <name>_run(const float *input, float *output).
 * The C functions of call_extern bindings are declared
 * `int32_t func(const float *in0, ..., float *out);` (with the shapes in a
 * comment) and called directly: the program links its own definitions; a
 * nonzero return makes the entry return -1.
 * Kernel symbols are "<name>_<prim_func>"; kernel declarations come from
 * mlc_target_write_header and are written by the caller first. */
void mlc_graph_write_entry(mlc_str *out, const mlc_gmodule *m);
/* The files of a compiled module (mlc-compile -o/--header, mlc_model_export):
 * the object at path (a cuda target: the host object with the launchers
 * of k's PTX), and the header into h: the kernels' declarations
 * (mlc_target_write_header, or mlc_cuda_write_header), with m (NULL for
 * lone kernels) the model's entry (mlc_graph_write_entry), and a comment
 * naming the kernels that call a library and how to link them. */
bool mlc_graph_write_object(const char *path, const struct mlc_target *t, const mlc_gcompiled *k,
                            mlc_error *err);
bool mlc_graph_write_header(mlc_str *h, const struct mlc_target *t, const mlc_gcompiled *k,
                            const mlc_gmodule *m, mlc_error *err);
/* The kernels whose records call a library (mlc-tune --library), their
 * symbols ", "-joined into names; the library's name, or NULL for none;
 * and the line that says how to link a program that has them. */
const char *mlc_graph_library_calls(const mlc_gcompiled *k, mlc_str *names);
const char *mlc_graph_library_link(void);
/* The symbol of a weight's array in the object: "<model>_w_<const>". */
const char *mlc_graph_weight_symbol(mlc_arena *a, const mlc_gmodule *m, const mlc_gvar *c);
/* The symbol of a kernel as emitted: "<model>_<func>". */
const char *mlc_graph_symbol(mlc_arena *a, const mlc_gmodule *m, const mlc_prim_func *f);

#endif
