/* Sampling: perfect tiles and categorical choices, drawn from the state's
 * PCG32 and recorded with their decisions. */
#include "schedule/sched_impl.h"

#include <inttypes.h>
#include <math.h>

/* ---- perfect tiles ---------------------------------------------------------- */

/* Divisors of x in increasing order without storing them: small ones up to
 * sqrt(x), then the cofactors of the small ones in reverse. Returns the
 * divisor after prev (0 starts; 0 at the end). */
static int64_t next_divisor(int64_t x, int64_t prev) {
  int64_t d = prev + 1;
  for (; d * d <= x; d++)
    if (x % d == 0) return d;
  /* past sqrt: cofactors x / q for q descending from the largest q with q*q < x */
  for (int64_t q = x / d; q >= 1; q--) {
    if (x % q) continue;
    int64_t c = x / q;
    if (c > prev && c * c > x) return c;
  }
  return 0;
}

/* Number of ordered factorizations of x into n factors whose last (the
 * innermost) is <= maxi (maxi < 1: no limit). */
static uint64_t count_tiles(int64_t x, int n, int64_t maxi) {
  if (n == 1) return maxi < 1 || x <= maxi;
  uint64_t total = 0;
  for (int64_t d = next_divisor(x, 0); d; d = next_divisor(x, d))
    total += count_tiles(x / d, n - 1, maxi);
  return total;
}

/* The k-th factorization in the order count_tiles enumerates. */
static void nth_tile(int64_t x, int n, int64_t maxi, uint64_t k, int64_t *out) {
  for (int i = 0; i < n - 1; i++) {
    for (int64_t d = next_divisor(x, 0); d; d = next_divisor(x, d)) {
      uint64_t c = count_tiles(x / d, n - 1 - i, maxi);
      if (k < c) {
        out[i] = d;
        x /= d;
        break;
      }
      k -= c;
    }
  }
  out[n - 1] = x;
}

static bool tile_fits(const mlc_decision *d, int n, int64_t ext, int64_t maxi) {
  if (d->n != n) return false;
  int64_t prod = 1;
  for (int i = 0; i < n; i++) {
    if (d->v[i] < 1 || d->v[i] > ext) return false;
    if (mlc_mul_overflow(prod, d->v[i], &prod) || prod > ext) return false;
  }
  return prod == ext && (maxi < 1 || d->v[n - 1] <= maxi);
}

/* A decision for a symbolic extent of bound ext: its inner factors fit
 * (the outer one, recorded as sampled, becomes None). */
static bool inner_tile_fits(const mlc_decision *d, int n, int64_t ext, int64_t maxi) {
  if (d->n != n) return false;
  int64_t prod = 1;
  for (int i = 0; i < n; i++)
    if (d->v[i] < 1 || d->v[i] > ext) return false;
  for (int i = 1; i < n; i++)
    if (mlc_mul_overflow(prod, d->v[i], &prod) || prod > ext) return false;
  return maxi < 1 || n == 1 || d->v[n - 1] <= maxi;
}

/* A decision made for another extent, carried to this one (ext, a
 * constant): its inner factors kept where their product divides ext, the
 * outer one taking the rest. */
static bool carry_tile(const mlc_decision *d, int n, int64_t ext, int64_t maxi, mlc_decision *out) {
  if (!inner_tile_fits(d, n, ext, maxi)) return false;
  int64_t inner = 1;
  for (int i = 1; i < n; i++) inner *= d->v[i];
  if (ext % inner != 0) return false;
  *out = *d;
  out->v[0] = ext / inner;
  return true;
}

bool sched_sample_perfect_tile(mlc_sched *s, mlc_rv loop, int n, int max_innermost,
                               const mlc_decision *want, bool carry, bool *resampled, mlc_rv *out,
                               mlc_error *err) {
  char d[96];
  if (resampled) *resampled = false;
  if (!sched_check_loop(s, "sample_perfect_tile", loop, err)) return false;
  if (n < 1 || n > MLC_SCHED_MAX_TILE)
    return mlc_error_set(err, "sample_perfect_tile: %s: n must be 1 to %d, got %d",
                         sched_rv_desc(s, loop, d), MLC_SCHED_MAX_TILE, n);
  /* A symbolic extent is tiled as its bound is; its outer factor is then
   * None, so a split gives the outer loop what the inner ones leave at
   * the size the function runs at. */
  int64_t ext, lo;
  const mlc_expr *e = s->rvs.data[loop].loop->loop.extent;
  bool symbolic = !mlc_expr_is_const_int(e, &ext);
  if (symbolic && !mlc_size_range(s->func->n_sizes, s->func->sizes, e, &lo, &ext))
    return mlc_error_set(err, "sample_perfect_tile: %s: the loop's extent is not a constant",
                         sched_rv_desc(s, loop, d));
  if (ext < 1)
    return mlc_error_set(err, "sample_perfect_tile: %s: the loop's extent is not positive",
                         sched_rv_desc(s, loop, d));
  if (ext > (1 << 24))
    return mlc_error_set(err, "sample_perfect_tile: %s: extent %" PRId64 " is too large to tile",
                         sched_rv_desc(s, loop, d), ext);
  mlc_decision dec = {0};
  if (want && (symbolic ? inner_tile_fits(want, n, ext, max_innermost)
                        : tile_fits(want, n, ext, max_innermost))) {
    dec = *want;
  } else if (want && carry && !symbolic && carry_tile(want, n, ext, max_innermost, &dec)) {
    /* the inner tiles of another size */
  } else {
    uint64_t count = count_tiles(ext, n, max_innermost);
    if (count == 0 || count > UINT32_MAX)
      return mlc_error_set(err,
                           "sample_perfect_tile: %s: no factorization of %" PRId64
                           " into %d factors has innermost <= %d",
                           sched_rv_desc(s, loop, d), ext, n, max_innermost);
    if (want && resampled) *resampled = true;
    dec.n = n;
    nth_tile(ext, n, max_innermost, mlc_pcg32_bounded(&s->rng, (uint32_t)count), dec.v);
  }
  for (int i = 0; i < n; i++)
    out[i] = sched_new_rv(s, MLC_RV_VALUE, NULL, NULL, symbolic && i == 0 ? -1 : dec.v[i]);
  mlc_operand in = MLC_OP_RV(loop);
  mlc_attr at[2] = {sched_attr_int("n", n), sched_attr_int("max_innermost_factor", max_innermost)};
  mlc_inst *inst = sched_record(s, MLC_INST_SAMPLE_PERFECT_TILE, 1, &in, 2, at, n, out);
  inst->decision = dec;
  return true;
}

bool mlc_sched_sample_perfect_tile(mlc_sched *s, mlc_rv loop, int n, int max_innermost_factor,
                                   mlc_rv *out, mlc_error *err) {
  return sched_sample_perfect_tile(s, loop, n, max_innermost_factor, NULL, false, NULL, out, err);
}

/* ---- categorical --------------------------------------------------------------- */

bool sched_sample_categorical(mlc_sched *s, int n, const int64_t *cands, const double *probs,
                              const mlc_decision *want, bool *resampled, mlc_rv *out,
                              mlc_error *err) {
  if (resampled) *resampled = false;
  if (n < 1) return mlc_error_set(err, "sample_categorical: needs at least one candidate");
  double sum = 0;
  for (int i = 0; i < n; i++) {
    if (!(probs[i] >= 0) || !isfinite(probs[i]))
      return mlc_error_set(err, "sample_categorical: probability %d is %g, must be >= 0", i,
                           probs[i]);
    sum += probs[i];
  }
  if (!(sum > 0)) return mlc_error_set(err, "sample_categorical: the probabilities are all 0");
  int64_t idx;
  if (want && want->n == 1 && want->v[0] >= 0 && want->v[0] < n) {
    idx = want->v[0];
  } else {
    if (want && resampled) *resampled = true;
    double u = mlc_pcg32_double(&s->rng) * sum, acc = 0;
    idx = n - 1;
    for (int i = 0; i < n; i++) {
      acc += probs[i];
      if (u < acc && probs[i] > 0) {
        idx = i;
        break;
      }
    }
    while (probs[idx] == 0) idx--; /* rounding at the top end */
  }
  *out = sched_new_rv(s, MLC_RV_VALUE, NULL, NULL, cands[idx]);
  mlc_attr at[2] = {
      {.key = "candidates", .kind = MLC_ATTR_INTS, .n = n, .ints = (int64_t *)cands},
      {.key = "probs", .kind = MLC_ATTR_FLOATS, .n = n, .floats = (double *)probs},
  };
  mlc_inst *inst = sched_record(s, MLC_INST_SAMPLE_CATEGORICAL, 0, NULL, 2, at, 1, out);
  inst->decision.n = 1;
  inst->decision.v[0] = idx;
  return true;
}

bool mlc_sched_sample_categorical(mlc_sched *s, int n, const int64_t *candidates,
                                  const double *probs, mlc_rv *out, mlc_error *err) {
  return sched_sample_categorical(s, n, candidates, probs, NULL, NULL, out, err);
}

void mlc_sched_enter_postproc(mlc_sched *s) {
  sched_record(s, MLC_INST_ENTER_POSTPROC, 0, NULL, 0, NULL, 0, NULL);
}
