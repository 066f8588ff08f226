// What the Python bindings share: shape checks (the Python layer validates values: NaN, negative mass;
// these guard the native code against arrays of the wrong shape or layout), the result arrays of
// a force call, and numpy copies of vectors.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace orrery {

namespace py = pybind11;

template <typename T>
using CArray = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
std::size_t check_positions_and_masses(const CArray<T>& pos, const CArray<T>& mass) {
  if (pos.ndim() != 2 || pos.shape(1) != 3)
    throw std::invalid_argument("positions must have shape (n, 3)");
  if (mass.ndim() != 1 || mass.shape(0) != pos.shape(0))
    throw std::invalid_argument("masses must have shape (n,), matching positions");
  return static_cast<std::size_t>(pos.shape(0));
}

// What a force binding returns, (n, 3) accelerations and (n,) potentials or None:
// `compute(a, phi)` fills them with the GIL released (phi is null without potentials).
template <typename T, typename Compute>
py::tuple forces(std::size_t n, bool want_potential, Compute&& compute) {
  CArray<T> acc({n, std::size_t(3)});
  CArray<T> pot(want_potential ? n : 0);
  T* a = acc.mutable_data();
  T* phi = want_potential ? pot.mutable_data() : nullptr;
  {
    py::gil_scoped_release release;
    compute(a, phi);
  }
  return py::make_tuple(acc, want_potential ? py::object(pot) : py::object(py::none()));
}

// A numpy copy of a vector (tables and lists the bindings hand to Python for inspection).
template <typename V>
py::array_t<V> copy_vector(const std::vector<V>& v) {
  py::array_t<V> out(v.size());
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

}  // namespace orrery
