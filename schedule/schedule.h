/* schedule: schedule states, primitives, sampling and traces.
 *
 * A schedule state (mlc_sched) owns a private copy of a prim_func in its own
 * arena, a PCG32 generator and the trace of everything done to it. The
 * primitives rewrite the copy in place, TensorIR style, and record one
 * instruction each; sampling primitives also record their decision.
 *
 *   mlc_sched *s = mlc_sched_new(func, 42);
 *   mlc_rv c, *loops, f[2], jj[2];
 *   mlc_sched_get_block(s, "C", "main", &c, &err);
 *   mlc_sched_get_loops(s, c, &loops, &err);            // i, j, k
 *   mlc_sched_sample_perfect_tile(s, loops[1], 2, 16, f, &err);
 *   mlc_operand fs[2] = {MLC_OP_RV(f[0]), MLC_OP_RV(f[1])};
 *   mlc_sched_split(s, loops[1], 2, fs, true, jj, &err);
 *   mlc_sched_reorder(s, 4, (mlc_rv[]){loops[0], jj[0], loops[2], jj[1]}, &err);
 *   mlc_trace_print(&out, mlc_sched_trace(s));           // Python-like
 *   mlc_trace_to_json(&json, mlc_sched_trace(s));        // stored in the db
 *   mlc_sched_free(s);
 *
 * Handles (mlc_rv: blocks, loops, sampled values) are small integers that
 * stay valid across primitives; a loop that a primitive replaced (split,
 * fuse) is gone and its handle is refused with a message. Every primitive
 * checks its preconditions first: on failure it returns false with a
 * message naming the primitive, the handle and the reason, and the state
 * (IR, trace, handles, random generator) is exactly as before.
 *
 * Replay (mlc_sched_replay) applies a trace to a fresh state of the same
 * workload with the stored decisions, new random ones, or some replaced;
 * a decision that no longer fits is resampled and reported.
 */
#ifndef MLC_SCHEDULE_H
#define MLC_SCHEDULE_H

#include "ir/ir.h"

/* ---- instruction kinds ---------------------------------------------- */

typedef enum mlc_inst_kind {
#define MLC_INST(id, name, py, is_sampling, min_inputs, attrs, deepens) MLC_INST_##id,
#include "schedule/inst_kinds.def"
} mlc_inst_kind;
/* Counted outside the enum so switches need no default. */
enum { MLC_INST_KIND_COUNT = 0
#define MLC_INST(id, name, py, is_sampling, min_inputs, attrs, deepens) +1
#include "schedule/inst_kinds.def"
};

const char *mlc_inst_kind_name(mlc_inst_kind k);   /* "Split" (JSON) */
const char *mlc_inst_kind_method(mlc_inst_kind k); /* "split" (Python) */
bool mlc_inst_kind_is_sampling(mlc_inst_kind k);
bool mlc_inst_kind_from_name(const char *name, mlc_inst_kind *out);

/* ---- random variables and operands ----------------------------------- */

/* A handle of a schedule state: index into its table of random variables.
 * Printed as b<N> (block), l<N> (loop), v<N> (value). */
typedef int32_t mlc_rv;

typedef enum mlc_rv_kind {
  MLC_RV_BLOCK,
  MLC_RV_LOOP,
  MLC_RV_VALUE, /* an integer drawn by a sampling instruction */
} mlc_rv_kind;

/* An instruction input: a handle, a literal, or None (a split factor left
 * to be inferred). */
typedef enum mlc_operand_kind {
  MLC_OPERAND_NONE,
  MLC_OPERAND_RV,
  MLC_OPERAND_INT,
  MLC_OPERAND_FLOAT,
  MLC_OPERAND_STR,
  MLC_OPERAND_ANN, /* an annotation value (annotate's ann_val): a list, dict or bool */
} mlc_operand_kind;

typedef struct mlc_operand {
  mlc_operand_kind kind;
  mlc_rv rv;          /* RV */
  int64_t i;          /* INT */
  double f;           /* FLOAT */
  const char *s;      /* STR */
  const mlc_ann *ann; /* ANN; its key is ignored */
} mlc_operand;

#define MLC_OP_NONE ((mlc_operand){.kind = MLC_OPERAND_NONE})
#define MLC_OP_RV(x) ((mlc_operand){.kind = MLC_OPERAND_RV, .rv = (x)})
#define MLC_OP_INT(v) ((mlc_operand){.kind = MLC_OPERAND_INT, .i = (v)})
#define MLC_OP_FLOAT(v) ((mlc_operand){.kind = MLC_OPERAND_FLOAT, .f = (v)})
#define MLC_OP_STR(v) ((mlc_operand){.kind = MLC_OPERAND_STR, .s = (v)})
#define MLC_OP_ANN(v) ((mlc_operand){.kind = MLC_OPERAND_ANN, .ann = (v)})

/* ---- traces ------------------------------------------------------------ */

typedef enum mlc_attr_kind {
  MLC_ATTR_BOOL,
  MLC_ATTR_INT,
  MLC_ATTR_FLOAT,
  MLC_ATTR_STR,
  MLC_ATTR_INTS,   /* list of integers (SampleCategorical candidates) */
  MLC_ATTR_FLOATS, /* list of numbers (SampleCategorical probs) */
} mlc_attr_kind;

typedef struct mlc_attr {
  const char *key;
  mlc_attr_kind kind;
  int64_t i;      /* BOOL, INT */
  double f;       /* FLOAT */
  const char *s;  /* STR */
  int n;          /* INTS, FLOATS */
  int64_t *ints;
  double *floats;
} mlc_attr;

/* Longest decision (a perfect tile of at most this many factors). */
#define MLC_SCHED_MAX_TILE 16

/* What a sampling instruction chose: the factor list of SamplePerfectTile,
 * or one number (the chosen candidate's index for SampleCategorical).
 * n == 0: no decision. */
typedef struct mlc_decision {
  int n;
  int64_t v[MLC_SCHED_MAX_TILE];
} mlc_decision;

typedef struct mlc_inst {
  mlc_inst_kind kind;
  int n_inputs;
  mlc_operand *inputs;
  int n_attrs;
  mlc_attr *attrs; /* in the canonical order of inst_kinds.def */
  int n_outputs;
  mlc_rv *outputs; /* handles this instruction defines, in the trace's numbering */
  mlc_decision decision;
} mlc_inst;

/* An instruction list. Random variables are numbered in the order the
 * instructions define them; rv_kinds gives each one's kind (its name is
 * the kind's letter and the number: b0, l1, v4). */
typedef struct mlc_trace {
  MLC_VEC(mlc_inst) insts;
  MLC_VEC(mlc_rv_kind) rv_kinds;
} mlc_trace;

/* Canonical compact JSON (docs/FORMATS.md):
 *   {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],...],
 *    "decisions":{"2":[32,4]},"version":1}
 * Inputs are handle names, integers, floats, null, or a string literal
 * written in quotes inside the JSON string ("\"x\""), as TVM does. */
void mlc_trace_to_json(mlc_str *out, const mlc_trace *t);
/* Reads JSON text into a trace allocated in `a`. A missing "version" means
 * 1; a newer version, malformed JSON, an unknown kind, an undefined handle
 * or a malformed instruction is an error naming the instruction. */
mlc_trace *mlc_trace_from_json(mlc_arena *a, const char *text, size_t len, mlc_error *err);
/* The Python-like form of the notes:
 *   # from tvm import tir
 *   def apply_trace(sch: tir.Schedule) -> None:
 *     b0 = sch.get_block(name="C", func_name="main")
 *     ... */
void mlc_trace_print(mlc_str *out, const mlc_trace *t);
mlc_trace *mlc_trace_copy(mlc_arena *a, const mlc_trace *t);
/* Hash of the canonical JSON text, as the database keys records. */
uint64_t mlc_trace_hash(const mlc_trace *t);
/* "l2" for a handle of the trace. */
void mlc_trace_rv_name(const mlc_trace *t, mlc_rv rv, char buf[16]);

/* ---- schedule state ------------------------------------------------------ */

typedef struct mlc_sched mlc_sched;

/* A state over a deep copy of f (f itself is never touched), its PCG32
 * seeded with `seed`. */
mlc_sched *mlc_sched_new(const mlc_prim_func *f, uint64_t seed);
/* The same, but running out of memory while copying f
 * (a copy as big as f) returns NULL with "out of memory" instead of
 * aborting; only the fixed-size arena header still aborts. */
mlc_sched *mlc_sched_try_new(const mlc_prim_func *f, uint64_t seed, mlc_error *err);
/* An independent copy: IR, handles, trace and generator state. */
mlc_sched *mlc_sched_copy(const mlc_sched *s);
void mlc_sched_free(mlc_sched *s);
/* The current IR; owned by the state, valid until the next primitive. */
const mlc_prim_func *mlc_sched_func(const mlc_sched *s);
const mlc_trace *mlc_sched_trace(const mlc_sched *s);
mlc_arena *mlc_sched_arena(mlc_sched *s);
void mlc_sched_seed(mlc_sched *s, uint64_t seed);
int mlc_sched_n_rvs(const mlc_sched *s);
mlc_rv_kind mlc_sched_rv_kind(const mlc_sched *s, mlc_rv rv);
/* The drawn value of a VALUE handle. */
int64_t mlc_sched_rv_value(const mlc_sched *s, mlc_rv rv);
/* Whether a block or loop handle still names a node of the function. */
bool mlc_sched_rv_alive(const mlc_sched *s, mlc_rv rv);
/* The loop statement (FOR) or block of a live handle; NULL otherwise. */
const mlc_stmt *mlc_sched_rv_loop(const mlc_sched *s, mlc_rv rv);
const mlc_block *mlc_sched_rv_block(const mlc_sched *s, mlc_rv rv);

/* ---- getters -------------------------------------------------------------- */

/* The block named `name` of the function `func_name` ("main"; NULL means
 * the state's function). Error if absent or if several blocks share it. */
bool mlc_sched_get_block(mlc_sched *s, const char *name, const char *func_name, mlc_rv *out,
                         mlc_error *err);
/* The loops above a block up to its parent block, outer to inner: returns
 * their count and points *out at the new handles (owned by the state), or
 * -1 on error. */
int mlc_sched_get_loops(mlc_sched *s, mlc_rv block, mlc_rv **out, mlc_error *err);
/* The blocks directly under a block or loop (not inside child blocks), in
 * program order. Same conventions as get_loops. */
int mlc_sched_get_child_blocks(mlc_sched *s, mlc_rv block_or_loop, mlc_rv **out,
                               mlc_error *err);
/* Blocks under the same parent block that come before this one and write
 * a buffer it reads (producers), or come after it and read a buffer it
 * writes (consumers); a reduction counts as reading its output. */
int mlc_sched_get_producers(mlc_sched *s, mlc_rv block, mlc_rv **out, mlc_error *err);
int mlc_sched_get_consumers(mlc_sched *s, mlc_rv block, mlc_rv **out, mlc_error *err);

/* ---- loop primitives (loops.c) -------------------------------------------- */

/* Split a loop into n nested loops (outer first) named <var>_0 ...
 * <var>_<n-1>; out receives their n handles. Factors are integer literals,
 * VALUE handles, or at most one None (or -1) inferred as
 * ceil(extent / product of the others). A product larger than the extent
 * adds a T.where predicate to the blocks under the loop; a smaller one is
 * refused. With preserve_unit_iters false, unit loops bind 0. As in
 * TensorIR, a loop bound to a thread or carrying annotations is refused
 * (the new loops are serial and plain). A loop of symbolic extent E (an
 * expression of the function's size vars) takes None as its first factor:
 * the outer loop runs ceil(E / the others' product) times and a predicate
 * cuts the tail; sample_perfect_tile on such a loop tiles E's bound and
 * gives None as its first value. */
bool mlc_sched_split(mlc_sched *s, mlc_rv loop, int n, const mlc_operand *factors,
                     bool preserve_unit_iters, mlc_rv *out, mlc_error *err);
/* Fuse n >= 2 loops into one named <v0>_<v1>_..._fused. Requires each loop
 * to be the only child (the body) of the previous one and to start at 0,
 * and no block binding a spatial and a reduce iter to the fused loops (the
 * reduction would interleave with its outputs and could skip its init).
 * As in TensorIR, loops bound to a thread or carrying annotations are
 * refused. One loop may have a symbolic extent: the fused loop runs over
 * it times the other extents. Fusing it under loops that run more than
 * once would need a division by a symbolic stride, so it first moves
 * outside them (a Reorder, recorded as one), unless the state keeps the
 * order (mlc_sched_set_fuse_outer_min). */
bool mlc_sched_fuse(mlc_sched *s, int n, const mlc_rv *loops, bool preserve_unit_iters,
                    mlc_rv *out, mlc_error *err);
/* How this state's Fuse treats a loop of symbolic extent under loops that
 * together run at least min_outer times: it fuses only those outer loops
 * (one of them is itself the result), and the symbolic loop and the loops
 * after it stay inside in their order. A parallel fused nest then keeps
 * the order its schedule chose: a dense layer's rows inside its weight's
 * tiles, each weight tile read once by one thread, instead of every
 * thread reading all of the weight. 0 (the default): always move the
 * symbolic loop outermost. Replays of a trace must use the same setting
 * to give the same function. */
void mlc_sched_set_fuse_outer_min(mlc_sched *s, int64_t min_outer);
/* Reorder loops that lie on one chain of single-child loops (each given
 * loop an ancestor or descendant of the others, no branch in between):
 * the given loops take the positions they occupy, in the order given;
 * loops between them that are not given keep their positions. */
bool mlc_sched_reorder(mlc_sched *s, int n, const mlc_rv *loops, mlc_error *err);

/* ---- loop kinds and annotations (annotate.c) ----------------------------- */

/* parallel/vectorize/bind follow TensorIR's ParallelizeComputation: each
 * block directly under the loop must be complete (all iters spatial, the
 * only writer there of what it writes, reading none of it) or a reduction
 * (T.init(), affine bindings, the only writer, no reduce iter in an output
 * index); every block under it must have quasi-affine bindings; and no
 * reduce iter may depend on the loop (except threadIdx bindings: a
 * cross-thread reduction; and vectorize of a block whose reduction is a
 * reducer's, mlc_block_reducer: its lanes then combine as a tree, the
 * sum reassociated within rounding). parallel, vectorize and blockIdx bindings also
 * refuse a loop under which one block reads or writes a part of a buffer
 * that another block writes in other iterations (a carried dependence).
 * bind refuses a tag already bound with another extent above or below the
 * loop. A loop already bound may be bound again or given another kind
 * (its binding is replaced), as in TensorIR.
 * Tags: blockIdx.{x,y,z}, threadIdx.{x,y,z}, vthread[.{x,y,z}]. */
bool mlc_sched_parallel(mlc_sched *s, mlc_rv loop, mlc_error *err);
bool mlc_sched_vectorize(mlc_sched *s, mlc_rv loop, mlc_error *err);
bool mlc_sched_unroll(mlc_sched *s, mlc_rv loop, mlc_error *err);
bool mlc_sched_bind(mlc_sched *s, mlc_rv loop, const char *thread_axis, mlc_error *err);
/* Set key on a block or loop to an int, float or string literal, a VALUE
 * handle (stored as its int) or an ANN value (a bool, list or dict, copied;
 * an int, float or string ANN is recorded as the plain operand), replacing
 * an existing value. */
bool mlc_sched_annotate(mlc_sched *s, mlc_rv block_or_loop, const char *key, mlc_operand value,
                        mlc_error *err);
/* Remove key; refused if the block or loop does not carry it. */
bool mlc_sched_unannotate(mlc_sched *s, mlc_rv block_or_loop, const char *key, mlc_error *err);

/* ---- cache stages and buffer storage (cache.c) --------------------------- */

/* Storage scopes: "global", "shared", "local", each optionally tagged
 * ("global.A_reg", "shared.dyn"). New buffer names have the scope's dots
 * made underscores; a name (buffer or block) already in the function gets
 * _1, _2, ... (block names are unique here; TVM would repeat them).
 *
 * cache_read: a copy block "<A>_<scope>" (out: its handle) from buffer A,
 * the read_buffer_index-th of the block's T.reads, into a new buffer
 * "<A>_<scope>" allocated in the block's parent (scope) block. The readers
 * of A in that scope (or just the given consumer blocks) read the cache
 * instead. A written by no block of the scope is copied whole at the
 * scope's start; otherwise the copy goes after A's only writer and before
 * its first consumer, holding what the writer writes. Refused: index out
 * of range, invalid scope, a block that also writes A, several writers of
 * A, consumers that do not read A or are outside the scope, a consumer that
 * would run before the copy or read outside what it holds.
 *
 * cache_write: the block writes a new buffer "<C>_<scope>" instead of C,
 * the write_buffer_index-th of its T.writes; a write-back block
 * "<C>_<scope>" copies it to C before C's first later reader (at the end
 * of the scope if none). Given consumer blocks read the cache directly.
 * Inside a block with nested blocks every access to C goes to the cache.
 * Refused: index out of range, invalid scope, a block that is not C's only
 * writer in the scope, a block reading C's earlier content (no init; for
 * a block with nested blocks, a read of C that no sub-block in an earlier
 * statement of its body wrote in full), a write that does not cover a
 * dense box, bad consumers. */
bool mlc_sched_cache_read(mlc_sched *s, mlc_rv block, int read_buffer_index,
                          const char *storage_scope, int n_consumers, const mlc_rv *consumers,
                          mlc_rv *out, mlc_error *err);
bool mlc_sched_cache_write(mlc_sched *s, mlc_rv block, int write_buffer_index,
                           const char *storage_scope, int n_consumers, const mlc_rv *consumers,
                           mlc_rv *out, mlc_error *err);
/* Give the buffer_index-th written buffer of the block another scope (it
 * is renamed "<B>_<scope>", as TVM does). It must be allocated by a block,
 * not be a parameter. The same scope again is accepted and changes nothing. */
bool mlc_sched_set_scope(mlc_sched *s, mlc_rv block, int buffer_index, const char *storage_scope,
                         mlc_error *err);
/* Ask that dimension `axis` (negative counts from the end) of the
 * buffer_index-th written buffer be padded so its stride is
 * factor * k + offset. Recorded, as TVM does, in the block annotation
 * "buffer_dim_align": a list (MLC_ANN_LIST) of [buffer_index, axis, factor,
 * offset] integer lists, the axis normalized, printed [[0, 0, 32, 8]]; a
 * tuple for the same buffer and axis is replaced, others are kept. An
 * existing value of another form is refused. factor > 0; the buffer must be
 * allocated by a block. */
bool mlc_sched_storage_align(mlc_sched *s, mlc_rv block, int buffer_index, int axis, int factor,
                             int offset, mlc_error *err);

/* ---- reductions and blocks (reduction.c, blockize.c) ------------------------ */

/* decompose_reduction: split a reduction block (one with T.init()) into an
 * init block "<name>_init" placed right before `loop`, under copies
 * ("<var>_init") of the loops between `loop` and the block that its spatial
 * bindings use, and the update block "<name>_update" (the block handle now
 * names it; its T.reads gain the output). Requires `loop` to be a loop
 * around the block in its scope, at or above every loop a reduce iter
 * depends on, and every loop from `loop` down to drive some iter (else the
 * update would accumulate repeatedly). The init block gets the block's
 * annotations (its loop copies get none), as in TVM. out: the init block. */
bool mlc_sched_decompose_reduction(mlc_sched *s, mlc_rv block, mlc_rv loop, mlc_rv *out,
                                   mlc_error *err);
/* rfactor: `loop` (serial, starting at 0, driving only reduce iters) holds
 * one reduction block whose init stores the identity of a recognised
 * commutative reducer (sum, product, max, min) and whose body is
 * `B[idx] = B[idx] op rhs` (either operand order). Creates the buffer
 * "<B>_rf" (the loop's extent inserted at factor_axis; -(ndim+1)..ndim),
 * the rf block "<name>_rf" (loop's iter spatial, computed under copies of
 * all the block's loops, placed before them) and turns the block into the
 * write-back block, which keeps the original loops minus the other
 * reduce loops and reduces over the rf axis. out: the rf block. Refused
 * when a predicate depends on a reduce loop (partial results could stay
 * uninitialised) or a later block under the same loops writes what the
 * reduction reads. Both blocks keep the block's annotations. Like
 * decompose_reduction, requires quasi-affine bindings (loop vars, +, -,
 * * constant, // and % by a positive constant: fused loops qualify) with
 * every reduce iter at its minimum at the first iteration; a loop no iter
 * uses is factored only with extent 1, and under a reduce loop must have
 * extent 1. */
bool mlc_sched_rfactor(mlc_sched *s, mlc_rv loop, int factor_axis, mlc_rv *out, mlc_error *err);
/* blockize: `loop` must hold a single block under a chain of loops. Each
 * iter binding splits into an outer part (loops above `loop`) and a dense
 * inner part (an affine mixed-radix sum of loops at or below it); the
 * outer block "<name>_o" binds <v>_o (or the var itself when wholly
 * outer) and covers the inner block's regions relaxed over the inner
 * iters; the inner block (the block handle) keeps its name with <v>_i.
 * An init moves to the outer block as "<name>_init" over the inner loops
 * its spatial iters use, and the inner block then lists its output in
 * T.reads. Outer iters of extent 1 are kept only with preserve_unit_iters.
 * Refused when a T.where term mixes loops inside and outside `loop`, or
 * depends only on loops inside it (the outer block's regions, stated over
 * the inner iter domains as TVM does, would not cover the body the way
 * the verifier relaxes it). out: the outer block. */
bool mlc_sched_blockize(mlc_sched *s, mlc_rv loop, bool preserve_unit_iters, mlc_rv *out,
                        mlc_error *err);

/* ---- tensor intrinsics and tensorize (tensorize.c) -------------------- */

/* A tensor intrinsic: a description prim_func (what the instruction
 * computes on its operands, the parameters, in its root block's body) and
 * an implementation prim_func with the same operands (shape, dtype,
 * storage scope, in order) that computes it another way, typically with
 * T.call_extern("int32", "f", C.access_ptr("rw"), ..., C.strides[0]).
 * Registered by name in one process-wide table that starts with the
 * built-ins ("tmm16": the notes' 16x16 C += A @ B.T on global.A_reg,
 * global.B_reg, global.accumulator, calling tmm16(C, A, B, sa, sb, sc)).
 * Registering a name again replaces it. Both functions must verify. */
bool mlc_tensor_intrin_register(const char *name, const mlc_prim_func *desc,
                                const mlc_prim_func *impl, mlc_error *err);
/* Every pair NAME_desc / NAME_impl of a TVMScript text, as NAME; *n_added
 * (may be NULL) counts them. None found is an error. */
bool mlc_tensor_intrin_register_text(const char *filename, const char *text, int *n_added,
                                     mlc_error *err);
/* The same for the text of the file at path (mlc-tune, mlc-compile,
 * mlc-db and mlc-worker --intrin FILE.py). */
bool mlc_tensor_intrin_register_file(const char *path, int *n_added, mlc_error *err);
bool mlc_tensor_intrin_exists(const char *name);
/* The registered intrinsics, in registration order (0 <= i < count);
 * a name stays valid for the process. */
int mlc_tensor_intrin_count(void);
const char *mlc_tensor_intrin_name(int i);
/* Whether the description computes a dot-product tile: its root body is
 * one loop over `lanes` outputs around one loop over `depth` reduction
 * elements around a block with one spatial and one reduce iter (the
 * shape the tuner's tiling-with-intrinsic rule cuts around, e.g. 16 x 4
 * for dot_16x4_u8i8i32_vnni). False for others (tmm16) and unknown names. */
bool mlc_tensor_intrin_dot_shape(const char *name, int64_t *lanes, int64_t *depth);
/* the built-in intrinsics of CPU dot-product instructions
 * whose feature the comma-separated LLVM feature list turns on
 * (mlc_target_cpu_features of the target): "+avx512vnni" registers
 * dot_16x4_u8i8i32_vnni (schedule/intrin_cpu.c: C[0, i] += A[0, k] *
 * B[0, 0, i, k] over uint8 A (1, 4), int8 B (1, 1, 16, 4), int32 C (1, 16),
 * i < 16, k < 4), dot_16x4_u8i8i32_vnni_nchwc (the same with
 * conv2d_nchwc_int8's operand ranks 5, 7 and 5) and the family of
 * register-blocked micro-kernels dense_u8i8i32_vnni_<R>x<C>x<K> (C[i, j] +=
 * A[i, k] * B[j / 16, k / 4, j % 16, k % 4] over uint8 A (R, K), int8 B
 * (C / 16, K / 4, 16, 4), int32 C (R, C); R <= 16, C a multiple of 16 up to
 * 128, K of 4 up to 4096); "+amx-int8" the AMX family
 * dense_u8i8i32_amx_<R>x<C>x<K> (the same computation; R and C 16 or 32, K
 * a multiple of 64 up to 4096); "+avx512bf16" registers
 * dot_16x2_bf16bf16f32_avx512bf16 (C[0, i] += float32(A[0, k]) *
 * float32(B[0, 0, i, k]), bfloat16 A (1, 2), B (1, 1, 16, 2), float32 C
 * (1, 16), k < 2, as vdpbf16ps rounds). A family's members are registered
 * when first looked up by name (mlc_tensor_intrin_exists, tensorize,
 * replay). The CPU builtins their implementations call are registered with
 * the interpreter. *n_added (may be NULL) counts the fixed intrinsics, not
 * the families; none is not an error. */
bool mlc_tensor_intrin_register_cpu(const char *features, int *n_added, mlc_error *err);
/* tensorize: match a block (or the block blockize makes of the loop nest
 * under a loop, preserve_unit_iters) against the intrinsic's description,
 * as TensorIR's comparator does: the same loop nest (extents), blocks
 * (iterator kinds, domains, bindings, init presence), statements,
 * operations and dtypes; each buffer of the block plays one operand (same
 * dtype and storage scope), always accessed at the operand's index plus
 * one offset, and the block's read/write regions of it start there and
 * have the operand's shape. The block keeps its iterators and regions; its
 * body becomes the implementation's, each operand bound to its region.
 * Refused with TensorIR's reasons (shape, dtype, storage scope, access
 * pattern or reduction mismatch: a block with an init needs
 * decompose_reduction first), the state unchanged. Recorded as
 * ["Tensorize", [block_or_loop], {"intrin": NAME}, []]; replay needs the
 * intrinsic registered. */
bool mlc_sched_tensorize(mlc_sched *s, mlc_rv block_or_loop, const char *intrin, mlc_error *err);

/* ---- library offload (library.c) ------------------------------------------ */

/* library_call: a plain float32 (batch) matrix product block,
 * C[b.., i, j] (+)= A[b.., i, k] * B[b.., k, j] with A possibly indexed
 * [k, i] and B [j, k] (transposed), A or B possibly without the batch
 * indices, and T.init C = 0 or no init (accumulate), under one loop per
 * iterator (its whole domain, nothing else in the nest), becomes one call
 * of the library's matrix product per batch: the i, j, k loops go, the
 * block keeps its batch iterators and loops and calls
 * T.call_extern("int32", "mlc_rt_sgemm", trans_a, trans_b, M, N, K,
 * A ptr, lda, B ptr, ldb, C ptr, ldc, accumulate) (libmlcrt: OpenBLAS's
 * cblas_sgemm; the interpreter runs it as a plain loop, registered when
 * this primitive runs). Libraries: "openblas". Refused, the state
 * unchanged, for any other block (other dtypes, a convolution's index
 * arithmetic, a reduction that is not a product sum, a scheduled nest).
 * Recorded as ["LibraryCall", [block], {"library": "openblas"}, []]. */
bool mlc_sched_library_call(mlc_sched *s, mlc_rv block, const char *library, mlc_error *err);
/* Whether library_call knows the library. */
bool mlc_sched_library_known(const char *library);
/* The library of a trace's first LibraryCall, or NULL (a tuned trace). */
const char *mlc_trace_library(const mlc_trace *t);

/* ---- sampling (sample.c) ------------------------------------------------- */

/* n factors (outer first) whose product is the loop's constant extent and
 * whose innermost is <= max_innermost_factor, uniform over all such
 * factorizations; out receives n VALUE handles. */
bool mlc_sched_sample_perfect_tile(mlc_sched *s, mlc_rv loop, int n, int max_innermost_factor,
                                   mlc_rv *out, mlc_error *err);
/* One of n candidates with the given probabilities (non-negative, not all
 * zero; normalized). */
bool mlc_sched_sample_categorical(mlc_sched *s, int n, const int64_t *candidates,
                                  const double *probs, mlc_rv *out, mlc_error *err);
/* Marks the start of what postprocessors did. */
void mlc_sched_enter_postproc(mlc_sched *s);

/* ---- compute location (compute_at.c, inline.c) ------------------------------ */

/* Move a producer block under `loop` (compute_at) or a consumer block
 * (reverse_compute_at), as TensorIR does: the block's loops are
 * regenerated (ax0, ax1, ...) to cover what the blocks under the loop
 * read of it (compute_at; a shared-scope buffer under threadIdx/vthread
 * loops covers the whole thread block) or produce for it (reverse), unit
 * loops dropped unless preserve_unit_loops, with a T.where where the
 * range may leave an iter's domain. index: -1 before the first consumer
 * (default), -2 after the last producer, or a position in the loop's
 * body between them. Requires a complete or reduction block in the
 * loop's scope, not under the loop; compute_at: not an output block and
 * every consumer under the loop; reverse: every producer under the loop;
 * each dependence still satisfied in every iteration (blocks under the
 * loop that feed the moved block must finish their elements within one
 * iteration and write what it reads there; blocks it passes must not
 * touch its buffers). The block's index into the matched buffer must be
 * an iter var plus a constant per dimension, one element per instance
 * (for reverse: its reads, so that consumer instances partition). A
 * reverse-computed reduction may run each output's reduction in pieces
 * across iterations of the loop and loops above it (the final sum of an
 * rfactor under the loop over partial sums) when those loops are not
 * parallel or vectorized, move no spatial iter, step the reduce iter
 * through its domain once from its minimum (no predicate), and hold no
 * other block touching its output. The loop may be the root mark of sample_compute_location (nothing moves) or
 * the inline mark (the block is inlined). */
bool mlc_sched_compute_at(mlc_sched *s, mlc_rv block, mlc_rv loop, bool preserve_unit_loops,
                          int index, mlc_error *err);
bool mlc_sched_reverse_compute_at(mlc_sched *s, mlc_rv block, mlc_rv loop,
                                  bool preserve_unit_loops, int index, mlc_error *err);
/* Substitute a complete block whose body is one store with the block's
 * iter vars as indices into every reader of its buffer, and remove it
 * (and its buffer). */
bool mlc_sched_compute_inline(mlc_sched *s, mlc_rv block, mlc_error *err);
/* Fold a complete consumer (no predicate) reading one produced buffer,
 * always at one index that is a bijective affine map of its iter vars
 * (per dimension, or the row-major split of one fused sum of them, as a
 * reshape reads; TVM inverts both with DetectIterMap), into its
 * single complete producer (whose only consumer it is), which then writes
 * the consumer's output; every producer instance must map into the
 * consumer's domain. */
bool mlc_sched_reverse_compute_inline(mlc_sched *s, mlc_rv block, mlc_error *err);
/* A loop where the block could be computed at, drawn uniformly among
 * TVM's candidates (the first consumer's loops down to the consumers'
 * common ancestor) that compute_at accepts, and the marks: the decision
 * is that loop's index in the consumer's get_loops, -1 the root mark, -2
 * the inline mark where the block can be inlined (both usable with
 * compute_at). */
bool mlc_sched_sample_compute_location(mlc_sched *s, mlc_rv block, mlc_rv *out, mlc_error *err);

/* ---- replay (replay.c) ----------------------------------------------------- */

typedef struct mlc_replay_opts {
  bool new_decisions;  /* draw every decision afresh from the state's PCG32 */
  int n_overrides;     /* decisions to use instead of the stored ones */
  const int *override_insts;            /* instruction indices */
  const mlc_decision *override_decisions;
  bool stop_at_postproc; /* leave out EnterPostproc and what follows */
  /* A trace of the same function at other sizes: a tile decision that no
   * longer fits keeps its inner factors where their product divides the
   * loop's extent (the outer factor takes the rest) before it is drawn
   * again. */
  bool carry_tiles;
} mlc_replay_opts;

typedef struct mlc_replay_report {
  int n_resampled;   /* decisions that no longer fit and were drawn again */
  int *resampled;    /* their instruction indices (state's arena) */
  int failed_at;     /* the instruction a failed replay stopped at; -1 */
} mlc_replay_report;

/* Apply t to s (normally fresh). opts and report may be NULL (stored
 * decisions, no report). On error the state holds the instructions before
 * the failing one; the message names the instruction. Running out of
 * memory (the state's arena, within any primitive) is an error too, "out
 * of memory", after which the state is fit only for mlc_sched_free. */
bool mlc_sched_replay(mlc_sched *s, const mlc_trace *t, const mlc_replay_opts *opts,
                      mlc_replay_report *report, mlc_error *err);

#endif
