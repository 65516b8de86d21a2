#include "trainer/text/data.h"
namespace tune::text {
Result<std::vector<Example>> LoadJsonl(const std::string& p, const Tokenizer&, const DataOptions&, DataStats*) { return Status::Internal("not implemented yet: " + p); }
Result<std::vector<Example>> LoadCorpus(const std::string& p, const Tokenizer&, int) { return Status::Internal("not implemented yet: " + p); }
void Shuffle(std::vector<Example>&, uint64_t) {}
std::pair<std::vector<Example>, std::vector<Example>> SplitEval(std::vector<Example> all, double, uint64_t) { return {std::move(all), {}}; }
}  // namespace tune::text
