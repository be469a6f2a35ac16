/* TVMScript parser: statements, blocks, functions and modules.
 *
 * The subset of docs/FORMATS.md. A function body is the suite of an
 * implicit root block: its top-level `T.alloc_buffer`s become the root's
 * allocs (or an explicit `with T.block("root"):` is the only statement).
 * A block's suite opens with its header (axes, T.where, T.reads/T.writes,
 * T.block_attr, T.alloc_buffer, `with T.init():`, in any order) followed by
 * its body. An explicit root block may open with `with T.init():` (a
 * tensor intrinsic describing a block together with its init). `X = T.decl_buffer(...)` scopes the rest of its suite.
 *
 * lex.c turns the text into tokens; parse_expr.c reads and lowers
 * expressions; parse_internal.h says how they share the parser state.
 */
#include "ir/parse_internal.h"

#include <stdio.h>

typedef MLC_VEC(mlc_stmt *) stmt_vec;

/* The block whose suite is being parsed (NULL inside loops, ifs, inits). */
typedef struct binfo {
  const char *name;
  bool is_root;
  bool explicit_root; /* written `with T.block("root"):` */
  bool body_started;  /* header items are over */
  MLC_VEC(mlc_iter_var) iters;
  MLC_VEC(mlc_expr *) values; /* binding of each iter var */
  mlc_expr *pred;             /* T.where */
  bool has_reads, has_writes;
  MLC_VEC(mlc_region) reads, writes;
  int n_anns;
  mlc_ann *anns;
  MLC_VEC(mlc_buffer *) allocs;
  mlc_stmt *init;
  bool root_done;      /* function level: the explicit root block was read */
  mlc_stmt *root_body; /* its body */
} binfo;

struct pfunc {
  MLC_VEC(mlc_buffer *) params; /* NULL: a T.handle not yet matched */
  MLC_VEC(const ptok *) param_toks;
  int n_attrs;
  mlc_ann *attrs;
};

static mlc_stmt *suite(mlc_parser *p, binfo *bi, bool ft);

static mlc_stmt *eval0(mlc_parser *p) { return mlc_evaluate_new(p->a, mlc_int(p->a, 0)); }

static mlc_stmt *seq_of(mlc_parser *p, mlc_stmt **s, int n) {
  if (n == 0) return NULL;
  if (n == 1) return s[0];
  return mlc_seq_new(p->a, n, s);
}

static const char *dotted_call(mlc_parser *p, const pnode *n) {
  return n->kind == PN_CALL ? mlc_parse_dotted(p, n->x) : NULL;
}

static void no_kwargs(mlc_parser *p, const pnode *call, const char *f) {
  for (int i = 0; i < call->n; i++)
    if (call->kws[i])
      mlc_parse_fail(p, call->items[i]->t, "%s got an unexpected keyword argument '%s'", f,
                     call->kws[i]);
}

/* Header items (axes, T.where, T.reads, ...) belong to a non-root block and
 * come before its body. */
static void need_header(mlc_parser *p, binfo *bi, const ptok *t, const char *what) {
  if (!bi || bi->is_root) mlc_parse_fail(p, t, "%s must be directly inside a T.block", what);
  if (bi->body_started)
    mlc_parse_fail(p, t, "%s must come before the statements of block \"%s\"", what, bi->name);
}

/* The keyword arguments TVM's T.Buffer, T.match_buffer, T.alloc_buffer and
 * T.decl_buffer take, in this order after the buffer's name or handle. */
enum { BUF_SHAPE, BUF_DTYPE, BUF_SCOPE, BUF_ELEM_OFFSET, BUF_ALIGN, BUF_OFFSET_FACTOR, BUF_NARGS };
static const char *const buffer_args[BUF_NARGS] = {"shape", "dtype", "scope", "elem_offset",
                                                   "align", "offset_factor"};

/* An integer literal argument (maybe negative, maybe T.int32(..)). */
static bool buffer_int_arg(mlc_parser *p, pnode *n, int64_t *v) {
  if (n->kind == PN_NONE) return false;
  mlc_expr *e = mlc_parse_lower(p, n);
  return mlc_dtype_is_int(e->dtype) && mlc_expr_is_const_int(e, v);
}

/* Buffers here are dense, start at element 0 and are allocated with TVM's
 * default alignment (64 bytes, kAllocAlignment), so these keywords are
 * accepted where they state those defaults as TVM spells them: elem_offset
 * 0 or None; align 64, or 0 and -1 which TVM reads as the default;
 * offset_factor 1, or 0 which TVM reads as 1. */
static void check_buffer_layout(mlc_parser *p, const char *f, pnode **a) {
  int64_t v;
  pnode *n;
  if ((n = a[BUF_ELEM_OFFSET]) && n->kind != PN_NONE && !(buffer_int_arg(p, n, &v) && v == 0))
    mlc_parse_fail(p, n->t, "%s: elem_offset must be 0: buffers start at their first element here",
                   f);
  if ((n = a[BUF_ALIGN]) && !(buffer_int_arg(p, n, &v) && (v == 64 || v == 0 || v == -1)))
    mlc_parse_fail(p, n->t, "%s: align must be 64 (the default alignment) here", f);
  if ((n = a[BUF_OFFSET_FACTOR]) && !(buffer_int_arg(p, n, &v) && (v == 1 || v == 0)))
    mlc_parse_fail(p, n->t, "%s: offset_factor must be 1: buffers start at their first element here",
                   f);
}

/* a[] as buffer_args orders them. */
static mlc_buffer *make_buffer(mlc_parser *p, const char *f, const char *name, pnode **a) {
  int64_t *shape;
  mlc_expr **dims;
  int nd = mlc_parse_shape(p, a[BUF_SHAPE], &shape, &dims);
  mlc_dtype t = a[BUF_DTYPE] ? mlc_parse_dtype(p, a[BUF_DTYPE]) : MLC_FLOAT32;
  const char *sc = a[BUF_SCOPE] ? mlc_parse_scope(p, a[BUF_SCOPE]) : "global";
  check_buffer_layout(p, f, a);
  mlc_buffer *b = mlc_buffer_new(p->a, name, t, nd, shape, sc);
  b->dims = dims;
  return b;
}

/* An allocated buffer takes its extents' bounds in memory. */
static void check_alloc_bound(mlc_parser *p, const pnode *shape, const mlc_buffer *b) {
  if (b->dims && mlc_buffer_numel(b) >= (INT64_C(1) << 62))
    mlc_parse_fail(p, shape->t,
                   "buffer %s would be allocated for its extents' bounds, which multiply past "
                   "2^62: declare its size vars with a smaller max",
                   b->name);
}

/* `n = T.int64()` or `n = T.int32(min=1, max=2048)` at the top of a
 * function: a size taken at run time. */
static void size_var_def(mlc_parser *p, const pnode *target, pnode *call, const char *f) {
  static const char *const names[] = {"min", "max"};
  pnode *a[2];
  mlc_parse_args(p, call, f, 2, names, 0, 0, a);
  mlc_dtype t = strcmp(f, "T.int64") == 0 ? MLC_INT64 : MLC_INT32;
  mlc_size_var sv = {mlc_var_new(p->a, target->s, t), 0, 0};
  mlc_size_default_bounds(t, &sv.lo, &sv.hi);
  int64_t lo = sv.lo, hi = sv.hi;
  for (int i = 0; i < 2; i++) {
    if (!a[i]) continue;
    int64_t v;
    if (!buffer_int_arg(p, a[i], &v)) mlc_parse_fail(p, a[i]->t, "%s= must be an integer constant", names[i]);
    if (v < lo || v > hi)
      mlc_parse_fail(p, a[i]->t, "%s=%lld is outside [%lld, %lld]", names[i], (long long)v,
                     (long long)lo, (long long)hi);
    *(i ? &sv.hi : &sv.lo) = v;
  }
  if (sv.lo > sv.hi)
    mlc_parse_fail(p, call->t, "size %s has min %lld above max %lld", target->s,
                   (long long)sv.lo, (long long)sv.hi);
  if (p->sizes.len >= MLC_MAX_SIZES)
    mlc_parse_fail(p, target->t, "a function has at most %d size vars", MLC_MAX_SIZES);
  MLC_VEC_APUSH(p->a, p->sizes, sv);
  MLC_VEC_APUSH(p->a, p->size_toks, target->t);
  psym *s = mlc_parse_define(p, target->s, SYM_VAR);
  s->var = sv.var;
  s->is_size = true;
}

static void define_buffer(mlc_parser *p, mlc_buffer *b) {
  mlc_parse_define(p, b->name, SYM_BUF)->buf = b;
}

/* ---- block header items ---------------------------------------------------- */

static void axis_def(mlc_parser *p, binfo *bi, const pnode *target, pnode *call,
                     const char *f) {
  need_header(p, bi, call->t, f);
  static const char *const names[] = {"dom", "binding"};
  pnode *a[2];
  mlc_parse_args(p, call, f, 2, names, 2, 2, a);
  mlc_expr *value = mlc_parse_lower_int(p, a[1], "iter var binding");
  mlc_expr *min, *ext;
  if ((a[0]->kind == PN_TUPLE || a[0]->kind == PN_LIST) && a[0]->n == 2) {
    min = mlc_parse_lower_int(p, a[0]->items[0], "domain start");
    mlc_expr *hi = mlc_parse_lower_int(p, a[0]->items[1], "domain end");
    mlc_parse_unify(p, a[0]->t, "domain bounds", &min, &hi);
    ext = mlc_parse_sub(p, a[0]->t, hi, min);
  } else {
    ext = mlc_parse_lower_int(p, a[0], "domain extent");
    min = mlc_int_t(p->a, ext->dtype, 0);
  }
  mlc_parse_unify(p, a[0]->t, "domain and binding", &ext, &value);
  mlc_parse_unify(p, a[0]->t, "domain and binding", &min, &value);
  int64_t v;
  if (mlc_expr_is_const_int(ext, &v) && v <= 0)
    mlc_parse_fail(p, a[0]->t, "iter var domain must not be empty");
  bool reduce = strcmp(f, "T.axis.reduce") == 0 || strcmp(f, "T.axis.R") == 0;
  mlc_iter_var iv = {mlc_var_new(p->a, target->s, value->dtype), {min, ext},
                     reduce ? MLC_ITER_REDUCE : MLC_ITER_SPATIAL};
  MLC_VEC_APUSH(p->a, bi->iters, iv);
  MLC_VEC_APUSH(p->a, bi->values, value);
  mlc_parse_define(p, target->s, SYM_VAR)->var = iv.var;
}

static void axis_remap(mlc_parser *p, binfo *bi, int nt, pnode **targets, pnode *call) {
  const char *f = "T.axis.remap";
  need_header(p, bi, call->t, f);
  static const char *const names[] = {"kinds", "bindings"};
  pnode *a[2];
  mlc_parse_args(p, call, f, 2, names, 2, 2, a);
  const char *kinds = mlc_parse_string(p, a[0], "iter kinds such as \"SSR\"");
  if ((int)strlen(kinds) != nt)
    mlc_parse_fail(p, a[0]->t, "T.axis.remap kinds \"%s\" name %d var%s", kinds, nt,
                   nt == 1 ? "" : "s");
  if (a[1]->kind != PN_LIST && a[1]->kind != PN_TUPLE)
    mlc_parse_fail(p, a[1]->t, "expected a list of loop variables");
  if (a[1]->n != nt)
    mlc_parse_fail(p, a[1]->t, "T.axis.remap binds %d var%s to %d loop variable%s", nt,
                   nt == 1 ? "" : "s", a[1]->n, a[1]->n == 1 ? "" : "s");
  mlc_iter_var *ivs = MLC_NEW_ARRAY(p->a, mlc_iter_var, nt);
  for (int i = 0; i < nt; i++) {
    if (kinds[i] != 'S' && kinds[i] != 'R')
      mlc_parse_fail(p, a[0]->t, "T.axis.remap kind '%c' is not S or R", kinds[i]);
    pnode *it = a[1]->items[i];
    if (it->kind != PN_NAME) mlc_parse_fail(p, it->t, "expected a loop variable name");
    psym *s = mlc_parse_lookup(p, it->s);
    if (!s) mlc_parse_fail(p, it->t, "undefined name '%s'", it->s);
    if (s->kind != SYM_VAR || !s->is_loop)
      mlc_parse_fail(p, it->t, "T.axis.remap expects an enclosing loop variable, got '%s'",
                     it->s);
    ivs[i].var = mlc_var_new(p->a, targets[i]->s, s->var->dtype);
    ivs[i].dom.min = s->loop_min;
    ivs[i].dom.extent = s->loop_extent;
    ivs[i].kind = kinds[i] == 'S' ? MLC_ITER_SPATIAL : MLC_ITER_REDUCE;
    MLC_VEC_APUSH(p->a, bi->values, mlc_ref(p->a, s->var));
  }
  for (int i = 0; i < nt; i++) {
    MLC_VEC_APUSH(p->a, bi->iters, ivs[i]);
    mlc_parse_define(p, targets[i]->s, SYM_VAR)->var = ivs[i].var;
  }
}

static void regions(mlc_parser *p, binfo *bi, pnode *call, bool reads) {
  const char *f = reads ? "T.reads" : "T.writes";
  bool root = bi && bi->explicit_root && !bi->body_started;
  if (!root) need_header(p, bi, call->t, f);
  if (reads ? bi->has_reads : bi->has_writes) mlc_parse_fail(p, call->t, "%s given twice", f);
  no_kwargs(p, call, f);
  pnode **items = call->items;
  int n = call->n;
  if (n == 1 && (items[0]->kind == PN_LIST || items[0]->kind == PN_TUPLE)) {
    n = items[0]->n;
    items = items[0]->items;
  }
  for (int i = 0; i < n; i++) {
    mlc_region r = mlc_parse_region(p, items[i]);
    if (reads) MLC_VEC_APUSH(p->a, bi->reads, r);
    else MLC_VEC_APUSH(p->a, bi->writes, r);
  }
  if (reads) bi->has_reads = true;
  else bi->has_writes = true;
  if (root) { /* TVM prints them on the root block; the root keeps none */
    bi->reads.len = bi->writes.len = 0;
  }
}

static pnode *one_arg(mlc_parser *p, pnode *call, const char *f, const char *name) {
  const char *const names[] = {name};
  pnode *a[1];
  mlc_parse_args(p, call, f, 1, names, 1, 1, a);
  return a[0];
}

/* ---- statements ------------------------------------------------------------ */

/* `T.foo(...)` on a line of its own. */
static mlc_stmt *expr_stmt(mlc_parser *p, binfo *bi, bool ft, pnode *n) {
  const char *f = dotted_call(p, n);
  if (!f) mlc_parse_fail(p, n->t, "expected a statement; this expression is not one");
  if (strcmp(f, "T.reads") == 0 || strcmp(f, "T.writes") == 0) {
    regions(p, bi, n, f[2] == 'r');
    return NULL;
  }
  if (strcmp(f, "T.where") == 0) {
    need_header(p, bi, n->t, f);
    if (bi->pred) mlc_parse_fail(p, n->t, "T.where given twice");
    bi->pred = mlc_parse_lower_bool(p, one_arg(p, n, f, "predicate"), "predicate");
    return NULL;
  }
  if (strcmp(f, "T.block_attr") == 0) {
    if (!bi) mlc_parse_fail(p, n->t, "T.block_attr must be directly inside a T.block");
    if (bi->body_started)
      mlc_parse_fail(p, n->t, "T.block_attr must come before the statements of block \"%s\"",
                     bi->name);
    mlc_parse_anns(p, one_arg(p, n, f, "attrs"), &bi->n_anns, &bi->anns);
    return NULL;
  }
  if (strcmp(f, "T.func_attr") == 0) {
    if (!ft) mlc_parse_fail(p, n->t, "T.func_attr must be at the top level of the function body");
    mlc_parse_anns(p, one_arg(p, n, f, "attrs"), &p->fn->n_attrs, &p->fn->attrs);
    return NULL;
  }
  if (strcmp(f, "T.evaluate") == 0)
    return mlc_evaluate_new(p->a, mlc_parse_lower(p, one_arg(p, n, f, "value")));
  if (strcmp(f, "T.call_extern") == 0) return mlc_evaluate_new(p->a, mlc_parse_lower(p, n));
  /* Reports unknown functions, undefined names and the like first. */
  mlc_parse_lower(p, n);
  mlc_parse_fail(p, n->t, "%s(...) is not a statement; wrap it in T.evaluate(...)", f);
}

static mlc_stmt *store(mlc_parser *p, pnode *lhs, pnode *rhs, const ptok *op, int aug) {
  mlc_buffer *b;
  mlc_expr **idx = mlc_parse_indices(p, lhs, &b);
  mlc_expr *v = mlc_parse_lower(p, rhs);
  if (aug >= 0) {
    mlc_expr *cur = mlc_load(p->a, b, idx);
    char what[64];
    snprintf(what, sizeof what, "operands of '%s'", op->str);
    mlc_parse_unify(p, op, what, &cur, &v);
    if (cur->dtype == MLC_BOOL) mlc_parse_fail(p, op, "'%s' is not defined for bool", op->str);
    v = mlc_binary(p->a, (mlc_expr_kind)aug, cur, v);
  }
  if (v->dtype != b->dtype && !mlc_parse_lit_convert(p, op, &v, b->dtype))
    mlc_parse_fail(p, op, "cannot store a %s value into %s buffer %s", mlc_dtype_name(v->dtype),
                   mlc_dtype_name(b->dtype), b->name);
  return mlc_store_new(p->a, b, idx, v);
}

/* `name = T.alloc_buffer(...)`, `vi, vj = T.axis.remap(...)`, ... */
static mlc_stmt *assign(mlc_parser *p, binfo *bi, bool ft, pnode *lhs, pnode *rhs) {
  pnode **targets = &lhs;
  int nt = 1;
  if (lhs->kind == PN_TUPLE) {
    targets = lhs->items;
    nt = lhs->n;
  }
  for (int i = 0; i < nt; i++)
    if (targets[i]->kind != PN_NAME) mlc_parse_fail(p, targets[i]->t, "cannot assign to this");
  const char *f = dotted_call(p, rhs);
  if (f && strcmp(f, "T.axis.remap") == 0) {
    axis_remap(p, bi, nt, targets, rhs);
    return NULL;
  }
  bool size_decl = f && (strcmp(f, "T.int32") == 0 || strcmp(f, "T.int64") == 0);
  for (int i = 0; size_decl && i < rhs->n; i++) size_decl = rhs->kws[i] != NULL;
  if (size_decl) {
    if (!ft) mlc_parse_fail(p, rhs->t, "a size var must be declared at the top level of the function body");
    if (nt != 1) mlc_parse_fail(p, lhs->t, "%s defines one name, got %d", f, nt);
    size_var_def(p, targets[0], rhs, f);
    return NULL;
  }
  static const char *const single[] = {"T.axis.spatial", "T.axis.reduce", "T.axis.S",
                                       "T.axis.R",       "T.alloc_buffer", "T.match_buffer",
                                       "T.decl_buffer"};
  bool known = false;
  for (int i = 0; f && i < MLC_COUNTOF(single); i++) known |= strcmp(f, single[i]) == 0;
  if (!known) {
    if (rhs->kind != PN_TUPLE) mlc_parse_lower(p, rhs); /* reports unknown names first */
    mlc_parse_fail(p, rhs->t,
                   "expected T.axis.*, T.alloc_buffer, T.match_buffer or T.decl_buffer on the "
                   "right of '='");
  }
  if (nt != 1) mlc_parse_fail(p, lhs->t, "%s defines one name, got %d", f, nt);
  const char *name = targets[0]->s;
  if (strncmp(f, "T.axis.", 7) == 0) {
    axis_def(p, bi, targets[0], rhs, f);
    return NULL;
  }
  pnode *a[BUF_NARGS + 1];
  if (strcmp(f, "T.match_buffer") == 0) {
    if (!ft)
      mlc_parse_fail(p, rhs->t, "T.match_buffer must be at the top level of the function body");
    static const char *const names[BUF_NARGS + 1] = {
        "param", "shape", "dtype", "scope", "elem_offset", "align", "offset_factor"};
    mlc_parse_args(p, rhs, f, BUF_NARGS + 1, names, 3, 2, a);
    if (a[0]->kind != PN_NAME) mlc_parse_fail(p, a[0]->t, "expected a T.handle parameter");
    psym *s = mlc_parse_lookup(p, a[0]->s);
    if (!s) mlc_parse_fail(p, a[0]->t, "undefined name '%s'", a[0]->s);
    if (s->kind != SYM_HANDLE) mlc_parse_fail(p, a[0]->t, "'%s' is not a T.handle parameter", a[0]->s);
    int param = s->param;
    if (p->fn->params.data[param])
      mlc_parse_fail(p, a[0]->t, "handle '%s' is already bound", a[0]->s);
    mlc_buffer *b = make_buffer(p, f, name, a + 1);
    p->fn->params.data[param] = b;
    define_buffer(p, b);
    return NULL;
  }
  mlc_parse_args(p, rhs, f, BUF_NARGS, buffer_args, 2, 1, a);
  mlc_buffer *b = make_buffer(p, f, name, a);
  check_alloc_bound(p, a[BUF_SHAPE], b);
  if (strcmp(f, "T.decl_buffer") == 0) {
    define_buffer(p, b);
    return mlc_allocate_new(p->a, b, NULL); /* the caller adds the rest of the suite */
  }
  if (!bi)
    mlc_parse_fail(p, rhs->t,
                   "T.alloc_buffer must be directly inside a T.block or the function body");
  MLC_VEC_APUSH(p->a, bi->allocs, b);
  define_buffer(p, b);
  return NULL;
}

static bool aug_op(const ptok *t, mlc_expr_kind *k) {
  static const struct {
    const char *s;
    mlc_expr_kind k;
  } ops[] = {{"+=", MLC_EXPR_ADD},      {"-=", MLC_EXPR_SUB},       {"*=", MLC_EXPR_MUL},
             {"/=", MLC_EXPR_DIV},      {"//=", MLC_EXPR_FLOORDIV}, {"%=", MLC_EXPR_FLOORMOD}};
  for (int i = 0; t->kind == TK_OP && i < MLC_COUNTOF(ops); i++)
    if (strcmp(t->str, ops[i].s) == 0) {
      *k = ops[i].k;
      return true;
    }
  return false;
}

static mlc_stmt *simple_stmt(mlc_parser *p, binfo *bi, bool ft) {
  pnode *lhs = mlc_parse_ptestlist(p);
  const ptok *t = peek(p);
  mlc_expr_kind k;
  if (tok_is_op(t, "=")) {
    p->pos++;
    pnode *rhs = mlc_parse_ptestlist(p);
    expect_eol(p);
    if (lhs->kind == PN_INDEX) return store(p, lhs, rhs, t, -1);
    return assign(p, bi, ft, lhs, rhs);
  }
  if (aug_op(t, &k)) {
    p->pos++;
    pnode *rhs = mlc_parse_pexpr(p);
    expect_eol(p);
    if (lhs->kind != PN_INDEX)
      mlc_parse_fail(p, t, "'%s' needs a buffer element on its left", t->str);
    return store(p, lhs, rhs, t, (int)k);
  }
  if (t->kind != TK_NEWLINE) mlc_parse_expected(p, t, "'=' or end of line");
  p->pos++;
  return expr_stmt(p, bi, ft, lhs);
}

static const char *const thread_tags[] = {
    "blockIdx.x",  "blockIdx.y", "blockIdx.z",  "threadIdx.x", "threadIdx.y",
    "threadIdx.z", "vthread",    "vthread.x",   "vthread.y",   "vthread.z",
};

static const struct {
  const char *name;
  mlc_for_kind kind;
} loop_kinds[] = {
    {"range", MLC_FOR_SERIAL},         {"T.serial", MLC_FOR_SERIAL},
    {"T.parallel", MLC_FOR_PARALLEL},  {"T.vectorized", MLC_FOR_VECTORIZED},
    {"T.unroll", MLC_FOR_UNROLLED},    {"T.thread_binding", MLC_FOR_THREAD_BINDING},
};

/* `for i, j in T.grid(...)`, `for i in range(a, b)`, `for i in T.thread_binding(...)`. */
static mlc_stmt *for_stmt(mlc_parser *p) {
  p->pos++; /* for */
  MLC_VEC(const ptok *) names = {0};
  for (;;) {
    const ptok *t = peek(p);
    if (t->kind != TK_NAME || tok_is_name(t, "in")) mlc_parse_expected(p, t, "a loop variable name");
    p->pos++;
    MLC_VEC_APUSH(p->a, names, t);
    if (!accept_op(p, ",")) break;
  }
  if (!tok_is_name(peek(p), "in")) mlc_parse_expected(p, peek(p), "'in'");
  p->pos++;
  pnode *it = mlc_parse_pexpr(p);
  const char *f = dotted_call(p, it);
  int n = names.len;
  mlc_expr **mins = MLC_NEW_ARRAY(p->a, mlc_expr *, n);
  mlc_expr **exts = MLC_NEW_ARRAY(p->a, mlc_expr *, n);
  mlc_for_kind kind = MLC_FOR_SERIAL;
  const char *thread = NULL;
  int n_anns = 0;
  mlc_ann *anns = NULL;
  if (f && strcmp(f, "T.grid") == 0) {
    no_kwargs(p, it, f);
    if (it->n != n)
      mlc_parse_fail(p, it->t, "T.grid has %d extent%s for %d loop variable%s", it->n,
                     it->n == 1 ? "" : "s", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
      exts[i] = mlc_parse_lower_int(p, it->items[i], "loop extent");
      mins[i] = mlc_int_t(p->a, exts[i]->dtype, 0);
    }
  } else {
    int k = -1;
    for (int i = 0; f && i < MLC_COUNTOF(loop_kinds); i++)
      if (strcmp(f, loop_kinds[i].name) == 0) k = i;
    if (k < 0 && f && strncmp(f, "T.", 2) == 0) mlc_parse_fail(p, it->t, "unknown loop kind %s", f);
    if (k < 0)
      mlc_parse_fail(p, it->t, "expected range(...), T.grid(...) or another T.* loop after 'in'");
    kind = loop_kinds[k].kind;
    if (n != 1)
      mlc_parse_fail(p, names.data[1], "%s binds one loop variable, got %d", f, n);
    static const char *const lnames[] = {"start", "stop", "thread", "annotations"};
    static const char *const snames[] = {"start", "stop", "annotations"};
    pnode *a[4] = {0};
    if (kind == MLC_FOR_THREAD_BINDING) {
      mlc_parse_args(p, it, f, 4, lnames, 3, 1, a);
      if (a[1] && a[1]->kind == PN_STR && !a[2]) { /* T.thread_binding(8, "threadIdx.x") */
        a[2] = a[1];
        a[1] = NULL;
      }
    } else if (k == 0) {
      mlc_parse_args(p, it, f, 2, snames, 2, 1, a);
    } else {
      pnode *b[3];
      mlc_parse_args(p, it, f, 3, snames, 2, 1, b);
      a[0] = b[0], a[1] = b[1], a[3] = b[2];
    }
    if (a[1]) {
      mins[0] = mlc_parse_lower_int(p, a[0], "loop start");
      mlc_expr *hi = mlc_parse_lower_int(p, a[1], "loop end");
      mlc_parse_unify(p, it->t, "loop bounds", &mins[0], &hi);
      exts[0] = mlc_parse_sub(p, it->t, hi, mins[0]);
    } else {
      exts[0] = mlc_parse_lower_int(p, a[0], "loop extent");
      mins[0] = mlc_int_t(p->a, exts[0]->dtype, 0);
    }
    if (kind == MLC_FOR_THREAD_BINDING) {
      if (!a[2]) mlc_parse_fail(p, it->t, "T.thread_binding needs thread=\"...\"");
      thread = mlc_parse_string(p, a[2], "a thread tag");
      bool ok = false;
      for (int i = 0; i < MLC_COUNTOF(thread_tags); i++) ok |= strcmp(thread, thread_tags[i]) == 0;
      if (!ok) mlc_parse_fail(p, a[2]->t, "unknown thread tag \"%s\"", thread);
    }
    if (a[3]) mlc_parse_anns(p, a[3], &n_anns, &anns);
  }
  for (int i = 0; i < n; i++) {
    int64_t v;
    if (mlc_expr_is_const_int(exts[i], &v) && v < 0)
      mlc_parse_fail(p, it->t, "loop extent must not be negative, got %lld", (long long)v);
  }
  /* Vars are defined after every extent is read: T.grid evaluates all. */
  int mark = p->syms.len, nest0 = p->nest;
  mlc_var **vars = MLC_NEW_ARRAY(p->a, mlc_var *, n);
  for (int i = 0; i < n; i++) {
    if (i) nest_enter(p, names.data[i]); /* each loop of a grid nests */
    vars[i] = mlc_var_new(p->a, names.data[i]->str, exts[i]->dtype);
    psym *s = mlc_parse_define(p, names.data[i]->str, SYM_VAR);
    s->var = vars[i];
    s->is_loop = true;
    s->loop_min = mins[i];
    s->loop_extent = exts[i];
  }
  mlc_stmt *body = suite(p, NULL, false);
  p->syms.len = mark;
  p->nest = nest0;
  mlc_stmt *s = body ? body : eval0(p);
  for (int i = n - 1; i >= 0; i--) s = mlc_for_new(p->a, vars[i], mins[i], exts[i], kind, s);
  s->loop.thread = thread;
  s->loop.n_anns = n_anns;
  s->loop.anns = anns;
  return s;
}

static mlc_stmt *if_stmt(mlc_parser *p) {
  p->pos++; /* if / elif */
  pnode *c = mlc_parse_pexpr(p);
  mlc_expr *cond = mlc_parse_lower_bool(p, c, "condition");
  int mark = p->syms.len;
  mlc_stmt *then_s = suite(p, NULL, false);
  p->syms.len = mark;
  mlc_stmt *else_s = NULL;
  const ptok *t = peek(p);
  if (tok_is_name(t, "elif")) {
    nest_enter(p, t);
    else_s = if_stmt(p);
    nest_leave(p);
  } else if (tok_is_name(t, "else")) {
    p->pos++;
    else_s = suite(p, NULL, false);
    p->syms.len = mark;
    if (!else_s) else_s = eval0(p);
  }
  return mlc_if_new(p->a, cond, then_s ? then_s : eval0(p), else_s);
}

static mlc_stmt *block_stmt(mlc_parser *p, const ptok *with, const char *name) {
  binfo b = {0};
  b.name = name;
  int mark = p->syms.len;
  mlc_stmt *body = suite(p, &b, false);
  p->syms.len = mark;
  if (!body && !b.init) mlc_parse_fail(p, with, "block \"%s\" has no body", name);
  mlc_block *blk = mlc_block_new(p->a, name);
  blk->n_iters = b.iters.len;
  blk->iters = b.iters.data;
  blk->n_allocs = b.allocs.len;
  blk->allocs = b.allocs.data;
  blk->n_anns = b.n_anns;
  blk->anns = b.anns;
  blk->init = b.init;
  blk->body = body;
  /* Regions the text leaves out are inferred; given ones are kept. */
  if (!b.has_reads || !b.has_writes) mlc_block_infer_regions(p->a, blk);
  if (b.has_reads) {
    blk->n_reads = b.reads.len;
    blk->reads = b.reads.data;
  }
  if (b.has_writes) {
    blk->n_writes = b.writes.len;
    blk->writes = b.writes.data;
  }
  return mlc_realize_new(p->a, blk, b.values.data, b.pred);
}

static mlc_stmt *with_stmt(mlc_parser *p, binfo *bi, bool ft) {
  const ptok *with = next_tok(p);
  pnode *e = mlc_parse_pexpr(p);
  const char *f = dotted_call(p, e);
  if (f && strcmp(f, "T.block") == 0) {
    static const char *const names[] = {"name_hint"};
    pnode *a[1];
    mlc_parse_args(p, e, f, 1, names, 1, 0, a);
    const char *name = a[0] ? mlc_parse_string(p, a[0], "a block name") : "";
    if (!ft || strcmp(name, "root") != 0) return block_stmt(p, with, name);
    if (bi->body_started || bi->allocs.len)
      mlc_parse_fail(p, with, "with T.block(\"root\") must be the only statement of the function body");
    bi->explicit_root = true;
    bi->root_body = suite(p, bi, false);
    bi->root_done = true;
    return NULL;
  }
  if (f && strcmp(f, "T.init") == 0) {
    no_kwargs(p, e, f);
    if (e->n) mlc_parse_fail(p, e->t, "T.init takes no arguments");
    /* an explicit root may open with one too: a tensor intrinsic's
     * description of a block whose init it computes */
    if (bi && bi->explicit_root && bi->body_started)
      mlc_parse_fail(p, e->t, "with T.init() must come before the statements of block \"root\"");
    if (!(bi && bi->explicit_root)) need_header(p, bi, e->t, "with T.init()");
    if (bi->init) mlc_parse_fail(p, e->t, "block \"%s\" has two T.init()", bi->name);
    int mark = p->syms.len;
    mlc_stmt *s = suite(p, NULL, false);
    p->syms.len = mark;
    bi->init = s ? s : eval0(p);
    return NULL;
  }
  if (f && strncmp(f, "T.", 2) == 0 && strcmp(f, "T.init") != 0)
    mlc_parse_fail(p, e->t, "unknown function %s after 'with'", f);
  mlc_parse_fail(p, e->t, "expected T.block(...) or T.init() after 'with'");
}

/* One statement. Returns NULL for items that only fill in bi or the
 * function (headers, allocs, pass). `ft`: the function body's top level. */
static mlc_stmt *statement(mlc_parser *p, binfo *bi, bool ft) {
  const ptok *t = peek(p);
  if (ft && bi->root_done)
    mlc_parse_fail(p, t, "with T.block(\"root\") must be the only statement of the function body");
  switch (t->kind) {
  case TK_INDENT: mlc_parse_fail(p, t, "unexpected indent");
  case TK_NAME:
    if (tok_is_name(t, "for")) return for_stmt(p);
    if (tok_is_name(t, "if")) return if_stmt(p);
    if (tok_is_name(t, "with")) return with_stmt(p, bi, ft);
    if (tok_is_name(t, "pass")) {
      p->pos++;
      expect_eol(p);
      return NULL;
    }
    if (tok_is_name(t, "elif") || tok_is_name(t, "else"))
      mlc_parse_fail(p, t, "'%s' without a matching 'if'", t->str);
    static const char *const bad[] = {"def", "class", "return", "while", "import", "from",
                                      "as",  "in",    "is",     "and",   "or",     "lambda"};
    for (int i = 0; i < MLC_COUNTOF(bad); i++)
      if (tok_is_name(t, bad[i])) mlc_parse_expected(p, t, "a statement");
    return simple_stmt(p, bi, ft);
  case TK_STR:
    if (ft && !bi->body_started && peek_at(p, 1)->kind == TK_NEWLINE) { /* docstring */
      p->pos += 2;
      return NULL;
    }
    return simple_stmt(p, bi, ft);
  case TK_INT:
  case TK_FLOAT: return simple_stmt(p, bi, ft);
  case TK_OP:
    if (tok_is_op(t, "(")) return simple_stmt(p, bi, ft);
    mlc_parse_expected(p, t, "a statement");
  case TK_NEWLINE:
  case TK_DEDENT:
  case TK_EOF:
  case TK_ERROR: mlc_parse_expected(p, t, "a statement");
  }
  mlc_unreachable();
}

/* Statements up to the end of the suite (or one, for `if c: stmt`). A
 * decl_buffer takes the statements after it as its body. */
static mlc_stmt *stmts(mlc_parser *p, binfo *bi, bool ft, bool single) {
  stmt_vec v = {0};
  MLC_VEC(int) decls = {0};
  int nest0 = p->nest;
  for (;;) {
    const ptok *t = peek(p);
    if (!single && (t->kind == TK_DEDENT || t->kind == TK_EOF)) break;
    mlc_stmt *s = statement(p, bi, ft);
    if (s) {
      if (bi) bi->body_started = true;
      if (s->kind == MLC_STMT_ALLOCATE && !s->alloc.body) {
        nest_enter(p, t); /* the allocates nest */
        MLC_VEC_APUSH(p->a, decls, v.len);
      }
      MLC_VEC_APUSH(p->a, v, s);
    }
    if (single) break;
  }
  p->nest = nest0;
  for (int k = decls.len - 1; k >= 0; k--) {
    int at = decls.data[k];
    mlc_stmt *body = seq_of(p, v.data + at + 1, v.len - at - 1);
    v.data[at]->alloc.body = body ? body : eval0(p);
    v.len = at + 1;
  }
  return seq_of(p, v.data, v.len);
}

/* ':' then an indented block or one statement on the same line. */
static mlc_stmt *suite(mlc_parser *p, binfo *bi, bool ft) {
  expect_op(p, ":", "':'");
  const ptok *t = peek(p);
  nest_enter(p, t);
  mlc_stmt *s;
  if (t->kind == TK_NEWLINE) {
    p->pos++;
    const ptok *in = peek(p);
    if (in->kind != TK_INDENT) mlc_parse_expected(p, in, "an indented block");
    p->pos++;
    s = stmts(p, bi, ft, false);
    const ptok *d = peek(p);
    if (d->kind != TK_DEDENT) mlc_parse_expected(p, d, "a dedent");
    p->pos++;
  } else {
    s = stmts(p, bi, ft, true);
  }
  nest_leave(p);
  return s;
}

/* ---- functions and modules --------------------------------------------------- */

static void param(mlc_parser *p, pfunc *fn, int mark) {
  const ptok *t = peek(p);
  if (t->kind != TK_NAME) mlc_parse_expected(p, t, "a parameter name");
  p->pos++;
  for (int i = mark; i < p->syms.len; i++)
    if (strcmp(p->syms.data[i].name, t->str) == 0)
      mlc_parse_fail(p, t, "duplicate parameter '%s'", t->str);
  expect_op(p, ":", "':' and a type such as T.Buffer((128,), \"float32\")");
  pnode *ann = mlc_parse_pexpr(p);
  const char *f = mlc_parse_dotted(p, ann->kind == PN_ATTR ? ann : ann->x);
  mlc_buffer *b = NULL;
  if (ann->kind == PN_ATTR && f && strcmp(f, "T.handle") == 0) {
    psym *s = mlc_parse_define(p, t->str, SYM_HANDLE);
    s->param = fn->params.len;
  } else if (ann->kind == PN_CALL && f && strcmp(f, "T.Buffer") == 0) {
    pnode *a[BUF_NARGS];
    mlc_parse_args(p, ann, f, BUF_NARGS, buffer_args, 2, 1, a);
    b = make_buffer(p, f, t->str, a);
  } else if (ann->kind == PN_INDEX && f && strcmp(f, "T.Buffer") == 0) {
    if (ann->n > 2) mlc_parse_fail(p, ann->items[2]->t, "T.Buffer[shape, dtype] takes 2 items");
    for (int i = 0; i < ann->n; i++)
      if (ann->items[i]->kind == PN_SLICE) mlc_parse_fail(p, ann->items[i]->t, "unexpected slice");
    pnode *a[BUF_NARGS] = {ann->items[0], ann->n > 1 ? ann->items[1] : NULL};
    b = make_buffer(p, f, t->str, a);
  } else {
    mlc_parse_fail(p, ann->t, "expected T.Buffer(shape, dtype) or T.handle");
  }
  if (b) define_buffer(p, b);
  MLC_VEC_APUSH(p->a, fn->params, b);
  MLC_VEC_APUSH(p->a, fn->param_toks, t);
}

/* Each size var is some parameter's extent, bare or plus a constant: the
 * arguments' shapes then give every size at run time. */
static void check_sizes_given(mlc_parser *p, const pfunc *fn) {
  for (int k = 0; k < p->sizes.len; k++) {
    bool given = false;
    int64_t off;
    for (int i = 0; i < fn->params.len && !given; i++) {
      const mlc_buffer *b = fn->params.data[i];
      for (int d = 0; b->dims && d < b->ndim && !given; d++)
        given = mlc_size_in_extent(b->dims[d], p->sizes.data[k].var, &off);
    }
    if (!given)
      mlc_parse_fail(p, p->size_toks.data[k],
                     "size %s is no parameter's extent, so no call could give its value",
                     p->sizes.data[k].var->name);
  }
}

static mlc_prim_func *func_def(mlc_parser *p, mlc_module *m) {
  const ptok *t = peek(p);
  if (!tok_is_name(t, "def")) mlc_parse_expected(p, t, "'def'");
  p->pos++;
  const ptok *name = peek(p);
  if (name->kind != TK_NAME) mlc_parse_expected(p, name, "a function name");
  p->pos++;
  if (mlc_module_find(m, name->str))
    mlc_parse_fail(p, name, "duplicate function name '%s'", name->str);
  pfunc fn = {0};
  p->fn = &fn;
  memset(&p->sizes, 0, sizeof p->sizes);
  memset(&p->size_toks, 0, sizeof p->size_toks);
  int mark = p->syms.len;
  expect_op(p, "(", "'('");
  while (!tok_is_op(peek(p), ")")) {
    param(p, &fn, mark);
    if (!accept_op(p, ",")) break;
  }
  expect_op(p, ")", "',' or ')'");
  if (accept_op(p, "->")) {
    pnode *ret = mlc_parse_pexpr(p);
    if (ret->kind != PN_NONE) mlc_parse_fail(p, ret->t, "expected None as the return type");
  }
  binfo root = {0};
  root.name = "root";
  root.is_root = true;
  mlc_stmt *body = suite(p, &root, true);
  for (int i = 0; i < fn.params.len; i++)
    if (!fn.params.data[i])
      mlc_parse_fail(p, fn.param_toks.data[i], "handle '%s' is never bound by T.match_buffer",
                     fn.param_toks.data[i]->str);
  check_sizes_given(p, &fn);
  if (root.root_done) body = root.root_body;
  mlc_block *blk = mlc_block_new(p->a, "root");
  blk->n_allocs = root.allocs.len;
  blk->allocs = root.allocs.data;
  blk->n_anns = root.n_anns;
  blk->anns = root.anns;
  blk->body = body ? body : eval0(p);
  blk->init = root.init;
  mlc_prim_func *f = mlc_func_new(p->a, name->str);
  f->n_params = fn.params.len;
  f->params = fn.params.data;
  f->n_sizes = p->sizes.len;
  f->sizes = p->sizes.data;
  f->n_attrs = fn.n_attrs;
  f->attrs = fn.attrs;
  f->body = mlc_realize_new(p->a, blk, NULL, NULL);
  p->syms.len = mark;
  p->fn = NULL;
  return f;
}

typedef enum deco { DECO_PRIM_FUNC, DECO_IR_MODULE } deco;

static deco decorator(mlc_parser *p) {
  p->pos++; /* @ */
  pnode *e = mlc_parse_pexpr(p);
  expect_eol(p);
  const pnode *call = e->kind == PN_CALL ? e : NULL;
  const char *f = mlc_parse_dotted(p, call ? call->x : e);
  if (f && (strcmp(f, "T.prim_func") == 0 || strcmp(f, "tvm.script.tir.prim_func") == 0)) {
    /* TVM's options only change how TVM itself links or checks the
     * function; the text still means the same program. */
    if (call) {
      static const char *const names[] = {"private", "check_well_formed"};
      pnode *args[2];
      mlc_parse_args(p, call, "T.prim_func", 2, names, 0, 0, args);
      for (int i = 0; i < 2; i++)
        if (args[i] && args[i]->kind != PN_BOOL)
          mlc_parse_expected(p, args[i]->t, "True or False");
    }
    return DECO_PRIM_FUNC;
  }
  if (call) f = NULL;
  if (f && (strcmp(f, "I.ir_module") == 0 || strcmp(f, "tvm.script.ir_module") == 0 ||
            strcmp(f, "tvm.script.ir.ir_module") == 0))
    return DECO_IR_MODULE;
  if (f) mlc_parse_fail(p, e->t, "unsupported decorator @%s", f);
  mlc_parse_fail(p, e->t, "expected a decorator name");
}

static void skip_imports(mlc_parser *p) {
  while (tok_is_name(peek(p), "from") || tok_is_name(peek(p), "import")) {
    while (peek(p)->kind != TK_NEWLINE && peek(p)->kind != TK_EOF) p->pos++;
    expect_eol(p);
  }
}

static void add_func(mlc_parser *p, mlc_module *m) {
  mlc_module_add(p->a, m, func_def(p, m));
}

static mlc_module *class_def(mlc_parser *p) {
  const ptok *t = peek(p);
  if (!tok_is_name(t, "class")) mlc_parse_expected(p, t, "'class'");
  p->pos++;
  const ptok *name = peek(p);
  if (name->kind != TK_NAME) mlc_parse_expected(p, name, "a class name");
  p->pos++;
  if (accept_op(p, "(")) expect_op(p, ")", "')'");
  expect_op(p, ":", "':'");
  expect_eol(p);
  if (peek(p)->kind != TK_INDENT) mlc_parse_expected(p, peek(p), "an indented class body");
  p->pos++;
  mlc_module *m = mlc_module_new(p->a, name->str);
  while (peek(p)->kind != TK_DEDENT) {
    const ptok *at = peek(p);
    if (at->kind == TK_STR && peek_at(p, 1)->kind == TK_NEWLINE) { /* docstring */
      p->pos += 2;
      continue;
    }
    if (!tok_is_op(at, "@")) mlc_parse_expected(p, at, "@T.prim_func");
    if (decorator(p) != DECO_PRIM_FUNC) mlc_parse_fail(p, at, "expected @T.prim_func inside a class");
    add_func(p, m);
  }
  p->pos++;
  if (m->n_funcs == 0) mlc_parse_fail(p, name, "class %s has no @T.prim_func", name->str);
  return m;
}

static mlc_module *module(mlc_parser *p) {
  skip_imports(p);
  const ptok *t = peek(p);
  if (!tok_is_op(t, "@")) mlc_parse_expected(p, t, "@T.prim_func or @I.ir_module");
  mlc_module *m;
  if (decorator(p) == DECO_IR_MODULE) {
    m = class_def(p);
    skip_imports(p);
  } else {
    m = mlc_module_new(p->a, NULL);
    add_func(p, m);
    for (;;) {
      skip_imports(p);
      const ptok *at = peek(p);
      if (!tok_is_op(at, "@")) break;
      if (decorator(p) != DECO_PRIM_FUNC)
        mlc_parse_fail(p, at, "@I.ir_module cannot follow a bare @T.prim_func");
      add_func(p, m);
    }
  }
  t = peek(p);
  if (t->kind != TK_EOF) mlc_parse_expected(p, t, m->name ? "end of file" : "@T.prim_func or end of file");
  return m;
}

/* The jump point lives in this frame; nothing here changes after setjmp. */
static mlc_module *parse_guarded(mlc_parser *p) {
  if (setjmp(p->jb)) return NULL;
  mlc_arena_set_oom_jump(p->a, &p->jb);
  mlc_lex_tokens(p);
  return module(p);
}

mlc_module *mlc_parse_module(mlc_arena *a, const char *filename, const char *text,
                             mlc_error *err) {
  mlc_error scratch;
  if (!err) err = &scratch;
  err->msg[0] = 0;
  if (!filename) filename = "<input>";
  if (!text) {
    mlc_error_set(err, "%s: no text to parse", filename);
    return NULL;
  }
  if (strlen(text) > (size_t)INT32_MAX / 2) {
    mlc_error_set(err, "%s: input too large", filename);
    return NULL;
  }
  mlc_parser p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.file = filename;
  p.text = text;
  p.err = err;
  jmp_buf *outer = mlc_arena_oom_jump(a); /* a caller's own escape point */
  mlc_module *m = parse_guarded(&p);
  mlc_arena_set_oom_jump(a, outer);
  if (!m && !p.failed) snprintf(err->msg, sizeof err->msg, "%s: out of memory", filename);
  return m;
}
