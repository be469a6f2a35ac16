/* 64-bit hashing (the same on every platform) and PCG32.
 * PCG32 is pcg32 XSH-RR with a stream selector, as published by O'Neill
 * (pcg-random.org, "pcg32_random_r" / "pcg32_srandom_r"). */
#include "base/base.h"

#include <string.h>

/* Hash bytes: a multiply-xorshift mix over 8-byte little-endian words. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t mlc_hash_bytes(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  uint64_t h = mix64(seed ^ (0x9e3779b97f4a7c15ULL + n));
  while (n >= 8) {
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--) w = (w << 8) | b[i];
    h = mix64(h ^ w) * 0x9e3779b97f4a7c15ULL;
    b += 8;
    n -= 8;
  }
  uint64_t w = 0;
  for (int i = (int)n - 1; i >= 0; i--) w = (w << 8) | b[i];
  return mix64(h ^ w ^ ((uint64_t)n << 56));
}

uint64_t mlc_hash_combine(uint64_t h, uint64_t v) {
  return mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

uint64_t mlc_hash_str(const char *s, uint64_t seed) {
  return mlc_hash_bytes(s, strlen(s), seed);
}

void mlc_pcg32_seed(mlc_pcg32 *r, uint64_t initstate, uint64_t initseq) {
  r->state = 0;
  r->inc = (initseq << 1u) | 1u;
  mlc_pcg32_next(r);
  r->state += initstate;
  mlc_pcg32_next(r);
}

uint32_t mlc_pcg32_next(mlc_pcg32 *r) {
  uint64_t old = r->state;
  r->state = old * 6364136223846793005ULL + r->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
  uint32_t rot = (uint32_t)(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

uint32_t mlc_pcg32_bounded(mlc_pcg32 *r, uint32_t bound) {
  MLC_ASSERT(bound > 0);
  uint32_t threshold = -bound % bound; /* reject the biased low range */
  for (;;) {
    uint32_t x = mlc_pcg32_next(r);
    if (x >= threshold) return x % bound;
  }
}

double mlc_pcg32_double(mlc_pcg32 *r) {
  uint64_t hi = mlc_pcg32_next(r) >> 5, lo = mlc_pcg32_next(r) >> 6;
  return (double)(hi * 67108864.0 + lo) / 9007199254740992.0;
}

float mlc_pcg32_uniform(mlc_pcg32 *r, float lo, float hi) {
  float u = (float)(mlc_pcg32_next(r) >> 8) / 16777216.0f;
  return lo + (hi - lo) * u;
}
