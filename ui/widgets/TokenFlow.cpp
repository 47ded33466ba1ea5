#include "TokenFlow.h"

#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <cmath>

namespace kvsteer::ui {

namespace {
constexpr qreal kPadX = 10, kPadY = 8, kLineGap = 5, kTokenPadX = 1.5;
}

TokenFlow::TokenFlow(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 1.3);
    setFont(f);
}

void TokenFlow::clear() {
    tokens_.clear();
    differs_.clear();
    hovered_ = -1;
    stale_ = false;
    relayout();
}

void TokenFlow::append(const StreamToken& token, bool differs) {
    tokens_.push_back(token);
    differs_.push_back(differs);
    relayout();
}

void TokenFlow::setTokens(const QVector<StreamToken>& tokens, const QVector<bool>& differs) {
    tokens_ = tokens;
    differs_ = differs;
    differs_.resize(tokens_.size());
    hovered_ = -1;
    relayout();
}

QString TokenFlow::text() const {
    QString s;
    for (const StreamToken& t : tokens_) s += t.text;
    return s;
}

int TokenFlow::differingCount() const { return int(std::count(differs_.begin(), differs_.end(), true)); }

void TokenFlow::setAccent(const QColor& c) {
    accent_ = c;
    update();
}

void TokenFlow::setPlaceholder(const QString& text) {
    placeholder_ = text;
    update();
}

void TokenFlow::setStale(bool stale) {
    if (stale == stale_) return;
    stale_ = stale;
    update();
}

// ---- layout ---------------------------------------------------------------------------------------

QVector<TokenFlow::Piece> TokenFlow::layout(int width, qreal* height) const {
    const QFontMetricsF fm(font());
    const qreal lineH = fm.height() + kLineGap;
    const qreal right = std::max<qreal>(width - kPadX, kPadX + 40);
    qreal x = kPadX, y = kPadY;
    QVector<Piece> out;
    for (int i = 0; i < tokens_.size(); ++i) {
        const StreamToken& t = tokens_[i];
        QString text = t.text;
        if (t.eos) text = QStringLiteral("⏎");
        const QStringList lines = text.split(QLatin1Char('\n'));
        for (int k = 0; k < lines.size(); ++k) {
            if (k > 0) {   // an explicit newline
                x = kPadX;
                y += lineH;
            }
            QString seg = lines[k];
            if (seg.isEmpty() && !(t.eos && k == 0)) {
                if (lines.size() == 1) {   // a token that completes no text yet: a thin marker to hover
                    out.push_back({i, QString(), QRectF(x, y, 4, fm.height())});
                    x += 4;
                }
                continue;
            }
            qreal w = fm.horizontalAdvance(seg) + 2 * kTokenPadX;
            if (x + w > right && x > kPadX) {   // wrap before the token; a leading space is not drawn
                x = kPadX;
                y += lineH;
                if (seg.startsWith(QLatin1Char(' '))) {
                    seg = seg.mid(1);
                    w = fm.horizontalAdvance(seg) + 2 * kTokenPadX;
                }
            }
            out.push_back({i, seg, QRectF(x, y, w, fm.height())});
            x += w;
        }
    }
    if (height) *height = y + fm.height() + kPadY;
    return out;
}

void TokenFlow::relayout() {
    pieces_ = layout(width(), &contentHeight_);
    laidOutWidth_ = width();
    const int h = int(std::ceil(contentHeight_));
    if (minimumHeight() != h) setMinimumHeight(h);
    updateGeometry();
    update();
}

int TokenFlow::heightForWidth(int width) const {
    qreal h = 0;
    layout(width, &h);
    return int(std::ceil(h));
}

QSize TokenFlow::sizeHint() const { return {360, std::max(60, heightForWidth(std::max(width(), 200)))}; }

void TokenFlow::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (width() != laidOutWidth_) relayout();
}

int TokenFlow::tokenAt(const QPointF& pos) const {
    for (const Piece& p : pieces_)
        if (p.rect.adjusted(0, -kLineGap / 2, 0, kLineGap / 2).contains(pos)) return p.token;
    return -1;
}

QRectF TokenFlow::tokenRect(int index) const {
    QRectF r;
    for (const Piece& p : pieces_)
        if (p.token == index) r = r.isNull() ? p.rect : r.united(p.rect);
    return r;
}

// ---- painting ---------------------------------------------------------------------------------------

void TokenFlow::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.setRenderHint(QPainter::TextAntialiasing);
    const QPalette& pal = palette();
    if (tokens_.isEmpty()) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(int(kPadX), int(kPadY), -int(kPadX), -int(kPadY)), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                   placeholder_);
        return;
    }
    QColor textColor = pal.color(QPalette::Text);
    if (stale_) textColor = pal.color(QPalette::Disabled, QPalette::Text);
    QColor diffFill = accent_;
    diffFill.setAlphaF(stale_ ? 0.08 : 0.17);
    QColor diffLine = accent_;
    if (stale_) diffLine.setAlphaF(0.4);
    for (const Piece& piece : pieces_) {
        const StreamToken& t = tokens_[piece.token];
        const bool diff = differs_.value(piece.token);
        const bool hover = piece.token == hovered_;
        const QRectF box = piece.rect.adjusted(0, -1, 0, 1);
        if (diff) {
            p.setPen(Qt::NoPen);
            p.setBrush(diffFill);
            p.drawRoundedRect(box, 3, 3);
            p.setPen(QPen(diffLine, 1.6));
            p.drawLine(QPointF(box.left() + 1, box.bottom()), QPointF(box.right() - 1, box.bottom()));
        }
        if (hover) {
            p.setPen(QPen(pal.color(QPalette::Highlight), 1.2));
            p.setBrush(Qt::NoBrush);
            p.drawRoundedRect(box.adjusted(-0.5, -0.5, 0.5, 0.5), 3, 3);
        }
        if (t.eos) {
            p.setPen(pal.color(QPalette::PlaceholderText));
            p.drawText(piece.rect, Qt::AlignCenter, piece.text);
            continue;
        }
        p.setPen(textColor);
        p.drawText(piece.rect.adjusted(kTokenPadX, 0, -kTokenPadX, 0), Qt::AlignLeft | Qt::AlignVCenter, piece.text);
    }
}

// ---- hover --------------------------------------------------------------------------------------

QString TokenFlow::tooltipFor(int index) const {
    if (index < 0 || index >= tokens_.size()) return {};
    const StreamToken& t = tokens_[index];
    auto esc = [](QString s) {
        s = s.toHtmlEscaped();
        s.replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
        return s;
    };
    QString chosen = t.eos ? QStringLiteral("end of answer") : (t.text.isEmpty() ? tr("(partial character)") : esc(t.text));
    QString html = QStringLiteral("<div style='white-space:pre'><b>%1</b> <span style='color:#777'>· token %2 · id %3%4</span></div>")
                       .arg(t.eos ? chosen : QStringLiteral("“%1”").arg(chosen))
                       .arg(index + 1)
                       .arg(t.id)
                       .arg(differs_.value(index) ? tr(" · differs") : QString());
    if (!t.top.isEmpty()) {
        html += QStringLiteral("<table cellspacing='0' cellpadding='2' style='margin-top:4px'>");
        for (int k = 0; k < t.top.size(); ++k) {
            const Alternative& a = t.top[k];
            const int bar = std::max(1, int(std::round(a.probability * 90)));
            const bool picked = a.id == t.id;
            html += QStringLiteral(
                        "<tr><td style='color:#777'>%1</td><td style='font-family:monospace%2'>“%3”</td>"
                        "<td><table cellspacing='0' cellpadding='0'><tr><td bgcolor='%4' width='%5' height='8'></td>"
                        "<td width='%6'></td></tr></table></td><td align='right'>%7%</td></tr>")
                        .arg(k + 1)
                        .arg(picked ? QStringLiteral(";font-weight:bold") : QString())
                        .arg(esc(a.text))
                        .arg(picked ? accent_.name() : QStringLiteral("#9aa3ad"))
                        .arg(bar)
                        .arg(91 - bar)
                        .arg(QString::number(a.probability * 100.0, 'f', a.probability >= 0.1 ? 1 : 2));
        }
        html += QStringLiteral("</table>");
    }
    return html;
}

void TokenFlow::mouseMoveEvent(QMouseEvent* event) {
    const int t = tokenAt(event->position());
    if (t != hovered_) {
        hovered_ = t;
        update();
        if (t >= 0) QToolTip::showText(event->globalPosition().toPoint(), tooltipFor(t), this, tokenRect(t).toAlignedRect());
        else QToolTip::hideText();
    }
    QWidget::mouseMoveEvent(event);
}

void TokenFlow::leaveEvent(QEvent* event) {
    hovered_ = -1;
    update();
    QWidget::leaveEvent(event);
}

bool TokenFlow::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int t = tokenAt(help->pos());
        if (t >= 0) QToolTip::showText(help->globalPos(), tooltipFor(t), this, tokenRect(t).toAlignedRect());
        else QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

} // namespace kvsteer::ui
