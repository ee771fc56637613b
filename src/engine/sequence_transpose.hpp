// SPDX-License-Identifier: BSD-3-Clause
// The data movement of a sequence <-> head transpose (Ulysses, docs/architecture.md §8), on the
// host: packing head ranges of a local bshd tensor into one block per rank, placing received
// rows at their global positions in a full-sequence tensor, and the way back.
//
// A "block" is [batch][rows][width][head_dim], row-major; the blocks of all ranks lie one after
// another in one buffer (BlockLayout), ready for an all-to-all(v). Rows go at their global
// positions, so the full-sequence tensor is ordered 0..S-1 whatever the layout, and one
// contiguous position map describes it: every layout and mask works unchanged.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dtype.hpp"
#include "core/positions.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {

/// One block per rank r, [batch][rows(r)][width(r)][head_dim] row-major, one after another.
struct BlockLayout {
  std::vector<std::int64_t> width, offset, elems;
  std::int64_t total = 0;

  BlockLayout(std::int64_t batch, std::int64_t head_dim, const std::vector<std::int64_t>& rows,
              std::vector<std::int64_t> widths)
      : width(std::move(widths)) {
    for (std::size_t r = 0; r < width.size(); ++r) {
      offset.push_back(total);
      elems.push_back(batch * rows[r] * width[r] * head_dim);
      total += elems.back();
    }
  }
  /// Byte counts and offsets for Communicator::alltoallv.
  void bytes(std::size_t elem_size, std::vector<std::size_t>& counts, std::vector<std::size_t>& offsets) const {
    counts.clear();
    offsets.clear();
    for (std::size_t r = 0; r < width.size(); ++r) {
      counts.push_back(std::size_t(elems[r]) * elem_size);
      offsets.push_back(std::size_t(offset[r]) * elem_size);
    }
  }
};

template <class To, class From>
KOKKOS_INLINE_FUNCTION To convert_value(From x) {
  if constexpr (std::is_same<To, From>::value) {
    return x;
  } else {
    return from_float<To>(to_float(x));
  }
}

/// to[0, n) = from[0, n), converted (a plain copy when the types agree).
template <class From, class To>
inline void copy_row(const From* from, std::int64_t n, To* to) {
  if constexpr (std::is_same<From, To>::value) {
    std::memcpy(to, from, std::size_t(n) * sizeof(To));
  } else {
    for (std::int64_t x = 0; x < n; ++x) to[x] = convert_value<To>(from[x]);
  }
}

using HostRange = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>;

/// Block r of `dst` = src's heads [first[r], first[r] + width(r)), all local rows; block `skip`
/// (a rank's own, moved without a copy through the buffer) is left alone.
template <class T>
void pack_heads(kernels::Tensor4<const T> src, const std::vector<std::int64_t>& first, const BlockLayout& blocks,
                T* dst, std::int64_t skip = -1) {
  const std::int64_t B = src.extent(0), L = src.extent(1), D = src.extent(3);
  for (std::size_t r = 0; r < first.size(); ++r) {
    if (std::int64_t(r) == skip) continue;
    const std::int64_t w = blocks.width[r], f = first[r];
    T* block = dst + blocks.offset[r];
    Kokkos::parallel_for("rfa::pack_heads", HostRange(0, B * L), [=](std::int64_t bl) {
      const std::int64_t b = bl / L, l = bl % L;
      // Heads f .. f + w of a row are w * D consecutive elements.
      copy_row(&src(b, l, f, 0), w * D, block + (b * L + l) * w * D);
    });
  }
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// full[b][pos(l)][j] = src[(b * L + l) * pitch + column[j] * D ..] for the L rows of `pos`
/// and every slot j: one rank's rows, at `pitch` elements per row (a packed block's w * D, or a
/// local tensor's H * D from its first head), placed at their global positions.
template <class T>
void place_block(const T* src, std::int64_t pitch, const PositionMap& pos, const std::int64_t* col,
                 kernels::Tensor4<T> full) {
  const std::int64_t B = full.extent(0), J = full.extent(2), D = full.extent(3), L = pos.length();
  Kokkos::parallel_for("rfa::place_rows", HostRange(0, B * L), [=](std::int64_t bl) {
    const std::int64_t b = bl / L, l = bl % L, t = pos(l);
    for (std::int64_t j = 0; j < J; ++j) copy_row(src + (b * L + l) * pitch + col[j] * D, D, &full(b, t, j, 0));
  });
}

/// full[b][rows[s](l)][j] = block s [b][l][column[j]] for every rank s and slot j: the received
/// rows go to their global positions. Block `skip` is left alone.
template <class T>
void place_rows(const T* recv, const BlockLayout& blocks, const std::vector<PositionMap>& rows,
                const std::vector<std::int64_t>& column, kernels::Tensor4<T> full, std::int64_t skip = -1) {
  for (std::size_t s = 0; s < rows.size(); ++s)
    if (std::int64_t(s) != skip)
      place_block(recv + blocks.offset[s], blocks.width[s] * full.extent(3), rows[s], column.data(), full);
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// The slots j of each column u (column[j] == u), listed column by column:
/// slot[first[u] .. first[u + 1]). A K/V head held in several slots (GQA) has several.
struct ColumnSlots {
  std::vector<std::int64_t> first, slot;
  explicit ColumnSlots(const std::vector<std::int64_t>& column) {
    std::int64_t width = 0;
    for (std::int64_t u : column) width = u + 1 > width ? u + 1 : width;
    for (std::int64_t u = 0; u < width; ++u) {
      first.push_back(std::int64_t(slot.size()));
      for (std::size_t j = 0; j < column.size(); ++j)
        if (column[j] == u) slot.push_back(std::int64_t(j));
    }
    first.push_back(std::int64_t(slot.size()));
  }
  std::int64_t width() const { return std::int64_t(first.size()) - 1; }
};

/// out[0, D) = (or += when accumulating) the sum of the slots' rows row[slot[i] * D ..] for
/// i in [from, to), converted. A single slot is copied as is (no round trip through fp32 for
/// 16-bit values); several are summed in fp32, whole row after whole row.
template <class TFull, class TOut>
inline void sum_slots(const TFull* row, std::int64_t D, const std::int64_t* slot, std::int64_t from, std::int64_t to,
                      TOut* out, bool accumulate) {
  if (to - from == 1 && !accumulate) {
    const TFull* only = row + slot[from] * D;
    for (std::int64_t x = 0; x < D; ++x) out[x] = convert_value<TOut>(only[x]);
    return;
  }
  float sum[kernels::kMaxHeadDim];
  for (std::int64_t x = 0; x < D; ++x) sum[x] = accumulate ? to_float(out[x]) : 0.0f;
  for (std::int64_t i = from; i < to; ++i) {
    const TFull* one = row + slot[i] * D;
    for (std::int64_t x = 0; x < D; ++x) sum[x] += to_float(one[x]);
  }
  for (std::int64_t x = 0; x < D; ++x) out[x] = convert_value<TOut>(sum[x]);
}

/// dst[(b * L + l) * pitch + u * D ..] = (or += when accumulating) the sum over the slots j
/// with column[j] == u of full[b][pos(l)][j], converted, for the L rows of `pos` and u < width:
/// one rank's rows back from the full sequence, at `pitch` elements per row (place_block's way
/// back). (One slot per column for out and dQ; dK/dV sum the slots that held copies of one K/V
/// head.)
template <class TFull, class TDst>
void take_block(kernels::Tensor4<const TFull> full, const PositionMap& pos, const ColumnSlots& slots,
                std::int64_t width, TDst* dst, std::int64_t pitch, bool accumulate) {
  const std::int64_t B = full.extent(0), S = full.extent(1), J = full.extent(2), D = full.extent(3);
  const std::int64_t L = pos.length(), known = slots.width();
  const std::int64_t* first = slots.first.data();
  const std::int64_t* slot = slots.slot.data();
  Kokkos::parallel_for("rfa::take_rows", HostRange(0, B * L), [=](std::int64_t bl) {
    const std::int64_t b = bl / L, l = bl % L;
    const TFull* row = full.data() + (b * S + pos(l)) * J * D;
    for (std::int64_t u = 0; u < width; ++u)
      sum_slots(row, D, slot, u < known ? first[u] : 0, u < known ? first[u + 1] : 0, dst + (b * L + l) * pitch + u * D,
                accumulate);
  });
}

/// Block r [b][l][u] = the sum over the slots j with column[j] == u of full[b][rows[r](l)][j],
/// converted to TSend: the rows of rank r, back from the full sequence. Block `skip` is left
/// alone.
template <class TFull, class TSend>
void take_rows(kernels::Tensor4<const TFull> full, const std::vector<PositionMap>& rows,
               const std::vector<std::int64_t>& column, const BlockLayout& blocks, TSend* dst, std::int64_t skip = -1) {
  const ColumnSlots slots(column);
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (std::int64_t(r) != skip)
      take_block(full, rows[r], slots, blocks.width[r], dst + blocks.offset[r], blocks.width[r] * full.extent(3),
                 false);
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// dst[b][l][first[s] + u][x] = block s [b][l][u][x] (or += when accumulating), converted.
/// Block `skip` is left alone.
template <class TRecv, class TDst>
void unpack_heads(const TRecv* recv, const BlockLayout& blocks, const std::vector<std::int64_t>& first,
                  kernels::Tensor4<TDst> dst, bool accumulate, std::int64_t skip = -1) {
  const std::int64_t B = dst.extent(0), L = dst.extent(1), D = dst.extent(3);
  for (std::size_t s = 0; s < first.size(); ++s) {
    if (std::int64_t(s) == skip) continue;
    const std::int64_t w = blocks.width[s], f = first[s];
    const TRecv* block = recv + blocks.offset[s];
    Kokkos::parallel_for("rfa::unpack_heads", HostRange(0, B * L), [=](std::int64_t bl) {
      const std::int64_t b = bl / L, l = bl % L;
      const TRecv* from = block + (b * L + l) * w * D;
      TDst* to = &dst(b, l, f, 0);  // heads f .. f + w: w * D consecutive elements
      if (!accumulate) {
        copy_row(from, w * D, to);
      } else {
        for (std::int64_t x = 0; x < w * D; ++x) to[x] = convert_value<TDst>(to_float(to[x]) + to_float(from[x]));
      }
    });
  }
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// A rank's own block moved directly, without the packed buffers: full[b][pos(l)][j] =
/// local[b][l][first + column[j]] for every local row l and slot j.
template <class T>
void place_own_rows(kernels::Tensor4<const T> local, std::int64_t first, const PositionMap& pos,
                    const std::vector<std::int64_t>& column, kernels::Tensor4<T> full) {
  const std::int64_t H = local.extent(2), D = local.extent(3);
  place_block(local.data() + first * D, H * D, pos, column.data(), full);
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// The way back for a rank's own block: local[b][l][first + u] = (or += when accumulating) the
/// sum over the slots j with column[j] == u of full[b][pos(l)][j], for u < width, converted.
template <class TFull, class T>
void take_own_rows(kernels::Tensor4<const TFull> full, const PositionMap& pos, const std::vector<std::int64_t>& column,
                   std::int64_t first, std::int64_t width, kernels::Tensor4<T> local, bool accumulate) {
  const std::int64_t H = local.extent(2), D = local.extent(3);
  const ColumnSlots slots(column);  // read by the loop until the fence
  take_block(full, pos, slots, width, local.data() + first * D, H * D, accumulate);
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// lse rows between the local [batch][heads][rows] and per-rank blocks [batch][hp][rows].
/// to_blocks: block r = heads [r*hp, (r+1)*hp) of `local`. Otherwise the reverse.
inline void lse_heads(kernels::Tensor3<float> local, float* blocks, std::int64_t hp, bool to_blocks) {
  const std::int64_t B = local.extent(0), H = local.extent(1), L = local.extent(2);
  Kokkos::parallel_for("rfa::lse_heads", HostRange(0, B * H), [=](std::int64_t bh) {
    const std::int64_t b = bh / H, h = bh % H, r = h / hp, i = h % hp;
    float* block = blocks + ((r * B + b) * hp + i) * L;
    for (std::int64_t l = 0; l < L; ++l) {
      if (to_blocks) {
        block[l] = local(b, h, l);
      } else {
        local(b, h, l) = block[l];
      }
    }
  });
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// lse rows between per-rank blocks [batch][hp][rows of rank r] and the full [batch][hp][S]:
/// to_full places block s at rank s's global positions; otherwise block r takes them back.
inline void lse_sequence(kernels::Tensor3<float> full, float* blocks, const std::vector<PositionMap>& rows,
                         bool to_full) {
  const std::int64_t B = full.extent(0), hp = full.extent(1);
  std::int64_t offset = 0;
  for (const PositionMap& pos : rows) {
    const std::int64_t L = pos.length();
    float* block = blocks + offset;
    Kokkos::parallel_for("rfa::lse_sequence", HostRange(0, B * hp), [=](std::int64_t bi) {
      const std::int64_t b = bi / hp, i = bi % hp;
      for (std::int64_t l = 0; l < L; ++l) {
        float& f = full(b, i, pos(l));
        float& x = block[(b * hp + i) * L + l];
        if (to_full) {
          f = x;
        } else {
          x = f;
        }
      }
    });
    offset += B * hp * L;
  }
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// Heads [first, first + part.extent(1)) of an fp32 [batch][heads][rows] tensor (lse, D): copied
/// into `part` (into_part) or back into `whole`.
inline void slice_heads(kernels::Tensor3<float> whole, std::int64_t first, kernels::Tensor3<float> part,
                        bool into_part) {
  const std::int64_t B = part.extent(0), h = part.extent(1), L = part.extent(2);
  Kokkos::parallel_for("rfa::slice_heads", HostRange(0, B * h), [=](std::int64_t bi) {
    const std::int64_t b = bi / h, i = bi % h;
    for (std::int64_t l = 0; l < L; ++l) {
      if (into_part) {
        part(b, i, l) = whole(b, first + i, l);
      } else {
        whole(b, first + i, l) = part(b, i, l);
      }
    }
  });
  Kokkos::DefaultHostExecutionSpace().fence();
}

}  // namespace engine
}  // namespace rfa
