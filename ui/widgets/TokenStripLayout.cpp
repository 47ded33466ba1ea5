#include "TokenStripLayout.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

namespace {
constexpr qreal kPadX = 5, kPadY = 3, kGap = 4, kLineGap = 6;
}

QString TokenStripLayout::display(const QString& piece) {
    QString s = piece;
    s.replace(QLatin1Char('\n'), QStringLiteral("↵"));
    s.replace(QLatin1Char('\t'), QStringLiteral("→"));
    s.replace(QLatin1Char(' '), QStringLiteral("·"));
    return s.isEmpty() ? QStringLiteral("∅") : s;
}

StrengthGrid TokenStripLayout::carryStrength(const QStringList& oldPieces, const StrengthGrid& old, const QStringList& newPieces) {
    const int n = int(newPieces.size()), m = int(oldPieces.size());
    StrengthGrid out(1, std::max(n, 1));
    // A map read for these tokens before the strip showed them (a mask from the command line).
    if (m == 0 && old.rows == 1 && old.cols == n) return old;
    if (old.rows != 1 || old.cols != m) return out;   // not a strip over these tokens: nothing to carry
    int prefix = 0;
    while (prefix < std::min(n, m) && oldPieces[prefix] == newPieces[prefix]) ++prefix;
    int suffix = 0;
    while (suffix < std::min(n, m) - prefix && oldPieces[m - 1 - suffix] == newPieces[n - 1 - suffix]) ++suffix;
    for (int i = 0; i < prefix; ++i) out.at(0, i) = old.at(0, i);
    for (int i = 1; i <= suffix; ++i) out.at(0, n - i) = old.at(0, m - i);
    return out;
}

void TokenStripLayout::layOut(const QRectF& area, const QFont& font) {
    font_ = font;
    chips_.clear();
    const QFontMetricsF fm(font);
    const qreal h = fm.height() + 2 * kPadY;
    qreal x = area.left(), y = area.top();
    for (const QString& piece : pieces_) {
        const qreal w = std::min(area.width(), fm.horizontalAdvance(display(piece)) + 2 * kPadX);
        if (x > area.left() && x + w > area.right()) {   // wrap like text
            x = area.left();
            y += h + kLineGap;
        }
        chips_.push_back(QRectF(x, y, w, h));
        x += w + kGap;
    }
}

QRectF TokenStripLayout::bounds() const {
    QRectF r;
    for (const QRectF& c : chips_) r = r.united(c);
    return r;
}

QPointF TokenStripLayout::toCells(const QPointF& pos) const {
    if (chips_.isEmpty()) return {-1, -1};
    // The chip on the pointer's line nearest to it; above or below every line, the first or last.
    int best = -1;
    qreal bestDistance = 0;
    for (int i = 0; i < chips_.size(); ++i) {
        const QRectF& c = chips_[i];
        const qreal lineTop = c.top() - kLineGap / 2, lineBottom = c.bottom() + kLineGap / 2;
        if (pos.y() < lineTop || pos.y() >= lineBottom) continue;
        const qreal d = pos.x() < c.left() ? c.left() - pos.x() : pos.x() > c.right() ? pos.x() - c.right() : 0;
        if (best < 0 || d < bestDistance) {
            best = i;
            bestDistance = d;
        }
    }
    if (best < 0) best = pos.y() < chips_.front().top() ? 0 : int(chips_.size()) - 1;
    const QRectF& c = chips_[best];
    const qreal across = std::clamp((pos.x() - c.left()) / std::max<qreal>(c.width(), 1), 0.0, 0.999);
    return {best + across, 0.5};
}

void TokenStripLayout::paint(QPainter& p, const StrengthGrid& strength, int highlight, const QColor& paintColour) const {
    p.save();
    p.setFont(font_);
    p.setRenderHint(QPainter::Antialiasing);
    for (int i = 0; i < chips_.size(); ++i) {
        const QRectF& c = chips_[i];
        const float v = strength.contains(0, i) ? std::clamp(strength.at(0, i), 0.0f, 1.0f) : 0.0f;
        QColor fill = v > 0 ? paintColour : QColor(255, 255, 255);
        if (v > 0) fill.setAlphaF(0.25 + 0.6 * v);
        p.setBrush(fill);
        p.setPen(QPen(v > 0 ? paintColour.darker(120) : QColor(0, 0, 0, 60), v > 0 ? 1.6 : 1.0));
        p.drawRoundedRect(c, 4, 4);
        p.setPen(QColor(30, 30, 30));
        p.drawText(c.adjusted(kPadX, 0, -kPadX, 0), Qt::AlignVCenter | Qt::AlignLeft, display(pieces_[i]));
        if (i == highlight) {
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(QColor(0x00, 0xB4, 0xD8), 2.4));
            p.drawRoundedRect(c.adjusted(-2, -2, 2, 2), 5, 5);
        }
    }
    p.restore();
}

} // namespace kvsteer::ui
