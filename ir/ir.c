/* Kind tables and node constructors. */
#include "ir/ir.h"

#include <math.h>
#include <string.h>

/* ---- kind tables (from ir_kinds.def) ---------------------------------- */

static const struct {
  const char *name;
  int bits;
  bool is_float, is_int;
} dtype_info[] = {
#define MLC_DTYPE(id, name, bits, fl, in) {name, bits, fl, in},
#include "ir/ir_kinds.def"
};
_Static_assert(sizeof dtype_info / sizeof dtype_info[0] == MLC_DTYPE_COUNT, "dtype table");

static const char *const expr_names[] = {
#define MLC_EXPR(id, name) name,
#include "ir/ir_kinds.def"
};
_Static_assert(sizeof expr_names / sizeof expr_names[0] == MLC_EXPR_KIND_COUNT, "expr table");

static const char *const stmt_names[] = {
#define MLC_STMT(id, name) name,
#include "ir/ir_kinds.def"
};
_Static_assert(sizeof stmt_names / sizeof stmt_names[0] == MLC_STMT_KIND_COUNT, "stmt table");

static const char *const for_names[] = {
#define MLC_FOR_KIND(id, script) script,
#include "ir/ir_kinds.def"
};
_Static_assert(sizeof for_names / sizeof for_names[0] == MLC_FOR_KIND_COUNT, "for table");

static const struct {
  const char *name;
  int nargs;
} intrin_info[] = {
#define MLC_INTRIN(id, script, nargs) {script, nargs},
#include "ir/ir_kinds.def"
};
_Static_assert(sizeof intrin_info / sizeof intrin_info[0] == MLC_INTRIN_COUNT, "intrin table");

const char *mlc_dtype_name(mlc_dtype t) { return dtype_info[t].name; }
int mlc_dtype_bits(mlc_dtype t) { return dtype_info[t].bits; }
int mlc_dtype_bytes(mlc_dtype t) { return t == MLC_BOOL ? 1 : dtype_info[t].bits / 8; }

const char *mlc_dtype_c_name(mlc_dtype t) {
  switch (t) {
  case MLC_BOOL: return "uint8_t";
  case MLC_INT8: return "int8_t";
  case MLC_UINT8: return "uint8_t";
  case MLC_BFLOAT16: return "uint16_t"; /* upper float32 bits */
  case MLC_INT32: return "int32_t";
  case MLC_INT64: return "int64_t";
  case MLC_FLOAT16: return "uint16_t"; /* IEEE half bits */
  case MLC_FLOAT32: return "float";
  }
  mlc_unreachable();
}
bool mlc_dtype_is_float(mlc_dtype t) { return dtype_info[t].is_float; }
bool mlc_dtype_is_int(mlc_dtype t) { return dtype_info[t].is_int; }
const char *mlc_expr_kind_name(mlc_expr_kind k) { return expr_names[k]; }
const char *mlc_stmt_kind_name(mlc_stmt_kind k) { return stmt_names[k]; }
const char *mlc_for_kind_name(mlc_for_kind k) { return for_names[k]; }
const char *mlc_intrin_name(mlc_intrin op) { return intrin_info[op].name; }
int mlc_intrin_nargs(mlc_intrin op) { return intrin_info[op].nargs; }

bool mlc_dtype_from_name(const char *s, mlc_dtype *out) {
  for (int i = 0; i < MLC_DTYPE_COUNT; i++)
    if (strcmp(s, dtype_info[i].name) == 0) {
      *out = (mlc_dtype)i;
      return true;
    }
  return false;
}

bool mlc_intrin_from_name(const char *s, mlc_intrin *out) {
  for (int i = 0; i < MLC_INTRIN_COUNT; i++)
    if (strcmp(s, intrin_info[i].name) == 0) {
      *out = (mlc_intrin)i;
      return true;
    }
  return false;
}

const char *mlc_binop_symbol(mlc_expr_kind k) {
  switch (k) {
#define MLC_BINOP(id, py, prec) \
  case MLC_EXPR_##id:           \
    return py;
#include "ir/ir_kinds.def"
  default:
    return NULL;
  }
}

int mlc_binop_precedence(mlc_expr_kind k) {
  switch (k) {
#define MLC_BINOP(id, py, prec) \
  case MLC_EXPR_##id:           \
    return prec;
#include "ir/ir_kinds.def"
  default:
    return 0;
  }
}

bool mlc_expr_kind_is_binary(mlc_expr_kind k) {
  return (k >= MLC_EXPR_ADD && k <= MLC_EXPR_OR);
}

bool mlc_expr_kind_is_compare(mlc_expr_kind k) {
  return k >= MLC_EXPR_EQ && k <= MLC_EXPR_GE;
}

/* ---- expressions ------------------------------------------------------ */

static mlc_expr *expr_new(mlc_arena *a, mlc_expr_kind k, mlc_dtype t) {
  mlc_expr *e = MLC_NEW(a, mlc_expr);
  e->kind = k;
  e->dtype = t;
  return e;
}

mlc_var *mlc_var_new(mlc_arena *a, const char *name, mlc_dtype t) {
  mlc_var *v = MLC_NEW(a, mlc_var);
  v->name = mlc_arena_strdup(a, name);
  v->dtype = t;
  return v;
}

mlc_buffer *mlc_buffer_new(mlc_arena *a, const char *name, mlc_dtype t, int ndim,
                           const int64_t *shape, const char *scope) {
  mlc_buffer *b = MLC_NEW(a, mlc_buffer);
  b->name = mlc_arena_strdup(a, name);
  b->dtype = t;
  b->ndim = ndim;
  b->shape = mlc_arena_memdup(a, shape, sizeof(int64_t) * (size_t)ndim);
  b->scope = mlc_arena_strdup(a, scope ? scope : "global");
  return b;
}

int64_t mlc_buffer_numel(const mlc_buffer *b) {
  const int64_t cap = INT64_C(1) << 62;
  int64_t n = 1;
  for (int i = 0; i < b->ndim; i++)
    if (b->shape[i] == 0) return 0;
  for (int i = 0; i < b->ndim; i++)
    if (mlc_mul_overflow(n, b->shape[i], &n) || n > cap) return cap;
  return n;
}

/* The small integer literals, shared: index arithmetic makes millions of
 * them a search round. Read-only memory, so a write through one (nodes are
 * never changed once made) faults instead of changing every use. */
#define SMALL_MIN (-16)
#define SI(t, v) {.kind = MLC_EXPR_INT_IMM, .dtype = (t), .int_val = (v)},
#define SI4(t, v) SI(t, v) SI(t, (v) + 1) SI(t, (v) + 2) SI(t, (v) + 3)
#define SI16(t, v) SI4(t, v) SI4(t, (v) + 4) SI4(t, (v) + 8) SI4(t, (v) + 12)
#define SI64(t, v) SI16(t, v) SI16(t, (v) + 16) SI16(t, (v) + 32) SI16(t, (v) + 48)
#define SI256(t) SI64(t, SMALL_MIN) SI64(t, SMALL_MIN + 64) SI64(t, SMALL_MIN + 128) SI64(t, SMALL_MIN + 192)
static const mlc_expr small_int32[] = {SI256(MLC_INT32)};
static const mlc_expr small_int64[] = {SI256(MLC_INT64)};
static const mlc_expr small_bool[] = {SI(MLC_BOOL, 0) SI(MLC_BOOL, 1)};
#undef SI
#undef SI4
#undef SI16
#undef SI64
#undef SI256

mlc_expr *mlc_int_t(mlc_arena *a, mlc_dtype t, int64_t v) {
  bool small = v >= SMALL_MIN && v < SMALL_MIN + MLC_COUNTOF(small_int32);
  if (t == MLC_INT32 && small) return (mlc_expr *)&small_int32[v - SMALL_MIN];
  if (t == MLC_INT64 && small) return (mlc_expr *)&small_int64[v - SMALL_MIN];
  if (t == MLC_BOOL && (v == 0 || v == 1)) return (mlc_expr *)&small_bool[v];
  mlc_expr *e = expr_new(a, MLC_EXPR_INT_IMM, t);
  e->int_val = v;
  return e;
}

mlc_expr *mlc_int(mlc_arena *a, int64_t v) { return mlc_int_t(a, MLC_INT32, v); }
mlc_expr *mlc_bool(mlc_arena *a, bool v) { return mlc_int_t(a, MLC_BOOL, v); }

mlc_expr *mlc_float(mlc_arena *a, mlc_dtype t, double v) {
  MLC_ASSERT(mlc_dtype_is_float(t));
  mlc_expr *e = expr_new(a, MLC_EXPR_FLOAT_IMM, t);
  /* float32 and bfloat16 literals hold their value as the type rounds it
   * (so a printed literal reads back structurally equal). */
  if (t == MLC_FLOAT32) v = (double)(float)v;
  else if (t == MLC_BFLOAT16) v = (double)mlc_bf16_to_float(mlc_float_to_bf16((float)v));
  e->float_val = v;
  return e;
}

mlc_expr *mlc_ref(mlc_arena *a, mlc_var *v) {
  mlc_expr *e = expr_new(a, MLC_EXPR_VAR, v->dtype);
  e->var = v;
  return e;
}

/* A literal operand adopts the type of the other side: 2 * i64 is i64,
 * x + 1 with float x is x + 1.0. */
static mlc_expr *coerce_literal(mlc_arena *a, mlc_expr *lit, mlc_dtype to) {
  if (lit->dtype == to) return lit;
  if (lit->kind == MLC_EXPR_INT_IMM && lit->dtype != MLC_BOOL) {
    if (mlc_dtype_is_int(to)) return mlc_int_t(a, to, lit->int_val);
    if (mlc_dtype_is_float(to)) return mlc_float(a, to, (double)lit->int_val);
  }
  if (lit->kind == MLC_EXPR_FLOAT_IMM && mlc_dtype_is_float(to))
    return mlc_float(a, to, lit->float_val);
  return lit;
}

static bool is_literal(const mlc_expr *e) {
  return e->kind == MLC_EXPR_INT_IMM || e->kind == MLC_EXPR_FLOAT_IMM;
}

mlc_expr *mlc_binary(mlc_arena *a, mlc_expr_kind k, mlc_expr *x, mlc_expr *y) {
  MLC_ASSERT(mlc_expr_kind_is_binary(k));
  if (x->dtype != y->dtype) {
    if (is_literal(y)) y = coerce_literal(a, y, x->dtype);
    else if (is_literal(x)) x = coerce_literal(a, x, y->dtype);
  }
  MLC_ASSERT(x->dtype == y->dtype);
  bool logical = k == MLC_EXPR_AND || k == MLC_EXPR_OR;
  mlc_dtype t = (mlc_expr_kind_is_compare(k) || logical) ? MLC_BOOL : x->dtype;
  mlc_expr *e = expr_new(a, k, t);
  e->bin.a = x;
  e->bin.b = y;
  return e;
}

mlc_expr *mlc_add(mlc_arena *a, mlc_expr *x, mlc_expr *y) { return mlc_binary(a, MLC_EXPR_ADD, x, y); }
mlc_expr *mlc_sub(mlc_arena *a, mlc_expr *x, mlc_expr *y) { return mlc_binary(a, MLC_EXPR_SUB, x, y); }
mlc_expr *mlc_mul(mlc_arena *a, mlc_expr *x, mlc_expr *y) { return mlc_binary(a, MLC_EXPR_MUL, x, y); }

mlc_expr *mlc_not(mlc_arena *a, mlc_expr *x) {
  MLC_ASSERT(x->dtype == MLC_BOOL);
  mlc_expr *e = expr_new(a, MLC_EXPR_NOT, MLC_BOOL);
  e->bin.a = x;
  return e;
}

static mlc_expr *ternary(mlc_arena *a, mlc_expr_kind k, mlc_expr *c, mlc_expr *t, mlc_expr *f) {
  MLC_ASSERT(c->dtype == MLC_BOOL);
  if (t->dtype != f->dtype) {
    if (is_literal(f)) f = coerce_literal(a, f, t->dtype);
    else if (is_literal(t)) t = coerce_literal(a, t, f->dtype);
  }
  MLC_ASSERT(t->dtype == f->dtype);
  mlc_expr *e = expr_new(a, k, t->dtype);
  e->sel.cond = c;
  e->sel.t = t;
  e->sel.f = f;
  return e;
}

mlc_expr *mlc_select(mlc_arena *a, mlc_expr *c, mlc_expr *t, mlc_expr *f) {
  return ternary(a, MLC_EXPR_SELECT, c, t, f);
}

mlc_expr *mlc_if_then_else(mlc_arena *a, mlc_expr *c, mlc_expr *t, mlc_expr *f) {
  return ternary(a, MLC_EXPR_IF_THEN_ELSE, c, t, f);
}

mlc_expr *mlc_load(mlc_arena *a, mlc_buffer *b, mlc_expr **indices) {
  mlc_expr *e = expr_new(a, MLC_EXPR_LOAD, b->dtype);
  e->load.buf = b;
  e->load.indices = mlc_arena_memdup(a, indices, sizeof(mlc_expr *) * (size_t)b->ndim);
  return e;
}

mlc_expr *mlc_cast(mlc_arena *a, mlc_dtype t, mlc_expr *x) {
  mlc_expr *e = expr_new(a, MLC_EXPR_CAST, t);
  e->cast.value = x;
  return e;
}

mlc_expr *mlc_call(mlc_arena *a, mlc_intrin op, mlc_expr **args) {
  int n = mlc_intrin_nargs(op);
  mlc_expr *e = expr_new(a, MLC_EXPR_CALL, args[0]->dtype);
  e->call.op = op;
  e->call.args = mlc_arena_memdup(a, args, sizeof(mlc_expr *) * (size_t)n);
  return e;
}

mlc_expr *mlc_call_extern(mlc_arena *a, mlc_dtype ret, const char *name, int n_args,
                          const mlc_xarg *args, int n_kids, mlc_expr **kids) {
  mlc_expr *e = expr_new(a, MLC_EXPR_CALL_EXTERN, ret);
  e->ext.name = mlc_arena_strdup(a, name);
  e->ext.n_args = n_args;
  e->ext.args = n_args ? mlc_arena_memdup(a, args, sizeof(mlc_xarg) * (size_t)n_args) : NULL;
  e->ext.n_kids = n_kids;
  e->ext.kids = n_kids ? mlc_arena_memdup(a, kids, sizeof(mlc_expr *) * (size_t)n_kids) : NULL;
  return e;
}

mlc_region mlc_xarg_region(mlc_arena *a, const mlc_expr *e, int arg) {
  const mlc_xarg *x = &e->ext.args[arg];
  MLC_ASSERT(x->kind == MLC_XARG_PTR);
  int nd = x->buf->ndim;
  mlc_region r = {x->buf, MLC_NEW_ARRAY(a, mlc_range, nd ? nd : 1)};
  for (int d = 0; d < nd; d++) {
    r.ranges[d].min = e->ext.kids[x->kid + d];
    r.ranges[d].extent = e->ext.kids[x->kid + nd + d];
  }
  return r;
}

bool mlc_expr_is_const_int(const mlc_expr *e, int64_t *v) {
  if (e->kind != MLC_EXPR_INT_IMM) return false;
  if (v) *v = e->int_val;
  return true;
}

/* ---- statements ------------------------------------------------------- */

static mlc_stmt *stmt_new(mlc_arena *a, mlc_stmt_kind k) {
  mlc_stmt *s = MLC_NEW(a, mlc_stmt);
  s->kind = k;
  return s;
}

mlc_stmt *mlc_for_new(mlc_arena *a, mlc_var *v, mlc_expr *min, mlc_expr *extent,
                      mlc_for_kind kind, mlc_stmt *body) {
  mlc_stmt *s = stmt_new(a, MLC_STMT_FOR);
  s->loop.var = v;
  s->loop.min = min;
  s->loop.extent = extent;
  s->loop.kind = kind;
  s->loop.body = body;
  return s;
}

mlc_stmt *mlc_store_new(mlc_arena *a, mlc_buffer *b, mlc_expr **indices, mlc_expr *value) {
  mlc_stmt *s = stmt_new(a, MLC_STMT_STORE);
  s->store.buf = b;
  s->store.indices = mlc_arena_memdup(a, indices, sizeof(mlc_expr *) * (size_t)b->ndim);
  s->store.value = value->dtype == b->dtype ? value : coerce_literal(a, value, b->dtype);
  return s;
}

mlc_stmt *mlc_seq_new(mlc_arena *a, int n, mlc_stmt **stmts) {
  int total = 0;
  for (int i = 0; i < n; i++) total += stmts[i]->kind == MLC_STMT_SEQ ? stmts[i]->seq.n : 1;
  if (total == 1) return stmts[0]->kind == MLC_STMT_SEQ ? stmts[0]->seq.stmts[0] : stmts[0];
  mlc_stmt *s = stmt_new(a, MLC_STMT_SEQ);
  s->seq.stmts = MLC_NEW_ARRAY(a, mlc_stmt *, total);
  for (int i = 0; i < n; i++) {
    if (stmts[i]->kind == MLC_STMT_SEQ)
      for (int j = 0; j < stmts[i]->seq.n; j++) s->seq.stmts[s->seq.n++] = stmts[i]->seq.stmts[j];
    else
      s->seq.stmts[s->seq.n++] = stmts[i];
  }
  return s;
}

mlc_stmt *mlc_if_new(mlc_arena *a, mlc_expr *c, mlc_stmt *t, mlc_stmt *f) {
  mlc_stmt *s = stmt_new(a, MLC_STMT_IF);
  s->if_.cond = c;
  s->if_.then_s = t;
  s->if_.else_s = f;
  return s;
}

mlc_stmt *mlc_evaluate_new(mlc_arena *a, mlc_expr *e) {
  mlc_stmt *s = stmt_new(a, MLC_STMT_EVALUATE);
  s->eval.value = e;
  return s;
}

mlc_stmt *mlc_allocate_new(mlc_arena *a, mlc_buffer *b, mlc_stmt *body) {
  mlc_stmt *s = stmt_new(a, MLC_STMT_ALLOCATE);
  s->alloc.buf = b;
  s->alloc.body = body;
  return s;
}

mlc_block *mlc_block_new(mlc_arena *a, const char *name) {
  mlc_block *b = MLC_NEW(a, mlc_block);
  b->name = mlc_arena_strdup(a, name);
  return b;
}

mlc_stmt *mlc_realize_new(mlc_arena *a, mlc_block *b, mlc_expr **values, mlc_expr *predicate) {
  mlc_stmt *s = stmt_new(a, MLC_STMT_BLOCK_REALIZE);
  s->realize.block = b;
  s->realize.values =
      b->n_iters ? mlc_arena_memdup(a, values, sizeof(mlc_expr *) * (size_t)b->n_iters) : NULL;
  s->realize.predicate = predicate;
  return s;
}

mlc_prim_func *mlc_func_new(mlc_arena *a, const char *name) {
  mlc_prim_func *f = MLC_NEW(a, mlc_prim_func);
  f->name = mlc_arena_strdup(a, name);
  return f;
}

mlc_module *mlc_module_new(mlc_arena *a, const char *name) {
  mlc_module *m = MLC_NEW(a, mlc_module);
  m->name = name ? mlc_arena_strdup(a, name) : NULL;
  return m;
}

void mlc_module_add(mlc_arena *a, mlc_module *m, mlc_prim_func *f) {
  mlc_prim_func **funcs = MLC_NEW_ARRAY(a, mlc_prim_func *, m->n_funcs + 1);
  if (m->n_funcs) memcpy(funcs, m->funcs, sizeof(*funcs) * (size_t)m->n_funcs);
  funcs[m->n_funcs++] = f;
  m->funcs = funcs;
}

mlc_prim_func *mlc_module_find(const mlc_module *m, const char *name) {
  for (int i = 0; i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
  return NULL;
}

const mlc_ann *mlc_ann_find(int n, const mlc_ann *anns, const char *key) {
  for (int i = 0; i < n; i++)
    if (strcmp(anns[i].key, key) == 0) return &anns[i];
  return NULL;
}

double mlc_func_check_atol(const mlc_prim_func *f, double def) {
  const mlc_ann *v = mlc_ann_find(f->n_attrs, f->attrs, MLC_ATTR_CHECK_ATOL);
  return v && v->kind == MLC_ANN_FLOAT && v->f > 0 ? v->f : def;
}

void mlc_func_set_check_atol(mlc_arena *a, mlc_prim_func *f, double atol) {
  for (int i = 0; i < f->n_attrs; i++)
    if (strcmp(f->attrs[i].key, MLC_ATTR_CHECK_ATOL) == 0) {
      f->attrs[i].f = fmax(f->attrs[i].f, atol);
      return;
    }
  mlc_ann *at = MLC_NEW_ARRAY(a, mlc_ann, f->n_attrs + 1);
  if (f->n_attrs) memcpy(at, f->attrs, sizeof *at * (size_t)f->n_attrs);
  at[f->n_attrs++] = (mlc_ann){.key = MLC_ATTR_CHECK_ATOL, .kind = MLC_ANN_FLOAT, .f = atol};
  f->attrs = at;
}

mlc_ann mlc_ann_dup(mlc_arena *a, const mlc_ann *v) {
  mlc_ann r = *v;
  r.key = v->key ? mlc_arena_strdup(a, v->key) : NULL;
  r.s = v->s ? mlc_arena_strdup(a, v->s) : NULL;
  r.items = v->n > 0 ? MLC_NEW_ARRAY(a, mlc_ann, v->n) : NULL;
  for (int i = 0; i < v->n; i++) r.items[i] = mlc_ann_dup(a, &v->items[i]);
  return r;
}

static const mlc_ann *dict_entry(const mlc_ann *d, const char *key) {
  for (int i = 0; i < d->n; i++)
    if (d->items[i].key && strcmp(d->items[i].key, key) == 0) return &d->items[i];
  return NULL;
}

bool mlc_ann_value_equal(const mlc_ann *x, const mlc_ann *y) {
  if (x->kind != y->kind) return false;
  switch (x->kind) {
  case MLC_ANN_INT:
  case MLC_ANN_BOOL: return x->i == y->i;
  case MLC_ANN_FLOAT: return x->f == y->f || (isnan(x->f) && isnan(y->f));
  case MLC_ANN_STRING: return strcmp(x->s ? x->s : "", y->s ? y->s : "") == 0;
  case MLC_ANN_LIST:
    if (x->n != y->n) return false;
    for (int i = 0; i < x->n; i++)
      if (!mlc_ann_value_equal(&x->items[i], &y->items[i])) return false;
    return true;
  case MLC_ANN_DICT:
    /* Keys are distinct within a dict, so equal counts and every entry of
     * x found equal in y make the maps equal. */
    if (x->n != y->n) return false;
    for (int i = 0; i < x->n; i++) {
      const mlc_ann *e = dict_entry(y, x->items[i].key);
      if (!e || !mlc_ann_value_equal(&x->items[i], e)) return false;
    }
    return true;
  }
  mlc_unreachable();
}

mlc_block *mlc_func_root(const mlc_prim_func *f) {
  MLC_ASSERT(f->body && f->body->kind == MLC_STMT_BLOCK_REALIZE);
  return f->body->realize.block;
}
