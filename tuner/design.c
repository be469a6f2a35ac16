/* The design-space interface: a space is an implementation
 * (mlc_tuner_space_impl: the CPU's or the GPU's) and its state. The
 * tuner's entry points (space, postprocessing, mutation) dispatch through
 * the implementation the options name, so search.c and tune.c never ask
 * which kind of target they tune for.
 */
#include "tuner/tuner_internal.h"

struct mlc_tuner_space {
  const mlc_tuner_space_impl *impl;
  void *state;         /* the implementation's */
  mlc_arena *arena;
  mlc_prim_func *func; /* the workload (a private copy the state refers to) */
};

/* o->space, or the CPU space when it is NULL. */
static const mlc_tuner_space_impl *space_impl(const mlc_tuner_opts *o) {
  return o->space ? o->space : &mlc_tuner_space_cpu;
}

/* The design space of each device kind. */
static const mlc_tuner_space_impl *const device_spaces[] = {
    [MLC_DEVICE_CPU] = &mlc_tuner_space_cpu,
    [MLC_DEVICE_CUDA] = &mlc_tuner_space_gpu,
};
_Static_assert(MLC_COUNTOF(device_spaces) == MLC_DEVICE_KIND_COUNT, "a space per device kind");

const mlc_tuner_space_impl *mlc_tuner_space_for_target(const mlc_target *t) {
  return device_spaces[mlc_target_device(t)];
}

mlc_tuner_space *mlc_tuner_space_new(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                     mlc_error *err) {
  mlc_tuner_space *sp = mlc_xmalloc(sizeof *sp);
  sp->impl = space_impl(o);
  sp->arena = mlc_arena_new();
  sp->func = mlc_func_copy(sp->arena, f);
  if (!(sp->state = sp->impl->new(sp->func, o, err))) {
    mlc_tuner_space_free(sp);
    return NULL;
  }
  return sp;
}

void mlc_tuner_space_free(mlc_tuner_space *sp) {
  if (!sp) return;
  if (sp->state) sp->impl->free(sp->state);
  mlc_arena_free(sp->arena);
  mlc_free(sp);
}

int mlc_tuner_space_count(const mlc_tuner_space *sp) { return sp->impl->count(sp->state); }

const mlc_trace *mlc_tuner_space_trace(const mlc_tuner_space *sp, int i) {
  return sp->impl->trace(sp->state, i);
}

const mlc_prim_func *mlc_tuner_space_func(const mlc_tuner_space *sp) { return sp->func; }

mlc_sched *mlc_tuner_space_sample(const mlc_tuner_space *sp, int i, uint64_t seed,
                                  mlc_error *err) {
  return sp->impl->sample(sp->state, i, seed, err);
}

bool mlc_tuner_postproc(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err) {
  return space_impl(o)->postprocess(s, o, err);
}

mlc_sched *mlc_tuner_default_candidate(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                       mlc_error *err) {
  return space_impl(o)->default_sched(f, o, err);
}

bool mlc_tuner_draw_mutation(const mlc_trace *t, int which, mlc_pcg32 *rng,
                             const mlc_tuner_opts *o, tuner_mutation *m, mlc_error *err) {
  return space_impl(o)->draw_mutation(t, which, rng, m, err);
}

mlc_sched *mlc_tuner_apply_mutation(const mlc_prim_func *f, const mlc_trace *t,
                                    const tuner_mutation *m, mlc_pcg32 *rng,
                                    const mlc_tuner_opts *o, mlc_error *err) {
  return space_impl(o)->apply_mutation(f, t, m, rng, o, err);
}

mlc_sched *mlc_tuner_mutate_trace(const mlc_prim_func *f, const mlc_trace *t, int which,
                                  mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err) {
  tuner_mutation m;
  if (!mlc_tuner_draw_mutation(t, which, rng, o, &m, err)) return NULL;
  return mlc_tuner_apply_mutation(f, t, &m, rng, o, err);
}

mlc_sched *mlc_tuner_mutate(const mlc_prim_func *f, const mlc_sched *cand, int which,
                            mlc_pcg32 *rng, const mlc_tuner_opts *o, mlc_error *err) {
  return mlc_tuner_mutate_trace(f, mlc_sched_trace(cand), which, rng, o, err);
}

mlc_sched *tuner_replay_sketch(const mlc_prim_func *f, const mlc_trace *t, uint64_t seed,
                               const mlc_replay_opts *opts, mlc_error *err) {
  mlc_sched *s = mlc_sched_new(f, seed);
  mlc_replay_opts o = opts ? *opts : (mlc_replay_opts){0};
  o.stop_at_postproc = true;
  if (!mlc_sched_replay(s, t, &o, NULL, err)) {
    mlc_sched_free(s);
    return NULL;
  }
  return s;
}

mlc_sched *mlc_tuner_apply_trace(const mlc_prim_func *f, const mlc_trace *t,
                                 const mlc_tuner_opts *o, mlc_error *err) {
  return tuner_carry_trace(f, t, o, false, err);
}

mlc_sched *tuner_carry_trace(const mlc_prim_func *f, const mlc_trace *t, const mlc_tuner_opts *o,
                             bool carry_tiles, mlc_error *err) {
  mlc_replay_opts ro = {.carry_tiles = carry_tiles};
  mlc_sched *s = tuner_replay_sketch(f, t, o->seed, &ro, err);
  if (s && !mlc_tuner_postproc(s, o, err)) {
    mlc_sched_free(s);
    return NULL;
  }
  return s;
}
