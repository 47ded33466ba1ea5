#include "HeatmapPanel.h"

#include "HeatmapPlotStyle.h"
#include "ElidedLabel.h"
#include "FlowLayout.h"
#include "Icons.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QSplitter>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

namespace {

QString headText(int head) { return head < 0 ? QObject::tr("mean over KV heads") : QObject::tr("KV head %1").arg(head); }

} // namespace

HeatmapPanel::HeatmapPanel(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 4, 6, 4);
    outer->setSpacing(4);

    // Controls.
    auto* bar = new FlowLayout(nullptr, 10, 4);
    metric_ = new QComboBox(this);
    for (int i = 0; i < kMetricCount; ++i) {
        metric_->addItem(metricTitle(Metric(i)), i);
        metric_->setItemData(i, metricDescription(Metric(i)), Qt::ToolTipRole);
    }
    metric_->setCurrentIndex(int(Metric::Attention));
    metric_->setToolTip(tr("Statistic per visual token and layer"));
    head_ = new QComboBox(this);
    head_->setToolTip(tr("Average over the KV heads, or one head (query heads are averaged within their KV group)"));
    stream_ = new QComboBox(this);
    stream_->addItem(tr("Steered"), true);
    stream_->addItem(tr("Unsteered"), false);
    stream_->setToolTip(tr("Which stream's cache (or attention) to show; ‖ΔK‖ and ‖ΔV‖ always compare the two"));
    perLayerRange_ = new QCheckBox(tr("Range per layer"), this);
    perLayerRange_->setChecked(perLayer_[int(Metric::Attention)]);
    perLayerRange_->setToolTip(tr("Scale each layer's colours to its own minimum and maximum instead of one range for all layers"));
    auto* save = new QToolButton(this);
    save->setIcon(icons::get(icons::Id::SavePlot));
    save->setToolTip(tr("Save the heatmaps as PNG…"));
    save->setAutoRaise(true);
    // Each label stays with its box; the groups wrap onto a second line in a narrow pane.
    auto labelled = [this](const QString& text, QWidget* field) {
        auto* group = new QWidget(this);
        auto* h = new QHBoxLayout(group);
        h->setContentsMargins(0, 0, 0, 0);
        h->setSpacing(4);
        h->addWidget(new QLabel(text, group));
        h->addWidget(field);
        return group;
    };
    head_->setSizeAdjustPolicy(QComboBox::AdjustToContents);   // its items come with the model
    bar->addWidget(labelled(tr("Metric"), metric_));
    bar->addWidget(labelled(tr("Head"), head_));
    bar->addWidget(labelled(tr("Stream"), stream_));
    view_ = new QComboBox(this);
    view_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    view_->setToolTip(tr("LLaVA-NeXT sees the picture twice: squashed into the base view, and finer in crops stitched as the picture "
                         "(the grid the canvas paints on)"));
    viewGroup_ = labelled(tr("View"), view_);
    viewGroup_->hide();
    bar->addWidget(viewGroup_);
    bar->addWidget(perLayerRange_);
    bar->addWidget(save);
    outer->addLayout(bar);

    // Plots.
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->setChildrenCollapsible(false);
    multiples_ = new QCustomPlot(split);
    multiples_->setMinimumSize(200, 120);
    multiples_->setToolTip(QString());
    detail_ = new QCustomPlot(split);
    detail_->setMinimumSize(200, 160);
    split->addWidget(multiples_);
    split->addWidget(detail_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({500, 440});
    outer->addWidget(split, 1);

    auto* foot = new QHBoxLayout;
    caption_ = new ElidedLabel(this);
    caption_->setStyleSheet(QStringLiteral("color: #3A404A;"));
    hover_ = new ElidedLabel(this);
    hover_->setStyleSheet(QStringLiteral("color: #6b737d;"));
    hover_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);

    foot->addWidget(caption_, 1);
    foot->addWidget(hover_, 1);
    hover_->hide();   // while the pointer is over a cell, its read-out replaces the caption
    outer->addLayout(foot);

    const QColor bg = palette().color(QPalette::Base);
    for (QCustomPlot* p : {multiples_, detail_}) {
        p->setBackground(bg);
        p->setAntialiasedElements(QCP::aeNone);
        p->setNotAntialiasedElements(QCP::aeAll);
    }

    buildDetail();
    connect(multiples_, &QCustomPlot::afterLayout, this, [this] {
        for (QCPAxisRect* r : rects_) squareCells(r, gridRows(), gridCols());
    });

    multiples_->installEventFilter(this);
    detail_->installEventFilter(this);

    redraw_ = new QTimer(this);
    redraw_->setSingleShot(true);
    redraw_->setInterval(40);   // coalesce per-step updates into at most ~25 redraws a second
    connect(redraw_, &QTimer::timeout, this, &HeatmapPanel::applyData);

    auto emitSettings = [this] {
        {
            const QSignalBlocker block(perLayerRange_);
            perLayerRange_->setChecked(perLayer_.value(metric_->currentData().toInt()));
        }
        if (blockSignals_) return;
        stream_->setEnabled(metric_->currentData().toInt() != int(Metric::KeyDelta) &&
                            metric_->currentData().toInt() != int(Metric::ValueDelta));
        Q_EMIT settingsChanged(settings());
    };
    connect(metric_, qOverload<int>(&QComboBox::currentIndexChanged), this, emitSettings);
    connect(head_, qOverload<int>(&QComboBox::currentIndexChanged), this, emitSettings);
    connect(stream_, qOverload<int>(&QComboBox::currentIndexChanged), this, emitSettings);
    connect(view_, qOverload<int>(&QComboBox::currentIndexChanged), this, emitSettings);
    connect(perLayerRange_, &QCheckBox::toggled, this, [this](bool on) {
        perLayer_[metric_->currentData().toInt()] = on;
        pending_ = true;
        applyData();
    });
    connect(save, &QToolButton::clicked, this, &HeatmapPanel::saveRequested);
    connect(multiples_, &QCustomPlot::mouseMove, this, &HeatmapPanel::onMultiplesMove);
    connect(multiples_, &QCustomPlot::mousePress, this, &HeatmapPanel::onMultiplesClick);
    connect(detail_, &QCustomPlot::mouseMove, this, &HeatmapPanel::onDetailMove);
    connect(detail_, &QCustomPlot::mousePress, this, &HeatmapPanel::onDetailClick);

    setModel(0, 0);
    clear();
}

void HeatmapPanel::setModel(int layers, int kvHeads, int gridRows, int gridCols) {
    if (gridRows > 0 && gridCols > 0 && (gridRows != gridRows_ || gridCols != gridCols_)) {
        gridRows_ = gridRows;
        gridCols_ = gridCols;
        clear();   // maps of the old grid say nothing about this one
    }
    blockSignals_ = true;
    const int previousHead = head_->currentData().isValid() ? head_->currentData().toInt() : -1;
    head_->clear();
    head_->addItem(tr("Mean"), -1);
    for (int h = 0; h < kvHeads; ++h) head_->addItem(tr("KV head %1").arg(h), h);
    const int idx = head_->findData(previousHead);
    head_->setCurrentIndex(idx >= 0 ? idx : 0);
    blockSignals_ = false;
    kvHeads_ = kvHeads;
    if (layers != layers_) {
        layers_ = layers;
        selected_ = std::clamp(selected_, 0, std::max(0, layers - 1));
        clear();
    }
}

HeatmapSettings HeatmapPanel::settings() const {
    HeatmapSettings s;
    s.metric = Metric(metric_->currentData().toInt());
    s.head = head_->currentData().isValid() ? head_->currentData().toInt() : -1;
    s.steeredRow = stream_->currentData().toBool();
    s.view = view_->count() > 0 ? view_->currentData().toInt() : -1;
    return s;
}

void HeatmapPanel::setViews(const QStringList& views) {
    const int wanted = view_->count() > 0 ? view_->currentData().toInt() : -1;
    {
        const QSignalBlocker block(view_);
        view_->clear();
        if (views.size() > 1) {
            // The canvas's grid first: it is what the canvas and the maps share cell for cell.
            view_->addItem(tr("%1 (as painted)").arg(views.last()), -1);
            for (int i = 0; i + 1 < views.size(); ++i) view_->addItem(views[i], i);
            view_->setCurrentIndex(std::max(0, view_->findData(wanted)));
        }
    }
    viewGroup_->setVisible(views.size() > 1);
    if (!blockSignals_ && wanted != settings().view) Q_EMIT settingsChanged(settings());
}

void HeatmapPanel::setSettings(const HeatmapSettings& s) {
    blockSignals_ = true;
    metric_->setCurrentIndex(metric_->findData(int(s.metric)));
    const int h = head_->findData(s.head);
    head_->setCurrentIndex(h >= 0 ? h : 0);
    stream_->setCurrentIndex(s.steeredRow ? 0 : 1);
    if (const int v = view_->findData(s.view); v >= 0) view_->setCurrentIndex(v);
    stream_->setEnabled(s.metric != Metric::KeyDelta && s.metric != Metric::ValueDelta);
    blockSignals_ = false;
    Q_EMIT settingsChanged(settings());
}

void HeatmapPanel::clear() {
    data_ = HeatmapData();
    pending_ = false;
    rebuildMultiples(0);   // a placeholder until data arrives
    detailMap_->setVisible(false);
    fitDetailAxes();
    scale_->setDataRange(QCPRange(0, 1));
    detailTitle_->setText(layers_ > 0 ? tr("Layer %1").arg(selected_) : tr("No model loaded"));
    marker_->setVisible(false);
    caption_->setFullText(QString());
    detail_->replot();
}

void HeatmapPanel::rebuildMultiples(int layers) {
    multiples_->plotLayout()->clear();   // deletes the old rects, maps and titles
    multiples_->clearPlottables();
    multiples_->clearItems();
    frames_.clear();
    rects_.clear();
    maps_.clear();
    titles_.clear();
    if (layers <= 0) {
        auto* empty = new QCPTextElement(multiples_, layers_ > 0 ? tr("Press Run to see every layer")
                                                                 : tr("Load a model and press Run"),
                                         font());
        empty->setTextColor(palette().color(QPalette::PlaceholderText));
        multiples_->plotLayout()->addElement(0, 0, empty);
        multiples_->replot();
        return;
    }
    const QFont small = titleFont();
    const int cols = bestColumns(layers, std::max(100, multiples_->width()), std::max(80, multiples_->height()), multiplesTitleHeight(),
                                 gridRows(), gridCols());
    columns_ = cols;
    for (int l = 0; l < layers; ++l) {
        auto* cell = new QCPLayoutGrid;
        multiples_->plotLayout()->addElement(l / cols, l % cols, cell);
        cell->setRowSpacing(0);
        auto* title = new QCPTextElement(multiples_, tr("layer %1").arg(l), small);
        title->setMargins(QMargins(0, 2, 0, 1));
        cell->addElement(0, 0, title);
        auto* rect = new QCPAxisRect(multiples_, true);
        rect->setAutoMargins(QCP::msNone);
        rect->setMargins(QMargins(3, 1, 3, 3));
        rect->axis(QCPAxis::atLeft)->setRangeReversed(true);
        hideAxes(rect);
        cell->addElement(1, 0, rect);
        auto* frame = new QCPItemRect(multiples_);
        frame->setClipToAxisRect(false);
        frame->topLeft->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        frame->bottomRight->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        frame->setBrush(Qt::NoBrush);
        frames_.push_back(frame);
        cell->setRowStretchFactor(0, 0.01);
        auto* map = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        map->setInterpolate(false);
        map->setTightBoundary(false);
        map->setGradient(sequentialGradient());
        rects_.push_back(rect);
        maps_.push_back(map);
        titles_.push_back(title);
    }
    multiples_->plotLayout()->addElement(multiples_->plotLayout()->rowCount(), 0, new QCPLayoutElement(multiples_));   // the spare height
    packRows();
    styleFrames();
    multiples_->replot();
}

// The rows of maps take the height their cells need, at the top; the spare height goes to the
// empty last row, so no blank band opens between a map and the title of the one below.
void HeatmapPanel::packRows() {
    QCPLayoutGrid* grid = multiples_->plotLayout();
    if (rects_.isEmpty() || columns_ <= 0) return;
    const int mapRows = grid->rowCount() - 1;
    const double w = multiples_->width(), h = multiples_->height();
    const double rowH = std::max(1.0, mapRowHeight(int(rects_.size()), columns_, w, h, multiplesTitleHeight(), gridRows(), gridCols()));
    for (int r = 0; r < mapRows; ++r) grid->setRowStretchFactor(r, rowH);
    grid->setRowStretchFactor(mapRows, std::max(0.01, h - mapRows * rowH));
}

// The small maps' titles ("layer 3"): a size smaller than the panel's text, and the height they take.
QFont HeatmapPanel::titleFont() const { return QFont(font().family(), std::max(7, int(font().pointSizeF() - 1.5))); }
int HeatmapPanel::multiplesTitleHeight() const { return QFontMetrics(titleFont()).height() + 6; }

void HeatmapPanel::styleFrames() {
    const int rows = std::max(1, gridRows()), cols = std::max(1, gridCols());
    for (int l = 0; l < frames_.size(); ++l) {
        const bool sel = l == selected_;
        frames_[l]->topLeft->setCoords(-0.5, -0.5);
        frames_[l]->bottomRight->setCoords(cols - 0.5, rows - 0.5);
        frames_[l]->setPen(QPen(sel ? QColor(0x00, 0xB4, 0xD8) : QColor(0xC8, 0xCD, 0xD3), sel ? 2.5 : 1.0));
        titles_[l]->setTextColor(sel ? QColor(0x00, 0x7F, 0x99) : palette().color(QPalette::WindowText));
        QFont f = titles_[l]->font();
        f.setBold(sel);
        titles_[l]->setFont(f);
    }
}

void HeatmapPanel::setData(const HeatmapData& data) {
    if (!data.valid()) return;
    data_ = data;
    pending_ = true;
    if (!redraw_->isActive()) redraw_->start();
}

void HeatmapPanel::applyData() {
    if (!pending_ || !data_.valid()) return;
    pending_ = false;
    if (data_.layers != rects_.size()) {
        layers_ = data_.layers;
        selected_ = std::clamp(selected_, 0, layers_ - 1);
        rebuildMultiples(layers_);
    }
    const bool diverging = data_.metric == Metric::ValueCosine;
    const QCPColorGradient gradient = diverging ? divergingGradient() : sequentialGradient();
    // One colour range for all layers (comparable), or one per layer.
    float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
    for (float v : data_.values) {
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    if (lo > hi) lo = hi = 0;
    auto rangeFor = [&](float a, float b) {
        if (diverging) {
            const double m = std::max({std::abs(double(a)), std::abs(double(b)), 1e-6});
            return QCPRange(-m, m);
        }
        if (b - a < 1e-9f) return QCPRange(a - 0.5, b + 0.5);
        return QCPRange(a, b);
    };
    const int n = data_.rows * data_.cols;
    for (int l = 0; l < data_.layers; ++l) {
        QCPColorMap* map = maps_[l];
        // QCustomPlot sizes a cell from the range over (size - 1): a single row (a text prompt's
        // token strip) is stored twice, a quarter cell above and below its centre.
        const int stored = std::max(2, data_.rows);
        map->data()->setSize(data_.cols, stored);
        map->data()->setRange(QCPRange(0, data_.cols - 1), data_.rows == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, data_.rows - 1));
        float llo = std::numeric_limits<float>::max(), lhi = std::numeric_limits<float>::lowest();
        for (int r = 0; r < stored; ++r)
            for (int c = 0; c < data_.cols; ++c) {
                const float v = data_.values[l * n + std::min(r, data_.rows - 1) * data_.cols + c];
                map->data()->setCell(c, r, v);
                llo = std::min(llo, v);
                lhi = std::max(lhi, v);
            }
        map->setGradient(gradient);
        map->setDataRange(perLayer_.value(int(data_.metric)) ? rangeFor(llo, lhi) : rangeFor(lo, hi));
    }
    refreshDetail();
    updateCaption();
    multiples_->replot(QCustomPlot::rpQueuedReplot);
    ++updates_;
    Q_EMIT updated();
}

// The large map's axes span the grid, with about eight labelled ticks whatever its size (every
// 2nd row of 16, every 4th of 24, every 8th of 64).

void HeatmapPanel::updateCaption() {
    if (!data_.valid()) {
        caption_->setFullText(QString());
        return;
    }
    if (data_.metric == Metric::Attention && data_.step >= 0) {
        QString tok = data_.token;
        tok.replace(QLatin1Char(' '), QChar(0x2423));
        caption_->setFullText(tr("Attention of token %1 “%2” to the image").arg(data_.step + 1).arg(tok));
    } else {
        caption_->setFullText(tr("The cache after the edit, before decoding"));
    }
    QString what = headText(data_.head);
    if (!data_.viewName.isEmpty()) what = tr("%1 view, ").arg(data_.viewName) + what;
    if (data_.metric != Metric::KeyDelta && data_.metric != Metric::ValueDelta)
        what += data_.steeredRow ? tr(", steered stream") : tr(", unsteered stream");
    caption_->setFullText(caption_->fullText() + QStringLiteral(" · ") + what);
}

void HeatmapPanel::setSelectedLayer(int layer) {
    if (layers_ <= 0) return;
    layer = std::clamp(layer, 0, layers_ - 1);
    if (layer == selected_ && !rects_.isEmpty()) {
        refreshDetail();
        return;
    }
    selected_ = layer;
    styleFrames();
    multiples_->replot(QCustomPlot::rpQueuedReplot);
    refreshDetail();
    Q_EMIT layerSelected(layer);
}

void HeatmapPanel::markCell(int row, int col) {
    markRow_ = row;
    markCol_ = col;
    refreshDetail();
    if (!data_.valid()) detail_->replot(QCustomPlot::rpQueuedReplot);
}

bool HeatmapPanel::savePng(const QString& path) {
    applyData();
    const QPixmap left = multiples_->toPixmap(multiples_->width(), multiples_->height(), 2.0);
    const QPixmap right = detail_->toPixmap(detail_->width(), detail_->height(), 2.0);
    QImage out(left.width() + right.width(), std::max(left.height(), right.height()), QImage::Format_RGB32);
    out.fill(palette().color(QPalette::Base));
    QPainter p(&out);
    p.drawPixmap(0, 0, left);
    p.drawPixmap(left.width(), 0, right);
    p.end();
    return out.save(path, "PNG");
}

} // namespace kvsteer::ui
