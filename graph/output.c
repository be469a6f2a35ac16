/* The files of a compiled module, as mlc-compile -o/--header writes them
 * and mlc_model_export too: the object (a cuda target's host object with
 * its launchers) and the C header (the kernels' declarations, the note of
 * library calls, a model's entry). */
#include "graph/graph_impl.h"
#include "targets/targets.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *library_link =
    "link with libmlcrt.a -ldl -lpthread and -lopenblas (or have libopenblas.so.0 installed: "
    "libmlcrt opens it at the first call)";

const char *mlc_graph_library_calls(const mlc_gcompiled *k, mlc_str *names) {
  const char *lib = NULL;
  for (int i = 0; i < k->n_scheduled; i++)
    if (k->info[i].library[0]) {
      mlc_str_printf(names, "%s%s", names->len ? ", " : "", k->symbols[i]);
      lib = k->info[i].library;
    }
  return lib;
}

const char *mlc_graph_library_link(void) { return library_link; }

bool mlc_graph_write_object(const char *path, const mlc_target *t, const mlc_gcompiled *k,
                            mlc_error *err) {
  if (mlc_target_device(t) != MLC_DEVICE_CUDA) return mlc_object_write(k->obj, path, err);
  mlc_target host;
  mlc_target_host(&host);
  mlc_object obj;
  if (!mlc_cuda_host_object(&host, k->obj, k->n, k->sched, k->symbols, &obj, err)) return false;
  bool ok = mlc_object_write(&obj, path, err);
  mlc_object_free(&obj);
  return ok;
}

/* The note under the header's first line (what generated it). */
static void insert_library_note(mlc_str *h, const mlc_gcompiled *k) {
  mlc_str names = {0}, all = {0};
  const char *lib = mlc_graph_library_calls(k, &names);
  const char *nl = lib && h->data ? strchr(h->data, '\n') : NULL;
  if (nl) {
    mlc_str_printf(&all, "%.*s/* Library calls: %s call %s (cblas_sgemm) through libmlcrt's "
                         "mlc_rt_sgemm;\n * %s. OpenBLAS runs on MLC_NUM_THREADS threads "
                         "(default: the CPUs available); OpenBLAS 0.3.21 takes\n * Sapphire "
                         "Rapids for a Prescott: set OPENBLAS_CORETYPE=SkylakeX there. */\n%s",
                   (int)(nl + 1 - h->data), h->data, mlc_str_cstr(&names), lib, library_link, nl + 1);
    mlc_str_free(h);
    *h = all;
  }
  mlc_str_free(&names);
}

bool mlc_graph_write_header(mlc_str *h, const mlc_target *t, const mlc_gcompiled *k,
                            const mlc_gmodule *m, mlc_error *err) {
  bool gpu = mlc_target_device(t) == MLC_DEVICE_CUDA;
  /* a guard of its own, so that a program can include several (one kernel each) */
  char guard[160];
  snprintf(guard, sizeof guard, "MLC_%s_CUDA_H", k->symbols[0]);
  for (char *c = guard; *c; c++) *c = (char)toupper((unsigned char)*c);
  bool ok = gpu ? mlc_cuda_write_header(h, k->n, k->sched, k->symbols, guard, err)
                : mlc_target_write_header(h, k->n, k->sched, k->symbols, NULL, err);
  if (ok && m) {
    mlc_str_putc(h, '\n');
    mlc_graph_write_entry(h, m);
  }
  if (ok) insert_library_note(h, k);
  return ok;
}
