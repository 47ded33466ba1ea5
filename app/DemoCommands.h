#pragma once
// The demo-model subcommands of the kvsteer CLI: train-demo, eval-demo, demo-corpus,
// demo-images. The bundled model directory is passed in (KVSTEER_DEMO_MODEL_DIR). Their
// usage is in Usage.cpp with every other command's.
#include <string>

namespace kvsteer {

int commandTrainDemo(int argc, char** argv);
int commandEvalDemo(int argc, char** argv, const std::string& defaultModelDir);
int commandDemoCorpus(int argc, char** argv);
int commandDemoImages(int argc, char** argv);

} // namespace kvsteer
