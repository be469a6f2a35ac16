/* float16 conversions for emitted code on CPUs without F16C (see mlcrt.h).
 * Round to nearest even, as the F16C instructions and ir/array.c do. */
#include "targets/runtime/mlcrt.h"

#include <string.h>

float __gnu_h2f_ieee(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (man << 13); /* inf, nan */
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign; /* zero */
  } else { /* subnormal half: normalize */
    int e = -1;
    do {
      e++;
      man <<= 1;
    } while (!(man & 0x400));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t __gnu_f2h_ieee(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; /* overflow: inf */
  if (e <= 0) {                        /* subnormal or zero half */
    if (e < -10) return sign;
    man |= 0x800000;
    int shift = 14 - e;
    uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into the exponent */
  return (uint16_t)(sign | half);
}
