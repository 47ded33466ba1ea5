#pragma once
// The study commands of the kvsteer CLI: study (a grid of plans judged on a suite of target and
// preserve sets in one pass: per-category scores, CHAIR, clustered intervals, the frontier),
// study-merge (shards into one), demo-study (a suite on the demo model's scenes).
namespace kvsteer {

int commandStudy(int argc, char** argv);
int commandStudyMerge(int argc, char** argv);
int commandDemoStudy(int argc, char** argv);

} // namespace kvsteer
