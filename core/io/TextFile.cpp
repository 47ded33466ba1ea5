#include "io/TextFile.h"

#include "Error.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace kvsteer {

void writeTextAtomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error("cannot write " + tmp);
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
    std::fclose(f);
    if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot write " + path);
    }
}

std::string readTextFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open " + path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace kvsteer
