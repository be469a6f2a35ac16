/* The extern function the tmm16 tensor intrinsic calls (the notes'
 * accel_tmm_add): C[16x16] += A[16x16] @ B[16x16]^T, each operand a tile
 * of a row-major buffer with the given row stride (in elements). Link it
 * with an object whose kernels were tensorized with tmm16:
 *   mlc-ir build matmul.py --trace tmm16_trace.json -o mm.o --header mm.h
 *   cc main.c mm.o tmm16.c build/libmlcrt.a -lpthread -lm */
#include <stdint.h>

int32_t tmm16(float *c, const float *a, const float *b, int32_t sa, int32_t sb, int32_t sc);

int32_t tmm16(float *c, const float *a, const float *b, int32_t sa, int32_t sb, int32_t sc) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float acc = c[i * sc + j];
      for (int k = 0; k < 16; k++) acc += a[i * sa + k] * b[j * sb + k];
      c[i * sc + j] = acc;
    }
  return 0;
}
