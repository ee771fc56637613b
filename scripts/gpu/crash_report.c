// SPDX-License-Identifier: BSD-3-Clause
// A crash report for programs run on a lent GPU machine, where there is no gdb and the bundle's
// programs are stripped: preloaded (LD_PRELOAD), it catches SIGSEGV, SIGBUS, SIGILL and SIGFPE
// and prints, to stderr, the faulting instruction and address, then every word on the top of
// the crashing thread's stack that is a return address into a loaded object (the byte before it
// ends a call instruction), each as object+offset, innermost first. The offsets resolve on the
// build machine against the unstripped build, whose layout the stripped copies keep:
//   addr2line -f -C -i -e .device-cache/rfa-build/capi/librfa.so.0.1.0 0xOFFSET
// A call through a null pointer (pc 0) has its caller's return address on top of the stack, so
// it is reported first. The scan is a heuristic (a stale return address left on the stack shows
// up too); the innermost frames are the ones to trust. scripts/gpu/device_check.sh's backtrace
// phase runs commands with it (Open MPI's own handler, which prints only the frames it can
// unwind, switched off). Built by scripts/gpu/build_bundle.sh into the bundle's lib/.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

// One line, written at once (the ranks of a job share stderr) and tagged with the process.
static void say(const char* line) {
  char text[1024];
  const int n = snprintf(text, sizeof text, "rfa crash report [pid %d]: %s\n", (int)getpid(), line);
  if (n > 0) (void)!write(2, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

static void describe(const char* what, uintptr_t address) {
  char line[768];
  Dl_info info;
  if (address != 0 && dladdr((void*)address, &info) && info.dli_fname) {
    int n = snprintf(line, sizeof line, "%s %s+0x%lx", what, info.dli_fname,
                     (unsigned long)(address - (uintptr_t)info.dli_fbase));
    if (info.dli_sname && n > 0 && (size_t)n < sizeof line)
      snprintf(line + n, sizeof line - (size_t)n, " (%s+0x%lx)", info.dli_sname,
               (unsigned long)(address - (uintptr_t)info.dli_saddr));
  } else {
    snprintf(line, sizeof line, "%s 0x%lx (in no loaded object)", what, (unsigned long)address);
  }
  say(line);
}

// Whether `w` follows a call instruction in a loaded object: e8 rel32 (5 bytes), or ff /2
// (2 to 7 bytes: register, memory, displacement, SIB).
static int is_return_address(uintptr_t w) {
  Dl_info info;
  if (w < 4096 || !dladdr((void*)w, &info) || !info.dli_fname) return 0;
  if (w - (uintptr_t)info.dli_fbase < 8) return 0;
  const unsigned char* p = (const unsigned char*)w;
  if (p[-5] == 0xe8) return 1;
  for (int n = 2; n <= 7; ++n)
    if (p[-n] == 0xff && ((p[-n + 1] >> 3) & 7) == 2) return 1;
  return 0;
}

static void on_crash(int sig, siginfo_t* si, void* context) {
  const ucontext_t* uc = (const ucontext_t*)context;
  const uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  const uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  char line[256];
  snprintf(line, sizeof line, "signal %d (%s), fault address 0x%lx", sig, strsignal(sig),
           (unsigned long)(uintptr_t)si->si_addr);
  say(line);
  describe("pc", pc);
  // The stack's upper end: the thread's stack as the C library knows it, else 64 KiB.
  uintptr_t top = sp + 65536;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* base = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &base, &size) == 0 && sp >= (uintptr_t)base && sp < (uintptr_t)base + size)
      top = (uintptr_t)base + size;
    pthread_attr_destroy(&attr);
  }
  int frames = 0;
  for (uintptr_t at = sp; at + sizeof(uintptr_t) <= top && at < sp + 64 * 1024 && frames < 40;
       at += sizeof(uintptr_t)) {
    const uintptr_t w = *(const uintptr_t*)at;
    if (!is_return_address(w)) continue;
    char what[64];
    snprintf(what, sizeof what, "stack[sp+0x%lx] returns to", (unsigned long)(at - sp));
    describe(what, w);
    ++frames;
  }
  snprintf(line, sizeof line, "end (%d return addresses)", frames);
  say(line);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  static char alternate[65536];
  stack_t ss;
  ss.ss_sp = alternate;
  ss.ss_size = sizeof alternate;
  ss.ss_flags = 0;
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
  for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; ++i) sigaction(signals[i], &sa, NULL);
}
