#pragma once
/// The shape and element type of one prepared sample: what a batch slot is sized by.

#include <cstddef>

#include "conveyor/dtype.hpp"

namespace conveyor {

/// channels x height x width elements of `type` (CHW). Plain value.
struct sample_geometry {
  int channels = 0;
  int height = 0;
  int width = 0;
  dtype type = dtype::uint8;

  std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width) * size_of(type);
  }
};

}  // namespace conveyor
