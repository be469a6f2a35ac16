/* Private to graph/: helpers the pass files share. */
#ifndef MLC_GRAPH_IMPL_H
#define MLC_GRAPH_IMPL_H

#include "graph/graph.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* Uses of f's vars counted once (graph/gmap.c), for passes that would
 * otherwise call mlc_gfunc_uses per binding (O(n^2)): count as
 * mlc_gfunc_uses counts, first: the first binding using a var as an arg,
 * def: the binding defining it. Stale once f's bindings change. */
typedef struct mlc_guses {
  mlc_gmap count, first, def;
} mlc_guses;
void mlc_guses_init(mlc_guses *u, mlc_arena *a, const mlc_gfunc *f);
int mlc_guses_count(const mlc_guses *u, const mlc_gvar *v);

/* The layout pass's second half (layout.c, after the weights are packed): every conv2d over a packed
 * weight yields NCHWc, and the values between such convs stay NCHWc
 * (through max_pool2d and elementwise ops); an unpack_nchwc gives NCHW to
 * each value read in NCHW. Leaves unpacks nothing reads: the caller runs
 * mlc_graph_remove_unused. Requires the conv types before packing (a
 * packed conv2d's var still 4-d). */
void mlc_graph_layout_nchwc(mlc_gmodule *m, mlc_gfunc *f);

/* The window ops (conv, transposed conv, max and avg pool) over any
 * spatial rank, as mlc_graph_ref_op evaluates them (ref_window.c; no
 * scratch). */
void mlc_graph_ref_window(const mlc_gbinding *b, double *const *in, double *y);

/* Where weight element W[j, k] (K columns) lies in qdense's packed weight
 * [N/16, K/4, 16, 4]: w[j / 16, k / 4, j % 16, k % 4]. */
static inline int64_t mlc_qdense_packed_at(int64_t j, int64_t k, int64_t K) {
  return ((j / 16) * (K / 4) + k / 4) * 64 + (j % 16) * 4 + k % 4;
}

/* Lowering of one op call to a prim_func named `name` (lower.c): params
 * named after the args, the output last. */
mlc_prim_func *mlc_graph_lower_op(mlc_arena *a, const char *name, mlc_gop op,
                                  const mlc_gattrs *attrs, int n, mlc_gvar *const *args,
                                  const mlc_gtype *out, mlc_error *err);

/* Appends n prim_funcs to m->tir in one new array (lower.c;
 * mlc_module_add copies the array for each one: O(n^2) for n). */
void mlc_graph_add_tir_funcs(mlc_gmodule *m, int n, mlc_prim_func *const *fs);

/* Workspace offsets (in bytes) of f's intermediates, -1 for a binding
 * that takes none (an output, a view): first fit among the blocks still
 * live, so a result reuses the space of values no later kernel reads (a
 * kernel's output never shares memory with its inputs: they are live
 * while it runs). offs has n_bindings entries; returns the bytes needed.
 * The emitted entry (emit.c) and the in-process runner (runner.c) share it. */
int64_t mlc_graph_plan_workspace(const mlc_gfunc *f, int64_t *offs);

/* Runs call_extern binding b of m on the data in[0..b->n_args) into y
 * (zeroed first); false with a message naming the node when its function
 * is not defined or returns nonzero. */
bool mlc_graph_call_extern(const mlc_gmodule *m, const mlc_gbinding *b, float *const *in,
                           float *y, mlc_error *err);

/* Type of a prim_func buffer as a graph type. */
void mlc_gtype_of_buffer(const mlc_buffer *b, mlc_gtype *t);


#pragma GCC visibility pop
#endif
