// SPDX-License-Identifier: BSD-3-Clause
#include "comm/device_transport.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collective/agree_on_failure.hpp"
#include "collective/bounded_collectives.hpp"
#include "comm/mpi/cuda_aware_mpi.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/stream_ordered_communicator.hpp"
#include "comm/staged/cuda_staging_device.hpp"
#include "comm/staged/staged_communicator.hpp"
#include "core/error.hpp"
#include "device/current_device.hpp"
#include "rfa/rfa_config.h"

#if RFA_HAVE_NCCL
#include "comm/nccl/nccl_communicator.hpp"
#endif

namespace rfa::comm {
namespace {

/// Every rank's host and GPU, over `comm` (fixed-size records, one MPI_Allgather).
std::vector<GpuPlacement> gather_placements(MPI_Comm comm) {
  constexpr int kHost = MPI_MAX_PROCESSOR_NAME, kBus = 32, kRecord = kHost + kBus;
  std::vector<char> mine(kRecord, '\0');
  int len = 0;
  MPI_Get_processor_name(mine.data(), &len);
  // No usable device here leaves it empty: the transport's own creation reports it everywhere.
  const std::string bus = device::current_device_pci_bus_id_or_empty();
  std::strncpy(mine.data() + kHost, bus.c_str(), kBus - 1);
  int ranks = 0;
  MPI_Comm_size(comm, &ranks);
  std::vector<char> all(std::size_t(kRecord) * std::size_t(ranks));
  collective::allgather_within(comm, mine.data(), all.data(), kRecord, MPI_CHAR,
                               "rfa: the ranks' hosts and GPUs (MPI_Iallgather)");
  std::vector<GpuPlacement> out(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const char* rec = all.data() + std::size_t(r) * kRecord;
    out[std::size_t(r)].host.assign(rec, strnlen(rec, kHost));
    out[std::size_t(r)].pci_bus_id.assign(rec + kHost, strnlen(rec + kHost, kBus));
  }
  return out;
}

std::unique_ptr<Communicator> make_mpi_device_communicator(MPI_Comm parent, int ring_position, double timeout_s) {
  std::unique_ptr<Communicator> mpi = make_mpi_communicator(parent, ring_position, timeout_s);
  // CUDA-aware only where every rank's MPI is: MPIX_Query_cuda_support and RFA_MPI_CUDA_AWARE
  // answer per process, and ranks that chose differently would run different collectives.
  std::int64_t aware = mpi_is_cuda_aware() ? 1 : 0;
  collective::allreduce_within(parent, &aware, 1, MPI_INT64_T, MPI_MIN,
                               "rfa: whether every rank's MPI is CUDA-aware (MPI_Iallreduce)");
  if (aware == 1) return make_stream_ordered_communicator(std::move(mpi), timeout_s);
  std::unique_ptr<StagingDevice> staging;
  collective::agree_on_failure(parent, [&] { staging = make_cuda_staging_device(); });
  return std::make_unique<StagedCommunicator>(std::move(mpi), std::move(staging), timeout_s);
}

}  // namespace

std::unique_ptr<Communicator> make_device_communicator(MPI_Comm parent, int ring_position, TransportChoice choice,
                                                       double timeout_s) {
  if (choice == TransportChoice::mpi) return make_mpi_device_communicator(parent, ring_position, timeout_s);
#if RFA_HAVE_NCCL
  const std::vector<GpuPlacement> placements = gather_placements(parent);
  const SharedGpu shared = find_shared_gpu(placements);
  // Every rank gathered the same placements, so every rank fails here together.
  if (shared.found()) fail(RFA_ERROR_UNSUPPORTED, shared_gpu_message(placements, shared));
  NcclOptions options;
  options.timeout_seconds = timeout_s;
  return make_nccl_communicator(parent, ring_position, options);
#else
  fail(RFA_ERROR_UNSUPPORTED, "this build of rfa has no NCCL transport; use RFA_TRANSPORT=mpi");
#endif
}

}  // namespace rfa::comm
