// SPDX-License-Identifier: BSD-3-Clause
// The Hopper forward's register and shared-memory views, checked on the host against CuTe's own
// thread-value layouts of the two warpgroup MMAs (no GPU needed): for every consumer thread,
//  - the score accumulators viewed as the P V product's A operand hold, value for value, the
//    (row, key) elements that operand expects;
//  - the rows/columns views give each value its (row, column): a thread's rows are the same in
//    both products, and the two values of a pair are adjacent columns;
//  - V read transposed addresses the same shared-memory element as V itself.
#include <cstdio>

#include "hopper/forward_sm90_traits.hpp"
#include "hopper/fragment_views.hpp"

namespace {

using namespace cute;
int failures = 0;

void expect(bool ok, const char* what, int thread, int value) {
  if (!ok && failures++ < 20) std::printf("  FAIL %s (thread %d, value %d)\n", what, thread, value);
}

template <class Traits>
void check(const char* name) {
  std::printf("%s: block %d x %d, head dim %d\n", name, Traits::kBlockM, Traits::kBlockN, Traits::kHeadDim);
  const int before = failures;
  typename Traits::MmaQK mma_qk;
  typename Traits::MmaPV mma_pv;
  auto scores_identity = make_identity_tensor(typename Traits::BlockMN{});
  auto out_identity = make_identity_tensor(typename Traits::BlockMD{});
  for (int t = 0; t < Traits::kConsumerThreads; ++t) {
    auto qk = mma_qk.get_thread_slice(t);
    auto pv = mma_pv.get_thread_slice(t);
    Tensor score_at = qk.partition_C(scores_identity);  // (row, key) of each score accumulator
    Tensor a_at = pv.partition_A(scores_identity);      // (row, key) the P V product expects
    Tensor as_a = make_tensor(score_at.data(), rfa_cuda::hopper::scores_as_a_operand(score_at.layout()));
    expect(size(as_a) == size(a_at), "as many A values as score values", t, -1);
    expect(rank(as_a) == rank(a_at) && size<2>(as_a) == size<2>(a_at), "one A step per 16 keys", t, -1);
    for (int i = 0; i < size(a_at); ++i) expect(as_a(i) == a_at(i), "score value = A operand value", t, i);

    Tensor rows_cols = make_tensor(score_at.data(), rfa_cuda::hopper::rows_cols_view(score_at.layout()));
    Tensor out_at = pv.partition_C(out_identity);
    Tensor out_rc = make_tensor(out_at.data(), rfa_cuda::hopper::rows_cols_view(out_at.layout()));
    expect(size<0>(rows_cols) == size<0>(out_rc), "the same number of rows in both products", t, -1);
    for (int r = 0; r < size<0>(rows_cols); ++r) {
      const int row = get<0>(rows_cols(r, 0));
      expect(get<0>(out_rc(r, 0)) == row, "the same rows in both products", t, r);
      expect(row / 64 == t / 128, "a consumer warpgroup owns 64 rows", t, r);
      for (int c = 0; c < size<1>(rows_cols); ++c) {
        expect(get<0>(rows_cols(r, c)) == row, "scores: one row per row index", t, c);
        expect(get<1>(rows_cols(r, c)) == get<1>(rows_cols(0, c)), "scores: one column per column index", t, c);
      }
      for (int c = 0; c < size<1>(out_rc); ++c) {
        expect(get<0>(out_rc(r, c)) == row, "out: one row per row index", t, c);
        if (c % 2 == 1) expect(get<1>(out_rc(r, c)) == get<1>(out_rc(r, c - 1)) + 1, "out: pairs adjacent", t, c);
      }
    }
  }
  // V^T(d, n, s) is V(n, d, s).
  typename Traits::SmemLayoutV v;
  typename Traits::SmemLayoutVt vt;
  for (int s = 0; s < Traits::kStages; ++s)
    for (int n = 0; n < Traits::kBlockN; ++n)
      for (int d = 0; d < Traits::kHeadDim; ++d) expect(vt(d, n, s) == v(n, d, s), "V transposed in place", n, d);
  std::printf("  %s\n", failures == before ? "ok" : "FAILED");
}

}  // namespace

int main() {
  check<rfa_cuda::hopper::ForwardSm90Traits<cutlass::bfloat16_t, 128>>("bf16 d128");
  check<rfa_cuda::hopper::ForwardSm90Traits<cutlass::half_t, 64>>("fp16 d64");
  std::printf(failures == 0 ? "all checks passed\n" : "%d check(s) FAILED\n", failures);
  return failures == 0 ? 0 : 1;
}
