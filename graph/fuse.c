/* Fusion into primitive sub-functions (the notes' MatmulAddFusor, grown to
 * chains): a group starts at an anchor op (matmul, dense, conv2d, ...) or an
 * elementwise op and takes in the elementwise ops that consume its result,
 * one after another, while the result so far has exactly one consumer and
 * is not an output. A producer with several consumers is never fused (that
 * would compute it twice). Injective ops (reshape, transpose) stay alone,
 * but for a transpose whose one consumer is a matmul: it joins the
 * matmul's group in front, and the kernel's schedule inlines it, so the
 * matmul reads the operand in place (attention's keys and values, a
 * decode step's whole cache, are not copied transposed first). A
 * reduction (REDUCE class: it reads each input element once) takes in
 * front the chain of elementwise ops that only it consumes. Attention's
 * matmul, softmax and matmul become one group (take_attention).
 *
 * The fused call replaces the group's last binding, which is where every
 * value the group reads from outside is defined; the group's intermediate
 * results have no other consumer, so nothing else moves.
 *
 * First, reshapes sink below elementwise ops (sink_reshapes), so that a
 * chain an exporter cut with one (a transformer's matmul over [B*S, K]
 * rows, reshaped to [B, S, N] before its bias, GELU and residual add)
 * fuses whole; the reshapes left are views after lowering (no kernel). */
#include "graph/graph_impl.h"

#include <stdio.h>
#include <string.h>

#define MAX_GROUP MLC_GRAPH_FUSE_MAX

/* The binding that uses v as its only use, when that is an elementwise op
 * reading v once; -1 otherwise. */
static int sole_elemwise_consumer(const mlc_gfunc *f, const mlc_guses *u, const mlc_gvar *v) {
  int i;
  if (mlc_guses_count(u, v) != 1) return -1;
  if (!mlc_gmap_get(&u->first, v, &i)) return -1; /* the use is an output */
  const mlc_gbinding *b = &f->bindings[i];
  return b->kind == MLC_GCALL_OP && mlc_gop_class_of(b->op) == MLC_GOP_ELEMWISE ? i : -1;
}

/* ---- reshapes sunk below elementwise ops ---- */

/* Dims a and b share at their ends. */
static int shared_trailing(const mlc_gtype *a, const mlc_gtype *b) {
  int t = 0;
  while (t < a->ndim && t < b->ndim && a->shape[a->ndim - 1 - t] == b->shape[b->ndim - 1 - t]) t++;
  return t;
}

/* The bindings a pass of sink_reshapes makes. */
typedef struct sink_out {
  MLC_VEC(mlc_gbinding) bs;
} sink_out;

static bool name_taken(const mlc_gmodule *m, const mlc_gfunc *f, const sink_out *o, const char *s) {
  for (int i = 0; i < f->n_params; i++)
    if (strcmp(f->params[i]->name, s) == 0) return true;
  for (int i = 0; i < f->n_bindings; i++)
    if (strcmp(f->bindings[i].var->name, s) == 0) return true;
  for (int i = 0; i < o->bs.len; i++)
    if (strcmp(o->bs.data[i].var->name, s) == 0) return true;
  for (int i = 0; i < m->n_consts; i++)
    if (strcmp(m->consts[i]->name, s) == 0) return true;
  return false;
}

/* A new bound var of type t named base + suffix (then _1, _2, ... while
 * that names something in f). */
static mlc_gvar *fresh_var(mlc_gmodule *m, const mlc_gfunc *f, const sink_out *o, const char *base,
                           const char *suffix, const mlc_gtype *t) {
  const char *name = mlc_arena_printf(m->arena, "%s%s", base, suffix);
  for (int k = 1; name_taken(m, f, o, name); k++)
    name = mlc_arena_printf(m->arena, "%s%s_%d", base, suffix, k);
  return mlc_gvar_new(m, name, MLC_GVAR_BOUND, t);
}

/* Whether operand c, broadcast against the reshaped value, reads only
 * its last t dims (which the value before the reshape shares). */
static bool operand_sinks(const mlc_gvar *c, int t) {
  for (int p = t; p < c->type.ndim; p++)
    if (c->type.shape[c->type.ndim - 1 - p] != 1) return false;
  return true;
}

/* c as an operand of the op over the value before the reshape, of at
 * most its rank: c; a copy of constant c without the leading 1s; else a
 * reshape of c (a view: no kernel) pushed onto bs. */
static mlc_gvar *sunk_operand(mlc_gmodule *m, const mlc_gfunc *f, mlc_gvar *c, int rank,
                              sink_out *o) {
  if (c->type.ndim <= rank) return c;
  mlc_gtype t = c->type;
  t.ndim = rank;
  memcpy(t.shape, c->type.shape + (c->type.ndim - rank), sizeof(int64_t) * (size_t)rank);
  if (c->kind == MLC_GVAR_CONST) {
    mlc_gvar *k = mlc_graph_const_new(m, c->name, &t);
    memcpy(k->data, c->data, (size_t)mlc_gtype_bytes(&t));
    return k;
  }
  mlc_gbinding r = {.var = fresh_var(m, f, o, c->name, "_view", &t),
                    .kind = MLC_GCALL_OP, .op = MLC_GOP_RESHAPE, .n_args = 1,
                    .args = mlc_gvars_dup(m, 1, &c)};
  mlc_gattrs_init(MLC_GOP_RESHAPE, &r.attrs);
  r.attrs.n_ints = rank;
  memcpy(r.attrs.ints, t.shape, sizeof(int64_t) * (size_t)rank);
  MLC_VEC_APUSH(m->arena, o->bs, r);
  return r.var;
}

/* y = op(..., reshape(x), ...) as y' = op(..., x, ...), y = reshape(y')
 * pushed onto bs (after the reshapes of operands sunk_operand makes),
 * when x (a fusible op's result) and its reshape have no other use, the
 * reshape is not broadcast by op and every other operand sinks
 * (operand_sinks). */
static bool sink_reshape(mlc_gmodule *m, const mlc_gfunc *f, const mlc_guses *u,
                         const mlc_gbinding *b, sink_out *o) {
  if (b->kind != MLC_GCALL_OP || mlc_gop_class_of(b->op) != MLC_GOP_ELEMWISE) return false;
  for (int r = 0; r < b->n_args; r++) {
    mlc_gvar *rv = b->args[r];
    int d, dx;
    if (rv->kind != MLC_GVAR_BOUND || mlc_guses_count(u, rv) != 1 || !mlc_gmap_get(&u->def, rv, &d))
      continue;
    const mlc_gbinding *rb = &f->bindings[d];
    if (rb->kind != MLC_GCALL_OP || rb->op != MLC_GOP_RESHAPE) continue;
    mlc_gvar *x = rb->args[0];
    if (x->kind != MLC_GVAR_BOUND || mlc_guses_count(u, x) != 1 || !mlc_gmap_get(&u->def, x, &dx))
      continue;
    const mlc_gbinding *xb = &f->bindings[dx];
    if (xb->kind != MLC_GCALL_OP || mlc_gop_class_of(xb->op) == MLC_GOP_INJECTIVE) continue;
    mlc_gtype yt = x->type;
    yt.dtype = b->var->type.dtype;
    if (rv->type.ndim != b->var->type.ndim ||
        memcmp(rv->type.shape, b->var->type.shape, sizeof(int64_t) * (size_t)rv->type.ndim) != 0)
      continue;
    int t = shared_trailing(&x->type, &rv->type);
    bool ok = true;
    for (int j = 0; j < b->n_args && ok; j++) ok = j == r || operand_sinks(b->args[j], t);
    if (!ok) continue;
    mlc_gvar **args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, b->n_args);
    for (int j = 0; j < b->n_args; j++) args[j] = j == r ? x : sunk_operand(m, f, b->args[j], yt.ndim, o);
    mlc_gvar *y = fresh_var(m, f, o, b->var->name, "_unreshaped", &yt);
    mlc_gbinding op = *b, back = *rb;
    op.var = y;
    op.args = args;
    back.var = b->var;
    back.args = mlc_gvars_dup(m, 1, &y);
    MLC_VEC_APUSH(m->arena, o->bs, op);
    MLC_VEC_APUSH(m->arena, o->bs, back);
    return true;
  }
  return false;
}

/* Sink reshapes until none sinks: a pass moves each one below one op
 * (the uses it reads are those before the pass). */
static void sink_reshapes(mlc_gmodule *m, mlc_gfunc *f) {
  sink_out o = {0};
  for (bool changed = true; changed;) {
    changed = false;
    mlc_arena *ua = mlc_arena_new_child(m->arena);
    mlc_guses u;
    mlc_guses_init(&u, ua, f);
    o.bs = (typeof(o.bs)){0};
    for (int i = 0; i < f->n_bindings; i++) {
      bool sunk = sink_reshape(m, f, &u, &f->bindings[i], &o);
      if (!sunk) MLC_VEC_APUSH(m->arena, o.bs, f->bindings[i]);
      changed |= sunk;
    }
    mlc_arena_free(ua);
    if (changed) {
      mlc_gfunc_set_bindings(m, f, o.bs.len, o.bs.data);
      mlc_gfunc_remove_unused(m, f);
    }
  }
}

/* ---- transposes whose reshape drops dims of 1 ---- */

/* Whether a reshape from `from` to `to` only drops dims of 1 (matched
 * from the left); drop[i]: dim i of from is dropped. */
static bool drops_unit_dims(const mlc_gtype *from, const mlc_gtype *to, bool *drop) {
  int j = 0;
  for (int i = 0; i < from->ndim; i++) {
    drop[i] = !(j < to->ndim && from->shape[i] == to->shape[j]);
    if (!drop[i]) j++;
    else if (from->shape[i] != 1) return false;
  }
  return j == to->ndim && to->ndim < from->ndim;
}

/* r = reshape(t, ...) dropping dims of 1, t = transpose(x, perm) used by r
 * alone: t's binding becomes x' = reshape(x) without those dims (a view)
 * and r's transpose(x', perm'). An exporter's batched matmul over a
 * transposed operand (attention's keys: transpose, then a reshape to 3-D)
 * then reads the transpose directly, which take_transposes fuses. */
static void squeeze_transpose(mlc_gmodule *m, mlc_gbinding *rb, mlc_gbinding *tb) {
  const mlc_gtype *tt = &tb->var->type, *xt = &tb->args[0]->type;
  bool drop[MLC_GRAPH_MAX_DIMS], gone[MLC_GRAPH_MAX_DIMS] = {0};
  if (!drops_unit_dims(tt, &rb->var->type, drop)) return;
  int n = tt->ndim, perm[MLC_GRAPH_MAX_DIMS], below[MLC_GRAPH_MAX_DIMS + 1] = {0};
  for (int i = 0; i < n; i++) perm[i] = tb->attrs.n_ints ? (int)tb->attrs.ints[i] : n - 1 - i;
  for (int i = 0; i < n; i++) gone[perm[i]] = drop[i];
  mlc_gtype st = *xt;
  st.ndim = 0;
  for (int d = 0; d < n; d++) {
    below[d + 1] = below[d] + gone[d];
    if (!gone[d]) st.shape[st.ndim++] = xt->shape[d];
  }
  mlc_gattrs ra, ta;
  mlc_gattrs_init(MLC_GOP_RESHAPE, &ra);
  mlc_gattrs_init(MLC_GOP_TRANSPOSE, &ta);
  ra.n_ints = st.ndim;
  memcpy(ra.ints, st.shape, sizeof(int64_t) * (size_t)st.ndim);
  for (int i = 0; i < n; i++)
    if (!drop[i]) ta.ints[ta.n_ints++] = perm[i] - below[perm[i]];
  mlc_gvar *x = tb->args[0];
  mlc_gvar *squeezed = mlc_gvar_new(m, tb->var->name, MLC_GVAR_BOUND, &st);
  *tb = (mlc_gbinding){.var = squeezed, .kind = MLC_GCALL_OP, .op = MLC_GOP_RESHAPE, .attrs = ra,
                       .n_args = 1, .args = mlc_gvars_dup(m, 1, &x)};
  *rb = (mlc_gbinding){.var = rb->var, .kind = MLC_GCALL_OP, .op = MLC_GOP_TRANSPOSE, .attrs = ta,
                       .n_args = 1, .args = mlc_gvars_dup(m, 1, &squeezed)};
}

static void squeeze_transposes(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_arena *ua = mlc_arena_new_child(m->arena);
  mlc_guses u;
  mlc_guses_init(&u, ua, f);
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *rb = &f->bindings[i];
    int d;
    if (rb->kind != MLC_GCALL_OP || rb->op != MLC_GOP_RESHAPE || rb->args[0]->kind != MLC_GVAR_BOUND ||
        mlc_guses_count(&u, rb->args[0]) != 1 || !mlc_gmap_get(&u.def, rb->args[0], &d))
      continue;
    mlc_gbinding *tb = &f->bindings[d];
    if (tb->kind == MLC_GCALL_OP && tb->op == MLC_GOP_TRANSPOSE && !mlc_gfunc_is_output(f, tb->var))
      squeeze_transpose(m, rb, tb);
  }
  mlc_arena_free(ua);
}

/* ---- groups ---- */

typedef struct group {
  int n;
  int members[MAX_GROUP]; /* binding indices, in order */
} group;

/* The transposes whose result only matmul binding mm uses, in binding
 * order, into found; their number. */
static int matmul_transposes(const mlc_gfunc *f, const mlc_guses *u, const int *owner, int mm,
                             int found[2]) {
  const mlc_gbinding *b = &f->bindings[mm];
  int n = 0;
  if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_MATMUL) return 0;
  for (int j = 0; j < b->n_args && j < 2; j++) {
    int d = mlc_gfunc_def(f, b->args[j]);
    if (d < 0 || owner[d] >= 0 || f->bindings[d].kind != MLC_GCALL_OP ||
        f->bindings[d].op != MLC_GOP_TRANSPOSE || mlc_guses_count(u, b->args[j]) != 1 ||
        mlc_gfunc_is_output(f, b->args[j]))
      continue;
    found[n++] = d;
  }
  if (n == 2 && found[0] > found[1]) found[0] ^= found[1], found[1] ^= found[0], found[0] ^= found[1];
  return n;
}

/* Prepends to g (holding matmul binding i alone) the transposes whose
 * result only binding i uses. */
static void take_transposes(const mlc_gfunc *f, const mlc_guses *u, const int *owner, group *g) {
  int found[2], n = matmul_transposes(f, u, owner, g->members[0], found);
  memmove(g->members + n, g->members, sizeof *g->members * (size_t)g->n);
  memcpy(g->members, found, sizeof *found * (size_t)n);
  g->n += n;
}

/* Prepends to g (holding reduction binding i alone) the chain of
 * elementwise ops that feeds it, each the only use of its result and none
 * an output, up to max_ops in all: the reduction reads each element
 * once, so the chain is computed once, in the reduction's kernel, and its
 * result never goes through memory. */
static void take_elemwise_inputs(const mlc_gfunc *f, const mlc_guses *u, const int *owner, int max_ops,
                                 group *g) {
  const mlc_gbinding *b = &f->bindings[g->members[0]];
  if (b->kind != MLC_GCALL_OP || mlc_gop_class_of(b->op) != MLC_GOP_REDUCE) return;
  while (g->n < max_ops) {
    b = &f->bindings[g->members[0]];
    int d = b->n_args == 1 ? mlc_gfunc_def(f, b->args[0]) : -1;
    if (d < 0 || owner[d] >= 0 || f->bindings[d].kind != MLC_GCALL_OP ||
        mlc_gop_class_of(f->bindings[d].op) != MLC_GOP_ELEMWISE || mlc_guses_count(u, b->args[0]) != 1 ||
        mlc_gfunc_is_output(f, b->args[0]))
      return;
    memmove(g->members + 1, g->members, sizeof *g->members * (size_t)g->n);
    g->members[0] = d;
    g->n++;
  }
}

static void grow_group(const mlc_gfunc *f, const mlc_guses *u, const int *owner, int max_ops,
                       group *g) {
  while (g->n < max_ops) {
    int j = sole_elemwise_consumer(f, u, f->bindings[g->members[g->n - 1]].var);
    if (j < 0 || owner[j] >= 0) return;
    g->members[g->n++] = j;
  }
}

/* The binding that is v's only use, when it is a call of op (an output
 * is a use of its own); -1 otherwise. */
static int sole_consumer(const mlc_gfunc *f, const mlc_guses *u, const int *owner,
                         const mlc_gvar *v, mlc_gop op) {
  int i;
  if (mlc_guses_count(u, v) != 1 || mlc_gfunc_is_output(f, v) || !mlc_gmap_get(&u->first, v, &i))
    return -1;
  const mlc_gbinding *b = &f->bindings[i];
  return owner[i] < 0 && b->kind == MLC_GCALL_OP && b->op == op ? i : -1;
}

/* v's sole consumer past the reshapes that alone consume it and keep its
 * last dim (a row stays a row), which go into path; -1 when that
 * consumer is not a call of op or path is full. */
static int consumer_past_reshapes(const mlc_gfunc *f, const mlc_guses *u, const int *owner,
                                  const mlc_gvar *v, mlc_gop op, int *path, int *n, int max) {
  for (;;) {
    int r = sole_consumer(f, u, owner, v, MLC_GOP_RESHAPE);
    if (r < 0) return sole_consumer(f, u, owner, v, op);
    const mlc_gtype *from = &v->type, *to = &f->bindings[r].var->type;
    if (*n >= max || from->ndim == 0 || to->ndim == 0 ||
        from->shape[from->ndim - 1] != to->shape[to->ndim - 1])
      return -1;
    path[(*n)++] = r;
    v = f->bindings[r].var;
  }
}

/* Attention as one kernel: g, a matmul's group (its transposes, the
 * matmul, the elementwise chain after it: a scale, a mask), grows by the
 * softmax over the last axis that alone consumes the chain's result and
 * the matmul that alone consumes the probabilities as its left operand
 * (with its right operand's transpose), reshapes that keep the rows
 * between them, then that matmul's elementwise chain. The default
 * schedule computes the scores, the softmax and the weighted sum a tile
 * of query rows at a time (tuner/attention.c), so the score matrix is
 * never in memory whole. A product of one query row (a decode step)
 * keeps its kernels: its scores are one row already. */
static void take_attention(const mlc_gfunc *f, const mlc_guses *u, const int *owner, int max_ops,
                           int mm, group *g) {
  const mlc_gbinding *b = &f->bindings[mm];
  if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_MATMUL) return;
  const mlc_gtype *st = &b->var->type;
  if (st->ndim < 2 || st->shape[st->ndim - 2] == 1) return;
  int add[MAX_GROUP], n = 0;
  const mlc_gvar *end = f->bindings[g->members[g->n - 1]].var;
  int sm = consumer_past_reshapes(f, u, owner, end, MLC_GOP_SOFTMAX, add, &n, MAX_GROUP - 4);
  if (sm < 0) return;
  const mlc_gbinding *smb = &f->bindings[sm];
  if (mlc_gop_axis(smb->attrs.axis, smb->var->type.ndim) != smb->var->type.ndim - 1) return;
  add[n++] = sm;
  int mm2 = consumer_past_reshapes(f, u, owner, smb->var, MLC_GOP_MATMUL, add, &n, MAX_GROUP - 3);
  const mlc_gvar *probs = n > 0 ? f->bindings[add[n - 1]].var : NULL;
  if (mm2 < 0 || f->bindings[mm2].args[0] != probs || f->bindings[mm2].args[1] == probs) return;
  int tr[2], nt = matmul_transposes(f, u, owner, mm2, tr);
  for (int k = 0; k < nt; k++) add[n++] = tr[k];
  add[n++] = mm2;
  if (g->n + n > max_ops) return;
  memcpy(g->members + g->n, add, sizeof *add * (size_t)n);
  g->n += n;
  grow_group(f, u, owner, max_ops, g);
}

static bool in_group(const mlc_gfunc *f, const group *g, const mlc_gvar *v) {
  for (int i = 0; i < g->n; i++)
    if (f->bindings[g->members[i]].var == v) return true;
  return false;
}

typedef struct builder {
  mlc_gmodule *m;
  int n_ext;
  mlc_gvar *ext[64];    /* outside values the group reads, first use first */
  mlc_gvar *params[64]; /* the sub-function's param for each */
  int n_inner;
  mlc_gvar *inner_old[MAX_GROUP], *inner_new[MAX_GROUP];
} builder;

static mlc_gvar *map_arg(builder *B, const mlc_gfunc *f, const group *g, mlc_gvar *v) {
  for (int i = 0; i < B->n_inner; i++)
    if (B->inner_old[i] == v) return B->inner_new[i];
  for (int i = 0; i < B->n_ext; i++)
    if (B->ext[i] == v) return B->params[i];
  MLC_ASSERT(!in_group(f, g, v) && B->n_ext < 64);
  B->ext[B->n_ext] = v;
  B->params[B->n_ext] = mlc_gvar_new(B->m, v->name, MLC_GVAR_PARAM, &v->type);
  return B->params[B->n_ext++];
}

/* Whether g is attention's group (take_attention): two matmuls and the
 * softmax between them. */
static bool is_attention(const mlc_gfunc *f, const group *g) {
  int matmuls = 0, softmaxes = 0;
  for (int i = 0; i < g->n; i++) {
    mlc_gop op = f->bindings[g->members[i]].op;
    matmuls += op == MLC_GOP_MATMUL;
    softmaxes += op == MLC_GOP_SOFTMAX;
  }
  return matmuls == 2 && softmaxes == 1;
}

/* fused_<op>_<op>..._<op><counter>; attention's group, whose ops named
 * one by one run to a hundred characters (transposes, reshapes, a scale
 * and a mask around them), is fused_attention<counter>. */
static void fused_name(const mlc_gfunc *f, const group *g, int counter, char *buf, size_t n) {
  if (is_attention(f, g)) {
    snprintf(buf, n, "fused_attention%d", counter);
    return;
  }
  size_t k = (size_t)snprintf(buf, n, "fused");
  for (int i = 0; i < g->n && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "_%s", mlc_gop_name(f->bindings[g->members[i]].op));
  if (k < n) snprintf(buf + k, n - k, "%d", counter);
}

/* The primitive sub-function computing group g of f. */
static mlc_gfunc *make_subfunction(mlc_gmodule *m, const mlc_gfunc *f, const group *g,
                                   int counter, builder *B) {
  char name[256];
  fused_name(f, g, counter, name, sizeof name);
  mlc_gfunc *sub = mlc_gfunc_new(m, name, true);
  mlc_gbinding bs[MAX_GROUP];
  memset(B, 0, sizeof *B);
  B->m = m;
  for (int i = 0; i < g->n; i++) {
    const mlc_gbinding *old = &f->bindings[g->members[i]];
    bs[i] = *old;
    bs[i].args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, old->n_args);
    for (int j = 0; j < old->n_args; j++) bs[i].args[j] = map_arg(B, f, g, old->args[j]);
    bs[i].var = mlc_gvar_new(m, old->var->name, MLC_GVAR_BOUND, &old->var->type);
    B->inner_old[B->n_inner] = old->var;
    B->inner_new[B->n_inner++] = bs[i].var;
  }
  mlc_gfunc_set_bindings(m, sub, g->n, bs);
  sub->n_params = B->n_ext;
  sub->params = mlc_gvars_dup(m, B->n_ext, B->params);
  sub->n_outputs = 1;
  sub->outputs = mlc_gvars_dup(m, 1, &bs[g->n - 1].var);
  return sub;
}

static void fuse_func(mlc_gmodule *m, mlc_gfunc *f, int *counter) {
  int n = f->n_bindings;
  int *owner = MLC_NEW_ARRAY(m->arena, int, n + 1);
  for (int i = 0; i < n; i++) owner[i] = -1;
  mlc_gbinding *out = MLC_NEW_ARRAY(m->arena, mlc_gbinding, n + 1);
  mlc_gbinding *call_at = MLC_NEW_ARRAY(m->arena, mlc_gbinding, n + 1);
  bool *is_last = MLC_NEW_ARRAY(m->arena, bool, n + 1);
  mlc_arena *ua = mlc_arena_new_child(m->arena);
  mlc_guses u;
  mlc_guses_init(&u, ua, f);
  for (int i = 0; i < n; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (owner[i] >= 0 || b->kind != MLC_GCALL_OP ||
        mlc_gop_class_of(b->op) == MLC_GOP_INJECTIVE)
      continue;
    group g = {1, {i}};
    int max_ops = m->fuse_max_ops > 0 && m->fuse_max_ops < MAX_GROUP ? m->fuse_max_ops : MAX_GROUP;
    take_transposes(f, &u, owner, &g);
    take_elemwise_inputs(f, &u, owner, max_ops, &g);
    grow_group(f, &u, owner, max_ops, &g);
    take_attention(f, &u, owner, max_ops, i, &g);
    if (g.n < 2) continue;
    builder B;
    mlc_gfunc *sub = make_subfunction(m, f, &g, (*counter)++, &B);
    mlc_graph_add_func(m, sub);
    for (int k = 0; k < g.n; k++) owner[g.members[k]] = i;
    int last = g.members[g.n - 1];
    is_last[last] = true;
    call_at[last] = (mlc_gbinding){.var = f->bindings[last].var, .kind = MLC_GCALL_FUNC,
                                   .callee = sub, .n_args = B.n_ext,
                                   .args = mlc_gvars_dup(m, B.n_ext, B.ext)};
  }
  mlc_arena_free(ua);
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (is_last[i]) out[k++] = call_at[i];
    else if (owner[i] < 0) out[k++] = f->bindings[i];
  }
  f->bindings = out;
  f->n_bindings = k;
}

bool mlc_graph_fuse(mlc_gmodule *m, mlc_error *err) {
  int counter = 0;
  int n = m->n_funcs;
  mlc_gfunc **fs = MLC_NEW_ARRAY(m->arena, mlc_gfunc *, n + 1);
  memcpy(fs, m->funcs, sizeof *fs * (size_t)n);
  for (int i = 0; i < n; i++)
    if (!fs[i]->primitive) {
      sink_reshapes(m, fs[i]);
      squeeze_transposes(m, fs[i]);
      fuse_func(m, fs[i], &counter);
    }
  return mlc_graph_verify(m, err);
}
