// Label keys and values as Kubernetes validates them, and selectors in kubectl's syntax:
// equality, inequality (which also selects objects without the key), set membership,
// existence; malformed selectors refused naming the requirement.
#include "spec/label_selector.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

bool Selects(const std::string& selector, const Labels& labels) {
  auto sel = LabelSelector::Parse(selector);
  EXPECT_TRUE(sel.has_value()) << selector << ": " << (sel ? "" : sel.error().message);
  return sel && sel->Matches(labels);
}

std::string Refusal(const std::string& selector) {
  auto sel = LabelSelector::Parse(selector);
  return sel ? "" : sel.error().message;
}

TEST(LabelSelectorTest, OperatorsMatchAsKubectlDoes) {
  const Labels nlp_prod = {{"team", "nlp"}, {"tier", "prod"}};
  const Labels vision = {{"team", "vision"}};
  EXPECT_TRUE(Selects("", vision));
  EXPECT_TRUE(Selects("team=nlp", nlp_prod));
  EXPECT_TRUE(Selects("team==nlp", nlp_prod));
  EXPECT_FALSE(Selects("team=nlp", vision));
  EXPECT_TRUE(Selects("tier!=test", vision)) << "!= selects objects without the key";
  EXPECT_FALSE(Selects("tier!=prod", nlp_prod));
  EXPECT_TRUE(Selects("team in (vision, audio)", vision));
  EXPECT_FALSE(Selects("team in (audio)", vision));
  EXPECT_TRUE(Selects("team notin (nlp)", vision));
  EXPECT_TRUE(Selects("tier notin (prod)", vision)) << "notin selects objects without the key";
  EXPECT_TRUE(Selects("tier", nlp_prod));
  EXPECT_FALSE(Selects("tier", vision));
  EXPECT_TRUE(Selects("!tier", vision));
  EXPECT_TRUE(Selects("team=nlp, tier in (prod,canary)", nlp_prod)) << "every requirement holds";
  EXPECT_FALSE(Selects("team=nlp,tier=canary", nlp_prod));
  EXPECT_TRUE(Selects("example.com/owner=ana", {{"example.com/owner", "ana"}}));
}

TEST(LabelSelectorTest, MalformedSelectorsAreRefusedNamingTheRequirement) {
  EXPECT_NE(Refusal("team in (nlp").find("unclosed '('"), std::string::npos);
  EXPECT_NE(Refusal("team=nlp)").find("unbalanced ')'"), std::string::npos);
  EXPECT_NE(Refusal("team=nlp,,tier").find("an empty requirement"), std::string::npos);
  EXPECT_NE(Refusal("team in nlp").find("team in nlp: expected a list in parentheses"),
            std::string::npos)
      << Refusal("team in nlp");
  EXPECT_NE(Refusal("-team=x").find("key -team"), std::string::npos);
  EXPECT_NE(Refusal("team=bad value").find("value bad value"), std::string::npos);
  EXPECT_NE(Refusal("Example.com/x=1").find("DNS subdomain"), std::string::npos);
}

TEST(LabelSelectorTest, KeysAndValuesFollowKubernetesRules) {
  EXPECT_EQ(LabelKeyProblem("app.kubernetes.io/name"), "");
  EXPECT_EQ(LabelKeyProblem("a_b.c-d"), "");
  EXPECT_NE(LabelKeyProblem(""), "");
  EXPECT_NE(LabelKeyProblem(std::string(64, 'a')), "");
  EXPECT_NE(LabelKeyProblem("x/"), "");
  EXPECT_NE(LabelKeyProblem("a..b/x"), "");
  EXPECT_EQ(LabelValueProblem(""), "") << "an empty value is allowed";
  EXPECT_NE(LabelValueProblem("ends-"), "");
  EXPECT_NE(LabelValueProblem("has space"), "");
}

}  // namespace
}  // namespace tessera
