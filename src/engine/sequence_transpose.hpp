// SPDX-License-Identifier: BSD-3-Clause
// The data movement of a sequence <-> head transpose (Ulysses, docs/architecture.md §8), on the
// host or a device: packing head ranges of a local bshd tensor into one block per rank, placing
// received rows at their global positions in a full-sequence tensor, and the way back.
//
// A "block" is [batch][rows][width][head_dim], row-major; the blocks of all ranks lie one after
// another in one buffer (BlockLayout), ready for an all-to-all(v). Rows go at their global
// positions, so the full-sequence tensor is ordered 0..S-1 whatever the layout, and one
// contiguous position map describes it: every layout and mask works unchanged.
//
// Every function runs on an execution space `exec` (the host's, or Kokkos::Cuda on the
// context's stream) over pointers into that space's memory: on the host a thread takes whole
// rows (copies the compiler vectorizes), on a device a thread takes one element, so neighbouring
// threads touch neighbouring addresses. Device work is only queued: the communicators order
// their transfers after the compute stream. Index lists the kernels read (which slot holds which
// column) live in the same memory (ColumnMap).
//
// The per-row operations are named functors, not KOKKOS_LAMBDA: nvcc wraps a __host__
// __device__ lambda in an object whose copy, call and destruction go through function pointers
// that each translation unit keeps to itself (an anonymous namespace) and sets where the lambda
// is made. These templates are instantiated in several translation units, and the linker keeps
// one copy of each instantiation: a lambda made in one unit's copy and copied by another's
// calls a null pointer (seen on an H200: perf/RESULTS.md, "2026-12-04 — the first GPU run of
// every path"). A functor is a plain type.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/dtype.hpp"
#include "core/positions.hpp"
#include "engine/workspace.hpp"

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

/// to[0, n) = from[0, n): a memcpy on the host (several times faster than an element loop over
/// 16-bit structs), a loop on a device, where n is one element (for_each_row).
template <class T>
KOKKOS_INLINE_FUNCTION void copy_span(T* to, const T* from, std::int64_t n) {
#if defined(__CUDA_ARCH__)
  for (std::int64_t x = 0; x < n; ++x) to[x] = from[x];
#else
  std::memcpy(static_cast<void*>(to), static_cast<const void*>(from), std::size_t(n) * sizeof(T));
#endif
}

/// to[x] = from[x] converted, for x in [x0, x1): copy_span when the types agree.
template <class To, class From>
KOKKOS_INLINE_FUNCTION void convert_span(To* to, const From* from, std::int64_t x0, std::int64_t x1) {
  if constexpr (std::is_same<To, From>::value) {
    copy_span(to + x0, from + x0, x1 - x0);
  } else {
    for (std::int64_t x = x0; x < x1; ++x) to[x] = convert_value<To>(from[x]);
  }
}

/// Whether `Exec` runs on the host (then a thread takes whole rows).
template <class Exec>
constexpr bool kHostExec = std::is_same<typename Exec::memory_space, Kokkos::HostSpace>::value;

/// A row operation on a device: index i is element i % width of row i / width.
template <class Op>
struct EachElement {
  Op op;
  std::int64_t width;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const std::int64_t x = i % width;
    op(i / width, x, x + 1);
  }
};

/// A row operation on the host: index i is the whole row i.
template <class Op>
struct EachRow {
  Op op;
  std::int64_t width;
  void operator()(std::int64_t row) const { op(row, 0, width); }
};

/// op(row, x0, x1) for every row < rows, covering the elements [0, width) of each: whole rows
/// per iteration on the host, one element per thread on a device. Queued on `exec`; the host's
/// is fenced (its results are read by MPI next). `op` is a functor (see above).
template <class Exec, class Op>
void for_each_row(const Exec& exec, const char* name, std::int64_t rows, std::int64_t width, const Op& op) {
  if (rows <= 0 || width <= 0) return;
  using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
  if constexpr (kHostExec<Exec>) {
    Kokkos::parallel_for(name, Range(exec, 0, rows), EachRow<Op>{op, width});
    exec.fence();
  } else {
    Kokkos::parallel_for(name, Range(exec, 0, rows * width), EachElement<Op>{op, width});
  }
}

/// to[row * to_pitch + x] = from[row * from_pitch + x].
template <class T>
struct CopyRows {
  T* to;
  const T* from;
  std::int64_t to_pitch, from_pitch;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t x0, std::int64_t x1) const {
    copy_span(to + row * to_pitch + x0, from + row * from_pitch + x0, x1 - x0);
  }
};

/// Which slot of a head-sharded tensor holds which column of the rank-sharded one, in the
/// memory `Space` the transposes run on: col[j] is slot j's column; the slots of column u are
/// slot[first[u] .. first[u + 1]) (a K/V head held in several slots, GQA, has several).
template <class Space>
class ColumnMap {
 public:
  /// What the kernels read (pointers into the map's memory).
  struct Lists {
    const std::int64_t* col;
    const std::int64_t* first;
    const std::int64_t* slot;
    std::int64_t slots, width;
  };

  ColumnMap() = default;
  explicit ColumnMap(const std::vector<std::int64_t>& column) {
    std::int64_t width = 0;
    for (std::int64_t u : column) width = u + 1 > width ? u + 1 : width;
    // [slots col][width + 1 first][slots slot], the slots of each column in increasing order:
    // a counting sort, linear in slots + width (a head count in the millions stays instant).
    const std::size_t slots = column.size();
    std::vector<std::int64_t> table(slots + std::size_t(width) + 1 + slots, 0);
    std::copy(column.begin(), column.end(), table.begin());
    std::int64_t* first = table.data() + slots;
    std::int64_t* slot = first + width + 1;
    for (std::int64_t u : column) ++first[u + 1];
    for (std::int64_t u = 0; u < width; ++u) first[u + 1] += first[u];
    std::vector<std::int64_t> next(first, first + width);
    for (std::size_t j = 0; j < slots; ++j) slot[next[std::size_t(column[j])]++] = std::int64_t(j);
    table_ = Kokkos::View<std::int64_t*, Space>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rfa::column_map"),
                                                table.size());
    Kokkos::deep_copy(table_, Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                  table.data(), table.size()));
    slots_ = std::int64_t(column.size());
    width_ = width;
  }

  Lists lists() const {
    const std::int64_t* t = table_.data();
    return Lists{t, t + slots_, t + slots_ + width_ + 1, slots_, width_};
  }

 private:
  Kokkos::View<std::int64_t*, Space> table_;
  std::int64_t slots_ = 0, width_ = 0;
};

/// The identity columns 0 .. n-1.
inline std::vector<std::int64_t> identity_columns(std::int64_t n) {
  std::vector<std::int64_t> c(std::size_t(n > 0 ? n : 0));
  std::iota(c.begin(), c.end(), std::int64_t(0));
  return c;
}

/// Block r of `dst` = src's heads [first[r], first[r] + width(r)), all local rows; block `skip`
/// (a rank's own, moved without a copy through the buffer) is left alone.
template <class Exec, class T>
void pack_heads(const Exec& exec, SpaceTensor4<const T, typename Exec::memory_space> src,
                const std::vector<std::int64_t>& first, const BlockLayout& blocks, T* dst, std::int64_t skip = -1) {
  const std::int64_t rows = std::int64_t(src.extent(0) * src.extent(1)), H = src.extent(2), D = src.extent(3);
  for (std::size_t r = 0; r < first.size(); ++r) {
    if (std::int64_t(r) == skip) continue;
    const std::int64_t w = blocks.width[r];
    const T* from = src.data() + first[r] * D;  // heads f .. f + w of a row: w * D consecutive elements
    for_each_row(exec, "rfa::pack_heads", rows, w * D, CopyRows<T>{dst + blocks.offset[r], from, w * D, H * D});
  }
}

/// place_block's row operation: row (b * L + l) * J + j of the block's rows and slots.
template <class T>
struct PlaceRow {
  T* to;
  const T* src;
  const std::int64_t* col;
  PositionMap pos;
  std::int64_t S, J, D, L, pitch;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t x0, std::int64_t x1) const {
    const std::int64_t bl = row / J, j = row % J, b = bl / L, l = bl % L;
    copy_span(to + ((b * S + pos(l)) * J + j) * D + x0, src + bl * pitch + col[j] * D + x0, x1 - x0);
  }
};

/// full[b][pos(l)][j] = src[(b * L + l) * pitch + col[j] * D ..] for the L rows of `pos` and
/// every slot j: one rank's rows, at `pitch` elements per row (a packed block's w * D, or a
/// local tensor's H * D from its first head), placed at their global positions.
template <class Exec, class T>
void place_block(const Exec& exec, const T* src, std::int64_t pitch, const PositionMap& pos,
                 const typename ColumnMap<typename Exec::memory_space>::Lists& cols,
                 SpaceTensor4<T, typename Exec::memory_space> full) {
  const std::int64_t B = full.extent(0), S = full.extent(1), J = full.extent(2), D = full.extent(3), L = pos.length();
  for_each_row(exec, "rfa::place_rows", B * L * J, D, PlaceRow<T>{full.data(), src, cols.col, pos, S, J, D, L, pitch});
}

/// full[b][rows[s](l)][j] = block s [b][l][col[j]] for every rank s and slot j: the received
/// rows go to their global positions. Block `skip` is left alone.
template <class Exec, class T>
void place_rows(const Exec& exec, const T* recv, const BlockLayout& blocks, const std::vector<PositionMap>& rows,
                const typename ColumnMap<typename Exec::memory_space>::Lists& cols,
                SpaceTensor4<T, typename Exec::memory_space> full, std::int64_t skip = -1) {
  for (std::size_t s = 0; s < rows.size(); ++s)
    if (std::int64_t(s) != skip)
      place_block(exec, recv + blocks.offset[s], blocks.width[s] * std::int64_t(full.extent(3)), rows[s], cols, full);
}

/// take_block's row operation: row (b * L + l) * width + u of the destination.
template <class TFull, class TDst>
struct TakeRow {
  const TFull* from;
  TDst* dst;
  const std::int64_t* first;
  const std::int64_t* slot;
  PositionMap pos;
  std::int64_t S, J, D, L, width, known, pitch;
  bool accumulate;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t x0, std::int64_t x1) const {
    const std::int64_t bl = row / width, u = row % width, b = bl / L, l = bl % L;
    const TFull* r = from + (b * S + pos(l)) * J * D;
    const std::int64_t i0 = u < known ? first[u] : 0, i1 = u < known ? first[u + 1] : 0;
    TDst* out = dst + bl * pitch + u * D;
    if (i1 - i0 == 1 && !accumulate) {
      convert_span(out, r + slot[i0] * D, x0, x1);
      return;
    }
    for (std::int64_t x = x0; x < x1; ++x) {
      float sum = accumulate ? to_float(out[x]) : 0.0f;
      for (std::int64_t i = i0; i < i1; ++i) sum += to_float(r[slot[i] * D + x]);
      out[x] = convert_value<TDst>(sum);
    }
  }
};

/// dst[(b * L + l) * pitch + u * D ..] = (or += when accumulating) the sum over the slots j
/// of column u of full[b][pos(l)][j], converted, for the L rows of `pos` and u < width: one
/// rank's rows back from the full sequence, at `pitch` elements per row (place_block's way
/// back). One slot per column for out and dQ (copied as is: no round trip through fp32 for
/// 16-bit values); dK/dV sum, in fp32, the slots that held copies of one K/V head.
template <class Exec, class TFull, class TDst>
void take_block(const Exec& exec, SpaceTensor4<const TFull, typename Exec::memory_space> full, const PositionMap& pos,
                const typename ColumnMap<typename Exec::memory_space>::Lists& cols, std::int64_t width, TDst* dst,
                std::int64_t pitch, bool accumulate) {
  const std::int64_t B = full.extent(0), S = full.extent(1), J = full.extent(2), D = full.extent(3);
  const std::int64_t L = pos.length();
  for_each_row(exec, "rfa::take_rows", B * L * width, D,
               TakeRow<TFull, TDst>{full.data(), dst, cols.first, cols.slot, pos, S, J, D, L, width, cols.width, pitch,
                                    accumulate});
}

/// Block r [b][l][u] = the sum over the slots of column u of full[b][rows[r](l)][j],
/// converted to TSend: the rows of rank r, back from the full sequence. Block `skip` is left
/// alone.
template <class Exec, class TFull, class TSend>
void take_rows(const Exec& exec, SpaceTensor4<const TFull, typename Exec::memory_space> full,
               const std::vector<PositionMap>& rows, const typename ColumnMap<typename Exec::memory_space>::Lists& cols,
               const BlockLayout& blocks, TSend* dst, std::int64_t skip = -1) {
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (std::int64_t(r) != skip)
      take_block(exec, full, rows[r], cols, blocks.width[r], dst + blocks.offset[r],
                 blocks.width[r] * std::int64_t(full.extent(3)), false);
}

/// unpack_heads' row operation: to[row * to_pitch + x] = (or +=) from[row * from_pitch + x],
/// converted.
template <class TRecv, class TDst>
struct UnpackRow {
  const TRecv* from;
  TDst* to;
  std::int64_t from_pitch, to_pitch;
  bool accumulate;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t x0, std::int64_t x1) const {
    const TRecv* f = from + row * from_pitch;
    TDst* t = to + row * to_pitch;
    if (!accumulate) {
      convert_span(t, f, x0, x1);
      return;
    }
    for (std::int64_t x = x0; x < x1; ++x) t[x] = convert_value<TDst>(to_float(t[x]) + to_float(f[x]));
  }
};

/// dst[b][l][first[s] + u][x] = block s [b][l][u][x] (or += when accumulating), converted.
/// Block `skip` is left alone.
template <class Exec, class TRecv, class TDst>
void unpack_heads(const Exec& exec, const TRecv* recv, const BlockLayout& blocks,
                  const std::vector<std::int64_t>& first, SpaceTensor4<TDst, typename Exec::memory_space> dst,
                  bool accumulate, std::int64_t skip = -1) {
  const std::int64_t rows = std::int64_t(dst.extent(0) * dst.extent(1)), H = dst.extent(2), D = dst.extent(3);
  for (std::size_t s = 0; s < first.size(); ++s) {
    if (std::int64_t(s) == skip) continue;
    const std::int64_t w = blocks.width[s];
    TDst* to_heads = dst.data() + first[s] * D;  // heads f .. f + w: w * D consecutive elements
    for_each_row(exec, "rfa::unpack_heads", rows, w * D,
                 UnpackRow<TRecv, TDst>{recv + blocks.offset[s], to_heads, w * D, H * D, accumulate});
  }
}

/// A rank's own block moved directly, without the packed buffers: full[b][pos(l)][j] =
/// local[b][l][first + col[j]] for every local row l and slot j.
template <class Exec, class T>
void place_own_rows(const Exec& exec, SpaceTensor4<const T, typename Exec::memory_space> local, std::int64_t first,
                    const PositionMap& pos, const typename ColumnMap<typename Exec::memory_space>::Lists& cols,
                    SpaceTensor4<T, typename Exec::memory_space> full) {
  const std::int64_t H = local.extent(2), D = local.extent(3);
  place_block(exec, local.data() + first * D, H * D, pos, cols, full);
}

/// The way back for a rank's own block: local[b][l][first + u] = (or += when accumulating) the
/// sum over the slots of column u of full[b][pos(l)][j], for u < width, converted.
template <class Exec, class TFull, class T>
void take_own_rows(const Exec& exec, SpaceTensor4<const TFull, typename Exec::memory_space> full,
                   const PositionMap& pos, const typename ColumnMap<typename Exec::memory_space>::Lists& cols,
                   std::int64_t first, std::int64_t width, SpaceTensor4<T, typename Exec::memory_space> local,
                   bool accumulate) {
  const std::int64_t H = local.extent(2), D = local.extent(3);
  take_block(exec, full, pos, cols, width, local.data() + first * D, H * D, accumulate);
}

/// to[row * width + x] = from[row * width + x], converted.
template <class T>
struct ConvertRow {
  const float* from;
  T* to;
  std::int64_t width;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t x0, std::int64_t x1) const {
    convert_span(to + row * width, from + row * width, x0, x1);
  }
};

/// to = from, converted, elementwise, over [batch][rows][heads][dim] tensors of one shape.
template <class Exec, class T>
void convert_elements(const Exec& exec, SpaceTensor4<const float, typename Exec::memory_space> from,
                      SpaceTensor4<T, typename Exec::memory_space> to) {
  const std::int64_t width = std::int64_t(to.extent(2) * to.extent(3));
  for_each_row(exec, "rfa::convert_elements", std::int64_t(to.extent(0) * to.extent(1)), width,
               ConvertRow<T>{from.data(), to.data(), width});
}

/// data[row * width + x] = 0 for x outside [lo, hi).
struct ZeroOutside {
  float* data;
  std::int64_t width, lo, hi;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t row, std::int64_t x0, std::int64_t x1) const {
    for (std::int64_t x = x0; x < x1; ++x)
      if (x < lo || x >= hi) data[row * width + x] = 0.0f;
  }
};

/// Every head of `t` [batch][rows][heads][dim] outside [first, first + count) set to zero.
template <class Exec>
void zero_other_heads(const Exec& exec, SpaceTensor4<float, typename Exec::memory_space> t, std::int64_t first,
                      std::int64_t count) {
  const std::int64_t H = t.extent(2), D = t.extent(3);
  for_each_row(exec, "rfa::zero_heads", std::int64_t(t.extent(0) * t.extent(1)), H * D,
               ZeroOutside{t.data(), H * D, first * D, (first + count) * D});
}

/// a[l0, l1) = b[l0, l1) when `into_a`, else b[l0, l1) = a[l0, l1).
KOKKOS_INLINE_FUNCTION void copy_one_way(bool into_a, float* a, float* b, std::int64_t l0, std::int64_t l1) {
  if (into_a) {
    copy_span(a + l0, b + l0, l1 - l0);
  } else {
    copy_span(b + l0, a + l0, l1 - l0);
  }
}

/// lse_heads' row operation: row bh = b * H + h of the local tensor, to or from its block.
struct LseHeadRow {
  float* rows;
  float* blocks;
  std::int64_t B, H, L, hp;
  bool to_blocks;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t bh, std::int64_t l0, std::int64_t l1) const {
    const std::int64_t b = bh / H, h = bh % H, r = h / hp, i = h % hp;
    copy_one_way(to_blocks, blocks + ((r * B + b) * hp + i) * L, rows + bh * L, l0, l1);
  }
};

/// lse rows between the local [batch][heads][rows] and per-rank blocks [batch][hp][rows].
/// to_blocks: block r = heads [r*hp, (r+1)*hp) of `local`. Otherwise the reverse.
template <class Exec>
void lse_heads(const Exec& exec, SpaceTensor3<float, typename Exec::memory_space> local, float* blocks, std::int64_t hp,
               bool to_blocks) {
  const std::int64_t B = local.extent(0), H = local.extent(1), L = local.extent(2);
  for_each_row(exec, "rfa::lse_heads", B * H, L, LseHeadRow{local.data(), blocks, B, H, L, hp, to_blocks});
}

/// lse_sequence's row operation: row bi of one rank's block, at that rank's positions.
struct LseSequenceRow {
  float* seq;
  float* block;
  PositionMap pos;
  std::int64_t S, L;
  bool to_full;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t bi, std::int64_t l0, std::int64_t l1) const {
    for (std::int64_t l = l0; l < l1; ++l) {
      float& f = seq[bi * S + pos(l)];
      float& x = block[bi * L + l];
      if (to_full) {
        f = x;
      } else {
        x = f;
      }
    }
  }
};

/// lse rows between per-rank blocks [batch][hp][rows of rank r] and the full [batch][hp][S]:
/// to_full places block s at rank s's global positions; otherwise block r takes them back.
template <class Exec>
void lse_sequence(const Exec& exec, SpaceTensor3<float, typename Exec::memory_space> full, float* blocks,
                  const std::vector<PositionMap>& rows, bool to_full) {
  const std::int64_t B = full.extent(0), hp = full.extent(1), S = full.extent(2);
  std::int64_t offset = 0;
  for (const PositionMap& pos : rows) {
    const std::int64_t L = pos.length();
    for_each_row(exec, "rfa::lse_sequence", B * hp, L,
                 LseSequenceRow{full.data(), blocks + offset, pos, S, L, to_full});
    offset += B * hp * L;
  }
}

/// slice_heads' row operation: row bi = b * h + i of the part, to or from head first + i.
struct SliceHeadRow {
  float* whole;
  float* part;
  std::int64_t h, L, H, first;
  bool into_part;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t bi, std::int64_t l0, std::int64_t l1) const {
    const std::int64_t b = bi / h, i = bi % h;
    copy_one_way(into_part, part + bi * L, whole + (b * H + first + i) * L, l0, l1);
  }
};

/// Heads [first, first + part.extent(1)) of an fp32 [batch][heads][rows] tensor (lse, D): copied
/// into `part` (into_part) or back into `whole`.
template <class Exec>
void slice_heads(const Exec& exec, SpaceTensor3<float, typename Exec::memory_space> whole, std::int64_t first,
                 SpaceTensor3<float, typename Exec::memory_space> part, bool into_part) {
  const std::int64_t B = part.extent(0), h = part.extent(1), L = part.extent(2), H = whole.extent(1);
  for_each_row(exec, "rfa::slice_heads", B * h, L, SliceHeadRow{whole.data(), part.data(), h, L, H, first, into_part});
}

}  // namespace engine
}  // namespace rfa
