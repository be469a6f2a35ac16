/* Evolutionary search (meta-schedule's EvolutionarySearch): per round, a
 * population of the best measured candidates and fresh design-space
 * samples evolves for a few generations of mutation, parents picked in
 * proportion to the cost model's scores; the batch is the best predicted
 * candidates never measured plus an epsilon-greedy share of random
 * samples. Everything random comes from the search's own PCG32. */
#include "tuner/tuner_internal.h"
#include "targets/targets.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of trace hashes -------------------------------------------------- */

typedef struct hash_set {
  uint64_t *keys;
  uint8_t *used;
  size_t cap, n;
} hash_set;

static size_t slot_of(const hash_set *h, uint64_t k) {
  size_t i = (size_t)(k * 0x9E3779B97F4A7C15ull) & (h->cap - 1);
  while (h->used[i] && h->keys[i] != k) i = (i + 1) & (h->cap - 1);
  return i;
}

static bool hs_has(const hash_set *h, uint64_t k) {
  return h->cap && h->used[slot_of(h, k)];
}

static void hs_add(hash_set *h, uint64_t k);

static void hs_grow(hash_set *h) {
  hash_set g = {mlc_xmalloc(sizeof(uint64_t) * (h->cap ? h->cap * 2 : 64)),
                mlc_xmalloc(h->cap ? h->cap * 2 : 64), h->cap ? h->cap * 2 : 64, 0};
  for (size_t i = 0; i < h->cap; i++)
    if (h->used[i]) hs_add(&g, h->keys[i]);
  mlc_free(h->keys);
  mlc_free(h->used);
  *h = g;
}

static void hs_add(hash_set *h, uint64_t k) {
  if ((h->n + 1) * 2 > h->cap) hs_grow(h);
  size_t i = slot_of(h, k);
  if (h->used[i]) return;
  h->used[i] = 1;
  h->keys[i] = k;
  h->n++;
}

static void hs_free(hash_set *h) {
  mlc_free(h->keys);
  mlc_free(h->used);
  memset(h, 0, sizeof *h);
}

/* ---- the search state ------------------------------------------------------------ */

/* A candidate of the round. A population keeps only traces: a replayed
 * state is five to eight times the schedule (what its primitives'
 * analyses allocated), and copying thousands of them a round to compact
 * them was a fifth of the search. A state lives from its replay until it
 * is scored; the best set holds compact copies of the few worth keeping
 * and the batch replays the others it takes. */
typedef struct item {
  mlc_sched *s;       /* owned; NULL once scored (population) */
  const mlc_trace *t; /* the round's copy, or (best set, proposed) the state's */
  uint64_t hash;      /* mlc_trace_hash(t), once hashed (most are never needed) */
  bool hashed;
  bool keyed;  /* a decided mutant, named by key (tuner_mutation_key) */
  bool reused; /* a mutant the round made before: its score is the first's */
  int mutant;  /* its entry in the round's mutants, or -1 */
  uint64_t key;
  double score;
} item;

typedef MLC_VEC(item) item_list;

/* A decided mutant the round replayed (tuner_mutation_key): one made
 * again, from the same or another parent, is not replayed. In a small
 * design space most children of a generation are such repeats. */
typedef struct mutant {
  uint64_t key;
  const mlc_trace *t;
  double score; /* once its first item is scored */
} mutant;

/* What a round's generations share: the arenas of their traces (one for
 * each thread that copies them; a kept parent's child shares its trace)
 * and the mutants made, as a hash table of indices into `made`. Mutants
 * enter the table between chunks of children, in order, and are looked up
 * while a chunk is made: a child finds the mutants of the chunks before
 * its own, whichever thread makes it. */
typedef struct round_state {
  int n_arenas;
  mlc_arena **arenas;
  MLC_VEC(mutant) made;
  int *slots; /* index + 1 into made, 0 empty; cap a power of 2 */
  int cap;
} round_state;

/* A generation's items. */
typedef struct population {
  item_list items;
  round_state *r;
} population;

/* A measured candidate that may seed populations. */
typedef struct seed_item {
  mlc_sched *s;
  double sec;
} seed_item;

struct mlc_tuner_search {
  mlc_tuner_opts o;
  mlc_tuner_space *space;
  mlc_pcg32 rng;
  const mlc_tuner_model *model; /* NULL: random scores */
  hash_set measured;
  MLC_VEC(seed_item) seeds; /* fastest first */
  MLC_VEC(mlc_tuner_cand) batch;
  item_list proposed; /* the caller's candidates, first in the next batch */
  mlc_tuner_stats stats;
  char msg[256];
};

static uint64_t next64(mlc_pcg32 *r) {
  uint64_t hi = mlc_pcg32_next(r);
  return (hi << 32) | mlc_pcg32_next(r);
}

static item state_item(mlc_sched *s) {
  return (item){.s = s, .t = mlc_sched_trace(s), .mutant = -1};
}

static uint64_t item_hash(item *it) {
  if (!it->hashed) it->hash = mlc_trace_hash(it->t), it->hashed = true;
  return it->hash;
}

/* A trace replayed on the search's function and postprocessed (NULL: it
 * no longer replays, with the reason in err). */
static mlc_sched *replayed(const mlc_tuner_search *s, const mlc_trace *t, mlc_error *err) {
  return mlc_tuner_apply_trace(mlc_tuner_space_func(s->space), t, &s->o, err);
}

/* Its state, replayed from its trace if it has none. */
static bool materialize(const mlc_tuner_search *s, item *it, mlc_error *err) {
  if (!it->s) it->s = replayed(s, it->t, err);
  if (it->s) it->t = mlc_sched_trace(it->s);
  return it->s != NULL;
}

static void free_items(item_list *l) {
  for (int i = 0; i < l->len; i++) mlc_sched_free(l->data[i].s);
  MLC_VEC_FREE(*l);
}

static round_state round_new(void) {
  int n = omp_get_max_threads();
  mlc_arena **arenas = mlc_xmalloc(sizeof(mlc_arena *) * (size_t)n);
  for (int i = 0; i < n; i++) arenas[i] = NULL;
  return (round_state){.n_arenas = n, .arenas = arenas};
}

static void round_free(round_state *r) {
  for (int i = 0; i < r->n_arenas; i++) mlc_arena_free(r->arenas[i]);
  mlc_free(r->arenas);
  MLC_VEC_FREE(r->made);
  mlc_free(r->slots);
  *r = (round_state){0};
}

static population population_new(round_state *r) { return (population){{0}, r}; }

static void population_free(population *p) {
  free_items(&p->items);
  *p = (population){{0}, NULL};
}

/* A copy of t that lasts the round, by the calling thread (each has its
 * own arena). */
static const mlc_trace *keep_trace(round_state *r, const mlc_trace *t) {
  int k = omp_get_thread_num();
  MLC_ASSERT(k < r->n_arenas);
  if (!r->arenas[k]) r->arenas[k] = mlc_arena_new();
  return mlc_trace_copy(r->arenas[k], t);
}

/* A replayed state as a population's item: its trace copied already, so
 * dropping the state once scored is all that is left. */
static item population_item(population *p, mlc_sched *s) {
  return (item){.s = s, .t = keep_trace(p->r, mlc_sched_trace(s)), .mutant = -1};
}

/* The slot of key in r's table: its own, or the empty one it would take. */
static int mutant_slot(const round_state *r, uint64_t key) {
  int i = (int)(key & (uint64_t)(r->cap - 1));
  while (r->slots[i] && r->made.data[r->slots[i] - 1].key != key) i = (i + 1) & (r->cap - 1);
  return i;
}

/* The mutant of key made this round, or -1. */
static int mutant_find(const round_state *r, uint64_t key) {
  return r->cap ? r->slots[mutant_slot(r, key)] - 1 : -1;
}

/* Record a mutant replayed into t; its index (the first one's where a
 * chunk made it twice). The table stays at most half full. */
static int mutant_add(round_state *r, uint64_t key, const mlc_trace *t) {
  if (2 * (r->made.len + 1) > r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    mlc_free(r->slots);
    r->slots = mlc_xmalloc(sizeof(int) * (size_t)r->cap);
    for (int i = 0; i < r->made.len; i++) r->slots[mutant_slot(r, r->made.data[i].key)] = i + 1;
  }
  int slot = mutant_slot(r, key);
  if (!r->slots[slot]) {
    MLC_VEC_PUSH(r->made, ((mutant){key, t, 0}));
    r->slots[slot] = r->made.len;
  }
  return r->slots[slot] - 1;
}

static void free_batch(mlc_tuner_search *s) {
  for (int i = 0; i < s->batch.len; i++) mlc_sched_free(s->batch.data[i].sched);
  s->batch.len = 0;
}

mlc_tuner_cand *mlc_tuner_search_detach_batch(mlc_tuner_search *s, int *n) {
  *n = s->batch.len;
  mlc_tuner_cand *out = mlc_xmalloc(sizeof *out * (size_t)(s->batch.len + 1));
  if (s->batch.len) memcpy(out, s->batch.data, sizeof *out * (size_t)s->batch.len);
  s->batch.len = 0;
  return out;
}

mlc_tuner_search *mlc_tuner_search_new(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                       mlc_error *err) {
  /* The search scores thousands of candidates a round and hands out a
   * few: only those are verified (take). */
  mlc_tuner_opts so = *o;
  so.verify_later = true;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &so, err);
  if (!sp) return NULL;
  mlc_tuner_search *s = mlc_xmalloc(sizeof *s);
  s->o = so;
  if (s->o.population < 1) s->o.population = 1;
  if (s->o.max_fail_count < 1) s->o.max_fail_count = 1;
  s->space = sp;
  mlc_pcg32_seed(&s->rng, o->seed, 0x7e57);
  return s;
}

void mlc_tuner_search_free(mlc_tuner_search *s) {
  if (!s) return;
  free_batch(s);
  MLC_VEC_FREE(s->batch);
  for (int i = 0; i < s->seeds.len; i++) mlc_sched_free(s->seeds.data[i].s);
  MLC_VEC_FREE(s->seeds);
  free_items(&s->proposed);
  hs_free(&s->measured);
  mlc_tuner_space_free(s->space);
  mlc_free(s);
}

void mlc_tuner_search_set_model(mlc_tuner_search *s, const mlc_tuner_model *model) {
  s->model = model;
}

const mlc_tuner_space *mlc_tuner_search_space(const mlc_tuner_search *s) { return s->space; }
const char *mlc_tuner_search_message(const mlc_tuner_search *s) { return s->msg; }
void mlc_tuner_search_stats_get(const mlc_tuner_search *s, mlc_tuner_stats *out) {
  *out = s->stats;
}

void mlc_tuner_search_add_measured_hash(mlc_tuner_search *s, uint64_t hash) {
  hs_add(&s->measured, hash);
}

/* Keep the fastest measured candidates, as many as a population seeds. */
static void add_seed(mlc_tuner_search *s, mlc_sched *c, double sec) {
  int cap = (int)(s->o.population * s->o.init_measured_ratio);
  if (cap < 1) cap = 1;
  int pos = s->seeds.len;
  while (pos > 0 && s->seeds.data[pos - 1].sec > sec) pos--;
  if (pos >= cap) {
    mlc_sched_free(c);
    return;
  }
  MLC_VEC_PUSH(s->seeds, ((seed_item){NULL, 0}));
  memmove(&s->seeds.data[pos + 1], &s->seeds.data[pos],
          sizeof(seed_item) * (size_t)(s->seeds.len - 1 - pos));
  s->seeds.data[pos] = (seed_item){c, sec};
  while (s->seeds.len > cap) mlc_sched_free(s->seeds.data[--s->seeds.len].s);
}

void mlc_tuner_search_commit(mlc_tuner_search *s, const mlc_sched *cand, double mean_sec) {
  hs_add(&s->measured, mlc_trace_hash(mlc_sched_trace(cand)));
  if (mean_sec > 0 && isfinite(mean_sec)) add_seed(s, mlc_sched_copy(cand), mean_sec);
}

void mlc_tuner_search_add_measured(mlc_tuner_search *s, const mlc_trace *t, double mean_sec) {
  hs_add(&s->measured, mlc_trace_hash(t));
  mlc_error e;
  mlc_sched *c = mlc_tuner_apply_trace(mlc_tuner_space_func(s->space), t, &s->o, &e);
  if (!c) return; /* a record of an older space: it still deduplicates */
  mlc_tuner_search_commit(s, c, mean_sec);
  mlc_sched_free(c);
}

/* ---- one round ------------------------------------------------------------------------ */

/* The best unmeasured candidates seen this round, at most cap, each once. */
typedef struct best_set {
  item_list items;
  hash_set in;
  int cap;
} best_set;

/* Offer a scored candidate: a copy of its state enters if there is room
 * or it beats the worst (hashed only then). */
static void best_offer(mlc_tuner_search *s, best_set *b, item *it) {
  int worst = -1;
  if (b->items.len >= b->cap) {
    worst = 0;
    for (int i = 1; i < b->items.len; i++)
      if (b->items.data[i].score < b->items.data[worst].score) worst = i;
    if (b->items.data[worst].score >= it->score) return;
  }
  uint64_t h = item_hash(it);
  if (hs_has(&s->measured, h) || hs_has(&b->in, h)) return;
  mlc_error e;
  mlc_sched *c = it->s ? mlc_sched_copy(it->s) /* compact */ : replayed(s, it->t, &e);
  if (!c) return;
  item k = {.s = c, .t = mlc_sched_trace(c), .hash = h, .hashed = true, .mutant = -1,
            .score = it->score};
  /* a replaced one stays in `in`: it was worse, no need to offer again */
  hs_add(&b->in, h);
  if (worst < 0) {
    MLC_VEC_PUSH(b->items, k);
    return;
  }
  mlc_sched_free(b->items.data[worst].s);
  b->items.data[worst] = k;
}

/* Score items [from, len) of p (a kept parent's copy keeps its score under
 * a model: the same program), offer each to the best set and drop their
 * states. */
static bool absorb(mlc_tuner_search *s, population *p, int from, best_set *best, mlc_error *err) {
  item *it = p->items.data + from;
  int n = p->items.len - from;
  if (n <= 0) return true;
  s->stats.predicted += n;
  if (!s->model) {
    for (int i = 0; i < n; i++) it[i].score = mlc_pcg32_double(&s->rng);
  } else {
    round_state *r = p->r;
    const mlc_prim_func **funcs = mlc_xmalloc(sizeof(*funcs) * (size_t)n);
    double *sc = mlc_xmalloc(sizeof(double) * (size_t)n);
    int *at = mlc_xmalloc(sizeof(int) * (size_t)n), m = 0;
    for (int i = 0; i < n; i++)
      if (it[i].s) at[m] = i, funcs[m++] = mlc_sched_func(it[i].s);
    bool ok = m == 0 || s->model->predict(s->model->ctx, m, funcs, sc, err);
    /* a program the model could not read (no features) ranks last */
    double lo = 0;
    bool any = false;
    for (int i = 0; ok && i < m; i++)
      if (isfinite(sc[i]) && (!any || sc[i] < lo)) lo = sc[i], any = true;
    for (int i = 0; ok && i < m; i++) it[at[i]].score = isfinite(sc[i]) ? sc[i] : lo - 1;
    mlc_free(funcs);
    mlc_free(sc);
    mlc_free(at);
    if (!ok) return mlc_error_prefix(err, "search: cost model");
    /* a repeated mutant is the same program: the first one's score (made
     * before it, so scored in this call or an earlier one) */
    for (int i = 0; i < n; i++)
      if (it[i].s && it[i].mutant >= 0) r->made.data[it[i].mutant].score = it[i].score;
    for (int i = 0; i < n; i++)
      if (it[i].reused) it[i].score = r->made.data[it[i].mutant].score;
  }
  for (int i = 0; i < n; i++) {
    best_offer(s, best, &it[i]);
    mlc_sched_free(it[i].s);
    it[i].s = NULL;
  }
  return true;
}

/* States replayed at once, then scored: bounds the memory of unscored
 * (uncompacted) states. */
enum { CHUNK = 64 };

/* What makes item k of a batch (a fresh sample, a child); an item with no
 * trace is none (a rejected sample). Runs on any thread of the team. */
typedef item (*make_fn)(mlc_tuner_search *s, population *pop, void *ctx, int k);

/* Items 0..n-1 made by `make` as OpenMP tasks into pop, scored chunk by
 * chunk: this thread scores the last chunk while the team makes the next
 * (scoring, the best set's copies and hashes are one thread's work, a
 * tenth of a round, and overlapped cost nothing). The items keep their
 * order, so the result does not depend on the threads. Returns the items
 * that were none through *none. */
static bool produce(mlc_tuner_search *s, population *pop, int n, make_fn make, void *ctx,
                    best_set *best, int *none, mlc_error *err) {
  item *made = mlc_xmalloc(sizeof(item) * (size_t)(n + 1));
  int n_chunks = (n + CHUNK - 1) / CHUNK, scored_from = -1, missing = 0;
  bool ok = true;
#pragma omp parallel
#pragma omp single
  for (int c = 0; c <= n_chunks; c++) {
    int first = c * CHUNK, end = first + CHUNK < n ? first + CHUNK : n;
    for (int k = first; c < n_chunks && k < end; k++) {
#pragma omp task firstprivate(k)
      made[k] = make(s, pop, ctx, k);
    }
    if (scored_from >= 0 && ok) ok = absorb(s, pop, scored_from, best, err);
#pragma omp taskwait
    scored_from = pop->items.len;
    for (int k = first; c < n_chunks && k < end; k++) {
      if (!made[k].t) {
        missing++;
        continue;
      }
      if (made[k].keyed && made[k].s) made[k].mutant = mutant_add(pop->r, made[k].key, made[k].t);
      MLC_VEC_PUSH(pop->items, made[k]);
    }
  }
  mlc_free(made);
  *none = missing;
  return ok;
}

/* Fresh samples: each slot's space and seed drawn first, in order. */
typedef struct sample_ctx {
  const int *space;
  const uint64_t *seed;
} sample_ctx;

static item make_sample(mlc_tuner_search *s, population *pop, void *ctx, int k) {
  const sample_ctx *c = ctx;
  mlc_error e;
  mlc_sched *st = mlc_tuner_space_sample(s->space, c->space[k], c->seed[k], &e);
  return st ? population_item(pop, st) : (item){0};
}

/* Measured seeds, then fresh samples until the population is full or the
 * space keeps refusing (max_fail_count draws per slot), scored as they
 * come. */
static bool init_population(mlc_tuner_search *s, population *pop, best_set *best,
                            mlc_error *err) {
  int want = s->o.population;
  int n_seed = (int)(want * s->o.init_measured_ratio);
  for (int i = 0; i < s->seeds.len && i < n_seed; i++)
    MLC_VEC_PUSH(pop->items, population_item(pop, mlc_sched_copy(s->seeds.data[i].s)));
  if (!absorb(s, pop, 0, best, err)) return false;
  int n_space = mlc_tuner_space_count(s->space);
  int *space = mlc_xmalloc(sizeof(int) * (size_t)want);
  uint64_t *seed = mlc_xmalloc(sizeof(uint64_t) * (size_t)want);
  sample_ctx sc = {space, seed};
  long budget = (long)want * s->o.max_fail_count, tries = 0;
  bool ok = true;
  while (ok && pop->items.len < want && tries < budget) {
    int n = want - pop->items.len, rejected;
    for (int i = 0; i < n; i++) {
      space[i] = (int)mlc_pcg32_bounded(&s->rng, (uint32_t)n_space);
      seed[i] = next64(&s->rng);
    }
    tries += n;
    s->stats.samples += n;
    ok = produce(s, pop, n, make_sample, &sc, best, &rejected, err);
    s->stats.samples_rejected += rejected;
  }
  mlc_free(space);
  mlc_free(seed);
  return ok;
}

/* A parent index, in proportion to the weights (uniform when none is > 0). */
static int pick_parent(mlc_pcg32 *rng, int n, const double *cum) {
  double total = cum[n - 1];
  if (!(total > 0)) return (int)mlc_pcg32_bounded(rng, (uint32_t)n);
  double u = mlc_pcg32_double(rng) * total;
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cum[mid] > u) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Children of a population: parents picked by weight; each child's own
 * generator (from seeds[k]), so children can be made on any thread. */
typedef struct child_ctx {
  const item_list *parents;
  const double *cum;
  const uint64_t *seeds;
  long *tries; /* per child: mutations, rejected, repeats of a mutant made before */
} child_ctx;

/* Child k in next: a parent kept (1 - mutate_prob) or mutated; a rejected
 * mutation tries again with another parent. */
static item make_child(mlc_tuner_search *s, population *next, void *ctx, int k) {
  const child_ctx *c = ctx;
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, c->seeds[k], 0xc41d);
  const mlc_prim_func *f = mlc_tuner_space_func(s->space);
  for (int attempt = 0; attempt < s->o.max_fail_count; attempt++) {
    const item *p = &c->parents->data[pick_parent(&rng, c->parents->len, c->cum)];
    if (mlc_pcg32_double(&rng) >= s->o.mutate_prob) /* the same trace: it lasts the round */
      return (item){.t = p->t, .hash = p->hash, .hashed = p->hashed, .mutant = p->mutant,
                    .score = p->score};
    mlc_error e;
    c->tries[3 * k]++;
    tuner_mutation mu;
    mlc_sched *m = NULL;
    uint64_t key = 0;
    if (mlc_tuner_draw_mutation(p->t, -1, &rng, &s->o, &mu, &e)) {
      if (mu.decided) {
        key = tuner_mutation_key(p->t, &mu);
        int seen = mutant_find(next->r, key);
        if (seen >= 0) {
          c->tries[3 * k + 2]++;
          return (item){.t = next->r->made.data[seen].t, .reused = true, .mutant = seen};
        }
      }
      m = mlc_tuner_apply_mutation(f, p->t, &mu, &rng, &s->o, &e);
    }
    if (m) {
      item it = population_item(next, m);
      it.keyed = mu.decided;
      it.key = key;
      return it;
    }
    c->tries[3 * k + 1]++;
  }
  return (item){.mutant = -1};
}

/* The next generation of pop, scored. */
static bool evolve(mlc_tuner_search *s, const population *pop, population *next, best_set *best,
                   mlc_error *err) {
  /* Weights: scores shifted so the worst gets a little (a ranking model
   * scores on any scale, negative included). */
  const item_list *pi = &pop->items;
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < pi->len; i++) {
    if (pi->data[i].score < lo) lo = pi->data[i].score;
    if (pi->data[i].score > hi) hi = pi->data[i].score;
  }
  double floor_w = (hi - lo) * 0.01;
  int n = pi->len, none;
  double *cum = mlc_xmalloc(sizeof(double) * (size_t)n);
  uint64_t *seeds = mlc_xmalloc(sizeof(uint64_t) * (size_t)n);
  long *tries = mlc_xmalloc(sizeof(long) * 3 * (size_t)n);
  double acc = 0;
  for (int i = 0; i < n; i++) cum[i] = acc += pi->data[i].score - lo + floor_w;
  for (int i = 0; i < n; i++) seeds[i] = next64(&s->rng);
  child_ctx cc = {pi, cum, seeds, tries};
  bool ok = produce(s, next, n, make_child, &cc, best, &none, err);
  for (int k = 0; k < n; k++) {
    s->stats.mutations += tries[3 * k];
    s->stats.mutations_rejected += tries[3 * k + 1];
    s->stats.mutations_reused += tries[3 * k + 2];
  }
  mlc_free(cum);
  mlc_free(seeds);
  mlc_free(tries);
  return ok;
}

static int cmp_score_desc(const void *x, const void *y) {
  double a = ((const item *)x)->score, b = ((const item *)y)->score;
  if (a != b) return a > b ? -1 : 1;
  uint64_t ha = ((const item *)x)->hash, hb = ((const item *)y)->hash;
  return ha < hb ? -1 : ha > hb;
}

/* Move a verified candidate into the batch (the search owns it until the
 * next call); one that fails verification, or no longer replays, is
 * dropped and never offered again. */
static void take(mlc_tuner_search *s, item *it, bool random) {
  hs_add(&s->measured, item_hash(it));
  mlc_error e;
  if (!materialize(s, it, &e)) return;
  mlc_tuner_cand c = {it->s, it->hash, it->score, random};
  it->s = NULL;
  it->t = NULL; /* the candidate's now; the hash stays */
  if (s->o.verify_later && !tuner_postproc_verify(c.sched, &e)) {
    s->stats.verify_rejected++;
    mlc_sched_free(c.sched);
    return;
  }
  MLC_VEC_PUSH(s->batch, c);
}

static void fill_batch(mlc_tuner_search *s, int n, best_set *best, item_list *rand_pool) {
  int n_rand = (int)floor(n * s->o.eps_greedy + 0.5);
  int n_best = n - n_rand;
  if (best->items.len > 1)
    qsort(best->items.data, (size_t)best->items.len, sizeof(item), cmp_score_desc);
  int bi = 0;
  for (; bi < best->items.len && s->batch.len < n_best; bi++) take(s, &best->items.data[bi], false);
  /* the random share: shuffle, skip what was measured or taken */
  for (int i = rand_pool->len - 1; i > 0; i--) {
    int j = (int)mlc_pcg32_bounded(&s->rng, (uint32_t)(i + 1));
    item t = rand_pool->data[i];
    rand_pool->data[i] = rand_pool->data[j];
    rand_pool->data[j] = t;
  }
  for (int i = 0; i < rand_pool->len && s->batch.len < n; i++)
    if (!hs_has(&s->measured, item_hash(&rand_pool->data[i]))) take(s, &rand_pool->data[i], true);
  for (; bi < best->items.len && s->batch.len < n; bi++)
    if (!hs_has(&s->measured, best->items.data[bi].hash)) take(s, &best->items.data[bi], false);
}

bool mlc_tuner_search_propose(mlc_tuner_search *s, mlc_sched *cand) {
  item it = state_item(cand);
  item_hash(&it);
  bool fresh = !hs_has(&s->measured, it.hash);
  for (int i = 0; fresh && i < s->proposed.len; i++) fresh = s->proposed.data[i].hash != it.hash;
  if (fresh) MLC_VEC_PUSH(s->proposed, it);
  else mlc_sched_free(cand);
  return fresh;
}

/* The proposed candidates not measured meanwhile, up to n, into the batch. */
static void take_proposed(mlc_tuner_search *s, int n) {
  int k = 0;
  for (; k < s->proposed.len && s->batch.len < n; k++)
    if (!hs_has(&s->measured, s->proposed.data[k].hash)) take(s, &s->proposed.data[k], false);
    else mlc_sched_free(s->proposed.data[k].s);
  if (k == 0) return;
  memmove(s->proposed.data, s->proposed.data + k, sizeof(item) * (size_t)(s->proposed.len - k));
  s->proposed.len -= k;
}

int mlc_tuner_search_next_batch(mlc_tuner_search *s, int n, mlc_tuner_cand **out,
                                mlc_error *err) {
  double t0 = mlc_now_sec();
  free_batch(s);
  s->msg[0] = 0;
  *out = NULL;
  if (n <= 0) return 0;
  s->stats.rounds++;
  take_proposed(s, n);
  if (s->batch.len == n) {
    *out = s->batch.data;
    return n;
  }
  round_state r = round_new();
  population pop = population_new(&r), rand_pool = population_new(NULL);
  best_set best = {{0}, {0}, n};
  int rc = init_population(s, &pop, &best, err) ? 0 : -1;
  for (int g = 0; rc == 0 && g < s->o.generations && pop.items.len > 0; g++) {
    population next = population_new(&r);
    if (!evolve(s, &pop, &next, &best, err)) rc = -1;
    if (g == 0) { /* keep the fresh samples for the random share */
      rand_pool = pop;
      pop = population_new(NULL);
    }
    population_free(&pop);
    pop = next;
  }
  if (rc == 0) {
    if (!rand_pool.r) { /* a single generation: pop holds the samples */
      rand_pool = pop;
      pop = population_new(NULL);
    }
    fill_batch(s, n, &best, &rand_pool.items);
    rc = s->batch.len;
    if (rc == 0)
      snprintf(s->msg, sizeof s->msg,
               "no new candidate: every schedule the search found was measured already "
               "(the design space looks exhausted)");
    else if (rc < n)
      snprintf(s->msg, sizeof s->msg,
               "only %d new candidates of %d asked: the design space is nearly exhausted", rc, n);
  }
  population_free(&pop);
  population_free(&rand_pool);
  round_free(&r);
  free_items(&best.items);
  hs_free(&best.in);
  *out = s->batch.data;
  s->stats.search_sec += mlc_now_sec() - t0;
  return rc;
}

/* ---- options ------------------------------------------------------------------------ */

void mlc_tuner_opts_default(mlc_tuner_opts *o) {
  *o = (mlc_tuner_opts){
      .num_cores = mlc_target_host_cores(),
      .max_jobs_per_core = 16,
      .min_parallel_work = (int64_t)1 << 18,
      .max_vectorize_extent = 64,
      .max_innermost_factor = 64,
      .population = 512,
      .generations = 4,
      .mutate_prob = 0.85,
      .eps_greedy = 0.05,
      .init_measured_ratio = 0.2,
      .max_fail_count = 8,
      .seed = 1,
  };
  mlc_gpu_limits_sm80(&o->gpu_limits);
}
