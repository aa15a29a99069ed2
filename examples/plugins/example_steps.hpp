#pragma once
// Two user steps, built only against the installed <conveyor/step.hpp> (README "Your own
// steps"); plugin.cpp registers them for the node.

#include <memory>

#include <conveyor/step.hpp>

namespace example {

/// salt_pepper: sets a share `amount` (in [0, 1], default 0.02) of an image field's pixels
/// (`field`, default "image": uint8 [h, w, c]) to black or white, half each, drawn from the
/// step's generator. The image keeps its shape (and stays an image for the steps after it).
std::unique_ptr<conveyor::step> make_salt_pepper(const conveyor::step_params& params);

/// token_ids: the whitespace-separated words of a `txt` field (`from`, default "txt": bytes)
/// -> int32 [n] token ids (`to`, default "tokens") from a vocabulary file (`vocabulary`,
/// required: one word a line, its id the line's index; a word not in it gets `unknown`,
/// default 0).
std::unique_ptr<conveyor::step> make_token_ids(const conveyor::step_params& params);

}  // namespace example
