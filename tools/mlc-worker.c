/* mlc-worker: the measurement worker processes (measure/measure.h, docs/PROTOCOL.md).
 *
 *   mlc-worker build    compile candidates: frames on stdin, replies on stdout
 *   mlc-worker run      load, check and time compiled candidates
 *
 * Started by the tuner's measurement pool; not meant to be run by hand.
 */
#include "measure/measure.h"

#include <stdio.h>
#include <string.h>

static const char *usage_text =
    "usage: mlc-worker build|run [--intrin FILE.py]... [--ref-cache DIR]\n"
    "\n"
    "A measurement worker started by mlc-tune: it reads length-prefixed request\n"
    "frames on stdin and writes one reply frame per request on stdout (layout in\n"
    "docs/PROTOCOL.md) until end of input.\n"
    "\n"
    "  build   replay a trace on a workload, lower and compile it: object bytes\n"
    "  run     load an object, check its result against the reference, time it\n"
    "  --intrin FILE.py  register the tensor intrinsics (NAME_desc/NAME_impl pairs) of\n"
    "          FILE.py first: the pool passes mlc-tune's --intrin files on\n"
    "  --ref-cache DIR   (run) read reference outputs from DIR and keep the ones\n"
    "          computed there (mlc-tune --ref-cache)\n"
    "\n"
    "Exit status: 0 at end of input, 1 on a broken stream, 2 bad usage.\n";

#ifdef __SANITIZE_ADDRESS__
/* Under AddressSanitizer a kernel's absurd allocation must fail as it does
 * in production (NULL, the kernel returns -1), not abort the worker. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

int main(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (argc < 2 || argc % 2 != 0 || (strcmp(argv[1], "build") != 0 && strcmp(argv[1], "run") != 0)) {
    fprintf(stderr, "mlc-worker: error: expected 'build' or 'run' [--intrin FILE]... [--ref-cache DIR]\nTry 'mlc-worker --help'.\n");
    return 2;
  }
  const char *files[MLC_MEASURE_MAX_INTRIN_FILES];
  mlc_measure_worker_opts o = {0, files, NULL};
  for (int i = 2; i < argc; i += 2) {
    if (strcmp(argv[i], "--ref-cache") == 0) {
      o.ref_cache_dir = argv[i + 1];
      continue;
    }
    if (strcmp(argv[i], "--intrin") != 0 || o.n_intrin_files == MLC_MEASURE_MAX_INTRIN_FILES) {
      fprintf(stderr, "mlc-worker: error: expected --intrin FILE (at most %d) or --ref-cache DIR, not '%s'\n",
              MLC_MEASURE_MAX_INTRIN_FILES, argv[i]);
      return 2;
    }
    files[o.n_intrin_files++] = argv[i + 1];
  }
  mlc_error err;
  err.msg[0] = 0;
  int rc = mlc_measure_worker_serve(argv[1], &o, &err);
  if (rc == 1 && err.msg[0]) fprintf(stderr, "mlc-worker: error: %s\n", err.msg);
  return rc;
}
