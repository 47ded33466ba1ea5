// PatchCanvas drawing itself: the image, the painted strength and its outline, the grid, and the
// transient marks (a rectangle being dragged, a cell picked on a heatmap, the brush under the
// pointer). Input and the strength map's edits are in PatchCanvas.cpp.
#include "PatchCanvas.h"

#include <QPainter>

#include <algorithm>

namespace kvsteer::ui {

namespace {

const QColor kPaint(0xF0, 0x7A, 0x1A);        // painted strength
const QColor kHighlight(0x00, 0xB4, 0xD8);    // a cell picked on a heatmap

} // namespace

void PatchCanvas::paintEmptyState(QPainter& p) {
    const QRectF r = imageRect();
    QPen dash(palette().color(QPalette::Mid), 1.5, Qt::DashLine);
    p.setPen(dash);
    p.setBrush(palette().color(QPalette::Base));
    p.drawRoundedRect(r, 10, 10);
    p.setPen(palette().color(QPalette::PlaceholderText));
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 1.25);
    f.setWeight(QFont::DemiBold);
    p.setFont(f);
    p.drawText(r.adjusted(20, 0, -20, -r.height() * 0.1), Qt::AlignCenter | Qt::TextWordWrap, tr("No image"));
    p.setFont(font());
    p.drawText(r.adjusted(24, r.height() * 0.12, -24, 0), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Drop an image here, paste one (Ctrl+V)\nor use File → Open Image… (Ctrl+O)"));
}

void PatchCanvas::paintGridLines(QPainter& p, const QRectF& r) {
    const qreal cw = r.width() / strength_.cols, ch = r.height() / strength_.rows;
    p.setPen(QPen(QColor(120, 120, 120, 95), 0));
    const int step = gridLineStep();
    // Every step-th line, counted from the top-left corner; the outline always.
    auto drawn = [step](int i, int n) { return i == 0 || i == n || (step > 0 && i % step == 0); };
    for (int i = 0; i <= strength_.cols; ++i)
        if (drawn(i, strength_.cols)) p.drawLine(QPointF(r.left() + i * cw, r.top()), QPointF(r.left() + i * cw, r.bottom()));
    for (int i = 0; i <= strength_.rows; ++i)
        if (drawn(i, strength_.rows)) p.drawLine(QPointF(r.left(), r.top() + i * ch), QPointF(r.right(), r.top() + i * ch));
}

void PatchCanvas::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Window).darker(104));
    if (isTokenStrip() && !hasImage()) {
        strip_.paint(p, strength_, highlightRow_ == 0 ? highlightCol_ : -1, kPaint);
        return;
    }
    if (!hasImage()) {
        p.setRenderHint(QPainter::Antialiasing);
        paintEmptyState(p);
        return;
    }
    const QRectF r = imageRect();

    // Soft shadow, then the image as the model sees it.
    p.setRenderHint(QPainter::Antialiasing);
    for (int i = 1; i <= 4; ++i) {
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(0, 0, 0, 14));
        p.drawRoundedRect(r.adjusted(-i, -i + 1, i, i + 1), i, i);
    }
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.drawImage(r, image_);

    paintStrength(p, r);
    if (gridVisible_) paintGridLines(p, r);
    paintStrengthOutline(p, r);
    p.setRenderHint(QPainter::Antialiasing);
    if (editing_ && rectMode_) paintRubberBand(p, r);
    if (highlightRow_ >= 0) paintHighlight(p, r);
    if (hoverPos_.x() >= 0 && r.contains(hoverPos_) && tool_ != Tool::Rectangle) paintBrushOutline(p, r);
    if (dragHover_) {
        p.setPen(QPen(palette().color(QPalette::Highlight), 3));
        p.setBrush(Qt::NoBrush);
        p.drawRoundedRect(QRectF(rect()).adjusted(2, 2, -2, -2), 6, 6);
    }
}

// Cell (row, col) on screen, the image drawn in r.
QRectF PatchCanvas::cellRectIn(const QRectF& r, int row, int col) const {
    const qreal cw = r.width() / strength_.cols, ch = r.height() / strength_.rows;
    return QRectF(r.left() + col * cw, r.top() + row * ch, cw, ch);
}

// Painted strength: one pixel per cell, scaled up without smoothing. Filling each cell's rectangle
// instead lets neighbours overlap by a pixel where the cell size is fractional, and the overlap
// shows as a darker line across the paint.
void PatchCanvas::paintStrength(QPainter& p, const QRectF& r) {
    QImage paint(strength_.cols, strength_.rows, QImage::Format_ARGB32_Premultiplied);
    paint.fill(Qt::transparent);
    for (int row = 0; row < strength_.rows; ++row)
        for (int col = 0; col < strength_.cols; ++col) {
            const float v = std::clamp(strength_.at(row, col), 0.0f, 1.0f);
            if (v <= 0) continue;
            QColor c = kPaint;
            c.setAlphaF(0.18 + 0.42 * v);
            paint.setPixel(col, row, qPremultiply(c.rgba()));
        }
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.setRenderHint(QPainter::Antialiasing, false);
    p.drawImage(r, paint);
}

// The painted region's edge: a line where a painted cell meets an unpainted one.
void PatchCanvas::paintStrengthOutline(QPainter& p, const QRectF& r) {
    QPen edge(kPaint.darker(115), 2);
    edge.setCapStyle(Qt::SquareCap);
    p.setPen(edge);
    auto painted = [&](int row, int col) { return strength_.contains(row, col) && strength_.at(row, col) > 0; };
    for (int row = 0; row < strength_.rows; ++row)
        for (int col = 0; col < strength_.cols; ++col) {
            if (!painted(row, col)) continue;
            const QRectF c = cellRectIn(r, row, col);
            if (!painted(row - 1, col)) p.drawLine(c.topLeft(), c.topRight());
            if (!painted(row + 1, col)) p.drawLine(c.bottomLeft(), c.bottomRight());
            if (!painted(row, col - 1)) p.drawLine(c.topLeft(), c.bottomLeft());
            if (!painted(row, col + 1)) p.drawLine(c.topRight(), c.bottomRight());
        }
}

// The rectangle being dragged.
void PatchCanvas::paintRubberBand(QPainter& p, const QRectF& r) {
    const QRect cells = rubberCells();
    const QRectF box = cellRectIn(r, cells.top(), cells.left()).united(cellRectIn(r, cells.bottom(), cells.right()));
    QColor fill = erasing_ ? QColor(255, 255, 255, 90) : kPaint;
    if (!erasing_) fill.setAlphaF(0.35);
    p.setBrush(fill);
    p.setPen(QPen(erasing_ ? QColor(60, 60, 60) : kPaint.darker(130), 1.5, Qt::DashLine));
    p.drawRect(box);
}

// The cell picked on a heatmap, with a "row, col" tag kept inside the image.
void PatchCanvas::paintHighlight(QPainter& p, const QRectF& r) {
    const QRectF c = cellRectIn(r, highlightRow_, highlightCol_).adjusted(-1.5, -1.5, 1.5, 1.5);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(Qt::white, 4));
    p.drawRect(c);
    p.setPen(QPen(kHighlight, 2.2));
    p.drawRect(c);
    const QString label = tr("row %1, col %2").arg(highlightRow_).arg(highlightCol_);
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    p.setFont(f);
    const QRectF textBox = QFontMetricsF(f).boundingRect(label).adjusted(-6, -3, 6, 3);
    QRectF tag(QPointF(c.left(), c.top() - textBox.height() - 4), textBox.size());
    if (tag.top() < r.top()) tag.moveTop(c.bottom() + 4);
    if (tag.right() > r.right()) tag.moveRight(r.right());
    p.setPen(Qt::NoPen);
    p.setBrush(kHighlight.darker(125));
    p.drawRoundedRect(tag, 4, 4);
    p.setPen(Qt::white);
    p.drawText(tag, Qt::AlignCenter, label);
}

// The brush's outline under the pointer.
void PatchCanvas::paintBrushOutline(QPainter& p, const QRectF& r) {
    const qreal radius = brushSize_ / 2.0 * r.width() / strength_.cols;
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(QColor(0, 0, 0, 150), 2.5));
    p.drawEllipse(hoverPos_, radius, radius);
    p.setPen(QPen(tool_ == Tool::Eraser ? QColor(255, 255, 255) : kPaint.lighter(130), 1.2));
    p.drawEllipse(hoverPos_, radius, radius);
}

} // namespace kvsteer::ui
