#include "core/batching/resume_state.hpp"

#include <algorithm>

#include <xxhash.h>

#include <cstring>

namespace conveyor {
namespace {

constexpr char magic[8] = {'C', 'V', 'Y', 'R', 'E', 'S', 'U', 'M'};
constexpr char signature_magic[8] = {'C', 'V', 'Y', 'R', 'S', 'I', 'G', 'N'};
constexpr std::uint64_t max_begun_epochs = 3;
constexpr std::size_t header_bytes = sizeof magic + 4 + 8;
constexpr std::size_t checksum_bytes = 8;

void put(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes = 8) {
  for (int i = 0; i < bytes; ++i) {
    out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
}

/// Reads little-endian fields from a bounded span; any read past its end makes it fail.
class reader {
 public:
  reader(const std::uint8_t* at, std::size_t size) : at_(at), left_(size) {}
  std::uint64_t take(int bytes = 8) {
    if (left_ < static_cast<std::size_t>(bytes)) {
      failed_ = true;
      left_ = 0;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      v |= static_cast<std::uint64_t>(at_[i]) << (8 * i);
    }
    at_ += bytes;
    left_ -= static_cast<std::size_t>(bytes);
    return v;
  }
  bool failed() const noexcept { return failed_; }
  std::size_t left() const noexcept { return left_; }

 private:
  const std::uint8_t* at_;
  std::size_t left_;
  bool failed_ = false;
};

std::uint64_t checksum(const std::uint8_t* data, std::size_t size) {
  return XXH3_64bits(data, size);
}

void put_epoch(std::vector<std::uint8_t>& out, const delivered_set& d) {
  put(out, d.prefix());
  put(out, d.beyond().size());
  for (auto w : d.beyond()) {
    put(out, w);
  }
}

error malformed(const std::string& source, const std::string& what) {
  return error{errc::corrupt_shard, source + ": not a usable Conveyor resume state: " + what};
}

/// One begun epoch's delivered set, validated against the dataset size.
expected<delivered_set> take_epoch(reader& in, std::uint64_t size, const std::string& source,
                                   std::uint64_t epoch) {
  const auto prefix = in.take();
  const auto words = in.take();
  if (in.failed() || words > in.left() / 8) {
    return malformed(source, "truncated in epoch " + std::to_string(epoch));
  }
  std::vector<std::uint64_t> beyond(words);
  for (auto& w : beyond) {
    w = in.take();
  }
  const auto end = prefix + words * 64;
  bool past_end = prefix > size;
  for (std::uint64_t p = std::max(prefix, size); !past_end && p < end; ++p) {
    past_end = ((beyond[(p - prefix) / 64] >> ((p - prefix) % 64)) & 1U) != 0;
  }
  if (past_end) {
    return error{errc::invalid_argument, source + ": epoch " + std::to_string(epoch) +
                                             " has delivered positions past the dataset's " +
                                             std::to_string(size) + " samples"};
  }
  return delivered_set(size, prefix, std::move(beyond));
}

/// The order a state of format `version` names: version 1's shuffle byte, or version 2's mode,
/// block and span.
expected<sample_order> take_order(reader& in, std::uint64_t version, const std::string& source) {
  const auto mode = in.take(1);
  if (version == 1) {
    return sample_order::shuffled(mode != 0);
  }
  sample_order order;
  order.mode = static_cast<shuffle_mode>(mode);
  order.block = in.take();
  order.span = in.take();
  if (!is_sound(order)) {
    return malformed(source, "an order of mode " + std::to_string(mode) + ", block " +
                                 std::to_string(order.block) + ", span " +
                                 std::to_string(order.span));
  }
  return order;
}

}  // namespace

bool resume_state::delivered(std::uint64_t epoch, std::uint64_t position) const noexcept {
  if (epoch < first_epoch) {
    return true;
  }
  const auto i = epoch - first_epoch;
  return i < begun.size() && begun[i].contains(position);
}

std::uint64_t resume_state::delivered_count() const noexcept {
  auto n = first_epoch * dataset_size;
  for (const auto& d : begun) {
    n += d.count();
  }
  return n;
}

std::vector<std::uint8_t> encode(const resume_state& state) {
  std::vector<std::uint8_t> payload;
  put(payload, state.dataset_size);
  put(payload, state.seed);
  put(payload, static_cast<std::uint8_t>(state.order.mode), 1);
  put(payload, state.order.block);
  put(payload, state.order.span);
  put(payload, state.epochs);
  put(payload, state.first_epoch);
  put(payload, state.begun.size());
  for (const auto& d : state.begun) {
    put_epoch(payload, d);
  }
  std::vector<std::uint8_t> out(magic, magic + sizeof magic);
  put(out, resume_state::format_version, 4);
  put(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
  put(out, checksum(out.data(), out.size()));
  return out;
}

std::uint64_t max_encoded_size(std::uint64_t dataset_size) noexcept {
  const auto words = dataset_size / 64 + 1;
  const auto fields = 8 * 4 + 1 + 16 + 8;  // size, seed, epochs, first epoch, order; begun
  return header_bytes + fields + max_begun_epochs * (16 + 8 * words) + checksum_bytes +
         state_signature::bytes;
}

signed_blob split_signature(const std::vector<std::uint8_t>& blob) {
  const auto n = state_signature::bytes;
  if (blob.size() < header_bytes + checksum_bytes + n ||
      std::memcmp(blob.data() + blob.size() - n, signature_magic, sizeof signature_magic) != 0) {
    return {blob, std::nullopt};
  }
  const auto body = blob.size() - n;
  const auto declared = reader(blob.data() + sizeof magic + 4, 8).take();
  if (declared != body - header_bytes - checksum_bytes) {
    return {blob, std::nullopt};  // a state whose own bytes happen to end so
  }
  reader in(blob.data() + body + sizeof signature_magic, n - sizeof signature_magic);
  state_signature sig;
  sig.job = static_cast<std::uint32_t>(in.take(4));
  sig.rank = static_cast<std::uint32_t>(in.take(4));
  std::memcpy(sig.mac.data(), blob.data() + blob.size() - sig.mac.size(), sig.mac.size());
  return {std::vector<std::uint8_t>(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(body)),
          sig};
}

std::vector<std::uint8_t> append_signature(std::vector<std::uint8_t> state,
                                           const state_signature& signature) {
  state.insert(state.end(), signature_magic, signature_magic + sizeof signature_magic);
  put(state, signature.job, 4);
  put(state, signature.rank, 4);
  state.insert(state.end(), signature.mac.begin(), signature.mac.end());
  return state;
}

expected<resume_state> decode(const std::vector<std::uint8_t>& signed_or_not,
                              const std::string& source) {
  const auto unsigned_part = split_signature(signed_or_not);
  const auto& blob = unsigned_part.state;
  if (blob.size() < sizeof magic || std::memcmp(blob.data(), magic, sizeof magic) != 0) {
    return malformed(source, blob.empty() ? "empty" : "no CVYRESUM header");
  }
  if (blob.size() < header_bytes + checksum_bytes) {
    return malformed(source, "truncated (" + std::to_string(blob.size()) + " bytes)");
  }
  reader head(blob.data() + sizeof magic, 12);
  const auto version = head.take(4);
  const auto length = head.take();
  if (version != resume_state::format_version && version != 1) {
    return malformed(source, "format version " + std::to_string(version) +
                                 ", this build reads 1 to " +
                                 std::to_string(resume_state::format_version));
  }
  if (length != blob.size() - header_bytes - checksum_bytes) {
    return malformed(source, "truncated or padded (" + std::to_string(blob.size()) +
                                 " bytes; the header says " +
                                 std::to_string(length + header_bytes + checksum_bytes) + ")");
  }
  const auto sum_at = blob.size() - checksum_bytes;
  if (reader(blob.data() + sum_at, checksum_bytes).take() != checksum(blob.data(), sum_at)) {
    return error{errc::checksum_mismatch, source +
                                              ": the resume state is damaged (its checksum "
                                              "does not match its bytes)"};
  }
  reader in(blob.data() + header_bytes, static_cast<std::size_t>(length));
  resume_state s;
  s.dataset_size = in.take();
  s.seed = in.take();
  if (auto order = take_order(in, version, source); order) {
    s.order = *order;
  } else {
    return std::move(order).error();
  }
  s.epochs = in.take();
  s.first_epoch = in.take();
  const auto begun = in.take();
  if (in.failed() || s.first_epoch > s.epochs || begun > s.epochs - s.first_epoch) {
    return error{errc::invalid_argument, source + ": epochs from " + std::to_string(s.first_epoch) +
                                             " (" + std::to_string(begun) + " begun) of " +
                                             std::to_string(s.epochs) + " do not add up"};
  }
  for (std::uint64_t e = 0; e < begun; ++e) {
    auto d = take_epoch(in, s.dataset_size, source, s.first_epoch + e);
    if (!d) {
      return std::move(d).error();
    }
    s.begun.push_back(std::move(*d));
  }
  return s;
}

expected<resume_state> decode_for_run(const std::vector<std::uint8_t>& blob,
                                      const std::string& source, std::uint64_t dataset_size,
                                      std::uint64_t seed, const sample_order& order,
                                      std::uint64_t epochs) {
  auto state = decode(blob, source);
  if (!state) {
    return state;
  }
  if (auto same = check_same_run(*state, dataset_size, seed, order, epochs); !same) {
    return std::move(same).error();
  }
  return state;
}

namespace {

// Rank states of one run: the first one's identity, checked against every other.
expected<void> check_one_run(const std::vector<resume_state>& states, const std::string& source) {
  if (states.empty()) {
    return error{errc::invalid_argument, source + ": no states to merge"};
  }
  const auto& a = states.front();
  for (std::size_t i = 1; i < states.size(); ++i) {
    if (auto same = check_same_run(states[i], a.dataset_size, a.seed, a.order, a.epochs); !same) {
      return error{errc::invalid_argument,
                   source + ": state " + std::to_string(i) +
                       " is of another run than state 0: " + same.error().message()};
    }
  }
  return {};
}

}  // namespace

expected<resume_state> merge_states(const std::vector<resume_state>& states,
                                    const std::string& source) {
  if (auto ok = check_one_run(states, source); !ok) {
    return std::move(ok).error();
  }
  resume_state out = states.front();
  out.begun.clear();
  std::uint64_t last = 0;
  for (const auto& s : states) {
    out.first_epoch = std::min(out.first_epoch, s.first_epoch);
    last = std::max<std::uint64_t>(last, s.first_epoch + s.begun.size());
  }
  for (auto e = out.first_epoch; e < last; ++e) {
    delivered_set merged(out.dataset_size);
    for (const auto& s : states) {
      if (e >= s.first_epoch && e - s.first_epoch < s.begun.size()) {
        merged.unite(s.begun[e - s.first_epoch]);
      }
    }
    out.begun.push_back(std::move(merged));
  }
  return out;
}

bool claims_within(const resume_state& state, const resume_state& known) {
  const auto complete_in_known = [&](std::uint64_t e) {
    if (e < known.first_epoch) {
      return true;
    }
    const auto i = e - known.first_epoch;
    return i < known.begun.size() && known.begun[i].complete();
  };
  for (auto e = known.first_epoch; e < state.first_epoch; ++e) {
    if (!complete_in_known(e)) {
      return false;
    }
  }
  for (std::uint64_t i = 0; i < state.begun.size(); ++i) {
    const auto e = state.first_epoch + i;
    if (e < known.first_epoch || state.begun[i].count() == 0) {
      continue;  // complete there
    }
    const auto k = e - known.first_epoch;
    if (k >= known.begun.size() || !known.begun[k].includes(state.begun[i])) {
      return false;
    }
  }
  return true;
}

expected<void> check_same_run(const resume_state& state, std::uint64_t dataset_size,
                              std::uint64_t seed, const sample_order& order, std::uint64_t epochs) {
  auto differs = [](const char* what, std::uint64_t theirs, std::uint64_t ours) {
    return error{errc::invalid_config, std::string("the resume state is of another run: its ") +
                                           what + " is " + std::to_string(theirs) +
                                           ", this run's " + std::to_string(ours)};
  };
  if (state.dataset_size != dataset_size) {
    return differs("dataset size", state.dataset_size, dataset_size);
  }
  if (state.seed != seed) {
    return differs("seed (dataset.seed)", state.seed, seed);
  }
  if (state.order != order) {
    return error{errc::invalid_config,
                 "the resume state is of another run: its order (dataset.shuffle, "
                 "shuffle_block, shuffle_span) is " +
                     describe(state.order) + ", this run's " + describe(order)};
  }
  if (state.epochs != epochs) {
    return differs("epochs (trainer.epochs)", state.epochs, epochs);
  }
  return {};
}

}  // namespace conveyor
