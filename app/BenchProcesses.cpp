#include "BenchProcesses.h"

#include "Error.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>

namespace kvsteer {

// Measures one model in a child process, so its peak RSS is its own: the bench runs itself again
// on that one model with --json and reads the row back through a pipe. (A plain fork would copy
// the parent's OpenMP pool state, which libgomp does not survive.)
bool measureInChild(const std::vector<std::string>& args, BenchRow& row) {
    int fds[2];
    if (pipe(fds) != 0) throw Error("bench: pipe failed");
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        std::vector<char*> argv;
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    close(fds[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
    const nlohmann::json rows = nlohmann::json::parse(text, nullptr, false);
    if (!rows.is_array() || rows.empty()) return false;
    row = rowFromJson(rows.front());
    return true;
}

BusyNeighbour::BusyNeighbour() {
    std::fflush(nullptr);
    const pid_t bench = getpid();
    pid_ = fork();
    if (pid_ < 0) throw Error("bench: cannot start the busy process (fork failed)");
    if (pid_ == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   // gone when the bench is, even if the bench is killed
        if (getppid() != bench) _exit(0);   // the bench ended before that line
        for (volatile uint64_t spins = 0;; spins = spins + 1) {
        }
    }
}

BusyNeighbour::~BusyNeighbour() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
}

} // namespace kvsteer
