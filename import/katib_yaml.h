// Internal to tune_import (katib_*.cc): reading a Katib YAML document while
// keeping the YAML path and line of every value, so that every error is one
// sentence "<file>: line <n>: <yaml.path>: expected <what>, got <what>", and
// collecting the notes about fields that are not carried over.
//
// Not a public header: it includes yaml-cpp and nlohmann/json, which
// tune_import links PRIVATE.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace tune {
namespace katib_internal {

// Key order is kept, so that the output reads in the order docs/experiment.md documents the keys.
using Json = nlohmann::ordered_json;

// "spec" + "objective" -> "spec.objective"; "x" + 2 -> "x[2]".
std::string Child(const std::string& path, const std::string& key);
std::string Index(const std::string& path, size_t i);
// A short form of a node for "got ...": "cmaes" (quoted), a list, a map,
// nothing.
std::string Show(const YAML::Node& n);

// User text inside a message, kept to one line: JSON-quoted, cut when long.
std::string Quote(const std::string& s);
// A name inside a message: as it is when made of letters, digits and
// `_.-/:`, else Quote(s).
std::string Word(const std::string& s);

// Checks that `text` is YAML text: UTF-8 of printable characters (YAML
// 1.2's c-printable: tab, line breaks, U+0020-U+007E, U+0085,
// U+00A0-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF). Otherwise
// InvalidArgument "<path>: line <n>, column <m>: expected YAML text ...".
Status CheckText(const std::string& text, const std::string& path);
// The line (1-based) of a "---" marker that starts a second document, or
// 0. A line beginning with "---" and a space or its end is a document
// marker wherever it stands, even inside a scalar (YAML 1.2, 9.1).
int SecondDocumentLine(const std::string& text);
// A yaml-cpp message on one line: control characters as \xNN (it may
// quote the offending character, e.g. a line break).
std::string OneLine(const std::string& msg);

// Checks the loaded document against kKatibMaxNodes, kKatibMaxTextBytes
// and kKatibMaxDepth (katib_import.h), walking it as the conversion does:
// each alias (*name) as a copy of the node it names. yaml-cpp shares an
// aliased node instead of copying it, so a small file can name a huge tree
// ("billion laughs"), or a node can hold itself (`volumes: &v [*v]`) and
// a walk never end. Errors are InvalidArgument, one sentence:
//   "<file>: line <n>: <path>: expected a value, got an alias to <path>, which holds it"
//   "<file>: line <n>: <path>: expected at most 100000 nodes with aliases expanded, got more"
// After an OK, every walk of the document (Ctx::ToJson) ends, and within
// these limits. Stops at the first limit crossed: costs at most about
// kKatibMaxNodes * kKatibMaxDepth steps.
Status CheckExpansion(const YAML::Node& doc, const std::string& file);

// The value under `key` of a map node; an undefined node when `map` is not
// a map or has no such key. A YAML null (`key:` with nothing after it)
// counts as absent.
YAML::Node Get(const YAML::Node& map, const std::string& key);
bool Present(const YAML::Node& n);

// The converted document's errors and notes.
class Ctx {
 public:
  explicit Ctx(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }

  // InvalidArgument "<file>: line <n>: <path>: expected <expected>, got <got>";
  // the line is `at`'s (left out when unknown).
  Status Fail(const YAML::Node& at, const std::string& path, const std::string& expected,
              const std::string& got) const;
  Status FailNode(const YAML::Node& at, const std::string& path, const std::string& expected) const {
    return Fail(at, path, expected, Show(at));
  }
  // For a key missing from map `parent`.
  Status Missing(const YAML::Node& parent, const std::string& path, const std::string& expected) const {
    return Fail(parent, path, expected, "nothing (the key is missing)");
  }

  // Records "<path>: <what>".
  void Note(const std::string& path, const std::string& what) { notes_.push_back(path + ": " + what); }
  // Notes every key of map `m` (at `path`) that is not in `handled`, with
  // the reason from `why` or "not carried over (tune has no counterpart)".
  void NoteOthers(const YAML::Node& m, const std::string& path, const std::set<std::string>& handled,
                  const std::map<std::string, std::string>& why = {});
  std::vector<std::string> TakeNotes() { return std::move(notes_); }

  // Typed readers of scalars. Katib writes numbers as strings ("0.01") as
  // well as plain YAML numbers; both are accepted.
  Status Map(const YAML::Node& n, const std::string& path) const;
  Status Seq(const YAML::Node& n, const std::string& path) const;
  Status String(const YAML::Node& n, const std::string& path, std::string* out) const;
  Status Number(const YAML::Node& n, const std::string& path, double* out) const;
  Status Integer(const YAML::Node& n, const std::string& path, int64_t* out) const;

  // A YAML subtree as JSON (for pod fields passed to Kubernetes as they
  // are): plain scalars resolve as YAML 1.2's core schema (null, booleans,
  // integers, floats, else strings); quoted ones stay strings.
  static Json ToJson(const YAML::Node& n);

 private:
  std::string file_;
  std::vector<std::string> notes_;
};

// Applies YAML merge keys as kubectl reads them (yaml-cpp keeps `<<` as an
// ordinary key): a map with `<<: *base` or `<<: [*a, *b]` gets each key of
// the merged maps that it does not have itself (an earlier map in the list
// wins), and loses the `<<` key. Changes the document in place; a merged
// map is changed wherever it is aliased. Call after CheckExpansion, which
// bounds the walk; merging never adds nodes to the expanded document.
// Error: "<file>: line <n>: <path>: expected a map or a list of maps to
// merge, got ..." (through `ctx`).
Status ExpandMerges(const Ctx& ctx, const YAML::Node& n, const std::string& path);

// The sections, one file each (katib_<section>.cc).
// spec.trialTemplate -> `trial` and `backend` (filled in, not replaced).
// `params` maps each Katib parameter name to its experiment.json name;
// `namespace_` is the Experiment's (for ${trialSpec.Namespace}).
Status ConvertTrialTemplate(Ctx& ctx, const YAML::Node& tt, const std::string& path,
                            const std::map<std::string, std::string>& params, const std::string& namespace_,
                            Json* trial, Json* backend);

// spec.algorithm of algorithmName pbt (katib_pbt.cc): its settings as a
// pbt `scheduler` (replaced), limits.max_trials = n_population (set in
// `limits`), with a "warning:" note for each difference from Katib's
// generational PBT. Refuses spec.earlyStopping alongside.
Status ConvertPbt(Ctx& ctx, const YAML::Node& spec, Json* scheduler, Json* limits);

}  // namespace katib_internal
}  // namespace tune
