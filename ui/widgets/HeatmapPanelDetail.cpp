// HeatmapPanel's large map: the selected layer with its colour scale, square cells and the marked
// cell. (HeatmapPanel.cpp has the controls and the small multiples; HeatmapPanelPointer.cpp what
// the pointer does over both.)
#include "HeatmapPanel.h"

#include "HeatmapPlotStyle.h"

#include <qcustomplot.h>

#include <QTimer>

#include <algorithm>

namespace kvsteer::ui {

void HeatmapPanel::buildDetail() {
    // The large map: one axis rect, a colour scale beside it.
    detail_->plotLayout()->clear();
    detailTitle_ = new QCPTextElement(detail_, tr("No data yet"), QFont(font().family(), int(font().pointSizeF() + 0.5), QFont::DemiBold));
    detail_->plotLayout()->addElement(0, 0, detailTitle_);
    body_ = new QCPLayoutGrid;   // map + colour scale; padded so the map stays square
    detail_->plotLayout()->addElement(1, 0, body_);
    body_->setAutoMargins(QCP::msNone);
    body_->setMargins(QMargins(0, 0, 0, 0));
    auto* rect = new QCPAxisRect(detail_, true);
    body_->addElement(0, 0, rect);
    scale_ = new QCPColorScale(detail_);
    body_->addElement(0, 1, scale_);
    scale_->setType(QCPAxis::atRight);
    scale_->setBarWidth(12);
    scale_->axis()->setTickLabelFont(QFont(font().family(), std::max(7, int(font().pointSizeF() - 1))));
    auto* group = new QCPMarginGroup(detail_);
    rect->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    detail_->xAxis = rect->axis(QCPAxis::atBottom);
    detail_->yAxis = rect->axis(QCPAxis::atLeft);
    for (QCPAxis* a : rect->axes()) {
        a->grid()->setVisible(false);
        a->setTickLabelFont(QFont(font().family(), std::max(7, int(font().pointSizeF() - 1))));
    }
    detail_->yAxis->setRangeReversed(true);
    detail_->xAxis->setLabel(tr("column"));
    detail_->yAxis->setLabel(tr("row"));
    detail_->xAxis->setLabelFont(font());
    detail_->yAxis->setLabelFont(font());
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    detail_->xAxis->setTicker(ticker);
    detail_->yAxis->setTicker(ticker);
    fitDetailAxes();
    detailMap_ = new QCPColorMap(detail_->xAxis, detail_->yAxis);
    detailMap_->setInterpolate(false);
    detailMap_->setTightBoundary(false);
    detailMap_->setColorScale(scale_);
    detailMap_->setGradient(sequentialGradient());
    marker_ = new QCPItemRect(detail_);
    marker_->setClipAxisRect(rect);
    marker_->topLeft->setAxes(detail_->xAxis, detail_->yAxis);
    marker_->bottomRight->setAxes(detail_->xAxis, detail_->yAxis);
    marker_->setPen(QPen(QColor(0x00, 0xB4, 0xD8), 2.5));
    marker_->setBrush(Qt::NoBrush);
    marker_->setVisible(false);
    // Square cells in the large map: pad the plot layout so the axis rect has the grid's shape.
    connect(detail_, &QCustomPlot::afterLayout, this, [this] {
        QCPAxisRect* r = detail_->axisRect();
        const QMargins m = body_->margins();
        const int w0 = r->width() + m.left() + m.right(), h0 = r->height() + m.top() + m.bottom();   // unpadded
        const double aspect = gridRows() * cellHeightOverWidth(gridRows(), gridCols()) / std::max(1, gridCols());   // height over width
        const int w = std::min(w0, int(h0 / aspect)), h = std::min(h0, int(w0 * aspect));
        const int padH = std::max(0, w0 - w), padV = std::max(0, h0 - h);
        const QMargins want(padH / 2, 0, padH - padH / 2, padV);
        if (want == m) return;
        body_->setMargins(want);
        QTimer::singleShot(0, detail_, [this] { detail_->replot(); });
    });
}

void HeatmapPanel::refreshDetail() {
    if (!data_.valid() || maps_.isEmpty()) return;
    const int l = std::clamp(selected_, 0, data_.layers - 1);
    QCPColorMap* src = maps_[l];
    *detailMap_->data() = *src->data();
    detailMap_->setVisible(true);
    fitDetailAxes();
    detailMap_->setGradient(src->gradient());
    detailMap_->setDataRange(src->dataRange());
    scale_->setGradient(src->gradient());
    scale_->setDataRange(src->dataRange());
    detailTitle_->setText(tr("Layer %1 · %2").arg(l).arg(metricTitle(data_.metric)));
    if (markRow_ >= 0) {
        marker_->topLeft->setCoords(markCol_ - 0.5, markRow_ - 0.5);
        marker_->bottomRight->setCoords(markCol_ + 0.5, markRow_ + 0.5);
        marker_->setVisible(true);
    } else {
        marker_->setVisible(false);
    }
    detail_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPanel::fitDetailAxes() {
    const int rows = std::max(1, gridRows()), cols = std::max(1, gridCols());
    detail_->xAxis->setRange(-0.5, cols - 0.5);
    detail_->yAxis->setRange(-0.5, rows - 0.5);
    int step = 1;
    while (std::max(rows, cols) / step > 8) step *= 2;
    for (QCPAxis* a : {detail_->xAxis, detail_->yAxis}) qSharedPointerCast<QCPAxisTickerFixed>(a->ticker())->setTickStep(step);
}

} // namespace kvsteer::ui
