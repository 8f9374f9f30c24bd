// Tests of LoadCluster: short forms, the openb node list and Muri's n8g8 from
// ../shared/traces, the YAML form (levels, domains, the examples under examples/config/clusters) and
// bad input of every kind, with the error text.
#include "sim/cluster_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/rng.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kTraces = "../shared/traces";

class ClusterSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tessera_cluster_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  // The error LoadCluster gives for `yaml` written to a file; fails the test if it loads.
  std::string YamlError(const std::string& yaml) {
    const std::string path = Write("bad.yaml", yaml);
    auto cluster = LoadCluster(path);
    if (cluster) {
      ADD_FAILURE() << "loaded:\n" << yaml;
      return "";
    }
    EXPECT_THAT(cluster.error().message, HasSubstr(path));
    return cluster.error().message;
  }
  fs::path dir_;
};

std::map<std::string, int> GpusPerModel(const Cluster& c) {
  std::map<std::string, int> out;
  for (const Node& n : c.nodes()) {
    if (n.gpu_count > 0) out[c.models().Name(n.gpu_model)] += n.gpu_count;
  }
  return out;
}

// ---- short forms -------------------------------------------------------------------------

TEST_F(ClusterSpecTest, ShortForm) {
  auto cluster = LoadCluster("4x8");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 4);
  EXPECT_EQ(cluster->total_gpus(), 32);
  const Node& n = cluster->node(NodeId(3));
  EXPECT_EQ(n.name, "node-0003");
  EXPECT_EQ(n.gpu_count, 8);
  EXPECT_EQ(cluster->models().Name(n.gpu_model), "GPU");
  EXPECT_EQ(n.capacity.cpu_milli, 8 * 16000);
  EXPECT_EQ(n.capacity.memory_mib, 8 * 128 * 1024);
  EXPECT_EQ(n.capacity.gpu_milli, 8000);
  EXPECT_TRUE(cluster->topology().levels.empty());
}

TEST_F(ClusterSpecTest, ShortFormWithModel) {
  auto cluster = LoadCluster("128x8:V100");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 128);
  EXPECT_EQ(cluster->total_gpus(), 1024);
  EXPECT_EQ(cluster->models().size(), 1);
  EXPECT_EQ(cluster->models().Name(0), "V100");
  EXPECT_EQ(cluster->node(NodeId(127)).name, "node-0127");
}

TEST_F(ClusterSpecTest, BadShortForms) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0x8", "node count must be 1..1000000"},
      {"2000000x8", "node count must be 1..1000000"},
      {"99999999999999999999999x8", "node count must be"},
      {"4x0", "GPUs per node must be 1..16"},
      {"4x17", "GPUs per node must be 1..16"},
      {"4x8:", "GPU model ''"},
      {"4x8:H 100", "GPU model 'H 100'"},
  };
  for (const auto& [spec, reason] : cases) {
    auto cluster = LoadCluster(spec);
    ASSERT_FALSE(cluster) << spec;
    EXPECT_THAT(cluster.error().message, HasSubstr("cluster '" + spec + "'")) << spec;
    EXPECT_THAT(cluster.error().message, HasSubstr(reason)) << spec;
  }
}

TEST_F(ClusterSpecTest, NotAShortFormNorAFile) {
  auto cluster = LoadCluster("big-cluster");
  ASSERT_FALSE(cluster);
  EXPECT_EQ(cluster.error().code, Error::Code::kNotFound);
  EXPECT_THAT(cluster.error().message, HasSubstr("big-cluster: no such file"));
  EXPECT_THAT(cluster.error().message, HasSubstr("128x8:H100"));
  EXPECT_FALSE(LoadCluster(""));
}

TEST_F(ClusterSpecTest, Directory) {
  auto cluster = LoadCluster(dir_.string());
  ASSERT_FALSE(cluster);
  EXPECT_THAT(cluster.error().message, HasSubstr("is a directory"));
}

// ---- CSV ---------------------------------------------------------------------------------

TEST_F(ClusterSpecTest, OpenbNodeListExcerpt) {
  const std::string path = Write("nodes.csv",
                                 "sn,cpu_milli,memory_mib,gpu,model\r\n"
                                 "openb-node-0227,32000,262144,0,\r\n"
                                 "openb-node-0228,128000,786432,8,G3\r\n"
                                 "openb-node-0229,96000,786432,8,V100M32\r\n"
                                 "openb-node-0230,96000,786432,2,G3\r\n");
  auto cluster = LoadCluster(path);
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 4);
  EXPECT_EQ(cluster->total_gpus(), 18);
  EXPECT_EQ(cluster->node(NodeId(0)).gpu_count, 0);
  EXPECT_EQ(cluster->node(NodeId(1)).name, "openb-node-0228");
  EXPECT_EQ(cluster->node(NodeId(1)).capacity.cpu_milli, 128000);
  EXPECT_EQ(cluster->node(NodeId(1)).capacity.memory_mib, 786432);
  EXPECT_THAT(GpusPerModel(*cluster), (std::map<std::string, int>{{"G3", 10}, {"V100M32", 8}}));
}

TEST_F(ClusterSpecTest, RealOpenbNodeList) {
  if (!fs::exists(kTraces)) GTEST_SKIP() << kTraces << " is not here";
  auto cluster = LoadCluster(kTraces + "/alibaba-openb-2023/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 1213);
  EXPECT_EQ(cluster->total_gpus(), 6212);
  EXPECT_EQ(cluster->models().size(), 7);
  EXPECT_THAT(GpusPerModel(*cluster), (std::map<std::string, int>{{"G2", 4392},
                                                                  {"T4", 842},
                                                                  {"G3", 312},
                                                                  {"P100", 265},
                                                                  {"V100M32", 204},
                                                                  {"V100M16", 195},
                                                                  {"A10", 2}}));

  auto all = LoadCluster(kTraces + "/alibaba-openb-2023/openb_node_list_all_node.csv");
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->node_count(), 1523);
  EXPECT_EQ(all->total_gpus(), 6212);
}

TEST_F(ClusterSpecTest, RealMuriN8g8) {
  if (!fs::exists(kTraces)) GTEST_SKIP() << kTraces << " is not here";
  auto cluster = LoadCluster(kTraces + "/muri-philly-2022/n8g8.csv");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 8);
  EXPECT_EQ(cluster->total_gpus(), 64);
  EXPECT_THAT(cluster->topology().levels, ElementsAre("switch"));
  ASSERT_EQ(cluster->topology().domain_names.size(), 1u);
  EXPECT_THAT(cluster->topology().domain_names[0], ElementsAre("switch-0"));
  for (const Node& n : cluster->nodes()) {
    EXPECT_EQ(n.gpu_count, 8);
    EXPECT_THAT(n.domain, ElementsAre(0u));
    EXPECT_EQ(n.capacity.cpu_milli, 92000);
    EXPECT_EQ(n.capacity.memory_mib, 520 * 1024);
  }
}

TEST_F(ClusterSpecTest, MuriSeveralSwitches) {
  auto cluster = LoadCluster(Write("n.csv",
                                   "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,"
                                   "mem_p_node\n3,2,4,32,256"));
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 6);
  EXPECT_EQ(cluster->total_gpus(), 24);
  EXPECT_THAT(cluster->topology().domain_names[0], ElementsAre("switch-0", "switch-1", "switch-2"));
  EXPECT_THAT(cluster->node(NodeId(3)).domain, ElementsAre(1u));
  EXPECT_THAT(cluster->node(NodeId(5)).domain, ElementsAre(2u));
}

TEST_F(ClusterSpecTest, CsvWithoutExtensionIsSniffed) {
  auto cluster =
      LoadCluster(Write("nodes", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,1,T4\n"));
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->total_gpus(), 1);
}

TEST_F(ClusterSpecTest, BadCsv) {
  const std::string header = "sn,cpu_milli,memory_mib,gpu,model\n";
  struct Case {
    std::string content;
    std::string expected;  // after the path
  };
  const std::vector<Case> cases = {
      {header + "n0,1000,1024,1,T4\nn1,1000,1024,17,T4\n",
       ":3:4: column 'gpu': '17' is too large (at most 16)"},
      {header + "n0,1000,1024,-1,T4\n", ":2:4: column 'gpu': must not be negative"},
      {header + "n0,1000,1024,2,\n", ":2:5: column 'model': required for a node with GPUs"},
      {header + "n0,1000,abc,2,T4\n", ":2:3: column 'memory_mib': 'abc' is not a number"},
      {header + "n0,1000,1024,2\n", ":2:5: column 'model': missing"},
      {header + "n0,1000,1024,2,T4\nn0,1000,1024,2,T4\n",
       ":3:1: column 'sn': node 'n0' appears twice (first on line 2)"},
      {header, ": no nodes in the file"},
      {"", ": empty file"},
      {"a,b,c\n1,2,3\n", ":1: unknown cluster CSV format: the header 'a,b,c' is none of"},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,8,8,92,520\n"
       "1,8,8,92,520\n",
       ":3: a Muri cluster spec has one row"},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n0,8,8,92,520\n",
       ":2:1: column 'num_switch': must be at least 1, got '0'"},
      {"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n",
       ": no data row after the header"},
  };
  for (const auto& c : cases) {
    const std::string path = Write("bad.csv", c.content);
    auto cluster = LoadCluster(path);
    ASSERT_FALSE(cluster) << c.content;
    EXPECT_THAT(cluster.error().message, HasSubstr(path + c.expected));
  }
}

// ---- YAML --------------------------------------------------------------------------------

TEST_F(ClusterSpecTest, ExampleLlm10k) {
  auto cluster = LoadCluster("examples/config/clusters/llm-10k.yaml");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 1250);
  EXPECT_EQ(cluster->total_gpus(), 10000);
  const Topology& t = cluster->topology();
  EXPECT_THAT(t.levels, ElementsAre("spine", "leaf"));
  EXPECT_EQ(t.LevelIndex("leaf"), 1);
  ASSERT_EQ(t.domain_names.size(), 2u);
  EXPECT_EQ(t.domain_names[0].size(), 5u);   // ceil(40 / 8)
  EXPECT_EQ(t.domain_names[1].size(), 40u);  // ceil(1250 / 32)
  EXPECT_EQ(t.domain_names[1][39], "leaf-39");
  EXPECT_EQ(t.domain_names[0][4], "spine-4");
  EXPECT_THAT(cluster->node(NodeId(0)).domain, ElementsAre(0u, 0u));
  EXPECT_THAT(cluster->node(NodeId(31)).domain, ElementsAre(0u, 0u));
  EXPECT_THAT(cluster->node(NodeId(32)).domain, ElementsAre(0u, 1u));
  EXPECT_THAT(cluster->node(NodeId(255)).domain, ElementsAre(0u, 7u));
  EXPECT_THAT(cluster->node(NodeId(256)).domain, ElementsAre(1u, 8u));
  EXPECT_THAT(cluster->node(NodeId(1249)).domain, ElementsAre(4u, 39u));
  const Node& n = cluster->node(NodeId(1249));
  EXPECT_EQ(n.name, "h100-1249");
  EXPECT_EQ(cluster->models().Name(n.gpu_model), "H100");
  EXPECT_EQ(n.capacity.cpu_milli, 112000);
  EXPECT_EQ(n.capacity.memory_mib, 2048 * 1024);
}

TEST_F(ClusterSpecTest, ExampleTwoLeaf) {
  auto cluster = LoadCluster("examples/config/clusters/two-leaf.yaml");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 8);
  EXPECT_EQ(cluster->total_gpus(), 64);
  EXPECT_THAT(cluster->topology().domain_names[0], ElementsAre("spine-0"));
  EXPECT_THAT(cluster->topology().domain_names[1], ElementsAre("leaf-0", "leaf-1"));
  EXPECT_THAT(cluster->node(NodeId(3)).domain, ElementsAre(0u, 0u));
  EXPECT_THAT(cluster->node(NodeId(4)).domain, ElementsAre(0u, 1u));
  // CPU and memory default to 16 cores and 128 GiB per GPU.
  EXPECT_EQ(cluster->node(NodeId(0)).capacity.cpu_milli, 128000);
  EXPECT_EQ(cluster->node(NodeId(0)).capacity.memory_mib, 1024 * 1024);
}

TEST_F(ClusterSpecTest, ExampleMixed) {
  auto cluster = LoadCluster("examples/config/clusters/mixed.yaml");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 144 + 32 + 16);
  EXPECT_EQ(cluster->total_gpus(), 144 * 4 + 32 * 8);
  const Topology& t = cluster->topology();
  EXPECT_THAT(t.levels, ElementsAre("spine", "leaf", "nvl72"));
  EXPECT_EQ(t.domain_names[0].size(), 1u + 1u + 1u);
  EXPECT_EQ(t.domain_names[1].size(), 4u + 2u + 1u);
  EXPECT_EQ(t.domain_names[2].size(), 8u + 2u + 1u);
  EXPECT_THAT(cluster->node(NodeId(18)).domain, ElementsAre(0u, 0u, 1u));   // gb200-0018
  EXPECT_THAT(cluster->node(NodeId(36)).domain, ElementsAre(0u, 1u, 2u));   // gb200-0036
  EXPECT_THAT(cluster->node(NodeId(144)).domain, ElementsAre(1u, 4u, 8u));  // l40s-0000
  EXPECT_EQ(cluster->node(NodeId(144)).capacity.cpu_milli, 8 * 16000);
  EXPECT_EQ(cluster->models().Name(cluster->node(NodeId(191)).gpu_model), "none");  // cpu pool
}

TEST_F(ClusterSpecTest, PoolsOpenTheirOwnDomains) {
  auto cluster = ParseClusterYaml(R"(
topology:
  levels: [zone, leaf, rack]
pools:
  - name: gb200
    count: 36
    gpus: 4
    model: GB200
    fanout: {zone: 2, leaf: 1, rack: 18}  # a rack per leaf
  - name: l40s
    count: 5
    gpus: 8
    model: L40S
    cpuCores: 64
    memoryGiB: 512.5
    fanout: {zone: 2, leaf: 1, rack: 4}
  - name: cpu
    count: 2
    gpus: 0
    cpuCores: 192
    memoryGiB: 1536
    fanout: {zone: 1, leaf: 1, rack: 2}
)",
                                  "<test>");
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ(cluster->node_count(), 43);
  EXPECT_EQ(cluster->total_gpus(), 36 * 4 + 5 * 8);
  const Topology& t = cluster->topology();
  EXPECT_THAT(t.domain_names[0], ElementsAre("zone-0", "zone-1", "zone-2"));
  EXPECT_EQ(t.domain_names[1].size(), 2u + 2u + 1u);
  EXPECT_EQ(t.domain_names[2].size(), 2u + 2u + 1u);
  EXPECT_THAT(cluster->node(NodeId(17)).domain, ElementsAre(0u, 0u, 0u));
  EXPECT_THAT(cluster->node(NodeId(18)).domain, ElementsAre(0u, 1u, 1u));
  EXPECT_THAT(cluster->node(NodeId(36)).domain, ElementsAre(1u, 2u, 2u));  // l40s-0000
  EXPECT_THAT(cluster->node(NodeId(40)).domain, ElementsAre(1u, 3u, 3u));  // l40s-0004
  EXPECT_THAT(cluster->node(NodeId(41)).domain, ElementsAre(2u, 4u, 4u));  // cpu-0000
  EXPECT_EQ(cluster->node(NodeId(36)).name, "l40s-0000");
  EXPECT_EQ(cluster->node(NodeId(36)).capacity.memory_mib, 524800);
  EXPECT_EQ(cluster->node(NodeId(41)).gpu_count, 0);
  EXPECT_EQ(cluster->node(NodeId(41)).capacity.cpu_milli, 192000);
}

TEST_F(ClusterSpecTest, FlatYamlAndJson) {
  auto flat = ParseClusterYaml("pools:\n  - {count: 3, gpus: 2, model: T4}\n", "<flat>");
  ASSERT_TRUE(flat) << flat.error().message;
  EXPECT_EQ(flat->total_gpus(), 6);
  EXPECT_TRUE(flat->topology().levels.empty());
  EXPECT_EQ(flat->node(NodeId(2)).name, "pool0-0002");

  auto json = LoadCluster(Write(
      "c.json",
      R"({"topology": {"levels": ["leaf"]}, "pools": [{"count": 4, "gpus": 8, "model": "H200",)"
      R"( "fanout": {"leaf": 2}}]})"));
  ASSERT_TRUE(json) << json.error().message;
  EXPECT_EQ(json->total_gpus(), 32);
  EXPECT_EQ(json->topology().domain_names[0].size(), 2u);

  // No telling extension: not a CSV header, so YAML.
  auto sniffed = LoadCluster(Write("cluster", "pools:\n  - {count: 1, gpus: 1, model: T4}\n"));
  ASSERT_TRUE(sniffed) << sniffed.error().message;
}

TEST_F(ClusterSpecTest, YamlErrorsNameFileLineAndKey) {
  const std::string good_pool = "    count: 4\n    gpus: 8\n    model: H100\n";
  EXPECT_THAT(YamlError("pools:\n  - count: 4\n    gpuz: 8\n"),
              HasSubstr(":3:5: pools[0].gpuz: unknown key (known: name, count, gpus, model"));
  EXPECT_THAT(YamlError("pools:\n  - count: 0\n    gpus: 8\n    model: H100\n"),
              HasSubstr(":2:12: pools[0].count: must be 1..1000000, got 0"));
  EXPECT_THAT(YamlError("pools:\n  - count: -3\n    gpus: 8\n    model: H100\n"),
              HasSubstr("pools[0].count: must be 1..1000000, got -3"));
  EXPECT_THAT(YamlError("pools:\n  - count: 4\n    gpus: 17\n    model: H100\n"),
              HasSubstr(":3:11: pools[0].gpus: must be 0..16, got 17"));
  EXPECT_THAT(YamlError("pools:\n  - count: four\n    gpus: 8\n    model: H100\n"),
              HasSubstr("pools[0].count: 'four' is not a number"));
  EXPECT_THAT(YamlError("pools:\n  - gpus: 8\n    model: H100\n"),
              HasSubstr(":2:5: pools[0]: missing key 'count'"));
  EXPECT_THAT(YamlError("pools:\n  - count: 4\n    gpus: 8\n"),
              HasSubstr("pools[0]: missing key 'model'"));
  EXPECT_THAT(YamlError("pools:\n  - count: 4\n    gpus: 0\n"),
              HasSubstr("pools[0]: missing key 'cpuCores'"));
  EXPECT_THAT(YamlError("pools:\n  - count: 4\n    gpus: 8\n    model: H100\n    cpuCores: 0\n"),
              HasSubstr("pools[0].cpuCores: must be greater than 0"));
  EXPECT_THAT(YamlError("pools: []\n"), HasSubstr("pools: expected a non-empty list"));
  EXPECT_THAT(YamlError("topology:\n  levels: [leaf]\n"), HasSubstr("missing key 'pools'"));
  EXPECT_THAT(YamlError("pools:\n  - " + good_pool.substr(4) + "clusterName: x\n"),
              HasSubstr("clusterName: unknown key"));
  EXPECT_THAT(YamlError("pool:\n  - count: 1\n"),
              HasSubstr(":1:1: pool: unknown key (known: name, topology, pools)"));
  EXPECT_THAT(YamlError("- 1\n- 2\n"), HasSubstr("expected a mapping"));
  EXPECT_THAT(YamlError(""), HasSubstr(": empty cluster spec"));
  EXPECT_THAT(YamlError("pools: [\n"), HasSubstr("not valid YAML"));
  EXPECT_THAT(YamlError("pools:\n  - count: 4\n    count: 5\n    gpus: 8\n    model: H100\n"),
              HasSubstr("pools[0].count: given twice"));
  EXPECT_THAT(YamlError("pools:\n  - name: a\n" + good_pool + "  - name: a\n" + good_pool),
              HasSubstr("pools[1].name: pool name 'a' given twice"));
}

TEST_F(ClusterSpecTest, YamlTopologyErrors) {
  const std::string pool = "pools:\n  - count: 4\n    gpus: 8\n    model: H100\n";
  EXPECT_THAT(
      YamlError("topology:\n  levels: [spine, leaf]\n" + pool),
      HasSubstr("pools[0]: missing key 'fanout' (one entry per topology level: spine, leaf)"));
  EXPECT_THAT(YamlError("topology:\n  levels: [spine, leaf]\n" + pool + "    fanout: {leaf: 2}\n"),
              HasSubstr(":7:13: pools[0].fanout: missing level 'spine'"));
  EXPECT_THAT(
      YamlError("topology:\n  levels: [leaf]\n" + pool + "    fanout: {leaf: 2, rack: 3}\n"),
      HasSubstr("pools[0].fanout.rack: not a topology level (levels: leaf)"));
  EXPECT_THAT(YamlError("topology:\n  levels: [leaf]\n" + pool + "    fanout: {leaf: 0}\n"),
              HasSubstr("pools[0].fanout.leaf: must be 1..1000000, got 0"));
  EXPECT_THAT(YamlError(pool + "    fanout: {leaf: 2}\n"),
              HasSubstr("pools[0].fanout: given, but topology.levels names no levels"));
  EXPECT_THAT(YamlError("topology:\n  levels: [spine, node]\n" + pool),
              HasSubstr("topology.levels[1]: 'node' is implicit"));
  EXPECT_THAT(YamlError("topology:\n  levels: [leaf, leaf]\n" + pool),
              HasSubstr("topology.levels[1]: level 'leaf' given twice"));
  EXPECT_THAT(YamlError("topology:\n  levels: leaf\n" + pool),
              HasSubstr("topology.levels: expected a list"));
  EXPECT_THAT(YamlError("topology:\n  tiers: [leaf]\n" + pool),
              HasSubstr("topology.tiers: unknown key (known: levels)"));
  // The keys of the first draft of the format get a pointer to the one it became.
  EXPECT_THAT(YamlError("topology:\n  levels: [leaf]\n" + pool + "    nodesPerLeaf: 32\n"),
              HasSubstr("domain sizes go under fanout"));
}

TEST_F(ClusterSpecTest, YamlTooManyNodes) {
  EXPECT_THAT(YamlError("pools:\n  - {name: a, count: 600000, gpus: 1, model: T4}\n"
                        "  - {name: b, count: 600000, gpus: 1, model: T4}\n"),
              HasSubstr("pools[1].count: more than 1000000 nodes in all"));
}

TEST_F(ClusterSpecTest, DeeplyNestedYamlIsAnErrorNotACrash) {
  auto cluster = ParseClusterYaml("pools: " + std::string(100000, '['), "<deep>");
  ASSERT_FALSE(cluster);
  EXPECT_THAT(cluster.error().message, HasSubstr("<deep>"));
}

// Random damage to a good spec must give an Error or a Cluster, never a crash or a throw.
TEST_F(ClusterSpecTest, DamagedYamlNeverCrashes) {
  const std::string good =
      "topology:\n  levels: [spine, leaf]\npools:\n  - name: a100\n    count: 8\n"
      "    gpus: 8\n    model: A100\n    fanout: {spine: 2, leaf: 4}\n";
  const std::string alphabet = ":-[]{},\"'&*!|>#\n 0123456789x\t\xff";
  Rng rng(7);
  for (int round = 0; round < 500; ++round) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng.Uniform(5));
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng.Uniform(text.size());
      switch (rng.Uniform(3)) {
        case 0:
          text[at] = alphabet[rng.Uniform(alphabet.size())];
          break;
        case 1:
          text.erase(at, 1 + rng.Uniform(6));
          break;
        default:
          text.insert(at, 1, alphabet[rng.Uniform(alphabet.size())]);
          break;
      }
      if (text.empty()) text = "x";
    }
    auto cluster = ParseClusterYaml(text, "<damaged>");
    if (cluster) {
      EXPECT_LE(cluster->node_count(), 1000000);
    } else {
      EXPECT_FALSE(cluster.error().message.empty());
    }
  }
}

}  // namespace
}  // namespace tessera
