/* The AMX permission (mlcrt.h: mlc_rt_amx_enable). */
#include "targets/runtime/mlcrt.h"

#include <sys/syscall.h>
#include <unistd.h>

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

/* 0 unknown, 1 granted, -1 refused; racing first calls both ask, which
 * Linux answers the same way. */
static int amx_state;

int32_t mlc_rt_amx_enable(void) {
  int st = __atomic_load_n(&amx_state, __ATOMIC_ACQUIRE);
  if (st == 0) {
    st = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 ? 1 : -1;
    __atomic_store_n(&amx_state, st, __ATOMIC_RELEASE);
  }
  return st == 1 ? 0 : -1;
}
