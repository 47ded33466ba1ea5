#pragma once
// SIGTERM, SIGINT and SIGHUP (a `kill`, Ctrl+C in the terminal, a closed session) end the studio
// the way its own Quit ends the event loop, without the questions: the window is destroyed, so
// the worker stops, the recovery file keeps the unsaved work, and the worker's temporary files
// (vectors computed in the studio) are removed. Left to the default, the signal killed the
// process and left them in the temp folder.
class QCoreApplication;

void quitOnTerminateSignals(QCoreApplication& app);
