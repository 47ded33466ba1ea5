#pragma once
// AddedVocabulary: a Hugging Face tokenizer's added tokens (special or not) — registered by id,
// found by text, and cut out of a text before the model sees it, the way the slow
// PreTrainedTokenizer.tokenize does: its trie split (leftmost match first, the longest at a
// position), then the lstrip / rstrip / single_word flags applied to the neighbours. An added
// token is never seen by the model's own segmentation. Both tokenizers (HfSentencePiece and
// ByteLevelBpeTokenizer) use it.
#include "text/HfTokenizerFiles.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvsteer::detail {

class AddedVocabulary {
public:
    // The first definition of an id wins. For a text listed under two ids the higher id is the
    // one the text maps to (HF builds added_tokens_encoder in ascending id order).
    void add(const AddedToken& t);
    // Registers `content` as special: an existing added token keeps its id and is flagged;
    // text that is no added token gets `fallbackId` (a piece of the model, or a new id at the
    // end of the vocabulary). Returns the id.
    int64_t addSpecial(const std::string& content, int64_t fallbackId);

    // Builds the split index; call once after the last add / addSpecial (the tables are then
    // read-only and may be shared between threads).
    void buildIndex();

    const AddedToken* find(int64_t id) const;
    int64_t idOf(const std::string& content) const;  // -1 if no added token has this text
    const std::map<int64_t, AddedToken>& byId() const { return byId_; }
    int64_t endId() const { return byId_.empty() ? 0 : byId_.rbegin()->first + 1; }

    // The text in parts: each added token's text as a part of its own, the runs between them
    // as the others (after the strip flags; a part may become empty, callers skip those). A
    // part that is an added token's text is that token (idOf), every other part is plain text.
    std::vector<std::string> split(const std::string& text) const;

private:
    std::vector<std::string> cut(const std::string& text) const;
    void applyStripFlags(std::vector<std::string>& parts) const;

    std::map<int64_t, AddedToken> byId_;
    std::unordered_map<std::string, int64_t> byContent_;
    std::array<std::vector<const AddedToken*>, 256> byFirstByte_;  // longest first

};

} // namespace kvsteer::detail
