// kvsteer-studio: the Qt 6 desktop studio. Options let a script set up the view (see
// scripts/screenshot-studio.sh); with none, the studio opens the bundled demo model.
#include "QuitOnSignal.h"
#include "studio/MainWindow.h"
#include "studio/StudioLook.h"
#include "worker/ScratchFolder.h"
#include "worker/Worker.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// --help and --version only print: they need no display. Without one Qt's default (xcb) platform
// aborts while QApplication is built, before the parser could answer, so those two get the
// offscreen platform unless the user chose one.
void noDisplayNeededForHelp(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        if ((a == "--help" || a == "-h" || a == "--help-all" || a == "--version" || a == "-v") && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
    }
}

// Qt takes `-session ID` and `--session ID` for itself (X11 session management) while QApplication
// is built, so the session file named after --session never reached the parser: the studio started
// as if none had been given. Before Qt sees them they are renamed to the option's other name,
// --session-file, which Qt leaves alone.
void keepSessionOptionFromQt(int argc, char** argv) {
    static char sessionFile[] = "--session-file";
    static std::vector<std::string> renamed;   // --session=FILE as --session-file=FILE, alive for Qt
    renamed.reserve(size_t(argc));
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--") break;   // positional from here
        if (a == "--session" || a == "-session") {
            argv[i] = sessionFile;
        } else if (a.rfind("--session=", 0) == 0) {
            renamed.push_back("--session-file=" + a.substr(std::string("--session=").size()));
            argv[i] = renamed.back().data();
        }
    }
}

// A command-line value that does not read is an error naming its flag, never a silent 0.
int usageError(const QString& message) {
    std::fprintf(stderr, "kvsteer-studio: %s\n", qPrintable(message));
    return 2;
}

// "4" or "0,1,2" (one value, or one per layer, as the CLI's --ck / --cv); false when a part is no number.
bool numberList(const QString& text, QVector<double>* out) {
    out->clear();
    for (const QString& part : text.split(QLatin1Char(','))) {
        bool ok = false;
        const double v = part.trimmed().toDouble(&ok);
        if (!ok || !std::isfinite(v)) return false;
        out->push_back(v);
    }
    return !out->isEmpty();
}

bool wholeNumber(const QString& text, int least, int* out) {
    bool ok = false;
    *out = text.trimmed().toInt(&ok);
    return ok && *out >= least;
}

} // namespace

int main(int argc, char** argv) {
    noDisplayNeededForHelp(argc, argv);
    keepSessionOptionFromQt(argc, argv);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("kvsteer"));
    QApplication::setApplicationName(QStringLiteral("kvsteer Studio"));
    QApplication::setApplicationVersion(QStringLiteral(KVSTEER_STUDIO_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("kvsteer-studio"));
    kvsteer::ui::applyStudioLook(app);

    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral(
        "kvsteer Studio: steer a vision-language model by painting over the image's patches and editing its KV cache."));
    cli.addHelpOption();
    cli.addVersionOption();
    const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")},
                                   QStringLiteral("Model directory in the Hugging Face layout (%1; default: the bundled demo model, %2).")
                                       .arg(kvsteer::ui::Worker::supportedFamilies().join(QStringLiteral(", ")),
                                            QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR)),
                                   QStringLiteral("DIR"));
    const QCommandLineOption device(QStringLiteral("device"), QStringLiteral("cpu or cuda[:N]."), QStringLiteral("DEVICE"));
    const QCommandLineOption dtype(QStringLiteral("dtype"), QStringLiteral("f32, f16 or bf16."), QStringLiteral("DTYPE"));
    const QCommandLineOption threads(QStringLiteral("threads"), QStringLiteral("Threads for the matmuls (0 = all cores)."), QStringLiteral("N"));
    const QCommandLineOption maxPixels(QStringLiteral("max-pixels"),
                                       QStringLiteral("Qwen2-VL / Qwen2.5-VL / Qwen3-VL: the image's pixel budget (larger images are scaled down)."),
                                       QStringLiteral("N"));
    const QCommandLineOption image({QStringLiteral("i"), QStringLiteral("image")}, QStringLiteral("Image to open."), QStringLiteral("FILE"));
    const QCommandLineOption prompt({QStringLiteral("p"), QStringLiteral("prompt")}, QStringLiteral("The question."), QStringLiteral("TEXT"));
    const QCommandLineOption mask(QStringLiteral("mask"), QStringLiteral("Strength mask: PNG/.npy/.safetensors, rect:r0,c0,r1,c1, or tokens:A-B,last (a text prompt)."),
                                  QStringLiteral("MASK"));
    const QCommandLineOption vectors(QStringLiteral("vectors"), QStringLiteral("Steering vector file to import."), QStringLiteral("FILE"));
    const QCommandLineOption target(QStringLiteral("steer-toward"),
                                    QStringLiteral("Compute image-pair vectors toward this image (the current image is the source)."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption perPosition(QStringLiteral("per-position"),
                                         QStringLiteral("With --steer-toward: one direction per patch instead of the mean."));
    const QCommandLineOption propagate(QStringLiteral("propagate"), QStringLiteral("Propagate mode (recompute the prompt after the image)."));
    const QCommandLineOption noPropagate(QStringLiteral("no-propagate"),
                                         QStringLiteral("Edit-only mode, whatever the last session used (the default when a plan is given here)."));
    const QCommandLineOption ablateTo(QStringLiteral("ablate-to"), QStringLiteral("What the ablate operator writes: mean or zero."),
                                      QStringLiteral("TARGET"));
    const QCommandLineOption heatmapLayer(QStringLiteral("heatmap-layer"), QStringLiteral("Layer shown large in the heatmap panel."),
                                          QStringLiteral("N"));
    const QCommandLineOption op(QStringLiteral("operator"), QStringLiteral("add, norm, prerope, scale, spotlight or ablate."), QStringLiteral("OP"));
    const QCommandLineOption ck(QStringLiteral("ck"), QStringLiteral("Key coefficient: one value, or one per layer (0,1,2)."), QStringLiteral("C"));
    const QCommandLineOption cv(QStringLiteral("cv"), QStringLiteral("Value coefficient: one value, or one per layer (2,4,8)."), QStringLiteral("C"));
    const QCommandLineOption layers(QStringLiteral("layers"), QStringLiteral("Layer range A-B (or one layer N)."), QStringLiteral("RANGE"));
    const QCommandLineOption maxTokens(QStringLiteral("max-new-tokens"), QStringLiteral("Tokens per stream."), QStringLiteral("N"));
    const QCommandLineOption heatmap(QStringLiteral("heatmap"), QStringLiteral("Heatmap metric: k, v, dk, dv, cos or attention."),
                                     QStringLiteral("METRIC"));
    const QCommandLineOption session(QStringList{QStringLiteral("session"), QStringLiteral("session-file")}, QStringLiteral("Session file to open."),
                                     QStringLiteral("FILE"));
    const QCommandLineOption study(QStringLiteral("study"),
                                   QStringLiteral("A study's folder (kvsteer study --out DIR) to show in the Evaluate dock: its frontier and table."),
                                   QStringLiteral("DIR"));
    const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Run once the model, image, mask and vectors are ready."));
    const QCommandLineOption ready(QStringLiteral("ready-file"),
                                   QStringLiteral("With --run: write the two answers to FILE when the run has finished (for scripts)."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption atlas(QStringLiteral("atlas"),
                                   QStringLiteral("With --run: run the atlas (strength x layer range) after the run, before --ready-file."));
    const QCommandLineOption noRecovery(QStringLiteral("no-recovery"), QStringLiteral("Do not offer to recover an autosaved session."));
    const QCommandLineOption size(QStringLiteral("window-size"), QStringLiteral("Initial window size WxH."), QStringLiteral("WxH"));
    for (const auto& o : {model, device, dtype, threads, maxPixels, image, prompt, mask, vectors, target, perPosition, propagate, noPropagate, ablateTo, op, ck, cv, layers,
                          maxTokens, heatmap, heatmapLayer, session, study, run, ready, atlas, noRecovery, size})
        cli.addOption(o);
    cli.addPositionalArgument(QStringLiteral("image"), QStringLiteral("Image to open (same as --image)."), QStringLiteral("[image]"));
    cli.process(app);

    kvsteer::ui::StudioOptions o;
    o.modelDirectory = cli.value(model);
    if (cli.isSet(device) || cli.isSet(dtype) || cli.isSet(threads)) {
        o.loadOverride = true;
        if (cli.isSet(device)) o.load.device = cli.value(device);
        if (cli.isSet(dtype)) o.load.dtype = cli.value(dtype);
        if (cli.isSet(threads) && !wholeNumber(cli.value(threads), 0, &o.load.threads))
            return usageError(QStringLiteral("--threads must be a whole number >= 0 (0 = all cores), not '%1'").arg(cli.value(threads)));
    }
    if (cli.isSet(maxPixels)) {
        bool ok = false;
        o.load.maxPixels = cli.value(maxPixels).toLongLong(&ok);
        if (!ok || o.load.maxPixels <= 0) {
            std::fprintf(stderr, "kvsteer-studio: --max-pixels must be a positive number of pixels, not '%s'\n", qPrintable(cli.value(maxPixels)));
            return 2;
        }
    }
    o.imagePath = cli.isSet(image) ? cli.value(image) : cli.positionalArguments().value(0);
    o.prompt = cli.value(prompt);
    o.maskSpec = cli.value(mask);
    const bool form = o.maskSpec.startsWith(QLatin1String("rect:")) || o.maskSpec.startsWith(QLatin1String("tokens:")) ||
                      o.maskSpec.startsWith(QLatin1String("px:")) || o.maskSpec.startsWith(QLatin1String("view:"));
    if (!o.maskSpec.isEmpty() && !form)
        o.maskSpec = QFileInfo(o.maskSpec).absoluteFilePath();
    o.vectorsPath = cli.value(vectors);
    o.targetImagePath = cli.value(target);
    o.sessionPath = cli.value(session);
    if (cli.isSet(study)) o.studyDir = QFileInfo(cli.value(study)).absoluteFilePath();
    try {
        if (cli.isSet(op)) o.op = kvsteer::parseOperator(cli.value(op).toStdString(), "--operator");
        if (cli.isSet(ablateTo)) o.ablateTo = kvsteer::parseAblateTarget(cli.value(ablateTo).toStdString(), "--ablate-to");
    } catch (const kvsteer::Error& e) {
        return usageError(QString::fromStdString(e.what()));
    }
    if (cli.isSet(ck) && !numberList(cli.value(ck), &o.ck))
        return usageError(QStringLiteral("--ck must be a number or a comma-separated list of numbers (one per layer), not '%1'").arg(cli.value(ck)));
    if (cli.isSet(cv) && !numberList(cli.value(cv), &o.cv))
        return usageError(QStringLiteral("--cv must be a number or a comma-separated list of numbers (one per layer), not '%1'").arg(cli.value(cv)));
    if (cli.isSet(propagate) && cli.isSet(noPropagate)) return usageError(QStringLiteral("--propagate and --no-propagate contradict each other"));
    if (cli.isSet(propagate) || cli.isSet(noPropagate)) o.propagate = cli.isSet(propagate);
    o.layers = cli.value(layers);
    int from = 0, to = 0;
    const QStringList range = o.layers.split(QLatin1Char('-'));
    if (!o.layers.isEmpty() && (range.size() > 2 || !wholeNumber(range.value(0), 0, &from) || !wholeNumber(range.value(range.size() - 1), 0, &to) || to < from))
        return usageError(QStringLiteral("--layers must be a range A-B (A <= B) or one layer N, not '%1'").arg(o.layers));
    if (cli.isSet(maxTokens) && !wholeNumber(cli.value(maxTokens), 1, &o.maxTokens))
        return usageError(QStringLiteral("--max-new-tokens must be a whole number >= 1, not '%1'").arg(cli.value(maxTokens)));
    if (cli.isSet(heatmap)) {
        const QStringList names = {QStringLiteral("k"), QStringLiteral("v"), QStringLiteral("dk"), QStringLiteral("dv"), QStringLiteral("cos"),
                                   QStringLiteral("attention")};
        o.heatmapMetric = int(names.indexOf(cli.value(heatmap).toLower()));
        if (o.heatmapMetric < 0) {
            std::fprintf(stderr, "kvsteer-studio: --heatmap must be one of k, v, dk, dv, cos, attention\n");
            return 2;
        }
    }
    o.perPosition = cli.isSet(perPosition);
    if (cli.isSet(heatmapLayer) && !wholeNumber(cli.value(heatmapLayer), 0, &o.heatmapLayer))
        return usageError(QStringLiteral("--heatmap-layer must be a whole number >= 0, not '%1'").arg(cli.value(heatmapLayer)));
    o.run = cli.isSet(run);
    o.readyFile = cli.value(ready);
    o.atlas = cli.isSet(atlas);
    o.offerRecovery = !cli.isSet(noRecovery);

    kvsteer::ui::removeOrphanedScratchFolders();   // left by studios that were killed outright
    kvsteer::ui::MainWindow window(o);
    if (cli.isSet(size)) {
        const QStringList wh = cli.value(size).split(QLatin1Char('x'));
        if (wh.size() == 2) window.resize(wh[0].toInt(), wh[1].toInt());
    }
    window.show();
    quitOnTerminateSignals(app);
    return app.exec();
}
