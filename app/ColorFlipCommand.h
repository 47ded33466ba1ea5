#pragma once
namespace kvsteer {
// kvsteer demo-steer: the red→blue flip experiment of the bundled demo model.
int commandDemoSteer(int argc, char** argv);
} // namespace kvsteer
