#include "actors/pipeline_runtime.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>

#include "actors/autotuner.hpp"
#include "actors/batcher.hpp"
#include "actors/diagnosis.hpp"
#include "actors/feeder.hpp"
#if CONVEYOR_HAVE_CUDA
#include "core/cuda/cuda_copy_engine.hpp"
#endif
#include "actors/monitor.hpp"
#include "actors/peer_directory.hpp"
#include "actors/peer_fetcher.hpp"
#include "actors/peer_links.hpp"
#include "actors/peer_server.hpp"
#include "actors/preprocessor.hpp"
#include "actors/reader.hpp"
#include "actors/straggler.hpp"
#include "actors/supervisor.hpp"
#include "core/base/log.hpp"
#include "core/feeding/host_copy_engine.hpp"
#include "core/observe/live_page.hpp"
#include "core/observe/metrics_endpoint.hpp"
#include "core/observe/node_exposition.hpp"
#include "core/observe/node_state.hpp"
#include "core/remote/remote_dataset.hpp"
#include "core/transforms/opencv_threads.hpp"

namespace conveyor {
namespace {

// With peers: CAF's network layer (and its TLS manager with certificates), and the types that
// cross the wire.
void load_network(caf::actor_system_config& cfg, const peer_settings& peers) {
  cfg.load<caf::io::middleman>();
  if (peers.tls.enabled()) {
    cfg.openssl_certificate = peers.tls.certificate;
    cfg.openssl_key = peers.tls.key;
    cfg.openssl_cafile = peers.tls.cafile;
    cfg.load<caf::openssl::manager>();
  }
  peer_message_types(cfg);
}

// Without TLS, CAF 0.17 lets whoever opens a connection to the node's port make it allocate
// whatever message size the connection announces (messages/peer_cache.hpp): say so.
void warn_about_plain_tcp(const peer_settings& p) {
  if (p.tls.enabled()) {
    return;
  }
  const auto port = p.nodes[p.rank].port;
  const bool beyond = std::any_of(p.nodes.begin(), p.nodes.end(),
                                  [](const peer_address& a) { return !a.loopback(); });
  log("cluster")->warn(
      "cluster: plain TCP between the nodes{}: {} can connect to port {} and make this node "
      "allocate up to 4 GiB per connection (CAF 0.17 allocates whatever message size a "
      "connection announces){}; TLS (cluster.tls_certificate, tls_key and tls_cafile, every node "
      "holding a certificate of the authority) is the only protection in CAF 0.17",
      beyond ? " beyond this machine (cluster.insecure = true)" : " on loopback",
      beyond ? "anyone who reaches this machine" : "any local process", port,
      beyond ? ", and read or alter what the nodes send each other" : "");
}

caf::actor_system_config make_config(int scheduler_threads,
                                     const std::optional<peer_settings>& peers) {
  caf::actor_system_config cfg;
  if (peers) {
    load_network(cfg, *peers);
  }
  cfg.set("scheduler.max-threads", scheduler_threads);
  // Idle work-stealing workers spin-poll before they sleep; beside a preprocessor pool that
  // owns every core that spinning cost ~25% of the node's CPU (measured: 800 samples took
  // 6.1 CPU-s with 'stealing', 4.7 with 'sharing'). Sharing workers block on a condition
  // variable, and the light actors on them need no stealing.
  cfg.set("scheduler.policy", caf::atom("sharing"));
  // An actor yields its thread after this many messages, so a busy batcher cannot starve
  // the feeders (0.17's default is unlimited).
  cfg.set("scheduler.max-throughput", 64);
  return cfg;
}

// One channel per GPU, knowing the GPU's ring of `buffers` batch buffers.
std::vector<std::shared_ptr<batch_channel>> make_channels(int gpus, std::uint64_t buffers) {
  std::vector<std::shared_ptr<batch_channel>> out;
  for (int g = 0; g < gpus; ++g) {
    out.push_back(std::make_shared<batch_channel>(buffers));
  }
  return out;
}

void complete_settings(pipeline_spec& spec) {
  auto& s = spec.settings;
  s.dataset_size = spec.source->size();
  s.hand_off = s.hand_off && spec.stragglers > 0;
  s.readers = spec.readers;
  s.stragglers = s.hand_off ? spec.stragglers : 0;
  if (s.window_samples == 0) {
    s.window_samples = default_window(spec.prefetch_batches, spec.policy, s);
  }
}

// A supervisor's way to spawn its worker of `context`: `spawn` with a copy of `options`. It
// owns what the workers need, for a supervisor calls it on a CAF thread at its start and on
// every restart, which may be after the runtime has begun to go (a pipeline that fails to
// start is destroyed at once): the members after `system` are gone while ~actor_system waits.
template <class Options, class Spawn>
auto worker_spawner(caf::actor_system& system, Options options, Spawn spawn) {
  return [sys = &system, options = std::move(options), spawn](const worker_context& context) {
    auto o = options;
    o.context = context;
    return caf::actor_cast<caf::actor>(spawn(*sys, std::move(o)));
  };
}

}  // namespace

struct pipeline_runtime::impl {
  explicit impl(pipeline_spec s)
      : spec(std::move(s)),
        config(make_config(spec.scheduler_threads, spec.peers)),
        system(config),
        status(std::make_shared<pipeline_status>(
            make_channels(spec.settings.gpus, spec.prefetch_batches + 1))) {}

  void spawn_all();
  /// With spec.metrics: starts the endpoint; false (startup_error set) when it cannot listen.
  bool serve_metrics();
  void spawn_supervisors(const reporting& report);
  /// With peers: the peer server (published) and the links, which start `start` once the
  /// peers are up or the wait is over. Without: `start` at once.
  void start_with_peers(std::function<void()> start);
  expected<std::uint16_t> publish(const peer_cache_actor& server);
  /// Stops accepting peers' connections (the published port closes).
  void stop_listening();
  /// Tells every connected peer that this node's run is over, waiting for their answers at
  /// most the fetch deadline: a node that ends is no failure to them.
  void say_goodbye();
  feeder_actor spawn_feeder(feeder_options options);
  template <class Handle>
  void escalate_on_death(const Handle& handle, std::string name);
  void stop();

  // First member, so the trainer's OpenCV setting comes back only after the actors are gone:
  // the preprocessor pool is the parallelism, one per core.
  opencv_threads_off opencv_off;
  pipeline_spec spec;
  caf::actor_system_config config;
  caf::actor_system system;  // declared before the handles: they must go first
  std::shared_ptr<pipeline_status> status;
  std::mutex stop_mutex;
  bool stopped = false;
  monitor_actor monitor;
  diagnosis_actor diagnosis;
  autotuner_actor autotuner;  ///< with pipeline.autotune only
  batcher_actor batcher;
  std::vector<caf::actor> supervisors;
  std::vector<feeder_actor> feeders;
  std::shared_ptr<peer_directory> peers;        ///< null without peers
  std::shared_ptr<const peer_fetcher> fetcher;  ///< the readers' way to the peers' caches
  peer_cache_actor peer_server;
  std::uint16_t published_port = 0;    ///< where peer_server listens; 0: nowhere
  caf::io::middleman_actor connector;  ///< the middleman's actor, or the TLS manager's
  /// Set when the run is over: the server answers every fetch `ended` from then on.
  std::shared_ptr<std::atomic<bool>> serving_over = std::make_shared<std::atomic<bool>>(false);
  peer_links_actor peer_links;
  std::optional<error> startup_error;
  /// With spec.metrics: /metrics, from the monitor's last reports and the status.
  std::shared_ptr<live_reports> live = std::make_shared<live_reports>();
  std::unique_ptr<metrics_endpoint> metrics;
};

// The batcher and the feeders hold the pipeline's state and are not restarted: if one dies
// other than by the shutdown, the pipeline fails with that reason instead of hanging.
template <class Handle>
void pipeline_runtime::impl::escalate_on_death(const Handle& handle, std::string name) {
  auto* sys = &system;
  caf::actor_cast<caf::abstract_actor*>(handle)->attach_functor(
      [st = status, name = std::move(name), sys](const caf::error& reason) {
        if (reason && reason != caf::exit_reason::user_shutdown) {
          st->fail(error{errc::worker_failed, name + " died: " + sys->render(reason)});
        }
      });
}

// The feeder of a slot: over its CUDA device's engine where it has one, else the host engine
// (inline, or as the spec's host_engine says).
feeder_actor pipeline_runtime::impl::spawn_feeder(feeder_options options) {
  options.device_timeout = spec.next_timeout;
  options.schema = spec.batch_schema;
  options.batch_size = spec.settings.batch_size;
  options.normalize_field = spec.normalize_field;
  if (spec.collate_normalize) {
    options.collate_normalize = coefficients_of(*spec.collate_normalize);
  }
#if CONVEYOR_HAVE_CUDA
  if (!spec.cuda_devices.empty()) {
    auto device = spec.cuda_devices[static_cast<std::size_t>(options.gpu)];
    options.engine = [device] { return cuda::make_cuda_engine(device); };
    options.own_thread = true;
    if (spec.gpu_normalize) {
      options.normalize = coefficients_of(*spec.gpu_normalize);
      options.normalized_type = spec.gpu_normalize_type;
    }
    return conveyor::spawn_feeder(system, std::move(options));
  }
#endif
  if (spec.host_engine) {
    options.engine = [host = *spec.host_engine] { return make_host_engine(host); };
    options.own_thread = spec.host_engine->threaded;
  }
  return conveyor::spawn_feeder(system, std::move(options));
}

void pipeline_runtime::impl::spawn_supervisors(const reporting& report) {
  auto faults =
      spec.faults.enabled() ? std::make_shared<const fault_injector>(spec.faults) : nullptr;
  auto supervise = [&](worker_role role, int children, auto spawn) {
    if (children > 0) {
      supervisors.push_back(spawn_supervisor(
          system, {role, children, std::move(spawn), faults, spec.supervision, batcher, status}));
    }
  };
  supervise(worker_role::straggler, spec.settings.stragglers,
            worker_spawner(system,
                           straggler_options{{}, spec.chain, spec.schema, batcher, status, report},
                           spawn_straggler));
  supervise(worker_role::preprocessor, spec.settings.workers,
            worker_spawner(
                system,
                preprocessor_options{
                    {}, spec.chain, spec.schema, batcher, spec.settings.hand_off, status, report},
                spawn_preprocessor));
  supervise(
      worker_role::reader, spec.settings.readers,
      worker_spawner(system, reader_options{{}, spec.source, status, report, spec.cache, fetcher},
                     spawn_reader));
}

bool pipeline_runtime::impl::serve_metrics() {
  if (!spec.metrics) {
    return true;
  }
  const int gpus = spec.settings.gpus;
  const auto started = std::chrono::steady_clock::now();
  // A dataset in an object store: its traffic too. The route holds the source (and so its
  // counters): a worker the endpoint let go at shutdown may outlive the pipeline.
  const auto* remote = dynamic_cast<const remote_dataset*>(spec.source.get());
  const transfer_counters* s3 = remote != nullptr ? &remote->counters() : nullptr;
  std::vector<metrics_endpoint::route> routes{
      {"/metrics", "text/plain; version=0.0.4; charset=utf-8",
       [status = status, live = live, gpus, source = spec.source, s3, clients = spec.served_waits] {
         return render_metrics(*status, gpus, live->snapshot(), {s3, clients.get()});
       }},
      {"/state.json", "application/json",
       [status = status, live = live, gpus, started, clients = spec.served_waits] {
         const std::chrono::duration<double> up = std::chrono::steady_clock::now() - started;
         return render_state_json(*status, gpus, live->snapshot(), clients.get(), up.count());
       }},
      {"/", "text/html; charset=utf-8", [] { return std::string(live_page_html()); }}};
  auto endpoint = metrics_endpoint::start(*spec.metrics, std::move(routes));
  if (!endpoint) {
    startup_error = endpoint.error();
    status->fail(endpoint.error());
    return false;
  }
  metrics = std::move(*endpoint);
  log("monitor")->info("metrics: http://{}/metrics, the live page at /",
                       peer_address{spec.metrics->host, metrics->port()}.text());
  return true;
}

void pipeline_runtime::impl::spawn_all() {
  if (!serve_metrics()) {
    return;
  }
  reporting report;
  if (spec.monitor_interval.count() > 0) {
    monitor = spawn_monitor(system, {3, live});
    report = {monitor, spec.monitor_interval};
    const auto& s = spec.settings;
    diagnosis =
        spawn_diagnosis(system, {status, s.gpus, s.workers, s.readers, spec.monitor_interval});
  }
  auto source = spec.source;
  batcher = spawn_batcher(
      system, {spec.settings, spec.policy, status, report,
               [source](std::uint64_t id) { return source->locate(id); }, spec.quarantine,
               [source](std::uint64_t epoch, const std::vector<std::uint64_t>& ids) {
                 source->will_read(epoch, ids);
               }});
  escalate_on_death(batcher, "the batcher");
  for (int g = 0; g < spec.settings.gpus; ++g) {
    feeder_options f;
    f.gpu = g;
    f.slots = spec.prefetch_batches + 1;
    f.batcher = batcher;
    f.channel = status->channel(g);
    f.status = status;
    f.report = report;
    if (!spec.feed_memory.empty()) {
      f.memory = spec.feed_memory[static_cast<std::size_t>(g)];
    }
    feeders.push_back(spawn_feeder(std::move(f)));
    escalate_on_death(feeders.back(), "the feeder of GPU " + std::to_string(g));
  }
  if (spec.autotune) {
    const auto& a = *spec.autotune;
    autotuner = spawn_autotuner(
        system, {status, batcher, spec.settings.gpus, a.start, a.least, a.most, a.settings,
                 spec.monitor_interval.count() > 0 ? spec.monitor_interval
                                                   : std::chrono::milliseconds(1000)});
  }
  start_with_peers([batcher = batcher, feeders = feeders] {
    caf::anon_send(batcher, atoms::connect::value, feeders);
  });
  spawn_supervisors(report);
}

expected<std::uint16_t> pipeline_runtime::impl::publish(const peer_cache_actor& server) {
  const auto& p = *spec.peers;
  const auto& at = p.nodes[p.rank];
  auto port = p.tls.enabled() ? caf::openssl::publish(server, at.port, at.host.c_str(), true)
                              : system.middleman().publish(server, at.port, at.host.c_str(), true);
  if (!port) {
    return error{errc::invalid_config,
                 "cluster.peers[" + std::to_string(p.rank) + "] " + at.text() +
                     ": this node cannot listen there: " + system.render(port.error())};
  }
  return *port;
}

void pipeline_runtime::impl::start_with_peers(std::function<void()> start) {
  if (!spec.peers || !spec.cache) {
    start();
    return;
  }
  const auto& p = *spec.peers;
  const auto& plan = spec.cache->layout();
  peer_identity identity;
  identity.dataset_size = spec.source->size();
  identity.seed = spec.settings.seed;
  identity.world = p.nodes.size();
  identity.rank = p.rank;
  identity.plan_digest = plan.digest();
  peers = std::make_shared<peer_directory>(p.nodes, p.rank, p.retry, p.fetch_timeout);
  fetcher = std::make_shared<const peer_fetcher>(system, peers, spec.cache->layout_ptr(),
                                                 spec.source, p.fetch_timeout);
  connector =
      p.tls.enabled() ? system.openssl_manager().actor_handle() : system.middleman().actor_handle();
  peer_links = spawn_peer_links(system, {peers, identity, connector, p.fetch_timeout, p.retry,
                                         p.wait, std::move(start), p.secret});
  peer_server = spawn_peer_server(
      system, {spec.source, spec.cache, status, spec.settings.epochs, p.server_workers, peer_links,
               peers, p.fetch_timeout, serving_over});
  auto port = publish(peer_server);
  if (!port) {
    startup_error = port.error();
    status->fail(port.error());
    caf::anon_send_exit(peer_links, caf::exit_reason::user_shutdown);  // it never starts reading
    return;
  }
  published_port = *port;
  caf::anon_send(peer_links, atoms::connect::value, peer_server);
  warn_about_plain_tcp(p);
  log("cluster")->info("cluster: rank {} of {} listens at {} for its peers{}", p.rank,
                       p.nodes.size(), p.nodes[p.rank].text(), p.tls.enabled() ? " (TLS)" : "");
}

void pipeline_runtime::impl::stop_listening() {
  if (published_port == 0) {
    return;
  }
  // A peer that connected while the middleman shuts down left CAF 0.17's connection (its
  // scribe) to a broker that had ended: leaked (LeakSanitizer, test_node_s3 under load).
  // Peers that dial from now on are refused, and read from storage as from a node that ended.
  // (caf/openssl/unpublish.hpp of 0.17.6 does not compile: asked of the manager directly.)
  caf::scoped_actor self{system};
  self->request(connector, spec.peers->fetch_timeout, caf::unpublish_atom::value,
                caf::actor_cast<caf::actor_addr>(peer_server), published_port)
      .receive([] {},
               [&](const caf::error& e) {
                 log("cluster")->warn("cluster: closing port {}: {}", published_port,
                                      system.render(e));
               });
  published_port = 0;
}

void pipeline_runtime::impl::say_goodbye() {
  if (!peers) {
    return;
  }
  caf::scoped_actor self{system};
  using answer = decltype(self->request(peer_cache_actor{}, caf::infinite, atoms::leave::value,
                                        std::uint64_t{}));
  std::vector<answer> answers;  // all asked at once, so one slow peer delays no other
  for (const auto& handle : peers->connected_peers()) {
    answers.push_back(
        self->request(handle, spec.peers->fetch_timeout, atoms::leave::value, spec.peers->rank));
  }
  for (auto& a : answers) {  // each times out by the same moment
    a.receive([](std::uint64_t) {}, [](const caf::error&) {});
  }
}

void pipeline_runtime::impl::stop() {
  std::lock_guard<std::mutex> lock(stop_mutex);
  if (stopped) {
    return;
  }
  stopped = true;
  status->close_channels();
  serving_over->store(true);  // before the goodbyes: a fetch that crosses one is answered
  stop_listening();
  say_goodbye();
  auto stop_one = [](auto& handle) {
    if (handle) {
      caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
    }
  };
  // Supervisors first: they stop their workers, and restart none of them from now on.
  for (auto& h : supervisors) {
    stop_one(h);
  }
  stop_one(batcher);
  stop_one(monitor);
  stop_one(diagnosis);
  stop_one(autotuner);
  for (auto& h : feeders) {
    stop_one(h);
  }
  stop_one(peer_links);
  stop_one(peer_server);
  if (peers) {
    peers->clear();  // the peers' proxies
  }
  // Drop our handles so that ~actor_system does not wait on actors we keep reachable.
  batcher = nullptr;
  monitor = nullptr;
  diagnosis = nullptr;
  autotuner = nullptr;
  supervisors.clear();
  feeders.clear();
  peer_links = nullptr;
  peer_server = nullptr;
}

pipeline_runtime::pipeline_runtime(pipeline_spec spec) {
  complete_settings(spec);
  impl_ = std::make_unique<impl>(std::move(spec));
  impl_->spawn_all();
}

pipeline_runtime::~pipeline_runtime() {
  stop();
  impl_.reset();  // ~actor_system waits for every actor to finish
}

const std::shared_ptr<pipeline_status>& pipeline_runtime::status() const noexcept {
  return impl_->status;
}

const pipeline_spec& pipeline_runtime::spec() const noexcept {
  return impl_->spec;
}

bool pipeline_runtime::release(int gpu, std::uint64_t slot) {
  if (!impl_->status->channel(gpu)->give_back(slot)) {
    return false;  // a second release of the same buffer: the feeder has it already
  }
  std::lock_guard<std::mutex> lock(impl_->stop_mutex);
  if (!impl_->stopped) {
    caf::anon_send(impl_->feeders[static_cast<std::size_t>(gpu)], atoms::release::value, slot);
  }
  return true;
}

void pipeline_runtime::stop() {
  impl_->stop();
}

std::uint16_t pipeline_runtime::metrics_port() const noexcept {
  return impl_->metrics ? impl_->metrics->port() : 0;
}

const std::optional<error>& pipeline_runtime::startup_error() const noexcept {
  return impl_->startup_error;
}

std::vector<std::string> pipeline_runtime::failed_peers() const {
  return impl_->peers ? impl_->peers->health().failures() : std::vector<std::string>{};
}

}  // namespace conveyor
