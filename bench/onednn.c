/* oneDNN's convolution as a bench baseline (see onednn.h). */
#include "bench/onednn.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef MLC_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

struct bench_onednn {
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  dnnl_primitive_t prim;
  dnnl_exec_arg_t args[5];
  int n_args;
  dnnl_memory_t mems[5];
  char impl[64];
};

static void dnnl_die(const char *what) {
  fprintf(stderr, "oneDNN: %s failed\n", what);
  exit(1);
}

#define DNNL_OK(x)                                                                                 \
  do {                                                                                             \
    if ((x) != dnnl_success) dnnl_die(#x);                                                         \
  } while (0)

bool bench_onednn_available(void) { return true; }

/* A memory in the layout the primitive chose, filled with small values. */
static dnnl_memory_t dnnl_mem(dnnl_engine_t eng, const dnnl_memory_desc_t *md) {
  dnnl_memory_t m;
  void *data;
  DNNL_OK(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
  DNNL_OK(dnnl_memory_get_data_handle(m, &data));
  size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
  for (size_t i = 0; i < n; i++) ((float *)data)[i] = (float)((i * 7919) % 13) * 0.01f - 0.06f;
  return m;
}

static void post_ops(const bench_conv *cv, dnnl_primitive_attr_t *attr, dnnl_post_ops_t *po) {
  DNNL_OK(dnnl_primitive_attr_create(attr));
  DNNL_OK(dnnl_post_ops_create(po));
  if (cv->res) DNNL_OK(dnnl_post_ops_append_sum(*po, 1.0f));
  if (cv->clip_max > 0) DNNL_OK(dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_clip, 0.0f, cv->clip_max));
  else if (cv->relu) DNNL_OK(dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
  DNNL_OK(dnnl_primitive_attr_set_post_ops(*attr, *po));
}

bench_onednn *bench_onednn_conv(const bench_conv *cv) {
  bench_onednn *d = calloc(1, sizeof *d);
  if (!d) dnnl_die("calloc");
  DNNL_OK(dnnl_engine_create(&d->eng, dnnl_cpu, 0));
  DNNL_OK(dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags));
  dnnl_memory_desc_t src, wt, bias, dst;
  dnnl_dims_t sd = {1, cv->c, cv->h, cv->w}, dd = {1, cv->k, cv->p, cv->q}, bd = {cv->k};
  dnnl_dims_t wd = {cv->g, cv->k / cv->g, cv->c / cv->g, cv->r, cv->s}, wd1 = {cv->k, cv->c, cv->r, cv->s};
  dnnl_dims_t strides = {cv->stride, cv->stride}, pad = {cv->pad, cv->pad};
  DNNL_OK(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, dnnl_format_tag_any));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_format_tag_any));
  if (cv->g == 1) DNNL_OK(dnnl_memory_desc_init_by_tag(&wt, 4, wd1, dnnl_f32, dnnl_format_tag_any));
  else DNNL_OK(dnnl_memory_desc_init_by_tag(&wt, 5, wd, dnnl_f32, dnnl_format_tag_any));
  dnnl_convolution_desc_t desc;
  DNNL_OK(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_auto, &src, &wt,
                                             cv->bias ? &bias : NULL, &dst, strides, pad, pad));
  dnnl_primitive_attr_t attr;
  dnnl_post_ops_t po;
  post_ops(cv, &attr, &po);
  dnnl_primitive_desc_t pd;
  DNNL_OK(dnnl_primitive_desc_create(&pd, &desc, attr, d->eng, NULL));
  const char *impl = "?";
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  snprintf(d->impl, sizeof d->impl, "%s", impl);
  /* the bias is weights argument 1 */
  const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
  const dnnl_query_t qs[4] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md,
                              dnnl_query_weights_md};
  d->n_args = cv->bias ? 4 : 3;
  for (int i = 0; i < d->n_args; i++) {
    d->mems[i] = dnnl_mem(d->eng, dnnl_primitive_desc_query_md(pd, qs[i], i == 3 ? 1 : 0));
    d->args[i] = (dnnl_exec_arg_t){ids[i], d->mems[i]};
  }
  DNNL_OK(dnnl_primitive_create(&d->prim, pd));
  dnnl_primitive_desc_destroy(pd);
  dnnl_post_ops_destroy(po);
  dnnl_primitive_attr_destroy(attr);
  return d;
}

const char *bench_onednn_impl(const bench_onednn *d) { return d->impl; }

void bench_onednn_run(void *p) {
  bench_onednn *d = p;
  if (dnnl_primitive_execute(d->prim, d->stream, d->n_args, d->args) != dnnl_success ||
      dnnl_stream_wait(d->stream) != dnnl_success)
    dnnl_die("execute");
}

void bench_onednn_free(bench_onednn *d) {
  if (!d) return;
  dnnl_primitive_destroy(d->prim);
  for (int i = 0; i < d->n_args; i++) dnnl_memory_destroy(d->mems[i]);
  dnnl_stream_destroy(d->stream);
  dnnl_engine_destroy(d->eng);
  free(d);
}

#else

bool bench_onednn_available(void) { return false; }
bench_onednn *bench_onednn_conv(const bench_conv *cv) {
  (void)cv;
  fprintf(stderr, "oneDNN: not built in (libdnnl-dev missing)\n");
  exit(1);
}
const char *bench_onednn_impl(const bench_onednn *d) {
  (void)d;
  return "none";
}
void bench_onednn_run(void *d) { (void)d; }
void bench_onednn_free(bench_onednn *d) { (void)d; }

#endif
