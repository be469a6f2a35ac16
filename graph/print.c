/* The Relax-like text form of a graph module, as the notes print it. */
#include "graph/graph_impl.h"

#include <math.h>
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

static void put_double(mlc_str *out, const char *key, double v) {
  mlc_str_printf(out, ", %s=", key);
  if (isinf(v)) mlc_str_puts(out, v < 0 ? "-inf" : "inf");
  else mlc_str_put_double(out, v);
}

/* ---- printed attributes (ops.def's print column) ------------------------------- */

typedef void attr_printer(mlc_str *out, mlc_gop op, const mlc_gattrs *a);

static void put_none(mlc_str *out, mlc_gop op, const mlc_gattrs *a) { (void)out, (void)op, (void)a; }

static void put_conv(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  int nsp = mlc_gop_window_dims(op);
  mlc_str_puts(out, ", strides=");
  put_ints(out, nsp, a->strides, '[', ']');
  mlc_str_puts(out, ", padding=");
  put_ints(out, 2 * nsp, a->pads, '[', ']');
  mlc_str_puts(out, ", dilation=");
  put_ints(out, nsp, a->dilations, '[', ']');
  if (op == MLC_GOP_CONV_TRANSPOSE2D || op == MLC_GOP_CONV_TRANSPOSE3D) {
    mlc_str_puts(out, ", output_padding=");
    put_ints(out, nsp, a->output_padding, '[', ']');
  }
  mlc_str_printf(out, ", groups=%lld", (long long)a->groups);
}

static void put_im2col(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", kernel=");
  put_ints(out, 2, a->kernel, '[', ']');
  mlc_str_puts(out, ", strides=");
  put_ints(out, 2, a->strides, '[', ']');
  mlc_str_puts(out, ", dilation=");
  put_ints(out, 2, a->dilations, '[', ']');
}

static void put_pool(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  int nsp = mlc_gop_window_dims(op);
  if (op == MLC_GOP_AVG_POOL2D || op == MLC_GOP_AVG_POOL3D)
    mlc_str_printf(out, ", count_include_pad=%s", a->count_include_pad ? "True" : "False");
  mlc_str_puts(out, ", pool_size=");
  put_ints(out, nsp, a->kernel, '[', ']');
  mlc_str_puts(out, ", strides=");
  put_ints(out, nsp, a->strides, '[', ']');
  mlc_str_puts(out, ", padding=");
  put_ints(out, 2 * nsp, a->pads, '[', ']');
  mlc_str_puts(out, ", dilation=");
  put_ints(out, nsp, a->dilations, '[', ']');
  mlc_str_printf(out, ", ceil_mode=%s", a->ceil_mode ? "True" : "False");
}

static void put_eps(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", epsilon=");
  mlc_str_put_double(out, a->eps);
}

static void put_layernorm(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  if (a->axis != -1) mlc_str_printf(out, ", axis=%lld", (long long)a->axis);
  put_eps(out, op, a);
}

static void put_axis(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_printf(out, ", axis=%lld", (long long)a->axis);
}

/* The axis unless it is the op's default (softmax: the last, flatten: 1). */
static void put_axis_opt(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  mlc_gattrs d;
  mlc_gattrs_init(op, &d);
  if (a->axis != d.axis) put_axis(out, op, a);
}

static void put_slice(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", axes=");
  put_ints(out, a->n_ints, a->ints, '[', ']');
  mlc_str_puts(out, ", begin=");
  put_ints(out, a->n_ints, a->starts, '[', ']');
  mlc_str_puts(out, ", end=");
  put_ints(out, a->n_ints, a->ends, '[', ']');
  mlc_str_puts(out, ", strides=");
  put_ints(out, a->n_ints, a->steps, '[', ']');
}

static void put_pad(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", pad_width=[");
  for (int d = 0; d < a->n_pads; d++)
    mlc_str_printf(out, "%s%lld, %lld", d ? ", " : "", (long long)a->pad_before[d],
                   (long long)a->pad_after[d]);
  mlc_str_putc(out, ']');
  put_double(out, "pad_value", a->pad_value);
}

static void put_reshape(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", ");
  put_ints(out, a->n_ints, a->ints, '(', ')');
}

/* ", axes=[...]" or ", axes=None" (transpose: reversed; reduce_*: all) */
static void put_axes(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", axes=");
  if (a->n_ints) put_ints(out, a->n_ints, a->ints, '[', ']');
  else mlc_str_puts(out, "None");
}

static void put_reduce(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  (void)op;
  mlc_str_puts(out, ", axis=");
  if (a->n_ints) put_ints(out, a->n_ints, a->ints, '[', ']');
  else mlc_str_puts(out, "None");
  mlc_str_printf(out, ", keepdims=%s", a->keepdims ? "True" : "False");
}

/* ", key=value" for each of the op's keys (scalar attributes, attrs.def). */
static void put_keys(mlc_str *out, mlc_gop op, const mlc_gattrs *a) {
  const char *p = mlc_gop_keys(op);
  char key[32], def[32];
  while (mlc_gop_key_next(&p, key, def, sizeof key)) {
    const mlc_gattr *g = mlc_gattr_find(key);
    MLC_ASSERT(g);
    switch (g->kind) {
    case MLC_GATTR_NUMBER:
    case MLC_GATTR_POSITIVE: put_double(out, key, MLC_GATTR_GET(a, g, double)); break;
    case MLC_GATTR_AXIS:
    case MLC_GATTR_INT:
      mlc_str_printf(out, ", %s=%lld", key, (long long)MLC_GATTR_GET(a, g, int64_t));
      break;
    case MLC_GATTR_BOOL:
      mlc_str_printf(out, ", %s=%s", key, MLC_GATTR_GET(a, g, bool) ? "True" : "False");
      break;
    case MLC_GATTR_DTYPE:
      mlc_str_printf(out, ", %s=\"%s\"", key, mlc_dtype_name(MLC_GATTR_GET(a, g, mlc_dtype)));
      break;
    }
  }
}

static attr_printer *const attr_printers[] = {
#define MLC_GOP(id, name, script, min_in, max_in, cls, shape, types, impl, print, keys) \
  [MLC_GOP_##id] = put_##print,
#include "graph/ops.def"
};
_Static_assert(sizeof(attr_printers) / sizeof(attr_printers[0]) == MLC_GOP_COUNT,
               "attribute printer table out of date");

static void put_attrs(mlc_str *out, const mlc_gbinding *b) {
  attr_printers[b->op](out, b->op, &b->attrs);
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
  case MLC_GCALL_EXTERN:
    mlc_str_printf(out, "%s = R.call_dps_packed(\"%s\", (", b->var->name, b->extern_func);
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
  for (int i = 0; i < f->n_bindings; i++)
    calls |= f->bindings[i].kind == MLC_GCALL_FUNC || f->bindings[i].kind == MLC_GCALL_TIR;
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
