#include "BenchRow.h"

namespace kvsteer {

nlohmann::json toJson(const BenchRow& r) {
    return {{"model", r.model},
            {"weights", r.weights},
            {"threads", r.threads},
            {"beside_busy", r.besideBusy},
            {"device", r.device},
            {"device_memory_gb", r.deviceMemGB},
            {"first_edit_ms", r.firstEditMs},
            {"edit_ms", r.editMs},
            {"parameters", r.parameters},
            {"load_s", r.loadS},
            {"prompt_tokens", r.promptTokens},
            {"image_encode_ms", r.encodeMs},
            {"prefill_tok_s", r.prefillTokS},
            {"decode_tok_s", r.decodeTokS},
            {"roofline_tok_s", r.rooflineTokS},
            {"read_bandwidth_gb_s", r.readGBs},
            {"weight_bytes_per_token", r.weightBytesPerToken},
            {"pair_step_s", r.pairStepsS},
            {"pair_cost", r.pairCost()},
            {"peak_rss_gb", r.peakRssGB},
            {"pair_peak_rss_gb", r.pairRssGB},
            {"atlas_4x3_ms", r.atlasMs},
            {"separate_12_steer_ms", r.separateSteerMs},
            {"separate_12_decode_ms", r.separateDecodeMs},
            {"atlas_cost", r.atlasCost()},
            {"demo_atlas_4x3_ms", r.demoAtlasMs},
            {"demo_separate_12_steer_ms", r.demoSteerMs},
            {"demo_separate_12_decode_ms", r.demoDecodeMs},
            {"demo_atlas_cost", r.demoAtlasCost()},
            {"eval_items_s", r.evalItemsS},
            {"eval_no_prefix_reuse_items_s", r.evalNoReuseItemsS},
            {"study_plans", r.study.plans},
            {"study_items", r.study.items},
            {"study_ms", r.study.studyMs},
            {"study_one_plan_eval_ms", r.study.evalMs},
            {"eval_prefix_reuse_gain", r.evalReuseGain()}};
}

BenchRow rowFromJson(const nlohmann::json& j) {
    BenchRow r;
    r.model = j.at("model");
    r.weights = j.at("weights");
    r.threads = j.value("threads", 0);
    r.besideBusy = j.value("beside_busy", false);
    r.parameters = j.at("parameters");
    r.loadS = j.at("load_s");
    r.promptTokens = j.at("prompt_tokens");
    r.encodeMs = j.at("image_encode_ms");
    r.prefillTokS = j.at("prefill_tok_s");
    r.decodeTokS = j.at("decode_tok_s");
    r.rooflineTokS = j.at("roofline_tok_s");
    r.readGBs = j.value("read_bandwidth_gb_s", 0.0);
    r.device = j.value("device", "cpu");
    r.deviceMemGB = j.value("device_memory_gb", 0.0);
    r.firstEditMs = j.value("first_edit_ms", 0.0);
    r.editMs = j.value("edit_ms", 0.0);
    r.weightBytesPerToken = j.at("weight_bytes_per_token");
    r.pairStepsS = j.at("pair_step_s");
    r.peakRssGB = j.at("peak_rss_gb");
    r.pairRssGB = j.at("pair_peak_rss_gb");
    r.atlasMs = j.value("atlas_4x3_ms", 0.0);
    r.separateSteerMs = j.value("separate_12_steer_ms", 0.0);
    r.separateDecodeMs = j.value("separate_12_decode_ms", 0.0);
    r.demoAtlasMs = j.value("demo_atlas_4x3_ms", 0.0);
    r.demoSteerMs = j.value("demo_separate_12_steer_ms", 0.0);
    r.demoDecodeMs = j.value("demo_separate_12_decode_ms", 0.0);
    r.evalItemsS = j.value("eval_items_s", 0.0);
    r.evalNoReuseItemsS = j.value("eval_no_prefix_reuse_items_s", 0.0);
    r.study.plans = j.value("study_plans", 0);
    r.study.items = j.value("study_items", int64_t(0));
    r.study.studyMs = j.value("study_ms", 0.0);
    r.study.evalMs = j.value("study_one_plan_eval_ms", 0.0);
    return r;
}

} // namespace kvsteer
