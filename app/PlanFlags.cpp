#include "PlanFlags.h"

#include "CliOptions.h"
#include "Error.h"
#include "io/NumberList.h"
#include "steer/LayerRange.h"
#include "steer/SteeringOperator.h"

namespace kvsteer {

namespace {

// Runs one of core's parsers on a flag's value; its complaint becomes a usage error, prefixed
// with the flag when it does not name it already.
template <class Parse>
auto asUsage(const std::string& flag, Parse&& parse) {
    try {
        return parse();
    } catch (const Error& e) {
        const std::string what = e.what();
        throw UsageError(what.rfind("--" + flag, 0) == 0 ? what : "--" + flag + ": " + what);
    }
}

} // namespace

std::set<std::string> planOptionNames() {
    return withOptions({"image", "prompt", "vectors", "mask", "layers", "heads", "ck", "cv", "operator", "ablate-to"}, generationOptionNames());
}

std::vector<double> numbersFlag(const CommandLine& cl, const std::string& flag) {
    return asUsage(flag, [&] { return parseNumberList(cl.get(flag), "--" + flag); });
}

std::vector<int> layersFlag(const CommandLine& cl, int numLayers) {
    return asUsage("layers", [&] { return parseLayerSet(cl.get("layers"), numLayers); });
}

PlanOptions planOptionsFromFlags(const CommandLine& cl, int numLayers) {
    PlanOptions o;
    o.op = cl.get("operator", "");
    if (!o.op.empty()) asUsage("operator", [&] { return parseOperator(o.op); });
    if (cl.has("layers")) o.layers = layersFlag(cl, numLayers);
    if (cl.has("heads")) o.heads = asUsage("heads", [&] { return parseIndexList(cl.get("heads"), "--heads"); });
    if (cl.has("ck")) o.ck = numbersFlag(cl, "ck");
    if (cl.has("cv")) o.cv = numbersFlag(cl, "cv");
    o.propagate = cl.has("propagate");
    o.ablateTo = cl.get("ablate-to", "mean");
    if (o.ablateTo != "mean" && o.ablateTo != "zero") throw UsageError("--ablate-to must be mean or zero");
    return o;
}

void suggestionsFromFlags(const CommandLine& cl, int numLayers, SteeringFileInfo& info) {
    info.operatorName = cl.get("operator", info.operatorName);
    asUsage("operator", [&] { return parseOperator(info.operatorName); });
    info.ck = cl.has("ck") ? numbersFlag(cl, "ck") : std::vector<double>{1.0};
    info.cv = cl.has("cv") ? numbersFlag(cl, "cv") : std::vector<double>{1.0};
    if (cl.has("layers")) info.layers = layersFlag(cl, numLayers);
}

KeySpace keySpaceFlag(const CommandLine& cl) {
    return asUsage("key-space", [&] { return parseKeySpace(cl.get("key-space", cl.get("operator") == "prerope" ? "pre-rope" : "post-rope")); });
}

} // namespace kvsteer
