"""llama.cpp's outputs on the oracle models, as the JSON fixtures tests/reference/oracle.rs reads.

Usage (through tools/oracle/run): oracle.py MODELS_DIR FIXTURES_DIR, with PYTHONPATH at the
llama_cpp_python sdist and LLAMA_CPP_LIB_PATH at its built libllama.
"""
import hashlib
import json
import pathlib
import sys

import numpy as np
from llama_cpp import Llama

PROMPT = "the cat sat on the mat, then 1 2 3 and the end"
GREEDY = 16
TOP = 5
GGML_TYPE_F32 = 0


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def family(path):
    llm = Llama(model_path=str(path), n_ctx=128, n_batch=128, n_ubatch=128, logits_all=True,
                n_threads=1, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, flash_attn=False,
                verbose=False)
    ids = llm.tokenize(PROMPT.encode(), add_bos=True, special=True)
    llm.eval(ids)
    greedy = []
    for step in range(GREEDY):
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        greedy.append(nxt)
        if step + 1 < GREEDY:
            llm.eval([nxt])
    n = len(ids)
    top = []
    for pos in sorted({0, n // 2, n - 1, n + 3, n + GREEDY - 2}):
        row = llm.scores[pos]
        best = np.argsort(-row)[:TOP]
        top.append({"pos": pos, "logits": [[int(i), float(row[i])] for i in best]})
    return {"sha256": sha256(path), "prompt": PROMPT, "prompt_ids": ids, "greedy": greedy,
            "top": top}


def pretok(path, hard):
    llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    ids = [llm.tokenize(t.encode(), add_bos=True, special=True) for t in hard]
    return {"sha256": sha256(path), "ids": ids}


def main():
    models, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    hard = json.loads((models / "hard.json").read_text())
    for path in sorted((models / "families").glob("*.gguf")):
        fixture = family(path)
        (out / f"family-{path.stem}.json").write_text(json.dumps(fixture) + "\n")
        print(f"family {path.stem}: prompt {len(fixture['prompt_ids'])} ids, "
              f"greedy {fixture['greedy']}")
    for path in sorted((models / "pretok").glob("*.gguf")):
        fixture = pretok(path, hard)
        (out / f"pretok-{path.stem}.json").write_text(json.dumps(fixture) + "\n")
        print(f"pretok {path.stem}: {[len(i) for i in fixture['ids']]} ids")


if __name__ == "__main__":
    main()
