// Studio session and crash-recovery files (one format): SessionFile::fromJson, which load() runs
// on the file's bytes. It reports failure by returning false with a message, never by throwing;
// asserted: a refusal always says why. The parts it carries on (image bytes, the vector file) are
// the image and steering_vectors targets' surfaces.
#include "SessionFile.h"

#include <cstddef>
#include <cstdint>

using kvsteer::ui::SessionDocument;
using kvsteer::ui::SessionFile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QByteArray json(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    SessionDocument doc;
    QString error;
    if (!SessionFile::fromJson(json, &doc, &error)) {
        if (error.isEmpty()) __builtin_trap();
        return 0;
    }
    // A document that opens holds a strength map of exactly its rows x cols.
    if (doc.strength.values.size() != qsizetype(doc.strength.rows) * doc.strength.cols) __builtin_trap();
    return 0;
}
