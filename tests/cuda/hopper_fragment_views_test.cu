// SPDX-License-Identifier: BSD-3-Clause
// The Hopper kernels' register and shared-memory views, checked on the host against CuTe's own
// thread-value layouts of their warpgroup MMAs (no GPU needed): for every consumer thread,
//  - score accumulators viewed as the next product's A operand (P V in the forward; P^T dO and
//    dS^T Q in the backward) hold, value for value, the elements that operand expects;
//  - the rows/columns views give each value its (row, column): a thread's rows are the same in
//    both products, and the two values of a pair are adjacent columns;
//  - V, Q, dO and K read transposed address the same shared-memory elements as themselves;
//  - the backward's dQ products cover the tile between the two consumer warpgroups (half the head
//    dimension each, or half the keys each), its dS buffers give every element its own place, and
//    each thread writes its dQ values where the swizzled layout its TMA reduce-add reads puts
//    them (the kernel's own address arithmetic, Traits::dq_thread_offset and the rest), and its
//    dS^T values where the layout dQ's product reads puts them (Traits::ds_thread_offset);
//  - each kernel's shared memory fits a Hopper CTA.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "hopper/backward_sm90_traits.hpp"
#include "hopper/forward_sm90_traits.hpp"
#include "hopper/fragment_views.hpp"

namespace {

using namespace cute;
int failures = 0;

void expect(bool ok, const char* what, int thread, int value) {
  if (!ok && failures++ < 20) std::printf("  FAIL %s (thread %d, value %d)\n", what, thread, value);
}

// The accumulators of `first` (a tile of shape FirstTile) fed as the A operand of `second`, and
// the rows/columns views of both products' accumulators (`second`'s of shape SecondTile), for
// every consumer thread: rows of 64 per consumer warpgroup.
template <class First, class Second, class FirstTile, class SecondTile>
void check_products(int threads) {
  First first;
  Second second;
  auto first_identity = make_identity_tensor(FirstTile{});
  auto second_identity = make_identity_tensor(SecondTile{});
  for (int t = 0; t < threads; ++t) {
    auto one = first.get_thread_slice(t);
    auto two = second.get_thread_slice(t);
    Tensor score_at = one.partition_C(first_identity);  // (row, column) of each accumulator of `first`
    Tensor a_at = two.partition_A(first_identity);      // (row, k) the second product expects
    Tensor as_a = make_tensor(score_at.data(), rfa_cuda::hopper::scores_as_a_operand(score_at.layout()));
    expect(size(as_a) == size(a_at), "as many A values as accumulators", t, -1);
    expect(rank(as_a) == rank(a_at) && size<2>(as_a) == size<2>(a_at), "one A step per 16 columns", t, -1);
    for (int i = 0; i < size(a_at); ++i) expect(as_a(i) == a_at(i), "accumulator value = A operand value", t, i);

    Tensor rows_cols = make_tensor(score_at.data(), rfa_cuda::hopper::rows_cols_view(score_at.layout()));
    Tensor out_at = two.partition_C(second_identity);
    Tensor out_rc = make_tensor(out_at.data(), rfa_cuda::hopper::rows_cols_view(out_at.layout()));
    expect(size<0>(rows_cols) == size<0>(out_rc), "the same number of rows in both products", t, -1);
    for (int r = 0; r < size<0>(rows_cols); ++r) {
      const int row = get<0>(rows_cols(r, 0));
      expect(get<0>(out_rc(r, 0)) == row, "the same rows in both products", t, r);
      expect(row / 64 == t / 128, "a consumer warpgroup owns 64 rows", t, r);
      for (int c = 0; c < size<1>(rows_cols); ++c) {
        expect(get<0>(rows_cols(r, c)) == row, "first: one row per row index", t, c);
        expect(get<1>(rows_cols(r, c)) == get<1>(rows_cols(0, c)), "first: one column per column index", t, c);
      }
      for (int c = 0; c < size<1>(out_rc); ++c) {
        expect(get<0>(out_rc(r, c)) == row, "second: one row per row index", t, c);
        if (c % 2 == 1) expect(get<1>(out_rc(r, c)) == get<1>(out_rc(r, c - 1)) + 1, "second: pairs adjacent", t, c);
      }
    }
  }
}

// `transposed`(j, i[, s]) addresses the same element as `plain`(i, j[, s]) for every element.
template <class Plain, class Transposed>
void check_transposed(const char* what) {
  Plain plain;
  Transposed transposed;
  constexpr bool kStaged = decltype(rank(plain))::value == 3;
  const int stages = kStaged ? int(size < kStaged ? 2 : 0 > (plain)) : 1;
  for (int s = 0; s < stages; ++s)
    for (int i = 0; i < size<0>(plain); ++i)
      for (int j = 0; j < size<1>(plain); ++j) {
        if constexpr (kStaged)
          expect(transposed(j, i, s) == plain(i, j, s), what, i, j);
        else
          expect(transposed(j, i) == plain(i, j), what, i, j);
      }
}

// A Hopper CTA may opt in to 227 KB of shared memory (cudaFuncAttributeMaxDynamicSharedMemorySize).
void check_shared_bytes(int bytes) {
  std::printf("  shared memory: %d bytes\n", bytes);
  expect(bytes <= 227 * 1024, "shared memory within a Hopper CTA's 227 KB", bytes, -1);
}

template <class Traits>
void check_forward(const char* name) {
  std::printf("forward %s: block %d x %d, head dim %d\n", name, Traits::kBlockM, Traits::kBlockN, Traits::kHeadDim);
  const int before = failures;
  check_products<typename Traits::MmaQK, typename Traits::MmaPV, typename Traits::BlockMN, typename Traits::BlockMD>(
      Traits::kConsumerThreads);
  check_transposed<typename Traits::SmemLayoutV, typename Traits::SmemLayoutVt>("V transposed in place");
  check_shared_bytes(Traits::kSmemBytes);
  std::printf("  %s\n", failures == before ? "ok" : "FAILED");
}

// dS^T into its two buffers: each consumer thread writes its pairs of adjacent queries as 32-bit
// words at addresses it computes itself (Traits::ds_thread_offset and the rest); they must be
// where SmemLayoutDs, the layout dQ's product reads, puts the pair's (query, key), read through a
// pointer at a 1024-byte boundary (the swizzle acts on the address), and every element of both
// buffers must be written once.
template <class Traits>
void check_ds_writes() {
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN;
  typename Traits::MmaScores scores;
  auto identity = make_identity_tensor(typename Traits::KeysByQueries{});
  alignas(1024) static typename Traits::T buffers[2 * kBlockM * kBlockN];
  Tensor ds = make_tensor(make_smem_ptr(buffers), typename Traits::SmemLayoutDs{});
  std::vector<int> written(2 * kBlockM * kBlockN, 0);
  for (int buffer = 0; buffer < 2; ++buffer)
    for (int t = 0; t < Traits::kConsumerThreads; ++t) {
      Tensor at = scores.get_thread_slice(t).partition_C(identity);
      expect(int(size(at)) == 4 * (kBlockM / 8), "dS: two keys of a pair per 8 queries a thread", t, -1);
      for (int i = 0; i < size(at); ++i) {
        const int e0 = i % 2, e1 = i / 2 % 2, j = i / 4;
        const int key = 64 * (t / 128) + 16 * (t % 128 / 32) + t % 32 / 4 + 8 * e1, query = 2 * (t % 4) + e0 + 8 * j;
        expect(get<0>(at(i)) == key && get<1>(at(i)) == query, "dS: the accumulators' layout the kernel assumes", t, i);
        // The kernel's expression, from a shared address at a 1024-byte boundary (not 0).
        constexpr std::uint32_t kBase = 21 * 1024;
        const std::uint32_t bytes =
            ((kBase + std::uint32_t(Traits::ds_thread_offset(t)) + std::uint32_t(buffer * Traits::kDsBufferBytes) +
              std::uint32_t(Traits::ds_pair_offset(e1, j))) ^
             Traits::ds_swizzle(t)) -
            kBase;
        const int element = int(bytes / sizeof(typename Traits::T)) + e0;
        expect(element == int(&ds(query, key, buffer) - buffers), "dS: the kernel's address = the swizzled layout's", t,
               i);
        if (element >= 0 && element < int(written.size())) ++written[element];
      }
    }
  for (int e = 0; e < int(written.size()); ++e)
    expect(written[e] == 1, "dS: every element of both buffers written once", e, written[e]);
}

template <class Traits>
void check_backward(const char* name) {
  std::printf("backward %s: %d keys x %d queries, head dim %d\n", name, Traits::kBlockN, Traits::kBlockM,
              Traits::kHeadDim);
  const int before = failures;
  check_products<typename Traits::MmaScores, typename Traits::MmaKeyGrads, typename Traits::KeysByQueries,
                 typename Traits::KeysByDim>(Traits::kConsumerThreads);
  check_transposed<typename Traits::SmemLayoutQ, typename Traits::SmemLayoutQt>("Q (and dO) transposed in place");
  check_transposed<typename Traits::SmemLayoutK, typename Traits::SmemLayoutKt>("K transposed in place");
  // dQ: each consumer warpgroup's product covers every query row of the tile and its columns: half
  // the head dimension each (every element once), or all of it over half the keys each (every
  // element twice, once per consumer).
  typename Traits::MmaQueryGrad mma;
  auto identity = make_identity_tensor(typename Traits::QueriesByDqColumns{});
  std::vector<int> seen(Traits::kBlockM * Traits::kHeadDim, 0);
  for (int consumer = 0; consumer < 2; ++consumer)
    for (int t = 0; t < 128; ++t) {
      Tensor at = mma.get_thread_slice(t).partition_C(identity);
      for (int i = 0; i < size(at); ++i) {
        const int q = get<0>(at(i));
        const int d = get<1>(at(i)) + (Traits::kDqSplitsKeys ? 0 : consumer * Traits::kDqColumns);
        expect(d < Traits::kHeadDim, "dQ: columns within the head dimension", t, i);
        if (d < Traits::kHeadDim) ++seen[q * Traits::kHeadDim + d];
      }
    }
  const int times = Traits::kDqSplitsKeys ? 2 : 1;
  for (int e = 0; e < int(seen.size()); ++e)
    expect(seen[e] == times, "dQ: every element of the tile covered", e, seen[e]);
  expect(Traits::kDqKeys * (Traits::kDqSplitsKeys ? 2 : 1) == Traits::kBlockN, "dQ: all keys summed", -1, -1);
  // dS's buffers: every (query, key, buffer) its own element.
  typename Traits::SmemLayoutDs ds;
  std::vector<int> used(cosize(ds), 0);
  for (int i = 0; i < size(ds); ++i) ++used[ds(i)];
  for (int e = 0; e < int(used.size()); ++e) expect(used[e] == 1, "dS: one element per place", e, used[e]);
  // dQ's share in shared memory: the kernel writes each thread's pairs at addresses it computes
  // itself (the thread's part once, a constant per pair, the swizzle by XOR); they must be where
  // the swizzled layout that the TMA reduce-add reads puts the pair's (query, column), and the
  // share must fill its elements densely.
  // The swizzle acts on the address (as the copy engine's does), so the layout is read through a
  // pointer at a 1024-byte boundary, as the share lies in the kernel.
  typename Traits::SmemLayoutDq dq_layout;
  expect(int(size<0>(dq_layout)) == Traits::kBlockM && int(size<1>(dq_layout)) == Traits::kDqColumns,
         "dQ share: the tile's shape", -1, -1);
  expect(int(cosize(dq_layout)) == Traits::kBlockM * Traits::kDqColumns, "dQ share: dense", -1, int(cosize(dq_layout)));
  alignas(1024) static float share[Traits::kBlockM * Traits::kDqColumns];
  Tensor dq = make_tensor(make_smem_ptr(share), dq_layout);
  std::vector<int> written(Traits::kBlockM * Traits::kDqColumns, 0);
  for (int t = 0; t < 128; ++t) {
    Tensor at = mma.get_thread_slice(t).partition_C(identity);
    expect(int(size(at)) == 4 * (Traits::kDqColumns / 8), "dQ: two rows of a pair per 8 columns a thread", t, -1);
    for (int i = 0; i < size(at); ++i) {
      const int e0 = i % 2, e1 = i / 2 % 2, j = i / 4;
      const int row = 16 * (t / 32) + t % 32 / 4 + 8 * e1, col = 2 * (t % 4) + e0 + 8 * j;
      expect(get<0>(at(i)) == row && get<1>(at(i)) == col, "dQ: the accumulators' layout the kernel assumes", t, i);
      const std::uint32_t bytes =
          (4u * std::uint32_t(Traits::dq_thread_offset(t) + Traits::dq_pair_offset(e1, j))) ^ Traits::dq_swizzle(t);
      const int element = int(bytes / 4) + e0;
      expect(element == int(&dq(row, col) - share), "dQ: the kernel's address = the swizzled layout's", t, i);
      if (element >= 0 && element < int(written.size())) ++written[element];
    }
  }
  for (int e = 0; e < int(written.size()); ++e)
    expect(written[e] == 1, "dQ share: every element written once", e, written[e]);
  check_ds_writes<Traits>();
  check_shared_bytes(Traits::kSmemBytes);
  std::printf("  %s\n", failures == before ? "ok" : "FAILED");
}

}  // namespace

int main() {
  check_forward<rfa_cuda::hopper::ForwardSm90Traits<cutlass::bfloat16_t, 128>>("bf16 d128");
  check_forward<rfa_cuda::hopper::ForwardSm90Traits<cutlass::half_t, 64>>("fp16 d64");
  check_backward<rfa_cuda::hopper::BackwardSm90Traits<cutlass::bfloat16_t, 128>>("bf16 d128");
  check_backward<rfa_cuda::hopper::BackwardSm90Traits<cutlass::half_t, 64>>("fp16 d64");
  std::printf(failures == 0 ? "all checks passed\n" : "%d check(s) FAILED\n", failures);
  return failures == 0 ? 0 : 1;
}
