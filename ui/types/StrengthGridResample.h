#pragma once
// Carrying a painted map onto a grid of another size: a session or a mask made for one model's
// patch grid, opened with a model of another (LLaVA's 24×24, PaliGemma's 16×16 / 32×32 / 64×64).
#include "StrengthGrid.h"

namespace kvsteer::ui {

// `from` resampled onto rows × cols, both grids spanning the same image. Area-weighted: each new
// cell gets the mean strength of the part of the image it covers, so the same amount of paint lies
// over the same place — an exact copy when one grid divides the other evenly (16×16 -> 64×64
// repeats each cell 4×4 times), and a partially covered cell gets a proportional strength.
StrengthGrid resampleStrength(const StrengthGrid& from, int rows, int cols);

} // namespace kvsteer::ui
