#include "trainer/text/tokenizer.h"
namespace tune::text {
struct Tokenizer::Impl { std::vector<int32_t> empty; };
Result<Tokenizer> Tokenizer::Load(const std::string& p) { return Status::Internal("tokenizer not implemented yet: " + p); }
Result<Tokenizer> Tokenizer::FromJson(std::string_view, const std::string& o) { return Status::Internal("tokenizer not implemented yet: " + o); }
std::vector<int32_t> Tokenizer::Encode(std::string_view, bool) const { return {}; }
std::string Tokenizer::Decode(const std::vector<int32_t>&) const { return {}; }
int32_t Tokenizer::vocab_size() const { return 0; }
std::optional<int32_t> Tokenizer::TokenId(std::string_view) const { return std::nullopt; }
std::optional<std::string> Tokenizer::IdToken(int32_t) const { return std::nullopt; }
std::optional<int32_t> Tokenizer::eos_id() const { return std::nullopt; }
std::optional<int32_t> Tokenizer::bos_id() const { return std::nullopt; }
std::optional<int32_t> Tokenizer::pad_id() const { return std::nullopt; }
const std::vector<int32_t>& Tokenizer::special_prefix() const { return impl_->empty; }
const std::vector<int32_t>& Tokenizer::special_suffix() const { return impl_->empty; }
}  // namespace tune::text
