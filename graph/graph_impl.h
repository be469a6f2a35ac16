/* Private to graph/: helpers the pass files share. */
#ifndef MLC_GRAPH_IMPL_H
#define MLC_GRAPH_IMPL_H

#include "graph/graph.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

mlc_gvar *mlc_gvar_new(mlc_gmodule *m, const char *name, mlc_gvar_kind kind, const mlc_gtype *t);
mlc_gfunc *mlc_gfunc_new(mlc_gmodule *m, const char *name, bool primitive);
void mlc_graph_add_func(mlc_gmodule *m, mlc_gfunc *f);
void mlc_gfunc_set_bindings(mlc_gmodule *m, mlc_gfunc *f, int n, const mlc_gbinding *bs);
mlc_gvar **mlc_gvars_dup(mlc_gmodule *m, int n, mlc_gvar *const *vs);
int mlc_gfunc_uses(const mlc_gfunc *f, const mlc_gvar *v);
int mlc_gfunc_def(const mlc_gfunc *f, const mlc_gvar *v);
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

/* Uses of f's vars counted once (graph/gmap.c), for passes that would
 * otherwise call mlc_gfunc_uses per binding (O(n^2)): count as
 * mlc_gfunc_uses counts, first: the first binding using a var as an arg,
 * def: the binding defining it. Stale once f's bindings change. */
typedef struct mlc_guses {
  mlc_gmap count, first, def;
} mlc_guses;
void mlc_guses_init(mlc_guses *u, mlc_arena *a, const mlc_gfunc *f);
int mlc_guses_count(const mlc_guses *u, const mlc_gvar *v);

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

/* The layout pass's second half (layout.c, after the weights are packed): every conv2d over a packed
 * weight yields NCHWc, and the values between such convs stay NCHWc
 * (through max_pool2d and elementwise ops); an unpack_nchwc gives NCHW to
 * each value read in NCHW. Leaves unpacks nothing reads: the caller runs
 * mlc_graph_remove_unused. Requires the conv types before packing (a
 * packed conv2d's var still 4-d). */
void mlc_graph_layout_nchwc(mlc_gmodule *m, mlc_gfunc *f);

/* Evaluate one op binding in plain C (ref.c): in[i] holds arg i. Its
 * scratch (accumulators of some ops, as big as the result) comes from the
 * heap and aborts when that runs out; the _in form takes it from
 * `scratch`, so under its escape point running out is an error. */
void mlc_graph_ref_op(const mlc_gbinding *b, float *const *in, float *y);
void mlc_graph_ref_op_in(mlc_arena *scratch, const mlc_gbinding *b, float *const *in, float *y);
/* The window ops (conv, transposed conv, max and avg pool) over any
 * spatial rank, as mlc_graph_ref_op evaluates them (ref_window.c; no
 * scratch). */
void mlc_graph_ref_window(const mlc_gbinding *b, float *const *in, float *y);

/* Lowering of one op call to a prim_func named `name` (lower.c): params
 * named after the args, the output last. */
mlc_prim_func *mlc_graph_lower_op(mlc_arena *a, const char *name, mlc_gop op,
                                  const mlc_gattrs *attrs, int n, mlc_gvar *const *args,
                                  const mlc_gtype *out, mlc_error *err);

/* Appends n prim_funcs to m->tir in one new array (lower.c;
 * mlc_module_add copies the array for each one: O(n^2) for n). */
void mlc_graph_add_tir_funcs(mlc_gmodule *m, int n, mlc_prim_func *const *fs);

/* Whether name may be a call_extern function of m (extern.c): a C
 * identifier the emitted code does not use itself; false with why. */
bool mlc_graph_extern_name_ok(const mlc_gmodule *m, const char *name, mlc_error *err);
/* Runs call_extern binding b of m on the data in[0..b->n_args) into y
 * (zeroed first); false with a message naming the node when its function
 * is not defined or returns nonzero. */
bool mlc_graph_call_extern(const mlc_gmodule *m, const mlc_gbinding *b, float *const *in,
                           float *y, mlc_error *err);

/* Type of a prim_func buffer as a graph type. */
void mlc_gtype_of_buffer(const mlc_buffer *b, mlc_gtype *t);


#pragma GCC visibility pop
#endif
