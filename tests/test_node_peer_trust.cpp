// What a cluster node takes from its peers (issue 28, item 8), against real conveyor-node
// processes on loopback and a stranger in this test process that speaks the cluster's protocol
// through CAF's middleman: a hello must prove its rank (cluster.secret_file) and a refused one
// does not keep the real node of that rank out; a dialed peer's answer must prove its rank
// too; a second hello for a rank that is up is refused; only a peer's own node may say it
// left; a node serves samples to its peers only; and records a peer gives that are not the
// samples asked for fall back to storage.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <set>

#include "core/storage/cache_plan.hpp"
#include "messages/peer_cache.hpp"
#include "support/cluster_nodes.hpp"
#include "support/pipeline_harness.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::cluster_topology;
using testing::json_array;
using testing::json_number;
using testing::loopback;
using testing::start_node;
using testing::sum;
using testing::temp_dir;

// What the nodes of cluster_topology() of `world` nodes over `dataset` say in hello, as `rank`.
peer_identity identity_of(const std::filesystem::path& dataset, dataset_format format,
                          std::uint64_t rank, std::uint64_t world) {
  auto source = open_sample_source(dataset, format);
  EXPECT_TRUE(source) << source.error().what();
  peer_identity out;
  out.dataset_size = (*source)->size();
  out.seed = 5;
  out.world = world;
  out.rank = rank;
  out.plan_digest = cache_plan::make(**source, {1ULL << 30U, 0}, out.seed,
                                     {rank, world, cache_partition::by_hash})
                        .digest();
  return out;
}

// A cache server of the stranger's: answers hello with `identity`, a fetch with serve(id), and
// counts what it is asked.
struct fake_peer {
  peer_identity identity;
  std::function<peer_record(std::uint64_t)> serve;
  std::shared_ptr<std::atomic<int>> hellos = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> fetches = std::make_shared<std::atomic<int>>(0);
};

peer_cache_actor::behavior_type fake_server(peer_cache_actor::pointer, fake_peer fake) {
  return {
      [fake](atoms::hello, const peer_identity&, const caf::strong_actor_ptr&) {
        *fake.hellos += 1;
        return fake.identity;
      },
      [fake](atoms::fetch, std::uint64_t, std::uint64_t id) {
        *fake.fetches += 1;
        return fake.serve(id);
      },
      [fake](atoms::leave, std::uint64_t) { return fake.identity.rank; },
  };
}

peer_record not_held(std::uint64_t) {
  peer_record r;
  r.status = static_cast<std::uint8_t>(peer_status::not_held);
  return r;
}

caf::actor_system_config& with_network(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  peer_message_types(cfg);
  return cfg;
}

// A process that is no node of the cluster but speaks its protocol: CAF's middleman and the
// cluster's message types. Its actors end with it.
class stranger {
 public:
  stranger() : system_(with_network(config_)) {}
  ~stranger() {
    for (auto& fake : fakes_) {
      caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
    }
    fakes_.clear();
  }
  stranger(const stranger&) = delete;
  stranger& operator=(const stranger&) = delete;

  /// The cache server of the node at 127.0.0.1:`port`.
  peer_cache_actor reach(std::uint16_t port) {
    auto server = system_.middleman().remote_actor<peer_cache_actor>("127.0.0.1", port);
    EXPECT_TRUE(server) << system_.render(server.error());
    return server ? *server : peer_cache_actor{};
  }

  /// A fake cache server of this process; published at 127.0.0.1:`port` unless 0.
  peer_cache_actor spawn(fake_peer fake, std::uint16_t port = 0) {
    fakes_.push_back(system_.spawn(fake_server, std::move(fake)));
    if (port != 0) {
      auto published = system_.middleman().publish(fakes_.back(), port, "127.0.0.1", true);
      EXPECT_TRUE(published) << system_.render(published.error());
    }
    return fakes_.back();
  }

  /// `node`'s answer to hello(`who`, `server`): its identity, or why it refused.
  caf::expected<peer_identity> hello(const peer_cache_actor& node, const peer_identity& who,
                                     const peer_cache_actor& server) {
    return ask<peer_identity>(node, atoms::hello::value, who,
                              caf::actor_cast<caf::strong_actor_ptr>(server));
  }

  /// `node`'s answer to fetch(0, `id`).
  caf::expected<peer_record> fetch(const peer_cache_actor& node, std::uint64_t id) {
    return ask<peer_record>(node, atoms::fetch::value, std::uint64_t{0}, id);
  }

  /// `node`'s answer to leave(`rank`).
  caf::expected<std::uint64_t> leave(const peer_cache_actor& node, std::uint64_t rank) {
    return ask<std::uint64_t>(node, atoms::leave::value, rank);
  }

  std::string render(const caf::error& e) { return system_.render(e); }

 private:
  template <class Answer, class... Ts>
  caf::expected<Answer> ask(const peer_cache_actor& node, Ts&&... xs) {
    caf::expected<Answer> out = caf::make_error(caf::sec::request_timeout);
    caf::scoped_actor self{system_};
    self->request(node, 30s, std::forward<Ts>(xs)...)
        .receive([&](Answer& answer) { out = std::move(answer); },
                 [&](caf::error& e) { out = std::move(e); });
    return out;
  }

  caf::actor_system_config config_;
  caf::actor_system system_;
  std::vector<peer_cache_actor> fakes_;
};

// A secret file both real nodes read (0600).
std::filesystem::path write_secret(const temp_dir& dir, const std::string& text) {
  auto path = dir / "secret";
  std::ofstream(path) << text << "\n";
  EXPECT_EQ(::chmod(path.c_str(), 0600), 0);
  return path;
}

std::string secret_key(const std::filesystem::path& secret) {
  return "peer_wait_s = 60\nsecret_file = \"" + secret.string() + "\"\n";
}

TEST(NodePeerTrust, AHelloThatDoesNotProveItsRankIsRefusedAndTheRankMayStillCome) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, loopback(ports), secret_key(write_secret(dir, "s")));
  auto second = start_node(dir, file, 1);  // waits for rank 0
  ASSERT_TRUE(second->wait_for_log("listens at", 60s)) << second->err();
  stranger s;
  fake_peer fake{identity_of(folder, dataset_format::folder, 0, 2), not_held};
  auto server = s.spawn(fake);
  {
    auto node = s.reach(ports[1]);
    for (auto proof : {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>(32, 0xab)}) {
      auto claim = fake.identity;
      claim.proof = proof;
      auto answer = s.hello(node, claim, server);
      ASSERT_FALSE(answer) << "a hello without the proof was answered";
      EXPECT_NE(s.render(answer.error()).find("no proof of rank 0"), std::string::npos)
          << s.render(answer.error());
    }
  }
  EXPECT_TRUE(second->wait_for_log("was refused: it does not prove that rank", 60s))
      << second->err();
  // The real rank 0 is not kept out by what the stranger said.
  auto first = start_node(dir, file, 0);
  for (auto* node : {first.get(), second.get()}) {
    ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
    EXPECT_GT(sum(json_array(node->out(), "peer_fetches")), 0) << node->out();
    EXPECT_NE(node->out().find("\"failed_peers\":[]"), std::string::npos) << node->out();
    EXPECT_EQ(node->err().find("taken on their word"), std::string::npos) << node->err();
  }
  EXPECT_EQ(*fake.fetches, 0);
}

TEST(NodePeerTrust, ANodeDoesNotUseAnImpostorAnsweringAtItsPeersAddress) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, loopback(ports), secret_key(write_secret(dir, "s")));
  stranger s;
  // At rank 1's address, a server that says it is rank 1 but cannot prove it.
  fake_peer impostor{identity_of(folder, dataset_format::folder, 1, 2), not_held};
  impostor.identity.proof.assign(32, 0x5a);
  s.spawn(impostor, ports[1]);
  auto first = start_node(dir, file, 0, {"--set", "cluster.peer_wait_s=2"});
  ASSERT_EQ(first->finish(std::chrono::seconds(240)), 0) << first->err();
  EXPECT_GE(*impostor.hellos, 1);
  EXPECT_EQ(*impostor.fetches, 0);
  EXPECT_EQ(sum(json_array(first->out(), "peer_fetches")), 0) << first->out();
  EXPECT_EQ(json_number(first->out(), "lost"), 0u);
  EXPECT_NE(first->out().find("never reached (its answer to hello does not prove its rank"),
            std::string::npos)
      << first->out();
}

// Two real nodes of a run long enough for the stranger to speak while both are up.
struct two_nodes {
  temp_dir dir;
  std::filesystem::path folder = testing::make_image_folder(dir, 40);
  std::vector<std::uint16_t> ports = testing::free_tcp_ports(2);
  std::filesystem::path file = cluster_topology(dir, folder, loopback(ports));
  std::vector<std::string> long_run{"--set", "trainer.epochs=10", "--set", "trainer.step_ms=50"};
  std::unique_ptr<testing::node_process> first = start_node(dir, file, 0, long_run);
  std::unique_ptr<testing::node_process> second = start_node(dir, file, 1, long_run);

  void wait_until_up() {
    for (auto* node : {first.get(), second.get()}) {
      ASSERT_TRUE(node->wait_for_log("every peer answered", 120s)) << node->err();
    }
  }
  void finish() {
    for (auto* node : {first.get(), second.get()}) {
      ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
      EXPECT_EQ(json_number(node->out(), "lost"), 0u) << node->out();
    }
  }
};

TEST(NodePeerTrust, ASecondHelloForARankThatIsUpIsRefused) {
  two_nodes cluster;
  cluster.wait_until_up();
  stranger s;
  fake_peer fake{identity_of(cluster.folder, dataset_format::folder, 0, 2), not_held};
  auto server = s.spawn(fake);
  {
    auto answer = s.hello(s.reach(cluster.ports[1]), fake.identity, server);
    ASSERT_FALSE(answer) << "a second hello as rank 0 was answered";
    EXPECT_NE(s.render(answer.error()).find("rank 0 is up already"), std::string::npos)
        << s.render(answer.error());
  }
  cluster.finish();
  EXPECT_EQ(*fake.fetches, 0);  // rank 0's connection was kept, not replaced
  EXPECT_NE(cluster.second->err().find("a second hello as 127.0.0.1:" +
                                       std::to_string(cluster.ports[0]) + " (rank 0) was refused"),
            std::string::npos)
      << cluster.second->err();
  EXPECT_NE(cluster.second->out().find("\"failed_peers\":[]"), std::string::npos)
      << cluster.second->out() << cluster.second->err() << cluster.first->err();
}

TEST(NodePeerTrust, ALeaveFromAnotherNodeIsIgnored) {
  two_nodes cluster;
  cluster.wait_until_up();
  stranger s;
  {
    auto answer = s.leave(s.reach(cluster.ports[1]), 0);
    ASSERT_FALSE(answer) << "a leave for rank 0 from a stranger was taken";
    EXPECT_NE(s.render(answer.error()).find("the sender is not rank 0"), std::string::npos)
        << s.render(answer.error());
  }
  EXPECT_TRUE(cluster.second->wait_for_log("a leave for rank 0 from", 60s))
      << cluster.second->err();
  cluster.finish();
  EXPECT_NE(cluster.second->err().find("was ignored: it is not that peer's node"),
            std::string::npos)
      << cluster.second->err();
}

TEST(NodePeerTrust, RecordsThatAreNotTheSampleAskedForFallBackToStorage) {
  temp_dir dir;
  const auto shards = dir / "shards";
  testing::write_jpeg_dataset(shards);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, shards, loopback(ports), "peer_wait_s = 60\n", "shards");
  auto node = start_node(dir, file, 1);  // waits for rank 0: the stranger
  ASSERT_TRUE(node->wait_for_log("listens at", 60s)) << node->err();
  auto source = open_sample_source(shards, dataset_format::shards);
  ASSERT_TRUE(source);
  // Every even sample comes as another sample's record (a real JPEG, another key); every odd
  // one with a byte of its payload flipped.
  fake_peer liar{identity_of(shards, dataset_format::shards, 0, 2), [&](std::uint64_t id) {
                   const auto n = (*source)->size();
                   auto r = (*source)->read(id % 2 == 0 ? (id + 1) % n : id);
                   peer_record out;
                   out.status = static_cast<std::uint8_t>(peer_status::found);
                   out.key = r->key;
                   out.label = r->label;
                   out.payload = r->payload;
                   if (id % 2 == 1) {
                     out.payload[out.payload.size() / 2] ^= 0xffU;
                   }
                   return out;
                 }};
  stranger s;
  auto server = s.spawn(liar);
  ASSERT_TRUE(s.hello(s.reach(ports[1]), liar.identity, server));
  ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
  const auto& out = node->out();
  EXPECT_GT(*liar.fetches, 0);
  EXPECT_EQ(sum(json_array(out, "peer_fetches")), 0) << out;
  EXPECT_GT(sum(json_array(out, "peer_fallbacks")), 0) << out;
  EXPECT_EQ(json_number(out, "lost"), 0u) << out;
  EXPECT_NE(out.find("127.0.0.1:" + std::to_string(ports[0]) + " (rank 0): "), std::string::npos)
      << out;
  EXPECT_NE(out.find("did not match this node's dataset"), std::string::npos) << out;
  EXPECT_NE(node->err().find("does not match this node's dataset"), std::string::npos)
      << node->err();
  // Its share, each sample once per epoch, from storage.
  auto ids = testing::read_ids_file(testing::ids_of(dir, 1));
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(testing::cluster_epochs));
  for (const auto& [e, got] : ids) {
    EXPECT_EQ(std::set<std::uint64_t>(got.begin(), got.end()).size(), got.size()) << e;
  }
}

TEST(NodePeerTrust, AFetchFromANodeThatIsNoPeerIsRefused) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto node = start_node(dir, cluster_topology(dir, folder, loopback(ports)), 1);
  ASSERT_TRUE(node->wait_for_log("listens at", 60s)) << node->err();
  // A sample the node's cache holds by the plan: it would read it from storage for a peer.
  auto source = open_sample_source(folder, dataset_format::folder);
  ASSERT_TRUE(source);
  auto plan = cache_plan::make(**source, {1ULL << 30U, 0}, 5, {1, 2, cache_partition::by_hash});
  std::uint64_t held = 0;
  while (held < plan.size() && plan.holder(held) != std::optional<std::uint64_t>(1)) {
    ++held;
  }
  ASSERT_LT(held, plan.size());
  stranger s;
  auto answer = s.fetch(s.reach(ports[1]), held);
  ASSERT_TRUE(answer) << s.render(answer.error());
  EXPECT_EQ(answer->status, static_cast<std::uint8_t>(peer_status::not_a_peer));
  EXPECT_TRUE(answer->payload.empty());
  EXPECT_TRUE(node->wait_for_log("which is no peer of this node, was refused", 60s)) << node->err();
}

TEST(NodePeerTrust, ASecretFileOthersMayReadStopsStartUpNamingIt) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 4);
  auto ports = testing::free_tcp_ports(2);
  auto secret = write_secret(dir, "s");
  ASSERT_EQ(::chmod(secret.c_str(), 0644), 0);
  auto file = cluster_topology(dir, folder, loopback(ports), secret_key(secret));
  auto run = testing::run_node(dir, "--topology " + file.string() + " --set cluster.rank=0");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("cluster.secret_file: " + secret.string() +
                         ": its group or others may read or write it"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace conveyor
