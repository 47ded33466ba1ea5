#pragma once
// Comma-separated numbers as people type them ("8,16,32", "0.5"): strengths, coefficients, head
// indices. Every item must be a whole number token — "1.5x" or "3," is refused, not read as 1.5.
#include <string>
#include <vector>

namespace kvsteer {

// Throws kvsteer::Error naming `what` and the item that is not a number, or an empty list.
std::vector<double> parseNumberList(const std::string& text, const std::string& what);
// Non-negative integers (head indices, counts).
std::vector<int> parseIndexList(const std::string& text, const std::string& what);

} // namespace kvsteer
