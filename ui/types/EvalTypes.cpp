#include "types/EvalTypes.h"

namespace kvsteer::ui {

void registerEvalTypes() {
    qRegisterMetaType<EvalRequest>();
    qRegisterMetaType<EvalStarted>();
    qRegisterMetaType<EvalItemRow>();
    qRegisterMetaType<EvalFinished>();
}

} // namespace kvsteer::ui
