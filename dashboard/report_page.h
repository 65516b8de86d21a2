// `tune report`: the dashboard's page for one experiment as one HTML file,
// with Chart.js, the page's script and style, and the data (what /api would
// answer for the experiment and each of its trials) inlined, so that it
// opens offline without a server.
#pragma once

#include <string>

#include "core/status.h"
#include "dashboard/dashboard_data.h"

namespace tune {

// The report's HTML text. NotFound if there is no such experiment. Each
// trial carries the last `log_lines` lines of each rank's log.
Result<std::string> ReportPage(DashboardData& data, const std::string& experiment, int log_lines = 20);

// `text` to be placed inside <script>...</script>: every "</" becomes "<\/"
// so that nothing in it can end the script element (in JSON, and in string
// and regular-expression literals of scripts, "<\/" means "</").
std::string ScriptSafe(std::string text);

}  // namespace tune
