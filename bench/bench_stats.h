// Small statistics shared by the bench programs.
#pragma once

#include <algorithm>
#include <vector>

namespace carton::bench {

// The middle value (the upper one of an even count); `v` must not be empty.
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace carton::bench
