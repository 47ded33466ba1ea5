#pragma once
// One writer per output folder. Two runs appending to one folder at once would interleave their
// items (the same id twice, a summary of neither), so a writer holds an exclusive flock on
// DIR/.kvsteer.lock for as long as it writes, and says in that file who it is. Only the flock
// counts, never the file's existence: the kernel drops the flock when its process dies (even by
// SIGKILL), so a folder a killed run left behind is simply taken over by the next run.
#include <string>

namespace kvsteer {

class FolderLock {
public:
    // Makes `dir` when it is missing and locks it for this process; `command` is recorded as the
    // holder's command (empty: this process's own command line). Throws kvsteer::Error naming the
    // folder and the holder when another writer has it, or when the lock cannot be taken at all.
    explicit FolderLock(const std::string& dir, const std::string& command = "");
    ~FolderLock();   // releases the lock; the file stays (deleting it would race a new holder)
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

    static const char* fileName();   // ".kvsteer.lock"

private:
    int fd_ = -1;
};

} // namespace kvsteer
