// The Worker's study: the core's runStudyJob on the worker thread, a thin adapter, as `kvsteer
// study` runs it. The suite is read (the shipped CHAIR tables beside it), the grid typed in the
// Study tab is expanded exactly as the CLI's flags are (or the suite's "plans" when none is typed),
// progress goes out per item and the summary, read into rows, at the end. Stop (cancelStudies)
// ends it after the current batch; the same folder continues it.
// Core (and ATen) first: Qt's `slots` keyword breaks ATen headers included after a Qt header.
#include "Error.h"
#include "study/StudyJob.h"

#include <c10/core/GradMode.h>

#include <filesystem>

#include "worker/CoreConversions.h"
#include "worker/WorkerState.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>

namespace kvsteer::ui {

namespace {

// The typed axes as the CLI's flags give them; a relative vector file is the suite folder's.
PlanGrid gridOf(const StudySetup& s, const QDir& suiteDir) {
    PlanGrid g = planGridFromLists(ss(s.vectors), ss(s.operators), ss(s.ck), ss(s.cv), ss(s.layers));
    for (std::string& v : g.vectors) v = ss(QDir::cleanPath(suiteDir.absoluteFilePath(qs(v))));
    return g;
}

} // namespace

void Worker::cancelStudies() { d->studyStop = true; }

void Worker::runStudy(const StudyRequest& req) {
    d->studyStop = false;
    if (!d->model) {
        Q_EMIT studyFailed(req.id, tr("No model is loaded. Use File → Open Model Directory… first."));
        return;
    }
    try {
        c10::NoGradGuard noGrad;
        const StudySetup& s = req.setup;
        const StudySuite suite = loadStudySuite(ss(s.suite), "", false, KVSTEER_CHAIR_DIR);
        const QDir suiteDir = QFileInfo(s.suite).absoluteDir();
        std::vector<PlanGrid> grids;
        if (s.gridGiven()) grids = {gridOf(s, suiteDir)};
        else if (!suite.plans.is_null()) grids = planGridsFromJson(suite.plans, ss(suiteDir.absolutePath()), suite.path);
        else
            throw kvsteer::Error("the study needs plans: type the grid (vector files, c_v values, layers …) or give the suite a \"plans\" list");
        StudyJob job;
        job.outDir = ss(s.outDir);
        job.suite = &suite;
        job.plans = expandPlans(grids, *d->model);
        EvalOptions options;
        options.generation.maxNewTokens = s.maxNewTokens;

        StudyJobCallbacks callbacks;
        int done = 0, total = 0;
        callbacks.onStart = [&](size_t all, size_t before) {
            total = int(all);
            done = int(before);
            StudyStarted started{req.id, total, done, {}};
            for (const StudyPlan& p : job.plans) started.planLabels << qs(p.label);
            Q_EMIT studyStarted(started);
            Q_EMIT progress(tr("Study… %1 / %2 items").arg(done).arg(total), done, total);
        };
        callbacks.onItem = [&] {
            ++done;
            Q_EMIT studyProgress({req.id, done, total});
            Q_EMIT progress(tr("Study… %1 / %2 items").arg(done).arg(total), done, total);
        };
        callbacks.stopRequested = [this] { return d->studyStop.load(); };
        const StudyJobResult result = runStudyJob(d->model, job, options, callbacks);
        StudyFinished finished;
        finished.studyId = req.id;
        finished.outDir = s.outDir;
        finished.items = done;
        finished.stopped = result.stopped;
        if (!result.stopped) {
            const QByteArray json = QByteArray::fromStdString(result.summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
            QString error;
            if (!studyResultsFromJson(QJsonDocument::fromJson(json).object(), &finished.results, &error)) throw kvsteer::Error(ss(error));
        }
        Q_EMIT idle();
        Q_EMIT studyFinished(finished);
    } catch (...) {
        Q_EMIT idle();
        Q_EMIT studyFailed(req.id, describeFailure(tr("running the study"), std::current_exception()));
    }
}

} // namespace kvsteer::ui
