#include "trial_runner/resource_pool.h"

#include <cstdlib>

#include <catch2/catch.hpp>

namespace tune {
namespace {

TEST_CASE("CPU slots: fractional requests, busy and impossible", "[resource_pool]") {
  ResourcePool pool(2, {});
  ResourceRequest one{1, 1, 0}, tenth{1, 0.1, 0}, two_by_two{2, 2, 0};
  REQUIRE(pool.CanAcquire(one));
  auto a = pool.Acquire(one);
  REQUIRE(a.ok());
  CHECK(pool.free_cpu() == 1);
  std::vector<ResourceGrant> tenths;
  for (int i = 0; i < 10; ++i) {
    auto g = pool.Acquire(tenth);
    REQUIRE(g.ok());  // ten tenths fit in one slot despite rounding
    tenths.push_back(*g);
  }
  CHECK_FALSE(pool.CanAcquire(tenth));
  CHECK(pool.Acquire(tenth).status().code() == StatusCode::kUnavailable);
  for (const auto& g : tenths) pool.Release(g);
  pool.Release(*a);
  CHECK(pool.free_cpu() == 2);

  Status st = pool.CheckFeasible(two_by_two);
  CHECK(st.IsInvalidArgument());
  CHECK(st.message() == "a trial needs 4 CPU slots (2 workers x 2) but the machine has 2");
  CHECK_FALSE(pool.CanAcquire(two_by_two));
  CHECK(pool.Acquire(two_by_two).status().IsInvalidArgument());
  CHECK(pool.CheckFeasible({0, 1, 0}).IsInvalidArgument());
  CHECK(pool.CheckFeasible({1, -1, 0}).IsInvalidArgument());
}

TEST_CASE("GPUs are handed out per worker and returned", "[resource_pool]") {
  ResourcePool pool(8, {3, 1, 2, 0});
  auto g = pool.Acquire({2, 1, 2});
  REQUIRE(g.ok());
  REQUIRE(g->gpus.size() == 2);
  CHECK(g->gpus[0] == std::vector<int>{0, 1});
  CHECK(g->gpus[1] == std::vector<int>{2, 3});
  CHECK(pool.free_gpus() == 0);
  CHECK_FALSE(pool.CanAcquire({1, 1, 1}));
  CHECK(pool.CanAcquire({1, 1, 0}));
  pool.Release(*g);
  CHECK(pool.free_gpus() == 4);
  Status st = pool.CheckFeasible({3, 1, 2});
  CHECK(st.message() == "a trial needs 6 GPUs (3 workers x 2) but the machine has 4");
}

TEST_CASE("DetectGpus returns no ids without nvidia-smi", "[resource_pool]") {
  if (std::system("command -v nvidia-smi >/dev/null 2>&1") == 0) {
    WARN("nvidia-smi present: nothing to check");
    return;
  }
  CHECK(DetectGpus().empty());
}

TEST_CASE("MaxConcurrent: the scarcer of CPU slots and GPUs decides", "[resource_pool]") {
  ResourcePool pool(16, {0, 1, 2, 3, 4});
  CHECK(pool.MaxConcurrent({1, 1, 1}) == 5);    // GPUs bound: 5 of them
  CHECK(pool.MaxConcurrent({2, 1, 1}) == 2);    // 2 workers x 1 GPU
  CHECK(pool.MaxConcurrent({1, 4, 0}) == 4);    // CPU bound: 16 / 4
  CHECK(pool.MaxConcurrent({1, 0.5, 0}) == 32);
  CHECK(pool.MaxConcurrent({1, 6, 1}) == 2);    // CPU bound although 5 GPUs
  CHECK(pool.MaxConcurrent({1, 0, 0}) == -1);   // asks for nothing
  CHECK(pool.MaxConcurrent({3, 1, 2}) == 0);    // 6 GPUs: never fits
  ResourcePool tenths(1, {});
  CHECK(tenths.MaxConcurrent({1, 0.1, 0}) == 10);  // not 9 from rounding
  // The whole machine counts, not what is free now.
  auto grant = pool.Acquire({1, 8, 2});
  REQUIRE(grant.ok());
  CHECK(pool.MaxConcurrent({1, 1, 1}) == 5);
  pool.Release(*grant);
}

}  // namespace
}  // namespace tune
