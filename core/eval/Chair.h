#pragma once
// CHAIR: which objects a caption names that the image does not hold (Rohrbach et al. 2018,
// "Object Hallucination in Image Captioning"; reference code github.com/LisaAnne/Hallucination).
//
// Mentions. A synonym table maps words and phrases to object categories. The caption is lower-cased,
// its punctuation turned to spaces and split on whitespace; then, left to right, the longest table
// phrase starting at each word is one mention and the scan goes on after it, so "a hot dog" is one
// mention of hot dog, never one of dog. A phrase's last word also matches as a plural: the caption's
// word as written first, then less a trailing "s", then "es", then with "ies" -> "y" (dogs, benches,
// ponies, "teddy bears"); irregular plurals (men, mice, geese) are listed in the table itself. Every
// occurrence is a mention: "a dog and another dog" is two mentions of dog.
//
// Scores. A mention is hallucinated when its category is not among the image's ground-truth
// categories. Over a set of captions (each ratio 0 when its denominator is 0):
//   chair_i  hallucinated mentions / mentions, both summed over the captions. Counted per
//            occurrence, as the reference's utils/chair.py counts them: a hallucinated object named
//            twice counts twice, and so does a real one.
//   chair_s  captions with at least one hallucinated mention / captions
//   recall   ground-truth categories the caption mentions / ground-truth categories, both summed
//            over the captions (each caption's categories counted once)
// Worked example (the coco table):
//   caption                            truth                mentions         hallucinated  recalled
//   "A man and his dogs chase a cat."  person, dog          man, dogs, cat   1 (cat)       2 of 2
//   "A pizza on a table."              pizza, dining table  pizza, table     0             2 of 2
//   "A plate of food."                 hot dog              none (plate and food are no category)  0 of 1
//   chair_i = 1/5 = 0.2, chair_s = 1/3 = 0.333, recall = (2+2+0)/(2+2+1) = 0.8
//
// Where this differs from the reference: it singularizes every word (pattern.en; NLTK's
// lemmatizer in lmms-eval's copy), where the plural rule above and the table's irregular forms
// stand in for that here; its one rule that reads the whole caption (a "seat" in a caption that
// also says "toilet" is no chair) is kept only as the phrase "toilet seat"; and its ground truth
// is COCO's segmentation labels plus the objects the five reference captions name, where here the
// dataset gives the ground-truth objects.
//
// The table file (resources/chair/coco.txt, shapes.txt):
//   # a comment, to the end of the line
//   category: synonym, synonym, two word synonym
//   -: phrase, phrase        phrases that name no object ("train track": the "train" in it is not
//                            a train); matched like synonyms, never counted
// Phrases are normalised like captions (lower case, punctuation to spaces, single spaces). The
// category name is always a synonym of itself; a category may be on more than one line (the
// synonyms are merged), and a synonym repeated for the same category is harmless. Refused, naming
// the file and line: a line without ':', an empty category, an empty synonym (",," or a trailing
// comma), a "-:" line with no phrase, a phrase that is already a synonym of another category
// (naming that line); and a file with no category.
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kvsteer {

struct SynonymTable {
    std::string source;                            // the file it was read from, for messages
    std::vector<std::string> categories;           // each once, in file order
    std::map<std::string, std::string> phrases;    // normalised phrase -> category ("": names no object)
    int longestPhrase = 0;                         // words in the longest phrase
};

// The table in `path` (format above); throws kvsteer::Error.
SynonymTable loadSynonymTable(const std::string& path);

// The shipped tables' names: coco, shapes.
const std::vector<std::string>& shippedSynonymTables();
// A shipped table's name -> its file in `chairDir` (the bundled resources/chair, which the front
// end knows the way it knows the demo model: a path its build passes in); anything else is taken
// as a path. A file called coco in the current folder is ./coco.
std::string synonymTablePath(const std::string& nameOrPath, const std::string& chairDir);
SynonymTable resolveSynonymTable(const std::string& nameOrPath, const std::string& chairDir);

// The caption's words: lower case, punctuation to spaces, split on whitespace.
std::vector<std::string> captionWords(const std::string& text);
// The category an object name (any synonym, any case, a plural) stands for; throws kvsteer::Error
// naming the object and the table when it names none.
std::string categoryOf(const SynonymTable& table, const std::string& objectName);

struct ChairMention {
    std::string category;
    std::string text;    // the caption's words that matched, normalised ("hot dogs")
    int word = 0;        // index of its first word in captionWords(caption)
};
std::vector<ChairMention> findMentions(const SynonymTable& table, const std::string& caption);

// One caption against its image's ground-truth categories.
struct ChairScore {
    int mentions = 0;                              // every occurrence
    int hallucinated = 0;                          // the occurrences whose category is not in the truth
    std::set<std::string> mentionedCategories;
    int groundTruth = 0;                           // distinct ground-truth categories
    int recalled = 0;                              // of them, the ones mentioned
    bool anyHallucinated = false;
    std::vector<ChairMention> hallucinatedMentions;    // in caption order (what a report shows)
};
// `objects` may name a category by any of its synonyms; one the table does not know is an Error.
ChairScore scoreCaption(const SynonymTable& table, const std::string& caption, const std::vector<std::string>& objects);

// chair_i, chair_s and recall of a set of captions (definitions above).
std::map<std::string, double> chairValues(const std::vector<ChairScore>& scores);

} // namespace kvsteer
