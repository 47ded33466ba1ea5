#pragma once
// Qwen3-VL's learned position embedding, resampled to each image's patch grid (transformers'
// fast_pos_embed_interpolate). The checkpoint holds an S x S table (S = 48 on the real models,
// row-major); a gh x gw grid samples it bilinearly with align-corners semantics:
//   patch row i    -> table row y_i = i (S - 1) / (gh - 1)   (torch.linspace(0, S - 1, gh), float32)
//   patch column j -> table column x_j likewise
//   y0 = floor(y), y1 = min(y0 + 1, S - 1), dy = y - y0 (x the same), and
//   pe(i, j) = T[y0, x0] (1 - dy)(1 - dx) + T[y0, x1] (1 - dy) dx + T[y1, x0] dy (1 - dx) + T[y1, x1] dy dx
// with the weights formed in float32 and the four terms summed in that order. The grid's corners
// land on the table's corners; there is no antialiasing. The raster result is then listed in the
// patches' 2 x 2-cell order (Qwen2VlGrid.h), every frame repeating it.
#include "models/qwen2vl/Qwen2VlGrid.h"

#include <ATen/core/Tensor.h>

namespace kvsteer {

// table [side * side, E] -> [t * gh * gw, E] in the table's dtype and device, row n the embedding
// of listed patch n.
at::Tensor interpolatedPositionEmbeddings(const at::Tensor& table, int side, const GridThw& grid, int mergeSize);

} // namespace kvsteer
