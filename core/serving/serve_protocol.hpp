#pragma once
/// The control messages between a node and an attached trainer process (a client), one
/// SOCK_SEQPACKET connection per client (fd_passing.hpp). Batch data never travels here: it
/// lies in the feed's shared region (shared_region.hpp), and a message names its slot. Every
/// message is small and fixed in shape: an 8-byte header (magic "CVYR", version, type), then
/// its fields, little-endian; a failure carries a bounded text.
///
///   client                                  node
///   attach{job, rank, state_bytes}  ->    + a resume state's memfd when state_bytes > 0
///                                   <-      attached{geometry} + the region's descriptor
///                                   <-      batch{slot, epoch, index, samples, last}  (repeated)
///   release{slot, waited_ns}        ->                                               (repeated)
///   ask_report{}                    ->      (only once attached)
///                                   <-      node_report{figures}  (in order with batches)
///   sign_state{state_bytes}         ->    + the rank's resume state in a sealed memfd
///                                   <-      state_signed{mac}     (in order with batches)
///                                   <-      end{}          every epoch delivered
///   failure{code, text}            <->      either side, then the connection ends
///
/// Only attach, attached and sign_state carry a descriptor (takes_descriptor()); a message
/// that comes with any other is a protocol error. decode() accepts any bytes: whatever does
/// not parse is errc::invalid_argument naming what (short, magic, reserved byte, version,
/// type, size), never undefined behaviour. Pure functions; thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "core/batching/epoch_order.hpp"

namespace conveyor::serve {

inline constexpr std::uint32_t magic = 0x52595643;  // "CVYR" in memory order
inline constexpr std::uint16_t version = 7;         ///< 7: release says the client's wait
/// No message is longer: receive buffers of this size never truncate.
inline constexpr std::size_t max_message_size = 1024;
/// A failure's text is cut to fit.
inline constexpr std::size_t max_failure_text = max_message_size - 8 - 1 - 2;

/// Client -> node: attach as rank `rank` of job `job`; with state_bytes > 0, the descriptor
/// sent with it is a memfd whose first state_bytes bytes are the rank's resume state
/// (conveyor/run_state.hpp: what this rank received before a stop).
struct attach {
  std::uint32_t job = 0;
  std::uint32_t rank = 0;
  std::uint32_t state_bytes = 0;
};

/// Node -> client, with the region's descriptor: what it serves and how large the region is;
/// the region's own header says how the fields lie in it (core/serving/feed_layout.hpp).
struct attached {
  std::uint32_t slots = 0;         ///< slots in the region, each of slot_bytes
  std::uint64_t slot_bytes = 0;    ///< bytes per slot
  std::uint64_t header_bytes = 0;  ///< the region's header, before slot 0
  std::uint32_t ranks = 0;         ///< ranks (GPUs) per job
  std::uint32_t jobs = 0;
  std::uint64_t epochs = 0;
  std::uint64_t dataset_size = 0;
  std::uint64_t batch_size = 0;
  bool writable = false;          ///< the client may map the region read-write (one job only)
  std::uint64_t start_epoch = 0;  ///< the epoch of the first batch this client will get
  std::uint64_t seed = 0;         ///< the run's (dataset.seed): the client's resume state names it
  sample_order order{};  ///< the run's (dataset.shuffle): the client's resume state names it
  /// The node signs resume states (serve.state_key_file): a client has its state signed
  /// (sign_state) before it hands it out, and a node resumes only from signed states.
  bool signs_states = false;
};

/// Node -> client: slot `slot` holds the next batch (its layout is in the slot).
struct batch_ready {
  std::uint32_t slot = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  ///< batch number within the epoch
  std::uint32_t samples = 0;
  bool last_in_epoch = false;
};

/// Client -> node: the client is done with slot `slot`. `waited_ns`: the time its trainer has
/// waited in next() since the client attached, so far (never less than the last release said,
/// never more than the time since the node welcomed it: the node checks both).
struct release {
  std::uint32_t slot = 0;
  std::uint64_t waited_ns = 0;
};

/// Node -> client: every epoch of this feed has been delivered.
struct end {};

/// Either way: why the connection ends (a bad attach, a failed pipeline, a protocol error).
struct failure {
  errc code = errc::invalid_argument;
  std::string text;
};

/// Client -> node: send the node's figures (the answer comes in order with the batches).
struct ask_report {};

/// Node -> client: the node's ledger and work so far (pipeline_report's integers).
struct node_report {
  std::uint64_t delivered = 0;
  std::uint64_t quarantined = 0;
  std::uint64_t filtered = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t lost = 0;
  std::uint64_t steps_executed = 0;
  std::uint64_t retries = 0;
  std::uint64_t restarts = 0;
  std::uint64_t handoffs = 0;
  bool finished = false;
  std::uint64_t hangs = 0;
  /// The work of one sample over the last ones prepared (pipeline_report::sample_ms), in
  /// microseconds: how many, then p50, p90, p99 and max (all 0 before the first).
  std::array<std::uint64_t, 5> sample_us{};
};

/// Client -> node, with a sealed memfd whose first state_bytes bytes are the client's resume
/// state: sign it (the node checks that it claims nothing the node did not send this rank).
struct sign_state {
  std::uint32_t state_bytes = 0;
};

/// Node -> client: the signature of the state sign_state sent (state_signature.hpp).
struct state_signed {
  std::array<std::uint8_t, 32> mac{};
};

/// The names of node_report::sample_us's figures, as pipeline_report::sample_ms names them.
inline constexpr std::array<const char*, 5> sample_figures{"samples", "p50", "p90", "p99", "max"};
/// The place of `name` among sample_figures, if it is one of them.
std::optional<std::size_t> sample_figure_index(std::string_view name) noexcept;

using message = std::variant<attach, attached, batch_ready, release, end, failure, ask_report,
                             node_report, sign_state, state_signed>;

/// Whether a message of `m`'s type may come with a descriptor (at most one).
bool takes_descriptor(const message& m) noexcept;

/// The bytes of `m` (at most max_message_size; a failure's text is cut to fit).
std::vector<std::uint8_t> encode(const message& m);
/// The message in `bytes`, or errc::invalid_argument naming what is wrong with them.
expected<message> decode(const std::uint8_t* bytes, std::size_t size);

}  // namespace conveyor::serve
