// The sentence every report opens with (sim/report/verdict.h): the winner on each experiment's
// deciding figure and its margins, worked out here by hand; oracles left out; ties and missing
// figures said as such.
#include <gtest/gtest.h>

#include "sim/report/verdict.h"

namespace tessera::report {
namespace {

using nlohmann::json;

json AllocationAt100(double v) {
  json a = json::array();
  for (int i = 0; i <= 130; ++i) a.push_back(i == 100 ? json(v) : json(nullptr));
  return a;
}

TEST(ReportVerdictTest, AllocationWinnerByPointsAtFullDemand) {
  // fgd 0.932, bestfit 0.891, random 0.812: fgd leads by 4.1 and 12.0 points; the oracle's
  // 0.99 is a bound, not a winner.
  const json summary = {
      {"experiment", "allocation"},
      {"results",
       {{{"policy", "bestfit"}, {"allocation_at_demand", AllocationAt100(0.891)}},
        {{"policy", "fgd"}, {"allocation_at_demand", AllocationAt100(0.932)}},
        {{"policy", "clairvoyant"},
         {"oracle", true},
         {"allocation_at_demand", AllocationAt100(0.99)}},
        {{"policy", "random"}, {"allocation_at_demand", AllocationAt100(0.812)}}}}};
  EXPECT_EQ(Verdict(summary),
            "fgd allocates the most GPUs once demand reaches the cluster's capacity: allocation "
            "at 100 % demand 93.2 %, 4.1 points more than the runner-up (bestfit, 89.1 %) and "
            "12.0 points more than the last (random, 81.2 %).");
}

TEST(ReportVerdictTest, ReplayWinnerHasTheShortestMeanJct) {
  // drf 7,200 s = 2 h, fifo 9,000 s = 2.5 h: 20 % shorter (1,800 / 9,000).
  const json summary = {{"experiment", "replay"},
                        {"results",
                         {{{"policy", "fifo"}, {"jct_seconds", {{"mean", 9000}}}},
                          {{"policy", "drf"}, {"jct_seconds", {{"mean", 7200}}}}}}};
  EXPECT_EQ(Verdict(summary),
            "drf finishes jobs soonest: mean JCT 2 h, 20 % shorter than the runner-up (fifo, "
            "2.5 h).");
}

TEST(ReportVerdictTest, ColocationOnlyCountsSetupsThatMeetTheSlo) {
  // shared allocates the most but misses the SLO by 5 points; of the two within a point of
  // the best (0.999), colocate leads dedicated by 20 points.
  const json summary = {
      {"experiment", "colocation"},
      {"results",
       {{{"policy", "dedicated"}, {"slo_attainment", 0.999}, {"gpu_allocation_ratio", 0.55}},
        {{"policy", "shared"}, {"slo_attainment", 0.95}, {"gpu_allocation_ratio", 0.9}},
        {{"policy", "colocate"}, {"slo_attainment", 0.995}, {"gpu_allocation_ratio", 0.75}}}}};
  EXPECT_EQ(Verdict(summary),
            "colocate keeps the most GPUs allocated while meeting the inference SLO: GPU "
            "allocation 75.0 %, 20.0 points more than the runner-up (dedicated, 55.0 %).");
}

TEST(ReportVerdictTest, ServingWinnerByGoodputShare) {
  // 12 vs 10 req/s: 20 % more.
  const json summary = {{"experiment", "serving"},
                        {"results",
                         {{{"router", "round-robin"}, {"goodput_rps", 10.0}},
                          {{"router", "prefix-aware"}, {"goodput_rps", 12.0}}}}};
  EXPECT_EQ(Verdict(summary),
            "prefix-aware serves the most requests within the SLOs: goodput 12 req/s, 20 % more "
            "than the runner-up (round-robin, 10 req/s).");
}

TEST(ReportVerdictTest, TiesMissingFiguresAndUnknownExperimentsAreSaid) {
  const json tie = {
      {"experiment", "failures"},
      {"results", {{{"policy", "a"}, {"ettr", 0.9}}, {{"policy", "b"}, {"ettr", 0.9}}}}};
  EXPECT_EQ(Verdict(tie), "No policy wins: all 2 have the same ETTR (90.0 %).");
  const json missing = {{"experiment", "failures"}, {"results", {{{"policy", "a"}}}}};
  EXPECT_EQ(Verdict(missing), "No verdict: no result has its ETTR.");
  const json single = {{"experiment", "failures"}, {"results", {{{"policy", "a"}, {"ettr", 0.5}}}}};
  EXPECT_EQ(Verdict(single), "Only a ran: ETTR 50.0 %.");
  EXPECT_EQ(Verdict({{"experiment", "mystery"}, {"results", json::array()}}),
            "No verdict: the report does not know which figure decides the \"mystery\" "
            "experiment; the table below has every result.");
  EXPECT_EQ(Verdict(json::array()), "No verdict: the summary is not an object.");
  EXPECT_EQ(Verdict({{"experiment", "replay"}, {"results", "oops"}}),
            "No verdict: the summary has no results.");
}

}  // namespace
}  // namespace tessera::report
