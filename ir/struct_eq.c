/* Structural hash and equality of prim_funcs (workload identity).
 *
 * Both are defined over one canonical byte serialization of a pre-order
 * walk, so "equal" and "same hash" cannot disagree:
 *  - vars and buffers are written as the position of their definition
 *    (buffers: parameters in order, then alloc_buffers / decl_buffers as
 *    the walk meets them; vars: size vars first, then loop and iter vars
 *    as the walk meets them),
 *    so renaming them changes nothing; block and function names are left
 *    out, and so is the "global_symbol" attribute;
 *  - everything else is written exactly: dtypes, shapes, scopes, kinds (by
 *    their stable names from ir_kinds.def, not enum values), constants
 *    (floats by IEEE bit pattern), loop kinds/extents/thread tags, iter
 *    kinds and domains, regions, init, predicates, annotations.
 * Annotations and attributes are maps: they are written sorted by key.
 * Every value is written with an explicit size in little-endian order and
 * every variable-length part carries its length, so the encoding is
 * injective and identical on every platform; pointers never reach it.
 *
 * A function with size vars has its own format name, then its size vars
 * (dtype, bounds) and, with each buffer, its symbolic extents; one
 * without keeps the encoding it always had.
 *
 * The hash value is stored in tuning databases: changing this encoding
 * changes every workload hash and needs a database schema bump (the golden
 * hash in tests/test_ir_struct_hash.c guards it).
 */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define STRUCT_HASH_SEED 0x6d6c632d77726b31ULL /* "mlc-wrk1" */
#define STRUCT_FORMAT "mlc-struct-1"
#define STRUCT_FORMAT_SYMBOLIC "mlc-struct-1-sizes"

/* Pointer -> definition index (open addressing; pointers only as keys),
 * in the serializer's scratch arena. */
typedef struct ptr_map {
  mlc_arena *a;
  const void **keys;
  uint32_t *vals;
  size_t cap, len;
} ptr_map;

static size_t ptr_slot(const ptr_map *m, const void *p) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;
  size_t i = (size_t)(h >> 17) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != p) i = (i + 1) & (m->cap - 1);
  return i;
}

static void ptr_put(ptr_map *m, const void *p, uint32_t v) {
  if (2 * (m->len + 1) > m->cap) {
    ptr_map n = {.a = m->a};
    n.cap = m->cap ? 2 * m->cap : 64;
    n.keys = MLC_NEW_ARRAY(m->a, const void *, n.cap);
    n.vals = MLC_NEW_ARRAY(m->a, uint32_t, n.cap);
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        size_t j = ptr_slot(&n, m->keys[i]);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
        n.len++;
      }
    *m = n;
  }
  size_t i = ptr_slot(m, p);
  if (!m->keys[i]) m->len++;
  m->keys[i] = p;
  m->vals[i] = v;
}

static bool ptr_get(const ptr_map *m, const void *p, uint32_t *v) {
  if (!m->cap) return false;
  size_t i = ptr_slot(m, p);
  if (!m->keys[i]) return false;
  *v = m->vals[i];
  return true;
}

/* Everything a serialization takes (the bytes, the maps, sorted
 * annotations) is in one scratch arena, as much as the function is big:
 * under the arena's escape point, running out of memory jumps there. */
typedef struct ser {
  mlc_arena *a;
  mlc_str out;
  ptr_map vars, bufs;
  uint32_t n_vars, n_bufs;
  bool symbolic; /* the function has size vars: buffers write their dims */
  bool slots;    /* int constants go to int_slots, not into the bytes */
  MLC_VEC(mlc_int_slot) int_slots;
} ser;

static void ser_init(ser *s, mlc_arena *a) {
  memset(s, 0, sizeof *s);
  s->a = a;
  s->out.arena = a;
  s->vars.a = s->bufs.a = a;
}

/* ---- primitive encoders (explicit little-endian) ----------------------- */

static void put_u8(ser *s, uint8_t v) { mlc_str_putn(&s->out, (const char *)&v, 1); }

static void put_u32(ser *s, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; i++) b[i] = (char)(uint8_t)(v >> (8 * i));
  mlc_str_putn(&s->out, b, 4);
}

static void put_u64(ser *s, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = (char)(uint8_t)(v >> (8 * i));
  mlc_str_putn(&s->out, b, 8);
}

static void put_i64(ser *s, int64_t v) { put_u64(s, (uint64_t)v); }

static void put_f64(ser *s, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  put_u64(s, bits);
}

/* Length-prefixed; NULL is distinct from "". */
static void put_str(ser *s, const char *t) {
  if (!t) {
    put_u32(s, UINT32_MAX);
    return;
  }
  size_t n = strlen(t);
  put_u32(s, (uint32_t)n);
  mlc_str_putn(&s->out, t, n);
}

static void put_count(ser *s, int n) { put_u32(s, (uint32_t)(n < 0 ? 0 : n)); }

static void put_dtype(ser *s, mlc_dtype t) {
  put_str(s, (unsigned)t < MLC_DTYPE_COUNT ? mlc_dtype_name(t) : "?");
}

/* ---- definitions and uses ----------------------------------------------- */

static void def_var(ser *s, const mlc_var *v) {
  put_u8(s, 'V');
  if (!v) {
    put_u8(s, 0);
    return;
  }
  put_u8(s, 1);
  put_dtype(s, v->dtype);
  ptr_put(&s->vars, v, s->n_vars++);
}

static void use_var(ser *s, const mlc_var *v) {
  uint32_t i;
  if (v && ptr_get(&s->vars, v, &i)) {
    put_u8(s, 'v');
    put_u32(s, i);
    return;
  }
  /* A free var (ill-formed input): defined at its first use. */
  put_u8(s, 'w');
  def_var(s, v);
}

static void put_exprs(ser *s, int n, mlc_expr *const *es);

static void def_buf(ser *s, const mlc_buffer *b) {
  put_u8(s, 'B');
  if (!b) {
    put_u8(s, 0);
    return;
  }
  put_u8(s, 1);
  put_dtype(s, b->dtype);
  put_count(s, b->ndim);
  for (int i = 0; i < b->ndim; i++) {
    if (s->slots) MLC_VEC_APUSH(s->a, s->int_slots, ((mlc_int_slot){NULL, b, i}));
    else put_i64(s, b->shape[i]);
  }
  put_str(s, b->scope);
  ptr_put(&s->bufs, b, s->n_bufs++);
  if (!s->symbolic) return;
  put_u8(s, b->dims ? 1 : 0);
  if (b->dims) put_exprs(s, b->ndim, b->dims);
}

static void use_buf(ser *s, const mlc_buffer *b) {
  uint32_t i;
  if (b && ptr_get(&s->bufs, b, &i)) {
    put_u8(s, 'b');
    put_u32(s, i);
    return;
  }
  put_u8(s, 'c');
  def_buf(s, b);
}

/* ---- annotations ---------------------------------------------------------- */

static void put_anns(ser *s, int n, const mlc_ann *anns, const char *skip_key);

static void put_ann_value(ser *s, const mlc_ann *x) {
  switch (x->kind) {
  case MLC_ANN_INT:
    put_u8(s, 'i');
    put_i64(s, x->i);
    return;
  case MLC_ANN_BOOL:
    put_u8(s, 'b');
    put_i64(s, x->i);
    return;
  case MLC_ANN_FLOAT:
    put_u8(s, 'f');
    put_f64(s, x->f);
    return;
  case MLC_ANN_STRING:
    put_u8(s, 's');
    put_str(s, x->s);
    return;
  case MLC_ANN_LIST:
    put_u8(s, 'l');
    put_count(s, x->n);
    for (int i = 0; i < x->n; i++) put_ann_value(s, &x->items[i]);
    return;
  case MLC_ANN_DICT:
    put_u8(s, 'd');
    put_anns(s, x->n, x->items, NULL);
    return;
  }
  mlc_unreachable();
}

/* A map of annotations (the list on a node, or a DICT value): entries
 * sorted by key, stable for equal keys, so written order does not matter. */
static void put_anns(ser *s, int n, const mlc_ann *anns, const char *skip_key) {
  const mlc_ann **sorted = MLC_NEW_ARRAY(s->a, const mlc_ann *, n > 0 ? n : 1);
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (skip_key && anns[i].key && strcmp(anns[i].key, skip_key) == 0) continue;
    const mlc_ann *x = &anns[i];
    int j = k++;
    while (j > 0 && strcmp(sorted[j - 1]->key ? sorted[j - 1]->key : "",
                           x->key ? x->key : "") > 0) {
      sorted[j] = sorted[j - 1];
      j--;
    }
    sorted[j] = x;
  }
  put_u8(s, 'A');
  put_count(s, k);
  for (int i = 0; i < k; i++) {
    put_str(s, sorted[i]->key);
    put_ann_value(s, sorted[i]);
  }
}

/* ---- expressions and statements ------------------------------------------ */

static void put_expr(ser *s, const mlc_expr *e);

static void put_exprs(ser *s, int n, mlc_expr *const *es) {
  put_count(s, n);
  for (int i = 0; i < n; i++) put_expr(s, es ? es[i] : NULL);
}

static void put_expr(ser *s, const mlc_expr *e) {
  if (!e) {
    put_u8(s, 'N');
    return;
  }
  put_u8(s, 'E');
  put_str(s, (unsigned)e->kind < MLC_EXPR_KIND_COUNT ? mlc_expr_kind_name(e->kind) : "?");
  put_dtype(s, e->dtype);
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    if (s->slots && e->dtype != MLC_BOOL) MLC_VEC_APUSH(s->a, s->int_slots, ((mlc_int_slot){e, NULL, 0}));
    else put_i64(s, e->int_val);
    return;
  case MLC_EXPR_FLOAT_IMM:
    put_f64(s, e->float_val);
    return;
  case MLC_EXPR_VAR:
    use_var(s, e->var);
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
    put_expr(s, e->bin.a);
    put_expr(s, e->bin.b);
    return;
  case MLC_EXPR_NOT:
    put_expr(s, e->bin.a);
    return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    put_expr(s, e->sel.cond);
    put_expr(s, e->sel.t);
    put_expr(s, e->sel.f);
    return;
  case MLC_EXPR_LOAD:
    use_buf(s, e->load.buf);
    put_exprs(s, e->load.buf ? e->load.buf->ndim : 0, e->load.indices);
    return;
  case MLC_EXPR_CAST:
    put_expr(s, e->cast.value);
    return;
  case MLC_EXPR_CALL: {
    bool known = (unsigned)e->call.op < MLC_INTRIN_COUNT;
    put_str(s, known ? mlc_intrin_name(e->call.op) : "?");
    put_exprs(s, known ? mlc_intrin_nargs(e->call.op) : 0, e->call.args);
    return;
  }
  case MLC_EXPR_CALL_EXTERN:
    put_str(s, e->ext.name);
    put_count(s, e->ext.n_args);
    for (int i = 0; i < e->ext.n_args; i++) {
      const mlc_xarg *x = &e->ext.args[i];
      put_count(s, (int)x->kind);
      if (x->kind != MLC_XARG_VALUE) use_buf(s, x->buf);
      put_count(s, x->access);
      put_count(s, x->dim);
      put_count(s, x->kid);
    }
    put_exprs(s, e->ext.n_kids, e->ext.kids);
    return;
  }
  /* Unknown kind (ill-formed): its name "?" was written; nothing more. */
}

static void put_range(ser *s, mlc_range r) {
  put_expr(s, r.min);
  put_expr(s, r.extent);
}

static void put_regions(ser *s, int n, const mlc_region *r) {
  put_count(s, n);
  for (int i = 0; i < n; i++) {
    use_buf(s, r[i].buf);
    int nd = r[i].buf ? r[i].buf->ndim : 0;
    put_count(s, nd);
    for (int d = 0; d < nd; d++) put_range(s, r[i].ranges[d]);
  }
}

static void put_stmt(ser *s, const mlc_stmt *st);

static void put_opt_stmt(ser *s, const mlc_stmt *st) {
  put_u8(s, st ? 1 : 0);
  if (st) put_stmt(s, st);
}

static void put_block(ser *s, const mlc_block *b) {
  if (!b) {
    put_u8(s, 'n');
    return;
  }
  put_u8(s, 'K'); /* the name is not part of the structure */
  put_count(s, b->n_iters);
  for (int i = 0; i < b->n_iters; i++) {
    def_var(s, b->iters[i].var);
    put_u8(s, b->iters[i].kind == MLC_ITER_REDUCE ? 'R' : 'S');
    put_range(s, b->iters[i].dom);
  }
  put_count(s, b->n_allocs);
  for (int i = 0; i < b->n_allocs; i++) def_buf(s, b->allocs[i]);
  put_regions(s, b->n_reads, b->reads);
  put_regions(s, b->n_writes, b->writes);
  put_anns(s, b->n_anns, b->anns, NULL);
  put_opt_stmt(s, b->init);
  put_opt_stmt(s, b->body);
}

static void put_stmt(ser *s, const mlc_stmt *st) {
  if (!st) {
    put_u8(s, 'N');
    return;
  }
  put_u8(s, 'T');
  put_str(s, (unsigned)st->kind < MLC_STMT_KIND_COUNT ? mlc_stmt_kind_name(st->kind) : "?");
  switch (st->kind) {
  case MLC_STMT_FOR:
    put_str(s, (unsigned)st->loop.kind < MLC_FOR_KIND_COUNT ? mlc_for_kind_name(st->loop.kind)
                                                              : "?");
    put_str(s, st->loop.thread);
    put_expr(s, st->loop.min);
    put_expr(s, st->loop.extent);
    put_anns(s, st->loop.n_anns, st->loop.anns, NULL);
    def_var(s, st->loop.var);
    put_opt_stmt(s, st->loop.body);
    return;
  case MLC_STMT_BLOCK_REALIZE: {
    const mlc_block *b = st->realize.block;
    put_exprs(s, b ? b->n_iters : 0, st->realize.values);
    put_u8(s, st->realize.predicate ? 1 : 0);
    if (st->realize.predicate) put_expr(s, st->realize.predicate);
    put_block(s, b);
    return;
  }
  case MLC_STMT_SEQ:
    put_count(s, st->seq.n);
    for (int i = 0; i < st->seq.n; i++) put_stmt(s, st->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    use_buf(s, st->store.buf);
    put_exprs(s, st->store.buf ? st->store.buf->ndim : 0, st->store.indices);
    put_expr(s, st->store.value);
    return;
  case MLC_STMT_IF:
    put_expr(s, st->if_.cond);
    put_opt_stmt(s, st->if_.then_s);
    put_opt_stmt(s, st->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE:
    def_buf(s, st->alloc.buf);
    put_opt_stmt(s, st->alloc.body);
    return;
  case MLC_STMT_EVALUATE:
    put_expr(s, st->eval.value);
    return;
  }
}

static void serialize(ser *s, const mlc_prim_func *f) {
  /* A function without size vars keeps the encoding it always had, so the
   * workload hashes stored in databases stay valid. */
  s->symbolic = f->n_sizes > 0;
  put_str(s, s->symbolic ? STRUCT_FORMAT_SYMBOLIC : STRUCT_FORMAT);
  if (s->symbolic) {
    put_count(s, f->n_sizes);
    for (int k = 0; k < f->n_sizes; k++) {
      def_var(s, f->sizes[k].var);
      put_i64(s, f->sizes[k].lo);
      put_i64(s, f->sizes[k].hi);
    }
  }
  put_count(s, f->n_params);
  for (int i = 0; i < f->n_params; i++) def_buf(s, f->params[i]);
  /* The symbol name is a renaming like the function name; other attrs
   * (e.g. tir.noalias) change meaning and are compared. */
  put_anns(s, f->n_attrs, f->attrs, "global_symbol");
  put_opt_stmt(s, f->body);
}

uint64_t mlc_func_struct_hash_in(mlc_arena *scratch, const mlc_prim_func *f) {
  ser s;
  ser_init(&s, scratch);
  serialize(&s, f);
  return mlc_hash_bytes(s.out.data, s.out.len, STRUCT_HASH_SEED);
}

bool mlc_func_struct_equal_in(mlc_arena *scratch, const mlc_prim_func *x,
                              const mlc_prim_func *y) {
  if (x == y) return true;
  ser a, b;
  ser_init(&a, scratch);
  ser_init(&b, scratch);
  serialize(&a, x);
  serialize(&b, y);
  return a.out.len == b.out.len && memcmp(a.out.data, b.out.data, a.out.len) == 0;
}

void mlc_func_int_slots(mlc_arena *a, const mlc_prim_func *f, mlc_str *skeleton, int *n,
                        mlc_int_slot **slots) {
  ser s;
  ser_init(&s, a);
  s.slots = true;
  serialize(&s, f);
  *skeleton = s.out;
  *n = (int)s.int_slots.len;
  *slots = s.int_slots.data;
}

/* No error path: their scratch arena has no escape point, so running out
 * of memory aborts (callers that can report it use the _in forms). */
uint64_t mlc_func_struct_hash(const mlc_prim_func *f) {
  mlc_arena *a = mlc_arena_new();
  uint64_t h = mlc_func_struct_hash_in(a, f);
  mlc_arena_free(a);
  return h;
}

bool mlc_func_struct_equal(const mlc_prim_func *x, const mlc_prim_func *y) {
  if (x == y) return true;
  mlc_arena *a = mlc_arena_new();
  bool eq = mlc_func_struct_equal_in(a, x, y);
  mlc_arena_free(a);
  return eq;
}

void mlc_func_hash_hex(const mlc_prim_func *f, char buf[17]) {
  snprintf(buf, 17, "%016" PRIx64, mlc_func_struct_hash(f));
}
