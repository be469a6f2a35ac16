/* tools/gpu_check.sh's check of mlc-compile --target cuda on a real GPU:
 * linked with the objects and headers of
 *   mlc-compile --task vecadd --shape 1048576 --target cuda ... -o va.o --header va.h
 *   mlc-compile --task matmul --shape 1024,1024,1024 --target cuda ... -o mm.o --header mm.h
 * and libmlcrt's launcher (targets/runtime/cuda_launch.c), it calls each
 * kernel through its C entry point and checks the results against plain C.
 * Prints one line per kernel; exit 0 when both match. Not a test of the
 * suite (it needs a GPU; tests/cli/mlc_compile_cuda.sh checks the same
 * launcher against a fake driver).
 */
#include "mm.h"
#include "va.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { NV = 1 << 20, N = 1024 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int check_vecadd(void) {
  float *A = malloc(sizeof(float) * NV), *B = malloc(sizeof(float) * NV),
        *C = malloc(sizeof(float) * NV);
  for (int i = 0; i < NV; i++) A[i] = (float)(i % 1000), B[i] = 0.25f * (float)(i % 13), C[i] = -1;
  double t0 = now();
  int rc = vecadd_call(A, B, C);
  double t1 = now();
  int bad = 0;
  for (int i = 0; !rc && i < NV; i++) bad += C[i] != A[i] + B[i];
  if (rc) printf("vecadd: FAILED: %s\n", mlc_rt_cuda_error());
  else printf("vecadd 1048576: %s, first call %.2f ms (module load, copies in and out)\n",
              bad ? "MISMATCH" : "matches plain C", (t1 - t0) * 1e3);
  free(A), free(B), free(C);
  return rc || bad;
}

static int check_matmul(void) {
  float *A = malloc(sizeof(float) * N * N), *B = malloc(sizeof(float) * N * N),
        *C = malloc(sizeof(float) * N * N), *R = calloc((size_t)N * N, sizeof(float));
  for (int i = 0; i < N * N; i++)
    A[i] = (float)((i * 7) % 17) / 17.0f - 0.5f, B[i] = (float)((i * 5) % 23) / 23.0f - 0.5f;
  for (int i = 0; i < N; i++)
    for (int k = 0; k < N; k++)
      for (int j = 0; j < N; j++) R[i * N + j] += A[i * N + k] * B[k * N + j];
  int rc = matmul_call(A, B, C); /* the first call loads the module */
  double t0 = now();
  for (int r = 0; !rc && r < 5; r++) rc = matmul_call(A, B, C);
  double t1 = now();
  double max_err = 0, max_ref = 0;
  for (int i = 0; !rc && i < N * N; i++) {
    max_err = fmax(max_err, fabs((double)C[i] - R[i]));
    max_ref = fmax(max_ref, fabs((double)R[i]));
  }
  int bad = !rc && max_err > 1e-3 * fmax(max_ref, 1);
  if (rc) printf("matmul: FAILED: %s\n", mlc_rt_cuda_error());
  else printf("matmul 1024^3: max abs error %.3g (%s), %.2f ms per call with copies\n", max_err,
              bad ? "MISMATCH" : "matches plain C", (t1 - t0) * 1e3 / 5);
  free(A), free(B), free(C), free(R);
  return rc || bad;
}

int main(void) {
  int bad = check_vecadd();
  bad |= check_matmul();
  return bad;
}
