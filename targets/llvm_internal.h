/* Private to targets/: the LLVM code generator's state, shared by
 * llvm_expr.c (expressions), llvm_codegen.c (statements, functions,
 * parallel outlining) and llvm_backend.c (target machine, passes, object
 * emission).
 */
#ifndef MLC_TARGETS_LLVM_INTERNAL_H
#define MLC_TARGETS_LLVM_INTERNAL_H

#include "targets/targets.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

typedef struct cg_var {
  const mlc_var *var;
  LLVMValueRef val; /* scalar */
} cg_var;

typedef struct cg_buf {
  const mlc_buffer *buf; /* a flat (1-D) buffer of the lowered function */
  LLVMValueRef ptr;      /* element pointer (i8* for bool) */
  bool noalias;          /* may be passed as a noalias parameter */
} cg_buf;

typedef struct cg {
  mlc_arena *a; /* scratch: IR built while generating (substitutions) */
  const mlc_target *target;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  const char *sym; /* entry symbol; helpers are named sym.<what> */
  bool noalias;    /* the prim_func says tir.noalias */

  /* The function being emitted. */
  LLVMValueRef fn;
  LLVMBasicBlockRef entry; /* allocas only; branches to the body at the end */
  LLVMValueRef status;     /* i32*: set to -1 when a heap allocation fails */

  /* Bindings, innermost last (lookups search backwards). */
  MLC_VEC(cg_var) vars;
  MLC_VEC(cg_buf) bufs;

  /* Vector mode: inside a vectorized loop over lane_var, `lanes` wide
   * (0: scalar). An expression that uses lane_var is a <lanes x T> vector;
   * one that does not is a scalar, broadcast where it meets a vector. */
  int lanes;
  const mlc_var *lane_var;
  const mlc_expr *lane_min; /* the loop's min */
  LLVMValueRef lane_base;   /* its value (scalar) */
  LLVMValueRef lane_vec;    /* lane_base + <0, 1, ..., lanes-1> */

  /* Generating a buffer index: integer +, -, * carry nsw. An index of an
   * access that runs stays within the buffer (below 2^31 elements when
   * int32, see lower_alloc.c), so its arithmetic cannot overflow; the flag
   * lets LLVM fold sext(i + c) into sext(i) + c and widen loop counters. */
  bool in_index;

  int n_outlined;
  LLVMTypeRef t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_f32, t_void, t_i8p;
} cg;

/* Lanes of a vectorized loop: 1 to this many. */
#define CG_MAX_LANES 64

/* llvm_expr.c */
LLVMTypeRef cg_scalar_type(cg *c, mlc_dtype t); /* bool: i1 */
LLVMTypeRef cg_mem_type(cg *c, mlc_dtype t);    /* bool: i8, bfloat16: i16 */
/* A value as memory holds it and back (bool i1 <-> i8, bfloat16 float32
 * <-> i16 bits rounded to nearest even); scalars or vectors. */
LLVMValueRef cg_to_mem(cg *c, LLVMValueRef v, mlc_dtype t);
LLVMValueRef cg_from_mem(cg *c, LLVMValueRef v, mlc_dtype t);
LLVMValueRef cg_expr(cg *c, const mlc_expr *e);
/* cg_expr of a buffer index (nsw arithmetic, see in_index). */
LLVMValueRef cg_index(cg *c, const mlc_expr *e);
/* Pointer to element e (a scalar index expression) of b. */
LLVMValueRef cg_index_ptr(cg *c, cg_buf *b, const mlc_expr *e);
/* Convert as a cast does (saturating float -> int, != 0 for bool). */
LLVMValueRef cg_convert(cg *c, LLVMValueRef v, mlc_dtype from, mlc_dtype to);
LLVMValueRef cg_splat(cg *c, LLVMValueRef v, int lanes);
LLVMValueRef cg_const_int(LLVMTypeRef ty, int64_t v); /* scalar or splat */
bool cg_is_vector(LLVMValueRef v);
bool cg_uses_lane(cg *c, const mlc_expr *e);
/* Index expression of a lane-dependent access: true with *base when it is
 * base + lane (unit stride), base being the index at the first lane. */
bool cg_unit_stride(cg *c, const mlc_expr *idx, const mlc_expr **base);
cg_buf *cg_lookup_buf(cg *c, const mlc_buffer *b);
void cg_bind_var(cg *c, const mlc_var *v, LLVMValueRef val);
/* Pointer to element idx (i64 or narrower int) of a buffer. */
LLVMValueRef cg_elem_ptr(cg *c, cg_buf *b, LLVMValueRef idx);
LLVMValueRef cg_call_named(cg *c, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                           LLVMValueRef *args, int n);
LLVMBasicBlockRef cg_new_block(cg *c, const char *name);
/* The n lanes of vector v combined by op (ADD, MUL, MAX, MIN) as a tree:
 * halves combined until one lane is left; a scalar of type t. */
LLVMValueRef cg_reduce_lanes(cg *c, mlc_expr_kind op, mlc_dtype t, LLVMValueRef v);
/* Scalar or vector x op y for one of cg_reduce_lanes's ops. */
LLVMValueRef cg_combine(cg *c, mlc_expr_kind op, mlc_dtype t, LLVMValueRef x, LLVMValueRef y);

/* llvm_builtins.c: extern names expanded inline into CPU instructions
 * ("mlc_x86_vpdpbusd_16x4", mlc_target_is_builtin). check: true when e (a
 * CALL_EXTERN) is no builtin, or one whose arguments fit and whose CPU
 * feature t has. */
bool cg_builtin_check(const mlc_target *t, const mlc_expr *e, mlc_error *err);
LLVMValueRef cg_builtin_emit(cg *c, const mlc_expr *e);

/* llvm_backend.c: initialize LLVM's native target once per process. */
void cg_llvm_init(void);
/* llvm_backend.c: the target machine of an llvm target (PIC, O3 codegen),
 * and a module emitted as an object into out (cuda_host.c uses both for
 * the launchers of cuda kernels). */
LLVMTargetMachineRef llvm_make_machine(const mlc_target *t, mlc_error *err);
bool llvm_emit_object(LLVMModuleRef mod, LLVMTargetMachineRef tm, mlc_object *out, mlc_error *err);

/* llvm_codegen.c: the module both backends build in: c's arena, context,
 * module (with tm's triple and data layout), builder and types. */
void cg_open(cg *c, const mlc_target *t, LLVMTargetMachineRef tm);
/* The module verified (an invalid one is an internal error), its text
 * appended to ir_text when given. */
bool cg_verify(cg *c, mlc_str *ir_text, mlc_error *err);
void cg_close(cg *c);

/* llvm_codegen.c: emit `int32_t symbol(void **args)` for a lowered
 * function into c->mod; false with err set for code the target rejects. */
bool cg_emit_function(cg *c, const mlc_prim_func *lowered, const char *symbol, mlc_error *err);


#pragma GCC visibility pop
#endif
