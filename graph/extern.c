/* call_extern: C functions a model calls in destination-passing style
 * (R.call_dps_packed). The passes leave these bindings alone; running the
 * model in-process calls them through the addresses the module holds
 * (defined by the caller, or looked up in shared objects); the emitted
 * entry calls them by name and the program links them. */
#include "graph/graph_impl.h"
#include "targets/targets.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool mlc_graph_extern_name_ok(const mlc_gmodule *m, const char *name, mlc_error *err) {
  bool ident = name && (name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z') ||
                        (name[0] >= 'A' && name[0] <= 'Z'));
  for (const char *p = name; ident && *p; p++)
    ident = *p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9');
  if (!ident) return mlc_error_set(err, "func \"%s\" is not a C identifier", name ? name : "");
  /* the entry's own names: its symbols and macros (<model>_*, <MODEL>_*),
   * locals (v_*, input*, output*, workspace, ws, rc) and the functions it
   * calls (malloc, free) */
  static const char *const prefixes[] = {"mlc_", "v_", "input", "output"};
  static const char *const words[] = {"main", "workspace", "ws", "rc", "malloc", "free"};
  bool taken = mlc_target_c_reserved(name) || (strncasecmp(name, m->name, strlen(m->name)) == 0 &&
                                               name[strlen(m->name)] == '_');
  for (int i = 0; i < MLC_COUNTOF(prefixes) && !taken; i++)
    taken = strncmp(name, prefixes[i], strlen(prefixes[i])) == 0;
  for (int i = 0; i < MLC_COUNTOF(words) && !taken; i++) taken = strcmp(name, words[i]) == 0;
  if (taken)
    return mlc_error_set(err,
                         "func \"%s\" is reserved (C keywords, main, malloc, free, workspace, ws, "
                         "rc, and names starting mlc_, v_, input, output or %s_ are the emitted "
                         "code's)",
                         name, m->name);
  return true;
}

static mlc_gextern *find_extern(const mlc_gmodule *m, const char *name) {
  for (int i = 0; i < m->n_externs; i++)
    if (strcmp(m->externs[i].name, name) == 0) return &m->externs[i];
  return NULL;
}

bool mlc_graph_define_extern(mlc_gmodule *m, const char *name, void *fn, mlc_error *err) {
  if (!fn) return mlc_error_set(err, "call_extern \"%s\": no address", name);
  if (!mlc_graph_extern_name_ok(m, name, err)) return false;
  mlc_gextern *e = find_extern(m, name);
  if (e) {
    e->fn = fn;
    return true;
  }
  mlc_gextern *es = MLC_NEW_ARRAY(m->arena, mlc_gextern, m->n_externs + 1);
  if (m->n_externs) memcpy(es, m->externs, sizeof *es * (size_t)m->n_externs);
  es[m->n_externs++] = (mlc_gextern){.name = mlc_arena_strdup(m->arena, name), .fn = fn};
  m->externs = es;
  return true;
}

/* The first binding of main calling name. */
static const mlc_gbinding *first_call(const mlc_gmodule *m, const char *name) {
  const mlc_gfunc *f = mlc_graph_main(m);
  for (int i = 0; i < f->n_bindings; i++)
    if (f->bindings[i].kind == MLC_GCALL_EXTERN && strcmp(f->bindings[i].extern_func, name) == 0)
      return &f->bindings[i];
  return NULL;
}

int mlc_graph_extern_names(const mlc_gmodule *m, const char ***names) {
  const mlc_gfunc *f = mlc_graph_main(m);
  const char **out = MLC_NEW_ARRAY(m->arena, const char *, f->n_bindings + 1);
  int n = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (b->kind == MLC_GCALL_EXTERN && first_call(m, b->extern_func) == b)
      out[n++] = b->extern_func;
  }
  *names = out;
  return n;
}

bool mlc_graph_load_externs(mlc_gmodule *m, int n, const char *const *libs, mlc_error *err) {
  void **handles = mlc_xmalloc(sizeof *handles * (size_t)(n + 1));
  bool ok = true;
  for (int i = 0; i < n && ok; i++)
    if (!(handles[i] = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL))) {
      const char *why = dlerror();
      ok = mlc_error_set(err, "extern library %s: %s", libs[i], why ? why : "cannot load");
    }
  const char **names;
  int k = ok ? mlc_graph_extern_names(m, &names) : 0;
  for (int j = 0; j < k && ok; j++) {
    void *p = NULL;
    for (int i = 0; i < n && !p; i++) p = dlsym(handles[i], names[j]);
    if (p) {
      ok = mlc_graph_define_extern(m, names[j], p, err);
      continue;
    }
    char searched[512] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof searched; i++)
      len += (size_t)snprintf(searched + len, sizeof searched - len, "%s%s", i ? ", " : "", libs[i]);
    const char *node = first_call(m, names[j])->var->name;
    if (!n)
      ok = mlc_error_set(err, "node '%s': call_extern \"%s\": no extern library given "
                              "(mlc-compile: --extern LIB.so)", node, names[j]);
    else
      ok = mlc_error_set(err, "node '%s': call_extern \"%s\": no symbol %s in %s", node, names[j],
                         names[j], searched);
  }
  mlc_free(handles); /* the libraries stay loaded: the module holds their functions */
  return ok;
}

/* A call through the function's own type for each arity: every argument
 * a float pointer, the inputs const. */
typedef const float *cf;
static int32_t call_fn(void *fn, int n, float *const *in, float *y) {
  switch (n) {
  case 0: return ((int32_t (*)(float *))fn)(y);
  case 1: return ((int32_t (*)(cf, float *))fn)(in[0], y);
  case 2: return ((int32_t (*)(cf, cf, float *))fn)(in[0], in[1], y);
  case 3: return ((int32_t (*)(cf, cf, cf, float *))fn)(in[0], in[1], in[2], y);
  case 4: return ((int32_t (*)(cf, cf, cf, cf, float *))fn)(in[0], in[1], in[2], in[3], y);
  case 5:
    return ((int32_t (*)(cf, cf, cf, cf, cf, float *))fn)(in[0], in[1], in[2], in[3], in[4], y);
  case 6:
    return ((int32_t (*)(cf, cf, cf, cf, cf, cf, float *))fn)(in[0], in[1], in[2], in[3], in[4],
                                                               in[5], y);
  case 7:
    return ((int32_t (*)(cf, cf, cf, cf, cf, cf, cf, float *))fn)(in[0], in[1], in[2], in[3],
                                                                   in[4], in[5], in[6], y);
  case 8:
    return ((int32_t (*)(cf, cf, cf, cf, cf, cf, cf, cf, float *))fn)(
        in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], y);
  }
  mlc_unreachable();
}
_Static_assert(MLC_GRAPH_MAX_EXTERN_ARGS == 8, "call_fn takes up to 8 inputs");

bool mlc_graph_call_extern(const mlc_gmodule *m, const mlc_gbinding *b, float *const *in,
                           float *y, mlc_error *err) {
  MLC_ASSERT(b->kind == MLC_GCALL_EXTERN && b->n_args <= MLC_GRAPH_MAX_EXTERN_ARGS);
  mlc_gextern *e = find_extern(m, b->extern_func); /* the module's table: counts the call */
  if (!e)
    return mlc_error_set(err,
                         "node '%s': call_extern \"%s\" has no function to call "
                         "(mlc_graph_define_extern; mlc-compile: --extern LIB.so)",
                         b->var->name, b->extern_func);
  /* zeros first: elements the function leaves alone read the same in
   * every run */
  memset(y, 0, sizeof(float) * (size_t)mlc_gtype_numel(&b->var->type));
  double t0 = mlc_now_sec();
  int32_t rc = call_fn(e->fn, b->n_args, in, y);
  e->sec += mlc_now_sec() - t0;
  e->calls++;
  if (rc != 0)
    return mlc_error_set(err, "node '%s': call_extern \"%s\" returned %d", b->var->name,
                         b->extern_func, (int)rc);
  return true;
}
