#include "trainer/text/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trainer/text/byte_level.h"
#include "trainer/text/tokenizer_impl.h"

namespace tune::text {

void Tokenizer::Impl::EncodeText(std::string_view text, std::vector<int32_t>* ids) const {
  std::string input = IsValidUtf8(text) ? std::string(text) : LossyUtf8(text);
  // 1. Added tokens that match the raw text.
  std::vector<Segment> raw;
  added.Split(input, /*normalized=*/false, &raw);
  std::vector<std::string> pieces;
  bool at_start = true;  // the segment begins the input (Metaspace "first")
  for (Segment& seg : raw) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
      at_start = false;
      continue;
    }
    // 2. Normalize, then added tokens that match the normalized text.
    std::vector<Segment> norm;
    added.Split(normalizer.Normalize(seg.text), /*normalized=*/true, &norm);
    for (Segment& n : norm) {
      if (n.id >= 0) {
        ids->push_back(n.id);
        at_start = false;
        continue;
      }
      // 3. Pre-tokenize and run BPE on every piece.
      pieces.clear();
      pre_tokenizer.Split(n.text, &pieces, at_start);
      at_start = false;
      for (const std::string& p : pieces) model->Tokenize(p, ids);
    }
  }
}

Result<Tokenizer> Tokenizer::FromJson(std::string_view json_text, const std::string& origin) {
  TUNE_ASSIGN_OR_RETURN(std::shared_ptr<Impl> impl, ParseTokenizerJson(json_text, origin));
  return Tokenizer(std::move(impl));
}

Result<Tokenizer> Tokenizer::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open tokenizer file");
  std::stringstream buf;
  buf << in.rdbuf();
  TUNE_ASSIGN_OR_RETURN(std::shared_ptr<Impl> impl, ParseTokenizerJson(buf.str(), path));
  std::filesystem::path cfg = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  TUNE_RETURN_IF_ERROR(ApplyTokenizerConfig(cfg.string(), impl.get()));
  return Tokenizer(std::move(impl));
}

// ---------------------------------------------------------------------------
// Encode / decode

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> ids;
  if (add_special) ids = impl_->prefix;
  if (!text.empty()) impl_->EncodeText(text, &ids);
  if (add_special) ids.insert(ids.end(), impl_->suffix.begin(), impl_->suffix.end());
  return ids;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= impl_->vocab_size) continue;
    const std::string& tok = impl_->id_to_token[id];
    if (tok.empty() && !impl_->id_is_added[id]) continue;  // a hole in the id space
    tokens.push_back(tok);
  }
  return LossyUtf8(impl_->decoder.Decode(std::move(tokens)));
}

int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<int32_t> Tokenizer::TokenId(std::string_view token) const {
  if (auto id = impl_->added.TokenId(token)) return id;
  return impl_->model->TokenId(token);
}

std::optional<std::string> Tokenizer::IdToken(int32_t id) const {
  if (id < 0 || id >= impl_->vocab_size) return std::nullopt;
  if (impl_->id_to_token[id].empty() && !impl_->id_is_added[id]) return std::nullopt;
  return impl_->id_to_token[id];
}

std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }
const std::vector<int32_t>& Tokenizer::special_prefix() const { return impl_->prefix; }
const std::vector<int32_t>& Tokenizer::special_suffix() const { return impl_->suffix; }

}  // namespace tune::text
