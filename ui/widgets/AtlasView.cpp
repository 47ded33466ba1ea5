#include "widgets/AtlasView.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

namespace kvsteer::ui {

namespace {

constexpr int kLabelWidth = 64;    // the layer range of each row
constexpr int kHeaderHeight = 22;  // the strength of each column
constexpr int kFooterHeight = 22;  // the legend, or the out-of-date line

QColor fill(AtlasOutcome o) {
    switch (o) {
    case AtlasOutcome::Same: return QColor(0xd5, 0xd9, 0xdf);
    case AtlasOutcome::Different: return QColor(0x3f, 0x9b, 0x6a);
    case AtlasOutcome::Degenerate: return QColor(0xd9, 0x6c, 0x2b);
    case AtlasOutcome::Pending: break;
    }
    return QColor(0xf3, 0xf4, 0xf6);
}

QString number(double v) { return QString::number(v, 'g', 4); }

// The first words that fit: the answer as a person would glance at it.
QString firstWords(const QString& text, const QFontMetrics& fm, int width) {
    const QString t = text.simplified();
    return t.isEmpty() ? QStringLiteral("∅") : fm.elidedText(t, Qt::ElideRight, width);
}

} // namespace

AtlasView::AtlasView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QSize AtlasView::sizeHint() const { return {kLabelWidth + 5 * 76, kHeaderHeight + kFooterHeight + 4 * 34}; }
QSize AtlasView::minimumSizeHint() const { return {kLabelWidth + 120, kHeaderHeight + kFooterHeight + 60}; }

void AtlasView::start(const AtlasStarted& info) {
    info_ = info;
    cells_ = QVector<AtlasCellResult>(rows() * columns());
    stale_ = false;
    hovered_ = -1;
    update();
}

void AtlasView::setCell(const AtlasCellResult& cell) {
    if (cell.atlasId != info_.atlasId || cell.index < 0 || cell.index >= cells_.size()) return;
    cells_[cell.index] = cell;
    update(cellRect(cell.index));
}

void AtlasView::clear() {
    info_ = AtlasStarted();
    cells_.clear();
    stale_ = false;
    update();
}

void AtlasView::setStale(bool stale) {
    if (stale_ == stale) return;
    stale_ = stale;
    update();
}

void AtlasView::setSelected(int index) {
    if (selected_ == index) return;
    selected_ = index;
    update();
}

const AtlasCellResult& AtlasView::cell(int index) const {
    static const AtlasCellResult none;
    return index >= 0 && index < cells_.size() ? cells_[index] : none;
}

int AtlasView::finishedCells() const {
    int n = 0;
    for (const AtlasCellResult& c : cells_) n += c.valid();
    return n;
}

QRect AtlasView::gridRect() const { return rect().adjusted(kLabelWidth, kHeaderHeight, -4, -kFooterHeight); }

QRect AtlasView::cellRect(int index) const {
    if (columns() == 0 || rows() == 0 || index < 0) return {};
    const QRect g = gridRect();
    const int r = index / columns(), c = index % columns();
    const int x0 = g.left() + g.width() * c / columns(), x1 = g.left() + g.width() * (c + 1) / columns();
    const int y0 = g.top() + g.height() * r / rows(), y1 = g.top() + g.height() * (r + 1) / rows();
    return QRect(x0, y0, x1 - x0, y1 - y0).adjusted(1, 1, -1, -1);
}

int AtlasView::indexAt(const QPoint& p) const {
    for (int i = 0; i < rows() * columns(); ++i)
        if (cellRect(i).contains(p)) return i;
    return -1;
}

QString AtlasView::toolTipFor(int index) const {
    if (index < 0 || index >= cells_.size()) return {};
    const int r = index / columns(), c = index % columns();
    const QString coeff = info_.setsValues && info_.setsKeys ? tr("c_k = c_v = %1") : info_.setsKeys ? tr("c_k %1") : tr("c_v %1");
    QString head = tr("<b>%1</b> · layers %2").arg(coeff.arg(number(info_.strengths.value(c))), info_.layerLabels.value(r).toHtmlEscaped());
    const AtlasCellResult& cell = cells_[index];
    if (!cell.valid()) return head + tr("<br>running…");
    return head + QStringLiteral("<br><i>%1</i><br>“%2”<br>unsteered: “%3”<br><span style='color:#666'>%4</span><br>%5")
                      .arg(outcomeTitle(cell.outcome), cell.text.toHtmlEscaped(), info_.unsteeredText.toHtmlEscaped(),
                           cell.signalsText.toHtmlEscaped(), tr("Click to use this setting in the Steering panel."));
}

void AtlasView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QPalette& pal = palette();
    if (columns() == 0) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("Run the atlas to see where steering works: each cell is one strength × layer range, decoded from the kept "
                      "prefill."));
        return;
    }
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.9);
    p.setFont(small);
    const QString axis = info_.setsValues && info_.setsKeys ? QStringLiteral("c_k=c_v") : info_.setsKeys ? QStringLiteral("c_k") : QStringLiteral("c_v");
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRect(0, 0, kLabelWidth, kHeaderHeight), Qt::AlignCenter, axis);
    for (int c = 0; c < columns(); ++c) {
        const QRect r = cellRect(c);
        p.drawText(QRect(r.left(), 0, r.width(), kHeaderHeight), Qt::AlignCenter, number(info_.strengths[c]));
    }
    for (int r = 0; r < rows(); ++r) {
        const QRect cr = cellRect(r * columns());
        p.drawText(QRect(0, cr.top(), kLabelWidth - 4, cr.height()), Qt::AlignRight | Qt::AlignVCenter, info_.layerLabels[r]);
    }
    const QFontMetrics fm(small);
    for (int i = 0; i < cells_.size(); ++i) {
        const QRect r = cellRect(i);
        const AtlasCellResult& cell = cells_[i];
        QColor bg = fill(cell.outcome);
        if (stale_) bg = QColor::fromHsl(bg.hslHue(), bg.hslSaturation() / 4, std::min(255, bg.lightness() + 50));
        p.fillRect(r, bg);
        p.setPen(cell.outcome == AtlasOutcome::Pending ? QPen(QColor(0xb0, 0xb6, 0xbe), 1, Qt::DashLine) : QPen(bg.darker(130)));
        p.drawRect(r.adjusted(0, 0, -1, -1));
        const bool dark = cell.outcome == AtlasOutcome::Different || cell.outcome == AtlasOutcome::Degenerate;
        p.setPen(dark && !stale_ ? Qt::white : QColor(0x30, 0x34, 0x3a));
        p.drawText(r.adjusted(4, 2, -4, -2), Qt::AlignCenter, cell.valid() ? firstWords(cell.text, fm, r.width() - 8) : QStringLiteral("…"));
        if (i == selected_ || i == hovered_) {
            p.setPen(QPen(i == selected_ ? QColor(0x1d, 0x5f, 0xd1) : QColor(0x30, 0x34, 0x3a), 2));
            p.drawRect(r.adjusted(1, 1, -2, -2));
        }
    }
    // Footer: the legend, or why the picture is out of date.
    const QRect footer(kLabelWidth, height() - kFooterHeight, width() - kLabelWidth, kFooterHeight);
    if (stale_) {
        p.setPen(QColor(0xb3, 0x4a, 0x12));
        p.drawText(footer, Qt::AlignLeft | Qt::AlignVCenter, tr("Out of date: the image, prompt, mask or plan changed — run the atlas again"));
        return;
    }
    int x = footer.left();
    const QString legend[] = {tr("same"), tr("different"), tr("degenerate")};   // short: the dock is narrow
    for (AtlasOutcome o : {AtlasOutcome::Same, AtlasOutcome::Different, AtlasOutcome::Degenerate}) {
        p.fillRect(QRect(x, footer.center().y() - 5, 10, 10), fill(o));
        x += 14;
        p.setPen(pal.color(QPalette::WindowText));
        const QString t = legend[int(o)];
        p.drawText(QRect(x, footer.top(), fm.horizontalAdvance(t) + 4, footer.height()), Qt::AlignVCenter, t);
        x += fm.horizontalAdvance(t) + 14;
    }
}

void AtlasView::mouseMoveEvent(QMouseEvent* e) {
    const int i = indexAt(e->position().toPoint());
    if (i != hovered_) {
        hovered_ = i;
        update();
    }
}

void AtlasView::mousePressEvent(QMouseEvent* e) {
    const int i = indexAt(e->position().toPoint());
    if (e->button() == Qt::LeftButton && i >= 0 && cells_[i].valid()) Q_EMIT cellClicked(cells_[i]);
}

bool AtlasView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString tip = toolTipFor(indexAt(help->pos()));
        if (tip.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(help->globalPos(), tip, this);
        return true;
    }
    if (e->type() == QEvent::Leave && hovered_ >= 0) {
        hovered_ = -1;
        update();
    }
    return QWidget::event(e);
}

} // namespace kvsteer::ui
