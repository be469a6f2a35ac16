/* Private to the TVMScript parser: lex.c (tokens, error messages),
 * parse_expr.c (expression syntax and lowering to mlc_expr) and parse.c
 * (statements, blocks, functions, modules).
 *
 * The parser reads in two layers. Expressions are first parsed into a small
 * Python-like syntax tree (pnode) so that calls with keyword arguments,
 * tuples, dicts and slices can be checked against what each T.* function
 * accepts; they are then lowered to IR in the current scope. Statements go
 * to IR directly.
 *
 * Errors longjmp to the parser's jump point after writing the message into
 * the caller's mlc_error; an arena allocation failure jumps there too. All
 * memory the parser uses lives in the caller's arena, so a jump leaks
 * nothing.
 */
#ifndef MLC_PARSE_INTERNAL_H
#define MLC_PARSE_INTERNAL_H

#include "ir/ir.h"

#include <string.h>

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

enum {
  PARSE_MAX_NEST = 256,        /* nested suites, parentheses, unary ops */
  PARSE_MAX_EXPR_DEPTH = 1000, /* depth of one expression tree */
  PARSE_MAX_NDIM = 8,          /* buffer dimensions (mlc_array holds 8) */
};

/* ---- tokens (lex.c) ---------------------------------------------------- */

typedef enum tk_kind {
  TK_NAME,    /* identifiers and keywords alike */
  TK_INT,
  TK_FLOAT,
  TK_STR,
  TK_OP,
  TK_NEWLINE, /* end of a logical line */
  TK_INDENT,
  TK_DEDENT,
  TK_EOF,
  TK_ERROR,   /* a lexical error; str holds the message. Always last. */
} tk_kind;

typedef struct ptok {
  tk_kind kind;
  int line, col;   /* 1-based; col counts bytes */
  const char *src; /* token text in the source */
  int len;         /* bytes of token text */
  const char *str; /* NAME text, decoded STR value, OP text, ERROR message */
  int64_t ival;    /* INT */
  double fval;     /* FLOAT */
} ptok;

/* ---- syntax tree of expressions (parse_expr.c) -------------------------- */

typedef enum pn_kind {
  PN_NAME,
  PN_INT,
  PN_FLOAT,
  PN_STR,
  PN_BOOL,   /* True / False; value in i */
  PN_NONE,
  PN_ATTR,   /* x.s */
  PN_CALL,   /* x(items...), kws[i] names keyword arguments */
  PN_INDEX,  /* x[items...] */
  PN_TUPLE,
  PN_LIST,
  PN_DICT,   /* keys[i]: items[i] */
  PN_BINARY, /* x op y; op is an mlc_expr_kind (ADD..OR) */
  PN_NEG,    /* -x */
  PN_NOT,    /* not x */
  PN_SLICE,  /* x:y inside a subscript; either may be NULL */
} pn_kind;

typedef struct pnode pnode;
struct pnode {
  pn_kind kind;
  const ptok *t; /* where errors about this node point */
  int depth;     /* height of the tree below, bounded by PARSE_MAX_EXPR_DEPTH */
  const char *s; /* NAME, ATTR member, STR value */
  int64_t i;     /* INT, BOOL */
  double f;      /* FLOAT */
  mlc_expr_kind op;
  pnode *x, *y;
  int n;
  pnode **items;
  const char **kws; /* CALL: keyword per argument, NULL when positional */
  pnode **keys;     /* DICT */
};

/* ---- parser state -------------------------------------------------------- */

typedef enum psym_kind { SYM_VAR, SYM_BUF, SYM_HANDLE } psym_kind;

/* A name visible in the current scope. */
typedef struct psym {
  const char *name;
  psym_kind kind;
  mlc_var *var;    /* VAR */
  mlc_buffer *buf; /* BUF */
  bool is_loop;    /* VAR bound by an enclosing for: remap reads its range */
  bool is_size;    /* VAR declared as a size of the function */
  mlc_expr *loop_min, *loop_extent;
  int param;       /* HANDLE: index among the function's parameters */
} psym;

typedef struct pfunc pfunc; /* parse.c: the function being parsed */

typedef struct mlc_parser {
  mlc_arena *a;
  const char *file;
  const char *text;
  mlc_error *err;
  jmp_buf jb;
  bool failed; /* set before an error jump; a jump without it is out of memory */
  ptok *toks;
  int ntoks;
  int pos;
  int nest; /* current nesting (PARSE_MAX_NEST) */
  MLC_VEC(psym) syms;
  pfunc *fn;
  MLC_VEC(mlc_size_var) sizes; /* the function's size vars so far */
  MLC_VEC(const ptok *) size_toks;
} mlc_parser;

/* lex.c */
void mlc_lex_tokens(mlc_parser *p);
_Noreturn void mlc_parse_fail(mlc_parser *p, const ptok *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "expected <what>, got <t>" */
_Noreturn void mlc_parse_expected(mlc_parser *p, const ptok *t, const char *what);
/* Short description of a token for messages: 'x', end of line, ... */
void mlc_parse_tok_desc(const ptok *t, char *buf, size_t n);

/* parse_expr.c */
pnode *mlc_parse_pexpr(mlc_parser *p);     /* one expression */
pnode *mlc_parse_ptestlist(mlc_parser *p); /* a, b, c -> TUPLE */
mlc_expr *mlc_parse_lower(mlc_parser *p, pnode *n);
mlc_expr *mlc_parse_lower_int(mlc_parser *p, pnode *n, const char *what);
mlc_expr *mlc_parse_lower_bool(mlc_parser *p, pnode *n, const char *what);
/* Convert a literal to dtype t if it is one (errors if it does not fit);
 * false when e is not a literal that can take t. */
bool mlc_parse_lit_convert(mlc_parser *p, const ptok *t, mlc_expr **e, mlc_dtype to);
/* Give x and y one dtype (literals adopt the other side's) or fail naming
 * both dtypes. */
void mlc_parse_unify(mlc_parser *p, const ptok *t, const char *what, mlc_expr **x,
                     mlc_expr **y);
mlc_expr *mlc_parse_sub(mlc_parser *p, const ptok *t, mlc_expr *hi, mlc_expr *lo);
/* "T.axis.spatial" for a chain of names, else NULL. */
const char *mlc_parse_dotted(mlc_parser *p, const pnode *n);
/* Match a call's arguments against names[0..nnames): the first npos may be
 * positional, the first nreq are required. out[i] is NULL when absent. */
void mlc_parse_args(mlc_parser *p, const pnode *call, const char *fname, int nnames,
                    const char *const *names, int npos, int nreq, pnode **out);
mlc_dtype mlc_parse_dtype(mlc_parser *p, const pnode *n);
const char *mlc_parse_string(mlc_parser *p, const pnode *n, const char *what);
/* Shape (a tuple, list or single int) into an arena array; returns ndim.
 * Extents are constants or expressions of the function's size vars: then
 * *dims gets them all and shape their upper bounds, else *dims is NULL. */
int mlc_parse_shape(mlc_parser *p, pnode *n, int64_t **shape, mlc_expr ***dims);
const char *mlc_parse_scope(mlc_parser *p, const pnode *n);
/* A dict of annotations appended to *anns / *n (duplicate keys fail). */
void mlc_parse_anns(mlc_parser *p, const pnode *dict, int *n, mlc_ann **anns);
/* Region A[i, j:k, :] with buffer ndim ranges. */
mlc_region mlc_parse_region(mlc_parser *p, pnode *n);
mlc_buffer *mlc_parse_buffer_ref(mlc_parser *p, const pnode *name);
/* The indices of A[i, j] (count checked, no slices); *buf = A. */
mlc_expr **mlc_parse_indices(mlc_parser *p, pnode *n, mlc_buffer **buf);

/* Scope: parse.c pushes, everyone looks up. */
psym *mlc_parse_lookup(mlc_parser *p, const char *name);
psym *mlc_parse_define(mlc_parser *p, const char *name, psym_kind kind);

/* ---- token helpers ------------------------------------------------------- */

/* Looking at a lexical error token reports it: that is where the parser
 * reaches the bad text. */
static inline const ptok *peek_at(mlc_parser *p, int k) {
  int i = p->pos + k;
  if (i >= p->ntoks) i = p->ntoks - 1;
  const ptok *t = &p->toks[i];
  if (t->kind == TK_ERROR) mlc_parse_fail(p, t, "%s", t->str);
  return t;
}
static inline const ptok *peek(mlc_parser *p) { return peek_at(p, 0); }
static inline const ptok *next_tok(mlc_parser *p) {
  const ptok *t = peek(p);
  if (t->kind != TK_EOF) p->pos++;
  return t;
}
static inline bool tok_is_op(const ptok *t, const char *op) {
  return t->kind == TK_OP && strcmp(t->str, op) == 0;
}
static inline bool tok_is_name(const ptok *t, const char *s) {
  return t->kind == TK_NAME && strcmp(t->str, s) == 0;
}
static inline bool accept_op(mlc_parser *p, const char *op) {
  if (!tok_is_op(peek(p), op)) return false;
  p->pos++;
  return true;
}
static inline const ptok *expect_op(mlc_parser *p, const char *op, const char *what) {
  const ptok *t = peek(p);
  if (!tok_is_op(t, op)) mlc_parse_expected(p, t, what);
  p->pos++;
  return t;
}
static inline void expect_eol(mlc_parser *p) {
  const ptok *t = peek(p);
  if (t->kind != TK_NEWLINE) mlc_parse_expected(p, t, "end of line");
  p->pos++;
}
static inline void nest_enter(mlc_parser *p, const ptok *t) {
  if (++p->nest > PARSE_MAX_NEST)
    mlc_parse_fail(p, t, "nesting deeper than %d levels", PARSE_MAX_NEST);
}
static inline void nest_leave(mlc_parser *p) { p->nest--; }


#pragma GCC visibility pop
#endif
