/* Printer: IR -> canonical TVMScript, spelled as TVM's own printer spells it
 * so that TVM-printed programs reprint unchanged.
 *
 * Canonical choices (print(parse(print(f))) is byte-identical):
 *   - a chain of >= 2 plain loops (serial, min 0, no annotations, each the
 *     whole body of the previous) prints as one `for i, j in T.grid(...)`;
 *   - `T.axis.remap` when every iter var binds a distinct enclosing loop var
 *     over exactly that loop's range, one `T.axis.spatial/reduce` line per
 *     iter var otherwise;
 *   - `T.reads`/`T.writes` always, point dimensions as indices, ranges as
 *     `min:end` with a constant folded into `end`;
 *   - literals: int32 plain, other dtypes typed (`T.int64(1)`,
 *     `T.float32(0.5)`), floats in the shortest text that reads back as the
 *     same value of their dtype.
 *
 * Names. Vars and buffers share one Python namespace. A definition whose
 * name is already taken by a visible definition (or is not a usable Python
 * identifier) is renamed name_1, name_2, ... Visibility follows the text's
 * suites: a name defined in a loop, block, init or if suite is released at
 * its end, so sibling loops may both print `i`, as TVM prints them.
 */
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct name_entry {
  const void *obj; /* mlc_var * or mlc_buffer * */
  const char *name;
} name_entry;

typedef struct loop_entry {
  const mlc_var *var;
  const mlc_expr *min, *extent;
} loop_entry;

typedef struct printer {
  mlc_str *out;
  mlc_arena *scratch;        /* generated names; freed with the printer */
  /* out's own arena (NULL: none): a string built in an arena, under its
   * escape point, gets the scratch and vectors there too, so that running
   * out of memory while printing leaves nothing on the heap. */
  mlc_arena *in_arena;
  MLC_VEC(name_entry) names; /* visible definitions, innermost last */
  MLC_VEC(loop_entry) loops; /* enclosing loops, innermost last */
} printer;

static void printer_init(printer *p, mlc_str *out) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->in_arena = out->arena;
  p->scratch = out->arena ? out->arena : mlc_arena_new();
}

static void printer_done(printer *p) {
  if (p->in_arena) return;
  MLC_VEC_FREE(p->names);
  MLC_VEC_FREE(p->loops);
  mlc_arena_free(p->scratch);
}

static void put(printer *p, const char *s) { mlc_str_puts(p->out, s); }

static void line_start(printer *p, int indent) { mlc_str_indent(p->out, indent); }

static void line_end(printer *p) { mlc_str_putc(p->out, '\n'); }

/* ---- names ------------------------------------------------------------ */

/* Words that cannot name a var or buffer in the printed text: Python
 * keywords and the names the text itself relies on. */
static const char *const reserved_names[] = {
    "False", "None",  "True",   "and",   "as",     "assert", "async",    "await",
    "break", "class", "continue", "def", "del",    "elif",   "else",     "except",
    "finally", "for", "from",   "global", "if",    "import", "in",       "is",
    "lambda", "nonlocal", "not", "or",   "pass",   "raise",  "return",   "try",
    "while", "with",  "yield",  "T",     "I",      "range",
};

static bool is_identifier(const char *s) {
  if (!s || !*s) return false;
  if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return false;
  for (const char *c = s; *c; c++)
    if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          (*c >= '0' && *c <= '9')))
      return false;
  return true;
}

/* A raw name made into a Python identifier (bad characters become '_'). */
static const char *sanitize(printer *p, const char *raw) {
  if (is_identifier(raw)) return raw;
  if (!raw || !*raw) return "v";
  size_t n = strlen(raw);
  char *s = mlc_arena_alloc(p->scratch, n + 2);
  size_t k = 0;
  if (raw[0] >= '0' && raw[0] <= '9') s[k++] = '_';
  for (size_t i = 0; i < n; i++) {
    char c = raw[i];
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9');
    s[k++] = ok ? c : '_';
  }
  s[k] = 0;
  return s;
}

static bool name_taken(const printer *p, const char *name) {
  for (int i = 0; i < MLC_COUNTOF(reserved_names); i++)
    if (strcmp(name, reserved_names[i]) == 0) return true;
  for (int i = 0; i < p->names.len; i++)
    if (strcmp(p->names.data[i].name, name) == 0) return true;
  return false;
}

/* Define obj in the innermost suite; returns the name it prints as. */
static const char *define(printer *p, const void *obj, const char *raw) {
  const char *base = sanitize(p, raw);
  const char *name = base;
  for (int k = 1; name_taken(p, name); k++)
    name = mlc_arena_printf(p->scratch, "%s_%d", base, k);
  name_entry e = {obj, name};
  MLC_VEC_APUSH(p->in_arena, p->names, e);
  return name;
}

/* The printed name of a var or buffer: its visible definition, else (a
 * free var, or printing a fragment) its own name. */
static const char *lookup(printer *p, const void *obj, const char *raw) {
  for (int i = p->names.len - 1; i >= 0; i--)
    if (p->names.data[i].obj == obj) return p->names.data[i].name;
  return sanitize(p, raw);
}

static const char *var_name(printer *p, const mlc_var *v) { return lookup(p, v, v->name); }
static const char *buf_name(printer *p, const mlc_buffer *b) { return lookup(p, b, b->name); }

/* ---- literals --------------------------------------------------------- */

static void put_string(printer *p, const char *s) {
  mlc_str_putc(p->out, '"');
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    switch (*c) {
    case '"': put(p, "\\\""); break;
    case '\\': put(p, "\\\\"); break;
    case '\n': put(p, "\\n"); break;
    case '\t': put(p, "\\t"); break;
    case '\r': put(p, "\\r"); break;
    default:
      if (*c < 0x20 || *c == 0x7f) mlc_str_printf(p->out, "\\x%02x", *c);
      else mlc_str_putc(p->out, (char)*c);
    }
  }
  mlc_str_putc(p->out, '"');
}

/* Shortest text that reads back (through float32 to float16, or to
 * bfloat16) as the same 16-bit value. */
static void put_half(mlc_str *out, double v, uint16_t (*narrow)(float), float (*widen)(uint16_t)) {
  uint16_t h = narrow((float)v);
  double hv = (double)widen(h);
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, hv);
    if (narrow((float)strtod(buf, NULL)) == h) break;
  }
  /* The double nearest to that decimal prints back as the decimal, in the
   * same Python-repr style as float32 literals. */
  mlc_str_put_double(out, strtod(buf, NULL));
}

static void put_float_value(mlc_str *out, mlc_dtype t, double v) {
  if (isnan(v) || isinf(v)) {
    mlc_str_puts(out, isnan(v) ? "\"nan\"" : v < 0 ? "\"-inf\"" : "\"inf\"");
    return;
  }
  /* -0.0, not -0: read back, -0 is the integer 0 negated and loses the sign */
  if (v == 0 && signbit(v)) mlc_str_puts(out, "-0.0");
  else if (t == MLC_FLOAT16) put_half(out, v, mlc_float_to_half, mlc_half_to_float);
  else if (t == MLC_BFLOAT16) put_half(out, v, mlc_float_to_bf16, mlc_bf16_to_float);
  else mlc_str_put_float(out, (float)v);
}

static void put_int_literal(printer *p, mlc_dtype t, int64_t v) {
  if (t == MLC_INT32) {
    mlc_str_printf(p->out, "%lld", (long long)v);
  } else if (t == MLC_BOOL) {
    put(p, v ? "T.bool(True)" : "T.bool(False)");
  } else if (mlc_dtype_is_float(t)) {
    mlc_str_printf(p->out, "T.%s(", mlc_dtype_name(t));
    put_float_value(p->out, t, (double)v);
    put(p, ")");
  } else {
    mlc_str_printf(p->out, "T.%s(%lld)", mlc_dtype_name(t), (long long)v);
  }
}

static void put_anns(printer *p, int n, const mlc_ann *anns);

/* Annotation values print as Python literals; a float always shows a '.'
 * or an exponent so it reads back as a float. Lists and dicts nest as TVM
 * prints them: [[0, 0, 16, 8]], {"k": 1}. */
static void put_ann_value(printer *p, const mlc_ann *a) {
  switch (a->kind) {
  case MLC_ANN_INT: mlc_str_printf(p->out, "%lld", (long long)a->i); return;
  case MLC_ANN_BOOL: put(p, a->i ? "True" : "False"); return;
  case MLC_ANN_STRING: put_string(p, a->s); return;
  case MLC_ANN_FLOAT: {
    if (isnan(a->f) || isinf(a->f)) {
      put(p, isnan(a->f) ? "float(\"nan\")" : a->f < 0 ? "float(\"-inf\")" : "float(\"inf\")");
      return;
    }
    size_t start = p->out->len;
    mlc_str_put_double(p->out, a->f);
    if (!strpbrk(p->out->data + start, ".e")) put(p, ".0");
    return;
  }
  case MLC_ANN_LIST:
    put(p, "[");
    for (int i = 0; i < a->n; i++) {
      if (i) put(p, ", ");
      put_ann_value(p, &a->items[i]);
    }
    put(p, "]");
    return;
  case MLC_ANN_DICT: put_anns(p, a->n, a->items); return;
  }
  mlc_unreachable();
}

static void put_anns(printer *p, int n, const mlc_ann *anns) {
  put(p, "{");
  for (int i = 0; i < n; i++) {
    if (i) put(p, ", ");
    put_string(p, anns[i].key);
    put(p, ": ");
    put_ann_value(p, &anns[i]);
  }
  put(p, "}");
}

static void print_expr(printer *p, const mlc_expr *e);

static void put_shape(printer *p, const mlc_buffer *b) {
  put(p, "(");
  for (int i = 0; i < b->ndim; i++) {
    if (i) put(p, ", ");
    if (b->dims) print_expr(p, b->dims[i]);
    else mlc_str_printf(p->out, "%lld", (long long)b->shape[i]);
  }
  if (b->ndim == 1) put(p, ",");
  put(p, ")");
}

static bool is_global(const mlc_buffer *b) { return !b->scope || strcmp(b->scope, "global") == 0; }

/* ---- expressions ------------------------------------------------------ */

enum { PREC_NOT = 5, PREC_ATOM = 100 };

static int expr_prec(const mlc_expr *e) {
  if (e->kind == MLC_EXPR_NOT) return PREC_NOT;
  int prec = mlc_binop_precedence(e->kind);
  return prec ? prec : PREC_ATOM;
}


static void print_operand(printer *p, const mlc_expr *e, bool paren) {
  if (paren) put(p, "(");
  print_expr(p, e);
  if (paren) put(p, ")");
}

static void print_args(printer *p, int n, mlc_expr *const *args) {
  for (int i = 0; i < n; i++) {
    if (i) put(p, ", ");
    print_expr(p, args[i]);
  }
}

static void print_region(printer *p, const mlc_region *r);

static const char *access_mask(int access) {
  return access == MLC_ACCESS_READ ? "r" : access == MLC_ACCESS_WRITE ? "w" : "rw";
}

/* T.call_extern("int32", "f", T.access_ptr(C[0:16, 0:16], "w"), C.strides[0], x) */
static void print_extern(printer *p, const mlc_expr *e) {
  mlc_str_printf(p->out, "T.call_extern(\"%s\", \"%s\"", mlc_dtype_name(e->dtype), e->ext.name);
  for (int i = 0; i < e->ext.n_args; i++) {
    const mlc_xarg *x = &e->ext.args[i];
    put(p, ", ");
    switch (x->kind) {
    case MLC_XARG_VALUE: print_expr(p, e->ext.kids[x->kid]); break;
    case MLC_XARG_PTR: {
      mlc_region r = {x->buf, NULL};
      mlc_range rs[8];
      MLC_ASSERT(x->buf->ndim <= 8);
      for (int d = 0; d < x->buf->ndim; d++)
        rs[d] = (mlc_range){e->ext.kids[x->kid + d], e->ext.kids[x->kid + x->buf->ndim + d]};
      r.ranges = rs;
      put(p, "T.access_ptr(");
      print_region(p, &r);
      mlc_str_printf(p->out, ", \"%s\")", access_mask(x->access));
      break;
    }
    case MLC_XARG_STRIDE:
      mlc_str_printf(p->out, "%s.strides[%d]", buf_name(p, x->buf), x->dim);
      break;
    }
  }
  put(p, ")");
}

static void print_infix(printer *p, const mlc_expr *e) {
  int prec = expr_prec(e);
  bool cmp = mlc_expr_kind_is_compare(e->kind);
  /* Left-associative: a right operand of equal precedence keeps its
   * parentheses; comparisons never chain (a < b < c means something else). */
  const mlc_expr *l = e->bin.a, *r = e->bin.b;
  print_operand(p, l, expr_prec(l) < prec || (cmp && mlc_expr_kind_is_compare(l->kind)));
  mlc_str_printf(p->out, " %s ", mlc_binop_symbol(e->kind));
  print_operand(p, r, expr_prec(r) <= prec);
}

static void print_indices(printer *p, const mlc_buffer *b, mlc_expr *const *idx) {
  put(p, buf_name(p, b));
  put(p, "[");
  if (b->ndim == 0) put(p, "()");
  print_args(p, b->ndim, idx);
  put(p, "]");
}

static void print_expr(printer *p, const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: put_int_literal(p, e->dtype, e->int_val); return;
  case MLC_EXPR_FLOAT_IMM:
    mlc_str_printf(p->out, "T.%s(", mlc_dtype_name(e->dtype));
    put_float_value(p->out, e->dtype, e->float_val);
    put(p, ")");
    return;
  case MLC_EXPR_VAR: put(p, var_name(p, e->var)); return;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR: print_infix(p, e); return;
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
    put(p, e->kind == MLC_EXPR_MIN ? "T.min(" : "T.max(");
    print_expr(p, e->bin.a);
    put(p, ", ");
    print_expr(p, e->bin.b);
    put(p, ")");
    return;
  case MLC_EXPR_NOT:
    put(p, "not ");
    print_operand(p, e->bin.a, expr_prec(e->bin.a) < PREC_NOT);
    return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    put(p, e->kind == MLC_EXPR_SELECT ? "T.Select(" : "T.if_then_else(");
    print_expr(p, e->sel.cond);
    put(p, ", ");
    print_expr(p, e->sel.t);
    put(p, ", ");
    print_expr(p, e->sel.f);
    put(p, ")");
    return;
  case MLC_EXPR_LOAD: print_indices(p, e->load.buf, e->load.indices); return;
  case MLC_EXPR_CAST:
    mlc_str_printf(p->out, "T.Cast(\"%s\", ", mlc_dtype_name(e->dtype));
    print_expr(p, e->cast.value);
    put(p, ")");
    return;
  case MLC_EXPR_CALL:
    mlc_str_printf(p->out, "T.%s(", mlc_intrin_name(e->call.op));
    print_args(p, mlc_intrin_nargs(e->call.op), e->call.args);
    put(p, ")");
    return;
  case MLC_EXPR_CALL_EXTERN: print_extern(p, e); return;
  }
  mlc_unreachable();
}

static bool is_const(const mlc_expr *e, int64_t v) {
  int64_t x;
  return e && mlc_expr_is_const_int(e, &x) && x == v;
}

/* Print min + extent, the end of a range, folding constants as TVM's
 * simplifier would: 2 + 8 -> 10, (x + 2) + 8 -> x + 10, x + 8 stays. The
 * nodes built here live on the stack only for printing. */
static void print_end(printer *p, const mlc_expr *min, const mlc_expr *extent) {
  int64_t c, ext;
  mlc_expr lit = {.kind = MLC_EXPR_INT_IMM, .dtype = min->dtype};
  mlc_expr sum = {.kind = MLC_EXPR_ADD, .dtype = min->dtype};
  sum.bin.a = (mlc_expr *)min;
  sum.bin.b = (mlc_expr *)extent;
  if (!mlc_expr_is_const_int(extent, &ext) || extent->dtype != min->dtype) {
    print_expr(p, &sum);
    return;
  }
  if (mlc_expr_is_const_int(min, &c)) {
    lit.int_val = c + ext;
    print_expr(p, &lit);
    return;
  }
  const mlc_expr *base = min;
  int64_t k = ext;
  if ((min->kind == MLC_EXPR_ADD || min->kind == MLC_EXPR_SUB) &&
      mlc_expr_is_const_int(min->bin.b, &c) && min->bin.b->dtype == min->dtype) {
    base = min->bin.a;
    k = min->kind == MLC_EXPR_ADD ? c + ext : ext - c;
  }
  if (k == 0) {
    print_expr(p, base);
    return;
  }
  sum.kind = k > 0 ? MLC_EXPR_ADD : MLC_EXPR_SUB;
  sum.bin.a = (mlc_expr *)base;
  sum.bin.b = &lit;
  lit.int_val = k > 0 ? k : -k;
  print_expr(p, &sum);
}

static void print_region(printer *p, const mlc_region *r) {
  put(p, buf_name(p, r->buf));
  put(p, "[");
  if (r->buf->ndim == 0) put(p, "()");
  for (int i = 0; i < r->buf->ndim; i++) {
    const mlc_range *rg = &r->ranges[i];
    if (i) put(p, ", ");
    print_expr(p, rg->min);
    if (!is_const(rg->extent, 1)) {
      put(p, ":");
      print_end(p, rg->min, rg->extent);
    }
  }
  put(p, "]");
}

/* ---- statements ------------------------------------------------------- */

static void print_stmt(printer *p, const mlc_stmt *s, int indent);

/* A suite: an indented body whose definitions end with it. */
static void print_suite(printer *p, const mlc_stmt *s, int indent) {
  int mark = p->names.len;
  if (s) print_stmt(p, s, indent);
  else {
    line_start(p, indent);
    put(p, "T.evaluate(0)");
    line_end(p);
  }
  p->names.len = mark;
}

static bool expr_uses_any(const mlc_expr *e, int n, const mlc_stmt *const *loops) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM: return false;
  case MLC_EXPR_VAR:
    for (int i = 0; i < n; i++)
      if (loops[i]->loop.var == e->var) return true;
    return false;
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
  case MLC_EXPR_OR: return expr_uses_any(e->bin.a, n, loops) || expr_uses_any(e->bin.b, n, loops);
  case MLC_EXPR_NOT: return expr_uses_any(e->bin.a, n, loops);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return expr_uses_any(e->sel.cond, n, loops) || expr_uses_any(e->sel.t, n, loops) ||
           expr_uses_any(e->sel.f, n, loops);
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++)
      if (expr_uses_any(e->load.indices[i], n, loops)) return true;
    return false;
  case MLC_EXPR_CAST: return expr_uses_any(e->cast.value, n, loops);
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      if (expr_uses_any(e->call.args[i], n, loops)) return true;
    return false;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++)
      if (expr_uses_any(e->ext.kids[i], n, loops)) return true;
    return false;
  }
  mlc_unreachable();
}

/* A loop T.grid can express: serial from 0 without annotations. */
static bool is_plain_loop(const mlc_stmt *s) {
  return s->kind == MLC_STMT_FOR && s->loop.kind == MLC_FOR_SERIAL && s->loop.n_anns == 0 &&
         is_const(s->loop.min, 0);
}

enum { MAX_GRID = 64 };

/* The loops printed as one `for` line: s, then while each is the whole
 * body of the previous and plain, and its extent does not use the vars
 * before it (T.grid evaluates all extents first). */
static int grid_chain(const mlc_stmt *s, const mlc_stmt **chain) {
  int n = 0;
  chain[n++] = s;
  if (!is_plain_loop(s)) return n;
  for (const mlc_stmt *b = s->loop.body; b && is_plain_loop(b) && n < MAX_GRID; b = b->loop.body) {
    if (expr_uses_any(b->loop.extent, n, chain)) break;
    chain[n++] = b;
  }
  return n;
}

/* `range(10)`, `T.parallel(2, 10)`, `T.thread_binding(8, thread="x")`, ... */
static void print_loop_iter(printer *p, const mlc_stmt *s) {
  bool plain_serial = s->loop.kind == MLC_FOR_SERIAL && s->loop.n_anns == 0;
  if (plain_serial) put(p, "range(");
  else mlc_str_printf(p->out, "T.%s(", mlc_for_kind_name(s->loop.kind));
  if (is_const(s->loop.min, 0)) {
    print_expr(p, s->loop.extent);
  } else {
    print_expr(p, s->loop.min);
    put(p, ", ");
    print_end(p, s->loop.min, s->loop.extent);
  }
  if (s->loop.kind == MLC_FOR_THREAD_BINDING) {
    put(p, ", thread=");
    put_string(p, s->loop.thread);
  }
  if (s->loop.n_anns) {
    put(p, ", annotations=");
    put_anns(p, s->loop.n_anns, s->loop.anns);
  }
  put(p, ")");
}

static void print_for(printer *p, const mlc_stmt *s, int indent) {
  const mlc_stmt *chain[MAX_GRID];
  int n = grid_chain(s, chain);
  int mark = p->names.len, loop_mark = p->loops.len;
  line_start(p, indent);
  put(p, "for ");
  for (int i = 0; i < n; i++) {
    if (i) put(p, ", ");
    put(p, define(p, chain[i]->loop.var, chain[i]->loop.var->name));
    loop_entry le = {chain[i]->loop.var, chain[i]->loop.min, chain[i]->loop.extent};
    MLC_VEC_APUSH(p->in_arena, p->loops, le);
  }
  put(p, " in ");
  if (n == 1) {
    print_loop_iter(p, s);
  } else {
    put(p, "T.grid(");
    for (int i = 0; i < n; i++) {
      if (i) put(p, ", ");
      print_expr(p, chain[i]->loop.extent);
    }
    put(p, ")");
  }
  put(p, ":");
  line_end(p);
  print_suite(p, chain[n - 1]->loop.body, indent + 4);
  p->names.len = mark;
  p->loops.len = loop_mark;
}

static const loop_entry *find_loop(const printer *p, const mlc_var *v) {
  for (int i = p->loops.len - 1; i >= 0; i--)
    if (p->loops.data[i].var == v) return &p->loops.data[i];
  return NULL;
}

/* The same constant, or the same expression of vars written the same way
 * (a symbolic extent such as n + 1). */
static bool same_extent(const mlc_expr *a, const mlc_expr *b) {
  int64_t x, y;
  if (mlc_expr_is_const_int(a, &x) && mlc_expr_is_const_int(b, &y)) return x == y;
  if (a->kind != b->kind || a->dtype != b->dtype) return false;
  if (a->kind == MLC_EXPR_VAR) return a->var == b->var;
  return mlc_expr_kind_is_binary(a->kind) && same_extent(a->bin.a, b->bin.a) &&
         same_extent(a->bin.b, b->bin.b);
}

/* T.axis.remap applies when every value is a distinct enclosing loop var
 * whose range [0, extent) is exactly the iter var's domain. */
static bool can_remap(const printer *p, const mlc_stmt *s) {
  const mlc_block *blk = s->realize.block;
  for (int i = 0; i < blk->n_iters; i++) {
    const mlc_expr *v = s->realize.values[i];
    if (v->kind != MLC_EXPR_VAR) return false;
    for (int j = 0; j < i; j++)
      if (s->realize.values[j]->var == v->var) return false;
    const loop_entry *le = find_loop(p, v->var);
    const mlc_range *dom = &blk->iters[i].dom;
    if (!le || !is_const(le->min, 0) || !is_const(dom->min, 0) ||
        !(le->extent == dom->extent || same_extent(le->extent, dom->extent)))
      return false;
  }
  return blk->n_iters > 0;
}

static void print_bindings(printer *p, const mlc_stmt *s, int indent) {
  const mlc_block *blk = s->realize.block;
  if (blk->n_iters == 0) return;
  if (can_remap(p, s)) {
    /* Values are printed after the iter vars are defined; lookups are by
     * pointer, so a loop var still prints under its own name. */
    line_start(p, indent);
    for (int i = 0; i < blk->n_iters; i++) {
      if (i) put(p, ", ");
      put(p, define(p, blk->iters[i].var, blk->iters[i].var->name));
    }
    put(p, " = T.axis.remap(\"");
    for (int i = 0; i < blk->n_iters; i++)
      mlc_str_putc(p->out, blk->iters[i].kind == MLC_ITER_SPATIAL ? 'S' : 'R');
    put(p, "\", [");
    print_args(p, blk->n_iters, s->realize.values);
    put(p, "])");
    line_end(p);
    return;
  }
  for (int i = 0; i < blk->n_iters; i++) {
    const mlc_iter_var *iv = &blk->iters[i];
    line_start(p, indent);
    put(p, define(p, iv->var, iv->var->name));
    put(p, iv->kind == MLC_ITER_SPATIAL ? " = T.axis.spatial(" : " = T.axis.reduce(");
    if (is_const(iv->dom.min, 0)) {
      print_expr(p, iv->dom.extent);
    } else {
      put(p, "(");
      print_expr(p, iv->dom.min);
      put(p, ", ");
      print_end(p, iv->dom.min, iv->dom.extent);
      put(p, ")");
    }
    put(p, ", ");
    print_expr(p, s->realize.values[i]);
    put(p, ")");
    line_end(p);
  }
}

static void print_regions(printer *p, const char *what, int n, const mlc_region *rs, int indent) {
  line_start(p, indent);
  put(p, what);
  put(p, "(");
  for (int i = 0; i < n; i++) {
    if (i) put(p, ", ");
    print_region(p, &rs[i]);
  }
  put(p, ")");
  line_end(p);
}

/* `X = T.alloc_buffer((128,), "int32", scope="shared")`: dtype and scope
 * only where they differ from float32 and global, as TVM prints them. */
static void print_alloc_buffer(printer *p, const mlc_buffer *b, int indent) {
  line_start(p, indent);
  put(p, define(p, b, b->name));
  put(p, " = T.alloc_buffer(");
  put_shape(p, b);
  if (b->dtype != MLC_FLOAT32) mlc_str_printf(p->out, ", \"%s\"", mlc_dtype_name(b->dtype));
  if (!is_global(b)) {
    put(p, ", scope=");
    put_string(p, b->scope);
  }
  put(p, ")");
  line_end(p);
}

static bool is_true(const mlc_expr *e) { return e->kind == MLC_EXPR_INT_IMM && e->int_val == 1; }

static void print_realize(printer *p, const mlc_stmt *s, int indent) {
  const mlc_block *blk = s->realize.block;
  int mark = p->names.len;
  int in = indent + 4;
  line_start(p, indent);
  put(p, "with T.block(");
  put_string(p, blk->name);
  put(p, "):");
  line_end(p);
  print_bindings(p, s, in);
  if (s->realize.predicate && !is_true(s->realize.predicate)) {
    line_start(p, in);
    put(p, "T.where(");
    print_expr(p, s->realize.predicate);
    put(p, ")");
    line_end(p);
  }
  print_regions(p, "T.reads", blk->n_reads, blk->reads, in);
  print_regions(p, "T.writes", blk->n_writes, blk->writes, in);
  if (blk->n_anns) {
    line_start(p, in);
    put(p, "T.block_attr(");
    put_anns(p, blk->n_anns, blk->anns);
    put(p, ")");
    line_end(p);
  }
  for (int i = 0; i < blk->n_allocs; i++) print_alloc_buffer(p, blk->allocs[i], in);
  if (blk->init) {
    line_start(p, in);
    put(p, "with T.init():");
    line_end(p);
    print_suite(p, blk->init, in + 4);
  }
  if (blk->body) print_stmt(p, blk->body, in);
  else if (!blk->init) print_suite(p, NULL, in);
  p->names.len = mark;
}

static void print_stmt(printer *p, const mlc_stmt *s, int indent) {
  switch (s->kind) {
  case MLC_STMT_FOR: print_for(p, s, indent); return;
  case MLC_STMT_BLOCK_REALIZE: print_realize(p, s, indent); return;
  case MLC_STMT_SEQ:
    if (s->seq.n == 0) print_suite(p, NULL, indent);
    for (int i = 0; i < s->seq.n; i++) print_stmt(p, s->seq.stmts[i], indent);
    return;
  case MLC_STMT_STORE:
    line_start(p, indent);
    print_indices(p, s->store.buf, s->store.indices);
    put(p, " = ");
    print_expr(p, s->store.value);
    line_end(p);
    return;
  case MLC_STMT_IF:
    line_start(p, indent);
    put(p, "if ");
    print_expr(p, s->if_.cond);
    put(p, ":");
    line_end(p);
    print_suite(p, s->if_.then_s, indent + 4);
    if (s->if_.else_s) {
      line_start(p, indent);
      put(p, "else:");
      line_end(p);
      print_suite(p, s->if_.else_s, indent + 4);
    }
    return;
  case MLC_STMT_ALLOCATE: {
    /* The body follows at the same indentation, so the buffer stays
     * defined to the end of the enclosing suite, as the text reads. */
    const mlc_buffer *b = s->alloc.buf;
    line_start(p, indent);
    put(p, define(p, b, b->name));
    put(p, " = T.decl_buffer(");
    put_shape(p, b);
    mlc_str_printf(p->out, ", \"%s\"", mlc_dtype_name(b->dtype));
    if (!is_global(b)) {
      put(p, ", scope=");
      put_string(p, b->scope);
    }
    put(p, ")");
    line_end(p);
    if (s->alloc.body) print_stmt(p, s->alloc.body, indent);
    return;
  }
  case MLC_STMT_EVALUATE:
    line_start(p, indent);
    put(p, "T.evaluate(");
    print_expr(p, s->eval.value);
    put(p, ")");
    line_end(p);
    return;
  }
  mlc_unreachable();
}

/* ---- functions and modules -------------------------------------------- */

/* A root block with nothing but alloc_buffers and a body prints as TVM's
 * comment `# with T.block("root"):` followed by its alloc_buffers and body
 * at function level. One with annotations (or regions) prints as an
 * explicit `with T.block("root"):` block, as TVM prints it. */
static bool is_implicit_root(const mlc_stmt *s) {
  if (!s || s->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = s->realize.block;
  return b->n_iters == 0 && (!s->realize.predicate || is_true(s->realize.predicate)) && !b->init &&
         b->n_anns == 0 && b->n_reads == 0 && b->n_writes == 0;
}

/* `n = T.int64(max=2048)`: bounds where they differ from the defaults. */
static void print_size_var(printer *p, const mlc_size_var *sv, int indent) {
  int64_t lo, hi;
  mlc_size_default_bounds(sv->var->dtype, &lo, &hi);
  line_start(p, indent);
  mlc_str_printf(p->out, "%s = T.%s(", define(p, sv->var, sv->var->name),
                 mlc_dtype_name(sv->var->dtype));
  if (sv->lo != lo) mlc_str_printf(p->out, "min=%lld", (long long)sv->lo);
  if (sv->hi != hi) mlc_str_printf(p->out, "%smax=%lld", sv->lo != lo ? ", " : "", (long long)sv->hi);
  put(p, ")");
  line_end(p);
}

static void put_buffer_type(printer *p, const mlc_buffer *b) {
  put_shape(p, b);
  mlc_str_printf(p->out, ", \"%s\"", mlc_dtype_name(b->dtype));
  if (!is_global(b)) {
    put(p, ", scope=");
    put_string(p, b->scope);
  }
}

/* A parameter with symbolic extents is a handle matched once the size
 * vars are declared, as TVM prints it. */
static void print_match_buffers(printer *p, const mlc_prim_func *f, int indent) {
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    if (!b->dims) continue;
    line_start(p, indent);
    const char *handle = lookup(p, &b->dims, b->name);
    mlc_str_printf(p->out, "%s = T.match_buffer(%s, ", define(p, b, b->name), handle);
    put_buffer_type(p, b);
    put(p, ")");
    line_end(p);
  }
}

static void print_func_at(printer *p, const mlc_prim_func *f, int indent) {
  int in = indent + 4;
  p->names.len = 0;
  p->loops.len = 0;
  line_start(p, indent);
  put(p, "@T.prim_func");
  line_end(p);
  line_start(p, indent);
  mlc_str_printf(p->out, "def %s(", f->name);
  for (int i = 0; i < f->n_params; i++) {
    const mlc_buffer *b = f->params[i];
    if (i) put(p, ", ");
    if (b->dims) {
      put(p, define(p, &b->dims, mlc_arena_printf(p->scratch, "var_%s", b->name)));
      put(p, ": T.handle");
      continue;
    }
    put(p, define(p, b, b->name));
    put(p, ": T.Buffer(");
    put_buffer_type(p, b);
    put(p, ")");
  }
  put(p, "):");
  line_end(p);
  if (f->n_attrs) {
    line_start(p, in);
    put(p, "T.func_attr(");
    put_anns(p, f->n_attrs, f->attrs);
    put(p, ")");
    line_end(p);
  }
  for (int k = 0; k < f->n_sizes; k++) print_size_var(p, &f->sizes[k], in);
  print_match_buffers(p, f, in);
  if (is_implicit_root(f->body)) {
    const mlc_block *root = f->body->realize.block;
    line_start(p, in);
    put(p, "# with T.block(\"root\"):");
    line_end(p);
    for (int i = 0; i < root->n_allocs; i++) print_alloc_buffer(p, root->allocs[i], in);
    print_suite(p, root->body, in);
  } else {
    print_suite(p, f->body, in);
  }
  p->names.len = 0;
}

void mlc_print_module(mlc_str *out, const mlc_module *m) {
  printer p;
  printer_init(&p, out);
  if (!m->name) {
    put(&p, "# from tvm.script import tir as T\n\n");
    for (int i = 0; i < m->n_funcs; i++) {
      if (i) line_end(&p);
      print_func_at(&p, m->funcs[i], 0);
    }
  } else {
    put(&p, "# from tvm.script import ir as I\n# from tvm.script import tir as T\n\n");
    put(&p, "@I.ir_module\n");
    mlc_str_printf(out, "class %s:\n", m->name);
    for (int i = 0; i < m->n_funcs; i++) {
      if (i) line_end(&p);
      print_func_at(&p, m->funcs[i], 4);
    }
  }
  printer_done(&p);
}

void mlc_print_func(mlc_str *out, const mlc_prim_func *f) {
  mlc_module m = {.name = NULL, .n_funcs = 1, .funcs = (mlc_prim_func **)&f};
  mlc_print_module(out, &m);
}

void mlc_print_expr(mlc_str *out, const mlc_expr *e) {
  printer p;
  printer_init(&p, out);
  print_expr(&p, e);
  printer_done(&p);
}

/* `indent` counts spaces. */
void mlc_print_stmt(mlc_str *out, const mlc_stmt *s, int indent) {
  printer p;
  printer_init(&p, out);
  print_suite(&p, s, indent);
  printer_done(&p);
}
