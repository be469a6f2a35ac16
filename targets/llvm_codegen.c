/* LLVM IR for statements and functions of a lowered prim_func.
 *
 * Per prim_func (symbol S):
 *   i32 @S(i8** args)                        external: loads args[i], calls
 *   void @S.body(T0* noalias, ..., i32*)     internal, alwaysinline: the code
 *   void @S.parK(i64 i, i8* closure)         internal: a parallel loop's body
 *   void @S.parK.body(i64, T0*, ..., i32*)   internal, alwaysinline
 * The inner functions exist so buffer pointers can be noalias parameters:
 * after inlining, LLVM keeps that as alias scopes. The last parameter
 * points to the status the entry returns (0, or -1 after a failed heap
 * allocation).
 *
 * Loops: serial loops are a header with a phi; unrolled loops are emitted
 * `extent` times when small; vectorized loops switch codegen to vector mode
 * (llvm_internal.h), where a statement that cannot run on all lanes at once
 * (lane-dependent `if`, an allocation, a store whose lanes could collide or
 * read one another's results) is emitted as a serial loop over the lanes.
 */
#include "targets/llvm_internal.h"
#include "targets/lower_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <string.h>

/* Full unrolling while the unrolled code stays below this many IR nodes. */
#define UNROLL_MAX_NODES 4096

static void gen_stmt(cg *c, const mlc_stmt *s);

/* ---- checks ---------------------------------------------------------------- */

/* What the target cannot run, and vars used outside their loops (invalid
 * IR that would otherwise reach code generation), become errors here, so
 * code generation itself cannot fail. */
typedef struct check_ctx {
  mlc_arena *a;
  mlc_error *err;
  MLC_VEC(const mlc_var *) scope; /* enclosing loop vars */
  const mlc_var *unbound;         /* first var found out of scope */
  const mlc_target *target;
  bool bad_builtin;               /* err holds why a CPU builtin cannot be built */
} check_ctx;

static void check_builtin(const mlc_expr *e, void *ud) {
  check_ctx *cc = ud;
  if (e->kind == MLC_EXPR_CALL_EXTERN && !cc->bad_builtin && !cg_builtin_check(cc->target, e, cc->err))
    cc->bad_builtin = true;
}

static void check_var(const mlc_expr *e, void *ud) {
  check_ctx *cc = ud;
  if (e->kind != MLC_EXPR_VAR || cc->unbound) return;
  for (int i = cc->scope.len - 1; i >= 0; i--)
    if (cc->scope.data[i] == e->var) return;
  cc->unbound = e->var;
}

static bool check_loops(check_ctx *cc, const mlc_stmt *s, const mlc_stmt *par, const mlc_stmt *vec) {
  mlc_error *err = cc->err;
  if (!s) return true;
  lower_visit_exprs(s, check_var, cc);
  if (cc->unbound)
    return mlc_error_set(err, "variable %s is used outside the loop that defines it",
                         cc->unbound->name);
  lower_visit_exprs(s, check_builtin, cc);
  if (cc->bad_builtin) return false;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    const char *name = s->loop.var->name;
    switch (s->loop.kind) {
    case MLC_FOR_SERIAL:
    case MLC_FOR_UNROLLED: break;
    case MLC_FOR_THREAD_BINDING:
      return mlc_error_set(err, "loop %s bound to %s needs a GPU target", name,
                           s->loop.thread ? s->loop.thread : "a thread axis");
    case MLC_FOR_PARALLEL:
      if (par)
        return mlc_error_set(err, "nested parallel loops: %s inside parallel loop %s", name,
                             par->loop.var->name);
      if (vec)
        return mlc_error_set(err, "parallel loop %s inside vectorized loop %s", name,
                             vec->loop.var->name);
      par = s;
      break;
    case MLC_FOR_VECTORIZED: {
      int64_t n;
      if (vec)
        return mlc_error_set(err, "nested vectorized loops: %s inside %s", name, vec->loop.var->name);
      if (!mlc_expr_is_const_int(s->loop.extent, &n))
        return mlc_error_set(err, "vectorized loop %s has a non-constant extent", name);
      if (n < 1 || n > CG_MAX_LANES)
        return mlc_error_set(err, "vectorized loop %s has extent %lld; vector loops take 1 to %d lanes",
                             name, (long long)n, CG_MAX_LANES);
      vec = s;
      break;
    }
    }
    MLC_VEC_APUSH(cc->a, cc->scope, s->loop.var);
    bool ok = check_loops(cc, s->loop.body, par, vec);
    cc->scope.len--;
    return ok;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (!check_loops(cc, s->seq.stmts[i], par, vec)) return false;
    return true;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return true;
  case MLC_STMT_IF:
    return check_loops(cc, s->if_.then_s, par, vec) && check_loops(cc, s->if_.else_s, par, vec);
  case MLC_STMT_ALLOCATE: return check_loops(cc, s->alloc.body, par, vec);
  }
  mlc_unreachable();
}

/* ---- small helpers ------------------------------------------------------------ */

static void count_node(const mlc_expr *e, void *ud) {
  MLC_UNUSED(e);
  (*(int64_t *)ud)++;
}

/* IR nodes under s, stopping early past `cap`. */
static int64_t stmt_size(const mlc_stmt *s, int64_t cap) {
  if (!s) return 0;
  int64_t n = 1;
  lower_visit_exprs(s, count_node, &n);
  switch (s->kind) {
  case MLC_STMT_FOR: {
    int64_t ext = 1;
    mlc_expr_is_const_int(s->loop.extent, &ext);
    int64_t body = stmt_size(s->loop.body, cap);
    return ext > 0 && body > cap / ext ? cap + 1 : n + ext * body;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n && n <= cap; i++) n += stmt_size(s->seq.stmts[i], cap);
    return n;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return n;
  case MLC_STMT_IF: return n + stmt_size(s->if_.then_s, cap) + stmt_size(s->if_.else_s, cap);
  case MLC_STMT_ALLOCATE: return n + stmt_size(s->alloc.body, cap);
  }
  mlc_unreachable();
}

typedef struct reads_ctx {
  cg *c;
  const mlc_buffer *buf;
  const mlc_expr *idx; /* NULL: any read counts */
  bool found;
} reads_ctx;

static void reads_fn(const mlc_expr *e, void *ud) {
  reads_ctx *r = ud;
  if (e->kind != MLC_EXPR_LOAD || e->load.buf != r->buf) return;
  int64_t d;
  if (!r->idx || !mlc_expr_const_diff(r->c->a, e->load.indices[0], (mlc_expr *)r->idx, &d) || d != 0)
    r->found = true;
}

/* Whether val loads buf at an index other than idx (any index: idx NULL). */
static bool reads_buffer(cg *c, const mlc_expr *val, const mlc_buffer *buf, const mlc_expr *idx) {
  reads_ctx r = {c, buf, idx, false};
  lower_visit_expr(val, reads_fn, &r);
  return r.found;
}

static LLVMValueRef to_mem(cg *c, LLVMValueRef v, mlc_dtype t) { return cg_to_mem(c, v, t); }

static LLVMValueRef alloca_in_entry(cg *c, LLVMTypeRef ty, unsigned align) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(b, c->entry);
  LLVMValueRef v = LLVMBuildAlloca(b, ty, "");
  LLVMSetAlignment(v, align);
  LLVMDisposeBuilder(b);
  return v;
}

static void add_attr(cg *c, LLVMValueRef fn, LLVMAttributeIndex idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  MLC_ASSERT(kind != 0);
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(c->ctx, kind, 0));
}

static LLVMValueRef add_internal_fn(cg *c, const char *name, LLVMTypeRef *params, int n,
                                    bool always_inline) {
  LLVMTypeRef fty = LLVMFunctionType(c->t_void, params, (unsigned)n, 0);
  LLVMValueRef fn = LLVMAddFunction(c->mod, name, fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
  if (always_inline) add_attr(c, fn, LLVMAttributeFunctionIndex, "alwaysinline");
  return fn;
}

/* ---- functions ------------------------------------------------------------------ */

typedef struct fn_state {
  LLVMValueRef fn, status;
  LLVMBasicBlockRef entry, insert;
  int n_vars, n_bufs;
} fn_state;

/* Start emitting fn: an "entry" block that will hold allocas, then "body"
 * where code goes. Bindings pushed from now on are dropped by leave_fn. */
static void enter_fn(cg *c, LLVMValueRef fn, fn_state *saved) {
  *saved = (fn_state){c->fn, c->status, c->entry, LLVMGetInsertBlock(c->b), c->vars.len,
                      c->bufs.len};
  c->fn = fn;
  c->entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(c->b, cg_new_block(c, "body"));
}

static void leave_fn(cg *c, const fn_state *saved) {
  LLVMBuildRetVoid(c->b);
  LLVMPositionBuilderAtEnd(c->b, c->entry);
  LLVMBuildBr(c->b, LLVMGetNextBasicBlock(c->entry));
  c->fn = saved->fn;
  c->status = saved->status;
  c->entry = saved->entry;
  c->vars.len = saved->n_vars;
  c->bufs.len = saved->n_bufs;
  if (saved->insert) LLVMPositionBuilderAtEnd(c->b, saved->insert);
}

static void bind_buf(cg *c, const mlc_buffer *b, LLVMValueRef ptr, bool noalias) {
  cg_buf cb = {b, ptr, noalias};
  MLC_VEC_APUSH(c->a, c->bufs, cb);
}

/* ---- loops ------------------------------------------------------------------------ */

typedef struct vec_state {
  int lanes;
  const mlc_var *lane_var;
  const mlc_expr *lane_min;
  LLVMValueRef base, vec;
} vec_state;

static vec_state save_vec(cg *c) {
  return (vec_state){c->lanes, c->lane_var, c->lane_min, c->lane_base, c->lane_vec};
}

static void restore_vec(cg *c, vec_state v) {
  c->lanes = v.lanes;
  c->lane_var = v.lane_var;
  c->lane_min = v.lane_min;
  c->lane_base = v.base;
  c->lane_vec = v.vec;
}

static void set_unroll_metadata(cg *c, LLVMValueRef br) {
  LLVMMetadataRef temp = LLVMTemporaryMDNode(c->ctx, NULL, 0);
  LLVMMetadataRef str = LLVMMDStringInContext2(c->ctx, "llvm.loop.unroll.enable", 23);
  LLVMMetadataRef enable = LLVMMDNodeInContext2(c->ctx, &str, 1);
  LLVMMetadataRef ops[2] = {temp, enable};
  LLVMMetadataRef loop = LLVMMDNodeInContext2(c->ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(temp, loop); /* makes loop refer to itself */
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c->ctx, "llvm.loop", 9),
                  LLVMMetadataAsValue(c->ctx, loop));
}

/* min and min + extent of a loop, in its var's type (scalars: loop bounds
 * never depend on a vector lane here). */
static void loop_bounds(cg *c, const mlc_stmt *s, LLVMValueRef *lo, LLVMValueRef *hi) {
  mlc_dtype t = s->loop.var->dtype;
  *lo = cg_convert(c, cg_expr(c, s->loop.min), s->loop.min->dtype, t);
  if (hi) {
    LLVMValueRef ext = cg_convert(c, cg_expr(c, s->loop.extent), s->loop.extent->dtype, t);
    *hi = LLVMBuildAdd(c->b, *lo, ext, "");
  }
}

/* The body once with the loop var bound to the loop's min. */
static void gen_once(cg *c, const mlc_stmt *s) {
  LLVMValueRef lo;
  loop_bounds(c, s, &lo, NULL);
  int saved = c->vars.len;
  cg_bind_var(c, s->loop.var, lo);
  gen_stmt(c, s->loop.body);
  c->vars.len = saved;
}

static void gen_serial(cg *c, const mlc_stmt *s, bool unroll_hint) {
  int64_t ext;
  if (mlc_expr_is_const_int(s->loop.extent, &ext) && ext == 1) { /* no loop for LLVM to remove */
    gen_once(c, s);
    return;
  }
  LLVMValueRef lo, hi;
  loop_bounds(c, s, &lo, &hi);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef head = cg_new_block(c, "for.head"), body = cg_new_block(c, "for.body");
  LLVMBasicBlockRef done = cg_new_block(c, "for.end");
  LLVMBuildBr(c->b, head);
  LLVMPositionBuilderAtEnd(c->b, head);
  LLVMValueRef i = LLVMBuildPhi(c->b, LLVMTypeOf(lo), s->loop.var->name);
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, i, hi, ""), body, done);
  LLVMPositionBuilderAtEnd(c->b, body);
  int saved = c->vars.len;
  cg_bind_var(c, s->loop.var, i);
  gen_stmt(c, s->loop.body);
  c->vars.len = saved;
  LLVMValueRef next = LLVMBuildNSWAdd(c->b, i, LLVMConstInt(LLVMTypeOf(i), 1, 0), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMValueRef br = LLVMBuildBr(c->b, head);
  if (unroll_hint) set_unroll_metadata(c, br);
  LLVMValueRef vals[2] = {lo, next};
  LLVMBasicBlockRef bbs[2] = {pre, latch};
  LLVMAddIncoming(i, vals, bbs, 2);
  LLVMPositionBuilderAtEnd(c->b, done);
}

/* Statement s once per lane, in scalar mode: a serial loop over the lane
 * var, so the lanes run in order as the source loop would. */
static void lane_loop(cg *c, const mlc_stmt *s) {
  mlc_var *v = (mlc_var *)c->lane_var;
  mlc_stmt *loop = mlc_for_new(c->a, v, (mlc_expr *)c->lane_min, mlc_int_t(c->a, v->dtype, c->lanes),
                               MLC_FOR_SERIAL, (mlc_stmt *)s);
  vec_state vs = save_vec(c);
  c->lanes = 0;
  gen_serial(c, loop, false);
  restore_vec(c, vs);
}

static void gen_unrolled(cg *c, const mlc_stmt *s) {
  int64_t ext;
  if (!mlc_expr_is_const_int(s->loop.extent, &ext) ||
      ext * stmt_size(s->loop.body, UNROLL_MAX_NODES) > UNROLL_MAX_NODES) {
    gen_serial(c, s, true);
    return;
  }
  LLVMValueRef lo;
  loop_bounds(c, s, &lo, NULL);
  int saved = c->vars.len;
  for (int64_t k = 0; k < ext; k++) {
    cg_bind_var(c, s->loop.var, LLVMBuildAdd(c->b, lo, LLVMConstInt(LLVMTypeOf(lo), (unsigned long long)k, 0), ""));
    gen_stmt(c, s->loop.body);
    c->vars.len = saved;
  }
}

static void gen_vectorized(cg *c, const mlc_stmt *s) {
  int64_t n;
  MLC_ASSERT(mlc_expr_is_const_int(s->loop.extent, &n)); /* check_loops */
  if (n == 1) {
    gen_once(c, s);
    return;
  }
  LLVMValueRef lo;
  loop_bounds(c, s, &lo, NULL);
  LLVMTypeRef ty = LLVMTypeOf(lo);
  LLVMValueRef steps[CG_MAX_LANES];
  for (int i = 0; i < n; i++) steps[i] = LLVMConstInt(ty, (unsigned long long)i, 0);
  vec_state vs = save_vec(c);
  c->lanes = (int)n;
  c->lane_var = s->loop.var;
  c->lane_min = s->loop.min;
  c->lane_base = lo;
  c->lane_vec = LLVMBuildAdd(c->b, cg_splat(c, lo, (int)n), LLVMConstVector(steps, (unsigned)n), "");
  gen_stmt(c, s->loop.body);
  restore_vec(c, vs);
}

/* The work of a T.evaluate: a CPU builtin's multiply-adds in 16-lane
 * steps (a micro-kernel call is thousands of stores' worth: counted as 1
 * it made a parallel loop of them look too small to share), a call of
 * some other function as that of a sizeable loop (what a kernel hands to
 * C code is rarely trivial), anything else as one store. */
static int64_t eval_cost(const mlc_expr *v) {
  if (v->kind != MLC_EXPR_CALL_EXTERN) return 1;
  double w = mlc_target_extern_work(v);
  if (w > 0) return 1 + (int64_t)(w < 0x1p40 ? w / 16 : 0x1p36);
  return mlc_target_is_builtin(v->ext.name) ? 1 : 4096;
}

/* The work of one run of s for the runtime's chunk size: stores (and
 * evaluates, eval_cost) executed, loops multiplying their bodies by their
 * constant extents (16 for a non-constant one), both branches of an if
 * counted. Saturates at 2^40: it only has to tell cheap bodies from
 * costly ones. */
static int64_t stmt_cost(const mlc_stmt *s) {
  const int64_t cap = (int64_t)1 << 40;
  if (!s) return 0;
  int64_t c = 0, ext;
  switch (s->kind) {
  case MLC_STMT_FOR:
    c = stmt_cost(s->loop.body);
    if (!mlc_expr_is_const_int(s->loop.extent, &ext)) ext = 16;
    return ext <= 0 ? 0 : c > cap / ext ? cap : c * ext;
  case MLC_STMT_BLOCK_REALIZE: return stmt_cost(s->realize.block->body);
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) c += stmt_cost(s->seq.stmts[i]);
    return c > cap ? cap : c;
  case MLC_STMT_STORE: return 1;
  case MLC_STMT_IF:
    c = stmt_cost(s->if_.then_s) + stmt_cost(s->if_.else_s);
    return c > cap ? cap : c;
  case MLC_STMT_ALLOCATE: return stmt_cost(s->alloc.body);
  case MLC_STMT_EVALUATE: return eval_cost(s->eval.value);
  }
  mlc_unreachable();
}

/* A parallel loop: the body becomes S.parK.body(i, captured...), called
 * for i in [lo, hi) by S.parK(lo, hi, closure), which mlc_parallel_for_range
 * calls once a chunk (the closure unpacked once, and the inlined body's
 * loop-invariant work hoisted out of the chunk's loop). Everything bound
 * now (buffers, loop vars) is captured; the closure lives in this
 * function's frame. The runtime gets the target's core count and the
 * body's cost (stmt_cost). */
static void gen_parallel(cg *c, const mlc_stmt *s) {
  int nb = c->bufs.len, nv = c->vars.len, np = nb + nv + 2;
  LLVMTypeRef *pt = MLC_NEW_ARRAY(c->a, LLVMTypeRef, np);
  pt[0] = c->t_i64;
  for (int i = 0; i < nb; i++) pt[1 + i] = LLVMTypeOf(c->bufs.data[i].ptr);
  for (int i = 0; i < nv; i++) pt[1 + nb + i] = LLVMTypeOf(c->vars.data[i].val);
  pt[np - 1] = LLVMPointerType(c->t_i32, 0);
  int k = c->n_outlined++;
  char *name = mlc_arena_printf(c->a, "%s.par%d", c->sym, k);
  LLVMValueRef body_fn = add_internal_fn(c, mlc_arena_printf(c->a, "%s.body", name), pt, np, true);
  for (int i = 0; i < nb; i++)
    if (c->bufs.data[i].noalias) add_attr(c, body_fn, (LLVMAttributeIndex)(2 + i), "noalias");
  LLVMTypeRef tramp_params[3] = {c->t_i64, c->t_i64, c->t_i8p};
  LLVMValueRef tramp = add_internal_fn(c, name, tramp_params, 3, false);

  /* Here: fill the closure and call the runtime. */
  LLVMTypeRef st = LLVMStructTypeInContext(c->ctx, pt + 1, (unsigned)(np - 1), 0);
  LLVMValueRef n = cg_convert(c, cg_expr(c, s->loop.extent), s->loop.extent->dtype, MLC_INT64);
  LLVMValueRef cl = alloca_in_entry(c, st, 8);
  for (int f = 0; f < np - 1; f++) {
    LLVMValueRef v = f < nb ? c->bufs.data[f].ptr : f < nb + nv ? c->vars.data[f - nb].val : c->status;
    LLVMBuildStore(c->b, v, LLVMBuildStructGEP2(c->b, st, cl, (unsigned)f, ""));
  }
  LLVMTypeRef fn_ptr = LLVMPointerType(LLVMGlobalGetValueType(tramp), 0);
  LLVMTypeRef rt_params[5] = {c->t_i64, fn_ptr, c->t_i8p, c->t_i32, c->t_i64};
  LLVMValueRef rt_args[5] = {n, tramp, LLVMBuildBitCast(c->b, cl, c->t_i8p, ""),
                             LLVMConstInt(c->t_i32, (unsigned long long)c->target->num_cores, 0),
                             LLVMConstInt(c->t_i64, (unsigned long long)stmt_cost(s->loop.body), 0)};
  cg_call_named(c, "mlc_parallel_for_range", c->t_void, rt_params, rt_args, 5);

  /* The trampoline: unpack the closure, then the body for lo <= i < hi
   * (lo < hi: the runtime hands out no empty range). */
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(c->ctx);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, tramp, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c->ctx, tramp, "iter");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, tramp, "done");
  LLVMPositionBuilderAtEnd(tb, entry);
  LLVMValueRef clp = LLVMBuildBitCast(tb, LLVMGetParam(tramp, 2), LLVMPointerType(st, 0), "");
  LLVMValueRef *args = MLC_NEW_ARRAY(c->a, LLVMValueRef, np);
  for (int f = 0; f < np - 1; f++)
    args[1 + f] = LLVMBuildLoad2(tb, pt[1 + f], LLVMBuildStructGEP2(tb, st, clp, (unsigned)f, ""), "");
  LLVMBuildBr(tb, loop);
  LLVMPositionBuilderAtEnd(tb, loop);
  LLVMValueRef iter = LLVMBuildPhi(tb, c->t_i64, "i");
  args[0] = iter;
  LLVMBuildCall2(tb, LLVMGlobalGetValueType(body_fn), body_fn, args, (unsigned)np, "");
  LLVMValueRef next = LLVMBuildNSWAdd(tb, iter, LLVMConstInt(c->t_i64, 1, 0), "");
  LLVMValueRef in[2] = {LLVMGetParam(tramp, 0), next};
  LLVMBasicBlockRef from[2] = {entry, loop};
  LLVMAddIncoming(iter, in, from, 2);
  LLVMBuildCondBr(tb, LLVMBuildICmp(tb, LLVMIntSLT, next, LLVMGetParam(tramp, 1), ""), loop, done);
  LLVMPositionBuilderAtEnd(tb, done);
  LLVMBuildRetVoid(tb);
  LLVMDisposeBuilder(tb);

  /* The body: rebind everything to parameters, then run one iteration. */
  fn_state saved;
  enter_fn(c, body_fn, &saved);
  for (int i = 0; i < nb; i++)
    bind_buf(c, c->bufs.data[i].buf, LLVMGetParam(body_fn, (unsigned)(1 + i)), c->bufs.data[i].noalias);
  for (int i = 0; i < nv; i++)
    cg_bind_var(c, c->vars.data[i].var, LLVMGetParam(body_fn, (unsigned)(1 + nb + i)));
  c->status = LLVMGetParam(body_fn, (unsigned)(np - 1));
  LLVMValueRef lo;
  loop_bounds(c, s, &lo, NULL);
  LLVMValueRef i = cg_convert(c, LLVMGetParam(body_fn, 0), MLC_INT64, s->loop.var->dtype);
  cg_bind_var(c, s->loop.var, LLVMBuildAdd(c->b, lo, i, ""));
  gen_stmt(c, s->loop.body);
  leave_fn(c, &saved);
}

static void gen_for(cg *c, const mlc_stmt *s) {
  if (c->lanes && (cg_uses_lane(c, s->loop.min) || cg_uses_lane(c, s->loop.extent))) {
    lane_loop(c, s);
    return;
  }
  switch (s->loop.kind) {
  case MLC_FOR_SERIAL: gen_serial(c, s, false); return;
  case MLC_FOR_UNROLLED: gen_unrolled(c, s); return;
  case MLC_FOR_VECTORIZED: gen_vectorized(c, s); return;
  case MLC_FOR_PARALLEL: gen_parallel(c, s); return;
  case MLC_FOR_THREAD_BINDING: break; /* rejected by check_loops */
  }
  mlc_unreachable();
}

/* ---- other statements ---------------------------------------------------------------- */

static void gen_store_scalar(cg *c, const mlc_stmt *s) {
  cg_buf *b = cg_lookup_buf(c, s->store.buf);
  mlc_dtype t = s->store.buf->dtype;
  int n = c->lanes;
  c->lanes = 0;
  LLVMValueRef p = cg_index_ptr(c, b, s->store.indices[0]);
  LLVMValueRef v = cg_convert(c, cg_expr(c, s->store.value), s->store.value->dtype, t);
  LLVMSetAlignment(LLVMBuildStore(c->b, to_mem(c, v, t), p), (unsigned)mlc_dtype_bytes(t));
  c->lanes = n;
}

/* The operand of `B[i] = B[i] op v` (either order) other than the
 * accumulator, for a reducer op (sum, product, max, min) and v not
 * reading B; NULL for any other store. */
static const mlc_expr *reduced_value(cg *c, const mlc_stmt *s, mlc_expr_kind *op) {
  const mlc_expr *val = s->store.value;
  *op = val->kind;
  if (!mlc_reducer_name(val->kind)) return NULL;
  const mlc_expr *acc = val->bin.a, *v = val->bin.b;
  if (acc->kind != MLC_EXPR_LOAD || acc->load.buf != s->store.buf) acc = val->bin.b, v = val->bin.a;
  int64_t d;
  if (acc->kind != MLC_EXPR_LOAD || acc->load.buf != s->store.buf ||
      !mlc_expr_const_diff(c->a, acc->load.indices[0], s->store.indices[0], &d) || d != 0 ||
      reads_buffer(c, v, s->store.buf, NULL))
    return NULL;
  return v;
}

/* A reduction over the lanes of a vectorized loop: every lane updates
 * the same element B[i] = B[i] op v (a reduce loop vectorized, see
 * mlc_sched_vectorize). v is computed on all lanes at once and its lanes
 * combined as a tree (cg_reduce_lanes), then into B[i]: the reduction
 * reassociated, as a sum's rfactor over lanes is, where a lane loop would
 * take a chain of n dependent operations. float32 and 32/64-bit integers;
 * false (the caller runs the lanes in order) for anything else. */
static bool gen_lane_reduction(cg *c, const mlc_stmt *s) {
  mlc_dtype t = s->store.buf->dtype;
  mlc_expr_kind op;
  const mlc_expr *v = reduced_value(c, s, &op);
  if (!v || !cg_uses_lane(c, v) || v->dtype != t ||
      (t != MLC_FLOAT32 && t != MLC_INT32 && t != MLC_INT64))
    return false;
  LLVMValueRef lanes = cg_splat(c, cg_expr(c, v), c->lanes);
  LLVMValueRef part = cg_reduce_lanes(c, op, t, lanes);
  int n = c->lanes;
  c->lanes = 0;
  cg_buf *b = cg_lookup_buf(c, s->store.buf);
  LLVMValueRef p = cg_index_ptr(c, b, s->store.indices[0]);
  LLVMValueRef acc = LLVMBuildLoad2(c->b, cg_mem_type(c, t), p, "");
  LLVMSetAlignment(acc, (unsigned)mlc_dtype_bytes(t));
  LLVMSetAlignment(LLVMBuildStore(c->b, cg_combine(c, op, t, acc, part), p), (unsigned)mlc_dtype_bytes(t));
  c->lanes = n;
  return true;
}

/* A store inside a vectorized loop: one vector store when the index is
 * unit-stride and no lane reads another lane's element; lane by lane
 * (scatter) when lanes cannot collide; a serial lane loop otherwise. */
static void gen_store_vector(cg *c, const mlc_stmt *s) {
  const mlc_buffer *buf = s->store.buf;
  const mlc_expr *idx = s->store.indices[0], *val = s->store.value;
  mlc_dtype t = buf->dtype;
  if (!cg_uses_lane(c, idx)) {
    if (!cg_uses_lane(c, val) && !reads_buffer(c, val, buf, NULL)) gen_store_scalar(c, s);
    else if (!gen_lane_reduction(c, s)) lane_loop(c, s);
    return;
  }
  const mlc_expr *base;
  bool unit = cg_unit_stride(c, idx, &base);
  if (reads_buffer(c, val, buf, unit ? idx : NULL)) {
    lane_loop(c, s);
    return;
  }
  cg_buf *b = cg_lookup_buf(c, buf);
  LLVMValueRef v = cg_convert(c, cg_expr(c, val), val->dtype, t);
  v = to_mem(c, cg_splat(c, v, c->lanes), t);
  unsigned align = (unsigned)mlc_dtype_bytes(t);
  if (unit) {
    LLVMValueRef p = cg_index_ptr(c, b, base);
    p = LLVMBuildBitCast(c->b, p, LLVMPointerType(LLVMTypeOf(v), 0), "");
    LLVMSetAlignment(LLVMBuildStore(c->b, v, p), align);
    return;
  }
  LLVMValueRef iv = cg_index(c, idx);
  for (int i = 0; i < c->lanes; i++) {
    LLVMValueRef k = LLVMConstInt(c->t_i32, (unsigned long long)i, 0);
    LLVMValueRef p = cg_elem_ptr(c, b, LLVMBuildExtractElement(c->b, iv, k, ""));
    LLVMSetAlignment(LLVMBuildStore(c->b, LLVMBuildExtractElement(c->b, v, k, ""), p), align);
  }
}

static void gen_if(cg *c, const mlc_stmt *s) {
  if (cg_uses_lane(c, s->if_.cond)) {
    lane_loop(c, s);
    return;
  }
  LLVMValueRef cond = cg_convert(c, cg_expr(c, s->if_.cond), s->if_.cond->dtype, MLC_BOOL);
  LLVMBasicBlockRef tb = cg_new_block(c, "if.then");
  LLVMBasicBlockRef eb = s->if_.else_s ? cg_new_block(c, "if.else") : NULL;
  LLVMBasicBlockRef done = cg_new_block(c, "if.end");
  LLVMBuildCondBr(c->b, cond, tb, eb ? eb : done);
  LLVMPositionBuilderAtEnd(c->b, tb);
  gen_stmt(c, s->if_.then_s);
  LLVMBuildBr(c->b, done);
  if (eb) {
    LLVMPositionBuilderAtEnd(c->b, eb);
    gen_stmt(c, s->if_.else_s);
    LLVMBuildBr(c->b, done);
  }
  LLVMPositionBuilderAtEnd(c->b, done);
}

/* Small buffers: a 64-byte aligned alloca in the function's entry block
 * (the same storage every time the statement runs, which SROA can turn
 * into registers). Large ones: libmlcrt's workspace alloc/free around the
 * body (a block kept for the next call, not fresh pages each time), which
 * is skipped with status -1 when the allocation fails. One over the
 * tensor byte limit (8 GiB) always fails so: a machine that overcommits
 * memory would grant it and then take hours to fill it. */
static void gen_allocate(cg *c, const mlc_stmt *s) {
  const mlc_buffer *buf = s->alloc.buf;
  MLC_ASSERT(buf->ndim == 1);
  LLVMTypeRef mty = cg_mem_type(c, buf->dtype);
  int64_t n = buf->shape[0], bytes = n * mlc_dtype_bytes(buf->dtype);
  int saved = c->bufs.len;
  if (bytes <= MLC_STACK_ALLOC_MAX) {
    LLVMValueRef arr = alloca_in_entry(c, LLVMArrayType(mty, (unsigned)n), 64);
    bind_buf(c, buf, LLVMBuildBitCast(c->b, arr, LLVMPointerType(mty, 0), ""), true);
    gen_stmt(c, s->alloc.body);
    c->bufs.len = saved;
    return;
  }
  LLVMValueRef size = LLVMConstInt(c->t_i64, (unsigned long long)bytes, 0);
  LLVMValueRef mem = bytes > MLC_MAX_TENSOR_BYTES
                         ? LLVMConstNull(c->t_i8p)
                         : cg_call_named(c, "mlc_rt_workspace_alloc", c->t_i8p, &c->t_i64, &size, 1);
  LLVMBasicBlockRef ok = cg_new_block(c, "alloc.ok"), fail = cg_new_block(c, "alloc.fail");
  LLVMBasicBlockRef done = cg_new_block(c, "alloc.end");
  LLVMBuildCondBr(c->b, LLVMBuildIsNull(c->b, mem, ""), fail, ok);
  LLVMPositionBuilderAtEnd(c->b, fail);
  LLVMBuildStore(c->b, LLVMConstInt(c->t_i32, (unsigned long long)-1, 1), c->status);
  LLVMBuildBr(c->b, done);
  LLVMPositionBuilderAtEnd(c->b, ok);
  bind_buf(c, buf, LLVMBuildBitCast(c->b, mem, LLVMPointerType(mty, 0), ""), true);
  gen_stmt(c, s->alloc.body);
  c->bufs.len = saved;
  LLVMTypeRef free_params[2] = {c->t_i8p, c->t_i64};
  LLVMValueRef free_args[2] = {mem, size};
  cg_call_named(c, "mlc_rt_workspace_free", c->t_void, free_params, free_args, 2);
  LLVMBuildBr(c->b, done);
  LLVMPositionBuilderAtEnd(c->b, done);
}

static void gen_stmt(cg *c, const mlc_stmt *s) {
  switch (s->kind) {
  case MLC_STMT_FOR: gen_for(c, s); return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable(); /* lowered away */
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) gen_stmt(c, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    if (c->lanes) gen_store_vector(c, s);
    else gen_store_scalar(c, s);
    return;
  case MLC_STMT_IF: gen_if(c, s); return;
  case MLC_STMT_ALLOCATE:
    if (c->lanes) lane_loop(c, s); /* each lane its own buffer */
    else gen_allocate(c, s);
    return;
  case MLC_STMT_EVALUATE: cg_expr(c, s->eval.value); return;
  }
  mlc_unreachable();
}

/* ---- entry ------------------------------------------------------------------------------ */

static bool attr_true(const mlc_prim_func *f, const char *key) {
  const mlc_ann *a = mlc_ann_find(f->n_attrs, f->attrs, key);
  return a && (a->kind == MLC_ANN_BOOL || a->kind == MLC_ANN_INT) && a->i != 0;
}

/* ---- the module ------------------------------------------------------------------ */

static void init_types(cg *c) {
  c->t_i1 = LLVMInt1TypeInContext(c->ctx);
  c->t_i8 = LLVMInt8TypeInContext(c->ctx);
  c->t_i16 = LLVMInt16TypeInContext(c->ctx);
  c->t_i32 = LLVMInt32TypeInContext(c->ctx);
  c->t_i64 = LLVMInt64TypeInContext(c->ctx);
  c->t_f16 = LLVMHalfTypeInContext(c->ctx);
  c->t_f32 = LLVMFloatTypeInContext(c->ctx);
  c->t_void = LLVMVoidTypeInContext(c->ctx);
  c->t_i8p = LLVMPointerType(c->t_i8, 0);
}

void cg_open(cg *c, const mlc_target *t, LLVMTargetMachineRef tm) {
  *c = (cg){.target = t};
  c->a = mlc_arena_new();
  c->ctx = LLVMContextCreate();
  c->mod = LLVMModuleCreateWithNameInContext("mlc", c->ctx);
  c->b = LLVMCreateBuilderInContext(c->ctx);
  init_types(c);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(c->mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(c->mod, layout);
  LLVMDisposeMessage(layout);
  LLVMDisposeTargetData(td);
}

bool cg_verify(cg *c, mlc_str *ir_text, mlc_error *err) {
  char *msg = NULL;
  bool ok = !LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &msg);
  if (!ok) mlc_error_set(err, "internal error: invalid LLVM IR: %.600s", msg ? msg : "");
  LLVMDisposeMessage(msg);
  if (ok && ir_text) {
    char *text = LLVMPrintModuleToString(c->mod);
    mlc_str_puts(ir_text, text);
    LLVMDisposeMessage(text);
  }
  return ok;
}

void cg_close(cg *c) {
  LLVMDisposeBuilder(c->b);
  LLVMDisposeModule(c->mod);
  LLVMContextDispose(c->ctx);
  mlc_arena_free(c->a);
}

/* A size's value from its argument slot, which points at an int64_t: a
 * value outside the size's bounds returns MLC_KERNEL_BAD_SIZE before any
 * work, so no access can leave a buffer the caller sized accordingly. */
static LLVMValueRef load_size(cg *c, LLVMValueRef entry, const mlc_size_var *sv, LLVMValueRef slot) {
  LLVMValueRef p = LLVMBuildBitCast(c->b, slot, LLVMPointerType(c->t_i64, 0), "");
  LLVMValueRef v = LLVMBuildLoad2(c->b, c->t_i64, p, sv->var->name);
  LLVMValueRef lo = LLVMConstInt(c->t_i64, (unsigned long long)sv->lo, 1);
  LLVMValueRef hi = LLVMConstInt(c->t_i64, (unsigned long long)sv->hi, 1);
  LLVMValueRef bad = LLVMBuildOr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, v, lo, ""),
                                 LLVMBuildICmp(c->b, LLVMIntSGT, v, hi, ""), "");
  LLVMBasicBlockRef refuse = LLVMAppendBasicBlockInContext(c->ctx, entry, "bad_size");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(c->ctx, entry, "size_ok");
  LLVMBuildCondBr(c->b, bad, refuse, go);
  LLVMPositionBuilderAtEnd(c->b, refuse);
  LLVMBuildRet(c->b, LLVMConstInt(c->t_i32, (unsigned long long)(int64_t)MLC_KERNEL_BAD_SIZE, 1));
  LLVMPositionBuilderAtEnd(c->b, go);
  return sv->var->dtype == MLC_INT64 ? v : LLVMBuildTrunc(c->b, v, cg_scalar_type(c, sv->var->dtype), "");
}

bool cg_emit_function(cg *c, const mlc_prim_func *lf, const char *symbol, mlc_error *err) {
  check_ctx cc = {.a = c->a, .err = err, .target = c->target};
  for (int k = 0; k < lf->n_sizes; k++) MLC_VEC_APUSH(cc.a, cc.scope, lf->sizes[k].var);
  if (!check_loops(&cc, lf->body, NULL, NULL)) return false;
  if (LLVMGetNamedFunction(c->mod, symbol) || LLVMGetNamedGlobal(c->mod, symbol))
    return mlc_error_set(err, "symbol %s is defined twice", symbol);
  c->sym = symbol;
  c->noalias = attr_true(lf, "tir.noalias");
  int n = lf->n_params, ns = lf->n_sizes;
  LLVMTypeRef *pt = MLC_NEW_ARRAY(c->a, LLVMTypeRef, n + 1 + ns);
  for (int i = 0; i < n; i++) pt[i] = LLVMPointerType(cg_mem_type(c, lf->params[i]->dtype), 0);
  pt[n] = LLVMPointerType(c->t_i32, 0);
  for (int k = 0; k < ns; k++) pt[n + 1 + k] = cg_scalar_type(c, lf->sizes[k].var->dtype);
  LLVMValueRef body =
      add_internal_fn(c, mlc_arena_printf(c->a, "%s.body", symbol), pt, n + 1 + ns, true);
  for (int i = 0; i <= n; i++)
    if (i == n || c->noalias) add_attr(c, body, (LLVMAttributeIndex)(i + 1), "noalias");

  /* i32 S(i8** args): unpack, call the body, return the status. */
  LLVMTypeRef i8pp = LLVMPointerType(c->t_i8p, 0);
  LLVMValueRef entry = LLVMAddFunction(c->mod, symbol, LLVMFunctionType(c->t_i32, &i8pp, 1, 0));
  add_attr(c, entry, LLVMAttributeFunctionIndex, "nounwind");
  LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, entry, "entry"));
  LLVMValueRef status = LLVMBuildAlloca(c->b, c->t_i32, "status");
  LLVMBuildStore(c->b, LLVMConstInt(c->t_i32, 0, 0), status);
  LLVMValueRef *args = MLC_NEW_ARRAY(c->a, LLVMValueRef, n + 1 + ns);
  for (int i = 0; i < n + ns; i++) {
    LLVMValueRef k = LLVMConstInt(c->t_i64, (unsigned long long)i, 0);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(c->b, c->t_i8p, LLVMGetParam(entry, 0), &k, 1, "");
    LLVMValueRef p = LLVMBuildLoad2(c->b, c->t_i8p, slot, i < n ? lf->params[i]->name : "");
    if (i < n) args[i] = LLVMBuildBitCast(c->b, p, pt[i], "");
    else args[i + 1] = load_size(c, entry, &lf->sizes[i - n], p);
  }
  args[n] = status;
  LLVMBuildCall2(c->b, LLVMGlobalGetValueType(body), body, args, (unsigned)(n + 1 + ns), "");
  LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, c->t_i32, status, ""));

  fn_state saved;
  enter_fn(c, body, &saved);
  for (int i = 0; i < n; i++) bind_buf(c, lf->params[i], LLVMGetParam(body, (unsigned)i), c->noalias);
  c->status = LLVMGetParam(body, (unsigned)n);
  for (int k = 0; k < ns; k++) cg_bind_var(c, lf->sizes[k].var, LLVMGetParam(body, (unsigned)(n + 1 + k)));
  gen_stmt(c, lf->body);
  leave_fn(c, &saved);
  return true;
}
