// StreamingDetokenizer — see StreamingDetokenizer.h. Copies clone the state (which refers to
// the shared, immutable tables of tok_, so the clone stays valid).
#include "text/StreamingDetokenizer.h"

#include "text/TokenizerImpl.h"

#include <utility>

namespace kvsteer {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok) : tok_(tok), state_(tok.impl_->newDetokenizer()) {}

StreamingDetokenizer::StreamingDetokenizer(const StreamingDetokenizer& other)
    : tok_(other.tok_), state_(other.state_->clone()) {}

StreamingDetokenizer& StreamingDetokenizer::operator=(const StreamingDetokenizer& other) {
    if (this != &other) {
        tok_ = other.tok_;
        state_ = other.state_->clone();
    }
    return *this;
}

StreamingDetokenizer::StreamingDetokenizer(StreamingDetokenizer&&) noexcept = default;
StreamingDetokenizer& StreamingDetokenizer::operator=(StreamingDetokenizer&&) noexcept = default;
StreamingDetokenizer::~StreamingDetokenizer() = default;

std::string StreamingDetokenizer::push(int64_t id) { return state_->push(id); }
std::string StreamingDetokenizer::finish() { return state_->finish(); }

} // namespace kvsteer
