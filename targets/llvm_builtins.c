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
 *   T.call_extern("int32", "mlc_x86_vpdpbusd_block", C.access_ptr("rw"),
 *                 A.access_ptr("r"), B.access_ptr("r"), C.strides[0],
 *                 A.strides[0], B.strides[0], B.strides[1], B.strides[2],
 *                 R, NB, K)
 *
 * A register-blocked micro-kernel: C is R rows of NB * 16 int32, A R rows
 * of K uint8, B NB column blocks of K / 4 tiles of 16 rows of 4 int8 (the
 * strides as named, in elements). C[r][j] += sum_k A[r][k] * W[j][k], W
 * the tiles' weights, as a loop over the K / 4 steps that keeps the R x NB
 * accumulators in vector registers: loaded before it, one vpdpbusd per
 * accumulator and step (A's four bytes of row r broadcast, B's 64 bytes of
 * block n), stored after it. R, NB and K are constants (1 <= R <= 16,
 * 1 <= NB <= 8, K a positive multiple of 4).
 *
 *   T.call_extern("int32", "mlc_x86_vdpbf16ps_block", <the same arguments>)
 *
 * The same micro-kernel for AVX-512 BF16: C float32, A and B bfloat16, B's
 * lanes pairs (B.strides[2] == 2 when packed), K a positive multiple of 2;
 * one vdpbf16ps per accumulator and K pair (A's pair of row r broadcast,
 * B's 16 pairs of block n), in K order, so each output sees the same
 * sequence of fused steps as the one-instruction builtin below.
 *
 *   T.call_extern("int32", "mlc_x86_tdpbusd_block", <the same arguments>)
 *
 * The same product on AMX: R / 16 x NB accumulator tiles of 16 x 16 int32
 * (R a multiple of 16, at most 8 tile registers in all with the R / 16 A
 * tiles and NB B tiles), a loop over K / 64 steps of tileloadd (A: 16
 * rows of 64 bytes; B: 16 K-steps of one column block's 64 bytes, so its
 * lanes must be contiguous: B.strides[2] == 4) and tdpbusd, the
 * accumulators loaded before and stored after it. LLVM's tile
 * configuration pass writes the ldtilecfg; the first call in a process
 * asks Linux for the AMX state through libmlcrt's mlc_rt_amx_enable
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), which tile
 * instructions need.
 *   T.call_extern("int32", "mlc_x86_tdpbf16ps_block", <the same arguments>)
 *
 * The bfloat16 product on AMX BF16 (tdpbf16ps): C float32, A and B
 * bfloat16, B's lanes pairs (B.strides[2] == 2), K a multiple of 32 (64
 * bytes of A per step); otherwise as tdpbusd's.
 *
 *   T.call_extern("int32", "mlc_x86_vpdpbusd_block_init", <the same arguments>)
 *   (and mlc_x86_tdpbusd_block_init, mlc_x86_vdpbf16ps_block_init,
 *   mlc_x86_tdpbf16ps_block_init)
 *
 * Each micro-kernel again, its accumulators starting from zero (zeroed
 * registers, AMX tilezero) instead of loaded from C, which is only
 * written: C[r][j] = sum_k A[r][k] * W[j][k]. A block whose whole
 * reduction is in one call computes its init so (the _init intrinsic
 * families); on AMX a tile load of an accumulator just stored as zeros
 * stalls.
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
  const char *feature;  /* LLVM feature name the target must turn on ... */
  const char *feature2; /* ... and another one (NULL: none) */
  int n_args;
  mlc_xarg_kind kinds[11];
  mlc_dtype dtypes[11]; /* PTR: element type; VALUE: ignored (any integer) */
  bool (*check)(const mlc_expr *e, mlc_error *err); /* optional: more conditions */
  LLVMValueRef (*emit)(cg *c, const mlc_expr *e, bool zero); /* scalar mode, args checked */
  bool zero; /* passed to emit: accumulators start from zero, not from C */
} builtin;

static LLVMValueRef emit_vpdpbusd(cg *c, const mlc_expr *e, bool zero);
static LLVMValueRef emit_vpdpbusd_block(cg *c, const mlc_expr *e, bool zero);
static bool check_block(const mlc_expr *e, mlc_error *err);
static LLVMValueRef emit_tdpbusd_block(cg *c, const mlc_expr *e, bool zero);
static LLVMValueRef emit_tdpbf16ps_block(cg *c, const mlc_expr *e, bool zero);
static bool check_amx_block(const mlc_expr *e, mlc_error *err);
static LLVMValueRef emit_vdpbf16ps(cg *c, const mlc_expr *e, bool zero);
static LLVMValueRef emit_vdpbf16ps_block(cg *c, const mlc_expr *e, bool zero);
static bool check_bf16_block(const mlc_expr *e, mlc_error *err);

#define V MLC_XARG_VALUE
#define BLOCK_KINDS {MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_PTR, V, V, V, V, V, V, V, V}
#define INT8_BLOCK(name, f1, f2, check, emit, zero)                                             \
  {name, f1, f2, 11, BLOCK_KINDS, {MLC_INT32, MLC_UINT8, MLC_INT8}, check, emit, zero}
#define BF16_BLOCK(name, zero)                                                                   \
  {name, "avx512bf16", NULL, 11, BLOCK_KINDS, {MLC_FLOAT32, MLC_BFLOAT16, MLC_BFLOAT16},        \
   check_bf16_block, emit_vdpbf16ps_block, zero}
static const builtin builtins[] = {
    {"mlc_x86_vpdpbusd_16x4", "avx512vnni", NULL, 4,
     {MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_PTR, V},
     {MLC_INT32, MLC_UINT8, MLC_INT8, MLC_INT32}, NULL, emit_vpdpbusd, false},
    INT8_BLOCK("mlc_x86_vpdpbusd_block", "avx512vnni", NULL, check_block, emit_vpdpbusd_block, false),
    INT8_BLOCK("mlc_x86_vpdpbusd_block_init", "avx512vnni", NULL, check_block, emit_vpdpbusd_block, true),
    INT8_BLOCK("mlc_x86_tdpbusd_block", "amx-int8", "amx-tile", check_amx_block, emit_tdpbusd_block, false),
    INT8_BLOCK("mlc_x86_tdpbusd_block_init", "amx-int8", "amx-tile", check_amx_block, emit_tdpbusd_block,
               true),
    {"mlc_x86_vdpbf16ps_16x2", "avx512bf16", NULL, 4,
     {MLC_XARG_PTR, MLC_XARG_PTR, MLC_XARG_PTR, V},
     {MLC_FLOAT32, MLC_BFLOAT16, MLC_BFLOAT16, MLC_INT32}, NULL, emit_vdpbf16ps, false},
    BF16_BLOCK("mlc_x86_vdpbf16ps_block", false),
    BF16_BLOCK("mlc_x86_vdpbf16ps_block_init", true),
    {"mlc_x86_tdpbf16ps_block", "amx-bf16", "amx-tile", 11, BLOCK_KINDS, {MLC_FLOAT32, MLC_BFLOAT16, MLC_BFLOAT16},
     check_amx_block, emit_tdpbf16ps_block, false},
    {"mlc_x86_tdpbf16ps_block_init", "amx-bf16", "amx-tile", 11, BLOCK_KINDS,
     {MLC_FLOAT32, MLC_BFLOAT16, MLC_BFLOAT16}, check_amx_block, emit_tdpbf16ps_block, true},
};
#undef BF16_BLOCK
#undef INT8_BLOCK
#undef BLOCK_KINDS
#undef V

static const builtin *find(const char *name) {
  for (int i = 0; i < MLC_COUNTOF(builtins); i++)
    if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
  return NULL;
}

bool mlc_target_is_builtin(const char *name) { return find(name) != NULL; }

bool cg_builtin_check(const mlc_target *t, const mlc_expr *e, mlc_error *err) {
  const builtin *b = find(e->ext.name);
  if (!b) return true;
  for (int i = 0; i < 2; i++) {
    const char *f = i ? b->feature2 : b->feature;
    if (f && !mlc_target_has_feature(t, f))
      return mlc_error_set(err, "%s needs the CPU feature +%s, which target \"%s\" lacks", b->name, f,
                           t->str);
  }
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
  return !b->check || b->check(e, err);
}

static const mlc_expr *arg_value(const mlc_expr *e, int i) { return e->ext.kids[e->ext.args[i].kid]; }

/* The micro-kernel's shape arguments are constants in range, K a
 * multiple of the K elements one step takes per lane (k_step). */
static bool check_shape(const mlc_expr *e, int64_t k_step, mlc_error *err) {
  static const int64_t max[3] = {16, 8, 4096};
  static const char *what[3] = {"R (rows)", "NB (column blocks)", "K"};
  for (int i = 0; i < 3; i++) {
    int64_t v;
    if (!mlc_expr_is_const_int(arg_value(e, 8 + i), &v) || v < 1 || v > max[i] || (i == 2 && v % k_step))
      return i == 2 ? mlc_error_set(err, "%s: argument 11, K, must be a constant in [1, 4096] and a "
                                    "multiple of %lld", e->ext.name, (long long)k_step)
                    : mlc_error_set(err, "%s: argument %d, %s, must be a constant in [1, %lld]", e->ext.name,
                                    9 + i, what[i], (long long)max[i]);
  }
  return true;
}

static bool check_block(const mlc_expr *e, mlc_error *err) { return check_shape(e, 4, err); }
static bool check_bf16_block(const mlc_expr *e, mlc_error *err) { return check_shape(e, 2, err); }

/* K elements of one AMX step: 64 bytes of A's row (int8: 64, bfloat16:
 * 32), and the elements of one lane's group in B (4, 2). */
static int64_t amx_k_step(const mlc_expr *e) { return strstr(e->ext.name, "bf16") ? 32 : 64; }

/* R 16 or 32, NB 1 or 2 (with their A and B tiles, at most the 8 tile
 * registers), K a multiple of one step up to 4096, B's lanes contiguous. */
static bool check_amx_block(const mlc_expr *e, mlc_error *err) {
  int64_t r, nb, k, lane, step = amx_k_step(e), group = step / 16;
  if (!mlc_expr_is_const_int(arg_value(e, 8), &r) || !mlc_expr_is_const_int(arg_value(e, 9), &nb) ||
      !mlc_expr_is_const_int(arg_value(e, 10), &k) || (r != 16 && r != 32) || nb < 1 || nb > 2 ||
      k < step || k % step || k > 4096)
    return mlc_error_set(err, "%s: R (16 or 32), NB (1 or 2) and K (a multiple of %lld, at most 4096) "
                         "must be constants", e->ext.name, (long long)step);
  if (!mlc_expr_is_const_int(arg_value(e, 7), &lane) || lane != group)
    return mlc_error_set(err, "%s: B's 16 lanes must be contiguous (B.strides[2] == %lld)", e->ext.name,
                         (long long)group);
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

static LLVMValueRef emit_vpdpbusd(cg *c, const mlc_expr *e, bool zero) {
  MLC_UNUSED(zero);
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

/* A value argument as i64. */
static LLVMValueRef arg_i64(cg *c, const mlc_expr *e, int i) {
  LLVMValueRef v = cg_expr(c, arg_value(e, i));
  return LLVMTypeOf(v) == c->t_i64 ? v : LLVMBuildSExt(c->b, v, c->t_i64, "");
}

/* p + off elements of type elem. */
static LLVMValueRef gep(cg *c, LLVMTypeRef elem, LLVMValueRef p, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(c->b, elem, p, &off, 1, "");
}

static LLVMValueRef i64c(cg *c, int64_t v) { return LLVMConstInt(c->t_i64, (unsigned long long)v, 1); }

/* B's 16 rows of 4 bytes at pb (i8*), rows `stride` bytes apart (a
 * constant 4: one load). */
static LLVMValueRef load_tile(cg *c, LLVMValueRef pb, LLVMValueRef stride, bool packed) {
  LLVMTypeRef v16 = LLVMVectorType(c->t_i32, 16);
  if (packed) return load_aligned(c, v16, LLVMBuildBitCast(c->b, pb, LLVMPointerType(v16, 0), ""), 1);
  LLVMValueRef out = LLVMGetUndef(v16);
  for (int i = 0; i < 16; i++) {
    LLVMValueRef p = gep(c, c->t_i8, pb, LLVMBuildMul(c->b, stride, i64c(c, i), ""));
    p = LLVMBuildBitCast(c->b, p, LLVMPointerType(c->t_i32, 0), "");
    out = LLVMBuildInsertElement(c->b, out, load_aligned(c, c->t_i32, p, 1),
                                 LLVMConstInt(c->t_i32, (unsigned long long)i, 0), "");
  }
  return out;
}

enum { BLOCK_MAX_ACC = 16 * 8 };

/* The register-blocked micro-kernel of one 16-lane dot-product
 * instruction (`intrin`: accumulator, A's group broadcast, B's 16 groups,
 * each 32 bits: group elements of elem_bytes bytes per lane), for every
 * builtin with vpdpbusd_block's arguments. */
static LLVMValueRef emit_dot_block(cg *c, const mlc_expr *e, const char *intrin, LLVMTypeRef acc_elem,
                                   int elem_bytes, bool zero) {
  int64_t rows, nb, kb, sb2c, group = 4 / elem_bytes;
  MLC_ASSERT(mlc_expr_is_const_int(arg_value(e, 8), &rows) &&
             mlc_expr_is_const_int(arg_value(e, 9), &nb) && mlc_expr_is_const_int(arg_value(e, 10), &kb));
  MLC_ASSERT(rows * nb <= BLOCK_MAX_ACC && kb % group == 0);
  bool packed = mlc_expr_is_const_int(arg_value(e, 7), &sb2c) && sb2c == group;
  LLVMTypeRef v16 = LLVMVectorType(acc_elem, 16), v16p = LLVMPointerType(v16, 0);
  LLVMTypeRef elem = LLVMIntTypeInContext(c->ctx, (unsigned)(8 * elem_bytes));
  LLVMValueRef pc = arg_ptr(c, e, 0, acc_elem), pa = arg_ptr(c, e, 1, elem);
  LLVMValueRef pb = arg_ptr(c, e, 2, elem);
  LLVMValueRef sc = arg_i64(c, e, 3), sa = arg_i64(c, e, 4), sb0 = arg_i64(c, e, 5);
  LLVMValueRef sb1 = arg_i64(c, e, 6);
  LLVMValueRef sb2 = LLVMBuildMul(c->b, arg_i64(c, e, 7), i64c(c, elem_bytes), ""); /* bytes */
  LLVMValueRef cptr[BLOCK_MAX_ACC], acc[BLOCK_MAX_ACC], phi[BLOCK_MAX_ACC], bcol[8];
  for (int64_t r = 0; r < rows; r++)
    for (int64_t n = 0; n < nb; n++) {
      LLVMValueRef off = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sc, i64c(c, r), ""), i64c(c, 16 * n), "");
      cptr[r * nb + n] = LLVMBuildBitCast(c->b, gep(c, acc_elem, pc, off), v16p, "");
      acc[r * nb + n] = zero ? LLVMConstNull(v16) : load_aligned(c, v16, cptr[r * nb + n], 4);
    }
  for (int64_t n = 0; n < nb; n++) bcol[n] = gep(c, elem, pb, LLVMBuildMul(c->b, sb0, i64c(c, n), ""));
  unsigned id = LLVMLookupIntrinsicID(intrin, strlen(intrin));
  MLC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
  /* for kk in [0, K / group): the accumulators are the loop's phis */
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef loop = cg_new_block(c, "dot.k"), done = cg_new_block(c, "dot.end");
  LLVMBuildBr(c->b, loop);
  LLVMPositionBuilderAtEnd(c->b, loop);
  LLVMValueRef kk = LLVMBuildPhi(c->b, c->t_i64, "kk");
  for (int64_t i = 0; i < rows * nb; i++) phi[i] = LLVMBuildPhi(c->b, v16, "acc");
  LLVMValueRef bt[8];
  for (int64_t n = 0; n < nb; n++) {
    LLVMValueRef p = gep(c, elem, bcol[n], LLVMBuildMul(c->b, sb1, kk, ""));
    bt[n] = load_tile(c, LLVMBuildBitCast(c->b, p, LLVMPointerType(c->t_i8, 0), ""), sb2, packed);
  }
  LLVMValueRef next[BLOCK_MAX_ACC];
  for (int64_t r = 0; r < rows; r++) {
    LLVMValueRef off = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sa, i64c(c, r), ""),
                                    LLVMBuildMul(c->b, kk, i64c(c, group), ""), "");
    LLVMValueRef p = LLVMBuildBitCast(c->b, gep(c, elem, pa, off), LLVMPointerType(c->t_i32, 0), "");
    LLVMValueRef a = cg_splat(c, load_aligned(c, c->t_i32, p, (unsigned)elem_bytes), 16);
    for (int64_t n = 0; n < nb; n++) {
      LLVMValueRef args[3] = {phi[r * nb + n], a, bt[n]};
      next[r * nb + n] = LLVMBuildCall2(c->b, fty, fn, args, 3, "");
    }
  }
  LLVMValueRef kn = LLVMBuildAdd(c->b, kk, i64c(c, 1), "");
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kn, i64c(c, kb / group), ""), loop, done);
  LLVMValueRef k0 = i64c(c, 0);
  LLVMAddIncoming(kk, &k0, &pre, 1);
  LLVMAddIncoming(kk, &kn, &loop, 1);
  for (int64_t i = 0; i < rows * nb; i++) {
    LLVMAddIncoming(phi[i], &acc[i], &pre, 1);
    LLVMAddIncoming(phi[i], &next[i], &loop, 1);
  }
  LLVMPositionBuilderAtEnd(c->b, done);
  for (int64_t i = 0; i < rows * nb; i++) LLVMSetAlignment(LLVMBuildStore(c->b, next[i], cptr[i]), 4);
  return LLVMConstInt(c->t_i32, 0, 0);
}

static LLVMValueRef emit_vpdpbusd_block(cg *c, const mlc_expr *e, bool zero) {
  return emit_dot_block(c, e, "llvm.x86.avx512.vpdpbusd.512", c->t_i32, 1, zero);
}

/* LLVM 14's dpbf16ps takes its bfloat16 pairs as <16 x i32>, which is
 * what the 32-bit groups load as. */
static LLVMValueRef emit_vdpbf16ps_block(cg *c, const mlc_expr *e, bool zero) {
  return emit_dot_block(c, e, "llvm.x86.avx512bf16.dpbf16ps.512", c->t_f32, 2, zero);
}

/* Once per loaded object (a flag in the module): the runtime's
 * mlc_rt_amx_enable, Linux's permission to use the AMX tile state. */
static void amx_permission(cg *c) {
  LLVMValueRef flag = LLVMGetNamedGlobal(c->mod, "mlc.amx_permission");
  if (!flag) {
    flag = LLVMAddGlobal(c->mod, c->t_i32, "mlc.amx_permission");
    LLVMSetInitializer(flag, LLVMConstInt(c->t_i32, 0, 0));
    LLVMSetLinkage(flag, LLVMInternalLinkage);
  }
  LLVMBasicBlockRef ask = cg_new_block(c, "amx.perm"), go = cg_new_block(c, "amx.go");
  LLVMValueRef have = LLVMBuildLoad2(c->b, c->t_i32, flag, "");
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, have, LLVMConstInt(c->t_i32, 0, 0), ""), ask, go);
  LLVMPositionBuilderAtEnd(c->b, ask);
  cg_call_named(c, "mlc_rt_amx_enable", c->t_i32, NULL, NULL, 0);
  LLVMBuildStore(c->b, LLVMConstInt(c->t_i32, 1, 0), flag);
  LLVMBuildBr(c->b, go);
  LLVMPositionBuilderAtEnd(c->b, go);
}

/* A call of the non-overloaded LLVM intrinsic `name`. */
static LLVMValueRef call_intrinsic(cg *c, const char *name, int n, LLVMValueRef *args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  MLC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
  return LLVMBuildCall2(c->b, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef i16c(cg *c, int v) { return LLVMConstInt(c->t_i16, (unsigned long long)v, 0); }

/* A 16 x 64-byte tile at p (i8*), rows `stride` bytes apart. */
static LLVMValueRef tile_load(cg *c, LLVMValueRef p, LLVMValueRef stride) {
  LLVMValueRef args[4] = {i16c(c, 16), i16c(c, 64), p, stride};
  return call_intrinsic(c, "llvm.x86.tileloadd64.internal", 4, args);
}

enum { AMX_MAX_ACC = 4 };

/* The AMX micro-kernel of one tile dot-product instruction (`intrin`,
 * e.g. llvm.x86.tdpbusd.internal) over operands of elem_bytes bytes; every
 * step takes 64 bytes of each A row. */
static LLVMValueRef emit_amx_block(cg *c, const mlc_expr *e, bool zero, const char *intrin, int elem_bytes) {
  int64_t rows, nb, kb, step = 64 / elem_bytes;
  MLC_ASSERT(mlc_expr_is_const_int(arg_value(e, 8), &rows) &&
             mlc_expr_is_const_int(arg_value(e, 9), &nb) && mlc_expr_is_const_int(arg_value(e, 10), &kb));
  int64_t mt = rows / 16;
  MLC_ASSERT(mt * nb <= AMX_MAX_ACC && mt <= 2 && nb <= 2 && kb % step == 0);
  amx_permission(c);
  LLVMValueRef pc = arg_ptr(c, e, 0, c->t_i8), pa = arg_ptr(c, e, 1, c->t_i8), pb = arg_ptr(c, e, 2, c->t_i8);
  LLVMValueRef sc = LLVMBuildMul(c->b, arg_i64(c, e, 3), i64c(c, 4), ""); /* bytes */
  LLVMValueRef eb = i64c(c, elem_bytes);
  LLVMValueRef sa = LLVMBuildMul(c->b, arg_i64(c, e, 4), eb, ""), sb0 = LLVMBuildMul(c->b, arg_i64(c, e, 5), eb, "");
  LLVMValueRef sb1 = LLVMBuildMul(c->b, arg_i64(c, e, 6), eb, "");
  LLVMValueRef cptr[AMX_MAX_ACC], acc[AMX_MAX_ACC], phi[AMX_MAX_ACC], next[AMX_MAX_ACC];
  for (int64_t m = 0; m < mt; m++)
    for (int64_t n = 0; n < nb; n++) {
      LLVMValueRef off = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sc, i64c(c, 16 * m), ""), i64c(c, 64 * n), "");
      cptr[m * nb + n] = gep(c, c->t_i8, pc, off);
      acc[m * nb + n] = zero ? call_intrinsic(c, "llvm.x86.tilezero.internal", 2,
                                              (LLVMValueRef[]){i16c(c, 16), i16c(c, 64)})
                             : tile_load(c, cptr[m * nb + n], sc);
    }
  LLVMTypeRef amx = LLVMX86AMXTypeInContext(c->ctx);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef loop = cg_new_block(c, "amx.k"), done = cg_new_block(c, "amx.end");
  LLVMBuildBr(c->b, loop);
  LLVMPositionBuilderAtEnd(c->b, loop);
  LLVMValueRef kk = LLVMBuildPhi(c->b, c->t_i64, "kk");
  for (int64_t i = 0; i < mt * nb; i++) phi[i] = LLVMBuildPhi(c->b, amx, "acc");
  LLVMValueRef at[2], bt[2];
  for (int64_t m = 0; m < mt; m++) {
    LLVMValueRef off = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sa, i64c(c, 16 * m), ""),
                                    LLVMBuildMul(c->b, kk, i64c(c, 64), ""), "");
    at[m] = tile_load(c, gep(c, c->t_i8, pa, off), sa);
  }
  for (int64_t n = 0; n < nb; n++) {
    LLVMValueRef off = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sb0, i64c(c, n), ""),
                                    LLVMBuildMul(c->b, LLVMBuildMul(c->b, kk, i64c(c, 16), ""), sb1, ""), "");
    bt[n] = tile_load(c, gep(c, c->t_i8, pb, off), sb1);
  }
  for (int64_t m = 0; m < mt; m++)
    for (int64_t n = 0; n < nb; n++) {
      LLVMValueRef args[6] = {i16c(c, 16), i16c(c, 64), i16c(c, 64), phi[m * nb + n], at[m], bt[n]};
      next[m * nb + n] = call_intrinsic(c, intrin, 6, args);
    }
  LLVMValueRef kn = LLVMBuildAdd(c->b, kk, i64c(c, 1), "");
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kn, i64c(c, kb / step), ""), loop, done);
  LLVMValueRef k0 = i64c(c, 0);
  LLVMAddIncoming(kk, &k0, &pre, 1);
  LLVMAddIncoming(kk, &kn, &loop, 1);
  for (int64_t i = 0; i < mt * nb; i++) {
    LLVMAddIncoming(phi[i], &acc[i], &pre, 1);
    LLVMAddIncoming(phi[i], &next[i], &loop, 1);
  }
  LLVMPositionBuilderAtEnd(c->b, done);
  for (int64_t i = 0; i < mt * nb; i++) {
    LLVMValueRef args[5] = {i16c(c, 16), i16c(c, 64), cptr[i], sc, next[i]};
    call_intrinsic(c, "llvm.x86.tilestored64.internal", 5, args);
  }
  return LLVMConstInt(c->t_i32, 0, 0);
}

static LLVMValueRef emit_tdpbusd_block(cg *c, const mlc_expr *e, bool zero) {
  return emit_amx_block(c, e, zero, "llvm.x86.tdpbusd.internal", 1);
}

/* LLVM 14's tdpbf16ps takes the tiles as x86_amx like tdpbusd's. */
static LLVMValueRef emit_tdpbf16ps_block(cg *c, const mlc_expr *e, bool zero) {
  return emit_amx_block(c, e, zero, "llvm.x86.tdpbf16ps.internal", 2);
}

double mlc_target_extern_work(const mlc_expr *call) {
  if (call->kind != MLC_EXPR_CALL_EXTERN) return 0;
  const builtin *b = find(call->ext.name);
  if (!b || call->ext.n_args != b->n_args) return 0;
  if (b->emit == emit_vpdpbusd) return 16 * 4;
  if (b->emit == emit_vdpbf16ps) return 16 * 2;
  int64_t r, nb, k;
  if (b->n_args != 11 || call->ext.args[8].kind != MLC_XARG_VALUE ||
      call->ext.args[9].kind != MLC_XARG_VALUE || call->ext.args[10].kind != MLC_XARG_VALUE ||
      !mlc_expr_is_const_int(arg_value(call, 8), &r) || !mlc_expr_is_const_int(arg_value(call, 9), &nb) ||
      !mlc_expr_is_const_int(arg_value(call, 10), &k))
    return 0;
  return (double)r * (double)nb * 16.0 * (double)k;
}

static LLVMValueRef emit_vdpbf16ps(cg *c, const mlc_expr *e, bool zero) {
  MLC_UNUSED(zero);
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
  return b->emit(c, e, b->zero);
}
