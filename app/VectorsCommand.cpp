#include "VectorsCommand.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "Error.h"
#include "PlanFlags.h"
#include "io/SafeTensors.h"
#include "models/Model.h"
#include "steer/PlanOptions.h"
#include "steer/SteeringOperator.h"
#include "steer/SteeringVectors.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace kvsteer {

namespace {

// The file's metadata and tensors as they are, without a model to check them against.
int vectorsInfo(const std::string& path) {
    const SafeTensorsFile file(path);
    const auto it = file.metadata().find("kvsteer");
    if (it == file.metadata().end())
        throw Error("steering file " + path + ": no __metadata__ 'kvsteer' entry (a raw file? `kvsteer vectors import` makes one for a model)");
    nlohmann::json meta;
    try {
        meta = nlohmann::json::parse(it->second);
    } catch (const std::exception& e) {
        throw Error("steering file " + path + ": metadata 'kvsteer' is not valid JSON (" + e.what() + ")");
    }
    auto show = [&](const char* label, const char* key) {
        if (meta.contains(key)) std::cout << label << (meta[key].is_string() ? meta[key].get<std::string>() : meta[key].dump()) << "\n";
    };
    show("model        ", "model");
    show("family       ", "family");
    show("model_type   ", "model_type");
    show("grid         ", "grid");
    show("config hash  ", "config_hash");
    show("layers       ", "num_layers");
    show("key space    ", "key_space");
    show("recipe       ", "recipe");
    show("suggests     operator ", "operator");
    show("             c_k ", "c_k");
    show("             c_v ", "c_v");
    if (meta.contains("layers")) std::cout << "             layers " << (meta["layers"].empty() ? std::string("all") : meta["layers"].dump()) << "\n";
    show("written by   kvsteer ", "kvsteer_version");
    std::cout << "tensors\n";
    for (const auto& name : file.names()) std::cout << "  " << name << " " << nlohmann::json(file.info(name).shape).dump() << "\n";
    return 0;
}

// A raw file checked against the model and written as a kvsteer file for it.
int vectorsImport(const std::string& raw, const CommandLine& cl) {
    if (!cl.has("out")) throw UsageError("vectors import needs RAW.safetensors --model DIR --out FILE");
    auto model = loadModel(cl);
    const std::string keySpace = cl.get("key-space", "post");
    if (keySpace != "post" && keySpace != "pre") throw UsageError("--key-space must be post or pre");
    const KeySpace space = keySpace == "pre" ? KeySpace::PreRope : KeySpace::PostRope;
    const SteeringVectors vectors = importRawSteering(raw, *model, space);
    SteeringFileInfo info = newVectorsFileInfo(*model, "imported", nlohmann::json{{"from", raw}}.dump(), space);
    if (cl.has("operator")) {
        info.operatorName = cl.get("operator");
        try {
            parseOperator(info.operatorName);
        } catch (const Error& e) {
            throw UsageError(std::string("--operator: ") + e.what());
        }
    }
    info.ck = cl.has("ck") ? numbersFlag(cl, "ck") : std::vector<double>{1.0};
    info.cv = cl.has("cv") ? numbersFlag(cl, "cv") : std::vector<double>{1.0};
    if (cl.has("layers")) info.layers = layersFlag(cl, model->config().text.numLayers);
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
    return args[0] == "info" ? vectorsInfo(args[1]) : vectorsImport(args[1], cl);
}

} // namespace kvsteer
