// AddedVocabulary — see AddedVocabulary.h. Follows transformers 4.45 tokenization_utils.py:
// _add_tokens / added_tokens_encoder, Trie.split and the strip loop of tokenize().
#include "text/AddedVocabulary.h"

#include "text/Utf8.h"

#include <algorithm>

namespace kvsteer::detail {

void AddedVocabulary::add(const AddedToken& t) {
    if (!byId_.emplace(t.id, t).second) return;
    const auto [it, inserted] = byContent_.emplace(t.content, t.id);
    if (!inserted && it->second < t.id) it->second = t.id;
}

int64_t AddedVocabulary::addSpecial(const std::string& content, int64_t fallbackId) {
    if (const int64_t id = idOf(content); id >= 0) {
        byId_.at(id).special = true;
        return id;
    }
    AddedToken t;
    t.content = content;
    t.id = fallbackId;
    t.special = true;
    add(t);
    byContent_[content] = fallbackId;  // even if the id was taken: the text must map to it
    return fallbackId;
}

void AddedVocabulary::buildIndex() {
    for (auto& bucket : byFirstByte_) bucket.clear();
    for (const auto& [id, t] : byId_) byFirstByte_[static_cast<unsigned char>(t.content[0])].push_back(&t);
    for (auto& bucket : byFirstByte_)
        std::stable_sort(bucket.begin(), bucket.end(),
                         [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
}

const AddedToken* AddedVocabulary::find(int64_t id) const {
    const auto it = byId_.find(id);
    return it == byId_.end() ? nullptr : &it->second;
}

int64_t AddedVocabulary::idOf(const std::string& content) const {
    const auto it = byContent_.find(content);
    return it == byContent_.end() ? -1 : it->second;
}

std::vector<std::string> AddedVocabulary::split(const std::string& text) const {
    std::vector<std::string> parts = cut(text);
    applyStripFlags(parts);
    return parts;
}

// Trie.split: at each character boundary the longest added token starting there, if any, is
// cut out; matching resumes after it. No empty parts.
std::vector<std::string> AddedVocabulary::cut(const std::string& text) const {
    std::vector<std::string> parts;
    size_t plainStart = 0, pos = 0;
    while (pos < text.size()) {
        const AddedToken* match = nullptr;
        for (const AddedToken* t : byFirstByte_[static_cast<unsigned char>(text[pos])])
            if (text.compare(pos, t->content.size(), t->content) == 0) { match = t; break; }
        if (!match) {
            pos += std::min(text.size() - pos, oneCharLen(static_cast<unsigned char>(text[pos])));
            continue;
        }
        if (pos > plainStart) parts.push_back(text.substr(plainStart, pos - plainStart));
        parts.push_back(match->content);
        pos += match->content.size();
        plainStart = pos;
    }
    if (plainStart < text.size()) parts.push_back(text.substr(plainStart));
    return parts;
}

// The lstrip/rstrip/single_word handling of PreTrainedTokenizer.tokenize, applied in place to
// the neighbouring parts exactly as HF does (in order, on the already-modified list).
void AddedVocabulary::applyStripFlags(std::vector<std::string>& parts) const {
    for (size_t i = 0; i < parts.size(); ++i) {
        const int64_t id = idOf(parts[i]);
        if (id < 0) continue;
        const AddedToken& tok = byId_.at(id);
        std::string* left = i > 0 ? &parts[i - 1] : nullptr;
        std::string* right = i + 1 < parts.size() ? &parts[i + 1] : nullptr;
        if (tok.rstrip && right && !right->empty()) *right = pythonLstrip(*right);
        if (tok.lstrip && left && !left->empty()) *left = pythonRstrip(*left);
        if (tok.singleWord && left && !left->empty() && left->back() != ' ') {
            *left += parts[i];
            parts[i].clear();
        } else if (tok.singleWord && right && !right->empty() && right->front() != ' ') {
            parts[i] += *right;
            right->clear();
        }
    }
}

} // namespace kvsteer::detail
