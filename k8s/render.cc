#include "k8s/render.h"

#include <cstdint>
#include <cstdio>
#include <memory>

#include "k8s/workload.h"

namespace tune {
namespace {

std::string Hash6(const std::string& s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%06x", h & 0xffffffu);
  return buf;
}

// The offset of the first byte of `s` from `from` on that does not belong
// to a UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or npos if the rest of `s` is UTF-8.
size_t FirstNonUtf8(const std::string& s, size_t from = 0) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = from; i < n;) {
    const unsigned char c = p[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string::npos;
}

// `s` for a message: every byte that is not UTF-8 written as \xNN.
std::string ShowBytes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t bad = FirstNonUtf8(s, i);
    if (bad == std::string::npos) return out + s.substr(i);
    out += s.substr(i, bad - i);
    char hex[8];
    std::snprintf(hex, sizeof(hex), "\\x%02X", static_cast<unsigned char>(s[bad]));
    out += hex;
    i = bad + 1;
  }
  return out;
}

}  // namespace

Status CheckManifestText(const LaunchSpec& spec) {
  auto check = [&](const std::string& field, const std::string& text) -> Status {
    const size_t bad = FirstNonUtf8(text);
    if (bad == std::string::npos) return Status::Ok();
    char byte[8];
    std::snprintf(byte, sizeof(byte), "\\x%02X", static_cast<unsigned char>(text[bad]));
    std::string why = std::string("byte ") + byte + " is not UTF-8";
    if (!spec.trial_dir.empty() && text.find(spec.trial_dir) != std::string::npos) {
      why += "; it holds the trial's directory, which lies beside the results database: give the database a "
             "path that is UTF-8 (--db or storage.path)";
    }
    return Status::InvalidArgument(field + ": expected UTF-8 text for a Kubernetes manifest, got \"" +
                                   ShowBytes(text) + "\" (" + why + ")");
  };
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    TUNE_RETURN_IF_ERROR(check("trial.command[" + std::to_string(i) + "]", spec.argv[i]));
  }
  for (const auto& [name, value] : spec.env) {
    TUNE_RETURN_IF_ERROR(check(name.rfind("TUNE_", 0) == 0 ? name : "trial.env." + name, value));
  }
  TUNE_RETURN_IF_ERROR(check("trial.working_dir", spec.working_dir));
  return check("name", spec.experiment);
}

std::string EscapeForKubernetesExpansion(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

std::string ExperimentLabelValue(const std::string& experiment) {
  std::string out;
  for (char c : experiment) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) out += l;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = "e-" + out;
  while (!out.empty() && out.back() == '-') out.pop_back();
  const size_t kMax = 30;  // leaves room for "-t<number>-a<attempt>" and "-<index>"
  if (out != experiment || out.size() > kMax) {
    if (out.size() > kMax - 7) out.resize(kMax - 7);
    while (!out.empty() && out.back() == '-') out.pop_back();
    out += "-" + Hash6(experiment);
  }
  return out;
}

std::string KubernetesObjectName(const std::string& experiment, int trial_number, int attempt) {
  return ExperimentLabelValue(experiment) + "-t" + std::to_string(trial_number) + "-a" +
         std::to_string(attempt);
}

Result<std::string> RenderTrialManifests(const KubernetesOptions& opts, const LaunchSpec& spec,
                                         const std::string& object_name) {
  std::unique_ptr<Workload> workload = MakeWorkload(opts.job_kind);
  if (!workload) {
    return Status::InvalidArgument("backend.job_kind: expected job, pytorchjob or trainjob, got \"" +
                                   opts.job_kind + "\"");
  }
  return workload->Render(opts, spec, object_name);
}

}  // namespace tune
