// ctest-labels: unit security
// The Authorizer over pure inputs: each role against each action, queue subtrees, and the
// reason of every denial.
#include "server/authorizer.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

Caller User(std::string name, std::vector<std::string> groups) {
  return Caller{Caller::Kind::kUser, std::move(name), std::move(groups), {}};
}
Caller Node(std::set<std::string> nodes) {
  return Caller{Caller::Kind::kNode, *nodes.begin(), {}, std::move(nodes)};
}
AccessRequest On(Action a, std::string queue = "") { return {a, std::move(queue), {}}; }

TEST(AuthorizerTest, QueueSubtreeIsThePathAndWhatIsBelowIt) {
  EXPECT_TRUE(InQueueSubtree("nlp", "nlp"));
  EXPECT_TRUE(InQueueSubtree("nlp/sft", "nlp"));
  EXPECT_FALSE(InQueueSubtree("nlpx", "nlp"));  // a longer name is not a child
  EXPECT_FALSE(InQueueSubtree("vision", "nlp"));
  EXPECT_FALSE(InQueueSubtree("nlp", "nlp/sft"));  // the parent is not inside its child
}

TEST(AuthorizerTest, RolesComeFromGroups) {
  const Roles r = RolesOf({"team:nlp", "tessera:viewers", "team:vision/det", "other"});
  EXPECT_FALSE(r.admin);
  EXPECT_TRUE(r.viewer);
  EXPECT_EQ(r.teams, (std::vector<std::string>{"nlp", "vision/det"}));
  EXPECT_TRUE(RolesOf({"tessera:admins"}).admin);
  EXPECT_TRUE(RolesOf({"tessera:gateway"}).gateway);
  EXPECT_TRUE(RolesOf({"tessera:metrics"}).metrics);
  EXPECT_TRUE(RolesOf({"team:"}).teams.empty());  // no queue named
}

TEST(AuthorizerTest, TeamMemberWritesOnlyInItsSubtree) {
  const Caller alice = User("alice", {"team:nlp"});
  for (Action a : {Action::kSubmit, Action::kCancel, Action::kPurge, Action::kRelease,
                   Action::kReadJob, Action::kReadLogs, Action::kExec}) {
    EXPECT_TRUE(Authorize(alice, On(a, "nlp/sft")).allowed);
    const AccessDecision d = Authorize(alice, On(a, "vision"));
    EXPECT_FALSE(d.allowed);
    EXPECT_NE(d.reason.find("alice"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("queue vision"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("team:nlp"), std::string::npos) << d.reason;
  }
  EXPECT_TRUE(MaySeeQueue(alice, "nlp"));
  EXPECT_FALSE(MaySeeQueue(alice, "vision"));
  EXPECT_TRUE(MaySeeEnv(alice, "nlp/sft"));
  EXPECT_FALSE(MaySeeEnv(alice, "vision"));
}

TEST(AuthorizerTest, ViewerAndGatewayReadButNeverWriteOrSeeEnv) {
  for (const Caller& c : {User("v", {"tessera:viewers"}), User("gw", {"tessera:gateway"})}) {
    EXPECT_TRUE(Authorize(c, On(Action::kListJobs)).allowed);
    EXPECT_TRUE(Authorize(c, On(Action::kReadJob, "nlp")).allowed);
    EXPECT_TRUE(Authorize(c, On(Action::kWatchEvents)).allowed);
    EXPECT_TRUE(MaySeeQueue(c, "nlp"));
    EXPECT_FALSE(MaySeeEnv(c, "nlp"));
    EXPECT_FALSE(Authorize(c, On(Action::kReadLogs, "nlp")).allowed);  // output may hold env
    EXPECT_FALSE(Authorize(c, On(Action::kExec, "nlp")).allowed);      // so may the task's files
    EXPECT_FALSE(Authorize(c, On(Action::kExport)).allowed);           // every spec's env
    for (Action a : {Action::kSubmit, Action::kCancel, Action::kPurge, Action::kRelease}) {
      const AccessDecision d = Authorize(c, On(a, "nlp"));
      EXPECT_FALSE(d.allowed);
      EXPECT_NE(d.reason.find("read-only"), std::string::npos) << d.reason;
    }
  }
}

TEST(AuthorizerTest, AdminDoesEverythingUsersDoButNotTheAgentApi) {
  const Caller root = User("root", {"tessera:admins"});
  for (Action a : {Action::kSubmit, Action::kCancel, Action::kPurge, Action::kRelease,
                   Action::kReadLogs, Action::kReadJob, Action::kExec}) {
    EXPECT_TRUE(Authorize(root, On(a, "any/queue")).allowed);
  }
  EXPECT_TRUE(MaySeeEnv(root, "x"));
  EXPECT_TRUE(Authorize(root, On(Action::kExport)).allowed);
  EXPECT_FALSE(Authorize(User("alice", {"team:nlp"}), On(Action::kExport)).allowed);
  EXPECT_FALSE(Authorize(root, {Action::kAgent, "", {"node-0"}}).allowed);
}

TEST(AuthorizerTest, MetricsScraperReadsStatusAndMetricsOnly) {
  const Caller prom = User("prometheus", {"tessera:metrics"});
  EXPECT_TRUE(Authorize(prom, On(Action::kMetrics)).allowed);
  EXPECT_TRUE(Authorize(prom, On(Action::kStatus)).allowed);
  EXPECT_FALSE(Authorize(prom, On(Action::kListJobs)).allowed);
  EXPECT_FALSE(Authorize(prom, On(Action::kReadJob, "nlp")).allowed);
  EXPECT_FALSE(MaySeeQueue(prom, "nlp"));
}

TEST(AuthorizerTest, UserWithoutRolesMaySubmitNowhere) {
  const Caller nobody = User("bob", {});
  const AccessDecision d = Authorize(nobody, On(Action::kSubmit, "default"));
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.reason.find("no team"), std::string::npos) << d.reason;
  EXPECT_FALSE(Authorize(nobody, On(Action::kSubmit)).allowed);  // queue not known yet
  EXPECT_TRUE(Authorize(User("t", {"team:a"}), On(Action::kSubmit)).allowed);
}

TEST(AuthorizerTest, NodeActsOnlyForItsOwnNodes) {
  const Caller n0 = Node({"node-0"});
  EXPECT_TRUE(Authorize(n0, {Action::kAgent, "", {"node-0"}}).allowed);
  const AccessDecision d = Authorize(n0, {Action::kAgent, "", {"node-0", "node-1"}});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.reason.find("not to node-1"), std::string::npos) << d.reason;
  EXPECT_FALSE(Authorize(n0, On(Action::kListJobs)).allowed);
  EXPECT_FALSE(Authorize(n0, On(Action::kCancel, "default")).allowed);
  EXPECT_FALSE(MaySeeQueue(n0, "default"));
  // One agent emulating two nodes holds one credential for both.
  EXPECT_TRUE(
      Authorize(Node({"sim-0000", "sim-0001"}), {Action::kAgent, "", {"sim-0001"}}).allowed);
}

TEST(AuthorizerTest, AnonymousGetsOnlyHealth) {
  const Caller anon;
  EXPECT_TRUE(Authorize(anon, On(Action::kHealth)).allowed);
  EXPECT_FALSE(Authorize(anon, On(Action::kStatus)).allowed);
  EXPECT_FALSE(Authorize(anon, {Action::kAgent, "", {"node-0"}}).allowed);
}

}  // namespace
}  // namespace tessera
