#include "StrengthGridResample.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvsteer::ui {

namespace {

// weights[i][j]: the share of new cell i (of n) that old cell j (of m) covers along one axis.
std::vector<std::vector<double>> axisWeights(int m, int n) {
    std::vector<std::vector<double>> w(size_t(n), std::vector<double>(size_t(m), 0.0));
    const double span = double(m) / n;   // old cells per new cell
    for (int i = 0; i < n; ++i) {
        const double lo = i * span, hi = lo + span;
        for (int j = int(lo); j < m && j < hi; ++j) w[size_t(i)][size_t(j)] = (std::min(hi, j + 1.0) - std::max(lo, double(j))) / span;
    }
    return w;
}

} // namespace

StrengthGrid resampleStrength(const StrengthGrid& from, int rows, int cols) {
    if (from.rows == rows && from.cols == cols) return from;
    StrengthGrid to(rows, cols);
    if (from.size() == 0 || from.isZero()) return to;
    const auto wy = axisWeights(from.rows, rows), wx = axisWeights(from.cols, cols);
    const float lo = *std::min_element(from.values.begin(), from.values.end()), hi = from.maximum();
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            double v = 0;
            for (int sr = 0; sr < from.rows; ++sr) {
                if (wy[size_t(r)][size_t(sr)] == 0) continue;
                for (int sc = 0; sc < from.cols; ++sc) v += wy[size_t(r)][size_t(sr)] * wx[size_t(c)][size_t(sc)] * from.at(sr, sc);
            }
            // Rounding in the weights must not leave dust (1e-8) on unpainted cells or 1.0000001 on full ones.
            to.at(r, c) = std::abs(v) < 1e-6 ? 0.0f : std::clamp(float(v), lo, hi);
        }
    return to;
}

} // namespace kvsteer::ui
