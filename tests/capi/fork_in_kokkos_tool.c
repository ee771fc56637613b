/* SPDX-License-Identifier: BSD-3-Clause */
/* A Kokkos Tools library (loaded through KOKKOS_PROFILE_LIBRARY / KOKKOS_TOOLS_LIBS) that forks
 * from inside Kokkos::initialize and Kokkos::finalize, as a profiler or a site's hook may: the
 * child calls rfa_finalize (which takes rfa's Kokkos lifetime mutex; in a fork it does nothing)
 * and ends; the tool waits for it up to 20 s. rfa must hold none of its mutexes while Kokkos
 * runs such code (the fork handlers take them: a mutex held by the forking thread itself left
 * it waiting on itself for good). Each fork's verdict is one line on stdout:
 * "fork_in_kokkos_tool: <when>: PASS" or "... FAIL (...)" (capi_fork_in_kokkos_test). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*finalize_fn)(void);

static void fork_and_check(const char* when) {
  finalize_fn rfa_finalize_in_child;
  pid_t child;
  int status = 0, waited_ms = 0;
  fflush(stdout);
  child = fork();
  if (child < 0) {
    printf("fork_in_kokkos_tool: %s: FAIL (fork failed)\n", when);
    return;
  }
  if (child == 0) {
    /* The program's librfa, found in the process: the child's rfa_finalize must return 0. */
    *(void**)(&rfa_finalize_in_child) = dlsym(RTLD_DEFAULT, "rfa_finalize");
    _exit(rfa_finalize_in_child != NULL && rfa_finalize_in_child() == 0 ? 0 : 3);
  }
  for (;;) {
    const struct timespec pause = {0, 1000000};
    if (waitpid(child, &status, WNOHANG) == child) break;
    if (++waited_ms > 20000) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      printf("fork_in_kokkos_tool: %s: FAIL (the child's rfa_finalize did not return in 20 s)\n", when);
      fflush(stdout);
      return;
    }
    nanosleep(&pause, NULL);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    printf("fork_in_kokkos_tool: %s: PASS\n", when);
  } else {
    printf("fork_in_kokkos_tool: %s: FAIL (the child ended with status %d)\n", when, status);
  }
  fflush(stdout);
}

/* Exported whatever the build's default visibility: Kokkos finds them with dlsym. */
#define TOOL_CALLBACK __attribute__((visibility("default")))

TOOL_CALLBACK void kokkosp_init_library(const int load_sequence, const uint64_t interface_version,
                                        const uint32_t device_info_count, void* device_info) {
  (void)load_sequence, (void)interface_version, (void)device_info_count, (void)device_info;
  fork_and_check("Kokkos::initialize");
}

TOOL_CALLBACK void kokkosp_finalize_library(void) { fork_and_check("Kokkos::finalize"); }
