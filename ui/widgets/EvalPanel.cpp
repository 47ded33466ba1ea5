#include "widgets/EvalPanel.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHeaderView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace kvsteer::ui {

namespace {

enum Filter { AllChanged = 0, RightToWrong, WrongToRight };

bool passes(const EvalItemRow& r, int filter) {
    if (filter == RightToWrong) return r.unsteeredCorrect && !r.steeredCorrect;
    if (filter == WrongToRight) return !r.unsteeredCorrect && r.steeredCorrect;
    return true;
}

} // namespace

EvalPanel::EvalPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 4, 6, 4);
    form_ = new JobForm({tr("Dataset"), tr("a JSONL file: POPE's format or id/image/question/answer"),
                         tr("Where items.jsonl and the summary go. The same folder continues a stopped run."), QStringLiteral(".eval"),
                         tr("Evaluate"), tr("Answer every item unsteered and steered with the Steering panel's plan"), 8},
                        this);
    v->addWidget(form_);
    regions_ = new QComboBox(this);
    regions_->addItem(tr("Each item's box or mask"));
    regions_->addItem(tr("The painted map, for every item"));
    regions_->setToolTip(tr("Which cells to steer. An item without a box or mask gets the vector file's mask, else every cell."));
    form_->addRow(tr("Cells"), regions_);
    metric_ = new QComboBox(this);
    for (const char* m : {"pope", "exact", "contains"}) metric_->addItem(QString::fromLatin1(m));
    metric_->setToolTip(tr("pope: yes/no read as POPE reads it; exact / contains: against the item's answers"));
    form_->addRow(tr("Metric"), metric_);

    plot_ = new QCustomPlot(this);
    plot_->setMinimumHeight(240);
    plot_->yAxis->setRange(0, 1.45);   // room above the bars for the legend
    plot_->legend->setVisible(true);
    plot_->legend->setFont(font());
    plot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignHCenter);
    v->addWidget(plot_);
    connect(plot_, &QCustomPlot::afterLayout, this, &EvalPanel::fitMetricLabels);

    filter_ = new QComboBox(this);
    filter_->addItem(tr("Correctness changed"));
    filter_->addItem(tr("Right → wrong"));
    filter_->addItem(tr("Wrong → right"));
    v->addWidget(filter_);
    table_ = new QTableWidget(0, 4, this);
    table_->setHorizontalHeaderLabels({tr("Item"), tr("Question"), tr("Unsteered"), tr("Steered")});
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setToolTip(tr("Double-click an item to open its image, question and cells on the canvas"));
    table_->setMinimumHeight(150);   // a few rows, however short the dock: the tab scrolls instead
    v->addWidget(table_, 1);

    connect(form_, &JobForm::browseRequested, this, &EvalPanel::browseRequested);
    connect(form_, &JobForm::runRequested, this, &EvalPanel::evaluateRequested);
    connect(form_, &JobForm::stopRequested, this, &EvalPanel::stopRequested);
    connect(filter_, &QComboBox::currentIndexChanged, this, &EvalPanel::refreshTable);
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        const int index = table_->item(row, 0)->data(Qt::UserRole).toInt();
        if (index >= 0 && index < changed_.size()) Q_EMIT itemActivated(changed_[index]);
    });
}

bool EvalPanel::itemRegions() const { return regions_->currentIndex() == 0; }
QString EvalPanel::metric() const { return metric_->currentText(); }

void EvalPanel::clearResults() {
    changed_.clear();
    plot_->clearPlottables();
    plot_->replot();
    refreshTable();
}

void EvalPanel::addItem(const EvalItemRow& row) {
    if (row.unsteeredCorrect == row.steeredCorrect) return;
    changed_.push_back(row);
    refreshTable();
}

void EvalPanel::refreshTable() {
    table_->setRowCount(0);
    for (int i = 0; i < changed_.size(); ++i) {
        const EvalItemRow& r = changed_[i];
        if (!passes(r, filter_->currentIndex())) continue;
        const int row = table_->rowCount();
        table_->insertRow(row);
        auto* id = new QTableWidgetItem(r.id);
        id->setData(Qt::UserRole, i);
        table_->setItem(row, 0, id);
        table_->setItem(row, 1, new QTableWidgetItem(r.question));
        table_->setItem(row, 2, new QTableWidgetItem((r.unsteeredCorrect ? QStringLiteral("✓ ") : QStringLiteral("✗ ")) + r.unsteeredText));
        table_->setItem(row, 3, new QTableWidgetItem((r.steeredCorrect ? QStringLiteral("✓ ") : QStringLiteral("✗ ")) + r.steeredText));
    }
}

void EvalPanel::showSummary(const EvalFinished& f) {
    plot_->clearPlottables();
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    QVector<double> at, atSteered, minus, plus;
    for (int i = 0; i < f.metricNames.size(); ++i) {
        ticker->addTick(i + 1, f.metricNames[i]);
        at << i + 1 - 0.2;
        atSteered << i + 1 + 0.2;
        // The steered bar's whisker: the unsteered value plus the difference's 95 % interval.
        minus << f.difference[i] - f.low[i];
        plus << f.high[i] - f.difference[i];
    }
    auto bars = [&](const QString& name, const QColor& colour, const QVector<double>& keys, const QVector<double>& values) {
        auto* b = new QCPBars(plot_->xAxis, plot_->yAxis);
        b->setName(name);
        b->setWidth(0.38);
        b->setBrush(colour);
        b->setPen(Qt::NoPen);
        b->setData(keys, values);
        return b;
    };
    bars(tr("unsteered"), QColor(0x9a, 0xa0, 0xa6), at, f.unsteered);
    QCPBars* steered = bars(tr("steered (95 % interval)"), QColor(0x1a, 0x73, 0xe8), atSteered, f.steered);
    auto* whiskers = new QCPErrorBars(plot_->xAxis, plot_->yAxis);
    whiskers->removeFromLegend();
    whiskers->setDataPlottable(steered);
    whiskers->setData(minus, plus);
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setRange(0.4, f.metricNames.size() + 0.6);
    metricNames_ = f.metricNames;
    plot_->replot();
}

// A dock beside the canvas is narrow: "accuracy" ran into "precision". The names stay level while
// the widest fits its bar pair's width, and are slanted otherwise (a replot once they change).
void EvalPanel::fitMetricLabels() {
    if (metricNames_.isEmpty()) return;
    const QFontMetrics fm(plot_->xAxis->tickLabelFont());
    int widest = 0;
    for (const QString& name : metricNames_) widest = std::max(widest, fm.horizontalAdvance(name));
    const double slot = plot_->axisRect()->width() / (metricNames_.size() + 0.2);
    const double rotation = widest + fm.averageCharWidth() < slot ? 0 : -35;
    if (plot_->xAxis->tickLabelRotation() == rotation) return;
    plot_->xAxis->setTickLabelRotation(rotation);
    QTimer::singleShot(0, plot_, [this] { plot_->replot(); });
}

} // namespace kvsteer::ui
