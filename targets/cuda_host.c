/* The host side of cuda kernels: a host object (ELF, through the llvm
 * backend's target machine) holding the PTX as constant data and, per
 * kernel, the CPU entry point's signature
 *
 *   int32_t SYMBOL(void **args)
 *     { return mlc_rt_cuda_launch(ptx, "SYMBOL", launch, n, arg_bytes, args); }
 *
 * with the launch extents of the PTX's `// mlc.launch` line and the
 * parameters' sizes as constant arrays. mlc_rt_cuda_launch is libmlcrt's
 * (targets/runtime/cuda_launch.c), so users link the object with
 * libmlcrt.a as they do CPU objects.
 */
#include "targets/llvm_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool mlc_cuda_ptx_launch(const mlc_object *ptx, const char *symbol, mlc_gpu_launch *l,
                         mlc_error *err) {
  char head[300];
  snprintf(head, sizeof head, "// mlc.launch %s grid=", symbol);
  /* the PTX is NUL-terminated text (mlc_backend_cuda); the launch lines
   * come first, before any NUL a foreign buffer might hold */
  const char *text = ptx->data;
  const char *p = ptx->len ? strstr(text, head) : NULL;
  long long g[3], b[3], sh;
  if (!p || sscanf(p + strlen(head), "%lld,%lld,%lld block=%lld,%lld,%lld shared=%lld", &g[0],
                   &g[1], &g[2], &b[0], &b[1], &b[2], &sh) != 7)
    return mlc_error_set(err, "PTX has no launch line for kernel \"%s\"", symbol);
  *l = (mlc_gpu_launch){{g[0], g[1], g[2]}, {b[0], b[1], b[2]}, sh, 0};
  return true;
}

/* A private constant global holding init; returns an i8* (or i64*) to its
 * first element. */
static LLVMValueRef const_global(cg *c, LLVMValueRef init, const char *name, LLVMTypeRef elem_ptr) {
  LLVMValueRef g = LLVMAddGlobal(c->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  return LLVMConstBitCast(g, elem_ptr);
}

static LLVMValueRef i64_array(cg *c, int n, const int64_t *v, const char *name) {
  LLVMValueRef *elems = MLC_NEW_ARRAY(c->a, LLVMValueRef, n + 1);
  for (int i = 0; i < n; i++) elems[i] = LLVMConstInt(c->t_i64, (unsigned long long)v[i], 1);
  return const_global(c, LLVMConstArray(c->t_i64, elems, (unsigned)n), name,
                      LLVMPointerType(c->t_i64, 0));
}

/* int32_t symbol(void **args): the launcher of one kernel. */
static bool emit_launcher(cg *c, LLVMValueRef ptx, LLVMValueRef launch_fn,
                          LLVMTypeRef launch_ty, const mlc_prim_func *f, const char *symbol,
                          const mlc_gpu_launch *l) {
  int n = f->n_params;
  int64_t *bytes = MLC_NEW_ARRAY(c->a, int64_t, n + 1);
  for (int i = 0; i < n; i++)
    bytes[i] = mlc_buffer_numel(f->params[i]) * mlc_dtype_bytes(f->params[i]->dtype);
  int64_t ext[6] = {l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]};
  const char *base = mlc_arena_printf(c->a, "%s.", symbol);
  LLVMValueRef name = const_global(
      c, LLVMConstStringInContext(c->ctx, symbol, (unsigned)strlen(symbol), 0),
      mlc_arena_printf(c->a, "%sname", base), c->t_i8p);
  LLVMValueRef launch = i64_array(c, 6, ext, mlc_arena_printf(c->a, "%slaunch", base));
  LLVMValueRef sizes = i64_array(c, n, bytes, mlc_arena_printf(c->a, "%sarg_bytes", base));

  LLVMTypeRef args_ty = LLVMPointerType(c->t_i8p, 0);
  LLVMTypeRef fn_ty = LLVMFunctionType(c->t_i32, &args_ty, 1, 0);
  LLVMValueRef fn = LLVMAddFunction(c->mod, symbol, fn_ty);
  LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
  LLVMValueRef call_args[6] = {ptx, name, launch, LLVMConstInt(c->t_i32, (unsigned)n, 0), sizes,
                               LLVMGetParam(fn, 0)};
  LLVMBuildRet(c->b, LLVMBuildCall2(c->b, launch_ty, launch_fn, call_args, 6, "rc"));
  return true;
}

bool mlc_cuda_host_object(const mlc_target *host, const mlc_object *ptx, int n,
                          const mlc_prim_func *const *funcs, const char *const *symbols,
                          mlc_object *out, mlc_error *err) {
  *out = (mlc_object){0};
  if (host->backend->device != MLC_DEVICE_CPU)
    return mlc_error_set(err, "the host object of cuda kernels needs an llvm target, not %s",
                         host->str);
  mlc_gpu_launch *launch = mlc_xmalloc(sizeof *launch * (size_t)(n + 1));
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    const char *sym = symbols ? symbols[i] : funcs[i]->name;
    ok = mlc_cuda_ptx_launch(ptx, sym, &launch[i], err);
  }
  LLVMTargetMachineRef tm = ok ? llvm_make_machine(host, err) : NULL;
  if (!tm) {
    mlc_free(launch);
    return false;
  }
  cg c;
  cg_open(&c, host, tm);
  /* the PTX with its NUL: the driver reads text up to it */
  LLVMValueRef text = const_global(
      &c, LLVMConstStringInContext(c.ctx, ptx->data, (unsigned)ptx->len, 0), "mlc.ptx", c.t_i8p);
  LLVMTypeRef params[6] = {c.t_i8p, c.t_i8p, LLVMPointerType(c.t_i64, 0), c.t_i32,
                           LLVMPointerType(c.t_i64, 0), LLVMPointerType(c.t_i8p, 0)};
  LLVMTypeRef launch_ty = LLVMFunctionType(c.t_i32, params, 6, 0);
  LLVMValueRef launch_fn = LLVMAddFunction(c.mod, "mlc_rt_cuda_launch", launch_ty);
  for (int i = 0; i < n && ok; i++) {
    const char *sym = symbols ? symbols[i] : funcs[i]->name;
    if (LLVMGetNamedFunction(c.mod, sym))
      ok = mlc_error_set(err, "symbol %s is defined twice", sym);
    else ok = emit_launcher(&c, text, launch_fn, launch_ty, funcs[i], sym, &launch[i]);
  }
  ok = ok && cg_verify(&c, NULL, err) && llvm_emit_object(c.mod, tm, out, err);
  cg_close(&c);
  LLVMDisposeTargetMachine(tm);
  mlc_free(launch);
  return ok;
}
