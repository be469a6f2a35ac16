/* Reading a JSON model description and its .npy weights into main. */
#include "frontend/frontend.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct loader {
  mlc_gmodule *m;
  const char *file;
  const char *weights_dir; /* NULL: seeded weights */
  mlc_error *err;
  /* Every name in scope: inputs, weights, then nodes. */
  int n_names;
  const char **names;
  mlc_gvar **vars; /* NULL for a node not yet bound */
  mlc_gmap index;      /* name -> its index in names (a scan per lookup is O(n^2)) */
} loader;

static bool lfail(loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool lfail(loader *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mlc_error_vset(L->err, fmt, ap);
  va_end(ap);
  return mlc_error_prefix(L->err, "%s", L->file);
}

static bool is_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

static int find_name(const loader *L, const char *s) {
  int i;
  return mlc_gmap_get(&L->index, s, &i) ? i : -1;
}

static bool add_name(loader *L, const char *what, const char *s) {
  if (!is_ident(s)) return lfail(L, "%s name \"%s\" is not an identifier", what, s ? s : "");
  if (strcmp(s, "main") == 0 || strcmp(s, "cls") == 0 || strncmp(s, "fused_", 6) == 0)
    return lfail(L, "%s name \"%s\" is reserved", what, s);
  if (find_name(L, s) >= 0) return lfail(L, "%s name \"%s\" is used twice", what, s);
  mlc_gmap_put(&L->index, s, L->n_names);
  L->names[L->n_names++] = s;
  return true;
}

static const char *get_str(const mlc_json *o, const char *key) {
  const mlc_json *v = mlc_json_get(o, key);
  return v && v->kind == MLC_JSON_STRING ? v->str : NULL;
}

/* A JSON array of integers (each in [lo, 2^40]) into out. */
static bool get_ints(loader *L, const char *ctx, const mlc_json *v, int64_t lo, int *n,
                     int64_t *out) {
  if (!v || v->kind != MLC_JSON_ARRAY || v->len > MLC_GRAPH_MAX_DIMS)
    return lfail(L, "%s: expected an array of at most %d integers", ctx, MLC_GRAPH_MAX_DIMS);
  for (int i = 0; i < v->len; i++) {
    const mlc_json *e = v->items[i];
    if (e->kind != MLC_JSON_NUMBER || !e->is_integer || e->integer < lo ||
        e->integer > (INT64_C(1) << 40))
      return lfail(L, "%s: entry %d is not an integer >= %lld", ctx, i, (long long)lo);
    out[i] = e->integer;
  }
  *n = v->len;
  return true;
}

/* A shape and, for inputs (any_dtype), one of the graph's dtypes (token
 * ids: "int64"); weights are float32. */
static bool get_type(loader *L, const char *ctx, const mlc_json *o, bool any_dtype, mlc_gtype *t) {
  memset(t, 0, sizeof *t);
  t->dtype = MLC_FLOAT32;
  const mlc_json *dv = mlc_json_get(o, "dtype");
  const char *dt = get_str(o, "dtype");
  if (dv && !dt) return lfail(L, "%s: \"dtype\" must be a string", ctx);
  if (dt && any_dtype && !mlc_graph_dtype_from_name(dt, &t->dtype))
    return lfail(L, "%s: dtype \"%s\" is not one of %s", ctx, dt, mlc_graph_dtype_names());
  if (dt && !any_dtype && strcmp(dt, "float32") != 0)
    return lfail(L, "%s: dtype \"%s\" is not supported (float32 only)", ctx, dt);
  if (!get_ints(L, ctx, mlc_json_get(o, "shape"), 1, &t->ndim, t->shape)) return false;
  if (t->ndim < 1) return lfail(L, "%s: shape must have at least one dimension", ctx);
  mlc_error e;
  if (mlc_tensor_numel_checked(ctx, t->shape, t->ndim, 4, &e) < 0) return lfail(L, "%s", e.msg);
  return true;
}

static bool check_keys(loader *L, const char *ctx, const mlc_json *o, const char *allowed) {
  if (o->kind != MLC_JSON_OBJECT) return lfail(L, "%s: expected an object", ctx);
  for (int i = 0; i < o->len; i++) {
    char pat[80];
    snprintf(pat, sizeof pat, " %s ", o->keys[i]);
    if (!strstr(allowed, pat)) return lfail(L, "%s: unknown key \"%s\"", ctx, o->keys[i]);
  }
  return true;
}

static const mlc_json *get_array(loader *L, const mlc_json *root, const char *key, bool required) {
  const mlc_json *v = mlc_json_get(root, key);
  if (!v && !required) return NULL;
  if (!v || v->kind != MLC_JSON_ARRAY) {
    lfail(L, "\"%s\" must be an array", key);
    return NULL;
  }
  return v;
}

/* ---- inputs and weights ------------------------------------------------------ */

static bool load_inputs(loader *L, const mlc_json *arr, mlc_gfunc *main) {
  main->params = MLC_NEW_ARRAY(L->m->arena, mlc_gvar *, arr->len > 0 ? arr->len : 1);
  for (int i = 0; i < arr->len; i++) {
    const mlc_json *o = arr->items[i];
    char ctx[96];
    snprintf(ctx, sizeof ctx, "input %d", i);
    mlc_gtype t;
    if (!check_keys(L, ctx, o, " name shape dtype ") || !add_name(L, "input", get_str(o, "name")))
      return false;
    snprintf(ctx, sizeof ctx, "input '%s'", get_str(o, "name"));
    if (!get_type(L, ctx, o, true, &t)) return false;
    mlc_gvar *v = mlc_gvar_new(L->m, get_str(o, "name"), MLC_GVAR_PARAM, &t);
    L->vars[L->n_names - 1] = v;
    main->params[main->n_params++] = v;
  }
  if (arr->len < 1) return lfail(L, "the model has no inputs");
  return true;
}

static float *seeded_weight(mlc_arena *a, const mlc_gtype *t, int index) {
  int64_t n = mlc_gtype_numel(t);
  float *d = mlc_arena_alloc(a, (size_t)n * sizeof(float));
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 1234, (uint64_t)index);
  for (int64_t i = 0; i < n; i++) d[i] = mlc_pcg32_uniform(&r, -0.5f, 0.5f);
  return d;
}

static bool load_weight_file(loader *L, const char *wname, const char *file, mlc_gvar *v) {
  char path[1024];
  mlc_error e;
  snprintf(path, sizeof path, "%s/%s", L->weights_dir, file);
  /* The arena copy first: running out of memory there must not find the
   * file's data on the heap (the model gave the shape; checked below). */
  int64_t numel = mlc_gtype_numel(&v->type);
  float *dst = mlc_arena_alloc(L->m->arena, numel > 0 ? (size_t)numel * sizeof(float) : 1);
  mlc_gtype t;
  float *data = mlc_npy_read(path, &t, &e);
  if (!data) return lfail(L, "weight '%s': %s", wname, e.msg);
  if (t.dtype != MLC_FLOAT32) { /* until graph constants take other dtypes */
    mlc_free(data);
    return lfail(L, "weight '%s': %s holds %s, weights are float32 for now", wname, path,
                 mlc_dtype_name(t.dtype));
  }
  if (!mlc_gtype_equal(&t, &v->type)) {
    char s0[128], s1[128];
    mlc_gtype_str(&t, s0, sizeof s0);
    mlc_gtype_str(&v->type, s1, sizeof s1);
    mlc_free(data);
    return lfail(L, "weight '%s': %s has shape %s, the model says %s", wname, path, s0, s1);
  }
  size_t bytes = (size_t)mlc_gtype_numel(&t) * sizeof(float);
  v->data = bytes ? memcpy(dst, data, bytes) : dst;
  mlc_free(data);
  return true;
}

/* "values": the weight's elements inline, row-major (small constants such
 * as gather indices). */
static bool read_values(loader *L, const char *ctx, const mlc_json *arr, mlc_gvar *v) {
  int64_t n = mlc_gtype_numel(&v->type);
  if (arr->kind != MLC_JSON_ARRAY || arr->len != n)
    return lfail(L, "%s: \"values\" must be an array of %lld numbers (the shape's count)", ctx,
                 (long long)n);
  float *d = mlc_arena_alloc(L->m->arena, sizeof(float) * (size_t)n);
  v->data = d;
  for (int64_t i = 0; i < n; i++) {
    const mlc_json *e = arr->items[i];
    if (e->kind != MLC_JSON_NUMBER || !isfinite(e->number))
      return lfail(L, "%s: \"values\" entry %lld is not a number", ctx, (long long)i);
    d[i] = (float)e->number;
  }
  return true;
}

static bool load_weights(loader *L, const mlc_json *arr) {
  mlc_gmodule *m = L->m;
  if (!arr) return true;
  m->consts = MLC_NEW_ARRAY(m->arena, mlc_gvar *, arr->len > 0 ? arr->len : 1);
  for (int i = 0; i < arr->len; i++) {
    const mlc_json *o = arr->items[i];
    char ctx[96];
    snprintf(ctx, sizeof ctx, "weight %d", i);
    mlc_gtype t;
    if (!check_keys(L, ctx, o, " name shape dtype file values ") ||
        !add_name(L, "weight", get_str(o, "name")))
      return false;
    const char *name = get_str(o, "name");
    snprintf(ctx, sizeof ctx, "weight '%s'", name);
    if (!get_type(L, ctx, o, false, &t)) return false;
    mlc_gvar *v = mlc_gvar_new(m, name, MLC_GVAR_CONST, &t);
    L->vars[L->n_names - 1] = v;
    m->consts[m->n_consts++] = v;
    const mlc_json *values = mlc_json_get(o, "values");
    if (values) {
      if (!read_values(L, ctx, values, v)) return false;
      continue;
    }
    if (!L->weights_dir) {
      v->data = seeded_weight(m->arena, &t, i);
      continue;
    }
    const char *file = get_str(o, "file");
    char def[300];
    snprintf(def, sizeof def, "%s.npy", name);
    if (!load_weight_file(L, name, file ? file : def, v)) return false;
  }
  return true;
}

/* ---- nodes ------------------------------------------------------------------- */

typedef struct node {
  const mlc_json *json;
  const char *name;
  mlc_gop op;
  const char *func; /* a call_extern node's C function; NULL: an op node */
  mlc_gtype out;    /* call_extern: the result's type ("out_shape", "dtype") */
  int n_inputs;
  int inputs[MLC_GRAPH_MAX_ARGS]; /* name indices */
  int state;     /* topological sort: 0 new, 1 on the stack, 2 done */
} node;

static bool check_attr_keys(loader *L, const node *nd, const char *ctx) {
  static const char *const node_keys = " name op inputs ";
  const mlc_json *o = nd->json;
  for (int i = 0; i < o->len; i++) {
    char pat[80];
    snprintf(pat, sizeof pat, " %s ", o->keys[i]);
    if (!strstr(node_keys, pat) && !mlc_gop_has_key(nd->op, o->keys[i]))
      return lfail(L, "%s: %s takes no attribute \"%s\"", ctx, mlc_gop_name(nd->op), o->keys[i]);
  }
  return true;
}

/* A number attribute: any finite number, or "inf"/"-inf" strings where
 * the value may be unbounded (clip). */
static bool get_number(loader *L, const char *ctx, const mlc_json *o, const char *key,
                       double *out) {
  const mlc_json *v = mlc_json_get(o, key);
  if (!v) return true;
  if (v->kind == MLC_JSON_STRING && (strcmp(v->str, "inf") == 0 || strcmp(v->str, "-inf") == 0)) {
    *out = v->str[0] == '-' ? -INFINITY : INFINITY;
    return true;
  }
  if (v->kind != MLC_JSON_NUMBER || !isfinite(v->number))
    return lfail(L, "%s: \"%s\" must be a number", ctx, key);
  *out = v->number;
  return true;
}

/* An integer in [lo, 4096]; false with a message when present and not. */
static bool get_int(loader *L, const char *ctx, const mlc_json *o, const char *key, int64_t lo,
                    int64_t *out) {
  const mlc_json *v = mlc_json_get(o, key);
  if (!v) return true;
  if (v->kind != MLC_JSON_NUMBER || !v->is_integer || v->integer < lo || v->integer > 4096)
    return lfail(L, "%s: \"%s\" must be an integer in [%lld, 4096]", ctx, key, (long long)lo);
  *out = v->integer;
  return true;
}

/* An array of exactly n integers in [lo, 4096]. */
static bool get_fixed_ints(loader *L, const char *ctx, const mlc_json *o, const char *key, int n,
                           int64_t lo, int64_t *out) {
  const mlc_json *v = mlc_json_get(o, key);
  if (!v) return true;
  if (v->kind != MLC_JSON_ARRAY || v->len != n)
    return lfail(L, "%s: \"%s\" must be an array of %d integers", ctx, key, n);
  for (int i = 0; i < n; i++) {
    const mlc_json *e = v->items[i];
    if (e->kind != MLC_JSON_NUMBER || !e->is_integer || e->integer < lo || e->integer > 4096)
      return lfail(L, "%s: \"%s\" entry %d must be an integer in [%lld, 4096]", ctx, key, i,
                   (long long)lo);
    out[i] = e->integer;
  }
  return true;
}

static bool get_bool(loader *L, const char *ctx, const mlc_json *o, const char *key, bool *out) {
  const mlc_json *v = mlc_json_get(o, key);
  if (v && v->kind != MLC_JSON_BOOL) return lfail(L, "%s: \"%s\" must be true or false", ctx, key);
  if (v) *out = v->boolean;
  return true;
}

/* Window attributes: "stride" / "padding" / "pool_size" give one value
 * for every axis (and side); "strides", "pads", "kernel", "dilations",
 * "output_padding" one per spatial axis (pads two). Pools stride by their
 * window unless told. Other ops take none of these keys (check_attr_keys). */
static bool read_window_attrs(loader *L, const char *ctx, mlc_gop op, const mlc_json *o,
                              mlc_gattrs *a) {
  int64_t stride = 0, padding = -1, pool = 0;
  int nsp = mlc_gop_window_dims(op);
  if (!nsp) return true;
  if (!get_int(L, ctx, o, "stride", 1, &stride) || !get_int(L, ctx, o, "padding", 0, &padding) ||
      !get_int(L, ctx, o, "pool_size", 1, &pool) || !get_int(L, ctx, o, "groups", 1, &a->groups))
    return false;
  for (int i = 0; i < nsp; i++) {
    if (pool) a->kernel[i] = pool;
    if (stride) a->strides[i] = stride;
    if (padding >= 0) a->pads[i] = a->pads[nsp + i] = padding;
  }
  if (!get_fixed_ints(L, ctx, o, "kernel", nsp, 1, a->kernel) ||
      !get_fixed_ints(L, ctx, o, "strides", nsp, 1, a->strides) ||
      !get_fixed_ints(L, ctx, o, "pads", 2 * nsp, 0, a->pads) ||
      !get_fixed_ints(L, ctx, o, "dilations", nsp, 1, a->dilations) ||
      !get_fixed_ints(L, ctx, o, "output_padding", nsp, 0, a->output_padding))
    return false;
  bool is_pool = op == MLC_GOP_MAX_POOL2D || op == MLC_GOP_AVG_POOL2D ||
                 op == MLC_GOP_MAX_POOL3D || op == MLC_GOP_AVG_POOL3D;
  if (!stride && !mlc_json_get(o, "strides") && is_pool)
    memcpy(a->strides, a->kernel, sizeof(int64_t) * (size_t)nsp);
  return get_bool(L, ctx, o, "ceil_mode", &a->ceil_mode) &&
         get_bool(L, ctx, o, "count_include_pad", &a->count_include_pad);
}

/* A scalar attribute (attrs.def) when the node carries its key. */
static bool read_scalar(loader *L, const char *ctx, const mlc_json *o, const mlc_gattr *g,
                        mlc_gattrs *a) {
  const mlc_json *v = mlc_json_get(o, g->key);
  if (!v) return true;
  const int64_t big = INT64_C(1) << 40;
  switch (g->kind) {
  case MLC_GATTR_NUMBER: return get_number(L, ctx, o, g->key, &MLC_GATTR_REF(a, g, double));
  case MLC_GATTR_POSITIVE:
    if (v->kind != MLC_JSON_NUMBER || !(v->number > 0))
      return lfail(L, "%s: \"%s\" must be a positive number", ctx, g->key);
    MLC_GATTR_REF(a, g, double) = v->number;
    return true;
  case MLC_GATTR_AXIS:
    if (v->kind != MLC_JSON_NUMBER || !v->is_integer || v->integer < -MLC_GRAPH_MAX_DIMS ||
        v->integer >= MLC_GRAPH_MAX_DIMS)
      return lfail(L, "%s: \"%s\" must be an integer in [-%d, %d)", ctx, g->key,
                   MLC_GRAPH_MAX_DIMS, MLC_GRAPH_MAX_DIMS);
    MLC_GATTR_REF(a, g, int64_t) = v->integer;
    return true;
  case MLC_GATTR_INT:
    if (v->kind != MLC_JSON_NUMBER || !v->is_integer || v->integer < -big || v->integer > big)
      return lfail(L, "%s: \"%s\" must be an integer in [-2^40, 2^40]", ctx, g->key);
    MLC_GATTR_REF(a, g, int64_t) = v->integer;
    return true;
  case MLC_GATTR_BOOL: return get_bool(L, ctx, o, g->key, &MLC_GATTR_REF(a, g, bool));
  case MLC_GATTR_DTYPE:
    if (v->kind != MLC_JSON_STRING || !mlc_graph_dtype_from_name(v->str, &MLC_GATTR_REF(a, g, mlc_dtype)))
      return lfail(L, "%s: \"%s\" must be one of %s", ctx, g->key, mlc_graph_dtype_names());
    return true;
  }
  mlc_unreachable();
}

static bool read_slice(loader *L, const char *ctx, const mlc_json *o, mlc_gattrs *a);
static bool read_pad(loader *L, const char *ctx, const mlc_json *o, mlc_gattrs *a);

static bool read_attrs(loader *L, const node *nd, mlc_gattrs *a) {
  const mlc_json *o = nd->json;
  char ctx[128];
  snprintf(ctx, sizeof ctx, "node '%s'", nd->name);
  if (!check_attr_keys(L, nd, ctx)) return false;
  mlc_gattrs_init(nd->op, a);
  if (!read_window_attrs(L, ctx, nd->op, o, a)) return false;
  const mlc_json *axes = mlc_json_get(o, "axes"), *shape = mlc_json_get(o, "shape");
  if (axes && !get_ints(L, ctx, axes, nd->op == MLC_GOP_TRANSPOSE ? 0 : -MLC_GRAPH_MAX_DIMS,
                       &a->n_ints, a->ints))
    return false;
  if (shape && !get_ints(L, ctx, shape, -1, &a->n_ints, a->ints)) return false;
  for (int i = 0; i < mlc_gattr_count; i++)
    if (!read_scalar(L, ctx, o, &mlc_gattr_table[i], a)) return false;
  if (nd->op == MLC_GOP_PAD) return read_pad(L, ctx, o, a);
  return nd->op != MLC_GOP_SLICE || read_slice(L, ctx, o, a);
}

/* pad: "pad_before" and "pad_after", one entry per axis (negative
 * removes), "pad_value" (0). */
static bool read_pad(loader *L, const char *ctx, const mlc_json *o, mlc_gattrs *a) {
  const mlc_json *b = mlc_json_get(o, "pad_before"), *e = mlc_json_get(o, "pad_after");
  int nb = 0, ne = 0;
  if (!b || !e) return lfail(L, "%s: pad needs \"pad_before\" and \"pad_after\"", ctx);
  if (!get_ints(L, ctx, b, -(INT64_C(1) << 40), &nb, a->pad_before) ||
      !get_ints(L, ctx, e, -(INT64_C(1) << 40), &ne, a->pad_after))
    return false;
  if (nb != ne)
    return lfail(L, "%s: \"pad_before\" has %d entries, \"pad_after\" %d", ctx, nb, ne);
  a->n_pads = nb;
  return get_number(L, ctx, o, "pad_value", &a->pad_value);
}

/* slice: "starts", "ends" and optional "steps" (1), one per "axes" entry. */
static bool read_slice(loader *L, const char *ctx, const mlc_json *o, mlc_gattrs *a) {
  static const char *keys[] = {"starts", "ends", "steps"};
  int64_t *dst[] = {a->starts, a->ends, a->steps};
  for (int i = 0; i < a->n_ints; i++) a->steps[i] = 1;
  for (int k = 0; k < 3; k++) {
    const mlc_json *v = mlc_json_get(o, keys[k]);
    int n = a->n_ints;
    if (!v && k == 2) continue;
    if (!v || !get_ints(L, ctx, v, -(INT64_C(1) << 40), &n, dst[k])) {
      if (!v) return lfail(L, "%s: slice needs \"axes\", \"starts\" and \"ends\"", ctx);
      return false;
    }
    if (n != a->n_ints)
      return lfail(L, "%s: \"%s\" has %d entries for %d axes", ctx, keys[k], n, a->n_ints);
  }
  return true;
}

/* {"op": "call_extern", "func": F, "inputs": [...], "out_shape": [...],
 * "dtype": "float32"}: a C function in destination-passing style. */
static bool read_extern(loader *L, const char *ctx, const mlc_json *o, node *nd) {
  if (!check_keys(L, ctx, o, " name op func inputs out_shape dtype ")) return false;
  nd->func = get_str(o, "func");
  mlc_error e;
  if (!nd->func) return lfail(L, "%s: call_extern needs \"func\", the C function's name", ctx);
  if (!mlc_graph_extern_name_ok(L->m, nd->func, &e)) return lfail(L, "%s: %s", ctx, e.msg);
  const mlc_json *in = mlc_json_get(o, "inputs");
  if (!in || in->kind != MLC_JSON_ARRAY) return lfail(L, "%s: \"inputs\" must be an array", ctx);
  if (in->len > MLC_GRAPH_MAX_EXTERN_ARGS)
    return lfail(L, "%s: call_extern takes at most %d inputs, got %d", ctx,
                 MLC_GRAPH_MAX_EXTERN_ARGS, in->len);
  nd->n_inputs = in->len;
  mlc_gtype *t = &nd->out;
  memset(t, 0, sizeof *t);
  t->dtype = MLC_FLOAT32;
  const char *dt = get_str(o, "dtype");
  if (mlc_json_get(o, "dtype") && (!dt || strcmp(dt, "float32") != 0))
    return lfail(L, "%s: dtype \"%s\" is not supported (float32 only)", ctx, dt ? dt : "?");
  const mlc_json *shape = mlc_json_get(o, "out_shape");
  if (!shape) return lfail(L, "%s: call_extern needs \"out_shape\", the result's shape", ctx);
  char what[128];
  snprintf(what, sizeof what, "%s: \"out_shape\"", ctx);
  if (!get_ints(L, what, shape, 1, &t->ndim, t->shape)) return false;
  if (t->ndim < 1) return lfail(L, "%s must have at least one dimension", what);
  if (mlc_tensor_numel_checked(what, t->shape, t->ndim, 4, &e) < 0) return lfail(L, "%s", e.msg);
  return true;
}

static bool read_node(loader *L, const mlc_json *o, int index, node *nd) {
  char ctx[96];
  snprintf(ctx, sizeof ctx, "node %d", index);
  if (o->kind != MLC_JSON_OBJECT) return lfail(L, "%s: expected an object", ctx);
  nd->json = o;
  nd->name = get_str(o, "name");
  if (!add_name(L, "node", nd->name)) return false;
  snprintf(ctx, sizeof ctx, "node '%s'", nd->name);
  const char *op = get_str(o, "op");
  if (!op) return lfail(L, "%s: missing \"op\"", ctx);
  if (strcmp(op, "call_extern") == 0) return read_extern(L, ctx, o, nd);
  if (!mlc_gop_from_name(op, &nd->op))
    return lfail(L, "%s: unknown op \"%s\" (known: %s, call_extern)", ctx, op, mlc_gop_names());
  const mlc_json *in = mlc_json_get(o, "inputs");
  if (!in || in->kind != MLC_JSON_ARRAY) return lfail(L, "%s: \"inputs\" must be an array", ctx);
  if (!mlc_gop_arity_ok(nd->op, in->len)) {
    mlc_error e;
    mlc_gop_arity_error(nd->op, in->len, &e);
    return lfail(L, "%s: %s", ctx, e.msg);
  }
  nd->n_inputs = in->len;
  return true;
}

/* Inputs resolve to names once every node is named (nodes may refer to
 * later ones; the sort puts them in order). */
static bool resolve_inputs(loader *L, node *nd) {
  const mlc_json *in = mlc_json_get(nd->json, "inputs");
  for (int j = 0; j < in->len; j++) {
    const char *s = in->items[j]->kind == MLC_JSON_STRING ? in->items[j]->str : NULL;
    int k = s ? find_name(L, s) : -1;
    if (k < 0)
      return lfail(L, "node '%s': input %d \"%s\" is not an input, weight or node", nd->name, j,
                   s ? s : "(not a string)");
    nd->inputs[j] = k;
  }
  return true;
}

typedef struct sorter {
  loader *L;
  node *nodes;
  int n_nodes, first_node; /* name index of node 0 */
  mlc_gbinding *out;
  int n_out;
  int *stack; /* nodes being visited, outermost first */
  int depth;
} sorter;

static bool bind_extern(sorter *s, node *nd, mlc_gbinding *b) {
  loader *L = s->L;
  b->kind = MLC_GCALL_EXTERN;
  b->extern_func = nd->func;
  mlc_gattrs_default(&b->attrs);
  b->n_args = nd->n_inputs;
  b->args = MLC_NEW_ARRAY(L->m->arena, mlc_gvar *, b->n_args > 0 ? b->n_args : 1);
  for (int j = 0; j < b->n_args; j++) b->args[j] = L->vars[nd->inputs[j]];
  b->var = mlc_gvar_new(L->m, nd->name, MLC_GVAR_BOUND, &nd->out);
  L->vars[nd - s->nodes + s->first_node] = b->var;
  return true;
}

static bool bind_node(sorter *s, node *nd) {
  loader *L = s->L;
  mlc_gbinding *b = &s->out[s->n_out++];
  mlc_gtype ts[MLC_GRAPH_MAX_ARGS], out;
  if (nd->func) return bind_extern(s, nd, b);
  b->kind = MLC_GCALL_OP;
  b->op = nd->op;
  if (!read_attrs(L, nd, &b->attrs)) return false;
  b->n_args = nd->n_inputs;
  b->args = MLC_NEW_ARRAY(L->m->arena, mlc_gvar *, b->n_args);
  for (int j = 0; j < b->n_args; j++) {
    b->args[j] = L->vars[nd->inputs[j]];
    ts[j] = b->args[j]->type;
  }
  mlc_error e;
  if (!mlc_gop_infer(nd->op, &b->attrs, b->n_args, ts, &out, &e))
    return lfail(L, "node '%s': %s", nd->name, e.msg); /* results over the size limit too */
  b->var = mlc_gvar_new(L->m, nd->name, MLC_GVAR_BOUND, &out);
  L->vars[nd - s->nodes + s->first_node] = b->var;
  return true;
}

/* Depth-first: producers first; a node met again while on the stack closes
 * a cycle. */
static bool cycle_error(sorter *s, node *nd) {
  char path[512];
  size_t k = 0;
  int from = s->depth - 1;
  while (from > 0 && &s->nodes[s->stack[from]] != nd) from--;
  for (int i = from; i < s->depth && k < sizeof path; i++)
    k += (size_t)snprintf(path + k, sizeof path - k, "'%s' -> ", s->nodes[s->stack[i]].name);
  if (k < sizeof path) snprintf(path + k, sizeof path - k, "'%s'", nd->name);
  return lfail(s->L, "node '%s' is part of a cycle: %s", nd->name, path);
}

static bool visit(sorter *s, node *nd) {
  if (nd->state == 2) return true;
  if (nd->state == 1) return cycle_error(s, nd);
  nd->state = 1;
  s->stack[s->depth++] = (int)(nd - s->nodes);
  for (int j = 0; j < nd->n_inputs; j++) {
    int k = nd->inputs[j] - s->first_node;
    if (k >= 0 && !visit(s, &s->nodes[k])) return false;
  }
  s->depth--;
  nd->state = 2;
  return bind_node(s, nd);
}

static void mark_live(sorter *s, int name_index, bool *live) {
  int k = name_index - s->first_node;
  if (k < 0 || live[k]) return;
  live[k] = true;
  for (int j = 0; j < s->nodes[k].n_inputs; j++) mark_live(s, s->nodes[k].inputs[j], live);
}

/* One C declaration per function: every node calling it passes as many
 * inputs. */
static bool check_extern_arity(loader *L, const node *nodes, int n) {
  mlc_gmap first = {.a = L->m->arena, .strings = true}; /* func -> its first node */
  for (int i = 0; i < n; i++) {
    int k;
    if (!nodes[i].func) continue;
    if (!mlc_gmap_get(&first, nodes[i].func, &k)) mlc_gmap_put(&first, nodes[i].func, i);
    else if (nodes[k].n_inputs != nodes[i].n_inputs)
      return lfail(L, "node '%s': call_extern \"%s\" with %d inputs, node '%s' calls it with %d",
                   nodes[i].name, nodes[i].func, nodes[i].n_inputs, nodes[k].name,
                   nodes[k].n_inputs);
  }
  return true;
}

static bool load_nodes(loader *L, const mlc_json *arr, const mlc_json *outs, mlc_gfunc *main) {
  int n = arr->len;
  if (n < 1) return lfail(L, "the model has no nodes");
  sorter s = {L, MLC_NEW_ARRAY(L->m->arena, node, n), n, L->n_names,
              MLC_NEW_ARRAY(L->m->arena, mlc_gbinding, n), 0, MLC_NEW_ARRAY(L->m->arena, int, n), 0};
  for (int i = 0; i < n; i++)
    if (!read_node(L, arr->items[i], i, &s.nodes[i])) return false;
  if (!check_extern_arity(L, s.nodes, n)) return false;
  for (int i = 0; i < n; i++)
    if (!resolve_inputs(L, &s.nodes[i])) return false;
  for (int i = 0; i < n; i++)
    if (!visit(&s, &s.nodes[i])) return false;
  if (outs->len < 1) return lfail(L, "the model has no outputs");
  bool *live = MLC_NEW_ARRAY(L->m->arena, bool, n);
  main->outputs = MLC_NEW_ARRAY(L->m->arena, mlc_gvar *, outs->len);
  for (int i = 0; i < outs->len; i++) {
    const char *o = outs->items[i]->kind == MLC_JSON_STRING ? outs->items[i]->str : "";
    int k = find_name(L, o);
    if (k < s.first_node) return lfail(L, "output \"%s\" is not a node", o);
    mark_live(&s, k, live);
  }
  for (int i = 0; i < n; i++)
    if (!live[i])
      return lfail(L, "node '%s': its result is never used (not an output, feeds no output)",
                   s.nodes[i].name);
  mlc_gfunc_set_bindings(L->m, main, s.n_out, s.out);
  for (int i = 0; i < outs->len; i++) {
    mlc_gvar *v = L->vars[find_name(L, outs->items[i]->str)];
    for (int j = 0; j < main->n_outputs; j++)
      if (main->outputs[j] == v) return lfail(L, "output \"%s\" is listed twice", v->name);
    main->outputs[main->n_outputs++] = v;
  }
  return true;
}

static bool load_root(loader *L, const mlc_json *root) {
  if (!check_keys(L, "model", root, " name inputs weights nodes outputs "))
    return false;
  const char *name = get_str(root, "name");
  if (name && !is_ident(name)) return lfail(L, "model name \"%s\" is not an identifier", name);
  if (name) L->m->name = mlc_arena_strdup(L->m->arena, name);
  const mlc_json *inputs = get_array(L, root, "inputs", true);
  if (!inputs) return false;
  const mlc_json *weights = get_array(L, root, "weights", false);
  if (!weights && mlc_json_get(root, "weights")) return false;
  const mlc_json *nodes = get_array(L, root, "nodes", true);
  if (!nodes) return false;
  const mlc_json *outs = get_array(L, root, "outputs", true);
  if (!outs) return false;
  int total = inputs->len + (weights ? weights->len : 0) + nodes->len;
  L->names = MLC_NEW_ARRAY(L->m->arena, const char *, total + 1);
  L->index = (mlc_gmap){.a = L->m->arena, .strings = true};
  L->vars = MLC_NEW_ARRAY(L->m->arena, mlc_gvar *, total + 1);
  mlc_gfunc *main = mlc_gfunc_new(L->m, "main", false);
  mlc_graph_add_func(L->m, main);
  return load_inputs(L, inputs, main) && load_weights(L, weights) &&
         load_nodes(L, nodes, outs, main);
}

/* Everything the model takes (its JSON, graph, seeded weights) is in the
 * module's arena, and the verifier's scratch in children of it: running
 * out of memory there jumps back here and is an error. Weights read from
 * files come in through mlc_npy_read, which reports running out itself. */
static bool load_guarded(loader *L, const char *text, size_t len) {
  jmp_buf jb;
  if (setjmp(jb)) return lfail(L, "out of memory loading the model");
  mlc_arena_set_oom_jump(L->m->arena, &jb);
  mlc_error e;
  mlc_json *root = mlc_json_parse(L->m->arena, text, len, &e);
  bool ok;
  if (!root) ok = lfail(L, "%s", e.msg);
  else if (root->kind != MLC_JSON_OBJECT) ok = lfail(L, "a model is a JSON object");
  else ok = load_root(L, root) && mlc_graph_verify(L->m, L->err);
  mlc_arena_set_oom_jump(L->m->arena, NULL);
  return ok;
}

mlc_gmodule *mlc_graph_parse(const char *filename, const char *text, size_t len,
                             const char *weights_dir, mlc_error *err) {
  mlc_gmodule *m = mlc_graph_new("model"); /* fixed size: aborts by design */
  loader L = {.m = m, .file = filename, .weights_dir = weights_dir, .err = err};
  if (!load_guarded(&L, text, len)) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

/* examples/mlp.json -> examples/mlp */
static char *default_weights_dir(const char *path) {
  char *dir = mlc_xstrdup(path);
  size_t n = strlen(dir);
  if (n > 5 && strcmp(dir + n - 5, ".json") == 0) dir[n - 5] = 0;
  return dir;
}

mlc_gmodule *mlc_graph_load(const char *path, const char *weights_dir, mlc_error *err) {
  size_t len;
  char *text = mlc_read_file(path, &len, err);
  if (!text) return NULL;
  char *dir = weights_dir ? NULL : default_weights_dir(path);
  mlc_gmodule *m = mlc_graph_parse(path, text, len, weights_dir ? weights_dir : dir, err);
  mlc_free(dir);
  mlc_free(text);
  return m;
}

const char **mlc_graph_shape_list(mlc_arena *a, const char *text) {
  if (!text || !*text) return NULL;
  int n = 1;
  for (const char *p = text; *p; p++) n += *p == ';';
  const char **list = MLC_NEW_ARRAY(a, const char *, n + 1);
  int k = 0;
  for (const char *p = text; *p;) {
    size_t len = strcspn(p, ";");
    if (len) list[k++] = mlc_arena_strndup(a, p, len);
    p += len + (p[len] == ';');
  }
  list[k] = NULL;
  return list;
}
