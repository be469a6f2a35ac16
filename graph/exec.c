/* Running a lowered graph: main's call_tir bindings in order, each through
 * a kernel callback (the interpreter by default, JIT-compiled code in
 * mlc-compile --run), and its call_extern bindings through the functions
 * defined for the module. */
#include "graph/graph_impl.h"

#include <string.h>

static mlc_array view(const mlc_gvar *v, void *data) {
  mlc_array a = {.dtype = v->type.dtype, .ndim = v->type.ndim, .data = data};
  for (int i = 0; i < v->type.ndim; i++) a.shape[i] = v->type.shape[i];
  return a;
}

static bool interp_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args,
                          mlc_error *err) {
  return mlc_interp_run_n(f, n, args, err);
}

typedef struct env {
  const mlc_gfunc *f;
  mlc_array *const *inputs;
  void **values; /* one per binding */
} env;

static void *data_of(const env *E, const mlc_gvar *v) {
  v = mlc_gfunc_storage(E->f, v);
  switch (v->kind) {
  case MLC_GVAR_PARAM:
    for (int i = 0; i < E->f->n_params; i++)
      if (E->f->params[i] == v) return E->inputs[i]->data;
    break;
  case MLC_GVAR_CONST: return v->data;
  case MLC_GVAR_BOUND:
    for (int i = 0; i < E->f->n_bindings; i++)
      if (E->f->bindings[i].var == v) return E->values[i];
    break;
  }
  mlc_unreachable();
}

static bool check_io(const mlc_gvar *v, const mlc_array *a, const char *what, mlc_error *err) {
  mlc_gtype t = {.dtype = a->dtype, .ndim = a->ndim};
  for (int i = 0; i < a->ndim && i < MLC_GRAPH_MAX_DIMS; i++) t.shape[i] = a->shape[i];
  if (a->ndim > MLC_GRAPH_MAX_DIMS || !mlc_gtype_equal(&t, &v->type)) {
    char s0[128], s1[128];
    mlc_gtype_str(&t, s0, sizeof s0);
    mlc_gtype_str(&v->type, s1, sizeof s1);
    return mlc_error_set(err, "%s %s: shape %s given, the model has %s", what, v->name, s0, s1);
  }
  return true;
}

/* v, or the value v is a reshape (flatten) of, back to a param. */
static const mlc_gvar *reshaped_from(const mlc_gfunc *f, const mlc_gvar *v) {
  for (int d; (d = mlc_gfunc_def(f, v)) >= 0;) {
    const mlc_gbinding *b = &f->bindings[d];
    if (b->kind != MLC_GCALL_OP || (b->op != MLC_GOP_RESHAPE && b->op != MLC_GOP_FLATTEN)) break;
    v = b->args[0];
  }
  return v;
}

void mlc_graph_find_index_checks(mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  if (!f) return;
  MLC_VEC(mlc_gindex_check) checks = {0};
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (b->kind != MLC_GCALL_OP || !mlc_gop_reads_indices(b->op)) continue;
    const mlc_gtype *x = &b->args[0]->type;
    const mlc_gvar *ind = reshaped_from(f, b->args[1]);
    for (int k = 0; k < f->n_params; k++)
      if (f->params[k] == ind) {
        int64_t n = x->shape[mlc_gop_axis(b->attrs.axis, x->ndim)];
        MLC_VEC_APUSH(m->arena, checks, ((mlc_gindex_check){k, n, b->var->name}));
      }
  }
  m->n_index_checks = checks.len;
  m->index_checks = checks.data;
}

void mlc_graph_seed_input(const mlc_gmodule *m, int param, mlc_array *x, uint64_t seed) {
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, seed, (uint64_t)param);
  mlc_array_fill_random(x, &r);
  int64_t rows = INT64_MAX;
  for (int c = 0; c < m->n_index_checks; c++)
    if (m->index_checks[c].param == param && m->index_checks[c].n < rows) rows = m->index_checks[c].n;
  if (rows == INT64_MAX || rows <= 0) return; /* no table, or an empty one: nothing fits */
  uint32_t bound = rows > UINT32_MAX ? UINT32_MAX : (uint32_t)rows;
  for (int64_t i = 0, n = mlc_array_numel(x); i < n; i++)
    mlc_array_set(x, i, (double)mlc_pcg32_bounded(&r, bound));
}

bool mlc_graph_check_inputs(const mlc_gmodule *m, mlc_array *const *inputs, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  for (int c = 0; c < m->n_index_checks; c++) {
    const mlc_gindex_check *ck = &m->index_checks[c];
    const mlc_array *x = inputs[ck->param];
    int64_t numel = mlc_array_numel(x);
    for (int64_t i = 0; i < numel; i++) {
      double v = mlc_gdata_get(x->dtype, x->data, i);
      if (!(v >= (double)-ck->n && v < (double)ck->n))
        return mlc_error_set(err, "input '%s': element %lld is %.17g, outside [%lld, %lld) (the rows "
                                  "gather %s reads)",
                             f->params[ck->param]->name, (long long)i, v, (long long)-ck->n,
                             (long long)ck->n, ck->node);
    }
  }
  return true;
}

bool mlc_graph_execute(const mlc_gmodule *m, mlc_gkernel_fn kernel, void *ud,
                       mlc_array *const *inputs, mlc_array *const *outputs, mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  if (!kernel) kernel = interp_kernel;
  for (int i = 0; i < f->n_params; i++)
    if (!check_io(f->params[i], inputs[i], "input", err)) return false;
  if (!mlc_graph_check_inputs(m, inputs, err)) return false;
  for (int i = 0; i < f->n_outputs; i++)
    if (!check_io(f->outputs[i], outputs[i], "output", err)) return false;
  env E = {f, inputs, mlc_xmalloc(sizeof(void *) * (size_t)(f->n_bindings + 1))};
  bool ok = true;
  for (int i = 0; i < f->n_bindings && ok; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (mlc_gbinding_is_view(f, b)) continue; /* data_of reads its operand */
    if (b->kind != MLC_GCALL_TIR && b->kind != MLC_GCALL_EXTERN) {
      ok = mlc_error_set(err, "execute: binding %s is not a call_tir (run the pipeline first)",
                         b->var->name);
      break;
    }
    E.values[i] = mlc_xmalloc((size_t)mlc_gtype_bytes(&b->var->type));
    if (b->kind == MLC_GCALL_EXTERN) {
      float *in[MLC_GRAPH_MAX_EXTERN_ARGS + 1];
      MLC_ASSERT(b->n_args <= MLC_GRAPH_MAX_EXTERN_ARGS);
      for (int j = 0; j < b->n_args; j++) in[j] = data_of(&E, b->args[j]);
      ok = mlc_graph_call_extern(m, b, in, E.values[i], err);
      continue;
    }
    mlc_array *args = mlc_xmalloc(sizeof *args * (size_t)(b->n_args + 1));
    for (int j = 0; j < b->n_args; j++) args[j] = view(b->args[j], data_of(&E, b->args[j]));
    args[b->n_args] = view(b->var, E.values[i]);
    if (mlc_gbinding_appends(b))
      memcpy(E.values[i], args[0].data, (size_t)mlc_gtype_bytes(&b->args[0]->type));
    ok = kernel(ud, b->tir, b->n_args + 1, args, err);
    mlc_free(args);
    if (!ok) mlc_error_prefix(err, "%s (%s)", b->var->name, b->tir->name);
  }
  for (int i = 0; i < f->n_outputs && ok; i++) {
    size_t bytes = (size_t)mlc_gtype_bytes(&f->outputs[i]->type);
    memcpy(outputs[i]->data, data_of(&E, f->outputs[i]), bytes);
  }
  for (int i = 0; i < f->n_bindings; i++) mlc_free(E.values[i]); /* NULL where never run */
  mlc_free(E.values);
  return ok;
}
