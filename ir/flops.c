/* Floating-point work of a prim_func, as TVM's estimate of TIR flops
 * counts it, so every kernel (a task, a --task-file, a model's fused
 * function) reports GFLOP/s.
 *
 * The rule: every arithmetic node of float type in a block's body counts
 * once per block instance: + - * / min max floordiv floormod, a comparison
 * of float operands, and a call of an intrinsic (exp, sqrt, tanh, ...)
 * returning float. Integer arithmetic (indices, int kernels), loads, casts,
 * selects themselves and a reduction's T.init() count nothing; both arms
 * of a select or if_then_else count. Instances of a block are the product
 * of its iteration domains' extents (a block's predicate is ignored: a
 * split that pads does not add work); statements under loops inside a
 * block's body (and in a lowered function, which has no blocks) run once
 * per iteration of those loops, with constant extents only (others count
 * once); a block nested in another counts by its own domain. So matmul C[i,j] += A[i,k] * B[k,j] over M,N,K is 2*M*N*K. */
#include "ir/ir.h"

static double expr_flops(const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_LOAD: return 0;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    return mlc_dtype_is_float(e->dtype) + expr_flops(e->bin.a) + expr_flops(e->bin.b);
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
    return mlc_dtype_is_float(e->bin.a->dtype) + expr_flops(e->bin.a) + expr_flops(e->bin.b);
  case MLC_EXPR_AND:
  case MLC_EXPR_OR: return expr_flops(e->bin.a) + expr_flops(e->bin.b);
  case MLC_EXPR_NOT: return expr_flops(e->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return expr_flops(e->sel.cond) + expr_flops(e->sel.t) + expr_flops(e->sel.f);
  case MLC_EXPR_CAST: return expr_flops(e->cast.value);
  case MLC_EXPR_CALL: {
    double n = mlc_dtype_is_float(e->dtype);
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) n += expr_flops(e->call.args[i]);
    return n;
  }
  case MLC_EXPR_CALL_EXTERN: { /* what the function does is unknown: its arguments only */
    double n = 0;
    for (int i = 0; i < e->ext.n_kids; i++) n += expr_flops(e->ext.kids[i]);
    return n;
  }
  }
  mlc_unreachable();
}

/* Flops of s run `times` times. */
static double stmt_flops(const mlc_stmt *s, double times) {
  if (!s) return 0;
  double n = 0;
  int64_t ext;
  switch (s->kind) {
  case MLC_STMT_FOR:
    if (!mlc_expr_is_const_int(s->loop.extent, &ext)) ext = 1;
    return stmt_flops(s->loop.body, times * (double)(ext > 0 ? ext : 0));
  case MLC_STMT_BLOCK_REALIZE: {
    const mlc_block *b = s->realize.block;
    if (b->n_iters == 0) return stmt_flops(b->body, times); /* root, opaque: per run */
    double inst = 1;
    for (int i = 0; i < b->n_iters; i++) {
      if (!mlc_expr_is_const_int(b->iters[i].dom.extent, &ext)) ext = 1;
      inst *= (double)(ext > 0 ? ext : 0);
    }
    return stmt_flops(b->body, inst);
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) n += stmt_flops(s->seq.stmts[i], times);
    return n;
  case MLC_STMT_STORE: return times * expr_flops(s->store.value);
  case MLC_STMT_IF:
    return times * expr_flops(s->if_.cond) + stmt_flops(s->if_.then_s, times) +
           stmt_flops(s->if_.else_s, times);
  case MLC_STMT_ALLOCATE: return stmt_flops(s->alloc.body, times);
  case MLC_STMT_EVALUATE: return times * expr_flops(s->eval.value);
  }
  mlc_unreachable();
}

/* A function of size vars does work that depends on its sizes: none is
 * claimed (GFLOP/s figures of its records would mean nothing). */
double mlc_func_flops(const mlc_prim_func *f) { return f->n_sizes ? 0 : stmt_flops(f->body, 1); }
