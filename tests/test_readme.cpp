// The README's examples run as written, so they cannot rot: every `build/app/kvsteer ...` line of
// its ```sh blocks, then of docs/steering.md's walk-through (moved out of the README's first read),
// runs from a folder that sees the repository's build/ and resources/ (the outputs it writes land
// there), and must exit 0. The output block shown after the first
// steering must be what the command prints, and the eval walk-through must end with a summary in
// which steering lowers the accuracy.
#include "TestSupport.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer::test;
namespace fs = std::filesystem;

namespace {

struct Example {
    std::string command;                  // one command, its continuation lines joined
    std::vector<std::string> shownOutput; // the ``` block right after it in the README, if any
};

// The kvsteer commands of a page's ```sh blocks, with the plain block that follows each.
std::vector<Example> pageExamples(const std::string& page) {
    std::ifstream in(std::string(KVSTEER_SOURCE_DIR) + "/" + page);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::vector<Example> examples;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i] != "```sh") continue;
        size_t j = i + 1;
        for (; j < lines.size() && lines[j] != "```"; ++j) {
            if (lines[j].rfind("build/app/kvsteer ", 0) != 0) continue;
            std::string command = lines[j];
            while (!command.empty() && command.back() == '\\' && j + 1 < lines.size()) command.pop_back(), command += lines[++j];
            command = command.substr(0, command.find("  #"));   // a trailing comment
            examples.push_back({command, {}});
        }
        if (j + 1 < lines.size() && lines[j + 1] == "```" && !examples.empty())
            for (size_t k = j + 2; k < lines.size() && lines[k] != "```"; ++k) examples.back().shownOutput.push_back(lines[k]);
        i = j;
    }
    return examples;
}

} // namespace

class TestReadme : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

private slots:
    void examplesRunAsWritten() {
        const fs::path work = tmp_.path().toStdString();
        fs::create_directory_symlink(fs::path(KVSTEER_SOURCE_DIR) / "resources", work / "resources");
        fs::create_directories(work / "build" / "app");
        fs::create_symlink(cliPath(), work / "build" / "app" / "kvsteer");
        std::vector<Example> examples = pageExamples("README.md");
        const std::vector<Example> steering = pageExamples("docs/steering.md");
        QVERIFY2(steering.size() >= 4, "docs/steering.md's walk-through (extract, steer, heatmaps, steer --json) was not found");
        examples.insert(examples.end(), steering.begin(), steering.end());
        QVERIFY2(examples.size() >= 3, "the README's steer, demo-pope and eval examples were not found");
        int checkedOutput = 0;
        for (const Example& e : examples) {
            const ProcessResult r = runProgram("bash", {"-c", "cd '" + work.string() + "' && " + e.command + " 2>&1"}, 600000);
            QVERIFY2(r.exitCode == 0, (e.command + "\n" + r.out + r.err).c_str());
            for (const std::string& line : e.shownOutput) {
                if (line.empty()) continue;
                QVERIFY2(r.out.find(line) != std::string::npos, (e.command + "\nshows: " + line + "\nprinted:\n" + r.out).c_str());
                ++checkedOutput;
            }
        }
        QVERIFY(checkedOutput >= 4);   // the first steering's plan, answer and both lines
        std::ifstream in((work / "run" / "summary.json").string());
        QVERIFY2(in.good(), "the eval walk-through wrote no run/summary.json");
        const nlohmann::json summary = nlohmann::json::parse(in);
        QVERIFY(summary["steered"]["accuracy"].get<double>() < summary["unsteered"]["accuracy"].get<double>());
    }
};

QTEST_GUILESS_MAIN(TestReadme)
#include "test_readme.moc"
