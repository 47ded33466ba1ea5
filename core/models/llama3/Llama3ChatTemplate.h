#pragma once
// The chat template of a Llama-3 checkpoint, recognised rather than run. kvsteer has no Jinja
// engine; the template text the checkpoint ships (chat_template.jinja, chat_template.json or
// tokenizer_config.json's "chat_template") is matched against the Llama-3 header layout:
//
//   <|begin_of_text|>                                         once, first
//   <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>   per message (content
//                                                             trimmed when the template says `| trim`)
//   <|start_header_id|>assistant<|end_header_id|>\n\n         the generation prompt
//
// Llama-3.1's template also opens with a system block whether or not a system message is given:
// "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" then the message. The two
// dates are read from the template (its default date_string; today when it has none).
#include <string>
#include <vector>

namespace kvsteer {

struct ChatMessage {
    std::string role;      // system | user | assistant
    std::string content;
};

class Llama3ChatTemplate {
public:
    // Reads and recognises DIR's template. Never throws for a template it does not recognise
    // (a --raw-prompt needs none); render() does. Throws kvsteer::Error for a file that is not
    // valid JSON.
    static Llama3ChatTemplate fromDirectory(const std::string& directory);

    bool recognised() const { return problem_.empty(); }
    // The conversation as the template lays it out, with the generation prompt. Throws
    // kvsteer::Error (remedy: a raw prompt) naming the file when the template is missing or not
    // the Llama-3 header layout.
    std::string render(const std::vector<ChatMessage>& messages) const;
    // One line for `inspect`: which layout, from which file, or why none.
    std::string describe() const;

private:
    std::string source_;          // the file the template came from ("" when none)
    std::string problem_;         // why it is not recognised ("" when it is)
    std::string bos_ = "<|begin_of_text|>";
    bool trims_ = false;          // `| trim` on the message content
    bool knowledgeBlock_ = false; // Llama-3.1's system block
    std::string knowledgeDate_, todayDate_;
};

} // namespace kvsteer
