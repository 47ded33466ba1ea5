#pragma once
// kvsteer vectors info FILE | vectors import RAW --model DIR --out FILE: what a vector file holds,
// and vectors made elsewhere (numpy + safetensors, docs/FORMAT.md) brought in for a model.
namespace kvsteer {

int commandVectors(int argc, char** argv);

} // namespace kvsteer
