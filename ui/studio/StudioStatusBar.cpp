#include "studio/StudioStatusBar.h"

#include "widgets/ElidedLabel.h"

#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QStatusBar>
#include <QTimer>

namespace kvsteer::ui {

namespace {

// Resident memory of this process, from /proc (Linux); -1 if unknown.
qint64 residentBytes() {
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    const QList<QByteArray> lines = f.readAll().split('\n');
    for (const QByteArray& line : lines)
        if (line.startsWith("VmRSS:")) {
            const QList<QByteArray> parts = line.simplified().split(' ');
            if (parts.size() >= 2) return parts[1].toLongLong() * 1024;
        }
    return -1;
}

ElidedLabel* statusField(QWidget* parent, const QString& tip) {
    auto* l = new ElidedLabel(parent);
    l->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);   // its whole text where there is room
    l->setDescription(tip);
    l->setContentsMargins(6, 0, 6, 0);
    return l;
}

} // namespace

QString formatCount(qint64 n) {
    if (n >= 1000000000) return QStringLiteral("%1B").arg(n / 1e9, 0, 'f', 2);
    if (n >= 1000000) return QStringLiteral("%1M").arg(n / 1e6, 0, 'f', 1);
    if (n >= 1000) return QStringLiteral("%1K").arg(n / 1e3, 0, 'f', 1);
    return QString::number(n);
}

StudioStatusBar::StudioStatusBar(QStatusBar* sb) : QObject(sb), bar_(sb) {
    hover_ = new ElidedLabel(sb);
    hover_->setContentsMargins(4, 0, 4, 0);
    sb->addWidget(hover_, 1);
    progress_ = new QProgressBar(sb);
    progress_->setMaximumWidth(260);
    progress_->setMinimumWidth(200);
    progress_->setTextVisible(true);
    progress_->hide();
    sb->addPermanentWidget(progress_);
    model_ = statusField(sb, tr("The loaded model"));
    dtype_ = statusField(sb, tr("Weight dtype and device"));
    threads_ = statusField(sb, tr("Threads doing the matrix multiplications"));
    memory_ = statusField(sb, tr("Memory used by the studio (resident set)"));
    for (QLabel* l : {model_, dtype_, threads_, memory_}) sb->addPermanentWidget(l);
    updateMemory();
    memoryTimer_ = new QTimer(this);
    memoryTimer_->setInterval(2000);
    connect(memoryTimer_, &QTimer::timeout, this, &StudioStatusBar::updateMemory);
    memoryTimer_->start();
}

void StudioStatusBar::message(const QString& text, int timeoutMs) { bar_->showMessage(text, timeoutMs); }

void StudioStatusBar::showHover(const QString& text) { hover_->setFullText(text); }

void StudioStatusBar::showModel(const ModelInfo& model, bool loading, const QString& loadingDirectory) {
    model_->setStyleSheet(!loading && !model.valid() ? QStringLiteral("color: #b3261e;") : QString());
    if (loading) {
        modelText_ = tr("Loading %1…").arg(QDir(loadingDirectory).dirName());
    } else if (model.valid()) {
        modelText_ = tr("%1 · %2 · %3 params · %4 layers").arg(model.name, model.family, formatCount(model.parameters)).arg(model.layers);
        if (gridRows_ <= 0) showGrid(model.gridRows, model.gridCols);   // until an image says otherwise
    } else {
        modelText_ = tr("No model — File → Open Model Directory…");
    }
    model_->setFullText(modelText_ + (model.valid() && !loading ? gridText_ : QString()));
    model_->setDescription(model.valid() ? QDir::toNativeSeparators(model.directory) : tr("The loaded model"));
    dtype_->setFullText(model.valid() ? QStringLiteral("%1 · %2").arg(model.dtype, model.device) : QString());
    threads_->setFullText(model.valid() ? tr("%n thread(s)", nullptr, model.threads) : QString());
    dtype_->setVisible(model.valid());
    threads_->setVisible(model.valid());
    valid_ = model.valid() && !loading;
}

// The grid the canvas shows: the image's own where the family lays each image out on its own grid
// (a 500×300 image on Qwen2-VL: 10×18), a text prompt's token strip, else the family's.
void StudioStatusBar::showGrid(int rows, int cols) {
    gridRows_ = rows;
    gridCols_ = cols;
    gridText_ = rows <= 0 ? QString() : rows == 1 ? tr(" · %n token(s)", nullptr, cols) : tr(" · %1×%2 patches").arg(rows).arg(cols);
    if (rows > 1 && views_.size() > 1) gridText_ = QStringLiteral(" · ") + views_.join(QStringLiteral(" + "));
    if (valid_) model_->setFullText(modelText_ + gridText_);
}

void StudioStatusBar::showViews(const QStringList& views) {
    views_ = views;
    showGrid(gridRows_, gridCols_);
}

QString StudioStatusBar::modelText() const { return model_->fullText(); }

void StudioStatusBar::showProgress(const QString& stage, int value, int maximum) {
    progress_->setRange(0, maximum);
    progress_->setValue(value);
    progress_->setFormat(stage);
    progress_->show();
}

void StudioStatusBar::hideProgress() { progress_->hide(); }

void StudioStatusBar::updateMemory() {
    const qint64 rss = residentBytes();
    memory_->setFullText(rss > 0 ? tr("%1 RAM").arg(QLocale().formattedDataSize(rss, 1)) : QString());
}

} // namespace kvsteer::ui
