#include "carton/common/parallel.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

using carton::ParallelFor;

TEST_CASE("common: ParallelFor runs every task once", "[common]") {
  for (unsigned threads : {0u, 1u, 4u}) {
    std::vector<std::atomic<int>> hits(1000);
    ParallelFor(hits.size(), threads, [&](std::size_t i) { hits[i]++; });
    for (auto& h : hits) CHECK(h.load() == 1);
  }
  ParallelFor(0, 4, [](std::size_t) { FAIL("no task expected"); });
}

TEST_CASE("common: ParallelFor hands a task's exception to the caller", "[common]") {
  for (unsigned threads : {1u, 2u}) {
    CHECK_THROWS_AS(ParallelFor(100, threads,
                                [&](std::size_t i) {
                                  if (i == 3) throw std::runtime_error("boom");
                                }),
                    std::runtime_error);
  }
  // On one thread tasks run in order: nothing starts after the failure.
  std::atomic<int> ran{0};
  CHECK_THROWS_AS(ParallelFor(100, 1,
                              [&](std::size_t i) {
                                ran++;
                                if (i == 3) throw std::runtime_error("boom");
                              }),
                  std::runtime_error);
  CHECK(ran.load() == 4);
}
