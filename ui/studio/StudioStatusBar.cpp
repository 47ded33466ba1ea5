#include "studio/StudioStatusBar.h"

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

QLabel* statusField(QWidget* parent, const QString& tip) {
    auto* l = new QLabel(parent);
    l->setToolTip(tip);
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
    hover_ = new QLabel(sb);
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

void StudioStatusBar::showHover(const QString& text) { hover_->setText(text); }

void StudioStatusBar::showModel(const ModelInfo& model, bool loading, const QString& loadingDirectory) {
    if (loading) {
        model_->setText(tr("Loading %1…").arg(QDir(loadingDirectory).dirName()));
    } else if (model.valid()) {
        model_->setText(tr("<b>%1</b> · %2 · %3 params · %4 layers · %5×%6 patches")
                            .arg(model.name.toHtmlEscaped(), model.family.toHtmlEscaped(), formatCount(model.parameters))
                            .arg(model.layers)
                            .arg(model.gridRows)
                            .arg(model.gridCols));
        model_->setToolTip(QDir::toNativeSeparators(model.directory));
    } else {
        model_->setText(tr("<span style='color:#b3261e'>No model</span> — File → Open Model Directory…"));
    }
    dtype_->setText(model.valid() ? QStringLiteral("%1 · %2").arg(model.dtype, model.device) : QString());
    threads_->setText(model.valid() ? tr("%n thread(s)", nullptr, model.threads) : QString());
    dtype_->setVisible(model.valid());
    threads_->setVisible(model.valid());
}

void StudioStatusBar::showProgress(const QString& stage, int value, int maximum) {
    progress_->setRange(0, maximum);
    progress_->setValue(value);
    progress_->setFormat(stage);
    progress_->show();
}

void StudioStatusBar::hideProgress() { progress_->hide(); }

void StudioStatusBar::updateMemory() {
    const qint64 rss = residentBytes();
    memory_->setText(rss > 0 ? tr("%1 RAM").arg(QLocale().formattedDataSize(rss, 1)) : QString());
}

} // namespace kvsteer::ui
