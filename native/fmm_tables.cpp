// The index tables of fmm_expansions.hpp, built once per order.
#include <stdexcept>
#include <string>

#include "fmm_expansions.hpp"
#include "fmm_static_tables.hpp"

namespace orrery {
namespace {

// The M2L kernels of orders up to kFmmStaticMaxOrder read compile-time copies of these tables:
// they must be the same tables.
template <int P>
bool same_as_static(const FmmTables& tb) {
  const auto& st = kFmmStaticTables<P>;
  if (tb.terms != FmmStaticTables<P>::terms || int(tb.pair_n.size()) != FmmStaticTables<P>::pairs) return false;
  for (int q = 0; q < tb.terms; ++q) {
    if (tb.nx[q] != st.n[0][q] || tb.ny[q] != st.n[1][q] || tb.nz[q] != st.n[2][q]) return false;
    if (tb.factorial[q] != st.factorial[q] || tb.recurrence_first[q] != st.recurrence_first[q] ||
        tb.recurrence_second[q] != st.recurrence_second[q])
      return false;
    for (int i = 0; i < 3; ++i)
      if (tb.minus_one[i][q] != st.minus_one[i][q] || tb.minus_two[i][q] != st.minus_two[i][q]) return false;
  }
  for (int k = 0; k <= tb.terms; ++k)
    if (tb.pair_start[k] != st.pair_start[k]) return false;
  for (std::size_t q = 0; q < tb.pair_n.size(); ++q)
    if (tb.pair_n[q] != st.pair_n[q] || tb.pair_sum[q] != st.pair_sum[q]) return false;
  return true;
}

bool matches_static_tables(const FmmTables& tb) {
  switch (tb.order) {
    case 1: return same_as_static<1>(tb);
    case 2: return same_as_static<2>(tb);
    case 3: return same_as_static<3>(tb);
    case 4: return same_as_static<4>(tb);
    case 5: return same_as_static<5>(tb);
    case 6: return same_as_static<6>(tb);
    case 7: return same_as_static<7>(tb);
    default: return true;
  }
}

}  // namespace

int FmmTables::index(int x, int y, int z) const {
  // Terms of degree < d come first; within degree d the term (x, y, z) follows every term with
  // a larger x, and among equal x those with a larger y.
  const int d = x + y + z;
  const int before = d * (d + 1) * (d + 2) / 6;
  const int larger_x = (d - x) * (d - x + 1) / 2;  // terms of degree d with nx > x
  return before + larger_x + (d - x - y);
}

FmmTables fmm_tables(int order) {
  if (order < 1 || order > kFmmMaxOrder)
    throw std::invalid_argument("FMM order must be between 1 and " + std::to_string(kFmmMaxOrder));
  FmmTables tb;
  tb.order = order;
  tb.terms = fmm_terms(order);
  for (int d = 0; d <= order; ++d)
    for (int x = d; x >= 0; --x)
      for (int y = d - x; y >= 0; --y) {
        tb.nx.push_back(x);
        tb.ny.push_back(y);
        tb.nz.push_back(d - x - y);
      }
  const int terms = tb.terms;
  auto term = [&](int q, int axis) { return axis == 0 ? tb.nx[q] : axis == 1 ? tb.ny[q] : tb.nz[q]; };
  auto shifted = [&](int q, int axis, int by) {
    int n[3] = {tb.nx[q], tb.ny[q], tb.nz[q]};
    n[axis] += by;
    if (n[axis] < 0) return -1;
    return tb.index(n[0], n[1], n[2]);
  };
  tb.mono_parent.assign(terms, 0);
  tb.mono_axis.assign(terms, 0);
  tb.mono_scale.assign(terms, 1.0);
  tb.factorial.assign(terms, 1.0);
  tb.recurrence_first.assign(terms, 0.0);
  tb.recurrence_second.assign(terms, 0.0);
  for (int i = 0; i < 3; ++i) {
    tb.minus_one[i].assign(terms, -1);
    tb.minus_two[i].assign(terms, -1);
  }
  for (int q = 0; q < terms; ++q) {
    if (tb.index(tb.nx[q], tb.ny[q], tb.nz[q]) != q) throw std::logic_error("FMM term numbering");
    for (int i = 0; i < 3; ++i) {
      for (int f = 2; f <= term(q, i); ++f) tb.factorial[q] *= f;
      tb.minus_one[i][q] = shifted(q, i, -1);
      tb.minus_two[i][q] = shifted(q, i, -2);
    }
    if (q == 0) continue;
    const double degree = tb.nx[q] + tb.ny[q] + tb.nz[q];
    tb.recurrence_first[q] = (2.0 * degree - 1.0) / degree;
    tb.recurrence_second[q] = (degree - 1.0) / degree;
    const int axis = tb.nx[q] > 0 ? 0 : tb.ny[q] > 0 ? 1 : 2;
    tb.mono_parent[q] = shifted(q, axis, -1);
    tb.mono_axis[q] = axis;
    tb.mono_scale[q] = 1.0 / term(q, axis);
  }
  tb.pair_start.push_back(0);
  for (int k = 0; k < terms; ++k) {
    const int dk = tb.nx[k] + tb.ny[k] + tb.nz[k];
    for (int n = 0; n < fmm_terms(order - dk); ++n) {
      tb.pair_n.push_back(n);
      tb.pair_sum.push_back(tb.index(tb.nx[k] + tb.nx[n], tb.ny[k] + tb.ny[n], tb.nz[k] + tb.nz[n]));
    }
    tb.pair_start.push_back(static_cast<std::int32_t>(tb.pair_n.size()));
  }
  tb.gradient_terms = fmm_terms(order - 1);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < tb.gradient_terms; ++k) tb.plus_one[i].push_back(shifted(k, i, +1));
  if (!matches_static_tables(tb)) throw std::logic_error("FMM static tables differ from fmm_tables()");
  return tb;
}

}  // namespace orrery
