#pragma once
// The demo-model subcommands of the kvsteer CLI (issue 4): train-demo, eval-demo, demo-corpus,
// demo-images. The bundled model directory is passed in (KVSTEER_DEMO_MODEL_DIR).
#include <string>

namespace kvsteer {

int commandTrainDemo(int argc, char** argv);
int commandEvalDemo(int argc, char** argv, const std::string& defaultModelDir);
int commandDemoCorpus(int argc, char** argv);
int commandDemoImages(int argc, char** argv);

extern const char* kDemoUsage;   // the usage lines of these commands

} // namespace kvsteer
