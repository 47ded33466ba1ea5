#include "types/AtlasTypes.h"

#include <QCoreApplication>

namespace kvsteer::ui {

QString outcomeTitle(AtlasOutcome o) {
    switch (o) {
    case AtlasOutcome::Same: return QCoreApplication::translate("Atlas", "same as unsteered");
    case AtlasOutcome::Different: return QCoreApplication::translate("Atlas", "a different answer");
    case AtlasOutcome::Degenerate: return QCoreApplication::translate("Atlas", "degenerate");
    case AtlasOutcome::Pending: break;
    }
    return QCoreApplication::translate("Atlas", "running…");
}

void registerAtlasTypes() {
    qRegisterMetaType<AtlasRequest>();
    qRegisterMetaType<AtlasStarted>();
    qRegisterMetaType<AtlasCellResult>();
    qRegisterMetaType<AtlasFinished>();
}

} // namespace kvsteer::ui
