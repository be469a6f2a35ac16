/* Affine analysis of index expressions: whether an index or a block's
 * bindings are (quasi-)affine maps of loop or iter vars, from the plain
 * syntactic rule up to TensorIR's IsAffineBinding. One place, so that the
 * primitives (parallel, vectorize, bind, decompose_reduction, rfactor,
 * compute_at, reverse_compute_inline) and lowering agree on what they
 * accept. */
#include "ir/arith_internal.h"

/* ---- syntactic quasi-affine form ---------------------------------------- */

bool mlc_expr_is_quasi_affine(const mlc_expr *e) {
  int64_t c;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_VAR: return true;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB: return mlc_expr_is_quasi_affine(e->bin.a) && mlc_expr_is_quasi_affine(e->bin.b);
  case MLC_EXPR_MUL:
    return (mlc_expr_is_const_int(e->bin.a, &c) && mlc_expr_is_quasi_affine(e->bin.b)) ||
           (mlc_expr_is_const_int(e->bin.b, &c) && mlc_expr_is_quasi_affine(e->bin.a));
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
    return mlc_expr_is_const_int(e->bin.b, &c) && c > 0 && mlc_expr_is_quasi_affine(e->bin.a);
  case MLC_EXPR_CAST: /* between int types, as loops of int32 and int64 fused leave */
    return mlc_dtype_is_int(e->dtype) && mlc_dtype_is_int(e->cast.value->dtype) &&
           mlc_expr_is_quasi_affine(e->cast.value);
  case MLC_EXPR_FLOAT_IMM:
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
  case MLC_EXPR_CALL_EXTERN: return false;
  }
  mlc_unreachable();
}

/* ---- linear forms over given vars --------------------------------------- */

bool mlc_expr_linear_in(mlc_arena *a, mlc_expr *e, int n, mlc_var **vars, int64_t *coeff,
                        int64_t *c0) {
  if (!mlc_dtype_is_int(e->dtype)) return false;
  mlc_simplifier *sp = mlc_simplifier_new(a);
  arith_lin L;
  arith_lin_init(&L);
  arith_lin_add(sp, &L, mlc_simplify(sp, e), 1);
  if (L.bad) return false;
  for (int k = 0; k < n; k++) coeff[k] = 0;
  for (int i = 0; i < L.n; i++) {
    if (L.t[i].coeff == 0) continue;
    int k = 0;
    while (k < n && !(L.t[i].atom->kind == MLC_EXPR_VAR && L.t[i].atom->var == vars[k])) k++;
    if (k == n) return false;
    coeff[k] += L.t[i].coeff;
  }
  *c0 = L.c;
  return true;
}

bool mlc_expr_var_stride(mlc_arena *a, mlc_expr *e, mlc_var *v, int64_t *step) {
  mlc_expr *next = mlc_add(a, mlc_ref(a, v), mlc_int_t(a, v->dtype, 1));
  return mlc_expr_const_diff(a, mlc_expr_subst(a, e, 1, &v, &next), e, step);
}

/* ---- fused iterators ----------------------------------------------------- */

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

static const int64_t FUSED_SYMBOLIC_EXTENT = INT64_C(1) << 32;

bool mlc_expr_fused_map(mlc_arena *a, mlc_expr *e, int n, const mlc_iter_var *iters,
                        mlc_fused_map *out) {
  if (n > MLC_FUSED_MAX) return false;
  mlc_var **vars = MLC_NEW_ARRAY(a, mlc_var *, n + 1);
  int64_t *coeff = MLC_NEW_ARRAY(a, int64_t, n + 1), c0;
  for (int k = 0; k < n; k++) vars[k] = iters[k].var;
  if (!mlc_expr_linear_in(a, e, n, vars, coeff, &c0)) return false;
  int m = 0;
  for (int k = 0; k < n; k++) /* by |coeff|, insertion sort (stable) */
    if (coeff[k]) {
      int j = m++;
      for (; j > 0 && abs64(out->coeff[j - 1]) > abs64(coeff[k]); j--) {
        out->order[j] = out->order[j - 1];
        out->coeff[j] = out->coeff[j - 1];
      }
      out->order[j] = k;
      out->coeff[j] = coeff[k];
    }
  out->m = m;
  out->sign = m && out->coeff[0] < 0 ? -1 : 1;
  out->g = m ? abs64(out->coeff[0]) : 1;
  int64_t stride = out->g;
  for (int i = 0; i < m; i++) {
    const mlc_iter_var *it = &iters[out->order[i]];
    /* The most significant iter may have a symbolic domain (a size of the
     * function): it stands as one larger than any other. */
    bool sized = mlc_expr_is_const_int(it->dom.extent, &out->exts[i]);
    if (!sized && i == m - 1) out->exts[i] = FUSED_SYMBOLIC_EXTENT, sized = true;
    if (!mlc_expr_is_const_int(it->dom.min, &out->mins[i]) || !sized ||
        out->coeff[i] != out->sign * stride ||
        __builtin_mul_overflow(stride, out->exts[i], &stride))
      return false;
    c0 += out->coeff[i] * out->mins[i];
  }
  out->c0 = c0;
  out->span = stride;
  return true;
}

/* ---- quasi-affine bindings (TensorIR's IsAffineBinding) ---------------
 *
 * A block's bindings are affine when each one is a constant (or a value of
 * the enclosing block) plus a sum of parts of independent iterators,
 *
 *     binding = base + sum_k floormod(floordiv(src_k, lower_k), ext_k) * scale_k,
 *
 * that sweeps a dense range (see am_fuse); a source is a loop of the
 * block's scope (counted from its min) or such a dense sum itself (fused
 * loops split again), and no two bindings use overlapping parts of one
 * source. This is what TVM's DetectIterMap accepts at its surjective level
 * for the forms split, fuse, compute_at and offsets produce; 2 * i, i * j,
 * floordiv(k * k, 2) or two iters bound to the same loop are not affine. */

enum { AM_TERMS = 16, AM_MARKS = 64, AM_PREDS = 16, AM_PARTS = 512, AM_LOOPS = 256 };

typedef struct am_split {
  int mark;      /* the source: index into am_ctx.marks */
  int64_t lower; /* floormod(floordiv(source, lower), ext) * scale */
  int64_t ext;
  int64_t scale;
  bool coarse; /* floordiv / floormod across digits of the source (see am_divmod) */
} am_split;

typedef struct am_sum {
  int n;
  am_split t[AM_TERMS];
  int64_t base;
  bool sym; /* the base also holds vars that are not loops of the scope */
} am_sum;

typedef struct am_mark {
  const mlc_var *loop; /* a loop var; NULL: a fused sum */
  am_sum fused;        /* fused: its terms, scale ascending, dense */
  bool exact;          /* fused: the terms' scales are a mixed radix (one value each) */
  int64_t ext;         /* the source ranges over [0, ext) */
} am_mark;

/* Which part of a source a binding uses; owner is the iter's index, via
 * the fused source it was read through (-1: none). */
typedef struct am_part {
  int mark, owner, via;
  bool coarse; /* a whole term standing for a part not aligned to its digits */
  int64_t lower, ext;
} am_part;

typedef struct am_ctx {
  int nl;
  mlc_stmt *const *loops; /* innermost last */
  int64_t lmin[AM_LOOPS], lext[AM_LOOPS];
  bool lconst[AM_LOOPS];
  int n_marks;
  am_mark marks[AM_MARKS];
  int n_preds;
  am_sum pred[AM_PREDS]; /* T.where conjuncts pred[i] < bound[i] */
  int64_t bound[AM_PREDS];
  int n_parts;
  am_part parts[AM_PARTS];
} am_ctx;

static int am_loop_index(const am_ctx *c, const mlc_var *v) {
  for (int j = 0; j < c->nl; j++)
    if (c->loops[j]->loop.var == v) return j;
  return -1;
}

static bool am_is_loop_var(const mlc_expr *e, void *ctx) {
  return e->kind == MLC_EXPR_VAR && am_loop_index(ctx, e->var) >= 0;
}

static int am_loop_mark(am_ctx *c, int j) {
  const mlc_var *v = c->loops[j]->loop.var;
  for (int m = 0; m < c->n_marks; m++)
    if (c->marks[m].loop == v) return m;
  if (c->n_marks == AM_MARKS) return -1;
  c->marks[c->n_marks] = (am_mark){.loop = v, .ext = c->lext[j]};
  return c->n_marks++;
}

/* Appends a term; terms of extent 1 are the constant 0 and drop out. */
static bool am_push(am_sum *s, am_split t) {
  if (t.ext == 1 || t.scale == 0) return true;
  if (s->n == AM_TERMS) return false;
  s->t[s->n++] = t;
  return true;
}

/* x += k * y */
static bool am_add(am_sum *x, const am_sum *y, int64_t k) {
  for (int i = 0; i < y->n; i++) {
    am_split t = y->t[i];
    t.scale *= k;
    if (!am_push(x, t)) return false;
  }
  x->base += k * y->base;
  x->sym = x->sym || y->sym;
  return true;
}

/* Scale ascending; ties in a fixed order so equal sums compare equal. */
static bool am_before(const am_split *x, const am_split *y) {
  if (x->scale != y->scale) return x->scale < y->scale;
  if (x->mark != y->mark) return x->mark < y->mark;
  return x->lower != y->lower ? x->lower < y->lower : x->ext < y->ext;
}

static void am_sort(am_sum *s) {
  for (int i = 1; i < s->n; i++)
    for (int j = i; j > 0 && am_before(&s->t[j], &s->t[j - 1]); j--) {
      am_split t = s->t[j];
      s->t[j] = s->t[j - 1], s->t[j - 1] = t;
    }
}

static bool am_same_terms(const am_sum *x, const am_sum *y) {
  if (x->n != y->n) return false;
  for (int i = 0; i < x->n; i++) {
    const am_split *a = &x->t[i], *b = &y->t[i];
    if (a->mark != b->mark || a->lower != b->lower || a->ext != b->ext || a->scale != b->scale ||
        a->coarse != b->coarse)
      return false;
  }
  return true;
}

/* The source a dense sum (sorted) forms, found or added; its extent is
 * narrowed by a T.where bound on the same sum (an uneven split). */
static int am_fused_mark(am_ctx *c, const am_sum *s, bool exact, int64_t ext) {
  for (int m = 0; m < c->n_marks; m++)
    if (!c->marks[m].loop && am_same_terms(&c->marks[m].fused, s)) return m;
  if (c->n_marks == AM_MARKS) return -1;
  for (int p = 0; p < c->n_preds; p++)
    if (am_same_terms(&c->pred[p], s) && c->bound[p] - c->pred[p].base < ext &&
        c->bound[p] - c->pred[p].base > 0)
      ext = c->bound[p] - c->pred[p].base;
  am_mark *mk = &c->marks[c->n_marks];
  *mk = (am_mark){.loop = NULL, .fused = *s, .exact = exact, .ext = ext};
  mk->fused.base = 0, mk->fused.sym = false;
  return c->n_marks++;
}

/* The terms of x (base ignored) as one part of scale 1 of a source. The
 * sum must sweep a dense range [0, reach]: scales ascending from 1, each
 * at most one more than what the smaller terms reach (no gaps). Windows
 * that overlap (i * 128 + ax with ax in [0, 130)) qualify, as TVM's
 * surjective iter maps do; an exact mixed radix 1, e0, e0 * e1, ... of
 * consecutive parts of one source is that source's part. */
static bool am_fuse(am_ctx *c, const am_sum *x, am_split *out) {
  am_sum s = *x;
  am_sort(&s);
  if (s.n == 0 || s.t[0].scale != 1) return false;
  int64_t reach = 0;
  bool exact = true;
  for (int i = 0; i < s.n; i++) {
    if (s.t[i].scale > reach + 1) return false;
    exact = exact && s.t[i].scale == reach + 1;
    reach += s.t[i].scale * (s.t[i].ext - 1);
  }
  bool one = exact, coarse = s.t[0].coarse;
  for (int i = 1; i < s.n; i++) {
    one = one && s.t[i].mark == s.t[0].mark && s.t[i].lower == s.t[i - 1].lower * s.t[i - 1].ext;
    coarse = coarse || s.t[i].coarse;
  }
  if (one) {
    *out = (am_split){s.t[0].mark, s.t[0].lower, reach + 1, 1, coarse};
    return true;
  }
  int m = am_fused_mark(c, &s, exact, reach + 1);
  if (m < 0) return false;
  *out = (am_split){m, 1, c->marks[m].ext, 1, coarse};
  return true;
}

static int64_t floordiv64(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/* floordiv (div) or floormod of x by k > 0. A divisor that does not
 * divide the part's extent still gives a dense range of the source's
 * digits, but not whole digits of it: the part is coarse, and the
 * independence check leaves it out. That happens where the simplifier
 * rewrote a fused source (M // 16 as f0 * 14 + (f1 * 2 + f2) // 16), which
 * a finer normal form (TVM's iter marks) would see through. */
static bool am_divmod(am_ctx *c, const am_sum *x, int64_t k, bool div, am_sum *out) {
  *out = (am_sum){0};
  if (x->n == 0) {
    out->sym = x->sym;
    if (!x->sym) out->base = div ? floordiv64(x->base, k) : x->base - floordiv64(x->base, k) * k;
    return true;
  }
  am_split s;
  if (x->sym || x->base % k != 0 || !am_fuse(c, x, &s)) return false;
  if (div) {
    out->base = x->base / k;
    bool top = s.lower * s.ext >= c->marks[s.mark].ext;
    s.coarse = s.coarse || (s.ext % k != 0 && !top);
    s.ext = (s.ext + k - 1) / k;
    s.lower *= k;
  } else if (k < s.ext) {
    s.coarse = s.coarse || s.ext % k != 0;
    s.ext = k;
  }
  return am_push(out, s);
}

static bool am_norm(am_ctx *c, const mlc_expr *e, am_sum *out) {
  *out = (am_sum){0};
  am_sum x, y;
  int64_t k;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: out->base = e->int_val; return true;
  case MLC_EXPR_VAR: {
    int j = am_loop_index(c, e->var);
    if (j < 0 || !c->lconst[j]) break;
    out->base = c->lmin[j];
    int m = am_loop_mark(c, j);
    return m >= 0 && am_push(out, (am_split){m, 1, c->marks[m].ext, 1, false});
  }
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
    return am_norm(c, e->bin.a, &x) && am_norm(c, e->bin.b, &y) && am_add(out, &x, 1) &&
           am_add(out, &y, e->kind == MLC_EXPR_SUB ? -1 : 1);
  case MLC_EXPR_MUL:
    if (mlc_expr_is_const_int(e->bin.b, &k)) return am_norm(c, e->bin.a, &x) && am_add(out, &x, k);
    if (mlc_expr_is_const_int(e->bin.a, &k)) return am_norm(c, e->bin.b, &x) && am_add(out, &x, k);
    break;
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
    if (mlc_expr_is_const_int(e->bin.b, &k) && k > 0)
      return am_norm(c, e->bin.a, &x) && am_divmod(c, &x, k, e->kind == MLC_EXPR_FLOORDIV, out);
    break;
  case MLC_EXPR_CAST:
    if (mlc_dtype_is_int(e->dtype) && mlc_dtype_is_int(e->cast.value->dtype))
      return am_norm(c, e->cast.value, out);
    break;
  case MLC_EXPR_FLOAT_IMM:
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
  case MLC_EXPR_CALL_EXTERN: break;
  }
  /* Anything else is affine only as a value the loops do not change. */
  if (mlc_expr_any(e, am_is_loop_var, c)) return false;
  out->sym = true;
  return true;
}

/* T.where conjuncts `sum < bound` narrow the sources they bound. */
static void am_add_preds(am_ctx *c, int n, mlc_expr *const *conj) {
  for (int i = 0; i < n && c->n_preds < AM_PREDS; i++) {
    int64_t b;
    mlc_expr *e = conj[i];
    if ((e->kind != MLC_EXPR_LT && e->kind != MLC_EXPR_LE) || !mlc_expr_is_const_int(e->bin.b, &b))
      continue;
    am_sum *p = &c->pred[c->n_preds];
    if (!am_norm(c, e->bin.a, p) || p->sym || p->n == 0) continue;
    am_sort(p);
    c->bound[c->n_preds++] = e->kind == MLC_EXPR_LT ? b : b + 1;
  }
  /* A bound on one loop narrows that loop (fused sources are narrowed as
   * they are formed). */
  for (int i = 0; i < c->n_preds; i++) {
    const am_split *t = &c->pred[i].t[0];
    am_mark *m = &c->marks[t->mark];
    int64_t hi = c->bound[i] - c->pred[i].base;
    if (c->pred[i].n == 1 && m->loop && t->scale == 1 && t->lower == 1 && t->ext == m->ext &&
        hi > 0 && hi < m->ext)
      m->ext = hi;
  }
}

static bool am_add_part(am_ctx *c, am_split t, int owner, int via, bool coarse) {
  if (c->n_parts == AM_PARTS) return false;
  c->parts[c->n_parts++] = (am_part){t.mark, owner, via, coarse, t.lower, t.ext};
  return true;
}

/* The part [lo, hi) of a fused source's digits that falls in term t
 * (scale k): that part of t's own source, when it is whole digits of it;
 * otherwise all of t (*coarse). */
static am_split am_term_part(const am_split *t, int64_t lo, int64_t hi, bool *coarse) {
  int64_t k = t->scale, tlo = k, thi = k * t->ext;
  lo = lo > tlo ? lo : tlo;
  hi = hi < thi ? hi : thi;
  if (lo >= hi) return (am_split){t->mark, 0, 0, 0, false};
  if (lo % k != 0 || hi % lo != 0) return *coarse = true, *t;
  return (am_split){t->mark, t->lower * (lo / k), hi / lo, 1, t->coarse};
}

/* Parts of fused sources stand for the parts of their terms they use
 * (of every term, where the terms overlap), so that two bindings reading
 * the same loops through different fused forms are still compared. Parts
 * read through the same fused source were compared there already. */
static bool am_expand_parts(am_ctx *c) {
  bool done[AM_MARKS] = {false};
  for (int i = 0; i < c->n_parts; i++) {
    am_part p = c->parts[i];
    const am_mark *m = &c->marks[p.mark];
    if (m->loop || (!m->exact && done[p.mark])) continue;
    done[p.mark] = true;
    for (int k = 0; k < m->fused.n; k++) {
      const am_split *t = &m->fused.t[k];
      bool coarse = p.coarse || t->coarse;
      am_split sub = m->exact ? am_term_part(t, p.lower, p.lower * p.ext, &coarse) : *t;
      if (sub.ext > 1 && !am_add_part(c, sub, p.owner, p.mark, coarse)) return false;
    }
  }
  return true;
}

/* Two parts of one source overlap when their digit ranges
 * [lower, lower * ext) meet. Coarse parts are not compared: telling
 * apart bindings that divide one fused source at different digits (one
 * reads it as M // 3248, another as the simplifier's rewrite of M // 56)
 * needs a finer normal form than ours (TVM's iter marks). */
static bool am_overlap(const am_part *x, const am_part *y) {
  if (x->mark != y->mark || (x->via >= 0 && x->via == y->via) || x->coarse || y->coarse)
    return false;
  int64_t lo = x->lower > y->lower ? x->lower : y->lower;
  int64_t hx = x->lower * x->ext, hy = y->lower * y->ext;
  return lo < (hx < hy ? hx : hy);
}

static const int64_t AM_SYMBOLIC_EXTENT = INT64_C(1) << 32;

bool mlc_affine_bindings(int nl, mlc_stmt *const *loops, int n_conj, mlc_expr *const *conj,
                         int n, mlc_expr *const *values, int *bad, int *other) {
  MLC_ASSERT(nl <= AM_LOOPS);
  /* Not zeroed (20 KB, a tenth of a trace replay's time when it was):
   * every field is written before it is read. */
  am_ctx *c = mlc_malloc(sizeof *c);
  if (!c) mlc_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", sizeof *c);
  c->nl = nl;
  c->loops = loops;
  c->n_marks = c->n_preds = c->n_parts = 0;
  /* A symbolic extent (a function's size, known at run time) stands as
   * one larger than any other here: its loop can then only be the most
   * significant digit of a dense sum, as it must be at every size. */
  for (int j = 0; j < c->nl; j++) {
    c->lconst[j] = mlc_expr_is_const_int(c->loops[j]->loop.min, &c->lmin[j]);
    if (c->lconst[j] && !mlc_expr_is_const_int(c->loops[j]->loop.extent, &c->lext[j]))
      c->lext[j] = AM_SYMBOLIC_EXTENT;
  }
  am_add_preds(c, n_conj, conj);
  bool ok = true;
  *bad = *other = -1;
  for (int i = 0; i < n && ok; i++) {
    am_sum x;
    am_split t;
    ok = am_norm(c, values[i], &x) &&
         (x.n == 0 || (am_fuse(c, &x, &t) && am_add_part(c, t, i, -1, t.coarse)));
    if (!ok) *bad = i;
  }
  if (ok && !am_expand_parts(c)) ok = false, *bad = 0;
  for (int i = 0; i < c->n_parts && ok; i++)
    for (int j = i + 1; j < c->n_parts && ok; j++)
      if (am_overlap(&c->parts[i], &c->parts[j])) {
        ok = false;
        *bad = c->parts[i].owner, *other = c->parts[j].owner;
      }
  mlc_free(c);
  return ok;
}
