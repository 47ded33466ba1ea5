#include "models/qwen2vl/MropePositions.h"

#include <ATen/ops/zeros.h>

#include <algorithm>

namespace kvsteer {

void assignMropePositions(Prompt& p) {
    const int64_t n = static_cast<int64_t>(p.ids.size());
    p.positionOffset = 0;
    if (!p.hasImage) return;
    at::Tensor pos = at::zeros({3, n}, at::kLong);
    auto* row = pos.data_ptr<int64_t>();   // rows t, h, w one after another
    const int64_t s = p.span.start, wPrime = p.span.gridWidth;
    int64_t next = 0;   // the position the next text token gets
    for (int64_t i = 0; i < n;) {
        if (i == s) {
            for (int64_t k = 0; k < p.span.length; ++k) {
                row[i + k] = s;
                row[n + i + k] = s + k / wPrime;
                row[2 * n + i + k] = s + k % wPrime;
            }
            next = s + std::max<int64_t>(p.span.gridHeight, p.span.gridWidth);
            i += p.span.length;
            continue;
        }
        row[i] = row[n + i] = row[2 * n + i] = next++;
        ++i;
    }
    p.positionIds = pos;
    p.positionOffset = next - n;   // rope delta: decoding continues at cache index + delta
}

std::string mropePositionRule() {
    return "M-RoPE (t, h, w): text counts up, image token k at (s, s + k / w', s + k % w'), then max + 1; decoding at "
           "cache index + rope delta";
}

} // namespace kvsteer
