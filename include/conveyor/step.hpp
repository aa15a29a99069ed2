#pragma once
/// The public step API: your own transform steps (a tokenizer, an augmentation, a label
/// mapping), run by Conveyor with the same guarantees as its built-in steps (README "Your own
/// steps"). Self-contained: the standard library and conveyor/dtype.hpp only.
///
/// A step is a class derived from conveyor::step. It
/// - declares the fields it reads (with the dtype and rank it needs) and makes (with their
///   dtype and rank): checked against the steps before and after it when the topology is
///   loaded, so that a chain that does not add up never starts;
/// - gets its parameters from its `[[transform]]` table through step_params, whose typed
///   accessors name the file, line and key of a bad value;
/// - draws randomness only from the generator apply() is handed, seeded from (epoch seed,
///   sample id, step index): a sample handed to a straggler actor between two steps, or
///   retried, comes out the same;
/// - reports a failure by throwing: a throw is a failed attempt of the sample (retried, then
///   the sample is quarantined with the step's name and the exception's message).
///
/// Register a factory with conveyor::register_step before pipeline::open (an embedding
/// trainer), or build a plugin (CONVEYOR_PLUGIN below) that the node loads from
/// `[plugins] libraries`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/dtype.hpp"

/// The version of this API (every type of this header and how a plugin registers). A plugin
/// records the version it was built against (CONVEYOR_PLUGIN); a node refuses a plugin of
/// another version, naming both, before calling anything in it.
#define CONVEYOR_STEP_API_VERSION 1

namespace conveyor {

inline constexpr int step_api_version = CONVEYOR_STEP_API_VERSION;

/// The largest rank of one sample's field.
inline constexpr int max_field_rank = 4;

/// What a step throws about its configuration or its use of this API (a bad parameter, a field
/// it did not declare); what() names where (file:line:column, the key path) and what.
class step_error : public std::runtime_error {
 public:
  explicit step_error(const std::string& what, std::string key = {}, std::string reason = {})
      : std::runtime_error(what), key_(std::move(key)), reason_(std::move(reason)) {}
  /// The parameter concerned ("" when none); what() already names it.
  const std::string& key() const noexcept { return key_; }
  /// What is wrong with it, without the location (what() with it).
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string key_;
  std::string reason_;
};

/// The shape of a field's array: `rank` extents, row-major (C order).
struct array_shape {
  int rank = 0;
  std::array<std::int64_t, max_field_rank> extents{};

  std::int64_t operator[](int axis) const { return extents[static_cast<std::size_t>(axis)]; }
  std::size_t element_count() const noexcept {
    std::size_t n = 1;
    for (int i = 0; i < rank; ++i) {
      n *= static_cast<std::size_t>(extents[static_cast<std::size_t>(i)]);
    }
    return n;
  }
};

/// A view of one field's array; `Byte` is const for a field read, mutable for one made.
/// Valid until apply() returns.
template <class Byte>
struct basic_array_view {
  dtype type = dtype::uint8;
  array_shape shape;
  Byte* bytes = nullptr;

  std::size_t element_count() const noexcept { return shape.element_count(); }
  std::size_t byte_count() const noexcept { return element_count() * size_of(type); }
  /// The elements as T; step_error when T's size is not the dtype's.
  template <class T>
  auto data() const {
    if (sizeof(T) != size_of(type)) {
      throw step_error("a " + std::string(name_of(type)) + " array read as elements of " +
                       std::to_string(sizeof(T)) + " bytes");
    }
    using element = std::conditional_t<std::is_const_v<Byte>, const T, T>;
    return reinterpret_cast<element*>(bytes);
  }
};
using array_view = basic_array_view<const std::uint8_t>;
using mutable_array_view = basic_array_view<std::uint8_t>;

/// One sample while a step works on it. An image still held as a decode left it is seen as a
/// uint8 array [height, width, channels] (RGB), and a uint8 rank-3 array made into such a field
/// is an image again for the built-in steps after it.
/// Not synchronised: valid only inside the apply() it was handed to.
class sample_view {
 public:
  /// The sample's index in the dataset and its key (file or shard/record), for messages.
  virtual std::uint64_t id() const = 0;
  virtual std::string_view key() const = 0;
  /// Field `name`, as it was when apply() began; step_error when the step did not declare
  /// it among the fields it reads or the sample lacks it.
  virtual array_view read(std::string_view name) const = 0;
  /// Makes field `name` (declared among the fields it makes) anew: an array of `type` and
  /// `extents` whose every element the step writes. It takes the field's place when apply()
  /// returns normally (nothing of a failed attempt is kept); step_error when `name` was not
  /// declared, or the dtype or rank is not the declared one.
  virtual mutable_array_view make(std::string_view name, dtype type,
                                  const std::vector<std::int64_t>& extents) = 0;

 protected:
  ~sample_view() = default;
};

/// A field a step reads: it must exist (a step before made it, or "label"), and be of
/// `type` and `rank` when they are given.
struct field_read {
  field_read(std::string n, std::optional<dtype> t = std::nullopt,
             std::optional<int> r = std::nullopt)
      : name(std::move(n)), type(t), rank(r) {}
  std::string name;
  std::optional<dtype> type;
  std::optional<int> rank;
};

/// A field a step makes (or replaces): dtype and rank; the extents vary from sample to sample
/// unless `same_shape_as` names a field it reads whose extents it keeps.
struct field_made {
  field_made(std::string n, dtype t, int r, std::string like = {})
      : name(std::move(n)), type(t), rank(r), same_shape_as(std::move(like)) {}
  std::string name;
  dtype type = dtype::uint8;
  int rank = 0;
  std::string same_shape_as;
};

/// What a step costs per sample, for the latency budget: about the same whatever the sample
/// (cheap: a sample is never handed to a straggler actor just before it, that would cost more
/// than running it), or in proportion to the elements of field `field` (its input): before the
/// step, a sample whose field has more elements than the budget's size threshold is handed
/// off, and a sample with no size of its own (no image header) takes that count as its size,
/// so that the budget's cost model learns latency against it.
struct cost_hint {
  enum class kind : std::uint8_t { cheap, per_element };
  kind how = kind::cheap;
  std::string field;

  static cost_hint cheap() { return {}; }
  static cost_hint per_element_of(std::string f) { return {kind::per_element, std::move(f)}; }
};

/// A step's fields and cost, asked once when its chain is built.
struct step_declaration {
  std::vector<field_read> reads;
  std::vector<field_made> makes;
  cost_hint cost;
};

/// The parameters of one `[[transform]]` table (every key but `op`). The accessors return the
/// value at `key`, or `fallback` when it is absent; a value of another type, or outside
/// [min, max], throws step_error naming "file:line:column: transform[i].key". Each key read
/// is marked: keys no accessor asked for are reported as unknown when the topology is loaded.
/// Not synchronised: used by one factory at a time.
class step_params {
 public:
  using value = std::variant<bool, std::int64_t, double, std::string, std::vector<double>,
                             std::vector<std::string>>;
  struct entry {
    std::string key;
    value held;
    std::string where;  ///< "node.toml:12:5" (or the --set override)
  };

  step_params() = default;
  /// `path` is the table's key path ("transform[2]"), `where` its own location.
  step_params(std::string path, std::string where, std::vector<entry> entries)
      : path_(std::move(path)),
        where_(std::move(where)),
        entries_(std::move(entries)),
        asked_(entries_.size(), false) {}

  bool has(std::string_view key) const { return find(key) != nullptr; }

  bool boolean(std::string_view key, bool fallback) const {
    const auto* e = find(key);
    return e ? held_as<bool>(*e, "a boolean") : fallback;
  }
  std::int64_t integer(std::string_view key, std::int64_t fallback,
                       std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    const auto* e = find(key);
    if (e == nullptr) {
      return fallback;
    }
    auto v = held_as<std::int64_t>(*e, "an integer");
    if (v < min || v > max) {
      fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "] (got " +
                    std::to_string(v) + ")");
    }
    return v;
  }
  /// Integers are accepted where numbers are.
  double number(std::string_view key, double fallback,
                double min = -std::numeric_limits<double>::max(),
                double max = std::numeric_limits<double>::max()) const {
    const auto* e = find(key);
    if (e == nullptr) {
      return fallback;
    }
    double v = std::holds_alternative<std::int64_t>(e->held)
                   ? static_cast<double>(std::get<std::int64_t>(e->held))
                   : held_as<double>(*e, "a number");
    if (!(v >= min && v <= max)) {
      fail(key, "must be in [" + text(min) + ", " + text(max) + "] (got " + text(v) + ")");
    }
    return v;
  }
  std::string string(std::string_view key, std::string fallback) const {
    const auto* e = find(key);
    return e ? held_as<std::string>(*e, "a string") : std::move(fallback);
  }
  /// A required string: step_error when absent.
  std::string string(std::string_view key) const {
    if (find(key) == nullptr) {
      fail(key, "required key is missing");
    }
    return string(key, {});
  }
  /// An array of numbers (integers read as numbers); an empty array reads as empty.
  std::vector<double> numbers(std::string_view key, std::vector<double> fallback) const {
    const auto* e = find(key);
    if (e == nullptr) {
      return fallback;
    }
    if (const auto* none = std::get_if<std::vector<std::string>>(&e->held); none && none->empty()) {
      return {};
    }
    return held_as<std::vector<double>>(*e, "an array of numbers");
  }
  std::vector<std::string> strings(std::string_view key, std::vector<std::string> fallback) const {
    const auto* e = find(key);
    return e ? held_as<std::vector<std::string>>(*e, "an array of strings") : std::move(fallback);
  }

  /// Throws step_error "<where key is>: <path>.<key>: <what>", for checks of the step's own.
  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    const auto* e = find_entry(key);
    throw step_error((e ? e->where : where_) + ": " + path_ + "." + std::string(key) + ": " + what,
                     std::string(key), what);
  }

  /// The keys no accessor has asked for yet.
  std::vector<std::string> unasked_keys() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (!asked_[i]) {
        out.push_back(entries_[i].key);
      }
    }
    return out;
  }
  const std::string& path() const noexcept { return path_; }
  const std::string& where() const noexcept { return where_; }

 private:
  const entry* find_entry(std::string_view key) const {
    for (const auto& e : entries_) {
      if (e.key == key) {
        return &e;
      }
    }
    return nullptr;
  }
  const entry* find(std::string_view key) const {
    const auto* e = find_entry(key);
    if (e != nullptr) {
      asked_[static_cast<std::size_t>(e - entries_.data())] = true;
    }
    return e;
  }
  /// 0.5, 1e+308: as short as it reads.
  static std::string text(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }
  template <class T>
  T held_as(const entry& e, const char* expected) const {
    if (const auto* v = std::get_if<T>(&e.held)) {
      return *v;
    }
    fail(e.key, std::string("expected ") + expected);
  }

  std::string path_;
  std::string where_;
  std::vector<entry> entries_;
  mutable std::vector<bool> asked_;
};

/// A transform step. Immutable once made: apply() is const and runs concurrently on different
/// samples from any number of threads.
class step {
 public:
  virtual ~step() = default;
  /// The fields it reads and makes, and its cost; asked once, when its chain is built.
  virtual step_declaration declare() const = 0;
  /// Transforms `sample`: reads its declared fields, makes its declared fields. All
  /// randomness from `rng`. Throws to fail the attempt (see the top of this header). Must not
  /// crash: a segfault or abort inside a step ends the process (README "Your own steps").
  virtual void apply(sample_view& sample, std::mt19937_64& rng) const = 0;
};

/// Makes a step from its table's parameters; throws step_error (from step_params or its own)
/// on a bad one. Called when the topology is loaded, once per table naming it.
using step_factory = std::function<std::unique_ptr<step>(const step_params& params)>;

/// Registers the step `name` (the `op` of a [[transform]] table) for every topology loaded
/// after it in this process: call it in an embedding trainer before pipeline::open.
/// Registering a name again replaces its factory; a built-in op's name is refused
/// (std::invalid_argument). Thread-safe. Defined in libconveyor.
void register_step(std::string name, step_factory factory);

/// What a plugin's entry point registers its steps with (the node's registry).
class step_registrar {
 public:
  virtual void add(std::string name, step_factory factory) = 0;

 protected:
  ~step_registrar() = default;
};

}  // namespace conveyor

/// In one source file of a plugin (a shared library that `[plugins] libraries` names):
///   CONVEYOR_PLUGIN(my_register)   // void my_register(conveyor::step_registrar&)
/// defines the two symbols a node looks up: the API version the plugin was built against
/// (read before anything in the plugin runs) and the entry point that registers its steps.
#define CONVEYOR_PLUGIN(register_function)                                                \
  extern "C" __attribute__((visibility("default"))) const int conveyor_step_api_version = \
      CONVEYOR_STEP_API_VERSION;                                                          \
  extern "C" __attribute__((visibility("default"))) void conveyor_register_steps(         \
      ::conveyor::step_registrar* registrar) {                                            \
    register_function(*registrar);                                                        \
  }
