// SPDX-License-Identifier: BSD-3-Clause
#include "context_transport.hpp"

#include "comm/mpi/mpi_communicator.hpp"
#include "comm/transport.hpp"
#include "core/error.hpp"
#include "engine/engine_backends.hpp"
#include "rfa/rfa_config.h"
#include "collective/agree_on_failure.hpp"

#if RFA_ENGINE_CUDA
#include <cuda_runtime_api.h>

#include "comm/device_transport.hpp"
#endif

namespace rfa {
namespace capi {

double mpi_timeout(const rfa_options_t& options) {
  // options.timeout_s: 0 the environment or the default, < 0 none, > 0 itself (MpiOptions
  // spells "the environment" as negative and "none" as 0).
  if (options.timeout_s == 0.0) return -1.0;
  return options.timeout_s < 0.0 ? 0.0 : options.timeout_s;
}

std::unique_ptr<comm::Communicator> make_context_communicator(MPI_Comm comm, int ring_position,
                                                              const rfa_options_t& options) {
  if (options.device == RFA_DEVICE_HOST) return comm::make_mpi_communicator(comm, ring_position, mpi_timeout(options));
  // Only reached when the engine supports CUDA (validate_options refuses it otherwise).
  // resolve_transport reads RFA_TRANSPORT on each rank: first make sure they all see one value.
  collective::agreed_env(comm, Env::transport);
  comm::TransportChoice choice = comm::TransportChoice::automatic;
  collective::agree_on_failure(comm, [&] {
    const comm::TransportChoice option = options.transport == RFA_TRANSPORT_MPI    ? comm::TransportChoice::mpi
                                         : options.transport == RFA_TRANSPORT_NCCL ? comm::TransportChoice::nccl
                                                                                   : comm::TransportChoice::automatic;
    choice = comm::resolve_transport(option, RFA_HAVE_NCCL != 0);
  });
#if RFA_ENGINE_CUDA
  return comm::make_device_communicator(comm, ring_position, choice, mpi_timeout(options));
#else
  fail(RFA_ERROR_UNSUPPORTED, "this build of rfa cannot run on CUDA devices");
#endif
}

void require_kokkos_on_current_device(const rfa_options_t& options) {
  if (options.device != RFA_DEVICE_CUDA) return;
#if RFA_ENGINE_CUDA
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    fail(RFA_ERROR_CUDA, "options.device is RFA_DEVICE_CUDA but no CUDA device is usable on this rank");
  }
  const int kokkos_device = Kokkos::Cuda().cuda_device();
  if (kokkos_device != current) {
    fail(RFA_ERROR_INVALID_USAGE, "the current CUDA device is ", current, " but Kokkos was initialized on device ",
         kokkos_device,
         "; rfa's device buffers are Kokkos allocations, so make the device Kokkos uses current "
         "before rfa_context_create (or let rfa initialize Kokkos, which then uses the current device)");
  }
#endif
}

}  // namespace capi
}  // namespace rfa
