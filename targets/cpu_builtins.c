/* CPU builtins: T.call_extern names that the LLVM CPU backend expands
 * inline into target instructions instead of calling a C function (names
 * in the project's mlc_ prefix, which user C functions must not use); each
 * needs a CPU feature, and a target without it refuses the function at build time
 * (cg_builtin_check) rather than letting LLVM fail to select.
 *
 *   T.call_extern("int32", "mlc_x86_vpdpbusd_16x4", C.access_ptr("rw"),
 *                 A.access_ptr("r"), B.access_ptr("r"), B.strides[d])
 *
 * C: 16 int32, A: 4 uint8, B: 16 rows of 4 int8, row i at B + i * stride
 * elements (stride 4: one contiguous 64-byte tile, TVM's dot_16x4 layout).
 * C[i] += sum_k A[k] * B[i][k] in int32, wrapping, as one AVX-512 VNNI
 * vpdpbusd (llvm.x86.avx512.vpdpbusd.512: the accumulator, A's four bytes
 * broadcast to all 16 lanes, B's 64 bytes). Returns 0. The interpreter
 * computes the same with a C function of the same name (schedule/
 * intrin_cpu.c registers it), so tensorized code runs there too.
 *
 *   T.call_extern("int32", "mlc_x86_vdpbf16ps_16x2", C.access_ptr("rw"),
 *                 A.access_ptr("r"), B.access_ptr("r"), B.strides[d])
 *
 * C: 16 float32, A: 2 bfloat16, B: 16 rows of 2 bfloat16 (stride in
 * elements; 2: one 64-byte tile). C[i] += A[1] * B[i][1], then += A[0] *
 * B[i][0], as one AVX-512 BF16 vdpbf16ps (llvm.x86.avx512bf16.dpbf16ps.512,
 * whose bfloat16 pairs LLVM 14 passes as <16 x i32>: A's pair broadcast,
 * B's 16 pairs).
 */
#include "targets/llvm_internal.h"

#include <string.h>

typedef struct builtin {
  const char *name;
  const char *feature; /* LLVM feature name the target must turn on */
  int n_args;
  mlc_xarg_kind kinds[4];
  mlc_dtype dtypes[4]; /* PTR: element type; VALUE: ignored (any integer) */
  LLVMValueRef (*emit)(cg *c, const mlc_expr *e); /* scalar mode, args checked */
} builtin;

static LLVMValueRef emit_vpdpbusd(cg *c, const mlc_expr *e);
static LLVMValueRef emit_vdpbf16ps(cg *c, const mlc_expr *e);

static const builtin builtins[] = {
    {"mlc_x86_vpdpbusd_16x4", "avx512vnni", 4,
     {MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_VALUE},
     {MLC_INT32, MLC_UINT8, MLC_INT8, MLC_INT32}, emit_vpdpbusd},
    {"mlc_x86_vdpbf16ps_16x2", "avx512bf16", 4,
     {MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_VALUE},
     {MLC_FLOAT32, MLC_BFLOAT16, MLC_BFLOAT16, MLC_INT32}, emit_vdpbf16ps},
};

static const builtin *find(const char *name) {
  for (int i = 0; i < MLC_COUNTOF(builtins); i++)
    if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
  return NULL;
}

bool cg_is_builtin(const char *name) { return find(name) != NULL; }

bool cg_builtin_check(const mlc_target *t, const mlc_expr *e, mlc_error *err) {
  const builtin *b = find(e->ext.name);
  if (!b) return true;
  if (!mlc_target_has_feature(t, b->feature))
    return mlc_error_set(err, "%s needs the CPU feature +%s, which target \"%s\" lacks", b->name,
                         b->feature, t->str);
  if (e->ext.n_args != b->n_args)
    return mlc_error_set(err, "%s takes %d arguments, got %d", b->name, b->n_args, e->ext.n_args);
  for (int i = 0; i < b->n_args; i++) {
    const mlc_xarg *x = &e->ext.args[i];
    if (x->kind != b->kinds[i])
      return mlc_error_set(err, "%s: argument %d must be %s", b->name, i + 1,
                           b->kinds[i] == MLC_XARG_PTR ? "a buffer pointer" : "an integer value");
    if (x->kind == MLC_XARG_PTR && x->buf->dtype != b->dtypes[i])
      return mlc_error_set(err, "%s: argument %d must point to %s, not %s", b->name, i + 1,
                           mlc_dtype_name(b->dtypes[i]), mlc_dtype_name(x->buf->dtype));
    if (x->kind == MLC_XARG_VALUE && !mlc_dtype_is_int(e->ext.kids[x->kid]->dtype))
      return mlc_error_set(err, "%s: argument %d must be an integer", b->name, i + 1);
  }
  return true;
}

static LLVMValueRef arg_ptr(cg *c, const mlc_expr *e, int i, LLVMTypeRef elem) {
  const mlc_xarg *x = &e->ext.args[i];
  LLVMValueRef p = cg_index_ptr(c, cg_lookup_buf(c, x->buf), e->ext.kids[x->kid]);
  return LLVMBuildBitCast(c->b, p, LLVMPointerType(elem, 0), "");
}

static LLVMValueRef load_aligned(cg *c, LLVMTypeRef ty, LLVMValueRef p, unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(c->b, ty, p, "");
  LLVMSetAlignment(v, align);
  return v;
}

/* B's 16 rows of 4 bytes as <16 x i32>: one load when rows are adjacent,
 * else row by row; the stride counts elements of elem_bytes bytes. */
static LLVMValueRef load_rows(cg *c, const mlc_expr *e, LLVMTypeRef v16, int elem_bytes) {
  LLVMValueRef pb = arg_ptr(c, e, 2, c->t_i8);
  const mlc_expr *stride = e->ext.kids[e->ext.args[3].kid];
  int64_t s;
  if (mlc_expr_is_const_int(stride, &s) && s * elem_bytes == 4)
    return load_aligned(c, v16, LLVMBuildBitCast(c->b, pb, LLVMPointerType(v16, 0), ""), 1);
  LLVMValueRef sv = cg_expr(c, stride);
  if (LLVMTypeOf(sv) != c->t_i64) sv = LLVMBuildSExt(c->b, sv, c->t_i64, "");
  if (elem_bytes != 1)
    sv = LLVMBuildMul(c->b, sv, LLVMConstInt(c->t_i64, (unsigned long long)elem_bytes, 0), "");
  LLVMValueRef out = LLVMGetUndef(v16);
  for (int i = 0; i < 16; i++) {
    LLVMValueRef off = LLVMBuildMul(c->b, sv, LLVMConstInt(c->t_i64, (unsigned long long)i, 0), "");
    LLVMValueRef p = LLVMBuildInBoundsGEP2(c->b, c->t_i8, pb, &off, 1, "");
    p = LLVMBuildBitCast(c->b, p, LLVMPointerType(c->t_i32, 0), "");
    out = LLVMBuildInsertElement(c->b, out, load_aligned(c, c->t_i32, p, 1),
                                 LLVMConstInt(c->t_i32, (unsigned long long)i, 0), "");
  }
  return out;
}

static LLVMValueRef emit_vpdpbusd(cg *c, const mlc_expr *e) {
  LLVMTypeRef v16 = LLVMVectorType(c->t_i32, 16);
  LLVMValueRef pc = LLVMBuildBitCast(c->b, arg_ptr(c, e, 0, c->t_i32), LLVMPointerType(v16, 0), "");
  LLVMValueRef acc = load_aligned(c, v16, pc, 4);
  LLVMValueRef a4 = load_aligned(c, c->t_i32, arg_ptr(c, e, 1, c->t_i32), 1);
  LLVMValueRef a = cg_splat(c, a4, 16);
  LLVMValueRef b = load_rows(c, e, v16, 1);
  const char *name = "llvm.x86.avx512.vpdpbusd.512";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  MLC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
  LLVMValueRef args[3] = {acc, a, b};
  LLVMValueRef r = LLVMBuildCall2(c->b, fty, fn, args, 3, "");
  LLVMSetAlignment(LLVMBuildStore(c->b, r, pc), 4);
  return LLVMConstInt(c->t_i32, 0, 0);
}

/* A call of the non-overloaded LLVM intrinsic `name`. */
static LLVMValueRef call_intrinsic(cg *c, const char *name, int n, LLVMValueRef *args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  MLC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
  return LLVMBuildCall2(c->b, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef emit_vdpbf16ps(cg *c, const mlc_expr *e) {
  LLVMTypeRef v16 = LLVMVectorType(c->t_i32, 16), f16 = LLVMVectorType(c->t_f32, 16);
  LLVMValueRef pc = LLVMBuildBitCast(c->b, arg_ptr(c, e, 0, c->t_f32), LLVMPointerType(f16, 0), "");
  LLVMValueRef acc = load_aligned(c, f16, pc, 4);
  LLVMValueRef a2 = load_aligned(c, c->t_i32, arg_ptr(c, e, 1, c->t_i32), 2);
  LLVMValueRef a = cg_splat(c, a2, 16);
  LLVMValueRef b = load_rows(c, e, v16, 2);
  LLVMValueRef r = call_intrinsic(c, "llvm.x86.avx512bf16.dpbf16ps.512", 3, (LLVMValueRef[]){acc, a, b});
  LLVMSetAlignment(LLVMBuildStore(c->b, r, pc), 4);
  return LLVMConstInt(c->t_i32, 0, 0);
}

/* Requires cg_builtin_check to have accepted e; scalar mode. */
LLVMValueRef cg_builtin_emit(cg *c, const mlc_expr *e) {
  const builtin *b = find(e->ext.name);
  MLC_ASSERT(b != NULL);
  return b->emit(c, e);
}
