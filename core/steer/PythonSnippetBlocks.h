#pragma once
// The fixed pieces of PythonSnippet's script: the edit of the cached K/V, the propagate
// recompute, the decoding of both answers, and the families' special layouts (LLaVA-NeXT's views,
// M-RoPE positions, PaliGemma's prefix-LM prefill). PythonSnippet.cpp assembles them.
#include "steer/SteeringOperator.h"

#include <string>

namespace kvsteer::snippet {

// The edit of one head's painted positions, as core/steer/SteeringPlan.cpp computes it, and the
// loop over the plan's layers (one coefficient, or one per layer). `anyres`: ablate's mean is
// over the picture's cells, never a newline token. Only add, norm, scale and ablate: PythonSnippet
// refuses the others before it gets here.
std::string editFunction(SteeringOperator op, AblateTarget ablateTo, bool anyres);

// Propagate (causal prompts): what follows the edit computed again from the edited cache.
std::string propagate(bool image, bool mrope);

// Both answers decoded greedily from the last prompt token (the unsteered one from the copy of
// the snapshot made before the edit), printed as kvsteer steer --json's "unsteered" and
// "steered" objects, one JSON line each. `io`: the processor or tokenizer variable.
std::string decodeBoth(bool mrope, const std::string& io);

extern const char* const kAnyresLayout;   // LLaVA-NeXT: one strength per image token, from the crops' map
extern const char* const kMropePositions; // Qwen VL: the prompt's (t, h, w) positions and rope delta
extern const char* const kPrefixLmNote;   // PaliGemma: why the whole prompt is prefilled

} // namespace kvsteer::snippet
