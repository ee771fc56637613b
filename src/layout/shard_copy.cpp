// SPDX-License-Identifier: BSD-3-Clause
#include "layout/shard_copy.hpp"

#include <cstring>

#include "core/error.hpp"

namespace rfa::layout {

namespace {

enum class Direction { to_local, to_global };

// Both tensor kinds are `outer` blocks of sequence rows of `width` elements: bshd has
// outer = b and width = h*d, bhs has outer = b*h and width = 1. One loop serves both.
struct RowBlocks {
  std::int64_t outer;
  std::int64_t width;
  std::int64_t global_seq;
};

void validate_copy(const void* global, const void* local, const RowBlocks& blocks, const PositionMap& rows,
                   const char* what) {
  require(blocks.outer >= 0 && blocks.width >= 0, what, ": tensor sizes must not be negative");
  require(blocks.global_seq >= 0, what, ": the global sequence length must not be negative, got ", blocks.global_seq);
  validate_position_map(rows, rows.length(), what);
  for (int s = 0; s < rows.count; ++s) {
    const Segment& seg = rows.seg[s];
    if (seg.length == 0) continue;
    const std::int64_t last = seg.start + (seg.length - 1) * seg.stride;
    require(last < blocks.global_seq, what, ": the position map reaches global position ", last,
            " but the global tensor has only ", blocks.global_seq, " positions");
  }
  const bool empty = blocks.outer == 0 || blocks.width == 0;
  require(empty || rows.length() == 0 || local != nullptr, what, ": the local tensor pointer is null");
  require(empty || blocks.global_seq == 0 || global != nullptr, what, ": the global tensor pointer is null");
}

template <class T>
void copy_rows(T* global, T* local, const RowBlocks& blocks, const PositionMap& rows, Direction direction) {
  const std::int64_t local_seq = rows.length();
  const std::size_t row_bytes = std::size_t(blocks.width) * sizeof(T);
  for (std::int64_t o = 0; o < blocks.outer; ++o) {
    T* global_block = global + o * blocks.global_seq * blocks.width;
    T* local_row = local + o * local_seq * blocks.width;
    for (int s = 0; s < rows.count; ++s) {
      const Segment& seg = rows.seg[s];
      for (std::int64_t j = 0; j < seg.length; ++j, local_row += blocks.width) {
        T* global_row = global_block + (seg.start + j * seg.stride) * blocks.width;
        if (direction == Direction::to_local) {
          std::memcpy(local_row, global_row, row_bytes);
        } else {
          std::memcpy(global_row, local_row, row_bytes);
        }
      }
    }
  }
}

RowBlocks bshd_blocks(const BshdDims& dims, std::int64_t global_seq) {
  require(dims.batch >= 0 && dims.heads >= 0 && dims.head_dim >= 0, "bshd sizes must not be negative (b=", dims.batch,
          ", h=", dims.heads, ", d=", dims.head_dim, ")");
  return RowBlocks{dims.batch, dims.heads * dims.head_dim, global_seq};
}

RowBlocks bhs_blocks(std::int64_t batch, std::int64_t heads, std::int64_t global_seq) {
  require(batch >= 0 && heads >= 0, "bhs sizes must not be negative (b=", batch, ", h=", heads, ")");
  return RowBlocks{batch * heads, 1, global_seq};
}

}  // namespace

template <class T>
void scatter_bshd(const T* global, std::int64_t global_seq, const BshdDims& dims, const PositionMap& rows, T* local) {
  const RowBlocks blocks = bshd_blocks(dims, global_seq);
  validate_copy(global, local, blocks, rows, "scatter_bshd");
  copy_rows(const_cast<T*>(global), local, blocks, rows, Direction::to_local);  // only read
}

template <class T>
void gather_bshd(const T* local, const BshdDims& dims, const PositionMap& rows, T* global, std::int64_t global_seq) {
  const RowBlocks blocks = bshd_blocks(dims, global_seq);
  validate_copy(global, local, blocks, rows, "gather_bshd");
  copy_rows(global, const_cast<T*>(local), blocks, rows, Direction::to_global);  // only read
}

void scatter_bhs(const float* global, std::int64_t global_seq, std::int64_t batch, std::int64_t heads,
                 const PositionMap& rows, float* local) {
  const RowBlocks blocks = bhs_blocks(batch, heads, global_seq);
  validate_copy(global, local, blocks, rows, "scatter_bhs");
  copy_rows(const_cast<float*>(global), local, blocks, rows, Direction::to_local);  // only read
}

void gather_bhs(const float* local, std::int64_t batch, std::int64_t heads, const PositionMap& rows, float* global,
                std::int64_t global_seq) {
  const RowBlocks blocks = bhs_blocks(batch, heads, global_seq);
  validate_copy(global, local, blocks, rows, "gather_bhs");
  copy_rows(global, const_cast<float*>(local), blocks, rows, Direction::to_global);  // only read
}

#define RFA_INSTANTIATE_SHARD_COPY(T)                                                             \
  template void scatter_bshd<T>(const T*, std::int64_t, const BshdDims&, const PositionMap&, T*); \
  template void gather_bshd<T>(const T*, const BshdDims&, const PositionMap&, T*, std::int64_t);
RFA_INSTANTIATE_SHARD_COPY(float)
RFA_INSTANTIATE_SHARD_COPY(double)
RFA_INSTANTIATE_SHARD_COPY(bf16_t)
RFA_INSTANTIATE_SHARD_COPY(fp16_t)
#undef RFA_INSTANTIATE_SHARD_COPY

}  // namespace rfa::layout
