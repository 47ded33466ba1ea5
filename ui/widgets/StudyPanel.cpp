#include "widgets/StudyPanel.h"

#include "widgets/FrontierPlot.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelection>
#include <QLabel>
#include <QLineEdit>
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
    form_ = new JobForm({tr("Suite"), tr("suite.json: the datasets and their roles"),
                         tr("Where plans.jsonl, items.jsonl, the summary and the plots go. The same folder continues a stopped study."),
                         QStringLiteral(".study"), tr("Study"),
                         tr("Judge every plan of the grid on every dataset of the suite, in one pass. Empty axes take the vector file's "
                            "suggestion; with every axis empty the suite's own plans are the grid."),
                         32},
                        this);
    v->addWidget(form_);
    vectors_ = axisEdit(this, tr("vector files, comma-separated"),
                        tr("One axis of the grid: vector files (relative to the suite's folder). The Steering panel's file is proposed."));
    form_->addRow(tr("Vectors"), vectors_);
    ck_ = axisEdit(this, QString(), tr("c_k values, comma-separated (0,1): one plan each. Empty: the vector file's suggestion, else 1"));
    cv_ = axisEdit(this, QString(), tr("c_v values, comma-separated (1,2,4,8,16): one plan each. Empty: the vector file's suggestion, else 1"));
    sayWhatEmptyMeans();
    auto* strengths = new QHBoxLayout;
    strengths->addWidget(ck_, 1);
    strengths->addWidget(new QLabel(tr("c_v"), this));
    strengths->addWidget(cv_, 2);
    form_->addRow(tr("c_k"), strengths);
    layers_ = axisEdit(this, tr("all,early,…"), tr("Layer choices, comma-separated: all, early, middle, late (the model's thirds) or A-B"));
    operators_ = axisEdit(this, tr("the file's"), tr("Operators, comma-separated: add, norm, prerope, scale, spotlight, ablate"));
    auto* layersRow = new QHBoxLayout;
    layersRow->addWidget(layers_, 1);
    layersRow->addWidget(new QLabel(tr("Operators"), this));
    layersRow->addWidget(operators_, 1);
    form_->addRow(tr("Layers"), layersRow);

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

    for (QLineEdit* e : {form_->inputEdit(), form_->outDirEdit(), vectors_, ck_, cv_, layers_, operators_})
        connect(e, &QLineEdit::textEdited, this, &StudyPanel::setupEdited);
    connect(vectors_, &QLineEdit::textChanged, this, &StudyPanel::sayWhatEmptyMeans);
    connect(form_->tokensBox(), &QSpinBox::valueChanged, this, &StudyPanel::setupEdited);
    connect(form_, &JobForm::browseRequested, this, &StudyPanel::browseRequested);
    connect(form_, &JobForm::runRequested, this, &StudyPanel::studyRequested);
    connect(form_, &JobForm::stopRequested, this, &StudyPanel::stopRequested);
    connect(plot_, &FrontierPlot::planClicked, this, &StudyPanel::choosePlan);
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && table_->item(row, PlanColumn)) plot_->setSelectedPlan(table_->item(row, PlanColumn)->data(Qt::UserRole).toInt());
    });
    connect(table_, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { choosePlan(table_->item(row, PlanColumn)->data(Qt::UserRole).toInt()); });
}

StudySetup StudyPanel::setup() const {
    StudySetup s;
    s.suite = form_->input();
    s.outDir = form_->outDir();
    s.vectors = vectors_->text().trimmed();
    s.operators = operators_->text().trimmed();
    s.ck = ck_->text().trimmed();
    s.cv = cv_->text().trimmed();
    s.layers = layers_->text().trimmed();
    s.maxNewTokens = form_->maxNewTokens();
    return s;
}

void StudyPanel::setSetup(const StudySetup& s) {
    form_->inputEdit()->setText(s.suite);
    form_->setOutDir(s.outDir);
    vectors_->setText(s.vectors);
    operators_->setText(s.operators);
    ck_->setText(s.ck);
    cv_->setText(s.cv);
    layers_->setText(s.layers);
    form_->setMaxNewTokens(s.maxNewTokens);
    proposedVectors_.clear();
}

void StudyPanel::setFileSuggestions(const QString& path, const QVector<double>& ck, const QVector<double>& cv) {
    suggestionsOf_ = path;
    suggestedCk_ = ck;
    suggestedCv_ = cv;
    sayWhatEmptyMeans();
}

// An empty c_k or c_v is one plan at the vector file's suggestion (or 1 without one): the
// placeholder says so, with the numbers while the Vectors field names the file they came from.
void StudyPanel::sayWhatEmptyMeans() {
    const bool known = !suggestionsOf_.isEmpty() && vectors_->text().trimmed() == suggestionsOf_;
    const auto meaning = [&](const QVector<double>& suggested) {
        if (!known) return tr("empty: the vector file's");
        if (suggested.isEmpty()) return tr("empty: 1 (the file suggests none)");
        QStringList values;
        for (double v : suggested) values << QString::number(v, 'g', 4);
        return suggested.size() == 1 ? tr("empty: the vector file's %1").arg(values.front())
                                     : tr("empty: the vector file's %1 (by layer)").arg(values.join(QLatin1Char(',')));
    };
    ck_->setPlaceholderText(meaning(suggestedCk_));
    cv_->setPlaceholderText(meaning(suggestedCv_));
}

void StudyPanel::proposeVectors(const QString& path) {
    const QString typed = vectors_->text().trimmed();
    if (path.isEmpty() || !(typed.isEmpty() || typed == proposedVectors_)) return;
    vectors_->setText(path);
    proposedVectors_ = path;
}

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
