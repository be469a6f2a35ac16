/* LLVM IR for expressions, scalar or lane-wide (inside vectorized loops).
 *
 * Semantics follow the reference interpreter (ir/interp.c) exactly where
 * LLVM allows: integers wrap, floordiv/floormod round toward -inf, integer
 * division by zero does not trap (the result is unspecified), float -> int
 * saturates with NaN -> 0, float min/max are select(a < b, a, b), and/or
 * short-circuit when the right side loads (a guard may protect it), and
 * T.if_then_else evaluates only the taken side.
 *
 * uint8 lives in i8 like int8; its arithmetic runs zero-extended to i32 and
 * truncates back, so division, min/max and comparisons see 0..255.
 * bfloat16 lives in memory as i16 (the upper half of a float32) and in
 * registers as float32 holding a bfloat16 value: loads widen exactly, every
 * operation computes in float32 and rounds to nearest even, as the
 * interpreter does.
 */
#include "targets/llvm_internal.h"
#include "targets/lower_internal.h"

#include <math.h>
#include <string.h>

LLVMTypeRef cg_scalar_type(cg *c, mlc_dtype t) {
  switch (t) {
  case MLC_BOOL: return c->t_i1;
  case MLC_INT8:
  case MLC_UINT8: return c->t_i8;
  case MLC_BFLOAT16: return c->t_f32; /* a bfloat16 value in a float32 register */
  case MLC_INT32: return c->t_i32;
  case MLC_INT64: return c->t_i64;
  case MLC_FLOAT16: return c->t_f16;
  case MLC_FLOAT32: return c->t_f32;
  }
  mlc_unreachable();
}

LLVMTypeRef cg_mem_type(cg *c, mlc_dtype t) {
  return t == MLC_BOOL ? c->t_i8 : t == MLC_BFLOAT16 ? c->t_i16 : cg_scalar_type(c, t);
}

bool cg_is_vector(LLVMValueRef v) {
  return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind;
}

static int lanes_of(LLVMValueRef v) {
  return cg_is_vector(v) ? (int)LLVMGetVectorSize(LLVMTypeOf(v)) : 0;
}

/* ty with the lane count of v (scalar ty when v is scalar). */
static LLVMTypeRef like(LLVMTypeRef ty, LLVMValueRef v) {
  int n = lanes_of(v);
  return n ? LLVMVectorType(ty, (unsigned)n) : ty;
}

static LLVMValueRef splat_const(LLVMTypeRef ty, LLVMValueRef scalar) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) return scalar;
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef elems[64];
  MLC_ASSERT(n <= 64);
  for (unsigned i = 0; i < n; i++) elems[i] = scalar;
  return LLVMConstVector(elems, n);
}

static LLVMTypeRef elem_type(LLVMTypeRef ty) {
  return LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
}

LLVMValueRef cg_const_int(LLVMTypeRef ty, int64_t v) {
  return splat_const(ty, LLVMConstInt(elem_type(ty), (unsigned long long)v, 1));
}

static LLVMValueRef const_real(LLVMTypeRef ty, double v) {
  return splat_const(ty, LLVMConstReal(elem_type(ty), v));
}

LLVMValueRef cg_splat(cg *c, LLVMValueRef v, int lanes) {
  if (cg_is_vector(v) || lanes == 0) return v;
  LLVMTypeRef vty = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
  LLVMValueRef one = LLVMBuildInsertElement(c->b, LLVMGetUndef(vty), v,
                                            LLVMConstInt(c->t_i32, 0, 0), "");
  LLVMValueRef mask = LLVMConstNull(LLVMVectorType(c->t_i32, (unsigned)lanes));
  return LLVMBuildShuffleVector(c->b, one, LLVMGetUndef(vty), mask, "");
}

/* Broadcast whichever of *x, *y is scalar when the other is a vector. */
static void unify(cg *c, LLVMValueRef *x, LLVMValueRef *y) {
  int n = lanes_of(*x) ? lanes_of(*x) : lanes_of(*y);
  if (!n) return;
  *x = cg_splat(c, *x, n);
  *y = cg_splat(c, *y, n);
}

LLVMBasicBlockRef cg_new_block(cg *c, const char *name) {
  return LLVMAppendBasicBlockInContext(c->ctx, c->fn, name);
}

void cg_bind_var(cg *c, const mlc_var *v, LLVMValueRef val) {
  cg_var cv = {v, val};
  MLC_VEC_APUSH(c->a, c->vars, cv);
}

static LLVMValueRef lookup_var(cg *c, const mlc_var *v) {
  for (int i = c->vars.len - 1; i >= 0; i--)
    if (c->vars.data[i].var == v) return c->vars.data[i].val;
  mlc_panic(__FILE__, __LINE__, "codegen: variable %s is not bound", v->name);
}

cg_buf *cg_lookup_buf(cg *c, const mlc_buffer *b) {
  for (int i = c->bufs.len - 1; i >= 0; i--)
    if (c->bufs.data[i].buf == b) return &c->bufs.data[i];
  mlc_panic(__FILE__, __LINE__, "codegen: buffer %s is not bound", b->name);
}

static bool is_extern(const mlc_expr *e, void *ud) {
  MLC_UNUSED(ud);
  return e->kind == MLC_EXPR_CALL_EXTERN;
}

/* An external call counts as lane-dependent even when its arguments are
 * not: each lane of the loop calls it once (cg_extern scalarizes). */
bool cg_uses_lane(cg *c, const mlc_expr *e) {
  return c->lanes && (mlc_expr_uses_var(e, c->lane_var) || mlc_expr_any(e, is_extern, NULL));
}

bool cg_unit_stride(cg *c, const mlc_expr *idx, const mlc_expr **base) {
  mlc_var *v = (mlc_var *)c->lane_var;
  mlc_expr *next = mlc_add(c->a, mlc_ref(c->a, v), mlc_int_t(c->a, v->dtype, 1));
  mlc_expr *shifted = mlc_expr_subst(c->a, (mlc_expr *)idx, 1, &v, &next);
  int64_t d;
  if (!mlc_expr_const_diff(c->a, shifted, (mlc_expr *)idx, &d) || d != 1) return false;
  mlc_expr *min = (mlc_expr *)c->lane_min;
  if (min->dtype != v->dtype) min = mlc_cast(c->a, v->dtype, min);
  *base = mlc_expr_subst(c->a, (mlc_expr *)idx, 1, &v, &min);
  return true;
}

LLVMValueRef cg_elem_ptr(cg *c, cg_buf *b, LLVMValueRef idx) {
  if (LLVMTypeOf(idx) != c->t_i64) idx = LLVMBuildSExt(c->b, idx, c->t_i64, "");
  return LLVMBuildInBoundsGEP2(c->b, cg_mem_type(c, b->buf->dtype), b->ptr, &idx, 1, "");
}

/* ---- calls ------------------------------------------------------------------ */

static LLVMValueRef call_intrinsic(cg *c, const char *name, LLVMTypeRef *over, int n_over,
                                   LLVMValueRef *args, int n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  MLC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, over, (size_t)n_over);
  LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, over, (size_t)n_over);
  return LLVMBuildCall2(c->b, fty, fn, args, (unsigned)n, "");
}

/* An intrinsic overloaded on its first argument's type. */
static LLVMValueRef intrin1(cg *c, const char *name, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  return call_intrinsic(c, name, &t, 1, &x, 1);
}

LLVMValueRef cg_call_named(cg *c, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                           LLVMValueRef *args, int n) {
  LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
  if (!fn) fn = LLVMAddFunction(c->mod, name, fty);
  return LLVMBuildCall2(c->b, fty, fn, args, (unsigned)n, "");
}

/* A float32 libm function (tanhf, erff) of x, lane by lane for vectors. */
static LLVMValueRef call_libm(cg *c, const char *name, LLVMValueRef x) {
  LLVMTypeRef f = c->t_f32;
  int n = lanes_of(x);
  if (!n) return cg_call_named(c, name, f, &f, &x, 1);
  LLVMValueRef out = LLVMGetUndef(LLVMTypeOf(x));
  for (int i = 0; i < n; i++) {
    LLVMValueRef k = LLVMConstInt(c->t_i32, (unsigned long long)i, 0);
    LLVMValueRef xi = LLVMBuildExtractElement(c->b, x, k, "");
    out = LLVMBuildInsertElement(c->b, out, cg_call_named(c, name, f, &f, &xi, 1), k, "");
  }
  return out;
}

/* ---- conversions -------------------------------------------------------------- */

/* bfloat16 bits (i16, or a vector of them) widened to float32: exact. */
static LLVMValueRef bf16_widen(cg *c, LLVMValueRef v) {
  LLVMValueRef w = LLVMBuildZExt(c->b, v, like(c->t_i32, v), "");
  w = LLVMBuildShl(c->b, w, cg_const_int(like(c->t_i32, v), 16), "");
  return LLVMBuildBitCast(c->b, w, like(c->t_f32, v), "");
}

/* float32 to bfloat16 bits (i16), round to nearest even, NaN kept quiet:
 * mlc_float_to_bf16 in IR. */
static LLVMValueRef bf16_narrow(cg *c, LLVMValueRef v) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ity = like(c->t_i32, v);
  LLVMValueRef x = LLVMBuildBitCast(b, v, ity, "");
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, x, cg_const_int(ity, 16), ""), cg_const_int(ity, 1), "");
  LLVMValueRef r = LLVMBuildAdd(b, x, LLVMBuildAdd(b, odd, cg_const_int(ity, 0x7fff), ""), "");
  LLVMValueRef q = LLVMBuildOr(b, x, cg_const_int(ity, 0x00400000), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  r = LLVMBuildSelect(b, nan, q, r, "");
  return LLVMBuildTrunc(b, LLVMBuildLShr(b, r, cg_const_int(ity, 16), ""), like(c->t_i16, v), "");
}

/* A float32 value rounded to the nearest bfloat16, still in float32. */
static LLVMValueRef bf16_round(cg *c, LLVMValueRef v) { return bf16_widen(c, bf16_narrow(c, v)); }

LLVMValueRef cg_from_mem(cg *c, LLVMValueRef v, mlc_dtype t) {
  if (t == MLC_BFLOAT16) return bf16_widen(c, v);
  if (t != MLC_BOOL) return v;
  return LLVMBuildICmp(c->b, LLVMIntNE, v, cg_const_int(LLVMTypeOf(v), 0), "");
}

LLVMValueRef cg_to_mem(cg *c, LLVMValueRef v, mlc_dtype t) {
  if (t == MLC_BFLOAT16) return bf16_narrow(c, v);
  if (t != MLC_BOOL) return v;
  return LLVMBuildZExt(c->b, v, like(c->t_i8, v), "");
}

/* float -> float. bfloat16 values are float32 already: widening is free,
 * narrowing to bfloat16 rounds. */
static LLVMValueRef float_to_float(cg *c, LLVMValueRef v, mlc_dtype from, mlc_dtype to) {
  LLVMBuilderRef b = c->b;
  if (from == MLC_FLOAT16) v = LLVMBuildFPExt(b, v, like(c->t_f32, v), "");
  switch (to) {
  case MLC_FLOAT32: return v;
  case MLC_BFLOAT16: return bf16_round(c, v);
  case MLC_FLOAT16: return LLVMBuildFPTrunc(b, v, like(c->t_f16, v), "");
  case MLC_BOOL:
  case MLC_INT8:
  case MLC_UINT8:
  case MLC_INT32:
  case MLC_INT64: break;
  }
  mlc_unreachable();
}

/* A float (f32 or f64, scalar or vector) to integer dtype `to` as
 * llvm.fpto[su]i.sat converts: truncated, saturated at to's range, NaN to
 * 0. Built from a plain conversion and selects, which LLVM 14 keeps as
 * vector instructions where its lowering of the .sat intrinsic on vectors
 * takes one scalar conversion per lane (a float to uint8 quantization ran
 * at 2.5 ns an element). */
static LLVMValueRef float_to_int_sat(cg *c, LLVMValueRef v, mlc_dtype to) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ity = like(cg_scalar_type(c, to), v), fty = LLVMTypeOf(v);
  bool is_unsigned = to == MLC_UINT8;
  int bits = mlc_dtype_bits(to);
  double lo = is_unsigned ? 0 : -ldexp(1, bits - 1), hi = is_unsigned ? ldexp(1, bits) : ldexp(1, bits - 1);
  int64_t imin = is_unsigned ? 0 : bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
  int64_t imax = is_unsigned ? (INT64_C(1) << bits) - 1 : bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
  LLVMValueRef r = is_unsigned ? LLVMBuildFPToUI(b, v, ity, "") : LLVMBuildFPToSI(b, v, ity, "");
  LLVMValueRef below = LLVMBuildFCmp(b, LLVMRealOLT, v, const_real(fty, lo), "");
  LLVMValueRef above = LLVMBuildFCmp(b, LLVMRealOGE, v, const_real(fty, hi), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  r = LLVMBuildSelect(b, above, cg_const_int(ity, imax), r, "");
  r = LLVMBuildSelect(b, below, cg_const_int(ity, imin), r, "");
  return LLVMBuildSelect(b, nan, cg_const_int(ity, 0), r, "");
}

LLVMValueRef cg_convert(cg *c, LLVMValueRef v, mlc_dtype from, mlc_dtype to) {
  if (from == to) return v;
  LLVMBuilderRef b = c->b;
  LLVMTypeRef to_ty = like(cg_scalar_type(c, to), v);
  if (mlc_dtype_is_float(to)) {
    if (mlc_dtype_is_float(from)) return float_to_float(c, v, from, to);
    /* int -> float32 first, then to half, as the interpreter rounds. */
    LLVMTypeRef f32 = like(c->t_f32, v);
    LLVMValueRef f = from == MLC_BOOL || from == MLC_UINT8 ? LLVMBuildUIToFP(b, v, f32, "")
                                                          : LLVMBuildSIToFP(b, v, f32, "");
    return float_to_float(c, f, MLC_FLOAT32, to);
  }
  if (mlc_dtype_is_float(from)) {
    if (to == MLC_BOOL) return LLVMBuildFCmp(b, LLVMRealUNE, v, const_real(LLVMTypeOf(v), 0), "");
    if (from == MLC_FLOAT16) v = LLVMBuildFPExt(b, v, like(c->t_f32, v), "");
    return float_to_int_sat(c, v, to);
  }
  if (to == MLC_BOOL) return LLVMBuildICmp(b, LLVMIntNE, v, cg_const_int(LLVMTypeOf(v), 0), "");
  if (from == MLC_BOOL || from == MLC_UINT8) {
    if (mlc_dtype_bits(to) == 8) return v; /* uint8 <-> int8 reinterpret; bool is i1 */
    return LLVMBuildZExt(b, v, to_ty, "");
  }
  if (mlc_dtype_bits(to) > mlc_dtype_bits(from)) return LLVMBuildSExt(b, v, to_ty, "");
  if (mlc_dtype_bits(to) == mlc_dtype_bits(from)) return v;
  return LLVMBuildTrunc(b, v, to_ty, "");
}

/* ---- arithmetic -------------------------------------------------------------------- */

static bool const_value(LLVMValueRef v, int64_t *out) {
  if (!LLVMIsAConstantInt(v)) return false;
  *out = LLVMConstIntGetSExtValue(v);
  return true;
}

static int log2_exact(int64_t v) {
  if (v <= 0 || (v & (v - 1))) return -1;
  int k = 0;
  while ((1LL << k) != v) k++;
  return k;
}

/* Integer division family. A divisor that is not a constant other than 0
 * and -1 is made safe: 0 and -1 divide by 1 (then -1 negates), so nothing
 * traps and INT_MIN / -1 wraps as the interpreter's does. */
static LLVMValueRef int_div(cg *c, mlc_expr_kind k, mlc_dtype t, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ty = LLVMTypeOf(x);
  int64_t cy;
  bool is_const = !cg_is_vector(y) && const_value(y, &cy);
  if (t == MLC_BOOL) return k == MLC_EXPR_FLOORMOD ? cg_const_int(ty, 0) : x; /* y is 1 */
  if (is_const && cy > 0) {
    int sh = log2_exact(cy);
    if (k == MLC_EXPR_FLOORDIV && sh >= 0) return LLVMBuildAShr(b, x, cg_const_int(ty, sh), "");
    if (k == MLC_EXPR_FLOORMOD && sh >= 0) return LLVMBuildAnd(b, x, cg_const_int(ty, cy - 1), "");
  }
  LLVMValueRef zero = cg_const_int(ty, 0), one = cg_const_int(ty, 1), m1 = cg_const_int(ty, -1);
  LLVMValueRef ys = y, is_m1 = NULL;
  if (!is_const || cy == 0 || cy == -1) {
    is_m1 = LLVMBuildICmp(b, LLVMIntEQ, y, m1, "");
    LLVMValueRef bad = LLVMBuildOr(b, is_m1, LLVMBuildICmp(b, LLVMIntEQ, y, zero, ""), "");
    ys = LLVMBuildSelect(b, bad, one, y, "");
  }
  LLVMValueRef r;
  if (k == MLC_EXPR_DIV) {
    r = LLVMBuildSDiv(b, x, ys, "");
  } else {
    LLVMValueRef q = LLVMBuildSDiv(b, x, ys, "");
    LLVMValueRef rem = LLVMBuildSRem(b, x, ys, "");
    /* floor adjusts when the remainder is nonzero and its sign differs from
     * the divisor's. */
    LLVMValueRef adj = LLVMBuildAnd(
        b, LLVMBuildICmp(b, LLVMIntNE, rem, zero, ""),
        LLVMBuildICmp(b, LLVMIntNE, LLVMBuildICmp(b, LLVMIntSLT, rem, zero, ""),
                      LLVMBuildICmp(b, LLVMIntSLT, ys, zero, ""), ""),
        "");
    if (k == MLC_EXPR_FLOORDIV)
      r = LLVMBuildSub(b, q, LLVMBuildZExt(b, adj, ty, ""), "");
    else
      r = LLVMBuildAdd(b, rem, LLVMBuildSelect(b, adj, ys, zero, ""), "");
  }
  if (is_m1 && k != MLC_EXPR_FLOORMOD) r = LLVMBuildSelect(b, is_m1, LLVMBuildNeg(b, x, ""), r, "");
  return r;
}

static LLVMValueRef int_binary(cg *c, mlc_expr_kind k, mlc_dtype t, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = c->b;
  bool u = t == MLC_BOOL; /* bool compares as unsigned 0/1 */
  bool nsw = c->in_index && !u;
  switch (k) {
  case MLC_EXPR_ADD: return nsw ? LLVMBuildNSWAdd(b, x, y, "") : LLVMBuildAdd(b, x, y, "");
  case MLC_EXPR_SUB: return nsw ? LLVMBuildNSWSub(b, x, y, "") : LLVMBuildSub(b, x, y, "");
  case MLC_EXPR_MUL: return nsw ? LLVMBuildNSWMul(b, x, y, "") : LLVMBuildMul(b, x, y, "");
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD: return int_div(c, k, t, x, y);
  case MLC_EXPR_MIN:
    return LLVMBuildSelect(b, LLVMBuildICmp(b, u ? LLVMIntULT : LLVMIntSLT, x, y, ""), x, y, "");
  case MLC_EXPR_MAX:
    return LLVMBuildSelect(b, LLVMBuildICmp(b, u ? LLVMIntUGT : LLVMIntSGT, x, y, ""), x, y, "");
  case MLC_EXPR_EQ: return LLVMBuildICmp(b, LLVMIntEQ, x, y, "");
  case MLC_EXPR_NE: return LLVMBuildICmp(b, LLVMIntNE, x, y, "");
  case MLC_EXPR_LT: return LLVMBuildICmp(b, u ? LLVMIntULT : LLVMIntSLT, x, y, "");
  case MLC_EXPR_LE: return LLVMBuildICmp(b, u ? LLVMIntULE : LLVMIntSLE, x, y, "");
  case MLC_EXPR_GT: return LLVMBuildICmp(b, u ? LLVMIntUGT : LLVMIntSGT, x, y, "");
  case MLC_EXPR_GE: return LLVMBuildICmp(b, u ? LLVMIntUGE : LLVMIntSGE, x, y, "");
  case MLC_EXPR_AND: return LLVMBuildAnd(b, x, y, "");
  case MLC_EXPR_OR: return LLVMBuildOr(b, x, y, "");
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
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

/* Float operations. float16 operands are half values: +, -, *, / and the
 * comparisons on halves round exactly as float32-then-round does; floordiv
 * and floormod compute in float32 as the interpreter does. */
static LLVMValueRef float_binary(cg *c, mlc_expr_kind k, mlc_dtype t, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = c->b;
  switch (k) {
  case MLC_EXPR_ADD: return LLVMBuildFAdd(b, x, y, "");
  case MLC_EXPR_SUB: return LLVMBuildFSub(b, x, y, "");
  case MLC_EXPR_MUL: return LLVMBuildFMul(b, x, y, "");
  case MLC_EXPR_DIV: return LLVMBuildFDiv(b, x, y, "");
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD: {
    if (t == MLC_FLOAT16) {
      LLVMValueRef r = float_binary(c, k, MLC_FLOAT32, cg_convert(c, x, t, MLC_FLOAT32),
                                    cg_convert(c, y, t, MLC_FLOAT32));
      return cg_convert(c, r, MLC_FLOAT32, t);
    }
    LLVMValueRef q = intrin1(c, "llvm.floor", LLVMBuildFDiv(b, x, y, ""));
    if (k == MLC_EXPR_FLOORDIV) return q;
    return LLVMBuildFSub(b, x, LLVMBuildFMul(b, q, y, ""), "");
  }
  case MLC_EXPR_MIN: return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, y, ""), x, y, "");
  case MLC_EXPR_MAX: return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, y, ""), x, y, "");
  case MLC_EXPR_EQ: return LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "");
  case MLC_EXPR_NE: return LLVMBuildFCmp(b, LLVMRealUNE, x, y, "");
  case MLC_EXPR_LT: return LLVMBuildFCmp(b, LLVMRealOLT, x, y, "");
  case MLC_EXPR_LE: return LLVMBuildFCmp(b, LLVMRealOLE, x, y, "");
  case MLC_EXPR_GT: return LLVMBuildFCmp(b, LLVMRealOGT, x, y, "");
  case MLC_EXPR_GE: return LLVMBuildFCmp(b, LLVMRealOGE, x, y, "");
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
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

/* The dtype both operands of a binary node are computed in. */
static mlc_dtype operand_dtype(const mlc_expr *e) {
  mlc_dtype x = e->bin.a->dtype, y = e->bin.b->dtype;
  if (x == y) return x;
  if (mlc_dtype_is_float(x) || mlc_dtype_is_float(y))
    return (x == MLC_FLOAT32 || y == MLC_FLOAT32) ? MLC_FLOAT32 : mlc_dtype_is_float(x) ? x : y;
  return mlc_dtype_bits(x) >= mlc_dtype_bits(y) ? x : y;
}

static bool has_load(const mlc_expr *e);

static LLVMValueRef cg_lazy_logic(cg *c, const mlc_expr *e);
static LLVMValueRef scalarize(cg *c, const mlc_expr *e);

static LLVMValueRef cg_binary(cg *c, const mlc_expr *e) {
  mlc_expr_kind k = e->kind;
  if ((k == MLC_EXPR_AND || k == MLC_EXPR_OR) && has_load(e->bin.b)) {
    if (c->lanes) return scalarize(c, e);
    return cg_lazy_logic(c, e);
  }
  mlc_dtype t = operand_dtype(e);
  /* float32 a * b + c: contract to llvm.fmuladd (see targets.h). */
  if (k == MLC_EXPR_ADD && t == MLC_FLOAT32 && e->dtype == MLC_FLOAT32) {
    const mlc_expr *m = NULL, *other = NULL;
    if (e->bin.a->kind == MLC_EXPR_MUL && e->bin.a->dtype == MLC_FLOAT32) m = e->bin.a, other = e->bin.b;
    else if (e->bin.b->kind == MLC_EXPR_MUL && e->bin.b->dtype == MLC_FLOAT32) m = e->bin.b, other = e->bin.a;
    if (m && m->bin.a->dtype == MLC_FLOAT32 && m->bin.b->dtype == MLC_FLOAT32 &&
        other->dtype == MLC_FLOAT32) {
      LLVMValueRef args[3] = {cg_expr(c, m->bin.a), cg_expr(c, m->bin.b), cg_expr(c, other)};
      unify(c, &args[0], &args[1]);
      unify(c, &args[0], &args[2]);
      unify(c, &args[1], &args[2]);
      LLVMTypeRef ty = LLVMTypeOf(args[0]);
      return call_intrinsic(c, "llvm.fmuladd", &ty, 1, args, 3);
    }
  }
  LLVMValueRef x = cg_convert(c, cg_expr(c, e->bin.a), e->bin.a->dtype, t);
  LLVMValueRef y = cg_convert(c, cg_expr(c, e->bin.b), e->bin.b->dtype, t);
  unify(c, &x, &y);
  if (t == MLC_BFLOAT16) { /* in float32, rounded after */
    LLVMValueRef r = float_binary(c, k, MLC_FLOAT32, x, y);
    return mlc_expr_kind_is_compare(k) ? r : bf16_round(c, r);
  }
  if (t == MLC_UINT8) { /* zero-extended, so that 200 / 3 and 200 > 3 hold */
    LLVMTypeRef wide = like(c->t_i32, x);
    LLVMValueRef r = int_binary(c, k, MLC_INT32, LLVMBuildZExt(c->b, x, wide, ""),
                                LLVMBuildZExt(c->b, y, wide, ""));
    if (LLVMTypeOf(r) != wide) return r; /* a comparison: i1 */
    return LLVMBuildTrunc(c->b, r, like(c->t_i8, x), "");
  }
  return mlc_dtype_is_float(t) ? float_binary(c, k, t, x, y) : int_binary(c, k, t, x, y);
}

LLVMValueRef cg_combine(cg *c, mlc_expr_kind op, mlc_dtype t, LLVMValueRef x, LLVMValueRef y) {
  return mlc_dtype_is_float(t) ? float_binary(c, op, t, x, y) : int_binary(c, op, t, x, y);
}

/* Lanes [from, from + n) of v as a vector of n lanes. */
static LLVMValueRef lanes_slice(cg *c, LLVMValueRef v, int from, int n) {
  LLVMValueRef mask[CG_MAX_LANES];
  for (int i = 0; i < n; i++) mask[i] = LLVMConstInt(c->t_i32, (unsigned long long)(from + i), 0);
  return LLVMBuildShuffleVector(c->b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(mask, (unsigned)n), "");
}

LLVMValueRef cg_reduce_lanes(cg *c, mlc_expr_kind op, mlc_dtype t, LLVMValueRef v) {
  int n = lanes_of(v);
  LLVMValueRef odd = NULL; /* the lanes left over by odd halvings, combined */
  while (n > 1) {
    int h = n / 2;
    if (n % 2) {
      LLVMValueRef last = LLVMBuildExtractElement(c->b, v, LLVMConstInt(c->t_i32, (unsigned long long)(n - 1), 0), "");
      odd = odd ? cg_combine(c, op, t, odd, last) : last;
    }
    LLVMValueRef lo = lanes_slice(c, v, 0, h), hi = lanes_slice(c, v, h, h);
    v = cg_combine(c, op, t, lo, hi);
    n = h;
  }
  LLVMValueRef r = LLVMBuildExtractElement(c->b, v, LLVMConstInt(c->t_i32, 0, 0), "");
  return odd ? cg_combine(c, op, t, r, odd) : r;
}

/* a and b / a or b with b evaluated only when needed (scalar mode). */
static LLVMValueRef cg_lazy_logic(cg *c, const mlc_expr *e) {
  bool is_and = e->kind == MLC_EXPR_AND;
  LLVMValueRef x = cg_convert(c, cg_expr(c, e->bin.a), e->bin.a->dtype, MLC_BOOL);
  LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef rhs = cg_new_block(c, is_and ? "and.rhs" : "or.rhs");
  LLVMBasicBlockRef done = cg_new_block(c, is_and ? "and.end" : "or.end");
  if (is_and) LLVMBuildCondBr(c->b, x, rhs, done);
  else LLVMBuildCondBr(c->b, x, done, rhs);
  LLVMPositionBuilderAtEnd(c->b, rhs);
  LLVMValueRef y = cg_convert(c, cg_expr(c, e->bin.b), e->bin.b->dtype, MLC_BOOL);
  LLVMBasicBlockRef rhs_end = LLVMGetInsertBlock(c->b);
  LLVMBuildBr(c->b, done);
  LLVMPositionBuilderAtEnd(c->b, done);
  LLVMValueRef phi = LLVMBuildPhi(c->b, c->t_i1, "");
  LLVMValueRef vals[2] = {LLVMConstInt(c->t_i1, is_and ? 0 : 1, 0), y};
  LLVMBasicBlockRef bbs[2] = {from, rhs_end};
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

static void has_load_fn(const mlc_expr *e, void *ud) {
  if (e->kind == MLC_EXPR_LOAD) *(bool *)ud = true;
}

static bool has_load(const mlc_expr *e) {
  bool found = false;
  lower_visit_expr(e, has_load_fn, &found);
  return found;
}

/* Evaluate e once per lane in scalar mode (lane var bound to a constant
 * offset from the base) and gather the lanes into a vector: for what must
 * not be evaluated on every lane at once (lazy branches). */
static LLVMValueRef scalarize(cg *c, const mlc_expr *e) {
  int n = c->lanes;
  const mlc_var *lv = c->lane_var;
  LLVMValueRef base = c->lane_base;
  LLVMTypeRef vty = LLVMVectorType(cg_scalar_type(c, e->dtype), (unsigned)n);
  LLVMValueRef out = LLVMGetUndef(vty);
  int saved = c->vars.len;
  c->lanes = 0;
  for (int i = 0; i < n; i++) {
    LLVMValueRef lane = LLVMBuildAdd(c->b, base, LLVMConstInt(LLVMTypeOf(base), (unsigned long long)i, 0), "");
    cg_bind_var(c, lv, lane);
    LLVMValueRef v = cg_expr(c, e);
    out = LLVMBuildInsertElement(c->b, out, v, LLVMConstInt(c->t_i32, (unsigned long long)i, 0), "");
    c->vars.len = saved;
  }
  c->lanes = n;
  return out;
}

/* T.if_then_else: branches, so the untaken side never runs. */
static LLVMValueRef cg_if_then_else(cg *c, const mlc_expr *e) {
  if (cg_uses_lane(c, e->sel.cond)) {
    if (has_load(e->sel.t) || has_load(e->sel.f)) return scalarize(c, e);
    LLVMValueRef cond = cg_expr(c, e->sel.cond);
    LLVMValueRef t = cg_expr(c, e->sel.t), f = cg_expr(c, e->sel.f);
    t = cg_splat(c, cg_convert(c, t, e->sel.t->dtype, e->dtype), c->lanes);
    f = cg_splat(c, cg_convert(c, f, e->sel.f->dtype, e->dtype), c->lanes);
    return LLVMBuildSelect(c->b, cond, t, f, "");
  }
  int lanes = cg_uses_lane(c, e) ? c->lanes : 0;
  LLVMValueRef cond = cg_convert(c, cg_expr(c, e->sel.cond), e->sel.cond->dtype, MLC_BOOL);
  LLVMBasicBlockRef tb = cg_new_block(c, "ite.then"), fb = cg_new_block(c, "ite.else");
  LLVMBasicBlockRef done = cg_new_block(c, "ite.end");
  LLVMBuildCondBr(c->b, cond, tb, fb);
  LLVMValueRef vals[2];
  LLVMBasicBlockRef ends[2];
  const mlc_expr *sides[2] = {e->sel.t, e->sel.f};
  LLVMBasicBlockRef starts[2] = {tb, fb};
  for (int i = 0; i < 2; i++) {
    LLVMPositionBuilderAtEnd(c->b, starts[i]);
    LLVMValueRef v = cg_convert(c, cg_expr(c, sides[i]), sides[i]->dtype, e->dtype);
    vals[i] = cg_splat(c, v, lanes);
    ends[i] = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
  }
  LLVMPositionBuilderAtEnd(c->b, done);
  LLVMValueRef phi = LLVMBuildPhi(c->b, LLVMTypeOf(vals[0]), "");
  LLVMAddIncoming(phi, vals, ends, 2);
  return phi;
}

static LLVMValueRef cg_load(cg *c, const mlc_expr *e) {
  cg_buf *b = cg_lookup_buf(c, e->load.buf);
  mlc_dtype t = e->load.buf->dtype;
  LLVMTypeRef mty = cg_mem_type(c, t);
  unsigned align = (unsigned)mlc_dtype_bytes(t);
  const mlc_expr *idx = e->load.indices[0];
  if (!cg_uses_lane(c, idx)) {
    LLVMValueRef v = LLVMBuildLoad2(c->b, mty, cg_index_ptr(c, b, idx), "");
    LLVMSetAlignment(v, align);
    return cg_from_mem(c, v, t);
  }
  const mlc_expr *base;
  LLVMTypeRef vty = LLVMVectorType(mty, (unsigned)c->lanes);
  if (cg_unit_stride(c, idx, &base)) {
    LLVMValueRef p = cg_index_ptr(c, b, base);
    p = LLVMBuildBitCast(c->b, p, LLVMPointerType(vty, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(c->b, vty, p, "");
    LLVMSetAlignment(v, align);
    return cg_from_mem(c, v, t);
  }
  /* Gather lane by lane. */
  LLVMValueRef iv = cg_index(c, idx), out = LLVMGetUndef(vty);
  for (int i = 0; i < c->lanes; i++) {
    LLVMValueRef k = LLVMConstInt(c->t_i32, (unsigned long long)i, 0);
    LLVMValueRef p = cg_elem_ptr(c, b, LLVMBuildExtractElement(c->b, iv, k, ""));
    LLVMValueRef v = LLVMBuildLoad2(c->b, mty, p, "");
    LLVMSetAlignment(v, align);
    out = LLVMBuildInsertElement(c->b, out, v, k, "");
  }
  return cg_from_mem(c, out, t);
}

/* a * b + k as llvm.fmuladd: one FMA where the target has them (the
 * polynomials below are ours, their error bounds hold either way). */
static LLVMValueRef mul_add(cg *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef k) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  LLVMValueRef args[3] = {a, b, k};
  return call_intrinsic(c, "llvm.fmuladd", &ty, 1, args, 3);
}

/* p(x) by Horner's rule, coefficients from the highest degree down. */
static LLVMValueRef horner(cg *c, LLVMValueRef x, const double *k, int n) {
  LLVMTypeRef ty = LLVMTypeOf(x);
  LLVMValueRef p = const_real(ty, k[0]);
  for (int i = 1; i < n; i++) p = mul_add(c, p, x, const_real(ty, k[i]));
  return p;
}

/* exp(x) in float32 from plain arithmetic, so that vectorized loops stay
 * vectors: LLVM 14's C API cannot point the vectorizer at a vector math
 * library, and llvm.exp on a vector becomes one expf call per lane (a
 * softmax spent its time there). Cephes' expf: n = round(x log2 e), r = x -
 * n ln 2 in two parts, a degree-6 polynomial for exp(r) (relative error
 * about 1e-7), times 2^n applied in two halves so that overflow gives inf
 * and results below 2^-126 go gradually to 0; NaN passes through. */
static LLVMValueRef cpu_exp(cg *c, LLVMValueRef x) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ty = LLVMTypeOf(x);
  int lanes = lanes_of(x);
  LLVMTypeRef ity = lanes ? LLVMVectorType(c->t_i32, (unsigned)lanes) : c->t_i32;
  LLVMValueRef hi = const_real(ty, 89.0), lo = const_real(ty, -104.0);
  LLVMValueRef xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, hi, ""), hi, x, "");
  xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, xc, lo, ""), lo, xc, "");
  LLVMValueRef fx = mul_add(c, xc, const_real(ty, 1.44269504088896341), const_real(ty, 0.5));
  LLVMValueRef n = intrin1(c, "llvm.floor", fx);
  LLVMValueRef r = mul_add(c, n, const_real(ty, -0.693359375), xc);
  r = mul_add(c, n, const_real(ty, 2.12194440e-4), r);
  static const double poly[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
  LLVMValueRef p = horner(c, r, poly, MLC_COUNTOF(poly));
  p = mul_add(c, p, LLVMBuildFMul(b, r, r, ""), r);
  p = LLVMBuildFAdd(b, p, const_real(ty, 1.0), "");
  if (lanes == 16 && mlc_target_has_feature(c->target, "avx512f")) {
    /* p 2^n in one vscalefps, inf and denormals as IEEE has them; no
     * integer conversion, so NaN needs no select */
    LLVMValueRef args[5] = {p, n, p, LLVMConstInt(LLVMInt16TypeInContext(c->ctx), 0xffff, 0),
                            LLVMConstInt(c->t_i32, 4 /* the current rounding */, 0)};
    return call_intrinsic(c, "llvm.x86.avx512.mask.scalef.ps.512", NULL, 0, args, 5);
  }
  /* 2^n = 2^h * 2^(n-h), h = n >> 1: both halves are normal floats for
   * n in [-150, 128] */
  LLVMValueRef ni = LLVMBuildFPToSI(b, n, ity, "");
  LLVMValueRef h = LLVMBuildAShr(b, ni, cg_const_int(ity, 1), "");
  LLVMValueRef halves[2] = {h, LLVMBuildSub(b, ni, h, "")};
  for (int i = 0; i < 2; i++) {
    LLVMValueRef bits = LLVMBuildShl(b, LLVMBuildAdd(b, halves[i], cg_const_int(ity, 127), ""),
                                     cg_const_int(ity, 23), "");
    p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, bits, ty, ""), "");
  }
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, p, "");
}

static LLVMValueRef exp_f32(cg *c, LLVMValueRef x) {
  /* GPU backends map llvm.exp to their own library (libdevice) */
  return c->target->backend->device == MLC_DEVICE_CPU ? cpu_exp(c, x) : intrin1(c, "llvm.exp", x);
}

/* min(max(x, -m), m); NaN passes through. */
static LLVMValueRef clamp_abs(cg *c, LLVMValueRef x, double m) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ty = LLVMTypeOf(x);
  LLVMValueRef hi = const_real(ty, m), lo = const_real(ty, -m);
  x = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, hi, ""), hi, x, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, x, "");
}

/* tanh and erf from plain arithmetic on CPUs, for the reason cpu_exp
 * gives (a GELU spent its time in one erff call per element).
 * tanh: Cephes' tanhf, x + x^3 P(x^2) for |x| <= 0.625, else
 * 1 - 2 / (exp(2|x|) + 1) with the sign of x (|x| clamped to 9, where
 * tanh is 1 in float32); error about 1e-7. */
static LLVMValueRef cpu_tanh(cg *c, LLVMValueRef x) {
  static const double poly[] = {-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                                1.33314422036e-1, -3.33332819422e-1};
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ty = LLVMTypeOf(x);
  LLVMValueRef z = intrin1(c, "llvm.fabs", x);
  LLVMValueRef e = cpu_exp(c, LLVMBuildFMul(b, clamp_abs(c, z, 9.0), const_real(ty, 2.0), ""));
  LLVMValueRef big = LLVMBuildFSub(
      b, const_real(ty, 1.0), LLVMBuildFDiv(b, const_real(ty, 2.0), LLVMBuildFAdd(b, e, const_real(ty, 1.0), ""), ""), "");
  big = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, const_real(ty, 0.0), ""),
                        LLVMBuildFNeg(b, big, ""), big, "");
  LLVMValueRef x2 = LLVMBuildFMul(b, x, x, "");
  LLVMValueRef p = horner(c, x2, poly, MLC_COUNTOF(poly));
  LLVMValueRef small = LLVMBuildFAdd(b, LLVMBuildFMul(b, LLVMBuildFMul(b, p, x2, ""), x, ""), x, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, z, const_real(ty, 0.625), ""), big, small, "");
}

/* erf: the rational approximation of Eigen and XLA, x P(x^2) / Q(x^2) on
 * x clamped to [-4, 4] (erf is +-1 in float32 beyond); absolute error
 * under 5e-7. */
static LLVMValueRef cpu_erf(cg *c, LLVMValueRef x) {
  static const double num[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                               -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                               -1.60960333262415e-02};
  static const double den[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                               -7.37332916720468e-03, -1.42647390514189e-02};
  LLVMBuilderRef b = c->b;
  LLVMValueRef xc = clamp_abs(c, x, 4.0);
  LLVMValueRef x2 = LLVMBuildFMul(b, xc, xc, "");
  LLVMValueRef p = LLVMBuildFMul(b, horner(c, x2, num, MLC_COUNTOF(num)), xc, "");
  return LLVMBuildFDiv(b, p, horner(c, x2, den, MLC_COUNTOF(den)), "");
}

static LLVMValueRef tanh_f32(cg *c, LLVMValueRef x) {
  return c->target->backend->device == MLC_DEVICE_CPU ? cpu_tanh(c, x) : call_libm(c, "tanhf", x);
}

static LLVMValueRef erf_f32(cg *c, LLVMValueRef x) {
  return c->target->backend->device == MLC_DEVICE_CPU ? cpu_erf(c, x) : call_libm(c, "erff", x);
}

/* Intrinsics of floats, in float32 for float16 (converted back after). */
static LLVMValueRef float_intrin(cg *c, mlc_intrin op, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef ty = LLVMTypeOf(x);
  switch (op) {
  case MLC_INTRIN_EXP: return exp_f32(c, x);
  case MLC_INTRIN_LOG: return intrin1(c, "llvm.log", x);
  case MLC_INTRIN_SQRT: return intrin1(c, "llvm.sqrt", x);
  case MLC_INTRIN_RSQRT: return LLVMBuildFDiv(b, const_real(ty, 1), intrin1(c, "llvm.sqrt", x), "");
  case MLC_INTRIN_TANH: return tanh_f32(c, x);
  case MLC_INTRIN_SIGMOID: {
    LLVMValueRef ex = exp_f32(c, LLVMBuildFNeg(b, x, ""));
    return LLVMBuildFDiv(b, const_real(ty, 1), LLVMBuildFAdd(b, const_real(ty, 1), ex, ""), "");
  }
  case MLC_INTRIN_ABS: return intrin1(c, "llvm.fabs", x);
  case MLC_INTRIN_ERF: return erf_f32(c, x);
  case MLC_INTRIN_FLOOR: return intrin1(c, "llvm.floor", x);
  case MLC_INTRIN_CEIL: return intrin1(c, "llvm.ceil", x);
  case MLC_INTRIN_POW: {
    LLVMValueRef args[2] = {x, y};
    return call_intrinsic(c, "llvm.pow", &ty, 1, args, 2);
  }
  case MLC_INTRIN_ROUND: return intrin1(c, "llvm.nearbyint", x);
  case MLC_INTRIN_SIN: return call_libm(c, "sinf", x);
  case MLC_INTRIN_COS: return call_libm(c, "cosf", x);
  case MLC_INTRIN_TAN: return call_libm(c, "tanf", x);
  case MLC_INTRIN_ASIN: return call_libm(c, "asinf", x);
  case MLC_INTRIN_ACOS: return call_libm(c, "acosf", x);
  case MLC_INTRIN_ATAN: return call_libm(c, "atanf", x);
  case MLC_INTRIN_SINH: return call_libm(c, "sinhf", x);
  case MLC_INTRIN_COSH: return call_libm(c, "coshf", x);
  case MLC_INTRIN_ASINH: return call_libm(c, "asinhf", x);
  case MLC_INTRIN_ACOSH: return call_libm(c, "acoshf", x);
  case MLC_INTRIN_ATANH: return call_libm(c, "atanhf", x);
  }
  mlc_unreachable();
}

static LLVMValueRef cg_call(cg *c, const mlc_expr *e) {
  mlc_intrin op = e->call.op;
  const mlc_expr *a0 = e->call.args[0];
  LLVMValueRef x = cg_expr(c, a0);
  if (!mlc_dtype_is_float(e->dtype) &&
      (op == MLC_INTRIN_ABS || op == MLC_INTRIN_FLOOR || op == MLC_INTRIN_CEIL)) {
    x = cg_convert(c, x, a0->dtype, e->dtype);
    if (op != MLC_INTRIN_ABS || e->dtype == MLC_BOOL || e->dtype == MLC_UINT8) return x;
    LLVMValueRef neg = LLVMBuildICmp(c->b, LLVMIntSLT, x, cg_const_int(LLVMTypeOf(x), 0), "");
    return LLVMBuildSelect(c->b, neg, LLVMBuildNeg(c->b, x, ""), x, "");
  }
  /* Compute in float32 (rounded to half after, for float16 results). */
  x = cg_convert(c, x, a0->dtype, MLC_FLOAT32);
  LLVMValueRef y = NULL;
  if (mlc_intrin_nargs(op) > 1) {
    y = cg_convert(c, cg_expr(c, e->call.args[1]), e->call.args[1]->dtype, MLC_FLOAT32);
    unify(c, &x, &y);
  }
  LLVMValueRef r = float_intrin(c, op, x, y);
  mlc_dtype ft = mlc_dtype_is_float(e->dtype) ? e->dtype : MLC_FLOAT32;
  r = cg_convert(c, r, MLC_FLOAT32, ft);
  return cg_convert(c, r, ft, e->dtype);
}

/* T.call_extern on flat buffers: a C call to an external symbol that the
 * final link (or the JIT's symbol lookup) resolves. Values pass as their C
 * types, pointers as element pointers, strides (made constants by
 * lowering) as values. Inside a vectorized loop, one call per lane. */
static LLVMValueRef cg_extern(cg *c, const mlc_expr *e) {
  if (c->lanes) return scalarize(c, e);
  if (mlc_target_is_builtin(e->ext.name)) return cg_builtin_emit(c, e);
  int n = e->ext.n_args;
  LLVMTypeRef *pt = MLC_NEW_ARRAY(c->a, LLVMTypeRef, n ? n : 1);
  LLVMValueRef *av = MLC_NEW_ARRAY(c->a, LLVMValueRef, n ? n : 1);
  for (int i = 0; i < n; i++) {
    const mlc_xarg *x = &e->ext.args[i];
    switch (x->kind) {
    case MLC_XARG_VALUE: {
      const mlc_expr *v = e->ext.kids[x->kid];
      av[i] = cg_expr(c, v);
      pt[i] = cg_scalar_type(c, v->dtype);
      break;
    }
    case MLC_XARG_PTR:
      av[i] = cg_index_ptr(c, cg_lookup_buf(c, x->buf), e->ext.kids[x->kid]);
      pt[i] = LLVMTypeOf(av[i]);
      break;
    case MLC_XARG_STRIDE: { /* lowering replaces these; a 1-D buffer's is 1 */
      int64_t s = 1;
      for (int d = x->buf->ndim - 1; d > x->dim; d--) s *= x->buf->shape[d];
      av[i] = LLVMConstInt(c->t_i32, (unsigned long long)s, 1);
      pt[i] = c->t_i32;
      break;
    }
    }
  }
  LLVMTypeRef fty = LLVMFunctionType(cg_scalar_type(c, e->dtype), pt, (unsigned)n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, e->ext.name);
  if (!fn) fn = LLVMAddFunction(c->mod, e->ext.name, fty);
  else if (LLVMGlobalGetValueType(fn) != fty) /* declared with other argument types */
    fn = LLVMConstBitCast(fn, LLVMPointerType(fty, 0));
  LLVMValueRef r = LLVMBuildCall2(c->b, fty, fn, av, (unsigned)n, "");
  return e->dtype == MLC_BFLOAT16 ? bf16_round(c, r) : r; /* a bfloat16 result passes as float */
}

static LLVMValueRef cg_imm(cg *c, const mlc_expr *e) {
  LLVMTypeRef ty = cg_scalar_type(c, e->dtype);
  if (mlc_dtype_is_float(e->dtype)) {
    double v = e->kind == MLC_EXPR_INT_IMM ? (double)(float)e->int_val : e->float_val;
    if (e->dtype == MLC_BFLOAT16) return LLVMConstReal(ty, mlc_bf16_to_float(mlc_float_to_bf16((float)v)));
    return LLVMConstReal(ty, e->dtype == MLC_FLOAT16 ? v : (double)(float)v);
  }
  int64_t v;
  if (e->kind == MLC_EXPR_INT_IMM) {
    v = e->int_val;
  } else { /* a float literal of an integer type: saturating, as a cast */
    double d = (float)e->float_val;
    double lo = e->dtype == MLC_INT8    ? INT8_MIN
                : e->dtype == MLC_UINT8 ? 0
                : e->dtype == MLC_INT32 ? INT32_MIN
                                        : (double)INT64_MIN;
    double hi = e->dtype == MLC_INT8    ? INT8_MAX
                : e->dtype == MLC_UINT8 ? UINT8_MAX
                : e->dtype == MLC_INT32 ? INT32_MAX
                                        : (double)INT64_MAX;
    v = isnan(d) ? 0 : d <= lo ? (int64_t)lo : d >= hi ? (e->dtype == MLC_INT64 ? INT64_MAX : (int64_t)hi) : (int64_t)d;
    if (e->dtype == MLC_BOOL) v = e->float_val != 0;
  }
  if (e->dtype == MLC_BOOL) v = v != 0;
  return LLVMConstInt(ty, (unsigned long long)v, 1);
}



LLVMValueRef cg_expr(cg *c, const mlc_expr *e) {
  if (c->lanes && !cg_uses_lane(c, e)) {
    /* Lane-invariant: one scalar, broadcast where it meets a vector. */
    int n = c->lanes;
    c->lanes = 0;
    LLVMValueRef v = cg_expr(c, e);
    c->lanes = n;
    return v;
  }
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM: return cg_imm(c, e);
  case MLC_EXPR_VAR:
    if (c->lanes && e->var == c->lane_var) return c->lane_vec;
    return lookup_var(c, e->var);
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
  case MLC_EXPR_OR: return cg_binary(c, e);
  case MLC_EXPR_NOT:
    return LLVMBuildNot(c->b, cg_convert(c, cg_expr(c, e->bin.a), e->bin.a->dtype, MLC_BOOL), "");
  case MLC_EXPR_SELECT: {
    LLVMValueRef cond = cg_convert(c, cg_expr(c, e->sel.cond), e->sel.cond->dtype, MLC_BOOL);
    LLVMValueRef t = cg_convert(c, cg_expr(c, e->sel.t), e->sel.t->dtype, e->dtype);
    LLVMValueRef f = cg_convert(c, cg_expr(c, e->sel.f), e->sel.f->dtype, e->dtype);
    unify(c, &t, &f);
    if (cg_is_vector(cond)) {
      t = cg_splat(c, t, lanes_of(cond));
      f = cg_splat(c, f, lanes_of(cond));
    }
    return LLVMBuildSelect(c->b, cond, t, f, "");
  }
  case MLC_EXPR_IF_THEN_ELSE: return cg_if_then_else(c, e);
  case MLC_EXPR_LOAD: return cg_load(c, e);
  case MLC_EXPR_CAST: return cg_convert(c, cg_expr(c, e->cast.value), e->cast.value->dtype, e->dtype);
  case MLC_EXPR_CALL: return cg_call(c, e);
  case MLC_EXPR_CALL_EXTERN: return cg_extern(c, e);
  }
  mlc_unreachable();
}

/* On CPUs, an int32 index's sums and products are computed in int64 over
 * its int32 leaves (vars, loads, quotients) sign-extended: the address is
 * then a linear form in those leaves that LLVM's alias analysis reads
 * directly. Given sext(i32 chain) it re-derives the chain's known bits in
 * every query, which made GVN take half of a large unrolled candidate's
 * build time (conv2d: 2.3 s -> 1.2 s). The values are equal: an index's
 * arithmetic does not overflow (see in_index). GPUs keep int32, their
 * fast integer width. */
static mlc_expr *widen_index(mlc_arena *a, mlc_expr *e) {
  if (e->dtype != MLC_INT32) return e;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM: return mlc_int_t(a, MLC_INT64, e->int_val);
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL: return mlc_binary(a, e->kind, widen_index(a, e->bin.a), widen_index(a, e->bin.b));
  default: return mlc_cast(a, MLC_INT64, e);
  }
}

LLVMValueRef cg_index(cg *c, const mlc_expr *e) {
  bool saved = c->in_index;
  c->in_index = true;
  if (mlc_target_device(c->target) == MLC_DEVICE_CPU) e = widen_index(c->a, (mlc_expr *)e);
  LLVMValueRef v = cg_expr(c, e);
  c->in_index = saved;
  return v;
}

LLVMValueRef cg_index_ptr(cg *c, cg_buf *b, const mlc_expr *e) {
  return cg_elem_ptr(c, b, cg_index(c, e));
}
