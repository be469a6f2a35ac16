/* The graph verifier, run after every pass. */
#include "graph/graph_impl.h"

#include <string.h>

void mlc_gtype_of_buffer(const mlc_buffer *b, mlc_gtype *t) {
  memset(t, 0, sizeof *t);
  t->dtype = b->dtype;
  t->ndim = b->ndim;
  for (int i = 0; i < b->ndim && i < MLC_GRAPH_MAX_DIMS; i++) t->shape[i] = b->shape[i];
}

/* What the checks look up, in maps so that verifying n bindings is O(n):
 * vis holds each var visible at the binding being checked (its
 * VIS_* bits), names the binding names so far, tir the module's
 * prim_funcs. */
typedef struct vctx {
  const mlc_gmodule *m;
  mlc_gmap vis, names, tir;
  mlc_gmap externs; /* call_extern function -> its input count (one C declaration each) */
} vctx;

enum { VIS_PARAM = 1, VIS_CONST = 2, VIS_BOUND = 4 };

static void vis_add(mlc_gmap *vis, const mlc_gvar *v, int bit) {
  int bits = 0;
  mlc_gmap_get(vis, v, &bits);
  mlc_gmap_put(vis, v, bits | bit);
}

/* Whether v is visible at the binding being checked: a param of the
 * function, a constant of the module, or defined by an earlier binding. */
static bool visible(const vctx *c, const mlc_gvar *v) {
  int bits = 0;
  mlc_gmap_get(&c->vis, v, &bits);
  switch (v->kind) {
  case MLC_GVAR_PARAM: return bits & VIS_PARAM;
  case MLC_GVAR_CONST: return bits & VIS_CONST;
  case MLC_GVAR_BOUND: return bits & VIS_BOUND;
  }
  mlc_unreachable();
}

static bool check_tir_call(const vctx *c, const mlc_gbinding *b, mlc_error *err) {
  const mlc_prim_func *p = b->tir;
  if (!p || !mlc_gmap_get(&c->tir, p, NULL)) return mlc_error_set(err, "call_tir of a prim_func not in the module");
  if (p->n_params != b->n_args + 1)
    return mlc_error_set(err, "call_tir %s: %d args + output for %d params", p->name, b->n_args,
                         p->n_params);
  for (int i = 0; i <= b->n_args; i++) {
    mlc_gtype t;
    mlc_gtype_of_buffer(p->params[i], &t);
    const mlc_gtype *want = i < b->n_args ? &b->args[i]->type : &b->var->type;
    if (!mlc_gtype_equal(&t, want)) {
      char s0[128], s1[128];
      mlc_gtype_str(&t, s0, sizeof s0);
      mlc_gtype_str(want, s1, sizeof s1);
      return mlc_error_set(err, "call_tir %s: param %s has shape %s, the call passes %s",
                           p->name, p->params[i]->name, s0, s1);
    }
  }
  return true;
}

static bool check_func_call(const mlc_gbinding *b, mlc_error *err) {
  const mlc_gfunc *g = b->callee;
  if (!g->primitive) return mlc_error_set(err, "call of %s, which is not primitive", g->name);
  if (g->n_params != b->n_args || g->n_outputs != 1)
    return mlc_error_set(err, "call of %s: %d args for %d params", g->name, b->n_args,
                         g->n_params);
  for (int i = 0; i < b->n_args; i++)
    if (!mlc_gtype_equal(&g->params[i]->type, &b->args[i]->type))
      return mlc_error_set(err, "call of %s: arg %d does not match param %s", g->name, i,
                           g->params[i]->name);
  if (!mlc_gtype_equal(&g->outputs[0]->type, &b->var->type))
    return mlc_error_set(err, "call of %s: result type differs from the binding's", g->name);
  return true;
}

/* A call_extern: a function the emitted code may declare, float32
 * operands, one input count per function, outside primitive functions
 * (they become one prim_func). */
static bool check_extern_call(vctx *c, const mlc_gfunc *f, const mlc_gbinding *b,
                              mlc_error *err) {
  if (f->primitive) return mlc_error_set(err, "a primitive function calls an extern function");
  if (!mlc_graph_extern_name_ok(c->m, b->extern_func, err)) return false;
  if (b->n_args > MLC_GRAPH_MAX_EXTERN_ARGS)
    return mlc_error_set(err, "call_extern \"%s\": %d inputs, at most %d", b->extern_func,
                         b->n_args, MLC_GRAPH_MAX_EXTERN_ARGS);
  for (int j = 0; j < b->n_args; j++)
    if (b->args[j]->type.dtype != MLC_FLOAT32)
      return mlc_error_set(err, "call_extern \"%s\": input %d is not float32", b->extern_func, j);
  if (b->var->type.dtype != MLC_FLOAT32 || b->var->type.ndim < 1 ||
      mlc_tensor_numel_checked("call_extern: the result", b->var->type.shape, b->var->type.ndim,
                               4, err) < 0)
    return mlc_error_prefix(err, "call_extern \"%s\": the result is not a float32 tensor of "
                                 "sane shape", b->extern_func);
  int n;
  if (mlc_gmap_get(&c->externs, b->extern_func, &n) && n != b->n_args)
    return mlc_error_set(err, "call_extern \"%s\": %d inputs here, %d elsewhere", b->extern_func,
                         b->n_args, n);
  mlc_gmap_put(&c->externs, b->extern_func, b->n_args);
  return true;
}

/* Constant gather (gather_elements) indices must be whole numbers inside
 * the axis: the kernel would read row 0 for any other. */
static bool check_gather_indices(const mlc_gbinding *b, mlc_error *err) {
  if (!mlc_gop_reads_indices(b->op)) return true; /* args[1] exists only then */
  const mlc_gvar *ind = b->args[1];
  if (ind->kind != MLC_GVAR_CONST) return true;
  int64_t n = b->args[0]->type.shape[mlc_gop_axis(b->attrs.axis, b->args[0]->type.ndim)];
  for (int64_t k = 0; k < mlc_gtype_numel(&ind->type); k++) {
    double v = mlc_gdata_get(ind->type.dtype, ind->data, k);
    if (!(v >= (double)-n && v < (double)n) || v != (double)(int64_t)v)
      return mlc_error_set(err, "%s: index %g (element %lld of %s) is not a whole number in "
                                "[%lld, %lld)",
                           mlc_gop_name(b->op), v, (long long)k, ind->name, (long long)-n, (long long)n);
  }
  return true;
}

static bool check_binding(vctx *c, const mlc_gfunc *f, int i, mlc_error *err) {
  const mlc_gbinding *b = &f->bindings[i];
  if (!b->var || b->var->kind != MLC_GVAR_BOUND)
    return mlc_error_set(err, "binding %d defines no bound var", i);
  if (mlc_gmap_get(&c->names, b->var->name, NULL) || visible(c, b->var))
    return mlc_error_set(err, "%s is defined twice", b->var->name);
  for (int j = 0; j < b->n_args; j++)
    if (!visible(c, b->args[j]))
      return mlc_error_set(err, "%s uses %s before it is defined", b->var->name,
                           b->args[j]->name);
  mlc_gmap_put(&c->names, b->var->name, 1);
  vis_add(&c->vis, b->var, VIS_BOUND);
  switch (b->kind) {
  case MLC_GCALL_OP: {
    mlc_gtype ts[MLC_GRAPH_MAX_ARGS], out;
    if (!mlc_gop_arity_ok(b->op, b->n_args)) return mlc_gop_arity_error(b->op, b->n_args, err);
    for (int j = 0; j < b->n_args; j++) ts[j] = b->args[j]->type;
    if (!mlc_gop_infer(b->op, &b->attrs, b->n_args, ts, &out, err)) return false;
    if (!mlc_gtype_equal(&out, &b->var->type))
      return mlc_error_set(err, "the op's result type differs from the binding's");
    return check_gather_indices(b, err);
  }
  case MLC_GCALL_FUNC:
    if (f->primitive) return mlc_error_set(err, "a primitive function calls %s", b->callee->name);
    return check_func_call(b, err);
  case MLC_GCALL_TIR: return check_tir_call(c, b, err);
  case MLC_GCALL_EXTERN: return check_extern_call(c, f, b, err);
  }
  mlc_unreachable();
}

/* Fresh maps of names and visible vars for f, in arena a. */
static void func_ctx(vctx *c, mlc_arena *a, const mlc_gfunc *f) {
  c->vis = (mlc_gmap){.a = a};
  c->names = (mlc_gmap){.a = a, .strings = true};
  for (int i = 0; i < c->m->n_consts; i++) vis_add(&c->vis, c->m->consts[i], VIS_CONST);
  for (int i = 0; i < f->n_params; i++) vis_add(&c->vis, f->params[i], VIS_PARAM);
}

static bool check_func(vctx *c, const mlc_gfunc *f, mlc_error *err) {
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i]->kind != MLC_GVAR_PARAM)
      return mlc_error_set(err, "param %s is not a param var", f->params[i]->name);
  for (int i = 0; i < f->n_bindings; i++)
    if (!check_binding(c, f, i, err))
      return mlc_error_prefix(err, "binding %s",
                              f->bindings[i].var ? f->bindings[i].var->name : "?");
  if (f->n_outputs < 1) return mlc_error_set(err, "no outputs");
  if (f->primitive && f->n_outputs != 1) return mlc_error_set(err, "a primitive function has one output");
  for (int i = 0; i < f->n_outputs; i++)
    if (!visible(c, f->outputs[i]))
      return mlc_error_set(err, "output %s is not defined", f->outputs[i]->name);
  return true;
}

static bool verify_graph(vctx *c, mlc_arena *a, mlc_error *err) {
  const mlc_gmodule *m = c->m;
  mlc_gmap funcs = {.a = a, .strings = true};
  for (int i = 0; i < m->tir->n_funcs; i++) mlc_gmap_put(&c->tir, m->tir->funcs[i], 1);
  for (int i = 0; i < m->n_funcs; i++) {
    if (mlc_gmap_get(&funcs, m->funcs[i]->name, NULL))
      return mlc_error_set(err, "graph: function %s is defined twice", m->funcs[i]->name);
    mlc_gmap_put(&funcs, m->funcs[i]->name, 1);
    func_ctx(c, a, m->funcs[i]);
    if (!check_func(c, m->funcs[i], err))
      return mlc_error_prefix(err, "graph: function %s", m->funcs[i]->name);
  }
  return true;
}

/* The scratch maps grow with the graph: running out of memory there is an
 * error, and the caller frees the arena either way. The prim_funcs'
 * verifier takes its scratch from a child of a, freed with a if it jumps
 * here. */
static bool verify_guarded(const mlc_gmodule *m, mlc_arena *a, mlc_error *err) {
  jmp_buf jb;
  if (setjmp(jb)) return mlc_error_set(err, "graph: out of memory verifying it");
  mlc_arena_set_oom_jump(a, &jb);
  vctx c = {.m = m, .tir = {.a = a}, .externs = {.a = a, .strings = true}};
  if (!verify_graph(&c, a, err)) return false;
  for (int i = 0; i < m->tir->n_funcs; i++)
    if (!mlc_verify_func_in(a, m->tir->funcs[i], err))
      return mlc_error_prefix(err, "graph: prim_func %s", m->tir->funcs[i]->name);
  return true;
}

bool mlc_graph_verify(const mlc_gmodule *m, mlc_error *err) {
  if (!mlc_graph_main(m)) return mlc_error_set(err, "graph: no main function");
  /* Scratch maps in their own arena, freed here: the module's must not
   * grow with every verification. A child of the module's, so that under
   * the module's escape point (the loader's, the pipeline's) even its
   * header cannot abort. */
  mlc_arena *a = mlc_arena_new_child(m->arena);
  bool ok = verify_guarded(m, a, err);
  mlc_arena_free(a);
  return ok;
}
