#include "VectorsCommand.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "Error.h"
#include "PlanFlags.h"
#include "models/Model.h"
#include "steer/PlanOptions.h"
#include "steer/SteeringVectors.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace kvsteer {

namespace {

// A raw file checked against the model and written as a kvsteer file for it.
int vectorsImport(const std::string& raw, const CommandLine& cl) {
    if (!cl.has("out")) throw UsageError("vectors import needs RAW.safetensors --model DIR --out FILE");
    auto model = loadModel(cl);
    const KeySpace space = keySpaceFlag(cl);
    const SteeringVectors vectors = importRawSteering(raw, *model, space);
    SteeringFileInfo info = newVectorsFileInfo(*model, "imported", nlohmann::json{{"from", raw}}.dump(), space);
    suggestionsFromFlags(cl, model->config().text.numLayers, info);
    saveSteeringFile(cl.get("out"), vectors, info);
    std::cerr << "wrote " << cl.get("out") << " for " << model->familyName() << " '" << model->config().name << "' (" << keySpaceName(space)
              << ", " << (vectors.perPosition() ? "per position" : "per head") << ")\n";
    return 0;
}

} // namespace

int commandVectors(int argc, char** argv) {
    CommandLine cl(withOptions({"out", "key-space", "operator", "ck", "cv", "layers"}, modelOptionNames()), {});
    cl.acceptPositional();
    cl.parse(argc, argv, 2);
    const std::vector<std::string>& args = cl.positional();
    if (args.size() != 2 || (args[0] != "info" && args[0] != "import"))
        throw UsageError("expected `vectors info FILE` or `vectors import RAW.safetensors --model DIR --out FILE`");
    if (args[0] == "import") return vectorsImport(args[1], cl);
    std::cout << describeSteeringFile(args[1]);
    return 0;
}

} // namespace kvsteer
