/* The in-process runner: a compiled model run as its emitted entry runs
 * it, with no C compiler in between. The object is loaded into the JIT,
 * and main's bindings become a list of calls whose argument pointers are
 * resolved once (weights: the module's constants; intermediates: one
 * workspace laid out by mlc_graph_plan_workspace) except the inputs' and
 * outputs', patched in at each run. */
#include "graph/graph_impl.h"
#include "targets/targets.h"

#include <stdlib.h>
#include <string.h>

typedef struct runner_call {
  mlc_kernel_fn fn;         /* NULL: a call_extern binding */
  const mlc_gbinding *b;
  const char *symbol;
  void **args;              /* the binding's args, then its result */
  const mlc_gvar *prefix;   /* an append: args[0]'s value, copied first where not in place */
} runner_call;

/* An argument slot that holds input io (< n_params) or output
 * io - n_params at run time. */
typedef struct io_patch {
  void **slot;
  int io;
} io_patch;

struct mlc_grunner {
  const mlc_gmodule *m;
  mlc_arena *a;
  mlc_jit_lib *lib;
  int n_calls, n_patches;
  runner_call *calls;
  io_patch *patches;
  void *workspace;
  int64_t workspace_bytes;
  mlc_array *inputs;  /* views of the inputs for the index checks */
  mlc_array **views;  /* &inputs[i] */
  int64_t *sizes;     /* a module of sizes: those of the run, which kernels read */
  double *seconds;    /* per call, summed over the runs since profiling began; NULL: off */
  int64_t runs;       /* profiled runs */
};

/* Where v's data lives: its storage's (a view's operand's) slot. */
static void resolve(mlc_grunner *r, const mlc_gfunc *f, const mlc_gmap *index,
                    const int64_t *offs, const mlc_gvar *v, void **slot) {
  v = mlc_gfunc_storage(f, v);
  int i;
  switch (v->kind) {
  case MLC_GVAR_PARAM:
    for (i = 0; f->params[i] != v; i++) {}
    r->patches[r->n_patches++] = (io_patch){slot, i};
    return;
  case MLC_GVAR_CONST: *slot = v->data; return;
  case MLC_GVAR_BOUND:
    for (i = 0; i < f->n_outputs; i++)
      if (f->outputs[i] == v) {
        r->patches[r->n_patches++] = (io_patch){slot, f->n_params + i};
        return;
      }
    MLC_ASSERT(mlc_gmap_get(index, v, &i) && offs[i] >= 0);
    *slot = (char *)r->workspace + offs[i];
    return;
  }
  mlc_unreachable();
}

/* The slots after a kernel's buffers: its size vars, the module's sizes
 * of the same names. */
static bool add_sizes(mlc_grunner *r, const mlc_prim_func *f, void **slots, mlc_error *err) {
  for (int k = 0; k < f->n_sizes; k++) {
    int j = 0;
    while (j < r->m->n_sizes && strcmp(r->m->sizes[j].name, f->sizes[k].var->name) != 0) j++;
    if (j == r->m->n_sizes)
      return mlc_error_set(err, "kernel %s takes size %s, which the module has not", f->name,
                           f->sizes[k].var->name);
    slots[k] = &r->sizes[j];
  }
  return true;
}

static bool add_call(mlc_grunner *r, const mlc_gcompiled *c, const mlc_gfunc *f,
                     const mlc_gbinding *b, const mlc_gmap *index, const int64_t *offs,
                     mlc_error *err) {
  runner_call *call = &r->calls[r->n_calls++];
  call->b = b;
  call->prefix = mlc_gbinding_appends(b) ? b->args[0] : NULL;
  int n_sizes = b->kind == MLC_GCALL_TIR ? b->tir->n_sizes : 0;
  call->args = MLC_NEW_ARRAY(r->a, void *, b->n_args + 1 + n_sizes);
  for (int j = 0; j <= b->n_args; j++)
    resolve(r, f, index, offs, j < b->n_args ? b->args[j] : b->var, &call->args[j]);
  if (b->kind == MLC_GCALL_EXTERN) return true;
  if (n_sizes && !add_sizes(r, b->tir, call->args + b->n_args + 1, err)) return false;
  if (b->kind != MLC_GCALL_TIR)
    return mlc_error_set(err, "binding %s is not a call_tir (run the pipeline first)", b->var->name);
  for (int k = 0; k < c->n; k++)
    if (c->src[k] == b->tir) {
      call->symbol = c->symbols[k];
      call->fn = mlc_jit_lookup(r->lib, call->symbol, err);
      return call->fn != NULL;
    }
  return mlc_error_set(err, "binding %s: kernel %s is not in the compiled module", b->var->name,
                       b->tir->name);
}

static bool plan_calls(mlc_grunner *r, const mlc_gcompiled *c, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(r->m);
  int64_t *offs = MLC_NEW_ARRAY(r->a, int64_t, f->n_bindings + 1);
  r->workspace_bytes = mlc_graph_plan_workspace(f, offs);
  r->workspace = aligned_alloc(64, (size_t)(r->workspace_bytes + 63) / 64 * 64 + 64);
  if (!r->workspace) return mlc_error_set(err, "out of memory: a workspace of %lld bytes",
                                          (long long)r->workspace_bytes);
  mlc_gmap index = {.a = r->a};
  int n_slots = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gmap_put(&index, f->bindings[i].var, i);
    n_slots += f->bindings[i].n_args + 1;
  }
  r->calls = MLC_NEW_ARRAY(r->a, runner_call, f->n_bindings + 1);
  r->patches = MLC_NEW_ARRAY(r->a, io_patch, n_slots + 1);
  for (int i = 0; i < f->n_bindings; i++)
    if (!mlc_gbinding_is_view(f, &f->bindings[i]) &&
        !add_call(r, c, f, &f->bindings[i], &index, offs, err))
      return false;
  return true;
}

mlc_grunner *mlc_graph_runner_new(const mlc_gmodule *m, const mlc_gcompiled *c, mlc_error *err) {
  if (!c->obj) return mlc_error_set(err, "the module is not compiled"), NULL;
  mlc_grunner *r = mlc_xmalloc(sizeof *r);
  r->m = m;
  r->a = mlc_arena_new();
  r->sizes = MLC_NEW_ARRAY(r->a, int64_t, m->n_sizes + 1);
  r->lib = mlc_jit_load(c->obj, err);
  if (!r->lib || !plan_calls(r, c, err)) {
    mlc_graph_runner_free(r);
    return NULL;
  }
  const mlc_gfunc *f = mlc_graph_main(m);
  r->inputs = MLC_NEW_ARRAY(r->a, mlc_array, f->n_params + 1);
  r->views = MLC_NEW_ARRAY(r->a, mlc_array *, f->n_params + 1);
  for (int i = 0; i < f->n_params; i++) {
    r->views[i] = &r->inputs[i];
    const mlc_gtype *t = &f->params[i]->type;
    r->inputs[i] = (mlc_array){.dtype = t->dtype, .ndim = t->ndim};
    memcpy(r->inputs[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
  }
  return r;
}

/* The index checks of the emitted entry, on the caller's pointers. */
static bool check_inputs(mlc_grunner *r, void *const *inputs, mlc_error *err) {
  if (r->m->n_index_checks == 0) return true;
  const mlc_gfunc *f = mlc_graph_main(r->m);
  for (int i = 0; i < f->n_params; i++) {
    r->inputs[i].data = inputs[i];
    mlc_gvar_shape_at(r->m, f->params[i], r->sizes, r->inputs[i].shape);
  }
  return mlc_graph_check_inputs(r->m, r->views, err);
}

/* An append's operand 0 into the start of its result, unless the caller
 * passed one memory as both (a cache extended in place). */
static void copy_prefix(const mlc_grunner *r, const runner_call *c) {
  void *dst = c->args[c->b->n_args], *src = c->args[0];
  if (dst == src) return;
  int64_t shape[MLC_GRAPH_MAX_DIMS];
  mlc_gvar_shape_at(r->m, c->prefix, r->sizes, shape);
  mlc_gtype t = c->prefix->type;
  memcpy(t.shape, shape, sizeof(int64_t) * (size_t)t.ndim);
  memmove(dst, src, (size_t)mlc_gtype_bytes(&t));
}

bool mlc_graph_runner_run(mlc_grunner *r, void *const *inputs, void *const *outputs,
                          mlc_error *err) {
  return mlc_graph_runner_run_at(r, NULL, inputs, outputs, err);
}

bool mlc_graph_runner_run_at(mlc_grunner *r, const int64_t *sizes, void *const *inputs,
                             void *const *outputs, mlc_error *err) {
  if (r->m->n_sizes && !sizes)
    return mlc_error_set(err, "%s is built for sizes: run it at some (mlc_graph_runner_run_at)",
                         r->m->name);
  if (r->m->n_sizes && !mlc_graph_sizes_ok(r->m, sizes, err)) return false;
  for (int k = 0; k < r->m->n_sizes; k++) r->sizes[k] = sizes[k];
  if (!check_inputs(r, inputs, err)) return false;
  int n_params = mlc_graph_main(r->m)->n_params;
  for (int i = 0; i < r->n_patches; i++) {
    int io = r->patches[i].io;
    *r->patches[i].slot = io < n_params ? inputs[io] : outputs[io - n_params];
  }
  for (int i = 0; i < r->n_calls; i++) {
    const runner_call *c = &r->calls[i];
    double t0 = r->seconds ? mlc_now_sec() : 0;
    if (c->prefix) copy_prefix(r, c);
    if (!c->fn) {
      if (!mlc_graph_call_extern(r->m, c->b, (float *const *)c->args,
                                 c->args[c->b->n_args], err))
        return false;
    } else if (c->fn(c->args) != 0) {
      return mlc_error_set(err, "kernel %s failed (out of memory inside it)", c->symbol);
    }
    if (r->seconds) r->seconds[i] += mlc_now_sec() - t0;
  }
  r->runs += r->seconds != NULL;
  return true;
}

void mlc_graph_runner_profile(mlc_grunner *r, bool on) {
  r->seconds = on ? MLC_NEW_ARRAY(r->a, double, r->n_calls + 1) : NULL;
  r->runs = 0;
}

int mlc_graph_runner_profile_get(const mlc_grunner *r, mlc_gprofile *out, int max) {
  int n = 0;
  for (int i = 0; r->seconds && i < r->n_calls; i++) {
    const char *name = r->calls[i].fn ? r->calls[i].symbol : r->calls[i].b->extern_func;
    int k = 0;
    while (k < n && strcmp(out[k].symbol, name) != 0) k++;
    if (k == n && n == max) continue;
    if (k == n) out[n++] = (mlc_gprofile){name, 0, 0};
    out[k].calls += r->runs ? 1 : 0;
    out[k].seconds += r->runs ? r->seconds[i] / (double)r->runs : 0;
  }
  return n;
}

int64_t mlc_graph_runner_workspace_bytes(const mlc_grunner *r) { return r->workspace_bytes; }

void mlc_graph_runner_free(mlc_grunner *r) {
  if (!r) return;
  if (r->lib) mlc_jit_unload(r->lib);
  free(r->workspace);
  mlc_arena_free(r->a);
  mlc_free(r);
}
