#pragma once
// The other processes a bench run starts: a child that measures one row (so that its peak RSS is
// its own), and a busy neighbour (so that a row can be measured on a shared machine).
#include "BenchRow.h"

#include <sys/types.h>

#include <string>
#include <vector>

namespace kvsteer {

// Runs `args` (bench's own arguments for one row, with --json) as a child bench and reads its row
// back. False when the child failed (it has printed why on stderr).
bool measureInChild(const std::vector<std::string>& args, BenchRow& row);

// One process that spins on a core for as long as this object lives: what "beside one busy
// process" means in the bench's rows (a `yes > /dev/null` would do the same). It dies with the
// bench too, however the bench ends.
class BusyNeighbour {
public:
    BusyNeighbour();
    ~BusyNeighbour();
    BusyNeighbour(const BusyNeighbour&) = delete;
    BusyNeighbour& operator=(const BusyNeighbour&) = delete;

private:
    pid_t pid_ = -1;
};

} // namespace kvsteer
