/* Structural hash and equality: renamings are invisible; any change of
 * shape, dtype, operation, loop kind, constant, annotation, scope, region
 * or predicate is visible. A golden hash pins the encoding across
 * platforms and releases. */
#include "ir/ir.h"
#include "tests/test.h"

#include <dirent.h>
#include <inttypes.h>

static mlc_arena *A_;

/* Everything a variant may change. Names: function, A, B, C, i, j, k, vi,
 * vj, vk, block, global_symbol. */
typedef struct cfg {
  const char *names[12];
  int64_t M, N, K;
  mlc_dtype dt;
  mlc_expr_kind op;       /* combines A and B: MUL (matmul) or ADD */
  mlc_for_kind outer;     /* kind of the i loop */
  const char *thread;     /* with THREAD_BINDING */
  double init;            /* T.init value */
  int64_t unroll;         /* block annotation value; 0: none */
  bool swap_ab;           /* B[vk, vj] * A[vi, vk] operand order */
  bool attrs_reversed;    /* function attrs in the other order */
  const char *c_scope;    /* scope of C */
  bool reduce_k;          /* vk kind R (else S, ill-formed but hashable) */
  bool where;             /* add T.where(vi < M) */
  int64_t read_ext;       /* extent of A's read region along k (1: point) */
  bool alloc_tmp;         /* an unused root alloc_buffer */
} cfg;

static cfg base_cfg(void) {
  cfg c = {{"main", "A", "B", "C", "i", "j", "k", "vi", "vj", "vk", "C", "main"},
           8, 6, 4, MLC_FLOAT32, MLC_EXPR_MUL, MLC_FOR_SERIAL, NULL, 0.0, 0, false, false,
           "global", true, false, 1, false};
  return c;
}

static mlc_prim_func *build(mlc_arena *a, const cfg *c) {
  const char *const *nm = c->names;
  mlc_buffer *A = mlc_buffer_new(a, nm[1], c->dt, 2, (int64_t[]){c->M, c->K}, "global");
  mlc_buffer *B = mlc_buffer_new(a, nm[2], c->dt, 2, (int64_t[]){c->K, c->N}, "global");
  mlc_buffer *C = mlc_buffer_new(a, nm[3], c->dt, 2, (int64_t[]){c->M, c->N}, c->c_scope);
  mlc_var *lv[3], *iv[3];
  for (int t = 0; t < 3; t++) {
    lv[t] = mlc_var_new(a, nm[4 + t], MLC_INT32);
    iv[t] = mlc_var_new(a, nm[7 + t], MLC_INT32);
  }
  int64_t ext[3] = {c->M, c->N, c->K};
  mlc_block *blk = mlc_block_new(a, nm[10]);
  blk->n_iters = 3;
  blk->iters = MLC_NEW_ARRAY(a, mlc_iter_var, 3);
  for (int t = 0; t < 3; t++)
    blk->iters[t] = (mlc_iter_var){iv[t], {mlc_int(a, 0), mlc_int(a, ext[t])},
                                   t == 2 && c->reduce_k ? MLC_ITER_REDUCE : MLC_ITER_SPATIAL};
  mlc_expr *vi = mlc_ref(a, iv[0]), *vj = mlc_ref(a, iv[1]), *vk = mlc_ref(a, iv[2]);
  mlc_region *rd = MLC_NEW_ARRAY(a, mlc_region, 2);
  rd[0] = (mlc_region){A, MLC_NEW_ARRAY(a, mlc_range, 2)};
  rd[0].ranges[0] = (mlc_range){vi, mlc_int(a, 1)};
  rd[0].ranges[1] = (mlc_range){c->read_ext == 1 ? vk : mlc_int(a, 0), mlc_int(a, c->read_ext)};
  rd[1] = (mlc_region){B, MLC_NEW_ARRAY(a, mlc_range, 2)};
  rd[1].ranges[0] = (mlc_range){vk, mlc_int(a, 1)};
  rd[1].ranges[1] = (mlc_range){vj, mlc_int(a, 1)};
  blk->n_reads = 2;
  blk->reads = rd;
  blk->n_writes = 1;
  blk->writes = MLC_NEW_ARRAY(a, mlc_region, 1);
  blk->writes[0] = (mlc_region){C, MLC_NEW_ARRAY(a, mlc_range, 2)};
  blk->writes[0].ranges[0] = (mlc_range){vi, mlc_int(a, 1)};
  blk->writes[0].ranges[1] = (mlc_range){vj, mlc_int(a, 1)};
  if (c->unroll) {
    blk->n_anns = 1;
    blk->anns = MLC_NEW_ARRAY(a, mlc_ann, 1);
    blk->anns[0] = (mlc_ann){.key = "meta_schedule.unroll_explicit", .kind = MLC_ANN_INT,
                             .i = c->unroll};
  }
  mlc_expr *xa = mlc_load(a, A, (mlc_expr *[]){vi, vk});
  mlc_expr *xb = mlc_load(a, B, (mlc_expr *[]){vk, vj});
  mlc_expr *prod = c->swap_ab ? mlc_binary(a, c->op, xb, xa) : mlc_binary(a, c->op, xa, xb);
  blk->init = mlc_store_new(a, C, (mlc_expr *[]){vi, vj}, mlc_float(a, c->dt, c->init));
  blk->body = mlc_store_new(a, C, (mlc_expr *[]){vi, vj},
                            mlc_add(a, mlc_load(a, C, (mlc_expr *[]){vi, vj}), prod));
  mlc_expr *pred =
      c->where ? mlc_binary(a, MLC_EXPR_LT, mlc_ref(a, lv[0]), mlc_int(a, c->M)) : NULL;
  mlc_stmt *s = mlc_realize_new(
      a, blk, (mlc_expr *[]){mlc_ref(a, lv[0]), mlc_ref(a, lv[1]), mlc_ref(a, lv[2])}, pred);
  for (int t = 2; t >= 0; t--) {
    mlc_for_kind k = t == 0 ? c->outer : MLC_FOR_SERIAL;
    s = mlc_for_new(a, lv[t], mlc_int(a, 0), mlc_int(a, ext[t]), k, s);
    if (t == 0) s->loop.thread = c->thread;
  }
  mlc_block *root = mlc_block_new(a, "root");
  if (c->alloc_tmp) {
    root->n_allocs = 1;
    root->allocs = MLC_NEW_ARRAY(a, mlc_buffer *, 1);
    root->allocs[0] = mlc_buffer_new(a, "tmp", c->dt, 1, (int64_t[]){4}, "global");
  }
  root->body = s;
  mlc_prim_func *f = mlc_func_new(a, nm[0]);
  f->n_params = 3;
  f->params = MLC_NEW_ARRAY(a, mlc_buffer *, 3);
  f->params[0] = A;
  f->params[1] = B;
  f->params[2] = C;
  f->n_attrs = 2;
  f->attrs = MLC_NEW_ARRAY(a, mlc_ann, 2);
  mlc_ann sym = {.key = "global_symbol", .kind = MLC_ANN_STRING, .s = nm[11]};
  mlc_ann noalias = {.key = "tir.noalias", .kind = MLC_ANN_BOOL, .i = 1};
  f->attrs[c->attrs_reversed ? 1 : 0] = sym;
  f->attrs[c->attrs_reversed ? 0 : 1] = noalias;
  f->body = mlc_realize_new(a, root, NULL, NULL);
  return f;
}

static mlc_prim_func *base_func(void) {
  cfg c = base_cfg();
  return build(A_, &c);
}

static void expect_same_(const cfg *c, const char *what, const char *file, int line) {
  mlc_prim_func *x = base_func(), *y = build(A_, c);
  if (mlc_func_struct_hash(x) != mlc_func_struct_hash(y))
    test_fail_(file, line, "%s: hash differs", what);
  if (!mlc_func_struct_equal(x, y) || !mlc_func_struct_equal(y, x))
    test_fail_(file, line, "%s: not struct-equal", what);
}
#define expect_same(c, what) expect_same_((c), (what), __FILE__, __LINE__)

static void expect_differ_(const cfg *c, const char *what, const char *file, int line) {
  mlc_prim_func *x = base_func(), *y = build(A_, c);
  if (mlc_func_struct_hash(x) == mlc_func_struct_hash(y))
    test_fail_(file, line, "%s: same hash", what);
  if (mlc_func_struct_equal(x, y) || mlc_func_struct_equal(y, x))
    test_fail_(file, line, "%s: struct-equal", what);
}
#define expect_differ(c, what) expect_differ_((c), (what), __FILE__, __LINE__)

/* ---- cases ------------------------------------------------------------ */

static void test_same_program_twice(void) {
  cfg c = base_cfg();
  expect_same(&c, "identical rebuild");
  /* A separate arena: addresses differ, the hash must not. */
  mlc_arena *b = mlc_arena_new();
  mlc_prim_func *y = build(b, &c);
  CHECK(mlc_func_struct_hash(y) == mlc_func_struct_hash(base_func()));
  CHECK(mlc_func_struct_equal(y, base_func()));
  mlc_arena_free(b);
}

/* A deep copy (new vars and buffers) is the same workload. */
static void test_copy_is_equal(void) {
  cfg c = base_cfg();
  c.unroll = 4;
  c.where = true;
  mlc_prim_func *f = build(A_, &c);
  mlc_arena *b = mlc_arena_new();
  mlc_prim_func *g = mlc_func_copy(b, f);
  CHECK(mlc_func_struct_equal(f, g));
  CHECK(mlc_func_struct_hash(f) == mlc_func_struct_hash(g));
  mlc_arena_free(b);
}

static void test_renaming_is_invisible(void) {
  cfg c = base_cfg();
  const char *other[12] = {"mm_fused", "X", "W", "Out", "a0", "a1", "a2", "u", "w", "r",
                           "matmul_update", "mm_fused"};
  memcpy(c.names, other, sizeof other);
  expect_same(&c, "all names changed");
  cfg d = base_cfg();
  d.names[11] = "some_other_symbol";
  expect_same(&d, "global_symbol changed");
  cfg e = base_cfg();
  e.names[4] = e.names[5] = e.names[6] = "i"; /* shadowing names, distinct vars */
  e.names[1] = e.names[2] = "A";
  expect_same(&e, "colliding names");
}

static void test_attr_order_is_invisible(void) {
  cfg c = base_cfg();
  c.attrs_reversed = true;
  expect_same(&c, "attrs reordered");
}

static void test_shape_changes(void) {
  cfg c = base_cfg();
  c.M = 9;
  expect_differ(&c, "M 8 -> 9");
  cfg d = base_cfg();
  d.N = d.K = 5; /* a transposed-looking shape: 6x4 -> 5x5 */
  expect_differ(&d, "N, K changed");
}

static void test_dtype_changes(void) {
  cfg c = base_cfg();
  c.dt = MLC_FLOAT16;
  expect_differ(&c, "float32 -> float16");
}

static void test_operation_changes(void) {
  cfg c = base_cfg();
  c.op = MLC_EXPR_ADD;
  expect_differ(&c, "* -> +");
  cfg d = base_cfg();
  d.swap_ab = true;
  expect_differ(&d, "operand order");
}

static void test_loop_kind_changes(void) {
  cfg c = base_cfg();
  c.outer = MLC_FOR_PARALLEL;
  expect_differ(&c, "serial -> parallel");
  cfg d = base_cfg();
  d.outer = MLC_FOR_THREAD_BINDING;
  d.thread = "blockIdx.x";
  cfg e = d;
  e.thread = "blockIdx.y";
  mlc_prim_func *x = build(A_, &d), *y = build(A_, &e);
  CHECK(mlc_func_struct_hash(x) != mlc_func_struct_hash(y));
  CHECK(!mlc_func_struct_equal(x, y));
}

static void test_constant_changes(void) {
  cfg c = base_cfg();
  c.init = 1.0;
  expect_differ(&c, "init 0 -> 1");
  cfg d = base_cfg();
  d.init = -0.0; /* floats compare by bit pattern */
  expect_differ(&d, "init 0 -> -0");
}

static void test_annotation_changes(void) {
  cfg c = base_cfg();
  c.unroll = 16;
  expect_differ(&c, "annotation added");
  cfg d = base_cfg(), e = base_cfg();
  d.unroll = 16;
  e.unroll = 64;
  mlc_prim_func *x = build(A_, &d), *y = build(A_, &e);
  CHECK(mlc_func_struct_hash(x) != mlc_func_struct_hash(y));
  CHECK(!mlc_func_struct_equal(x, y));
  /* A non-symbol function attribute counts. */
  mlc_prim_func *f = base_func();
  f->attrs[1].i = 0;
  CHECK(mlc_func_struct_hash(f) != mlc_func_struct_hash(base_func()));
  CHECK(!mlc_func_struct_equal(f, base_func()));
}

static void test_other_changes(void) {
  cfg c = base_cfg();
  c.c_scope = "shared";
  expect_differ(&c, "scope");
  cfg d = base_cfg();
  d.reduce_k = false;
  expect_differ(&d, "iter kind");
  cfg e = base_cfg();
  e.where = true;
  expect_differ(&e, "predicate");
  cfg g = base_cfg();
  g.read_ext = 4;
  expect_differ(&g, "region");
  cfg h = base_cfg();
  h.alloc_tmp = true;
  expect_differ(&h, "alloc_buffer");
  mlc_prim_func *f = base_func();
  mlc_func_root(f)->body->loop.body->loop.body->loop.body->realize.block->init = NULL;
  CHECK(!mlc_func_struct_equal(f, base_func()));
  CHECK(mlc_func_struct_hash(f) != mlc_func_struct_hash(base_func()));
}

/* Using var j where i was used is not a renaming. */
static void test_var_binding_swap(void) {
  mlc_prim_func *f = base_func();
  mlc_stmt *li = mlc_func_root(f)->body, *lj = li->loop.body;
  mlc_stmt *real = lj->loop.body->loop.body;
  mlc_expr *t = real->realize.values[0];
  real->realize.values[0] = real->realize.values[1];
  real->realize.values[1] = t;
  CHECK(!mlc_func_struct_equal(f, base_func()));
  CHECK(mlc_func_struct_hash(f) != mlc_func_struct_hash(base_func()));
}

/* print -> parse makes new vars and buffers: the same workload. Run over
 * every golden TVMScript file (those that parse). */
static void test_print_parse_roundtrip(void) {
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
    if (!text) continue;
    mlc_arena *a = mlc_arena_new();
    mlc_module *m = mlc_parse_module(a, path, text, &err);
    mlc_free(text);
    for (int i = 0; m && i < m->n_funcs; i++) {
      mlc_str out = {0};
      mlc_print_func(&out, m->funcs[i]);
      mlc_module *m2 = mlc_parse_module(a, path, mlc_str_cstr(&out), &err);
      mlc_str_free(&out);
      if (!m2) {
        test_fail_(__FILE__, __LINE__, "%s: reparse: %s", path, err.msg);
        continue;
      }
      n++;
      if (!mlc_func_struct_equal(m->funcs[i], m2->funcs[0]))
        test_fail_(__FILE__, __LINE__, "%s: %s not equal after print/parse", path,
                   m->funcs[i]->name);
      if (mlc_func_struct_hash(m->funcs[i]) != mlc_func_struct_hash(m2->funcs[0]))
        test_fail_(__FILE__, __LINE__, "%s: %s hash changed by print/parse", path,
                   m->funcs[i]->name);
    }
    /* Within a module, equal hashes go with equal structure (mlp_lowered's
     * add/add1 differ only in a shape). */
    for (int i = 0; m && i < m->n_funcs; i++)
      for (int j = i + 1; j < m->n_funcs; j++) {
        bool eq = mlc_func_struct_equal(m->funcs[i], m->funcs[j]);
        bool same = mlc_func_struct_hash(m->funcs[i]) == mlc_func_struct_hash(m->funcs[j]);
        if (eq != same)
          test_fail_(__FILE__, __LINE__, "%s: %s vs %s: equal %d but same hash %d", path,
                     m->funcs[i]->name, m->funcs[j]->name, eq, same);
      }
    mlc_arena_free(a);
  }
  closedir(d);
  printf("# round-tripped %d golden functions\n", n);
}

/* mlc_expr_map rewrites copy on write: the input stays as it was and the
 * subtrees the rewrite does not touch are shared, not copied. */
typedef struct swap {
  mlc_buffer *from, *to;
  int calls;
} swap;

static mlc_expr *swap_loads(mlc_arena *a, mlc_expr *e, void *ud) {
  swap *w = ud;
  w->calls++;
  if (e->kind != MLC_EXPR_LOAD || e->load.buf != w->from) return e;
  mlc_expr *n = mlc_arena_memdup(a, e, sizeof *e);
  n->load.buf = w->to;
  return n;
}

static void count_loads_of(const mlc_expr *e, void *ud) {
  swap *w = ud;
  w->calls += e->kind == MLC_EXPR_LOAD && e->load.buf == w->to;
}

static bool loads_of(const mlc_expr *e, void *buf) {
  return e->kind == MLC_EXPR_LOAD && e->load.buf == buf;
}

static void test_expr_map(void) {
  mlc_arena *a = mlc_arena_new();
  int64_t shape[2] = {8, 8};
  mlc_buffer *A = mlc_buffer_new(a, "A", MLC_FLOAT32, 2, shape, "global");
  mlc_buffer *B = mlc_buffer_new(a, "B", MLC_FLOAT32, 2, shape, "global");
  mlc_var *x = mlc_var_new(a, "x", MLC_INT32), *y = mlc_var_new(a, "y", MLC_INT32);
  mlc_expr *xp1 = mlc_add(a, mlc_ref(a, x), mlc_int(a, 1));
  mlc_expr *idx[2] = {xp1, mlc_ref(a, y)};
  mlc_expr *load = mlc_load(a, A, idx);
  mlc_expr *other = mlc_cast(a, MLC_FLOAT32, mlc_mul(a, mlc_ref(a, y), mlc_int(a, 3)));
  mlc_expr *e = mlc_add(a, load, other);
  swap w = {A, B, 0};
  CHECK(mlc_expr_map(a, e, NULL, NULL) == e);
  swap none = {B, A, 0};
  CHECK(mlc_expr_map(a, e, swap_loads, &none) == e && none.calls == 10);
  mlc_expr *r = mlc_expr_map(a, e, swap_loads, &w);
  CHECK(r != e && r->bin.b == other);                  /* untouched side shared */
  CHECK(r->bin.a != load && r->bin.a->load.buf == B);  /* the load rewritten */
  CHECK(r->bin.a->load.indices == load->load.indices); /* its indices shared */
  CHECK(e->bin.a == load && load->load.buf == A);      /* the input unchanged */
  swap seen = {NULL, B, 0};
  mlc_expr_visit(r, count_loads_of, &seen);
  CHECK(seen.calls == 1);
  CHECK(mlc_expr_any(r, loads_of, B) && !mlc_expr_any(e, loads_of, B) && mlc_expr_any(e, loads_of, A));
  CHECK(!mlc_expr_any(NULL, loads_of, A));
  CHECK(mlc_expr_map(a, NULL, swap_loads, &w) == NULL);
  mlc_arena_free(a);
}

static void test_hex(void) {
  mlc_prim_func *f = base_func();
  char hex[17], want[17];
  mlc_func_hash_hex(f, hex);
  snprintf(want, sizeof want, "%016" PRIx64, mlc_func_struct_hash(f));
  CHECK_STREQ(hex, want);
  CHECK(strlen(hex) == 16);
  for (int i = 0; i < 16; i++) CHECK((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'));
}

/* The hash of this fixed program is stored in tuning databases as workload
 * identity. It must never change without bumping the database schema
 * version (a new encoding makes every stored workload unfindable). */
#define GOLDEN_HASH 0x8d6a2644d8787597ULL
/* Same rule; this variant pins the encoding of annotations, thread tags,
 * predicates, float16 constants and alloc_buffers. */
#define GOLDEN_HASH_RICH 0xb9fc6c1c43be4ed1ULL

static void test_golden_hash(void) {
  uint64_t h = mlc_func_struct_hash(base_func());
  CHECK_MSG(h == GOLDEN_HASH, "hash 0x%016" PRIx64 " != golden 0x%016" PRIx64, h,
            (uint64_t)GOLDEN_HASH);
  cfg c = base_cfg();
  c.dt = MLC_FLOAT16;
  c.outer = MLC_FOR_THREAD_BINDING;
  c.thread = "threadIdx.x";
  c.unroll = 16;
  c.where = true;
  c.init = 0.5;
  c.alloc_tmp = true;
  c.read_ext = 4;
  uint64_t r = mlc_func_struct_hash(build(A_, &c));
  CHECK_MSG(r == GOLDEN_HASH_RICH, "rich hash 0x%016" PRIx64 " != golden 0x%016" PRIx64, r,
            (uint64_t)GOLDEN_HASH_RICH);
}

/* A function whose block carries T.block_attr(ANNS). */
static mlc_prim_func *with_block_attr(const char *anns) {
  char text[1024];
  snprintf(text, sizeof text,
           "@T.prim_func\n"
           "def f(A: T.Buffer((8,), \"float32\")):\n"
           "    for i in range(8):\n"
           "        with T.block(\"b\"):\n"
           "            vi = T.axis.spatial(8, i)\n"
           "            T.block_attr(%s)\n"
           "            A[vi] = T.float32(0)\n",
           anns);
  mlc_error err;
  mlc_module *m = mlc_parse_module(A_, "h.py", text, &err);
  if (!m) {
    test_fail_(__FILE__, __LINE__, "%s: %s", anns, err.msg);
    return NULL;
  }
  return m->funcs[0];
}

static void check_anns_(const char *x, const char *y, bool same, int line) {
  mlc_prim_func *f = with_block_attr(x), *g = with_block_attr(y);
  if (!f || !g) return;
  bool eq = mlc_func_struct_equal(f, g), heq = mlc_func_struct_hash(f) == mlc_func_struct_hash(g);
  if (eq != same || heq != same)
    test_fail_(__FILE__, line, "%s vs %s: equal %d, hash equal %d, want %d", x, y, eq, heq, same);
  mlc_prim_func *c = mlc_func_copy(A_, f);
  if (!mlc_func_struct_equal(f, c) || mlc_func_struct_hash(f) != mlc_func_struct_hash(c))
    test_fail_(__FILE__, line, "%s: copy differs", x);
}
#define ANNS_SAME(x, y) check_anns_((x), (y), true, __LINE__)
#define ANNS_DIFFER(x, y) check_anns_((x), (y), false, __LINE__)

/* List and dict values: a list is ordered, a dict is a map (like the
 * annotation list itself), and every nested scalar counts. */
static void test_nested_annotation_values(void) {
  ANNS_SAME("{\"a\": [[0, 0, 16, 8]]}", "{\"a\": [[0, 0, 16, 8]]}");
  ANNS_SAME("{\"a\": [1, 2]}", "{\"a\": (1, 2)}");
  ANNS_SAME("{\"d\": {\"x\": 1, \"y\": [2]}}", "{\"d\": {\"y\": [2], \"x\": 1}}");
  ANNS_DIFFER("{\"a\": [[0, 0, 16, 8]]}", "{\"a\": [[0, 0, 16, 4]]}");
  ANNS_DIFFER("{\"a\": [1, 2]}", "{\"a\": [2, 1]}");
  ANNS_DIFFER("{\"a\": [1, 2]}", "{\"a\": [1, 2, 3]}");
  ANNS_DIFFER("{\"a\": [1]}", "{\"a\": 1}");
  ANNS_DIFFER("{\"a\": [[1], 2]}", "{\"a\": [1, [2]]}");
  ANNS_DIFFER("{\"a\": [1]}", "{\"a\": [True]}");
  ANNS_DIFFER("{\"a\": [1]}", "{\"a\": [1.0]}");
  ANNS_DIFFER("{\"a\": [\"x\"]}", "{\"a\": [\"y\"]}");
  ANNS_DIFFER("{\"a\": []}", "{\"a\": {}}");
  ANNS_DIFFER("{\"d\": {\"x\": 1}}", "{\"d\": {\"y\": 1}}");
  ANNS_DIFFER("{\"d\": {\"x\": 1}}", "{\"d\": {\"x\": 1, \"y\": 1}}");
  ANNS_DIFFER("{\"d\": {\"x\": {\"z\": 1}}}", "{\"d\": {\"x\": {\"z\": 2}}}");
}

int main(void) {
  A_ = mlc_arena_new();
  RUN(test_same_program_twice);
  RUN(test_copy_is_equal);
  RUN(test_renaming_is_invisible);
  RUN(test_attr_order_is_invisible);
  RUN(test_shape_changes);
  RUN(test_dtype_changes);
  RUN(test_operation_changes);
  RUN(test_loop_kind_changes);
  RUN(test_constant_changes);
  RUN(test_annotation_changes);
  RUN(test_nested_annotation_values);
  RUN(test_other_changes);
  RUN(test_var_binding_swap);
  RUN(test_print_parse_roundtrip);
  RUN(test_expr_map);
  RUN(test_hex);
  RUN(test_golden_hash);
  mlc_arena_free(A_);
  return test_summary();
}
