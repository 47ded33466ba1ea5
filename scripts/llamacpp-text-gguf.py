#!/usr/bin/env python3
"""A text-only Llama checkpoint (make-random --preset llama-3.1-8b) as a llama.cpp GGUF, for speed
comparisons with llama-bench on the same weights.

Reuses ../shared/peer/convert_llava_hf.py (the peer harness's converter for llava-hf directories):
the text model's tensors are presented under the llava-hf names it expects. The vocabulary is a
stand-in: the bundled demo model's SentencePiece pieces padded to vocab_size, because the
converter writes SPM vocabularies and llama-bench feeds random token ids (no text is tokenized),
so the speed does not depend on it. Weights, shapes and dtype are the checkpoint's own.

usage: GGUF_PY=<llama.cpp>/gguf-py llamacpp-text-gguf.py MODEL_DIR OUT.gguf
"""
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

here = Path(__file__).resolve().parent
project = here.parent
spec = importlib.util.spec_from_file_location("convert_llava_hf", project.parent / "shared/peer/convert_llava_hf.py")
convert = importlib.util.module_from_spec(spec)
spec.loader.exec_module(convert)

model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
config = json.load(open(model_dir / "config.json"))
if config.get("model_type") != "llama":
    sys.exit(f"{model_dir}/config.json: model_type is {config.get('model_type')!r}; expected 'llama' (a text-only Llama)")

with tempfile.TemporaryDirectory() as staged:
    staged = Path(staged)
    json.dump({"_name_or_path": config.get("_name_or_path", model_dir.name), "text_config": config},
              open(staged / "config.json", "w"))
    (staged / "tokenizer.model").symlink_to(project / "resources/demo-model/tokenizer.model")
    read = convert.open_safetensors
    convert.open_safetensors = lambda _: {"language_model." + name: array for name, array in read(model_dir).items()}
    convert.convert_lm(staged, out)
