/* Verifier: accepts well-formed functions (built with the ir.h constructors
 * and parsed from the golden TVMScript files), rejects malformed ones with a
 * message that names what is wrong. */
#include "ir/ir.h"
#include "tests/test.h"

#include <dirent.h>
#include <stdlib.h>

static mlc_arena *A_;

/* ---- construction helpers ---------------------------------------------- */

static mlc_expr *v_(mlc_var *v) { return mlc_ref(A_, v); }
static mlc_expr *i_(int64_t x) { return mlc_int(A_, x); }

static mlc_buffer *buf1(const char *name, int64_t n) {
  return mlc_buffer_new(A_, name, MLC_FLOAT32, 1, (int64_t[]){n}, "global");
}

static mlc_buffer *buf2(const char *name, int64_t m, int64_t n) {
  return mlc_buffer_new(A_, name, MLC_FLOAT32, 2, (int64_t[]){m, n}, "global");
}

static mlc_expr *ld1(mlc_buffer *b, mlc_expr *x) { return mlc_load(A_, b, (mlc_expr *[]){x}); }
static mlc_expr *ld2(mlc_buffer *b, mlc_expr *x, mlc_expr *y) {
  return mlc_load(A_, b, (mlc_expr *[]){x, y});
}
static mlc_stmt *st1(mlc_buffer *b, mlc_expr *x, mlc_expr *val) {
  return mlc_store_new(A_, b, (mlc_expr *[]){x}, val);
}
static mlc_stmt *st2(mlc_buffer *b, mlc_expr *x, mlc_expr *y, mlc_expr *val) {
  return mlc_store_new(A_, b, (mlc_expr *[]){x, y}, val);
}

/* Region with the given starts and extents (NULL extents: points). */
static mlc_region region(mlc_buffer *b, mlc_expr **mins, const int64_t *exts) {
  mlc_region r = {b, MLC_NEW_ARRAY(A_, mlc_range, b->ndim)};
  for (int d = 0; d < b->ndim; d++)
    r.ranges[d] = (mlc_range){mins[d], i_(exts ? exts[d] : 1)};
  return r;
}

static mlc_region pt1(mlc_buffer *b, mlc_expr *x) { return region(b, (mlc_expr *[]){x}, NULL); }
static mlc_region pt2(mlc_buffer *b, mlc_expr *x, mlc_expr *y) {
  return region(b, (mlc_expr *[]){x, y}, NULL);
}

static void set_reads(mlc_block *b, int n, const mlc_region *r) {
  b->n_reads = n;
  b->reads = mlc_arena_memdup(A_, r, sizeof *r * (size_t)n);
}
static void set_writes(mlc_block *b, int n, const mlc_region *r) {
  b->n_writes = n;
  b->writes = mlc_arena_memdup(A_, r, sizeof *r * (size_t)n);
}

static void add_iter(mlc_block *b, mlc_var *v, int64_t extent, mlc_iter_kind k) {
  mlc_iter_var *it = MLC_NEW_ARRAY(A_, mlc_iter_var, b->n_iters + 1);
  if (b->n_iters) memcpy(it, b->iters, sizeof *it * (size_t)b->n_iters);
  it[b->n_iters++] = (mlc_iter_var){v, {i_(0), i_(extent)}, k};
  b->iters = it;
}

static mlc_stmt *loop(mlc_var *v, int64_t extent, mlc_stmt *body) {
  return mlc_for_new(A_, v, i_(0), i_(extent), MLC_FOR_SERIAL, body);
}

static mlc_stmt *thread_loop(mlc_var *v, int64_t extent, const char *tag, mlc_stmt *body) {
  mlc_stmt *s = mlc_for_new(A_, v, i_(0), i_(extent), MLC_FOR_THREAD_BINDING, body);
  s->loop.thread = tag;
  return s;
}

static mlc_prim_func *func(const char *name, int n, mlc_buffer **params, int n_allocs,
                           mlc_buffer **allocs, mlc_stmt *body) {
  mlc_prim_func *f = mlc_func_new(A_, name);
  f->n_params = n;
  f->params = mlc_arena_memdup(A_, params, sizeof *params * (size_t)n);
  mlc_block *root = mlc_block_new(A_, "root");
  root->n_allocs = n_allocs;
  root->allocs = n_allocs ? mlc_arena_memdup(A_, allocs, sizeof *allocs * (size_t)n_allocs) : NULL;
  root->body = body;
  f->body = mlc_realize_new(A_, root, NULL, NULL);
  return f;
}

/* ---- well-formed programs ------------------------------------------------ */

/* for i in range(16): with T.block("C"): vi = T.axis.spatial(16, i)
 *   C[vi] = A[vi] + B[vi]. Parts are exposed so cases can break them. */
typedef struct vecadd {
  mlc_prim_func *f;
  mlc_buffer *A, *B, *C;
  mlc_var *i, *vi;
  mlc_stmt *loop, *realize, *store;
  mlc_block *blk;
} vecadd;

static vecadd make_vecadd(void) {
  vecadd p;
  p.A = buf1("A", 16);
  p.B = buf1("B", 16);
  p.C = buf1("C", 16);
  p.i = mlc_var_new(A_, "i", MLC_INT32);
  p.vi = mlc_var_new(A_, "vi", MLC_INT32);
  p.blk = mlc_block_new(A_, "C");
  add_iter(p.blk, p.vi, 16, MLC_ITER_SPATIAL);
  set_reads(p.blk, 2, (mlc_region[]){pt1(p.A, v_(p.vi)), pt1(p.B, v_(p.vi))});
  set_writes(p.blk, 1, (mlc_region[]){pt1(p.C, v_(p.vi))});
  p.store = st1(p.C, v_(p.vi), mlc_add(A_, ld1(p.A, v_(p.vi)), ld1(p.B, v_(p.vi))));
  p.blk->body = p.store;
  p.realize = mlc_realize_new(A_, p.blk, (mlc_expr *[]){v_(p.i)}, NULL);
  p.loop = loop(p.i, 16, p.realize);
  p.f = func("main", 3, (mlc_buffer *[]){p.A, p.B, p.C}, 0, NULL, p.loop);
  return p;
}

/* Matmul with T.init: C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]. */
typedef struct matmul {
  mlc_prim_func *f;
  mlc_buffer *A, *B, *C;
  mlc_block *blk;
  mlc_var *vi, *vj, *vk;
} matmul;

static matmul make_matmul(int n) {
  matmul p;
  p.A = buf2("A", n, n);
  p.B = buf2("B", n, n);
  p.C = buf2("C", n, n);
  mlc_var *i = mlc_var_new(A_, "i", MLC_INT32), *j = mlc_var_new(A_, "j", MLC_INT32),
          *k = mlc_var_new(A_, "k", MLC_INT32);
  p.vi = mlc_var_new(A_, "vi", MLC_INT32);
  p.vj = mlc_var_new(A_, "vj", MLC_INT32);
  p.vk = mlc_var_new(A_, "vk", MLC_INT32);
  p.blk = mlc_block_new(A_, "C");
  add_iter(p.blk, p.vi, n, MLC_ITER_SPATIAL);
  add_iter(p.blk, p.vj, n, MLC_ITER_SPATIAL);
  add_iter(p.blk, p.vk, n, MLC_ITER_REDUCE);
  set_reads(p.blk, 2, (mlc_region[]){pt2(p.A, v_(p.vi), v_(p.vk)), pt2(p.B, v_(p.vk), v_(p.vj))});
  set_writes(p.blk, 1, (mlc_region[]){pt2(p.C, v_(p.vi), v_(p.vj))});
  p.blk->init = st2(p.C, v_(p.vi), v_(p.vj), mlc_float(A_, MLC_FLOAT32, 0));
  p.blk->body = st2(p.C, v_(p.vi), v_(p.vj),
                    mlc_add(A_, ld2(p.C, v_(p.vi), v_(p.vj)),
                            mlc_mul(A_, ld2(p.A, v_(p.vi), v_(p.vk)), ld2(p.B, v_(p.vk), v_(p.vj)))));
  mlc_stmt *r = mlc_realize_new(A_, p.blk, (mlc_expr *[]){v_(i), v_(j), v_(k)}, NULL);
  p.f = func("main", 3, (mlc_buffer *[]){p.A, p.B, p.C}, 0, NULL,
             loop(i, n, loop(j, n, loop(k, n, r))));
  return p;
}

/* The notes' GPU window sum after cache_read + compute_at + cooperative
 * fetching: a threadIdx.x loop inside a threadIdx.x loop, a binding that
 * leaves its domain where T.where excludes it, and a shared alloc. */
static mlc_prim_func *make_window_sum(int64_t inner_extent) {
  mlc_buffer *A = buf1("A", 1027), *B = buf1("B", 1024);
  mlc_buffer *S = mlc_buffer_new(A_, "A_shared", MLC_FLOAT32, 1, (int64_t[]){1027}, "shared");
  mlc_var *i0 = mlc_var_new(A_, "i_0", MLC_INT32), *i1 = mlc_var_new(A_, "i_1", MLC_INT32);
  mlc_var *a0 = mlc_var_new(A_, "ax0_0", MLC_INT32), *a1 = mlc_var_new(A_, "ax0_1", MLC_INT32);
  mlc_var *v0 = mlc_var_new(A_, "v0", MLC_INT32), *vi = mlc_var_new(A_, "vi", MLC_INT32);

  mlc_block *fetch = mlc_block_new(A_, "A_shared");
  add_iter(fetch, v0, 1027, MLC_ITER_SPATIAL);
  set_reads(fetch, 1, (mlc_region[]){pt1(A, v_(v0))});
  set_writes(fetch, 1, (mlc_region[]){pt1(S, v_(v0))});
  fetch->body = st1(S, v_(v0), ld1(A, v_(v0)));
  mlc_expr *pos = mlc_add(A_, mlc_mul(A_, v_(a0), i_(128)), v_(a1));
  mlc_expr *bind = mlc_add(A_, mlc_mul(A_, v_(i0), i_(128)), pos);
  mlc_expr *pred = mlc_binary(A_, MLC_EXPR_LT, mlc_add(A_, mlc_mul(A_, v_(a0), i_(128)), v_(a1)),
                              i_(130));
  mlc_stmt *fetch_nest =
      loop(a0, 2, thread_loop(a1, inner_extent, "threadIdx.x",
                              mlc_realize_new(A_, fetch, (mlc_expr *[]){bind}, pred)));

  mlc_block *c = mlc_block_new(A_, "C");
  add_iter(c, vi, 1024, MLC_ITER_SPATIAL);
  set_reads(c, 1, (mlc_region[]){region(S, (mlc_expr *[]){v_(vi)}, (int64_t[]){3})});
  set_writes(c, 1, (mlc_region[]){pt1(B, v_(vi))});
  c->body = st1(B, v_(vi),
                mlc_add(A_, mlc_add(A_, ld1(S, v_(vi)), ld1(S, mlc_add(A_, v_(vi), i_(1)))),
                        ld1(S, mlc_add(A_, v_(vi), i_(2)))));
  mlc_stmt *c_real = mlc_realize_new(
      A_, c, (mlc_expr *[]){mlc_add(A_, mlc_mul(A_, v_(i0), i_(128)), v_(i1))}, NULL);
  mlc_stmt *body = thread_loop(
      i0, 8, "blockIdx.x",
      thread_loop(i1, 128, "threadIdx.x", mlc_seq_new(A_, 2, (mlc_stmt *[]){fetch_nest, c_real})));
  return func("main", 2, (mlc_buffer *[]){A, B}, 1, (mlc_buffer *[]){S}, body);
}

/* Two blocks through an intermediate root alloc, with a pad read guarded by
 * T.if_then_else: Y[vi] = if 1 <= vi then X[vi - 1] else 0. */
static mlc_prim_func *make_pad_relu(bool guarded) {
  mlc_buffer *X = buf1("X", 16), *Z = buf1("Z", 16), *Y = buf1("Y", 16);
  mlc_var *i = mlc_var_new(A_, "i", MLC_INT32), *j = mlc_var_new(A_, "j", MLC_INT32);
  mlc_var *vi = mlc_var_new(A_, "vi", MLC_INT32), *vj = mlc_var_new(A_, "vj", MLC_INT32);
  mlc_block *p = mlc_block_new(A_, "pad");
  add_iter(p, vi, 16, MLC_ITER_SPATIAL);
  mlc_expr *shifted = ld1(X, mlc_sub(A_, v_(vi), i_(1)));
  mlc_expr *val = guarded ? mlc_if_then_else(A_, mlc_binary(A_, MLC_EXPR_LE, i_(1), v_(vi)),
                                             shifted, mlc_float(A_, MLC_FLOAT32, 0))
                          : shifted;
  set_reads(p, 1, (mlc_region[]){pt1(X, mlc_sub(A_, v_(vi), i_(1)))});
  set_writes(p, 1, (mlc_region[]){pt1(Y, v_(vi))});
  p->body = st1(Y, v_(vi), val);
  mlc_block *r = mlc_block_new(A_, "relu");
  add_iter(r, vj, 16, MLC_ITER_SPATIAL);
  set_reads(r, 1, (mlc_region[]){pt1(Y, v_(vj))});
  set_writes(r, 1, (mlc_region[]){pt1(Z, v_(vj))});
  r->body = st1(Z, v_(vj),
                mlc_binary(A_, MLC_EXPR_MAX, ld1(Y, v_(vj)), mlc_float(A_, MLC_FLOAT32, 0)));
  mlc_stmt *s1 = loop(i, 16, mlc_realize_new(A_, p, (mlc_expr *[]){v_(i)}, NULL));
  mlc_stmt *s2 = loop(j, 16, mlc_realize_new(A_, r, (mlc_expr *[]){v_(j)}, NULL));
  return func("main", 2, (mlc_buffer *[]){X, Z}, 1, (mlc_buffer *[]){Y},
              mlc_seq_new(A_, 2, (mlc_stmt *[]){s1, s2}));
}

/* ---- checking helpers -------------------------------------------------- */

static void expect_ok_(const mlc_prim_func *f, const char *file, int line) {
  mlc_error err = {{0}};
  if (!mlc_verify_func(f, &err)) test_fail_(file, line, "rejected: %s", err.msg);
}
#define expect_ok(f) expect_ok_((f), __FILE__, __LINE__)

/* Rejected, and the message contains every given fragment. */
static void expect_err_(const mlc_prim_func *f, const char *const *frags, const char *file,
                        int line) {
  mlc_error err = {{0}};
  if (mlc_verify_func(f, &err)) {
    test_fail_(file, line, "accepted, expected an error containing \"%s\"", frags[0]);
    return;
  }
  for (int i = 0; frags[i]; i++)
    if (!strstr(err.msg, frags[i])) {
      test_fail_(file, line, "message lacks \"%s\": %s", frags[i], err.msg);
      return;
    }
}
#define expect_err(f, ...) \
  expect_err_((f), (const char *const[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)

/* ---- accepted --------------------------------------------------------- */

static void test_ok_vecadd(void) { expect_ok(make_vecadd().f); }
static void test_ok_matmul_implicit_self_read(void) { expect_ok(make_matmul(8).f); }
static void test_ok_cooperative_fetch_with_where(void) { expect_ok(make_window_sum(128)); }
static void test_ok_if_then_else_out_of_bounds(void) { expect_ok(make_pad_relu(true)); }

/* Two reads of one buffer, each declared on its own: every access must lie
 * in some declared region (not their union in one). */
static void test_ok_two_reads_of_one_buffer(void) {
  static const char src[] =
      "@T.prim_func\n"
      "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
      "    for i in range(64):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(64, i)\n"
      "            T.reads(A[vi], A[T.min(vi + 1, 63)])\n"
      "            T.writes(B[vi])\n"
      "            B[vi] = A[vi] + A[T.min(vi + 1, 63)]\n";
  mlc_error err = {0};
  mlc_module *m = mlc_parse_module(A_, "two_reads.py", src, &err);
  CHECK_MSG(m != NULL, "parse: %s", err.msg);
  if (m) expect_ok(m->funcs[0]);
}

static void test_ok_module(void) {
  mlc_module *m = mlc_module_new(A_, "Module");
  mlc_module_add(A_, m, make_vecadd().f);
  mlc_prim_func *g = make_matmul(4).f;
  g->name = "mm";
  mlc_module_add(A_, m, g);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_verify_module(m, &err), "%s", err.msg);
}

/* Opaque (iter-less) inner blocks may use outer loop vars, as in TVM. */
static void test_ok_opaque_block_uses_loop_var(void) {
  vecadd p = make_vecadd();
  mlc_block *o = mlc_block_new(A_, "opaque");
  set_reads(o, 1, (mlc_region[]){pt1(p.A, v_(p.i))});
  set_writes(o, 1, (mlc_region[]){pt1(p.C, v_(p.i))});
  o->body = st1(p.C, v_(p.i), ld1(p.A, v_(p.i)));
  p.loop->loop.body = mlc_realize_new(A_, o, NULL, NULL);
  expect_ok(p.f);
}

/* Whole-buffer declared regions cover point accesses. */
static void test_ok_whole_buffer_region(void) {
  vecadd p = make_vecadd();
  set_reads(p.blk, 2, (mlc_region[]){region(p.A, (mlc_expr *[]){i_(0)}, (int64_t[]){16}),
                                     region(p.B, (mlc_expr *[]){i_(0)}, (int64_t[]){16})});
  expect_ok(p.f);
}

/* A block whose body loops over an inner loop: region relaxed over it. */
static void test_ok_inner_loop_in_block(void) {
  mlc_buffer *X = buf2("X", 4, 8), *Y = buf1("Y", 4);
  mlc_var *i = mlc_var_new(A_, "i", MLC_INT32), *k = mlc_var_new(A_, "k", MLC_INT32);
  mlc_var *vi = mlc_var_new(A_, "vi", MLC_INT32);
  mlc_block *b = mlc_block_new(A_, "rowsum");
  add_iter(b, vi, 4, MLC_ITER_SPATIAL);
  set_reads(b, 1, (mlc_region[]){region(X, (mlc_expr *[]){v_(vi), i_(0)}, (int64_t[]){1, 8})});
  set_writes(b, 1, (mlc_region[]){pt1(Y, v_(vi))});
  b->body = loop(k, 8, st1(Y, v_(vi), mlc_add(A_, ld1(Y, v_(vi)), ld2(X, v_(vi), v_(k)))));
  mlc_stmt *r = mlc_realize_new(A_, b, (mlc_expr *[]){v_(i)}, NULL);
  /* Y is read in the body without init: declare it too. */
  set_reads(b, 2, (mlc_region[]){b->reads[0], pt1(Y, v_(vi))});
  expect_ok(func("main", 2, (mlc_buffer *[]){X, Y}, 0, NULL, loop(i, 4, r)));
}

/* Split loop: vi = i0 * 4 + i1 stays in [0, 16) without a predicate. */
static void test_ok_split_binding(void) {
  vecadd p = make_vecadd();
  mlc_var *i0 = mlc_var_new(A_, "i0", MLC_INT32), *i1 = mlc_var_new(A_, "i1", MLC_INT32);
  p.realize->realize.values[0] = mlc_add(A_, mlc_mul(A_, v_(i0), i_(4)), v_(i1));
  p.f->body->realize.block->body = loop(i0, 4, loop(i1, 4, p.realize));
  expect_ok(p.f);
}

/* Fused loop: vi, vj = f // 4, f % 4. */
static void test_ok_fused_binding(void) {
  mlc_buffer *X = buf2("X", 4, 4), *Y = buf2("Y", 4, 4);
  mlc_var *fz = mlc_var_new(A_, "f", MLC_INT32);
  mlc_var *vi = mlc_var_new(A_, "vi", MLC_INT32), *vj = mlc_var_new(A_, "vj", MLC_INT32);
  mlc_block *b = mlc_block_new(A_, "copy");
  add_iter(b, vi, 4, MLC_ITER_SPATIAL);
  add_iter(b, vj, 4, MLC_ITER_SPATIAL);
  set_reads(b, 1, (mlc_region[]){pt2(X, v_(vi), v_(vj))});
  set_writes(b, 1, (mlc_region[]){pt2(Y, v_(vi), v_(vj))});
  b->body = st2(Y, v_(vi), v_(vj), ld2(X, v_(vi), v_(vj)));
  mlc_expr *vals[] = {mlc_binary(A_, MLC_EXPR_FLOORDIV, v_(fz), i_(4)),
                      mlc_binary(A_, MLC_EXPR_FLOORMOD, v_(fz), i_(4))};
  mlc_stmt *r = mlc_realize_new(A_, b, vals, NULL);
  expect_ok(func("main", 2, (mlc_buffer *[]){X, Y}, 0, NULL, loop(fz, 16, r)));
}

/* A decl_buffer (ALLOCATE) in scope may be used inside its body. */
static void test_ok_decl_buffer(void) {
  vecadd p = make_vecadd();
  mlc_buffer *T = mlc_buffer_new(A_, "T", MLC_FLOAT32, 1, (int64_t[]){1}, "local");
  mlc_stmt *s1 = st1(T, i_(0), ld1(p.A, v_(p.vi)));
  mlc_stmt *s2 = st1(p.C, v_(p.vi), mlc_add(A_, ld1(T, i_(0)), ld1(p.B, v_(p.vi))));
  p.blk->body = mlc_allocate_new(A_, T, mlc_seq_new(A_, 2, (mlc_stmt *[]){s1, s2}));
  expect_ok(p.f);
}

/* Blockized copy: outer block vo over 4 tiles, inner block vii inside a
 * loop ii of the outer block; the inner body uses the outer iter var vo
 * (allowed, as in the notes' tensorized matmul) and, if `use_loop`, the
 * outer block's loop var ii (not allowed). */
static mlc_prim_func *make_blockized(bool use_loop) {
  mlc_buffer *X = buf1("X", 16), *Y = buf1("Y", 16);
  mlc_var *io = mlc_var_new(A_, "io", MLC_INT32), *ii = mlc_var_new(A_, "ii", MLC_INT32);
  mlc_var *vo = mlc_var_new(A_, "vo", MLC_INT32), *vii = mlc_var_new(A_, "vii", MLC_INT32);
  mlc_block *in = mlc_block_new(A_, "inner");
  add_iter(in, vii, 4, MLC_ITER_SPATIAL);
  mlc_expr *pos = mlc_add(A_, mlc_mul(A_, v_(vo), i_(4)), v_(vii));
  mlc_expr *src = use_loop ? mlc_add(A_, mlc_mul(A_, v_(vo), i_(4)), v_(ii)) : pos;
  set_reads(in, 1, (mlc_region[]){pt1(X, src)});
  set_writes(in, 1, (mlc_region[]){pt1(Y, pos)});
  in->body = st1(Y, pos, ld1(X, src));
  mlc_block *out = mlc_block_new(A_, "outer");
  add_iter(out, vo, 4, MLC_ITER_SPATIAL);
  mlc_expr *tile = mlc_mul(A_, v_(vo), i_(4));
  set_reads(out, 1, (mlc_region[]){region(X, (mlc_expr *[]){tile}, (int64_t[]){4})});
  set_writes(out, 1, (mlc_region[]){region(Y, (mlc_expr *[]){tile}, (int64_t[]){4})});
  out->body = loop(ii, 4, mlc_realize_new(A_, in, (mlc_expr *[]){v_(ii)}, NULL));
  mlc_stmt *r = mlc_realize_new(A_, out, (mlc_expr *[]){v_(io)}, NULL);
  return func("main", 2, (mlc_buffer *[]){X, Y}, 0, NULL, loop(io, 4, r));
}

static void test_ok_nested_block_uses_outer_iter_var(void) { expect_ok(make_blockized(false)); }

static void test_err_nested_block_uses_enclosing_loop(void) {
  expect_err(make_blockized(true), "block \"inner\"",
             "loop variable \"ii\" is defined outside block \"inner\"");
}

/* ---- rejected --------------------------------------------------------- */

static void test_err_undefined_var(void) {
  vecadd p = make_vecadd();
  mlc_var *ghost = mlc_var_new(A_, "ghost", MLC_INT32);
  p.realize->realize.values[0] = v_(ghost);
  expect_err(p.f, "function \"main\"", "block \"C\"", "variable \"ghost\" is not defined");
}

static void test_err_outer_loop_var_in_body(void) {
  vecadd p = make_vecadd();
  p.store->store.value = mlc_add(A_, ld1(p.A, v_(p.i)), ld1(p.B, v_(p.vi)));
  expect_err(p.f, "block \"C\"", "in the body", "loop variable \"i\" is defined outside block \"C\"");
}

static void test_err_outer_loop_var_in_reads(void) {
  vecadd p = make_vecadd();
  p.blk->reads[0] = pt1(p.A, v_(p.i));
  expect_err(p.f, "in T.reads", "loop variable \"i\" is defined outside block \"C\"");
}

static void test_err_outer_loop_var_in_init(void) {
  matmul p = make_matmul(4);
  mlc_var *i = p.f->body->realize.block->body->loop.var;
  p.blk->init = st2(p.C, v_(i), v_(p.vj), mlc_float(A_, MLC_FLOAT32, 0));
  expect_err(p.f, "in the init", "loop variable \"i\" is defined outside block \"C\"");
}

static void test_err_var_defined_twice(void) {
  vecadd p = make_vecadd();
  p.f->body->realize.block->body = loop(p.i, 16, p.loop); /* i inside i */
  expect_err(p.f, "variable \"i\" is defined twice");
}

static void test_err_wrong_index_count(void) {
  matmul p = make_matmul(4);
  /* A load of 2-D A with only one index (the array is NULL-terminated
   * short, as a sloppy constructor would leave it). */
  mlc_expr **idx = MLC_NEW_ARRAY(A_, mlc_expr *, 2);
  idx[0] = v_(p.vi);
  mlc_expr *bad = ld2(p.A, v_(p.vi), v_(p.vk));
  bad->load.indices = idx;
  p.blk->body->store.value->bin.b->bin.a = bad;
  expect_err(p.f, "load from \"A\" has 1 indices but the buffer has 2 dimensions");
}

static void test_err_store_dtype(void) {
  vecadd p = make_vecadd();
  p.store->store.value = mlc_cast(A_, MLC_FLOAT16, p.store->store.value);
  expect_err(p.f, "store to \"C\" of a float16 value, but the buffer is float32");
}

static void test_err_binary_dtype(void) {
  vecadd p = make_vecadd();
  mlc_expr *e = p.store->store.value; /* A[vi] + B[vi] */
  e->bin.b = mlc_cast(A_, MLC_FLOAT16, e->bin.b);
  expect_err(p.f, "operands of + have different dtypes, float32 and float16");
}

static void test_err_load_dtype(void) {
  vecadd p = make_vecadd();
  p.store->store.value->bin.a->dtype = MLC_INT32;
  expect_err(p.f, "load from \"A\" has dtype int32 but the buffer is float32");
}

static void test_err_float_index(void) {
  vecadd p = make_vecadd();
  p.store->store.value->bin.a->load.indices[0] = mlc_cast(A_, MLC_FLOAT32, v_(p.vi));
  expect_err(p.f, "index 0 of \"A\" must be an integer, got float32");
}

static void test_err_if_condition_not_bool(void) {
  vecadd p = make_vecadd();
  p.blk->body = mlc_if_new(A_, v_(p.vi), p.store, NULL);
  expect_err(p.f, "the if condition must be bool, got int32");
}

static void test_err_predicate_not_bool(void) {
  vecadd p = make_vecadd();
  p.realize->realize.predicate = v_(p.i);
  expect_err(p.f, "T.where predicate", "must be bool, got int32");
}

static void test_err_binding_out_of_domain(void) {
  vecadd p = make_vecadd();
  p.realize->realize.values[0] = mlc_add(A_, v_(p.i), i_(1));
  expect_err(p.f, "iter var \"vi\"", "[1, 16]", "outside its domain [0, 16)", "no T.where");
}

/* The same binding is allowed once T.where may exclude the outside. */
static void test_ok_binding_out_of_domain_with_where(void) {
  vecadd p = make_vecadd();
  p.realize->realize.values[0] = mlc_add(A_, v_(p.i), i_(1));
  p.realize->realize.predicate = mlc_binary(A_, MLC_EXPR_LT, v_(p.i), i_(15));
  expect_ok(p.f);
}

static void test_err_window_sum_without_where(void) {
  mlc_prim_func *f = make_window_sum(128);
  /* Drop T.where from the fetch block: binding reaches 8*128+255 > 1026. */
  mlc_stmt *seq = f->body->realize.block->body->loop.body->loop.body;
  mlc_stmt *fetch = seq->seq.stmts[0]->loop.body->loop.body;
  fetch->realize.predicate = NULL;
  expect_err(f, "block \"A_shared\"", "iter var \"v0\"", "outside its domain [0, 1027)");
}

static void test_err_reads_missing_buffer(void) {
  vecadd p = make_vecadd();
  p.blk->n_reads = 1; /* only A */
  expect_err(p.f, "block \"C\"", "T.reads does not cover the read of B[vi]", "nothing");
}

static void test_err_reads_too_narrow(void) {
  mlc_prim_func *f = make_window_sum(128);
  /* T.reads(A_shared[vi:vi + 2]) but the body reads vi + 2 too. */
  mlc_stmt *seq = f->body->realize.block->body->loop.body->loop.body;
  mlc_block *c = seq->seq.stmts[1]->realize.block;
  c->reads[0].ranges[0].extent = i_(2);
  expect_err(f, "block \"C\"", "T.reads does not cover the read of A_shared[vi",
             "(declared for \"A_shared\": A_shared[vi:vi + 2])");
}

static void test_err_writes_missing(void) {
  vecadd p = make_vecadd();
  p.blk->n_writes = 0;
  expect_err(p.f, "T.writes does not cover the write of C[vi]");
}

/* Without T.init the reduction's self-read must be declared. */
static void test_err_self_read_without_init(void) {
  matmul p = make_matmul(4);
  p.blk->init = NULL;
  expect_err(p.f, "T.reads does not cover the read of C[vi, vj]");
}

static void test_err_duplicate_block_name(void) {
  mlc_prim_func *f = make_pad_relu(true);
  mlc_stmt *seq = f->body->realize.block->body;
  seq->seq.stmts[1]->loop.body->realize.block->name = "pad";
  expect_err(f, "duplicate block name \"pad\"");
}

static void test_err_unnamed_block(void) {
  vecadd p = make_vecadd();
  p.blk->name = "";
  expect_err(p.f, "block with no name");
}

static void test_err_bad_thread_tag(void) {
  vecadd p = make_vecadd();
  p.loop->loop.kind = MLC_FOR_THREAD_BINDING;
  p.loop->loop.thread = "threadIdx.w";
  expect_err(p.f, "loop \"i\": invalid thread tag \"threadIdx.w\"");
}

static void test_err_thread_binding_without_tag(void) {
  vecadd p = make_vecadd();
  p.loop->loop.kind = MLC_FOR_THREAD_BINDING;
  expect_err(p.f, "loop \"i\" is thread_binding but has no thread tag");
}

static void test_err_nested_thread_extent_mismatch(void) {
  expect_err(make_window_sum(64), "loop \"ax0_1\" is bound to threadIdx.x with extent 64",
             "loop \"i_1\"", "extent 128");
}

static void test_err_loop_extent(void) {
  vecadd p = make_vecadd();
  p.loop->loop.extent = i_(0);
  expect_err(p.f, "loop \"i\": extent must be positive, got 0");
  vecadd q = make_vecadd();
  q.loop->loop.extent = mlc_add(A_, i_(8), i_(8));
  expect_err(q.f, "loop \"i\": extent must be a positive integer constant or an expression of "
                  "size vars, got 8 + 8");
}

static void test_err_undefined_buffer(void) {
  vecadd p = make_vecadd();
  mlc_buffer *D = buf1("D", 16);
  p.store->store.value->bin.b = ld1(D, v_(p.vi));
  expect_err(p.f, "load from \"D\", which is not a parameter");
}

/* A block's alloc_buffer is not visible after the block. */
static void test_err_alloc_out_of_scope(void) {
  mlc_prim_func *f = make_pad_relu(true);
  mlc_block *root = f->body->realize.block;
  mlc_buffer *Y = root->allocs[0];
  root->n_allocs = 0;
  mlc_block *pad = root->body->seq.stmts[0]->loop.body->realize.block;
  pad->n_allocs = 1;
  pad->allocs = root->allocs;
  MLC_UNUSED(Y);
  expect_err(f, "block \"relu\"", "T.reads names buffer \"Y\", which is not defined in scope");
}

static void test_err_root_has_iters(void) {
  vecadd p = make_vecadd();
  mlc_block *root = p.f->body->realize.block;
  add_iter(root, mlc_var_new(A_, "r", MLC_INT32), 1, MLC_ITER_SPATIAL);
  expect_err(p.f, "the root block must have no iter vars");
}

static void test_err_body_not_root_block(void) {
  vecadd p = make_vecadd();
  p.f->body = p.loop;
  expect_err(p.f, "the function body must be the root block");
}

static void test_err_constant_index_out_of_bounds(void) {
  vecadd p = make_vecadd();
  p.store->store.value->bin.a->load.indices[0] = i_(16);
  expect_err(p.f, "constant index 16 is out of bounds for dimension 0 of \"A\" (extent 16)");
}

static void test_err_index_range_out_of_bounds(void) {
  vecadd p = make_vecadd();
  mlc_expr *x = mlc_add(A_, v_(p.vi), i_(1));
  p.store->store.value->bin.a->load.indices[0] = x;
  p.blk->reads[0] = pt1(p.A, x);
  expect_err(p.f, "index vi + 1 of \"A\" ranges over [1, 16]");
}

/* The pad read X[vi - 1] reaches -1 unless if_then_else guards it. */
static void test_err_unguarded_pad(void) {
  expect_err(make_pad_relu(false), "block \"pad\"", "index vi - 1 of \"X\" ranges over [-1, 14]");
}

static void test_err_duplicate_param(void) {
  vecadd p = make_vecadd();
  p.f->params[1] = p.A;
  expect_err(p.f, "buffer \"A\" is declared twice (parameter)");
}

static void test_err_bad_buffer_shape(void) {
  vecadd p = make_vecadd();
  p.C->shape[0] = 0;
  expect_err(p.f, "parameter \"C\": dimension 0 has extent 0");
}

static void test_err_call_int_arg(void) {
  vecadd p = make_vecadd();
  mlc_expr *x = mlc_call(A_, MLC_INTRIN_EXP, (mlc_expr *[]){v_(p.vi)});
  p.store->store.value = mlc_cast(A_, MLC_FLOAT32, x);
  expect_err(p.f, "T.exp needs a float argument, got int32");
}

static void test_err_module_duplicate_function(void) {
  mlc_module *m = mlc_module_new(A_, "Module");
  mlc_module_add(A_, m, make_vecadd().f);
  mlc_module_add(A_, m, make_matmul(4).f);
  mlc_error err = {{0}};
  CHECK(!mlc_verify_module(m, &err));
  CHECK_MSG(strstr(err.msg, "duplicate function name \"main\""), "%s", err.msg);
}

static void test_err_module_names_function(void) {
  mlc_module *m = mlc_module_new(A_, "Module");
  mlc_prim_func *g = make_vecadd().f;
  g->name = "second";
  mlc_module_add(A_, m, make_matmul(4).f);
  mlc_module_add(A_, m, g);
  g->body->realize.block->body->loop.extent = i_(-3);
  mlc_error err = {{0}};
  CHECK(!mlc_verify_module(m, &err));
  CHECK_MSG(strstr(err.msg, "function \"second\", block \"root\": loop \"i\""), "%s", err.msg);
}

/* ---- parsed TVMScript -------------------------------------------------- */

static const char *const window_sum_py =
    "@I.ir_module\n"
    "class Module:\n"
    "    @T.prim_func\n"
    "    def main(A: T.Buffer((1027,), \"float32\"), B: T.Buffer((1024,), \"float32\")):\n"
    "        T.func_attr({\"global_symbol\": \"main\", \"tir.noalias\": T.bool(True)})\n"
    "        A_shared = T.alloc_buffer((1027,), scope=\"shared\")\n"
    "        for i_0 in T.thread_binding(8, thread=\"blockIdx.x\"):\n"
    "            for i_1 in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
    "                for ax0_0 in range(2):\n"
    "                    for ax0_1 in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
    "                        with T.block(\"A_shared\"):\n"
    "                            v0 = T.axis.spatial(1027, i_0 * 128 + (ax0_0 * 128 + ax0_1))\n"
    "                            T.where(ax0_0 * 128 + ax0_1 < 130)\n"
    "                            T.reads(A[v0])\n"
    "                            T.writes(A_shared[v0])\n"
    "                            A_shared[v0] = A[v0]\n"
    "                with T.block(\"C\"):\n"
    "                    vi = T.axis.spatial(1024, i_0 * 128 + i_1)\n"
    "                    T.reads(A_shared[vi:vi + 3])\n"
    "                    T.writes(B[vi])\n"
    "                    B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]\n";

static const char *const matmul_py =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16, 16), \"float32\"),\n"
    "         C: T.Buffer((16, 16), \"float32\")):\n"
    "    for i, j, k in T.grid(16, 16, 16):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* Parsed, with the reads written by hand so they can be wrong. */
static const char *const bad_reads_py =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
    "    for i in range(15):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(15, i)\n"
    "            T.reads(A[vi])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[vi] + A[vi + 1]\n";

static const char *const outer_var_py =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            T.reads(A[vi])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[i]\n";

static const char *const dup_name_py =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            B[vi] = A[vi]\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            B[vi] = B[vi] * T.float32(2)\n";

static mlc_module *parse(const char *name, const char *text) {
  mlc_error err = {{0}};
  mlc_module *m = mlc_parse_module(A_, name, text, &err);
  if (!m) test_fail_(__FILE__, __LINE__, "parse %s: %s", name, err.msg);
  return m;
}

static void test_parsed_ok(void) {
  mlc_module *m;
  mlc_error err = {{0}};
  if ((m = parse("window_sum.py", window_sum_py)))
    CHECK_MSG(mlc_verify_module(m, &err), "window_sum: %s", err.msg);
  if ((m = parse("matmul.py", matmul_py)))
    CHECK_MSG(mlc_verify_module(m, &err), "matmul: %s", err.msg);
}

/* A uint8 index would be zero-extended here and sign-extended by codegen. */
static const char *uint8_index_py =
    "@T.prim_func\n"
    "def f(A: T.Buffer((256,), \"float32\"), U: T.Buffer((8,), \"uint8\"), B: T.Buffer((8,), \"float32\")):\n"
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            T.reads(A[0:256], U[vi])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[U[vi]]\n";

static void test_parsed_errors(void) {
  struct {
    const char *name, *text, *want;
  } cases[] = {
      {"bad_reads.py", bad_reads_py, "T.reads does not cover the read of A[vi + 1] in its body (declared for \"A\": A[vi])"},
      {"outer_var.py", outer_var_py, "loop variable \"i\" is defined outside block \"B\""},
      {"dup_name.py", dup_name_py, "duplicate block name \"B\""},
      {"uint8_index.py", uint8_index_py, "must be a signed integer, got uint8"},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    mlc_module *m = parse(cases[i].name, cases[i].text);
    if (!m) continue;
    mlc_error err = {{0}};
    bool ok = mlc_verify_module(m, &err);
    CHECK_MSG(!ok, "%s: accepted", cases[i].name);
    CHECK_MSG(ok || strstr(err.msg, cases[i].want), "%s: %s", cases[i].name, err.msg);
  }
}

/* ---- accesses bounded by the binding's range --------------------------- */

/* TensorIR checks an access against the values the iter var's binding can
 * take over its loops (intersected with the domain), not the whole domain:
 * vi = T.axis.spatial(16, 8 + i) with i < 8 is in [8, 15], so A[vi - 8]
 * of an 8-element A is in bounds. */
#define ONE_BLOCK(A, B, LOOPS, BIND, READ, WRITE, BODY)                                       \
  "@T.prim_func\n"                                                                            \
  "def main(A: T.Buffer(" A ", \"float32\"), B: T.Buffer(" B ", \"float32\")):\n"            \
  "    for " LOOPS ":\n"                                                                      \
  "        with T.block(\"B\"):\n"                                                            \
  BIND                                                                                        \
  "            T.reads(" READ ")\n"                                                           \
  "            T.writes(" WRITE ")\n"                                                         \
  "            " BODY "\n"

static void expect_verified(const char *name, const char *text) {
  mlc_module *m = parse(name, text);
  mlc_error err = {{0}};
  if (m) CHECK_MSG(mlc_verify_module(m, &err), "%s: %s", name, err.msg);
}

static void test_binding_range_offset(void) {
  expect_verified("offset.py",
                  ONE_BLOCK("(8,)", "(8,)", "i in range(8)",
                            "            vi = T.axis.spatial(16, 8 + i)\n", "A[vi - 8]",
                            "B[vi - 8]", "B[vi - 8] = A[vi - 8] * T.float32(2)"));
}

static void test_binding_range_strided(void) {
  expect_verified("strided.py",
                  ONE_BLOCK("(8,)", "(8,)", "i in range(8)",
                            "            vi = T.axis.spatial(32, 2 * i + 1)\n",
                            "A[(vi - 1) // 2]", "B[(vi - 1) // 2]",
                            "B[(vi - 1) // 2] = A[(vi - 1) // 2]"));
}

static void test_binding_range_split(void) {
  expect_verified("split.py",
                  ONE_BLOCK("(8,)", "(8,)", "i0, i1 in T.grid(2, 4)",
                            "            vi = T.axis.spatial(16, i0 * 4 + i1)\n", "A[vi]",
                            "B[vi]", "B[vi] = A[vi]"));
}

static void test_binding_range_reduce(void) {
  expect_verified("reduce_offset.py",
                  ONE_BLOCK("(4, 16)", "(4,)", "i, k in T.grid(4, 16)",
                            "            vi = T.axis.spatial(4, i)\n"
                            "            vk = T.axis.reduce(64, k + 32)\n",
                            "A[vi, vk - 32], B[vi]", "B[vi]",
                            "B[vi] = B[vi] + A[vi, vk - 32]"));
}

/* The binding's range still bounds the access: 7 + i reaches A[-1]. */
static void test_err_binding_range_out_of_bounds(void) {
  mlc_module *m = parse("offset_bad.py",
                        ONE_BLOCK("(8,)", "(8,)", "i in range(8)",
                                  "            vi = T.axis.spatial(16, 7 + i)\n", "A[vi - 8]",
                                  "B[vi - 7]", "B[vi - 7] = A[vi - 8]"));
  mlc_error err = {{0}};
  if (!m) return;
  CHECK(!mlc_verify_module(m, &err));
  CHECK_MSG(strstr(err.msg, "block \"B\"") &&
                strstr(err.msg, "index vi - 8 of \"A\" ranges over [-1, 6]"),
            "%s", err.msg);
}

/* ---- hull regions with T.min / T.max bounds ------------------------------ */

/* A block reading one buffer at unrelated indices x and y may declare the
 * hull B[T.min(x, y):T.max(x, y) + 1] (region inference writes that when a
 * block gives no T.reads). The verifier must prove it covers x and y. */
#define HULL(READS, BODY)                                                                   \
  "@T.prim_func\n"                                                                          \
  "def main(B: T.Buffer((18,), \"float32\"), C: T.Buffer((8, 4), \"float32\")):\n"          \
  "    for i, j in T.grid(8, 4):\n"                                                         \
  "        with T.block(\"C\"):\n"                                                          \
  "            vi, vj = T.axis.remap(\"SS\", [i, j])\n" READS                                \
  "            T.writes(C[vi, vj])\n"                                                       \
  "            C[vi, vj] = " BODY "\n"

#define HULL_BODY "B[14 - 2 * vi] + B[2 * vi + vj]"

static void test_ok_hull_inferred(void) {
  mlc_module *m = parse("hull_inferred.py", HULL("", HULL_BODY));
  if (!m) return;
  const mlc_stmt *st = mlc_func_root(m->funcs[0])->body;
  while (st && st->kind == MLC_STMT_FOR) st = st->loop.body;
  CHECK(st && st->kind == MLC_STMT_BLOCK_REALIZE);
  if (!st || st->kind != MLC_STMT_BLOCK_REALIZE) return;
  /* One merged region whose start is a T.min: the case under test. */
  const mlc_block *c = st->realize.block;
  CHECK(c->n_reads == 1 && c->reads[0].ranges[0].min->kind == MLC_EXPR_MIN);
  mlc_error err = {{0}};
  CHECK_MSG(mlc_verify_module(m, &err), "%s", err.msg);
}

static void test_ok_hull_declared(void) {
  expect_verified("hull.py",
                  HULL("            T.reads(B[T.min(14 - 2 * vi, 2 * vi + vj):"
                       "T.max(14 - 2 * vi, 2 * vi + vj) + 1])\n",
                       HULL_BODY));
  /* Written the other way round, and as start + extent. */
  expect_verified("hull_swapped.py",
                  HULL("            T.reads(B[T.min(2 * vi + vj, 14 - 2 * vi):"
                       "T.min(2 * vi + vj, 14 - 2 * vi) + (T.max(14 - 2 * vi, 2 * vi + vj) - "
                       "T.min(14 - 2 * vi, 2 * vi + vj) + 1)])\n",
                       HULL_BODY));
}

/* Three reads, nested T.min / T.max, floordiv indices. */
static void test_ok_hull_nested_floordiv(void) {
  expect_verified("hull3.py",
                  HULL("            T.reads(B[T.min(T.min(vi // 2, 17 - vi), vj * 4):"
                       "T.max(T.max(vi // 2, 17 - vi), vj * 4) + 1])\n",
                       "B[vi // 2] + B[17 - vi] + B[vj * 4]"));
}

static void expect_rejected(const char *name, const char *text, const char *want) {
  mlc_module *m = parse(name, text);
  mlc_error err = {{0}};
  if (!m) return;
  CHECK_MSG(!mlc_verify_module(m, &err), "%s: accepted", name);
  CHECK_MSG(strstr(err.msg, want), "%s: %s", name, err.msg);
}

/* Hulls that miss an access are still refused. */
static void test_err_hull_too_narrow(void) {
  /* The hull of 14 - 2 * vi and 2 * vi misses 2 * vi + vj for vj > 0. */
  expect_rejected("hull_miss.py",
                  HULL("            T.reads(B[T.min(14 - 2 * vi, 2 * vi):"
                       "T.max(14 - 2 * vi, 2 * vi) + 1])\n",
                       HULL_BODY),
                  "T.reads does not cover the read of B[vi * 2 + vj]");
  /* Without the + 1 the end excludes the larger index. */
  expect_rejected("hull_end.py",
                  HULL("            T.reads(B[T.min(14 - 2 * vi, 2 * vi + vj):"
                       "T.max(14 - 2 * vi, 2 * vi + vj)])\n",
                       HULL_BODY),
                  "T.reads does not cover the read of B[");
  /* Starting one past the smaller index. */
  expect_rejected("hull_start.py",
                  HULL("            T.reads(B[T.min(14 - 2 * vi, 2 * vi + vj) + 1:"
                       "T.max(14 - 2 * vi, 2 * vi + vj) + 1])\n",
                       HULL_BODY),
                  "T.reads does not cover the read of B[");
}

/* A hull region is no excuse for an access out of bounds: 2 * vi + vj + 4
 * reaches B[21] of 18. */
static void test_err_hull_access_out_of_bounds(void) {
  expect_rejected("hull_oob.py",
                  HULL("            T.reads(B[T.min(14 - 2 * vi, 2 * vi + vj + 4):"
                       "T.max(14 - 2 * vi, 2 * vi + vj + 4) + 1])\n",
                       "B[14 - 2 * vi] + B[2 * vi + vj + 4]"),
                  "ranges over [4, 21], outside dimension 0 of extent 18");
}

/* Every golden TVMScript file verifies (the set grows as others add them). */
static void test_golden_files(void) {
  DIR *d = opendir("tests/golden");
  if (!d) return;
  struct dirent *de;
  int n = 0;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if (len < 4 || strcmp(de->d_name + len - 3, ".py") != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "tests/golden/%s", de->d_name);
    mlc_error err = {{0}};
    char *text = mlc_read_file(path, NULL, &err);
    if (!text) {
      test_fail_(__FILE__, __LINE__, "%s: %s", path, err.msg);
      continue;
    }
    mlc_module *m = mlc_parse_module(A_, path, text, &err);
    mlc_free(text);
    /* Files meant as parse-error cases are the parser tests' business. */
    if (!m) continue;
    n++;
    if (!mlc_verify_module(m, &err)) test_fail_(__FILE__, __LINE__, "%s: %s", path, err.msg);
  }
  closedir(d);
  printf("# verified %d golden files\n", n);
}

int main(void) {
  A_ = mlc_arena_new();
  RUN(test_ok_vecadd);
  RUN(test_ok_two_reads_of_one_buffer);
  RUN(test_ok_matmul_implicit_self_read);
  RUN(test_ok_cooperative_fetch_with_where);
  RUN(test_ok_if_then_else_out_of_bounds);
  RUN(test_ok_module);
  RUN(test_ok_opaque_block_uses_loop_var);
  RUN(test_ok_whole_buffer_region);
  RUN(test_ok_inner_loop_in_block);
  RUN(test_ok_split_binding);
  RUN(test_ok_fused_binding);
  RUN(test_ok_decl_buffer);
  RUN(test_ok_binding_out_of_domain_with_where);
  RUN(test_ok_nested_block_uses_outer_iter_var);
  RUN(test_err_nested_block_uses_enclosing_loop);
  RUN(test_err_undefined_var);
  RUN(test_err_outer_loop_var_in_body);
  RUN(test_err_outer_loop_var_in_reads);
  RUN(test_err_outer_loop_var_in_init);
  RUN(test_err_var_defined_twice);
  RUN(test_err_wrong_index_count);
  RUN(test_err_store_dtype);
  RUN(test_err_binary_dtype);
  RUN(test_err_load_dtype);
  RUN(test_err_float_index);
  RUN(test_err_if_condition_not_bool);
  RUN(test_err_predicate_not_bool);
  RUN(test_err_binding_out_of_domain);
  RUN(test_err_window_sum_without_where);
  RUN(test_err_reads_missing_buffer);
  RUN(test_err_reads_too_narrow);
  RUN(test_err_writes_missing);
  RUN(test_err_self_read_without_init);
  RUN(test_err_duplicate_block_name);
  RUN(test_err_unnamed_block);
  RUN(test_err_bad_thread_tag);
  RUN(test_err_thread_binding_without_tag);
  RUN(test_err_nested_thread_extent_mismatch);
  RUN(test_err_loop_extent);
  RUN(test_err_undefined_buffer);
  RUN(test_err_alloc_out_of_scope);
  RUN(test_err_root_has_iters);
  RUN(test_err_body_not_root_block);
  RUN(test_err_constant_index_out_of_bounds);
  RUN(test_err_index_range_out_of_bounds);
  RUN(test_err_unguarded_pad);
  RUN(test_err_duplicate_param);
  RUN(test_err_bad_buffer_shape);
  RUN(test_err_call_int_arg);
  RUN(test_err_module_duplicate_function);
  RUN(test_err_module_names_function);
  RUN(test_binding_range_offset);
  RUN(test_binding_range_strided);
  RUN(test_binding_range_split);
  RUN(test_binding_range_reduce);
  RUN(test_err_binding_range_out_of_bounds);
  RUN(test_ok_hull_inferred);
  RUN(test_ok_hull_declared);
  RUN(test_ok_hull_nested_floordiv);
  RUN(test_err_hull_too_narrow);
  RUN(test_err_hull_access_out_of_bounds);
  RUN(test_parsed_ok);
  RUN(test_parsed_errors);
  RUN(test_golden_files);
  mlc_arena_free(A_);
  return test_summary();
}
