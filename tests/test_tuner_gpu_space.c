/* GPU verifier (targets/cuda_verify.c) on hand-written kernels, and the GPU
 * design space (tuner/space_gpu.c, through the design-space interface
 * mlc_tuner_space_gpu): thousands of samples over six built-in
 * tasks, each checked again by the verifier for sm_80, some run through
 * the interpreter (thread bindings run as serial loops) against the
 * unscheduled program. */
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tuner/tuner_internal.h" /* the search and design spaces */
#include "tests/test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- verifier on hand-written kernels ----------------------------------------- */

#define PRE                                                                              \
  "@T.prim_func\n"                                                                       \
  "def main(A: T.Buffer((256, 256), \"float32\"), B: T.Buffer((256, 256), \"float32\")):\n"

/* One statement of the copy B = A * 2 at (row, col) expressions. */
#define COPY(ind, name, row, col, src)                                  \
  ind "with T.block(\"" name "\"):\n"                                   \
  ind "    vi = T.axis.spatial(256, " row ")\n"                        \
  ind "    vj = T.axis.spatial(256, " col ")\n"                        \
  ind "    B[vi, vj] = " src "[vi, vj] * T.float32(2)\n"

/* A kernel over rows (outer tag) and columns (inner tag): the baseline. */
#define ROWCOL(otag, itag)                                                      \
  PRE "    for i in T.thread_binding(256, thread=\"" otag "\"):\n"              \
      "        for j in T.thread_binding(256, thread=\"" itag "\"):\n"          \
      COPY("            ", "B", "i", "j", "A")

typedef struct vcase {
  const char *name;
  const char *src;
  int limits;           /* 0: sm_80; others: see set_limits */
  mlc_gpu_check expect; /* MLC_GPU_OK: accepted */
  const char *msg1, *msg2; /* substrings the message must hold */
} vcase;

static void set_limits(int which, mlc_gpu_limits *l) {
  mlc_gpu_limits_sm80(l);
  switch (which) {
  case 1: l->max_threads_per_block = 128; break;
  case 2: l->max_shared_bytes = 8 * 1024; break;
  case 3: l->max_local_bytes = 256; break;
  case 4: l->max_local_bytes = 100; break;
  case 5: l->max_vector_bytes = 4; break;
  case 6: l->max_local_bytes = 512; break;
  case 7: l->max_vthread = 2; break;
  default: break;
  }
}

/* Shared: a tile of `rows` rows per block staged in A_s, 256 threads. */
#define SHARED_TILE(blocks, rows)                                                     \
  PRE "    A_s = T.alloc_buffer((256, 256), scope=\"shared\")\n"                       \
      "    for bx in T.thread_binding(" blocks ", thread=\"blockIdx.x\"):\n"          \
      "        for tx in T.thread_binding(256, thread=\"threadIdx.x\"):\n"           \
      "            for i in range(" rows "):\n"                                     \
      "                with T.block(\"A_s\"):\n"                                    \
      "                    vi = T.axis.spatial(256, bx * " rows " + i)\n"           \
      "                    vj = T.axis.spatial(256, tx)\n"                          \
      "                    A_s[vi, vj] = A[vi, vj]\n"                               \
      "            for i in range(" rows "):\n"                                     \
      COPY("                ", "B", "bx * " rows " + i", "tx", "A_s")

/* Local: each thread stages its row (cols columns) in B_l. */
#define LOCAL_ROW(cols)                                                              \
  PRE "    B_l = T.alloc_buffer((256, 256), scope=\"local\")\n"                       \
      "    for bx in T.thread_binding(16, thread=\"blockIdx.x\"):\n"                 \
      "        for tx in T.thread_binding(16, thread=\"threadIdx.x\"):\n"            \
      "            for j in range(" cols "):\n"                                    \
      "                with T.block(\"B_l\"):\n"                                   \
      "                    vi = T.axis.spatial(256, bx * 16 + tx)\n"               \
      "                    vj = T.axis.spatial(256, j)\n"                          \
      "                    B_l[vi, vj] = A[vi, vj]\n"                              \
      "            for j in range(" cols "):\n"                                    \
      COPY("                ", "B", "bx * 16 + tx", "j", "B_l")

#define VEC(lanes, per)                                                              \
  PRE "    for i in T.thread_binding(256, thread=\"blockIdx.x\"):\n"                  \
      "        for t in T.thread_binding(" per ", thread=\"threadIdx.x\"):\n"        \
      "            for v in T.vectorized(" lanes "):\n"                            \
      COPY("                ", "B", "i", "t * " lanes " + v", "A")

static const vcase CASES[] = {
    /* accepted */
    {"ok_rowcol", ROWCOL("blockIdx.x", "threadIdx.x"), 0, MLC_GPU_OK, NULL, NULL},
    {"ok_shared_compacted", SHARED_TILE("16", "16"), 0, MLC_GPU_OK, NULL, NULL},
    {"ok_local_row", LOCAL_ROW("256"), 0, MLC_GPU_OK, NULL, NULL},
    {"ok_vector4", VEC("4", "64"), 0, MLC_GPU_OK, NULL, NULL},
    /* work on the host */
    {"unbound_serial_nest",
     PRE "    for i in range(256):\n"
         "        for j in range(256):\n" COPY("            ", "B", "i", "j", "A"),
     0, MLC_GPU_UNBOUND, "loop i", "block B"},
    {"unbound_loop_around_kernel",
     PRE "    for i in range(256):\n"
         "        for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         COPY("            ", "B", "i", "j", "A"),
     0, MLC_GPU_UNBOUND, "loop i", "host"},
    {"unbound_second_nest",
     PRE "    C = T.alloc_buffer((256, 256))\n"
         "    for i in T.thread_binding(256, thread=\"blockIdx.x\"):\n"
         "        for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         "            with T.block(\"C\"):\n"
         "                vi = T.axis.spatial(256, i)\n"
         "                vj = T.axis.spatial(256, j)\n"
         "                C[vi, vj] = A[vi, vj]\n"
         "    for k in range(256):\n"
         "        for j in range(256):\n" COPY("            ", "B2", "k", "j", "C"),
     0, MLC_GPU_UNBOUND, "loop k", "block B2"},
    {"unbound_scalar_block",
     PRE "    with T.block(\"S\"):\n"
         "        B[0, 0] = A[0, 0]\n",
     0, MLC_GPU_UNBOUND, "block S", "host"},
    /* threads */
    {"threads_product", ROWCOL("threadIdx.y", "threadIdx.x"), 0, MLC_GPU_THREADS,
     "65536 threads per block", "limit 1024"},
    {"threads_dim_z", ROWCOL("blockIdx.x", "threadIdx.z"), 0, MLC_GPU_THREADS,
     "threadIdx.z extent 256", "limit 64"},
    {"threads_small_limit", ROWCOL("blockIdx.x", "threadIdx.x"), 1, MLC_GPU_THREADS,
     "256 threads per block", "limit 128"},
    {"threads_dim_x",
     PRE "    for i in T.thread_binding(32, thread=\"blockIdx.x\"):\n"
         "        for j in T.thread_binding(2048, thread=\"threadIdx.x\"):\n"
         COPY("            ", "B", "i * 8 + j // 256", "j % 256", "A"),
     0, MLC_GPU_THREADS, "threadIdx.x extent 2048", "limit 1024"},
    /* virtual threads */
    {"vthread_count",
     PRE "    for b in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
         "        for v in T.thread_binding(16, thread=\"vthread.x\"):\n"
         "            for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         COPY("                ", "B", "b * 16 + v", "j", "A"),
     0, MLC_GPU_VTHREAD, "16 virtual threads", "limit 8"},
    {"vthread_xy",
     PRE "    for i in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
         "        for v in T.thread_binding(4, thread=\"vthread.x\"):\n"
         "            for w in T.thread_binding(4, thread=\"vthread.y\"):\n"
         "                for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         COPY("                    ", "B", "v * 64 + w * 16 + i", "j", "A"),
     0, MLC_GPU_VTHREAD, "16 virtual threads", "limit 8"},
    {"vthread_small_limit",
     PRE "    for b in T.thread_binding(64, thread=\"blockIdx.x\"):\n"
         "        for v in T.thread_binding(4, thread=\"vthread.x\"):\n"
         "            for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         COPY("                ", "B", "b * 4 + v", "j", "A"),
     7, MLC_GPU_VTHREAD, "4 virtual threads", "limit 2"},
    {"threads_grid_y",
     PRE "    for i in T.thread_binding(65536, thread=\"blockIdx.y\"):\n"
         COPY("        ", "B", "i // 256", "i % 256", "A"),
     0, MLC_GPU_THREADS, "blockIdx.y extent 65536", "limit 65535"},
    /* shared memory */
    {"shared_whole", SHARED_TILE("1", "256"), 0, MLC_GPU_SHARED, "262144 bytes of shared",
     "limit 49152"},
    {"shared_tile_64_rows", SHARED_TILE("4", "64"), 0, MLC_GPU_SHARED, "65536 bytes of shared",
     "block A_s"},
    {"shared_small_limit", SHARED_TILE("16", "16"), 2, MLC_GPU_SHARED, "16384 bytes of shared",
     "limit 8192"},
    {"shared_two_buffers",
     PRE "    A_s = T.alloc_buffer((256, 256), scope=\"shared\")\n"
         "    A_t = T.alloc_buffer((256, 256), scope=\"shared\")\n"
         "    for bx in T.thread_binding(8, thread=\"blockIdx.x\"):\n"
         "        for tx in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         "            for i in range(32):\n"
         "                with T.block(\"A_s\"):\n"
         "                    vi = T.axis.spatial(256, bx * 32 + i)\n"
         "                    vj = T.axis.spatial(256, tx)\n"
         "                    A_s[vi, vj] = A[vi, vj]\n"
         "            for i in range(32):\n"
         "                with T.block(\"A_t\"):\n"
         "                    vi = T.axis.spatial(256, bx * 32 + i)\n"
         "                    vj = T.axis.spatial(256, tx)\n"
         "                    A_t[vi, vj] = A_s[vi, vj]\n"
         "            for i in range(32):\n"
         COPY("                ", "B", "bx * 32 + i", "tx", "A_t"),
     0, MLC_GPU_SHARED, "65536 bytes of shared", "limit 49152"},
    /* local memory */
    {"local_row_small_limit", LOCAL_ROW("256"), 3, MLC_GPU_LOCAL, "1024 bytes of local",
     "limit 256"},
    {"local_vthread_copies",
     PRE "    B_l = T.alloc_buffer((256, 256), scope=\"local\")\n"
         "    for bx in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
         "        for v in T.thread_binding(2, thread=\"vthread.x\"):\n"
         "            for tx in T.thread_binding(8, thread=\"threadIdx.x\"):\n"
         "                for j in range(16):\n"
         "                    with T.block(\"B_l\"):\n"
         "                        vi = T.axis.spatial(256, bx * 16 + v * 8 + tx)\n"
         "                        vj = T.axis.spatial(256, j)\n"
         "                        B_l[vi, vj] = A[vi, vj]\n"
         "                for j in range(16):\n"
         COPY("                    ", "B", "bx * 16 + v * 8 + tx", "j", "B_l"),
     4, MLC_GPU_LOCAL, "128 bytes of local", "limit 100"},
    {"local_cols_64", LOCAL_ROW("64"), 4, MLC_GPU_LOCAL, "256 bytes of local", "limit 100"},
    {"local_whole_dim",
     PRE "    B_l = T.alloc_buffer((256,), scope=\"local\")\n"
         "    for bx in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
         "        for tx in T.thread_binding(16, thread=\"threadIdx.x\"):\n"
         "            for j in range(256):\n"
         "                with T.block(\"B_l\"):\n"
         "                    vj = T.axis.spatial(256, j)\n"
         "                    vi = T.axis.spatial(256, bx * 16 + tx)\n"
         "                    B_l[vj] = A[vi, vj]\n"
         "            for j in range(256):\n"
         "                with T.block(\"B\"):\n"
         "                    vi = T.axis.spatial(256, bx * 16 + tx)\n"
         "                    vj = T.axis.spatial(256, j)\n"
         "                    B[vi, vj] = B_l[vj]\n",
     6, MLC_GPU_LOCAL, "1024 bytes of local", "limit 512"},
    /* vectors */
    {"vector_8_lanes", VEC("8", "32"), 0, MLC_GPU_VECTOR, "8 lanes of 4 bytes", "16 bytes"},
    {"vector_16_lanes", VEC("16", "16"), 0, MLC_GPU_VECTOR, "16 lanes", "loop v"},
    {"vector_small_limit", VEC("2", "128"), 5, MLC_GPU_VECTOR, "2 lanes of 4 bytes",
     "4 bytes"},
    /* parallel loops */
    {"parallel_top",
     PRE "    for i in T.parallel(256):\n"
         "        for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         COPY("            ", "B", "i", "j", "A"),
     0, MLC_GPU_PARALLEL, "loop i", "parallel"},
    {"parallel_in_kernel",
     PRE "    for i in T.thread_binding(256, thread=\"blockIdx.x\"):\n"
         "        for j in T.parallel(256):\n" COPY("            ", "B", "i", "j", "A"),
     0, MLC_GPU_PARALLEL, "loop j", "block B"},
    {"parallel_in_thread",
     PRE "    for i in T.thread_binding(256, thread=\"blockIdx.x\"):\n"
         "        for t in T.thread_binding(16, thread=\"threadIdx.x\"):\n"
         "            for j in T.parallel(16):\n"
         COPY("                ", "B", "i", "t * 16 + j", "A"),
     0, MLC_GPU_PARALLEL, "loop j", "parallel"},
    /* bindings */
    {"structure_two_extents",
     PRE "    C = T.alloc_buffer((256, 256))\n"
         "    for i in T.thread_binding(256, thread=\"blockIdx.x\"):\n"
         "        for j in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
         "            with T.block(\"C\"):\n"
         "                vi = T.axis.spatial(256, i)\n"
         "                vj = T.axis.spatial(256, j)\n"
         "                C[vi, vj] = A[vi, vj]\n"
         "        for j in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
         "            for k in range(2):\n"
         COPY("                ", "B", "i", "j * 2 + k", "C"),
     0, MLC_GPU_STRUCTURE, "extent 128", "elsewhere in the kernel 256"},
    {"structure_block_below_serial",
     PRE "    for b in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
         "        for k in range(16):\n"
         "            for j in T.thread_binding(256, thread=\"blockIdx.y\"):\n"
         COPY("                ", "B", "b * 16 + k", "j", "A"),
     0, MLC_GPU_STRUCTURE, "loop j", "binds blockIdx.y inside a loop"},
    {"structure_block_inside_thread", ROWCOL("threadIdx.x", "blockIdx.x"), 0,
     MLC_GPU_STRUCTURE, "binds blockIdx.x", "outermost"},
};

static bool paths_within_limits(const mlc_prim_func *f, const mlc_gpu_limits *lim, char *why);

/* Cases the test's own path check (below) must refuse too: it sees
 * stores on the host, thread products, vthreads, vectors, parallel. */
static bool path_check_refuses(const char *name) {
  static const char *const R[] = {
      "unbound_serial_nest", "unbound_second_nest", "unbound_scalar_block", "threads_product",
      "threads_dim_x",       "vthread_count",       "vthread_xy",           "vector_8_lanes",
      "vector_16_lanes",     "parallel_top",        "parallel_in_kernel",   "parallel_in_thread"};
  for (int i = 0; i < MLC_COUNTOF(R); i++)
    if (strcmp(R[i], name) == 0) return true;
  return false;
}

static void test_verifier_cases(void) {
  int n_ok = 0, n_refused = 0;
  for (int i = 0; i < MLC_COUNTOF(CASES); i++) {
    const vcase *c = &CASES[i];
    mlc_arena *a = mlc_arena_new();
    mlc_error err = {{0}};
    mlc_module *m = mlc_parse_module(a, c->name, c->src, &err);
    CHECK_MSG(m != NULL, "%s: parse: %s", c->name, err.msg);
    if (m) {
      CHECK_MSG(mlc_verify_func(m->funcs[0], &err), "%s: IR verify: %s", c->name, err.msg);
      mlc_gpu_limits lim;
      set_limits(c->limits, &lim);
      mlc_gpu_usage u;
      err.msg[0] = 0;
      bool ok = mlc_gpu_verify(m->funcs[0], &lim, &u, &err);
      CHECK_MSG(ok == (c->expect == MLC_GPU_OK), "%s: verify returned %d: %s", c->name, ok,
                err.msg);
      CHECK_MSG(u.failed == c->expect, "%s: failed check %d, expected %d (%s)", c->name,
                u.failed, c->expect, err.msg);
      const char *want[2] = {c->msg1, c->msg2};
      for (int k = 0; k < 2; k++)
        if (want[k])
          CHECK_MSG(strstr(err.msg, want[k]), "%s: message lacks \"%s\": %s", c->name, want[k],
                    err.msg);
      if (ok) n_ok++;
      else n_refused++;
      char why[160];
      if (c->limits == 0)
        CHECK_MSG(paths_within_limits(m->funcs[0], &lim, why) != path_check_refuses(c->name),
                  "%s: the test's path check disagrees", c->name);
    }
    mlc_arena_free(a);
  }
  printf("# verifier: %d kernels accepted, %d refused as expected\n", n_ok, n_refused);
}

/* Sizes the verifier reports for accepted kernels: the shared tile is
 * compacted to 16 rows of the declared 256, local rows count per thread. */
static void test_verifier_usage(void) {
  static const struct { const char *src; int64_t shared, local, threads; } U[] = {
      {SHARED_TILE("16", "16"), 16 * 256 * 4, 0, 256},
      {LOCAL_ROW("256"), 0, 256 * 4, 16},
      {ROWCOL("blockIdx.x", "threadIdx.x"), 0, 0, 256},
  };
  for (int i = 0; i < MLC_COUNTOF(U); i++) {
    mlc_arena *a = mlc_arena_new();
    mlc_error err;
    mlc_module *m = mlc_parse_module(a, "usage.py", U[i].src, &err);
    CHECK_MSG(m != NULL, "parse: %s", err.msg);
    if (m) {
      mlc_gpu_limits lim;
      mlc_gpu_limits_sm80(&lim);
      mlc_gpu_usage u;
      CHECK_MSG(mlc_gpu_verify(m->funcs[0], &lim, &u, &err), "%s", err.msg);
      CHECK_MSG(u.shared_bytes == U[i].shared, "case %d: shared %lld", i,
                (long long)u.shared_bytes);
      CHECK_MSG(u.local_bytes == U[i].local, "case %d: local %lld", i, (long long)u.local_bytes);
      CHECK_MSG(u.threads == U[i].threads, "case %d: threads %lld", i, (long long)u.threads);
      CHECK(u.n_kernels == 1);
    }
    mlc_arena_free(a);
  }
}

/* ---- the design space ---------------------------------------------------------------- */

/* An independent check of the simplest limits, written apart from the
 * verifier: every store lies under a thread-bound loop, and along each
 * path the threadIdx extents multiply to at most max_threads, the vthread
 * extents to at most max_vthread, and vectorized float32 loops have at
 * most 4 lanes. */
typedef struct path_check {
  int64_t threads[3], vthreads;
  int bound; /* thread-bound loops above */
  bool ok;
  char why[160];
} path_check;

static void path_walk(const mlc_stmt *st, path_check *pc, const mlc_gpu_limits *lim) {
  if (!st || !pc->ok) return;
  switch (st->kind) {
  case MLC_STMT_FOR: {
    int64_t ext = -1;
    mlc_expr_is_const_int(st->loop.extent, &ext);
    path_check saved = *pc;
    if (st->loop.kind == MLC_FOR_THREAD_BINDING) {
      const char *t = st->loop.thread;
      int axis = t[strlen(t) - 1] == 'y' ? 1 : t[strlen(t) - 1] == 'z' ? 2 : 0;
      if (strncmp(t, "threadIdx", 9) == 0) pc->threads[axis] = ext;
      if (strncmp(t, "vthread", 7) == 0) pc->vthreads *= ext;
      pc->bound++;
    }
    if (st->loop.kind == MLC_FOR_VECTORIZED && ext * 4 > 16)
      pc->ok = false, snprintf(pc->why, sizeof pc->why, "vector of %lld lanes", (long long)ext);
    if (st->loop.kind == MLC_FOR_PARALLEL)
      pc->ok = false, snprintf(pc->why, sizeof pc->why, "parallel loop");
    int64_t prod = pc->threads[0] * pc->threads[1] * pc->threads[2];
    if (prod > lim->max_threads_per_block || pc->vthreads > lim->max_vthread)
      pc->ok = false,
      snprintf(pc->why, sizeof pc->why, "%lld threads, %lld vthreads at loop %s", (long long)prod,
               (long long)pc->vthreads, st->loop.var->name);
    path_walk(st->loop.body, pc, lim);
    bool ok = pc->ok;
    char why[160];
    memcpy(why, pc->why, sizeof why);
    *pc = saved;
    pc->ok = ok;
    memcpy(pc->why, why, sizeof why);
    return;
  }
  case MLC_STMT_BLOCK_REALIZE:
    path_walk(st->realize.block->init, pc, lim);
    path_walk(st->realize.block->body, pc, lim);
    return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) path_walk(st->seq.stmts[i], pc, lim);
    return;
  case MLC_STMT_IF:
    path_walk(st->if_.then_s, pc, lim);
    path_walk(st->if_.else_s, pc, lim);
    return;
  case MLC_STMT_ALLOCATE: path_walk(st->alloc.body, pc, lim); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE:
    if (pc->bound == 0) pc->ok = false, snprintf(pc->why, sizeof pc->why, "store on the host");
    return;
  }
}

static bool paths_within_limits(const mlc_prim_func *f, const mlc_gpu_limits *lim, char *why) {
  path_check pc = {.threads = {1, 1, 1}, .vthreads = 1, .ok = true};
  path_walk(f->body, &pc, lim);
  if (!pc.ok) memcpy(why, pc.why, sizeof pc.why);
  return pc.ok;
}

typedef struct space_task {
  const char *task;
  const char *big;   /* shape for the verifier samples */
  int n_samples;
  const char *small; /* shape for the interpreter runs */
  int n_runs;
  int min_distinct;  /* distinct programs expected among the samples */
} space_task;

static const space_task TASKS[] = {
    /* tiled: the repair must not collapse the space onto a few programs */
    {"matmul", "512,512,512", 600, "32,64,32", 6, 500},
    {"batch_matmul", "8,256,256,256", 450, "2,16,32,16", 4, 350},
    {"dense_bias_relu", "256,512,512", 450, "16,32,32", 4, 350},
    {"conv2d_nchw", "1,64,56,56,64,3,3,1,1", 450, "1,4,8,8,8,3,3,1,1", 6, 350},
    /* auto-bound: 5 unroll steps times the thread counts (4 per reduction,
     * 6 for the elementwise block; vecadd's split is fixed) */
    {"softmax", "256,1024", 250, "8,64", 4, 20}, /* 4 thread counts x 5 unroll steps: all of it */
    {"vecadd", "1048576", 250, "3000", 4, 5},
};

static mlc_prim_func *build_task(mlc_arena *a, const char *task, const char *shape) {
  const mlc_task_def *d = mlc_task_find(task);
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error err;
  if (!d || !mlc_task_parse_shape(d, shape, sh, &err)) return NULL;
  return mlc_task_build(a, d, sh);
}

/* The GPU space through the design-space interface, sm_80's limits. */
static mlc_tuner_opts space_opts(uint64_t seed) {
  mlc_tuner_opts o = {.max_innermost_factor = 64, .seed = seed, .num_cores = 1,
                      .max_jobs_per_core = 16, .max_vectorize_extent = 64,
                      .space = &mlc_tuner_space_gpu};
  mlc_gpu_limits_sm80(&o.gpu_limits);
  return o;
}

/* A raw draw: the sketch replayed with fresh decisions and postprocessed,
 * without the repair the GPU space's sample does: how often the limits
 * would reject it. */
static bool raw_draw_passes(const mlc_prim_func *f, const mlc_trace *t, uint64_t seed,
                            const mlc_tuner_opts *o) {
  mlc_sched *s = mlc_sched_new(f, seed);
  mlc_replay_opts ro = {.new_decisions = true, .stop_at_postproc = true};
  mlc_error err;
  bool ok = mlc_sched_replay(s, t, &ro, NULL, &err) && mlc_tuner_postproc(s, o, &err);
  mlc_sched_free(s);
  return ok;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static long g_samples, g_raw_failed, g_raw_drawn, g_runs;

static void sample_task(const space_task *t) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = build_task(a, t->task, t->big);
  CHECK_MSG(f != NULL, "%s: build", t->task);
  mlc_gpu_limits lim;
  mlc_gpu_limits_sm80(&lim);
  mlc_error err;
  mlc_tuner_opts o = space_opts(7);
  mlc_tuner_space *sp = f ? mlc_tuner_space_new(f, &o, &err) : NULL;
  CHECK_MSG(sp != NULL, "%s: space: %s", t->task, err.msg);
  int passed = 0, rejected = 0, bad = 0, indep_bad = 0, raw_failed = 0, n_raw = t->n_samples / 8;
  int64_t max_threads = 0, max_shared = 0;
  uint64_t *hashes = mlc_xmalloc(sizeof(uint64_t) * (size_t)(t->n_samples + 1));
  int n_hashes = 0;
  for (int i = 0; sp && i < t->n_samples; i++) {
    uint64_t seed = 1000003u * (uint64_t)i + 17;
    mlc_sched *s = mlc_tuner_space_sample(sp, i % mlc_tuner_space_count(sp), seed, &err);
    if (!s) {
      if (rejected++ == 0) CHECK_MSG(false, "%s: sample %d rejected: %s", t->task, i, err.msg);
      continue;
    }
    hashes[n_hashes++] = mlc_func_struct_hash(mlc_sched_func(s));
    mlc_gpu_usage u;
    char why[160];
    if (!paths_within_limits(mlc_sched_func(s), &lim, why) && indep_bad++ == 0)
      CHECK_MSG(false, "%s: sample %d: independent check: %s", t->task, i, why);
    const mlc_prim_func *sf = mlc_sched_func(s);
    if (mlc_gpu_verify(sf, &lim, &u, &err) && mlc_verify_func(sf, &err)) {
      passed++;
      if (u.threads > max_threads) max_threads = u.threads;
      if (u.shared_bytes > max_shared) max_shared = u.shared_bytes;
    } else if (bad++ == 0) {
      CHECK_MSG(false, "%s: sample %d fails the verifier: %s", t->task, i, err.msg);
    }
    mlc_sched_free(s);
    if (i < n_raw && !raw_draw_passes(f, mlc_tuner_space_trace(sp, 0), seed, &o))
      raw_failed++;
  }
  CHECK_MSG(passed == t->n_samples, "%s: %d of %d passed", t->task, passed, t->n_samples);
  qsort(hashes, (size_t)n_hashes, sizeof *hashes, cmp_u64);
  int distinct = n_hashes > 0;
  for (int i = 1; i < n_hashes; i++) distinct += hashes[i] != hashes[i - 1];
  mlc_free(hashes);
  CHECK_MSG(distinct >= t->min_distinct, "%s: only %d distinct programs of %d", t->task,
            distinct, n_hashes);
  printf("# %s [%s]: %d samples (%d distinct programs), %d pass the sm_80 verifier, %d "
         "rejected; max threads %lld, max shared %lld B; unrepaired draws failing: %d of %d\n",
         t->task, t->big, t->n_samples, distinct, passed, rejected, (long long)max_threads,
         (long long)max_shared, raw_failed, n_raw);
  g_samples += passed;
  g_raw_failed += raw_failed;
  g_raw_drawn += n_raw;
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}


/* The space uses the rules it claims: matmul's sketch tiles, binds the
 * three levels, caches in shared and local, fetches cooperatively. */
static void test_space_matmul_structure(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = build_task(a, "matmul", "256,256,256");
  mlc_gpu_limits lim;
  mlc_gpu_limits_sm80(&lim);
  mlc_error err;
  mlc_tuner_opts o = space_opts(3);
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s", err.msg);
  if (sp) {
    mlc_str txt = {0};
    mlc_trace_print(&txt, mlc_tuner_space_trace(sp, 0));
    const char *want[] = {"n=5", "n=3", "\"blockIdx.x\"", "\"vthread.x\"", "\"threadIdx.x\"",
                          "storage_scope=\"local\"", "storage_scope=\"shared\"",
                          "meta_schedule.cooperative_fetch", "candidates=[0, 16, 64, 512, 1024]"};
    for (int i = 0; i < MLC_COUNTOF(want); i++)
      CHECK_MSG(strstr(mlc_str_cstr(&txt), want[i]), "sketch lacks %s", want[i]);
    mlc_sched *s = mlc_tuner_space_sample(sp, 0, 99, &err);
    CHECK_MSG(s != NULL, "%s", err.msg);
    if (s) {
      mlc_str_clear(&txt);
      mlc_print_func(&txt, mlc_sched_func(s));
      CHECK(strstr(mlc_str_cstr(&txt), "scope=\"shared\"") != NULL);
      CHECK(strstr(mlc_str_cstr(&txt), "pragma_auto_unroll_max_step") != NULL ||
            strstr(mlc_str_cstr(&txt), "meta_schedule.unroll_explicit") == NULL);
      CHECK(strstr(mlc_str_cstr(&txt), "meta_schedule.cooperative_fetch") == NULL);
      mlc_sched_free(s);
    }
    mlc_str_free(&txt);
    mlc_tuner_space_free(sp);
  }
  mlc_arena_free(a);
}

/* ---- same results as the unscheduled program ------------------------------------------ */

static bool run_func(const mlc_prim_func *f, mlc_array **args, mlc_error *err) {
  mlc_array tmp[16];
  for (int i = 0; i < f->n_params && i < 16; i++) tmp[i] = *args[i];
  return mlc_interp_run_n(f, f->n_params, tmp, err);
}

static void run_task(const space_task *t) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = build_task(a, t->task, t->small);
  CHECK_MSG(f != NULL, "%s: build", t->task);
  if (!f) {
    mlc_arena_free(a);
    return;
  }
  mlc_gpu_limits lim;
  mlc_gpu_limits_sm80(&lim);
  mlc_error err;
  mlc_tuner_opts o = space_opts(11);
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s: %s", t->task, err.msg);
  int n = f->n_params, out = n - 1, matched = 0;
  mlc_array *ref[16], *got[16];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 5, 1);
  for (int i = 0; i < n; i++) {
    ref[i] = mlc_array_for_buffer(f->params[i]);
    got[i] = mlc_array_for_buffer(f->params[i]);
    if (i != out) mlc_array_fill_random(ref[i], &rng);
    size_t bytes = (size_t)mlc_array_numel(ref[i]) * (size_t)mlc_dtype_bytes(ref[i]->dtype);
    memcpy(got[i]->data, ref[i]->data, bytes);
  }
  CHECK_MSG(run_func(f, ref, &err), "%s: reference: %s", t->task, err.msg);
  for (int k = 0; sp && k < t->n_runs; k++) {
    mlc_sched *s = mlc_tuner_space_sample(sp, k % mlc_tuner_space_count(sp), 7000 + (uint64_t)k * 31,
                                          &err);
    CHECK_MSG(s != NULL, "%s: sample: %s", t->task, err.msg);
    if (!s) continue;
    memset(got[out]->data, 0, (size_t)mlc_array_numel(got[out]) * sizeof(float)); /* float32 */
    double max_err = 0;
    bool ran = run_func(mlc_sched_func(s), got, &err);
    CHECK_MSG(ran, "%s: run: %s", t->task, err.msg);
    bool close = ran && mlc_array_allclose(got[out], ref[out], 1e-5, 1e-5, &max_err);
    CHECK_MSG(close, "%s: sample %d differs (max error %g)", t->task, k, max_err);
    /* the full trace (sketch, postprocessing) rebuilds the same program */
    mlc_sched *r = mlc_sched_new(f, 1);
    bool replayed = mlc_sched_replay(r, mlc_sched_trace(s), NULL, NULL, &err);
    CHECK_MSG(replayed, "%s: replay: %s", t->task, err.msg);
    CHECK_MSG(!replayed || mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)),
              "%s: replayed trace differs", t->task);
    mlc_sched_free(r);
    matched += close;
    mlc_sched_free(s);
  }
  printf("# %s [%s]: %d of %d samples match the unscheduled program in the interpreter\n",
         t->task, t->small, matched, t->n_runs);
  g_runs += matched;
  for (int i = 0; i < n; i++) mlc_array_free(ref[i]), mlc_array_free(got[i]);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}


/* The cuda backend (targets/cuda_*.c) sizes shared memory with its own
 * compaction and refuses what it cannot launch: for single-kernel tasks
 * every sample must pass it too, with the verifier's threads per block
 * and shared bytes (softmax's max and sum computed under each row's
 * thread, the design space's answer to a backend that launches one
 * kernel per function). */
static void test_cuda_backend_agrees(void) {
  mlc_target tgt;
  mlc_error err;
  if (!mlc_target_parse("cuda -arch=sm_80", &tgt, &err)) {
    printf("# skipped: no cuda target (%s)\n", err.msg);
    return;
  }
  int agree = 0, total = 0;
  for (int ti = 0; ti < MLC_COUNTOF(TASKS); ti++) {
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = build_task(a, TASKS[ti].task, TASKS[ti].big);
    mlc_gpu_limits lim;
    mlc_gpu_limits_sm80(&lim);
    mlc_tuner_opts o = space_opts(23);
    mlc_tuner_space *sp = f ? mlc_tuner_space_new(f, &o, &err) : NULL;
    CHECK_MSG(sp != NULL, "%s: %s", TASKS[ti].task, err.msg);
    int n_sk = sp ? mlc_tuner_space_count(sp) : 0;
    for (int i = 0; sp && i < 12 * n_sk; i++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, i % n_sk, 77 + (uint64_t)i, &err);
      CHECK_MSG(s != NULL, "%s: %s", TASKS[ti].task, err.msg);
      if (!s) continue;
      mlc_gpu_usage u;
      mlc_gpu_launch l;
      total++;
      bool ok = mlc_gpu_verify(mlc_sched_func(s), &lim, &u, &err) &&
                mlc_cuda_launch_info(&tgt, mlc_sched_func(s), &l, &err);
      CHECK_MSG(ok, "%s sample %d: %s", TASKS[ti].task, i, err.msg);
      int64_t threads = ok ? l.block[0] * l.block[1] * l.block[2] : -1;
      CHECK_MSG(!ok || (threads == u.threads && l.shared_bytes == u.shared_bytes),
                "%s sample %d: backend %lld threads, %lld shared bytes; verifier %lld, %lld",
                TASKS[ti].task, i, (long long)threads, (long long)l.shared_bytes,
                (long long)u.threads, (long long)u.shared_bytes);
      agree += ok && threads == u.threads && l.shared_bytes == u.shared_bytes;
      mlc_sched_free(s);
    }
    mlc_tuner_space_free(sp);
    mlc_arena_free(a);
  }
  printf("# cuda backend: %d of %d samples launchable with the verifier's threads and shared "
         "bytes\n",
         agree, total);
}

/* ---- the GPU default schedule (mlc-compile's, for kernels without a record) ---------- */

/* Each task's default schedule passes the verifier and the cuda backend at
 * the big shape, and computes what the unscheduled program does at the
 * small one (interpreter: thread bindings run as serial loops). */
static void default_task(const space_task *t) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_gpu_limits lim;
  mlc_gpu_limits_sm80(&lim);
  mlc_target tgt;
  bool have_cuda = mlc_target_parse("cuda -arch=sm_80", &tgt, &err);
  mlc_prim_func *big = build_task(a, t->task, t->big);
  mlc_prim_func *s = big ? mlc_tuner_gpu_default_schedule(a, big, &err) : NULL;
  mlc_gpu_launch l = {{0}, {0}, 0, 0};
  CHECK_MSG(s != NULL, "%s [%s]: %s", t->task, t->big, err.msg);
  CHECK_MSG(!s || mlc_gpu_verify(s, &lim, NULL, &err), "%s: verifier: %s", t->task, err.msg);
  CHECK_MSG(!s || !have_cuda || mlc_cuda_launch_info(&tgt, s, &l, &err), "%s: backend: %s",
            t->task, err.msg);
  CHECK_MSG(!s || !have_cuda || l.block[0] * l.block[1] * l.block[2] <= 256,
            "%s: %lld threads per block (at most 256)", t->task,
            (long long)(l.block[0] * l.block[1] * l.block[2]));

  mlc_prim_func *f = build_task(a, t->task, t->small);
  mlc_prim_func *fs = f ? mlc_tuner_gpu_default_schedule(a, f, &err) : NULL;
  CHECK_MSG(fs != NULL, "%s [%s]: %s", t->task, t->small, err.msg);
  if (fs) {
    int n = f->n_params, out = n - 1;
    mlc_array *ref[16], *got[16];
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, 9, 1);
    for (int i = 0; i < n; i++) {
      ref[i] = mlc_array_for_buffer(f->params[i]);
      got[i] = mlc_array_for_buffer(f->params[i]);
      if (i != out) mlc_array_fill_random(ref[i], &rng);
      memcpy(got[i]->data, ref[i]->data,
             (size_t)mlc_array_numel(ref[i]) * (size_t)mlc_dtype_bytes(ref[i]->dtype));
    }
    double max_err = 0;
    bool ran = run_func(f, ref, &err) && run_func(fs, got, &err);
    CHECK_MSG(ran, "%s: run: %s", t->task, err.msg);
    CHECK_MSG(!ran || mlc_array_allclose(got[out], ref[out], 1e-5, 1e-5, &max_err),
              "%s: the default schedule differs (max error %g)", t->task, max_err);
    for (int i = 0; i < n; i++) mlc_array_free(ref[i]), mlc_array_free(got[i]);
  }
  mlc_arena_free(a);
}

/* A kernel with no spatial loop to bind: refused, saying which. */
static void test_default_schedule_refuses(void) {
  static const char SRC[] =
      "@T.prim_func\n"
      "def total(A: T.Buffer((64,), \"float32\"), B: T.Buffer((1,), \"float32\")):\n"
      "    for k in range(64):\n"
      "        with T.block(\"B\"):\n"
      "            vk = T.axis.reduce(64, k)\n"
      "            with T.init():\n"
      "                B[0] = T.float32(0)\n"
      "            B[0] = B[0] + A[vk]\n";
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "total.py", SRC, &err);
  CHECK_MSG(m != NULL, "parse: %s", err.msg);
  mlc_prim_func *s = m ? mlc_tuner_gpu_default_schedule(a, m->funcs[0], &err) : NULL;
  CHECK(m && s == NULL);
  CHECK_MSG(!m || s || strstr(err.msg, "no GPU schedule for total"), "message: %s", err.msg);
  mlc_arena_free(a);
}

/* ---- through the tuner: the cuda target's kind selects the GPU space ---------------- */

/* Samples, mutants (tile sizes, unroll, ...: not repaired, so the
 * verifier may refuse some, as meta-schedule's VerifyGPUCode does) and
 * the evolutionary search's batches all pass the verifier. */
static void test_tuner_hook(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = build_task(a, "dense_bias_relu", "128,256,256");
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_error err;
  mlc_target cuda, llvm;
  bool parsed = mlc_target_parse("cuda -arch=sm_80", &cuda, &err);
  CHECK_MSG(parsed, "%s", err.msg);
  o.space = parsed ? mlc_tuner_space_for_target(&cuda) : &mlc_tuner_space_gpu;
  CHECK(o.space == &mlc_tuner_space_gpu);
  mlc_target_host(&llvm);
  CHECK(mlc_tuner_space_for_target(&llvm) == &mlc_tuner_space_cpu);
  o.population = 24;
  o.generations = 1;
  o.seed = 5;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s", err.msg);
  int n_mut = 0, mut_ok = 0, mut_bad = 0;
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 9, 3);
  for (int i = 0; sp && i < 40; i++) {
    mlc_sched *s = mlc_tuner_space_sample(sp, 0, 300 + (uint64_t)i, &err);
    CHECK_MSG(s != NULL, "sample: %s", err.msg);
    if (!s) continue;
    mlc_sched *again = mlc_tuner_apply_trace(f, mlc_sched_trace(s), &o, &err);
    CHECK_MSG(again && mlc_func_struct_equal(mlc_sched_func(again), mlc_sched_func(s)),
              "apply_trace: %s", again ? "differs" : err.msg);
    mlc_sched_free(again);
    mlc_sched *m = mlc_tuner_mutate(f, s, -1, &rng, &o, &err);
    n_mut++;
    if (m) {
      mlc_error e2;
      if (mlc_gpu_verify(mlc_sched_func(m), &o.gpu_limits, NULL, &e2)) mut_ok++;
      else mut_bad++;
      mlc_sched_free(m);
    }
    mlc_sched_free(s);
  }
  CHECK_MSG(mut_bad == 0, "%d mutants fail the verifier", mut_bad);
  CHECK_MSG(mut_ok > 0, "no valid mutant of %d", n_mut);
  mlc_tuner_space_free(sp);
  int n_batch = 0, batch_ok = 0;
  mlc_tuner_search *srch = mlc_tuner_search_new(f, &o, &err);
  CHECK_MSG(srch != NULL, "%s", err.msg);
  if (srch) {
    mlc_tuner_cand *batch;
    n_batch = mlc_tuner_search_next_batch(srch, 8, &batch, &err);
    CHECK_MSG(n_batch > 0, "next_batch: %d %s", n_batch, err.msg);
    for (int i = 0; i < n_batch; i++)
      batch_ok += mlc_gpu_verify(mlc_sched_func(batch[i].sched), &o.gpu_limits, NULL, &err);
    CHECK(batch_ok == n_batch);
    mlc_tuner_search_free(srch);
  }
  printf("# tuner with the GPU space: %d mutants valid of %d tried; search batch %d of %d verified\n",
         mut_ok, n_mut, batch_ok, n_batch);
  mlc_arena_free(a);
}

/* One case per task, named test_<what>_<task>, as RUN reports them. */
static void run_per_task(const char *what, void (*fn)(const space_task *)) {
  for (int i = 0; i < MLC_COUNTOF(TASKS); i++) {
    test_case_failed_ = 0;
    test_first_failure_[0] = 0;
    fn(&TASKS[i]);
    char name[64];
    snprintf(name, sizeof name, "%s_%s", what, TASKS[i].task);
    test_report(name, !test_case_failed_, test_first_failure_);
  }
}

int main(void) {
  RUN(test_verifier_cases);
  RUN(test_verifier_usage);
  RUN(test_space_matmul_structure);
  run_per_task("test_space", sample_task);
  run_per_task("test_run", run_task);
  RUN(test_tuner_hook);
  RUN(test_cuda_backend_agrees);
  run_per_task("test_default_schedule", default_task);
  RUN(test_default_schedule_refuses);
  printf("# total: %ld samples pass the GPU verifier; %ld of %ld unrepaired draws would fail it; "
         "%ld interpreter runs match\n",
         g_samples, g_raw_failed, g_raw_drawn, g_runs);
  return test_summary();
}
