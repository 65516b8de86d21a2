// Reading fields of Kubernetes objects as `kubectl get -o json` prints them,
// without throwing on a field that is missing or of another type. Internal
// to tune_k8s; pure functions, thread-safe.
#pragma once

#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

namespace tune::k8s_object {

using nlohmann::json;

// j[key] if `j` is an object holding a string there, else "".
std::string Str(const json& j, const char* key);

// j[keys[0]][keys[1]]...; null if one is missing or not an object.
const json& Path(const json& j, std::initializer_list<const char*> keys);

// An object's metadata. Every object kubectl prints has it: an answer
// without it is malformed, and throws (out_of_range, type_error) rather than
// being read as an object that does not exist.
const json& Metadata(const json& obj);

// metadata.labels and metadata.annotations (an empty object if none).
const json& LabelsOf(const json& obj);
const json& AnnotationsOf(const json& obj);

// The object has a deletionTimestamp: it is being deleted.
bool Deleting(const json& obj);

}  // namespace tune::k8s_object
