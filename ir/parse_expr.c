/* TVMScript expressions: Python syntax into pnodes, pnodes into IR.
 *
 * Precedence, loosest first, as Python: or, and, not, comparisons (chained
 * a < b < c means a < b and b < c), + -, * / // %, unary -, then calls,
 * subscripts and attributes. Lowering checks what each T.* function takes
 * and gives literals the dtype of the other operand (docs/FORMATS.md).
 */
#include "ir/arith_internal.h"
#include "ir/parse_internal.h"

#include <math.h>
#include <stdio.h>

/* ---- syntax -------------------------------------------------------------- */

static pnode *pn_new(mlc_parser *p, pn_kind k, const ptok *t) {
  pnode *n = MLC_NEW(p->a, pnode);
  n->kind = k;
  n->t = t;
  return n;
}

static int pn_depth(const pnode *n) { return n ? n->depth : 0; }

/* Every node is finished once its children are set: its height is checked
 * here, so lowering and every later pass recurse a bounded depth. */
static pnode *finish(mlc_parser *p, pnode *n) {
  int d = pn_depth(n->x);
  if (pn_depth(n->y) > d) d = pn_depth(n->y);
  for (int i = 0; i < n->n; i++) {
    if (n->items && pn_depth(n->items[i]) > d) d = pn_depth(n->items[i]);
    if (n->keys && pn_depth(n->keys[i]) > d) d = pn_depth(n->keys[i]);
  }
  n->depth = d + 1;
  if (n->depth > PARSE_MAX_EXPR_DEPTH)
    mlc_parse_fail(p, n->t, "expression nested deeper than %d levels", PARSE_MAX_EXPR_DEPTH);
  return n;
}

static pnode *binary(mlc_parser *p, mlc_expr_kind op, const ptok *t, pnode *x, pnode *y) {
  pnode *n = pn_new(p, PN_BINARY, t);
  n->op = op;
  n->x = x;
  n->y = y;
  return finish(p, n);
}

static const char *const keywords[] = {
    "and",   "or",     "not",   "in",    "is",     "for",   "if",     "elif",
    "else",  "with",   "def",   "class", "pass",   "from",  "import", "as",
    "return", "while", "lambda", "del",  "global", "yield", "assert", "break",
    "continue", "raise", "try", "except", "finally", "nonlocal",
};

static bool is_keyword(const ptok *t) {
  if (t->kind != TK_NAME) return false;
  for (int i = 0; i < MLC_COUNTOF(keywords); i++)
    if (strcmp(t->str, keywords[i]) == 0) return true;
  return false;
}

typedef MLC_VEC(pnode *) pnode_vec;

static pnode *or_test(mlc_parser *p);

/* `[lo]:[hi]` or an expression, inside [...]. */
static pnode *subscript(mlc_parser *p) {
  const ptok *t = peek(p);
  pnode *lo = NULL;
  if (!tok_is_op(t, ":")) lo = or_test(p);
  if (!tok_is_op(peek(p), ":")) return lo;
  const ptok *colon = next_tok(p);
  pnode *s = pn_new(p, PN_SLICE, lo ? lo->t : colon);
  s->x = lo;
  if (!tok_is_op(peek(p), ",") && !tok_is_op(peek(p), "]")) s->y = or_test(p);
  return finish(p, s);
}

/* Items up to the closing bracket `close`, comma separated, trailing comma
 * allowed. `sub` parses subscripts instead of expressions. Returns whether
 * a comma was seen. */
static bool items_until(mlc_parser *p, const char *close, bool sub, pnode_vec *v) {
  bool comma = false;
  while (!tok_is_op(peek(p), close)) {
    pnode *x = sub ? subscript(p) : or_test(p);
    MLC_VEC_APUSH(p->a, *v, x);
    if (!accept_op(p, ",")) break;
    comma = true;
  }
  char what[16];
  snprintf(what, sizeof what, "',' or '%s'", close);
  expect_op(p, close, what);
  return comma;
}

static pnode *call_args(mlc_parser *p, pnode *callee, const ptok *t) {
  pnode *n = pn_new(p, PN_CALL, t);
  n->x = callee;
  pnode_vec args = {0};
  MLC_VEC(const char *) kws = {0};
  bool seen_kw = false;
  while (!tok_is_op(peek(p), ")")) {
    const char *kw = NULL;
    const ptok *at = peek(p);
    if (at->kind == TK_NAME && tok_is_op(peek_at(p, 1), "=") && !is_keyword(at)) {
      kw = at->str;
      p->pos += 2;
      seen_kw = true;
    } else if (seen_kw) {
      mlc_parse_fail(p, at, "positional argument follows keyword argument");
    }
    pnode *x = or_test(p);
    MLC_VEC_APUSH(p->a, args, x);
    MLC_VEC_APUSH(p->a, kws, kw);
    if (!accept_op(p, ",")) break;
  }
  expect_op(p, ")", "',' or ')'");
  n->n = args.len;
  n->items = args.data;
  n->kws = kws.data;
  return finish(p, n);
}

static pnode *dict(mlc_parser *p, const ptok *t) {
  pnode *n = pn_new(p, PN_DICT, t);
  pnode_vec keys = {0}, vals = {0};
  while (!tok_is_op(peek(p), "}")) {
    pnode *k = or_test(p);
    expect_op(p, ":", "':'");
    pnode *v = or_test(p);
    MLC_VEC_APUSH(p->a, keys, k);
    MLC_VEC_APUSH(p->a, vals, v);
    if (!accept_op(p, ",")) break;
  }
  expect_op(p, "}", "',' or '}'");
  n->n = keys.len;
  n->keys = keys.data;
  n->items = vals.data;
  return finish(p, n);
}

static pnode *atom(mlc_parser *p) {
  const ptok *t = peek(p);
  switch (t->kind) {
  case TK_NAME: {
    if (is_keyword(t)) mlc_parse_expected(p, t, "an expression");
    p->pos++;
    pnode *n;
    if (strcmp(t->str, "True") == 0 || strcmp(t->str, "False") == 0) {
      n = pn_new(p, PN_BOOL, t);
      n->i = t->str[0] == 'T';
    } else if (strcmp(t->str, "None") == 0) {
      n = pn_new(p, PN_NONE, t);
    } else {
      n = pn_new(p, PN_NAME, t);
      n->s = t->str;
    }
    return finish(p, n);
  }
  case TK_INT: {
    p->pos++;
    pnode *n = pn_new(p, PN_INT, t);
    n->i = t->ival;
    return finish(p, n);
  }
  case TK_FLOAT: {
    p->pos++;
    pnode *n = pn_new(p, PN_FLOAT, t);
    n->f = t->fval;
    return finish(p, n);
  }
  case TK_STR: {
    p->pos++;
    pnode *n = pn_new(p, PN_STR, t);
    n->s = t->str;
    return finish(p, n);
  }
  case TK_OP:
    if (tok_is_op(t, "(")) {
      p->pos++;
      nest_enter(p, t);
      pnode *n;
      if (accept_op(p, ")")) {
        n = finish(p, pn_new(p, PN_TUPLE, t));
      } else {
        pnode *x = or_test(p);
        if (accept_op(p, ",")) {
          pnode_vec v = {0};
          MLC_VEC_APUSH(p->a, v, x);
          items_until(p, ")", false, &v);
          n = pn_new(p, PN_TUPLE, t);
          n->n = v.len;
          n->items = v.data;
          n = finish(p, n);
        } else {
          expect_op(p, ")", "')'");
          n = x;
        }
      }
      nest_leave(p);
      return n;
    }
    if (tok_is_op(t, "[")) {
      p->pos++;
      nest_enter(p, t);
      pnode_vec v = {0};
      items_until(p, "]", false, &v);
      pnode *n = pn_new(p, PN_LIST, t);
      n->n = v.len;
      n->items = v.data;
      nest_leave(p);
      return finish(p, n);
    }
    if (tok_is_op(t, "{")) {
      p->pos++;
      nest_enter(p, t);
      pnode *n = dict(p, t);
      nest_leave(p);
      return n;
    }
    break;
  case TK_NEWLINE:
  case TK_INDENT:
  case TK_DEDENT:
  case TK_EOF:
  case TK_ERROR: break;
  }
  mlc_parse_expected(p, t, "an expression");
}

static pnode *postfix(mlc_parser *p) {
  pnode *x = atom(p);
  for (;;) {
    const ptok *t = peek(p);
    if (tok_is_op(t, ".")) {
      p->pos++;
      const ptok *name = peek(p);
      if (name->kind != TK_NAME) mlc_parse_expected(p, name, "an attribute name");
      p->pos++;
      pnode *n = pn_new(p, PN_ATTR, x->t);
      n->x = x;
      n->s = name->str;
      x = finish(p, n);
    } else if (tok_is_op(t, "(")) {
      p->pos++;
      nest_enter(p, t);
      x = call_args(p, x, x->t);
      nest_leave(p);
    } else if (tok_is_op(t, "[")) {
      p->pos++;
      nest_enter(p, t);
      pnode_vec v = {0};
      items_until(p, "]", true, &v);
      if (v.len == 0) mlc_parse_expected(p, t + 1, "an index");
      pnode *n = pn_new(p, PN_INDEX, x->t);
      n->x = x;
      n->n = v.len;
      n->items = v.data;
      x = finish(p, n);
      nest_leave(p);
    } else {
      return x;
    }
  }
}

static pnode *factor(mlc_parser *p) {
  const ptok *t = peek(p);
  if (tok_is_op(t, "-") || tok_is_op(t, "+")) {
    p->pos++;
    nest_enter(p, t);
    pnode *x = factor(p);
    nest_leave(p);
    if (t->str[0] == '+') return x;
    pnode *n = pn_new(p, PN_NEG, t);
    n->x = x;
    return finish(p, n);
  }
  return postfix(p);
}

static bool mul_op(const ptok *t, mlc_expr_kind *op) {
  if (t->kind != TK_OP) return false;
  if (strcmp(t->str, "*") == 0) *op = MLC_EXPR_MUL;
  else if (strcmp(t->str, "/") == 0) *op = MLC_EXPR_DIV;
  else if (strcmp(t->str, "//") == 0) *op = MLC_EXPR_FLOORDIV;
  else if (strcmp(t->str, "%") == 0) *op = MLC_EXPR_FLOORMOD;
  else return false;
  return true;
}

static pnode *term(mlc_parser *p) {
  pnode *x = factor(p);
  mlc_expr_kind op;
  while (mul_op(peek(p), &op)) {
    const ptok *t = next_tok(p);
    x = binary(p, op, t, x, factor(p));
  }
  return x;
}

static pnode *arith(mlc_parser *p) {
  pnode *x = term(p);
  for (;;) {
    const ptok *t = peek(p);
    if (!tok_is_op(t, "+") && !tok_is_op(t, "-")) return x;
    p->pos++;
    x = binary(p, t->str[0] == '+' ? MLC_EXPR_ADD : MLC_EXPR_SUB, t, x, term(p));
  }
}

static bool cmp_op(const ptok *t, mlc_expr_kind *op) {
  if (t->kind != TK_OP) return false;
  static const struct {
    const char *s;
    mlc_expr_kind k;
  } ops[] = {{"==", MLC_EXPR_EQ}, {"!=", MLC_EXPR_NE}, {"<", MLC_EXPR_LT},
             {"<=", MLC_EXPR_LE}, {">", MLC_EXPR_GT},  {">=", MLC_EXPR_GE}};
  for (int i = 0; i < MLC_COUNTOF(ops); i++)
    if (strcmp(t->str, ops[i].s) == 0) {
      *op = ops[i].k;
      return true;
    }
  return false;
}

static pnode *comparison(mlc_parser *p) {
  pnode *x = arith(p), *result = NULL, *left = x;
  mlc_expr_kind op;
  while (cmp_op(peek(p), &op)) {
    const ptok *t = next_tok(p);
    pnode *right = arith(p);
    pnode *c = binary(p, op, t, left, right);
    result = result ? binary(p, MLC_EXPR_AND, t, result, c) : c;
    left = right;
  }
  return result ? result : x;
}

static pnode *not_test(mlc_parser *p) {
  const ptok *t = peek(p);
  if (!tok_is_name(t, "not")) return comparison(p);
  p->pos++;
  nest_enter(p, t);
  pnode *x = not_test(p);
  nest_leave(p);
  pnode *n = pn_new(p, PN_NOT, t);
  n->x = x;
  return finish(p, n);
}

static pnode *and_test(mlc_parser *p) {
  pnode *x = not_test(p);
  while (tok_is_name(peek(p), "and")) {
    const ptok *t = next_tok(p);
    x = binary(p, MLC_EXPR_AND, t, x, not_test(p));
  }
  return x;
}

static pnode *or_test(mlc_parser *p) {
  pnode *x = and_test(p);
  while (tok_is_name(peek(p), "or")) {
    const ptok *t = next_tok(p);
    x = binary(p, MLC_EXPR_OR, t, x, and_test(p));
  }
  return x;
}

pnode *mlc_parse_pexpr(mlc_parser *p) { return or_test(p); }

pnode *mlc_parse_ptestlist(mlc_parser *p) {
  pnode *x = or_test(p);
  if (!tok_is_op(peek(p), ",")) return x;
  pnode_vec v = {0};
  MLC_VEC_APUSH(p->a, v, x);
  while (accept_op(p, ",")) {
    const ptok *t = peek(p);
    if (t->kind == TK_NEWLINE || (t->kind == TK_OP && strchr("=:", t->str[0])) ||
        tok_is_name(t, "in"))
      break;
    MLC_VEC_APUSH(p->a, v, or_test(p));
  }
  pnode *n = pn_new(p, PN_TUPLE, x->t);
  n->n = v.len;
  n->items = v.data;
  return finish(p, n);
}

/* ---- scope --------------------------------------------------------------- */

psym *mlc_parse_lookup(mlc_parser *p, const char *name) {
  for (int i = p->syms.len - 1; i >= 0; i--)
    if (strcmp(p->syms.data[i].name, name) == 0) return &p->syms.data[i];
  return NULL;
}

psym *mlc_parse_define(mlc_parser *p, const char *name, psym_kind kind) {
  psym s = {0};
  s.name = name;
  s.kind = kind;
  MLC_VEC_APUSH(p->a, p->syms, s);
  return &p->syms.data[p->syms.len - 1];
}

/* ---- helpers --------------------------------------------------------------- */

const char *mlc_parse_dotted(mlc_parser *p, const pnode *n) {
  const char *parts[16];
  int k = 0;
  for (; n && n->kind == PN_ATTR; n = n->x) {
    if (k == MLC_COUNTOF(parts)) return NULL;
    parts[k++] = n->s;
  }
  if (!n || n->kind != PN_NAME) return NULL;
  size_t len = strlen(n->s);
  for (int i = 0; i < k; i++) len += 1 + strlen(parts[i]);
  char *out = mlc_arena_alloc(p->a, len + 1);
  strcpy(out, n->s);
  for (int i = k - 1; i >= 0; i--) {
    strcat(out, ".");
    strcat(out, parts[i]);
  }
  return out;
}

void mlc_parse_args(mlc_parser *p, const pnode *call, const char *fname, int nnames,
                    const char *const *names, int npos, int nreq, pnode **out) {
  int pos = 0;
  for (int i = 0; i < nnames; i++) out[i] = NULL;
  for (int i = 0; i < call->n; i++) {
    pnode *arg = call->items[i];
    const char *kw = call->kws[i];
    int slot = -1;
    if (kw) {
      for (int j = 0; j < nnames; j++)
        if (strcmp(names[j], kw) == 0) slot = j;
      if (slot < 0) mlc_parse_fail(p, arg->t, "%s got an unexpected keyword argument '%s'", fname, kw);
    } else {
      if (pos >= npos)
        mlc_parse_fail(p, arg->t, "%s takes %d positional argument%s, got %d", fname, npos,
                       npos == 1 ? "" : "s", pos + 1);
      slot = pos++;
    }
    if (out[slot]) mlc_parse_fail(p, arg->t, "%s got multiple values for argument '%s'", fname, names[slot]);
    out[slot] = arg;
  }
  for (int j = 0; j < nreq; j++)
    if (!out[j]) mlc_parse_fail(p, call->t, "%s is missing argument '%s'", fname, names[j]);
}

const char *mlc_parse_string(mlc_parser *p, const pnode *n, const char *what) {
  if (n->kind != PN_STR) mlc_parse_fail(p, n->t, "expected %s as a string", what);
  return n->s;
}

mlc_dtype mlc_parse_dtype(mlc_parser *p, const pnode *n) {
  mlc_dtype t;
  const char *s = mlc_parse_string(p, n, "a dtype");
  if (!mlc_dtype_from_name(s, &t)) mlc_parse_fail(p, n->t, "unknown dtype \"%s\"", s);
  return t;
}

const char *mlc_parse_scope(mlc_parser *p, const pnode *n) {
  const char *s = mlc_parse_string(p, n, "a storage scope");
  bool ok = *s != 0 && *s != '.';
  for (const char *c = s; *c; c++)
    if (!(*c == '_' || *c == '.' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          (*c >= '0' && *c <= '9')))
      ok = false;
  if (!ok) mlc_parse_fail(p, n->t, "invalid storage scope \"%s\"", s);
  return s;
}

static bool only_size_vars(const mlc_expr *e, void *ud) {
  const mlc_parser *p = ud;
  if (e->kind != MLC_EXPR_VAR) return false;
  for (int k = 0; k < p->sizes.len; k++)
    if (p->sizes.data[k].var == e->var) return false;
  return true;
}

int mlc_parse_shape(mlc_parser *p, pnode *n, int64_t **shape, mlc_expr ***dims) {
  pnode **items = &n;
  int nd = 1;
  if (n->kind == PN_TUPLE || n->kind == PN_LIST) {
    items = n->items;
    nd = n->n;
  }
  if (nd > PARSE_MAX_NDIM)
    mlc_parse_fail(p, n->t, "buffers have at most %d dimensions, got %d", PARSE_MAX_NDIM, nd);
  int64_t *out = MLC_NEW_ARRAY(p->a, int64_t, nd ? nd : 1);
  mlc_expr **ex = MLC_NEW_ARRAY(p->a, mlc_expr *, nd ? nd : 1);
  bool symbolic = false;
  const ptok *too_large = NULL;
  int64_t numel = 1;
  for (int i = 0; i < nd; i++) {
    mlc_expr *e = ex[i] = mlc_parse_lower(p, items[i]);
    int64_t v, lo;
    if (!mlc_dtype_is_int(e->dtype))
      mlc_parse_fail(p, items[i]->t, "buffer shape must be an integer");
    if (mlc_expr_is_const_int(e, &v)) {
      if (v <= 0) mlc_parse_fail(p, items[i]->t, "buffer shape must be positive, got %lld", (long long)v);
    } else {
      if (mlc_expr_any(e, only_size_vars, p))
        mlc_parse_fail(p, items[i]->t,
                       "buffer shape must be a constant or an expression of size vars "
                       "(n = T.int64(max=...))");
      if (!mlc_size_range(p->sizes.len, p->sizes.data, e, &lo, &v))
        mlc_parse_fail(p, items[i]->t,
                       "this extent's bound cannot be computed: use + - * min max, // and %% "
                       "by constants, and size vars with a max small enough");
      if (lo < 0) mlc_parse_fail(p, items[i]->t, "this extent may be negative (down to %lld)", (long long)lo);
      if (v < 1) mlc_parse_fail(p, items[i]->t, "this extent is never positive");
      symbolic = true;
    }
    if (!too_large && v > ((int64_t)1 << 62) / numel) too_large = items[i]->t;
    if (!too_large) numel *= v;
    out[i] = v;
  }
  /* A parameter's symbolic extents may be unbounded; an allocation's
   * bound is checked where it is allocated. */
  if (too_large && !symbolic) mlc_parse_fail(p, too_large, "buffer too large");
  *shape = out;
  *dims = symbolic ? ex : NULL;
  return nd;
}

mlc_buffer *mlc_parse_buffer_ref(mlc_parser *p, const pnode *name) {
  if (name->kind != PN_NAME) mlc_parse_fail(p, name->t, "expected a buffer name before '['");
  psym *s = mlc_parse_lookup(p, name->s);
  if (!s) mlc_parse_fail(p, name->t, "undefined name '%s'", name->s);
  if (s->kind != SYM_BUF) mlc_parse_fail(p, name->t, "'%s' is not a buffer", name->s);
  return s->buf;
}

/* ---- literals and dtypes -------------------------------------------------- */

static bool is_lit(const mlc_expr *e) {
  return e->kind == MLC_EXPR_INT_IMM || e->kind == MLC_EXPR_FLOAT_IMM;
}

static bool int_fits(mlc_dtype t, int64_t v) {
  switch (t) {
  case MLC_INT8: return v >= -128 && v <= 127;
  case MLC_UINT8: return v >= 0 && v <= 255;
  case MLC_INT32: return v >= INT32_MIN && v <= INT32_MAX;
  case MLC_INT64: return true;
  case MLC_BOOL: return v == 0 || v == 1;
  case MLC_FLOAT16:
  case MLC_BFLOAT16:
  case MLC_FLOAT32: return false;
  }
  mlc_unreachable();
}

bool mlc_parse_lit_convert(mlc_parser *p, const ptok *t, mlc_expr **e, mlc_dtype to) {
  mlc_expr *x = *e;
  if (x->dtype == to) return true;
  if (x->kind == MLC_EXPR_INT_IMM && x->dtype != MLC_BOOL) {
    if (mlc_dtype_is_int(to)) {
      if (!int_fits(to, x->int_val))
        mlc_parse_fail(p, t, "literal %lld does not fit in %s", (long long)x->int_val,
                       mlc_dtype_name(to));
      *e = mlc_int_t(p->a, to, x->int_val);
      return true;
    }
    if (mlc_dtype_is_float(to)) {
      *e = mlc_float(p->a, to, (double)x->int_val);
      return true;
    }
    return false;
  }
  if (x->kind == MLC_EXPR_FLOAT_IMM && mlc_dtype_is_float(to)) {
    *e = mlc_float(p->a, to, x->float_val);
    return true;
  }
  return false;
}

void mlc_parse_unify(mlc_parser *p, const ptok *t, const char *what, mlc_expr **x,
                     mlc_expr **y) {
  if ((*x)->dtype == (*y)->dtype) return;
  if (is_lit(*y) && mlc_parse_lit_convert(p, t, y, (*x)->dtype)) return;
  if (is_lit(*x) && mlc_parse_lit_convert(p, t, x, (*y)->dtype)) return;
  mlc_parse_fail(p, t, "%s have different dtypes: %s and %s", what, mlc_dtype_name((*x)->dtype),
                 mlc_dtype_name((*y)->dtype));
}

mlc_expr *mlc_parse_sub(mlc_parser *p, const ptok *t, mlc_expr *hi, mlc_expr *lo) {
  mlc_parse_unify(p, t, "range bounds", &hi, &lo);
  int64_t h, l;
  if (mlc_expr_is_const_int(hi, &h) && mlc_expr_is_const_int(lo, &l)) {
    int64_t d;
    if (mlc_sub_overflow(h, l, &d) || !int_fits(hi->dtype, d))
      mlc_parse_fail(p, t, "range too large: %lld - %lld does not fit %s", (long long)h,
                     (long long)l, mlc_dtype_name(hi->dtype));
    return mlc_int_t(p->a, hi->dtype, d);
  }
  /* hi written lo + e, as the printer writes a region or domain: e as it
   * stands (simplified alone), since simplifying (lo + e) - lo may order
   * e's terms differently, and print(parse(print(f))) would differ from
   * print(f) (found by tests/fuzz/fuzz_parse). */
  if (hi->kind == MLC_EXPR_ADD && arith_expr_equal(hi->bin.a, lo))
    return mlc_simplify_expr(p->a, hi->bin.b);
  return mlc_simplify_expr(p->a, mlc_sub(p->a, hi, lo));
}

/* ---- lowering -------------------------------------------------------------- */

mlc_expr *mlc_parse_lower_int(mlc_parser *p, pnode *n, const char *what) {
  mlc_expr *e = mlc_parse_lower(p, n);
  if (!mlc_dtype_is_int(e->dtype))
    mlc_parse_fail(p, n->t, "expected an integer %s, got %s", what,
                   mlc_dtype_name(e->dtype));
  return e;
}

mlc_expr *mlc_parse_lower_bool(mlc_parser *p, pnode *n, const char *what) {
  mlc_expr *e = mlc_parse_lower(p, n);
  if (e->dtype != MLC_BOOL)
    mlc_parse_fail(p, n->t, "expected a bool %s, got %s", what,
                   mlc_dtype_name(e->dtype));
  return e;
}

static mlc_expr *lower_name(mlc_parser *p, pnode *n) {
  psym *s = mlc_parse_lookup(p, n->s);
  if (!s) mlc_parse_fail(p, n->t, "undefined name '%s'", n->s);
  switch (s->kind) {
  case SYM_VAR: return mlc_ref(p->a, s->var);
  case SYM_BUF: mlc_parse_fail(p, n->t, "buffer '%s' used as a value; index it", n->s);
  case SYM_HANDLE: mlc_parse_fail(p, n->t, "handle '%s' used as a value", n->s);
  }
  mlc_unreachable();
}

static void check_arith(mlc_parser *p, const ptok *t, const char *op, const mlc_expr *e) {
  if (e->dtype == MLC_BOOL) mlc_parse_fail(p, t, "%s is not defined for bool operands", op);
}

static mlc_expr *lower_binary(mlc_parser *p, pnode *n) {
  mlc_expr *x = mlc_parse_lower(p, n->x);
  mlc_expr *y = mlc_parse_lower(p, n->y);
  const char *sym = mlc_binop_symbol(n->op);
  char what[64];
  snprintf(what, sizeof what, "operands of '%s'", sym);
  if (n->op == MLC_EXPR_AND || n->op == MLC_EXPR_OR) {
    if (x->dtype != MLC_BOOL || y->dtype != MLC_BOOL)
      mlc_parse_fail(p, n->t, "%s must be bool, got %s and %s", what, mlc_dtype_name(x->dtype),
                     mlc_dtype_name(y->dtype));
    return mlc_binary(p->a, n->op, x, y);
  }
  mlc_parse_unify(p, n->t, what, &x, &y);
  if (n->op != MLC_EXPR_EQ && n->op != MLC_EXPR_NE) {
    char op[32];
    snprintf(op, sizeof op, "'%s'", sym);
    check_arith(p, n->t, op, x);
  }
  return mlc_binary(p->a, n->op, x, y);
}

static mlc_expr *lower_neg(mlc_parser *p, pnode *n) {
  mlc_expr *x = mlc_parse_lower(p, n->x);
  check_arith(p, n->t, "unary '-'", x);
  if (x->kind == MLC_EXPR_INT_IMM) {
    int64_t v = -x->int_val; /* a literal is >= -INT64_MAX */
    mlc_dtype t = x->dtype;
    /* An untyped literal written -2147483648 is still int32. */
    if (n->x->kind == PN_INT && int_fits(MLC_INT32, v)) t = MLC_INT32;
    if (!int_fits(t, v))
      mlc_parse_fail(p, n->t, "literal %lld does not fit in %s", (long long)v, mlc_dtype_name(t));
    return mlc_int_t(p->a, t, v);
  }
  if (x->kind == MLC_EXPR_FLOAT_IMM) return mlc_float(p->a, x->dtype, -x->float_val);
  /* As TVM writes -x: x * -1, which an unsigned type cannot hold. */
  if (!mlc_dtype_is_float(x->dtype) && !int_fits(x->dtype, -1))
    mlc_parse_fail(p, n->t, "unary '-' of an unsigned %s value: write T.%s(0) - x",
                   mlc_dtype_name(x->dtype), mlc_dtype_name(x->dtype));
  mlc_expr *m1 = mlc_dtype_is_float(x->dtype) ? mlc_float(p->a, x->dtype, -1.0)
                                              : mlc_int_t(p->a, x->dtype, -1);
  return mlc_mul(p->a, x, m1);
}

mlc_expr **mlc_parse_indices(mlc_parser *p, pnode *n, mlc_buffer **out) {
  mlc_buffer *b = mlc_parse_buffer_ref(p, n->x);
  pnode **items = n->items;
  int k = n->n;
  if (k == 1 && items[0]->kind == PN_TUPLE && items[0]->n == 0) k = 0; /* A[()] */
  if (k != b->ndim)
    mlc_parse_fail(p, n->t, "buffer %s has %d dimension%s, indexed with %d", b->name, b->ndim,
                   b->ndim == 1 ? "" : "s", k);
  mlc_expr **idx = MLC_NEW_ARRAY(p->a, mlc_expr *, k ? k : 1);
  for (int i = 0; i < k; i++) {
    if (items[i]->kind == PN_SLICE)
      mlc_parse_fail(p, items[i]->t, "a slice is only allowed in T.reads and T.writes");
    idx[i] = mlc_parse_lower_int(p, items[i], "index");
  }
  *out = b;
  return idx;
}

static mlc_expr *lower_load(mlc_parser *p, pnode *n) {
  mlc_buffer *b;
  mlc_expr **idx = mlc_parse_indices(p, n, &b);
  return mlc_load(p->a, b, idx);
}

/* T.float32(0), T.int64(1), T.bool(True), T.float32("inf"); a non-literal
 * argument of another dtype is cast. */
static mlc_expr *typed_literal(mlc_parser *p, pnode *n, const char *fname, mlc_dtype to) {
  if (n->n != 1 || n->kws[0])
    mlc_parse_fail(p, n->t, "%s takes 1 positional argument, got %d", fname, n->n);
  pnode *arg = n->items[0];
  if (arg->kind == PN_STR) {
    double v;
    if (!mlc_dtype_is_float(to)) mlc_parse_fail(p, arg->t, "%s of a string", fname);
    if (strcmp(arg->s, "inf") == 0) v = INFINITY;
    else if (strcmp(arg->s, "-inf") == 0) v = -INFINITY;
    else if (strcmp(arg->s, "nan") == 0) v = NAN;
    else mlc_parse_fail(p, arg->t, "expected \"inf\", \"-inf\" or \"nan\"");
    return mlc_float(p->a, to, v);
  }
  mlc_expr *e = mlc_parse_lower(p, arg);
  if (e->kind == MLC_EXPR_INT_IMM && e->dtype != MLC_BOOL) {
    if (mlc_dtype_is_float(to)) return mlc_float(p->a, to, (double)e->int_val);
    if (!int_fits(to, e->int_val))
      mlc_parse_fail(p, arg->t, "literal %lld does not fit in %s", (long long)e->int_val,
                     mlc_dtype_name(to));
    return mlc_int_t(p->a, to, e->int_val);
  }
  if (e->kind == MLC_EXPR_INT_IMM && e->dtype == MLC_BOOL) {
    if (to != MLC_BOOL) mlc_parse_fail(p, arg->t, "%s of a bool", fname);
    return e;
  }
  if (e->kind == MLC_EXPR_FLOAT_IMM) {
    if (!mlc_dtype_is_float(to)) mlc_parse_fail(p, arg->t, "%s of a float literal", fname);
    return mlc_float(p->a, to, e->float_val);
  }
  return e->dtype == to ? e : mlc_cast(p->a, to, e);
}

static void want_args(mlc_parser *p, pnode *n, const char *fname, int k) {
  for (int i = 0; i < n->n; i++)
    if (n->kws[i])
      mlc_parse_fail(p, n->items[i]->t, "%s got an unexpected keyword argument '%s'", fname,
                     n->kws[i]);
  if (n->n != k)
    mlc_parse_fail(p, n->t, "%s takes %d argument%s, got %d", fname, k, k == 1 ? "" : "s", n->n);
}

/* k positional arguments and an optional dtype="..." keyword, as TVM
 * prints T.exp(x, dtype="float32"); *dt is the keyword's dtype (or
 * MLC_DTYPE_COUNT when absent) and *dt_node its node. */
static void want_args_dtype(mlc_parser *p, pnode *n, const char *fname, int k, mlc_dtype *dt,
                            pnode **dt_node) {
  int npos = 0;
  *dt = (mlc_dtype)MLC_DTYPE_COUNT;
  *dt_node = NULL;
  for (int i = 0; i < n->n; i++) {
    if (!n->kws[i]) {
      npos++;
      continue;
    }
    if (strcmp(n->kws[i], "dtype") != 0)
      mlc_parse_fail(p, n->items[i]->t, "%s got an unexpected keyword argument '%s'", fname,
                     n->kws[i]);
    if (*dt_node) mlc_parse_fail(p, n->items[i]->t, "%s got multiple values for argument 'dtype'", fname);
    *dt_node = n->items[i];
    *dt = mlc_parse_dtype(p, n->items[i]);
  }
  if (npos != k)
    mlc_parse_fail(p, n->t, "%s takes %d argument%s, got %d", fname, k, k == 1 ? "" : "s", npos);
}

static bool has_dtype(mlc_dtype dt) { return (int)dt != MLC_DTYPE_COUNT; }

/* A literal operand takes the stated dtype (T.max(x, 0, dtype="int64")). */
static void lit_to_dtype(mlc_parser *p, const pnode *at, mlc_expr **e, mlc_dtype dt) {
  if (has_dtype(dt) && is_lit(*e)) mlc_parse_lit_convert(p, at->t, e, dt);
}

/* The stated dtype must be the one the call computes: TVM records it as
 * the call's type, so a different one would change what the text means. */
static mlc_expr *check_dtype(mlc_parser *p, const char *fname, pnode *dt_node, mlc_dtype dt,
                             mlc_expr *e) {
  if (has_dtype(dt) && e->dtype != dt)
    mlc_parse_fail(p, dt_node->t, "%s: dtype=\"%s\" disagrees with the computed dtype %s", fname,
                   mlc_dtype_name(dt), mlc_dtype_name(e->dtype));
  return e;
}

static mlc_expr *lower_intrin(mlc_parser *p, pnode *n, const char *fname, mlc_intrin op) {
  int k = mlc_intrin_nargs(op);
  mlc_dtype dt;
  pnode *dt_node;
  want_args_dtype(p, n, fname, k, &dt, &dt_node);
  mlc_expr *args[4];
  for (int i = 0; i < k; i++) {
    args[i] = mlc_parse_lower(p, n->items[i]);
    lit_to_dtype(p, n->items[i], &args[i], dt);
    if (args[i]->kind == MLC_EXPR_INT_IMM && args[i]->dtype != MLC_BOOL && op != MLC_INTRIN_ABS)
      args[i] = mlc_float(p->a, MLC_FLOAT32, (double)args[i]->int_val);
  }
  if (k == 2) mlc_parse_unify(p, n->t, "arguments", &args[0], &args[1]);
  for (int i = 0; i < k; i++) {
    mlc_dtype t = args[i]->dtype;
    bool ok = op == MLC_INTRIN_ABS ? t != MLC_BOOL : mlc_dtype_is_float(t);
    if (!ok)
      mlc_parse_fail(p, n->items[i]->t, "%s expects a %s argument, got %s", fname,
                     op == MLC_INTRIN_ABS ? "numeric" : "float", mlc_dtype_name(t));
  }
  return check_dtype(p, fname, dt_node, dt, mlc_call(p->a, op, args));
}

static const struct {
  const char *name;
  mlc_dtype t;
} typed_names[] = {
    {"T.float32", MLC_FLOAT32}, {"T.float16", MLC_FLOAT16}, {"T.int8", MLC_INT8},
    {"T.int32", MLC_INT32},     {"T.int64", MLC_INT64},     {"T.bool", MLC_BOOL},
    {"T.uint8", MLC_UINT8},     {"T.bfloat16", MLC_BFLOAT16},
};

/* T.* names that are statements, not values. */
static const char *const stmt_funcs[] = {
    "T.reads",  "T.writes",     "T.where",        "T.block_attr",  "T.func_attr",
    "T.evaluate", "T.alloc_buffer", "T.match_buffer", "T.decl_buffer", "T.block",
    "T.init",   "T.grid",       "T.serial",       "T.parallel",    "T.vectorized",
    "T.unroll", "T.thread_binding", "T.axis.spatial", "T.axis.reduce", "T.axis.S",
    "T.axis.R", "T.axis.remap", "range",
};

/* ---- T.call_extern ---------------------------------------------------------- */

typedef struct xargs {
  MLC_VEC(mlc_xarg) args;
  MLC_VEC(mlc_expr *) kids;
} xargs;

static bool is_c_name(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

static int access_mask(mlc_parser *p, const pnode *n) {
  const char *m = mlc_parse_string(p, n, "an access mask");
  if (strcmp(m, "r") == 0) return MLC_ACCESS_READ;
  if (strcmp(m, "w") == 0) return MLC_ACCESS_WRITE;
  if (strcmp(m, "rw") == 0) return MLC_ACCESS_READ | MLC_ACCESS_WRITE;
  mlc_parse_fail(p, n->t, "expected access mask \"r\", \"w\" or \"rw\", got \"%s\"", m);
}

static void push_ptr(mlc_parser *p, xargs *x, mlc_region r, int access) {
  mlc_xarg a = {.kind = MLC_XARG_PTR, .buf = r.buf, .access = access, .kid = x->kids.len};
  for (int d = 0; d < r.buf->ndim; d++) MLC_VEC_APUSH(p->a, x->kids, r.ranges[d].min);
  for (int d = 0; d < r.buf->ndim; d++) MLC_VEC_APUSH(p->a, x->kids, r.ranges[d].extent);
  MLC_VEC_APUSH(p->a, x->args, a);
}

/* One argument: T.access_ptr(C[0:16, 0:16], "w"), C.access_ptr("w") (the
 * whole buffer), C.strides[0], or a value. */
static void extern_arg(mlc_parser *p, xargs *x, pnode *n) {
  const char *f = n->kind == PN_CALL ? mlc_parse_dotted(p, n->x) : NULL;
  if (f && strcmp(f, "T.access_ptr") == 0) {
    want_args(p, n, f, 2);
    push_ptr(p, x, mlc_parse_region(p, n->items[0]), access_mask(p, n->items[1]));
    return;
  }
  if (n->kind == PN_CALL && n->x->kind == PN_ATTR && strcmp(n->x->s, "access_ptr") == 0) {
    mlc_buffer *b = mlc_parse_buffer_ref(p, n->x->x);
    want_args(p, n, "access_ptr", 1);
    mlc_region r = {b, MLC_NEW_ARRAY(p->a, mlc_range, b->ndim ? b->ndim : 1)};
    for (int d = 0; d < b->ndim; d++)
      r.ranges[d] = (mlc_range){mlc_int(p->a, 0), mlc_int_t(p->a, int_fits(MLC_INT32, b->shape[d])
                                                                        ? MLC_INT32 : MLC_INT64,
                                                               b->shape[d])};
    push_ptr(p, x, r, access_mask(p, n->items[0]));
    return;
  }
  if (n->kind == PN_INDEX && n->x->kind == PN_ATTR && strcmp(n->x->s, "strides") == 0) {
    mlc_buffer *b = mlc_parse_buffer_ref(p, n->x->x);
    if (n->n != 1 || n->items[0]->kind != PN_INT)
      mlc_parse_fail(p, n->t, "expected %s.strides[<dimension>]", b->name);
    if (n->items[0]->i < 0 || n->items[0]->i >= b->ndim)
      mlc_parse_fail(p, n->items[0]->t, "buffer %s has %d dimension%s, no stride %lld", b->name,
                     b->ndim, b->ndim == 1 ? "" : "s", (long long)n->items[0]->i);
    mlc_xarg a = {.kind = MLC_XARG_STRIDE, .buf = b, .dim = (int)n->items[0]->i};
    MLC_VEC_APUSH(p->a, x->args, a);
    return;
  }
  mlc_expr *v = mlc_parse_lower(p, n);
  if (v->dtype == MLC_BOOL) mlc_parse_fail(p, n->t, "T.call_extern cannot pass a bool");
  mlc_xarg a = {.kind = MLC_XARG_VALUE, .kid = x->kids.len};
  MLC_VEC_APUSH(p->a, x->kids, v);
  MLC_VEC_APUSH(p->a, x->args, a);
}

/* T.call_extern("float32", "name", args...) */
static mlc_expr *lower_extern(mlc_parser *p, pnode *n) {
  const char *f = "T.call_extern";
  for (int i = 0; i < n->n; i++)
    if (n->kws[i])
      mlc_parse_fail(p, n->items[i]->t, "%s got an unexpected keyword argument '%s'", f, n->kws[i]);
  if (n->n < 2) mlc_parse_fail(p, n->t, "%s takes a dtype, a function name and its arguments", f);
  mlc_dtype t = mlc_parse_dtype(p, n->items[0]);
  if (t == MLC_BOOL) mlc_parse_fail(p, n->items[0]->t, "%s cannot return bool", f);
  const char *name = mlc_parse_string(p, n->items[1], "a function name");
  if (!is_c_name(name))
    mlc_parse_fail(p, n->items[1]->t, "\"%s\" is not a C function name", name);
  xargs x = {0};
  for (int i = 2; i < n->n; i++) extern_arg(p, &x, n->items[i]);
  return mlc_call_extern(p->a, t, name, x.args.len, x.args.data, x.kids.len, x.kids.data);
}

static mlc_expr *lower_call(mlc_parser *p, pnode *n) {
  const char *f = mlc_parse_dotted(p, n->x);
  if (!f) mlc_parse_fail(p, n->t, "expected a function name before '('");
  for (int i = 0; i < MLC_COUNTOF(typed_names); i++)
    if (strcmp(f, typed_names[i].name) == 0) return typed_literal(p, n, f, typed_names[i].t);
  bool is_max = strcmp(f, "T.max") == 0 || strcmp(f, "max") == 0;
  bool is_min = strcmp(f, "T.min") == 0 || strcmp(f, "min") == 0;
  bool is_fdiv = strcmp(f, "T.floordiv") == 0, is_fmod = strcmp(f, "T.floormod") == 0;
  mlc_dtype dt;
  pnode *dt_node;
  if (is_max || is_min || is_fdiv || is_fmod) {
    want_args_dtype(p, n, f, 2, &dt, &dt_node);
    mlc_expr *x = mlc_parse_lower(p, n->items[0]);
    mlc_expr *y = mlc_parse_lower(p, n->items[1]);
    lit_to_dtype(p, n->items[0], &x, dt);
    lit_to_dtype(p, n->items[1], &y, dt);
    mlc_parse_unify(p, n->t, "arguments", &x, &y);
    check_arith(p, n->t, f, x);
    mlc_expr_kind k = is_max ? MLC_EXPR_MAX : is_min ? MLC_EXPR_MIN
                      : is_fdiv ? MLC_EXPR_FLOORDIV : MLC_EXPR_FLOORMOD;
    return check_dtype(p, f, dt_node, dt, mlc_binary(p->a, k, x, y));
  }
  if (strcmp(f, "T.Cast") == 0) {
    want_args(p, n, f, 2);
    mlc_dtype t = mlc_parse_dtype(p, n->items[0]);
    return mlc_cast(p->a, t, mlc_parse_lower(p, n->items[1]));
  }
  if (strcmp(f, "T.if_then_else") == 0 || strcmp(f, "T.Select") == 0) {
    want_args_dtype(p, n, f, 3, &dt, &dt_node);
    mlc_expr *c = mlc_parse_lower_bool(p, n->items[0], "condition");
    mlc_expr *t = mlc_parse_lower(p, n->items[1]);
    mlc_expr *e = mlc_parse_lower(p, n->items[2]);
    lit_to_dtype(p, n->items[1], &t, dt);
    lit_to_dtype(p, n->items[2], &e, dt);
    mlc_parse_unify(p, n->t, "branches", &t, &e);
    return check_dtype(p, f, dt_node, dt,
                       f[2] == 'i' ? mlc_if_then_else(p->a, c, t, e) : mlc_select(p->a, c, t, e));
  }
  if (strcmp(f, "T.call_extern") == 0) return lower_extern(p, n);
  if (strcmp(f, "T.access_ptr") == 0)
    mlc_parse_fail(p, n->t, "T.access_ptr is only allowed as an argument of T.call_extern");
  mlc_intrin op;
  if (strncmp(f, "T.", 2) == 0 && mlc_intrin_from_name(f + 2, &op))
    return lower_intrin(p, n, f, op);
  for (int i = 0; i < MLC_COUNTOF(stmt_funcs); i++)
    if (strcmp(f, stmt_funcs[i]) == 0)
      mlc_parse_fail(p, n->t, "%s cannot be used in an expression", f);
  mlc_parse_fail(p, n->t, "unknown function %s", f);
}

mlc_expr *mlc_parse_lower(mlc_parser *p, pnode *n) {
  switch (n->kind) {
  case PN_INT:
    return mlc_int_t(p->a, int_fits(MLC_INT32, n->i) ? MLC_INT32 : MLC_INT64, n->i);
  case PN_FLOAT: return mlc_float(p->a, MLC_FLOAT32, n->f);
  case PN_BOOL: return mlc_bool(p->a, n->i != 0);
  case PN_STR: mlc_parse_fail(p, n->t, "unexpected string in an expression");
  case PN_NONE: mlc_parse_fail(p, n->t, "unexpected None in an expression");
  case PN_NAME: return lower_name(p, n);
  case PN_ATTR: {
    const char *d = mlc_parse_dotted(p, n);
    mlc_parse_fail(p, n->t, "unexpected %s in an expression", d ? d : "attribute");
  }
  case PN_CALL: return lower_call(p, n);
  case PN_INDEX: return lower_load(p, n);
  case PN_TUPLE: mlc_parse_fail(p, n->t, "unexpected tuple in an expression");
  case PN_LIST: mlc_parse_fail(p, n->t, "unexpected list in an expression");
  case PN_DICT: mlc_parse_fail(p, n->t, "unexpected dict in an expression");
  case PN_BINARY: return lower_binary(p, n);
  case PN_NEG: return lower_neg(p, n);
  case PN_NOT: return mlc_not(p->a, mlc_parse_lower_bool(p, n->x, "operand of 'not'"));
  case PN_SLICE: mlc_parse_fail(p, n->t, "a slice is only allowed in T.reads and T.writes");
  }
  mlc_unreachable();
}

/* ---- regions and annotations ------------------------------------------------ */

mlc_region mlc_parse_region(mlc_parser *p, pnode *n) {
  if (n->kind != PN_INDEX)
    mlc_parse_fail(p, n->t, "expected a buffer region such as A[i, 0:16]");
  mlc_buffer *b = mlc_parse_buffer_ref(p, n->x);
  pnode **items = n->items;
  int k = n->n;
  if (k == 1 && items[0]->kind == PN_TUPLE && items[0]->n == 0) k = 0;
  if (k != b->ndim)
    mlc_parse_fail(p, n->t, "buffer %s has %d dimension%s, indexed with %d", b->name, b->ndim,
                   b->ndim == 1 ? "" : "s", k);
  mlc_region r = {b, MLC_NEW_ARRAY(p->a, mlc_range, k ? k : 1)};
  for (int d = 0; d < k; d++) {
    pnode *it = items[d];
    if (it->kind != PN_SLICE) {
      r.ranges[d].min = mlc_parse_lower_int(p, it, "index");
      r.ranges[d].extent = mlc_int_t(p->a, r.ranges[d].min->dtype, 1);
      continue;
    }
    mlc_expr *lo = it->x ? mlc_parse_lower_int(p, it->x, "slice start") : mlc_int(p->a, 0);
    mlc_expr *hi = it->y ? mlc_parse_lower_int(p, it->y, "slice end")
                         : mlc_int_t(p->a, int_fits(MLC_INT32, b->shape[d]) ? MLC_INT32 : MLC_INT64,
                                     b->shape[d]);
    mlc_parse_unify(p, it->t, "slice bounds", &lo, &hi);
    mlc_expr *ext = mlc_parse_sub(p, it->t, hi, lo);
    int64_t v;
    if (mlc_expr_is_const_int(ext, &v) && v <= 0)
      mlc_parse_fail(p, it->t, "empty slice: its end must be greater than its start");
    r.ranges[d].min = lo;
    r.ranges[d].extent = ext;
  }
  return r;
}

static bool ann_number(const pnode *v, bool *is_float, int64_t *i, double *f) {
  bool neg = false;
  if (v->kind == PN_NEG) {
    neg = true;
    v = v->x;
  }
  if (v->kind == PN_INT) {
    *is_float = false;
    *i = neg ? -v->i : v->i;
    return true;
  }
  if (v->kind == PN_FLOAT) {
    *is_float = true;
    *f = neg ? -v->f : v->f;
    return true;
  }
  return false;
}

static bool ann_nested(mlc_parser *p, const char *key, pnode *v, mlc_ann *a);

/* One annotation value; key is NULL for a list element. */
static mlc_ann ann_value(mlc_parser *p, const char *key, pnode *v) {
  mlc_ann a = {0};
  a.key = key;
  bool is_float;
  if (ann_nested(p, key, v, &a)) return a;
  if (v->kind == PN_STR) {
    a.kind = MLC_ANN_STRING;
    a.s = v->s;
    return a;
  }
  if (v->kind == PN_BOOL) {
    a.kind = MLC_ANN_BOOL;
    a.i = v->i;
    return a;
  }
  if (ann_number(v, &is_float, &a.i, &a.f)) {
    a.kind = is_float ? MLC_ANN_FLOAT : MLC_ANN_INT;
    return a;
  }
  const char *f = v->kind == PN_CALL ? mlc_parse_dotted(p, v->x) : NULL;
  if (f && strcmp(f, "float") == 0 && v->n == 1 && !v->kws[0]) {
    pnode *arg = v->items[0];
    a.kind = MLC_ANN_FLOAT;
    if (arg->kind == PN_STR && strcmp(arg->s, "inf") == 0) a.f = INFINITY;
    else if (arg->kind == PN_STR && strcmp(arg->s, "-inf") == 0) a.f = -INFINITY;
    else if (arg->kind == PN_STR && strcmp(arg->s, "nan") == 0) a.f = NAN;
    else if (ann_number(arg, &is_float, &a.i, &a.f)) a.f = is_float ? a.f : (double)a.i;
    else mlc_parse_fail(p, arg->t, "expected a number or \"inf\", \"-inf\", \"nan\"");
    a.i = 0;
    return a;
  }
  for (int i = 0; f && i < MLC_COUNTOF(typed_names); i++) {
    if (strcmp(f, typed_names[i].name) != 0) continue;
    mlc_expr *e = mlc_parse_lower(p, v);
    if (e->kind == MLC_EXPR_INT_IMM) {
      a.kind = e->dtype == MLC_BOOL ? MLC_ANN_BOOL : MLC_ANN_INT;
      a.i = e->int_val;
      return a;
    }
    if (e->kind == MLC_EXPR_FLOAT_IMM) {
      a.kind = MLC_ANN_FLOAT;
      a.f = e->float_val;
      return a;
    }
  }
  mlc_parse_fail(p, v->t,
                 "expected an annotation value (string, number, bool, list or dict)");
}

/* Entries of a dict literal appended to out[*k..] (room for dict->n more);
 * a key already among out[0..*k) fails. */
static void ann_entries(mlc_parser *p, const pnode *dict, mlc_ann *out, int *k) {
  for (int i = 0; i < dict->n; i++) {
    const char *key = mlc_parse_string(p, dict->keys[i], "an annotation key");
    for (int j = 0; j < *k; j++)
      if (strcmp(out[j].key, key) == 0)
        mlc_parse_fail(p, dict->keys[i]->t, "duplicate annotation key \"%s\"", key);
    out[(*k)++] = ann_value(p, key, dict->items[i]);
  }
}

/* [v, ...] (a tuple reads as the list TVM makes of it) or {"k": v, ...}. */
static bool ann_nested(mlc_parser *p, const char *key, pnode *v, mlc_ann *a) {
  if (v->kind != PN_LIST && v->kind != PN_TUPLE && v->kind != PN_DICT) return false;
  a->key = key;
  a->n = v->n;
  a->items = v->n ? MLC_NEW_ARRAY(p->a, mlc_ann, v->n) : NULL;
  if (v->kind == PN_DICT) {
    int k = 0;
    a->kind = MLC_ANN_DICT;
    ann_entries(p, v, a->items, &k);
    return true;
  }
  a->kind = MLC_ANN_LIST;
  for (int i = 0; i < v->n; i++) a->items[i] = ann_value(p, NULL, v->items[i]);
  return true;
}

void mlc_parse_anns(mlc_parser *p, const pnode *dict, int *n, mlc_ann **anns) {
  if (dict->kind != PN_DICT) mlc_parse_fail(p, dict->t, "expected a dict {\"key\": value, ...}");
  if (dict->n == 0) return;
  mlc_ann *out = MLC_NEW_ARRAY(p->a, mlc_ann, *n + dict->n);
  if (*n) memcpy(out, *anns, sizeof(mlc_ann) * (size_t)*n);
  int k = *n;
  ann_entries(p, dict, out, &k);
  *n = k;
  *anns = out;
}
