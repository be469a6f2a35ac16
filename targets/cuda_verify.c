/* GPU verification: whether a scheduled prim_func fits a GPU's limits
 * before code generation (TVM's VerifyGPUCode plus the "every loop bound"
 * check of its host/device split).
 *
 * One walk over the IR. Outside every thread-bound loop is the host: only
 * blocks, SEQs, IFs and allocations may stand there; a loop or a store
 * there is refused. A thread-bound loop met on the host starts a kernel,
 * which records each tag's extent. Accesses of shared and local buffers are
 * collected with the loops above them (block iter vars replaced by their
 * bindings); after the walk each buffer's size is the region its accesses
 * touch below the lowest loop common to them, as the lowering compacts it,
 * with the thread loops above that loop relaxed too.
 */
#include "targets/cuda_internal.h"
#include "targets/targets.h"

#include <stdarg.h>
#include <string.h>

void mlc_gpu_limits_sm80(mlc_gpu_limits *out) {
  *out = (mlc_gpu_limits){
      .max_threads_per_block = 1024,
      .max_thread_dim = {1024, 1024, 64},
      .max_grid_dim = {2147483647, 65535, 65535},
      .max_vthread = 8,
      .max_shared_bytes = 48 * 1024,
      .max_local_bytes = 64 * 1024,
      .max_vector_bytes = 16,
      .warp_size = 32,
  };
}

bool mlc_target_gpu_limits(const mlc_target *t, mlc_gpu_limits *out) {
  if (mlc_target_device(t) != MLC_DEVICE_CUDA) return false;
  mlc_gpu_limits_sm80(out); /* every SM the cuda backend takes has these */
  return true;
}

/* Thread tags: blockIdx.{x,y,z}, threadIdx.{x,y,z}, vthread (any suffix). */
enum { TAG_BLOCK = 0, TAG_THREAD = 3, TAG_VTHREAD = 6, N_TAGS = 9 };

static int tag_index(const char *t) {
  if (!t) return -1;
  int base = strncmp(t, "blockIdx.", 9) == 0     ? TAG_BLOCK
             : strncmp(t, "threadIdx.", 10) == 0 ? TAG_THREAD
             : strncmp(t, "vthread", 7) == 0     ? TAG_VTHREAD
                                                 : -1;
  if (base < 0) return -1;
  const char *dot = strchr(t, '.');
  char c = dot ? dot[1] : 'x';
  int axis = c == 'y' ? 1 : c == 'z' ? 2 : 0;
  return base + axis;
}

/* One access of a shared or local buffer. */
typedef struct use {
  const mlc_buffer *buf;
  mlc_region reg;         /* in terms of loop vars */
  int kernel;             /* -1: host */
  int depth;              /* loops above it */
  const mlc_stmt **loops; /* outer first */
  const char *block;
  mlc_expr *pred; /* the block's T.where in loop vars, or NULL */
} use;

typedef struct kernel_info {
  const mlc_stmt *head; /* its outermost loop */
  const char *block;    /* the first block under it (for messages) */
  int64_t ext[N_TAGS];  /* 0: tag unused */
  int64_t shared, local;
} kernel_info;

typedef struct vctx {
  mlc_arena *a;
  const mlc_gpu_limits *lim;
  mlc_error *err;
  mlc_gpu_usage u;
  MLC_VEC(const mlc_stmt *) loops; /* enclosing loops, outer first */
  MLC_VEC(mlc_var *) env_vars;     /* iter var -> binding in loop vars */
  MLC_VEC(mlc_expr *) env_vals;
  MLC_VEC(kernel_info) kernels;
  MLC_VEC(use) uses;
  int kernel;        /* current kernel, -1 on the host */
  int n_non_block;   /* loops of the kernel that are not blockIdx */
  const char *block; /* innermost enclosing block */
} vctx;

/* Record the first failure only: later checks keep filling usage. */
static void fail(vctx *c, mlc_gpu_check k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(vctx *c, mlc_gpu_check k, const char *fmt, ...) {
  if (c->u.failed != MLC_GPU_OK) return;
  c->u.failed = k;
  va_list ap;
  va_start(ap, fmt);
  mlc_error_vset(c->err, fmt, ap);
  va_end(ap);
}

static const char *loop_name(const mlc_stmt *l) { return l->loop.var->name; }

/* The first block at or under st, for messages. */
static bool is_realize(const mlc_stmt *st, void *ud) {
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  *(const char **)ud = st->realize.block->name;
  return true;
}

static const char *first_block(const mlc_stmt *st) {
  const char *name = NULL;
  mlc_stmt_any(st, is_realize, &name);
  return name;
}

static const char *kernel_name(const vctx *c, int k) {
  return k >= 0 ? loop_name(c->kernels.data[k].head) : "(host)";
}

/* ---- vector width ------------------------------------------------------------ */

static int max_i(int a, int b) { return a > b ? a : b; }

/* The widest value an expression computes: loads count their element
 * type, not their index arithmetic (addresses are scalar per lane). */
static int expr_max_bytes(const mlc_expr *e) {
  if (!e) return 0;
  int m = mlc_dtype_bytes(e->dtype);
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR: return m;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR: return max_i(m, max_i(expr_max_bytes(e->bin.a), expr_max_bytes(e->bin.b)));
  case MLC_EXPR_NOT: return max_i(m, expr_max_bytes(e->bin.a));
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return max_i(max_i(m, expr_max_bytes(e->sel.cond)),
                 max_i(expr_max_bytes(e->sel.t), expr_max_bytes(e->sel.f)));
  case MLC_EXPR_LOAD: return mlc_dtype_bytes(e->load.buf->dtype);
  case MLC_EXPR_CAST: return max_i(m, expr_max_bytes(e->cast.value));
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      m = max_i(m, expr_max_bytes(e->call.args[i]));
    return m;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++) m = max_i(m, expr_max_bytes(e->ext.kids[i]));
    return m;
  }
  mlc_unreachable();
}

/* The widest element a vectorized body loads, computes or stores. */
static int stmt_max_bytes(const mlc_stmt *st) {
  if (!st) return 0;
  int m = 0, x;
  switch (st->kind) {
  case MLC_STMT_FOR: return stmt_max_bytes(st->loop.body);
  case MLC_STMT_BLOCK_REALIZE:
    m = stmt_max_bytes(st->realize.block->body);
    x = stmt_max_bytes(st->realize.block->init);
    return x > m ? x : m;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++)
      if ((x = stmt_max_bytes(st->seq.stmts[i])) > m) m = x;
    return m;
  case MLC_STMT_IF:
    m = stmt_max_bytes(st->if_.then_s);
    x = stmt_max_bytes(st->if_.else_s);
    return x > m ? x : m;
  case MLC_STMT_ALLOCATE: return stmt_max_bytes(st->alloc.body);
  case MLC_STMT_STORE:
    m = mlc_dtype_bytes(st->store.buf->dtype);
    x = expr_max_bytes(st->store.value);
    return x > m ? x : m;
  case MLC_STMT_EVALUATE: return expr_max_bytes(st->eval.value);
  }
  mlc_unreachable();
}

/* ---- the walk ------------------------------------------------------------------ */

static void walk(vctx *c, const mlc_stmt *st);

static bool is_gpu_scope(const mlc_buffer *b) {
  return strncmp(b->scope, "shared", 6) == 0 || strncmp(b->scope, "local", 5) == 0;
}

static mlc_expr *in_env(vctx *c, mlc_expr *e) {
  if (c->env_vars.len == 0) return e;
  return mlc_expr_subst(c->a, e, c->env_vars.len, c->env_vars.data, c->env_vals.data);
}

static void record_use(vctx *c, const mlc_region *r, mlc_expr *pred) {
  if (!is_gpu_scope(r->buf)) return;
  use u = {
      .buf = r->buf, .kernel = c->kernel, .depth = c->loops.len, .block = c->block, .pred = pred};
  u.reg.buf = r->buf;
  u.reg.ranges = MLC_NEW_ARRAY(c->a, mlc_range, r->buf->ndim > 0 ? r->buf->ndim : 1);
  for (int d = 0; d < r->buf->ndim; d++)
    u.reg.ranges[d] = (mlc_range){in_env(c, r->ranges[d].min), in_env(c, r->ranges[d].extent)};
  u.loops = MLC_NEW_ARRAY(c->a, const mlc_stmt *, c->loops.len + 1);
  if (c->loops.len) memcpy(u.loops, c->loops.data, sizeof(*u.loops) * (size_t)c->loops.len);
  MLC_VEC_PUSH(c->uses, u);
}

static void walk_realize(vctx *c, const mlc_stmt *st) {
  const mlc_block *b = st->realize.block;
  int saved = c->env_vars.len;
  const char *saved_block = c->block;
  mlc_expr **vals = MLC_NEW_ARRAY(c->a, mlc_expr *, b->n_iters > 0 ? b->n_iters : 1);
  for (int i = 0; i < b->n_iters; i++) vals[i] = in_env(c, st->realize.values[i]);
  for (int i = 0; i < b->n_iters; i++) {
    MLC_VEC_PUSH(c->env_vars, b->iters[i].var);
    MLC_VEC_PUSH(c->env_vals, vals[i]);
  }
  c->block = b->name;
  mlc_expr *pred = st->realize.predicate ? in_env(c, st->realize.predicate) : NULL;
  for (int i = 0; i < b->n_reads; i++) record_use(c, &b->reads[i], pred);
  for (int i = 0; i < b->n_writes; i++) record_use(c, &b->writes[i], pred);
  if (b->init) walk(c, b->init);
  walk(c, b->body);
  c->block = saved_block;
  c->env_vars.len = c->env_vals.len = saved;
}

/* A thread-bound loop: start a kernel on the host, check placement and
 * that the tag keeps one extent in the kernel. */
static void bind_loop(vctx *c, const mlc_stmt *l, int64_t ext, int tag) {
  const char *blk = first_block(l->loop.body);
  if (tag < 0) {
    fail(c, MLC_GPU_STRUCTURE,
         "GPU verify: loop %s (block %s) is bound to unknown thread tag \"%s\"", loop_name(l),
         blk ? blk : "?", l->loop.thread ? l->loop.thread : "");
    return;
  }
  if (c->kernel < 0) {
    kernel_info k = {.head = l, .block = blk};
    MLC_VEC_PUSH(c->kernels, k);
    c->kernel = c->kernels.len - 1;
    c->n_non_block = 0;
  }
  kernel_info *k = &c->kernels.data[c->kernel];
  if (tag < TAG_THREAD && c->n_non_block > 0)
    fail(c, MLC_GPU_STRUCTURE,
         "GPU verify: kernel %s: loop %s (block %s) binds %s inside a loop that is not "
         "blockIdx-bound (blockIdx loops must be outermost)",
         kernel_name(c, c->kernel), loop_name(l), blk ? blk : "?", l->loop.thread);
  if (k->ext[tag] != 0 && k->ext[tag] != ext)
    fail(c, MLC_GPU_STRUCTURE,
         "GPU verify: kernel %s: loop %s (block %s) binds %s with extent %lld, elsewhere in "
         "the kernel %lld",
         kernel_name(c, c->kernel), loop_name(l), blk ? blk : "?", l->loop.thread, (long long)ext,
         (long long)k->ext[tag]);
  k->ext[tag] = ext;
}

static void walk_for(vctx *c, const mlc_stmt *l) {
  int64_t ext = -1;
  const char *blk = first_block(l->loop.body);
  if (!blk) blk = c->block;
  bool is_const = mlc_expr_is_const_int(l->loop.extent, &ext);
  int started = c->kernel;
  switch (l->loop.kind) {
  case MLC_FOR_PARALLEL:
    fail(c, MLC_GPU_PARALLEL,
         "GPU verify: loop %s (block %s) is parallel: no parallel loops on a GPU (bind it to "
         "blockIdx/threadIdx)",
         loop_name(l), blk);
    break;
  case MLC_FOR_THREAD_BINDING:
    if (!is_const)
      fail(c, MLC_GPU_STRUCTURE,
           "GPU verify: loop %s (block %s) bound to %s has a non-constant extent", loop_name(l),
           blk, l->loop.thread);
    else
      bind_loop(c, l, ext, tag_index(l->loop.thread));
    break;
  case MLC_FOR_VECTORIZED: {
    int64_t bytes = is_const ? ext * stmt_max_bytes(l->loop.body) : -1;
    if (!is_const || bytes > c->lim->max_vector_bytes)
      fail(c, MLC_GPU_VECTOR,
           "GPU verify: vectorized loop %s (block %s): %lld lanes of %d bytes exceed the "
           "maximum vector of %lld bytes",
           loop_name(l), blk, (long long)ext, stmt_max_bytes(l->loop.body),
           (long long)c->lim->max_vector_bytes);
    break;
  }
  case MLC_FOR_SERIAL:
  case MLC_FOR_UNROLLED: break;
  }
  if (c->kernel < 0 && l->loop.kind != MLC_FOR_THREAD_BINDING)
    fail(c, MLC_GPU_UNBOUND,
         "GPU verify: loop %s (block %s) is not inside any thread-bound loop: it would run on "
         "the host (bind it to blockIdx/threadIdx)",
         loop_name(l), blk);
  int tag = l->loop.kind == MLC_FOR_THREAD_BINDING ? tag_index(l->loop.thread) : -1;
  bool counted = c->kernel >= 0 && !(tag >= TAG_BLOCK && tag < TAG_THREAD);
  if (counted) c->n_non_block++;
  MLC_VEC_PUSH(c->loops, l);
  walk(c, l->loop.body);
  c->loops.len--;
  if (counted) c->n_non_block--;
  if (started < 0) c->kernel = -1;
}

static void walk(vctx *c, const mlc_stmt *st) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: walk_for(c, st); return;
  case MLC_STMT_BLOCK_REALIZE: walk_realize(c, st); return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) walk(c, st->seq.stmts[i]);
    return;
  case MLC_STMT_IF:
    walk(c, st->if_.then_s);
    walk(c, st->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: walk(c, st->alloc.body); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE:
    if (c->kernel < 0)
      fail(c, MLC_GPU_UNBOUND,
           "GPU verify: block %s computes outside every thread-bound loop: it would run on "
           "the host (bind its loops to blockIdx/threadIdx)",
           c->block ? c->block : "?");
    return;
  }
  mlc_unreachable();
}

/* ---- memory per kernel ------------------------------------------------------------ */

/* Whether a loop above the placement is relaxed: shared buffers serve
 * every thread and vthread of the block. */
static bool relax_above(const mlc_stmt *l, bool shared) {
  int t = l->loop.kind == MLC_FOR_THREAD_BINDING ? tag_index(l->loop.thread) : -1;
  return shared && t >= TAG_THREAD;
}

/* Inside the placement every loop is relaxed but block loops, and for
 * local buffers (one copy per thread and vthread) thread loops. */
static bool relax_below(const mlc_stmt *l, bool shared) {
  int t = l->loop.kind == MLC_FOR_THREAD_BINDING ? tag_index(l->loop.thread) : -1;
  return t < 0 || (shared && t >= TAG_THREAD);
}

/* Copies of a local buffer: the vthread loops above its use, as vthread
 * injection makes one per virtual thread. */
static int64_t vthread_copies(const use *u) {
  int64_t n = 1, e;
  for (int d = 0; d < u->depth; d++) {
    const mlc_stmt *l = u->loops[d];
    if (l->loop.kind == MLC_FOR_THREAD_BINDING && tag_index(l->loop.thread) >= TAG_VTHREAD &&
        mlc_expr_is_const_int(l->loop.extent, &e))
      n *= e;
  }
  return n;
}

/* The loops of a use that its buffer's size covers, with their ranges;
 * returns their count. lca: the loops common to all uses. */
static int relaxed_loops(const use *u, int lca, bool shared, mlc_var **vars, int64_t *mins,
                         int64_t *exts) {
  int m = 0;
  for (int d = 0; d < u->depth && m < 64; d++) {
    const mlc_stmt *l = u->loops[d];
    int64_t mn, ex;
    if (!(d < lca ? relax_above(l, shared) : relax_below(l, shared))) continue;
    if (!mlc_expr_is_const_int(l->loop.min, &mn) || !mlc_expr_is_const_int(l->loop.extent, &ex))
      continue; /* stays symbolic: its dimension may count whole */
    vars[m] = l->loop.var, mins[m] = mn, exts[m] = ex, m++;
  }
  return m;
}

static bool uses_any(const mlc_expr *e, mlc_var **vars, int n) {
  for (int i = 0; i < n; i++)
    if (mlc_expr_uses_var(e, vars[i])) return true;
  return false;
}

/* A split whose factors overshoot the extent guards its block with
 * T.where(q < C); an index e = fixed + q then stays below fixed + C.
 * Narrows dimension d of r (relaxed) by each such conjunct of pred, as
 * the cuda backend's compaction does. */
static void narrow_by_pred(mlc_arena *a, mlc_range *r, mlc_expr *e, const mlc_expr *pred,
                           mlc_var **vars, const int64_t *mins, const int64_t *exts, int m) {
  if (!pred) return;
  if (pred->kind == MLC_EXPR_AND) {
    narrow_by_pred(a, r, e, pred->bin.a, vars, mins, exts, m);
    narrow_by_pred(a, r, e, pred->bin.b, vars, mins, exts, m);
    return;
  }
  int64_t c, ext, lo, hi;
  if (pred->kind != MLC_EXPR_LT || !mlc_expr_is_const_int(pred->bin.b, &c) ||
      !mlc_expr_is_const_int(r->extent, &ext))
    return;
  mlc_expr *q = pred->bin.a, *fixed = mlc_simplify_expr(a, mlc_sub(a, e, q));
  if (uses_any(fixed, vars, m)) return;
  mlc_simplifier *s = mlc_simplifier_new(a);
  for (int i = 0; i < m; i++) mlc_simplifier_bind(s, vars[i], mins[i], exts[i]);
  if (!mlc_simplifier_bounds(s, q, &lo, &hi) || hi < c - 1 || c - lo >= ext || c <= lo) return;
  r->min = mlc_simplify_expr(a, mlc_add(a, fixed, mlc_int_t(a, fixed->dtype, lo)));
  r->extent = mlc_int_t(a, r->extent->dtype, c - lo);
}

/* The region one use touches: relaxed over its covered loops, point
 * dimensions narrowed by the block's T.where. */
static mlc_region use_region(vctx *c, const use *u, int lca, bool shared) {
  mlc_var *vars[64];
  int64_t mins[64], exts[64];
  int m = relaxed_loops(u, lca, shared, vars, mins, exts);
  mlc_region r = mlc_region_relax(c->a, u->reg, m, vars, mins, exts);
  for (int d = 0; d < r.buf->ndim && u->pred; d++) {
    int64_t one;
    if (mlc_expr_is_const_int(u->reg.ranges[d].extent, &one) && one == 1)
      narrow_by_pred(c->a, &r.ranges[d], u->reg.ranges[d].min, u->pred, vars, mins, exts, m);
  }
  return r;
}

/* Bytes of buffer `b` given its uses u[0..n): per dimension the hull of
 * the relaxed regions when their mins differ by constants, else the whole
 * dimension. */
static int64_t buffer_bytes(vctx *c, const use *u, int n) {
  const mlc_buffer *b = u[0].buf;
  bool shared = strncmp(b->scope, "shared", 6) == 0;
  int lca = u[0].depth;
  for (int i = 1; i < n; i++) {
    int d = 0;
    while (d < lca && d < u[i].depth && u[i].loops[d] == u[0].loops[d]) d++;
    lca = d;
  }
  mlc_region *rel = MLC_NEW_ARRAY(c->a, mlc_region, n);
  for (int i = 0; i < n; i++) rel[i] = use_region(c, &u[i], lca, shared);
  int64_t bytes = mlc_dtype_bytes(b->dtype);
  for (int d = 0; d < b->ndim; d++) {
    int64_t lo = 0, hi = 0, e0;
    bool ok = mlc_expr_is_const_int(mlc_simplify_expr(c->a, rel[0].ranges[d].extent), &e0);
    hi = e0;
    for (int i = 1; i < n && ok; i++) {
      int64_t diff, e;
      ok = mlc_expr_is_const_int(mlc_simplify_expr(c->a, rel[i].ranges[d].extent), &e) &&
           mlc_expr_const_diff(c->a, rel[i].ranges[d].min, rel[0].ranges[d].min, &diff);
      if (ok) {
        if (diff < lo) lo = diff;
        if (diff + e > hi) hi = diff + e;
      }
    }
    int64_t size = ok && hi - lo < b->shape[d] ? hi - lo : b->shape[d];
    bytes *= size;
  }
  return shared ? bytes : bytes * vthread_copies(&u[0]);
}

/* Add every shared and local buffer to its kernel's total. */
static void account_memory(vctx *c) {
  const mlc_buffer **seen = MLC_NEW_ARRAY(c->a, const mlc_buffer *, c->uses.len + 1);
  int n_seen = 0;
  use *tmp = mlc_xmalloc(sizeof(use) * (size_t)(c->uses.len + 1));
  for (int i = 0; i < c->uses.len; i++) {
    const mlc_buffer *b = c->uses.data[i].buf;
    bool done = false;
    for (int j = 0; j < n_seen; j++) done |= seen[j] == b;
    if (done) continue;
    seen[n_seen++] = b;
    int n = 0, kernel = c->uses.data[i].kernel;
    for (int j = i; j < c->uses.len; j++)
      if (c->uses.data[j].buf == b) {
        tmp[n++] = c->uses.data[j];
        if (c->uses.data[j].kernel != kernel) kernel = -2;
      }
    if (kernel == -2) {
      fail(c, MLC_GPU_STRUCTURE, "GPU verify: %s buffer %s is used by more than one kernel",
           b->scope, b->name);
      continue;
    }
    if (kernel < 0) continue; /* host use: already refused */
    int64_t bytes = buffer_bytes(c, tmp, n);
    kernel_info *k = &c->kernels.data[kernel];
    *(strncmp(b->scope, "shared", 6) == 0 ? &k->shared : &k->local) += bytes;
  }
  mlc_free(tmp);
}

/* ---- limits per kernel ------------------------------------------------------------- */

static void check_kernel(vctx *c, int ki) {
  const kernel_info *k = &c->kernels.data[ki];
  const mlc_gpu_limits *L = c->lim;
  const char *kn = kernel_name(c, ki), *blk = k->block ? k->block : "?";
  static const char AX[] = "xyz";
  int64_t threads = 1, vthreads = 1;
  for (int a = 0; a < 3; a++) {
    int64_t t = k->ext[TAG_THREAD + a], g = k->ext[TAG_BLOCK + a], v = k->ext[TAG_VTHREAD + a];
    if (t) threads *= t;
    if (v) vthreads *= v;
    if (t > L->max_thread_dim[a])
      fail(c, MLC_GPU_THREADS,
           "GPU verify: kernel %s (block %s): threadIdx.%c extent %lld exceeds the limit %lld", kn,
           blk, AX[a], (long long)t, (long long)L->max_thread_dim[a]);
    if (g > L->max_grid_dim[a])
      fail(c, MLC_GPU_THREADS,
           "GPU verify: kernel %s (block %s): blockIdx.%c extent %lld exceeds the limit %lld", kn,
           blk, AX[a], (long long)g, (long long)L->max_grid_dim[a]);
  }
  if (threads > L->max_threads_per_block)
    fail(c, MLC_GPU_THREADS,
         "GPU verify: kernel %s (block %s): %lld threads per block exceed the limit %lld", kn, blk,
         (long long)threads, (long long)L->max_threads_per_block);
  if (vthreads > L->max_vthread)
    fail(c, MLC_GPU_VTHREAD,
         "GPU verify: kernel %s (block %s): %lld virtual threads exceed the limit %lld", kn, blk,
         (long long)vthreads, (long long)L->max_vthread);
  if (k->shared > L->max_shared_bytes)
    fail(c, MLC_GPU_SHARED,
         "GPU verify: kernel %s (block %s): %lld bytes of shared memory per block exceed the "
         "limit %lld",
         kn, blk, (long long)k->shared, (long long)L->max_shared_bytes);
  if (k->local > L->max_local_bytes)
    fail(c, MLC_GPU_LOCAL,
         "GPU verify: kernel %s (block %s): %lld bytes of local memory per thread exceed the "
         "limit %lld",
         kn, blk, (long long)k->local, (long long)L->max_local_bytes);
  mlc_gpu_usage *u = &c->u;
  if (threads > u->threads) u->threads = threads;
  if (vthreads > u->vthreads) u->vthreads = vthreads;
  if (k->shared > u->shared_bytes) u->shared_bytes = k->shared;
  if (k->local > u->local_bytes) u->local_bytes = k->local;
}

bool mlc_gpu_verify(const mlc_prim_func *f, const mlc_gpu_limits *lim, mlc_gpu_usage *usage,
                    mlc_error *err) {
  vctx c = {.a = mlc_arena_new(), .lim = lim, .err = err, .kernel = -1};
  /* as the cuda backend will build it: cross-thread reductions take a
   * shared buffer of one element per thread each */
  const mlc_prim_func *lf = cuda_lower_allreduce(c.a, f, err);
  if (!lf) {
    mlc_arena_free(c.a);
    if (usage) *usage = (mlc_gpu_usage){.failed = MLC_GPU_STRUCTURE};
    return false;
  }
  f = lf;
  walk(&c, f->body);
  account_memory(&c);
  for (int k = 0; k < c.kernels.len; k++) check_kernel(&c, k);
  c.u.n_kernels = c.kernels.len;
  if (c.u.n_kernels == 0)
    fail(&c, MLC_GPU_UNBOUND, "GPU verify: function %s has no thread-bound loop (no kernel)",
         f->name);
  if (usage) *usage = c.u;
  MLC_VEC_FREE(c.loops);
  MLC_VEC_FREE(c.env_vars);
  MLC_VEC_FREE(c.env_vals);
  MLC_VEC_FREE(c.kernels);
  MLC_VEC_FREE(c.uses);
  mlc_arena_free(c.a);
  return c.u.failed == MLC_GPU_OK;
}
