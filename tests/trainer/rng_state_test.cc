// trainer/rng_state.h on the CPU: a captured state restores the same random
// draws, a rank's entries round-trip through the checkpoint naming, and bad
// states are refused. (The "cuda" entry needs a GPU: scripts/gpu-smoke.sh
// resumes a cuda run with dropout.)
#include <catch2/catch.hpp>

#include "trainer/rng_state.h"

namespace tune {
namespace {

const torch::Device kCpu(torch::kCPU);

TEST_CASE("a restored RNG state draws the same dropout masks again", "[trainer][rng]") {
  torch::manual_seed(5);
  TensorMap state = CaptureRngState(kCpu);
  CHECK(state.size() == 1);  // the CPU generator only: a CPU run never touches CUDA
  REQUIRE(state.count("cpu") == 1);
  CHECK(state["cpu"].scalar_type() == torch::kUInt8);
  const torch::Tensor x = torch::ones({64, 32});
  const torch::Tensor first = torch::dropout(x, 0.3, /*train=*/true);
  const torch::Tensor moved_on = torch::dropout(x, 0.3, true);
  CHECK_FALSE(torch::equal(first, moved_on));
  REQUIRE(RestoreRngState(state, kCpu).ok());
  CHECK(torch::equal(torch::dropout(x, 0.3, true), first));
  // A "cuda" entry is ignored on the CPU.
  state["cuda"] = torch::zeros({16}, torch::kUInt8);
  REQUIRE(RestoreRngState(state, kCpu).ok());
  CHECK(torch::equal(torch::dropout(x, 0.3, true), first));
}

TEST_CASE("bad RNG states are refused", "[trainer][rng]") {
  Status no_cpu = RestoreRngState({{"cuda", torch::zeros({16}, torch::kUInt8)}}, kCpu);
  CHECK(no_cpu.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(no_cpu.message(), Catch::Contains("'cpu'"));
  Status wrong_size = RestoreRngState({{"cpu", torch::zeros({7}, torch::kUInt8)}}, kCpu);
  CHECK(wrong_size.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(wrong_size.message(), Catch::Contains("generator"));
}

TEST_CASE("each rank's RNG entries under the checkpoint's names", "[trainer][rng]") {
  const torch::Tensor a = torch::arange(4, torch::kUInt8), b = torch::arange(5, torch::kUInt8);
  const TensorMap all{{"cpu", a}, {"cuda", b}, {"rank1.cpu", b}, {"rank12.cpu", a}};
  TensorMap r0 = RankRngState(all, 0);
  CHECK(r0.size() == 2);
  CHECK(torch::equal(r0["cpu"], a));
  CHECK(torch::equal(r0["cuda"], b));
  TensorMap r1 = RankRngState(all, 1);
  CHECK(r1.size() == 1);
  CHECK(torch::equal(r1["cpu"], b));
  CHECK(RankRngState(all, 12).size() == 1);
  CHECK(RankRngState(all, 2).empty());  // written by fewer ranks
}

}  // namespace
}  // namespace tune
