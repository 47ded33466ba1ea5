#!/usr/bin/env python3
"""Hugging Face transformers' own speed on a LLaVA-1.5 directory, for scripts/gpu-check.sh:
a prompt as long as bench's (BOS, the 576 image tokens, text; a 336x336 image),
float16 on CUDA, greedy. Prefill = a generate() of one token; decode = the extra time of
--new-tokens more, per token. Prints one line.

    python3 scripts/hf-decode.py MODEL_DIR [--attn sdpa|eager] [--new-tokens N] [--prompt-tokens N]
"""
import argparse
import time

import torch
from transformers import LlavaForConditionalGeneration


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--attn", default="sdpa")
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=597)
    a = p.parse_args()
    model = LlavaForConditionalGeneration.from_pretrained(a.model, dtype=torch.float16, attn_implementation=a.attn, device_map="cuda").eval()
    image_token = model.config.image_token_index
    # BOS, the 576 image tokens, then text up to the bench's prompt length: only the length matters
    # to the timing (make-random's tokenizer is the demo model's, not Llama-2's).
    text = max(a.prompt_tokens - 577, 1)
    ids = torch.tensor([[1] + [image_token] * 576 + [13] * text], device="cuda")
    pixels = torch.randn(1, 3, 336, 336, dtype=torch.float16, device="cuda")

    def generate(n):
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pixels, max_new_tokens=n,
                              min_new_tokens=n, do_sample=False)

    with torch.inference_mode():
        generate(4)  # warm-up: kernels, cuBLAS, the allocator
        _, prefill = min((timed(lambda: generate(1)) for _ in range(3)), key=lambda r: r[1])
        _, whole = min((timed(lambda: generate(1 + a.new_tokens)) for _ in range(2)), key=lambda r: r[1])
    print(f"transformers {__import__('transformers').__version__} ({a.attn}): prefill {ids.shape[1] / prefill:.0f} tok/s "
          f"({ids.shape[1]} tokens, image encode included), decode {a.new_tokens / (whole - prefill):.1f} tok/s, "
          f"device memory {torch.cuda.max_memory_allocated() / 1e9:.1f} GB")


if __name__ == "__main__":
    main()
