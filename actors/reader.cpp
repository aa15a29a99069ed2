#include "actors/reader.hpp"

#include <caf/all.hpp>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

namespace conveyor {
namespace {

struct reader_state {
  static inline const char* name = "reader";
  std::unique_ptr<actor_metrics> metrics;
};

using reader_pointer = reader_actor::stateful_pointer<reader_state>;

// A sample of this node's cache: from the cache, or read from storage (once, whichever
// threads ask for it at once) and kept.
expected<record> read_member(const reader_options& opts, const sample_ticket& ticket) {
  const auto id = ticket.sample_id;
  auto read = opts.cache->read_through(
      id, [&] { return opts.source->read(id); }, opts.fill_wait);
  if (!read.got) {
    return read.got;
  }
  if (read.from_storage) {
    opts.status->reads().stored(ticket.epoch, read.got->payload.size());
  } else {
    opts.status->reads().hit(ticket.epoch, opts.cache->layout().tier(id) == cache_tier::disk);
  }
  return read.got;
}

// The read (from the caches, or storage), or the injected I/O error of a drill.
expected<record> read_record(const reader_options& opts, const sample_ticket& ticket) {
  const auto& faults = opts.context.faults;
  if (faults && faults->read_fails(ticket)) {
    return error{errc::io_error, opts.source->locate(ticket.sample_id) +
                                     ": injected read error (faults.read_error)"};
  }
  if (opts.cache && opts.cache->member(ticket.sample_id)) {
    return read_member(opts, ticket);
  }
  if (opts.peers) {
    if (auto fetched = opts.peers->fetch(ticket.epoch, ticket.sample_id, opts.status->reads())) {
      return std::move(*fetched);
    }
  }
  auto r = opts.source->read(ticket.sample_id);
  if (r) {
    opts.status->reads().stored(ticket.epoch, r->payload.size());
  }
  return r;
}

// The read, or the error a buffer that cannot be had becomes: a size read from storage (a
// store's listing, an index) may lie, and it fails its sample alone (retried, then quarantined,
// named), never the reader.
expected<record> read_or_refuse(const reader_options& opts, const sample_ticket& ticket) {
  const auto no_buffer = [&](const char* why) {
    const auto id = ticket.sample_id;
    return error{errc::io_error, opts.source->locate(id) + ": " + why + " for its " +
                                     std::to_string(opts.source->stored_bytes(id)) +
                                     " bytes (as its storage gives its size)"};
  };
  try {
    return read_record(opts, ticket);
  } catch (const std::bad_alloc&) {
    return no_buffer("out of memory");
  } catch (const std::length_error&) {
    return no_buffer("no buffer can be that large");
  }
}

raw_sample read_sample(const reader_options& opts, const sample_ticket& ticket) {
  const auto& source = *opts.source;
  raw_sample raw;
  raw.ticket = ticket;
  auto r = read_or_refuse(opts, ticket);
  if (!r) {
    raw.key = source.locate(ticket.sample_id);
    raw.error_code = static_cast<std::uint8_t>(r.error().code());
    raw.error_message = r.error().what();
    return raw;
  }
  raw.key = std::move(r->key);
  raw.label = r->label;
  raw.bytes = std::move(r->payload);
  raw.multipart = r->multipart;
  raw.in_place = std::move(r->in_place);
  return raw;
}

// The node's reads so far (all readers'): from the cache, and from storage.
std::string read_figures(const reader_options& opts) {
  auto t = opts.status->reads().totals();
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.1f", static_cast<double>(t.storage_bytes) / 1e6);
  auto line = "cache_hits=" + std::to_string(t.cache_hits) +
              " storage_reads=" + std::to_string(t.storage_reads) + " storage_mb=" + mb;
  if (opts.peers) {
    line += " peer_fetches=" + std::to_string(t.peer_fetches) +
            " peer_fallbacks=" + std::to_string(t.peer_fallbacks) +
            " peer_served=" + std::to_string(t.peer_served);
  }
  return line;
}

reader_actor::behavior_type reader(reader_pointer self, reader_options opts) {
  auto name = opts.context.name(worker_role::reader);
  self->state.metrics = std::make_unique<actor_metrics>(name);
  exit_on_exception(self, name);
  start_reporting(self, opts.report);
  return {
      [self, opts](atoms::read, const sample_ticket& ticket, const preprocessor_actor& to) {
        auto start = std::chrono::steady_clock::now();
        activity_scope busy(*opts.context.slot, ticket.attempt);
        if (opts.context.faults) {
          opts.context.faults->maybe_crash(worker_role::reader, ticket);
        }
        self->send(to, atoms::prepare::value, read_sample(opts, ticket));
        auto took = elapsed_ns(start);
        opts.status->add_read(took);
        self->state.metrics->record(took);
      },
      [self, opts](atoms::tick) {
        report_and_rearm(self, opts.report, *self->state.metrics, read_figures(opts));
      },
  };
}

}  // namespace

reader_actor spawn_reader(caf::actor_system& sys, reader_options options) {
  return sys.spawn<caf::detached>(reader, std::move(options));
}

}  // namespace conveyor
