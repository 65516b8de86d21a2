// SearchSpace: named parameter distributions, ordered by name.
#pragma once

#include <map>
#include <string>

#include "search/distribution.h"

namespace tune {

using SearchSpace = std::map<std::string, Distribution>;

}  // namespace tune
