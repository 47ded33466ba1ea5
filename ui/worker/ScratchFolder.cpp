#include "worker/ScratchFolder.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <cerrno>
#include <csignal>
#include <limits>
#include <unistd.h>

namespace kvsteer::ui {

namespace {

const QString kPrefix = QStringLiteral("kvsteer-studio-");

// Whether a process with this pid exists (EPERM: it does, another user's).
bool processExists(qint64 pid) {
    return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
}

} // namespace

QString scratchFolderTemplate() {
    return QDir(QDir::tempPath()).filePath(kPrefix + QString::number(QCoreApplication::applicationPid()) + QStringLiteral("-XXXXXX"));
}

void removeOrphanedScratchFolders() {
    const QDir temp(QDir::tempPath());
    for (const QFileInfo& folder : temp.entryInfoList({kPrefix + QLatin1Char('*')}, QDir::Dirs | QDir::NoDotAndDotDot | QDir::NoSymLinks)) {
        // kvsteer-studio-<pid>-XXXXXX: anything else of that prefix is not ours to judge.
        bool ok = false;
        const qint64 pid = folder.fileName().mid(kPrefix.size()).section(QLatin1Char('-'), 0, 0).toLongLong(&ok);
        if (!ok || pid <= 0 || pid > std::numeric_limits<pid_t>::max() || folder.ownerId() != ::getuid() || processExists(pid)) continue;
        QDir(folder.absoluteFilePath()).removeRecursively();
    }
}

} // namespace kvsteer::ui
