#include "trainer/text/data.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tune::text {

using nlohmann::json;

namespace {

// A UTF-8 byte order mark, skipped at the start of a file.
constexpr char kUtf8Bom[] = "\xEF\xBB\xBF";

// SplitMix64: a tiny generator with a fixed definition, so a seed gives the
// same order everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (rejection sampling, no modulo bias).
  uint64_t Below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % n;
  }

 private:
  uint64_t state_;
};

// The prompt template split at {response}: prompt part and the text after
// {response} (a target, like the response).
struct Template {
  std::string prompt;  // with {instruction} and maybe {input}
  std::string after_response;
};

Result<Template> ParseTemplate(const std::string& t) {
  size_t r = t.find("{response}");
  if (r == std::string::npos || t.find("{response}", r + 1) != std::string::npos) {
    return Status::InvalidArgument("prompt template must contain {response} exactly once");
  }
  size_t i = t.find("{instruction}");
  if (i == std::string::npos || i > r) {
    return Status::InvalidArgument("prompt template must contain {instruction} before {response}");
  }
  size_t in = t.find("{input}");
  if (in != std::string::npos && in > r) {
    return Status::InvalidArgument("prompt template: {input} must come before {response}");
  }
  return Template{t.substr(0, r), t.substr(r + std::string("{response}").size())};
}

// One pass over `t`, replacing {instruction} and {input}; values are not
// rescanned. Without an input, the paragraph holding {input} is left out
// (unless it also holds {instruction}; then {input} just becomes empty).
std::string FillPrompt(const std::string& t, const std::string& instruction, const std::string& input) {
  std::string tmpl = t;
  if (input.empty()) {
    size_t at = tmpl.find("{input}");
    if (at != std::string::npos) {
      size_t begin = tmpl.rfind("\n\n", at);
      begin = begin == std::string::npos ? 0 : begin;
      size_t end = tmpl.find("\n\n", at);
      if (end == std::string::npos) {
        end = tmpl.size();
      } else if (begin == 0) {
        end += 2;  // first paragraph: drop the separator after it
      }
      // Never drop the instruction with it.
      if (tmpl.substr(begin, end - begin).find("{instruction}") == std::string::npos) {
        tmpl.erase(begin, end - begin);
      }
    }
  }
  std::string out;
  for (size_t pos = 0; pos < tmpl.size();) {
    if (tmpl.compare(pos, 13, "{instruction}") == 0) {
      out += instruction;
      pos += 13;
    } else if (tmpl.compare(pos, 7, "{input}") == 0) {
      out += input;
      pos += 7;
    } else {
      out.push_back(tmpl[pos++]);
    }
  }
  return out;
}

// A string field: absent -> nullopt; present but not a string -> error text.
std::optional<std::string> StringField(const json& obj, const char* key, std::string* error) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    *error = std::string("\"") + key + "\" must be a string";
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace

Result<std::vector<Example>> LoadJsonl(const std::string& path, const Tokenizer& tok,
                                       const DataOptions& opt, DataStats* stats) {
  if (opt.seq_len < 2) return Status::InvalidArgument("seq_len must be at least 2");
  TUNE_ASSIGN_OR_RETURN(Template tmpl, ParseTemplate(opt.prompt_template));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open data file");
  DataStats local;
  DataStats& st = stats ? *stats : local;
  st = DataStats();
  std::string first_error;
  std::vector<Example> out;
  std::string line;
  const size_t seq_len = static_cast<size_t>(opt.seq_len);
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.rfind(kUtf8Bom, 0) == 0) line.erase(0, 3);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ++st.lines;
    std::string error;
    json obj;
    try {
      obj = json::parse(line);
    } catch (const json::exception& e) {
      error = std::string("invalid JSON: ") + e.what();
    }
    std::optional<std::string> text, instruction, input, response;
    if (error.empty() && !obj.is_object()) error = "expected a JSON object";
    if (error.empty()) {
      text = StringField(obj, "text", &error);
      if (error.empty()) instruction = StringField(obj, "instruction", &error);
      if (error.empty()) input = StringField(obj, "input", &error);
      if (error.empty()) response = StringField(obj, "response", &error);
      if (error.empty() && !response) response = StringField(obj, "output", &error);
      if (error.empty()) {
        if (text && (instruction || response)) {
          error = "has both \"text\" and \"instruction\"/\"response\"";
        } else if (!text && !instruction && !response) {
          error = "expected \"text\" or \"instruction\" and \"response\"";
        } else if (!text && !instruction) {
          error = "missing \"instruction\"";
        } else if (!text && !response) {
          error = "missing \"response\"";
        }
      }
    }
    if (!error.empty()) {
      std::string where = path + ":" + std::to_string(line_no) + ": " + error;
      if (!opt.skip_malformed) return Status::InvalidArgument(where);
      if (first_error.empty()) first_error = where;
      ++st.malformed;
      continue;
    }

    Example ex;
    const std::vector<int32_t>& prefix = tok.special_prefix();
    ex.ids = prefix;
    ex.loss_mask.assign(prefix.size(), 0);
    auto append = [&](const std::vector<int32_t>& ids, uint8_t target) {
      ex.ids.insert(ex.ids.end(), ids.begin(), ids.end());
      ex.loss_mask.insert(ex.loss_mask.end(), ids.size(), target);
    };
    if (text) {
      append(tok.Encode(*text), 1);
    } else {
      append(tok.Encode(FillPrompt(tmpl.prompt, *instruction, input.value_or(""))), 0);
      append(tok.Encode(*response + tmpl.after_response), 1);
    }
    std::vector<int32_t> suffix = tok.special_suffix();
    if (opt.append_eos && tok.eos_id()) {
      append({*tok.eos_id()}, 1);
      // A suffix that is itself eos (add_eos_token) is that same eos.
      if (!suffix.empty() && suffix.front() == *tok.eos_id()) suffix.erase(suffix.begin());
    }
    append(suffix, 0);
    if (ex.ids.size() > seq_len) {
      ex.ids.resize(seq_len);
      ex.loss_mask.resize(seq_len);
      ++st.truncated;
    }
    // A target at position 0 has nothing to be predicted from.
    bool has_target = false;
    for (size_t i = 1; i < ex.loss_mask.size(); ++i) has_target |= ex.loss_mask[i] != 0;
    if (!has_target) {
      ++st.no_targets;
      continue;
    }
    out.push_back(std::move(ex));
  }
  st.examples = static_cast<int64_t>(out.size());
  if (st.malformed > 0) {
    std::fprintf(stderr, "%s: skipped %lld malformed line(s); first: %s\n", path.c_str(),
                 static_cast<long long>(st.malformed), first_error.c_str());
  }
  return out;
}

Result<std::vector<Example>> LoadCorpus(const std::string& path, const Tokenizer& tok, int seq_len) {
  if (seq_len < 2) return Status::InvalidArgument("seq_len must be at least 2");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open corpus file");
  std::vector<int32_t> stream;
  std::string doc, line;
  auto flush = [&]() {
    if (doc.empty()) return;
    std::vector<int32_t> ids = tok.Encode(doc);
    stream.insert(stream.end(), ids.begin(), ids.end());
    if (tok.eos_id()) stream.push_back(*tok.eos_id());
    doc.clear();
  };
  for (bool first = true; std::getline(in, line); first = false) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (first && line.rfind(kUtf8Bom, 0) == 0) line.erase(0, 3);
    if (line.find_first_not_of(" \t") == std::string::npos) {
      flush();
      continue;
    }
    if (!doc.empty()) doc.push_back('\n');
    doc += line;
  }
  flush();
  std::vector<Example> out;
  for (size_t pos = 0; pos < stream.size(); pos += static_cast<size_t>(seq_len)) {
    size_t n = std::min(stream.size() - pos, static_cast<size_t>(seq_len));
    if (n < 2) break;
    Example ex;
    ex.ids.assign(stream.begin() + static_cast<std::ptrdiff_t>(pos),
                  stream.begin() + static_cast<std::ptrdiff_t>(pos + n));
    ex.loss_mask.assign(n, 1);
    out.push_back(std::move(ex));
  }
  return out;
}

void Shuffle(std::vector<Example>& v, uint64_t seed) {
  SplitMix64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) {
    size_t j = static_cast<size_t>(rng.Below(i));
    std::swap(v[i - 1], v[j]);
  }
}

std::pair<std::vector<Example>, std::vector<Example>> SplitEval(std::vector<Example> all,
                                                                double eval_fraction,
                                                                uint64_t seed) {
  Shuffle(all, seed);
  size_t n = all.size();
  size_t n_eval = 0;
  if (eval_fraction > 0 && n > 0) {
    n_eval = static_cast<size_t>(std::llround(eval_fraction * static_cast<double>(n)));
    if (eval_fraction < 1 && n >= 2) n_eval = std::clamp<size_t>(n_eval, 1, n - 1);
    n_eval = std::min(n_eval, n);
  }
  std::vector<Example> eval(std::make_move_iterator(all.end() - static_cast<std::ptrdiff_t>(n_eval)),
                            std::make_move_iterator(all.end()));
  all.resize(n - n_eval);
  return {std::move(all), std::move(eval)};
}

}  // namespace tune::text
