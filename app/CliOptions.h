#pragma once
// Options shared by the CLI's subcommands: which model, how to load it, how to generate.
#include "CommandLine.h"
#include "models/ModelRegistry.h"
#include "generate/Session.h"

#include <set>
#include <string>

namespace kvsteer {

// Functions rather than globals: other translation units build their option sets from them
// during static initialisation.
const std::set<std::string>& modelOptionNames();        // model, dtype, device, threads, system, max-pixels
const std::set<std::string>& generationOptionNames();   // max-new-tokens, seed, temperature, top-p, top-k
std::set<std::string> withOptions(std::set<std::string> own, const std::set<std::string>& shared);

std::string modelDirectory(const CommandLine& cl);       // --model, else the bundled demo model
LoadOptions loadOptions(const CommandLine& cl);
std::shared_ptr<Model> loadModel(const CommandLine& cl);   // from --model (see modelDirectory)
// `directory` with the command line's load options; --system refused for a family without one.
std::shared_ptr<Model> loadModelFrom(const std::string& directory, const CommandLine& cl);
GenerationOptions generationOptions(const CommandLine& cl, int defaultMaxNewTokens);
// One token's text as the CLI shows it (special tokens included); a model's vocabulary can be
// larger than its tokenizer's (Qwen pads it), and such an id shows as "<id N>".
std::string tokenText(const Tokenizer& tokenizer, int64_t id);
// Says on stderr (stdout stays the answer or the JSON) that --max-new-tokens was cut to fit.
void noteBudgetCut(int asked, int cut, int64_t promptTokens, int64_t context);

} // namespace kvsteer
