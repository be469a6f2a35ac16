/* Private to ir/: the affine linear forms behind the simplifier, shared with
 * region analysis.
 *
 * A linear form is sum(coeff_i * atom_i) + c over int64 coefficients, where
 * an atom is a var or a non-affine subterm (floordiv, min, load, a product
 * of two non-constant factors, ...). Terms keep the order in which their
 * atoms first appeared; a term whose coefficient cancels to 0 stays in place
 * (so a later reappearance keeps its first position) and is skipped when the
 * form is rebuilt. Any int64 overflow sets `bad`, and the caller then leaves
 * the expression as it was.
 *
 *   arith_lin L;
 *   arith_lin_init(&L);
 *   arith_lin_add(s, &L, e, 1);           // atoms taken as they are
 *   if (!L.bad) e2 = arith_lin_build(a, &L, e->dtype);
 *
 * A form holds a pointer into itself (small inline storage): never copy an
 * arith_lin by value; build a new one with arith_lin_add_term instead.
 */
#ifndef MLC_IR_ARITH_INTERNAL_H
#define MLC_IR_ARITH_INTERNAL_H

#include "ir/ir.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

typedef struct arith_term {
  mlc_expr *atom;
  int64_t coeff; /* 0 when cancelled; skipped by build and bounds */
} arith_term;

typedef struct arith_lin {
  arith_term *t; /* inline_t until it grows; then arena memory */
  int n, cap;
  int64_t c;
  bool bad; /* an int64 overflow happened: the form means nothing */
  arith_term inline_t[8];
} arith_lin;

void arith_lin_init(arith_lin *L);
/* L += mult * e. Non-affine subterms of e become atoms unchanged (e is
 * expected to be simplified already). Requires e of an integer dtype. */
void arith_lin_add(mlc_simplifier *s, arith_lin *L, mlc_expr *e, int64_t mult);
/* L (empty) := the linear form of mlc_simplify(s, e), without building
 * it: what arith_lin_add of the simplified expression gives. False when e
 * is not an integer or its simplified form does not read back so (an
 * overflow): mlc_simplify then. */
bool arith_lin_simplified(mlc_simplifier *s, arith_lin *L, mlc_expr *e);
/* L += coeff * atom, combining with a structurally equal atom. */
void arith_lin_add_term(mlc_simplifier *s, arith_lin *L, mlc_expr *atom, int64_t coeff);
/* Number of terms with a non-zero coefficient. */
int arith_lin_nterms(const arith_lin *L);
/* The canonical expression of L in dtype t: terms in order, coefficient 1
 * as the plain atom, negative coefficients as subtraction, constant last.
 * NULL if a coefficient does not fit t (or L is bad). */
mlc_expr *arith_lin_build(mlc_arena *a, const arith_lin *L, mlc_dtype t);
/* Interval of L given the simplifier's var ranges. */
bool arith_lin_bounds(mlc_simplifier *s, const arith_lin *L, int64_t *lo, int64_t *hi);

/* Structural equality of expressions: vars and buffers by pointer, float
 * literals by bits. */
bool arith_expr_equal(const mlc_expr *x, const mlc_expr *y);
/* Whether e refers to a var that has a range in s. */
bool arith_uses_bound_var(const mlc_simplifier *s, const mlc_expr *e);

/* Exact int64 helpers: false on overflow or division by zero. */
bool arith_floordiv(int64_t x, int64_t y, int64_t *r);
bool arith_floormod(int64_t x, int64_t y, int64_t *r);


#pragma GCC visibility pop
#endif
