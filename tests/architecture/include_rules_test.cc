// The module dependency order of docs/architecture.md (section 1), read off
// the source tree: every project #include of a module's file names the
// module itself or one it may depend on. A new folder of sources fails the
// test until it is given its place here and in the document.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// What each module may include besides itself (its own folder). Lower
// layers first; an arrow never points up.
const std::map<std::string, std::set<std::string>>& Allowed() {
  static const std::map<std::string, std::set<std::string>> kAllowed = {
      {"core", {}},
      {"storage", {"core"}},
      {"search", {"core"}},
      // PBT explores parameters within their distributions and resamples
      // them (search/distribution.h, search_space.h, random_sampler.h).
      {"schedulers", {"core", "search"}},
      {"trial_runner", {"core"}},
      {"tracking", {"core", "storage"}},
      {"k8s", {"core", "trial_runner"}},
      // spec/ maps experiment.json onto each module's options: it may include
      // only their small options headers (kSpecHeaders), nothing else of them.
      {"spec", {"core"}},
      {"import", {"core"}},
      {"dashboard", {"core", "storage", "spec", "search", "schedulers"}},
      {"tuner", {"core", "storage", "spec", "import", "search", "schedulers", "trial_runner", "tracking", "k8s",
                 "dashboard"}},
      {"trainer", {"core"}},
      {"experiments", {"core"}},
  };
  return kAllowed;
}

// The other modules' headers spec/ may include: their options, the search
// space it builds, and the rules a module gives for what the spec may hold
// (an MLflow tracking URI, metric keys MLflow takes, a database URL, a
// Secret reference).
const std::set<std::string> kSpecHeaders = {"k8s/kubernetes_options.h", "search/search_space.h",
                                            "search/tpe_options.h", "search/gp_options.h", "search/nsga2_options.h", "schedulers/asha_options.h",
                                            "schedulers/median_stopping_options.h", "schedulers/pbt_options.h",
                                            "tracking/mlflow_uri.h", "tracking/mlflow_keys.h", "storage/database_url.h",
                                            "trial_runner/secret_key_ref.h"};

// Folders that are not product modules: they may include anything.
const std::set<std::string> kFree = {"tests", "bench", "fuzz", "build", "docs", "scripts", "python"};

// Project includes ("a/b.h", never <...>) of one file.
std::vector<std::string> ProjectIncludes(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  static const std::regex kInclude(R"(^\s*#\s*include\s+"([^"]+)\")");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kInclude)) out.push_back(m[1]);
  }
  return out;
}

bool IsSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cc" || ext == ".h" || ext == ".cu";
}

// The module of a source file: its top folder under the source tree.
std::string ModuleOf(const fs::path& rel) { return rel.begin()->string(); }

}  // namespace

TEST_CASE("include rules: every module includes only itself and what lies below it",
          "[architecture]") {
  const fs::path root = TUNE_SOURCE_DIR;
  std::vector<std::string> violations;
  std::set<std::string> unknown;
  size_t files = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    const std::string top = rel.begin()->string();
    if (it->is_directory() && (top.starts_with(".") || top.starts_with("build") || kFree.count(top))) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !IsSource(rel) || !rel.has_parent_path()) continue;
    const std::string module = ModuleOf(rel);
    auto allowed = Allowed().find(module);
    if (allowed == Allowed().end()) {
      unknown.insert(module);
      continue;
    }
    ++files;
    for (const std::string& inc : ProjectIncludes(it->path())) {
      const size_t slash = inc.find('/');
      if (slash == std::string::npos) continue;  // a sibling header, or a system one in quotes
      const std::string target = inc.substr(0, slash);
      if (!Allowed().count(target) || target == module) continue;
      const bool ok = allowed->second.count(target) || (module == "spec" && kSpecHeaders.count(inc));
      if (!ok) violations.push_back(rel.string() + " includes " + inc);
    }
  }
  INFO("modules without a place in the dependency order: " << unknown.size());
  for (const std::string& m : unknown) UNSCOPED_INFO("  " << m);
  CHECK(unknown.empty());
  CHECK(files > 100);
  std::ostringstream all;
  for (const std::string& v : violations) all << "\n  " << v;
  INFO("includes against the dependency order:" << all.str());
  CHECK(violations.empty());
}

TEST_CASE("include rules: the checker sees a wrong-way include", "[architecture]") {
  // The rule table itself: a lower module including a higher one is refused.
  CHECK_FALSE(Allowed().at("core").count("storage"));
  CHECK_FALSE(Allowed().at("storage").count("tuner"));
  CHECK_FALSE(Allowed().at("dashboard").count("tuner"));
  CHECK_FALSE(Allowed().at("trainer").count("tuner"));
  // And the reader finds includes in a real file of the tree.
  const auto incs = ProjectIncludes(fs::path(TUNE_SOURCE_DIR) / "storage" / "storage.h");
  CHECK(std::find(incs.begin(), incs.end(), "core/status.h") != incs.end());
}
