// SPDX-License-Identifier: BSD-3-Clause
// The buffers a device engine keeps between calls (engine/workspace.hpp, WorkspaceCache), here
// in host memory: released or destroyed, they are freed while every transport writing into them
// completed its transfers, and set aside for good, never freed, once one of them abandoned
// transfers (a timeout over a CUDA-aware MPI receives into them: a late rank's data may still
// land there).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <memory>

#include "allocation_log.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "engine/workspace.hpp"

namespace rfa::engine {
namespace {

/// A transport that only says whether it abandoned transfers; nothing may move through it.
class TransfersState final : public comm::Communicator {
 public:
  explicit TransfersState(bool abandoned) : abandoned_(abandoned) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend_name() const override { return "transfers-state"; }
  bool accepts(comm::MemoryKind) const override { return true; }
  comm::Exchange start_shift_exchange(const void*, void*, std::size_t, int) override { unused(); }
  void allgather(const void*, void*, std::size_t) override { unused(); }
  void alltoall(const void*, void*, std::size_t) override { unused(); }
  void allreduce_inplace(std::int64_t*, std::size_t, comm::ReduceOp) override { unused(); }
  void broadcast(void*, std::size_t, int) override { unused(); }
  void barrier() override { unused(); }
  bool has_abandoned_transfers() const override { return abandoned_; }

 private:
  [[noreturn]] static void unused() { fail(RFA_ERROR_INTERNAL, "TransfersState moves nothing"); }
  bool abandoned_;
};

/// Bytes still allocated after a cache watching `transports` took two buffers, was released,
/// took a third, and was destroyed.
std::int64_t left_allocated(std::initializer_list<const comm::Communicator*> transports) {
  return test::log_allocations([&] {
           WorkspaceCache<Kokkos::HostSpace> cache;
           for (const comm::Communicator* t : transports) cache.watch(t);
           cache.bytes("rfa::k_recv0", 4096);
           cache.bytes("rfa::v_recv0", 2048);
           cache.release();
           cache.bytes("rfa::k_recv1", 1024);
         })
      .live;
}

TEST(WorkspaceCache, FreesItsBuffersWhileTheTransfersCompleted) {
  const TransfersState done(false), also_done(false);
  EXPECT_EQ(left_allocated({}), 0);
  EXPECT_EQ(left_allocated({&done, &also_done}), 0);
}

TEST(WorkspaceCache, SetsItsBuffersAsideOnceATransportAbandonedTransfers) {
  const TransfersState done(false), abandoned(true);
  EXPECT_EQ(left_allocated({&done, &abandoned}), 4096 + 2048 + 1024)
      << "buffers a late rank may still write were freed";
}

}  // namespace
}  // namespace rfa::engine
