// SPDX-License-Identifier: BSD-3-Clause
#include "reference_attention.hpp"

#include <cmath>
#include <limits>

namespace rfa {
namespace reference {
namespace {

std::int64_t position(const std::vector<std::int64_t>& map, std::int64_t i) { return map.empty() ? i : map[i]; }

/// The document of a position: how many boundaries after the first lie at or before it
/// (written as a plain count, independently of the kernels' binary search).
std::int64_t document(const std::vector<std::int64_t>& bounds, std::int64_t position) {
  std::int64_t d = 0;
  for (std::size_t i = 1; i + 1 < bounds.size(); ++i)
    if (bounds[i] <= position) d = std::int64_t(i);
  return d;
}

/// The dot product of a[0, n) and b[0, n), summed in four interleaved parts so that the
/// additions need not wait on each other (a float64 result that differs from the one-sum
/// order by rounding alone).
inline double dot(const double* a, const double* b, std::int64_t n) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::int64_t d = 0;
  for (; d + 4 <= n; d += 4) {
    s0 += a[d] * b[d];
    s1 += a[d + 1] * b[d + 1];
    s2 += a[d + 2] * b[d + 2];
    s3 += a[d + 3] * b[d + 3];
  }
  for (; d < n; ++d) s0 += a[d] * b[d];
  return (s0 + s1) + (s2 + s3);
}

/// Whether range entry r lets query position q see key position k, by the documented rule.
bool in_range(const Range& r, std::int64_t q, std::int64_t k) {
  if (q < r.q_begin || q >= r.q_end || k < r.k_begin || k >= r.k_end) return false;
  switch (r.kind) {
    case Range::full: return true;
    case Range::causal: return k - r.k_end <= q - r.q_end;
    case Range::anticausal: return k - r.k_end > q - r.q_end;
    case Range::band: {
      const std::int64_t offset = (k - r.k_begin) - (q - r.q_begin);
      return offset >= r.band_lo && offset <= r.band_hi;
    }
  }
  return false;
}

/// Whether query position qp (in document dq) sees key position kp (in document dk).
bool visible(const Problem& p, std::int64_t qp, std::int64_t dq, std::int64_t kp, std::int64_t dk) {
  if (p.ranges_on) {
    bool any = false;
    for (const Range& r : p.ranges) any = any || in_range(r, qp, kp);
    if (!any) return false;
  }
  return (!p.causal || kp <= qp) && (p.window <= 0 || qp - kp < p.window) && dq == dk;
}

// Scores and probabilities of one (batch, head) pair: P[i][j], plus lse[i], and with a soft cap
// the derivative of each capped score by its scaled score, 1 - tanh^2(s / softcap), in cap_slope
// (left empty without a cap).
void probabilities(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, std::int64_t b,
                   std::int64_t h, std::vector<double>& P, std::vector<double>& lse, std::vector<double>& cap_slope) {
  const std::int64_t D = p.head_dim, hk = h / (p.heads / p.kv_heads);
  const double scale = p.effective_scale();
  const double ninf = -std::numeric_limits<double>::infinity();
  P.assign(p.seq_q * p.seq_k, 0.0);
  lse.assign(p.seq_q, ninf);
  cap_slope.assign(p.softcap > 0.0 ? p.seq_q * p.seq_k : 0, 0.0);
  const std::vector<std::int64_t>& bounds = p.documents_of(b);
  std::vector<std::int64_t> key_position(std::size_t(p.seq_k)), key_document(std::size_t(p.seq_k));
  for (std::int64_t j = 0; j < p.seq_k; ++j) {
    key_position[std::size_t(j)] = position(p.k_pos, j);
    key_document[std::size_t(j)] = document(bounds, key_position[std::size_t(j)]);
  }
  for (std::int64_t i = 0; i < p.seq_q; ++i) {
    if (!p.computes_row(i)) continue;  // its probabilities stay zero
    const double* qi = &q[((b * p.seq_q + i) * p.heads + h) * D];
    const std::int64_t qp = position(p.q_pos, i), dq = document(bounds, qp);
    double m = ninf;
    for (std::int64_t j = 0; j < p.seq_k; ++j) {
      double s = ninf;
      if (visible(p, qp, dq, key_position[std::size_t(j)], key_document[std::size_t(j)])) {
        const double* kj = &k[((b * p.seq_k + j) * p.kv_heads + hk) * D];
        s = dot(qi, kj, D) * scale;
        if (p.softcap > 0.0) {
          const double x = s / p.softcap, c = std::cosh(x);
          s = p.softcap * std::tanh(x);
          cap_slope[i * p.seq_k + j] = 1.0 / (c * c);  // 1 - tanh^2, which double rounds to 0 past |x| = 19
        }
        s = p.rounded(s);
      }
      P[i * p.seq_k + j] = s;
      if (s > m) m = s;
    }
    const double sink = p.sinks.empty() ? ninf : p.sinks[std::size_t(h)];
    if (m == ninf) {  // sees no key: probabilities stay zero; the lse is the sink's alone
      for (std::int64_t j = 0; j < p.seq_k; ++j) P[i * p.seq_k + j] = 0.0;
      lse[i] = sink;
      continue;
    }
    if (sink > m) m = sink;
    // Hidden pairs (score -inf) add exp(-inf) = 0 to the sum and get probability 0: written
    // out, not computed, since they are half of a causal mask's pairs.
    double sum = sink == ninf ? 0.0 : std::exp(sink - m);  // the sink's share of the denominator
    for (std::int64_t j = 0; j < p.seq_k; ++j)
      if (P[i * p.seq_k + j] != ninf) sum += std::exp(P[i * p.seq_k + j] - m);
    lse[i] = m + std::log(sum);
    for (std::int64_t j = 0; j < p.seq_k; ++j) {
      double& pij = P[i * p.seq_k + j];
      pij = pij == ninf ? 0.0 : p.rounded(std::exp(pij - lse[i]));
    }
  }
}

/// Adds each computed row's probabilities times V to out and sets its lse, for one (batch,
/// head) pair.
void forward_head(const Problem& p, const std::vector<double>& v, std::int64_t b, std::int64_t h,
                  const std::vector<double>& P, const std::vector<double>& row_lse, std::vector<double>& out,
                  std::vector<double>& lse) {
  const std::int64_t DV = p.dv(), group = p.heads / p.kv_heads;
  for (std::int64_t i = 0; i < p.seq_q; ++i) {
    if (!p.computes_row(i)) continue;
    lse[(b * p.heads + h) * p.seq_q + i] = row_lse[i];
    double* oi = &out[((b * p.seq_q + i) * p.heads + h) * DV];
    for (std::int64_t j = 0; j < p.seq_k; ++j) {
      const double pij = P[i * p.seq_k + j];
      if (pij == 0.0) continue;  // a hidden pair (or one of probability 0) adds nothing
      const double* vj = &v[((b * p.seq_k + j) * p.kv_heads + h / group) * DV];
      for (std::int64_t d = 0; d < DV; ++d) oi[d] += pij * vj[d];
    }
  }
}

/// Adds one (batch, head) pair's gradients to dq, dk, dv and dsinks (nullptr: none), given its
/// probabilities; dP is scratch.
void backward_head(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                   const std::vector<double>& v, const std::vector<double>& dout, std::int64_t b, std::int64_t h,
                   const std::vector<double>& P, const std::vector<double>& row_lse,
                   const std::vector<double>& cap_slope, std::vector<double>& dP, std::vector<double>& dq,
                   std::vector<double>& dk, std::vector<double>& dv, std::vector<double>* dsinks) {
  const std::int64_t D = p.head_dim, DV = p.dv(), hk = h / (p.heads / p.kv_heads);
  const double scale = p.effective_scale();
  dP.assign(p.seq_q * p.seq_k, 0.0);
  for (std::int64_t i = 0; i < p.seq_q; ++i) {
    if (!p.computes_row(i)) continue;
    const double* doi = &dout[((b * p.seq_q + i) * p.heads + h) * DV];
    // dP = dO V^T and the softmax Jacobian term D_i = sum_j P_ij dP_ij; where P_ij = 0
    // (a hidden pair) neither D_i nor a gradient uses dP_ij, which stays 0.
    double Di = 0.0;
    for (std::int64_t j = 0; j < p.seq_k; ++j) {
      if (P[i * p.seq_k + j] == 0.0) continue;
      const double* vj = &v[((b * p.seq_k + j) * p.kv_heads + hk) * DV];
      const double s = p.rounded(dot(doi, vj, DV));
      dP[i * p.seq_k + j] = s;
      Di += P[i * p.seq_k + j] * s;
    }
    // The sink's probability exp(sink - lse) with dP = 0 (it has no value): dsink = p (0 - Di).
    if (dsinks && !p.sinks.empty() && std::isfinite(p.sinks[std::size_t(h)]))
      (*dsinks)[std::size_t(h)] -= std::exp(p.sinks[std::size_t(h)] - row_lse[i]) * Di;
    const double* qi = &q[((b * p.seq_q + i) * p.heads + h) * D];
    double* dqi = &dq[((b * p.seq_q + i) * p.heads + h) * D];
    for (std::int64_t j = 0; j < p.seq_k; ++j) {
      const double pij = P[i * p.seq_k + j];
      if (pij == 0.0) continue;
      // dS by the scaled score: through the cap's tanh where there is one.
      const double slope = cap_slope.empty() ? 1.0 : cap_slope[i * p.seq_k + j];
      const double dS = p.rounded(pij * (dP[i * p.seq_k + j] - Di) * slope);
      const std::int64_t k_off = ((b * p.seq_k + j) * p.kv_heads + hk) * D;
      const std::int64_t v_off = ((b * p.seq_k + j) * p.kv_heads + hk) * DV;
      for (std::int64_t d = 0; d < DV; ++d) dv[v_off + d] += pij * doi[d];
      for (std::int64_t d = 0; d < D; ++d) {
        dqi[d] += scale * dS * k[k_off + d];
        dk[k_off + d] += scale * dS * qi[d];
      }
    }
  }
}

/// The forward pass's and the backward pass's results (either may be skipped: null out, null
/// dq), each (batch, head) pair's probabilities computed once for both.
void run(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
         const std::vector<double>* dout, std::vector<double>* out, std::vector<double>* lse, std::vector<double>* dq,
         std::vector<double>* dk, std::vector<double>* dv, std::vector<double>* dsinks) {
  if (out) {
    out->assign(p.out_size(), 0.0);
    lse->assign(p.lse_size(), 0.0);
  }
  if (dq) {
    if (dsinks) dsinks->assign(std::size_t(p.heads), 0.0);
    dq->assign(p.q_size(), 0.0);
    dk->assign(p.kv_size(), 0.0);
    dv->assign(p.v_size(), 0.0);
  }
  std::vector<double> P, row_lse, cap_slope, dP;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      probabilities(p, q, k, b, h, P, row_lse, cap_slope);
      if (out) forward_head(p, v, b, h, P, row_lse, *out, *lse);
      if (dq) backward_head(p, q, k, v, *dout, b, h, P, row_lse, cap_slope, dP, *dq, *dk, *dv, dsinks);
    }
  }
  if (out)
    for (double& o : *out) o = p.rounded(o);
  if (dq)
    for (std::vector<double>* grad : {dq, dk, dv})
      for (double& g : *grad) g = p.rounded(g);
}

}  // namespace

double Problem::effective_scale() const { return scale != 0.0 ? scale : 1.0 / std::sqrt(double(head_dim)); }

void forward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
             std::vector<double>& out, std::vector<double>& lse) {
  run(p, q, k, v, nullptr, &out, &lse, nullptr, nullptr, nullptr, nullptr);
}

void backward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
              const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& dq,
              std::vector<double>& dk, std::vector<double>& dv, std::vector<double>* dsinks) {
  run(p, q, k, v, &dout, nullptr, nullptr, &dq, &dk, &dv, dsinks);
}

void forward_backward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& out,
                      std::vector<double>& lse, std::vector<double>& dq, std::vector<double>& dk,
                      std::vector<double>& dv, std::vector<double>* dsinks) {
  run(p, q, k, v, &dout, &out, &lse, &dq, &dk, &dv, dsinks);
}

}  // namespace reference
}  // namespace rfa
