// SPDX-License-Identifier: BSD-3-Clause
// The whole problem of a C API test as every rank holds it before sharding: random inputs stored
// in the options' dtype, and the float64 reference's forward and backward on their rounded values.
// For the suites that link rfa_reference (tests/reference).
#pragma once

#include <cstdint>
#include <vector>

#include "capi_test_support.hpp"
#include "reference_attention.hpp"

namespace rfa_capi_test {

/// The reference's problem for the options: sizes, heads, mask, window, scale, and the document
/// boundaries given (the options' own pointer may not outlive the context's creation).
inline rfa::reference::Problem reference_problem(const rfa_options_t& o, const std::vector<int64_t>& doc_bounds) {
  rfa::reference::Problem p;
  p.batch = o.batch;
  p.seq_q = p.seq_k = o.seq_total;
  p.heads = o.heads;
  p.kv_heads = o.kv_heads > 0 ? o.kv_heads : o.heads;
  p.head_dim = o.head_dim;
  p.scale = o.softmax_scale;
  p.causal = o.mask == RFA_MASK_CAUSAL;
  p.window = o.window;
  p.doc_bounds = doc_bounds;
  return p;
}

/// Global q, k, v and dout (seeds seed..seed+3, the same on every rank) in the options' dtype, and
/// the reference's out, lse, dq, dk and dv on the values as stored; with `sinks` (one logit per
/// query head), the reference's softmax includes them and dsinks is their gradient.
struct ReferenceRun {
  rfa::reference::Problem problem;
  Stored q, k, v, dout;
  std::vector<double> out, lse, dq, dk, dv, dsinks;

  ReferenceRun(const rfa_options_t& o, const std::vector<int64_t>& doc_bounds, std::uint64_t seed,
               const std::vector<float>& sinks = {})
      : problem(with_sinks(reference_problem(o, doc_bounds), sinks)),
        q(o.dtype, std::size_t(problem.q_size())),
        k(o.dtype, std::size_t(problem.kv_size())),
        v(o.dtype, std::size_t(problem.kv_size())),
        dout(o.dtype, std::size_t(problem.q_size())) {
    const auto rq = q.assign(random_values(q.size(), seed)), rk = k.assign(random_values(k.size(), seed + 1)),
               rv = v.assign(random_values(v.size(), seed + 2)),
               rdout = dout.assign(random_values(dout.size(), seed + 3));
    rfa::reference::forward(problem, rq, rk, rv, out, lse);
    rfa::reference::backward(problem, rq, rk, rv, rdout, dq, dk, dv, sinks.empty() ? nullptr : &dsinks);
  }

 private:
  static rfa::reference::Problem with_sinks(rfa::reference::Problem p, const std::vector<float>& sinks) {
    p.sinks.assign(sinks.begin(), sinks.end());
    return p;
  }
};

}  // namespace rfa_capi_test
