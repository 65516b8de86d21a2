// The dashboard page's files (dashboard/web/ and Debian's Chart.js),
// compiled into the binary at build time (dashboard/embed_assets.cmake), so
// `tune` serves and writes the page offline and stays one file.
#pragma once

#include <string_view>

namespace tune {

// The file's bytes, or an empty view for a name that is not an asset.
// Names: "index.html", "dashboard.js", "dashboard.css", "chart.min.js".
std::string_view DashboardAsset(std::string_view name);

// Its Content-Type ("text/html; charset=utf-8", ...), by extension.
const char* DashboardAssetType(std::string_view name);

}  // namespace tune
