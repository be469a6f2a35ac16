/* Region analysis: which part of each buffer a statement or block touches.
 *
 * Every access index is first rewritten in terms of the vars that stay
 * symbolic: nested block iter vars are replaced by their binding values,
 * and loops inside the analysed statement are "relaxed" (bound to their
 * ranges in a simplifier). The simplified index is then split into its
 * linear form's symbolic part S (terms free of relaxed vars) and relaxed
 * part P: the access covers S + [lo(P), hi(P)]. Accesses to one buffer
 * are united per dimension: when the symbolic parts differ by a constant,
 * the union is again S + [lo, hi] (A[vi], A[vi + 2] -> vi + [0, 2]);
 * otherwise it becomes [min(...), max(...)] expressions, as TVM's interval
 * union does. What cannot be bounded covers the whole dimension.
 *
 * Relaxed atoms that are floordiv/floormod by a positive constant are
 * evaluated as integer sets, as TVM's EvalSet does: floordiv(x, c) of
 * x in [a, b] is [floordiv(a, c), floordiv(b, c)], exact (base / c plus
 * constants) when every coefficient of x's symbolic part is a multiple of
 * c; floormod(x, c) is [floormod(a, c), floormod(b, c)] when the range
 * cannot cross a multiple of c, else [0, c - 1]. A symbolic interval keeps
 * a constant bound on its extent (`ext_max`), so that compute_at can make
 * a loop of constant extent for it (a tile of a repeat op B[i] = A[i // 4]
 * needs one or two elements of A, not the whole buffer).
 */
#include "ir/arith_internal.h"

#include <string.h>

typedef enum iv_kind {
  IV_EXACT, /* base + [lo, hi] */
  IV_SYM,   /* [min_e, max_e] */
  IV_FULL,  /* the whole dimension */
} iv_kind;

typedef struct dim_iv {
  iv_kind kind;
  mlc_dtype t;     /* the index dtype */
  mlc_expr *base;  /* EXACT: symbolic part, NULL for 0 */
  int64_t lo, hi;  /* EXACT: inclusive offsets from base */
  mlc_expr *min_e; /* SYM: inclusive bounds */
  mlc_expr *max_e;
  int64_t ext_max; /* SYM: a bound on max_e - min_e + 1; 0 if unknown */
} dim_iv;

typedef struct access {
  mlc_buffer *buf;
  dim_iv *dims; /* buf->ndim */
} access;

typedef struct walker {
  mlc_arena *a;
  mlc_simplifier *s; /* ranges of the relaxed vars */
  /* Block iter vars (and loop vars with a symbolic min) -> what they stand
   * for, innermost last. */
  MLC_VEC(mlc_var *) env_vars;
  MLC_VEC(mlc_expr *) env_vals;
  MLC_VEC(mlc_var *) unbounded; /* relaxed vars whose range is unknown */
  MLC_VEC(mlc_buffer *) local;  /* allocated inside: not visible outside */
  MLC_VEC(access) reads;
  MLC_VEC(access) writes;
  bool each_access; /* one region per access instead of one per buffer */
} walker;

static void walker_init(walker *w, mlc_arena *a) {
  memset(w, 0, sizeof *w);
  w->a = a;
  w->s = mlc_simplifier_new(a);
}

/* ---- one index -------------------------------------------------------- */

static dim_iv iv_full(mlc_dtype t) {
  return (dim_iv){.kind = IV_FULL, .t = t};
}

static bool uses_any(const mlc_expr *e, mlc_var **vars, int n) {
  for (int i = 0; i < n; i++)
    if (mlc_expr_uses_var(e, vars[i])) return true;
  return false;
}

static dim_iv iv_const(mlc_dtype t, int64_t lo, int64_t hi) {
  return (dim_iv){.kind = IV_EXACT, .t = t, .lo = lo, .hi = hi};
}

static int64_t gcd64(int64_t x, int64_t y) {
  if (x < 0) x = -x;
  if (y < 0) y = -y;
  while (y) {
    int64_t r = x % y;
    x = y;
    y = r;
  }
  return x;
}

/* The gcd of the coefficients of base's linear form: base is always a
 * multiple of it. 0 if the form cannot be taken. */
static int64_t base_gcd(walker *w, mlc_expr *base) {
  arith_lin L;
  arith_lin_init(&L);
  arith_lin_add(w->s, &L, base, 1);
  if (L.bad) return 0;
  int64_t g = L.c;
  for (int i = 0; i < L.n; i++) g = gcd64(g, L.t[i].coeff);
  return g;
}

/* base / c for a base whose coefficients are multiples of c. */
static mlc_expr *base_div(walker *w, mlc_expr *base, int64_t c, mlc_dtype t) {
  arith_lin L, Q;
  arith_lin_init(&L);
  arith_lin_init(&Q);
  arith_lin_add(w->s, &L, base, 1);
  for (int i = 0; i < L.n; i++)
    if (L.t[i].coeff) arith_lin_add_term(w->s, &Q, L.t[i].atom, L.t[i].coeff / c);
  Q.c = L.c / c;
  return arith_lin_build(w->a, &Q, t);
}

static mlc_expr *iv_lo_expr(walker *w, const dim_iv *x);
static mlc_expr *iv_hi_expr(walker *w, const dim_iv *x);

/* A symbolic interval; exact when its bounds differ by a constant. */
static dim_iv iv_sym(walker *w, mlc_dtype t, mlc_expr *mn, mlc_expr *mx, int64_t ext_max) {
  int64_t d;
  mn = mlc_simplify(w->s, mn);
  mx = mlc_simplify(w->s, mx);
  if (mlc_expr_const_diff(w->a, mx, mn, &d) && d >= 0) {
    int64_t c;
    if (mlc_expr_is_const_int(mn, &c) && !__builtin_add_overflow(c, d, &d)) return iv_const(t, c, d);
    return (dim_iv){.kind = IV_EXACT, .t = t, .base = mn, .lo = 0, .hi = d};
  }
  return (dim_iv){.kind = IV_SYM, .t = t, .min_e = mn, .max_e = mx, .ext_max = ext_max};
}

/* The most distinct values floordiv(r + t, c) takes for t in [lo, hi],
 * over the residues r of a base that is a multiple of g. */
static int64_t div_count(int64_t g, int64_t c, int64_t lo, int64_t hi) {
  int64_t step = g ? gcd64(g, c) : 1, best = 0;
  if (c > 4096 || hi - lo > INT64_MAX / 4) {
    int64_t q;
    arith_floordiv(hi - lo - 1, c, &q);
    return q + 2;
  }
  for (int64_t r = 0; r < c; r += step) {
    int64_t a, b;
    if (!arith_floordiv(r + lo, c, &a) || !arith_floordiv(r + hi, c, &b)) return 0;
    if (b - a + 1 > best) best = b - a + 1;
  }
  return best;
}

static dim_iv iv_floordiv(walker *w, const dim_iv *x, int64_t c) {
  dim_iv full = iv_full(x->t);
  int64_t a, b;
  switch (x->kind) {
  case IV_FULL: return full;
  case IV_EXACT: {
    if (!arith_floordiv(x->lo, c, &a) || !arith_floordiv(x->hi, c, &b)) return full;
    if (!x->base) return iv_const(x->t, a, b);
    int64_t g = base_gcd(w, x->base);
    if (g && g % c == 0) {
      mlc_expr *q = base_div(w, x->base, c, x->t);
      if (q) return (dim_iv){.kind = IV_EXACT, .t = x->t, .base = q, .lo = a, .hi = b};
    }
    /* base is a multiple of h = gcd(g, c), so is base mod c: offsets
     * below the next multiple of h do not change the quotient
     * (floordiv(2 * i + 1, 4) == floordiv(2 * i, 4)). */
    int64_t h = g ? gcd64(g, c) : 1, ql, qh;
    mlc_expr *cc = mlc_int_t(w->a, x->t, c);
    if (!arith_floordiv(x->lo, h, &ql) || !arith_floordiv(x->hi, h, &qh)) return full;
    dim_iv y = *x;
    y.lo = ql * h;
    y.hi = qh * h;
    return iv_sym(w, x->t, mlc_binary(w->a, MLC_EXPR_FLOORDIV, iv_lo_expr(w, &y), cc),
                  mlc_binary(w->a, MLC_EXPR_FLOORDIV, iv_hi_expr(w, &y), cc),
                  div_count(g, c, x->lo, x->hi));
  }
  case IV_SYM: {
    mlc_expr *cc = mlc_int_t(w->a, x->t, c);
    int64_t q = 0;
    if (x->ext_max > 0) arith_floordiv(x->ext_max - 2, c, &q);
    return iv_sym(w, x->t, mlc_binary(w->a, MLC_EXPR_FLOORDIV, x->min_e, cc),
                  mlc_binary(w->a, MLC_EXPR_FLOORDIV, x->max_e, cc), x->ext_max > 0 ? q + 2 : 0);
  }
  }
  mlc_unreachable();
}

static dim_iv iv_floormod(walker *w, const dim_iv *x, int64_t c) {
  dim_iv whole = iv_const(x->t, 0, c - 1);
  if (x->kind != IV_EXACT) return whole;
  int64_t g = x->base ? base_gcd(w, x->base) : 0;
  if (x->base && !(g && g % c == 0)) return whole;
  int64_t qa, qb, a, b;
  if (!arith_floordiv(x->lo, c, &qa) || !arith_floordiv(x->hi, c, &qb) || qa != qb) return whole;
  arith_floormod(x->lo, c, &a);
  arith_floormod(x->hi, c, &b);
  return iv_const(x->t, a, b);
}

/* x + k * y. */
static dim_iv iv_add_scaled(walker *w, const dim_iv *x, const dim_iv *y, int64_t k) {
  mlc_dtype t = x->t;
  if (x->kind == IV_FULL || y->kind == IV_FULL || k == 0) return k == 0 ? *x : iv_full(t);
  int64_t yl, yh, s;
  if (y->kind == IV_EXACT && x->kind == IV_EXACT && !__builtin_mul_overflow(y->lo, k, &yl) &&
      !__builtin_mul_overflow(y->hi, k, &yh)) {
    if (k < 0) s = yl, yl = yh, yh = s;
    dim_iv r = {.kind = IV_EXACT, .t = t, .base = x->base};
    if (__builtin_add_overflow(x->lo, yl, &r.lo) || __builtin_add_overflow(x->hi, yh, &r.hi))
      return iv_full(t);
    if (y->base) {
      mlc_expr *yb = mlc_mul(w->a, y->base, mlc_int_t(w->a, t, k));
      r.base = mlc_simplify(w->s, x->base ? mlc_add(w->a, x->base, yb) : yb);
    }
    return r;
  }
  mlc_expr *kk = mlc_int_t(w->a, t, k);
  mlc_expr *ylo = mlc_mul(w->a, iv_lo_expr(w, y), kk), *yhi = mlc_mul(w->a, iv_hi_expr(w, y), kk);
  if (k < 0) {
    mlc_expr *tmp = ylo;
    ylo = yhi;
    yhi = tmp;
  }
  int64_t ex = x->kind == IV_SYM ? x->ext_max : x->hi - x->lo + 1;
  int64_t ey = y->kind == IV_SYM ? y->ext_max : y->hi - y->lo + 1, e = 0;
  if (ex > 0 && ey > 0 && !__builtin_mul_overflow(ey - 1, k < 0 ? -k : k, &e) &&
      !__builtin_add_overflow(e, ex, &e)) {
  } else {
    e = 0;
  }
  return iv_sym(w, t, mlc_add(w->a, iv_lo_expr(w, x), ylo), mlc_add(w->a, iv_hi_expr(w, x), yhi), e);
}

static dim_iv analyze_simplified(walker *w, mlc_expr *e);

/* The set one relaxed atom of a linear form covers. */
static dim_iv atom_iv(walker *w, mlc_expr *atom, mlc_dtype t) {
  int64_t lo, hi, c;
  if ((atom->kind == MLC_EXPR_FLOORDIV || atom->kind == MLC_EXPR_FLOORMOD) &&
      mlc_expr_is_const_int(atom->bin.b, &c) && c > 0) {
    dim_iv x = analyze_simplified(w, atom->bin.a);
    x.t = t;
    return atom->kind == MLC_EXPR_FLOORDIV ? iv_floordiv(w, &x, c) : iv_floormod(w, &x, c);
  }
  if (mlc_simplifier_bounds(w->s, atom, &lo, &hi)) return iv_const(t, lo, hi);
  return iv_full(t);
}

/* The interval of an index with linear form L (its simplified form's) in
 * dtype t while the relaxed vars range; FULL where the form cannot tell. */
static dim_iv analyze_form(walker *w, const arith_lin *L, mlc_dtype t) {
  arith_lin S;
  arith_lin_init(&S);
  for (int i = 0; i < L->n && !L->bad; i++)
    if (L->t[i].coeff != 0 && !arith_uses_bound_var(w->s, L->t[i].atom))
      arith_lin_add_term(w->s, &S, L->t[i].atom, L->t[i].coeff);
  if (L->bad || S.bad) return iv_full(t);
  dim_iv r = iv_const(t, L->c, L->c);
  if (arith_lin_nterms(&S) > 0 && !(r.base = arith_lin_build(w->a, &S, t))) return iv_full(t);
  for (int i = 0; i < L->n && r.kind != IV_FULL; i++) {
    if (L->t[i].coeff == 0 || !arith_uses_bound_var(w->s, L->t[i].atom)) continue;
    dim_iv a = atom_iv(w, L->t[i].atom, t);
    r = iv_add_scaled(w, &r, &a, L->t[i].coeff);
  }
  return r;
}

/* The interval an index (already in terms of symbolic and relaxed vars and
 * simplified) covers while the relaxed vars range. */
static dim_iv analyze_simplified(walker *w, mlc_expr *e) {
  mlc_dtype t = mlc_dtype_is_int(e->dtype) ? e->dtype : MLC_INT32;
  if (!mlc_dtype_is_int(e->dtype) || uses_any(e, w->unbounded.data, w->unbounded.len))
    return iv_full(t);
  arith_lin L;
  arith_lin_init(&L);
  arith_lin_add(w->s, &L, e, 1);
  dim_iv r = analyze_form(w, &L, t);
  if (r.kind != IV_FULL) return r;
  /* A relaxed var inside a non-affine atom together with a symbolic one:
   * only a bound of the whole index can help. */
  int64_t lo, hi;
  if (mlc_simplifier_bounds(w->s, e, &lo, &hi)) return iv_const(t, lo, hi);
  return iv_full(t);
}

/* analyze_simplified(w, mlc_simplify(w->s, e)), from the simplified form's
 * linear form: the expression is built only where the form cannot tell
 * (rarely). */
static dim_iv analyze_unsimplified(walker *w, mlc_expr *e) {
  arith_lin L;
  arith_lin_init(&L);
  if (w->unbounded.len || !arith_lin_simplified(w->s, &L, e))
    return analyze_simplified(w, mlc_simplify(w->s, e));
  mlc_dtype t = e->dtype;
  dim_iv r = analyze_form(w, &L, t);
  if (r.kind != IV_FULL) return r;
  int64_t lo, hi;
  if (mlc_simplifier_bounds(w->s, mlc_simplify(w->s, e), &lo, &hi)) return iv_const(t, lo, hi);
  return iv_full(t);
}

static mlc_expr *in_env(walker *w, mlc_expr *e) {
  if (w->env_vars.len == 0) return e;
  return mlc_expr_subst(w->a, e, w->env_vars.len, w->env_vars.data, w->env_vals.data);
}

static dim_iv analyze_index(walker *w, mlc_expr *e) { return analyze_unsimplified(w, in_env(w, e)); }

/* ---- unions ------------------------------------------------------------ */

/* base + k, simplified (base is: plus 0 it is itself). */
static mlc_expr *base_plus(walker *w, const dim_iv *x, int64_t k) {
  if (!x->base) return mlc_int_t(w->a, x->t, k);
  if (k == 0) return x->base;
  return mlc_simplify(w->s, mlc_add(w->a, x->base, mlc_int_t(w->a, x->t, k)));
}

static mlc_expr *iv_lo_expr(walker *w, const dim_iv *x) {
  return x->kind == IV_SYM ? x->min_e : base_plus(w, x, x->lo);
}

static mlc_expr *iv_hi_expr(walker *w, const dim_iv *x) {
  return x->kind == IV_SYM ? x->max_e : base_plus(w, x, x->hi);
}

/* x := hull(x, y). */
static void iv_union(walker *w, dim_iv *x, const dim_iv *y) {
  if (x->kind == IV_FULL) return;
  if (y->kind == IV_FULL || x->t != y->t) {
    *x = iv_full(x->t);
    return;
  }
  if (x->kind == IV_EXACT && y->kind == IV_EXACT) {
    int64_t d = 0, ylo, yhi;
    bool same = !x->base && !y->base;
    if (!same && x->base && y->base) same = mlc_expr_const_diff(w->a, y->base, x->base, &d);
    if (same && !__builtin_add_overflow(y->lo, d, &ylo) &&
        !__builtin_add_overflow(y->hi, d, &yhi)) {
      if (ylo < x->lo) x->lo = ylo;
      if (yhi > x->hi) x->hi = yhi;
      return;
    }
  }
  /* Bounds that differ by constants (floordiv sets of neighbouring
   * accesses): the hull stays a plain interval with a known extent. */
  mlc_expr *xl = iv_lo_expr(w, x), *xh = iv_hi_expr(w, x), *yl = iv_lo_expr(w, y),
           *yh = iv_hi_expr(w, y);
  int64_t dl, dh, ext = x->kind == IV_SYM ? x->ext_max : x->hi - x->lo + 1;
  if (mlc_expr_const_diff(w->a, yl, xl, &dl) && mlc_expr_const_diff(w->a, yh, xh, &dh)) {
    int64_t grow = (dl < 0 ? -dl : 0) + (dh > 0 ? dh : 0);
    if (ext <= 0 || __builtin_add_overflow(ext, grow, &ext)) ext = 0;
    *x = iv_sym(w, x->t, dl < 0 ? yl : xl, dh > 0 ? yh : xh, ext);
    return;
  }
  mlc_expr *mn = mlc_binary(w->a, MLC_EXPR_MIN, xl, yl);
  mlc_expr *mx = mlc_binary(w->a, MLC_EXPR_MAX, xh, yh);
  x->kind = IV_SYM;
  x->min_e = mlc_simplify(w->s, mn);
  x->max_e = mlc_simplify(w->s, mx);
  x->ext_max = 0;
  x->base = NULL;
}

static mlc_range iv_range(walker *w, const dim_iv *x, int64_t dim_extent) {
  int64_t ext;
  switch (x->kind) {
  case IV_EXACT:
    if (!__builtin_sub_overflow(x->hi, x->lo, &ext) && ext < INT64_MAX)
      return (mlc_range){iv_lo_expr(w, x), mlc_int_t(w->a, x->t, ext + 1)};
    break;
  case IV_SYM: {
    mlc_expr *e = mlc_add(w->a, mlc_sub(w->a, x->max_e, x->min_e), mlc_int_t(w->a, x->t, 1));
    return (mlc_range){x->min_e, mlc_simplify(w->s, e)};
  }
  case IV_FULL:
    break;
  }
  return (mlc_range){mlc_int_t(w->a, x->t, 0), mlc_int_t(w->a, x->t, dim_extent)};
}

/* ---- collecting accesses ------------------------------------------------ */

static void record_dims(walker *w, bool is_write, mlc_buffer *buf, dim_iv *dims) {
  int nd = buf->ndim;
  access *acc = is_write ? w->writes.data : w->reads.data;
  int n = is_write ? w->writes.len : w->reads.len;
  for (int i = 0; i < n && !w->each_access; i++)
    if (acc[i].buf == buf) {
      for (int d = 0; d < nd; d++) iv_union(w, &acc[i].dims[d], &dims[d]);
      return;
    }
  access x = {buf, dims};
  if (is_write) MLC_VEC_APUSH(w->a, w->writes, x);
  else MLC_VEC_APUSH(w->a, w->reads, x);
}

static void record(walker *w, bool is_write, mlc_buffer *buf, mlc_expr **indices) {
  int nd = buf->ndim;
  dim_iv *dims = MLC_NEW_ARRAY(w->a, dim_iv, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) dims[d] = analyze_index(w, indices[d]);
  record_dims(w, is_write, buf, dims);
}

/* A T.access_ptr argument: the external function may touch its whole
 * region, read or written as its access mask says. */
static void record_ptr(walker *w, const mlc_expr *e, int arg) {
  mlc_region r = mlc_xarg_region(w->a, e, arg);
  int nd = r.buf->ndim;
  dim_iv *dims = MLC_NEW_ARRAY(w->a, dim_iv, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) {
    mlc_range rg = r.ranges[d];
    dims[d] = analyze_index(w, rg.min);
    mlc_expr *last = mlc_sub(w->a, mlc_add(w->a, rg.min, rg.extent), mlc_int_t(w->a, rg.min->dtype, 1));
    dim_iv hi = analyze_index(w, last);
    iv_union(w, &dims[d], &hi);
  }
  int mask = e->ext.args[arg].access;
  if (mask & MLC_ACCESS_READ) {
    dim_iv *copy = mlc_arena_memdup(w->a, dims, sizeof(dim_iv) * (size_t)(nd > 0 ? nd : 1));
    record_dims(w, false, r.buf, copy);
  }
  if (mask & MLC_ACCESS_WRITE) record_dims(w, true, r.buf, dims);
}

static void visit_expr(walker *w, mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
    return;
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
    visit_expr(w, e->bin.a);
    visit_expr(w, e->bin.b);
    return;
  case MLC_EXPR_NOT:
    visit_expr(w, e->bin.a);
    return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    /* Both sides of the lazy form too: conservative. */
    visit_expr(w, e->sel.cond);
    visit_expr(w, e->sel.t);
    visit_expr(w, e->sel.f);
    return;
  case MLC_EXPR_LOAD:
    record(w, false, e->load.buf, e->load.indices);
    for (int i = 0; i < e->load.buf->ndim; i++) visit_expr(w, e->load.indices[i]);
    return;
  case MLC_EXPR_CAST:
    visit_expr(w, e->cast.value);
    return;
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) visit_expr(w, e->call.args[i]);
    return;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_args; i++)
      if (e->ext.args[i].kind == MLC_XARG_PTR) record_ptr(w, e, i);
    for (int i = 0; i < e->ext.n_kids; i++) visit_expr(w, e->ext.kids[i]);
    return;
  }
  mlc_unreachable();
}

static void env_push(walker *w, mlc_var *v, mlc_expr *value) {
  MLC_VEC_APUSH(w->a, w->env_vars, v);
  MLC_VEC_APUSH(w->a, w->env_vals, value);
}

static void walk(walker *w, const mlc_stmt *s);

/* Relax the loop var over [min, min + extent): bound directly when min is a
 * constant, else as min + v' with a fresh v' in [0, extent). */
static void walk_for(walker *w, const mlc_stmt *s) {
  int env_len = w->env_vars.len;
  mlc_expr *mn = mlc_simplify(w->s, in_env(w, s->loop.min));
  mlc_expr *ex = mlc_simplify(w->s, in_env(w, s->loop.extent));
  int64_t lo, hi;
  bool ex_ok = mlc_simplifier_bounds(w->s, ex, &lo, &hi);
  if (ex_ok && hi < 1) hi = 1; /* an empty loop touches nothing; stay conservative */
  if (!ex_ok) {
    MLC_VEC_APUSH(w->a, w->unbounded, s->loop.var);
  } else if (mn->kind == MLC_EXPR_INT_IMM) {
    mlc_simplifier_bind(w->s, s->loop.var, mn->int_val, hi);
  } else {
    mlc_var *v = mlc_var_new(w->a, s->loop.var->name, s->loop.var->dtype);
    mlc_simplifier_bind(w->s, v, 0, hi);
    env_push(w, s->loop.var, mlc_add(w->a, mn, mlc_ref(w->a, v)));
  }
  walk(w, s->loop.body);
  w->env_vars.len = w->env_vals.len = env_len;
}

/* A binding leaves its iter var's domain only where the block's T.where
 * excludes it (the verifier's convention), so under a predicate the values
 * that matter lie in the domain too. When the binding depends on relaxed
 * vars only, it stands for a fresh var ranging over the intersection (an
 * uneven split inside a blockized block then still touches only the
 * buffer's real extent). */
static mlc_expr *clamp_to_domain(walker *w, mlc_expr *val, const mlc_iter_var *it) {
  int64_t lo, hi, dmin, dext;
  if (!mlc_expr_is_const_int(it->dom.min, &dmin) || !mlc_expr_is_const_int(it->dom.extent, &dext))
    return val;
  if (!mlc_simplifier_bounds(w->s, val, &lo, &hi) || (lo >= dmin && hi <= dmin + dext - 1))
    return val;
  dim_iv iv = analyze_simplified(w, val);
  if (iv.kind != IV_EXACT || iv.base) return val; /* symbolic part: keep it exact */
  if (lo < dmin) lo = dmin;
  if (hi > dmin + dext - 1) hi = dmin + dext - 1;
  if (lo > hi) return val;
  mlc_var *v = mlc_var_new(w->a, it->var->name, val->dtype);
  mlc_simplifier_bind(w->s, v, lo, hi - lo + 1);
  return mlc_ref(w->a, v);
}

static void walk_realize(walker *w, const mlc_stmt *s) {
  const mlc_block *b = s->realize.block;
  int env_len = w->env_vars.len;
  mlc_expr **vals = MLC_NEW_ARRAY(w->a, mlc_expr *, b->n_iters > 0 ? b->n_iters : 1);
  /* All values first: a binding refers to outer vars, never to a sibling. */
  for (int i = 0; i < b->n_iters; i++) {
    vals[i] = mlc_simplify(w->s, in_env(w, s->realize.values[i]));
    if (s->realize.predicate) vals[i] = clamp_to_domain(w, vals[i], &b->iters[i]);
  }
  for (int i = 0; i < b->n_iters; i++) env_push(w, b->iters[i].var, vals[i]);
  for (int i = 0; i < b->n_allocs; i++) MLC_VEC_APUSH(w->a, w->local, b->allocs[i]);
  if (b->init) walk(w, b->init);
  walk(w, b->body);
  w->env_vars.len = w->env_vals.len = env_len;
}

static void walk(walker *w, const mlc_stmt *s) {
  switch (s->kind) {
  case MLC_STMT_FOR:
    walk_for(w, s);
    return;
  case MLC_STMT_BLOCK_REALIZE:
    walk_realize(w, s);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) walk(w, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    /* TVM's order: the value's loads, then the store. */
    visit_expr(w, s->store.value);
    for (int i = 0; i < s->store.buf->ndim; i++) visit_expr(w, s->store.indices[i]);
    record(w, true, s->store.buf, s->store.indices);
    return;
  case MLC_STMT_IF:
    visit_expr(w, s->if_.cond);
    walk(w, s->if_.then_s);
    if (s->if_.else_s) walk(w, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE:
    MLC_VEC_APUSH(w->a, w->local, s->alloc.buf);
    walk(w, s->alloc.body);
    return;
  case MLC_STMT_EVALUATE:
    visit_expr(w, s->eval.value);
    return;
  }
  mlc_unreachable();
}

/* ---- results ------------------------------------------------------------ */

static bool is_local(const walker *w, const mlc_buffer *b) {
  for (int i = 0; i < w->local.len; i++)
    if (w->local.data[i] == b) return true;
  return false;
}

static bool has_buffer(const access *acc, int n, const mlc_buffer *b) {
  for (int i = 0; i < n; i++)
    if (acc[i].buf == b) return true;
  return false;
}

/* The regions of acc[0..n) minus local buffers and those in `drop`. */
static mlc_region_set finish(walker *w, const access *acc, int n, const access *drop,
                             int n_drop) {
  mlc_region_set set = {0, MLC_NEW_ARRAY(w->a, mlc_region, n > 0 ? n : 1)};
  for (int i = 0; i < n; i++) {
    mlc_buffer *b = acc[i].buf;
    if (is_local(w, b) || has_buffer(drop, n_drop, b)) continue;
    mlc_region *r = &set.regions[set.n++];
    r->buf = b;
    r->ranges = MLC_NEW_ARRAY(w->a, mlc_range, b->ndim > 0 ? b->ndim : 1);
    for (int d = 0; d < b->ndim; d++) r->ranges[d] = iv_range(w, &acc[i].dims[d], b->shape[d]);
  }
  return set;
}

void mlc_stmt_access_regions(mlc_arena *a, const mlc_stmt *s, mlc_region_set *reads,
                             mlc_region_set *writes) {
  walker w;
  walker_init(&w, a);
  walk(&w, s);
  if (reads) *reads = finish(&w, w.reads.data, w.reads.len, NULL, 0);
  if (writes) *writes = finish(&w, w.writes.data, w.writes.len, NULL, 0);
}

void mlc_stmt_access_list(mlc_arena *a, const mlc_stmt *s, mlc_region_set *reads,
                          mlc_region_set *writes) {
  walker w;
  walker_init(&w, a);
  w.each_access = true;
  walk(&w, s);
  if (reads) *reads = finish(&w, w.reads.data, w.reads.len, NULL, 0);
  if (writes) *writes = finish(&w, w.writes.data, w.writes.len, NULL, 0);
}

void mlc_block_infer_regions(mlc_arena *a, mlc_block *blk) {
  walker w;
  walker_init(&w, a);
  for (int i = 0; i < blk->n_allocs; i++) MLC_VEC_APUSH(a, w.local, blk->allocs[i]);
  if (blk->init) walk(&w, blk->init);
  if (blk->body) walk(&w, blk->body);
  mlc_region_set wr = finish(&w, w.writes.data, w.writes.len, NULL, 0);
  /* A reduction's read of its own output is implicit (TVM's convention). */
  mlc_region_set rd = blk->init ? finish(&w, w.reads.data, w.reads.len, w.writes.data,
                                         w.writes.len)
                                : finish(&w, w.reads.data, w.reads.len, NULL, 0);
  blk->n_reads = rd.n;
  blk->reads = rd.regions;
  blk->n_writes = wr.n;
  blk->writes = wr.regions;
}

mlc_region mlc_region_relax_bounded(mlc_arena *a, mlc_region r, int n, mlc_var **vars,
                                    const int64_t *mins, const int64_t *extents,
                                    int64_t *max_extents) {
  walker w;
  walker_init(&w, a);
  for (int i = 0; i < n; i++)
    mlc_simplifier_bind(w.s, vars[i], mins[i], extents[i] > 0 ? extents[i] : 1);
  mlc_region out = {r.buf, MLC_NEW_ARRAY(a, mlc_range, r.buf->ndim > 0 ? r.buf->ndim : 1)};
  for (int d = 0; d < r.buf->ndim; d++) {
    dim_iv lo = analyze_unsimplified(&w, r.ranges[d].min);
    /* The common case, base + [lo, hi] over a constant extent (a point:
     * 1), reaches base + [lo, hi + ext - 1] without the last element's
     * analysis. */
    int64_t ext;
    bool shifted = lo.kind == IV_EXACT && mlc_expr_is_const_int(r.ranges[d].extent, &ext) &&
                   ext >= 1 && !__builtin_add_overflow(lo.hi, ext - 1, &lo.hi);
    if (!shifted) {
      dim_iv hi = analyze_unsimplified(
          &w, mlc_sub(a, mlc_add(a, r.ranges[d].min, r.ranges[d].extent), mlc_int(a, 1)));
      iv_union(&w, &lo, &hi);
    }
    out.ranges[d] = iv_range(&w, &lo, r.buf->shape[d]);
    if (!max_extents) continue;
    switch (lo.kind) {
    case IV_EXACT: max_extents[d] = lo.hi - lo.lo + 1; break;
    case IV_SYM: max_extents[d] = lo.ext_max > 0 ? lo.ext_max : -1; break;
    case IV_FULL: max_extents[d] = r.buf->shape[d]; break;
    }
  }
  return out;
}

mlc_region mlc_region_relax(mlc_arena *a, mlc_region r, int n, mlc_var **vars,
                            const int64_t *mins, const int64_t *extents) {
  return mlc_region_relax_bounded(a, r, n, vars, mins, extents, NULL);
}
