// Text-pair JSONL for the text-pairs recipe, through loadTextPairs.
#include "FuzzSupport.h"
#include "steer/Recipes.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::writeScratch("pairs.jsonl", data, size);
    fuzz::expectError([&] {
        if (loadTextPairs(path).empty()) __builtin_trap();
    });
    return 0;
}
