/* mlc_array: dense row-major tensors for the interpreter, the measurement
 * harness and tests; IEEE binary16 conversions. */
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- float16 ----------------------------------------------------------- */

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float mlc_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    /* Zero or subnormal: mant * 2^-24 is exact in float. */
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* bfloat16 is the upper half of a float32: widening is exact; narrowing
 * rounds to nearest even on the 16 dropped bits (a carry into the exponent
 * gives the next binade or infinity, as it should); NaN stays a quiet NaN
 * with its sign, never rounding into infinity. */
float mlc_bf16_to_float(uint16_t h) { return bits_float((uint32_t)h << 16); }

uint16_t mlc_float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* Round to nearest even in every range (after F. Giesen's
 * float_to_half_fast3_rtne): normal halves round by integer arithmetic on
 * the bits; subnormal halves let the FPU round by adding a magic constant
 * whose ulp is the half subnormal step 2^-24. */
uint16_t mlc_float_to_half(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t o;
  if (x >= (143u << 23)) { /* >= 2^16 (or inf/nan): saturates to inf */
    o = x > 0x7f800000u ? (uint16_t)(0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u;
  } else if (x < (113u << 23)) { /* below the smallest normal half 2^-14 */
    const float magic = bits_float(126u << 23); /* 0.5: ulp 2^-24 */
    o = (uint16_t)(float_bits(bits_float(x) + magic) - float_bits(magic));
  } else {
    uint32_t mant_odd = (x >> 13) & 1u;
    x += ((uint32_t)(15 - 127) << 23) + 0xfffu + mant_odd;
    o = (uint16_t)(x >> 13); /* a carry into the exponent gives inf at the top */
  }
  return (uint16_t)(o | (sign >> 16));
}

/* ---- arrays ------------------------------------------------------------ */

mlc_array *mlc_array_new(mlc_dtype t, int ndim, const int64_t *shape) {
  MLC_ASSERT(ndim >= 0 && ndim <= 8);
  mlc_array *x = mlc_xmalloc(sizeof *x);
  x->dtype = t;
  x->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    MLC_ASSERT(shape[i] >= 0);
    x->shape[i] = shape[i];
  }
  int64_t n = mlc_array_numel(x);
  size_t bytes = (size_t)n * (size_t)mlc_dtype_bytes(t);
  x->data = mlc_xmalloc(bytes ? bytes : 1);
  return x;
}

mlc_array *mlc_array_try_new(mlc_dtype t, int ndim, const int64_t *shape, const char *what,
                             mlc_error *err) {
  if (ndim < 0 || ndim > 8)
    return mlc_error_set(err, "%s has %d dimensions, arrays have at most 8", what, ndim), NULL;
  int64_t n = mlc_tensor_numel_checked(what, shape, ndim, mlc_dtype_bytes(t), err);
  if (n < 0) return NULL;
  size_t bytes = (size_t)n * (size_t)mlc_dtype_bytes(t);
  mlc_array *x = mlc_malloc(sizeof *x);
  void *data = mlc_malloc(bytes ? bytes : 1);
  if (!x || !data) {
    mlc_free(x);
    mlc_free(data);
    return mlc_error_set(err, "%s: out of memory allocating %zu bytes", what, bytes), NULL;
  }
  memset(data, 0, bytes);
  *x = (mlc_array){.dtype = t, .ndim = ndim, .data = data};
  memcpy(x->shape, shape, sizeof *shape * (size_t)ndim);
  return x;
}

static bool buffer_size_ok(const mlc_prim_func *f, const mlc_buffer *b, mlc_error *err) {
  char what[160];
  snprintf(what, sizeof what, "%.40s: buffer %.100s", f->name, b->name);
  return mlc_tensor_numel_checked(what, b->shape, b->ndim, mlc_dtype_bytes(b->dtype), err) >= 0;
}

typedef struct sizes_ctx {
  const mlc_prim_func *f;
  mlc_error *err;
} sizes_ctx;

/* Whether st allocates a buffer past the limit (err then names it). */
static bool allocates_too_much(const mlc_stmt *st, void *ud) {
  sizes_ctx *c = ud;
  if (st->kind == MLC_STMT_ALLOCATE) return !buffer_size_ok(c->f, st->alloc.buf, c->err);
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = st->realize.block;
  for (int i = 0; i < b->n_allocs; i++)
    if (!buffer_size_ok(c->f, b->allocs[i], c->err)) return true;
  return false;
}

static bool stmt_sizes_ok(const mlc_prim_func *f, const mlc_stmt *st, mlc_error *err) {
  sizes_ctx c = {f, err};
  return !mlc_stmt_any(st, allocates_too_much, &c);
}

bool mlc_func_check_sizes(const mlc_prim_func *f, mlc_error *err) {
  /* A parameter of symbolic extents is as large as the caller's array
   * (whose size is checked where it is made), not its bound. */
  for (int i = 0; i < f->n_params; i++)
    if (!f->params[i]->dims && !buffer_size_ok(f, f->params[i], err)) return false;
  return stmt_sizes_ok(f, f->body, err);
}

mlc_array *mlc_array_for_buffer(const mlc_buffer *b) {
  return mlc_array_new(b->dtype, b->ndim, b->shape);
}

void mlc_array_free(mlc_array *x) {
  if (!x) return;
  mlc_free(x->data);
  mlc_free(x);
}

int64_t mlc_array_numel(const mlc_array *x) {
  int64_t n = 1;
  for (int i = 0; i < x->ndim; i++) n *= x->shape[i];
  return n;
}

void mlc_array_fill_random(mlc_array *x, mlc_pcg32 *rng) {
  int64_t n = mlc_array_numel(x);
  for (int64_t i = 0; i < n; i++) {
    switch (x->dtype) {
    case MLC_BOOL: ((uint8_t *)x->data)[i] = (uint8_t)mlc_pcg32_bounded(rng, 2); break;
    case MLC_INT8: ((int8_t *)x->data)[i] = (int8_t)((int)mlc_pcg32_bounded(rng, 16) - 8); break;
    case MLC_UINT8: ((uint8_t *)x->data)[i] = (uint8_t)mlc_pcg32_bounded(rng, 16); break;
    case MLC_INT32: ((int32_t *)x->data)[i] = (int32_t)mlc_pcg32_bounded(rng, 16) - 8; break;
    case MLC_INT64: ((int64_t *)x->data)[i] = (int64_t)mlc_pcg32_bounded(rng, 16) - 8; break;
    case MLC_FLOAT32: ((float *)x->data)[i] = mlc_pcg32_uniform(rng, -1.0f, 1.0f); break;
    case MLC_FLOAT16: {
      uint16_t h = mlc_float_to_half(mlc_pcg32_uniform(rng, -1.0f, 1.0f));
      if (h == 0x3c00u) h = 0x3bffu; /* rounding reached 1.0: keep [-1, 1) */
      ((uint16_t *)x->data)[i] = h;
      break;
    }
    case MLC_BFLOAT16: {
      uint16_t h = mlc_float_to_bf16(mlc_pcg32_uniform(rng, -1.0f, 1.0f));
      if (h == 0x3f80u) h = 0x3f7fu; /* rounding reached 1.0: keep [-1, 1) */
      ((uint16_t *)x->data)[i] = h;
      break;
    }
    }
  }
}

double mlc_array_get(const mlc_array *x, int64_t i) {
  switch (x->dtype) {
  case MLC_BOOL: return ((const uint8_t *)x->data)[i] != 0;
  case MLC_INT8: return ((const int8_t *)x->data)[i];
  case MLC_UINT8: return ((const uint8_t *)x->data)[i];
  case MLC_BFLOAT16: return mlc_bf16_to_float(((const uint16_t *)x->data)[i]);
  case MLC_INT32: return ((const int32_t *)x->data)[i];
  case MLC_INT64: return (double)((const int64_t *)x->data)[i];
  case MLC_FLOAT16: return mlc_half_to_float(((const uint16_t *)x->data)[i]);
  case MLC_FLOAT32: return ((const float *)x->data)[i];
  }
  mlc_unreachable();
}

/* Truncate toward zero, saturating at the type's range; NaN gives 0. */
static int64_t double_to_int(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi; /* (double)INT64_MAX is 2^63: >= catches it */
  return (int64_t)v;
}

void mlc_array_set(mlc_array *x, int64_t i, double v) {
  switch (x->dtype) {
  case MLC_BOOL: ((uint8_t *)x->data)[i] = v != 0; return;
  case MLC_INT8: ((int8_t *)x->data)[i] = (int8_t)double_to_int(v, INT8_MIN, INT8_MAX); return;
  case MLC_UINT8: ((uint8_t *)x->data)[i] = (uint8_t)double_to_int(v, 0, UINT8_MAX); return;
  case MLC_BFLOAT16: ((uint16_t *)x->data)[i] = mlc_float_to_bf16((float)v); return;
  case MLC_INT32:
    ((int32_t *)x->data)[i] = (int32_t)double_to_int(v, INT32_MIN, INT32_MAX);
    return;
  case MLC_INT64: ((int64_t *)x->data)[i] = double_to_int(v, INT64_MIN, INT64_MAX); return;
  case MLC_FLOAT16: ((uint16_t *)x->data)[i] = mlc_float_to_half((float)v); return;
  case MLC_FLOAT32: ((float *)x->data)[i] = (float)v; return;
  }
  mlc_unreachable();
}

bool mlc_array_allclose(const mlc_array *x, const mlc_array *y, double rtol, double atol,
                        double *max_err) {
  double worst = 0;
  bool ok = true;
  int64_t n = mlc_array_numel(x);
  if (n != mlc_array_numel(y)) {
    if (max_err) *max_err = INFINITY;
    return false;
  }
  for (int64_t i = 0; i < n; i++) {
    double a = mlc_array_get(x, i), b = mlc_array_get(y, i);
    double d;
    if (isnan(a) && isnan(b)) continue; /* NaN where the reference has NaN */
    if (isnan(a) || isnan(b)) {
      d = INFINITY;
    } else if (a == b) {
      d = 0; /* also equal infinities, whose difference would be NaN */
    } else {
      d = fabs(a - b);
    }
    if (!(d <= atol + rtol * fabs(b))) ok = false;
    if (d > worst) worst = d;
  }
  if (max_err) *max_err = worst;
  return ok;
}
