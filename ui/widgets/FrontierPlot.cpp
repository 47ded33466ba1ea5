#include "widgets/FrontierPlot.h"

#include <QMenu>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

namespace {

const QColor kPlanColour(0x1a, 0x73, 0xe8);
const QColor kFrontierColour(0xd9, 0x30, 0x25);
constexpr double kPickRadiusPx = 12;

double orZero(double v) { return std::isnan(v) ? 0.0 : std::max(0.0, v); }

QString number(const StudyValue& v) {
    if (!v.defined()) return QStringLiteral("–");
    return QStringLiteral("%1 [%2, %3]").arg(v.value, 0, 'f', 3).arg(v.low, 0, 'f', 3).arg(v.high, 0, 'f', 3);
}

} // namespace

QStringList distinguishingLabels(const QStringList& labels) {
    if (labels.size() < 2) return labels;
    QVector<QStringList> words;
    for (const QString& l : labels) words << l.split(QLatin1Char(' '));
    const qsizetype n = words.front().size();
    for (const QStringList& w : words)
        if (w.size() != n) return labels;
    QVector<bool> varies(n, false);
    for (qsizetype i = 0; i < n; ++i)
        for (const QStringList& w : words) varies[i] = varies[i] || w[i] != words.front()[i];
    QStringList out;
    for (const QStringList& w : words) {
        QStringList kept;
        for (qsizetype i = 0; i < n; ++i) {
            const bool name = (w[i] == QLatin1String("c_k") || w[i] == QLatin1String("c_v")) && i + 1 < n && varies[i + 1];
            if (varies[i] || name) kept << w[i];
        }
        out << (kept.isEmpty() ? w.join(QLatin1Char(' ')) : kept.join(QLatin1Char(' ')));
    }
    return out;
}

FrontierPlot::FrontierPlot(QWidget* parent) : QCustomPlot(parent) {
    setMinimumHeight(220);
    xAxis->setLabel(tr("preservation (right before, still right)"));
    yAxis->setLabel(tr("target success"));
    for (QCPAxis* a : {xAxis, yAxis}) {
        a->setRange(-0.04, 1.04);
        a->ticker()->setTickCount(5);
    }
    // The legend in a row above the axes: inside, it would hide the points of some corner.
    legend->setVisible(true);
    legend->setFont(font());
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    plotLayout()->insertRow(0);
    plotLayout()->addElement(0, 0, legend);
    plotLayout()->setRowStretchFactor(0, 0.001);
    legend->setMargins(QMargins(4, 2, 4, 0));

    points_ = addGraph();
    points_->setName(tr("plan (95 % intervals)"));
    points_->setLineStyle(QCPGraph::lsNone);
    points_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kPlanColour, kPlanColour, 7));
    auto bars = [&](QCPErrorBars::ErrorType type) {
        auto* b = new QCPErrorBars(xAxis, yAxis);
        b->removeFromLegend();
        b->setErrorType(type);
        b->setDataPlottable(points_);
        b->setPen(QPen(QColor(0x5f, 0x8f, 0xd8)));
        b->setWhiskerWidth(5);
        return b;
    };
    xBars_ = bars(QCPErrorBars::etKeyError);
    yBars_ = bars(QCPErrorBars::etValueError);
    frontier_ = addGraph();
    frontier_->setName(tr("frontier"));
    frontier_->setPen(QPen(kFrontierColour, 2));
    frontier_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kFrontierColour, kFrontierColour, 9));
    selected_ = addGraph();
    selected_->removeFromLegend();
    selected_->setLineStyle(QCPGraph::lsNone);
    selected_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 2), Qt::NoBrush, 17));

    setMouseTracking(true);
    connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        const QVector<int> plans = plansAt(e->position());
        if (plans.isEmpty() || e->button() != Qt::LeftButton) return;
        if (plans.size() == 1) {
            Q_EMIT planClicked(plans.front());
            return;
        }
        auto* menu = new QMenu(this);   // plans drawn at one spot: which one?
        menu->setAttribute(Qt::WA_DeleteOnClose);
        for (int plan : plans)
            connect(menu->addAction(tr("Plan %1: %2").arg(plan).arg(results_.plan(plan)->settings.label)), &QAction::triggered, this,
                    [this, plan] { Q_EMIT planClicked(plan); });
        menu->popup(e->globalPosition().toPoint());
    });
    connect(this, &QCustomPlot::mouseMove, this, &FrontierPlot::onMouseMove);
    connect(this, &QCustomPlot::afterLayout, this, &FrontierPlot::hideCrowdedLabels);
}

void FrontierPlot::clearResults() { setResults({}); }

void FrontierPlot::setResults(const StudyResults& results) {
    results_ = results;
    drawn_.clear();
    labels_.clear();
    texts_.clear();
    clearItems();
    // Points by preservation (the graph keeps its keys sorted; the error bars follow by index).
    QVector<const StudyPlanResult*> plans;
    for (const StudyPlanResult& p : results.plans)
        if (p.targetSuccess.defined() && p.preservation.defined()) plans << &p;
    std::stable_sort(plans.begin(), plans.end(), [](auto* a, auto* b) { return a->preservation.value < b->preservation.value; });
    QVector<double> x, y, xMinus, xPlus, yMinus, yPlus, fx, fy;
    QStringList names;
    for (const StudyPlanResult* p : plans) {
        drawn_ << p->settings.index;
        names << p->settings.label;
        x << p->preservation.value;
        y << p->targetSuccess.value;
        xMinus << orZero(p->preservation.value - p->preservation.low);
        xPlus << orZero(p->preservation.high - p->preservation.value);
        yMinus << orZero(p->targetSuccess.value - p->targetSuccess.low);
        yPlus << orZero(p->targetSuccess.high - p->targetSuccess.value);
        if (p->onFrontier) {
            fx << p->preservation.value;
            fy << p->targetSuccess.value;
        }
    }
    points_->setData(x, y, true);
    xBars_->setData(xMinus, xPlus);
    yBars_->setData(yMinus, yPlus);
    frontier_->setData(fx, fy, true);
    const QStringList shown = distinguishingLabels(names);
    QVector<bool> labelled(drawn_.size(), false);
    for (int i = 0; i < drawn_.size(); ++i) {
        labels_[drawn_[i]] = shown[i];
        if (labelled[i]) continue;
        // One label for the plans drawn at this spot (a hundredth apart or less on both axes).
        int others = 0;
        for (int j = i + 1; j < drawn_.size(); ++j)
            if (!labelled[j] && std::abs(x[j] - x[i]) <= 0.01 && std::abs(y[j] - y[i]) <= 0.01) {
                labelled[j] = true;
                ++others;
            }
        auto* text = new QCPItemText(this);
        text->position->setCoords(x[i], y[i]);
        const bool right = x[i] > 0.7;   // near the right edge: the label goes to the point's left
        text->setPositionAlignment((right ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignBottom);
        text->setPadding(right ? QMargins(0, 0, 6, 3) : QMargins(6, 0, 0, 3));
        text->setText(others ? tr("%1 +%2").arg(shown[i]).arg(others) : shown[i]);
        text->setClipToAxisRect(false);
        if (results.plan(drawn_[i])->onFrontier) texts_.prepend(text);
        else texts_.append(text);
    }
    selected_->data()->clear();
    replot();
}

void FrontierPlot::hideCrowdedLabels() {
    QVector<QRectF> kept;
    for (QCPItemText* t : texts_) {
        const QRectF r = QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition()).normalized();
        const bool crowded = std::any_of(kept.begin(), kept.end(), [&](const QRectF& k) { return k.intersects(r); });
        t->setVisible(!crowded);
        if (!crowded) kept << r;
    }
}

void FrontierPlot::setSelectedPlan(int plan) {
    selected_->data()->clear();
    if (const StudyPlanResult* p = results_.plan(plan); p && drawn_.contains(plan))
        selected_->addData(p->preservation.value, p->targetSuccess.value);
    replot();
}

int FrontierPlot::pointCount() const { return int(drawn_.size()); }

QPointF FrontierPlot::pointPixel(int plan) const {
    const StudyPlanResult* p = results_.plan(plan);
    if (!p || !drawn_.contains(plan)) return {-1, -1};
    return {xAxis->coordToPixel(p->preservation.value), yAxis->coordToPixel(p->targetSuccess.value)};
}

QVector<int> FrontierPlot::plansAt(const QPointF& pixel) const {
    QVector<QPair<double, int>> near;
    for (int plan : drawn_)
        if (const double d = QLineF(pixel, pointPixel(plan)).length(); d <= kPickRadiusPx) near.push_back({d, plan});
    std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    QVector<int> out;
    for (const auto& [d, plan] : near) out << plan;
    return out;
}

int FrontierPlot::planAt(const QPointF& pixel) const {
    const QVector<int> plans = plansAt(pixel);
    return plans.isEmpty() ? -1 : plans.front();
}

QString FrontierPlot::pointLabel(int plan) const { return labels_.value(plan); }

void FrontierPlot::onMouseMove(QMouseEvent* event) {
    const QVector<int> plans = plansAt(event->position());
    setCursor(plans.isEmpty() ? Qt::ArrowCursor : Qt::PointingHandCursor);
    if (plans.isEmpty()) {
        QToolTip::hideText();
        return;
    }
    QStringList lines;
    for (int plan : plans) {
        const StudyPlanResult* p = results_.plan(plan);
        lines << tr("<b>plan %1</b>: %2<br>target success %3<br>preservation %4%5")
                     .arg(plan)
                     .arg(p->settings.label.toHtmlEscaped())
                     .arg(number(p->targetSuccess))
                     .arg(number(p->preservation))
                     .arg(p->onFrontier ? tr("<br>on the frontier") : QString());
    }
    QToolTip::showText(event->globalPosition().toPoint(),
                       lines.join(QStringLiteral("<br>")) + tr("<br><i>click to apply it and run the current image</i>"), this);
}

} // namespace kvsteer::ui
