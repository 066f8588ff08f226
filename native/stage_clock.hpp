// Wall-clock seconds of a solver's stages (sort, build, walk, ...), which its binding reports.
#pragma once

#include <chrono>

namespace orrery {

using StageClock = std::chrono::steady_clock;

inline double seconds_since(StageClock::time_point start) {
  return std::chrono::duration<double>(StageClock::now() - start).count();
}

}  // namespace orrery
