/* Graph IR basics: the op table, types and shape inference, modules. */
#include "graph/graph_impl.h"

#include <stdio.h>
#include <string.h>

/* ---- op table ------------------------------------------------------------ */

typedef struct op_info {
  const char *name, *script;
  int n_inputs;
  mlc_gop_class cls;
} op_info;

static const op_info ops[] = {
#define MLC_GOP(id, name, script, n_inputs, cls) {name, script, n_inputs, MLC_GOP_##cls},
#include "graph/ops.def"
};
_Static_assert(sizeof(ops) / sizeof(ops[0]) == MLC_GOP_COUNT, "op table out of date");

const char *mlc_gop_name(mlc_gop op) { return ops[op].name; }
const char *mlc_gop_script(mlc_gop op) { return ops[op].script; }
int mlc_gop_n_inputs(mlc_gop op) { return ops[op].n_inputs; }
mlc_gop_class mlc_gop_class_of(mlc_gop op) { return ops[op].cls; }

bool mlc_gop_from_name(const char *name, mlc_gop *out) {
  for (int i = 0; i < MLC_GOP_COUNT; i++)
    if (strcmp(ops[i].name, name) == 0) {
      *out = (mlc_gop)i;
      return true;
    }
  return false;
}

const char *mlc_gop_names(void) {
  static char buf[512];
  if (!buf[0]) {
    size_t n = 0;
    for (int i = 0; i < MLC_GOP_COUNT; i++)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", ops[i].name);
  }
  return buf;
}

/* ---- types ------------------------------------------------------------------ */

void mlc_gattrs_default(mlc_gattrs *a) {
  memset(a, 0, sizeof *a);
  a->stride = 1;
  a->pool = 2;
  a->eps = 1e-5;
}

int64_t mlc_gtype_numel(const mlc_gtype *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n)) return -1;
  return n;
}

bool mlc_gtype_equal(const mlc_gtype *x, const mlc_gtype *y) {
  if (x->dtype != y->dtype || x->ndim != y->ndim) return false;
  for (int i = 0; i < x->ndim; i++)
    if (x->shape[i] != y->shape[i]) return false;
  return true;
}

void mlc_gtype_str(const mlc_gtype *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < t->ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (k < n) snprintf(buf + k, n - k, t->ndim == 1 ? ",)" : ")");
}

static bool fail_shape(mlc_error *err, mlc_gop op, int i, const mlc_gtype *t, const char *want) {
  char s[128];
  mlc_gtype_str(t, s, sizeof s);
  return mlc_error_set(err, "%s: operand %d has shape %s, expected %s", mlc_gop_name(op), i, s,
                       want);
}

/* numpy broadcasting of n shapes, right-aligned. */
static bool broadcast(mlc_gop op, int n, const mlc_gtype *args, mlc_gtype *out, mlc_error *err) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (args[i].ndim > nd) nd = args[i].ndim;
  out->ndim = nd;
  for (int d = 0; d < nd; d++) {
    int64_t e = 1;
    for (int i = 0; i < n; i++) {
      int k = d - (nd - args[i].ndim);
      if (k < 0 || args[i].shape[k] == 1) continue;
      if (e != 1 && e != args[i].shape[k]) {
        char s0[128], s1[128];
        mlc_gtype_str(&args[0], s0, sizeof s0);
        mlc_gtype_str(&args[i], s1, sizeof s1);
        return mlc_error_set(err, "%s: shapes %s and %s do not broadcast", mlc_gop_name(op), s0,
                             s1);
      }
      e = args[i].shape[k];
    }
    out->shape[d] = e;
  }
  return true;
}

static int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t pad) {
  int64_t span = in + 2 * pad - k;
  return span < 0 ? 0 : span / stride + 1;
}

static bool infer_matmul(const mlc_gtype *a, mlc_gtype *out, mlc_error *err) {
  const mlc_gtype *x = &a[0], *w = &a[1];
  if (x->ndim != w->ndim || (x->ndim != 2 && x->ndim != 3))
    return fail_shape(err, MLC_GOP_MATMUL, 1, w, "[K, N] after x [M, K] (or [B, K, N])");
  int b = x->ndim - 2;
  if (b && x->shape[0] != w->shape[0])
    return fail_shape(err, MLC_GOP_MATMUL, 1, w, "the same batch as operand 0");
  if (x->shape[b + 1] != w->shape[b])
    return fail_shape(err, MLC_GOP_MATMUL, 1, w, "inner dimension equal to operand 0's last");
  *out = *x;
  out->shape[b + 1] = w->shape[b + 1];
  return true;
}

static bool infer_window(mlc_gop op, const mlc_gattrs *at, const mlc_gtype *a, mlc_gtype *out,
                         mlc_error *err) {
  const mlc_gtype *x = &a[0];
  if (x->ndim != 4) return fail_shape(err, op, 0, x, "4 dims (NCHW)");
  if (at->stride < 1 || at->padding < 0)
    return mlc_error_set(err, "%s: stride must be >= 1 and padding >= 0", mlc_gop_name(op));
  int64_t kh, kw;
  *out = *x;
  if (op == MLC_GOP_CONV2D) {
    const mlc_gtype *w = &a[1];
    if (w->ndim != 4 || w->shape[1] != x->shape[1])
      return fail_shape(err, op, 1, w, "[K, C, R, S] with C equal to the input's channels");
    kh = w->shape[2], kw = w->shape[3];
    out->shape[1] = w->shape[0];
  } else {
    if (at->pool < 1 || at->padding >= at->pool)
      return mlc_error_set(err, "max_pool2d: pool_size must be >= 1 and padding < pool_size");
    kh = kw = at->pool;
  }
  out->shape[2] = window_out(x->shape[2], kh, at->stride, at->padding);
  out->shape[3] = window_out(x->shape[3], kw, at->stride, at->padding);
  if (out->shape[2] < 1 || out->shape[3] < 1)
    return fail_shape(err, op, 0, x, "a spatial size that fits the window");
  return true;
}

static bool infer_reshape(const mlc_gattrs *at, const mlc_gtype *x, mlc_gtype *out,
                          mlc_error *err) {
  int64_t known = 1, n = mlc_gtype_numel(x);
  int infer_at = -1;
  if (at->n_ints < 1) return mlc_error_set(err, "reshape: needs a \"shape\" attribute");
  out->ndim = at->n_ints;
  for (int i = 0; i < at->n_ints; i++) {
    int64_t d = at->ints[i];
    if (d == -1 && infer_at < 0) infer_at = i;
    else if (d < 1 || d > n) return mlc_error_set(err, "reshape: bad extent %lld", (long long)d);
    else if ((known *= d) > n)
      return fail_shape(err, MLC_GOP_RESHAPE, 0, x, "as many elements as the new shape");
    out->shape[i] = d;
  }
  if (infer_at >= 0 && n % known == 0) out->shape[infer_at] = n / known;
  if (mlc_gtype_numel(out) != n || (infer_at >= 0 && n % known))
    return fail_shape(err, MLC_GOP_RESHAPE, 0, x, "as many elements as the new shape");
  return true;
}

static bool infer_transpose(const mlc_gattrs *at, const mlc_gtype *x, mlc_gtype *out,
                            mlc_error *err) {
  bool seen[MLC_GRAPH_MAX_DIMS] = {0};
  if (at->n_ints && at->n_ints != x->ndim)
    return mlc_error_set(err, "transpose: %d axes for a %d-d tensor", at->n_ints, x->ndim);
  out->ndim = x->ndim;
  for (int i = 0; i < x->ndim; i++) {
    int64_t ax = at->n_ints ? at->ints[i] : x->ndim - 1 - i;
    if (ax < 0 || ax >= x->ndim || seen[ax])
      return mlc_error_set(err, "transpose: axes are not a permutation of 0..%d", x->ndim - 1);
    seen[ax] = true;
    out->shape[i] = x->shape[ax];
  }
  return true;
}

bool mlc_gop_infer(mlc_gop op, const mlc_gattrs *at, int n, const mlc_gtype *a, mlc_gtype *out,
                   mlc_error *err) {
  if (n != mlc_gop_n_inputs(op))
    return mlc_error_set(err, "%s takes %d inputs, got %d", mlc_gop_name(op), mlc_gop_n_inputs(op),
                         n);
  for (int i = 0; i < n; i++)
    if (a[i].dtype != MLC_FLOAT32)
      return mlc_error_set(err, "%s: operand %d is %s; only float32 is supported",
                           mlc_gop_name(op), i, mlc_dtype_name(a[i].dtype));
  memset(out, 0, sizeof *out);
  out->dtype = MLC_FLOAT32;
  switch (op) {
  case MLC_GOP_MATMUL: return infer_matmul(a, out, err);
  case MLC_GOP_DENSE:
    if (a[0].ndim != 2) return fail_shape(err, op, 0, &a[0], "[M, K]");
    if (a[1].ndim != 2 || a[1].shape[1] != a[0].shape[1])
      return fail_shape(err, op, 1, &a[1], "[N, K] with K equal to operand 0's last");
    *out = a[0];
    out->shape[1] = a[1].shape[0];
    return true;
  case MLC_GOP_ADD:
  case MLC_GOP_MULTIPLY:
  case MLC_GOP_EWISE_FMA: return broadcast(op, n, a, out, err);
  case MLC_GOP_RELU:
  case MLC_GOP_GELU: *out = a[0]; return true;
  case MLC_GOP_SOFTMAX: *out = a[0]; return true; /* over the last axis */
  case MLC_GOP_LAYERNORM:
    for (int i = 1; i < 3; i++)
      if (a[i].ndim != 1 || a[i].shape[0] != a[0].shape[a[0].ndim - 1])
        return fail_shape(err, op, i, &a[i], "[last dim of operand 0] (gamma, beta)");
    if (!(at->eps > 0)) return mlc_error_set(err, "layernorm: eps must be positive");
    *out = a[0];
    return true;
  case MLC_GOP_CONV2D:
  case MLC_GOP_MAX_POOL2D: return infer_window(op, at, a, out, err);
  case MLC_GOP_RESHAPE: return infer_reshape(at, &a[0], out, err);
  case MLC_GOP_FLATTEN:
    if (a[0].ndim < 1) return fail_shape(err, op, 0, &a[0], "at least 1 dim");
    out->ndim = 2;
    out->shape[0] = a[0].shape[0];
    out->shape[1] = mlc_gtype_numel(&a[0]) / a[0].shape[0];
    return true;
  case MLC_GOP_TRANSPOSE: return infer_transpose(at, &a[0], out, err);
  }
  mlc_unreachable();
}

/* ---- modules ---------------------------------------------------------------- */

mlc_gmodule *mlc_graph_new(const char *name) {
  mlc_arena *a = mlc_arena_new();
  mlc_gmodule *m = MLC_NEW(a, mlc_gmodule);
  m->arena = a;
  m->name = mlc_arena_strdup(a, name ? name : "model");
  m->tir = mlc_module_new(a, "Module");
  return m;
}

void mlc_graph_free(mlc_gmodule *m) {
  if (m) mlc_arena_free(m->arena);
}

mlc_gfunc *mlc_graph_find_func(const mlc_gmodule *m, const char *name) {
  for (int i = 0; i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
  return NULL;
}

mlc_gfunc *mlc_graph_main(const mlc_gmodule *m) { return mlc_graph_find_func(m, "main"); }

mlc_gvar *mlc_gvar_new(mlc_gmodule *m, const char *name, mlc_gvar_kind kind,
                       const mlc_gtype *t) {
  mlc_gvar *v = MLC_NEW(m->arena, mlc_gvar);
  v->name = mlc_arena_strdup(m->arena, name);
  v->kind = kind;
  v->type = *t;
  return v;
}

mlc_gfunc *mlc_gfunc_new(mlc_gmodule *m, const char *name, bool primitive) {
  mlc_gfunc *f = MLC_NEW(m->arena, mlc_gfunc);
  f->name = mlc_arena_strdup(m->arena, name);
  f->primitive = primitive;
  return f;
}

/* Sub-functions go before main, so main stays last as the printer wants. */
void mlc_graph_add_func(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_gfunc **fs = MLC_NEW_ARRAY(m->arena, mlc_gfunc *, m->n_funcs + 1);
  int k = 0;
  bool is_main = strcmp(f->name, "main") == 0;
  for (int i = 0; i < m->n_funcs; i++) {
    if (!is_main && strcmp(m->funcs[i]->name, "main") == 0) fs[k++] = f;
    fs[k++] = m->funcs[i];
  }
  if (k == m->n_funcs) fs[k++] = f;
  m->funcs = fs;
  m->n_funcs = k;
}

void mlc_gfunc_set_bindings(mlc_gmodule *m, mlc_gfunc *f, int n, const mlc_gbinding *bs) {
  f->bindings = MLC_NEW_ARRAY(m->arena, mlc_gbinding, n > 0 ? n : 1);
  if (n) memcpy(f->bindings, bs, sizeof *bs * (size_t)n);
  f->n_bindings = n;
}

mlc_gvar **mlc_gvars_dup(mlc_gmodule *m, int n, mlc_gvar *const *vs) {
  mlc_gvar **out = MLC_NEW_ARRAY(m->arena, mlc_gvar *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) out[i] = vs[i];
  return out;
}

/* Uses of v as an argument in f, plus one if it is an output. */
int mlc_gfunc_uses(const mlc_gfunc *f, const mlc_gvar *v) {
  int n = 0;
  for (int i = 0; i < f->n_bindings; i++)
    for (int j = 0; j < f->bindings[i].n_args; j++) n += f->bindings[i].args[j] == v;
  for (int i = 0; i < f->n_outputs; i++) n += f->outputs[i] == v;
  return n;
}

/* The binding defining v in f, or -1. */
int mlc_gfunc_def(const mlc_gfunc *f, const mlc_gvar *v) {
  for (int i = 0; i < f->n_bindings; i++)
    if (f->bindings[i].var == v) return i;
  return -1;
}
