#!/usr/bin/env python3
"""Writes golden.json: token ids from Hugging Face's Python `tokenizers`.

Run once (the Go test needs no Python):
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install tokenizers==0.20.3
    /tmp/venv/bin/python tokenizer/testdata/gen_golden.py \
        "$(go list -m -f '{{.Dir}}' github.com/daulet/tokenizers)/test/data"
"""
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer

STRINGS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "",
    " ",
    "a",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\nmixed",
    "multiple\n\n\nblank lines",
    "          ten spaces then text",
    "日本語のテキストを分割します。",
    "中文分词测试：你好，世界！",
    "한국어 문장입니다",
    "Emoji 😀🎉👍🏽 and flags 🇯🇵",
    "Family: 👨‍👩‍👧‍👦",
    "Ünïcödé àccents naïve café",
    "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "SELECT * FROM users WHERE id = 42;",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "https://example.com/path?query=1&x=%20y#frag",
    "Numbers 1234567890 3.14159 -42 1e-9",
    "<|begin_of_text|>Hello<|eot_id|>",
    "[CLS] hello [SEP] world [MASK]",
    "ALL CAPS SHOUTING and MiXeD CaSe",
    "don't won't can't it's y'all",
    "a" * 100,
    "Привет, мир! Ελληνικά",
    "مرحبا بالعالم",
]

FILES = {
    "llama3": "Meta-Llama-3-8B-Instruct.json",
    "bert": "bert-base-uncased.json",
}


def main():
    data_dir = sys.argv[1]
    out = {"python_tokenizers": tokenizers.__version__, "cases": []}
    toks = {k: Tokenizer.from_file(os.path.join(data_dir, f)) for k, f in FILES.items()}
    for s in STRINGS:
        case = {"text": s}
        for k, tok in toks.items():
            case[k] = {
                "plain": tok.encode(s, add_special_tokens=False).ids,
                "special": tok.encode(s, add_special_tokens=True).ids,
            }
            case[k]["decoded"] = tok.decode(case[k]["plain"], skip_special_tokens=False)
        out["cases"].append(case)
    for k, tok in toks.items():
        out[k + "_vocab_size"] = tok.get_vocab_size(with_added_tokens=True)
        out[k + "_base_vocab_size"] = tok.get_vocab_size(with_added_tokens=False)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
