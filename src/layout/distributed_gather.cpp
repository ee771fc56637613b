// SPDX-License-Identifier: BSD-3-Clause
#include "layout/distributed_gather.hpp"

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "comm/agreement.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa::layout {

namespace {

// Validates on every rank together: an invalid shape on one rank fails all of them before
// any of them enters the all-gather.
void agree_on_shape(comm::Communicator& comm, rfa_layout_t layout, std::int64_t global_seq, const BshdDims& dims) {
  comm::require_same_everywhere(comm, {{"the sequence layout", std::int64_t(layout)},
                                       {"the global sequence length", global_seq},
                                       {"the batch size", dims.batch},
                                       {"the number of heads", dims.heads},
                                       {"the head dimension", dims.head_dim}});
  std::string problem;
  try {
    validate_shape(layout, global_seq, comm.size());
    require(dims.batch >= 0 && dims.heads >= 0 && dims.head_dim >= 0, "tensor sizes must not be negative");
  } catch (const Error& e) {
    problem = e.what();
  }
  comm::fail_everywhere_unless(comm, problem.empty(), RFA_ERROR_INVALID_ARGUMENT, problem);
}

// All-gathers `outer * local_seq * width` elements per rank and places each rank's rows at
// the positions of its map (every rank's map is gathered too: PositionMap is plain data). Every
// rank's shards are staged in a buffer as large as the whole tensor, allocated and agreed on
// before anything moves: a rank that cannot have it fails every rank with
// RFA_ERROR_OUT_OF_MEMORY, where the others would wait in the all-gather until their deadline.
// The map sent and the maps and shards received belong to MPI while its all-gathers run; one
// that times out cannot be cancelled and a late rank can still complete it, so those buffers
// are then kept for the life of the process rather than freed and reused.
template <class T, class Place>
void gather_all_shards(comm::Communicator& comm, const PositionMap& mine, const T* local, std::size_t shard_elements,
                       Place place) {
  const int ranks = comm.size();
  auto sent = std::make_unique<PositionMap>(mine);
  auto maps = std::make_unique<std::vector<PositionMap>>(static_cast<std::size_t>(ranks));
  auto shards = std::make_unique<std::vector<T>>();
  bool staged = true;
  try {
    shards->resize(shard_elements * std::size_t(ranks));
  } catch (const std::bad_alloc&) {
    staged = false;
  }
  comm::fail_everywhere_unless(comm, staged, RFA_ERROR_OUT_OF_MEMORY,
                               "the all-gather could not stage every rank's shard (" +
                                   std::to_string(shard_elements * std::size_t(ranks) * sizeof(T)) +
                                   " bytes, as large as the whole tensor) on this rank");
  try {
    comm.allgather(sent.get(), maps->data(), sizeof(PositionMap));
    comm.allgather(local, shards->data(), shard_elements * sizeof(T));
  } catch (...) {
    if (comm.has_abandoned_transfers()) {
      keep_for_process(std::move(sent));
      keep_for_process(std::move(maps));
      keep_for_process(std::move(shards));
    }
    throw;
  }
  for (int r = 0; r < ranks; ++r) place(shards->data() + std::size_t(r) * shard_elements, (*maps)[std::size_t(r)]);
}

template <class T, class Place>
void gather_all_shards(comm::Communicator& comm, rfa_layout_t layout, const T* local, std::int64_t global_seq,
                       std::size_t shard_elements, Place place) {
  gather_all_shards(comm, positions(layout, global_seq, comm.size(), comm.rank()), local, shard_elements, place);
}

}  // namespace

template <class T>
void allgather_bshd(comm::Communicator& comm, rfa_layout_t layout, const T* local, const BshdDims& dims, T* global,
                    std::int64_t global_seq) {
  agree_on_shape(comm, layout, global_seq, dims);
  allgather_bshd(comm, positions(layout, global_seq, comm.size(), comm.rank()), local, dims, global, global_seq);
}

template <class T>
void allgather_bshd(comm::Communicator& comm, const PositionMap& mine, const T* local, const BshdDims& dims, T* global,
                    std::int64_t global_seq) {
  comm::require_same_everywhere(comm, {{"the global sequence length", global_seq},
                                       {"the number of local rows", mine.length()},
                                       {"the batch size", dims.batch},
                                       {"the number of heads", dims.heads},
                                       {"the head dimension", dims.head_dim}});
  const std::size_t elements = std::size_t(dims.batch * mine.length() * dims.heads * dims.head_dim);
  gather_all_shards(comm, mine, local, elements, [&](const T* shard, const PositionMap& rows) {
    gather_bshd(shard, dims, rows, global, global_seq);
  });
}

void allgather_bhs(comm::Communicator& comm, rfa_layout_t layout, const float* local, std::int64_t batch,
                   std::int64_t heads, float* global, std::int64_t global_seq) {
  agree_on_shape(comm, layout, global_seq, BshdDims{batch, heads, 1});
  const std::int64_t local_seq = local_length(layout, global_seq, comm.size());
  const std::size_t elements = std::size_t(batch * heads * local_seq);
  gather_all_shards(comm, layout, local, global_seq, elements, [&](const float* shard, const PositionMap& rows) {
    gather_bhs(shard, batch, heads, rows, global, global_seq);
  });
}

template void allgather_bshd<float>(comm::Communicator&, rfa_layout_t, const float*, const BshdDims&, float*,
                                    std::int64_t);
template void allgather_bshd<float>(comm::Communicator&, const PositionMap&, const float*, const BshdDims&, float*,
                                    std::int64_t);
template void allgather_bshd<double>(comm::Communicator&, rfa_layout_t, const double*, const BshdDims&, double*,
                                     std::int64_t);
template void allgather_bshd<double>(comm::Communicator&, const PositionMap&, const double*, const BshdDims&, double*,
                                     std::int64_t);
template void allgather_bshd<bf16_t>(comm::Communicator&, rfa_layout_t, const bf16_t*, const BshdDims&, bf16_t*,
                                     std::int64_t);
template void allgather_bshd<bf16_t>(comm::Communicator&, const PositionMap&, const bf16_t*, const BshdDims&, bf16_t*,
                                     std::int64_t);
template void allgather_bshd<fp16_t>(comm::Communicator&, rfa_layout_t, const fp16_t*, const BshdDims&, fp16_t*,
                                     std::int64_t);
template void allgather_bshd<fp16_t>(comm::Communicator&, const PositionMap&, const fp16_t*, const BshdDims&, fp16_t*,
                                     std::int64_t);

}  // namespace rfa::layout
