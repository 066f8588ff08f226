// The neighbour loop of all three searches, written once over the lane traits of
// flock_lanes.hpp and compiled per instruction set (simd_*.cpp). Lanes take consecutive
// neighbours of a cell run: contiguous after the gather (coherent; the naive search has one
// run, every boid), or gathered through the index array (scattered); masked lanes add zero.
//
// Exactness, hence the same bits on every level: the lanes keep float32 partial sums of
// offsets and velocities, which are multiples of their quanta, and add them into the float64
// sums (float64 lanes, reduced once per boid) every kFlushEvery terms per lane, before a partial sum could leave float32's 24 bits
// (see _quantum in engine/flock/_parameters.py). The boid itself is visited like any neighbour
// (its offset is 0) and its velocity and counts are taken back out afterwards, exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "flock_grid.hpp"
#include "flock_rules.hpp"

namespace orrery {

constexpr int kFlushEvery = 16;

// Scattered: boids [begin, end) in index order, neighbours gathered from the (n, 3) arrays
// through the sorted index array; otherwise sorted boids [begin, end), neighbours loaded from
// the gathered copies.
template <class L, bool Scattered>
void flock_blocks(const FlockLoopInput& in, std::size_t begin, std::size_t end) {
  using V = typename L::V;
  using M = typename L::M;
  const FlockConstants& c = in.constants;
  const V world = L::set1(c.world), half = L::set1(c.half_world), low = L::set1(-c.half_world);
  const V separation2 = L::set1(c.separation_radius2), alignment2 = L::set1(c.alignment_radius2),
          cohesion2 = L::set1(c.cohesion_radius2);
  CellRun runs[27];
  int count = in.all_pairs ? 1 : 0;
  int codes[3] = {-1, -1, -1};  // the axis codes the runs were made for
  for (std::size_t k = begin; k < end; ++k) {
    const float p[3] = {Scattered ? in.pos[3 * k] : in.x[k], Scattered ? in.pos[3 * k + 1] : in.y[k],
                        Scattered ? in.pos[3 * k + 2] : in.z[k]};
    const float v[3] = {Scattered ? in.vel[3 * k] : in.vx[k], Scattered ? in.vel[3 * k + 1] : in.vy[k],
                        Scattered ? in.vel[3 * k + 2] : in.vz[k]};
    const V xi = L::set1(p[0]), yi = L::set1(p[1]), zi = L::set1(p[2]);
    FlockSums s;
    V sep[3], coh[3], ali[3];
    typename L::W wide[9];
    for (auto& w : wide) w = L::wide_zero();
    auto clear = [&] {
      for (int a = 0; a < 3; ++a) sep[a] = coh[a] = ali[a] = L::zero();
    };
    auto flush = [&] {
      for (int a = 0; a < 3; ++a) {
        wide[a] = L::widen_add(wide[a], sep[a]);
        wide[3 + a] = L::widen_add(wide[3 + a], coh[a]);
        wide[6 + a] = L::widen_add(wide[6 + a], ali[a]);
      }
      clear();
    };
    auto image = [&](V d) {
      d = L::select(L::less(half, d), L::sub(d, world), d);
      return L::select(L::less(d, low), L::add(d, world), d);
    };
    clear();
    int terms = 0;
    // Away from the faces (grids of 5 or more cells a side) every visited cell is within one
    // cell of the boid's own without wrapping, so an offset is under half the world and its
    // nearest image is itself (flock.cl, near_face).
    bool wrap = true;
    if (!in.all_pairs) {
      const int now[3] = {axis_code(p[0], c, in.cell_width), axis_code(p[1], c, in.cell_width),
                          axis_code(p[2], c, in.cell_width)};
      if (now[0] != codes[0] || now[1] != codes[1] || now[2] != codes[2]) {
        count = visit_cells(c, in.cell_width, now[0], now[1], now[2], runs);
        for (int a = 0; a < 3; ++a) codes[a] = now[a];
      }
      wrap = c.grid < 5;
      for (int a = 0; a < 3; ++a) wrap = wrap || (now[a] >> 1) < 1 || (now[a] >> 1) > c.grid - 2;
    }
    for (int r = 0; r < count; ++r) {
      const std::size_t last = in.all_pairs ? in.n : in.start[runs[r].end_cell];
      const std::size_t first = in.all_pairs ? 0 : in.start[runs[r].first_cell];
      for (std::size_t j = first; j < last; j += L::lanes) {
        const M live = L::first(last - j);
        V xj, yj, zj, vxj, vyj, vzj;
        if constexpr (Scattered) {
          const typename L::I rows = L::load_rows(in.order + j, live);
          xj = L::gather(in.pos, rows, live), yj = L::gather(in.pos + 1, rows, live);
          zj = L::gather(in.pos + 2, rows, live);
          vxj = L::gather(in.vel, rows, live), vyj = L::gather(in.vel + 1, rows, live);
          vzj = L::gather(in.vel + 2, rows, live);
        } else {
          xj = L::load(in.x + j), yj = L::load(in.y + j), zj = L::load(in.z + j);
          vxj = L::load(in.vx + j), vyj = L::load(in.vy + j), vzj = L::load(in.vz + j);
        }
        V dx = L::sub(xj, xi), dy = L::sub(yj, yi), dz = L::sub(zj, zi);
        if (wrap) dx = image(dx), dy = image(dy), dz = image(dz);
        const V r2 = L::add(L::add(L::mul(dx, dx), L::mul(dy, dy)), L::mul(dz, dz));
        const M ms = L::both(live, L::less(r2, separation2));
        const M mc = L::both(live, L::less(r2, cohesion2));
        const M ma = L::both(live, L::less(r2, alignment2));
        sep[0] = L::add(sep[0], L::keep(ms, dx));
        sep[1] = L::add(sep[1], L::keep(ms, dy));
        sep[2] = L::add(sep[2], L::keep(ms, dz));
        coh[0] = L::add(coh[0], L::keep(mc, dx));
        coh[1] = L::add(coh[1], L::keep(mc, dy));
        coh[2] = L::add(coh[2], L::keep(mc, dz));
        ali[0] = L::add(ali[0], L::keep(ma, vxj));
        ali[1] = L::add(ali[1], L::keep(ma, vyj));
        ali[2] = L::add(ali[2], L::keep(ma, vzj));
        s.cohesion_count += L::count(mc);
        s.alignment_count += L::count(ma);
        if (++terms == kFlushEvery) {
          flush();
          terms = 0;
        }
      }
    }
    flush();
    for (int a = 0; a < 3; ++a) {
      s.separation[a] = L::total(wide[a]);
      s.cohesion[a] = L::total(wide[3 + a]);
      s.alignment[a] = L::total(wide[6 + a]);
    }
    // Take the boid itself back out: it met every rule whose radius is positive (r2 = 0).
    if (0.0f < c.alignment_radius2) {
      for (int a = 0; a < 3; ++a) s.alignment[a] -= double(v[a]);
      --s.alignment_count;
    }
    if (0.0f < c.cohesion_radius2) --s.cohesion_count;
    const std::size_t i = Scattered ? k : in.order[k];
    finish(s, c, p, v, in.pos_out + 3 * i, in.vel_out + 3 * i);
  }
}

}  // namespace orrery
