// SPDX-License-Identifier: BSD-3-Clause
// What MPI's thread level allows rfa's calls that use MPI, under mpiexec -n 2, built once per
// level (RFA_TEST_THREAD_LEVEL): below MPI_THREAD_SERIALIZED (MPI_Init's MPI_THREAD_SINGLE,
// MPI_THREAD_FUNNELED) a creation, a forward and a destroy from a thread other than MPI's main
// one are refused with RFA_ERROR_INVALID_USAGE before any MPI call, and the context refused a
// call stays usable; at MPI_THREAD_SERIALIZED those calls work from another thread, one at a
// time, and a call while another thread is inside rfa_forward is refused, leaving both contexts
// usable. Prints "PASS" on rank 0, "FAIL: ..." on a rank that sees otherwise; exits 77 (skipped)
// where MPI provides another level than the one asked for.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "rfa/rfa_mpi.h"

namespace {

int rank = 0;
int failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAIL: rank %d: %s\n", rank, what.c_str());
  ++failures;
}

/// Whether `rc` is `want` and the calling thread's message holds every fragment.
void expect_result(rfa_result_t rc, rfa_result_t want, const char* call, std::vector<const char*> fragments = {}) {
  const std::string message = rfa_get_last_error_message();
  expect(rc == want, std::string(call) + " returned " + std::to_string(int(rc)) + ", not " + std::to_string(int(want)) +
                         ": " + message);
  for (const char* f : fragments)
    expect(message.find(f) != std::string::npos, std::string(call) + "'s message lacks \"" + f + "\": " + message);
}

/// Runs `work` on a thread of its own and waits for it.
template <class Work>
void on_another_thread(Work&& work) {
  std::thread t(std::forward<Work>(work));
  t.join();
}

rfa_options_t options(double timeout_s) {
  rfa_options_t o;
  rfa_options_init(&o);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  o.dtype = RFA_DTYPE_FLOAT32;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.layout = RFA_LAYOUT_CONTIGUOUS;
  o.seq_total = 8 * size;
  o.heads = 1;
  o.kv_heads = 1;
  o.head_dim = 8;
  o.timeout_s = timeout_s;
  return o;
}

/// One rank's tensors: every key alike, so that each output row is v's row (0.5).
struct Tensors {
  std::vector<float> q = std::vector<float>(64, 0.25f), k = std::vector<float>(64, 0.5f),
                     v = std::vector<float>(64, 0.5f), out = std::vector<float>(64, 0.0f),
                     lse = std::vector<float>(8, 0.0f);
  rfa_result_t forward(rfa_context_t ctx) {
    out.assign(out.size(), 0.0f);
    return rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data());
  }
  bool exact() const {
    for (float x : out)
      if (!(std::fabs(x - 0.5f) <= 1e-6f)) return false;  // NaN too
    return true;
  }
};

const char* level_name(int level) {
  return level == MPI_THREAD_SINGLE     ? "MPI_THREAD_SINGLE"
         : level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                        : "MPI_THREAD_SERIALIZED";
}

/// Below MPI_THREAD_SERIALIZED: only MPI's main thread may call.
void main_thread_only(int level) {
  const rfa_options_t o = options(30.0);
  rfa_context_t ctx = nullptr;
  on_another_thread([&] {
    expect_result(rfa_context_create(MPI_COMM_WORLD, &o, &ctx), RFA_ERROR_INVALID_USAGE, "rfa_context_create",
                  {"rfa_context_create uses MPI", "not the thread that initialized MPI", level_name(level)});
  });
  expect(ctx == nullptr, "a refused creation handed out a context");
  expect_result(rfa_context_create(MPI_COMM_WORLD, &o, &ctx), RFA_SUCCESS, "rfa_context_create (main thread)");
  Tensors t;
  on_another_thread([&] {
    expect_result(t.forward(ctx), RFA_ERROR_INVALID_USAGE, "rfa_forward", {"rfa_forward uses MPI", level_name(level)});
    expect_result(rfa_context_destroy(ctx), RFA_ERROR_INVALID_USAGE, "rfa_context_destroy",
                  {"rfa_context_destroy uses MPI"});
  });
  // Refused before anything moved: the context still runs, and its handle still destroys.
  expect_result(t.forward(ctx), RFA_SUCCESS, "rfa_forward (main thread, after the refusals)");
  expect(t.exact(), "the forward after the refusals is not exact");
  expect_result(rfa_context_destroy(ctx), RFA_SUCCESS, "rfa_context_destroy (main thread)");
}

/// At MPI_THREAD_SERIALIZED: any thread, one at a time.
void one_thread_at_a_time() {
  const rfa_options_t o = options(30.0);
  // Rank 0's first thread waits inside a forward for the last rank, which comes 3 s late; its
  // second thread, once it sees the first inside, calls too and is refused.
  // A destroyed context's handle stays invalid: the probe below destroys it again.
  rfa_context_t gone = nullptr, first = nullptr, second = nullptr;
  expect_result(rfa_context_create(MPI_COMM_WORLD, &o, &gone), RFA_SUCCESS, "rfa_context_create (gone)");
  expect_result(rfa_context_destroy(gone), RFA_SUCCESS, "rfa_context_destroy (gone)");
  expect_result(rfa_context_create(MPI_COMM_WORLD, &o, &first), RFA_SUCCESS, "rfa_context_create (first)");
  expect_result(rfa_context_create(MPI_COMM_WORLD, &o, &second), RFA_SUCCESS, "rfa_context_create (second)");
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Tensors a, b;
  if (rank == 0) {
    rfa_result_t waited = RFA_ERROR_INTERNAL;
    std::thread inside([&] {
      // The other thread's probe below may hold the turn for a moment: refused then, nothing
      // sent, and tried again.
      do {
        waited = a.forward(first);
      } while (waited == RFA_ERROR_INVALID_USAGE &&
               std::string(rfa_get_last_error_message()).find("another thread") != std::string::npos);
    });
    on_another_thread([&] {
      // Until the first thread is inside its forward: destroying a destroyed handle is refused
      // by the turn while another thread holds it, and otherwise finds no context (nothing sent
      // either way).
      bool seen = false;
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
      while (!seen && std::chrono::steady_clock::now() < until) {
        const rfa_result_t rc = rfa_context_destroy(gone);
        seen = rc == RFA_ERROR_INVALID_USAGE &&
               std::string(rfa_get_last_error_message()).find("inside rfa_forward") != std::string::npos;
        if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      expect(seen, "the first thread was never seen inside its forward");
      if (seen) {
        expect_result(b.forward(second), RFA_ERROR_INVALID_USAGE, "rfa_forward (while another thread is inside one)",
                      {"another thread of this process is inside rfa_forward", "MPI_THREAD_SERIALIZED"});
      }
    });
    inside.join();
    expect_result(waited, RFA_SUCCESS, "rfa_forward (the thread inside)");
  } else {
    if (rank == size - 1) std::this_thread::sleep_for(std::chrono::seconds(3));
    expect_result(a.forward(first), RFA_SUCCESS, "rfa_forward (first)");
  }
  expect(a.exact(), "the first context's forward is not exact");
  // The refused call sent nothing: the second context runs on every rank.
  expect_result(b.forward(second), RFA_SUCCESS, "rfa_forward (second, after the refusal)");
  expect(b.exact(), "the second context's forward is not exact");
  expect_result(rfa_context_destroy(second), RFA_SUCCESS, "rfa_context_destroy (second)");
  expect_result(rfa_context_destroy(first), RFA_SUCCESS, "rfa_context_destroy (first)");

  // Contexts made, run and destroyed on another thread (Kokkos already initialized on this one).
  on_another_thread([&] {
    rfa_context_t ctx = nullptr;
    Tensors t;
    expect_result(rfa_context_create(MPI_COMM_WORLD, &o, &ctx), RFA_SUCCESS, "rfa_context_create (other thread)");
    expect_result(t.forward(ctx), RFA_SUCCESS, "rfa_forward (other thread)");
    expect(t.exact(), "the forward on another thread is not exact");
    expect_result(rfa_context_destroy(ctx), RFA_SUCCESS, "rfa_context_destroy (other thread)");
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int asked = RFA_TEST_THREAD_LEVEL;
  int provided = -1;
  if (asked == MPI_THREAD_SINGLE) {
    MPI_Init(&argc, &argv);
    MPI_Query_thread(&provided);
  } else {
    MPI_Init_thread(&argc, &argv, asked, &provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided != asked) {
    if (rank == 0) std::printf("skipped: asked MPI for thread level %d, it provides %d\n", asked, provided);
    MPI_Finalize();
    return 77;
  }
  if (asked == MPI_THREAD_SERIALIZED) {
    one_thread_at_a_time();
  } else {
    main_thread_only(asked);
  }
  int any = failures;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any == 0) std::printf("PASS (%s)\n", level_name(asked));
  rfa_finalize();
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}
