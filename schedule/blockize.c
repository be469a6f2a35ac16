/* blockize: wrap the loops at and below a loop, with the single block they
 * hold, into an outer block (TensorIR's subspace division). Each iter
 * binding is split into an outer part over the loops above and a dense
 * inner part over the loops inside:
 *
 *     binding = outer * E + inner,   inner ranging over [0, E)
 *
 * so v becomes v_o * E + v_i in the block. Everything is checked before
 * the IR is touched, so a refusal leaves the state as it was. */
#include "schedule/sched_impl.h"

#include <inttypes.h>
#include <string.h>

static const char *const BZ = "blockize";

#define BZ_MAX_TERMS 32

/* An affine form sum coef[i] * vars[i] + c. */
typedef struct affine {
  int n;
  mlc_var *vars[BZ_MAX_TERMS];
  int64_t coef[BZ_MAX_TERMS];
  int64_t c;
} affine;

static bool affine_add(affine *f, mlc_var *v, int64_t k) {
  for (int i = 0; i < f->n; i++)
    if (f->vars[i] == v) {
      f->coef[i] += k;
      return true;
    }
  if (f->n == BZ_MAX_TERMS) return false;
  f->vars[f->n] = v;
  f->coef[f->n++] = k;
  return true;
}

static bool linearize(const mlc_expr *e, int64_t scale, affine *f) {
  int64_t k;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: f->c += scale * e->int_val; return true;
  case MLC_EXPR_VAR: return affine_add(f, e->var, scale);
  case MLC_EXPR_ADD: return linearize(e->bin.a, scale, f) && linearize(e->bin.b, scale, f);
  case MLC_EXPR_SUB: return linearize(e->bin.a, scale, f) && linearize(e->bin.b, -scale, f);
  case MLC_EXPR_MUL:
    if (mlc_expr_is_const_int(e->bin.b, &k)) return linearize(e->bin.a, scale * k, f);
    if (mlc_expr_is_const_int(e->bin.a, &k)) return linearize(e->bin.b, scale * k, f);
    return false;
  case MLC_EXPR_FLOAT_IMM:
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
  case MLC_EXPR_NOT:
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CAST:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN: return false; /* not affine */
  }
  mlc_unreachable();
}

/* How one iter var divides. */
typedef enum split_kind {
  SPLIT_OUTER, /* binding uses no inner loop: the var moves to the outer block */
  SPLIT_INNER, /* binding uses only inner loops: v -> v_i, v_o of extent 1 */
  SPLIT_MIXED, /* v -> v_o * E + v_i */
} split_kind;

typedef struct iter_split {
  split_kind kind;
  mlc_expr *outer, *inner; /* bindings (MIXED: both; OUTER: outer; INNER: inner) */
  int64_t e;               /* MIXED: the inner extent E */
  int64_t outer_ext;       /* MIXED: extent of v_o */
} iter_split;

typedef struct bz_info {
  mlc_stmt *loop, *realize;
  mlc_block *b;
  mlc_stmt *inner[SCHED_MAX_DEPTH]; /* the loop and the loops below it, outer first */
  int n_inner;
  int64_t lmin[SCHED_MAX_DEPTH], lext[SCHED_MAX_DEPTH];
  iter_split *sp;
  mlc_expr *outer_pred, *inner_pred;
  char ld[96];
} bz_info;

static int inner_index(const bz_info *z, const mlc_var *v) {
  for (int j = 0; j < z->n_inner; j++)
    if (z->inner[j]->loop.var == v) return j;
  return -1;
}

/* Whether an expression uses an inner loop var, and any other var. */
typedef struct uses_ctx {
  const bz_info *z;
  bool in, out;
} uses_ctx;

static bool note_var(const mlc_expr *e, void *ctx_) {
  uses_ctx *c = ctx_;
  if (e->kind == MLC_EXPR_VAR) {
    if (inner_index(c->z, e->var) >= 0) c->in = true;
    else c->out = true;
  }
  return false;
}

static void var_uses(const bz_info *z, const mlc_expr *e, bool *in, bool *out) {
  uses_ctx c = {z, false, false};
  mlc_expr_any(e, note_var, &c);
  *in = c.in, *out = c.out;
}

static mlc_expr *term(mlc_arena *a, mlc_var *v, int64_t k) {
  mlc_expr *t = mlc_ref(a, v);
  return k == 1 ? t : mlc_mul(a, t, mlc_int_t(a, v->dtype, k));
}

/* A mixed binding: inner terms a mixed-radix sum over inner loops starting
 * at 0 (coefficients 1, e0, e0*e1, ...), outer terms and the constant
 * multiples of its range E. */
static bool split_mixed(mlc_arena *a, const bz_info *z, const mlc_iter_var *it, mlc_expr *bind,
                        iter_split *out) {
  affine f = {0};
  if (!linearize(bind, 1, &f)) return false;
  int idx[BZ_MAX_TERMS], ni = 0;
  for (int i = 0; i < f.n; i++) {
    if (f.coef[i] == 0) continue;
    int j = inner_index(z, f.vars[i]);
    if (j < 0) continue;
    if (f.coef[i] < 0 || z->lmin[j] != 0) return false;
    idx[ni++] = i;
  }
  /* Ascending coefficients must be 1, e0, e0*e1, ... */
  for (int p = 1; p < ni; p++)
    for (int q = p; q > 0 && f.coef[idx[q]] < f.coef[idx[q - 1]]; q--) {
      int t = idx[q];
      idx[q] = idx[q - 1], idx[q - 1] = t;
    }
  int64_t e = 1;
  for (int p = 0; p < ni; p++) {
    if (f.coef[idx[p]] != e) return false;
    if (mlc_mul_overflow(e, z->lext[inner_index(z, f.vars[idx[p]])], &e)) return false;
  }
  int64_t dmin, dext;
  if (!mlc_expr_is_const_int(it->dom.min, &dmin) || !mlc_expr_is_const_int(it->dom.extent, &dext) ||
      dmin != 0 || f.c % e != 0)
    return false;
  mlc_expr *outer = NULL, *inner = NULL;
  for (int i = 0; i < f.n; i++) {
    if (f.coef[i] == 0 || inner_index(z, f.vars[i]) >= 0) continue;
    if (f.coef[i] % e != 0) return false;
    mlc_expr *t = term(a, f.vars[i], f.coef[i] / e);
    outer = outer ? mlc_add(a, outer, t) : t;
  }
  if (f.c) outer = outer ? mlc_add(a, outer, mlc_int_t(a, bind->dtype, f.c / e))
                         : mlc_int_t(a, bind->dtype, f.c / e);
  for (int p = ni - 1; p >= 0; p--) {
    mlc_expr *t = term(a, f.vars[idx[p]], f.coef[idx[p]]);
    inner = inner ? mlc_add(a, inner, t) : t;
  }
  *out = (iter_split){SPLIT_MIXED, outer ? outer : mlc_int_t(a, bind->dtype, 0), inner, e,
                      (dext + e - 1) / e};
  return true;
}

/* The loop chain down to the single block, with constant bounds. */
static bool bz_chain(mlc_sched *s, mlc_rv lrv, bz_info *z, mlc_error *err) {
  if (!sched_check_loop(s, BZ, lrv, err)) return false;
  sched_rv_desc(s, lrv, z->ld);
  z->loop = s->rvs.data[lrv].loop;
  mlc_stmt *c = z->loop;
  z->n_inner = 0;
  while (c->kind == MLC_STMT_FOR) {
    if (z->n_inner == SCHED_MAX_DEPTH) return mlc_error_set(err, "%s: %s: too deep", BZ, z->ld);
    int j = z->n_inner++;
    z->inner[j] = c;
    if (!mlc_expr_is_const_int(c->loop.min, &z->lmin[j]) ||
        !mlc_expr_is_const_int(c->loop.extent, &z->lext[j]))
      return mlc_error_set(err, "%s: %s: loop %s has non-constant bounds", BZ, z->ld, c->loop.var->name);
    c = c->loop.body;
  }
  if (c->kind != MLC_STMT_BLOCK_REALIZE)
    return mlc_error_set(err,
                         "%s: %s must hold a single block under a chain of loops (found a %s "
                         "statement)",
                         BZ, z->ld, mlc_stmt_kind_name(c->kind));
  z->realize = c;
  z->b = c->realize.block;
  return true;
}

/* Bindings with unit inner loops replaced by their start, simplified. */
static mlc_expr *bz_prepare(mlc_arena *a, const bz_info *z, mlc_expr *e) {
  mlc_var *vs[SCHED_MAX_DEPTH];
  mlc_expr *vals[SCHED_MAX_DEPTH];
  int n = 0;
  for (int j = 0; j < z->n_inner; j++)
    if (z->lext[j] == 1) {
      vs[n] = z->inner[j]->loop.var;
      vals[n] = mlc_int_t(a, vs[n]->dtype, z->lmin[j]);
      n++;
    }
  return mlc_simplify_expr(a, mlc_expr_subst(a, e, n, vs, vals));
}

static bool bz_check(mlc_sched *s, mlc_rv lrv, bz_info *z, mlc_error *err) {
  mlc_arena *a = s->arena;
  if (!bz_chain(s, lrv, z, err)) return false;
  mlc_block *b = z->b;
  z->sp = MLC_NEW_ARRAY(a, iter_split, b->n_iters + 1);
  for (int i = 0; i < b->n_iters; i++) {
    mlc_expr *bind = bz_prepare(a, z, z->realize->realize.values[i]);
    bool in = false, out = false;
    var_uses(z, bind, &in, &out);
    if (!in) z->sp[i] = (iter_split){SPLIT_OUTER, bind, NULL, 1, 0};
    else if (!out) z->sp[i] = (iter_split){SPLIT_INNER, NULL, bind, 0, 1};
    else if (!split_mixed(a, z, &b->iters[i], bind, &z->sp[i])) {
      mlc_str t = {.arena = a}; /* under replay's escape point */
      mlc_print_expr(&t, z->realize->realize.values[i]);
      mlc_error_set(err,
                    "%s: %s: the binding %s of iter %s of block \"%s\" cannot be divided into an "
                    "outer part and a dense inner part",
                    BZ, z->ld, mlc_str_cstr(&t), b->iters[i].var->name, b->name);
      mlc_str_free(&t);
      return false;
    }
  }
  mlc_expr *conj[64], *inner[64], *outer[64];
  int nc = sched_conjuncts(z->realize->realize.predicate, conj, 64), ni = 0, no = 0;
  for (int c = 0; c < nc; c++) {
    mlc_expr *p = bz_prepare(a, z, conj[c]);
    bool in = false, out = false;
    var_uses(z, p, &in, &out);
    if (in && out) {
      mlc_str t = {.arena = a}; /* under replay's escape point */
      mlc_print_expr(&t, conj[c]);
      mlc_error_set(err,
                    "%s: %s: the predicate %s of block \"%s\" depends on loops both inside and "
                    "outside the loop",
                    BZ, z->ld, mlc_str_cstr(&t), b->name);
      mlc_str_free(&t);
      return false;
    }
    int64_t v;
    if (mlc_expr_is_const_int(p, &v) && v) continue; /* true */
    if (in) {
      /* TVM states the outer regions over the inner iter domains, which
       * the verifier (relaxing the loops, predicates aside) would not
       * accept as covering the body: refused rather than overstated. */
      mlc_str t = {.arena = a}; /* under replay's escape point */
      mlc_print_expr(&t, conj[c]);
      mlc_error_set(err,
                    "%s: %s: the predicate %s of block \"%s\" depends only on loops inside the "
                    "loop; the outer block's regions could not be stated exactly",
                    BZ, z->ld, mlc_str_cstr(&t), b->name);
      mlc_str_free(&t);
      return false;
    }
    if (in) inner[ni++] = p;
    else outer[no++] = p;
  }
  z->inner_pred = sched_and_all(a, ni, inner);
  z->outer_pred = sched_and_all(a, no, outer);
  return true;
}

/* ---- rewrite ------------------------------------------------------------------ */

static void subst_regions_inplace(mlc_arena *a, int n, mlc_region *rs, int nv, mlc_var **vars,
                                  mlc_expr **vals) {
  for (int i = 0; i < n; i++) {
    mlc_range *r = MLC_NEW_ARRAY(a, mlc_range, rs[i].buf->ndim + 1);
    for (int d = 0; d < rs[i].buf->ndim; d++) {
      r[d].min = mlc_expr_subst(a, rs[i].ranges[d].min, nv, vars, vals);
      r[d].extent = mlc_expr_subst(a, rs[i].ranges[d].extent, nv, vars, vals);
    }
    rs[i].ranges = r;
  }
}

/* Substitute vars everywhere under st, nested blocks included, keeping
 * every statement and block node (handles point at them). */
static void deep_subst(mlc_arena *a, mlc_stmt *st, int n, mlc_var **vars, mlc_expr **vals) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR:
    st->loop.min = mlc_expr_subst(a, st->loop.min, n, vars, vals);
    st->loop.extent = mlc_expr_subst(a, st->loop.extent, n, vars, vals);
    deep_subst(a, st->loop.body, n, vars, vals);
    return;
  case MLC_STMT_BLOCK_REALIZE: {
    mlc_block *b = st->realize.block;
    for (int i = 0; i < b->n_iters; i++)
      st->realize.values[i] = mlc_expr_subst(a, st->realize.values[i], n, vars, vals);
    if (st->realize.predicate)
      st->realize.predicate = mlc_expr_subst(a, st->realize.predicate, n, vars, vals);
    subst_regions_inplace(a, b->n_reads, b->reads, n, vars, vals);
    subst_regions_inplace(a, b->n_writes, b->writes, n, vars, vals);
    deep_subst(a, b->init, n, vars, vals);
    deep_subst(a, b->body, n, vars, vals);
    return;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) deep_subst(a, st->seq.stmts[i], n, vars, vals);
    return;
  case MLC_STMT_STORE:
    for (int i = 0; i < st->store.buf->ndim; i++)
      st->store.indices[i] = mlc_expr_subst(a, st->store.indices[i], n, vars, vals);
    st->store.value = mlc_expr_subst(a, st->store.value, n, vars, vals);
    return;
  case MLC_STMT_IF:
    st->if_.cond = mlc_expr_subst(a, st->if_.cond, n, vars, vals);
    deep_subst(a, st->if_.then_s, n, vars, vals);
    deep_subst(a, st->if_.else_s, n, vars, vals);
    return;
  case MLC_STMT_ALLOCATE: deep_subst(a, st->alloc.body, n, vars, vals); return;
  case MLC_STMT_EVALUATE: st->eval.value = mlc_expr_subst(a, st->eval.value, n, vars, vals); return;
  }
  mlc_unreachable();
}

/* The block's regions relaxed over the inner iters: the outer block's. */
static mlc_region *relax_all(mlc_arena *a, int n, const mlc_region *rs, int nv, mlc_var **vars,
                             const int64_t *mins, const int64_t *exts) {
  mlc_region *out = MLC_NEW_ARRAY(a, mlc_region, n + 1);
  for (int i = 0; i < n; i++) {
    out[i] = mlc_region_relax(a, rs[i], nv, vars, mins, exts);
    for (int d = 0; d < out[i].buf->ndim; d++) {
      out[i].ranges[d].min = mlc_simplify_expr(a, out[i].ranges[d].min);
      out[i].ranges[d].extent = mlc_simplify_expr(a, out[i].ranges[d].extent);
    }
  }
  return out;
}

typedef struct bz_iters {
  int n_in, n_out;
  mlc_iter_var *in, *out;
  mlc_expr **in_vals, **out_vals;
  int n_sub;
  mlc_var **sub_vars;
  mlc_expr **sub_vals;
} bz_iters;

static void bz_make_iters(mlc_arena *a, const bz_info *z, bool preserve_unit_iters, bz_iters *t) {
  mlc_block *b = z->b;
  int n = b->n_iters;
  t->in = MLC_NEW_ARRAY(a, mlc_iter_var, n + 1);
  t->out = MLC_NEW_ARRAY(a, mlc_iter_var, n + 1);
  t->in_vals = MLC_NEW_ARRAY(a, mlc_expr *, n + 1);
  t->out_vals = MLC_NEW_ARRAY(a, mlc_expr *, n + 1);
  t->sub_vars = MLC_NEW_ARRAY(a, mlc_var *, n + 1);
  t->sub_vals = MLC_NEW_ARRAY(a, mlc_expr *, n + 1);
  t->n_in = t->n_out = t->n_sub = 0;
  for (int i = 0; i < n; i++) {
    const mlc_iter_var *it = &b->iters[i];
    const iter_split *sp = &z->sp[i];
    mlc_dtype dt = it->var->dtype;
    if (sp->kind == SPLIT_OUTER) {
      t->out[t->n_out] = *it;
      t->out_vals[t->n_out++] = sp->outer;
      continue;
    }
    mlc_var *vi = mlc_var_new(a, mlc_arena_concat(a, it->var->name, "_i"), dt);
    mlc_range in_dom = sp->kind == SPLIT_INNER ? it->dom
                                               : (mlc_range){mlc_int_t(a, dt, 0), mlc_int_t(a, dt, sp->e)};
    t->in[t->n_in] = (mlc_iter_var){vi, in_dom, it->kind};
    t->in_vals[t->n_in++] = sp->inner;
    mlc_var *vo = NULL;
    if (sp->kind == SPLIT_MIXED || preserve_unit_iters) {
      int64_t oext = sp->kind == SPLIT_MIXED ? sp->outer_ext : 1;
      vo = mlc_var_new(a, mlc_arena_concat(a, it->var->name, "_o"), dt);
      t->out[t->n_out] = (mlc_iter_var){vo, {mlc_int_t(a, dt, 0), mlc_int_t(a, dt, oext)}, it->kind};
      t->out_vals[t->n_out++] = sp->kind == SPLIT_MIXED ? sp->outer : mlc_int_t(a, dt, 0);
    }
    t->sub_vars[t->n_sub] = it->var;
    t->sub_vals[t->n_sub++] =
        sp->kind == SPLIT_MIXED ? mlc_add(a, term(a, vo, sp->e), mlc_ref(a, vi)) : mlc_ref(a, vi);
  }
}

/* The init moves to the outer block: "<name>_init" over copies of the
 * inner loops its spatial iters (or the inner predicate) use. */
static mlc_stmt *bz_init_nest(mlc_sched *s, const bz_info *z, const bz_iters *t) {
  mlc_arena *a = s->arena;
  mlc_block *b = z->b;
  mlc_block *ib = mlc_block_new(a, sched_fresh_block_name(s, mlc_arena_concat(a, b->name, "_init")));
  ib->iters = MLC_NEW_ARRAY(a, mlc_iter_var, t->n_in + 1);
  mlc_expr **vals = MLC_NEW_ARRAY(a, mlc_expr *, t->n_in + 1);
  mlc_var **ov = MLC_NEW_ARRAY(a, mlc_var *, t->n_in + 1);
  mlc_expr **nv = MLC_NEW_ARRAY(a, mlc_expr *, t->n_in + 1);
  int k = 0;
  for (int i = 0; i < t->n_in; i++) {
    const mlc_iter_var *it = &t->in[i];
    if (it->kind != MLC_ITER_SPATIAL || !sched_stmt_uses_var(b->init, it->var)) continue;
    mlc_var *v = mlc_var_new(a, mlc_arena_concat(a, it->var->name, "_init"), it->var->dtype);
    ib->iters[k] = (mlc_iter_var){v, it->dom, MLC_ITER_SPATIAL};
    vals[k] = t->in_vals[i];
    ov[k] = it->var;
    nv[k++] = mlc_ref(a, v);
  }
  ib->n_iters = k;
  ib->body = mlc_stmt_subst(a, b->init, k, ov, nv);
  ib->n_writes = b->n_writes;
  ib->writes = MLC_NEW_ARRAY(a, mlc_region, b->n_writes + 1);
  memcpy(ib->writes, b->writes, sizeof(mlc_region) * (size_t)b->n_writes);
  subst_regions_inplace(a, ib->n_writes, ib->writes, k, ov, nv);
  mlc_var *lv[SCHED_MAX_DEPTH];
  mlc_expr *ln[SCHED_MAX_DEPTH];
  bool used[SCHED_MAX_DEPTH];
  int nl = 0;
  for (int j = 0; j < z->n_inner; j++) {
    mlc_var *v = z->inner[j]->loop.var;
    used[j] = z->inner_pred && mlc_expr_uses_var(z->inner_pred, v);
    for (int q = 0; q < k && !used[j]; q++) used[j] = mlc_expr_uses_var(vals[q], v);
    if (!used[j]) continue;
    lv[nl] = v;
    ln[nl++] = mlc_ref(a, mlc_var_new(a, v->name, v->dtype));
  }
  for (int q = 0; q < k; q++) vals[q] = mlc_expr_subst(a, vals[q], nl, lv, ln);
  mlc_expr *pred = z->inner_pred ? mlc_expr_subst(a, z->inner_pred, nl, lv, ln) : NULL;
  mlc_stmt *body = mlc_realize_new(a, ib, vals, pred);
  for (int j = z->n_inner - 1, q = nl - 1; j >= 0; j--) {
    if (!used[j]) continue;
    mlc_stmt *old = z->inner[j];
    body = mlc_for_new(a, ln[q--]->var, old->loop.min, old->loop.extent, old->loop.kind, body);
    body->loop.thread = old->loop.thread;
  }
  return body;
}

bool sched_blockize(mlc_sched *s, mlc_rv lrv, bool preserve_unit_iters, mlc_block **outer,
                    mlc_error *err) {
  bz_info z;
  memset(&z, 0, sizeof z);
  if (!bz_check(s, lrv, &z, err)) return false;
  mlc_arena *a = s->arena;
  mlc_block *b = z.b;
  bz_iters t;
  bz_make_iters(a, &z, preserve_unit_iters, &t);
  /* The inner block: new iters, bindings over inner loops only. */
  deep_subst(a, b->init, t.n_sub, t.sub_vars, t.sub_vals);
  deep_subst(a, b->body, t.n_sub, t.sub_vars, t.sub_vals);
  subst_regions_inplace(a, b->n_reads, b->reads, t.n_sub, t.sub_vars, t.sub_vals);
  subst_regions_inplace(a, b->n_writes, b->writes, t.n_sub, t.sub_vars, t.sub_vals);
  b->iters = t.in;
  b->n_iters = t.n_in;
  z.realize->realize.values = t.in_vals;
  z.realize->realize.predicate = z.inner_pred;

  mlc_block *ob = mlc_block_new(a, sched_fresh_block_name(s, mlc_arena_concat(a, b->name, "_o")));
  mlc_var **rv = MLC_NEW_ARRAY(a, mlc_var *, t.n_in + 1);
  int64_t *mins = MLC_NEW_ARRAY(a, int64_t, t.n_in + 1), *exts = MLC_NEW_ARRAY(a, int64_t, t.n_in + 1);
  for (int i = 0; i < t.n_in; i++) {
    rv[i] = t.in[i].var;
    mlc_expr_is_const_int(t.in[i].dom.min, &mins[i]);
    mlc_expr_is_const_int(t.in[i].dom.extent, &exts[i]);
  }
  ob->n_reads = b->n_reads;
  ob->reads = relax_all(a, b->n_reads, b->reads, t.n_in, rv, mins, exts);
  ob->n_writes = b->n_writes;
  ob->writes = relax_all(a, b->n_writes, b->writes, t.n_in, rv, mins, exts);
  ob->iters = t.out;
  ob->n_iters = t.n_out;
  if (b->init) {
    ob->init = bz_init_nest(s, &z, &t);
    /* Without its init the inner block reads its output explicitly. */
    mlc_region *reads = MLC_NEW_ARRAY(a, mlc_region, b->n_reads + b->n_writes + 1);
    memcpy(reads, b->writes, sizeof(mlc_region) * (size_t)b->n_writes);
    memcpy(reads + b->n_writes, b->reads, sizeof(mlc_region) * (size_t)b->n_reads);
    b->reads = reads;
    b->n_reads += b->n_writes;
    b->init = NULL;
  }
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int depth = sched_path_to(s, z.loop, path);
  mlc_stmt **slot = sched_child_slot(path[depth - 2], z.loop);
  ob->body = z.loop;
  *slot = mlc_realize_new(a, ob, t.out_vals, z.outer_pred);
  *outer = ob;
  return true;
}

bool mlc_sched_blockize(mlc_sched *s, mlc_rv lrv, bool preserve_unit_iters, mlc_rv *out,
                        mlc_error *err) {
  mlc_block *ob;
  if (!sched_blockize(s, lrv, preserve_unit_iters, &ob, err)) return false;
  *out = sched_new_rv(s, MLC_RV_BLOCK, ob, NULL, 0);
  mlc_operand in = MLC_OP_RV(lrv);
  mlc_attr at = sched_attr_bool("preserve_unit_iters", preserve_unit_iters);
  sched_record(s, MLC_INST_BLOCKIZE, 1, &in, 1, &at, 1, out);
  return true;
}
