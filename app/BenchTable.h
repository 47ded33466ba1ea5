#pragma once
// bench's output for people: the tables of measured rows, then the issues' targets beside the rows
// they apply to ("ok" or "MISS").
#include "BenchRow.h"

#include <vector>

namespace kvsteer {

void printTable(const std::vector<BenchRow>& rows);
void printTargets(const std::vector<BenchRow>& rows);

} // namespace kvsteer
