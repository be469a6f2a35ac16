/* GPU postprocessors, as meta-schedule's CUDA defaults run them:
 * RewriteCooperativeFetch, the unroll part of
 * RewriteParallelVectorizeUnroll, then VerifyGPUCode. Every step goes
 * through the schedule API, so the trace records it after EnterPostproc.
 */
#include "tuner/tuner_internal.h"

#include <string.h>

#define ANN_COOP_FETCH "meta_schedule.cooperative_fetch"

/* Names of the blocks carrying an annotation, in program order. */
typedef struct ann_blocks {
  const char *key;
  mlc_arena *a;
  const char ***names;
  int *n, *cap;
} ann_blocks;

static void add_if_annotated(const mlc_stmt *st, void *ud) {
  ann_blocks *c = ud;
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return;
  const mlc_block *b = st->realize.block;
  if (!mlc_ann_find(b->n_anns, b->anns, c->key)) return;
  if (*c->n == *c->cap) {
    *c->cap = *c->cap ? 2 * *c->cap : 8;
    const char **m = MLC_NEW_ARRAY(c->a, const char *, *c->cap);
    if (*c->n) memcpy(m, *c->names, sizeof(*m) * (size_t)*c->n);
    *c->names = m;
  }
  (*c->names)[(*c->n)++] = b->name;
}

static void blocks_with_ann(const mlc_stmt *st, const char *key, mlc_arena *a,
                            const char ***names, int *n, int *cap) {
  ann_blocks c = {key, a, names, n, cap};
  mlc_stmt_visit(st, add_if_annotated, &c);
}

/* The copy block's own loops: the innermost chain of unbound loops that
 * hold nothing but the next loop (the last: the block). Returns the index
 * of the first; *threads receives the enclosing threadIdx.x extent (0 if
 * none). */
static int fetch_loops(mlc_sched *s, mlc_rv blk, mlc_rv *loops, int n, int64_t *threads) {
  const mlc_stmt *inner = NULL;
  const mlc_block *b = mlc_sched_rv_block(s, blk);
  int k = n - 1;
  for (; k >= 0; k--) {
    const mlc_stmt *l = mlc_sched_rv_loop(s, loops[k]);
    const mlc_stmt *body = l->loop.body;
    bool direct = inner ? body == inner
                        : body->kind == MLC_STMT_BLOCK_REALIZE && body->realize.block == b;
    if (l->loop.kind == MLC_FOR_THREAD_BINDING || !direct) break;
    inner = l;
  }
  *threads = 0;
  for (int i = 0; i <= k; i++) {
    const mlc_stmt *l = mlc_sched_rv_loop(s, loops[i]);
    if (l->loop.kind == MLC_FOR_THREAD_BINDING && strcmp(l->loop.thread, "threadIdx.x") == 0)
      *threads = tuner_loop_extent(l);
  }
  return k + 1;
}

/* meta-schedule's RewriteCooperativeFetch for one copy block: its loops
 * fused, split into [rest, threads, lanes], the middle bound to
 * threadIdx.x, the last vectorized (left serial if refused). */
static bool coop_fetch(mlc_sched *s, const char *name, mlc_error *err) {
  mlc_rv blk, *loops, fused, parts[3];
  if (!mlc_sched_get_block(s, name, NULL, &blk, err)) return false;
  const mlc_ann *ann = mlc_ann_find(mlc_sched_rv_block(s, blk)->n_anns,
                                    mlc_sched_rv_block(s, blk)->anns, ANN_COOP_FETCH);
  int64_t lanes = ann && ann->kind == MLC_ANN_INT && ann->i > 1 ? ann->i : 1;
  if (!mlc_sched_unannotate(s, blk, ANN_COOP_FETCH, err)) return false;
  int n = mlc_sched_get_loops(s, blk, &loops, err);
  if (n < 0) return false;
  mlc_rv copy[TUNER_MAX_LOOPS];
  if (n > TUNER_MAX_LOOPS) return mlc_error_set(err, "cooperative fetch: too many loops");
  memcpy(copy, loops, sizeof(mlc_rv) * (size_t)n);
  int64_t threads;
  int first = fetch_loops(s, blk, copy, n, &threads);
  if (first >= n || threads <= 0) return true; /* nothing to share out */
  if (n - first == 1) fused = copy[first];
  else if (!mlc_sched_fuse(s, n - first, copy + first, true, &fused, err)) return false;
  mlc_operand f[3] = {MLC_OP_NONE, MLC_OP_INT(threads), MLC_OP_INT(lanes)};
  if (!mlc_sched_split(s, fused, lanes > 1 ? 3 : 2, f, true, parts, err)) return false;
  if (!mlc_sched_bind(s, parts[1], "threadIdx.x", err)) return false;
  mlc_error ignored;
  if (lanes > 1) mlc_sched_vectorize(s, parts[2], &ignored);
  return true;
}

/* The root's unroll step onto the outermost loop of each nest under it. */
static bool rewrite_unroll(mlc_sched *s, mlc_error *err) {
  mlc_rv root, *kids, *loops;
  if (!mlc_sched_get_block(s, "root", NULL, &root, err)) return false;
  const mlc_block *rb = mlc_sched_rv_block(s, root);
  const mlc_ann *ann = mlc_ann_find(rb->n_anns, rb->anns, TUNER_ANN_UNROLL);
  if (!ann) return true;
  int64_t step = ann->i;
  if (!mlc_sched_unannotate(s, root, TUNER_ANN_UNROLL, err)) return false;
  if (step <= 0) return true;
  int n = mlc_sched_get_child_blocks(s, root, &kids, err);
  if (n < 0) return false;
  mlc_rv blocks[256];
  if (n > MLC_COUNTOF(blocks)) n = MLC_COUNTOF(blocks);
  memcpy(blocks, kids, sizeof(mlc_rv) * (size_t)n);
  const mlc_stmt *done[256];
  int n_done = 0;
  for (int i = 0; i < n; i++) {
    int nl = mlc_sched_get_loops(s, blocks[i], &loops, err);
    if (nl < 0) return false;
    if (nl == 0) continue;
    mlc_rv top = loops[0];
    const mlc_stmt *l = mlc_sched_rv_loop(s, top);
    bool seen = false;
    for (int j = 0; j < n_done; j++) seen |= done[j] == l;
    if (seen) continue;
    done[n_done++] = l;
    if (!mlc_sched_annotate(s, top, "pragma_auto_unroll_max_step", MLC_OP_INT(step), err) ||
        !mlc_sched_annotate(s, top, "pragma_unroll_explicit", MLC_OP_INT(1), err))
      return false;
  }
  return true;
}

bool tuner_postproc_gpu(mlc_sched *s, const mlc_gpu_limits *lim, bool verify_ir, mlc_gpu_usage *usage,
                        mlc_error *err) {
  if (usage) *usage = (mlc_gpu_usage){.failed = MLC_GPU_STRUCTURE};
  mlc_sched_enter_postproc(s);
  mlc_arena *a = mlc_arena_new();
  const char **names = NULL;
  int n = 0, cap = 0;
  blocks_with_ann(mlc_sched_func(s)->body, ANN_COOP_FETCH, a, &names, &n, &cap);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) ok = coop_fetch(s, names[i], err);
  mlc_arena_free(a);
  if (!ok) return mlc_error_prefix(err, "postproc: cooperative fetch");
  if (!rewrite_unroll(s, err)) return mlc_error_prefix(err, "postproc: unroll");
  if (verify_ir && !tuner_postproc_verify(s, err)) return false;
  return mlc_gpu_verify(mlc_sched_func(s), lim, usage, err);
}
