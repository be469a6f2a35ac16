/* The arithmetic simplifier: constant folding, the affine canonical form of
 * integer index expressions, floordiv/floormod by constants using var
 * ranges, interval bounds, and decisions of comparisons and min/max.
 *
 * Integer rules assume index arithmetic does not wrap (as TVM does); every
 * fold is done in int64 with overflow checks and refused when the result
 * would not fit the dtype, so the simplifier itself never overflows. Float
 * expressions are only folded where all operands are float32 literals, in
 * float32 arithmetic; nothing float is reassociated. float16 is not folded.
 */
#include "ir/arith_internal.h"

#include <math.h>
#include <string.h>

typedef struct binding {
  const mlc_var *v;
  int64_t lo, hi; /* inclusive; lo > hi never stored (unbounded instead) */
} binding;

struct mlc_simplifier {
  mlc_arena *a;
  binding *b;
  int n, cap;
};

mlc_simplifier *mlc_simplifier_new(mlc_arena *a) {
  mlc_simplifier *s = MLC_NEW(a, mlc_simplifier);
  s->a = a;
  return s;
}

static binding *find_binding(const mlc_simplifier *s, const mlc_var *v) {
  for (int i = s->n - 1; i >= 0; i--)
    if (s->b[i].v == v) return &s->b[i];
  return NULL;
}

/* A binding is appended without looking for an older one of v (binding a
 * loop nest's vars is a scan per var otherwise, the bulk of a search
 * round's simplifier set-up): lookups go newest first, so the last one
 * holds. */
void mlc_simplifier_bind(mlc_simplifier *s, mlc_var *v, int64_t min, int64_t extent) {
  int64_t hi;
  /* An empty or overflowing range tells nothing usable: leave v free. */
  if (extent < 1 || __builtin_add_overflow(min, extent - 1, &hi)) {
    int k = 0;
    for (int i = 0; i < s->n; i++)
      if (s->b[i].v != v) s->b[k++] = s->b[i];
    s->n = k;
    return;
  }
  if (s->n > 0 && s->b[s->n - 1].v == v) { /* rebinding the last one, as loops do */
    s->b[s->n - 1] = (binding){v, min, hi};
    return;
  }
  if (s->n == s->cap) {
    int ncap = s->cap ? 2 * s->cap : 16;
    binding *nb = mlc_arena_alloc_uninit(s->a, sizeof(binding) * (size_t)ncap);
    if (s->n) memcpy(nb, s->b, sizeof(binding) * (size_t)s->n);
    s->b = nb;
    s->cap = ncap;
  }
  s->b[s->n++] = (binding){v, min, hi};
}

/* ---- exact integer helpers ------------------------------------------- */

static bool int_range(mlc_dtype t, int64_t *lo, int64_t *hi) {
  switch (t) {
  case MLC_BOOL: *lo = 0; *hi = 1; return true;
  case MLC_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
  case MLC_UINT8: *lo = 0; *hi = UINT8_MAX; return true;
  case MLC_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
  case MLC_INT64: *lo = INT64_MIN; *hi = INT64_MAX; return true;
  case MLC_FLOAT16:
  case MLC_BFLOAT16:
  case MLC_FLOAT32:
    return false;
  }
  mlc_unreachable();
}

static bool fits(mlc_dtype t, int64_t v) {
  int64_t lo, hi;
  return int_range(t, &lo, &hi) && v >= lo && v <= hi;
}

static bool is_int(const mlc_expr *e) { return mlc_dtype_is_int(e->dtype); }
static bool is_int_imm(const mlc_expr *e) { return e->kind == MLC_EXPR_INT_IMM; }
static bool is_f32_imm(const mlc_expr *e) {
  return e->kind == MLC_EXPR_FLOAT_IMM && e->dtype == MLC_FLOAT32;
}

bool arith_floordiv(int64_t x, int64_t y, int64_t *r) {
  if (y == 0 || (x == INT64_MIN && y == -1)) return false;
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) q--;
  *r = q;
  return true;
}

bool arith_floormod(int64_t x, int64_t y, int64_t *r) {
  if (y == 0) return false;
  if (y == -1) {
    *r = 0;
    return true;
  }
  int64_t m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  *r = m;
  return true;
}

static bool truncdiv(int64_t x, int64_t y, int64_t *r) {
  if (y == 0 || (x == INT64_MIN && y == -1)) return false;
  *r = x / y;
  return true;
}

static bool mul_interval(int64_t al, int64_t ah, int64_t bl, int64_t bh, int64_t *lo,
                         int64_t *hi) {
  int64_t p[4];
  if (__builtin_mul_overflow(al, bl, &p[0]) || __builtin_mul_overflow(al, bh, &p[1]) ||
      __builtin_mul_overflow(ah, bl, &p[2]) || __builtin_mul_overflow(ah, bh, &p[3]))
    return false;
  *lo = *hi = p[0];
  for (int i = 1; i < 4; i++) {
    if (p[i] < *lo) *lo = p[i];
    if (p[i] > *hi) *hi = p[i];
  }
  return true;
}

/* Extremes of a monotone division over a box whose divisor excludes 0 are
 * at its corners. */
static bool div_interval(bool floor_div, int64_t al, int64_t ah, int64_t bl, int64_t bh,
                         int64_t *lo, int64_t *hi) {
  if (bl <= 0 && bh >= 0) return false;
  int64_t xs[2] = {al, ah}, ys[2] = {bl, bh};
  bool first = true;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      int64_t q;
      if (!(floor_div ? arith_floordiv(xs[i], ys[j], &q) : truncdiv(xs[i], ys[j], &q)))
        return false;
      if (first || q < *lo) *lo = q;
      if (first || q > *hi) *hi = q;
      first = false;
    }
  return true;
}

/* ---- structural equality ---------------------------------------------- */

bool arith_expr_equal(const mlc_expr *x, const mlc_expr *y) {
  if (x == y) return true;
  if (x->kind != y->kind || x->dtype != y->dtype) return false;
  switch (x->kind) {
  case MLC_EXPR_INT_IMM:
    return x->int_val == y->int_val;
  case MLC_EXPR_FLOAT_IMM:
    return memcmp(&x->float_val, &y->float_val, sizeof(double)) == 0;
  case MLC_EXPR_VAR:
    return x->var == y->var;
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
    return arith_expr_equal(x->bin.a, y->bin.a) && arith_expr_equal(x->bin.b, y->bin.b);
  case MLC_EXPR_NOT:
    return arith_expr_equal(x->bin.a, y->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return arith_expr_equal(x->sel.cond, y->sel.cond) && arith_expr_equal(x->sel.t, y->sel.t) &&
           arith_expr_equal(x->sel.f, y->sel.f);
  case MLC_EXPR_LOAD:
    if (x->load.buf != y->load.buf) return false;
    for (int i = 0; i < x->load.buf->ndim; i++)
      if (!arith_expr_equal(x->load.indices[i], y->load.indices[i])) return false;
    return true;
  case MLC_EXPR_CAST:
    return arith_expr_equal(x->cast.value, y->cast.value);
  case MLC_EXPR_CALL:
    if (x->call.op != y->call.op) return false;
    for (int i = 0; i < mlc_intrin_nargs(x->call.op); i++)
      if (!arith_expr_equal(x->call.args[i], y->call.args[i])) return false;
    return true;
  case MLC_EXPR_CALL_EXTERN: return x == y; /* two calls may have effects twice */
  }
  mlc_unreachable();
}

bool arith_uses_bound_var(const mlc_simplifier *s, const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
    return false;
  case MLC_EXPR_VAR:
    return find_binding(s, e->var) != NULL;
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
    return arith_uses_bound_var(s, e->bin.a) || arith_uses_bound_var(s, e->bin.b);
  case MLC_EXPR_NOT:
    return arith_uses_bound_var(s, e->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return arith_uses_bound_var(s, e->sel.cond) || arith_uses_bound_var(s, e->sel.t) ||
           arith_uses_bound_var(s, e->sel.f);
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++)
      if (arith_uses_bound_var(s, e->load.indices[i])) return true;
    return false;
  case MLC_EXPR_CAST:
    return arith_uses_bound_var(s, e->cast.value);
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      if (arith_uses_bound_var(s, e->call.args[i])) return true;
    return false;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++)
      if (arith_uses_bound_var(s, e->ext.kids[i])) return true;
    return false;
  }
  mlc_unreachable();
}

/* ---- linear forms ------------------------------------------------------ */

void arith_lin_init(arith_lin *L) {
  L->t = L->inline_t;
  L->n = 0;
  L->cap = MLC_COUNTOF(L->inline_t);
  L->c = 0;
  L->bad = false;
}

int arith_lin_nterms(const arith_lin *L) {
  int k = 0;
  for (int i = 0; i < L->n; i++) k += L->t[i].coeff != 0;
  return k;
}

void arith_lin_add_term(mlc_simplifier *s, arith_lin *L, mlc_expr *atom, int64_t coeff) {
  for (int i = 0; i < L->n; i++)
    if (arith_expr_equal(L->t[i].atom, atom)) {
      if (__builtin_add_overflow(L->t[i].coeff, coeff, &L->t[i].coeff)) L->bad = true;
      return;
    }
  if (L->n == L->cap) {
    arith_term *nt = MLC_NEW_ARRAY(s->a, arith_term, 2 * L->cap);
    memcpy(nt, L->t, sizeof(arith_term) * (size_t)L->n);
    L->t = nt;
    L->cap *= 2;
  }
  L->t[L->n++] = (arith_term){atom, coeff};
}

static void lin_add_const(arith_lin *L, int64_t v, int64_t mult) {
  int64_t p;
  if (__builtin_mul_overflow(v, mult, &p) || __builtin_add_overflow(L->c, p, &L->c)) L->bad = true;
}

/* L += mult * M. */
static void lin_merge(mlc_simplifier *s, arith_lin *L, const arith_lin *M, int64_t mult) {
  if (M->bad) L->bad = true;
  lin_add_const(L, M->c, mult);
  for (int i = 0; i < M->n && !L->bad; i++) {
    int64_t p;
    if (__builtin_mul_overflow(M->t[i].coeff, mult, &p)) L->bad = true;
    else arith_lin_add_term(s, L, M->t[i].atom, p);
  }
}

static mlc_expr *simp(mlc_simplifier *s, mlc_expr *e);

static bool is_affine_kind(const mlc_expr *e) {
  return is_int(e) && (e->kind == MLC_EXPR_INT_IMM || e->kind == MLC_EXPR_ADD ||
                       e->kind == MLC_EXPR_SUB || e->kind == MLC_EXPR_MUL);
}

/* L += mult * e. With `simplify`, non-affine subterms are simplified before
 * they become atoms (a simplified subterm that turns out affine, e.g.
 * floordiv(i*16 + j, 16) -> i, is flattened in). */
static void lin_add(mlc_simplifier *s, arith_lin *L, mlc_expr *e, int64_t mult, bool simplify) {
  if (L->bad) return;
  if (!is_affine_kind(e)) {
    if (!simplify) {
      arith_lin_add_term(s, L, e, mult);
      return;
    }
    mlc_expr *e2 = simp(s, e);
    if (is_affine_kind(e2)) lin_add(s, L, e2, mult, false);
    else arith_lin_add_term(s, L, e2, mult);
    return;
  }
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    lin_add_const(L, e->int_val, mult);
    return;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
    lin_add(s, L, e->bin.a, mult, simplify);
    if (e->kind == MLC_EXPR_SUB && mult == INT64_MIN) L->bad = true;
    else lin_add(s, L, e->bin.b, e->kind == MLC_EXPR_SUB ? -mult : mult, simplify);
    return;
  default:
    break;
  }
  /* MUL: affine only when one factor is a constant. */
  arith_lin fb, fa;
  arith_lin_init(&fb);
  lin_add(s, &fb, e->bin.b, 1, simplify);
  if (fb.bad) {
    L->bad = true;
    return;
  }
  int64_t k;
  if (arith_lin_nterms(&fb) == 0) {
    if (__builtin_mul_overflow(fb.c, mult, &k)) L->bad = true;
    else lin_add(s, L, e->bin.a, k, simplify);
    return;
  }
  arith_lin_init(&fa);
  lin_add(s, &fa, e->bin.a, 1, simplify);
  if (fa.bad) {
    L->bad = true;
    return;
  }
  if (arith_lin_nterms(&fa) == 0) {
    if (__builtin_mul_overflow(fa.c, mult, &k)) L->bad = true;
    else lin_merge(s, L, &fb, k);
    return;
  }
  mlc_expr *atom = e;
  if (simplify) {
    mlc_expr *x = arith_lin_build(s->a, &fa, e->dtype), *y = arith_lin_build(s->a, &fb, e->dtype);
    if (!x || !y) {
      L->bad = true;
      return;
    }
    atom = mlc_mul(s->a, x, y);
  }
  arith_lin_add_term(s, L, atom, mult);
}

void arith_lin_add(mlc_simplifier *s, arith_lin *L, mlc_expr *e, int64_t mult) {
  lin_add(s, L, e, mult, false);
}

static mlc_expr *scaled(mlc_arena *a, mlc_expr *atom, int64_t k, mlc_dtype t) {
  return k == 1 ? atom : mlc_mul(a, atom, mlc_int_t(a, t, k));
}

/* Whether arith_lin_build can write L in t. */
static bool lin_fits(const arith_lin *L, mlc_dtype t) {
  if (L->bad || !fits(t, L->c)) return false;
  for (int i = 0; i < L->n; i++)
    if (!fits(t, L->t[i].coeff) || L->t[i].coeff == INT64_MIN) return false;
  return true;
}

mlc_expr *arith_lin_build(mlc_arena *a, const arith_lin *L, mlc_dtype t) {
  if (!lin_fits(L, t)) return NULL;
  mlc_expr *r = NULL;
  bool const_done = false;
  for (int i = 0; i < L->n; i++) {
    int64_t k = L->t[i].coeff;
    mlc_expr *atom = L->t[i].atom;
    if (k == 0) continue;
    if (!r) {
      if (k > 0) {
        r = scaled(a, atom, k, t);
      } else if (L->c > 0) {
        /* 15 - i reads better than i * -1 + 15. */
        r = mlc_sub(a, mlc_int_t(a, t, L->c), scaled(a, atom, -k, t));
        const_done = true;
      } else {
        r = scaled(a, atom, k, t);
      }
    } else {
      r = k > 0 ? mlc_add(a, r, scaled(a, atom, k, t)) : mlc_sub(a, r, scaled(a, atom, -k, t));
    }
  }
  if (const_done) return r;
  if (!r) return mlc_int_t(a, t, L->c);
  if (L->c > 0) return mlc_add(a, r, mlc_int_t(a, t, L->c));
  if (L->c < 0) {
    if (L->c == INT64_MIN) return NULL;
    return mlc_sub(a, r, mlc_int_t(a, t, -L->c));
  }
  return r;
}

/* ---- bounds ------------------------------------------------------------ */

static bool bounds(mlc_simplifier *s, const mlc_expr *e, int64_t *lo, int64_t *hi);

/* Bounds of an atom of a linear form: a product of two non-constant factors
 * is bounded directly (bounds() would linearize it back into itself). */
static bool atom_bounds(mlc_simplifier *s, const mlc_expr *e, int64_t *lo, int64_t *hi) {
  if (e->kind == MLC_EXPR_MUL) {
    int64_t al, ah, bl, bh;
    return bounds(s, e->bin.a, &al, &ah) && bounds(s, e->bin.b, &bl, &bh) &&
           mul_interval(al, ah, bl, bh, lo, hi);
  }
  return bounds(s, e, lo, hi);
}

bool arith_lin_bounds(mlc_simplifier *s, const arith_lin *L, int64_t *lo, int64_t *hi) {
  if (L->bad) return false;
  int64_t l = L->c, h = L->c;
  for (int i = 0; i < L->n; i++) {
    int64_t k = L->t[i].coeff, al, ah, tl, th;
    if (k == 0) continue;
    if (!atom_bounds(s, L->t[i].atom, &al, &ah) || !mul_interval(al, ah, k, k, &tl, &th))
      return false;
    if (__builtin_add_overflow(l, tl, &l) || __builtin_add_overflow(h, th, &h)) return false;
  }
  *lo = l;
  *hi = h;
  return true;
}

static bool bin_bounds(mlc_simplifier *s, const mlc_expr *e, int64_t *al, int64_t *ah,
                       int64_t *bl, int64_t *bh) {
  return bounds(s, e->bin.a, al, ah) && bounds(s, e->bin.b, bl, bh);
}

static bool floormod_bounds(mlc_simplifier *s, const mlc_expr *e, int64_t *lo, int64_t *hi) {
  int64_t al, ah, bl, bh;
  if (!bounds(s, e->bin.b, &bl, &bh)) return false;
  bool a_ok = bounds(s, e->bin.a, &al, &ah);
  if (bl == bh && bl > 0 && a_ok) {
    int64_t ql, qh;
    arith_floordiv(al, bl, &ql);
    arith_floordiv(ah, bl, &qh);
    if (ql == qh) {
      arith_floormod(al, bl, lo);
      arith_floormod(ah, bl, hi);
      return true;
    }
  }
  if (bl > 0) {
    if (a_ok && al >= 0 && ah < bl) {
      *lo = al;
      *hi = ah;
    } else {
      *lo = 0;
      *hi = bh - 1;
    }
    return true;
  }
  if (bh < 0) {
    *lo = bl + 1;
    *hi = 0;
    return true;
  }
  return false;
}

static bool cast_bounds(mlc_simplifier *s, const mlc_expr *e, int64_t *lo, int64_t *hi) {
  int64_t tl, th, vl, vh;
  if (!int_range(e->dtype, &tl, &th)) return false;
  if (e->dtype == MLC_BOOL) {
    *lo = 0;
    *hi = 1;
    return true;
  }
  const mlc_expr *v = e->cast.value;
  if ((is_int(v) || v->dtype == MLC_BOOL) && bounds(s, v, &vl, &vh) && vl >= tl && vh <= th) {
    *lo = vl;
    *hi = vh;
    return true;
  }
  if (e->dtype == MLC_INT64) return false; /* the full int64 range says nothing */
  *lo = tl;
  *hi = th;
  return true;
}

static bool bounds(mlc_simplifier *s, const mlc_expr *e, int64_t *lo, int64_t *hi) {
  int64_t al, ah, bl, bh;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    *lo = *hi = e->int_val;
    return true;
  case MLC_EXPR_FLOAT_IMM:
    return false;
  case MLC_EXPR_VAR: {
    const binding *b = find_binding(s, e->var);
    if (!b) return false;
    *lo = b->lo;
    *hi = b->hi;
    return true;
  }
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL: {
    if (!is_int(e)) return false;
    arith_lin L;
    arith_lin_init(&L);
    lin_add(s, &L, (mlc_expr *)e, 1, false);
    return arith_lin_bounds(s, &L, lo, hi);
  }
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
    return is_int(e) && bin_bounds(s, e, &al, &ah, &bl, &bh) &&
           div_interval(e->kind == MLC_EXPR_FLOORDIV, al, ah, bl, bh, lo, hi);
  case MLC_EXPR_FLOORMOD:
    return is_int(e) && floormod_bounds(s, e, lo, hi);
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    if (!is_int(e) || !bin_bounds(s, e, &al, &ah, &bl, &bh)) return false;
    if (e->kind == MLC_EXPR_MIN) {
      *lo = al < bl ? al : bl;
      *hi = ah < bh ? ah : bh;
    } else {
      *lo = al > bl ? al : bl;
      *hi = ah > bh ? ah : bh;
    }
    return true;
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_NOT:
    *lo = 0;
    *hi = 1;
    return true;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    if (!bounds(s, e->sel.t, &al, &ah) || !bounds(s, e->sel.f, &bl, &bh)) return false;
    *lo = al < bl ? al : bl;
    *hi = ah > bh ? ah : bh;
    return true;
  case MLC_EXPR_LOAD:
    /* Only small types say something; an int32 gather index is unbounded. */
    if (e->dtype != MLC_INT8 && e->dtype != MLC_UINT8 && e->dtype != MLC_BOOL) return false;
    return int_range(e->dtype, lo, hi);
  case MLC_EXPR_CAST:
    return cast_bounds(s, e, lo, hi);
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN:
    return false;
  }
  mlc_unreachable();
}

bool mlc_simplifier_bounds(mlc_simplifier *s, mlc_expr *e, int64_t *lo, int64_t *hi) {
  int64_t l, h;
  if (!bounds(s, e, &l, &h)) return false;
  if (lo) *lo = l;
  if (hi) *hi = h;
  return true;
}

/* Bounds of x - y, with like terms cancelled. */
static bool diff_bounds(mlc_simplifier *s, mlc_expr *x, mlc_expr *y, int64_t *lo, int64_t *hi) {
  if (!is_int(x) || !is_int(y)) return false;
  arith_lin L;
  arith_lin_init(&L);
  lin_add(s, &L, x, 1, false);
  lin_add(s, &L, y, -1, false);
  return arith_lin_bounds(s, &L, lo, hi);
}

/* ---- constant folding -------------------------------------------------- */

static bool fold_int(mlc_expr_kind k, int64_t x, int64_t y, int64_t *r) {
  switch (k) {
  case MLC_EXPR_ADD: return !__builtin_add_overflow(x, y, r);
  case MLC_EXPR_SUB: return !__builtin_sub_overflow(x, y, r);
  case MLC_EXPR_MUL: return !__builtin_mul_overflow(x, y, r);
  case MLC_EXPR_DIV: return truncdiv(x, y, r);
  case MLC_EXPR_FLOORDIV: return arith_floordiv(x, y, r);
  case MLC_EXPR_FLOORMOD: return arith_floormod(x, y, r);
  case MLC_EXPR_MIN: *r = x < y ? x : y; return true;
  case MLC_EXPR_MAX: *r = x > y ? x : y; return true;
  case MLC_EXPR_EQ: *r = x == y; return true;
  case MLC_EXPR_NE: *r = x != y; return true;
  case MLC_EXPR_LT: *r = x < y; return true;
  case MLC_EXPR_LE: *r = x <= y; return true;
  case MLC_EXPR_GT: *r = x > y; return true;
  case MLC_EXPR_GE: *r = x >= y; return true;
  case MLC_EXPR_AND: *r = x && y; return true;
  case MLC_EXPR_OR: *r = x || y; return true;
  default: return false;
  }
}

/* float32 arithmetic exactly as the program would do it. */
static bool fold_f32(mlc_expr_kind k, double xd, double yd, double *r) {
  float x = (float)xd, y = (float)yd, v;
  switch (k) {
  case MLC_EXPR_ADD: v = x + y; break;
  case MLC_EXPR_SUB: v = x - y; break;
  case MLC_EXPR_MUL: v = x * y; break;
  case MLC_EXPR_DIV: v = x / y; break;
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    /* NaN and signed zeros differ between min/max flavours: leave them. */
    if (isnan(x) || isnan(y) || (x == y && signbit(x) != signbit(y))) return false;
    v = (k == MLC_EXPR_MIN) == (x < y) ? x : y;
    break;
  case MLC_EXPR_EQ: *r = x == y; return true;
  case MLC_EXPR_NE: *r = x != y; return true;
  case MLC_EXPR_LT: *r = x < y; return true;
  case MLC_EXPR_LE: *r = x <= y; return true;
  case MLC_EXPR_GT: *r = x > y; return true;
  case MLC_EXPR_GE: *r = x >= y; return true;
  default: return false;
  }
  *r = (double)v;
  return true;
}

/* The folded literal of a binary kind over literal operands, or NULL. */
static mlc_expr *fold_binary(mlc_simplifier *s, mlc_expr_kind k, mlc_dtype t, mlc_expr *x,
                             mlc_expr *y) {
  bool cmp = mlc_expr_kind_is_compare(k);
  if (is_int_imm(x) && is_int_imm(y)) {
    int64_t r;
    if (!fold_int(k, x->int_val, y->int_val, &r) || !fits(t, r)) return NULL;
    return mlc_int_t(s->a, t, r);
  }
  if (is_f32_imm(x) && is_f32_imm(y)) {
    double r;
    if (!fold_f32(k, x->float_val, y->float_val, &r)) return NULL;
    return cmp ? mlc_bool(s->a, r != 0) : mlc_float(s->a, MLC_FLOAT32, r);
  }
  return NULL;
}

static mlc_expr *rebin(mlc_simplifier *s, mlc_expr *e, mlc_expr *x, mlc_expr *y) {
  if (x == e->bin.a && y == e->bin.b) return e;
  return mlc_binary(s->a, e->kind, x, y);
}

/* Simplified operands folded if literal, else rebuilt. */
static mlc_expr *simp_generic_binary(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->bin.a), *y = simp(s, e->bin.b);
  mlc_expr *f = fold_binary(s, e->kind, e->dtype, x, y);
  return f ? f : rebin(s, e, x, y);
}

/* ---- affine expressions ------------------------------------------------ */

/* fuse-then-split leaves floordiv(x, c) * (k*c) + floormod(x, c) * k: fold
 * the pair back into x * k. */
static bool merge_div_mod(mlc_simplifier *s, arith_lin *L) {
  for (int i = 0; i < L->n; i++) {
    arith_term *m = &L->t[i];
    if (m->coeff == 0 || m->atom->kind != MLC_EXPR_FLOORMOD || !is_int_imm(m->atom->bin.b))
      continue;
    int64_t c = m->atom->bin.b->int_val, want;
    if (c <= 0 || __builtin_mul_overflow(m->coeff, c, &want)) continue;
    for (int j = 0; j < L->n; j++) {
      arith_term *d = &L->t[j];
      if (d->coeff != want || d->atom->kind != MLC_EXPR_FLOORDIV ||
          !is_int_imm(d->atom->bin.b) || d->atom->bin.b->int_val != c ||
          !arith_expr_equal(d->atom->bin.a, m->atom->bin.a))
        continue;
      int64_t k = m->coeff;
      mlc_expr *x = m->atom->bin.a;
      m->coeff = 0;
      d->coeff = 0;
      lin_add(s, L, x, k, false);
      return true;
    }
  }
  return false;
}

/* L := the canonical form of an affine e: its terms simplified, the
 * div/mod pairs of a fuse-then-split merged back. */
static void affine_form(mlc_simplifier *s, arith_lin *L, mlc_expr *e) {
  lin_add(s, L, e, 1, true);
  for (int guard = 0; guard < 16 && !L->bad && merge_div_mod(s, L); guard++) {
  }
}

bool arith_lin_simplified(mlc_simplifier *s, arith_lin *L, mlc_expr *e) {
  MLC_ASSERT(L->n == 0 && L->c == 0 && !L->bad);
  if (!is_int(e)) return false;
  if (!is_affine_kind(e)) {
    lin_add(s, L, simp(s, e), 1, false);
    return !L->bad;
  }
  affine_form(s, L, e);
  return lin_fits(L, e->dtype);
}

static mlc_expr *simp_affine(mlc_simplifier *s, mlc_expr *e) {
  arith_lin L;
  arith_lin_init(&L);
  affine_form(s, &L, e);
  mlc_expr *r = arith_lin_build(s->a, &L, e->dtype);
  if (r) return r;
  return simp_generic_binary(s, e); /* overflow: keep the structure */
}

/* ---- floordiv / floormod by positive constants -------------------------- */

static mlc_expr *mk_bin(mlc_simplifier *s, mlc_expr *orig, mlc_expr_kind k, mlc_expr *x,
                        int64_t c) {
  if (orig && orig->kind == k && orig->bin.a == x && is_int_imm(orig->bin.b) &&
      orig->bin.b->int_val == c)
    return orig;
  return mlc_binary(s->a, k, x, mlc_int_t(s->a, x->dtype, c));
}

/* Split the form of x into terms divisible by c (Q, divided) and the rest
 * (R, with the whole constant). Returns whether Q has a term. */
static bool split_divisible(mlc_simplifier *s, const arith_lin *X, int64_t c, arith_lin *Q,
                            arith_lin *R) {
  bool any = false;
  R->c = X->c;
  for (int i = 0; i < X->n; i++) {
    int64_t k = X->t[i].coeff;
    if (k == 0) continue;
    if (k % c == 0) {
      arith_lin_add_term(s, Q, X->t[i].atom, k / c);
      any = true;
    } else {
      arith_lin_add_term(s, R, X->t[i].atom, k);
    }
  }
  return any;
}

/* Requires x simplified and c > 0. `orig` (may be NULL) is reused when
 * nothing changes. */
static mlc_expr *floordiv_const(mlc_simplifier *s, mlc_expr *orig, mlc_expr *x, int64_t c) {
  int64_t v, c2;
  if (c == 1) return x;
  if (is_int_imm(x) && arith_floordiv(x->int_val, c, &v)) return mlc_int_t(s->a, x->dtype, v);
  if (x->kind == MLC_EXPR_FLOORDIV && is_int_imm(x->bin.b) && x->bin.b->int_val > 0 &&
      !__builtin_mul_overflow(x->bin.b->int_val, c, &c2))
    return floordiv_const(s, NULL, x->bin.a, c2);
  arith_lin X, Q, R;
  arith_lin_init(&X);
  arith_lin_init(&Q);
  arith_lin_init(&R);
  lin_add(s, &X, x, 1, false);
  if (X.bad) return mk_bin(s, orig, MLC_EXPR_FLOORDIV, x, c);
  bool has_q = split_divisible(s, &X, c, &Q, &R);
  int64_t lo, hi, ql = 0, qh = 1;
  if (!R.bad && arith_lin_bounds(s, &R, &lo, &hi)) {
    arith_floordiv(lo, c, &ql);
    arith_floordiv(hi, c, &qh);
    if (ql == qh) {
      Q.c = ql;
      mlc_expr *r = arith_lin_build(s->a, &Q, x->dtype);
      if (r) return r;
    }
  }
  if (has_q && !R.bad) {
    mlc_expr *rest = arith_lin_build(s->a, &R, x->dtype);
    if (rest) {
      arith_lin_add_term(s, &Q, mk_bin(s, NULL, MLC_EXPR_FLOORDIV, rest, c), 1);
      mlc_expr *r = arith_lin_build(s->a, &Q, x->dtype);
      if (r) return r;
    }
  }
  return mk_bin(s, orig, MLC_EXPR_FLOORDIV, x, c);
}

static mlc_expr *floormod_const(mlc_simplifier *s, mlc_expr *orig, mlc_expr *x, int64_t c) {
  int64_t v;
  if (c == 1) return mlc_int_t(s->a, x->dtype, 0);
  if (is_int_imm(x) && arith_floormod(x->int_val, c, &v)) return mlc_int_t(s->a, x->dtype, v);
  if (x->kind == MLC_EXPR_FLOORMOD && is_int_imm(x->bin.b) && x->bin.b->int_val > 0 &&
      x->bin.b->int_val % c == 0)
    return floormod_const(s, NULL, x->bin.a, c);
  arith_lin X, Q, R;
  arith_lin_init(&X);
  arith_lin_init(&Q);
  arith_lin_init(&R);
  lin_add(s, &X, x, 1, false);
  if (X.bad) return mk_bin(s, orig, MLC_EXPR_FLOORMOD, x, c);
  bool dropped = split_divisible(s, &X, c, &Q, &R);
  int64_t lo, hi, ql = 0, qh = 1, shift;
  if (!R.bad && arith_lin_bounds(s, &R, &lo, &hi)) {
    arith_floordiv(lo, c, &ql);
    arith_floordiv(hi, c, &qh);
    if (ql == qh && !__builtin_mul_overflow(ql, c, &shift) &&
        !__builtin_sub_overflow(R.c, shift, &R.c)) {
      mlc_expr *r = arith_lin_build(s->a, &R, x->dtype);
      if (r) return r;
      R.c += shift;
    }
  }
  if (dropped && !R.bad) {
    mlc_expr *rest = arith_lin_build(s->a, &R, x->dtype);
    if (rest) return mk_bin(s, NULL, MLC_EXPR_FLOORMOD, rest, c);
  }
  return mk_bin(s, orig, MLC_EXPR_FLOORMOD, x, c);
}

static mlc_expr *simp_divmod(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->bin.a), *y = simp(s, e->bin.b);
  mlc_expr *f = fold_binary(s, e->kind, e->dtype, x, y);
  if (f) return f;
  if (!is_int(e) || !is_int_imm(y) || y->int_val <= 0) return rebin(s, e, x, y);
  mlc_expr *orig = x == e->bin.a ? e : NULL;
  switch (e->kind) {
  case MLC_EXPR_FLOORDIV:
    return floordiv_const(s, orig, x, y->int_val);
  case MLC_EXPR_FLOORMOD:
    return floormod_const(s, orig, x, y->int_val);
  case MLC_EXPR_DIV: {
    int64_t lo, hi;
    /* Truncation equals flooring for a non-negative numerator. */
    if (y->int_val == 1) return x;
    if (bounds(s, x, &lo, &hi) && lo >= 0) {
      mlc_expr *r = floordiv_const(s, NULL, x, y->int_val);
      if (r->kind != MLC_EXPR_FLOORDIV) return r;
    }
    return rebin(s, e, x, y);
  }
  default:
    mlc_unreachable();
  }
}

/* ---- min/max, comparisons, logic ---------------------------------------- */

static mlc_expr *simp_minmax(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->bin.a), *y = simp(s, e->bin.b);
  mlc_expr *f = fold_binary(s, e->kind, e->dtype, x, y);
  if (f) return f;
  int64_t lo, hi;
  if (diff_bounds(s, x, y, &lo, &hi)) {
    bool is_min = e->kind == MLC_EXPR_MIN;
    if (hi <= 0) return is_min ? x : y; /* x <= y */
    if (lo >= 0) return is_min ? y : x; /* x >= y */
  }
  return rebin(s, e, x, y);
}

/* -1: unknown; else the truth of `x k y` given bounds of x - y. */
static int decide_compare(mlc_expr_kind k, int64_t lo, int64_t hi) {
  switch (k) {
  case MLC_EXPR_EQ: return lo == 0 && hi == 0 ? 1 : (lo > 0 || hi < 0) ? 0 : -1;
  case MLC_EXPR_NE: return lo == 0 && hi == 0 ? 0 : (lo > 0 || hi < 0) ? 1 : -1;
  case MLC_EXPR_LT: return hi < 0 ? 1 : lo >= 0 ? 0 : -1;
  case MLC_EXPR_LE: return hi <= 0 ? 1 : lo > 0 ? 0 : -1;
  case MLC_EXPR_GT: return lo > 0 ? 1 : hi <= 0 ? 0 : -1;
  case MLC_EXPR_GE: return lo >= 0 ? 1 : hi < 0 ? 0 : -1;
  default: return -1;
  }
}

static mlc_expr *simp_compare(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->bin.a), *y = simp(s, e->bin.b);
  mlc_expr *f = fold_binary(s, e->kind, e->dtype, x, y);
  if (f) return f;
  int64_t lo, hi;
  if (diff_bounds(s, x, y, &lo, &hi)) {
    int d = decide_compare(e->kind, lo, hi);
    if (d >= 0) return mlc_bool(s->a, d);
  }
  return rebin(s, e, x, y);
}

static mlc_expr *simp_logic(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->bin.a), *y = simp(s, e->bin.b);
  mlc_expr *f = fold_binary(s, e->kind, e->dtype, x, y);
  if (f) return f;
  /* The absorbing value decides; the neutral one drops out. Expressions
   * are pure, so an operand may be dropped. */
  bool is_and = e->kind == MLC_EXPR_AND;
  mlc_expr *sides[2] = {x, y};
  for (int i = 0; i < 2; i++) {
    if (!is_int_imm(sides[i])) continue;
    bool v = sides[i]->int_val != 0;
    if (v != is_and) return mlc_bool(s->a, v);
    return sides[1 - i];
  }
  return rebin(s, e, x, y);
}

static mlc_expr *simp_not(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->bin.a);
  if (is_int_imm(x)) return mlc_bool(s->a, x->int_val == 0);
  if (x->kind == MLC_EXPR_NOT) return x->bin.a;
  return x == e->bin.a ? e : mlc_not(s->a, x);
}

static mlc_expr *simp_select(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *c = simp(s, e->sel.cond);
  if (is_int_imm(c)) return simp(s, c->int_val ? e->sel.t : e->sel.f);
  mlc_expr *t = simp(s, e->sel.t), *f = simp(s, e->sel.f);
  if (c == e->sel.cond && t == e->sel.t && f == e->sel.f) return e;
  return e->kind == MLC_EXPR_SELECT ? mlc_select(s->a, c, t, f) : mlc_if_then_else(s->a, c, t, f);
}

static mlc_expr *simp_load(mlc_simplifier *s, mlc_expr *e) {
  int n = e->load.buf->ndim;
  mlc_expr *small[8], **idx = n <= 8 ? small : MLC_NEW_ARRAY(s->a, mlc_expr *, n);
  bool changed = false;
  for (int i = 0; i < n; i++) {
    idx[i] = simp(s, e->load.indices[i]);
    changed |= idx[i] != e->load.indices[i];
  }
  return changed ? mlc_load(s->a, e->load.buf, idx) : e;
}

/* A literal converted as the program would convert it, or NULL. */
static mlc_expr *fold_cast(mlc_simplifier *s, mlc_dtype t, mlc_expr *x) {
  if (t == MLC_BOOL) {
    if (is_int_imm(x)) return mlc_bool(s->a, x->int_val != 0);
    if (is_f32_imm(x)) return mlc_bool(s->a, x->float_val != 0);
    return NULL;
  }
  if (mlc_dtype_is_int(t)) {
    if (is_int_imm(x)) {
      /* Integer narrowing wraps (two's complement), as the target does. */
      uint64_t u = (uint64_t)x->int_val;
      int64_t v = t == MLC_INT8    ? (int64_t)(int8_t)(uint8_t)u
                  : t == MLC_UINT8 ? (int64_t)(uint8_t)u
                  : t == MLC_INT32 ? (int64_t)(int32_t)(uint32_t)u
                                   : (int64_t)u;
      return mlc_int_t(s->a, t, v);
    }
    if (is_f32_imm(x)) {
      double d = trunc(x->float_val);
      int64_t lo, hi;
      int_range(t, &lo, &hi);
      /* (double)INT64_MAX rounds up to 2^63: compare against hi + 1. */
      if (isnan(d) || d < (double)lo || d >= (double)hi + 1.0) return NULL; /* poison in LLVM */
      return mlc_int_t(s->a, t, (int64_t)d);
    }
    return NULL;
  }
  if (t == MLC_FLOAT32) {
    if (is_int_imm(x)) return mlc_float(s->a, t, (double)(float)x->int_val);
    if (is_f32_imm(x)) return x;
  }
  return NULL;
}

static mlc_expr *simp_cast(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr *x = simp(s, e->cast.value);
  if (x->dtype == e->dtype) return x;
  mlc_expr *f = fold_cast(s, e->dtype, x);
  if (f) return f;
  return x == e->cast.value ? e : mlc_cast(s->a, e->dtype, x);
}

static mlc_expr *fold_call(mlc_simplifier *s, mlc_intrin op, mlc_expr **args) {
  mlc_expr *x = args[0];
  if (op == MLC_INTRIN_ABS && is_int_imm(x) && x->int_val != INT64_MIN &&
      fits(x->dtype, x->int_val < 0 ? -x->int_val : x->int_val))
    return mlc_int_t(s->a, x->dtype, x->int_val < 0 ? -x->int_val : x->int_val);
  if (!is_f32_imm(x)) return NULL;
  float v = (float)x->float_val;
  /* Only the exact operations: libm's exp/log may differ from codegen. */
  switch (op) {
  case MLC_INTRIN_ABS: return mlc_float(s->a, MLC_FLOAT32, fabsf(v));
  case MLC_INTRIN_FLOOR: return mlc_float(s->a, MLC_FLOAT32, floorf(v));
  case MLC_INTRIN_CEIL: return mlc_float(s->a, MLC_FLOAT32, ceilf(v));
  case MLC_INTRIN_ROUND: return mlc_float(s->a, MLC_FLOAT32, nearbyintf(v));
  default: return NULL;
  }
}

static mlc_expr *simp_call(mlc_simplifier *s, mlc_expr *e) {
  int n = mlc_intrin_nargs(e->call.op);
  mlc_expr *args[4];
  MLC_ASSERT(n <= 4);
  bool changed = false;
  for (int i = 0; i < n; i++) {
    args[i] = simp(s, e->call.args[i]);
    changed |= args[i] != e->call.args[i];
  }
  mlc_expr *f = fold_call(s, e->call.op, args);
  if (f) return f;
  return changed ? mlc_call(s->a, e->call.op, args) : e;
}

/* The arguments simplified; the call itself stays. */
static mlc_expr *simp_extern(mlc_simplifier *s, mlc_expr *e) {
  mlc_expr **kids = NULL;
  for (int i = 0; i < e->ext.n_kids; i++) {
    mlc_expr *k = simp(s, e->ext.kids[i]);
    if (k == e->ext.kids[i]) continue;
    if (!kids) kids = mlc_arena_memdup(s->a, e->ext.kids, sizeof(mlc_expr *) * (size_t)e->ext.n_kids);
    kids[i] = k;
  }
  if (!kids) return e;
  mlc_expr *n = mlc_arena_memdup(s->a, e, sizeof *e);
  n->ext.kids = kids;
  return n;
}

static mlc_expr *simp(mlc_simplifier *s, mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
    return e;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
    return is_int(e) ? simp_affine(s, e) : simp_generic_binary(s, e);
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
    return simp_divmod(s, e);
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    return simp_minmax(s, e);
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
    return simp_compare(s, e);
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
    return simp_logic(s, e);
  case MLC_EXPR_NOT:
    return simp_not(s, e);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return simp_select(s, e);
  case MLC_EXPR_LOAD:
    return simp_load(s, e);
  case MLC_EXPR_CAST:
    return simp_cast(s, e);
  case MLC_EXPR_CALL:
    return simp_call(s, e);
  case MLC_EXPR_CALL_EXTERN:
    return simp_extern(s, e);
  }
  mlc_unreachable();
}

mlc_expr *mlc_simplify(mlc_simplifier *s, mlc_expr *e) { return simp(s, e); }

mlc_expr *mlc_simplify_expr(mlc_arena *a, mlc_expr *e) {
  mlc_simplifier s = {.a = a};
  return simp(&s, e);
}

bool mlc_expr_const_diff(mlc_arena *a, mlc_expr *x, mlc_expr *y, int64_t *diff) {
  if (!is_int(x) || !is_int(y)) return false;
  if (x == y || arith_expr_equal(x, y)) { /* most often asked of equal ones */
    if (diff) *diff = 0;
    return true;
  }
  mlc_simplifier s = {.a = a};
  for (int pass = 0; pass < 2; pass++) {
    arith_lin L;
    arith_lin_init(&L);
    lin_add(&s, &L, x, 1, pass == 1);
    lin_add(&s, &L, y, -1, pass == 1);
    if (!L.bad && arith_lin_nterms(&L) == 0) {
      if (diff) *diff = L.c;
      return true;
    }
  }
  return false;
}
