#include "widgets/StudyPanel.h"

#include "widgets/FrontierPlot.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelection>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace kvsteer::ui {

namespace {

// The numbers early: a narrow dock shows them without scrolling sideways.
enum Column { PlanColumn = 0, DatasetColumn, CategoryColumn, ValueColumn, IntervalColumn, HeadlineColumn, RoleColumn, ItemsColumn, kColumns };

QString number(double v) { return v == v ? QString::number(v, 'f', 3) : QStringLiteral("–"); }

QLineEdit* axisEdit(QWidget* parent, const QString& placeholder, const QString& tip) {
    auto* e = new QLineEdit(parent);
    e->setPlaceholderText(placeholder);
    e->setToolTip(tip);
    e->setMinimumWidth(40);
    return e;
}

} // namespace

StudyPanel::StudyPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 4, 6, 4);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    auto* pick = new QHBoxLayout;
    suite_ = new QLineEdit(this);
    suite_->setPlaceholderText(tr("suite.json: the datasets and their roles"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    pick->addWidget(suite_, 1);
    pick->addWidget(browse);
    form->addRow(tr("Suite"), pick);
    outDir_ = new QLineEdit(this);
    outDir_->setToolTip(tr("Where plans.jsonl, items.jsonl, the summary and the plots go. The same folder continues a stopped study."));
    form->addRow(tr("Results"), outDir_);
    vectors_ = axisEdit(this, tr("vector files, comma-separated"),
                        tr("One axis of the grid: vector files (relative to the suite's folder). The Steering panel's file is proposed."));
    form->addRow(tr("Vectors"), vectors_);
    ck_ = axisEdit(this, tr("the file's"), tr("c_k values, comma-separated (0,1): one plan each"));
    cv_ = axisEdit(this, tr("1,2,4,8,16"), tr("c_v values, comma-separated: one plan each"));
    auto* strengths = new QHBoxLayout;
    strengths->addWidget(ck_, 1);
    strengths->addWidget(new QLabel(tr("c_v"), this));
    strengths->addWidget(cv_, 2);
    form->addRow(tr("c_k"), strengths);
    layers_ = axisEdit(this, tr("all,early,…"), tr("Layer choices, comma-separated: all, early, middle, late (the model's thirds) or A-B"));
    operators_ = axisEdit(this, tr("the file's"), tr("Operators, comma-separated: add, norm, prerope, scale, spotlight, ablate"));
    auto* layersRow = new QHBoxLayout;
    layersRow->addWidget(layers_, 1);
    layersRow->addWidget(new QLabel(tr("Operators"), this));
    layersRow->addWidget(operators_, 1);
    form->addRow(tr("Layers"), layersRow);
    tokens_ = new QSpinBox(this);
    tokens_->setRange(1, 256);
    tokens_->setValue(32);
    form->addRow(tr("Max tokens"), tokens_);
    v->addLayout(form);

    auto* buttons = new QHBoxLayout;
    study_ = new QPushButton(tr("Study"), this);
    study_->setToolTip(tr("Judge every plan of the grid on every dataset of the suite, in one pass. Empty axes take the vector file's "
                          "suggestion; with every axis empty the suite's own plans are the grid."));
    stop_ = new QPushButton(tr("Stop"), this);
    stop_->setEnabled(false);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    buttons->addWidget(study_);
    buttons->addWidget(stop_);
    buttons->addWidget(progress_, 1);
    v->addLayout(buttons);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    v->addWidget(status_);

    plot_ = new FrontierPlot(this);
    v->addWidget(plot_, 3);
    table_ = new QTableWidget(0, kColumns, this);
    table_->setHorizontalHeaderLabels({tr("Plan"), tr("Dataset"), tr("Category"), tr("Value"), tr("95 % interval"), tr("Headline"), tr("Role"),
                                       tr("Items")});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setMaximumSectionSize(110);   // long names elide (their tooltip is whole)
    table_->verticalHeader()->setVisible(false);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setMinimumHeight(150);
    table_->setToolTip(tr("Double-click a row to apply its plan and run the current image"));
    v->addWidget(table_, 2);

    for (QLineEdit* e : {suite_, outDir_, vectors_, ck_, cv_, layers_, operators_}) connect(e, &QLineEdit::textEdited, this, &StudyPanel::setupEdited);
    connect(tokens_, &QSpinBox::valueChanged, this, &StudyPanel::setupEdited);
    connect(suite_, &QLineEdit::editingFinished, this, [this] { setSuite(suite_->text().trimmed()); });
    connect(browse, &QPushButton::clicked, this, &StudyPanel::browseRequested);
    connect(study_, &QPushButton::clicked, this, &StudyPanel::studyRequested);
    connect(stop_, &QPushButton::clicked, this, &StudyPanel::stopRequested);
    connect(plot_, &FrontierPlot::planClicked, this, &StudyPanel::choosePlan);
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && table_->item(row, PlanColumn)) plot_->setSelectedPlan(table_->item(row, PlanColumn)->data(Qt::UserRole).toInt());
    });
    connect(table_, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { choosePlan(table_->item(row, PlanColumn)->data(Qt::UserRole).toInt()); });
}

StudySetup StudyPanel::setup() const {
    StudySetup s;
    s.suite = suite_->text().trimmed();
    s.outDir = outDir_->text().trimmed();
    s.vectors = vectors_->text().trimmed();
    s.operators = operators_->text().trimmed();
    s.ck = ck_->text().trimmed();
    s.cv = cv_->text().trimmed();
    s.layers = layers_->text().trimmed();
    s.maxNewTokens = tokens_->value();
    return s;
}

void StudyPanel::setSetup(const StudySetup& s) {
    suite_->setText(s.suite);
    outDir_->setText(s.outDir);
    vectors_->setText(s.vectors);
    operators_->setText(s.operators);
    ck_->setText(s.ck);
    cv_->setText(s.cv);
    layers_->setText(s.layers);
    tokens_->setValue(s.maxNewTokens);
    proposedVectors_.clear();
}

void StudyPanel::setSuite(const QString& path) {
    suite_->setText(path);
    // A folder beside the suite, unless the person chose another (a proposed one ends in .study).
    const QFileInfo f(path);
    const QString out = outDir_->text().trimmed();
    if (!path.isEmpty() && (out.isEmpty() || out.endsWith(QLatin1String(".study"))))
        outDir_->setText(f.absolutePath() + QLatin1Char('/') + f.completeBaseName() + QStringLiteral(".study"));
}

void StudyPanel::proposeVectors(const QString& path) {
    const QString typed = vectors_->text().trimmed();
    if (path.isEmpty() || !(typed.isEmpty() || typed == proposedVectors_)) return;
    vectors_->setText(path);
    proposedVectors_ = path;
}

QString StudyPanel::status() const { return status_->text(); }

void StudyPanel::setRunning(bool running) {
    study_->setEnabled(!running);
    stop_->setEnabled(running);
}

void StudyPanel::setProgress(int done, int total) {
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(done);
}

void StudyPanel::setStatus(const QString& text) { status_->setText(text); }

void StudyPanel::clearResults() { showResults({}); }

void StudyPanel::showResults(const StudyResults& results) {
    results_ = results;
    plot_->setResults(results);
    table_->setRowCount(0);
    const QColor shade = palette().color(QPalette::AlternateBase);
    for (const StudyCategoryRow& r : results.rows) {
        const StudyPlanResult* plan = results.plan(r.plan);
        const int row = table_->rowCount();
        table_->insertRow(row);
        const QString planText = QStringLiteral("%1 %2").arg(r.plan).arg(plot_->pointLabel(r.plan));
        const QStringList cells = {planText.trimmed(), r.dataset, r.category, number(r.value.value),
                                   QStringLiteral("[%1, %2]").arg(number(r.value.low), number(r.value.high)), r.headline, r.role, QString::number(r.items)};
        for (int c = 0; c < kColumns; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(cells[c]);
            if (c == ItemsColumn || c == ValueColumn) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (r.plan % 2) item->setBackground(shade);
            if (c == PlanColumn) {
                item->setData(Qt::UserRole, r.plan);
                item->setToolTip(plan ? plan->settings.label : QString());
                if (plan && plan->onFrontier) {
                    QFont bold = item->font();
                    bold.setBold(true);
                    item->setFont(bold);
                }
            }
            table_->setItem(row, c, item);
        }
    }
}

void StudyPanel::choosePlan(int plan) {
    const StudyPlanResult* p = results_.plan(plan);
    if (!p) return;
    selectPlanRows(plan);
    plot_->setSelectedPlan(plan);
    Q_EMIT planChosen(p->settings);
}

void StudyPanel::selectPlanRows(int plan) {
    QItemSelection rows;
    int first = -1;
    for (int row = 0; row < table_->rowCount(); ++row)
        if (table_->item(row, PlanColumn)->data(Qt::UserRole).toInt() == plan) {
            rows.select(table_->model()->index(row, 0), table_->model()->index(row, kColumns - 1));
            if (first < 0) first = row;
        }
    table_->selectionModel()->select(rows, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    if (first >= 0) table_->scrollToItem(table_->item(first, PlanColumn), QAbstractItemView::PositionAtTop);
}

} // namespace kvsteer::ui
