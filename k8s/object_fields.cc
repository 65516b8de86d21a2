#include "k8s/object_fields.h"

namespace tune::k8s_object {

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Path(const json& j, std::initializer_list<const char*> keys) {
  static const json kNull;
  const json* cur = &j;
  for (const char* k : keys) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(k);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

const json& Metadata(const json& obj) { return obj.at("metadata"); }

const json& LabelsOf(const json& obj) {
  static const json kEmpty = json::object();
  const json& l = Path(obj, {"metadata", "labels"});
  return l.is_object() ? l : kEmpty;
}

const json& AnnotationsOf(const json& obj) {
  static const json kEmpty = json::object();
  const json& a = Path(obj, {"metadata", "annotations"});
  return a.is_object() ? a : kEmpty;
}

bool Deleting(const json& obj) { return !Path(obj, {"metadata", "deletionTimestamp"}).is_null(); }

}  // namespace tune::k8s_object
