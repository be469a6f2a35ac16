/* Reading a JSON model description and its .npy weights into main. */
#include "graph/graph_impl.h"

#include <ctype.h>
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
  for (int i = 0; i < L->n_names; i++)
    if (strcmp(L->names[i], s) == 0) return i;
  return -1;
}

static bool add_name(loader *L, const char *what, const char *s) {
  if (!is_ident(s)) return lfail(L, "%s name \"%s\" is not an identifier", what, s ? s : "");
  if (strcmp(s, "main") == 0 || strcmp(s, "cls") == 0 || strncmp(s, "fused_", 6) == 0)
    return lfail(L, "%s name \"%s\" is reserved", what, s);
  if (find_name(L, s) >= 0) return lfail(L, "%s name \"%s\" is used twice", what, s);
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

/* At most 2^31 elements, counted without overflowing. */
static bool small_enough(const mlc_gtype *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] > (INT64_C(1) << 31) || (n *= t->shape[i]) > (INT64_C(1) << 31)) return false;
  return true;
}

static bool get_type(loader *L, const char *ctx, const mlc_json *o, mlc_gtype *t) {
  memset(t, 0, sizeof *t);
  t->dtype = MLC_FLOAT32;
  const char *dt = get_str(o, "dtype");
  if (dt && strcmp(dt, "float32") != 0)
    return lfail(L, "%s: dtype \"%s\" is not supported (float32 only)", ctx, dt);
  if (!get_ints(L, ctx, mlc_json_get(o, "shape"), 1, &t->ndim, t->shape)) return false;
  if (t->ndim < 1) return lfail(L, "%s: shape must have at least one dimension", ctx);
  if (!small_enough(t)) return lfail(L, "%s: tensor too large (over 2^31 elements)", ctx);
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
    if (!get_type(L, ctx, o, &t)) return false;
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
  mlc_gtype t;
  float *data = mlc_npy_read(path, &t, &e);
  if (!data) return lfail(L, "weight '%s': %s", wname, e.msg);
  if (!mlc_gtype_equal(&t, &v->type)) {
    char s0[128], s1[128];
    mlc_gtype_str(&t, s0, sizeof s0);
    mlc_gtype_str(&v->type, s1, sizeof s1);
    mlc_free(data);
    return lfail(L, "weight '%s': %s has shape %s, the model says %s", wname, path, s0, s1);
  }
  size_t bytes = (size_t)mlc_gtype_numel(&t) * sizeof(float);
  v->data = mlc_arena_memdup(L->m->arena, data, bytes);
  mlc_free(data);
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
    if (!check_keys(L, ctx, o, " name shape dtype file ") ||
        !add_name(L, "weight", get_str(o, "name")))
      return false;
    const char *name = get_str(o, "name");
    snprintf(ctx, sizeof ctx, "weight '%s'", name);
    if (!get_type(L, ctx, o, &t)) return false;
    mlc_gvar *v = mlc_gvar_new(m, name, MLC_GVAR_CONST, &t);
    L->vars[L->n_names - 1] = v;
    m->consts[m->n_consts++] = v;
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
  int n_inputs;
  int inputs[8]; /* name indices */
  int state;     /* topological sort: 0 new, 1 on the stack, 2 done */
} node;

static bool read_attrs(loader *L, const node *nd, mlc_gattrs *a) {
  const mlc_json *o = nd->json;
  char ctx[128];
  snprintf(ctx, sizeof ctx, "node '%s'", nd->name);
  mlc_gattrs_default(a);
  if (nd->op == MLC_GOP_MAX_POOL2D) a->stride = 0; /* default: the pool size */
  static const char *int_keys[] = {"stride", "padding", "pool_size"};
  int64_t *dst[] = {&a->stride, &a->padding, &a->pool};
  for (int i = 0; i < 3; i++) {
    const mlc_json *v = mlc_json_get(o, int_keys[i]);
    if (!v) continue;
    if (v->kind != MLC_JSON_NUMBER || !v->is_integer || v->integer < 0 || v->integer > 4096)
      return lfail(L, "%s: \"%s\" must be an integer in [0, 4096]", ctx, int_keys[i]);
    *dst[i] = v->integer;
  }
  if (nd->op == MLC_GOP_MAX_POOL2D && a->stride == 0) a->stride = a->pool;
  const mlc_json *eps = mlc_json_get(o, "eps");
  if (eps) {
    if (eps->kind != MLC_JSON_NUMBER || !(eps->number > 0))
      return lfail(L, "%s: \"eps\" must be a positive number", ctx);
    a->eps = eps->number;
  }
  const mlc_json *axes = mlc_json_get(o, "axes"), *shape = mlc_json_get(o, "shape");
  if (axes && !get_ints(L, ctx, axes, 0, &a->n_ints, a->ints)) return false;
  if (shape && !get_ints(L, ctx, shape, -1, &a->n_ints, a->ints)) return false;
  return true;
}

static bool read_node(loader *L, const mlc_json *o, int index, node *nd) {
  char ctx[96];
  snprintf(ctx, sizeof ctx, "node %d", index);
  if (!check_keys(L, ctx, o, " name op inputs stride padding pool_size eps axes shape "))
    return false;
  nd->json = o;
  nd->name = get_str(o, "name");
  if (!add_name(L, "node", nd->name)) return false;
  snprintf(ctx, sizeof ctx, "node '%s'", nd->name);
  const char *op = get_str(o, "op");
  if (!op) return lfail(L, "%s: missing \"op\"", ctx);
  if (!mlc_gop_from_name(op, &nd->op))
    return lfail(L, "%s: unknown op \"%s\" (known: %s)", ctx, op, mlc_gop_names());
  const mlc_json *in = mlc_json_get(o, "inputs");
  if (!in || in->kind != MLC_JSON_ARRAY) return lfail(L, "%s: \"inputs\" must be an array", ctx);
  if (in->len != mlc_gop_n_inputs(nd->op))
    return lfail(L, "%s: %s takes %d inputs, got %d", ctx, op, mlc_gop_n_inputs(nd->op), in->len);
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

static bool bind_node(sorter *s, node *nd) {
  loader *L = s->L;
  mlc_gbinding *b = &s->out[s->n_out++];
  mlc_gtype ts[8], out;
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
    return lfail(L, "node '%s': %s", nd->name, e.msg);
  if (!small_enough(&out))
    return lfail(L, "node '%s': its result is too large (over 2^31 elements)", nd->name);
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

static bool load_nodes(loader *L, const mlc_json *arr, const mlc_json *outs, mlc_gfunc *main) {
  int n = arr->len;
  if (n < 1) return lfail(L, "the model has no nodes");
  sorter s = {L, MLC_NEW_ARRAY(L->m->arena, node, n), n, L->n_names,
              MLC_NEW_ARRAY(L->m->arena, mlc_gbinding, n), 0, MLC_NEW_ARRAY(L->m->arena, int, n), 0};
  for (int i = 0; i < n; i++)
    if (!read_node(L, arr->items[i], i, &s.nodes[i])) return false;
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
  L->vars = MLC_NEW_ARRAY(L->m->arena, mlc_gvar *, total + 1);
  mlc_gfunc *main = mlc_gfunc_new(L->m, "main", false);
  mlc_graph_add_func(L->m, main);
  return load_inputs(L, inputs, main) && load_weights(L, weights) &&
         load_nodes(L, nodes, outs, main);
}

mlc_gmodule *mlc_graph_parse(const char *filename, const char *text, size_t len,
                             const char *weights_dir, mlc_error *err) {
  mlc_gmodule *m = mlc_graph_new("model");
  loader L = {.m = m, .file = filename, .weights_dir = weights_dir, .err = err};
  mlc_error e;
  mlc_json *root = mlc_json_parse(m->arena, text, len, &e);
  bool ok;
  if (!root) ok = lfail(&L, "%s", e.msg);
  else if (root->kind != MLC_JSON_OBJECT) ok = lfail(&L, "a model is a JSON object");
  else ok = load_root(&L, root);
  if (ok) ok = mlc_graph_verify(m, err);
  if (!ok) {
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
