#include "search/grid.h"

namespace tune {

Result<std::vector<ParamMap>> GridPoints(const SearchSpace& space, bool all_discrete,
                                         size_t max_points) {
  std::vector<std::pair<std::string, const Distribution*>> axes;
  size_t total = 1;
  for (const auto& [name, dist] : space) {
    auto* c = std::get_if<CategoricalDistribution>(&dist);
    bool is_axis = all_discrete || (c && c->grid);
    if (!is_axis) continue;
    auto n = Cardinality(dist);
    if (!n) {
      return Status::InvalidArgument("parameter '" + name + "' is continuous (" + Describe(dist) +
                                     "); grid search needs choice, grid, int or quantized parameters");
    }
    if (*n <= 0) return Status::InvalidArgument("parameter '" + name + "' has no values");
    if (total > max_points / static_cast<size_t>(*n)) {
      return Status::InvalidArgument("the grid has more than " + std::to_string(max_points) + " points");
    }
    total *= static_cast<size_t>(*n);
    axes.emplace_back(name, &dist);
  }
  std::vector<ParamMap> points;
  points.reserve(total);
  for (size_t p = 0; p < total; ++p) {
    ParamMap point;
    size_t rest = p;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {  // last axis varies fastest
      auto n = static_cast<size_t>(*Cardinality(*it->second));
      point[it->first] = NthValue(*it->second, static_cast<int64_t>(rest % n));
      rest /= n;
    }
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace tune
