#pragma once
// The dataset commands of the kvsteer CLI: eval (a steering setting scored on a dataset, steered
// against unsteered), eval-merge (shards into one summary), demo-pope (a POPE-style set on the
// demo model's scenes).
#include <string>

namespace kvsteer {

struct Shard {
    int index = 0, count = 1;
};
// --shard K/N; a UsageError otherwise.
Shard parseShard(const std::string& text);

int commandEval(int argc, char** argv);
int commandEvalMerge(int argc, char** argv);
int commandDemoPope(int argc, char** argv);

} // namespace kvsteer
