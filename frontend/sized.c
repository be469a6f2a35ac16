/* An ONNX model loaded once for every size of some input dimensions:
 * `--input-shape ids=1,seq --dim seq=1..2048`. Each instance
 * mlc_graph_generalize asks for is the model imported with the sizes'
 * names in the input shapes replaced by their values, then run through
 * the passes; the file is read once. */
#include "frontend/frontend.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool read_int(const char **p, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(*p, &end, 10);
  if (end == *p || errno) return false;
  *v = x;
  *p = end;
  return true;
}

bool mlc_gsize_parse(mlc_arena *a, const char *spec, mlc_gsize *s, mlc_error *err) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec)
    return mlc_error_set(err, "size '%s': expected NAME=LO..HI (e.g. seq=1..2048)", spec);
  s->name = mlc_arena_strndup(a, spec, (size_t)(eq - spec));
  if (!mlc_gsize_name_ok(s->name, err)) return false;
  const char *p = eq + 1;
  if (!read_int(&p, &s->lo) || strncmp(p, "..", 2) != 0 || (p += 2, !read_int(&p, &s->hi)) || *p)
    return mlc_error_set(err, "size '%s': expected NAME=LO..HI (e.g. seq=1..2048)", spec);
  if (s->lo < 0 || s->lo > s->hi || s->hi > INT32_MAX)
    return mlc_error_set(err, "size '%s': bounds must be 0 <= LO <= HI <= %d", spec, INT32_MAX);
  return true;
}

/* The extent token [p, end) of a shape names size k: its index, else -1. */
static int size_named(const char *p, const char *end, int n, const mlc_gsize *sizes) {
  for (int k = 0; k < n; k++)
    if (strlen(sizes[k].name) == (size_t)(end - p) && strncmp(p, sizes[k].name, (size_t)(end - p)) == 0)
      return k;
  return -1;
}

const char **mlc_graph_shapes_at(mlc_arena *a, const char *const *input_shapes, int n,
                                 const mlc_gsize *sizes, const int64_t *values) {
  int count = 0;
  while (input_shapes && input_shapes[count]) count++;
  const char **out = MLC_NEW_ARRAY(a, const char *, count + 1);
  for (int i = 0; i < count; i++) {
    const char *s = input_shapes[i], *eq = strchr(s, '=');
    mlc_str t = {.arena = a};
    if (!eq) {
      out[i] = s; /* the loader says what is wrong with it */
      continue;
    }
    mlc_str_putn(&t, s, (size_t)(eq + 1 - s));
    for (const char *p = eq + 1; *p;) {
      const char *end = p;
      while (*end && *end != ',') end++;
      int k = size_named(p, end, n, sizes);
      if (k >= 0) mlc_str_printf(&t, "%" PRId64, values[k]);
      else mlc_str_putn(&t, p, (size_t)(end - p));
      if (*end) mlc_str_putc(&t, *end++);
      p = end;
    }
    out[i] = mlc_str_cstr(&t);
  }
  out[count] = NULL;
  return out;
}

/* Whether some input shape has size k as an extent. */
static bool size_used(const char *const *input_shapes, const mlc_gsize *s) {
  for (int i = 0; input_shapes && input_shapes[i]; i++) {
    const char *eq = strchr(input_shapes[i], '=');
    for (const char *p = eq ? eq + 1 : ""; *p;) {
      const char *end = p;
      while (*end && *end != ',') end++;
      if (size_named(p, end, 1, s) == 0) return true;
      p = *end ? end + 1 : end;
    }
  }
  return false;
}

typedef struct sized_load {
  const char *path;
  const char *bytes;
  size_t len;
  const char *const *input_shapes;
  int n_sizes;
  const mlc_gsize *sizes;
  int fuse_max_ops;
} sized_load;

static mlc_gmodule *parse_at(const sized_load *L, const int64_t *values, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  const char **shapes = mlc_graph_shapes_at(a, L->input_shapes, L->n_sizes, L->sizes, values);
  mlc_gmodule *m = mlc_graph_parse_onnx(L->path, L->bytes, L->len, shapes, err);
  mlc_arena_free(a);
  return m;
}

static mlc_gmodule *make_instance(void *ud, const int64_t *values, mlc_error *err) {
  const sized_load *L = ud;
  mlc_gmodule *m = parse_at(L, values, err);
  if (!m) return NULL;
  m->fuse_max_ops = L->fuse_max_ops;
  if (!mlc_graph_run_pipeline(m, NULL, NULL, NULL, err)) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

/* The name of the input a shape spec is for: the bytes before '='. */
static bool same_input(const char *x, const char *y) {
  size_t n = strcspn(x, "=");
  return n == strcspn(y, "=") && strncmp(x, y, n) == 0;
}

/* Whether every extent of a declared shape is a number or one of the
 * sizes, and some is a size. */
static bool declared_by_sizes(const char *spec, int n, const mlc_gsize *sizes) {
  bool any = false;
  for (const char *p = strchr(spec, '=') + 1; *p;) {
    const char *end = p;
    while (*end && *end != ',') end++;
    if (size_named(p, end, n, sizes) >= 0) any = true;
    else if (!isdigit((unsigned char)*p)) return false;
    p = *end ? end + 1 : end;
  }
  return any;
}

/* input_shapes, then the declared shape of each input they leave out
 * whose symbolic extents are all named after sizes: `--dim past=1..255`
 * alone serves a model exported with the dynamic axis "past". */
static const char **with_declared(mlc_arena *a, const sized_load *L, const char **decl) {
  int n = 0, k = 0;
  while (L->input_shapes && L->input_shapes[n]) n++;
  while (decl[k]) k++;
  const char **out = MLC_NEW_ARRAY(a, const char *, n + k + 1);
  int m = 0;
  for (int i = 0; i < n; i++) out[m++] = L->input_shapes[i];
  for (int j = 0; j < k; j++) {
    bool given = false;
    for (int i = 0; i < n && !given; i++) given = same_input(L->input_shapes[i], decl[j]);
    if (!given && declared_by_sizes(decl[j], L->n_sizes, L->sizes)) out[m++] = decl[j];
  }
  out[m] = NULL;
  return out;
}

static bool check_sized(const char *const *input_shapes, int n, const mlc_gsize *sizes,
                        mlc_error *err) {
  for (int k = 0; k < n; k++)
    if (!size_used(input_shapes, &sizes[k]))
      return mlc_error_set(err, "size %s is no extent of an input shape (e.g. --input-shape "
                                "ids=1,%s, or a dynamic axis %s the model declares)",
                           sizes[k].name, sizes[k].name, sizes[k].name);
  return true;
}

/* The one dynamic axis decl[] (declared shapes) name, into s->name (in a). */
static bool one_dynamic_axis(mlc_arena *a, const char *path, const char **decl, mlc_gsize *s,
                             mlc_error *err) {
  s->name = NULL;
  for (int i = 0; decl[i]; i++)
    for (const char *p = strchr(decl[i], '=') + 1; *p;) {
      size_t n = strcspn(p, ",");
      if (!isdigit((unsigned char)*p) && *p != '?') {
        const char *name = mlc_arena_strndup(a, p, n);
        if (s->name && strcmp(s->name, name) != 0)
          return mlc_error_set(err, "%s declares the dynamic axes %s and %s: expected one", path,
                               s->name, name);
        s->name = name;
      }
      p += n + (p[n] == ',');
    }
  if (!s->name)
    return mlc_error_set(err, "%s declares no dynamic axis (export it with one, e.g. the "
                              "sequence's length)", path);
  return mlc_gsize_name_ok(s->name, err) || mlc_error_prefix(err, "%s", path);
}

/* L read from path, its shapes completed (with_declared) and checked; the
 * file's bytes are L->bytes (mlc_free them), the shapes in a. axis not
 * NULL: L's one size is the one dynamic axis the inputs declare, into
 * *axis (its bounds as given). */
static bool open_sized(sized_load *L, mlc_arena *a, mlc_gsize *axis, mlc_error *err) {
  size_t len = strlen(L->path);
  if (len < 5 || strcmp(L->path + len - 5, ".onnx") != 0)
    return mlc_error_set(err, "%s: sizes go with an ONNX model (a JSON model has fixed shapes)",
                         L->path);
  char *bytes = mlc_read_file(L->path, &L->len, err);
  if (!bytes) return false;
  L->bytes = bytes;
  const char **decl = mlc_graph_onnx_declared_shapes(a, L->path, L->bytes, L->len, err);
  bool ok = decl && (!axis || one_dynamic_axis(a, L->path, decl, axis, err));
  if (ok && axis) {
    L->n_sizes = 1;
    L->sizes = axis;
  }
  if (ok && (L->input_shapes = with_declared(a, L, decl)) &&
      check_sized(L->input_shapes, L->n_sizes, L->sizes, err))
    return true;
  mlc_free(bytes);
  L->bytes = NULL;
  return false;
}

mlc_gmodule *mlc_graph_load_sized(const char *path, const char *const *input_shapes, int n,
                                  const mlc_gsize *sizes, int fuse_max_ops, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  sized_load L = {path, NULL, 0, input_shapes, n, sizes, fuse_max_ops};
  mlc_gmodule *m = open_sized(&L, a, NULL, err) ? mlc_graph_generalize(n, sizes, make_instance, &L, err)
                                          : NULL;
  mlc_free((void *)L.bytes);
  mlc_arena_free(a);
  return m;
}

mlc_gmodule *mlc_graph_load_dynamic(const char *path, int64_t lo, int64_t hi, int fuse_max_ops,
                                    mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_gsize s = {NULL, lo, hi};
  sized_load L = {path, NULL, 0, NULL, 0, NULL, fuse_max_ops};
  mlc_gmodule *m = open_sized(&L, a, &s, err) ? mlc_graph_generalize(1, &s, make_instance, &L, err)
                                               : NULL;
  mlc_free((void *)L.bytes);
  mlc_arena_free(a);
  return m;
}

mlc_gmodule *mlc_graph_load_at(const char *path, const char *const *input_shapes, int n,
                               const mlc_gsize *sizes, const int64_t *values, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  sized_load L = {path, NULL, 0, input_shapes, n, sizes, 0};
  mlc_gmodule *m = open_sized(&L, a, NULL, err) ? parse_at(&L, values, err) : NULL;
  mlc_free((void *)L.bytes);
  mlc_arena_free(a);
  return m;
}
