/* run_model: a compiled model (mlc-compile -o M.o --header M.h) linked
 * into a plain C program. Reads the input .npy, calls the model's C entry
 * point <name>_run(input, output), writes the output .npy and, given a
 * reference .npy (PyTorch's output), prints the max absolute and relative
 * errors and fails when an element is off by more than 1e-4 relative
 * (|got - want| > 1e-4 * max(|want|, 1e-2 * max|want|): elements near
 * zero are judged against the output's scale, not their own).
 *
 *   run_model IN.npy OUT.npy [REF.npy]
 *   run_model --compare GOT.npy REF.npy   (the comparison alone)
 *   run_model --compare-scale GOT.npy REF.npy
 *       the same errors printed, judged against the output's scale
 *       alone: fails when max |got - want| > 1e-4 * max |want| (deep
 *       float32 models, whose elements near zero differ between any two
 *       summation orders by more than 1e-4 of themselves)
 *
 * Built by examples/check_models.sh, once per model, with
 *   -DMODEL_HEADER='"resnet18.h"' -DMODEL_RUN=resnet18_run
 *   -DIN_SHAPE=1,3,224,224 -DOUT_SHAPE=1,1000
 * and linked with M.o and the runtime (targets/runtime/parallel.c,
 * workspace.c and half.c; -lpthread -lm). Without MODEL_HEADER (and IN_SHAPE) only
 * --compare is built. Only models with one input and one output (float32,
 * C order). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MODEL_HEADER
#include MODEL_HEADER
static const long in_shape[] = {IN_SHAPE};
#endif
static const long out_shape[] = {OUT_SHAPE};
#define RANK(s) ((int)(sizeof(s) / sizeof((s)[0])))

static long numel(const long *s, int n) {
  long c = 1;
  for (int i = 0; i < n; i++) c *= s[i];
  return c;
}

/* "(1, 3, 224, 224)" as the npy header writes a shape. */
static void shape_text(char *buf, size_t n, const long *s, int rank) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%ld", i ? ", " : "", s[i]);
  if (k < n) snprintf(buf + k, n - k, rank == 1 ? ",)" : ")");
}

/* A float32 C-order .npy (format 1.x or 2.x) of exactly `count` elements
 * and, when shape is given, that shape. NULL with a message on stderr. */
static float *read_npy(const char *path, long count, const long *shape, int rank) {
  FILE *f = fopen(path, "rb");
  unsigned char pre[12];
  if (!f || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "run_model: %s: not a .npy file\n", path);
    if (f) fclose(f);
    return NULL;
  }
  long hlen = pre[8] | (long)pre[9] << 8;
  if (pre[6] >= 2) {
    if (fread(pre + 10, 1, 2, f) != 2) hlen = -1;
    else hlen |= (long)pre[10] << 16 | (long)pre[11] << 24;
  }
  char *h = hlen > 0 && hlen < (1 << 20) ? malloc((size_t)hlen + 1) : NULL;
  if (!h || fread(h, 1, (size_t)hlen, f) != (size_t)hlen) {
    fprintf(stderr, "run_model: %s: truncated header\n", path);
    free(h);
    fclose(f);
    return NULL;
  }
  h[hlen] = 0;
  char want[256];
  if (shape) shape_text(want, sizeof want, shape, rank);
  if (!strstr(h, "'<f4'") || strstr(h, "'fortran_order': True") ||
      (shape && !strstr(h, want))) {
    fprintf(stderr, "run_model: %s: expected float32 C order%s%s; header: %s\n", path,
            shape ? " of shape " : "", shape ? want : "", h);
    free(h);
    fclose(f);
    return NULL;
  }
  free(h);
  float *d = malloc(sizeof(float) * (size_t)count);
  int extra = d && fread(d, sizeof(float), (size_t)count, f) == (size_t)count ? fgetc(f) : 0;
  fclose(f);
  if (!d || extra != EOF) {
    fprintf(stderr, "run_model: %s: expected %ld floats\n", path, count);
    free(d);
    return NULL;
  }
  return d;
}

#ifdef MODEL_HEADER
static int write_npy(const char *path, const float *y) {
  char shape[256], hdr[512];
  shape_text(shape, sizeof shape, out_shape, RANK(out_shape));
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
  int total = (10 + n + 1 + 63) / 64 * 64; /* header padded to 64 bytes, ends in \n */
  memset(hdr + n, ' ', (size_t)(total - 10 - n));
  hdr[total - 10 - 1] = '\n';
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)((total - 10) & 0xff), (unsigned char)((total - 10) >> 8)};
  FILE *f = fopen(path, "wb");
  long c = numel(out_shape, RANK(out_shape));
  if (!f || fwrite(pre, 1, 10, f) != 10 || fwrite(hdr, 1, (size_t)(total - 10), f) != (size_t)(total - 10) ||
      fwrite(y, sizeof(float), (size_t)c, f) != (size_t)c) {
    if (f) fclose(f);
    fprintf(stderr, "run_model: cannot write %s\n", path);
    return 1;
  }
  return fclose(f) != 0;
}
#endif

/* Prints the errors of got against want; 0 when within 1e-4 relative
 * (of each element, or of the output's scale with by_scale). */
static int compare(const float *got, const float *want, long n, int by_scale) {
  double scale = 0, max_abs = 0, max_rel = 0;
  for (long i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
  long bad = 0;
  for (long i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]), den = fmax(fabs((double)want[i]), 1e-2 * scale);
    if (!(e <= 1e-4 * den)) bad++;
    max_abs = fmax(max_abs, e);
    if (den > 0) max_rel = fmax(max_rel, e / den);
  }
  printf("max abs error %.3g, max rel error %.3g (max |ref| %.3g, %ld elements, %ld over 1e-4)%s\n",
         max_abs, max_rel, scale, n, bad, by_scale ? "; judged against the scale" : "");
  return by_scale ? !(max_abs <= 1e-4 * scale) : bad != 0;
}

static int compare_files(const char *got_path, const char *ref_path, int by_scale) {
  long n = numel(out_shape, RANK(out_shape));
  float *got = read_npy(got_path, n, out_shape, RANK(out_shape));
  float *want = got ? read_npy(ref_path, n, out_shape, RANK(out_shape)) : NULL;
  int rc = want ? compare(got, want, n, by_scale) : 1;
  free(got);
  free(want);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--compare") == 0) return compare_files(argv[2], argv[3], 0);
  if (argc == 4 && strcmp(argv[1], "--compare-scale") == 0) return compare_files(argv[2], argv[3], 1);
#ifdef MODEL_HEADER
  if (argc == 3 || argc == 4) {
    long nin = numel(in_shape, RANK(in_shape)), nout = numel(out_shape, RANK(out_shape));
    float *x = read_npy(argv[1], nin, in_shape, RANK(in_shape));
    float *y = malloc(sizeof(float) * (size_t)nout);
    if (!x || !y) return 1;
    if (MODEL_RUN(x, y) != 0) {
      fprintf(stderr, "run_model: the model failed\n");
      return 1;
    }
    int rc = write_npy(argv[2], y);
    free(x);
    free(y);
    return rc != 0 ? 1 : argc == 4 ? compare_files(argv[2], argv[3], 0) : 0;
  }
#endif
  fprintf(stderr, "usage: run_model IN.npy OUT.npy [REF.npy] | run_model --compare[-scale] GOT.npy REF.npy\n");
  return 2;
}
