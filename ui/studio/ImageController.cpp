#include "studio/ImageController.h"

#include "studio/ErrorReporter.h"
#include "studio/StudioSettings.h"
#include "worker/Worker.h"

#include <QApplication>
#include <QBuffer>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMimeData>

namespace kvsteer::ui {

QString imageFileFilter() { return QObject::tr("Images (*.png *.jpg *.jpeg *.bmp *.gif);;All files (*)"); }

ImageController::ImageController(Worker* worker, ErrorReporter* errors, StudioSettings* settings, QWidget* window)
    : QObject(window), errors_(errors), settings_(settings), window_(window) {
    connect(this, &ImageController::openRequested, worker, &Worker::setImage, Qt::QueuedConnection);
    connect(worker, &Worker::imageReady, this, &ImageController::onReady);
    connect(worker, &Worker::imageFailed, this, &ImageController::onFailed);
}

quint64 ImageController::openFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        errors_->show(tr("Cannot open image"), tr("%1 cannot be read: %2").arg(QDir::toNativeSeparators(path), f.errorString()));
        return 0;
    }
    const QByteArray bytes = f.readAll();
    const quint64 id = openData(bytes, QFileInfo(path).fileName());
    pendingPath_ = QFileInfo(path).absoluteFilePath();   // remembered among the recent images once shown
    return id;
}

quint64 ImageController::openData(const QByteArray& bytes, const QString& name) {
    Q_EMIT aboutToOpen();
    const quint64 id = ++lastId_;
    pendingBytes_ = bytes;
    pendingName_ = name;
    pendingPath_.clear();
    Q_EMIT openRequested(id, bytes, name);
    return id;
}

quint64 ImageController::openImage(const QImage& image, const QString& name) {
    QByteArray png;
    QBuffer buf(&png);
    buf.open(QIODevice::WriteOnly);
    image.convertToFormat(QImage::Format_RGB888).save(&buf, "PNG");
    return openData(png, name);
}

void ImageController::openDialog() {
    const QString dir = settings_->imageDirectory(QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR));
    const QString path = QFileDialog::getOpenFileName(window_, tr("Open Image"), dir, imageFileFilter());
    if (path.isEmpty()) return;
    settings_->setImageDirectory(QFileInfo(path).absolutePath());
    openFile(path);
}

void ImageController::paste() {
    const QMimeData* m = QApplication::clipboard()->mimeData();
    if (m && m->hasImage()) {
        openImage(qvariant_cast<QImage>(m->imageData()), tr("pasted image"));
        return;
    }
    if (m && m->hasUrls() && !m->urls().isEmpty() && m->urls().front().isLocalFile()) {
        openFile(m->urls().front().toLocalFile());
        return;
    }
    if (m && m->hasText() && QFileInfo(m->text().trimmed()).isFile()) {
        openFile(m->text().trimmed());
        return;
    }
    errors_->show(tr("Paste image"), tr("The clipboard holds no image (nor the path of an image file)."));
}

void ImageController::onReady(const ImageInfo& info) {
    if (info.id != lastId_) return;   // a newer image is on its way
    // The same image again (a model load preprocesses it anew): the answers shown stay.
    const bool sameImage = ready_ && info.name == name_ && pendingBytes_.isEmpty();
    if (!pendingBytes_.isEmpty()) {
        bytes_ = pendingBytes_;
        name_ = pendingName_;
        path_ = pendingPath_;
        pendingBytes_.clear();
        if (!pendingPath_.isEmpty()) settings_->addRecent(StudioSettings::Recent::Images, pendingPath_);
        pendingPath_.clear();
    }
    ready_ = true;
    Q_EMIT shown(info, !sameImage);
}

void ImageController::onFailed(quint64 id, const QString& name, const QString& message) {
    pendingBytes_.clear();
    pendingPath_.clear();
    errors_->show(tr("Cannot open image"), tr("%1 is not an image the studio can read.\n\n%2").arg(name, message));
    Q_EMIT failed(id);
}

} // namespace kvsteer::ui
