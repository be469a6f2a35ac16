/* Schedule primitives on functions of size vars: what split, fuse,
 * sample_perfect_tile, parallel and cache_write do with a loop of symbolic
 * extent, and what they refuse. Accepted schedules must verify and compute
 * what the unscheduled function computes at every size (interpreter). A
 * tuned trace replayed on such a function is compiled and run at many
 * sizes in test_targets_codegen (test_symbolic_trace). */
#include "schedule/schedule.h"
#include "tests/test.h"

static const char rows_src[] =
    "@T.prim_func\n"
    "def main(a: T.handle, b: T.handle):\n"
    "    n = T.int32(min=1, max=40)\n"
    "    A = T.match_buffer(a, (n, 12))\n"
    "    B = T.match_buffer(b, (n, 12))\n"
    "    for i, j in T.grid(n, 12):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(3) + T.float32(1)\n";

static const char rowsum_src[] =
    "@T.prim_func\n"
    "def main(a: T.handle, b: T.handle):\n"
    "    n = T.int32(min=1, max=40)\n"
    "    A = T.match_buffer(a, (n, 12))\n"
    "    B = T.match_buffer(b, (n,))\n"
    "    for i, k in T.grid(n, 12):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            with T.init():\n"
    "                B[vi] = T.float32(0)\n"
    "            B[vi] = B[vi] + A[vi, vk]\n";

static mlc_arena *TA;

static mlc_prim_func *parse(const char *src) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(TA, "t.py", src, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  return m ? m->funcs[0] : NULL;
}

/* g (scheduled) verifies and computes what f computes at sizes 1..40. */
static bool same_at_sizes(const mlc_prim_func *f, const mlc_prim_func *g) {
  mlc_error err;
  if (!mlc_verify_func(g, &err)) {
    fprintf(stderr, "verify: %s\n", err.msg);
    return false;
  }
  for (int64_t n = 1; n <= 40; n += 3) {
    mlc_array args[2][2];
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, (uint64_t)n, 1);
    for (int i = 0; i < 2; i++) {
      int64_t shape[2];
      CHECK(mlc_buffer_extents(f, f->params[i], &n, shape));
      for (int k = 0; k < 2; k++) {
        mlc_array *x = mlc_array_new(MLC_FLOAT32, f->params[i]->ndim, shape);
        args[k][i] = *x;
        mlc_free(x);
      }
      mlc_array_fill_random(&args[0][i], &rng);
      memcpy(args[1][i].data, args[0][i].data, (size_t)mlc_array_numel(&args[0][i]) * 4);
    }
    bool ok = mlc_interp_run(f, args[0], &err) && mlc_interp_run(g, args[1], &err);
    if (!ok) fprintf(stderr, "n=%lld: %s\n", (long long)n, err.msg);
    double me = 0;
    ok = ok && mlc_array_allclose(&args[1][1], &args[0][1], 1e-6, 1e-6, &me);
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 2; i++) mlc_free(args[k][i].data);
    if (!ok) return false;
  }
  return true;
}

/* A state on f (seed) with block "B" and its two loops. */
static mlc_sched *open_b(const mlc_prim_func *f, uint64_t seed, mlc_rv *b, mlc_rv *loops) {
  mlc_error err;
  mlc_rv *ls;
  mlc_sched *s = mlc_sched_new(f, seed);
  CHECK(mlc_sched_get_block(s, "B", NULL, b, &err));
  CHECK(mlc_sched_get_loops(s, *b, &ls, &err) == 2);
  loops[0] = ls[0];
  loops[1] = ls[1];
  return s;
}

static void test_split_tail(void) {
  mlc_prim_func *f = parse(rows_src);
  if (!f) return;
  mlc_error err;
  mlc_rv b, loops[2], parts[3];
  mlc_sched *s = open_b(f, 1, &b, loops);
  mlc_rv i = loops[0];
  /* Constant factors cannot cover every size. */
  CHECK(!mlc_sched_split(s, i, 2, (mlc_operand[]){MLC_OP_INT(8), MLC_OP_INT(4)}, true, parts, &err));
  CHECK_MSG(strstr(err.msg, "the extent is symbolic: the first factor must be None"), "%s", err.msg);
  CHECK(mlc_sched_split(s, i, 3, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(2), MLC_OP_INT(4)}, true,
                        parts, &err));
  CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "split");
  mlc_sched_free(s);
}

static void test_fuse_and_parallel(void) {
  mlc_prim_func *f = parse(rows_src);
  if (!f) return;
  mlc_error err;
  mlc_rv b, loops[2], parts[2], fused;
  mlc_sched *s = open_b(f, 1, &b, loops);
  mlc_rv i = loops[0], j = loops[1];
  CHECK(mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(4)}, true, parts, &err));
  /* j_0 (3 iterations) outside the symbolic i: i moves out first (a
   * recorded Reorder), so the fused loop runs over n * 3. */
  CHECK(mlc_sched_reorder(s, 2, (mlc_rv[]){parts[0], i}, &err));
  CHECK_MSG(mlc_sched_fuse(s, 2, (mlc_rv[]){parts[0], i}, true, &fused, &err), "%s", err.msg);
  mlc_str tr = {0};
  mlc_trace_print(&tr, mlc_sched_trace(s));
  const char *t = mlc_str_cstr(&tr), *last_reorder = NULL;
  for (const char *p = strstr(t, "sch.reorder"); p; p = strstr(p + 1, "sch.reorder")) last_reorder = p;
  CHECK_MSG(last_reorder && strstr(last_reorder, "sch.fuse"), "%s", t);
  mlc_str_free(&tr);
  CHECK_MSG(mlc_sched_parallel(s, fused, &err), "%s", err.msg);
  CHECK(!mlc_sched_vectorize(s, fused, &err));
  CHECK_MSG(strstr(err.msg, "the loop's extent is not constant"), "%s", err.msg);
  CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "fuse + parallel");
  mlc_sched_free(s);
}

/* A state keeping the loop order (mlc_sched_set_fuse_outer_min): loops
 * outside the symbolic one that run often enough fuse alone, the rest
 * stays inside in order; too few, and the symbolic loop moves out as by
 * default. The trace replays to the same function on a state set alike. */
static void test_fuse_keeps_order(void) {
  mlc_prim_func *f = parse(rows_src);
  if (!f) return;
  for (int64_t min_outer = 4; min_outer <= 5; min_outer++) {
    mlc_error err;
    mlc_rv b, loops[2], parts[3], fused;
    mlc_sched *s = open_b(f, 1, &b, loops);
    mlc_sched_set_fuse_outer_min(s, min_outer);
    mlc_rv i = loops[0], j = loops[1];
    CHECK(mlc_sched_split(s, j, 3, (mlc_operand[]){MLC_OP_INT(2), MLC_OP_INT(2), MLC_OP_INT(3)},
                          true, parts, &err));
    CHECK(mlc_sched_reorder(s, 3, (mlc_rv[]){parts[0], parts[1], i}, &err));
    int before = mlc_sched_trace(s)->insts.len;
    CHECK_MSG(mlc_sched_fuse(s, 3, (mlc_rv[]){parts[0], parts[1], i}, true, &fused, &err), "%s",
              err.msg);
    const mlc_stmt *l = mlc_sched_rv_loop(s, fused);
    int64_t ext;
    bool constant = mlc_expr_is_const_int(l->loop.extent, &ext);
    if (min_outer == 4) { /* j_0 x j_1 run 4 times: they fuse, i stays inside */
      CHECK_MSG(constant && ext == 4, "the fused loop runs over j_0 x j_1");
      CHECK(l->loop.body->kind == MLC_STMT_FOR && !mlc_expr_is_const_int(l->loop.body->loop.extent, &ext));
      CHECK(mlc_sched_trace(s)->insts.len == before + 1); /* the Fuse, no Reorder */
    } else {
      CHECK_MSG(!constant, "i moved outermost: the fused loop runs over n x 4");
    }
    CHECK_MSG(mlc_sched_parallel(s, fused, &err), "%s", err.msg);
    CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "fuse keeping order + parallel");
    mlc_sched *r = mlc_sched_new(f, 1);
    mlc_sched_set_fuse_outer_min(r, min_outer);
    CHECK_MSG(mlc_sched_replay(r, mlc_sched_trace(s), NULL, NULL, &err), "%s", err.msg);
    CHECK(mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)));
    mlc_sched_free(r);
    mlc_sched_free(s);
  }
}

static void test_sample_tile(void) {
  mlc_prim_func *f = parse(rows_src);
  if (!f) return;
  mlc_error err;
  mlc_rv b, loops[2], v[3], parts[3];
  mlc_sched *s = open_b(f, 3, &b, loops);
  CHECK_MSG(mlc_sched_sample_perfect_tile(s, loops[0], 3, 4, v, &err), "%s", err.msg);
  mlc_operand fs[3] = {MLC_OP_RV(v[0]), MLC_OP_RV(v[1]), MLC_OP_RV(v[2])};
  CHECK_MSG(mlc_sched_split(s, loops[0], 3, fs, true, parts, &err), "%s", err.msg);
  CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "sampled split");
  mlc_sched_free(s);
}

/* A trace of the kernel at one size replayed at another: a tile
 * decision that no longer fits is drawn again, unless the replay carries
 * tiles: then its inner factors stay where they divide the extent. */
static void test_carry_tiles(void) {
  mlc_prim_func *f = parse(rows_src);
  if (!f) return;
  mlc_error err;
  const int64_t n40 = 40;
  mlc_prim_func *g40 = mlc_func_specialize(TA, f, &n40, &err);
  mlc_rv b, loops[2], v[3], parts[3];
  mlc_sched *s = open_b(g40, 3, &b, loops);
  CHECK_MSG(mlc_sched_sample_perfect_tile(s, loops[0], 3, 4, v, &err), "%s", err.msg);
  mlc_operand fs[3] = {MLC_OP_RV(v[0]), MLC_OP_RV(v[1]), MLC_OP_RV(v[2])};
  CHECK_MSG(mlc_sched_split(s, loops[0], 3, fs, true, parts, &err), "%s", err.msg);
  mlc_trace *t = (mlc_trace *)mlc_sched_trace(s);
  mlc_inst *tile = NULL;
  for (int i = 0; i < t->insts.len; i++)
    if (t->insts.data[i].kind == MLC_INST_SAMPLE_PERFECT_TILE) tile = &t->insts.data[i];
  CHECK(tile != NULL);
  if (!tile) return mlc_sched_free(s);
  tile->decision = (mlc_decision){3, {5, 2, 4}};
  struct {
    int64_t n;
    bool carry;
    int64_t outer; /* 0: drawn again */
  } cases[] = {{24, true, 3}, {20, false, 0}, {20, true, 0}};
  for (int c = 0; c < 3; c++) {
    mlc_prim_func *g = mlc_func_specialize(TA, f, &cases[c].n, &err);
    mlc_sched *r = mlc_sched_new(g, 5);
    mlc_replay_opts o = {.carry_tiles = cases[c].carry};
    mlc_replay_report rep;
    CHECK_MSG(mlc_sched_replay(r, t, &o, &rep, &err), "%s", err.msg);
    const mlc_trace *rt = mlc_sched_trace(r);
    const mlc_decision *d = NULL;
    for (int i = 0; i < rt->insts.len; i++)
      if (rt->insts.data[i].kind == MLC_INST_SAMPLE_PERFECT_TILE) d = &rt->insts.data[i].decision;
    bool carried = d && d->v[0] == cases[c].outer && d->v[1] == 2 && d->v[2] == 4;
    CHECK_MSG(cases[c].outer ? carried && rep.n_resampled == 0 : rep.n_resampled == 1,
              "n=%lld carry %d: [%lld, %lld, %lld], %d drawn again", (long long)cases[c].n,
              cases[c].carry, d ? (long long)d->v[0] : -1LL, d ? (long long)d->v[1] : -1LL,
              d ? (long long)d->v[2] : -1LL, rep.n_resampled);
    mlc_sched_free(r);
  }
  mlc_sched_free(s);
}

static void test_cache_write_tail(void) {
  mlc_prim_func *f = parse(rowsum_src);
  if (!f) return;
  mlc_error err;
  mlc_rv b, loops[2], parts[2], wb;
  mlc_sched *s = open_b(f, 1, &b, loops);
  mlc_rv k = loops[1];
  CHECK(mlc_sched_split(s, loops[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, parts,
                        &err));
  CHECK(mlc_sched_reorder(s, 2, (mlc_rv[]){k, parts[1]}, &err));
  /* The whole of B cached (its rows at each size), the write-back under
   * the row tile, guarded by n. */
  CHECK_MSG(mlc_sched_cache_write(s, b, 0, "global", 0, NULL, &wb, &err), "%s", err.msg);
  CHECK_MSG(mlc_sched_reverse_compute_at(s, wb, parts[0], true, -1, &err), "%s", err.msg);
  CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "cache_write + reverse_compute_at");
  mlc_sched_free(s);
}

/* A write the cache cannot take whole (a packed column index, as a dense
 * layer's over packed weights), its rows split with a tail: the cache
 * holds the rows' bound, the write-back copies only rows below n (its own
 * T.where), wherever reverse_compute_at moves it. */
static void test_cache_write_tail_guard(void) {
  mlc_prim_func *f = parse("@T.prim_func\n"
                           "def main(a: T.handle, b: T.handle):\n"
                           "    n = T.int32(min=1, max=40)\n"
                           "    A = T.match_buffer(a, (n, 12))\n"
                           "    B = T.match_buffer(b, (n, 12))\n"
                           "    for i, jo, jl in T.grid(n, 3, 4):\n"
                           "        with T.block(\"B\"):\n"
                           "            vi, vj, vl = T.axis.remap(\"SSS\", [i, jo, jl])\n"
                           "            B[vi, vj * 4 + vl] = A[vi, vj * 4 + vl] * T.float32(2)\n");
  if (!f) return;
  mlc_error err;
  mlc_rv b, *ls, parts[2], wb;
  mlc_sched *s = mlc_sched_new(f, 1);
  CHECK(mlc_sched_get_block(s, "B", NULL, &b, &err));
  CHECK(mlc_sched_get_loops(s, b, &ls, &err) == 3);
  CHECK(mlc_sched_split(s, ls[0], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(8)}, true, parts,
                        &err));
  CHECK_MSG(mlc_sched_cache_write(s, b, 0, "global", 0, NULL, &wb, &err), "%s", err.msg);
  CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "cache_write at the scope");
  CHECK_MSG(mlc_sched_reverse_compute_at(s, wb, parts[0], true, -1, &err), "%s", err.msg);
  CHECK_MSG(same_at_sizes(f, mlc_sched_func(s)), "write-back under the row tile");
  mlc_sched_free(s);
}

/* A predicate that skips rows inside the domain (not a split's tail):
 * the cache would hold rows the block never writes. */
static void test_cache_write_refuses_skips(void) {
  mlc_prim_func *f = parse("@T.prim_func\n"
                           "def main(a: T.handle, b: T.handle):\n"
                           "    n = T.int32(min=1, max=40)\n"
                           "    A = T.match_buffer(a, (n, 12))\n"
                           "    B = T.match_buffer(b, (n, 12))\n"
                           "    for i, j in T.grid(n, 12):\n"
                           "        with T.block(\"B\"):\n"
                           "            T.where(i % 2 == 0)\n"
                           "            vi = T.axis.spatial(n, i)\n"
                           "            vj = T.axis.spatial(12, j)\n"
                           "            B[vi, vj] = A[vi, vj]\n");
  if (!f) return;
  mlc_error err;
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b, wb;
  CHECK(mlc_sched_get_block(s, "B", NULL, &b, &err));
  CHECK(!mlc_sched_cache_write(s, b, 0, "global", 0, NULL, &wb, &err));
  mlc_sched_free(s);
}

int main(void) {
  TA = mlc_arena_new();
  RUN(test_split_tail);
  RUN(test_fuse_and_parallel);
  RUN(test_fuse_keeps_order);
  RUN(test_sample_tile);
  RUN(test_carry_tiles);
  RUN(test_cache_write_tail);
  RUN(test_cache_write_tail_guard);
  RUN(test_cache_write_refuses_skips);
  mlc_arena_free(TA);
  return test_summary();
}
