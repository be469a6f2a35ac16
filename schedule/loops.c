/* Loop primitives: split, fuse, reorder. Each checks every precondition
 * before touching the IR, so a refusal leaves the state as it was. */
#include "schedule/sched_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* TensorIR splits and fuses only loops without a thread binding or
 * annotations: the new loops are serial and carry none, so a binding or
 * an annotation would silently disappear. */
static bool plain_loop_check(mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err) {
  char d[96];
  const mlc_stmt *l = s->rvs.data[rv].loop;
  if (l->loop.kind == MLC_FOR_THREAD_BINDING)
    return mlc_error_set(err,
                         "%s: %s is bound to %s; TensorIR only %s loops without a thread binding "
                         "or annotations",
                         prim, sched_rv_desc(s, rv, d), l->loop.thread ? l->loop.thread : "a thread",
                         strcmp(prim, "split") == 0 ? "splits" : "fuses");
  if (l->loop.n_anns > 0)
    return mlc_error_set(err,
                         "%s: %s carries annotation \"%s\"%s; TensorIR only %s loops without a "
                         "thread binding or annotations",
                         prim, sched_rv_desc(s, rv, d), l->loop.anns[0].key,
                         l->loop.n_anns > 1 ? " and others" : "",
                         strcmp(prim, "split") == 0 ? "splits" : "fuses");
  return true;
}

static bool const_loop(mlc_stmt *loop, int64_t *mn, int64_t *ext) {
  return mlc_expr_is_const_int(loop->loop.min, mn) && mlc_expr_is_const_int(loop->loop.extent, ext);
}

static mlc_expr *int_like(mlc_arena *a, const mlc_var *v, int64_t x) {
  return mlc_int_t(a, v->dtype, x);
}

/* pred := pred and cond, on every block realize directly under a loop. */
typedef struct pred_ctx {
  mlc_arena *a;
  mlc_expr *cond;
} pred_ctx;

static void add_predicate(mlc_stmt *r, void *ctx_) {
  pred_ctx *ctx = ctx_;
  mlc_expr *p = r->realize.predicate;
  r->realize.predicate = p ? mlc_binary(ctx->a, MLC_EXPR_AND, p, ctx->cond) : ctx->cond;
}

/* ---- split ----------------------------------------------------------------- */

/* Resolve factor operands to integers; *unknown is the inferred one's index. */
static bool split_factors(mlc_sched *s, const char *who, int n, const mlc_operand *factors,
                          int64_t *f, int *unknown, mlc_error *err) {
  *unknown = -1;
  for (int i = 0; i < n; i++) {
    const mlc_operand *op = &factors[i];
    switch (op->kind) {
    case MLC_OPERAND_NONE: f[i] = -1; break;
    case MLC_OPERAND_INT: f[i] = op->i; break;
    case MLC_OPERAND_RV:
      if (!sched_check_value(s, "split", op->rv, err)) return false;
      f[i] = s->rvs.data[op->rv].value;
      break;
    case MLC_OPERAND_FLOAT:
    case MLC_OPERAND_STR:
    case MLC_OPERAND_ANN:
      return mlc_error_set(err, "split: %s: factor %d is not an integer", who, i);
    }
    if (f[i] == -1) {
      if (*unknown >= 0)
        return mlc_error_set(err, "split: %s: more than one factor is None (factors %d and %d)",
                             who, *unknown, i);
      *unknown = i;
    } else if (f[i] < 1) {
      return mlc_error_set(err, "split: %s: factor %d is %" PRId64 ", factors must be positive",
                           who, i, f[i]);
    }
  }
  return true;
}

/* A statement outside every block (a lowered store, an if) could not carry
 * the predicate an uneven split needs. */
/* A statement outside any block (a store, an evaluate, an if) stops the walk. */
static mlc_walk bare_step(const mlc_stmt *st, void *ud) {
  MLC_UNUSED(ud);
  switch (st->kind) {
  case MLC_STMT_BLOCK_REALIZE: return MLC_WALK_SKIP;
  case MLC_STMT_FOR:
  case MLC_STMT_SEQ:
  case MLC_STMT_ALLOCATE: return MLC_WALK_INTO;
  case MLC_STMT_IF:
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return MLC_WALK_STOP;
  }
  mlc_unreachable();
}

static bool has_bare_stmt(const mlc_stmt *st) { return !mlc_stmt_walk(st, bare_step, NULL); }

static bool split_too_large(const char *who, int n, const int64_t *f, int unknown,
                            mlc_error *err) {
  char list[MLC_SCHED_MAX_TILE * 24 + 8];
  size_t len = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)(i == unknown ? snprintf(list + len, sizeof list - len, "%sNone", i ? ", " : "")
                                 : snprintf(list + len, sizeof list - len, "%s%" PRId64,
                                            i ? ", " : "", f[i]));
  return mlc_error_set(err, "split: %s: the factors [%s] multiply to more than 2^63-1", who, list);
}

/* All factors known: the inferred one is ceil(extent / the others). */
/* Whether loop runs from a constant min over a symbolic extent (an
 * expression of the function's size vars); *ext is then its bound. */
static bool symbolic_loop(mlc_sched *s, const mlc_stmt *loop, int64_t *mn, int64_t *ext) {
  bool symbolic;
  return sched_loop_range(s, loop, mn, ext, &symbolic) && symbolic;
}

static bool split_resolve(mlc_sched *s, mlc_rv loop_rv, int n, const mlc_operand *factors,
                          int64_t *f, int64_t *mn, int64_t *ext, int64_t *prod, bool *symbolic,
                          mlc_error *err) {
  char who[96];
  if (!sched_check_loop(s, "split", loop_rv, err) || !plain_loop_check(s, "split", loop_rv, err))
    return false;
  sched_rv_desc(s, loop_rv, who);
  if (n < 2 || n > MLC_SCHED_MAX_TILE)
    return mlc_error_set(err, "split: %s: needs 2 to %d factors, got %d", who, MLC_SCHED_MAX_TILE, n);
  *symbolic = !const_loop(s->rvs.data[loop_rv].loop, mn, ext);
  if (*symbolic && !symbolic_loop(s, s->rvs.data[loop_rv].loop, mn, ext))
    return mlc_error_set(err, "split: %s: the loop's bounds are not constant", who);
  int unknown;
  if (!split_factors(s, who, n, factors, f, &unknown, err)) return false;
  /* A symbolic extent: the outer loop takes what the others leave,
   * ceil(extent / their product), the tail under a predicate. */
  if (*symbolic && unknown != 0)
    return mlc_error_set(err, "split: %s: the extent is symbolic: the first factor must be None",
                         who);
  /* Factors come from traces (untrusted records): a product that wrapped
   * around could equal the extent and bind the iteration wrongly. */
  *prod = 1;
  for (int i = 0; i < n; i++)
    if (i != unknown && mlc_mul_overflow(*prod, f[i], prod))
      return split_too_large(who, n, f, unknown, err);
  if (unknown >= 0) {
    int64_t up;
    if (mlc_add_overflow(*ext, *prod - 1, &up)) return split_too_large(who, n, f, unknown, err);
    f[unknown] = up / *prod;
    if (mlc_mul_overflow(*prod, f[unknown], prod)) return split_too_large(who, n, f, unknown, err);
  }
  /* The n loops replace one: paths through the loop grow by n - 1 (walked
   * only when the function's height bound leaves no room). */
  mlc_stmt *path[SCHED_MAX_DEPTH], *loop = s->rvs.data[loop_rv].loop;
  int deepest = sched_func_height(s) + n - 1;
  if (deepest > SCHED_MAX_NEST) deepest = sched_path_to(s, loop, path) - 1 + sched_height(loop) + n - 1;
  if (deepest > SCHED_MAX_NEST)
    return mlc_error_set(err,
                         "split: %s: %d loops here would nest the function %d statements deep, "
                         "more than the %d schedules allow",
                         who, n, deepest, SCHED_MAX_NEST);
  const mlc_var *lv = loop->loop.var;
  if (mlc_dtype_bits(lv->dtype) < 64 && *prod > (INT64_C(1) << (mlc_dtype_bits(lv->dtype) - 1)) - 1)
    return mlc_error_set(err,
                         "split: %s: the factors multiply to %" PRId64
                         ", more than the loop variable's %d-bit type holds",
                         who, *prod, mlc_dtype_bits(lv->dtype));
  if (*prod < *ext)
    return mlc_error_set(err,
                         "split: %s: the factors multiply to %" PRId64
                         ", less than the loop's extent %" PRId64,
                         who, *prod, *ext);
  if ((*prod != *ext || *symbolic) && has_bare_stmt(s->rvs.data[loop_rv].loop->loop.body))
    return mlc_error_set(err,
                         "split: %s: factors multiply to %" PRId64 ", not the extent %" PRId64
                         ", and the loop holds statements outside blocks that could not carry the "
                         "predicate",
                         who, *prod, *ext);
  return true;
}

/* Replace loop by n nested loops <var>_0 (outer) ... <var>_{n-1} binding
 * var = min + sum var_k * stride_k, guarded by a predicate when the
 * factors overshoot the extent. */
static void split_rewrite(mlc_sched *s, mlc_stmt *loop, int n, const int64_t *f, int64_t mn,
                          int64_t ext, int64_t prod, bool symbolic, bool preserve_unit_iters,
                          mlc_stmt **loops) {
  mlc_arena *a = s->arena;
  mlc_expr *sym_ext = symbolic ? loop->loop.extent : NULL;
  mlc_var *old = loop->loop.var, *vars[MLC_SCHED_MAX_TILE];
  mlc_expr *offset = NULL; /* var - min */
  int64_t stride = prod;
  mlc_stmt *body = loop->loop.body;
  for (int i = 0; i < n; i++) {
    vars[i] = mlc_var_new(a, mlc_arena_suffixed(a, old->name, i), old->dtype);
    stride /= f[i];
    if (f[i] == 1 && !preserve_unit_iters) continue; /* binds 0 */
    mlc_expr *term = mlc_ref(a, vars[i]);
    if (stride != 1) term = mlc_mul(a, term, int_like(a, old, stride));
    offset = offset ? mlc_add(a, offset, term) : term;
  }
  if (!offset) offset = int_like(a, old, 0);
  mlc_expr *value = mn != 0 ? mlc_add(a, int_like(a, old, mn), offset) : offset;
  for (int i = n - 1; i >= 0; i--) {
    mlc_expr *e = int_like(a, old, f[i]);
    int64_t inner = prod / f[0];
    if (i == 0 && sym_ext) /* ceil(extent / the inner factors' product) */
      e = mlc_simplify_expr(a, mlc_binary(a, MLC_EXPR_FLOORDIV,
                                          mlc_add(a, sym_ext, int_like(a, old, inner - 1)),
                                          int_like(a, old, inner)));
    loops[i] = mlc_for_new(a, vars[i], int_like(a, old, 0), e, MLC_FOR_SERIAL,
                           i == n - 1 ? body : loops[i + 1]);
  }
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int depth = sched_path_to(s, loop, path);
  *sched_child_slot(path[depth - 2], loop) = loops[0];
  sched_subst_bindings(s, body, 1, &old, &value);
  if (prod != ext || sym_ext) {
    pred_ctx pc = {a, mlc_binary(a, MLC_EXPR_LT, offset, sym_ext ? sym_ext : int_like(a, old, ext))};
    sched_each_realize(body, add_predicate, &pc);
    sched_simplify_bindings(s, body);
  }
}

bool mlc_sched_split(mlc_sched *s, mlc_rv loop_rv, int n, const mlc_operand *factors,
                     bool preserve_unit_iters, mlc_rv *out, mlc_error *err) {
  int64_t f[MLC_SCHED_MAX_TILE], mn = 0, ext = 0, prod = 1;
  bool symbolic = false;
  if (!split_resolve(s, loop_rv, n, factors, f, &mn, &ext, &prod, &symbolic, err)) return false;
  mlc_stmt *loops[MLC_SCHED_MAX_TILE];
  split_rewrite(s, s->rvs.data[loop_rv].loop, n, f, mn, ext, prod, symbolic, preserve_unit_iters,
                loops);
  /* Recorded as given: an inferred factor stays None. */
  mlc_operand in[1 + MLC_SCHED_MAX_TILE];
  in[0] = MLC_OP_RV(loop_rv);
  for (int i = 0; i < n; i++)
    in[i + 1] = factors[i].kind == MLC_OPERAND_INT && factors[i].i == -1 ? MLC_OP_NONE : factors[i];
  for (int i = 0; i < n; i++) out[i] = sched_new_rv(s, MLC_RV_LOOP, NULL, loops[i], 0);
  mlc_attr at = sched_attr_bool("preserve_unit_iters", preserve_unit_iters);
  sched_record(s, MLC_INST_SPLIT, n + 1, in, 1, &at, n, out);
  return true;
}

/* ---- fuse -------------------------------------------------------------------- */

/* Fusing a loop that drives a spatial iter with one that drives a reduce
 * iter of the same block would interleave the reduction with the output
 * points, so the first visit of a point could skip the init. */
typedef struct mix_ctx {
  int n;
  mlc_var **vars;
  const mlc_block *bad;
  const char *spatial, *reduce;
} mix_ctx;

static void check_mix(mlc_stmt *r, void *ctx_) {
  mix_ctx *c = ctx_;
  const mlc_block *b = r->realize.block;
  const char *sp = NULL, *rd = NULL;
  for (int i = 0; i < b->n_iters; i++)
    for (int k = 0; k < c->n; k++)
      if (mlc_expr_uses_var(r->realize.values[i], c->vars[k])) {
        if (b->iters[i].kind == MLC_ITER_SPATIAL) sp = b->iters[i].var->name;
        else rd = b->iters[i].var->name;
      }
  if (sp && rd && !c->bad) c->bad = b, c->spatial = sp, c->reduce = rd;
}

static bool fuse_check(mlc_sched *s, int n, const mlc_rv *rvs, int64_t *ext, int *sym,
                       mlc_error *err) {
  char d[96], d2[96];
  if (n < 2) return mlc_error_set(err, "fuse: needs at least 2 loops, got %d", n);
  if (n > 64) return mlc_error_set(err, "fuse: at most 64 loops, got %d", n);
  for (int i = 0; i < n; i++) {
    if (!sched_check_loop(s, "fuse", rvs[i], err) || !plain_loop_check(s, "fuse", rvs[i], err))
      return false;
    mlc_stmt *l = s->rvs.data[rvs[i]].loop;
    int64_t mn;
    /* One loop may run over a symbolic extent (ext its bound) when the
     * loops outside it run once: the fused loop then runs over that
     * extent times the inner ones'. */
    bool outer_units = *sym < 0;
    for (int j = 0; j < i && outer_units; j++) outer_units = ext[j] == 1;
    if (!const_loop(l, &mn, &ext[i])) {
      if (!outer_units || !symbolic_loop(s, l, &mn, &ext[i]))
        return mlc_error_set(err, "fuse: %s: the loop's bounds are not constant%s",
                             sched_rv_desc(s, rvs[i], d),
                             i > 0 ? " (a symbolic extent needs the loops outside it to run once)"
                                   : "");
      *sym = i;
    }
    if (mn != 0)
      return mlc_error_set(err, "fuse: %s: the loop starts at %" PRId64 ", not 0",
                           sched_rv_desc(s, rvs[i], d), mn);
    for (int j = 0; j < i; j++)
      if (s->rvs.data[rvs[j]].loop == l)
        return mlc_error_set(err, "fuse: %s is given twice", sched_rv_desc(s, rvs[i], d));
    if (i > 0 && s->rvs.data[rvs[i - 1]].loop->loop.body != l)
      return mlc_error_set(err,
                           "fuse: %s is not the only child of %s: fused loops must be adjacent, "
                           "each the body of the previous one",
                           sched_rv_desc(s, rvs[i], d), sched_rv_desc(s, rvs[i - 1], d2));
  }
  /* Extents come from parsed functions: their product must not wrap, and
   * must fit the fused loop variable's type (zero extents skipped: the
   * product fuse computes may leave them out, never more). */
  int64_t total = 1;
  for (int i = 0; i < n; i++)
    if (ext[i] != 0 && mlc_mul_overflow(total, ext[i], &total))
      return mlc_error_set(err, "fuse: the extents of %s ... %s multiply to more than 2^63-1",
                           sched_rv_desc(s, rvs[0], d), sched_rv_desc(s, rvs[n - 1], d2));
  int bits = mlc_dtype_bits(s->rvs.data[rvs[0]].loop->loop.var->dtype);
  if (bits < 64 && total > (INT64_C(1) << (bits - 1)) - 1)
    return mlc_error_set(err,
                         "fuse: the extents of %s ... %s multiply to %" PRId64
                         ", more than the loop variable's %d-bit type holds",
                         sched_rv_desc(s, rvs[0], d), sched_rv_desc(s, rvs[n - 1], d2), total, bits);
  mlc_var *vars[64];
  for (int i = 0; i < n; i++) vars[i] = s->rvs.data[rvs[i]].loop->loop.var;
  mix_ctx mc = {n, vars, NULL, NULL, NULL};
  sched_each_realize(s->rvs.data[rvs[0]].loop->loop.body, check_mix, &mc);
  if (mc.bad)
    return mlc_error_set(err,
                         "fuse: block \"%s\" binds spatial iter %s and reduce iter %s to these "
                         "loops; fusing them would interleave the reduction with its outputs",
                         mc.bad->name, mc.spatial, mc.reduce);
  return true;
}

/* Fusing a loop of symbolic extent under loops that run more than once
 * would need a division by a symbolic stride: the loop moves outside
 * them first (a Reorder, checked and recorded as one), so the fused loop
 * takes it as its most significant part. order gets the loops as fused. */
static bool symbolic_first(mlc_sched *s, int n, const mlc_rv *rvs, mlc_rv *order, mlc_error *err) {
  memcpy(order, rvs, sizeof *rvs * (size_t)n);
  int at = -1;
  bool outer_runs = false;
  for (int i = 0; i < n && at < 0; i++) {
    int64_t mn, ext;
    bool symbolic;
    if (!sched_check_loop(s, "fuse", rvs[i], err)) return false;
    const mlc_stmt *l = s->rvs.data[rvs[i]].loop;
    if (!sched_loop_range(s, l, &mn, &ext, &symbolic)) return true; /* fuse_check says why */
    if (symbolic) at = i;
    else outer_runs = outer_runs || ext != 1;
  }
  if (at <= 0 || !outer_runs) return true;
  for (int i = at; i > 0; i--) order[i] = order[i - 1];
  order[0] = rvs[at];
  return mlc_sched_reorder(s, n, order, err);
}

/* With the state keeping the loop order (fuse_outer_min): how many of the
 * loops to fuse, those outside the one of symbolic extent, when they run
 * at least fuse_outer_min times together; 0 when the whole list fuses. */
static int kept_order_prefix(mlc_sched *s, int n, const mlc_rv *rvs) {
  if (s->fuse_outer_min <= 0) return 0;
  int64_t outer = 1;
  for (int i = 0; i < n; i++) {
    int64_t mn, ext;
    bool symbolic;
    mlc_error ignored; /* fuse_check says why */
    if (!sched_check_loop(s, "fuse", rvs[i], &ignored)) return 0;
    if (!sched_loop_range(s, s->rvs.data[rvs[i]].loop, &mn, &ext, &symbolic)) return 0;
    if (symbolic) return i > 0 && outer >= s->fuse_outer_min ? i : 0;
    if (mlc_mul_overflow(outer, ext, &outer)) return 0;
  }
  return 0;
}

/* The loops of rvs from m on, which a Fuse keeping the order leaves
 * inside the fused ones: still a chain, each the body of the previous. */
static bool unfused_rest_check(mlc_sched *s, int m, int n, const mlc_rv *rvs, mlc_error *err) {
  char d[96], d2[96];
  for (int i = m; i < n; i++) {
    if (!sched_check_loop(s, "fuse", rvs[i], err) || !plain_loop_check(s, "fuse", rvs[i], err))
      return false;
    if (s->rvs.data[rvs[i - 1]].loop->loop.body != s->rvs.data[rvs[i]].loop)
      return mlc_error_set(err,
                           "fuse: %s is not the only child of %s: fused loops must be adjacent, "
                           "each the body of the previous one",
                           sched_rv_desc(s, rvs[i], d), sched_rv_desc(s, rvs[i - 1], d2));
  }
  return true;
}

/* The first n of rvs (checked by fuse_check: ext their extents, sym the
 * symbolic one or -1) fused into one loop, which takes their place. */
static mlc_stmt *fuse_loops(mlc_sched *s, int n, const mlc_rv *rvs, bool preserve_unit_iters,
                            const int64_t *ext, int sym) {
  mlc_arena *a = s->arena;
  mlc_stmt *first = s->rvs.data[rvs[0]].loop;
  mlc_stmt *last = s->rvs.data[rvs[n - 1]].loop;
  mlc_var *v0 = first->loop.var;

  mlc_str name = {.arena = a}; /* under replay's escape point */
  for (int i = 0; i < n; i++) mlc_str_printf(&name, "%s_", s->rvs.data[rvs[i]].loop->loop.var->name);
  mlc_str_puts(&name, "fused");
  mlc_var *fv = mlc_var_new(a, mlc_str_cstr(&name), v0->dtype);
  mlc_str_free(&name);

  /* Included loops (unit loops drop out unless preserved) and strides. */
  int64_t total = 1;
  for (int i = 0; i < n; i++)
    if (i >= sym && (ext[i] != 1 || preserve_unit_iters || i == sym)) total *= ext[i];
  mlc_var *vars[64];
  mlc_expr *vals[64];
  int64_t stride = total;
  bool outermost = true;
  for (int i = 0; i < n; i++) {
    vars[i] = s->rvs.data[rvs[i]].loop->loop.var;
    if (i < sym || (ext[i] == 1 && !preserve_unit_iters && i != sym)) {
      vals[i] = int_like(a, vars[i], 0);
      continue;
    }
    stride /= ext[i];
    mlc_expr *e = mlc_ref(a, fv);
    if (stride != 1) e = mlc_binary(a, MLC_EXPR_FLOORDIV, e, int_like(a, fv, stride));
    if (!outermost) e = mlc_binary(a, MLC_EXPR_FLOORMOD, e, int_like(a, fv, ext[i]));
    outermost = false;
    /* Loops of other int types (an int64 size's loop fused with int32
     * ones) keep their own: the fused var takes the first's. */
    vals[i] = e->dtype == vars[i]->dtype ? e : mlc_cast(a, vars[i]->dtype, e);
  }
  mlc_stmt *body = last->loop.body;
  mlc_expr *fused_ext = int_like(a, fv, total);
  if (sym >= 0) {
    mlc_expr *e = s->rvs.data[rvs[sym]].loop->loop.extent;
    if (e->dtype != fv->dtype) e = mlc_cast(a, fv->dtype, e);
    fused_ext = mlc_simplify_expr(a, mlc_mul(a, e, int_like(a, fv, total / ext[sym])));
  }
  mlc_stmt *fused = mlc_for_new(a, fv, int_like(a, fv, 0), fused_ext, MLC_FOR_SERIAL, body);
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int depth = sched_path_to(s, first, path);
  *sched_child_slot(path[depth - 2], first) = fused;
  sched_subst_bindings(s, body, n, vars, vals);
  return fused;
}

bool mlc_sched_fuse(mlc_sched *s, int n, const mlc_rv *rvs, bool preserve_unit_iters,
                    mlc_rv *out, mlc_error *err) {
  int64_t ext[64];
  int sym = -1; /* the loop of symbolic extent, if any */
  mlc_rv order[64];
  const mlc_rv *given = rvs;
  int m = n >= 2 && n <= 64 ? kept_order_prefix(s, n, rvs) : 0; /* loops fused */
  if (m > 0) {
    if (m > 1 && !fuse_check(s, m, rvs, ext, &sym, err)) return false;
    if (!unfused_rest_check(s, m, n, rvs, err)) return false;
  } else {
    if (n >= 2 && n <= 64 && !symbolic_first(s, n, rvs, order, err)) return false;
    if (n >= 2 && n <= 64) rvs = order;
    if (!fuse_check(s, n, rvs, ext, &sym, err)) return false;
    m = n;
  }
  mlc_stmt *fused = m > 1 ? fuse_loops(s, m, rvs, preserve_unit_iters, ext, sym)
                          : s->rvs.data[rvs[0]].loop;
  mlc_operand in[64];
  for (int i = 0; i < n; i++) in[i] = MLC_OP_RV(m < n ? given[i] : rvs[i]);
  *out = sched_new_rv(s, MLC_RV_LOOP, NULL, fused, 0);
  mlc_attr at = sched_attr_bool("preserve_unit_iters", preserve_unit_iters);
  sched_record(s, MLC_INST_FUSE, n, in, 1, &at, 1, out);
  return true;
}

/* ---- reorder ------------------------------------------------------------------- */

static int given_index(mlc_sched *s, int n, const mlc_rv *rvs, const mlc_stmt *l) {
  for (int i = 0; i < n; i++)
    if (s->rvs.data[rvs[i]].loop == l) return i;
  return -1;
}

/* The chain from the outermost given loop down to the deepest one, each the
 * body of the previous. Returns its length, 0 with err set if the loops do
 * not form one such chain. */
static int reorder_chain(mlc_sched *s, int n, const mlc_rv *rvs, mlc_stmt **chain,
                         mlc_error *err) {
  char d[96], d2[96];
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int top = 0, top_depth = 1 << 30;
  for (int i = 0; i < n; i++) {
    int dep = sched_path_to(s, s->rvs.data[rvs[i]].loop, path);
    if (dep < top_depth) top_depth = dep, top = i;
  }
  int len = 0, found = 0;
  mlc_stmt *cur = s->rvs.data[rvs[top]].loop;
  for (;;) {
    chain[len++] = cur;
    if (given_index(s, n, rvs, cur) >= 0 && ++found == n) return len;
    mlc_stmt *b = cur->loop.body;
    if (b->kind != MLC_STMT_FOR) break;
    cur = b;
  }
  /* Name a given loop that the chain missed, and why. */
  for (int i = 0; i < n; i++) {
    mlc_stmt *l = s->rvs.data[rvs[i]].loop;
    bool in_chain = false;
    for (int k = 0; k < len; k++) in_chain = in_chain || chain[k] == l;
    if (in_chain) continue;
    int dep = sched_path_to(s, l, path);
    bool below = false;
    for (int k = 0; k < dep; k++) below = below || path[k] == chain[0];
    if (!below)
      return mlc_error_set(err, "reorder: %s and %s are not in one loop chain (neither is inside "
                                "the other)",
                           sched_rv_desc(s, rvs[i], d), sched_rv_desc(s, rvs[top], d2)),
             0;
    return mlc_error_set(err,
                         "reorder: %s is under %s but not through single-child loops (%s has "
                         "a body that is not a loop)",
                         sched_rv_desc(s, rvs[i], d), sched_rv_desc(s, rvs[top], d2),
                         chain[len - 1]->loop.var->name),
           0;
  }
  mlc_unreachable();
}

bool mlc_sched_reorder(mlc_sched *s, int n, const mlc_rv *rvs, mlc_error *err) {
  char d[96];
  if (n < 1) return mlc_error_set(err, "reorder: needs at least one loop");
  if (n > 64) return mlc_error_set(err, "reorder: at most 64 loops, got %d", n);
  for (int i = 0; i < n; i++) {
    if (!sched_check_loop(s, "reorder", rvs[i], err)) return false;
    if (given_index(s, i, rvs, s->rvs.data[rvs[i]].loop) >= 0)
      return mlc_error_set(err, "reorder: %s is given twice", sched_rv_desc(s, rvs[i], d));
  }
  mlc_stmt *chain[SCHED_MAX_DEPTH], *order[SCHED_MAX_DEPTH];
  int len = reorder_chain(s, n, rvs, chain, err);
  if (!len) return false;
  /* Given loops fill the given positions in the given order. */
  int next = 0;
  for (int k = 0; k < len; k++)
    order[k] = given_index(s, n, rvs, chain[k]) >= 0 ? s->rvs.data[rvs[next++]].loop : chain[k];
  mlc_stmt *inner = chain[len - 1]->loop.body;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int depth = sched_path_to(s, chain[0], path);
  mlc_stmt **slot = sched_child_slot(path[depth - 2], chain[0]);
  for (int k = 0; k < len; k++) order[k]->loop.body = k + 1 < len ? order[k + 1] : inner;
  *slot = order[0];

  mlc_operand in[64];
  for (int i = 0; i < n; i++) in[i] = MLC_OP_RV(rvs[i]);
  sched_record(s, MLC_INST_REORDER, n, in, 0, NULL, 0, NULL);
  return true;
}
