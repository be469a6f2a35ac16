/* The C entry that runs a compiled model: declarations of the weight arrays
 * the object defines and a function calling the kernels of the object in main's order, with
 * every intermediate in one caller-provided workspace. */
#include "graph/graph_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *mlc_graph_symbol(mlc_arena *a, const mlc_gmodule *m, const mlc_prim_func *f) {
  return mlc_arena_printf(a, "%s_%s", m->name, f->name);
}

const char *mlc_graph_weight_symbol(mlc_arena *a, const mlc_gmodule *m, const mlc_gvar *c) {
  return mlc_arena_printf(a, "%s_w_%s", m->name, c->name);
}

/* The array itself is data in the object (mlc-compile places it there):
 * as C literals ResNet-18's 45 MB of weights were 187 MB of header that
 * cc could not compile. */
static void put_weight(mlc_str *out, const mlc_gmodule *m, const mlc_gvar *c) {
  char s[128];
  mlc_gtype_str(&c->type, s, sizeof s);
  mlc_str_printf(out, "/* %s: %s%s */\nextern const %s %s_w_%s[%lld];\n", c->name,
                 mlc_dtype_name(c->type.dtype), s, mlc_dtype_c_name(c->type.dtype), m->name, c->name,
                 (long long)mlc_gtype_numel(&c->type));
}

/* "input" when there is one, else "input0", "input1", ... */
static void put_io(mlc_str *out, const char *base, int i, int n) {
  if (n == 1) mlc_str_puts(out, base);
  else mlc_str_printf(out, "%s%d", base, i);
}

/* The C expression naming v's data inside <name>_run_ws (a view's: its
 * operand's). */
static void put_ref(mlc_str *out, const mlc_gmodule *m, const mlc_gfunc *f, const mlc_gvar *v) {
  v = mlc_gfunc_storage(f, v);
  switch (v->kind) {
  case MLC_GVAR_PARAM:
    for (int i = 0; i < f->n_params; i++)
      if (f->params[i] == v) put_io(out, "input", i, f->n_params);
    return;
  case MLC_GVAR_CONST: mlc_str_printf(out, "%s_w_%s", m->name, v->name); return;
  case MLC_GVAR_BOUND:
    for (int i = 0; i < f->n_outputs; i++)
      if (f->outputs[i] == v) {
        put_io(out, "output", i, f->n_outputs);
        return;
      }
    mlc_str_printf(out, "v_%s", v->name);
    return;
  }
  mlc_unreachable();
}

static void put_signature(mlc_str *out, const mlc_gmodule *m, const mlc_gfunc *f, bool ws) {
  for (int i = 0; i < f->n_params; i++) {
    mlc_str_printf(out, "%sconst %s *", i ? ", " : "", mlc_dtype_c_name(f->params[i]->type.dtype));
    put_io(out, "input", i, f->n_params);
  }
  for (int i = 0; i < f->n_outputs; i++) {
    mlc_str_printf(out, ", %s *", mlc_dtype_c_name(f->outputs[i]->type.dtype));
    put_io(out, "output", i, f->n_outputs);
  }
  for (int k = 0; k < m->n_sizes; k++) mlc_str_printf(out, ", int64_t %s", m->sizes[k].name);
  if (ws) mlc_str_puts(out, ", float *workspace");
}

/* The call of <name>_run_ws from <name>_run. */
static void put_call_args(mlc_str *out, const mlc_gmodule *m, const mlc_gfunc *f) {
  for (int i = 0; i < f->n_params; i++) {
    if (i) mlc_str_puts(out, ", ");
    put_io(out, "input", i, f->n_params);
  }
  for (int i = 0; i < f->n_outputs; i++) {
    mlc_str_puts(out, ", ");
    put_io(out, "output", i, f->n_outputs);
  }
  for (int k = 0; k < m->n_sizes; k++) mlc_str_printf(out, ", %s", m->sizes[k].name);
}

/* Extent d of v: a number, or an expression of the sizes; its numbers
 * end in `ll` ("LL": C's int64 literals, "": as the header's comments
 * write them). */
static void put_extent(mlc_str *out, const mlc_gmodule *m, const mlc_gvar *v, int d,
                       const char *ll) {
  if (!v->dims) {
    mlc_str_printf(out, "%lld%s", (long long)v->type.shape[d], ll);
    return;
  }
  const mlc_gdim *g = &v->dims[d];
  bool any = false;
  for (int k = 0; k < m->n_sizes; k++) {
    if (!g->coef[k]) continue;
    if (any) mlc_str_puts(out, " + ");
    if (g->coef[k] != 1) mlc_str_printf(out, "%lld%s * ", (long long)g->coef[k], ll);
    mlc_str_puts(out, m->sizes[k].name);
    any = true;
  }
  if (!any || g->off) mlc_str_printf(out, "%s%lld%s", any ? " + " : "", (long long)g->off, ll);
}

/* v's element count as C. */
static void put_numel(mlc_str *out, const mlc_gmodule *m, const mlc_gvar *v) {
  if (!v->dims) {
    mlc_str_printf(out, "%lldLL", (long long)mlc_gtype_numel(&v->type));
    return;
  }
  for (int d = 0; d < v->type.ndim; d++) {
    mlc_str_puts(out, d ? " * (" : "(");
    put_extent(out, m, v, d, "LL");
    mlc_str_putc(out, ')');
  }
  if (!v->type.ndim) mlc_str_puts(out, "1");
}

/* "(1, seq, 96)": v's shape as the header documents it. */
static void put_shape_doc(mlc_str *out, const mlc_gmodule *m, const mlc_gvar *v) {
  mlc_str_putc(out, '(');
  for (int d = 0; d < v->type.ndim; d++) {
    if (d) mlc_str_puts(out, ", ");
    put_extent(out, m, v, d, "");
  }
  mlc_str_putc(out, ')');
}

/* A module of sizes: the shapes of the inputs and outputs as functions of
 * the sizes, and the check of the sizes' bounds. */
static void put_sizes_doc(mlc_str *out, const mlc_gmodule *m, const mlc_gfunc *f) {
  if (!m->n_sizes) return;
  mlc_str_puts(out, "/* Built once for every size in its bounds:");
  for (int k = 0; k < m->n_sizes; k++)
    mlc_str_printf(out, " %s in %lld..%lld%s", m->sizes[k].name, (long long)m->sizes[k].lo,
                   (long long)m->sizes[k].hi, k + 1 < m->n_sizes ? "," : ".");
  mlc_str_puts(out, "\n * The entry takes the sizes after the outputs; the arrays have the shapes\n"
                    " * they give (row-major, contiguous):\n");
  for (int i = 0; i < f->n_params + f->n_outputs; i++) {
    const mlc_gvar *v = i < f->n_params ? f->params[i] : f->outputs[i - f->n_params];
    mlc_str_puts(out, " *   ");
    if (i < f->n_params) put_io(out, "input", i, f->n_params);
    else put_io(out, "output", i - f->n_params, f->n_outputs);
    mlc_str_printf(out, " (%s): %s ", v->name, mlc_dtype_name(v->type.dtype));
    put_shape_doc(out, m, v);
    mlc_str_putc(out, '\n');
  }
  mlc_str_printf(out, " * A size outside its bounds returns -2. The workspace is sized for the\n"
                      " * bounds. */\n\n");
}

/* The outputs that are inputs with rows appended (mlc_gbinding_appends). */
static void put_appends_doc(mlc_str *out, const mlc_gfunc *f) {
  bool any = false;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (!mlc_gbinding_appends(b)) continue;
    if (!any)
      mlc_str_puts(out, "/* Outputs that are inputs with rows appended: pass one buffer as both\n"
                        " * (room for the output) to extend it in place, nothing copied; other\n"
                        " * memory gets the input copied in first.\n");
    any = true;
    int in = 0, o = 0;
    while (f->params[in] != b->args[0]) in++;
    while (f->outputs[o] != b->var) o++;
    mlc_str_puts(out, " *   ");
    put_io(out, "output", o, f->n_outputs);
    mlc_str_printf(out, " (%s) = ", b->var->name);
    put_io(out, "input", in, f->n_params);
    mlc_str_printf(out, " (%s) + new rows\n", b->args[0]->name);
  }
  if (any) mlc_str_puts(out, " */\n\n");
}

static void put_size_checks(mlc_str *out, const mlc_gmodule *m) {
  for (int k = 0; k < m->n_sizes; k++) {
    const mlc_gsize *s = &m->sizes[k];
    mlc_str_printf(out, "  if (%s < %lldLL || %s > %lldLL) {\n    snprintf(%s_error_text, sizeof "
                        "%s_error_text, \"size %s = %%lld is outside its bounds %lld..%lld\", "
                        "(long long)%s);\n    return -2;\n  }\n",
                   s->name, (long long)s->lo, s->name, (long long)s->hi, m->name, m->name, s->name,
                   (long long)s->lo, (long long)s->hi, s->name);
  }
}

/* The sizes a kernel of size vars takes after its buffers, as the entry
 * passes them (the module's size of the same name). */
static void put_kernel_sizes(mlc_str *out, const mlc_prim_func *f) {
  for (int k = 0; k < f->n_sizes; k++) mlc_str_printf(out, ", (void *)&%s", f->sizes[k].var->name);
}

/* end[i]: the last binding reading binding i's result, itself or
 * through views (a view's reads count for the binding it views). */
static void last_uses(const mlc_gfunc *f, int *end) {
  mlc_arena *a = mlc_arena_new();
  mlc_gmap def = {.a = a};
  int *home = MLC_NEW_ARRAY(a, int, f->n_bindings + 1); /* whose memory; -1: a param's or weight's */
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    int d;
    end[i] = home[i] = i;
    if (mlc_gbinding_is_view(f, b)) home[i] = mlc_gmap_get(&def, b->args[0], &d) ? home[d] : -1;
    for (int k = 0; k < b->n_args; k++)
      if (mlc_gmap_get(&def, b->args[k], &d) && home[d] >= 0) end[home[d]] = i;
    mlc_gmap_put(&def, b->var, i);
  }
  mlc_arena_free(a);
}

/* Whether binding i's result takes no workspace: an output (the
 * caller's memory) or a view (its operand's). */
static bool no_workspace(const mlc_gfunc *f, int i) {
  return mlc_gfunc_is_output(f, f->bindings[i].var) || mlc_gbinding_is_view(f, &f->bindings[i]);
}

/* Bytes binding i's result takes in the workspace: whole 64-byte lines,
 * so every value starts aligned for its dtype and for vector loads. */
static int64_t ws_bytes(const mlc_gfunc *f, int i) {
  return (mlc_gtype_bytes(&f->bindings[i].var->type) + 63) / 64 * 64;
}

int64_t mlc_graph_plan_workspace(const mlc_gfunc *f, int64_t *offs) {
  int n = f->n_bindings;
  int *end = mlc_xmalloc(sizeof *end * (size_t)(n + 1));
  int64_t total = 0;
  last_uses(f, end);
  for (int i = 0; i < n; i++) {
    offs[i] = -1;
    if (no_workspace(f, i)) continue;
    int64_t size = ws_bytes(f, i), off = 0;
    /* Move past every live block overlapping [off, off + size) until none does. */
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < i; j++)
        if (offs[j] >= 0 && end[j] >= i && off < offs[j] + ws_bytes(f, j) && offs[j] < off + size) {
          off = offs[j] + ws_bytes(f, j);
          moved = true;
        }
    }
    offs[i] = off;
    if (off + size > total) total = off + size;
  }
  mlc_free(end);
  return total;
}

/* *total plus t's bytes; -1 once a size is unknown. */
static void add_bytes(int64_t *total, const mlc_gtype *t) {
  int64_t b = mlc_gtype_bytes(t);
  *total = *total < 0 || b < 0 ? -1 : *total + b;
}

int64_t mlc_graph_run_bytes(const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  int64_t *offs = mlc_xmalloc(sizeof *offs * (size_t)(f->n_bindings + 1));
  int64_t total = mlc_graph_plan_workspace(f, offs);
  mlc_free(offs);
  for (int i = 0; i < m->n_consts; i++) add_bytes(&total, &m->consts[i]->type);
  for (int i = 0; i < f->n_params; i++) add_bytes(&total, &f->params[i]->type);
  for (int i = 0; i < f->n_outputs; i++) add_bytes(&total, &f->outputs[i]->type);
  return total;
}

/* Whether binding i is the first in f calling its extern function. */
static bool first_extern_call(const mlc_gfunc *f, int i) {
  const mlc_gbinding *b = &f->bindings[i];
  if (b->kind != MLC_GCALL_EXTERN) return false;
  for (int j = 0; j < i; j++)
    if (f->bindings[j].kind == MLC_GCALL_EXTERN &&
        strcmp(f->bindings[j].extern_func, b->extern_func) == 0)
      return false;
  return true;
}

/* One declaration per extern function, every call's shapes in its comment. */
static void put_externs(mlc_str *out, const mlc_gfunc *f) {
  bool any = false;
  for (int i = 0; i < f->n_bindings; i++) {
    if (!first_extern_call(f, i)) continue;
    const mlc_gbinding *b = &f->bindings[i];
    if (!any) mlc_str_puts(out, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    any = true;
    mlc_str_printf(out, "/* %s: the model's call_extern, defined by the program (float32,\n"
                        " * row-major, contiguous; write every element of out, return 0, or\n"
                        " * nonzero for a failure):\n", b->extern_func);
    for (int k = i; k < f->n_bindings; k++) {
      const mlc_gbinding *c = &f->bindings[k];
      if (c->kind != MLC_GCALL_EXTERN || strcmp(c->extern_func, b->extern_func) != 0) continue;
      char s[128];
      mlc_str_printf(out, " *   node %s:", c->var->name);
      for (int j = 0; j < c->n_args; j++) {
        mlc_gtype_str(&c->args[j]->type, s, sizeof s);
        mlc_str_printf(out, " in%d%s", j, s);
      }
      mlc_gtype_str(&c->var->type, s, sizeof s);
      mlc_str_printf(out, " -> out%s\n", s);
    }
    mlc_str_printf(out, " */\nint32_t %s(", b->extern_func);
    for (int j = 0; j < b->n_args; j++) mlc_str_printf(out, "const float *in%d, ", j);
    mlc_str_puts(out, "float *out);\n\n");
  }
  if (any) mlc_str_puts(out, "#ifdef __cplusplus\n}\n#endif\n\n");
}

/* The entry's check of the inputs read as gather indices (m->index_checks):
 * an index outside the rows returns -2 before any kernel runs. */
static void put_index_checks(mlc_str *out, const mlc_gmodule *m, const mlc_gfunc *f) {
  for (int c = 0; c < m->n_index_checks; c++) {
    const mlc_gindex_check *ck = &m->index_checks[c];
    const mlc_gvar *p = f->params[ck->param];
    mlc_str_puts(out, "  for (int64_t i = 0; i < ");
    put_numel(out, m, p);
    mlc_str_puts(out, "; i++)\n    if (!(");
    put_io(out, "input", ck->param, f->n_params);
    mlc_str_printf(out, "[i] >= -%lldLL && ", (long long)ck->n);
    put_io(out, "input", ck->param, f->n_params);
    mlc_str_printf(out, "[i] < %lldLL)) {\n      snprintf(%s_error_text, sizeof %s_error_text, "
                        "\"input '%s': element %%lld is %%.17g, outside [-%lld, %lld) (the rows "
                        "gather %s reads)\", (long long)i, (double)",
                   (long long)ck->n, m->name, m->name, p->name, (long long)ck->n, (long long)ck->n,
                   ck->node);
    put_io(out, "input", ck->param, f->n_params);
    mlc_str_puts(out, "[i]);\n      return -2;\n    }\n");
  }
}

/* An append's operand 0 copied into the start of its result, unless the
 * caller passed one memory as both (a cache extended in place). */
static void put_prefix_copy(mlc_str *out, const mlc_gmodule *m, const mlc_gfunc *f,
                            const mlc_gbinding *b) {
  mlc_str_puts(out, "  if ((const void *)");
  put_ref(out, m, f, b->var);
  mlc_str_puts(out, " != (const void *)");
  put_ref(out, m, f, b->args[0]);
  mlc_str_puts(out, ")\n    memmove(");
  put_ref(out, m, f, b->var);
  mlc_str_puts(out, ", ");
  put_ref(out, m, f, b->args[0]);
  mlc_str_printf(out, ", sizeof(%s) * (size_t)(", mlc_dtype_c_name(b->args[0]->type.dtype));
  put_numel(out, m, b->args[0]);
  mlc_str_puts(out, "));\n");
}

void mlc_graph_write_entry(mlc_str *out, const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  char guard[160], up[128];
  snprintf(up, sizeof up, "%s", m->name);
  for (char *p = up; *p; p++) *p = (char)toupper((unsigned char)*p);
  snprintf(guard, sizeof guard, "%s_MODEL_ENTRY_H", up);
  mlc_str_printf(out, "#ifndef %s\n#define %s\n\n#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n", guard, guard);
  if (m->n_consts) mlc_str_puts(out, "/* Weights: constant arrays in the object. */\n");
  for (int i = 0; i < m->n_consts; i++) put_weight(out, m, m->consts[i]);
  if (m->n_consts) mlc_str_putc(out, '\n');
  put_externs(out, f);
  put_sizes_doc(out, m, f);
  put_appends_doc(out, f);
  int64_t *offs = mlc_xmalloc(sizeof *offs * (size_t)(f->n_bindings + 1));
  int64_t ws = mlc_graph_plan_workspace(f, offs);
  mlc_str_printf(out, "/* Floats (4-byte units) of scratch memory %s_run_ws needs (intermediates share it as their lifetimes allow). */\n#define %s_WORKSPACE_FLOATS %lld\n\n",
                 m->name, up, (long long)(ws ? (ws + 3) / 4 : 1));
  mlc_str_printf(out, "/* Why the last %s_run / %s_run_ws of this thread failed. */\n"
                      "static _Thread_local char %s_error_text[256];\n"
                      "static inline const char *%s_error(void) { return %s_error_text; }\n\n",
                 m->name, m->name, m->name, m->name, m->name);
  mlc_str_printf(out, "/* Runs the model: returns 0; -1 when a kernel (or an extern function) failed, -2 for\n"
                      " * a bad input (a token id outside its embedding); %s_error() says which. */\n"
                      "static inline int32_t %s_run_ws(", m->name, m->name);
  put_signature(out, m, f, true);
  mlc_str_puts(out, ") {\n");
  put_size_checks(out, m);
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gvar *v = f->bindings[i].var;
    if (no_workspace(f, i)) continue;
    const char *ct = mlc_dtype_c_name(v->type.dtype);
    mlc_str_printf(out, "  %s *v_%s = (%s *)((char *)workspace + %lld);\n", ct, v->name, ct,
                   (long long)offs[i]);
  }
  mlc_free(offs);
  mlc_str_puts(out, "  (void)workspace;\n");
  put_index_checks(out, m, f);
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (mlc_gbinding_is_view(f, b)) continue;
    if (b->kind == MLC_GCALL_EXTERN) {
      mlc_str_printf(out, "  if (%s(", b->extern_func);
      for (int j = 0; j <= b->n_args; j++) {
        if (j) mlc_str_puts(out, ", ");
        put_ref(out, m, f, j < b->n_args ? b->args[j] : b->var);
      }
      mlc_str_printf(out, ") != 0) {\n    snprintf(%s_error_text, sizeof %s_error_text, \"%s failed\");\n"
                          "    return -1;\n  }\n", m->name, m->name, b->extern_func);
      continue;
    }
    if (mlc_gbinding_appends(b)) put_prefix_copy(out, m, f, b);
    mlc_str_puts(out, "  {\n    void *args[] = {");
    for (int j = 0; j <= b->n_args; j++) {
      mlc_str_puts(out, j ? ", (void *)" : "(void *)");
      put_ref(out, m, f, j < b->n_args ? b->args[j] : b->var);
    }
    put_kernel_sizes(out, b->tir);
    mlc_str_printf(out, "};\n    if (%s_%s(args) != 0) {\n      snprintf(%s_error_text, sizeof %s_error_text, "
                        "\"kernel %s_%s failed\");\n      return -1;\n    }\n  }\n",
                   m->name, b->tir->name, m->name, m->name, m->name, b->tir->name);
  }
  mlc_str_printf(out, "  %s_error_text[0] = 0;\n  return 0;\n}\n\n", m->name);
  mlc_str_printf(out, "/* The same with the workspace on the heap. */\nstatic inline int32_t %s_run(",
                 m->name);
  put_signature(out, m, f, false);
  mlc_str_printf(out, ") {\n  float *ws = (float *)malloc(sizeof(float) * %s_WORKSPACE_FLOATS);\n"
                      "  if (!ws) {\n    snprintf(%s_error_text, sizeof %s_error_text, \"out of memory\");\n"
                      "    return -1;\n  }\n  int32_t rc = %s_run_ws(", up, m->name, m->name, m->name);
  put_call_args(out, m, f);
  mlc_str_printf(out, ", ws);\n  free(ws);\n  return rc;\n}\n\n#endif /* %s */\n", guard);
}
