// The pointer over the heatmaps: which cell it is over, the read-out that replaces the caption
// while it hovers, what a click does (a small map enlarges its layer; a cell is marked, and found
// on the canvas), the tooltips, and the small maps' repacking as the pane is resized.
#include "HeatmapPanel.h"

#include "ElidedLabel.h"
#include "HeatmapPlotStyle.h"

#include <qcustomplot.h>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QTimer>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

bool HeatmapPanel::cellAt(QCPAxisRect* rect, const QPointF& pos, int* row, int* col) const {
    if (!rect || !data_.valid()) return false;
    const double x = rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
    const double y = rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
    const int c = int(std::lround(x)), r = int(std::lround(y));
    if (r < 0 || c < 0 || r >= data_.rows || c >= data_.cols) return false;
    *row = r;
    *col = c;
    return true;
}

void HeatmapPanel::showHover(int layer, int row, int col, const QPoint& globalPos) {
    const float v = data_.at(layer, row, col);
    const QString text = tr("layer %1 · row %2 · col %3 · %4 = %5")
                             .arg(layer)
                             .arg(row)
                             .arg(col)
                             .arg(metricTitle(data_.metric))
                             .arg(QString::number(v, 'g', 4));
    hover_->setFullText(text);
    hover_->show();
    caption_->hide();
    QToolTip::showText(globalPos, text);
}

QString HeatmapPanel::hoverText() const { return hover_->fullText(); }

void HeatmapPanel::onMultiplesMove(QMouseEvent* event) {
    QCPAxisRect* rect = multiples_->axisRectAt(event->position());
    const int layer = int(rects_.indexOf(rect));
    int r = 0, c = 0;
    if (layer >= 0 && cellAt(rect, event->position(), &r, &c)) showHover(layer, r, c, event->globalPosition().toPoint());
    else QToolTip::hideText();
}

void HeatmapPanel::onMultiplesClick(QMouseEvent* event) {
    QCPAxisRect* rect = multiples_->axisRectAt(event->position());
    const int layer = int(rects_.indexOf(rect));
    if (layer < 0) return;
    setSelectedLayer(layer);
    int r = 0, c = 0;
    if (cellAt(rect, event->position(), &r, &c)) {
        markCell(r, c);
        if (data_.view < 0) Q_EMIT cellClicked(r, c);   // another view's cells are not the canvas's
    }
}

void HeatmapPanel::onDetailMove(QMouseEvent* event) {
    int r = 0, c = 0;
    if (cellAt(detail_->axisRect(), event->position(), &r, &c) && detail_->axisRect()->rect().contains(event->position().toPoint()))
        showHover(std::clamp(selected_, 0, data_.layers - 1), r, c, event->globalPosition().toPoint());
    else QToolTip::hideText();
}

void HeatmapPanel::onDetailClick(QMouseEvent* event) {
    int r = 0, c = 0;
    if (!cellAt(detail_->axisRect(), event->position(), &r, &c)) return;
    if (!detail_->axisRect()->rect().contains(event->position().toPoint())) return;
    markCell(r, c);
    if (data_.view < 0) Q_EMIT cellClicked(r, c);   // another view's cells are not the canvas's
}

bool HeatmapPanel::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Leave && (watched == multiples_ || watched == detail_)) {
        hover_->hide();
        caption_->show();
    }
    if (event->type() == QEvent::ToolTip && (watched == multiples_ || watched == detail_)) {
        auto* help = static_cast<QHelpEvent*>(event);
        QCustomPlot* plot = static_cast<QCustomPlot*>(watched);
        QCPAxisRect* rect = plot->axisRectAt(help->pos());
        const int layer = plot == detail_ ? std::clamp(selected_, 0, std::max(0, data_.layers - 1)) : int(rects_.indexOf(rect));
        int r = 0, c = 0;
        if (rect && layer >= 0 && cellAt(rect, help->pos(), &r, &c) && rect->rect().contains(help->pos())) {
            showHover(layer, r, c, help->globalPos());
        } else {
            QToolTip::showText(help->globalPos(),
                               tr("Hover a cell for its value · click a small map to enlarge it · click a cell to find that patch on the image"));
        }
        return true;
    }
    if (watched == multiples_ && event->type() == QEvent::Resize && !rects_.isEmpty()) {
        packRows();   // before the plot lays itself out for the new size
        const int cols = bestColumns(int(rects_.size()), multiples_->width(), multiples_->height(), multiplesTitleHeight(), gridRows(),
                                     gridCols());
        if (cols != columns_) {
            QTimer::singleShot(0, this, [this] {
                rebuildMultiples(int(rects_.size()));
                pending_ = true;
                applyData();
            });
        }
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace kvsteer::ui
