#pragma once
// Tokenizer directories the tokenizer targets fuzz one file of, with valid companions beside it,
// and the loaded tokenizers the text targets feed arbitrary bytes and ids to.
#include "text/Tokenizer.h"

#include <cstdint>
#include <string>

namespace kvsteer::fuzz {

// GPT-2's byte alphabet (bytes 33..126, 161..172, 174..255 as themselves, the others from
// U+0100 on) as UTF-8, one entry per byte: what byte-level BPE vocabularies are written in.
std::string byteSymbol(uint8_t byte);
// A small but complete byte-level BPE vocabulary (the 256 byte symbols, a few merges, the
// Qwen2 special tokens) as vocab.json, merges.txt and the equivalent tokenizer.json.
std::string smallVocabJson();
std::string smallMergesTxt();
std::string smallTokenizerJson();

// The tokenizers the text targets use, loaded once: 0 the demo model's SentencePiece
// (LlamaTokenizer rules); with ../shared/reference beside the checkout also 1 tiny-paligemma
// (GemmaTokenizer), 2 tiny-qwen2vl (byte-level BPE) and 3 tiny-llava (32,000 pieces). Without
// it, the small byte-level BPE above stands in for 1..3.
const Tokenizer& textTokenizer(uint8_t which);

} // namespace kvsteer::fuzz
