#include "widgets/ElidedLabel.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
    setTextFormat(Qt::PlainText);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);   // never widens the window
    setProperty("elides", true);                                     // (tests/LayoutCheck.h)
}

void ElidedLabel::setDescription(const QString& text) {
    description_ = text;
    elide();
}

void ElidedLabel::setFullText(const QString& text) {
    full_ = text;
    updateGeometry();
    elide();
}

// The whole text's width is what it would like; nothing is what it needs.
QSize ElidedLabel::sizeHint() const {
    const QMargins m = contentsMargins();
    // Rounded up, with a pixel to spare: elidedText() measures in fractions of a pixel.
    const int text = int(std::ceil(QFontMetricsF(font()).horizontalAdvance(full_))) + 1;
    return {text + m.left() + m.right() + 2 * margin(), QLabel::sizeHint().height()};
}

QSize ElidedLabel::minimumSizeHint() const { return {0, QLabel::minimumSizeHint().height()}; }

void ElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    elide();
}

void ElidedLabel::elide() {
    const QString shown = fontMetrics().elidedText(full_, Qt::ElideRight, std::max(0, contentsRect().width()));
    if (shown != text()) setText(shown);
    // The tooltip: what the field is, and the whole text while it is cut.
    const QString tip = shown == full_ ? description_ : description_.isEmpty() ? full_ : full_ + QLatin1Char('\n') + description_;
    if (tip != toolTip()) setToolTip(tip);
}

} // namespace kvsteer::ui
