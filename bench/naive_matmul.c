/* The unscheduled matmul loop nest in plain C, for `gcc -O3 -march=native`
 * (the Makefile compiles this file alone with those flags): the same
 * i, j, k order and init as the task's TensorIR. */
void bench_naive_matmul(int n, const float *A, const float *B, float *C);

void bench_naive_matmul(int n, const float *A, const float *B, float *C) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      C[i * n + j] = 0;
      for (int k = 0; k < n; k++) C[i * n + j] = C[i * n + j] + A[i * n + k] * B[k * n + j];
    }
}
