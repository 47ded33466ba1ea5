#pragma once
// Strength masks over the patch grid, from the forms the CLI accepts:
//   rect:r0,c0,r1,c1   grid cells, inclusive on both ends (rect:0,0,23,23 is the whole grid)
//   FILE.png/.jpg/...  grayscale image of any size, area-averaged onto the grid; white = 1
//   FILE.npy           float32/float64 array of shape (grid_h, grid_w)
//   FILE.safetensors   a [grid_h, grid_w] tensor named "mask" or "steer.mask" (or the only one)
#include <ATen/core/Tensor.h>

#include <string>

namespace kvsteer {

at::Tensor loadMask(const std::string& spec, int gridHeight, int gridWidth);   // [h, w] float32
void saveMaskPng(const std::string& path, const at::Tensor& mask, int cellPixels = 14);

} // namespace kvsteer
