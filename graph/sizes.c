/* A module built once for every size of some input dimensions.
 *
 * The model is made (imported and run through the passes) at a few sizes:
 * every size at its bound (the base, whose memory plan serves every size),
 * each size alone moved to the middle of its range, and all of them at
 * their least value from 2 (and at 1 when the bounds allow it and the
 * model keeps its structure there). The instances must be the same graph:
 * the same bindings calling kernels of the same loop nests, the same
 * weights. Each kernel becomes one function of size vars
 * (mlc_func_generalize); main's inputs and outputs get their extents as
 * affine functions of the sizes; a constant that changes with the sizes
 * (positions, a causal mask) must be the leading block of its value at
 * the bounds, which the kernels then read whole.
 */
#include "graph/graph_impl.h"

#include <inttypes.h>
#include <string.h>

typedef struct instances {
  int n;
  mlc_gmodule **m;
  int64_t *values; /* n x n_sizes */
} instances;

typedef struct kernel_group {
  const mlc_prim_func **insts; /* per instance */
  bool *static_params;         /* per parameter */
} kernel_group;

typedef struct generalizer {
  mlc_arena *a; /* scratch */
  int n_sizes;
  const mlc_gsize *sizes;
  instances in;
  const char **names;
  int64_t *lo, *hi;
  mlc_gmap func_index; /* base prim_func -> its index in base->tir */
  kernel_group *groups;
  mlc_gmap checked;    /* instance consts compared already */
  mlc_error *err;
} generalizer;

static mlc_gmodule *base_of(const generalizer *g) { return g->in.m[0]; }

/* ---- the sizes each instance is made at ---------------------------------------------------- */

static void add_instance_values(generalizer *g, const int64_t *v) {
  for (int i = 0; i < g->in.n; i++)
    if (memcmp(&g->in.values[i * g->n_sizes], v, sizeof(int64_t) * (size_t)g->n_sizes) == 0) return;
  memcpy(&g->in.values[g->in.n++ * g->n_sizes], v, sizeof(int64_t) * (size_t)g->n_sizes);
}

static int64_t least_sampled(const mlc_gsize *s) { return s->lo > 2 ? s->lo : 2; }

static bool plan_instances(generalizer *g) {
  int n = g->n_sizes;
  g->in.values = MLC_NEW_ARRAY(g->a, int64_t, (size_t)(n + 3) * (size_t)n);
  g->in.m = MLC_NEW_ARRAY(g->a, mlc_gmodule *, n + 3);
  int64_t v[MLC_GRAPH_MAX_SIZES];
  for (int k = 0; k < n; k++) {
    const mlc_gsize *s = &g->sizes[k];
    if (s->hi - least_sampled(s) < 2)
      return mlc_error_set(g->err, "size %s: the range %" PRId64 "..%" PRId64 " needs at least "
                                   "3 values from 2 up to build once for all of it",
                           s->name, s->lo, s->hi);
    v[k] = s->hi;
  }
  add_instance_values(g, v);
  for (int k = 0; k < n; k++) {
    const mlc_gsize *s = &g->sizes[k];
    v[k] = least_sampled(s) + (s->hi - least_sampled(s)) / 2;
    add_instance_values(g, v);
    v[k] = s->hi;
  }
  for (int k = 0; k < n; k++) v[k] = least_sampled(&g->sizes[k]);
  add_instance_values(g, v);
  return true;
}

/* ---- instances against the base ------------------------------------------------------------- */

static bool mismatch(generalizer *g, int i, const char *what, const char *name) {
  return mlc_error_set(g->err, "the model at other sizes is another graph (at instance %d: %s %s); "
                               "it cannot be built once for all sizes",
                       i, what, name);
}

/* Whether inst, the value of c at the instance's sizes, is the leading
 * block of c (its value at the bounds), element by element. */
static bool leading_block(const mlc_gvar *c, const mlc_gvar *inst) {
  const mlc_gtype *t = &c->type, *u = &inst->type;
  if (t->ndim != u->ndim || t->dtype != u->dtype) return false;
  for (int d = 0; d < t->ndim; d++)
    if (u->shape[d] > t->shape[d]) return false;
  int64_t n = mlc_gtype_numel(u), es = mlc_dtype_bytes(u->dtype);
  for (int64_t k = 0; k < n; k++) {
    int64_t rest = k, off = 0, stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      off += rest % u->shape[d] * stride;
      rest /= u->shape[d];
      stride *= t->shape[d];
    }
    if (memcmp((const char *)c->data + off * es, (const char *)inst->data + k * es, (size_t)es))
      return false;
  }
  return true;
}

/* Constant c of the base against the instance's: the same data, or its
 * leading block (*moves: its shape changes with the sizes). */
static bool same_const(generalizer *g, int i, const mlc_gvar *c, const mlc_gvar *ci, bool *moves) {
  *moves = !mlc_gtype_equal(&c->type, &ci->type);
  if (c == ci || mlc_gmap_get(&g->checked, ci, NULL)) return true;
  mlc_gmap_put(&g->checked, ci, 1);
  bool same = *moves ? leading_block(c, ci)
                     : memcmp(c->data, ci->data, (size_t)mlc_gtype_bytes(&c->type)) == 0;
  if (!same)
    return mlc_error_set(g->err, "constant %s changes with the sizes other than by its leading "
                                 "block at the bounds (at instance %d)",
                         c->name, i);
  return true;
}

/* Where v comes from in f: param k (k), binding k (n_params + k), or a
 * constant (-1). */
static int origin(const mlc_gfunc *f, const mlc_gvar *v) {
  if (v->kind == MLC_GVAR_CONST) return -1;
  if (v->kind == MLC_GVAR_PARAM) {
    for (int k = 0; k < f->n_params; k++)
      if (f->params[k] == v) return k;
  }
  return f->n_params + mlc_gfunc_def(f, v);
}

static bool match_arg(generalizer *g, int i, const mlc_gbinding *b, const mlc_gbinding *bi, int j,
                      bool *moves) {
  const mlc_gfunc *f = mlc_graph_main(base_of(g)), *fi = mlc_graph_main(g->in.m[i]);
  const mlc_gvar *x = b->args[j], *xi = bi->args[j];
  *moves = false;
  if (x->kind != xi->kind || origin(f, x) != origin(fi, xi) || x->type.dtype != xi->type.dtype ||
      x->type.ndim != xi->type.ndim)
    return mismatch(g, i, "an argument of", b->var->name);
  return x->kind != MLC_GVAR_CONST || same_const(g, i, x, xi, moves);
}

static bool match_binding(generalizer *g, int i, const mlc_gbinding *b, const mlc_gbinding *bi) {
  if (b->kind != bi->kind || b->n_args != bi->n_args || (b->kind == MLC_GCALL_OP && b->op != bi->op) ||
      b->var->type.ndim != bi->var->type.ndim || b->var->type.dtype != bi->var->type.dtype)
    return mismatch(g, i, "binding", b->var->name);
  if (b->kind == MLC_GCALL_EXTERN)
    return mlc_error_set(g->err, "%s calls the extern function %s: a model of sizes cannot "
                                 "(its C function takes fixed shapes)",
                         b->var->name, b->extern_func);
  int p = -1;
  if (b->kind == MLC_GCALL_TIR) {
    if (!mlc_gmap_get(&g->func_index, b->tir, &p)) return mismatch(g, i, "kernel of", b->var->name);
    kernel_group *kg = &g->groups[p];
    if (kg->insts[i] && kg->insts[i] != bi->tir) return mismatch(g, i, "kernel of", b->var->name);
    kg->insts[i] = bi->tir;
  }
  for (int j = 0; j < b->n_args; j++) {
    bool moves;
    if (!match_arg(g, i, b, bi, j, &moves)) return false;
    if (moves && p >= 0) g->groups[p].static_params[j] = true;
    if (moves && p < 0) return mismatch(g, i, "a constant of changing shape read by", b->var->name);
  }
  return true;
}

static bool match_instance(generalizer *g, int i) {
  const mlc_gmodule *m = base_of(g), *mi = g->in.m[i];
  const mlc_gfunc *f = mlc_graph_main(m), *fi = mlc_graph_main(mi);
  if (f->n_params != fi->n_params || f->n_bindings != fi->n_bindings ||
      f->n_outputs != fi->n_outputs || m->n_index_checks != mi->n_index_checks)
    return mismatch(g, i, "main of", m->name);
  for (int k = 0; k < f->n_outputs; k++)
    if (origin(f, f->outputs[k]) != origin(fi, fi->outputs[k]))
      return mismatch(g, i, "output", f->outputs[k]->name);
  for (int k = 0; k < m->n_index_checks; k++)
    if (m->index_checks[k].param != mi->index_checks[k].param ||
        m->index_checks[k].n != mi->index_checks[k].n)
      return mismatch(g, i, "the index check of", m->index_checks[k].node);
  for (int k = 0; k < f->n_bindings; k++)
    if (!match_binding(g, i, &f->bindings[k], &fi->bindings[k])) return false;
  return true;
}

/* ---- the module of sizes ----------------------------------------------------------------------- */

static mlc_generalize_in fit_input(const generalizer *g, const mlc_prim_func *const *insts,
                                   const bool *static_params) {
  return (mlc_generalize_in){g->in.n, insts, g->n_sizes, g->in.values, g->names, g->lo, g->hi,
                             static_params};
}

/* v's extents as affine functions of the sizes (its values in every
 * instance: vs[i]). */
static bool fit_dims(generalizer *g, mlc_gvar *v, mlc_gvar *const *vs) {
  mlc_gmodule *m = base_of(g);
  mlc_generalize_in in = fit_input(g, NULL, NULL);
  v->dims = MLC_NEW_ARRAY(m->arena, mlc_gdim, v->type.ndim + 1);
  int64_t *vals = MLC_NEW_ARRAY(g->a, int64_t, g->in.n);
  for (int d = 0; d < v->type.ndim; d++) {
    for (int i = 0; i < g->in.n; i++) vals[i] = vs[i]->type.shape[d];
    int64_t coef[MLC_MAX_SIZES];
    if (!mlc_size_fit(&in, vals, &v->dims[d].off, coef, g->err))
      return mlc_error_prefix(g->err, "extent %d of %s", d, v->name);
    for (int k = 0; k < g->n_sizes; k++) {
      v->dims[d].coef[k] = coef[k];
      if (coef[k] < 0)
        return mlc_error_set(g->err, "extent %d of %s shrinks as %s grows", d, v->name,
                             g->sizes[k].name);
    }
  }
  return true;
}

static bool fit_io(generalizer *g) {
  mlc_gfunc *f = mlc_graph_main(base_of(g));
  mlc_gvar **vs = MLC_NEW_ARRAY(g->a, mlc_gvar *, g->in.n);
  for (int k = 0; k < f->n_params + f->n_outputs; k++) {
    for (int i = 0; i < g->in.n; i++) {
      mlc_gfunc *fi = mlc_graph_main(g->in.m[i]);
      vs[i] = k < f->n_params ? fi->params[k] : fi->outputs[k - f->n_params];
    }
    if (!fit_dims(g, vs[0], vs)) return false;
  }
  return true;
}

/* Every buffer of kernel kf as big at any size as the value the base
 * gives it at the bounds, which the memory plan holds (an extent
 * shrinking as a size grows would outgrow it). */
static bool fits_plan(generalizer *g, const mlc_gbinding *b, const mlc_prim_func *kf) {
  for (int j = 0; j <= b->n_args; j++) {
    const mlc_gtype *t = j < b->n_args ? &b->args[j]->type : &b->var->type;
    const mlc_buffer *buf = kf->params[j];
    for (int d = 0; d < buf->ndim; d++)
      if (buf->shape[d] != t->shape[d])
        return mlc_error_set(g->err, "kernel %s: %s is larger at some size than at the bounds",
                             kf->name, buf->name);
  }
  return true;
}

static bool generalize_kernels(generalizer *g) {
  mlc_gmodule *m = base_of(g);
  mlc_gfunc *f = mlc_graph_main(m);
  for (int p = 0; p < m->tir->n_funcs; p++) {
    kernel_group *kg = &g->groups[p];
    if (!kg->insts[0]) continue; /* main does not call it */
    mlc_generalize_in in = fit_input(g, kg->insts, kg->static_params);
    mlc_prim_func *kf = mlc_func_generalize(m->arena, &in, g->err);
    if (!kf) return false;
    for (int k = 0; k < f->n_bindings; k++) {
      mlc_gbinding *b = &f->bindings[k];
      if (b->kind != MLC_GCALL_TIR || b->tir != m->tir->funcs[p]) continue;
      if (!fits_plan(g, b, kf)) return false;
      b->tir = kf;
    }
    m->tir->funcs[p] = kf;
  }
  return true;
}

static void init_groups(generalizer *g) {
  mlc_gmodule *m = base_of(g);
  g->func_index = (mlc_gmap){.a = g->a};
  g->checked = (mlc_gmap){.a = g->a};
  g->groups = MLC_NEW_ARRAY(g->a, kernel_group, m->tir->n_funcs + 1);
  for (int p = 0; p < m->tir->n_funcs; p++) {
    mlc_gmap_put(&g->func_index, m->tir->funcs[p], p);
    g->groups[p].insts = MLC_NEW_ARRAY(g->a, const mlc_prim_func *, g->in.n);
    g->groups[p].static_params = MLC_NEW_ARRAY(g->a, bool, m->tir->funcs[p]->n_params + 1);
  }
}

static bool generalize(generalizer *g) {
  init_groups(g);
  for (int i = 0; i < g->in.n; i++)
    if (!match_instance(g, i)) return false;
  if (!fit_io(g) || !generalize_kernels(g)) return false;
  mlc_gmodule *m = base_of(g);
  m->n_sizes = g->n_sizes;
  m->sizes = MLC_NEW_ARRAY(m->arena, mlc_gsize, g->n_sizes);
  for (int k = 0; k < g->n_sizes; k++) {
    m->sizes[k] = g->sizes[k];
    m->sizes[k].name = mlc_arena_strdup(m->arena, g->sizes[k].name);
  }
  return mlc_graph_verify(m, g->err) ||
         mlc_error_prefix(g->err, "the module built for every size does not verify");
}

mlc_gmodule *mlc_graph_generalize(int n_sizes, const mlc_gsize *sizes, mlc_ginstance_fn make,
                                  void *ud, mlc_error *err) {
  if (n_sizes < 1 || n_sizes > MLC_GRAPH_MAX_SIZES)
    return mlc_error_set(err, "a model takes 1 to %d sizes", MLC_GRAPH_MAX_SIZES), NULL;
  for (int k = 0; k < n_sizes; k++) {
    if (!mlc_gsize_name_ok(sizes[k].name, err)) return NULL;
    for (int j = 0; j < k; j++)
      if (strcmp(sizes[j].name, sizes[k].name) == 0)
        return mlc_error_set(err, "size %s is given twice", sizes[k].name), NULL;
    if (sizes[k].lo < 0 || sizes[k].lo > sizes[k].hi || sizes[k].hi > INT32_MAX)
      return mlc_error_set(err, "size %s: bounds must be 0 <= lo <= hi <= %d", sizes[k].name,
                           INT32_MAX),
             NULL;
  }
  generalizer g = {.a = mlc_arena_new(), .n_sizes = n_sizes, .sizes = sizes, .err = err};
  g.names = MLC_NEW_ARRAY(g.a, const char *, n_sizes);
  g.lo = MLC_NEW_ARRAY(g.a, int64_t, n_sizes);
  g.hi = MLC_NEW_ARRAY(g.a, int64_t, n_sizes);
  for (int k = 0; k < n_sizes; k++) {
    g.names[k] = sizes[k].name;
    g.lo[k] = sizes[k].lo;
    g.hi[k] = sizes[k].hi;
  }
  bool ok = plan_instances(&g);
  int made = 0;
  for (; ok && made < g.in.n; made++)
    if (!(g.in.m[made] = make(ud, &g.in.values[made * n_sizes], err))) {
      ok = false;
      mlc_error_prefix(err, "at %s = %" PRId64, sizes[0].name, g.in.values[made * n_sizes]);
    }
  ok = ok && generalize(&g);
  mlc_gmodule *m = ok ? g.in.m[0] : NULL;
  for (int i = ok ? 1 : 0; i < made; i++) mlc_graph_free(g.in.m[i]);
  mlc_arena_free(g.a);
  return m;
}

/* Names the emitted entry declares itself, and C's keywords. */
static const char *const taken[] = {
    "input", "output", "workspace", "args", "ws", "rc", "i", "auto", "break", "case", "char",
    "const", "continue", "default", "do", "double", "else", "enum", "extern", "float", "for",
    "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
    "while", NULL};

/* Whether s is word followed by digits only ("input2"). */
static bool word_and_digits(const char *s, const char *word) {
  size_t n = strlen(word);
  if (strncmp(s, word, n) != 0) return false;
  for (s += n; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

bool mlc_gsize_name_ok(const char *name, mlc_error *err) {
  bool ident = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_';
  for (const char *p = name; ident && *p; p++)
    ident = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
  if (!ident || strlen(name) > 64)
    return mlc_error_set(err, "size name '%s' is no C identifier (of at most 64 characters)", name);
  bool clash = strncmp(name, "v_", 2) == 0 || word_and_digits(name, "input") ||
               word_and_digits(name, "output");
  for (int i = 0; taken[i] && !clash; i++) clash = strcmp(name, taken[i]) == 0;
  if (clash) return mlc_error_set(err, "size name '%s' is taken by the emitted C entry", name);
  return true;
}

/* ---- a module of sizes at run time ------------------------------------------------------------ */

int64_t mlc_gdim_at(const mlc_gmodule *m, const mlc_gdim *d, const int64_t *sizes) {
  int64_t v = d->off;
  for (int k = 0; k < m->n_sizes; k++) v += d->coef[k] * sizes[k];
  return v;
}

void mlc_gvar_shape_at(const mlc_gmodule *m, const mlc_gvar *v, const int64_t *sizes,
                       int64_t *shape) {
  for (int d = 0; d < v->type.ndim; d++)
    shape[d] = v->dims && sizes ? mlc_gdim_at(m, &v->dims[d], sizes) : v->type.shape[d];
}

bool mlc_graph_sizes_ok(const mlc_gmodule *m, const int64_t *sizes, mlc_error *err) {
  for (int k = 0; k < m->n_sizes; k++)
    if (sizes[k] < m->sizes[k].lo || sizes[k] > m->sizes[k].hi)
      return mlc_error_set(err, "size %s = %" PRId64 " is outside its bounds %" PRId64 "..%" PRId64,
                           m->sizes[k].name, sizes[k], m->sizes[k].lo, m->sizes[k].hi);
  return true;
}

bool mlc_graph_sizes_of(const mlc_gmodule *m, mlc_array *const *inputs, int64_t *sizes,
                        mlc_error *err) {
  const mlc_gfunc *f = mlc_graph_main(m);
  bool known[MLC_GRAPH_MAX_SIZES] = {0};
  for (int i = 0; i < f->n_params; i++) {
    const mlc_gvar *p = f->params[i];
    for (int d = 0; p->dims && d < p->type.ndim && d < inputs[i]->ndim; d++) {
      int only = -1, n = 0;
      for (int k = 0; k < m->n_sizes; k++)
        if (p->dims[d].coef[k]) only = k, n++;
      if (n != 1 || known[only]) continue;
      int64_t c = p->dims[d].coef[only], x = inputs[i]->shape[d] - p->dims[d].off;
      if (x % c) continue;
      sizes[only] = x / c;
      known[only] = true;
    }
  }
  for (int k = 0; k < m->n_sizes; k++)
    if (!known[k])
      return mlc_error_set(err, "no input's shape gives size %s", m->sizes[k].name);
  if (!mlc_graph_sizes_ok(m, sizes, err)) return false;
  for (int i = 0; i < f->n_params; i++) {
    int64_t shape[MLC_GRAPH_MAX_DIMS];
    const mlc_gvar *p = f->params[i];
    mlc_gvar_shape_at(m, p, sizes, shape);
    bool same = inputs[i]->ndim == p->type.ndim;
    for (int d = 0; same && d < p->type.ndim; d++) same = inputs[i]->shape[d] == shape[d];
    if (!same) {
      char s[128];
      mlc_gtype t = p->type;
      memcpy(t.shape, shape, sizeof(int64_t) * (size_t)t.ndim);
      mlc_gtype_str(&t, s, sizeof s);
      return mlc_error_set(err, "input %s: its shape is not %s (what the sizes give)", p->name, s);
    }
  }
  return true;
}
