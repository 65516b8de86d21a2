#include "dashboard/report_page.h"

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "dashboard/assets.h"

namespace tune {
namespace {

// Replaces the one occurrence of `tag` in `page` by `with`; false if absent.
bool ReplaceOnce(std::string& page, const std::string& tag, const std::string& with) {
  size_t at = page.find(tag);
  if (at == std::string::npos) return false;
  page.replace(at, tag.size(), with);
  return true;
}

}  // namespace

std::string ScriptSafe(std::string text) {
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) {
    text.replace(at, 2, "<\\/");
  }
  // "<!--" inside a script would switch the HTML parser into its escaped state.
  for (size_t at = text.find("<!--"); at != std::string::npos; at = text.find("<!--", at + 5)) {
    text.replace(at, 4, "<\\!--");
  }
  return text;
}

Result<std::string> ReportPage(DashboardData& data, const std::string& experiment, int log_lines) {
  using Json = nlohmann::ordered_json;
  TUNE_ASSIGN_OR_RETURN(std::string exp_text, data.Experiment(experiment));
  TUNE_ASSIGN_OR_RETURN(std::string list_text, data.Experiments());
  Json exp = Json::parse(exp_text);
  Json list = Json::array();
  for (Json& e : Json::parse(list_text)) {
    if (e["name"] == experiment) list.push_back(std::move(e));
  }
  TUNE_ASSIGN_OR_RETURN(std::string trials_text, data.AllTrialDetails(experiment, log_lines));
  Json trials = Json::parse(trials_text);
  Json doc{{"experiments", list}, {"experiment", exp}, {"trials", trials}};
  std::string page(DashboardAsset("index.html"));
  auto inline_script = [](std::string_view name) {
    return "<script>" + ScriptSafe(std::string(DashboardAsset(name))) + "</script>";
  };
  const std::string data_script =
      "<script>window.TUNE_REPORT = " +
      ScriptSafe(DumpJson(doc)) + ";</script>\n";
  bool ok = ReplaceOnce(page, "<script src=\"chart.min.js\"></script>", data_script + inline_script("chart.min.js")) &&
            ReplaceOnce(page, "<script src=\"dashboard.js\"></script>", inline_script("dashboard.js")) &&
            ReplaceOnce(page, "<link rel=\"stylesheet\" href=\"dashboard.css\">",
                        "<style>" + std::string(DashboardAsset("dashboard.css")) + "</style>");
  if (!ok) return Status::Internal("the embedded page lacks the script or style tags the report replaces");
  return page;
}

}  // namespace tune
