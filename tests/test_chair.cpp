// kvsteer CHAIR (core/eval/Chair.h) on captions scored by hand with the shipped tables: plurals
// (regular and the table's irregular ones), two-word names over their single words, every
// occurrence a mention, a caption without objects, hallucinated mentions against ground truth
// given by any synonym, recall, and a set's chair_i / chair_s / recall against numbers worked out
// in the comments. The coco table holds COCO's 80 categories exactly; the shapes table the demo's
// three. A bad table line is refused naming the file, the line and what was expected.
#include "Error.h"
#include "eval/Chair.h"

#include <fstream>
#include <functional>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;

namespace {

const std::string kChairDir = KVSTEER_CHAIR_DIR;

const SynonymTable& coco() {
    static const SynonymTable table = resolveSynonymTable("coco", kChairDir);
    return table;
}

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// "category:text@word" per mention: one comparison checks them all and prints them all on failure.
QStringList mentionsOf(const SynonymTable& table, const std::string& caption) {
    QStringList out;
    for (const ChairMention& m : findMentions(table, caption))
        out << QString::fromStdString(m.category + ":" + m.text + "@" + std::to_string(m.word));
    return out;
}

std::string writeTable(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

class TestChair : public QObject {
    Q_OBJECT

private slots:
    void cocoTableIsCocosEightyCategories() {
        const std::set<std::string> expected{
            "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
            "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
            "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
            "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
            "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
            "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
            "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
            "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
            "teddy bear", "hair drier", "toothbrush"};
        QCOMPARE(expected.size(), size_t(80));
        QCOMPARE(coco().categories.size(), size_t(80));
        QCOMPARE(std::set<std::string>(coco().categories.begin(), coco().categories.end()), expected);
        QCOMPARE(coco().longestPhrase, 3);   // "stove top oven"
        QCOMPARE(coco().phrases.at("iphone"), std::string("cell phone"));   // "iPhone": table phrases are normalised too
    }

    void captionWordsNormalise() {
        QCOMPARE(captionWords("A Hot-dog's  crust, TWO!"), (std::vector<std::string>{"a", "hot", "dog", "s", "crust", "two"}));
        QVERIFY(captionWords(" ... ").empty());
    }

    void pluralsMatch() {
        QCOMPARE(mentionsOf(coco(), "Two dogs."), QStringList({"dog:dogs@1"}));                   // -s
        QCOMPARE(mentionsOf(coco(), "three benches"), QStringList({"bench:benches@1"}));          // -es
        QCOMPARE(mentionsOf(coco(), "ponies grazing"), QStringList({"horse:ponies@0"}));          // -ies
        QCOMPARE(mentionsOf(coco(), "two teddy bears"), QStringList({"teddy bear:teddy bears@1"}));   // a phrase's last word
        QCOMPARE(mentionsOf(coco(), "people and children"), QStringList({"person:people@0", "person:children@2"}));
        // Irregular plurals, listed in the table.
        QCOMPARE(mentionsOf(coco(), "men, women, mice, geese and knives"),
                 QStringList({"person:men@0", "person:women@1", "mouse:mice@2", "bird:geese@3", "knife:knives@5"}));
        QCOMPARE(mentionsOf(coco(), "a pair of skis"), QStringList({"skis:skis@3"}));
        QVERIFY(mentionsOf(coco(), "a glass of water").isEmpty());   // glass is no category; only "wine glass" is
        QCOMPARE(mentionsOf(coco(), "two wine glasses"), QStringList({"wine glass:wine glasses@1"}));
    }

    void longestPhraseWins() {
        QCOMPARE(mentionsOf(coco(), "a hot dog"), QStringList({"hot dog:hot dog@1"}));          // not dog
        QCOMPARE(mentionsOf(coco(), "A hot-dog and a dog."), QStringList({"hot dog:hot dog@1", "dog:dog@5"}));
        QCOMPARE(mentionsOf(coco(), "a teddy bear on a dining table"),
                 QStringList({"teddy bear:teddy bear@1", "dining table:dining table@5"}));
        QCOMPARE(mentionsOf(coco(), "a man on his cell phone"), QStringList({"person:man@1", "cell phone:cell phone@4"}));
        QCOMPARE(mentionsOf(coco(), "a stove top oven"), QStringList({"oven:stove top oven@1"}));
        QCOMPARE(mentionsOf(coco(), "a baby giraffe"), QStringList({"giraffe:baby giraffe@1"}));   // the baby is no person
        // A phrase that names no object hides its words: the tracks' "train" is no train.
        QCOMPARE(mentionsOf(coco(), "a train on the train tracks"), QStringList({"train:train@1"}));
    }

    void everyOccurrenceIsAMention() {
        QCOMPARE(mentionsOf(coco(), "A dog and another dog."), QStringList({"dog:dog@1", "dog:dog@4"}));
        const ChairScore real = scoreCaption(coco(), "A dog and another dog.", {"dog"});
        QCOMPARE(real.mentions, 2);
        QCOMPARE(real.hallucinated, 0);
        QCOMPARE(real.mentionedCategories, std::set<std::string>{"dog"});
        // Per occurrence, as the reference counts CHAIR_i: a dog that is not there, named twice, is two.
        const ChairScore fake = scoreCaption(coco(), "A dog and another dog.", {"cat"});
        QCOMPARE(fake.mentions, 2);
        QCOMPARE(fake.hallucinated, 2);
        QCOMPARE(fake.hallucinatedMentions.size(), size_t(2));
        QCOMPARE(fake.recalled, 0);
        QCOMPARE(fake.groundTruth, 1);
    }

    void captionWithoutObjects() {
        const ChairScore s = scoreCaption(coco(), "A plate of food on a wooden surface.", {"pizza"});
        QCOMPARE(s.mentions, 0);
        QCOMPARE(s.hallucinated, 0);
        QVERIFY(!s.anyHallucinated);
        QVERIFY(s.mentionedCategories.empty());
        QCOMPARE(s.groundTruth, 1);
        QCOMPARE(s.recalled, 0);
        const auto v = chairValues({s});
        QCOMPARE(v.at("chair_i"), 0.0);   // no mentions: 0, not NaN
        QCOMPARE(v.at("chair_s"), 0.0);
        QCOMPARE(v.at("recall"), 0.0);
    }

    void hallucinatedAgainstGroundTruth() {
        // Ground truth by synonyms: man -> person, puppy -> dog, "Dogs" -> dog again (counted once).
        const ChairScore s = scoreCaption(coco(), "A man and his dogs chase a cat.", {"man", "puppy", "Dogs"});
        QCOMPARE(s.mentions, 3);        // man, dogs, cat
        QCOMPARE(s.hallucinated, 1);    // cat
        QVERIFY(s.anyHallucinated);
        QCOMPARE(s.hallucinatedMentions.size(), size_t(1));
        QCOMPARE(s.hallucinatedMentions[0].category, std::string("cat"));
        QCOMPARE(s.hallucinatedMentions[0].word, 7);
        QCOMPARE(s.mentionedCategories, (std::set<std::string>{"cat", "dog", "person"}));
        QCOMPARE(s.groundTruth, 2);
        QCOMPARE(s.recalled, 2);
        // Recall counts categories, not mentions: truth {person, dog, car}, only person named (twice).
        const ChairScore partial = scoreCaption(coco(), "A man talks to a woman.", {"person", "dog", "car"});
        QCOMPARE(partial.mentions, 2);
        QCOMPARE(partial.hallucinated, 0);
        QCOMPARE(partial.groundTruth, 3);
        QCOMPARE(partial.recalled, 1);
        // An object the table does not know is an error naming it and the table.
        const std::string unknown = errorOf([] { scoreCaption(coco(), "A dog.", {"dog", "unicorn"}); });
        QVERIFY2(contains(unknown, "object 'unicorn'") && contains(unknown, kChairDir + "/coco.txt"), unknown.c_str());
        const std::string none = errorOf([] { categoryOf(coco(), "train track"); });   // names no object
        QVERIFY2(contains(none, "object 'train track'"), none.c_str());
    }

    void setValues() {
        // The example in Chair.h and docs/eval.md:
        //   "A man and his dogs chase a cat."  truth person, dog          3 mentions, 1 hallucinated; 2 of 2
        //   "A pizza on a table."              truth pizza, dining table  2 mentions, 0 hallucinated; 2 of 2
        //   "A plate of food."                 truth hot dog              0 mentions;                 0 of 1
        //   chair_i = 1/5, chair_s = 1/3, recall = (2+2+0)/(2+2+1) = 4/5
        const std::vector<ChairScore> set{scoreCaption(coco(), "A man and his dogs chase a cat.", {"person", "dog"}),
                                          scoreCaption(coco(), "A pizza on a table.", {"pizza", "dining table"}),
                                          scoreCaption(coco(), "A plate of food.", {"hot dog"})};
        const auto v = chairValues(set);
        QCOMPARE(v.size(), size_t(3));
        QCOMPARE(v.at("chair_i"), 1.0 / 5);
        QCOMPARE(v.at("chair_s"), 1.0 / 3);
        QCOMPARE(v.at("recall"), 4.0 / 5);
        // Add "A dog and another dog." against truth cat: 2 more mentions, both hallucinated; 0 of 1.
        //   chair_i = (1+2)/(5+2) = 3/7, chair_s = 2/4, recall = 4/6
        std::vector<ChairScore> more = set;
        more.push_back(scoreCaption(coco(), "A dog and another dog.", {"cat"}));
        const auto w = chairValues(more);
        QCOMPARE(w.at("chair_i"), 3.0 / 7);
        QCOMPARE(w.at("chair_s"), 2.0 / 4);
        QCOMPARE(w.at("recall"), 4.0 / 6);
        const auto empty = chairValues({});
        QCOMPARE(empty.at("chair_i"), 0.0);
        QCOMPARE(empty.at("chair_s"), 0.0);
        QCOMPARE(empty.at("recall"), 0.0);
    }

    void shapesTable() {
        const SynonymTable shapes = resolveSynonymTable("shapes", kChairDir);
        QCOMPARE(shapes.categories, (std::vector<std::string>{"circle", "square", "triangle"}));
        // The demo's own description form (ShapeWorld's describe()).
        const ChairScore s = scoreCaption(shapes, "a red circle and a blue square", {"circle"});
        QCOMPARE(s.mentions, 2);
        QCOMPARE(s.hallucinated, 1);
        QCOMPARE(s.hallucinatedMentions[0].text, std::string("square"));
        QCOMPARE(s.recalled, 1);
        QCOMPARE(mentionsOf(shapes, "two circles, a shape and three triangles"),
                 QStringList({"circle:circles@1", "triangle:triangles@6"}));
    }

    void tableFormat() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // Comments, CRLF ends, a category on two lines, a repeated synonym, a no-object phrase.
        const std::string path = writeTable(dir, "ok.txt", "# pets\r\ndog: puppy, Puppy # twice is fine\r\n\r\n"
                                                          "cat: kitten\r\ndog: hound\r\n-: hot dog\r\n");
        const SynonymTable t = loadSynonymTable(path);
        QCOMPARE(t.categories, (std::vector<std::string>{"dog", "cat"}));
        QCOMPARE(t.source, path);
        QCOMPARE(mentionsOf(t, "a puppy, a hound, a hot dog and kittens"),
                 QStringList({"dog:puppy@1", "dog:hound@3", "cat:kittens@8"}));
    }

    void badTablesAreRefused() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        struct Case {
            const char* text;
            std::string expected;
        };
        const std::vector<Case> cases{
            {"dog: puppy\ncat: kitten\nwolf: puppy\n", " line 3: 'puppy' is already a synonym of dog (line 1)"},
            {"dog: puppy\npuppy: pup\n", " line 2: 'puppy' is already a synonym of dog (line 1)"},
            {"-: hot dog\nhot dog: frank\n", " line 2: 'hot dog' is already listed as naming no object (line 1)"},
            {"# pets\n : puppy\n", " line 2: the category before ':' is empty"},
            {"dog: puppy\ndog puppy\n", " line 2: expected 'category: synonym, synonym, ...'"},
            {"dog: puppy,\n", " line 1: an empty synonym"},
            {"dog: puppy,, pup\n", " line 1: an empty synonym"},
            {"dog: puppy\n-:\n", " line 2: '-:' lists no phrase"},
            {"# only a comment\n\n", " has no category"},
        };
        for (size_t i = 0; i < cases.size(); ++i) {
            const std::string path = writeTable(dir, "bad" + std::to_string(i) + ".txt", cases[i].text);
            const std::string e = errorOf([&] { loadSynonymTable(path); });
            QVERIFY2(contains(e, "synonym table " + path + cases[i].expected), (cases[i].text + std::string(" -> ") + e).c_str());
        }
        const std::string missing = dir.filePath("missing.txt").toStdString();
        QVERIFY(contains(errorOf([&] { loadSynonymTable(missing); }), "synonym table " + missing + " is not a readable file"));
        const std::string folder = dir.path().toStdString();
        QVERIFY(contains(errorOf([&] { loadSynonymTable(folder); }), "synonym table " + folder + " is not a readable file"));
    }

    void namesAndPaths() {
        QCOMPARE(shippedSynonymTables(), (std::vector<std::string>{"coco", "shapes"}));
        QCOMPARE(synonymTablePath("coco", kChairDir), kChairDir + "/coco.txt");
        QCOMPARE(synonymTablePath("shapes", kChairDir), kChairDir + "/shapes.txt");
        QCOMPARE(synonymTablePath("./coco", kChairDir), std::string("./coco"));   // a path, not the name
        const std::string e = errorOf([] { resolveSynonymTable("no-such-table", kChairDir); });
        QVERIFY2(contains(e, "synonym table 'no-such-table' is neither a shipped table (coco, shapes) nor a file"), e.c_str());
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string own = writeTable(dir, "own.txt", "zebra: okapi\n");
        QCOMPARE(resolveSynonymTable(own, kChairDir).categories, std::vector<std::string>{"zebra"});
    }
};

QTEST_GUILESS_MAIN(TestChair)
#include "test_chair.moc"
