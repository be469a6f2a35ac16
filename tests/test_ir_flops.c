/* mlc_func_flops (ir/flops.c) against FLOP counts worked out by hand:
 * matmul, matmul + relu, conv2d with and without padding (tasks and
 * TVMScript), softmax, a split with T.where (counted over the block's
 * domain, not the padded loops), and integer-only code (no flops). */
#include "base/base.h"
#include "ir/ir.h"
#include "tasks/tasks.h"
#include "tests/test.h"

static mlc_prim_func *parse_file(mlc_arena *a, const char *path) {
  mlc_error err;
  size_t len;
  char *text = mlc_read_file(path, &len, &err);
  if (!text) return NULL;
  mlc_module *m = mlc_parse_module(a, path, text, &err);
  mlc_free(text);
  return m && m->n_funcs > 0 ? m->funcs[0] : NULL;
}

static mlc_prim_func *parse_text(mlc_arena *a, const char *text) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "test.py", text, &err);
  return m && m->n_funcs > 0 ? m->funcs[0] : NULL;
}

static double task_flops(mlc_arena *a, const char *task, const char *shape, double *by_task) {
  mlc_error err;
  const mlc_task_def *d = mlc_task_find(task);
  int64_t s[MLC_TASK_MAX_DIMS];
  if (!d || !mlc_task_parse_shape(d, shape, s, &err)) return -1;
  *by_task = mlc_task_flops(d, s);
  return mlc_func_flops(mlc_task_build(a, d, s));
}

/* C[i,j] += A[i,k] * B[k,j]: a multiply and an add per (i,j,k). */
static void test_matmul(void) {
  mlc_arena *a = mlc_arena_new();
  double by_task;
  CHECK(task_flops(a, "matmul", "16,24,20", &by_task) == 2.0 * 16 * 24 * 20);
  CHECK(by_task == 2.0 * 16 * 24 * 20);
  /* Y = A @ B (2 * 128^3), then C = max(Y, 0): one per element. */
  mlc_prim_func *f = parse_file(a, "tests/golden/mm_relu.py");
  CHECK(f != NULL);
  if (f) CHECK(mlc_func_flops(f) == 2.0 * 128 * 128 * 128 + 128 * 128);
  mlc_arena_free(a);
}

/* conv2d N=1, C=3, 8x8, K=4, 3x3: 2 * N*K*OH*OW * C*R*S; the padding block
 * (if_then_else on integer conditions) adds nothing. */
static void test_conv2d(void) {
  mlc_arena *a = mlc_arena_new();
  double by_task;
  CHECK(task_flops(a, "conv2d_nchw", "1,3,8,8,4,3,3,1,0", &by_task) == 2.0 * 4 * 6 * 6 * 27);
  CHECK(task_flops(a, "conv2d_nchw", "1,3,8,8,4,3,3,1,1", &by_task) == 2.0 * 4 * 8 * 8 * 27);
  CHECK(by_task == 2.0 * 4 * 8 * 8 * 27);
  CHECK(task_flops(a, "conv2d_nchw", "2,3,9,9,4,3,3,2,1", &by_task) == 2.0 * 2 * 4 * 5 * 5 * 27);
  mlc_arena_free(a);
}

static const char *padded_conv =
    "@T.prim_func\n"
    "def conv(X: T.Buffer((1, 2, 6, 6), \"float32\"), W: T.Buffer((3, 2, 3, 3), \"float32\"),\n"
    "         Y: T.Buffer((1, 3, 6, 6), \"float32\")):\n"
    "    P = T.alloc_buffer((1, 2, 8, 8))\n"
    "    for n, c, h, w in T.grid(1, 2, 8, 8):\n"
    "        with T.block(\"pad\"):\n"
    "            vn, vc, vh, vw = T.axis.remap(\"SSSS\", [n, c, h, w])\n"
    "            P[vn, vc, vh, vw] = T.if_then_else(1 <= vh and vh < 7 and 1 <= vw and vw < 7,\n"
    "                                               X[vn, vc, vh - 1, vw - 1], T.float32(0))\n"
    "    for n, k, h, w, c, r, s in T.grid(1, 3, 6, 6, 2, 3, 3):\n"
    "        with T.block(\"conv\"):\n"
    "            vn, vk, vh, vw, vc, vr, vs = T.axis.remap(\"SSSSRRR\", [n, k, h, w, c, r, s])\n"
    "            with T.init():\n"
    "                Y[vn, vk, vh, vw] = T.float32(0)\n"
    "            Y[vn, vk, vh, vw] = Y[vn, vk, vh, vw] + P[vn, vc, vh + vr, vw + vs] * W[vk, vc, vr, vs]\n";

/* The hand-written padded conv: 2 * (3*6*6) * (2*3*3), padding free. */
static void test_padded_conv_script(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_text(a, padded_conv);
  CHECK(f != NULL);
  if (f) CHECK_MSG(mlc_func_flops(f) == 2.0 * 3 * 6 * 6 * 2 * 3 * 3, "got %g", mlc_func_flops(f));
  mlc_arena_free(a);
}

/* softmax rows x cols: max (1), subtract and exp (2), sum (1), the
 * reciprocal of the sum and the product by it (2) per element: 6 * rows *
 * cols, as the task's own count says. */
static void test_softmax(void) {
  mlc_arena *a = mlc_arena_new();
  double by_task;
  CHECK(task_flops(a, "softmax", "4,10", &by_task) == 6.0 * 4 * 10);
  CHECK(by_task == 6.0 * 4 * 10);
  mlc_arena_free(a);
}

/* Rows of 50 split 7 x 8 under T.where: 24 * 50 adds (the block's domain),
 * not 24 * 56 (the loops); the init and the copy-out add nothing. */
static void test_split_where(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_file(a, "tests/kernels/rowsum_split.py");
  CHECK(f != NULL);
  if (f) CHECK_MSG(mlc_func_flops(f) == 24.0 * 50, "got %g", mlc_func_flops(f));
  mlc_arena_free(a);
}

/* Integer arithmetic is not floating-point work. */
static void test_int_only(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_text(
      a, "@T.prim_func\n"
         "def f(A: T.Buffer((16,), \"int32\"), B: T.Buffer((16,), \"int32\")):\n"
         "    for i in range(16):\n"
         "        with T.block(\"b\"):\n"
         "            vi = T.axis.spatial(16, i)\n"
         "            B[vi] = A[vi] * 3 + vi\n");
  CHECK(f != NULL);
  if (f) CHECK_MSG(mlc_func_flops(f) == 0, "got %g", mlc_func_flops(f));
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_matmul);
  RUN(test_conv2d);
  RUN(test_padded_conv_script);
  RUN(test_softmax);
  RUN(test_split_where);
  RUN(test_int_only);
  return test_summary();
}
