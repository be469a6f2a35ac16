/* After lowering: virtual threads, and vector lanes' indices (below).
 *
 * Virtual threads (vthread loops), as TVM's
 * InjectVirtualThread does: each thread runs all its virtual threads, and
 * what does not depend on the virtual thread runs once for all of them.
 *
 * A vthread loop over v is pushed down through the statements that do not
 * use v in their own bounds or conditions (loops, sequences, ifs,
 * allocations) to the leaves that use v, which become unrolled loops over
 * v; statements that do not use v at all run once. A buffer allocated
 * under the vthread loop (not shared) that the pushed-down code uses gets
 * one copy per virtual thread: its size times the extent, indexed with
 * (v - min) * size + index. So for the design space's tiling
 *
 *   for vy, vx (vthread): for k0: { fetch A_s, B_s; compute C_l[vy, vx] }
 *
 * becomes for k0: { fetch A_s, B_s; for vy, vx: compute } and the shared
 * tiles are fetched (and barriers passed) once per k0, not once per
 * virtual thread.
 *
 * This relies on what binding a loop to a vthread guarantees (the
 * schedule refuses to bind a loop a reduction runs over): iterations of
 * different virtual threads touch different elements, so they may run in
 * any interleaving, and a statement not using v stores the same values
 * whichever virtual thread runs it.
 */
#include "targets/cuda_internal.h"
#include "targets/lower_internal.h"

#include <string.h>

typedef struct vctx {
  mlc_arena *a;
  mlc_var *v;
  int64_t min, ext;
} vctx;

typedef struct use_ctx {
  const mlc_var *v;
  bool found;
} use_ctx;

static void use_expr(const mlc_expr *e, void *ud) {
  use_ctx *u = ud;
  if (e->kind == MLC_EXPR_VAR && e->var == u->v) u->found = true;
}

static void use_walk(use_ctx *u, const mlc_stmt *s) {
  if (!s || u->found) return;
  lower_visit_exprs(s, use_expr, u);
  switch (s->kind) {
  case MLC_STMT_FOR: use_walk(u, s->loop.body); return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) use_walk(u, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  case MLC_STMT_IF:
    use_walk(u, s->if_.then_s);
    use_walk(u, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: use_walk(u, s->alloc.body); return;
  }
  mlc_unreachable();
}

static bool uses(const mlc_stmt *s, const mlc_var *v) {
  use_ctx u = {v, false};
  use_walk(&u, s);
  return u.found;
}

static bool expr_uses(const mlc_expr *e, const mlc_var *v) {
  return e && mlc_expr_uses_var(e, v);
}

/* s once per virtual thread, in order. */
static mlc_stmt *wrap(vctx *vc, mlc_stmt *s) {
  mlc_dtype t = vc->v->dtype;
  return mlc_for_new(vc->a, vc->v, mlc_int_t(vc->a, t, vc->min), mlc_int_t(vc->a, t, vc->ext),
                     MLC_FOR_UNROLLED, s);
}

static mlc_stmt *push(vctx *vc, mlc_stmt *s);

/* A private buffer of the virtual threads: one copy each. */
static mlc_stmt *expand(vctx *vc, mlc_stmt *s) {
  mlc_arena *a = vc->a;
  const mlc_buffer *b = s->alloc.buf;
  MLC_ASSERT(b->ndim == 1);
  int64_t n = b->shape[0] * vc->ext;
  mlc_buffer *nb = mlc_buffer_new(a, b->name, b->dtype, 1, &n, b->scope);
  mlc_dtype t = n > INT32_MAX ? MLC_INT64 : MLC_INT32;
  mlc_expr *v = mlc_ref(a, vc->v);
  if (v->dtype != t) v = mlc_cast(a, t, v);
  /* index - offset with offset = (min - v) * size */
  mlc_expr *off = mlc_mul(a, mlc_sub(a, mlc_int_t(a, t, vc->min), v), mlc_int_t(a, t, b->shape[0]));
  mlc_expr *offs[1] = {mlc_simplify_expr(a, off)};
  mlc_stmt *body = cuda_replace_buffer(a, s->alloc.body, b, nb, offs);
  return mlc_allocate_new(a, nb, push(vc, body));
}

static mlc_stmt *push(vctx *vc, mlc_stmt *s) {
  mlc_arena *a = vc->a;
  if (!s || !uses(s, vc->v)) return s;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    if (expr_uses(s->loop.min, vc->v) || expr_uses(s->loop.extent, vc->v)) return wrap(vc, s);
    mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
    n->loop.body = push(vc, s->loop.body);
    return n;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) kids[i] = push(vc, s->seq.stmts[i]);
    return mlc_seq_new(a, s->seq.n, kids);
  }
  case MLC_STMT_IF:
    if (expr_uses(s->if_.cond, vc->v)) return wrap(vc, s);
    return mlc_if_new(a, s->if_.cond, push(vc, s->if_.then_s), push(vc, s->if_.else_s));
  case MLC_STMT_ALLOCATE:
    if (strncmp(s->alloc.buf->scope, "shared", 6) == 0)
      return mlc_allocate_new(a, s->alloc.buf, push(vc, s->alloc.body));
    return expand(vc, s);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return wrap(vc, s);
  }
  mlc_unreachable();
}

static bool is_vthread(const mlc_stmt *s) {
  return s->loop.kind == MLC_FOR_THREAD_BINDING && s->loop.thread &&
         strncmp(s->loop.thread, "vthread", 7) == 0;
}

/* Inner vthread loops first, then this one through the result. */
static mlc_stmt *inject(mlc_arena *a, mlc_stmt *s, bool *changed) {
  if (!s) return NULL;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    mlc_stmt *body = inject(a, s->loop.body, changed);
    int64_t min, ext;
    if (is_vthread(s) && mlc_expr_is_const_int(s->loop.min, &min) &&
        mlc_expr_is_const_int(s->loop.extent, &ext)) {
      vctx vc = {a, s->loop.var, min, ext};
      *changed = true;
      return push(&vc, body);
    }
    mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
    n->loop.body = body;
    return n;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) kids[i] = inject(a, s->seq.stmts[i], changed);
    return mlc_seq_new(a, s->seq.n, kids);
  }
  case MLC_STMT_IF:
    return mlc_if_new(a, s->if_.cond, inject(a, s->if_.then_s, changed),
                      inject(a, s->if_.else_s, changed));
  case MLC_STMT_ALLOCATE: return mlc_allocate_new(a, s->alloc.buf, inject(a, s->alloc.body, changed));
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return s;
  }
  mlc_unreachable();
}

/* ---- vector lanes ------------------------------------------------------------------ */

/* Vectorized loops become one copy of the body per lane (cuda_kernel.c).
 * An index that is unit-stride in the lane, written base + (lane - min)
 * with base free of the lane, gives the copies' addresses as one pointer
 * plus 0, 1, 2, ...: NVPTX's load/store vectorizer then merges them into
 * ld/st.v2/v4 where the base is aligned. Re-evaluated per lane instead
 * ((f * 4 + lane) % 8 and the like), they would not be recognized. */
/* The largest power of two (up to 64) that e is always a multiple of. */
int64_t cuda_pow2_multiple(const mlc_expr *e) {
  int64_t c, x, y;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    c = e->int_val < 0 ? -e->int_val : e->int_val;
    return c == 0 || (c & 63) == 0 ? 64 : c & -c;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
    x = cuda_pow2_multiple(e->bin.a), y = cuda_pow2_multiple(e->bin.b);
    return x < y ? x : y;
  case MLC_EXPR_MUL:
    x = cuda_pow2_multiple(e->bin.a) * cuda_pow2_multiple(e->bin.b);
    return x > 64 ? 64 : x;
  case MLC_EXPR_FLOORDIV:
    if (!mlc_expr_is_const_int(e->bin.b, &c) || c <= 0 || (c & (c - 1))) return 1;
    x = cuda_pow2_multiple(e->bin.a);
    return x % c == 0 && x < 64 ? x / c : 1;
  case MLC_EXPR_FLOORMOD:
    if (!mlc_expr_is_const_int(e->bin.b, &c) || c <= 0 || (c & (c - 1))) return 1;
    x = cuda_pow2_multiple(e->bin.a);
    return x < c ? x : c;
  case MLC_EXPR_CAST:
    return mlc_dtype_is_float(e->cast.value->dtype) || e->dtype == MLC_BOOL
               ? 1 : cuda_pow2_multiple(e->cast.value);
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_DIV:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_NOT:
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN: return 1;
  }
  mlc_unreachable();
}

typedef struct lane_ctx {
  mlc_arena *a;
  mlc_var *v;
  mlc_expr *min;
  int64_t lanes;
} lane_ctx;

/* e as base + coef * (v - min) for every lane, base free of v: false when
 * it is not. A floordiv or floormod by c keeps its argument's lane term
 * when the argument's base is a multiple M of a power of two with c a
 * multiple of M and the lanes' offsets below M (no lane crosses a
 * multiple of c): (f * 4 + lane) % 8 is (f * 4) % 8 + lane for 4 lanes. */
static bool lane_linear(lane_ctx *lc, mlc_expr *e, mlc_expr **base, int64_t *coef) {
  mlc_arena *a = lc->a;
  int64_t c, k2;
  mlc_expr *b2;
  mlc_expr_kind k = e->kind;
  if (!mlc_expr_uses_var(e, lc->v)) {
    *base = e;
    *coef = 0;
    return true;
  }
  if (k == MLC_EXPR_VAR) {
    *base = lc->min->dtype == e->dtype ? lc->min : mlc_cast(a, e->dtype, lc->min);
    *coef = 1;
    return true;
  }
  if (k == MLC_EXPR_ADD || k == MLC_EXPR_SUB) {
    if (!lane_linear(lc, e->bin.a, base, coef) || !lane_linear(lc, e->bin.b, &b2, &k2)) return false;
    *base = mlc_binary(a, k, *base, b2);
    *coef = k == MLC_EXPR_ADD ? *coef + k2 : *coef - k2;
    return true;
  }
  if (k == MLC_EXPR_MUL) {
    if (!mlc_expr_is_const_int(e->bin.b, &c) || !lane_linear(lc, e->bin.a, base, coef)) return false;
    *base = mlc_mul(a, *base, e->bin.b);
    *coef *= c;
    return true;
  }
  if (k == MLC_EXPR_FLOORDIV || k == MLC_EXPR_FLOORMOD) {
    if (!mlc_expr_is_const_int(e->bin.b, &c) || c <= 0 || !lane_linear(lc, e->bin.a, base, coef))
      return false;
    int64_t m = cuda_pow2_multiple(*base);
    if (*coef < 0 || c % m != 0 || *coef * (lc->lanes - 1) >= m) return false;
    *base = mlc_binary(a, k, *base, e->bin.b);
    if (k == MLC_EXPR_FLOORDIV) *coef = 0;
    return true;
  }
  if (k == MLC_EXPR_CAST) {
    if (mlc_dtype_is_float(e->dtype) || mlc_dtype_is_float(e->cast.value->dtype) ||
        mlc_dtype_bits(e->dtype) < mlc_dtype_bits(e->cast.value->dtype) ||
        !lane_linear(lc, e->cast.value, base, coef))
      return false;
    *base = mlc_cast(a, e->dtype, *base);
    return true;
  }
  return false; /* min, max, selects, loads ...: not provably linear */
}

static mlc_expr *lane_index(void *ud, mlc_expr *idx) {
  lane_ctx *lc = ud;
  mlc_arena *a = lc->a;
  mlc_expr *base;
  int64_t coef;
  if (!mlc_expr_uses_var(idx, lc->v) || !lane_linear(lc, idx, &base, &coef) || coef != 1)
    return idx;
  mlc_expr *min = lc->min->dtype == lc->v->dtype ? lc->min : mlc_cast(a, lc->v->dtype, lc->min);
  mlc_expr *lane = mlc_sub(a, mlc_ref(a, lc->v), min);
  if (lane->dtype != idx->dtype) lane = mlc_cast(a, idx->dtype, lane);
  return mlc_add(a, mlc_simplify_expr(a, base), lane);
}

static mlc_stmt *lanes(mlc_arena *a, mlc_stmt *s, bool *changed) {
  if (!s) return NULL;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
    n->loop.body = lanes(a, s->loop.body, changed);
    int64_t ext;
    if (s->loop.kind == MLC_FOR_VECTORIZED && mlc_expr_is_const_int(s->loop.extent, &ext)) {
      lane_ctx lc = {a, s->loop.var, s->loop.min, ext};
      n->loop.body = cuda_rewrite_indices(a, n->loop.body, lane_index, &lc);
      *changed = true;
    }
    return n;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) kids[i] = lanes(a, s->seq.stmts[i], changed);
    return mlc_seq_new(a, s->seq.n, kids);
  }
  case MLC_STMT_IF:
    return mlc_if_new(a, s->if_.cond, lanes(a, s->if_.then_s, changed),
                      lanes(a, s->if_.else_s, changed));
  case MLC_STMT_ALLOCATE: return mlc_allocate_new(a, s->alloc.buf, lanes(a, s->alloc.body, changed));
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return s;
  }
  mlc_unreachable();
}

const mlc_prim_func *cuda_vthread(mlc_arena *a, const mlc_prim_func *lowered) {
  bool changed = false;
  mlc_stmt *body = inject(a, lowered->body, &changed);
  body = lanes(a, body, &changed);
  if (!changed) return lowered;
  mlc_prim_func *out = mlc_arena_memdup(a, lowered, sizeof *lowered);
  out->body = body;
  return out;
}
