// SPDX-License-Identifier: BSD-3-Clause
// Which transport moves device buffers (docs/architecture.md §8): NCCL, or MPI (CUDA-aware
// when the library says so at run time, otherwise staged through pinned host memory). The
// parts that need neither a GPU nor MPI live here so they are tested on any machine.
#pragma once

#include <string>
#include <vector>

namespace rfa::comm {

enum class TransportChoice { automatic, mpi, nccl };

/// "auto", "mpi", "nccl".
const char* transport_name(TransportChoice t);

/// The transport to use: RFA_TRANSPORT=nccl|mpi (case-sensitive) overrides `option` when set
/// and non-empty; `automatic` then means NCCL when this build has it, else MPI. Throws
/// RFA_ERROR_INVALID_ARGUMENT for another RFA_TRANSPORT value, and RFA_ERROR_UNSUPPORTED for
/// NCCL in a build without it.
TransportChoice resolve_transport(TransportChoice option, bool nccl_built);

/// Where one rank's GPU is: its host and the device's PCI bus id ("" if unknown).
struct GpuPlacement {
  std::string host;
  std::string pci_bus_id;
};

/// Two ranks on one GPU, or {-1, -1}.
struct SharedGpu {
  int first = -1, second = -1;
  bool found() const { return first >= 0; }
};

/// The first pair of ranks (by index in `ranks`) that sit on the same GPU of the same host.
SharedGpu find_shared_gpu(const std::vector<GpuPlacement>& ranks);

/// The error text for NCCL on a shared GPU: names both ranks, the GPU and host, and says to
/// use RFA_TRANSPORT=mpi.
std::string shared_gpu_message(const std::vector<GpuPlacement>& ranks, SharedGpu shared);

}  // namespace rfa::comm
