/* Mutators: change one decision (or one bound) of a candidate's sketch and
 * replay it on a fresh copy of the workload. A mutant replays the parent's
 * sketch with one decision overridden, so every other choice is kept; a
 * later decision that no longer fits is resampled by replay. */
#include "tuner/tuner_internal.h"

#include <string.h>

static const char *const MUTATOR_NAMES[MLC_MUTATOR_COUNT] = {
    "tile_size", "unroll", "parallel", "compute_location"};
/* meta-schedule's defaults for llvm targets */
static const double MUTATOR_PROBS[MLC_MUTATOR_COUNT] = {0.9, 0.03, 0.02, 0.05};

const char *mlc_mutator_name(mlc_mutator m) { return MUTATOR_NAMES[m]; }
double mlc_mutator_prob(mlc_mutator m) { return MUTATOR_PROBS[m]; }

/* ---- trace reading ------------------------------------------------------------- */

static int sketch_len(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++)
    if (t->insts.data[i].kind == MLC_INST_ENTER_POSTPROC) return i;
  return t->insts.len;
}

static const mlc_attr *attr(const mlc_inst *in, const char *key) {
  for (int i = 0; i < in->n_attrs; i++)
    if (strcmp(in->attrs[i].key, key) == 0) return &in->attrs[i];
  return NULL;
}

static bool categorical_mutable(const mlc_inst *in) {
  const mlc_attr *c = in->kind == MLC_INST_SAMPLE_CATEGORICAL ? attr(in, "candidates") : NULL;
  return c && c->n >= 2 && in->decision.n == 1;
}

/* Whether instruction i's output is a factor of a later split: a tile
 * size (the vector tile of multi-level tiling), not an unroll step. */
static bool feeds_split(const mlc_trace *t, int i) {
  const mlc_inst *in = &t->insts.data[i];
  if (in->n_outputs != 1) return false;
  for (int j = i + 1; j < t->insts.len; j++) {
    const mlc_inst *x = &t->insts.data[j];
    if (x->kind != MLC_INST_SPLIT) continue;
    for (int k = 0; k < x->n_inputs; k++)
      if (x->inputs[k].kind == MLC_OPERAND_RV && x->inputs[k].rv == in->outputs[0]) return true;
  }
  return false;
}

static bool tile_mutable(const mlc_trace *t, int i) {
  const mlc_inst *in = &t->insts.data[i];
  if (categorical_mutable(in)) return feeds_split(t, i);
  if (in->kind != MLC_INST_SAMPLE_PERFECT_TILE || in->decision.n < 2) return false;
  int big = 0;
  for (int k = 0; k < in->decision.n; k++) big += in->decision.v[k] > 1;
  return big >= 1;
}

static bool unroll_mutable(const mlc_trace *t, int i) {
  return categorical_mutable(&t->insts.data[i]) && !feeds_split(t, i);
}

static bool parallel_mutable(const mlc_trace *t, int i) {
  const mlc_inst *in = &t->insts.data[i];
  const mlc_attr *k = in->kind == MLC_INST_ANNOTATE ? attr(in, "ann_key") : NULL;
  return k && k->kind == MLC_ATTR_STR && strcmp(k->s, TUNER_ANN_PARALLEL) == 0 &&
         in->n_inputs == 2 && in->inputs[1].kind == MLC_OPERAND_INT;
}

static bool location_mutable(const mlc_trace *t, int i) {
  const mlc_inst *in = &t->insts.data[i];
  return in->kind == MLC_INST_SAMPLE_COMPUTE_LOCATION && in->decision.n == 1;
}

typedef bool (*inst_pred)(const mlc_trace *t, int i);
static const inst_pred MUTABLE[MLC_MUTATOR_COUNT] = {tile_mutable, unroll_mutable,
                                                     parallel_mutable, location_mutable};

/* Indices of sketch instructions a mutator can change. */
static int sites(const mlc_trace *t, mlc_mutator m, int *out, int max) {
  int n = 0, len = sketch_len(t);
  for (int i = 0; i < len && n < max; i++)
    if (MUTABLE[m](t, i)) out[n++] = i;
  return n;
}

/* ---- new decisions ---------------------------------------------------------------- */

static int64_t random_divisor(mlc_pcg32 *rng, int64_t x) {
  int64_t divs[64];
  int n = 0;
  for (int64_t d = 2; d <= x && n < 64; d++)
    if (x % d == 0) divs[n++] = d;
  return n ? divs[mlc_pcg32_bounded(rng, (uint32_t)n)] : 1;
}

/* Move a divisor of one level's factor to another level (meta-schedule's
 * MutateTileSize); the innermost level keeps its bound. */
static bool mutate_tile(const mlc_inst *in, mlc_pcg32 *rng, mlc_decision *out) {
  const mlc_attr *mi = attr(in, "max_innermost_factor");
  int64_t maxi = mi ? mi->i : 0;
  int n = in->decision.n;
  for (int attempt = 0; attempt < 16; attempt++) {
    *out = in->decision;
    int x = (int)mlc_pcg32_bounded(rng, (uint32_t)n);
    if (out->v[x] < 2) continue;
    int y = (int)mlc_pcg32_bounded(rng, (uint32_t)(n - 1));
    if (y >= x) y++;
    int64_t d = random_divisor(rng, out->v[x]);
    out->v[x] /= d;
    out->v[y] *= d;
    if (maxi > 0 && out->v[n - 1] > maxi) continue;
    return true;
  }
  return false;
}

static bool mutate_categorical(const mlc_inst *in, mlc_pcg32 *rng, mlc_decision *out) {
  int n = attr(in, "candidates")->n;
  *out = in->decision;
  int64_t k = mlc_pcg32_bounded(rng, (uint32_t)(n - 1));
  out->v[0] = k >= in->decision.v[0] ? k + 1 : k;
  return true;
}

/* ---- applying a mutation ------------------------------------------------------------ */

static mlc_sched *finish(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err) {
  if (s && !mlc_tuner_postproc(s, o, err)) {
    mlc_sched_free(s);
    return NULL;
  }
  return s;
}

static mlc_sched *with_decision(const mlc_prim_func *f, const mlc_trace *t, int idx,
                                const mlc_decision *d, uint64_t seed, const mlc_tuner_opts *o,
                                mlc_error *err) {
  mlc_replay_opts ro = {.n_overrides = 1, .override_insts = &idx, .override_decisions = d};
  return finish(tuner_replay_sketch(f, t, seed, &ro, err), o, err);
}

/* Another parallel bound: one that fuses a different number of outer
 * loops in some nest of the sketch's IR. */
static mlc_sched *mutate_parallel(const mlc_prim_func *f, const mlc_trace *t, int idx,
                                  mlc_pcg32 *rng, uint64_t seed, const mlc_tuner_opts *o,
                                  mlc_error *err) {
  mlc_sched *sk = tuner_replay_sketch(f, t, seed, NULL, err);
  if (!sk) return NULL;
  int64_t choices[64], cur = t->insts.data[idx].inputs[1].i;
  int64_t preferred = (int64_t)o->num_cores * o->max_jobs_per_core;
  int m = tuner_parallel_choices(mlc_sched_func(sk), cur, preferred, choices, 64);
  mlc_sched_free(sk);
  if (m == 0) {
    mlc_error_set(err, "mutate parallel: no other parallel extent to choose");
    return NULL;
  }
  mlc_arena *a = mlc_arena_new();
  mlc_trace *c = mlc_trace_copy(a, t);
  c->insts.data[idx].inputs[1].i = choices[mlc_pcg32_bounded(rng, (uint32_t)m)];
  mlc_sched *s = finish(tuner_replay_sketch(f, c, seed, NULL, err), o, err);
  mlc_arena_free(a);
  return s;
}

/* The block name a handle of t was defined by GetBlock with, or NULL. */
static const char *block_name_of(const mlc_trace *t, mlc_rv rv) {
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    for (int k = 0; k < in->n_outputs; k++)
      if (in->outputs[k] == rv) {
        const mlc_attr *nm = in->kind == MLC_INST_GET_BLOCK ? attr(in, "name") : NULL;
        return nm ? nm->s : NULL;
      }
  }
  return NULL;
}

/* Another compute location (meta-schedule's MutateComputeLocation): the
 * candidates are the first consumer's loops (by index), the root (-1) and
 * inline (-2), counted on the IR as it was when the location was drawn; a
 * candidate compute_at refuses there is replaced by replay with the
 * nearest one before it. */
static mlc_sched *mutate_location(const mlc_prim_func *f, const mlc_trace *t, int idx,
                                  mlc_pcg32 *rng, uint64_t seed, const mlc_tuner_opts *o,
                                  mlc_error *err) {
  const mlc_inst *in = &t->insts.data[idx];
  const char *name = in->n_inputs == 1 && in->inputs[0].kind == MLC_OPERAND_RV
                         ? block_name_of(t, in->inputs[0].rv)
                         : NULL;
  if (!name) {
    mlc_error_set(err, "mutate compute_location: instruction %d names no block", idx);
    return NULL;
  }
  mlc_arena *a = mlc_arena_new();
  mlc_trace *prefix = mlc_trace_copy(a, t);
  prefix->insts.len = idx; /* the state just before the draw */
  mlc_sched *pre = tuner_replay_sketch(f, prefix, seed, NULL, err);
  mlc_arena_free(a);
  if (!pre) return NULL;
  const mlc_block *b = tuner_find_block(mlc_sched_func(pre), name);
  int n_loops = b ? tuner_first_consumer_loops(mlc_sched_func(pre), b) : -1;
  mlc_sched_free(pre);
  int64_t cur = in->decision.v[0], n_choices = n_loops + 2;
  if (n_loops < 0 || n_choices < 2) {
    mlc_error_set(err, "mutate compute_location: block \"%s\" has no other location", name);
    return NULL;
  }
  mlc_decision d = in->decision;
  d.v[0] = (int64_t)mlc_pcg32_bounded(rng, (uint32_t)(n_choices - 1)) - 2;
  if (d.v[0] >= cur) d.v[0]++;
  return with_decision(f, t, idx, &d, seed, o, err);
}

/* Pick a mutator among those with a site in t, by their probabilities. */
static int pick_mutator(const mlc_trace *t, int which, mlc_pcg32 *rng) {
  double w[MLC_MUTATOR_COUNT], sum = 0;
  int tmp[1];
  for (int m = 0; m < MLC_MUTATOR_COUNT; m++) {
    bool allowed = which < 0 || which == m;
    w[m] = allowed && sites(t, (mlc_mutator)m, tmp, 1) > 0 ? MUTATOR_PROBS[m] : 0;
    sum += w[m];
  }
  if (sum <= 0) return -1;
  double u = mlc_pcg32_double(rng) * sum;
  for (int m = 0; m < MLC_MUTATOR_COUNT; m++) {
    if (u < w[m]) return m;
    u -= w[m];
  }
  for (int m = MLC_MUTATOR_COUNT - 1; m >= 0; m--)
    if (w[m] > 0) return m;
  mlc_unreachable();
}

bool tuner_mutation_draw(const mlc_trace *t, int which, mlc_pcg32 *rng, tuner_mutation *m,
                         mlc_error *err) {
  int k = pick_mutator(t, which, rng);
  if (k < 0)
    return mlc_error_set(err, "mutate: no %s decision to change in this trace",
                         which >= 0 ? MUTATOR_NAMES[which] : "mutable");
  int idx[512];
  int n = sites(t, (mlc_mutator)k, idx, 512);
  *m = (tuner_mutation){.mutator = k, .inst = idx[mlc_pcg32_bounded(rng, (uint32_t)n)]};
  const mlc_inst *in = &t->insts.data[m->inst];
  m->seed = ((uint64_t)mlc_pcg32_next(rng) << 32) | mlc_pcg32_next(rng);
  switch ((mlc_mutator)k) {
  case MLC_MUTATE_TILE_SIZE:
    m->decided = in->kind == MLC_INST_SAMPLE_CATEGORICAL /* a vector tile: another width */
                     ? mutate_categorical(in, rng, &m->decision)
                     : mutate_tile(in, rng, &m->decision);
    if (!m->decided)
      return mlc_error_set(err, "mutate tile_size: no factor of instruction %d can move", m->inst);
    return true;
  case MLC_MUTATE_UNROLL: return m->decided = mutate_categorical(in, rng, &m->decision);
  case MLC_MUTATE_PARALLEL:
  case MLC_MUTATE_COMPUTE_LOCATION: return true; /* drawn on the sketch's IR */
  }
  mlc_unreachable();
}

mlc_sched *tuner_mutation_apply(const mlc_prim_func *f, const mlc_trace *t, const tuner_mutation *m,
                                mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err) {
  if (m->decided) return with_decision(f, t, m->inst, &m->decision, m->seed, o, err);
  if (m->mutator == MLC_MUTATE_PARALLEL) return mutate_parallel(f, t, m->inst, rng, m->seed, o, err);
  MLC_ASSERT(m->mutator == MLC_MUTATE_COMPUTE_LOCATION);
  return mutate_location(f, t, m->inst, rng, m->seed, o, err);
}

/* Steps of a 64-bit hash over the fields that make a trace's program. */
static uint64_t mix(uint64_t h, uint64_t v) { return mlc_hash_combine(h, v); }
static uint64_t mix_str(uint64_t h, const char *x) { return mlc_hash_str(x, h); }

static uint64_t mix_double(uint64_t h, double f) {
  uint64_t bits;
  memcpy(&bits, &f, sizeof bits);
  return mix(h, bits);
}

static uint64_t mix_ann(uint64_t h, const mlc_ann *a) {
  h = mix_str(mix(h, (uint64_t)a->kind), a->key ? a->key : "");
  switch (a->kind) {
  case MLC_ANN_INT:
  case MLC_ANN_BOOL: return mix(h, (uint64_t)a->i);
  case MLC_ANN_FLOAT: return mix_double(h, a->f);
  case MLC_ANN_STRING: return mix_str(h, a->s);
  case MLC_ANN_LIST:
  case MLC_ANN_DICT:
    for (int k = 0; k < a->n; k++) h = mix_ann(h, &a->items[k]);
    return mix(h, (uint64_t)a->n);
  }
  mlc_unreachable();
}

/* An attribute's value (its key comes with the instruction's kind). */
static uint64_t mix_attr(uint64_t h, const mlc_attr *at) {
  h = mix(h, (uint64_t)at->kind);
  switch (at->kind) {
  case MLC_ATTR_INT:
  case MLC_ATTR_BOOL: return mix(h, (uint64_t)at->i);
  case MLC_ATTR_FLOAT: return mix_double(h, at->f);
  case MLC_ATTR_STR: return mix_str(h, at->s);
  case MLC_ATTR_INTS:
    for (int k = 0; k < at->n; k++) h = mix(h, (uint64_t)at->ints[k]);
    return mix(h, (uint64_t)at->n);
  case MLC_ATTR_FLOATS:
    for (int k = 0; k < at->n; k++) h = mix_double(h, at->floats[k]);
    return mix(h, (uint64_t)at->n);
  }
  mlc_unreachable();
}

static uint64_t mix_operand(uint64_t h, const mlc_operand *x) {
  h = mix(h, (uint64_t)x->kind);
  switch (x->kind) {
  case MLC_OPERAND_NONE: return h;
  case MLC_OPERAND_RV: return mix(h, (uint64_t)x->rv);
  case MLC_OPERAND_INT: return mix(h, (uint64_t)x->i);
  case MLC_OPERAND_FLOAT: return mix_double(h, x->f);
  case MLC_OPERAND_STR: return mix_str(h, x->s);
  case MLC_OPERAND_ANN: return mix_ann(h, x->ann);
  }
  mlc_unreachable();
}

uint64_t tuner_mutation_key(const mlc_trace *t, const tuner_mutation *m) {
  MLC_ASSERT(m->decided);
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0, len = sketch_len(t); i < len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    const mlc_decision *d = i == m->inst ? &m->decision : &in->decision;
    h = mix(mix(mix(h, (uint64_t)in->kind), (uint64_t)in->n_inputs), (uint64_t)d->n);
    for (int k = 0; k < d->n; k++) h = mix(h, (uint64_t)d->v[k]);
    for (int k = 0; k < in->n_inputs; k++) h = mix_operand(h, &in->inputs[k]);
    for (int k = 0; k < in->n_attrs; k++) h = mix_attr(h, &in->attrs[k]);
    h = mix(h, (uint64_t)in->n_outputs);
    for (int k = 0; k < in->n_outputs; k++) h = mix(h, (uint64_t)in->outputs[k]);
  }
  return h;
}
