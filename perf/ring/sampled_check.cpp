// SPDX-License-Identifier: BSD-3-Clause
#include "sampled_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "ring_problem.hpp"

namespace rfa {
namespace perf {
namespace {

using kernels::Tensor3;
using kernels::Tensor4;

/// The problem's value of tensor `id`, rounded to the storage dtype as the run saw it.
template <class T>
void row_values(TensorId id, std::int64_t b, std::int64_t pos, std::int64_t h, std::vector<double>& x) {
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = to_float(from_float<T>(hashed_uniform(id, b, pos, h, std::int64_t(i))));
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// Global positions a query at `q` may see, as an interval [lo, hi] the mask rule narrows
/// (each candidate is still tested with the rule).
struct Span {
  std::int64_t lo, hi;
};
/// Narrows `s` to the document holding `position` (packed documents only).
Span within_document(const kernels::MaskRule& rule, std::int64_t position, Span s) {
  if (!rule.documents()) return s;
  const std::int64_t d = rule.document_of(position);
  return Span{std::max(s.lo, rule.doc_bounds[d]), std::min(s.hi, rule.doc_bounds[d + 1] - 1)};
}
Span keys_seen_by(const kernels::MaskRule& rule, std::int64_t q, std::int64_t S) {
  const std::int64_t lo = rule.window > 0 ? std::max<std::int64_t>(0, q - rule.window + 1) : 0;
  return within_document(rule, q, Span{lo, rule.causal ? q : S - 1});
}
Span queries_seeing(const kernels::MaskRule& rule, std::int64_t k, std::int64_t S) {
  // k + window - 1, held at the sequence's end (a window may be any size: the sum could leave int64).
  const std::int64_t hi = rule.window > 0 && rule.window - 1 < S - 1 - k ? k + rule.window - 1 : S - 1;
  return within_document(rule, k, Span{rule.causal ? k : 0, hi});
}
bool sees(const kernels::MaskRule& rule, std::int64_t q, std::int64_t k) {
  return rule.visible(q, k) && (!rule.documents() || rule.document_of(q) == rule.document_of(k)) &&
         (!rule.ranges.on || rule.ranges.visible(q, k));
}

/// `n` indices spread over [0, length): the first, the last and evenly spaced ones between.
std::vector<std::int64_t> evenly_spaced(std::int64_t length, std::int64_t n) {
  std::vector<std::int64_t> r;
  n = std::min(length, std::max<std::int64_t>(n, 1));
  for (std::int64_t k = 0; k < n; ++k) r.push_back(n == 1 ? 0 : k * (length - 1) / (n - 1));
  return r;
}

/// One sampled local row: which batch entry it is read in and where its heads start (query
/// heads `head` and `head + H/2`, K/V head `head`, each modulo the count).
struct Pick {
  std::int64_t row, entry, head;
};

std::vector<Pick> picks_here(const PositionMap& mine, std::int64_t S, const SampledRows& rows, int me) {
  const std::int64_t L = mine.length();
  std::vector<Pick> picks;
  if (rows.positions <= 0) {
    const std::vector<std::int64_t> local = evenly_spaced(L, rows.per_rank);
    for (std::size_t n = 0; n < local.size(); ++n)
      picks.push_back(Pick{local[n], std::int64_t(n), std::int64_t(n) + me});
    return picks;
  }
  const std::vector<std::int64_t> global = evenly_spaced(S, rows.positions);  // increasing
  for (std::int64_t i = 0; i < L; ++i) {
    const auto at = std::lower_bound(global.begin(), global.end(), mine(i));
    if (at == global.end() || *at != mine(i)) continue;
    const std::int64_t n = at - global.begin();
    picks.push_back(Pick{i, n, n});
  }
  return picks;
}

}  // namespace

template <class T>
CheckErrors check_sampled_rows(comm::Communicator& ring, const engine::AttentionConfig& cfg, const PositionMap& mine,
                               Tensor4<const T> out, Tensor3<const float> lse, Tensor4<const T> dq, Tensor4<const T> dk,
                               Tensor4<const T> dv, SampledRows rows, const std::vector<float>& sinks,
                               const std::vector<double>& dsinks) {
  const std::int64_t B = cfg.batch, S = cfg.seq_total, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
  const std::int64_t DV = cfg.dv(), L = mine.length(), group = H / HKV;
  const double scale = kernels::make_params(B, L, S, H, HKV, D, cfg.mask, cfg.softmax_scale).scale();
  // The scaled score of a query and a key, soft-capped as configured, and the cap's slope.
  const double cap = cfg.softcap;
  auto score = [&](const std::vector<double>& qv, const std::vector<double>& kv, double& slope) {
    const double s = scale * dot(qv, kv);
    if (cap <= 0) {
      slope = 1;
      return s;
    }
    const double t = std::tanh(s / cap);
    slope = 1 - t * t;
    return cap * t;
  };
  const int me = ring.rank();
  const std::vector<Pick> picks = picks_here(mine, S, rows, me);
  // Q and K's rows (and a, bk, dK: sums of them) have D values, V's and dO's (and o, dV) DV.
  const std::size_t dn = std::size_t(D), dvn = std::size_t(DV);
  std::vector<double> q(dn), k(dn), v(dvn), dov(dvn), o(dvn), a(dn), bk(dn), dk_ref(dn), dv_ref(dvn);
  // The sizes of the terms each gradient sums (ErrorAndScale::add's magnitude).
  std::vector<double> a_abs(dn), bk_abs(dn), dk_abs(dn);
  ErrorAndScale out_d, lse_d, dq_d, dk_d, dv_d;

  // Query rows: each pick in two heads, spread over the heads (and the K/V heads they read)
  // from rank to rank.
  for (const Pick& pick : picks) {
    const std::int64_t i = pick.row, p = mine(i), b = pick.entry % B;
    const kernels::MaskRule rule = engine::mask_rule(cfg, b);  // batch entry b's (per-sequence documents)
    for (std::int64_t h : {pick.head % H, (pick.head + H / 2) % H}) {
      const std::int64_t g = h / group;
      row_values<T>(TensorId::q, b, p, h, q);
      row_values<T>(TensorId::dout, b, p, h, dov);
      double m = -std::numeric_limits<double>::infinity(), z = 0;
      // A sink is one more term of the denominator, with no value (nothing in o, a or bk).
      if (!sinks.empty() && sinks[std::size_t(h)] > -INFINITY) m = sinks[std::size_t(h)], z = 1;
      std::fill(o.begin(), o.end(), 0.0);
      std::fill(a.begin(), a.end(), 0.0);
      std::fill(bk.begin(), bk.end(), 0.0);
      std::fill(a_abs.begin(), a_abs.end(), 0.0);
      std::fill(bk_abs.begin(), bk_abs.end(), 0.0);
      const Span span = keys_seen_by(rule, p, S);
      for (std::int64_t j = span.lo; j <= span.hi; ++j) {
        if (!sees(rule, p, j)) continue;
        row_values<T>(TensorId::k, b, j, g, k);
        row_values<T>(TensorId::v, b, j, g, v);
        double slope;
        const double s = score(q, k, slope), dov_v = dot(dov, v);
        if (s > m) {
          const double r = std::exp(m - s);  // 0 while nothing was seen
          z *= r;
          for (std::int64_t x = 0; x < DV; ++x) o[x] *= r;
          for (std::int64_t x = 0; x < D; ++x) a[x] *= r, bk[x] *= r, a_abs[x] *= r, bk_abs[x] *= r;
          m = s;
        }
        const double e = std::exp(s - m), es = e * slope;
        z += e;
        for (std::int64_t x = 0; x < DV; ++x) o[x] += e * v[x];
        for (std::int64_t x = 0; x < D; ++x) {
          a[x] += es * dov_v * k[x], bk[x] += es * k[x];
          a_abs[x] += std::abs(es * dov_v * k[x]), bk_abs[x] += std::abs(es * k[x]);
        }
      }
      const bool none = z == 0;
      for (std::int64_t x = 0; x < DV; ++x) o[x] = none ? 0.0 : o[x] / z;
      const double delta = dot(dov, o);
      lse_d.add(lse(b, h, i), none ? -INFINITY : m + std::log(z));
      for (std::int64_t x = 0; x < DV; ++x) out_d.add(to_float(out(b, i, h, x)), o[x]);
      for (std::int64_t x = 0; x < D; ++x)
        dq_d.add(to_float(dq(b, i, h, x)), none ? 0.0 : scale * (a[x] - delta * bk[x]) / z,
                 none ? 0.0 : std::abs(scale) * (a_abs[x] + std::abs(delta) * bk_abs[x]) / z);
      if (H == 1) break;  // the second head would be the first again
    }
  }

  // Key rows need lse and D of every query that sees them: this rank's rows, gathered.
  Tensor3<float> delta_mine("delta_mine", B, H, L);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t h = 0; h < H; ++h) {
        row_values<T>(TensorId::dout, b, mine(i), h, dov);
        double d = 0;
        for (std::int64_t x = 0; x < DV; ++x) d += dov[x] * to_float(out(b, i, h, x));
        delta_mine(b, h, i) = float(d);
      }
  std::vector<float> lse_all(std::size_t(B * H * S)), delta_all(std::size_t(B * H * S));
  allgather_by_position(ring, mine, lse.data(), B, H, lse_all.data(), S);
  allgather_by_position(ring, mine, delta_mine.data(), B, H, delta_all.data(), S);

  for (const Pick& pick : picks) {
    const std::int64_t j = pick.row, p = mine(j), b = pick.entry % B, g = pick.head % HKV;
    const kernels::MaskRule rule = engine::mask_rule(cfg, b);
    row_values<T>(TensorId::k, b, p, g, k);
    row_values<T>(TensorId::v, b, p, g, v);
    std::fill(dk_ref.begin(), dk_ref.end(), 0.0);
    std::fill(dv_ref.begin(), dv_ref.end(), 0.0);
    std::fill(dk_abs.begin(), dk_abs.end(), 0.0);
    const Span span = queries_seeing(rule, p, S);
    for (std::int64_t h = g * group; h < (g + 1) * group; ++h)
      for (std::int64_t i = span.lo; i <= span.hi; ++i) {
        if (!sees(rule, i, p)) continue;
        const std::size_t row = std::size_t((b * H + h) * S + i);
        row_values<T>(TensorId::q, b, i, h, q);
        row_values<T>(TensorId::dout, b, i, h, dov);
        double slope;
        const double pr = std::exp(score(q, k, slope) - double(lse_all[row]));
        const double dov_v = dot(dov, v), ds = pr * (dov_v - double(delta_all[row])) * slope;
        const double ds_abs = pr * (std::abs(dov_v) + std::abs(double(delta_all[row]))) * slope;
        for (std::int64_t x = 0; x < DV; ++x) dv_ref[x] += pr * dov[x];
        for (std::int64_t x = 0; x < D; ++x)
          dk_ref[x] += scale * ds * q[x], dk_abs[x] += std::abs(scale * ds_abs * q[x]);
      }
    for (std::int64_t x = 0; x < D; ++x) dk_d.add(to_float(dk(b, j, g, x)), dk_ref[x], dk_abs[x]);
    for (std::int64_t x = 0; x < DV; ++x) dv_d.add(to_float(dv(b, j, g, x)), dv_ref[x]);
  }

  CheckErrors e;
  if (!sinks.empty()) {
    std::vector<double> part(std::size_t(H), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < L; ++i)
          if (sinks[std::size_t(h)] > -INFINITY)
            part[std::size_t(h)] -=
                std::exp(double(sinks[std::size_t(h)]) - double(lse(b, h, i))) * delta_mine(b, h, i);
    const std::vector<double> ref = comm::sum_in_rank_order(ring, part);
    ErrorAndScale d;
    for (std::size_t h = 0; h < ref.size(); ++h) d.add(h < dsinks.size() ? dsinks[h] : NAN, ref[h]);
    e.dsinks = relative_everywhere(ring, d.pair());
  }
  e.out = relative_everywhere(ring, out_d.pair());
  e.lse = relative_everywhere(ring, {lse_d.err, 1.0});  // lse is compared in absolute terms
  e.dq = relative_everywhere(ring, dq_d.pair());
  e.dk = relative_everywhere(ring, dk_d.pair());
  e.dv = relative_everywhere(ring, dv_d.pair());
  return e;
}

#define RFA_INSTANTIATE_SAMPLED_CHECK(T)                                                                              \
  template CheckErrors check_sampled_rows<T>(comm::Communicator&, const engine::AttentionConfig&, const PositionMap&, \
                                             Tensor4<const T>, Tensor3<const float>, Tensor4<const T>,                \
                                             Tensor4<const T>, Tensor4<const T>, SampledRows,                         \
                                             const std::vector<float>&, const std::vector<double>&);
RFA_INSTANTIATE_SAMPLED_CHECK(float)
RFA_INSTANTIATE_SAMPLED_CHECK(bf16_t)
RFA_INSTANTIATE_SAMPLED_CHECK(fp16_t)

}  // namespace perf
}  // namespace rfa
