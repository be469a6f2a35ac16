/* oneDNN's convolution as a bench baseline (bench_models' per-layer table,
 * bench_roofline's depthwise layers). Built with -DMLC_HAVE_DNNL where
 * libdnnl-dev is installed (make deps); without it bench_onednn_available
 * is false and the rest must not be called. */
#ifndef MLC_BENCH_ONEDNN_H
#define MLC_BENCH_ONEDNN_H

#include <stdbool.h>
#include <stdint.h>

/* A 2-D convolution of batch 1, NCHW shapes: c input channels of h x w,
 * k output channels of p x q, an r x s window, g groups, one stride and
 * symmetric padding; optional bias, a residual summed into the output and
 * an activation: ReLU, or a clip to [0, clip_max] when clip_max > 0
 * (ReLU6). */
typedef struct bench_conv {
  int64_t c, h, w, k, r, s, p, q, g, stride, pad;
  bool bias, res, relu;
  float clip_max;
} bench_conv;

/* oneDNN's primitive for one convolution, on its own arguments (in the
 * layouts it chose, converted once, outside any timing). */
typedef struct bench_onednn bench_onednn;

bool bench_onednn_available(void);
/* convolution_auto with layouts "any", the bias and the residual and
 * activation as post-ops; aborts the program on a oneDNN error. */
bench_onednn *bench_onednn_conv(const bench_conv *cv);
/* The implementation oneDNN chose (its impl_info_str: "brg:avx512_core"). */
const char *bench_onednn_impl(const bench_onednn *d);
/* One execution, waited for: for bench_time_ms. */
void bench_onednn_run(void *d);
void bench_onednn_free(bench_onednn *d);

#endif
