/* Reference interpreter: runs a prim_func on arrays, exactly and
 * deterministically.
 *
 * Two stages. Compile turns the IR into a tree of small nodes that each
 * carry a pointer to the C function that executes them, with every var
 * resolved to an integer slot and every buffer to an index into a table of
 * base pointers, so running does no name lookups and no allocation. Run then
 * calls the root node. Errors at run time (an out-of-bounds access, an
 * integer division by zero) longjmp out of the tree with a message.
 *
 * Speed matters (tests interpret matmuls and convolutions many times, also
 * under sanitizers), so the compiler tracks the range of each loop var and
 * turns accesses it proves in bounds into one unchecked affine offset; all
 * other accesses are checked. Common shapes get their own kernels (plain
 * var indices, the float32 multiply-accumulate update).
 *
 * Values: integers and bools are int64_t, wrapped to their dtype after each
 * operation (computed in uint64_t, so overflow is never C UB); float32,
 * float16 and bfloat16 are float, with float16 and bfloat16 results rounded
 * to their type after each operation, as a machine computing in float32
 * would.
 *
 * Every loop kind runs serially in order. That serializes thread-bound
 * loops too, including a loop bound to a thread axis inside another bound
 * to the same axis (cooperative fetching): both iterate normally, which is
 * correct as long as the program has no barriers.
 */
#include "ir/ir.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Results must be the float32 operations as written: no fused
 * multiply-adds (GCC contracts across statements in GNU C modes). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef struct ctx ctx;
typedef struct enode enode;
typedef struct snode snode;

typedef int64_t (*ifn)(const enode *, ctx *);
typedef float (*ffn)(const enode *, ctx *);
typedef void (*sfn)(const snode *, ctx *);

enum { MAX_TERMS = 8 }; /* vars in one affine form */

/* One dimension of a buffer access. The index is either an affine form of
 * at most two vars, c0 + k0 * slots[s0] + k1 * slots[s1] (slot 0 always
 * holds 0, so fewer vars need no branch), wrapped to int32 when the index
 * expression is int32 (which equals wrapping after each operation), or a
 * general expression. */
typedef struct dim {
  const enode *e; /* non-NULL: a general expression */
  int s0, s1;
  int64_t k0, k1, c0;
  bool wrap32;
  int64_t extent, stride;
} dim;

/* A buffer access. When the compiler proves every index in bounds (see
 * "ranges" below), the flat offset is one affine form over var slots,
 * c0 + sum tcoef[t] * slots[tslot[t]], evaluated without checks. */
typedef struct access {
  int buf; /* index into ctx.bufs */
  int ndim;
  const dim *dims;
  const mlc_buffer *b; /* for messages */
  const char *block;   /* enclosing block, for messages */
  bool proven;
  int nterm;
  int tslot[MAX_TERMS];
  int64_t tcoef[MAX_TERMS], c0;
} access;

/* An expression node; which fields are used depends on fn. Integer and
 * bool nodes use fn.i, float nodes fn.f: `dtype` says which. */
struct enode {
  union {
    ifn i;
    ffn f;
  } fn;
  mlc_dtype dtype;
  const enode *a, *b, *c;
  int64_t imm;
  float fimm;
  int slot;
  access acc;
  const char *what;  /* operation name, for messages */
  const char *block; /* enclosing block, for messages */
  const struct xcall *x; /* CALL_EXTERN */
};

/* One argument of a T.call_extern as compiled. */
typedef struct xcarg {
  mlc_xarg_kind kind;
  const enode *value;  /* VALUE */
  access first, last;  /* PTR: the region's first and last points */
  int64_t stride;      /* STRIDE */
} xcarg;

typedef struct xcall {
  const char *name;
  mlc_extern_fn fn;
  void *ud;
  int n;
  xcarg *args;
  mlc_extern_val *vals; /* scratch for one call (the interpreter is serial) */
} xcall;

/* A statement node. */
struct snode {
  sfn fn;
  const enode *a, *b; /* FOR: min, extent; STORE: value; IF, EVALUATE: a */
  const snode *body;  /* FOR, ALLOCATE, realize; IF: then */
  const snode *other; /* IF: else (may be NULL); realize: init (may be NULL) */
  int slot;           /* FOR: loop var */
  int n;              /* SEQ: kids; realize: bindings */
  const snode **kids;
  access acc; /* STORE */
  /* realize */
  const int *bind_slot;
  const enode **bind_val;
  const enode *pred;
  int n_red; /* reduce iter vars: init runs when each equals its min */
  const int *red_slot;
  const enode **red_min;
  const int64_t *red_min_c; /* the same as constants, when all are; else NULL */
};

struct ctx {
  int64_t *slots;
  char **bufs;
  mlc_error *err;
  jmp_buf jb;
};

#define EI(x) ((x)->fn.i((x), c))
#define EF(x) ((x)->fn.f((x), c))

/* ---- wrapping ------------------------------------------------------------ */

static inline int64_t wrap_i8(uint64_t v) { return (int8_t)(uint8_t)v; }
static inline int64_t wrap_u8(uint64_t v) { return (uint8_t)v; }
static inline int64_t wrap_i32(uint64_t v) { return (int32_t)(uint32_t)v; }
static inline int64_t wrap_i64(uint64_t v) { return (int64_t)v; }
static inline int64_t wrap_b(uint64_t v) { return (int64_t)(v & 1); } /* i1 arithmetic */

/* ---- run-time errors ------------------------------------------------------ */

static _Noreturn void rt_fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void rt_fail(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mlc_error_vset(c->err, fmt, ap);
  va_end(ap);
  longjmp(c->jb, 1);
}

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

static inline int64_t affine_index(const dim *d, const int64_t *slots) {
  uint64_t v = (uint64_t)d->c0 + (uint64_t)d->k0 * (uint64_t)slots[d->s0] +
               (uint64_t)d->k1 * (uint64_t)slots[d->s1];
  return d->wrap32 ? wrap_i32(v) : (int64_t)v;
}

static inline int64_t dim_index(const dim *d, ctx *c) {
  return d->e ? EI(d->e) : affine_index(d, c->slots);
}

/* Names the buffer and the whole index. The other indices are evaluated
 * again for the message; they are pure, so this changes nothing. */
static _Noreturn void out_of_bounds(const access *acc, ctx *c, int bad, int64_t bad_value,
                                    const char *what) {
  char msg[768] = "";
  append(msg, sizeof msg, "out-of-bounds %s %s[", what, acc->b->name);
  for (int d = 0; d < acc->ndim; d++)
    append(msg, sizeof msg, "%s%lld", d ? ", " : "",
           (long long)(d == bad ? bad_value : dim_index(&acc->dims[d], c)));
  append(msg, sizeof msg, "] (shape [");
  for (int d = 0; d < acc->ndim; d++)
    append(msg, sizeof msg, "%s%lld", d ? ", " : "", (long long)acc->b->shape[d]);
  append(msg, sizeof msg, "]) in block \"%s\"", acc->block);
  rt_fail(c, "%s", msg);
}

/* An access proven in bounds. The sum wraps (in uint64_t) only where the
 * true offset, which is in bounds, does not. */
static inline int64_t proven_index(const access *acc, const int64_t *slots) {
  uint64_t off = (uint64_t)acc->c0;
  for (int t = 0; t < acc->nterm; t++) off += (uint64_t)acc->tcoef[t] * (uint64_t)slots[acc->tslot[t]];
  return (int64_t)off;
}

/* Any access. */
static inline int64_t flat_index(const access *acc, ctx *c, const char *what) {
  int64_t off = 0;
  for (int d = 0; d < acc->ndim; d++) {
    const dim *dm = &acc->dims[d];
    int64_t v = dim_index(dm, c);
    if ((uint64_t)v >= (uint64_t)dm->extent) out_of_bounds(acc, c, d, v, what);
    off += v * dm->stride;
  }
  return off;
}

/* An access whose indices are all affine. */
static inline int64_t affine_flat_index(const access *acc, ctx *c, const char *what) {
  int64_t off = 0;
  for (int d = 0; d < acc->ndim; d++) {
    const dim *dm = &acc->dims[d];
    int64_t v = affine_index(dm, c->slots);
    if ((uint64_t)v >= (uint64_t)dm->extent) out_of_bounds(acc, c, d, v, what);
    off += v * dm->stride;
  }
  return off;
}

/* ---- scalar helpers ------------------------------------------------------- */

static inline float round_half(float x) { return mlc_half_to_float(mlc_float_to_half(x)); }
static inline float round_bf16(float x) { return mlc_bf16_to_float(mlc_float_to_bf16(x)); }

/* A float32 value rounded to float dtype t. */
static float round_to(mlc_dtype t, float v) {
  return t == MLC_FLOAT16 ? round_half(v) : t == MLC_BFLOAT16 ? round_bf16(v) : v;
}

static int64_t wrap_to(mlc_dtype t, uint64_t v) {
  switch (t) {
  case MLC_BOOL: return v != 0; /* a conversion to bool tests for nonzero */
  case MLC_INT8: return wrap_i8(v);
  case MLC_UINT8: return wrap_u8(v);
  case MLC_INT32: return wrap_i32(v);
  case MLC_INT64: return wrap_i64(v);
  case MLC_FLOAT16:
  case MLC_BFLOAT16:
  case MLC_FLOAT32: break;
  }
  mlc_unreachable();
}

static void int_range(mlc_dtype t, int64_t *lo, int64_t *hi) {
  switch (t) {
  case MLC_BOOL: *lo = 0, *hi = 1; return;
  case MLC_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return;
  case MLC_UINT8: *lo = 0, *hi = UINT8_MAX; return;
  case MLC_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return;
  case MLC_INT64: *lo = INT64_MIN, *hi = INT64_MAX; return;
  case MLC_FLOAT16:
  case MLC_BFLOAT16:
  case MLC_FLOAT32: break;
  }
  mlc_unreachable();
}

static _Noreturn void div_zero(const enode *n, ctx *c) {
  rt_fail(c, "integer division by zero (%s) in block \"%s\"", n->what, n->block);
}

/* Truncating division; b == -1 negates so INT64_MIN / -1 wraps, not traps. */
static inline int64_t int_div(const enode *n, ctx *c, int64_t a, int64_t b) {
  if (b == 0) div_zero(n, c);
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  return a / b;
}

static inline int64_t int_floordiv(const enode *n, ctx *c, int64_t a, int64_t b) {
  if (b == 0) div_zero(n, c);
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}

static inline int64_t int_floormod(const enode *n, ctx *c, int64_t a, int64_t b) {
  if (b == 0) div_zero(n, c);
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

/* ---- expression kernels ---------------------------------------------------- */

static int64_t k_imm(const enode *n, ctx *c) { MLC_UNUSED(c); return n->imm; }
static float k_fimm(const enode *n, ctx *c) { MLC_UNUSED(c); return n->fimm; }
static int64_t k_var(const enode *n, ctx *c) { return c->slots[n->slot]; }

/* Integer arithmetic, one set per width. */
#define INT_OPS(W)                                                                          \
  static int64_t k_add_##W(const enode *n, ctx *c) {                                       \
    return wrap_##W((uint64_t)EI(n->a) + (uint64_t)EI(n->b));                              \
  }                                                                                         \
  static int64_t k_sub_##W(const enode *n, ctx *c) {                                       \
    return wrap_##W((uint64_t)EI(n->a) - (uint64_t)EI(n->b));                              \
  }                                                                                         \
  static int64_t k_mul_##W(const enode *n, ctx *c) {                                       \
    return wrap_##W((uint64_t)EI(n->a) * (uint64_t)EI(n->b));                              \
  }                                                                                         \
  static int64_t k_div_##W(const enode *n, ctx *c) {                                       \
    int64_t x = EI(n->a), y = EI(n->b);                                                     \
    return wrap_##W((uint64_t)int_div(n, c, x, y));                                         \
  }                                                                                         \
  static int64_t k_floordiv_##W(const enode *n, ctx *c) {                                  \
    int64_t x = EI(n->a), y = EI(n->b);                                                     \
    return wrap_##W((uint64_t)int_floordiv(n, c, x, y));                                    \
  }                                                                                         \
  static int64_t k_floormod_##W(const enode *n, ctx *c) {                                  \
    int64_t x = EI(n->a), y = EI(n->b);                                                     \
    return wrap_##W((uint64_t)int_floormod(n, c, x, y));                                    \
  }
INT_OPS(i8)
INT_OPS(u8)
INT_OPS(i32)
INT_OPS(i64)
INT_OPS(b)

static int64_t k_min_i(const enode *n, ctx *c) {
  int64_t x = EI(n->a), y = EI(n->b);
  return x < y ? x : y;
}
static int64_t k_max_i(const enode *n, ctx *c) {
  int64_t x = EI(n->a), y = EI(n->b);
  return x > y ? x : y;
}

/* Float arithmetic: float32 as is, float16 and bfloat16 rounded after each
 * operation.
 * min/max as TVM's codegen writes them: select(a < b, a, b). */
#define FLOAT_OP(NAME, EXPR)                                                                \
  static float k_##NAME##_f32(const enode *n, ctx *c) {                                    \
    float x = EF(n->a), y = EF(n->b);                                                       \
    return (EXPR);                                                                          \
  }                                                                                         \
  static float k_##NAME##_f16(const enode *n, ctx *c) {                                    \
    float x = EF(n->a), y = EF(n->b);                                                       \
    return round_half(EXPR);                                                                \
  }                                                                                         \
  static float k_##NAME##_bf16(const enode *n, ctx *c) {                                   \
    float x = EF(n->a), y = EF(n->b);                                                       \
    return round_bf16(EXPR);                                                                \
  }
FLOAT_OP(add, x + y)
FLOAT_OP(sub, x - y)
FLOAT_OP(mul, x * y)
FLOAT_OP(div, x / y)
FLOAT_OP(floordiv, floorf(x / y))
FLOAT_OP(floormod, x - floorf(x / y) * y)
FLOAT_OP(min, x < y ? x : y)
FLOAT_OP(max, x > y ? x : y)
FLOAT_OP(pow, powf(x, y))

#define FLOAT_UNARY(NAME, EXPR)                                                             \
  static float k_##NAME##_f32(const enode *n, ctx *c) {                                    \
    float x = EF(n->a);                                                                     \
    return (EXPR);                                                                          \
  }                                                                                         \
  static float k_##NAME##_f16(const enode *n, ctx *c) {                                    \
    float x = EF(n->a);                                                                     \
    return round_half(EXPR);                                                                \
  }                                                                                         \
  static float k_##NAME##_bf16(const enode *n, ctx *c) {                                   \
    float x = EF(n->a);                                                                     \
    return round_bf16(EXPR);                                                                \
  }
FLOAT_UNARY(exp, expf(x))
FLOAT_UNARY(log, logf(x))
FLOAT_UNARY(sqrt, sqrtf(x))
FLOAT_UNARY(rsqrt, 1.0f / sqrtf(x))
FLOAT_UNARY(tanh, tanhf(x))
FLOAT_UNARY(sigmoid, 1.0f / (1.0f + expf(-x)))
FLOAT_UNARY(abs, fabsf(x))
FLOAT_UNARY(erf, erff(x))
FLOAT_UNARY(floor, floorf(x))
FLOAT_UNARY(ceil, ceilf(x))
FLOAT_UNARY(round, nearbyintf(x))
FLOAT_UNARY(sin, sinf(x))
FLOAT_UNARY(cos, cosf(x))
FLOAT_UNARY(tan, tanf(x))
FLOAT_UNARY(asin, asinf(x))
FLOAT_UNARY(acos, acosf(x))
FLOAT_UNARY(atan, atanf(x))
FLOAT_UNARY(sinh, sinhf(x))
FLOAT_UNARY(cosh, coshf(x))
FLOAT_UNARY(asinh, asinhf(x))
FLOAT_UNARY(acosh, acoshf(x))
FLOAT_UNARY(atanh, atanhf(x))

static int64_t k_abs_i(const enode *n, ctx *c) {
  int64_t x = EI(n->a);
  return wrap_to(n->dtype, x < 0 ? 0 - (uint64_t)x : (uint64_t)x);
}
static int64_t k_ident_i(const enode *n, ctx *c) { return EI(n->a); }

/* Comparisons: integer or float operands; the result is bool. */
#define CMP_OP(NAME, OP)                                                                    \
  static int64_t k_##NAME##_i(const enode *n, ctx *c) { return EI(n->a) OP EI(n->b); }     \
  static int64_t k_##NAME##_f(const enode *n, ctx *c) { return EF(n->a) OP EF(n->b); }
CMP_OP(eq, ==)
CMP_OP(ne, !=)
CMP_OP(lt, <)
CMP_OP(le, <=)
CMP_OP(gt, >)
CMP_OP(ge, >=)

/* and/or short-circuit: the right side of a guard may be out of bounds. */
static int64_t k_and(const enode *n, ctx *c) { return EI(n->a) && EI(n->b); }
static int64_t k_or(const enode *n, ctx *c) { return EI(n->a) || EI(n->b); }
static int64_t k_not(const enode *n, ctx *c) { return !EI(n->a); }

static int64_t k_select_i(const enode *n, ctx *c) {
  int64_t cond = EI(n->a), t = EI(n->b), f = EI(n->c);
  return cond ? t : f;
}
static float k_select_f(const enode *n, ctx *c) {
  int64_t cond = EI(n->a);
  float t = EF(n->b), f = EF(n->c);
  return cond ? t : f;
}
static int64_t k_ite_i(const enode *n, ctx *c) { return EI(n->a) ? EI(n->b) : EI(n->c); }
static float k_ite_f(const enode *n, ctx *c) { return EI(n->a) ? EF(n->b) : EF(n->c); }

/* Casts. Float to int truncates and saturates (NaN gives 0). */
static int64_t k_cast_ii(const enode *n, ctx *c) { return wrap_to(n->dtype, (uint64_t)EI(n->a)); }
static float k_cast_if32(const enode *n, ctx *c) { return (float)EI(n->a); }
static float k_cast_if16(const enode *n, ctx *c) { return round_half((float)EI(n->a)); }
static float k_cast_ff32(const enode *n, ctx *c) { return EF(n->a); }
static float k_cast_ff16(const enode *n, ctx *c) { return round_half(EF(n->a)); }
static float k_cast_ifb16(const enode *n, ctx *c) { return round_bf16((float)EI(n->a)); }
static float k_cast_ffb16(const enode *n, ctx *c) { return round_bf16(EF(n->a)); }
static int64_t k_cast_fi(const enode *n, ctx *c) {
  float x = EF(n->a);
  if (n->dtype == MLC_BOOL) return x != 0;
  int64_t lo, hi;
  int_range(n->dtype, &lo, &hi);
  double d = x;
  if (isnan(d)) return 0;
  if (d <= (double)lo) return lo;
  if (d >= (double)hi) return hi; /* (double)INT64_MAX is 2^63 */
  return (int64_t)d;
}

/* Index of an access whose every index is a plain var: the common case
 * after scheduling, worth its own kernels. */
static inline int64_t index_v1(const access *acc, ctx *c, const char *what) {
  const dim *d = acc->dims;
  int64_t v = c->slots[d[0].s0];
  if ((uint64_t)v >= (uint64_t)d[0].extent) out_of_bounds(acc, c, 0, v, what);
  return v;
}

static inline int64_t index_v2(const access *acc, ctx *c, const char *what) {
  const dim *d = acc->dims;
  int64_t v0 = c->slots[d[0].s0], v1 = c->slots[d[1].s0];
  if ((uint64_t)v0 >= (uint64_t)d[0].extent) out_of_bounds(acc, c, 0, v0, what);
  if ((uint64_t)v1 >= (uint64_t)d[1].extent) out_of_bounds(acc, c, 1, v1, what);
  return v0 * d[0].stride + v1;
}

#define AS_IS(x) (x)
#define NONZERO(x) ((x) != 0)

/* Loads, per element type: any index, one var, two vars. */
#define LOAD_KERNELS(SUF, RET, CTYPE, CONV)                                                 \
  static RET k_load_##SUF(const enode *n, ctx *c) {                                        \
    int64_t i = flat_index(&n->acc, c, "load of");                                          \
    return CONV(((const CTYPE *)c->bufs[n->acc.buf])[i]);                                  \
  }                                                                                         \
  static RET k_loadp_##SUF(const enode *n, ctx *c) {                                       \
    return CONV(((const CTYPE *)c->bufs[n->acc.buf])[proven_index(&n->acc, c->slots)]);     \
  }                                                                                         \
  static RET k_loada_##SUF(const enode *n, ctx *c) {                                       \
    int64_t i = affine_flat_index(&n->acc, c, "load of");                                   \
    return CONV(((const CTYPE *)c->bufs[n->acc.buf])[i]);                                  \
  }                                                                                         \
  static RET k_load1_##SUF(const enode *n, ctx *c) {                                       \
    int64_t i = index_v1(&n->acc, c, "load of");                                            \
    return CONV(((const CTYPE *)c->bufs[n->acc.buf])[i]);                                  \
  }                                                                                         \
  static RET k_load2_##SUF(const enode *n, ctx *c) {                                       \
    int64_t i = index_v2(&n->acc, c, "load of");                                            \
    return CONV(((const CTYPE *)c->bufs[n->acc.buf])[i]);                                  \
  }
LOAD_KERNELS(f32, float, float, AS_IS)
LOAD_KERNELS(f16, float, uint16_t, mlc_half_to_float)
LOAD_KERNELS(i32, int64_t, int32_t, AS_IS)
LOAD_KERNELS(i64, int64_t, int64_t, AS_IS)
LOAD_KERNELS(i8, int64_t, int8_t, AS_IS)
LOAD_KERNELS(u8, int64_t, uint8_t, AS_IS)
LOAD_KERNELS(bf16, float, uint16_t, mlc_bf16_to_float)
LOAD_KERNELS(b, int64_t, uint8_t, NONZERO)

/* ---- external calls -------------------------------------------------------- */

static double call_extern(const enode *n, ctx *c) {
  const xcall *x = n->x;
  for (int i = 0; i < x->n; i++) {
    const xcarg *a = &x->args[i];
    mlc_extern_val *v = &x->vals[i];
    switch (a->kind) {
    case MLC_XARG_VALUE:
      v->is_float = mlc_dtype_is_float(a->value->dtype);
      if (v->is_float) v->f = EF(a->value);
      else v->i = EI(a->value);
      break;
    case MLC_XARG_PTR: {
      int64_t off = flat_index(&a->first, c, "pointer to");
      (void)flat_index(&a->last, c, "pointer to");
      v->p = c->bufs[a->first.buf] + off * mlc_dtype_bytes(a->first.b->dtype);
      break;
    }
    case MLC_XARG_STRIDE: v->i = a->stride; break;
    }
  }
  return x->fn(x->ud, x->n, x->vals);
}

static int64_t k_extern_i(const enode *n, ctx *c) {
  return wrap_to(n->dtype, (uint64_t)(int64_t)call_extern(n, c));
}
static float k_extern_f(const enode *n, ctx *c) {
  return round_to(n->dtype, (float)call_extern(n, c));
}

/* ---- statement kernels ---------------------------------------------------- */

static void x_for(const snode *s, ctx *c) {
  int64_t lo = EI(s->a), ext = EI(s->b);
  const snode *body = s->body;
  int64_t *slot = &c->slots[s->slot];
  for (int64_t i = 0; i < ext; i++) {
    *slot = (int64_t)((uint64_t)lo + (uint64_t)i);
    body->fn(body, c);
  }
}

static void x_seq(const snode *s, ctx *c) {
  for (int i = 0; i < s->n; i++) s->kids[i]->fn(s->kids[i], c);
}

static void x_if(const snode *s, ctx *c) {
  if (EI(s->a)) s->body->fn(s->body, c);
  else if (s->other) s->other->fn(s->other, c);
}

static void x_nop(const snode *s, ctx *c) { MLC_UNUSED(s), MLC_UNUSED(c); }
static void x_body(const snode *s, ctx *c) { s->body->fn(s->body, c); } /* ALLOCATE */
static void x_eval_i(const snode *s, ctx *c) { (void)EI(s->a); }
static void x_eval_f(const snode *s, ctx *c) { (void)EF(s->a); }

/* Block realize: bind the iter vars that are not plain aliases of a loop
 * var, test T.where, run the init on the first reduction iteration. */
static void x_realize(const snode *s, ctx *c) {
  int64_t *slots = c->slots;
  for (int i = 0; i < s->n; i++) slots[s->bind_slot[i]] = EI(s->bind_val[i]);
  if (s->pred && !EI(s->pred)) return;
  if (s->other) {
    bool first = true;
    if (s->red_min_c) {
      for (int i = 0; i < s->n_red && first; i++) first = slots[s->red_slot[i]] == s->red_min_c[i];
    } else {
      for (int i = 0; i < s->n_red && first; i++) first = slots[s->red_slot[i]] == EI(s->red_min[i]);
    }
    if (first) s->other->fn(s->other, c);
  }
  s->body->fn(s->body, c);
}

/* Stores, per element type and index form; the value is converted to the
 * buffer's element type as a cast would. */
static inline uint16_t to_half(float v) { return mlc_float_to_half(v); }
static inline int32_t to_i32(int64_t v) { return (int32_t)wrap_i32((uint64_t)v); }
static inline int8_t to_i8(int64_t v) { return (int8_t)wrap_i8((uint64_t)v); }
static inline uint8_t to_u8(int64_t v) { return (uint8_t)v; }
static inline uint16_t to_bf16(float v) { return mlc_float_to_bf16(v); }
static inline uint8_t to_b(int64_t v) { return v != 0; }

#define STORE_KERNELS(SUF, EVAL, CTYPE, CONV)                                               \
  static void x_store_##SUF(const snode *s, ctx *c) {                                      \
    CTYPE v = CONV(EVAL(s->a));                                                             \
    ((CTYPE *)c->bufs[s->acc.buf])[flat_index(&s->acc, c, "store to")] = v;                \
  }                                                                                         \
  static void x_storep_##SUF(const snode *s, ctx *c) {                                     \
    CTYPE v = CONV(EVAL(s->a));                                                             \
    ((CTYPE *)c->bufs[s->acc.buf])[proven_index(&s->acc, c->slots)] = v;                   \
  }                                                                                         \
  static void x_storea_##SUF(const snode *s, ctx *c) {                                     \
    CTYPE v = CONV(EVAL(s->a));                                                             \
    ((CTYPE *)c->bufs[s->acc.buf])[affine_flat_index(&s->acc, c, "store to")] = v;         \
  }                                                                                         \
  static void x_store1_##SUF(const snode *s, ctx *c) {                                     \
    CTYPE v = CONV(EVAL(s->a));                                                             \
    ((CTYPE *)c->bufs[s->acc.buf])[index_v1(&s->acc, c, "store to")] = v;                  \
  }                                                                                         \
  static void x_store2_##SUF(const snode *s, ctx *c) {                                     \
    CTYPE v = CONV(EVAL(s->a));                                                             \
    ((CTYPE *)c->bufs[s->acc.buf])[index_v2(&s->acc, c, "store to")] = v;                  \
  }
STORE_KERNELS(f32, EF, float, AS_IS)
STORE_KERNELS(f16, EF, uint16_t, to_half)
STORE_KERNELS(i32, EI, int32_t, to_i32)
STORE_KERNELS(i64, EI, int64_t, AS_IS)
STORE_KERNELS(i8, EI, int8_t, to_i8)
STORE_KERNELS(u8, EI, uint8_t, to_u8)
STORE_KERNELS(bf16, EF, uint16_t, to_bf16)
STORE_KERNELS(b, EI, uint8_t, to_b)

/* The update of every matmul and convolution, Y[..] = X[..] + P[..] * Q[..]
 * in float32 with all four accesses proven in bounds, in one kernel: the
 * same operations in the same order, without five indirect calls. `s->a`
 * is the add node, whose operands are a load and a multiply of loads (in
 * either order; float addition is commutative). */
static inline float proven_f32(const enode *ld, ctx *c) {
  return ((const float *)c->bufs[ld->acc.buf])[proven_index(&ld->acc, c->slots)];
}

static void x_store_madd_f32(const snode *s, ctx *c) {
  const enode *add = s->a;
  bool mul_first = add->a->fn.f == k_mul_f32;
  const enode *ld = mul_first ? add->b : add->a, *mul = mul_first ? add->a : add->b;
  float x = proven_f32(ld, c);
  float prod = proven_f32(mul->a, c) * proven_f32(mul->b, c);
  ((float *)c->bufs[s->acc.buf])[proven_index(&s->acc, c->slots)] = x + prod;
}

/* ---- compiler ------------------------------------------------------------- */

typedef struct binding {
  const mlc_var *var;
  int slot;
} binding;

/* What the compiler knows of a slot's values: every value it can hold
 * while code that reads it runs lies in [lo, hi]. Known for loop vars with
 * constant bounds and for iter vars bound to affine forms of known vars;
 * sound because a slot is written only by its own loop or realize. */
typedef struct vrange {
  bool known;
  int64_t lo, hi;
} vrange;

typedef struct compiler {
  mlc_arena *a;
  MLC_VEC(vrange) ranges;   /* per slot */
  mlc_error *err;
  jmp_buf fail;             /* compile errors and allocation failures */
  MLC_VEC(binding) scope;   /* innermost last */
  int n_slots;              /* slot 0 is reserved: always 0 */
  MLC_VEC(const mlc_buffer *) bufs; /* params first, then scratch buffers */
  const char *block;        /* innermost block, for messages */
} compiler;

static _Noreturn void cfail(compiler *cc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void cfail(compiler *cc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mlc_error_vset(cc->err, fmt, ap);
  va_end(ap);
  longjmp(cc->fail, 1);
}

static bool isf(mlc_dtype t) { return mlc_dtype_is_float(t); }

static int lookup_var(compiler *cc, const mlc_var *v) {
  for (int i = cc->scope.len - 1; i >= 0; i--)
    if (cc->scope.data[i].var == v) return cc->scope.data[i].slot;
  return -1;
}

static void push_var(compiler *cc, const mlc_var *v, int slot) {
  binding b = {v, slot};
  MLC_VEC_APUSH(cc->a, cc->scope, b);
}

static int new_slot(compiler *cc) {
  vrange unknown = {false, 0, 0};
  MLC_VEC_APUSH(cc->a, cc->ranges, unknown);
  return cc->n_slots++;
}

static void set_range(compiler *cc, int slot, int64_t lo, int64_t hi) {
  cc->ranges.data[slot] = (vrange){true, lo, hi};
}

static int lookup_buffer(compiler *cc, const mlc_buffer *b) {
  for (int i = 0; i < cc->bufs.len; i++)
    if (cc->bufs.data[i] == b) return i;
  return -1;
}

static void declare_buffer(compiler *cc, const mlc_buffer *b) {
  if (lookup_buffer(cc, b) < 0) MLC_VEC_APUSH(cc->a, cc->bufs, b);
}

static enode *enew_i(compiler *cc, mlc_dtype t, ifn fn) {
  enode *n = MLC_NEW(cc->a, enode);
  n->dtype = t;
  n->fn.i = fn;
  n->block = cc->block;
  return n;
}

static enode *enew_f(compiler *cc, mlc_dtype t, ffn fn) {
  enode *n = MLC_NEW(cc->a, enode);
  n->dtype = t;
  n->fn.f = fn;
  n->block = cc->block;
  return n;
}

static const enode *cexpr(compiler *cc, const mlc_expr *e);

/* Convert a compiled value to dtype t (a cast node when the class or the
 * float width differs). */
static const enode *convert(compiler *cc, const enode *x, mlc_dtype t) {
  if (x->dtype == t) return x;
  enode *n;
  if (isf(t)) {
    if (isf(x->dtype))
      n = enew_f(cc, t, t == MLC_FLOAT16 ? k_cast_ff16 : t == MLC_BFLOAT16 ? k_cast_ffb16 : k_cast_ff32);
    else
      n = enew_f(cc, t, t == MLC_FLOAT16 ? k_cast_if16 : t == MLC_BFLOAT16 ? k_cast_ifb16 : k_cast_if32);
  } else {
    n = isf(x->dtype) ? enew_i(cc, t, k_cast_fi) : enew_i(cc, t, k_cast_ii);
  }
  n->a = x;
  return n;
}

/* An integer-class operand (index, condition): floats are truncated. */
static const enode *cint(compiler *cc, const mlc_expr *e) {
  const enode *x = cexpr(cc, e);
  return isf(x->dtype) ? convert(cc, x, MLC_INT64) : x;
}

/* A float-class operand. */
static const enode *cflt(compiler *cc, const mlc_expr *e) {
  const enode *x = cexpr(cc, e);
  return isf(x->dtype) ? x : convert(cc, x, MLC_FLOAT32);
}

typedef struct affine {
  int n;
  int slot[MAX_TERMS];
  uint64_t coef[MAX_TERMS], c0; /* wrapping, as the run-time sum wraps */
} affine;

static bool affine_add(affine *x, const affine *y, uint64_t scale) {
  x->c0 += y->c0 * scale;
  for (int i = 0; i < y->n; i++) {
    int k = 0;
    while (k < x->n && x->slot[k] != y->slot[i]) k++;
    if (k == x->n) {
      if (x->n == MAX_TERMS) return false;
      x->slot[x->n] = y->slot[i];
      x->coef[x->n++] = 0;
    }
    x->coef[k] += y->coef[i] * scale;
  }
  return true;
}

/* e as an affine form over var slots, when it is built only from int
 * immediates, bound vars, +, - and * by a constant, all of dtype t. */
static bool to_affine(compiler *cc, const mlc_expr *e, mlc_dtype t, affine *out) {
  memset(out, 0, sizeof *out);
  if (e->dtype != t) return false;
  affine x, y;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: out->c0 = (uint64_t)e->int_val; return true;
  case MLC_EXPR_VAR:
    out->slot[0] = lookup_var(cc, e->var);
    out->coef[0] = 1;
    out->n = 1;
    return out->slot[0] >= 0;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
    return to_affine(cc, e->bin.a, t, &x) && to_affine(cc, e->bin.b, t, &y) &&
           affine_add(out, &x, 1) && affine_add(out, &y, e->kind == MLC_EXPR_SUB ? (uint64_t)-1 : 1);
  case MLC_EXPR_MUL:
    if (!to_affine(cc, e->bin.a, t, &x) || !to_affine(cc, e->bin.b, t, &y)) return false;
    if (x.n == 0) return affine_add(out, &y, x.c0);
    if (y.n == 0) return affine_add(out, &x, y.c0);
    return false;
  case MLC_EXPR_FLOAT_IMM:
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
  case MLC_EXPR_NOT:
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CAST:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN: return false; /* evaluated as an expression */
  }
  mlc_unreachable();
}

/* Bounds of an affine form over slots with known ranges, when it stays
 * well inside int64 (and int32 when the index wraps at 32 bits). */
static bool affine_interval(const compiler *cc, const affine *af, mlc_dtype t, int64_t *lo,
                            int64_t *hi) {
  __int128 l = (int64_t)af->c0, h = (int64_t)af->c0;
  for (int i = 0; i < af->n; i++) {
    const vrange *r = &cc->ranges.data[af->slot[i]];
    if (!r->known) return false;
    __int128 k = (int64_t)af->coef[i];
    l += k >= 0 ? k * r->lo : k * r->hi;
    h += k >= 0 ? k * r->hi : k * r->lo;
  }
  __int128 lim = t == MLC_INT32 ? INT32_MAX : ((int64_t)1 << 62);
  if (l < -lim || h > lim) return false;
  *lo = (int64_t)l;
  *hi = (int64_t)h;
  return true;
}

/* The interval of an int index or binding expression, if affine. */
static bool expr_interval(compiler *cc, const mlc_expr *e, affine *af, int64_t *lo, int64_t *hi) {
  return (e->dtype == MLC_INT32 || e->dtype == MLC_INT64) && to_affine(cc, e, e->dtype, af) &&
         affine_interval(cc, af, e->dtype, lo, hi);
}

static void compile_index(compiler *cc, const mlc_expr *ix, dim *d) {
  affine af;
  memset(d, 0, sizeof *d);
  if ((ix->dtype == MLC_INT32 || ix->dtype == MLC_INT64) && to_affine(cc, ix, ix->dtype, &af) &&
      af.n <= 2) {
    d->c0 = (int64_t)af.c0;
    d->s0 = af.n > 0 ? af.slot[0] : 0;
    d->k0 = af.n > 0 ? (int64_t)af.coef[0] : 0;
    d->s1 = af.n > 1 ? af.slot[1] : 0;
    d->k1 = af.n > 1 ? (int64_t)af.coef[1] : 0;
    d->wrap32 = ix->dtype == MLC_INT32;
    return;
  }
  d->e = cint(cc, ix);
}

/* If every index is affine with a known interval inside its extent, the
 * access needs no checks: fold it into one affine offset, with vars whose
 * range is a single value folded into the constant. */
static void prove_access(compiler *cc, const mlc_buffer *b, mlc_expr *const *indices,
                         access *acc) {
  affine flat, af;
  memset(&flat, 0, sizeof flat);
  int64_t stride = 1;
  for (int d = b->ndim - 1; d >= 0; d--) {
    int64_t lo, hi;
    if (!expr_interval(cc, indices[d], &af, &lo, &hi)) return;
    if (lo < 0 || hi >= b->shape[d]) return;
    if (!affine_add(&flat, &af, (uint64_t)stride)) return;
    stride *= b->shape[d];
  }
  acc->c0 = (int64_t)flat.c0;
  for (int i = 0; i < flat.n; i++) {
    const vrange *r = &cc->ranges.data[flat.slot[i]];
    if (r->lo == r->hi) {
      acc->c0 = (int64_t)((uint64_t)acc->c0 + flat.coef[i] * (uint64_t)r->lo);
    } else if (flat.coef[i] != 0) {
      acc->tslot[acc->nterm] = flat.slot[i];
      acc->tcoef[acc->nterm++] = (int64_t)flat.coef[i];
    }
  }
  acc->proven = true;
}

static access compile_access(compiler *cc, const mlc_buffer *b, mlc_expr *const *indices) {
  int k = lookup_buffer(cc, b);
  if (k < 0)
    cfail(cc, "buffer %s is used in block \"%s\" but not declared (not a parameter or an "
              "allocation)", b->name, cc->block);
  dim *dims = MLC_NEW_ARRAY(cc->a, dim, b->ndim > 0 ? b->ndim : 1);
  int64_t stride = 1;
  for (int d = b->ndim - 1; d >= 0; d--) {
    compile_index(cc, indices[d], &dims[d]);
    dims[d].extent = b->shape[d];
    dims[d].stride = stride;
    stride *= b->shape[d];
  }
  access acc = {.buf = k, .ndim = b->ndim, .dims = dims, .b = b, .block = cc->block};
  prove_access(cc, b, indices, &acc);
  return acc;
}

/* Kernel choice: 4: proven in bounds; 1 or 2 dims that are each exactly
 * one var; 3: all dims affine; 0: general. */
static int access_form(const access *acc) {
  if (acc->proven) return 4;
  bool all_affine = true, plain = acc->ndim >= 1 && acc->ndim <= 2;
  for (int d = 0; d < acc->ndim; d++) {
    const dim *dm = &acc->dims[d];
    if (dm->e) all_affine = plain = false;
    else if (dm->k0 != 1 || dm->k1 != 0 || dm->c0 != 0 || dm->s0 == 0) plain = false;
  }
  return plain ? acc->ndim : all_affine ? 3 : 0;
}

static const enode *c_load(compiler *cc, const mlc_expr *e) {
  const mlc_buffer *b = e->load.buf;
  access acc = compile_access(cc, b, e->load.indices);
  int form = access_form(&acc);
#define PICK_LOAD(MAKE, SUF)                                                                \
  MAKE(cc, b->dtype,                                                                        \
       form == 4   ? k_loadp_##SUF                                                          \
       : form == 1 ? k_load1_##SUF                                                          \
       : form == 2 ? k_load2_##SUF                                                          \
       : form == 3 ? k_loada_##SUF                                                          \
                   : k_load_##SUF)
  enode *n = NULL;
  switch (b->dtype) {
  case MLC_FLOAT32: n = PICK_LOAD(enew_f, f32); break;
  case MLC_FLOAT16: n = PICK_LOAD(enew_f, f16); break;
  case MLC_INT32: n = PICK_LOAD(enew_i, i32); break;
  case MLC_INT64: n = PICK_LOAD(enew_i, i64); break;
  case MLC_INT8: n = PICK_LOAD(enew_i, i8); break;
  case MLC_UINT8: n = PICK_LOAD(enew_i, u8); break;
  case MLC_BFLOAT16: n = PICK_LOAD(enew_f, bf16); break;
  case MLC_BOOL: n = PICK_LOAD(enew_i, b); break;
  }
#undef PICK_LOAD
  if (!n) mlc_unreachable();
  n->acc = acc;
  return n;
}

static ifn int_arith(compiler *cc, mlc_expr_kind k, mlc_dtype t) {
#define PICK(OP)                                                                        \
  switch (t) {                                                                          \
  case MLC_BOOL: return k_##OP##_b;                                                     \
  case MLC_INT8: return k_##OP##_i8;                                                    \
  case MLC_UINT8: return k_##OP##_u8;                                                   \
  case MLC_INT32: return k_##OP##_i32;                                                  \
  case MLC_INT64: return k_##OP##_i64;                                                  \
  case MLC_FLOAT16:                                                                     \
  case MLC_BFLOAT16:                                                                    \
  case MLC_FLOAT32: break;                                                              \
  }                                                                                     \
  mlc_unreachable()
  switch (k) {
  case MLC_EXPR_ADD: PICK(add);
  case MLC_EXPR_SUB: PICK(sub);
  case MLC_EXPR_MUL: PICK(mul);
  case MLC_EXPR_DIV: PICK(div);
  case MLC_EXPR_FLOORDIV: PICK(floordiv);
  case MLC_EXPR_FLOORMOD: PICK(floormod);
  case MLC_EXPR_MIN: return k_min_i;
  case MLC_EXPR_MAX: return k_max_i;
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_NOT:
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CAST:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN: break;
  }
#undef PICK
  cfail(cc, "internal: %s is not integer arithmetic", mlc_expr_kind_name(k));
}

/* The kernel of a float operation for float dtype t. */
#define FPICK(K) return t == MLC_FLOAT16 ? K##_f16 : t == MLC_BFLOAT16 ? K##_bf16 : K##_f32

static ffn float_arith(compiler *cc, mlc_expr_kind k, mlc_dtype t) {
  switch (k) {
  case MLC_EXPR_ADD: FPICK(k_add);
  case MLC_EXPR_SUB: FPICK(k_sub);
  case MLC_EXPR_MUL: FPICK(k_mul);
  case MLC_EXPR_DIV: FPICK(k_div);
  case MLC_EXPR_FLOORDIV: FPICK(k_floordiv);
  case MLC_EXPR_FLOORMOD: FPICK(k_floormod);
  case MLC_EXPR_MIN: FPICK(k_min);
  case MLC_EXPR_MAX: FPICK(k_max);
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_NOT:
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CAST:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN: break;
  }
  cfail(cc, "internal: %s is not float arithmetic", mlc_expr_kind_name(k));
}

static ifn compare_fn(mlc_expr_kind k, bool fl) {
  switch (k) {
  case MLC_EXPR_EQ: return fl ? k_eq_f : k_eq_i;
  case MLC_EXPR_NE: return fl ? k_ne_f : k_ne_i;
  case MLC_EXPR_LT: return fl ? k_lt_f : k_lt_i;
  case MLC_EXPR_LE: return fl ? k_le_f : k_le_i;
  case MLC_EXPR_GT: return fl ? k_gt_f : k_gt_i;
  case MLC_EXPR_GE: return fl ? k_ge_f : k_ge_i;
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_NOT:
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
  case MLC_EXPR_LOAD:
  case MLC_EXPR_CAST:
  case MLC_EXPR_CALL:
  case MLC_EXPR_CALL_EXTERN: break;
  }
  mlc_unreachable();
}

static const enode *c_arith(compiler *cc, const mlc_expr *e) {
  enode *n;
  if (isf(e->dtype)) {
    n = enew_f(cc, e->dtype, float_arith(cc, e->kind, e->dtype));
    n->a = cflt(cc, e->bin.a);
    n->b = cflt(cc, e->bin.b);
  } else {
    n = enew_i(cc, e->dtype, int_arith(cc, e->kind, e->dtype));
    n->a = cint(cc, e->bin.a);
    n->b = cint(cc, e->bin.b);
  }
  n->what = mlc_expr_kind_name(e->kind);
  return n;
}

static const enode *c_compare(compiler *cc, const mlc_expr *e) {
  bool fl = isf(e->bin.a->dtype) || isf(e->bin.b->dtype);
  enode *n = enew_i(cc, MLC_BOOL, compare_fn(e->kind, fl));
  n->a = fl ? cflt(cc, e->bin.a) : cint(cc, e->bin.a);
  n->b = fl ? cflt(cc, e->bin.b) : cint(cc, e->bin.b);
  return n;
}

static const enode *c_ternary(compiler *cc, const mlc_expr *e, bool lazy) {
  enode *n = isf(e->dtype) ? enew_f(cc, e->dtype, lazy ? k_ite_f : k_select_f)
                           : enew_i(cc, e->dtype, lazy ? k_ite_i : k_select_i);
  n->a = cint(cc, e->sel.cond);
  n->b = convert(cc, cexpr(cc, e->sel.t), e->dtype);
  n->c = convert(cc, cexpr(cc, e->sel.f), e->dtype);
  return n;
}

static ffn float_intrin(mlc_intrin op, mlc_dtype t) {
  switch (op) {
  case MLC_INTRIN_EXP: FPICK(k_exp);
  case MLC_INTRIN_LOG: FPICK(k_log);
  case MLC_INTRIN_SQRT: FPICK(k_sqrt);
  case MLC_INTRIN_RSQRT: FPICK(k_rsqrt);
  case MLC_INTRIN_TANH: FPICK(k_tanh);
  case MLC_INTRIN_SIGMOID: FPICK(k_sigmoid);
  case MLC_INTRIN_ABS: FPICK(k_abs);
  case MLC_INTRIN_ERF: FPICK(k_erf);
  case MLC_INTRIN_FLOOR: FPICK(k_floor);
  case MLC_INTRIN_CEIL: FPICK(k_ceil);
  case MLC_INTRIN_POW: FPICK(k_pow);
  case MLC_INTRIN_ROUND: FPICK(k_round);
  case MLC_INTRIN_SIN: FPICK(k_sin);
  case MLC_INTRIN_COS: FPICK(k_cos);
  case MLC_INTRIN_TAN: FPICK(k_tan);
  case MLC_INTRIN_ASIN: FPICK(k_asin);
  case MLC_INTRIN_ACOS: FPICK(k_acos);
  case MLC_INTRIN_ATAN: FPICK(k_atan);
  case MLC_INTRIN_SINH: FPICK(k_sinh);
  case MLC_INTRIN_COSH: FPICK(k_cosh);
  case MLC_INTRIN_ASINH: FPICK(k_asinh);
  case MLC_INTRIN_ACOSH: FPICK(k_acosh);
  case MLC_INTRIN_ATANH: FPICK(k_atanh);
  }
  mlc_unreachable();
}

/* Integer abs/floor/ceil stay integers; the other intrinsics of integers
 * compute in float32 and convert back. */
static const enode *c_call(compiler *cc, const mlc_expr *e) {
  mlc_intrin op = e->call.op;
  if (!isf(e->dtype) && (op == MLC_INTRIN_ABS || op == MLC_INTRIN_FLOOR || op == MLC_INTRIN_CEIL)) {
    enode *n = enew_i(cc, e->dtype, op == MLC_INTRIN_ABS ? k_abs_i : k_ident_i);
    n->a = cint(cc, e->call.args[0]);
    return n;
  }
  mlc_dtype ft = isf(e->dtype) ? e->dtype : MLC_FLOAT32;
  enode *n = enew_f(cc, ft, float_intrin(op, ft));
  n->a = cflt(cc, e->call.args[0]);
  if (mlc_intrin_nargs(op) > 1) n->b = cflt(cc, e->call.args[1]);
  return convert(cc, n, e->dtype);
}

/* The registry of functions T.call_extern reaches in the interpreter. */
enum { MAX_EXTERNS = 64 };
static struct {
  char name[64];
  mlc_extern_fn fn;
  void *ud;
} externs[MAX_EXTERNS];
static int n_externs;
static pthread_mutex_t externs_mu = PTHREAD_MUTEX_INITIALIZER;

bool mlc_interp_register_extern(const char *name, mlc_extern_fn fn, void *ud) {
  if (strlen(name) >= sizeof externs[0].name) return false;
  bool ok = false;
  pthread_mutex_lock(&externs_mu);
  int i = 0;
  while (i < n_externs && strcmp(externs[i].name, name) != 0) i++;
  if (i < MAX_EXTERNS) {
    if (i == n_externs) n_externs++;
    strcpy(externs[i].name, name);
    externs[i].fn = fn;
    externs[i].ud = ud;
    ok = true;
  }
  pthread_mutex_unlock(&externs_mu);
  return ok;
}

static bool find_extern(const char *name, mlc_extern_fn *fn, void **ud) {
  bool found = false;
  pthread_mutex_lock(&externs_mu);
  for (int i = 0; i < n_externs && !found; i++)
    if (strcmp(externs[i].name, name) == 0) {
      *fn = externs[i].fn;
      *ud = externs[i].ud;
      found = externs[i].fn != NULL;
    }
  pthread_mutex_unlock(&externs_mu);
  return found;
}

static const enode *c_extern(compiler *cc, const mlc_expr *e) {
  xcall *x = MLC_NEW(cc->a, xcall);
  x->name = e->ext.name;
  if (!find_extern(e->ext.name, &x->fn, &x->ud))
    cfail(cc, "T.call_extern in block \"%s\": no function \"%s\" is registered with the "
              "interpreter", cc->block, e->ext.name);
  x->n = e->ext.n_args;
  x->args = MLC_NEW_ARRAY(cc->a, xcarg, x->n ? x->n : 1);
  x->vals = MLC_NEW_ARRAY(cc->a, mlc_extern_val, x->n ? x->n : 1);
  memset(x->args, 0, sizeof(xcarg) * (size_t)(x->n ? x->n : 1));
  memset(x->vals, 0, sizeof(mlc_extern_val) * (size_t)(x->n ? x->n : 1));
  for (int i = 0; i < x->n; i++) {
    const mlc_xarg *a = &e->ext.args[i];
    xcarg *o = &x->args[i];
    o->kind = a->kind;
    x->vals[i].kind = a->kind;
    switch (a->kind) {
    case MLC_XARG_VALUE: o->value = cexpr(cc, e->ext.kids[a->kid]); break;
    case MLC_XARG_PTR: {
      int nd = a->buf->ndim;
      mlc_expr **mins = e->ext.kids + a->kid, **exts = mins + nd;
      mlc_expr **last = MLC_NEW_ARRAY(cc->a, mlc_expr *, nd ? nd : 1);
      for (int d = 0; d < nd; d++)
        last[d] = mlc_sub(cc->a, mlc_add(cc->a, mins[d], exts[d]), mlc_int_t(cc->a, mins[d]->dtype, 1));
      o->first = compile_access(cc, a->buf, mins);
      o->last = compile_access(cc, a->buf, last);
      x->vals[i].dtype = a->buf->dtype;
      break;
    }
    case MLC_XARG_STRIDE:
      o->stride = 1;
      for (int d = a->buf->ndim - 1; d > a->dim; d--) o->stride *= a->buf->shape[d];
      break;
    }
  }
  enode *n = isf(e->dtype) ? enew_f(cc, e->dtype, k_extern_f) : enew_i(cc, e->dtype, k_extern_i);
  n->x = x;
  n->what = e->ext.name;
  return n;
}

static const enode *c_imm(compiler *cc, const mlc_expr *e) {
  bool from_int = e->kind == MLC_EXPR_INT_IMM;
  if (isf(e->dtype)) {
    float v = from_int ? (float)e->int_val : (float)e->float_val;
    enode *n = enew_f(cc, e->dtype, k_fimm);
    n->fimm = round_to(e->dtype, v);
    return n;
  }
  enode *n = enew_i(cc, e->dtype, k_imm);
  if (from_int) {
    n->imm = wrap_to(e->dtype, (uint64_t)e->int_val);
  } else {
    enode tmp = {.fn.f = k_fimm, .dtype = MLC_FLOAT32, .fimm = (float)e->float_val};
    enode cast = {.fn.i = k_cast_fi, .dtype = e->dtype, .a = &tmp};
    n->imm = k_cast_fi(&cast, NULL);
  }
  return n;
}

static const enode *cexpr(compiler *cc, const mlc_expr *e) {
  if (!e) cfail(cc, "missing expression in block \"%s\"", cc->block);
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM: return c_imm(cc, e);
  case MLC_EXPR_VAR: {
    int slot = lookup_var(cc, e->var);
    if (slot < 0)
      cfail(cc, "variable %s is used in block \"%s\" outside the loop or block that binds it",
            e->var->name, cc->block);
    if (isf(e->var->dtype)) cfail(cc, "variable %s has float type", e->var->name);
    enode *n = enew_i(cc, e->var->dtype, k_var);
    n->slot = slot;
    return n;
  }
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX: return c_arith(cc, e);
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE: return c_compare(cc, e);
  case MLC_EXPR_AND:
  case MLC_EXPR_OR: {
    enode *n = enew_i(cc, MLC_BOOL, e->kind == MLC_EXPR_AND ? k_and : k_or);
    n->a = cint(cc, e->bin.a);
    n->b = cint(cc, e->bin.b);
    return n;
  }
  case MLC_EXPR_NOT: {
    enode *n = enew_i(cc, MLC_BOOL, k_not);
    n->a = cint(cc, e->bin.a);
    return n;
  }
  case MLC_EXPR_SELECT: return c_ternary(cc, e, false);
  case MLC_EXPR_IF_THEN_ELSE: return c_ternary(cc, e, true);
  case MLC_EXPR_LOAD: return c_load(cc, e);
  case MLC_EXPR_CAST: return convert(cc, cexpr(cc, e->cast.value), e->dtype);
  case MLC_EXPR_CALL: return c_call(cc, e);
  case MLC_EXPR_CALL_EXTERN: return c_extern(cc, e);
  }
  mlc_unreachable();
}

/* ---- statements ----------------------------------------------------------- */

static const snode *cstmt(compiler *cc, const mlc_stmt *st);

static snode *snew(compiler *cc, sfn fn) {
  snode *s = MLC_NEW(cc->a, snode);
  s->fn = fn;
  return s;
}

static const snode *c_for(compiler *cc, const mlc_stmt *st) {
  snode *s = snew(cc, x_for);
  s->a = cint(cc, st->loop.min);
  s->b = cint(cc, st->loop.extent);
  s->slot = new_slot(cc);
  if (s->a->fn.i == k_imm && s->b->fn.i == k_imm) {
    int64_t lo = s->a->imm, ext = s->b->imm;
    if (ext >= 1 && lo <= INT64_MAX - ext) set_range(cc, s->slot, lo, lo + ext - 1);
    else if (ext < 1) set_range(cc, s->slot, lo, lo); /* the body never runs */
  }
  int mark = cc->scope.len;
  push_var(cc, st->loop.var, s->slot);
  s->body = cstmt(cc, st->loop.body);
  cc->scope.len = mark;
  return s;
}

static sfn store_fn(mlc_dtype t, int form) {
#define PICK_STORE(SUF)                                                                     \
  return form == 4   ? x_storep_##SUF                                                        \
         : form == 1 ? x_store1_##SUF                                                        \
         : form == 2 ? x_store2_##SUF                                                        \
         : form == 3 ? x_storea_##SUF                                                        \
                     : x_store_##SUF
  switch (t) {
  case MLC_FLOAT32: PICK_STORE(f32);
  case MLC_FLOAT16: PICK_STORE(f16);
  case MLC_INT32: PICK_STORE(i32);
  case MLC_INT64: PICK_STORE(i64);
  case MLC_INT8: PICK_STORE(i8);
  case MLC_UINT8: PICK_STORE(u8);
  case MLC_BFLOAT16: PICK_STORE(bf16);
  case MLC_BOOL: PICK_STORE(b);
  }
#undef PICK_STORE
  mlc_unreachable();
}

static bool is_proven_load_f32(const enode *n) { return n->fn.f == k_loadp_f32; }

static bool is_mul_of_loads(const enode *n) {
  return n->fn.f == k_mul_f32 && is_proven_load_f32(n->a) && is_proven_load_f32(n->b);
}

static bool is_madd_f32(const enode *v) {
  return v->fn.f == k_add_f32 && ((is_proven_load_f32(v->a) && is_mul_of_loads(v->b)) ||
                                  (is_mul_of_loads(v->a) && is_proven_load_f32(v->b)));
}

static const snode *c_store(compiler *cc, const mlc_stmt *st) {
  const mlc_buffer *b = st->store.buf;
  const enode *value = isf(b->dtype) ? cflt(cc, st->store.value) : cint(cc, st->store.value);
  access acc = compile_access(cc, b, st->store.indices);
  snode *s = snew(cc, store_fn(b->dtype, access_form(&acc)));
  s->a = value;
  s->acc = acc;
  if (b->dtype == MLC_FLOAT32 && acc.proven && is_madd_f32(value)) s->fn = x_store_madd_f32;
  return s;
}

static void declare_allocs(compiler *cc, const mlc_block *b) {
  for (int i = 0; i < b->n_allocs; i++) declare_buffer(cc, b->allocs[i]);
}

/* Iter vars bound to a plain int var share that var's slot, so most
 * realizes of scheduled code bind nothing at run time. Binding values and
 * reduce-domain minima are compiled in the enclosing scope; the other iter
 * vars get fresh slots, which those values cannot read. */
static const snode *c_realize(compiler *cc, const mlc_stmt *st) {
  const mlc_block *b = st->realize.block;
  int n = b->n_iters;
  if (n > 0 && !st->realize.values) cfail(cc, "block \"%s\" has no iter var bindings", b->name);
  snode *s = snew(cc, x_realize);
  int *slots = MLC_NEW_ARRAY(cc->a, int, n + 1);
  int *bind_slot = MLC_NEW_ARRAY(cc->a, int, n + 1);
  const enode **bind_val = MLC_NEW_ARRAY(cc->a, const enode *, n + 1);
  int *red_slot = MLC_NEW_ARRAY(cc->a, int, n + 1);
  const enode **red_min = MLC_NEW_ARRAY(cc->a, const enode *, n + 1);
  int64_t *red_min_c = MLC_NEW_ARRAY(cc->a, int64_t, n + 1);
  bool all_const = true;
  for (int i = 0; i < n; i++) {
    const mlc_expr *v = st->realize.values[i];
    int alias = v->kind == MLC_EXPR_VAR ? lookup_var(cc, v->var) : -1;
    if (alias >= 0 && !isf(v->var->dtype)) {
      slots[i] = alias;
    } else {
      slots[i] = new_slot(cc);
      bind_slot[s->n] = slots[i];
      bind_val[s->n++] = cint(cc, v);
      affine af;
      int64_t lo, hi;
      if (expr_interval(cc, v, &af, &lo, &hi)) set_range(cc, slots[i], lo, hi);
    }
    if (b->iters[i].kind == MLC_ITER_REDUCE) {
      red_slot[s->n_red] = slots[i];
      const enode *mn = red_min[s->n_red] = cint(cc, b->iters[i].dom.min);
      if (mn->fn.i == k_imm) red_min_c[s->n_red] = mn->imm;
      else all_const = false;
      s->n_red++;
    }
  }
  s->bind_slot = bind_slot;
  s->bind_val = bind_val;
  s->red_slot = red_slot;
  s->red_min = red_min;
  s->red_min_c = all_const ? red_min_c : NULL;
  int mark = cc->scope.len;
  const char *outer = cc->block;
  for (int i = 0; i < n; i++) push_var(cc, b->iters[i].var, slots[i]);
  cc->block = b->name;
  /* T.where normally reads loop vars; iter vars are bound by then too. */
  s->pred = st->realize.predicate ? cint(cc, st->realize.predicate) : NULL;
  declare_allocs(cc, b);
  s->other = b->init ? cstmt(cc, b->init) : NULL;
  s->body = cstmt(cc, b->body);
  cc->block = outer;
  cc->scope.len = mark;
  /* Nothing to bind, test or initialize: the realize is just its body. */
  if (s->n == 0 && !s->pred && !s->other) return s->body;
  return s;
}

static const snode *cstmt(compiler *cc, const mlc_stmt *st) {
  if (!st) return snew(cc, x_nop);
  switch (st->kind) {
  case MLC_STMT_FOR: return c_for(cc, st);
  case MLC_STMT_BLOCK_REALIZE: return c_realize(cc, st);
  case MLC_STMT_SEQ: {
    snode *s = snew(cc, x_seq);
    s->n = st->seq.n;
    const snode **kids = MLC_NEW_ARRAY(cc->a, const snode *, st->seq.n + 1);
    for (int i = 0; i < st->seq.n; i++) kids[i] = cstmt(cc, st->seq.stmts[i]);
    s->kids = kids;
    return s;
  }
  case MLC_STMT_STORE: return c_store(cc, st);
  case MLC_STMT_IF: {
    snode *s = snew(cc, x_if);
    s->a = cint(cc, st->if_.cond);
    s->body = cstmt(cc, st->if_.then_s);
    s->other = st->if_.else_s ? cstmt(cc, st->if_.else_s) : NULL;
    return s;
  }
  case MLC_STMT_ALLOCATE: {
    snode *s = snew(cc, x_body);
    declare_buffer(cc, st->alloc.buf);
    s->body = cstmt(cc, st->alloc.body);
    return s;
  }
  case MLC_STMT_EVALUATE: {
    const enode *v = cexpr(cc, st->eval.value);
    snode *s = snew(cc, isf(v->dtype) ? x_eval_f : x_eval_i);
    s->a = v;
    return s;
  }
  }
  mlc_unreachable();
}

/* ---- driver --------------------------------------------------------------- */

static void put_shape(char *buf, size_t n, int ndim, const int64_t *shape) {
  append(buf, n, "[");
  for (int i = 0; i < ndim; i++) append(buf, n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  append(buf, n, "]");
}

static bool check_args(const mlc_prim_func *f, int n_args, const mlc_array *args, mlc_error *err) {
  if (n_args != f->n_params)
    return mlc_error_set(err, "%s takes %d arguments, got %d", f->name, f->n_params, n_args);
  for (int i = 0; i < n_args; i++) {
    const mlc_buffer *p = f->params[i];
    const mlc_array *x = &args[i];
    if (x->dtype != p->dtype)
      return mlc_error_set(err, "argument %d (%s): dtype %s, expected %s", i, p->name,
                           mlc_dtype_name(x->dtype), mlc_dtype_name(p->dtype));
    bool same = x->ndim == p->ndim && x->ndim >= 0 && x->ndim <= MLC_COUNTOF(x->shape);
    for (int d = 0; same && d < p->ndim; d++) same = x->shape[d] == p->shape[d];
    if (!same) {
      char got[256] = "", want[256] = "";
      put_shape(got, sizeof got, x->ndim < 0 ? 0 : x->ndim > 8 ? 8 : x->ndim, x->shape);
      put_shape(want, sizeof want, p->ndim, p->shape);
      return mlc_error_set(err, "argument %d (%s): shape %s, expected %s", i, p->name, got, want);
    }
    if (!x->data) return mlc_error_set(err, "argument %d (%s): no data", i, p->name);
  }
  return true;
}

/* Compile f into cc->a. NULL with the error set on failure. */
static const snode *compile(compiler *cc, const mlc_prim_func *f) {
  if (setjmp(cc->fail)) {
    mlc_arena_set_oom_jump(cc->a, NULL);
    if (cc->err && !cc->err->msg[0]) mlc_error_set(cc->err, "out of memory compiling %s", f->name);
    return NULL;
  }
  mlc_arena_set_oom_jump(cc->a, &cc->fail);
  cc->block = "root";
  set_range(cc, new_slot(cc), 0, 0); /* slot 0 */
  for (int i = 0; i < f->n_params; i++) MLC_VEC_APUSH(cc->a, cc->bufs, f->params[i]);
  if (!f->body) cfail(cc, "%s has no body", f->name);
  const snode *root = cstmt(cc, f->body);
  mlc_arena_set_oom_jump(cc->a, NULL);
  return root;
}

/* Zeroed storage for each scratch buffer (allocated once per call). */
static bool alloc_scratch(const compiler *cc, int n_params, char **bufs, mlc_error *err) {
  for (int i = n_params; i < cc->bufs.len; i++) {
    const mlc_buffer *b = cc->bufs.data[i];
    char what[160];
    snprintf(what, sizeof what, "buffer %.100s", b->name);
    int64_t numel = mlc_tensor_numel_checked(what, b->shape, b->ndim, mlc_dtype_bytes(b->dtype), err);
    if (numel < 0) return false;
    size_t bytes = (size_t)numel * (size_t)mlc_dtype_bytes(b->dtype);
    bufs[i] = mlc_malloc(bytes ? bytes : 1);
    if (!bufs[i]) return mlc_error_set(err, "out of memory allocating buffer %s", b->name);
    memset(bufs[i], 0, bytes);
  }
  return true;
}

/* A function of size vars runs as its specialization to the sizes the
 * arguments give, so every access is checked against the actual extents. */
static bool run_sized(const mlc_prim_func *f, int n_args, mlc_array *args, mlc_error *err) {
  int64_t sizes[MLC_MAX_SIZES];
  if (!mlc_func_bind_sizes(f, n_args, args, sizes, err)) return false;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *g = mlc_func_specialize(a, f, sizes, err);
  bool ok = g && mlc_interp_run_n(g, n_args, args, err);
  mlc_arena_free(a);
  return ok;
}

bool mlc_interp_run_n(const mlc_prim_func *f, int n_args, mlc_array *args, mlc_error *err) {
  if (err) err->msg[0] = 0;
  if (f->n_sizes > 0) return run_sized(f, n_args, args, err);
  if (!check_args(f, n_args, args, err)) return false;
  compiler cc = {.a = mlc_arena_new(), .err = err};
  const snode *root = compile(&cc, f);
  volatile bool ok = false;
  ctx c = {.err = err};
  if (!root) goto done;
  int nb = cc.bufs.len;
  c.slots = mlc_malloc(sizeof(int64_t) * (size_t)(cc.n_slots + 1));
  c.bufs = mlc_malloc(sizeof(char *) * (size_t)(nb + 1));
  if (!c.slots || !c.bufs) {
    mlc_error_set(err, "out of memory running %s", f->name);
    goto done;
  }
  memset(c.bufs, 0, sizeof(char *) * (size_t)(nb + 1));
  memset(c.slots, 0, sizeof(int64_t) * (size_t)(cc.n_slots + 1));
  for (int i = 0; i < f->n_params; i++) c.bufs[i] = args[i].data;
  if (!alloc_scratch(&cc, f->n_params, c.bufs, err)) goto done;
  if (setjmp(c.jb) == 0) {
    root->fn(root, &c);
    ok = true;
  }
done:
  if (c.bufs)
    for (int i = f->n_params; i < cc.bufs.len; i++) mlc_free(c.bufs[i]);
  mlc_free(c.bufs);
  mlc_free(c.slots);
  mlc_arena_free(cc.a);
  return ok;
}

bool mlc_interp_run(const mlc_prim_func *f, mlc_array *args, mlc_error *err) {
  if (f->n_params > 0 && !args) return mlc_error_set(err, "%s: no arguments given", f->name);
  return mlc_interp_run_n(f, f->n_params, args, err);
}
