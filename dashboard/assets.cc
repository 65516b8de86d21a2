#include "dashboard/assets.h"

namespace tune {

const char* DashboardAssetType(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  // Not text/javascript: cpp-httplib would compress it with Brotli at its
  // highest quality on every request (about a second for Chart.js).
  if (ends(".js")) return "application/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace tune
