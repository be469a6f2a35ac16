/* ir: the tensor IR (TensorIR-like loop nests with blocks).
 *
 * A program is an mlc_module of mlc_prim_funcs. A function's body is the
 * realize of its root block ("root", no iter vars) whose alloc_buffers are
 * the function's intermediate buffers. Blocks carry iter vars (spatial or
 * reduce) bound to loop-variable expressions, read/write regions, an
 * optional init statement and annotations.
 *
 * Every node lives in an mlc_arena; nothing is freed piecewise. Vars and
 * buffers are compared by pointer: a name is only for printing.
 *
 *   mlc_arena *a = mlc_arena_new();
 *   mlc_module *m = mlc_parse_module(a, "mm.py", text, &err);   // TVMScript
 *   mlc_print_module(&out, m);                                  // back to text
 *   mlc_verify_func(m->funcs[0], &err);
 *   mlc_interp_run(m->funcs[0], args, &err);                    // reference run
 *   mlc_arena_free(a);
 *
 * Sub-parts, each in its own file: constructors (ir.c), TE-like builder
 * (builder.c), printer (print.c), parser (parse.c), verifier (verify.c),
 * simplifier (simplify.c), region analysis (region.c), structural hash and
 * equality (struct_eq.c), copy/substitute (copy.c), interpreter (interp.c),
 * size vars (sizes.c).
 */
#ifndef MLC_IR_H
#define MLC_IR_H

#include "base/base.h"

/* ---- kinds ---------------------------------------------------------- */

typedef enum mlc_dtype {
#define MLC_DTYPE(id, name, bits, fl, in) MLC_##id,
#include "ir/ir_kinds.def"
} mlc_dtype;
/* Counted outside the enum so switches need no default. */
enum { MLC_DTYPE_COUNT = 0
#define MLC_DTYPE(id, name, bits, fl, in) +1
#include "ir/ir_kinds.def"
};

typedef enum mlc_expr_kind {
#define MLC_EXPR(id, name) MLC_EXPR_##id,
#include "ir/ir_kinds.def"
} mlc_expr_kind;
/* Counted outside the enum so switches need no default. */
enum { MLC_EXPR_KIND_COUNT = 0
#define MLC_EXPR(id, name) +1
#include "ir/ir_kinds.def"
};

typedef enum mlc_stmt_kind {
#define MLC_STMT(id, name) MLC_STMT_##id,
#include "ir/ir_kinds.def"
} mlc_stmt_kind;
/* Counted outside the enum so switches need no default. */
enum { MLC_STMT_KIND_COUNT = 0
#define MLC_STMT(id, name) +1
#include "ir/ir_kinds.def"
};

typedef enum mlc_for_kind {
#define MLC_FOR_KIND(id, script) MLC_FOR_##id,
#include "ir/ir_kinds.def"
} mlc_for_kind;
/* Counted outside the enum so switches need no default. */
enum { MLC_FOR_KIND_COUNT = 0
#define MLC_FOR_KIND(id, script) +1
#include "ir/ir_kinds.def"
};

typedef enum mlc_intrin {
#define MLC_INTRIN(id, script, nargs) MLC_INTRIN_##id,
#include "ir/ir_kinds.def"
} mlc_intrin;
/* Counted outside the enum so switches need no default. */
enum { MLC_INTRIN_COUNT = 0
#define MLC_INTRIN(id, script, nargs) +1
#include "ir/ir_kinds.def"
};

typedef enum mlc_iter_kind {
  MLC_ITER_SPATIAL, /* "S": iterations independent */
  MLC_ITER_REDUCE,  /* "R": iterations accumulate into the same output */
} mlc_iter_kind;

const char *mlc_dtype_name(mlc_dtype t);            /* "float32" */
bool mlc_dtype_from_name(const char *s, mlc_dtype *out);
int mlc_dtype_bits(mlc_dtype t);
int mlc_dtype_bytes(mlc_dtype t);                   /* bool: 1 */
/* The C type of t's elements in emitted headers ("int64_t"; bool: "uint8_t"). */
const char *mlc_dtype_c_name(mlc_dtype t);
bool mlc_dtype_is_float(mlc_dtype t);
bool mlc_dtype_is_int(mlc_dtype t);                 /* (u)int8, int32/64 (not bool) */
const char *mlc_expr_kind_name(mlc_expr_kind k);
const char *mlc_stmt_kind_name(mlc_stmt_kind k);
const char *mlc_for_kind_name(mlc_for_kind k);      /* "serial", "unroll", ... */
const char *mlc_intrin_name(mlc_intrin op);         /* "exp" */
int mlc_intrin_nargs(mlc_intrin op);
bool mlc_intrin_from_name(const char *s, mlc_intrin *out);
/* Infix spelling and Python precedence of a binary kind; NULL/0 if the kind
 * does not print infix. */
const char *mlc_binop_symbol(mlc_expr_kind k);
int mlc_binop_precedence(mlc_expr_kind k);
bool mlc_expr_kind_is_binary(mlc_expr_kind k);      /* ADD..OR incl MIN/MAX */
bool mlc_expr_kind_is_compare(mlc_expr_kind k);     /* EQ..GE */

/* ---- nodes ---------------------------------------------------------- */

typedef struct mlc_expr mlc_expr;
typedef struct mlc_stmt mlc_stmt;
typedef struct mlc_block mlc_block;

typedef struct mlc_var {
  const char *name;
  mlc_dtype dtype; /* int32 for loop and iter vars unless written T.int64 */
} mlc_var;

/* A buffer's extents are static (shape) or, for a function that serves
 * many sizes, expressions of the function's size vars (dims): A of shape
 * (n, 128) has dims {n, 128} and shape {max n, 128}. Storage and layout of
 * an allocated buffer use shape, the bound; a parameter's layout is
 * row-major over its dims as the caller passes it. */
typedef struct mlc_buffer {
  const char *name;
  mlc_dtype dtype;
  int ndim;
  int64_t *shape;    /* extents, each >= 1; a symbolic extent's upper bound */
  mlc_expr **dims;   /* NULL: every extent static; else ndim int expressions
                        (constants where static) over the function's size vars */
  const char *scope; /* "global", "shared", "local", or e.g. "global.A_reg" */
} mlc_buffer;

/* A size of a function taken at run time (`n = T.int64(min=1, max=2048)`):
 * a var, int32 or int64, declared with its bounds lo <= n <= hi (a kernel
 * refuses a size outside them). */
typedef struct mlc_size_var {
  mlc_var *var;
  int64_t lo, hi;
} mlc_size_var;

typedef struct mlc_range {
  mlc_expr *min;
  mlc_expr *extent;
} mlc_range;

/* One argument of T.call_extern. Buffer pointers and strides may appear
 * only as direct arguments, so that every pass sees which part of a
 * buffer the external function touches:
 *   VALUE   any expression, passed by value (int or float)
 *   PTR     T.access_ptr(C[vi * 16:vi * 16 + 16, 0:16], "w"): the address
 *           of the region's first element; the function may touch the
 *           whole region (bounds checked, counted by region analysis and
 *           by lowering's compaction) as `access` says
 *   STRIDE  C.strides[d]: the element stride of dimension d in C's layout
 *           as the code runs (the declared row-major shape in the
 *           interpreter, the compacted one in generated code). */
typedef enum mlc_xarg_kind {
  MLC_XARG_VALUE,
  MLC_XARG_PTR,
  MLC_XARG_STRIDE,
} mlc_xarg_kind;

enum { MLC_ACCESS_READ = 1, MLC_ACCESS_WRITE = 2 };

typedef struct mlc_xarg {
  mlc_xarg_kind kind;
  mlc_buffer *buf; /* PTR, STRIDE */
  int access;      /* PTR: MLC_ACCESS_READ | MLC_ACCESS_WRITE bits */
  int dim;         /* STRIDE: 0 <= dim < buf->ndim */
  int kid;         /* VALUE: index of its expression in kids; PTR: index of its
                      region (buf->ndim mins, then buf->ndim extents) */
} mlc_xarg;

struct mlc_expr {
  mlc_expr_kind kind;
  mlc_dtype dtype; /* result type; comparisons and and/or/not are bool */
  union {
    int64_t int_val;   /* INT_IMM (also bool constants: 0/1) */
    double float_val;  /* FLOAT_IMM */
    mlc_var *var;      /* VAR */
    struct { mlc_expr *a, *b; } bin;               /* binary kinds; NOT uses a */
    struct { mlc_expr *cond, *t, *f; } sel;        /* SELECT, IF_THEN_ELSE */
    struct { mlc_buffer *buf; mlc_expr **indices; } load; /* buf->ndim indices */
    struct { mlc_expr *value; } cast;              /* to dtype */
    struct { mlc_intrin op; mlc_expr **args; } call; /* mlc_intrin_nargs(op) args */
    /* CALL_EXTERN: dtype is the C function's return type. Every
     * sub-expression is in kids (n_kids), so walkers treat them as one
     * list; args say how the call passes them. */
    struct {
      const char *name;
      int n_args;
      mlc_xarg *args;
      int n_kids;
      mlc_expr **kids;
    } ext;
  };
};


/* A rectangular part of a buffer: buf->ndim ranges. A point access has
 * extent 1 in every dimension. */
typedef struct mlc_region {
  mlc_buffer *buf;
  mlc_range *ranges;
} mlc_region;

typedef enum mlc_ann_kind {
  MLC_ANN_INT,
  MLC_ANN_FLOAT,
  MLC_ANN_STRING,
  MLC_ANN_BOOL,
  MLC_ANN_LIST, /* [v, ...]: items are values (their key NULL) */
  MLC_ANN_DICT, /* {"k": v, ...}: items are entries with distinct keys, in written order */
} mlc_ann_kind;

/* A key/value annotation on a block, loop or function. Values nest as
 * TVMScript writes them: T.block_attr({"buffer_dim_align": [[0, 0, 16, 8]]})
 * is one entry whose value is a LIST of LISTs of INTs. Structural equality
 * and hashing treat a DICT, like the annotation list itself, as a map (key
 * order ignored); a LIST is ordered. */
typedef struct mlc_ann {
  const char *key;       /* NULL for a list element */
  mlc_ann_kind kind;
  int64_t i;             /* INT, BOOL */
  double f;              /* FLOAT */
  const char *s;         /* STRING */
  int n;                 /* LIST, DICT: number of items */
  struct mlc_ann *items; /* LIST, DICT */
} mlc_ann;

typedef struct mlc_iter_var {
  mlc_var *var;
  mlc_range dom; /* usually min 0 */
  mlc_iter_kind kind;
} mlc_iter_var;

struct mlc_block {
  const char *name;
  int n_iters;
  mlc_iter_var *iters;
  int n_reads;
  mlc_region *reads; /* excludes a reduction's read of its own output */
  int n_writes;
  mlc_region *writes;
  int n_allocs;
  mlc_buffer **allocs; /* buffers local to this block (root: the function's) */
  int n_anns;
  mlc_ann *anns;
  mlc_stmt *init; /* NULL unless a reduction with T.init() */
  mlc_stmt *body;
};

struct mlc_stmt {
  mlc_stmt_kind kind;
  union {
    struct {
      mlc_var *var;
      mlc_expr *min;    /* usually int 0 */
      mlc_expr *extent;
      mlc_for_kind kind;
      const char *thread; /* THREAD_BINDING: "blockIdx.x", "threadIdx.y", "vthread.x" */
      int n_anns;
      mlc_ann *anns;
      mlc_stmt *body;
    } loop; /* FOR */
    struct {
      mlc_expr **values;  /* one per block iter var */
      mlc_expr *predicate; /* T.where; NULL means true */
      mlc_block *block;
    } realize; /* BLOCK_REALIZE */
    struct {
      int n;
      mlc_stmt **stmts;
    } seq; /* SEQ: n >= 2 after construction helpers flatten */
    struct {
      mlc_buffer *buf;
      mlc_expr **indices;
      mlc_expr *value;
    } store; /* STORE */
    struct {
      mlc_expr *cond;
      mlc_stmt *then_s;
      mlc_stmt *else_s; /* may be NULL */
    } if_; /* IF */
    struct {
      mlc_buffer *buf; /* scope says where; live within body */
      mlc_stmt *body;
    } alloc; /* ALLOCATE (T.decl_buffer; lowered forms) */
    struct {
      mlc_expr *value;
    } eval; /* EVALUATE */
  };
};

typedef struct mlc_prim_func {
  const char *name;
  int n_params;
  mlc_buffer **params; /* all parameters are buffers */
  int n_sizes;
  mlc_size_var *sizes; /* size vars, in declaration order; each is some
                          parameter's dim, bare or plus a constant, which
                          gives its value (mlc_size_in_extent) */
  int n_attrs;
  mlc_ann *attrs; /* T.func_attr, e.g. global_symbol, tir.noalias */
  mlc_stmt *body; /* BLOCK_REALIZE of the root block */
} mlc_prim_func;

typedef struct mlc_module {
  const char *name; /* class name for @I.ir_module; NULL: a bare prim_func file */
  int n_funcs;
  mlc_prim_func **funcs;
} mlc_module;

/* ---- constructors (ir.c) --------------------------------------------- */
/* All allocate in the arena. Binary constructors check operand dtypes agree
 * (MLC_ASSERT) except that an INT_IMM operand adopts the other side's int
 * dtype and a FLOAT_IMM adopts the other float dtype. */

mlc_var *mlc_var_new(mlc_arena *a, const char *name, mlc_dtype t);
mlc_buffer *mlc_buffer_new(mlc_arena *a, const char *name, mlc_dtype t, int ndim,
                           const int64_t *shape, const char *scope);
/* Extent d of b as an expression: dims[d], or shape[d] as an int32
 * constant (int64 past INT32_MAX). */
mlc_expr *mlc_buffer_dim(mlc_arena *a, const mlc_buffer *b, int d);
/* Default bounds of a size var of dtype t: [0, largest value of t]. */
void mlc_size_default_bounds(mlc_dtype t, int64_t *lo, int64_t *hi);
/* [*lo, *hi] bounds an int expression of the n size vars (constants,
 * + - *, min/max, floordiv/floormod by a positive constant); false for
 * anything else or on overflow. */
bool mlc_size_range(int n, const mlc_size_var *sizes, const mlc_expr *e, int64_t *lo,
                    int64_t *hi);
/* Whether dim, a buffer extent, is v + *offset (v, v + c, c + v, v - c; casts
 * aside): such an extent gives v's value at run time. */
bool mlc_size_in_extent(const mlc_expr *dim, const mlc_var *v, int64_t *offset);
/* Whether some parameter's extent gives size var v (mlc_size_in_extent). */
bool mlc_func_size_given(const mlc_prim_func *f, const mlc_var *v);
/* The size var of f behind v, or NULL. */
const mlc_size_var *mlc_func_size_var(const mlc_prim_func *f, const mlc_var *v);
/* Element count; past 2^62 (a shape the parser refuses, made some other
 * way) it saturates at 2^62, so that times an element size cannot wrap. */
int64_t mlc_buffer_numel(const mlc_buffer *b);

mlc_expr *mlc_int(mlc_arena *a, int64_t v);              /* int32 */
mlc_expr *mlc_int_t(mlc_arena *a, mlc_dtype t, int64_t v);
mlc_expr *mlc_bool(mlc_arena *a, bool v);
mlc_expr *mlc_float(mlc_arena *a, mlc_dtype t, double v);
mlc_expr *mlc_ref(mlc_arena *a, mlc_var *v);
mlc_expr *mlc_binary(mlc_arena *a, mlc_expr_kind k, mlc_expr *x, mlc_expr *y);
mlc_expr *mlc_add(mlc_arena *a, mlc_expr *x, mlc_expr *y);
mlc_expr *mlc_sub(mlc_arena *a, mlc_expr *x, mlc_expr *y);
mlc_expr *mlc_mul(mlc_arena *a, mlc_expr *x, mlc_expr *y);
mlc_expr *mlc_not(mlc_arena *a, mlc_expr *x);
mlc_expr *mlc_select(mlc_arena *a, mlc_expr *c, mlc_expr *t, mlc_expr *f);
mlc_expr *mlc_if_then_else(mlc_arena *a, mlc_expr *c, mlc_expr *t, mlc_expr *f);
mlc_expr *mlc_load(mlc_arena *a, mlc_buffer *b, mlc_expr **indices); /* copies array */
mlc_expr *mlc_cast(mlc_arena *a, mlc_dtype t, mlc_expr *x);
mlc_expr *mlc_call(mlc_arena *a, mlc_intrin op, mlc_expr **args); /* copies array */
/* T.call_extern(dtype, name, args...). Copies both
 * arrays; kids as mlc_xarg.kid describes. */
mlc_expr *mlc_call_extern(mlc_arena *a, mlc_dtype ret, const char *name, int n_args,
                          const mlc_xarg *args, int n_kids, mlc_expr **kids);
/* The region a PTR argument of e points at (ranges in e's kids). */
mlc_region mlc_xarg_region(mlc_arena *a, const mlc_expr *e, int arg);
bool mlc_expr_is_const_int(const mlc_expr *e, int64_t *v);

mlc_stmt *mlc_for_new(mlc_arena *a, mlc_var *v, mlc_expr *min, mlc_expr *extent,
                      mlc_for_kind kind, mlc_stmt *body);
mlc_stmt *mlc_store_new(mlc_arena *a, mlc_buffer *b, mlc_expr **indices, mlc_expr *value);
/* Builds a SEQ from n statements, flattening nested SEQs; n == 1 returns it. */
mlc_stmt *mlc_seq_new(mlc_arena *a, int n, mlc_stmt **stmts);
mlc_stmt *mlc_if_new(mlc_arena *a, mlc_expr *c, mlc_stmt *t, mlc_stmt *f);
mlc_stmt *mlc_evaluate_new(mlc_arena *a, mlc_expr *e);
mlc_stmt *mlc_allocate_new(mlc_arena *a, mlc_buffer *b, mlc_stmt *body);
mlc_block *mlc_block_new(mlc_arena *a, const char *name);
mlc_stmt *mlc_realize_new(mlc_arena *a, mlc_block *b, mlc_expr **values, mlc_expr *predicate);
mlc_prim_func *mlc_func_new(mlc_arena *a, const char *name);
mlc_module *mlc_module_new(mlc_arena *a, const char *name);
void mlc_module_add(mlc_arena *a, mlc_module *m, mlc_prim_func *f);
mlc_prim_func *mlc_module_find(const mlc_module *m, const char *name);
const mlc_ann *mlc_ann_find(int n, const mlc_ann *anns, const char *key);
/* A prim_func attribute (T.func_attr): the atol, as a share of the largest
 * |value|, its results are checked with against a reference in place of
 * the default (measure.h's MLC_CHECK_ATOL). Kernels that quantize carry
 * one: their results follow the summation order at rounding boundaries. */
#define MLC_ATTR_CHECK_ATOL "mlc.check_atol"
/* f's MLC_ATTR_CHECK_ATOL, or def where it has none. */
double mlc_func_check_atol(const mlc_prim_func *f, double def);
/* Sets it (the larger where f has one). */
void mlc_func_set_check_atol(mlc_arena *a, mlc_prim_func *f, double atol);
/* A deep copy of one annotation (key and nested items) into `a`. */
mlc_ann mlc_ann_dup(mlc_arena *a, const mlc_ann *v);
/* Whether two annotation values are equal as TVM compares them: same kind,
 * same scalar, lists element by element, dicts as maps. Keys of x and y
 * themselves are not compared. */
bool mlc_ann_value_equal(const mlc_ann *x, const mlc_ann *y);
mlc_block *mlc_func_root(const mlc_prim_func *f); /* the root block */

/* ---- copy and substitution (copy.c) ------------------------------------ */

/* Deep copy into arena `a` (may differ from the source's arena). Vars and
 * buffers are copied too and the copy refers only to its own copies. */
mlc_prim_func *mlc_func_copy(mlc_arena *a, const mlc_prim_func *f);
mlc_module *mlc_module_copy(mlc_arena *a, const mlc_module *m);
/* Deep copy of a statement in which vars and buffers from[i] become to[i]
 * (not copied); every other var and buffer is copied. */
mlc_stmt *mlc_stmt_copy_mapped(mlc_arena *a, const mlc_stmt *s, int n, const void *const *from,
                               void *const *to);
/* Replace variables: vars[i] -> values[i]. Returns a new tree; unchanged
 * subtrees may be shared with the input. */
mlc_expr *mlc_expr_subst(mlc_arena *a, mlc_expr *e, int n, mlc_var **vars, mlc_expr **values);
mlc_stmt *mlc_stmt_subst(mlc_arena *a, mlc_stmt *s, int n, mlc_var **vars, mlc_expr **values);
bool mlc_expr_uses_var(const mlc_expr *e, const mlc_var *v);
/* Calls fn on every node of e, parents first (e may be
 * NULL). The one read-only walk, instead of a switch per caller. */
void mlc_expr_visit(const mlc_expr *e, void (*fn)(const mlc_expr *e, void *ud), void *ud);
/* Whether fn holds for some node of e (parents first; stops at the first);
 * false for NULL. */
bool mlc_expr_any(const mlc_expr *e, bool (*fn)(const mlc_expr *e, void *ud), void *ud);
/* Copy-on-write rewrite, children first: fn (may be NULL) gets each node
 * once its children are rewritten and returns it or its replacement. A node
 * whose children did not change is passed as it is, shared with the input,
 * so fn must never modify its argument: it copies (mlc_arena_memdup) what
 * it changes. Unchanged subtrees stay shared. e may be NULL. */
typedef mlc_expr *(*mlc_expr_map_fn)(mlc_arena *a, mlc_expr *e, void *ud);
mlc_expr *mlc_expr_map(mlc_arena *a, mlc_expr *e, mlc_expr_map_fn fn, void *ud);
/* mlc_expr_map over an array: es itself while no element changes. */
mlc_expr **mlc_exprs_map(mlc_arena *a, mlc_expr **es, int n, mlc_expr_map_fn fn, void *ud);

/* Statement walks (walk.c), the same three for statement trees: a pass
 * handles the kinds it cares about and leaves the recursion to these.
 * Children are visited in order: a for's body, a block's init then body,
 * a seq's statements, an if's then and else, an allocate's body. They do
 * not enter expressions (use mlc_expr_visit on the fields wanted). */
/* The general walk: fn on each statement, parents first, says whether to
 * go into its children, skip them (a pass that stops at nested blocks) or
 * stop the walk; returns false when fn stopped it. s may be NULL. */
typedef enum mlc_walk { MLC_WALK_INTO, MLC_WALK_SKIP, MLC_WALK_STOP } mlc_walk;
bool mlc_stmt_walk(const mlc_stmt *s, mlc_walk (*fn)(const mlc_stmt *s, void *ud), void *ud);
/* Whether fn holds for some node of the expressions of s itself, not of
 * its children: a for's min and extent, a block realize's bindings and
 * predicate (not the block's regions), an if's condition, a store's
 * indices and value, an evaluate's value (as mlc_expr_any on each). */
bool mlc_stmt_exprs_any(const mlc_stmt *s, bool (*fn)(const mlc_expr *e, void *ud), void *ud);
/* fn on every statement of s, parents first (s may be NULL). */
void mlc_stmt_visit(const mlc_stmt *s, void (*fn)(const mlc_stmt *s, void *ud), void *ud);
/* Whether fn holds for some statement of s (parents first; stops at the
 * first); false for NULL. An "every statement" check is !any(not ...). */
bool mlc_stmt_any(const mlc_stmt *s, bool (*fn)(const mlc_stmt *s, void *ud), void *ud);
/* Copy-on-write rewrite, children first, as mlc_expr_map: fn (may be
 * NULL) gets each statement once its children are rewritten (a changed
 * block is copied with its new init and body) and returns it or a
 * replacement, never modifying its argument. Unchanged subtrees stay
 * shared. s may be NULL. */
typedef mlc_stmt *(*mlc_stmt_map_fn)(mlc_arena *a, mlc_stmt *s, void *ud);
mlc_stmt *mlc_stmt_map(mlc_arena *a, mlc_stmt *s, mlc_stmt_map_fn fn, void *ud);

/* ---- TE-like builder (builder.c) --------------------------------------- */
/* Describe a computation as tensors, as te.compute / te.create_prim_func do:
 *
 *   mlc_te *te = mlc_te_new(a);
 *   mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, (int64_t[]){M, K}, MLC_FLOAT32);
 *   mlc_te_tensor *B = mlc_te_placeholder(te, "B", 2, (int64_t[]){K, N}, MLC_FLOAT32);
 *   mlc_expr **ij = mlc_te_begin(te, "C", 2, (int64_t[]){M, N}, "ij");
 *   mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
 *   mlc_te_tensor *C = mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, A, ij[0], k),
 *                                                mlc_te_at(te, B, k, ij[1])));
 *   mlc_prim_func *f = mlc_te_create_prim_func(te, "main", 3, (mlc_te_tensor *[]){A, B, C});
 *
 * Each compute becomes one block with spatial iter vars over its shape and
 * reduce iter vars over its reduce axes, inside a T.grid loop nest; reads
 * and writes are inferred. Tensors not passed to create_prim_func become
 * the root block's alloc_buffers.
 */
typedef struct mlc_te mlc_te;
typedef struct mlc_te_tensor mlc_te_tensor;
typedef enum mlc_te_reducer { MLC_TE_SUM, MLC_TE_MAX, MLC_TE_MIN, MLC_TE_PROD } mlc_te_reducer;

mlc_te *mlc_te_new(mlc_arena *a);
mlc_te_tensor *mlc_te_placeholder(mlc_te *te, const char *name, int ndim,
                                  const int64_t *shape, mlc_dtype t);
/* Start a compute named `name` over `shape`; returns its ndim spatial index
 * expressions. `axis_names` gives one letter per axis ("ij"), or NULL for
 * i0, i1, ... */
mlc_expr **mlc_te_begin(mlc_te *te, const char *name, int ndim, const int64_t *shape,
                        const char *axis_names);
/* Between begin and end: the compute writes a buffer of `shape` at idx
 * (exprs over the index begin returned) instead of one of its own shape
 * indexed by its axes; the map must be one to one. A dense layer over a
 * packed weight iterates (i, jb, jl) and writes Y[i, jb * 16 + jl], so
 * the 16 lanes of a weight block are its contiguous innermost axis. */
void mlc_te_write_at(mlc_te *te, int ndim, const int64_t *shape, mlc_expr **idx);
mlc_expr *mlc_te_reduce_axis(mlc_te *te, int64_t extent, const char *name);
mlc_expr *mlc_te_at(mlc_te *te, mlc_te_tensor *t, ...); /* ndim index exprs */
mlc_expr *mlc_te_at_v(mlc_te *te, mlc_te_tensor *t, mlc_expr **idx);
mlc_te_tensor *mlc_te_end(mlc_te *te, mlc_expr *value);                 /* elementwise */
mlc_te_tensor *mlc_te_reduce(mlc_te *te, mlc_te_reducer r, mlc_expr *value); /* over all reduce axes */
mlc_te_tensor *mlc_te_sum(mlc_te *te, mlc_expr *value);
mlc_buffer *mlc_te_buffer(mlc_te_tensor *t);
mlc_prim_func *mlc_te_create_prim_func(mlc_te *te, const char *name, int n,
                                       mlc_te_tensor **args);

/* ---- printer (print.c) ------------------------------------------------- */
/* Canonical TVMScript: print(parse(print(f))) is byte-identical. */
void mlc_print_module(mlc_str *out, const mlc_module *m);
void mlc_print_func(mlc_str *out, const mlc_prim_func *f); /* a bare @T.prim_func */
void mlc_print_expr(mlc_str *out, const mlc_expr *e);
void mlc_print_stmt(mlc_str *out, const mlc_stmt *s, int indent);

/* ---- parser (parse.c) -------------------------------------------------- */
/* Reads the TVMScript subset of docs/FORMATS.md: an @I.ir_module class
 * or one or more bare @T.prim_func defs (returned as a module with name
 * NULL). Errors: "file:line:col: expected ..., got ...". Blocks written
 * without T.reads/T.writes get them inferred (mlc_block_infer_regions). */
mlc_module *mlc_parse_module(mlc_arena *a, const char *filename, const char *text,
                             mlc_error *err);

/* ---- verifier (verify.c) ----------------------------------------------- */
bool mlc_verify_func(const mlc_prim_func *f, mlc_error *err);
/* The same with its scratch arena a child of parent (mlc_arena_new_child):
 * running out of memory is an error either way, and even the scratch's
 * header then jumps to parent's escape point instead of aborting. */
bool mlc_verify_func_in(mlc_arena *parent, const mlc_prim_func *f, mlc_error *err);
bool mlc_verify_module(const mlc_module *m, mlc_error *err);

/* ---- simplifier (simplify.c) ------------------------------------------- */
/* Constant folding, affine canonical form of integer index expressions
 * (sum of var*coeff + const, terms ordered as they first appear),
 * floordiv/floormod by constants using known var ranges. */
typedef struct mlc_simplifier mlc_simplifier;
mlc_simplifier *mlc_simplifier_new(mlc_arena *a);
/* Declare that var v ranges over [min, min + extent). */
void mlc_simplifier_bind(mlc_simplifier *s, mlc_var *v, int64_t min, int64_t extent);
mlc_expr *mlc_simplify(mlc_simplifier *s, mlc_expr *e);
/* Interval [lo, hi] of an integer expression given bound vars; false if
 * unbounded (a free var or non-integer). */
bool mlc_simplifier_bounds(mlc_simplifier *s, mlc_expr *e, int64_t *lo, int64_t *hi);
/* Shorthand with no var ranges. */
mlc_expr *mlc_simplify_expr(mlc_arena *a, mlc_expr *e);
/* Prove a - b == c for a constant c. */
bool mlc_expr_const_diff(mlc_arena *a, mlc_expr *x, mlc_expr *y, int64_t *diff);

/* ---- reducers (reducer.c) ----------------------------------------------- */
/* A reduction block's reducer, as TVM's reducer matching finds it: the
 * init stores op's identity (0 for a sum, 1 for a product, the lowest
 * value or -inf for max, the highest for min) into the element the update
 * `W[idx] = W[idx] op value` writes (either operand order; value does not
 * read W). Such a reduction may be reordered (rfactor, vector lanes,
 * threads): exactly for max, min and integers, within rounding for float
 * sums and products. */
typedef struct mlc_reducer {
  mlc_expr_kind op;   /* ADD, MUL, MAX, MIN */
  mlc_expr *value;    /* the update's operand that is not the accumulator */
  mlc_expr *identity; /* the init's value */
  mlc_buffer *buf;    /* W */
} mlc_reducer;
/* NULL with *r filled when block b's init and body are a reducer's; else
 * why not ("its update is not W = W + e, ..."), for a message. */
const char *mlc_block_reducer(const mlc_block *b, mlc_reducer *r);
/* "sum", "product", "max", "min"; NULL for any other kind. */
const char *mlc_reducer_name(mlc_expr_kind op);

/* ---- region analysis (region.c) ---------------------------------------- */
/* The region of each buffer a statement touches when the given vars range
 * over their domains (the vars are typically loops inside the statement, or
 * outer loops being relaxed). `reads` excludes buffers only written. */
typedef struct mlc_region_set {
  int n;
  mlc_region *regions;
} mlc_region_set;
void mlc_stmt_access_regions(mlc_arena *a, const mlc_stmt *s, mlc_region_set *reads,
                             mlc_region_set *writes);
/* Fill blk->reads/writes from its body (and init), as TVM infers them. */
/* The same, one region per access (not united per buffer): to check that
 * each access lies in some declared region. */
void mlc_stmt_access_list(mlc_arena *a, const mlc_stmt *s, mlc_region_set *reads,
                          mlc_region_set *writes);
void mlc_block_infer_regions(mlc_arena *a, mlc_block *blk);
/* Relax a region over vars ranging in [mins[i], mins[i] + extents[i]). */
mlc_region mlc_region_relax(mlc_arena *a, mlc_region r, int n, mlc_var **vars,
                            const int64_t *mins, const int64_t *extents);
/* The same, and a constant bound on each dimension's extent in
 * max_extents[buf->ndim] (-1 where none is known): a region whose bounds
 * are floordivs of symbolic values (floordiv(3 * i, 4) to
 * floordiv(3 * i + 2, 4)) has an extent that varies with i but stays
 * below a constant (2). */
mlc_region mlc_region_relax_bounded(mlc_arena *a, mlc_region r, int n, mlc_var **vars,
                                    const int64_t *mins, const int64_t *extents,
                                    int64_t *max_extents);

/* ---- affine analysis (affine.c) ---------------------------------------- */
/* Whether index expressions are (quasi-)affine maps of loop or iter vars,
 * at the levels the schedule primitives and lowering need:
 *   mlc_expr_is_quasi_affine   the syntactic form TensorIR names;
 *   mlc_expr_linear_in         coefficients over given vars;
 *   mlc_expr_var_stride        the constant step in one var;
 *   mlc_expr_fused_map         a linear form as one fused iterator of iters
 *                              (inverted by compute_at and reverse inline);
 *   mlc_affine_bindings        TensorIR's IsAffineBinding for a block. */

/* Vars and integer constants combined by +, -, multiplication by a
 * constant, and floordiv/floormod by a positive constant (what split and
 * fuse produce); no casts, loads or calls. Any var counts. */
bool mlc_expr_is_quasi_affine(const mlc_expr *e);
/* e == sum(coeff[k] * vars[k]) + *c0 after simplification; false when e
 * has any other term (a product of vars, a floordiv, another var). */
bool mlc_expr_linear_in(mlc_arena *a, mlc_expr *e, int n, mlc_var **vars, int64_t *coeff,
                        int64_t *c0);
/* *step = e[v := v + 1] - e when the simplifier proves it a constant. */
bool mlc_expr_var_stride(mlc_arena *a, mlc_expr *e, mlc_var *v, int64_t *step);

enum { MLC_FUSED_MAX = 64 }; /* iters in one fused map */

/* e = sign * g * F + c0 with the fused value
 * F = sum_i (x_i - min_i) * (|coeff_i| / g) in [0, span / g), where the
 * iters x_i (order[i], |coeff| ascending) have constant domains and
 * coefficients sign * g * (1, ext_0, ext_0 * ext_1, ...): the mixed-radix
 * strides of their domains (2 * vi + vj, vj in [0, 2)). Iter order[i] is
 * then floormod(floordiv(F, |coeff_i| / g), ext_i) + min_i (no floormod for
 * the last). */
typedef struct mlc_fused_map {
  int m;                          /* iters with a non-zero coefficient */
  int order[MLC_FUSED_MAX];       /* their indices into iters */
  int64_t coeff[MLC_FUSED_MAX];   /* coeff of order[i] */
  int64_t mins[MLC_FUSED_MAX];    /* domain of order[i] */
  int64_t exts[MLC_FUSED_MAX];
  int64_t sign, g, c0, span;      /* c0 includes coeff_i * min_i */
} mlc_fused_map;
/* e (simplified) as a fused map of the n iters (n <= MLC_FUSED_MAX); a
 * constant e gives m == 0. False when e is not linear in the iters or the
 * coefficients are not mixed-radix strides of constant domains. */
bool mlc_expr_fused_map(mlc_arena *a, mlc_expr *e, int n, const mlc_iter_var *iters,
                        mlc_fused_map *out);
/* TensorIR's IsAffineBinding, as DetectIterMap accepts it at its
 * surjective level: each of the n values is a constant (or a value the
 * loops do not change) plus a dense sum of parts of independent loops
 * (nl loops, innermost last, constant bounds), or of such sums fused and
 * split again, and no two values use overlapping parts of one loop.
 * `conj` are the block predicate's conjuncts (sum < bound narrows the
 * sources it bounds). When false, *bad is the first value that is not
 * quasi-affine and *other is -1, or (*bad, *other) use the same part of a
 * loop. */
bool mlc_affine_bindings(int nl, mlc_stmt *const *loops, int n_conj, mlc_expr *const *conj,
                         int n, mlc_expr *const *values, int *bad, int *other);

/* ---- floating-point work (flops.c) -------------------------------------- */
/* Float operations of one call, counted from the blocks' bodies and
 * iteration domains as TVM's estimate of TIR flops does (the rule is in
 * flops.c); 0 for a function without float arithmetic, and for one of
 * size vars (its work depends on the sizes: count a specialization's). */
double mlc_func_flops(const mlc_prim_func *f);

/* ---- structural equality and hash (struct_eq.c) ------------------------ */
/* Names of vars, buffers, blocks and the function are ignored where they are
 * only renamings (vars matched by definition position); shapes, dtypes,
 * scopes, operations, loop kinds, annotations are compared. The hash is
 * identical on every platform. */
uint64_t mlc_func_struct_hash(const mlc_prim_func *f);
bool mlc_func_struct_equal(const mlc_prim_func *x, const mlc_prim_func *y);
/* Hex text of the hash, 16 lowercase digits, into buf[17]. */
void mlc_func_hash_hex(const mlc_prim_func *f, char buf[17]);
/* The same two with their scratch (the serialization, as big as the
 * function) taken from `scratch`, freed with it: under its escape point,
 * running out of memory jumps there; the forms above abort instead. */
uint64_t mlc_func_struct_hash_in(mlc_arena *scratch, const mlc_prim_func *f);
bool mlc_func_struct_equal_in(mlc_arena *scratch, const mlc_prim_func *x, const mlc_prim_func *y);

/* An int constant of a function: an INT_IMM (imm; bools are not slots) or
 * extent dim of buf's shape. */
typedef struct mlc_int_slot {
  const mlc_expr *imm;
  const mlc_buffer *buf;
  int dim;
} mlc_int_slot;
/* f's structure with its int constants left out (skeleton, in `a`) and
 * those constants in the walk's order: two functions with equal skeletons
 * differ at most in their constants, slot by slot. */
void mlc_func_int_slots(mlc_arena *a, const mlc_prim_func *f, mlc_str *skeleton, int *n,
                        mlc_int_slot **slots);

/* ---- interpreter (interp.c) -------------------------------------------- */
/* A tensor's storage for the interpreter and for compiled code alike:
 * dense row-major, element type = buffer dtype (bool as uint8, float16 as
 * uint16 IEEE half, bfloat16 as uint16 upper float32 bits). */
typedef struct mlc_array {
  mlc_dtype dtype;
  int ndim;
  int64_t shape[8];
  void *data;
} mlc_array;

/* Size vars (sizes.c). A function has at most MLC_MAX_SIZES. */
enum { MLC_MAX_SIZES = 16 };
/* sizes[k], the value of f->sizes[k], read from the arguments: each size
 * var is the bare extent of some parameter. False with a message when a
 * size lies outside its bounds or an argument's shape differs from what
 * its parameter's dims give. */
bool mlc_func_bind_sizes(const mlc_prim_func *f, int n_args, const mlc_array *args,
                         int64_t *sizes, mlc_error *err);
/* The values a "NAME=V[,V...]" spec among specs[] gives size var `name`
 * (up to max_vals): their count, 0 when no spec names it, -1 with err
 * set when the values do not read as integers. */
int mlc_size_values(int n_specs, const char *const *specs, const char *name, int64_t *vals,
                    int max_vals, mlc_error *err);
/* The sizes a lone size var is tuned at by default (vals: at most 4): its
 * least (one row), 16 and 128 (small and large batches of rows) and its
 * max, within its bounds, ascending; 0 for a size without a declared max. */
int mlc_size_samples(const mlc_size_var *sv, int64_t *vals);
/* A copy of f in `a` for the given sizes: every extent static, the size
 * vars replaced by their values (what the interpreter runs, and the
 * static workload a size is tuned as). */
mlc_prim_func *mlc_func_specialize(mlc_arena *a, const mlc_prim_func *f, const int64_t *sizes,
                                   mlc_error *err);
/* shape[d]: b's extents when f runs at the given sizes (b->shape for a
 * static buffer); false when one cannot be computed or is negative. */
bool mlc_buffer_extents(const mlc_prim_func *f, const mlc_buffer *b, const int64_t *sizes,
                        int64_t *shape);
/* One function with f's parameters and its one size var that runs
 * variants[i] (f scheduled other ways: the same parameters and size var,
 * in order) where the size is at most upto[i], ascending, the last one
 * above the others (upto[n - 1] unused): a kernel tuned at several sizes
 * dispatches to the schedule tuned nearest above. Each variant's blocks
 * are renamed "<name>_<tags[i]>" so that names stay distinct. */
mlc_prim_func *mlc_func_select_by_size(mlc_arena *a, const mlc_prim_func *f, int n,
                                       const mlc_prim_func *const *variants, const int64_t *upto,
                                       const char *const *tags, mlc_error *err);
/* Instances of one kernel made at known sizes, for mlc_func_generalize:
 * insts[i] at values[i * n_sizes + k] of size k (names[k], bounds lo[k]
 * to hi[k]); insts[0] at every size's hi, and for each size an instance
 * that differs from it in that size alone. static_params (per parameter
 * of insts[0], or NULL): parameters kept at insts[0]'s extents, data whose
 * leading block serves every size (loads of it must not move with the
 * sizes). */
typedef struct mlc_generalize_in {
  int n_inst;
  const mlc_prim_func *const *insts;
  int n_sizes;
  const int64_t *values;
  const char *const *names;
  const int64_t *lo, *hi;
  const bool *static_params;
} mlc_generalize_in;
/* insts[0] with each int constant that differs between the instances
 * (extents, loop bounds, indices) an affine expression of the sizes that
 * gives every instance's constant at its sizes; size vars only for the
 * sizes it uses (none: a static copy). NULL with a message when the
 * instances differ in structure or a constant is no such function. */
mlc_prim_func *mlc_func_generalize(mlc_arena *a, const mlc_generalize_in *in, mlc_error *err);
/* The same fit for one value per instance (v[i]: instance i's; insts and
 * static_params unused): v = off + sum coef[k] * size k at every
 * instance; false with a message when no such function gives them. */
bool mlc_size_fit(const mlc_generalize_in *in, const int64_t *v, int64_t *off, int64_t *coef,
                  mlc_error *err);
/* *v = e, an int expression of f's size vars, at the given sizes; false
 * when e holds anything else or overflows. */
bool mlc_size_eval(const mlc_prim_func *f, const mlc_expr *e, const int64_t *sizes, int64_t *v);

/* Run f with args[i] bound to f->params[i] (shapes and dtypes must match).
 * Slow and exact: float32 arithmetic in float32 as written. Returns false
 * with a message on a shape mismatch or an out-of-bounds access. */
bool mlc_interp_run(const mlc_prim_func *f, mlc_array *args, mlc_error *err);
/* The same with the argument count given and checked
 * against f->n_params. */
bool mlc_interp_run_n(const mlc_prim_func *f, int n_args, mlc_array *args, mlc_error *err);

/* the functions T.call_extern reaches in the
 * interpreter. A call passes each argument as an mlc_extern_val (VALUE:
 * is_float says whether f or i holds it; PTR: p points at the region's
 * first element, of dtype; STRIDE: i) and converts the double returned to
 * the call's dtype. Registering a name again replaces its function; up to
 * 64 names. False when the table is full or the name too long. */
typedef struct mlc_extern_val {
  mlc_xarg_kind kind;
  bool is_float;
  int64_t i;
  double f;
  void *p;
  mlc_dtype dtype; /* PTR: element type */
} mlc_extern_val;
typedef double (*mlc_extern_fn)(void *ud, int n, const mlc_extern_val *args);
bool mlc_interp_register_extern(const char *name, mlc_extern_fn fn, void *ud);

mlc_array *mlc_array_new(mlc_dtype t, int ndim, const int64_t *shape); /* zeroed heap */
mlc_array *mlc_array_for_buffer(const mlc_buffer *b);
/* As mlc_array_new for shapes that come from input: NULL with err set
 * (naming `what`) when the shape is over the size limit of base.h
 * (MLC_MAX_TENSOR_ELEMS, MLC_MAX_TENSOR_BYTES) or the memory cannot be
 * had; mlc_array_new aborts in both cases. */
mlc_array *mlc_array_try_new(mlc_dtype t, int ndim, const int64_t *shape, const char *what,
                             mlc_error *err);
/* Whether every parameter and allocated buffer of f is within the size
 * limit, i.e. running f allocates nothing larger; else the message names
 * the buffer. A parameter of symbolic extents is not checked (its array
 * is made for actual sizes); an allocation is, at its bound. */
bool mlc_func_check_sizes(const mlc_prim_func *f, mlc_error *err);
void mlc_array_free(mlc_array *x);
int64_t mlc_array_numel(const mlc_array *x);
/* Seeded uniform values in [-1, 1) for floats, [-8, 8) for signed ints,
 * [0, 16) for uint8. */
void mlc_array_fill_random(mlc_array *x, mlc_pcg32 *rng);
double mlc_array_get(const mlc_array *x, int64_t flat_index);
void mlc_array_set(mlc_array *x, int64_t flat_index, double v);
/* Max |x - y| and whether |x - y| <= atol + rtol * |y| everywhere. */
bool mlc_array_allclose(const mlc_array *x, const mlc_array *y, double rtol, double atol,
                        double *max_err);

/* float16 conversions (IEEE binary16, round to nearest even). */
float mlc_half_to_float(uint16_t h);
uint16_t mlc_float_to_half(float f);
/* bfloat16: the upper 16 bits of a float32 (round to nearest even; NaN
 * stays NaN). mlc_array stores it as uint16 bits. */
float mlc_bf16_to_float(uint16_t h);
uint16_t mlc_float_to_bf16(float f);

#endif
