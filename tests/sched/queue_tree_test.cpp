// The queue tree: fractions and absolute amounts resolved against the cluster, parent
// guarantees, entitlements worked by hand, the user → queue rules, and every kind of tree that
// cannot be right refused with its key.
#include "sched/quota/queue_tree.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

// 100 GPUs, 1000 cores, 10000 GiB.
const Resources kCapacity{1000 * 1000, 10000 * 1024, 100 * 1000};

QuotaAmount Abs(double v) { return {true, false, v}; }
QuotaAmount Pct(double v) { return {true, true, v}; }

QueueSpec Q(std::string name, std::string parent = "", QuotaAmount gpu = {}, double weight = 1) {
  QueueSpec q;
  q.name = std::move(name);
  q.parent = std::move(parent);
  q.guaranteed.gpu = gpu;
  q.weight = weight;
  return q;
}

std::string ErrorOf(const QueueTreeSpec& spec) {
  auto t = QueueTree::Build(spec, kCapacity);
  return t ? std::string("(built)") : t.error().message;
}

TEST(QueueTreeTest, EntitlementIsGuaranteePlusAWeightedShareOfTheRest) {
  QueueTreeSpec spec;
  spec.queues = {Q("a", "", Pct(0.6)), Q("b"), Q("a1", "a", Abs(20), 3), Q("a2", "a", Abs(10), 1)};
  auto t = QueueTree::Build(spec, kCapacity);
  ASSERT_TRUE(t) << t.error().message;
  // Top level: a is guaranteed 60%, b nothing; the 40% left splits 1:1. a = 0.6 + 0.2, b = 0.2.
  EXPECT_DOUBLE_EQ(t->node(t->Find("a")).entitlement, 0.8);
  EXPECT_DOUBLE_EQ(t->node(t->Find("b")).entitlement, 0.2);
  // Under a (0.8): children guaranteed 0.2 + 0.1; the 0.5 left splits 3:1.
  EXPECT_DOUBLE_EQ(t->node(t->Find("a/a1")).entitlement, 0.2 + 0.375);
  EXPECT_DOUBLE_EQ(t->node(t->Find("a2")).entitlement, 0.1 + 0.125);
  EXPECT_EQ(t->node(t->Find("a")).guaranteed.gpu_milli, 60'000);
  EXPECT_EQ(t->node(t->Find("a1")).path, "a/a1");
  ASSERT_EQ(t->leaves().size(), 3U);
  EXPECT_EQ(t->node(t->leaves()[0]).path, "a/a1");
  EXPECT_EQ(t->node(t->Find("b")).borrow_limit.gpu_milli, kUnlimited);
}

TEST(QueueTreeTest, AnUnsetParentGuaranteeIsItsChildrensSum) {
  QueueTreeSpec spec;
  spec.queues = {Q("org"), Q("t1", "org", Abs(8)), Q("t2", "org", Pct(0.25))};
  spec.queues[1].guaranteed.cpu = Abs(16);
  auto t = QueueTree::Build(spec, kCapacity);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->node(t->Find("org")).guaranteed.gpu_milli, 8'000 + 25'000);
  EXPECT_EQ(t->node(t->Find("org")).guaranteed.cpu_milli, 16'000);
}

TEST(QueueTreeTest, UsersMapToLeavesAndTheRestByRule) {
  QueueTreeSpec spec;
  spec.queues = {Q("x"), Q("y")};
  spec.queues[0].users = {"alice"};
  auto t = QueueTree::Build(spec, kCapacity);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->LeafFor("alice", "j1"), t->Find("x"));
  EXPECT_EQ(t->LeafFor("bob", "j1"), -1);  // no rule: the caller reports it
  spec.unmatched = "y";
  t = QueueTree::Build(spec, kCapacity);
  EXPECT_EQ(t->LeafFor("bob", "j1"), t->Find("y"));
  spec.unmatched = "hash";
  t = QueueTree::Build(spec, kCapacity);
  const int h = t->LeafFor("", "job-17");
  EXPECT_GE(h, 0);
  EXPECT_EQ(t->LeafFor("", "job-17"), h);  // deterministic
  int to_x = 0;
  for (int i = 0; i < 200; ++i) to_x += t->LeafFor("", "job-" + std::to_string(i)) == t->Find("x");
  EXPECT_GT(to_x, 60);  // spread over both leaves, not all in one
  EXPECT_LT(to_x, 140);
}

TEST(QueueTreeTest, EqualSharesGiveEveryQueueTheSameGuarantee) {
  auto t = QueueTree::EqualShares({"u1", "u2", "u3", "u4"}, kCapacity);
  ASSERT_EQ(t.leaves().size(), 4U);
  for (int q : t.leaves()) {
    EXPECT_EQ(t.node(q).guaranteed.gpu_milli, 25'000);
    EXPECT_DOUBLE_EQ(t.node(q).entitlement, 0.25);
  }
}

TEST(QueueTreeTest, TreesThatCannotBeRightAreRefusedWithTheirKey) {
  QueueTreeSpec cycle;
  cycle.queues = {Q("a", "c"), Q("b", "a"), Q("c", "b")};
  EXPECT_NE(
      ErrorOf(cycle).find("key 'queues[0].parent': the parents form a cycle (a -> c -> b -> a)"),
      std::string::npos)
      << ErrorOf(cycle);

  QueueTreeSpec self;
  self.queues = {Q("a", "a")};
  EXPECT_NE(ErrorOf(self).find("queues[0].parent': the parents form a cycle"), std::string::npos);

  QueueTreeSpec twice;
  twice.queues = {Q("a"), Q("a")};
  EXPECT_NE(ErrorOf(twice).find("key 'queues[1].name': 'a' is used twice (also queues[0])"),
            std::string::npos);

  QueueTreeSpec unknown;
  unknown.queues = {Q("a"), Q("b", "nope")};
  EXPECT_NE(ErrorOf(unknown).find("key 'queues[1].parent': unknown queue 'nope'"),
            std::string::npos);

  QueueTreeSpec negative;
  negative.queues = {Q("a"), Q("b", "", Abs(-1))};
  EXPECT_NE(ErrorOf(negative).find("key 'queues[1].guaranteed.gpu': negative"), std::string::npos);

  QueueTreeSpec over_parent;
  over_parent.queues = {Q("p", "", Abs(10)), Q("c1", "p", Abs(6)), Q("c2", "p", Abs(5))};
  EXPECT_NE(
      ErrorOf(over_parent).find("key 'queues[0].guaranteed.gpu': its children are guaranteed more"),
      std::string::npos)
      << ErrorOf(over_parent);

  QueueTreeSpec over_cluster;
  over_cluster.queues = {Q("a", "", Pct(0.7)), Q("b", "", Pct(0.4))};
  EXPECT_NE(
      ErrorOf(over_cluster).find("key 'queues': the top-level queues are guaranteed more gpu"),
      std::string::npos);

  QueueTreeSpec weight;
  weight.queues = {Q("a", "", {}, 0)};
  EXPECT_NE(ErrorOf(weight).find("key 'queues[0].weight'"), std::string::npos);

  QueueTreeSpec inner_users;
  inner_users.queues = {Q("a"), Q("b", "a")};
  inner_users.queues[0].users = {"u"};
  EXPECT_NE(ErrorOf(inner_users).find("key 'queues[0].users': only a leaf queue"),
            std::string::npos);

  QueueTreeSpec user_twice;
  user_twice.queues = {Q("a"), Q("b")};
  user_twice.queues[0].users = {"u"};
  user_twice.queues[1].users = {"u"};
  EXPECT_NE(ErrorOf(user_twice).find("key 'queues[1].users[0]': user 'u' is already in queues[0]"),
            std::string::npos);

  QueueTreeSpec bad_unmatched;
  bad_unmatched.queues = {Q("a")};
  bad_unmatched.unmatched = "zzz";
  EXPECT_NE(ErrorOf(bad_unmatched).find("key 'unmatched': unknown queue 'zzz'"), std::string::npos);

  QueueTreeSpec percent;
  percent.queues = {Q("a", "", Pct(1.5))};
  EXPECT_NE(ErrorOf(percent).find("key 'queues[0].guaranteed.gpu': more than 100%"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
