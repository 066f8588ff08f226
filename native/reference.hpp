// Reference gravity: direct summation in double precision with Neumaier-compensated sums, one
// particle per task. Slow on purpose (scalar, no approximations); every other solver is measured
// against it.
#pragma once

#include <cstddef>

namespace orrery {

// Softened accelerations acc (n, 3) and, where pot is not null, potentials pot (n,) of the n
// particles pos (n, 3) with masses mass (G = 1); threads = 0 uses every hardware thread.
void reference_accelerations(const double* pos, const double* mass, std::size_t n, double softening,
                             unsigned threads, double* acc, double* pot);

}  // namespace orrery
