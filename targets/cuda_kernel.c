/* One lowered prim_func as a CUDA kernel (LLVM IR for NVPTX).
 *
 * The lowered function is read with GPU semantics: a loop bound to a
 * blockIdx/threadIdx axis is not a loop but "this block's / this thread's
 * index" (min + the special register), so a loop bound to an axis that an
 * enclosing loop already binds (the cooperative fetch under the compute's
 * threadIdx loop) splits the fetch among the threads instead of repeating
 * it. Each axis is launched with the largest extent bound to it; loops with
 * a smaller extent are guarded. vthread loops are first interleaved
 * (cuda_vthread.c); any left (non-constant extents) run serially.
 *
 * Checks (cuda_analyze), so code generation cannot fail: constant thread
 * extents, at least one bound loop, block and grid limits, no parallel
 * loops, shared buffers allocated outside threadIdx loops and the others
 * inside every launched axis' loops (each thread has its own), a loop bound
 * to an axis an enclosing loop binds using no more threads and not its
 * var, and every store to a buffer other threads can see (parameters, and
 * for threadIdx axes shared buffers) lying under a loop bound to each
 * launched axis whose var its index uses (or a condition around it pins
 * to one value, as thread 0's final store of a cross-thread reduction):
 * otherwise every thread along that axis would run it, or they would race
 * on one element (a reduction bound to threadIdx reaches here only if
 * cuda_allreduce.c could not rewrite it, and says why first).
 *
 * Barriers (plan_*): within a statement sequence, a barrier goes before a
 * statement that reads a shared buffer written since the last barrier, or
 * writes one read or written since; a loop whose body both reads and
 * writes a shared buffer gets one at the start of its body (the next
 * iteration's fetch must not overwrite what a slower thread still reads).
 * Buffers are compared by identity, not by region: conservative, and
 * harmless where every thread reaches the barrier. A barrier needed where
 * only some threads run (under a condition on a thread index, or in a loop
 * guarded for a smaller extent) is refused rather than risking a hang.
 */
#include "targets/cuda_internal.h"
#include "targets/lower_internal.h"

#include <string.h>

/* Axes: 0-2 blockIdx.x/y/z, 3-5 threadIdx.x/y/z, 6 vthread. */
#define N_AXES 6
#define AXIS_VTHREAD 6
static const char *const axis_names[N_AXES] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                               "threadIdx.x", "threadIdx.y", "threadIdx.z"};
static const char *const sreg_names[N_AXES] = {
    "llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
    "llvm.nvvm.read.ptx.sreg.ctaid.z", "llvm.nvvm.read.ptx.sreg.tid.x",
    "llvm.nvvm.read.ptx.sreg.tid.y",   "llvm.nvvm.read.ptx.sreg.tid.z"};

static int axis_of(const char *tag) {
  if (!tag) return -1;
  for (int i = 0; i < N_AXES; i++)
    if (strcmp(tag, axis_names[i]) == 0) return i;
  if (strncmp(tag, "vthread", 7) == 0 && (!tag[7] || tag[7] == '.')) return AXIS_VTHREAD;
  return -1;
}

static int64_t *launch_ext(mlc_gpu_launch *l, int axis) {
  return axis < 3 ? &l->grid[axis] : &l->block[axis - 3];
}

static bool is_shared(const mlc_buffer *b) { return strncmp(b->scope, "shared", 6) == 0; }

/* ---- analysis ------------------------------------------------------------------ */

typedef struct an_ctx {
  mlc_arena *a;
  mlc_error *err;
  mlc_gpu_launch *l;
  int n_bound;                          /* loops bound to axes 0-5 seen */
  int depth[N_AXES];                    /* enclosing loops bound to each axis */
  const mlc_stmt *inner[N_AXES];        /* the innermost of them */
  MLC_VEC(const mlc_stmt *) loops;      /* every enclosing bound loop */
  MLC_VEC(const mlc_expr *) conds;      /* enclosing if conditions */
  MLC_VEC(const mlc_buffer *) private_; /* thread-private allocations */
} an_ctx;

/* Pass 1: launch extents, allocation sizes, loop kinds. */
static bool an_extents(an_ctx *ac, const mlc_stmt *s) {
  if (!s) return true;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    const char *name = s->loop.var->name;
    if (s->loop.kind == MLC_FOR_PARALLEL)
      return mlc_error_set(ac->err, "parallel loop %s in a GPU kernel: bind it to blockIdx or "
                                    "threadIdx instead", name);
    if (s->loop.kind == MLC_FOR_THREAD_BINDING) {
      int ax = axis_of(s->loop.thread);
      int64_t ext;
      if (ax < 0)
        return mlc_error_set(ac->err, "loop %s is bound to unknown thread axis '%s'", name,
                             s->loop.thread ? s->loop.thread : "");
      if (!mlc_expr_is_const_int(s->loop.extent, &ext) || ext < 1)
        return mlc_error_set(ac->err, "loop %s bound to %s needs a constant extent >= 1", name,
                             s->loop.thread);
      if (ax < N_AXES) {
        int64_t *e = launch_ext(ac->l, ax);
        if (ext > *e) *e = ext;
        ac->n_bound++;
      }
    }
    return an_extents(ac, s->loop.body);
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (!an_extents(ac, s->seq.stmts[i])) return false;
    return true;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return true;
  case MLC_STMT_IF: return an_extents(ac, s->if_.then_s) && an_extents(ac, s->if_.else_s);
  case MLC_STMT_ALLOCATE: {
    const mlc_buffer *b = s->alloc.buf;
    int64_t bytes = mlc_buffer_numel(b) * mlc_dtype_bytes(b->dtype);
    if (is_shared(b)) {
      ac->l->shared_bytes += bytes;
    } else {
      ac->l->local_bytes += bytes;
      MLC_VEC_APUSH(ac->a, ac->private_, b);
    }
    return an_extents(ac, s->alloc.body);
  }
  }
  mlc_unreachable();
}

static bool is_private(const an_ctx *ac, const mlc_buffer *b) {
  for (int i = 0; i < ac->private_.len; i++)
    if (ac->private_.data[i] == b) return true;
  return false;
}

typedef struct uses_ctx {
  const mlc_var *v;
  bool found;
} uses_ctx;

static void uses_expr(const mlc_expr *e, void *ud) {
  uses_ctx *u = ud;
  if (e->kind == MLC_EXPR_VAR && e->var == u->v) u->found = true;
}

static void uses_walk(uses_ctx *u, const mlc_stmt *s) {
  if (!s || u->found) return;
  lower_visit_exprs(s, uses_expr, u);
  switch (s->kind) {
  case MLC_STMT_FOR: uses_walk(u, s->loop.body); return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) uses_walk(u, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  case MLC_STMT_IF:
    uses_walk(u, s->if_.then_s);
    uses_walk(u, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: uses_walk(u, s->alloc.body); return;
  }
  mlc_unreachable();
}

static bool stmt_uses_var(const mlc_stmt *s, const mlc_var *v) {
  uses_ctx u = {v, false};
  uses_walk(&u, s);
  return u.found;
}

/* A loop bound to an axis an enclosing loop binds (a cooperative fetch)
 * shares that loop's threads: it may not need more of them, nor tell them
 * apart by the enclosing loop's var, which is the same thread index. */
static bool an_nested(an_ctx *ac, const mlc_stmt *s, int ax) {
  const mlc_stmt *outer = ac->inner[ax];
  int64_t ext, oext;
  MLC_ASSERT(mlc_expr_is_const_int(s->loop.extent, &ext) &&
             mlc_expr_is_const_int(outer->loop.extent, &oext)); /* an_extents */
  if (ext > oext)
    return mlc_error_set(ac->err, "loop %s bound to %s has extent %lld inside loop %s bound to it "
                                  "with extent %lld: it cannot use more threads than it has",
                         s->loop.var->name, axis_names[ax], (long long)ext, outer->loop.var->name,
                         (long long)oext);
  if (stmt_uses_var(s->loop.body, outer->loop.var))
    return mlc_error_set(ac->err, "loop %s bound to %s uses %s, the enclosing loop bound to the "
                                  "same axis: on a GPU both are one thread index",
                         s->loop.var->name, axis_names[ax], outer->loop.var->name);
  return true;
}

/* Whether cond holds for one value of v at most: v == e (either side)
 * with e free of v, or a conjunction with such a term. A guard such as
 * k0 * 96 + k1 < 1000 uses the thread's var but lets many threads in. */
static bool pins_var(const mlc_expr *cond, const mlc_var *v) {
  if (cond->kind == MLC_EXPR_AND) return pins_var(cond->bin.a, v) || pins_var(cond->bin.b, v);
  if (cond->kind != MLC_EXPR_EQ) return false;
  bool a = mlc_expr_uses_var(cond->bin.a, v), b = mlc_expr_uses_var(cond->bin.b, v);
  return a != b;
}

/* Whether a store's index uses a loop bound to axis ax, or a condition
 * around it lets one thread along ax through, so the threads along ax
 * write different elements. */
static bool tells_apart(const an_ctx *ac, const mlc_expr *idx, int ax) {
  for (int i = 0; i < ac->loops.len; i++) {
    const mlc_stmt *l = ac->loops.data[i];
    if (axis_of(l->loop.thread) != ax) continue;
    if (mlc_expr_uses_var(idx, l->loop.var)) return true;
    for (int k = 0; k < ac->conds.len; k++)
      if (pins_var(ac->conds.data[k], l->loop.var)) return true;
  }
  return false;
}

/* Pass 2: stores visible to other threads lie under every launched axis;
 * nested loops bound to one axis; shared buffers outside threadIdx loops. */
static bool an_stores(an_ctx *ac, const mlc_stmt *s) {
  if (!s) return true;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    int ax = s->loop.kind == MLC_FOR_THREAD_BINDING ? axis_of(s->loop.thread) : -1;
    if (ax < 0 || ax >= N_AXES) return an_stores(ac, s->loop.body);
    if (ac->depth[ax] > 0 && !an_nested(ac, s, ax)) return false;
    const mlc_stmt *saved = ac->inner[ax];
    ac->depth[ax]++;
    ac->inner[ax] = s;
    MLC_VEC_APUSH(ac->a, ac->loops, s);
    bool ok = an_stores(ac, s->loop.body);
    ac->loops.len--;
    ac->depth[ax]--;
    ac->inner[ax] = saved;
    return ok;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (!an_stores(ac, s->seq.stmts[i])) return false;
    return true;
  case MLC_STMT_STORE: {
    const mlc_buffer *b = s->store.buf;
    if (is_private(ac, b)) return true;
    /* Each block has its own shared memory: only its threads can race. */
    for (int ax = is_shared(b) ? 3 : 0; ax < N_AXES; ax++) {
      int64_t n = *launch_ext(ac->l, ax);
      if (n > 1 && ac->depth[ax] == 0)
        return mlc_error_set(ac->err,
                             "store to %s is not under a loop bound to %s: all %lld %s along it "
                             "would run it (bind the loop nest that writes %s)",
                             b->name, axis_names[ax], (long long)n, ax < 3 ? "blocks" : "threads",
                             b->name);
      if (n > 1 && !tells_apart(ac, s->store.indices[0], ax))
        return mlc_error_set(ac->err,
                             "store to %s does not depend on %s (loop %s): its %s would race on "
                             "one element",
                             b->name, axis_names[ax], ac->inner[ax]->loop.var->name,
                             ax < 3 ? "blocks" : "threads");
    }
    return true;
  }
  case MLC_STMT_EVALUATE: return true;
  case MLC_STMT_IF: {
    MLC_VEC_APUSH(ac->a, ac->conds, s->if_.cond);
    bool ok = an_stores(ac, s->if_.then_s) && an_stores(ac, s->if_.else_s);
    ac->conds.len--;
    return ok;
  }
  case MLC_STMT_ALLOCATE: {
    const mlc_buffer *b = s->alloc.buf;
    for (int ax = 3; ax < N_AXES && is_shared(b); ax++)
      if (ac->depth[ax] > 0)
        return mlc_error_set(ac->err, "shared buffer %s is allocated inside loop %s bound to %s: "
                                      "every thread would need its own copy",
                             b->name, ac->inner[ax]->loop.var->name, axis_names[ax]);
    /* Other buffers live in each thread. Lowering allocates a buffer at
     * the loop around all its uses, so one allocated outside a launched
     * axis' loops is used by several loop nests (or outside them) and
     * threads would need one another's copies. */
    for (int ax = 0; ax < N_AXES && !is_shared(b); ax++)
      if (*launch_ext(ac->l, ax) > 1 && ac->depth[ax] == 0)
        return mlc_error_set(ac->err, "intermediate buffer %s (scope %s) is allocated outside the "
                                      "loops bound to %s, but a GPU thread can only allocate its "
                                      "own copy: make it shared, or compute it under the binding",
                             b->name, b->scope, axis_names[ax]);
    return an_stores(ac, s->alloc.body);
  }
  }
  mlc_unreachable();
}

bool cuda_analyze(mlc_arena *a, const mlc_prim_func *lf, mlc_gpu_launch *out, mlc_error *err) {
  mlc_gpu_launch l = {{0, 0, 0}, {0, 0, 0}, 0, 0};
  an_ctx ac = {.a = a, .err = err, .l = &l};
  if (!an_extents(&ac, lf->body)) return false;
  if (ac.n_bound == 0)
    return mlc_error_set(err, "no loop is bound to blockIdx or threadIdx: the kernel would run "
                              "in one GPU thread (bind its loops first)");
  for (int i = 0; i < 3; i++) {
    if (l.grid[i] == 0) l.grid[i] = 1;
    if (l.block[i] == 0) l.block[i] = 1;
  }
  int64_t threads = l.block[0] * l.block[1] * l.block[2];
  if (threads > CUDA_MAX_THREADS)
    return mlc_error_set(err, "%lld threads per block (%lld x %lld x %lld) exceed the limit of %d",
                         (long long)threads, (long long)l.block[0], (long long)l.block[1],
                         (long long)l.block[2], CUDA_MAX_THREADS);
  if (l.block[0] > CUDA_MAX_BLOCK_XY || l.block[1] > CUDA_MAX_BLOCK_XY ||
      l.block[2] > CUDA_MAX_BLOCK_Z)
    return mlc_error_set(err, "block extents %lld x %lld x %lld exceed the limits %d x %d x %d",
                         (long long)l.block[0], (long long)l.block[1], (long long)l.block[2],
                         CUDA_MAX_BLOCK_XY, CUDA_MAX_BLOCK_XY, CUDA_MAX_BLOCK_Z);
  if (l.grid[0] > CUDA_MAX_GRID_X || l.grid[1] > CUDA_MAX_GRID_YZ || l.grid[2] > CUDA_MAX_GRID_YZ)
    return mlc_error_set(err, "grid extents %lld x %lld x %lld exceed the limits %lld x %d x %d",
                         (long long)l.grid[0], (long long)l.grid[1], (long long)l.grid[2],
                         CUDA_MAX_GRID_X, CUDA_MAX_GRID_YZ, CUDA_MAX_GRID_YZ);
  if (l.shared_bytes > CUDA_MAX_SHARED)
    return mlc_error_set(err, "%lld bytes of shared memory per block exceed the limit of %d",
                         (long long)l.shared_bytes, CUDA_MAX_SHARED);
  if (l.local_bytes > CUDA_MAX_LOCAL)
    return mlc_error_set(err, "%lld bytes of local arrays per thread exceed the limit of %d",
                         (long long)l.local_bytes, CUDA_MAX_LOCAL);
  if (!an_stores(&ac, lf->body)) return false;
  *out = l;
  return true;
}

/* ---- barrier planning --------------------------------------------------------- */

typedef MLC_VEC(const mlc_buffer *) buf_set;

typedef struct seq_pos {
  const mlc_stmt *seq;
  int index;
} seq_pos;

typedef struct plan {
  mlc_arena *a;
  mlc_error *err;
  const mlc_gpu_launch *l;
  MLC_VEC(seq_pos) before;          /* a barrier before seq->stmts[index] */
  MLC_VEC(const mlc_stmt *) loops;  /* a barrier at the start of the body */
  MLC_VEC(const mlc_var *) tvars;   /* enclosing loops bound to threadIdx */
} plan;

static void set_add(mlc_arena *a, buf_set *s, const mlc_buffer *b) {
  for (int i = 0; i < s->len; i++)
    if (s->data[i] == b) return;
  MLC_VEC_APUSH(a, *s, b);
}

static bool sets_meet(const buf_set *x, const buf_set *y) {
  for (int i = 0; i < x->len; i++)
    for (int k = 0; k < y->len; k++)
      if (x->data[i] == y->data[k]) return true;
  return false;
}

typedef struct rw_ctx {
  mlc_arena *a;
  buf_set *r, *w;
} rw_ctx;

static void rw_expr(const mlc_expr *e, void *ud) {
  rw_ctx *rc = ud;
  if (e->kind == MLC_EXPR_LOAD && is_shared(e->load.buf)) set_add(rc->a, rc->r, e->load.buf);
}

/* Shared buffers read and written anywhere under s. */
static void shared_rw(rw_ctx *rc, const mlc_stmt *s) {
  if (!s) return;
  lower_visit_exprs(s, rw_expr, rc);
  switch (s->kind) {
  case MLC_STMT_FOR: shared_rw(rc, s->loop.body); return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) shared_rw(rc, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    if (is_shared(s->store.buf)) set_add(rc->a, rc->w, s->store.buf);
    return;
  case MLC_STMT_IF:
    shared_rw(rc, s->if_.then_s);
    shared_rw(rc, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: shared_rw(rc, s->alloc.body); return;
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
}

typedef struct tv_ctx {
  const plan *p;
  bool found;
} tv_ctx;

static void tv_expr(const mlc_expr *e, void *ud) {
  tv_ctx *t = ud;
  if (e->kind != MLC_EXPR_VAR) return;
  for (int i = 0; i < t->p->tvars.len; i++)
    if (t->p->tvars.data[i] == e->var) t->found = true;
}

static bool uses_thread_index(const plan *p, const mlc_expr *e) {
  tv_ctx t = {p, false};
  lower_visit_expr(e, tv_expr, &t);
  return t.found;
}

static bool need_barrier(plan *p, const char *why_buf, const char *divergent) {
  if (!divergent) return true;
  return mlc_error_set(p->err, "shared buffer %s needs a barrier inside %s, where only some threads "
                               "run (a barrier there could hang the block)", why_buf, divergent);
}

static bool plan_stmt(plan *p, const mlc_stmt *s, const char *divergent);

static bool plan_seq(plan *p, const mlc_stmt *s, const char *divergent) {
  buf_set pend_r = {0}, pend_w = {0};
  for (int i = 0; i < s->seq.n; i++) {
    buf_set r = {0}, w = {0};
    rw_ctx rc = {p->a, &r, &w};
    shared_rw(&rc, s->seq.stmts[i]);
    if (sets_meet(&r, &pend_w) || sets_meet(&w, &pend_w) || sets_meet(&w, &pend_r)) {
      const mlc_buffer *b = r.len ? r.data[0] : w.data[0];
      if (!need_barrier(p, b->name, divergent)) return false;
      seq_pos sp = {s, i};
      MLC_VEC_APUSH(p->a, p->before, sp);
      pend_r.len = pend_w.len = 0;
    }
    for (int k = 0; k < r.len; k++) set_add(p->a, &pend_r, r.data[k]);
    for (int k = 0; k < w.len; k++) set_add(p->a, &pend_w, w.data[k]);
    if (!plan_stmt(p, s->seq.stmts[i], divergent)) return false;
  }
  return true;
}

static bool plan_for(plan *p, const mlc_stmt *s, const char *divergent) {
  int ax = s->loop.kind == MLC_FOR_THREAD_BINDING ? axis_of(s->loop.thread) : -1;
  if (uses_thread_index(p, s->loop.min) || uses_thread_index(p, s->loop.extent))
    divergent = mlc_arena_printf(p->a, "loop %s (its bounds depend on a thread index)",
                                 s->loop.var->name);
  int saved = p->tvars.len;
  if (ax >= 3 && ax < N_AXES) {
    int64_t ext;
    MLC_ASSERT(mlc_expr_is_const_int(s->loop.extent, &ext)); /* cuda_analyze */
    if (ext < p->l->block[ax - 3])
      divergent = mlc_arena_printf(p->a, "loop %s (%lld of %lld threads along %s)",
                                   s->loop.var->name, (long long)ext,
                                   (long long)p->l->block[ax - 3], axis_names[ax]);
    MLC_VEC_APUSH(p->a, p->tvars, s->loop.var);
  } else if (ax < 0 || ax == AXIS_VTHREAD) {
    /* A loop each thread runs: iterations must not overwrite what other
     * threads still read from the previous one. */
    buf_set r = {0}, w = {0};
    rw_ctx rc = {p->a, &r, &w};
    shared_rw(&rc, s->loop.body);
    if (sets_meet(&r, &w)) {
      if (!need_barrier(p, r.data[0]->name, divergent)) return false;
      MLC_VEC_APUSH(p->a, p->loops, s);
    }
  }
  bool ok = plan_stmt(p, s->loop.body, divergent);
  p->tvars.len = saved;
  return ok;
}

static bool plan_stmt(plan *p, const mlc_stmt *s, const char *divergent) {
  if (!s) return true;
  switch (s->kind) {
  case MLC_STMT_FOR: return plan_for(p, s, divergent);
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ: return plan_seq(p, s, divergent);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return true;
  case MLC_STMT_IF:
    if (uses_thread_index(p, s->if_.cond)) divergent = "a condition on a thread index";
    return plan_stmt(p, s->if_.then_s, divergent) && plan_stmt(p, s->if_.else_s, divergent);
  case MLC_STMT_ALLOCATE: return plan_stmt(p, s->alloc.body, divergent);
  }
  mlc_unreachable();
}

static bool barrier_before(const plan *p, const mlc_stmt *seq, int i) {
  for (int k = 0; k < p->before.len; k++)
    if (p->before.data[k].seq == seq && p->before.data[k].index == i) return true;
  return false;
}

static bool barrier_in_loop(const plan *p, const mlc_stmt *loop) {
  for (int k = 0; k < p->loops.len; k++)
    if (p->loops.data[k] == loop) return true;
  return false;
}

/* ---- emission ------------------------------------------------------------------ */

typedef struct kgen {
  cg *c;
  const plan *p;
  const mlc_gpu_launch *l;
  int n_shared; /* shared globals made so far (unique names) */
} kgen;

/* Loops emitted as copies when their extent is at most this and the body small. */
#define UNROLL_MAX_EXTENT 16
#define UNROLL_MAX_STMTS 64

static void gen_stmt(kgen *k, const mlc_stmt *s);

static LLVMValueRef call_intrinsic0(cg *c, const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  MLC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
  return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->ctx, id, NULL, 0), fn, NULL, 0, "");
}

static void gen_barrier(kgen *k) { call_intrinsic0(k->c, "llvm.nvvm.barrier0"); }

static int64_t stmt_count(const mlc_stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case MLC_STMT_FOR: return 1 + stmt_count(s->loop.body);
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ: {
    int64_t n = 1;
    for (int i = 0; i < s->seq.n; i++) n += stmt_count(s->seq.stmts[i]);
    return n;
  }
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return 1;
  case MLC_STMT_IF: return 1 + stmt_count(s->if_.then_s) + stmt_count(s->if_.else_s);
  case MLC_STMT_ALLOCATE: return 1 + stmt_count(s->alloc.body);
  }
  mlc_unreachable();
}

static void gen_body(kgen *k, const mlc_stmt *s) {
  if (barrier_in_loop(k->p, s)) gen_barrier(k);
  gen_stmt(k, s->loop.body);
}

static void gen_serial(kgen *k, const mlc_stmt *s) {
  cg *c = k->c;
  mlc_dtype t = s->loop.var->dtype;
  LLVMValueRef lo = cg_convert(c, cg_expr(c, s->loop.min), s->loop.min->dtype, t);
  LLVMValueRef ext = cg_convert(c, cg_expr(c, s->loop.extent), s->loop.extent->dtype, t);
  LLVMValueRef hi = LLVMBuildAdd(c->b, lo, ext, "");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef head = cg_new_block(c, "for.head"), body = cg_new_block(c, "for.body");
  LLVMBasicBlockRef done = cg_new_block(c, "for.end");
  LLVMBuildBr(c->b, head);
  LLVMPositionBuilderAtEnd(c->b, head);
  LLVMValueRef i = LLVMBuildPhi(c->b, LLVMTypeOf(lo), s->loop.var->name);
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, i, hi, ""), body, done);
  LLVMPositionBuilderAtEnd(c->b, body);
  int saved = c->vars.len;
  cg_bind_var(c, s->loop.var, i);
  gen_body(k, s);
  c->vars.len = saved;
  LLVMValueRef next = LLVMBuildNSWAdd(c->b, i, LLVMConstInt(LLVMTypeOf(i), 1, 0), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMBuildBr(c->b, head);
  LLVMValueRef vals[2] = {lo, next};
  LLVMBasicBlockRef bbs[2] = {pre, latch};
  LLVMAddIncoming(i, vals, bbs, 2);
  LLVMPositionBuilderAtEnd(c->b, done);
}

/* ---- vector copies ----------------------------------------------------------------- */

/* idx as base + (v - min) (the form cuda_vthread.c gives unit-stride lane
 * indices): base, else NULL. */
static const mlc_expr *lane_base(const mlc_expr *idx, const mlc_var *v) {
  if (idx->kind != MLC_EXPR_ADD || mlc_expr_uses_var(idx->bin.a, v)) return NULL;
  const mlc_expr *lane = idx->bin.b;
  if (lane->kind == MLC_EXPR_CAST) lane = lane->cast.value;
  if (lane->kind != MLC_EXPR_SUB || lane->bin.a->kind != MLC_EXPR_VAR || lane->bin.a->var != v ||
      mlc_expr_uses_var(lane->bin.b, v))
    return NULL;
  return idx->bin.a;
}

/* A vectorized loop whose body copies src[base' + lane] to dst[base +
 * lane], both bases multiples of the lane count (every buffer here is
 * 16-byte aligned): one aligned vector load and store (the cooperative
 * fetch's ld.global.v4 / st.shared.v4). False when it is not that. */
static bool gen_vector_copy(kgen *k, const mlc_stmt *s, int64_t lanes) {
  cg *c = k->c;
  const mlc_stmt *st = s->loop.body;
  const mlc_var *v = s->loop.var;
  if (st->kind != MLC_STMT_STORE || st->store.value->kind != MLC_EXPR_LOAD) return false;
  const mlc_expr *ld = st->store.value;
  mlc_dtype t = st->store.buf->dtype;
  int64_t bytes = lanes * mlc_dtype_bytes(t);
  if (ld->load.buf->dtype != t || t == MLC_BOOL || bytes > 16 || barrier_in_loop(k->p, s))
    return false;
  const mlc_expr *db = lane_base(st->store.indices[0], v), *sb = lane_base(ld->load.indices[0], v);
  if (!db || !sb || cuda_pow2_multiple(db) % lanes || cuda_pow2_multiple(sb) % lanes) return false;
  LLVMTypeRef vty = LLVMVectorType(cg_mem_type(c, t), (unsigned)lanes);
  cg_buf *src = cg_lookup_buf(c, ld->load.buf), *dst = cg_lookup_buf(c, st->store.buf);
  LLVMValueRef sp = cg_index_ptr(c, src, sb), dp = cg_index_ptr(c, dst, db);
  unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(sp)), ad = LLVMGetPointerAddressSpace(LLVMTypeOf(dp));
  LLVMValueRef val = LLVMBuildLoad2(c->b, vty, LLVMBuildBitCast(c->b, sp, LLVMPointerType(vty, as), ""), "");
  LLVMSetAlignment(val, (unsigned)bytes);
  LLVMValueRef store = LLVMBuildStore(c->b, val, LLVMBuildBitCast(c->b, dp, LLVMPointerType(vty, ad), ""));
  LLVMSetAlignment(store, (unsigned)bytes);
  return true;
}

/* Unrolled, vectorized and vthread loops: copies of the body when small
 * (so local arrays indexed by the loop var become registers), else a
 * serial loop that LLVM may still unroll. Vector lanes become scalar
 * accesses (but for aligned copies, above), which NVPTX's load/store
 * vectorizer merges where it can. */
static void gen_copies(kgen *k, const mlc_stmt *s) {
  cg *c = k->c;
  int64_t ext;
  if (!mlc_expr_is_const_int(s->loop.extent, &ext) || ext > UNROLL_MAX_EXTENT ||
      ext * stmt_count(s->loop.body) > UNROLL_MAX_STMTS) {
    gen_serial(k, s);
    return;
  }
  mlc_dtype t = s->loop.var->dtype;
  if (s->loop.kind == MLC_FOR_VECTORIZED && (ext == 2 || ext == 4) && gen_vector_copy(k, s, ext))
    return;
  LLVMValueRef lo = cg_convert(c, cg_expr(c, s->loop.min), s->loop.min->dtype, t);
  int saved = c->vars.len;
  for (int64_t i = 0; i < ext; i++) {
    LLVMValueRef v = LLVMBuildAdd(c->b, lo, LLVMConstInt(LLVMTypeOf(lo), (unsigned long long)i, 0), "");
    cg_bind_var(c, s->loop.var, v);
    gen_body(k, s);
    c->vars.len = saved;
  }
}

/* A loop bound to a block or thread axis: var = min + index, guarded when
 * the axis is launched wider than this loop. */
static void gen_bound(kgen *k, const mlc_stmt *s, int ax) {
  cg *c = k->c;
  mlc_dtype t = s->loop.var->dtype;
  LLVMValueRef idx = cg_convert(c, call_intrinsic0(c, sreg_names[ax]), MLC_INT32, t);
  LLVMValueRef lo = cg_convert(c, cg_expr(c, s->loop.min), s->loop.min->dtype, t);
  int64_t ext, launched = *launch_ext((mlc_gpu_launch *)k->l, ax);
  MLC_ASSERT(mlc_expr_is_const_int(s->loop.extent, &ext));
  LLVMBasicBlockRef done = NULL;
  if (ext < launched) {
    LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntSLT, idx, LLVMConstInt(LLVMTypeOf(idx), (unsigned long long)ext, 1), "");
    LLVMBasicBlockRef body = cg_new_block(c, "bound.in");
    done = cg_new_block(c, "bound.end");
    LLVMBuildCondBr(c->b, in, body, done);
    LLVMPositionBuilderAtEnd(c->b, body);
  }
  int saved = c->vars.len;
  cg_bind_var(c, s->loop.var, LLVMBuildAdd(c->b, lo, idx, ""));
  gen_stmt(k, s->loop.body);
  c->vars.len = saved;
  if (done) {
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, done);
  }
}

static void gen_for(kgen *k, const mlc_stmt *s) {
  switch (s->loop.kind) {
  case MLC_FOR_SERIAL: gen_serial(k, s); return;
  case MLC_FOR_UNROLLED:
  case MLC_FOR_VECTORIZED: gen_copies(k, s); return;
  case MLC_FOR_PARALLEL: break; /* refused by cuda_analyze */
  case MLC_FOR_THREAD_BINDING: {
    int ax = axis_of(s->loop.thread);
    if (ax == AXIS_VTHREAD) gen_copies(k, s);
    else gen_bound(k, s, ax);
    return;
  }
  }
  mlc_unreachable();
}

static void bind_buffer(cg *c, const mlc_buffer *b, LLVMValueRef ptr, bool noalias) {
  cg_buf cb = {b, ptr, noalias};
  MLC_VEC_APUSH(c->a, c->bufs, cb);
}

/* Shared buffers: a static array in address space 3, one per ALLOCATE.
 * Others: an array in the entry block's frame (registers after SROA when
 * every index is constant, local memory otherwise). */
static void gen_allocate(kgen *k, const mlc_stmt *s) {
  cg *c = k->c;
  const mlc_buffer *buf = s->alloc.buf;
  MLC_ASSERT(buf->ndim == 1);
  LLVMTypeRef mty = cg_mem_type(c, buf->dtype);
  LLVMTypeRef aty = LLVMArrayType(mty, (unsigned)buf->shape[0]);
  LLVMValueRef ptr;
  if (is_shared(buf)) {
    char *name = mlc_arena_printf(c->a, "%s.%s.%d", c->sym, buf->name, k->n_shared++);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, aty, name, 3);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMGetUndef(aty));
    LLVMSetAlignment(g, 16);
    ptr = LLVMConstBitCast(g, LLVMPointerType(mty, 3));
  } else {
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
    LLVMPositionBuilderAtEnd(eb, c->entry);
    LLVMValueRef arr = LLVMBuildAlloca(eb, aty, buf->name);
    LLVMSetAlignment(arr, 16);
    LLVMDisposeBuilder(eb);
    ptr = LLVMBuildBitCast(c->b, arr, LLVMPointerType(mty, 0), "");
  }
  int saved = c->bufs.len;
  bind_buffer(c, buf, ptr, true);
  gen_stmt(k, s->alloc.body);
  c->bufs.len = saved;
}

static void gen_store(kgen *k, const mlc_stmt *s) {
  cg *c = k->c;
  cg_buf *b = cg_lookup_buf(c, s->store.buf);
  mlc_dtype t = s->store.buf->dtype;
  LLVMValueRef p = cg_index_ptr(c, b, s->store.indices[0]);
  LLVMValueRef v = cg_convert(c, cg_expr(c, s->store.value), s->store.value->dtype, t);
  v = cg_to_mem(c, v, t);
  LLVMSetAlignment(LLVMBuildStore(c->b, v, p), (unsigned)mlc_dtype_bytes(t));
}

static void gen_if(kgen *k, const mlc_stmt *s) {
  cg *c = k->c;
  LLVMValueRef cond = cg_convert(c, cg_expr(c, s->if_.cond), s->if_.cond->dtype, MLC_BOOL);
  LLVMBasicBlockRef tb = cg_new_block(c, "if.then");
  LLVMBasicBlockRef eb = s->if_.else_s ? cg_new_block(c, "if.else") : NULL;
  LLVMBasicBlockRef done = cg_new_block(c, "if.end");
  LLVMBuildCondBr(c->b, cond, tb, eb ? eb : done);
  LLVMPositionBuilderAtEnd(c->b, tb);
  gen_stmt(k, s->if_.then_s);
  LLVMBuildBr(c->b, done);
  if (eb) {
    LLVMPositionBuilderAtEnd(c->b, eb);
    gen_stmt(k, s->if_.else_s);
    LLVMBuildBr(c->b, done);
  }
  LLVMPositionBuilderAtEnd(c->b, done);
}

static void gen_stmt(kgen *k, const mlc_stmt *s) {
  switch (s->kind) {
  case MLC_STMT_FOR: gen_for(k, s); return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable(); /* lowered away */
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) {
      if (barrier_before(k->p, s, i)) gen_barrier(k);
      gen_stmt(k, s->seq.stmts[i]);
    }
    return;
  case MLC_STMT_STORE: gen_store(k, s); return;
  case MLC_STMT_IF: gen_if(k, s); return;
  case MLC_STMT_ALLOCATE: gen_allocate(k, s); return;
  case MLC_STMT_EVALUATE: cg_expr(k->c, s->eval.value); return;
  }
  mlc_unreachable();
}

/* ---- the kernel ---------------------------------------------------------------- */

static void annotate(cg *c, LLVMValueRef fn, const char *key, int64_t v) {
  LLVMValueRef ops[3] = {fn, LLVMMDStringInContext(c->ctx, key, (unsigned)strlen(key)),
                         LLVMConstInt(c->t_i32, (unsigned long long)v, 0)};
  LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", LLVMMDNodeInContext(c->ctx, ops, 3));
}

static bool attr_true(const mlc_prim_func *f, const char *key) {
  const mlc_ann *a = mlc_ann_find(f->n_attrs, f->attrs, key);
  return a && (a->kind == MLC_ANN_BOOL || a->kind == MLC_ANN_INT) && a->i != 0;
}

bool cuda_emit_kernel(cg *c, const mlc_prim_func *lf, const char *symbol, mlc_gpu_launch *launch,
                      mlc_error *err) {
  lf = cuda_vthread(c->a, lf);
  if (!cuda_analyze(c->a, lf, launch, err)) return false;
  plan p = {.a = c->a, .err = err, .l = launch};
  if (!plan_stmt(&p, lf->body, NULL)) return false;
  if (LLVMGetNamedFunction(c->mod, symbol) || LLVMGetNamedGlobal(c->mod, symbol))
    return mlc_error_set(err, "symbol %s is defined twice", symbol);
  c->sym = symbol;
  c->noalias = attr_true(lf, "tir.noalias");
  int n = lf->n_params;
  LLVMTypeRef *pt = MLC_NEW_ARRAY(c->a, LLVMTypeRef, n + 1);
  for (int i = 0; i < n; i++) pt[i] = LLVMPointerType(cg_mem_type(c, lf->params[i]->dtype), 0);
  LLVMValueRef fn = LLVMAddFunction(c->mod, symbol, LLVMFunctionType(c->t_void, pt, (unsigned)n, 0));
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, nounwind, 0));
  /* Parameters are 16-byte aligned (cuMemAlloc gives 256), so the load/
   * store vectorizer can merge vectorized loops' accesses into v4 ones. */
  unsigned na = LLVMGetEnumAttributeKindForName("noalias", 7);
  unsigned al = LLVMGetEnumAttributeKindForName("align", 5);
  for (int i = 0; i < n; i++) {
    LLVMAttributeIndex at = (LLVMAttributeIndex)(i + 1);
    LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(c->ctx, al, 16));
    if (c->noalias) LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(c->ctx, na, 0));
  }
  annotate(c, fn, "kernel", 1);
  annotate(c, fn, "maxntidx", launch->block[0]);
  annotate(c, fn, "maxntidy", launch->block[1]);
  annotate(c, fn, "maxntidz", launch->block[2]);

  c->fn = fn;
  c->entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(c->b, cg_new_block(c, "body"));
  c->vars.len = 0;
  c->bufs.len = 0;
  c->lanes = 0;
  for (int i = 0; i < n; i++) {
    LLVMValueRef arg = LLVMGetParam(fn, (unsigned)i);
    LLVMSetValueName2(arg, lf->params[i]->name, strlen(lf->params[i]->name));
    bind_buffer(c, lf->params[i], arg, c->noalias);
  }
  kgen k = {c, &p, launch, 0};
  gen_stmt(&k, lf->body);
  LLVMBuildRetVoid(c->b);
  LLVMPositionBuilderAtEnd(c->b, c->entry);
  LLVMBuildBr(c->b, LLVMGetNextBasicBlock(c->entry));
  c->bufs.len = 0;
  c->vars.len = 0;
  return true;
}
