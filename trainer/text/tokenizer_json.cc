// Reading tokenizer.json (and tokenizer_config.json) into Tokenizer::Impl.
#include "trainer/text/tokenizer_impl.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/json_integer.h"
#include "trainer/text/byte_level.h"

namespace tune::text {

using nlohmann::json;

namespace {

class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  Status Error(const std::string& field, const std::string& what) const {
    return Status::InvalidArgument(origin_ + ": " + field + ": " + what);
  }
  Status Unsupported(const std::string& field, const std::string& value,
                     const std::string& supported) const {
    return Error(field, "\"" + value + "\" is not supported (supported: " + supported + ")");
  }

  // The "type" of an object at `field`, or an error.
  Result<std::string> Type(const json& j, const std::string& field) const {
    if (!j.is_object()) return Error(field, "expected an object");
    auto it = j.find("type");
    if (it == j.end() || !it->is_string()) return Error(field + ".type", "missing or not a string");
    return it->get<std::string>();
  }

  bool Bool(const json& j, const char* key, bool dflt) const {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
  }

  // A Split / Replace `pattern`: {"Regex": "..."} or {"String": "..."}.
  Result<std::shared_ptr<const Regex>> Pattern(const json& j, const std::string& field) const {
    auto pat = j.find("pattern");
    if (pat != j.end() && pat->is_object()) {
      auto re = pat->find("Regex");
      auto str = pat->find("String");
      bool literal = str != pat->end() && str->is_string();
      if ((re != pat->end() && re->is_string()) || literal) {
        auto compiled = Regex::Compile((literal ? *str : *re).get<std::string>(), literal);
        if (!compiled.ok()) return Error(field + ".pattern", compiled.status().message());
        return compiled;
      }
    }
    return Error(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
  }

  Result<std::string> String(const json& j, const char* key, const std::string& field) const {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return Error(field + "." + key, "missing or not a string");
    return it->get<std::string>();
  }

  // A JSON string holding exactly one character (a Rust `char` in tokenizers).
  Result<std::string> Char(const json& j, const char* key, const std::string& field) const {
    TUNE_ASSIGN_OR_RETURN(std::string c, String(j, key, field));
    char32_t cp;
    bool valid;
    if (c.empty() || DecodeUtf8(c, 0, &cp, &valid) != c.size()) {
      return Error(field + "." + key, "expected a single character, got \"" + c + "\"");
    }
    return c;
  }

  Status ParseNormalizer(const json& j, const std::string& field, std::vector<NormalizerStep>* out) const {
    if (j.is_null()) return Status::Ok();
    TUNE_ASSIGN_OR_RETURN(std::string type, Type(j, field));
    NormalizerStep step;
    if (type == "NFC") step.form = NormalForm::kNfc;
    else if (type == "NFD") step.form = NormalForm::kNfd;
    else if (type == "NFKC") step.form = NormalForm::kNfkc;
    else if (type == "NFKD") step.form = NormalForm::kNfkd;
    else if (type == "Prepend") {
      step.kind = NormalizerStep::Kind::kPrepend;
      TUNE_ASSIGN_OR_RETURN(step.content, String(j, "prepend", field));
    } else if (type == "Replace") {
      step.kind = NormalizerStep::Kind::kReplace;
      TUNE_ASSIGN_OR_RETURN(step.pattern, Pattern(j, field));
      TUNE_ASSIGN_OR_RETURN(step.content, String(j, "content", field));
    } else if (type == "Sequence") {
      const json& list = j.value("normalizers", json::array());
      if (!list.is_array()) return Error(field + ".normalizers", "expected an array");
      for (size_t i = 0; i < list.size(); ++i) {
        TUNE_RETURN_IF_ERROR(ParseNormalizer(list[i], field + ".normalizers[" + std::to_string(i) + "]", out));
      }
      return Status::Ok();
    } else {
      return Unsupported(field + ".type", type, "NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence, null");
    }
    out->push_back(std::move(step));
    return Status::Ok();
  }

  Status ParsePreTokenizer(const json& j, const std::string& field,
                           std::vector<PreTokenizerStep>* out) const {
    if (j.is_null()) return Status::Ok();
    TUNE_ASSIGN_OR_RETURN(std::string type, Type(j, field));
    PreTokenizerStep step;
    if (type == "ByteLevel") {
      step.kind = PreTokenizerStep::Kind::kByteLevel;
      step.add_prefix_space = Bool(j, "add_prefix_space", true);
      if (Bool(j, "use_regex", true)) {
        TUNE_ASSIGN_OR_RETURN(step.regex, Regex::Compile(kGpt2SplitPattern, false));
      }
    } else if (type == "Split") {
      TUNE_ASSIGN_OR_RETURN(step.regex, Pattern(j, field));
      std::string behavior = j.value("behavior", std::string("Isolated"));
      if (behavior == "Isolated") step.behavior = SplitBehavior::kIsolated;
      else if (behavior == "Removed") step.behavior = SplitBehavior::kRemoved;
      else if (behavior == "MergedWithPrevious") step.behavior = SplitBehavior::kMergedWithPrevious;
      else if (behavior == "MergedWithNext") step.behavior = SplitBehavior::kMergedWithNext;
      else if (behavior == "Contiguous") step.behavior = SplitBehavior::kContiguous;
      else return Unsupported(field + ".behavior", behavior, "Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous");
      step.invert = Bool(j, "invert", false);
    } else if (type == "Digits") {
      bool individual = Bool(j, "individual_digits", false);
      TUNE_ASSIGN_OR_RETURN(step.regex, Regex::Compile("\\p{N}", false));
      step.behavior = individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
    } else if (type == "Metaspace") {
      step.kind = PreTokenizerStep::Kind::kMetaspace;
      TUNE_ASSIGN_OR_RETURN(step.replacement, Char(j, "replacement", field));
      std::string scheme = j.value("prepend_scheme", std::string("always"));
      if (scheme == "always") step.prepend_scheme = PrependScheme::kAlways;
      else if (scheme == "first") step.prepend_scheme = PrependScheme::kFirst;
      else if (scheme == "never") step.prepend_scheme = PrependScheme::kNever;
      else return Unsupported(field + ".prepend_scheme", scheme, "always, first, never");
      // Files from before prepend_scheme: add_prefix_space false means never.
      if (!Bool(j, "add_prefix_space", true)) step.prepend_scheme = PrependScheme::kNever;
      if (Bool(j, "split", true)) {
        TUNE_ASSIGN_OR_RETURN(step.regex, Regex::Compile(step.replacement, /*literal=*/true));
      }
    } else if (type == "Sequence") {
      const json& list = j.value("pretokenizers", json::array());
      if (!list.is_array()) return Error(field + ".pretokenizers", "expected an array");
      for (size_t i = 0; i < list.size(); ++i) {
        TUNE_RETURN_IF_ERROR(ParsePreTokenizer(list[i], field + ".pretokenizers[" + std::to_string(i) + "]", out));
      }
      return Status::Ok();
    } else {
      return Unsupported(field + ".type", type, "ByteLevel, Split, Digits, Metaspace, Sequence, null");
    }
    out->push_back(std::move(step));
    return Status::Ok();
  }

  // TemplateProcessing's `single` template -> ids before / after $A.
  Status ParsePostProcessor(const json& j, const std::string& field, std::vector<int32_t>* prefix,
                            std::vector<int32_t>* suffix) const {
    if (j.is_null()) return Status::Ok();
    TUNE_ASSIGN_OR_RETURN(std::string type, Type(j, field));
    if (type == "ByteLevel") return Status::Ok();  // offsets only
    if (type == "Sequence") {
      const json& list = j.value("processors", json::array());
      if (!list.is_array()) return Error(field + ".processors", "expected an array");
      for (size_t i = 0; i < list.size(); ++i) {
        TUNE_RETURN_IF_ERROR(ParsePostProcessor(list[i], field + ".processors[" + std::to_string(i) + "]", prefix, suffix));
      }
      return Status::Ok();
    }
    if (type != "TemplateProcessing") {
      return Unsupported(field + ".type", type, "ByteLevel, TemplateProcessing, Sequence, null");
    }
    const json& single = j.value("single", json::array());
    const json& specials = j.value("special_tokens", json::object());
    if (!single.is_array()) return Error(field + ".single", "expected an array");
    bool seen_a = false;
    for (size_t i = 0; i < single.size(); ++i) {
      std::string f = field + ".single[" + std::to_string(i) + "]";
      const json& piece = single[i];
      if (piece.contains("Sequence")) {
        seen_a = true;
        continue;
      }
      if (!piece.contains("SpecialToken")) return Error(f, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      std::string name = piece["SpecialToken"].value("id", std::string());
      auto sp = specials.find(name);
      if (sp == specials.end() || !sp->contains("ids") || !(*sp)["ids"].is_array()) {
        return Error(f, "special token \"" + name + "\" is not in " + field + ".special_tokens");
      }
      for (const json& id : (*sp)["ids"]) {
        std::optional<int32_t> n = JsonInteger<int32_t>(id);
        if (!n || *n < 0) return Error(field + ".special_tokens." + name + ".ids", "expected token ids (0 to 2^31-1)");
        (seen_a ? suffix : prefix)->push_back(*n);
      }
    }
    return Status::Ok();
  }

  Status ParseDecoder(const json& j, const std::string& field, std::vector<DecoderStep>* out) const {
    if (j.is_null()) return Status::Ok();
    TUNE_ASSIGN_OR_RETURN(std::string type, Type(j, field));
    DecoderStep step;
    if (type == "ByteLevel") {
      step.kind = DecoderStep::Kind::kByteLevel;
    } else if (type == "Replace") {
      step.kind = DecoderStep::Kind::kReplace;
      TUNE_ASSIGN_OR_RETURN(step.pattern, Pattern(j, field));
      TUNE_ASSIGN_OR_RETURN(step.content, String(j, "content", field));
    } else if (type == "ByteFallback") {
      step.kind = DecoderStep::Kind::kByteFallback;
    } else if (type == "Fuse") {
      step.kind = DecoderStep::Kind::kFuse;
    } else if (type == "Strip") {
      step.kind = DecoderStep::Kind::kStrip;
      TUNE_ASSIGN_OR_RETURN(step.content, Char(j, "content", field));
      for (auto [key, dst] : {std::pair<const char*, size_t*>{"start", &step.start}, {"stop", &step.stop}}) {
        auto it = j.find(key);
        std::optional<size_t> n = it == j.end() ? std::nullopt : JsonInteger<size_t>(*it);
        if (!n) return Error(field + "." + key, "expected a non-negative integer");
        *dst = *n;
      }
    } else if (type == "Metaspace") {
      step.kind = DecoderStep::Kind::kMetaspace;
      TUNE_ASSIGN_OR_RETURN(step.content, Char(j, "replacement", field));
      std::string scheme = j.value("prepend_scheme", std::string("always"));
      if (scheme != "always" && scheme != "first" && scheme != "never") {
        return Unsupported(field + ".prepend_scheme", scheme, "always, first, never");
      }
      step.strip_first = scheme != "never" && Bool(j, "add_prefix_space", true);
    } else if (type == "Sequence") {
      const json& list = j.value("decoders", json::array());
      if (!list.is_array()) return Error(field + ".decoders", "expected an array");
      for (size_t i = 0; i < list.size(); ++i) {
        TUNE_RETURN_IF_ERROR(ParseDecoder(list[i], field + ".decoders[" + std::to_string(i) + "]", out));
      }
      return Status::Ok();
    } else {
      return Unsupported(field + ".type", type,
                         "ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence, null");
    }
    out->push_back(std::move(step));
    return Status::Ok();
  }

  Result<BpeModel> ParseModel(const json& j) const {
    if (!j.is_object()) return Error("model", "expected an object");
    std::string type = j.value("type", std::string("BPE"));
    if (type != "BPE") return Unsupported("model.type", type, "BPE");
    auto dropout = j.find("dropout");
    if (dropout != j.end() && !dropout->is_null() && dropout->is_number() && dropout->get<double>() > 0) {
      return Error("model.dropout", "BPE dropout is not supported (expected null)");
    }
    auto vit = j.find("vocab");
    if (vit == j.end() || !vit->is_object()) return Error("model.vocab", "missing or not an object");
    std::unordered_map<std::string, int32_t> vocab;
    vocab.reserve(vit->size());
    for (auto it = vit->begin(); it != vit->end(); ++it) {
      std::optional<int32_t> id = JsonInteger<int32_t>(it.value());
      if (!id || *id < 0) {
        return Error("model.vocab[\"" + it.key() + "\"]", "expected a token id (0 to 2^31-1)");
      }
      vocab.emplace(it.key(), *id);
    }
    auto mit = j.find("merges");
    if (mit == j.end() || !mit->is_array()) return Error("model.merges", "missing or not an array");
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(mit->size());
    for (size_t i = 0; i < mit->size(); ++i) {
      const json& m = (*mit)[i];
      std::string f = "model.merges[" + std::to_string(i) + "]";
      if (m.is_string()) {
        const std::string& s = m.get_ref<const std::string&>();
        size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) return Error(f, "expected \"left right\", got \"" + s + "\"");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return Error(f, "expected \"left right\" or [\"left\", \"right\"]");
      }
    }
    BpeOptions opt;
    auto str_or_null = [&](const char* key) -> std::optional<std::string> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    opt.unk_token = str_or_null("unk_token");
    opt.continuing_subword_prefix = str_or_null("continuing_subword_prefix").value_or("");
    opt.end_of_word_suffix = str_or_null("end_of_word_suffix").value_or("");
    opt.fuse_unk = Bool(j, "fuse_unk", false);
    opt.ignore_merges = Bool(j, "ignore_merges", false);
    opt.byte_fallback = Bool(j, "byte_fallback", false);
    auto model = BpeModel::Build(std::move(vocab), merges, std::move(opt));
    if (!model.ok()) return Status::InvalidArgument(origin_ + ": " + model.status().message());
    return model;
  }

 private:
  std::string origin_;
};

// Special token names from tokenizer_config.json ("eos_token": "..." or
// {"content": "..."}).
std::optional<std::string> ConfigToken(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

// Special ids: from tokenizer_config.json's entries when given, else the
// first well-known name present.
void ResolveSpecialIds(const json& cfg, Tokenizer::Impl* impl) {
  auto id_of = [&](const std::string& name) -> std::optional<int32_t> {
    if (auto id = impl->added.TokenId(name)) return id;
    return impl->model->TokenId(name);
  };
  auto pick = [&](const char* key, std::initializer_list<const char*> names) -> std::optional<int32_t> {
    if (auto name = ConfigToken(cfg, key)) return id_of(*name);
    for (const char* n : names) {
      if (auto id = id_of(n)) return id;
    }
    return std::nullopt;
  };
  impl->eos = pick("eos_token", {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"});
  impl->bos = pick("bos_token", {"<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>"});
  impl->pad = pick("pad_token", {"<|pad|>", "<pad>", "<|finetune_right_pad_id|>"});
}

}  // namespace

static Result<std::shared_ptr<Tokenizer::Impl>> ParseTokenizerDocument(std::string_view json_text,
                                                                       const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument(origin + ": expected a JSON object");
  Parser p(origin);
  auto impl = std::make_shared<Tokenizer::Impl>();

  std::vector<NormalizerStep> norm_steps;
  TUNE_RETURN_IF_ERROR(p.ParseNormalizer(j.value("normalizer", json()), "normalizer", &norm_steps));
  impl->normalizer = Normalizer(std::move(norm_steps));
  std::vector<PreTokenizerStep> steps;
  TUNE_RETURN_IF_ERROR(p.ParsePreTokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer", &steps));
  impl->pre_tokenizer = PreTokenizer(std::move(steps));
  if (!j.contains("model")) return p.Error("model", "missing");
  TUNE_ASSIGN_OR_RETURN(BpeModel model, p.ParseModel(j["model"]));
  impl->model.emplace(std::move(model));
  TUNE_RETURN_IF_ERROR(p.ParsePostProcessor(j.value("post_processor", json()), "post_processor",
                                            &impl->prefix, &impl->suffix));
  std::vector<DecoderStep> decoder_steps;
  TUNE_RETURN_IF_ERROR(p.ParseDecoder(j.value("decoder", json()), "decoder", &decoder_steps));
  impl->decoder = Decoder(std::move(decoder_steps));
  // "truncation" and "padding" are ignored: the data loader truncates to
  // seq_len and the trainer pads batches itself.

  // Added tokens.
  const json& added = j.value("added_tokens", json::array());
  if (!added.is_array()) return p.Error("added_tokens", "expected an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    std::string f = "added_tokens[" + std::to_string(i) + "]";
    std::optional<int32_t> id = a.is_object() && a.contains("id") ? JsonInteger<int32_t>(a["id"]) : std::nullopt;
    if (!id || *id < 0 || !a.contains("content") || !a["content"].is_string()) {
      return p.Error(f, "expected {\"id\": int, \"content\": string, ...}");
    }
    AddedToken t;
    t.id = *id;
    t.content = a["content"].get<std::string>();
    t.special = p.Bool(a, "special", false);
    t.normalized = p.Bool(a, "normalized", !t.special);
    t.single_word = p.Bool(a, "single_word", false);
    t.lstrip = p.Bool(a, "lstrip", false);
    t.rstrip = p.Bool(a, "rstrip", false);
    impl->added.Add(std::move(t));
  }
  impl->added.Build(impl->normalizer);

  // id -> token table.
  // The table has a slot for every id up to the largest, so that id is
  // bounded: 2^22 is 16 times the largest vocabularies in use (~256K), and
  // an id of 2^31 - 1 would ask for 64 GB.
  constexpr int32_t kMaxTokenId = (1 << 22) - 1;
  int32_t max_id = -1;
  std::string max_field;
  for (const auto& [tok, id] : impl->model->vocab()) {
    if (id > max_id) max_id = id, max_field = "model.vocab[\"" + tok + "\"]";
  }
  for (const AddedToken& t : impl->added.tokens()) {
    if (t.id > max_id) max_id = t.id, max_field = "added_tokens (\"" + t.content + "\")";
  }
  if (max_id > kMaxTokenId) {
    return p.Error(max_field, "expected a token id of at most " + std::to_string(kMaxTokenId) + ", got " +
                                  std::to_string(max_id));
  }
  impl->vocab_size = max_id + 1;
  impl->id_to_token.assign(impl->vocab_size, std::string());
  impl->id_is_added.assign(impl->vocab_size, 0);
  for (const auto& [tok, id] : impl->model->vocab()) impl->id_to_token[id] = tok;
  for (const AddedToken& t : impl->added.tokens()) {
    impl->id_to_token[t.id] = t.content;
    impl->id_is_added[t.id] = 1;
  }
  ResolveSpecialIds(json::object(), impl.get());
  return impl;
}

// A field of the wrong JSON type that the parser reads with a default
// (e.g. "model": {"type": 42}) throws nlohmann's type_error; it is a bad
// file, not a crash (tokenizer_json_fuzz).
Result<std::shared_ptr<Tokenizer::Impl>> ParseTokenizerJson(std::string_view json_text,
                                                            const std::string& origin) {
  try {
    return ParseTokenizerDocument(json_text, origin);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(origin + ": a field has the wrong type: " + e.what());
  }
}

Status ApplyTokenizerConfig(const std::string& config_path, Tokenizer::Impl* impl) {
  std::ifstream in(config_path);
  if (!in) return Status::Ok();
  json cfg;
  try {
    cfg = json::parse(in);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(config_path + ": not valid JSON: " + e.what());
  }
  if (!cfg.is_object()) return Status::Ok();
  ResolveSpecialIds(cfg, impl);
  // add_bos_token / add_eos_token decide the special prefix / suffix where
  // given (transformers rebuilds the post-processor from them). A
  // chat_template is not applied: the data loader has no chat format.
  struct Flag {
    const char* key;
    const char* token_key;
    std::optional<int32_t> id;
    std::vector<int32_t>* ids;
  };
  for (const Flag& f : {Flag{"add_bos_token", "bos_token", impl->bos, &impl->prefix},
                        Flag{"add_eos_token", "eos_token", impl->eos, &impl->suffix}}) {
    auto it = cfg.find(f.key);
    if (it == cfg.end() || it->is_null()) continue;
    if (!it->is_boolean()) {
      return Status::InvalidArgument(config_path + ": " + f.key + ": expected true or false");
    }
    if (!it->get<bool>()) {
      f.ids->clear();
    } else if (!f.id) {
      return Status::InvalidArgument(config_path + ": " + f.key + " is true but " + f.token_key +
                                     " is not set or not in the vocabulary");
    } else {
      *f.ids = {*f.id};
    }
  }
  return Status::Ok();
}

}  // namespace tune::text
