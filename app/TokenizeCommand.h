#pragma once
// kvsteer tokenize: the model's tokenizer on texts, one JSON line each (as llama.cpp's
// llama-tokenize does for its models), without loading the weights.
namespace kvsteer {

int commandTokenize(int argc, char** argv);

} // namespace kvsteer
