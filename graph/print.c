/* The Relax-like text form of a graph module, as the notes print it. */
#include "graph/graph_impl.h"

#include <string.h>

static void put_type(mlc_str *out, const mlc_gtype *t) {
  char s[256];
  mlc_gtype_str(t, s, sizeof s);
  mlc_str_printf(out, "R.Tensor(%s, dtype=\"%s\")", s, mlc_dtype_name(t->dtype));
}

static void put_var(mlc_str *out, const mlc_gvar *v) {
  if (v->kind == MLC_GVAR_CONST) mlc_str_printf(out, "metadata[\"%s\"]", v->name);
  else mlc_str_puts(out, v->name);
}

static void put_args(mlc_str *out, const mlc_gbinding *b) {
  for (int i = 0; i < b->n_args; i++) {
    if (i) mlc_str_puts(out, ", ");
    put_var(out, b->args[i]);
  }
}

static void put_ints(mlc_str *out, int n, const int64_t *v, char open, char close) {
  mlc_str_putc(out, open);
  for (int i = 0; i < n; i++) mlc_str_printf(out, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (n == 1 && open == '(') mlc_str_putc(out, ',');
  mlc_str_putc(out, close);
}

static void put_attrs(mlc_str *out, const mlc_gbinding *b) {
  const mlc_gattrs *a = &b->attrs;
  switch (b->op) {
  case MLC_GOP_CONV2D:
    mlc_str_printf(out, ", strides=%lld, padding=%lld", (long long)a->stride,
                   (long long)a->padding);
    return;
  case MLC_GOP_MAX_POOL2D:
    mlc_str_printf(out, ", pool_size=%lld, strides=%lld, padding=%lld", (long long)a->pool,
                   (long long)a->stride, (long long)a->padding);
    return;
  case MLC_GOP_LAYERNORM:
    mlc_str_puts(out, ", epsilon=");
    mlc_str_put_double(out, a->eps);
    return;
  case MLC_GOP_RESHAPE:
    mlc_str_puts(out, ", ");
    put_ints(out, a->n_ints, a->ints, '(', ')');
    return;
  case MLC_GOP_TRANSPOSE:
    mlc_str_puts(out, ", axes=");
    if (a->n_ints) put_ints(out, a->n_ints, a->ints, '[', ']');
    else mlc_str_puts(out, "None");
    return;
  case MLC_GOP_MATMUL:
  case MLC_GOP_DENSE:
  case MLC_GOP_ADD:
  case MLC_GOP_MULTIPLY:
  case MLC_GOP_RELU:
  case MLC_GOP_GELU:
  case MLC_GOP_SOFTMAX:
  case MLC_GOP_FLATTEN:
  case MLC_GOP_EWISE_FMA: return;
  }
  mlc_unreachable();
}

static void put_binding(mlc_str *out, const mlc_gbinding *b) {
  mlc_str_indent(out, 12);
  switch (b->kind) {
  case MLC_GCALL_OP:
    mlc_str_printf(out, "%s: ", b->var->name);
    put_type(out, &b->var->type);
    mlc_str_printf(out, " = %s(", mlc_gop_script(b->op));
    put_args(out, b);
    put_attrs(out, b);
    mlc_str_puts(out, ")\n");
    return;
  case MLC_GCALL_FUNC:
    mlc_str_printf(out, "%s: ", b->var->name);
    put_type(out, &b->var->type);
    mlc_str_printf(out, " = cls.%s(", b->callee->name);
    put_args(out, b);
    mlc_str_puts(out, ")\n");
    return;
  case MLC_GCALL_TIR:
    mlc_str_printf(out, "%s = R.call_tir(cls.%s, (", b->var->name, b->tir->name);
    put_args(out, b);
    mlc_str_puts(out, b->n_args == 1 ? ",), out_sinfo=" : "), out_sinfo=");
    put_type(out, &b->var->type);
    mlc_str_puts(out, ")\n");
    return;
  }
  mlc_unreachable();
}

static void put_outputs(mlc_str *out, const mlc_gfunc *f) {
  if (f->n_outputs == 1) {
    put_var(out, f->outputs[0]);
    return;
  }
  mlc_str_putc(out, '(');
  for (int i = 0; i < f->n_outputs; i++) {
    if (i) mlc_str_puts(out, ", ");
    put_var(out, f->outputs[i]);
  }
  mlc_str_putc(out, ')');
}

static void put_func(mlc_str *out, const mlc_gfunc *f) {
  mlc_str_printf(out, "    @R.function\n    def %s(", f->name);
  for (int i = 0; i < f->n_params; i++) {
    mlc_str_printf(out, "%s%s: ", i ? ", " : "", f->params[i]->name);
    put_type(out, &f->params[i]->type);
  }
  mlc_str_puts(out, ") -> ");
  if (f->n_outputs == 1) put_type(out, &f->outputs[0]->type);
  else {
    mlc_str_puts(out, "R.Tuple(");
    for (int i = 0; i < f->n_outputs; i++) {
      if (i) mlc_str_puts(out, ", ");
      put_type(out, &f->outputs[i]->type);
    }
    mlc_str_putc(out, ')');
  }
  mlc_str_puts(out, ":\n");
  if (f->primitive) mlc_str_puts(out, "        R.func_attr({\"Primitive\": 1})\n");
  bool calls = false;
  for (int i = 0; i < f->n_bindings; i++) calls |= f->bindings[i].kind != MLC_GCALL_OP;
  if (calls) mlc_str_puts(out, "        cls = Module\n");
  mlc_str_puts(out, "        with R.dataflow():\n");
  for (int i = 0; i < f->n_bindings; i++) put_binding(out, &f->bindings[i]);
  mlc_str_puts(out, "            R.output(");
  int k = 0;
  for (int i = 0; i < f->n_outputs; i++)
    if (f->outputs[i]->kind == MLC_GVAR_BOUND)
      mlc_str_printf(out, "%s%s", k++ ? ", " : "", f->outputs[i]->name);
  mlc_str_puts(out, ")\n        return ");
  put_outputs(out, f);
  mlc_str_putc(out, '\n');
}

/* mlc_print_func's text, every line indented by four spaces. */
static void put_prim_func(mlc_str *out, const mlc_prim_func *p) {
  mlc_str s = {0};
  mlc_print_func(&s, p);
  const char *t = mlc_str_cstr(&s);
  while (*t) {
    const char *nl = strchr(t, '\n');
    size_t n = nl ? (size_t)(nl - t) : strlen(t);
    if (strncmp(t, "# from", 6) == 0) { /* one import line per module, not per function */
      t += n + (nl ? 1 : 0);
      if (*t == '\n') t++;
      continue;
    }
    if (n) mlc_str_indent(out, 4);
    mlc_str_putn(out, t, n);
    mlc_str_putc(out, '\n');
    t += n + (nl ? 1 : 0);
  }
  mlc_str_free(&s);
}

void mlc_graph_print(mlc_str *out, const mlc_gmodule *m, int flags) {
  mlc_str_puts(out, "@I.ir_module\nclass Module:\n");
  bool first = true;
  if (flags & MLC_GRAPH_PRINT_TIR)
    for (int i = 0; i < m->tir->n_funcs; i++) {
      if (!first) mlc_str_putc(out, '\n');
      put_prim_func(out, m->tir->funcs[i]);
      first = false;
    }
  for (int i = 0; i < m->n_funcs; i++) {
    if (!first) mlc_str_putc(out, '\n');
    put_func(out, m->funcs[i]);
    first = false;
  }
}
