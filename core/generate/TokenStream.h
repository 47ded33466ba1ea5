#pragma once
// TokenStream: the one decode step of one row — sample the next id from the logits, notice EOS,
// show an id the tokenizer does not know as U+FFFD, and emit only complete UTF-8 — with what the
// row has produced so far. A single answer (Session) and the side-by-side pair (one stream per
// batch row) both decode through it, so the two can never disagree on what a step means.
#include "generate/Sampler.h"
#include "text/StreamingDetokenizer.h"
#include "text/Tokenizer.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvsteer {

struct TokenEvent {
    int step = 0;          // 0-based index of the generated token
    int64_t id = 0;
    std::string text;      // newly completed UTF-8 text (may be empty while a character is split)
    bool eos = false;
    const at::Tensor* logits = nullptr;   // [V] float32, valid only during the callback
    const std::vector<at::Tensor>* attention = nullptr;   // per layer [B, H, S], when captured
};
using TokenCallback = std::function<void(const TokenEvent&)>;

struct Generation {
    std::vector<int64_t> ids;   // generated ids (EOS included when it stopped there)
    std::string text;           // decoded text (special tokens skipped)
    bool stoppedAtEos = false;
    bool cancelled = false;
    double decodeMs = 0;
    double tokensPerSecond() const { return decodeMs > 0 ? 1000.0 * ids.size() / decodeMs : 0; }
};

class TokenStream {
public:
    // `seed` is the token fed first (the last prompt token); `eos` the ids that end an answer.
    TokenStream(const SamplingParams& sampling, const Tokenizer& tokenizer, std::vector<int64_t> eos, bool stopAtEos, int64_t seed);

    int64_t next() const { return next_; }   // the token to feed at the next step
    bool done() const { return done_; }       // stopped at EOS (with stopAtEos)

    // One step: logits [V] float32 for this row -> the event (id -1 once the row is done; a
    // finished row of a batch keeps being fed, and its outputs are ignored).
    TokenEvent step(int index, const at::Tensor& logits);
    void cancel() { out_.cancelled = true; }
    // What the row produced, with the detokenizer's last bytes flushed.
    Generation finish();

private:
    const Tokenizer& tokenizer_;
    Sampler sampler_;
    StreamingDetokenizer detok_;
    std::vector<int64_t> eos_;
    bool stopAtEos_;
    int64_t next_;
    bool done_ = false;
    Generation out_;
};

} // namespace kvsteer
