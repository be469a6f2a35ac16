/* Replay: apply a trace's instructions to a state, mapping the trace's
 * handles to the state's, with stored, new or replaced decisions. */
#include "schedule/sched_impl.h"

#include <string.h>

typedef struct replay {
  mlc_sched *s;
  const mlc_trace *t;
  mlc_rv *map; /* trace rv -> state rv; -1 until defined */
  mlc_error *err;
} replay;

static bool in_rv(replay *r, const mlc_inst *in, int j, mlc_rv *out) {
  if (j >= in->n_inputs || in->inputs[j].kind != MLC_OPERAND_RV)
    return mlc_error_set(r->err, "input %d must be a handle", j);
  mlc_rv trv = in->inputs[j].rv;
  if (trv < 0 || trv >= r->t->rv_kinds.len || r->map[trv] < 0)
    return mlc_error_set(r->err, "input %d names an undefined handle", j);
  *out = r->map[trv];
  return true;
}

/* An operand in the state's numbering. */
static bool in_operand(replay *r, const mlc_inst *in, int j, mlc_operand *out) {
  *out = in->inputs[j];
  if (out->kind == MLC_OPERAND_RV) return in_rv(r, in, j, &out->rv);
  return true;
}

static bool attr_of(replay *r, const mlc_inst *in, const char *key, mlc_attr_kind k,
                    const mlc_attr **out) {
  const mlc_attr *a = sched_attr_find(in, key);
  if (!a) return mlc_error_set(r->err, "missing attr \"%s\"", key);
  bool ok = a->kind == k || (k == MLC_ATTR_FLOATS && a->kind == MLC_ATTR_INTS) ||
            (k == MLC_ATTR_BOOL && a->kind == MLC_ATTR_INT);
  if (!ok) return mlc_error_set(r->err, "attr \"%s\" has the wrong type", key);
  *out = a;
  return true;
}

static bool map_outputs(replay *r, const mlc_inst *in, int n, const mlc_rv *got) {
  if (n != in->n_outputs)
    return mlc_error_set(r->err, "the trace expects %d outputs, the schedule gave %d",
                         in->n_outputs, n);
  for (int i = 0; i < n; i++) r->map[in->outputs[i]] = got[i];
  return true;
}

static bool rv_list(replay *r, const mlc_inst *in, int from, mlc_rv *out) {
  for (int j = from; j < in->n_inputs; j++)
    if (!in_rv(r, in, j, &out[j - from])) return false;
  return true;
}

typedef struct sample_opts {
  const mlc_decision *want;
  bool carry_tiles;
  bool *resampled;
} sample_opts;

static bool do_sample_tile(replay *r, const mlc_inst *in, sample_opts so) {
  mlc_sched *s = r->s;
  const mlc_attr *n, *maxi;
  mlc_rv loop = -1, out[MLC_SCHED_MAX_TILE];
  if (!in_rv(r, in, 0, &loop) || !attr_of(r, in, "n", MLC_ATTR_INT, &n) ||
      !attr_of(r, in, "max_innermost_factor", MLC_ATTR_INT, &maxi))
    return false;
  if (n->i < 1 || n->i > MLC_SCHED_MAX_TILE) return mlc_error_set(r->err, "n is out of range");
  if (maxi->i > INT32_MAX || maxi->i < INT32_MIN)
    return mlc_error_set(r->err, "max_innermost_factor is out of range");
  return sched_sample_perfect_tile(s, loop, (int)n->i, (int)maxi->i, so.want, so.carry_tiles,
                                   so.resampled, out, r->err) &&
         map_outputs(r, in, (int)n->i, out);
}

static bool do_sample_categorical(replay *r, const mlc_inst *in, sample_opts so) {
  const mlc_attr *c, *p;
  mlc_rv out;
  if (!attr_of(r, in, "candidates", MLC_ATTR_INTS, &c) ||
      !attr_of(r, in, "probs", MLC_ATTR_FLOATS, &p))
    return false;
  if (c->n != p->n) return mlc_error_set(r->err, "candidates and probs differ in length");
  double *probs = MLC_NEW_ARRAY(r->s->arena, double, p->n + 1);
  for (int i = 0; i < p->n; i++) probs[i] = p->kind == MLC_ATTR_INTS ? (double)p->ints[i] : p->floats[i];
  return sched_sample_categorical(r->s, c->n, c->ints, probs, so.want, so.resampled, &out,
                                  r->err) &&
         map_outputs(r, in, 1, &out);
}

static bool do_split(replay *r, const mlc_inst *in) {
  const mlc_attr *pu;
  mlc_rv loop = -1, out[MLC_SCHED_MAX_TILE];
  mlc_operand f[MLC_SCHED_MAX_TILE];
  int n = in->n_inputs - 1;
  if (n < 1 || n > MLC_SCHED_MAX_TILE) return mlc_error_set(r->err, "bad number of factors");
  if (!in_rv(r, in, 0, &loop) || !attr_of(r, in, "preserve_unit_iters", MLC_ATTR_BOOL, &pu))
    return false;
  for (int j = 0; j < n; j++)
    if (!in_operand(r, in, j + 1, &f[j])) return false;
  return mlc_sched_split(r->s, loop, n, f, pu->i != 0, out, r->err) && map_outputs(r, in, n, out);
}

static bool do_fuse(replay *r, const mlc_inst *in) {
  const mlc_attr *pu;
  mlc_rv loops[64], out;
  if (in->n_inputs > 64) return mlc_error_set(r->err, "too many loops");
  if (!rv_list(r, in, 0, loops) || !attr_of(r, in, "preserve_unit_iters", MLC_ATTR_BOOL, &pu))
    return false;
  return mlc_sched_fuse(r->s, in->n_inputs, loops, pu->i != 0, &out, r->err) &&
         map_outputs(r, in, 1, &out);
}

static bool do_annotate(replay *r, const mlc_inst *in, bool set) {
  const mlc_attr *key;
  mlc_rv target = -1;
  mlc_operand v;
  if (!in_rv(r, in, 0, &target) || !attr_of(r, in, "ann_key", MLC_ATTR_STR, &key)) return false;
  if (!set) return mlc_sched_unannotate(r->s, target, key->s, r->err);
  if (in->n_inputs != 2) return mlc_error_set(r->err, "annotate needs a value input");
  return in_operand(r, in, 1, &v) && mlc_sched_annotate(r->s, target, key->s, v, r->err);
}

static bool do_getter(replay *r, const mlc_inst *in) {
  mlc_rv rv = -1, *out = NULL;
  if (!in_rv(r, in, 0, &rv)) return false;
  int n = in->kind == MLC_INST_GET_LOOPS          ? mlc_sched_get_loops(r->s, rv, &out, r->err)
          : in->kind == MLC_INST_GET_CHILD_BLOCKS ? mlc_sched_get_child_blocks(r->s, rv, &out, r->err)
          : in->kind == MLC_INST_GET_PRODUCERS    ? mlc_sched_get_producers(r->s, rv, &out, r->err)
                                                  : mlc_sched_get_consumers(r->s, rv, &out, r->err);
  return n >= 0 && map_outputs(r, in, n, out);
}

static bool do_get_block(replay *r, const mlc_inst *in) {
  const mlc_attr *name, *fn;
  mlc_rv out;
  return attr_of(r, in, "name", MLC_ATTR_STR, &name) &&
         attr_of(r, in, "func_name", MLC_ATTR_STR, &fn) &&
         mlc_sched_get_block(r->s, name->s, fn->s, &out, r->err) && map_outputs(r, in, 1, &out);
}

static bool do_loop_kind(replay *r, const mlc_inst *in) {
  mlc_rv loop = -1;
  const mlc_attr *tag;
  if (!in_rv(r, in, 0, &loop)) return false;
  /* apply_inst sends only these four kinds here */
  if (in->kind == MLC_INST_PARALLEL) return mlc_sched_parallel(r->s, loop, r->err);
  if (in->kind == MLC_INST_VECTORIZE) return mlc_sched_vectorize(r->s, loop, r->err);
  if (in->kind == MLC_INST_UNROLL) return mlc_sched_unroll(r->s, loop, r->err);
  MLC_ASSERT(in->kind == MLC_INST_BIND);
  return attr_of(r, in, "thread_axis", MLC_ATTR_STR, &tag) &&
         mlc_sched_bind(r->s, loop, tag->s, r->err);
}

/* CacheRead / CacheWrite: block[, consumer blocks...] -> block. */
static bool do_cache(replay *r, const mlc_inst *in) {
  bool read = in->kind == MLC_INST_CACHE_READ;
  const mlc_attr *idx = NULL, *scope = NULL;
  mlc_rv block = -1, cons[64], out;
  if (in->n_inputs > 65) return mlc_error_set(r->err, "too many consumer blocks");
  if (!in_rv(r, in, 0, &block) || !rv_list(r, in, 1, cons) ||
      !attr_of(r, in, read ? "read_buffer_index" : "write_buffer_index", MLC_ATTR_INT, &idx) ||
      !attr_of(r, in, "storage_scope", MLC_ATTR_STR, &scope))
    return false;
  if (idx->i < INT32_MIN || idx->i > INT32_MAX) return mlc_error_set(r->err, "buffer index is out of range");
  int n = in->n_inputs - 1;
  bool ok = read ? mlc_sched_cache_read(r->s, block, (int)idx->i, scope->s, n, cons, &out, r->err)
                 : mlc_sched_cache_write(r->s, block, (int)idx->i, scope->s, n, cons, &out, r->err);
  return ok && map_outputs(r, in, 1, &out);
}

static bool int_attrs(replay *r, const mlc_inst *in, int n, const char *const *keys, int *out) {
  for (int i = 0; i < n; i++) {
    const mlc_attr *a = NULL;
    if (!attr_of(r, in, keys[i], MLC_ATTR_INT, &a)) return false;
    if (a->i < INT32_MIN || a->i > INT32_MAX)
      return mlc_error_set(r->err, "attr \"%s\" is out of range", keys[i]);
    out[i] = (int)a->i;
  }
  return true;
}

static bool do_storage(replay *r, const mlc_inst *in) {
  static const char *const align_keys[] = {"buffer_index", "axis", "factor", "offset"};
  const mlc_attr *scope = NULL;
  mlc_rv block = -1;
  int v[4];
  if (!in_rv(r, in, 0, &block)) return false;
  if (in->kind == MLC_INST_STORAGE_ALIGN)
    return int_attrs(r, in, 4, align_keys, v) &&
           mlc_sched_storage_align(r->s, block, v[0], v[1], v[2], v[3], r->err);
  return int_attrs(r, in, 1, align_keys, v) &&
         attr_of(r, in, "storage_scope", MLC_ATTR_STR, &scope) &&
         mlc_sched_set_scope(r->s, block, v[0], scope->s, r->err);
}

/* ComputeAt / ReverseComputeAt: block, loop (maybe a root/inline mark). */
static bool do_compute_at(replay *r, const mlc_inst *in) {
  const mlc_attr *pu, *idx;
  mlc_rv block = -1, loop = -1;
  if (!in_rv(r, in, 0, &block) || !in_rv(r, in, 1, &loop) ||
      !attr_of(r, in, "preserve_unit_loops", MLC_ATTR_BOOL, &pu) ||
      !attr_of(r, in, "index", MLC_ATTR_INT, &idx))
    return false;
  if (idx->i < INT32_MIN || idx->i > INT32_MAX) return mlc_error_set(r->err, "index is out of range");
  if (in->kind == MLC_INST_COMPUTE_AT)
    return mlc_sched_compute_at(r->s, block, loop, pu->i != 0, (int)idx->i, r->err);
  return mlc_sched_reverse_compute_at(r->s, block, loop, pu->i != 0, (int)idx->i, r->err);
}

static bool do_inline(replay *r, const mlc_inst *in) {
  mlc_rv block = -1;
  if (!in_rv(r, in, 0, &block)) return false;
  if (in->kind == MLC_INST_COMPUTE_INLINE) return mlc_sched_compute_inline(r->s, block, r->err);
  return mlc_sched_reverse_compute_inline(r->s, block, r->err);
}

static bool do_sample_location(replay *r, const mlc_inst *in, sample_opts so) {
  mlc_rv block = -1, out;
  return in_rv(r, in, 0, &block) &&
         sched_sample_compute_location(r->s, block, so.want, so.resampled, &out, r->err) &&
         map_outputs(r, in, 1, &out);
}

/* decompose_reduction, rfactor, blockize (reduction.c, blockize.c). */
static bool do_reduction_kind(replay *r, const mlc_inst *in) {
  const mlc_attr *at;
  mlc_rv x = -1, y = -1, out;
  if (!in_rv(r, in, 0, &x)) return false;
  bool ok;
  if (in->kind == MLC_INST_DECOMPOSE_REDUCTION) {
    ok = in_rv(r, in, 1, &y) && mlc_sched_decompose_reduction(r->s, x, y, &out, r->err);
  } else if (in->kind == MLC_INST_RFACTOR) {
    ok = attr_of(r, in, "factor_axis", MLC_ATTR_INT, &at);
    if (ok && (at->i > 64 || at->i < -64)) return mlc_error_set(r->err, "factor_axis is out of range");
    ok = ok && mlc_sched_rfactor(r->s, x, (int)at->i, &out, r->err);
  } else {
    MLC_ASSERT(in->kind == MLC_INST_BLOCKIZE);
    ok = attr_of(r, in, "preserve_unit_iters", MLC_ATTR_BOOL, &at) &&
         mlc_sched_blockize(r->s, x, at->i != 0, &out, r->err);
  }
  return ok && map_outputs(r, in, 1, &out);
}

static bool do_tensorize(replay *r, const mlc_inst *in) {
  const mlc_attr *name;
  mlc_rv x = -1;
  return in_rv(r, in, 0, &x) && attr_of(r, in, "intrin", MLC_ATTR_STR, &name) &&
         mlc_sched_tensorize(r->s, x, name->s, r->err);
}

static bool do_library_call(replay *r, const mlc_inst *in) {
  const mlc_attr *lib;
  mlc_rv x = -1;
  return in_rv(r, in, 0, &x) && attr_of(r, in, "library", MLC_ATTR_STR, &lib) &&
         mlc_sched_library_call(r->s, x, lib->s, r->err);
}

static bool apply_inst(replay *r, const mlc_inst *in, sample_opts so) {
  mlc_rv loops[64];
  switch (in->kind) {
  case MLC_INST_GET_BLOCK: return do_get_block(r, in);
  case MLC_INST_GET_LOOPS:
  case MLC_INST_GET_CHILD_BLOCKS:
  case MLC_INST_GET_PRODUCERS:
  case MLC_INST_GET_CONSUMERS: return do_getter(r, in);
  case MLC_INST_SPLIT: return do_split(r, in);
  case MLC_INST_FUSE: return do_fuse(r, in);
  case MLC_INST_REORDER:
    if (in->n_inputs > 64) return mlc_error_set(r->err, "too many loops");
    return rv_list(r, in, 0, loops) && mlc_sched_reorder(r->s, in->n_inputs, loops, r->err);
  case MLC_INST_PARALLEL:
  case MLC_INST_VECTORIZE:
  case MLC_INST_UNROLL:
  case MLC_INST_BIND: return do_loop_kind(r, in);
  case MLC_INST_ANNOTATE: return do_annotate(r, in, true);
  case MLC_INST_UNANNOTATE: return do_annotate(r, in, false);
  case MLC_INST_SAMPLE_PERFECT_TILE: return do_sample_tile(r, in, so);
  case MLC_INST_SAMPLE_CATEGORICAL: return do_sample_categorical(r, in, so);
  case MLC_INST_ENTER_POSTPROC: mlc_sched_enter_postproc(r->s); return true;
  case MLC_INST_COMPUTE_AT:
  case MLC_INST_REVERSE_COMPUTE_AT: return do_compute_at(r, in);
  case MLC_INST_COMPUTE_INLINE:
  case MLC_INST_REVERSE_COMPUTE_INLINE: return do_inline(r, in);
  case MLC_INST_SAMPLE_COMPUTE_LOCATION: return do_sample_location(r, in, so);
  case MLC_INST_CACHE_READ:
  case MLC_INST_CACHE_WRITE: return do_cache(r, in);
  case MLC_INST_STORAGE_ALIGN:
  case MLC_INST_SET_SCOPE: return do_storage(r, in);
  case MLC_INST_DECOMPOSE_REDUCTION:
  case MLC_INST_RFACTOR:
  case MLC_INST_BLOCKIZE: return do_reduction_kind(r, in);
  case MLC_INST_TENSORIZE: return do_tensorize(r, in);
  case MLC_INST_LIBRARY_CALL: return do_library_call(r, in);
  }
  mlc_unreachable();
}

/* The decision to offer instruction i: an override, the stored one, or
 * none (draw). */
static const mlc_decision *wanted(const mlc_replay_opts *o, const mlc_inst *in, int i) {
  if (o)
    for (int k = 0; k < o->n_overrides; k++)
      if (o->override_insts[k] == i) return &o->override_decisions[k];
  if (o && o->new_decisions) return NULL;
  return in->decision.n ? &in->decision : NULL;
}

static bool replay_insts(mlc_sched *s, const mlc_trace *t, const mlc_replay_opts *opts,
                         mlc_replay_report *report, mlc_error *err) {
  mlc_rv *map = MLC_NEW_ARRAY(s->arena, mlc_rv, t->rv_kinds.len + 1);
  for (int i = 0; i < t->rv_kinds.len; i++) map[i] = -1;
  replay r = {s, t, map, err};
  /* The state's handles and instructions grow to about the trace's: once,
   * instead of doubling there. */
  sched_reserve(s, s->trace.insts.len + t->insts.len, s->rvs.len + t->rv_kinds.len);
  if (report) *report = (mlc_replay_report){0, MLC_NEW_ARRAY(s->arena, int, t->insts.len + 1), -1};
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    if (in->kind == MLC_INST_ENTER_POSTPROC && opts && opts->stop_at_postproc) break;
    bool resampled = false;
    sample_opts so = {wanted(opts, in, i), opts && opts->carry_tiles, &resampled};
    if (!apply_inst(&r, in, so)) {
      if (report) report->failed_at = i;
      return mlc_error_prefix(err, "replay: instruction %d (%s)", i, mlc_inst_kind_name(in->kind));
    }
    /* Primitives refuse to start on a function nested past SCHED_MAX_NEST;
     * one that took it past (compute_at of a deep block under a deep loop)
     * stops a replayed record here, so what replay returns always prints
     * as TVMScript that parses back. */
    int h = sched_func_height(s);
    if (h > SCHED_MAX_NEST)
      return mlc_error_set(err,
                           "replay: instruction %d (%s): the function now nests %d statements "
                           "deep, more than the %d schedules allow",
                           i, mlc_inst_kind_name(in->kind), h, SCHED_MAX_NEST);
    /* A stored or given decision that did not fit was drawn again. */
    if (resampled && report) report->resampled[report->n_resampled++] = i;
  }
  return true;
}

/* Every primitive allocates in the state's arena only (messages included),
 * so one escape point on it turns running out of memory anywhere in the
 * replay into an error; what the primitives took stays owned by the arena.
 * The jump leaves the IR half rewritten, hence "fit only for free". */
bool mlc_sched_replay(mlc_sched *s, const mlc_trace *t, const mlc_replay_opts *opts,
                      mlc_replay_report *report, mlc_error *err) {
  jmp_buf jb, *outer = mlc_arena_oom_jump(s->arena);
  if (setjmp(jb)) {
    mlc_arena_set_oom_jump(s->arena, outer);
    return mlc_error_set(err, "replay: out of memory");
  }
  mlc_arena_set_oom_jump(s->arena, &jb);
  bool ok = replay_insts(s, t, opts, report, err);
  mlc_arena_set_oom_jump(s->arena, outer);
  return ok;
}
