#pragma once
// Strength masks for a prompt's span: every form loadMask (Mask.h) reads, on the span's grid,
// and for a picture shown in several views (LLaVA-NeXT) the forms that address the picture:
//   px:x0,y0,x1,y1          a rectangle in the picture's pixels (x1, y1 exclusive)
//   view:NAME:r0,c0,r1,c1   cells of a named view ("base" or "crops"), inclusive
//   rect:r0,c0,r1,c1        the base view's cells, as on LLaVA-1.5's 24 x 24 grid
// Each becomes 1 on every grid cell (the crops' grid, the one strength maps are painted on) whose
// pixels it covers; the views' cells then take their strength from it (cache/SpanCells.h).
#include "cache/VisualSpan.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace kvsteer {

at::Tensor loadSpanMask(const std::string& spec, const VisualSpan& span);   // [gridHeight, gridWidth] float32

} // namespace kvsteer
