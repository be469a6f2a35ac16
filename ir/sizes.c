/* Size vars: the run-time sizes of a function that serves many shapes.
 *
 * A size var is declared once per function with its bounds and appears as
 * a bare extent of some parameter (`A = T.match_buffer(a, (n, 128))`), so
 * the arguments' shapes give every size; other extents are expressions of
 * them (`(n + 1, 64)`). Both the interpreter and a compiled kernel's
 * caller read the sizes the same way, here.
 */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

mlc_expr *mlc_buffer_dim(mlc_arena *a, const mlc_buffer *b, int d) {
  if (b->dims) return b->dims[d];
  return mlc_int_t(a, b->shape[d] > INT32_MAX ? MLC_INT64 : MLC_INT32, b->shape[d]);
}

void mlc_size_default_bounds(mlc_dtype t, int64_t *lo, int64_t *hi) {
  *lo = 0;
  *hi = t == MLC_INT64 ? INT64_MAX : INT32_MAX;
}

static int size_index(const mlc_prim_func *f, const mlc_var *v) {
  for (int k = 0; k < f->n_sizes; k++)
    if (f->sizes[k].var == v) return k;
  return -1;
}

bool mlc_size_in_extent(const mlc_expr *dim, const mlc_var *v, int64_t *offset) {
  while (dim && dim->kind == MLC_EXPR_CAST) dim = dim->cast.value;
  if (!dim) return false;
  if (dim->kind == MLC_EXPR_VAR) {
    *offset = 0;
    return dim->var == v;
  }
  if (dim->kind != MLC_EXPR_ADD && dim->kind != MLC_EXPR_SUB) return false;
  const mlc_expr *x = dim->bin.a, *c = dim->bin.b;
  if (dim->kind == MLC_EXPR_ADD && x->kind == MLC_EXPR_INT_IMM) x = dim->bin.b, c = dim->bin.a;
  if (x->kind != MLC_EXPR_VAR || x->var != v || c->kind != MLC_EXPR_INT_IMM) return false;
  *offset = dim->kind == MLC_EXPR_ADD ? c->int_val : -c->int_val;
  return c->int_val != INT64_MIN;
}

bool mlc_func_size_given(const mlc_prim_func *f, const mlc_var *v) {
  int64_t off;
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    for (int d = 0; b && b->dims && d < b->ndim; d++)
      if (b->dims[d] && mlc_size_in_extent(b->dims[d], v, &off)) return true;
  }
  return false;
}

const mlc_size_var *mlc_func_size_var(const mlc_prim_func *f, const mlc_var *v) {
  int k = size_index(f, v);
  return k < 0 ? NULL : &f->sizes[k];
}

static int64_t floordiv64(int64_t x, int64_t y) {
  int64_t q = x / y;
  return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
}

/* e over constants and size vars (known[k]: sizes[k] is set). */
static bool eval_size_expr(const mlc_prim_func *f, const mlc_expr *e, const int64_t *sizes,
                           const bool *known, int64_t *v) {
  int64_t x, y;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: *v = e->int_val; return true;
  case MLC_EXPR_VAR: {
    int k = size_index(f, e->var);
    if (k < 0 || !known[k]) return false;
    *v = sizes[k];
    return true;
  }
  case MLC_EXPR_CAST: return eval_size_expr(f, e->cast.value, sizes, known, v);
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    if (!eval_size_expr(f, e->bin.a, sizes, known, &x) ||
        !eval_size_expr(f, e->bin.b, sizes, known, &y))
      return false;
    break;
  default: return false;
  }
  switch (e->kind) {
  case MLC_EXPR_ADD: return !__builtin_add_overflow(x, y, v);
  case MLC_EXPR_SUB: return !__builtin_sub_overflow(x, y, v);
  case MLC_EXPR_MUL: return !__builtin_mul_overflow(x, y, v);
  case MLC_EXPR_FLOORDIV:
    if (y == 0 || (x == INT64_MIN && y == -1)) return false;
    *v = floordiv64(x, y);
    return true;
  case MLC_EXPR_FLOORMOD:
    if (y == 0 || (x == INT64_MIN && y == -1)) return false;
    *v = x - floordiv64(x, y) * y;
    return true;
  case MLC_EXPR_MIN: *v = x < y ? x : y; return true;
  case MLC_EXPR_MAX: *v = x > y ? x : y; return true;
  default: return false;
  }
}

bool mlc_size_eval(const mlc_prim_func *f, const mlc_expr *e, const int64_t *sizes, int64_t *v) {
  bool known[MLC_MAX_SIZES];
  for (int k = 0; k < f->n_sizes && k < MLC_MAX_SIZES; k++) known[k] = true;
  return f->n_sizes <= MLC_MAX_SIZES && eval_size_expr(f, e, sizes, known, v);
}

bool mlc_func_bind_sizes(const mlc_prim_func *f, int n_args, const mlc_array *args,
                         int64_t *sizes, mlc_error *err) {
  if (f->n_sizes > MLC_MAX_SIZES)
    return mlc_error_set(err, "%s has %d size vars, at most %d are supported", f->name,
                         f->n_sizes, MLC_MAX_SIZES);
  if (n_args != f->n_params)
    return mlc_error_set(err, "%s takes %d arguments, got %d", f->name, f->n_params, n_args);
  bool known[MLC_MAX_SIZES] = {0};
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    if (!b->dims || args[i].ndim != b->ndim) continue;
    for (int d = 0; d < b->ndim; d++)
      for (int k = 0; k < f->n_sizes; k++) {
        int64_t off;
        if (known[k] || !mlc_size_in_extent(b->dims[d], f->sizes[k].var, &off)) continue;
        if (__builtin_sub_overflow(args[i].shape[d], off, &sizes[k]))
          return mlc_error_set(err, "argument %d (%s) has extent %" PRId64 " in dimension %d, "
                                    "out of range", i, b->name, args[i].shape[d], d);
        known[k] = true;
      }
  }
  for (int k = 0; k < f->n_sizes; k++) {
    const mlc_size_var *s = &f->sizes[k];
    if (!known[k])
      return mlc_error_set(err, "size %s of %s is no parameter's extent", s->var->name, f->name);
    if (sizes[k] < s->lo || sizes[k] > s->hi)
      return mlc_error_set(err, "size %s = %" PRId64 " is outside its bounds [%" PRId64
                                ", %" PRId64 "] in %s",
                           s->var->name, sizes[k], s->lo, s->hi, f->name);
  }
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    if (args[i].ndim != b->ndim)
      return mlc_error_set(err, "argument %d (%s) has %d dimensions, expected %d", i, b->name,
                           args[i].ndim, b->ndim);
    for (int d = 0; d < b->ndim; d++) {
      int64_t want = b->shape[d];
      if (b->dims && !eval_size_expr(f, b->dims[d], sizes, known, &want))
        return mlc_error_set(err, "extent %d of %s cannot be computed from the sizes", d, b->name);
      if (args[i].shape[d] != want)
        return mlc_error_set(err, "argument %d (%s) has extent %" PRId64 " in dimension %d, "
                                  "expected %" PRId64,
                             i, b->name, args[i].shape[d], d, want);
    }
  }
  return true;
}

/* ---- ranges ----------------------------------------------------------------------- */

static bool range_mul(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo,
                      int64_t *hi) {
  int64_t c[4];
  if (__builtin_mul_overflow(alo, blo, &c[0]) || __builtin_mul_overflow(alo, bhi, &c[1]) ||
      __builtin_mul_overflow(ahi, blo, &c[2]) || __builtin_mul_overflow(ahi, bhi, &c[3]))
    return false;
  *lo = *hi = c[0];
  for (int i = 1; i < 4; i++) {
    if (c[i] < *lo) *lo = c[i];
    if (c[i] > *hi) *hi = c[i];
  }
  return true;
}

bool mlc_size_range(int n, const mlc_size_var *sizes, const mlc_expr *e, int64_t *lo,
                    int64_t *hi) {
  int64_t alo, ahi, blo, bhi, k;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: *lo = *hi = e->int_val; return true;
  case MLC_EXPR_VAR:
    for (int i = 0; i < n; i++)
      if (sizes[i].var == e->var) {
        *lo = sizes[i].lo;
        *hi = sizes[i].hi;
        return true;
      }
    return false;
  case MLC_EXPR_CAST: return mlc_size_range(n, sizes, e->cast.value, lo, hi);
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    if (!mlc_size_range(n, sizes, e->bin.a, &alo, &ahi) ||
        !mlc_size_range(n, sizes, e->bin.b, &blo, &bhi))
      return false;
    break;
  default: return false;
  }
  switch (e->kind) {
  case MLC_EXPR_ADD:
    return !__builtin_add_overflow(alo, blo, lo) && !__builtin_add_overflow(ahi, bhi, hi);
  case MLC_EXPR_SUB:
    return !__builtin_sub_overflow(alo, bhi, lo) && !__builtin_sub_overflow(ahi, blo, hi);
  case MLC_EXPR_MUL: return range_mul(alo, ahi, blo, bhi, lo, hi);
  case MLC_EXPR_FLOORDIV: /* by a positive constant: monotonic */
    if (blo != bhi || (k = blo) <= 0) return false;
    *lo = floordiv64(alo, k);
    *hi = floordiv64(ahi, k);
    return true;
  case MLC_EXPR_FLOORMOD:
    if (blo != bhi || (k = blo) <= 0) return false;
    *lo = 0;
    *hi = k - 1;
    return true;
  case MLC_EXPR_MIN:
    *lo = alo < blo ? alo : blo;
    *hi = ahi < bhi ? ahi : bhi;
    return true;
  case MLC_EXPR_MAX:
    *lo = alo > blo ? alo : blo;
    *hi = ahi > bhi ? ahi : bhi;
    return true;
  default: return false;
  }
}

/* ---- specialization ---------------------------------------------------------------- */

typedef struct spec_ctx {
  const mlc_prim_func *f;
  const int64_t *sizes;
  bool ok;
  const mlc_buffer *bad;
} spec_ctx;

/* b's extents at the given sizes (b belongs to the copy: changed in place). */
static void spec_buffer(spec_ctx *s, mlc_buffer *b) {
  if (!b->dims) return;
  for (int d = 0; d < b->ndim; d++) {
    int64_t v;
    if (!mlc_size_eval(s->f, b->dims[d], s->sizes, &v) || v < 0) {
      if (s->ok) s->bad = b;
      s->ok = false;
      return;
    }
    b->shape[d] = v;
  }
  b->dims = NULL;
}

static void spec_allocs(const mlc_stmt *st, void *ud) {
  if (st->kind == MLC_STMT_ALLOCATE) spec_buffer(ud, st->alloc.buf);
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return;
  const mlc_block *b = st->realize.block;
  for (int i = 0; i < b->n_allocs; i++) spec_buffer(ud, b->allocs[i]);
}

static bool is_var(const mlc_expr *e, void *ud) {
  (void)ud;
  return e->kind == MLC_EXPR_VAR;
}

/* e as the constant it is once the sizes are in (64 + 1 -> 65), else e. */
static mlc_expr *fold(mlc_arena *a, const mlc_prim_func *g, mlc_expr *e) {
  int64_t v;
  if (!e || e->kind == MLC_EXPR_INT_IMM || !mlc_dtype_is_int(e->dtype) || mlc_expr_any(e, is_var, NULL) ||
      !mlc_size_eval(g, e, NULL, &v))
    return e;
  return mlc_int_t(a, e->dtype, v);
}

typedef struct fold_ctx {
  mlc_arena *a;
  const mlc_prim_func *g;
} fold_ctx;

static void fold_ranges(mlc_arena *a, const mlc_prim_func *g, int n, mlc_region *rs) {
  for (int i = 0; i < n; i++)
    for (int d = 0; d < rs[i].buf->ndim; d++) {
      rs[i].ranges[d].min = fold(a, g, rs[i].ranges[d].min);
      rs[i].ranges[d].extent = fold(a, g, rs[i].ranges[d].extent);
    }
}

/* Loop bounds, iter domains and regions constant again, as a static
 * function has them (the specialization owns every node it changes). */
static void fold_stmt(const mlc_stmt *st, void *ud) {
  fold_ctx *c = ud;
  mlc_stmt *s = (mlc_stmt *)st;
  if (s->kind == MLC_STMT_FOR) {
    s->loop.min = fold(c->a, c->g, s->loop.min);
    s->loop.extent = fold(c->a, c->g, s->loop.extent);
  }
  if (s->kind != MLC_STMT_BLOCK_REALIZE) return;
  mlc_block *b = s->realize.block;
  for (int i = 0; i < b->n_iters; i++) {
    b->iters[i].dom.min = fold(c->a, c->g, b->iters[i].dom.min);
    b->iters[i].dom.extent = fold(c->a, c->g, b->iters[i].dom.extent);
  }
  fold_ranges(c->a, c->g, b->n_reads, b->reads);
  fold_ranges(c->a, c->g, b->n_writes, b->writes);
}

mlc_prim_func *mlc_func_specialize(mlc_arena *a, const mlc_prim_func *f, const int64_t *sizes,
                                   mlc_error *err) {
  mlc_prim_func *g = mlc_func_copy(a, f);
  spec_ctx s = {g, sizes, true, NULL};
  mlc_var **vars = MLC_NEW_ARRAY(a, mlc_var *, g->n_sizes + 1);
  mlc_expr **vals = MLC_NEW_ARRAY(a, mlc_expr *, g->n_sizes + 1);
  for (int k = 0; k < g->n_sizes; k++) {
    vars[k] = g->sizes[k].var;
    vals[k] = mlc_int_t(a, vars[k]->dtype, sizes[k]);
  }
  for (int i = 0; i < g->n_params; i++) spec_buffer(&s, g->params[i]);
  mlc_stmt_visit(g->body, spec_allocs, &s);
  if (!s.ok)
    return mlc_error_set(err, "the extents of %s cannot be computed at these sizes", s.bad->name),
           NULL;
  g->body = mlc_stmt_subst(a, g->body, g->n_sizes, vars, vals);
  g->n_sizes = 0;
  g->sizes = NULL;
  fold_ctx fc = {a, g};
  mlc_stmt_visit(g->body, fold_stmt, &fc);
  return g;
}

bool mlc_buffer_extents(const mlc_prim_func *f, const mlc_buffer *b, const int64_t *sizes,
                        int64_t *shape) {
  for (int d = 0; d < b->ndim; d++) {
    shape[d] = b->shape[d];
    if (b->dims && (!mlc_size_eval(f, b->dims[d], sizes, &shape[d]) || shape[d] < 0)) return false;
  }
  return true;
}

int mlc_size_samples(const mlc_size_var *sv, int64_t *vals) {
  int64_t lo, hi;
  mlc_size_default_bounds(sv->var->dtype, &lo, &hi);
  if (sv->hi == hi) return 0;
  const int64_t want[4] = {sv->lo > 1 ? sv->lo : 1, 16, 128, sv->hi};
  int n = 0;
  for (int i = 0; i < 4; i++) {
    int64_t v = want[i] < sv->lo ? sv->lo : want[i] > sv->hi ? sv->hi : want[i];
    if (n == 0 || v > vals[n - 1]) vals[n++] = v;
  }
  return n;
}

/* ---- size lists from the command line ------------------------------------------------ */

int mlc_size_values(int n_specs, const char *const *specs, const char *name, int64_t *vals,
                    int max_vals, mlc_error *err) {
  size_t len = strlen(name);
  for (int i = 0; i < n_specs; i++) {
    const char *s = specs[i];
    if (strncmp(s, name, len) != 0 || s[len] != '=') continue;
    int n = 0;
    for (const char *p = s + len + 1;; p++) {
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end == p || (*end && *end != ','))
        return mlc_error_set(err, "size %s: expected integers separated by commas", s), -1;
      if (n == max_vals) return mlc_error_set(err, "size %s: at most %d values", s, max_vals), -1;
      vals[n++] = v;
      p = end;
      if (!*p) break;
    }
    return n;
  }
  return 0;
}

/* ---- variants by size -------------------------------------------------------------- */

typedef struct rename_ctx {
  mlc_arena *a;
  const char *tag;
} rename_ctx;

static void rename_block(const mlc_stmt *st, void *ud) {
  rename_ctx *c = ud;
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return;
  mlc_block *b = st->realize.block; /* the copy's own */
  b->name = mlc_arena_printf(c->a, "%s_%s", b->name, c->tag);
}

mlc_prim_func *mlc_func_select_by_size(mlc_arena *a, const mlc_prim_func *f, int n,
                                       const mlc_prim_func *const *variants, const int64_t *upto,
                                       const char *const *tags, mlc_error *err) {
  if (f->n_sizes != 1 || n < 1)
    return mlc_error_set(err, "%s: variants by size need one size var and a variant", f->name),
           NULL;
  mlc_prim_func *g = mlc_func_copy(a, f);
  int np = g->n_params;
  const void **from = MLC_NEW_ARRAY(a, const void *, np + 1);
  void **to = MLC_NEW_ARRAY(a, void *, np + 1);
  mlc_stmt *chain = NULL;
  MLC_VEC(mlc_buffer *) allocs = {0};
  for (int i = n - 1; i >= 0; i--) {
    const mlc_prim_func *v = variants[i];
    if (v->n_params != np || v->n_sizes != 1)
      return mlc_error_set(err, "%s: variant %d has other parameters or sizes", f->name, i), NULL;
    for (int j = 0; j < np; j++) from[j] = v->params[j], to[j] = g->params[j];
    from[np] = v->sizes[0].var;
    to[np] = g->sizes[0].var;
    mlc_stmt *copy = mlc_stmt_copy_mapped(a, v->body, np + 1, from, to);
    rename_ctx rc = {a, tags[i]};
    mlc_stmt_visit(copy, rename_block, &rc);
    /* The variant's root block dissolves into the new one: its body
     * under the branch, its allocations the new root's. */
    if (copy->kind != MLC_STMT_BLOCK_REALIZE || copy->realize.block->init)
      return mlc_error_set(err, "%s: variant %d's body is no root block without init", f->name, i),
             NULL;
    mlc_block *vroot = copy->realize.block;
    for (int k = 0; k < vroot->n_allocs; k++) MLC_VEC_APUSH(a, allocs, vroot->allocs[k]);
    mlc_stmt *body = vroot->body;
    if (!chain) {
      chain = body;
      continue;
    }
    mlc_var *sv = g->sizes[0].var;
    mlc_expr *in = mlc_binary(a, MLC_EXPR_LE, mlc_ref(a, sv), mlc_int_t(a, sv->dtype, upto[i]));
    chain = mlc_if_new(a, in, body, chain);
  }
  mlc_block *root = mlc_block_new(a, "root");
  root->body = chain;
  root->n_allocs = allocs.len;
  root->allocs = allocs.data;
  g->body = mlc_realize_new(a, root, NULL, NULL);
  return g;
}
