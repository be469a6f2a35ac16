/* The statement walks (ir/walk.c): the order they visit in, where
 * mlc_stmt_any stops, and that mlc_stmt_map copies only the path to what
 * it changes. */
#include "ir/ir.h"
#include "tests/test.h"

#include <string.h>

/* Every statement kind: for, block realize with an init, seq, if / else,
 * store, allocate (decl_buffer) and evaluate. */
static const char *const PROGRAM =
    "@T.prim_func\n"
    "def f(A: T.Buffer((8,), \"float32\"), B: T.Buffer((1,), \"float32\")):\n"
    "    for i in range(8):\n"
    "        with T.block(\"sum\"):\n"
    "            vi = T.axis.reduce(8, i)\n"
    "            T.reads(A[vi])\n"
    "            T.writes(B[0])\n"
    "            with T.init():\n"
    "                B[0] = T.float32(0)\n"
    "            if vi < 4:\n"
    "                B[0] = B[0] + A[vi]\n"
    "            else:\n"
    "                B[0] = B[0] - A[vi]\n"
    "    for j in range(2):\n"
    "        X = T.decl_buffer((2,), \"float32\")\n"
    "        T.evaluate(0)\n";

static const mlc_prim_func *parse(mlc_arena *a) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "walk.py", PROGRAM, &err);
  CHECK_MSG(m && m->n_funcs == 1, "%s", err.msg);
  return m ? m->funcs[0] : NULL;
}

typedef struct kinds {
  char seen[64];
  int n;
} kinds;

/* One letter per kind, in the order visited. */
static void note_kind(const mlc_stmt *s, void *ud) {
  static const char letter[MLC_STMT_KIND_COUNT] = {
      [MLC_STMT_FOR] = 'F', [MLC_STMT_BLOCK_REALIZE] = 'B', [MLC_STMT_SEQ] = 'Q',
      [MLC_STMT_STORE] = 'S', [MLC_STMT_IF] = 'I', [MLC_STMT_ALLOCATE] = 'A',
      [MLC_STMT_EVALUATE] = 'E'};
  kinds *k = ud;
  if (k->n < (int)sizeof k->seen - 1) k->seen[k->n++] = letter[s->kind];
}

static void test_visit_order(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = parse(a);
  kinds k = {{0}, 0};
  if (f) mlc_stmt_visit(f->body, note_kind, &k);
  /* root block, seq of two loops; the block's init before its body; the
   * if's then before its else; the allocate's body */
  CHECK_STREQ(k.seen, "BQFBSISSFAE");
  k.n = 0;
  memset(k.seen, 0, sizeof k.seen);
  mlc_stmt_visit(NULL, note_kind, &k);
  CHECK(k.n == 0);
  mlc_arena_free(a);
}

static bool is_store(const mlc_stmt *s, void *ud) {
  ++*(int *)ud;
  return s->kind == MLC_STMT_STORE;
}

static bool never(const mlc_stmt *s, void *ud) {
  MLC_UNUSED(s);
  ++*(int *)ud;
  return false;
}

static void test_any_stops(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = parse(a);
  int calls = 0;
  CHECK(f && mlc_stmt_any(f->body, is_store, &calls));
  CHECK_MSG(calls == 5, "%d calls: stops at the init's store", calls); /* B Q F B S */
  calls = 0;
  CHECK(f && !mlc_stmt_any(f->body, never, &calls));
  CHECK(calls == 11);
  CHECK(!mlc_stmt_any(NULL, never, &calls));
  mlc_arena_free(a);
}

/* Skips every block below the root; stops at the first evaluate. */
static mlc_walk outside_blocks(const mlc_stmt *s, void *ud) {
  kinds *k = ud;
  note_kind(s, k);
  if (s->kind == MLC_STMT_BLOCK_REALIZE && k->n > 1) return MLC_WALK_SKIP;
  return s->kind == MLC_STMT_EVALUATE ? MLC_WALK_STOP : MLC_WALK_INTO;
}

static void test_walk_skip_and_stop(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = parse(a);
  kinds k = {{0}, 0};
  CHECK(f && !mlc_stmt_walk(f->body, outside_blocks, &k)); /* stopped */
  CHECK_STREQ(k.seen, "BQFBFAE");
  CHECK(mlc_stmt_walk(NULL, outside_blocks, &k));
  mlc_arena_free(a);
}

/* Stores into B of the if's else branch become evaluates. */
static mlc_stmt *else_store_to_eval(mlc_arena *a, mlc_stmt *s, void *ud) {
  if (s->kind != MLC_STMT_IF || !s->if_.else_s) return s;
  MLC_UNUSED(ud);
  mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
  n->if_.else_s = mlc_evaluate_new(a, mlc_int(a, 0));
  return n;
}

static void test_map_copies_the_path(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = parse(a);
  if (!f) {
    mlc_arena_free(a);
    return;
  }
  mlc_stmt *root = f->body;
  CHECK(mlc_stmt_map(a, root, NULL, NULL) == root);
  mlc_str before = {0}, after = {0};
  mlc_print_func(&before, f);
  mlc_stmt *out = mlc_stmt_map(a, root, else_store_to_eval, NULL);
  CHECK(out != root);
  /* the second loop is shared; the first, its block and the root's copied */
  const mlc_stmt *seq = root->realize.block->body, *nseq = out->realize.block->body;
  CHECK(nseq != seq && nseq->seq.stmts[1] == seq->seq.stmts[1]);
  CHECK(nseq->seq.stmts[0] != seq->seq.stmts[0]);
  const mlc_block *b = seq->seq.stmts[0]->loop.body->realize.block,
                  *nb = nseq->seq.stmts[0]->loop.body->realize.block;
  CHECK(nb != b && nb->init == b->init && nb->body->if_.then_s == b->body->if_.then_s);
  CHECK(nb->body->if_.else_s->kind == MLC_STMT_EVALUATE);
  /* the input is unchanged */
  mlc_print_func(&after, f);
  CHECK_STREQ(after.data, before.data);
  mlc_prim_func g = *f;
  g.body = out;
  mlc_str mapped = {0};
  mlc_print_func(&mapped, &g);
  CHECK(strstr(mapped.data, "else:\n                T.evaluate(0)") != NULL);
  mlc_str_free(&before);
  mlc_str_free(&after);
  mlc_str_free(&mapped);
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_visit_order);
  RUN(test_any_stops);
  RUN(test_walk_skip_and_stop);
  RUN(test_map_copies_the_path);
  return test_summary();
}
