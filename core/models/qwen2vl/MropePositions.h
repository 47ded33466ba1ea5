#pragma once
// The M-RoPE position rule of the Qwen VL families (transformers' get_rope_index for one image),
// shared by Qwen2-VL, Qwen2.5-VL and Qwen3-VL:
//   text          (p, p, p), counting up from 0
//   image token k (s, s + k / w', s + k % w'), s the position of the image's first token and w'
//                 the merged grid's width
//   after it      the text resumes at the image's largest position + 1
// The rope delta (Prompt::positionOffset) is that last position + 1 minus the prompt's length:
// a token fed back at cache index i sits at i + delta on all three axes.
#include "models/Prompt.h"

#include <string>

namespace kvsteer {

// Fills prompt.positionIds [3, L] and prompt.positionOffset (the rope delta); a prompt without an
// image keeps plain positions (offset 0, no rows).
void assignMropePositions(Prompt& prompt);

// The rule in words, for `inspect`.
std::string mropePositionRule();

} // namespace kvsteer
