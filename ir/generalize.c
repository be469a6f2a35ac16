/* One function of size vars from instances of a kernel at known sizes.
 *
 * A model compiled at several sizes of an input's dimension lowers every
 * op to the same loop nest with other constants. Those instances, walked
 * in the structural hash's order (mlc_func_int_slots), must agree in
 * everything but their int constants; each constant that differs is an
 * affine function of the sizes, c0 + sum c_k * n_k, fitted exactly on
 * instances that change one size and checked on every other instance.
 * The result, evaluated at an instance's sizes, is that instance constant
 * for constant: nothing is guessed, and what does not fit is refused with
 * the slot that did not.
 */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* An affine form of the sizes: off + sum coef[k] * n_k. */
typedef struct affine {
  int64_t off;
  int64_t coef[MLC_MAX_SIZES];
  bool varies;
} affine;

typedef struct gen {
  mlc_arena *a;
  const mlc_generalize_in *in;
  int *probe;         /* probe[k]: an instance differing from insts[0] in size k alone */
  mlc_size_var *vars; /* the result's size vars, by size index (var NULL: unused) */
  mlc_error *err;
} gen;

static int64_t value_at(const gen *g, int i, int k) { return g->in->values[i * g->in->n_sizes + k]; }

static int64_t slot_value(const mlc_int_slot *s) {
  return s->imm ? s->imm->int_val : s->buf->shape[s->dim];
}

static bool find_probes(gen *g) {
  const mlc_generalize_in *in = g->in;
  for (int k = 0; k < in->n_sizes; k++) {
    if (value_at(g, 0, k) != in->hi[k])
      return mlc_error_set(g->err, "instance 0 is not at every size's bound");
    g->probe[k] = -1;
    for (int i = 1; i < in->n_inst && g->probe[k] < 0; i++) {
      bool alone = value_at(g, i, k) != in->hi[k];
      for (int j = 0; j < in->n_sizes && alone; j++)
        if (j != k && value_at(g, i, j) != in->hi[j]) alone = false;
      if (alone) g->probe[k] = i;
    }
    if (g->probe[k] < 0)
      return mlc_error_set(g->err, "no instance changes size %s alone", in->names[k]);
  }
  return true;
}

/* The affine form through v[i] (instance i's constant), checked on every
 * instance; false when the constant is no such function of the sizes. */
static bool fit(const gen *g, const int64_t *v, affine *f) {
  const mlc_generalize_in *in = g->in;
  memset(f, 0, sizeof *f);
  f->off = v[0];
  for (int k = 0; k < in->n_sizes; k++) {
    int i = g->probe[k];
    int64_t dv, ds = value_at(g, i, k) - in->hi[k], t;
    if (__builtin_sub_overflow(v[i], v[0], &dv) || dv % ds) return false;
    f->coef[k] = dv / ds;
    if (f->coef[k]) f->varies = true;
    if (__builtin_mul_overflow(f->coef[k], in->hi[k], &t) || __builtin_sub_overflow(f->off, t, &f->off))
      return false;
  }
  for (int i = 0; i < in->n_inst; i++) {
    int64_t x = f->off, t;
    for (int k = 0; k < in->n_sizes; k++)
      if (__builtin_mul_overflow(f->coef[k], value_at(g, i, k), &t) || __builtin_add_overflow(x, t, &x))
        return false;
    if (x != v[i]) return false;
  }
  return true;
}

/* The least and largest value of f over the sizes' bounds. */
static bool affine_range(const gen *g, const affine *f, int64_t *lo, int64_t *hi) {
  *lo = *hi = f->off;
  for (int k = 0; k < g->in->n_sizes; k++) {
    int64_t a, b;
    if (__builtin_mul_overflow(f->coef[k], g->in->lo[k], &a) ||
        __builtin_mul_overflow(f->coef[k], g->in->hi[k], &b))
      return false;
    if (__builtin_add_overflow(*lo, a < b ? a : b, lo) || __builtin_add_overflow(*hi, a < b ? b : a, hi))
      return false;
  }
  return true;
}

static mlc_var *size_var(gen *g, int k, mlc_dtype t) {
  mlc_size_var *s = &g->vars[k];
  if (!s->var) {
    s->var = mlc_var_new(g->a, g->in->names[k], t);
    s->lo = g->in->lo[k];
    s->hi = g->in->hi[k];
  }
  return s->var;
}

/* f as an expression of dtype t: `n * 4 + 1`, `n - 1`, `n`. */
static mlc_expr *affine_expr(gen *g, const affine *f, mlc_dtype var_t, mlc_dtype t) {
  mlc_expr *e = NULL;
  for (int k = 0; k < g->in->n_sizes; k++) {
    if (!f->coef[k]) continue;
    mlc_expr *n = mlc_ref(g->a, size_var(g, k, var_t));
    if (var_t != t) n = mlc_cast(g->a, t, n);
    if (f->coef[k] != 1) n = mlc_binary(g->a, MLC_EXPR_MUL, n, mlc_int_t(g->a, t, f->coef[k]));
    e = e ? mlc_binary(g->a, MLC_EXPR_ADD, e, n) : n;
  }
  if (f->off > 0) e = mlc_binary(g->a, MLC_EXPR_ADD, e, mlc_int_t(g->a, t, f->off));
  if (f->off < 0) e = mlc_binary(g->a, MLC_EXPR_SUB, e, mlc_int_t(g->a, t, -f->off));
  return e;
}

static bool is_static_param(const gen *g, const mlc_prim_func *f, const mlc_buffer *b) {
  if (!g->in->static_params) return false;
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i] == b) return g->in->static_params[i];
  return false;
}

static int cmp_ptr(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (const void *const *)x, b = (uintptr_t) * (const void *const *)y;
  return a < b ? -1 : a > b;
}

typedef struct load_check {
  const gen *g;
  const mlc_prim_func *f;
  const void **varying; /* sorted */
  int n_varying;
  const mlc_buffer *bad;
} load_check;

static bool is_varying(const mlc_expr *e, void *ud) {
  const load_check *c = ud;
  return e->kind == MLC_EXPR_INT_IMM && c->n_varying &&
         bsearch(&e, c->varying, (size_t)c->n_varying, sizeof *c->varying, cmp_ptr);
}

/* A load of a static parameter whose index changes with the sizes. */
static bool sized_load_of_static(const mlc_expr *e, void *ud) {
  load_check *c = ud;
  if (e->kind != MLC_EXPR_LOAD || !is_static_param(c->g, c->f, e->load.buf)) return false;
  for (int d = 0; d < e->load.buf->ndim; d++)
    if (mlc_expr_any(e->load.indices[d], is_varying, c)) {
      c->bad = e->load.buf;
      return true;
    }
  return false;
}

static bool stmt_has_sized_load(const mlc_stmt *s, void *ud) {
  load_check *c = ud;
  if (s->kind == MLC_STMT_STORE && is_static_param(c->g, c->f, s->store.buf)) {
    c->bad = s->store.buf;
    return true;
  }
  return mlc_stmt_exprs_any(s, sized_load_of_static, ud);
}

/* The dtype of the size vars: that of most expression slots that vary
 * (int32 on a tie), so that the fewest need a cast (loop extents are
 * int32; a bound by a cast size the verifier cannot always relate to
 * the size itself). */
static mlc_dtype vars_dtype(int n, const mlc_int_slot *slots, const affine *forms) {
  int wide = 0, narrow = 0;
  for (int j = 0; j < n; j++)
    if (forms[j].varies && slots[j].imm) {
      if (slots[j].imm->dtype == MLC_INT64) wide++;
      else narrow++;
    }
  return wide > narrow ? MLC_INT64 : MLC_INT32;
}

static bool set_dim(gen *g, mlc_buffer *b, int d, const affine *f, mlc_dtype var_t) {
  int64_t lo, hi;
  if (!affine_range(g, f, &lo, &hi) || lo < 0)
    return mlc_error_set(g->err, "extent %d of %s may be negative or overflow at some size", d,
                         b->name);
  if (!b->dims) {
    mlc_expr **dims = MLC_NEW_ARRAY(g->a, mlc_expr *, b->ndim);
    for (int e = 0; e < b->ndim; e++) dims[e] = mlc_buffer_dim(g->a, b, e);
    b->dims = dims;
  }
  b->dims[d] = affine_expr(g, f, var_t, var_t);
  b->shape[d] = hi > 0 ? hi : 1;
  return true;
}

static bool set_imm(gen *g, mlc_expr *e, const affine *f, mlc_dtype var_t) {
  int64_t lo, hi;
  bool i32 = e->dtype == MLC_INT32;
  if (!affine_range(g, f, &lo, &hi) || (i32 && (lo < INT32_MIN || hi > INT32_MAX)))
    return mlc_error_set(g->err, "a constant of %s overflows its type at some size",
                         mlc_dtype_name(e->dtype));
  *e = *affine_expr(g, f, var_t, e->dtype);
  return true;
}

bool mlc_size_fit(const mlc_generalize_in *in, const int64_t *v, int64_t *off, int64_t *coef,
                  mlc_error *err) {
  int probe[MLC_MAX_SIZES];
  gen g = {NULL, in, probe, NULL, err};
  affine f;
  if (in->n_sizes < 1 || in->n_sizes > MLC_MAX_SIZES || !find_probes(&g)) return false;
  if (!fit(&g, v, &f)) return mlc_error_set(err, "no affine function of the sizes");
  *off = f.off;
  memcpy(coef, f.coef, sizeof(int64_t) * (size_t)in->n_sizes);
  return true;
}

mlc_prim_func *mlc_func_generalize(mlc_arena *a, const mlc_generalize_in *in, mlc_error *err) {
  if (in->n_inst < 2 || in->n_sizes < 1 || in->n_sizes > MLC_MAX_SIZES)
    return mlc_error_set(err, "generalizing takes 2 or more instances and 1 to %d sizes",
                         MLC_MAX_SIZES),
           NULL;
  gen g = {a, in, MLC_NEW_ARRAY(a, int, in->n_sizes), MLC_NEW_ARRAY(a, mlc_size_var, in->n_sizes), err};
  if (!find_probes(&g)) return NULL;
  mlc_prim_func *f = mlc_func_copy(a, in->insts[0]);
  if (f->n_sizes)
    return mlc_error_set(err, "%s already has size vars", f->name), NULL;
  int n = 0;
  mlc_int_slot *slots = NULL;
  mlc_str skel;
  mlc_func_int_slots(a, f, &skel, &n, &slots);
  int64_t **vals = MLC_NEW_ARRAY(a, int64_t *, in->n_inst);
  for (int i = 0; i < in->n_inst; i++) {
    mlc_int_slot *si = slots;
    int ni = n;
    if (i) {
      mlc_str sk;
      mlc_func_int_slots(a, in->insts[i], &sk, &ni, &si);
      if (sk.len != skel.len || memcmp(sk.data, skel.data, sk.len) != 0 || ni != n)
        return mlc_error_set(err, "%s is another loop nest at instance %d than at the bounds", f->name, i),
               NULL;
    }
    vals[i] = MLC_NEW_ARRAY(a, int64_t, n + 1);
    for (int j = 0; j < n; j++) vals[i][j] = slot_value(&si[j]);
  }
  affine *forms = MLC_NEW_ARRAY(a, affine, n + 1);
  int64_t *v = MLC_NEW_ARRAY(a, int64_t, in->n_inst);
  MLC_VEC(const void *) varying = {0};
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < in->n_inst; i++) v[i] = vals[i][j];
    if (slots[j].buf && is_static_param(&g, f, slots[j].buf)) continue; /* stays at the bound */
    if (!fit(&g, v, &forms[j]))
      return mlc_error_set(err, "%s: the constant %" PRId64 " (%s) is no affine function of the sizes",
                           f->name, v[0], slots[j].imm ? "in an expression" : slots[j].buf->name),
             NULL;
    if (forms[j].varies && slots[j].imm) MLC_VEC_APUSH(a, varying, slots[j].imm);
  }
  mlc_dtype var_t = vars_dtype(n, slots, forms);
  load_check lc = {&g, f, varying.data, (int)varying.len, NULL};
  if (lc.n_varying) qsort(lc.varying, (size_t)lc.n_varying, sizeof *lc.varying, cmp_ptr);
  if (mlc_stmt_any(f->body, stmt_has_sized_load, &lc))
    return mlc_error_set(err, "%s: %s, data kept at its bound, is indexed by the sizes", f->name,
                         lc.bad->name),
           NULL;
  for (int j = 0; j < n; j++) {
    if (!forms[j].varies) continue;
    bool ok = slots[j].imm ? set_imm(&g, (mlc_expr *)slots[j].imm, &forms[j], var_t)
                           : set_dim(&g, (mlc_buffer *)slots[j].buf, slots[j].dim, &forms[j], var_t);
    if (!ok) return mlc_error_prefix(err, "%s", f->name), NULL;
  }
  for (int k = 0; k < in->n_sizes; k++)
    if (g.vars[k].var) f->n_sizes++;
  f->sizes = MLC_NEW_ARRAY(a, mlc_size_var, f->n_sizes + 1);
  for (int k = 0, m = 0; k < in->n_sizes; k++)
    if (g.vars[k].var) f->sizes[m++] = g.vars[k];
  return f;
}
