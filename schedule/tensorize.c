/* Tensor intrinsics and the tensorize primitive.
 *
 * An intrinsic is a pair of prim_funcs with the same parameters (shape,
 * dtype, storage scope): the description, whose root block says what the
 * instruction computes over its operands, and the implementation, whose
 * root block computes the same (T.call_extern, vector code). tensorize
 * matches a block's body against the description's root body as
 * TensorIR's TensorizeComparator does: the same statements, loop extents,
 * iterator kinds and bindings, operations and dtypes; each buffer of the
 * block maps to one operand (same dtype and scope), every access of it at
 * the operand's index plus one base offset, which must be where the
 * block's read/write region of that buffer starts, the region being the
 * operand's shape. The block's body is then replaced by the
 * implementation's with each operand bound to its region (indices and
 * pointers shifted by the base, strides taken from the buffer).
 * A description whose root opens with `with T.init():` describes a block
 * together with its init: it matches a block whose init runs at each of its
 * executions (no reduce iter of more than one value), whose init goes with
 * the body (an accumulator zeroed in registers, never stored and loaded).
 *
 * The registry is process-wide: a built-in table (tmm16, the notes'
 * example) registered on first use, plus what callers add.
 */
#include "schedule/sched_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- registry --------------------------------------------------------------- */

/* MAX_INTRINS also bounds the members of families generated on demand (a
 * tuning run of one workload samples a few dozen tile shapes). */
enum { MAX_INTRINS = 512, MAX_OPERANDS = 16, MAX_FAMILIES = 16 };

typedef struct intrin {
  char name[64];
  const mlc_prim_func *desc, *impl; /* in reg_arena */
} intrin_entry;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static mlc_arena *reg_arena;
static intrin_entry intrins[MAX_INTRINS];
static int n_intrins;
static bool builtins_done;

/* Families of intrinsics generated on demand: a name "<prefix>_<suffix>"
 * that is not registered yet is asked of its family's generator, which
 * writes the pair's TVMScript for that suffix (or refuses it). */
static struct {
  char prefix[48];
  sched_intrin_gen gen;
} families[MAX_FAMILIES];
static int n_families;

/* The notes' tmm16 (examples/tensorize/tmm16.py): C += A @ B.T on 16x16
 * tiles in the accelerator's scopes, implemented by the C function
 * int32_t tmm16(float *C, const float *A, const float *B, int sa, int sb,
 * int sc) that the final link (or mlc_jit_define_symbol) provides. */
static const char builtin_text[] =
    "@T.prim_func\n"
    "def tmm16_desc(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (16, 16), \"float32\", scope=\"global.A_reg\")\n"
    "    B = T.match_buffer(b, (16, 16), \"float32\", scope=\"global.B_reg\")\n"
    "    C = T.match_buffer(c, (16, 16), \"float32\", scope=\"global.accumulator\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])\n"
    "        T.writes(C[0:16, 0:16])\n"
    "        for i, j, k in T.grid(16, 16, 16):\n"
    "            with T.block(\"tmm16\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]\n"
    "\n"
    "@T.prim_func\n"
    "def tmm16_impl(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (16, 16), \"float32\", scope=\"global.A_reg\")\n"
    "    B = T.match_buffer(b, (16, 16), \"float32\", scope=\"global.B_reg\")\n"
    "    C = T.match_buffer(c, (16, 16), \"float32\", scope=\"global.accumulator\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])\n"
    "        T.writes(C[0:16, 0:16])\n"
    "        T.evaluate(T.call_extern(\"int32\", \"tmm16\", C.access_ptr(\"rw\"), A.access_ptr(\"r\"), "
    "B.access_ptr(\"r\"), A.strides[0], B.strides[0], C.strides[0]))\n";

static bool same_operand(const mlc_buffer *x, const mlc_buffer *y) {
  if (x->dtype != y->dtype || x->ndim != y->ndim || strcmp(x->scope, y->scope) != 0) return false;
  for (int d = 0; d < x->ndim; d++)
    if (x->shape[d] != y->shape[d]) return false;
  return true;
}

static bool check_pair(const char *name, const mlc_prim_func *desc, const mlc_prim_func *impl,
                       mlc_error *err) {
  if (!mlc_verify_func(desc, err) || !mlc_verify_func(impl, err))
    return mlc_error_prefix(err, "tensor intrinsic %s", name);
  if (desc->n_params != impl->n_params || desc->n_params > MAX_OPERANDS)
    return mlc_error_set(err, "tensor intrinsic %s: description and implementation take %d and %d "
                         "operands (at most %d)", name, desc->n_params, impl->n_params, MAX_OPERANDS);
  for (int i = 0; i < desc->n_params; i++)
    if (!same_operand(desc->params[i], impl->params[i]))
      return mlc_error_set(err, "tensor intrinsic %s: operand %d (%s) differs in shape, dtype or "
                           "scope between description and implementation", name, i,
                           desc->params[i]->name);
  if (mlc_func_root(desc)->n_allocs)
    return mlc_error_set(err, "tensor intrinsic %s: the description allocates buffers", name);
  return true;
}

/* Requires reg_mu held. */
static bool add_locked(const char *name, const mlc_prim_func *desc, const mlc_prim_func *impl,
                       mlc_error *err) {
  if (strlen(name) >= sizeof intrins[0].name || !*name)
    return mlc_error_set(err, "tensor intrinsic name \"%s\" is empty or too long", name);
  if (!check_pair(name, desc, impl, err)) return false;
  int i = 0;
  while (i < n_intrins && strcmp(intrins[i].name, name) != 0) i++;
  if (i == MAX_INTRINS) return mlc_error_set(err, "more than %d tensor intrinsics", MAX_INTRINS);
  if (!reg_arena) reg_arena = mlc_arena_new();
  strcpy(intrins[i].name, name);
  intrins[i].desc = mlc_func_copy(reg_arena, desc);
  intrins[i].impl = mlc_func_copy(reg_arena, impl);
  if (i == n_intrins) n_intrins++;
  return true;
}

/* Pairs <name>_desc / <name>_impl of m, registered as <name>. */
static bool add_module_locked(const mlc_module *m, int *n_added, mlc_error *err) {
  int n = 0;
  for (int i = 0; i < m->n_funcs; i++) {
    const char *fn = m->funcs[i]->name;
    size_t len = strlen(fn);
    if (len <= 5 || strcmp(fn + len - 5, "_desc") != 0) continue;
    char name[64], impl_name[80];
    if (len - 5 >= sizeof name)
      return mlc_error_set(err, "tensor intrinsic name of %s is too long", fn);
    memcpy(name, fn, len - 5);
    name[len - 5] = 0;
    snprintf(impl_name, sizeof impl_name, "%s_impl", name);
    const mlc_prim_func *impl = mlc_module_find(m, impl_name);
    if (!impl) return mlc_error_set(err, "%s has no implementation %s", fn, impl_name);
    if (!add_locked(name, m->funcs[i], impl, err)) return false;
    n++;
  }
  if (n == 0) return mlc_error_set(err, "no tensor intrinsic (a pair NAME_desc, NAME_impl) found");
  if (n_added) *n_added = n;
  return true;
}

/* Requires reg_mu held. The built-in text parses: a failure is a bug. */
static void ensure_builtins(void) {
  if (builtins_done) return;
  builtins_done = true;
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "<built-in intrinsics>", builtin_text, &err);
  if (!m || !add_module_locked(m, NULL, &err)) mlc_panic(__FILE__, __LINE__, "%s", err.msg);
  mlc_arena_free(a);
}

bool mlc_tensor_intrin_register(const char *name, const mlc_prim_func *desc,
                                const mlc_prim_func *impl, mlc_error *err) {
  pthread_mutex_lock(&reg_mu);
  ensure_builtins();
  bool ok = add_locked(name, desc, impl, err);
  pthread_mutex_unlock(&reg_mu);
  return ok;
}

bool mlc_tensor_intrin_register_text(const char *filename, const char *text, int *n_added,
                                     mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, filename, text, err);
  bool ok = m != NULL;
  if (ok) {
    pthread_mutex_lock(&reg_mu);
    ensure_builtins();
    ok = add_module_locked(m, n_added, err);
    pthread_mutex_unlock(&reg_mu);
  }
  mlc_arena_free(a);
  return ok;
}

bool sched_intrin_add_family(const char *prefix, sched_intrin_gen gen) {
  if (strlen(prefix) >= sizeof families[0].prefix || !*prefix) return false;
  pthread_mutex_lock(&reg_mu);
  int i = 0;
  while (i < n_families && strcmp(families[i].prefix, prefix) != 0) i++;
  bool ok = i < MAX_FAMILIES;
  if (ok) {
    strcpy(families[i].prefix, prefix);
    families[i].gen = gen;
    if (i == n_families) n_families++;
  }
  pthread_mutex_unlock(&reg_mu);
  return ok;
}

static int lookup_locked(const char *name) {
  for (int i = 0; i < n_intrins; i++)
    if (strcmp(intrins[i].name, name) == 0) return i;
  return -1;
}

/* Requires reg_mu held: name generated and registered by its family, if
 * one takes it and the table has room (else -1, as for an unknown name).
 * The generated text parses (a failure is a bug). */
static int generate_locked(const char *name) {
  for (int f = 0; f < n_families; f++) {
    size_t n = strlen(families[f].prefix);
    if (strncmp(name, families[f].prefix, n) != 0 || name[n] != '_') continue;
    mlc_str text = {0};
    if (!families[f].gen(name + n + 1, &text)) {
      mlc_str_free(&text);
      continue;
    }
    mlc_arena *a = mlc_arena_new();
    mlc_error err;
    mlc_module *m = mlc_parse_module(a, name, text.data, &err);
    if (!m) mlc_panic(__FILE__, __LINE__, "%s: %s", name, err.msg);
    bool added = add_module_locked(m, NULL, &err);
    mlc_arena_free(a);
    mlc_str_free(&text);
    return added ? lookup_locked(name) : -1;
  }
  return -1;
}

bool mlc_tensor_intrin_register_file(const char *path, int *n_added, mlc_error *err) {
  char *text = mlc_read_file(path, NULL, err);
  bool ok = text && mlc_tensor_intrin_register_text(path, text, n_added, err);
  mlc_free(text);
  return ok;
}

/* The registered pair (stays valid: entries are replaced, never freed). */
static bool find_intrin(const char *name, const mlc_prim_func **desc, const mlc_prim_func **impl) {
  pthread_mutex_lock(&reg_mu);
  ensure_builtins();
  int i = lookup_locked(name);
  if (i < 0) i = generate_locked(name);
  if (i >= 0) {
    *desc = intrins[i].desc;
    *impl = intrins[i].impl;
  }
  pthread_mutex_unlock(&reg_mu);
  return i >= 0;
}

bool mlc_tensor_intrin_exists(const char *name) {
  const mlc_prim_func *d, *i;
  return find_intrin(name, &d, &i);
}

int mlc_tensor_intrin_count(void) {
  pthread_mutex_lock(&reg_mu);
  ensure_builtins();
  int n = n_intrins;
  pthread_mutex_unlock(&reg_mu);
  return n;
}

const char *mlc_tensor_intrin_name(int i) {
  MLC_ASSERT(i >= 0 && i < mlc_tensor_intrin_count());
  return intrins[i].name; /* entries are replaced in place, never removed */
}

/* A FOR over [0, extent) with a constant extent; 0 otherwise. */
static int64_t plain_loop(const mlc_stmt *st) {
  int64_t mn, ext;
  if (!st || st->kind != MLC_STMT_FOR || !mlc_expr_is_const_int(st->loop.min, &mn) || mn != 0 ||
      !mlc_expr_is_const_int(st->loop.extent, &ext))
    return 0;
  return ext;
}

bool mlc_tensor_intrin_dot_shape(const char *name, int64_t *lanes, int64_t *depth) {
  const mlc_prim_func *desc, *impl;
  if (!find_intrin(name, &desc, &impl)) return false;
  if (mlc_func_root(desc)->init) return false; /* it needs the whole reduction */
  const mlc_stmt *li = mlc_func_root(desc)->body;
  const mlc_stmt *lk = plain_loop(li) ? li->loop.body : NULL;
  const mlc_stmt *r = plain_loop(lk) ? lk->loop.body : NULL;
  if (!r || r->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = r->realize.block;
  if (b->n_iters != 2 || b->iters[0].kind == MLC_ITER_REDUCE || b->iters[1].kind != MLC_ITER_REDUCE)
    return false;
  *lanes = plain_loop(li);
  *depth = plain_loop(lk);
  return true;
}

/* ---- matching ------------------------------------------------------------------ */

typedef struct matcher {
  mlc_arena *a; /* what matching builds (the state's arena: the bases outlive it) */
  const mlc_prim_func *desc;
  const char *bname; /* the block being tensorized, for messages */
  MLC_VEC(mlc_var *) tvars;  /* block vars ... */
  MLC_VEC(mlc_expr *) dvals; /* ... and the description vars they stand for */
  MLC_VEC(mlc_var *) dvars;  /* every var the description defines */
  mlc_buffer *cur[MAX_OPERANDS]; /* operand i -> the block's buffer */
  mlc_expr **base[MAX_OPERANDS]; /* ... and its offset per dimension */
  mlc_simplifier *simp; /* knows the description's loop and iter var ranges, so
                           that (vo * 16 + vi) // 16 - 0 is vo for vi < 16 */
  mlc_error *err;
} matcher;

static bool mfail(matcher *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool mfail(matcher *m, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mlc_error_set(m->err, "%s", msg);
}

static const char *show(matcher *m, const mlc_expr *e) {
  mlc_str s = {0};
  mlc_print_expr(&s, e);
  char *r = mlc_arena_strdup(m->a, s.data ? s.data : "");
  mlc_str_free(&s);
  return r;
}

/* dv ranges over [min, min + extent) when both are constants. */
static void bind_range(matcher *m, mlc_var *dv, const mlc_expr *min, const mlc_expr *extent) {
  int64_t lo, n;
  if (mlc_expr_is_const_int(min, &lo) && mlc_expr_is_const_int(extent, &n))
    mlc_simplifier_bind(m->simp, dv, lo, n);
}

/* Indices are compared by substituting the description's vars for the
 * block's, which needs one integer type on both sides: a kernel indexed
 * by int64 (ONNX exports' sizes) does not match an int32 description. */
static bool same_index_dtype(matcher *m, const mlc_var *tv, const mlc_var *dv) {
  return tv->dtype == dv->dtype ||
         mfail(m, "dtype mismatch: index %s is %s, the intrinsic's %s is %s", tv->name,
               mlc_dtype_name(tv->dtype), dv->name, mlc_dtype_name(dv->dtype));
}

static void bind_var(matcher *m, mlc_var *tv, mlc_var *dv) {
  MLC_VEC_APUSH(m->a, m->tvars, tv);
  MLC_VEC_APUSH(m->a, m->dvals, mlc_ref(m->a, dv));
  MLC_VEC_APUSH(m->a, m->dvars, dv);
}

/* t in the description's vars. */
static mlc_expr *in_desc(matcher *m, mlc_expr *t) {
  return mlc_expr_subst(m->a, t, m->tvars.len, m->tvars.data, m->dvals.data);
}

static bool uses_desc_var(matcher *m, const mlc_expr *e) {
  for (int i = 0; i < m->dvars.len; i++)
    if (mlc_expr_uses_var(e, m->dvars.data[i])) return true;
  return false;
}

static int operand_of(const matcher *m, const mlc_buffer *db) {
  for (int i = 0; i < m->desc->n_params; i++)
    if (m->desc->params[i] == db) return i;
  return -1;
}

/* The block's buffer tb plays the description's db, accessed at tidx /
 * didx: the same operand throughout, at one base offset. */
static bool match_access(matcher *m, mlc_buffer *tb, mlc_expr **tidx, const mlc_buffer *db,
                         mlc_expr **didx) {
  int p = operand_of(m, db);
  if (p < 0) return mfail(m, "access pattern mismatch: the description accesses %s, not an operand", db->name);
  if (!m->cur[p]) {
    if (tb->dtype != db->dtype)
      return mfail(m, "dtype mismatch: buffer %s is %s, the intrinsic's operand %s is %s", tb->name,
                   mlc_dtype_name(tb->dtype), db->name, mlc_dtype_name(db->dtype));
    if (strcmp(tb->scope, db->scope) != 0)
      return mfail(m, "storage scope mismatch: buffer %s is in \"%s\", the intrinsic's operand %s in "
                   "\"%s\" (cache_read/cache_write into that scope first)", tb->name, tb->scope,
                   db->name, db->scope);
    if (tb->ndim != db->ndim)
      return mfail(m, "shape mismatch: buffer %s has %d dimensions, the intrinsic's operand %s %d",
                   tb->name, tb->ndim, db->name, db->ndim);
    for (int q = 0; q < m->desc->n_params; q++)
      if (m->cur[q] == tb)
        return mfail(m, "access pattern mismatch: buffer %s would be both operands %s and %s",
                     tb->name, m->desc->params[q]->name, db->name);
    m->cur[p] = tb;
    m->base[p] = MLC_NEW_ARRAY(m->a, mlc_expr *, tb->ndim ? tb->ndim : 1);
  } else if (m->cur[p] != tb) {
    return mfail(m, "access pattern mismatch: the intrinsic's operand %s is both %s and %s", db->name,
                 m->cur[p]->name, tb->name);
  }
  for (int d = 0; d < tb->ndim; d++) {
    mlc_expr *off = mlc_simplify(m->simp, mlc_sub(m->a, in_desc(m, tidx[d]), didx[d]));
    int64_t diff;
    if (uses_desc_var(m, off))
      return mfail(m, "access pattern mismatch: %s index %s does not follow the intrinsic's %s[..%s..]",
                   tb->name, show(m, tidx[d]), db->name, show(m, didx[d]));
    if (!m->base[p][d]) m->base[p][d] = off;
    else if (!mlc_expr_const_diff(m->a, off, m->base[p][d], &diff) || diff != 0)
      return mfail(m, "access pattern mismatch: %s is accessed at offsets %s and %s of the intrinsic's "
                   "operand %s", tb->name, show(m, off), show(m, m->base[p][d]), db->name);
  }
  return true;
}

static bool match_expr(matcher *m, mlc_expr *t, mlc_expr *d);

static bool match_exprs(matcher *m, int n, mlc_expr **t, mlc_expr **d) {
  for (int i = 0; i < n; i++)
    if (!match_expr(m, t[i], d[i])) return false;
  return true;
}

static bool match_expr(matcher *m, mlc_expr *t, mlc_expr *d) {
  if (!t || !d) return t == d || mfail(m, "access pattern mismatch: an expression is missing");
  if (t->kind == MLC_EXPR_CALL_EXTERN)
    return mfail(m, "access pattern mismatch: block %s already calls %s", m->bname, t->ext.name);
  if (t->kind != d->kind)
    return mfail(m, "access pattern mismatch: %s where the intrinsic computes %s", show(m, t), show(m, d));
  if (t->dtype != d->dtype)
    return mfail(m, "dtype mismatch: %s is %s, the intrinsic's %s is %s", show(m, t),
                 mlc_dtype_name(t->dtype), show(m, d), mlc_dtype_name(d->dtype));
  switch (t->kind) {
  case MLC_EXPR_INT_IMM:
    return t->int_val == d->int_val || mfail(m, "access pattern mismatch: constant %s, the intrinsic's %s",
                                              show(m, t), show(m, d));
  case MLC_EXPR_FLOAT_IMM:
    return t->float_val == d->float_val ||
           mfail(m, "access pattern mismatch: constant %s, the intrinsic's %s", show(m, t), show(m, d));
  case MLC_EXPR_VAR: {
    mlc_expr *x = in_desc(m, t);
    return (x->kind == MLC_EXPR_VAR && x->var == d->var) ||
           mfail(m, "access pattern mismatch: %s where the intrinsic has %s", show(m, t), show(m, d));
  }
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
  case MLC_EXPR_OR: return match_expr(m, t->bin.a, d->bin.a) && match_expr(m, t->bin.b, d->bin.b);
  case MLC_EXPR_NOT: return match_expr(m, t->bin.a, d->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return match_expr(m, t->sel.cond, d->sel.cond) && match_expr(m, t->sel.t, d->sel.t) &&
           match_expr(m, t->sel.f, d->sel.f);
  case MLC_EXPR_LOAD:
    return match_access(m, t->load.buf, t->load.indices, d->load.buf, d->load.indices);
  case MLC_EXPR_CAST: return match_expr(m, t->cast.value, d->cast.value);
  case MLC_EXPR_CALL:
    if (t->call.op != d->call.op)
      return mfail(m, "access pattern mismatch: %s where the intrinsic computes %s", show(m, t), show(m, d));
    return match_exprs(m, mlc_intrin_nargs(t->call.op), t->call.args, d->call.args);
  case MLC_EXPR_CALL_EXTERN: break; /* refused above */
  }
  mlc_unreachable();
}

/* An index or binding of the block equals the description's once the vars
 * bound so far are mapped. */
static bool same_value(matcher *m, mlc_expr *t, mlc_expr *d) {
  int64_t diff;
  return mlc_expr_const_diff(m->a, in_desc(m, t), d, &diff) && diff == 0;
}

static bool match_stmt(matcher *m, mlc_stmt *t, mlc_stmt *d);

static bool match_realize(matcher *m, mlc_stmt *t, mlc_stmt *d) {
  mlc_block *tb = t->realize.block, *db = d->realize.block;
  if (tb->n_iters != db->n_iters)
    return mfail(m, "shape mismatch: block %s has %d iterators, the intrinsic's block %d", tb->name,
                 tb->n_iters, db->n_iters);
  for (int i = 0; i < tb->n_iters; i++) {
    const mlc_iter_var *ti = &tb->iters[i], *di = &db->iters[i];
    if (!same_index_dtype(m, ti->var, di->var)) return false;
    if (ti->kind != di->kind)
      return mfail(m, "reduction mismatch: iterator %s of block %s is %s, the intrinsic's %s is %s",
                   ti->var->name, tb->name, ti->kind == MLC_ITER_REDUCE ? "a reduction" : "spatial",
                   di->var->name, di->kind == MLC_ITER_REDUCE ? "a reduction" : "spatial");
    if (!same_value(m, ti->dom.extent, di->dom.extent) || !same_value(m, ti->dom.min, di->dom.min))
      return mfail(m, "shape mismatch: iterator %s of block %s ranges over %s from %s, the intrinsic's "
                   "%s over %s", ti->var->name, tb->name, show(m, ti->dom.extent), show(m, ti->dom.min),
                   di->var->name, show(m, di->dom.extent));
    if (!same_value(m, t->realize.values[i], d->realize.values[i]))
      return mfail(m, "access pattern mismatch: iterator %s of block %s is bound to %s, the "
                   "intrinsic's %s to %s", ti->var->name, tb->name, show(m, t->realize.values[i]),
                   di->var->name, show(m, d->realize.values[i]));
  }
  if ((t->realize.predicate != NULL) != (d->realize.predicate != NULL) ||
      (t->realize.predicate && !match_expr(m, t->realize.predicate, d->realize.predicate)))
    return mfail(m, "access pattern mismatch: block %s has %s predicate than the intrinsic's", tb->name,
                 t->realize.predicate ? "another" : "no");
  if ((tb->init != NULL) != (db->init != NULL))
    return mfail(m, "reduction mismatch: block %s %s an init (T.init()), the intrinsic's block %s",
                 tb->name, tb->init ? "has" : "has no", db->init ? "has one" : "does not");
  if (tb->n_allocs || db->n_allocs)
    return mfail(m, "access pattern mismatch: block %s allocates buffers", tb->name);
  for (int i = 0; i < tb->n_iters; i++) {
    bind_var(m, tb->iters[i].var, db->iters[i].var);
    bind_range(m, db->iters[i].var, db->iters[i].dom.min, db->iters[i].dom.extent);
  }
  return (!tb->init || match_stmt(m, tb->init, db->init)) && match_stmt(m, tb->body, db->body);
}

static bool match_stmt(matcher *m, mlc_stmt *t, mlc_stmt *d) {
  if (t->kind != d->kind)
    return mfail(m, "access pattern mismatch: block %s has a %s where the intrinsic has a %s", m->bname,
                 mlc_stmt_kind_name(t->kind), mlc_stmt_kind_name(d->kind));
  switch (t->kind) {
  case MLC_STMT_FOR: {
    int64_t te, de, tm, dm;
    if (!mlc_expr_is_const_int(t->loop.extent, &te) || !mlc_expr_is_const_int(d->loop.extent, &de) ||
        te != de)
      return mfail(m, "shape mismatch: loop %s has extent %s, the intrinsic's loop %s %s",
                   t->loop.var->name, show(m, t->loop.extent), d->loop.var->name, show(m, d->loop.extent));
    if (!mlc_expr_is_const_int(t->loop.min, &tm) || !mlc_expr_is_const_int(d->loop.min, &dm) || tm != dm)
      return mfail(m, "shape mismatch: loop %s starts at %s, the intrinsic's at %s", t->loop.var->name,
                   show(m, t->loop.min), show(m, d->loop.min));
    if (!same_index_dtype(m, t->loop.var, d->loop.var)) return false;
    bind_var(m, t->loop.var, d->loop.var);
    bind_range(m, d->loop.var, d->loop.min, d->loop.extent);
    return match_stmt(m, t->loop.body, d->loop.body);
  }
  case MLC_STMT_BLOCK_REALIZE: return match_realize(m, t, d);
  case MLC_STMT_SEQ:
    if (t->seq.n != d->seq.n)
      return mfail(m, "access pattern mismatch: %d statements where the intrinsic has %d", t->seq.n, d->seq.n);
    for (int i = 0; i < t->seq.n; i++)
      if (!match_stmt(m, t->seq.stmts[i], d->seq.stmts[i])) return false;
    return true;
  case MLC_STMT_STORE:
    return match_access(m, t->store.buf, t->store.indices, d->store.buf, d->store.indices) &&
           match_expr(m, t->store.value, d->store.value);
  case MLC_STMT_IF:
    if ((t->if_.else_s != NULL) != (d->if_.else_s != NULL))
      return mfail(m, "access pattern mismatch: an if without the intrinsic's else branch");
    return match_expr(m, t->if_.cond, d->if_.cond) && match_stmt(m, t->if_.then_s, d->if_.then_s) &&
           (!t->if_.else_s || match_stmt(m, t->if_.else_s, d->if_.else_s));
  case MLC_STMT_ALLOCATE:
    return mfail(m, "access pattern mismatch: block %s allocates buffers", m->bname);
  case MLC_STMT_EVALUATE: return match_expr(m, t->eval.value, d->eval.value);
  }
  mlc_unreachable();
}

/* Every region the block declares is one operand's, at its base and of its
 * shape; every operand is used. */
static bool match_regions(matcher *m, const mlc_block *b, int n, const mlc_region *rs, const char *what) {
  for (int i = 0; i < n; i++) {
    int p = -1;
    for (int q = 0; q < m->desc->n_params && p < 0; q++)
      if (m->cur[q] == rs[i].buf) p = q;
    if (p < 0)
      return mfail(m, "access pattern mismatch: block %s %s %s, which the intrinsic's description does not",
                   b->name, what, rs[i].buf->name);
    const mlc_buffer *op = m->desc->params[p];
    for (int d = 0; d < op->ndim; d++) {
      int64_t ext, diff;
      if (!mlc_expr_is_const_int(rs[i].ranges[d].extent, &ext) || ext != op->shape[d])
        return mfail(m, "shape mismatch: block %s %s %s over %s in dimension %d, the intrinsic's operand "
                     "%s is %lld wide", b->name, what, rs[i].buf->name, show(m, rs[i].ranges[d].extent), d,
                     op->name, (long long)op->shape[d]);
      if (!mlc_expr_const_diff(m->a, rs[i].ranges[d].min, m->base[p][d], &diff) || diff != 0)
        return mfail(m, "access pattern mismatch: block %s %s %s from %s in dimension %d, but its body "
                     "accesses it from %s", b->name, what, rs[i].buf->name,
                     show(m, rs[i].ranges[d].min), d, show(m, m->base[p][d]));
    }
  }
  return true;
}

/* A block with an init matches a description whose root opens with one
 * (the implementation then computes both) only where the init runs at
 * every execution of the block: no reduce iter of the block takes more
 * than one value. */
static bool match_init(matcher *m, const mlc_block *b, const mlc_block *droot) {
  if (!b->init && !droot->init) return true;
  if (!droot->init)
    return mfail(m, "reduction mismatch: block %s has an init (T.init()), the intrinsic's description "
                 "has none: decompose_reduction first", b->name);
  if (!b->init)
    return mfail(m, "reduction mismatch: the intrinsic's description computes an init (T.init()), "
                 "block %s has none", b->name);
  for (int i = 0; i < b->n_iters; i++) {
    int64_t ext;
    if (b->iters[i].kind == MLC_ITER_REDUCE &&
        !(mlc_expr_is_const_int(b->iters[i].dom.extent, &ext) && ext == 1))
      return mfail(m, "reduction mismatch: block %s runs its init only at the first of the %s steps of "
                   "its reduction %s, the intrinsic's implementation at every call: "
                   "decompose_reduction first", b->name, show(m, b->iters[i].dom.extent),
                   b->iters[i].var->name);
  }
  return match_stmt(m, b->init, droot->init);
}

static bool match_block(matcher *m, const mlc_block *b) {
  m->bname = b->name;
  if (b->n_allocs) return mfail(m, "access pattern mismatch: block %s allocates buffers", b->name);
  const mlc_block *droot = mlc_func_root(m->desc);
  if (!b->body || !droot->body) return mfail(m, "access pattern mismatch: an empty body");
  if (!match_init(m, b, droot) || !match_stmt(m, b->body, droot->body)) return false;
  for (int p = 0; p < m->desc->n_params; p++)
    if (!m->cur[p])
      return mfail(m, "access pattern mismatch: block %s does not access the intrinsic's operand %s",
                   b->name, m->desc->params[p]->name);
  return match_regions(m, b, b->n_reads, b->reads, "reads") &&
         match_regions(m, b, b->n_writes, b->writes, "writes");
}

/* ---- replacement ------------------------------------------------------------------ */

typedef struct binder {
  mlc_arena *a;
  const mlc_prim_func *impl;
  mlc_buffer **cur;
  mlc_expr ***base;
} binder;

static int impl_operand(const binder *bd, const mlc_buffer *b) {
  for (int i = 0; i < bd->impl->n_params; i++)
    if (bd->impl->params[i] == b) return i;
  return -1;
}

static mlc_expr **shifted(const binder *bd, int p, mlc_expr **idx) {
  int nd = bd->cur[p]->ndim;
  mlc_expr **out = MLC_NEW_ARRAY(bd->a, mlc_expr *, nd ? nd : 1);
  for (int d = 0; d < nd; d++) {
    mlc_expr *b = bd->base[p][d];
    if (b->dtype != idx[d]->dtype) b = mlc_cast(bd->a, idx[d]->dtype, b);
    out[d] = mlc_simplify_expr(bd->a, mlc_add(bd->a, b, idx[d]));
  }
  return out;
}

/* Operand accesses become accesses of the bound buffers (children first). */
static mlc_expr *bind_expr_fn(mlc_arena *a, mlc_expr *e, void *ud) {
  binder *bd = ud;
  int p;
  if (e->kind == MLC_EXPR_LOAD && (p = impl_operand(bd, e->load.buf)) >= 0)
    return mlc_load(a, bd->cur[p], shifted(bd, p, e->load.indices));
  if (e->kind != MLC_EXPR_CALL_EXTERN) return e;
  mlc_xarg *args = mlc_arena_memdup(a, e->ext.args, sizeof(mlc_xarg) * (size_t)(e->ext.n_args ? e->ext.n_args : 1));
  mlc_expr **kids = e->ext.n_kids ? mlc_arena_memdup(a, e->ext.kids, sizeof(mlc_expr *) * (size_t)e->ext.n_kids) : NULL;
  for (int i = 0; i < e->ext.n_args; i++) {
    if (args[i].kind == MLC_XARG_VALUE || (p = impl_operand(bd, args[i].buf)) < 0) continue;
    if (args[i].kind == MLC_XARG_PTR) {
      mlc_expr **mins = shifted(bd, p, kids + args[i].kid);
      memcpy(kids + args[i].kid, mins, sizeof(mlc_expr *) * (size_t)bd->cur[p]->ndim);
    }
    args[i].buf = bd->cur[p];
  }
  return mlc_call_extern(a, e->dtype, e->ext.name, e->ext.n_args, args, e->ext.n_kids, kids);
}

static mlc_expr *bind_expr(binder *bd, mlc_expr *e) { return mlc_expr_map(bd->a, e, bind_expr_fn, bd); }

static void bind_regions(binder *bd, int n, mlc_region *rs) {
  for (int i = 0; i < n; i++) {
    int p = impl_operand(bd, rs[i].buf);
    for (int d = 0; d < rs[i].buf->ndim; d++) {
      rs[i].ranges[d].min = bind_expr(bd, rs[i].ranges[d].min);
      rs[i].ranges[d].extent = bind_expr(bd, rs[i].ranges[d].extent);
    }
    if (p < 0) continue;
    mlc_expr **mins = MLC_NEW_ARRAY(bd->a, mlc_expr *, rs[i].buf->ndim + 1);
    for (int d = 0; d < rs[i].buf->ndim; d++) mins[d] = rs[i].ranges[d].min;
    mins = shifted(bd, p, mins);
    for (int d = 0; d < rs[i].buf->ndim; d++) rs[i].ranges[d].min = mins[d];
    rs[i].buf = bd->cur[p];
  }
}

/* The implementation's statements (a private copy) rewritten in place. */
static void bind_stmt(binder *bd, mlc_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR:
    s->loop.min = bind_expr(bd, s->loop.min);
    s->loop.extent = bind_expr(bd, s->loop.extent);
    bind_stmt(bd, s->loop.body);
    return;
  case MLC_STMT_BLOCK_REALIZE: {
    mlc_block *b = s->realize.block;
    for (int i = 0; i < b->n_iters; i++) s->realize.values[i] = bind_expr(bd, s->realize.values[i]);
    s->realize.predicate = bind_expr(bd, s->realize.predicate);
    bind_regions(bd, b->n_reads, b->reads);
    bind_regions(bd, b->n_writes, b->writes);
    bind_stmt(bd, b->init);
    bind_stmt(bd, b->body);
    return;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) bind_stmt(bd, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE: {
    int p = impl_operand(bd, s->store.buf);
    s->store.indices = mlc_exprs_map(bd->a, s->store.indices, s->store.buf->ndim, bind_expr_fn, bd);
    if (p >= 0) {
      s->store.indices = shifted(bd, p, s->store.indices);
      s->store.buf = bd->cur[p];
    }
    s->store.value = bind_expr(bd, s->store.value);
    return;
  }
  case MLC_STMT_IF:
    s->if_.cond = bind_expr(bd, s->if_.cond);
    bind_stmt(bd, s->if_.then_s);
    bind_stmt(bd, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: bind_stmt(bd, s->alloc.body); return;
  case MLC_STMT_EVALUATE: s->eval.value = bind_expr(bd, s->eval.value); return;
  }
  mlc_unreachable();
}

/* ---- the primitive ------------------------------------------------------------------ */

/* Replace b's body by the implementation bound to m's operands (their
 * bases in s's arena); verify the function, undoing the change if it does
 * not. */
static bool replace(mlc_sched *s, mlc_block *b, const mlc_prim_func *impl, matcher *m,
                    const char *intrin, mlc_error *err) {
  mlc_arena *a = s->arena;
  mlc_prim_func *ic = mlc_func_copy(a, impl);
  mlc_block *iroot = mlc_func_root(ic);
  binder bd = {a, ic, m->cur, m->base};
  bind_stmt(&bd, iroot->body);
  mlc_stmt *old_body = b->body, *old_init = b->init;
  int old_n = b->n_allocs;
  mlc_buffer **old_allocs = b->allocs;
  b->body = iroot->body;
  b->init = NULL; /* matched with the description's: the implementation computes it */
  if (iroot->n_allocs) {
    b->allocs = MLC_NEW_ARRAY(a, mlc_buffer *, iroot->n_allocs);
    memcpy(b->allocs, iroot->allocs, sizeof(mlc_buffer *) * (size_t)iroot->n_allocs);
    b->n_allocs = iroot->n_allocs;
  }
  if (!mlc_verify_func_in(a, s->func, err)) {
    b->body = old_body, b->init = old_init, b->allocs = old_allocs, b->n_allocs = old_n;
    return mlc_error_prefix(err, "the implementation of %s does not fit block %s", intrin, b->name);
  }
  return true;
}

/* Blockize a loop, match, replace: on s itself or on a copy (a probe). */
static bool run(mlc_sched *s, mlc_rv rv, bool is_loop, const mlc_prim_func *desc,
                const mlc_prim_func *impl, const char *intrin, mlc_error *err) {
  mlc_block *b;
  if (is_loop) {
    if (!sched_blockize(s, rv, true, &b, err)) return false;
  } else {
    b = s->rvs.data[rv].block;
  }
  matcher m = {.a = s->arena, .desc = desc, .simp = mlc_simplifier_new(s->arena), .err = err};
  return match_block(&m, b) && replace(s, b, impl, &m, intrin, err);
}

bool mlc_sched_tensorize(mlc_sched *s, mlc_rv block_or_loop, const char *intrin, mlc_error *err) {
  char desc_buf[96];
  const mlc_prim_func *desc, *impl;
  if (!find_intrin(intrin, &desc, &impl))
    return mlc_error_set(err, "tensorize: no tensor intrinsic named \"%s\" is registered", intrin);
  bool is_loop = block_or_loop >= 0 && block_or_loop < s->rvs.len &&
                 s->rvs.data[block_or_loop].kind == MLC_RV_LOOP;
  if (is_loop ? !sched_check_loop(s, "tensorize", block_or_loop, err)
              : !sched_check_block(s, "tensorize", block_or_loop, err))
    return false;
  if (sched_func_height(s) > SCHED_MAX_NEST)
    return mlc_error_set(err, "tensorize: the function nests deeper than %d statements", SCHED_MAX_NEST);
  /* Everything happens first on a copy, so that a refusal leaves s (IR,
   * handles, trace, generator, arena) as it was; then, deterministically,
   * on s. */
  mlc_sched *probe = mlc_sched_copy(s);
  bool ok = run(probe, block_or_loop, is_loop, desc, impl, intrin, err);
  mlc_sched_free(probe);
  if (!ok)
    return mlc_error_prefix(err, "tensorize: %s with %s", sched_rv_desc(s, block_or_loop, desc_buf),
                            intrin);
  ok = run(s, block_or_loop, is_loop, desc, impl, intrin, err);
  MLC_ASSERT(ok); /* the probe did the same */
  mlc_operand in = MLC_OP_RV(block_or_loop);
  mlc_attr at = sched_attr_str("intrin", intrin);
  sched_record(s, MLC_INST_TENSORIZE, 1, &in, 1, &at, 0, NULL);
  return true;
}
