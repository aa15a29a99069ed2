#include "core/serving/serve_protocol.hpp"

#include <algorithm>
#include <type_traits>

#include "core/base/little_endian.hpp"

namespace conveyor::serve {
namespace {

constexpr std::size_t header_size = 8;  // magic u32, version u16, type u8, reserved u8

// Appends fields, little-endian.
struct writer {
  std::vector<std::uint8_t> out;

  template <class T>
  void field(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      field(static_cast<std::uint8_t>(value ? 1 : 0));
    } else if constexpr (std::is_enum_v<T>) {
      field(static_cast<std::underlying_type_t<T>>(value));
    } else if constexpr (std::is_same_v<T, sample_order>) {
      field(value.mode);
      field(value.block);
      field(value.span);
    } else if constexpr (std::is_same_v<T, std::array<std::uint8_t, 32>>) {
      out.insert(out.end(), value.begin(), value.end());
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto n = std::min(value.size(), max_failure_text);
      field(static_cast<std::uint16_t>(n));
      out.insert(out.end(), value.begin(), value.begin() + static_cast<std::ptrdiff_t>(n));
    } else {
      auto at = out.size();
      out.resize(at + sizeof(T));
      little_endian::store(out.data() + at, value);
    }
  }
};

// Takes fields, little-endian; past the end it yields zeros and remembers that it ran short.
struct reader {
  const std::uint8_t* at;
  std::size_t left;
  bool short_ = false;
  bool invalid = false;  ///< a flag byte other than 0 or 1, an order that is not sound

  template <class T>
  void field(T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      std::uint8_t b = 0;
      field(b);
      invalid = invalid || b > 1;
      value = b != 0;
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> raw = 0;
      field(raw);
      value = static_cast<T>(raw);
    } else if constexpr (std::is_same_v<T, sample_order>) {
      std::uint8_t mode = 0;
      field(mode);
      field(value.block);
      field(value.span);
      value.mode = static_cast<shuffle_mode>(mode);
      invalid = invalid || !is_sound(value);
    } else if constexpr (std::is_same_v<T, std::array<std::uint8_t, 32>>) {
      if (left < value.size()) {
        short_ = true;
        return;
      }
      std::copy(at, at + value.size(), value.begin());
      at += value.size();
      left -= value.size();
    } else if constexpr (std::is_same_v<T, std::string>) {
      std::uint16_t n = 0;
      field(n);
      if (n > left) {
        short_ = true;
        return;
      }
      value.assign(reinterpret_cast<const char*>(at), n);
      at += n;
      left -= n;
    } else {
      if (left < sizeof(T)) {
        short_ = true;
        value = 0;
        return;
      }
      value = little_endian::load<T>(at);
      at += sizeof(T);
      left -= sizeof(T);
    }
  }
};

// Each message's fields in wire order, for writer and reader alike.
template <class F>
void fields(F& f, attach& m) {
  f.field(m.job);
  f.field(m.rank);
  f.field(m.state_bytes);
}
template <class F>
void fields(F& f, attached& m) {
  f.field(m.slots);
  f.field(m.slot_bytes);
  f.field(m.header_bytes);
  f.field(m.ranks);
  f.field(m.jobs);
  f.field(m.epochs);
  f.field(m.dataset_size);
  f.field(m.batch_size);
  f.field(m.writable);
  f.field(m.start_epoch);
  f.field(m.seed);
  f.field(m.order);
  f.field(m.signs_states);
}
template <class F>
void fields(F& f, batch_ready& m) {
  f.field(m.slot);
  f.field(m.epoch);
  f.field(m.index);
  f.field(m.samples);
  f.field(m.last_in_epoch);
}
template <class F>
void fields(F& f, release& m) {
  f.field(m.slot);
  f.field(m.waited_ns);
}
template <class F>
void fields(F& /*f*/, end& /*m*/) {}
template <class F>
void fields(F& f, failure& m) {
  f.field(m.code);
  f.field(m.text);
}
template <class F>
void fields(F& /*f*/, ask_report& /*m*/) {}
template <class F>
void fields(F& f, node_report& m) {
  f.field(m.delivered);
  f.field(m.quarantined);
  f.field(m.filtered);
  f.field(m.duplicates);
  f.field(m.lost);
  f.field(m.steps_executed);
  f.field(m.retries);
  f.field(m.restarts);
  f.field(m.handoffs);
  f.field(m.finished);
  f.field(m.hangs);
  for (auto& us : m.sample_us) {
    f.field(us);
  }
}
template <class F>
void fields(F& f, sign_state& m) {
  f.field(m.state_bytes);
}
template <class F>
void fields(F& f, state_signed& m) {
  f.field(m.mac);
}

// The message of wire type `type` (the variant's index + 1), default-constructed.
bool make_message(std::uint8_t type, message& out) {
  if (type == 0 || type > std::variant_size_v<message>) {
    return false;
  }
  auto index = static_cast<std::size_t>(type - 1);
  // Walks the alternatives to default-construct the one at `index`.
  auto pick = [&](auto self, auto tag) -> void {
    constexpr std::size_t i = decltype(tag)::value;
    if constexpr (i < std::variant_size_v<message>) {
      if (i == index) {
        out.emplace<i>();
        return;
      }
      self(self, std::integral_constant<std::size_t, i + 1>{});
    }
  };
  pick(pick, std::integral_constant<std::size_t, 0>{});
  return true;
}

error bad(const std::string& what) {
  return {errc::invalid_argument, "serving message: " + what};
}

}  // namespace

bool takes_descriptor(const message& m) noexcept {
  return std::holds_alternative<attach>(m) || std::holds_alternative<attached>(m) ||
         std::holds_alternative<sign_state>(m);
}

std::vector<std::uint8_t> encode(const message& m) {
  writer w;
  w.field(magic);
  w.field(version);
  w.field(static_cast<std::uint8_t>(m.index() + 1));
  w.field(std::uint8_t{0});
  std::visit([&](auto msg) { fields(w, msg); }, m);  // a copy: fields() takes non-const refs
  return std::move(w.out);
}

expected<message> decode(const std::uint8_t* bytes, std::size_t size) {
  if (size < header_size) {
    return bad(std::to_string(size) + " bytes, shorter than a header");
  }
  reader r{bytes, size};
  std::uint32_t got_magic = 0;
  std::uint16_t got_version = 0;
  std::uint8_t type = 0;
  std::uint8_t reserved = 0;
  r.field(got_magic);
  r.field(got_version);
  r.field(type);
  r.field(reserved);
  if (got_magic != magic) {
    return bad("bad magic (not a Conveyor peer)");
  }
  if (reserved != 0) {
    return bad("reserved header byte is " + std::to_string(reserved) + ", must be 0");
  }
  if (got_version != version) {
    return bad("protocol version " + std::to_string(got_version) + ", this side speaks " +
               std::to_string(version) + " (node and client must come from the same release)");
  }
  message out;
  if (!make_message(type, out)) {
    return bad("unknown message type " + std::to_string(type));
  }
  std::visit([&](auto& msg) { fields(r, msg); }, out);
  if (r.invalid) {
    return bad("type " + std::to_string(type) +
               ": a flag that is neither 0 nor 1, or an order (dataset.shuffle) that is not one");
  }
  if (r.short_ || r.left != 0) {
    return bad("type " + std::to_string(type) + " with " + std::to_string(size) +
               " bytes: " + (r.short_ ? "cut short" : "trailing bytes"));
  }
  if (const auto* f = std::get_if<failure>(&out); f && to_string(f->code) == "unknown_error") {
    return bad("failure with unknown error code " + std::to_string(static_cast<int>(f->code)));
  }
  return out;
}

std::optional<std::size_t> sample_figure_index(std::string_view name) noexcept {
  for (std::size_t i = 0; i < sample_figures.size(); ++i) {
    if (name == sample_figures[i]) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace conveyor::serve
