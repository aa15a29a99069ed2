#pragma once
/// The decode step of parts that decode to arrays rather than to an image a crop works on:
/// NPY (its array), audio (float32 samples, mono or frames x channels), cls (an int32 class
/// id), txt (the bytes, UTF-8 checked), JSON (the value at a key), and a PNG declared as an
/// array (dtype and rank: a 16-bit map, a mask). The field's type comes from the topology (npy,
/// png, json declare dtype and rank) or from the kind, and each sample's array is checked
/// against it: one that decodes to another dtype or rank is an error naming the part.

#include "core/codecs/part_kind.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {

/// The step for a `spec` whose part is of `kind` (not jpeg); errc::invalid_config naming what
/// the spec must declare when it does not say enough.
expected<step_ptr> make_array_decode_step(const decode_spec& spec, part_kind kind,
                                          chain_fields& fields);

}  // namespace conveyor
