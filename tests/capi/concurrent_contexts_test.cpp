// SPDX-License-Identifier: BSD-3-Clause
// Two contexts used at once from two threads of every rank, as rfa.h allows (each over its own
// communicator, MPI_THREAD_MULTIPLE): forward and backward on each, twenty times, from the
// process's first kernels on, give bitwise the results of the same calls made one at a time
// (deterministic backward: the same bits from run to run with any number of host threads).
// The contexts' head dims differ (64 and 128), so their kernels' scratch differs in size: with
// Kokkos before 4.0, whose host backend kept one scratch buffer for every dispatch, the two
// threads overwrote each other's scratch (wrong outputs) and reallocated it under each other
// (a crash), which kernels/host_dispatch_lock.hpp prevents. Exit 77 (skipped) where MPI does not
// provide MPI_THREAD_MULTIPLE; "PASS" on rank 0 otherwise, "FAIL: ..." on any rank that differs.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rfa/rfa_mpi.h"

namespace {

constexpr int kIterations = 20;
constexpr std::int64_t kSeq = 512, kHeads = 2;

struct Outputs {
  std::vector<float> out, lse, dq, dk, dv;
  bool operator==(const Outputs& o) const {
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    return same(out, o.out) && same(lse, o.lse) && same(dq, o.dq) && same(dk, o.dk) && same(dv, o.dv);
  }
};

/// One context over its own communicator, its inputs (the same on every call) and a pass.
class Problem {
 public:
  Problem(MPI_Comm comm, std::int64_t head_dim) : head_dim_(head_dim) {
    rfa_options_t o;
    rfa_options_init(&o);
    o.dtype = RFA_DTYPE_FLOAT32;
    o.seq_total = kSeq;
    o.heads = kHeads;
    o.head_dim = head_dim;
    o.mask = RFA_MASK_CAUSAL;
    o.timeout_s = 60.0;
    o.deterministic = 1;  // bitwise the same from run to run with host threads too
    ok_ = rfa_context_create(comm, &o, &ctx_) == RFA_SUCCESS;
    if (!ok_) {
      std::fprintf(stderr, "FAIL: rfa_context_create (head_dim %lld): %s\n", (long long)head_dim,
                   rfa_get_last_error_message());
      return;
    }
    rfa_context_get_local_seq(ctx_, &local_);
    const std::size_t n = std::size_t(local_ * kHeads * head_dim);
    std::size_t which = 0;
    for (std::vector<float>* x : {&q_, &k_, &v_, &dout_}) {  // values in [-1, 1), each tensor its own
      x->resize(n);
      ++which;
      for (std::size_t i = 0; i < n; ++i) (*x)[i] = float((i * 2654435761u + which * 7919u) % 1000) / 500.f - 1.f;
    }
  }
  ~Problem() {
    if (ctx_ != nullptr) rfa_context_destroy(ctx_);
  }
  bool ok() const { return ok_; }

  /// One forward and one backward; false (with a message) if either fails.
  bool run(Outputs& r) {
    const std::size_t n = q_.size(), rows = std::size_t(local_ * kHeads);
    r.out.assign(n, 0.f);
    r.lse.assign(rows, 0.f);
    r.dq.assign(n, 0.f);
    r.dk.assign(n, 0.f);
    r.dv.assign(n, 0.f);
    if (rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), r.out.data(), r.lse.data()) != RFA_SUCCESS ||
        rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), r.out.data(), dout_.data(), r.lse.data(), r.dq.data(),
                     r.dk.data(), r.dv.data()) != RFA_SUCCESS) {
      std::fprintf(stderr, "FAIL: a call (head_dim %lld) failed: %s\n", (long long)head_dim_,
                   rfa_get_last_error_message());
      return false;
    }
    return true;
  }

 private:
  std::int64_t head_dim_;
  rfa_context_t ctx_ = nullptr;
  bool ok_ = false;
  std::int64_t local_ = 0;
  std::vector<float> q_, k_, v_, dout_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("skipped: MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
    MPI_Finalize();
    return 77;
  }
  int failed = 0;
  {
    MPI_Comm comms[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    {  // the contexts go before their communicators
      Problem problems[2] = {Problem(comms[0], 64), Problem(comms[1], 128)};
      if (!problems[0].ok() || !problems[1].ok()) failed = 1;
      std::vector<Outputs> concurrent[2];
      bool ran[2] = {false, false};
      if (!failed) {
        // The first kernels of the process run in the two threads at once.
        std::thread threads[2];
        for (int t = 0; t < 2; ++t)
          threads[t] = std::thread([&, t] {
            concurrent[t].resize(kIterations);
            ran[t] = true;
            for (Outputs& r : concurrent[t]) ran[t] = ran[t] && problems[t].run(r);
          });
        for (std::thread& t : threads) t.join();
        for (int t = 0; t < 2; ++t) failed |= ran[t] ? 0 : 1;
      }
      if (!failed) {
        for (int t = 0; t < 2; ++t) {
          Outputs alone;
          if (!problems[t].run(alone)) {
            failed = 1;
            continue;
          }
          int differing = 0;
          for (const Outputs& r : concurrent[t]) differing += r == alone ? 0 : 1;
          if (differing > 0) {
            std::fprintf(
                stderr,
                "FAIL: rank %d, context %d (head_dim %d): %d of %d concurrent passes differ from the same pass alone\n",
                rank, t, t == 0 ? 64 : 128, differing, kIterations);
            failed = 1;
          }
        }
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (MPI_Comm& c : comms) MPI_Comm_free(&c);
  }
  rfa_finalize();
  if (rank == 0) std::printf(failed ? "FAIL\n" : "PASS\n");
  MPI_Finalize();
  return failed;
}
