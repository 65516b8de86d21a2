// Grid enumeration: the cross product of the `grid` parameters (or, for
// search.algorithm "grid", of every discrete parameter).
#pragma once

#include <vector>

#include "core/status.h"
#include "search/search_space.h"

namespace tune {

// Points of the cross product of every CategoricalDistribution with grid=true
// in `space` (all_discrete=false), or of every parameter with a finite
// Cardinality (all_discrete=true, for algorithm "grid"; a continuous
// parameter is then an error). Ordered with the first parameter (by name)
// varying slowest. An empty grid yields one empty point.
// Fails if the product exceeds `max_points`.
Result<std::vector<ParamMap>> GridPoints(const SearchSpace& space, bool all_discrete,
                                         size_t max_points = 10'000'000);

}  // namespace tune
