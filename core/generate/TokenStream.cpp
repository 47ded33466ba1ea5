#include "generate/TokenStream.h"

#include <algorithm>

namespace kvsteer {

TokenStream::TokenStream(const SamplingParams& sampling, const Tokenizer& tokenizer, std::vector<int64_t> eos, bool stopAtEos,
                         int64_t seed)
    : tokenizer_(tokenizer), sampler_(sampling), detok_(tokenizer), eos_(std::move(eos)), stopAtEos_(stopAtEos), next_(seed) {}

TokenEvent TokenStream::step(int index, const at::Tensor& logits) {
    TokenEvent ev;
    ev.step = index;
    if (done_) {
        ev.id = -1;
        return ev;
    }
    ev.id = sampler_.next(logits);
    ev.logits = &logits;
    out_.ids.push_back(ev.id);
    ev.eos = std::find(eos_.begin(), eos_.end(), ev.id) != eos_.end();
    // An id the tokenizer does not know (the vocab is padded past the tokenizer) is shown as U+FFFD.
    if (!ev.eos) ev.text = ev.id < tokenizer_.vocabSize() ? detok_.push(ev.id) : "\xEF\xBF\xBD";
    out_.text += ev.text;
    if (ev.eos && stopAtEos_) {
        out_.stoppedAtEos = true;
        done_ = true;
    }
    next_ = ev.id;
    return ev;
}

Generation TokenStream::finish() {
    out_.text += detok_.finish();
    return out_;
}

} // namespace kvsteer
