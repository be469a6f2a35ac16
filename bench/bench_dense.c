/* Dense layers, y = x . w^T + b, with the default schedule (no tuning):
 * the weight packed by the layout pass ([N/n, K, n], the register tile)
 * against the same layer with w an input (today's plain kernel, w [N, K]
 * read by rows of j) and OpenBLAS sgemm (trans_b, the bias left out), all
 * in one process, in interleaved rounds. Shapes (MxNxK): the encoder's
 * fused dense + add (128x256x256) and ResNet-18's classifier
 * (1x1000x512), or those of --shape (repeatable; BERT-base's at 128
 * tokens: 128x768x768, 128x3072x768, 128x768x3072).
 * Each variant's output is checked against the plain C evaluation first.
 *
 *   bench_dense [--results FILE] [--rounds R] [--shape MxNxK ...]
 */
#include "bench/results.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/targets.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHAPES 8

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_dense: error: %s: %s\n", what, msg);
  exit(1);
}

/* dense(x, w) + b, w a weight or (w_input) an input. */
static char *dense_json(int M, int N, int K, bool w_input) {
  mlc_str s = {0};
  mlc_str_printf(&s, "{\"inputs\": [{\"name\": \"x\", \"shape\": [%d, %d]}", M, K);
  if (w_input) mlc_str_printf(&s, ", {\"name\": \"w\", \"shape\": [%d, %d]}", N, K);
  mlc_str_printf(&s, "], \"weights\": [");
  if (!w_input) mlc_str_printf(&s, "{\"name\": \"w\", \"shape\": [%d, %d]}, ", N, K);
  mlc_str_printf(&s, "{\"name\": \"b\", \"shape\": [%d]}], \"nodes\": ["
                     "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]},"
                     "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"d\", \"b\"]}],"
                     " \"outputs\": [\"y\"]}", N);
  return mlc_str_take(&s);
}

/* One layer compiled with the default schedule, its arrays checked. */
typedef struct layer {
  mlc_gmodule *m, *ref;
  bench_variant v;
  bench_model_io io;
} layer;

static void layer_build(mlc_arena *a, const mlc_target *t, int M, int N, int K, bool w_input, layer *l) {
  mlc_error err;
  char *json = dense_json(M, N, K, w_input);
  l->m = mlc_graph_parse("dense.json", json, strlen(json), NULL, &err);
  l->ref = mlc_graph_parse("dense.json", json, strlen(json), NULL, &err);
  mlc_free(json);
  if (!l->m || !l->ref || !mlc_graph_run_pipeline(l->m, NULL, NULL, NULL, &err)) die("dense", err.msg);
  l->v = (bench_variant){.name = w_input ? "plain" : "packed", .m = l->m};
  if (!bench_variant_build(a, &l->v, t, NULL, true, "bench_dense", &err) ||
      !bench_model_io_new(a, l->m, l->ref, &l->io, &err) || !bench_variant_check(&l->v, &l->io, &err))
    die(l->v.name, err.msg);
}

static void layer_free(layer *l) {
  bench_variant_free(&l->v);
  bench_model_io_free(&l->io);
  mlc_graph_free(l->m);
  mlc_graph_free(l->ref);
}

typedef struct gemm {
  int m, n, k;
  float *a, *b, *c;
} gemm;

static void call_sgemm(void *ctx) {
  gemm *g = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, g->k,
              0.0f, g->c, g->n);
}

static void run_layer(void *ctx) {
  bench_variant *v = ctx;
  bench_variant_run(v);
  if (v->failed) die(v->name, v->err.msg);
}

/* Medians over rounds of packed, plain and sgemm, in GFLOP/s; cases
 * appended to cs. */
static void bench_shape(mlc_arena *a, const mlc_target *t, int M, int N, int K, int rounds, bench_case *cs,
                        int *nc) {
  layer l[2];
  layer_build(a, t, M, N, K, false, &l[0]);
  layer_build(a, t, M, N, K, true, &l[1]);
  gemm g = {M, N, K, l[1].io.in[0]->data, l[1].io.in[1]->data, mlc_xmalloc(sizeof(float) * (size_t)M * N)};
  double *ms = mlc_xmalloc(sizeof(double) * 3 * (size_t)rounds);
  for (int r = 0; r < rounds; r++) {
    ms[r] = bench_time_ms(run_layer, &l[0].v, 3, 20);
    ms[rounds + r] = bench_time_ms(run_layer, &l[1].v, 3, 20);
    ms[2 * rounds + r] = bench_time_ms(call_sgemm, &g, 3, 20);
  }
  double gf[3], flops = 2.0 * M * N * K;
  for (int k = 0; k < 3; k++) gf[k] = flops / (bench_median(ms + k * rounds, rounds) * 1e6);
  double load[1] = {-1};
  getloadavg(load, 1);
  const char *shape = mlc_arena_printf(a, "%dx%dx%d", M, N, K);
  const char *blas = mlc_arena_printf(a, "dense_%s_openblas_%dt", shape, t->num_cores);
  const char *note = mlc_arena_printf(a, "default schedule, bias add fused; median of %d rounds; load %.1f",
                                      rounds, load[0]);
  cs[(*nc)++] = (bench_case){mlc_arena_printf(a, "dense_%s_packed_%dt", shape, t->num_cores), gf[0],
                             "GFLOP/s", blas, gf[2], note};
  cs[(*nc)++] = (bench_case){mlc_arena_printf(a, "dense_%s_plain_%dt", shape, t->num_cores), gf[1],
                             "GFLOP/s", blas, gf[2], "w an input: not packed"};
  cs[(*nc)++] = (bench_case){blas, gf[2], "GFLOP/s", NULL, 0, "cblas_sgemm, no bias"};
  mlc_free(ms);
  mlc_free(g.c);
  layer_free(&l[0]);
  layer_free(&l[1]);
}

int main(int argc, char **argv) {
  bench_openblas_coretype(argv);
  const char *results = "bench/results.json";
  int rounds = 7, ns = 0;
  int shapes[MAX_SHAPES][3];
  for (int i = 1; i < argc; i++) {
    int *sh = ns < MAX_SHAPES ? shapes[ns] : NULL;
    char end;
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && sh &&
             sscanf(argv[++i], "%dx%dx%d%c", &sh[0], &sh[1], &sh[2], &end) == 3 && sh[0] > 0 && sh[1] > 0 &&
             sh[2] > 0 && (double)sh[0] * sh[1] * sh[2] <= 0x1p32)
      ns++;
    else {
      fprintf(stderr, "usage: bench_dense [--results FILE] [--rounds R] [--shape MxNxK ...] (at most %d shapes, "
                      "each dimension >= 1, M*N*K <= 2^32)\n", MAX_SHAPES);
      return 2;
    }
  }
  if (rounds < 1) rounds = 1;
  if (ns == 0) {
    memcpy(shapes[ns++], (int[3]){128, 256, 256}, sizeof shapes[0]);
    memcpy(shapes[ns++], (int[3]){1, 1000, 512}, sizeof shapes[0]);
  }
  mlc_error err;
  mlc_target t;
  mlc_target_host(&t);
  mlc_arena *a = mlc_arena_new();
  bench_case cs[3 * MAX_SHAPES];
  int nc = 0;
  for (int k = 0; k < ns; k++) bench_shape(a, &t, shapes[k][0], shapes[k][1], shapes[k][2], rounds, cs, &nc);
  for (int i = 0; i < nc; i++) bench_print(&cs[i]);
  if (!bench_write_results(results, nc, cs, &err)) die(results, err.msg);
  mlc_arena_free(a);
  return 0;
}
