// SPDX-License-Identifier: BSD-3-Clause
// The CUDA device rfa works on: always the caller's current device (docs/architecture.md §5). rfa never
// picks a device behind the application's back; select_device.hpp offers an explicit helper.
#pragma once

#include <string>

namespace rfa::device {

/// The number of CUDA devices this process sees. Throws RFA_ERROR_CUDA with a message that
/// says there is no usable device when the runtime finds none (no GPU, no driver, or
/// CUDA_VISIBLE_DEVICES hides them all); never returns 0.
int require_device_count();

/// The caller's current device after checking that one is usable (see require_device_count).
int require_current_device();

/// The PCI bus id of the current device, as cudaDeviceGetPCIBusId writes it
/// ("0000:3B:00.0"): the GPU part of the topology key (src/topology normalizes it).
/// Throws RFA_ERROR_CUDA when no device is usable.
std::string current_device_pci_bus_id();

/// The same, or "" where no device is usable: for a rank about to enter a collective with it,
/// where a throw on that rank alone would leave the others waiting (the caller's own device
/// check reports the missing device on every rank).
std::string current_device_pci_bus_id_or_empty();

/// Whether `pointer` is memory the current device can read and write directly (device or
/// managed memory). False for pageable or pinned host memory and for null.
bool is_device_memory(const void* pointer);

/// Where a pointer's memory is, as cudaPointerGetAttributes reports it.
struct PointerPlace {
  enum class Kind { host, device, managed } kind = Kind::host;
  int device = -1;  ///< the owning device for device memory, else -1
};

/// The place of `pointer`: memory the runtime does not know (plain malloc, a stack array) and
/// pinned host memory are `host`. Never throws; a runtime without a device answers `host`.
PointerPlace pointer_place(const void* pointer);

}  // namespace rfa::device
