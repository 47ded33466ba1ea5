// Writes session-file seeds with SessionFile::toJson (the studio's own writer):
// fuzz_make_session_seeds OUT_DIR/session.
#include "SessionFile.h"

#include <QDir>
#include <QFile>
#include <cstdio>

using namespace kvsteer::ui;

namespace {

void write(const QString& dir, const QString& name, const QByteArray& bytes) {
    QFile f(dir + QLatin1Char('/') + name);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) std::perror("write");
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_make_session_seeds OUT_DIR\n");
        return 2;
    }
    const QString dir = QString::fromLocal8Bit(argv[1]);
    QDir().mkpath(dir);
    SessionDocument s;
    s.strength = StrengthGrid(4, 6);
    write(dir, QStringLiteral("empty-4x6"), SessionFile::toJson(s));

    s.modelDirectory = QStringLiteral("resources/demo-model");
    s.modelName = QStringLiteral("kvsteer/shapes-demo");
    s.modelConfigHash = QStringLiteral("0123456789abcdef");
    s.imageBytes = QByteArray("\x89PNG\r\n\x1a\n-not-really", 20);
    s.imageName = QStringLiteral("scene.png");
    s.prompt = QStringLiteral("What colour is the circle?");
    s.strength = StrengthGrid(3, 5);
    for (int i = 0; i < s.strength.size(); ++i) s.strength.values[i] = float(i) / 15.0f;
    s.plan.op = kvsteer::SteeringOperator::PreRope;
    s.plan.heads = {0, 1};
    s.source = VectorSource::TextPairs;
    s.textPairs = {{QStringLiteral("red"), QStringLiteral("blue")}};
    s.vectorsBlob = QByteArray(16, '\x01');
    s.vectorsOrigin = QStringLiteral("vectors.safetensors");
    StreamToken t;
    t.id = 42;
    t.text = QStringLiteral(" red");
    t.top = {{42, QStringLiteral(" red"), 0.9f}, {7, QStringLiteral(" blue"), 0.05f}};
    s.unsteered = {t};
    s.steered = {t, StreamToken{}};
    write(dir, QStringLiteral("full-3x5"), SessionFile::toJson(s));
    return 0;
}
