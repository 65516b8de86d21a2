#include "search/sampler.h"

namespace tune {

uint64_t TrialSeed(uint64_t seed, int number) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(number) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ParamMap SampleTrial(Sampler& sampler, const SearchSpace& space, const History& history) {
  SearchSpace relative = sampler.RelativeSpace(space, history);
  ParamMap params;
  if (!relative.empty()) params = sampler.SampleRelative(relative, history);
  for (const auto& [name, dist] : space) {
    auto it = params.find(name);
    if (it != params.end() && Contains(dist, it->second)) continue;
    params[name] = sampler.SampleIndependent(name, dist, history);
  }
  // Drop anything the sampler returned that is not in the space.
  for (auto it = params.begin(); it != params.end();) {
    it = space.count(it->first) ? std::next(it) : params.erase(it);
  }
  return params;
}

}  // namespace tune
