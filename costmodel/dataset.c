/* Random loop-level schedules for cost-model datasets (tests, benchmarks):
 * tile, reorder, parallelize, vectorize, unroll. Every primitive checks
 * its own preconditions; a refused one is simply skipped. */
#include "costmodel/costmodel_internal.h"

#include <string.h>

#define MAX_LOOPS 64

typedef struct name_list {
  const char **names;
  int *n, cap;
} name_list;

static void add_block_name(const mlc_stmt *s, void *ud) {
  name_list *l = ud;
  if (s->kind != MLC_STMT_BLOCK_REALIZE || strcmp(s->realize.block->name, "root") == 0) return;
  if (*l->n < l->cap) l->names[(*l->n)++] = s->realize.block->name;
}

static void block_names(const mlc_stmt *s, const char **names, int *n, int cap) {
  name_list l = {names, n, cap};
  mlc_stmt_visit(s, add_block_name, &l);
}

static int loops_of(mlc_sched *s, mlc_rv block, mlc_rv *out) {
  mlc_rv *l;
  int n = mlc_sched_get_loops(s, block, &l, NULL);
  if (n < 0) return 0;
  if (n > MAX_LOOPS) n = MAX_LOOPS;
  memcpy(out, l, sizeof(mlc_rv) * (size_t)n);
  return n;
}

static int64_t extent_of(mlc_sched *s, mlc_rv loop) {
  const mlc_stmt *st = mlc_sched_rv_loop(s, loop);
  int64_t e = 0;
  if (!st || !mlc_expr_is_const_int(st->loop.extent, &e)) return 0;
  return e;
}

/* Split every loop into 1-3 tiles; tiles[level][loop] receives handles,
 * levels[loop] the count. */
static int tile_loops(mlc_sched *s, mlc_pcg32 *rng, int n, const mlc_rv *loops,
                      mlc_rv tiles[3][MAX_LOOPS], int *levels) {
  for (int i = 0; i < n; i++) {
    int64_t e = extent_of(s, loops[i]);
    int parts = e > 1 ? 1 + (int)mlc_pcg32_bounded(rng, 3) : 1;
    levels[i] = 1;
    tiles[0][i] = loops[i];
    if (parts == 1) continue;
    mlc_rv f[3], out[3];
    mlc_operand ops[3];
    if (!mlc_sched_sample_perfect_tile(s, loops[i], parts, 16, f, NULL)) continue;
    for (int k = 0; k < parts; k++) ops[k] = MLC_OP_RV(f[k]);
    if (!mlc_sched_split(s, loops[i], parts, ops, true, out, NULL)) continue;
    levels[i] = parts;
    for (int k = 0; k < parts; k++) tiles[k][i] = out[k];
  }
  return n;
}

/* Reorder: tile-major (all outer tiles, then middle, then inner: the
 * classic tiled nest), a random permutation, or the split order. */
static void reorder_tiles(mlc_sched *s, mlc_pcg32 *rng, int n, mlc_rv tiles[3][MAX_LOOPS],
                          const int *levels) {
  mlc_rv order[3 * MAX_LOOPS];
  int m = 0;
  uint32_t how = mlc_pcg32_bounded(rng, 3);
  if (how == 2) return;
  for (int lv = 0; lv < 3; lv++)
    for (int i = 0; i < n; i++)
      if (lv < levels[i]) order[m++] = tiles[lv][i];
  if (how == 1)
    for (int i = m - 1; i > 0; i--) {
      int j = (int)mlc_pcg32_bounded(rng, (uint32_t)i + 1);
      mlc_rv t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  if (m >= 2) mlc_sched_reorder(s, m, order, NULL);
}

static void annotate_loops(mlc_sched *s, mlc_pcg32 *rng, mlc_rv block) {
  mlc_rv loops[MAX_LOOPS];
  int n = loops_of(s, block, loops);
  if (n == 0) return;
  if (mlc_pcg32_bounded(rng, 5) != 0) mlc_sched_parallel(s, loops[0], NULL);
  int64_t inner = extent_of(s, loops[n - 1]);
  if (n >= 2 && inner >= 2 && inner <= 64 && mlc_pcg32_bounded(rng, 4) != 0)
    mlc_sched_vectorize(s, loops[n - 1], NULL);
  if (n >= 3 && extent_of(s, loops[n - 2]) <= 8 && mlc_pcg32_bounded(rng, 3) == 0)
    mlc_sched_unroll(s, loops[n - 2], NULL);
}

bool mlc_costmodel_random_schedule(mlc_sched *s, mlc_pcg32 *rng, mlc_error *err) {
  const char *names[32];
  int n_blocks = 0;
  block_names(mlc_sched_func(s)->body, names, &n_blocks, MLC_COUNTOF(names));
  for (int b = 0; b < n_blocks; b++) {
    mlc_rv block;
    if (!mlc_sched_get_block(s, names[b], NULL, &block, err)) return false;
    mlc_rv loops[MAX_LOOPS], tiles[3][MAX_LOOPS];
    int levels[MAX_LOOPS];
    int n = loops_of(s, block, loops);
    tile_loops(s, rng, n, loops, tiles, levels);
    reorder_tiles(s, rng, n, tiles, levels);
    annotate_loops(s, rng, block);
  }
  return true;
}
