#include "io/FolderLock.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/file.h>
#include <unistd.h>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string nowUtc() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

std::string hostName() {
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "unknown";
}

// This process's command line, its arguments joined by spaces (from Linux's /proc; elsewhere,
// or unreadable, "unknown command").
std::string ownCommandLine() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!line.empty() && line.back() == '\0') line.pop_back();
    std::replace(line.begin(), line.end(), '\0', ' ');
    return line.empty() ? "unknown command" : line;
}

// "pid 1234 on host H since 2026-11-27T22:50:01Z (kvsteer eval ...)", as the holder wrote it.
// The holder writes it just after taking the flock, so for a moment the file can still be empty
// or half written: it is read again for a little while before giving up on naming the holder.
std::string describeHolder(const std::string& path) {
    for (int attempt = 0; attempt < 50; ++attempt) {
        try {
            std::ifstream in(path);
            const json j = json::parse(in);
            return "pid " + std::to_string(j.at("pid").get<long long>()) + " on host " + j.at("host").get<std::string>() + " since " +
                   j.at("since").get<std::string>() + " (" + j.at("command").get<std::string>() + ")";
        } catch (const json::exception&) {
        }
        ::usleep(10000);
    }
    return "another process (it has not written who it is)";
}

// Replaces the file's whole content: a killed run's line may still be there, and from here on a
// reader must find ours (synced, so it survives a crash of the machine too).
bool writeAll(int fd, const std::string& text) {
    if (::ftruncate(fd, 0) != 0) return false;
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, off_t(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += size_t(n);
    }
    return ::fsync(fd) == 0;
}

} // namespace

const char* FolderLock::fileName() { return ".kvsteer.lock"; }

FolderLock::FolderLock(const std::string& dir, const std::string& command) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) throw Error("output folder " + dir + ": cannot create it" + (ec ? " (" + ec.message() + ")" : ""));
    const std::string path = (fs::path(dir) / fileName()).string();
    // O_CLOEXEC: a flock belongs to the open file, not the process; a program this one started
    // would otherwise inherit it and keep the folder locked after this process has ended.
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("output folder " + dir + ": cannot open " + path + " (" + std::strerror(errno) + ")");
    int rc;
    while ((rc = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        if (err == EWOULDBLOCK) throw Error(dir + " is being written by " + describeHolder(path) + "; wait for it or stop it");
        throw Error("output folder " + dir + ": cannot lock " + path + " (" + std::strerror(err) +
                    "); a folder on a file system without flock cannot be written safely, use another");
    }
    const nlohmann::ordered_json holder = {{"pid", static_cast<long long>(::getpid())},
                         {"host", hostName()},
                         {"since", nowUtc()},
                         {"command", command.empty() ? ownCommandLine() : command}};
    if (!writeAll(fd_, holder.dump(-1, ' ', false, json::error_handler_t::replace) + "\n")) {
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        throw Error("output folder " + dir + ": cannot write " + path + " (" + std::strerror(err) + ")");
    }
}

FolderLock::~FolderLock() {
    // Closing the only descriptor of the open file releases the flock. The file and its holder
    // line stay: removing the file could let a new writer lock a fresh file while a third still
    // locks the old, unlinked one, and a stale line is harmless because only the flock counts.
    if (fd_ >= 0) ::close(fd_);
}

} // namespace kvsteer
