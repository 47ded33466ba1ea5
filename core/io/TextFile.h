#pragma once
// Text files written whole and atomically: a temporary file beside the target is written,
// flushed to disk and renamed over it, so a reader (or a crash) never sees half a file.
#include <string>

namespace kvsteer {

void writeTextAtomically(const std::string& path, const std::string& text);   // throws kvsteer::Error
std::string readTextFile(const std::string& path);                             // throws kvsteer::Error

} // namespace kvsteer
