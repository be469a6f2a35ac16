/* Typed tensor files: .npy (frontend/npy.c) and ONNX TensorProto files
 * (mlc_onnx_tensor_parse) in every dtype they read: float32, int64, int32,
 * bool, uint8, int8. Round trips, exact int64 values beyond 2^53, and the
 * refusals (descrs we do not read, a bool byte other than 0/1, dtypes out
 * of range). The float32 header checks are in test_graph. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"
#include "tests/test.h"

#include <unistd.h>

#define TMP "/tmp/mlc_test_frontend_npy.npy"

/* "\x93NUMPY" v1.0 with dict as its header, then data_bytes bytes of data. */
static size_t npy_bytes(char *buf, const char *dict, const void *data, size_t data_bytes) {
  size_t n = strlen(dict);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(n & 0xff), buf[9] = (char)(n >> 8);
  memcpy(buf + 10, dict, n);
  memcpy(buf + 10 + n, data, data_bytes);
  return 10 + n + data_bytes;
}

typedef struct rt_case {
  mlc_dtype dtype;
  const char *descr;
  const void *data;
} rt_case;

/* Each dtype through mlc_npy_write and back, byte for byte, with the
 * descr numpy writes for it. */
static void test_npy_roundtrip_dtypes(void) {
  static const float f[6] = {-1.5f, 0, 3.25f, 1e30f, -0.0f, 7};
  static const int64_t i64[6] = {(INT64_C(1) << 53) + 1, INT64_MAX, INT64_MIN, -1, 0,
                                 INT64_C(9007199254740993)};
  static const int32_t i32[6] = {INT32_MIN, INT32_MAX, -7, 0, 1, 123456789};
  static const uint8_t b[6] = {0, 1, 1, 0, 0, 1};
  static const uint8_t u8[6] = {0, 255, 128, 7, 1, 200};
  static const int8_t i8[6] = {-128, 127, -1, 0, 5, -77};
  static const rt_case cases[] = {
      {MLC_FLOAT32, "'<f4'", f}, {MLC_INT64, "'<i8'", i64}, {MLC_INT32, "'<i4'", i32},
      {MLC_BOOL, "'|b1'", b},    {MLC_UINT8, "'|u1'", u8},  {MLC_INT8, "'|i1'", i8},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    const rt_case *c = &cases[i];
    mlc_gtype t = {c->dtype, 2, {2, 3}}, u;
    mlc_error err = {{0}};
    CHECK_MSG(mlc_npy_write(TMP, &t, c->data, &err), "%s", err.msg);
    size_t len;
    char *text = test_read_file(TMP, &len);
    /* the dict starts after the magic, version and length (which hold NULs) */
    CHECK_MSG(text && len > 10 && strstr(text + 10, c->descr), "%s: no %s in the header", mlc_dtype_name(c->dtype),
              c->descr);
    mlc_free(text);
    void *d = mlc_npy_read(TMP, &u, &err);
    size_t bytes = 6 * (size_t)mlc_dtype_bytes(c->dtype);
    CHECK_MSG(d && mlc_gtype_equal(&t, &u) && memcmp(d, c->data, bytes) == 0, "%s: %s",
              mlc_dtype_name(c->dtype), d ? "differs" : err.msg);
    mlc_free(d);
  }
  unlink(TMP);
}

/* int64 ids past 2^53 (where a double would round) come back exactly. */
static void test_npy_int64_exact(void) {
  int64_t v[3] = {(INT64_C(1) << 53) + 1, (INT64_C(1) << 62) + 3, -(INT64_C(1) << 60) - 1};
  char buf[256];
  size_t n = npy_bytes(buf, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", v,
                       sizeof v);
  mlc_gtype t;
  mlc_error err = {{0}};
  int64_t *d = mlc_npy_parse("ids.npy", buf, n, &t, &err);
  CHECK_MSG(d, "%s", err.msg);
  if (!d) return;
  CHECK(t.dtype == MLC_INT64 && t.ndim == 1 && t.shape[0] == 3);
  CHECK(d[0] == 9007199254740993LL && d[1] == v[1] && d[2] == v[2]);
  mlc_free(d);
}

typedef struct refuse_case {
  const char *name, *dict;
  int data_bytes;
  const char *want;
} refuse_case;

static const refuse_case refuse_cases[] = {
    {"float64", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
     "dtype '<f8' is not supported (accepted: '<f4' float32, '<i8' int64, '<i4' int32, "
     "'|b1' bool, '|u1' uint8, '|i1' int8"},
    {"float16", "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", 4,
     "dtype '<f2' is not supported (accepted: '<f4'"},
    {"big_endian_f4", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
     "dtype '>f4' is not supported"},
    {"big_endian_i8", "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", 16,
     "dtype '>i8' is not supported"},
    {"uint16", "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4,
     "dtype '<u2' is not supported"},
    {"int64_truncated", "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 16,
     "truncated data: 16 bytes for 24"},
    {"int32_trailing", "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", 16,
     "4 trailing bytes"},
    {"bool_fortran", "{'descr': '|b1', 'fortran_order': True, 'shape': (3,), }", 3,
     "Fortran order is not supported"},
    {"bool_huge", "{'descr': '|b1', 'fortran_order': False, 'shape': (1099511627776, 65536), }",
     0, "bad .npy header: the array has shape [1099511627776, 65536]"},
    {"int64_huge", "{'descr': '<i8', 'fortran_order': False, 'shape': (1099511627776, 8), }", 0,
     "bad .npy header: the array has shape [1099511627776, 8]"},
};

static void test_npy_refusals(void) {
  for (int i = 0; i < MLC_COUNTOF(refuse_cases); i++) {
    const refuse_case *c = &refuse_cases[i];
    char buf[512], data[64] = {0};
    size_t n = npy_bytes(buf, c->dict, data, (size_t)c->data_bytes);
    mlc_gtype t;
    mlc_error err = {{0}};
    void *d = mlc_npy_parse("w.npy", buf, n, &t, &err);
    char name[96], why[1200];
    snprintf(name, sizeof name, "npy_refuse_%s", c->name);
    snprintf(why, sizeof why, "got \"%s\"", d ? "(accepted)" : err.msg);
    test_report(name, !d && strstr(err.msg, c->want) && strstr(err.msg, "w.npy"), why);
    mlc_free(d);
  }
}

/* A bool byte other than 0 or 1: refused, naming the element. */
static void test_npy_bad_bool(void) {
  uint8_t v[6] = {0, 1, 1, 0, 2, 1};
  char buf[256];
  size_t n = npy_bytes(buf, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", v,
                       sizeof v);
  mlc_gtype t;
  mlc_error err = {{0}};
  void *d = mlc_npy_parse("mask.npy", buf, n, &t, &err);
  CHECK(!d);
  CHECK_MSG(strstr(err.msg, "mask.npy: bool element 4 at (1, 1) is 2, not 0 or 1"), "%s",
            err.msg);
  v[4] = 1;
  n = npy_bytes(buf, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", v, sizeof v);
  d = mlc_npy_parse("mask.npy", buf, n, &t, &err);
  CHECK_MSG(d && t.dtype == MLC_BOOL, "%s", err.msg);
  mlc_free(d);
}

/* Dtypes .npy does not read are not written either (nothing is left behind). */
static void test_npy_write_refused(void) {
  uint16_t v[2] = {0};
  mlc_gtype t = {MLC_FLOAT16, 1, {2}};
  mlc_error err = {{0}};
  unlink(TMP);
  CHECK(!mlc_npy_write(TMP, &t, v, &err));
  CHECK_MSG(strstr(err.msg, TMP) && strstr(err.msg, "float16"), "%s", err.msg);
  CHECK(access(TMP, F_OK) != 0);
  t.dtype = MLC_BFLOAT16;
  CHECK(!mlc_npy_write(TMP, &t, v, &err) && strstr(err.msg, "bfloat16"));
}

/* ---- ONNX TensorProto files ------------------------------------------------ */

/* t packed into heap bytes (mlc_free). */
static uint8_t *pack(const Onnx__TensorProto *t, size_t *len) {
  *len = onnx__tensor_proto__get_packed_size(t);
  uint8_t *b = mlc_xmalloc(*len + 1);
  onnx__tensor_proto__pack(t, b);
  return b;
}

/* A tensor of dims {n} and data_type dt: raw bytes when raw, else the
 * typed field's values from i32 / i64 / f. */
static void *onnx_read(int32_t dt, int64_t n, const void *raw, size_t raw_len, int32_t *i32,
                       int64_t *i64, float *f, mlc_gtype *type, mlc_error *err) {
  Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
  int64_t dims[1] = {n};
  t.n_dims = 1, t.dims = dims;
  t.has_data_type = 1, t.data_type = dt;
  if (raw) t.has_raw_data = 1, t.raw_data.len = raw_len, t.raw_data.data = (uint8_t *)raw;
  if (i32) t.n_int32_data = (size_t)n, t.int32_data = i32;
  if (i64) t.n_int64_data = (size_t)n, t.int64_data = i64;
  if (f) t.n_float_data = (size_t)n, t.float_data = f;
  size_t len;
  uint8_t *b = pack(&t, &len);
  void *d = mlc_onnx_tensor_parse("input_0.pb", b, len, type, err);
  mlc_free(b);
  return d;
}

static void test_onnx_tensor_dtypes(void) {
  mlc_gtype t;
  mlc_error err = {{0}};
  float f[3] = {1.5f, -2, 0.25f};
  float *df = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, NULL, 0, NULL, NULL, f, &t, &err);
  CHECK_MSG(df && t.dtype == MLC_FLOAT32 && memcmp(df, f, sizeof f) == 0, "%s", err.msg);
  mlc_free(df);
  int64_t ids[3] = {(INT64_C(1) << 53) + 1, INT64_MIN, 42};
  int64_t *d64 = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 3, ids, sizeof ids, NULL, NULL,
                           NULL, &t, &err); /* raw_data, little-endian */
  CHECK_MSG(d64 && t.dtype == MLC_INT64 && memcmp(d64, ids, sizeof ids) == 0, "%s", err.msg);
  mlc_free(d64);
  d64 = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 3, NULL, 0, NULL, ids, NULL, &t, &err);
  CHECK_MSG(d64 && t.dtype == MLC_INT64 && memcmp(d64, ids, sizeof ids) == 0, "%s", err.msg);
  mlc_free(d64);
  int32_t i32[3] = {INT32_MIN, -5, INT32_MAX};
  int32_t *d32 = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 3, NULL, 0, i32, NULL, NULL, &t,
                           &err);
  CHECK_MSG(d32 && t.dtype == MLC_INT32 && memcmp(d32, i32, sizeof i32) == 0, "%s", err.msg);
  mlc_free(d32);
  d32 = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 3, i32, sizeof i32, NULL, NULL, NULL, &t,
                  &err);
  CHECK_MSG(d32 && t.dtype == MLC_INT32 && memcmp(d32, i32, sizeof i32) == 0, "%s", err.msg);
  mlc_free(d32);
  int32_t bools[3] = {1, 0, 1};
  uint8_t *db = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 3, NULL, 0, bools, NULL, NULL, &t,
                          &err);
  CHECK_MSG(db && t.dtype == MLC_BOOL && db[0] == 1 && db[1] == 0 && db[2] == 1, "%s", err.msg);
  mlc_free(db);
  uint8_t braw[3] = {0, 1, 1};
  db = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 3, braw, 3, NULL, NULL, NULL, &t, &err);
  CHECK_MSG(db && t.dtype == MLC_BOOL && memcmp(db, braw, 3) == 0, "%s", err.msg);
  mlc_free(db);
  int32_t i8v[3] = {-128, 127, -1};
  int8_t *d8 = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 3, NULL, 0, i8v, NULL, NULL, &t,
                         &err);
  CHECK_MSG(d8 && t.dtype == MLC_INT8 && d8[0] == -128 && d8[1] == 127 && d8[2] == -1, "%s",
            err.msg);
  mlc_free(d8);
  uint8_t u8raw[3] = {255, 0, 128};
  uint8_t *du8 = onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 3, u8raw, 3, NULL, NULL, NULL,
                           &t, &err);
  CHECK_MSG(du8 && t.dtype == MLC_UINT8 && memcmp(du8, u8raw, 3) == 0, "%s", err.msg);
  mlc_free(du8);
}

static void test_onnx_tensor_refusals(void) {
  mlc_gtype t;
  mlc_error err = {{0}};
  double d2[2] = {1, 2};
  CHECK(!onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 2, d2, sizeof d2, NULL, NULL, NULL, &t,
                   &err));
  CHECK_MSG(strstr(err.msg, "input_0.pb: dtype float64 is not supported (float32, int64"), "%s",
            err.msg);
  int32_t bad_bool[3] = {1, 2, 0};
  CHECK(!onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 3, NULL, 0, bad_bool, NULL, NULL, &t,
                   &err));
  CHECK_MSG(strstr(err.msg, "input_0.pb: element 1 is 2, outside bool's range [0, 1]"), "%s",
            err.msg);
  uint8_t bad_raw[2] = {1, 9};
  CHECK(!onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 2, bad_raw, 2, NULL, NULL, NULL, &t, &err));
  CHECK_MSG(strstr(err.msg, "element 1 is 9, outside bool's range"), "%s", err.msg);
  int32_t big[1] = {300};
  CHECK(!onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 1, NULL, 0, big, NULL, NULL, &t, &err));
  CHECK_MSG(strstr(err.msg, "element 0 is 300, outside uint8's range [0, 255]"), "%s", err.msg);
  int64_t short_raw[1] = {1};
  CHECK(!onnx_read(ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, short_raw, sizeof short_raw, NULL,
                   NULL, NULL, &t, &err));
  CHECK_MSG(strstr(err.msg, "raw_data has 8 bytes for 2 int64 values"), "%s", err.msg);
  CHECK(!mlc_onnx_tensor_parse("x.pb", "\xff\xff\xff", 3, &t, &err) &&
        strstr(err.msg, "x.pb: not a serialized ONNX TensorProto"));
}

int main(void) {
  RUN(test_npy_roundtrip_dtypes);
  RUN(test_npy_int64_exact);
  test_npy_refusals();
  RUN(test_npy_bad_bool);
  RUN(test_npy_write_refused);
  RUN(test_onnx_tensor_dtypes);
  RUN(test_onnx_tensor_refusals);
  return test_summary();
}
