#include "steer/SideBySide.h"

#include "Error.h"
#include "generate/BatchDecode.h"

namespace kvsteer {

std::array<DecodeRow, 2> pairRows(const Session& session, const SteeredCache& steered, const GenerationOptions& options) {
    if (steered.cache.size() != session.snapshot().size())
        throw Error("side-by-side: the steered cache must hold as many tokens as the snapshot");
    DecodeRow row;
    row.seedToken = session.lastPromptToken();
    row.maxNewTokens = options.maxNewTokens;
    row.sampling = options.sampling;
    row.stopAtEos = options.stopAtEos;
    DecodeRow steeredRow = row;
    steeredRow.attentionBias = steered.attentionBias;
    return {row, steeredRow};
}

KVCache pairBatch(const std::vector<const KVCache*>& snapshots, int newTokens) {
    std::vector<const KVCache*> rows;
    for (const KVCache* s : snapshots) rows.insert(rows.end(), 2, s);
    return KVCache::stackRows(rows, snapshots.front()->size() + newTokens + 1);
}

GenerationPair decodePair(const Session& session, KVCache batch, const SteeredCache& steered, const GenerationOptions& options,
                          const PairCallback& onStep, const std::atomic<bool>* cancel) {
    const std::array<DecodeRow, 2> rows = pairRows(session, steered, options);
    BatchCallbacks callbacks;
    if (onStep)
        callbacks.onStep = [&](const BatchStep& s) {
            PairEvent ev;
            ev.step = s.step;
            ev.unsteered = s.tokens[0];
            ev.steered = s.tokens[1];
            ev.attention = s.attention;
            ev.rows = s.active;
            onStep(ev);
        };
    const BatchResult r = decodeBatch(session, std::move(batch), {rows[0], rows[1]}, callbacks, cancel, options.captureAttention);
    return {r.rows[0], r.rows[1], r.decodeMs};
}

GenerationPair decodeSideBySide(const Session& session, const SteeredCache& steered, const GenerationOptions& options,
                                const PairCallback& onStep, const std::atomic<bool>* cancel) {
    return decodePair(session, KVCache::stackRows({&session.snapshot(), &steered.cache}), steered, options, onStep, cancel);
}

} // namespace kvsteer
