// cpu-tree (tree.hpp): the build's stages, then the group walk.
#include "tree.hpp"

#include <numeric>
#include <stdexcept>

#include "morton.hpp"
#include "parallel.hpp"
#include "stage_clock.hpp"

namespace orrery {

void check_tree_parameters(double softening, double theta, std::size_t leaf_capacity, std::size_t group_capacity) {
  if (!(softening >= 0.0)) throw std::invalid_argument("softening must be >= 0");
  if (!(theta >= 0.0)) throw std::invalid_argument("theta must be >= 0");
  if (leaf_capacity < 1) throw std::invalid_argument("leaf_capacity must be >= 1");
  if (group_capacity < 1) throw std::invalid_argument("group_capacity must be >= 1");
}

template <typename T>
void TreeEngine<T>::build(const T* pos, const T* mass, std::size_t n, std::size_t leaf_capacity, double theta,
                          bool quadrupole, unsigned threads) {
  // 32-bit particle and node indices (ADR-0010): a tree has fewer than 2N nodes.
  if (n >= (std::size_t(1) << 31)) throw std::invalid_argument("cpu-tree holds fewer than 2^31 particles");
  auto start = StageClock::now();
  tree_.cube = bounding_cube(pos, n);
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0u);
  keys_.resize(n);
  morton_keys(pos, n, tree_.cube, keys_.data(), threads);
  sort_keys(keys_, order_, key_scratch_, order_scratch_, threads);
  gather_sorted(pos, mass, order_.data(), n, threads, sorted_);
  stages_.sort = seconds_since(start);

  start = StageClock::now();
  build_topology(keys_.data(), n, leaf_capacity, tree_);
  stages_.build = seconds_since(start);

  start = StageClock::now();
  compute_moments(sorted_.x.data(), sorted_.y.data(), sorted_.z.data(), sorted_.m.data(), theta, quadrupole,
                  threads, tree_);
  stages_.moments = seconds_since(start);
}

template <typename T>
void TreeEngine<T>::evaluate(const T* pos, const T* mass, std::size_t n, double softening, double theta,
                             bool quadrupole, std::size_t leaf_capacity, std::size_t group_capacity, unsigned threads,
                             const SimdKernels& kernels, T* acc, T* pot) {
  build(pos, mass, n, leaf_capacity, theta, quadrupole, threads);
  auto start = StageClock::now();
  counts_ = walk_tree(tree_, sorted_, order_.data(), static_cast<T>(softening * softening), quadrupole,
                      group_capacity, threads, kernels, acc, pot);
  stages_.walk = seconds_since(start);
  n_ = n;
}

template class TreeEngine<float>;
template class TreeEngine<double>;

}  // namespace orrery
