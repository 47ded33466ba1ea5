#pragma once
// The worker's scratch folder: vectors computed in the studio are written there (a vector file
// is what the core reads), and it goes when the worker does. It lives in the temp directory as
// kvsteer-studio-<pid>-XXXXXX, the pid saying whose it is: a studio that was killed outright
// (SIGKILL, a crash, the machine's power) cannot remove its own, so the next studio to start
// removes every such folder whose process is gone. On a 7B a folder holds hundreds of MB.
#include <QString>

namespace kvsteer::ui {

// The QTemporaryDir template of this process's scratch folder.
QString scratchFolderTemplate();

// Removes this user's scratch folders whose studio has ended. A folder whose pid is alive (its
// studio, or an unrelated process that reuses the pid) is kept.
void removeOrphanedScratchFolders();

} // namespace kvsteer::ui
