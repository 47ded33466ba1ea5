#pragma once
// StrengthGrid: the painted steering strength over the model's visual-token grid (24×24 for
// LLaVA-1.5 at 336 px, 16×16 / 32×32 / 64×64 for PaliGemma; any rows × cols), row-major: cell
// (r, c) is visual token r * cols + c. This is exactly the plan's strength map: the Worker copies
// it value for value into SteeringPlan::strength. The default 24×24 is only a placeholder until a
// model says its grid.
#include <QMetaType>
#include <QVector>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

struct StrengthGrid {
    int rows = 24;
    int cols = 24;
    QVector<float> values = QVector<float>(24 * 24, 0.0f);

    StrengthGrid() = default;
    StrengthGrid(int r, int c, float fill = 0.0f) : rows(r), cols(c), values(r * c, fill) {}

    int size() const { return rows * cols; }
    bool contains(int r, int c) const { return r >= 0 && c >= 0 && r < rows && c < cols; }
    float at(int r, int c) const { return values[r * cols + c]; }
    float& at(int r, int c) { return values[r * cols + c]; }

    bool isZero() const {
        return std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; });
    }
    int paintedCells() const {
        return int(std::count_if(values.begin(), values.end(), [](float v) { return v != 0.0f; }));
    }
    float maximum() const { return values.isEmpty() ? 0.0f : *std::max_element(values.begin(), values.end()); }
    double sum() const {
        double s = 0;
        for (float v : values) s += v;
        return s;
    }

    bool operator==(const StrengthGrid& o) const { return rows == o.rows && cols == o.cols && values == o.values; }
    bool operator!=(const StrengthGrid& o) const { return !(*this == o); }
};

} // namespace kvsteer::ui

Q_DECLARE_METATYPE(kvsteer::ui::StrengthGrid)
