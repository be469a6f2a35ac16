/* A reduction block's reducer, as TVM's reducer matching finds it (see
 * mlc_block_reducer in ir.h): what rfactor, the vectorization of a reduce
 * loop and cuda's cross-thread reduction may reorder. */
#include "ir/ir.h"

#include <float.h>
#include <stdint.h>

static bool same_element(int ndim, mlc_expr *const *x, mlc_expr *const *y);

/* The same expression, operation by operation (vars and buffers by
 * identity). */
static bool expr_same(const mlc_expr *x, const mlc_expr *y) {
  if (x == y) return true;
  if (x->kind != y->kind || x->dtype != y->dtype) return false;
  if (mlc_expr_kind_is_binary(x->kind)) return expr_same(x->bin.a, y->bin.a) && expr_same(x->bin.b, y->bin.b);
  switch (x->kind) {
  case MLC_EXPR_INT_IMM: return x->int_val == y->int_val;
  case MLC_EXPR_FLOAT_IMM: return x->float_val == y->float_val;
  case MLC_EXPR_VAR: return x->var == y->var;
  case MLC_EXPR_NOT: return expr_same(x->bin.a, y->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return expr_same(x->sel.cond, y->sel.cond) && expr_same(x->sel.t, y->sel.t) &&
           expr_same(x->sel.f, y->sel.f);
  case MLC_EXPR_LOAD:
    return x->load.buf == y->load.buf && same_element(x->load.buf->ndim, x->load.indices, y->load.indices);
  case MLC_EXPR_CAST: return expr_same(x->cast.value, y->cast.value);
  case MLC_EXPR_CALL:
    if (x->call.op != y->call.op) return false;
    for (int i = 0; i < mlc_intrin_nargs(x->call.op); i++)
      if (!expr_same(x->call.args[i], y->call.args[i])) return false;
    return true;
  case MLC_EXPR_CALL_EXTERN: return false; /* may have effects: never the same */
  default: mlc_unreachable();
  }
}

static bool same_element(int ndim, mlc_expr *const *x, mlc_expr *const *y) {
  for (int i = 0; i < ndim; i++)
    if (!expr_same(x[i], y[i])) return false;
  return true;
}

static bool is_load_of(const mlc_expr *e, void *buf) {
  return e->kind == MLC_EXPR_LOAD && e->load.buf == buf;
}

static double lowest_of(mlc_dtype t) {
  switch (t) {
  case MLC_FLOAT16: return -65504.0;
  case MLC_BFLOAT16: return -0x1.fep127; /* the largest finite bfloat16 */
  case MLC_UINT8: return 0;
  case MLC_FLOAT32: return -(double)FLT_MAX;
  case MLC_INT8: return INT8_MIN;
  case MLC_INT32: return INT32_MIN;
  case MLC_INT64: return (double)INT64_MIN;
  case MLC_BOOL: return 0;
  }
  mlc_unreachable();
}

static double highest_of(mlc_dtype t) {
  switch (t) {
  case MLC_FLOAT16: return 65504.0;
  case MLC_BFLOAT16: return 0x1.fep127;
  case MLC_UINT8: return UINT8_MAX;
  case MLC_FLOAT32: return (double)FLT_MAX;
  case MLC_INT8: return INT8_MAX;
  case MLC_INT32: return INT32_MAX;
  case MLC_INT64: return (double)INT64_MAX;
  case MLC_BOOL: return 1;
  }
  mlc_unreachable();
}

/* 0 for a sum, 1 for a product, the lowest value (or -inf) for max, the
 * highest for min. */
static bool is_identity(mlc_expr_kind op, const mlc_expr *e) {
  double v;
  if (e->kind == MLC_EXPR_FLOAT_IMM) v = e->float_val;
  else if (e->kind == MLC_EXPR_INT_IMM) v = (double)e->int_val;
  else return false;
  switch (op) {
  case MLC_EXPR_ADD: return v == 0;
  case MLC_EXPR_MUL: return v == 1;
  case MLC_EXPR_MAX: return v <= lowest_of(e->dtype);
  case MLC_EXPR_MIN: return v >= highest_of(e->dtype);
  default: return false;
  }
}

const char *mlc_reducer_name(mlc_expr_kind op) {
  switch (op) {
  case MLC_EXPR_ADD: return "sum";
  case MLC_EXPR_MUL: return "product";
  case MLC_EXPR_MAX: return "max";
  case MLC_EXPR_MIN: return "min";
  default: return NULL;
  }
}

const char *mlc_block_reducer(const mlc_block *b, mlc_reducer *r) {
  const mlc_stmt *init = b->init, *up = b->body;
  if (!init || init->kind != MLC_STMT_STORE || !up || up->kind != MLC_STMT_STORE ||
      init->store.buf != up->store.buf ||
      !same_element(up->store.buf->ndim, init->store.indices, up->store.indices))
    return "its init and update are not single stores to one element";
  mlc_expr *v = up->store.value;
  if (!mlc_reducer_name(v->kind)) return "its update is not W = W + e, W * e, max(W, e) or min(W, e)";
  mlc_buffer *w = up->store.buf;
  mlc_expr *acc = v->bin.a, *rhs = v->bin.b;
  if (!is_load_of(acc, w) || !same_element(w->ndim, acc->load.indices, up->store.indices))
    acc = v->bin.b, rhs = v->bin.a;
  if (!is_load_of(acc, w) || !same_element(w->ndim, acc->load.indices, up->store.indices))
    return "its update does not read the element it writes";
  if (mlc_expr_any(rhs, is_load_of, w)) return "its update reads the buffer it reduces into elsewhere";
  if (!is_identity(v->kind, init->store.value)) return "its init is not the identity of its reduction";
  *r = (mlc_reducer){v->kind, rhs, init->store.value, w};
  return NULL;
}
