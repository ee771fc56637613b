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

bool visible(const Problem& p, std::int64_t b, std::int64_t i, std::int64_t j) {
  const std::int64_t qp = position(p.q_pos, i), kp = position(p.k_pos, j);
  if (p.ranges_on) {
    bool any = false;
    for (const Range& r : p.ranges) any = any || in_range(r, qp, kp);
    if (!any) return false;
  }
  return (!p.causal || kp <= qp) && (p.window <= 0 || qp - kp < p.window) &&
         document(p.documents_of(b), qp) == document(p.documents_of(b), kp);
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
  for (std::int64_t i = 0; i < p.seq_q; ++i) {
    if (!p.computes_row(i)) continue;  // its probabilities stay zero
    const double* qi = &q[((b * p.seq_q + i) * p.heads + h) * D];
    double m = ninf;
    for (std::int64_t j = 0; j < p.seq_k; ++j) {
      double s = ninf;
      if (visible(p, b, i, j)) {
        const double* kj = &k[((b * p.seq_k + j) * p.kv_heads + hk) * D];
        s = 0.0;
        for (std::int64_t d = 0; d < D; ++d) s += qi[d] * kj[d];
        s *= scale;
        if (p.softcap > 0.0) {
          const double t = std::tanh(s / p.softcap);
          s = p.softcap * t;
          cap_slope[i * p.seq_k + j] = 1.0 - t * t;
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
    double sum = sink == ninf ? 0.0 : std::exp(sink - m);  // the sink's share of the denominator
    for (std::int64_t j = 0; j < p.seq_k; ++j) sum += std::exp(P[i * p.seq_k + j] - m);
    lse[i] = m + std::log(sum);
    for (std::int64_t j = 0; j < p.seq_k; ++j) P[i * p.seq_k + j] = p.rounded(std::exp(P[i * p.seq_k + j] - lse[i]));
  }
}

}  // namespace

double Problem::effective_scale() const { return scale != 0.0 ? scale : 1.0 / std::sqrt(double(head_dim)); }

void forward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
             std::vector<double>& out, std::vector<double>& lse) {
  const std::int64_t DV = p.dv(), group = p.heads / p.kv_heads;
  out.assign(p.out_size(), 0.0);
  lse.assign(p.lse_size(), 0.0);
  std::vector<double> P, row_lse, cap_slope;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      probabilities(p, q, k, b, h, P, row_lse, cap_slope);
      for (std::int64_t i = 0; i < p.seq_q; ++i) {
        if (!p.computes_row(i)) continue;
        lse[(b * p.heads + h) * p.seq_q + i] = row_lse[i];
        double* oi = &out[((b * p.seq_q + i) * p.heads + h) * DV];
        for (std::int64_t j = 0; j < p.seq_k; ++j) {
          const double pij = P[i * p.seq_k + j];
          const double* vj = &v[((b * p.seq_k + j) * p.kv_heads + h / group) * DV];
          for (std::int64_t d = 0; d < DV; ++d) oi[d] += pij * vj[d];
        }
      }
    }
  }
  for (double& o : out) o = p.rounded(o);
}

void backward(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
              const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& dq,
              std::vector<double>& dk, std::vector<double>& dv, std::vector<double>* dsinks) {
  if (dsinks) dsinks->assign(std::size_t(p.heads), 0.0);
  const std::int64_t D = p.head_dim, DV = p.dv(), group = p.heads / p.kv_heads;
  const double scale = p.effective_scale();
  dq.assign(p.q_size(), 0.0);
  dk.assign(p.kv_size(), 0.0);
  dv.assign(p.v_size(), 0.0);
  std::vector<double> P, row_lse, dP, cap_slope;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      const std::int64_t hk = h / group;
      probabilities(p, q, k, b, h, P, row_lse, cap_slope);
      dP.assign(p.seq_q * p.seq_k, 0.0);
      for (std::int64_t i = 0; i < p.seq_q; ++i) {
        if (!p.computes_row(i)) continue;
        const double* doi = &dout[((b * p.seq_q + i) * p.heads + h) * DV];
        // dP = dO V^T and the softmax Jacobian term D_i = sum_j P_ij dP_ij.
        double Di = 0.0;
        for (std::int64_t j = 0; j < p.seq_k; ++j) {
          const double* vj = &v[((b * p.seq_k + j) * p.kv_heads + hk) * DV];
          double s = 0.0;
          for (std::int64_t d = 0; d < DV; ++d) s += doi[d] * vj[d];
          s = p.rounded(s);
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
  }
  for (std::vector<double>* grad : {&dq, &dk, &dv})
    for (double& g : *grad) g = p.rounded(g);
}

}  // namespace reference
}  // namespace rfa
