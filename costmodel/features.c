/* Per-store features of a lowered program (FEATURES.md has every one).
 *
 * One walk over the lowered loops keeps the stack of enclosing loops; at
 * each buffer store it takes the store's loop nest (loops of extent > 1 not
 * pinned to one value by an `if v == c` guard, as lowered reduction inits
 * are), decomposes every access index into an affine form over that nest,
 * and computes the five groups of meta-schedule's per-store features:
 * arithmetic and loop kinds (group 1), buffer accesses (group 2),
 * arithmetic intensity curve (group 3), allocation (group 4), loop nest
 * (group 5). Buffers are flat after lowering, so the regions meta-schedule
 * derives per dimension are derived here from the affine coefficients.
 */
#include "costmodel/costmodel_internal.h"
#include "targets/targets.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_LINE 64
#define MAX_IDX 8    /* index expressions kept per buffer of one store */
#define N_CURVE 10   /* arithmetic intensity samples */
#define MAX_TERMS 64 /* loops of one nest that footprints look at */

/* Feature layout: offsets of the groups (FEATURES.md). */
enum {
  F_ARITH = 0,                    /* 16 arithmetic counts */
  F_VEC = 16,                     /* 11 each: vectorize, unroll, parallel */
  F_UNROLL = 27,
  F_PARALLEL = 38,
  F_GPU = 49,                     /* is_gpu + 7 thread extents */
  F_BUF = 57,                     /* 5 buffers x 18 */
  F_BUF_DIM = 18,
  F_CURVE = F_BUF + MLC_FEATURE_MAX_BUFFERS * F_BUF_DIM, /* 147 */
  F_ALLOC = F_CURVE + N_CURVE,    /* 157: 4 */
  F_NEST = F_ALLOC + 4,           /* 161: 3 */
  F_END = F_NEST + 3,
};
_Static_assert(F_END == MLC_FEATURE_DIM, "feature layout and MLC_FEATURE_DIM disagree");

static double slog(double x) { return x >= 0 ? log2(x + 1) : log2(-x + 1); }

/* ---- names ------------------------------------------------------------------ */

static const char *const arith_names[16] = {
    "float_mad", "float_add_sub", "float_mul",     "float_div_mod",  "float_cmp",
    "float_math_func", "float_other_func", "int_mad", "int_add_sub",  "int_mul",
    "int_div_mod", "int_cmp", "int_math_func", "int_other_func", "bool_op", "select_op"};
static const char *const kind_names[11] = {"num", "prod", "len", "pos_none", "pos_inner_spatial",
                                           "pos_middle_spatial", "pos_outer_spatial",
                                           "pos_inner_reduce", "pos_middle_reduce",
                                           "pos_outer_reduce", "pos_mixed"};
static const char *const gpu_names[8] = {"is_gpu", "blockIdx_x_len", "blockIdx_y_len",
                                         "blockIdx_z_len", "threadIdx_x_len", "threadIdx_y_len",
                                         "threadIdx_z_len", "vthread_len"};
static const char *const buf_names[F_BUF_DIM] = {
    "acc_read", "acc_write", "acc_readwrite", "bytes", "unique_bytes", "lines", "unique_lines",
    "reuse_loop_multiple_read", "reuse_serial_multiple_read_write", "reuse_none",
    "reuse_dis_iter", "reuse_dis_bytes", "reuse_ct", "bytes_d_reuse_ct",
    "unique_bytes_d_reuse_ct", "lines_d_reuse_ct", "unique_lines_d_reuse_ct", "stride"};
static const char *const tail_names[7] = {"alloc_size", "alloc_prod", "alloc_outer_prod",
                                          "alloc_inner_prod", "outer_prod", "num_loops",
                                          "auto_unroll_max_step"};

static char name_table[MLC_FEATURE_DIM][40];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void) {
  static const char *const kinds[3] = {"vec", "unroll", "parallel"};
  int i = 0;
  for (int k = 0; k < 16; k++) snprintf(name_table[i++], 40, "%s", arith_names[k]);
  for (int g = 0; g < 3; g++)
    for (int k = 0; k < 11; k++) snprintf(name_table[i++], 40, "%s_%s", kinds[g], kind_names[k]);
  for (int k = 0; k < 8; k++) snprintf(name_table[i++], 40, "%s", gpu_names[k]);
  for (int b = 0; b < MLC_FEATURE_MAX_BUFFERS; b++)
    for (int k = 0; k < F_BUF_DIM; k++) snprintf(name_table[i++], 40, "b%d_%s", b, buf_names[k]);
  for (int k = 0; k < N_CURVE; k++) snprintf(name_table[i++], 40, "ai_curve_%d", k);
  for (int k = 0; k < 7; k++) snprintf(name_table[i++], 40, "%s", tail_names[k]);
  MLC_ASSERT(i == MLC_FEATURE_DIM);
}

const char *mlc_feature_name(int i) {
  if (i < 0 || i >= MLC_FEATURE_DIM) return NULL;
  pthread_once(&names_once, build_names);
  return name_table[i];
}

int mlc_feature_index(const char *name) {
  for (int i = 0; i < MLC_FEATURE_DIM; i++)
    if (strcmp(mlc_feature_name(i), name) == 0) return i;
  return -1;
}

/* ---- walk state ------------------------------------------------------------------ */

typedef struct loop_info {
  const mlc_stmt *stmt;
  const mlc_var *var;
  int64_t extent; /* 1 when not constant */
  mlc_for_kind kind;
  const char *thread;
  int64_t auto_unroll; /* pragma_auto_unroll_max_step, 0 if absent */
} loop_info;

/* What earlier stores touched under a loop (meta-schedule's
 * buffer_touched_under_loop): serial reuse across stores. */
typedef struct touch_entry {
  const mlc_stmt *loop;
  const mlc_buffer *buf;
  int count;
  int64_t sum, min;
} touch_entry;

typedef struct alloc_info {
  const mlc_buffer *buf;
  int64_t numel, bytes, outer_prod;
  int depth; /* loops enclosing the allocation */
} alloc_info;

typedef struct walker {
  MLC_VEC(loop_info) loops;
  MLC_VEC(const mlc_var *) pinned;
  MLC_VEC(touch_entry) touched;
  MLC_VEC(alloc_info) allocs;
  MLC_VEC(float) rows;
  int n_stores;
} walker;

/* One buffer of a store: its index expressions as affine forms over the
 * store's nest (coef[j * n + k]: coefficient of loop k in index j). */
typedef struct access {
  const mlc_buffer *buf;
  int kind; /* bit 0 read, bit 1 write */
  int n_idx;
  int64_t *coef;
  int64_t c0[MAX_IDX];
  int64_t *numel; /* per loop level (relaxing loops level..n-1) */
  /* results */
  double bytes, unique_bytes, lines, unique_lines, reuse_dis_iter, reuse_dis_bytes, reuse_ct;
  int64_t min_stride, innermost_stride, prod_non_strided, cont_bytes;
  int reuse_type; /* 0 loop multiple read, 1 serial multiple read/write, 2 none */
} access;

typedef struct store_ctx {
  int n;                 /* loops in the nest */
  const loop_info **nest; /* outer to inner */
  bool *spatial;         /* per nest loop: moves the stored element, or runs
                          * outside the stored buffer's allocation */
  int64_t prod;
  access acc[32];
  int n_acc;
  double arith[16];
} store_ctx;

/* ---- affine decomposition --------------------------------------------------- */

static int nest_index(const store_ctx *c, const mlc_var *v) {
  for (int k = 0; k < c->n; k++)
    if (c->nest[k]->var == v) return k;
  return -1;
}

/* coef[k] += mult * (coefficient of loop k in e); *c0 likewise. Vars not in
 * the nest (unit or pinned loops) count as constants 0. False when e is not
 * affine. */
static bool affine(const store_ctx *c, const mlc_expr *e, int64_t mult, int64_t *coef,
                   int64_t *c0) {
  int64_t v;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: *c0 += mult * e->int_val; return true;
  case MLC_EXPR_VAR: {
    int k = nest_index(c, e->var);
    if (k >= 0) coef[k] += mult;
    return true;
  }
  case MLC_EXPR_ADD:
    return affine(c, e->bin.a, mult, coef, c0) && affine(c, e->bin.b, mult, coef, c0);
  case MLC_EXPR_SUB:
    return affine(c, e->bin.a, mult, coef, c0) && affine(c, e->bin.b, -mult, coef, c0);
  case MLC_EXPR_MUL:
    if (mlc_expr_is_const_int(e->bin.b, &v)) return affine(c, e->bin.a, mult * v, coef, c0);
    if (mlc_expr_is_const_int(e->bin.a, &v)) return affine(c, e->bin.b, mult * v, coef, c0);
    return false;
  case MLC_EXPR_CAST: return affine(c, e->cast.value, mult, coef, c0);
  case MLC_EXPR_FLOAT_IMM: case MLC_EXPR_DIV: case MLC_EXPR_FLOORDIV: case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN: case MLC_EXPR_MAX: case MLC_EXPR_EQ: case MLC_EXPR_NE: case MLC_EXPR_LT:
  case MLC_EXPR_LE: case MLC_EXPR_GT: case MLC_EXPR_GE: case MLC_EXPR_AND: case MLC_EXPR_OR:
  case MLC_EXPR_NOT: case MLC_EXPR_SELECT: case MLC_EXPR_IF_THEN_ELSE: case MLC_EXPR_LOAD:
  case MLC_EXPR_CALL: case MLC_EXPR_CALL_EXTERN:
    return false;
  }
  mlc_unreachable();
}

/* Non-affine index: every nest var it uses gets coefficient 1 (a guess that
 * keeps "does this loop move the access" right). */
static void mark_vars(const store_ctx *c, const mlc_expr *e, int64_t *coef) {
  switch (e->kind) {
  case MLC_EXPR_VAR: {
    int k = nest_index(c, e->var);
    if (k >= 0) coef[k] = 1;
    return;
  }
  case MLC_EXPR_INT_IMM: case MLC_EXPR_FLOAT_IMM: return;
  case MLC_EXPR_ADD: case MLC_EXPR_SUB: case MLC_EXPR_MUL: case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV: case MLC_EXPR_FLOORMOD: case MLC_EXPR_MIN: case MLC_EXPR_MAX:
  case MLC_EXPR_EQ: case MLC_EXPR_NE: case MLC_EXPR_LT: case MLC_EXPR_LE: case MLC_EXPR_GT:
  case MLC_EXPR_GE: case MLC_EXPR_AND: case MLC_EXPR_OR:
    mark_vars(c, e->bin.a, coef);
    mark_vars(c, e->bin.b, coef);
    return;
  case MLC_EXPR_NOT: mark_vars(c, e->bin.a, coef); return;
  case MLC_EXPR_SELECT: case MLC_EXPR_IF_THEN_ELSE:
    mark_vars(c, e->sel.cond, coef);
    mark_vars(c, e->sel.t, coef);
    mark_vars(c, e->sel.f, coef);
    return;
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++) mark_vars(c, e->load.indices[i], coef);
    return;
  case MLC_EXPR_CAST: mark_vars(c, e->cast.value, coef); return;
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) mark_vars(c, e->call.args[i], coef);
    return;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++) mark_vars(c, e->ext.kids[i], coef);
    return;
  }
  mlc_unreachable();
}

/* ---- collecting accesses ------------------------------------------------------ */

static access *access_of(store_ctx *c, const mlc_buffer *b) {
  for (int i = 0; i < c->n_acc; i++)
    if (c->acc[i].buf == b) return &c->acc[i];
  if (c->n_acc == MLC_COUNTOF(c->acc)) return NULL;
  access *a = &c->acc[c->n_acc++];
  memset(a, 0, sizeof *a);
  a->buf = b;
  a->coef = mlc_xmalloc(sizeof(int64_t) * (size_t)(MAX_IDX * (c->n ? c->n : 1)));
  a->numel = mlc_xmalloc(sizeof(int64_t) * (size_t)(c->n ? c->n : 1));
  return a;
}

/* Flattened buffers have one index; a multi-dimensional one (not lowered)
 * is linearized row-major. */
static void add_access(store_ctx *c, const mlc_buffer *b, mlc_expr *const *indices, int kind) {
  access *a = access_of(c, b);
  if (!a) return;
  a->kind |= kind;
  if (a->n_idx == MAX_IDX) return;
  int j = a->n_idx;
  int64_t *coef = a->coef + (size_t)j * (size_t)c->n;
  int64_t c0 = 0, stride = 1;
  bool ok = true;
  for (int d = b->ndim - 1; d >= 0; d--) {
    ok = ok && affine(c, indices[d], stride, coef, &c0);
    stride *= b->shape[d];
  }
  if (!ok) {
    memset(coef, 0, sizeof(int64_t) * (size_t)c->n);
    c0 = 0;
    for (int d = 0; d < b->ndim; d++) mark_vars(c, indices[d], coef);
  }
  /* Same coefficients as an earlier index: only the offset differs. */
  a->c0[j] = c0;
  a->n_idx++;
}

static void collect_loads(store_ctx *c, const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: case MLC_EXPR_FLOAT_IMM: case MLC_EXPR_VAR: return;
  case MLC_EXPR_ADD: case MLC_EXPR_SUB: case MLC_EXPR_MUL: case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV: case MLC_EXPR_FLOORMOD: case MLC_EXPR_MIN: case MLC_EXPR_MAX:
  case MLC_EXPR_EQ: case MLC_EXPR_NE: case MLC_EXPR_LT: case MLC_EXPR_LE: case MLC_EXPR_GT:
  case MLC_EXPR_GE: case MLC_EXPR_AND: case MLC_EXPR_OR:
    collect_loads(c, e->bin.a);
    collect_loads(c, e->bin.b);
    return;
  case MLC_EXPR_NOT: collect_loads(c, e->bin.a); return;
  case MLC_EXPR_SELECT: case MLC_EXPR_IF_THEN_ELSE:
    collect_loads(c, e->sel.cond);
    collect_loads(c, e->sel.t);
    collect_loads(c, e->sel.f);
    return;
  case MLC_EXPR_LOAD:
    add_access(c, e->load.buf, e->load.indices, 1);
    for (int i = 0; i < e->load.buf->ndim; i++) collect_loads(c, e->load.indices[i]);
    return;
  case MLC_EXPR_CAST: collect_loads(c, e->cast.value); return;
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) collect_loads(c, e->call.args[i]);
    return;
  case MLC_EXPR_CALL_EXTERN: /* the pointed-at regions are not modelled */
    for (int i = 0; i < e->ext.n_kids; i++) collect_loads(c, e->ext.kids[i]);
    return;
  }
  mlc_unreachable();
}

/* ---- arithmetic counts ------------------------------------------------------------- */

enum { A_MAD, A_ADD_SUB, A_MUL, A_DIV_MOD, A_CMP, A_MATH, A_OTHER }; /* + 7 for int */
enum { A_BOOL = 14, A_SELECT = 15 };

static bool is_math_intrin(mlc_intrin op) {
  switch (op) {
  case MLC_INTRIN_EXP: case MLC_INTRIN_LOG: case MLC_INTRIN_SQRT: case MLC_INTRIN_RSQRT:
  case MLC_INTRIN_TANH: case MLC_INTRIN_SIGMOID: case MLC_INTRIN_ERF: case MLC_INTRIN_POW:
  case MLC_INTRIN_SIN: case MLC_INTRIN_COS: case MLC_INTRIN_TAN: case MLC_INTRIN_ASIN:
  case MLC_INTRIN_ACOS: case MLC_INTRIN_ATAN: case MLC_INTRIN_SINH: case MLC_INTRIN_COSH:
  case MLC_INTRIN_ASINH: case MLC_INTRIN_ACOSH: case MLC_INTRIN_ATANH:
    return true;
  case MLC_INTRIN_ABS: case MLC_INTRIN_FLOOR: case MLC_INTRIN_CEIL: case MLC_INTRIN_ROUND:
    return false;
  }
  mlc_unreachable();
}

static void count_ops(double *ops, const mlc_expr *e, double w);

static void count_binary(double *ops, const mlc_expr *e, int slot, double w) {
  int base = mlc_dtype_is_float(e->bin.a->dtype) ? 0 : 7;
  ops[base + slot] += w;
  count_ops(ops, e->bin.a, w);
  count_ops(ops, e->bin.b, w);
}

/* Every operation of e counted w times; a + b * c counts as one
 * multiply-add, as the CPU's FMA does it. */
static void count_ops(double *ops, const mlc_expr *e, double w) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: case MLC_EXPR_FLOAT_IMM: case MLC_EXPR_VAR: return;
  case MLC_EXPR_ADD: {
    const mlc_expr *m = e->bin.b->kind == MLC_EXPR_MUL ? e->bin.b
                        : e->bin.a->kind == MLC_EXPR_MUL ? e->bin.a : NULL;
    if (m) {
      const mlc_expr *other = m == e->bin.b ? e->bin.a : e->bin.b;
      ops[(mlc_dtype_is_float(e->dtype) ? 0 : 7) + A_MAD] += w;
      count_ops(ops, m->bin.a, w);
      count_ops(ops, m->bin.b, w);
      count_ops(ops, other, w);
      return;
    }
    count_binary(ops, e, A_ADD_SUB, w);
    return;
  }
  case MLC_EXPR_SUB: count_binary(ops, e, A_ADD_SUB, w); return;
  case MLC_EXPR_MUL: count_binary(ops, e, A_MUL, w); return;
  case MLC_EXPR_DIV: case MLC_EXPR_FLOORDIV: case MLC_EXPR_FLOORMOD:
    count_binary(ops, e, A_DIV_MOD, w);
    return;
  case MLC_EXPR_MIN: case MLC_EXPR_MAX: case MLC_EXPR_EQ: case MLC_EXPR_NE: case MLC_EXPR_LT:
  case MLC_EXPR_LE: case MLC_EXPR_GT: case MLC_EXPR_GE:
    count_binary(ops, e, A_CMP, w);
    return;
  case MLC_EXPR_AND: case MLC_EXPR_OR:
    ops[A_BOOL] += w;
    count_ops(ops, e->bin.a, w);
    count_ops(ops, e->bin.b, w);
    return;
  case MLC_EXPR_NOT: ops[A_BOOL] += w; count_ops(ops, e->bin.a, w); return;
  case MLC_EXPR_SELECT: case MLC_EXPR_IF_THEN_ELSE:
    ops[A_SELECT] += w;
    count_ops(ops, e->sel.cond, w);
    count_ops(ops, e->sel.t, w);
    count_ops(ops, e->sel.f, w);
    return;
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++) count_ops(ops, e->load.indices[i], w);
    return;
  case MLC_EXPR_CAST: count_ops(ops, e->cast.value, w); return;
  case MLC_EXPR_CALL: {
    int base = mlc_dtype_is_float(e->dtype) ? 0 : 7;
    ops[base + (is_math_intrin(e->call.op) ? A_MATH : A_OTHER)] += w;
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) count_ops(ops, e->call.args[i], w);
    return;
  }
  case MLC_EXPR_CALL_EXTERN:
    ops[(mlc_dtype_is_float(e->dtype) ? 0 : 7) + A_OTHER] += w;
    for (int i = 0; i < e->ext.n_kids; i++) count_ops(ops, e->ext.kids[i], w);
    return;
  }
  mlc_unreachable();
}

/* ---- footprints ------------------------------------------------------------------- */

typedef struct term {
  int64_t c, e;
} term;

static int cmp_term(const void *x, const void *y) {
  int64_t a = ((const term *)x)->c, b = ((const term *)y)->c;
  return (a > b) - (a < b);
}

/* Terms |coef| x extent of the loops from `level` inward that move the
 * index, sorted by coefficient. */
static int relaxed_terms(const store_ctx *c, const int64_t *coef, int level, term *t) {
  int n = 0;
  for (int k = level; k < c->n && n < MAX_TERMS; k++)
    if (coef[k] != 0) t[n++] = (term){coef[k] < 0 ? -coef[k] : coef[k], c->nest[k]->extent};
  qsort(t, (size_t)n, sizeof *t, cmp_term);
  return n;
}

/* Distinct elements sum_k c_k * x_k takes for x_k in [0, e_k): exact when
 * each coefficient is at least the span of the smaller terms (tiles) or
 * when smaller terms overlap contiguously (convolution windows); else an
 * upper bound. */
static int64_t footprint(const store_ctx *c, const int64_t *coef, int level) {
  term t[MAX_TERMS];
  int n = relaxed_terms(c, coef, level, t);
  double count = 1, span = 1;
  for (int i = 0; i < n; i++) {
    double ns = (double)t[i].c * (double)(t[i].e - 1) + span;
    count = t[i].c >= span ? count * (double)t[i].e : fmin(count * (double)t[i].e, ns);
    span = ns;
  }
  return count > 9e18 ? (int64_t)9e18 : (int64_t)count;
}

/* Elements of the buffer the store's accesses touch while loops
 * level..n-1 run (meta-schedule's relaxed region, united over accesses). */
static int64_t access_numel(const store_ctx *c, const access *a, int level) {
  int64_t best = 0, sum = 0, lo = a->c0[0], hi = a->c0[0];
  bool same = true;
  for (int j = 0; j < a->n_idx; j++) {
    const int64_t *cj = a->coef + (size_t)j * (size_t)c->n;
    int64_t f = footprint(c, cj, level);
    best = f > best ? f : best;
    sum += f;
    if (memcmp(cj, a->coef, sizeof(int64_t) * (size_t)c->n) != 0) same = false;
    lo = a->c0[j] < lo ? a->c0[j] : lo;
    hi = a->c0[j] > hi ? a->c0[j] : hi;
  }
  int64_t u = same ? best + (hi - lo) : sum;
  if (u > sum) u = sum;
  int64_t cap = mlc_buffer_numel(a->buf);
  return u < cap ? u : cap;
}

/* ---- group 2 ------------------------------------------------------------------------ */

static touch_entry *touch_of(walker *w, const mlc_stmt *loop, const mlc_buffer *b) {
  for (int i = 0; i < w->touched.len; i++)
    if (w->touched.data[i].loop == loop && w->touched.data[i].buf == b) return &w->touched.data[i];
  touch_entry e = {loop, b, 0, 0, INT64_MAX};
  MLC_VEC_PUSH(w->touched, e);
  return &w->touched.data[w->touched.len - 1];
}

/* Bytes touched under `loop` by all stores so far. */
static double touched_bytes_under(const walker *w, const mlc_stmt *loop) {
  double s = 0;
  for (int i = 0; i < w->touched.len; i++)
    if (w->touched.data[i].loop == loop)
      s += (double)w->touched.data[i].sum * mlc_dtype_bytes(w->touched.data[i].buf->dtype);
  return s;
}

static void set_regions(walker *w, store_ctx *c, double *for_touched_bytes) {
  for (int i = c->n - 1; i >= 0; i--) {
    for_touched_bytes[i] = 0;
    for (int b = 0; b < c->n_acc; b++) {
      access *a = &c->acc[b];
      int64_t numel = access_numel(c, a, i);
      a->numel[i] = numel;
      for_touched_bytes[i] += (double)numel * mlc_dtype_bytes(a->buf->dtype);
      touch_entry *t = touch_of(w, c->nest[i]->stmt, a->buf);
      t->count++;
      t->sum += numel;
      t->min = numel < t->min ? numel : t->min;
    }
  }
}

static bool loop_moves(const store_ctx *c, const access *a, int k) {
  for (int j = 0; j < a->n_idx; j++)
    if (a->coef[(size_t)j * (size_t)c->n + (size_t)k] != 0) return true;
  return false;
}

static void set_stride(const store_ctx *c, access *a) {
  int k;
  a->min_stride = 0;
  for (k = c->n - 1; k >= 0; k--) {
    int64_t best = INT64_MAX;
    for (int j = 0; j < a->n_idx; j++) {
      int64_t v = a->coef[(size_t)j * (size_t)c->n + (size_t)k];
      v = v < 0 ? -v : v;
      if (v != 0 && v < best) best = v;
    }
    if (best != INT64_MAX) {
      a->min_stride = best;
      break;
    }
  }
  a->innermost_stride = (k == c->n - 1 && k >= 0) ? a->min_stride : 0;
  a->prod_non_strided = 1;
  for (int j = c->n - 1; j > k; j--) a->prod_non_strided *= c->nest[j]->extent;
  /* Contiguous run of the first index with every loop running. */
  term t[MAX_TERMS];
  int n = relaxed_terms(c, a->coef, 0, t);
  int64_t run = 1;
  for (int i = 0; i < n && t[i].c == run; i++) run *= t[i].e;
  a->cont_bytes = run * mlc_dtype_bytes(a->buf->dtype);
}

/* Loops enclosing b's allocation (0 for parameters). */
static int alloc_depth(const walker *w, const mlc_buffer *b) {
  for (int i = w->allocs.len - 1; i >= 0; i--)
    if (w->allocs.data[i].buf == b) return w->allocs.data[i].depth;
  return 0;
}

/* A loop outside the buffer's allocation gets a fresh buffer per
 * iteration: no reuse across it, as if it moved the access. */
static void set_reuse(const walker *w, const store_ctx *c, access *a, double one_iter_bytes) {
  a->reuse_type = 2;
  a->reuse_dis_iter = a->reuse_dis_bytes = a->reuse_ct = 0;
  int depth = alloc_depth(w, a->buf);
  for (int i = c->n - 1; i >= 0; i--) {
    const loop_info *L = c->nest[i];
    if (!loop_moves(c, a, i) && (int)(L - w->loops.data) >= depth) {
      a->reuse_type = 0;
      a->reuse_ct = (double)L->extent;
      a->reuse_dis_iter = 1;
      for (int j = c->n - 1; j > i; j--) a->reuse_dis_iter *= (double)c->nest[j]->extent;
      a->reuse_dis_bytes =
          i == c->n - 1 ? one_iter_bytes : touched_bytes_under(w, c->nest[i + 1]->stmt);
      return;
    }
    const touch_entry *t = NULL;
    for (int k = 0; k < w->touched.len; k++)
      if (w->touched.data[k].loop == L->stmt && w->touched.data[k].buf == a->buf)
        t = &w->touched.data[k];
    if (t && t->count >= 2) {
      a->reuse_type = 1;
      a->reuse_ct = t->count - 1;
      a->reuse_dis_iter = (double)t->min / (double)L->extent;
      a->reuse_dis_bytes = touched_bytes_under(w, L->stmt) / (double)L->extent;
      return;
    }
  }
}

static void set_access_values(const store_ctx *c, access *a) {
  double eb = mlc_dtype_bytes(a->buf->dtype);
  a->bytes = eb * (double)c->prod;
  if (c->n == 0) {
    a->unique_bytes = a->lines = a->unique_lines = 1;
    return;
  }
  a->unique_bytes = (double)a->numel[0] * eb;
  a->lines = (double)c->prod / (double)a->prod_non_strided *
             fmin(1.0, (double)a->min_stride * eb / CACHE_LINE);
  a->lines = fmax(1.0, a->lines);
  a->unique_lines = a->unique_bytes / fmin(CACHE_LINE, (double)a->cont_bytes);
  a->unique_lines = fmax(1.0, a->unique_lines);
}

static int cmp_access(const void *x, const void *y) {
  const access *a = x, *b = y;
  if (a->lines != b->lines) return a->lines > b->lines ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  return strcmp(a->buf->name, b->buf->name);
}

static void export_access(const access *a, float *f) {
  double proxy = a->reuse_ct > 0 ? a->reuse_ct : 0.5;
  f[0] = a->kind == 1;
  f[1] = a->kind == 2;
  f[2] = a->kind == 3;
  f[3] = (float)slog(a->bytes);
  f[4] = (float)slog(a->unique_bytes);
  f[5] = (float)slog(a->lines);
  f[6] = (float)slog(a->unique_lines);
  f[7] = a->reuse_type == 0;
  f[8] = a->reuse_type == 1;
  f[9] = a->reuse_type == 2;
  f[10] = (float)slog(a->reuse_dis_iter);
  f[11] = (float)slog(a->reuse_dis_bytes);
  f[12] = (float)slog(a->reuse_ct);
  f[13] = (float)slog(a->bytes / proxy);
  f[14] = (float)slog(a->unique_bytes / proxy);
  f[15] = (float)slog(a->lines / proxy);
  f[16] = (float)slog(a->unique_lines / proxy);
  f[17] = (float)slog((double)a->innermost_stride);
}

/* ---- group 1: loop kinds --------------------------------------------------------- */

/* Loops of one kind: count, product, innermost length, and where the
 * innermost one sits among the spatial (moves the stored element) or
 * reduce (does not) loops of the nest. */
static void export_kind(const store_ctx *c, mlc_for_kind kind, float *f) {
  int num = 0, inner = -1;
  double prod = 1;
  bool spatial_seen = false, reduce_seen = false;
  for (int k = 0; k < c->n; k++) {
    if (c->nest[k]->kind != kind) continue;
    num++;
    prod *= (double)c->nest[k]->extent;
    inner = k;
    if (c->spatial[k]) spatial_seen = true;
    else reduce_seen = true;
  }
  memset(f, 0, sizeof(float) * 11);
  f[0] = (float)slog(num);
  f[1] = (float)slog(num ? prod : 0);
  f[2] = (float)slog(num ? (double)c->nest[inner]->extent : 0);
  int pos = 0;
  if (num && spatial_seen && reduce_seen) {
    pos = 7;
  } else if (num) {
    bool sp = spatial_seen;
    int first = -1, last = -1;
    for (int k = 0; k < c->n; k++) {
      if (c->spatial[k] != sp) continue;
      if (first < 0) first = k;
      last = k;
    }
    int rel = inner == last ? 0 : inner == first ? 2 : 1; /* inner, outer, middle */
    pos = (sp ? 1 : 4) + rel;
  }
  f[3 + pos] = 1;
}

static void export_gpu(const walker *w, float *f) {
  static const char *const tags[7] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                      "threadIdx.y", "threadIdx.z", "vthread"};
  memset(f, 0, sizeof(float) * 8);
  for (int i = 0; i < w->loops.len; i++) {
    const loop_info *L = &w->loops.data[i];
    if (L->kind != MLC_FOR_THREAD_BINDING || !L->thread) continue;
    f[0] = 1;
    for (int t = 0; t < 7; t++)
      if (strncmp(L->thread, tags[t], strlen(tags[t])) == 0 && f[1 + t] == 0)
        f[1 + t] = (float)slog((double)L->extent);
  }
}

/* ---- group 3 ------------------------------------------------------------------------ */

static void export_curve(const store_ctx *c, const double *for_touched_bytes, float *f) {
  memset(f, 0, sizeof(float) * N_CURVE);
  int n = c->n;
  if (n == 0) return;
  double total = 0;
  for (int k = 0; k < 7; k++) total += c->arith[k];
  total /= (double)c->prod;
  double *compute = mlc_xmalloc(sizeof(double) * (size_t)n);
  double *memory = mlc_xmalloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++) memory[n - 1 - i] = for_touched_bytes[i];
  for (int i = n - 1, p = 0; i >= 0; i--, p++) {
    total *= (double)c->nest[i]->extent;
    compute[p] = total;
  }
  if (total > 0) {
    int p = 0;
    for (int i = 0; i < N_CURVE; i++) {
      double cur = (double)(i + 1) / N_CURVE * total;
      while (p < n - 1 && compute[p] < cur - 1e-4) p++;
      double r;
      if (p == 0) {
        r = compute[0] / memory[0];
      } else {
        double base = compute[p - 1] / memory[p - 1];
        double slope = (compute[p] / memory[p] - base) / (compute[p] - compute[p - 1]);
        r = base + slope * (cur - compute[p - 1]);
      }
      f[i] = (float)slog(r);
    }
  }
  mlc_free(compute);
  mlc_free(memory);
}

/* ---- one store ------------------------------------------------------------------------- */

static bool is_pinned(const walker *w, const mlc_var *v) {
  for (int i = 0; i < w->pinned.len; i++)
    if (w->pinned.data[i] == v) return true;
  return false;
}

/* The loops around the statement that count (extent > 1, not pinned). */
static void take_nest(walker *w, store_ctx *c) {
  c->nest = mlc_xmalloc(sizeof(loop_info *) * (size_t)(w->loops.len + 1));
  c->prod = 1;
  for (int i = 0; i < w->loops.len; i++) {
    const loop_info *L = &w->loops.data[i];
    if (L->extent <= 1 || is_pinned(w, L->var)) continue;
    c->nest[c->n++] = L;
    c->prod *= L->extent;
  }
}

static void finish_row(walker *w, store_ctx *c, const mlc_buffer *stored, int64_t *out_coef);

static void extract_store(walker *w, const mlc_stmt *s) {
  store_ctx c = {0};
  take_nest(w, &c);
  /* The stored buffer first, so it is found again when the value loads it. */
  add_access(&c, s->store.buf, s->store.indices, 2);
  int64_t *out_coef = mlc_xmalloc(sizeof(int64_t) * (size_t)(c.n ? c.n : 1));
  memcpy(out_coef, c.acc[0].coef, sizeof(int64_t) * (size_t)c.n);
  collect_loads(&c, s->store.value);
  count_ops(c.arith, s->store.value, (double)c.prod);
  finish_row(w, &c, s->store.buf, out_coef);
}

/* A T.call_extern that writes through a pointer (a tensorized block's
 * call) is a row too, as if it stored to that buffer: each pointer
 * argument is an access at its region's start (how the tile moves over
 * the loops around the call), and a CPU builtin's multiply-adds
 * (mlc_target_extern_work) count as multiply-adds of the written
 * buffer's kind (int32 accumulators: int, float32: float). Other calls
 * give no row, as before. */
static void extract_call(walker *w, const mlc_expr *e) {
  int wi = -1;
  for (int i = 0; i < e->ext.n_args && wi < 0; i++)
    if (e->ext.args[i].kind == MLC_XARG_PTR && (e->ext.args[i].access & MLC_ACCESS_WRITE)) wi = i;
  if (wi < 0) return;
  store_ctx c = {0};
  take_nest(w, &c);
  const mlc_xarg *wx = &e->ext.args[wi];
  add_access(&c, wx->buf, e->ext.kids + wx->kid, wx->access & MLC_ACCESS_READ ? 3 : 2);
  int64_t *out_coef = mlc_xmalloc(sizeof(int64_t) * (size_t)(c.n ? c.n : 1));
  memcpy(out_coef, c.acc[0].coef, sizeof(int64_t) * (size_t)c.n);
  for (int i = 0; i < e->ext.n_args; i++) {
    const mlc_xarg *x = &e->ext.args[i];
    if (i == wi || x->kind != MLC_XARG_PTR) continue;
    add_access(&c, x->buf, e->ext.kids + x->kid,
               (x->access & MLC_ACCESS_READ ? 1 : 0) | (x->access & MLC_ACCESS_WRITE ? 2 : 0));
  }
  collect_loads(&c, e);
  count_ops(c.arith, e, (double)c.prod);
  /* float accumulators (bfloat16 products): float multiply-adds, which
   * the arithmetic intensity curve counts too */
  c.arith[(mlc_dtype_is_float(wx->buf->dtype) ? 0 : 7) + A_MAD] += (double)c.prod * mlc_target_extern_work(e);
  finish_row(w, &c, wx->buf, out_coef);
}

/* The row of one store (or call) from its accesses and counts; frees c's
 * scratch and out_coef (the stored access's coefficients). */
static void finish_row(walker *w, store_ctx *c_, const mlc_buffer *stored, int64_t *out_coef) {
  store_ctx c = *c_;

  double *for_touched = mlc_xmalloc(sizeof(double) * (size_t)(c.n ? c.n : 1));
  set_regions(w, &c, for_touched);
  double one_iter = 0;
  for (int b = 0; b < c.n_acc; b++) one_iter += mlc_dtype_bytes(c.acc[b].buf->dtype);
  for (int b = 0; b < c.n_acc; b++) {
    set_stride(&c, &c.acc[b]);
    set_reuse(w, &c, &c.acc[b], one_iter);
    set_access_values(&c, &c.acc[b]);
  }

  float row[MLC_FEATURE_DIM] = {0};
  for (int k = 0; k < 16; k++) row[F_ARITH + k] = (float)slog(c.arith[k]);
  /* Spatial loops: those moving the stored element, and those outside the
   * stored buffer's allocation (each iteration has its own buffer). */
  int depth = alloc_depth(w, stored);
  c.spatial = mlc_xmalloc(sizeof(bool) * (size_t)(c.n ? c.n : 1));
  for (int k = 0; k < c.n; k++)
    c.spatial[k] = out_coef[k] != 0 || (int)(c.nest[k] - w->loops.data) < depth;
  export_kind(&c, MLC_FOR_VECTORIZED, row + F_VEC);
  export_kind(&c, MLC_FOR_UNROLLED, row + F_UNROLL);
  export_kind(&c, MLC_FOR_PARALLEL, row + F_PARALLEL);
  export_gpu(w, row + F_GPU);

  qsort(c.acc, (size_t)c.n_acc, sizeof(access), cmp_access);
  for (int b = 0; b < c.n_acc && b < MLC_FEATURE_MAX_BUFFERS; b++)
    export_access(&c.acc[b], row + F_BUF + b * F_BUF_DIM);
  export_curve(&c, for_touched, row + F_CURVE);

  double alloc_size = 0, alloc_prod = 0, alloc_outer = 1;
  for (int i = w->allocs.len - 1; i >= 0; i--)
    if (w->allocs.data[i].buf == stored) {
      alloc_size = (double)w->allocs.data[i].bytes;
      alloc_outer = (double)w->allocs.data[i].outer_prod;
      alloc_prod = (double)w->allocs.data[i].numel * alloc_outer;
      break;
    }
  row[F_ALLOC + 0] = (float)slog(alloc_size);
  row[F_ALLOC + 1] = (float)slog(alloc_prod);
  row[F_ALLOC + 2] = (float)slog(alloc_outer);
  row[F_ALLOC + 3] = (float)slog((double)c.prod / alloc_outer);
  int64_t unroll_step = 0;
  for (int i = 0; i < w->loops.len; i++)
    if (w->loops.data[i].auto_unroll > 0) unroll_step = w->loops.data[i].auto_unroll;
  row[F_NEST + 0] = (float)slog((double)c.prod);
  row[F_NEST + 1] = (float)slog(c.n);
  row[F_NEST + 2] = (float)slog((double)unroll_step);

  for (int k = 0; k < MLC_FEATURE_DIM; k++) MLC_VEC_PUSH(w->rows, row[k]);
  w->n_stores++;
  for (int b = 0; b < c.n_acc; b++) {
    mlc_free(c.acc[b].coef);
    mlc_free(c.acc[b].numel);
  }
  mlc_free(out_coef);
  mlc_free(c.spatial);
  mlc_free(for_touched);
  mlc_free(c.nest);
}

/* ---- the walk ------------------------------------------------------------------------------ */

/* Vars an `if` condition pins to one value: conjunctions of `v == c`. */
static int pin_vars(walker *w, const mlc_expr *cond) {
  if (cond->kind == MLC_EXPR_AND) return pin_vars(w, cond->bin.a) + pin_vars(w, cond->bin.b);
  int64_t v;
  if (cond->kind == MLC_EXPR_EQ && cond->bin.a->kind == MLC_EXPR_VAR &&
      mlc_expr_is_const_int(cond->bin.b, &v)) {
    MLC_VEC_PUSH(w->pinned, cond->bin.a->var);
    return 1;
  }
  return 0;
}

static int64_t outer_prod(const walker *w) {
  int64_t p = 1;
  for (int i = 0; i < w->loops.len; i++)
    if (!is_pinned(w, w->loops.data[i].var)) p *= w->loops.data[i].extent;
  return p;
}

static void walk(walker *w, const mlc_stmt *s) {
  switch (s->kind) {
  case MLC_STMT_FOR: {
    int64_t ext = 1;
    if (!mlc_expr_is_const_int(s->loop.extent, &ext) || ext < 1) ext = 1;
    const mlc_ann *an = mlc_ann_find(s->loop.n_anns, s->loop.anns, "pragma_auto_unroll_max_step");
    loop_info L = {s, s->loop.var, ext, s->loop.kind, s->loop.thread,
                   an && an->kind == MLC_ANN_INT ? an->i : 0};
    MLC_VEC_PUSH(w->loops, L);
    walk(w, s->loop.body);
    w->loops.len--;
    return;
  }
  case MLC_STMT_BLOCK_REALIZE: {
    const mlc_block *b = s->realize.block;
    if (b->init) walk(w, b->init);
    walk(w, b->body);
    return;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) walk(w, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE: extract_store(w, s); return;
  case MLC_STMT_IF: {
    int np = pin_vars(w, s->if_.cond);
    walk(w, s->if_.then_s);
    w->pinned.len -= np;
    if (s->if_.else_s) walk(w, s->if_.else_s);
    return;
  }
  case MLC_STMT_ALLOCATE: {
    int64_t numel = mlc_buffer_numel(s->alloc.buf);
    alloc_info ai = {s->alloc.buf, numel, numel * mlc_dtype_bytes(s->alloc.buf->dtype),
                     outer_prod(w), w->loops.len};
    MLC_VEC_PUSH(w->allocs, ai);
    walk(w, s->alloc.body);
    return;
  }
  case MLC_STMT_EVALUATE:
    if (s->eval.value->kind == MLC_EXPR_CALL_EXTERN) extract_call(w, s->eval.value);
    return;
  }
  mlc_unreachable();
}

bool mlc_features_extract_lowered(const mlc_prim_func *lowered, mlc_features *out,
                                  mlc_error *err) {
  MLC_UNUSED(err);
  walker w = {0};
  walk(&w, lowered->body);
  out->n_stores = w.n_stores;
  out->rows = w.rows.data; /* ownership moves to out */
  out->ok = true;
  MLC_VEC_FREE(w.loops);
  MLC_VEC_FREE(w.pinned);
  MLC_VEC_FREE(w.touched);
  MLC_VEC_FREE(w.allocs);
  return true;
}

bool mlc_features_extract(const mlc_prim_func *scheduled, mlc_features *out, mlc_error *err) {
  memset(out, 0, sizeof *out);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *low = mlc_target_lower(a, scheduled, err);
  bool ok = low && mlc_features_extract_lowered(low, out, err);
  if (!low) mlc_error_prefix(err, "features");
  mlc_arena_free(a);
  return ok;
}

bool mlc_features_extract_batch(int n, const mlc_prim_func *const *funcs, mlc_features *out,
                                mlc_error *err) {
  int n_ok = 0, first_bad = -1;
  mlc_error first = {{0}};
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : n_ok)
  for (int i = 0; i < n; i++) {
    mlc_error e;
    if (mlc_features_extract(funcs[i], &out[i], &e)) {
      n_ok++;
    } else {
#pragma omp critical(mlc_features_batch_err)
      if (first_bad < 0 || i < first_bad) {
        first_bad = i;
        first = e;
      }
    }
  }
  if (n > 0 && n_ok == 0) {
    if (err) *err = first;
    return false;
  }
  return true;
}

void mlc_features_free(mlc_features *f) {
  if (!f) return;
  mlc_free(f->rows);
  f->rows = NULL;
  f->n_stores = 0;
}

void mlc_features_aggregate(const mlc_features *f, float *out) {
  memset(out, 0, sizeof(float) * MLC_FEATURE_AGG_DIM);
  if (!f->ok || f->n_stores == 0) return;
  for (int s = 0; s < f->n_stores; s++) {
    const float *r = f->rows + (size_t)s * MLC_FEATURE_DIM;
    for (int k = 0; k < MLC_FEATURE_DIM; k++) {
      if (s == 0 || r[k] > out[k]) out[k] = r[k];
      out[MLC_FEATURE_DIM + k] += r[k] / (float)f->n_stores;
    }
  }
  out[2 * MLC_FEATURE_DIM] = (float)slog(f->n_stores);
}
