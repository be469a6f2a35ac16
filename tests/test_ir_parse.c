/* TVMScript parser: every accepted form checked structurally against what
 * the text says (not against the printer), malformed inputs rejected with
 * located messages, truncations/mutations/allocation failures never crash,
 * and the notes' examples read, reprint and reread to the same IR. */
#include "ir/ir.h"
#include "tests/test.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------ */

static mlc_module *parse_ok_(mlc_arena *a, const char *text, const char *file, int line) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "t.py", text, &err);
  if (!m) test_fail_(file, line, "parse failed: %s", err.msg);
  return m;
}
#define PARSE_OK(a, text) parse_ok_((a), (text), __FILE__, __LINE__)

/* The i-th statement of a sequence (a lone statement is its own 0th). */
static mlc_stmt *nth(mlc_stmt *s, int i) {
  if (!s) return NULL;
  if (s->kind == MLC_STMT_SEQ) return i < s->seq.n ? s->seq.stmts[i] : NULL;
  return i == 0 ? s : NULL;
}

static int seq_len(const mlc_stmt *s) { return !s ? 0 : s->kind == MLC_STMT_SEQ ? s->seq.n : 1; }

static mlc_stmt *find_realize(mlc_stmt *s, const char *name) {
  if (!s) return NULL;
  mlc_stmt *r;
  switch (s->kind) {
  case MLC_STMT_FOR: return find_realize(s->loop.body, name);
  case MLC_STMT_BLOCK_REALIZE:
    if (strcmp(s->realize.block->name, name) == 0) return s;
    if ((r = find_realize(s->realize.block->init, name))) return r;
    return find_realize(s->realize.block->body, name);
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if ((r = find_realize(s->seq.stmts[i], name))) return r;
    return NULL;
  case MLC_STMT_IF:
    if ((r = find_realize(s->if_.then_s, name))) return r;
    return find_realize(s->if_.else_s, name);
  case MLC_STMT_ALLOCATE: return find_realize(s->alloc.body, name);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return NULL;
  }
  return NULL;
}

static mlc_block *find_block(mlc_prim_func *f, const char *name) {
  mlc_stmt *r = find_realize(f->body, name);
  return r ? r->realize.block : NULL;
}

static bool is_int(const mlc_expr *e, int64_t v) {
  return e && e->kind == MLC_EXPR_INT_IMM && e->int_val == v;
}

static bool is_var(const mlc_expr *e, const char *name) {
  return e && e->kind == MLC_EXPR_VAR && strcmp(e->var->name, name) == 0;
}

/* An S-expression of a tree, independent of the printer:
 * (add A[vi] 2f32), 3 (int32), 2i64, 1b, 0.5f16, (cast:float16 x). */
static void sexp_(mlc_str *o, const mlc_expr *e) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
    mlc_str_printf(o, "%lld%s", (long long)e->int_val,
                   e->dtype == MLC_INT32   ? ""
                   : e->dtype == MLC_INT64 ? "i64"
                   : e->dtype == MLC_INT8  ? "i8"
                   : e->dtype == MLC_BOOL  ? "b"
                                           : "?");
    return;
  case MLC_EXPR_FLOAT_IMM:
    mlc_str_printf(o, "%g%s", e->float_val, e->dtype == MLC_FLOAT16 ? "f16" : "f32");
    return;
  case MLC_EXPR_VAR: mlc_str_puts(o, e->var->name); return;
  case MLC_EXPR_LOAD:
    mlc_str_printf(o, "%s[", e->load.buf->name);
    for (int i = 0; i < e->load.buf->ndim; i++) {
      if (i) mlc_str_puts(o, ",");
      sexp_(o, e->load.indices[i]);
    }
    mlc_str_puts(o, "]");
    return;
  case MLC_EXPR_NOT:
    mlc_str_puts(o, "(not ");
    sexp_(o, e->bin.a);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    mlc_str_printf(o, "(%s ", mlc_expr_kind_name(e->kind));
    sexp_(o, e->sel.cond);
    mlc_str_puts(o, " ");
    sexp_(o, e->sel.t);
    mlc_str_puts(o, " ");
    sexp_(o, e->sel.f);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_CAST:
    mlc_str_printf(o, "(cast:%s ", mlc_dtype_name(e->dtype));
    sexp_(o, e->cast.value);
    mlc_str_puts(o, ")");
    return;
  case MLC_EXPR_CALL:
    mlc_str_printf(o, "(%s", mlc_intrin_name(e->call.op));
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) {
      mlc_str_puts(o, " ");
      sexp_(o, e->call.args[i]);
    }
    mlc_str_puts(o, ")");
    return;
  default:
    mlc_str_printf(o, "(%s ", mlc_expr_kind_name(e->kind));
    sexp_(o, e->bin.a);
    mlc_str_puts(o, " ");
    sexp_(o, e->bin.b);
    mlc_str_puts(o, ")");
    return;
  }
}

static char sexp_buf[1024];
static const char *sexp(const mlc_expr *e) {
  if (!e) return "(null)";
  mlc_str o = {0};
  sexp_(&o, e);
  snprintf(sexp_buf, sizeof sexp_buf, "%s", mlc_str_cstr(&o));
  mlc_str_free(&o);
  return sexp_buf;
}

/* `BUF[vi] = EXPR` inside a block over one loop; buffers A f32, H f16,
 * N i32, L i64, Q bool, all (16,). Returns the stored value or NULL. */
static mlc_expr *store_value(mlc_arena *a, const char *buf, const char *expr, mlc_error *err) {
  char text[2048];
  snprintf(text, sizeof text,
           "@T.prim_func\n"
           "def f(A: T.Buffer((16,), \"float32\"), H: T.Buffer((16,), \"float16\"),\n"
           "      N: T.Buffer((16,), \"int32\"), L: T.Buffer((16,), \"int64\"),\n"
           "      Q: T.Buffer((16,), \"bool\")):\n"
           "    for i in range(16):\n"
           "        with T.block(\"b\"):\n"
           "            vi = T.axis.spatial(16, i)\n"
           "            T.reads()\n"
           "            T.writes()\n"
           "            %s[vi] = %s\n",
           buf, expr);
  mlc_module *m = mlc_parse_module(a, "e.py", text, err);
  if (!m) return NULL;
  mlc_block *b = find_block(m->funcs[0], "b");
  return b && b->body && b->body->kind == MLC_STMT_STORE ? b->body->store.value : NULL;
}

#define CHECK_EXPR(buf, src, want)                                                     \
  do {                                                                                 \
    mlc_error err_;                                                                    \
    mlc_expr *e_ = store_value(a, buf, src, &err_);                                    \
    if (!e_) test_fail_(__FILE__, __LINE__, "%s: %s", src, err_.msg);                  \
    else if (strcmp(sexp(e_), want) != 0)                                              \
      test_fail_(__FILE__, __LINE__, "%s: got %s want %s", src, sexp(e_), want);       \
  } while (0)

#define CHECK_EXPR_ERR(buf, src, phrase)                                               \
  do {                                                                                 \
    mlc_error err_;                                                                    \
    mlc_expr *e_ = store_value(a, buf, src, &err_);                                    \
    if (e_) test_fail_(__FILE__, __LINE__, "%s: parsed, want error", src);             \
    else if (!strstr(err_.msg, phrase))                                                \
      test_fail_(__FILE__, __LINE__, "%s: error \"%s\" lacks \"%s\"", src, err_.msg, phrase); \
  } while (0)

/* ---- whole programs --------------------------------------------------------- */

static const char *mm_relu =
    "# from tvm.script import ir as I\n"
    "# from tvm.script import tir as T\n"
    "from tvm.script import tir as T\n"
    "import tvm\n"
    "\n"
    "@tvm.script.ir_module\n"
    "class MyModule:\n"
    "    @T.prim_func\n"
    "    def mm_relu(A: T.Buffer((128, 128), \"float32\"),\n"
    "                B: T.Buffer((128, 128), \"float32\"),\n"
    "                C: T.Buffer((128, 128), \"float32\")):\n"
    "        T.func_attr({\"global_symbol\": \"mm_relu\", \"tir.noalias\": True})\n"
    "        Y = T.alloc_buffer((128, 128), dtype=\"float32\")\n"
    "        for i, j, k in T.grid(128, 128, 128):\n"
    "            with T.block(\"Y\"):\n"
    "                vi = T.axis.spatial(128, i)\n"
    "                vj = T.axis.spatial(128, j)\n"
    "                vk = T.axis.reduce(128, k)\n"
    "                with T.init():\n"
    "                    Y[vi, vj] = T.float32(0)\n"
    "                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "        for i, j in T.grid(128, 128):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(128, i)\n"
    "                vj = T.axis.spatial(128, j)\n"
    "                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))\n";

static void test_module_matmul(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a, mm_relu);
  if (m) {
    CHECK_STREQ(m->name, "MyModule");
    CHECK(m->n_funcs == 1);
    mlc_prim_func *f = m->funcs[0];
    CHECK_STREQ(f->name, "mm_relu");
    CHECK(f->n_params == 3);
    CHECK_STREQ(f->params[2]->name, "C");
    CHECK(f->params[0]->ndim == 2 && f->params[0]->shape[0] == 128 && f->params[0]->shape[1] == 128);
    CHECK(f->params[0]->dtype == MLC_FLOAT32);
    CHECK_STREQ(f->params[0]->scope, "global");
    CHECK(f->n_attrs == 2);
    const mlc_ann *gs = mlc_ann_find(f->n_attrs, f->attrs, "global_symbol");
    CHECK(gs && gs->kind == MLC_ANN_STRING && strcmp(gs->s, "mm_relu") == 0);
    const mlc_ann *na = mlc_ann_find(f->n_attrs, f->attrs, "tir.noalias");
    CHECK(na && na->kind == MLC_ANN_BOOL && na->i == 1);
    CHECK(f->body->kind == MLC_STMT_BLOCK_REALIZE && f->body->realize.predicate == NULL);
    mlc_block *root = mlc_func_root(f);
    CHECK_STREQ(root->name, "root");
    CHECK(root->n_iters == 0 && root->n_reads == 0 && root->n_writes == 0);
    CHECK(root->n_allocs == 1);
    CHECK_STREQ(root->allocs[0]->name, "Y");
    CHECK(root->allocs[0]->dtype == MLC_FLOAT32 && root->allocs[0]->ndim == 2);
    CHECK(seq_len(root->body) == 2);
    /* T.grid(128, 128, 128): three nested serial loops from 0. */
    mlc_stmt *l = nth(root->body, 0);
    const char *names[] = {"i", "j", "k"};
    for (int d = 0; d < 3; d++) {
      CHECK(l && l->kind == MLC_STMT_FOR);
      if (!l || l->kind != MLC_STMT_FOR) break;
      CHECK(l->loop.kind == MLC_FOR_SERIAL && is_int(l->loop.min, 0) && is_int(l->loop.extent, 128));
      CHECK_STREQ(l->loop.var->name, names[d]);
      CHECK(l->loop.var->dtype == MLC_INT32);
      l = l->loop.body;
    }
    CHECK(l && l->kind == MLC_STMT_BLOCK_REALIZE);
    mlc_block *y = find_block(f, "Y");
    CHECK(y != NULL);
    if (y) {
      CHECK(y->n_iters == 3);
      CHECK(y->iters[0].kind == MLC_ITER_SPATIAL && y->iters[2].kind == MLC_ITER_REDUCE);
      CHECK(is_int(y->iters[2].dom.extent, 128) && is_int(y->iters[2].dom.min, 0));
      CHECK_STREQ(y->iters[0].var->name, "vi");
      mlc_stmt *r = find_realize(f->body, "Y");
      CHECK(is_var(r->realize.values[0], "i") && is_var(r->realize.values[2], "k"));
      /* Inferred regions: reads A and B (the own-output read is implicit). */
      CHECK(y->n_writes == 1 && y->writes[0].buf == root->allocs[0]);
      CHECK(y->n_reads == 2);
      if (y->n_reads == 2) {
        CHECK(y->reads[0].buf == f->params[0] && y->reads[1].buf == f->params[1]);
        CHECK(is_var(y->reads[0].ranges[1].min, "vk") && is_int(y->reads[0].ranges[1].extent, 1));
      }
      CHECK(y->init && y->init->kind == MLC_STMT_STORE);
      if (y->init) {
        CHECK(y->init->store.value->kind == MLC_EXPR_FLOAT_IMM);
        CHECK(y->init->store.value->dtype == MLC_FLOAT32);
      }
      CHECK(y->body && y->body->kind == MLC_STMT_STORE);
      if (y->body)
        CHECK_STREQ(sexp(y->body->store.value), "(add Y[vi,vj] (mul A[vi,vk] B[vk,vj]))");
    }
    mlc_block *c = find_block(f, "C");
    CHECK(c && c->n_iters == 2 && c->n_reads == 1 && c->n_writes == 1 && !c->init);
    if (c) CHECK_STREQ(sexp(c->body->store.value), "(max Y[vi,vj] 0f32)");
    mlc_error err;
    CHECK_MSG(mlc_verify_module(m, &err), "%s", err.msg);
  }
  mlc_arena_free(a);
}

static void test_bare_funcs(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def f(A: T.Buffer((4,), \"float32\")):\n"
                           "    for i in range(4):\n"
                           "        A[i] = 1\n"
                           "\n"
                           "# between\n"
                           "@T.prim_func\n"
                           "def g(A: T.Buffer((4,), \"float32\")) -> None:\n"
                           "    pass\n");
  if (m) {
    CHECK(m->name == NULL);
    CHECK(m->n_funcs == 2);
    CHECK_STREQ(m->funcs[1]->name, "g");
    /* A store outside any block, literal converted to the buffer dtype. */
    mlc_stmt *l = mlc_func_root(m->funcs[0])->body;
    CHECK(l->kind == MLC_STMT_FOR && l->loop.body->kind == MLC_STMT_STORE);
    CHECK(l->loop.body->store.value->kind == MLC_EXPR_FLOAT_IMM);
    /* An empty body is T.evaluate(0). */
    mlc_stmt *g = mlc_func_root(m->funcs[1])->body;
    CHECK(g->kind == MLC_STMT_EVALUATE && is_int(g->eval.value, 0));
  }
  mlc_arena_free(a);
}

static void test_buffer_forms(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def f(A: T.Buffer[(128, 64), \"float16\"], B: T.Buffer[128, \"int8\"],\n"
                           "      C: T.Buffer((16,)), D: T.Buffer((2, 3, 4), dtype=\"int64\"),\n"
                           "      E: T.Buffer((8,), \"float32\", scope=\"shared\"), F: T.Buffer(7, \"bool\"),)"
                           " -> None:\n"
                           "    X = T.alloc_buffer((4, 4), \"int32\", scope=\"local\")\n"
                           "    Z = T.alloc_buffer([3])\n"
                           "    T.evaluate(0)\n");
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->n_params == 6);
    CHECK(f->params[0]->dtype == MLC_FLOAT16 && f->params[0]->ndim == 2 && f->params[0]->shape[1] == 64);
    CHECK(f->params[1]->dtype == MLC_INT8 && f->params[1]->ndim == 1 && f->params[1]->shape[0] == 128);
    CHECK(f->params[2]->dtype == MLC_FLOAT32 && f->params[2]->ndim == 1 && f->params[2]->shape[0] == 16);
    CHECK(f->params[3]->dtype == MLC_INT64 && f->params[3]->ndim == 3 && f->params[3]->shape[2] == 4);
    CHECK_STREQ(f->params[4]->scope, "shared");
    CHECK(f->params[5]->dtype == MLC_BOOL && f->params[5]->shape[0] == 7);
    mlc_block *root = mlc_func_root(f);
    CHECK(root->n_allocs == 2);
    if (root->n_allocs == 2) {
      CHECK(root->allocs[0]->dtype == MLC_INT32);
      CHECK_STREQ(root->allocs[0]->scope, "local");
      CHECK(root->allocs[1]->ndim == 1 && root->allocs[1]->shape[0] == 3);
      CHECK(root->allocs[1]->dtype == MLC_FLOAT32);
    }
  }
  mlc_arena_free(a);
}

static void test_match_buffer(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def f(a: T.handle, B: T.Buffer((8,), \"float32\"), c: T.handle):\n"
                           "    C = T.match_buffer(c, (8,), dtype=\"float16\")\n"
                           "    A = T.match_buffer(a, (4, 8), \"int32\")\n"
                           "    for i in range(8):\n"
                           "        with T.block(\"b\"):\n"
                           "            vi = T.axis.S(8, i)\n"
                           "            C[vi] = T.Cast(\"float16\", A[0, vi]) + T.Cast(\"float16\", B[vi])\n");
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->n_params == 3);
    CHECK_STREQ(f->params[0]->name, "A");
    CHECK(f->params[0]->dtype == MLC_INT32 && f->params[0]->ndim == 2);
    CHECK_STREQ(f->params[2]->name, "C");
    CHECK(f->params[2]->dtype == MLC_FLOAT16);
    mlc_block *b = find_block(f, "b");
    CHECK(b && b->n_reads == 2 && b->n_writes == 1 && b->writes[0].buf == f->params[2]);
  }
  mlc_arena_free(a);
}

static void test_func_attr_values(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def main(A: T.Buffer((1,), \"float32\")):\n"
                           "    T.func_attr({\"s\": 'x\\ty', \"i\": 42, \"n\": -3, \"f\": 0.5,\n"
                           "                 \"e\": 1e-5, \"t\": True, \"b\": T.bool(True), \"no\": False,\n"
                           "                 \"inf\": float(\"inf\"), \"i64\": T.int64(7)})\n"
                           "    A[0] = 0.0\n");
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->n_attrs == 10);
    const mlc_ann *x;
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "s")) && x->kind == MLC_ANN_STRING &&
          strcmp(x->s, "x\ty") == 0);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "i")) && x->kind == MLC_ANN_INT && x->i == 42);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "n")) && x->kind == MLC_ANN_INT && x->i == -3);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "f")) && x->kind == MLC_ANN_FLOAT && x->f == 0.5);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "e")) && x->kind == MLC_ANN_FLOAT && x->f == 1e-5);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "t")) && x->kind == MLC_ANN_BOOL && x->i == 1);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "b")) && x->kind == MLC_ANN_BOOL && x->i == 1);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "no")) && x->kind == MLC_ANN_BOOL && x->i == 0);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "inf")) && x->kind == MLC_ANN_FLOAT && x->f > 1e300);
    CHECK((x = mlc_ann_find(f->n_attrs, f->attrs, "i64")) && x->kind == MLC_ANN_INT && x->i == 7);
  }
  mlc_arena_free(a);
}

static void test_explicit_root(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def main(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\")):\n"
                           "    T.func_attr({\"global_symbol\": \"main\"})\n"
                           "    with T.block(\"root\"):\n"
                           "        T.reads()\n"
                           "        T.writes()\n"
                           "        S = T.alloc_buffer((8,), scope=\"shared\")\n"
                           "        for i in range(8):\n"
                           "            with T.block(\"S\"):\n"
                           "                v = T.axis.spatial(8, i)\n"
                           "                S[v] = A[v]\n"
                           "        for i in range(8):\n"
                           "            with T.block(\"B\"):\n"
                           "                v = T.axis.spatial(8, i)\n"
                           "                B[v] = S[v] * 2.0\n");
  if (m) {
    mlc_block *root = mlc_func_root(m->funcs[0]);
    CHECK_STREQ(root->name, "root");
    CHECK(root->n_iters == 0 && root->n_reads == 0 && root->n_writes == 0);
    CHECK(root->n_allocs == 1 && strcmp(root->allocs[0]->scope, "shared") == 0);
    CHECK(seq_len(root->body) == 2);
    mlc_block *s = find_block(m->funcs[0], "S");
    CHECK(s && s->n_reads == 1 && s->reads[0].buf == m->funcs[0]->params[0]);
  }
  mlc_arena_free(a);
}

static void check_reprint(const char *text, const char *want_line);

/* An explicit root may open with T.init() (a tensor intrinsic describing a
 * block with its init): it is the root block's init, printed and read
 * back the same. */
static void test_explicit_root_init(void) {
  static const char text[] = "@T.prim_func\n"
                             "def f(A: T.Buffer((4, 8), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
                             "    with T.block(\"root\"):\n"
                             "        T.reads(A[0:4, 0:8])\n"
                             "        T.writes(C[0:4])\n"
                             "        with T.init():\n"
                             "            for i in range(4):\n"
                             "                with T.block(\"init\"):\n"
                             "                    vi = T.axis.spatial(4, i)\n"
                             "                    C[vi] = T.float32(0)\n"
                             "        for i, k in T.grid(4, 8):\n"
                             "            with T.block(\"update\"):\n"
                             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
                             "                C[vi] = C[vi] + A[vi, vk]\n";
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a, text);
  if (m) {
    mlc_block *root = mlc_func_root(m->funcs[0]);
    CHECK(root->init && root->init->kind == MLC_STMT_FOR && root->body->kind == MLC_STMT_FOR);
    CHECK(find_block(m->funcs[0], "init") && find_block(m->funcs[0], "update"));
  }
  mlc_arena_free(a);
  check_reprint(text, "        with T.init():\n            for i in range(4):");
}

static void test_loop_kinds(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(
      a,
      "@T.prim_func\n"
      "def main(A: T.Buffer((64,), \"float32\")):\n"
      "    for i0 in range(4):\n"
      "        T.evaluate(i0)\n"
      "    for i1 in range(2, 10):\n"
      "        T.evaluate(i1)\n"
      "    for i2 in T.serial(5):\n"
      "        T.evaluate(i2)\n"
      "    for i3 in T.serial(1, 4, annotations={\"pragma_auto_unroll_max_step\": 16}):\n"
      "        T.evaluate(i3)\n"
      "    for i4 in T.parallel(8):\n"
      "        T.evaluate(i4)\n"
      "    for i5 in T.vectorized(4):\n"
      "        T.evaluate(i5)\n"
      "    for i6 in T.unroll(3):\n"
      "        T.evaluate(i6)\n"
      "    for i7 in T.thread_binding(8, thread=\"blockIdx.x\"):\n"
      "        T.evaluate(i7)\n"
      "    for i8 in T.thread_binding(0, 32, thread=\"threadIdx.y\"):\n"
      "        T.evaluate(i8)\n"
      "    for i9 in T.grid(6):\n"
      "        T.evaluate(i9)\n"
      "    for i10 in T.thread_binding(2, thread=\"vthread.x\", annotations={\"k\": \"v\"}):\n"
      "        T.evaluate(i10)\n");
  if (m) {
    mlc_stmt *b = mlc_func_root(m->funcs[0])->body;
    CHECK(seq_len(b) == 11);
    struct {
      mlc_for_kind kind;
      int64_t min, ext;
      const char *thread;
      int n_anns;
    } want[] = {
        {MLC_FOR_SERIAL, 0, 4, NULL, 0},         {MLC_FOR_SERIAL, 2, 8, NULL, 0},
        {MLC_FOR_SERIAL, 0, 5, NULL, 0},         {MLC_FOR_SERIAL, 1, 3, NULL, 1},
        {MLC_FOR_PARALLEL, 0, 8, NULL, 0},       {MLC_FOR_VECTORIZED, 0, 4, NULL, 0},
        {MLC_FOR_UNROLLED, 0, 3, NULL, 0},       {MLC_FOR_THREAD_BINDING, 0, 8, "blockIdx.x", 0},
        {MLC_FOR_THREAD_BINDING, 0, 32, "threadIdx.y", 0}, {MLC_FOR_SERIAL, 0, 6, NULL, 0},
        {MLC_FOR_THREAD_BINDING, 0, 2, "vthread.x", 1},
    };
    for (int i = 0; i < 11 && i < seq_len(b); i++) {
      mlc_stmt *l = nth(b, i);
      CHECK_MSG(l->kind == MLC_STMT_FOR && l->loop.kind == want[i].kind, "loop %d kind", i);
      CHECK_MSG(is_int(l->loop.min, want[i].min) && is_int(l->loop.extent, want[i].ext),
                "loop %d range", i);
      CHECK_MSG((!want[i].thread && !l->loop.thread) ||
                    (want[i].thread && l->loop.thread && !strcmp(want[i].thread, l->loop.thread)),
                "loop %d thread", i);
      CHECK_MSG(l->loop.n_anns == want[i].n_anns, "loop %d anns", i);
      CHECK(l->loop.body->kind == MLC_STMT_EVALUATE && l->loop.body->eval.value->var == l->loop.var);
    }
    const mlc_ann *x = mlc_ann_find(nth(b, 3)->loop.n_anns, nth(b, 3)->loop.anns,
                                    "pragma_auto_unroll_max_step");
    CHECK(x && x->kind == MLC_ANN_INT && x->i == 16);
  }
  mlc_arena_free(a);
}

static void test_block_header(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(
      a,
      "@T.prim_func\n"
      "def main(A: T.Buffer((1027,), \"float32\"), B: T.Buffer((1024,), \"float32\"),\n"
      "         M: T.Buffer((128, 16), \"float32\")):\n"
      "    for i_0 in T.thread_binding(8, thread=\"blockIdx.x\"):\n"
      "        for i_1 in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
      "            with T.block(\"C\"):\n"
      "                T.block_attr({\"meta_schedule.tiling_structure\": \"SSRSRS\"})\n"
      "                T.where(i_0 * 128 + i_1 < 1000)\n"
      "                vi = T.axis.spatial(1024, i_0 * 128 + i_1)\n"
      "                vr = T.axis.R((4, 12), i_1 % 8 + 4)\n"
      "                T.reads(A[vi:vi + 3], M[vi % 128, 0:16], M[0:128, 3])\n"
      "                T.writes([B[vi]])\n"
      "                L = T.alloc_buffer((4,), scope=\"local\")\n"
      "                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]\n"
      "            with T.block(\"D\"):\n"
      "                T.reads()\n"
      "                T.writes(B[0:1024])\n"
      "                B[i_1] = 1.0\n");
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    mlc_stmt *r = find_realize(f->body, "C");
    CHECK(r != NULL);
    if (r) {
      mlc_block *c = r->realize.block;
      CHECK(c->n_anns == 1 && c->anns[0].kind == MLC_ANN_STRING);
      CHECK(r->realize.predicate && r->realize.predicate->kind == MLC_EXPR_LT);
      CHECK(c->n_iters == 2);
      CHECK(c->iters[1].kind == MLC_ITER_REDUCE && is_int(c->iters[1].dom.min, 4) &&
            is_int(c->iters[1].dom.extent, 8));
      CHECK_STREQ(sexp(r->realize.values[0]), "(add (mul i_0 128) i_1)");
      CHECK_STREQ(sexp(r->realize.values[1]), "(add (floormod i_1 8) 4)");
      CHECK(c->n_reads == 3 && c->n_writes == 1);
      if (c->n_reads == 3) {
        CHECK(is_var(c->reads[0].ranges[0].min, "vi") && is_int(c->reads[0].ranges[0].extent, 3));
        CHECK(is_int(c->reads[1].ranges[0].extent, 1) && is_int(c->reads[1].ranges[1].min, 0) &&
              is_int(c->reads[1].ranges[1].extent, 16));
        CHECK(is_int(c->reads[2].ranges[0].extent, 128) && is_int(c->reads[2].ranges[1].min, 3));
      }
      CHECK(c->n_allocs == 1 && strcmp(c->allocs[0]->scope, "local") == 0);
    }
    mlc_block *d = find_block(f, "D");
    CHECK(d && d->n_iters == 0 && d->n_reads == 0 && d->n_writes == 1);
    if (d && d->n_writes) CHECK(is_int(d->writes[0].ranges[0].extent, 1024));
  }
  mlc_arena_free(a);
}

/* Only one of T.reads/T.writes: the other is inferred, the given one kept. */
static void test_partial_regions(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def main(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
                           "    for i in range(16):\n"
                           "        with T.block(\"w\"):\n"
                           "            v = T.axis.spatial(16, i)\n"
                           "            T.writes(B[0:16])\n"
                           "            B[v] = A[v]\n"
                           "        with T.block(\"r\"):\n"
                           "            v = T.axis.spatial(16, i)\n"
                           "            T.reads(A[0:16])\n"
                           "            B[v] = A[v]\n");
  if (m) {
    mlc_block *w = find_block(m->funcs[0], "w"), *r = find_block(m->funcs[0], "r");
    CHECK(w && w->n_writes == 1 && is_int(w->writes[0].ranges[0].extent, 16));
    CHECK(w && w->n_reads == 1 && w->reads[0].buf == m->funcs[0]->params[0] &&
          is_int(w->reads[0].ranges[0].extent, 1));
    CHECK(r && r->n_reads == 1 && is_int(r->reads[0].ranges[0].extent, 16));
    CHECK(r && r->n_writes == 1 && is_var(r->writes[0].ranges[0].min, "v"));
  }
  mlc_arena_free(a);
}

static void test_remap(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def main(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
                           "    for i in range(2, 10):\n"
                           "        for k in T.serial(16):\n"
                           "            with T.block(\"s\"):\n"
                           "                vk, vi = T.axis.remap(\"RS\", (k, i))\n"
                           "                with T.init():\n"
                           "                    B[vi] = 0\n"
                           "                B[vi] += A[vi, vk]\n");
  if (m) {
    mlc_stmt *r = find_realize(m->funcs[0]->body, "s");
    mlc_block *b = r ? r->realize.block : NULL;
    CHECK(b && b->n_iters == 2);
    if (b && b->n_iters == 2) {
      CHECK_STREQ(b->iters[0].var->name, "vk");
      CHECK(b->iters[0].kind == MLC_ITER_REDUCE && b->iters[1].kind == MLC_ITER_SPATIAL);
      CHECK(is_int(b->iters[0].dom.min, 0) && is_int(b->iters[0].dom.extent, 16));
      CHECK(is_int(b->iters[1].dom.min, 2) && is_int(b->iters[1].dom.extent, 8));
      CHECK(is_var(r->realize.values[0], "k") && is_var(r->realize.values[1], "i"));
      CHECK_STREQ(sexp(b->body->store.value), "(add B[vi] A[vi,vk])");
      CHECK(b->init->store.value->kind == MLC_EXPR_FLOAT_IMM);
      CHECK(b->n_reads == 1 && b->reads[0].buf == m->funcs[0]->params[0]);
    }
  }
  mlc_arena_free(a);
}

/* An init holding loops and a nested block, as in the notes' tmm example. */
static void test_init_with_blocks(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(
      a,
      "@T.prim_func\n"
      "def main(A: T.Buffer((64, 64), \"float32\"), B: T.Buffer((64, 64), \"float32\"),\n"
      "         C: T.Buffer((64, 64), \"float32\")):\n"
      "    for i0, j0, k0 in T.grid(4, 4, 4):\n"
      "        with T.block(\"tmm-16x16\"):\n"
      "            vi0, vj0, vk0 = T.axis.remap(\"SSR\", [i0, j0, k0])\n"
      "            T.reads(A[vi0 * 16:vi0 * 16 + 16, vk0 * 16:vk0 * 16 + 16], B[vj0 * 16:vj0 * 16 + 16, vk0 * 16:vk0 * 16 + 16])\n"
      "            T.writes(C[vi0 * 16:vi0 * 16 + 16, vj0 * 16:vj0 * 16 + 16])\n"
      "            with T.init():\n"
      "                for i1, j1 in T.grid(16, 16):\n"
      "                    with T.block(\"tmm_init\"):\n"
      "                        vi1, vj1 = T.axis.remap(\"SS\", [i1, j1])\n"
      "                        T.reads()\n"
      "                        T.writes(C[vi0 * 16 + vi1, vj0 * 16 + vj1])\n"
      "                        C[vi0 * 16 + vi1, vj0 * 16 + vj1] = T.float32(0)\n"
      "            for i1, j1, k1 in T.grid(16, 16, 16):\n"
      "                with T.block(\"tmm\"):\n"
      "                    vi1, vj1, vk1 = T.axis.remap(\"SSR\", [i1, j1, k1])\n"
      "                    C[vi0 * 16 + vi1, vj0 * 16 + vj1] = C[vi0 * 16 + vi1, vj0 * 16 + vj1] + A[vi0 * 16 + vi1, vk0 * 16 + vk1] * B[vj0 * 16 + vj1, vk0 * 16 + vk1]\n");
  if (m) {
    mlc_block *t = find_block(m->funcs[0], "tmm-16x16");
    CHECK(t && t->init && t->init->kind == MLC_STMT_FOR);
    if (t) {
      CHECK(t->n_reads == 2);
      if (t->n_reads == 2) {
        CHECK_STREQ(sexp(t->reads[0].ranges[0].min), "(mul vi0 16)");
        CHECK(is_int(t->reads[0].ranges[0].extent, 16) && is_int(t->reads[1].ranges[1].extent, 16));
      }
    }
    mlc_block *ti = find_block(m->funcs[0], "tmm_init");
    CHECK(ti && ti->n_iters == 2 && ti->n_reads == 0 && ti->n_writes == 1);
    mlc_block *tm = find_block(m->funcs[0], "tmm");
    CHECK(tm && tm->n_iters == 3 && tm->n_writes == 1 && tm->n_reads >= 2);
  }
  mlc_arena_free(a);
}

static void test_statements(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def main(A: T.Buffer((16,), \"float32\"), N: T.Buffer((16,), \"int32\")):\n"
                           "    for i in range(16):\n"
                           "        if i < 4:\n"
                           "            A[i] = 1\n"
                           "        elif i < 8: A[i] = 2\n"
                           "        elif i == 9:\n"
                           "            pass\n"
                           "        else:\n"
                           "            A[i] -= 3\n"
                           "            A[i] *= A[i]\n"
                           "        N[i] += 1\n"
                           "        T.evaluate(T.exp(A[i]))\n"
                           "        X = T.decl_buffer((4,), \"float32\", scope=\"local\")\n"
                           "        X[0] = A[i]\n"
                           "        Y = T.decl_buffer((2,), \"int32\")\n"
                           "        Y[1] = N[i]\n"
                           "        A[i] = X[0]\n");
  if (m) {
    mlc_stmt *l = mlc_func_root(m->funcs[0])->body;
    CHECK(l->kind == MLC_STMT_FOR);
    mlc_stmt *b = l->loop.body;
    CHECK(seq_len(b) == 4); /* if, N store, evaluate, allocate */
    mlc_stmt *s0 = nth(b, 0);
    CHECK(s0 && s0->kind == MLC_STMT_IF);
    if (s0 && s0->kind == MLC_STMT_IF) {
      CHECK_STREQ(sexp(s0->if_.cond), "(lt i 4)");
      CHECK(s0->if_.then_s->kind == MLC_STMT_STORE);
      mlc_stmt *e1 = s0->if_.else_s;
      CHECK(e1 && e1->kind == MLC_STMT_IF && e1->if_.then_s->kind == MLC_STMT_STORE);
      mlc_stmt *e2 = e1 ? e1->if_.else_s : NULL;
      CHECK(e2 && e2->kind == MLC_STMT_IF && e2->if_.then_s->kind == MLC_STMT_EVALUATE);
      mlc_stmt *e3 = e2 ? e2->if_.else_s : NULL;
      CHECK(e3 && seq_len(e3) == 2);
      if (e3 && seq_len(e3) == 2) {
        CHECK_STREQ(sexp(nth(e3, 0)->store.value), "(sub A[i] 3f32)");
        CHECK_STREQ(sexp(nth(e3, 1)->store.value), "(mul A[i] A[i])");
      }
    }
    CHECK(nth(b, 1) && !strcmp(sexp(nth(b, 1)->store.value), "(add N[i] 1)"));
    CHECK(nth(b, 2) && nth(b, 2)->kind == MLC_STMT_EVALUATE);
    mlc_stmt *al = nth(b, 3);
    CHECK(al && al->kind == MLC_STMT_ALLOCATE);
    if (al && al->kind == MLC_STMT_ALLOCATE) {
      CHECK_STREQ(al->alloc.buf->name, "X");
      CHECK_STREQ(al->alloc.buf->scope, "local");
      CHECK(seq_len(al->alloc.body) == 2);
      mlc_stmt *al2 = nth(al->alloc.body, 1);
      CHECK(al2 && al2->kind == MLC_STMT_ALLOCATE && al2->alloc.buf->dtype == MLC_INT32);
      if (al2) CHECK(seq_len(al2->alloc.body) == 2);
    }
  }
  mlc_arena_free(a);
}

static void test_expressions(void) {
  mlc_arena *a = mlc_arena_new();
  CHECK_EXPR("A", "A[vi] + A[vi] * 2.0", "(add A[vi] (mul A[vi] 2f32))");
  CHECK_EXPR("A", "(A[vi] + A[vi]) * 2", "(mul (add A[vi] A[vi]) 2f32)");
  CHECK_EXPR("N", "vi - 1 - 2", "(sub (sub vi 1) 2)");
  CHECK_EXPR("N", "vi - (1 - 2)", "(sub vi (sub 1 2))");
  CHECK_EXPR("N", "vi // 4 % 2 * 3", "(mul (floormod (floordiv vi 4) 2) 3)");
  CHECK_EXPR("N", "-vi + -3", "(add (mul vi -1) -3)");
  CHECK_EXPR("N", "- -vi", "(mul (mul vi -1) -1)");
  CHECK_EXPR("A", "-A[vi] / 2", "(div (mul A[vi] -1f32) 2f32)");
  CHECK_EXPR("Q", "not vi < 3 and vi > 1 or vi == 0",
             "(or (and (not (lt vi 3)) (gt vi 1)) (eq vi 0))");
  CHECK_EXPR("Q", "0 <= vi < 10", "(and (le 0 vi) (lt vi 10))");
  CHECK_EXPR("Q", "vi != 3 and not (vi >= 2 or True)", "(and (ne vi 3) (not (or (ge vi 2) 1b)))");
  CHECK_EXPR("A", "T.max(A[vi], 0) + T.min(A[vi], T.float32(1))",
             "(add (max A[vi] 0f32) (min A[vi] 1f32))");
  CHECK_EXPR("N", "max(vi, 3) - min(2, vi)", "(sub (max vi 3) (min 2 vi))");
  CHECK_EXPR("N", "T.floordiv(vi, 3) + T.floormod(vi, 5)", "(add (floordiv vi 3) (floormod vi 5))");
  CHECK_EXPR("A", "T.exp(A[vi]) + T.sqrt(A[vi]) + T.log(A[vi]) + T.tanh(A[vi])",
             "(add (add (add (exp A[vi]) (sqrt A[vi])) (log A[vi])) (tanh A[vi]))");
  CHECK_EXPR("A", "T.sigmoid(T.rsqrt(T.erf(T.abs(T.floor(T.ceil(A[vi]))))))",
             "(sigmoid (rsqrt (erf (abs (floor (ceil A[vi]))))))");
  CHECK_EXPR("A", "T.pow(A[vi], 2)", "(pow A[vi] 2f32)");
  CHECK_EXPR("A", "T.sin(T.cos(T.tan(A[vi]))) + T.asin(T.acos(T.atan(A[vi])))",
             "(add (sin (cos (tan A[vi]))) (asin (acos (atan A[vi]))))");
  CHECK_EXPR("A", "T.sinh(T.cosh(A[vi])) + T.asinh(T.acosh(T.atanh(T.round(A[vi]))))",
             "(add (sinh (cosh A[vi])) (asinh (acosh (atanh (round A[vi])))))");
  CHECK_EXPR("N", "T.abs(vi - 8)", "(abs (sub vi 8))");
  CHECK_EXPR("H", "T.Cast(\"float16\", A[vi]) * 2", "(mul (cast:float16 A[vi]) 2f16)");
  CHECK_EXPR("A", "T.if_then_else(vi < 15, A[vi + 1], 0.0)",
             "(if_then_else (lt vi 15) A[(add vi 1)] 0f32)");
  CHECK_EXPR("N", "T.Select(vi > 2, vi, 0)", "(select (gt vi 2) vi 0)");
  CHECK_EXPR("H", "T.float16(1.5) + H[vi]", "(add 1.5f16 H[vi])");
  CHECK_EXPR("H", "H[vi] + 1.5", "(add H[vi] 1.5f16)");
  CHECK_EXPR("L", "T.int64(1) + T.Cast(\"int64\", vi)", "(add 1i64 (cast:int64 vi))");
  CHECK_EXPR("L", "T.int64(-5)", "-5i64");
  CHECK_EXPR("N", "T.int32(3) + T.Cast(\"int32\", T.int8(2))", "(add 3 (cast:int32 2i8))");
  CHECK_EXPR("Q", "T.bool(True)", "1b");
  CHECK_EXPR("A", "T.float32(0)", "0f32");
  CHECK_EXPR("A", "1e-5 + .5 + 2.", "(add (add 1e-05f32 0.5f32) 2f32)");
  CHECK_EXPR("A", "T.float32(\"-inf\")", "-inff32");
  CHECK_EXPR("N", "0x10", "16");
  CHECK_EXPR("A", "(A[vi]\n   + 1)  # joined\n", "(add A[vi] 1f32)");
  CHECK_EXPR("A", "A[vi] + \\\n    1", "(add A[vi] 1f32)");
  mlc_arena_free(a);
}

static void test_literal_coercion(void) {
  mlc_arena *a = mlc_arena_new();
  CHECK_EXPR("A", "0", "0f32");
  CHECK_EXPR("H", "0", "0f16");
  CHECK_EXPR("H", "2.5", "2.5f16");
  CHECK_EXPR("L", "7", "7i64");
  CHECK_EXPR("Q", "True", "1b");
  CHECK_EXPR("H", "H[vi] * 2", "(mul H[vi] 2f16)");
  CHECK_EXPR("N", "2 * 3", "(mul 2 3)");
  CHECK_EXPR("A", "2 * 0.5", "(mul 2f32 0.5f32)");
  CHECK_EXPR_ERR("A", "2 * 3 + vi", "cannot store a int32 value into float32 buffer A");
  CHECK_EXPR_ERR("A", "H[vi]", "float16");
  CHECK_EXPR_ERR("A", "A[vi] + H[vi]", "different dtypes: float32 and float16");
  CHECK_EXPR_ERR("N", "vi + 0.5", "different dtypes: int32 and float32");
  CHECK_EXPR_ERR("N", "vi + T.int64(1) + L[vi]", "different dtypes");
  CHECK_EXPR_ERR("N", "T.int8(300)", "does not fit in int8");
  CHECK_EXPR_ERR("Q", "vi and True", "must be bool");
  CHECK_EXPR_ERR("A", "T.exp(vi)", "expects a float argument, got int32");
  CHECK_EXPR_ERR("A", "A[1.5]", "expected an integer index");
  CHECK_EXPR_ERR("N", "True + 1", "different dtypes: bool and int32");
  CHECK_EXPR_ERR("Q", "True + True", "not defined for bool");
  mlc_arena_free(a);
}

static void test_int64_loops(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def f(A: T.Buffer((T.int64(16), T.int64(4)), \"float32\")):\n"
                           "    for i, j in T.grid(T.int64(16), T.int64(4)):\n"
                           "        with T.block(\"b\"):\n"
                           "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                           "            A[vi, vj] = A[vi, vj] * 2.0 + T.Cast(\"float32\", vi * 4 + 1)\n");
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->params[0]->shape[0] == 16 && f->params[0]->shape[1] == 4);
    mlc_stmt *l = mlc_func_root(f)->body;
    CHECK(l->kind == MLC_STMT_FOR && l->loop.var->dtype == MLC_INT64 &&
          l->loop.min->dtype == MLC_INT64);
    mlc_block *b = find_block(f, "b");
    CHECK(b && b->iters[0].var->dtype == MLC_INT64);
    if (b) CHECK_STREQ(sexp(b->body->store.value),
                       "(add (mul A[vi,vj] 2f32) (cast:float32 (add (mul vi 4i64) 1i64)))");
  }
  mlc_arena_free(a);
}

static void test_scoping(void) {
  mlc_arena *a = mlc_arena_new();
  /* Sibling loops reuse names; an inner block sees outer iter vars; a
   * decl_buffer shadows a parameter of the same name for the rest of its
   * suite only. */
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def f(A: T.Buffer((8,), \"float32\"), X: T.Buffer((8,), \"float32\")):\n"
                           "    for i in range(8):\n"
                           "        if i > 2:\n"
                           "            X = T.decl_buffer((1,), \"int32\")\n"
                           "            X[0] = i\n"
                           "        X[i] = A[i]\n"
                           "    for i in range(4):\n"
                           "        A[i] = X[i]\n");
  if (m) {
    mlc_stmt *l0 = nth(mlc_func_root(m->funcs[0])->body, 0);
    mlc_stmt *st = nth(l0->loop.body, 1);
    CHECK(st && st->kind == MLC_STMT_STORE && st->store.buf == m->funcs[0]->params[1]);
    mlc_stmt *l1 = nth(mlc_func_root(m->funcs[0])->body, 1);
    CHECK(l1 && l1->loop.var != l0->loop.var && is_int(l1->loop.extent, 4));
  }
  mlc_arena_free(a);
}

static void test_odd_forms(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func\n"
                           "def f(S: T.Buffer((), \"float32\"), A: T.Buffer((4, 8), \"float32\")):\n"
                           "    for i in range(4):\n"
                           "        with T.block(\"s\"):\n"
                           "            v, = T.axis.remap(\"R\", [i])\n"
                           "            T.reads(A[v, :], S[()])\n"
                           "            T.writes(S[()])\n"
                           "            with T.init():\n"
                           "                S[()] = 0\n"
                           "    for i in range(4):\n"
                           "        with T.block(\"only_init\"):\n"
                           "            w, = T.axis.spatial(4, i)\n"
                           "            with T.init():\n"
                           "                A[w, 0] = S[()]\n");
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->params[0]->ndim == 0);
    mlc_block *s = find_block(f, "s");
    CHECK(s && s->n_iters == 1 && s->iters[0].kind == MLC_ITER_REDUCE);
    CHECK(s && s->n_reads == 2 && is_int(s->reads[0].ranges[1].min, 0) &&
          is_int(s->reads[0].ranges[1].extent, 8));
    CHECK(s && s->body == NULL && s->init && s->init->store.buf == f->params[0]);
    mlc_block *o = find_block(f, "only_init");
    CHECK(o && o->n_iters == 1 && !strcmp(o->iters[0].var->name, "w") && o->body == NULL);
  }
  mlc_arena_free(a);
}

/* TVM's decorator options change nothing about the program. */
static void test_prim_func_options(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a,
                           "@T.prim_func(private=True, check_well_formed=False)\n"
                           "def f(A: T.Buffer((4,), \"float32\")):\n"
                           "    for i in range(4):\n"
                           "        A[i] = T.float32(0)\n");
  CHECK(m && m->n_funcs == 1 && !strcmp(m->funcs[0]->name, "f"));
  mlc_arena_free(a);
}

static void test_whitespace(void) {
  mlc_arena *a = mlc_arena_new();
  /* Tabs (consistently), comments everywhere, blank lines with spaces,
   * CRLF line ends, a docstring. */
  mlc_module *m = PARSE_OK(a,
                           "  # leading comment with indentation\r\n"
                           "@T.prim_func # trailing comment\r\n"
                           "def f(A: T.Buffer((4,), \"float32\"),  # param comment\r\n"
                           "      # a comment inside parentheses\r\n"
                           "      B: T.Buffer((4,), \"float32\")):\r\n"
                           "\t\"\"\"A docstring\r\n"
                           "\tover two lines.\"\"\"\r\n"
                           "\tfor i in range(4):   \r\n"
                           "   \r\n"
                           "\t\t# comment at a deeper level\r\n"
                           "\t\twith T.block('b'):\r\n"
                           "\t\t\tv = T.axis.spatial(4, i)\r\n"
                           "\r\n"
                           "\t\t\tB[v] = A[v]  # store\r\n"
                           "# end");
  if (m) {
    mlc_block *b = find_block(m->funcs[0], "b");
    CHECK(b && b->body->kind == MLC_STMT_STORE);
  }
  mlc_arena_free(a);
}

/* ---- the notes' examples: parse, check, reprint, reparse --------------------- */

static const char *const ref_examples[] = {
    /* window sum with shared memory and cooperative fetching */
    "# from tvm.script import ir as I\n"
    "# from tvm.script import tir as T\n"
    "\n"
    "@I.ir_module\n"
    "class Module:\n"
    "    @T.prim_func\n"
    "    def main(A: T.Buffer((1027,), \"float32\"), B: T.Buffer((1024,), \"float32\")):\n"
    "        T.func_attr({\"global_symbol\": \"main\", \"tir.noalias\": T.bool(True)})\n"
    "        # with T.block(\"root\"):\n"
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
    "                    B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]\n",
    /* decomposed reduction with vectorized loops and block attrs */
    "@I.ir_module\n"
    "class Module:\n"
    "    @T.prim_func\n"
    "    def linear0(X: T.Buffer((1, 784), \"float32\"), W: T.Buffer((128, 784), \"float32\"), B: T.Buffer((128,), \"float32\"), Z: T.Buffer((1, 128), \"float32\")):\n"
    "        T.func_attr({\"global_symbol\": \"linear0\", \"tir.noalias\": True})\n"
    "        # with T.block(\"root\"):\n"
    "        Y = T.alloc_buffer((1, 128))\n"
    "        for i_0, j_0 in T.grid(1, 1):\n"
    "            for i_1, j_1 in T.grid(1, 8):\n"
    "                for i_2_init, j_2_init, i_3_init in T.grid(1, 2, 1):\n"
    "                    for j_3_fused_init in T.vectorized(8):\n"
    "                        with T.block(\"Y_init\"):\n"
    "                            vi = T.axis.spatial(1, i_0 + i_1 + i_2_init + i_3_init)\n"
    "                            vj = T.axis.spatial(128, j_0 * 128 + j_1 * 16 + j_2_init * 8 + j_3_fused_init)\n"
    "                            T.reads()\n"
    "                            T.writes(Y[vi, vj])\n"
    "                            T.block_attr({\"meta_schedule.tiling_structure\": \"SSRSRS\"})\n"
    "                            Y[vi, vj] = T.float32(0)\n"
    "                for k_0, i_2, j_2, k_1, i_3 in T.grid(14, 1, 2, 56, 1):\n"
    "                    for j_3_fused in T.vectorized(8):\n"
    "                        with T.block(\"Y_update\"):\n"
    "                            vi = T.axis.spatial(1, i_0 + i_1 + i_2 + i_3)\n"
    "                            vj = T.axis.spatial(128, j_0 * 128 + j_1 * 16 + j_2 * 8 + j_3_fused)\n"
    "                            vk = T.axis.reduce(784, k_0 * 56 + k_1)\n"
    "                            T.reads(Y[vi, vj], X[vi, vk], W[vj, vk])\n"
    "                            T.writes(Y[vi, vj])\n"
    "                            T.block_attr({\"meta_schedule.tiling_structure\": \"SSRSRS\"})\n"
    "                            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]\n"
    "            for ax0, ax1 in T.grid(1, 128):\n"
    "                with T.block(\"Z\"):\n"
    "                    vi, vj = T.axis.remap(\"SS\", [ax0, ax1])\n"
    "                    T.reads(Y[vi, vj], B[vj])\n"
    "                    T.writes(Z[vi, vj])\n"
    "                    Z[vi, vj] = Y[vi, vj] + B[vj]\n",
    /* GPU local blocking: thread bindings, unroll, local cache */
    "@I.ir_module\n"
    "class Module:\n"
    "    @T.prim_func\n"
    "    def main(A: T.Buffer((1024, 1024), \"float32\"), B: T.Buffer((1024, 1024), \"float32\"), C: T.Buffer((1024, 1024), \"float32\")):\n"
    "        T.func_attr({\"global_symbol\": \"main\", \"tir.noalias\": True})\n"
    "        # with T.block(\"root\"):\n"
    "        C_local = T.alloc_buffer((1024, 1024), scope=\"local\")\n"
    "        for i_0 in T.thread_binding(16, thread=\"blockIdx.y\"):\n"
    "            for j_0 in T.thread_binding(16, thread=\"blockIdx.x\"):\n"
    "                for i_1 in T.thread_binding(8, thread=\"threadIdx.y\"):\n"
    "                    for j_1 in T.thread_binding(8, thread=\"threadIdx.x\"):\n"
    "                        for i_2_init, j_2_init in T.grid(8, 8):\n"
    "                            with T.block(\"C_init\"):\n"
    "                                vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2_init)\n"
    "                                vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2_init)\n"
    "                                T.reads()\n"
    "                                T.writes(C_local[vi, vj])\n"
    "                                C_local[vi, vj] = T.float32(0)\n"
    "                        for k_0 in range(256):\n"
    "                            for k_1 in T.unroll(4):\n"
    "                                for i_2, j_2 in T.grid(8, 8):\n"
    "                                    with T.block(\"C_update\"):\n"
    "                                        vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2)\n"
    "                                        vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2)\n"
    "                                        vk = T.axis.reduce(1024, k_0 * 4 + k_1)\n"
    "                                        T.reads(C_local[vi, vj], A[vi, vk], B[vk, vj])\n"
    "                                        T.writes(C_local[vi, vj])\n"
    "                                        C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "                        for ax0, ax1 in T.grid(8, 8):\n"
    "                            with T.block(\"C_local\"):\n"
    "                                v0 = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + ax0)\n"
    "                                v1 = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + ax1)\n"
    "                                T.reads(C_local[v0, v1])\n"
    "                                T.writes(C[v0, v1])\n"
    "                                C[v0, v1] = C_local[v0, v1]\n",
    /* te.create_prim_func output with int64 shapes, bare function */
    "# from tvm.script import tir as T\n"
    "\n"
    "@T.prim_func\n"
    "def te_matmul(rxplaceholder: T.Buffer((T.int64(128), T.int64(128)), \"float32\"), rxplaceholder_1: T.Buffer((T.int64(128), T.int64(128)), \"float32\"), matmul: T.Buffer((T.int64(128), T.int64(128)), \"float32\")):\n"
    "    T.func_attr({\"tir.noalias\": True})\n"
    "    # with T.block(\"root\"):\n"
    "    for i, j, k in T.grid(T.int64(128), T.int64(128), T.int64(128)):\n"
    "        with T.block(\"matmul\"):\n"
    "            v_i, v_j, v_k = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(rxplaceholder[v_i, v_k], rxplaceholder_1[v_k, v_j])\n"
    "            T.writes(matmul[v_i, v_j])\n"
    "            with T.init():\n"
    "                matmul[v_i, v_j] = T.float32(0)\n"
    "            matmul[v_i, v_j] = matmul[v_i, v_j] + rxplaceholder[v_i, v_k] * rxplaceholder_1[v_k, v_j]\n",
    /* the notes' input forms: old-style T.Buffer[...], -> None, 0.0 init, += */
    "@tvm.script.ir_module\n"
    "class MyModuleWindowSum:\n"
    "    @T.prim_func\n"
    "    def main(A: T.Buffer[(1027,), \"float32\"],\n"
    "             B: T.Buffer[(1024,), \"float32\"]) -> None:\n"
    "        T.func_attr({\"global_symbol\": \"main\", \"tir.noalias\": True})\n"
    "        for i in T.grid(1024):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]\n"
    "    @T.prim_func\n"
    "    def mm(A: T.Buffer((64, 64), \"float32\"), B: T.Buffer((64, 64), \"float32\"),\n"
    "           C: T.Buffer((64, 64), \"float32\")) -> None:\n"
    "        for i, j, k in T.grid(64, 64, 64):\n"
    "            with T.block(\"matmul\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = 0.0\n"
    "                C[vi, vj] += A[vi, vk] * B[vj, vk]\n",
};

static void test_reference_examples(void) {
  for (int i = 0; i < MLC_COUNTOF(ref_examples); i++) {
    mlc_arena *a = mlc_arena_new();
    mlc_module *m = PARSE_OK(a, ref_examples[i]);
    if (m) {
      mlc_str s1 = {0}, s2 = {0};
      mlc_print_module(&s1, m);
      mlc_error err;
      mlc_module *m2 = mlc_parse_module(a, "reprint.py", mlc_str_cstr(&s1), &err);
      CHECK_MSG(m2 != NULL, "example %d reprint does not parse: %s", i, err.msg);
      if (m2) {
        mlc_print_module(&s2, m2);
        CHECK_MSG(strcmp(mlc_str_cstr(&s1), mlc_str_cstr(&s2)) == 0, "example %d reprint differs", i);
        CHECK(m2->n_funcs == m->n_funcs);
        for (int k = 0; k < m->n_funcs && k < m2->n_funcs; k++)
          CHECK_MSG(mlc_func_struct_equal(m->funcs[k], m2->funcs[k]), "example %d func %d", i, k);
      }
      mlc_str_free(&s1);
      mlc_str_free(&s2);
    }
    mlc_arena_free(a);
  }
  /* Spot checks of what the examples say. */
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a, ref_examples[0]);
  if (m) {
    mlc_stmt *r = find_realize(m->funcs[0]->body, "A_shared");
    CHECK(r && r->realize.predicate && r->realize.predicate->kind == MLC_EXPR_LT);
    mlc_block *c = find_block(m->funcs[0], "C");
    CHECK(c && c->n_reads == 1 && is_int(c->reads[0].ranges[0].extent, 3));
    CHECK(mlc_func_root(m->funcs[0])->n_allocs == 1);
  }
  m = PARSE_OK(a, ref_examples[1]);
  if (m) {
    mlc_stmt *r = find_realize(m->funcs[0]->body, "Y_update");
    CHECK(r && r->realize.block->n_reads == 3 && r->realize.block->n_anns == 1);
    CHECK(r && !strcmp(sexp(r->realize.values[2]), "(add (mul k_0 56) k_1)"));
  }
  m = PARSE_OK(a, ref_examples[4]);
  if (m) {
    CHECK_STREQ(m->name, "MyModuleWindowSum");
    CHECK(m->n_funcs == 2);
    mlc_block *mm = find_block(mlc_module_find(m, "mm"), "matmul");
    CHECK(mm && mm->n_reads == 2 && mm->init);
    if (mm) CHECK_STREQ(sexp(mm->body->store.value), "(add C[vi,vj] (mul A[vi,vk] B[vj,vk]))");
  }
  mlc_arena_free(a);
}

/* ---- TVM's spellings: escapes, dtype= keywords, buffer layout keywords,
 * nested annotation values ---------------------------------------------------- */

/* The value of func_attr "s" in a function whose attrs are `attrs`. */
static const mlc_ann *attr_of(mlc_arena *a, const char *attrs, const char *key) {
  char text[1024];
  snprintf(text, sizeof text,
           "@T.prim_func\ndef f(A: T.Buffer((1,), \"float32\")):\n    T.func_attr(%s)\n"
           "    A[0] = 0.0\n", attrs);
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "s.py", text, &err);
  if (!m) {
    test_fail_(__FILE__, __LINE__, "%s: %s", attrs, err.msg);
    return NULL;
  }
  return mlc_ann_find(m->funcs[0]->n_attrs, m->funcs[0]->attrs, key);
}

/* print(parse(text)) == want, and parse(print) prints the same again. */
static void check_reprint(const char *text, const char *want_line) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a, text);
  if (m) {
    mlc_str o = {0}, o2 = {0};
    mlc_print_module(&o, m);
    CHECK_MSG(strstr(mlc_str_cstr(&o), want_line), "missing \"%s\" in:\n%s", want_line,
              mlc_str_cstr(&o));
    mlc_error err;
    mlc_module *m2 = mlc_parse_module(a, "re.py", mlc_str_cstr(&o), &err);
    CHECK_MSG(m2, "reparse: %s", err.msg);
    if (m2) {
      mlc_print_module(&o2, m2);
      CHECK_STREQ(mlc_str_cstr(&o), mlc_str_cstr(&o2));
      CHECK(mlc_func_struct_equal(m->funcs[0], m2->funcs[0]));
      CHECK(mlc_verify_module(m2, &err));
    }
    mlc_str_free(&o);
    mlc_str_free(&o2);
  }
  mlc_arena_free(a);
}

/* Python's escapes in str literals, decoded to UTF-8 as Python would. */
static void test_string_escapes(void) {
  mlc_arena *a = mlc_arena_new();
  static const struct {
    const char *lit, *want;
  } cases[] = {
      {"\"\\\"\"", "\""},                           /* "\"" */
      {"\"\\\\\"", "\\"},                         /* "\\" */
      {"\"\\u00e9\"", "\xc3\xa9"},                  /* "\u00e9" */
      {"\"\\xe9\"", "\xc3\xa9"},                    /* "\xe9" is U+00E9 too */
      {"\"\xc3\xa9\"", "\xc3\xa9"},                 /* raw UTF-8 */
      {"\"\\U0001F600\"", "\xf0\x9f\x98\x80"},
      {"\"\\101\\60\\7\"", "A0\x07"},             /* octal */
      {"\"\\a\\b\\f\\v\\n\\r\\t\"", "\a\b\f\v\n\r\t"},
      {"'\\'\"'", "'\""},
      {"\"\\q\"", "\\q"}, /* unknown: the backslash stays, as in Python */
      {"\"\\u4e2d\\x41\"", "\xe4\xb8\xad" "A"},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    char attrs[256];
    snprintf(attrs, sizeof attrs, "{\"s\": %s}", cases[i].lit);
    const mlc_ann *x = attr_of(a, attrs, "s");
    CHECK_MSG(x && x->kind == MLC_ANN_STRING && strcmp(x->s, cases[i].want) == 0, "%s: got \"%s\"",
              cases[i].lit, x && x->s ? x->s : "(none)");
  }
  /* Every byte 1..255 a string can hold prints and reads back unchanged. */
  char all[256];
  for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
  all[255] = 0;
  mlc_ann *ann = MLC_NEW(a, mlc_ann);
  *ann = (mlc_ann){.key = "s", .kind = MLC_ANN_STRING, .s = all};
  mlc_module *m = PARSE_OK(a, "@T.prim_func\ndef f(A: T.Buffer((1,), \"float32\")):\n    A[0] = 0.0\n");
  if (m) {
    m->funcs[0]->n_attrs = 1;
    m->funcs[0]->attrs = ann;
    mlc_str o = {0};
    mlc_print_module(&o, m);
    mlc_error err;
    mlc_module *m2 = mlc_parse_module(a, "re.py", mlc_str_cstr(&o), &err);
    CHECK_MSG(m2, "%s", err.msg);
    const mlc_ann *x = m2 ? mlc_ann_find(m2->funcs[0]->n_attrs, m2->funcs[0]->attrs, "s") : NULL;
    CHECK(x && x->kind == MLC_ANN_STRING && strcmp(x->s, all) == 0);
    mlc_str_free(&o);
  }
  check_reprint("@T.prim_func\ndef f(A: T.Buffer((1,), \"float32\")):\n"
                "    T.func_attr({\"k\": \"\\\"\", \"u\": \"\\u00e9\\U0001F600\\x01\"})\n    A[0] = 0.0\n",
                "T.func_attr({\"k\": \"\\\"\", \"u\": \"\xc3\xa9\xf0\x9f\x98\x80\\x01\"})");
  mlc_arena_free(a);
}

/* T.exp(x, dtype="float32") and friends, as TVM prints them: the dtype is
 * checked against the computed one and gives literals their type. */
static void test_intrin_dtype_keyword(void) {
  mlc_arena *a = mlc_arena_new();
  CHECK_EXPR("A", "T.if_then_else(vi < 8, A[vi], T.float32(0), dtype=\"float32\")",
             "(if_then_else (lt vi 8) A[vi] 0f32)");
  CHECK_EXPR("A", "T.sqrt(A[vi], dtype=\"float32\")", "(sqrt A[vi])");
  CHECK_EXPR("A", "T.exp(A[vi], dtype=\"float32\") + T.log(A[vi], dtype=\"float32\")",
             "(add (exp A[vi]) (log A[vi]))");
  CHECK_EXPR("H", "T.exp(H[vi], dtype=\"float16\")", "(exp H[vi])");
  CHECK_EXPR("H", "T.exp(1, dtype=\"float16\")", "(exp 1f16)");
  CHECK_EXPR("A", "T.max(A[vi], 0, dtype=\"float32\")", "(max A[vi] 0f32)");
  CHECK_EXPR("L", "T.min(T.Cast(\"int64\", vi), 3, dtype=\"int64\")", "(min (cast:int64 vi) 3i64)");
  CHECK_EXPR("L", "T.max(2, 3, dtype=\"int64\")", "(max 2i64 3i64)");
  CHECK_EXPR("N", "T.floordiv(vi, 4, dtype=\"int32\") + T.floormod(vi, 4, dtype=\"int32\")",
             "(add (floordiv vi 4) (floormod vi 4))");
  CHECK_EXPR("L", "T.Select(vi < 2, 1, 0, dtype=\"int64\")", "(select (lt vi 2) 1i64 0i64)");
  CHECK_EXPR("A", "T.pow(A[vi], 2, dtype=\"float32\")", "(pow A[vi] 2f32)");
  CHECK_EXPR_ERR("A", "T.exp(A[vi], dtype=\"float16\")",
                 "T.exp: dtype=\"float16\" disagrees with the computed dtype float32");
  CHECK_EXPR_ERR("L", "T.max(vi, 3, dtype=\"int64\")",
                 "T.max: dtype=\"int64\" disagrees with the computed dtype int32");
  CHECK_EXPR_ERR("A", "T.if_then_else(vi < 8, A[vi], 0.0, dtype=\"float16\")",
                 "T.if_then_else: dtype=\"float16\" disagrees");
  CHECK_EXPR_ERR("A", "T.exp(A[vi], dtype=\"float32\", dtype=\"float32\")",
                 "got multiple values for argument 'dtype'");
  CHECK_EXPR_ERR("A", "T.exp(dtype=\"float32\")", "T.exp takes 1 argument, got 0");
  /* The dtype is not printed back: TVM's own printer leaves it out too. */
  check_reprint("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n"
                "    A[0] = T.if_then_else(A[1] > T.float32(0), T.sqrt(A[2], dtype=\"float32\"), "
                "T.float32(0), dtype=\"float32\")\n",
                "A[0] = T.if_then_else(A[1] > T.float32(0), T.sqrt(A[2]), T.float32(0))");
  mlc_arena_free(a);
}

/* elem_offset, align, offset_factor where they state TVM's defaults. */
static void test_buffer_layout_keywords(void) {
  const char *text =
      "@T.prim_func\n"
      "def f(A: T.Buffer((4,), \"float32\", elem_offset=0, align=64, offset_factor=1), b: T.handle):\n"
      "    B = T.match_buffer(b, (4,), \"int32\", elem_offset=None, align=0, offset_factor=0)\n"
      "    X = T.alloc_buffer((4,), \"float32\", scope=\"shared\", align=64, offset_factor=1)\n"
      "    for i in range(4):\n"
      "        with T.block(\"c\"):\n"
      "            vi = T.axis.spatial(4, i)\n"
      "            Y = T.alloc_buffer((1,), elem_offset=T.int32(0), align=-1)\n"
      "            X[vi] = A[vi]\n"
      "            B[vi] = T.Cast(\"int32\", X[vi])\n";
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a, text);
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->n_params == 2 && f->params[0]->ndim == 1 && f->params[1]->dtype == MLC_INT32);
    CHECK(mlc_func_root(f)->n_allocs == 1 && strcmp(mlc_func_root(f)->allocs[0]->scope, "shared") == 0);
  }
  check_reprint(text, "def f(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"int32\")):");
  mlc_arena_free(a);
}

/* Annotation values that are lists and dicts, nested, kept as structure. */
static void test_nested_annotations(void) {
  const char *text =
      "@T.prim_func\n"
      "def f(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
      "    T.func_attr({\"global_symbol\": \"f\", \"d\": {\"a\": [1, 2.5, \"x\", True, [], {}], "
      "\"b\": {\"c\": (1, -2)}}})\n"
      "    for i in T.serial(16, annotations={\"pragma_auto_unroll_max_step\": 16, \"list\": [1, 2]}):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(16, i)\n"
      "            T.block_attr({\"buffer_dim_align\": [[0, 0, 16, 8]]})\n"
      "            B[vi] = A[vi]\n";
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = PARSE_OK(a, text);
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    mlc_block *b = find_block(f, "B");
    const mlc_ann *x = b ? mlc_ann_find(b->n_anns, b->anns, "buffer_dim_align") : NULL;
    CHECK(x && x->kind == MLC_ANN_LIST && x->n == 1 && x->items[0].kind == MLC_ANN_LIST &&
          x->items[0].n == 4 && x->items[0].items[2].kind == MLC_ANN_INT &&
          x->items[0].items[2].i == 16 && x->items[0].items[3].i == 8 && !x->items[0].key);
    mlc_stmt *loop = nth(mlc_func_root(f)->body, 0);
    x = loop ? mlc_ann_find(loop->loop.n_anns, loop->loop.anns, "list") : NULL;
    CHECK(x && x->kind == MLC_ANN_LIST && x->n == 2 && x->items[1].i == 2);
    x = loop ? mlc_ann_find(loop->loop.n_anns, loop->loop.anns, "pragma_auto_unroll_max_step") : NULL;
    CHECK(x && x->kind == MLC_ANN_INT && x->i == 16);
    x = mlc_ann_find(f->n_attrs, f->attrs, "d");
    CHECK(x && x->kind == MLC_ANN_DICT && x->n == 2 && strcmp(x->items[0].key, "a") == 0);
    const mlc_ann *l = x ? &x->items[0] : NULL;
    CHECK(l && l->kind == MLC_ANN_LIST && l->n == 6 && l->items[1].kind == MLC_ANN_FLOAT &&
          l->items[1].f == 2.5 && l->items[2].kind == MLC_ANN_STRING && l->items[3].kind == MLC_ANN_BOOL &&
          l->items[4].kind == MLC_ANN_LIST && l->items[4].n == 0 &&
          l->items[5].kind == MLC_ANN_DICT && l->items[5].n == 0);
    const mlc_ann *c = x ? mlc_ann_find(x->items[1].n, x->items[1].items, "c") : NULL;
    CHECK(c && c->kind == MLC_ANN_LIST && c->n == 2 && c->items[1].i == -2);
    mlc_error err;
    CHECK_MSG(mlc_verify_module(m, &err), "%s", err.msg);
    /* A copy keeps the structure, in its own memory. */
    mlc_arena *a2 = mlc_arena_new();
    mlc_prim_func *cp = mlc_func_copy(a2, f);
    const mlc_ann *y = mlc_ann_find(cp->n_attrs, cp->attrs, "d");
    CHECK(y && x && y != x && y->items != x->items && mlc_ann_value_equal(x, y));
    CHECK(mlc_func_struct_equal(f, cp));
    mlc_arena_free(a2);
  }
  check_reprint(text, "T.block_attr({\"buffer_dim_align\": [[0, 0, 16, 8]]})");
  check_reprint(text, "annotations={\"pragma_auto_unroll_max_step\": 16, \"list\": [1, 2]}");
  check_reprint(text, "\"d\": {\"a\": [1, 2.5, \"x\", True, [], {}], \"b\": {\"c\": [1, -2]}}");
  mlc_arena_free(a);
}

/* ---- malformed inputs ---------------------------------------------------------- */

#define HDR "@T.prim_func\ndef f(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
#define LOOP HDR "    for i, j in T.grid(16, 16):\n        with T.block(\"b\"):\n"

typedef struct bad_case {
  const char *name;
  const char *text;
  int line; /* 0: any */
  const char *phrase;
} bad_case;

static const bad_case bad_cases[] = {
    {"empty file", "", 1, "expected @T.prim_func or @I.ir_module, got end of file"},
    {"only comments", "# nothing\n\n   # here\n", 1, "expected @T.prim_func"},
    {"only imports", "from tvm.script import tir as T\n", 2, "got end of file"},
    {"truncated in params", "@T.prim_func\ndef f(A: T.Buf", 2, "expected"},
    {"truncated after header", HDR, 3, "expected an indented block, got end of file"},
    {"truncated after with", LOOP, 5, "expected an indented block"},
    {"truncated expression", LOOP "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                             "            A[vi, vj] = B[vi] +", 6, "expected an expression, got end of line"},
    {"truncated after decorator", "@T.prim_func\n", 2, "expected 'def', got end of file"},
    {"truncated class", "@I.ir_module\nclass M:\n", 3, "expected an indented class body"},
    {"unexpected indent", HDR "    for i in range(4):\n        B[i] = 0.0\n          B[i] = 1.0\n", 5,
     "unexpected indent"},
    {"dedent to unknown level", HDR "    for i in range(4):\n        B[i] = 0.0\n      B[i] = 1.0\n", 5,
     "unindent does not match any outer indentation level"},
    {"tabs and spaces", HDR "    for i in range(4):\n        B[i] = 0.0\n\tB[i] = 1.0\n", 5,
     "inconsistent use of tabs and spaces"},
    {"unknown T function", LOOP "            v = T.axis.spatial(16, i)\n            B[v] = T.foo(v)\n", 6,
     "unknown function T.foo"},
    {"unknown T statement", HDR "    T.bar(1)\n", 3, "unknown function T.bar"},
    {"unknown T.axis", LOOP "            v = T.axis.opaque(16, i)\n", 5, "unknown function T.axis.opaque"},
    {"index count", LOOP "            vi, vj = T.axis.remap(\"SS\", [i, j])\n            B[vi] = A[vi]\n", 6,
     "buffer A has 2 dimensions, indexed with 1"},
    {"store index count", HDR "    B[0, 1] = 0.0\n", 3, "buffer B has 1 dimension, indexed with 2"},
    {"undefined name", LOOP "            vi = T.axis.spatial(16, q)\n", 5, "undefined name 'q'"},
    {"undefined after scope", HDR "    for i in range(4):\n        B[i] = 0.0\n    B[i] = 1.0\n", 5,
     "undefined name 'i'"},
    {"remap count", LOOP "            vi, vj, vk = T.axis.remap(\"SS\", [i, j, i])\n", 5,
     "T.axis.remap kinds \"SS\" name 3 vars"},
    {"remap binding count", LOOP "            vi, vj = T.axis.remap(\"SS\", [i])\n", 5,
     "T.axis.remap binds 2 vars to 1 loop variable"},
    {"remap kind letter", LOOP "            vi, vj = T.axis.remap(\"SX\", [i, j])\n", 5, "is not S or R"},
    {"remap non-loop", LOOP "            vi = T.axis.spatial(16, i)\n"
                       "            vj, vk = T.axis.remap(\"SS\", [vi, j])\n", 6, "expects an enclosing loop variable"},
    {"bad dtype", "@T.prim_func\ndef f(A: T.Buffer((4,), \"float33\")):\n    pass\n", 2,
     "unknown dtype \"float33\""},
    {"bad alloc dtype", HDR "    X = T.alloc_buffer((4,), dtype=\"int3\")\n", 3, "unknown dtype \"int3\""},
    {"unterminated string", HDR "    with T.block(\"b):\n        pass\n", 3, "unterminated string"},
    {"unterminated triple string", HDR "    \"\"\"doc\n   more\n", 3, "unterminated string"},
    {"unterminated paren", "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"):\n    pass\n", 0,
     "expected"},
    {"garbage bytes", "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    B\x80\xff = 1\n", 3,
     "unexpected byte 0x80"},
    {"unexpected character", HDR "    B[0] = $1\n", 3, "unexpected character '$'"},
    {"missing colon", HDR "    for i in range(4)\n        B[i] = 0.0\n", 3, "expected ':', got end of line"},
    {"missing colon def", "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"))\n    pass\n", 2,
     "expected ':'"},
    {"zero shape", "@T.prim_func\ndef f(A: T.Buffer((4, 0), \"float32\")):\n    pass\n", 2,
     "buffer shape must be positive, got 0"},
    {"negative shape", HDR "    X = T.alloc_buffer((-2,))\n", 3, "must be positive"},
    {"non-constant shape", HDR "    for i in range(4):\n        X = T.decl_buffer((i,), \"float32\")\n", 4,
     "buffer shape must be a constant or an expression of size vars"},
    {"unknown loop kind", HDR "    for i in T.foo(4):\n        pass\n", 3, "unknown loop kind T.foo"},
    {"not a loop", HDR "    for i in 4:\n        pass\n", 3, "expected range(...)"},
    {"unknown thread tag", HDR "    for i in T.thread_binding(4, thread=\"threadIdx.w\"):\n        pass\n", 3,
     "unknown thread tag \"threadIdx.w\""},
    {"grid count", HDR "    for i, j in T.grid(4):\n        pass\n", 3, "T.grid has 1 extent for 2 loop variables"},
    {"reads outside block", HDR "    T.reads(A[0, 0])\n", 3, "T.reads must be directly inside a T.block"},
    {"reads after body", LOOP "            B[i] = 0.0\n            T.reads(A[i, j])\n", 6,
     "T.reads must come before the statements of block \"b\""},
    {"axis in loop", HDR "    for i in range(4):\n        v = T.axis.spatial(4, i)\n", 4,
     "must be directly inside a T.block"},
    {"alloc in loop", HDR "    for i in range(4):\n        X = T.alloc_buffer((4,))\n", 4,
     "T.alloc_buffer must be directly inside"},
    {"match_buffer in block", LOOP "            X = T.match_buffer(i, (4,))\n", 5,
     "T.match_buffer must be at the top level"},
    {"func_attr in loop", HDR "    for i in range(4):\n        T.func_attr({})\n", 4,
     "T.func_attr must be at the top level"},
    {"init outside block", HDR "    with T.init():\n        pass\n", 3, "must be directly inside a T.block"},
    {"init after the root's statements", HDR "    with T.block(\"root\"):\n        B[0] = 1.0\n"
                                          "        with T.init():\n            B[0] = 0.0\n", 5,
     "must come before the statements of block \"root\""},
    {"two inits in the root", HDR "    with T.block(\"root\"):\n        with T.init():\n            B[0] = 0.0\n"
                               "        with T.init():\n            B[0] = 0.0\n        B[0] = 1.0\n", 6,
     "two T.init()"},
    {"two inits", LOOP "            with T.init():\n                B[i] = 0.0\n"
                  "            with T.init():\n                B[i] = 0.0\n", 7, "two T.init()"},
    {"where twice", LOOP "            T.where(i < 2)\n            T.where(i < 3)\n", 6, "T.where given twice"},
    {"where not bool", LOOP "            T.where(i + 2)\n", 5, "expected a bool predicate"},
    {"if not bool", HDR "    if 1:\n        pass\n", 3, "expected a bool condition"},
    {"else without if", HDR "    else:\n        pass\n", 3, "'else' without a matching 'if'"},
    {"block without body", LOOP "            T.reads()\n", 4, "block \"b\" has no body"},
    {"store type mismatch",
     "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"), H: T.Buffer((4,), \"float16\")):\n"
     "    for i in range(4):\n        A[i] = H[i]\n",
     4, "cannot store a float16 value into float32 buffer A"},
    {"unbound handle", "@T.prim_func\ndef f(a: T.handle, b: T.handle):\n    B = T.match_buffer(b, (4,))\n",
     2, "handle 'a' is never bound by T.match_buffer"},
    {"match non-handle", HDR "    X = T.match_buffer(A, (4,))\n", 3, "'A' is not a T.handle parameter"},
    {"duplicate function", "@I.ir_module\nclass M:\n    @T.prim_func\n    def f():\n        pass\n"
                           "    @T.prim_func\n    def f():\n        pass\n",
     7, "duplicate function name 'f'"},
    {"duplicate param", "@T.prim_func\ndef f(A: T.Buffer((4,)), A: T.Buffer((4,))):\n    pass\n", 2,
     "duplicate parameter 'A'"},
    {"relax function", "@I.ir_module\nclass M:\n    @R.function\n    def main():\n        pass\n", 3,
     "unsupported decorator @R.function"},
    {"size var given by no parameter", "@T.prim_func\ndef f(A: T.Buffer((4,))):\n    n = T.int64()\n", 3,
     "size n is no parameter's extent"},
    {"size var in a loop", HDR "    for i in range(4):\n        n = T.int32(max=4)\n", 4,
     "a size var must be declared at the top level of the function body"},
    {"size var min above max", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int32(min=9, max=3)\n", 3,
     "size n has min 9 above max 3"},
    {"size var max past int32", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int32(max=3000000000)\n", 3,
     "max=3000000000 is outside [0, 2147483647]"},
    {"size var bound not constant", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int32(max=n)\n", 3,
     "undefined name 'n'"},
    {"size var positional", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int32(4, max=8)\n", 3,
     "T.int32 takes 1 positional argument, got 2"},
    {"unbounded allocation", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int64()\n"
     "    A = T.match_buffer(a, (n,))\n    X = T.alloc_buffer((n, n))\n", 5,
     "buffer X would be allocated for its extents' bounds"},
    {"extent may be negative", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int32(max=8)\n"
     "    A = T.match_buffer(a, (n - 1,))\n", 4, "this extent may be negative (down to -1)"},
    {"extent of a product of sizes past int64", "@T.prim_func\ndef f(a: T.handle):\n    n = T.int64()\n"
     "    A = T.match_buffer(a, (n * n,))\n", 4, "this extent's bound cannot be computed"},
    {"explicit root not alone",
     HDR "    with T.block(\"root\"):\n        pass\n    for i in range(4):\n        pass\n", 5,
     "must be the only statement"},
    {"bad param type", "@T.prim_func\ndef f(A: int):\n    pass\n", 2, "expected T.Buffer(shape, dtype) or T.handle"},
    {"positional after keyword", HDR "    X = T.alloc_buffer(dtype=\"float32\", (4,))\n", 3,
     "positional argument follows keyword argument"},
    {"unexpected keyword", HDR "    X = T.alloc_buffer((4,), alignment=64)\n", 3,
     "T.alloc_buffer got an unexpected keyword argument 'alignment'"},
    {"elem_offset not 0", HDR "    X = T.alloc_buffer((4,), elem_offset=2)\n", 3,
     "T.alloc_buffer: elem_offset must be 0"},
    {"align not default", "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\", align=16)):\n    pass\n",
     2, "T.Buffer: align must be 64"},
    {"offset_factor not 1", "@T.prim_func\ndef f(a: T.handle):\n"
     "    A = T.match_buffer(a, (4,), offset_factor=16)\n    pass\n", 3,
     "T.match_buffer: offset_factor must be 1"},
    {"intrin dtype disagrees", HDR "    B[0] = T.exp(B[1], dtype=\"float16\")\n", 3,
     "T.exp: dtype=\"float16\" disagrees with the computed dtype float32"},
    {"if_then_else dtype disagrees", HDR "    B[0] = T.if_then_else(True, B[1], 0.0, dtype=\"int32\")\n",
     3, "T.if_then_else: dtype=\"int32\" disagrees with the computed dtype float32"},
    {"intrin unknown keyword", HDR "    B[0] = T.sqrt(B[1], typ=\"float32\")\n", 3,
     "T.sqrt got an unexpected keyword argument 'typ'"},
    {"intrin bad dtype", HDR "    B[0] = T.max(B[1], B[2], dtype=\"float33\")\n", 3,
     "unknown dtype \"float33\""},
    {"annotation list with None", HDR "    T.func_attr({\"l\": [1, None]})\n", 3,
     "expected an annotation value"},
    {"annotation dict key not a string", HDR "    T.func_attr({\"d\": {1: 2}})\n", 3,
     "expected an annotation key as a string"},
    {"annotation dict duplicate key", HDR "    T.func_attr({\"d\": {\"k\": 1, \"k\": 2}})\n", 3,
     "duplicate annotation key \"k\""},
    {"string NUL escape", HDR "    T.func_attr({\"s\": \"a\\x00\"})\n", 3,
     "a string cannot contain a NUL character"},
    {"string truncated hex escape", HDR "    T.func_attr({\"s\": \"\\u12\"})\n", 3,
     "truncated \\u escape: expected 4 hex digits"},
    {"string named escape", HDR "    T.func_attr({\"s\": \"\\N{DASH}\"})\n", 3,
     "\\N{...} escapes are not supported"},
    {"string surrogate escape", HDR "    T.func_attr({\"s\": \"\\udc00\"})\n", 3,
     "escape of U+DC00 is not a character"},
    {"empty slice", LOOP "            T.reads(A[3:3, 0])\n            B[i] = 0.0\n", 5, "empty slice"},
    {"slice in expression", HDR "    B[0] = A[0:2, 1]\n", 3, "a slice is only allowed in T.reads"},
    {"int literal too large", HDR "    B[0] = 99999999999999999999\n", 3, "integer literal too large"},
    {"bad number", HDR "    B[0] = 12abc\n", 3, "invalid number literal"},
    {"assign expression", HDR "    x = 1 + 2\n", 3, "expected T.axis.*, T.alloc_buffer"},
    {"bare expression", HDR "    T.max(1, 2)\n", 3, "is not a statement"},
    {"buffer as value", HDR "    B[0] = A\n", 3, "buffer 'A' used as a value"},
    {"deep parens", NULL /* built at run time */, 3, "nesting deeper than 256 levels"},
    {"deep unary", NULL, 3, "nesting deeper than 256 levels"},
    {"long chain", NULL, 3, "expression nested deeper than 1000 levels"},
    {"deep indentation", NULL, 0, "nesting deeper than 256 levels"},
    {"trailing garbage", "@T.prim_func\ndef f():\n    pass\nx = 1\n", 4, "expected @T.prim_func or end of file"},
    {"chained assignment", HDR "    X = Y = T.alloc_buffer((4,))\n", 3, "expected end of line, got '='"},
    {"bad prim_func option", "@T.prim_func(privat=True)\ndef f():\n    pass\n", 1,
     "T.prim_func got an unexpected keyword argument 'privat'"},
    {"prim_func option not bool", "@T.prim_func(private=1)\ndef f():\n    pass\n", 1,
     "expected True or False"},
    {"thread_binding without thread", HDR "    for i in T.thread_binding(4):\n        pass\n", 3,
     "T.thread_binding needs thread"},
};

static char *build_deep(const char *name) {
  mlc_str s = {0};
  mlc_str_puts(&s, HDR);
  if (!strcmp(name, "deep parens")) {
    mlc_str_puts(&s, "    B[0] = ");
    for (int i = 0; i < 10000; i++) mlc_str_putc(&s, '(');
    mlc_str_puts(&s, "1");
    for (int i = 0; i < 10000; i++) mlc_str_putc(&s, ')');
    mlc_str_puts(&s, "\n");
  } else if (!strcmp(name, "deep unary")) {
    mlc_str_puts(&s, "    B[0] = ");
    for (int i = 0; i < 10000; i++) mlc_str_puts(&s, "- ");
    mlc_str_puts(&s, "1\n");
  } else if (!strcmp(name, "long chain")) {
    mlc_str_puts(&s, "    B[0] = 1");
    for (int i = 0; i < 20000; i++) mlc_str_puts(&s, " + 1");
    mlc_str_puts(&s, "\n");
  } else {
    for (int d = 1; d <= 2000; d++) {
      mlc_str_indent(&s, d * 2);
      mlc_str_puts(&s, "if True:\n");
    }
    mlc_str_indent(&s, 2001 * 2);
    mlc_str_puts(&s, "pass\n");
  }
  return mlc_str_take(&s);
}

/* "file:L:C: ..." with L and C positive; returns L. */
static int error_line(const char *msg) {
  int line = 0, col = 0;
  const char *p = strstr(msg, ".py:");
  if (!p || sscanf(p + 4, "%d:%d:", &line, &col) != 2 || line < 1 || col < 1) return -1;
  return line;
}

static void test_malformed(void) {
  char why[1400];
  for (int i = 0; i < MLC_COUNTOF(bad_cases); i++) {
    const bad_case *c = &bad_cases[i];
    char *built = c->text ? NULL : build_deep(c->name);
    mlc_arena *a = mlc_arena_new();
    mlc_error err;
    mlc_module *m = mlc_parse_module(a, "bad.py", c->text ? c->text : built, &err);
    int line = m ? 0 : error_line(err.msg);
    bool ok = !m && line > 0 && strstr(err.msg, c->phrase) && (c->line == 0 || line == c->line) &&
              strchr(err.msg, '\n') && strchr(err.msg, '^');
    if (m) snprintf(why, sizeof why, "parsed without error");
    else snprintf(why, sizeof why, "want line %d \"%s\", got: %.1000s", c->line, c->phrase, err.msg);
    char name[160];
    snprintf(name, sizeof name, "malformed: %s", c->name);
    test_report(name, ok, why);
    mlc_arena_free(a);
    free(built);
  }
}

/* The message carries the source line and a caret under the column. */
static void test_error_format(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "x.py", HDR "    B[0] = T.nope(1)\n", &err);
  CHECK(m == NULL);
  CHECK_STREQ(err.msg, "x.py:3:12: unknown function T.nope\n    B[0] = T.nope(1)\n           ^");
  m = mlc_parse_module(a, NULL, "", &err);
  CHECK(m == NULL && strncmp(err.msg, "<input>:1:1: expected", 21) == 0);
  CHECK(mlc_parse_module(a, "x.py", NULL, &err) == NULL);
  CHECK(mlc_parse_module(a, "x.py", "", NULL) == NULL); /* no error sink: still fine */
  mlc_arena_free(a);
}

/* ---- robustness: truncations, mutations, allocation failures ----------------- */

static void test_truncations(void) {
  const char *src = ref_examples[0];
  size_t n = strlen(src);
  char *buf = malloc(n + 1);
  int parsed = 0, failed = 0;
  for (size_t k = 0; k <= n; k++) {
    memcpy(buf, src, k);
    buf[k] = 0;
    mlc_arena *a = mlc_arena_new();
    mlc_error err;
    mlc_module *m = mlc_parse_module(a, "cut.py", buf, &err);
    if (m) parsed++;
    else {
      failed++;
      CHECK_MSG(error_line(err.msg) > 0, "prefix %zu: %s", k, err.msg);
    }
    mlc_arena_free(a);
  }
  free(buf);
  CHECK(parsed >= 1 && failed > (int)n / 2);
}

static void test_mutations(void) {
  static const char alphabet[] = "()[]{}:,.=+-*/%<>\"'#\\\t\n 0123456789abcTxy_@\x80\xff";
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 42, 7);
  int n_ok = 0, n_err = 0;
  for (int ex = 0; ex < MLC_COUNTOF(ref_examples); ex++) {
    size_t n = strlen(ref_examples[ex]);
    char *buf = malloc(n + 1);
    for (int trial = 0; trial < 300; trial++) {
      memcpy(buf, ref_examples[ex], n + 1);
      int edits = 1 + (int)mlc_pcg32_bounded(&rng, 3);
      for (int e = 0; e < edits; e++) {
        size_t at = mlc_pcg32_bounded(&rng, (uint32_t)n);
        buf[at] = alphabet[mlc_pcg32_bounded(&rng, (uint32_t)sizeof alphabet - 1)];
      }
      mlc_arena *a = mlc_arena_new();
      mlc_error err;
      mlc_module *m = mlc_parse_module(a, "mut.py", buf, &err);
      if (m) n_ok++;
      else {
        n_err++;
        CHECK_MSG(error_line(err.msg) > 0, "bad message: %s", err.msg);
      }
      mlc_arena_free(a);
    }
    free(buf);
  }
  CHECK(n_err > 0 && n_ok + n_err == 300 * MLC_COUNTOF(ref_examples));
}

/* Fail the Nth allocation from the hook on. */
static long alloc_countdown = -1;
static bool alloc_fired;
static void *failing_alloc(void *ud, void *ptr, size_t nsize) {
  if (nsize != 0 && alloc_countdown >= 0) {
    if (alloc_countdown == 0) {
      alloc_fired = true;
      return NULL;
    }
    alloc_countdown--;
  }
  return mlc_default_alloc(ud, ptr, nsize);
}

static void test_alloc_failures(void) {
  const char *texts[] = {ref_examples[2], ref_examples[3]};
  int attempts = 0;
  for (int t = 0; t < MLC_COUNTOF(texts); t++) {
    for (long n = 0;; n++) {
      mlc_arena *a = mlc_arena_new();
      alloc_countdown = n;
      alloc_fired = false;
      mlc_set_allocator(failing_alloc, NULL);
      mlc_error err;
      mlc_module *m = mlc_parse_module(a, "oom.py", texts[t], &err);
      mlc_set_allocator(NULL, NULL);
      alloc_countdown = -1;
      attempts++;
      if (alloc_fired) CHECK_MSG(!m && strstr(err.msg, "out of memory"), "n=%ld: %s", n, err.msg);
      else CHECK_MSG(m != NULL, "n=%ld: %s", n, err.msg);
      mlc_arena_free(a);
      if (!alloc_fired || n > 10000) break;
    }
  }
  CHECK(attempts > 2);
  /* The arena is usable after a failed parse: parse again into it. */
  mlc_arena *a = mlc_arena_new();
  alloc_countdown = 1;
  mlc_set_allocator(failing_alloc, NULL);
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "oom.py", ref_examples[2], &err);
  mlc_set_allocator(NULL, NULL);
  alloc_countdown = -1;
  CHECK(m == NULL);
  m = PARSE_OK(a, ref_examples[2]);
  CHECK(m != NULL);
  mlc_arena_free(a);
}

/* uint8 and bfloat16: buffers, literals (range-checked; bfloat16 printed as
 * the shortest decimal that reads back as the same value), casts; print,
 * parse, print is byte-identical. */
static void test_lowp_dtypes(void) {
  static const char *src =
      "@T.prim_func\n"
      "def f(U: T.Buffer((8,), \"uint8\"), Z: T.Buffer((8,), \"bfloat16\"), O: T.Buffer((8,), \"int32\")):\n"
      "    for i in range(8):\n"
      "        with T.block(\"b\"):\n"
      "            vi = T.axis.spatial(8, i)\n"
      "            O[vi] = T.Cast(\"int32\", U[vi] * T.uint8(200)) + T.Cast(\"int32\", Z[vi] * T.bfloat16(3.14159))\n"
      "            Z[vi] = Z[vi] + 0.1 + T.Cast(\"bfloat16\", U[vi])\n";
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "lowp.py", src, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  if (m) {
    mlc_prim_func *f = m->funcs[0];
    CHECK(f->params[0]->dtype == MLC_UINT8 && f->params[1]->dtype == MLC_BFLOAT16);
    mlc_str o = {0}, o2 = {0};
    mlc_print_module(&o, m);
    CHECK_MSG(strstr(o.data, "T.Buffer((8,), \"uint8\")") && strstr(o.data, "\"bfloat16\")"), "%s", o.data);
    CHECK_MSG(strstr(o.data, "T.uint8(200)") && strstr(o.data, "T.bfloat16(3.14)") &&
              strstr(o.data, "T.bfloat16(0.1)"), "%s", o.data);
    mlc_module *m2 = mlc_parse_module(a, "lowp2.py", o.data, &err);
    CHECK_MSG(m2 != NULL, "%s", err.msg);
    if (m2) {
      mlc_print_module(&o2, m2);
      CHECK_MSG(strcmp(o.data, o2.data) == 0, "not a fixed point:\n%s\n---\n%s", o.data, o2.data);
      CHECK(mlc_func_struct_equal(f, m2->funcs[0]));
      CHECK(mlc_verify_func(m2->funcs[0], &err));
    }
    mlc_str_free(&o);
    mlc_str_free(&o2);
  }
  mlc_arena_free(a);
  a = mlc_arena_new();
  const char *bad[] = {"T.uint8(256)", "T.uint8(-1)", "-U[vi]", "U[vi] // -(U[vi] + T.uint8(1))"};
  for (int i = 0; i < 4; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def f(U: T.Buffer((8,), \"uint8\")):\n"
             "    for i in range(8):\n"
             "        with T.block(\"b\"):\n"
             "            vi = T.axis.spatial(8, i)\n"
             "            U[vi] = %s\n", bad[i]);
    CHECK_MSG(mlc_parse_module(a, "bad.py", text, &err) == NULL, "%s parsed", bad[i]);
    CHECK_MSG(strstr(err.msg, "uint8") != NULL, "%s", err.msg);
  }
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_module_matmul);
  RUN(test_bare_funcs);
  RUN(test_buffer_forms);
  RUN(test_match_buffer);
  RUN(test_func_attr_values);
  RUN(test_explicit_root);
  RUN(test_explicit_root_init);
  RUN(test_loop_kinds);
  RUN(test_block_header);
  RUN(test_partial_regions);
  RUN(test_remap);
  RUN(test_init_with_blocks);
  RUN(test_statements);
  RUN(test_expressions);
  RUN(test_literal_coercion);
  RUN(test_int64_loops);
  RUN(test_scoping);
  RUN(test_odd_forms);
  RUN(test_prim_func_options);
  RUN(test_whitespace);
  RUN(test_reference_examples);
  RUN(test_string_escapes);
  RUN(test_intrin_dtype_keyword);
  RUN(test_buffer_layout_keywords);
  RUN(test_nested_annotations);
  RUN(test_malformed);
  RUN(test_error_format);
  RUN(test_truncations);
  RUN(test_mutations);
  RUN(test_alloc_failures);
  RUN(test_lowp_dtypes);
  return test_summary();
}
