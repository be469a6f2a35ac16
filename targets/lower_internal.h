/* Private to targets/: the passes of mlc_target_lower, run in order by
 * lower.c:
 *
 *   1. lower_blocks   (lower.c)        blocks -> loops, guards, block allocs
 *   2. place_allocs   (lower_alloc.c)  root allocs at the LCA of their uses
 *   3. flatten        (lower_alloc.c)  compaction, row-major flattening,
 *                                      index simplification
 */
#ifndef MLC_TARGETS_LOWER_INTERNAL_H
#define MLC_TARGETS_LOWER_INTERNAL_H

#include "targets/targets.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* A loop that a reduction writing `buf` accumulates over: its iterations
 * must see one another's writes, so buf cannot be allocated inside it. */
typedef struct lower_carry {
  const mlc_buffer *buf;
  const mlc_stmt *loop;
} lower_carry;

/* A reduction init moved out of its reduce loops: emitted just before
 * `loop` (a loop of the new tree) when that loop is finished. */
typedef struct lower_hoist {
  const mlc_stmt *loop;
  mlc_stmt *init; /* the init under copies of the spatial loops it needs */
} lower_hoist;

typedef struct lower_state {
  mlc_arena *a;
  MLC_VEC(mlc_stmt *) loops;       /* enclosing loops of the new tree, outermost first */
  MLC_VEC(const mlc_stmt *) orig_loops; /* the same loops in the input */
  MLC_VEC(lower_hoist) hoists;     /* pending, for loops being lowered */
  MLC_VEC(lower_carry) carries;    /* in the arena, like everything lowering makes */
  MLC_VEC(mlc_buffer *) root_allocs; /* the root block's alloc_buffers */
} lower_state;

/* Pass 2: wrap body (or a loop's body inside it) in an ALLOCATE for each
 * root alloc; buffers never used are dropped. Returns the new body. */
mlc_stmt *lower_place_allocs(lower_state *st, mlc_stmt *body);

/* Pass 3: flattened buffers for params (in order) and every ALLOCATE;
 * returns the new body, or NULL with err set. */
mlc_stmt *lower_flatten(mlc_arena *a, mlc_stmt *body, int n_params, mlc_buffer **params,
                        mlc_buffer **flat_params, mlc_error *err);

/* Helpers shared by the passes and code generation. */
typedef void (*lower_expr_fn)(const mlc_expr *e, void *ud);
/* fn on every node of e, pre-order (loads' indices included). */
void lower_visit_expr(const mlc_expr *e, lower_expr_fn fn, void *ud);
/* lower_visit_expr on each expression s holds itself (loop bounds, a
 * condition, store indices and value), not those of nested statements. */
void lower_visit_exprs(const mlc_stmt *s, lower_expr_fn fn, void *ud);


#pragma GCC visibility pop
#endif
