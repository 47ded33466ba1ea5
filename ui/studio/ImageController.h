#pragma once
// ImageController: the image being steered — opening it (file, dialog, clipboard, drop), the
// request in flight (each one has an id; only the newest is shown), and the bytes and name of the
// image shown, which sessions keep.
#include "types/StudioTypes.h"

#include <QObject>

class QWidget;

namespace kvsteer::ui {

class ErrorReporter;
class StudioSettings;
class Worker;

QString imageFileFilter();   // for the file dialogs that open images

class ImageController : public QObject {
    Q_OBJECT
public:
    ImageController(Worker* worker, ErrorReporter* errors, StudioSettings* settings, QWidget* window);

    bool ready() const { return ready_; }
    bool arriving() const { return !pendingBytes_.isEmpty(); }   // an image is on its way to the Worker
    QByteArray bytes() const { return bytes_; }
    QString name() const { return name_; }
    QString path() const { return path_; }   // the shown image's file, absolute; "" when it came from no file (pasted, dropped pixels)

    // Each returns the request's id; 0: the file could not be read (an error was shown).
    quint64 openFile(const QString& path);
    quint64 openData(const QByteArray& bytes, const QString& name);
    quint64 openImage(const QImage& image, const QString& name);   // dropped or pasted pixels
    void openDialog();
    void paste();

Q_SIGNALS:
    void aboutToOpen();                 // the answers being decoded belong to the old image: stop
    void openRequested(quint64 id, const QByteArray& bytes, const QString& name);
    void shown(const kvsteer::ui::ImageInfo& info, bool newImage);
    void failed(quint64 id);            // the Worker could not read it (an error was shown)

private:
    void onReady(const ImageInfo& info);
    void onFailed(quint64 id, const QString& name, const QString& message);

    ErrorReporter* errors_;
    StudioSettings* settings_;
    QWidget* window_;
    quint64 lastId_ = 0;
    QByteArray bytes_, pendingBytes_;
    QString name_, pendingName_, pendingPath_, path_;
    bool ready_ = false;
};

} // namespace kvsteer::ui
