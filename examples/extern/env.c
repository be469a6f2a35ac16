/* The library functions examples/extern/mlp_env.json calls (the notes'
 * env.relu and env.linear, 3.4-3.5), destination-passing as the header
 * mlc-compile writes declares them. The shapes are the model's: relu over
 * [1, 128], linear [1, 128] x [10, 128]^T + [10]. */
#include <stdint.h>

int32_t env_relu(const float *x, float *out) {
  for (int i = 0; i < 128; i++) out[i] = x[i] > 0 ? x[i] : 0;
  return 0;
}

int32_t env_linear(const float *x, const float *w, const float *b, float *out) {
  for (int j = 0; j < 10; j++) {
    float acc = b[j];
    for (int k = 0; k < 128; k++) acc += x[k] * w[j * 128 + k];
    out[j] = acc;
  }
  return 0;
}
