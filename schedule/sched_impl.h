/* Private to schedule/: the state's layout and helpers shared by the
 * primitive files. */
#ifndef MLC_SCHED_IMPL_H
#define MLC_SCHED_IMPL_H

#include "schedule/schedule.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* What a handle refers to. Block and loop handles point at nodes of the
 * state's IR; primitives move nodes rather than rebuild them, so pointers
 * stay valid; a node that was replaced is simply no longer in the tree. */
typedef struct rv_entry {
  mlc_rv_kind kind;
  mlc_block *block; /* BLOCK */
  mlc_stmt *loop;   /* LOOP: a FOR statement */
  int64_t value;    /* VALUE */
} rv_entry;

struct mlc_sched {
  mlc_arena *arena; /* owns func, handles, trace */
  mlc_prim_func *func;
  mlc_pcg32 rng;
  MLC_VEC(rv_entry) rvs;
  mlc_trace trace; /* rv_kinds mirrors rvs */
  int height;      /* sched_func_height's cache, an upper bound; 0: unknown (sched_record
                      keeps a bound where the primitive's growth is known, else resets it) */
  int64_t fuse_outer_min; /* mlc_sched_set_fuse_outer_min; 0: Fuse moves a symbolic loop outermost */
  /* compute_at's plan for the loop sample_compute_location just chose
   * (it planned it to know the loop is a candidate): the compute_at of
   * that block at that loop right after applies it instead of planning
   * again. Every other recorded primitive resets it. */
  struct ca_plan *located;
  /* Whether a realize's bindings are affine (annotate.c's affine_bindings,
   * which parallel, vectorize, unroll and bind all ask of every block
   * under their loop), by a hash of everything the answer depends on:
   * nodes are never changed in place, so the same nodes give the same
   * answer. A few entries, reused in turn. */
  struct {
    uint64_t key;
    bool ok;
    int bad, other;
  } affine[8];
  int n_affine, next_affine; /* entries filled; the one to reuse next */
};

/* How deep a function may nest (statements from the root realize down to
 * the deepest leaf) for a primitive to work on it: every primitive that
 * takes a loop or block handle refuses a deeper function, and split, the
 * one that deepens without bound (a chain of splits), refuses to go past
 * it. Kept well under the parser's nesting limit (PARSE_MAX_NEST, 256, in
 * which each loop of a T.grid line, each block and each parenthesis counts)
 * so that what a schedule prints parses back, leaving the headroom one
 * other primitive may add (a cache stage, a blockize level). */
#define SCHED_MAX_NEST 200
/* Paths the tree walkers hold: any parsed function (under 256 levels)
 * plus what one primitive can add to a function of SCHED_MAX_NEST levels
 * (compute_at moving a block of that height under a loop as deep). */
#define SCHED_MAX_DEPTH 1024

/* ---- state.c: handles and tree navigation ---- */

/* Appends a handle (after every check passed). */
mlc_rv sched_new_rv(mlc_sched *s, mlc_rv_kind k, mlc_block *b, mlc_stmt *loop, int64_t v);
/* "l2 (j)" / "b0 (C)" / "v4" into buf, for messages. */
const char *sched_rv_desc(const mlc_sched *s, mlc_rv rv, char buf[96]);
/* Check a handle is in range, of kind k and alive; message prefixed with
 * the primitive name. */
bool sched_check_loop(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err);
bool sched_check_block(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err);
bool sched_check_value(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err);
/* A loop's constant min and its extent's largest value: the extent
 * itself, or the bound of a symbolic one (an expression of the function's
 * size vars); false when neither. *symbolic says which. */
bool sched_loop_range(const mlc_sched *s, const mlc_stmt *loop, int64_t *mn, int64_t *ext,
                      bool *symbolic);
/* Statements on the longest path from st down to a leaf (1 for a leaf). */
int sched_height(const mlc_stmt *st);
/* sched_height of the whole function or an upper bound on it, exact when
 * above SCHED_MAX_NEST (what callers compare it with); cached, walked
 * again after a primitive that may deepen the tree by any amount. */
int sched_func_height(mlc_sched *s);
/* Statements from the root realize down to target (inclusive) into path;
 * returns the length, 0 if target is not in the tree. */
int sched_path_to(const mlc_sched *s, const mlc_stmt *target, mlc_stmt **path);
/* The realize of block b, or NULL. */
mlc_stmt *sched_find_realize(const mlc_sched *s, const mlc_block *b);
/* The field holding child inside parent (a statement on the path). */
mlc_stmt **sched_child_slot(mlc_stmt *parent, mlc_stmt *child);
/* Substitute vars in every expression of the subtree, in place: nodes
 * (loops, realizes, blocks) keep their identity. */
void sched_subst_inplace(mlc_arena *a, mlc_stmt *st, int n, mlc_var **vars, mlc_expr **vals);
/* Calls fn on each block realize under st, not entering blocks. */
void sched_each_realize(mlc_stmt *st, void (*fn)(mlc_stmt *realize, void *ctx), void *ctx);
/* Room for n_insts recorded instructions and n_rvs handles. */
void sched_reserve(mlc_sched *s, int n_insts, int n_rvs);
/* Re-simplify the iter bindings of the realizes under st, with the given
 * vars' ranges known. */
void sched_simplify_bindings(mlc_sched *s, mlc_stmt *st);
/* sched_subst_inplace on st (in place under the function), then the
 * bindings and predicates it changed simplified as sched_simplify_bindings
 * does (the others are as simplified as before). */
void sched_subst_bindings(mlc_sched *s, mlc_stmt *st, int n, mlc_var **vars, mlc_expr **vals);

/* ---- reduction.c: helpers shared with blockize.c ---- */

/* The loops around a block realize below its parent block, outer first;
 * returns their count. *scope (may be NULL) receives the parent block's
 * realize. */
int sched_scope_loops(const mlc_sched *s, mlc_stmt *realize, mlc_stmt **loops, mlc_stmt **scope);
/* Put st right before `at` (a statement of the tree) in at's parent. */
void sched_insert_before(mlc_sched *s, mlc_stmt *at, mlc_stmt *st);
/* base if no block of the function has that name, else base_1, base_2 ...
 * (the verifier requires unique block names). */
const char *sched_fresh_block_name(mlc_sched *s, const char *base);
/* The && conjuncts of e (NULL: none) into out[max]; returns the count. */
int sched_conjuncts(mlc_expr *e, mlc_expr **out, int max);
/* Conjunction of n expressions; NULL when n == 0. */
mlc_expr *sched_and_all(mlc_arena *a, int n, mlc_expr **es);
/* Whether any expression of the subtree (nested blocks included) uses v. */
bool sched_stmt_uses_var(const mlc_stmt *st, const mlc_var *v);

/* ---- blockize.c ---- */

/* mlc_sched_blockize without a new handle or a recorded instruction (for
 * tensorize of a loop); *outer is the new outer block. */
bool sched_blockize(mlc_sched *s, mlc_rv loop, bool preserve_unit_iters, mlc_block **outer,
                    mlc_error *err);

/* ---- tensorize.c: families of intrinsics ---- */

/* Writes the TVMScript pair <prefix>_<suffix>_desc / _impl for a suffix
 * the family knows (its tile shape); false for any other suffix. */
typedef bool (*sched_intrin_gen)(const char *suffix, mlc_str *text);
/* Names <prefix>_<suffix> not registered are asked of gen when looked up
 * (mlc_tensor_intrin_exists, tensorize, replay). False: too many families
 * or a bad prefix. */
bool sched_intrin_add_family(const char *prefix, sched_intrin_gen gen);

/* ---- trace.c: recording ---- */

/* Append an instruction; arrays and strings are copied into the arena,
 * but for the attributes' keys: string literals (static storage), shared
 * by every instruction recorded with them. */
mlc_inst *sched_record(mlc_sched *s, mlc_inst_kind kind, int n_in, const mlc_operand *in,
                       int n_attrs, const mlc_attr *attrs, int n_out, const mlc_rv *out);
mlc_attr sched_attr_bool(const char *key, bool v);
mlc_attr sched_attr_int(const char *key, int64_t v);
mlc_attr sched_attr_str(const char *key, const char *v);
const mlc_attr *sched_attr_find(const mlc_inst *in, const char *key);
void sched_trace_copy_into(mlc_arena *a, mlc_trace *dst, const mlc_trace *src);

/* ---- sample.c: the draws replay needs with a given decision ---- */

/* want: a decision to use if it fits (NULL: draw); with carry, a tile
 * decision for another extent keeps its inner factors where their product
 * divides this one. *resampled says whether a given decision did not fit
 * and was drawn again. */
bool sched_sample_perfect_tile(mlc_sched *s, mlc_rv loop, int n, int max_innermost,
                               const mlc_decision *want, bool carry, bool *resampled, mlc_rv *out,
                               mlc_error *err);
bool sched_sample_categorical(mlc_sched *s, int n, const int64_t *cands, const double *probs,
                              const mlc_decision *want, bool *resampled, mlc_rv *out,
                              mlc_error *err);

/* ---- compute_at.c / inline.c: scopes, dependences, block removal ---- */

/* A list of statements (block realizes) in program order. */
typedef struct sched_stmts {
  mlc_arena *arena;
  MLC_VEC(mlc_stmt *) v;
} sched_stmts;

/* Index in path[0..n) of the realize of the block enclosing path[n-1]. */
int sched_scope_index(mlc_stmt **path, int n);
/* The child block realizes of a scope block, in program order. */
sched_stmts sched_scope_blocks(mlc_sched *s, mlc_stmt *scope_realize);
int sched_stmts_index(const sched_stmts *v, const mlc_stmt *x);
/* Whether b reads buf (a reduction reads its own output) / writes buf. */
bool sched_block_reads(const mlc_block *b, const mlc_buffer *buf);
bool sched_block_writes(const mlc_block *b, const mlc_buffer *buf);
/* TensorIR's complete block among its scope's blocks. */
bool sched_check_complete(const sched_stmts *blocks, const mlc_block *b, const char *prim,
                          mlc_error *err);
/* Removing a leaf block: the element of a sequence holding it (the block
 * or the loops that hold nothing else). */
typedef struct sched_removal {
  mlc_stmt *seq, *elem, *seq_parent;
} sched_removal;
bool sched_removal_plan(mlc_sched *s, mlc_stmt *realize, const char *prim, sched_removal *out,
                        mlc_error *err);
void sched_removal_apply(mlc_sched *s, const sched_removal *rm);
/* Inlining without recording (compute_at at the inline mark records
 * itself); prim names the primitive in messages. */
bool sched_compute_inline(mlc_sched *s, mlc_rv block, const char *prim, mlc_error *err);
bool sched_reverse_compute_inline(mlc_sched *s, mlc_rv block, const char *prim, mlc_error *err);
bool sched_can_compute_inline(mlc_sched *s, mlc_block *b);
/* sample_compute_location with a decision to keep if it still fits. */
bool sched_sample_compute_location(mlc_sched *s, mlc_rv block, const mlc_decision *want,
                                   bool *resampled, mlc_rv *out, mlc_error *err);


#pragma GCC visibility pop
#endif
