#pragma once
// Strength masks over the patch grid, from the forms the CLI accepts:
//   rect:r0,c0,r1,c1   grid cells, inclusive on both ends (rect:0,0,23,23 is all of a 24x24
//                      grid, rect:0,0,15,15 all of a 16x16 one); checked against the grid
//   tokens:A-B,C,last  a text prompt's token strip (a 1 x N grid, N = the tokens the snapshot
//                      holds): ranges and single tokens, inclusive; "last" is the last of them
//   FILE.png/.jpg/...  grayscale image of any size, area-averaged onto the grid (exact area
//                      weights, so any size maps onto any grid, square or not); white = 1
//   FILE.npy           float32/float64 array of shape (grid_h, grid_w)
//   FILE.safetensors   a [grid_h, grid_w] tensor named "mask" or "steer.mask" (or the only one)
// The grid is the model's (Model::patchGrid, or a prompt's VisualSpan); every mismatch is a
// kvsteer::Error naming the mask, the grid and what was expected.
#include <ATen/core/Tensor.h>

#include <string>

namespace kvsteer {

at::Tensor loadMask(const std::string& spec, int gridHeight, int gridWidth);   // [h, w] float32
void saveMaskPng(const std::string& path, const at::Tensor& mask, int cellPixels = 14);

} // namespace kvsteer
