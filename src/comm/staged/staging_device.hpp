// SPDX-License-Identifier: BSD-3-Clause
// The device side of a staged transport (docs/architecture.md §8, "move a buffer"): copies
// between device memory and pinned host buffers, queued on a copy stream of their own and
// ordered against the compute stream with events. StagedCommunicator is written against this
// interface only, so its state machine runs and is tested on the host with a fake
// (tests/comm/staged_communicator_test.cpp); cuda_staging_device.hpp is the real one.
#pragma once

#include <cstddef>
#include <memory>

namespace rfa::comm {

/// One queued copy. done() answers on the host without blocking.
class CopyTicket {
 public:
  virtual ~CopyTicket() = default;
  virtual bool done() = 0;
};

/// A point on the compute stream: the work queued there when it was taken.
class ComputeMark {
 public:
  virtual ~ComputeMark() = default;
};

class StagingDevice {
 public:
  virtual ~StagingDevice() = default;
  /// The work queued so far on the compute stream, for copies to be ordered after.
  virtual std::unique_ptr<ComputeMark> mark_compute() = 0;
  /// Queues device `src` -> pinned host `dst`, after the compute work of `after` (a mark of
  /// this device).
  virtual std::unique_ptr<CopyTicket> copy_to_host(void* dst, const void* src, std::size_t bytes,
                                                   const ComputeMark& after) = 0;
  /// Queues pinned host `src` -> device `dst` after the compute work of `after` (a mark of this
  /// device: the kernels that may still read `dst`), and makes the compute stream wait for it,
  /// so kernels queued afterwards see the data.
  virtual std::unique_ptr<CopyTicket> copy_to_device(void* dst, const void* src, std::size_t bytes,
                                                     const ComputeMark& after) = 0;
  /// Page-locked host memory (so the copies are asynchronous DMA), and its release.
  virtual void* allocate_host(std::size_t bytes) = 0;
  virtual void free_host(void* p) noexcept = 0;
  /// The stream that copies are ordered after (a cudaStream_t; nullptr: legacy default).
  virtual void set_compute_stream(void* stream) = 0;
  /// A device of the same kind with copy resources of its own and the same compute stream,
  /// for a communicator split off this one's (StagedCommunicator::split).
  virtual std::unique_ptr<StagingDevice> make_sibling() = 0;
};

}  // namespace rfa::comm
