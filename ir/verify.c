/* IR verifier: checks that a prim_func is well-formed TensorIR.
 *
 * One pre-order walk keeps a scope of defined vars and visible buffers.
 * Conventions follow TVM (docs/FORMATS.md):
 *  - A non-opaque block (one with iter vars) does not see the loops around
 *    it: its regions, init and body may not use a loop var defined outside
 *    it. Outer loop vars reach it only through the iter var bindings and the
 *    T.where predicate, which are evaluated outside the block. Each loop var
 *    records the block level it was defined at; a use must be at the same
 *    level. Iter vars of enclosing blocks stay visible in nested blocks (as
 *    in the notes' tensorized 16x16 matmul). Blocks without iter vars (the
 *    root, opaque blocks) do not open a level, as in TVM's
 *    BlockVarAccessVerifier.
 *  - A binding may leave its iter var's domain only when T.where is present.
 *  - A reduction block with T.init() reads its own output implicitly.
 *  - Accesses under a T.if_then_else branch may go out of bounds (the
 *    untaken side is never evaluated), so bounds checks skip them.
 *  - A loop bound to a thread axis may sit inside another loop bound to the
 *    same axis (cooperative fetching); both must then have the same extent.
 *
 * The first problem found is reported as
 *   function "main", block "C": <what is wrong>
 * where the block is the innermost block being checked ("root" at the top).
 */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct scope_var {
  mlc_var *var;
  int level;     /* block level the var was defined at */
  bool is_loop;  /* a loop var (not visible inside nested blocks) */
  bool has_range;
  int64_t lo, hi; /* inclusive value range when has_range */
  mlc_expr *smax; /* the largest value as an expression of size vars
                     (a symbolic extent's loop or iter var), else NULL */
} scope_var;

typedef struct thread_loop {
  const char *tag;
  int64_t extent;
  const char *var_name;
} thread_loop;

typedef struct vctx {
  const mlc_prim_func *f;
  mlc_error *err;
  mlc_arena *a; /* scratch: simplifier, regions, message text, the vectors below */
  MLC_VEC(scope_var) vars;
  MLC_VEC(mlc_buffer *) bufs; /* visible buffers, innermost last */
  MLC_VEC(const char *) names; /* block names seen so far */
  /* names as a hash table in a (open addressing): index + 1, 0 empty; a
   * scan per block made verifying n blocks O(n^2) */
  int *name_slots;
  int name_cap;
  MLC_VEC(thread_loop) threads; /* enclosing thread-bound loops */
  mlc_simplifier *simp; /* knows the ranges of c->vars; NULL when stale */
  const mlc_block *block; /* block named in messages */
  const mlc_stmt *realize; /* c->block's realize: its bindings bound accesses */
  const char *where;      /* part being checked, for messages */
  int level;              /* non-opaque blocks entered */
  int ite_depth;          /* > 0 inside a branch of T.if_then_else */
  int if_depth;           /* > 0 inside an if statement */
  bool failed;
} vctx;

static bool fail(vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(vctx *c, const char *fmt, ...) {
  if (c->failed) return false;
  c->failed = true;
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *fname = c->f->name ? c->f->name : "?";
  const char *bname = c->block && c->block->name ? c->block->name : "root";
  mlc_error_set(c->err, "function \"%s\", block \"%s\": %s", fname, bname, msg);
  return false;
}

/* Printed text of an expression for messages (scratch arena). Only called
 * on expressions whose children were already checked to be present. */
static const char *show(vctx *c, const mlc_expr *e) {
  mlc_str s = {.arena = c->a};
  mlc_print_expr(&s, e);
  char *t = mlc_arena_strdup(c->a, mlc_str_cstr(&s));
  mlc_str_free(&s);
  return t;
}

static const char *dname(mlc_dtype t) {
  return (unsigned)t < MLC_DTYPE_COUNT ? mlc_dtype_name(t) : "<bad dtype>";
}

static const char *vname(const mlc_var *v) { return v->name ? v->name : "?"; }
static const char *bname(const mlc_buffer *b) { return b->name ? b->name : "?"; }

/* ---- scope ------------------------------------------------------------ */

static scope_var *find_var(vctx *c, const mlc_var *v) {
  for (int i = c->vars.len - 1; i >= 0; i--)
    if (c->vars.data[i].var == v) return &c->vars.data[i];
  return NULL;
}

/* Is b among the visible buffers with stack positions [from, to)? */
static bool buffer_in(vctx *c, const mlc_buffer *b, int from, int to) {
  for (int i = to - 1; i >= from; i--)
    if (c->bufs.data[i] == b) return true;
  return false;
}

static bool buffer_visible(vctx *c, const mlc_buffer *b) { return buffer_in(c, b, 0, c->bufs.len); }

static bool define_var(vctx *c, mlc_var *v, bool is_loop, bool has_range, int64_t lo,
                       int64_t hi) {
  if (find_var(c, v))
    return fail(c, "variable \"%s\" is defined twice in nested scopes", vname(v));
  scope_var sv = {v, c->level, is_loop, has_range, lo, hi, NULL};
  MLC_VEC_APUSH(c->a, c->vars, sv);
  c->simp = NULL;
  return true;
}

static void pop_vars(vctx *c, int len) {
  if (c->vars.len != len) c->simp = NULL;
  c->vars.len = len;
}

static bool not_size_var(const mlc_expr *e, void *ud) {
  return e->kind == MLC_EXPR_VAR && !mlc_func_size_var(ud, e->var);
}

/* Symbolic extents: int expressions of size vars whose upper bounds are
 * the shape. */
static bool check_dims(vctx *c, const mlc_buffer *b, const char *what) {
  for (int d = 0; d < b->ndim; d++) {
    const mlc_expr *e = b->dims[d];
    int64_t lo, hi;
    if (!e) return fail(c, "%s \"%s\": missing extent %d", what, b->name, d);
    if (!mlc_dtype_is_int(e->dtype) || mlc_expr_any(e, not_size_var, (void *)c->f) ||
        !mlc_size_range(c->f->n_sizes, c->f->sizes, e, &lo, &hi))
      return fail(c, "%s \"%s\": extent %d (%s) is not a bounded expression of size vars", what,
                  b->name, d, show(c, (mlc_expr *)e));
    if (lo < 0 || hi != b->shape[d])
      return fail(c, "%s \"%s\": extent %d (%s) ranges over [%" PRId64 ", %" PRId64 "], but "
                  "its bound is %" PRId64, what, b->name, d, show(c, (mlc_expr *)e), lo, hi,
                  b->shape[d]);
  }
  return true;
}

/* Size vars: int32/int64, distinct, sane bounds, each the bare extent of
 * a parameter (what gives its value at run time). */
static bool check_sizes(vctx *c) {
  const mlc_prim_func *f = c->f;
  if (f->n_sizes < 0 || f->n_sizes > MLC_MAX_SIZES || (f->n_sizes > 0 && !f->sizes))
    return fail(c, "invalid size var list");
  for (int k = 0; k < f->n_sizes; k++) {
    const mlc_size_var *sv = &f->sizes[k];
    if (!sv->var) return fail(c, "size var %d has no variable", k);
    if (sv->var->dtype != MLC_INT32 && sv->var->dtype != MLC_INT64)
      return fail(c, "size var \"%s\" must be int32 or int64", vname(sv->var));
    int64_t lo, hi;
    mlc_size_default_bounds(sv->var->dtype, &lo, &hi);
    if (sv->lo < 0 || sv->lo > sv->hi || sv->hi > hi)
      return fail(c, "size var \"%s\" has bounds [%" PRId64 ", %" PRId64 "]", vname(sv->var),
                  sv->lo, sv->hi);
    if (!define_var(c, sv->var, false, true, sv->lo, sv->hi)) return false;
    if (!mlc_func_size_given(f, sv->var))
      return fail(c, "size var \"%s\" is no parameter's extent", vname(sv->var));
  }
  return true;
}

static bool check_buffer_decl(vctx *c, const mlc_buffer *b, const char *what) {
  if (!b) return fail(c, "%s: missing buffer", what);
  if (!b->name || !b->name[0]) return fail(c, "%s: buffer with no name", what);
  if ((unsigned)b->dtype >= MLC_DTYPE_COUNT)
    return fail(c, "%s \"%s\": invalid dtype %d", what, b->name, (int)b->dtype);
  if (b->ndim < 0) return fail(c, "%s \"%s\": negative ndim %d", what, b->name, b->ndim);
  if (b->ndim > 0 && !b->shape) return fail(c, "%s \"%s\": missing shape", what, b->name);
  for (int i = 0; i < b->ndim; i++)
    if (b->shape[i] < 1)
      return fail(c, "%s \"%s\": dimension %d has extent %" PRId64 " (must be >= 1)", what,
                  b->name, i, b->shape[i]);
  if (!b->scope || !b->scope[0]) return fail(c, "%s \"%s\": missing storage scope", what, b->name);
  return !b->dims || check_dims(c, b, what);
}

static bool define_buffer(vctx *c, mlc_buffer *b, const char *what) {
  if (!check_buffer_decl(c, b, what)) return false;
  if (buffer_visible(c, b))
    return fail(c, "buffer \"%s\" is declared twice (%s)", b->name, what);
  MLC_VEC_APUSH(c->a, c->bufs, b);
  return true;
}

static bool check_anns(vctx *c, int n, const mlc_ann *anns, const char *what, bool keyed);

/* One annotation value; `key` names it in messages. */
static bool check_ann_value(vctx *c, const mlc_ann *a, const char *key, const char *what) {
  switch (a->kind) {
  case MLC_ANN_INT:
  case MLC_ANN_FLOAT: return true;
  case MLC_ANN_BOOL:
    if (a->i != 0 && a->i != 1)
      return fail(c, "%s: bool annotation \"%s\" has value %" PRId64, what, key, a->i);
    return true;
  case MLC_ANN_STRING:
    if (!a->s) return fail(c, "%s: string annotation \"%s\" has no value", what, key);
    return true;
  case MLC_ANN_LIST: return check_anns(c, a->n, a->items, what, false);
  case MLC_ANN_DICT:
    if (!check_anns(c, a->n, a->items, what, true)) return false;
    for (int i = 0; i < a->n; i++)
      for (int j = 0; j < i; j++)
        if (strcmp(a->items[i].key, a->items[j].key) == 0)
          return fail(c, "%s: annotation \"%s\" has key \"%s\" twice", what, key,
                      a->items[i].key);
    return true;
  }
  return fail(c, "%s: annotation \"%s\" has invalid kind %d", what, key, (int)a->kind);
}

/* An annotation list (keyed: a map's entries) or a list value's items. */
static bool check_anns(vctx *c, int n, const mlc_ann *anns, const char *what, bool keyed) {
  if (n < 0 || (n > 0 && !anns)) return fail(c, "%s: missing annotation array", what);
  for (int i = 0; i < n; i++) {
    if (keyed && (!anns[i].key || !anns[i].key[0]))
      return fail(c, "%s: annotation with no key", what);
    if (!check_ann_value(c, &anns[i], keyed ? anns[i].key : "(list item)", what)) return false;
  }
  return true;
}

/* ---- bounds ----------------------------------------------------------- */

static bool mul_ok(int64_t x, int64_t y, int64_t *r) { return !__builtin_mul_overflow(x, y, r); }

static int64_t floordiv64(int64_t x, int64_t y) {
  int64_t q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

/* Plain interval arithmetic over the scope's var ranges: the fallback when
 * the simplifier cannot bound an expression. Sound, maybe loose. */
static bool interval(vctx *c, const mlc_expr *e, int64_t *lo, int64_t *hi) {
  int64_t al, ah, bl, bh, k;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    *lo = *hi = e->int_val;
    return true;
  case MLC_EXPR_VAR: {
    scope_var *sv = find_var(c, e->var);
    if (!sv || !sv->has_range) return false;
    *lo = sv->lo;
    *hi = sv->hi;
    return true;
  }
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    if (!interval(c, e->bin.a, &al, &ah) || !interval(c, e->bin.b, &bl, &bh)) return false;
    if (e->kind == MLC_EXPR_ADD)
      return !__builtin_add_overflow(al, bl, lo) && !__builtin_add_overflow(ah, bh, hi);
    if (e->kind == MLC_EXPR_SUB)
      return !__builtin_sub_overflow(al, bh, lo) && !__builtin_sub_overflow(ah, bl, hi);
    *lo = e->kind == MLC_EXPR_MIN ? (al < bl ? al : bl) : (al > bl ? al : bl);
    *hi = e->kind == MLC_EXPR_MIN ? (ah < bh ? ah : bh) : (ah > bh ? ah : bh);
    return true;
  case MLC_EXPR_MUL: {
    if (!interval(c, e->bin.a, &al, &ah) || !interval(c, e->bin.b, &bl, &bh)) return false;
    int64_t p[4];
    if (!mul_ok(al, bl, &p[0]) || !mul_ok(al, bh, &p[1]) || !mul_ok(ah, bl, &p[2]) ||
        !mul_ok(ah, bh, &p[3]))
      return false;
    *lo = *hi = p[0];
    for (int i = 1; i < 4; i++) {
      if (p[i] < *lo) *lo = p[i];
      if (p[i] > *hi) *hi = p[i];
    }
    return true;
  }
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
    if (!mlc_expr_is_const_int(e->bin.b, &k) || k <= 0) return false;
    if (!interval(c, e->bin.a, &al, &ah)) return false;
    if (e->kind == MLC_EXPR_FLOORDIV) {
      *lo = floordiv64(al, k);
      *hi = floordiv64(ah, k);
    } else if (floordiv64(al, k) == floordiv64(ah, k)) {
      *lo = al - floordiv64(al, k) * k;
      *hi = ah - floordiv64(ah, k) * k;
    } else {
      *lo = 0;
      *hi = k - 1;
    }
    return true;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    if (!interval(c, e->sel.t, &al, &ah) || !interval(c, e->sel.f, &bl, &bh)) return false;
    *lo = al < bl ? al : bl;
    *hi = ah > bh ? ah : bh;
    return true;
  case MLC_EXPR_CAST:
    if (!mlc_dtype_is_int(e->dtype) || !mlc_dtype_is_int(e->cast.value->dtype)) return false;
    return interval(c, e->cast.value, lo, hi);
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_DIV:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_NOT:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN:
    return false;
  }
  mlc_unreachable();
}

/* Range of an integer expression when the vars in scope range over their
 * domains: the simplifier first (it cancels terms), then intervals. */
static bool bounds(vctx *c, mlc_expr *e, int64_t *lo, int64_t *hi) {
  if (!c->simp) {
    c->simp = mlc_simplifier_new(c->a);
    for (int i = 0; i < c->vars.len; i++) {
      scope_var *sv = &c->vars.data[i];
      int64_t ext;
      if (sv->has_range && !__builtin_sub_overflow(sv->hi, sv->lo, &ext) && ext < INT64_MAX)
        mlc_simplifier_bind(c->simp, sv->var, sv->lo, ext + 1);
    }
  }
  if (mlc_simplifier_bounds(c->simp, e, lo, hi)) return true;
  return interval(c, e, lo, hi);
}

/* e with its first min/max node in a monotone position replaced by each of
 * that node's arms (*ea, *eb). A function increasing in the node turns
 * min(x, y) into min(f(x), f(y)); a decreasing one into max(f(x), f(y)):
 * *is_min says which combination gives e back. Monotone positions are the
 * operands of +, -, * by a constant, floordiv by a positive constant,
 * min/max and integer casts; sign is +1 where e grows with the node. */
static bool split_minmax(vctx *c, mlc_expr *e, int sign, mlc_expr **ea, mlc_expr **eb,
                         bool *is_min) {
  mlc_expr *xa, *xb;
  int64_t k;
  switch (e->kind) {
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    *ea = e->bin.a;
    *eb = e->bin.b;
    *is_min = (e->kind == MLC_EXPR_MIN) == (sign > 0);
    return true;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_FLOORDIV: {
    int sa = sign, sb = e->kind == MLC_EXPR_SUB ? -sign : sign;
    bool try_a = true, try_b = e->kind != MLC_EXPR_FLOORDIV;
    if (e->kind == MLC_EXPR_FLOORDIV)
      try_a = mlc_expr_is_const_int(e->bin.b, &k) && k > 0;
    if (e->kind == MLC_EXPR_MUL) {
      try_a = mlc_expr_is_const_int(e->bin.b, &k) && k != 0;
      if (try_a) sa = k > 0 ? sign : -sign;
      try_b = !try_a && mlc_expr_is_const_int(e->bin.a, &k) && k != 0;
      if (try_b) sb = k > 0 ? sign : -sign;
    }
    if (try_a && split_minmax(c, e->bin.a, sa, &xa, &xb, is_min)) {
      *ea = mlc_binary(c->a, e->kind, xa, e->bin.b);
      *eb = mlc_binary(c->a, e->kind, xb, e->bin.b);
      return true;
    }
    if (try_b && split_minmax(c, e->bin.b, sb, &xa, &xb, is_min)) {
      *ea = mlc_binary(c->a, e->kind, e->bin.a, xa);
      *eb = mlc_binary(c->a, e->kind, e->bin.a, xb);
      return true;
    }
    return false;
  }
  case MLC_EXPR_CAST:
    if (!mlc_dtype_is_int(e->dtype) || !mlc_dtype_is_int(e->cast.value->dtype) ||
        !split_minmax(c, e->cast.value, sign, &xa, &xb, is_min))
      return false;
    *ea = mlc_cast(c->a, e->dtype, xa);
    *eb = mlc_cast(c->a, e->dtype, xb);
    return true;
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORMOD:
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
  case MLC_EXPR_CALL_EXTERN:
    return false;
  }
  mlc_unreachable();
}

/* bounds() of an expression over min/max terms, such as the end of a
 * region hull B[T.min(x, y):T.max(x, y) + 1] minus an access x: min/max are
 * lifted to the top (x - T.min(x, y) is T.max(0, x - y)) so that the
 * simplifier cancels like terms in each arm, and the arms' ranges combine
 * as min/max do. Both sound bounds are intersected. depth limits the
 * 2^depth arms. */
static bool lifted_bounds(vctx *c, mlc_expr *e, int depth, int64_t *lo, int64_t *hi) {
  mlc_expr *ea, *eb;
  bool is_min, plain = bounds(c, e, lo, hi);
  int64_t al, ah, bl, bh;
  if (depth <= 0 || !split_minmax(c, e, 1, &ea, &eb, &is_min)) return plain;
  if (!lifted_bounds(c, ea, depth - 1, &al, &ah) || !lifted_bounds(c, eb, depth - 1, &bl, &bh))
    return plain;
  int64_t l = is_min ? (al < bl ? al : bl) : (al > bl ? al : bl);
  int64_t h = is_min ? (ah < bh ? ah : bh) : (ah > bh ? ah : bh);
  if (!plain || l > *lo) *lo = l;
  if (!plain || h < *hi) *hi = h;
  return true;
}

#define LIFT_DEPTH 6

/* ---- expressions ------------------------------------------------------ */

static bool check_expr(vctx *c, mlc_expr *e);

static bool check_var_use(vctx *c, mlc_var *v) {
  if (!v) return fail(c, "in %s: variable reference with no variable", c->where);
  scope_var *sv = find_var(c, v);
  if (!sv) return fail(c, "in %s: variable \"%s\" is not defined here", c->where, vname(v));
  if (sv->is_loop && sv->level != c->level)
    return fail(c,
                "in %s: loop variable \"%s\" is defined outside block \"%s\" and used inside "
                "it; a block reaches outer loop vars only through its iter var bindings",
                c->where, vname(v), c->block && c->block->name ? c->block->name : "?");
  return true;
}

static bool check_int_expr(vctx *c, mlc_expr *e, const char *what) {
  if (!check_expr(c, e)) return false;
  if (!mlc_dtype_is_int(e->dtype))
    return fail(c, "in %s: %s must be an integer, got %s (%s)", c->where, what, dname(e->dtype),
                show(c, e));
  /* Indices and extents are signed (code extends them as such): a uint8
   * one must be cast to int32 first. */
  if (e->dtype == MLC_UINT8)
    return fail(c, "in %s: %s must be a signed integer, got uint8 (%s): cast it to int32", c->where,
                what, show(c, e));
  return true;
}

static bool check_bool_expr(vctx *c, mlc_expr *e, const char *what) {
  if (!check_expr(c, e)) return false;
  if (e->dtype != MLC_BOOL)
    return fail(c, "in %s: %s must be bool, got %s (%s)", c->where, what, dname(e->dtype),
                show(c, e));
  return true;
}

/* Whether index e stays in [0, extent) once the block's iter vars are
 * replaced by their bindings: TensorIR bounds an access by the values the
 * bindings take (vi = i * 4 + x reading A_local[vi - i * 4] reads
 * A_local[x], as a cache compacted under a block scope does). */
static bool bound_by_bindings(vctx *c, mlc_expr *e, int64_t extent) {
  const mlc_stmt *r = c->realize;
  if (!r || r->realize.block != c->block || c->block->n_iters == 0) return false;
  const mlc_block *b = c->block;
  mlc_var **iv = MLC_NEW_ARRAY(c->a, mlc_var *, b->n_iters);
  for (int i = 0; i < b->n_iters; i++) iv[i] = b->iters[i].var;
  int64_t lo, hi;
  mlc_expr *sub = mlc_expr_subst(c->a, e, b->n_iters, iv, r->realize.values);
  return lifted_bounds(c, sub, LIFT_DEPTH, &lo, &hi) && lo >= 0 && hi < extent;
}

/* ---- symbolic extents ---------------------------------------------------- */

static mlc_expr *sym_bound(vctx *c, mlc_expr *e, bool upper);

static bool is_size_var(const mlc_expr *e, void *ud) {
  const vctx *c = ud;
  return e->kind == MLC_EXPR_VAR && mlc_func_size_var(c->f, e->var);
}

static mlc_expr *sym_var_bound(vctx *c, mlc_expr *e, bool upper) {
  if (mlc_func_size_var(c->f, e->var)) return e;
  scope_var *sv = find_var(c, e->var);
  if (!sv) return NULL;
  if (upper && sv->smax)
    return sv->smax->dtype == e->dtype ? sv->smax : mlc_cast(c->a, e->dtype, sv->smax);
  if (!sv->has_range) return NULL;
  return mlc_int_t(c->a, e->dtype, upper ? sv->hi : sv->lo);
}

/* A bound of x * y where one factor is a loop var of nonnegative static
 * range [lo, hi] and the other a nonnegative expression of sizes (a row
 * index times a row length, `i0 * seq` with i0 in [0, 0] where a model
 * has batch 1): hi (lo) times the other's upper (lower) bound. */
static mlc_expr *sym_bound_product(vctx *c, mlc_expr *e, bool upper) {
  for (int side = 0; side < 2; side++) {
    mlc_expr *v = side ? e->bin.b : e->bin.a, *w = side ? e->bin.a : e->bin.b;
    int64_t lo, hi, wlo, whi;
    if (mlc_expr_any(v, is_size_var, c) || !bounds(c, v, &lo, &hi) || lo < 0) continue;
    mlc_expr *wb = sym_bound(c, w, upper), *wl = sym_bound(c, w, false);
    if (!wb || !wl || !mlc_size_range(c->f->n_sizes, c->f->sizes, wl, &wlo, &whi) || wlo < 0)
      continue;
    return mlc_mul(c->a, mlc_int_t(c->a, e->dtype, upper ? hi : lo), wb);
  }
  return NULL;
}

/* x % w for w an expression of sizes that is at least 1 at every size
 * (an index wrapped into a symbolic extent): in [0, w - 1]. */
static mlc_expr *sym_bound_mod(vctx *c, mlc_expr *e, bool upper) {
  int64_t lo, hi;
  mlc_expr *w = e->bin.b, *wl = sym_bound(c, w, false);
  if (!wl || !mlc_size_range(c->f->n_sizes, c->f->sizes, wl, &lo, &hi) || lo < 1) return NULL;
  if (!upper) return mlc_int_t(c->a, e->dtype, 0);
  mlc_expr *wu = sym_bound(c, w, true);
  return wu ? mlc_sub(c->a, wu, mlc_int_t(c->a, e->dtype, 1)) : NULL;
}

/* An expression of size vars that bounds e from above (upper) or below
 * for every value of the vars in scope; NULL when there is none this
 * simple walk finds (a product of two vars of unknown range, a division
 * by a var). */
static mlc_expr *sym_bound(vctx *c, mlc_expr *e, bool upper) {
  mlc_arena *a = c->a;
  int64_t k;
  mlc_expr *x, *y;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: return e;
  case MLC_EXPR_VAR: return sym_var_bound(c, e, upper);
  case MLC_EXPR_ADD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    x = sym_bound(c, e->bin.a, upper);
    y = sym_bound(c, e->bin.b, upper);
    return x && y ? mlc_binary(a, e->kind, x, y) : NULL;
  case MLC_EXPR_SUB:
    x = sym_bound(c, e->bin.a, upper);
    y = sym_bound(c, e->bin.b, !upper);
    return x && y ? mlc_sub(a, x, y) : NULL;
  case MLC_EXPR_MUL:
    if (mlc_expr_is_const_int(e->bin.b, &k)) x = e->bin.a, y = e->bin.b;
    else if (mlc_expr_is_const_int(e->bin.a, &k)) x = e->bin.b, y = e->bin.a;
    else return sym_bound_product(c, e, upper);
    x = sym_bound(c, x, k >= 0 ? upper : !upper);
    return x ? mlc_mul(a, x, y) : NULL;
  case MLC_EXPR_FLOORDIV:
    if (!mlc_expr_is_const_int(e->bin.b, &k) || k <= 0) return NULL;
    x = sym_bound(c, e->bin.a, upper);
    return x ? mlc_binary(a, MLC_EXPR_FLOORDIV, x, e->bin.b) : NULL;
  case MLC_EXPR_FLOORMOD:
    if (mlc_expr_is_const_int(e->bin.b, &k))
      return k > 0 ? mlc_int_t(a, e->dtype, upper ? k - 1 : 0) : NULL;
    return sym_bound_mod(c, e, upper);
  case MLC_EXPR_CAST: /* between int types; sizes fit int32 */
    if (!mlc_dtype_is_int(e->dtype) || !mlc_dtype_is_int(e->cast.value->dtype)) return NULL;
    x = sym_bound(c, e->cast.value, upper);
    return x ? mlc_cast(a, e->dtype, x) : NULL;
  default: return NULL;
  }
}

/* e, an int expression of sizes, in int64 with its casts between int
 * types dropped where the value fits the narrower type at every size
 * (so `T.Cast("int32", n) - 1` and `n` are compared as n - 1 and n);
 * NULL for anything else. */
static mlc_expr *widened(vctx *c, mlc_expr *e) {
  int64_t lo, hi;
  mlc_expr *x, *y;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: return mlc_int_t(c->a, MLC_INT64, e->int_val);
  case MLC_EXPR_VAR:
    if (!mlc_func_size_var(c->f, e->var)) return NULL;
    return e->dtype == MLC_INT64 ? e : mlc_cast(c->a, MLC_INT64, e);
  case MLC_EXPR_CAST:
    if (!mlc_dtype_is_int(e->dtype) || !mlc_dtype_is_int(e->cast.value->dtype) ||
        !mlc_size_range(c->f->n_sizes, c->f->sizes, e->cast.value, &lo, &hi) ||
        (e->dtype == MLC_INT32 && (lo < INT32_MIN || hi > INT32_MAX)))
      return NULL;
    return widened(c, e->cast.value);
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    x = widened(c, e->bin.a);
    y = widened(c, e->bin.b);
    return x && y ? mlc_binary(c->a, e->kind, x, y) : NULL;
  default: return NULL;
  }
}

/* Whether x <= y whatever the size vars are (within their bounds). */
static bool sym_le(vctx *c, mlc_expr *x, mlc_expr *y) {
  mlc_expr *wx = widened(c, x), *wy = widened(c, y);
  if (wx && wy) {
    x = wx;
    y = wy;
  } else if (x->dtype != y->dtype) {
    x = mlc_cast(c->a, MLC_INT64, x);
    y = mlc_cast(c->a, MLC_INT64, y);
  }
  int64_t lo, hi;
  mlc_expr *d = mlc_simplify_expr(c->a, mlc_sub(c->a, y, x));
  return mlc_size_range(c->f->n_sizes, c->f->sizes, d, &lo, &hi) && lo >= 0;
}

/* Whether e < extent for every value of the vars in scope, extent an
 * expression of size vars. */
static bool sym_below(vctx *c, mlc_expr *e, mlc_expr *extent) {
  mlc_expr *top = sym_bound(c, e, true);
  return top && sym_le(c, mlc_add(c->a, top, mlc_int_t(c->a, top->dtype, 1)), extent);
}

static bool is_symbolic(const mlc_expr *e) { return e->kind != MLC_EXPR_INT_IMM; }

/* Index list of a load or store: present, integer, one per dimension, and
 * within the buffer's shape where that can be decided. */
static bool check_indices(vctx *c, mlc_buffer *b, mlc_expr **idx, const char *what) {
  if (b->ndim > 0 && !idx)
    return fail(c, "in %s: %s \"%s\" has no indices but the buffer has %d dimensions",
                c->where, what, b->name, b->ndim);
  for (int i = 0; i < b->ndim; i++)
    if (!idx[i])
      return fail(c, "in %s: %s \"%s\" has %d indices but the buffer has %d dimensions",
                  c->where, what, b->name, i, b->ndim);
  for (int i = 0; i < b->ndim; i++) {
    char label[64];
    snprintf(label, sizeof label, "index %d of \"%.40s\"", i, b->name);
    if (!check_int_expr(c, idx[i], label)) return false;
  }
  for (int i = 0; i < b->ndim; i++) {
    int64_t v, lo, hi;
    if (mlc_expr_is_const_int(idx[i], &v)) {
      if (c->ite_depth == 0 && (v < 0 || v >= b->shape[i]))
        return fail(c, "in %s: constant index %" PRId64 " is out of bounds for dimension %d of \"%s\" "
                    "(extent %" PRId64 ")", c->where, v, i, b->name, b->shape[i]);
      continue;
    }
    /* Under an if statement or an if_then_else branch the guard may exclude
     * the out-of-bounds points; elsewhere every point is accessed. */
    if (c->ite_depth > 0 || c->if_depth > 0) continue;
    if (bounds(c, idx[i], &lo, &hi) && (lo < 0 || hi >= b->shape[i]) &&
        !bound_by_bindings(c, idx[i], b->shape[i]))
      return fail(c, "in %s: index %s of \"%s\" ranges over [%" PRId64 ", %" PRId64 "], outside "
                  "dimension %d of extent %" PRId64, c->where, show(c, idx[i]), b->name, lo, hi,
                  i, b->shape[i]);
    /* A symbolic extent: below its bound is not enough, the index must
     * stay below the extent itself at every size. */
    if (b->dims && is_symbolic(b->dims[i]) && !sym_below(c, idx[i], b->dims[i]))
      return fail(c, "in %s: cannot show that index %s of \"%s\" stays below its extent %s at "
                  "every size", c->where, show(c, idx[i]), b->name, show(c, b->dims[i]));
  }
  return true;
}

static bool check_access_buffer(vctx *c, mlc_buffer *b, const char *what) {
  if (!b) return fail(c, "in %s: %s of a missing buffer", c->where, what);
  if (!buffer_visible(c, b))
    return fail(c, "in %s: %s \"%s\", which is not a parameter, an alloc_buffer of an enclosing "
                "block or a decl_buffer in scope", c->where, what, bname(b));
  return true;
}

static bool check_binary(vctx *c, mlc_expr *e) {
  mlc_expr *x = e->bin.a, *y = e->bin.b;
  if (!x || !y) return fail(c, "in %s: %s with a missing operand", c->where, mlc_expr_kind_name(e->kind));
  if (!check_expr(c, x) || !check_expr(c, y)) return false;
  const char *op = mlc_binop_symbol(e->kind) ? mlc_binop_symbol(e->kind) : mlc_expr_kind_name(e->kind);
  if (x->dtype != y->dtype)
    return fail(c, "in %s: operands of %s have different dtypes, %s and %s (%s)", c->where, op,
                dname(x->dtype), dname(y->dtype), show(c, e));
  if (e->kind == MLC_EXPR_AND || e->kind == MLC_EXPR_OR) {
    if (x->dtype != MLC_BOOL)
      return fail(c, "in %s: operands of %s must be bool, got %s (%s)", c->where, op,
                  dname(x->dtype), show(c, e));
  } else if (!mlc_expr_kind_is_compare(e->kind) && x->dtype == MLC_BOOL) {
    return fail(c, "in %s: arithmetic %s on bool operands (%s)", c->where, op, show(c, e));
  }
  bool to_bool = mlc_expr_kind_is_compare(e->kind) || e->kind == MLC_EXPR_AND ||
                 e->kind == MLC_EXPR_OR;
  mlc_dtype want = to_bool ? MLC_BOOL : x->dtype;
  if (e->dtype != want)
    return fail(c, "in %s: %s of %s operands has dtype %s, expected %s (%s)", c->where, op,
                dname(x->dtype), dname(e->dtype), dname(want), show(c, e));
  return true;
}

static bool check_call(vctx *c, mlc_expr *e) {
  if ((unsigned)e->call.op >= MLC_INTRIN_COUNT)
    return fail(c, "in %s: call of unknown intrinsic %d", c->where, (int)e->call.op);
  const char *name = mlc_intrin_name(e->call.op);
  int n = mlc_intrin_nargs(e->call.op);
  if (!e->call.args) return fail(c, "in %s: T.%s with no arguments", c->where, name);
  for (int i = 0; i < n; i++) {
    if (!e->call.args[i])
      return fail(c, "in %s: T.%s expects %d arguments, got %d", c->where, name, n, i);
    if (!check_expr(c, e->call.args[i])) return false;
  }
  mlc_dtype t = e->call.args[0]->dtype;
  for (int i = 1; i < n; i++)
    if (e->call.args[i]->dtype != t)
      return fail(c, "in %s: arguments of T.%s have different dtypes, %s and %s (%s)", c->where,
                  name, dname(t), dname(e->call.args[i]->dtype), show(c, e));
  bool int_ok = e->call.op == MLC_INTRIN_ABS;
  if (!mlc_dtype_is_float(t) && !(int_ok && mlc_dtype_is_int(t)))
    return fail(c, "in %s: T.%s needs a float argument, got %s (%s)", c->where, name, dname(t),
                show(c, e));
  if (e->dtype != t)
    return fail(c, "in %s: T.%s of %s has dtype %s (%s)", c->where, name, dname(t),
                dname(e->dtype), show(c, e));
  return true;
}

static bool check_select(vctx *c, mlc_expr *e) {
  const char *name = e->kind == MLC_EXPR_SELECT ? "T.Select" : "T.if_then_else";
  if (!e->sel.cond || !e->sel.t || !e->sel.f)
    return fail(c, "in %s: %s with a missing operand", c->where, name);
  if (!check_bool_expr(c, e->sel.cond, "the condition")) return false;
  /* Only the taken side of if_then_else runs: its branches may index out
   * of bounds where the condition excludes them. */
  bool lazy = e->kind == MLC_EXPR_IF_THEN_ELSE;
  c->ite_depth += lazy;
  bool ok = check_expr(c, e->sel.t) && check_expr(c, e->sel.f);
  c->ite_depth -= lazy;
  if (!ok) return false;
  if (e->sel.t->dtype != e->sel.f->dtype || e->dtype != e->sel.t->dtype)
    return fail(c, "in %s: %s branches have dtypes %s and %s, result %s (%s)", c->where, name,
                dname(e->sel.t->dtype), dname(e->sel.f->dtype), dname(e->dtype), show(c, e));
  return true;
}

/* A PTR argument: its region lies in the buffer (first and last points). */
static bool check_ptr_arg(vctx *c, mlc_expr *e, const mlc_xarg *x) {
  mlc_buffer *b = x->buf;
  if (!check_access_buffer(c, b, "pointer to")) return false;
  if (x->access < MLC_ACCESS_READ || x->access > (MLC_ACCESS_READ | MLC_ACCESS_WRITE))
    return fail(c, "in %s: pointer to \"%s\" with access mask %d", c->where, bname(b), x->access);
  if (x->kid < 0 || x->kid + 2 * b->ndim > e->ext.n_kids)
    return fail(c, "in %s: pointer to \"%s\" lacks its region", c->where, bname(b));
  mlc_expr **mins = e->ext.kids + x->kid, **exts = mins + b->ndim;
  mlc_expr **last = MLC_NEW_ARRAY(c->a, mlc_expr *, b->ndim ? b->ndim : 1);
  for (int d = 0; d < b->ndim; d++) {
    int64_t v;
    if (!check_int_expr(c, exts[d], "pointer region extent")) return false;
    if (!mlc_expr_is_const_int(exts[d], &v) || v < 1)
      return fail(c, "in %s: pointer to \"%s\": region extent %s is not a positive constant",
                  c->where, bname(b), show(c, exts[d]));
    if (!check_int_expr(c, mins[d], "pointer region start")) return false;
    last[d] = mlc_add(c->a, mins[d], mlc_int_t(c->a, mins[d]->dtype, v - 1));
  }
  return check_indices(c, b, mins, "pointer to") && check_indices(c, b, last, "pointer to");
}

/* T.call_extern: each argument well formed, pointers inside their buffers. */
static bool check_extern(vctx *c, mlc_expr *e) {
  if (!e->ext.name || !e->ext.name[0])
    return fail(c, "in %s: call_extern without a function name", c->where);
  if (e->dtype == MLC_BOOL)
    return fail(c, "in %s: call_extern \"%s\" returns bool", c->where, e->ext.name);
  for (int i = 0; i < e->ext.n_args; i++) {
    const mlc_xarg *x = &e->ext.args[i];
    switch (x->kind) {
    case MLC_XARG_VALUE:
      if (x->kid < 0 || x->kid >= e->ext.n_kids)
        return fail(c, "in %s: call_extern \"%s\": argument %d has no value", c->where,
                    e->ext.name, i);
      if (!check_expr(c, e->ext.kids[x->kid])) return false;
      if (e->ext.kids[x->kid]->dtype == MLC_BOOL)
        return fail(c, "in %s: call_extern \"%s\": argument %d is bool", c->where, e->ext.name, i);
      break;
    case MLC_XARG_PTR:
      if (!check_ptr_arg(c, e, x)) return false;
      break;
    case MLC_XARG_STRIDE:
      if (!check_access_buffer(c, x->buf, "stride of")) return false;
      if (x->dim < 0 || x->dim >= x->buf->ndim)
        return fail(c, "in %s: stride of dimension %d of \"%s\", which has %d", c->where,
                    x->dim, bname(x->buf), x->buf->ndim);
      break;
    }
  }
  return true;
}

static bool check_expr(vctx *c, mlc_expr *e) {
  if (!e) return fail(c, "in %s: missing expression", c->where);
  if ((unsigned)e->kind >= MLC_EXPR_KIND_COUNT)
    return fail(c, "in %s: expression of unknown kind %d", c->where, (int)e->kind);
  if ((unsigned)e->dtype >= MLC_DTYPE_COUNT)
    return fail(c, "in %s: %s expression with invalid dtype %d", c->where,
                mlc_expr_kind_name(e->kind), (int)e->dtype);
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    if (e->dtype == MLC_BOOL) {
      if (e->int_val != 0 && e->int_val != 1)
        return fail(c, "in %s: bool constant with value %" PRId64, c->where, e->int_val);
    } else if (!mlc_dtype_is_int(e->dtype)) {
      return fail(c, "in %s: integer constant %" PRId64 " with dtype %s", c->where, e->int_val,
                  dname(e->dtype));
    }
    return true;
  case MLC_EXPR_FLOAT_IMM:
    if (!mlc_dtype_is_float(e->dtype))
      return fail(c, "in %s: float constant with dtype %s", c->where, dname(e->dtype));
    return true;
  case MLC_EXPR_VAR:
    if (!check_var_use(c, e->var)) return false;
    if (e->dtype != e->var->dtype)
      return fail(c, "in %s: reference to \"%s\" has dtype %s but the variable is %s", c->where,
                  vname(e->var), dname(e->dtype), dname(e->var->dtype));
    return true;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
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
    return check_binary(c, e);
  case MLC_EXPR_NOT:
    if (!e->bin.a) return fail(c, "in %s: not with a missing operand", c->where);
    if (!check_bool_expr(c, e->bin.a, "the operand of not")) return false;
    if (e->dtype != MLC_BOOL)
      return fail(c, "in %s: not has dtype %s, expected bool", c->where, dname(e->dtype));
    return true;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return check_select(c, e);
  case MLC_EXPR_LOAD:
    if (!check_access_buffer(c, e->load.buf, "load from")) return false;
    if (!check_indices(c, e->load.buf, e->load.indices, "load from")) return false;
    if (e->dtype != e->load.buf->dtype)
      return fail(c, "in %s: load from \"%s\" has dtype %s but the buffer is %s", c->where,
                  e->load.buf->name, dname(e->dtype), dname(e->load.buf->dtype));
    return true;
  case MLC_EXPR_CAST:
    return check_expr(c, e->cast.value);
  case MLC_EXPR_CALL:
    return check_call(c, e);
  case MLC_EXPR_CALL_EXTERN:
    return check_extern(c, e);
  }
  mlc_unreachable();
}

/* ---- statements ------------------------------------------------------- */

static bool check_stmt(vctx *c, mlc_stmt *s);

static bool valid_thread_tag(const char *t) {
  static const char *const tags[] = {
      "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
      "vthread",    "vthread.x",  "vthread.y",  "vthread.z",
  };
  for (int i = 0; i < MLC_COUNTOF(tags); i++)
    if (strcmp(t, tags[i]) == 0) return true;
  return false;
}

static bool check_thread(vctx *c, mlc_stmt *s, int64_t extent) {
  const char *v = vname(s->loop.var), *tag = s->loop.thread;
  if (s->loop.kind != MLC_FOR_THREAD_BINDING) {
    if (tag)
      return fail(c, "loop \"%s\" is %s but has thread tag \"%s\"", v,
                  mlc_for_kind_name(s->loop.kind), tag);
    return true;
  }
  if (!tag) return fail(c, "loop \"%s\" is thread_binding but has no thread tag", v);
  if (!valid_thread_tag(tag))
    return fail(c, "loop \"%s\": invalid thread tag \"%s\" (expected blockIdx.x/y/z, "
                "threadIdx.x/y/z or vthread.x/y/z)", v, tag);
  /* Nesting under the same axis is cooperative fetching: both loops are the
   * same hardware index, so their extents must agree. */
  for (int i = 0; i < c->threads.len; i++)
    if (strcmp(c->threads.data[i].tag, tag) == 0 && c->threads.data[i].extent != extent)
      return fail(c, "loop \"%s\" is bound to %s with extent %" PRId64 " inside loop \"%s\" "
                  "bound to the same axis with extent %" PRId64, v, tag, extent,
                  c->threads.data[i].var_name, c->threads.data[i].extent);
  return true;
}

/* A symbolic extent (size vars only): its largest value, at least 1 (a
 * loop that may run zero times ranges as one that runs once). */
static bool is_size_ref(const mlc_expr *e, void *ud) {
  return e->kind == MLC_EXPR_VAR && mlc_func_size_var(ud, e->var);
}

static bool size_extent(vctx *c, mlc_expr *e, int64_t *hi) {
  int64_t lo;
  if (!mlc_expr_any(e, is_size_ref, (void *)c->f) ||
      !mlc_size_range(c->f->n_sizes, c->f->sizes, e, &lo, hi))
    return false;
  if (*hi < 1) *hi = 1;
  return true;
}

/* min + extent - 1: the last value of a range with a symbolic extent. */
static mlc_expr *last_of(vctx *c, mlc_expr *min, mlc_expr *extent) {
  mlc_expr *m = min->dtype == extent->dtype ? min : mlc_cast(c->a, extent->dtype, min);
  return mlc_sub(c->a, mlc_add(c->a, m, extent), mlc_int_t(c->a, extent->dtype, 1));
}

static bool check_for(vctx *c, mlc_stmt *s) {
  mlc_var *v = s->loop.var;
  if (!v) return fail(c, "loop with no variable");
  if ((unsigned)v->dtype >= MLC_DTYPE_COUNT || !mlc_dtype_is_int(v->dtype))
    return fail(c, "loop variable \"%s\" must be an integer, got %s", vname(v), dname(v->dtype));
  if ((unsigned)s->loop.kind >= MLC_FOR_KIND_COUNT)
    return fail(c, "loop \"%s\" has invalid kind %d", vname(v), (int)s->loop.kind);
  const char *saved = c->where;
  c->where = "loop bounds";
  if (!check_int_expr(c, s->loop.min, "the loop start") ||
      !check_int_expr(c, s->loop.extent, "the loop extent"))
    return false;
  c->where = saved;
  int64_t ext, mlo, mhi;
  bool sym = !mlc_expr_is_const_int(s->loop.extent, &ext);
  if (sym && !size_extent(c, s->loop.extent, &ext))
    return fail(c, "loop \"%s\": extent must be a positive integer constant or an expression of "
                "size vars, got %s", vname(v), show(c, s->loop.extent));
  if (ext <= 0)
    return fail(c, "loop \"%s\": extent must be positive, got %s", vname(v), show(c, s->loop.extent));
  if (sym && s->loop.kind == MLC_FOR_THREAD_BINDING)
    return fail(c, "loop \"%s\" is bound to %s but its extent %s is symbolic", vname(v),
                s->loop.thread ? s->loop.thread : "a thread", show(c, s->loop.extent));
  if (!check_thread(c, s, ext)) return false;
  if (!check_anns(c, s->loop.n_anns, s->loop.anns, "loop annotations", true)) return false;
  if (!s->loop.body) return fail(c, "loop \"%s\" has no body", vname(v));
  bool ranged = mlc_expr_is_const_int(s->loop.min, &mlo) ? (mhi = mlo, true)
                                                        : bounds(c, s->loop.min, &mlo, &mhi);
  int nvars = c->vars.len, nthreads = c->threads.len;
  if (!define_var(c, v, true, ranged, mlo, mhi + ext - 1)) return false;
  if (sym) c->vars.data[c->vars.len - 1].smax = last_of(c, s->loop.min, s->loop.extent);
  if (s->loop.kind == MLC_FOR_THREAD_BINDING) {
    thread_loop t = {s->loop.thread, ext, vname(v)};
    MLC_VEC_APUSH(c->a, c->threads, t);
  }
  bool ok = check_stmt(c, s->loop.body);
  c->threads.len = nthreads;
  pop_vars(c, nvars);
  return ok;
}

static int name_slot(const vctx *c, const char *name) {
  int i = (int)(mlc_hash_str(name, 0) & (uint64_t)(c->name_cap - 1));
  while (c->name_slots[i] && strcmp(c->names.data[c->name_slots[i] - 1], name) != 0)
    i = (i + 1) & (c->name_cap - 1);
  return i;
}

static bool check_name(vctx *c, const mlc_block *b) {
  if (!b->name || !b->name[0]) return fail(c, "block with no name");
  if (c->name_cap && c->name_slots[name_slot(c, b->name)])
    return fail(c, "duplicate block name \"%s\" (block names must be unique in a function)",
                b->name);
  MLC_VEC_APUSH(c->a, c->names, b->name);
  if (2 * c->names.len > c->name_cap) { /* rehash at half full */
    c->name_cap = c->name_cap ? 2 * c->name_cap : 64;
    c->name_slots = MLC_NEW_ARRAY(c->a, int, c->name_cap);
    memset(c->name_slots, 0, sizeof(int) * (size_t)c->name_cap);
    for (int i = 0; i < c->names.len - 1; i++)
      c->name_slots[name_slot(c, c->names.data[i])] = i + 1;
  }
  c->name_slots[name_slot(c, b->name)] = c->names.len;
  return true;
}

/* Iter vars: integer vars with constant domains, bound to integer values
 * that stay inside the domain unless T.where may exclude the outside.
 * Sets [lo[i], hi[i]] to the values iter var i can take: its domain
 * intersected with the range of its binding over the enclosing loops, as
 * TensorIR bounds accesses (vi = T.axis.S(16, 8 + i), i < 8, may read
 * A[vi - 8] of an 8-element A). */
static bool check_iters(vctx *c, const mlc_block *b, mlc_expr **values, bool has_pred,
                        int64_t *lo, int64_t *hi) {
  if (b->n_iters < 0) return fail(c, "negative iter var count");
  if (b->n_iters > 0 && (!b->iters || !values))
    return fail(c, "block has %d iter vars but no %s", b->n_iters,
                b->iters ? "bindings" : "iter var array");
  for (int i = 0; i < b->n_iters; i++) {
    const mlc_iter_var *it = &b->iters[i];
    if (!it->var) return fail(c, "iter var %d has no variable", i);
    const char *v = vname(it->var);
    if ((unsigned)it->var->dtype >= MLC_DTYPE_COUNT || !mlc_dtype_is_int(it->var->dtype))
      return fail(c, "iter var \"%s\" must be an integer, got %s", v, dname(it->var->dtype));
    if (it->kind != MLC_ITER_SPATIAL && it->kind != MLC_ITER_REDUCE)
      return fail(c, "iter var \"%s\" has invalid kind %d", v, (int)it->kind);
    int64_t dmin, dext;
    if (!it->dom.min || !it->dom.extent || !mlc_expr_is_const_int(it->dom.min, &dmin) ||
        !(mlc_expr_is_const_int(it->dom.extent, &dext) || size_extent(c, it->dom.extent, &dext)))
      return fail(c, "iter var \"%s\": domain must have a constant min and a constant extent or "
                  "one of size vars", v);
    if (dext <= 0)
      return fail(c, "iter var \"%s\": domain extent %" PRId64 " must be positive", v, dext);
    c->where = "an iter var binding";
    if (!check_int_expr(c, values[i], "the binding")) return false;
    int64_t blo, bhi;
    bool ranged = bounds(c, values[i], &blo, &bhi);
    lo[i] = dmin;
    hi[i] = dmin + dext - 1;
    if (ranged && blo > lo[i]) lo[i] = blo;
    if (ranged && bhi < hi[i]) hi[i] = bhi;
    /* Under T.where the binding may leave the domain where the predicate
     * is false; the iter var still stays in both ranges when it runs. An
     * empty intersection means the block never runs: keep the domain. */
    if (lo[i] > hi[i]) lo[i] = dmin, hi[i] = dmin + dext - 1;
    if (has_pred) continue;
    if (!ranged)
      return fail(c, "cannot bound the binding %s of iter var \"%s\" to show it stays in its "
                  "domain [%" PRId64 ", %" PRId64 ")", show(c, values[i]), v, dmin, dmin + dext);
    if (blo < dmin || bhi > dmin + dext - 1)
      return fail(c, "binding %s of iter var \"%s\" ranges over [%" PRId64 ", %" PRId64 "], "
                  "outside its domain [%" PRId64 ", %" PRId64 ") and the block has no T.where "
                  "predicate", show(c, values[i]), v, blo, bhi, dmin, dmin + dext);
    if (is_symbolic(it->dom.extent) &&
        !sym_below(c, mlc_sub(c->a, values[i], it->dom.min), it->dom.extent))
      return fail(c, "cannot show that binding %s of iter var \"%s\" stays in its domain of "
                  "extent %s at every size, and the block has no T.where predicate",
                  show(c, values[i]), v, show(c, it->dom.extent));
  }
  return true;
}

static bool check_regions(vctx *c, int n, const mlc_region *r, const char *what) {
  if (n < 0 || (n > 0 && !r)) return fail(c, "invalid %s list", what);
  c->where = what;
  for (int i = 0; i < n; i++) {
    mlc_buffer *b = r[i].buf;
    if (!b) return fail(c, "%s entry %d has no buffer", what, i);
    /* Regions describe what the block exchanges with the outside, so they
     * name buffers visible outside it (or, leniently, its own allocs). */
    if (!buffer_visible(c, b))
      return fail(c, "%s names buffer \"%s\", which is not defined in scope", what, bname(b));
    if (b->ndim > 0 && !r[i].ranges) return fail(c, "%s of \"%s\" has no ranges", what, b->name);
    for (int d = 0; d < b->ndim; d++) {
      if (!check_int_expr(c, r[i].ranges[d].min, "a region start") ||
          !check_int_expr(c, r[i].ranges[d].extent, "a region extent"))
        return false;
      int64_t ext;
      if (mlc_expr_is_const_int(r[i].ranges[d].extent, &ext) && ext <= 0)
        return fail(c, "%s of \"%s\": dimension %d has extent %" PRId64, what, b->name, d, ext);
    }
  }
  return true;
}

/* ---- region coverage -------------------------------------------------- */

static void put_region(vctx *c, mlc_str *s, mlc_region r) {
  mlc_str_puts(s, r.buf->name);
  mlc_str_putc(s, '[');
  for (int d = 0; d < r.buf->ndim; d++) {
    int64_t ext;
    if (d) mlc_str_puts(s, ", ");
    mlc_print_expr(s, r.ranges[d].min);
    if (mlc_expr_is_const_int(r.ranges[d].extent, &ext) && ext == 1) continue;
    mlc_str_puts(s, ":");
    mlc_expr *end = r.ranges[d].min->dtype == r.ranges[d].extent->dtype
                        ? mlc_simplify_expr(c->a, mlc_add(c->a, r.ranges[d].min, r.ranges[d].extent))
                        : r.ranges[d].extent;
    if (end == r.ranges[d].extent) {
      mlc_print_expr(s, r.ranges[d].min);
      mlc_str_puts(s, " + ");
    }
    mlc_print_expr(s, end);
  }
  mlc_str_putc(s, ']');
}

static const char *show_region(vctx *c, mlc_region r) {
  mlc_str s = {.arena = c->a};
  put_region(c, &s, r);
  char *t = mlc_arena_strdup(c->a, mlc_str_cstr(&s));
  mlc_str_free(&s);
  return t;
}

static const char *show_declared(vctx *c, int n, const mlc_region *r, const mlc_buffer *b) {
  mlc_str s = {.arena = c->a};
  int k = 0;
  for (int i = 0; i < n; i++)
    if (r[i].buf == b) {
      if (k++) mlc_str_puts(&s, ", ");
      put_region(c, &s, r[i]);
    }
  if (!k) mlc_str_puts(&s, "nothing");
  char *t = mlc_arena_strdup(c->a, mlc_str_cstr(&s));
  mlc_str_free(&s);
  return t;
}

/* Whether e >= 0 for every value of the vars in scope. */
static bool provably_nonneg(vctx *c, mlc_expr *e) {
  int64_t lo, hi;
  return lifted_bounds(c, mlc_simplify_expr(c->a, e), LIFT_DEPTH, &lo, &hi) && lo >= 0;
}

/* Does declared range `d` contain accessed range `r` for every value of the
 * vars in scope? Either their starts differ by a constant, or both gaps
 * (r.min - d.min, d's end - r's end) are provably non-negative (a hull
 * T.min(x, y):T.max(x, y) + 1 covers x and y), or the access's widest span
 * lies inside the span the declaration always covers. */
static bool range_covers(vctx *c, mlc_range d, mlc_range r) {
  int64_t diff, rext, dext;
  if (mlc_expr_const_diff(c->a, r.min, d.min, &diff) && mlc_expr_is_const_int(r.extent, &rext) &&
      mlc_expr_is_const_int(d.extent, &dext))
    return diff >= 0 && diff + rext <= dext;
  if (r.min->dtype == d.min->dtype && r.extent->dtype == d.extent->dtype &&
      r.min->dtype == r.extent->dtype) {
    mlc_expr *lo_gap = mlc_sub(c->a, r.min, d.min);
    mlc_expr *hi_gap = mlc_sub(c->a, mlc_add(c->a, d.min, d.extent), mlc_add(c->a, r.min, r.extent));
    if (provably_nonneg(c, lo_gap) && provably_nonneg(c, hi_gap)) return true;
  }
  int64_t rlo, rhi, elo, ehi, dlo, dhi, xlo, xhi;
  if (!bounds(c, r.min, &rlo, &rhi) || !bounds(c, r.extent, &elo, &ehi)) return false;
  if (!bounds(c, d.min, &dlo, &dhi) || !bounds(c, d.extent, &xlo, &xhi)) return false;
  return rlo >= dhi && rhi + ehi - 1 <= dlo + xlo - 1;
}

static bool region_covered(vctx *c, mlc_region r, int n, const mlc_region *decl) {
  for (int i = 0; i < n; i++) {
    if (decl[i].buf != r.buf) continue;
    bool all = true;
    for (int d = 0; d < r.buf->ndim && all; d++)
      all = range_covers(c, decl[i].ranges[d], r.ranges[d]);
    if (all) return true;
  }
  return false;
}

/* Every access of the block's body and init to a buffer visible outside
 * the block must lie in its declared T.reads / T.writes. */
static bool check_coverage(vctx *c, const mlc_block *b, int outer_bufs) {
  mlc_region_set rd[2] = {{0}}, wr[2] = {{0}};
  mlc_stmt_access_list(c->a, b->body, &rd[0], &wr[0]);
  if (b->init) mlc_stmt_access_list(c->a, b->init, &rd[1], &wr[1]);
  for (int part = 0; part < 2; part++) {
    for (int i = 0; i < wr[part].n; i++) {
      mlc_region r = wr[part].regions[i];
      if (!buffer_in(c, r.buf, 0, outer_bufs)) continue;
      if (!region_covered(c, r, b->n_writes, b->writes))
        return fail(c, "T.writes does not cover the write of %s in its %s (declared for \"%s\": %s)",
                    show_region(c, r), part ? "init" : "body", r.buf->name,
                    show_declared(c, b->n_writes, b->writes, r.buf));
    }
    for (int i = 0; i < rd[part].n; i++) {
      mlc_region r = rd[part].regions[i];
      if (!buffer_in(c, r.buf, 0, outer_bufs)) continue;
      if (region_covered(c, r, b->n_reads, b->reads)) continue;
      /* A reduction's read of its own output is implicit. */
      if (b->init && region_covered(c, r, b->n_writes, b->writes)) continue;
      return fail(c, "T.reads does not cover the read of %s in its %s (declared for \"%s\": %s)",
                  show_region(c, r), part ? "init" : "body", r.buf->name,
                  show_declared(c, b->n_reads, b->reads, r.buf));
    }
  }
  return true;
}

/* ---- blocks ----------------------------------------------------------- */

static bool check_block_inner(vctx *c, const mlc_block *b, bool is_root) {
  int outer_bufs = c->bufs.len;
  if (b->n_allocs < 0 || (b->n_allocs > 0 && !b->allocs)) return fail(c, "invalid alloc_buffers");
  for (int i = 0; i < b->n_allocs; i++)
    if (!define_buffer(c, b->allocs[i], "alloc_buffer")) return false;
  if (!check_anns(c, b->n_anns, b->anns, "block annotations", true)) return false;
  if (!check_regions(c, b->n_reads, b->reads, "T.reads") ||
      !check_regions(c, b->n_writes, b->writes, "T.writes"))
    return false;
  if (b->init) {
    c->where = "the init";
    if (!check_stmt(c, b->init)) return false;
  }
  if (!b->body) return fail(c, "block has no body");
  c->where = "the body";
  if (!check_stmt(c, b->body)) return false;
  c->where = "the block";
  if (!is_root && !check_coverage(c, b, outer_bufs)) return false;
  return true;
}

static bool check_realize(vctx *c, mlc_stmt *s, bool is_root) {
  const mlc_block *b = s->realize.block;
  if (!b) return fail(c, "block realize with no block");
  const mlc_block *outer = c->block;
  const mlc_stmt *outer_realize = c->realize;
  const char *saved_where = c->where;
  int saved_level = c->level, nvars = c->vars.len, nbufs = c->bufs.len;
  int saved_ite = c->ite_depth, saved_if = c->if_depth;
  c->block = b;
  c->realize = s;
  if (!check_name(c, b)) return false;
  if (is_root && b->n_iters != 0)
    return fail(c, "the root block must have no iter vars, has %d", b->n_iters);
  /* Bindings and predicate are evaluated outside the block. */
  int64_t *lo = MLC_NEW_ARRAY(c->a, int64_t, b->n_iters > 0 ? b->n_iters : 1);
  int64_t *hi = MLC_NEW_ARRAY(c->a, int64_t, b->n_iters > 0 ? b->n_iters : 1);
  if (!check_iters(c, b, s->realize.values, s->realize.predicate != NULL, lo, hi)) return false;
  if (s->realize.predicate) {
    c->where = "the T.where predicate";
    if (!check_bool_expr(c, s->realize.predicate, "the predicate")) return false;
  }
  if (b->n_iters > 0) c->level++;
  for (int i = 0; i < b->n_iters; i++) {
    const mlc_range *dom = &b->iters[i].dom;
    if (!define_var(c, b->iters[i].var, false, true, lo[i], hi[i])) return false;
    if (is_symbolic(dom->extent)) c->vars.data[c->vars.len - 1].smax = last_of(c, dom->min, dom->extent);
  }
  c->ite_depth = c->if_depth = 0; /* the block's own domain governs its accesses */
  bool ok = check_block_inner(c, b, is_root);
  c->ite_depth = saved_ite;
  c->if_depth = saved_if;
  c->bufs.len = nbufs;
  pop_vars(c, nvars);
  c->level = saved_level;
  c->block = outer;
  c->realize = outer_realize;
  c->where = saved_where;
  return ok;
}

static bool check_stmt(vctx *c, mlc_stmt *s) {
  if (!s) return fail(c, "in %s: missing statement", c->where);
  if ((unsigned)s->kind >= MLC_STMT_KIND_COUNT)
    return fail(c, "in %s: statement of unknown kind %d", c->where, (int)s->kind);
  switch (s->kind) {
  case MLC_STMT_FOR:
    return check_for(c, s);
  case MLC_STMT_BLOCK_REALIZE:
    return check_realize(c, s, false);
  case MLC_STMT_SEQ:
    if (s->seq.n < 1 || !s->seq.stmts) return fail(c, "in %s: empty statement sequence", c->where);
    for (int i = 0; i < s->seq.n; i++)
      if (!check_stmt(c, s->seq.stmts[i])) return false;
    return true;
  case MLC_STMT_STORE: {
    mlc_buffer *b = s->store.buf;
    if (!check_access_buffer(c, b, "store to")) return false;
    if (!check_indices(c, b, s->store.indices, "store to")) return false;
    if (!check_expr(c, s->store.value)) return false;
    if (s->store.value->dtype != b->dtype)
      return fail(c, "in %s: store to \"%s\" of a %s value, but the buffer is %s (%s)", c->where,
                  b->name, dname(s->store.value->dtype), dname(b->dtype), show(c, s->store.value));
    return true;
  }
  case MLC_STMT_IF: {
    if (!check_bool_expr(c, s->if_.cond, "the if condition")) return false;
    if (!s->if_.then_s) return fail(c, "in %s: if with no then branch", c->where);
    c->if_depth++;
    bool ok = check_stmt(c, s->if_.then_s) && (!s->if_.else_s || check_stmt(c, s->if_.else_s));
    c->if_depth--;
    return ok;
  }
  case MLC_STMT_ALLOCATE: {
    int nbufs = c->bufs.len;
    if (!define_buffer(c, s->alloc.buf, "decl_buffer")) return false;
    bool ok = check_stmt(c, s->alloc.body);
    c->bufs.len = nbufs;
    return ok;
  }
  case MLC_STMT_EVALUATE:
    return check_expr(c, s->eval.value);
  }
  mlc_unreachable();
}

/* ---- functions -------------------------------------------------------- */

static bool check_func(vctx *c) {
  const mlc_prim_func *f = c->f;
  if (!f->name || !f->name[0]) return fail(c, "function with no name");
  if (f->n_params < 0 || (f->n_params > 0 && !f->params)) return fail(c, "invalid parameter list");
  if (!check_sizes(c)) return false;
  for (int i = 0; i < f->n_params; i++)
    if (!define_buffer(c, f->params[i], "parameter")) return false;
  if (!check_anns(c, f->n_attrs, f->attrs, "function attributes", true)) return false;
  if (!f->body) return fail(c, "function has no body");
  if (f->body->kind != MLC_STMT_BLOCK_REALIZE)
    return fail(c, "the function body must be the root block, got a %s statement",
                (unsigned)f->body->kind < MLC_STMT_KIND_COUNT ? mlc_stmt_kind_name(f->body->kind)
                                                               : "?");
  if (f->body->realize.predicate) {
    int64_t v;
    if (!mlc_expr_is_const_int(f->body->realize.predicate, &v) || v != 1)
      return fail(c, "the root block must have no T.where predicate");
  }
  c->where = "the body";
  return check_realize(c, f->body, true);
}

/* Everything the check takes is in its scratch arena, which grows with the
 * function: running out of memory there jumps back here and is an error. */
static bool check_guarded(vctx *c) {
  jmp_buf jb;
  if (setjmp(jb)) return mlc_error_set(c->err, "function \"%s\": out of memory verifying it",
                                       c->f->name ? c->f->name : "?");
  mlc_arena_set_oom_jump(c->a, &jb);
  return check_func(c);
}

static bool verify_in(mlc_arena *a, const mlc_prim_func *f, mlc_error *err) {
  vctx c = {0};
  c.f = f;
  c.err = err;
  c.a = a;
  c.where = "the function";
  bool ok = check_guarded(&c);
  mlc_arena_free(c.a);
  return ok;
}

bool mlc_verify_func(const mlc_prim_func *f, mlc_error *err) {
  if (!f) return mlc_error_set(err, "verify: no function");
  return verify_in(mlc_arena_new(), f, err); /* the header, fixed size: aborts by design */
}

bool mlc_verify_func_in(mlc_arena *parent, const mlc_prim_func *f, mlc_error *err) {
  if (!f) return mlc_error_set(err, "verify: no function");
  return verify_in(mlc_arena_new_child(parent), f, err);
}

bool mlc_verify_module(const mlc_module *m, mlc_error *err) {
  if (!m) return mlc_error_set(err, "verify: no module");
  for (int i = 0; i < m->n_funcs; i++) {
    const mlc_prim_func *f = m->funcs[i];
    if (!f) return mlc_error_set(err, "module: function %d is missing", i);
    for (int j = 0; j < i; j++)
      if (f->name && m->funcs[j]->name && strcmp(f->name, m->funcs[j]->name) == 0)
        return mlc_error_set(err, "module: duplicate function name \"%s\"", f->name);
    if (!mlc_verify_func(f, err)) return false;
  }
  return true;
}
