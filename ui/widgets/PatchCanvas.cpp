#include "PatchCanvas.h"

#include "CanvasCommands.h"
#include "types/StrengthGridResample.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QImageReader>
#include <QMimeData>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QTabletEvent>
#include <QUndoStack>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

namespace {

constexpr qreal kMargin = 14;

bool isImageFile(const QString& path) {
    const QByteArray fmt = QImageReader::imageFormat(path);
    if (!fmt.isEmpty()) return true;
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("png") || suffix == QLatin1String("jpg") || suffix == QLatin1String("jpeg") ||
           suffix == QLatin1String("bmp") || suffix == QLatin1String("gif");
}

// Distance from p to the segment a-b.
qreal segmentDistance(const QPointF& p, const QPointF& a, const QPointF& b) {
    const QPointF ab = b - a;
    const qreal len2 = QPointF::dotProduct(ab, ab);
    qreal t = len2 > 0 ? QPointF::dotProduct(p - a, ab) / len2 : 0;
    t = std::clamp<qreal>(t, 0, 1);
    const QPointF q = a + t * ab;
    return std::hypot(p.x() - q.x(), p.y() - q.y());
}

} // namespace

PatchCanvas::PatchCanvas(QUndoStack* undoStack, QWidget* parent) : QWidget(parent), undo_(undoStack) {
    setAcceptDrops(true);
    setMouseTracking(true);
    setAttribute(Qt::WA_TabletTracking);
    setFocusPolicy(Qt::StrongFocus);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setToolTip(tr("Paint where the plan should steer.\n"
                  "Left drag: paint with the current tool · Right drag: erase\n"
                  "Ctrl+wheel or [ ]: brush size, in grid cells · Drop or paste an image to open it"));
    coverage_ = QVector<float>(strength_.size(), 0.0f);
}

// ---- image and map -------------------------------------------------------------------------------

void PatchCanvas::setImage(const QImage& crop, const QString& name) {
    image_ = crop;
    imageName_ = name;
    highlightRow_ = highlightCol_ = -1;   // a heatmap cell's marker belongs to the image before
    updateHeightCap();
    update();
}

void PatchCanvas::clearImage() {
    image_ = QImage();
    imageName_.clear();
    updateHeightCap();
    update();
}

void PatchCanvas::setTokenStrip(const QStringList& pieces) {
    if (pieces == strip_.tokens()) return;
    if (editing_) endEdit();
    const bool wasStrip = isTokenStrip();
    const StrengthGrid carried = TokenStripLayout::carryStrength(strip_.tokens(), strength_, pieces);
    const bool resized = carried.rows != strength_.rows || carried.cols != strength_.cols;
    strip_.setTokens(pieces);
    if (pieces.isEmpty()) {   // back to an image's grid, which the caller sets
        updateHeightCap();
        update();
        Q_EMIT gridSizeChanged(strength_.rows, strength_.cols);
        return;
    }
    if (resized && undo_) undo_->clear();   // its maps have the old number of tokens
    highlightRow_ = highlightCol_ = -1;
    strength_ = carried;
    coverage_ = QVector<float>(strength_.size(), 0.0f);
    updateHeightCap();
    update();
    if (resized || !wasStrip) Q_EMIT gridSizeChanged(strength_.rows, strength_.cols);
    Q_EMIT strengthChanged(strength_);
}

void PatchCanvas::paintLastToken() {
    if (!isTokenStrip()) return;
    StrengthGrid g(strength_.rows, strength_.cols);
    g.at(0, g.cols - 1) = float(brushStrength_);
    setStrength(g, tr("Last token"));
}

void PatchCanvas::setGridSize(int rows, int cols) {
    if (rows <= 0 || cols <= 0 || (rows == strength_.rows && cols == strength_.cols)) return;
    const StrengthGrid old = strength_;
    if (editing_) endEdit();   // a stroke in progress belongs to the old grid: finish it first
    strength_ = resampleStrength(strength_, rows, cols);
    coverage_ = QVector<float>(strength_.size(), 0.0f);
    highlightRow_ = highlightCol_ = -1;
    if (undo_) undo_->clear();
    setBrushSize(brushSize_);   // clamped to the new grid's largest brush
    updateHeightCap();
    update();
    Q_EMIT gridSizeChanged(rows, cols);
    if (!old.isZero()) Q_EMIT mapResampled(old.rows, old.cols, rows, cols);
    Q_EMIT strengthChanged(strength_);
}

void PatchCanvas::applyStrength(const StrengthGrid& grid) {
    if (grid == strength_) return;
    const bool resized = grid.rows != strength_.rows || grid.cols != strength_.cols;
    strength_ = grid;
    if (resized) {   // e.g. a session's map, before it is fitted to the model's grid
        coverage_ = QVector<float>(grid.size(), 0.0f);
        highlightRow_ = highlightCol_ = -1;
        updateHeightCap();
        Q_EMIT gridSizeChanged(grid.rows, grid.cols);
    }
    update();
    Q_EMIT strengthChanged(strength_);
}

void PatchCanvas::setStrength(const StrengthGrid& grid, const QString& undoText) {
    if (grid == strength_) return;
    const StrengthGrid before = strength_;
    if (undo_) undo_->push(new StrengthEditCommand(this, before, grid, undoText));
    else applyStrength(grid);
    Q_EMIT editFinished();
}

void PatchCanvas::pushEdit(const StrengthGrid& before, const QString& text) {
    if (before == strength_) return;
    if (undo_) undo_->push(new StrengthEditCommand(this, before, strength_, text));   // redo() is a no-op here
    Q_EMIT editFinished();
}

void PatchCanvas::fillAll() {
    StrengthGrid g = strength_;
    std::fill(g.values.begin(), g.values.end(), float(brushStrength_));
    setStrength(g, tr("Fill"));
}

void PatchCanvas::clearAll() { setStrength(StrengthGrid(strength_.rows, strength_.cols), tr("Clear")); }

void PatchCanvas::invert() {
    StrengthGrid g = strength_;
    const float top = std::max(1.0f, g.maximum());
    for (float& v : g.values) v = top - v;
    setStrength(g, tr("Invert"));
}

// ---- tools -------------------------------------------------------------------------------------

void PatchCanvas::setTool(Tool tool) {
    if (tool == tool_) return;
    tool_ = tool;
    update();
    Q_EMIT toolChanged(tool);
}

double PatchCanvas::maxBrushSize() const { return std::max(16, std::max(strength_.rows, strength_.cols) / 2); }

void PatchCanvas::setBrushSize(double cells) {
    cells = std::clamp(cells, 1.0, maxBrushSize());
    if (cells == brushSize_) return;
    brushSize_ = cells;
    update();
    Q_EMIT brushSizeChanged(cells);
}

void PatchCanvas::setBrushStrength(double strength) {
    strength = std::clamp(strength, 0.0, 1.0);
    if (strength == brushStrength_) return;
    brushStrength_ = strength;
    Q_EMIT brushStrengthChanged(strength);
}

void PatchCanvas::setGridVisible(bool visible) {
    if (visible == gridVisible_) return;
    gridVisible_ = visible;
    update();
    Q_EMIT gridVisibleChanged(visible);
}

void PatchCanvas::highlightCell(int row, int col) {
    highlightRow_ = strength_.contains(row, col) ? row : -1;
    highlightCol_ = strength_.contains(row, col) ? col : -1;
    update();
}

// ---- geometry ----------------------------------------------------------------------------------

QRectF PatchCanvas::imageRect() const {
    // Without an image, the empty state takes the grid's shape.
    const QSizeF img = image_.isNull() ? QSizeF(strength_.cols, strength_.rows) : QSizeF(image_.size());
    const QRectF area = QRectF(rect()).adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const qreal scale = std::max<qreal>(0.01, std::min(area.width() / img.width(), area.height() / img.height()));
    const QSizeF s = img * scale;
    // Centred horizontally, at the top: spare height stays below the image, next to the prompt.
    return QRectF(QPointF(std::round(area.center().x() - s.width() / 2), area.top()), s);
}

QPointF PatchCanvas::cellCenter(int row, int col) const {
    if (isTokenStrip()) return strip_.chip(col).center();
    const QRectF r = imageRect();
    return {r.left() + (col + 0.5) * r.width() / strength_.cols, r.top() + (row + 0.5) * r.height() / strength_.rows};
}

QSizeF PatchCanvas::cellSize() const {
    if (isTokenStrip()) return strip_.chip(0).size();
    const QRectF r = imageRect();
    return {r.width() / strength_.cols, r.height() / strength_.rows};
}

int PatchCanvas::gridLineStep() const {
    const QSizeF cell = cellSize();
    const qreal pitch = std::min(cell.width(), cell.height());
    for (int step = 1; step <= 16; step *= 2)
        if (step * pitch >= kMinLinePitch) return step;
    return 0;
}

QPointF PatchCanvas::toCells(const QPointF& pos) const {
    if (isTokenStrip()) return strip_.toCells(pos);
    const QRectF r = imageRect();
    return {(pos.x() - r.left()) * strength_.cols / r.width(), (pos.y() - r.top()) * strength_.rows / r.height()};
}

// ---- editing -----------------------------------------------------------------------------------

void PatchCanvas::beginEdit(const QPointF& pos, bool erase, double pressure) {
    if (!canPaint()) return;
    editing_ = true;
    erasing_ = erase || tool_ == Tool::Eraser;
    rectMode_ = tool_ == Tool::Rectangle;
    before_ = strength_;
    coverage_.fill(0.0f, strength_.size());
    const QPointF c = toCells(pos);
    lastCellPos_ = rectStart_ = rectEnd_ = c;
    if (!rectMode_) dab(c, c, pressure);
    update();
}

void PatchCanvas::continueEdit(const QPointF& pos, double pressure) {
    const QPointF c = toCells(pos);
    if (rectMode_) {
        rectEnd_ = c;
        update();
        return;
    }
    dab(lastCellPos_, c, pressure);
    lastCellPos_ = c;
}

void PatchCanvas::endEdit() {
    if (!editing_) return;
    editing_ = false;
    if (rectMode_) {
        const QRect cells = rubberCells();
        StrengthGrid g = strength_;
        for (int r = cells.top(); r <= cells.bottom(); ++r)
            for (int c = cells.left(); c <= cells.right(); ++c) g.at(r, c) = erasing_ ? 0.0f : float(brushStrength_);
        rectMode_ = false;
        applyStrength(g);
        pushEdit(before_, erasing_ ? tr("Erase rectangle") : tr("Rectangle"));
        update();
        return;
    }
    pushEdit(before_, erasing_ ? tr("Erase stroke") : tr("Brush stroke"));
}

QRect PatchCanvas::rubberCells() const {
    auto clampCell = [](qreal v, int n) { return std::clamp(int(std::floor(v)), 0, n - 1); };
    const int c0 = clampCell(std::min(rectStart_.x(), rectEnd_.x()), strength_.cols);
    const int c1 = clampCell(std::max(rectStart_.x(), rectEnd_.x()), strength_.cols);
    const int r0 = clampCell(std::min(rectStart_.y(), rectEnd_.y()), strength_.rows);
    const int r1 = clampCell(std::max(rectStart_.y(), rectEnd_.y()), strength_.rows);
    return QRect(QPoint(c0, r0), QPoint(c1, r1));
}

// Marks every cell the brush touches along from→to with coverage strength·pressure, then derives
// the map from the map before the stroke: a stroke never paints more than its strength however
// often it passes over a cell.
void PatchCanvas::dab(const QPointF& from, const QPointF& to, double pressure) {
    const double radius = brushSize_ / 2.0;
    const float amount = float(std::clamp(brushStrength_ * pressure, 0.0, 1.0));
    bool touched = false;
    auto cover = [&](int r, int c) {
        if (!strength_.contains(r, c)) return;
        float& cov = coverage_[r * strength_.cols + c];
        if (amount > cov) {
            cov = amount;
            touched = true;
        }
    };
    // Cells whose centre lies within the radius of the segment...
    const int r0 = int(std::floor(std::min(from.y(), to.y()) - radius - 1)), r1 = int(std::ceil(std::max(from.y(), to.y()) + radius + 1));
    const int c0 = int(std::floor(std::min(from.x(), to.x()) - radius - 1)), c1 = int(std::ceil(std::max(from.x(), to.x()) + radius + 1));
    for (int r = std::max(0, r0); r <= std::min(strength_.rows - 1, r1); ++r)
        for (int c = std::max(0, c0); c <= std::min(strength_.cols - 1, c1); ++c)
            if (segmentDistance(QPointF(c + 0.5, r + 0.5), from, to) <= radius) cover(r, c);
    // ...and always the cells the pointer itself passed through (a 1-cell brush paints its cell).
    const qreal len = std::hypot(to.x() - from.x(), to.y() - from.y());
    const int samples = std::max(1, int(std::ceil(len / 0.25)));
    for (int i = 0; i <= samples; ++i) {
        const QPointF p = from + (to - from) * (qreal(i) / samples);
        if (p.x() >= 0 && p.y() >= 0) cover(int(p.y()), int(p.x()));
    }
    if (touched) recomputeFromCoverage();
}

void PatchCanvas::recomputeFromCoverage() {
    StrengthGrid g = before_;
    for (int i = 0; i < g.size(); ++i) {
        const float cov = coverage_[i];
        if (cov <= 0) continue;
        g.values[i] = erasing_ ? g.values[i] * (1.0f - cov) : std::max(g.values[i], cov);
        if (erasing_ && g.values[i] < 1e-6f) g.values[i] = 0.0f;
    }
    applyStrength(g);
}

// ---- input -------------------------------------------------------------------------------------

void PatchCanvas::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton && event->button() != Qt::RightButton) return QWidget::mousePressEvent(event);
    if (editing_) return;
    beginEdit(event->position(), event->button() == Qt::RightButton, 1.0);
    event->accept();
}

void PatchCanvas::mouseMoveEvent(QMouseEvent* event) {
    hoverPos_ = event->position();
    if (editing_) continueEdit(event->position(), 1.0);
    const QPointF c = toCells(event->position());
    const int row = int(std::floor(c.y())), col = int(std::floor(c.x()));
    if (canPaint() && strength_.contains(row, col)) Q_EMIT hoverCell(row, col, strength_.at(row, col));
    else Q_EMIT hoverCell(-1, -1, 0);
    update();
}

void PatchCanvas::mouseReleaseEvent(QMouseEvent* event) {
    if (!editing_) return QWidget::mouseReleaseEvent(event);
    continueEdit(event->position(), 1.0);
    endEdit();
    event->accept();
}

void PatchCanvas::tabletEvent(QTabletEvent* event) {
    const double pressure = event->pressure() > 0 ? event->pressure() : 1.0;
    hoverPos_ = event->position();
    switch (event->type()) {
    case QEvent::TabletPress:
        if (!editing_)
            beginEdit(event->position(),
                      event->pointerType() == QPointingDevice::PointerType::Eraser || event->button() == Qt::RightButton, pressure);
        break;
    case QEvent::TabletMove:
        if (editing_) continueEdit(event->position(), pressure);
        break;
    case QEvent::TabletRelease:
        if (editing_) {
            continueEdit(event->position(), pressure);
            endEdit();
        }
        break;
    default: break;
    }
    update();
    event->accept();   // no synthesized mouse events
}

void PatchCanvas::wheelEvent(QWheelEvent* event) {
    if (!(event->modifiers() & Qt::ControlModifier)) return QWidget::wheelEvent(event);
    setBrushSize(brushSize_ + (event->angleDelta().y() > 0 ? 1 : -1));
    event->accept();
}

void PatchCanvas::leaveEvent(QEvent* event) {
    hoverPos_ = QPointF(-1, -1);
    Q_EMIT hoverCell(-1, -1, 0);
    update();
    QWidget::leaveEvent(event);
}

void PatchCanvas::dragEnterEvent(QDragEnterEvent* event) {
    const QMimeData* m = event->mimeData();
    bool ok = m->hasImage();
    if (m->hasUrls())
        for (const QUrl& url : m->urls()) ok = ok || (url.isLocalFile() && isImageFile(url.toLocalFile()));
    if (ok) {
        dragHover_ = true;
        update();
        event->acceptProposedAction();
    }
}

void PatchCanvas::dragLeaveEvent(QDragLeaveEvent* event) {
    dragHover_ = false;
    update();
    QWidget::dragLeaveEvent(event);
}

void PatchCanvas::dropEvent(QDropEvent* event) {
    dragHover_ = false;
    update();
    const QMimeData* m = event->mimeData();
    if (m->hasUrls()) {
        for (const QUrl& url : m->urls())
            if (url.isLocalFile()) {
                Q_EMIT imageFileDropped(url.toLocalFile());
                event->acceptProposedAction();
                return;
            }
    }
    if (m->hasImage()) {
        Q_EMIT imageDropped(qvariant_cast<QImage>(m->imageData()));
        event->acceptProposedAction();
    }
}

// ---- size (how it draws itself: PatchCanvasPainting.cpp) ----------------------------------------

void PatchCanvas::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    updateHeightCap();
}

// Never take more height than the image (or the token strip) needs at the full width, so what
// lies below stays close.
void PatchCanvas::updateHeightCap() {
    if (isTokenStrip()) {
        strip_.layOut(QRectF(rect()).adjusted(kMargin, kMargin, -kMargin, -kMargin), font());
        const int cap = int(std::ceil(strip_.bounds().bottom() + kMargin));
        if (maximumHeight() != cap) setMaximumHeight(std::max(cap, minimumSizeHint().height()));
        return;
    }
    const QSizeF img = image_.isNull() ? QSizeF(strength_.cols, strength_.rows) : QSizeF(image_.size());
    const qreal aspect = img.width() > 0 ? img.height() / img.width() : 1.0;
    const int cap = int(std::ceil((width() - 2 * kMargin) * aspect + 2 * kMargin));
    if (maximumHeight() != cap) setMaximumHeight(std::max(cap, minimumSizeHint().height()));
}

} // namespace kvsteer::ui
