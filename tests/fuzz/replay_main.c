/* A main() for the libFuzzer harnesses of tests/fuzz/ without libFuzzer:
 * each argument is a file or a folder of files, and each file is passed
 * once to LLVMFuzzerTestOneInput. `make` links every harness with it
 * (gcc, $(B)/fuzz/<name>), so tests/cli/fuzz_corpus.sh replays the
 * committed corpus in the normal and the sanitizer build without clang;
 * `make fuzz` builds the real fuzzers with clang. A broken property traps
 * and a memory error stops the run under ASan, as under libFuzzer. */
#define FUZZ_REPLAY_MAIN
#include "fuzz.h"

#include <dirent.h>
#include <sys/stat.h>

static int replay_file(const char *path) {
  size_t n;
  mlc_error err;
  char *bytes = mlc_read_file(path, &n, &err);
  if (!bytes) {
    fprintf(stderr, "replay: %s\n", err.msg);
    return 1;
  }
  LLVMFuzzerTestOneInput((const uint8_t *)bytes, n);
  mlc_free(bytes);
  return 0;
}

/* Files of a folder in name order, so a failing run is repeatable. */
static int name_order(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open %s\n", dir);
    return 1;
  }
  MLC_VEC(char *) names = {0};
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    mlc_str p = {0};
    mlc_str_printf(&p, "%s/%s", dir, e->d_name);
    MLC_VEC_PUSH(names, mlc_str_take(&p));
  }
  closedir(d);
  qsort(names.data, names.len, sizeof *names.data, name_order);
  int rc = 0;
  for (int i = 0; i < names.len; i++) {
    struct stat st;
    if (stat(names.data[i], &st) == 0 && S_ISREG(st.st_mode)) {
      rc |= replay_file(names.data[i]);
      ++*count;
    }
    mlc_free(names.data[i]);
  }
  MLC_VEC_FREE(names);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  LLVMFuzzerInitialize(&argc, &argv);
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) rc |= replay_dir(argv[i], &count);
    else rc |= replay_file(argv[i]), count++;
  }
  printf("replayed %d inputs\n", count);
  return rc;
}
