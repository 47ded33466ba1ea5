#pragma once
// The steering subcommands of the kvsteer CLI: extract, steer, sweep.
namespace kvsteer {

int commandExtract(int argc, char** argv);
int commandSteer(int argc, char** argv);
int commandSweep(int argc, char** argv);

} // namespace kvsteer
