/* Parallel kernels on a busy machine (issue 22): matmul 128^3, 512^3 and
 * 1024^3, hand-scheduled as bench/kernels/matmul_1024.py is (packed B, a
 * 4 x 16 register tile, a parallel loop over row blocks), next to OpenBLAS
 * with as many threads, in four conditions:
 *   quiet          nothing else started by the bench
 *   busy_cpuC      one process spinning, pinned to CPU C (each CPU in turn)
 *   forker         a neighbour that keeps forking children which allocate
 *                  and touch FORK_MB MB and exit (as a fuzzer does)
 * Each case is GFLOP/s (median of ROUNDS rounds, ours and OpenBLAS
 * alternating); its baseline is the same kernel quiet, so the ratio is the
 * share of its quiet speed it keeps. One busy neighbour on a 2-core
 * machine takes a core's worth: 50%.
 *
 *   bench_contention [--results FILE] [--threads T] [--quick]
 * --quick: 512^3 only, 3 rounds.
 */
#include "bench/results.h"
#include "targets/targets.h"

#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>

void openblas_set_num_threads(int n);

#define MAX_CONDS 10
#define FORK_MB 300

typedef struct kernel {
  int n;
  float *A, *B, *C, *Cref;
  mlc_object obj;
  mlc_jit_lib *lib;
  mlc_kernel_fn fn;
} kernel;

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_contention: error: %s: %s\n", what, msg);
  exit(1);
}

/* The hand-scheduled matmul of size n (a multiple of 32): rows in blocks
 * of rb (n / 16, at least 8) so the parallel loop has 16 iterations. */
static char *matmul_script(mlc_arena *a, int n) {
  int rb = n / 16 < 8 ? 8 : n / 16, nb = n / rb, nj = n / 16;
  return mlc_arena_printf(
      a,
      "@T.prim_func\n"
      "def matmul(A: T.Buffer((%d, %d), \"float32\"), B: T.Buffer((%d, %d), \"float32\"), "
      "C: T.Buffer((%d, %d), \"float32\")):\n"
      "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": True})\n"
      "    Bp = T.alloc_buffer((%d, %d, 16))\n"
      "    C_local = T.alloc_buffer((%d, %d), scope=\"local\")\n"
      "    for p0 in T.parallel(%d):\n"
      "        for pk in range(%d):\n"
      "            for p1 in T.vectorized(16):\n"
      "                with T.block(\"B_pack\"):\n"
      "                    vj0 = T.axis.spatial(%d, p0)\n"
      "                    vk = T.axis.spatial(%d, pk)\n"
      "                    vj1 = T.axis.spatial(16, p1)\n"
      "                    Bp[vj0, vk, vj1] = B[vk, vj0 * 16 + vj1]\n"
      "    for i0 in T.parallel(%d):\n"
      "        for j0 in range(%d):\n"
      "            for i1 in range(%d):\n"
      "                for i2 in T.unroll(4):\n"
      "                    for j1 in T.vectorized(16):\n"
      "                        with T.block(\"C_init\"):\n"
      "                            vi = T.axis.spatial(%d, i0 * %d + i1 * 4 + i2)\n"
      "                            vj = T.axis.spatial(%d, j0 * 16 + j1)\n"
      "                            C_local[vi, vj] = T.float32(0)\n"
      "                for k in range(%d):\n"
      "                    for i2 in T.unroll(4):\n"
      "                        for j1 in T.vectorized(16):\n"
      "                            with T.block(\"C_update\"):\n"
      "                                vi = T.axis.spatial(%d, i0 * %d + i1 * 4 + i2)\n"
      "                                vj = T.axis.spatial(%d, j0 * 16 + j1)\n"
      "                                vk = T.axis.reduce(%d, k)\n"
      "                                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * "
      "Bp[vj // 16, vk, vj %% 16]\n"
      "                for i2 in T.unroll(4):\n"
      "                    for j1 in T.vectorized(16):\n"
      "                        with T.block(\"C_store\"):\n"
      "                            vi = T.axis.spatial(%d, i0 * %d + i1 * 4 + i2)\n"
      "                            vj = T.axis.spatial(%d, j0 * 16 + j1)\n"
      "                            C[vi, vj] = C_local[vi, vj]\n",
      n, n, n, n, n, n, nj, n, n, n, nj, n, nj, n, nb, nj, rb / 4, n, rb, n, n, n, rb, n, n, n,
      rb, n);
}

static void run_ours(void *ctx) {
  kernel *k = ctx;
  void *args[3] = {k->A, k->B, k->C};
  k->fn(args);
}

static void run_blas(void *ctx) {
  kernel *k = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k->n, k->n, k->n, 1.0f, k->A, k->n, k->B,
              k->n, 0.0f, k->C, k->n);
}

/* C against OpenBLAS's result (allclose, rtol 1e-3, atol 1e-3 max |ref|). */
static void check_result(kernel *k) {
  size_t nn = (size_t)k->n * k->n;
  double scale = 0;
  for (size_t i = 0; i < nn; i++) scale = fmax(scale, fabs(k->Cref[i]));
  for (size_t i = 0; i < nn; i++)
    if (!(fabs((double)k->C[i] - k->Cref[i]) <= 1e-3 * scale + 1e-3 * fabs(k->Cref[i])))
      die("matmul", "result differs from OpenBLAS");
}

static void kernel_init(kernel *k, int n, const mlc_target *t, mlc_arena *a) {
  mlc_error err;
  size_t nn = (size_t)n * n;
  k->n = n;
  k->A = mlc_xmalloc(sizeof(float) * nn);
  k->B = mlc_xmalloc(sizeof(float) * nn);
  k->C = mlc_xmalloc(sizeof(float) * nn);
  k->Cref = mlc_xmalloc(sizeof(float) * nn);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, (uint64_t)n, 0);
  for (size_t i = 0; i < nn; i++) k->A[i] = mlc_pcg32_uniform(&rng, -1, 1);
  for (size_t i = 0; i < nn; i++) k->B[i] = mlc_pcg32_uniform(&rng, -1, 1);
  run_blas(k);
  memcpy(k->Cref, k->C, sizeof(float) * nn);
  mlc_module *m = mlc_parse_module(a, "matmul.py", matmul_script(a, n), &err);
  if (!m || !mlc_verify_module(m, &err)) die("matmul kernel", err.msg);
  const mlc_prim_func *f = m->funcs[0];
  const char *sym = mlc_arena_printf(a, "matmul_%d", n); /* JIT symbols are process-wide */
  if (!mlc_target_build(t, 1, &f, &sym, NULL, &k->obj, &err)) die("build", err.msg);
  k->lib = mlc_jit_load(&k->obj, &err);
  k->fn = k->lib ? mlc_jit_lookup(k->lib, sym, &err) : NULL;
  if (!k->fn) die("load", err.msg);
  memset(k->C, 0, sizeof(float) * nn);
  run_ours(k);
  check_result(k);
}

static void kernel_free(kernel *k) {
  mlc_jit_unload(k->lib);
  mlc_object_free(&k->obj);
  mlc_free(k->A);
  mlc_free(k->B);
  mlc_free(k->C);
  mlc_free(k->Cref);
}

/* ---- neighbours ------------------------------------------------------------ */

static void spin_forever(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  volatile uint64_t x = 0;
  for (;;) x++;
}

/* Fork children that allocate FORK_MB MB, touch every page and exit. */
static void fork_forever(void) {
  for (;;) {
    pid_t c = fork();
    if (c == 0) {
      size_t bytes = (size_t)FORK_MB << 20;
      char *p = malloc(bytes);
      if (p)
        for (size_t i = 0; i < bytes; i += 4096) p[i] = (char)i;
      _exit(p ? 0 : 1);
    }
    if (c > 0) waitpid(c, NULL, 0);
    else usleep(1000);
  }
}

/* Condition i: 0 quiet, 1..ncpu busy on CPU i-1, ncpu+1 the forker. */
static pid_t start_neighbour(int cond, int ncpu, const int *cpus) {
  if (cond == 0) return 0;
  pid_t pid = fork();
  if (pid < 0) die("fork", "cannot start the neighbour");
  if (pid == 0) {
    if (cond <= ncpu) spin_forever(cpus[cond - 1]);
    fork_forever();
  }
  usleep(300000); /* let it get going */
  return pid;
}

static void stop_neighbour(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  usleep(200000);
}

/* ---- main -------------------------------------------------------------------- */

int main(int argc, char **argv) {
  const char *results = "bench/results.json";
  int threads = mlc_target_host_cores();
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      fprintf(stderr, "usage: bench_contention [--results FILE] [--threads T] [--quick]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  int rounds = quick ? 3 : 5;
  /* The CPUs this process may use, for the pinned neighbours. */
  cpu_set_t own;
  int cpus[MAX_CONDS], ncpu = 0;
  if (sched_getaffinity(0, sizeof own, &own) != 0) die("affinity", "sched_getaffinity failed");
  for (int c = 0; c < CPU_SETSIZE && ncpu < MAX_CONDS - 2; c++)
    if (CPU_ISSET(c, &own)) cpus[ncpu++] = c;
  int nconds = ncpu + 2;

  mlc_error err;
  mlc_arena *a = mlc_arena_new();
  mlc_target t;
  char tstr[64];
  snprintf(tstr, sizeof tstr, "llvm -num-cores=%d", threads);
  if (!mlc_target_parse(tstr, &t, &err)) die("target", err.msg);
  openblas_set_num_threads(threads);

  int sizes[] = {128, 512, 1024};
  int nk = 0;
  kernel ks[3];
  for (int i = 0; i < 3; i++)
    if (!quick || sizes[i] == 512) kernel_init(&ks[nk++], sizes[i], &t, a);

  /* gf[cond][kernel][0: ours, 1: OpenBLAS] */
  double gf[MAX_CONDS][3][2];
  for (int cond = 0; cond < nconds; cond++) {
    pid_t nb = start_neighbour(cond, ncpu, cpus);
    for (int i = 0; i < nk; i++) {
      double flops = 2.0 * ks[i].n * ks[i].n * ks[i].n, v[2][8];
      for (int r = 0; r < rounds; r++) {
        v[0][r] = flops / (bench_time_ms(run_ours, &ks[i], 1, 200) * 1e6);
        v[1][r] = flops / (bench_time_ms(run_blas, &ks[i], 1, 200) * 1e6);
      }
      gf[cond][i][0] = bench_median(v[0], rounds);
      gf[cond][i][1] = bench_median(v[1], rounds);
    }
    stop_neighbour(nb);
  }

  MLC_VEC(bench_case) cases = {0};
  for (int cond = 0; cond < nconds; cond++) {
    const char *cname = cond == 0 ? "quiet"
                        : cond <= ncpu ? mlc_arena_printf(a, "busy_cpu%d", cpus[cond - 1])
                                       : "forker";
    for (int i = 0; i < nk; i++)
      for (int w = 0; w < 2; w++) {
        const char *who = w == 0 ? "ours" : mlc_arena_printf(a, "openblas_%dt", threads);
        bench_case c = {
            mlc_arena_printf(a, "contention_matmul_%d_%s_%s", ks[i].n, who, cname),
            gf[cond][i][w], "GFLOP/s",
            cond == 0 ? NULL : mlc_arena_printf(a, "%s_quiet", who), gf[0][i][w],
            mlc_arena_printf(a, "%d threads; %s; median of %d rounds alternating ours and "
                                "OpenBLAS; ratio: share of the quiet speed kept",
                             threads,
                             cond == 0 ? "nothing else started"
                             : cond <= ncpu ? "one spinning process pinned to that CPU"
                                            : "a neighbour forking children that touch "
                                              "300 MB each",
                             rounds)};
        MLC_VEC_PUSH(cases, c);
        bench_print(&c);
      }
  }
  bool ok = bench_write_results(results, cases.len, cases.data, &err);
  if (!ok) fprintf(stderr, "bench_contention: error: %s\n", err.msg);
  MLC_VEC_FREE(cases);
  for (int i = 0; i < nk; i++) kernel_free(&ks[i]);
  mlc_arena_free(a);
  return ok ? 0 : 1;
}
