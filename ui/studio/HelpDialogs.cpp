#include "studio/HelpDialogs.h"

#include "studio/StudioStatusBar.h"
#include "widgets/Icons.h"
#include "worker/Worker.h"

#include <QMessageBox>

namespace kvsteer::ui {

void showQuickGuide(QWidget* parent) {
    QMessageBox box(QMessageBox::NoIcon, QObject::tr("Quick Guide"), QString(), QMessageBox::Close, parent);
    box.setTextFormat(Qt::RichText);
    box.setText(QObject::tr("<h3>Steering in five steps</h3><ol>"
                            "<li><b>Open an image</b> (Ctrl+O, drop it on the canvas or paste it) and type a question.</li>"
                            "<li><b>Run</b> (Ctrl+R): the image and prompt are prefilled once; both answers stream.</li>"
                            "<li><b>Get a direction</b> in the Steering panel: compute it toward a second image, from a painted "
                            "region or from text pairs, or import a vector file.</li>"
                            "<li><b>Paint</b> the patches to steer (B brush, E eraser, R rectangle; right-drag erases). With "
                            "<i>Live</i> on, every stroke re-runs the edit and the decode from the kept prefill.</li>"
                            "<li><b>Compare</b>: tokens that differ are highlighted; hover one for its top-5. The heatmaps show "
                            "what the edit did to each layer's cache and where the answer looks.</li></ol>"
                            "<p>Sessions (Ctrl+S) keep everything in one file; the studio autosaves and offers recovery after a crash.</p>"));
    box.exec();
}

void showAbout(QWidget* parent, const ModelInfo& model) {
    QMessageBox box(parent);
    box.setWindowTitle(QObject::tr("About kvsteer Studio"));
    box.setIconPixmap(icons::application().pixmap(96, 96));
    box.setTextFormat(Qt::RichText);
    box.setText(QObject::tr("<h3>kvsteer Studio %1</h3>"
                            "<p>Steer a vision-language model by editing its KV cache at the image's patch tokens: "
                            "paint where, choose how, and compare the steered and unsteered answers as they stream.</p>")
                    .arg(QStringLiteral(KVSTEER_STUDIO_VERSION)));
    box.setInformativeText(QObject::tr("%1 in libtorch %2 · Qt %3 · QCustomPlot for the heatmaps.\n\n"
                                       "Model: %4\n\n%5")
                               .arg(Worker::supportedFamilies().join(QStringLiteral(", ")), QStringLiteral("1.13"),
                                    QString::fromLatin1(qVersion()),
                                    model.valid() ? QObject::tr("%1 (%2, %3 parameters, %4×%5 patches)")
                                                        .arg(model.name, model.family, formatCount(model.parameters))
                                                        .arg(model.gridRows)
                                                        .arg(model.gridCols)
                                                  : QObject::tr("none loaded"))
                               .arg(Worker::computeReport().join(QStringLiteral("\n"))));
    box.exec();
}

} // namespace kvsteer::ui
